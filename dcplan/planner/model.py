"""The fleet-planning MILP, one small function per constraint family.

Index sets: rack types ``r``, sites ``s``, workloads ``w``, capacity pools ``k``
(``all`` for aggregated workloads; ``prefill`` and ``decode`` for disaggregated
ones), periods ``p``, CDU models ``c``. Every variable and constraint is named by
:func:`~dcplan.planner.names.lp_name`. All money is undiscounted USD inside the cost
expressions; the objective applies the discount factors of
:class:`~dcplan.planner.inputs.PlanInputs`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import pulp

from dcplan.planner.inputs import PlanInputs
from dcplan.planner.names import lp_name

#: Cost categories and when they are paid ("capex": period start, "opex": middle,
#: "end": end of the horizon).
CATEGORIES = {
    "rack_capex": "capex", "network_capex": "capex", "cooling_capex": "capex",
    "cdu_capex": "capex", "redundancy_capex": "capex", "building_shell": "capex",
    "building_electrical": "capex", "building_mechanical": "capex", "building_capex": "capex",
    "grid_connection": "capex",
    "maintenance": "opex", "staff": "opex", "software": "opex", "energy": "opex",
    "demand_charge": "opex", "carbon": "opex", "unserved_penalty": "opex", "terminal_value": "end",
}
#: Models with at least this many (rack, site, period) keys use the sparse stock recursion.
SPARSE_STOCK_MIN = 5_000

CAPEX_CATEGORIES = tuple(k for k, v in CATEGORIES.items() if v == "capex")


def _lin(terms) -> pulp.LpAffineExpression:
    """Affine expression from ``(variable, coefficient)`` pairs (fast path).

    A variable given twice keeps its last coefficient: merge repeated variables first
    (:func:`_merged`).
    """
    return pulp.LpAffineExpression([(v, c) for v, c in terms if c != 0])


def _merged(terms) -> list:
    """``(variable, coefficient)`` pairs with the coefficients of a repeated variable summed."""
    acc: dict = {}
    for v, c in terms:
        acc[v] = acc.get(v, 0.0) + c
    return list(acc.items())


@dataclass
class ModelVars:
    """Variables, constraints and cost expressions of one model.

    Attributes
    ----------
    new : dict
        (r, s, p) -> integer racks installed in period p [racks].
    inst : dict
        (r, s, p) -> racks in service [racks].
    alloc : dict
        (r, s, w, k, p) -> racks of r at s serving pool k of w at peak [racks].
    unserved : dict
        (w, k, p) -> peak demand not served (elastic model only) [tokens/s].
    cdu, cdu_on, cdu_new : dict
        (s, c, p) -> CDUs in service [-], whether any are needed [0/1], CDUs bought [-].
    built : dict
        (s, p) -> facility capacity added in period p [kW].
    fac_peak, fac_avg : dict
        (s, p) -> facility power on the design day at peak load / annual average [kW]
        (expressions; with several representative hours the peak is the variable
        ``fpk[s,p]``, at least the power of every hour).
    fac_hour : dict
        (s, p, h) -> facility power in representative hour h [kW] (expressions).
    fpk : dict
        (s, p) -> facility peak over the representative hours [kW] (several hours only).
    spare_on : dict
        (r, s, p) -> 1 when the site hosts rack type r, so its spare racks are kept [0/1].
    req, req_assessed : dict
        (s, q) -> grid capacity requested in period q without / with the assessment [kW].
    connected : dict
        (s, p) -> grid capacity connected in period p [kW] (expressions).
    demand_unit : dict
        (w, pool, p) -> tokens in period p per unit of the demand row [tokens per
        token/s]: the row is in peak tokens/s for one schedule, in mean tokens/s for the
        mix of a flexible workload's schedules.
    costs : dict
        (category, p) -> undiscounted cost expression [USD].
    cons : dict
        family -> {keys -> constraint}.
    elastic : bool
    staffed : dict
        (s, p) -> 1 when site s hosts any racks in period p, so its per-site staff is
        paid [0/1] (see :func:`add_operations_costs`).
    fleet_on : dict
        p -> 1 when the fleet has any racks in period p (per-fleet staff) [0/1].
    fabric : dict
        (r, s, fabric, p) -> :class:`FabricVars` (integer switches and links).
    fabric_int : list
        The fabrics' integer and binary variables.
    fabric_item : dict
        (s, item, p) -> (expression, unit price [USD]) of network items
        (:func:`fabric_items`).
    net_buy : dict
        (s, item, p) -> network bought [switches, or USD of links].
    net_racks : dict
        (s, p) -> network racks [positions].
    net_tier : dict
        (r, s, p) -> [(tier, on, racks, bought)] of a linear network with tiers
        (:attr:`RackSiteData.network_tiers`): binary ``on`` when the racks in service
        are in that tier's interval (None with one tier), the racks in service
        ``racks`` counted in it, and the network bought in the period ``bought`` [USD]
        (the same in every entry).
    """

    new: dict = field(default_factory=dict)
    inst: dict = field(default_factory=dict)
    alloc: dict = field(default_factory=dict)
    unserved: dict = field(default_factory=dict)
    cdu: dict = field(default_factory=dict)
    cdu_on: dict = field(default_factory=dict)
    cdu_new: dict = field(default_factory=dict)
    built: dict = field(default_factory=dict)
    fac_peak: dict = field(default_factory=dict)
    fac_avg: dict = field(default_factory=dict)
    fac_hour: dict = field(default_factory=dict)
    fpk: dict = field(default_factory=dict)
    spare_on: dict = field(default_factory=dict)
    req: dict = field(default_factory=dict)
    req_assessed: dict = field(default_factory=dict)
    connected: dict = field(default_factory=dict)
    demand_unit: dict = field(default_factory=dict)
    costs: dict = field(default_factory=dict)
    cons: dict = field(default_factory=lambda: defaultdict(dict))
    staffed: dict = field(default_factory=dict)
    fleet_on: dict = field(default_factory=dict)
    elastic: bool = False
    fabric: dict = field(default_factory=dict)
    fabric_int: list = field(default_factory=list)
    fabric_item: dict = field(default_factory=dict)
    net_buy: dict = field(default_factory=dict)
    net_racks: dict = field(default_factory=dict)
    net_tier: dict = field(default_factory=dict)

    def add(self, prob: pulp.LpProblem, family: str, keys: tuple, constraint) -> None:
        """Add ``constraint`` to ``prob`` named ``lp_name(family, *keys)`` and record it."""
        name = lp_name(family, *keys)
        constraint.name = name
        prob.addConstraint(constraint, name)
        self.cons[family][keys] = constraint

    def integers(self) -> list[pulp.LpVariable]:
        """All integer and binary variables."""
        return [*self.new.values(), *self.cdu.values(), *self.cdu_on.values(),
                *self.spare_on.values(), *self.staffed.values(), *self.fleet_on.values(),
                *self.fabric_int,
                *(t[1] for ts in self.net_tier.values() for t in ts if t[1] is not None)]

    def network_terms(self, r: str, s: str, p: int, what: int) -> list | None:
        """Linear-network terms of (r, s, p) per tier: (racks in the tier, figure) pairs.

        ``what``: 0 kW, 2 positions per rack in service. None without tiers (the caller
        uses the period's single figure).
        """
        tiers = self.net_tier.get((r, s, p))
        if tiers is None:
            return None
        return [(n, t[2 + what]) for t, _on, n, _b in tiers]


def build_model(d: PlanInputs, elastic: bool = False) -> tuple[pulp.LpProblem, ModelVars]:
    """Build the fleet-planning MILP.

    Parameters
    ----------
    d : PlanInputs
    elastic : bool
        Add priced unserved-demand variables (for diagnosing infeasible demand).

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
    add_fabrics(prob, d, mv)
    add_fabric_purchases(prob, d, mv)
    add_allocation_limit(prob, d, mv)
    add_demand(prob, d, mv)
    add_power_expressions(prob, d, mv)
    add_grid_connections(prob, d, mv)
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
    set_objective(prob, d, mv)
    return prob, mv


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
    """
    for r, s in _pairs(d):
        cap = d.sites[s].rack_positions // d.racks[r].rack_positions
        for p, per in enumerate(d.periods):
            if d.buyable(r, s, p):
                mv.new[r, s, p] = prob.add_variable(lp_name("new", r, s, per.label), 0, cap,
                                                  cat=pulp.LpInteger)
            mv.inst[r, s, p] = prob.add_variable(lp_name("inst", r, s, per.label), 0)


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
    """
    if len(mv.inst) < SPARSE_STOCK_MIN:
        _add_stock_dense(prob, d, mv)
        return
    n = len(d.periods)
    moves = {}  # rack -> per period: (periods whose purchases enter, ... retire)
    for r in d.racks:
        moves[r] = [([q for q in range(p + 1) if d.alive(r, q, p)
                      and not (p > 0 and d.alive(r, q, p - 1))],
                     [q for q in range(p) if p > 0 and d.alive(r, q, p - 1)
                      and not d.alive(r, q, p)]) for p in range(n)]
    for (r, s, p), inst in mv.inst.items():
        enter, retire = moves[r][p]
        terms = [(inst, 1.0)]
        terms += [(mv.new[r, s, q], -1.0) for q in enter if (r, s, q) in mv.new]
        rhs = float(d.existing_count(r, s, p))
        if p > 0:
            terms.append((mv.inst[r, s, p - 1], -1.0))
            terms += [(mv.new[r, s, q], 1.0) for q in retire if (r, s, q) in mv.new]
            rhs -= d.existing_count(r, s, p - 1)
        mv.add(prob, "stock", (r, s, d.periods[p].label), _lin(terms) == rhs)


def _add_stock_dense(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Racks in service: ``inst[r,s,p] = existing[r,s,p] + sum_{q alive in p} new[r,s,q]``.

    A rack bought in period q is in service in p while ``0 <= t_p - t_q < lifetime``
    (retired after its lifetime); existing racks retire ``lifetime`` after their
    installation date. One nonzero per period of a rack's life.
    """
    for (r, s, p), inst in mv.inst.items():
        terms = [(mv.new[r, s, q], -1.0) for q in range(p + 1)
                 if (r, s, q) in mv.new and d.alive(r, q, p)]
        expr = _lin([(inst, 1.0), *terms])
        mv.add(prob, "stock", (r, s, d.periods[p].label),
               expr == d.existing_count(r, s, p))


def add_spare_racks(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """N+k spare racks: ``k * on[r,s,p]`` racks of a type kept out of service at a site.

    ``on[r,s,p]`` is binary, 1 whenever the site hosts the type:
    ``inst <= cap * on`` and ``inst >= k * on`` (a valid tightening: a site hosting the
    type holds at least its spares). Only (rack, site) pairs with ``k > 0`` get them.
    """
    for (r, s, p), inst in mv.inst.items():
        k = d.spare_racks.get((r, s), 0)
        if k <= 0:
            continue
        label = d.periods[p].label
        cap = d.sites[s].rack_positions // d.racks[r].rack_positions
        on = mv.spare_on[r, s, p] = prob.add_variable(
            lp_name("spare_on", r, s, label), 1 if d.existing_count(r, s, p) > 0 else 0, 1,
            cat=pulp.LpBinary)
        mv.add(prob, "spare_on", (r, s, label), _lin([(inst, 1.0), (on, -float(cap))]) <= 0)
        mv.add(prob, "spare_min", (r, s, label), _lin([(inst, 1.0), (on, -float(k))]) >= 0)


def network_owned(d: PlanInputs, r: str, s: str) -> float:
    """Installed value of the existing racks' tiered linear network [USD] (already paid)."""
    e = d.existing_count(r, s, 0)
    return e * d.rack_site[r, s].network_capex(0, e) if e else 0.0


def add_network_tiers(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Tier of each linear network with tiers: which interval its racks in service are in.

    For (r, s, p) with :attr:`RackSiteData.network_tiers` ``(a_t, b_t, ...)``: binaries
    ``on_t`` (at most one), racks ``n_t`` with ``a_t on_t <= n_t <= b_t on_t`` and
    ``inst = sum_t n_t`` (the convex hull of the choice: the tightest rows for one
    (r, s, p)). Network kW and positions are ``sum_t f_t n_t``; the installed network
    value ``V[p] = sum_t c_t n_t`` [USD] and the network bought ``nbuy[p] >= V[p] -
    V[p-1]`` (the existing racks' network owned before the first period), paid like
    the integer fabric's switches and links: when the installed network grows, so a
    fabric that grows into three tiers pays for re-cabling the racks it has.
    """
    for r, s in sorted({(r, s) for r, s, _p in mv.inst}):
        rs = d.rack_site[r, s]
        if not rs.network_tiers or not d.linear_network(r):
            continue
        intervals = rs.network_tiers
        if (r, s) in d.network_collapsed:  # the lower tier's figures at any count
            intervals = ((1, intervals[-1][1], *intervals[0][2:]),)
        before = None
        for p in range(len(d.periods)):
            inst = mv.inst.get((r, s, p))
            if inst is None:
                before = None
                continue
            label = d.periods[p].label
            one = len(intervals) == 1  # one tier: no choice to make
            tiers = [(intervals[0], None, inst, None)] if one else []
            value = [(inst, intervals[0][3])] if one else []
            ons, split = [], [(inst, 1.0)]
            for k, t in enumerate(() if one else intervals):
                on = prob.add_variable(lp_name("ntier_on", r, s, label, k), 0, 1,
                                       cat=pulp.LpBinary)
                n = prob.add_variable(lp_name("ntier_racks", r, s, label, k), 0)
                mv.add(prob, "ntier_low", (r, s, label, k),
                       _lin([(n, 1.0), (on, -t[0])]) >= 0)
                mv.add(prob, "ntier_high", (r, s, label, k),
                       _lin([(n, 1.0), (on, -t[1])]) <= 0)
                ons.append((on, 1.0))
                split.append((n, -1.0))
                value.append((n, t[3]))
                tiers.append((t, on, n, None))
            if ons:
                mv.add(prob, "ntier_one", (r, s, label), _lin(ons) <= 1)
                mv.add(prob, "ntier_split", (r, s, label), _lin(split) == 0)
            buy = prob.add_variable(lp_name("ntier_buy", r, s, label), 0)
            row = [(buy, 1.0), *((v, -c) for v, c in value)]
            if before is not None:
                row += before
            owned = network_owned(d, r, s) if p == 0 else 0.0
            mv.add(prob, "ntier_buy", (r, s, label), _lin(row) >= -owned)
            before = value
            mv.net_tier[r, s, p] = [(t, on, n, buy) for t, on, n, _b in tiers]


def collapsed_over(d: PlanInputs, mv: ModelVars) -> set[tuple[str, str]]:
    """Pairs of ``d.network_collapsed`` whose solved racks in service pass their boundary."""
    over = set()
    for r, s in d.network_collapsed:
        top = d.rack_site[r, s].network_tiers[0][1]
        if any((mv.inst[r, s, p].value() or 0.0) > top + 1e-6
               for p in range(len(d.periods)) if (r, s, p) in mv.inst):
            over.add((r, s))
    return over


def add_allocation_limit(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Capacity of each rack pool in each representative hour h.

    ``sum_{w,key} alloc[r,s,w,key,p] * frac_key(h) / u_w <= A_r * (inst[r,s,p] - k * on)``.

    ``alloc`` (continuous racks at the peak of the schedule it serves) exists where the
    performance model says the rack can serve the workload and the rules allow the
    site; ``frac_key(h)`` is that schedule's hour-h value relative to its peak, ``u_w``
    the workload's target peak utilisation (headroom), ``A_r`` the rack type's
    availability and ``k`` its spare racks at the site (:func:`add_spare_racks`). Without
    profiles there is one hour and ``frac = 1``.
    """
    for (r, s, p), inst in mv.inst.items():
        label = d.periods[p].label
        terms = []  # (var, schedule, utilisation)
        for w, wd in d.workloads.items():
            if not d.serves(r, s, w) or wd.demand_tokens_per_s[p] <= 0:
                continue
            sch = d.schedules(w, p)
            for key, base, j in d.alloc_pools(w, p):
                if d.perf[r, w].rate(base) <= 0:
                    continue
                var = prob.add_variable(lp_name("alloc", r, s, w, key, label), 0)
                mv.alloc[r, s, w, key, p] = var
                terms.append((var, sch[j], wd.target_utilisation))
        if not terms:
            continue
        avail = d.racks[r].availability
        rhs = [(inst, -avail)]
        on = mv.spare_on.get((r, s, p))
        if on is not None:
            rhs.append((on, avail * d.spare_racks[r, s]))
        hours = d.rep_hours(p)
        for h in hours:
            keys = (r, s, label) if len(hours) == 1 else (r, s, label, _hour(d, h))
            row = [(v, sc.frac(h) / u) for v, sc, u in terms]
            mv.add(prob, "capacity", keys, _lin([*row, *rhs]) <= 0)


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
    """
    by_wkp = defaultdict(list)
    for (r, _s, w, key, p), var in mv.alloc.items():
        base, j = d.pool_of(w, key, p)
        sch = d.schedules(w, p)
        coef = d.rate(r, w, key, p)
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
                mv.demand_unit[w, k, p] = d.demand_row_tokens(w, p)
                if need <= 0:
                    continue
                terms = list(by_wkp.get((w, k, p), []))
                if mv.elastic:
                    mv.unserved[w, k, p] = prob.add_variable(
                        lp_name("unserved", w, k, per.label), 0)
                    terms.append((mv.unserved[w, k, p], 1.0))
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
    for r in d.racks:
        if (r, s, p) not in mv.inst:
            continue
        rs, rk = d.rack_site[r, s], d.racks[r]
        cool = rs.cooling_kw_per_it_kw_avg if average else rs.cooling_kw_per_it_kw_peak
        gain = (1 + rs.loss_frac)
        base = rk.it_power_max_kw if nameplate else rk.it_power_idle_kw
        tiered = mv.network_terms(r, s, p, 0)
        net = 0.0 if tiered is not None or not d.linear_network(r) else rs.network_kw(p)
        terms.append((None, mv.inst[r, s, p], gain * ((1 + cool) * base + net)))
        terms += [(None, v, gain * kw) for v, kw in tiered or ()]
        if nameplate:
            continue
        for w, wd in d.workloads.items():
            for key, _base, j in d.alloc_pools(w, p):
                var = mv.alloc.get((r, s, w, key, p))
                if var is None:
                    continue
                extra = max(0.0, d.perf[r, w].power_kw - rk.it_power_idle_kw)
                schedules[w, key] = (d.schedules(w, p)[j], wd.target_utilisation)
                terms.append(((w, key), var, gain * (1 + cool) * extra))
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
    """
    for s in d.sites:
        for p in range(len(d.periods)):
            mv.fac_avg[s, p] = _lin(_site_power_terms(d, mv, s, p, average=True))
            hours = (None,) if d.nameplate_peak else d.rep_hours(p)
            if len(hours) == 1:
                e = mv.fac_peak[s, p] = _lin(_site_power_terms(d, mv, s, p, average=False,
                                                               hour=hours[0]))
                mv.fac_hour[s, p, hours[0]] = e
                continue
            label = d.periods[p].label
            terms, schedules = _site_power_parts(d, mv, s, p, average=False)
            if not terms:
                for h in hours:
                    mv.fac_hour[s, p, h] = _lin([])
                mv.fac_peak[s, p] = _lin([])
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
            var = mv.fpk[s, p] = prob.add_variable(lp_name("fpk", s, label), 0)
            for h in hours:
                row = list(fixed)
                for sch, u, part in mixes:
                    f = sch.frac(h) / u
                    row += [(v, c * f) for v, c in part]
                e = mv.fac_hour[s, p, h] = _lin(_merged(row))
                mv.add(prob, "peak_power", (s, label, _hour(d, h)), e - var <= 0)
            mv.fac_peak[s, p] = _lin([(var, 1.0)])


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
    """
    n = len(d.periods)
    for s, sd in d.sites.items():
        g = sd.connection
        if g is None or not any(len(mv.fac_peak.get((s, p), _lin([]))) for p in range(n)):
            continue
        for q, per in enumerate(d.periods):
            if g.arrival[q] < n:
                mv.req[s, q] = prob.add_variable(lp_name("req", s, per.label), 0)
            if g.threshold_kw is not None and g.arrival_assessed[q] < n:
                mv.req_assessed[s, q] = prob.add_variable(lp_name("req_assessed", s,
                                                                  per.label), 0)
        for p, per in enumerate(d.periods):
            terms = [(v, 1.0) for q, v in mv.req.items() if q[0] == s
                     and g.arrival[q[1]] <= p]
            terms += [(v, 1.0) for q, v in mv.req_assessed.items() if q[0] == s
                      and g.arrival_assessed[q[1]] <= p]
            mv.connected[s, p] = _lin(terms) + g.committed_kw[p]
            if terms:
                mv.add(prob, "connectable", (s, per.label),
                       _lin(terms) <= max(0.0, sd.grid_kw[p] - g.committed_kw[p]))
        if g.threshold_kw is not None:
            fast = [(v, 1.0) for q, v in mv.req.items() if q[0] == s]
            if fast:
                room = max(0.0, g.threshold_kw - 1.0 - max(g.committed_kw, default=0.0))
                mv.add(prob, "assessment", (s,), _lin(fast) <= room)


def add_grid_limit(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Site power against the connected grid [kW].

    ``facility_peak[s,p] + recharge[s,p] <= connected[s,p]`` (connection decisions) or
    ``<= grid_kw[s,p]`` (the site's grid simply available); ``recharge`` is the UPS
    battery recharge of the site's racks (:func:`recharge_terms`), which the
    connection carries on top of the facility peak.
    """
    for (s, p), expr in mv.fac_peak.items():
        if not len(expr):
            continue
        expr = expr + _lin(recharge_terms(d, mv, s, p))
        conn = mv.connected.get((s, p))
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
    """
    for s in d.sites:
        for c in d.cdu_models(s):
            racks = [r for r in d.racks if (r, s) in d.rack_site
                     and d.rack_site[r, s].cdu_id == c and (r, s, 0) in mv.inst]
            if not racks:
                continue
            cd = d.cdu_data(s, c)
            heat0 = sum(d.rack_site[r, s].liquid_heat_kw_per_rack * d.existing_count(r, s, 0)
                        for r in racks)
            prev = -(-heat0 // cd.cdu_capacity_kw) + d.cdu_redundancy if heat0 > 0 else 0
            for p, per in enumerate(d.periods):
                key = (s, c, per.label)
                cdu = mv.cdu[s, c, p] = prob.add_variable(lp_name("cdu", *key), 0,
                                                        cat=pulp.LpInteger)
                has_existing = any(d.existing_count(r, s, p) > 0 for r in racks)
                on = mv.cdu_on[s, c, p] = prob.add_variable(lp_name("cdu_on", *key),
                                                          1 if has_existing else 0, 1,
                                                          cat=pulp.LpBinary)
                if p > 0:
                    mv.add(prob, "cdu_keep", key, _lin([(on, 1.0),
                                                        (mv.cdu_on[s, c, p - 1], -1.0)]) >= 0)
                buy = mv.cdu_new[s, c, p] = prob.add_variable(lp_name("cdu_new", *key), 0)
                heat = [(mv.inst[r, s, p], -d.rack_site[r, s].liquid_heat_kw_per_rack)
                        for r in racks]
                cap = cd.cdu_capacity_kw
                mv.add(prob, "cdu_heat", key,
                       _lin([(cdu, cap), (on, -d.cdu_redundancy * cap), *heat]) >= 0)
                mv.add(prob, "cdu_on", key, _lin(
                    [*[(mv.inst[r, s, p], 1.0) for r in racks],
                     (on, -float(d.sites[s].rack_positions))]) <= 0)
                rhs = -prev if p == 0 else 0.0
                terms = [(buy, 1.0), (cdu, -1.0)]
                if p > 0:
                    terms.append((mv.cdu[s, c, p - 1], 1.0))
                mv.add(prob, "cdu_buy", key, _lin(terms) >= rhs)


def add_space_limit(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Space: rack, CDU and network positions within the site's.

    ``sum_r (pos[r] + npos[r,s,p]) * inst[r,s,p] + sum_c pos[c] * cdu[s,c,p]
    + net_racks[s,p] <= positions_s``: ``npos`` is the linear network's network-rack
    positions per rack in service (``RackSiteData.network_positions``; 0 for a rack
    type with the integer fabric, whose network racks are the integer ``net_racks``).
    """
    cdus = defaultdict(list)
    for (s, c, p), var in mv.cdu.items():
        cdus[s, p].append((var, d.cdu_data(s, c).cdu_positions))
    for s, sd in d.sites.items():
        for p, per in enumerate(d.periods):
            terms = []
            for r in d.racks:
                if (r, s, p) not in mv.inst:
                    continue
                tiered = mv.network_terms(r, s, p, 2)
                net = 0.0 if tiered is not None or not d.linear_network(r) else \
                    d.rack_site[r, s].network_positions(p)
                terms.append((mv.inst[r, s, p], float(d.racks[r].rack_positions) + net))
                terms += tiered or []
            terms += cdus[s, p]
            if (s, p) in mv.net_racks:
                terms.append((mv.net_racks[s, p], 1.0))
            if terms:
                mv.add(prob, "space", (s, per.label), _lin(terms) <= sd.rack_positions)


def add_building(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Facility capacity [kW]: ``built0[s] + sum_{q<=p} build[s,q] >= facility_peak[s,p]``.

    ``build[s,q] >= 0`` is capacity added in period q, fixed at 0 in periods that start
    before the site's lead time has passed (counted from the start of the plan);
    ``built0`` is the capacity already built.
    """
    for s, sd in d.sites.items():
        if not any(len(mv.fac_peak[s, p]) for p in range(len(d.periods))):
            continue
        terms = []
        for p, per in enumerate(d.periods):
            cap = 0.0 if p < sd.first_build_period else None
            var = mv.built[s, p] = prob.add_variable(lp_name("build", s, per.label), 0, cap)
            terms.append((var, 1.0))
            mv.add(prob, "building", (s, per.label),
                   _lin(terms) - mv.fac_peak[s, p] >= -sd.built_kw_initial)


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
    """
    cost = defaultdict(list)
    n = len(d.periods)
    for (r, s, p), var in mv.new.items():
        rk, rs = d.racks[r], d.rack_site[r, s]
        price = d.rack_capex(r, p)
        cost["rack_capex", p].append((var, price))
        tiered = (r, s, p) in mv.net_tier  # its network is bought as it grows (below)
        net = 0.0 if tiered or not d.linear_network(r) else rs.network_capex(p)
        cost["network_capex", p].append((var, net))
        cooling = rs.cooling_capex_usd_per_kw * rk.it_power_max_kw
        cost["cooling_capex", p].append((var, cooling))
        left = d.remaining_frac(rk.lifetime_years, p)
        cost["terminal_value", n - 1].append(
            (var, -left * (price + net + cooling)))
    for (r, _s, p), tiers in mv.net_tier.items():
        buy = tiers[0][3]
        cost["network_capex", p].append((buy, 1.0))
        cost["terminal_value", n - 1].append(
            (buy, -d.remaining_frac(d.racks[r].lifetime_years, p)))
    for (s, i, p), var in mv.net_buy.items():
        price = mv.fabric_item[s, i, p][1]
        cost["network_capex", p].append((var, price))
        cost["terminal_value", n - 1].append(
            (var, -price * d.remaining_frac(item_lifetime(d, i), p)))
    for (r, s, p), var in mv.new.items():
        extra = d.rack_site[r, s].redundancy_capex_usd_per_kw * d.racks[r].it_power_max_kw
        if extra:
            cost["redundancy_capex", p].append((var, extra))
            cost["terminal_value", n - 1].append(
                (var, -extra * d.remaining_frac(d.building_lifetime_years, p)))
    for (s, c, p), var in mv.cdu_new.items():
        price = d.cdu_data(s, c).cdu_capex_usd
        cost["cdu_capex", p].append((var, price))
        cost["terminal_value", n - 1].append((var, -price * d.remaining_frac(
            d.cdu_lifetime_years, p)))
    for (s, p), var in mv.built.items():
        sd = d.sites[s]
        for part, price in building_prices(d, s):
            cost[part, p].append((var, price))
        cost["terminal_value", n - 1].append(
            (var, -sd.build_capex_usd_per_kw * d.remaining_frac(d.building_lifetime_years, p)))
    for lane in (mv.req, mv.req_assessed):
        for (s, q), var in lane.items():
            price = d.sites[s].connection.cost_usd_per_kw
            cost["grid_connection", q].append((var, price))
            cost["terminal_value", n - 1].append(
                (var, -price * d.remaining_frac(d.building_lifetime_years, q)))
    for (r, _s, p), var in mv.inst.items():
        rk = d.racks[r]
        cost["maintenance", p].append(
            (var, rk.maintenance_frac_per_year * rk.capex_usd * d.periods[p].years))
    for (s, p), expr in mv.fac_avg.items():
        f = d.hours(p) * d.energy_price(s, p)
        cost["energy", p] += [(v, f * c) for v, c in expr.items()]
        cf = d.hours(p) * d.sites[s].carbon_kg_per_kwh * d.carbon_price(p)
        if cf:
            cost["carbon", p] += [(v, cf * c) for v, c in expr.items()]
    for (s, p), expr in mv.fac_peak.items():
        f = d.months(p) * d.demand_charge(s, p)
        cost["demand_charge", p] += [(v, f * c) for v, c in expr.items()]
    for (w, k, p), var in mv.unserved.items():
        cost["unserved_penalty", p].append(
            (var, d.unserved_usd_per_token * mv.demand_unit[w, k, p]))
    mv.costs = {key: _lin(_merged(terms)) for key, terms in cost.items()}


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
    """
    ops = d.operations
    if ops is None or not ops.any:
        return
    add = defaultdict(list)
    by_site = defaultdict(list)
    for (r, s, p), var in mv.inst.items():
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
        on = mv.staffed[s, p] = prob.add_variable(lp_name("staffed", s, label), 0, 1,
                                                  cat=pulp.LpInteger)
        cap = float(max(d.sites[s].rack_positions, 1))
        mv.add(prob, "staffed", (s, label), _lin(terms) - cap * on <= 0)
        add["staff", p].append((on, ops.staff_per_site.get(s, 0.0) * d.periods[p].years))
        if ops.staff_per_fleet > 0:
            if p not in mv.fleet_on:     # its cost once per period, not once per site
                mv.fleet_on[p] = prob.add_variable(lp_name("fleet_on", label), 0, 1,
                                                   cat=pulp.LpInteger)
                add["staff", p].append((mv.fleet_on[p], ops.staff_per_fleet
                                        * d.periods[p].years))
            mv.add(prob, "fleet_on", (s, label), _lin([(mv.fleet_on[p], 1.0), (on, -1.0)])
                   >= 0)
    for key, terms in add.items():
        mv.costs[key] = mv.costs.get(key, _lin([])) + _lin(_merged(terms))


def building_prices(d: PlanInputs, s: str) -> list[tuple[str, float]]:
    """(cost category, USD per kW built) of a site's facility capacity."""
    sd = d.sites[s]
    if sd.build_parts_usd_per_kw:
        return [(f"building_{part}", price) for part, price in sd.build_parts_usd_per_kw]
    return [("building_capex", sd.build_capex_usd_per_kw)]


def add_carbon_cap(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Emissions: ``sum_s hours x average facility kW x kgCO2/kWh <= cap[p]`` where a cap is set."""
    for p, per in enumerate(d.periods):
        cap = d.carbon_cap(p)
        if cap is None:
            continue
        terms = []
        for s, sd in d.sites.items():
            f = d.hours(p) * sd.carbon_kg_per_kwh
            terms += [(v, f * c) for v, c in mv.fac_avg.get((s, p), _lin([])).items()]
        mv.add(prob, "carbon_cap", (per.label,), _lin(terms) <= cap)


def add_budget(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Budget: ``sum_{capex categories} cost[cat, p] <= budget_usd[p]`` where a budget is set."""
    for p, limit in enumerate(d.budget_usd):
        if limit is None:
            continue
        terms = [t for cat in CAPEX_CATEGORIES for t in mv.costs.get((cat, p), _lin([])).items()]
        mv.add(prob, "budget", (d.periods[p].label,), _lin(_merged(terms)) <= limit)


def discount(d: PlanInputs, category: str, p: int) -> float:
    """Discount factor of ``category`` costs in period ``p`` [-]."""
    when = CATEGORIES[category]
    return d.df_capex(p) if when == "capex" else d.df_opex(p) if when == "opex" else d.df_end()


def set_objective(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Objective: minimise ``sum_{cat,p} discount(cat, p) * cost[cat, p]`` [USD, present value]."""
    terms = defaultdict(float)
    for (cat, p), expr in mv.costs.items():
        f = discount(d, cat, p)
        for v, c in expr.items():
            terms[v] += f * c
    obj = pulp.LpAffineExpression([(v, c) for v, c in terms.items() if c != 0])
    prob.setObjective(obj)


# ----------------------------------------------------------------------------------------
# Integer fabric (switches and links per site, period and rack type)
# ----------------------------------------------------------------------------------------


@dataclass
class FabricVars:
    """Integer variables of one fabric of one rack type at one site in one period.

    ``counts`` maps ``leaf``, ``spine``, ``core`` [switches] and the link tiers
    ``nic_leaf``, ``leaf_spine``, ``spine_core`` [links] to expressions.
    """

    fd: object
    n: object
    counts: dict = field(default_factory=dict)
    multi: object = None
    three: object = None
    single: object = None
    leaves: list = field(default_factory=list)
    ups: list = field(default_factory=list)
    need: object = None
    spines: object = None
    gaps: list = field(default_factory=list)
    cores: object = None
    core_links: object = None
    over: list = field(default_factory=list)


def add_fabrics(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Switches and links of every rack type's fabrics as exact step functions [count].

    For racks in service ``n = inst[r,s,p]`` (integral: existing plus integer
    purchases) on a fabric with ``P`` links per rack, ``m_g`` rails of ``p_g`` links,
    leaves of ``d`` down / ``u`` up ports, radix ``R``, oversubscription ``o``
    (:class:`~dcplan.planner.fabric.FabricData`), with integer variables that the
    positive cost of switches and links holds at their least values:

    - one switch while ``n <= floor(R / P)``: binary ``multi`` with
      ``n <= floor(R / P) + M multi``; ``single >= P n / R - M multi`` (1 when n > 0);
    - leaves ``l_g >= p_g n / d - M (1 - multi)`` per rail of group g
      (``ceil``), uplinks ``U_g >= p_g n / o - M (1 - multi)``;
      ``U = sum_g m_g U_g``;
    - spines: ``k >= U / R`` (the fewest), ``spines >= k`` and, for each balancing
      step ``(a_j, b_j)``, binary ``z_j`` with ``k <= a_j - 1 + M z_j`` and
      ``spines >= b_j z_j`` (``D(k) = max(k, max{b_j : a_j <= k})``);
    - one spine more at the rack counts ``m`` where striping the uplinks overfills a
      spine (:func:`~dcplan.planner.fabric.overfill_points`): binaries ``at_m`` (1 from
      ``n = m`` on: ``n <= m - 1 + M at_m``) and ``past_m`` (1 only from ``m + 1``:
      ``n >= (m + 1) past_m``) add ``at_m - past_m`` to every spine row;
    - three tiers beyond ``two_tier_max`` racks: binary ``three``; ``spines >= 2 U / R``,
      cores ``>= U / R`` and spine-core links ``>= U`` when ``three`` (a lower bound on
      the pods' rounding).

    Links: ``nic_leaf = P n``, ``leaf_spine = U``, ``spine_core`` as above. These rows
    are exact for two tiers (and for one), so the plan's switch and link counts are
    :func:`~dcplan.planner.fabric.fabric_counts` of its own fleet.
    """
    for (r, s, p), n in mv.inst.items():
        fabrics = d.fabrics.get(r)
        if not fabrics:
            continue
        cap = d.sites[s].rack_positions // d.racks[r].rack_positions
        if cap <= 0 or not _may_hold(d, mv, r, s, p):
            continue
        label = d.periods[p].label
        for fd in fabrics:
            mv.fabric[r, s, fd.fabric, p] = _fabric_rows(prob, d, mv, fd, n, cap,
                                                         (r, s, fd.fabric, label))


def _whole(x: float) -> bool:
    return abs(x - round(x)) < 1e-9


def _may_hold(d: PlanInputs, mv: ModelVars, r: str, s: str, p: int) -> bool:
    """Whether racks of ``r`` can be in service at ``s`` in ``p`` (existing or bought)."""
    return d.existing_count(r, s, p) > 0 or any(
        (r, s, q) in mv.new and d.alive(r, q, p) for q in range(p + 1))


def _fabric_rows(prob, d, mv, fd, n, cap: int, key: tuple) -> FabricVars:
    """Variables and rows of one fabric (see :func:`add_fabrics`)."""
    def ivar(name, lo=0, hi=None, cat=pulp.LpInteger):
        v = prob.add_variable(lp_name(name, *key), lo, hi, cat=cat)
        mv.fabric_int.append(v)
        return v

    fv = FabricVars(fd=fd, n=n)
    P, R = fd.ports_per_rack, fd.radix
    one = min(fd.one_switch_max, cap)
    if cap <= fd.one_switch_max:  # always one switch
        fv.single = ivar("fab_single")
        mv.add(prob, "fab_single", key, _lin([(fv.single, 1.0), (n, -P / R)]) >= 0)
        fv.counts = dict(leaf=_lin([(fv.single, 1.0)]), spine=_lin([]), core=_lin([]),
                         nic_leaf=_lin([(n, float(P))]), leaf_spine=_lin([]),
                         spine_core=_lin([]))
        return fv
    multi_terms = []
    if one > 0:
        fv.multi = ivar("fab_multi", 0, 1, pulp.LpBinary)
        mv.add(prob, "fab_multi", key, _lin([(n, 1.0), (fv.multi, -float(cap - one))]) <= one)
        fv.single = ivar("fab_single")
        mv.add(prob, "fab_single", key, _lin([(fv.single, 1.0), (n, -P / R),
                                              (fv.multi, P * cap / R)]) >= 0)
        multi_terms = [fv.multi]
    leaf_terms = [(fv.single, 1.0)] if fv.single is not None else []
    up_terms = []
    for i, (m, pg) in enumerate(fd.rail_groups):
        for kind, per, coef in (("fab_leaf", fd.down, leaf_terms),
                                ("fab_up", fd.oversubscription, up_terms)):
            big = pg * one / per  # the row is void in the one-switch regime (n <= one)
            # integral bounds (p_g / o and the void term whole numbers): a continuous
            # variable takes a whole value at the optimum; otherwise an integer (ceil)
            whole = kind == "fab_up" and _whole(pg / per) and _whole(big)
            v = prob.add_variable(lp_name(f"{kind}{i}", *key), 0) if whole else \
                ivar(f"{kind}{i}")
            row = [(v, 1.0), (n, -pg / per)] + [(x, -big) for x in multi_terms]
            mv.add(prob, f"{kind}{i}", key, _lin(row) >= -big if multi_terms else
                   _lin(row) >= 0)
            (fv.leaves if kind == "fab_leaf" else fv.ups).append(v)
            coef.append((v, float(m)))
    up = _lin(up_terms)
    u_max = sum(m * math.ceil(pg * cap / fd.oversubscription) for m, pg in fd.rail_groups)
    k_max = -(-u_max // R)
    fv.need = ivar("fab_need")
    mv.add(prob, "fab_need", key, _lin([(fv.need, float(R)), *[(v, -c) for v, c in up_terms]])
           >= 0)
    fv.spines = ivar("fab_spine")
    extra = []  # one spine more at the rack counts where striping overfills a spine
    for j, m in enumerate(x for x in fd.overfill if x <= min(cap, fd.two_tier_max)):
        at = ivar(f"fab_over{j}", 0, 1, pulp.LpBinary)  # forced to 1 from n = m on
        past = ivar(f"fab_past{j}", 0, 1, pulp.LpBinary)  # may be 1 only from n = m + 1
        mv.add(prob, f"fab_over{j}", key, _lin([(n, 1.0), (at, -float(cap - m + 1))]) <= m - 1)
        mv.add(prob, f"fab_past{j}", key, _lin([(n, 1.0), (past, -float(m + 1))]) >= 0)
        # valid: past implies at; and the next point's at implies this past (at an
        # optimum), so the extra spine is between 0 and 1 in the relaxation too
        mv.add(prob, f"fab_pastat{j}", key, _lin([(at, 1.0), (past, -1.0)]) >= 0)
        if fv.over:
            mv.add(prob, f"fab_pastnext{j}", key, _lin([(fv.over[-1][2], 1.0), (at, -1.0)]) >= 0)
        extra += [(at, -1.0), (past, 1.0)]
        fv.over.append((m, at, past))
    mv.add(prob, "fab_spine", key, _lin([(fv.spines, 1.0), (fv.need, -1.0), *extra]) >= 0)
    prev = None
    for j, (a, b) in enumerate(fd.gaps):
        if a > k_max:
            break
        z = ivar(f"fab_gap{j}", 0, 1, pulp.LpBinary)
        fv.gaps.append(z)
        mv.add(prob, f"fab_gap{j}", key,
               _lin([(fv.need, 1.0), (z, -float(k_max - a + 1))]) <= a - 1)
        mv.add(prob, f"fab_bal{j}", key, _lin([(fv.spines, 1.0), (z, -float(b)), *extra]) >= 0)
        if prev is not None:
            mv.add(prob, f"fab_gapord{j}", key, _lin([(prev, 1.0), (z, -1.0)]) >= 0)
        prev = z
    core = core_links = _lin([])
    if cap > fd.two_tier_max:
        two = fd.two_tier_max
        fv.three = ivar("fab_three", 0, 1, pulp.LpBinary)
        mv.add(prob, "fab_three", key, _lin([(n, 1.0), (fv.three, -float(cap - two))]) <= two)
        fv.cores = ivar("fab_core")
        fv.core_links = prob.add_variable(lp_name("fab_core_links", *key), 0)
        for name, v, per in (("fab_pod_spine", fv.spines, R / 2), ("fab_core", fv.cores, R),
                             ("fab_core_links", fv.core_links, 1.0)):
            big = u_max / per
            mv.add(prob, name, key, _lin([(v, 1.0), *[(x, -c / per) for x, c in up_terms],
                                          (fv.three, -big)]) >= -big)
        core, core_links = _lin([(fv.cores, 1.0)]), _lin([(fv.core_links, 1.0)])
    if fd.three_tier_max < cap:
        mv.add(prob, "fab_max", key, _lin([(n, 1.0)]) <= fd.three_tier_max)
    fv.counts = dict(leaf=_lin(leaf_terms), spine=_lin([(fv.spines, 1.0)]), core=core,
                     nic_leaf=_lin([(n, float(P))]), leaf_spine=up, spine_core=core_links)
    return fv


def fabric_items(d: PlanInputs, mv: ModelVars) -> dict:
    """Network items per site and period: (s, item, p) -> (expression, unit price [USD]).

    Items are switch models (count of switches, priced per switch) and each rack
    type's links (their value in USD, priced 1): what a period adds over the one
    before is bought (:func:`add_fabric_costs`).
    """
    out: dict = {}
    for (r, s, _f, p), fv in mv.fabric.items():
        fd = fv.fd
        sw = out.setdefault((s, fd.switch_id, p), [[], fd.switch_capex_usd])
        for t in ("leaf", "spine", "core"):
            sw[0] += list(fv.counts[t].items())
        ln = out.setdefault((s, f"links_{r}", p), [[], 1.0])
        for t in ("nic_leaf", "leaf_spine", "spine_core"):
            c = fd.link_capex_usd[t]
            ln[0] += [(v, c * x) for v, x in fv.counts[t].items()]
    return {k: (_lin(_merged(v)), price) for k, (v, price) in out.items()}


def fabric_power_terms(d: PlanInputs, mv: ModelVars, s: str, p: int) -> list:
    """(variable, kW) terms of the fabrics' power at site s in period p, losses included."""
    terms = []
    for r in d.racks:
        for fd in d.fabrics.get(r, ()):
            fv = mv.fabric.get((r, s, fd.fabric, p))
            if fv is None:
                continue
            gain = 1 + d.rack_site[r, s].loss_frac
            for t in ("leaf", "spine", "core"):
                terms += [(v, gain * fd.switch_kw * c) for v, c in fv.counts[t].items()]
            for t in ("nic_leaf", "leaf_spine", "spine_core"):
                terms += [(v, gain * fd.link_kw[t] * c) for v, c in fv.counts[t].items()]
    return _merged(terms)


def fabric_existing(d: PlanInputs, s: str) -> dict:
    """Network items of the existing fleet at the start of the plan (owned) [count, USD]."""
    from dcplan.planner.fabric import fabric_counts

    out: dict = defaultdict(float)
    for r, fabrics in d.fabrics.items():
        n = d.existing_count(r, s, 0)
        if n <= 0:
            continue
        for fd in fabrics:
            c = fabric_counts(fd, n)
            out[fd.switch_id] += c["leaf"] + c["spine"] + c["core"]
            out[f"links_{r}"] += sum(c[t] * fd.link_capex_usd[t]
                                     for t in ("nic_leaf", "leaf_spine", "spine_core"))
    return out


def item_lifetime(d: PlanInputs, item: str) -> float:
    """Life of a network item [years].

    Links: their rack type's; a switch model: the shortest of the rack types whose
    fabrics use it.
    """
    if item.startswith("links_"):
        return d.racks[item[6:]].lifetime_years
    lives = [d.racks[r].lifetime_years for r, fs in d.fabrics.items()
             if any(fd.switch_id == item for fd in fs)]
    return min(lives, default=0.0)


def add_fabric_purchases(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Network bought: ``net_buy[s,i,p] >= item[s,i,p] - item[s,i,p-1]`` (existing owned).

    Switches and links are bought when a period needs more than the one before and
    kept when fewer are needed (like CDUs); the network capex is ``price x net_buy``.
    """
    items = fabric_items(d, mv)
    mv.fabric_item = items
    owned = {s: fabric_existing(d, s) for s in d.sites}
    for (s, i, p), (expr, _price) in items.items():
        label = d.periods[p].label
        buy = mv.net_buy[s, i, p] = prob.add_variable(lp_name("net_buy", s, i, label), 0)
        before = items.get((s, i, p - 1)) if p > 0 else None
        rhs = -owned[s].get(i, 0.0) if p == 0 else 0.0
        row = [(buy, 1.0), *[(v, -c) for v, c in expr.items()]]
        if before is not None:
            row += list(before[0].items())
        mv.add(prob, "net_buy", (s, i, label), _lin(row) >= rhs)


def add_network_space(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Network racks: integer ``net_racks[s,p] >= switch rack units / units per rack``."""
    per = float(d.network_rack_units or 1)
    units = defaultdict(list)
    for (_r, s, _f, p), fv in mv.fabric.items():
        for t in ("leaf", "spine", "core"):
            units[s, p] += [(v, fv.fd.switch_rack_units * c) for v, c in fv.counts[t].items()]
    for (s, p), terms in units.items():
        key = (s, d.periods[p].label)
        v = mv.net_racks[s, p] = prob.add_variable(lp_name("net_racks", *key), 0,
                                                   cat=pulp.LpInteger)
        mv.fabric_int.append(v)
        mv.add(prob, "net_racks", key,
               _lin([(v, per), *[(x, -c) for x, c in _merged(terms)]]) >= 0)


def fabric_start_values(fv: FabricVars, n: int) -> dict:
    """Values of a fabric's integer variables for ``n`` racks (a MIP start) [count]."""
    fd = fv.fd
    out = {}
    multi = n > fd.one_switch_max
    if fv.multi is not None:
        out[fv.multi] = float(multi)
    if fv.single is not None:
        out[fv.single] = float(n > 0 and not multi)
    for v, (_m, pg) in zip(fv.leaves, fd.rail_groups, strict=True):
        out[v] = float(math.ceil(pg * n / fd.down - 1e-9)) if multi else 0.0
    ups = []
    for v, (_m, pg) in zip(fv.ups, fd.rail_groups, strict=True):
        out[v] = float(math.ceil(pg * n / fd.oversubscription - 1e-9)) if multi else 0.0
        ups.append(out[v] * _m)
    u = sum(ups)
    if fv.need is None:
        return out
    k = math.ceil(u / fd.radix - 1e-9)
    out[fv.need] = float(k)
    spines = k
    for z, (a, b) in zip(fv.gaps, fd.gaps, strict=False):
        on = k >= a
        out[z] = float(on)
        if on:
            spines = max(spines, b)
    for m, at, past in fv.over:
        out[at], out[past] = float(n >= m), float(n >= m + 1)
        if n == m:
            spines += 1
    three = fv.three is not None and n > fd.two_tier_max
    if fv.three is not None:
        out[fv.three] = float(three)
        out[fv.cores] = float(math.ceil(u / fd.radix - 1e-9)) if three else 0.0
        out[fv.core_links] = float(u) if three else 0.0
        if three:
            spines = max(spines, math.ceil(2 * u / fd.radix - 1e-9))
    out[fv.spines] = float(spines)
    return out


# ----------------------------------------------------------------------------------------
# Power redundancy and water
# ----------------------------------------------------------------------------------------


def recharge_terms(d: PlanInputs, mv: ModelVars, s: str, p: int) -> list:
    """(variable, kW) terms of the UPS battery recharge at site s in period p.

    ``recharge_kw_per_it_kw[r,s] x it_power_max_kw[r] x inst[r,s,p]``: the UPS
    plant's recharge share of its full load (the site's topology and UPS model at
    the planning scale).
    """
    out = []
    for r in d.racks:
        var = mv.inst.get((r, s, p))
        k = d.rack_site[r, s].recharge_kw_per_it_kw if var is not None else 0.0
        if k:
            out.append((var, k * d.racks[r].it_power_max_kw))
    return out


def add_water_limit(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Site water: ``sum_r WUE[r,s] x IT_max[r] x inst[r,s,p] x hours / 1000 <= limit x years``.

    WUE [L per IT kWh] is that of the cooling plant the facility model chose for the
    rack type at the site (evaporative towers use water; dry coolers and chillers
    none), at full load all year: a conservative reading of the site's annual
    allowance [m3/year].
    """
    for s, sd in d.sites.items():
        limit = sd.water_limit_m3_per_year
        if limit is None:
            continue
        for p, per in enumerate(d.periods):
            terms = []
            for r in d.racks:
                var = mv.inst.get((r, s, p))
                w = d.rack_site[r, s].water_l_per_it_kwh if var is not None else 0.0
                if w:
                    terms.append((var, w * d.racks[r].it_power_max_kw * d.hours(p) / 1000.0))
            if terms:
                mv.add(prob, "water", (s, per.label), _lin(terms) <= limit * per.years)


def three_tier_fabrics(mv: ModelVars) -> list[tuple]:
    """Keys ``(r, s, fabric, p)`` of the solved fabrics that have three tiers."""
    out = []
    for key, fv in mv.fabric.items():
        if fv.three is not None and int(round(fv.n.value() or 0.0)) > fv.fd.two_tier_max:
            out.append(key)
    return out


def fix_at_exact_fabric(d: PlanInputs, mv: ModelVars) -> None:
    """Fix every integer of the solved plan, the fabrics at their exact counts.

    Racks, CDUs and the on/off binaries are fixed at their values; each fabric's
    variables at :func:`fabric_start_values` of its racks in service, with spines at
    :func:`~dcplan.planner.fabric.fabric_counts` (a three-tier fabric's pods round
    their spines up, which the MILP's rows, a lower bound, do not see); network racks
    at ``ceil(units / units per rack)`` of those counts. The fixed variables become
    continuous, so an LP solve then settles what is left (built capacity, grid
    requests, allocations, the facility peak) for the plan's exact fabric.
    """
    from dcplan.planner.fabric import fabric_counts

    def fix(var, value: float) -> None:
        var.cat = pulp.LpContinuous
        var.lowBound = var.upBound = var.varValue = float(value)

    for group in (mv.new, mv.cdu, mv.cdu_on, mv.spare_on, mv.staffed, mv.fleet_on):
        for var in group.values():
            fix(var, round(var.value() or 0.0))
    for fv in mv.fabric.values():
        n = int(round(fv.n.value() or 0.0))
        vals = fabric_start_values(fv, n)
        if fv.spines is not None:
            exact = float(fabric_counts(fv.fd, n)["spine"])
            vals[fv.spines] = max(vals.get(fv.spines, 0.0), exact)
        for var, x in vals.items():
            fix(var, x)
    for key, racks in network_racks_needed(d, mv).items():
        fix(mv.net_racks[key], racks)


def network_racks_needed(d: PlanInputs, mv: ModelVars) -> dict:
    """Network racks each site and period needs for its fabrics' switches [positions].

    ``ceil(switch rack units / units per network rack)``, from the switch-count
    variables' current values; keys ``(s, p)`` of ``mv.net_racks``.
    """
    units: dict = defaultdict(float)
    for (_r, s, _f, p), fv in mv.fabric.items():
        for t in ("leaf", "spine", "core"):
            units[s, p] += fv.fd.switch_rack_units * (pulp.value(fv.counts[t]) or 0.0)
    return {key: float(math.ceil(units[key] / (d.network_rack_units or 1) - 1e-6))
            for key in mv.net_racks}


def polish_fabric(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> float | None:
    """Set the solved fabric's counts to their step functions; the objective after [USD].

    Within a MIP gap the solver may leave a switch or link count above the least value
    its rows allow (it only costs money). With the fleet fixed, the least values are
    the step functions of the racks in service (:func:`fabric_start_values`), network
    racks ``ceil(units / units per rack)`` and purchases the increases: the same plan,
    feasible and no dearer (less network power and positions). Returns the objective of
    the polished values (None without fabrics).
    """
    if not mv.fabric:
        return None
    for fv in mv.fabric.values():
        n = int(round(fv.n.value() or 0.0))
        for var, x in fabric_start_values(fv, n).items():
            var.varValue = x
    for key, racks in network_racks_needed(d, mv).items():
        mv.net_racks[key].varValue = racks
    peak: dict = defaultdict(float)  # the facility peak over the hours, lowered with them
    for (s, p, _h), e in mv.fac_hour.items():
        if (s, p) in mv.fpk:
            peak[s, p] = max(peak[s, p], pulp.value(e) or 0.0)
    for key, var in mv.fpk.items():
        var.varValue = peak[key]
    owned = {s: fabric_existing(d, s) for s in d.sites}
    for (s, i, p), var in mv.net_buy.items():
        now = pulp.value(mv.fabric_item[s, i, p][0]) or 0.0
        before = mv.fabric_item.get((s, i, p - 1)) if p > 0 else None
        prev = (pulp.value(before[0]) or 0.0) if before is not None else \
            (owned[s].get(i, 0.0) if p == 0 else 0.0)
        var.varValue = max(0.0, now - prev)
    return pulp.value(prob.objective)
