"""Compare solved scenarios side by side: KPIs with deltas, binding limits, fleets.

:func:`compare_results` lines up the result tables of several plans (no figure is
recomputed; deltas are differences of the planners' values).
:func:`write_comparison_workbook` writes them to a workbook whose deltas and NPV
totals are live Excel formulas.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from openpyxl import Workbook
from openpyxl.utils import get_column_letter

from dcplan.export.excel import (
    HEADER_FILL,
    HEADER_FONT,
    HEADER_ROW,
    NOTE_FONT,
    SECTION_FONT,
    TITLE_FONT,
    TOTAL_FONT,
    WRAP,
    autosize,
    fit_wrapped_rows,
    formula,
    put,
    ref,
    write_table,
)
from dcplan.export.files import atomic_file, write_csv
from dcplan.export.labels import (
    category_label,
    header,
    kpi_format,
    kpi_label,
    kpi_unit,
    unit_of,
)
from dcplan.export.printing import setup_page
from dcplan.export.text import WIDTH, fit_lines
from dcplan.planner.analysis import PRICE_BASIS, binding_rows, quoted_price
from dcplan.planner.sizing import OWN
from dcplan.planner.solver import format_gap, status_text
from dcplan.tableio import tidy_table

_ID = re.compile(r"^[a-z0-9_]+$")

#: Marking of a difference no larger than the two plans' solver gaps together.
WITHIN_GAP = "within the solver gap: no significant difference"
#: KPIs whose difference the solver gaps bound (the objective and its levelised form).
GAP_BOUNDED_KPIS = ("npv_cost_usd", "usd_per_million_tokens")


def within_gap(base: float | None, other: float | None, gap_base: float | None,
               gap_other: float | None) -> bool | None:
    """Whether ``other - base`` is no larger than what the two solver gaps allow.

    A plan reported with relative gap g may cost up to g of its value more than its
    optimum, so two plans' difference is significant only when it exceeds
    ``g_base * |base| + g_other * |other|``. None when a value or a gap is unknown.
    """
    if base is None or other is None or gap_base is None or gap_other is None:
        return None
    return abs(other - base) <= gap_base * abs(base) + gap_other * abs(other) + 1e-9


#: KPIs shown side by side (in this order; others follow).
KPI_ORDER = ("npv_cost_usd", "capex_usd", "opex_usd", "staff_software_usd",
             "usd_per_million_tokens", "usd_per_million_tokens_annualised",
             "terminal_value_frac", "peak_facility_mw", "pue_annual", "pue_peak",
             "tokens_per_kwh", "goodput_per_watt",
             "carbon_t", "racks_bought", "utilisation_frac", "energy_mwh", "tokens_served",
             "peak_it_mw", "unserved_tokens_per_s_peak_max")


@dataclass
class Comparison:
    """Several plans lined up against a baseline.

    Attributes
    ----------
    names : list of str
        Unique scenario names, in input order.
    baseline : str
    results : list of PlanResult
    kpis : DataFrame
        kpi, unit, one column per scenario, then ``delta vs <baseline>: <name>`` for
        every other scenario (scenario - baseline, in the KPI's unit), then
        ``significance vs <baseline>: <name>``: for the NPV and the levelised cost,
        :data:`WITHIN_GAP` when the difference is no larger than the two plans' solver
        gaps allow (see :func:`within_gap`), else ``significant`` ('' where a gap is
        unknown or the KPI is not bounded by it).
    status : DataFrame
        scenario, status (solver status value), gap [-], solver, unserved, outcome
        (honest wording, see :func:`dcplan.planner.solver.status_text`), message.
    binding : DataFrame
        scenario + the planner's binding-limits table.
    fleet : DataFrame
        site, rack, period, racks in service per scenario (wide).
    fleet_diff : DataFrame
        Rows of ``fleet`` where some scenario differs from the baseline.
    bought : DataFrame
        site, rack, racks bought over the horizon per scenario (wide).
    power : DataFrame
        scenario, period, site, facility_kw_peak, grid_kw.
    costs : DataFrame
        scenario + the planner's costs table.
    cooling, network, bom : DataFrame
        scenario + the planner's cooling, network and bill-of-materials tables.
    build_vs_buy, requests : DataFrame
        scenario + the planner's build-vs-buy and energy-per-request tables.
    """

    names: list[str]
    baseline: str
    results: list[Any]
    kpis: pd.DataFrame
    status: pd.DataFrame
    binding: pd.DataFrame
    fleet: pd.DataFrame
    fleet_diff: pd.DataFrame
    bought: pd.DataFrame
    power: pd.DataFrame
    costs: pd.DataFrame
    cooling: pd.DataFrame = field(default_factory=pd.DataFrame)
    network: pd.DataFrame = field(default_factory=pd.DataFrame)
    bom: pd.DataFrame = field(default_factory=pd.DataFrame)
    build_vs_buy: pd.DataFrame = field(default_factory=pd.DataFrame)
    requests: pd.DataFrame = field(default_factory=pd.DataFrame)
    files: list[Path] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)

    def delta_col(self, name: str) -> str:
        """Column of ``kpis`` with ``name`` - baseline."""
        return f"delta vs {self.baseline}: {name}"

    def summary(self) -> dict[str, Any]:
        """Machine-readable comparison (JSON-safe)."""
        def rec(df: pd.DataFrame) -> list[dict]:
            return [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
                    for r in df.to_dict("records")]
        return {"baseline": self.baseline, "scenarios": self.names, "status": rec(self.status),
                "kpis": rec(self.kpis), "binding": rec(self.binding),
                "fleet_differences": rec(self.fleet_diff), "racks_bought": rec(self.bought),
                "build_vs_buy": rec(self.build_vs_buy), "requests": rec(self.requests),
                "caveats": list(self.caveats), "files": [str(p) for p in self.files]}


def unique_names(results: Sequence[Any], labels: Sequence[str] | None = None) -> list[str]:
    """Scenario names made unique (a repeated name gets its file label appended)."""
    names = [r.name for r in results]
    labels = list(labels or [str(i + 1) for i in range(len(results))])
    out = []
    for i, n in enumerate(names):
        out.append(n if names.count(n) == 1 else f"{n} ({labels[i]})")
    seen: dict[str, int] = {}
    for i, n in enumerate(out):
        if n in seen:
            seen[n] += 1
            out[i] = f"{n} #{seen[n]}"
        else:
            seen[n] = 1
    return out


def _with_scenario(name: str, df: pd.DataFrame | None) -> pd.DataFrame | None:
    if df is None:
        return None
    out = df.copy()
    out.insert(0, "scenario", name)
    return out


def compare_results(results: Sequence[Any], baseline: str | int | None = None,
                    labels: Sequence[str] | None = None) -> Comparison:
    """Line up ``results`` against a baseline.

    Parameters
    ----------
    results : sequence of PlanResult
    baseline : str or int, optional
        Name, file label or index of the baseline (default: the first).
    labels : sequence of str, optional
        File labels of the scenarios (e.g. paths), to pick the baseline and to make
        repeated names unique.

    Returns
    -------
    Comparison

    Raises
    ------
    ValueError
        If ``baseline`` matches no scenario.
    """
    results = list(results)
    labels = list(labels or [str(i) for i in range(len(results))])
    names = unique_names(results, [Path(lab).stem for lab in labels])
    if baseline is None:
        b = 0
    elif isinstance(baseline, int):
        b = baseline
    else:
        cands = [i for i, (n, r, lab) in enumerate(zip(names, results, labels, strict=True))
                 if baseline in (n, r.name, lab, Path(lab).stem, Path(lab).name)]
        if not cands:
            raise ValueError(f"baseline '{baseline}' is none of the scenarios "
                             f"({', '.join(names)})")
        b = cands[0]
    base = names[b]

    # KPIs side by side
    gaps = {n: (None if r.gap is None or r.gap != r.gap else float(r.gap))
            for r, n in zip(results, names, strict=True)}
    kpi_units: dict[str, str] = {}
    values: dict[str, dict[str, float | None]] = {}
    for r, n in zip(results, names, strict=True):
        k = r.tables.get("kpis")
        values[n] = {}
        if k is None:
            continue
        for row in k.itertuples():
            kpi_units.setdefault(row.kpi, str(row.unit))
            values[n][row.kpi] = None if pd.isna(row.value) else float(row.value)
    order = [k for k in KPI_ORDER if k in kpi_units] + [k for k in kpi_units if k not in KPI_ORDER]
    rows = []
    for k in order:
        row = {"kpi": k, "unit": kpi_units[k]}
        for n in names:
            row[n] = values[n].get(k)
        for n in names:
            if n == base:
                continue
            a, c = values[base].get(k), values[n].get(k)
            row[f"delta vs {base}: {n}"] = c - a if a is not None and c is not None else None
        for n in names:
            if n == base:
                continue
            same = within_gap(values[base].get(k), values[n].get(k), gaps[base], gaps[n]) \
                if k in GAP_BOUNDED_KPIS else None
            row[f"significance vs {base}: {n}"] = WITHIN_GAP if same else (
                "" if same is None else "significant")
        rows.append(row)
    kpis = pd.DataFrame(rows)
    kpis.attrs["units"] = {c: "see unit column" for c in kpis.columns if c not in ("kpi", "unit")}

    status = pd.DataFrame([dict(scenario=n, status=r.status.value, gap=r.gap, solver=r.solver,
                                unserved=bool(r.unserved),
                                outcome=status_text(r.status, r.gap, r.solver,
                                                    bool(r.unserved)),
                                message=r.message)
                           for r, n in zip(results, names, strict=True)])
    parts = [_with_scenario(n, binding_rows(r.tables.get("binding")))
             for r, n in zip(results, names, strict=True)]
    parts = [p for p in parts if p is not None and len(p)]
    binding = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["scenario", "rank", "limit", "site", "period", "value", "used", "unit",
                 "shadow_price", "shadow_price_relaxed", "shadow_unit"])

    # Fleets: racks in service per (site, rack, period) and bought over the horizon
    keys = ["site", "rack", "period"]
    fleet = None
    bought = None
    for r, n in zip(results, names, strict=True):
        f = r.tables.get("fleet")
        if f is None:
            f = pd.DataFrame(columns=[*keys, "installed_racks", "new_racks"])
        inst = f[keys + ["installed_racks"]].rename(columns={"installed_racks": n})
        new = f.groupby(["site", "rack"], sort=False).new_racks.sum().rename(n).reset_index()
        fleet = inst if fleet is None else fleet.merge(inst, on=keys, how="outer")
        bought = new if bought is None else bought.merge(new, on=["site", "rack"], how="outer")
    fleet = fleet.fillna({n: 0.0 for n in names})
    bought = bought.fillna({n: 0.0 for n in names})
    period_order = []
    for r in results:
        if r.inputs is not None:
            period_order += [p.label for p in r.inputs.periods if p.label not in period_order]
    if period_order:
        fleet["_p"] = fleet.period.map({p: i for i, p in enumerate(period_order)})
        fleet = fleet.sort_values(["site", "rack", "_p"]).drop(columns="_p")
    fleet = fleet.reset_index(drop=True)
    differs = pd.Series(False, index=fleet.index)
    for n in names:
        differs |= (fleet[n] - fleet[base]).abs() > 1e-6
    fleet_diff = fleet[differs].reset_index(drop=True)
    for n in names:
        if n != base:
            bought[f"delta vs {base}: {n}"] = bought[n] - bought[base]

    power_parts = []
    cost_parts = []
    for r, n in zip(results, names, strict=True):
        p = r.tables.get("power")
        if p is not None and len(p):
            power_parts.append(_with_scenario(n, p[["period", "site", "facility_kw_peak",
                                                    "grid_kw"]]))
        c = r.tables.get("costs")
        if c is not None and len(c):
            cost_parts.append(_with_scenario(n, c))
    power = pd.concat(power_parts, ignore_index=True) if power_parts else pd.DataFrame()
    costs = pd.concat(cost_parts, ignore_index=True) if cost_parts else pd.DataFrame()
    for df, src in ((power, "power"), (costs, "costs")):
        for r in results:
            if src in r.tables:
                df.attrs["units"] = dict(r.tables[src].attrs.get("units", {}))
                break
    fleet.attrs["units"] = {n: "racks" for n in names}
    fleet_diff.attrs["units"] = fleet.attrs["units"]
    bought.attrs["units"] = {c: "racks" for c in bought.columns if c not in ("site", "rack")}
    stacked = {name: _stacked(results, names, name)
               for name in ("cooling", "network", "bom", "build_vs_buy", "requests")}
    return Comparison(names, base, results, kpis, status, binding, fleet, fleet_diff, bought,
                      power, costs, cooling=stacked["cooling"], network=stacked["network"],
                      bom=stacked["bom"], build_vs_buy=stacked["build_vs_buy"],
                      requests=stacked["requests"],
                      caveats=comparison_caveats(results, names, b))


#: Relative difference of total token demand above which a comparison says so [-].
DEMAND_CAVEAT_FRAC = 0.01


def comparison_caveats(results: Sequence[Any], names: Sequence[str], b: int) -> list[str]:
    """Why some of the plans' differences compare unlike things.

    A plan over other periods than the baseline's (its NPV and totals cover other
    years), or one whose token demand over its horizon differs from the baseline's by
    more than :data:`DEMAND_CAVEAT_FRAC` (its NPV buys another service).
    """
    def horizon(r) -> list[str]:
        return [p.label for p in r.inputs.periods] if r.inputs is not None else []

    def demand(r) -> float | None:
        from dcplan.planner.tables import workload_tokens

        t = r.tables.get("demand")
        if t is None or not len(t) or r.inputs is None:
            return None
        return float(sum(workload_tokens(r.inputs, t, served=False)[0].values()))

    out = []
    h0, d0 = horizon(results[b]), demand(results[b])
    for i, (r, n) in enumerate(zip(results, names, strict=True)):
        if i == b:
            continue
        h = horizon(r)
        if h and h0 and h != h0:
            out.append(f"{n} plans {h[0]}-{h[-1]}, the baseline {names[b]} {h0[0]}-{h0[-1]}: "
                       "NPVs and totals cover different years")
        dn = demand(r)
        if dn is not None and d0 and abs(dn - d0) > DEMAND_CAVEAT_FRAC * d0:
            out.append(f"{n} plans for {dn / d0 - 1:+.0%} token demand over its horizon "
                       f"against {names[b]}: its NPV buys another service (compare the "
                       "levelised cost per million tokens)")
    return out


def _stacked(results: Sequence[Any], names: Sequence[str], table: str) -> pd.DataFrame:
    """One result table of every plan, one under the other, with a scenario column."""
    parts = [_with_scenario(n, r.tables.get(table)) for r, n in zip(results, names, strict=True)]
    parts = [p for p in parts if p is not None and len(p)]
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    for r in results:
        if table in r.tables:
            out.attrs["units"] = dict(r.tables[table].attrs.get("units", {}))
            break
    return out


# ----------------------------------------------------------------------------------------
# Text
# ----------------------------------------------------------------------------------------


def _percent(kpi: str) -> bool:
    """The KPI is a share, shown as a percentage (its workbook format is one)."""
    return bool(kpi) and kpi_format(kpi).endswith("%")


def _fmt(v: Any, kpi: str = "") -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "-"
    if kpi in ("usd_per_million_tokens",):
        return f"{v:,.4f}"
    if _percent(kpi):
        return f"{v:.1%}"
    if kpi in ("pue_annual", "pue_peak"):
        return f"{v:.3f}"
    if abs(v) >= 1e12:
        return f"{v:.4g}"
    if float(v).is_integer():
        return f"{int(v):,}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:,.3g}" if abs(v) < 1 else f"{v:,.1f}"


def comparison_text(cmp: Comparison, width: int | None = WIDTH) -> str:
    """Readable side-by-side comparison that fits ``width`` columns (None: no wrapping)."""
    from dcplan.export.text import format_table

    out = [f"Comparison of {len(cmp.names)} scenarios (baseline: {cmp.baseline})", ""]
    out.append(format_table(cmp.status.assign(
        gap=[None if g is None or g != g else format_gap(g) for g in cmp.status.gap]
    ).drop(columns=["message"]).to_dict("records"), width=width))
    for rec in cmp.status.itertuples():
        if rec.message:
            out.append(f"  {rec.scenario}: {rec.message}")
    if cmp.caveats:
        out += ["", "Read with care:"] + [f"  - {c}" for c in cmp.caveats]
    out += ["", "Key figures (delta = scenario - baseline; pp: percentage points):"]
    rows, marks = [], []
    for rec in cmp.kpis.to_dict("records"):
        k = rec["kpi"]
        row = {"KPI": kpi_label(k), "unit": kpi_unit(k, rec["unit"].split(" (")[0])}
        for n in cmp.names:
            row[n] = _fmt(rec[n], k)
        for n in cmp.names:
            if n == cmp.baseline:
                continue
            d = rec[cmp.delta_col(n)]
            base = rec[cmp.baseline]
            pct = f" ({d / base:+.1%})" if d is not None and base not in (None, 0) else ""
            same = rec.get(f"significance vs {cmp.baseline}: {n}") == WITHIN_GAP
            note = " *" if same else ""
            if same:
                marks.append(f"  * {n}, {kpi_label(k)}: {WITHIN_GAP}")
            # a share's difference in percentage points; others in the KPI's unit
            diff = "-" if d is None else (f"{d * 100:+.1f} pp" if _percent(k) else
                                          ("+" if d > 0 else "") + _fmt(d, k))
            row[f"delta {n}"] = diff if d is None else diff + pct + note
        rows.append(row)
    out.append(format_table(rows, width=width))
    out += marks
    out += ["", "Binding limits:"]
    for n in cmp.names:
        b = cmp.binding[cmp.binding.scenario == n] if len(cmp.binding) else cmp.binding
        if not len(b):
            out.append(f"  {n}: none")
            continue
        items = []
        for rec in b.head(8).itertuples():
            sp, kind = quoted_price(rec)
            items.append(f"{rec.limit} {rec.site} {rec.period}"
                         + (f" ({sp:,.0f} {rec.shadow_unit} {PRICE_BASIS[kind]})"
                            if sp is not None else ""))
        more = f" (+{len(b) - 8} more)" if len(b) > 8 else ""
        out.append(f"  {n}: " + "; ".join(items) + more)
    out += ["", "Racks bought over the horizon by site and type:"]
    out.append(format_table([{k: (_fmt(v) if isinstance(v, float) else v) for k, v in r.items()}
                             for r in cmp.bought.to_dict("records")], width=width))
    if len(cmp.fleet_diff):
        out += ["", f"Racks in service differ from {cmp.baseline} in {len(cmp.fleet_diff)} "
                    "(site, rack, period) rows; first ones:"]
        out.append(format_table([{k: (_fmt(v) if isinstance(v, float) else v)
                                  for k, v in r.items()}
                                 for r in cmp.fleet_diff.head(12).to_dict("records")],
                                width=width))
    else:
        out += ["", f"Fleets: identical to {cmp.baseline} in every site, rack and period."]
    out += _buy_text(cmp, width)
    return fit_lines("\n".join(out), width)


def _buy_text(cmp: Comparison, width: int | None) -> list[str]:
    """Per scenario and workload: the plan's cost against the cheapest comparable API."""
    from dcplan.export.text import format_table

    b = cmp.build_vs_buy
    if not len(b):
        return []
    rows = []
    for (n, w), sub in b[b.workload != "(all)"].groupby(["scenario", "workload"], sort=False):
        cheap = sub.loc[sub.api_usd_per_mtok.idxmin()]
        be = cheap.break_even_demand_frac
        rows.append({"scenario": n, "workload": w,
                     "plan USD/Mtok": f"{cheap.plan_usd_per_mtok:.4f}",
                     "cheapest API": cheap.api, "API USD/Mtok": f"{cheap.api_usd_per_mtok:.4f}",
                     "cheaper": cheap.cheaper,
                     "break-even demand": "never" if be is None or be != be else f"{be:.0%}"})
    head = ("Build vs buy against the cheapest comparable API (break-even: share of the "
            "planned demand above which building is cheaper):")
    return ["", *(textwrap.wrap(head, width) if width else [head]),
            format_table(rows, width=width)]


# ----------------------------------------------------------------------------------------
# Workbook
# ----------------------------------------------------------------------------------------


def _write_kpi_sheet(ws: Any, cmp: Comparison) -> dict[str, Any]:
    """Side-by-side KPIs; deltas are live formulas. Returns layout info."""
    from dcplan.export.excel import long_text

    put(ws, 1, 1, f"Scenario comparison (baseline: {cmp.baseline})", font=TITLE_FONT)
    put(ws, 2, 1, "KPIs of each scenario as computed by dcplan; the delta columns are live "
                  "formulas (scenario - baseline) and (scenario / baseline - 1).", font=NOTE_FONT)
    names = cmp.names
    others = [n for n in names if n != cmp.baseline]
    heads = ["KPI", "Unit", *names]
    for n in others:
        heads += [f"Delta {n} - {cmp.baseline} [KPI unit]", f"Delta {n} vs {cmp.baseline} [%]"]
    for j, h in enumerate(heads, start=1):
        c = put(ws, HEADER_ROW, j, h, font=HEADER_FONT)
        c.fill = HEADER_FILL
        c.alignment = WRAP
    col = {n: 3 + i for i, n in enumerate(names)}
    bcol = get_column_letter(col[cmp.baseline])
    r = HEADER_ROW
    rows = {}
    for rec in tidy_table(cmp.kpis).to_dict("records"):
        r += 1
        k = rec["kpi"]
        rows[k] = r
        put(ws, r, 1, kpi_label(k))
        put(ws, r, 2, kpi_unit(k, rec["unit"]))
        fmt = kpi_format(k)
        for n in names:
            put(ws, r, col[n], rec[n], fmt)
        j = 3 + len(names)
        for n in others:
            L = get_column_letter(col[n])
            formula(ws, r, j, f'=IF(OR({L}{r}="",{bcol}{r}=""),"",{L}{r}-{bcol}{r})', fmt)
            formula(ws, r, j + 1, f'=IF(OR({L}{r}="",{bcol}{r}="",{bcol}{r}=0),"",'
                                  f'{L}{r}/{bcol}{r}-1)', "0.0%")
            j += 2
    ws.auto_filter.ref = f"A{HEADER_ROW}:{get_column_letter(len(heads))}{r}"
    ws.freeze_panes = ws.cell(row=HEADER_ROW + 1, column=3)
    autosize(ws)
    ws.column_dimensions["A"].width = 26
    ws.column_dimensions["B"].width = 22
    last = max(len(heads), 6)
    r += 2
    put(ws, r, 1, "Solver outcome", font=SECTION_FONT)
    for rec in cmp.status.to_dict("records"):
        r += 1
        put(ws, r, 1, rec["scenario"], font=HEADER_FONT)
        put(ws, r, 2, rec["status"].upper())
        put(ws, r, 3, rec["gap"], "0.00%")
        put(ws, r, 4, "demand NOT fully met" if rec["unserved"] else "all demand served")
        text = rec["outcome"] + (f". {rec['message']}" if rec["message"] else "")
        long_text(ws, r, 5, last, text)
    return {"rows": rows, "cols": col, "last_col": len(heads)}


def build_comparison_workbook(cmp: Comparison) -> tuple[Workbook, dict[str, Any]]:
    """Build (without saving) the comparison workbook.

    Sheets: Comparison (KPIs side by side with live deltas), NPV (discounted cost by
    category x scenario as live SUMIFS over Costs, totals = NPV), Binding, Fleet
    differences, Racks bought, Fleet, Power, Costs, Cooling, Network, Bill of materials.
    """
    wb = Workbook()
    ws = wb.active
    ws.title = "Comparison"
    info: dict[str, Any] = {"kpi": _write_kpi_sheet(ws, cmp)}
    placed = {}
    specs = [
        ("Binding", cmp.binding, "Binding limits per scenario", "Ranked per scenario; "
         "shadow prices as in each plan's Summary.", (), 2),
        ("Fleet differences", cmp.fleet_diff, f"Racks in service that differ from "
         f"{cmp.baseline}", "Only (site, rack, period) rows where some scenario differs.", (), 3),
        ("Racks bought", cmp.bought, "Racks bought over the horizon by site and type",
         "Sum of new racks per scenario; delta = scenario - baseline.",
         tuple(c for c in cmp.bought.columns if c not in ("site", "rack")), 2),
        ("Fleet", cmp.fleet, "Racks in service by site, type and period", "", tuple(cmp.names),
         3),
        ("Power", cmp.power, "Facility power at peak and grid limit by scenario, site and period",
         "", (), 3),
        ("Costs", cmp.costs, "Costs by scenario, category and period", "",
         ("cost_usd", "cost_usd_discounted"), 4),
        ("Cooling", cmp.cooling, "Cooling by scenario, site and period",
         "Heat to liquid and to air, CDUs with their redundant spares, cooling power at "
         "peak and PUE, as in each plan's Cooling sheet.", (), 3),
        ("Network", cmp.network, "Network by scenario, site, rack type and period",
         "Network power and capex of the racks in service, as in each plan.", (), 4),
        ("Build vs buy", cmp.build_vs_buy, "Build vs buy by scenario, API and workload",
         "Each plan's served token mix bought from every comparable API against the plan's "
         "own levelised cost, with the break-even, as in each plan's Build vs buy sheet.",
         (), 4),
        ("Energy per request", cmp.requests, "Energy per request by scenario and workload",
         "Facility energy per request and tokens per kWh, as in each plan.", (), 2),
        ("Bill of materials", cmp.bom, "Bill of materials by scenario, site and period",
         "What each plan has installed and what it orders per period (new), as in each "
         "plan's Bill of materials sheet; the Total row sums the lines bought on their own "
         "(purchase 'own'), not the NICs inside the racks' price and power ('in_rack').",
         ("new", "removed", "new_capex_usd"), 6),
    ]
    npv_ws = wb.create_sheet("NPV", 1)
    def head(df: pd.DataFrame, c: str, table: str | None) -> str:
        # Scenario names (and deltas named after them) are shown as given.
        if c in cmp.names or c.startswith("delta vs "):
            unit = unit_of(df, c)
            text = c if c in cmp.names else "Delta" + c[len("delta"):]
            return f"{text} [{unit}]" if unit else text
        return header(df, c, table)

    for name, df, title, desc, totals, ids in specs:
        w = wb.create_sheet(name)
        table = {"Costs": "costs", "Power": "power", "Binding": "binding",
                 "Cooling": "cooling", "Network": "network",
                 "Bill of materials": "bom", "Build vs buy": "build_vs_buy",
                 "Energy per request": "requests"}.get(name)
        placed[name] = write_table(w, df, title=title, description=desc, totals=totals,
                                   id_cols=ids, header_of=lambda d, c, t=table: head(d, c, t),
                                   total_where=("purchase", OWN) if table == "bom" else None)
        autosize(w)
    info["placed"] = placed
    # NPV by category x scenario (live SUMIFS over the Costs sheet)
    put(npv_ws, 1, 1, "Present value of costs by category and scenario [million USD]",
        font=TITLE_FONT)
    put(npv_ws, 2, 1, "Live SUMIFS over the Costs sheet; the Total row is each scenario's NPV "
                      "(terminal value negative).", font=NOTE_FONT)
    from dcplan.export.views import stack_categories

    stacked, apart = stack_categories(cmp.costs if len(cmp.costs) else None)
    cats = stacked + apart
    k = placed["Costs"]
    hr = HEADER_ROW
    put(npv_ws, hr, 1, "Cost category", font=HEADER_FONT).fill = HEADER_FILL
    for j, n in enumerate(cmp.names, start=2):
        put(npv_ws, hr, j, n, font=HEADER_FONT).fill = HEADER_FILL
    # Each scenario's rows are contiguous on the Costs sheet: sum over its own rows, so
    # no criterion ever contains a (user-given) scenario name.
    spans = {}
    if len(cmp.costs):
        pos = cmp.costs.reset_index(drop=True).groupby("scenario", sort=False).groups
        spans = {n: (k.first + int(min(ix)), k.first + int(max(ix))) for n, ix in pos.items()}
    cost_col, cat_col = k.columns["cost_usd_discounted"], k.columns["category"]
    for i, cat in enumerate(cats, start=1):
        # The category in words; the criterion is dcplan's own id (never user text).
        put(npv_ws, hr + i, 1, category_label(cat))
        crit = f'"{cat}"' if _ID.match(cat) else None
        for j, n in enumerate(cmp.names, start=2):
            if n not in spans or crit is None:
                continue
            a, b = spans[n]
            formula(npv_ws, hr + i, j,
                    f"=SUMIFS({ref('Costs', cost_col, a, b)},{ref('Costs', cat_col, a, b)},"
                    f"{crit})/1000000", "#,##0.0")
    tr = hr + len(cats) + 1
    put(npv_ws, tr, 1, "Total (NPV)", font=TOTAL_FONT)
    for j in range(2, len(cmp.names) + 2):
        L = get_column_letter(j)
        formula(npv_ws, tr, j, f"=SUM({L}{hr + 1}:{L}{tr - 1})", "#,##0.0", TOTAL_FONT)
    npv_ws.freeze_panes = f"B{hr + 1}"
    autosize(npv_ws)
    npv_ws.column_dimensions["A"].width = 22
    info["npv"] = {"header_row": hr, "total_row": tr, "categories": cats}
    if apart:
        put(npv_ws, tr + 2, 1, "The chart stacks the costs paid; the terminal-value credit "
                               "(row above the total) is left out of it.", font=NOTE_FONT)
    if stacked:
        from openpyxl.chart import BarChart, Reference

        ch = BarChart()
        ch.type = "col"
        ch.grouping = "stacked"
        ch.overlap = 100
        ch.title = "Present value of costs paid, by category [million USD]"
        ch.y_axis.title = "million USD"
        ch.height, ch.width = 10, 18
        ch.legend.position = "r"
        data = Reference(npv_ws, min_col=1, max_col=1 + len(cmp.names), min_row=hr + 1,
                         max_row=hr + len(stacked))
        ch.add_data(data, from_rows=True, titles_from_data=True)
        ch.set_categories(Reference(npv_ws, min_col=2, max_col=1 + len(cmp.names), min_row=hr))
        npv_ws.add_chart(ch, f"A{tr + 4}")
    _page_setup(wb, cmp)
    return wb, info


def _page_setup(wb: Workbook, cmp: Comparison) -> None:
    """Print setup of every sheet of the comparison workbook."""
    title = "dcplan comparison: " + ", ".join(cmp.names)
    for ws in wb.worksheets:
        fit_wrapped_rows(ws)
        if ws.title == "Comparison":
            setup_page(ws, title, repeat_rows=f"{HEADER_ROW}:{HEADER_ROW}")
        elif ws.title == "NPV":
            setup_page(ws, title, last_col=max(ws.max_column, 10),
                       last_row=ws.max_row + 22, one_page=True)
        else:
            setup_page(ws, title, repeat_rows=f"{HEADER_ROW}:{HEADER_ROW}")


def write_comparison_workbook(cmp: Comparison, path: Path | str) -> Path:
    """Write the comparison workbook to ``path`` atomically (temporary file + rename)."""
    from dcplan.export.excel import stamp_run

    wb, _ = build_comparison_workbook(cmp)
    stamp_run(wb)
    path = Path(path)
    with atomic_file(path, suffix=".xlsx") as tmp:
        wb.save(tmp)
    return path


def export_comparison(cmp: Comparison, *, outdir: Path | str | None = None,
                      xlsx: Path | str | None = None, png_dir: Path | str | None = None,
                      html: Path | str | None = None) -> list[Path]:
    """Write the comparison workbook, its KPI CSV, PNG charts and HTML report.

    ``outdir`` gives defaults: ``OUTDIR/comparison.xlsx``, ``OUTDIR/kpis.csv``,
    ``OUTDIR/charts/`` and ``OUTDIR/comparison.html``; ``xlsx``, ``png_dir`` and
    ``html`` override them. The files are written as one set
    (:func:`dcplan.outputset.output_set`): all staged, then moved in together.

    Returns
    -------
    list of Path
    """
    from dcplan.outputset import RunStamp, output_set

    stamp = RunStamp.new(scenario=" vs ".join(cmp.names),
                         outputs=(outdir, xlsx, png_dir, html))
    with output_set(stamp):  # every file moved in together once all are written
        return _export_comparison(cmp, outdir=outdir, xlsx=xlsx, png_dir=png_dir, html=html)


def _export_comparison(cmp: Comparison, *, outdir, xlsx, png_dir, html) -> list[Path]:
    from dcplan.export.charts import write_comparison_charts

    out: list[Path] = []
    if outdir is not None:
        outdir = Path(outdir)
        xlsx = xlsx or outdir / "comparison.xlsx"
        png_dir = png_dir or outdir / "charts"
        html = html or outdir / "comparison.html"
        out.append(write_csv(cmp.kpis, outdir / "kpis.csv"))
    if xlsx is not None:
        out.append(write_comparison_workbook(cmp, xlsx))
    if png_dir is not None:
        ok = [(r, n) for r, n in zip(cmp.results, cmp.names, strict=True) if r.tables]
        out += write_comparison_charts([r for r, _ in ok], [n for _, n in ok], png_dir)
    if html is not None:
        from dcplan.export.html import write_compare_html

        out.append(write_compare_html(cmp, html))
    cmp.files = out
    return out
