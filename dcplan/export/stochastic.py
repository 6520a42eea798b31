"""Outputs of a two-stage stochastic plan: terminal text, CSV tables, a workbook.

See :mod:`dcplan.planner.stochastic` for what the figures mean.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from dcplan.export.text import WIDTH, fit_lines, format_table

#: Sheets of the stochastic workbook: sheet title -> result table.
SHEETS = {"Stochastic summary": None, "First stage": "stochastic_first_stage",
          "Cases": "stochastic_cases", "Deterministic plans": "stochastic_plans",
          "Recourse fleets": "stochastic_recourse"}


def _musd(x: Any) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x / 1e6:,.1f}"


def _bounded_line(label: str, b: Any) -> str:
    if b.value is None:
        return f"{label}: not computed ({b.reason})"
    text = (f"{label}: {_musd(b.value)} million USD (the solver gaps allow "
            f"{_musd(b.low)} to {_musd(b.high)})")
    if b.within_gap:
        text += " - within the solver gap: not distinguishable from zero"
    return text


def summary_rows(res: Any) -> list[tuple[str, Any, str]]:
    """(figure, value, unit) rows of the summary sheet."""
    rows = [("Status of the extensive form", res.status.value, ""),
            ("Relative gap", res.gap, "-"),
            ("First stage: periods shared by every case",
             ", ".join(res.first_stage_periods), ""),
            ("Objective", res.objective_usd, "USD (present value)"),
            ("Expected NPV of the stochastic plan", res.expected_cost_usd,
             "USD (present value)")]
    for label, b in (("EVPI", res.evpi), ("VSS", res.vss)):
        rows += [(label, b.value, "USD (present value)"),
                 (f"{label}, lowest the gaps allow", b.low, "USD"),
                 (f"{label}, highest the gaps allow", b.high, "USD"),
                 (f"{label} within the solver gap",
                  {True: "yes", False: "no"}.get(b.within_gap, "-"), "")]
        if b.reason:
            rows.append((f"{label} not computed because", b.reason, ""))
    rows.append(("Expected-value plan", res.expected_value_plan, ""))
    if res.cvar is not None:
        rows.append(("CVaR weight / alpha", f"{res.cvar.weight:g} / {res.cvar.alpha:g}", ""))
    return rows


def stochastic_text(res: Any, width: int | None = WIDTH) -> str:
    """What the stochastic plan says, for a terminal."""
    out = [f"Two-stage stochastic plan '{res.name}': {len(res.cases)} cases, first stage "
           f"{', '.join(res.first_stage_periods)} (decisions before {res.first_stage_until} "
           "shared by every case)"]
    gap = f", gap {res.gap:.3%}" if res.gap is not None else ""
    out.append(f"status: {res.status.value}{gap}")
    if res.message and not res.status.has_solution:
        out.append(res.message)
        return fit_lines("\n".join(out), width)
    out.append(f"expected NPV of costs: {_musd(res.expected_cost_usd)} million USD"
               + (f"; objective with CVaR: {_musd(res.objective_usd)} million USD"
                  if res.cvar is not None and res.cvar.weight else ""))
    out.append(_bounded_line("EVPI (what knowing the case in advance would save)", res.evpi))
    out.append(_bounded_line(f"VSS (saving over the plan of {res.expected_value_plan})",
                             res.vss))
    out += ["", "First stage (bought, built or requested now, whatever happens):"]
    fs = res.first_stage
    out.append(format_table(fs.to_dict("records"), width=width) if len(fs) else "  nothing")
    out += ["", "Cases [million USD, present value]:"]
    rows = []
    for rec in res.cases.to_dict("records"):
        row = {"case": rec["case"], "probability": rec["probability"],
               "stochastic plan": _musd(rec["stochastic_cost_usd"]),
               "planned alone": _musd(rec["perfect_info_cost_usd"])
               + (" (unserved)" if rec["perfect_info_unserved"] else "")}
        rows.append(row)
    out.append(format_table(rows, width=width))
    out += ["", "Second-stage racks bought by case (recourse):"]
    rc = res.recourse
    second = rc[(rc.stage == "second") & (rc.new_racks > 0)]
    if len(second):
        pivot = second.pivot_table(index=["period", "site", "rack"], columns="case",
                                   values="new_racks", aggfunc="sum", fill_value=0)
        recs = [dict(zip(["period", "site", "rack"], k, strict=True))
                | {c: int(pivot.loc[k, c]) for c in pivot.columns} for k in pivot.index]
        out.append(format_table(recs, width=width))
    else:
        out.append("  none")
    out += ["", "Deterministic plans, first stage fixed and evaluated on every case "
                "[million USD]:"]
    out += [f"  {r['plan']} orders now: {r['first_stage']}" for r in
            res.plans.to_dict("records")]
    rows = [{"plan": r["plan"] + (" (expected value)" if r["expected_value_plan"] else ""),
             "objective": _musd(r["objective_usd"]), "regret": _musd(r["regret_usd"]),
             "within gap": {True: "yes", False: "no"}.get(r["within_solver_gap"], "-"),
             "notes": r["notes"] or ""} for r in res.plans.to_dict("records")]
    out.append(format_table(rows, width=width))
    for n in res.notes:
        out.append(f"note: {n}")
    return fit_lines("\n".join(out), width)


def write_stochastic_tables(res: Any, outdir: Path | str) -> list[Path]:
    """Write the stochastic tables as CSV files; ``outdir`` is replaced as a whole.

    As a deterministic plan's ``-o`` folder (:func:`dcplan.export.files.replace_folder`):
    only a folder that holds nothing but what dcplan wrote there is replaced.
    """
    from dcplan.export.files import replace_folder
    from dcplan.tableio import write_csv

    outdir = Path(outdir)
    with replace_folder(outdir) as tmp:
        names = [write_csv(df, tmp / f"{name}.csv").name for name, df in res.tables.items()]
    return [outdir / n for n in names]


def write_stochastic_outputs(res: Any, *, outdir: Path | str | None = None,
                             xlsx: Path | str | None = None, input_digest: str | None = None
                             ) -> list[Path]:
    """Write the stochastic plan's tables and workbook as one set (:mod:`dcplan.outputset`).

    Both are staged and moved in together once both are complete, each stamped with
    the run (id, input digest, time).

    Returns
    -------
    list of Path
        What was written.
    """
    from dcplan.outputset import RunStamp, output_set

    out: list[Path] = []
    stamp = RunStamp.new(input_digest=input_digest, scenario=res.name, outputs=(outdir, xlsx))
    with output_set(stamp):
        if outdir is not None:
            out += write_stochastic_tables(res, outdir)
        if xlsx is not None:
            out.append(write_stochastic_workbook(res, xlsx))
    return out


def write_stochastic_workbook(res: Any, path: Path | str) -> Path:
    """Workbook of the stochastic plan: summary, first stage, cases, plans, recourse."""
    from openpyxl import Workbook
    from openpyxl.styles import Font

    from dcplan.tableio import csv_ready
    from dcplan.yamlio import atomic_path

    wb = Workbook()
    ws = wb.active
    ws.title = "Stochastic summary"
    ws.append([f"Two-stage stochastic plan: {res.name}"])
    ws["A1"].font = Font(bold=True, size=13)
    ws.append(["Figure", "Value", "Unit"])
    for c in ws[2]:
        c.font = Font(bold=True)
    for label, value, unit in summary_rows(res):
        if isinstance(value, float) and not math.isfinite(value):
            value = None
        ws.append([label, value, unit])
        if isinstance(value, float) and "USD" in unit:
            ws.cell(ws.max_row, 2).number_format = "#,##0"
        elif isinstance(value, float) and label == "Relative gap":
            ws.cell(ws.max_row, 2).number_format = "0.00%"
    for n in res.notes:
        ws.append(["Note", n, ""])
    ws.column_dimensions["A"].width = 48
    ws.column_dimensions["B"].width = 24
    ws.column_dimensions["C"].width = 22
    for title, name in SHEETS.items():
        if name is None:
            continue
        df = csv_ready(res.tables[name])
        sh = wb.create_sheet(title)
        sh.append(list(df.columns))
        for c in sh[1]:
            c.font = Font(bold=True)
        for row in df.itertuples(index=False):
            sh.append([None if isinstance(v, float) and not math.isfinite(v) else v
                       for v in row])
        for i, col in enumerate(df.columns, 1):
            sh.column_dimensions[sh.cell(1, i).column_letter].width = max(12, len(col) + 2)
            if col.endswith("_usd"):
                for cell in sh.iter_cols(min_col=i, max_col=i, min_row=2):
                    for x in cell:
                        x.number_format = "#,##0"
        sh.freeze_panes = "A2"
    for sh in wb.worksheets:
        sh.page_setup.orientation = "landscape"
        sh.page_setup.fitToWidth = 1
        sh.sheet_properties.pageSetUpPr.fitToPage = True
    from dcplan.export.excel import stamp_run

    stamp_run(wb)
    path = Path(path)
    with atomic_path(path) as tmp:
        wb.save(tmp)
    return path
