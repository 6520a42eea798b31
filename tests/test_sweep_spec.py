"""Sweep files: the shipped ones load; bad ones get every problem at once, with line and field."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from dcplan.errors import InputError
from dcplan.sweep.apply import moved_grid, sample_case
from dcplan.sweep.run import prepare_sweep
from dcplan.sweep.spec import load_sweep_spec

REPO = Path(__file__).resolve().parent.parent
MINIMAL = REPO / "examples" / "minimal.yaml"
SHIPPED = sorted((REPO / "examples" / "sweeps").glob("*.yaml"))


@pytest.fixture(scope="module")
def minimal_case():
    from dcplan.case import load_case

    return load_case(MINIMAL)


def write(tmp_path: Path, body: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(f"kind: dcplan_sweep\nname: t\nbase: {MINIMAL}\n" + textwrap.dedent(body))
    return path


def problems(path: Path) -> list:
    with pytest.raises(InputError) as exc:
        load_sweep_spec(path)
    return exc.value.problems


GOOD = """\
method: lhs
samples: 8
seed: 1
parameters:
  - name: chat_growth
    path: demand.growth.chat.annual_growth
    distribution: uniform
    low: 0.5
    high: 0.9
"""


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
@pytest.mark.slow
def test_shipped_sweeps_load_and_check_against_their_base(path):
    from dcplan.case import load_case

    spec = load_sweep_spec(path)
    plan = prepare_sweep(spec, load_case(spec.base_path()))
    assert plan.design.size >= 1 and spec.parameters


def test_a_good_file_loads_with_its_lines(tmp_path):
    spec = load_sweep_spec(write(tmp_path, GOOD))
    assert spec.names == ["chat_growth"] and spec.method == "lhs"
    assert spec.line("parameters", 0, "low") == 11  # 3 header lines + line 8 of GOOD


def test_low_above_high_names_file_line_entry_and_field(tmp_path):
    path = write(tmp_path, GOOD.replace("low: 0.5", "low: 1.5"))
    (p,) = problems(path)
    assert p.file.endswith("s.yaml") and p.entry == "chat_growth" and p.field == "low"
    assert p.line == 11 and "below high" in p.message


def test_every_problem_at_once(tmp_path):
    path = write(tmp_path, """\
        method: random
        samples: 0
        parameters:
          - name: a
            path: demand.growth.chat.annual_growth
            distribution: triangular
            low: 0.5
            mode: 0.4
            high: 0.9
          - name: a
            override: {kind: racks, id: gb200_nvl72, field: capex_usd}
            apply: scale
            distribution: choice
            values: [0.9, 1.0, 1.2]
            weights: [0.2, 0.3, 0.4]
          - name: c
            grid_step: {site: seoul_metro, year: 2028}
            distribution: normal
            mean: 1
        """)
    found = {(p.entry, p.field): p for p in problems(path)}
    assert ("a", "mode") in found and "between low" in found["a", "mode"].message
    assert ("a", "weights") in found and "sum to 0.9" in found["a", "weights"].message
    assert ("a", "name") in found  # the second 'a'
    assert ("c", "sd") in found and "needs 'sd'" in found["c", "sd"].message
    assert (None, "samples") in found and "at least 1" in found[None, "samples"].message
    assert all(p.line for p in found.values()), [str(p) for p in found.values()]


def test_schema_problems_name_the_parameter_and_line(tmp_path):
    path = write(tmp_path, """\
        method: lhs
        samples: 8
        parameters:
          - name: x
            path: demand.growth.chat.annual_growth
            distribution: gaussian
            loww: 1
        """)
    found = {p.field: p for p in problems(path)}
    assert found["distribution"].entry == "x" and found["distribution"].line == 9
    assert "loww" in found and "low" in found["loww"].message  # did-you-mean
    assert found["loww"].line == 10


def test_not_a_sweep_file(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(MINIMAL.read_text())
    (p,) = problems(path)
    assert "kind: dcplan_sweep" in p.message


@pytest.mark.parametrize("body, field, words", [
    ("method: grid\nsamples: 4\nparameters:\n  - {path: sites, grid: [1]}\n",
     "samples", "every point"),
    ("method: morris\nsamples: 3\nparameters:\n"
     "  - {path: economics.discount_rate, distribution: uniform, low: 0.05, high: 0.1}\n",
     "samples", "2 trajectories"),
    ("method: lhs\nsamples: 4\nparameters:\n"
     "  - {path: economics.discount_rate, grid: [0.05, 0.1]}\n", "grid", "method grid"),
    ("method: lhs\nsamples: 4\nparameters:\n"
     "  - {path: economics.discount_rate, override: {kind: racks, id: x, field: y},"
     " distribution: uniform, low: 0, high: 1}\n", "override", "exactly one"),
    ("method: lhs\nsamples: 4\nparameters:\n"
     "  - {grid_step: {site: seoul_metro, year: 2028}, apply: scale,"
     " distribution: choice, values: [0, 1]}\n", "apply", "remove 'apply'"),
    ("method: lhs\nsamples: 4\nparameters:\n"
     "  - {path: x, distribution: lognormal, median: 1, sigma: -1}\n", "sigma", "> 0"),
    ("method: lhs\nsamples: 4\nparameters:\n"
     "  - {path: x, distribution: choice, values: [1, 2], weights: [0.5]}\n",
     "weights", "one weight per value"),
    ("method: lhs\nsamples: 4\nparameters:\n"
     "  - {path: economics.discount_rate, distributon: uniform, low: 0.05, high: 0.1}\n",
     "distributon", "did you mean 'distribution'?"),
    ("method: lhs\nsamples: 4\noutputs: [npv_cost_usd, npv_usd]\nparameters:\n"
     "  - {path: economics.discount_rate, distribution: uniform, low: 0.05, high: 0.1}\n",
     "outputs", "'npv_usd' is not a KPI of a plan; did you mean 'npv_cost_usd'?"),
])
def test_one_bad_field(tmp_path, body, field, words):
    found = [p for p in problems(write(tmp_path, body)) if p.field == field]
    assert found and words in found[0].message, [str(p) for p in problems(write(tmp_path, body))]


def test_unknown_paths_ids_and_values_are_found_before_solving(tmp_path, minimal_case):
    path = write(tmp_path, """\
        method: lhs
        samples: 8
        parameters:
          - name: typo
            path: demand.growth.chatt.annual_growth
            distribution: uniform
            low: 0.5
            high: 0.9
          - name: no_rack
            override: {kind: racks, id: gb900, field: capex_usd}
            apply: scale
            distribution: uniform
            low: 0.9
            high: 1.1
          - name: too_many_hits
            override: {kind: workloads, id: chat, field: cache_hit_frac}
            distribution: uniform
            low: 0.5
            high: 1.2
          - name: too_late
            grid_step: {site: seoul_metro, year: 2028}
            distribution: choice
            values: [0, 3]
          - name: eff
            calibration: {param: hbm_eff_frac}
            apply: scale
            distribution: uniform
            low: 0.9
            high: 3.0
        """)
    spec = load_sweep_spec(path)
    with pytest.raises(InputError) as exc:
        prepare_sweep(spec, minimal_case)
    found = {p.entry: p for p in exc.value.problems}
    assert set(found) == {"typo", "no_rack", "too_many_hits", "too_late", "eff"}, \
        [str(p) for p in exc.value.problems]
    assert "chatt" in found["typo"].message and found["typo"].field == "path"
    assert "gb900" in found["no_rack"].message
    assert "at 1.2" in found["too_many_hits"].message
    assert "2031" in found["too_late"].message  # the next step
    assert "outside its range" in found["eff"].message
    assert all(p.file.endswith("s.yaml") and p.line for p in found.values())


def test_zero_samples_on_the_command_line(tmp_path, minimal_case):
    spec = load_sweep_spec(write(tmp_path, GOOD))
    with pytest.raises(InputError) as exc:
        prepare_sweep(spec, minimal_case, samples=0)
    assert exc.value.problems[0].file == "--samples"


def test_sample_values_reach_the_case(minimal_case, tmp_path):
    spec = load_sweep_spec(write(tmp_path, """\
        method: random
        samples: 2
        parameters:
          - name: g
            path: demand.growth.chat.annual_growth
            distribution: uniform
            low: 0.5
            high: 0.9
          - name: price
            override: {kind: racks, id: gb200_nvl72, field: capex_usd}
            apply: scale
            distribution: uniform
            low: 0.9
            high: 1.1
          - name: delay
            grid_step: {site: seoul_metro, year: 2028}
            distribution: choice
            values: [0, 2]
          - name: eff
            calibration: {param: hbm_eff_frac, accelerator: gb200_gpu}
            apply: scale
            distribution: uniform
            low: 0.9
            high: 1.1
        """))
    c = sample_case(minimal_case, spec, {"g": 0.6, "price": 1.1, "delay": 2, "eff": 1.05})
    assert c.scenario.demand.growth["chat"].annual_growth == 0.6
    base_price = minimal_case.catalog.get("racks", "gb200_nvl72").capex_usd
    assert c.catalog.get("racks", "gb200_nvl72").capex_usd == pytest.approx(base_price * 1.1)
    assert c.sites["seoul_metro"].grid_mw == {2026: 9.9, 2030: 30.0, 2031: 45.0}
    hw = minimal_case.perf_defaults.for_hardware("gb200_gpu")
    if minimal_case.calibration is not None:  # the shipped calibration, scaled
        hw = minimal_case.calibration.apply(hw, "gb200_gpu")
    assert dict(dict(c.calibration.hardware)["gb200_gpu"])["hbm_eff_frac"] == \
        pytest.approx(hw.hbm_eff_frac * 1.05)
    base = minimal_case.calibration  # the base case is unchanged
    assert base is None or dict(dict(base.hardware).get("gb200_gpu", {})).get(
        "hbm_eff_frac") != pytest.approx(hw.hbm_eff_frac * 1.05)
    # the sampled calibration keeps what its rows cover, so its plans still name their
    # extrapolations (rack-scale EP, KV hand-over)
    assert base is None or (c.calibration.basis == base.basis and base.basis is not None)


def test_calibration_parameter_of_a_case_without_calibration(tmp_path):
    """A case loaded with calibration "none": the sampled value starts from the defaults."""
    from dcplan.case import load_case

    case = load_case(MINIMAL, calibration="none")
    assert case.perf_calibration is None
    spec = load_sweep_spec(write(tmp_path, """\
        method: random
        samples: 2
        parameters:
          - name: eff
            calibration: {param: hbm_eff_frac, accelerator: gb200_gpu}
            apply: scale
            distribution: uniform
            low: 0.9
            high: 1.1
        """))
    c = sample_case(case, spec, {"eff": 1.05})
    hw = case.perf_defaults.for_hardware("gb200_gpu")
    assert dict(dict(c.perf_calibration.hardware)["gb200_gpu"]) == {
        "hbm_eff_frac": pytest.approx(hw.hbm_eff_frac * 1.05)}
    assert c.perf_calibration.source == "sweep" and case.perf_calibration is None


def test_grow_multiplies_the_growth_since_the_first_year(tmp_path):
    from dcplan.case import load_case

    base = load_case(REPO / "examples" / "baseline.yaml")
    spec = _baseline_spec(tmp_path)
    c = sample_case(base, spec, {"agents": 2.0})
    old = base.scenario.demand.table["coding_agent"]
    new = c.scenario.demand.table["coding_agent"]
    assert new[2026] == pytest.approx(old[2026])  # the first year stays
    assert new[2035] == pytest.approx(old[2035] * 2.0)  # the last year doubles
    assert new[2030] == pytest.approx(old[2030] * 2.0 ** (4 / 9))


def _baseline_spec(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(f"""kind: dcplan_sweep
name: b
base: {REPO / 'examples' / 'baseline.yaml'}
method: random
samples: 2
parameters:
  - name: agents
    path: demand.table.coding_agent
    apply: grow
    distribution: uniform
    low: 0.5
    high: 2
""")
    return load_sweep_spec(path)


def test_moved_grid_keeps_the_order_of_the_steps():
    steps = {2026: 9.9, 2028: 30.0, 2031: 45.0}
    assert moved_grid(steps, 2028, 0) == steps
    assert moved_grid(steps, 2028, 2) == {2026: 9.9, 2030: 30.0, 2031: 45.0}
    assert moved_grid(steps, 2028, -1) == {2026: 9.9, 2027: 30.0, 2031: 45.0}
    assert moved_grid(steps, 2026, 1) == {2026: 0.0, 2027: 9.9, 2028: 30.0, 2031: 45.0}
    for bad in (3, -2):
        with pytest.raises(ValueError):
            moved_grid(steps, 2028, bad)
    with pytest.raises(ValueError, match="no grid step in 2029"):
        moved_grid(steps, 2029, 1)


def test_the_baseline_sweeps_give_a_parameter_the_same_range_everywhere():
    specs = [load_sweep_spec(p) for p in SHIPPED if p.name.startswith("baseline_")]
    assert {s.name for s in specs} == {"baseline_morris", "baseline_sobol", "baseline_lhs",
                                       "baseline_perf_fits"}
    seen: dict[str, dict] = {}
    for spec in specs:
        for p in spec.parameters:
            dump = p.model_dump()
            assert seen.setdefault(p.name, dump) == dump, (spec.name, p.name)
