"""Serving headroom, daily profiles, price paths and grid connections, on hand-made inputs.

Every expectation is counted by hand from the formulation in docs/planner.md; the
properties check directions a planner relies on (more headroom never cheaper, a flexible
workload never dearer, an earlier connection never dearer).
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_planner_helpers import make_inputs, rack, rack_site, site, workload

from dcplan.planner import SolveStatus, solve_inputs
from dcplan.planner.inputs import GridData, PerfData
from dcplan.scenario import SolverOptions
from dcplan.units import HOURS_PER_YEAR

EXACT = SolverOptions(gap=0.0, time_limit_s=30)
H = 24


def _shape(values: list[float]) -> tuple[float, ...]:
    """24 hourly values scaled to a mean of 1."""
    m = sum(values) / len(values)
    return tuple(v / m for v in values)


# --- serving headroom, availability, spares ------------------------------------------------


def test_headroom_availability_and_spares_hand_counted():
    # 1000 tokens/s at peak, 100 tokens/s per rack: 10 racks at 100 % utilisation.
    # u = 0.8 and A = 0.9: 1000 / (100 x 0.8 x 0.9) = 13.9 -> 14 racks; N+2 -> 16.
    wl = dataclasses.replace(workload(demand=(1000.0,) * 3), target_utilisation=0.8)
    base = dict(workloads=[wl], sites=[site(grid_kw=1e6, positions=100)])
    plain = solve_inputs(make_inputs(workloads=[workload(demand=(1000.0,) * 3)],
                                     sites=[site(grid_kw=1e6, positions=100)]),
                         EXACT, explain=False)
    assert list(plain.tables["fleet"].installed_racks) == [10, 10, 10]
    d = make_inputs(racks=[dataclasses.replace(rack(), availability=0.9)], **base)
    res = solve_inputs(d, EXACT, explain=False)
    f = res.tables["fleet"]
    assert list(f.installed_racks) == [14, 14, 14]
    assert f.allocated_racks.iloc[0] == pytest.approx(10.0)
    assert f.headroom_racks.iloc[0] == pytest.approx(10 / 0.8 - 10)
    assert f.unavailable_racks.iloc[0] == pytest.approx(0.1 * 14)
    d2 = make_inputs(racks=[dataclasses.replace(rack(), availability=0.9)],
                     spare_racks={("ra", "sa"): 2}, **base)
    f2 = solve_inputs(d2, EXACT, explain=False).tables["fleet"]
    assert list(f2.installed_racks) == [16, 16, 16]
    assert list(f2.spare_racks) == [2, 2, 2]


def test_headroom_racks_draw_power_at_peak_but_not_on_average():
    # 4 racks serve 320 of 400 tokens/s capacity at u = 0.8: peak IT counts the headroom
    # at serving power (4 x 10 kW), the average only the served load.
    wl = dataclasses.replace(workload(demand=(320.0,) * 3), target_utilisation=0.8)
    d = make_inputs(racks=[rack(kw_idle=2, kw_max=10)], workloads=[wl],
                    perf={("ra", "wa"): PerfData(100.0, 10.0)})
    p = solve_inputs(d, EXACT, explain=False).tables["power"].iloc[0]
    assert p.it_kw_peak == pytest.approx(4 * 2 + 3.2 / 0.8 * 8)
    assert p.it_kw_avg == pytest.approx(4 * 2 + 3.2 * 8)


# --- daily profiles ----------------------------------------------------------------------


def _two_shapes():
    """Day traffic (08-20 h at 2, night 0) and night traffic (the mirror image)."""
    day = _shape([0.0] * 8 + [2.0] * 12 + [0.0] * 4)
    night = _shape([2.0] * 8 + [0.0] * 12 + [2.0] * 4)
    return day, night


def test_peak_of_sum_below_sum_of_peaks():
    day, night = _two_shapes()
    # each workload averages 100 tokens/s with a peak of 200: coincident peaks need
    # 4 racks of 100 tokens/s, complementary shapes only 2.
    a = dataclasses.replace(workload("wa", demand=(100.0,) * 3, peak=max(day)), profile=day)
    b = dataclasses.replace(workload("wb", demand=(100.0,) * 3, peak=max(night)), profile=night)
    shaped = make_inputs(workloads=[a, b])
    res = solve_inputs(shaped, EXACT, explain=False)
    assert list(res.tables["fleet"].installed_racks) == [2, 2, 2]
    coincident = make_inputs(workloads=[workload("wa", demand=(100.0,) * 3, peak=2.0),
                                        workload("wb", demand=(100.0,) * 3, peak=2.0)])
    res2 = solve_inputs(coincident, EXACT, explain=False)
    assert list(res2.tables["fleet"].installed_racks) == [4, 4, 4]
    # grid peak: 2 racks at 10 kW in every hour (each hour one workload at its peak)
    assert res.tables["power"].facility_kw_peak.iloc[0] == pytest.approx(20.0)
    assert res2.tables["power"].facility_kw_peak.iloc[0] == pytest.approx(40.0)
    assert res.objective_usd < res2.objective_usd


@pytest.mark.parametrize("shoulder, kept", [(0.45, 2), (0.55, 3)])
def test_peak_rows_hold_in_every_hour_of_the_day(shoulder, kept):
    """The model's facility peak is at least the power of each of the 24 hours.

    Day and night traffic, and at 19 h both at ``shoulder`` of their peaks: at 0.45 the
    hour is below the mix of a day and a night hour (0.5, 0.5), so no row is written for
    it although no single hour is above it in both; at 0.55 it is the site's peak hour
    (1.1 peaks) and keeps its rows. Two racks serve both workloads, so every hour's power
    is a mix of both allocations; the peak rows go through the per-schedule power
    variables (``pmix``).
    """
    from dcplan.planner import build_model, solve
    from dcplan.planner.model import _site_power_terms
    from dcplan.planner.tables import Solution, power_table

    day = _shape([0.0] * 8 + [2.0] * 11 + [2.0 * shoulder] + [0.0] * 4)
    night = _shape([2.0] * 8 + [0.0] * 11 + [2.0 * shoulder] + [2.0] * 4)
    a = dataclasses.replace(workload("wa", demand=(100.0,) * 3, peak=max(day)), profile=day)
    b = dataclasses.replace(workload("wb", demand=(100.0,) * 3, peak=max(night)),
                            profile=night)
    d = make_inputs(racks=[rack("ra", kw_idle=2), rack("rb", capex=1500.0, kw_idle=1)],
                    workloads=[a, b], sites=[site(grid_kw=1e6, build=1.0)])
    assert all(len(d.rep_hours(p)) == kept for p in range(3))
    prob, mv = build_model(d)
    assert solve(prob, EXACT).status is SolveStatus.OPTIMAL
    table = power_table(d, Solution.from_model(mv))
    for p in range(3):
        every = [sum(c * (v.varValue or 0.0) for v, c in
                     _site_power_terms(d, mv, "sa", p, average=False, hour=h))
                 for h in range(H)]
        peak = mv.facility_peak_over_hours_kw["sa", p].varValue
        # the building cost makes the peak variable as low as its rows allow
        assert peak == pytest.approx(max(every), rel=1e-7)
        assert table.facility_kw_peak.iloc[p] == pytest.approx(max(every), rel=1e-7)
        if shoulder > 0.5:
            assert table.peak_hour.iloc[p].endswith("19")


def test_energy_integrates_the_shape():
    day, _ = _two_shapes()
    wl = dataclasses.replace(workload(demand=(100.0,) * 3, peak=max(day)), profile=day)
    d = make_inputs(racks=[rack(kw_idle=2, kw_max=10)], workloads=[wl])
    p = solve_inputs(d, EXACT, explain=False).tables["power"].iloc[0]
    # 2 racks idle at 2 kW, serving 100 tokens/s on average at 8 kW per 100 tokens/s
    assert p.it_kw_avg == pytest.approx(2 * 2 + 1.0 * 8)
    assert p.energy_kwh == pytest.approx(p.facility_kw_avg * HOURS_PER_YEAR)


@pytest.mark.slow
def test_flexible_batch_fills_the_valley_and_lowers_the_peak():
    day, _ = _two_shapes()
    chat = dataclasses.replace(workload("chat", demand=(100.0,) * 3, peak=max(day)),
                               profile=day)
    batch = dataclasses.replace(workload("batch", demand=(100.0,) * 3, peak=max(day)),
                                profile=day)
    rigid = make_inputs(workloads=[chat, batch])
    flex = make_inputs(workloads=[chat, dataclasses.replace(batch, flexible=True)])
    r_rigid = solve_inputs(rigid, EXACT, explain=False)
    r_flex = solve_inputs(flex, EXACT, explain=False)
    # rigid: both at 200 tokens/s in the day -> 4 racks; flexible batch served at night
    # (deadline 24 h): 2 racks carry chat by day and batch by night
    assert list(r_rigid.tables["fleet"].installed_racks) == [4, 4, 4]
    assert list(r_flex.tables["fleet"].installed_racks) == [2, 2, 2]
    assert r_flex.tables["power"].facility_kw_peak.max() < \
        r_rigid.tables["power"].facility_kw_peak.max()
    sch = r_flex.tables["schedules"]
    assert set(sch[sch.workload == "batch"].schedule) >= {"demand", "valley"}


def test_deadline_limits_the_shift():
    """With a 1-hour deadline the batch can hardly move: the plan stays near the rigid one."""
    day, _ = _two_shapes()
    chat = dataclasses.replace(workload("chat", demand=(100.0,) * 3, peak=max(day)),
                               profile=day)
    batch = dataclasses.replace(workload("batch", demand=(100.0,) * 3, peak=max(day)),
                                profile=day, flexible=True, deadline_hours=1.0)
    res = solve_inputs(make_inputs(workloads=[chat, batch]), EXACT, explain=False)
    assert list(res.tables["fleet"].installed_racks) == [4, 4, 4]


# --- price and technology paths ----------------------------------------------------------


def test_declining_rack_price_is_discounted_at_its_period():
    """One rack in 2026, a second in 2028; the price falls 20 %/yr; r = 10 %; no opex."""
    r_ = 0.10
    path = tuple(1000.0 * 0.8 ** t for t in range(3))
    d = make_inputs(racks=[dataclasses.replace(rack(capex=1000, kw_idle=0, kw_max=0),
                                               capex_path=path)],
                    sites=[site(price=0.0)], workloads=[workload(demand=(100, 100, 200))],
                    rate=r_)
    res = solve_inputs(d, EXACT, explain=False)
    assert list(res.tables["fleet"].new_racks) == [1, 0, 1]
    npv = 1000.0 + 1000.0 * 0.8 ** 2 * (1 + r_) ** -2
    assert res.objective_usd == pytest.approx(npv, rel=1e-9)
    costs = res.tables["costs"]
    rc = costs[costs.category == "rack_capex"].set_index("period").cost_usd
    assert rc["2028"] == pytest.approx(640.0)


def test_software_speedup_serves_more_with_the_same_racks():
    wl = dataclasses.replace(workload(demand=(300.0, 300.0, 300.0)), speedup=(1.0, 1.5, 3.0))
    res = solve_inputs(make_inputs(workloads=[wl]), EXACT, explain=False)
    # 300 tokens/s at 100, 150 and 300 tokens/s per rack: 3, 2 and 1 racks needed, but
    # racks bought in 2026 stay in service (life 10 years)
    assert list(res.tables["fleet"].installed_racks) == [3, 3, 3]
    assert res.tables["fleet"].allocated_racks.iloc[2] == pytest.approx(1.0)


def test_carbon_price_and_cap():
    # racks live one year, so a cap in 2027 does not reach the rack of 2026 (an installed
    # rack cannot be switched off: it draws idle power)
    d = make_inputs(racks=[rack(kw_idle=10, kw_max=10, life=1)],
                    workloads=[workload(demand=(100,) * 3)],
                    sites=[site(carbon=0.5, price=0.0)], carbon_usd_per_kg=(0.1, 0.1, 0.1))
    res = solve_inputs(d, EXACT, explain=False)
    carbon = res.tables["costs"].query("category == 'carbon'").cost_usd
    # 1 rack at 10 kW all year x 0.5 kg/kWh x 0.1 USD/kg
    assert list(carbon) == pytest.approx([10 * HOURS_PER_YEAR * 0.5 * 0.1] * 3)
    capped = dataclasses.replace(d, carbon_cap_kg=(None, 1000.0, None))
    res2 = solve_inputs(capped, EXACT)
    assert res2.unserved
    assert list(res2.tables["unserved"].period) == ["2027"]


# --- grid connections --------------------------------------------------------------------


def _connected_site(lead_periods: int, cost: float = 50.0, committed=(0.0, 0.0, 0.0, 0.0),
                    threshold=None, assessed_extra: int = 0, n: int = 4):
    arrival = tuple(min(q + lead_periods, n) for q in range(n))
    assessed = tuple(min(q + lead_periods + assessed_extra, n) for q in range(n))
    g = GridData(committed_kw=tuple(committed), arrival=arrival, arrival_assessed=assessed,
                 cost_usd_per_kw=cost, threshold_kw=threshold)
    return dataclasses.replace(site(n=n, grid_kw=[100.0] * n), connection=g)


def test_grid_request_cost_and_lead_time():
    """A 1-year lead time: the rack needed from 2027 is requested in 2026."""
    d = make_inputs(n=4, racks=[rack(kw_idle=10, kw_max=10, capex=0)], rate=0.1,
                    sites=[_connected_site(1)], workloads=[workload(demand=(0, 100, 100, 100))])
    res = solve_inputs(d, EXACT, explain=False)
    g = res.tables["grid"].set_index("period")
    assert g.requested_kw["2026"] == pytest.approx(10.0)
    assert g.connected_kw["2027"] == pytest.approx(10.0) and g.connected_kw["2026"] == 0.0
    conn = res.tables["costs"].query("category == 'grid_connection'")
    assert list(conn.period) == ["2026"]
    assert conn.cost_usd_discounted.iloc[0] == pytest.approx(10.0 * 50.0)
    # demand from 2026 cannot be met: nothing energises before 2027
    d2 = dataclasses.replace(d, workloads={"wa": workload(demand=(100, 100, 100, 100))})
    res2 = solve_inputs(d2, EXACT)
    assert res2.unserved and list(res2.tables["unserved"].period) == ["2026"]


def test_assessment_threshold_delays_large_requests():
    """Below 15 kW requests take 1 year; the part above takes 2 (assessment)."""
    site_ = _connected_site(1, threshold=15.0, assessed_extra=1)
    wl = workload(demand=(0, 100, 200, 200))
    d = make_inputs(n=4, racks=[rack(kw_idle=10, kw_max=10, capex=0)], sites=[site_],
                    workloads=[wl])
    g = solve_inputs(d, EXACT, explain=False).tables["grid"].set_index("period")
    # 10 kW are needed in 2027 and 20 kW from 2028; only what stays below the 15 kW
    # threshold (less 1 kW) may take the fast lane: at most 14 kW fast, the rest through
    # the assessment, which requested in 2026 arrives in 2028
    assert 10.0 - 1e-6 <= g.requested_kw["2026"] <= 14.0 + 1e-6
    assert g.requested_kw.sum() <= 14.0 + 1e-6
    assert g.requested_assessed_kw["2026"] == pytest.approx(20.0 - g.requested_kw["2026"])
    assert g.connected_kw["2027"] == pytest.approx(g.requested_kw["2026"])
    assert g.connected_kw["2028"] == pytest.approx(20.0)


# --- properties --------------------------------------------------------------------------

PROP = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
tiny = st.fixed_dictionaries({
    "demand": st.lists(st.floats(50, 600), min_size=3, max_size=3),
    "capex": st.floats(100, 5000),
    "price": st.floats(0.01, 1.0),
    "u": st.floats(0.5, 1.0),
    "shift": st.integers(0, 23),
})


def _case(p, u=None, flexible=False, lead=1, elastic_grid=True):
    day = _shape([0.5] * 8 + [1.5] * 12 + [0.8] * 4)
    other = _shape([(1.0 + math.cos((h - p["shift"]) / 24 * 2 * math.pi)) for h in range(H)])
    a = dataclasses.replace(workload("wa", demand=p["demand"], peak=max(day)), profile=day,
                            target_utilisation=p["u"] if u is None else u)
    b = dataclasses.replace(workload("wb", demand=[x / 2 for x in p["demand"]],
                                     peak=max(other)), profile=other, flexible=flexible)
    s = dataclasses.replace(site(grid_kw=1e5, price=p["price"], positions=50),
                            connection=GridData((20.0,) * 3,
                                                tuple(min(q + lead, 3) for q in range(3)),
                                                tuple(min(q + lead, 3) for q in range(3)),
                                                30.0))
    return make_inputs(racks=[rack(capex=p["capex"], kw_idle=2, kw_max=8)], sites=[s],
                       workloads=[a, b], rate=0.07, unserved_usd_per_token=1e-2)


@PROP
@given(tiny, st.floats(0.05, 0.4))
@pytest.mark.slow
def test_more_headroom_never_cheaper(p, less):
    a = solve_inputs(_case(p), EXACT, explain=False)
    b = solve_inputs(_case(p, u=max(0.3, p["u"] - less)), EXACT, explain=False)
    assert b.objective_usd >= a.objective_usd * (1 - 1e-7) - 1e-6


@PROP
@given(tiny)
@pytest.mark.slow
def test_flexible_workload_never_raises_cost(p):
    rigid = solve_inputs(_case(p), EXACT, explain=False)
    flex = solve_inputs(_case(p, flexible=True), EXACT, explain=False)
    assert flex.objective_usd <= rigid.objective_usd * (1 + 1e-7) + 1e-6


@pytest.mark.slow
@PROP
@given(tiny)
def test_earlier_connection_never_dearer(p):
    slow = solve_inputs(_case(p, lead=2), EXACT, explain=False)
    fast = solve_inputs(_case(p, lead=1), EXACT, explain=False)
    assert slow.status is SolveStatus.OPTIMAL and fast.status is SolveStatus.OPTIMAL
    assert fast.objective_usd <= slow.objective_usd * (1 + 1e-7) + 1e-6


# --- linear network tiers ----------------------------------------------------------------


def _tiered(**kw):
    """A rack site whose linear network has two tiers: up to 4 racks 100 USD and 1 kW per
    rack, from 5 racks 300 USD and 3 kW (a fabric that needs a third switch tier)."""
    tiers = ((1, 4, 1.0, 100.0, 0.0), (5, 100, 3.0, 300.0, 0.0))
    return dataclasses.replace(rack_site(), network_tiers=tiers, **kw)


def _network_capex(res) -> list[float]:
    c = res.tables["costs"]
    c = c[c.category == "network_capex"]
    return [float(c[c.period == p].cost_usd.sum()) for p in ("2026", "2027", "2028")]


def test_network_tiers_priced_at_the_tier_of_the_racks_in_service():
    # 600 tokens/s at 100 per rack: 6 racks. At one site they are in the dearer tier
    # (6 x 300 USD, 6 x 3 kW); with a second site alike the plan splits them (4 + 2 or
    # 3 + 3) and stays in the cheaper one (6 x 100 USD).
    wl = workload(demand=(600.0,) * 3)
    one = make_inputs(workloads=[wl], sites=[site(grid_kw=1e6, positions=100)],
                      rack_sites={("ra", "sa"): _tiered()})
    r1 = solve_inputs(one, EXACT, explain=False)
    assert list(r1.tables["fleet"].installed_racks) == [6, 6, 6]
    assert _network_capex(r1) == pytest.approx([1800.0, 0.0, 0.0])
    assert r1.tables["power"].network_kw.iloc[0] == pytest.approx(18.0)
    two = make_inputs(workloads=[wl], sites=[site("sa", grid_kw=1e6, positions=100),
                                             site("sb", grid_kw=1e6, positions=100)],
                      rack_sites={("ra", "sa"): _tiered(), ("ra", "sb"): _tiered()})
    r2 = solve_inputs(two, EXACT, explain=False)
    f = r2.tables["fleet"]
    assert f.groupby("period").installed_racks.sum().tolist() == [6, 6, 6]
    assert f.installed_racks.max() <= 4
    assert _network_capex(r2) == pytest.approx([600.0, 0.0, 0.0])
    assert r2.objective_usd < r1.objective_usd


def test_a_network_that_grows_into_the_next_tier_pays_for_the_racks_it_has():
    # 4 racks in 2026 (400 USD of network), 6 from 2027: the installed network is worth
    # 6 x 300 = 1,800 USD, so 1,400 USD is bought in 2027 (re-cabling the first four too)
    d = make_inputs(workloads=[workload(demand=(400.0, 600.0, 600.0))],
                    sites=[site(grid_kw=1e6, positions=100)],
                    rack_sites={("ra", "sa"): _tiered()})
    res = solve_inputs(d, EXACT, explain=False)
    assert list(res.tables["fleet"].installed_racks) == [4, 6, 6]
    assert _network_capex(res) == pytest.approx([400.0, 1400.0, 0.0])
    assert res.objective_usd == pytest.approx(
        float(res.tables["costs"].cost_usd_discounted.sum()))


def test_a_collapsed_tier_the_plan_passes_is_solved_again_with_its_tiers():
    # priced at the lower tier at any count (a relaxation), the plan puts 6 racks at the
    # site; it passes the boundary, so the pair gets its tiers and is solved again
    d = make_inputs(workloads=[workload(demand=(600.0,) * 3)],
                    sites=[site(grid_kw=1e6, positions=100)],
                    rack_sites={("ra", "sa"): _tiered()},
                    network_collapsed=frozenset({("ra", "sa")}))
    res = solve_inputs(d, EXACT, explain=False)
    assert _network_capex(res) == pytest.approx([1800.0, 0.0, 0.0])
    assert d.network_collapsed == frozenset()
