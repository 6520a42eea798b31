"""Facilities-grade Excel workbook of one plan (openpyxl).

Sheets: Summary (outcome, key figures, checks, binding limits, notes), KPIs, Fleet,
Power, Cooling, Network, Costs, Charts (native Excel charts, one per printed page),
Chart data (live pivot tables the charts plot; hidden, so not printed), Build vs buy
(with energy per request), Demand, Allocation, Unserved, Grid, Shadow prices, Bill
of materials, Sizing, Assumptions (every input figure with unit, source and date) and
Sources.

Every data sheet has the same layout (see :data:`HEADER_ROW`): a title in row 1, a
one-line description in row 2, the header in row 3 (words and the unit in brackets),
the table from row 4, then a blank row and a ``Total`` row whose cells are live
``SUM`` formulas over the table. The header row is frozen, has an autofilter and is
repeated on every printed page. Tables are written as
:func:`dcplan.tableio.tidy_table` makes them: rounded at the source, counts as
integers, yearly periods as numbers, with a name column before each id column that
has names in the catalogs (:func:`with_names`). Every sheet prints on A4 with its body
text at 8 pt or more, one page wide or in blocks of columns, with the scenario name and
page numbers in its header and footer (:mod:`dcplan.export.printing`). Text that comes
from user input is always written as text (never as a formula), and the file is written
to a temporary file and renamed, so an interrupted run never leaves a broken workbook.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from openpyxl import Workbook
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.chart import BarChart, LineChart, Reference
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter, quote_sheetname
from openpyxl.worksheet.worksheet import Worksheet

from dcplan.export.files import atomic_file
from dcplan.export.labels import (
    KPI_LABELS,
    catalog_names,
    category_label,
    header,
    kpi_format,
    kpi_label,
    kpi_meaning,
    kpi_unit,
    label_of,
    name_of,
    number_format,
    unit_of,
)
from dcplan.export.printing import (
    CHART_AREA,
    CHART_COL_WIDTH,
    CHART_SIZE_CM,
    chart_page,
    min_scale,
    page_chars,
    page_layout,
    printable,
    printed_width,
    repeated_cols,
    setup_page,
    text_width,
)
from dcplan.export.sources import assumptions_table, equipment_ids
from dcplan.planner.analysis import binding_rows, no_grid_sites
from dcplan.planner.cashflow import api_return_text, terminal_note
from dcplan.planner.plan_result import POWER_BASIS_LABEL, time_to_power_line
from dcplan.planner.sizing import OWN
from dcplan.tableio import FORMULA_START, NOT_FORMULAS, is_year_column, tidy_table

#: Row of the column headers on every data sheet (1-based); data start one row below.
HEADER_ROW = 3
FIRST_DATA_ROW = HEADER_ROW + 1

TITLE_FONT = Font(bold=True, size=14)
SECTION_FONT = Font(bold=True, size=12)
HEADER_FONT = Font(bold=True)
HEADER_FILL = PatternFill("solid", fgColor="DDE6F0")
TOTAL_FONT = Font(bold=True)
NOTE_FONT = Font(italic=True, color="555555")
WRAP = Alignment(wrap_text=True, vertical="top")


@dataclass(frozen=True)
class SheetSpec:
    """One data sheet written from one result table.

    Attributes
    ----------
    sheet : str
        Sheet name.
    table : str
        Result-table name (``result.tables[table]``).
    title, description : str
    totals : tuple of str
        Columns summed in the Total row (live ``SUM`` formulas).
    id_cols : int
        Leading identifier columns kept visible when scrolling right.
    total_where : tuple of (str, str), optional
        ``(column, value)``: the Total row sums only the rows whose ``column`` holds
        ``value`` (live ``SUMIF``); None sums every row.
    """

    sheet: str
    table: str
    title: str
    description: str
    totals: tuple[str, ...] = ()
    id_cols: int = 1
    total_where: tuple[str, str] | None = None


#: The data sheets, in workbook order after Summary.
SHEETS: tuple[SheetSpec, ...] = (
    SheetSpec("KPIs", "kpis", "Key performance indicators",
              "Headline figures of the plan as computed by dcplan, with their unit and meaning; "
              "the Id column names each figure in the kpis.csv file."),
    SheetSpec("Fleet", "fleet", "Fleet: racks by type, site and period",
              "Racks in service, bought and retired per period; allocated = racks serving "
              "demand at the peak hour.", ("new_racks", "retired_racks"), 3),
    SheetSpec("Power", "power", "Power by site and period against the grid limit",
              "Facility power = IT + cooling + network + electrical losses, at the peak hour, "
              "against the grid limit; headroom = grid limit - facility power - UPS recharge.",
              ("energy_kwh", "carbon_t"), 2),
    SheetSpec("Cooling", "cooling", "Cooling by site and period",
              "Heat to liquid and to air, CDUs including the redundant spares, heat-rejection "
              "electric power at peak, and PUE.", (), 2),
    SheetSpec("Network", "network", "Network by site, rack type and period",
              "Scale-out and front-end network (switches, optics, NICs) of the racks in service: "
              "power and the capex of that network.", (), 3),
    SheetSpec("Costs", "costs", "Costs by category and period",
              "Capex is paid at the start of a period, opex in its middle; the terminal value "
              "(book value left at the end, negative) is credited at the end of the horizon. "
              "Discounted = cost x discount factor; their sum is the NPV.",
              ("cost_usd", "cost_usd_discounted"), 3),
    SheetSpec("Build vs buy", "build_vs_buy", "Build vs buy: the plan's tokens bought from APIs",
              "The served token mix of each workload (uncached input, prompt-cache hits, "
              "output; discounted like the levelised cost) priced at every comparable API of "
              "api_prices.yaml, against the plan's own levelised cost (the NPV shared among "
              "workloads by capex-weighted allocated rack-periods; reserve capacity included, "
              "and operations staff and software unless economics.operations_costs is false). "
              "Break-even: the demand, as a share of the planned "
              "one and as a utilisation of the installed fleet, above which building is "
              "cheaper (the planned fleet held fixed). Below: facility energy per request.",
              (), 4),
    SheetSpec("Demand", "demand", "Token demand and service by workload and period",
              "Input + output tokens per second; peak = average x peak-to-average factor. "
              "Demand as stated is in the scenario's unit for the workload (tokens, requests "
              "or characters per month or day), converted as the conversion column says.",
              (), 3),
    SheetSpec("Allocation", "allocation", "Allocation of racks to workloads at peak",
              "Which racks serve which workload (and prefill/decode pool) at the peak hour.",
              (), 5),
    SheetSpec("Unserved", "unserved", "Unserved demand",
              "Demand the sites cannot host (empty when all demand is served).", (), 3),
    SheetSpec("Grid", "grid", "Grid connections requested, energised and used",
              "Sites whose grid connection is a decision: MW the grid can give (connectable), "
              "already committed, requested in the period (with or without the Distributed "
              "Energy Act assessment), energised when the lead time has passed, connected, and "
              "used (facility peak plus UPS recharge); empty when no site's connection is a "
              "decision. Where a site offers a flexible (curtailable) part: flexible MW "
              "requested and energised (counted in the connected MW), the MW a curtailment "
              "event cuts (depth x flexible), the allowance in hours a year (all of it "
              "assumed used) and the tokens a year flexible work defers out of the events "
              "(served later within its deadline; none dropped, the rows are hard).",
              ("requested_kw", "requested_assessed_kw"), 2),
    SheetSpec("Shadow prices", "shadow_prices", "Shadow prices of the limits",
              "What one more unit of a limit would save (grid [USD per MW], space) or what one "
              "more million tokens of demand would cost; 'integers fixed' keeps the chosen "
              "racks, 'LP relaxation' lets the rack counts move continuously.", (), 5),
    SheetSpec("Bill of materials", "bom", "Bill of materials by site and period",
              "What each site has installed in each period and what to order (new = more than "
              "the period before; removed = no longer needed): racks, switches by tier and "
              "model, transceivers by type, copper links, NICs, CDUs with their redundant "
              "spares, heat-rejection plant and air handlers, UPS modules and generator sets; "
              "kW at full load (losses for UPS, standby draw for generators) and capex of what "
              "is installed and of what to order. Purchase 'own': bought on its own; "
              "'in_rack': inside the rack's price and IT power (the NICs), its kW and capex "
              "shown as information in the last two columns only, and left out of every "
              "total (the Total row sums the 'own' lines).",
              ("new", "removed", "new_capex_usd"), 5, total_where=("purchase", OWN)),
    SheetSpec("Sizing", "sizing", "Exact sizing of the chosen fleet vs the plan's own figures",
              "Network and cooling sized exactly for each site's fleet in every period, "
              "beside the plan's figures: switch, link and CDU counts are the plan's "
              "integers (difference 0); power, capex and positions as noted.", (), 3),
)

#: Data sheets only some plans have, written before "Assumptions" when their table exists.
OPTIONAL_SHEETS: tuple[SheetSpec, ...] = (
    SheetSpec("Power caps", "caps", "Power caps chosen by site, rack type and period",
              "Racks in service at each board power cap level (fraction of the accelerators' "
              "max power) that the plan chose among the scenario's power_caps, the power a "
              "rack can draw at that cap, the tokens/s its allocations serve at peak, and "
              "per site the racks and tokens/s per MW of facility peak (the plan's power "
              "basis).", (), 4),
    SheetSpec("Power sources", "sources", "Power sources by site and period",
              "Where each site's power comes from when the scenario offers storage or "
              "on-site generation: the grid's peak (the grid row and demand charge use it) "
              "and, in that hour, the facility load (as the peak is sized: design-day "
              "cooling, headroom racks at serving power) and the load served, which the "
              "grid, the battery's net discharge and the on-site generation add up to; "
              "battery energy (usable) and power and on-site capacity in service; energy "
              "over the period from the grid (the facility's energy plus charge less "
              "discharge and generation), the battery and on-site generation; the "
              "generation's carbon and fuel with variable O&M, and the representative hours "
              "it ran below its minimum stable load (not enforced by the plan's linear "
              "dispatch). Where a site is offered a flexible grid connection: the part of "
              "the grid's peak above the firm MW connected (carried by the flexible MW).",
              ("grid_mwh", "onsite_mwh", "onsite_carbon_t", "onsite_fuel_usd"),
              3),
    SheetSpec("Power oversubscription", "power_oversubscription",
              "Power oversubscription by site and period: provision, risk and tokens lost",
              "Each oversubscribed site provisions its factor times its racks' IT power at "
              "the plan's power basis; power capping keeps the draw under it. The fleet's "
              "draw in every hour is taken as normal (mean from the plan, spread from the "
              "performance model's p99 rack power, racks fully correlated): the share of "
              "the year it would exceed the provision, the energy above it, the tokens "
              "capping costs there, and the tokens/s the plan derated its racks by "
              "(docs/planner.md, Power oversubscription).", (), 2),
)

#: Sheet order of the plan workbook.
SHEET_ORDER = ("Summary", *(s.sheet for s in SHEETS[:6]), "Cash flow", "Chart power", "Chart racks",
               "Chart costs", "Chart data",
               *(s.sheet for s in SHEETS[6:]), "Assumptions", "Sources")

#: KPI id -> (name, what it means); the words live in :data:`dcplan.export.labels.KPI_LABELS`.
KPI_TEXT: dict[str, tuple[str, str]] = {k: (v[0], v[2]) for k, v in KPI_LABELS.items()}


# ----------------------------------------------------------------------------------------
# Cells
# ----------------------------------------------------------------------------------------


def clean_text(text: str) -> str:
    """``text`` without the control characters a workbook cannot hold."""
    return ILLEGAL_CHARACTERS_RE.sub("", text)


def put(ws: Worksheet, row: int, col: int, value: Any, fmt: str | None = None,
        font: Font | None = None) -> Any:
    """Write one value; strings are always text, never formulas.

    A string that starts with ``=``, ``+``, ``-`` or ``@`` (e.g. a site named
    ``=HYPERLINK("http://x","y")``) is stored as a text cell with Excel's quote prefix
    (the ``'`` shown only in the edit bar), so the visible text is unchanged and no
    spreadsheet program evaluates it.

    Parameters
    ----------
    ws : Worksheet
    row, col : int
        1-based.
    value : Any
        None and NaN leave the cell empty.
    fmt : str, optional
        Number format.
    font : Font, optional
    """
    cell = ws.cell(row=row, column=col)
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        cell.value = None
    elif isinstance(value, bool):
        cell.value = value
    elif isinstance(value, int | float):
        if isinstance(value, float) and math.isinf(value):
            cell.value = str(value)
            cell.data_type = "s"
        else:
            cell.value = value
    elif hasattr(value, "item") and not isinstance(value, str):  # numpy scalar
        return put(ws, row, col, value.item(), fmt, font)
    else:
        text = clean_text(str(getattr(value, "value", value)))
        cell.value = text
        cell.data_type = "s"
        if text.startswith(FORMULA_START) and text not in NOT_FORMULAS:
            cell.quotePrefix = True
    if fmt and cell.data_type == "n":
        cell.number_format = fmt
    if font is not None:
        cell.font = font
    return cell


def formula(ws: Worksheet, row: int, col: int, text: str, fmt: str | None = None,
            font: Font | None = None) -> Any:
    """Write a live Excel formula built by dcplan (never from user text)."""
    cell = ws.cell(row=row, column=col)
    cell.value = text
    if fmt:
        cell.number_format = fmt
    if font is not None:
        cell.font = font
    return cell


def ref(sheet: str, col: int, first: int, last: int, absolute: bool = True) -> str:
    """A1 reference to rows ``first..last`` of column ``col`` on ``sheet``."""
    c = get_column_letter(col)
    d = "$" if absolute else ""
    return f"{quote_sheetname(sheet)}!{d}{c}{d}{first}:{d}{c}{d}{last}"


def _width_of(value: Any, fmt: str) -> int:
    if value is None:
        return 0
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "E+" in fmt:
            return len(fmt)
        if fmt.startswith("#,##0") or fmt.startswith("0."):
            decimals = len(fmt.split(".")[1].rstrip("%")) if "." in fmt else 0
            return len(f"{value:,.{decimals}f}") + (1 if fmt.endswith("%") else 0)
        if isinstance(value, float):
            return len(f"{value:.6g}")
    return len(str(value))


#: Widest a column of wrapped text (names) is made [characters]; longer text wraps.
WRAP_WIDTH = 30

#: Widest a header makes its column [characters]; longer headers wrap.
HEADER_WIDTH = 10


def autosize(ws: Worksheet, min_width: int = 8, max_width: int = 30,
             skip_rows: Sequence[int] = (1, 2), header_row: int = HEADER_ROW) -> None:
    """Set column widths from the longest value (headers wrap, titles are skipped).

    A header wraps at :data:`HEADER_WIDTH` characters (never inside a word); a column
    of longer text is ``max_width`` wide and its long cells wrap (their rows get the
    height of the wrapped text, see :func:`fit_wrapped_rows`), so no value spills
    into the next column. Formulas (totals) count as the widest number of their
    column and two more digits.
    """
    widths: dict[int, int] = {}
    sums: set[int] = set()
    for row in ws.iter_rows():
        for cell in row:
            if cell.row in skip_rows or cell.value is None:
                continue
            v = cell.value
            if isinstance(v, str) and v.startswith("=") and cell.data_type == "f":
                sums.add(cell.column)
                continue
            bold = cell.font is not None and bool(cell.font.b)
            if isinstance(v, str) and (cell.row == header_row
                                       or (bold and cell.alignment.wrap_text)):
                # a header (of the table, or of a block below it) wraps between words
                longest_word = max((len(w) for w in v.split()), default=0)
                n = max(min(len(v), HEADER_WIDTH), longest_word)
            else:
                n = _width_of(v, cell.number_format) + 2 * int(cell.alignment.indent or 0)
                if isinstance(v, str):
                    n += 1  # text is left-aligned: a gap before the next column
                if isinstance(v, str) and cell.alignment.wrap_text and not bold:
                    n = min(n, WRAP_WIDTH)  # names wrap at this width
                if n > max_width and isinstance(v, str) and not bold:  # not a section title
                    cell.alignment = Alignment(wrap_text=True, vertical="top",
                                               horizontal=cell.alignment.horizontal,
                                               indent=cell.alignment.indent)
            widths[cell.column] = max(widths.get(cell.column, 0), n)
    for col in sums:
        widths[col] = widths.get(col, 0) + 1
    for col, n in widths.items():
        ws.column_dimensions[get_column_letter(col)].width = max(min_width,
                                                                  min(max_width, n + 1))


#: Width of a column that wrapped text does not use [characters]: the cell's padding
#: (a few pixels each side) and rounding.
CELL_PAD = 0.5

#: Height of one more line of wrapped 11 pt text [pt] (the first line takes a row of
#: 15 pt); DejaVu Sans, the widest usual substitute for Calibri, spaces lines 12.8 pt.
WRAPPED_LINE_PT = 13.5


def fit_wrapped_rows(ws: Worksheet, line_height: float = 15.0) -> None:
    """Give every row with wrapped text the height that shows all of it.

    Spreadsheet programs keep the stored height of a row when they open a file
    (LibreOffice does not re-measure wrapped text on load), so the height is set
    from the text, the column width (merged columns added up) and word wrapping.
    """
    spans = {}
    for rng in ws.merged_cells.ranges:
        width = sum(printed_width(ws, j)  # hidden columns show nothing
                    for j in range(rng.min_col, rng.max_col + 1))
        spans[(rng.min_row, rng.min_col)] = width
    need: dict[int, int] = {}
    for row in ws.iter_rows():
        for cell in row:
            if not isinstance(cell.value, str) or not cell.alignment.wrap_text \
                    or cell.data_type != "s":
                continue
            width = spans.get((cell.row, cell.column)) or printed_width(ws, cell.column)
            if not width:  # a hidden column prints nothing
                continue
            size = (cell.font.sz or 11) / 11 if cell.font is not None else 1.0
            # words measured as printed (glyph widths), a line holds the column's
            # width less the padding
            bold = bool(cell.font is not None and cell.font.b)
            lines = sum(_wrapped_lines(part, (width - CELL_PAD - 2 * (cell.alignment.indent or 0))
                                       / size, bold) for part in cell.value.split("\n"))
            tall = line_height + (lines - 1) * WRAPPED_LINE_PT
            need[cell.row] = max(need.get(cell.row, 0), tall * max(size, 1))
    for r, height in need.items():
        ws.row_dimensions[r].height = max(height, line_height)


def _text_lines(cell: Any, width: float) -> int:
    """Lines a wrapped text cell takes in a column ``width`` characters wide."""
    return _lines_of(*_text_key(cell), width)


def _text_key(cell: Any) -> tuple[str, float, bool, int]:
    """What the wrapped lines of a cell depend on besides the width.

    Returns the text, the font size over 11 pt [-], bold and the indent [characters].
    """
    size = (cell.font.sz or 11) / 11 if cell.font is not None else 1.0
    bold = bool(cell.font is not None and cell.font.b)
    return str(cell.value), size, bold, int(cell.alignment.indent or 0)


@functools.lru_cache(maxsize=1 << 17)
def _lines_of(text: str, size: float, bold: bool, indent: int, width: float) -> int:
    """Lines ``text`` takes wrapped in a column ``width`` characters wide.

    Cached: the width search of :func:`fit_widths` asks the same cells at many widths.
    """
    room = (width - CELL_PAD - 2 * indent) / size
    return sum(_wrapped_lines(part, room, bold) for part in text.split("\n"))


#: Longest word a wrapped column is made wide enough for [characters]; a longer one
#: (a dotted field name, a path) is broken over lines, whole.
LONG_WORD = 16

#: Most lines of a row :func:`fit_widths` leaves when it can (a row of about 300 pt or
#: more made LibreOffice 7.4 print a blank page after the sheet).
MAX_LINES = 20

#: Lines of a row beyond which :func:`fit_widths` counts each further line
#: :data:`TALL_WEIGHT` times (about a third of a landscape page at 8 pt).
TALL_LINES, TALL_WEIGHT = 16, 20

#: Longest word a wrapped column of words is made wide enough for at first
#: [characters]; it widens where that saves lines (:func:`fit_widths`).
SHORT_WORD = 10


def fit_widths(ws: Worksheet, cols: Sequence[int], budget: float, *,
               rows: Sequence[int] | None = None, line_height: float = 15.0,
               header_weight: float = 10.0, whole: Sequence[int] = ()) -> float:
    """Widths of the columns ``cols`` that share ``budget`` with the fewest wrapped lines.

    Each column starts at the narrowest width that breaks no word of its wrapped text
    (up to :data:`SHORT_WORD` characters, :data:`LONG_WORD` in ``whole`` columns and
    headers) and cuts no value that does not wrap (numbers, short text); the
    characters left of ``budget`` go, a few at a time, to the column where they save
    the most height per character over the rows (the header row counts
    ``header_weight`` times: it repeats on every printed page). Row heights follow
    as :func:`fit_wrapped_rows` sets them.

    Parameters
    ----------
    ws : Worksheet
    cols : sequence of int
        1-based columns to size; the others keep their widths.
    budget : float
        Total width of ``cols`` [characters].
    rows : sequence of int, optional
        Rows measured (default: the header row to the last row).
    line_height : float
        Height of a one-line row [pt].
    header_weight : float
        Weight of the header row's height.
    whole : sequence of int
        Columns (ids) whose words of up to :data:`LONG_WORD` characters are never
        broken; in the others a word longer than :data:`SHORT_WORD` may be.

    Returns
    -------
    float
        Estimated height of ``rows`` at the chosen widths [pt] (the header row once);
        infinite when the narrowest widths exceed ``budget`` (they are set).
    """
    rows = list(rows) if rows is not None else list(range(HEADER_ROW, ws.max_row + 1))
    low: dict[int, int] = {}
    wrapped: dict[int, list[tuple[int, Any]]] = {c: [] for c in cols}
    for c in cols:
        n = 4
        for r in rows:
            cell = ws.cell(r, c)
            v = cell.value
            if v is None:
                continue
            size = (cell.font.sz or 11) / 11 if cell.font is not None else 1.0
            pad = 1 + 2 * int(cell.alignment.indent or 0)
            if isinstance(v, str) and cell.alignment.wrap_text and cell.data_type == "s":
                wrapped[c].append((r, cell))
                cap = LONG_WORD if c in whole or r == HEADER_ROW else SHORT_WORD
                bold = bool(cell.font is not None and cell.font.b)
                word = min(max((text_width(w, bold) for w in v.split()), default=0), cap)
                n = max(n, math.ceil(word * size) + pad)
            elif cell.alignment.horizontal != "fill":  # "fill" clips at the edge
                n = max(n, math.ceil(_width_of(v, cell.number_format) * size) + pad
                        + int(isinstance(v, str)))  # a gap after left-aligned text
        low[c] = n
    widths = dict(low)
    memo: dict[tuple[int, int], dict[int, int]] = {}
    keys = {c: [(r, _text_key(cell)) for r, cell in wrapped[c]] for c in cols}

    def at(c: int, w: int) -> dict[int, int]:
        if (c, w) not in memo:
            memo[(c, w)] = {r: _lines_of(*key, w) for r, key in keys[c]}
        return memo[(c, w)]

    lines = {c: at(c, widths[c]) for c in cols}
    weight = {r: header_weight if r == HEADER_ROW else 1.0 for r in rows}

    def need() -> dict[int, int]:
        out = dict.fromkeys(rows, 1)
        for c in cols:
            for r, n in lines[c].items():
                out[r] = max(out[r], n)
        return out

    cur = need()
    left = int(budget - sum(widths.values()))
    while left >= 1:
        # the widening (column, characters) that saves the most height per character;
        # a little weight for the column's own lines saved, so that two columns tall
        # on the same rows widen in turn
        best, rate = None, 0.0
        for c in cols:
            if not wrapped[c]:
                continue
            for k in (1, 2, 3, 5, 8, 13, 21):
                if k > left:
                    break
                more = at(c, widths[c] + k)
                g = 0.0
                for r, n in more.items():
                    was = lines[c][r]
                    if n < was:
                        g += 0.01 * (was - n) * weight[r]
                        if cur[r] == was:  # the row shrinks to its next tallest cell
                            other = max([1] + [lines[o][r] for o in cols
                                               if o != c and r in lines[o]])
                            g += (cur[r] - max(n, other)) * weight[r]
                            # lines beyond TALL_LINES count TALL_WEIGHT times: a row
                            # nearly a page tall leaves most of the page before it blank
                            g += (max(cur[r] - TALL_LINES, 0) - max(max(n, other) - TALL_LINES, 0)
                                  ) * weight[r] * (TALL_WEIGHT - 1)
                if g / k > rate:
                    best, rate = (c, k), g / k
        if best is None:
            break
        c, k = best
        widths[c] += k
        lines[c] = at(c, widths[c])
        cur = need()
        left -= k
    # A row taller than MAX_LINES makes LibreOffice print a blank page after the
    # sheet: its column takes back characters given to the wrapped column that loses
    # the fewest lines for them (none below its narrowest width, ids never).
    for _ in range(200):
        r_max = max(rows, key=lambda r: cur[r])
        if cur[r_max] <= MAX_LINES:
            break
        tall = max((c for c in cols if r_max in lines[c]), key=lambda c: lines[c][r_max])
        cost = {}
        for c in cols:
            if c == tall or c in whole or not wrapped[c] or widths[c] <= low[c]:
                continue
            if any(not (isinstance(cell.value, str) and cell.alignment.wrap_text)
                   for cell in (ws.cell(r, c) for r in rows) if cell.value is not None
                   and cell.alignment.horizontal != "fill"):
                continue  # numbers and text that does not wrap keep their width
            less = at(c, widths[c] - 1)
            cost[c] = sum(less[r] - lines[c][r] for r in less)
        if not cost:
            break
        donor = min(cost, key=cost.get)
        widths[donor] -= 1
        widths[tall] += 1
        lines[donor] = at(donor, widths[donor])
        lines[tall] = at(tall, widths[tall])
        cur = need()
    for c in cols:
        ws.column_dimensions[get_column_letter(c)].width = widths[c]
    if sum(low.values()) > budget:
        return math.inf  # the columns do not fit in the budget
    return sum((line_height + (cur[r] - 1) * WRAPPED_LINE_PT) for r in rows)


def fit_page(ws: Worksheet, cols: Sequence[int], whole: Sequence[int] = ()) -> str:
    """Widths of ``cols`` (:func:`fit_widths`) for the orientation with the fewest pages.

    The columns share the width of a landscape page, or of a portrait one, at the
    smallest readable scale; the one whose wrapped rows fill fewer pages is kept
    (landscape on a tie). ``whole``: as :func:`fit_widths`.

    Returns
    -------
    str
        ``"landscape"`` or ``"portrait"``.
    """
    best = None
    for orient in ("landscape", "portrait"):
        budget = math.floor(page_chars(orient)) - 1
        tall = fit_widths(ws, cols, budget, whole=whole)
        head = ws.row_dimensions[HEADER_ROW].height or 15.0
        page = printable(orient)[1] * 72.0 * 100.0 / min_scale() - head
        pages = math.ceil(tall / page) if math.isfinite(tall) else math.inf
        if best is None or pages < best[0]:
            best = (pages, orient, budget)
    fit_widths(ws, cols, best[2], whole=whole)
    return best[1]


def _wrapped_lines(text: str, width: float, bold: bool = False) -> int:
    """Lines that ``text`` takes when wrapped at word boundaries in ``width`` characters.

    Words are measured as printed (:func:`dcplan.export.printing.text_width`); a word
    wider than the line is broken over lines.
    """
    width = max(width, 1.0)
    space = text_width(" ", bold)
    n, line = 1, 0.0
    for word in text.split():
        w = text_width(word, bold)
        if line and line + space + w > width:
            n += 1
            line = 0.0
        if w > width:  # a word wider than the line is broken over lines
            total = line + (space if line else 0.0) + w
            more = math.ceil(total / width) - 1
            n += more
            line = total - more * width
        else:
            line += (space if line else 0.0) + w
    return n


# ----------------------------------------------------------------------------------------
# Tables
# ----------------------------------------------------------------------------------------


@dataclass
class Placed:
    """Where a table landed on its sheet.

    Attributes
    ----------
    sheet : str
    columns : dict
        Column name -> 1-based sheet column.
    first, last : int
        First and last data row (``last < first`` when the table is empty).
    total_row : int or None
        Row of the Total formulas.
    id_cols : int
        Leading identifier columns (names included), repeated on every printed block
        of columns.
    """

    sheet: str
    columns: dict[str, int]
    first: int
    last: int
    total_row: int | None = None
    id_cols: int = 1

    def range(self, col: str) -> str:
        """Absolute reference to the data of column ``col``."""
        return ref(self.sheet, self.columns[col], self.first, max(self.first, self.last))


#: Suffix of the column that holds the names of an id column (``site`` -> ``site_name``).
NAME_SUFFIX = "_name"


def with_names(df: pd.DataFrame, names: dict[str, dict[str, str]] | None
               ) -> tuple[pd.DataFrame, set[str]]:
    """``df`` with a name column before each id column that has names.

    Parameters
    ----------
    df : DataFrame
    names : dict
        :func:`dcplan.export.labels.catalog_names` of the plan's case (kind -> id ->
        name); None or empty adds nothing.

    Returns
    -------
    table, id_columns
        The table (name columns ``<col>_name``, blank where an id has no name) and
        the id columns that got one.
    """
    if not names or not len(df):
        return df, set()
    out = df.copy()
    done: set[str] = set()
    for c in list(df.columns):
        vals = [name_of(names, c, v) for v in df[c]]
        if any(vals):
            out.insert(list(out.columns).index(c), c + NAME_SUFFIX, [v or "" for v in vals])
            done.add(c)
    out.attrs = dict(df.attrs)
    return out, done


def header_text(df: pd.DataFrame, c: str, table: str | None, named: set[str]) -> str:
    """Header of column ``c`` (a name column: the label; its id column: label and id).

    ``Site`` over the site names, ``Site id`` over their ids; other columns as
    :func:`dcplan.export.labels.header` words them.
    """
    if c.endswith(NAME_SUFFIX) and c[: -len(NAME_SUFFIX)] in named:
        return label_of(c[: -len(NAME_SUFFIX)], table)
    if c in named:
        return f"{label_of(c, table)} id"
    return header(df, c, table)


def write_table(ws: Worksheet, df: pd.DataFrame, *, title: str, description: str = "",
                totals: Sequence[str] = (), id_cols: int = 1,
                header_of: Callable[[pd.DataFrame, str], str] | None = None,
                table: str | None = None, tidy: bool = True,
                row_formats: dict[str, Sequence[str]] | None = None,
                total_where: tuple[str, str] | None = None,
                names: dict[str, dict[str, str]] | None = None) -> Placed:
    """Write ``df`` in the standard layout: title, description, header, rows, totals.

    Parameters
    ----------
    ws : Worksheet
    df : DataFrame
        A result table (units in ``df.attrs["units"]``).
    title, description : str
    totals : sequence of str
        Columns summed by live ``SUM`` formulas in a Total row below the table.
    id_cols : int
        Leading columns frozen with the header row.
    header_of : callable, optional
        Header text of a column (default :func:`dcplan.export.labels.header`).
    table : str, optional
        Result-table name, for the columns whose label depends on the table.
    tidy : bool
        Write :func:`dcplan.tableio.tidy_table` of ``df`` (rounded, integer counts,
        yearly periods as numbers); False writes ``df`` as it is.
    row_formats : dict, optional
        Column -> one number format per row (instead of the column's format).
    total_where : tuple of (str, str), optional
        ``(column, value)``: the Total row sums only the rows whose ``column`` holds
        ``value`` (``SUMIF``); None (or a table without that column) sums every row.
    names : dict, optional
        Catalog and site names (kind -> id -> name): each id column that has names
        gets a name column before it (see :func:`with_names`).

    Returns
    -------
    Placed
    """
    if tidy:
        df = tidy_table(df)
    lead = list(df.columns)[:id_cols]
    df, named = with_names(df, names)
    id_cols += sum(1 for c in lead if c in named)
    cols = list(df.columns)
    # Title and description wrap within the table's width, so that they print whole.
    span = max(len(cols), 1)
    long_text(ws, 1, 1, span, title, TITLE_FONT)
    if description:
        long_text(ws, 2, 1, span, description, NOTE_FONT)
    for j, c in enumerate(cols, start=1):
        text = (header_of(df, c) if header_of is not None
                else header_text(df, c, table, named))
        cell = put(ws, HEADER_ROW, j, text, font=HEADER_FONT)
        cell.fill = HEADER_FILL
        cell.alignment = WRAP
    fmts = [number_format(unit_of(df, c), c, integer=pd.api.types.is_integer_dtype(df[c])
                          and not pd.api.types.is_bool_dtype(df[c])) for c in cols]
    fmts = ["0" if c == "period" else f for c, f in zip(cols, fmts, strict=True)]  # 2026
    per_row = {cols.index(c): f for c, f in (row_formats or {}).items() if c in cols}
    # text right of a column of numbers (right-aligned) starts one indent in, so that
    # "978.8" and "2N" never read as one value
    numeric = [pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
               for c in cols]
    indent = {j for j in range(2, len(cols) + 1) if numeric[j - 2] and not numeric[j - 1]}
    wrapped = {j for j, c in enumerate(cols, start=1)
               if c.endswith(NAME_SUFFIX) and c[: -len(NAME_SUFFIX)] in named}
    for i, rec in enumerate(df.itertuples(index=False, name=None)):
        r = FIRST_DATA_ROW + i
        for j, v in enumerate(rec, start=1):
            fmt = per_row[j - 1][i] if j - 1 in per_row else fmts[j - 1]
            cell = put(ws, r, j, v, fmt)
            # rows with wrapped text (long names) read from their top line
            cell.alignment = Alignment(vertical="top", wrap_text=j in wrapped, indent=int(
                j in indent and cell.data_type == "s"))
    last = FIRST_DATA_ROW + len(df) - 1
    placed = Placed(ws.title, {c: j for j, c in enumerate(cols, start=1)}, FIRST_DATA_ROW, last,
                    id_cols=id_cols)
    if cols:
        ws.auto_filter.ref = f"A{HEADER_ROW}:{get_column_letter(len(cols))}{max(last, HEADER_ROW)}"
    ws.freeze_panes = ws.cell(row=FIRST_DATA_ROW, column=min(id_cols, max(len(cols), 1)) + 1)
    sums = [c for c in totals if c in placed.columns]
    if sums and len(df):
        tr = last + 2
        put(ws, tr, 1, "Total", font=TOTAL_FONT)
        where = total_where if total_where and total_where[0] in placed.columns else None
        if where:
            W = get_column_letter(placed.columns[where[0]])
            put(ws, tr, placed.columns[where[0]], where[1], font=TOTAL_FONT)
        for c in sums:
            j = placed.columns[c]
            L = get_column_letter(j)
            f = f"=SUM({L}{FIRST_DATA_ROW}:{L}{last})" if where is None else (
                f'=SUMIF({W}{FIRST_DATA_ROW}:{W}{last},"{where[1]}",{L}{FIRST_DATA_ROW}:{L}{last})')
            formula(ws, tr, j, f, fmts[j - 1], TOTAL_FONT)
        placed.total_row = tr
    return placed


def period_value(label: Any) -> Any:
    """A period label as written to a workbook: a year as a number, a quarter as text."""
    text = str(label)
    return int(text) if is_year_column(pd.Series([text])) else text


_ID = re.compile(r"^[a-z0-9_]+$")


def _periods(result: Any) -> list[str]:
    from dcplan.export.views import periods

    return periods(result)


def _unique(values: Any) -> list[str]:
    return [str(v) for v in dict.fromkeys(values)]


def _pivot_block(ws: Worksheet, top: int, title: str, unit: str, rows: list[str],
                 cols: list[str], cell_formula: Callable[[str, str], str], fmt: str,
                 row_label: str = "Period", heads: Sequence[str] | None = None,
                 literal: bool = False, id_row: bool = False) -> tuple[int, int, int]:
    """Write a rows x cols block of formulas with a title, totals per row.

    Parameters
    ----------
    cols : list of str
        Ids the formulas select (site, rack type, category).
    cell_formula : callable
        (row criterion, column criterion) -> formula text.
    heads : sequence of str, optional
        Header text of each column (default: the ids).
    literal : bool
        Use each id as a quoted literal criterion instead of a reference to its
        header cell (for dcplan's own ids, e.g. cost categories, whose header shows
        words); ids that are not ``[a-z0-9_]`` fall back to a reference.
    id_row : bool
        Write the ids in a row of their own above the header (which shows ``heads``,
        the names) and select by them (sites, rack types: names in the chart legend,
        any id selected exactly).

    Returns
    -------
    header_row, first_row, last_row
    """
    put(ws, top, 1, f"{title} [{unit}]", font=SECTION_FONT)
    hr = top + 1
    sel = hr
    if id_row:
        put(ws, hr, 1, "Id", font=NOTE_FONT)
        for j, cid in enumerate(cols, start=2):
            put(ws, hr, j, cid, font=NOTE_FONT).alignment = WRAP
        hr = sel + 1
    c = put(ws, hr, 1, row_label, font=HEADER_FONT)
    c.fill = HEADER_FILL
    heads = list(heads or cols)
    for j, name in enumerate(heads, start=2):
        c = put(ws, hr, j, name, font=HEADER_FONT)
        c.fill = HEADER_FILL
        c.alignment = WRAP
    tj = len(cols) + 2
    c = put(ws, hr, tj, f"Total [{unit}]", font=HEADER_FONT)
    c.fill = HEADER_FILL
    c.alignment = WRAP
    for i, rlab in enumerate(rows, start=1):
        r = hr + i
        put(ws, r, 1, period_value(rlab), "0")
        for j, cid in enumerate(cols, start=2):
            crit = (f'"{cid}"' if literal and _ID.match(cid)
                    else f"{get_column_letter(j)}${sel}")
            formula(ws, r, j, cell_formula(f"$A{r}", crit), fmt)
        if cols:
            formula(ws, r, tj, f"=SUM(B{r}:{get_column_letter(tj - 1)}{r})", fmt, TOTAL_FONT)
    return hr, hr + 1, hr + len(rows)


def _native_chart(kind: str, title: str, y_title: str, data_ws: Worksheet, hr: int,
                  first: int, last: int, ncols: int) -> Any:
    ch = BarChart() if kind == "bar" else LineChart()
    if kind == "bar":
        ch.type = "col"
        ch.grouping = "stacked"
        ch.overlap = 100
    ch.title = title
    ch.y_axis.title = y_title
    ch.x_axis.title = "Period"
    ch.width, ch.height = CHART_SIZE_CM
    ch.legend.position = "r"
    data = Reference(data_ws, min_col=2, max_col=1 + ncols, min_row=hr, max_row=last)
    ch.add_data(data, titles_from_data=True)
    ch.set_categories(Reference(data_ws, min_col=1, min_row=first, max_row=last))
    return ch


#: Chart sheets of the plan workbook: chart -> sheet name (one chart, one printed page).
CHART_SHEETS = {"facility_mw": "Chart power", "racks": "Chart racks", "costs": "Chart costs"}
#: Titles of the charts (also when a plan has nothing to plot).
CHART_TITLES = {"facility_mw": "Facility power at peak by site [MW]",
                "racks": "Racks in service by type [racks]",
                "costs": "Costs by category, undiscounted [million USD]"}


def write_charts_sheet(ws: Worksheet, result: Any, placed: dict[str, Placed],
                       chart_sheets: dict[str, Worksheet] | None = None) -> dict[str, Any]:
    """Pivot blocks (live ``SUMIFS`` over the data sheets) and native charts.

    The pivots go on ``ws`` (the Chart data sheet); each chart goes on its own sheet
    of ``chart_sheets`` (:data:`CHART_SHEETS` name -> sheet), printed on one page, or
    next to its pivot when ``chart_sheets`` is None.

    Returns
    -------
    dict
        Block name -> header_row, first, last, total_row, rows (period labels), cols
        (ids), heads (header text).
    """
    from dcplan.export.views import hosting_sites, stack_categories, terminal_credit

    put(ws, 1, 1, f"Chart data: {result.name}", font=TITLE_FONT)
    put(ws, 2, 1, "Live formulas (SUMIFS) over the Power, Fleet and Costs sheets; the chart "
                  "sheets plot them.", font=NOTE_FONT)
    periods = _periods(result)
    blocks: dict[str, Any] = {}
    top = 4
    t = result.tables
    specs = []
    names = catalog_names(getattr(result, "case", None))

    def named(column: str, ids: list[str]) -> list[str]:
        return [name_of(names, column, i) or i for i in ids]

    if "power" in placed and len(t["power"]):
        p = placed["power"]
        sites = hosting_sites(result)
        specs.append(("facility_mw", "Facility power at peak by site (sites hosting racks)",
                      "MW", sites, named("site", sites),
                      lambda r, c, p=p: (f"=SUMIFS({p.range('facility_kw_peak')},"
                                         f"{p.range('site')},{c},{p.range('period')},{r})/1000"),
                      "#,##0.0", False))
        grid_sites = _unique(t["power"].site)
        specs.append(("grid_mw", "Grid limit by site", "MW", grid_sites,
                      named("site", grid_sites),
                      lambda r, c, p=p: (f"=SUMIFS({p.range('grid_kw')},"
                                         f"{p.range('site')},{c},{p.range('period')},{r})/1000"),
                      "#,##0.0", False))
    if "fleet" in placed and len(t["fleet"]):
        f = placed["fleet"]
        racks = _unique(t["fleet"].rack)
        specs.append(("racks", "Racks in service by type", "racks", racks, named("rack", racks),
                      lambda r, c, f=f: (f"=SUMIFS({f.range('installed_racks')},"
                                         f"{f.range('rack')},{c},{f.range('period')},{r})"),
                      "#,##0", False))
    stacked, apart = stack_categories(t.get("costs"))
    if "costs" in placed and len(t["costs"]):
        k = placed["costs"]
        cats = stacked + apart
        heads = [category_label(c) for c in cats]
        specs.append(("costs", "Costs by category, undiscounted", "million USD", cats, heads,
                      lambda r, c, k=k: (f"=SUMIFS({k.range('cost_usd')},"
                                         f"{k.range('category')},{c},{k.range('period')},{r})"
                                         "/1000000"),
                      "#,##0.0", True))
        specs.append(("costs_discounted", "Costs by category, discounted (present value)",
                      "million USD", cats, heads,
                      lambda r, c, k=k: (f"=SUMIFS({k.range('cost_usd_discounted')},"
                                         f"{k.range('category')},{c},{k.range('period')},{r})"
                                         "/1000000"),
                      "#,##0.0", True))
    for name, title, unit, cols, heads, fml, fmt, col_totals in specs:
        hr, first, last = _pivot_block(ws, top, title, unit, periods, cols, fml, fmt,
                                       heads=heads, literal=col_totals,  # costs: own ids
                                       id_row=not col_totals)  # sites, racks: names
        tr = last
        if col_totals:  # sums over periods (meaningful for money, not for MW or racks)
            tr = last + 1
            put(ws, tr, 1, "Total", font=TOTAL_FONT)
            for j in range(2, len(cols) + 3):
                L = get_column_letter(j)
                formula(ws, tr, j, f"=SUM({L}{first}:{L}{last})", fmt, TOTAL_FONT)
        blocks[name] = dict(header_row=hr, first=first, last=last,
                            total_row=tr if col_totals else None, rows=periods, cols=cols,
                            heads=list(heads or cols))
        top = tr + 3
    autosize(ws)
    ws.column_dimensions["A"].width = 12

    # Native charts, each on its own sheet printed on one page.
    chart_specs = []
    if "facility_mw" in blocks and blocks["facility_mw"]["cols"]:
        chart_specs.append(("facility_mw", "Facility power at peak by site [MW]", "MW",
                            len(blocks["facility_mw"]["cols"]),
                            "Stacked: facility power (IT + cooling + network + losses) at the "
                            "peak hour of each site that hosts racks; the grid limits are on the "
                            "Chart data and Power sheets."))
    if "racks" in blocks and blocks["racks"]["cols"]:
        chart_specs.append(("racks", "Racks in service by type [racks]", "racks",
                            len(blocks["racks"]["cols"]), "All sites, stacked by rack type."))
    if "costs" in blocks and stacked:
        credit, when = terminal_credit(t.get("costs"))
        note = ("Capex and opex as paid in each period (undiscounted), stacked by category."
                + (f" Not stacked: the terminal-value credit of {credit / 1e6:,.1f} million USD "
                   f"booked at the end of {when} (book value of the assets still in service)."
                   if credit else ""))
        chart_specs.append(("costs", "Costs by category, undiscounted [million USD]",
                            "million USD", len(stacked), note))
    by_name = {c[0]: c for c in chart_specs}
    for name, sheet in (chart_sheets or {}).items():
        spec = by_name.get(name)
        title = spec[1] if spec else CHART_TITLES[name]
        put(sheet, 1, 1, f"{title}: {result.name}", font=TITLE_FONT)
        if spec is None:
            put(sheet, 2, 1, "No chart: the plan has nothing to plot here.", font=NOTE_FONT)
            continue
        # the caption wraps over the chart's width, so it prints inside the page
        for j in range(1, CHART_AREA[0] + 1):
            sheet.column_dimensions[get_column_letter(j)].width = CHART_COL_WIDTH
        long_text(sheet, 2, 1, CHART_AREA[0], spec[4], NOTE_FONT)
        fit_wrapped_rows(sheet)
        blk = blocks[name]
        sheet.add_chart(_native_chart("bar", title, spec[2], ws, blk["header_row"], blk["first"],
                                      blk["last"], spec[3]), "A4")
        blk["chart_sheet"] = sheet.title
    if chart_sheets is None:
        for name, title, y_title, ncols, _note in chart_specs:
            blk = blocks[name]
            ws.add_chart(_native_chart("bar", title, y_title, ws, blk["header_row"], blk["first"],
                                       blk["last"], ncols),
                         f"{get_column_letter(ncols + 4)}{blk['header_row'] - 1}")
    return blocks


# ----------------------------------------------------------------------------------------
# Summary
# ----------------------------------------------------------------------------------------


def _status_sentence(result: Any) -> str:
    from dcplan.export.views import outcome_sentence

    return outcome_sentence(result)


#: Columns of the Summary sheet and their widths [characters].
SUMMARY_WIDTHS = {"A": 24, "B": 16, "C": 16, "D": 15, "E": 11, "F": 11, "G": 11, "H": 11,
                  "I": 11, "J": 11, "K": 11}


def long_text(ws: Worksheet, row: int, first_col: int, last_col: int, text: str,
              font: Font | None = None) -> Any:
    """Write ``text`` across merged columns, wrapped (see :func:`fit_wrapped_rows`)."""
    cell = put(ws, row, first_col, text, font=font)
    if last_col > first_col:
        ws.merge_cells(start_row=row, start_column=first_col, end_row=row, end_column=last_col)
    cell.alignment = WRAP
    return cell


def write_summary(ws: Worksheet, result: Any, placed: dict[str, Placed],
                  src: Any) -> dict[str, int]:
    """Write the Summary sheet; return the row of each check formula (KPI -> row)."""
    for col, w in SUMMARY_WIDTHS.items():
        ws.column_dimensions[col].width = w
    last = len(SUMMARY_WIDTHS)
    put(ws, 1, 1, f"dcplan plan: {result.name}", font=TITLE_FONT)
    desc = src.scenario.description if src is not None else ""
    if desc:
        long_text(ws, 2, 1, last, desc, NOTE_FONT)
    r = 4
    put(ws, r, 1, "Outcome", font=SECTION_FONT)
    rows = [("Scenario", result.name, None),
            ("Scenario file", str(src.path) if src is not None and src.path else "", None),
            ("Solver status", result.status.value.upper(), None),
            ("Plan status", result.status_text, None),
            ("Relative MIP gap [%]", result.gap, "0.00%"),
            ("Solver", result.solver, None),
            ("Objective (present value) [USD]", result.objective_usd, "#,##0"),
            ("What this means", _status_sentence(result), None),
            (POWER_BASIS_LABEL, result.power_basis, None)]
    if result.message:
        rows.append(("Solver / planner message", result.message, None))
    for label, value, fmt in rows:
        r += 1
        put(ws, r, 1, label, font=HEADER_FONT).alignment = WRAP
        if isinstance(value, str) and len(value) > 20:
            long_text(ws, r, 2, last, value)
        else:
            put(ws, r, 2, value, fmt)
    r += 2
    put(ws, r, 1, "Key figures", font=SECTION_FONT)
    r += 1
    for j, h in enumerate(("Figure", "Value", "Unit", "What it means"), start=1):
        c = put(ws, r, j, h, font=HEADER_FONT)
        c.fill = HEADER_FILL
    for j in range(5, last + 1):
        ws.cell(r, j).fill = HEADER_FILL
    kpis = result.tables.get("kpis")
    if kpis is not None:
        for rec in tidy_table(kpis).itertuples():
            r += 1
            put(ws, r, 1, kpi_label(rec.kpi)).alignment = WRAP
            put(ws, r, 2, rec.value, kpi_format(rec.kpi))
            put(ws, r, 3, kpi_unit(rec.kpi, str(rec.unit))).alignment = Alignment(
                horizontal="left", indent=1, wrap_text=True, vertical="top")
            long_text(ws, r, 4, last, kpi_meaning(rec.kpi))
    checks = _write_checks(ws, r + 2, result, placed)
    r = max(checks.values(), default=r + 2) + 2
    r = _write_binding(ws, r, result)
    un = result.tables.get("unserved")
    if un is not None and len(un):
        r += 1
        put(ws, r, 1, "Unserved demand", font=SECTION_FONT)
        r += 1
        un, named = with_names(tidy_table(un), catalog_names(src))
        for j, c in enumerate(un.columns, start=1):
            cell = put(ws, r, j, header_text(un, c, "unserved", named), font=HEADER_FONT)
            cell.fill = HEADER_FILL
            cell.alignment = WRAP
        for rec in un.itertuples(index=False, name=None):
            r += 1
            for j, v in enumerate(rec, start=1):
                put(ws, r, j, v, "#,##0.###").alignment = Alignment(
                    wrap_text=isinstance(v, str), vertical="top")
        r += 1
    notes = list(result.notes)
    tnote = terminal_note(result.kpi("terminal_value_frac")) \
        if kpis is not None and "terminal_value_frac" in set(kpis.kpi) else None
    if tnote:
        notes.insert(0, tnote)
    if notes:
        r += 1
        put(ws, r, 1, "Notes", font=SECTION_FONT)
        for n in notes:
            r += 1
            long_text(ws, r, 1, last, n)
        r += 1
    r += 1
    put(ws, r, 1, "Sheets in this workbook", font=SECTION_FONT)
    guide = [("KPIs", "every key figure of the plan with its unit and meaning"),
             ("Fleet", "racks in service, bought and retired by type, site and period"),
             ("Power", "IT, cooling, network, losses and facility kW by site and period vs the "
                       "grid limit, with headroom; energy and carbon"),
             ("Cooling", "liquid and air heat, CDUs with redundancy, PUE by site"),
             ("Network", "network power and capex by site and rack type"),
             ("Costs", "capex and opex by category and period, undiscounted and discounted"),
             ("Cash flow", "capex, opex, staff and software, depreciation, book value, "
                           "annualised cost per million tokens, and the cash flows against "
                           "the cheapest comparable API, by period; payback and IRR"),
             ("Chart power / racks / costs", "facility MW by site, racks by type and the "
                                             "cost stack over time, one native chart per "
                                             "printed page"),
             ("Chart data", "the tables the charts plot, as live formulas over Power, Fleet "
                            "and Costs (a hidden sheet, not printed: unhide it to read it)"),
             ("Build vs buy", "the served tokens bought from each comparable API against the "
                              "plan's levelised cost, break-even, energy per request"),
             ("Demand / Allocation", "token demand as stated and in tokens, what is served, "
                                     "which racks serve it"),
             ("Unserved", "demand the sites cannot host (empty when all demand is served)"),
             ("Grid", "grid connections requested, energised, connected and used by site and "
                      "period, against what the grid can give"),
             ("Bill of materials", "racks, switches by tier and model, transceivers by type, "
                                   "NICs, CDUs, heat-rejection plant, air handlers, UPS and "
                                   "generators per site and period: installed and to order"),
             ("Shadow prices / Sizing", "value of each limit; exact sizing of network and "
                                        "cooling vs the plan"),
             ("Assumptions", "every input figure with unit, source, date and any scenario "
                             "override"),
             ("Sources", "each source of the input figures, in full")]
    for name, text in guide:
        r += 1
        put(ws, r, 1, name, font=HEADER_FONT).alignment = WRAP
        long_text(ws, r, 2, last, text)
    ws.freeze_panes = "A4"
    return checks


def _write_checks(ws: Worksheet, r: int, result: Any, placed: dict[str, Placed]
                  ) -> dict[str, int]:
    put(ws, r, 1, "Totals recomputed by the spreadsheet (live formulas over the data sheets)",
        font=SECTION_FONT)
    r += 1
    long_text(ws, r, 1, len(SUMMARY_WIDTHS), "Each row of the data sheets is rounded when "
              "written (money to the cent, power and energy to the watt and watt-hour), so a "
              "difference of a few cents or less is that rounding.", NOTE_FONT)
    r += 1
    for j, h in enumerate(("Total", "Spreadsheet [unit in col. D]", "dcplan value",
                           "Unit", "Difference"), start=1):
        cell = put(ws, r, j, h, font=HEADER_FONT)
        cell.fill = HEADER_FILL
        cell.alignment = WRAP
    kpi = {}
    if "kpis" in result.tables:
        kt = tidy_table(result.tables["kpis"])
        kpi = {k: v for k, v in zip(kt.kpi, kt.value, strict=True)}
    rows: dict[str, int] = {}
    specs = []
    if "costs" in placed and placed["costs"].last >= placed["costs"].first:
        k = placed["costs"]
        crit = f"{k.range('category')},\"unserved_penalty\""
        pen_d = f"SUMIFS({k.range('cost_usd_discounted')},{crit})"
        pen = f"SUMIFS({k.range('cost_usd')},{crit})"
        staff = "(" + "+".join(
            f"SUMIFS({k.range('cost_usd')},{k.range('category')},\"{c}\")"
            for c in ("staff", "software")) + ")"
        specs += [
            ("NPV of all costs", f"=SUM({k.range('cost_usd_discounted')})-{pen_d}",
             "npv_cost_usd", "USD", "#,##0"),
            ("Capex", f"=SUMIFS({k.range('cost_usd')},{k.range('kind')},\"capex\")",
             "capex_usd", "USD", "#,##0"),
            ("Opex", f"=SUMIFS({k.range('cost_usd')},{k.range('kind')},\"opex\")-{pen}"
                     f"-{staff}", "opex_usd", "USD", "#,##0"),
            ("Staff and software", f"={staff}", "staff_software_usd", "USD", "#,##0"),
        ]
    if "power" in placed and placed["power"].last >= placed["power"].first:
        p = placed["power"]
        specs += [("Energy", f"=SUM({p.range('energy_kwh')})/1000", "energy_mwh", "MWh",
                   "#,##0.0"),
                  ("Carbon", f"=SUM({p.range('carbon_t')})", "carbon_t", "tCO2", "#,##0.0")]
    if "fleet" in placed and placed["fleet"].last >= placed["fleet"].first:
        f = placed["fleet"]
        specs.append(("Racks bought", f"=SUM({f.range('new_racks')})", "racks_bought", "racks",
                      "#,##0"))
    for label, fml, key, unit, fmt in specs:
        r += 1
        put(ws, r, 1, label).alignment = WRAP
        formula(ws, r, 2, fml, fmt)
        put(ws, r, 3, kpi.get(key), fmt)
        put(ws, r, 4, unit)
        formula(ws, r, 5, f"=B{r}-C{r}", "#,##0.00")
        rows[key] = r
    return rows


def _write_binding(ws: Worksheet, r: int, result: Any) -> int:
    put(ws, r, 1, "Binding limits (ranked)", font=SECTION_FONT)
    long_text(ws, r + 1, 1, len(SUMMARY_WIDTHS), "Limits that stop the plan from being cheaper. "
              "The shadow price is what one more unit of the limit would save; 'integers "
              "fixed' keeps the chosen racks, 'LP relaxation' lets rack counts move "
              "continuously.", NOTE_FONT)
    r += 2
    b = binding_rows(result.tables.get("binding"))
    no_grid = no_grid_sites(result.tables.get("power"))
    if no_grid:
        put(ws, r, 1, "Sites with no grid yet (not ranked): " + "; ".join(
            f"{s} ({', '.join(ps)})" for s, ps in no_grid.items()), font=NOTE_FONT)
        r += 1
    line = time_to_power_line(result.tables)
    if line:
        put(ws, r, 1, line, font=NOTE_FONT)
        r += 1
    if b is None or not len(b):
        put(ws, r, 1, "None: no site limit has a positive shadow price.")
        return r + 2
    b, named = with_names(tidy_table(b), catalog_names(getattr(result, "case", None)))
    for j, c in enumerate(b.columns, start=1):
        cell = put(ws, r, j, header_text(b, c, "binding", named), font=HEADER_FONT)
        cell.fill = HEADER_FILL
        cell.alignment = WRAP
    for rec in b.itertuples(index=False, name=None):
        r += 1
        for j, (c, v) in enumerate(zip(b.columns, rec, strict=True), start=1):
            v = None if isinstance(v, float) and v != v else v
            cell = put(ws, r, j, v, "0" if c in ("rank", "period") else "#,##0.##")
            cell.alignment = Alignment(wrap_text=isinstance(v, str), vertical="top",
                                       horizontal="left" if c == "rank" else None)
    return r + 2


# ----------------------------------------------------------------------------------------
# Workbook
# ----------------------------------------------------------------------------------------


def kpi_sheet_table(kpis: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The KPIs sheet: name, value, unit and meaning in words, then the KPI id.

    Returns
    -------
    table, formats
        The table (values rounded as :func:`dcplan.tableio.tidy_table` does) and the
        number format of each row's value.
    """
    t = tidy_table(kpis)
    out = pd.DataFrame({"name": [kpi_label(k) for k in t.kpi], "value": list(t.value),
                        "unit": [kpi_unit(k, str(u)) for k, u in zip(t.kpi, t.unit, strict=True)],
                        "meaning": [kpi_meaning(k) or str(u)
                                    for k, u in zip(t.kpi, t.unit, strict=True)],
                        "kpi": list(t.kpi)})
    out["value"] = out["value"].astype(object)
    out.attrs["units"] = {"value": "see unit column"}
    return out, [kpi_format(k) for k in t.kpi]


#: Headers of the KPIs sheet.
KPI_SHEET_HEADERS = {"name": "KPI", "value": "Value [see Unit column]", "unit": "Unit",
                     "meaning": "What it means", "kpi": "Id"}

#: Headers of the Assumptions sheet.
ASSUMPTION_HEADERS = {"section": "Section", "kind": "Kind", "id": "Id", "name": "Name",
                      "field": "Field", "value": "Value [see Unit column]", "unit": "Unit",
                      "ref": "Source ref. [Sources sheet]", "source": "Source",
                      "as_of": "As of [date]", "estimate": "Estimate note",
                      "override": "Override"}


#: Columns of the Assumptions sheet that wrap (all but the short reference and date);
#: their widths share the page's width with the fewest wrapped lines (:func:`fit_page`).
ASSUMPTION_WRAP = "ABCDEFGKL"
#: Column of the Assumptions sheet that is hidden (and so not printed): the source,
#: whose full text the Source ref. column points to on the Sources sheet; the text is
#: in the cells, for filters and for reading the sheet back.
ASSUMPTION_HIDDEN = "I"


def assumptions_sheet_table(assum: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The Assumptions sheet (with a source reference per row) and the Sources sheet.

    Each distinct source text is listed once on the Sources sheet as ``S1``, ``S2``...;
    the Assumptions rows keep the full text and name its reference, so the printed
    sheet (where a long source is cut at the column edge) still points to it.
    """
    sources = list(dict.fromkeys(s for s in assum.source if s))
    refs = {text: f"S{i}" for i, text in enumerate(sources, start=1)}
    out = assum.copy()
    out.insert(list(out.columns).index("source"), "ref", [refs.get(s, "") for s in out.source])
    out.attrs["units"] = {}
    used = out.groupby("ref").size()
    src = pd.DataFrame({"ref": [refs[s] for s in sources], "source": sources,
                        "rows": [int(used.get(refs[s], 0)) for s in sources]})
    src.attrs["units"] = {"rows": "count"}
    return out, src


def build_workbook(result: Any, sources: Any = None) -> tuple[Workbook, dict]:
    """Build (without saving) the workbook of ``result``.

    ``sources`` is the :class:`~dcplan.case.Case` behind the plan (default
    ``result.case``) for the Summary and Assumptions sheets.

    Returns
    -------
    workbook, info
        ``info`` has ``placed`` (table name -> :class:`Placed`), ``checks`` (KPI ->
        Summary row of its check formula) and ``blocks`` (Chart data pivot blocks).
    """
    if sources is None:
        sources = getattr(result, "case", None)
    wb = Workbook()
    summary = wb.active
    summary.title = "Summary"
    sheets = {"Summary": summary}
    for name in SHEET_ORDER[1:]:
        sheets[name] = wb.create_sheet(name)
    extra = [spec for spec in OPTIONAL_SHEETS if result.tables.get(spec.table) is not None]
    for spec in extra:
        sheets[spec.sheet] = wb.create_sheet(spec.sheet, wb.sheetnames.index("Assumptions"))
    placed: dict[str, Placed] = {}
    names = catalog_names(sources)
    for spec in (*SHEETS, *extra):
        df = result.tables.get(spec.table)
        ws = sheets[spec.sheet]
        if df is None:
            put(ws, 1, 1, spec.title, font=TITLE_FONT)
            put(ws, 2, 1, "Not computed for this plan.", font=NOTE_FONT)
            continue
        title = f"{spec.title}: {result.name}"
        if spec.table == "kpis":
            table, fmts = kpi_sheet_table(df)
            placed["kpis"] = write_table(ws, table, title=title, description=spec.description,
                                         header_of=lambda _d, c: KPI_SHEET_HEADERS[c],
                                         tidy=False, row_formats={"value": fmts})
            autosize(ws)
            ws.column_dimensions["D"].width = 44
            for r in range(FIRST_DATA_ROW, FIRST_DATA_ROW + len(table)):
                ws.cell(r, 4).alignment = WRAP
            continue
        placed[spec.table] = write_table(ws, df, title=title, description=spec.description,
                                         totals=spec.totals, id_cols=spec.id_cols,
                                         table=spec.table, total_where=spec.total_where,
                                         names=names)
        if spec.table == "costs" and len(df):
            _cost_subtotals(ws, placed["costs"])
        if spec.table == "build_vs_buy" and result.tables.get("requests") is not None:
            placed["requests"] = _write_below(
                ws, result.tables["requests"], placed["build_vs_buy"].last + 3,
                "Energy per request by workload (facility: IT, network, cooling, power "
                "losses, idle and reserve racks; energy shared by the IT power of the racks "
                "allocated to each workload)", "requests", names)
        autosize(ws)
    write_cashflow_sheet(wb, result, placed)
    blocks = write_charts_sheet(sheets["Chart data"], result, placed,
                                {k: sheets[v] for k, v in CHART_SHEETS.items()})
    # only the charts' source: hidden (the charts still plot it), so it prints no pages
    sheets["Chart data"].sheet_state = "hidden"
    checks = write_summary(summary, result, placed, sources)
    assum, srcs = assumptions_sheet_table(assumptions_table(
        sources, result.inputs, equipment_ids(result.tables), result.power_basis))
    ws = sheets["Assumptions"]
    placed["assumptions"] = write_table(
        ws, assum, title=f"Assumptions: every input figure used by {result.name}",
        description="Scenario, catalog and site figures (after the scenario's overrides), the "
                    "facility-model assumptions and the coefficients dcplan derived from them; "
                    "each with unit, source (full text on the Sources sheet), date, estimate "
                    "note and override.", id_cols=5,
        header_of=lambda _df, c: ASSUMPTION_HEADERS.get(c, c), tidy=False,
        row_formats={"value": ["General"] * len(assum)})
    ws.column_dimensions[ASSUMPTION_HIDDEN].hidden = True
    ws.column_dimensions[ASSUMPTION_HIDDEN].width = 30
    wrap = {ord(c) - ord("A") + 1 for c in ASSUMPTION_WRAP}
    cols = placed["assumptions"].columns
    note, name, ident = cols["estimate"], cols["name"], cols["id"]
    ncols = len(assum.columns)
    last = placed["assumptions"].last
    for r in range(FIRST_DATA_ROW, last + 1):
        # the entry's name and a note shared by its fields print whole on its first
        # row and on one line (the same words, cut at the column edge) on the rows
        # below; every cell holds the whole text, for filters. The field (right of
        # the name) starts one indent in, so that a cut name never runs into it.
        again = {c for c in (note, name) if r > FIRST_DATA_ROW
                 and ws.cell(r, c).value == ws.cell(r - 1, c).value
                 and ws.cell(r, ident).value == ws.cell(r - 1, ident).value}
        for c in range(1, ncols + 1):
            cell = ws.cell(r, c)  # a tall row reads from its top line
            cut = c in again      # "fill" clips at the edge, never spills
            cell.alignment = Alignment(wrap_text=c in wrap and not cut,
                                       horizontal="fill" if cut else cell.alignment.horizontal,
                                       vertical="top", indent=int(c == name + 1))
    hidden = {ord(ASSUMPTION_HIDDEN) - ord("A") + 1}
    over = placed["assumptions"].columns["override"]
    if not any(ws.cell(r, over).value for r in range(FIRST_DATA_ROW,
                                                      placed["assumptions"].last + 1)):
        # no figure overridden: the empty column is hidden, not printed (the
        # description says so)
        hidden.add(over)
        ws.column_dimensions[get_column_letter(over)].hidden = True
        desc = ws.cell(2, 1)
        desc.value = f"{desc.value} No figure is overridden (the Override column is hidden)."
    fit_page(ws, [c for c in range(1, ncols + 1) if c not in hidden], whole=(ident,))
    for c in (note, name):  # "fill" repeats a text shorter than the column: plain
        width = ws.column_dimensions[get_column_letter(c)].width
        for r in range(FIRST_DATA_ROW, last + 1):
            cell = ws.cell(r, c)
            if cell.alignment.horizontal == "fill" and len(str(cell.value)) < width - 1:
                cell.alignment = Alignment(vertical="top")
    ws = sheets["Sources"]
    placed["sources"] = write_table(
        ws, srcs, title=f"Sources of the input figures used by {result.name}",
        description="Each source once; the Assumptions sheet names it in its Source ref. "
                    "column.", header_of=lambda _df, c: {"ref": "Ref.", "source": "Source",
                                                         "rows": "Figures citing it [count]"}[c],
        tidy=False)
    ws.column_dimensions["A"].width = 6
    ws.column_dimensions["B"].width = 128
    ws.column_dimensions["C"].width = 10
    for r in range(FIRST_DATA_ROW, placed["sources"].last + 1):
        ws.cell(r, 2).alignment = WRAP
    _page_setup(wb, result, placed, blocks)
    return wb, {"placed": placed, "checks": checks, "blocks": blocks}


#: Title and description of the Cash flow sheet.
CASHFLOW_SHEET = ("Cash flow", "Cash flow, depreciation and annualised cost by period",
                  "Undiscounted USD as paid in each period: capex; opex (energy, demand "
                  "charges, carbon price, maintenance); operations staff and software; "
                  "straight-line depreciation of each purchase over its life and the book "
                  "value at the period's end (the last one is the terminal value the NPV "
                  "credits). Annualised cost = each purchase's capital recovery (CRF at the "
                  "discount rate over its life, per year of it in service) + opex + staff and "
                  "software; over the tokens served in the period it is the annualised USD per "
                  "million tokens, the cash figure divides what is paid. API = the tokens "
                  "served bought at each workload's cheapest comparable API (named in the API "
                  "column): the return of building; net cash flow = API - capex - opex - staff "
                  "and software.")


def write_cashflow_sheet(wb: Workbook, result: Any, placed: dict[str, Placed]) -> None:
    """The Cash flow sheet: the ``cashflow`` table, payback and IRR.

    Parameters
    ----------
    wb : Workbook
        The plan workbook (its ``Cash flow`` sheet, created if missing).
    result : PlanResult
        The plan; a saved plan without a ``cashflow`` table gets a sheet saying so.
    placed : dict
        Table name -> :class:`Placed`; ``cashflow`` is added.
    """
    sheet, title, description = CASHFLOW_SHEET
    ws = wb[sheet] if sheet in wb.sheetnames else wb.create_sheet(sheet)
    df = result.tables.get("cashflow")
    if df is None:
        put(ws, 1, 1, title, font=TITLE_FONT)
        put(ws, 2, 1, "Not computed for this plan (saved by an older dcplan).", font=NOTE_FONT)
        return
    placed["cashflow"] = write_table(
        ws, df, title=f"{title}: {result.name}", description=description,
        totals=("capex_usd", "opex_usd", "staff_software_usd", "depreciation_usd",
                "annualised_capital_usd", "annualised_cost_usd", "tokens_served", "api_usd",
                "net_cash_flow_usd"), table="cashflow")
    kpis = result.tables.get("kpis")
    kpi = dict(zip(kpis.kpi, kpis.value, strict=True)) if kpis is not None else {}
    r = (placed["cashflow"].total_row or placed["cashflow"].last) + 2
    for text in (api_return_text(kpi, df), terminal_note(kpi.get("terminal_value_frac"))):
        if text:
            long_text(ws, r, 1, min(len(df.columns), 12), text, NOTE_FONT)
            r += 1
    autosize(ws)


def _page_setup(wb: Workbook, result: Any, placed: dict[str, Placed],
                blocks: dict[str, Any]) -> None:
    """Print setup of every sheet (see :mod:`dcplan.export.printing`)."""
    title = f"dcplan plan: {result.name}"
    id_cols = {p.sheet: p.id_cols for p in placed.values()}
    tables = {s.sheet for s in SHEETS if s.table != "kpis"} | {CASHFLOW_SHEET[0]}
    for name, p in placed.items():
        if p.sheet in tables and name != "requests":
            _hide_constant(wb[p.sheet], p)
    for ws in wb.worksheets:
        if ws.title in CHART_SHEETS.values():
            chart_page(ws, title)
            continue
        fit_wrapped_rows(ws)
        if ws.title == "Summary":
            _align_top(ws)
            setup_page(ws, title, last_col=max(ws.max_column, len(SUMMARY_WIDTHS)))
        elif ws.title == "Chart data":
            setup_page(ws, title, repeat_cols=1)
            if ws.sheet_state != "visible":
                # LibreOffice prints a hidden sheet that has a print area: none, so the
                # sheet prints only when unhidden (then all of it, same layout)
                ws.print_area = None
                ws.print_title_cols = None
        else:
            rows = f"{HEADER_ROW}:{HEADER_ROW}"
            cols = id_cols.get(ws.title, 1)
            first = setup_page(ws, title, repeat_rows=rows, repeat_cols=cols)
            if first < ws.max_column and _widen_wrapped(ws, cols):
                fit_wrapped_rows(ws)
                first = setup_page(ws, title, repeat_rows=rows, repeat_cols=cols)
            widths = [printed_width(ws, j) for j in range(1, ws.max_column + 1)]
            rep = repeated_cols(widths, cols)
            if first < ws.max_column and _narrow_headings(ws, rep if rep > 1 else first):
                # printed in blocks of columns: the title and description wrap within
                # the id columns every block repeats (else the first block), so that
                # every block prints them whole; taller, which may change the layout
                fit_wrapped_rows(ws)
                setup_page(ws, title, repeat_rows=rows, repeat_cols=cols)


#: Fewest rows of a table whose constant columns are hidden (:func:`_hide_constant`).
CONSTANT_MIN_ROWS = 3


def _hide_constant(ws: Worksheet, p: Placed) -> list[str]:
    """Hide the columns of table ``p`` that hold one value in every row.

    Such a column (``Peak hour: peak`` on every row, a count that is 0 throughout)
    says the same thing in every row; it is hidden, so not printed, and the table's
    description (row 2) names each with its value. The cells keep their values, for
    filters, formulas and reading the sheet back. Id columns, tables of fewer than
    :data:`CONSTANT_MIN_ROWS` rows and columns that hold anything below the table
    (a second table, a note) stay.

    Returns
    -------
    list of str
        ``"<header>: <value>"`` of each hidden column.
    """
    if p.last - p.first + 1 < CONSTANT_MIN_ROWS or ws.cell(2, 1).value is None:
        return []
    said = []
    for j in sorted(p.columns.values()):
        if j <= p.id_cols:
            continue
        values = {ws.cell(r, j).value for r in range(p.first, p.last + 1)}
        below = [ws.cell(r, j).value for r in range(p.last + 1, ws.max_row + 1)
                 if r != p.total_row]
        if len(values) != 1 or any(v is not None for v in below):
            continue
        value = values.pop()
        head = " ".join(str(ws.cell(HEADER_ROW, j).value or "").split())
        said.append(f"{head}: {'empty' if value in (None, '') else value}")
        ws.column_dimensions[get_column_letter(j)].hidden = True
    if said:
        cell = ws.cell(2, 1)
        cell.value = (f"{cell.value} The same in every row (columns hidden, not printed): "
                      + "; ".join(said) + ".")
    return said


def _widen_wrapped(ws: Worksheet, id_cols: int) -> bool:
    """Give the room left in a table's last block of columns to its wrapped columns.

    A table printed in blocks of columns leaves the last block part empty; its
    wrapped columns (names) get that room where it saves lines (:func:`fit_widths`),
    as long as the table still prints in as many blocks with as many id columns
    repeated. Returns True when a width
    changed.
    """
    widths = [printed_width(ws, j) for j in range(1, ws.max_column + 1)]
    heights = [ws.row_dimensions[r].height or 15.0 for r in range(1, ws.max_row + 1)]
    blocks = len(page_layout(widths, heights, repeat_cols=id_cols)[2])
    cols = sorted({c.column for row in ws.iter_rows(min_row=FIRST_DATA_ROW) for c in row
                   if isinstance(c.value, str) and c.alignment.wrap_text})
    if not blocks or not cols:
        return False
    before = {c: ws.column_dimensions[get_column_letter(c)].width for c in cols}
    tall = sum(heights)
    rows = range(HEADER_ROW, ws.max_row + 1)
    # the room: a landscape page per block at the smallest readable scale, less the
    # table and the id columns repeated on every block after the first
    room = (blocks + 1) * math.floor(page_chars("landscape")) - sum(widths) \
        - blocks * sum(widths[:repeated_cols(widths, id_cols)])
    for extra in range(int(room), 0, -2):
        fit_widths(ws, cols, sum(before.values()) + extra, rows=rows)
        new = [printed_width(ws, j) for j in range(1, ws.max_column + 1)]
        if len(page_layout(new, heights, repeat_cols=id_cols)[2]) == blocks and \
                repeated_cols(new, id_cols) == repeated_cols(widths, id_cols):
            fit_wrapped_rows(ws)
            if sum(ws.row_dimensions[r].height or 15.0
                   for r in range(1, ws.max_row + 1)) < tall - 1:
                return True  # shorter, in as many blocks
            break
    for c, w in before.items():
        ws.column_dimensions[get_column_letter(c)].width = w
    fit_wrapped_rows(ws)
    return False


def _align_top(ws: Worksheet) -> None:
    """Align every filled cell of ``ws`` to the top of its row.

    Rows with wrapped text are taller; a value beside a wrapped label stays on its
    first line.
    """
    for row in ws.iter_rows():
        for cell in row:
            if cell.value is not None and cell.alignment.vertical != "top":
                a = cell.alignment
                cell.alignment = Alignment(horizontal=a.horizontal, wrap_text=a.wrap_text,
                                           indent=a.indent, vertical="top")


def _narrow_headings(ws: Worksheet, last_col: int) -> bool:
    """Re-merge the title and description rows over ``last_col`` columns at most.

    Returns True when one was wider (the rows above the header of a table printed in
    blocks of columns).
    """
    changed = False
    for rng in list(ws.merged_cells.ranges):
        if rng.max_row < HEADER_ROW and rng.min_row == rng.max_row and rng.max_col > last_col:
            row, first = rng.min_row, rng.min_col
            ws.unmerge_cells(str(rng))
            if last_col > first:
                ws.merge_cells(start_row=row, start_column=first, end_row=row,
                               end_column=last_col)
            changed = True
    return changed


def _write_below(ws: Worksheet, df: pd.DataFrame, top: int, title: str, table: str,
                 names: dict[str, dict[str, str]] | None = None) -> Placed:
    """A second table on a sheet, from row ``top``: title, header, rows (names beside ids)."""
    df, named = with_names(tidy_table(df), names)
    cols = list(df.columns)
    put(ws, top, 1, title, font=TITLE_FONT)
    for j, c in enumerate(cols, start=1):
        cell = put(ws, top + 1, j, header_text(df, c, table, named), font=HEADER_FONT)
        cell.fill = HEADER_FILL
        cell.alignment = WRAP
    fmts = [number_format(unit_of(df, c), c, integer=pd.api.types.is_integer_dtype(df[c])
                          and not pd.api.types.is_bool_dtype(df[c])) for c in cols]
    for i, rec in enumerate(df.itertuples(index=False, name=None)):
        for j, v in enumerate(rec, start=1):
            put(ws, top + 2 + i, j, v, fmts[j - 1])
    return Placed(ws.title, {c: j for j, c in enumerate(cols, start=1)}, top + 2,
                  top + 1 + len(df))


def _cost_subtotals(ws: Worksheet, k: Placed) -> None:
    r = (k.total_row or k.last + 1) + 1
    for kind in ("capex", "opex", "end"):
        r += 1
        put(ws, r, 1, f"Total {kind}", font=TOTAL_FONT)
        put(ws, r, k.columns["kind"], kind)
        for c in ("cost_usd", "cost_usd_discounted"):
            formula(ws, r, k.columns[c], f"=SUMIFS({k.range(c)},{k.range('kind')},\"{kind}\")",
                    "#,##0", TOTAL_FONT)


def write_workbook(result: Any, path: Path | str, sources: Any = None) -> Path:
    """Write the plan workbook to ``path`` atomically.

    Parameters
    ----------
    result : PlanResult
        A plan with tables (``result.status.has_solution``).
    path : path
        Target ``.xlsx`` file; written to a temporary file next to it and renamed, so
        an existing file is replaced only by a complete workbook.
    sources : Case, optional
        Scenario, catalogs and sites for the Assumptions sheet (default: the case the
        plan was solved from, ``result.case``); without one the sheet lists only the
        coefficients the planner derived.

    Returns
    -------
    Path
    """
    wb, _info = build_workbook(result, sources)
    stamp_run(wb)
    path = Path(path)
    with atomic_file(path, suffix=".xlsx") as tmp:
        wb.save(tmp)
    return path


def stamp_run(wb: Any) -> None:
    """Put the open output set's run (id, input digest, time) in the document properties.

    The workbook's *Identifier* is the run id shared by every output of the same
    command (:mod:`dcplan.outputset`); its *Description* names the input digest, the
    time and the other outputs. Outside an output set nothing is set.
    """
    from dcplan.outputset import current_stamp

    run = current_stamp()
    if run is None:
        return
    wb.properties.identifier = run.run_id
    wb.properties.description = (f"dcplan run {run.run_id}, written {run.created}, inputs "
                                 f"digest {run.input_digest or '-'}; outputs of the run: "
                                 + ", ".join(run.outputs))


def export_plan(result: Any, *, xlsx: Path | str | None = None,
                png_dir: Path | str | None = None, html: Path | str | None = None,
                progress: Callable[[str], None] | None = None) -> list[Path]:
    """Write the workbook, PNG charts and/or HTML report of a solved plan.

    Parameters
    ----------
    result : PlanResult
        Its ``case`` supplies the Assumptions sheet (nothing is read again).
    xlsx : path, optional
        Workbook file.
    png_dir : path, optional
        Folder of PNG charts.
    html : path, optional
        Self-contained HTML report (:func:`dcplan.export.html.write_html`).
    progress : callable, optional
        Receives one-line messages.

    Returns
    -------
    list of Path
        Files written.
    """
    say = progress or (lambda _m: None)
    out: list[Path] = []
    if not result.tables:
        return out
    if xlsx is not None:
        out.append(write_workbook(result, xlsx))
        say(f"wrote workbook {xlsx}")
    if html is not None:
        from dcplan.export.html import write_html

        out.append(write_html(result, html))
        say(f"wrote HTML report {html}")
    if png_dir is not None:
        from dcplan.export.charts import write_plan_charts

        pngs = write_plan_charts(result, png_dir)
        out += pngs
        say(f"wrote {len(pngs)} charts to {png_dir}")
    return out
