"""Batteries and on-site generation at a site, as decisions of the MILP (time to power).

A site offered ``storage`` or ``onsite_generation`` (scenario fields of those names) gets,
per period, capacity decisions and an hourly dispatch over **every hour of the
representative days** (not only the representative hours of the capacity rows: the
battery's state of charge links the hours of a day). Indices: site ``s``, storage entry
``b``, generation entry ``g``, period ``p`` (``q`` the period of a purchase), hour ``h``
of the representative days (one hour ``None`` without profiles), ``w_h`` the hour's
share of the year (its day's weight / 24; 1 for ``None``).

- **Capacity**: ``bess_e_new[s,b,q]`` [kWh of nameplate energy] and ``bess_p_new[s,b,q]``
  [kW] bought in q; ``gen_new[s,g,q]`` [kW] bought from the entry's first period (its
  permitting lead time from the start of the plan). In service while alive
  (:func:`~dcplan.planner.inputs.in_service` with the entry's life). Usable energy in p
  ``bess_e[s,b,p] = sum_q DoD (1 - deg)^(end of p - start of q) bess_e_new[s,b,q]``
  (rows ``bess_e_stock``: the fade at the end of the period, the worst hour of it),
  ``bess_p[s,b,p] = sum_q bess_p_new`` (``bess_p_stock``), ``gen_cap[s,g,p] = sum_q
  gen_new`` (``gen_stock``).
- **Dispatch** per hour: ``bess_ch + bess_dis <= bess_p`` (``bess_power``);
  ``bess_soc[h] = bess_soc[h-1] + eta bess_ch[h] - bess_dis[h]`` with the hour before a
  day's first hour its last (``bess_soc``: the day cycles, start = end; the whole
  round-trip loss on charge); ``bess_soc <= bess_e`` (``bess_energy``);
  ``gen[h] <= availability x gen_cap`` (``gen_run``).
- **Grid**, two loads per hour: ``peak(h)``, the facility power as the representative
  hours' rows count it (design-day cooling, headroom racks at serving power), and
  ``served(h)``, the power of the load actually served (annual-average cooling, each
  schedule at its hour-h value; its day-weighted mean is the annual-average facility
  power exactly). The grid peak ``gpk[s,p]`` is at least
  ``peak(h) + sum_b ch - sum_b dis - sum_g availability x gen_cap`` (``grid_hour``:
  generation follows the load up to its available capacity, so it covers the headroom
  too) and ``served(h) + sum_b ch - sum_b dis - sum_g gen`` (``grid_served``: the power
  the grid carries in the hour); no export: ``served(h) + ch - dis - gen >= 0``
  (``no_export``). ``gpk`` replaces the facility peak in the site's grid row and demand
  charge (the building still carries the facility peak). The grid energy is
  ``facility_avg + sum_h w_h (ch - dis - gen)``.
- **Firm supply**: where the site's UPS plant recharges its batteries after an outage
  (the grid row carries ``recharge`` on top of the facility peak), the grid row of the
  site is ``gpk <= connected`` and the recharge is carried by the grid and the
  generation's available capacity together: ``peak(h) + recharge + sum_b ch - sum_b dis
  - sum_g availability x gen_cap <= connected`` (``supply_firm``).
- **Costs**: storage and generation capex when bought (terminal value over their lives),
  fixed O&M per kW in service (``maintenance``), fuel and variable O&M per kWh generated
  (``onsite_fuel``), energy and carbon on the grid energy, carbon on the generation.

The minimum stable load of generation is not enforced (a linear dispatch: any output
from 0 to the available capacity); the supply table reports hours run below it.
"""

from __future__ import annotations

from collections.abc import Callable

import pulp

from dcplan.planner.inputs import PlanInputs, in_service
from dcplan.planner.model_vars import ModelVars, _lin, _merged
from dcplan.planner.names import lp_name
from dcplan.planner.profiles import served_share
from dcplan.schema import HOURS_PER_DAY


def supply_hours(d: PlanInputs, p: int) -> tuple:
    """Hours of the battery and generation dispatch in period ``p``.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    p : int
        Period index (0-based) [-].

    Returns
    -------
    tuple
        Every hour index of the representative days (``24 x days``), or ``(None,)``
        when no workload has a profile (one flat hour).
    """
    if d.rep_hours(p) == (None,):
        return (None,)
    return tuple(range(HOURS_PER_DAY * len(d.day_names)))


def hour_weight(d: PlanInputs, h: int | None) -> float:
    """Share of the year of hour ``h`` of the representative days [-].

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    h : int or None
        Hour index (None: the single flat hour) [-].

    Returns
    -------
    float
        Its day's weight / 24 (1 for None) [-].
    """
    if h is None:
        return 1.0
    return d.day_weights[h // HOURS_PER_DAY] / HOURS_PER_DAY


def previous_hour(h: int | None) -> int | None:
    """The hour before ``h`` within its representative day (the day cycles).

    Parameters
    ----------
    h : int or None
        Hour index (None: the single flat hour, its own predecessor) [-].

    Returns
    -------
    int or None
        ``h - 1``, or the day's last hour for its first [-].
    """
    if h is None:
        return None
    return h - 1 if h % HOURS_PER_DAY else h + HOURS_PER_DAY - 1


def has_supply(d: PlanInputs) -> bool:
    """Whether any site is offered storage or on-site generation.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.

    Returns
    -------
    bool
    """
    return bool(d.storage or d.onsite)


def storage_fade(d: PlanInputs, life: float, deg: float, q: int, p: int) -> float:
    """Usable share of storage bought in ``q`` during ``p`` (0 when retired) [-].

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    life : float
        Calendar life [years].
    deg : float
        Usable energy lost per year of age [-/yr].
    q, p : int
        Purchase and service period indices [-].

    Returns
    -------
    float
        ``(1 - deg) ** (end of p - start of q)`` while in service, else 0 [-].
    """
    if q > p or not in_service(d.periods[p].offset_years - d.periods[q].offset_years, life):
        return 0.0
    per = d.periods[p]
    age = per.offset_years + per.years - d.periods[q].offset_years
    return (1.0 - deg) ** age


def alive(d: PlanInputs, life: float, q: int, p: int) -> bool:
    """Whether equipment of life ``life`` bought in ``q`` serves in ``p``.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    life : float
        [years].
    q, p : int
        Purchase and service period indices [-].

    Returns
    -------
    bool
    """
    return q <= p and in_service(d.periods[p].offset_years - d.periods[q].offset_years, life)


def hour_power_terms(d: PlanInputs, mv: ModelVars, s: str, p: int, h, parts: Callable
                     ) -> list:
    """(variable, kW) terms of the facility power at site s in hour h of period p (peak).

    As the representative hours' rows count it (design-day cooling, the headroom racks at
    serving power, each schedule at ``frac(h) / u``): those hours have their expression
    already (``facility_hour_kw``); the other hours of the days are written the same way.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables built so far.
    s : str
        Site id.
    p : int
        Period index (0-based) [-].
    h : int or None
        Hour index [-].
    parts : callable
        :func:`dcplan.planner.model._site_power_parts` (the model's power terms).

    Returns
    -------
    list of (pulp.LpVariable, float)
        [kW per unit of each variable].
    """
    e = mv.facility_hour_kw.get((s, p, h))
    if e is not None:
        return list(e.items())
    terms, schedules = parts(d, mv, s, p, False)
    factor = {g: sch.frac(h) / u for g, (sch, u) in schedules.items()}
    return _merged((v, c if g is None else c * factor[g]) for g, v, c in terms)


def served_power_terms(d: PlanInputs, mv: ModelVars, s: str, p: int, h, parts: Callable
                       ) -> list:
    """(variable, kW) terms of the power the site draws serving its load in hour h.

    Annual-average cooling, no headroom, each schedule at its hour-h value: a
    schedule with hourly values ``v`` counts ``v[h] / M`` of its power at peak, one
    without (``peak``) its mean ``1 / M`` in every hour, so that the day-weighted mean
    over the hours is the annual-average facility power (``facility_avg_kw``) exactly.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables built so far.
    s : str
        Site id.
    p : int
        Period index (0-based) [-].
    h : int or None
        Hour index (None: the single flat hour) [-].
    parts : callable
        :func:`dcplan.planner.model._site_power_parts` (the model's power terms).

    Returns
    -------
    list of (pulp.LpVariable, float)
        [kW per unit of each variable].
    """
    terms, schedules = parts(d, mv, s, p, True)
    factor = {g: served_share(sch, h) for g, (sch, _u) in schedules.items()}
    return _merged((v, c if g is None else c * factor[g]) for g, v, c in terms)


def add_supply(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars, parts: Callable,
               recharge: Callable) -> None:
    """Storage and on-site generation at the sites offered them (module docstring).

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    parts : callable
        :func:`dcplan.planner.model._site_power_parts`: the facility power's terms
        (passed in: this module is below the model).
    recharge : callable
        :func:`dcplan.planner.model.recharge_terms`: the UPS recharge's terms [kW].
    """
    n = len(d.periods)
    for s in d.sites:
        bats, gens = d.storage.get(s, ()), d.onsite.get(s, ())
        if not (bats or gens):
            continue
        live = [p for p in range(n) if len(mv.facility_peak_kw.get((s, p), _lin([])))]
        if not live:
            continue
        for b in bats:
            for q, per in enumerate(d.periods):
                mv.storage_energy_bought_kwh[s, b.id, q] = prob.add_variable(
                    lp_name("bess_e_new", s, b.id, per.label), 0)
                mv.storage_power_bought_kw[s, b.id, q] = prob.add_variable(
                    lp_name("bess_p_new", s, b.id, per.label), 0)
        for g in gens:
            for q, per in enumerate(d.periods):
                if q >= g.first_period:
                    mv.onsite_bought_kw[s, g.id, q] = prob.add_variable(
                        lp_name("gen_new", s, g.id, per.label), 0)
        for p in live:
            _add_site_period(prob, d, mv, s, p, bats, gens, parts, recharge)


def _add_site_period(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars, s: str, p: int,
                     bats: tuple, gens: tuple, parts: Callable, recharge: Callable) -> None:
    """Capacity in service, hourly dispatch and grid rows of site s in period p."""
    label = d.periods[p].label
    hours = supply_hours(d, p)
    from dcplan.planner.profiles import hour_label

    def hl(h) -> tuple:
        """The hour's part of a key (none for the single flat hour)."""
        return () if h is None else (hour_label(h, d.day_names),)

    bat = {h: [] for h in hours}  # per hour: (variable, kW) the batteries take from the grid
    run = {h: [] for h in hours}  # per hour: (variable, kW) generation gives
    for b in bats:
        e = mv.storage_energy_kwh[s, b.id, p] = prob.add_variable(
            lp_name("bess_e", s, b.id, label), 0)
        pw = mv.storage_power_kw[s, b.id, p] = prob.add_variable(
            lp_name("bess_p", s, b.id, label), 0)
        terms = [(mv.storage_energy_bought_kwh[s, b.id, q],
                  -b.depth_of_discharge * storage_fade(d, b.life_years, b.degradation_per_year,
                                                       q, p)) for q in range(p + 1)]
        mv.add(prob, "bess_e_stock", (s, b.id, label), _lin([(e, 1.0), *terms]) == 0)
        terms = [(mv.storage_power_bought_kw[s, b.id, q], -1.0) for q in range(p + 1)
                 if alive(d, b.life_years, q, p)]
        mv.add(prob, "bess_p_stock", (s, b.id, label), _lin([(pw, 1.0), *terms]) == 0)
        for h in hours:
            key = (s, b.id, p, h)
            names = (s, b.id, label, *hl(h))
            mv.storage_charge_kw[key] = prob.add_variable(lp_name("bess_ch", *names), 0)
            mv.storage_discharge_kw[key] = prob.add_variable(lp_name("bess_dis", *names), 0)
            mv.storage_soc_kwh[key] = prob.add_variable(lp_name("bess_soc", *names), 0)
        for h in hours:
            names = (s, b.id, label, *hl(h))
            ch, dis = mv.storage_charge_kw[s, b.id, p, h], mv.storage_discharge_kw[s, b.id, p, h]
            soc = mv.storage_soc_kwh[s, b.id, p, h]
            before = mv.storage_soc_kwh[s, b.id, p, previous_hour(h)]
            mv.add(prob, "bess_power", names, _lin([(ch, 1.0), (dis, 1.0), (pw, -1.0)]) <= 0)
            mv.add(prob, "bess_soc", names, _lin(_merged(
                [(soc, 1.0), (before, -1.0), (ch, -b.efficiency), (dis, 1.0)])) == 0)
            mv.add(prob, "bess_energy", names, _lin([(soc, 1.0), (e, -1.0)]) <= 0)
            bat[h] += [(ch, 1.0), (dis, -1.0)]
    for g in gens:
        if p < g.first_period:  # before its lead time: none in service
            continue
        cap = mv.onsite_capacity_kw[s, g.id, p] = prob.add_variable(
            lp_name("gen_cap", s, g.id, label), 0)
        terms = [(mv.onsite_bought_kw[s, g.id, q], -1.0) for q in range(p + 1)
                 if (s, g.id, q) in mv.onsite_bought_kw and alive(d, g.life_years, q, p)]
        mv.add(prob, "gen_stock", (s, g.id, label), _lin([(cap, 1.0), *terms]) == 0)
        for h in hours:
            names = (s, g.id, label, *hl(h))
            out = mv.onsite_kw[s, g.id, p, h] = prob.add_variable(lp_name("gen", *names), 0)
            mv.add(prob, "gen_run", names, _lin([(out, 1.0), (cap, -g.availability)]) <= 0)
            run[h].append((out, -1.0))
    gpk = mv.grid_peak_kw[s, p] = prob.add_variable(lp_name("gpk", s, label), 0)
    firm = [(mv.onsite_capacity_kw[s, g.id, p], -g.availability) for g in gens
            if (s, g.id, p) in mv.onsite_capacity_kw]
    conn = mv.grid_connected_kw.get((s, p))
    conn_terms = [] if conn is None else [(v, -c) for v, c in conn.items()]
    limit = d.sites[s].grid_kw[p] if conn is None else conn.constant
    ups = recharge(d, mv, s, p)
    cache: dict = {}

    def once(d_, mv_, s_, p_, average):
        """The site-period's power terms, computed once per basis (peak, average)."""
        if average not in cache:
            cache[average] = parts(d_, mv_, s_, p_, average)
        return cache[average]
    for h in hours:
        peak = hour_power_terms(d, mv, s, p, h, once)
        mv.add(prob, "grid_hour", (s, label, *hl(h)),
               _lin(_merged([*peak, *bat[h], *firm, (gpk, -1.0)])) <= 0)
        if ups:
            mv.add(prob, "supply_firm", (s, label, *hl(h)),
                   _lin(_merged([*peak, *ups, *bat[h], *firm, *conn_terms])) <= limit)
        net = bat[h] + run[h]
        if not net:
            continue
        served = served_power_terms(d, mv, s, p, h, once)
        mv.add(prob, "grid_served", (s, label, *hl(h)),
               _lin(_merged([*served, *net, (gpk, -1.0)])) <= 0)
        mv.add(prob, "no_export", (s, label, *hl(h)), _lin(_merged([*served, *net])) >= 0)
    mv.grid_net_avg_kw[s, p] = _lin(_merged(net_avg_terms(d, mv, s, p)))


def net_avg_terms(d: PlanInputs, mv, s: str, p: int) -> list:
    """(variable, weight) terms of what storage and generation add to the grid's average.

    ``sum_h w_h (sum_b ch - sum_b dis - sum_g gen)``: works on a model's variables or
    on a solution's values (:class:`~dcplan.planner.tables.Solution` has the same
    fields).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars or Solution
        Variables or their values.
    s : str
        Site id.
    p : int
        Period index (0-based) [-].

    Returns
    -------
    list of (variable or float, float)
        Hourly charge, discharge and generation [kW] and their share of the year [-]
        (signed).
    """
    out = []
    for h in supply_hours(d, p):
        w = hour_weight(d, h)
        for b in d.storage.get(s, ()):
            key = (s, b.id, p, h)
            if key in mv.storage_charge_kw:
                out += [(mv.storage_charge_kw[key], w), (mv.storage_discharge_kw[key], -w)]
        for g in d.onsite.get(s, ()):
            key = (s, g.id, p, h)
            if key in mv.onsite_kw:
                out.append((mv.onsite_kw[key], -w))
    return out


def supply_cost_terms(d: PlanInputs, mv: ModelVars) -> dict:
    """Cost terms of storage and on-site generation per (category, period) [USD].

    Capex when bought (``storage_capex``, ``onsite_capex``) and its terminal value,
    fixed O&M per kW in service (``maintenance``), fuel and variable O&M per kWh
    generated (``onsite_fuel``), the generation's carbon (``carbon``). The grid
    energy's change (``energy``, ``carbon``) and the demand charge on the grid peak are
    in :func:`~dcplan.planner.model.add_costs`.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars or Solution
        The model's variables, or a solution's values (then the "variables" are
        floats and the sum of the products is the cost).

    Returns
    -------
    dict
        (category, period index) -> list of (variable, USD per unit).
    """
    out: dict = {}
    n = len(d.periods)

    def add(cat: str, p: int, var, usd: float) -> None:
        """Append ``usd`` per unit of ``var`` to (cat, p) [USD]."""
        if usd:
            out.setdefault((cat, p), []).append((var, usd))
    for s, bats in d.storage.items():
        for b in bats:
            for q in range(n):
                for var, price in ((mv.storage_energy_bought_kwh.get((s, b.id, q)),
                                    b.capex_usd_per_kwh),
                                   (mv.storage_power_bought_kw.get((s, b.id, q)),
                                    b.capex_usd_per_kw)):
                    if var is None:
                        continue
                    add("storage_capex", q, var, price)
                    add("terminal_value", n - 1, var, -price * d.remaining_frac(b.life_years, q))
            for p in range(n):
                var = mv.storage_power_kw.get((s, b.id, p))
                if var is not None:
                    add("maintenance", p, var, b.fixed_om_usd_per_kw_year * d.periods[p].years)
    for s, gens in d.onsite.items():
        for g in gens:
            for q in range(n):
                var = mv.onsite_bought_kw.get((s, g.id, q))
                if var is not None:
                    add("onsite_capex", q, var, g.capex_usd_per_kw)
                    add("terminal_value", n - 1, var,
                        -g.capex_usd_per_kw * d.remaining_frac(g.life_years, q))
            for p in range(n):
                cap = mv.onsite_capacity_kw.get((s, g.id, p))
                if cap is None:
                    continue
                add("maintenance", p, cap, g.fixed_om_usd_per_kw_year * d.periods[p].years)
                for h in supply_hours(d, p):
                    run = mv.onsite_kw[s, g.id, p, h]
                    kwh = d.hours(p) * hour_weight(d, h)
                    add("onsite_fuel", p, run,
                        kwh * (g.fuel_usd_per_kwh[p] + g.variable_om_usd_per_kwh))
                    add("carbon", p, run, kwh * g.carbon_kg_per_kwh * d.carbon_price(p))
    return out


def onsite_emission_terms(d: PlanInputs, mv: ModelVars, p: int,
                          sites: tuple[str, ...] | None = None) -> list:
    """(variable, kgCO2 per unit) of the on-site generation's emissions in period p.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The model's variables.
    p : int
        Period index (0-based) [-].
    sites : tuple of str, optional
        Only these sites (default: every site).

    Returns
    -------
    list of (pulp.LpVariable, float)
        Generation per hour [kW] and its emissions over the period [kgCO2 per kW]
        (values and weights when ``mv`` is a solution).
    """
    out = []
    for s, gens in d.onsite.items():
        if sites is not None and s not in sites:
            continue
        for g in gens:
            for h in supply_hours(d, p):
                run = mv.onsite_kw.get((s, g.id, p, h))
                if run is not None:
                    out.append((run, d.hours(p) * hour_weight(d, h) * g.carbon_kg_per_kwh))
    return out
