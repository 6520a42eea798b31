"""The large-model solver path (scaling, sparse stock, rounded start) finds the same optimum."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from planner_gen import generate  # noqa: E402

from dcplan.planner import build_model, solve  # noqa: E402
from dcplan.planner.start import rounding_start  # noqa: E402
from dcplan.scenario import SolverOptions  # noqa: E402

model_mod = importlib.import_module("dcplan.planner.model")
solve_mod = importlib.import_module("dcplan.planner.solver")


def _solve(d, monkeypatch, large: bool, mip: bool = True):
    monkeypatch.setattr(model_mod, "SPARSE_STOCK_MIN", 0 if large else 10**9)
    monkeypatch.setattr(solve_mod, "MIP_START_MIN_VARIABLES", 0 if large else 10**9)
    prob, mv = build_model(d)
    info = solve(prob, SolverOptions(gap=1e-7, time_limit_s=60, fallback=False), mip=mip,
                 rounding=rounding_start(d, mv))
    return info, prob


@pytest.mark.parametrize("size", [(2, 4, 2, 1, False), (2, 6, 3, 2, True)])
@pytest.mark.slow
def test_large_model_path_same_optimum(size, monkeypatch):
    d = generate(*size, seed=3)
    plain, _ = _solve(d, monkeypatch, large=False)
    fast, _ = _solve(d, monkeypatch, large=True)
    assert plain.status.value == fast.status.value == "optimal"
    assert fast.objective == pytest.approx(plain.objective, rel=1e-6)


def test_sparse_stock_same_relaxation(monkeypatch):
    d = generate(3, 8, 3, 2, True, seed=1)
    dense, _ = _solve(d, monkeypatch, large=False, mip=False)
    sparse, _ = _solve(d, monkeypatch, large=True, mip=False)
    assert sparse.objective == pytest.approx(dense.objective, rel=1e-8)


def test_reported_gap_is_bounded_by_the_relaxation(monkeypatch):
    d = generate(3, 8, 3, 2, True, seed=2)
    relaxed, _ = _solve(d, monkeypatch, large=True, mip=False)
    monkeypatch.setattr(solve_mod, "MIP_START_MIN_VARIABLES", 0)
    prob, mv = build_model(d)
    info = solve(prob, SolverOptions(gap=0.005, time_limit_s=60, fallback=False),
                 rounding=rounding_start(d, mv))
    assert info.status.value == "optimal" and info.gap <= 0.005
    assert (info.objective - relaxed.objective) / info.objective <= 0.005 + 1e-9


@pytest.mark.parametrize("past", [True, False])
def test_a_mip_past_its_wall_clock_limit_is_interrupted(past, tmp_path):
    """The staged driver stops each MIP on the wall clock (HiGHS times a MIP on its own
    run's clock, so a limit set on the cumulative run clock would give it extra time);
    the progress callback it wraps still sees every report."""
    import highspy

    from dcplan.planner.highs import HighsDirect

    d = generate(2, 6, 3, 2, True, seed=3)
    prob, _mv = build_model(d)
    path = tmp_path / "m.mps"
    prob.writeMPS(str(path))
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(path))
    seen = []
    kinds = highspy.cb.HighsCallbackType
    solver = HighsDirect(mip=True, msg=False,
                         callbackTuple=(lambda t, *_a: seen.append(t), None),
                         callbacksToActivate=[kinds.kCallbackMipInterrupt])
    solver._interrupt_at(h, [0.0 if past else float("inf")])
    h.run()
    status = h.getModelStatus()
    if past:
        assert status == highspy.HighsModelStatus.kInterrupt
    else:
        assert status == highspy.HighsModelStatus.kOptimal
    assert seen and set(seen) == {kinds.kCallbackMipInterrupt}


def test_no_time_limit_is_no_time_limit_in_every_stage():
    """Driver used without a time limit (scenarios always set one): the final MIP runs
    without one, not with the limit the sub-MIP stage set."""
    from dcplan.planner.highs import HighsDirect

    d = generate(2, 4, 2, 1, False, seed=3)
    prob, mv = build_model(d)
    solver = HighsDirect(mip=True, msg=False, gapRel=1e-7, timeLimit=None,
                         rounding=rounding_start(d, mv))
    prob.solve(solver)
    assert solver.outcome(prob)[0] == "Optimal"
    assert prob.solverModel.getOptionValue("time_limit")[1] == float("inf")


@pytest.mark.parametrize("order", [(1, 2, None), (2, 1, 2)])
def test_threads_may_change_between_solves_in_one_process(order):
    # HiGHS sizes its task scheduler at a thread's first run and fails any later run
    # that asks for another count ("Not Set"), which the driver answered with CBC: every
    # two-thread run of bench/solver_threads.py after its one-thread runs was CBC's.
    # Each solve must be HiGHS's own, with the same optimum.
    d = generate(2, 2, 1, 1, False, seed=0)
    got = []
    for threads in order:
        prob, mv = build_model(d)
        info = solve(prob, SolverOptions(gap=1e-9, threads=threads))
        assert (info.solver, info.status.value) == ("highs", "optimal"), (threads,
                                                                          info.message)
        got.append(info.objective)
    assert got == pytest.approx([got[0]] * len(got), rel=1e-9)
