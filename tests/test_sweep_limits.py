"""Sweeps that answer: per-sample limits, partial results, status labels, ETA, quiet Dask."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_sweep_spec import problems, write
from test_sweep_summary import make_spec, write_folder
from typer.testing import CliRunner

from dcplan.cli import app
from dcplan.planner.solver import SolveStatus
from dcplan.sweep.run import (
    MIN_SAMPLE_TIME_LIMIT_S,
    SAMPLE_TIME_LIMIT_FACTOR,
    _explicit_limit,
    eta_s,
    sample_time_limit,
)
from dcplan.sweep.summary import summarize
from dcplan.sweep.task import SOLVED, STATUSES, result_row, status_of

REPO = Path(__file__).resolve().parent.parent
MINIMAL_SWEEP = REPO / "examples" / "sweeps" / "minimal_lhs.yaml"
runner = CliRunner()


def test_default_limit_is_five_base_plans_and_at_least_30_s():
    assert (MIN_SAMPLE_TIME_LIMIT_S, SAMPLE_TIME_LIMIT_FACTOR) == (30.0, 5.0)
    assert sample_time_limit(0.5) == 30.0
    assert sample_time_limit(6.0) == 30.0
    assert sample_time_limit(10.0) == 50.0
    assert sample_time_limit(40.0) == 200.0


def test_command_line_limit_wins_over_the_sweep_file():
    plan = SimpleNamespace(spec=SimpleNamespace(solver=SimpleNamespace(time_limit_s=12.0),
                                                file="s.yaml"))
    assert _explicit_limit(plan, 5.0) == (5.0, "--time-limit")
    assert _explicit_limit(plan, None) == (12.0, "solver.time_limit_s of s.yaml")
    plan.spec.solver.time_limit_s = None
    assert _explicit_limit(plan, None) == (None, "")


BODY = ("method: lhs\nsamples: 4\n{solver}\nparameters:\n"
        "  - {{path: economics.discount_rate, distribution: uniform, low: 0.05, high: 0.1}}\n")


@pytest.mark.parametrize("solver, field, words", [
    ("solver: {time_limit_s: -1}", "solver.time_limit_s", "must be > 0 (got -1)"),
    ("solver: {time_limit_s: true}", "solver.time_limit_s", "expected a number, got true"),
    ("solver: {time_limit_s: 1.0e+9}", "solver.time_limit_s", "must be <="),
    ("solver: {gap: 2}", "solver.gap", "must be < 1 (got 2)"),
    ("solver: {timelimit: 5}", "solver.timelimit", "did you mean 'time_limit_s'?"),
])
def test_bad_solver_settings_name_file_line_and_field(tmp_path, solver, field, words):
    path = write(tmp_path, BODY.format(solver=solver))
    found = [p for p in problems(path) if p.field == field]
    assert found and words in found[0].message, [str(p) for p in problems(path)]
    assert found[0].line == 6 and "s.yaml:6, field '" + field in str(found[0])


def _result(status, unserved=False, gap=None):
    return SimpleNamespace(status=status, unserved=unserved, gap=gap, message="why")


def test_status_labels_are_the_documented_ones():
    assert status_of(_result(SolveStatus.OPTIMAL)) == "optimal"
    assert status_of(_result(SolveStatus.OPTIMAL, unserved=True)) == "unserved"
    # demand was proven impossible to meet before the second solve hit the time limit
    assert status_of(_result(SolveStatus.FEASIBLE, unserved=True)) == "unserved"
    assert status_of(_result(SolveStatus.FEASIBLE)) == "not_optimal"
    assert status_of(_result(SolveStatus.NOT_SOLVED)) == "no_plan"
    assert status_of(_result(SolveStatus.INFEASIBLE)) == "infeasible"
    assert set(SOLVED) <= set(STATUSES)
    doc = (REPO / "docs" / "uncertainty.md").read_text()
    for label in STATUSES:
        assert f"`{label}`" in doc, label


def test_an_unserved_plan_at_the_time_limit_says_so():
    res = _result(SolveStatus.FEASIBLE, unserved=True, gap=0.0123)
    res.status = SolveStatus.FEASIBLE
    row, fleet = result_row(SimpleNamespace(**vars(res), objective_usd=1.0, case=None,
                                            tables={}, kpi=lambda n: 1.0), [])
    assert row["status"] == "unserved" and fleet == []
    assert row["message"].startswith("plan with unserved demand not proven within the gap "
                                     "at the time limit (gap 1.23%); why")


def test_eta_by_hand():
    # median 20 s; workers 5 s and 25 s into their samples: 15 s and (past the median)
    # another 20 s to go; two queued samples end at 15 + 20 and 20 + 20 s
    assert eta_s([10, 20, 30], 4, [5, 25]) == 40.0
    # two left on two workers: the longer of the two running estimates
    assert eta_s([10, 20, 30], 2, [5, 25]) == 20.0
    # one left: the worker running longest holds it; never 0 while it runs
    assert eta_s([10, 20, 30], 1, [19, 5]) == 1.0
    assert eta_s([10, 20, 30], 1, [30, 5]) == 20.0
    # one worker 5 s into a sample, one idle; two queued
    assert eta_s([20], 4, [5, 0]) == 40.0  # free at 15 and 0: 15 + 20, then 20 + 20
    assert eta_s([], 3, [1.0]) == 0.0 and eta_s([5.0], 0, [1.0]) == 0.0


CHARTS = ("npv_distribution.png", "tornado.png", "racks_fan.png", "purchase_probability.png",
          "sensitivity.png")
PNG = b"\x89PNG\r\n\x1a\n"


def _partial(tmp_path):
    spec = make_spec(n=1)
    rows = [{"sample_id": 0, "x0": 0.5, "weight": 0, "status": "optimal",
             "npv_cost_usd": 250e6}]
    rows += [{"sample_id": i, "x0": i / 10, "weight": 0.2, "status": "optimal",
              "npv_cost_usd": 100e6 * i} for i in (1, 2, 3)]
    rows += [{"sample_id": i, "x0": 0.9, "weight": 0.2, "status": "no_plan",
              "message": "HiGHS reached the time limit (8 s) without a plan"} for i in (4, 5)]
    folder = tmp_path / "sw"
    write_folder(folder, spec, rows)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["solver"] = {"time_limit_s": 8.0, "time_limit_rule": "--time-limit", "gap": None}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_partial_results_are_percentiles_of_the_solved_with_the_count(tmp_path):
    from dcplan.export.sweep import build_sweep_html, build_sweep_workbook
    from dcplan.sweep import load_sweep

    summary = summarize(load_sweep(_partial(tmp_path)))
    head = summary.headline()
    assert head[0] == ("3 of 5 samples solved; 2 no_plan (the solver stopped without a "
                       "plan (time limit)): samples 4, 5.")
    assert "Time limit per sample: 8 s (--time-limit)." in head
    assert any(h.startswith("Statistics are over the 3 of 5 samples that solved") for h in head)
    # 100, 200, 300 million: P10 = 100 + 0.2 x 100, P50 = 200, P90 = 300 - 0.2 x 100
    assert "NPV of costs: P10 120, P50 200, P90 280 million USD (base case 250)." in head
    html = build_sweep_html(summary, pngs={name: PNG for name in CHARTS})
    assert "3 of 5 samples solved" in html and "samples 4, 5" in html
    assert '<div class="outcome warn">' in html  # some samples did not solve
    wb = build_sweep_workbook(summary)
    cells = [c.value for row in wb["Summary"].iter_rows() for c in row if c.value]
    assert any(isinstance(c, str) and c.startswith("3 of 5 samples solved") for c in cells)


@pytest.mark.slow
def test_a_sweep_with_unsolved_samples_exits_1_after_writing(tmp_path, monkeypatch):
    import dcplan.sweep as sweep_pkg
    from dcplan.sweep.run import SweepOutcome

    folder = tmp_path / "out"

    def fake_run(plan, out, **kw):
        assert kw["time_limit_s"] == 8.0 and kw["gap"] == 0.01
        src = _partial(tmp_path)
        src.rename(out)
        from collections import Counter

        return SweepOutcome(Path(out), 5, 5, 0, Counter(optimal=3, no_plan=2), ["w"], False,
                            10.0, {}, "local, 2 workers", 5.0, 1.0, 8.0, "--time-limit", 0.01)

    monkeypatch.setattr(sweep_pkg, "run_sweep", fake_run)
    done = runner.invoke(app, ["sweep", str(MINIMAL_SWEEP), "-n", "5", "--time-limit", "8",
                               "--gap", "0.01", "-o", str(folder), "--no-report"])
    assert done.exit_code == 1, done.output
    out = done.output
    assert "3 of 5 samples solved" in out and "samples 4, 5" in out
    assert "P10 120, P50 200, P90 280" in out
    assert "2 of 5 samples did not solve" in out and "over the other 3" in out
    assert "longer --time-limit (this run: 8 s per sample)" in out
    help_text = runner.invoke(app, ["sweep", "run", "--help"]).output
    assert "--time-limit" in help_text and "--gap" in help_text


@pytest.mark.slow
def test_a_local_cluster_says_nothing_when_port_8787_is_taken(tmp_path, capfd):
    import socket
    import warnings

    from dcplan.sweep.run import _connect

    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", 8787))
            s.listen()
        except OSError:
            pass  # taken already: all the better
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            client, cluster, text = _connect(1, None)
            try:
                assert client.submit(lambda: 1).result() == 1
            finally:
                client.close()
                cluster.close()
    assert text == "local, 1 worker"
    assert not [w for w in caught if "8787" in str(w.message)]
    err = capfd.readouterr().err
    assert "8787" not in err and "Perhaps you already have a cluster" not in err
