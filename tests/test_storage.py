"""Battery storage as a decision of the MILP, checked by hand on tiny instances.

See :mod:`dcplan.planner.supply`: per site and period usable energy and power bought,
charge and discharge in every hour of the representative day, the state of charge
cycling within the day, the round-trip loss counted on charge, the grid carrying load
minus discharge plus charge.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from test_planner_helpers import make_inputs, rack, rack_site, site, workload

from dcplan.planner import solve_inputs
from dcplan.planner.inputs import StorageData
from dcplan.scenario import SolverOptions
from dcplan.units import HOURS_PER_YEAR

#: 23 hours at 0.95 of the mean and one (23:00-24:00) at 2.15: mean 1.
SHAPE = tuple([0.95] * 23 + [2.15])
ETA = 0.85
BAT = StorageData("bat", capex_usd_per_kwh=1.0, capex_usd_per_kw=1.0, efficiency=ETA,
                  depth_of_discharge=1.0, life_years=10.0)


def peaky(grid_kw: float, storage: bool, demand_charge: float = 0.0):
    """One period (2026), rack ``ra`` drawing 0 kW idle and 10 kW serving 100 tokens/s,
    no losses or cooling; ``wa`` 100 tokens/s on average with :data:`SHAPE`, so the
    facility draws 10 x 0.95 = 9.5 kW for 23 hours and 10 x 2.15 = 21.5 kW in hour 23."""
    w = dataclasses.replace(workload(demand=(100.0,), peak=max(SHAPE)), profile=SHAPE)
    return make_inputs(n=1, racks=[rack(kw_idle=0.0, kw_max=10.0)], workloads=[w],
                       sites=[site(n=1, grid_kw=grid_kw, demand_charge=demand_charge)],
                       rack_sites={("ra", "sa"): rack_site()},
                       storage={"sa": (BAT,)} if storage else {})


def _solve(d):
    return solve_inputs(d, SolverOptions(time_limit_s=60, gap=1e-9), explain=False)


def test_battery_shaves_the_one_peak_hour_under_a_grid_limit():
    # without a battery, 21.5 kW against a 15 kW grid leaves demand unserved
    assert _solve(peaky(15.0, storage=False)).unserved
    res = _solve(peaky(15.0, storage=True))
    assert not res.unserved
    hourly = res.tables["dispatch"]
    src = res.tables["sources"].iloc[0]
    dis = dict(enumerate(hourly.battery_discharge_kw))
    ch = dict(enumerate(hourly.battery_charge_kw))
    assert list(hourly.facility_kw) == pytest.approx([9.5] * 23 + [21.5])
    # the peak hour needs 21.5 - 15 = 6.5 kW from the battery, and the cheapest battery
    # (1 USD per kWh and per kW) is exactly that: 6.5 kWh usable, 6.5 kW
    assert dis[23] == pytest.approx(6.5, abs=1e-6)
    assert src.battery_kwh == pytest.approx(6.5, abs=1e-6)
    assert src.battery_kw == pytest.approx(6.5, abs=1e-6)
    # the day cycles: what is discharged was charged, less the round-trip loss
    assert ETA * sum(ch.values()) == pytest.approx(sum(dis.values()), abs=1e-6)
    # the grid never carries more than 15 kW, in any hour
    for h in range(24):
        load = 21.5 if h == 23 else 9.5
        assert load - dis[h] + ch[h] <= 15.0 + 1e-6
    assert src.grid_kw_peak <= 15.0 + 1e-6
    # the sources at the grid's peak: the peak hour (23), not a charging hour at 15 kW too
    assert src.grid_peak_hour == "h23"
    assert src.facility_kw_at_grid_peak == pytest.approx(21.5)
    assert src.battery_discharge_kw_at_grid_peak == pytest.approx(6.5, abs=1e-6)
    assert src.battery_loss_mwh == pytest.approx(
        (6.5 / ETA - 6.5) / 24 * HOURS_PER_YEAR / 1000, rel=1e-6)
    # energy bought: the facility's 23 x 9.5 + 21.5 = 240 kWh a day plus the loss
    # 6.5 / 0.85 - 6.5 = 1.147 kWh, at 0.1 USD/kWh over the year
    loss = 6.5 / ETA - 6.5
    costs = res.tables["costs"].set_index("category").cost_usd
    assert costs["energy"] == pytest.approx((240.0 + loss) / 24 * HOURS_PER_YEAR * 0.1,
                                            rel=1e-6)
    assert costs["storage_capex"] == pytest.approx(6.5 + 6.5, rel=1e-6)
    # the tables' costs are the solver's objective
    assert res.tables["costs"].cost_usd_discounted.sum() == pytest.approx(
        res.objective_usd, rel=1e-6)


def test_battery_shaves_the_demand_charge_when_it_pays():
    # 10 USD per kW-month: shaving 21.5 -> 9.5 + x saves 120 USD/kW-year, the battery
    # costs 2 USD per kW shaved (1 USD/kWh x 1 h + 1 USD/kW) plus its losses
    res = _solve(peaky(100.0, storage=True, demand_charge=10.0))
    peak = res.tables["sources"].grid_kw_peak.iloc[0]
    # flattened: the 24 h energy with losses spread evenly is the least peak possible
    # (the battery charges in the 23 low hours up to the peak level): 23 p + (21.5 - d)
    # with 0.85 x 23 (p - 9.5) = 21.5 - p  ->  p = (21.5 + 0.85 x 23 x 9.5) / (1 + 0.85 x 23)
    want = (21.5 + ETA * 23 * 9.5) / (1 + ETA * 23)
    assert peak == pytest.approx(want, rel=1e-6)
    costs = res.tables["costs"].set_index("category").cost_usd
    assert costs["demand_charge"] == pytest.approx(want * 12 * 10.0, rel=1e-6)


# --- bad input: the catalog kind names file, entry and field -------------------------------

BAD_STORAGE = """\
- id: bad_bat
  name: Battery with impossible figures
  capex_usd_per_kwh: 300
  capex_usd_per_kw: 250
  round_trip_efficiency_frac: {eff}
  depth_of_discharge_frac: {dod}
  calendar_life_years: 15
  source: "test fixture"
  as_of: 2025-01
"""


@pytest.mark.parametrize(("eff", "dod", "field", "pattern"), [
    (1.2, 0.9, "round_trip_efficiency_frac", r"must be <= 1(\.0)? \(got 1\.2\)"),
    (0.85, 1.5, "depth_of_discharge_frac", r"must be <= 1(\.0)? \(got 1\.5\)"),
    (0.85, -0.1, "depth_of_discharge_frac", r"must be > 0(\.0)? \(got -0\.1\)"),
])
def test_bad_storage_figures_name_file_entry_and_field(tmp_path, min_catalog_dir, eff, dod,
                                                       field, pattern):
    from dcplan.catalog import load_catalog
    from dcplan.errors import InputError

    path = tmp_path / "storage.yaml"
    path.write_text(BAD_STORAGE.format(eff=eff, dod=dod))
    with pytest.raises(InputError) as info:
        load_catalog(min_catalog_dir, extra_files={"storage": path})
    (p,) = info.value.problems
    assert p.file.endswith("storage.yaml")
    assert (p.entry, p.field) == ("bad_bat", field)
    assert re.search(pattern, p.message), p.message


def test_bad_storage_from_the_cli_exits_1_without_a_traceback(tmp_path, min_catalog_dir):
    import shutil

    from typer.testing import CliRunner

    from dcplan.cli import app

    cat = tmp_path / "cat"
    shutil.copytree(min_catalog_dir, cat)
    (cat / "storage.yaml").write_text(BAD_STORAGE.format(eff=1.2, dod=0.9))
    res = CliRunner().invoke(app, ["--catalog-dir", str(cat), "catalog", "list", "storage"])
    assert res.exit_code == 1
    assert "Traceback" not in res.output
    assert "storage.yaml" in res.output and "bad_bat" in res.output
    assert "round_trip_efficiency_frac" in res.output


# --- properties ---------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grid=st.floats(12.0, 30.0), charge=st.floats(0.0, 20.0),
       low=st.floats(0.5, 0.98), capex=st.floats(0.5, 500.0))
def test_offering_a_battery_never_makes_a_plan_dearer(grid, charge, low, capex):
    # a day of 23 hours at ``low`` and one at the rest (mean 1); the battery costs
    # ``capex`` USD per kWh and per kW: the plan may leave it unbought
    high = 24 - 23 * low
    shape = tuple([low] * 23 + [high])
    bat = dataclasses.replace(BAT, capex_usd_per_kwh=capex, capex_usd_per_kw=capex)

    def inputs(offer):
        w = dataclasses.replace(workload(demand=(100.0,), peak=max(shape)), profile=shape)
        return make_inputs(n=1, racks=[rack(kw_idle=0.0, kw_max=10.0)], workloads=[w],
                           sites=[site(n=1, grid_kw=grid, demand_charge=charge)],
                           rack_sites={("ra", "sa"): rack_site()},
                           storage={"sa": (bat,)} if offer else {})
    without = _solve(inputs(False))
    offered = _solve(inputs(True))
    if without.unserved:
        return
    assert not offered.unserved
    assert offered.objective_usd <= without.objective_usd * (1 + 1e-7) + 1e-6


def test_each_representative_day_cycles_on_its_own():
    from dcplan.planner.supply import hour_weight, previous_hour

    # two days (weekday x5, weekend x2): the hour before each day's first is its last
    assert [previous_hour(h) for h in (0, 1, 23, 24, 25, 47)] == [23, 0, 22, 47, 24, 46]
    assert previous_hour(None) is None
    d = dataclasses.replace(peaky(15.0, storage=True), day_names=("weekday", "weekend"),
                            day_weights=(5 / 7, 2 / 7))
    assert hour_weight(d, 3) == pytest.approx(5 / 7 / 24)
    assert hour_weight(d, 30) == pytest.approx(2 / 7 / 24)
    assert sum(hour_weight(d, h) for h in range(48)) == pytest.approx(1.0)
    assert hour_weight(d, None) == 1.0


@pytest.mark.slow
def test_power_sources_chart_stacks_the_sources_table():
    import matplotlib.pyplot as plt

    from dcplan.export.charts import OPTIONAL_PLAN_CHARTS, plan_figures

    res = _solve(peaky(15.0, storage=True))
    figs = plan_figures(res)
    try:
        ax = figs[OPTIONAL_PLAN_CHARTS[0]].axes[0]
        heights = [p.get_height() for p in ax.patches]  # grid, battery, on-site (one period)
        src = res.tables["sources"].iloc[0]
        assert heights == pytest.approx([src.grid_kw_peak / 1000,
                                         src.battery_discharge_kw_at_grid_peak / 1000,
                                         src.onsite_kw_at_grid_peak / 1000])
        # the peak hour: 15 kW from the grid and 6.5 kW from the battery
        assert heights[0] + heights[1] == pytest.approx(21.5 / 1000, rel=1e-6)
    finally:
        for fig in figs.values():
            plt.close(fig)
    figs = plan_figures(_solve(peaky(30.0, storage=False)))
    assert OPTIONAL_PLAN_CHARTS[0] not in figs
    for fig in figs.values():
        plt.close(fig)
