"""Atomic file writes for the exporters (temporary file next to the target + rename)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dcplan.yamlio import atomic_path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_file(target: Path | str, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path; on success it replaces ``target`` in one rename.

    Like :func:`dcplan.yamlio.atomic_path` (an interrupted or failed write leaves
    ``target`` as it was and no temporary file behind), and the new file gets the
    usual permissions (``0o666`` less the umask) instead of the private ones of a
    temporary file, so a workbook handed over can be read by others.
    """
    with atomic_path(target, suffix=suffix) as tmp:
        yield tmp
        if tmp.exists():
            os.chmod(tmp, 0o666 & ~_umask())
