"""File writing for the exporters: atomic files and folders, and the CSV writer.

:func:`atomic_file` and :func:`replace_folder` write a file or a whole folder next to
its target and rename it into place. :func:`write_csv` (from :mod:`dcplan.tableio`,
which sits below the planner so that ``PlanResult.write_csvs`` can use it too) is the
one CSV writer of result tables: rounded at the source, integer counts, yearly periods
as numbers, and text cells that begin with ``=``, ``+``, ``-`` or ``@`` written so that
spreadsheets read them as text.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dcplan.errors import InputError, Problem
from dcplan.tableio import csv_ready, csv_safe, tidy_table, write_csv
from dcplan.yamlio import TMP_TAG, atomic_path, remove_stale_temporaries, temp_prefix

#: File that marks a folder as written by dcplan (listing what it holds), written last.
MARKER = ".dcplan-output.json"

__all__ = ["MARKER", "atomic_file", "csv_ready", "csv_safe", "replace_folder", "tidy_table",
           "write_csv"]


@contextmanager
def atomic_file(target: Path | str, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path; on success it replaces ``target`` in one rename.

    :func:`dcplan.yamlio.atomic_path`: an interrupted or failed write leaves
    ``target`` as it was and no temporary file behind, and the new file gets the usual
    permissions (``0o666`` less the umask), so a workbook handed over can be read by
    others.
    """
    with atomic_path(target, suffix=suffix) as tmp:
        yield tmp


def _ours(folder: Path) -> bool:
    """Whether ``folder`` may be replaced: empty, or marked as a dcplan output folder."""
    if not folder.exists():
        return True
    if not folder.is_dir():
        return False
    entries = [p for p in folder.iterdir() if TMP_TAG not in p.name]
    return not entries or (folder / MARKER).is_file()


@contextmanager
def replace_folder(target: Path | str) -> Iterator[Path]:
    """Yield a temporary folder; on success it takes the place of ``target`` as a whole.

    The new folder is written next to ``target`` (hidden, named after this process) and
    renamed into place, so ``target`` is always either the complete old folder, the
    complete new one, or (for an instant, or after a run killed between the two
    renames) absent; never a mix of two runs. A marker file (:data:`MARKER`) listing
    the files is written last. On any exception the temporary folder is removed.

    Raises
    ------
    InputError
        When ``target`` holds files dcplan did not write (no marker): they are never
        deleted; choose an empty or new folder.
    """
    target = Path(target)
    if not _ours(target):
        raise InputError(Problem(str(target), "this folder holds files dcplan did not write; "
                                              "choose a new or empty folder for the output "
                                              "(dcplan replaces its output folders whole)"))
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(target)
    tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(target), dir=target.parent))
    try:
        yield tmp
        files = sorted(p.name for p in tmp.iterdir())
        (tmp / MARKER).write_text(json.dumps({"written_by": "dcplan", "files": files},
                                             indent=1))
        os.chmod(tmp, 0o777 & ~_umask())
        old = None
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=temp_prefix(target), dir=target.parent))
            os.rmdir(old)
            os.replace(target, old)
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
