"""Bad input to the planner's realism features gets one clear error naming file, entry and
field; the new scenario and site fields load and reach the planner's inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcplan.case import load_case
from dcplan.errors import InputError
from dcplan.sites import load_sites

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "scenarios"


def _problems(name: str):
    with pytest.raises(InputError) as info:
        load_case(FIXTURES / name)
    return info.value.problems, str(info.value)


@pytest.mark.parametrize("fixture, field, entry, words", [
    ("profile_23_hours.yaml", "demand.profiles.chat", "chat", ["24 values", "got 23"]),
    ("profile_mean.yaml", "demand.profiles.chat", "chat", ["average 1.25", "must average 1"]),
    ("utilisation_above_one.yaml", "serving.target_utilisation.chat", "chat", ["<= 1", "1.2"]),
    ("path_gap.yaml", "paths.rack_capex.gb200_nvl72.by_year", "gb200_nvl72",
     ["no value for 2027", "no gaps"]),
    ("profile_unknown.yaml", "demand.profiles.chat", "chat",
     ["kr_consumer_chatt", "kr_consumer_chat"]),
])
@pytest.mark.slow
def test_bad_realism_inputs(fixture, field, entry, words):
    problems, text = _problems(fixture)
    assert len(problems) == 1, text
    p = problems[0]
    assert p.file.endswith(f"fixtures/scenarios/{fixture}")
    assert p.field == field
    assert p.entry == entry
    assert p.line is not None
    for w in words:
        assert w in p.message, p.message


def test_lead_time_longer_than_horizon_names_the_site_file():
    problems, text = _problems("lead_time_horizon.yaml")
    assert len(problems) == 1, text
    p = problems[0]
    assert p.file.endswith("sites_lead/far_site.yaml")
    assert p.entry == "far_site"
    assert p.field == "grid_connection.lead_time_months"
    assert p.line is not None
    assert "40 months" in p.message and "24 months" in p.message and "(2028)" in p.message


def test_site_build_parts_and_committed_grid_are_checked(tmp_path):
    src = (ROOT / "sites" / "honam_haenam.yaml").read_text()
    bad = src.replace("build_mechanical_usd_per_mw: 1170000\n", "").replace(
        "committed_mw: {2027: 40}", "committed_mw: {2027: 80}")
    (tmp_path / "h.yaml").write_text(bad)
    with pytest.raises(InputError) as info:
        load_sites(tmp_path)
    text = str(info.value)
    assert "build_mechanical_usd_per_mw" in text and "honam_haenam" in text
    assert "committed_mw exceeds grid_mw in 2027" in text


@pytest.mark.slow
def test_baseline_inputs_carry_the_new_fields(baseline_inputs):
    d = baseline_inputs
    seoul = d.sites["seoul_metro"]
    g = seoul.connection
    # 9.9 MW committed; 48 months + 6 for the assessment: a 2026 request energises in
    # mid 2030, i.e. from the 2031 period
    assert g.committed_kw[0] == pytest.approx(9900.0)
    assert d.periods[g.arrival[0]].label == "2030"
    assert d.periods[g.arrival_assessed[0]].label == "2031"
    assert dict(seoul.build_parts_usd_per_kw) == {"shell": 4500.0, "electrical": 5400.0,
                                                   "mechanical": 1520.0}
    assert d.workloads["batch"].flexible and d.workloads["chat"].profile is not None
    assert d.workloads["chat"].target_utilisation == 0.8
    assert d.racks["gb200_nvl72"].capex_path[1] == pytest.approx(3.0e6 * 0.85)
    assert d.energy_price("seoul_metro", 1) == pytest.approx(
        d.energy_price("seoul_metro", 0) * 1.02)
    assert d.carbon_price(0) == pytest.approx(7.0 / 1000)
    assert d.day_names == ("weekday", "weekend")


def _variant(tmp_path, text: str):
    """Problems of the base fixture extended by ``text`` (a scenario written in tmp)."""
    import shutil

    shutil.copy(FIXTURES / "_base.yaml", tmp_path / "_base.yaml")
    path = tmp_path / "s.yaml"
    path.write_text(f"extends: _base.yaml\nname: variant\n{text}")
    with pytest.raises(InputError) as info:
        load_case(path)
    return info.value.problems, str(info.value)


@pytest.mark.parametrize("text, field, words", [
    # an empty list of representative days (it divided by zero: exit 3)
    ("demand:\n  profiles:\n    chat: {days: []}\n", "demand.profiles.chat",
     ["at least one representative day"]),
    # every hourly value 0 (the hint said to divide each by 0)
    ("demand:\n  profiles:\n    chat: {hours: [" + ", ".join(["0"] * 24) + "]}\n",
     "demand.profiles.chat", ["every hourly value is 0"]),
    # a speedup of 0 serves nothing; one error, not one per member of the union
    ("paths:\n  software_speedup: {by_year: {2026: 1, 2027: 0, 2028: 1.2}}\n",
     "paths.software_speedup.by_year.2027", ["must be > 0"]),
    # a negative price is refused, and not reported again as a gap
    ("paths:\n  rack_capex:\n    gb200_nvl72: {by_year: {2026: 3.0e+6, 2027: -1, 2028: 2.0e+6}}"
     "\n", "paths.rack_capex.gb200_nvl72.by_year.2027", [">= 0"]),
    # a deadline without flexible work would be ignored
    ("demand:\n  profiles:\n    chat: {profile: kr_consumer_chat, deadline_hours: 12}\n",
     "demand.profiles.chat", ["'deadline_hours' applies only to flexible work"]),
    # a misspelt field of a path, and of a profile day: a did-you-mean
    ("paths:\n  rack_capex:\n    gb200_nvl72: {annual_chnage: -0.1}\n",
     "paths.rack_capex.gb200_nvl72.annual_chnage", ["did you mean 'annual_change'"]),
    ("demand:\n  profiles:\n    chat:\n      days:\n        - {wieght: 5, hours: ["
     + ", ".join(["1"] * 24) + "]}\n", "demand.profiles.chat.days.0.wieght",
     ["did you mean 'weight'"]),
    # from_year on a plain number, and after the horizon
    ("overrides:\n  - {kind: sites, id: honam_haenam, field: rack_positions, add: 10, "
     "from_year: 2027}\n", "overrides.0", ["year-keyed step function", "remove 'from_year'"]),
    ("overrides:\n  - {kind: sites, id: honam_haenam, field: grid_mw, add: 10, "
     "from_year: 2050}\n", "overrides.0", ["after the plan's horizon", "2026..2028"]),
    # true / false in a number field (it was read as 1 / 0)
    ("serving: {target_utilisation: true}\n", "serving.target_utilisation",
     ["expected a number, got true"]),
    # a catalog workload that the scenario does not serve (it said "unknown")
    ("serving: {target_utilisation: {rag: 0.8}}\n", "serving.target_utilisation.rag",
     ["'rag' is not a workload of this scenario", "add it to 'workloads'"]),
    ("serving: {availability: {gb200_nvl72: false}}\n", "serving.availability.gb200_nvl72",
     ["expected a number, got false"]),
    ("solver: {highs_options: {mip_heuristc_effort: 0.2}}\n", "solver.highs_options",
     ["not a HiGHS option", "did you mean 'mip_heuristic_effort'"]),
])
@pytest.mark.slow
def test_more_bad_realism_inputs(tmp_path, text, field, words):
    problems, out = _variant(tmp_path, text)
    assert len(problems) == 1, out
    p = problems[0]
    assert p.field == field, out
    assert p.file.endswith("s.yaml") and p.line is not None, out
    for w in words:
        assert w in p.message, p.message


def test_a_lead_time_past_the_last_period_start_set_by_an_override_names_the_override(
        tmp_path):
    """A request at the start of 2026 with a 30-month lead time is energised mid-2028,
    after the last period (2028) starts (24 months in): never connected. The error
    names the scenario's override that set the lead time, not the site file."""
    import shutil

    for f in (FIXTURES / "sites_lead").iterdir():
        (tmp_path / "sites_lead").mkdir(exist_ok=True)
        shutil.copy(f, tmp_path / "sites_lead" / f.name)
    text = (FIXTURES / "lead_time_horizon.yaml").read_text()
    (tmp_path / "s.yaml").write_text(
        text + "overrides:\n  - {kind: sites, id: far_site, field: "
        "grid_connection.lead_time_months, set: 30}\n")
    with pytest.raises(InputError) as info:
        load_case(tmp_path / "s.yaml")
    (p,) = info.value.problems
    assert p.file.endswith("s.yaml") and p.field == "overrides.0" and p.entry == "far_site"
    assert "30 months" in p.message and "24 months" in p.message
    # 24 months: energised in 2028, a valid input
    (tmp_path / "ok.yaml").write_text(
        text + "overrides:\n  - {kind: sites, id: far_site, field: "
        "grid_connection.lead_time_months, set: 24}\n")
    load_case(tmp_path / "ok.yaml")
