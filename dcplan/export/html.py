"""One self-contained HTML report of a plan or of a comparison, for a committee.

:func:`write_html` (one plan) and :func:`write_compare_html` (a comparison) write a
single file that needs nothing else to open or print: the charts are embedded as PNG
data, the style sheet is inline, there is no script, and a Content-Security-Policy
forbids loading anything from elsewhere. The report leads with the headline (what to
buy, where and when, what limits the plan, what it costs), then the key figures, the
charts and the tables a decision needs; every result table follows, folded, as an
appendix. Figures are the planner's, rounded as in the CSV files and the workbook
(:func:`dcplan.tableio.tidy_table`); user text is escaped.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dcplan.export.files import atomic_file
from dcplan.export.labels import (
    category_label,
    format_number,
    header,
    kpi_format,
    kpi_label,
    kpi_meaning,
    kpi_unit,
    number_format,
    unit_of,
)
from dcplan.export.views import (
    hosting_sites,
    operations_counted,
    outcome_sentence,
    periods,
    stack_categories,
    terminal_credit,
)
from dcplan.planner.analysis import PRICE_BASIS, binding_rows, quoted_price
from dcplan.planner.cashflow import api_return_text, terminal_note
from dcplan.planner.plan_result import POWER_BASIS_LABEL, time_to_power_line
from dcplan.planner.sizing import IN_RACK, OWN
from dcplan.planner.solver import format_gap
from dcplan.planner.tables import IT_MEANS
from dcplan.tableio import tidy_table

#: Key figures shown as cards at the top of a plan report (in this order).
CARD_KPIS = ("npv_cost_usd", "capex_usd", "opex_usd", "usd_per_million_tokens",
             "usd_per_million_tokens_annualised", "peak_facility_mw", "racks_bought",
             "pue_annual", "pue_peak", "utilisation_frac", "carbon_t")

#: Appendix: result tables of a plan, in order, with their titles.
APPENDIX = (("kpis", "Key figures"), ("fleet", "Fleet by period, site and rack type"),
            ("power", "Power by site and period"), ("cooling", "Cooling by site and period"),
            ("network", "Network by site, rack type and period"),
            ("costs", "Costs by category and period"),
            ("cashflow", "Cash flow, depreciation and annualised cost by period"),
            ("build_vs_buy", "Build vs buy: every comparable API"),
            ("demand", "Demand and service"),
            ("allocation", "Allocation of racks to workloads at peak"),
            ("unserved", "Unserved demand"), ("shadow_prices", "Shadow prices"),
            ("binding", "Binding limits"), ("equipment", "Equipment at each site's peak"),
            ("sizing", "Exact sizing vs the plan"))

CSS = """
:root { --ink: #1d2733; --muted: #5b6775; --line: #d5dbe3; --head: #e8eef5;
        --accent: #1f5f99; --warn: #9a3b00; }
* { box-sizing: border-box; }
body { font-family: "Segoe UI", "Helvetica Neue", Arial, "DejaVu Sans", sans-serif;
       color: var(--ink); margin: 0 auto; max-width: 1180px; padding: 24px 28px 48px;
       font-size: 15px; line-height: 1.45; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 28px 0 8px; padding-bottom: 3px;
     border-bottom: 2px solid var(--accent); break-after: avoid; }
h3 { font-size: 16px; margin: 18px 0 6px; break-after: avoid; }
p, li { max-width: 80em; }
.lead { color: var(--muted); margin: 0 0 12px; }
.outcome { border-left: 4px solid var(--accent); background: #f4f7fb; padding: 8px 14px;
           margin: 12px 0; }
.outcome.warn { border-color: var(--warn); background: #fdf3ec; }
.headline li { margin: 3px 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr));
         gap: 10px; margin: 10px 0 4px; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px;
        break-inside: avoid; }
.card .k { color: var(--muted); font-size: 13px; }
.card .v { font-size: 21px; font-weight: 600; font-variant-numeric: tabular-nums; }
.card .u { color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; margin: 6px 0 14px; font-size: 13px;
        font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 8px; vertical-align: top; }
th { background: var(--head); text-align: left; font-weight: 600; }
td.num, th.num { text-align: right; }
td.num { white-space: nowrap; }
th { white-space: normal; min-width: 4em; }
tr.total td { font-weight: 600; border-top: 2px solid var(--ink); }
.wide { overflow-x: auto; }
figure { margin: 12px 0 18px; break-inside: avoid; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: 13px; margin-top: 4px; max-width: 80em; }
details { margin: 6px 0; }
summary { cursor: pointer; font-weight: 600; }
.note { color: var(--muted); font-size: 13px; }
footer { margin-top: 32px; color: var(--muted); font-size: 12px;
         border-top: 1px solid var(--line); padding-top: 6px; }
@page { size: A4; margin: 14mm 12mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  .wide { overflow: visible; }
  table { font-size: 8.5pt; }
  .cards { grid-template-columns: repeat(3, 1fr); }
  details.appendix { display: none; }
  .screen-only { display: none; }
  a { color: inherit; text-decoration: none; }
}
@media screen { .print-only { display: none; } }
"""

#: Nothing may load from elsewhere: images only from data: URLs, no script at all.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


# ----------------------------------------------------------------------------------------
# Pieces
# ----------------------------------------------------------------------------------------


def esc(text: Any) -> str:
    """User or data text escaped for HTML."""
    return html.escape("" if text is None else str(text), quote=True)


def money(usd: float | None) -> str:
    """An amount in million USD, e.g. ``2,743.7 million USD``."""
    if usd is None or usd != usd:
        return "-"
    return f"{usd / 1e6:,.1f} million USD"


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("dcplan")
    except Exception:  # noqa: BLE001 - the version is decoration only
        return ""


def figure_html(png: bytes, alt: str, caption: str = "") -> str:
    """A figure with an embedded PNG (data URL) and a caption."""
    data = base64.b64encode(png).decode("ascii")
    cap = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
    return (f'<figure><img alt="{esc(alt)}" src="data:image/png;base64,{data}">'
            f"{cap}</figure>")


def _equipment_view(eq: pd.DataFrame) -> pd.DataFrame:
    """The equipment table as the report shows it, with each line's purchase.

    The report's equipment table has no totals, so the in-rack lines (the NICs) keep
    their kW and USD in the same columns, marked ``in_rack`` and said in the caption to
    be inside the rack's price and IT power; the bill of materials (CSV, workbook) sets
    them apart (:func:`~dcplan.planner.sizing.set_apart_in_rack`) so that no total holds
    them. Two more columns would not fit the page width.

    Parameters
    ----------
    eq : DataFrame
        The plan's ``equipment`` table (with its ``in_rack`` column) [see its units].

    Returns
    -------
    DataFrame
        The same rows with ``purchase`` after ``catalog_id`` instead of ``in_rack``
        [see its units].
    """
    inside = eq.in_rack.astype(bool)
    out = eq.drop(columns="in_rack")
    out.insert(list(out.columns).index("catalog_id") + 1, "purchase",
               inside.map({True: IN_RACK, False: OWN}))
    out.attrs = dict(eq.attrs)
    return out


def table_html(df: pd.DataFrame, *, table: str | None = None, tidy: bool = True,
               formats: dict[str, str] | None = None, total_row: dict[str, Any] | None = None,
               headers: dict[str, str] | None = None, caption: str = "",
               right: Sequence[str] = ()) -> str:
    """An HTML table of ``df`` with headers in words and units, numbers right-aligned.

    Parameters
    ----------
    df : DataFrame
        A result table (units in ``attrs``) or a small table made here.
    table : str, optional
        Result-table name (for its column labels).
    tidy : bool
        Round as the CSV files and the workbook do (:func:`dcplan.tableio.tidy_table`).
    formats : dict, optional
        Column -> Excel number format (default from the column's unit).
    total_row : dict, optional
        Column -> value of a bold last row.
    headers : dict, optional
        Column -> header text (default :func:`dcplan.export.labels.header`).
    caption : str
    right : sequence of str
        Text columns shown right-aligned (figures already formatted as text).
    """
    if tidy:
        df = tidy_table(df)
    cols = list(df.columns)
    fmts = {}
    numeric = {}
    for c in cols:
        s = df[c]
        is_num = (pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)) \
            or (s.dtype == object and len(s) and all(
                isinstance(v, int | float) and not isinstance(v, bool)
                for v in s if v is not None and v == v))
        numeric[c] = bool(is_num) and c != "period"
        fmts[c] = (formats or {}).get(c) or number_format(
            unit_of(df, c), c, integer=pd.api.types.is_integer_dtype(s)
            and not pd.api.types.is_bool_dtype(s))
    heads = "".join(
        f'<th{" class=num" if numeric[c] or c in right else ""}>'
        f"{esc((headers or {}).get(c) or header(df, c, table))}</th>" for c in cols)
    rows = []
    for rec in df.itertuples(index=False, name=None):
        cells = []
        for c, v in zip(cols, rec, strict=True):
            if numeric[c]:
                cells.append(f'<td class="num">{esc(format_number(v, fmts[c]))}</td>')
            else:
                cls = ' class="num"' if c in right else ""
                if isinstance(v, bool):
                    v = "yes" if v else "no"
                cells.append(f"<td{cls}>{esc('' if v is None or v != v else v)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    if total_row:
        cells = []
        for c in cols:
            v = total_row.get(c)
            if v is None:
                cells.append("<td></td>")
            elif numeric[c] and not isinstance(v, str):
                cells.append(f'<td class="num">{esc(format_number(v, fmts[c]))}</td>')
            else:
                cells.append(f"<td>{esc(v)}</td>")
        rows.append('<tr class="total">' + "".join(cells) + "</tr>")
    cap = f"<caption class=note>{esc(caption)}</caption>" if caption else ""
    body = "".join(rows) if rows else (f'<tr><td colspan="{max(len(cols), 1)}" class="note">'
                                       "(none)</td></tr>")
    return (f'<div class="wide"><table>{cap}<thead><tr>{heads}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _page(title: str, body: Iterable[str]) -> str:
    from dcplan.outputset import current_stamp

    stamp = dt.date.today().isoformat()
    ver = _version()
    run = current_stamp()  # the run whose outputs this report belongs to (outputs.md)
    run_meta = (f'<meta name="dcplan-run" content="{esc(json.dumps(run.as_dict()))}">'
                if run is not None else "")
    run_text = f" Run {esc(run.run_id[:12])}." if run is not None else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"{run_meta}<title>{esc(title)}</title><style>{CSS}</style></head><body>"
            + "".join(body)
            + f"<footer>Written by dcplan{' ' + esc(ver) if ver else ''} on {stamp}.{run_text} "
              "Every figure is the planner's, rounded for reading (money to the cent, power "
              "to the watt). One self-contained file: it opens and prints without a network."
              "</footer></body></html>\n")


def _kpis(result: Any) -> dict[str, float | None]:
    k = result.tables.get("kpis")
    if k is None:
        return {}
    return {r.kpi: (None if r.value != r.value else float(r.value)) for r in k.itertuples()}


def kpi_text(kpi: str, value: float | None) -> str:
    """A KPI value formatted as in the workbook."""
    return format_number(value, kpi_format(kpi)) if value is not None else "-"


def _cards(kpis: dict[str, float | None]) -> str:
    out = []
    for k in CARD_KPIS:
        if k not in kpis:
            continue
        v = kpis[k]
        unit = kpi_unit(k)
        if k in ("npv_cost_usd", "capex_usd", "opex_usd") and v is not None:
            shown, unit = f"{v / 1e6:,.1f}", "million " + unit
        else:
            shown = kpi_text(k, v)
        out.append(f'<div class="card"><div class="k">{esc(kpi_label(k))}</div>'
                   f'<div class="v">{esc(shown)}</div><div class="u">{esc(unit)}</div></div>')
    return '<div class="cards">' + "".join(out) + "</div>"


def _span(years: Sequence[Any]) -> str:
    ys = [str(y) for y in years]
    if not ys:
        return ""
    return ys[0] if len(ys) == 1 else f"{ys[0]}-{ys[-1]}"


# ----------------------------------------------------------------------------------------
# One plan
# ----------------------------------------------------------------------------------------


def headline(result: Any) -> list[str]:
    """The plan in a few sentences (HTML list items, user text escaped).

    What to buy where and when, the load against the grid, what limits the plan and
    what it costs.
    """
    t = result.tables
    kpis = _kpis(result)
    items = []
    fleet = t.get("fleet")
    if fleet is not None and len(fleet):
        bought = fleet[fleet.new_racks > 0]
        total = int(round(bought.new_racks.sum()))
        parts = []
        order = bought.groupby(["site", "rack"], sort=False).new_racks.sum().sort_values(
            ascending=False)
        for (site, rack), n in order.head(6).items():
            yrs = list(dict.fromkeys(bought[(bought.site == site) & (bought.rack == rack)]
                                     .period))
            parts.append(f"{int(round(n)):,} {esc(rack)} at {esc(site)} ({esc(_span(yrs))})")
        more = f"; and {len(order) - 6} more site and rack combinations" if len(order) > 6 \
            else ""
        ps = periods(result)
        items.append(f"<b>Buy {total:,} racks</b> over {esc(_span(ps))}: "
                     + "; ".join(parts) + more + ".")
        retired = int(round(fleet.retired_racks.sum()))
        existing = 0
        if result.inputs is not None:
            existing = sum(e.count for e in getattr(result.inputs, "existing", []))
        if retired or existing:
            items.append(f"Existing racks at the start: {existing:,}; racks retired over the "
                         f"horizon: {retired:,}.")
    power = t.get("power")
    if power is not None and len(power):
        by_period = power.groupby("period", sort=False)[["facility_kw_peak", "grid_kw"]].sum()
        peak_p = by_period.facility_kw_peak.idxmax()
        # the sites that draw power in the peak period (a site emptied earlier is not one)
        at_peak = power[(power.period == peak_p) & (power.facility_kw_peak > 0)]
        hosting = [s for s in hosting_sites(result) if s in set(at_peak.site)]
        grid_hosting = at_peak.grid_kw.sum()
        items.append(f"<b>Peak facility power {by_period.facility_kw_peak.max() / 1000:,.1f} MW"
                     f"</b> in {esc(peak_p)} at {len(hosting)} site"
                     f"{'s' if len(hosting) != 1 else ''} "
                     f"({esc(', '.join(hosting))}), against {grid_hosting / 1000:,.1f} MW of "
                     f"grid there: IT power ({IT_MEANS}) "
                     f"{kpi_text('peak_it_mw', kpis.get('peak_it_mw'))} MW x PUE at the peak "
                     f"hour {kpi_text('pue_peak', kpis.get('pue_peak'))}; PUE, annual "
                     f"(energy-weighted) {kpi_text('pue_annual', kpis.get('pue_annual'))}.")
    items.append(f"<b>{POWER_BASIS_LABEL}</b>: {esc(result.power_basis)}.")
    b = binding_rows(t.get("binding"))
    if b is not None and len(b):
        parts = []
        for rec in b.head(3).itertuples():
            sp, kind = quoted_price(rec)
            price = (f": one more unit would save {sp:,.0f} {esc(rec.shadow_unit)} "
                     f"{PRICE_BASIS[kind]}" if sp is not None else "")
            parts.append(f"{esc(rec.limit)} at {esc(rec.site)} in {esc(rec.period)} "
                         f"({format_number(rec.value, '#,##0.#')} {esc(rec.unit)}){price}")
        more = f" ({len(b) - 3} more in the table below)" if len(b) > 3 else ""
        items.append("<b>What limits the plan</b>: " + "; ".join(parts) + more + ".")
    else:
        items.append("<b>What limits the plan</b>: no site limit has a positive shadow "
                     "price; cost alone decides.")
    if kpis:
        credit, when = terminal_credit(t.get("costs"), discounted=True)
        net = (f", net of a terminal-value credit of {money(-credit)} (present value of the "
               f"book value left at the end of {esc(when)})" if credit else "")
        items.append(f"<b>NPV of all costs {money(kpis.get('npv_cost_usd'))}</b>{net}; capex "
                     f"{money(kpis.get('capex_usd'))}, opex {money(kpis.get('opex_usd'))}"
                     + (f", staff and software {money(kpis.get('staff_software_usd'))}"
                        if kpis.get("staff_software_usd") else "")
                     + " (undiscounted); levelised cost "
                     f"{kpi_text('usd_per_million_tokens', kpis.get('usd_per_million_tokens'))} "
                     "USD per million tokens"
                     + (f", annualised {kpi_text('usd_per_million_tokens_annualised', an)} "
                        "over the horizon (no terminal credit; by period under Cash flow)"
                        if (an := kpis.get("usd_per_million_tokens_annualised")) is not None
                        else "") + ".")
        note = terminal_note(kpis.get("terminal_value_frac"))
        if note:
            items.append(f"<b>Terminal value</b>: {esc(note)}")
    if result.unserved:
        items.append(f"<b>Demand NOT fully met</b>: up to "
                     f"{kpi_text('unserved_tokens_per_s_peak_max', kpis.get('unserved_tokens_per_s_peak_max'))}"  # noqa: E501
                     " tokens/s at peak are not served (see Unserved demand).")
    return items


def _pivot_purchases(result: Any) -> pd.DataFrame:
    fleet = tidy_table(result.tables["fleet"])
    fleet = fleet.assign(col=fleet.site + " · " + fleet.rack)
    new = fleet.pivot_table(index="period", columns="col", values="new_racks", aggfunc="sum",
                            sort=False).fillna(0).astype(int)
    inst = fleet.pivot_table(index="period", columns="col", values="installed_racks",
                             aggfunc="sum", sort=False).fillna(0).astype(int)
    ps = [p for p in (tidy_table(pd.DataFrame({"period": periods(result)})).period)
          if p in new.index]
    out = pd.DataFrame({"period": ps})
    for c in new.columns:
        out[c] = [f"{inst.loc[p, c]:,}" + (f" (+{new.loc[p, c]:,})" if new.loc[p, c] else "")
                  for p in ps]
    out["Total in service"] = [f"{int(inst.loc[p].sum()):,}" for p in ps]
    out["Total new"] = [int(new.loc[p].sum()) for p in ps]
    return out


def _pivot_power(result: Any) -> pd.DataFrame:
    power = tidy_table(result.tables["power"])
    sites = hosting_sites(result)
    ps = list(dict.fromkeys(power.period))
    out = pd.DataFrame({"period": ps})
    for s in sites:
        sub = power[power.site == s].set_index("period")
        out[s] = [f"{sub.loc[p, 'facility_kw_peak'] / 1000:,.1f} / "
                  f"{sub.loc[p, 'grid_kw'] / 1000:,.1f}" if p in sub.index else "" for p in ps]
    tot = power[power.site.isin(sites)].groupby("period", sort=False).facility_kw_peak.sum()
    out["Total facility [MW]"] = [tot.get(p, 0.0) / 1000 for p in ps]
    return out


def _pivot_costs(result: Any) -> tuple[pd.DataFrame, dict[str, Any]]:
    costs = tidy_table(result.tables["costs"])
    stacked, apart = stack_categories(result.tables["costs"])
    ps = list(dict.fromkeys(costs.period))
    rows = []
    for cat in stacked + apart:
        sub = costs[costs.category == cat].groupby("period").cost_usd.sum() / 1e6
        row = {"Cost category": category_label(cat)}
        row.update({str(p): float(sub.get(p, 0.0)) for p in ps})
        row["Total"] = float(sub.sum())
        rows.append(row)
    df = pd.DataFrame(rows)
    total = {"Cost category": "Total, undiscounted"}
    total.update({str(p): float(costs[costs.period == p].cost_usd.sum() / 1e6) for p in ps})
    total["Total"] = float(costs.cost_usd.sum() / 1e6)
    return df, total


def build_html(result: Any, sources: Any = None) -> str:
    """The HTML report of one plan (see :func:`write_html`)."""
    from dcplan.export.charts import OPTIONAL_PLAN_CHARTS, PLAN_CHARTS, figure_png, plan_figures

    t = result.tables
    name = result.name
    desc = getattr(getattr(sources, "scenario", None), "description", "") or ""
    body = [f"<h1>dcplan plan: {esc(name)}</h1>"]
    if desc:
        body.append(f'<p class="lead">{esc(desc)}</p>')
    path = getattr(sources, "path", None)
    warn = " warn" if result.unserved or not result.status.has_solution else ""
    body.append(f'<div class="outcome{warn}"><b>Outcome:</b> {esc(outcome_sentence(result))}'
                f' <span class="note">(solver {esc(result.solver)}, status '
                f"{esc(result.status.value)}"
                + (f", relative gap {format_gap(result.gap)}" if result.gap is not None else "")
                + (f"; scenario file {esc(path)}" if path else "") + ")</span></div>")
    if not result.status.has_solution or not t:
        body.append(f"<p>{esc(result.message)}</p>")
        return _page(f"dcplan plan: {name}", body)
    body.append("<h2>Headline</h2><ul class=headline>"
                + "".join(f"<li>{item}</li>" for item in headline(result)) + "</ul>")
    kpis = _kpis(result)
    body.append("<h2>Key figures</h2>" + _cards(kpis))
    rows = pd.DataFrame([{"KPI": kpi_label(k), "Value": kpi_text(k, v), "Unit": kpi_unit(k),
                          "What it means": kpi_meaning(k)} for k, v in kpis.items()])
    body.append("<details open><summary>All key figures with their meaning</summary>"
                + table_html(rows, tidy=False, headers={c: c for c in rows.columns},
                             right=["Value"])
                + "</details>")

    figs = plan_figures(result)
    captions = {
        PLAN_CHARTS[0]: "Facility power (IT + cooling + network + losses) at the peak hour of "
                        "each site that hosts racks; dashed: the site's grid limit (a triangle "
                        "at the top edge: a limit above the axis, with its value in MW)."
                        + (" Where storage or on-site generation carry part of the peak, the "
                           "facility may stand above the grid limit: the chart Power sources "
                           "shows what the grid carries."
                           if len(result.tables.get("sources", ())) else ""),
        PLAN_CHARTS[1]: "Racks in service by type, all sites.",
        PLAN_CHARTS[2]: "Capex and opex as paid in each period (undiscounted), by category; "
                        "the terminal-value credit (book value of the assets still in service "
                        "at the end) is shown apart.",
        PLAN_CHARTS[3]: "Cash cost per million tokens served in each period; dotted: the "
                        "plan's levelised cost.",
        OPTIONAL_PLAN_CHARTS[0]: "Where the power comes from at the grid's peak hour of each "
                                 "site with storage or on-site generation (summed over "
                                 "them): the grid, the battery's net discharge and the "
                                 "on-site generation.",
    }
    body.append("<h2>Charts</h2>")
    for fname in [*PLAN_CHARTS, *(n for n in OPTIONAL_PLAN_CHARTS if n in figs)]:
        body.append(figure_html(figure_png(figs.pop(fname), dpi=120),
                                fname.removesuffix(".png").replace("_", " "),
                                captions[fname]))

    body.append("<h2>What to buy, where and when</h2>")
    if "fleet" in t and len(t["fleet"]):
        pur = _pivot_purchases(result)
        body.append(table_html(pur, tidy=False,
                               headers={c: ("Period" if c == "period" else c)
                                        for c in pur.columns},
                               right=[c for c in pur.columns if c != "period"],
                               caption="Racks in service by site · rack type, "
                                       "new racks of the period in brackets [racks]."))
    eq = t.get("equipment")
    pw_t = t.get("power")
    if eq is not None and len(eq) and pw_t is not None and len(pw_t):
        busy = pw_t[pw_t.it_kw_peak > 0]
        peaks = {(s_, sub.loc[sub.it_kw_peak.idxmax(), "period"])  # each site's peak period
                 for s_, sub in busy.groupby("site")}
        eq = eq[[(s_, p_) in peaks for s_, p_ in zip(eq.site, eq.period, strict=True)]]
    if eq is not None and len(eq):
        body.append("<h3>Equipment of each site at its peak period</h3>"
                    + table_html(_equipment_view(eq), table="bom",
                                 caption="Switches, optics, NICs, the plan's CDUs, heat-"
                                         "rejection plant, air handlers, UPS and generators. "
                                         "Purchase 'in_rack': inside the rack's price and IT "
                                         "power (the NICs), its kW and capex shown as "
                                         "information, not to be added; 'own': bought on "
                                         "its own."))
    if "power" in t and len(t["power"]):
        pw = _pivot_power(result)
        body.append("<h2>Power against the grid</h2>"
                    + table_html(pw, tidy=False,
                                 headers={c: ("Period" if c == "period" else c
                                              if c.startswith("Total") else f"{c} [MW]")
                                          for c in pw.columns},
                                 formats={"Total facility [MW]": "#,##0.0"},
                                 right=[c for c in pw.columns if c != "period"],
                                 caption="Facility power at peak / grid limit, by site "
                                         "hosting racks [MW]."
                                 + (" Storage and on-site generation carry part of it: "
                                    "what the grid carries is under Power sources."
                                    if "sources" in t and len(t["sources"]) else "")))
    if "caps" in t and len(t["caps"]):
        body.append("<h2>Power caps chosen</h2>"
                    + table_html(t["caps"], table="caps",
                                 caption="Racks in service at each power cap level (fraction "
                                         "of the accelerators' max power), the power a rack "
                                         "can draw there, the tokens/s served at peak, and "
                                         "per site the racks and tokens/s per MW of facility "
                                         "peak."))
    if "sources" in t and len(t["sources"]):
        body.append("<h2>Power sources: grid, battery and on-site generation</h2>"
                    + table_html(t["sources"], table="sources",
                                 caption="Per site and period: the grid's peak and, in that "
                                         "hour, the facility load, the battery's net "
                                         "discharge and the on-site generation; capacity in "
                                         "service; energy over the period; the generation's "
                                         "carbon and fuel."))
    grid = t.get("grid")
    if grid is not None and "flexible_kw" in grid.columns and len(grid):
        body.append("<h2>Grid connections: firm and flexible</h2>"
                    + table_html(grid[["period", "site", "connectable_kw", "connected_kw",
                                       "used_kw", "requested_flex_kw", "flexible_kw",
                                       "curtailed_kw", "curtailment_hours",
                                       *(["deferred_tokens"] if "deferred_tokens"
                                         in grid.columns else [])]], table="grid",
                                 caption="Per site and period: the MW the grid can give "
                                         "firm (connectable), connected (firm and flexible) "
                                         "and used; the flexible (curtailable) MW requested "
                                         "and connected, the MW a curtailment event cuts, "
                                         "the allowance in hours a year (all of it "
                                         "assumed used) and the tokens a year flexible "
                                         "work waits out of the events (served later, "
                                         "none dropped). Every column: the workbook's Grid "
                                         "sheet."))
    line = time_to_power_line(t)
    if line:
        body.append(f"<p>{esc(line)}.</p>")
    if "power_oversubscription" in t and len(t["power_oversubscription"]):
        body.append("<h2>Power oversubscription</h2>"
                    + table_html(t["power_oversubscription"], table="power_oversubscription",
                                 caption="Each oversubscribed site provisions its factor "
                                         "times its racks' IT power at the power basis, with "
                                         "power capping as the safety net: the share of the "
                                         "year the fleet's draw would exceed the provision, "
                                         "the tokens capping costs, and the tokens/s the plan "
                                         "counted against demand."))
    body.append("<h2>Why: the limits that bind</h2>")
    b = binding_rows(t.get("binding"))
    if b is not None and len(b):
        body.append(table_html(b, table="binding",
                               caption="Ranked; the shadow price is what one more unit of the "
                                       "limit would save (integers fixed: the chosen racks "
                                       "kept; LP relaxation: rack counts free)."))
    else:
        body.append("<p>No site limit has a positive shadow price: the plan is shaped by "
                    "cost alone.</p>")
    un = t.get("unserved")
    if un is not None and len(un):
        body.append("<h3>Unserved demand</h3>" + table_html(un, table="unserved"))
    if "costs" in t and len(t["costs"]):
        cost, total = _pivot_costs(result)
        fmts = {c: "#,##0.0" for c in cost.columns if c != "Cost category"}
        body.append("<h2>What it costs</h2>"
                    + table_html(cost, tidy=False, formats=fmts, total_row=total,
                                 headers={c: c for c in cost.columns},
                                 caption="Costs by category and period, undiscounted "
                                         "[million USD]; the terminal value is a credit at the "
                                         "end of the horizon."))
        body.append(f"<p>NPV of all costs (discounted, net of the terminal-value credit): "
                    f"<b>{money(kpis.get('npv_cost_usd'))}</b>.</p>")
    body += _cashflow_html(result)
    body += _buy_html(result)
    if result.notes:
        body.append("<h2>Notes</h2><ul>" + "".join(f"<li>{esc(n)}</li>" for n in result.notes)
                    + "</ul>")
    body.append('<h2 class="screen-only">Appendix: every result table</h2>'
                '<p class="print-only note">The appendix tables are in the workbook and the '
                "CSV files.</p>")
    for key, title in APPENDIX:
        df = t.get(key)
        if df is None:
            continue
        body.append(f'<details class="appendix"><summary>{esc(title)} ({len(df)} rows)'
                    f"</summary>{table_html(df, table=key)}</details>")
    if sources is not None:
        from dcplan.export.sources import assumptions_table, equipment_ids

        assum = assumptions_table(sources, result.inputs, equipment_ids(result.tables),
                                  result.power_basis)
        assum.attrs["units"] = {}
        body.append('<details class="appendix"><summary>Assumptions: every input figure with '
                    f"unit, source and date ({len(assum)} rows)</summary>"
                    + table_html(assum, tidy=False,
                                 headers={c: c.replace("_", " ").capitalize()
                                          for c in assum.columns},
                                 formats={"value": "#,##0.######"})
                    + "</details>")
    return _page(f"dcplan plan: {name}", body)


#: Columns of the cash-flow table shown in the report [million USD or USD per Mtok].
CASHFLOW_SHOWN = {
    "period": "Period", "capex_usd": "Capex", "opex_usd": "Opex",
    "staff_software_usd": "Staff + software", "depreciation_usd": "Depreciation",
    "book_value_usd": "Book value (end)", "usd_per_million_tokens_annualised":
    "Annualised USD/Mtok", "usd_per_million_tokens_cash": "Cash USD/Mtok",
    "api_usd": "API spend avoided", "cumulative_net_cash_flow_usd": "Cumulative net vs API",
}


def _cashflow_html(result: Any) -> list[str]:
    """Cash flow by period, the annualised cost per token, payback and IRR vs the API."""
    cf = result.tables.get("cashflow")
    if cf is None or not len(cf):
        return []
    kpis = _kpis(result)
    view = cf[list(CASHFLOW_SHOWN)].copy()
    money_cols = [c for c in CASHFLOW_SHOWN if c.endswith("_usd")]
    view[money_cols] = view[money_cols] / 1e6
    view["period"] = view.period.astype(str)
    view = view.rename(columns=CASHFLOW_SHOWN)
    fmts = {CASHFLOW_SHOWN[c]: "#,##0.0" for c in money_cols}
    fmts.update({CASHFLOW_SHOWN[c]: "0.0000" for c in ("usd_per_million_tokens_annualised",
                                                       "usd_per_million_tokens_cash")})
    out = ["<h2>Cash flow and return</h2>" + table_html(
        view, tidy=False, formats=fmts, headers={c: c for c in view.columns},
        caption="Undiscounted, million USD (per million tokens where it says USD/Mtok). Opex: "
                "energy, demand charges, carbon, maintenance. Depreciation straight line over "
                "each purchase's life; the last book value is the terminal value. Annualised: "
                "capital recovery of each purchase over its life at the discount rate + opex "
                "+ staff and software, over the tokens served in the period; cash: what is "
                "paid in the period over its tokens. API spend avoided: the tokens served at "
                "each workload's cheapest comparable API.")]
    text = api_return_text(kpis, cf)
    if text:
        out.append(f"<p>{esc(text)}</p>")
    return out


#: Columns of the build-vs-buy table shown in the report (the rest are in the appendix).
BUY_SHOWN = ["api", "provider", "workload", "comparison", "api_usd_per_mtok",
             "plan_usd_per_mtok", "reserve_usd_per_mtok", "saving_frac", "cheaper",
             "break_even_demand_frac", "break_even_utilisation_frac", "as_of"]


def _buy_html(result: Any) -> list[str]:
    """Build or buy: the API cost of the plan's tokens, the break-even, energy per request."""
    t = result.tables
    out: list[str] = []
    buy = t.get("build_vs_buy")
    kpis = _kpis(result)
    if buy is not None and len(buy):
        cheapest = buy[buy.workload != "(all)"].sort_values("api_usd_per_mtok")
        lines = []
        for w, sub in cheapest.groupby("workload", sort=False):
            r = sub.iloc[0]
            be = r.break_even_demand_frac
            lines.append(
                f"<li><b>{esc(w)}</b>: the plan serves it at {r.plan_usd_per_mtok:.4f} USD "
                f"per million tokens; the cheapest comparable API ({esc(r.api)}, "
                f"{esc(r.comparison)}) costs {r.api_usd_per_mtok:.4f}, so "
                f"<b>{'building' if r.cheaper == 'build' else 'buying'} is cheaper</b>"
                + ("" if be is None or be != be else
                   f"; building wins above {be:.0%} of the planned demand") + ".</li>")
        out.append("<h2>Build or buy?</h2><ul>" + "".join(lines) + "</ul>")
        if kpis.get("reserve_cost_usd") is not None:
            out.append(f"<p>Capacity held in reserve (serving headroom, availability derate, "
                       f"N+k spares): {kpis.get('reserve_frac') or 0:.0%} of the racks in "
                       f"service, {money(kpis.get('reserve_cost_usd'))} present value "
                       f"({kpis.get('reserve_cost_frac') or 0:.0%} of the NPV); the plan's "
                       + ("cost includes operations staff and software (see the costs)."
                          if operations_counted(t.get("costs")) else
                          "cost has no operations staff or software (the scenario does not "
                          "count them: economics.operations_costs).") + "</p>")
        out.append(table_html(buy[BUY_SHOWN], table="build_vs_buy",
                              caption="The served token mix of each workload (input/output "
                                      "split, prompt-cache hits) bought from each comparable "
                                      "API, against the plan's levelised cost; break-even with "
                                      "the planned fleet's fixed costs."))
    req = t.get("requests")
    if req is not None and len(req):
        out.append("<h3>Energy per request</h3>" + table_html(
            req, table="requests", caption="Facility energy (IT, network, cooling, power "
            "losses, idle and reserve racks) per request of each workload's mean length."))
    return out


def write_html(result: Any, path: Path | str, sources: Any = None) -> Path:
    """Write the self-contained HTML report of one plan to ``path`` atomically.

    Parameters
    ----------
    result : PlanResult
    path : path
        Target ``.html`` file (temporary file + rename).
    sources : Case, optional
        Scenario, catalogs and sites (default: the case the plan was solved from): the
        description and the assumptions appendix.

    Returns
    -------
    Path
    """
    text = build_html(result, sources if sources is not None else getattr(result, "case", None))
    path = Path(path)
    with atomic_file(path, suffix=".html") as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------------------
# Comparison
# ----------------------------------------------------------------------------------------


def build_compare_html(cmp: Any) -> str:
    """The HTML report of a comparison (see :func:`write_compare_html`)."""
    from dcplan.export.charts import COMPARISON_CHARTS, comparison_figures, figure_png

    names, base = cmp.names, cmp.baseline
    others = [n for n in names if n != base]
    title = f"dcplan comparison: {', '.join(names)}"
    body = [f"<h1>{esc(title)}</h1>",
            f'<p class="lead">Baseline: {esc(base)}. Deltas are scenario - baseline.</p>']
    kp = {rec["kpi"]: rec for rec in cmp.kpis.to_dict("records")}
    items = []
    npv = kp.get("npv_cost_usd")
    if npv is not None:
        items.append(f"<b>{esc(base)}</b> (baseline): NPV of all costs {money(npv[base])}.")
        for n in others:
            d = npv.get(cmp.delta_col(n))
            b = npv[base]
            if d is None or b in (None, 0):
                items.append(f"<b>{esc(n)}</b>: NPV {money(npv[n])}.")
                continue
            word = "lower" if d < 0 else "higher"
            items.append(f"<b>{esc(n)}</b>: NPV {money(npv[n])}, {money(abs(d))} "
                         f"({abs(d) / b:.1%}) {word} than {esc(base)}.")
    for rec in cmp.status.to_dict("records"):
        if rec["unserved"] or rec["status"] != "optimal":
            items.append(f"<b>{esc(rec['scenario'])}</b>: {esc(rec['outcome'])}.")
    body.append("<h2>Headline</h2><ul class=headline>"
                + "".join(f"<li>{i}</li>" for i in items) + "</ul>")

    rows = []
    for rec in tidy_table(cmp.kpis).to_dict("records"):
        k = rec["kpi"]
        row = {"KPI": kpi_label(k), "Unit": kpi_unit(k, rec["unit"])}
        for n in names:
            row[n] = kpi_text(k, rec[n])
        for n in others:
            d, b = rec[cmp.delta_col(n)], rec[base]
            row[f"Delta {n}"] = "-" if d is None else (
                ("+" if d > 0 else "") + kpi_text(k, d))
            row[f"Delta {n} [%]"] = f"{d / b:+.1%}" if d is not None and b not in (None, 0) \
                else "-"
        rows.append(row)
    df = pd.DataFrame(rows)
    num = [c for c in df.columns if c not in ("KPI", "Unit")]
    body.append("<h2>Key figures side by side</h2>"
                + table_html(df, tidy=False, headers={c: c for c in df.columns}, right=num))
    st = cmp.status.assign(gap=[None if g is None or g != g else format_gap(g)
                                for g in cmp.status.gap])
    body.append("<h3>Solver outcome</h3>"
                + table_html(st, tidy=False, headers={
                    "scenario": "Scenario", "status": "Status", "gap": "Relative gap",
                    "solver": "Solver", "unserved": "Demand not met", "outcome": "Outcome",
                    "message": "Message"}))
    ok = [(r, n) for r, n in zip(cmp.results, names, strict=True) if r.tables]
    figs = comparison_figures([r for r, _ in ok], [n for _, n in ok])
    captions = {
        COMPARISON_CHARTS[0]: "Present value of the costs paid by category per scenario; the "
                              "diamond is the NPV (costs net of the terminal-value credit, "
                              "shown apart).",
        COMPARISON_CHARTS[1]: "Facility power at peak of the sites hosting racks, one panel per "
                              "scenario on one scale; dashed: grid limits.",
        COMPARISON_CHARTS[2]: "Cash cost per million tokens per period; dotted: levelised.",
    }
    body.append("<h2>Charts</h2>")
    for fname in COMPARISON_CHARTS:
        body.append(figure_html(figure_png(figs.pop(fname), dpi=120),
                                fname.removesuffix(".png").replace("_", " "),
                                captions[fname]))

    def head(df: pd.DataFrame, table: str | None = None) -> dict[str, str]:
        out = {}
        for c in df.columns:
            if c in names or c.startswith("delta vs "):
                unit = unit_of(df, c)
                text = c if c in names else "Delta" + c[len("delta"):]
                out[c] = f"{text} [{unit}]" if unit else text
            else:
                out[c] = header(df, c, table)
        return out

    body.append("<h2>Racks bought over the horizon</h2>"
                + table_html(cmp.bought, headers=head(cmp.bought)))
    bvb = getattr(cmp, "build_vs_buy", None)
    if bvb is not None and len(bvb):
        cols = ["scenario", "api", "workload", "api_usd_per_mtok", "plan_usd_per_mtok",
                "cheaper", "break_even_demand_frac"]
        body.append("<h2>Build vs buy</h2>" + table_html(
            bvb[bvb.workload != "(all)"][cols], table="build_vs_buy",
            caption="Each plan's levelised cost against every comparable API."))
    body.append("<h2>Binding limits</h2>"
                + table_html(cmp.binding, table="binding", headers=head(cmp.binding, "binding")))
    diff = cmp.fleet_diff
    body.append(f"<h2>Where the fleets differ from {esc(base)}</h2>")
    if len(diff):
        body.append(table_html(diff.head(40), headers=head(diff),
                               caption=f"Racks in service; {len(diff)} (site, rack, period) rows "
                                       "differ" + (", the first 40 shown." if len(diff) > 40
                                                   else ".")))
    else:
        body.append(f"<p>Identical to {esc(base)} in every site, rack and period.</p>")
    return _page(title, body)


def write_compare_html(cmp: Any, path: Path | str) -> Path:
    """Write the self-contained HTML report of a comparison to ``path`` atomically.

    Parameters
    ----------
    cmp : Comparison
        From :func:`dcplan.export.compare.compare_results`.
    path : path

    Returns
    -------
    Path
    """
    text = build_compare_html(cmp)
    path = Path(path)
    with atomic_file(path, suffix=".html") as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path
