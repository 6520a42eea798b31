"""Limits and messages of issue 27 (items 6, 8, 9).

6: sweeps and stochastic plans too large to solve are refused when their file is checked,
   before any sample is drawn or any case prepared, naming the field and the limit
   (``dcplan.sweep.spec.DEFAULT_MAX_SWEEP_PLANS``,
   ``dcplan.scenario.schema.DEFAULT_MAX_UNCERTAINTY_CASES``; environment variables raise
   them).
8: an availability that is no availability, hourly profile values whose mean overflows,
   a sweep file where a scenario is expected, a measurement row with 1e15 GPUs: one clear
   problem each.
9: a stochastic plan that leaves demand unserved exits 1 unless it is accepted, as a
   deterministic plan does.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dcplan.cli import app
from dcplan.errors import InputError
from dcplan.scenario.schema import (
    DEFAULT_MAX_UNCERTAINTY_CASES,
    MAX_UNCERTAINTY_CASES_ENV,
    MIN_AVAILABILITY,
)
from dcplan.sweep.spec import DEFAULT_MAX_SWEEP_PLANS, MAX_SWEEP_PLANS_ENV, load_sweep_spec
from dcplan.units import SECONDS_PER_MONTH

REPO = Path(__file__).resolve().parent.parent
MINIMAL = REPO / "examples" / "minimal.yaml"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _default_limits(monkeypatch):
    """The tests expect the default limits, whatever the environment says."""
    monkeypatch.delenv(MAX_SWEEP_PLANS_ENV, raising=False)
    monkeypatch.delenv(MAX_UNCERTAINTY_CASES_ENV, raising=False)


@pytest.fixture
def no_design(monkeypatch):
    """Fail the test if a sweep's samples are drawn (the limit must stop it before)."""
    import dcplan.sweep.run

    def refuse(*_a, **_k):
        raise AssertionError("the design was drawn before the limit was checked")

    monkeypatch.setattr(dcplan.sweep.run, "make_design", refuse)


def sweep_file(tmp_path: Path, body: str, name: str = "s.yaml", base: Path = MINIMAL) -> Path:
    path = tmp_path / name
    path.write_text(f"kind: dcplan_sweep\nname: t\nbase: {base}\n{body}")
    return path


RATE = "  - {path: economics.discount_rate, distribution: uniform, low: 0.05, high: 0.1}\n"
PENALTY = ("  - {path: economics.unserved_penalty_usd_per_million_tokens, "
           "distribution: uniform, low: 10, high: 100}\n")


def refused(path: Path) -> list:
    with pytest.raises(InputError) as exc:
        load_sweep_spec(path)
    return exc.value.problems


def test_the_limits_are_the_documented_ones():
    assert DEFAULT_MAX_SWEEP_PLANS == 10_000 and DEFAULT_MAX_UNCERTAINTY_CASES == 20
    arch = (REPO / "docs" / "architecture.md").read_text()
    unc = (REPO / "docs" / "uncertainty.md").read_text()
    for text in (arch, unc):
        assert "DCPLAN_MAX_SWEEP_PLANS" in text and "DCPLAN_MAX_UNCERTAINTY_CASES" in text
        assert "DEFAULT_MAX_SWEEP_PLANS" in text and "DEFAULT_MAX_UNCERTAINTY_CASES" in text
    assert "| 10,000 |" in unc and "| 20 |" in unc


# --- 6: plans per sweep -------------------------------------------------------------


def test_a_billion_samples_exit_1_at_once_naming_field_and_limit(tmp_path, no_design):
    path = sweep_file(tmp_path, "method: lhs\nsamples: 1000000000\nparameters:\n" + RATE)
    t0 = time.perf_counter()
    done = runner.invoke(app, ["sweep", str(path), "-o", str(tmp_path / "out"), "-q"])
    took = time.perf_counter() - t0
    assert done.exit_code == 1, done.output
    assert "Traceback" not in done.output
    assert "s.yaml:5, field 'samples'" in done.output
    assert "1,000,000,000 samples" in done.output and "10,000 plans per sweep" in done.output
    assert MAX_SWEEP_PLANS_ENV in done.output
    assert took < 20, took  # was: past 120 s, 600 MB after 4 s
    assert not (tmp_path / "out").exists()


def test_samples_on_the_command_line_are_limited_too(tmp_path, no_design):
    path = sweep_file(tmp_path, "method: lhs\nsamples: 8\nparameters:\n" + RATE)
    done = runner.invoke(app, ["sweep", str(path), "-n", "10001", "-o", str(tmp_path / "o"),
                               "-q"])
    assert done.exit_code == 1, done.output
    assert "--samples: 10,001 samples are more than the limit of 10,000 plans" in done.output


@pytest.mark.slow
def test_a_100000_by_100000_grid_is_refused_without_building_it(tmp_path):
    """10^10 points, counted as the product of the value counts. Reading the 200,000
    values of the file is the only cost (YAML parsing: 4-13 s on two shared cores, hence
    slow; the next test refuses 10^10 points from a small file in the quick loop)."""
    values = ", ".join(str(i) for i in range(100_000))
    path = sweep_file(tmp_path, "method: grid\nparameters:\n"
                      f"  - {{path: economics.discount_rate, grid: [{values}]}}\n"
                      f"  - {{path: economics.unserved_penalty_usd_per_million_tokens, "
                      f"grid: [{values}]}}\n")
    t0 = time.perf_counter()
    probs = refused(path)
    assert time.perf_counter() - t0 < 60
    assert len(probs) == 1
    p = probs[0]
    assert p.field == "parameters" and p.line == 5
    assert "100,000 x 100,000 = 10,000,000,000 points" in p.message
    assert "limit of 10,000 plans per sweep" in p.message


def test_a_grid_of_ten_parameters_of_ten_values_exits_1_in_the_cli(tmp_path, no_design):
    """10 ** 10 points from a small file: refused as fast as any other problem."""
    names = ["economics.discount_rate", "economics.unserved_penalty_usd_per_million_tokens",
             "demand.peak_to_average", "demand.growth.chat.annual_growth",
             "demand.growth.chat.start", "demand.growth.coding_agent.annual_growth",
             "demand.growth.coding_agent.start", "economics.building_lifetime_years",
             "economics.cdu_lifetime_years", "existing_built_mw.seoul_metro"]
    body = "".join(f"  - {{path: {n}, grid: [{', '.join(str(i + 1) for i in range(10))}]}}\n"
                   for n in names)
    path = sweep_file(tmp_path, "method: grid\nparameters:\n" + body)
    t0 = time.perf_counter()
    done = runner.invoke(app, ["sweep", str(path), "-o", str(tmp_path / "o"), "-q"])
    assert done.exit_code == 1, done.output
    assert time.perf_counter() - t0 < 20
    assert "10 x 10 x 10 x 10 x 10 x 10 x 10 x 10 x ... = 10,000,000,000 points" in done.output


def test_morris_and_sobol_are_limited_by_the_plans_they_make(tmp_path):
    # morris, 2 parameters: trajectories of 3 plans; 20,000 samples -> 6,666 x 3 = 19,998
    path = sweep_file(tmp_path, "method: morris\nsamples: 20000\nparameters:\n"
                      + RATE + PENALTY)
    (p,) = refused(path)
    assert p.field == "samples"
    assert "20,000 samples make 19,998 morris plans, more than the limit of 10,000" \
        in p.message
    # sobol, 1 parameter: 10,500 // 3 = 3,500 -> base 2,048 (a power of two) x 3 = 6,144
    # plans, within the limit although the count asked for is above it
    ok = load_sweep_spec(sweep_file(tmp_path, "method: sobol\nsamples: 10500\n"
                                    "parameters:\n" + RATE, "ok.yaml"))
    from dcplan.sweep.design import runs_for

    assert runs_for(ok, ok.samples) == 6_144


def test_the_environment_variable_moves_the_sweep_limit(tmp_path, monkeypatch):
    path = sweep_file(tmp_path, "method: lhs\nsamples: 20000\nparameters:\n" + RATE)
    monkeypatch.setenv(MAX_SWEEP_PLANS_ENV, "30000")
    assert load_sweep_spec(path).samples == 20_000
    monkeypatch.setenv(MAX_SWEEP_PLANS_ENV, "50")
    small = sweep_file(tmp_path, "method: lhs\nsamples: 64\nparameters:\n" + RATE, "b.yaml")
    (p,) = refused(small)
    assert "64 samples are more than the limit of 50 plans" in p.message
    monkeypatch.setenv(MAX_SWEEP_PLANS_ENV, "lots")  # unreadable: the default
    (p,) = refused(path)
    assert "limit of 10,000 plans" in p.message


def test_make_design_refuses_a_count_above_the_limit():
    """The Python API's own guard, for a count that skipped the file's checks."""
    from dcplan.sweep.design import make_design

    spec = load_sweep_spec(REPO / "examples" / "sweeps" / "minimal_lhs.yaml")
    with pytest.raises(InputError) as exc:
        make_design(spec, 10_001)
    assert exc.value.problems[0].file == "--samples"


# --- 6: cases of a stochastic plan ---------------------------------------------------


def many_cases(tmp_path: Path, n: int) -> Path:
    cases = "".join(f"    - {{name: c{i}, probability: {1 / n!r}}}\n" for i in range(n))
    path = tmp_path / "many.yaml"
    path.write_text(f"extends: {MINIMAL}\nuncertainty:\n  first_stage_until: 2028\n"
                    f"  cases:\n{cases}")
    return path


@pytest.mark.slow
def test_300_uncertainty_cases_exit_1_before_any_case_is_prepared(tmp_path, monkeypatch):
    import dcplan.planner.stochastic as st

    def refuse(*_a, **_k):
        raise AssertionError("a case was prepared before the limit was checked")

    monkeypatch.setattr(st, "load_cases", refuse)
    path = many_cases(tmp_path, 300)
    t0 = time.perf_counter()
    done = runner.invoke(app, ["plan", str(path), "-q"])
    took = time.perf_counter() - t0
    assert done.exit_code == 1, done.output
    assert "Traceback" not in done.output
    assert "many.yaml:4, field 'uncertainty.cases'" in done.output
    assert "300 cases are more than the limit of 20 cases" in done.output
    assert MAX_UNCERTAINTY_CASES_ENV in done.output
    assert took < 20, took
    v = runner.invoke(app, ["validate", str(path)])
    assert v.exit_code == 1 and "300 cases" in v.output


def test_the_environment_variable_moves_the_case_limit(tmp_path, monkeypatch):
    from dcplan.case import load_case

    path = many_cases(tmp_path, 21)
    with pytest.raises(InputError) as exc:
        load_case(path)
    assert "21 cases are more than the limit of 20" in str(exc.value)
    monkeypatch.setenv(MAX_UNCERTAINTY_CASES_ENV, "21")
    assert len(load_case(path).scenario.uncertainty.cases) == 21
    assert len(load_case(many_cases(tmp_path, 20)).scenario.uncertainty.cases) == 20


# --- 8: messages ---------------------------------------------------------------------


def scenario_problems(tmp_path: Path, text: str) -> list:
    from dcplan.case import load_case

    path = tmp_path / "s.yaml"
    path.write_text(f"extends: {MINIMAL}\n{text}")
    with pytest.raises(InputError) as exc:
        load_case(path)
    return exc.value.problems


def test_an_availability_of_1e_9_is_refused_with_its_range(tmp_path):
    (p,) = scenario_problems(tmp_path, "serving: {availability: 1.0e-9}\n")
    assert p.field == "serving.availability" and p.line == 2
    assert "share of installed racks up" in p.message
    assert f"between {MIN_AVAILABILITY:g} and 1 (got 1e-09" in p.message


def test_an_availability_given_as_the_share_down_says_so(tmp_path):
    probs = scenario_problems(tmp_path, "serving: {availability: {gb200_nvl72: 0.03, "
                                        "rubin_ultra_nvl576: 0.4999}}\n")
    by = {p.entry: p for p in probs}
    assert set(by) == {"gb200_nvl72", "rubin_ultra_nvl576"}
    assert by["gb200_nvl72"].field == "serving.availability.gb200_nvl72"
    assert "give 1 minus it (0.97)" in by["gb200_nvl72"].message
    assert "got 0.4999" in by["rubin_ultra_nvl576"].message


def test_the_lowest_availability_is_accepted(tmp_path):
    from dcplan.case import load_case

    path = tmp_path / "s.yaml"
    path.write_text(f"extends: {MINIMAL}\nserving: {{availability: {MIN_AVAILABILITY}}}\n")
    assert load_case(path).scenario.serving.availability == 0.5


def test_hourly_values_whose_mean_overflows_say_they_are_too_large(tmp_path):
    hours = ", ".join(["1.0e308"] * 24)
    ones = ", ".join(["1"] * 24)
    probs = scenario_problems(
        tmp_path, "demand:\n  profiles:\n"
                  f"    chat: {{hours: [{hours}]}}\n"
                  f"    coding_agent: {{days: [{{weight: 1.0e308, hours: [{ones}]}}, "
                  f"{{weight: 1.0e308, hours: [{ones}]}}]}}\n")
    by = {p.field: p for p in probs}
    chat = by["demand.profiles.chat"]
    assert "hourly values are too large" in chat.message and "average 1" in chat.message
    assert "inf" not in chat.message.replace("infinity", "")
    agent = by["demand.profiles.coding_agent"]
    assert "day weights are too large" in agent.message


def test_a_large_but_finite_mean_still_says_what_to_divide_by(tmp_path):
    """One value of 2.4e9 and 23 zeros average 1e8: the fix is to divide by it."""
    hours = ", ".join(["2.4e9"] + ["0"] * 23)
    (p,) = scenario_problems(tmp_path, f"demand:\n  profiles:\n    chat: {{hours: [{hours}]}}\n")
    assert "average 1e+08" in p.message and "divide each by 1e+08" in p.message


def test_a_sweep_file_given_as_its_own_base_is_one_problem(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("kind: dcplan_sweep\nname: t\nbase: s.yaml\nmethod: lhs\nsamples: 4\n"
                    "parameters:\n" + RATE)
    done = runner.invoke(app, ["sweep", str(path), "-o", str(tmp_path / "o"), "-q"])
    assert done.exit_code == 1, done.output
    assert "problems found" not in done.output  # was: eight missing scenario fields
    assert "s.yaml:3, field 'base'" in done.output
    assert "is a sweep file (this one), not a scenario; base must name a scenario file" \
        in done.output


def test_another_sweep_file_as_base_and_a_sweep_file_to_plan(tmp_path):
    other = sweep_file(tmp_path, "method: lhs\nsamples: 4\nparameters:\n" + RATE, "a.yaml")
    path = sweep_file(tmp_path, "method: lhs\nsamples: 4\nparameters:\n" + RATE, "b.yaml",
                      base=other)
    (p,) = refused(path)
    assert p.field == "base" and p.line == 3
    assert "a.yaml is a sweep file, not a scenario; base must name a scenario file" \
        in p.message
    done = runner.invoke(app, ["plan", str(other), "-q"])
    assert done.exit_code == 1, done.output
    assert "this is a sweep file, not a scenario" in done.output
    assert "dcplan sweep" in done.output and "required field" not in done.output


def test_a_site_file_as_base_is_named(tmp_path):
    path = sweep_file(tmp_path, "method: lhs\nsamples: 4\nparameters:\n" + RATE,
                      base=REPO / "sites" / "seoul_metro.yaml")
    (p,) = refused(path)
    assert "seoul_metro.yaml is a site file, not a scenario" in p.message


@pytest.mark.slow
def test_a_measurement_row_with_1e15_gpus_is_refused(tmp_path):
    src = (REPO / "catalogs" / "measurements" / "inferencex_deepseek_r1.csv")
    header, row = src.read_text().splitlines()[:2]
    cols = header.split(",")
    cells = row.split(",")
    big = list(cells)
    big[cols.index("gpus")] = "1000000000000000"
    path = tmp_path / "m.csv"
    path.write_text("\n".join([header, row, ",".join(big)]) + "\n")
    # calibrate takes only good rows: the file is refused, naming the row
    out = tmp_path / "cal.yaml"
    done = runner.invoke(app, ["perf", "calibrate", str(path), "-o", str(out)])
    assert done.exit_code == 1, done.output
    assert "m.csv:3, entry 'row 2', field 'gpus'" in done.output
    assert "1,000,000,000,000,000 GPUs" in done.output and "at most 1,000,000" in done.output
    assert "row 1" not in done.output and not out.exists()
    # validate flags the row, never accepts it, and still validates the good one
    shown = runner.invoke(app, ["perf", "validate", str(path)])
    assert shown.exit_code == 0, shown.output
    said = " ".join(shown.stderr.split())  # notes wrap at the terminal width
    assert "not validated: " in said and "entry 'row 2', field 'gpus'" in said
    assert "over 1 rows" in shown.stdout


# --- 9: a stochastic plan with unserved demand -----------------------------------------

# Seoul's 9.9 MW cannot serve 1e16 tokens a month; two periods, one rack type, the linear
# fabric: a few solves of a tiny MILP.
SHORT = f"""\
extends: {MINIMAL}
name: short_stochastic
periods: {{start: 2026, end: 2027, step: year}}
sites: [seoul_metro]
racks: [gb200_nvl72]
existing_built_mw: {{honam_haenam: null}}
workloads: [chat]
network_model: linear
demand:
  growth:
    chat: {{start: 1.0e16, annual_growth: 0.5}}
    coding_agent: null
solver: {{name: highs, time_limit_s: 60, gap: 0.001, threads: 1}}
uncertainty:
  first_stage_until: 2027
  cases:
    - {{name: low, probability: 0.5}}
    - {{name: high, probability: 0.5, changes: {{demand.growth.chat.annual_growth: 1.0}}}}
"""


@pytest.mark.slow
def test_a_stochastic_plan_with_unserved_demand_exits_1_unless_accepted(tmp_path):
    path = tmp_path / "short.yaml"
    path.write_text(SHORT)
    done = runner.invoke(app, ["plan", str(path), "-q", "--json"])
    assert done.exit_code == 1, done.output
    assert "the stochastic plan leaves demand unserved" in done.output
    assert "case low: chat short by up to" in done.output
    assert "case high: chat short by up to" in done.output
    assert "Rerun with --allow-unserved" in done.output
    assert "Rerun with --allow-unserved" in done.stderr
    data = json.loads(done.stdout)
    assert data["unserved"] is True and data["unserved_accepted"] is False
    rows = {(r["case"], r["period"]): r for r in data["unserved_demand"]}
    # low, 2027: 1e16 * 1.5 tokens a month, at the minimal example's peak-to-average 1.5
    demand = 1.0e16 * 1.5 / SECONDS_PER_MONTH * 1.5
    low = rows["low", "2027"]
    assert low["demand_tokens_per_s_peak"] == pytest.approx(demand, rel=1e-9)
    assert 0 < low["short_tokens_per_s_peak"] <= demand * (1 + 1e-9)
    assert rows["high", "2027"]["demand_tokens_per_s_peak"] == pytest.approx(
        1.0e16 * 2.0 / SECONDS_PER_MONTH * 1.5, rel=1e-9)

    ok = runner.invoke(app, ["plan", str(path), "-q", "--allow-unserved"])
    assert ok.exit_code == 0, ok.output
    assert "note: the stochastic plan leaves demand unserved" in ok.output

    accepted = tmp_path / "accepted.yaml"
    accepted.write_text(SHORT + "allow_unserved: true\n")
    ok = runner.invoke(app, ["plan", str(accepted), "-q"])
    assert ok.exit_code == 0, ok.output


# --- solver options a typo turns into a machine-wide problem ------------------------------


@pytest.mark.parametrize("args", [["--threads", "1000000000"], ["--time-limit", "inf"],
                                  ["--time-limit", "1e400"], ["--gap", "inf"]])
def test_solver_options_out_of_range_on_the_command_line(args):
    """--threads 1e9 reserved 20 GB in HiGHS before failing; inf limits gave exit 3."""
    done = runner.invoke(app, ["plan", str(REPO / "examples" / "minimal.yaml"), "-q", *args])
    assert done.exit_code == 2, done.output
    assert args[0] in done.output


def test_solver_threads_in_a_scenario_are_bounded(tmp_path):
    from dcplan.scenario.schema import MAX_SOLVER_THREADS

    path = tmp_path / "t.yaml"
    path.write_text(f"extends: {REPO / 'examples' / 'minimal.yaml'}\n"
                    "solver: {threads: 1000000000}\n")
    done = runner.invoke(app, ["validate", str(path)])
    assert done.exit_code == 1
    assert f"field 'solver.threads': must be <= {MAX_SOLVER_THREADS}" in done.output


@pytest.mark.parametrize("yaml_text, field", [
    ("oversubscription: 1.0e+308\n", "field 'oversubscription'"),
    ("demand:\n  peak_to_average: 1.0e+300\n", "field 'demand.peak_to_average'"),
    ("economics:\n  carbon_price_usd_per_t: 1.0e+308\n",
     "field 'economics.carbon_price_usd_per_t'"),
    ("overrides:\n  - {kind: sites, id: seoul_metro, field: grid_mw, add: 1.0e+308, "
     "from_year: 2027}\n", "entry 'seoul_metro', field 'grid_mw.2028'"),
])
@pytest.mark.slow
def test_a_figure_too_large_to_be_real_is_named_before_planning(tmp_path, yaml_text, field):
    """Each of these passed validation, then plan exited 3 (OverflowError, a NaN/inf
    right-hand side in pulp, or a CBC crash after HiGHS gave up)."""
    from dcplan.case import HUGE_FIGURE

    path = tmp_path / "huge.yaml"
    path.write_text(f"extends: {REPO / 'examples' / 'minimal.yaml'}\n{yaml_text}")
    for cmd in (["validate", str(path)], ["plan", str(path), "-q"]):
        done = runner.invoke(app, cmd)
        assert done.exit_code == 1, done.output
        assert field in done.output and f"above {HUGE_FIGURE:g}" in done.output


def test_a_target_utilisation_near_zero_is_refused(tmp_path):
    from dcplan.scenario.schema import MIN_TARGET_UTILISATION

    path = tmp_path / "u.yaml"
    path.write_text(f"extends: {REPO / 'examples' / 'minimal.yaml'}\n"
                    "serving: {target_utilisation: 1.0e-300}\n")
    done = runner.invoke(app, ["validate", str(path)])
    assert done.exit_code == 1
    assert f"must be >= {MIN_TARGET_UTILISATION:g}" in done.output


@pytest.mark.parametrize("field", ["racks", "workloads"])
def test_an_empty_rack_or_workload_list_is_not_read_as_every_one(tmp_path, field):
    path = tmp_path / "e.yaml"
    path.write_text(f"extends: {REPO / 'examples' / 'minimal.yaml'}\n{field}: []\n")
    done = runner.invoke(app, ["validate", str(path)])
    assert done.exit_code == 1
    assert f"field '{field}': is an empty list; leave '{field}' out" in done.output


def test_a_negative_sweep_seed_is_named(tmp_path):
    """It exited 3 (a ValueError from the Latin hypercube sampler)."""
    path = sweep_file(tmp_path, "method: lhs\nsamples: 4\nseed: -1\nparameters:\n" + RATE)
    (p,) = refused(path)
    assert p.field == "seed" and ">= 0" in p.message
