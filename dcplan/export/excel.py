"""Facilities-grade Excel workbook of one plan (openpyxl).

Sheets: Summary (outcome, key figures, checks, binding limits, notes), KPIs, Fleet,
Power, Cooling, Network, Costs, Demand, Allocation, Unserved, Shadow prices, Sizing,
Charts (live pivot tables and native Excel charts) and Assumptions (every input figure
with unit, source and date).

Every data sheet has the same layout (see :data:`HEADER_ROW`): a title in row 1, a
one-line description in row 2, the header in row 3 (units in brackets), the table from
row 4, then a blank row and a ``Total`` row whose cells are live ``SUM`` formulas over
the table. The header row is frozen and has an autofilter. Text that comes from user
input is always written as text (never as a formula), and the file is written to a
temporary file and renamed, so an interrupted run never leaves a broken workbook.
"""

from __future__ import annotations

import math
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
from dcplan.export.labels import header, number_format, unit_of
from dcplan.export.sources import PlanSources, assumptions_table
from dcplan.planner.analysis import no_grid_sites

#: Row of the column headers on every data sheet (1-based); data start one row below.
HEADER_ROW = 3
FIRST_DATA_ROW = HEADER_ROW + 1

TITLE_FONT = Font(bold=True, size=14)
SECTION_FONT = Font(bold=True, size=12)
HEADER_FONT = Font(bold=True)
HEADER_FILL = PatternFill("solid", fgColor="DDE6F0")
TOTAL_FONT = Font(bold=True)
NOTE_FONT = Font(italic=True, color="555555")
FORMULA_START = ("=", "+", "-", "@")


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
    """

    sheet: str
    table: str
    title: str
    description: str
    totals: tuple[str, ...] = ()
    id_cols: int = 1


#: The data sheets, in workbook order after Summary.
SHEETS: tuple[SheetSpec, ...] = (
    SheetSpec("KPIs", "kpis", "Key performance indicators",
              "Headline figures of the plan as computed by dcplan (units in the Unit column)."),
    SheetSpec("Fleet", "fleet", "Fleet: racks by type, site and period",
              "Racks in service, bought and retired per period; allocated = racks serving "
              "demand at the peak hour.", ("new_racks", "retired_racks"), 3),
    SheetSpec("Power", "power", "Power by site and period against the grid limit",
              "Facility power = IT + cooling + network + electrical losses, at the peak hour, "
              "against the grid limit; headroom = grid limit - facility power.",
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
    SheetSpec("Demand", "demand", "Token demand and service by workload and period",
              "Input + output tokens per second; peak = average x peak-to-average factor.",
              (), 3),
    SheetSpec("Allocation", "allocation", "Allocation of racks to workloads at peak",
              "Which racks serve which workload (and prefill/decode pool) at the peak hour.",
              (), 5),
    SheetSpec("Unserved", "unserved", "Unserved demand",
              "Demand the sites cannot host (empty when all demand is served).", (), 3),
    SheetSpec("Shadow prices", "shadow_prices", "Shadow prices of the limits",
              "What one more unit of a limit would save (grid [USD per MW], space) or what one "
              "more million tokens of demand would cost; 'integers fixed' keeps the chosen "
              "racks, 'LP relaxation' lets the rack counts move continuously.", (), 5),
    SheetSpec("Equipment", "equipment", "Equipment of each site's network, cooling and power",
              "Bill of materials of the exact sizing at each site's peak period: switches by "
              "fabric, tier and model, transceivers by type, co-packaged optical ports, copper "
              "links, NICs (in_rack = TRUE: inside the rack's IT power and price, so not in the "
              "network totals), CDUs (with redundant spares; kW = pumps), heat-rejection plant "
              "and air handlers (kW = electric power on the design day), UPS modules (kW = "
              "losses) and generator sets (kW = standby draw) for the site's redundancy "
              "topology.",
              ("count", "kw", "capex_usd"), 4),
    SheetSpec("Sizing", "sizing", "Exact sizing of the chosen fleet vs the linear estimate",
              "Network and cooling sized exactly for each site's fleet in its peak period, "
              "compared with the planner's linear coefficients.", (), 3),
)

#: Sheet order of the plan workbook.
SHEET_ORDER = ("Summary", *(s.sheet for s in SHEETS[:6]), "Charts", *(s.sheet for s in SHEETS[6:]),
               "Assumptions")

#: Readable KPI names and what they mean (Summary sheet).
KPI_TEXT: dict[str, tuple[str, str]] = {
    "npv_cost_usd": ("NPV of all costs", "Present value of capex and opex over the horizon, "
                     "minus the book value left at the end."),
    "capex_usd": ("Capex", "Racks, network, cooling plant, CDUs and buildings, undiscounted."),
    "opex_usd": ("Opex", "Energy, demand charges and maintenance, undiscounted (without the "
                 "penalty of unserved demand)."),
    "usd_per_million_tokens": ("Cost per million tokens", "Levelised: discounted costs net of "
                               "the terminal value of assets still in service / discounted "
                               "tokens served (input + output). The terminal-value credit can "
                               "put it below every period's cash cost."),
    "tokens_served": ("Tokens served", "Input + output tokens over the horizon."),
    "tokens_per_kwh": ("Tokens per kWh", "Tokens served per kWh of facility energy."),
    "goodput_per_watt": ("Goodput per watt", "Tokens/s served at peak per W of facility power "
                         "in the last period."),
    "peak_facility_mw": ("Peak facility power", "Largest total facility power of all sites "
                         "in one period."),
    "peak_it_mw": ("Peak IT power", "Largest total IT power in one period."),
    "energy_mwh": ("Energy", "Facility energy over the horizon."),
    "pue_annual": ("PUE", "Facility energy / IT energy (network counted as IT)."),
    "utilisation_frac": ("Utilisation", "Racks allocated at peak / racks in service."),
    "carbon_t": ("Carbon", "Grid emissions of the energy used."),
    "racks_bought": ("Racks bought", "New racks over the horizon."),
    "unserved_tokens_per_s_peak_max": ("Largest unserved demand", "Peak tokens/s not served "
                                       "in the worst period (0 = all demand met)."),
}


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
        if text.startswith(FORMULA_START):
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
    if isinstance(value, float):
        if fmt.startswith("#,##0") or fmt.startswith("0."):
            decimals = len(fmt.split(".")[1]) if "." in fmt else 0
            return len(f"{value:,.{decimals}f}")
        return len(f"{value:.6g}")
    return len(str(value))


def autosize(ws: Worksheet, min_width: int = 8, max_width: int = 48,
             skip_rows: Sequence[int] = (1, 2)) -> None:
    """Set column widths from the longest value (headers wrap, titles are skipped)."""
    widths: dict[int, int] = {}
    for row in ws.iter_rows():
        for cell in row:
            if cell.row in skip_rows or cell.value is None:
                continue
            v = cell.value
            if isinstance(v, str) and v.startswith("=") and cell.data_type == "f":
                n = 12
            elif cell.row == HEADER_ROW and isinstance(v, str):
                n = min(len(v), 22)
            else:
                n = _width_of(v, cell.number_format)
            widths[cell.column] = max(widths.get(cell.column, 0), n)
    for col, n in widths.items():
        ws.column_dimensions[get_column_letter(col)].width = max(min_width,
                                                                  min(max_width, n + 2))


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
    """

    sheet: str
    columns: dict[str, int]
    first: int
    last: int
    total_row: int | None = None

    def range(self, col: str) -> str:
        """Absolute reference to the data of column ``col``."""
        return ref(self.sheet, self.columns[col], self.first, max(self.first, self.last))


def write_table(ws: Worksheet, df: pd.DataFrame, *, title: str, description: str = "",
                totals: Sequence[str] = (), id_cols: int = 1,
                header_of: Callable[[pd.DataFrame, str], str] = header) -> Placed:
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
    header_of : callable
        Header text of a column.

    Returns
    -------
    Placed
    """
    put(ws, 1, 1, title, font=TITLE_FONT)
    if description:
        put(ws, 2, 1, description, font=NOTE_FONT)
    cols = list(df.columns)
    for j, c in enumerate(cols, start=1):
        cell = put(ws, HEADER_ROW, j, header_of(df, c), font=HEADER_FONT)
        cell.fill = HEADER_FILL
        cell.alignment = Alignment(wrap_text=True, vertical="top")
    ws.row_dimensions[HEADER_ROW].height = 45
    fmts = [number_format(unit_of(df, c), c) for c in cols]
    for i, rec in enumerate(df.itertuples(index=False, name=None)):
        r = FIRST_DATA_ROW + i
        for j, v in enumerate(rec, start=1):
            put(ws, r, j, v, fmts[j - 1])
    last = FIRST_DATA_ROW + len(df) - 1
    placed = Placed(ws.title, {c: j for j, c in enumerate(cols, start=1)}, FIRST_DATA_ROW, last)
    if cols:
        ws.auto_filter.ref = f"A{HEADER_ROW}:{get_column_letter(len(cols))}{max(last, HEADER_ROW)}"
    ws.freeze_panes = ws.cell(row=FIRST_DATA_ROW, column=min(id_cols, max(len(cols), 1)) + 1)
    sums = [c for c in totals if c in placed.columns]
    if sums and len(df):
        tr = last + 2
        put(ws, tr, 1, "Total", font=TOTAL_FONT)
        for c in sums:
            j = placed.columns[c]
            L = get_column_letter(j)
            formula(ws, tr, j, f"=SUM({L}{FIRST_DATA_ROW}:{L}{last})", fmts[j - 1], TOTAL_FONT)
        placed.total_row = tr
    return placed


def _pivot_block(ws: Worksheet, top: int, title: str, unit: str, rows: list[str],
                 cols: list[str], cell_formula: Callable[[str, str], str], fmt: str,
                 row_label: str = "Period") -> tuple[int, int, int]:
    """Write a rows x cols block of formulas with a title, totals per row; return rows used.

    Returns
    -------
    header_row, first_row, last_row
    """
    put(ws, top, 1, f"{title} [{unit}]", font=SECTION_FONT)
    hr = top + 1
    c = put(ws, hr, 1, row_label, font=HEADER_FONT)
    c.fill = HEADER_FILL
    for j, name in enumerate(cols, start=2):
        c = put(ws, hr, j, name, font=HEADER_FONT)
        c.fill = HEADER_FILL
    tj = len(cols) + 2
    c = put(ws, hr, tj, f"Total [{unit}]", font=HEADER_FONT)
    c.fill = HEADER_FILL
    for i, rlab in enumerate(rows, start=1):
        r = hr + i
        put(ws, r, 1, rlab)
        for j in range(2, len(cols) + 2):
            formula(ws, r, j, cell_formula(f"$A{r}", f"{get_column_letter(j)}${hr}"), fmt)
        if cols:
            formula(ws, r, tj, f"=SUM(B{r}:{get_column_letter(tj - 1)}{r})", fmt, TOTAL_FONT)
    return hr, hr + 1, hr + len(rows)


def _bar_chart(ws: Worksheet, anchor: str, title: str, y_title: str, hr: int, first: int,
               last: int, ncols: int, stacked: bool = True) -> None:
    if ncols == 0 or last < first:
        return
    ch = BarChart()
    ch.type = "col"
    if stacked:
        ch.grouping = "stacked"
        ch.overlap = 100
    ch.title = title
    ch.y_axis.title = y_title
    ch.x_axis.title = "Period"
    ch.height, ch.width = 8.5, 17
    data = Reference(ws, min_col=2, max_col=1 + ncols, min_row=hr, max_row=last)
    cats = Reference(ws, min_col=1, min_row=first, max_row=last)
    ch.add_data(data, titles_from_data=True)
    ch.set_categories(cats)
    ws.add_chart(ch, anchor)


def _line_chart(ws: Worksheet, anchor: str, title: str, y_title: str, hr: int, first: int,
                last: int, ncols: int) -> None:
    if ncols == 0 or last < first:
        return
    ch = LineChart()
    ch.title = title
    ch.y_axis.title = y_title
    ch.x_axis.title = "Period"
    ch.height, ch.width = 8.5, 17
    data = Reference(ws, min_col=2, max_col=1 + ncols, min_row=hr, max_row=last)
    ch.add_data(data, titles_from_data=True)
    ch.set_categories(Reference(ws, min_col=1, min_row=first, max_row=last))
    ws.add_chart(ch, anchor)


def _periods(result: Any) -> list[str]:
    if result.inputs is not None:
        return [p.label for p in result.inputs.periods]
    labels: list[str] = []
    for name in ("power", "fleet", "costs"):
        df = result.tables.get(name)
        if df is not None:
            labels += [str(p) for p in df.period]
    return list(dict.fromkeys(labels))


def _unique(values: Any) -> list[str]:
    return [str(v) for v in dict.fromkeys(values)]


def write_charts_sheet(ws: Worksheet, result: Any, placed: dict[str, Placed]) -> dict[str, Any]:
    """Pivot blocks (live ``SUMIFS`` over the data sheets) and native charts.

    Returns
    -------
    dict
        Block name -> (header_row, first_row, last_row, row labels, column labels).
    """
    put(ws, 1, 1, f"Charts: {result.name}", font=TITLE_FONT)
    put(ws, 2, 1, "The tables below are live formulas (SUMIFS) over the Power, Fleet and Costs "
                  "sheets; the charts plot them.", font=NOTE_FONT)
    periods = _periods(result)
    blocks: dict[str, Any] = {}
    top = 4
    t = result.tables
    specs = []
    if "power" in placed and len(t["power"]):
        p = placed["power"]
        specs.append(("facility_mw", "Facility power at peak by site", "MW",
                      _unique(t["power"].site),
                      lambda r, c, p=p: (f"=SUMIFS({p.range('facility_kw_peak')},"
                                         f"{p.range('site')},{c},{p.range('period')},{r})/1000"),
                      "#,##0.0", "Facility MW at peak by site", "MW", True, False))
        specs.append(("grid_mw", "Grid limit by site", "MW", _unique(t["power"].site),
                      lambda r, c, p=p: (f"=SUMIFS({p.range('grid_kw')},"
                                         f"{p.range('site')},{c},{p.range('period')},{r})/1000"),
                      "#,##0.0", None, None, False, False))
    if "fleet" in placed and len(t["fleet"]):
        f = placed["fleet"]
        specs.append(("racks", "Racks in service by type", "racks", _unique(t["fleet"].rack),
                      lambda r, c, f=f: (f"=SUMIFS({f.range('installed_racks')},"
                                         f"{f.range('rack')},{c},{f.range('period')},{r})"),
                      "#,##0", "Racks in service by type", "racks", True, False))
    if "costs" in placed and len(t["costs"]):
        k = placed["costs"]
        specs.append(("costs", "Costs by category, undiscounted", "million USD",
                      _unique(t["costs"].category),
                      lambda r, c, k=k: (f"=SUMIFS({k.range('cost_usd')},"
                                         f"{k.range('category')},{c},{k.range('period')},{r})"
                                         "/1000000"),
                      "#,##0.0", "Cost stack by category (undiscounted)", "million USD", True,
                      True))
        specs.append(("costs_discounted", "Costs by category, discounted (present value)",
                      "million USD", _unique(t["costs"].category),
                      lambda r, c, k=k: (f"=SUMIFS({k.range('cost_usd_discounted')},"
                                         f"{k.range('category')},{c},{k.range('period')},{r})"
                                         "/1000000"),
                      "#,##0.0", None, None, False, True))
    for name, title, unit, cols, fml, fmt, chart_title, y_title, chart, col_totals in specs:
        hr, first, last = _pivot_block(ws, top, title, unit, periods, cols, fml, fmt)
        tr = last
        if col_totals:  # sums over periods (meaningful for money, not for MW or racks)
            tr = last + 1
            put(ws, tr, 1, "Total", font=TOTAL_FONT)
            for j in range(2, len(cols) + 3):
                L = get_column_letter(j)
                formula(ws, tr, j, f"=SUM({L}{first}:{L}{last})", fmt, TOTAL_FONT)
        blocks[name] = dict(header_row=hr, first=first, last=last,
                            total_row=tr if col_totals else None,
                            rows=periods, cols=cols)
        if chart:
            _bar_chart(ws, f"{get_column_letter(len(cols) + 4)}{top}", chart_title, y_title,
                       hr, first, last, len(cols), stacked=True)
        top = max(tr + 3, top + 19 if chart else tr + 3)
    autosize(ws)
    ws.column_dimensions["A"].width = 12
    return blocks


# ----------------------------------------------------------------------------------------
# Summary
# ----------------------------------------------------------------------------------------


def _status_sentence(result: Any) -> str:
    """What the outcome means, in words that never overstate it."""
    if not result.status.has_solution:
        return f"No plan: the solver ended with status {result.status.value.upper()}."
    text = result.status_text
    head = text[0].upper() + text[1:] + "."
    if result.unserved:
        head += (" The sites cannot host all demand, so the cheapest plan leaves some "
                 "unserved at the scenario's penalty: see Unserved demand below.")
    elif result.proven_optimal:
        head += " No cheaper plan meets the same demand within the limits."
        head += " All token demand is served in every period."
    else:
        head += " All token demand is served in every period."
    return head


def write_summary(ws: Worksheet, result: Any, placed: dict[str, Placed],
                  src: PlanSources | None) -> dict[str, int]:
    """Write the Summary sheet; return the row of each check formula (KPI -> row)."""
    ws.column_dimensions["A"].width = 34
    ws.column_dimensions["B"].width = 22
    ws.column_dimensions["C"].width = 22
    ws.column_dimensions["D"].width = 22
    for col in "EFGHIJ":
        ws.column_dimensions[col].width = 16
    put(ws, 1, 1, f"dcplan plan: {result.name}", font=TITLE_FONT)
    desc = src.scenario.description if src is not None else ""
    if desc:
        put(ws, 2, 1, desc, font=NOTE_FONT)
    r = 4
    put(ws, r, 1, "Outcome", font=SECTION_FONT)
    rows = [("Scenario", result.name, None),
            ("Scenario file", str(src.path) if src is not None and src.path else "", None),
            ("Solver status", result.status.value.upper(), None),
            ("Plan status", result.status_text, None),
            ("Relative MIP gap [fraction]", result.gap, "0.00%"),
            ("Solver", result.solver, None),
            ("Objective: present value of all costs [USD]", result.objective_usd, "#,##0"),
            ("What this means", _status_sentence(result), None)]
    if result.message:
        rows.append(("Solver / planner message", result.message, None))
    for label, value, fmt in rows:
        r += 1
        put(ws, r, 1, label, font=HEADER_FONT)
        put(ws, r, 2, value, fmt)
    r += 2
    put(ws, r, 1, "Key figures", font=SECTION_FONT)
    r += 1
    for j, h in enumerate(("Figure", "Value", "Unit", "What it means"), start=1):
        c = put(ws, r, j, h, font=HEADER_FONT)
        c.fill = HEADER_FILL
    kpis = result.tables.get("kpis")
    if kpis is not None:
        for rec in kpis.itertuples():
            r += 1
            label, meaning = KPI_TEXT.get(rec.kpi, (rec.kpi, ""))
            put(ws, r, 1, label)
            unit = str(rec.unit)
            fmt = "0.0000" if rec.kpi == "usd_per_million_tokens" else (
                "0.0%" if rec.kpi == "utilisation_frac" else (
                    "0.000" if rec.kpi == "pue_annual" else "#,##0.0" if rec.kpi in (
                        "peak_facility_mw", "peak_it_mw", "goodput_per_watt") else "#,##0"))
            put(ws, r, 2, rec.value, fmt)
            put(ws, r, 3, unit)
            put(ws, r, 4, meaning)
    checks = _write_checks(ws, r + 2, result, placed)
    r = max(checks.values(), default=r + 2) + 2
    r = _write_binding(ws, r, result)
    un = result.tables.get("unserved")
    if un is not None and len(un):
        r += 1
        put(ws, r, 1, "Unserved demand", font=SECTION_FONT)
        r += 1
        for j, c in enumerate(un.columns, start=1):
            put(ws, r, j, header(un, c), font=HEADER_FONT).fill = HEADER_FILL
        for rec in un.itertuples(index=False, name=None):
            r += 1
            for j, v in enumerate(rec, start=1):
                put(ws, r, j, v, "#,##0.###")
        r += 1
    notes = list(result.notes)
    if notes:
        r += 1
        put(ws, r, 1, "Notes", font=SECTION_FONT)
        for n in notes:
            r += 1
            put(ws, r, 1, n)
        r += 1
    r += 1
    put(ws, r, 1, "Sheets in this workbook", font=SECTION_FONT)
    guide = [("Fleet", "racks in service, bought and retired by type, site and period"),
             ("Power", "IT, cooling, network, losses and facility kW by site and period vs the "
                       "grid limit, with headroom; energy and carbon"),
             ("Cooling", "liquid and air heat, CDUs with redundancy, PUE by site"),
             ("Network", "network power and capex by site and rack type"),
             ("Costs", "capex and opex by category and period, undiscounted and discounted"),
             ("Charts", "facility MW by site, racks by type and the cost stack over time "
                        "(live pivot tables and native charts)"),
             ("Demand / Allocation", "token demand, what is served, which racks serve it"),
             ("Equipment", "switches by tier and model, transceivers by type, NICs, CDUs, "
                           "heat-rejection plant and air handlers per site"),
             ("Shadow prices / Sizing", "value of each limit; exact vs linear network and "
                                        "cooling"),
             ("Assumptions", "every input figure with unit, source, date and any scenario "
                             "override")]
    for name, text in guide:
        r += 1
        put(ws, r, 1, name, font=HEADER_FONT)
        put(ws, r, 2, text)
    ws.freeze_panes = "A4"
    return checks


def _write_checks(ws: Worksheet, r: int, result: Any, placed: dict[str, Placed]
                  ) -> dict[str, int]:
    put(ws, r, 1, "Totals recomputed by the spreadsheet (live formulas over the data sheets)",
        font=SECTION_FONT)
    r += 1
    for j, h in enumerate(("Total", "Spreadsheet [unit in col. D]", "dcplan value",
                           "Unit", "Difference"), start=1):
        put(ws, r, j, h, font=HEADER_FONT).fill = HEADER_FILL
    kpi = {}
    if "kpis" in result.tables:
        kpi = {k: v for k, v in zip(result.tables["kpis"].kpi, result.tables["kpis"].value,
                                    strict=True)}
    rows: dict[str, int] = {}
    specs = []
    if "costs" in placed and placed["costs"].last >= placed["costs"].first:
        k = placed["costs"]
        crit = f"{k.range('category')},\"unserved_penalty\""
        pen_d = f"SUMIFS({k.range('cost_usd_discounted')},{crit})"
        pen = f"SUMIFS({k.range('cost_usd')},{crit})"
        specs += [
            ("NPV of all costs", f"=SUM({k.range('cost_usd_discounted')})-{pen_d}",
             "npv_cost_usd", "USD", "#,##0"),
            ("Capex", f"=SUMIFS({k.range('cost_usd')},{k.range('kind')},\"capex\")",
             "capex_usd", "USD", "#,##0"),
            ("Opex", f"=SUMIFS({k.range('cost_usd')},{k.range('kind')},\"opex\")-{pen}",
             "opex_usd", "USD", "#,##0"),
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
        put(ws, r, 1, label)
        formula(ws, r, 2, fml, fmt)
        put(ws, r, 3, kpi.get(key), fmt)
        put(ws, r, 4, unit)
        formula(ws, r, 5, f"=B{r}-C{r}", "#,##0.######")
        rows[key] = r
    return rows


def _write_binding(ws: Worksheet, r: int, result: Any) -> int:
    put(ws, r, 1, "Binding limits (ranked)", font=SECTION_FONT)
    put(ws, r + 1, 1, "Limits that stop the plan from being cheaper. The shadow price is what one "
                      "more unit of the limit would save; 'integers fixed' keeps the chosen racks, "
                      "'LP relaxation' lets rack counts move continuously.", font=NOTE_FONT)
    r += 2
    b = result.tables.get("binding")
    no_grid = no_grid_sites(result.tables.get("power"))
    if no_grid:
        put(ws, r, 1, "Sites with no grid yet (not ranked): " + "; ".join(
            f"{s} ({', '.join(ps)})" for s, ps in no_grid.items()), font=NOTE_FONT)
        r += 1
    if b is None or not len(b):
        put(ws, r, 1, "None: no site limit stops one more rack.")
        return r + 2
    for j, c in enumerate(b.columns, start=1):
        cell = put(ws, r, j, header(b, c), font=HEADER_FONT)
        cell.fill = HEADER_FILL
        cell.alignment = Alignment(wrap_text=True, vertical="top")
    for rec in b.itertuples(index=False, name=None):
        r += 1
        for j, (c, v) in enumerate(zip(b.columns, rec, strict=True), start=1):
            v = None if isinstance(v, float) and v != v else v
            put(ws, r, j, v, "0" if c == "rank" else "#,##0.####")
    return r + 2


# ----------------------------------------------------------------------------------------
# Workbook
# ----------------------------------------------------------------------------------------


def build_workbook(result: Any, sources: PlanSources | None = None) -> tuple[Workbook, dict]:
    """Build (without saving) the workbook of ``result``.

    Returns
    -------
    workbook, info
        ``info`` has ``placed`` (table name -> :class:`Placed`), ``checks`` (KPI ->
        Summary row of its check formula) and ``blocks`` (Charts pivot blocks).
    """
    wb = Workbook()
    summary = wb.active
    summary.title = "Summary"
    sheets = {"Summary": summary}
    for name in SHEET_ORDER[1:]:
        sheets[name] = wb.create_sheet(name)
    placed: dict[str, Placed] = {}
    for spec in SHEETS:
        df = result.tables.get(spec.table)
        ws = sheets[spec.sheet]
        if df is None:
            put(ws, 1, 1, spec.title, font=TITLE_FONT)
            put(ws, 2, 1, "Not computed for this plan.", font=NOTE_FONT)
            continue
        placed[spec.table] = write_table(ws, df, title=f"{spec.title}: {result.name}",
                                         description=spec.description, totals=spec.totals,
                                         id_cols=spec.id_cols)
        if spec.table == "costs" and len(df):
            _cost_subtotals(ws, placed["costs"])
        autosize(ws)
    blocks = write_charts_sheet(sheets["Charts"], result, placed)
    checks = write_summary(summary, result, placed, sources)
    assum = assumptions_table(sources, result.inputs)
    assum.attrs["units"] = {}
    ws = sheets["Assumptions"]
    placed["assumptions"] = write_table(
        ws, assum, title=f"Assumptions: every input figure used by {result.name}",
        description="Scenario, catalog and site figures (after the scenario's overrides), the "
                    "facility-model assumptions and the coefficients dcplan derived from them; "
                    "each with unit, source, date, estimate note and override.", id_cols=5,
        header_of=lambda _df, c: {"as_of": "As of [date]", "value": "Value [see Unit column]",
                                  "estimate": "Estimate note", "id": "Id"}.get(
                                      c, c.replace("_", " ").capitalize()))
    autosize(ws, max_width=60)
    for col in ("H", "J"):  # source, estimate: long text
        ws.column_dimensions[col].width = 60
    return wb, {"placed": placed, "checks": checks, "blocks": blocks}


def _cost_subtotals(ws: Worksheet, k: Placed) -> None:
    r = (k.total_row or k.last + 1) + 1
    for kind in ("capex", "opex", "end"):
        r += 1
        put(ws, r, 1, f"Total {kind}", font=TOTAL_FONT)
        put(ws, r, k.columns["kind"], kind)
        for c in ("cost_usd", "cost_usd_discounted"):
            formula(ws, r, k.columns[c], f"=SUMIFS({k.range(c)},{k.range('kind')},\"{kind}\")",
                    "#,##0", TOTAL_FONT)


def write_workbook(result: Any, path: Path | str, sources: PlanSources | None = None
                   ) -> Path:
    """Write the plan workbook to ``path`` atomically.

    Parameters
    ----------
    result : PlanResult
        A plan with tables (``result.status.has_solution``).
    path : path
        Target ``.xlsx`` file; written to a temporary file next to it and renamed, so
        an existing file is replaced only by a complete workbook.
    sources : PlanSources, optional
        Scenario, catalogs and sites for the Assumptions sheet (see
        :func:`dcplan.export.load_sources`); without it the sheet lists only the
        coefficients the planner derived.

    Returns
    -------
    Path
    """
    wb, _info = build_workbook(result, sources)
    path = Path(path)
    with atomic_file(path, suffix=".xlsx") as tmp:
        wb.save(tmp)
    return path


def export_plan(result: Any, scenario: Any = None, *, xlsx: Path | str | None = None,
                png_dir: Path | str | None = None, catalog_dir: Path | str | None = None,
                sites_dir: Path | str | None = None, sources: PlanSources | None = None,
                progress: Callable[[str], None] | None = None) -> list[Path]:
    """Write the workbook and/or PNG charts of a solved plan (used by the CLI).

    Parameters
    ----------
    result : PlanResult
    scenario : path or Scenario, optional
        Loaded again (cheap) for the Assumptions sheet unless ``sources`` is given.
    xlsx : path, optional
        Workbook file.
    png_dir : path, optional
        Folder of PNG charts.
    catalog_dir, sites_dir : path, optional
        As given to the planner.
    sources : PlanSources, optional
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
        if sources is None and scenario is not None:
            from dcplan.export.sources import load_sources

            sources = load_sources(scenario, catalog_dir=catalog_dir, sites_dir=sites_dir)
        out.append(write_workbook(result, xlsx, sources))
        say(f"wrote workbook {xlsx}")
    if png_dir is not None:
        from dcplan.export.charts import write_plan_charts

        pngs = write_plan_charts(result, png_dir)
        out += pngs
        say(f"wrote {len(pngs)} charts to {png_dir}")
    return out
