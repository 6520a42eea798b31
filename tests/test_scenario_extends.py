"""Scenario files that extend a base scenario and take demand from a forecast file."""

from __future__ import annotations

import textwrap

import pytest

from dcplan.errors import InputError
from dcplan.scenario import load_scenario

BASE = """\
name: base
periods: {start: 2026, end: 2028, step: year}
sites: [seoul_metro, honam_haenam]
demand:
  peak_to_average: 1.5
  forecast: {file: forecast.yaml, case: base}
existing_built_mw: {seoul_metro: 20, honam_haenam: 10}
overrides:
  - {kind: racks, id: gb200_nvl72, field: capex_usd, scale: 1.1}
"""

FORECAST = """\
unit: tokens_per_month
cases:
  base: {chat: {2026: 1.0e+12, 2027: 2.0e+12, 2028: 3.0e+12}}
  high: {chat: {2026: 1.0e+12, 2027: 4.0e+12, 2028: 9.0e+12}}
"""


#: The base with a demand table instead of the forecast, and the KRW rate its sites need.
TABLE_BASE = BASE.replace(
    "forecast: {file: forecast.yaml, case: base}",
    "table: {chat: {2026: 1.0e+12, 2027: 2.0e+12, 2028: 3.0e+12}}") + (
    "economics: {exchange_rates_usd_per_unit: {KRW: 0.00072}}\n")


def write(folder, name, text):
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def folder(tmp_path):
    write(tmp_path, "base.yaml", BASE)
    write(tmp_path, "forecast.yaml", FORECAST)
    return tmp_path


def test_forecast_fills_the_table(folder):
    scn = load_scenario(folder / "base.yaml")
    assert scn.demand.unit == "tokens_per_month"
    assert {int(k): v for k, v in scn.demand.table["chat"].items()} == {
        2026: 1.0e12, 2027: 2.0e12, 2028: 3.0e12}


def test_child_merges_mappings_replaces_lists_appends_overrides(folder):
    child = write(folder, "child.yaml", """\
        extends: base.yaml
        name: child
        sites: [honam_haenam]
        demand:
          forecast: {file: forecast.yaml, case: high}
        existing_built_mw: {seoul_metro: null, honam_haenam: 30}
        overrides:
          - {kind: racks, id: gb200_nvl72, field: lifetime_years, set: 6}
        """)
    scn = load_scenario(child)
    assert scn.name == "child"
    assert scn.sites == ["honam_haenam"]                      # list replaced
    assert scn.demand.peak_to_average == 1.5                  # kept from the base
    assert scn.demand.table["chat"][2028] == 9.0e12           # high case
    assert scn.existing_built_mw == {"honam_haenam": 30}      # null removed seoul_metro
    assert [o.field for o in scn.overrides] == ["capex_usd", "lifetime_years"]  # appended
    assert scn.periods == load_scenario(folder / "base.yaml").periods


def test_missing_base_is_clear(folder):
    child = write(folder, "child.yaml", "extends: nope.yaml\nname: x\n")
    with pytest.raises(InputError) as info:
        load_scenario(child)
    (p,) = info.value.problems
    assert p.file.endswith("child.yaml") and p.field == "extends" and p.line == 1
    assert "base scenario 'nope.yaml' not found" in p.message


def test_cycle_is_reported(folder):
    write(folder, "a.yaml", "extends: b.yaml\nname: a\n")
    write(folder, "b.yaml", "extends: a.yaml\nname: b\n")
    with pytest.raises(InputError, match="'extends' forms a cycle"):
        load_scenario(folder / "a.yaml")


def test_errors_in_the_base_name_the_base_file(folder):
    write(folder, "base.yaml", BASE.replace("peak_to_average: 1.5", "peak_to_averag: 1.5"))
    child = write(folder, "child.yaml", "extends: base.yaml\nname: child\n")
    with pytest.raises(InputError) as info:
        load_scenario(child)
    (p,) = info.value.problems
    assert p.file.endswith("base.yaml")
    assert "did you mean 'peak_to_average'" in p.message


def test_unknown_forecast_case_suggests(folder):
    write(folder, "base.yaml", BASE.replace("case: base", "case: bsae"))
    with pytest.raises(InputError) as info:
        load_scenario(folder / "base.yaml")
    (p,) = info.value.problems
    assert p.field == "demand.forecast.case" and p.line == 6
    assert "forecast has no case 'bsae'; did you mean 'base'?" in p.message


def test_forecast_and_table_together_is_an_error(folder):
    write(folder, "base.yaml", BASE.replace(
        "  forecast: {file: forecast.yaml, case: base}",
        "  forecast: {file: forecast.yaml, case: base}\n  table: {chat: {2026: 1}}"))
    with pytest.raises(InputError, match="either demand.table or demand.forecast"):
        load_scenario(folder / "base.yaml")


def test_missing_forecast_file(folder):
    (folder / "forecast.yaml").unlink()
    with pytest.raises(InputError, match="forecast file 'forecast.yaml' not found"):
        load_scenario(folder / "base.yaml")


def test_validate_cli_reports_schema_and_override_problems(tmp_path):
    from typer.testing import CliRunner

    from dcplan.cli import app

    (tmp_path / "base.yaml").write_text(TABLE_BASE)
    bad = write(tmp_path, "bad.yaml", """\
        extends: base.yaml
        name: bad
        demand:
          peak_to_average: {chat: 0.5}
        """)
    res = CliRunner().invoke(app, ["validate", str(bad)])
    assert res.exit_code == 1
    # one clean message for the union-typed field, no pydantic type tags
    assert "field 'demand.peak_to_average.chat': must be >= 1" in res.stderr
    assert "constrained" not in res.stderr and "problems found" not in res.stderr
    bad.write_text(textwrap.dedent("""\
        extends: base.yaml
        name: bad
        overrides:
          - {kind: sites, id: seoul_metro, field: grid_mww, set: 3}
        """))
    res = CliRunner().invoke(app, ["validate", str(bad)])
    assert res.exit_code == 1
    # the base's (valid) override is applied first, the child's is appended and reported
    assert "problems found" not in res.stderr
    assert "field 'overrides.1'" in res.stderr
    assert "site has no field 'grid_mww'; did you mean 'grid_mw'?" in res.stderr


def test_forecast_null_drops_the_base_forecast(folder):
    """``demand: {forecast: null, table: ...}``: the child's table replaces the base's forecast."""
    child = write(folder, "child.yaml", """\
        extends: base.yaml
        name: child
        demand:
          forecast: null
          unit: tokens_per_day
          table: {chat: {2026: 5.0e+10, 2027: 6.0e+10, 2028: 7.0e+10}}
        """)
    scn = load_scenario(child)
    assert scn.demand.unit == "tokens_per_day"
    table = {w: dict(v) for w, v in scn.demand.table.items()}
    assert {w: {str(k): x for k, x in v.items()} for w, v in table.items()} == {
        "chat": {"2026": 5.0e10, "2027": 6.0e10, "2028": 7.0e10}}


def test_checks_see_the_overridden_sites(tmp_path):
    """An override that gives a site the positions an existing fleet needs makes it valid."""
    from dcplan.case import load_case

    (tmp_path / "base.yaml").write_text(TABLE_BASE)
    fleet = ("existing_fleet:\n"
             "  - {site: seoul_metro, rack: gb200_nvl72, count: 400, installed: 2025}\n")
    write(tmp_path, "small.yaml", "extends: base.yaml\nname: small\n" + fleet)
    with pytest.raises(InputError, match="rack positions"):
        load_case(tmp_path / "small.yaml")
    write(tmp_path, "big.yaml", "extends: base.yaml\nname: big\n" + fleet + (
        "overrides:\n  - {kind: sites, id: seoul_metro, field: rack_positions, set: 1000}\n"))
    case = load_case(tmp_path / "big.yaml")
    assert case.sites["seoul_metro"].rack_positions == 1000
