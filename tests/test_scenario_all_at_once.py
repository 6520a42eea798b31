"""Scenario problems all at once: schema, references and overrides together, each on its line."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from dcplan.case import load_case
from dcplan.catalog import load_catalog
from dcplan.cli import app
from dcplan.errors import InputError
from dcplan.scenario import load_scenario, scenario_problems
from dcplan.sites import load_sites

runner = CliRunner()

BAD = """\
name: bad
periods: {start: 2026, end: 2030, step: year}
sites: [seoul_metro, seoul_metr]
racks: [gb200_nvl72]
workloads: [chat, chatt]
demand:
  unit: tokens_per_month
  peak_to_average: 0.5
  table:
    chat: {2026: 1.0e12, 2027: 1, 2028: 1, 2029: 1, 2030: 1, 2040: 2e12}
    chatt: {2026: 1.0e12, 2027: 1, 2028: 1, 2029: 1, 2030: 1}
economics:
  discount_rat: 0.08
  exchange_rates_usd_per_unit: {KRW: 0.00072}
existing_fleet:
  - {site: nowhere, rack: gb200_nvl72, count: 1, installed: 2025}
rules:
  - {workload: rag, sites: [seoul_metro]}
overrides:
  - {kind: racks, id: gb200_nvl72, field: capex_usdd, scale: 1.2}
  - {kind: sites, id: seoul_metro, field: grid_mww, add: 5}
  - {kind: rackz, id: x, field: y, set: 1}
"""


@pytest.fixture
def bad(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text(BAD)
    return f


def _by_field(problems):
    """Field -> first problem with that field."""
    out = {}
    for p in problems:
        out.setdefault(p.field, p)
    return out


def test_schema_and_reference_problems_together(bad):
    with pytest.raises(InputError) as exc:
        load_case(bad)
    got = _by_field(exc.value.problems)
    # schema problems
    assert got["economics.discount_rat"].line == 13
    assert got["demand.peak_to_average"].line == 8
    # reference problems, reported in the same run
    assert "unknown site id 'seoul_metr'" in got["sites"].message
    assert "unknown workload id 'chatt'" in got["workloads"].message
    assert "outside the horizon" in got["demand.table.chat"].message
    assert got["demand.table.chat"].line == 10
    # each list entry on its own line
    assert got["existing_fleet.0.site"].line == 16
    assert got["rules.0.workload"].line == 18
    assert [got[f"overrides.{i}"].line for i in range(3)] == [20, 21, 22]
    # rag is a catalog workload, just not one of this scenario
    msg = got["rules.0.workload"].message
    assert "not a workload of this scenario" in msg and "unknown" not in msg
    # no follow-on problem from the broken economics section
    assert "economics.exchange_rates_usd_per_unit" not in got


@pytest.mark.slow
def test_validate_and_plan_report_everything_once(bad):
    for args in (["validate", str(bad)], ["plan", "-q", str(bad)]):
        result = runner.invoke(app, args)
        assert result.exit_code == 1, result.output
        err = result.stderr
        for text in ("discount_rat", "seoul_metr'", "chatt'", "2040", "nowhere",
                     "'rag' is not a workload of this scenario", "capex_usdd", "grid_mww",
                     "rackz"):
            assert text in err, (args, text, err)


def test_broken_list_item_keeps_original_index(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(BAD.replace("  discount_rat: 0.08\n", "").replace(
        "  - {kind: racks, id: gb200_nvl72, field: capex_usdd, scale: 1.2}\n",
        "  - {kind: racks, id: gb200_nvl72, field: capex_usd}\n"))
    with pytest.raises(InputError) as exc:
        load_case(f)
    got = _by_field(exc.value.problems)
    assert "give exactly one of 'set', 'scale' or 'add'" in got["overrides.0"].message
    assert got["overrides.1"].line == 20 and "grid_mww" in got["overrides.1"].message
    assert got["overrides.2"].line == 21 and "rackz" in got["overrides.2"].message


def test_load_scenario_alone_checks_the_schema_only(bad):
    """Without catalogs and sites, only the schema problems are known."""
    with pytest.raises(InputError) as exc:
        load_scenario(bad)
    fields = {p.field for p in exc.value.problems}
    assert "economics.discount_rat" in fields and "sites" not in fields


def test_valid_file_problems_carry_item_lines(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(BAD.replace("  discount_rat: 0.08\n", "").replace(
        "peak_to_average: 0.5", "peak_to_average: 1.5"))
    scn = load_scenario(f)
    got = _by_field(scenario_problems(scn, load_catalog(), load_sites()))
    assert got["existing_fleet.0.site"].line == 15
    assert got["overrides.2"].line == 21
    assert got["workloads"].line == 5
