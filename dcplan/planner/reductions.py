"""Presolve reductions of the planner's input tables (exact: no plan gets dearer).

:func:`drop_dominated_racks` stops offering a rack type that another offered type
dominates (:func:`dominates`).
"""

from __future__ import annotations

from dcplan.planner.inputs import PlanInputs
from dcplan.planner.operations import operations_per_rack


def dominates(d: PlanInputs, better: str, worse: str) -> bool:
    """Whether every rack of ``worse`` a plan buys could be a rack of ``better`` at no more cost.

    True when ``better`` is available no later, costs no more in any period, lives as
    long, takes no more positions, is as available, needs no more spares, draws no more
    idle and no more serving power over idle, serves every workload ``worse`` serves at
    least as fast, and at every site that hosts ``worse`` needs no more network, cooling,
    losses, liquid heat or plant capex with the same CDU model. Swapping racks one for
    one then keeps every constraint and lowers no cost term, so ``worse`` need not be
    offered (an exact reduction of the model).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    better : str
        Rack type id that may replace ``worse``.
    worse : str
        Rack type id.

    Returns
    -------
    bool
    """
    a, b = d.racks[better], d.racks[worse]
    n = len(d.periods)
    if better in d.cap_levels or worse in d.cap_levels:  # caps change power and goodput
        return False
    if a.first_period > b.first_period or a.lifetime_years != b.lifetime_years:
        return False
    if any(d.rack_capex(better, p) > d.rack_capex(worse, p) + 1e-9
           for p in range(b.first_period, n)):
        return False
    if (a.rack_positions > b.rack_positions or a.it_power_idle_kw > b.it_power_idle_kw
            or a.it_power_max_kw > b.it_power_max_kw or a.availability < b.availability
            or a.maintenance_frac_per_year * a.capex_usd
            > b.maintenance_frac_per_year * b.capex_usd + 1e-9):
        return False
    for s in d.sites:
        if d.spare_racks.get((better, s), 0) > d.spare_racks.get((worse, s), 0):
            return False
    if d.operations is not None and any(
            operations_per_rack(d, better, s) > operations_per_rack(d, worse, s) + 1e-9
            for s in d.sites):
        return False
    for w in d.workloads:
        if (worse, w) not in d.perf:
            continue
        if (better, w) not in d.perf:
            return False
        pa, pb = d.perf[better, w], d.perf[worse, w]
        if any(pa.rate(k, p) < pb.rate(k, p) - 1e-9 for k in ("all", "prefill", "decode")
               for p in range(n)):
            return False
        if pa.power_kw - a.it_power_idle_kw > pb.power_kw - b.it_power_idle_kw + 1e-9:
            return False
    for s in d.sites:
        rb = d.rack_site.get((worse, s))
        if rb is None or not rb.allowed:
            continue
        ra = d.rack_site.get((better, s))
        if ra is None or not ra.allowed or ra.cdu_id != rb.cdu_id:
            return False
        if ra.network_tiers or rb.network_tiers:
            # a tier's figure depends on how many racks of the type the site holds: a
            # swap adds to the better type's fabric and may lift it into a dearer tier
            return False
        pairs = [(ra.network_kw_per_rack, rb.network_kw_per_rack),
                 (ra.network_capex_usd_per_rack, rb.network_capex_usd_per_rack),
                 (ra.cooling_kw_per_it_kw_avg, rb.cooling_kw_per_it_kw_avg),
                 (ra.cooling_kw_per_it_kw_peak, rb.cooling_kw_per_it_kw_peak),
                 (ra.loss_frac, rb.loss_frac),
                 (ra.liquid_heat_kw_per_rack, rb.liquid_heat_kw_per_rack),
                 (ra.cooling_capex_usd_per_kw * a.it_power_max_kw,
                  rb.cooling_capex_usd_per_kw * b.it_power_max_kw)]
        pairs += [(ra.network_kw(p), rb.network_kw(p)) for p in range(n)]
        pairs += [(ra.network_capex(p), rb.network_capex(p)) for p in range(n)]
        if any(x > y + 1e-9 for x, y in pairs):
            return False
    return True


def drop_dominated_racks(d: PlanInputs) -> None:
    """Stop offering rack types another offered type dominates (see :func:`dominates`).

    Existing racks of such a type stay in service; a note names each type dropped.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables; a dropped type's ``first_period`` becomes
        ``len(periods)`` (never offered) and a note is added, in place.
    """
    import dataclasses

    n = len(d.periods)
    offered = [r for r in d.racks if d.racks[r].first_period < n]
    for r in offered:
        by = next((o for o in offered if o != r and d.racks[o].first_period < n
                   and dominates(d, o, r) and not dominates(d, r, o)), None)
        if by is None:
            continue
        d.racks[r] = dataclasses.replace(d.racks[r], first_period=n)
        d.notes.append(f"{r} is not offered: {by} is available as early, costs no more and "
                       "serves every workload at least as fast for no more power, space, "
                       "cooling or network at every site")

