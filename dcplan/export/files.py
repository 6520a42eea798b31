"""File writing for the exporters: atomic writes and the CSV writer.

:func:`write_csv` (from :mod:`dcplan.tableio`, which sits below the planner so that
``PlanResult.write_csvs`` can use it too) is the one CSV writer of result tables:
rounded at the source, integer counts, yearly periods as numbers, and text cells that
begin with ``=``, ``+``, ``-`` or ``@`` written so that spreadsheets read them as text.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dcplan.tableio import csv_ready, csv_safe, tidy_table, write_csv
from dcplan.yamlio import atomic_path

__all__ = ["atomic_file", "csv_ready", "csv_safe", "tidy_table", "write_csv"]


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
