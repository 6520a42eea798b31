"""The plan as people read it in a terminal: headline, KPIs, fleet, power, equipment, limits.

:func:`plan_text` renders a :class:`~dcplan.planner.PlanResult` (solved now or read from
a saved plan) to plain text that fits ``width`` columns: numbers right-aligned, the
fleet with existing, new and retired racks, facility MW against the grid, CDUs,
switches, transceivers and capex by year, binding limits with shadow prices, the
marginal cost of demand and the notes. Nothing is recomputed: every figure is one of
the plan's tables.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pandas as pd

from dcplan.export.text import WIDTH, fit_lines, format_table
from dcplan.export.views import bound_sentence, operations_counted
from dcplan.planner.analysis import binding_rows, no_grid_sites, not_buildable_sites
from dcplan.planner.cashflow import ANNUALISED_TEXT, api_return_text, terminal_note
from dcplan.planner.plan_result import POWER_BASIS_LABEL, time_to_power_line
from dcplan.planner.tables import IT_MEANS, LEVELISED_TEXT


def _no_nan(rec: dict) -> dict:
    return {k: (None if isinstance(v, float) and v != v else v) for k, v in rec.items()}


def _site_periods(sites: dict[str, list[str]]) -> str:
    return "; ".join(f"{s} ({', '.join(ps)})" for s, ps in sites.items())


def _n(v: float) -> str:
    return f"{v:,.0f}"


def timing_text(result: Any) -> str:
    """``solved in 1.7 s; 4.6 s in all`` from the result's timings."""
    t = result.timings_s or {}
    solve, total = t.get("solve"), t.get("total")
    if result.saved_from:
        when = result.saved_from.get("created") or "?"
        return f"read from a saved plan of {when}; solved in {solve or 0:.1f} s then"
    if solve is None:
        return f"{total or 0:.1f} s"
    return f"solved in {solve:.1f} s; {total or solve:.1f} s in all"


def _fleet_section(result: Any, width: int) -> list[str]:
    t = result.tables
    fleet = t["fleet"]
    out = ["", "Racks in service by period (+ new, - retired):"]
    if not len(fleet):
        return [*out, "(none)"]
    fleet = fleet.assign(col=fleet.site + "\n" + fleet.rack)
    cols = list(dict.fromkeys(fleet.col))
    rows = []
    for period, sub in fleet.groupby("period", sort=False):
        row: dict[str, Any] = {"period": str(period)}
        for r in sub.itertuples():
            cell = _n(r.installed_racks)
            moves = []
            if r.new_racks > 0.5:
                moves.append(f"+{_n(r.new_racks)}")
            if r.retired_racks > 0.5:
                moves.append(f"-{_n(r.retired_racks)}")
            row[r.col] = cell + (f" ({', '.join(moves)})" if moves else "")
        rows.append(row)
    out.append(format_table(rows, ["period", *cols], width=width))
    case = getattr(result, "case", None)
    existing = list(case.scenario.existing_fleet) if case is not None else []
    if existing:
        out.append("Existing at the start: " + "; ".join(
            f"{e.count:,} x {e.rack} at {e.site} (installed {e.installed})" for e in existing))
    return out


def _power_section(result: Any, width: int) -> list[str]:
    power = result.tables["power"]
    out = ["", "Facility MW at peak / grid MW by site:"]
    hosting = power.groupby("site").facility_kw_peak.max()
    sites = [s for s in dict.fromkeys(power.site) if hosting.get(s, 0) > 0] or \
        list(dict.fromkeys(power.site))
    rows = []
    for period, sub in power.groupby("period", sort=False):
        row: dict[str, Any] = {"period": str(period)}
        for r in sub.itertuples():
            if r.site in sites:
                row[r.site] = f"{r.facility_kw_peak / 1000:.1f} / {r.grid_kw / 1000:.1f}"
        rows.append(row)
    out.append(format_table(rows, ["period", *sites], width=width))
    src = result.tables.get("sources")
    if src is not None and len(src):
        out.append("Storage and on-site generation carry part of the facility peak at "
                   f"{', '.join(dict.fromkeys(src.site))}: what the grid carries is under "
                   "Power sources.")
    idle = [s for s in dict.fromkeys(power.site) if s not in sites]
    if idle:
        out.append(f"Sites hosting nothing: {', '.join(idle)}")
    out += _grid_requests(result, width)
    out += _caps_section(result, width)
    out += _oversub_section(result, width)
    out += _sources_section(result, width)
    return out


def _sources_section(result: Any, width: int) -> list[str]:
    """Power sources per site and period: at the grid's peak hour and in energy.

    Parameters
    ----------
    result : PlanResult
        A plan; nothing is printed without a ``sources`` table (no ``storage`` or
        ``onsite_generation`` offered).
    width : int
        Terminal width [characters].

    Returns
    -------
    list of str
        Lines of the section.
    """
    src = result.tables.get("sources")
    if src is None or not len(src):
        return []
    col = "grid_flexible_kw_at_grid_peak"
    flex = col in src.columns and bool((src[col] > 0).any())
    grid = "grid firm + grid flexible" if flex else "grid"
    out = ["", f"Power sources (MW at the grid's peak hour: {grid} + battery + on-site; energy "
               "GWh: grid / on-site; battery MWh / MW and on-site MW in service):"]
    rows = []
    def mw(kw: float) -> float:
        """MW of a kW figure, without a negative zero [MW]."""
        return kw / 1000 + 0.0
    for r in src.itertuples():
        rows.append({
            "period": str(r.period), "site": r.site,
            "peak MW": (f"{mw(r.grid_kw_peak - getattr(r, col)):.1f} + "
                        f"{mw(getattr(r, col)):.1f}" if flex else f"{mw(r.grid_kw_peak):.1f}")
                       + f" + {mw(r.battery_discharge_kw_at_grid_peak):.1f}"
                       f" + {mw(r.onsite_kw_at_grid_peak):.1f}",
            "GWh": f"{max(0.0, mw(r.grid_mwh)):,.1f} / {mw(r.onsite_mwh):,.1f}",
            "battery": f"{mw(r.battery_kwh):,.1f} / {mw(r.battery_kw):,.1f}",
            "on-site MW": f"{mw(r.onsite_capacity_kw):,.1f}",
            "on-site tCO2": f"{r.onsite_carbon_t:,.0f}"})
    out.append(format_table(rows, ["period", "site", "peak MW", "GWh", "battery",
                                   "on-site MW", "on-site tCO2"], width=width))
    line = time_to_power_line(result.tables)
    if line:
        out.append(line)
    return out


def _caps_section(result: Any, width: int) -> list[str]:
    """Racks at each power cap level by site and period, and each site's yield per MW.

    Parameters
    ----------
    result : PlanResult
        A plan; nothing is printed without a ``caps`` table (no ``power_caps``).
    width : int
        Terminal width [characters].

    Returns
    -------
    list of str
        Lines of the section.
    """
    caps = result.tables.get("caps")
    if caps is None or not len(caps):
        return []
    out = ["", "Power caps chosen (racks at each cap; site racks and tokens/s per MW of "
               "facility peak):"]
    rows = []
    for (period, site), sub in caps.groupby(["period", "site"], sort=False):
        levels = ", ".join(f"{r.rack} {r.racks:.0f} @ {r.power_cap_frac:.0%}"
                           for r in sub.itertuples())
        first = sub.iloc[0]
        rows.append({"period": str(period), "site": site, "racks @ cap": levels,
                     "racks/MW": f"{first.site_racks_per_mw:.1f}",
                     "tokens/s per MW": f"{first.site_tokens_per_s_per_mw:,.0f}"})
    out.append(format_table(rows, ["period", "site", "racks @ cap", "racks/MW",
                                   "tokens/s per MW"], width=width))
    return out


def _oversub_section(result: Any, width: int) -> list[str]:
    """Power oversubscription by site and period: provision, exceedance and tokens lost.

    Parameters
    ----------
    result : PlanResult
        A plan; nothing is printed without a ``power_oversubscription`` table.
    width : int
        Terminal width [characters].

    Returns
    -------
    list of str
        Lines of the section.
    """
    t = result.tables.get("power_oversubscription")
    if t is None or not len(t):
        return []
    rows = [{"period": str(r.period), "site": r.site,
             "factor": f"{r.oversubscription_factor:g}",
             "provisioned\n[MW IT]": f"{r.provisioned_it_kw / 1000:,.2f}",
             "basis\n[MW IT]": f"{r.basis_it_kw / 1000:,.2f}",
             "draw at peak\n[MW IT]": f"{r.draw_it_kw_peak / 1000:,.2f}",
             "over\n[% of year]": f"{r.exceed_prob:.2%}",
             "tokens lost\n[%]": f"{r.tokens_lost_frac:.3%}",
             "counted\n[tokens/s]": f"{r.tokens_counted_per_s_avg:,.0f}"}
            for r in t.itertuples()]
    return ["", "Power oversubscription (the site provisions factor x its racks' power at "
                "the basis; capping keeps the draw under it; over = share of the year the "
                "fleet's draw would exceed it; tokens lost to capping, and the tokens/s the "
                "plan counted against demand):", format_table(rows, width=width)]


def _grid_requests(result: Any, width: int) -> list[str]:
    """The grid connections the plan requests (sites whose connection is a decision)."""
    grid = result.tables.get("grid")
    if grid is None or not len(grid):
        return []
    flex = "flexible_kw" in grid.columns
    asked = grid[(grid.requested_kw > 0) | (grid.requested_assessed_kw > 0)
                 | (grid.energised_kw > 0)
                 | ((grid.requested_flex_kw > 0) | (grid.flexible_kw > 0) if flex else False)]
    if not len(asked):
        return ["", "Grid connections: none requested"]
    rows = []
    for r in asked.itertuples():
        req = r.requested_kw + r.requested_assessed_kw + (r.requested_flex_kw if flex else 0.0)
        row = {"period": str(r.period), "site": r.site, "requested\n[MW]": f"{req / 1000:,.1f}",
               "energised\n[MW]": f"{r.energised_kw / 1000:,.1f}",
               "connected\n[MW]": f"{r.connected_kw / 1000:,.1f}",
               "used\n[MW]": f"{r.used_kw / 1000:,.1f}",
               "connectable\n[MW]": f"{r.connectable_kw / 1000:,.1f}"}
        if flex:
            row["flexible\n[MW]"] = f"{r.flexible_kw / 1000:,.1f}"
            row["curtailed\n[MW x h/yr]"] = (f"{r.curtailed_kw / 1000:,.1f} x "
                                             f"{r.curtailment_hours:,.0f}")
        rows.append(row)
    head = ("Grid connections requested (energised after the lead time; used = facility "
            "peak + UPS recharge")
    if flex:
        head += ("; flexible = curtailable MW in the connected MW, cut by the curtailed MW "
                 "for up to the hours a year")
    out = ["", head + "):", format_table(rows, width=width)]
    if flex and "deferred_tokens" in asked.columns and (asked.deferred_tokens > 0).any():
        moved = asked[asked.deferred_tokens > 0]
        out.append("Tokens flexible work defers out of the curtailment events (served later "
                   "within its deadline, none dropped): " + "; ".join(
                       f"{r.period} {r.site} {r.deferred_tokens / 1e6:,.1f} M a year"
                       for r in moved.itertuples()))
    src = result.tables.get("sources")
    line = time_to_power_line(result.tables)
    if flex and line and (src is None or not len(src)):  # else under Power sources
        out.append(line)
    return out


def _by_year_section(result: Any, width: int) -> list[str]:
    """Capex, CDUs, switches, transceivers and network power per period (all sites)."""
    t = result.tables
    periods = list(dict.fromkeys(t["power"].period))
    costs, bom = t.get("costs"), t.get("bom")
    cooling, network = t.get("cooling"), t.get("network")
    rows = []
    for p in periods:
        row: dict[str, Any] = {"period": str(p)}
        if costs is not None and len(costs):
            c = costs[(costs.period == p) & (costs.kind == "capex")]
            row["capex\n[M USD]"] = f"{c.cost_usd.sum() / 1e6:,.1f}"
        if cooling is not None and len(cooling):
            row["CDUs\nin service"] = _n(cooling[cooling.period == p].cdus.sum())
        if bom is not None and len(bom):
            b = bom[bom.period == p]
            sw = b[b.item.str.endswith("switch")]
            tr = b[b.item == "transceiver"]
            row["switches\n(+ to order)"] = f"{_n(sw.installed.sum())} (+{_n(sw.new.sum())})"
            row["transceivers\n(+ to order)"] = f"{_n(tr.installed.sum())} (+{_n(tr.new.sum())})"
        if network is not None and len(network):
            row["network\n[kW]"] = _n(network[network.period == p].network_kw.sum())
        rows.append(row)
    if not rows or len(rows[0]) == 1:
        return []
    return ["", "Capex, cooling and network by period (all sites):",
            format_table(rows, list(rows[0]), width=width)]


def _cashflow_section(result: Any, kpi: dict, width: int | None) -> list[str]:
    """Cash flows, depreciation, book value and cost per million tokens by period."""
    cf = result.tables.get("cashflow")
    if cf is None or not len(cf):
        return []

    def m(v: float) -> str:
        return "-" if v != v else f"{v / 1e6:,.1f}"

    def u(v: float) -> str:
        return "-" if v != v else f"{v:.4f}"

    rows = [{"period": str(r.period), "capex\n[M USD]": m(r.capex_usd),
             "opex\n[M USD]": m(r.opex_usd), "staff +\nsoftware": m(r.staff_software_usd),
             "deprec-\niation": m(r.depreciation_usd), "book\nvalue": m(r.book_value_usd),
             "annualised\nUSD/Mtok": u(r.usd_per_million_tokens_annualised),
             "cash\nUSD/Mtok": u(r.usd_per_million_tokens_cash),
             "API\n[M USD]": m(r.api_usd),
             "cumulative\nnet [M USD]": m(r.cumulative_net_cash_flow_usd)}
            for r in cf.itertuples()]
    out = [""] + _wrap("Cash flows by period [M USD, undiscounted; book value at the period's "
                       "end; opex: energy, demand charges, carbon, maintenance]:", width)
    out.append(format_table(rows, list(rows[0]), width=width))
    text = api_return_text(kpi, cf)
    if text:
        out += _wrap(text, width)
    return out


def _limits_section(result: Any, width: int) -> list[str]:
    t = result.tables
    b = binding_rows(t.get("binding"))
    out = ["", "Binding limits (ranked; a positive shadow price):"]
    if b is not None and len(b):
        out.append("shadow price: saving of one more unit with the chosen fleet fixed; relaxed: "
                   "with rack counts free (LP relaxation).")
        out.append(format_table(
            [_no_nan(r) for r in b.head(15).to_dict("records")],
            ["rank", "limit", "site", "period", "value", "used", "unit", "shadow_price",
             "shadow_price_relaxed", "shadow_unit"], width=width,
            headers={"shadow_price": "shadow\nprice", "shadow_price_relaxed": "relaxed",
                     "shadow_unit": "shadow unit"}))
    else:
        out.append("(none: no site limit has a positive shadow price)")
    no_grid = no_grid_sites(t.get("power"))
    if no_grid:
        out.append(f"Sites with no grid yet (not ranked): {_site_periods(no_grid)}")
    if result.inputs is not None:
        waiting = not_buildable_sites(result.inputs, t.get("power"))
        if waiting:
            out.append("Sites where no capacity can be built yet (lead time, not ranked): "
                       + _site_periods(waiting))
    sp = t.get("shadow_prices")
    if sp is not None and len(sp):
        dem = sp[sp.family == "demand"]
        if len(dem):
            out += ["", "Marginal cost of demand [USD per million tokens]:"]
            rows = []
            for period, sub in dem.groupby("period", sort=False):
                row: dict[str, Any] = {"period": str(period)}
                for r in sub.itertuples():
                    row[r.workload + ("" if r.pool == "all" else f"/{r.pool}")] = r.shadow_price
                rows.append(row)
            out.append(format_table(rows, width=width))
    return out


def _wrap(text: str, width: int | None, indent: str = "") -> list[str]:
    if not width:
        return [text]
    return textwrap.wrap(text, width, subsequent_indent=indent) or [""]


def _pct(v: Any) -> str:
    return "-" if v is None or v != v else f"{v:.0%}" if v >= 0.01 else f"{v:.2%}"


def _buy_section(result: Any, width: int | None) -> list[str]:
    """Build vs buy per API and the break-even; energy per request; demand conversions."""
    t = result.tables
    out: list[str] = []
    kpi = {r.kpi: r.value for r in t["kpis"].itertuples()} if "kpis" in t else {}
    buy = t.get("build_vs_buy")
    if buy is not None and len(buy):
        counted = ("staff, software and reserve included" if operations_counted(t.get("costs"))
                   else "reserve included; no operations staff or software (not counted)")
        out += [""] + _wrap("Build vs buy: the served tokens bought from each comparable API "
                            f"vs the plan [USD per million tokens, levelised; {counted}]:",
                            width)
        rows = [{"API": r.api, "workload": r.workload,
                 "API\nUSD/Mtok": f"{r.api_usd_per_mtok:.4f}",
                 "plan\nUSD/Mtok": f"{r.plan_usd_per_mtok:.4f}",
                 "cheaper": f"{r.cheaper} ({_pct(abs(r.saving_frac))})",
                 "break-even\ndemand": _pct(r.break_even_demand_frac)
                 if r.break_even_demand_frac == r.break_even_demand_frac
                 and r.break_even_demand_frac is not None else "never",
                 "break-even\nutilisation": _pct(r.break_even_utilisation_frac)
                 if r.break_even_utilisation_frac == r.break_even_utilisation_frac
                 and r.break_even_utilisation_frac is not None else "never"}
                for r in buy.itertuples()]
        out.append(format_table(rows, width=width))
        out += _wrap("break-even: building is cheaper above this share of the planned demand "
                     "(or this utilisation of the installed fleet), with the planned fleet's "
                     "fixed costs; 'never': the API costs less than the plan's energy per "
                     "token.", width)
        if kpi.get("reserve_cost_usd") is not None:
            out += _wrap(f"Reserve capacity (headroom, availability, N+k spares): "
                         f"{_pct(kpi.get('reserve_frac'))} of racks in service, "
                         f"{kpi['reserve_cost_usd']:,.0f} USD present value "
                         f"({_pct(kpi.get('reserve_cost_frac'))} of the NPV).", width)
    req = t.get("requests")
    if req is not None and len(req):
        out += ["", "Energy per request (facility: IT, network, cooling, power losses, idle "
                "and reserve racks):"]
        out.append(format_table(
            [{"workload": r.workload, "model": r.model,
              "tokens per\nrequest": f"{r.tokens_per_request:,.0f}",
              "tokens\nper kWh": "-" if r.tokens_per_kwh != r.tokens_per_kwh
              or r.tokens_per_kwh is None else f"{r.tokens_per_kwh:,.0f}",
              "Wh per\nrequest": "-" if r.wh_per_request != r.wh_per_request
              or r.wh_per_request is None else f"{r.wh_per_request:.3f}"}
             for r in req.itertuples()], width=width))
    dem = t.get("demand")
    if dem is not None and "conversion" in dem and (dem.demand_unit.str.startswith(
            ("requests", "characters"))).any():
        out += ["", "Demand conversions to tokens:"]
        seen = dem.drop_duplicates("workload")
        for r in seen.itertuples():
            out += _wrap(f"  - {r.workload}: {r.demand_unit}, {r.conversion}", width,
                         indent="    ")
    return out


def plan_text(result: Any, width: int | None = WIDTH) -> str:
    """Readable summary of a plan that fits ``width`` columns (None: no wrapping).

    Parameters
    ----------
    result : PlanResult
    width : int, optional
        Terminal width [characters].
    """
    out = [f"Plan '{result.name}': {result.status_text} (solver {result.solver}, "
           f"{timing_text(result)})"]
    if result.message:
        out.append(result.message)
    if bound_sentence(result):
        out.append(bound_sentence(result))
    if not result.status.has_solution:
        return fit_lines("\n".join(out), width)
    t = result.tables
    kpi = {r.kpi: r.value for r in t["kpis"].itertuples()}

    def k(name: str, fmt: str) -> str:
        v = kpi.get(name)
        return "-" if v is None or v != v else fmt.format(v)

    out.append("")
    out.append(f"NPV of costs:           {k('npv_cost_usd', '{:,.0f}')} USD")
    out.append(f"USD per million tokens: {k('usd_per_million_tokens', '{:.4f}')} "
               f"({LEVELISED_TEXT})")
    costs = t.get("costs")
    if costs is not None and len(costs):
        tv = -costs.loc[costs.category == "terminal_value", "cost_usd_discounted"].sum()
        if tv > 0:
            share = (f": {k('terminal_value_frac', '{:.0%}')} of the NPV"
                     if kpi.get("terminal_value_frac") is not None else "")
            out.append(f"                        (the NPV is net of a terminal-value credit of "
                       f"{tv:,.0f} USD, present value{share}, so the levelised figure can be "
                       "below every period's cash cost)")
    if "usd_per_million_tokens_annualised" in kpi:
        out.append(f"Annualised per Mtok:    {k('usd_per_million_tokens_annualised', '{:.4f}')}"
                   f" over the horizon ({ANNUALISED_TEXT}; by period below)")
    note = terminal_note(kpi.get("terminal_value_frac"))
    if note:
        out += _wrap(f"Note: {note}", width)
    out.append(f"Tokens per kWh:         {k('tokens_per_kwh', '{:,.0f}')} (input + output)")
    out.append(f"Peak facility:          {k('peak_facility_mw', '{:.1f}')} MW = peak IT "
               f"{k('peak_it_mw', '{:.1f}')} MW ({IT_MEANS}) x PUE at the peak hour "
               f"{k('pue_peak', '{:.3f}')}")
    out.append(f"PUE, annual:            {k('pue_annual', '{:.3f}')} (energy-weighted)   "
               f"utilisation {k('utilisation_frac', '{:.0%}')}"
               f"   carbon {k('carbon_t', '{:,.0f}')} tCO2")
    out.append(f"{POWER_BASIS_LABEL + ':':<24}{result.power_basis}")
    out += _fleet_section(result, width)
    out += _power_section(result, width)
    out += _by_year_section(result, width)
    out += _cashflow_section(result, kpi, width)
    out += _buy_section(result, width)
    if len(t.get("unserved", pd.DataFrame())):
        out += ["", "Unserved demand:"]
        out.append(format_table(t["unserved"].to_dict("records"),
                                ["workload", "pool", "period", "short_tokens_per_s_peak",
                                 "short_frac"], width=width))
    out += _limits_section(result, width)
    if result.notes:
        out += ["", "Notes:"]
        out += [f"  - {n}" for n in result.notes]
    return fit_lines("\n".join(out), width)


__all__ = ["plan_text", "timing_text"]
