"""``cdu_choice: milp``: one CDU model per site chosen by the MILP (issue 33, item 2).

A hand-computed instance where the model cheapest over the horizon is not the one the
rack type's coefficients name; the plan's cooling-table counts against ``dcplan
cooling --fleet ... --cdu ... --json`` on a shipped example; ``dcplan cooling``'s bad
input.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_planner_helpers import make_inputs, rack, rack_site, site, workload
from typer.testing import CliRunner

from dcplan.cli import app
from dcplan.planner import solve_inputs
from dcplan.planner.cdus import fleet_mix
from dcplan.planner.inputs import CduData
from dcplan.scenario import SolverOptions

REPO = Path(__file__).resolve().parents[1]
EXACT = SolverOptions(gap=0.0, time_limit_s=30)

#: The rack type's own model (``RackSiteData.cdu_id``): 60 kW, 10 USD.
C1 = CduData("c1", 60.0, 10.0, 0.0)
#: A larger model: 150 kW, 18 USD.
C2 = CduData("c2", 150.0, 18.0, 0.0)


def _inputs(choice: str, demand=(200.0, 500.0), existing=(), rate=0.1, options=(C1, C2),
            life=10.0):
    """Two periods (2026, 2027), one liquid-cooled rack type of 25 kW heat per rack
    (``cdu_id`` c1), 100 tokens/s per rack, N+1 CDUs, discount rate 10 %/yr, no
    terminal value; ``cdu_choice`` ``choice`` between c1 and c2."""
    rs = rack_site(liquid_kw=25.0, cdu_id="c1", cdu_kw=C1.cdu_capacity_kw,
                   cdu_capex=C1.cdu_capex_usd)
    d = make_inputs(n=2, racks=[rack(liquid=True, kw_idle=25.0, kw_max=25.0, life=life)],
                    rack_sites={("ra", "sa"): rs},
                    sites=[site(n=2, positions=20, grid_kw=1000.0)],
                    workloads=[workload(demand=demand)], rate=rate, existing=existing,
                    redundancy=1)
    if choice == "milp":
        d = dataclasses.replace(d, cdu_choice="milp", cdu_options={"sa": tuple(options)})
    return d


def _cdus(res) -> tuple[list[str], list[float]]:
    cool = res.tables["cooling"]
    return list(cool.milp_cdus_by_model), list(cool.milp_cdus)


def test_hand_computed_choice_beats_the_rack_types_model():
    """2 then 5 racks: 50 then 125 kW of liquid heat.

    c1 (the rack type's model): ceil(50/60)+1 = 2, then ceil(125/60)+1 = 4 CDUs: 2 x 10
    USD in 2026 and 2 x 10 USD in 2027, present value 20 + 20 / 1.1 = 38.1818 USD.
    c2: ceil(50/150)+1 = 2 in both periods, 2 x 18 = 36 USD in 2026. The racks are the
    same in both plans, so the NPVs differ by exactly 38.1818 - 36 = 2.1818 USD."""
    fixed = solve_inputs(_inputs("per_rack_type"), EXACT)
    chosen = solve_inputs(_inputs("milp"), EXACT)
    assert fixed.ok and chosen.ok
    assert _cdus(fixed) == (["c1: 2", "c1: 4"], [2.0, 4.0])
    assert _cdus(chosen) == (["c2: 2", "c2: 2"], [2.0, 2.0])
    assert list(chosen.tables["fleet"].installed_racks) == [2, 5]
    assert fixed.objective_usd - chosen.objective_usd == pytest.approx(20 + 20 / 1.1 - 36,
                                                                       abs=1e-3)
    # a single period's fleet would choose c1 in 2026 (2 x 10 < 2 x 18): the horizon
    # choice is not a snapshot's


def test_only_the_rack_types_model_offered_gives_the_fixed_plan():
    """With c1 alone on offer, ``milp`` is the ``per_rack_type`` plan (same NPV, CDUs)."""
    fixed = solve_inputs(_inputs("per_rack_type"), EXACT)
    alone = solve_inputs(_inputs("milp", options=(C1,)), EXACT)
    assert _cdus(alone) == _cdus(fixed)
    assert alone.objective_usd == pytest.approx(fixed.objective_usd, abs=1e-3)


def test_existing_liquid_racks_own_cdus_of_the_chosen_model():
    """Two existing racks (50 kW) own ceil(50 / cap) + 1 = 2 CDUs of whichever model is
    chosen. c2 then needs none more (125 kW -> 2), c1 two more in 2027 (20 / 1.1 =
    18.18 USD): c2 is chosen and no CDU is bought."""
    d = _inputs("milp", existing=[("ra", "sa", 2, 2)])
    res = solve_inputs(d, EXACT)
    assert res.ok
    assert _cdus(res) == (["c2: 2", "c2: 2"], [2.0, 2.0])
    costs = res.tables["costs"]
    assert costs[costs.category == "cdu_capex"].cost_usd.sum() == pytest.approx(0.0, abs=1e-6)


def test_falling_heat_keeps_the_cdus_bought():
    """5 racks then 2 (demand 500 then 200, racks of a one-year life): 125 then 50 kW.
    c1 would need 4 then 2 CDUs and keep 4 (40 USD in 2026), c2 2 and 2 (36 USD):
    c2, and the plan's count stays 2; with c1 alone on offer it keeps the 4 it bought
    where the fleet of 2027 needs ceil(50 / 60) + 1 = 2."""
    res = solve_inputs(_inputs("milp", demand=(500.0, 200.0), life=1.0), EXACT)
    assert res.ok
    assert list(res.tables["fleet"].installed_racks) == [5, 2]
    assert _cdus(res) == (["c2: 2", "c2: 2"], [2.0, 2.0])
    alone = solve_inputs(_inputs("milp", demand=(500.0, 200.0), life=1.0, options=(C1,)),
                         EXACT)
    assert _cdus(alone) == (["c1: 4", "c1: 4"], [4.0, 4.0])


def test_rounded_start_holds_the_cheapest_model_at_its_least_counts():
    """The MIP start of a rounded fleet of 2 then 5 racks: c2 (36 against 38.18 USD),
    2 and 2 CDUs, on from 2026; c1 none."""
    from dcplan.planner import build_model
    from dcplan.planner.start import rounded_values

    d = _inputs("milp")
    prob, mv = build_model(d)
    for p, n in enumerate((2.0, 5.0)):
        mv.racks_in_service["ra", "sa", p].varValue = n
    out = rounded_values(d, mv)
    assert out[mv.cdu_site_model["sa", "c2"]] == 1 and out[mv.cdu_site_model["sa", "c1"]] == 0
    assert [out[mv.cdus_in_service["sa", "c2", p]] for p in (0, 1)] == [2, 2]
    assert [out[mv.cdu_model_used["sa", "c2", p]] for p in (0, 1)] == [1, 1]
    assert [out[mv.cdus_in_service["sa", "c1", p]] for p in (0, 1)] == [0, 0]


def test_large_model_path_finds_the_same_choice(monkeypatch):
    """The rounded-relaxation start and sub-MIP (forced on) reach the same plan."""
    import importlib

    solve_mod = importlib.import_module("dcplan.planner.solver")
    plain = solve_inputs(_inputs("milp"), EXACT)
    monkeypatch.setattr(solve_mod, "MIP_START_MIN_VARIABLES", 0)
    fast = solve_inputs(_inputs("milp"), EXACT)
    assert _cdus(fast) == _cdus(plain) == (["c2: 2", "c2: 2"], [2.0, 2.0])
    assert fast.objective_usd == pytest.approx(plain.objective_usd, abs=1e-3)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(caps=st.lists(st.integers(20, 200), min_size=2, max_size=3, unique=True),
       prices=st.lists(st.integers(5, 60), min_size=3, max_size=3),
       racks=st.tuples(st.integers(1, 8), st.integers(1, 8)),
       red=st.integers(0, 2))
@pytest.mark.slow
def test_chosen_model_is_the_cheapest_by_brute_force(caps, prices, racks, red):
    """The plan holds the model whose purchases cost least in present value, counted by
    brute force over the models: per period ceil(heat / cap) + red, never fewer than
    before (CDUs are kept), bought as they grow, at 1 / 1.1 per year."""
    opts = tuple(CduData(f"m{i}", float(c), float(prices[i]), 0.0)
                 for i, c in enumerate(caps))
    d = dataclasses.replace(_inputs("milp", demand=tuple(100.0 * n for n in racks),
                                    options=opts), cdu_redundancy=red)
    res = solve_inputs(d, EXACT)
    assert res.ok
    inst = list(res.tables["fleet"].installed_racks)
    assert inst[1] >= racks[1] and inst[0] >= racks[0]

    def pv(o):
        counts, most = [], 0
        for n in inst:
            most = max(most, math.ceil(25.0 * n / o.cdu_capacity_kw - 1e-9) + red)
            counts.append(most)
        buys = [counts[0], counts[1] - counts[0]]
        return sum(b * o.cdu_capex_usd / 1.1 ** p for p, b in enumerate(buys)), counts

    best = min(pv(o)[0] for o in opts)
    by_model, counts = _cdus(res)
    (model,) = {t.split(":")[0] for t in by_model}
    got = next(o for o in opts if o.cdu_id == model)
    assert pv(got)[0] == pytest.approx(best, abs=1e-6)
    assert counts == pv(got)[1]


# --- the plan's tables against 'dcplan cooling' ------------------------------------------


@pytest.fixture(scope="module")
def minimal_milp():
    """The minimal example with ``cdu_choice: milp`` (the linear fabric, 2 % gap)."""
    from dcplan.case import load_case
    from dcplan.planner import solve_case

    case = load_case(REPO / "examples" / "minimal.yaml").with_changes(
        {"network_model": "linear", "solver.gap": 0.02, "cdu_choice": "milp"})
    result = solve_case(case)
    assert result.ok
    return result


@pytest.mark.slow
def test_plan_cdus_equal_dcplan_cooling_for_every_site_and_period(minimal_milp):
    """Done-when of issue 33 item 2: for every site-period with racks, the cooling
    table's CDUs are ``dcplan cooling --fleet ... --cdu MODEL --json``'s, the MILP held
    the same until the site's liquid heat fell (then the CDUs it bought), one model per
    site over the horizon, and the equipment list names that model."""
    res = minimal_milp
    cool, fleet, eq = res.tables["cooling"], res.tables["fleet"], res.tables["equipment"]
    runner = CliRunner()
    asked, checked = {}, 0
    for s, sub in cool.groupby("site", sort=False):
        models = {x for x in sub.cdu_ids if x}
        assert len(models) <= 1, (s, models)
        most = 0
        for r in sub.itertuples():
            mix = fleet_mix(fleet, s, r.period)
            if not mix:   # none before the first racks; after the last, those bought
                assert r.cdus == 0 and r.milp_cdus == most, (s, r.period)
                continue
            assert r.cdu_ids, (s, r.period)   # every rack type of the example is liquid
            key = (s, tuple(sorted(mix.items())), r.cdu_ids)
            if key not in asked:
                fl = ",".join(f"{k}={n}" for k, n in mix.items())
                out = runner.invoke(app, ["cooling", "--site", s, "--fleet", fl, "--cdu",
                                          r.cdu_ids, "--redundancy",
                                          str(res.inputs.cdu_redundancy), "--json"])
                assert out.exit_code == 0, out.output
                asked[key] = json.loads(out.output)
            js = asked[key]
            assert (js["cdu_id"], js["cdu_count"]) == (r.cdu_ids, r.cdus), (s, r.period)
            assert js["cdu_capex_usd"] == pytest.approx(r.cdu_capex_usd)
            most = max(most, js["cdu_count"])
            assert r.milp_cdus_by_model == f"{r.cdu_ids}: {most}", (s, r.period)
            here = (eq.site == s) & (eq.period == r.period) & (eq.item == "cdu")
            assert dict(zip(eq[here].catalog_id, eq[here]["count"], strict=True)) == \
                {r.cdu_ids: r.cdus}
            checked += 1
    assert checked >= 10
    assert cool[cool.cdus > 0].site.nunique() == 2


@pytest.mark.slow
def test_one_note_where_a_snapshot_would_choose_otherwise(minimal_milp):
    """The plan holds one model per site; where the cooling model alone would choose
    another for a period's fleet, one note says so with the USD."""
    notes = [n for n in minimal_milp.notes if n.startswith("CDUs (cdu_choice: milp)")]
    assert len(notes) == 1
    text = " ".join(notes[0].split())
    cool = minimal_milp.tables["cooling"]
    for s in set(cool.site):
        assert (f"{s} in " in text) == (s in text)
    assert "present value" in text and "USD" in text
    # the per_rack_type notes (the MILP priced other CDUs than the tables show) are gone
    assert not [n for n in minimal_milp.notes if "planning scale" in n]


# --- 'dcplan cooling': the fleet and the forced model ------------------------------------


def _run(*args):
    return CliRunner().invoke(app, ["cooling", "--site", "seoul_metro", *args])


@pytest.mark.slow
def test_cooling_fleet_and_forced_cdu():
    """A mixed fleet: GB200 liquid heat 12 x 120 kW x 0.85 = 1,224 kW; forced to the
    600 kW in-row CDU: ceil(1224 / 600) + 1 = 4 units; the single-rack form agrees."""
    out = _run("--fleet", "gb200_nvl72=12,hgx_b200=4", "--cdu", "cdu_inrow_600kw", "--json")
    assert out.exit_code == 0, out.output
    js = json.loads(out.output)
    assert js["racks"] == {"gb200_nvl72": 12, "hgx_b200": 4}
    assert js["liquid_heat_kw"] == pytest.approx(1224.0)
    assert (js["cdu_id"], js["cdu_count"]) == ("cdu_inrow_600kw", 4)
    one = json.loads(_run("--rack", "gb200_nvl72", "--racks", "12", "--cdu",
                          "cdu_inrow_600kw", "--json").output)
    assert (one["cdu_id"], one["cdu_count"]) == ("cdu_inrow_600kw", 4)
    text = _run("--fleet", "gb200_nvl72=12,hgx_b200=4").output
    assert text.startswith("12 x gb200_nvl72 + 4 x hgx_b200 at seoul_metro")


@pytest.mark.parametrize("text, words", [
    ("gb200_nvl72=1.5", ["gb200_nvl72", "whole number", "'1.5'"]),
    ("gb200_nvl72=-2", ["gb200_nvl72", "whole number"]),
    ("gb200_nvl72", ["'gb200_nvl72' is not RACK=COUNT"]),
    ("=3", ["'=3' is not RACK=COUNT"]),
    ("gb200_nvl72=2,gb200_nvl72=3", ["named twice"]),
    ("gb200_nvl72=0", ["no racks"]),
    ("", ["no racks"]),
])
def test_fleet_text_errors_are_named(text, words):
    from dcplan.cli.facility_cmd import parse_fleet
    from dcplan.errors import InputError

    with pytest.raises(InputError) as err:
        parse_fleet(text)
    for w in words:
        assert w in str(err.value), (w, str(err.value))


def test_fleet_text_parses():
    from dcplan.cli.facility_cmd import parse_fleet

    assert parse_fleet(" gb200_nvl72 = 12 , hgx_b200=4,") == {"gb200_nvl72": 12,
                                                               "hgx_b200": 4}


@pytest.mark.parametrize("args, words", [
    (("--fleet", "gb200_nvl72=1.5"), ["--fleet", "gb200_nvl72", "'1.5'"]),
    (("--fleet", "gb200_nvl72=2,nope_rack=3", "--cdu", "nope_cdu"),
     ["unknown rack id 'nope_rack'", "unknown cdu id 'nope_cdu'", "dcx_fdu_5mw"]),
    (("--rack", "gb200_nvl72"), ["give --rack and --racks"]),
    (("--fleet", "gb200_nvl72=2", "--rack", "gb200_nvl72", "--racks", "2"),
     ["either --fleet or --rack"]),
    (("--fleet", "gb200_nvl72=300,hgx_b200=100"), ["rack positions", "fewer racks"]),
])
@pytest.mark.slow
def test_cooling_bad_fleet_or_cdu_is_named(args, words):
    """Exit 1, no traceback, the bad entry named (unknown ids all at once)."""
    out = _run(*args)
    assert out.exit_code == 1, out.output
    assert "Traceback" not in out.output
    for w in words:
        assert w in out.output, (w, out.output)
