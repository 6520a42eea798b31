"""Unserved demand only where a limit forces it (``unserved_policy: least_first``).

Hand-made cases (tests/test_planner_helpers.py): one rack type of 100 tokens/s at
10 kW (operating point = nameplate, no losses or cooling), one site, two periods of
400 tokens/s of demand, racks priced far above the unserved penalty, so that a plan
free to trade demand for money serves nothing.
"""

from __future__ import annotations

import dataclasses

import pytest

from dcplan.planner.analysis import binding_limits
from dcplan.planner.model import build_model, unserved_total
from dcplan.planner.run import solve_inputs
from dcplan.scenario import SolverOptions
from dcplan.scenario.schema import UNSERVED_POLICIES, Scenario
from tests.test_planner_helpers import make_inputs, rack, site, workload

EXACT = SolverOptions(gap=0.0, time_limit_s=60)
#: Penalty far below the cost of serving: a rack of 1e9 USD serves 100 tokens/s [USD/token].
CHEAP_PENALTY = 1e-12


def _short(res) -> dict[str, float]:
    """Unserved peak tokens/s by period label [tokens/s]."""
    u = res.tables["unserved"]
    return {str(r.period): r.short_tokens_per_s_peak for r in u.itertuples()}


def _grid_case(policy: str):
    """2026: 25 kW of grid. Racks are integers, their serving share is not: 3 racks idle
    at 2 kW leave 25 - 6 = 19 kW for 8 kW more per serving rack, 2.375 racks = 237.5 of
    400 tokens/s (2 racks would serve only 200, 4 draw 8 + 8 x 2.125...: 3 is best), so
    162.5 tokens/s are forced unserved; 2027: 1 MW, nothing forces a shortfall."""
    return make_inputs(n=2, racks=[rack(capex=1e9, kw_max=10.0, kw_idle=2.0)],
                       sites=[site(n=2, grid_kw=(25.0, 1e6), positions=10)],
                       workloads=[workload(demand=(400.0, 400.0))],
                       unserved_usd_per_token=CHEAP_PENALTY, unserved_policy=policy)


def test_the_default_policy_is_least_first():
    assert Scenario.model_fields["unserved_policy"].default == "least_first"
    assert set(UNSERVED_POLICIES) == {"least_first", "priced"}


def test_least_first_leaves_only_the_forced_shortfall():
    res = solve_inputs(_grid_case("least_first"), EXACT, explain=True)
    assert res.unserved and res.status.has_solution
    # 2026: 162.5 tokens/s (see _grid_case); 2027: nothing, though serving costs one
    # more rack of 1e9 USD and the penalty of 162.5 tokens/s for a year is 5e-3 USD
    assert _short(res) == pytest.approx({"2026": 162.5})
    fleet = res.tables["fleet"].set_index("period").installed_racks
    assert fleet["2026"] == 3 and fleet["2027"] == 4
    assert "least shortfall the limits allow" in res.message
    assert "grid at sa in 2026" in res.message
    assert "by choice" not in res.message


def test_priced_policy_trades_demand_for_money_and_says_so():
    res = solve_inputs(_grid_case("priced"), EXACT, explain=True)
    assert res.unserved
    # every token is cheaper to leave than to serve at 1e9 USD per rack
    assert _short(res) == pytest.approx({"2026": 400.0, "2027": 400.0})
    assert "left unserved by choice" in res.message
    assert "unserved_penalty_usd_per_million_tokens" in res.message


def test_the_second_stage_row_holds_the_least_shortfall():
    """The elastic model with ``unserved_limit``: the row ``unserved_total`` in million
    tokens; 162.5 tokens/s x 8760 h x 3600 s (one schedule, peak 1) = 5,124.6 million."""
    d = _grid_case("least_first")
    _prob, mv = build_model(d, elastic=True, unserved_limit=5124.6)
    row = mv.constraints["unserved_total"][()]
    coefs = {v.name: c for v, c in row.items()}
    assert coefs == pytest.approx({"unserved__wa__all__2026": 8760 * 3600 / 1e6,
                                   "unserved__wa__all__2027": 8760 * 3600 / 1e6})
    assert -row.constant == pytest.approx(5124.6)
    assert unserved_total(mv).keys() == row.keys()
    res = solve_inputs(d, EXACT, explain=False)
    assert sum(v * 8760 * 3600 / 1e6 for v in _short(res).values()) == pytest.approx(5124.6)



def test_the_second_stage_starts_from_the_first_stages_plan(monkeypatch):
    """The cost stage gets the least-shortfall plan's integers as its MIP start (2026: 3
    racks, see _grid_case), every one a variable of its own model, and HiGHS keeps that
    plan: the start meets the shortfall row it was built for."""
    import dcplan.planner.run as run

    calls = []

    def spy(prob, *args, **kwargs):
        info = real(prob, *args, **kwargs)
        calls.append((prob, kwargs.get("start"), info))
        return info

    real = run.solve
    monkeypatch.setattr(run, "solve", spy)
    res = solve_inputs(_grid_case("least_first"), EXACT, explain=False)
    assert res.unserved
    # the fixed-demand model (infeasible), the least shortfall, then the cost stage
    assert [c[1] is None for c in calls] == [True, True, False]
    least_prob, start, second = calls[1][0], calls[2][1], calls[2][0]
    first_plan = {v.name: v.varValue for v in least_prob.variables() if v.cat == "Integer"}
    assert {v.name: x for v, x in start.items()} == first_plan
    assert set(start) <= set(second.variables())
    assert first_plan["new__ra__sa__2026"] == 3.0  # the only count that serves 237.5
    assert res.tables["fleet"].set_index("period").installed_racks["2026"] == 3

def test_only_the_second_stage_searches_harder_for_plans(monkeypatch):
    """HiGHS's mip_heuristic_effort is SECOND_STAGE_HEURISTIC_EFFORT in the cost stage of
    least_first and HiGHS's own elsewhere; a scenario's own value is kept; CBC gets
    nothing it does not know."""
    import dcplan.planner.run as run

    efforts = []

    def spy(prob, opt, *args, **kwargs):
        efforts.append(opt.highs_options.get("mip_heuristic_effort"))
        return real(prob, opt, *args, **kwargs)

    real = run.solve
    monkeypatch.setattr(run, "solve", spy)
    assert solve_inputs(_grid_case("least_first"), EXACT, explain=False).unserved
    assert run.SECOND_STAGE_HEURISTIC_EFFORT == 0.3
    # the fixed-demand model, the least shortfall, then the cost stage
    assert efforts == [None, None, 0.3]
    efforts.clear()
    own = EXACT.updated(highs_options={"mip_heuristic_effort": 0.1})
    assert solve_inputs(_grid_case("least_first"), own, explain=False).unserved
    assert efforts == [0.1, 0.1, 0.1]
    cbc = SolverOptions(name="cbc")
    assert run.second_stage_options(cbc) is cbc
    efforts.clear()
    assert solve_inputs(_grid_case("priced"), EXACT, explain=False).unserved
    assert efforts == [None, None]  # no least shortfall: the priced plan as it was


def test_the_second_stage_floor_is_the_first_stages_proven_bound(monkeypatch):
    """The cost stage gets the row ``unserved_floor``: total shortfall >= the first
    stage's proven bound less the slack. Here the first stage proves 162.5 tokens/s x
    8760 h x 3600 s / 1e6 = 5,124.6 million tokens exactly (gap 0), so the floor is
    5,124.6 (1 - 1e-9) - 1e-6 and the limit 5,124.6 (1 + 1e-9) + 1e-6."""
    import dcplan.planner.run as run

    built = []

    def spy(d, **kwargs):
        built.append(kwargs)
        return real(d, **kwargs)

    real = run.build_model
    monkeypatch.setattr(run, "build_model", spy)
    res = solve_inputs(_grid_case("least_first"), EXACT, explain=False)
    assert res.unserved
    least = 162.5 * 8760 * 3600 / 1e6
    second = built[-1]
    assert second["unserved_floor"] == pytest.approx(least * (1 - 1e-9) - 1e-6, rel=1e-9)
    assert second["unserved_limit"] == pytest.approx(least * (1 + 1e-9) + 1e-6, rel=1e-9)
    assert second["unserved_floor"] < least < second["unserved_limit"]


def test_the_floor_tightens_the_relaxation_and_keeps_the_plan():
    """The floor cuts off no plan: the cost stage's optimum is the same with and without
    it (3 racks in 2026, see _grid_case). It cuts off the relaxation's fractional racks:
    with racks of 1 USD and unserved tokens at 1 USD, the LP leaves as little unserved
    as it can, and without the floor it serves 2.5 racks x 100 = 250 tokens/s in 2026
    (25 kW / 10 kW, all serving), leaving 150 tokens/s, less than any plan; with it,
    162.5."""
    from dcplan.planner.solver import solve

    d = make_inputs(n=2, racks=[rack(capex=1.0, kw_max=10.0, kw_idle=2.0)],
                    sites=[site(n=2, grid_kw=(25.0, 1e6), positions=10)],
                    workloads=[workload(demand=(400.0, 400.0))],
                    unserved_usd_per_token=1.0, unserved_policy="least_first")
    least = 162.5 * 8760 * 3600 / 1e6
    row_total = {}
    objectives = {}
    for floor in (None, least * (1 - 1e-9)):
        for mip in (True, False):
            prob, mv = build_model(d, elastic=True, unserved_limit=least * (1 + 1e-9),
                                   unserved_floor=floor)
            info = solve(prob, EXACT, mip=mip)
            objectives[floor is not None, mip] = info.objective
            row_total[floor is not None, mip] = unserved_total(mv).value()
    # the same optimum to the solver's tolerances (1e-9 of the shortfall is 10 USD here)
    assert objectives[True, True] == pytest.approx(objectives[False, True], rel=1e-8)
    assert row_total[False, False] == pytest.approx(150 * 8760 * 3600 / 1e6, rel=1e-6)
    assert row_total[True, False] == pytest.approx(least, rel=1e-6)
    assert objectives[True, False] > objectives[False, False]
    _prob, mv = build_model(d, elastic=True, unserved_limit=least, unserved_floor=2 * least)
    row = mv.constraints["unserved_floor"][()]
    assert -row.constant == pytest.approx(least)  # never above the limit
    _prob, mv = build_model(d, elastic=True, unserved_limit=least, unserved_floor=0.0)
    assert "unserved_floor" not in mv.constraints


def test_the_grids_shadow_price_counts_the_shortfall_it_would_save(monkeypatch):
    """The floor holds for the limits as they are, so the shadow prices go without it.
    Racks of 1 USD, unserved tokens at 1 USD: in 2026 the 3 racks idle at 2 kW and one
    more kW of grid serves 1/8 rack more, 12.5 tokens/s x 8760 h x 3600 s x 1 USD = 3.942e8
    USD per kW (discount factor 1; the energy it costs, under 1e3 USD, is within the
    tolerance): 3.942e11 USD per MW. Here HiGHS puts the price on the grid either way,
    but where the floor binds as well (seoul_power) the LP is degenerate and its price of
    the 2035 grid came out 0.6 M USD per MW instead of 91 with the floor in the LP: so
    the fixed LP's floor row is checked to be 0."""
    import dcplan.planner.analysis as analysis

    floors = []

    def spy(prob, *args, **kwargs):
        floors.append([c.constant for c in prob.constraints()
                       if c.name and c.name.startswith("unserved_floor")])
        return real(prob, *args, **kwargs)

    real = analysis.solve
    monkeypatch.setattr(analysis, "solve", spy)
    d = make_inputs(n=2, racks=[rack(capex=1.0, kw_max=10.0, kw_idle=2.0)],
                    sites=[site(n=2, grid_kw=(25.0, 1e6), positions=10)],
                    workloads=[workload(demand=(400.0, 400.0))],
                    unserved_usd_per_token=1.0, unserved_policy="least_first")
    assert d.df_opex(0) == 1.0
    res = solve_inputs(d, EXACT, explain=True)
    assert res.unserved and _short(res) == pytest.approx({"2026": 162.5})
    sp = res.tables["shadow_prices"].set_index(["family", "period"])
    assert sp.loc[("grid", "2026"), "shadow_price"] == pytest.approx(
        12.5 * 8760 * 3600 * 1.0 * 1000, rel=1e-5)
    # the relaxation is built afresh (no stage rows); the fixed LP is the plan's model
    assert floors[0] == [] and len(floors[1]) == 1 and floors[1][0] == 0.0


def test_a_carbon_cap_that_forces_a_shortfall_is_named_as_the_binding_limit():
    """2027 capped at 8760 h x 0.5 kg/kWh x 20 kW = 87,600 kg. The 4 racks bought in 2026
    (no cap) stay in service and idle at 2 kW: 20 - 8 = 12 kW for 8 kW more per serving
    rack, 1.5 racks = 150 of 400 tokens/s, 250 forced unserved."""
    d = make_inputs(n=2, racks=[rack(capex=1.0, kw_max=10.0, kw_idle=2.0)],
                    sites=[site(n=2, grid_kw=1e6, positions=10, carbon=0.5)],
                    workloads=[workload(demand=(400.0, 400.0))],
                    unserved_usd_per_token=1e-3, carbon_cap_kg=(None, 87_600.0))
    res = solve_inputs(d, EXACT, explain=True)
    assert _short(res) == pytest.approx({"2027": 250.0}, rel=1e-6)
    b = res.tables["binding"]
    cap = b[b.limit == "carbon_cap"]
    assert list(cap.period) == ["2027"] and list(cap.site) == ["all sites"]
    assert cap.iloc[0].value == pytest.approx(87.6) and cap.iloc[0].used == pytest.approx(87.6)
    assert cap.iloc[0].unit == "tCO2"
    assert "carbon cap (all sites) in 2027" in res.message


def test_a_budget_reached_is_a_binding_limit():
    """2026 budget of 3 racks at 1,000 USD: 300 of 400 tokens/s."""
    d = make_inputs(n=1, racks=[rack(capex=1000.0)], sites=[site(n=1, grid_kw=1e6)],
                    workloads=[workload(demand=(400.0,))], budget=(3000.0,),
                    unserved_usd_per_token=1e-3)
    res = solve_inputs(d, EXACT, explain=True)
    assert _short(res) == pytest.approx({"2026": 100.0})
    b = res.tables["binding"]
    row = b[b.limit == "budget"].iloc[0]
    assert (row.site, row.period, row.unit) == ("all sites", "2026", "USD")
    assert row.value == pytest.approx(3000.0) and row.used == pytest.approx(3000.0)
    assert "capex budget (all sites) in 2026" in res.message


def test_binding_limits_without_costs_has_no_budget_rows():
    d = make_inputs(n=1, racks=[rack(capex=1000.0)], sites=[site(n=1, grid_kw=1e6)],
                    workloads=[workload(demand=(400.0,))], budget=(3000.0,),
                    unserved_usd_per_token=1e-3)
    res = solve_inputs(dataclasses.replace(d), EXACT, explain=False)
    t = res.tables
    b = binding_limits(d, None, t["power"], t["fleet"], t["cooling"], None, None)
    assert "budget" not in set(b.limit)


def test_the_least_shortfall_stage_reports_its_progress_without_usd():
    """The first stage's progress reaches ``on_solve`` named "least shortfall", with its
    elapsed time and gap but no USD figures (its objective is unserved tokens); the
    cost stage's reports come after it, unnamed, in USD; the live line says which."""
    from dcplan.cli.common import _SolveStatus

    seen = []
    res = solve_inputs(_grid_case("least_first"), EXACT, explain=False, on_solve=seen.append)
    assert res.unserved
    stages = [p.stage for p in seen]
    first = [p for p in seen if p.stage == "least shortfall"]
    assert first and stages == sorted(stages, reverse=True)  # every named report first
    assert all(p.incumbent_usd is None and p.bound_usd is None for p in first)
    assert any(p.gap is not None for p in first)
    cost = [p for p in seen if p.stage == ""]
    assert cost and cost[-1].incumbent_usd == pytest.approx(res.objective_usd, rel=1e-6)
    line = _SolveStatus("plan")
    line.update(next(p for p in first if p.gap is not None))
    assert line.text().startswith("[plan] solving the least shortfall: ")
    assert "USD" not in line.text() and line.text().endswith("%")
    line.update(cost[-1])
    assert line.text().startswith("[plan] solving: ") and "M USD" in line.text()
