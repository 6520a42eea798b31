"""The linear network's figures at the fleet the plan holds (``network_model: linear``/``tiered``).

:func:`fit_network_scale` solves the LP relaxation of the plan
(:func:`dcplan.planner.model.build_model`) and takes each rack type's network kW,
capex and positions per rack again at the racks the relaxation holds, until they
settle; :func:`tier_network` then gives each fabric one set of figures per tier for the
MILP to choose. This module sits above the model builder: it builds and solves LPs on
the input tables of :mod:`dcplan.planner.inputs` and updates them in place.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from dcplan.errors import InputError
from dcplan.planner.inputs import FACILITY_MEMO, PlanInputs, rack_site_data
from dcplan.planner.model import build_model
from dcplan.planner.solver import solve

#: Neighbouring tiers of a linear network whose kW and capex per rack differ by at most
#: this share are one tier for the MILP (:func:`tier_network`) [-].
TIER_MERGE = 0.10
#: A rack type and site with two network tiers whose LP relaxation holds at most this
#: share of the boundary count in every period is priced at the lower tier without
#: binaries (a relaxation; re-solved with its tiers if the plan crosses) [-].
COLLAPSE_SHARE = 0.5
#: A first tier of at most this many racks (one switch) joins the next, at the next
#: tier's figures [racks]: one binary less per rack type, site and period, for a few
#: racks priced at a larger fabric.
TIER_MIN_RACKS = 2
#: LP solves of :func:`fit_network_scale` at most, and the change of a per-rack network
#: figure [-] below which the counts are taken as settled.
SCALE_PASSES = 5
SCALE_TOLERANCE = 0.01


def _fill_gaps(counts: list[int]) -> tuple[int, ...]:
    """Each zero replaced by the nearest non-zero count, the earlier one on a tie.

    >>> _fill_gaps([0, 5, 0, 0, 9, 0])
    (5, 5, 5, 9, 9, 9)
    """
    out = []
    for i, n in enumerate(counts):
        if n < 1:
            near = [(abs(j - i), j > i, m) for j, m in enumerate(counts) if m >= 1]
            n = min(near)[2] if near else 1
        out.append(n)
    return tuple(out)


def fit_network_scale(case: Any, d: PlanInputs, scale_of: dict, say: Any = None,
                      solver: Any = None) -> None:
    """Linear network figures per period at the fleet the plan holds then (in place).

    With ``network_model: linear`` a rack type's network kW and capex per rack depend on
    how many racks the fabric joins: tens of GB200 NVL72 racks need two tiers (about
    313,000 USD and 4.7 kW per rack), a thousand three (about 493,000 USD and 7.3 kW).
    :func:`~dcplan.planner.inputs.input_tables` first takes them at the planning scale
    (the racks the whole peak demand would need at one site, capped by its space). Here
    the LP relaxation of the plan is solved and, for every rack type, site and period,
    the figures are taken again at the racks the relaxation holds there (rounded up; a
    period without racks takes the count of the nearest period with racks, earlier
    first: racks the plan holds there are kept from then or bought for then); then the
    relaxation is solved again with them, until no figure of a period with racks moves
    by more than :data:`SCALE_TOLERANCE` (at most :data:`SCALE_PASSES` solves). From the
    second solve on, each count is the largest it has had since then: a fabric near a
    tier boundary would otherwise flip between two tiers, where the relaxation holds
    more racks than the boundary, and three, where it holds fewer; it settles on the
    dearer side. (The first solve's counts are not kept: they come from the
    planning-scale figures, which price every site at the same large fabric.)
    The MILP then prices each rack's network at the fabric of its period: power per rack
    in service, capex per rack bought (so a fabric that grows into three tiers is not
    charged for re-cabling the racks it already has; the ``sizing`` table shows what
    the exact fabric of the plan's own fleet needs).

    Parameters
    ----------
    case : Case
    d : PlanInputs
        Updated in place: ``rack_site`` (``network_by_period``) and ``notes``.
    scale_of : dict
        (rack, site) -> racks the first figures are taken at [racks].
    say : callable, optional
        Progress messages.
    solver : SolverOptions, optional
        Default: the scenario's ``solver``.
    """
    say = say or (lambda _m: None)
    pairs = [k for k, rs in d.rack_site.items() if rs.allowed and d.linear_network(k[0])
             and k in scale_of]
    if not pairs:
        return
    at = _network_figures(case)
    counts: dict[tuple[str, str], tuple[int, ...]] = {}
    seen: dict[tuple[str, str], list[int]] = {}
    passes, converged = 0, False
    for passes in range(1, SCALE_PASSES + 1):
        prob, mv = build_model(d, elastic=True)  # demand it cannot meet is priced
        info = solve(prob, solver or case.scenario.solver, mip=False)
        if not info.status.has_solution:
            passes -= 1
            break
        moved = False
        for r, s in pairs:
            held = [math.ceil((mv.racks_in_service[r, s, p].value() or 0.0) - 1e-6)
                    if (r, s, p) in mv.racks_in_service else 0 for p in range(len(d.periods))]
            # counts only rise from the second solve on (a fabric near a tier boundary
            # would otherwise flip between two and three tiers); the first solve's
            # counts come from the planning-scale figures and are not kept
            if (r, s) in seen:
                held = [max(a, b) for a, b in zip(held, seen[r, s], strict=True)]
            if max(held) < 1:
                continue
            if passes > 1:
                seen[r, s] = held
            if counts.get((r, s)) == _fill_gaps(held):
                continue
            moved |= _set_network_figures(d, r, s, held, at, counts)
        if not moved:
            converged = True
            break
    if not counts:
        return
    how = (f"settled after {passes} LP solves" if converged else
           f"still moving after {passes} LP solves")
    say(f"linear network per period at the relaxation's fleet ({how})")
    where = ", ".join(f"{r} at {s} {min(c):,}-{max(c):,} racks" if min(c) != max(c)
                      else f"{r} at {s} {c[0]:,} racks" for (r, s), c in sorted(counts.items()))
    d.notes.append("network_model linear: network kW and capex per rack in each period are "
                   f"taken at the racks the plan's LP relaxation holds at the site then "
                   f"({how}): {where}")


def tier_network(case: Any, d: PlanInputs) -> None:
    """Linear network figures per tier of each fabric, for the MILP to choose (in place).

    The per-rack network of a fabric is nearly flat while its number of tiers stays the
    same and jumps where it changes (:func:`~dcplan.planner.fabric.tier_limits`). Each
    (rack type, site) that may host the type gets one interval per tier, from 1 to the
    most racks the site holds, with the figures at the largest count the LP relaxation
    of :func:`fit_network_scale` holds in it in any period, or else at the interval's
    last count (the first for the last interval) (:attr:`RackSiteData.network_tiers`).
    The MILP then prices each period at the tier of its own racks in service; within a
    tier the figure is the one count's (the exact network moves by a few per cent with
    how full the last leaf is: the ``sizing`` table shows it). A pair with two tiers
    whose relaxation counts stay at most :data:`COLLAPSE_SHARE` of the boundary is
    priced at its lower tier without binaries (``d.network_collapsed``).

    Parameters
    ----------
    case : Case
        The case (catalog, scenario, sites) the network figures come from.
    d : PlanInputs
        The plan's coefficient tables; ``rack_site`` (its ``network_tiers``) and
        ``network_collapsed`` are updated in place.
    """
    from dcplan.planner.fabric import tier_limits

    at = _network_figures(case)
    limits: dict[tuple[str, int], tuple[int, ...]] = {}
    collapsed = set()
    for (r, s), rs in list(d.rack_site.items()):
        if not rs.allowed or not d.linear_network(r) or s not in case.sites:
            continue
        cap = max(1, d.sites[s].rack_positions // max(1, d.racks[r].rack_positions))
        key = (r, cap)
        if key not in limits:
            limits[key] = tier_limits(case.catalog, r, cap, case.scenario.oversubscription)
        bounds = [0, *limits[key], cap]
        held = [n for n in rs.network_racks_by_period if n >= 1]

        def figures(lo: int, hi: int, r=r, s=s, held=held, cap=cap
                    ) -> tuple[float, float, float]:
            inside = [n for n in held if lo <= n <= hi]
            # no count of the relaxation in it: its largest count, or the smallest of
            # the last tier (per-rack figures are nearly flat within a tier)
            return at(r, s, max(inside) if inside else (lo if hi == cap else hi))

        try:
            tiers = [(lo + 1, hi, *figures(lo + 1, hi))
                     for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
            # neighbours whose kW and capex per rack are within TIER_MERGE are one tier
            # (a front-end leaf layer that adds little): fewer binaries for the MILP
            merged = [tiers[0]]
            for t in tiers[1:]:
                prev = merged[-1]
                if prev[1] <= TIER_MIN_RACKS or all(
                        abs(a - b) <= TIER_MERGE * max(abs(a), abs(b), 1e-9)
                        for a, b in zip(prev[2:4], t[2:4], strict=True)):
                    merged[-1] = (prev[0], t[1], *figures(prev[0], t[1]))
                else:
                    merged.append(t)
        except InputError:
            continue
        d.rack_site[r, s] = dataclasses.replace(rs, network_tiers=tuple(merged))
        if len(merged) == 2 and all(b >= a for a, b in zip(merged[0][2:], merged[1][2:],
                                                            strict=True)) \
                and max(held, default=0) <= COLLAPSE_SHARE * merged[0][1]:
            collapsed.add((r, s))
    d.network_collapsed = frozenset(collapsed)


def _network_figures(case: Any):
    """The function ``at(r, s, n)`` of linear network figures, memoised.

    ``at`` returns (kW, capex, positions) per rack of ``n`` racks of ``r`` at site ``s``
    from the facility model.
    """
    memo = FACILITY_MEMO.get()
    figures: dict[tuple[str, str, int], tuple[float, float, float]] = {}

    def at(r: str, s: str, n: int) -> tuple[float, float, float]:
        if (r, s, n) not in figures:
            site = case.sites[s]
            rs, _fc = (rack_site_data(case, site, r, n) if memo is None
                       else memo(case, site, r, n, rack_site_data))
            figures[r, s, n] = (rs.network_kw_per_rack, rs.network_capex_usd_per_rack,
                                rs.network_positions_per_rack)
        return figures[r, s, n]

    return at


def _set_network_figures(d: PlanInputs, r: str, s: str, held: list[int], at: Any,
                         counts: dict) -> bool:
    """Take (r, s)'s linear network figures of each period at ``held`` racks (in place).

    A period without racks takes the nearest period's count (:func:`_fill_gaps`).
    Returns whether a figure of a period with racks moved by more than
    :data:`SCALE_TOLERANCE` (or the pair had no per-period figures yet); ``counts``
    records the counts taken.
    """
    some = [n >= 1 for n in held]  # periods whose figures the plan uses
    held = _fill_gaps(held)
    try:
        by_period = tuple(at(r, s, n) for n in held)
    except InputError:
        return False
    rs = d.rack_site[r, s]
    before = [(rs.network_kw(p), rs.network_capex(p), rs.network_positions(p))
              for p in range(len(held))]
    counts[r, s] = held
    d.rack_site[r, s] = dataclasses.replace(rs, network_by_period=by_period,
                                            network_racks_by_period=held)
    return not rs.network_by_period or any(
        abs(a - b) > SCALE_TOLERANCE * abs(b)
        for new, old, used in zip(by_period, before, some, strict=True) if used
        for a, b in zip(new, old, strict=True))

