"""Honest reporting of a plan: KPIs recomputed from the costs table, status wording, the
heat split, binding limits, the solver fallback and the exact-vs-linear sizing notes."""

from __future__ import annotations

import importlib
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_planner_helpers import make_inputs, rack, rack_site, site, workload

from dcplan.planner import SolveStatus, solve_inputs
from dcplan.planner.analysis import PRICE_BASIS, no_grid_sites, not_buildable_sites, quoted_price
from dcplan.planner.inputs import PerfData
from dcplan.planner.sizing import planner_cdus
from dcplan.planner.solver import PROVEN_GAP, SolveInfo, status_text
from dcplan.scenario import SolverOptions

EXACT = SolverOptions(gap=0.0, time_limit_s=30)
# The package exports the function ``solve``, which hides the module of the same name.
solve_mod = importlib.import_module("dcplan.planner.solver")


def _unserved_plan():
    """Grid of 25 kW in 2028 cannot serve 300 tokens/s; r = 10 % so discounting matters."""
    d = make_inputs(racks=[rack(capex=1000, maint=0.1, life=4)],
                    sites=[site(grid_kw=[100, 100, 25], demand_charge=1.0)],
                    workloads=[workload(demand=(100, 200, 300))], rate=0.10, terminal=True,
                    unserved_usd_per_token=1e-3)
    res = solve_inputs(d, EXACT)
    assert res.unserved and res.status.has_solution
    return d, res


def test_capex_opex_npv_kpis_recomputed_from_the_costs_table_with_unserved_demand():
    _d, res = _unserved_plan()
    c = res.tables["costs"]
    pen = c.category == "unserved_penalty"
    assert c.loc[pen, "cost_usd"].sum() > 0
    # Discounted and undiscounted penalty differ, so mixing them shows up.
    assert c.loc[pen, "cost_usd"].sum() != pytest.approx(c.loc[pen, "cost_usd_discounted"].sum())
    capex = c.loc[c.kind == "capex", "cost_usd"].sum()
    opex = c.loc[(c.kind == "opex") & ~pen, "cost_usd"].sum()
    npv = c.loc[~pen, "cost_usd_discounted"].sum()
    assert res.kpi("capex_usd") == pytest.approx(capex, rel=1e-12)
    assert res.kpi("opex_usd") == pytest.approx(opex, rel=1e-12)
    assert res.kpi("npv_cost_usd") == pytest.approx(npv, rel=1e-12)
    # Opex is energy + demand charge + maintenance, nothing else.
    parts = c[c.category.isin(["energy", "demand_charge", "maintenance"])].cost_usd.sum()
    assert res.kpi("opex_usd") == pytest.approx(parts, rel=1e-12)


def test_status_wording_is_honest():
    assert status_text(SolveStatus.OPTIMAL, 0.0, "highs") == "optimal"
    assert status_text(SolveStatus.OPTIMAL, PROVEN_GAP, "highs") == "optimal"
    t = status_text(SolveStatus.OPTIMAL, 0.00265, "highs")
    assert t.startswith("optimal within the 0.265% gap") and "no plan is more than 0.265%" in t
    # never rounded down: 0.0130 % is not "0.01%"
    assert status_text(SolveStatus.OPTIMAL, 0.000130, "highs").startswith(
        "optimal within the 0.013% gap")
    assert status_text(SolveStatus.OPTIMAL, None, "cbc") == (
        "solver reported optimal; gap not reported by CBC")
    # gap 2 % of the plan: the optimum is at least 0.98 x plan, so the plan is at most
    # 0.02 / 0.98 = 2.0408 % above it, printed rounded up
    t = status_text(SolveStatus.FEASIBLE, 0.02, "highs")
    assert t.startswith("NOT PROVEN OPTIMAL") and "may cost up to 2.05% more" in t
    t = status_text(SolveStatus.OPTIMAL, 0.0, "highs", unserved=True)
    assert t.startswith("demand NOT fully met (elastic plan)")
    assert status_text(SolveStatus.INFEASIBLE, None).startswith("no plan")
    info = SolveInfo(SolveStatus.OPTIMAL, 1.0, 0.003, "highs", 1.0)
    assert not info.proven_optimal
    assert SolveInfo(SolveStatus.OPTIMAL, 1.0, 0.0, "highs", 1.0).proven_optimal
    assert not SolveInfo(SolveStatus.OPTIMAL, 1.0, None, "cbc", 1.0).proven_optimal


def test_elastic_plan_is_never_headlined_optimal():
    _d, res = _unserved_plan()
    assert res.status is SolveStatus.OPTIMAL        # the enum keeps its meaning
    assert res.status_text.startswith("demand NOT fully met")
    s = res.summary()
    assert s["status"] == "optimal" and s["status_text"] == res.status_text
    assert s["proven_optimal"] is res.proven_optimal


def test_gap_plan_is_not_called_optimal(monkeypatch):
    d = make_inputs(workloads=[workload(demand=(250, 480, 730))])
    res = solve_inputs(d, EXACT, explain=False)
    res.gap = 0.0123                               # as a 1 % gap solve would report
    assert not res.proven_optimal
    assert res.status_text.startswith("optimal within the 1.23% gap")
    res.solver, res.gap = "cbc", None
    assert "gap not reported by CBC" in res.status_text


def test_heat_split_uses_the_same_it_figure():
    # 90 % of a 10 kW rack's heat goes to liquid; the rack runs at 6 kW (idle 2 kW).
    perf = {("ra", "wa"): PerfData(100.0, 6.0)}
    rs = {("ra", "sa"): rack_site(liquid_kw=9.0, cdu_id="c1", cdu_kw=50, cdu_capex=10,
                                  net_kw=0.5)}
    d = make_inputs(racks=[rack(liquid=True, kw_max=10, kw_idle=2)], perf=perf, rack_sites=rs,
                    workloads=[workload(demand=(300, 300, 300))])
    res = solve_inputs(d, EXACT, explain=False)
    c = res.tables["cooling"].set_index("period")
    p = res.tables["power"].set_index("period")
    for per in ("2026", "2027", "2028"):
        # 3 racks fully allocated at 6 kW: IT 18 kW, liquid 0.9 x 18, air 0.1 x 18 + 1.5.
        assert p.it_kw_peak[per] == pytest.approx(18.0)
        assert c.liquid_heat_kw[per] == pytest.approx(16.2)
        assert c.air_heat_kw[per] == pytest.approx(1.8 + 1.5)
        assert c.liquid_heat_kw[per] + c.air_heat_kw[per] == pytest.approx(
            p.it_kw_peak[per] + p.network_kw[per])
        assert c.liquid_heat_kw_full_load[per] == pytest.approx(27.0)
        assert c.milp_cdus[per] == 2               # ceil(27 / 50) + 1


def test_cdu_positions_follow_the_cdu_model():
    rs = rack_site(liquid_kw=25, cdu_id="c1", cdu_kw=60, cdu_capex=10, cdu_pos=2)
    d = make_inputs(racks=[rack(liquid=True, kw_idle=25, kw_max=25)], rack_sites={("ra", "sa"): rs},
                    sites=[site(positions=20, grid_kw=1000)],
                    workloads=[workload(demand=(500, 500, 500))])
    c = solve_inputs(d, EXACT, explain=False).tables["cooling"]
    assert list(c.milp_cdu_positions) == [2 * n for n in c.milp_cdus] and c.milp_cdus.iloc[0] == 4


def test_zero_grid_sites_are_not_ranked_and_periods_are_sorted():
    s1 = site("sa", grid_kw=[20, 20, 20], price=0.30, positions=2)
    s2 = site("sb", grid_kw=[0, 40, 40], price=0.05, positions=5)
    d = make_inputs(racks=[rack(capex=500, kw_idle=10, kw_max=10, life=2, maint=0.2)],
                    sites=[s1, s2], workloads=[workload(demand=(150, 250, 420))], rate=0.05)
    res = solve_inputs(d, EXACT)
    b = res.tables["binding"]
    power = res.tables["power"]
    assert not ((b.value == 0) & (b.used == 0)).any()
    assert no_grid_sites(power) == {"sb": ["2026"]}
    sp = res.tables["shadow_prices"]
    assert len(sp[(sp.family == "grid") & (sp.site == "sb") & (sp.period == "2026")]) == 1
    # A site that must wait for its lead time, with nothing built yet.
    s3 = site("sc", grid_kw=[100, 100, 100], price=0.05, first_build=2)
    d2 = make_inputs(sites=[site("sa", grid_kw=1000, price=0.5), s3],
                     workloads=[workload(demand=(100, 100, 100))])
    res2 = solve_inputs(d2, EXACT)
    assert not_buildable_sites(d2, res2.tables["power"]) == {"sc": ["2026", "2027"]}
    assert "lead_time" not in set(res2.tables["binding"].limit)


def test_lead_time_rows_carry_a_shadow_price():
    # 15 kW built, nothing more before 2028; demand needs 2 racks of 10 kW in 2026.
    d = make_inputs(sites=[site(grid_kw=100, built0=15.0, first_build=2, build=100.0)],
                    workloads=[workload(demand=(200, 200, 200))], unserved_usd_per_token=1.0)
    res = solve_inputs(d, EXACT)
    b = res.tables["binding"]
    lt = b[b.limit == "lead_time"]
    assert len(lt) and lt.shadow_price.notna().all()
    assert (lt.shadow_unit == "USD per MW (present value)").all()


def test_diagnosis_lists_periods_in_order():
    import pandas as pd

    from dcplan.planner.analysis import diagnosis

    d = make_inputs(sites=[site(n=4)], n=4, workloads=[workload(demand=(1, 1, 1, 1))])
    unserved = pd.DataFrame([dict(workload="wa", pool="all", period=p,
                                  short_tokens_per_s_peak=10.0, short_frac=0.1)
                             for p in ("2027", "2028", "2029")])
    # Ranked by shadow price, so not in time order.
    binding = pd.DataFrame([dict(limit="grid", site="sa", period=p) for p in
                            ("2029", "2027", "2028")])
    msg = diagnosis(d, unserved, binding)
    assert "grid at sa in 2027, 2028, 2029." in msg


def test_time_limit_without_a_plan_does_not_fall_back(monkeypatch):
    def highs(prob, opt, mip, rounding=None, on_progress=None):
        return SolveInfo(SolveStatus.NOT_SOLVED, None, None, "highs", opt.time_limit_s,
                         "HiGHS reached the time limit", time_limit_hit=True)

    def cbc(*_a, **_k):
        raise AssertionError("CBC must not run after a HiGHS time limit")

    monkeypatch.setattr(solve_mod, "_highs", highs)
    monkeypatch.setattr(solve_mod, "_cbc", cbc)
    info = solve_mod.solve(None, SolverOptions(time_limit_s=5))
    assert info.status is SolveStatus.NOT_SOLVED and "time limit" in info.message


def test_solver_exception_is_reported_not_retried(monkeypatch):
    """An exception inside HiGHS is a SolverError naming it; CBC is not tried, so its
    answer cannot be mistaken for one about the input."""
    def highs(prob, opt, mip, rounding=None, on_progress=None):
        raise IndexError("index 7 is out of bounds")

    def cbc(*_a, **_k):
        raise AssertionError("CBC must not run after a HiGHS exception")

    monkeypatch.setattr(solve_mod, "_highs", highs)
    monkeypatch.setattr(solve_mod, "_cbc", cbc)
    with pytest.raises(solve_mod.SolverError, match="HiGHS solver failed inside "
                                                    r"\(IndexError: index 7"):
        solve_mod.solve(None, SolverOptions(time_limit_s=50))


def test_solver_stop_falls_back_with_the_time_left(monkeypatch):
    seen = {}

    def highs(prob, opt, mip, rounding=None, on_progress=None):
        return SolveInfo(SolveStatus.NOT_SOLVED, None, None, "highs", 1.0,
                         "HiGHS stopped: solve error")

    def cbc(prob, opt, mip):
        seen["limit"] = opt.time_limit_s
        return SolveInfo(SolveStatus.OPTIMAL, 1.0, None, "cbc", 0.1)

    monkeypatch.setattr(solve_mod, "_highs", highs)
    monkeypatch.setattr(solve_mod, "_cbc", cbc)
    info = solve_mod.solve(None, SolverOptions(time_limit_s=50))
    assert info.solver == "cbc" and "fell back to CBC" in info.message
    assert 0 < seen["limit"] <= 50


def test_highs_options_are_checked_against_highs_at_load():
    """A misspelt option, a wrong value and an option dcplan sets itself are each named
    (HiGHS would ignore the first two silently; ``threads`` raised a SolverError inside
    the solve); a valid one reaches the solver."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as err:
        SolverOptions(highs_options={"mip_heuristc_effort": 0.2, "threads": 1,
                                     "mip_heuristic_effort": 5.0, "random_seed": 2})
    text = str(err.value)
    assert "'mip_heuristc_effort' is not a HiGHS option (did you mean " \
        "'mip_heuristic_effort'?)" in text
    assert "'threads' is set by dcplan from solver.threads" in text
    assert "'mip_heuristic_effort': 5.0 is not a valid value" in text
    assert "'random_seed' is set by dcplan" in text
    from dcplan.planner import build_model

    prob, _mv = build_model(make_inputs())
    info = solve_mod.solve(prob, SolverOptions(gap=0.0,
                                               highs_options={"mip_heuristic_effort": 0.2}))
    assert info.status is SolveStatus.OPTIMAL
    assert prob.solverModel.getOptionValue("mip_heuristic_effort")[1] == pytest.approx(0.2)


def test_planner_cdu_estimate_is_the_constraint_not_a_per_rack_average():
    racks, heat_kw, cdu_kw, cdu_capex, spares = 27, 25.0, 60.0, 10.0, 1
    rs = rack_site(liquid_kw=heat_kw, cdu_id="c1", cdu_kw=cdu_kw, cdu_capex=cdu_capex,
                   cdu_pos=1)
    d = make_inputs(racks=[rack(liquid=True, kw_max=heat_kw)], rack_sites={("ra", "sa"): rs},
                    redundancy=spares)
    # the constraint: whole CDUs for the site's total liquid heat, then the spares
    whole = math.ceil(racks * heat_kw / cdu_kw) + spares
    count, capex = planner_cdus(d, "sa", {"ra": racks})
    assert (count, capex) == (whole, whole * cdu_capex)
    # neither the fractional per-rack average nor whole CDUs per rack
    assert count != racks * heat_kw / cdu_kw + spares
    assert count != racks * math.ceil(heat_kw / cdu_kw) + spares
    assert planner_cdus(d, "sa", {"ra": 0}) == (0.0, 0.0)


@given(st.floats(min_value=0.0, max_value=0.999, allow_nan=False))
def test_printed_gap_is_never_below_the_gap(g):
    from dcplan.planner.solver import format_gap

    printed = float(format_gap(g).rstrip("%")) / 100.0
    assert printed >= g - 1e-12
    assert printed - g <= 0.0001 + 1e-12  # at most one unit of the last printed digit


def test_operations_counted_follows_the_costs_table():
    import pandas as pd

    from dcplan.export.views import operations_counted

    def costs(staff: float, software: float) -> pd.DataFrame:
        return pd.DataFrame({"category": ["rack_capex", "staff", "software"],
                             "cost_usd": [1e6, staff, software]})

    assert operations_counted(costs(5e4, 0.0))
    assert operations_counted(costs(0.0, 2e4))
    assert not operations_counted(costs(0.0, 0.0))
    assert not operations_counted(costs(0.0, 0.0).iloc[:1])
    assert not operations_counted(None)


def test_a_plan_with_no_grid_anywhere_serves_nothing_and_says_why():
    """No grid at the only site: nothing served, no unit cost, no 'build is cheaper'."""
    d = make_inputs(sites=[site(grid_kw=[0.0, 0.0, 0.0])],
                    workloads=[workload(demand=(100, 200, 300))],
                    unserved_usd_per_token=1e-3)
    res = solve_inputs(d, EXACT)
    assert res.unserved and res.status.has_solution
    assert res.kpi("tokens_served") == 0.0
    assert res.kpi("usd_per_million_tokens") is None
    assert not len(res.tables["build_vs_buy"])
    assert "no grid capacity: sa gets 0 MW in" in res.message


def test_demand_short_because_nothing_can_be_built_yet_says_so():
    """Grid but no building before the third period (its lead time) and nothing built:
    the first two periods are short, and the diagnosis names the building lead time,
    not racks that are 'not yet available'."""
    d = make_inputs(sites=[site(grid_kw=1e6, first_build=2, build=1.0)],
                    workloads=[workload(demand=(100, 200, 300))],
                    unserved_usd_per_token=1e-3)
    res = solve_inputs(d, EXACT)
    assert res.unserved and res.status.has_solution
    assert "sa: no building can be finished before 2028" in res.message, res.message
    assert "in 2026, 2027" in res.message
    assert "not yet available" not in res.message


def test_quoted_price_prefers_a_positive_relaxed_price():
    """A summary quotes the relaxed price where it is positive, else the fixed-fleet one,
    and says which; no positive price, no quote."""
    from types import SimpleNamespace as Row

    nan = float("nan")
    assert quoted_price(Row(shadow_price=0.0, shadow_price_relaxed=35.0)) == (35.0, "relaxed")
    assert quoted_price(Row(shadow_price=7.0, shadow_price_relaxed=12.0)) == (12.0, "relaxed")
    assert quoted_price(Row(shadow_price=7.0, shadow_price_relaxed=0.0)) == (7.0, "fixed")
    assert quoted_price(Row(shadow_price=7.0, shadow_price_relaxed=nan)) == (7.0, "fixed")
    assert quoted_price(Row(shadow_price=nan, shadow_price_relaxed=0.0)) == (None, "")
    assert set(PRICE_BASIS) == {"relaxed", "fixed"}
