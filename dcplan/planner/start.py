"""A MIP start for the planner: round a margin-tightened LP relaxation up.

The LP relaxation of the planner is tight (on the benchmark instances its bound is
within 0.1-0.6 % of the optimum), but HiGHS can spend minutes in root cut
separation before its own heuristics find a plan that close. Rounding the
relaxation gives one at once:

1. solve the LP relaxation with each site's grid limit, space and (before the
   facility lead time has passed) built capacity tightened by one rack of every
   type the site may host, plus the CDU positions rounding can add;
2. round racks in service up, period by period, buying the difference
   (``new = max(0, ceil(inst_LP[p]) - racks still in service)``): every rounded
   count exceeds the LP's by less than about one rack per type, which the margins
   leave room for, and the LP's allocation stays valid because capacity only grows;
3. CDUs: ``ceil(liquid heat / capacity) + redundancy`` where any rack is liquid-cooled
   (with ``cdu_choice: milp``, of the model of least present cost for the rounded
   fleet, :func:`~dcplan.planner.cdu_choice.cheapest_model`).

Only the integer values are handed to HiGHS, which fixes them, solves the LP for
the rest and keeps the plan as its first incumbent if it is feasible (otherwise it
is ignored). The start changes where the search begins, never the model or its
optimum.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from dcplan.planner.inputs import PlanInputs
from dcplan.planner.model_vars import ModelVars

_EPS = 1e-6


@dataclass
class RoundingStart:
    """Margins for the tightened relaxation and the rounding of its solution.

    Attributes
    ----------
    margins : dict
        constraint -> amount by which to tighten its bound (upper bound of ``<=``
        rows lowered, lower bound of ``>=`` rows raised) in the LP that is rounded.
    d : PlanInputs
    mv : ModelVars
    """

    d: PlanInputs
    mv: ModelVars
    margins: dict = field(default_factory=dict)

    def neighbourhood(self) -> dict:
        """Variable -> (lower, upper) bounds of the sub-MIP around the relaxation.

        Racks in service between the floor and the ceiling of the relaxation's
        value (the rounded start is inside), no purchase where the relaxation buys
        none.
        """
        out = {}
        for var in self.mv.racks_in_service.values():
            x = max(0.0, var.value() or 0.0)
            out[var] = (float(math.floor(x + _EPS)), float(math.ceil(x - _EPS)))
        for var in self.mv.racks_bought.values():
            if (var.value() or 0.0) < _EPS:
                out[var] = (0.0, 0.0)
        return out

    def values(self) -> dict:
        """Integer variable -> rounded value, from the variables' current (LP) values."""
        return rounded_values(self.d, self.mv)


def _rack_peak_kw(d: PlanInputs, r: str, s: str) -> float:
    """Peak facility power one more (idle or nameplate) rack adds at a site [kW]."""
    rs, rk = d.rack_site[r, s], d.racks[r]
    base = rk.it_power_max_kw if d.nameplate_peak else rk.it_power_idle_kw
    return (1 + rs.loss_frac) * ((1 + rs.cooling_kw_per_it_kw_peak) * base
                                 + rs.network_kw_per_rack)


def _network_positions(d: PlanInputs, r: str, s: str) -> float:
    """Largest linear-network positions per rack of ``r`` at ``s`` over the periods."""
    if not d.linear_network(r):
        return 0.0
    return max(d.rack_site[r, s].network_positions(p) for p in range(len(d.periods)))


def rounding_start(d: PlanInputs, mv: ModelVars) -> RoundingStart:
    """Build the :class:`RoundingStart` of a model (margins per site limit).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The model's variables and rows (its ``grid``, ``space`` and ``building`` rows
        get margins: [kW] for grid and building, [positions] for space).

    Returns
    -------
    RoundingStart
    """
    racks_at = defaultdict(set)
    for r, s, _p in mv.racks_bought:
        racks_at[s].add(r)
    margins = {}
    for s, racks in racks_at.items():
        kw = sum(_rack_peak_kw(d, r, s) for r in racks)
        pos = float(sum(d.racks[r].rack_positions + _network_positions(d, r, s)
                        for r in racks))
        cdu_pos = [(d.cdu_redundancy + 2) * d.cdu_data(s, c).cdu_positions
                   for c in d.cdu_models(s)]
        # cdu_choice: milp holds one of the models, so the largest is the margin
        pos += max(cdu_pos, default=0.0) if d.cdu_choice == "milp" else sum(cdu_pos)
        for p, per in enumerate(d.periods):
            con = mv.constraints.get("grid", {}).get((s, per.label))
            if con is not None:
                margins[con] = kw
            con = mv.constraints.get("space", {}).get((s, per.label))
            if con is not None:
                margins[con] = pos
            con = mv.constraints.get("building", {}).get((s, per.label))
            if con is not None and p < d.sites[s].first_build_period:
                margins[con] = kw
    return RoundingStart(d, mv, margins)


def rounded_values(d: PlanInputs, mv: ModelVars) -> dict:
    """Round the current (relaxation) values of racks and CDUs (see the module docstring).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The model's variables, holding the relaxation's values.

    Returns
    -------
    dict
        Variable -> rounded value: racks bought [racks], CDUs [units], network racks
        [positions], fabric counts [count], binaries 0 or 1 [-].
    """
    n_p = len(d.periods)
    out = {}
    inst_int = {}
    pairs = sorted({(r, s) for r, s, _p in mv.racks_in_service})
    for r, s in pairs:
        bought = []  # (period, count)
        for p in range(n_p):
            inst = mv.racks_in_service.get((r, s, p))
            if inst is None:
                continue
            lp = max(0.0, inst.value() or 0.0)
            alive = d.existing_count(r, s, p) + sum(
                n for q, n in bought if d.alive(r, q, p))
            var = mv.racks_bought.get((r, s, p))
            buy = 0
            on = mv.spares_kept.get((r, s, p))
            if on is not None and lp > _EPS:
                # keep the racks that serve beside the spares the relaxation reserved
                k = d.spare_racks[r, s]
                lp = max(lp, lp - k * (on.value() or 0.0) + k)
            if var is not None:
                buy = max(0, math.ceil(lp - _EPS) - alive)
                if var.upBound is not None:
                    buy = min(buy, int(var.upBound))
                out[var] = float(buy)
                if buy:
                    bought.append((p, buy))
            inst_int[r, s, p] = alive + buy
    for key, var in mv.spares_kept.items():
        out[var] = 1.0 if inst_int.get(key, 0) > 0 else 0.0
    for key, tiers in mv.network_tier_vars.items():  # the tier of the rounded racks in service
        n = inst_int.get(key, 0)
        for t, on, _n, _b in tiers:
            if on is not None:
                out[on] = 1.0 if t[0] <= n <= t[1] else 0.0
    for (s, p), var in mv.site_staffed.items():  # a site with racks is staffed
        out[var] = 1.0 if any(n > 0 for (_r, s2, p2), n in inst_int.items()
                              if s2 == s and p2 == p) else 0.0
    for p, var in mv.fleet_staffed.items():
        out[var] = max((out[v] for (_s, q), v in mv.site_staffed.items() if q == p), default=0.0)
    if d.cdu_choice == "milp":
        from dcplan.planner.cdu_choice import cdu_start_values

        out.update(cdu_start_values(d, mv, inst_int))
    for (s, c, p), var in mv.cdus_in_service.items() if d.cdu_choice != "milp" else ():
        heat = sum(d.rack_site[r, s].liquid_heat_kw_per_rack * inst_int.get((r, s, p), 0)
                   for r in d.racks if (r, s) in d.rack_site and d.rack_site[r, s].cdu_id == c)
        any_rack = any(inst_int.get((r, s, p), 0) > 0 for r in d.racks
                       if (r, s) in d.rack_site and d.rack_site[r, s].cdu_id == c)
        cap = d.cdu_data(s, c).cdu_capacity_kw
        n = math.ceil(heat / cap - _EPS) if heat > 0 else 0
        on = 1 if any_rack else 0
        out[var] = float(n + d.cdu_redundancy * on)
        out[mv.cdu_model_used[s, c, p]] = float(on)
    _fabric_start(d, mv, inst_int, out)
    return out


def _fabric_start(d: PlanInputs, mv: ModelVars, inst_int: dict, out: dict) -> None:
    """Fabric integers and network racks of the rounded fleet (exact step functions)."""
    from dcplan.planner.network_rows import fabric_start_values

    units: dict = defaultdict(float)
    for (r, s, _f, p), fv in mv.fabric_vars.items():
        n = int(inst_int.get((r, s, p), 0))
        vals = fabric_start_values(fv, n)
        out.update(vals)
        for t in ("leaf", "spine", "core"):
            units[s, p] += fv.fd.switch_rack_units * sum(
                vals.get(v, 0.0) * c for v, c in fv.counts[t].items())
    for (s, p), var in mv.network_racks.items():
        out[var] = float(math.ceil(units[s, p] / (d.network_rack_units or 1) - _EPS))
