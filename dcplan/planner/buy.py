"""Build or buy, reserve capacity and energy per request, from a solved plan's tables.

:func:`build_vs_buy_table` prices the plan's served token mix at every comparable API
(``catalogs/api_prices.yaml``: each workload's input/output split and prompt-cache hit
share) against the plan's own levelised cost, and finds the break-even;
:func:`reserve_kpis` prices the spare capacity the plan holds (serving headroom,
availability derate, N+k spares); :func:`requests_table` gives facility energy per
request beside tokens per kWh for each workload.

Money is present value [USD] at the plan's discount rate, tokens are discounted the
same way for levelised figures [USD per million tokens], as in the ``kpis`` table.
"""

from __future__ import annotations

from collections import defaultdict

import pandas as pd

from dcplan.buildbuy import MTOK, TokenMix, api_cost, break_even
from dcplan.planner.inputs import PlanInputs
from dcplan.planner.tables import workload_tokens

#: Cost categories that scale with the tokens served (the rest is fixed for a fleet).
VARIABLE_CATEGORIES = ("energy", "carbon")
#: Categories that are not a cost the operator pays.
NOT_PAID = ("unserved_penalty",)

#: How the plan's cost is shared among workloads (column text, docs).
SHARE_TEXT = ("plan cost shared among workloads by their allocated rack-periods weighted "
              "by rack price and discount factor")


def _shares(d: PlanInputs, allocation: pd.DataFrame, disc: dict) -> dict[str, float]:
    """Share of the plan's cost of each workload (see :data:`SHARE_TEXT`) [-]."""
    pidx = {per.label: p for p, per in enumerate(d.periods)}
    weight = defaultdict(float)
    for row in allocation.itertuples():
        p = pidx[row.period]
        weight[row.workload] += row.racks * d.rack_capex(row.rack, p) * d.df_opex(p)
    total = sum(weight.values())
    if total <= 0:  # nothing allocated: by tokens
        weight = defaultdict(float)
        for (w, _p), t in disc.items():
            weight[w] += t
        total = sum(weight.values())
    return {w: weight[w] / total if total else 0.0 for w in d.workloads}


def _fleet_utilisation(d: PlanInputs, fleet: pd.DataFrame, demand: pd.DataFrame) -> float | None:
    """Served tokens / what the installed fleet serves all year at its peak-hour rate [-]."""
    cap = served = 0.0
    inst = fleet.groupby("period", sort=False).installed_racks.sum()
    alloc = fleet.groupby("period", sort=False).allocated_racks.sum()
    peak = demand.groupby("period", sort=False).served_tokens_per_s_peak.sum()
    avg = demand.groupby("period", sort=False).served_tokens_per_s_avg.sum()
    for p, per in enumerate(d.periods):
        a = float(alloc.get(per.label, 0.0))
        if a <= 0:
            continue
        sec = d.hours(p) * 3600.0 * d.df_opex(p)
        cap += float(peak.get(per.label, 0.0)) * float(inst.get(per.label, 0.0)) / a * sec
        served += float(avg.get(per.label, 0.0)) * sec
    return served / cap if cap > 0 else None


def _cost_split(costs: pd.DataFrame) -> tuple[float, float]:
    """Present value of fixed and variable costs the operator pays [USD]."""
    if not len(costs):
        return 0.0, 0.0
    paid = costs[~costs.category.isin(NOT_PAID)]
    var = paid.loc[paid.category.isin(VARIABLE_CATEGORIES), "cost_usd_discounted"].sum()
    return float(paid.cost_usd_discounted.sum() - var), float(var)


def reserve_frac(d: PlanInputs, fleet: pd.DataFrame) -> float:
    """Reserve (headroom, unavailable and spare) / installed rack-periods, discounted [-].

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    fleet : DataFrame
        The plan's ``fleet`` table (:func:`~dcplan.planner.tables.fleet_table`) [racks].

    Returns
    -------
    float
        Reserve over installed rack-periods, each period weighted by its opex
        discount factor [-].
    """
    if not len(fleet):
        return 0.0
    pidx = {per.label: p for p, per in enumerate(d.periods)}
    f = fleet.period.map(lambda lab: d.df_opex(pidx[lab]))
    inst = (fleet.installed_racks * f).sum()
    res = ((fleet.headroom_racks + fleet.unavailable_racks + fleet.spare_racks) * f).sum()
    return float(res / inst) if inst else 0.0


def reserve_kpis(d: PlanInputs, fleet: pd.DataFrame, costs: pd.DataFrame) -> pd.DataFrame:
    """KPI rows: the cost of the spare capacity held [USD] and its share of the NPV [-].

    The reserve share of the installed rack-periods (discounted) times the present value
    of the fixed costs (everything but energy and carbon): what the racks kept for the
    serving headroom, the availability derate and N+k spares cost, with their share of
    buildings, network, cooling, maintenance, staff and software.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    fleet : DataFrame
        The plan's ``fleet`` table (:func:`~dcplan.planner.tables.fleet_table`) [racks].
    costs : DataFrame
        The plan's ``costs`` table (:func:`~dcplan.planner.tables.costs_table`) [USD].

    Returns
    -------
    DataFrame
        kpi, value, unit: ``reserve_cost_usd`` [USD, present value] and
        ``reserve_cost_frac`` [-].
    """
    fixed, var = _cost_split(costs)
    frac = reserve_frac(d, fleet)
    usd = frac * fixed
    npv = fixed + var
    return pd.DataFrame([
        ("reserve_cost_usd", usd, "USD (present value: reserve share of installed "
                                  "rack-periods x fixed costs)"),
        ("reserve_cost_frac", usd / npv if npv else None,
         "- (share of the NPV spent on capacity held in reserve)"),
    ], columns=["kpi", "value", "unit"])


#: Units of the build_vs_buy table.
BUY_UNITS = {
    "input_mtok": "million tokens, discounted", "cached_input_mtok": "million tokens, "
    "discounted", "output_mtok": "million tokens, discounted",
    "api_usd": "USD, present value", "api_usd_per_mtok": "USD per million tokens",
    "plan_usd": "USD, present value", "plan_usd_per_mtok": "USD per million tokens",
    "reserve_usd_per_mtok": "USD per million tokens",
    "saving_frac": "share of the API cost", "break_even_demand_frac": "share of planned demand",
    "break_even_utilisation_frac": "share of installed capacity",
}
BUY_COLUMNS = ["api", "provider", "api_model", "workload", "comparison", "input_mtok",
               "cached_input_mtok", "output_mtok", "api_usd", "api_usd_per_mtok", "plan_usd",
               "plan_usd_per_mtok", "reserve_usd_per_mtok", "saving_frac", "cheaper",
               "break_even_demand_frac", "break_even_utilisation_frac", "as_of"]


def build_vs_buy_table(d: PlanInputs, fleet: pd.DataFrame, allocation: pd.DataFrame,
                       demand: pd.DataFrame, costs: pd.DataFrame) -> pd.DataFrame:
    """The plan's served token mix bought from each comparable API, against building it.

    One row per (API price row, workload it is comparable with), and an ``(all)`` row
    per API covering several workloads. The API cost applies each workload's input share
    and prompt-cache hit share (cache reads at the cached-input price). The plan's cost
    of a workload is its share of the NPV (:data:`SHARE_TEXT`). Break-even: building
    costs ``fixed + variable x D`` (variable: energy and carbon per token), buying ``API
    x D``; they are equal at ``D* = fixed / (API - variable)``, given as a share of the
    planned demand and as a utilisation of the installed fleet (the fleet is held fixed:
    a smaller demand would be planned with a smaller fleet).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    fleet : DataFrame
        The plan's ``fleet`` table (:func:`~dcplan.planner.tables.fleet_table`) [racks].
    allocation : DataFrame
        The plan's ``allocation`` table
        (:func:`~dcplan.planner.tables.allocation_table`) [racks, tokens/s, kW].
    demand : DataFrame
        The plan's ``demand`` table (:func:`~dcplan.planner.tables.demand_table`)
        [tokens/s].
    costs : DataFrame
        The plan's ``costs`` table (:func:`~dcplan.planner.tables.costs_table`) [USD].

    Returns
    -------
    DataFrame
        :data:`BUY_COLUMNS`: tokens ``*_mtok`` [million tokens, discounted]; ``api_usd``,
        ``plan_usd`` [USD, present value]; ``*_usd_per_mtok`` [USD per million tokens];
        ``saving_frac``, ``break_even_*_frac`` [-] (units in ``df.attrs['units']``).
    """
    _tok, disc = workload_tokens(d, demand)
    fixed, var = _cost_split(costs)
    shares = _shares(d, allocation, disc)
    util = _fleet_utilisation(d, fleet, demand)
    res = reserve_frac(d, fleet)
    tokens_w = defaultdict(float)
    for (w, _p), t in disc.items():
        tokens_w[w] += t
    rows = []
    for offer in d.api_offers:
        group = []
        for w in offer.workloads:
            t = tokens_w.get(w, 0.0)
            if t <= 0:
                continue
            wd = d.workloads[w]
            mix = TokenMix.from_total(w, t, wd.input_frac, wd.cache_hit_frac)
            group.append((w, mix, fixed * shares[w], var * shares[w]))
        if not group:
            continue
        members = [[g] for g in group] + ([group] if len(group) > 1 else [])
        for part in members:
            cost = api_cost([m for _w, m, _f, _v in part], offer)
            t = sum(m.tokens for _w, m, _f, _v in part)
            f_usd = sum(f for *_x, f, _v in part)
            v_usd = sum(v for *_x, v in part)
            plan_usd = f_usd + v_usd
            api_pm = cost.usd / t * MTOK
            be = break_even(f_usd, v_usd / t * MTOK, api_pm,
                            t / MTOK / util if util else None)
            name = part[0][0] if len(part) == 1 else "(all)"
            rows.append(dict(
                api=offer.id, provider=offer.provider, api_model=offer.api_model,
                workload=name,
                comparison=", ".join(sorted({offer.comparison[w] for w, *_ in part})),
                input_mtok=sum(m.input_tokens * (1 - m.cache_hit_frac) for _w, m, *_ in part)
                / MTOK,
                cached_input_mtok=sum(m.input_tokens * m.cache_hit_frac
                                      for _w, m, *_ in part) / MTOK,
                output_mtok=sum(m.output_tokens for _w, m, *_ in part) / MTOK,
                api_usd=cost.usd, api_usd_per_mtok=api_pm, plan_usd=plan_usd,
                plan_usd_per_mtok=plan_usd / t * MTOK,
                reserve_usd_per_mtok=res * f_usd / t * MTOK,
                saving_frac=1.0 - plan_usd / cost.usd if cost.usd else None,
                cheaper="build" if plan_usd < cost.usd else "buy",
                break_even_demand_frac=be.demand_mtok / (t / MTOK)
                if be.demand_mtok is not None else None,
                break_even_utilisation_frac=be.utilisation_frac, as_of=offer.as_of))
    df = pd.DataFrame(rows, columns=BUY_COLUMNS)
    df.attrs["units"] = dict(BUY_UNITS)
    return df


#: Units of the requests table.
REQUEST_UNITS = {
    "tokens_per_request": "tokens", "requests": "requests", "energy_kwh": "kWh",
    "tokens_per_kwh": "tokens/kWh", "wh_per_request": "Wh",
}


def requests_table(d: PlanInputs, allocation: pd.DataFrame, power: pd.DataFrame,
                   demand: pd.DataFrame) -> pd.DataFrame:
    """Facility energy per request and tokens per kWh of each workload, over the horizon.

    Each site's facility energy in a period (IT, network, cooling, power-distribution
    losses, idle and reserve racks) is shared among the workloads by the IT power of
    the racks allocated to them there at the peak; a request is the workload's mean
    input + output tokens.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    allocation : DataFrame
        The plan's ``allocation`` table
        (:func:`~dcplan.planner.tables.allocation_table`) [racks, tokens/s, kW].
    power : DataFrame
        The plan's ``power`` table (:func:`~dcplan.planner.tables.power_table`) [kW].
    demand : DataFrame
        The plan's ``demand`` table (:func:`~dcplan.planner.tables.demand_table`)
        [tokens/s].

    Returns
    -------
    DataFrame
        workload, model, tokens_per_request [tokens] (input + output), requests
        [requests], energy_kwh [kWh] (facility), tokens_per_kwh [tokens/kWh],
        wh_per_request [Wh/request] (units also in ``df.attrs['units']``).
    """
    tok, _disc = workload_tokens(d, demand)
    alloc_kw = allocation.groupby(["period", "site", "workload"]).it_kw.sum()
    site_kw = allocation.groupby(["period", "site"]).it_kw.sum()
    energy = defaultdict(float)
    for row in power.itertuples():
        tot = site_kw.get((row.period, row.site), 0.0)
        if tot <= 0:
            continue
        for w in d.workloads:
            share = alloc_kw.get((row.period, row.site, w), 0.0) / tot
            energy[w] += row.energy_kwh * share
    rows = []
    for w, wd in d.workloads.items():
        t = sum(v for (w2, _p), v in tok.items() if w2 == w)
        per_req = wd.input_tokens_mean + wd.output_tokens_mean
        e = energy.get(w, 0.0)
        rows.append(dict(workload=w, model=wd.model, tokens_per_request=per_req,
                         requests=t / per_req if per_req else None, energy_kwh=e,
                         tokens_per_kwh=t / e if e else None,
                         wh_per_request=e * 1000.0 / (t / per_req) if e and t and per_req
                         else None))
    df = pd.DataFrame(rows, columns=["workload", "model", "tokens_per_request", "requests",
                                     "energy_kwh", "tokens_per_kwh", "wh_per_request"])
    df.attrs["units"] = dict(REQUEST_UNITS)
    return df
