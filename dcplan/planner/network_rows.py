"""The network's rows of the fleet-planning MILP, in the order the model builder adds them.

Two network models share this module (``network_model`` of the scenario): the linear
network with tiers (:func:`add_network_tiers`: which interval of its tiers each
fabric's racks in service are in), and the integer fabric (:func:`add_fabrics`:
switches and links as exact step functions of the racks in service,
:func:`add_fabric_purchases`, :func:`fabric_power_terms` for the site power and
:func:`add_network_space`). After a solve, :func:`polish_fabric` and
:func:`fix_at_exact_fabric` set the integer fabric at its exact counts;
:func:`collapsed_over` and :func:`three_tier_fabrics` tell the driver
(:mod:`dcplan.planner.run`) when to solve again. The fabric data the rows are built
from are :class:`~dcplan.planner.fabric.FabricData`.

The model builder is :func:`dcplan.planner.model.build_model`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import pulp

from dcplan.planner.fabric import fabric_counts
from dcplan.planner.inputs import PlanInputs
from dcplan.planner.model_vars import ModelVars, _lin, _merged
from dcplan.planner.names import lp_name


def network_owned(d: PlanInputs, r: str, s: str) -> float:
    """Installed value of the existing racks' tiered linear network [USD] (already paid).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    r : str
        Rack type id.
    s : str
        Site id.

    Returns
    -------
    float
        Existing racks in the first period times the network capex per rack of their tier
        [USD]; 0 without existing racks.
    """
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

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    for r, s in sorted({(r, s) for r, s, _p in mv.racks_in_service}):
        rs = d.rack_site[r, s]
        if not rs.network_tiers or not d.linear_network(r):
            continue
        intervals = rs.network_tiers
        if (r, s) in d.network_collapsed:  # the lower tier's figures at any count
            intervals = ((1, intervals[-1][1], *intervals[0][2:]),)
        before = None
        for p in range(len(d.periods)):
            inst = mv.racks_in_service.get((r, s, p))
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
            mv.network_tier_vars[r, s, p] = [(t, on, n, buy) for t, on, n, _b in tiers]


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


def add_fabrics(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars,
                envelope: str | None = None) -> None:
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

    With ``envelope`` the rows are a relaxation of these instead
    (:func:`add_fabric_envelope`), for a valid lower bound on the exact model:
    ``"regimes"`` one piece per regime, ``"pieces"`` the regimes cut into pieces
    (:func:`regime_hulls`).

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    envelope : {None, "regimes", "pieces"}
        Write the envelopes of :func:`add_fabric_envelope` instead of the exact rows.
    """
    hulls: dict = {}
    for (r, s, p), n in mv.racks_in_service.items():
        fabrics = d.fabrics.get(r)
        if not fabrics:
            continue
        cap = d.sites[s].rack_positions // d.racks[r].rack_positions
        if cap <= 0 or not _may_hold(d, mv, r, s, p):
            continue
        label = d.periods[p].label
        for fd in fabrics:
            key = (r, s, fd.fabric, label)
            if envelope:
                if (r, s, fd.fabric) not in hulls:
                    hulls[r, s, fd.fabric] = regime_hulls(d, fd, cap,
                                                          pieces=envelope == "pieces")
                mv.fabric_vars[r, s, fd.fabric, p] = add_fabric_envelope(
                    prob, mv, fd, n, hulls[r, s, fd.fabric], key)
            else:
                mv.fabric_vars[r, s, fd.fabric, p] = _fabric_rows(prob, d, mv, fd, n, cap, key)


def _whole(x: float) -> bool:
    return abs(x - round(x)) < 1e-9


def _may_hold(d: PlanInputs, mv: ModelVars, r: str, s: str, p: int) -> bool:
    """Whether racks of ``r`` can be in service at ``s`` in ``p`` (existing or bought)."""
    return d.existing_count(r, s, p) > 0 or any(
        (r, s, q) in mv.racks_bought and d.alive(r, q, p) for q in range(p + 1))


def _fabric_rows(prob, d, mv, fd, n, cap: int, key: tuple) -> FabricVars:
    """Variables and rows of one fabric (see :func:`add_fabrics`)."""
    def ivar(name, lo=0, hi=None, cat=pulp.LpInteger):
        v = prob.add_variable(lp_name(name, *key), lo, hi, cat=cat)
        mv.fabric_integers.append(v)
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


#: The count expressions of a fabric: switches per tier, then links per tier.
COUNT_KINDS = ("leaf", "spine", "core", "nic_leaf", "leaf_spine", "spine_core")


def least_counts(d: PlanInputs, fd, cap: int) -> list[dict]:
    """The least switch and link counts the exact rows allow at each rack count [count].

    The rows of :func:`add_fabrics` for one fabric are written into a scratch model and
    evaluated at :func:`fabric_start_values` for ``n = 0 .. N`` (``N`` the largest count
    the rows allow: ``cap``, or ``three_tier_max`` when smaller). Those values are each
    count's least over the rows' binaries (``tests/test_two_stage.py`` checks it by
    minimising each count over the rows).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    fd : FabricData
        The fabric.
    cap : int
        Racks of the type the site holds [racks].

    Returns
    -------
    list of dict
        Item ``n``: :data:`COUNT_KINDS` -> count at ``n`` racks [switches] or [links].
    """
    scratch = pulp.LpProblem("least_counts", pulp.LpMinimize)
    n_var = scratch.add_variable("n", 0)
    fv = _fabric_rows(scratch, d, ModelVars(), fd, n_var, cap, ("x",))
    top = min(cap, fd.three_tier_max) if fd.three_tier_max < cap else cap
    out = []
    for n in range(top + 1):
        vals = fabric_start_values(fv, n)
        vals[n_var] = float(n)
        out.append({t: sum(c * vals.get(v, 0.0) for v, c in fv.counts[t].items())
                    for t in COUNT_KINDS})
    return out


def _lower_hull(xs: list[int], ys: list[float]) -> list[tuple[float, float]]:
    """Segments ``(slope, intercept)`` of the lower convex hull of points (x, y)."""
    pts: list[tuple[int, float]] = []
    for x, y in zip(xs, ys, strict=True):
        while len(pts) >= 2:
            (x1, y1), (x2, y2) = pts[-2], pts[-1]
            if (y2 - y1) * (x - x1) >= (y - y1) * (x2 - x1):  # pts[-1] on or above
                pts.pop()
            else:
                break
        pts.append((x, y))
    return [((y2 - y1) / (x2 - x1), y1 - (y2 - y1) / (x2 - x1) * x1)
            for (x1, y1), (x2, y2) in zip(pts, pts[1:], strict=False)]


@dataclass
class RegimeHull:
    """One regime of a fabric (one switch, two tiers or three) and its count envelopes.

    ``segments[t]``: ``(slope, intercept)`` pairs whose maximum is the lower convex
    envelope of count ``t`` over the regime's rack counts ``lo .. hi`` [count per rack],
    [count]; a regime of one count has one flat segment at its value.
    """

    lo: int
    hi: int
    segments: dict


#: Rack counts up to which a regime is cut into pieces whose envelope stays within
#: :data:`PIECE_TOL_SWITCHES` of the counts [racks] (beyond, one piece per regime: the
#: rounding of large fabrics is small against their cost).
PIECE_MAX_RACKS = 64
#: Largest gap between a piece's envelope and its counts, in switches' worth of capex
#: (switch price per switch, link price per link) [switches].
PIECE_TOL_SWITCHES = 4.0


def _hull_segments(counts: list[dict], lo: int, hi: int) -> dict:
    """Envelope segments of every count over ``lo .. hi`` (a flat one for one count)."""
    xs = list(range(lo, hi + 1))
    return {t: _lower_hull(xs, [counts[x][t] for x in xs]) if hi > lo
            else [(0.0, counts[lo][t])] for t in COUNT_KINDS}


def _hull_error(fd, counts: list[dict], lo: int, hi: int, segs: dict) -> float:
    """Largest capex [USD] by which the envelope of ``lo .. hi`` is below the counts."""
    price = {t: fd.switch_capex_usd for t in ("leaf", "spine", "core")}
    price.update({t: fd.link_capex_usd.get(t, 0.0) for t in ("nic_leaf", "leaf_spine",
                                                               "spine_core")})
    worst = 0.0
    for n in range(lo, hi + 1):
        err = sum(price[t] * (counts[n][t] - max(a * n + b for a, b in segs[t]))
                  for t in COUNT_KINDS)
        worst = max(worst, err)
    return worst


def regime_hulls(d: PlanInputs, fd, cap: int, pieces: bool = True) -> list[RegimeHull]:
    """Pieces of a fabric's regimes and the lower convex envelope of each count [count].

    The regimes are the rack counts with one switch (``1 .. one_switch_max``), two
    tiers (to ``two_tier_max``) and three (to the largest count the rows allow), each
    cut to the counts the site holds; counts are :func:`least_counts`. Up to
    :data:`PIECE_MAX_RACKS` racks a regime is cut further, greedily from its first
    count, into the longest pieces whose envelope is within
    :data:`PIECE_TOL_SWITCHES` switches' worth of capex of the counts (small fabrics
    round their switches the most per rack; Rubin Ultra NVL576's spines jump from 60
    to 72 between 14 and 15 racks).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    fd : FabricData
        The fabric.
    cap : int
        Racks of the type the site holds [racks].
    pieces : bool
        Cut the regimes into pieces (else one piece per regime).

    Returns
    -------
    list of RegimeHull
        The non-empty pieces in order of rack count.
    """
    counts = least_counts(d, fd, cap)
    top = len(counts) - 1
    one = min(fd.one_switch_max, top) if cap > fd.one_switch_max else top
    bounds = [(1, one), (one + 1, min(fd.two_tier_max, top)),
              (max(one, fd.two_tier_max) + 1, top)]
    tol = PIECE_TOL_SWITCHES * fd.switch_capex_usd
    out = []
    for lo, hi in bounds:
        if not pieces:
            if lo <= hi:
                out.append(RegimeHull(lo, hi, _hull_segments(counts, lo, hi)))
            continue
        start = lo
        while start <= hi:
            if start > PIECE_MAX_RACKS:
                out.append(RegimeHull(start, hi, _hull_segments(counts, start, hi)))
                break
            end = start
            segs = _hull_segments(counts, start, end)
            while end < min(hi, PIECE_MAX_RACKS):
                nxt = _hull_segments(counts, start, end + 1)
                if _hull_error(fd, counts, start, end + 1, nxt) > tol:
                    break
                end, segs = end + 1, nxt
            if end == PIECE_MAX_RACKS and end < hi:  # the rest of the regime: one piece
                segs_all = _hull_segments(counts, start, hi)
                if _hull_error(fd, counts, start, min(hi, 2 * PIECE_MAX_RACKS),
                               segs_all) <= tol:
                    end, segs = hi, segs_all
            out.append(RegimeHull(start, end, segs))
            start = end + 1
    return out


def add_fabric_envelope(prob: pulp.LpProblem, mv: ModelVars, fd, n,
                        hulls: list[RegimeHull], key: tuple) -> FabricVars:
    """A relaxation of one fabric's rows: each count above its regime's convex envelope.

    For regimes ``j`` (:func:`regime_hulls`) with counts ``lo_j .. hi_j``: binaries
    ``on_j`` (at most one), racks ``n_j`` with ``lo_j on_j <= n_j <= hi_j on_j`` and
    ``n = sum_j n_j``; each count ``c_t = sum_j c_tj`` with ``c_tj >= a n_j + b on_j``
    for every segment ``(a, b)`` of the envelope of ``t`` in regime ``j`` (the
    perspective of the envelope: the convex hull of the regime's points). Every plan of
    the exact rows satisfies these rows with the same counts (the regime of its ``n``
    on, its counts at or above their least values, which are on or above the
    envelope), and the costs, power and positions are the same expressions of the
    counts, so the model's optimum, and any bound a solver proves on it, is a lower
    bound on the exact model's optimum.

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    mv : ModelVars
        The variables built so far; the regime binaries join ``fabric_integers``.
    fd : FabricData
        The fabric.
    n : pulp.LpVariable
        Racks in service on the fabric [racks].
    hulls : list of RegimeHull
        The fabric's regimes.
    key : tuple
        (rack, site, fabric, period label): the rows' and variables' name.

    Returns
    -------
    FabricVars
        With ``counts`` (continuous count variables) only.
    """
    def row(family: str, constraint) -> None:
        # the relaxation's rows are not families of the planner's MILP (families.py):
        # named like them, but not recorded in ``mv.constraints``
        name = lp_name(family, *key)
        constraint.name = name
        prob.addConstraint(constraint, name)

    fv = FabricVars(fd=fd, n=n)
    split, ons = [(n, 1.0)], []
    parts: dict = {t: [] for t in COUNT_KINDS}
    for j, h in enumerate(hulls):
        on = prob.add_variable(lp_name(f"fenv_on{j}", *key), 0, 1, cat=pulp.LpBinary)
        mv.fabric_integers.append(on)
        nj = prob.add_variable(lp_name(f"fenv_n{j}", *key), 0)
        row(f"fenv_low{j}", _lin([(nj, 1.0), (on, -float(h.lo))]) >= 0)
        row(f"fenv_high{j}", _lin([(nj, 1.0), (on, -float(h.hi))]) <= 0)
        ons.append((on, 1.0))
        split.append((nj, -1.0))
        for t in COUNT_KINDS:
            segs = h.segments[t]
            if all(abs(a) < 1e-12 and abs(b) < 1e-12 for a, b in segs):
                continue
            c = prob.add_variable(lp_name(f"fenv_{t}{j}", *key), 0)
            for k, (a, b) in enumerate(segs):
                row(f"fenv_{t}{j}_{k}", _lin([(c, 1.0), (nj, -a), (on, -b)]) >= 0)
            parts[t].append((c, 1.0))
    row("fenv_one", _lin(ons) <= 1)
    row("fenv_split", _lin(split) == 0)
    fv.counts = {t: _lin(parts[t]) for t in COUNT_KINDS}
    return fv


def fabric_items(d: PlanInputs, mv: ModelVars) -> dict:
    """Network items per site and period: (s, item, p) -> (expression, unit price [USD]).

    Items are switch models (count of switches, priced per switch) and each rack
    type's links (their value in USD, priced 1): what a period's items exceed
    everything owned before is bought (:func:`add_fabric_purchases`).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables built so far (``fabric_vars`` is read).

    Returns
    -------
    dict
        ``(s, item, p)`` -> ``(expression, unit price)``: switches [count] at the switch
        price [USD/switch], or the links' value [USD] at price 1 [USD/USD].
    """
    out: dict = {}
    for (r, s, _f, p), fv in mv.fabric_vars.items():
        fd = fv.fd
        sw = out.setdefault((s, fd.switch_id, p), [[], fd.switch_capex_usd])
        for t in ("leaf", "spine", "core"):
            sw[0] += list(fv.counts[t].items())
        ln = out.setdefault((s, f"links_{r}", p), [[], 1.0])
        for t in ("nic_leaf", "leaf_spine", "spine_core"):
            c = fd.link_capex_usd[t]
            ln[0] += [(v, c * x) for v, x in fv.counts[t].items()]
    return {k: (_lin(_merged(v)), price) for k, (v, price) in out.items()}


def fabric_existing(d: PlanInputs, s: str) -> dict:
    """Network items of the existing fleet at the start of the plan (owned) [count, USD].

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    s : str
        Site id.

    Returns
    -------
    dict
        Item -> owned amount: switch model id -> switches [count]; ``links_<rack>`` ->
        value of the links [USD].
    """
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

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    item : str
        Switch model id or ``links_<rack id>``.

    Returns
    -------
    float
        [years] (0 for a switch no fabric uses).
    """
    if item.startswith("links_"):
        return d.racks[item[6:]].lifetime_years
    lives = [d.racks[r].lifetime_years for r, fs in d.fabrics.items()
             if any(fd.switch_id == item for fd in fs)]
    return min(lives, default=0.0)


def add_fabric_purchases(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Network bought: ``owned + sum_{q<=p} net_buy[s,i,q] >= item[s,i,p]``.

    Switches and links bought are owned from then on (like CDUs, never retired): a
    period needs to buy only what its items in service exceed everything owned before,
    so items no longer needed after a dip in the racks are kept (unpowered: the power
    rows count the items in service) and serve again when the racks return; the network
    capex is ``price x net_buy``. ``owned`` is the existing fleet's network.

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    items = fabric_items(d, mv)
    mv.network_items = items
    owned = {s: fabric_existing(d, s) for s in d.sites}
    bought: dict = defaultdict(list)  # (s, i) -> net_buy of the periods so far
    for (s, i, p), (expr, _price) in sorted(items.items(), key=lambda kv: kv[0][2]):
        label = d.periods[p].label
        buy = mv.network_bought[s, i, p] = prob.add_variable(lp_name("net_buy", s, i, label), 0)
        bought[s, i].append(buy)
        row = [(b, 1.0) for b in bought[s, i]] + [(v, -c) for v, c in expr.items()]
        mv.add(prob, "net_buy", (s, i, label), _lin(row) >= -owned[s].get(i, 0.0))


def network_stock(owned: float, in_service: list[float]) -> list[float]:
    """Items to buy in each period when what is bought is kept [count] or [USD].

    Parameters
    ----------
    owned : float
        Items owned before the first period (the existing fleet's) [count] or [USD].
    in_service : list of float
        Items in service per period [count] or [USD].

    Returns
    -------
    list of float
        Items bought per period: what the period's items in service exceed everything
        owned before (the least ``net_buy`` of :func:`add_fabric_purchases`) [count] or
        [USD].
    """
    out, stock = [], owned
    for x in in_service:
        out.append(max(0.0, x - stock))
        stock = max(stock, x)
    return out


def fabric_power_terms(d: PlanInputs, mv: ModelVars, s: str, p: int) -> list:
    """(variable, kW) terms of the fabrics' power at site s in period p, losses included.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables built so far (``fabric_vars`` is read).
    s : str
        Site id.
    p : int
        Period index (0-based) [-].

    Returns
    -------
    list of (pulp.LpVariable, float)
        Switch and link counts and their power per unit with the site's facility
        losses (``1 + loss_frac``; no cooling factor) [kW/switch], [kW/link].
    """
    terms = []
    for r in d.racks:
        for fd in d.fabrics.get(r, ()):
            fv = mv.fabric_vars.get((r, s, fd.fabric, p))
            if fv is None:
                continue
            gain = 1 + d.rack_site[r, s].loss_frac
            for t in ("leaf", "spine", "core"):
                terms += [(v, gain * fd.switch_kw * c) for v, c in fv.counts[t].items()]
            for t in ("nic_leaf", "leaf_spine", "spine_core"):
                terms += [(v, gain * fd.link_kw[t] * c) for v, c in fv.counts[t].items()]
    return _merged(terms)


def add_network_space(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> None:
    """Network racks: integer ``net_racks[s,p] >= switch rack units / units per rack``.

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    """
    per = float(d.network_rack_units or 1)
    units = defaultdict(list)
    for (_r, s, _f, p), fv in mv.fabric_vars.items():
        for t in ("leaf", "spine", "core"):
            units[s, p] += [(v, fv.fd.switch_rack_units * c) for v, c in fv.counts[t].items()]
    for (s, p), terms in units.items():
        key = (s, d.periods[p].label)
        v = mv.network_racks[s, p] = prob.add_variable(lp_name("net_racks", *key), 0,
                                                   cat=pulp.LpInteger)
        mv.fabric_integers.append(v)
        mv.add(prob, "net_racks", key,
               _lin([(v, per), *[(x, -c) for x, c in _merged(terms)]]) >= 0)


def fabric_start_values(fv: FabricVars, n: int) -> dict:
    """Values of a fabric's integer variables for ``n`` racks (a MIP start) [count].

    Parameters
    ----------
    fv : FabricVars
        The fabric's variables.
    n : int
        Racks in service on the fabric [racks].

    Returns
    -------
    dict
        Variable -> value (counts [count], binaries 0 or 1 [-]).
    """
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


def collapsed_over(d: PlanInputs, mv: ModelVars) -> set[tuple[str, str]]:
    """Pairs of ``d.network_collapsed`` whose solved racks in service pass their boundary.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The model's variables, solved (their values are read).

    Returns
    -------
    set of (str, str)
        (rack, site) pairs to solve again with their tiers.
    """
    over = set()
    for r, s in d.network_collapsed:
        top = d.rack_site[r, s].network_tiers[0][1]
        if any((mv.racks_in_service[r, s, p].value() or 0.0) > top + 1e-6
               for p in range(len(d.periods)) if (r, s, p) in mv.racks_in_service):
            over.add((r, s))
    return over


def three_tier_fabrics(mv: ModelVars) -> list[tuple]:
    """Keys ``(r, s, fabric, p)`` of the solved fabrics that have three tiers.

    Parameters
    ----------
    mv : ModelVars
        The model's variables, solved (their values are read).

    Returns
    -------
    list of tuple
        ``(r, s, fabric, p)`` keys of ``mv.fabric_vars``.
    """
    out = []
    for key, fv in mv.fabric_vars.items():
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

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The model's variables, solved; their integers are fixed in place.
    """
    def fix(var, value: float) -> None:
        var.cat = pulp.LpContinuous
        var.lowBound = var.upBound = var.varValue = float(value)

    for group in (mv.racks_bought, mv.cdus_in_service, mv.cdu_model_used, mv.cdu_site_model,
                  mv.cdu_site_used, mv.spares_kept, mv.site_staffed, mv.fleet_staffed):
        for var in group.values():
            fix(var, round(var.value() or 0.0))
    for fv in mv.fabric_vars.values():
        n = int(round(fv.n.value() or 0.0))
        vals = fabric_start_values(fv, n)
        if fv.spines is not None:
            exact = float(fabric_counts(fv.fd, n)["spine"])
            vals[fv.spines] = max(vals.get(fv.spines, 0.0), exact)
        for var, x in vals.items():
            fix(var, x)
    for key, racks in network_racks_needed(d, mv).items():
        fix(mv.network_racks[key], racks)


def network_racks_needed(d: PlanInputs, mv: ModelVars) -> dict:
    """Network racks each site and period needs for its fabrics' switches [positions].

    ``ceil(switch rack units / units per network rack)``, from the switch-count
    variables' current values; keys ``(s, p)`` of ``mv.network_racks``.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The model's variables, solved (their values are read).

    Returns
    -------
    dict
        ``(s, p)`` -> network racks [positions] (whole numbers as floats).
    """
    units: dict = defaultdict(float)
    for (_r, s, _f, p), fv in mv.fabric_vars.items():
        for t in ("leaf", "spine", "core"):
            units[s, p] += fv.fd.switch_rack_units * (pulp.value(fv.counts[t]) or 0.0)
    return {key: float(math.ceil(units[key] / (d.network_rack_units or 1) - 1e-6))
            for key in mv.network_racks}


def polish_fabric(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> float | None:
    """Set the solved fabric's counts to their step functions; the objective after [USD].

    Within a MIP gap the solver may leave a switch or link count above the least value
    its rows allow (it only costs money). With the fleet fixed, the least values are
    the step functions of the racks in service (:func:`fabric_start_values`), network
    racks ``ceil(units / units per rack)`` and purchases the increases: the same plan,
    feasible and no dearer (less network power and positions; what is bought is kept,
    :func:`network_stock`, so fewer items in service never buy more). The caller still
    compares the objective returned with the solved one and keeps the solved values if
    it is higher (:func:`dcplan.planner.run._polish`). Returns the objective of the
    polished values (None without fabrics).

    Parameters
    ----------
    prob : pulp.LpProblem
        The solved model (its objective is evaluated).
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The model's variables, solved; the fabric's values are set in place.

    Returns
    -------
    float or None
        Objective at the polished values [USD, present value]; None without fabrics.
    """
    if not mv.fabric_vars:
        return None
    for fv in mv.fabric_vars.values():
        n = int(round(fv.n.value() or 0.0))
        for var, x in fabric_start_values(fv, n).items():
            var.varValue = x
    for key, racks in network_racks_needed(d, mv).items():
        mv.network_racks[key].varValue = racks
    peak: dict = defaultdict(float)  # the facility peak over the hours, lowered with them
    for (s, p, _h), e in mv.facility_hour_kw.items():
        if (s, p) in mv.facility_peak_over_hours_kw:
            peak[s, p] = max(peak[s, p], pulp.value(e) or 0.0)
    for key, var in mv.facility_peak_over_hours_kw.items():
        var.varValue = peak[key]
    owned = {s: fabric_existing(d, s) for s in d.sites}
    series: dict = defaultdict(dict)
    for (s, i, p) in mv.network_bought:
        series[s, i][p] = pulp.value(mv.network_items[s, i, p][0]) or 0.0
    for (s, i), by_p in series.items():
        periods = sorted(by_p)
        for p, x in zip(periods, network_stock(owned[s].get(i, 0.0),
                                               [by_p[q] for q in periods]), strict=True):
            mv.network_bought[s, i, p].varValue = x
    return pulp.value(prob.objective)
