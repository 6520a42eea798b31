"""On-site (bridge) generation as a decision of the MILP, checked by hand.

See :mod:`dcplan.planner.supply`: capacity bought from the entry's lead time on,
dispatched per hour in the site's power balance, with its fuel, carbon and cost.
"""

from __future__ import annotations

import dataclasses

import pytest
from test_planner_helpers import make_inputs, rack, rack_site, site, workload

from dcplan.planner import solve_inputs
from dcplan.planner.inputs import GridData, OnsiteData
from dcplan.scenario import SolverOptions
from dcplan.units import HOURS_PER_YEAR

H = HOURS_PER_YEAR


def gas(fuel=0.15, carbon=0.5, first=1, capex=100.0):
    """Generation ``gt``: 90 % available, from period ``first`` on, 20-year life."""
    return OnsiteData("gt", capex_usd_per_kw=capex, fuel_usd_per_kwh=(fuel,) * 3,
                      carbon_kg_per_kwh=carbon, availability=0.9, first_period=first,
                      life_years=20.0)


def bridged(gen=True, fuel=0.15, util=1.0, **kw):
    """2026-2028, rack ``ra`` (0 kW idle, 10 kW serving 100 tokens/s, no losses or
    cooling), ``wa`` 0, 100, 100 tokens/s (one rack from 2027); ``sa``'s grid is a
    decision: nothing committed, a request energised two periods later at 50 USD/kW
    (a 2026 request serves from 2028), at most 100 kW; grid energy 0.1 USD/kWh."""
    g = GridData(committed_kw=(0.0,) * 3, arrival=(2, 3, 3), arrival_assessed=(3, 3, 3),
                 cost_usd_per_kw=50.0)
    s = dataclasses.replace(site(n=3, grid_kw=100.0, price=0.1), connection=g)
    w = dataclasses.replace(workload(demand=(0.0, 100.0, 100.0)), target_utilisation=util)
    return make_inputs(n=3, racks=[rack(kw_idle=0.0, kw_max=10.0)], sites=[s], workloads=[w],
                       rack_sites={("ra", "sa"): rack_site()},
                       onsite={"sa": (gas(fuel=fuel, **kw),)} if gen else {})


def _solve(d):
    return solve_inputs(d, SolverOptions(time_limit_s=60, gap=1e-9), explain=False)


def test_bridge_generation_serves_the_site_before_its_grid_connection():
    # without generation, 2027's rack has no power: demand goes unserved
    assert _solve(bridged(gen=False)).unserved
    res = _solve(bridged())
    assert not res.unserved
    src = res.tables["sources"].set_index("period")
    # 2027: 10 kW served by generation; 10 / 0.9 = 11.11 kW bought for its availability
    assert src.loc["2027", "onsite_capacity_kw"] == pytest.approx(10 / 0.9, rel=1e-6)
    assert src.loc["2027", "onsite_mwh"] == pytest.approx(10 * H / 1000, rel=1e-6)
    assert src.loc["2027", "grid_kw_peak"] == pytest.approx(0.0, abs=1e-6)
    # 2028: the 2026 request (10 kW) is energised; fuel at 0.15 USD/kWh is dearer than
    # the grid's 0.1, so the generator stands by
    assert src.loc["2028", "onsite_mwh"] == pytest.approx(0.0, abs=1e-6)
    assert src.loc["2028", "grid_mwh"] == pytest.approx(10 * H / 1000, rel=1e-6)
    grid = res.tables["grid"].set_index("period")
    assert grid.filter(like="request").sum(axis=1).loc["2026"] == pytest.approx(10.0, rel=1e-6)
    costs = res.tables["costs"].pivot_table(index="category", columns="period",
                                            values="cost_usd", aggfunc="sum").fillna(0.0)
    assert costs.loc["onsite_capex", "2027"] == pytest.approx(100.0 * 10 / 0.9, rel=1e-6)
    assert costs.loc["onsite_fuel", "2027"] == pytest.approx(10 * H * 0.15, rel=1e-6)
    assert costs.loc["energy", "2027"] == pytest.approx(0.0, abs=1e-6)
    assert costs.loc["energy", "2028"] == pytest.approx(10 * H * 0.1, rel=1e-6)
    assert costs.loc["grid_connection", "2026"] == pytest.approx(10 * 50.0, rel=1e-6)
    assert src.loc["2027", "onsite_carbon_t"] == pytest.approx(10 * H * 0.5 / 1000, rel=1e-6)
    # the power table's carbon: on-site generation's in 2027 (0.5 kg/kWh), the grid's
    # (0.5 kg/kWh on 10 kW bought) in 2028
    carbon = res.tables["power"].set_index("period").carbon_t
    assert carbon["2027"] == pytest.approx(10 * H * 0.5 / 1000, rel=1e-6)
    assert carbon["2028"] == pytest.approx(10 * H * 0.5 / 1000, rel=1e-6)
    assert res.tables["costs"].cost_usd_discounted.sum() == pytest.approx(
        res.objective_usd, rel=1e-6)


def test_generation_covers_the_headroom_but_generates_only_the_load_served():
    # at 80 % target utilisation the peak counts 10 / 0.8 = 12.5 kW (headroom racks at
    # serving power) while 10 kW are served on average: the generator is sized for the
    # peak (12.5 / 0.9 kW) and generates the served 10 kW, never exporting
    res = _solve(bridged(util=0.8))
    src = res.tables["sources"].set_index("period")
    assert src.loc["2027", "onsite_capacity_kw"] == pytest.approx(12.5 / 0.9, rel=1e-6)
    assert src.loc["2027", "onsite_mwh"] == pytest.approx(10 * H / 1000, rel=1e-6)
    assert src.loc["2027", "grid_mwh"] == pytest.approx(0.0, abs=1e-6)


def test_cheap_generation_displaces_grid_energy_but_never_exports():
    # fuel at 0.05 USD/kWh beats the grid's 0.1: the generator runs all year from 2027,
    # and the grid carries nothing (no export: the grid energy is never negative)
    res = _solve(bridged(fuel=0.05))
    src = res.tables["sources"].set_index("period")
    for per in ("2027", "2028"):
        assert src.loc[per, "onsite_mwh"] == pytest.approx(10 * H / 1000, rel=1e-6)
        assert src.loc[per, "grid_mwh"] == pytest.approx(0.0, abs=1e-6)


def test_no_generation_before_its_lead_time():
    # generation only from 2028 (first=2) cannot bridge 2027: demand goes unserved there
    res = _solve(bridged(first=2))
    assert res.unserved
    assert "2027" in set(res.tables["unserved"].period)


# --- bad input ----------------------------------------------------------------------------

BAD_GEN = """\
- id: bad_gt
  name: Turbine without a heat rate
  technology: gas_turbine
  capex_usd_per_kw: 1600
  heat_rate_mmbtu_per_mwh: 0
  fuel_price_usd_per_mmbtu: 10
  emissions_kg_per_mwh: 480
  availability_frac: 0.95
  permitting_lead_time_months: 18
  lifetime_years: 25
  source: "test fixture"
  as_of: 2025-01
"""


def test_a_heat_rate_of_zero_names_file_entry_and_field(tmp_path, min_catalog_dir):
    from dcplan.catalog import load_catalog
    from dcplan.errors import InputError

    path = tmp_path / "onsite_generation.yaml"
    path.write_text(BAD_GEN)
    with pytest.raises(InputError) as info:
        load_catalog(min_catalog_dir, extra_files={"onsite_generation": path})
    (p,) = info.value.problems
    assert p.file.endswith("onsite_generation.yaml")
    assert (p.entry, p.field, p.line) == ("bad_gt", "heat_rate_mmbtu_per_mwh", 5)
    assert "must be > 0" in p.message


def test_an_unknown_offer_in_the_scenario_names_the_field(tmp_path):
    from pathlib import Path

    from dcplan.case import load_case
    from dcplan.errors import InputError

    minimal = Path(__file__).resolve().parents[1] / "examples" / "minimal.yaml"
    scn = tmp_path / "s.yaml"
    scn.write_text(f"extends: {minimal}\nonsite_generation: [gas_turbin]\n"
                   "storage: {nowhere: [lfp_container_4h]}\n")
    with pytest.raises(InputError) as info:
        load_case(scn)
    msgs = [(p.field, p.message) for p in info.value.problems]
    assert any(f == "onsite_generation" and "gas_turbine_aero" in m for f, m in msgs), msgs
    assert any(f == "storage" and "nowhere" in m for f, m in msgs), msgs


# --- properties ---------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _onsite_mwh(res) -> float:
    src = res.tables.get("sources")
    return 0.0 if src is None else float(src.onsite_mwh.sum())


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fuel=st.floats(0.01, 0.2), capex=st.floats(0.0, 300.0))
def test_offering_bridge_power_never_makes_a_plan_dearer(fuel, capex):
    # the grid arrives in 2028; bridge power from 2027 may serve 2027 (or not be bought)
    def inputs(gen):
        g = GridData(committed_kw=(0.0, 0.0, 100.0), arrival=(3, 3, 3),
                     arrival_assessed=(3, 3, 3), cost_usd_per_kw=50.0)
        s = dataclasses.replace(site(n=3, grid_kw=100.0, price=0.1), connection=g)
        return make_inputs(n=3, racks=[rack(kw_idle=0.0, kw_max=10.0)], sites=[s],
                           workloads=[workload(demand=(0.0, 0.0, 100.0))],
                           rack_sites={("ra", "sa"): rack_site()},
                           onsite={"sa": (gas(fuel=fuel, capex=capex),)} if gen else {})
    without = _solve(inputs(False))
    offered = _solve(inputs(True))
    assert not without.unserved and not offered.unserved
    assert offered.objective_usd <= without.objective_usd * (1 + 1e-7) + 1e-6


def _capped(frac):
    """``bridged`` with generation from 2026, fuel 0.05 USD/kWh, 0.8 kg/kWh, the grid
    committed (100 kW) from 2027, and 2027's emissions capped at ``frac`` x 70,080 kg
    (10 kW x 8760 h x 0.8 kg/kWh: the generator's own, uncapped)."""
    d = bridged(fuel=0.05, first=0, carbon=0.8)
    d = dataclasses.replace(d, carbon_cap_kg=(None, frac * 10 * H * 0.8, None))
    d.sites["sa"] = dataclasses.replace(
        d.sites["sa"], connection=GridData(committed_kw=(0.0, 100.0, 100.0),
                                           arrival=(3, 3, 3), arrival_assessed=(3, 3, 3),
                                           cost_usd_per_kw=50.0))
    return _solve(d)


def test_a_carbon_cap_moves_energy_from_dirtier_generation_to_the_grid():
    # cap 0.8 x 70,080 = 56,064 kg; the grid (0.5 kg/kWh) for the rest of the 87,600 kWh:
    # 0.8 g + 0.5 (87,600 - g) = 56,064  ->  g = (56,064 - 43,800) / 0.3 = 40,880 kWh
    res = _capped(0.8)
    src = res.tables["sources"].set_index("period")
    assert src.loc["2027", "onsite_mwh"] == pytest.approx(40.88, rel=1e-6)
    assert res.tables["power"].set_index("period").carbon_t["2027"] == pytest.approx(
        56.064, rel=1e-6)
    # uncapped it runs all year
    assert _capped(10.0).tables["sources"].set_index("period").loc[
        "2027", "onsite_mwh"] == pytest.approx(87.6, rel=1e-6)


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=st.floats(0.63, 1.2), b=st.floats(0.63, 1.2))
def test_a_stricter_carbon_cap_never_increases_bridge_energy(a, b):
    # generation cheaper than the grid (0.05 vs 0.1 USD/kWh) and dirtier (0.8 vs 0.5
    # kg/kWh); caps from 0.63 x its uncapped emissions (the grid alone needs 0.625 x)
    loose, strict = _capped(max(a, b)), _capped(min(a, b))
    assert not loose.unserved and not strict.unserved
    assert _onsite_mwh(strict) <= _onsite_mwh(loose) + 1e-6


# --- the time-to-power example ------------------------------------------------------------


@pytest.mark.slow
def test_time_to_power_example_serves_two_years_before_the_grid(tmp_path):
    from pathlib import Path

    import dcplan
    from dcplan.case import load_case
    from dcplan.planner import solve_case

    ex = Path(__file__).resolve().parents[1] / "examples"

    def first_served(res):
        dem = res.tables["demand"].groupby("period").served_tokens_per_s_avg.sum()
        return str(min(p for p, v in dem.items() if v > 0))
    bridged_plan = solve_case(load_case(ex / "time_to_power.yaml"), size=False)
    grid_only = solve_case(load_case(ex / "time_to_power_grid_only.yaml"), size=False)
    # the grid arrives in 2029; engines and fuel cells (9-12 months) from 2027
    assert first_served(grid_only) == "2029"
    assert first_served(bridged_plan) == "2027"
    src = bridged_plan.tables["sources"].set_index("period")
    assert src.loc["2027", "onsite_capacity_kw"] > 0 and src.loc["2027", "grid_kw_peak"] < 1e-6
    # the terminal says when the site serves its first tokens
    from dcplan.export.terminal import _sources_section

    assert "First tokens served (time to power): gangwon_chuncheon 2027" in " ".join(
        _sources_section(bridged_plan, 200))
    # the report's facility chart says why the facility stands above the grid limit
    from dcplan.export.html import build_html

    note = "the facility may stand above the grid limit"
    assert note in build_html(bridged_plan) and note not in build_html(grid_only)
    # a saved plan keeps its sources and dispatch tables
    back = dcplan.load_plan(dcplan.api.Plan(bridged_plan).save(tmp_path / "t.plan"))
    for name in ("sources", "dispatch"):
        got, want = back.tables[name], bridged_plan.tables[name]
        assert list(got.columns) == list(want.columns) and len(got) == len(want)
    assert back.tables["sources"].onsite_mwh.sum() == pytest.approx(
        bridged_plan.tables["sources"].onsite_mwh.sum())
    # both plans' costs are the solver's objective (unserved penalty included)
    for res in (bridged_plan, grid_only):
        assert res.tables["costs"].cost_usd_discounted.sum() == pytest.approx(
            res.objective_usd, rel=1e-6)
