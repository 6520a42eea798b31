"""YAML reading with line numbers and duplicate-key detection, and atomic writes."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from dcplan.errors import InputError, Problem, display_path

#: Key under which the 1-based line of a mapping is stored by :func:`read_yaml`.
LINE_KEY = "__line__"
#: Key under which the 1-based line of each key of a mapping is stored.
KEY_LINES = "__key_lines__"


class _LineLoader(yaml.SafeLoader):
    """Safe loader that records each mapping's line and rejects duplicate keys."""

    duplicate_keys: list[tuple[str, int]]

    def construct_mapping(self, node, deep=False):  # noqa: D102
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                self.duplicate_keys.append((str(key), line))
            seen[key] = line
        mapping = super().construct_mapping(node, deep=deep)
        mapping[LINE_KEY] = node.start_mark.line + 1
        mapping[KEY_LINES] = {str(k): ln for k, ln in seen.items()}
        return mapping


# Dates stay strings ("2027-07-01"): the schema validates them, and YAML's implicit
# timestamp conversion would turn "2027-07" and "2027-07-01" into different types.
_LineLoader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def read_text(path: Path | str, encoding: str = "utf-8") -> str:
    """Read a text file; a missing or unreadable file raises a clear :class:`InputError`."""
    shown = display_path(path)
    try:
        return Path(path).read_text(encoding=encoding)
    except FileNotFoundError:
        raise InputError(Problem(shown, "file not found; check the path")) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(shown, f"cannot read file ({exc})")) from None


def read_yaml(path: Path) -> Any:
    """Read a YAML file; every mapping gets its line number under ``__line__``.

    Parameters
    ----------
    path : Path
        File to read.

    Returns
    -------
    Any
        The parsed document.

    Raises
    ------
    InputError
        If the file is missing, is not valid YAML, or repeats a key in one mapping.
    """
    shown = display_path(path)
    text = read_text(path)
    loader = _LineLoader(text)
    loader.duplicate_keys = []
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(exc, "problem", None) or str(exc)
        raise InputError(
            Problem(shown, f"malformed YAML ({reason}); fix the syntax near this line", line=line)
        ) from None
    finally:
        loader.dispose()
    if loader.duplicate_keys:
        raise InputError(
            [
                Problem(shown, f"key '{k}' appears twice in the same mapping; keep one", line=ln)
                for k, ln in loader.duplicate_keys
            ]
        )
    return data


def strip_lines(data: Any) -> Any:
    """Return ``data`` without the line keys added by :func:`read_yaml`."""
    if isinstance(data, dict):
        return {k: strip_lines(v) for k, v in data.items() if k not in (LINE_KEY, KEY_LINES)}
    if isinstance(data, list):
        return [strip_lines(v) for v in data]
    return data


@contextmanager
def atomic_path(target: Path | str, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; rename it onto ``target`` on success.

    An interrupted or failed write never leaves a half-written ``target`` and never
    removes an existing one.

    Parameters
    ----------
    target : Path or str
        Final file path.
    suffix : str, optional
        Suffix of the temporary file (defaults to ``target``'s suffix, which some
        writers use to pick a format).
    """
    target = Path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=suffix or target.suffix, dir=target.parent
        )
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        # mkstemp creates the file owner-only; give it the usual permissions (umask).
        os.chmod(tmp_path, 0o666 & ~_umask())
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def _umask() -> int:
    """The process umask (read by setting and restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text_atomic(target: Path | str, text: str) -> None:
    """Write ``text`` to ``target`` atomically (temporary file + rename)."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
