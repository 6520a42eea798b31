"""Plain-text tables for terminals and text reports (rendered with rich, no colour).

Numbers are right-aligned, text left-aligned; a table wider than ``width`` wraps its
cells of words, then breaks identifier headers at their underscores, then leaves out
columns (last first, or those named as optional first) with a one-line note saying
which: a number is never split or cut (``width=None``: as wide as it needs).
:func:`terminal_width` is the one width of terminal text: ``COLUMNS`` when set, else
the terminal's, else :data:`WIDTH`; :func:`fit_lines` wraps free text to it.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import textwrap
from typing import Any

# rich is imported where a table is drawn: the command line loads this module for its
# widths and wrapping before it knows whether it will draw one (`dcplan --help`).

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
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=width or 10_000, color_system=None,
                      force_terminal=False, legacy_windows=False, soft_wrap=False)
    console.print(renderable)
    return "\n".join(line.rstrip() for line in buf.getvalue().rstrip("\n").splitlines())


#: Default width of terminal text [characters].
WIDTH = 100
#: Narrowest width honoured (a smaller ``COLUMNS`` is raised to it) [characters].
MIN_WIDTH = 40
#: Longest number or id kept on one line in a wrapped table [characters].
MAX_UNSPLIT = 32
#: Longest header word kept whole; a longer one folds (headers are text, not numbers).
HEAD_FOLD = 16
#: Narrowest a column of several-word cells is wrapped to [characters].
MIN_WRAPPED = 20
#: Characters between two columns (the padding and the box's blank divider).
GAP = 2
#: Where to see the columns a table left out (the commands' ``--json`` and ``--wide``).
LEFT_OUT_HINT = "--json or --wide shows them, or a wider terminal (COLUMNS)"


def terminal_width() -> int:
    """Width of terminal text [characters].

    ``COLUMNS`` when set, else the terminal's size, else :data:`WIDTH` (output to a
    file or a pipe); never below :data:`MIN_WIDTH`.
    """
    env = os.environ.get("COLUMNS", "").strip()
    if env.isdigit() and int(env) > 0:
        return max(int(env), MIN_WIDTH)
    return max(shutil.get_terminal_size((WIDTH, 24)).columns, MIN_WIDTH)


def fit_lines(text: str, width: int | None) -> str:
    """``text`` with every line longer than ``width`` wrapped at spaces.

    A continuation keeps the line's indent (two more after a ``- `` bullet); a word
    longer than the width (a path, an id) stays whole on its own line.
    """
    if not width:
        return text
    out = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        body = line.lstrip(" ")
        indent = " " * (len(line) - len(body))
        more = indent + ("  " if body.startswith(("- ", "* ")) else "")
        out += textwrap.wrap(line, width, initial_indent="", subsequent_indent=more,
                             break_long_words=False, break_on_hyphens=False,
                             drop_whitespace=True) or [""]
        if out[-1] == "" and line.strip():
            out.pop()
    return "\n".join(out)


def _words(text: str) -> list[str]:
    return text.split() or [""]


def _id_parts(h: str) -> list[str] | None:
    """``"it_power_max_kw"`` -> ``["it_", "power_", "max_", "kw"]``; None unless an id."""
    if " " in h or "\n" in h or "_" not in h.strip("_"):
        return None
    parts = h.split("_")
    return [x + "_" for x in parts[:-1]] + [parts[-1]]


def _pack(parts: list[str], width: int) -> str:
    """Parts of an identifier packed into lines of at most ``width`` characters."""
    lines = [""]
    for x in parts:
        if lines[-1] and len(lines[-1]) + len(x) > width:
            lines.append("")
        lines[-1] += x
    return "\n".join(lines)


def _widths(cells: list[str], head: str, split_ids: bool) -> tuple[int, int]:
    """(natural, narrowest) width of a column [characters].

    The narrowest keeps every number and id whole (ids longer than :data:`MAX_UNSPLIT`
    may fold) and every header word whole (an identifier header may break after its
    underscores when ``split_ids``).
    """
    natural = max([len(x) for x in cells] + [len(ln) for ln in head.split("\n")])
    words = [len(w) for x in cells for w in _words(x)]
    parts = _id_parts(head) if split_ids else None
    head_words = [min(len(w), HEAD_FOLD) for w in (parts or head.split())] or [0]
    unsplit = [len(x) for x in cells if " " not in x and len(x) <= MAX_UNSPLIT]
    narrow = max([min(w, MAX_UNSPLIT) for w in words] + unsplit + head_words + [1])
    if any(" " in x for x in cells):  # words wrap, but not down to a word a line
        narrow = max(narrow, MIN_WRAPPED)
    return natural, min(natural, narrow)


def _cells_width(cells: list[str], head: str, split_ids: bool) -> int:
    """Width of a column whose header wraps but whose cells do not [characters]."""
    natural, narrow = _widths(cells, head, split_ids)
    return max(narrow, max((len(x) for x in cells), default=0))


def _fit(nat: list[int], low: list[int], room: int) -> list[int] | None:
    """Column widths that fit ``room`` characters.

    The widest columns are narrowed first, none below its narrowest; None if even the
    narrowest do not fit.
    """
    if sum(low) > room:
        return None
    w = list(nat)
    while sum(w) > room:
        cand = [i for i in range(len(w)) if w[i] > low[i]]
        top = max(w[i] for i in cand)
        widest = [i for i in cand if w[i] == top]
        second = max([w[i] for i in cand if w[i] < top] + [0])
        step = max(1, min(top - second, -(-(sum(w) - room) // len(widest))))
        for i in widest:
            w[i] = max(low[i], w[i] - step)
    return w


def format_table(rows: list[dict[str, Any]], columns: list[str] | None = None, *,
                 width: int | None = None, headers: dict[str, str] | None = None,
                 optional: list[str] | None = None, hint: str = LEFT_OUT_HINT,
                 drop_first: bool = False) -> str:
    """Format ``rows`` as a text table: numbers right-aligned, one header line.

    Parameters
    ----------
    rows : list of dict
    columns : list of str, optional
        Columns in order (default: the first row's keys).
    width : int, optional
        Fit the table in this many characters [characters]: cells of words wrap,
        identifier headers break at underscores, then columns are left out (those in
        ``optional`` first, in that order, then the last ones; never the first) with a
        note naming them; no number is ever split. None: as wide as it needs.
    headers : dict, optional
        Column -> header text (a line break splits it over two lines).
    optional : list of str, optional
        Columns to leave out first when the table does not fit, in that order.
    hint : str
        Where the note says the left-out columns can be seen.
    drop_first : bool
        Leave out the ``optional`` columns before wrapping any cell (default: wrap
        cells first, then leave out columns).
    """
    if not rows:
        return "(none)"
    columns = list(columns or list(rows[0]))
    cells = {c: [format_cell(r.get(c)) for r in rows] for c in columns}
    right = {c: _numeric([r.get(c) for r in rows]) for c in columns}
    heads = {c: (headers or {}).get(c, c) for c in columns}
    shown, dropped, split_ids = list(columns), [], False
    widths: list[int] | None = None
    while width:
        measures = [_widths(cells[c], heads[c], split_ids) for c in shown]
        nat, low = [m[0] for m in measures], [m[1] for m in measures]
        room = width - GAP * (len(shown) - 1)
        if sum(nat) <= room:
            widths = nat
            break
        spare = [c for c in (optional or []) if c in shown and c != shown[0]]
        if drop_first and spare:  # the optional columns go before any cell wraps
            shown.remove(spare[0])
            dropped.append(spare[0])
            continue
        # headers wrap first, then cells of words
        comfy = [_cells_width(cells[c], heads[c], split_ids) for c in shown]
        widths = _fit(nat, comfy, room) or _fit(nat, low, room)
        if widths is not None:
            break
        if not split_ids:
            split_ids = True
            continue
        if len(shown) == 1:
            widths = None  # one column wider than the terminal: as wide as it needs
            break
        order = [c for c in (optional or []) if c in shown and c != shown[0]]
        victim = order[0] if order else shown[-1]
        shown.remove(victim)
        dropped.append(victim)
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="",
                  expand=False, padding=(0, 1, 0, 0))
    for j, c in enumerate(shown):
        head, parts = heads[c], _id_parts(heads[c]) if split_ids else None
        if parts and widths:
            head = _pack(parts, widths[j])
        # Text objects: brackets such as "[kW]" are text, not rich markup.
        table.add_column(Text(head), justify="right" if right[c] else "left",
                         overflow="fold", width=widths[j] if widths else None,
                         min_width=None if widths else _widths(cells[c], head, False)[0])
    for i in range(len(rows)):
        table.add_row(*[Text(cells[c][i]) for c in shown])
    text = render(table, (sum(widths) + GAP * (len(widths) - 1)) if widths else None)
    if dropped:
        text += "\n" + fit_lines(f"(left out to fit {width} columns: {', '.join(dropped)}; "
                                 f"{hint})", width)
    return text


__all__ = ["LEFT_OUT_HINT", "MAX_UNSPLIT", "MIN_WIDTH", "WIDTH", "fit_lines", "format_cell",
           "format_table", "render", "terminal_width"]
