"""The MILP's integer fabric rows give exactly the network model's switch and link counts."""

from __future__ import annotations

from pathlib import Path

import pulp
import pytest

from dcplan.catalog import load_catalog
from dcplan.planner.fabric import TIERS, fabric_counts, fabric_data
from dcplan.planner.model_vars import ModelVars
from dcplan.planner.network_rows import _fabric_rows, fabric_start_values

CATALOG = load_catalog()


def _solve_counts(fd, n: int, cap: int) -> dict[str, float]:
    """Least-cost counts of the fabric rows with the racks fixed at ``n``."""
    prob = pulp.LpProblem("fabric", pulp.LpMinimize)
    mv = ModelVars()
    inst = prob.add_variable("inst", n, n)
    fv = _fabric_rows(prob, None, mv, fd, inst, cap, ("r", "s", fd.fabric, "p"))
    cost = [(v, fd.switch_capex_usd * c) for t in ("leaf", "spine", "core")
            for v, c in fv.counts[t].items()]
    cost += [(v, (fd.link_capex_usd[t] + 1.0) * c) for t in TIERS
             for v, c in fv.counts[t].items()]
    prob.setObjective(pulp.LpAffineExpression(cost))
    prob.solve(pulp.HiGHS(msg=False, mip_rel_gap=0))
    assert pulp.LpStatus[prob.status] == "Optimal"
    out = {k: float(pulp.value(e) or 0.0) for k, e in fv.counts.items()}
    start = fabric_start_values(fv, n)
    return out, {v.name: x for v, x in start.items()}, {v.name: v.value()
                                                         for v in mv.fabric_integers}


@pytest.mark.parametrize("rack", ["gb200_nvl72", "vera_rubin_nvl72", "rubin_ultra_nvl576",
                                  "hgx_b300", "mi355x_rack"])
@pytest.mark.slow
def test_integer_rows_equal_the_step_functions(rack):
    cap = 160
    for fd in fabric_data(CATALOG, rack, 20, cap):
        # every count up to the largest overfill point, then a spread to the cap
        top = max(fd.overfill, default=fd.one_switch_max + 2) + 2
        ns = sorted(set(range(top + 1)) | {116, 117, 143, 144, 145, 160})
        for n in (x for x in ns if 0 <= x <= min(cap, fd.three_tier_max)):
            got, start, vals = _solve_counts(fd, n, cap)
            want = fabric_counts(fd, n)
            if n > fd.two_tier_max:  # three tiers: the rows are a lower bound
                assert got["leaf"] == want["leaf"] and got["core"] == want["core"]
                assert got["spine"] <= want["spine"]
                continue
            assert got == {k: float(v) for k, v in want.items()}, (rack, fd.fabric, n)
            # the MIP start of the same fleet is the solver's own answer
            assert all(abs(start[k] - vals[k]) < 1e-6 for k in start if k in vals
                       and "gap" not in k and "need" not in k), (rack, fd.fabric, n)


def test_fabric_data_prices_match_the_network_model():
    from dcplan.facility.coefficients import cached_network
    from dcplan.planner.fabric import fabric_figures

    net = cached_network(CATALOG, "gb200_nvl72", 20)
    figs = [fabric_figures(fd, fabric_counts(fd, 20))
            for fd in fabric_data(CATALOG, "gb200_nvl72", 20, 100)]
    assert sum(f["capex_usd"] for f in figs) == pytest.approx(net.network_capex_usd)
    assert sum(f["kw"] for f in figs) == pytest.approx(net.network_kw)
    assert sum(f["switches"] for f in figs) == net.backend.switches + net.frontend.switches


# --- redundancy recharge, redundancy capex and the water limit in the MILP -------------


def _small_plan(d):
    from dcplan.planner.run import solve_inputs
    from dcplan.scenario import SolverOptions

    return solve_inputs(d, SolverOptions(gap=1e-4, time_limit_s=120), explain=False)


def _instance(**rack_site):
    import dataclasses
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from planner_gen import generate

    d = generate(2, 4, 2, 1, False, seed=3)
    rs = {k: dataclasses.replace(v, **rack_site) for k, v in d.rack_site.items()}
    return dataclasses.replace(d, rack_site=rs)


def test_water_limit_binds_and_recharge_counts_against_the_grid():
    import dataclasses

    base = _instance(water_l_per_it_kwh=1.5, recharge_kw_per_it_kw=0.1)
    free = _small_plan(base)
    assert free.ok
    water = free.tables["cooling"].set_index(["site", "period"]).water_m3
    site, period = water.idxmax()
    years = next(p.years for p in base.periods if p.label == period)
    # hand-computed: WUE x IT at full load x hours of the period / 1000 [m3]
    fleet = free.tables["fleet"]
    sub = fleet[(fleet.site == site) & (fleet.period == period)]
    want = sum(1.5 * base.racks[r].it_power_max_kw * n * 8760 * years / 1000
               for r, n in zip(sub.rack, sub.installed_racks, strict=True))
    assert water[site, period] == pytest.approx(want)
    limit = 0.5 * water[site, period] / years  # half of what it used [m3/year]
    sites = dict(base.sites)
    sites[site] = dataclasses.replace(sites[site], water_limit_m3_per_year=limit)
    tight = _small_plan(dataclasses.replace(base, sites=sites))
    assert tight.ok
    w2 = tight.tables["cooling"].set_index(["site", "period"])
    assert (w2.water_m3 <= w2.water_limit_m3.fillna(float("inf")) * (1 + 1e-9)).all()
    assert w2.water_m3[site, period] == pytest.approx(0.5 * water[site, period], rel=1e-6)
    assert tight.objective_usd > free.objective_usd
    # the grid carries the facility peak plus the UPS recharge
    pw = free.tables["power"]
    assert (pw.recharge_kw > 0).any()
    assert (pw.facility_kw_peak + pw.recharge_kw <= pw.grid_kw * (1 + 1e-9) + 1e-6).all()


def test_redundancy_capex_is_charged_per_it_kw_of_new_racks():
    base = _instance()
    dear = _instance(redundancy_capex_usd_per_kw=100.0)
    a, b = _small_plan(base), _small_plan(dear)
    costs = b.tables["costs"]
    paid = costs[costs.category == "redundancy_capex"].cost_usd.sum()
    fleet = b.tables["fleet"]
    want = sum(100.0 * dear.racks[r.rack].it_power_max_kw * r.new_racks
               for r in fleet.itertuples())
    assert paid == pytest.approx(want) and paid > 0
    assert b.objective_usd > a.objective_usd


@pytest.mark.parametrize("rack", ["gb200_nvl72", "hgx_b300", "mi355x_rack",
                                  "rubin_ultra_nvl576"])
@pytest.mark.slow
def test_fabric_counts_are_the_network_models_and_survive_a_json_round_trip(rack):
    from dcplan.facility.steps import fabric_steps
    from dcplan.planner.saved import _decode, _encode

    steps = fabric_steps(CATALOG, rack)
    for fd in fabric_data(CATALOG, rack, 20, 200):
        back = _decode(_encode(fd))
        for n in range(0, 201):
            want = steps[fd.fabric].counts(n)
            assert fabric_counts(fd, n) == want == fabric_counts(back, n), (fd.fabric, n)


@pytest.mark.slow
def test_three_tier_re_settle_is_kept_or_said(monkeypatch):
    """The minimal example's three-tier fabric: re-settled at exact counts (the plan's
    power within its grid); if that LP fails, the plan stands and a note says so."""
    import dcplan.planner.run as run_mod
    from dcplan.case import load_case
    from dcplan.planner import solve_case
    from dcplan.planner.solver import SolverError

    case = load_case(Path(__file__).parent.parent / "examples" / "minimal.yaml")
    res = solve_case(case, explain=False, size=False)
    assert any("re-settled at their exact counts" in n for n in res.notes)
    pw = res.tables["power"]
    assert (pw.facility_kw_peak + pw.recharge_kw <= pw.grid_kw * (1 + 1e-6) + 1e-6).all()
    real = run_mod.solve

    def failing(prob, opt=None, mip=True, **kw):
        if not mip:
            raise SolverError("highs", RuntimeError("LP failed on purpose"))
        return real(prob, opt, mip=mip, **kw)

    monkeypatch.setattr(run_mod, "solve", failing)
    kept = solve_case(case, explain=False, size=False)
    assert kept.status.has_solution
    assert any("could not be re-settled at their exact counts" in n for n in kept.notes)
