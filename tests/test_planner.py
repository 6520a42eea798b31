"""The fleet-planning MILP on tiny hand-made instances (no perf or facility model)."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_planner_helpers import make_inputs, rack, rack_site, site, workload

from dcplan.planner import (
    SolveStatus,
    build_model,
    lp_name,
    parse_lp_name,
    solve_inputs,
)
from dcplan.scenario import SolverOptions
from dcplan.units import HOURS_PER_YEAR

EXACT = SolverOptions(gap=0.0, time_limit_s=30)


def check_plan_from_tables(res, d, tol=1e-6):
    """Every plan meets demand and every site limit, recomputed from its tables alone."""
    t = res.tables
    alloc, demand, power, fleet = t["allocation"], t["demand"], t["power"], t["fleet"]
    served = alloc.groupby(["period", "workload", "pool"]).tokens_per_s.sum()
    for r in demand.itertuples():
        got = served.get((r.period, r.workload, r.pool), 0.0) + r.unserved_tokens_per_s_peak
        assert got >= r.demand_tokens_per_s_peak * (1 - tol) - tol
    for r in power.itertuples():
        total = r.it_kw_peak + r.cooling_kw_peak + r.network_kw + r.losses_kw_peak
        assert total == pytest.approx(r.facility_kw_peak, rel=1e-9, abs=1e-9)
        assert r.facility_kw_peak <= r.grid_kw * (1 + tol) + tol
        assert r.facility_kw_peak <= r.built_kw * (1 + tol) + tol
    pos = fleet.groupby(["period", "site"]).rack_positions.sum()
    cdu = t["cooling"].set_index(["period", "site"]).milp_cdu_positions  # the MILP's space row
    net = power.set_index(["period", "site"]).network_positions
    for (period, s), used in pos.items():
        assert used + cdu.get((period, s), 0.0) + net.get((period, s), 0.0) \
            <= d.sites[s].rack_positions + tol
    used_racks = alloc.groupby(["period", "site", "rack"]).racks.sum()
    inst = fleet.set_index(["period", "site", "rack"]).installed_racks
    for key, n in used_racks.items():
        assert n <= inst[key] + tol
    for r in fleet.itertuples():
        assert r.installed_racks == int(r.installed_racks) and r.new_racks >= 0


def test_lp_name_round_trip():
    name = lp_name("alloc", "gb200_nvl72", "seoul_metro", "chat", "all", "2026q1")
    assert parse_lp_name(name) == ("alloc", ("gb200_nvl72", "seoul_metro", "chat", "all",
                                             "2026q1"))
    for bad in ("a-b", "a__b", "A", "_a", "a b"):
        with pytest.raises(ValueError):
            lp_name("grid", bad)


def test_every_constraint_name_parses_to_its_family():
    d = make_inputs(racks=[rack(liquid=True)],
                    rack_sites={("ra", "sa"): rack_site(liquid_kw=8, cdu_id="c1", cdu_kw=20,
                                                        cdu_capex=50)})
    prob, mv = build_model(d)
    for family, cons in mv.constraints.items():
        for keys, con in cons.items():
            assert parse_lp_name(con.name) == (family, tuple(str(k) for k in keys))
    assert {"stock", "capacity", "demand", "grid", "cdu_heat", "cdu_on", "cdu_buy", "space",
            "building"} <= set(mv.constraints)


def _brute_force(d, choices):
    """Cheapest feasible purchase plan by enumeration (power independent of load)."""
    keys = [(r, s, p) for r in d.racks for s in d.sites for p in range(len(d.periods))
            if d.buyable(r, s, p)]
    best = math.inf
    (w, wd), = d.workloads.items()
    for combo in itertools.product(choices, repeat=len(keys)):
        new = dict(zip(keys, combo, strict=True))
        cost, ok = 0.0, True
        for p in range(len(d.periods)):
            cap = 0.0
            for s, sd in d.sites.items():
                kw = pos = 0.0
                for r, rk in d.racks.items():
                    inst = sum(new.get((r, s, q), 0) for q in range(p + 1) if d.alive(r, q, p))
                    cap += inst * d.perf[r, w].goodput_tokens_per_s
                    kw += inst * rk.it_power_idle_kw
                    pos += inst * rk.rack_positions
                    cost += d.df_opex(p) * inst * rk.capex_usd * rk.maintenance_frac_per_year
                    cost += d.df_capex(p) * new.get((r, s, p), 0) * rk.capex_usd
                if kw > sd.grid_kw[p] + 1e-9 or pos > sd.rack_positions:
                    ok = False
                cost += d.df_opex(p) * kw * d.hours(p) * sd.energy_usd_per_kwh
            if cap < wd.peak_tokens_per_s(p) - 1e-9:
                ok = False
        if ok:
            best = min(best, cost)
    return best


def test_brute_force_two_racks_one_site():
    # Rack A: cheap, slow, power hungry; rack B: dear, fast, frugal, only from period 1.
    a = rack("ra", capex=1000, maint=0.1, kw_max=10, kw_idle=10, life=2)
    b = rack("rb", capex=2600, maint=0.05, kw_max=12, kw_idle=12, first=1, life=5)
    from dcplan.planner.inputs import PerfData
    perf = {("ra", "wa"): PerfData(100.0, 10.0), ("rb", "wa"): PerfData(300.0, 12.0)}
    d = make_inputs(racks=[a, b], sites=[site(grid_kw=[25, 40, 40], positions=4, price=0.05)],
                    workloads=[workload(demand=(150.0, 350.0, 500.0))], perf=perf, rate=0.1)
    res = solve_inputs(d, EXACT, explain=False)
    assert res.status is SolveStatus.OPTIMAL
    assert res.objective_usd == pytest.approx(_brute_force(d, range(4)), rel=1e-9)
    check_plan_from_tables(res, d)


@pytest.mark.slow
def test_brute_force_one_rack_two_sites():
    s1 = site("sa", grid_kw=[20, 20, 20], price=0.30, positions=2)
    s2 = site("sb", grid_kw=[0, 40, 40], price=0.05, positions=5)
    d = make_inputs(racks=[rack(capex=500, kw_idle=10, kw_max=10, life=2, maint=0.2)],
                    sites=[s1, s2], workloads=[workload(demand=(150, 250, 420))], rate=0.05)
    res = solve_inputs(d, EXACT, explain=False)
    assert res.status is SolveStatus.OPTIMAL
    assert res.objective_usd == pytest.approx(_brute_force(d, range(5)), rel=1e-9)
    check_plan_from_tables(res, d)


def test_hand_computed_npv_and_discounting():
    """One rack bought in 2026 and one in 2028, r = 10 %, terminal value credited."""
    r_ = 0.10
    d = make_inputs(racks=[rack(capex=1000, maint=0.1, life=4, kw_idle=2, kw_max=10)],
                    sites=[site(price=0.1, demand_charge=1.0)],
                    workloads=[workload(demand=(100, 100, 200), peak=2.0)], rate=r_,
                    terminal=True)
    # Peak demand 200/200/400 tokens/s at 100 tokens/s per rack -> 2, 2, 4 racks.
    res = solve_inputs(d, EXACT)
    fleet = res.tables["fleet"]
    assert list(fleet.new_racks) == [2, 0, 2]
    h = HOURS_PER_YEAR
    npv = 0.0
    for t, (n_inst, n_new) in enumerate([(2, 2), (2, 0), (4, 2)]):
        capex_df, opex_df = (1 + r_) ** -t, (1 + r_) ** -(t + 0.5)
        npv += capex_df * n_new * 1000
        # Average IT kW: idle + (power - idle) x allocated / peak factor; all racks allocated.
        avg_kw = n_inst * 2 + n_inst * (10 - 2) / 2.0
        peak_kw = n_inst * 10
        npv += opex_df * (avg_kw * h * 0.1 + peak_kw * 12 * 1.0 + n_inst * 1000 * 0.1)
    # Terminal value at the end of 2028 (H = 3 years): 2 racks with 1 of 4 years left,
    # 2 racks with 3 of 4 years left.
    npv -= (1 + r_) ** -3 * (2 * 1000 * 1 / 4 + 2 * 1000 * 3 / 4)
    assert res.objective_usd == pytest.approx(npv, rel=1e-9)
    assert res.kpi("npv_cost_usd") == pytest.approx(npv, rel=1e-9)
    costs = res.tables["costs"]
    assert costs.cost_usd_discounted.sum() == pytest.approx(npv, rel=1e-9)


def test_retirement_after_lifetime_and_existing_fleet():
    d = make_inputs(racks=[rack(life=2)], workloads=[workload(demand=(100, 100, 100, 100))],
                    sites=[site(n=4)], n=4, existing=[("ra", "sa", 1, 1)])
    res = solve_inputs(d, EXACT, explain=False)
    f = res.tables["fleet"]
    assert list(f.installed_racks) == [1, 1, 1, 1]
    assert list(f.new_racks) == [0, 1, 0, 1]
    assert list(f.retired_racks) == [0, 1, 0, 1]


def test_cdus_n_plus_one_and_space():
    # 25 kW liquid heat per rack, 60 kW CDUs: 5 racks -> ceil(125/60)=3 +1 = 4 CDUs.
    rs = rack_site(liquid_kw=25, cdu_id="c1", cdu_kw=60, cdu_capex=10, cdu_pos=1)
    d = make_inputs(racks=[rack(liquid=True, kw_idle=25, kw_max=25)], rack_sites={("ra", "sa"): rs},
                    sites=[site(positions=9, grid_kw=1000)],
                    workloads=[workload(demand=(500, 500, 500))])
    res = solve_inputs(d, EXACT, explain=False)
    c = res.tables["cooling"]
    assert list(c.milp_cdus) == [4, 4, 4]
    assert list(res.tables["fleet"].installed_racks) == [5, 5, 5]
    # One more rack no longer fits with its CDUs (5 + 4 = 9 positions used).
    d2 = make_inputs(racks=[rack(liquid=True, kw_idle=25, kw_max=25)],
                     rack_sites={("ra", "sa"): rs}, sites=[site(positions=9, grid_kw=1000)],
                     workloads=[workload(demand=(600, 600, 600))])
    res2 = solve_inputs(d2, EXACT)
    assert res2.unserved


def test_disaggregated_pools_and_rules():
    from dcplan.planner.inputs import PerfData
    wl = workload("wd", demand=(400, 400, 400), disagg=True, input_frac=0.75,
                  sites=["sb"])
    perf = {("ra", "wd"): PerfData(100.0, 10.0, prefill_tokens_per_s=300.0,
                                   decode_tokens_per_s=50.0)}
    d = make_inputs(sites=[site("sa", price=0.01), site("sb", price=1.0)], workloads=[wl],
                    perf=perf)
    res = solve_inputs(d, EXACT, explain=False)
    a = res.tables["allocation"]
    assert set(a.site) == {"sb"}                      # rule: only from site sb
    got = a[a.period == "2026"].set_index("pool").racks
    assert got["prefill"] == pytest.approx(300 / 300) and got["decode"] == pytest.approx(2.0)
    check_plan_from_tables(res, d)


def test_budget_limits_capex():
    d = make_inputs(workloads=[workload(demand=(300, 300, 300))], budget=[2000, None, None])
    res = solve_inputs(d, EXACT)
    assert res.unserved
    assert res.tables["fleet"].new_racks.iloc[0] == 2


def test_infeasible_names_workload_period_and_site():
    d = make_inputs(sites=[site(grid_kw=[100, 100, 25])],
                    workloads=[workload(demand=(100, 200, 300))])
    res = solve_inputs(d, EXACT)
    assert res.unserved and not res.ok and res.status.has_solution
    u = res.tables["unserved"]
    assert list(u.period) == ["2028"] and list(u.workload) == ["wa"]
    # 25 kW feeds at most 3 racks idle (2 kW) with 2.375 of them serving (+8 kW each):
    # 237.5 of 300 tokens/s.
    assert u.short_tokens_per_s_peak.iloc[0] == pytest.approx(62.5)
    for needle in ("wa", "2028", "short by 6", "grid at sa"):  # 62.5, as rounded
        assert needle in res.message
    check_plan_from_tables(res, d)


def test_time_limit_is_never_reported_as_optimal():
    from dcplan.planner.solver import SolveInfo
    info = SolveInfo(SolveStatus.FEASIBLE, 1.0, 0.02, "highs", 1.0, "stopped")
    assert info.status is not SolveStatus.OPTIMAL and info.status.has_solution


def test_deterministic_and_cbc_agrees():
    d = make_inputs(racks=[rack("ra", capex=1000), rack("rb", capex=1500, kw_idle=1)],
                    workloads=[workload(demand=(250, 480, 730))])
    a = solve_inputs(d, EXACT)
    b = solve_inputs(d, EXACT)
    c = solve_inputs(d, SolverOptions(name="cbc", gap=0.0))
    assert a.tables["fleet"].equals(b.tables["fleet"])
    assert a.objective_usd == b.objective_usd
    assert c.objective_usd == pytest.approx(a.objective_usd, rel=1e-7)


# --- properties ------------------------------------------------------------------------

tiny = st.fixed_dictionaries({
    # Demand is 0 or at least 1 token/s: far below that, the solver's absolute
    # feasibility tolerance (1e-7 racks) would serve it with no rack at all.
    "demand": st.lists(st.one_of(st.just(0.0), st.floats(1, 600)), min_size=3, max_size=3),
    "grid": st.floats(60, 200),
    "price": st.floats(0.01, 1.0),
    "capex": st.floats(100, 5000),
    "life": st.sampled_from([1.0, 2.0, 5.0]),
})


def _tiny(p, demand_scale=1.0, grid_add=0.0, k=1.0):
    racks = [rack("ra", capex=p["capex"] * k, maint=0.05, life=p["life"], kw_idle=3, kw_max=10),
             rack("rb", capex=p["capex"] * 1.7 * k, maint=0.05, life=p["life"], kw_idle=2,
                  kw_max=8)]
    from dcplan.planner.inputs import PerfData
    perf = {("ra", "wa"): PerfData(100.0, 10.0), ("rb", "wa"): PerfData(180.0, 8.0)}
    rs = {(r.id, "sa"): rack_site(loss=0.05, cool_peak=0.3, cool_avg=0.1, net_kw=0.5,
                                  net_capex=50 * k, cool_capex=20 * k) for r in racks}
    return make_inputs(
        racks=racks, perf=perf, rack_sites=rs,
        sites=[site(grid_kw=p["grid"] + grid_add, price=p["price"] * k, demand_charge=2 * k,
                    build=300 * k, positions=30)],
        workloads=[workload(demand=[x * demand_scale for x in p["demand"]], peak=1.3)],
        rate=0.07, terminal=True, unserved_usd_per_token=1e-3 * k,
        building_lifetime_years=20)


PROP = settings(max_examples=12, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@PROP
@given(tiny, st.floats(1.0, 1.6))
def test_more_demand_never_lowers_cost(p, f):
    a = solve_inputs(_tiny(p), EXACT, explain=False)
    b = solve_inputs(_tiny(p, demand_scale=f), EXACT, explain=False)
    assert b.objective_usd >= a.objective_usd * (1 - 1e-7) - 1e-6


@pytest.mark.slow
@PROP
@given(tiny, st.floats(0.0, 80.0))
def test_more_grid_never_raises_cost(p, extra):
    a = solve_inputs(_tiny(p), EXACT, explain=False)
    b = solve_inputs(_tiny(p, grid_add=extra), EXACT, explain=False)
    assert b.objective_usd <= a.objective_usd * (1 + 1e-7) + 1e-6


@PROP
@given(tiny, st.floats(0.1, 10.0))
@pytest.mark.slow
def test_scaling_all_prices_scales_objective(p, k):
    a = solve_inputs(_tiny(p), EXACT, explain=False)
    b = solve_inputs(_tiny(p, k=k), EXACT, explain=False)
    assert b.objective_usd == pytest.approx(k * a.objective_usd, rel=1e-6)


@PROP
@given(tiny)
@pytest.mark.slow
def test_plans_meet_demand_and_limits_and_costs_add_up(p):
    d = _tiny(p)
    res = solve_inputs(d, EXACT, explain=False)
    check_plan_from_tables(res, d)
    assert res.tables["costs"].cost_usd_discounted.sum() == pytest.approx(
        res.objective_usd, rel=1e-6, abs=1e-6)


def test_nameplate_peak_sizes_grid_on_max_power():
    # 4 racks at the operating point (6 kW, idle 2) fit 25 kW; at nameplate (10 kW) only 2.
    from dcplan.planner.inputs import PerfData
    perf = {("ra", "wa"): PerfData(100.0, 6.0)}
    base = dict(perf=perf, sites=[site(grid_kw=25)], workloads=[workload(demand=(400, 400, 400))])
    assert solve_inputs(make_inputs(**base), EXACT, explain=False).ok
    res = solve_inputs(make_inputs(nameplate_peak=True, **base), EXACT, explain=False)
    assert res.unserved
    assert res.tables["power"].facility_kw_peak.max() <= 25 + 1e-6


def test_linear_network_racks_take_space():
    """network_model linear: 0.5 network-rack positions per rack in service. 10
    positions hold floor(10 / 1.5) = 6 racks of one position, not 10; 800 tokens/s
    at 100 per rack leave 200 tokens/s unserved, and the power table counts 3
    network positions."""
    import dataclasses

    d = make_inputs(sites=[site(n=1, positions=10, grid_kw=1e6)],
                    workloads=[workload(demand=[800.0])], n=1)
    rs = d.rack_site["ra", "sa"]
    d.rack_site["ra", "sa"] = dataclasses.replace(rs, network_positions_per_rack=0.5)
    res = solve_inputs(d, EXACT, explain=False)
    assert res.unserved
    fleet = res.tables["fleet"]
    assert fleet.installed_racks.sum() == 6
    assert res.tables["power"].network_positions.sum() == pytest.approx(3.0)
    assert res.tables["demand"].unserved_tokens_per_s_peak.sum() == pytest.approx(200.0)
    check_plan_from_tables(res, d)
