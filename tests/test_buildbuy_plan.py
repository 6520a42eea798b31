"""Build vs buy inside a plan: staff and software in the MILP, API cost of the served mix.

Hand-made one-period inputs (no discounting), so every figure is counted by hand.
"""

from __future__ import annotations

import dataclasses

import pytest
from test_planner_helpers import make_inputs, rack, site, workload

from dcplan.planner.operations import ApiOffer, OperationsData
from dcplan.planner.run import solve_inputs
from dcplan.units import HOURS_PER_YEAR

SECONDS = HOURS_PER_YEAR * 3600.0

OFFER = ApiOffer("x", "X API", "X", "x-model", ("wa", "wb"),
                 {"wa": "same model", "wb": "model class"},
                 input_usd_per_mtok=1.0, cached_input_usd_per_mtok=0.1,
                 cache_write_usd_per_mtok=None, output_usd_per_mtok=2.0)


def _inputs(ops=None):
    wa = dataclasses.replace(workload("wa", demand=(100.0,), input_frac=0.75),
                             cache_hit_frac=0.5, input_tokens_mean=300.0,
                             output_tokens_mean=100.0)
    wb = dataclasses.replace(workload("wb", demand=(50.0,), input_frac=0.5),
                             input_tokens_mean=500.0, output_tokens_mean=500.0)
    return make_inputs(racks=[rack(capex=1000.0, kw_max=1.0, kw_idle=0.2)], sites=[site(n=1)],
                       workloads=[wa, wb], n=1, operations=ops, api_offers=(OFFER,))


def test_api_cost_of_a_two_workload_mix_with_cache_hits_in_a_plan():
    res = solve_inputs(_inputs(), explain=False)
    assert res.ok
    buy = res.tables["build_vs_buy"].set_index("workload")
    # wa: 100 tokens/s all year; 3/4 input, half of it cache hits.
    ta = 100.0 * SECONDS
    a = (ta * 0.75 * 0.5 * 1.0 + ta * 0.75 * 0.5 * 0.1 + ta * 0.25 * 2.0) / 1e6
    # wb: 50 tokens/s, half input (no cache hits), half output.
    tb = 50.0 * SECONDS
    b = (tb * 0.5 * 1.0 + tb * 0.5 * 2.0) / 1e6
    assert a == pytest.approx(2877.66, rel=1e-6) and b == pytest.approx(2365.2, rel=1e-6)
    assert buy.loc["wa", "api_usd"] == pytest.approx(a)
    assert buy.loc["wb", "api_usd"] == pytest.approx(b)
    assert buy.loc["(all)", "api_usd"] == pytest.approx(a + b)
    assert buy.loc["wa", "cached_input_mtok"] == pytest.approx(ta * 0.375 / 1e6)
    assert buy.loc["(all)", "api_usd_per_mtok"] == pytest.approx((a + b) / (ta + tb) * 1e6)
    # The plan's cost of the two workloads adds up to its NPV.
    npv = res.kpi("npv_cost_usd")
    assert buy.loc["wa", "plan_usd"] + buy.loc["wb", "plan_usd"] == pytest.approx(npv)
    assert buy.loc["(all)", "plan_usd"] == pytest.approx(npv)
    assert buy.loc["wa", "comparison"] == "same model"


def test_break_even_is_where_building_and_buying_cost_the_same():
    res = solve_inputs(_inputs(), explain=False)
    buy = res.tables["build_vs_buy"].set_index("workload")
    costs = res.tables["costs"]
    var = costs.loc[costs.category.isin(["energy", "carbon"]), "cost_usd_discounted"].sum()
    npv = res.kpi("npv_cost_usd")
    row = buy.loc["(all)"]
    assert row.break_even_demand_frac is not None and row.break_even_demand_frac > 0
    d_star = row.break_even_demand_frac  # share of the planned demand
    # building at d_star of the demand: fixed + variable x d_star = API x d_star
    assert (npv - var) + var * d_star == pytest.approx(row.api_usd * d_star, rel=1e-9)
    assert (row.cheaper == "build") == (row.plan_usd < row.api_usd)


def test_staff_and_software_are_priced_in_the_objective():
    ops = OperationsData(staff_per_site={"sa": 500.0}, staff_per_kw={"sa": 1.0},
                         staff_per_rack={("ra", "sa"): 10.0}, software_per_rack={"ra": 20.0},
                         staff_per_fleet=300.0, fleet_country="KR")
    base = solve_inputs(_inputs(), explain=False)
    res = solve_inputs(_inputs(ops), explain=False)
    assert res.ok and res.tables["fleet"].installed_racks.sum() == 2  # one per workload
    costs = res.tables["costs"].set_index("category").cost_usd
    # two racks: 2 x (10 per rack + 1 per kW x 1 kW) + 500 per site + 300 per fleet
    assert costs["staff"] == pytest.approx(2 * (10 + 1) + 500 + 300)
    assert costs["software"] == pytest.approx(2 * 20)
    assert res.objective_usd == pytest.approx(base.objective_usd + 862.0)
    assert res.kpi("npv_cost_usd") == pytest.approx(res.objective_usd)


def test_energy_per_request_from_the_plan():
    res = solve_inputs(_inputs(), explain=False)
    req = res.tables["requests"].set_index("workload")
    energy = res.tables["power"].energy_kwh.sum()
    assert req.energy_kwh.sum() == pytest.approx(energy)
    for w, per in (("wa", 400.0), ("wb", 1000.0)):
        r = req.loc[w]
        assert r.wh_per_request == pytest.approx(per / r.tokens_per_kwh * 1000.0)


def test_per_site_staff_moves_racks_to_a_site_already_staffed():
    """Two sites; sb has cheaper energy, so racks go there, unless opening sb means paying
    its own shift crew while sa already has to be staffed for its existing racks."""
    def inputs(ops):
        w = workload("wa", demand=(200.0,))
        return make_inputs(racks=[rack(capex=1000.0, kw_max=1.0, kw_idle=0.2)],
                           sites=[site("sa", n=1, price=0.10), site("sb", n=1, price=0.05)],
                           workloads=[w], n=1, operations=ops,
                           existing=[("ra", "sa", 1, 1)])
    where = {}
    for name, crew in (("no crew", 0.0), ("crew", 1e4)):
        ops = OperationsData(staff_per_site={"sa": crew, "sb": crew})
        res = solve_inputs(inputs(ops), explain=False)
        assert res.ok
        f = res.tables["fleet"]
        where[name] = f.groupby("site").installed_racks.sum().to_dict()
    assert where["no crew"].get("sb", 0) >= 1          # cheaper energy wins alone
    assert where["crew"].get("sb", 0) == 0             # a second crew costs more
