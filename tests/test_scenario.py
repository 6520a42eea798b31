"""Scenario files: schema, defaults, demand conversion, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcplan.catalog import load_catalog
from dcplan.errors import InputError
from dcplan.scenario import (
    Periods,
    apply_overrides,
    load_scenario,
    parse_scenario,
    resolve_scenario,
)
from dcplan.sites import load_sites
from dcplan.units import SECONDS_PER_MONTH

FIX = Path(__file__).parent / "fixtures" / "planner"
EXAMPLES = Path(__file__).parent.parent / "examples"

BASE = {
    "periods": {"start": 2026, "end": 2028},
    "sites": ["seoul_metro"],
    "workloads": ["chat"],
    "demand": {"table": {"chat": {2026: 1e12, 2027: 2e12, 2028: 3e12}}},
    "economics": {"exchange_rates_usd_per_unit": {"KRW": 0.00072}},
}


@pytest.fixture(scope="module")
def data():
    return load_catalog(), load_sites()


def _msgs(exc: InputError) -> str:
    return "\n".join(str(p) for p in exc.problems)


def test_periods_years_and_quarters():
    years = Periods(start=2026, end=2028).expand()
    assert [p.label for p in years] == ["2026", "2027", "2028"]
    assert [p.offset_years for p in years] == [0.0, 1.0, 2.0]
    q = Periods(start="2026Q3", end="2027Q2", step="quarter").expand()
    assert [p.label for p in q] == ["2026q3", "2026q4", "2027q1", "2027q2"]
    assert q[1].start.month == 10 and q[1].years == 0.25 and q[3].offset_years == 0.75


def test_demand_table_and_growth_to_tokens_per_s():
    scn = parse_scenario({**BASE, "workloads": ["chat", "rag"], "demand": {
        "peak_to_average": {"chat": 2.0},
        "table": {"chat": {2026: 1e12, 2027: 2e12, 2028: 3e12}},
        "growth": {"rag": {"start": 1e12, "annual_growth": 1.0}}}})
    d = scn.demand_tokens_per_s()
    assert d["chat", "2027"] == pytest.approx(2e12 / SECONDS_PER_MONTH)
    assert d["rag", "2028"] == pytest.approx(4e12 / SECONDS_PER_MONTH)
    assert scn.peak_factor("chat") == 2.0 and scn.peak_factor("rag") == 1.0


def test_quarterly_demand_accepts_year_keys():
    scn = parse_scenario({**BASE, "periods": {"start": "2026Q1", "end": "2026Q4",
                                              "step": "quarter"},
                          "demand": {"table": {"chat": {2026: 3e12}}}})
    d = scn.demand_tokens_per_s()
    assert d["chat", "2026q3"] == pytest.approx(3e12 / SECONDS_PER_MONTH)


def test_minimal_example_resolves(data):
    catalog, sites = data
    scn = load_scenario(EXAMPLES / "minimal.yaml")
    cat2, sites2 = resolve_scenario(scn, catalog, sites)
    assert scn.sites == ["seoul_metro", "honam_haenam"]
    assert set(scn.workload_ids()) == {"chat", "coding_agent"}


def test_schema_errors_all_at_once_with_lines():
    with pytest.raises(InputError) as err:
        load_scenario(FIX / "bad_schema.yaml")
    text = _msgs(err.value)
    assert len(err.value.problems) == 3
    assert "bad_schema.yaml:9" in text and "demand.table.chat.2027" in text and ">= 0" in text
    assert "did you mean 'discount_rate'" in text and "bad_schema.yaml:11" in text
    assert "solver.name" in text and "'gurobi'" in text


def test_reference_errors_all_at_once(data):
    catalog, sites = data
    scn = load_scenario(FIX / "bad_refs.yaml")
    with pytest.raises(InputError) as err:
        resolve_scenario(scn, catalog, sites)
    text = _msgs(err.value)
    assert "unknown site id 'seoul_metr' (did you mean 'seoul_metro'?)" in text
    assert "bad_refs.yaml:4" in text
    assert "period 2030 is outside the horizon 2026..2028" in text
    assert "capex_usdd" in text and "did you mean 'capex_usd'" in text


@pytest.mark.parametrize("change, needle", [
    ({"sites": ["atlantis"]}, "unknown site id 'atlantis'"),
    ({"demand": {"table": {"chat": {2026: 1e12, 2027: 2e12}}}}, "no demand for period(s) 2028"),
    ({"demand": {"table": {"chat": {2026: 1, 2027: 1, 2028: 1, 2031: 1}}}}, "outside the horizon"),
    ({"workloads": ["chat", "rag"]}, "workload 'rag' has no demand"),
    ({"rules": [{"workload": "chat", "regions": ["mars"]}]}, "region 'mars'"),
    ({"existing_fleet": [{"site": "seoul_metro", "rack": "gb200_nvl72", "count": 3,
                          "installed": 2027}]}, "after the first period"),
    ({"overrides": [{"kind": "racks", "id": "gb200_nvl72", "field": "capex_usd",
                     "scale": -1}]}, "capex_usd"),
    ({"overrides": [{"kind": "rackz", "id": "gb200_nvl72", "field": "capex_usd",
                     "scale": 2}]}, "did you mean 'racks'"),
    ({"economics": {}}, "exchange_rates_usd_per_unit.KRW"),
])
def test_bad_references(data, change, needle):
    catalog, sites = data
    scn = parse_scenario({**BASE, **change}, "x.yaml")
    with pytest.raises(InputError) as err:
        resolve_scenario(scn, catalog, sites)
    assert needle in _msgs(err.value)


@pytest.mark.parametrize("change, needle", [
    ({"periods": {"start": 2028, "end": 2026}}, "before start"),
    ({"demand": {"table": {}}}, "no demand given"),
    ({"demand": {"table": {"chat": {2026: -1}}}}, ">= 0"),
    ({"rules": [{"workload": "chat"}]}, "exactly one of 'sites' or 'regions'"),
    ({"overrides": [{"kind": "racks", "id": "x", "field": "y", "set": 1, "scale": 2}]},
     "exactly one of 'set'"),
    ({"periodz": 1}, "did you mean 'periods'"),
])
def test_bad_schema(change, needle):
    with pytest.raises(InputError) as err:
        parse_scenario({**BASE, **change}, "x.yaml")
    assert needle in _msgs(err.value)


def test_overrides_scale_set_and_grid_step(data):
    catalog, sites = data
    scn = parse_scenario({**BASE, "overrides": [
        {"kind": "racks", "id": "gb200_nvl72", "field": "capex_usd", "scale": 1.2},
        {"kind": "workloads", "id": "chat", "field": "cache_hit_frac", "set": 0.5},
        {"kind": "sites", "id": "seoul_metro", "field": "grid_mw", "add": 50, "from_year": 2028},
    ]})
    cat2, sites2 = apply_overrides(scn, catalog, sites)
    assert cat2.get("racks", "gb200_nvl72").capex_usd == pytest.approx(
        1.2 * catalog.get("racks", "gb200_nvl72").capex_usd)
    assert cat2.get("workloads", "chat").cache_hit_frac == 0.5
    old, new = sites["seoul_metro"], sites2["seoul_metro"]
    for year in (2026, 2027, 2028, 2029, 2031, 2035):
        extra = 50 if year >= 2028 else 0
        assert new.grid_mw_in(year) == pytest.approx(old.grid_mw_in(year) + extra)
    # The originals are untouched.
    assert sites["seoul_metro"].grid_mw_in(2028) == old.grid_mw_in(2028)
