"""Input files read within limits, YAML with line numbers, and atomic writes.

Every input file is read through :func:`read_chunks`: regular files only (devices,
FIFOs and sockets are refused, also behind a symbolic link), never more than the
size limit + 1 byte.
"""

from __future__ import annotations

import hashlib
import math
import os
import pickle
import stat
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dcplan.errors import InputError, Problem, display_path
from dcplan.outputset import TMP_TAG, temp_prefix
from dcplan.outputset import current as _output_set

#: Key under which the 1-based line of a mapping is stored by :func:`read_yaml`.
LINE_KEY = "__line__"
#: Key under which the 1-based line of each key of a mapping is stored.
KEY_LINES = "__key_lines__"
#: Key under which ``(file, line)`` of a mapping itself is stored.
AT_KEY = "__at__"
#: Key under which ``{key: (file, line)}`` of each key of a mapping is stored. Unlike
#: :data:`KEY_LINES` it names the file, so it stays right when mappings of several files
#: are merged (a scenario that ``extends`` a base).
WHERE_KEY = "__where__"
#: Every key :func:`read_yaml` adds to a mapping.
META_KEYS = (LINE_KEY, KEY_LINES, AT_KEY, WHERE_KEY)

#: Environment variable that raises or lowers :data:`DEFAULT_MAX_INPUT_MB`.
MAX_INPUT_ENV = "DCPLAN_MAX_INPUT_MB"
#: Largest input file dcplan reads, unless :data:`MAX_INPUT_ENV` says otherwise [MB].
#: The shipped files are below 0.1 MB; a larger file is refused before it is parsed.
DEFAULT_MAX_INPUT_MB = 10.0
#: Deepest nesting of YAML collections accepted (the shipped files nest at most 6).
MAX_YAML_DEPTH = 64
#: Most YAML nodes that aliases (``*name``) may add to a document once followed (an
#: alias "bomb" of nested anchors would otherwise expand to billions).
MAX_ALIAS_NODES = 100_000


#: Most bytes of parsed documents :func:`read_yaml` keeps in memory (pickled), so that a
#: process that reads the same file again (a sweep's cases, a session of the Python API,
#: the test suite) gets a copy without parsing it again [bytes].
PARSED_CACHE_BYTES = 32 * 2**20


@dataclass(frozen=True)
class SizeLimit:
    """A size limit on files read, with the environment variable that changes it.

    Attributes
    ----------
    env : str
        Environment variable that replaces ``default_mb`` (a positive number [MB]).
    default_mb : float
        Limit when ``env`` is unset or not a positive finite number [MB].
    what : str
        What the limit applies to, for messages ("input files").
    """

    env: str
    default_mb: float
    what: str

    def mb(self) -> float:
        """The limit in force [MB]."""
        raw = os.environ.get(self.env, "")
        try:
            mb = float(raw) if raw.strip() else self.default_mb
        except ValueError:
            mb = self.default_mb
        if not math.isfinite(mb) or mb <= 0:
            mb = self.default_mb
        return mb

    def bytes(self) -> int:
        """The limit in force [bytes] (1 MB = 1024 x 1024 bytes)."""
        return int(self.mb() * 1024 * 1024)


#: Limit on every input file (catalogs, sites, scenarios, forecasts, sweep files,
#: measurement CSVs, benchmark exports).
INPUT_LIMIT = SizeLimit(MAX_INPUT_ENV, DEFAULT_MAX_INPUT_MB, "input files")


def max_input_bytes() -> int:
    """Largest input file size accepted [bytes] (see :data:`MAX_INPUT_ENV`)."""
    return INPUT_LIMIT.bytes()


#: Environment variable that raises or lowers :data:`DEFAULT_MAX_TEXT_MB`.
MAX_TEXT_ENV = "DCPLAN_MAX_TEXT_MB"
#: Largest text file whose tokens are counted (``dcplan tokens count``, a scenario's
#: language sample) [MB]. Such texts are the user's corpora, read and counted in pieces
#: of :data:`READ_CHUNK_BYTES` (memory does not grow with the file), so the limit only
#: bounds the time: about 17 minutes per GB with the slowest shipped tokenizer
#: (DeepSeek's, about 1 MB/s on one core).
DEFAULT_MAX_TEXT_MB = 1024.0
#: Limit on text files whose tokens are counted.
TEXT_LIMIT = SizeLimit(MAX_TEXT_ENV, DEFAULT_MAX_TEXT_MB, "text files to count")
#: Size of the pieces files are read in [bytes].
READ_CHUNK_BYTES = 1024 * 1024

_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))


def _not_regular(path: Path | str, mode: int) -> Problem:
    """The problem of a path that is neither a regular file nor a folder."""
    kind = next((name for test, name in _KINDS if test(mode)), "a device, FIFO or socket")
    try:
        if os.path.islink(path):
            kind = f"a link to {os.path.realpath(path)}, {kind}"
    except OSError:
        pass
    return Problem(display_path(path), f"is not a regular file but {kind}; dcplan reads only "
                                       "regular files: save the data to a file and give that")


def _stat_problem(path: Path | str, exc: OSError) -> Problem:
    shown = display_path(path)
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return Problem(shown, "file not found; check the path")
    return Problem(shown, f"cannot read file ({exc.strerror or exc})")


def _too_large(path: Path | str, limit: SizeLimit, size: int | None) -> Problem:
    """The problem of a file above ``limit``: ``size`` on disk, or None if found reading."""
    cap = limit.mb()
    got = (f"is {size / 1024 / 1024:,.1f} MB, above the {cap:g} MB limit" if size is not None
           else f"holds more than the {cap:g} MB limit (more than its size on disk said)")
    return Problem(display_path(path),
                   f"file {got} for {limit.what}; check it is the right file, or set "
                   f"{limit.env} to a larger limit [MB]")


def check_regular(path: Path | str, limit: SizeLimit = INPUT_LIMIT) -> os.stat_result:
    """Check, without opening it, that ``path`` is a regular file within ``limit``.

    Symbolic links are followed: a link to ``/dev/zero`` is refused like the device.

    Returns
    -------
    os.stat_result
        The file's status.

    Raises
    ------
    InputError
        If the path is missing, a folder, not a regular file (a device, FIFO or socket)
        or larger than ``limit`` on disk.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(_stat_problem(path, exc)) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(Problem(display_path(path), "is a folder; give a file"))
    if not stat.S_ISREG(st.st_mode):
        raise InputError(_not_regular(path, st.st_mode))
    if st.st_size > limit.bytes():
        raise InputError(_too_large(path, limit, st.st_size))
    return st


def read_chunks(path: Path | str, limit: SizeLimit = INPUT_LIMIT,
                chunk_bytes: int = READ_CHUNK_BYTES) -> Iterator[bytes]:
    """The bytes of an input file in pieces; every file dcplan reads goes through here.

    The path must be a regular file after following symbolic links (checked before it
    is opened, and again on the open file, which is opened non-blocking so that a FIFO
    swapped in meanwhile cannot block). At most ``limit`` + 1 bytes are read whatever
    the size on disk says, so a file that grows while it is read still stops.

    Parameters
    ----------
    path : Path or str
        File to read.
    limit : SizeLimit
        Largest size accepted (:data:`INPUT_LIMIT` or :data:`TEXT_LIMIT`).
    chunk_bytes : int
        Largest piece yielded [bytes].

    Yields
    ------
    bytes
        Consecutive pieces of the file, none empty.

    Raises
    ------
    InputError
        If the path is missing, a folder, not a regular file, unreadable, or holds more
        than ``limit`` (raised when the piece that crosses it would be read).
    """
    cap = limit.bytes()
    check_regular(path, limit)
    flags = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
             | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InputError(_stat_problem(path, exc)) from None
    with os.fdopen(fd, "rb", buffering=0) as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(_not_regular(path, st.st_mode))
        got = 0
        while True:
            try:
                piece = f.read(max(1, min(chunk_bytes, cap + 1 - got)))
            except OSError as exc:
                raise InputError(_stat_problem(path, exc)) from None
            if not piece:
                return
            got += len(piece)
            if got > cap:
                raise InputError(_too_large(path, limit, None))
            yield piece


def read_bytes(path: Path | str, limit: SizeLimit = INPUT_LIMIT) -> bytes:
    """The bytes of an input file, read through :func:`read_chunks`.

    Raises
    ------
    InputError
        As :func:`read_chunks`.
    """
    return b"".join(read_chunks(path, limit))


class _Refused(yaml.YAMLError):
    """A document dcplan refuses to read (too deep, too large once expanded)."""

    def __init__(self, message: str, line: int | None):
        super().__init__(message)
        self.message = message
        self.line = line


class _LineChecks:
    """Line records and refusals of hostile input, added to a safe YAML loader.

    Every mapping gets :data:`LINE_KEY`, :data:`KEY_LINES`, :data:`AT_KEY` and
    :data:`WHERE_KEY`; duplicate keys and non-finite numbers are collected as
    problems; nesting deeper than :data:`MAX_YAML_DEPTH` stops the parse.
    """

    duplicate_keys: list[tuple[str, int]]
    bad_numbers: list[tuple[str, int]]
    shown: str
    depth: int

    def compose_node(self, parent, index):  # noqa: D102
        self.depth += 1
        try:
            if self.depth > MAX_YAML_DEPTH:
                mark = self.peek_event().start_mark
                raise _Refused(f"nesting deeper than {MAX_YAML_DEPTH} levels; dcplan input "
                               "files are flat mappings and lists", mark.line + 1)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_yaml_float(self, node):  # noqa: D102
        value = super().construct_yaml_float(node)
        if not math.isfinite(value):
            self.bad_numbers.append((str(node.value), node.start_mark.line + 1))
        return value

    def construct_mapping(self, node, deep=False):  # noqa: D102
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                self.duplicate_keys.append((str(key), line))
            try:
                seen[key] = line
            except TypeError:  # an unhashable key: the base class reports it
                pass
        mapping = super().construct_mapping(node, deep=deep)
        line = node.start_mark.line + 1
        mapping[LINE_KEY] = line
        mapping[KEY_LINES] = {str(k): ln for k, ln in seen.items()}
        mapping[AT_KEY] = (self.shown, line)
        mapping[WHERE_KEY] = {str(k): (self.shown, ln) for k, ln in seen.items()}
        return mapping


if yaml.__with_libyaml__:
    from yaml.composer import Composer
    from yaml.constructor import SafeConstructor
    from yaml.cyaml import CParser
    from yaml.resolver import Resolver

    class _LineLoader(_LineChecks, Composer, CParser, SafeConstructor, Resolver):
        """Safe loader with :class:`_LineChecks` on libyaml's scanner and parser.

        libyaml (C) scans about ten times faster than PyYAML's own scanner; PyYAML's
        composer stays, as :class:`_LineChecks` bounds the nesting while it builds the
        nodes.
        """

        def __init__(self, stream):
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
else:  # pragma: no cover - PyYAML's wheels ship libyaml
    class _LineLoader(_LineChecks, yaml.SafeLoader):
        """Safe loader with :class:`_LineChecks` (PyYAML built without libyaml)."""


_LineLoader.add_constructor("tag:yaml.org,2002:float", _LineLoader.construct_yaml_float)

# Dates stay strings ("2027-07-01"): the schema validates them, and YAML's implicit
# timestamp conversion would turn "2027-07" and "2027-07-01" into different types.
_LineLoader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def alias_nodes(node: yaml.Node, limit: int = MAX_ALIAS_NODES) -> int:
    """Nodes that following every alias adds to a composed YAML document.

    The expanded size is computed on the node graph (each distinct node once), so a
    document whose aliases expand to billions of nodes is measured in linear time;
    counting stops a little above ``limit``.

    Raises
    ------
    _Refused
        For an alias that refers to a node containing itself.
    """
    cap = 10 * limit + 10_000_000
    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(node, False)]
    while stack:
        n, done = stack.pop()
        key = id(n)
        if done:
            active.discard(key)
            if isinstance(n, yaml.MappingNode):
                kids = [c for pair in n.value for c in pair]
            elif isinstance(n, yaml.SequenceNode):
                kids = n.value
            else:
                kids = []
            sizes[key] = min(cap, 1 + sum(sizes[id(c)] for c in kids))
            continue
        if key in sizes:
            continue
        if key in active:
            raise _Refused("an alias refers to a collection that contains it; write the "
                           "data out", n.start_mark.line + 1)
        active.add(key)
        stack.append((n, True))
        if isinstance(n, yaml.MappingNode):
            stack += [(c, False) for pair in n.value for c in pair if id(c) not in sizes]
        elif isinstance(n, yaml.SequenceNode):
            stack += [(c, False) for c in n.value if id(c) not in sizes]
    return sizes[id(node)] - len(sizes)


def read_text(path: Path | str, encoding: str = "utf-8") -> str:
    """Read a text input file through :func:`read_chunks`.

    Parameters
    ----------
    path : Path or str
        File to read.
    encoding : str
        Its encoding.

    Raises
    ------
    InputError
        If the file is missing, a folder, not a regular file (a device, FIFO or socket,
        also behind a symbolic link), above :func:`max_input_bytes` (on disk or while
        read), unreadable or not text in ``encoding``.
    """
    data = read_bytes(path)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise InputError(Problem(display_path(path), f"cannot read file ({exc})")) from None


#: Pickled documents by (shown name, digest of the text), least recently used first;
#: :data:`_parsed_lock` guards it (a Dask worker reads cases in several threads).
_parsed: OrderedDict[tuple[str, bytes], bytes] = OrderedDict()
_parsed_lock = threading.Lock()


def read_yaml(path: Path | str) -> Any:
    """Read a YAML input file, recording where each mapping and key is.

    Every mapping gets its line under :data:`LINE_KEY`, its keys' lines under
    :data:`KEY_LINES` and the same with the file name under :data:`AT_KEY` and
    :data:`WHERE_KEY` (remove them with :func:`strip_lines`).

    The file is read and checked every time; a text read before under the same name
    (the same bytes) is not parsed again: the caller gets a fresh copy of that parse,
    as its own to change (up to :data:`PARSED_CACHE_BYTES` of them are kept).

    Parameters
    ----------
    path : Path or str
        File to read.

    Returns
    -------
    Any
        The parsed document.

    Raises
    ------
    InputError
        If the file is missing, too large (:func:`max_input_bytes`), not valid YAML,
        nested deeper than :data:`MAX_YAML_DEPTH`, has aliases that add more than
        :data:`MAX_ALIAS_NODES` nodes, repeats a key in one mapping or holds a number
        that is not finite (``.inf``, ``.nan``).
    """
    shown = display_path(path)
    text = read_text(path)
    key = (shown, hashlib.blake2b(text.encode("utf-8"), digest_size=20).digest())
    with _parsed_lock:
        hit = _parsed.get(key)
        if hit is not None:
            _parsed.move_to_end(key)
    if hit is not None:
        return pickle.loads(hit)
    data = _parse_yaml(text, shown)
    kept = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
    if len(kept) <= PARSED_CACHE_BYTES:
        with _parsed_lock:
            _parsed[key] = kept
            size = sum(len(v) for v in _parsed.values())
            while size > PARSED_CACHE_BYTES:
                size -= len(_parsed.popitem(last=False)[1])
    return data


def _parse_yaml(text: str, shown: str) -> Any:
    """Parse a YAML document read from the file ``shown`` (:func:`read_yaml`)."""
    loader = _LineLoader(text)
    loader.duplicate_keys = []
    loader.bad_numbers = []
    loader.shown = shown
    loader.depth = 0
    try:
        node = loader.get_single_node()
        if node is not None and alias_nodes(node) > MAX_ALIAS_NODES:
            raise _Refused(f"its aliases (*name) expand to more than {MAX_ALIAS_NODES:,} "
                           "values; write the data out without nested aliases", None)
        data = loader.construct_document(node) if node is not None else None
    except _Refused as exc:
        raise InputError(Problem(shown, exc.message, line=exc.line)) from None
    except RecursionError:
        raise InputError(Problem(shown, "nesting too deep to read; dcplan input files are "
                                        "flat mappings and lists")) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(exc, "problem", None) or str(exc)
        if isinstance(exc, yaml.reader.ReaderError):  # libyaml's offset is in UTF-8 bytes
            line = text.encode("utf-8")[:exc.position].count(b"\n") + 1
            reason = f"{exc.reason}: character #x{exc.character:04x}"
        raise InputError(
            Problem(shown, f"malformed YAML ({reason}); fix the syntax near this line", line=line)
        ) from None
    finally:
        loader.dispose()
    problems = [Problem(shown, f"key '{k}' appears twice in the same mapping; keep one", line=ln)
                for k, ln in loader.duplicate_keys]
    problems += [Problem(shown, f"'{v}' is not a finite number; give a number", line=ln)
                 for v, ln in loader.bad_numbers]
    if problems:
        raise InputError(problems)
    return data


def strip_lines(data: Any) -> Any:
    """Return ``data`` without the keys :func:`read_yaml` added (:data:`META_KEYS`)."""
    if isinstance(data, dict):
        return {k: strip_lines(v) for k, v in data.items() if k not in META_KEYS}
    if isinstance(data, list):
        return [strip_lines(v) for v in data]
    return data


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def remove_stale_temporaries(target: Path) -> list[Path]:
    """Remove temporaries of ``target`` left by dcplan runs that were killed.

    A temporary belongs to a run by the process id in its name; those whose process is
    gone are removed (files, and folders written by :func:`dcplan.export.files.
    replace_folder`). Returns what was removed.
    """
    import shutil

    parent = target.parent
    removed = []
    if not parent.is_dir():
        return removed
    head = f".{target.name}.{TMP_TAG}."
    for p in parent.iterdir():
        if not p.name.startswith(head):
            continue
        pid_text = p.name[len(head):].split(".", 1)[0]
        if not pid_text.isdigit() or _pid_alive(int(pid_text)):
            continue
        try:
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
            removed.append(p)
        except OSError:
            pass
    return removed


def check_replaceable_file(target: Path | str) -> None:
    """Refuse an output path that exists but is not a regular file (or a link to one).

    A file is written by renaming a finished temporary onto its path, which would put a
    regular file in place of a device, FIFO, socket or folder (``-o /dev/null`` would
    replace the device node). Such a path is named instead, with the fix.

    Raises
    ------
    InputError
        If ``target`` exists and is not a regular file.
    """
    try:
        st = os.stat(target)
    except OSError:
        return          # missing (or unreadable: the write itself reports it)
    if stat.S_ISREG(st.st_mode):
        return
    if stat.S_ISDIR(st.st_mode):
        raise InputError(Problem(display_path(target), "is a folder; give a file path for "
                                                       "this output"))
    kind = next((name for test, name in _KINDS if test(st.st_mode)),
                "a device, FIFO or socket")
    raise InputError(Problem(display_path(target), f"is not a regular file but {kind}; "
                                                   "dcplan writes an output by replacing "
                                                   "the path with a new file, so it only "
                                                   "writes to regular files or new paths: "
                                                   "give a file path"))


@contextmanager
def atomic_path(target: Path | str, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; rename it onto ``target`` on success.

    An interrupted or failed write never leaves a half-written ``target`` and never
    removes an existing one; the temporary is removed on any exception (the command
    line turns SIGTERM into one), and temporaries of earlier runs that were killed
    outright are removed first (:func:`remove_stale_temporaries`). Inside
    :func:`dcplan.outputset.output_set` the complete temporary is staged instead of
    renamed, and moved in with the command's other outputs.

    Parameters
    ----------
    target : Path or str
        Final file path.
    suffix : str, optional
        Suffix of the temporary file (defaults to ``target``'s suffix, which some
        writers use to pick a format).

    Raises
    ------
    InputError
        If ``target`` exists and is not a regular file (:func:`check_replaceable_file`).
    """
    target = Path(target)
    check_replaceable_file(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(target)
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(target), suffix=suffix or target.suffix,
                                   dir=target.parent)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    os.close(fd)
    tmp_path = Path(tmp)
    staged = False
    try:
        yield tmp_path
        # mkstemp creates the file owner-only; give it the usual permissions (umask).
        os.chmod(tmp_path, 0o666 & ~_umask())
        outputs = _output_set()
        if outputs is not None and not _in_temporary_folder(target):
            outputs.stage(tmp_path, target)  # moved in with the rest of the command's set
            staged = True
        else:
            os.replace(tmp_path, target)
    finally:
        if not staged and tmp_path.exists():
            tmp_path.unlink()


def _in_temporary_folder(target: Path) -> bool:
    """Whether ``target`` lies in a dcplan temporary folder (staged whole, as a folder)."""
    return any(TMP_TAG in p.name for p in target.parents)


def _umask() -> int:
    """The process umask (read by setting and restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text_atomic(target: Path | str, text: str) -> None:
    """Write ``text`` to ``target`` atomically (temporary file + rename)."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
