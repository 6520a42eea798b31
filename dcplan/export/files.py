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
from typing import Any

from dcplan.errors import InputError, Problem
from dcplan.outputset import current as current_output_set
from dcplan.outputset import move_in
from dcplan.tableio import csv_ready, csv_safe, tidy_table, write_csv
from dcplan.yamlio import atomic_path, remove_stale_temporaries, temp_prefix

#: File that marks a folder as written by dcplan (listing what it holds), written last.
MARKER = ".dcplan-output.json"

__all__ = ["MARKER", "atomic_file", "check_distinct_outputs", "check_replaceable", "csv_ready",
           "csv_safe",
           "foreign_entries", "replace_folder", "tidy_table", "write_csv"]


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


def _digest(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def foreign_entries(folder: Path | str) -> list[str]:
    """What in ``folder`` dcplan did not write there, so that replacing it would lose it.

    A folder may be replaced when it does not exist, is empty, or holds exactly what its
    marker (:data:`MARKER`) lists, each file unchanged since dcplan wrote it (size and
    SHA-256 in the marker). Everything else is named: a file or folder the marker does
    not list, a listed file that was changed or replaced by something else, or the
    folder itself when it is not a folder or its marker is not dcplan's.

    Parameters
    ----------
    folder : path

    Returns
    -------
    list of str
        One description per entry that would be lost; empty when the folder may go.
    """
    folder = Path(folder)
    if not folder.exists() and not folder.is_symlink():
        return []
    if folder.is_symlink() or not folder.is_dir():
        return [f"{folder} is not a folder dcplan wrote"]
    # Nothing is skipped, not even a name that looks like one of dcplan's temporaries
    # (they are written next to the folder, never inside it): a user's file named
    # "budget.dcplan-tmp.xlsx" is the user's.
    entries = sorted(folder.iterdir())
    if not entries:
        return []
    marker = folder / MARKER
    listed: dict[str, Any] = {}
    try:
        if marker.is_file() and not marker.is_symlink() and marker.stat().st_size < 1 << 20:
            data = json.loads(marker.read_text(encoding="utf-8"))
            if isinstance(data, dict) and data.get("written_by") == "dcplan":
                raw = data.get("files", [])
                listed = ({str(k): v for k, v in raw.items()} if isinstance(raw, dict)
                          else {str(k): None for k in raw})
    except (OSError, ValueError):
        listed = {}
    if not listed and not marker.is_file():
        return [str(p) for p in entries]
    foreign = []
    for p in entries:
        if p.name == MARKER:
            continue
        if p.name not in listed:
            foreign.append(f"{p} (not written by dcplan)")
        elif p.is_symlink() or not p.is_file():
            foreign.append(f"{p} (dcplan wrote a file here; this is not it)")
        elif isinstance(listed[p.name], dict):
            want = listed[p.name]
            if p.stat().st_size != want.get("bytes") or _digest(p) != want.get("sha256"):
                foreign.append(f"{p} (changed since dcplan wrote it)")
    return foreign


def check_replaceable(folder: Path | str, option: str = "") -> None:
    """Raise if replacing ``folder`` would lose anything dcplan did not write there.

    Raises
    ------
    InputError
        Naming every such entry (see :func:`foreign_entries`), with the fix.
    """
    foreign = foreign_entries(folder)
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more"
                                          if len(foreign) > 5 else "")
        what = f"{option}: " if option else ""
        raise InputError(Problem(str(folder), f"{what}this folder holds files dcplan did not "
                                              f"write: {shown}; dcplan replaces its output "
                                              "folders whole and never deletes such files: "
                                              "move them away, or choose a new or empty "
                                              "folder"))


def check_distinct_outputs(files: dict[str, Path | str | None],
                           folders: dict[str, Path | str | None],
                           folders_replaced: bool = True) -> None:
    """Raise if two outputs of one command would land on the same place.

    Two options naming the same path would leave only the last one written (a
    workbook silently replaced by the report); a file or folder inside an output
    folder that is replaced whole would be lost with it, or break the set half way.

    Parameters
    ----------
    files, folders : dict
        Option name -> path (None: not asked for).
    folders_replaced : bool
        The folders are replaced whole (``plan -o``), so nothing else may lie inside.

    Raises
    ------
    InputError
        One problem per clash, naming both options.
    """
    given = [(opt, Path(p).resolve(), opt in folders)
             for opt, p in [*files.items(), *folders.items()] if p is not None]
    problems = []
    for i, (a, pa, _fa) in enumerate(given):
        for b, pb, _fb in given[i + 1:]:
            if pa == pb:
                problems.append(Problem(str(pa), f"{a} and {b} name the same place; give each "
                                                 "output its own path"))
    if folders_replaced:
        for a, pa, _fa in given:
            for b, pb, fb in given:
                if fb and a != b and pb in pa.parents:
                    problems.append(Problem(str(pa), f"{a} lies inside the {b} folder, which is "
                                                     "replaced as a whole; put it elsewhere"))
    if problems:
        raise InputError(problems)


@contextmanager
def replace_folder(target: Path | str) -> Iterator[Path]:
    """Yield a temporary folder; on success it takes the place of ``target`` as a whole.

    The new folder is written next to ``target`` (hidden, named after this process) and
    renamed into place, so ``target`` is always either the complete old folder, the
    complete new one, or (for an instant, or after a run killed between the two
    renames) absent; never a mix of two runs. A marker file (:data:`MARKER`) listing
    the files with their sizes and SHA-256, and the run's stamp
    (:class:`dcplan.outputset.RunStamp`) inside an output set, is written last. Inside
    :func:`dcplan.outputset.output_set` the folder is moved in with the command's other
    outputs. On any exception the temporary folder is removed.

    Raises
    ------
    InputError
        When ``target`` holds anything dcplan did not write (:func:`foreign_entries`):
        it is never deleted; choose an empty or new folder.
    """
    target = Path(target)
    check_replaceable(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(target)
    tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(target), dir=target.parent))
    staged = False
    try:
        yield tmp
        files = {p.name: {"bytes": p.stat().st_size, "sha256": _digest(p)}
                 for p in sorted(tmp.iterdir())}
        marker: dict[str, Any] = {"written_by": "dcplan", "files": files}
        outputs = current_output_set()
        if outputs is not None:
            marker["run"] = outputs.stamp.as_dict()
        (tmp / MARKER).write_text(json.dumps(marker, indent=1))
        os.chmod(tmp, 0o777 & ~_umask())
        check_replaceable(target)  # again: a file may have been added while we worked
        if outputs is not None:
            outputs.stage(tmp, target)
            staged = True
            return
        move_in([(tmp, target)])
    finally:
        if not staged and tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
