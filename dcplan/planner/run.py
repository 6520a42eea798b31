"""Planning a case: prepare the coefficients, build and solve the MILP, explain it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pulp

from dcplan.planner.analysis import binding_limits, diagnosis, shadow_prices, unsolved_status
from dcplan.planner.buy import build_vs_buy_table, requests_table, reserve_kpis
from dcplan.planner.cashflow import cashflow_kpis, cashflow_table
from dcplan.planner.inputs import PlanInputs
from dcplan.planner.model import build_model, unserved_total
from dcplan.planner.oversub_table import power_oversub_table
from dcplan.planner.plan_result import PlanResult
from dcplan.planner.prepare import prepare_inputs
from dcplan.planner.solver import (
    MIP_START_MIN_VARIABLES,
    SolveProgress,
    SolverError,
    SolveStatus,
    excess_over_optimum,
    format_gap,
    solve,
)
from dcplan.planner.start import rounding_start
from dcplan.planner.tables import (
    Solution,
    allocation_table,
    caps_table,
    cooling_table,
    cost_values,
    costs_table,
    demand_table,
    fleet_table,
    grid_table,
    hours_table,
    kpi_table,
    network_table,
    power_table,
    schedules_table,
    unserved_table,
    workload_tokens,
)
from dcplan.scenario.schema import SolverOptions


def model_size(prob) -> dict[str, int]:
    """Variables, integer variables, constraints and nonzeros of a pulp problem.

    Parameters
    ----------
    prob : pulp.LpProblem
        The problem.

    Returns
    -------
    dict of str to int
        ``variables``, ``integers``, ``constraints``, ``nonzeros`` [count].
    """
    variables = prob.variables()
    cons = prob.constraints()
    return {"variables": len(variables),
            "integers": sum(v.cat == "Integer" for v in variables),
            "constraints": len(cons), "nonzeros": sum(len(c) for c in cons)}


def _tables(d: PlanInputs, sol: Solution) -> dict[str, pd.DataFrame]:
    fleet = fleet_table(d, sol)
    power = power_table(d, sol)
    demand = demand_table(d, sol)
    purchases: list = []
    cost = cost_values(d, sol, power, purchases)
    costs = costs_table(d, cost)
    allocation = allocation_table(d, sol)
    kpis = kpi_table(d, fleet, power, demand, costs, allocation)
    cashflow = cashflow_table(d, purchases, cost, workload_tokens(d, demand)[0])
    npv = kpis.loc[kpis.kpi == "npv_cost_usd", "value"].iloc[0]
    kpis = pd.concat([kpis, cashflow_kpis(d, cashflow, costs, npv),
                      reserve_kpis(d, fleet, costs)], ignore_index=True).assign()
    kpis.attrs["units"] = {"value": "see unit column"}
    return {"fleet": fleet, "allocation": allocation, "demand": demand,
            "power": power, "cooling": cooling_table(d, sol, power),
            "network": network_table(d, sol), "costs": costs, "kpis": kpis,
            "cashflow": cashflow,
            "build_vs_buy": build_vs_buy_table(d, fleet, allocation, demand, costs),
            "requests": requests_table(d, allocation, power, demand),
            "unserved": unserved_table(d, sol), "grid": grid_table(d, sol, power),
            "hours": hours_table(d, sol), "schedules": schedules_table(d, sol),
            **({"caps": caps_table(d, sol, power)} if d.cap_levels else {}),
            **({"power_oversubscription": power_oversub_table(d, sol)}
               if d.power_oversub else {}),
            **_supply_tables(d, sol, power)}


def _supply_tables(d: PlanInputs, sol: Solution, power: pd.DataFrame) -> dict:
    """``dispatch`` and ``sources`` of a plan offered storage or generation (else none)."""
    from dcplan.planner.supply import has_supply
    from dcplan.planner.supply_tables import dispatch_table, sources_table

    if not has_supply(d) or not sol.grid_peak_kw:
        return {}
    dispatch = dispatch_table(d, sol)
    return {"dispatch": dispatch, "sources": sources_table(d, sol, dispatch, power)}


def solve_inputs(d: PlanInputs, options: SolverOptions | None = None, *,
                 explain: bool = True, write_lp: Path | str | None = None,
                 write_mps: Path | str | None = None,
                 progress: Callable[[str], None] | None = None,
                 on_solve: Callable[[SolveProgress], None] | None = None,
                 first_stage: PlanInputs | Callable[[], PlanInputs] | None = None
                 ) -> PlanResult:
    """Build, solve and explain the plan for precomputed inputs.

    If the demand cannot be met, the elastic model (priced unserved demand) is solved
    and the result describes it, with ``unserved=True`` and a diagnosis in
    ``message``.

    Parameters
    ----------
    d : PlanInputs
    options : SolverOptions, optional
        Default: the scenario defaults of :class:`~dcplan.scenario.SolverOptions`.
    explain : bool
        Compute shadow prices (one more LP solve).
    write_lp : path, optional
        Write the MILP in LP format.
    write_mps : path, optional
        Write the MILP in MPS format, as built and scaled as HiGHS receives it
        (:func:`~dcplan.planner.highs.write_model_files`).
    progress : callable, optional
        Receives one-line progress messages.
    on_solve : callable, optional
        Receives :class:`~dcplan.planner.solver.SolveProgress` while HiGHS solves the
        MIP (elapsed time, best plan, bound).
    first_stage : PlanInputs or callable, optional
        The same case with the linear network (or a function that prepares it), for
        the two-stage solve of integer fabrics (:mod:`dcplan.planner.two_stage`, when
        :func:`use_two_stage` says so); without it the inputs with their fabrics
        removed are the first stage.

    Returns
    -------
    PlanResult
        The solved plan, its tables and timings [s]; ``unserved=True`` when the
        elastic model was solved.
    """
    say = progress or (lambda _m: None)
    opt = options or SolverOptions()
    t = {}
    t0 = time.perf_counter()
    prob, mv = build_model(d)
    t["build"] = time.perf_counter() - t0
    size = model_size(prob)
    say(f"model: {size['variables']:,} variables ({size['integers']:,} integer), "
        f"{size['constraints']:,} constraints, built in {t['build']:.2f} s")
    if write_lp:
        prob.writeLP(str(write_lp))
        say(f"wrote {write_lp}")
    if write_mps:
        from dcplan.planner.highs import write_model_files

        raw, scaled = write_model_files(prob, write_mps)
        say(f"wrote {raw} (as built) and {scaled} (scaled as HiGHS receives models of "
            f"{MIP_START_MIN_VARIABLES:,} variables or more)")
    say(f"solving with {opt.name} (time limit {opt.time_limit_s:g} s, gap {opt.gap:g})")
    two = None
    if use_two_stage(opt, mv):
        two, prob, mv, info = _two_stage(d, opt, prob, mv, first_stage, say, on_solve)
    if two is None:
        info = solve(prob, opt, rounding=rounding_start(d, mv), on_progress=on_solve)
    t["solve"] = info.runtime_s
    say(f"solver: {info.status.value} in {info.runtime_s:.2f} s"
        + (f", gap {info.gap:.3%}" if info.gap is not None else "")
        + (f" ({info.message})" if info.message else ""))
    prob, mv, info = _with_crossed_tiers(d, opt, prob, mv, info, t, say, on_solve)
    unserved = False
    limit, least_note = None, ""
    message = info.message
    if info.status in (SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED):
        say("demand cannot be met within the limits; re-solving with priced unserved demand")
        limit, floor, least_note, least_plan = None, None, "", {}
        if d.unserved_policy == "least_first":
            limit, floor, least_note, least_plan = _least_unserved(d, opt, t, say, on_solve)
        t1 = time.perf_counter()
        prob, mv = build_model(d, elastic=True, unserved_limit=limit, unserved_floor=floor)
        t["build"] += time.perf_counter() - t1
        # the first stage's plan leaves exactly the least shortfall: a plan the second
        # stage may keep, so it starts from it (without one, HiGHS can search the tight
        # shortfall row for minutes before its first plan)
        start = {v: least_plan[v.name] for v in prob.variables() if v.name in least_plan}
        second = second_stage_options(opt) if limit is not None else opt
        info = solve(prob, second, rounding=rounding_start(d, mv), on_progress=on_solve,
                     start=start or None)
        t["solve"] += info.runtime_s
        prob, mv, info = _with_crossed_tiers(d, second, prob, mv, info, t, say, on_solve,
                                             elastic=True, unserved_limit=limit,
                                             unserved_floor=floor)
        if limit is not None and info.status in (SolveStatus.INFEASIBLE,
                                                 SolveStatus.UNBOUNDED):
            # the network tiers settled after the first stage made its shortfall
            # unreachable: the cheapest plan with priced unserved demand instead
            least_note = ("the least shortfall of the first stage could not be kept once "
                          "the network tiers were settled; unserved demand is priced at "
                          "the penalty instead")
            limit = None
            prob, mv = build_model(d, elastic=True)
            info = solve(prob, opt, rounding=rounding_start(d, mv), on_progress=on_solve)
            t["solve"] += info.runtime_s
            prob, mv, info = _with_crossed_tiers(d, opt, prob, mv, info, t, say, on_solve,
                                                 elastic=True)
        unserved = info.status.has_solution
        if not info.status.has_solution:
            message = infeasible_reason(d) if info.status in (
                SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED) else info.message
    notes = list(d.notes)
    if unserved and least_note:
        notes.append(least_note)
    if info.status.has_solution:
        _polish(prob, d, mv, info)
        notes += _exact_three_tier(prob, d, mv, info, opt)
    result = PlanResult(d.name, info.status, info.objective, info.gap, info.solver,
                        unserved=unserved, message=message, model_size=size,
                        notes=notes, inputs=d)
    if two is not None and two.best_bound is not None and not unserved:
        result.bound_source, result.bound_usd = two.best_bound
        result.notes.append(two_stage_note(two))
    if not info.status.has_solution:
        t["total"] = sum(t.values())
        result.timings_s = t
        return result
    t2 = time.perf_counter()
    sol = Solution.from_model(mv)
    tables = _tables(d, sol)
    _exact_cost(result, tables)
    shadow = None
    if explain:
        say("shadow prices: integers fixed, re-solving the LP")
        shadow = shadow_prices(prob, d, mv, sol, opt)
        tables["shadow_prices"] = shadow
    tables["binding"] = binding_limits(d, sol, tables["power"], tables["fleet"],
                                       tables["cooling"], shadow, tables["costs"])
    if unserved:
        result.message = diagnosis(d, tables["unserved"], tables["binding"],
                                   chosen=limit is None)
        if not len(tables["unserved"]):
            result.unserved = False
    elif info.status is SolveStatus.FEASIBLE:
        # the plan's own gap (after polishing and exact fabric counts), not the solver's
        g = result.gap
        result.message = (
            f"NOT PROVEN OPTIMAL: stopped by the time limit at gap {format_gap(g)}; the "
            f"plan may cost up to {format_gap(excess_over_optimum(g))} more than the optimum"
            if g is not None and info.time_limit_hit else f"NOT PROVEN OPTIMAL: {info.message}")
    t["explain"] = time.perf_counter() - t2
    t["total"] = sum(t.values())
    result.tables = tables
    result.timings_s = t
    return result


#: Strategy ``auto`` solves integer fabrics in two stages from this many fabric integers
#: (the minimal example, 600-odd, solves directly in seconds; the baseline's 6,186 do
#: not prove 1 % in 300 s directly, docs/planner.md "Exact facility: two-stage solve").
TWO_STAGE_MIN_FABRIC_INTEGERS = 2_000


def use_two_stage(opt: SolverOptions, mv) -> bool:
    """Whether to solve a model in two stages (:mod:`dcplan.planner.two_stage`).

    Parameters
    ----------
    opt : SolverOptions
        ``strategy``: ``two_stage``, ``direct`` or ``auto`` (two stages from
        :data:`TWO_STAGE_MIN_FABRIC_INTEGERS` fabric integers); HiGHS only.
    mv : ModelVars
        The exact model's variables.

    Returns
    -------
    bool
        False without integer fabrics or with CBC.
    """
    if not mv.fabric_vars or opt.name != "highs" or opt.strategy == "direct":
        return False
    return opt.strategy == "two_stage" or len(mv.fabric_integers) >= \
        TWO_STAGE_MIN_FABRIC_INTEGERS


def _two_stage(d: PlanInputs, opt: SolverOptions, prob, mv, first_stage, say, on_solve):
    """The two-stage solve, or ``(None, prob, mv, None)`` when its first stage has no plan."""
    import dataclasses

    from dcplan.planner.two_stage import solve_two_stage

    if first_stage is None:
        first = dataclasses.replace(d, fabrics={})
    else:
        first = first_stage() if callable(first_stage) else first_stage
    say("two-stage solve: the fleet from the linear network, then the exact facility")
    p2, mv2, info, report = solve_two_stage(d, first, opt, say, on_solve, model=(prob, mv))
    if info is None:
        return None, prob, mv, None
    return report, p2, mv2, info


def two_stage_note(report) -> str:
    """The plan's note on a two-stage solve: plans found, bound and its source.

    Parameters
    ----------
    report : TwoStageReport
        What :func:`~dcplan.planner.two_stage.solve_two_stage` did.

    Returns
    -------
    str
    """
    plans = ", ".join(f"{stage} {obj / 1e6:,.1f}" for stage, obj in report.plans)
    src, bound = report.best_bound
    return (f"two-stage solve of the exact facility: plans [M USD] {plans}; lower bound "
            f"{bound / 1e6:,.1f} M USD ({src}); stage times "
            + ", ".join(f"{k} {v:.0f} s" for k, v in report.stage_s.items()))


#: Slack of the second stage's shortfall row over the first stage's least shortfall:
#: relative [-] and absolute [million tokens] (solver tolerances, not a choice).
LEAST_SLACK_FRAC, LEAST_SLACK_MTOK = 1e-9, 1e-6
#: Relative gap to which the first stage proves the least shortfall [-] (the plan's own
#: gap applies to the second stage, the cost).
LEAST_GAP = 1e-6
#: HiGHS's ``mip_heuristic_effort`` in the second stage of ``least_first`` (HiGHS's
#: default: 0.05). Its search is for plans, not for the bound (the floor row and the
#: first stage's plan leave a root gap of about 0.6 %): bench/elastic_floor.py
#: ``--effort``, seeds 0-2 at 1 % (2026-12-07, docs/planner.md "Demand that cannot be
#: met"): seoul_oversub 147 / 55 / 111 s at 0.05 and 50 / 50 / 86 s at 0.3, carbon_cap
#: 55 / 42 / 10 s and 57 / 30 / 9 s. Not the planner's default: across ten examples
#: (direct solves) 0.3 saved nothing (docs/planner.md, "The examples at 0.1 %").
SECOND_STAGE_HEURISTIC_EFFORT = 0.3


def second_stage_options(opt: SolverOptions) -> SolverOptions:
    """Solver options of ``least_first``'s second stage.

    The second stage finds the cheapest plan within the least shortfall. HiGHS's
    heuristics run at :data:`SECOND_STAGE_HEURISTIC_EFFORT` unless the scenario sets
    ``mip_heuristic_effort`` itself.

    Parameters
    ----------
    opt : SolverOptions
        The plan's solver options.

    Returns
    -------
    SolverOptions
        ``opt`` itself for CBC or when ``solver.highs_options`` names the option.
    """
    if opt.name != "highs" or "mip_heuristic_effort" in opt.highs_options:
        return opt
    return opt.updated(highs_options={**opt.highs_options,
                                      "mip_heuristic_effort": SECOND_STAGE_HEURISTIC_EFFORT})


def _least_unserved(d: PlanInputs, opt: SolverOptions, t: dict, say,
                    on_solve: Callable[[SolveProgress], None] | None = None
                    ) -> tuple[float | None, float | None, str, dict[str, float]]:
    """First stage of the elastic solve: the least demand the limits force unserved.

    Minimises :func:`~dcplan.planner.model.unserved_total` over the elastic model,
    whatever it costs, so that the second stage (the cheapest plan that leaves no more
    unserved) never trades demand for money.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    opt : SolverOptions
        Time limit [s] and relative gap [-] of the solve.
    t : dict
        Timings, updated in place [s].
    say : callable
        Receives one-line progress messages.
    on_solve : callable, optional
        Receives the solve's progress as :class:`~dcplan.planner.solver.SolveProgress`
        with ``stage`` "least shortfall": elapsed time and gap only (its objective is in
        million tokens, not USD).

    Returns
    -------
    limit : float or None
        The shortfall the second stage may not exceed [million tokens]; None when the
        first stage found no plan (the second stage then prices unserved demand).
    floor : float or None
        The shortfall every plan leaves at least: the first stage's proven lower bound,
        less the same slack [million tokens]; None without a bound (CBC) or a plan.
    note : str
        What the plan's notes say about the first stage ('' when it proved its least
        shortfall).
    plan : dict
        Its plan's integer decisions, variable name -> value [in the model's units]
        (empty without a plan): a start for the second stage, whose shortfall row
        it meets.
    """
    t0 = time.perf_counter()
    prob, mv = build_model(d, elastic=True)
    prob.setObjective(unserved_total(mv))
    t["build"] += time.perf_counter() - t0
    say("least unserved demand first (whatever it costs)")
    # the least shortfall is proven to LEAST_GAP whatever the plan's gap: the second
    # stage's cost is only comparable between plans that leave the same demand unserved
    progress = None if on_solve is None else (
        lambda p: on_solve(SolveProgress(p.elapsed_s, None, None, p.gap, "least shortfall")))
    info = solve(prob, opt.updated(gap=min(opt.gap, LEAST_GAP)),
                 rounding=rounding_start(d, mv), on_progress=progress)
    t["solve"] += info.runtime_s
    if not info.status.has_solution or info.objective is None:
        return None, None, ("the least shortfall could not be found "
                      f"({unsolved_status(info.status)}); unserved demand is priced at "
                      "the penalty instead"), {}
    least = max(0.0, float(info.objective))
    say(f"least unserved demand: {least:,.0f} million tokens over the horizon")
    note = ""
    if info.status is not SolveStatus.OPTIMAL or (info.gap or 0.0) > 0.0:
        note = (f"the least shortfall ({least:,.0f} million tokens) is proven only within "
                f"{format_gap(info.gap) if info.gap is not None else 'no bound'}: up to that "
                "much of it may be avoidable")
    plan = {v.name: float(v.varValue) for v in prob.variables()
            if v.cat == pulp.LpInteger and v.varValue is not None}
    floor = None
    if info.bound is not None:
        floor = min(info.bound, least) * (1 - LEAST_SLACK_FRAC) - LEAST_SLACK_MTOK
    return least * (1 + LEAST_SLACK_FRAC) + LEAST_SLACK_MTOK, floor, note, plan


def _with_crossed_tiers(d: PlanInputs, opt: SolverOptions, prob, mv, info, t: dict, say,
                        on_solve, elastic: bool = False,
                        unserved_limit: float | None = None,
                        unserved_floor: float | None = None):
    """Solve again while a plan passes a collapsed network tier (see ``network_collapsed``).

    A pair priced at its lower tier without binaries is a relaxation of its tiers: a
    plan within them is exactly priced and its gap holds for the model with every tier.
    Where the plan holds more racks than the lower tier, that pair gets its tiers and
    the model is solved again (each pair at most once). ``unserved_limit`` and
    ``unserved_floor`` [million tokens] are passed to
    :func:`~dcplan.planner.model.build_model` (the floor stays valid: the first stage
    solved a relaxation of the model with more tiers).
    """
    from dcplan.planner.network_rows import collapsed_over

    while info.status.has_solution and (over := collapsed_over(d, mv)):
        d.network_collapsed = d.network_collapsed - over
        say("network tiers for " + ", ".join(f"{r} at {s}" for r, s in sorted(over))
            + " (the plan passed the lower tier); solving again")
        t0 = time.perf_counter()
        prob, mv = build_model(d, elastic=elastic, unserved_limit=unserved_limit,
                               unserved_floor=unserved_floor)
        t["build"] += time.perf_counter() - t0
        info = solve(prob, opt, rounding=rounding_start(d, mv), on_progress=on_solve)
        t["solve"] += info.runtime_s
    return prob, mv, info


def _polish(prob, d: PlanInputs, mv, info) -> None:
    """Fabric counts at their step functions (:func:`~dcplan.planner.network_rows.polish_fabric`).

    The objective becomes that of the polished plan, and the gap shrinks with it (the
    solver's bound is unchanged). Each polish (fabric counts, then CDUs) is kept only
    if it is not dearer than the plan as solved, else the solved values stand. With
    purchases counted against everything owned (``add_fabric_purchases``) the least
    counts are never dearer; the check keeps it so if a row ever lets them be (under
    ``net_buy >= items[p] - items[p-1]``, the least counts of a dip dropped core links
    the solver had kept, and the next period bought them again).
    """
    import pulp

    from dcplan.planner.cdu_choice import polish_cdus
    from dcplan.planner.network_rows import polish_fabric

    if info.objective is None:
        return
    obj = pulp.value(prob.objective)  # the solved values' cost, as each step returns it
    for step, used in ((polish_fabric, mv.fabric_vars), (polish_cdus, mv.cdu_site_model)):
        if not used:  # no integer fabric / no CDU choice (cdu_choice: milp)
            continue
        saved = {v: v.varValue for v in prob.variables()}
        new = step(prob, d, mv)
        if new is None:
            continue
        if new > obj + 1e-9 * abs(obj) + 1e-6:
            for v, x in saved.items():
                v.varValue = x
            continue
        obj = new
    if obj is None or obj >= info.objective:
        return
    if info.gap is not None and info.objective:
        bound = info.objective * (1 - info.gap)
        info.gap = max(0.0, (obj - bound) / obj) if obj else 0.0
    info.objective = obj


def _exact_three_tier(prob, d: PlanInputs, mv, info, opt: SolverOptions) -> list[str]:
    """Re-settle a plan with three-tier fabrics at their exact counts; notes on it.

    The MILP's three-tier rows are a lower bound (the pods' rounding of spines is not
    modelled), so the plan's exact fabric can draw more power and take more positions
    than the solver saw, enough to break a grid or building limit by a few kW. With
    every integer fixed at the plan and the fabrics at their exact counts
    (:func:`~dcplan.planner.network_rows.fix_at_exact_fabric`), an LP settles the continuous
    decisions again (more built capacity, a larger grid request); its objective is the
    plan's exact cost, and the gap is taken against the solver's bound, which stays a
    valid lower bound. If that LP has no solution (the exact fabric does not fit the
    site's grid or space), the plan is kept as solved and a note says so.
    """
    from dcplan.planner.network_rows import fix_at_exact_fabric, three_tier_fabrics

    keys = three_tier_fabrics(mv)
    if not keys or info.objective is None:
        return []
    variables = prob.variables()
    saved = [(v, v.varValue, v.cat, v.lowBound, v.upBound) for v in variables]
    bound = info.objective * (1 - info.gap) if info.gap is not None else None
    fix_at_exact_fabric(d, mv)
    lp_opt = SolverOptions(name=opt.name, time_limit_s=opt.time_limit_s, gap=opt.gap,
                           threads=opt.threads, fallback=True)
    where = ", ".join(sorted({f"{r} at {s} in {d.periods[p].label}" for r, s, _f, p in keys}))
    try:
        lp = solve(prob, lp_opt, mip=False)
    except SolverError:
        lp = None  # the plan stands as solved; the note says its fabric was not re-settled
    if lp is None or lp.status is not SolveStatus.OPTIMAL or lp.objective is None:
        for v, val, cat, lo, hi in saved:
            v.varValue, v.cat, v.lowBound, v.upBound = val, cat, lo, hi
        return [f"three-tier fabrics ({where}) could not be re-settled at their exact counts "
                "(the MILP's three-tier rows are a lower bound, and the LP with the fleet "
                "fixed found no plan): their exact power may exceed the site's grid or built "
                "capacity; check the power table, or give the site more grid or positions"]
    before = info.objective
    info.objective = lp.objective
    if bound is not None and info.objective:
        info.gap = max(0.0, (info.objective - bound) / info.objective)
    return [f"three-tier fabrics ({where}) re-settled at their exact counts (the MILP's "
            f"rows are a lower bound): {info.objective - before:,.0f} USD more, built "
            "capacity and grid requests raised to carry their power"
            + (f"; gap against the solver's bound {format_gap(info.gap)}"
               if info.gap is not None else "")]


def _exact_cost(result: PlanResult, tables: dict) -> None:
    """Report the plan's cost as recomputed from its fleet (exact fabric counts).

    Three-tier fabrics are a lower bound in the MILP
    (:func:`~dcplan.planner.network_rows.add_fabrics`), so the plan's exact cost can be
    above the solver's objective; the solver's bound stays a valid lower bound, so the
    gap is taken against the exact cost and a note says by how much they differ.
    """
    costs = tables.get("costs")
    if costs is None or not len(costs) or result.objective_usd is None:
        return
    exact = float(costs.cost_usd_discounted.sum())
    obj = result.objective_usd
    if exact <= obj * (1 + 1e-9) + 1e-6:
        return
    if result.gap is not None:
        bound = obj * (1 - result.gap)
        result.gap = max(0.0, (exact - bound) / exact) if exact else 0.0
    result.notes.append(
        f"the plan's cost recomputed from its fleet (the costs table: switches and links at "
        f"their exact counts, three-tier pods included) is {exact - obj:,.0f} USD "
        f"({(exact - obj) / exact:.3%}) above the solver's objective; NPV and gap are the "
        f"recomputed ones (gap {result.gap:.3%})" if result.gap is not None
        else "the plan's cost recomputed from its fleet (the costs table) is above the "
        "solver's objective: NPV is the recomputed cost")
    result.objective_usd = exact


def infeasible_reason(d: PlanInputs) -> str:
    """Why a plan is infeasible even with unserved demand allowed, as far as the inputs say.

    Unserved demand relaxes every demand row, so what is left are the existing fleet
    (it must fit each site's space, and its idle power the site's grid) and the budget.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.

    Returns
    -------
    str
        One message naming the existing fleet's space [positions] or idle power [MW]
        against the site's, or the budget.
    """
    why = []
    for s, sd in d.sites.items():
        for p, per in enumerate(d.periods):
            racks = {r: d.existing_count(r, s, p) for r in d.racks}
            pos = sum(n * d.racks[r].rack_positions for r, n in racks.items())
            if pos > sd.rack_positions:
                why.append(f"the existing fleet at {s} needs {pos:,} rack positions in "
                           f"{per.label}, the site has {sd.rack_positions:,}")
                break
            idle = sum(n * d.racks[r].it_power_idle_kw for r, n in racks.items())
            if idle > sd.grid_kw[p] + 1e-6:
                why.append(f"the existing fleet at {s} draws at least {idle / 1000:,.1f} MW "
                           f"idle in {per.label}, the grid gives {sd.grid_kw[p] / 1000:,.1f} MW")
                break
    if any(b is not None for b in d.budget_usd):
        why.append("the capex budget (budget_usd) may be too small for what must be built")
    if why:
        return ("no plan exists even with unserved demand allowed: " + "; ".join(why)
                + "; fix the scenario's existing_fleet, sites or budget")
    return ("no plan exists even with unserved demand allowed, and neither the existing "
            "fleet nor a budget explains it; this is likely a dcplan bug: rerun with "
            "--write-lp model.lp and report it")


def solve_case(scenario: Any, *, catalog_dir: Path | str | None = None,
               sites_dir: Path | str | None = None, calibration: Any = None,
               solver: str | None = None, time_limit_s: float | None = None,
               gap: float | None = None, threads: int | None = None, solver_log: bool | None = None,
               explain: bool = True, size: bool = True,
               write_lp: Path | str | None = None,
               write_mps: Path | str | None = None,
               progress: Callable[[str], None] | None = None,
               on_solve: Callable[[SolveProgress], None] | None = None) -> PlanResult:
    """Plan the fleet of a scenario.

    Parameters
    ----------
    scenario : Case, path or Scenario
        A :class:`~dcplan.case.Case` from :func:`~dcplan.case.load_case` (nothing is
        read again), or a scenario file or :class:`~dcplan.scenario.Scenario` to load
        with ``catalog_dir``, ``sites_dir`` and ``calibration``.
    catalog_dir, sites_dir, calibration : optional
        Passed to :func:`~dcplan.case.load_case` when ``scenario`` is not a Case.
        ``calibration`` given with a Case replaces the case's.
    solver, time_limit_s, gap, threads, solver_log : optional
        Override the scenario's solver options (:class:`~dcplan.scenario.SolverOptions`).
    explain : bool
        Compute shadow prices.
    size : bool
        Size the exact network and cooling of the solved fleet in every period and set
        them beside the plan's own figures (table ``sizing``); list its equipment
        (table ``equipment``: switches by tier and model, transceivers by type, NICs,
        the cooling model's CDUs, heat rejection, UPS and generators). Whatever
        ``size`` says, the cooling table's CDU columns are the cooling model's for the
        fleet in service (:func:`~dcplan.planner.cdus.cdu_answer`), the MILP's beside
        them.
    write_lp : path, optional
        Write the MILP in LP format.
    write_mps : path, optional
        Write the MILP in MPS format, as built and scaled as HiGHS receives it
        (:func:`~dcplan.planner.highs.write_model_files`).
    progress : callable, optional
        Receives one-line progress messages.
    on_solve : callable, optional
        Receives :class:`~dcplan.planner.solver.SolveProgress` while the MIP solves.

    Returns
    -------
    PlanResult
        Never raises for infeasible demand: check ``result.ok`` / ``result.unserved``.
        ``result.case`` is the case it was solved from.

    Raises
    ------
    InputError
        For a bad scenario, catalog or site file.
    SolverError
        When the solver itself fails.
    """
    from dcplan.case import Case, load_case

    say = progress or (lambda _m: None)
    t0 = time.perf_counter()
    if isinstance(scenario, Case):
        case = scenario if calibration is None else scenario.with_calibration(
            _calibration(calibration, scenario))
    else:
        say("loading scenario, catalogs and sites")
        case = load_case(scenario, catalog_dir=catalog_dir, sites_dir=sites_dir,
                         calibration=calibration)
    opt = case.scenario.solver.updated(name=solver, time_limit_s=time_limit_s, gap=gap,
                                       threads=threads, log=solver_log)
    d = prepare_inputs(case, progress=progress, solver=opt)
    prep = time.perf_counter() - t0

    def first_stage() -> PlanInputs:
        say("preparing the linear network's first stage")
        return prepare_inputs(case.with_network_model("linear"), progress=progress,
                              solver=opt)

    result = solve_inputs(d, opt, explain=explain, write_lp=write_lp, write_mps=write_mps,
                          progress=progress, on_solve=on_solve, first_stage=first_stage)
    result.name = case.name
    result.case = case
    result.unserved_accepted = case.scenario.allow_unserved
    if result.status.has_solution:
        from dcplan.planner.cdus import cdu_answer

        result.tables["cooling"], notes = cdu_answer(case, d, result.tables)
        result.notes += notes
    if size and result.status.has_solution:
        from dcplan.planner.sizing import bom_table, sizing_table

        t1 = time.perf_counter()
        say("sizing the exact network and cooling of the chosen fleet")
        result.tables["sizing"], result.tables["equipment"], notes = sizing_table(
            case, d, result.tables, periods="all")
        result.tables["bom"] = bom_table(result.tables["equipment"], result.tables["fleet"],
                                         [p.label for p in d.periods],
                                         {r: rd.capex_usd for r, rd in d.racks.items()})
        result.notes += notes
        result.timings_s["sizing"] = time.perf_counter() - t1
    result.timings_s["prepare"] = prep
    result.timings_s["total"] = time.perf_counter() - t0
    return result


def _calibration(calibration: Any, case: Any) -> Any:
    """A calibration object from a path (checked against the case's accelerators)."""
    from dcplan.perf.params import NO_CALIBRATION

    if str(calibration) == NO_CALIBRATION:
        return NO_CALIBRATION
    if isinstance(calibration, str | Path):
        from dcplan.perf.params import load_calibration

        return load_calibration(calibration,
                                known_accelerators=case.catalog.entries.get("accelerators", {}))
    return calibration
