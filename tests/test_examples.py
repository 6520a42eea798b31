"""Reference scenarios in examples/: they plan, their key results do not drift, and they
answer their questions; broken scenario files give clear errors.

Expected values live in ``tests/expected/examples.json``; regenerate them (and the
results section of docs/scenarios.md) with::

    python docs/gen_scenarios.py --update-expected

The tests solve each example at TEST_GAP (1 %), not at the 0.1 % of the files and of
the documented results: they check the plans' invariants and the answers the examples
exist for, and compare with the 0.1 % figures only as far as the two gaps allow. NPV:
a plan of relative gap g has cost c and proves the optimum in [c (1 - g), c], so the
test's interval and the expected one must overlap (any HiGHS version). USD per million
tokens moves with the NPV alone where all demand is served (the discounted tokens are
the same), so its ratio to the NPV must equal the expected one. With the HiGHS version
that wrote the file, the plan itself is checked too: racks bought within 3 % + 2 racks,
peak MW within 2 % + 0.1 MW (by site 5 % + 0.25 MW: a near-optimal plan moves load
between sites), the same binding grid limits (the 1 % plans of the examples were within
2 racks, 0.6 % of peak MW and 2.9 % of a site's peak MW of the 0.1 % plans on
2026-12-04). Statuses and unserved flags must match.
"""

from __future__ import annotations

import json
import math
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest
from scripts import load_script

from dcplan.case import load_case
from dcplan.errors import InputError
from dcplan.planner import prepare_inputs
from dcplan.scenario import load_scenario
from dcplan.yamlio import read_yaml, strip_lines

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
FIXTURES = Path(__file__).parent / "fixtures" / "scenarios"
EXPECTED = json.loads((Path(__file__).parent / "expected" / "examples.json").read_text())

gen = load_script(ROOT / "docs" / "gen_scenarios.py", "gen_scenarios")

SAME_SOLVER = EXPECTED.get("highspy") == version("highspy")
#: Relative MIP gap the tests solve the examples at [-] (the files and docs: 0.1 %).
TEST_GAP = 0.01
#: Examples solved at their files' own gap (0.1 %) all the same: at 1 % their plans differ
#: from the recorded 0.1 % plan by more than the plan checks allow, though both costs are
#: proven consistent (2026-12-05: kyber 72 racks against 76; high_demand without Haenam's
#: 2034 grid among its binding limits).
FILE_GAP = {"kyber", "high_demand"}
#: Examples whose plan at 1 % splits its peak between sites differently from the
#: recorded 0.1 % plan, both costs proven consistent; solving them at 0.1 % would take
#: minutes (2026-12-05, third: `disaggregated` puts 22.3 MW in Seoul at 1 % against 20.0
#: MW at 0.1 %, solved in 276 s; sixth: `baseline`, now split between Haenam's 20 MW and
#: Ulsan, puts 6.07 MW at Ulsan at 1 % against 6.58 MW at 0.1 %; seventh: `regional`,
#: the baseline's sites, puts 0.70 MW at Ulsan at 1 % against none at 0.1 %; sixteenth:
#: `cache` puts 2.73 MW at Ulsan at 1 % against 3.39 MW at 0.1 %, Haenam's 20.1 MW the
#: same; eighteenth: `cpo` puts 3.68 MW at Ulsan at 1 % against 2.86 MW at 0.1 %,
#: Haenam 20.0 against 20.9 MW; twenty-third: `carbon_cap` puts 2.75 MW in Seoul at 1 %
#: against 2.46 MW at 0.1 %, Chuncheon's 26.84 MW the same, Haenam 8.35 against 8.16
#: MW). Their fleet size, total peak and binding grid limits are still checked.
SITE_SPLIT_TIES = {"disaggregated", "baseline", "regional", "cache", "cpo", "carbon_cap"}
#: Time limit of the tests' solves [s]: the answers are checked, not the speed
#: (bench/planner_scale.py measures that). The files' 300 s stopped seoul_oversub short
#: of its gap (status feasible) in a suite run at load 5 (2026-12-07, 411 s), where it
#: took 180-260 s at load 1-2; with the elastic floor (docs/planner.md) 197 s in a suite
#: at load 0.7-1.3 and 385 s in one at load 4.7; with the second stage's heuristics at
#: 0.3 (docs/planner.md) 123 s alone at load 4 beside a bench.
TEST_TIME_LIMIT_S = 1200.0
_cache: dict = {}


def solved(name: str):
    """(result, summary) of examples/<name>.yaml at :data:`TEST_GAP`, planned once per
    test session."""
    if name not in _cache:
        changes = {"solver.time_limit_s": TEST_TIME_LIMIT_S}
        if name not in FILE_GAP:
            changes["solver.gap"] = TEST_GAP
        result, summary, _ = gen.run(name, changes)
        _cache[name] = (result, summary)
    return _cache[name]


def proven_interval(npv: float, gap: float, objective: float | None = None
                    ) -> tuple[float, float]:
    """Where a plan of cost ``npv`` [USD] and relative gap ``gap`` [-] proves the optimum
    to be: ``[npv (1 - gap), npv]`` (the gap is ``(plan - bound) / plan``) [USD].

    With ``objective`` (an elastic plan's objective, which adds the unserved penalty to
    the NPV [USD]) the gap is of that objective: ``[npv - gap x objective, npv]``."""
    return npv - gap * (npv if objective is None else objective), npv


# --- the demand forecast and its copies --------------------------------------------------


def _forecast():
    return strip_lines(read_yaml(EXAMPLES / "forecasts" / "korea_provider.yaml"))


def test_forecast_follows_its_anchors():
    f = _forecast()
    k, y0, y1 = f["curve_k"], f["first_year"], f["last_year"]
    for case, workloads in f["anchors"].items():
        for w, (d0, d1) in workloads.items():
            row = f["cases"][case][w]
            assert sorted(row) == list(range(y0, y1 + 1))
            for y, value in row.items():
                x = (y - y0) / (y1 - y0)
                s = (1 - math.exp(-k * x)) / (1 - math.exp(-k))
                assert value == pytest.approx(d0 * (d1 / d0) ** s, rel=5e-3), (case, w, y)


def test_forecast_cases_are_ordered():
    cases = _forecast()["cases"]
    for w in cases["base"]:
        for y in cases["base"][w]:
            assert cases["low"][w][y] <= cases["base"][w][y] <= cases["high"][w][y]


@pytest.mark.parametrize("name", gen.EXAMPLES)
def test_scenario_demand_comes_from_the_forecast(name):
    scn = load_scenario(EXAMPLES / f"{name}.yaml")
    case = {"low_demand": "low", "high_demand": "high"}.get(name, "base")
    table = {w: {int(y): v for y, v in row.items()} for w, row in scn.demand.table.items()}
    assert table == _forecast()["cases"][case]
    assert scn.demand.unit == _forecast()["unit"]


def test_every_example_is_listed():
    # minimal: the quick start; stochastic: tests/test_stochastic.py; requests (minimal
    # with demand in characters and requests): tests/test_demand_units.py; time_to_power
    # and time_to_power_grid_only (one campus, its own demand): tests/test_onsite_gen.py;
    # time_to_power_flexible: tests/test_flexgrid.py; baseline_exact and kyber_exact (the
    # exact facility, minutes to plan): tests/test_two_stage.py and
    # bench/planner_scale.py --exact; campus (an air-cooled hall, its own demand):
    # tests/test_campus.py
    shipped = {p.stem for p in EXAMPLES.glob("*.yaml")} - {
        "minimal", "stochastic", "requests", "time_to_power", "time_to_power_grid_only",
        "time_to_power_flexible", "baseline_exact", "kyber_exact", "campus"}
    assert shipped == set(gen.EXAMPLES)
    assert set(EXPECTED["examples"]) == set(gen.EXAMPLES)


def test_docs_results_agree_with_expected_figures():
    # docs/scenarios.md's generated section, rebuilt from tests/expected/examples.json and
    # the doc's own solve times and feature effects (what --only keeps), is the doc as
    # committed: neither was edited by hand nor regenerated without the other.
    doc = gen.DOC.read_text(encoding="utf-8")
    secs, effects_md = gen.kept_from_doc(doc)
    assert set(secs) == set(gen.EXAMPLES)
    assert effects_md.startswith(gen.EFFECTS_HEAD)
    kept = {n: (None, EXPECTED["examples"][n], secs[n]) for n in gen.EXAMPLES}
    assert gen.splice(doc, gen.render(kept, {}, effects_md)) == doc


# --- every example plans, and its key results match -------------------------------------


def _close(a, b, rel, abs_=0.0):
    return a == pytest.approx(b, rel=rel, abs=abs_)


@pytest.mark.parametrize("name", gen.EXAMPLES)
@pytest.mark.slow
def test_example_plans_and_matches_expected(name):
    result, got = solved(name)
    exp = EXPECTED["examples"][name]
    assert result.status.has_solution, result.message
    assert got["status"] == exp["status"] == "optimal"
    assert got["gap"] is not None and got["gap"] <= TEST_GAP + 1e-9
    assert got["unserved"] == exp["unserved"] == (name in gen.EXPECT_UNSERVED)
    lo_got, hi_got = proven_interval(got["npv_usd"], got["gap"],
                                     got.get("objective_usd") if got["unserved"] else None)
    lo_exp, hi_exp = proven_interval(exp["npv_usd"], exp["gap"],
                                     exp.get("objective_usd") if exp["unserved"] else None)
    tol = 1e-9 * hi_exp
    assert lo_got <= hi_exp + tol and lo_exp <= hi_got + tol, (
        f"the optimum cannot lie in both [{lo_got:,.0f}, {hi_got:,.0f}] (this solve) and "
        f"[{lo_exp:,.0f}, {hi_exp:,.0f}] USD (tests/expected/examples.json)")
    if not got["unserved"]:
        assert (got["usd_per_million_tokens"] / got["npv_usd"]
                == pytest.approx(exp["usd_per_million_tokens"] / exp["npv_usd"], rel=1e-9))
    if not SAME_SOLVER:
        return
    assert _close(got["racks_bought"], exp["racks_bought"], 0.03, 2)
    assert _close(got["peak_facility_mw"], exp["peak_facility_mw"], 0.02, 0.1)
    sites = set() if name in SITE_SPLIT_TIES else (
        set(got["peak_mw_by_site"]) | set(exp["peak_mw_by_site"]))
    for s in sites:
        assert _close(got["peak_mw_by_site"].get(s, 0.0), exp["peak_mw_by_site"].get(s, 0.0),
                      0.05, 0.25), s

    def grid(b, relaxed=False):
        return {(x["site"], x["period"]) for x in b if x["limit"] == "grid"
                and (not relaxed or x["shadow_price_relaxed"] > 0)}

    # the same grid limits bind, up to those whose shadow price is positive only with
    # the integers fixed: such a limit binds through the rack count of that one plan,
    # and another plan within the gap may not touch it (2026-12-06, eleventh:
    # disaggregated's Seoul 2033 grid, 26,556 USD per MW with the integers fixed and 0
    # relaxed at 0.1 %, does not bind at 1 %). Every limit this solve binds is one the
    # recorded plan binds, every one the recorded plan binds in the relaxation binds
    # here, and a plan that binds a grid limit is matched by one that does.
    assert grid(got["binding"]) <= grid(exp["binding"])
    assert grid(exp["binding"], relaxed=True) <= grid(got["binding"])
    assert bool(grid(got["binding"])) == bool(grid(exp["binding"]))


@pytest.mark.parametrize("name", gen.EXPECT_UNSERVED)
@pytest.mark.slow
def test_demand_goes_unserved_only_where_a_limit_binds(name):
    """A shortfall is never reported without a limit reached in its period, or in a
    later period while the racks bought for it are still in service, which the message
    then names (or a plain statement that the plan chose it): the examples plan with
    ``unserved_policy: least_first``, so each period short of demand has a row in
    ``binding`` or a later one within the longest rack life."""
    from dcplan.planner.inputs import label_offset_years

    result, _ = solved(name)
    assert result.unserved and result.inputs.unserved_policy == "least_first"
    d = result.inputs
    short = set(result.tables["unserved"].period.astype(str))
    limited = set(result.tables["binding"].period.astype(str))
    assert short
    life = max(rk.lifetime_years for rk in d.racks.values())
    for per in sorted(short - limited):
        at = label_offset_years(d.periods, per)
        later = [x for x in limited
                 if at < label_offset_years(d.periods, x) < at + life]
        assert later, (per, sorted(limited))
        assert f"{per}: no limit of its own binds, but racks bought then would still be in " \
               f"service in {min(later)}" in result.message, result.message
    assert "least shortfall the limits allow" in result.message
    assert "by choice" not in result.message
    if name == "carbon_cap":
        cap = result.tables["binding"].query("limit == 'carbon_cap'")
        assert set(cap.period.astype(str)) == {"2035"} == short


def _start_year(label) -> float:
    """Start of a period label ('2027', '2027q3', 2027) in years, by hand."""
    text = str(label).lower()
    if "q" in text:
        y, q = text.split("q")
        return int(y) + (int(q) - 1) / 4
    return float(int(text))


@pytest.mark.parametrize("name", gen.EXAMPLES)
@pytest.mark.slow
def test_service_years_recomputed_from_the_fleet_table(name):
    """A rack installed in Y with life L serves Y .. Y+L-1: recount every example's fleet.

    Only the fleet table, the scenario's existing_fleet and the catalog lifetimes are
    used (not the planner's own lifetime rule).
    """
    result, _ = solved(name)
    scn, catalog = result.case.scenario, result.case.catalog
    fleet = result.tables["fleet"]
    periods = [p.label for p in scn.period_list()]
    assert len(fleet)
    for (site, rack), sub in fleet.groupby(["site", "rack"]):
        life = catalog.get("racks", rack).lifetime_years
        new = {str(r.period): r.new_racks for r in sub.itertuples()}
        got = {str(r.period): r.installed_racks for r in sub.itertuples()}
        for label in periods:
            t = _start_year(label)
            want = sum(ex.count for ex in scn.existing_fleet
                       if ex.site == site and ex.rack == rack
                       and _start_year(ex.installed) <= t < _start_year(ex.installed) + life)
            want += sum(n for q, n in new.items()
                        if _start_year(q) <= t < _start_year(q) + life)
            assert got.get(label, 0.0) == pytest.approx(want), (site, rack, label)


# --- the answers the scenarios exist for -------------------------------------------------


@pytest.mark.parametrize("name", ("minimal", *gen.EXAMPLES))
@pytest.mark.slow
def test_plan_counts_equal_the_exact_sizing_of_its_fleet(name):
    """Switches and links of the plan are the exact sizing of its own fleet in every site
    and period (the MILP's integer fabric; the graph of the network model on the other
    side); the plan's CDUs are the cooling model's (tests/test_cdu_answer.py)."""
    from dcplan.planner.sizing import COUNTS, sizing_table

    result, _ = solved(name)
    if result.case.scenario.network_model != "integer":
        pytest.skip(f"{name} plans with network_model: linear (see baseline.yaml)")
    sz, equipment, _notes = sizing_table(result.case, result.inputs, result.tables)
    fleet = result.tables["fleet"]
    busy = {(r.site, r.period) for r in fleet.itertuples() if r.installed_racks > 0}
    assert busy and {(r.site, r.period) for r in sz.itertuples()} == busy
    counts = sz[sz.quantity.isin(COUNTS)]
    assert len(counts) == len(COUNTS) * len(busy)
    off = counts[counts["diff"] != 0]
    assert off.empty, off.to_string()
    # the bill of materials lists the cooling table's CDUs (the cooling model's for the
    # fleet: tests/test_cdu_answer.py)
    cool = result.tables["cooling"].set_index(["site", "period"]).cdus
    cdus = equipment[equipment.item == "cdu"].groupby(["site", "period"])["count"].sum()
    for key, n in cdus.items():
        assert n == cool[key]


@pytest.mark.parametrize("name", ("minimal", *gen.EXAMPLES))
@pytest.mark.slow
def test_plan_power_stays_within_its_grid_and_building(name):
    """Every site-period of the power table (the plan's own fleet, three-tier fabrics at
    their exact counts): facility peak plus UPS recharge within the connected grid, and
    the facility peak within the built capacity."""
    result, _ = solved(name)
    pw = result.tables["power"]
    tol = 1e-6 * pw.grid_kw.clip(lower=1.0)
    over_grid = pw[pw.facility_kw_peak + pw.recharge_kw > pw.grid_kw + tol]
    assert over_grid.empty, over_grid.to_string()
    over_built = pw[pw.facility_kw_peak > pw.built_kw + tol]
    assert over_built.empty, over_built.to_string()


@pytest.mark.parametrize("name", ("minimal", "requests", *gen.EXAMPLES))
@pytest.mark.slow
def test_written_tables_explain_the_facility_peak(name, tmp_path):
    """Every shipped example but the stochastic one (tests/test_stochastic.py): from
    the CSV files the plan writes, peak facility = peak IT (racks + network) x PUE at
    the peak hour per site and period and for the headline, within 0.5 %
    (tests/test_peak_power.py, :func:`check_written_power`)."""
    from test_peak_power import check_written_power

    result, _ = solved(name)
    result.write_csvs(tmp_path)
    check_written_power(tmp_path)
    assert result.power_basis.startswith(
        "capped" if result.inputs.capped_peak else
        "nameplate" if result.inputs.nameplate_peak else "operating point")


@pytest.mark.parametrize("name", gen.EXAMPLES)
@pytest.mark.slow
def test_a_linear_networks_horizon_total_is_within_16_percent_of_the_exact_sizing(name):
    """network_model linear: the plan's network kW and capex, summed over sites and
    periods, are within 16 % of the exact sizing of its own fleet (docs/planner.md,
    "Linear network": 0-6 % on the examples until 2026-12-05, when high_demand's 1 % plan
    came out 8.2 % below in capex, 1.70 against 1.85 G USD; after that day's KV
    hand-over refit the linear network kW came out 18 % above the exact for
    disaggregated's 1 % plan (21.2 against 18.0 MW summed) and 11 % above for
    high_demand's (24.5 against 22.1); one figure at the planning scale put them 6-22 %
    above)."""
    from dcplan.planner.sizing import sizing_table

    result, _ = solved(name)
    if result.case.scenario.network_model != "linear":
        pytest.skip(f"{name} plans with the integer fabric (exact by the test above)")
    sz, _equipment, _notes = sizing_table(result.case, result.inputs, result.tables)
    for q in ("network_kw", "network_capex_usd"):
        rows = sz[sz.quantity == q]
        assert len(rows) and rows.plan.sum() > 0
        assert rows.exact.sum() == pytest.approx(rows.plan.sum(), rel=0.16), q


@pytest.mark.slow
def test_tiered_network_on_the_minimal_example_is_within_a_few_percent_of_its_sizing():
    """network_model tiered from a shipped example: every site-period's network kW and
    capex within 9 % of the exact sizing of the plan's own fleet where the site holds 16
    racks or more, and each linear row of the network table priced at the tier of its
    racks. The tier's figure is one count's (here GB200's tier of 1-144 racks); the last
    leaf's fill moves the exact network by a few per cent (site-periods of 16 racks or
    more within 5.7 % on every calibration so far). Below 16 racks a handful share a
    leaf, and the tier's per-rack share is no estimate of that site's own network: 8.6 %
    off on 2026-12-04 (Seoul's 4 GB200 racks of 2032), 16.7 % after the sixth refit (9
    racks), 63 % after the seventh (2 racks: 9.4 kW tiered against 3.5 kW exact). What a
    plan pays for it is bounded instead: such a site-period's difference is at most 1 %
    of the period's network over all sites (those three: 0.02-0.06 %)."""
    from dcplan.planner import solve_case

    case = load_case(EXAMPLES / "minimal.yaml").with_changes({"network_model": "tiered"})
    result = solve_case(case, explain=False)
    assert result.status.has_solution and result.gap is not None and result.gap <= 1e-3
    sz = result.tables["sizing"]
    fleet = result.tables["fleet"]
    racks = fleet.groupby([fleet.site, fleet.period.astype(str)]).installed_racks.sum()
    for q in ("network_kw", "network_capex_usd"):
        rows = sz[sz.quantity == q]
        few = np.array([racks.get((r.site, str(r.period)), 0) < 16
                        for r in rows.itertuples()])
        period_total = rows.groupby(rows.period.astype(str)).exact.transform("sum")
        ok = np.where(few, rows["diff"].abs() <= 0.01 * period_total,
                      rows.diff_frac.abs() <= 0.09)
        assert len(rows) and (~few).any() and ok.all(), rows
    net = result.tables["network"]
    d = result.inputs
    for row in net.itertuples():
        tier = d.rack_site[row.rack, row.site].network_tier(row.racks)
        assert tier[0] <= row.racks <= tier[1]
        assert row.network_capex_usd == pytest.approx(row.racks * tier[3])


@pytest.mark.slow
def test_seoul_only_grid_binds_with_positive_shadow_price():
    result, s = solved("seoul_only")
    grid = [b for b in s["binding"] if b["limit"] == "grid" and b["site"] == "seoul_metro"]
    assert grid, s["binding"]
    # binding at the 45 MW step, with a positive price both with the integers fixed and
    # in the LP relaxation
    assert any((b["shadow_price"] or 0) > 0 for b in grid)
    assert all((b["shadow_price_relaxed"] or 0) > 0 for b in grid)
    power = result.tables["power"]
    last = power[power.period.astype(str) == "2035"]
    # the facility peak plus the UPS battery recharge its 2N plant must carry fill 45 MW:
    # to 4.5 kW (1e-4), far less than one rack draws; a plan within its gap may leave a
    # sliver (0.25 kW measured on the calibration of 2026-12-05, third: 2035's price is 0
    # with the integers fixed, positive in the relaxation), never more than the step
    used = float(last.facility_kw_peak.iloc[0]) + float(last.recharge_kw.iloc[0])
    assert used <= 45000.0 * (1 + 1e-9)
    assert used == pytest.approx(45000.0, rel=1e-4)
    assert float(last.recharge_kw.iloc[0]) > 0
    assert s["unserved"] and s["unserved_frac_last"] > 0.01
    # the connection lead time delays Seoul: the 30 MW step of 2028 cannot be had before
    # the 48 + 6 months after a 2026 request, so the hall stays at its committed 9.9 MW
    # until 2030
    grid = result.tables["grid"].set_index("period")
    assert grid.connectable_kw["2028"] == pytest.approx(30000.0)
    assert grid.connected_kw["2029"] == pytest.approx(9900.0)
    assert grid.connected_kw["2031"] > 9900.0
    assert {g["energised"] for g in s["grid"]} <= {"2030", "2031", "2032", "2033", "2034",
                                                   "2035"}


@pytest.mark.slow
def test_regional_moves_load_out_of_seoul():
    _, regional = solved("regional")
    _, seoul_only = solved("seoul_only")
    assert not regional["unserved"]
    seoul = regional["peak_mw_by_site"]["seoul_metro"]
    outside = sum(v for k, v in regional["peak_mw_by_site"].items() if k != "seoul_metro")
    assert seoul <= 9.9 + 1e-6
    assert outside > 2 * seoul
    assert seoul < seoul_only["peak_mw_by_site"]["seoul_metro"]
    # growth goes outside Seoul: in 2035 Seoul holds only NVL72 racks of at most its 150 kW
    # per rack (GB200/GB300), under a tenth of the fleet
    fleet = regional["final_fleet"]
    in_seoul = {k: v for k, v in fleet.items() if k.split("/")[0] == "seoul_metro"}
    assert all(k.split("/")[1] in ("gb200_nvl72", "gb300_nvl72") for k in in_seoul)
    assert sum(in_seoul.values()) < 0.1 * sum(fleet.values())


@pytest.mark.slow
def test_scenario_directions():
    """Each direction holds beyond both plans' gaps: the cheaper plan's cost is below
    the dearer plan's proven bound (a difference inside the gaps would be no answer)."""
    npv = {n: proven_interval(solved(n)[1]["npv_usd"], solved(n)[1]["gap"]) for n in
           ("baseline", "kyber", "cache", "low_demand", "high_demand")}

    def cheaper(a, b):
        return npv[a][1] < npv[b][0]

    assert cheaper("low_demand", "baseline") and cheaper("baseline", "high_demand")
    assert cheaper("cache", "baseline")
    assert cheaper("kyber", "baseline")
    cpo, base = solved("cpo")[1], solved("baseline")[1]
    assert cpo["peak_facility_mw"] < base["peak_facility_mw"]


# --- bad scenario files ------------------------------------------------------------------


def _problems(fixture: str):
    with pytest.raises(InputError) as info:
        prepare_inputs(load_case(FIXTURES / fixture))
    return info.value.problems, str(info.value)


@pytest.mark.slow
def test_fixture_base_is_valid():
    prepare_inputs(load_case(FIXTURES / "_base.yaml"))


@pytest.mark.parametrize("fixture, field, entry, words", [
    ("unknown_site.yaml", "sites", None, ["unknown site id 'seoul_metr'", "seoul_metro"]),
    ("period_outside.yaml", "demand.table.chat", None, ["2031", "outside the horizon"]),
    ("negative_demand.yaml", "demand.table.chat.2027", "chat", [">= 0"]),
    ("override_unknown_field.yaml", "overrides.0", "gb200_nvl72", ["capex_eur", "capex_usd"]),
    ("override_unknown_site_field.yaml", "overrides.0", "seoul_metro", ["grid_kw", "grid_mw"]),
    ("no_servable_rack.yaml", "racks", "chat",
     ["no allowed rack and site can serve it", "cannot host rubin_ultra_nvl576", "'sites'"]),
])
@pytest.mark.slow
def test_bad_scenario_files(fixture, field, entry, words):
    problems, text = _problems(fixture)
    assert len(problems) == 1, text
    p = problems[0]
    assert p.file.endswith(f"fixtures/scenarios/{fixture}")
    assert p.field == field
    assert p.entry == entry
    assert p.line is not None
    for w in words:
        assert w in p.message
    assert fixture in text and field in text
