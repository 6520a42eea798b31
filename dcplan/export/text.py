"""Plain-text tables for terminals and text reports (rendered with rich, no colour).

Numbers are right-aligned, text left-aligned; a table wider than ``width`` wraps its
cells instead of running off the screen (``width=None``: as wide as it needs).
"""

from __future__ import annotations

import io
import re
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

#: A cell that reads as a number (also "58 (+3)", "-12.5 %", "1,234 / 9.9").
_NUMERIC = re.compile(r"^\s*[+\-\u2212]?[(]?[\d.,]+")
#: Text that starts with digits but is not a number (dates, quarters).
_NOT_NUMERIC = re.compile(r"^\d{4}(-\d{2}|[qQ]\d|$)")


def format_cell(v: Any) -> str:
    """One value as the tables show it.

    ``-`` for missing, 4 significant digits below 10^4, thousands separators above.
    """
    if v is None or (isinstance(v, float) and v != v):
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e4 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}" if abs(v) >= 1e4 else str(v)
    return str(getattr(v, "value", v))


def _numeric(values: list[Any]) -> bool:
    seen = False
    for v in values:
        if v is None or (isinstance(v, float) and v != v) or v == "-":
            continue
        if isinstance(v, bool):
            return False
        if isinstance(v, int | float):
            seen = True
            continue
        text = str(v)
        if not _NUMERIC.match(text) or _NOT_NUMERIC.match(text):
            return False
        seen = True
    return seen


def render(renderable: Any, width: int | None = None) -> str:
    """Text of a rich renderable at ``width`` columns (no colour, no trailing spaces)."""
    buf = io.StringIO()
    console = Console(file=buf, width=width or 10_000, color_system=None,
                      force_terminal=False, legacy_windows=False, soft_wrap=False)
    console.print(renderable)
    return "\n".join(line.rstrip() for line in buf.getvalue().rstrip("\n").splitlines())


#: Default width of terminal text [characters].
WIDTH = 100
#: Longest number or id kept on one line in a wrapped table [characters].
MAX_UNSPLIT = 24


def format_table(rows: list[dict[str, Any]], columns: list[str] | None = None, *,
                 width: int | None = None, headers: dict[str, str] | None = None) -> str:
    """Format ``rows`` as a text table: numbers right-aligned, one header line.

    Parameters
    ----------
    rows : list of dict
    columns : list of str, optional
        Columns in order (default: the first row's keys).
    width : int, optional
        Wrap cells so the table fits this many characters.
    headers : dict, optional
        Column -> header text (a line break splits it over two lines).
    """
    if not rows:
        return "(none)"
    columns = columns or list(rows[0])
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="",
                  expand=False, padding=(0, 1, 0, 0))
    for c in columns:
        values = [r.get(c) for r in rows]
        cells = [format_cell(v) for v in values]
        # a number or an id (no spaces) is never split over lines: such a column is at
        # least as wide as its longest cell (up to MAX_UNSPLIT characters), and the
        # columns of words wrap instead
        unsplit = max((len(x) for x in cells), default=0)
        keep = all(" " not in x for x in cells) and unsplit <= MAX_UNSPLIT
        # Text objects: brackets such as "[kW]" are text, not rich markup.
        table.add_column(Text((headers or {}).get(c, c)),
                         justify="right" if _numeric(values) else "left", overflow="fold",
                         min_width=unsplit if keep else None)
    for r in rows:
        table.add_row(*[Text(format_cell(r.get(c))) for c in columns])
    return render(table, width)


__all__ = ["format_cell", "format_table", "render"]
