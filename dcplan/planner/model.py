"""The fleet-planning MILP, one small function per constraint family.

Index sets: rack types ``r``, sites ``s``, workloads ``w``, capacity pools ``k``
(``all`` for aggregated workloads; ``prefill`` and ``decode`` for disaggregated
ones), periods ``p``, CDU models ``c``. Every variable and constraint is named by
:func:`~dcplan.planner.names.lp_name`. All money is undiscounted USD inside the cost
expressions; the objective applies the discount factors of
:class:`~dcplan.planner.inputs.PlanInputs`.
"""

from __future__ import annotations

from collections import defaultdict

import pulp

from dcplan.planner.categories import CATEGORIES
from dcplan.planner.flexgrid import add_curtailment
from dcplan.planner.inputs import PlanInputs
from dcplan.planner.model_vars import ModelVars, _lin, _merged
from dcplan.planner.names import cap_label, lp_name
from dcplan.planner.network_rows import (
    add_fabric_purchases,
    add_fabrics,
    add_network_space,
    add_network_tiers,
    fabric_power_terms,
    item_lifetime,
)
from dcplan.planner.supply import add_supply, onsite_emission_terms, supply_cost_terms

#: Models with at least this many (rack, site, period) keys use the sparse stock recursion.
SPARSE_STOCK_MIN = 5_000

CAPEX_CATEGORIES = tuple(k for k, v in CATEGORIES.items() if v == "capex")


def build_model(d: PlanInputs, elastic: bool = False,
                unserved_limit: float | None = None,
                unserved_floor: float | None = None,
                fabric_envelope: str | None = None) -> tuple[pulp.LpProblem, ModelVars]:
    """Build the fleet-planning MILP.

    Parameters
    ----------
    d : PlanInputs
    elastic : bool
        Add priced unserved-demand variables (for diagnosing infeasible demand).
    unserved_limit : float, optional
        Elastic model only: at most this many tokens unserved over the horizon (row
        ``unserved_total``, :func:`add_unserved_limit`) [million tokens, of each demand
        row's kind: input, output or both].
    unserved_floor : float, optional
        Elastic model with ``unserved_limit`` only: at least this many tokens unserved
        (row ``unserved_floor``): the least shortfall's proven lower bound, a valid row
        that tightens the relaxation [million tokens].
    fabric_envelope : {None, "regimes", "pieces"}
        Integer fabrics as the envelopes of
        :func:`~dcplan.planner.network_rows.add_fabric_envelope` (one per regime, or
        per piece of a regime): a relaxation of the exact model, for its lower bound
        (:mod:`dcplan.planner.two_stage`).

    Returns
    -------
    prob : pulp.LpProblem
    mv : ModelVars
    """
    prob = pulp.LpProblem(lp_name("dcplan", "elastic" if elastic else "plan"), pulp.LpMinimize)
    mv = ModelVars(elastic=elastic)
    add_fleet_variables(prob, d, mv)
    add_stock_balance(prob, d, mv)
    add_network_tiers(prob, d, mv)
    add_spare_racks(prob, d, mv)
    add_cap_levels(prob, d, mv)
    add_fabrics(prob, d, mv, envelope=fabric_envelope)
    add_fabric_purchases(prob, d, mv)
    add_allocation_limit(prob, d, mv)
    add_demand(prob, d, mv)
    add_power_expressions(prob, d, mv)
    add_grid_connections(prob, d, mv)
    add_supply(prob, d, mv, _site_power_parts, recharge_terms)
    add_curtailment(prob, d, mv, _site_power_parts)
    add_grid_limit(prob, d, mv)
    add_cdus(prob, d, mv)
    add_network_space(prob, d, mv)
    add_space_limit(prob, d, mv)
    add_building(prob, d, mv)
    add_costs(d, mv)
    add_operations_costs(prob, d, mv)
    add_carbon_cap(prob, d, mv)
    add_water_limit(prob, d, mv)
    add_budget(prob, d, mv)
    if elastic and unserved_limit is not None:
        add_unserved_limit(prob, mv, unserved_limit, unserved_floor)
    set_objective(prob, d, mv)
    return prob, mv


def unserved_total(mv: ModelVars) -> pulp.LpAffineExpression:
    """Tokens left unserved over the horizon in the elastic model [million tokens].

    ``sum_{w,k,p} unserved[w,k,p] x tokens per unit of the row / 1e6``: each demand row's
    tokens (input, output or both, as the row counts them) in its period, undiscounted.

    Parameters
    ----------
    mv : ModelVars
        The elastic model's variables (``unserved_tokens_per_s`` [tokens/s] and
        ``demand_row_tokens`` [tokens per token/s]).

    Returns
    -------
    pulp.LpAffineExpression
        Empty in a model without unserved variables [million tokens].
    """
    return _lin([(var, mv.demand_row_tokens[key] / 1e6)
                 for key, var in mv.unserved_tokens_per_s.items()])


def add_unserved_limit(prob: pulp.LpProblem, mv: ModelVars, limit: float,
                       floor: float | None = None) -> None:
    """Least shortfall first: ``floor <= sum unserved x tokens per row / 1e6 <= limit``.

    The second stage of the elastic solve (:func:`dcplan.planner.run.solve_inputs`):
    the cheapest plan among those that leave no more tokens unserved than the least
    shortfall the first stage found (row ``unserved_total``). ``floor`` (row
    ``unserved_floor``) is the first stage's proven lower bound on any plan's shortfall:
    it cuts off no plan, but without it the LP relaxation serves fractional racks' worth
    of tokens, leaves less unserved than any plan can and prices that gap at the
    penalty, a bound HiGHS then spends minutes closing (docs/planner.md).

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    limit : float
        Tokens that may go unserved over the horizon [million tokens].
    floor : float, optional
        Tokens every plan leaves unserved over the horizon, at least [million tokens];
        no row when None or not positive.
    """
    total = unserved_total(mv)
    mv.add(prob, "unserved_total", (), total <= limit)
    if floor is not None and floor > 0:
        mv.add(prob, "unserved_floor", (), total >= min(floor, limit))


def _pairs(d: PlanInputs) -> list[tuple[str, str]]:
    """(rack, site) pairs that can ever hold racks (buyable or existing)."""
    return [(r, s) for s in d.sites for r in d.racks
            if any(d.buyable(r, s, p) for p in range(len(d.periods)))
            or any(e.rack == r and e.site == s for e in d.existing)]


def add_fleet_variables(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Integer new racks ``new[r,s,p] >= 0`` and racks in service ``inst[r,s,p] >= 0``.

    ``new[r,s,p]`` exists only where the rack may be bought: from the first period
    starting on or after its ``first_available`` date, at sites whose densest rack
    [kW] and facility water allow it (elsewhere it is fixed at 0 by not existing).

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    for r, s in _pairs(d):
        cap = d.sites[s].rack_positions // d.racks[r].rack_positions
        for p, per in enumerate(d.periods):
            if d.buyable(r, s, p):
                mv.racks_bought[r, s, p] = prob.add_variable(
                    lp_name("new", r, s, per.label), 0, cap, cat=pulp.LpInteger)
            mv.racks_in_service[r, s, p] = prob.add_variable(lp_name("inst", r, s, per.label), 0)


def add_stock_balance(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Racks in service: ``inst[r,s,p] = existing[r,s,p] + sum_{q alive in p} new[r,s,q]``.

    A rack bought in period q is in service in p while ``0 <= t_p - t_q < lifetime``
    (retired after its lifetime); existing racks retire ``lifetime`` after their
    installation date. Written as the equivalent recursion
    ``inst[p] = inst[p-1] + (racks entering service in p) - (racks retiring in p)
    + existing[p] - existing[p-1]``, which has a few nonzeros per row instead of one
    per period of a rack's life (same feasible set, a sparser LP). Models with fewer
    than :data:`SPARSE_STOCK_MIN` (rack, site, period) keys keep the dense form, whose
    solver path the example scenarios' regression values were recorded with.

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    if len(mv.racks_in_service) < SPARSE_STOCK_MIN:
        _add_stock_dense(prob, d, mv)
        return
    n = len(d.periods)
    moves = {}  # rack -> per period: (periods whose purchases enter, ... retire)
    for r in d.racks:
        moves[r] = [([q for q in range(p + 1) if d.alive(r, q, p)
                      and not (p > 0 and d.alive(r, q, p - 1))],
                     [q for q in range(p) if p > 0 and d.alive(r, q, p - 1)
                      and not d.alive(r, q, p)]) for p in range(n)]
    for (r, s, p), inst in mv.racks_in_service.items():
        enter, retire = moves[r][p]
        terms = [(inst, 1.0)]
        terms += [(mv.racks_bought[r, s, q], -1.0) for q in enter if (r, s, q) in mv.racks_bought]
        rhs = float(d.existing_count(r, s, p))
        if p > 0:
            terms.append((mv.racks_in_service[r, s, p - 1], -1.0))
            terms += [(mv.racks_bought[r, s, q], 1.0) for q in retire
                      if (r, s, q) in mv.racks_bought]
            rhs -= d.existing_count(r, s, p - 1)
        mv.add(prob, "stock", (r, s, d.periods[p].label), _lin(terms) == rhs)


def _add_stock_dense(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Racks in service: ``inst[r,s,p] = existing[r,s,p] + sum_{q alive in p} new[r,s,q]``.

    A rack bought in period q is in service in p while ``0 <= t_p - t_q < lifetime``
    (retired after its lifetime); existing racks retire ``lifetime`` after their
    installation date. One nonzero per period of a rack's life.
    """
    for (r, s, p), inst in mv.racks_in_service.items():
        terms = [(mv.racks_bought[r, s, q], -1.0) for q in range(p + 1)
                 if (r, s, q) in mv.racks_bought and d.alive(r, q, p)]
        expr = _lin([(inst, 1.0), *terms])
        mv.add(prob, "stock", (r, s, d.periods[p].label),
               expr == d.existing_count(r, s, p))


def add_spare_racks(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """N+k spare racks: ``k * on[r,s,p]`` racks of a type kept out of service at a site.

    ``on[r,s,p]`` is binary, 1 whenever the site hosts the type:
    ``inst <= cap * on`` and ``inst >= k * on`` (a valid tightening: a site hosting the
    type holds at least its spares). Only (rack, site) pairs with ``k > 0`` get them.

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    for (r, s, p), inst in mv.racks_in_service.items():
        k = d.spare_racks.get((r, s), 0)
        if k <= 0:
            continue
        label = d.periods[p].label
        cap = d.sites[s].rack_positions // d.racks[r].rack_positions
        on = mv.spares_kept[r, s, p] = prob.add_variable(
            lp_name("spare_on", r, s, label), 1 if d.existing_count(r, s, p) > 0 else 0, 1,
            cat=pulp.LpBinary)
        mv.add(prob, "spare_on", (r, s, label), _lin([(inst, 1.0), (on, -float(cap))]) <= 0)
        mv.add(prob, "spare_min", (r, s, label), _lin([(inst, 1.0), (on, -float(k))]) >= 0)


def add_cap_levels(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Racks in service per power cap level: ``sum_c inst_cap[r,s,p,c] = inst[r,s,p]``.

    Only rack types offered cap levels (``d.cap_levels``) get them: integer
    ``inst_cap[r,s,p,c] >= 0``, the racks of r at s running at cap level c in period p
    (rows ``cap_split``). The allocations at level c fit in those racks (rows
    ``cap_capacity``, :func:`add_allocation_limit`), and a nameplate or capped peak
    counts them at the power they can draw at that cap (:func:`_site_power_parts`).

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    for (r, s, p), inst in mv.racks_in_service.items():
        levels = d.cap_levels.get(r)
        if not levels:
            continue
        label = d.periods[p].label
        cap = d.sites[s].rack_positions // d.racks[r].rack_positions
        terms = [(inst, -1.0)]
        for c in levels:
            var = mv.racks_at_cap[r, s, p, c] = prob.add_variable(
                lp_name("inst_cap", r, s, label, cap_label(c)), 0, cap, cat=pulp.LpInteger)
            terms.append((var, 1.0))
        mv.add(prob, "cap_split", (r, s, label), _lin(terms) == 0)


def add_allocation_limit(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Capacity of each rack pool in each representative hour h.

    ``sum_{w,key} alloc[r,s,w,key,p] * frac_key(h) / u_w <= A_r * (inst[r,s,p] - k * on)``.

    ``alloc`` (continuous racks at the peak of the schedule it serves) exists where the
    performance model says the rack can serve the workload and the rules allow the
    site; ``frac_key(h)`` is that schedule's hour-h value relative to its peak, ``u_w``
    the workload's target peak utilisation (headroom), ``A_r`` the rack type's
    availability and ``k`` its spare racks at the site (:func:`add_spare_racks`). Without
    profiles there is one hour and ``frac = 1``.

    A rack type offered power cap levels has one ``alloc`` per level c (goodput and
    power at that cap), and rows ``cap_capacity`` per level:
    ``sum_{w,key} alloc[r,s,w,key,p,c] * frac_key(h) / u_w <= A_r * inst_cap[r,s,p,c]``.

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    for (r, s, p), inst in mv.racks_in_service.items():
        label = d.periods[p].label
        terms = []  # (var, schedule, utilisation)
        by_cap = defaultdict(list)
        for w, wd in d.workloads.items():
            if not d.serves(r, s, w) or wd.demand_tokens_per_s[p] <= 0:
                continue
            sch = d.schedules(w, p)
            for key, base, j in d.alloc_pools(w, p):
                for c in d.caps(r):
                    if not d.serves_at(r, w, c) or d.perf_at(r, w, c).rate(base) <= 0:
                        continue
                    var = prob.add_variable(
                        lp_name("alloc", r, s, w, key, label) if c is None else
                        lp_name("alloc", r, s, w, key, label, cap_label(c)), 0)
                    mv.racks_allocated[r, s, w, key, p, c] = var
                    terms.append((var, sch[j], wd.target_utilisation))
                    by_cap[c].append(terms[-1])
        if not terms:
            continue
        avail = d.racks[r].availability
        rhs = [(inst, -avail)]
        on = mv.spares_kept.get((r, s, p))
        if on is not None:
            rhs.append((on, avail * d.spare_racks[r, s]))
        hours = d.rep_hours(p)
        for h in hours:
            keys = (r, s, label) if len(hours) == 1 else (r, s, label, _hour(d, h))
            row = [(v, sc.frac(h) / u) for v, sc, u in terms]
            mv.add(prob, "capacity", keys, _lin([*row, *rhs]) <= 0)
            for c, part in by_cap.items():
                if c is None:
                    continue
                row = [(v, sc.frac(h) / u) for v, sc, u in part]
                mv.add(prob, "cap_capacity", (*keys, cap_label(c)),
                       _lin([*row, (mv.racks_at_cap[r, s, p, c], -avail)]) <= 0)


def _hour(d: PlanInputs, h) -> str:
    from dcplan.planner.profiles import hour_label

    return hour_label(h, d.day_names)


def add_demand(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Demand of each workload pool and period [tokens/s].

    One schedule: ``sum_{r,s} rate[r,w,k,p] * alloc >= D[w,p] * M_w * share_k`` (peak
    demand, ``M_w`` its peak over mean). A flexible workload's schedules j (peaks
    ``M_j``) together serve its mean demand:
    ``sum_j sum_{r,s} rate * alloc_j / M_j >= D[w,p] * share_k``. ``rate`` is goodput
    per rack [tokens/s] (``all``), or prefill input tokens/s and decode output tokens/s
    per rack for disaggregated pools, times the period's software speedup; ``share_k``
    is 1, or the input / output share of the workload's tokens. In the elastic model
    the priced variable ``unserved[w,k,p]`` (in the row's unit) closes any gap.

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    by_wkp = defaultdict(list)
    for (r, s, w, key, p, c), var in mv.racks_allocated.items():
        base, j = d.pool_of(w, key, p)
        sch = d.schedules(w, p)
        coef = d.rate(r, w, key, p, c, site=s)
        if len(sch) > 1:
            coef /= sch[j].peak_factor
        by_wkp[w, base, p].append((var, coef))
    for w, wd in d.workloads.items():
        for p, per in enumerate(d.periods):
            sch = d.schedules(w, p)
            for k in wd.pools:
                need = wd.demand_tokens_per_s[p] * wd.pool_share(k)
                if len(sch) == 1:
                    need *= sch[0].peak_factor
                mv.demand_row_tokens[w, k, p] = d.demand_row_tokens(w, p)
                if need <= 0:
                    continue
                terms = list(by_wkp.get((w, k, p), []))
                if mv.elastic:
                    mv.unserved_tokens_per_s[w, k, p] = prob.add_variable(
                        lp_name("unserved", w, k, per.label), 0)
                    terms.append((mv.unserved_tokens_per_s[w, k, p], 1.0))
                mv.add(prob, "demand", (w, k, per.label), _lin(terms) >= need)


def _site_power_parts(d: PlanInputs, mv: ModelVars, s: str, p: int, average: bool
                      ) -> tuple[list, dict]:
    """Facility power at site s in period p, term by term.

    Returns ``(terms, schedules)``: ``terms`` are ``(group, variable, kW coefficient)``
    with ``group`` None for what does not depend on the hour (idle or nameplate power
    of the racks in service, their linear network, the fabrics) and ``(w, key)`` for
    the power an allocation adds above idle at its schedule's peak, before headroom (the
    hour-h power is ``frac(h) / u`` times it, the average ``1 / M``); ``schedules``
    (w, key) -> (schedule, utilisation). ``average`` takes the annual-average cooling
    factor, else the design day's.
    """
    terms = []
    schedules: dict = {}
    nameplate = d.nameplate_peak and not average
    # power oversubscription: the peak provisions this share of the racks' power
    share = 1.0 if average else d.power_oversub.get(s, 1.0)
    for r in d.racks:
        if (r, s, p) not in mv.racks_in_service:
            continue
        rs, rk = d.rack_site[r, s], d.racks[r]
        cool = (rs.cooling_kw_per_it_kw_avg if average else rs.cooling_kw_per_it_kw_peak)
        gain = (1 + rs.loss_frac)
        racks_kw = share * (1 + cool)  # facility kW before losses per rack IT kW
        # capped: each level at its cap's power; nameplate: every rack at it_power_max_kw
        by_cap = nameplate and d.capped_peak and r in d.cap_levels
        base = 0.0 if by_cap else rk.it_power_max_kw if nameplate else rk.it_power_idle_kw
        tiered = mv.network_terms(r, s, p, 0)
        net = 0.0 if tiered is not None or not d.linear_network(r) else rs.network_kw(p)
        terms.append((None, mv.racks_in_service[r, s, p], gain * (racks_kw * base + net)))
        terms += [(None, v, gain * kw) for v, kw in tiered or ()]
        if by_cap:
            terms += [(None, mv.racks_at_cap[r, s, p, c],
                       gain * racks_kw * d.peak_rack_kw(r, c)) for c in d.cap_levels[r]]
        if nameplate:
            continue
        for w, wd in d.workloads.items():
            for key, _base, j in d.alloc_pools(w, p):
                for c in d.caps(r):
                    var = mv.racks_allocated.get((r, s, w, key, p, c))
                    if var is None:
                        continue
                    extra = max(0.0, d.perf_at(r, w, c).power_kw - rk.it_power_idle_kw)
                    schedules[w, key] = (d.schedules(w, p)[j], wd.target_utilisation)
                    terms.append(((w, key), var, gain * racks_kw * extra))
    terms += [(None, v, c) for v, c in fabric_power_terms(d, mv, s, p)]
    return terms, schedules


def _site_power_terms(d: PlanInputs, mv: ModelVars, s: str, p: int, average: bool,
                      hour=None) -> list:
    """(variable, kW coefficient) terms of facility power at site s in period p.

    ``average``: annual-average power (served load only, each schedule at its mean);
    else the power in representative hour ``hour`` on the design day, headroom racks
    at serving power.
    """
    terms, schedules = _site_power_parts(d, mv, s, p, average)
    factor = {g: 1.0 / sch.peak_factor if average else sch.frac(hour) / u
              for g, (sch, u) in schedules.items()}
    return _merged((v, c if g is None else c * factor[g]) for g, v, c in terms)


def add_power_expressions(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Facility power per site and period, and its peak over the representative hours.

    ``IT[r](h) = idle[r] * inst + sum_{w,key} (P[r,w] - idle[r]) * alloc * frac_key(h) / u_w``
    (the allocated racks and their headroom run at the performance model's operating
    point, the rest idle); the annual average counts each schedule at its mean
    (``1 / M``, no headroom). With ``nameplate_peak`` the peak uses
    ``IT[r] = it_power_max_kw[r] * inst``. ``facility = sum_r (1 + loss) * ((1 + cooling)
    * IT[r] + net_kw[r] * inst)``, with the design-day cooling factor in the peak hours
    and the annual-average one on average. With one representative hour the peak is
    that hour's expression; with several it is a variable ``fpk[s,p]`` and rows
    ``peak_power``: ``fpk >= facility(h)`` for every hour. There, the power a schedule's
    allocations add at its peak is one variable per site, period and schedule
    (``pmix[s,w,key,p]``, rows ``power_mix``), and the hour rows are written in those
    and the hour-independent power: a few terms per hour instead of every allocation
    of the site (the same rows, far fewer nonzeros).

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    for s in d.sites:
        for p in range(len(d.periods)):
            mv.facility_avg_kw[s, p] = _lin(_site_power_terms(d, mv, s, p, average=True))
            hours = (None,) if d.nameplate_peak else d.rep_hours(p)
            if len(hours) == 1:
                e = mv.facility_peak_kw[s, p] = _lin(_site_power_terms(d, mv, s, p, average=False,
                                                               hour=hours[0]))
                mv.facility_hour_kw[s, p, hours[0]] = e
                continue
            label = d.periods[p].label
            terms, schedules = _site_power_parts(d, mv, s, p, average=False)
            if not terms:
                for h in hours:
                    mv.facility_hour_kw[s, p, h] = _lin([])
                mv.facility_peak_kw[s, p] = _lin([])
                continue
            parts: dict = defaultdict(list)
            for g, v, c in terms:
                parts[g].append((v, c))
            fixed = _merged(parts.pop(None, []))
            mixes = []  # (schedule, utilisation, terms at its peak)
            for (w, key), part in parts.items():
                sch, u = schedules[w, key]
                if len(part) > 1:
                    var = prob.add_variable(lp_name("pmix", s, w, key, label), 0)
                    mv.add(prob, "power_mix", (s, w, key, label),
                           _lin([(var, 1.0), *((v, -c) for v, c in part)]) == 0)
                    part = [(var, 1.0)]
                mixes.append((sch, u, part))
            var = mv.facility_peak_over_hours_kw[s, p] = prob.add_variable(
                lp_name("fpk", s, label), 0)
            for h in hours:
                row = list(fixed)
                for sch, u, part in mixes:
                    f = sch.frac(h) / u
                    row += [(v, c * f) for v, c in part]
                e = mv.facility_hour_kw[s, p, h] = _lin(_merged(row))
                mv.add(prob, "peak_power", (s, label, _hour(d, h)), e - var <= 0)
            mv.facility_peak_kw[s, p] = _lin([(var, 1.0)])


def add_grid_connections(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Grid connection requests at sites whose connection is a decision [kW].

    ``req[s,q] >= 0`` is requested in period q and energised from the first period
    starting ``lead time`` after q's start; ``req_assessed[s,q]`` goes through the
    assessment (extra months). Connected capacity
    ``connected[s,p] = committed[s,p] + sum of requests energised by p``; rows:
    ``connectable``: ``connected[s,p] <= grid_kw[s,p]`` (the most the grid can give);
    ``assessment``: ``committed_max + sum_q req[s,q] <= threshold`` (only the part
    below the threshold avoids the assessment; a conservative reading of the rule
    that any connection reaching it needs one). Requests are paid when made
    (``grid_connection`` capex, terminal value over the building life).
    A site offered a flexible part also gets ``req_flex[s,q]`` (its own lead time and
    price), energised into ``connected`` like the firm requests (but not in
    ``connectable``, which bounds the firm MW) and into ``flexible[s,p]`` (curtailed in
    the events of :func:`~dcplan.planner.flexgrid.add_curtailment`); ``flex_max``:
    ``sum_q req_flex[s,q] <= max`` (the flexible MW offered).

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    n = len(d.periods)
    for s, sd in d.sites.items():
        g = sd.connection
        if g is None or not any(len(mv.facility_peak_kw.get((s, p), _lin([]))) for p in range(n)):
            continue
        for q, per in enumerate(d.periods):
            if g.arrival[q] < n:
                mv.grid_requested_kw[s, q] = prob.add_variable(lp_name("req", s, per.label), 0)
            if g.threshold_kw is not None and g.arrival_assessed[q] < n:
                mv.grid_requested_assessed_kw[s, q] = prob.add_variable(lp_name("req_assessed", s,
                                                                  per.label), 0)
            if g.flexible is not None and g.flexible.arrival[q] < n:
                mv.grid_requested_flex_kw[s, q] = prob.add_variable(lp_name("req_flex", s,
                                                                    per.label), 0)
        for p, per in enumerate(d.periods):
            terms = [(v, 1.0) for q, v in mv.grid_requested_kw.items() if q[0] == s
                     and g.arrival[q[1]] <= p]
            terms += [(v, 1.0) for q, v in mv.grid_requested_assessed_kw.items() if q[0] == s
                      and g.arrival_assessed[q[1]] <= p]
            flex = []
            if g.flexible is not None:
                flex = [(v, 1.0) for q, v in mv.grid_requested_flex_kw.items() if q[0] == s
                        and g.flexible.arrival[q[1]] <= p]
                mv.grid_flexible_kw[s, p] = _lin(flex)
            mv.grid_connected_kw[s, p] = _lin(terms + flex) + g.committed_kw[p]
            if terms:
                mv.add(prob, "connectable", (s, per.label),
                       _lin(terms) <= max(0.0, sd.grid_kw[p] - g.committed_kw[p]))
        flex = [(v, 1.0) for q, v in mv.grid_requested_flex_kw.items() if q[0] == s]
        if flex:
            mv.add(prob, "flex_max", (s,), _lin(flex) <= g.flexible.max_kw)
        if g.threshold_kw is not None:
            fast = [(v, 1.0) for q, v in mv.grid_requested_kw.items() if q[0] == s]
            if fast:
                room = max(0.0, g.threshold_kw - 1.0 - max(g.committed_kw, default=0.0))
                mv.add(prob, "assessment", (s,), _lin(fast) <= room)


def recharge_terms(d: PlanInputs, mv: ModelVars, s: str, p: int) -> list:
    """(variable, kW) terms of the UPS battery recharge at site s in period p.

    ``recharge_kw_per_it_kw[r,s] x it_power_max_kw[r] x inst[r,s,p]``: the UPS
    plant's recharge share of its full load (the site's topology and UPS model at
    the planning scale).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables built so far (``racks_in_service`` is read).
    s : str
        Site id.
    p : int
        Period index (0-based) [-].

    Returns
    -------
    list of (pulp.LpVariable, float)
        Racks in service and their recharge power per rack [kW/rack] (grid side, on the
        racks' nameplate ``it_power_max_kw``).
    """
    out = []
    for r in d.racks:
        var = mv.racks_in_service.get((r, s, p))
        k = d.rack_site[r, s].recharge_kw_per_it_kw if var is not None else 0.0
        if k and d.capped_peak and r in d.cap_levels:
            out += [(mv.racks_at_cap[r, s, p, c], k * d.peak_rack_kw(r, c))
                    for c in d.cap_levels[r]]
        elif k:
            out.append((var, k * d.racks[r].it_power_max_kw))
    return out


def add_grid_limit(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Site power against the connected grid [kW].

    ``facility_peak[s,p] + recharge[s,p] <= connected[s,p]`` (connection decisions) or
    ``<= grid_kw[s,p]`` (the site's grid simply available); ``recharge`` is the UPS
    battery recharge of the site's racks (:func:`recharge_terms`), which the
    connection carries on top of the facility peak.

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    for (s, p), expr in mv.facility_peak_kw.items():
        if not len(expr):
            continue
        gpk = mv.grid_peak_kw.get((s, p))
        if gpk is not None:  # storage or generation: the grid's own peak (recharge: rows
            expr = _lin([(gpk, 1.0)])  # supply_firm, dcplan.planner.supply)
        else:
            expr = expr + _lin(recharge_terms(d, mv, s, p))
        conn = mv.grid_connected_kw.get((s, p))
        if conn is None:
            mv.add(prob, "grid", (s, d.periods[p].label), expr <= d.sites[s].grid_kw[p])
        else:
            mv.add(prob, "grid", (s, d.periods[p].label), expr - conn <= 0)


def add_cdus(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Integer CDUs with N+redundancy, per site, CDU model and period.

    ``cap_c * cdu[s,c,p] - red * cap_c * on[s,c,p] >= sum_r liquid_kw[r,s] * inst[r,s,p]``;
    ``sum_r inst[r,s,p] <= positions_s * on[s,c,p]`` (on = 1 when any rack needs c);
    ``cdu_new[s,c,p] >= cdu[s,c,p] - cdu[s,c,p-1]`` (CDUs bought), with the CDUs of the
    existing fleet owned before the first period. ``cdu_keep``: ``on`` never falls
    (``on[p] >= on[p-1]``): CDUs are never retired, so the redundant ones bought when
    the site first hosts liquid-cooled racks are still there later and keeping the
    requirement costs nothing (only in-row CDUs' positions), while it turns the weak
    big-M link into a choice of the first period of use, which the branch and bound
    settles quickly. ``on`` is 1 wherever the existing fleet has liquid-cooled racks.

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    if d.cdu_choice == "milp":
        add_cdu_choice(prob, d, mv)
        return
    for s in d.sites:
        for c in d.cdu_models(s):
            racks = [r for r in d.racks if (r, s) in d.rack_site
                     and d.rack_site[r, s].cdu_id == c and (r, s, 0) in mv.racks_in_service]
            if not racks:
                continue
            cd = d.cdu_data(s, c)
            heat0 = sum(d.rack_site[r, s].liquid_heat_kw_per_rack * d.existing_count(r, s, 0)
                        for r in racks)
            prev = -(-heat0 // cd.cdu_capacity_kw) + d.cdu_redundancy if heat0 > 0 else 0
            for p, per in enumerate(d.periods):
                key = (s, c, per.label)
                cdu = mv.cdus_in_service[s, c, p] = prob.add_variable(lp_name("cdu", *key), 0,
                                                        cat=pulp.LpInteger)
                has_existing = any(d.existing_count(r, s, p) > 0 for r in racks)
                on = mv.cdu_model_used[s, c, p] = prob.add_variable(lp_name("cdu_on", *key),
                                                          1 if has_existing else 0, 1,
                                                          cat=pulp.LpBinary)
                if p > 0:
                    mv.add(prob, "cdu_keep", key,
                           _lin([(on, 1.0), (mv.cdu_model_used[s, c, p - 1], -1.0)]) >= 0)
                buy = mv.cdus_bought[s, c, p] = prob.add_variable(lp_name("cdu_new", *key), 0)
                heat = [(mv.racks_in_service[r, s, p], -d.rack_site[r, s].liquid_heat_kw_per_rack)
                        for r in racks]
                cap = cd.cdu_capacity_kw
                mv.add(prob, "cdu_heat", key,
                       _lin([(cdu, cap), (on, -d.cdu_redundancy * cap), *heat]) >= 0)
                mv.add(prob, "cdu_on", key, _lin(
                    [*[(mv.racks_in_service[r, s, p], 1.0) for r in racks],
                     (on, -float(d.sites[s].rack_positions))]) <= 0)
                rhs = -prev if p == 0 else 0.0
                terms = [(buy, 1.0), (cdu, -1.0)]
                if p > 0:
                    terms.append((mv.cdus_in_service[s, c, p - 1], 1.0))
                mv.add(prob, "cdu_buy", key, _lin(terms) >= rhs)


def cdu_heat_bound_kw(d: PlanInputs, s: str, racks: list[str]) -> float:
    """Most liquid heat site ``s`` can hold [kW]: its positions full of the densest racks.

    ``positions_s x max_r liquid_kw[r] / pos[r]`` over ``racks`` (the space row keeps
    the racks in service within the positions), and at least the liquid heat of the
    existing fleet in any period (which is in service whatever the space).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    s : str
        Site id.
    racks : list of str
        Rack types with liquid heat at ``s``.

    Returns
    -------
    float
        [kW].
    """
    dense = max(d.rack_site[r, s].liquid_heat_kw_per_rack / max(d.racks[r].rack_positions, 1e-9)
                for r in racks)
    existing = max(sum(d.rack_site[r, s].liquid_heat_kw_per_rack * d.existing_count(r, s, p)
                       for r in racks) for p in range(len(d.periods)))
    return max(dense * d.sites[s].rack_positions, existing)


def add_cdu_choice(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """One CDU model per site chosen by the MILP (``cdu_choice: milp``).

    Per site s with liquid-cooled rack types and each model c of ``d.cdu_options[s]``:
    binary ``pick[s,c]`` (the site's model over the whole horizon); per period binary
    ``use[s,p]`` (the site has had liquid-cooled racks by p: its CDUs, spares included,
    are kept from then on); continuous ``on[s,c,p]`` in [0, 1], equal to ``use x pick``
    at any integer point; integer ``cdu[s,c,p]``, continuous ``kw[s,c,p] >= 0`` (the
    liquid heat model c moves) and ``cdu_new[s,c,p] >= 0``. Rows (the hull of the
    disjunction "the site's heat goes to model c", one heat variable per model instead
    of a big-M on the heat row; one ``use`` binary per site and period instead of one
    ``on`` binary per model, so that branching on it prices the spare units of whichever
    model is chosen):

    * ``cdu_model_one``: ``sum_c pick[s,c] <= 1`` (``= 1`` when the existing fleet has
      liquid-cooled racks at s);
    * ``cdu_model_keep``: ``use[s,p] - use[s,p-1] >= 0`` (CDUs are never retired; as
      ``cdu_keep``, it makes the big-M below a choice of the first period of use);
    * ``cdu_model_any``: ``sum_c on[s,c,p] - use[s,p] = 0``;
    * ``cdu_model_on``: ``on[s,c,p] - pick[s,c] <= 0``;
    * ``cdu_model_split``: ``sum_c kw[s,c,p] - sum_r liquid_kw[r,s] inst[r,s,p] = 0``;
    * ``cdu_model_use``: ``kw[s,c,p] - H_s on[s,c,p] <= 0``, ``H_s`` the most liquid
      heat the site holds (:func:`cdu_heat_bound_kw`);
    * ``cdu_model_heat``: ``cap_c cdu[s,c,p] - red cap_c on[s,c,p] - kw[s,c,p] >= 0``,
      so at the optimum ``cdu = ceil(heat / cap_c) + red`` of the chosen model;
    * ``cdu_model_buy``: ``cdu_new[s,c,p] - cdu[s,c,p] + cdu[s,c,p-1] >= 0``; in the
      first period ``+ owned_c pick[s,c]`` instead of ``cdu[s,c,p-1]``, ``owned_c =
      ceil(existing heat / cap_c) + red`` (the existing fleet's CDUs are taken to be
      of the model chosen).

    The CDUs' prices, terminal value and positions enter the cost and space rows as
    with ``per_rack_type`` (keys (s, c, p) of ``mv.cdus_in_service`` and
    ``mv.cdus_bought``). Pump power stays in each rack type's cooling coefficients
    (the model the cooling model picks for it alone).

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables (``cdu_options``).
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place
        (``cdu_site_model``, ``cdu_site_used``, ``cdu_heat_kw`` and the CDU fields).
    """
    from dcplan.facility.cooling import cdu_count  # not at import: saved plans load without it

    for s in d.sites:
        models = d.cdu_models(s)
        racks = [r for r in (d.cdu_racks(s, models[0]) if models else [])
                 if (r, s, 0) in mv.racks_in_service]
        if not racks:
            continue
        heat_max = cdu_heat_bound_kw(d, s, racks)
        heat0 = sum(d.rack_site[r, s].liquid_heat_kw_per_rack * d.existing_count(r, s, 0)
                    for r in racks)
        existing = any(d.existing_count(r, s, p) > 0 for r in racks
                       for p in range(len(d.periods)))
        picks = []
        for c in models:
            pick = mv.cdu_site_model[s, c] = prob.add_variable(
                lp_name("cdu_pick", s, c), 0, 1, cat=pulp.LpBinary)
            picks.append((pick, 1.0))
        one = _lin(picks)
        mv.add(prob, "cdu_model_one", (s,), one == 1 if existing else one <= 1)
        for p, per in enumerate(d.periods):
            heat = [(mv.racks_in_service[r, s, p], -d.rack_site[r, s].liquid_heat_kw_per_rack)
                    for r in racks]
            use = mv.cdu_site_used[s, p] = prob.add_variable(
                lp_name("cdu_use", s, per.label), 0, 1, cat=pulp.LpBinary)
            if p > 0:
                mv.add(prob, "cdu_model_keep", (s, per.label),
                       _lin([(use, 1.0), (mv.cdu_site_used[s, p - 1], -1.0)]) >= 0)
            split, ons = [], []
            for c in models:
                key = (s, c, per.label)
                cap = d.cdu_data(s, c).cdu_capacity_kw
                cdu = mv.cdus_in_service[s, c, p] = prob.add_variable(
                    lp_name("cdu", *key), 0, cat=pulp.LpInteger)
                on = mv.cdu_model_used[s, c, p] = prob.add_variable(lp_name("cdu_on", *key), 0, 1)
                kw = mv.cdu_heat_kw[s, c, p] = prob.add_variable(lp_name("cdu_kw", *key), 0)
                buy = mv.cdus_bought[s, c, p] = prob.add_variable(lp_name("cdu_new", *key), 0)
                split.append((kw, 1.0))
                ons.append((on, 1.0))
                mv.add(prob, "cdu_model_on", key,
                       _lin([(on, 1.0), (mv.cdu_site_model[s, c], -1.0)]) <= 0)
                mv.add(prob, "cdu_model_use", key, _lin([(kw, 1.0), (on, -heat_max)]) <= 0)
                mv.add(prob, "cdu_model_heat", key,
                       _lin([(cdu, cap), (on, -d.cdu_redundancy * cap), (kw, -1.0)]) >= 0)
                terms = [(buy, 1.0), (cdu, -1.0)]
                if p > 0:
                    terms.append((mv.cdus_in_service[s, c, p - 1], 1.0))
                elif heat0 > 0:
                    owned = cdu_count(heat0, cap, d.cdu_redundancy)
                    terms.append((mv.cdu_site_model[s, c], float(owned)))
                mv.add(prob, "cdu_model_buy", key, _lin(terms) >= 0)
            mv.add(prob, "cdu_model_any", (s, per.label), _lin([*ons, (use, -1.0)]) == 0)
            mv.add(prob, "cdu_model_split", (s, per.label), _lin([*split, *heat]) == 0)


def add_space_limit(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Space: rack, CDU and network positions within the site's.

    ``sum_r (pos[r] + npos[r,s,p]) * inst[r,s,p] + sum_c pos[c] * cdu[s,c,p]
    + net_racks[s,p] <= positions_s``: ``npos`` is the linear network's network-rack
    positions per rack in service (``RackSiteData.network_positions``; 0 for a rack
    type with the integer fabric, whose network racks are the integer ``net_racks``).

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    cdus = defaultdict(list)
    for (s, c, p), var in mv.cdus_in_service.items():
        cdus[s, p].append((var, d.cdu_data(s, c).cdu_positions))
    for s, sd in d.sites.items():
        for p, per in enumerate(d.periods):
            terms = []
            for r in d.racks:
                if (r, s, p) not in mv.racks_in_service:
                    continue
                tiered = mv.network_terms(r, s, p, 2)
                net = 0.0 if tiered is not None or not d.linear_network(r) else \
                    d.rack_site[r, s].network_positions(p)
                terms.append((mv.racks_in_service[r, s, p], float(d.racks[r].rack_positions) + net))
                terms += tiered or []
            terms += cdus[s, p]
            if (s, p) in mv.network_racks:
                terms.append((mv.network_racks[s, p], 1.0))
            if terms:
                mv.add(prob, "space", (s, per.label), _lin(terms) <= sd.rack_positions)


def add_building(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Facility capacity [kW]: ``built0[s] + sum_{q<=p} build[s,q] >= facility_peak[s,p]``.

    ``build[s,q] >= 0`` is capacity added in period q, fixed at 0 in periods that start
    before the site's lead time has passed (counted from the start of the plan);
    ``built0`` is the capacity already built.

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    for s, sd in d.sites.items():
        if not any(len(mv.facility_peak_kw[s, p]) for p in range(len(d.periods))):
            continue
        terms = []
        for p, per in enumerate(d.periods):
            cap = 0.0 if p < sd.first_build_period else None
            var = mv.capacity_built_kw[s, p] = prob.add_variable(
                lp_name("build", s, per.label), 0, cap)
            terms.append((var, 1.0))
            mv.add(prob, "building", (s, per.label),
                   _lin(terms) - mv.facility_peak_kw[s, p] >= -sd.built_kw_initial)


def add_costs(d: PlanInputs, mv: ModelVars) -> None:
    """Undiscounted cost expressions per category and period [USD] (see ``CATEGORIES``).

    Capex: racks (at the period's price of the type's path), network and heat-rejection
    plant (per IT kW at full load) for new racks; CDUs bought; facility capacity built
    (shell, electrical and mechanical parts, or one all-in figure); grid connection
    requests. Opex: maintenance (share of the catalog price per year of every rack in
    service), energy (hours x average facility kW x the period's tariff), demand charge
    (months x peak facility kW x charge), carbon (energy x emission factor x carbon
    price), unserved penalty. Terminal value: minus the straight-line book value at the
    end of the horizon (grid connections over the building life).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables and expressions built so far; ``mv.costs_usd`` is set:
        (category, period index) -> expression [USD].
    """
    cost = defaultdict(list)
    n = len(d.periods)
    for (r, s, p), var in mv.racks_bought.items():
        rk, rs = d.racks[r], d.rack_site[r, s]
        price = d.rack_capex(r, p)
        cost["rack_capex", p].append((var, price))
        tiered = (r, s, p) in mv.network_tier_vars  # its network is bought as it grows (below)
        net = 0.0 if tiered or not d.linear_network(r) else rs.network_capex(p)
        cost["network_capex", p].append((var, net))
        cooling = rs.cooling_capex_usd_per_kw * rk.it_power_max_kw
        cost["cooling_capex", p].append((var, cooling))
        left = d.remaining_frac(rk.lifetime_years, p)
        cost["terminal_value", n - 1].append(
            (var, -left * (price + net + cooling)))
    for (r, _s, p), tiers in mv.network_tier_vars.items():
        buy = tiers[0][3]
        cost["network_capex", p].append((buy, 1.0))
        cost["terminal_value", n - 1].append(
            (buy, -d.remaining_frac(d.racks[r].lifetime_years, p)))
    for (s, i, p), var in mv.network_bought.items():
        price = mv.network_items[s, i, p][1]
        cost["network_capex", p].append((var, price))
        cost["terminal_value", n - 1].append(
            (var, -price * d.remaining_frac(item_lifetime(d, i), p)))
    for (r, s, p), var in mv.racks_bought.items():
        extra = d.rack_site[r, s].redundancy_capex_usd_per_kw * d.racks[r].it_power_max_kw
        if extra:
            cost["redundancy_capex", p].append((var, extra))
            cost["terminal_value", n - 1].append(
                (var, -extra * d.remaining_frac(d.building_lifetime_years, p)))
    for (s, c, p), var in mv.cdus_bought.items():
        price = d.cdu_data(s, c).cdu_capex_usd
        cost["cdu_capex", p].append((var, price))
        cost["terminal_value", n - 1].append((var, -price * d.remaining_frac(
            d.cdu_lifetime_years, p)))
    for (s, p), var in mv.capacity_built_kw.items():
        sd = d.sites[s]
        for part, price in building_prices(d, s):
            cost[part, p].append((var, price))
        cost["terminal_value", n - 1].append(
            (var, -sd.build_capex_usd_per_kw * d.remaining_frac(d.building_lifetime_years, p)))
    for lane in (mv.grid_requested_kw, mv.grid_requested_assessed_kw):
        for (s, q), var in lane.items():
            price = d.sites[s].connection.cost_usd_per_kw
            cost["grid_connection", q].append((var, price))
            cost["terminal_value", n - 1].append(
                (var, -price * d.remaining_frac(d.building_lifetime_years, q)))
    for (s, q), var in mv.grid_requested_flex_kw.items():
        price = d.sites[s].connection.flexible.cost_usd_per_kw
        cost["grid_connection", q].append((var, price))
        cost["terminal_value", n - 1].append(
            (var, -price * d.remaining_frac(d.building_lifetime_years, q)))
    for (r, _s, p), var in mv.racks_in_service.items():
        rk = d.racks[r]
        cost["maintenance", p].append(
            (var, rk.maintenance_frac_per_year * rk.capex_usd * d.periods[p].years))
    for (s, p), expr in mv.facility_avg_kw.items():
        f = d.hours(p) * d.energy_price(s, p)
        items = list(expr.items()) + list(mv.grid_net_avg_kw.get((s, p), _lin([])).items())
        cost["energy", p] += [(v, f * c) for v, c in items]
        cf = d.hours(p) * d.sites[s].carbon_kg_per_kwh * d.carbon_price(p)
        if cf:
            cost["carbon", p] += [(v, cf * c) for v, c in items]
    for (s, p), expr in mv.facility_peak_kw.items():
        f = d.months(p) * d.demand_charge(s, p)
        gpk = mv.grid_peak_kw.get((s, p))
        items = expr.items() if gpk is None else [(gpk, 1.0)]
        cost["demand_charge", p] += [(v, f * c) for v, c in items]
    for key, terms in supply_cost_terms(d, mv).items():
        cost[key] += terms
    for (w, k, p), var in mv.unserved_tokens_per_s.items():
        cost["unserved_penalty", p].append(
            (var, d.unserved_usd_per_token * mv.demand_row_tokens[w, k, p]))
    mv.costs_usd = {key: _lin(_merged(terms)) for key, terms in cost.items()}


# --- build or buy: what a self-hosting team pays beyond energy and maintenance ---------


def add_operations_costs(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Staff and software opex (categories ``staff`` and ``software``) [USD].

    From :class:`~dcplan.planner.operations.OperationsData` (nothing when
    ``d.operations`` is None), per period of ``years``:

    - ``software += inst[r,s,p] x licences of r x USD/yr x years``;
    - ``staff += inst[r,s,p] x (per-rack and per-accelerator roles + per-MW roles x
      it_power_max_kw) x years``;
    - ``staff += staffed[s,p] x per-site roles x years`` with a binary ``staffed[s,p]``
      and ``sum_r rack_positions_r x inst[r,s,p] <= rack_positions_s x staffed[s,p]``
      (a site with any racks is staffed);
    - ``staff += fleet_on[p] x per-fleet roles x years`` with ``fleet_on[p] >=
      staffed[s,p]`` for every site.

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    ops = d.operations
    if ops is None or not ops.any:
        return
    add = defaultdict(list)
    by_site = defaultdict(list)
    for (r, s, p), var in mv.racks_in_service.items():
        yrs = d.periods[p].years
        staff = ops.staff_per_rack.get((r, s), 0.0) + ops.staff_per_kw.get(s, 0.0) \
            * d.racks[r].it_power_max_kw
        add["staff", p].append((var, staff * yrs))
        add["software", p].append((var, ops.software_per_rack.get(r, 0.0) * yrs))
        by_site[s, p].append((var, float(d.racks[r].rack_positions)))
    need_site = any(ops.staff_per_site.values()) or ops.staff_per_fleet > 0
    for (s, p), terms in sorted(by_site.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if not need_site:
            break
        label = d.periods[p].label
        on = mv.site_staffed[s, p] = prob.add_variable(lp_name("staffed", s, label), 0, 1,
                                                  cat=pulp.LpInteger)
        cap = float(max(d.sites[s].rack_positions, 1))
        mv.add(prob, "staffed", (s, label), _lin(terms) - cap * on <= 0)
        add["staff", p].append((on, ops.staff_per_site.get(s, 0.0) * d.periods[p].years))
        if ops.staff_per_fleet > 0:
            if p not in mv.fleet_staffed:     # its cost once per period, not once per site
                mv.fleet_staffed[p] = prob.add_variable(lp_name("fleet_on", label), 0, 1,
                                                   cat=pulp.LpInteger)
                add["staff", p].append((mv.fleet_staffed[p], ops.staff_per_fleet
                                        * d.periods[p].years))
            mv.add(prob, "fleet_on", (s, label), _lin([(mv.fleet_staffed[p], 1.0), (on, -1.0)])
                   >= 0)
    for key, terms in add.items():
        mv.costs_usd[key] = mv.costs_usd.get(key, _lin([])) + _lin(_merged(terms))


def building_prices(d: PlanInputs, s: str) -> list[tuple[str, float]]:
    """(cost category, USD per kW built) of a site's facility capacity.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    s : str
        Site id.

    Returns
    -------
    list of (str, float)
        Cost category (``building_shell``... or ``building_capex``) and price per kW of
        facility capacity built [USD/kW].
    """
    sd = d.sites[s]
    if sd.build_parts_usd_per_kw:
        return [(f"building_{part}", price) for part, price in sd.build_parts_usd_per_kw]
    return [("building_capex", sd.build_capex_usd_per_kw)]


def add_carbon_cap(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Emissions: ``sum_s hours x average facility kW x kgCO2/kWh <= cap[p]`` where a cap is set.

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    for p, per in enumerate(d.periods):
        cap = d.carbon_cap(p)
        if cap is None:
            continue
        terms = []
        for s, sd in d.sites.items():
            f = d.hours(p) * sd.carbon_kg_per_kwh
            terms += [(v, f * c) for v, c in mv.facility_avg_kw.get((s, p), _lin([])).items()]
            terms += [(v, f * c) for v, c in mv.grid_net_avg_kw.get((s, p), _lin([])).items()]
        terms += onsite_emission_terms(d, mv, p)
        mv.add(prob, "carbon_cap", (per.label,), _lin(_merged(terms)) <= cap)


def add_water_limit(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Site water: ``sum_r WUE[r,s] x IT_max[r] x inst[r,s,p] x hours / 1000 <= limit x years``.

    WUE [L per IT kWh] is that of the cooling plant the facility model chose for the
    rack type at the site (evaporative towers use water; dry coolers and chillers
    none), at full load all year: a conservative reading of the site's annual
    allowance [m3/year].

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    for s, sd in d.sites.items():
        limit = sd.water_limit_m3_per_year
        if limit is None:
            continue
        for p, per in enumerate(d.periods):
            terms = []
            for r in d.racks:
                var = mv.racks_in_service.get((r, s, p))
                w = d.rack_site[r, s].water_l_per_it_kwh if var is not None else 0.0
                if w:
                    terms.append((var, w * d.racks[r].it_power_max_kw * d.hours(p) / 1000.0))
            if terms:
                mv.add(prob, "water", (s, per.label), _lin(terms) <= limit * per.years)


def add_budget(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Budget: ``sum_{capex categories} cost[cat, p] <= budget_usd[p]`` where a budget is set.

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    for p, limit in enumerate(d.budget_usd):
        if limit is None:
            continue
        terms = [t for cat in CAPEX_CATEGORIES
                 for t in mv.costs_usd.get((cat, p), _lin([])).items()]
        mv.add(prob, "budget", (d.periods[p].label,), _lin(_merged(terms)) <= limit)


def discount(d: PlanInputs, category: str, p: int) -> float:
    """Discount factor of ``category`` costs in period ``p`` [-].

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    category : str
        A key of :data:`CATEGORIES`.
    p : int
        Period index (0-based) [-].

    Returns
    -------
    float
        :meth:`PlanInputs.df_capex` (``capex``), :meth:`PlanInputs.df_opex` (``opex``) or
        :meth:`PlanInputs.df_end` (``end``) [-].
    """
    when = CATEGORIES[category]
    return d.df_capex(p) if when == "capex" else d.df_opex(p) if when == "opex" else d.df_end()


def set_objective(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Objective: minimise ``sum_{cat,p} discount(cat, p) * cost[cat, p]`` [USD, present value].

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    terms = defaultdict(float)
    for (cat, p), expr in mv.costs_usd.items():
        f = discount(d, cat, p)
        for v, c in expr.items():
            terms[v] += f * c
    obj = pulp.LpAffineExpression([(v, c) for v, c in terms.items() if c != 0])
    prob.setObjective(obj)
