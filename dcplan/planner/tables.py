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
from typing import Any

import pandas as pd
import pulp

from dcplan.planner.categories import CATEGORIES
from dcplan.planner.inputs import PlanInputs
from dcplan.planner.model import discount
from dcplan.planner.model_vars import ModelVars
from dcplan.planner.network_rows import network_owned
from dcplan.units import SECONDS_PER_MONTH

#: Fields of :class:`Solution` (and ModelVars) that storage and on-site generation fill.
SUPPLY_FIELDS = ("storage_energy_bought_kwh", "storage_power_bought_kw", "storage_energy_kwh",
                 "storage_power_kw", "storage_charge_kw", "storage_discharge_kw",
                 "storage_soc_kwh", "onsite_bought_kw", "onsite_capacity_kw", "onsite_kw",
                 "grid_peak_kw", "grid_requested_flex_kw")


@dataclass
class Solution:
    """Variable values of a solved model: the fields of :class:`ModelVars` of the same names.

    Integer variables are rounded to the nearest integer.
    """

    racks_bought: dict = field(default_factory=dict)
    racks_in_service: dict = field(default_factory=dict)
    racks_allocated: dict = field(default_factory=dict)
    racks_at_cap: dict = field(default_factory=dict)
    unserved_tokens_per_s: dict = field(default_factory=dict)
    cdus_in_service: dict = field(default_factory=dict)
    cdus_bought: dict = field(default_factory=dict)
    capacity_built_kw: dict = field(default_factory=dict)
    spares_kept: dict = field(default_factory=dict)
    grid_requested_kw: dict = field(default_factory=dict)
    grid_requested_assessed_kw: dict = field(default_factory=dict)
    storage_energy_bought_kwh: dict = field(default_factory=dict)
    storage_power_bought_kw: dict = field(default_factory=dict)
    storage_energy_kwh: dict = field(default_factory=dict)
    storage_power_kw: dict = field(default_factory=dict)
    storage_charge_kw: dict = field(default_factory=dict)
    storage_discharge_kw: dict = field(default_factory=dict)
    storage_soc_kwh: dict = field(default_factory=dict)
    onsite_bought_kw: dict = field(default_factory=dict)
    onsite_capacity_kw: dict = field(default_factory=dict)
    onsite_kw: dict = field(default_factory=dict)
    grid_peak_kw: dict = field(default_factory=dict)
    grid_requested_flex_kw: dict = field(default_factory=dict)

    @classmethod
    def from_model(cls, mv: ModelVars) -> Solution:
        """Read the values out of a solved model.

        Parameters
        ----------
        mv : ModelVars
            The model's variables, solved.

        Returns
        -------
        Solution
            Values clipped at 0; integer variables rounded.
        """
        def vals(d, integer=False):
            out = {}
            for k, v in d.items():
                x = v.value() or 0.0
                out[k] = float(round(x)) if integer else max(0.0, float(x))
            return out

        return cls(racks_bought=vals(mv.racks_bought, True),
                   racks_in_service=vals(mv.racks_in_service),
                   racks_allocated=vals(mv.racks_allocated),
                   racks_at_cap=vals(mv.racks_at_cap, True),
                   unserved_tokens_per_s=vals(mv.unserved_tokens_per_s),
                   cdus_in_service=vals(mv.cdus_in_service, True),
                   cdus_bought=vals(mv.cdus_bought), capacity_built_kw=vals(mv.capacity_built_kw),
                   spares_kept=vals(mv.spares_kept, True),
                   grid_requested_kw=vals(mv.grid_requested_kw),
                   grid_requested_assessed_kw=vals(mv.grid_requested_assessed_kw),
                   **{f: vals(getattr(mv, f)) for f in SUPPLY_FIELDS})

    def spares(self, d: PlanInputs, r: str, s: str, p: int) -> float:
        """Spare racks kept of type ``r`` at ``s`` in ``p`` [racks].

        Parameters
        ----------
        d : PlanInputs
            The plan's coefficient tables.
        r : str
            Rack type id.
        s : str
            Site id.
        p : int
            Period index (0-based) [-].

        Returns
        -------
        float
            ``spares_kept x k`` of the pair's N+k [racks].
        """
        return self.spares_kept.get((r, s, p), 0.0) * d.spare_racks.get((r, s), 0)

    def connected_kw(self, d: PlanInputs, s: str, p: int) -> float:
        """Grid capacity connected at ``s`` in ``p`` [kW] (the site's grid without decisions).

        Parameters
        ----------
        d : PlanInputs
            The plan's coefficient tables.
        s : str
            Site id.
        p : int
            Period index (0-based) [-].

        Returns
        -------
        float
            Committed capacity plus the requests energised by ``p``, or ``grid_kw[p]``
            without connection decisions [kW].
        """
        g = d.sites[s].connection
        if g is None:
            return d.sites[s].grid_kw[p]
        return g.committed_kw[p] + sum(x for (s2, q), x in self.grid_requested_kw.items()
                                       if s2 == s and g.arrival[q] <= p) + sum(
            x for (s2, q), x in self.grid_requested_assessed_kw.items()
            if s2 == s and g.arrival_assessed[q] <= p) + self.flexible_kw(d, s, p)

    def flexible_kw(self, d: PlanInputs, s: str, p: int) -> float:
        """Curtailable grid capacity energised at ``s`` by ``p`` [kW] (0 without any).

        Parameters
        ----------
        d : PlanInputs
            The plan's coefficient tables.
        s : str
            Site id.
        p : int
            Period index (0-based) [-].

        Returns
        -------
        float
            The flexible requests energised by ``p`` [kW].
        """
        g = d.sites[s].connection
        if g is None or g.flexible is None:
            return 0.0
        return sum(x for (s2, q), x in self.grid_requested_flex_kw.items()
                   if s2 == s and g.flexible.arrival[q] <= p)

    def installed(self, d: PlanInputs, r: str, s: str, p: int) -> float:
        """Racks in service recomputed from purchases and the existing fleet [racks].

        Parameters
        ----------
        d : PlanInputs
            The plan's coefficient tables.
        r : str
            Rack type id.
        s : str
            Site id.
        p : int
            Period index (0-based) [-].

        Returns
        -------
        float
            Existing racks in service plus the purchases still alive in ``p`` [racks].
        """
        return d.existing_count(r, s, p) + sum(
            n for (r2, s2, q), n in self.racks_bought.items()
            if r2 == r and s2 == s and q <= p and d.alive(r, q, p))


def _frame(rows: list[dict], units: dict[str, str], columns: list[str] | None = None
           ) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=columns or (list(rows[0]) if rows else list(units)))
    df.attrs["units"] = {c: u for c, u in units.items() if c in df.columns}
    return df


def _pool_load(d: PlanInputs, sol: Solution, r: str, s: str, p: int, h) -> tuple[float, float]:
    """(racks serving, racks reserved incl. headroom) of (r, s) in representative hour h."""
    busy = reserved = 0.0
    for (r2, s2, w, key, p2, _c), x in sol.racks_allocated.items():
        if r2 == r and s2 == s and p2 == p:
            f = x * d.schedule_of(w, key, p).frac(h)
            busy += f
            reserved += f / d.workloads[w].target_utilisation
    return busy, reserved


def fleet_table(d: PlanInputs, sol: Solution) -> pd.DataFrame:
    """Racks installed, new, retired, spare, down and allocated per (period, site, rack).

    ``allocated_racks`` are the racks serving demand in the hour the pool is busiest
    (the peak of the sum of the workloads it serves), ``headroom_racks`` the racks kept
    free in that hour for the target peak utilisation, ``unavailable_racks`` the
    availability derate and ``spare_racks`` the N+k spares.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.

    Returns
    -------
    DataFrame
        period, site, rack; installed_racks, new_racks, retired_racks,
        allocated_racks, headroom_racks, unavailable_racks, spare_racks [racks];
        rack_positions [positions]; utilisation_frac [-].
    """
    rows = []
    for s in d.sites:
        for r in d.racks:
            prev = float(d.existing_count(r, s, 0))
            for p, per in enumerate(d.periods):
                inst = sol.installed(d, r, s, p)
                new = sol.racks_bought.get((r, s, p), 0.0)
                retired = max(0.0, prev + new - inst) if p > 0 else 0.0
                prev = inst
                if inst == 0 and new == 0 and retired == 0:
                    continue
                loads = [_pool_load(d, sol, r, s, p, h) for h in d.rep_hours(p)]
                busy, reserved = max(loads, key=lambda t: t[1])
                spare = sol.spares(d, r, s, p)
                rows.append(dict(period=per.label, site=s, rack=r, installed_racks=inst,
                                 new_racks=new, retired_racks=retired,
                                 allocated_racks=busy, headroom_racks=reserved - busy,
                                 unavailable_racks=(1 - d.racks[r].availability)
                                 * (inst - spare), spare_racks=spare,
                                 rack_positions=inst * d.racks[r].rack_positions,
                                 utilisation_frac=busy / inst if inst else 0.0))
    return _frame(rows, {"installed_racks": "racks", "new_racks": "racks",
                         "retired_racks": "racks", "allocated_racks": "racks (at peak)",
                         "headroom_racks": "racks (at peak)", "unavailable_racks": "racks",
                         "spare_racks": "racks", "rack_positions": "positions",
                         "utilisation_frac": "-"},
                  ["period", "site", "rack", "installed_racks", "new_racks", "retired_racks",
                   "allocated_racks", "headroom_racks", "unavailable_racks", "spare_racks",
                   "rack_positions", "utilisation_frac"])


def allocation_table(d: PlanInputs, sol: Solution) -> pd.DataFrame:
    """Racks serving each workload pool at the peak of its schedule, with their tokens/s.

    ``schedule`` is the workload's profile (``profile``), ``peak`` without one, or for
    flexible work the candidate served this way (``demand``, ``flat``, ``valley``).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.

    Returns
    -------
    DataFrame
        period, site, rack, workload, pool, schedule; racks [racks]; tokens_per_s
        [tokens/s] (at the schedule's peak; input + output for ``all``, input for
        ``prefill``, output for ``decode``); it_kw [kW] (at the operating point).
    """
    rows = []
    for (r, s, w, key, p, c), x in sorted(sol.racks_allocated.items(),
                                          key=lambda kv: (kv[0][4], kv[0][:4],
                                                          -(kv[0][5] or 1.0))):
        if x <= 1e-6:  # below the solver's feasibility tolerance
            continue
        pool, _ = d.pool_of(w, key, p)
        rows.append(dict(period=d.periods[p].label, site=s, rack=r, workload=w, pool=pool,
                         schedule=d.schedule_of(w, key, p).name, racks=x,
                         tokens_per_s=x * d.rate(r, w, key, p, c, site=s),
                         it_kw=x * d.perf_at(r, w, c).power_kw,
                         **({} if not d.cap_levels else {"power_cap_frac": c or 1.0})))
    return _frame(rows, {"racks": "racks", "tokens_per_s": "tokens/s (peak)", "it_kw": "kW"},
                  ["period", "site", "rack", "workload", "pool", "schedule", "racks",
                   "tokens_per_s", "it_kw"])


def caps_table(d: PlanInputs, sol: Solution, power: pd.DataFrame) -> pd.DataFrame:
    """Racks at each power cap level per (period, site, rack), and each site's yield per MW.

    Only for a plan whose scenario offers ``power_caps``: a rack type without levels
    is listed at cap 1. ``tokens_per_s`` sums the allocations at the level at their
    schedules' peaks (as the allocation table); the site columns divide the site's
    racks in service and its tokens/s at peak by its facility peak (``power`` table,
    the plan's power basis).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.
    power : DataFrame
        The plan's power table (``facility_kw_peak`` per period and site [kW]).

    Returns
    -------
    DataFrame
        period, site, rack, power_cap_frac [-]; racks [racks]; power_at_cap_kw
        [kW/rack]; tokens_per_s [tokens/s at peak]; site_facility_kw_peak [kW];
        site_racks_per_mw [racks/MW]; site_tokens_per_s_per_mw [tokens/s per MW].
    """
    cols = ["period", "site", "rack", "power_cap_frac", "racks", "power_at_cap_kw",
            "tokens_per_s", "site_facility_kw_peak", "site_racks_per_mw",
            "site_tokens_per_s_per_mw"]
    tokens = defaultdict(float)
    for (r, s, w, key, p, c), x in sol.racks_allocated.items():
        tokens[r, s, p, c] += x * d.rate(r, w, key, p, c, site=s)
    peak = {(str(row.period), row.site): row.facility_kw_peak for row in power.itertuples()} \
        if len(power) else {}
    rows = []
    for p, per in enumerate(d.periods):
        for s in d.sites:
            part = []
            for r in d.racks:
                for c in d.caps(r):
                    n = sol.installed(d, r, s, p) if c is None else \
                        sol.racks_at_cap.get((r, s, p, c), 0.0)
                    if n <= 0:
                        continue
                    part.append(dict(period=per.label, site=s, rack=r,
                                     power_cap_frac=1.0 if c is None else c, racks=n,
                                     power_at_cap_kw=d.peak_rack_kw(r, c),
                                     tokens_per_s=tokens[r, s, p, c]))
            mw = peak.get((per.label, s), 0.0) / 1000.0
            n_site = sum(row["racks"] for row in part)
            t_site = sum(row["tokens_per_s"] for row in part)
            for row in part:
                row.update(site_facility_kw_peak=mw * 1000.0,
                           site_racks_per_mw=n_site / mw if mw > 0 else 0.0,
                           site_tokens_per_s_per_mw=t_site / mw if mw > 0 else 0.0)
            rows += part
    return _frame(rows, {"power_cap_frac": "-", "racks": "racks", "power_at_cap_kw": "kW/rack",
                         "tokens_per_s": "tokens/s (peak)", "site_facility_kw_peak": "kW",
                         "site_racks_per_mw": "racks/MW",
                         "site_tokens_per_s_per_mw": "tokens/s (peak) per MW"}, cols)


def demand_table(d: PlanInputs, sol: Solution) -> pd.DataFrame:
    """Demand vs served tokens/s per (period, workload, pool), at the peak and on average.

    ``demand_stated`` is the demand in the unit the scenario states it in
    (``demand_unit``: tokens, requests or characters per month or day), converted to
    tokens with ``tokens_per_unit`` as ``conversion`` says.

    The peak demand is as it arrives; a flexible workload may be served at another
    time (``served_tokens_per_s_peak`` is its served peak).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.

    Returns
    -------
    DataFrame
        period, workload, pool; demand_stated [demand_unit], tokens_per_unit
        [tokens/unit]; demand, served and unserved tokens per second, average and
        peak [tokens/s] (the pool's share: input + output for ``all``, input for
        ``prefill``, output for ``decode``).
    """
    served_avg = defaultdict(float)
    by_hour = defaultdict(float)
    for (r, s, w, key, p, c), x in sol.racks_allocated.items():
        pool, _ = d.pool_of(w, key, p)
        sch = d.schedule_of(w, key, p)
        rate = d.rate(r, w, key, p, c, site=s)
        served_avg[w, pool, p] += x * rate / sch.peak_factor
        for h in d.rep_hours(p):
            by_hour[w, pool, p, h] += x * rate * sch.frac(h)
    rows = []
    for p, per in enumerate(d.periods):
        for w, wd in d.workloads.items():
            multi = d.multi_schedule(w, p)
            m = d.schedules(w, p)[0].peak_factor
            for k in wd.pools:
                need = wd.peak_tokens_per_s(p, k)
                u = sol.unserved_tokens_per_s.get((w, k, p), 0.0)
                u_avg = u if multi else u / m
                rows.append(dict(period=per.label, workload=w, pool=k,
                                 demand_stated=wd.demand_stated(p) * wd.pool_share(k),
                                 demand_unit=wd.demand_unit,
                                 tokens_per_unit=wd.tokens_per_unit,
                                 conversion=wd.conversion,
                                 demand_tokens_per_s_avg=wd.demand_tokens_per_s[p]
                                 * wd.pool_share(k),
                                 demand_tokens_per_s_peak=need,
                                 served_tokens_per_s_avg=served_avg[w, k, p],
                                 served_tokens_per_s_peak=max(
                                     (by_hour[w, k, p, h] for h in d.rep_hours(p)), default=0.0),
                                 unserved_tokens_per_s_avg=u_avg,
                                 unserved_tokens_per_s_peak=u_avg * m))
    return _frame(rows, {"demand_stated": "see demand_unit (average)",
                         "tokens_per_unit": "input + output tokens per unit",
                         "demand_tokens_per_s_avg": "tokens/s",
                         "demand_tokens_per_s_peak": "tokens/s",
                         "served_tokens_per_s_avg": "tokens/s",
                         "served_tokens_per_s_peak": "tokens/s",
                         "unserved_tokens_per_s_avg": "tokens/s",
                         "unserved_tokens_per_s_peak": "tokens/s"})


def _rack_it_kw(d: PlanInputs, sol: Solution, r: str, s: str, p: int, average: bool,
                hour=None) -> float:
    """IT power of rack type r at s in p [kW], as in the MILP.

    Annual average, or in representative hour ``hour`` (headroom racks at serving power);
    ``average`` with an ``hour``: the power serving the load in that hour
    (:func:`~dcplan.planner.profiles.served_share`; its mean over the hours is the
    average).
    """
    rk = d.racks[r]
    if d.nameplate_peak and not average:
        if d.capped_peak and r in d.cap_levels:
            return sum(d.peak_rack_kw(r, c) * sol.racks_at_cap.get((r, s, p, c), 0.0)
                       for c in d.cap_levels[r])
        return rk.it_power_max_kw * sol.installed(d, r, s, p)
    it = rk.it_power_idle_kw * sol.installed(d, r, s, p)
    for (r2, s2, w, key, p2, c), x in sol.racks_allocated.items():
        if r2 == r and s2 == s and p2 == p:
            sch = d.schedule_of(w, key, p)
            extra = max(0.0, d.perf_at(r, w, c).power_kw - rk.it_power_idle_kw) * x
            v = sch.values[hour] if average and hour is not None and sch.values else 1.0
            it += extra * v / sch.peak_factor if average else \
                extra * sch.frac(hour) / d.workloads[w].target_utilisation
    return it


def _site_power(d: PlanInputs, sol: Solution, s: str, p: int, average: bool, hour=None,
                provisioned: bool = False) -> dict[str, float]:
    """IT, cooling, network and loss power of site s in p [kW].

    ``provisioned``: at a power-oversubscribed site the racks' IT power (and with it
    their cooling and losses) at the factor the site provisions, as the MILP's peak
    (the network is not capped and counts in full).
    """
    acc = defaultdict(float)
    share = d.power_oversub.get(s, 1.0) if provisioned and not average else 1.0
    for r in d.racks:
        n = sol.installed(d, r, s, p)
        if n == 0:
            continue
        rs = d.rack_site[r, s]
        it = _rack_it_kw(d, sol, r, s, p, average, hour)
        if share != 1.0:
            it *= share
        cool = it * (rs.cooling_kw_per_it_kw_avg if average else rs.cooling_kw_per_it_kw_peak)
        net = n * rs.network_kw(p, n) if d.linear_network(r) else \
            rack_network(d, r, n)["kw"]
        acc["it"] += it
        acc["cool"] += cool
        acc["net"] += net
        acc["loss"] += rs.loss_frac * (it + cool + net)
    acc["facility"] = acc["it"] + acc["cool"] + acc["net"] + acc["loss"]
    return acc


def recharge_kw(d: PlanInputs, sol: Solution, s: str, p: int) -> float:
    """UPS battery recharge at ``s`` in ``p`` on top of the facility peak [kW].

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.
    s : str
        Site id.
    p : int
        Period index (0-based) [-].

    Returns
    -------
    float
        ``recharge_kw_per_it_kw x it_power_max_kw x racks in service`` (on nameplate
        IT power; with a capped peak, a rack offered caps counts at
        ``power_at_cap_kw`` of the level it runs at) [kW].
    """
    def rack_kw(r: str) -> float:
        if d.capped_peak and r in d.cap_levels:  # each cap level at its cap's power
            return sum(d.peak_rack_kw(r, c) * sol.racks_at_cap.get((r, s, p, c), 0.0)
                       for c in d.cap_levels[r])
        return d.racks[r].it_power_max_kw * sol.installed(d, r, s, p)

    return sum(d.rack_site[r, s].recharge_kw_per_it_kw * rack_kw(r)
               for r in d.racks if (r, s) in d.rack_site)


def water_m3(d: PlanInputs, sol: Solution, s: str, p: int) -> float:
    """Site water in period ``p`` at full load (what the water limit bounds) [m3].

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.
    s : str
        Site id.
    p : int
        Period index (0-based) [-].

    Returns
    -------
    float
        ``WUE x it_power_max_kw x racks x hours / 1000`` (nameplate IT power all
        period) [m3].
    """
    return sum(d.rack_site[r, s].water_l_per_it_kwh * d.racks[r].it_power_max_kw
               * sol.installed(d, r, s, p) * d.hours(p) / 1000.0
               for r in d.racks if (r, s) in d.rack_site)


def peak_hour(d: PlanInputs, sol: Solution, s: str, p: int):
    """The representative hour of the site's facility peak in period p.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.
    s : str
        Site id.
    p : int
        Period index (0-based) [-].

    Returns
    -------
    int or tuple or None
        The representative hour (an hour index, a merged group of them, or None
        for one hour or a nameplate peak) [-].
    """
    hours = (None,) if d.nameplate_peak else d.rep_hours(p)
    return max(hours, key=lambda h: _site_power(d, sol, s, p, False, h)["facility"])


def power_table(d: PlanInputs, sol: Solution) -> pd.DataFrame:
    """IT, cooling, network, losses and facility power vs grid per (period, site) [kW].

    The peak columns are those of the representative hour with the largest facility
    power (``peak_hour``: the peak of the sum of the workloads' profiles); ``grid_kw``
    is the connected grid capacity (connectable with connection decisions:
    ``connectable_kw``, see the ``grid`` table). ``recharge_kw`` is the UPS battery
    recharge of the site's redundancy topology (``power_redundancy``) that the
    connection carries on top of the facility peak; ``headroom_kw = grid - facility
    peak - recharge``; ``network_positions`` the network racks of the site's fabrics.

    IT power is the racks' IT power plus the network's (:data:`IT_MEANS`):
    ``it_total_kw_peak = it_kw_peak + network_kw`` (``it_kw_peak`` is the racks'
    part, ``network_kw`` the fabric's, both components of the facility power) and
    ``it_total_kw_avg`` likewise. The PUEs of these figures (peak hour and annual) are
    in the ``cooling`` table (:func:`cooling_table`).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.

    Returns
    -------
    DataFrame
        period, site, peak_hour; power columns ``*_kw*`` [kW] (``_peak``: design-day
        cooling at the peak hour, operating point or nameplate as the plan sizes;
        ``_avg``: annual average); energy_kwh [kWh] (the facility's); carbon_t [tCO2]
        (the grid's emission factor on the energy bought, plus the on-site
        generation's emissions at a site with storage or generation);
        network_positions [positions].
    """
    from dcplan.planner.profiles import hour_label

    rows = []
    for s, sd in d.sites.items():
        built = sd.built_kw_initial
        for p, per in enumerate(d.periods):
            built += sol.capacity_built_kw.get((s, p), 0.0)
            h = peak_hour(d, sol, s, p)
            pk = _site_power(d, sol, s, p, False, h, provisioned=True)
            av = _site_power(d, sol, s, p, True)
            energy = av["facility"] * d.hours(p)
            grid = sol.connected_kw(d, s, p)
            recharge = recharge_kw(d, sol, s, p)
            rows.append(dict(
                period=per.label, site=s, peak_hour=hour_label(h, d.day_names),
                it_kw_peak=pk["it"], cooling_kw_peak=pk["cool"], network_kw=pk["net"],
                losses_kw_peak=pk["loss"], facility_kw_peak=pk["facility"],
                recharge_kw=recharge, power_redundancy=sd.power_redundancy,
                network_positions=network_racks(d, sol, s, p),
                grid_kw=grid, connectable_kw=sd.grid_kw[p],
                headroom_kw=grid - pk["facility"] - recharge if (s, p) not in sol.grid_peak_kw
                else grid - sol.grid_peak_kw[s, p],
                built_kw=built, it_kw_avg=av["it"], facility_kw_avg=av["facility"],
                energy_kwh=energy, carbon_t=energy * sd.carbon_kg_per_kwh / 1000.0
                if (s, p) not in sol.grid_peak_kw else supply_carbon_t(d, sol, s, p, energy),
                it_total_kw_peak=pk["it"] + pk["net"], it_total_kw_avg=av["it"] + av["net"]))
    return _frame(rows, POWER_UNITS)


def supply_carbon_t(d: PlanInputs, sol: Solution, s: str, p: int, energy_kwh: float) -> float:
    """Emissions of a site with storage or on-site generation in period p [tCO2].

    The grid's factor on the energy bought (the facility's energy plus charge less
    discharge and generation) plus the generation's own emissions.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.
    s : str
        Site id.
    p : int
        Period index (0-based) [-].
    energy_kwh : float
        The facility's energy in the period [kWh].

    Returns
    -------
    float
        [tCO2].
    """
    from dcplan.planner.supply import net_avg_terms, onsite_emission_terms

    net = sum(v * c for v, c in net_avg_terms(d, sol, s, p)) * d.hours(p)
    grid = (energy_kwh + net) * d.sites[s].carbon_kg_per_kwh
    own = sum(v * c for v, c in onsite_emission_terms(d, sol, p, sites=(s,)))
    return (grid + own) / 1000.0


#: What "IT power" means in every table, KPI and PUE of a plan.
IT_MEANS = "racks + network"
#: Units of the ``power`` table's numeric columns (:func:`power_table`).
POWER_UNITS = {
    **{c: "kW" for c in ("it_kw_peak", "cooling_kw_peak", "network_kw", "losses_kw_peak",
                         "facility_kw_peak", "recharge_kw", "grid_kw", "connectable_kw",
                         "headroom_kw", "built_kw", "it_kw_avg", "facility_kw_avg")},
    "energy_kwh": "kWh", "carbon_t": "tCO2", "network_positions": "positions",
    "it_total_kw_peak": f"kW ({IT_MEANS}, at the peak hour)",
    "it_total_kw_avg": f"kW ({IT_MEANS}, annual average)"}
#: Unit of the ``peak_it_mw`` KPI.
PEAK_IT_UNIT = f"MW ({IT_MEANS}, at the facility peak)"
#: Units of the two PUEs (``cooling`` table and KPIs).
PUE_UNITS = {"pue_annual": f"- (facility / IT energy, IT = {IT_MEANS})",
             "pue_peak": f"- (facility / IT power in the hour of the facility peak, "
                         f"IT = {IT_MEANS})"}


def hours_table(d: PlanInputs, sol: Solution) -> pd.DataFrame:
    """Facility power of each site in each representative hour [kW]: the peak of the sum.

    As the plan sizes it (the power basis; at a power-oversubscribed site the racks'
    part at the site's factor, as the ``power`` table's peak).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.

    Returns
    -------
    DataFrame
        period, site, hour; it_kw (racks), it_total_kw (racks + network),
        facility_kw [kW] (design-day cooling).
    """
    from dcplan.planner.profiles import hour_label

    rows = []
    for s in d.sites:
        for p, per in enumerate(d.periods):
            hours = (None,) if d.nameplate_peak else d.rep_hours(p)
            for h in hours:
                pw = _site_power(d, sol, s, p, False, h, provisioned=True)
                if pw["facility"] <= 0:
                    continue
                rows.append(dict(period=per.label, site=s, hour=hour_label(h, d.day_names),
                                 it_kw=pw["it"], facility_kw=pw["facility"],
                                 it_total_kw=pw["it"] + pw["net"]))
    return _frame(rows, HOURS_UNITS, ["period", "site", "hour", *HOURS_UNITS])


#: Units of the ``hours`` table's numeric columns (:func:`hours_table`).
HOURS_UNITS = {"it_kw": "kW", "facility_kw": "kW", "it_total_kw": f"kW ({IT_MEANS})"}


def schedules_table(d: PlanInputs, sol: Solution) -> pd.DataFrame:
    """How each workload's demand is spread over the day: share served by each schedule.

    One row per (period, workload, schedule): its peak over mean and the share of the
    workload's (mean) tokens served that way, with the hour of its peak.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.

    Returns
    -------
    DataFrame
        period, workload, schedule, flexible, peak_to_average [-], peak_hour,
        share_frac [-] (of the mean tokens served).
    """
    from dcplan.planner.profiles import hour_label

    served = defaultdict(float)
    for (r, s, w, key, p, c), x in sol.racks_allocated.items():
        pool, j = d.pool_of(w, key, p)
        if pool == "decode":
            continue
        sch = d.schedules(w, p)[j]
        served[w, p, j] += x * d.rate(r, w, key, p, c, site=s) / sch.peak_factor / \
            d.workloads[w].pool_share(pool)
    rows = []
    for p, per in enumerate(d.periods):
        for w, wd in d.workloads.items():
            if wd.demand_tokens_per_s[p] <= 0:
                continue
            total = sum(served[w, p, j] for j in range(len(d.schedules(w, p)))) or 1.0
            for j, sch in enumerate(d.schedules(w, p)):
                top = None if sch.values is None else max(range(len(sch.values)),
                                                            key=lambda h: sch.values[h])
                rows.append(dict(period=per.label, workload=w, schedule=sch.name,
                                 flexible=wd.flexible, peak_to_average=sch.peak_factor,
                                 peak_hour=hour_label(top, d.day_names),
                                 share_frac=served[w, p, j] / total))
    return _frame(rows, {"peak_to_average": "-", "share_frac": "- (of mean tokens)"},
                  ["period", "workload", "schedule", "flexible", "peak_to_average", "peak_hour",
                   "share_frac"])


def grid_table(d: PlanInputs, sol: Solution, power: pd.DataFrame) -> pd.DataFrame:
    """Grid connections per (period, site): connectable, requested, connected and used [kW].

    Only sites whose connection is a decision. ``requested_kw`` / ``requested_assessed_kw``
    are requested in the period (energised after the lead time, with the assessment's extra
    months), ``energised_kw`` the requests that arrive in it (flexible ones included),
    ``used_kw`` what the connection carries: the facility peak plus the UPS recharge (as in
    the grid rows and the ``binding`` table); at a site with storage or on-site generation
    the grid's own peak (the recharge is carried by the grid and the generation together,
    rows ``supply_firm``).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.
    power : DataFrame
        The plan's :func:`power_table` (power [kW], energy [kWh]).

    Returns
    -------
    DataFrame
        period, site; connectable, committed, requested, requested_assessed,
        energised, connected and used [kW]; lead_time_months, assessment_months
        [months].
    """
    rows = []
    peak = (power.set_index(["period", "site"]).eval("facility_kw_peak + recharge_kw")
            if len(power) else {})
    for s, sd in d.sites.items():
        g = sd.connection
        if g is None:
            continue
        for p, per in enumerate(d.periods):
            arriving = sum(x for (s2, q), x in sol.grid_requested_kw.items()
                           if s2 == s and g.arrival[q] == p)
            arriving += sum(x for (s2, q), x in sol.grid_requested_assessed_kw.items()
                            if s2 == s and g.arrival_assessed[q] == p)
            if g.flexible is not None:
                arriving += sum(x for (s2, q), x in sol.grid_requested_flex_kw.items()
                                if s2 == s and g.flexible.arrival[q] == p)
            conn = sol.connected_kw(d, s, p)
            rows.append(dict(period=per.label, site=s, connectable_kw=sd.grid_kw[p],
                             committed_kw=g.committed_kw[p],
                             requested_kw=sol.grid_requested_kw.get((s, p), 0.0),
                             requested_assessed_kw=sol.grid_requested_assessed_kw.get((s, p), 0.0),
                             energised_kw=arriving, connected_kw=conn,
                             used_kw=float(peak.get((per.label, s), 0.0)) if (s, p)
                             not in sol.grid_peak_kw else sol.grid_peak_kw[s, p],
                             lead_time_months=g.lead_time_months,
                             assessment_months=g.assessment_months,
                             **_flexible_columns(d, sol, s, p)))
    cols = ["period", "site", "connectable_kw", "committed_kw", "requested_kw",
            "requested_assessed_kw", "energised_kw", "connected_kw", "used_kw",
            "lead_time_months", "assessment_months"]
    units = {**{c: "kW" for c in cols[2:9]}, "lead_time_months": "months",
             "assessment_months": "months"}
    if any(sd.connection is not None and sd.connection.flexible is not None
           for sd in d.sites.values()):
        units.update(FLEX_UNITS)
        cols += list(FLEX_UNITS)
    return _frame(rows, units, cols)


#: Columns of the ``grid`` table a plan offered a flexible connection adds.
FLEX_UNITS = {"requested_flex_kw": "kW", "flexible_kw": "kW", "curtailed_kw": "kW",
              "curtailment_hours": "h/yr", "deferred_tokens": "tokens/yr"}


def _flexible_columns(d: PlanInputs, sol: Solution, s: str, p: int) -> dict:
    """The flexible part of site s's connection in period p (empty without one).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.
    s : str
        Site id.
    p : int
        Period index (0-based) [-].

    Returns
    -------
    dict
        ``requested_flex_kw`` (requested in p), ``flexible_kw`` (energised by p),
        ``curtailed_kw`` (depth x flexible: what an event cuts) [kW];
        ``curtailment_hours`` (the allowance, all of it assumed used where flexible MW
        are energised) [h/yr]; ``deferred_tokens`` (:func:`deferred_tokens`)
        [tokens/yr].
    """
    fx = d.sites[s].connection.flexible
    if fx is None:
        return dict.fromkeys(FLEX_UNITS, 0.0)
    flexible = sol.flexible_kw(d, s, p)
    cut = fx.depth * flexible
    hours = fx.hours_per_year if cut > 1e-9 else 0.0
    return dict(requested_flex_kw=sol.grid_requested_flex_kw.get((s, p), 0.0),
                flexible_kw=flexible, curtailed_kw=cut, curtailment_hours=hours,
                deferred_tokens=deferred_tokens(d, sol, s, p) if hours else 0.0)


def deferred_tokens(d: PlanInputs, sol: Solution, s: str, p: int) -> float:
    """Tokens a year that site s's flexible workloads defer out of the curtailment events.

    For every flexible workload served at s (its schedule mix there, from the
    allocation, as the ``schedules`` table counts tokens), what arrives in the event's
    hours of each representative day less what is served in them (at least 0 per day),
    averaged over the days with their weights, per event hour, times the allowance
    (``hours_per_year``, all of it assumed used). Work deferred is served later within
    its deadline; none is dropped (the ``curtail`` rows are hard). Without profiles
    (one flat hour) nothing is deferred.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.
    s : str
        Site id (its connection offers a flexible part).
    p : int
        Period index (0-based) [-].

    Returns
    -------
    float
        Tokens deferred per year [tokens/yr].
    """
    from dcplan.planner.flexgrid import event_hours
    from dcplan.schema import HOURS_PER_DAY

    fx = d.sites[s].connection.flexible
    hours = event_hours(d, s, p)
    if hours == (None,) or not hours:
        return 0.0
    served = defaultdict(float)  # (w, j) -> mean tokens/s served at s
    for (r, s2, w, key, p2, c), x in sol.racks_allocated.items():
        if s2 != s or p2 != p or not d.workloads[w].flexible:
            continue
        pool, j = d.pool_of(w, key, p)
        if pool == "decode":
            continue
        sch = d.schedules(w, p)[j]
        served[w, j] += x * d.rate(r, w, key, p, c, site=s) / sch.peak_factor / \
            d.workloads[w].pool_share(pool)
    per_day = defaultdict(float)  # day -> tokens/s x h deferred in its event
    for (w, j), tps in served.items():
        arrive = d.schedules(w, p)[0].values
        vals = d.schedules(w, p)[j].values
        if arrive is None or vals is None:
            continue
        for h in hours:
            per_day[w, h // HOURS_PER_DAY] += tps * (arrive[h] - vals[h])
    per_hour = sum(d.day_weights[day] * max(0.0, x) for (_w, day), x in per_day.items())
    return per_hour / len(fx.event_hours) * fx.hours_per_year * 3600.0


def cooling_table(d: PlanInputs, sol: Solution, power: pd.DataFrame) -> pd.DataFrame:
    """Liquid and air heat, CDUs and PUE per (period, site).

    Both heat shares come from the same IT figure, the peak IT power of the power
    table: liquid = sum over rack types of ``liquid_heat_frac x IT`` (the rack's
    liquid heat at full load divided by its full-load IT power, times its IT power at
    peak); air = the rest of the IT heat plus the network's heat (switches and optics
    are air-cooled). ``liquid_heat_kw_full_load`` is the liquid heat with every rack at
    full load, which the CDUs are sized for. ``pue_annual = facility_kw_avg /
    it_total_kw_avg`` (energy-weighted) and ``pue_peak = facility_kw_peak /
    it_total_kw_peak`` (the hour that sets the site's facility peak), IT power being
    racks + network in both (:data:`IT_MEANS`); NaN where nothing runs.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.
    power : DataFrame
        The plan's :func:`power_table` (power [kW], energy [kWh]).

    Returns
    -------
    DataFrame
        period, site, liquid_heat_kw [kW, peak], air_heat_kw [kW, peak],
        liquid_heat_kw_full_load [kW]; the cooling model's CDUs for the racks in
        service, empty here and filled by :func:`dcplan.planner.cdus.apply_cdu_answer`
        where the catalog is at hand (``run_plan``): cdu_ids, cdus [units, redundancy
        included], cdus_by_model ("model: count"), cdu_positions [rack positions],
        cdu_capex_usd [USD, installed value], cdu_capex_diff_usd [USD, cooling model
        minus MILP]; what the MILP priced: milp_cdus_by_model ("model: count, ..."),
        milp_cdus [units, redundancy included; the CDUs in service: bought ones are
        kept], milp_cdu_positions [rack positions], milp_cdu_capex_usd [USD, installed
        value]; cooling_kw_peak [kW], pue_annual, pue_peak [-], water_m3 [m3],
        water_limit_m3 [m3], wue_l_per_kwh [L/kWh].
    """
    rows = []
    cdus = defaultdict(float)
    cdu_pos = defaultdict(float)
    cdu_value = defaultdict(float)
    by_model = defaultdict(list)
    for (s, c, p), n in sorted(sol.cdus_in_service.items()):
        if n:
            by_model[s, p].append(f"{c}: {n:g}")
        cdus[s, p] += n
        cdu_value[s, p] += n * d.cdu_data(s, c).cdu_capex_usd
        cdu_pos[s, p] += n * d.cdu_data(s, c).cdu_positions
    pw = power.set_index(["period", "site"])
    hours = {(s, p): peak_hour(d, sol, s, p) for s in d.sites for p in range(len(d.periods))}
    for s, sd in d.sites.items():
        for p, per in enumerate(d.periods):
            liquid = liquid_full = 0.0
            it_full = sum(d.racks[r].it_power_max_kw * sol.installed(d, r, s, p)
                          for r in d.racks) * d.hours(p)
            for r, rk in d.racks.items():
                rs = d.rack_site.get((r, s))
                n = sol.installed(d, r, s, p)
                if rs is None or n == 0 or rk.it_power_max_kw <= 0:
                    continue
                frac = rs.liquid_heat_kw_per_rack / rk.it_power_max_kw
                liquid += frac * _rack_it_kw(d, sol, r, s, p, False, hours[s, p])
                liquid_full += rs.liquid_heat_kw_per_rack * n
            row = pw.loc[(per.label, s)]
            air = max(0.0, row.it_kw_peak - liquid) + row.network_kw
            it_avg, it_peak = row.it_total_kw_avg, row.it_total_kw_peak
            rows.append(dict(period=per.label, site=s, liquid_heat_kw=liquid, air_heat_kw=air,
                             liquid_heat_kw_full_load=liquid_full,
                             cdu_ids="", cdus=None, cdus_by_model="", cdu_positions=None,
                             cdu_capex_usd=None, cdu_capex_diff_usd=None,
                             milp_cdus_by_model=", ".join(by_model[s, p]),
                             milp_cdus=cdus[s, p], milp_cdu_positions=cdu_pos[s, p],
                             milp_cdu_capex_usd=cdu_value[s, p],
                             cooling_kw_peak=row.cooling_kw_peak,
                             water_m3=water_m3(d, sol, s, p),
                             water_limit_m3=(sd.water_limit_m3_per_year * per.years
                                             if sd.water_limit_m3_per_year is not None
                                             else None),
                             wue_l_per_kwh=(water_m3(d, sol, s, p) * 1000.0 / it_full
                                            if it_full > 0 else None),
                             pue_annual=row.facility_kw_avg / it_avg if it_avg > 0 else None,
                             pue_peak=(row.facility_kw_peak / it_peak if it_peak > 0
                                       else None)))
    return _frame(rows, {"liquid_heat_kw": "kW (peak)", "air_heat_kw": "kW (peak)",
                         "liquid_heat_kw_full_load": "kW (full load, CDU sizing)",
                         "cdus": "units", "cdu_positions": "positions",
                         "cdu_capex_usd": "USD (installed)",
                         "cdu_capex_diff_usd": "USD (installed, cooling model - MILP)",
                         "milp_cdus": "units", "milp_cdu_positions": "positions",
                         "milp_cdu_capex_usd": "USD (installed)",
                         "cooling_kw_peak": "kW", **PUE_UNITS,
                         "water_m3": "m3 (period, full load)", "water_limit_m3": "m3 (period)",
                         "wue_l_per_kwh": "L per IT kWh (full load)"},
                  ["period", "site", "liquid_heat_kw", "air_heat_kw", "liquid_heat_kw_full_load",
                   "cdu_ids", "cdus", "cdus_by_model", "cdu_positions", "cdu_capex_usd",
                   "cdu_capex_diff_usd", "milp_cdus_by_model", "milp_cdus",
                   "milp_cdu_positions", "milp_cdu_capex_usd", "cooling_kw_peak",
                   "pue_annual", "pue_peak", "water_m3", "water_limit_m3",
                   "wue_l_per_kwh"])


def rack_network(d: PlanInputs, r: str, n: float) -> dict[str, float]:
    """Exact network of ``n`` racks of ``r`` (both fabrics) [kW, USD, U, count].

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    r : str
        Rack type id.
    n : float
        Racks in service [racks].

    Returns
    -------
    dict
        ``kw``, ``capex_usd`` (installed value), ``rack_units``, ``switches``.
    """
    from dcplan.planner.fabric import fabric_counts, fabric_figures

    out = defaultdict(float)
    if n <= 0:
        return out
    for fd in d.fabrics.get(r, ()):
        for k, v in fabric_figures(fd, fabric_counts(fd, n)).items():
            out[k] += v
    return out


def network_items(d: PlanInputs, sol: Solution, s: str, p: int) -> dict[str, float]:
    """Network items in service at ``s`` in ``p`` (the MILP's ``fabric_items``).

    Switch model -> switches, ``links_<rack>`` -> USD of links, recomputed from the fleet.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.
    s : str
        Site id.
    p : int
        Period index (0-based) [-].

    Returns
    -------
    dict of str to float
        Switch model -> switches [count]; ``links_<rack>`` -> value of links [USD].
    """
    from dcplan.planner.fabric import TIERS, fabric_counts

    out: dict[str, float] = defaultdict(float)
    for r, fabrics in d.fabrics.items():
        n = sol.installed(d, r, s, p)
        if n <= 0:
            continue
        for fd in fabrics:
            c = fabric_counts(fd, n)
            out[fd.switch_id] += c["leaf"] + c["spine"] + c["core"]
            out[f"links_{r}"] += sum(c[t] * fd.link_capex_usd[t] for t in TIERS)
    return out


def network_racks(d: PlanInputs, sol: Solution, s: str, p: int,
                  more: str | None = None) -> float:
    """Network-rack positions of the plan at ``s`` in ``p`` [positions].

    The integer fabrics' ``ceil(switch units / units per rack)``, plus, for rack types
    with the linear network, their per-rack figure times the racks in service (what
    the space row counts).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.
    s : str
        Site id.
    p : int
        Period index (0-based) [-].
    more : str, optional
        With one more rack of this type in service (would one more rack fit?).

    Returns
    -------
    float
        [positions].
    """
    import math

    def n_of(r: str) -> float:
        return sol.installed(d, r, s, p) + (1.0 if r == more else 0.0)

    units = sum(rack_network(d, r, n_of(r))["rack_units"] for r in d.fabrics)
    out = float(math.ceil(units / (d.network_rack_units or 1) - 1e-9)) if units else 0.0
    for r in d.racks:
        if d.linear_network(r) and (r, s) in d.rack_site:
            n = n_of(r)
            out += d.rack_site[r, s].network_positions(p, n) * n
    return out


def network_table(d: PlanInputs, sol: Solution) -> pd.DataFrame:
    """Network per (period, site, rack, fabric): switches, links, power and capex.

    With fabric data the counts are the exact step functions of the racks in service
    (:func:`~dcplan.planner.fabric.fabric_counts`, what the MILP's integer rows
    hold); ``network_capex_usd`` is the installed value (switches and links at the
    catalog price), ``network_kw`` at full load. Rack types without fabric data in the
    MILP (``network_model: linear``, or hand-made inputs) get one ``linear`` row from
    their per-rack coefficients of the period, what the optimizer costed (power per rack
    in service, capex per rack bought); the exact switches, links
    and optics of their fleet are in the ``equipment`` and ``bom`` tables, and the
    difference in ``sizing``.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.

    Returns
    -------
    DataFrame
        period, site, rack, fabric, switch_id; racks [racks]; switches [switches];
        links [links]; network_kw [kW] (full load); network_capex_usd [USD]
        (installed value).
    """
    from dcplan.planner.fabric import fabric_counts, fabric_figures

    rows = []
    for s in d.sites:
        for r in d.racks:
            for p, per in enumerate(d.periods):
                n = sol.installed(d, r, s, p)
                if n == 0:
                    continue
                rs = d.rack_site[r, s]
                if d.linear_network(r):
                    rows.append(dict(period=per.label, site=s, rack=r, fabric="linear",
                                     racks=n, switch_id="",  # text, as in fabric rows
                                     network_kw=n * rs.network_kw(p, n),
                                     network_capex_usd=n * rs.network_capex(p, n)))
                    continue
                for fd in d.fabrics[r]:
                    c = fabric_counts(fd, n)
                    f = fabric_figures(fd, c)
                    rows.append(dict(period=per.label, site=s, rack=r, fabric=fd.fabric,
                                     racks=n, switch_id=fd.switch_id, leaf_switches=c["leaf"],
                                     spine_switches=c["spine"], core_switches=c["core"],
                                     nic_leaf_links=c["nic_leaf"],
                                     leaf_spine_links=c["leaf_spine"],
                                     spine_core_links=c["spine_core"],
                                     network_kw=f["kw"], network_capex_usd=f["capex_usd"]))
    cols = ["period", "site", "rack", "fabric", "racks", "switch_id", "leaf_switches",
            "spine_switches", "core_switches", "nic_leaf_links", "leaf_spine_links",
            "spine_core_links", "network_kw", "network_capex_usd"]
    return _frame(rows, {"racks": "racks", "leaf_switches": "switches",
                         "spine_switches": "switches", "core_switches": "switches",
                         "nic_leaf_links": "links", "leaf_spine_links": "links",
                         "spine_core_links": "links", "network_kw": "kW (full load)",
                         "network_capex_usd": "USD (installed)"}, cols)


def network_values(d: PlanInputs, sol: Solution, r: str, s: str) -> list[float]:
    """Installed value of a tiered linear network in each period [USD].

    ``racks in service x capex per rack of their tier`` (see
    :func:`~dcplan.planner.network_rows.add_network_tiers`).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.
    r : str
        Rack type id.
    s : str
        Site id.

    Returns
    -------
    list of float
        One per period [USD].
    """
    rs = d.rack_site[r, s]
    return [(n := sol.installed(d, r, s, p)) * rs.network_capex(p, n)
            for p in range(len(d.periods))]


def cost_values(d: PlanInputs, sol: Solution, power: pd.DataFrame,
                purchases: list | None = None) -> dict:
    """Undiscounted cost per (category, period index) [USD], recomputed from the plan.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.
    power : DataFrame
        The plan's :func:`power_table` (power [kW], energy [kWh]).
    purchases : list, optional
        Receives one :class:`~dcplan.planner.cashflow.Purchase` per capex item bought
        (category, period, USD, the life its terminal value uses) for the cash-flow
        table.

    Returns
    -------
    dict
        ``(category, period index)`` -> cost [USD] (undiscounted; terminal value
        negative).
    """
    from dcplan.planner.cashflow import Purchase
    from dcplan.planner.model import building_prices

    cost = defaultdict(float)
    n = len(d.periods)
    bought = purchases if purchases is not None else []

    def rec(cat: str, p: int, usd: float, life: float | None) -> None:
        """Record a purchase of ``usd`` [USD] in period ``p`` with a life [years]."""
        if usd:
            bought.append(Purchase(cat, p, usd, life))
    for (r, s, p), x in sol.racks_bought.items():
        rk, rs = d.racks[r], d.rack_site[r, s]
        cooling = rs.cooling_capex_usd_per_kw * rk.it_power_max_kw
        price = d.rack_capex(r, p)
        net = rs.network_capex(p) if d.linear_network(r) and not rs.network_tiers else 0.0
        cost["rack_capex", p] += x * price
        cost["network_capex", p] += x * net
        cost["cooling_capex", p] += x * cooling
        for cat, usd in (("rack_capex", price), ("network_capex", net),
                         ("cooling_capex", cooling)):
            rec(cat, p, x * usd, rk.lifetime_years)
        cost["terminal_value", n - 1] -= x * d.remaining_frac(rk.lifetime_years, p) * (
            price + net + cooling)
    for (r, s), rs in d.rack_site.items():  # tiers: the network bought as it grows
        if not rs.network_tiers or not d.linear_network(r):
            continue
        prev = network_owned(d, r, s)
        for p, value in enumerate(network_values(d, sol, r, s)):
            more = max(0.0, value - prev)
            cost["network_capex", p] += more
            cost["terminal_value", n - 1] -= more * d.remaining_frac(
                d.racks[r].lifetime_years, p)
            rec("network_capex", p, more, d.racks[r].lifetime_years)
            prev = value
    if d.fabrics:
        from dcplan.planner.network_rows import fabric_existing, item_lifetime, network_stock

        for s in d.sites:
            owned = fabric_existing(d, s)
            per = [network_items(d, sol, s, p) for p in range(n)]
            for i in sorted({i for now in per for i in now}):
                price = 1.0 if i.startswith("links_") else next(
                    fd.switch_capex_usd for fs in d.fabrics.values() for fd in fs
                    if fd.switch_id == i)
                # what is bought is kept: a period buys what it needs beyond all owned
                for p, x in enumerate(network_stock(owned.get(i, 0.0),
                                                    [now.get(i, 0.0) for now in per])):
                    buy = x * price
                    cost["network_capex", p] += buy
                    cost["terminal_value", n - 1] -= buy * d.remaining_frac(
                        item_lifetime(d, i), p)
                    rec("network_capex", p, buy, item_lifetime(d, i))
    for (r, s, p), x in sol.racks_bought.items():
        extra = d.rack_site[r, s].redundancy_capex_usd_per_kw * d.racks[r].it_power_max_kw
        cost["redundancy_capex", p] += x * extra
        cost["terminal_value", n - 1] -= x * extra * d.remaining_frac(
            d.building_lifetime_years, p)
        rec("redundancy_capex", p, x * extra, d.building_lifetime_years)
    for (s, c, p), x in sol.cdus_bought.items():
        price = d.cdu_data(s, c).cdu_capex_usd
        cost["cdu_capex", p] += x * price
        cost["terminal_value", n - 1] -= x * price * d.remaining_frac(d.cdu_lifetime_years, p)
        rec("cdu_capex", p, x * price, d.cdu_lifetime_years)
    for (s, p), x in sol.capacity_built_kw.items():
        for part, price in building_prices(d, s):
            cost[part, p] += x * price
            rec(part, p, x * price, d.building_lifetime_years)
        cost["terminal_value", n - 1] -= x * d.sites[s].build_capex_usd_per_kw * \
            d.remaining_frac(d.building_lifetime_years, p)
    for lane in (sol.grid_requested_kw, sol.grid_requested_assessed_kw):
        for (s, q), x in lane.items():
            price = d.sites[s].connection.cost_usd_per_kw
            cost["grid_connection", q] += x * price
            cost["terminal_value", n - 1] -= x * price * d.remaining_frac(
                d.building_lifetime_years, q)
            rec("grid_connection", q, x * price, d.building_lifetime_years)
    for (s, q), x in sol.grid_requested_flex_kw.items():
        price = d.sites[s].connection.flexible.cost_usd_per_kw
        cost["grid_connection", q] += x * price
        cost["terminal_value", n - 1] -= x * price * d.remaining_frac(
            d.building_lifetime_years, q)
        rec("grid_connection", q, x * price, d.building_lifetime_years)
    for s in d.sites:
        for r in d.racks:
            rk = d.racks[r]
            for p in range(n):
                cost["maintenance", p] += (sol.installed(d, r, s, p) * rk.capex_usd
                                           * rk.maintenance_frac_per_year * d.periods[p].years)
    operations_cost_values(d, sol, cost)
    pidx = {per.label: p for p, per in enumerate(d.periods)}
    for row in power.itertuples():
        p, sd = pidx[row.period], d.sites[row.site]
        cost["energy", p] += row.energy_kwh * d.energy_price(row.site, p)
        cost["carbon", p] += row.energy_kwh * sd.carbon_kg_per_kwh * d.carbon_price(p)
        cost["demand_charge", p] += (row.facility_kw_peak * d.months(p)
                                     * d.demand_charge(row.site, p))
    supply_cost_values(d, sol, power, cost, rec)
    for (w, _k, p), x in sol.unserved_tokens_per_s.items():
        cost["unserved_penalty", p] += x * d.demand_row_tokens(w, p) * d.unserved_usd_per_token
    return cost


def supply_cost_values(d: PlanInputs, sol: Solution, power: pd.DataFrame, cost: dict,
                       rec) -> None:
    """Add storage and on-site generation to ``cost`` [USD], as the MILP counts them.

    The grid energy changes by what storage and generation add to its average
    (energy and carbon), the demand charge is on the grid peak instead of the facility
    peak, and :func:`~dcplan.planner.supply.supply_cost_terms` gives the rest.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.
    power : DataFrame
        The plan's :func:`power_table` (its ``facility_kw_peak`` [kW]).
    cost : dict
        ``(category, period index)`` -> cost [USD], updated in place.
    rec : callable
        ``rec(category, period, usd, life)`` records a purchase [USD], [years].
    """
    from dcplan.planner.supply import has_supply, net_avg_terms, supply_cost_terms

    if not has_supply(d):
        return
    peak = {(row.site, row.period): row.facility_kw_peak for row in power.itertuples()}
    for (s, p), gpk in sol.grid_peak_kw.items():
        sd = d.sites[s]
        net = sum(v * c for v, c in net_avg_terms(d, sol, s, p)) * d.hours(p)
        cost["energy", p] += net * d.energy_price(s, p)
        cost["carbon", p] += net * sd.carbon_kg_per_kwh * d.carbon_price(p)
        cost["demand_charge", p] += (gpk - peak[s, d.periods[p].label]) * d.months(p) \
            * d.demand_charge(s, p)
    for (cat, p), terms in supply_cost_terms(d, sol).items():
        cost[cat, p] += sum(v * c for v, c in terms)
    for s, bats in d.storage.items():
        for b in bats:
            for q in range(len(d.periods)):
                usd = (sol.storage_energy_bought_kwh.get((s, b.id, q), 0.0) * b.capex_usd_per_kwh
                       + sol.storage_power_bought_kw.get((s, b.id, q), 0.0) * b.capex_usd_per_kw)
                rec("storage_capex", q, usd, b.life_years)
    for s, gens in d.onsite.items():
        for g in gens:
            for q in range(len(d.periods)):
                rec("onsite_capex", q, sol.onsite_bought_kw.get((s, g.id, q), 0.0)
                    * g.capex_usd_per_kw, g.life_years)


def operations_cost_values(d: PlanInputs, sol: Solution, cost: dict) -> None:
    """Add staff and software opex to ``cost`` [USD], as the MILP counts them.

    See :func:`dcplan.planner.model.add_operations_costs`: per rack in service, per site
    that hosts racks, and per period in which the fleet has racks.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.
    cost : dict
        ``(category, period index)`` -> cost [USD]; ``staff`` and ``software`` are
        added in place.
    """
    ops = d.operations
    if ops is None or not ops.any:
        return
    for p, per in enumerate(d.periods):
        live = False
        for s in d.sites:
            here = 0.0
            for r in d.racks:
                n = sol.installed(d, r, s, p)
                if n <= 1e-9:
                    continue
                here += n
                cost["staff", p] += n * per.years * (
                    ops.staff_per_rack.get((r, s), 0.0)
                    + ops.staff_per_kw.get(s, 0.0) * d.racks[r].it_power_max_kw)
                cost["software", p] += n * per.years * ops.software_per_rack.get(r, 0.0)
            if here > 1e-9:
                live = True
                cost["staff", p] += ops.staff_per_site.get(s, 0.0) * per.years
        if live:
            cost["staff", p] += ops.staff_per_fleet * per.years


def costs_table(d: PlanInputs, cost: dict) -> pd.DataFrame:
    """Costs by (period, category), undiscounted and discounted [USD].

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    cost : dict
        ``(category, period index)`` -> undiscounted cost [USD] (:func:`cost_values`).

    Returns
    -------
    DataFrame
        period, category, kind; cost_usd [USD]; discount_factor [-];
        cost_usd_discounted [USD, present value].
    """
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


#: Every KPI a plan's ``kpis`` table holds (:func:`kpi_table`, then
#: :func:`dcplan.planner.buy.reserve_kpis` and
#: :func:`dcplan.planner.cashflow.cashflow_kpis`), for checking names before solving.
KPI_NAMES = ("npv_cost_usd", "capex_usd", "opex_usd", "staff_software_usd",
             "usd_per_million_tokens", "tokens_served", "tokens_per_kwh", "goodput_per_watt",
             "peak_facility_mw", "peak_it_mw", "energy_mwh", "pue_annual", "pue_peak",
             "power_p99_margin_frac", "utilisation_frac",
             "reserve_frac", "carbon_t", "racks_bought", "unserved_tokens_per_s_peak_max",
             "terminal_value_usd", "terminal_value_frac", "usd_per_million_tokens_annualised",
             "api_avoided_usd", "payback_years", "irr_vs_api_frac",
             "irr_vs_api_with_terminal_frac", "reserve_cost_usd", "reserve_cost_frac")

#: Share of a workload's demand below which it counts as not served at all [-].
SERVED_TOLERANCE = 1e-9


def workload_tokens(d: PlanInputs, demand: pd.DataFrame, served: bool = True
                    ) -> tuple[dict, dict]:
    """Input + output tokens per (workload, period index), and discounted [tokens].

    ``served``: the tokens served (:func:`served_frac` of each row), else the demand.
    Rows of the ``demand`` table; a disaggregated workload counts once (its decode pool
    row is the same tokens as its prefill row, by share).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    demand : DataFrame
        The plan's :func:`demand_table` [tokens/s].
    served : bool
        Count the tokens served, else the demand.

    Returns
    -------
    tok, disc : dict
        ``(workload, period index)`` -> input + output tokens in the period [tokens],
        and the same times the opex discount factor [tokens, discounted].
    """
    pidx = {per.label: p for p, per in enumerate(d.periods)}
    tok: dict = defaultdict(float)
    disc: dict = defaultdict(float)
    for row in demand.itertuples():
        if row.pool == "decode":
            continue
        p = pidx[str(row.period)]
        t = (row.demand_tokens_per_s_avg / d.workloads[row.workload].pool_share(row.pool)
             * (served_frac(row) if served else 1.0) * d.hours(p) * 3600.0)
        tok[row.workload, p] += t
        disc[row.workload, p] += t * d.df_opex(p)
    return tok, disc


def served_frac(row: Any) -> float:
    """Share of a ``demand`` table row's demand that is served [-].

    A share within the solver's tolerance of nothing (:data:`SERVED_TOLERANCE`) is
    nothing: a plan with no grid anywhere must not serve "0.76 tokens" at 0 USD per
    million tokens.

    Parameters
    ----------
    row : namedtuple
        A row of the ``demand`` table (``itertuples``).

    Returns
    -------
    float
        ``1 - unserved / demand`` (averages), 0 below :data:`SERVED_TOLERANCE` [-].
    """
    frac = 1.0 - (row.unserved_tokens_per_s_avg / row.demand_tokens_per_s_avg
                  if row.demand_tokens_per_s_avg > 0 else 0.0)
    return 0.0 if frac < SERVED_TOLERANCE else frac


def peak_period(power: pd.DataFrame) -> str | None:
    """The period of the plan's facility peak: the largest sum of the sites' peaks.

    Parameters
    ----------
    power : DataFrame
        The plan's :func:`power_table` [kW].

    Returns
    -------
    str or None
        The period's label (the first of equal ones); None for an empty table.
    """
    if not len(power):
        return None
    by_period = power.groupby("period", sort=False).facility_kw_peak.sum()
    return by_period.idxmax()


def p99_margin(d: PlanInputs, allocation: pd.DataFrame, period: str | None) -> float | None:
    """How far the high-percentile rack power lies above the serving power [-].

    ``sum(racks x power_p99_kw) / sum(racks x power_kw) - 1`` over the racks allocated
    in ``period`` (the ``allocation`` table's ``it_kw`` is ``racks x power_kw``): the
    share by which the racks sized at the operating point draw more 1 % of the time.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    allocation : DataFrame
        The plan's :func:`allocation_table` [racks, kW].
    period : str or None
        The period's label (:func:`peak_period`).

    Returns
    -------
    float or None
        The margin [-]; None when nothing is allocated or the performance model
        reported no high-percentile power for an allocated rack and workload.
    """
    rows = allocation[allocation.period.astype(str) == str(period)] if len(allocation) \
        else allocation
    serve = high = 0.0
    for row in rows.itertuples():
        if row.racks <= 0:
            continue
        pf = d.perf_at_cap.get((row.rack, row.workload, getattr(row, "power_cap_frac", None))) \
            or d.perf.get((row.rack, row.workload))
        if pf is None or pf.power_p99_kw <= 0:
            return None
        serve += row.it_kw
        high += row.racks * pf.power_p99_kw
    return high / serve - 1.0 if serve > 0 else None


def kpi_table(d: PlanInputs, fleet: pd.DataFrame, power: pd.DataFrame, demand: pd.DataFrame,
              costs: pd.DataFrame, allocation: pd.DataFrame | None = None) -> pd.DataFrame:
    """Headline figures: NPV, unit cost, energy efficiency, peak MW, utilisation, carbon.

    IT power is racks + network (:data:`IT_MEANS`) throughout: ``peak_it_mw`` is the
    IT power in the period of the facility peak ``peak_facility_mw`` (:func:`peak_period`;
    each site at its peak hour), so ``pue_peak = peak_facility_mw / peak_it_mw``;
    ``pue_annual`` is facility over IT energy. ``power_p99_margin_frac`` is
    :func:`p99_margin` in that period (None without ``allocation``).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    fleet : DataFrame
        :func:`fleet_table` [racks].
    power : DataFrame
        The plan's :func:`power_table` (power [kW], energy [kWh]).
    demand : DataFrame
        :func:`demand_table` [tokens/s].
    costs : DataFrame
        :func:`costs_table` [USD].
    allocation : DataFrame, optional
        :func:`allocation_table` [racks, kW], for the high-percentile power margin.

    Returns
    -------
    DataFrame
        kpi, value, unit: one row per KPI, its unit in the ``unit`` column (``USD``,
        ``MW``, ``tokens/kWh``...) [see unit column].
    """
    npv = costs.cost_usd_discounted.sum() if len(costs) else 0.0
    is_pen = costs.category == "unserved_penalty"
    # The penalty is not a cost the operator pays: out of the NPV (present value) and
    # out of opex (undiscounted), each in its own money.
    pen = costs.loc[is_pen, "cost_usd_discounted"].sum() if len(costs) else 0.0
    capex = costs.loc[costs.kind == "capex", "cost_usd"].sum() if len(costs) else 0.0
    from dcplan.planner.cashflow import OPEX_CATEGORIES, STAFF_SOFTWARE_CATEGORIES

    opex = costs.loc[costs.category.isin(OPEX_CATEGORIES), "cost_usd"].sum() \
        if len(costs) else 0.0
    staff = costs.loc[costs.category.isin(STAFF_SOFTWARE_CATEGORIES), "cost_usd"].sum() \
        if len(costs) else 0.0
    tok, disc = workload_tokens(d, demand)
    tokens, tokens_disc = sum(tok.values()), sum(disc.values())
    energy = power.energy_kwh.sum()
    by_period = power.groupby("period", sort=False)
    peak_fac = by_period.facility_kw_peak.sum()
    top = peak_period(power)
    peak_mw = peak_fac[top] / 1000.0 if top is not None else 0.0
    peak_it = by_period.it_total_kw_peak.sum()[top] / 1000.0 if top is not None else 0.0
    served_peak = demand.groupby("period", sort=False).served_tokens_per_s_peak.sum()
    last = d.periods[-1].label
    gpw = served_peak.get(last, 0.0) / (peak_fac.get(last, 0.0) * 1000.0) \
        if peak_fac.get(last, 0.0) > 0 else 0.0
    hours = power.period.map({p.label: d.hours(i) for i, p in enumerate(d.periods)})
    it_e = (power.it_total_kw_avg * hours).sum()
    util = fleet.allocated_racks.sum() / fleet.installed_racks.sum() \
        if len(fleet) and fleet.installed_racks.sum() else 0.0
    spare = (fleet.headroom_racks.sum() + fleet.unavailable_racks.sum()
             + fleet.spare_racks.sum()) / fleet.installed_racks.sum() \
        if len(fleet) and fleet.installed_racks.sum() else 0.0
    rows = [
        ("npv_cost_usd", npv - pen, "USD (present value, without unserved penalty)"),
        ("capex_usd", capex, "USD (undiscounted)"),
        ("opex_usd", opex, "USD (undiscounted: energy, demand charges, carbon, maintenance)"),
        ("staff_software_usd", staff, "USD (undiscounted: operations staff and software)"),
        ("usd_per_million_tokens", (npv - pen) / tokens_disc * 1e6 if tokens_disc else None,
         f"USD per million tokens ({LEVELISED_TEXT})"),
        ("tokens_served", tokens, "tokens"),
        ("tokens_per_kwh", tokens / energy if energy else None, "tokens/kWh (facility)"),
        ("goodput_per_watt", gpw, f"tokens/s per W of facility power at peak, {last}"),
        ("peak_facility_mw", peak_mw, "MW"),
        ("peak_it_mw", peak_it, PEAK_IT_UNIT),
        ("energy_mwh", energy / 1000.0, "MWh"),
        ("pue_annual", energy / it_e if it_e else None, PUE_UNITS["pue_annual"]),
        ("pue_peak", peak_mw / peak_it if peak_it > 0 else None, PUE_UNITS["pue_peak"]),
        ("power_p99_margin_frac",
         None if allocation is None else p99_margin(d, allocation, top),
         "- (high-percentile (p99) over serving rack IT power of the racks allocated in "
         "the period of the facility peak, minus 1)"),
        ("utilisation_frac", util, "- (allocated / installed rack-periods at peak)"),
        ("reserve_frac", spare, "- (headroom, unavailable and spare / installed rack-periods "
                                "at peak)"),
        ("carbon_t", power.carbon_t.sum(), "tCO2"),
        ("racks_bought", fleet.new_racks.sum() if len(fleet) else 0.0, "racks"),
        ("unserved_tokens_per_s_peak_max",
         demand.groupby("period").unserved_tokens_per_s_peak.sum().max() if len(demand) else 0,
         "tokens/s"),
    ]
    df = pd.DataFrame(rows, columns=["kpi", "value", "unit"])
    df.attrs["units"] = {"value": "see unit column"}
    return df


#: A shortfall below this share of its demand row is the solver's tolerance, not demand
#: left unserved, and is not reported [-].
NEGLIGIBLE_SHORT_FRAC = 1e-7


def unserved_table(d: PlanInputs, sol: Solution) -> pd.DataFrame:
    """Demand left unserved per (workload, pool, period), above the solver's tolerance.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.

    Returns
    -------
    DataFrame
        workload, pool, period; short_tokens_per_s_peak, demand_tokens_per_s_peak
        [tokens/s]; short_frac [-]; short_tokens_per_month [tokens/month, average].
    """
    rows = []
    for (w, k, p), x in sorted(sol.unserved_tokens_per_s.items(),
                               key=lambda kv: (kv[0][2], kv[0][:2])):
        wd = d.workloads[w]
        need = wd.peak_tokens_per_s(p, k)
        m = d.schedules(w, p)[0].peak_factor
        avg = x if d.multi_schedule(w, p) else x / m
        if x <= 1e-6 or avg * m <= NEGLIGIBLE_SHORT_FRAC * need:
            continue
        rows.append(dict(workload=w, pool=k, period=d.periods[p].label,
                         short_tokens_per_s_peak=avg * m, demand_tokens_per_s_peak=need,
                         short_frac=avg * m / need if need else 0.0,
                         short_tokens_per_month=avg * SECONDS_PER_MONTH))
    return _frame(rows, {"short_tokens_per_s_peak": "tokens/s",
                         "demand_tokens_per_s_peak": "tokens/s", "short_frac": "-",
                         "short_tokens_per_month": "tokens/month (average)"},
                  ["workload", "pool", "period", "short_tokens_per_s_peak",
                   "demand_tokens_per_s_peak", "short_frac", "short_tokens_per_month"])


def objective_value(prob: pulp.LpProblem) -> float:
    """Objective of a solved problem [USD].

    Parameters
    ----------
    prob : pulp.LpProblem
        A solved problem.

    Returns
    -------
    float
        Present value of the plan's costs [USD] (0 when unset).
    """
    return float(pulp.value(prob.objective) or 0.0)
