"""HiGHS driver for pulp problems: bulk model transfer, scaling, MIP start.

pulp's own HiGHS interface adds one column and one row at a time from Python and
hands HiGHS the problem in the model's units (tokens/s rows with coefficients of
1e6 and right-hand sides of 1e8, costs in USD up to 1e7). HiGHS scales the LP for
the simplex, but its MIP solver (cuts, heuristics, feasibility tolerances) works on
the problem as given, and on these units it spends most of its time in numerically
hard cut separation. This driver

- passes the whole model at once (CSR arrays) instead of row by row;
- scales every row, every continuous column and the objective by powers of two
  (geometric-mean equilibration; integer columns are never scaled, so
  integrality is unchanged) and maps values, duals and the objective back, so
  the pulp problem sees the same numbers in its own units as with pulp's interface;
- optionally passes a MIP start (values of some or all variables) that HiGHS
  completes and uses as its first incumbent.

The optimum is the same problem's optimum: scaling by powers of two is exact in
floating point, and only the tolerances (absolute in the scaled units) change.

Every run of HiGHS (pulp's interface for small models too) watches for interrupts:
its simplex, IPM and MIP interrupt callbacks stop it when one is pending
(:func:`dcplan.planner.interrupt.interruptible`), and :class:`KeyboardInterrupt` is raised
as soon as it returns, before any further stage.
"""

from __future__ import annotations

import math
import threading
from pathlib import Path

import numpy as np
import pulp
from pulp import constants as const

from dcplan.planner.interrupt import interrupt_requested, interruptible, request_interrupt


def _pow2(x: np.ndarray) -> np.ndarray:
    """Nearest power of two of positive ``x`` (1 where ``x`` is not positive/finite)."""
    out = np.ones_like(x)
    ok = np.isfinite(x) & (x > 0)
    out[ok] = np.exp2(np.round(np.log2(x[ok])))
    return out


def equilibrate(start: np.ndarray, index: np.ndarray, value: np.ndarray, n_col: int,
                scalable: np.ndarray, passes: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """Row and column scale factors (powers of two) that bring ``|a_ij|`` towards 1.

    Geometric-mean scaling: alternately divide each row and each scalable column by
    ``sqrt(min |a| * max |a|)``.

    Parameters
    ----------
    start, index, value : arrays
        Row-wise (CSR) matrix: row starts and column indices [-], coefficients [in the
        model's units].
    n_col : int
        Columns of the matrix [count].
    scalable : bool array
        Columns that may be scaled (continuous ones) [-].
    passes : int
        Row-then-column passes [count].

    Returns
    -------
    row_scale, col_scale : arrays
        Scaled matrix ``a'_ij = row_scale_i * a_ij * col_scale_j`` (powers of two) [-].
    """
    n_row = len(start) - 1
    rows = np.repeat(np.arange(n_row), np.diff(start))
    mag = np.abs(value)
    keep = mag > 0
    rows, cols, mag = rows[keep], index[keep], mag[keep]
    r = np.ones(n_row)
    c = np.ones(n_col)
    if not len(mag):
        return r, c
    logm = np.log2(mag)
    for _ in range(passes):
        cur = logm + np.log2(r)[rows] + np.log2(c)[cols]
        hi = np.full(n_row, -np.inf)
        lo = np.full(n_row, np.inf)
        np.maximum.at(hi, rows, cur)
        np.minimum.at(lo, rows, cur)
        has = np.isfinite(hi)
        r[has] *= np.exp2(np.round(-(hi[has] + lo[has]) / 2))
        cur = logm + np.log2(r)[rows] + np.log2(c)[cols]
        hi = np.full(n_col, -np.inf)
        lo = np.full(n_col, np.inf)
        np.maximum.at(hi, cols, cur)
        np.minimum.at(lo, cols, cur)
        has = np.isfinite(hi) & scalable
        c[has] *= np.exp2(np.round(-(hi[has] + lo[has]) / 2))
    return r, c


#: The ``threads`` option of the last HiGHS run in each thread of this process.
_LAST_THREADS = threading.local()


def _scheduler_for(h) -> None:
    """Let HiGHS run with its ``threads`` option even if an earlier run used another.

    HiGHS starts one task scheduler per calling thread at its first run, sized by that
    run's ``threads``; a later run asking for another count fails at once (model status
    "Not Set", "global scheduler has already been initialized"), which the solver
    driver would report as a HiGHS failure and answer with CBC. When the count differs
    from the last run's in this thread, the thread's scheduler is shut down first
    (``Highs.resetGlobalScheduler``) and the next run starts one of the size asked.
    Runs in the same thread are sequential, so no run is in flight when it is reset.

    Parameters
    ----------
    h : highspy.Highs
        The instance about to run (its ``threads`` option is read).
    """
    import highspy

    _status, threads = h.getOptionValue("threads")
    last = getattr(_LAST_THREADS, "value", None)
    if last is not None and last != threads:
        highspy.Highs.resetGlobalScheduler(True)
    _LAST_THREADS.value = threads


class HighsDirect(pulp.HiGHS):
    """pulp's HiGHS solver with bulk model transfer, scaling and a MIP start.

    Parameters
    ----------
    scale : bool
        Scale rows, continuous columns and the objective (see the module docstring).
    start : dict, optional
        ``pulp.LpVariable -> value``: a (partial) MIP start; HiGHS fixes the given
        integer values, solves for the rest and keeps the result if it is feasible.
    **kwargs
        As for :class:`pulp.HiGHS` (``msg``, ``timeLimit``, ``gapRel``, ``threads``,
        HiGHS options by name).
    rounding : optional
        Object with ``margins`` (constraint -> tightening) and ``values()`` (integer
        variable -> value from the variables' current values), e.g.
        :class:`dcplan.planner.start.RoundingStart`: before the MIP, the LP
        relaxation with those constraints tightened is solved and ``values()`` of its
        solution is passed as a MIP start. ``start_info`` then holds what happened.
    """

    def __init__(self, *args, scale: bool = True, start: dict | None = None,
                 rounding=None, bulk: bool = True, names: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.bulk = bulk
        #: Pass the variables' and rows' names too (for writing the model to a file).
        self.names = names
        self.scale = scale
        self.start = start or {}
        self.rounding = rounding
        self.start_info: dict = {}
        #: The last run stopped at its stage's wall-clock limit (a time limit, not a
        #: user's interrupt, though HiGHS reports both as "Interrupted by user").
        self.wall_limit_hit = False

    def buildSolverModel(self, lp: pulp.LpProblem) -> None:  # noqa: N802 - pulp API
        """Pass the (scaled) model to HiGHS in one call (``bulk``), else as pulp does.

        Parameters
        ----------
        lp : pulp.LpProblem
            The problem being solved.
        """
        import highspy

        if not self.bulk and self.rounding is None and not self.start:
            self._rs = self._cs = None
            self._osc = 1.0
            self._integer = np.zeros(0, dtype=bool)
            super().buildSolverModel(lp)
            return

        inf = highspy.kHighsInf
        variables = lp.variables()
        n = len(variables)
        pos = {id(v): i for i, v in enumerate(variables)}
        for i, v in enumerate(variables):
            v.index = i
        lower = np.array([-inf if v.lowBound is None else v.lowBound for v in variables],
                         dtype=float)
        upper = np.array([inf if v.upBound is None else v.upBound for v in variables],
                         dtype=float)
        integer = np.array([v.cat == const.LpInteger and self.mip for v in variables],
                           dtype=bool)
        sense = -1.0 if lp.sense == const.LpMaximize else 1.0
        cost = np.zeros(n)
        for v, a in lp.objective.items():
            cost[pos[id(v)]] += sense * a
        offset = sense * float(lp.objective.constant or 0.0)

        cons = list(lp._constraints.values())
        starts = [0]
        idx: list[int] = []
        val: list[float] = []
        rlo = np.empty(len(cons))
        rup = np.empty(len(cons))
        for i, con in enumerate(cons):
            con.index = i
            for v, a in con.items():
                if a != 0:
                    idx.append(pos[id(v)])
                    val.append(a)
            starts.append(len(idx))
            lb, ub = con.getLb(), con.getUb()
            rlo[i] = -inf if lb is None else lb
            rup[i] = inf if ub is None else ub
        start = np.array(starts, dtype=np.int32)
        index = np.array(idx, dtype=np.int32)
        value = np.array(val, dtype=float)

        if self.scale:
            rs, cs = equilibrate(start, index, value, n, ~integer)
            obj_mag = np.abs(cost * cs)
            obj_mag = obj_mag[obj_mag > 0]
            osc = float(_pow2(np.array([1.0 / np.max(obj_mag)]))[0]) if len(obj_mag) else 1.0
        else:
            rs, cs, osc = np.ones(len(cons)), np.ones(n), 1.0
        self._rs, self._cs, self._osc, self._offset = rs, cs, osc, offset
        rows = np.repeat(np.arange(len(cons)), np.diff(start))
        h_lp = highspy.HighsLp()
        h_lp.num_col_ = n
        h_lp.num_row_ = len(cons)
        h_lp.col_cost_ = cost * cs * osc
        h_lp.offset_ = offset * osc
        with np.errstate(invalid="ignore"):
            h_lp.col_lower_ = np.where(np.isinf(lower), lower, lower / cs)
            h_lp.col_upper_ = np.where(np.isinf(upper), upper, upper / cs)
            h_lp.row_lower_ = np.where(np.isinf(rlo), rlo, rlo * rs)
            h_lp.row_upper_ = np.where(np.isinf(rup), rup, rup * rs)
        h_lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        h_lp.a_matrix_.num_col_ = n
        h_lp.a_matrix_.num_row_ = len(cons)
        h_lp.a_matrix_.start_ = start
        h_lp.a_matrix_.index_ = index
        h_lp.a_matrix_.value_ = value * rs[rows] * cs[index] if len(value) else value
        self._integer = integer
        if integer.any() and not (self.rounding is not None and self.mip):
            h_lp.integrality_ = [highspy.HighsVarType.kInteger if k
                                 else highspy.HighsVarType.kContinuous for k in integer]
        if self.names:
            h_lp.col_names_ = [v.name for v in variables]
            h_lp.row_names_ = [con.name for con in cons]
        lp.solverModel.passModel(h_lp)
        if self.start and self.mip and self.rounding is None:
            cols = [pos[id(v)] for v in self.start if id(v) in pos]
            vals = [x / cs[pos[id(v)]] for v, x in self.start.items() if id(v) in pos]
            if cols:
                lp.solverModel.setSolution(len(cols), np.array(cols, dtype=np.int32),
                                           np.array(vals, dtype=float))

    def callSolver(self, lp: pulp.LpProblem) -> None:  # noqa: N802 - pulp API
        """Run HiGHS; with ``rounding``, relaxation, rounding and sub-MIP first.

        1. the LP relaxation with ``rounding.margins`` tightened (interior point),
           rounded by ``rounding.values()``; by weak duality its duals give a valid
           lower bound on the untightened problem;
        2. a sub-MIP in ``rounding.neighbourhood()`` (the rounded plan is inside),
           started from the rounded plan, for at most ``rounding.sub_mip_frac`` of
           the time limit;
        3. if that plan is within the relative gap of the relaxation bound, it is
           the answer (proven within the gap by step 1); otherwise the full MIP is
           solved starting from it (not at all when no plan was found and the time
           limit has passed).

        Each MIP is also interrupted on the wall clock at its stage's limit
        (:meth:`_interrupt_at`): HiGHS times a MIP on a clock of its own run, not the
        one that adds up over runs.

        Parameters
        ----------
        lp : pulp.LpProblem
            The problem being solved (its ``solverModel`` built by
            :meth:`buildSolverModel`).
        """
        import time

        import highspy

        h = lp.solverModel
        self._final = None
        if self.rounding is None or not self.mip or not self._integer.any():
            self._interrupt_at(h, [math.inf])
            self._run(h)
            return
        t0 = time.perf_counter()
        limit = float(self.timeLimit) if self.timeLimit is not None else math.inf
        gap = float(self.gapRel) if self.gapRel is not None else 1e-4
        S = highspy.HighsModelStatus
        info = self.start_info

        def left() -> float:
            return max(1.0, limit - (time.perf_counter() - t0))

        stop_at = [math.inf]   # wall clock [s] at which the running MIP is interrupted

        def set_limit(seconds: float) -> None:
            # HiGHS (1.16) compares an LP's run time with the time limit on its run clock,
            # which adds up over runs, but a MIP's on a clock of its own run: the limit
            # is set for the first, and the MIP is interrupted on the wall clock. An
            # infinite limit clears the one an earlier stage set.
            h.setOptionValue("time_limit", float(h.getRunTime() + seconds)
                             if math.isfinite(seconds) else highspy.kHighsInf)
            stop_at[0] = time.perf_counter() + seconds

        self._interrupt_at(h, stop_at)

        # 1. tightened relaxation; its duals also bound the untightened one
        rows, lo, up, margins = [], [], [], []
        for con, margin in self.rounding.margins.items():
            i = getattr(con, "index", None)
            if i is None or not margin:
                continue
            lb, ub = con.getLb(), con.getUb()
            rows.append(i)
            lo.append(-highspy.kHighsInf if lb is None else lb)
            up.append(highspy.kHighsInf if ub is None else ub)
            margins.append(margin)
        rows_a = np.array(rows, dtype=np.int32)
        lo_a, up_a = np.array(lo, dtype=float), np.array(up, dtype=float)
        m = np.array(margins, dtype=float)
        rs = self._rs[rows_a] if len(rows_a) else np.ones(0)
        if len(rows_a):
            tlo = np.where(np.isfinite(lo_a), (lo_a + m) * rs, lo_a)
            tup = np.where(np.isfinite(up_a), (up_a - m) * rs, up_a)
            h.changeRowsBounds(len(rows_a), rows_a, np.minimum(tlo, tup), np.maximum(tup, tlo))
        h.setOptionValue("solver", "ipm")
        set_limit(left())
        self._run(h)
        h.setOptionValue("solver", "choose")
        start, box, bound = {}, {}, None
        if h.getModelStatus() == S.kOptimal:
            sol = h.getSolution()
            # Weak duality: the row duals y of the tightened LP are dual feasible for the
            # original LP (same matrix and costs), so its dual objective at the original
            # bounds, tightened objective - sum |y_i| * margin_i, is a valid lower bound.
            y = np.asarray(sol.row_dual, dtype=float)[rows_a] if len(rows_a) else np.ones(0)
            bound = h.getInfo().objective_function_value - float(np.sum(np.abs(y) * m * rs))
            x = np.asarray(sol.col_value, dtype=float) * self._cs
            for v in lp.variables():
                v.varValue = float(x[v.index])
            start = self.rounding.values()
            box = self.rounding.neighbourhood()
        if len(rows_a):
            h.changeRowsBounds(len(rows_a), rows_a,
                               np.where(np.isfinite(lo_a), lo_a * rs, lo_a),
                               np.where(np.isfinite(up_a), up_a * rs, up_a))
        info["relaxation_s"] = time.perf_counter() - t0
        info["rounded_s"] = time.perf_counter() - t0
        cols = np.flatnonzero(self._integer).astype(np.int32)
        h.changeColsIntegrality(len(cols), cols,
                                np.full(len(cols), int(highspy.HighsVarType.kInteger),
                                        dtype=np.uint8))
        start.update(self.start)

        def give(values: dict) -> None:
            idx = np.array([v.index for v in values], dtype=np.int32)
            val = np.array([x / self._cs[v.index] for v, x in values.items()], dtype=float)
            h.setSolution(len(idx), idx, val)

        best = None
        if start:
            give(start)
            # 3. sub-MIP around the rounded plan
            frac = getattr(self.rounding, "sub_mip_frac", 0.25)
            bidx = np.array([v.index for v in box], dtype=np.int32)
            blo = np.array([b[0] / self._cs[v.index] for v, b in box.items()], dtype=float)
            bup = np.array([b[1] / self._cs[v.index] for v, b in box.items()], dtype=float)
            old_lo = np.array([-highspy.kHighsInf if v.lowBound is None
                               else v.lowBound / self._cs[v.index] for v in box])
            old_up = np.array([highspy.kHighsInf if v.upBound is None
                               else v.upBound / self._cs[v.index] for v in box])
            if len(bidx):
                h.changeColsBounds(len(bidx), bidx, blo, bup)
            h.setOptionValue("mip_rel_gap", gap / 4)
            set_limit(min(left(), max(1.0, frac * limit)) if math.isfinite(limit) else 60.0)
            self._run(h)
            if h.getInfo().primal_solution_status == 2:
                best = (h.getInfo().objective_function_value, h.getSolution())
                info["sub_mip_objective"] = best[0] / self._osc
            h.setOptionValue("mip_rel_gap", gap)
            if len(bidx):
                h.changeColsBounds(len(bidx), bidx, old_lo, old_up)
        info["sub_mip_s"] = time.perf_counter() - t0
        # 4. done, or the full MIP from the best plan found
        if best is not None and bound is not None:
            reached = (best[0] - bound) / max(abs(best[0]), 1e-9)
            if reached <= gap:
                self._final = {"objective": best[0], "bound": bound, "gap": max(0.0, reached),
                               "solution": best[1]}
                info["seconds"] = time.perf_counter() - t0
                return
            h.setSolution(best[1])
        elif best is None and limit - (time.perf_counter() - t0) <= 0:
            # no plan and no time left: the last run's status (time limit) stands, not
            # another MIP whose presolve alone takes its own time on a large model
            info["seconds"] = time.perf_counter() - t0
            return
        set_limit(left())
        self._run(h)
        info["seconds"] = time.perf_counter() - t0

    def _run(self, h) -> None:
        """``h.run()`` that SIGINT, SIGTERM and ``request_interrupt`` stop.

        Raises
        ------
        KeyboardInterrupt
            (or what the signal's handler raises) once HiGHS has stopped.
        """
        self.wall_limit_hit = False
        _scheduler_for(h)
        with interruptible():
            h.run()

    def _interrupt_at(self, h, stop_at: list) -> None:
        """Interrupt HiGHS on a pending interrupt, and a MIP at ``stop_at[0]`` [s].

        The MIP is interrupted once the wall clock passes ``stop_at[0]`` (then
        :attr:`wall_limit_hit` is set: a time limit, not the user's interrupt). Wraps
        the progress callback (``callbackTuple``), if any, so both run; it sees only
        the kinds of ``callbacksToActivate``. An interrupt raised in the callback (a
        signal handler outside :func:`~dcplan.planner.interrupt.interruptible`) does not
        unwind through HiGHS: it stops the solve as an interrupt.
        """
        import time

        import highspy

        kinds = highspy.cb.HighsCallbackType
        inner = self.callbackTuple[0] if self.callbackTuple else None
        active = set(self.callbacksToActivate or ())
        stops = (kinds.kCallbackSimplexInterrupt, kinds.kCallbackIpmInterrupt,
                 kinds.kCallbackMipInterrupt)

        def callback(cb_type, message, data_out, data_in, user_data):
            try:
                if cb_type in stops and interrupt_requested():
                    data_in.user_interrupt = True
                    return
                if inner is not None and cb_type in active:
                    inner(cb_type, message, data_out, data_in, user_data)
                if cb_type == kinds.kCallbackMipInterrupt and time.perf_counter() > stop_at[0]:
                    self.wall_limit_hit = True
                    data_in.user_interrupt = True
            except (KeyboardInterrupt, SystemExit):  # a signal outside interruptible()
                request_interrupt()
                if cb_type in stops:
                    data_in.user_interrupt = True

        h.setCallback(callback, None)
        for kind in {*stops, *active}:
            h.startCallback(kind)

    def findSolutionValues(self, lp: pulp.LpProblem):  # noqa: N802 - pulp API
        """Read the solution back in the pulp problem's units.

        Parameters
        ----------
        lp : pulp.LpProblem
            The problem solved; its variables' values and reduced costs and its rows'
            slacks and duals are set in place, unscaled.

        Returns
        -------
        status, solution_status : int
            pulp's ``LpStatus*`` and ``LpSolution*`` codes [-].
        """
        import highspy

        if self._rs is None:
            return super().findSolutionValues(lp)
        h = lp.solverModel
        final = getattr(self, "_final", None)
        status = h.getModelStatus()
        sol = final["solution"] if final else h.getSolution()
        rs, cs, osc = self._rs, self._cs, self._osc
        x = np.asarray(sol.col_value, dtype=float)
        if len(x) == len(cs):
            dj = np.asarray(sol.col_dual, dtype=float)
            x = x * cs
            dj = dj / cs / osc
            for v in lp.variables():
                v.varValue = float(x[v.index])
                v.dj = float(dj[v.index])
        act = np.asarray(sol.row_value, dtype=float)
        if len(act) == len(rs):
            act = act / rs
            pi = np.asarray(sol.row_dual, dtype=float) * rs / osc
            for con in lp._constraints.values():
                con.slack = con.constant + float(act[con.index])
                if con.sense == const.LpConstraintLE:
                    con.slack *= -1.0
                con.pi = float(pi[con.index])
        S = highspy.HighsModelStatus
        if final or status == S.kOptimal:
            return const.LpStatusOptimal, const.LpSolutionOptimal
        if status in (S.kInfeasible, S.kUnboundedOrInfeasible):
            return const.LpStatusInfeasible, const.LpSolutionInfeasible
        if status == S.kUnbounded:
            return const.LpStatusUnbounded, const.LpSolutionUnbounded
        has = h.getInfo().primal_solution_status == 2
        if has and status in (S.kTimeLimit, S.kIterationLimit, S.kInterrupt,
                              S.kSolutionLimit, S.kObjectiveBound, S.kObjectiveTarget):
            return const.LpStatusOptimal, const.LpSolutionIntegerFeasible
        return const.LpStatusNotSolved, const.LpSolutionNoSolutionFound

    def outcome(self, lp: pulp.LpProblem) -> tuple[str, float | None, bool]:
        """(HiGHS model status name, relative gap, has a solution) of the last solve.

        When the rounded plan was already within the gap of the relaxation bound
        (no full MIP run), the status is "Optimal" and the gap is measured against
        the LP relaxation bound.

        Parameters
        ----------
        lp : pulp.LpProblem
            The problem solved.

        Returns
        -------
        status : str
            HiGHS model status name.
        gap : float or None
            Relative MIP gap [-].
        has_solution : bool
        """
        final = getattr(self, "_final", None)
        h = lp.solverModel
        if final:
            return "Optimal", final["gap"], True
        info = h.getInfo()
        return (h.modelStatusToString(h.getModelStatus()), float(info.mip_gap),
                info.primal_solution_status == 2)


def write_model_files(prob: pulp.LpProblem, path: str | Path) -> tuple[Path, Path]:
    """Write the MILP in MPS format twice: as built, and scaled as HiGHS receives it.

    The scaled file holds the rows, continuous columns and objective multiplied by the
    powers of two of :func:`equilibrate` (integer columns unscaled), the model HiGHS
    solves when it has at least :data:`~dcplan.planner.solver.MIP_START_MIN_VARIABLES`
    variables (smaller models go to HiGHS as built). Both carry the LP names of
    :mod:`dcplan.planner.names`, so another solver can be tried on either.

    Parameters
    ----------
    prob : pulp.LpProblem
        The built model (not solved; its ``solverModel`` is replaced).
    path : str or Path
        The file of the model as built; the scaled one is beside it, its suffix
        replaced by ``.scaled.mps`` (:func:`scaled_path`).

    Returns
    -------
    raw, scaled : Path
        The files written.
    """
    import highspy

    from dcplan.scenario.highs_options import quiet_stdout

    raw = Path(path)
    scaled = scaled_path(raw)
    prob.writeMPS(str(raw))
    solver = HighsDirect(mip=True, msg=False, scale=True, bulk=True, names=True)
    with quiet_stdout(True):
        prob.solverModel = highspy.Highs()
        prob.solverModel.setOptionValue("output_flag", False)
        solver.buildSolverModel(prob)
        prob.solverModel.writeModel(str(scaled))
    return raw, scaled


def scaled_path(path: str | Path) -> Path:
    """Where :func:`write_model_files` writes the scaled model of ``path``.

    Parameters
    ----------
    path : str or Path
        The file of the model as built.

    Returns
    -------
    Path
        ``path`` with its suffix replaced by ``.scaled.mps`` (``model.mps`` ->
        ``model.scaled.mps``).
    """
    p = Path(path)
    return p.with_name(p.stem + ".scaled.mps")
