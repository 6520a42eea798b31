"""Solving: HiGHS (highspy, through pulp) by default, CBC on request or as fallback.

Options are :class:`dcplan.scenario.SolverOptions` (the scenario's ``solver:`` section,
changed by command-line options with :meth:`~dcplan.scenario.SolverOptions.updated`).
An exception raised inside a solver is reported as :class:`SolverError` (what it is),
never hidden behind a fallback whose result would blame the input.

A plan stopped by the time limit before reaching the requested gap is reported as
:attr:`SolveStatus.FEASIBLE` with its gap, never as optimal. :attr:`SolveStatus.OPTIMAL`
means "optimal within the requested gap"; :func:`is_proven_optimal` and
:func:`status_text` say whether that gap is (numerically) zero and word the outcome
honestly for people.

Interrupts (:mod:`dcplan.planner.interrupt`): Ctrl-C (SIGINT), SIGTERM or
:func:`~dcplan.planner.interrupt.request_interrupt` stop a solve at once and raise
:class:`KeyboardInterrupt` (whatever the signal's own handler raises, e.g. the command
line's ``Terminated``): never a fallback to another solver, never a plan. While HiGHS
runs (:func:`~dcplan.planner.interrupt.interruptible`) a signal only sets a flag that
HiGHS's interrupt callbacks read (a handler raising inside a callback would unwind
through HiGHS, which then reports "Solve error"); the exception is raised once HiGHS has
returned. A CBC process is killed and its files removed. A stop at the time limit is
never an interrupt, nor the other way round.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import pulp

from dcplan.scenario.highs_options import quiet_stdout
from dcplan.scenario.schema import SolverOptions

#: Models at least this large get the rounded-relaxation start by default.
MIP_START_MIN_VARIABLES = 20_000
#: A relative gap at or below this counts as a proven optimum [-].
PROVEN_GAP = 1e-6


class SolverError(RuntimeError):
    """A solver raised an exception of its own (a bug, or a model it cannot handle).

    Parameters
    ----------
    solver : str
        "highs" or "cbc".
    exc : BaseException
        What it raised.
    """

    def __init__(self, solver: str, exc: BaseException):
        self.solver = solver
        self.cause = exc
        super().__init__(f"the {solver.upper() if solver == 'cbc' else 'HiGHS'} solver failed "
                         f"inside ({type(exc).__name__}: {exc}); this is a solver or dcplan "
                         "bug, or a model too extreme to solve: check the scenario's sizes "
                         "and prices, or try --solver cbc")


class SolveStatus(str, Enum):
    """Outcome of a solve."""

    OPTIMAL = "optimal"            #: proven optimal within the requested gap
    FEASIBLE = "feasible"          #: a plan, but the gap was not closed (time limit)
    INFEASIBLE = "infeasible"      #: no plan meets every constraint
    UNBOUNDED = "unbounded"
    NOT_SOLVED = "not_solved"      #: stopped without any plan (time limit, error)

    @property
    def has_solution(self) -> bool:
        """Whether variable values are available."""
        return self in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE)


@dataclass
class SolveInfo:
    """What the solver reported.

    Attributes
    ----------
    status : SolveStatus
    objective : float or None
        [USD, present value].
    gap : float or None
        Relative gap between the plan and the best bound; None when unknown (CBC).
    solver : str
        Solver that produced the result.
    runtime_s : float
        Wall-clock solve time [s].
    message : str
        Human-readable detail (fallback used, time limit hit...).
    time_limit_hit : bool
        The solver stopped at its time limit (with or without a plan).
    bound : float or None
        HiGHS's best proven lower bound on the objective of ``prob`` [USD, present
        value] (its MIP dual bound, in the model's units); None when unknown (CBC, no
        plan).
    """

    status: SolveStatus
    objective: float | None
    gap: float | None
    solver: str
    runtime_s: float
    message: str = ""
    time_limit_hit: bool = False
    bound: float | None = None

    @property
    def proven_optimal(self) -> bool:
        """Optimal with a relative gap of at most :data:`PROVEN_GAP`."""
        return is_proven_optimal(self.status, self.gap)


def is_proven_optimal(status: SolveStatus, gap: float | None) -> bool:
    """Whether a solve outcome is a proven optimum.

    Parameters
    ----------
    status : SolveStatus
    gap : float or None
        Relative gap reached [-]; None when the solver does not report it (CBC).

    Returns
    -------
    bool
        True only for :attr:`SolveStatus.OPTIMAL` with a known gap of at most
        :data:`PROVEN_GAP`.
    """
    return status is SolveStatus.OPTIMAL and gap is not None and gap <= PROVEN_GAP


def format_gap(gap: float) -> str:
    """A relative gap as a percentage, rounded up, never down [%].

    Two decimals from 1 % up, three below (0.013 % stays 0.013 %, not 0.01 %), so a
    statement such as "no plan is more than X cheaper" stays true as printed.

    Parameters
    ----------
    gap : float
        Relative gap ``(plan - bound) / plan`` [-].

    Returns
    -------
    str
        e.g. ``0.013%`` [%].
    """
    pct = max(gap, 0.0) * 100.0
    dec = 2 if pct >= 1.0 else 3
    scale = 10 ** dec
    return f"{math.ceil(pct * scale - 1e-9) / scale:.{dec}f}%"


def excess_over_optimum(gap: float) -> float:
    """How much more than the optimum a plan with relative gap ``gap`` may cost [-].

    The gap is ``(plan - bound) / plan``; the optimum is at least the bound, so the
    plan is at most ``plan / bound - 1 = gap / (1 - gap)`` above it.

    Parameters
    ----------
    gap : float
        Relative gap ``(plan - bound) / plan`` [-].

    Returns
    -------
    float
        ``gap / (1 - gap)``; infinite for a gap of 1 or more [-].
    """
    return gap / (1.0 - gap) if gap < 1.0 else math.inf


def status_text(status: SolveStatus, gap: float | None, solver: str = "",
                unserved: bool = False) -> str:
    """Honest one-line wording of a solve outcome, for people.

    Parameters
    ----------
    status : SolveStatus
    gap : float or None
        Relative gap reached [-]; None when unknown.
    solver : str
        "highs" or "cbc" (CBC never reports its bound).
    unserved : bool
        The plan is the elastic one: some demand is left unserved at the penalty.

    Returns
    -------
    str
        "optimal" only for a proven optimum (gap <= :data:`PROVEN_GAP`); "optimal
        within the 0.27% gap: no plan is more than 0.27% cheaper" for a positive gap;
        "solver reported optimal; gap not reported by CBC" when the gap is unknown;
        "NOT PROVEN OPTIMAL ..." for a plan stopped by the time limit; "no plan: ..."
        without one. Elastic plans start with "demand NOT fully met (elastic plan)".
    """
    if not status.has_solution:
        return f"no plan: {status.value.replace('_', ' ')}"
    if status is SolveStatus.OPTIMAL:
        if is_proven_optimal(status, gap):
            text = "optimal"
        elif gap is not None:
            text = (f"optimal within the {format_gap(gap)} gap: no plan is more than "
                    f"{format_gap(gap)} cheaper")
        elif solver == "cbc":
            text = "solver reported optimal; gap not reported by CBC"
        else:
            text = "solver reported optimal; gap unknown"
    elif gap is not None:
        text = (f"NOT PROVEN OPTIMAL (stopped by the time limit): the plan may cost up to "
                f"{format_gap(excess_over_optimum(gap))} more than the optimum")
    else:
        text = ("NOT PROVEN OPTIMAL (stopped by the time limit): gap not reported"
                + (" by CBC" if solver == "cbc" else ""))
    if unserved:
        return ("demand NOT fully met (elastic plan); cheapest plan with priced unserved "
                f"demand: {text}")
    return text


def _kill_children(exc: BaseException) -> None:
    """Kill the child processes (``subprocess.Popen``) an exception unwound through."""
    seen: set[int] = set()
    tb = exc.__traceback__
    while tb is not None:
        for value in list(tb.tb_frame.f_locals.values()):
            if not isinstance(value, subprocess.Popen) or id(value) in seen:
                continue
            seen.add(id(value))
            try:
                if value.poll() is None:
                    value.kill()
                    value.wait()
            except Exception:  # noqa: BLE001 - half-made (interrupted in Popen()) or gone
                pass
        tb = tb.tb_next


def _use_start(prob: pulp.LpProblem, opt: SolverOptions, rounding) -> bool:
    if rounding is None or opt.mip_start is False:
        return False
    return bool(opt.mip_start) or prob.numVariables() >= MIP_START_MIN_VARIABLES


@dataclass(frozen=True)
class SolveProgress:
    """Where a running MIP solve stands (what HiGHS reports through its callbacks).

    Attributes
    ----------
    elapsed_s : float
        Solver run time so far [s].
    incumbent_usd : float or None
        Objective of the best plan found so far [USD, present value]; None before one.
    bound_usd : float or None
        Best proven lower bound on the objective [USD, present value].
    gap : float or None
        Relative gap between them [-].
    stage : str
        What is being solved when it is not the plan's cost ('' for the cost): then the
        objective is in other units, and ``incumbent_usd`` and ``bound_usd`` are None
        (e.g. "least shortfall", the first stage of an elastic plan, which minimises
        unserved tokens).
    """

    elapsed_s: float
    incumbent_usd: float | None
    bound_usd: float | None
    gap: float | None
    stage: str = ""


#: Shortest interval between two progress reports [s].
PROGRESS_INTERVAL_S = 0.25


def _progress_callback(solver: Any, report: Callable[[SolveProgress], None] | None,
                       on_incumbent: Callable[[Any], None] | None = None) -> tuple:
    """A HiGHS callback (and its user data) that reports :class:`SolveProgress`.

    ``on_incumbent`` receives each improving plan's column values in the model's units
    (indexed by the variables' ``index``, which the bulk driver sets).
    """
    state = {"last": -1.0}

    def finite(x: float) -> float | None:
        return x if x is not None and math.isfinite(x) else None

    import highspy

    kinds = highspy.cb.HighsCallbackType
    improving_kind = int(kinds.kCallbackMipImprovingSolution)

    def callback(cb_type, message, data_out, data_in, user_data):  # noqa: ARG001
        t = float(data_out.running_time)
        improving = int(cb_type) == improving_kind
        if improving and on_incumbent is not None:
            try:
                import numpy as np

                x = np.array(data_out.mip_solution, dtype=float)
                cs = getattr(solver, "_cs", None)
                if cs is not None and len(cs) == len(x):
                    on_incumbent(x * cs)
            except Exception:  # noqa: BLE001 - a listener must never stop the solver
                pass
        if not improving and t - state["last"] < PROGRESS_INTERVAL_S:
            return
        state["last"] = t
        osc = getattr(solver, "_osc", 1.0) or 1.0  # the driver's objective scale
        inc, bound = finite(data_out.mip_primal_bound), finite(data_out.mip_dual_bound)
        gap = finite(data_out.mip_gap)
        progress = SolveProgress(t, None if inc is None else inc / osc,
                                 None if bound is None else bound / osc,
                                 gap if inc is not None else None)
        try:
            if report is not None:
                report(progress)
        except Exception:  # noqa: BLE001 - a display must never stop the solver
            pass

    return callback, None


def _highs(prob: pulp.LpProblem, opt: SolverOptions, mip: bool, rounding=None,
           on_progress: Callable[[SolveProgress], None] | None = None,
           start: dict | None = None,
           on_incumbent: Callable[[Any], None] | None = None) -> SolveInfo:
    import highspy

    from dcplan.planner.highs import HighsDirect

    # Small models keep pulp's own HiGHS interface (the exact solver path their
    # regression values were recorded with); large ones get the scaled bulk driver.
    direct = opt.scale and prob.numVariables() >= MIP_START_MIN_VARIABLES
    extra: dict[str, Any] = {}
    if (on_progress is not None or on_incumbent is not None) and mip:
        kinds = highspy.cb.HighsCallbackType
        extra["callbacksToActivate"] = [kinds.kCallbackMipImprovingSolution,
                                        kinds.kCallbackMipInterrupt]
    solver = HighsDirect(mip=mip, msg=opt.log, gapRel=opt.gap, timeLimit=opt.time_limit_s,
                         threads=opt.threads, random_seed=0, scale=direct, bulk=direct,
                         rounding=rounding if _use_start(prob, opt, rounding) else None,
                         start=start if mip else None, **extra, **opt.highs_options)
    if extra:
        solver.callbackTuple = _progress_callback(solver, on_progress, on_incumbent)
    t0 = time.perf_counter()
    with quiet_stdout(not opt.log):
        prob.solve(solver)
    dt = time.perf_counter() - t0
    h = prob.solverModel
    name, mip_gap, has_sol = solver.outcome(prob)
    ms = h.getModelStatus()
    S = highspy.HighsModelStatus
    has_int = mip and any(v.cat == pulp.LpInteger for v in prob.variables())
    gap = mip_gap if has_int else 0.0
    bound = _dual_bound(solver, prob, has_sol) if has_int else None
    if name == "Optimal":
        return SolveInfo(SolveStatus.OPTIMAL, pulp.value(prob.objective), gap, "highs", dt,
                         bound=bound)
    if ms in (S.kInfeasible,):
        return SolveInfo(SolveStatus.INFEASIBLE, None, None, "highs", dt)
    if ms in (S.kUnbounded, S.kUnboundedOrInfeasible):
        # HiGHS cannot always tell which; our objective is bounded below by construction.
        return SolveInfo(SolveStatus.INFEASIBLE, None, None, "highs", dt,
                         "HiGHS: unbounded or infeasible")
    # The staged driver stops a MIP on the wall clock through HiGHS's interrupt: a time
    # limit. Any other interrupt is the user's (interruptible() raised it already).
    clock = getattr(solver, "wall_limit_hit", False)
    if ms == S.kInterrupt and not clock:
        raise KeyboardInterrupt
    limits = (S.kTimeLimit, S.kInterrupt)
    if ms in (*limits, S.kIterationLimit, S.kSolutionLimit) and has_int and has_sol:
        return SolveInfo(SolveStatus.FEASIBLE, pulp.value(prob.objective), gap, "highs", dt,
                         f"stopped by the time limit at gap {format_gap(gap)}",
                         time_limit_hit=True, bound=bound)
    if ms in limits:
        return SolveInfo(SolveStatus.NOT_SOLVED, None, None, "highs", dt,
                         f"HiGHS reached the time limit ({opt.time_limit_s:g} s) without a "
                         "plan; raise the time limit", time_limit_hit=True)
    return SolveInfo(SolveStatus.NOT_SOLVED, None, None, "highs", dt,
                     f"HiGHS stopped: {name}")


def _dual_bound(solver: Any, prob: pulp.LpProblem, has_sol: bool) -> float | None:
    """HiGHS's MIP dual bound in the model's units [USD], or None.

    Taken as the plan's objective less HiGHS's own primal-dual difference, so that it
    holds whatever objective constant or scale the interface passed to HiGHS.
    """
    final = getattr(solver, "_final", None)
    osc = getattr(solver, "_osc", 1.0) or 1.0
    obj = pulp.value(prob.objective) if has_sol else None
    if obj is None:
        return None
    if final:
        return obj - (final["objective"] - final["bound"]) / osc
    info = prob.solverModel.getInfo()
    primal, dual = float(info.objective_function_value), float(info.mip_dual_bound)
    if not (math.isfinite(primal) and math.isfinite(dual)):
        return None
    return obj - max(0.0, primal - dual) / osc


def _cbc(prob: pulp.LpProblem, opt: SolverOptions, mip: bool) -> SolveInfo:
    with warnings.catch_warnings():
        # The CBC bundled with pulp is the one available without a system install.
        warnings.simplefilter("ignore", DeprecationWarning)
        solver = pulp.PULP_CBC_CMD(mip=mip, msg=opt.log, gapRel=opt.gap,
                                   timeLimit=opt.time_limit_s, threads=opt.threads,
                                   options=["randomSeed 1"])
    # Its own folder for pulp's model and solution files: removed whatever happens.
    solver.tmpDir = tempfile.mkdtemp(prefix="dcplan-cbc-")
    t0 = time.perf_counter()
    try:
        prob.solve(solver)
    except Exception as exc:  # noqa: BLE001 - reported as what it is
        raise SolverError("cbc", exc) from exc
    except BaseException as exc:  # Ctrl-C, SIGTERM: CBC must not run on without us
        _kill_children(exc)
        raise
    finally:
        shutil.rmtree(solver.tmpDir, ignore_errors=True)
    dt = time.perf_counter() - t0
    st, sol = prob.status, prob.sol_status
    if st == pulp.LpStatusOptimal and sol == pulp.LpSolutionOptimal:
        return SolveInfo(SolveStatus.OPTIMAL, pulp.value(prob.objective), 0.0 if not mip else None,
                         "cbc", dt)
    if sol == pulp.LpSolutionIntegerFeasible:
        return SolveInfo(SolveStatus.FEASIBLE, pulp.value(prob.objective), None, "cbc", dt,
                         "CBC stopped by the time limit; gap unknown", time_limit_hit=True)
    if st == pulp.LpStatusInfeasible:
        return SolveInfo(SolveStatus.INFEASIBLE, None, None, "cbc", dt)
    if st == pulp.LpStatusUnbounded:
        return SolveInfo(SolveStatus.UNBOUNDED, None, None, "cbc", dt)
    return SolveInfo(SolveStatus.NOT_SOLVED, None, None, "cbc", dt,
                     f"CBC stopped: {pulp.LpStatus[st]}")


def solve(prob: pulp.LpProblem, options: SolverOptions | None = None, mip: bool = True,
          rounding=None, on_progress: Callable[[SolveProgress], None] | None = None,
          start: dict | None = None,
          on_incumbent: Callable[[Any], None] | None = None) -> SolveInfo:
    """Solve ``prob`` in place (variable values and duals are set on it).

    Parameters
    ----------
    prob : pulp.LpProblem
    options : SolverOptions, optional
    mip : bool
        False solves the LP relaxation (integers as continuous).
    rounding : optional
        Rounded-relaxation start (see :mod:`dcplan.planner.start`).
    on_progress : callable, optional
        Called with a :class:`SolveProgress` when HiGHS finds a better plan and about
        every :data:`PROGRESS_INTERVAL_S` seconds while it works on the MIP (HiGHS only).
    start : dict, optional
        ``pulp.LpVariable -> value``: a (partial) MIP start for HiGHS, which fixes the
        given integers, solves for the rest and keeps the plan as its first incumbent if
        it is feasible (ignored by CBC and with ``rounding``).
    on_incumbent : callable, optional
        Called with the column values of each improving plan HiGHS finds, in the
        model's units, indexed by the variables' ``index`` (set by the bulk driver,
        :class:`~dcplan.planner.highs.HighsDirect`: with ``start`` or a large model).

    Returns
    -------
    SolveInfo
        With CBC's result when HiGHS stopped without a plan for a reason other than
        the time limit and ``options.fallback`` is set; the message says so. CBC then
        gets only the time left of ``options.time_limit_s`` [s]; a HiGHS run that used
        up the time limit is not retried (CBC is slower, so it would only double the
        wall time).

    Raises
    ------
    SolverError
        When the solver itself raises an exception (never retried with another
        solver, so that its result cannot be mistaken for an answer about the input).
    KeyboardInterrupt
        On Ctrl-C, SIGTERM (whatever its handler raises) or
        :func:`~dcplan.planner.interrupt.request_interrupt`,
        as soon as the solver has stopped; never retried with CBC.
    """
    opt = options or SolverOptions()
    t0 = time.perf_counter()
    if opt.name == "cbc":
        return _cbc(prob, opt, mip)
    try:
        extra = {k: v for k, v in (("start", start), ("on_incumbent", on_incumbent))
                 if v is not None}
        info = _highs(prob, opt, mip, rounding, on_progress, **extra)
    except SolverError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported as what it is
        raise SolverError("highs", exc) from exc
    if info.status is not SolveStatus.NOT_SOLVED or not opt.fallback or info.time_limit_hit:
        return info
    why = info.message
    left = opt.time_limit_s - (time.perf_counter() - t0)
    if left <= 0:
        info.message = f"{why}; no time left for the CBC fallback"
        return info
    spent = time.perf_counter() - t0
    info = _cbc(prob, opt.updated(time_limit_s=left), mip)
    info.runtime_s += spent
    info.message = (f"{why}; fell back to CBC with the {left:.0f} s left. "
                    f"{info.message}").strip()
    return info
