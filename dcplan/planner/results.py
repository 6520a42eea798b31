"""Result tables of a solved plan, recomputed from the variable values.

Every table is a tidy :class:`pandas.DataFrame`: one row per (period, site, ...) and
one column per quantity, the unit in the column name (``_kw``, ``_usd``,
``_tokens_per_s``, ``_frac``...) and in ``df.attrs["units"]`` (column -> unit).
The figures are computed here from the solution and the input coefficients, not read
from the LP's expressions, so a test can check the model against them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import pandas as pd
import pulp

from dcplan.planner.inputs import PlanInputs
from dcplan.planner.model import CATEGORIES, ModelVars, discount
from dcplan.units import SECONDS_PER_MONTH


@dataclass
class Solution:
    """Variable values of a solved model, keyed like :class:`ModelVars`.

    Integer variables are rounded to the nearest integer.
    """

    new: dict = field(default_factory=dict)
    inst: dict = field(default_factory=dict)
    alloc: dict = field(default_factory=dict)
    unserved: dict = field(default_factory=dict)
    cdu: dict = field(default_factory=dict)
    cdu_new: dict = field(default_factory=dict)
    built: dict = field(default_factory=dict)

    @classmethod
    def from_model(cls, mv: ModelVars) -> Solution:
        """Read the values out of a solved model."""
        def vals(d, integer=False):
            out = {}
            for k, v in d.items():
                x = v.value() or 0.0
                out[k] = float(round(x)) if integer else max(0.0, float(x))
            return out

        return cls(new=vals(mv.new, True), inst=vals(mv.inst), alloc=vals(mv.alloc),
                   unserved=vals(mv.unserved), cdu=vals(mv.cdu, True),
                   cdu_new=vals(mv.cdu_new), built=vals(mv.built))

    def installed(self, d: PlanInputs, r: str, s: str, p: int) -> float:
        """Racks in service recomputed from purchases and the existing fleet [racks]."""
        return d.existing_count(r, s, p) + sum(
            n for (r2, s2, q), n in self.new.items()
            if r2 == r and s2 == s and q <= p and d.alive(r, q, p))


def _frame(rows: list[dict], units: dict[str, str], columns: list[str] | None = None
           ) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=columns or (list(rows[0]) if rows else list(units)))
    df.attrs["units"] = {c: u for c, u in units.items() if c in df.columns}
    return df


def fleet_table(d: PlanInputs, sol: Solution) -> pd.DataFrame:
    """Racks installed, new, retired and allocated per (period, site, rack)."""
    rows = []
    alloc = defaultdict(float)
    for (r, s, _w, _k, p), x in sol.alloc.items():
        alloc[r, s, p] += x
    for s in d.sites:
        for r in d.racks:
            prev = float(d.existing_count(r, s, 0))
            for p, per in enumerate(d.periods):
                inst = sol.installed(d, r, s, p)
                new = sol.new.get((r, s, p), 0.0)
                retired = max(0.0, prev + new - inst) if p > 0 else 0.0
                prev = inst
                if inst == 0 and new == 0 and retired == 0:
                    continue
                rows.append(dict(period=per.label, site=s, rack=r, installed_racks=inst,
                                 new_racks=new, retired_racks=retired,
                                 allocated_racks=alloc[r, s, p],
                                 rack_positions=inst * d.racks[r].rack_positions,
                                 utilisation_frac=alloc[r, s, p] / inst if inst else 0.0))
    return _frame(rows, {"installed_racks": "racks", "new_racks": "racks",
                         "retired_racks": "racks", "allocated_racks": "racks (at peak)",
                         "rack_positions": "positions", "utilisation_frac": "-"},
                  ["period", "site", "rack", "installed_racks", "new_racks", "retired_racks",
                   "allocated_racks", "rack_positions", "utilisation_frac"])


def allocation_table(d: PlanInputs, sol: Solution) -> pd.DataFrame:
    """Racks serving each workload pool at peak, with the tokens/s they deliver."""
    rows = []
    for (r, s, w, k, p), x in sorted(sol.alloc.items(), key=lambda kv: (kv[0][4], kv[0][:4])):
        if x <= 1e-6:  # below the solver's feasibility tolerance
            continue
        rows.append(dict(period=d.periods[p].label, site=s, rack=r, workload=w, pool=k,
                         racks=x, tokens_per_s=x * d.perf[r, w].rate(k),
                         it_kw=x * d.perf[r, w].power_kw))
    return _frame(rows, {"racks": "racks", "tokens_per_s": "tokens/s (peak)", "it_kw": "kW"},
                  ["period", "site", "rack", "workload", "pool", "racks", "tokens_per_s",
                   "it_kw"])


def demand_table(d: PlanInputs, sol: Solution) -> pd.DataFrame:
    """Peak demand vs served tokens/s per (period, workload, pool)."""
    served = defaultdict(float)
    for (r, _s, w, k, p), x in sol.alloc.items():
        served[w, k, p] += x * d.perf[r, w].rate(k)
    rows = []
    for p, per in enumerate(d.periods):
        for w, wd in d.workloads.items():
            for k in wd.pools:
                need = wd.peak_tokens_per_s(p, k)
                rows.append(dict(period=per.label, workload=w, pool=k,
                                 demand_tokens_per_s_avg=wd.demand_tokens_per_s[p]
                                 * wd.pool_share(k),
                                 demand_tokens_per_s_peak=need,
                                 served_tokens_per_s_peak=served[w, k, p],
                                 unserved_tokens_per_s_peak=sol.unserved.get((w, k, p), 0.0)))
    return _frame(rows, {"demand_tokens_per_s_avg": "tokens/s",
                         "demand_tokens_per_s_peak": "tokens/s",
                         "served_tokens_per_s_peak": "tokens/s",
                         "unserved_tokens_per_s_peak": "tokens/s"})


def _rack_it_kw(d: PlanInputs, sol: Solution, r: str, s: str, p: int, average: bool) -> float:
    rk = d.racks[r]
    if d.nameplate_peak and not average:
        return rk.it_power_max_kw * sol.installed(d, r, s, p)
    it = rk.it_power_idle_kw * sol.installed(d, r, s, p)
    for (r2, s2, w, _k, p2), x in sol.alloc.items():
        if r2 == r and s2 == s and p2 == p:
            extra = (d.perf[r, w].power_kw - rk.it_power_idle_kw) * x
            it += extra / d.workloads[w].peak_factor if average else extra
    return it


def power_table(d: PlanInputs, sol: Solution) -> pd.DataFrame:
    """IT, cooling, network, losses and facility power vs grid per (period, site) [kW]."""
    rows = []
    for s, sd in d.sites.items():
        built = sd.built_kw_initial
        for p, per in enumerate(d.periods):
            built += sol.built.get((s, p), 0.0)
            acc = defaultdict(float)
            for r in d.racks:
                n = sol.installed(d, r, s, p)
                if n == 0:
                    continue
                rs = d.rack_site[r, s]
                for avg, tag in ((False, "peak"), (True, "avg")):
                    it = _rack_it_kw(d, sol, r, s, p, avg)
                    cool = it * (rs.cooling_kw_per_it_kw_avg if avg
                                 else rs.cooling_kw_per_it_kw_peak)
                    net = n * rs.network_kw_per_rack
                    acc[f"it_{tag}"] += it
                    acc[f"cool_{tag}"] += cool
                    acc[f"net_{tag}"] += net
                    acc[f"loss_{tag}"] += rs.loss_frac * (it + cool + net)
            fac = {t: acc[f"it_{t}"] + acc[f"cool_{t}"] + acc[f"net_{t}"] + acc[f"loss_{t}"]
                   for t in ("peak", "avg")}
            energy = fac["avg"] * d.hours(p)
            rows.append(dict(
                period=per.label, site=s, it_kw_peak=acc["it_peak"],
                cooling_kw_peak=acc["cool_peak"], network_kw=acc["net_peak"],
                losses_kw_peak=acc["loss_peak"], facility_kw_peak=fac["peak"],
                grid_kw=sd.grid_kw[p], headroom_kw=sd.grid_kw[p] - fac["peak"],
                built_kw=built, it_kw_avg=acc["it_avg"], facility_kw_avg=fac["avg"],
                energy_kwh=energy, carbon_t=energy * sd.carbon_kg_per_kwh / 1000.0))
    units = {c: "kW" for c in ("it_kw_peak", "cooling_kw_peak", "network_kw", "losses_kw_peak",
                               "facility_kw_peak", "grid_kw", "headroom_kw", "built_kw",
                               "it_kw_avg", "facility_kw_avg")}
    units.update(energy_kwh="kWh", carbon_t="tCO2")
    return _frame(rows, units)


def cooling_table(d: PlanInputs, sol: Solution, power: pd.DataFrame) -> pd.DataFrame:
    """Liquid and air heat, CDUs and PUE per (period, site).

    Both heat shares come from the same IT figure, the peak IT power of the power
    table: liquid = sum over rack types of ``liquid_heat_frac x IT`` (the rack's
    liquid heat at full load divided by its full-load IT power, times its IT power at
    peak); air = the rest of the IT heat plus the network's heat (switches and optics
    are air-cooled). ``liquid_heat_kw_full_load`` is the liquid heat with every rack at
    full load, which the CDUs are sized for.

    Returns
    -------
    DataFrame
        period, site, liquid_heat_kw [kW, peak], air_heat_kw [kW, peak],
        liquid_heat_kw_full_load [kW], cdu_ids, cdus [units, redundancy included],
        cdu_positions [rack positions], cooling_kw_peak [kW], pue_annual [-].
    """
    rows = []
    cdus = defaultdict(float)
    ids = defaultdict(set)
    cdu_pos = defaultdict(float)
    for (s, c, p), n in sol.cdu.items():
        cdus[s, p] += n
        cdu_pos[s, p] += n * d.cdu_data(s, c).cdu_positions
        if n:
            ids[s, p].add(c)
    pw = power.set_index(["period", "site"])
    for s in d.sites:
        for p, per in enumerate(d.periods):
            liquid = liquid_full = 0.0
            for r, rk in d.racks.items():
                rs = d.rack_site.get((r, s))
                n = sol.installed(d, r, s, p)
                if rs is None or n == 0 or rk.it_power_max_kw <= 0:
                    continue
                frac = rs.liquid_heat_kw_per_rack / rk.it_power_max_kw
                liquid += frac * _rack_it_kw(d, sol, r, s, p, False)
                liquid_full += rs.liquid_heat_kw_per_rack * n
            row = pw.loc[(per.label, s)]
            air = max(0.0, row.it_kw_peak - liquid) + row.network_kw
            it_avg = row.it_kw_avg + row.network_kw
            rows.append(dict(period=per.label, site=s, liquid_heat_kw=liquid, air_heat_kw=air,
                             liquid_heat_kw_full_load=liquid_full,
                             cdu_ids=",".join(sorted(ids[s, p])), cdus=cdus[s, p],
                             cdu_positions=cdu_pos[s, p],
                             cooling_kw_peak=row.cooling_kw_peak,
                             pue_annual=row.facility_kw_avg / it_avg if it_avg > 0 else None))
    return _frame(rows, {"liquid_heat_kw": "kW (peak)", "air_heat_kw": "kW (peak)",
                         "liquid_heat_kw_full_load": "kW (full load, CDU sizing)",
                         "cdus": "units", "cdu_positions": "positions",
                         "cooling_kw_peak": "kW", "pue_annual": "-"},
                  ["period", "site", "liquid_heat_kw", "air_heat_kw", "liquid_heat_kw_full_load",
                   "cdu_ids", "cdus", "cdu_positions", "cooling_kw_peak", "pue_annual"])


def network_table(d: PlanInputs, sol: Solution) -> pd.DataFrame:
    """Linear network estimate per (period, site, rack): power and capex."""
    rows = []
    for s in d.sites:
        for r in d.racks:
            for p, per in enumerate(d.periods):
                n = sol.installed(d, r, s, p)
                if n == 0:
                    continue
                rs = d.rack_site[r, s]
                rows.append(dict(period=per.label, site=s, rack=r, racks=n,
                                 network_kw=n * rs.network_kw_per_rack,
                                 network_capex_usd=n * rs.network_capex_usd_per_rack))
    return _frame(rows, {"racks": "racks", "network_kw": "kW", "network_capex_usd": "USD"},
                  ["period", "site", "rack", "racks", "network_kw", "network_capex_usd"])


def cost_values(d: PlanInputs, sol: Solution, power: pd.DataFrame) -> dict:
    """Undiscounted cost per (category, period index) [USD], recomputed from the plan."""
    cost = defaultdict(float)
    n = len(d.periods)
    for (r, s, p), x in sol.new.items():
        rk, rs = d.racks[r], d.rack_site[r, s]
        cooling = rs.cooling_capex_usd_per_kw * rk.it_power_max_kw
        cost["rack_capex", p] += x * rk.capex_usd
        cost["network_capex", p] += x * rs.network_capex_usd_per_rack
        cost["cooling_capex", p] += x * cooling
        cost["terminal_value", n - 1] -= x * d.remaining_frac(rk.lifetime_years, p) * (
            rk.capex_usd + rs.network_capex_usd_per_rack + cooling)
    for (s, c, p), x in sol.cdu_new.items():
        price = d.cdu_data(s, c).cdu_capex_usd
        cost["cdu_capex", p] += x * price
        cost["terminal_value", n - 1] -= x * price * d.remaining_frac(d.cdu_lifetime_years, p)
    for (s, p), x in sol.built.items():
        price = d.sites[s].build_capex_usd_per_kw
        cost["building_capex", p] += x * price
        cost["terminal_value", n - 1] -= x * price * d.remaining_frac(
            d.building_lifetime_years, p)
    for s in d.sites:
        for r in d.racks:
            rk = d.racks[r]
            for p in range(n):
                cost["maintenance", p] += (sol.installed(d, r, s, p) * rk.capex_usd
                                           * rk.maintenance_frac_per_year * d.periods[p].years)
    pidx = {per.label: p for p, per in enumerate(d.periods)}
    for row in power.itertuples():
        p, sd = pidx[row.period], d.sites[row.site]
        cost["energy", p] += row.energy_kwh * sd.energy_usd_per_kwh
        cost["demand_charge", p] += (row.facility_kw_peak * d.months(p)
                                     * sd.demand_charge_usd_per_kw_month)
    for (w, _k, p), x in sol.unserved.items():
        tokens = x * d.hours(p) * 3600.0 / d.workloads[w].peak_factor
        cost["unserved_penalty", p] += tokens * d.unserved_usd_per_token
    return cost


def costs_table(d: PlanInputs, cost: dict) -> pd.DataFrame:
    """Costs by (period, category), undiscounted and discounted [USD]."""
    rows = []
    for p, per in enumerate(d.periods):
        for cat, when in CATEGORIES.items():
            v = cost.get((cat, p), 0.0)
            if v == 0:
                continue
            f = discount(d, cat, p)
            rows.append(dict(period=per.label, category=cat, kind=when, cost_usd=v,
                             discount_factor=f, cost_usd_discounted=v * f))
    return _frame(rows, {"cost_usd": "USD", "discount_factor": "-",
                         "cost_usd_discounted": "USD (present value)"},
                  ["period", "category", "kind", "cost_usd", "discount_factor",
                   "cost_usd_discounted"])


#: What the levelised unit cost is (KPI unit, console, workbook, chart).
LEVELISED_TEXT = ("levelised: discounted costs net of the terminal value of assets still in "
                  "service / discounted tokens")


def kpi_table(d: PlanInputs, fleet: pd.DataFrame, power: pd.DataFrame, demand: pd.DataFrame,
              costs: pd.DataFrame) -> pd.DataFrame:
    """Headline figures: NPV, unit cost, energy efficiency, peak MW, utilisation, carbon."""
    npv = costs.cost_usd_discounted.sum() if len(costs) else 0.0
    is_pen = costs.category == "unserved_penalty"
    # The penalty is not a cost the operator pays: out of the NPV (present value) and
    # out of opex (undiscounted), each in its own money.
    pen = costs.loc[is_pen, "cost_usd_discounted"].sum() if len(costs) else 0.0
    capex = costs.loc[costs.kind == "capex", "cost_usd"].sum() if len(costs) else 0.0
    opex = costs.loc[(costs.kind == "opex") & ~is_pen, "cost_usd"].sum() if len(costs) else 0.0
    tokens = tokens_disc = 0.0
    for p, per in enumerate(d.periods):
        sub = demand[demand.period == per.label]
        served = 0.0
        for row in sub.itertuples():
            if row.pool == "decode":
                continue
            wd = d.workloads[row.workload]
            share = wd.pool_share(row.pool)
            frac = 1.0 - (row.unserved_tokens_per_s_peak / row.demand_tokens_per_s_peak
                          if row.demand_tokens_per_s_peak > 0 else 0.0)
            served += row.demand_tokens_per_s_avg / share * frac
        t = served * d.hours(p) * 3600.0
        tokens += t
        tokens_disc += t * d.df_opex(p)
    energy = power.energy_kwh.sum()
    by_period = power.groupby("period", sort=False)
    peak_mw = by_period.facility_kw_peak.sum().max() / 1000.0 if len(power) else 0.0
    peak_it = by_period.it_kw_peak.sum()
    peak_fac = by_period.facility_kw_peak.sum()
    served_peak = demand.groupby("period", sort=False).served_tokens_per_s_peak.sum()
    last = d.periods[-1].label
    gpw = served_peak.get(last, 0.0) / (peak_fac.get(last, 0.0) * 1000.0) \
        if peak_fac.get(last, 0.0) > 0 else 0.0
    hours = power.period.map({p.label: d.hours(i) for i, p in enumerate(d.periods)})
    it_e = ((power.it_kw_avg + power.network_kw) * hours).sum()
    util = fleet.allocated_racks.sum() / fleet.installed_racks.sum() \
        if len(fleet) and fleet.installed_racks.sum() else 0.0
    rows = [
        ("npv_cost_usd", npv - pen, "USD (present value, without unserved penalty)"),
        ("capex_usd", capex, "USD (undiscounted)"),
        ("opex_usd", opex, "USD (undiscounted)"),
        ("usd_per_million_tokens", (npv - pen) / tokens_disc * 1e6 if tokens_disc else None,
         f"USD per million tokens ({LEVELISED_TEXT})"),
        ("tokens_served", tokens, "tokens"),
        ("tokens_per_kwh", tokens / energy if energy else None, "tokens/kWh (facility)"),
        ("goodput_per_watt", gpw, f"tokens/s per W of facility power at peak, {last}"),
        ("peak_facility_mw", peak_mw, "MW"),
        ("peak_it_mw", peak_it.max() / 1000.0 if len(peak_it) else 0.0, "MW"),
        ("energy_mwh", energy / 1000.0, "MWh"),
        ("pue_annual", energy / it_e if it_e else None,
         "- (facility / IT energy, network counted as IT)"),
        ("utilisation_frac", util, "- (allocated / installed rack-periods at peak)"),
        ("carbon_t", power.carbon_t.sum(), "tCO2"),
        ("racks_bought", fleet.new_racks.sum() if len(fleet) else 0.0, "racks"),
        ("unserved_tokens_per_s_peak_max",
         demand.groupby("period").unserved_tokens_per_s_peak.sum().max() if len(demand) else 0,
         "tokens/s"),
    ]
    df = pd.DataFrame(rows, columns=["kpi", "value", "unit"])
    df.attrs["units"] = {"value": "see unit column"}
    return df


def unserved_table(d: PlanInputs, sol: Solution) -> pd.DataFrame:
    """Demand left unserved per (workload, pool, period)."""
    rows = []
    for (w, k, p), x in sorted(sol.unserved.items(), key=lambda kv: (kv[0][2], kv[0][:2])):
        if x <= 1e-6:
            continue
        wd = d.workloads[w]
        need = wd.peak_tokens_per_s(p, k)
        rows.append(dict(workload=w, pool=k, period=d.periods[p].label,
                         short_tokens_per_s_peak=x, demand_tokens_per_s_peak=need,
                         short_frac=x / need if need else 0.0,
                         short_tokens_per_month=x / wd.peak_factor * SECONDS_PER_MONTH))
    return _frame(rows, {"short_tokens_per_s_peak": "tokens/s",
                         "demand_tokens_per_s_peak": "tokens/s", "short_frac": "-",
                         "short_tokens_per_month": "tokens/month (average)"},
                  ["workload", "pool", "period", "short_tokens_per_s_peak",
                   "demand_tokens_per_s_peak", "short_frac", "short_tokens_per_month"])


def objective_value(prob: pulp.LpProblem) -> float:
    """Objective of a solved problem [USD]."""
    return float(pulp.value(prob.objective) or 0.0)
