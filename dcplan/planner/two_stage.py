"""Two-stage solve of the exact facility (``network_model: integer``) with a proven bound.

The integer fabric makes the MILP exact but hard: every fabric's switch and link counts
are ceilings of linear functions of the racks in service, whose LP relaxation is weak,
so branch and bound alone finds plans slowly and proves little. This module solves it
in stages, each inside the solver's time limit:

1. **fleet**: the same case with the linear network (or tiered; the caller prepares
   it) solved to :data:`STAGE1_GAP`; its fleet integers (:data:`FLEET_GROUPS`: racks
   bought, racks at each power cap, spare-rack and staffing binaries) are kept;
2. **facility**: the exact model with the fleet fixed at those values; the facility's
   integers (fabric switches and links, network racks, CDUs and their model choice)
   are free; the plan's cost is exact for that fleet;
3. **bound**: the exact model with each fabric's rows replaced by the convex envelope
   of its counts in each regime (one switch, two tiers, three:
   :func:`~dcplan.planner.network_rows.add_fabric_envelope`), a relaxation, solved
   from the best plan; HiGHS's dual bound on it is a lower bound on the exact optimum;
4. **the relaxation's fleets**: the fleets of the last plans HiGHS found for the
   relaxation (:data:`MAX_FLEETS`), each with its exact facility as in stage 2;
   stages 3 and 4 run for each relaxation of :data:`ENVELOPES` in turn (one piece per
   regime, then the regimes cut into pieces) while the plan is not proven;
5. **neighbourhood**: the exact model with racks in service within :data:`FLEET_BOX`
   of the best plan's, started from it;
6. **full model**: the exact MILP started from the best plan for the time left; its
   dual bound is HiGHS's on the exact model itself.

The bound reported is the larger of the two dual bounds, each a bound HiGHS proved on
a model whose optimum is at most the exact one; the plan is the cheapest of the exact
plans found. Stages 5 and 6 run only while the plan is not within the requested gap
of the bound. The status is ``optimal`` only when it is (the gap proven), otherwise
``feasible`` with the proven gap.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from dcplan.planner.inputs import PlanInputs
from dcplan.planner.model import build_model
from dcplan.planner.model_vars import ModelVars
from dcplan.planner.solver import (
    SolveInfo,
    SolveProgress,
    SolverError,
    SolveStatus,
    format_gap,
    solve,
)
from dcplan.planner.start import rounding_start
from dcplan.scenario.schema import SolverOptions

#: ``ModelVars`` fields that make the fleet: fixed in the facility stage.
FLEET_GROUPS = ("racks_bought", "racks_at_cap", "spares_kept", "site_staffed",
                "fleet_staffed")
#: Relative gap of the first (linear-network) stage [-].
STAGE1_GAP = 0.005
#: Racks in service the neighbourhood stage may move from the first stage's [racks].
FLEET_BOX = 1
#: Shares of the time limit each stage may take at most [-]: fleet (linear network),
#: each exact facility, neighbourhood. The envelope relaxation gets what is left but
#: :data:`RESERVE`; the full model what is left after the others.
STAGE_SHARES = {"fleet": 0.2, "facility": 0.05, "neighbourhood": 0.05}
#: Share of the time limit the envelope relaxation leaves to the stages after it [-].
RESERVE = 0.1
#: The envelope relaxation's own relative gap, as a share of the requested one [-]
#: (its plans are a relaxation's: the exact plan of their fleet costs a little more).
BOUND_GAP_FRAC = 0.3
#: The relaxation's plans whose fleets get their exact facility, newest first [count].
MAX_FLEETS = 6
#: The envelope relaxations in turn (``build_model(fabric_envelope=...)``) and the share
#: of the time limit each may take at most [-]: one piece per regime solves fast and
#: proved the baseline; the pieces give kyber plans within its gap.
ENVELOPES = (("regimes", 0.35), ("pieces", 1.0))
#: Shortest time worth starting a stage with [s].
MIN_STAGE_S = 2.0


@dataclass
class TwoStageReport:
    """What the two-stage solve did.

    Attributes
    ----------
    plans : list of (str, float)
        Each exact plan found: stage name and objective [USD, present value].
    bounds : list of (str, float, float)
        Each valid lower bound: source, value [USD, present value], seconds into the
        solve at which it was proven [s].
    stage_s : dict
        Seconds per stage [s].
    stage1_objective : float or None
        Objective of the linear-network plan (its own model's, not exact) [USD].
    timeline : list of (float, float or None, float or None)
        Seconds into the solve [s], best exact plan and best bound so far [USD], at
        each change of either.
    """

    plans: list = field(default_factory=list)
    bounds: list = field(default_factory=list)
    stage_s: dict = field(default_factory=dict)
    stage1_objective: float | None = None
    timeline: list = field(default_factory=list)

    def seconds_to(self, gap: float) -> float | None:
        """Seconds into the solve at which the plan was first proven within ``gap`` [s].

        Parameters
        ----------
        gap : float
            Relative gap ``(plan - bound) / plan`` [-].

        Returns
        -------
        float or None
            Seconds into the solve [s]; None when it never was.
        """
        for t, plan, bound in self.timeline:
            if plan is not None and bound is not None and plan > 0 and \
                    (plan - bound) / plan <= gap:
                return t
        return None

    @property
    def best_bound(self) -> tuple[str, float] | None:
        """(source, value [USD]) of the largest bound, or None."""
        if not self.bounds:
            return None
        src, val, _t = max(self.bounds, key=lambda b: b[1])
        return src, val


def fleet_values(mv: ModelVars) -> dict:
    """The solved fleet: ``(group, key) -> value`` rounded to whole numbers.

    Parameters
    ----------
    mv : ModelVars
        A solved model's variables.

    Returns
    -------
    dict
        ``(group name, index) -> value`` [racks] or [0/1].
    """
    out = {}
    for group in FLEET_GROUPS:
        for key, var in getattr(mv, group).items():
            out[group, key] = float(round(var.value() or 0.0))
    return out


def _snapshot(prob) -> dict:
    return {v: v.varValue for v in prob.variables()}


def _restore(snap: dict) -> None:
    for v, x in snap.items():
        v.varValue = x


def _integer_start(mv: ModelVars) -> dict:
    """The current integer values of a model, as a MIP start."""
    return {v: float(round(v.value() or 0.0)) for v in mv.integers()
            if v.value() is not None}


def _fix(vars_bounds: dict) -> dict:
    """Set variable bounds ``{var: (lo, hi)}``; returns the old ones to restore."""
    old = {}
    for v, (lo, hi) in vars_bounds.items():
        old[v] = (v.lowBound, v.upBound)
        v.lowBound, v.upBound = lo, hi
    return old


def _unfix(old: dict) -> None:
    for v, (lo, hi) in old.items():
        v.lowBound, v.upBound = lo, hi


def _fleet_bounds(mv: ModelVars, fleet: dict) -> dict:
    """Bounds fixing ``mv``'s fleet at ``fleet`` (absent keys at 0)."""
    out = {}
    for group in FLEET_GROUPS:
        for key, var in getattr(mv, group).items():
            x = fleet.get((group, key), 0.0)
            if var.upBound is not None:
                x = min(x, var.upBound)
            out[var] = (x, x)
    return out


def _box(mv: ModelVars, inst: dict, width: int) -> dict:
    """Bounds keeping racks in service within ``width`` of ``inst[(r, s, p)]``."""
    out = {}
    for key, var in mv.racks_in_service.items():
        x = inst.get(key, 0.0)
        out[var] = (max(0.0, x - width), x + width)
    return out


def _envelope_start(mv_env: ModelVars, mv: ModelVars) -> dict:
    """A MIP start for the envelope model from the exact model's plan (same fleet)."""
    out = {}
    for group in (*FLEET_GROUPS, "cdus_in_service", "cdu_model_used"):
        src = getattr(mv, group)
        for key, var in getattr(mv_env, group).items():
            if key in src and src[key].value() is not None:
                out[var] = float(round(src[key].value()))
    for key, var in mv_env.network_racks.items():
        if key in mv.network_racks and mv.network_racks[key].value() is not None:
            out[var] = float(round(mv.network_racks[key].value()))
    return out


def solve_two_stage(d: PlanInputs, first: PlanInputs, opt: SolverOptions,
                    say: Callable[[str], None] = lambda _m: None,
                    on_solve: Callable[[SolveProgress], None] | None = None,
                    model: tuple | None = None):
    """Solve the exact model of ``d`` in stages (see the module docstring).

    Parameters
    ----------
    d : PlanInputs
        The exact model's inputs (integer fabrics).
    first : PlanInputs
        The same case with the linear (or tiered) network: the first stage's model.
    opt : SolverOptions
        Time limit for all stages together [s] and the requested relative gap [-].
    say : callable
        Receives one-line progress messages.
    on_solve : callable, optional
        Receives :class:`~dcplan.planner.solver.SolveProgress` of the full model's
        solve.
    model : (pulp.LpProblem, ModelVars), optional
        The exact model of ``d`` already built (else it is built here).

    Returns
    -------
    prob, mv, info, report
        The exact model holding the best plan, its variables, a
        :class:`~dcplan.planner.solver.SolveInfo` whose objective is the plan's, gap
        against the best bound, status ``optimal`` only when that gap is at most
        ``opt.gap``; and the :class:`TwoStageReport`. ``None`` for all four when the
        first stage found no plan (the caller then solves the exact model directly).
    """
    t0 = time.perf_counter()
    limit = opt.time_limit_s
    report = TwoStageReport()

    def left() -> float:
        return limit - (time.perf_counter() - t0)

    def budget(stage: str) -> float:
        return max(1.0, min(left(), STAGE_SHARES[stage] * limit))

    # 1. fleet: the linear-network model
    t = time.perf_counter()
    prob1, mv1 = build_model(first)
    info1 = solve(prob1, opt.updated(gap=max(opt.gap, STAGE1_GAP),
                                     time_limit_s=budget("fleet")),
                  rounding=rounding_start(first, mv1))
    report.stage_s["fleet"] = time.perf_counter() - t
    if not info1.status.has_solution:
        say(f"two-stage: the linear-network stage found no plan ({info1.status.value}); "
            "solving the exact model directly")
        return None, None, None, report
    report.stage1_objective = info1.objective
    fleet = fleet_values(mv1)
    kind = "tiered" if any(rs.network_tiers for rs in first.rack_site.values()) else "linear"
    say(f"two-stage: fleet from the {kind} network, {info1.objective / 1e6:,.1f} M USD "
        f"in {report.stage_s['fleet']:.1f} s")

    prob, mv = model if model is not None else build_model(d)
    best: dict = {"objective": math.inf, "values": None}

    def mark() -> None:
        b = report.best_bound
        top = b[1] if b else None
        plan = best["objective"] if math.isfinite(best["objective"]) else None
        if not report.timeline or report.timeline[-1][1:] != (plan, top):
            report.timeline.append((time.perf_counter() - t0, plan, top))

    def keep(stage: str, info: SolveInfo) -> None:
        if info.status.has_solution and info.objective is not None:
            # the plan's cost as it will be reported: three-tier fabrics at their exact
            # counts (the MILP's three-tier rows are a lower bound), so the gap that
            # stops the stages is the plan's own
            cost = max(info.objective, _exact_cost(prob, d, mv, opt) or -math.inf)
            report.plans.append((stage, cost))
            if cost < best["objective"] - 1e-6:
                best["objective"] = cost
                best["values"] = _snapshot(prob)
                best["start"] = _integer_start(mv)
        if best["values"] is not None:
            _restore(best["values"])
        mark()

    def sub_opt(stage: str, gap: float | None = None) -> SolverOptions:
        return opt.updated(time_limit_s=budget(stage), gap=gap if gap is not None else opt.gap,
                           fallback=False)

    # 2. facility for that fleet
    t = time.perf_counter()
    old = _fix(_fleet_bounds(mv, fleet))
    info2 = solve(prob, sub_opt("facility", gap=min(opt.gap, 1e-4)))
    _unfix(old)
    keep("facility", info2)
    report.stage_s["facility"] = time.perf_counter() - t
    say(f"two-stage: exact facility for that fleet: {_usd(info2)} in "
        f"{report.stage_s['facility']:.1f} s")

    def gap_now() -> float | None:
        b = report.best_bound
        if b is None or not math.isfinite(best["objective"]):
            return None
        return max(0.0, (best["objective"] - b[1]) / best["objective"])

    def facility(stage: str, fleet_x: dict) -> SolveInfo:
        old = _fix(_fleet_bounds(mv, fleet_x))
        info = solve(prob, sub_opt("facility", gap=min(opt.gap, 1e-4)))
        _unfix(old)
        keep(stage, info)
        return info

    # 3-4. the envelope relaxations: the bound, and the fleets of their plans as
    # candidates, each given its exact facility; one piece per regime first (fast), then
    # the regimes cut into pieces while the plan is not proven
    tried = [fleet]
    for kind, share in ENVELOPES:
        g = gap_now()
        if (g is not None and g <= opt.gap) or left() <= MIN_STAGE_S:
            break
        t = time.perf_counter()
        fleets: list = []
        prob_e, mv_e = build_model(d, fabric_envelope=kind)
        cols = [(group, key, var) for group in FLEET_GROUPS
                for key, var in getattr(mv_e, group).items()]

        def incumbent(x, cols=cols, fleets=fleets) -> None:
            fleets.append({(g, k): float(round(x[v.index])) for g, k, v in cols})

        # HiGHS's bounds during the solve are not used: those its callbacks report while
        # it completes the start (a sub-MIP) are not bounds on the model; its final one is
        seconds = max(1.0, min(left() - RESERVE * limit, share * limit))
        info4 = solve(prob_e, opt.updated(time_limit_s=seconds,
                                          gap=opt.gap * BOUND_GAP_FRAC, fallback=False),
                      start=_envelope_start(mv_e, mv) if best["values"] is not None
                      else None, on_incumbent=incumbent)
        name = f"bound ({kind})"
        report.stage_s[name] = time.perf_counter() - t
        if info4.bound is not None:
            report.bounds.append((f"HiGHS branch and bound on the fabric-envelope ({kind}) "
                                  f"relaxation of the exact model, "
                                  f"{report.stage_s[name]:.0f} s", info4.bound,
                                  time.perf_counter() - t0))
            mark()
            say(f"two-stage: lower bound {info4.bound / 1e6:,.1f} M USD from the "
                f"fabric-envelope relaxation ({kind}) in {report.stage_s[name]:.1f} s")
        if info4.status.has_solution:
            fleets.append(fleet_values(mv_e))
        t = time.perf_counter()
        done = 0
        for fl in reversed(fleets):
            if done >= MAX_FLEETS or left() <= MIN_STAGE_S:
                break
            if fl in tried:
                continue
            tried.append(fl)
            done += 1
            facility(f"relaxation's fleet ({kind})", fl)
        if done:
            report.stage_s[f"fleets ({kind})"] = time.perf_counter() - t
            own = (f" (its own plan {info4.objective / 1e6:,.1f} M USD)"
                   if info4.status.has_solution and info4.objective is not None else "")
            say(f"two-stage: exact facility for {done} of the relaxation's "
                f"fleets{own}: best plan {best['objective'] / 1e6:,.1f} M USD")

    # 5. neighbourhood of the best plan's fleet
    g = gap_now()
    if (g is None or g > opt.gap) and left() > MIN_STAGE_S and best["values"] is not None:
        t = time.perf_counter()
        inst = {k: float(round(v.value() or 0.0)) for k, v in mv.racks_in_service.items()}
        old = _fix(_box(mv, inst, FLEET_BOX))
        info3 = solve(prob, sub_opt("neighbourhood"), start=best.get("start"))
        _unfix(old)
        keep("neighbourhood", info3)
        report.stage_s["neighbourhood"] = time.perf_counter() - t
        say(f"two-stage: racks in service within {FLEET_BOX} of the best plan's: "
            f"{_usd(info3)} in {report.stage_s['neighbourhood']:.1f} s")

    # 6. the full exact model from the best plan, for the time left
    g = gap_now()
    if (g is None or g > opt.gap) and left() > MIN_STAGE_S:
        t = time.perf_counter()
        info6 = solve(prob, opt.updated(time_limit_s=max(1.0, left()), fallback=False),
                      start=best.get("start"), on_progress=on_solve)
        report.stage_s["full"] = time.perf_counter() - t
        if info6.bound is not None:
            report.bounds.append((f"HiGHS branch and bound on the full exact model, "
                                  f"{report.stage_s['full']:.0f} s", info6.bound,
                                  time.perf_counter() - t0))
        keep("full model", info6)
        say(f"two-stage: full exact model from the best plan: {_usd(info6)}"
            + (f", bound {info6.bound / 1e6:,.1f} M USD" if info6.bound is not None else ""))
    runtime = time.perf_counter() - t0
    if best["values"] is None:
        return None, None, None, report
    _restore(best["values"])
    g = gap_now()
    proven = g is not None and g <= opt.gap
    status = SolveStatus.OPTIMAL if proven else SolveStatus.FEASIBLE
    msg = "" if proven else (
        f"stopped by the time limit at a proven gap of {format_gap(g)}" if g is not None
        else "stopped by the time limit with no bound")
    info = SolveInfo(status, best["objective"], g, "highs", runtime, msg,
                     time_limit_hit=not proven,
                     bound=report.best_bound[1] if report.best_bound else None)
    return prob, mv, info, report


def _exact_cost(prob, d: PlanInputs, mv: ModelVars, opt: SolverOptions) -> float | None:
    """The solved plan's cost with its three-tier fabrics at their exact counts [USD].

    The same re-settling as the plan gets at the end (every integer fixed, the fabrics
    at :func:`~dcplan.planner.fabric.fabric_counts`, an LP for the rest:
    :func:`~dcplan.planner.network_rows.fix_at_exact_fabric`); the model's variables are
    restored afterwards. None when the plan has no three-tier fabric (its MILP cost is
    exact) or the LP finds no plan (the caller keeps the MILP's cost; the final
    re-settling then says so in a note).
    """
    from dcplan.planner.network_rows import fix_at_exact_fabric, three_tier_fabrics

    if not three_tier_fabrics(mv):
        return None
    saved = [(v, v.varValue, v.cat, v.lowBound, v.upBound) for v in prob.variables()]
    try:
        fix_at_exact_fabric(d, mv)
        lp = solve(prob, opt.updated(fallback=True), mip=False)
    except SolverError:
        lp = None
    finally:
        for v, val, cat, lo, hi in saved:
            v.varValue, v.cat, v.lowBound, v.upBound = val, cat, lo, hi
    if lp is None or lp.status is not SolveStatus.OPTIMAL or lp.objective is None:
        return None
    return lp.objective


def _usd(info: SolveInfo) -> str:
    if not info.status.has_solution or info.objective is None:
        return f"no plan ({info.status.value})"
    return f"{info.objective / 1e6:,.1f} M USD ({info.status.value})"
