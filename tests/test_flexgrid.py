"""Flexible (curtailable) grid connections, checked by hand on tiny instances.

See :mod:`dcplan.planner.flexgrid`: flexible MW count in the connected capacity except
in the representative curtailment event, when they are cut by the site file's depth and
the site must still carry its load (a battery, generation, flexible work).
"""

from __future__ import annotations

import dataclasses

import pytest
from test_planner_helpers import make_inputs, rack, rack_site, site, workload
from test_storage import BAT, SHAPE

from dcplan.planner import solve_inputs
from dcplan.planner.inputs import FlexData, GridData
from dcplan.scenario import SolverOptions


def flex(depth=0.25, arrival=(0,), cost=1.0, hours=(23,), max_kw=100.0):
    """A flexible part: energised from ``arrival``, ``cost`` USD/kW, cut by ``depth`` in
    the event's ``hours`` of the day, 200 h a year."""
    return FlexData(arrival=arrival, cost_usd_per_kw=cost, max_kw=max_kw, depth=depth,
                    hours_per_year=200.0, event_hours=hours)


def peaky(fx, storage=False, bat_capex=0.1):
    """:func:`test_storage.peaky` (9.5 kW for 23 hours, 21.5 kW in hour 23) at a site
    whose connection is a decision: nothing committed, a firm request never energised
    within the one period, the flexible part ``fx``; energy free (no loss cost)."""
    g = GridData(committed_kw=(0.0,), arrival=(1,), arrival_assessed=(1,),
                 cost_usd_per_kw=1000.0, flexible=fx)
    s = dataclasses.replace(site(n=1, grid_kw=100.0, price=0.0), connection=g)
    w = dataclasses.replace(workload(demand=(100.0,), peak=max(SHAPE)), profile=SHAPE)
    bat = dataclasses.replace(BAT, capex_usd_per_kwh=bat_capex, capex_usd_per_kw=bat_capex)
    return make_inputs(n=1, racks=[rack(kw_idle=0.0, kw_max=10.0)], workloads=[w],
                       sites=[s], rack_sites={("ra", "sa"): rack_site()},
                       storage={"sa": (bat,)} if storage else {})


def _solve(d):
    return solve_inputs(d, SolverOptions(time_limit_s=60, gap=1e-9), explain=False)


def test_without_storage_the_event_derates_the_flexible_part():
    # 21.5 kW in the event hour (23) must fit in 0.75 x flexible: 28.67 kW requested
    res = _solve(peaky(flex()))
    assert not res.unserved
    grid = res.tables["grid"].iloc[0]
    assert grid.flexible_kw == pytest.approx(21.5 / 0.75, rel=1e-6)
    assert grid.connected_kw == pytest.approx(21.5 / 0.75, rel=1e-6)
    assert grid.curtailed_kw == pytest.approx(0.25 * 21.5 / 0.75, rel=1e-6)
    assert grid.curtailment_hours == pytest.approx(200.0)
    costs = res.tables["costs"].set_index("category").cost_usd
    assert costs["grid_connection"] == pytest.approx(21.5 / 0.75, rel=1e-6)


def test_event_outside_the_peak_costs_nothing():
    # an event in hour 3 (9.5 kW): the 21.5 kW peak sets the request, 0.75 x 21.5 > 9.5
    res = _solve(peaky(flex(hours=(3,))))
    assert res.tables["grid"].iloc[0].flexible_kw == pytest.approx(21.5, rel=1e-6)


def test_a_battery_absorbs_the_curtailment_event():
    # the battery (0.1 USD per kWh and per kW) discharges d = 21.5 - 0.75 f in hour 23
    # and recharges d / 0.85 over the other 23 hours within f - 9.5 kW each:
    # f - 9.5 = (21.5 - 0.75 f) / (0.85 x 23)  ->  f = 207.225 / 20.3
    res = _solve(peaky(flex(), storage=True))
    assert not res.unserved
    f = (9.5 * 0.85 * 23 + 21.5) / (0.85 * 23 + 0.75)
    assert f == pytest.approx(207.225 / 20.3)
    grid = res.tables["grid"].iloc[0]
    assert grid.flexible_kw == pytest.approx(f, rel=1e-6)
    hourly = res.tables["dispatch"]
    dis = list(hourly.battery_discharge_kw)
    assert dis[23] == pytest.approx(21.5 - 0.75 * f, rel=1e-6)
    # in the event the grid carries at most the flexible part less its depth
    assert 21.5 - dis[23] + hourly.battery_charge_kw.iloc[23] <= 0.75 * f + 1e-6


def with_batch(flexible, depth=0.25):
    """:func:`peaky`'s site and ``wa`` (no battery) and ``wb``: 50 tokens/s arriving flat,
    flexible (24-hour deadline) or not."""
    d = peaky(flex(depth=depth))
    wb = dataclasses.replace(workload(id="wb", demand=(50.0,), peak=1.0), profile=(1.0,) * 24,
                             flexible=flexible, deadline_hours=24.0)
    return make_inputs(n=1, racks=[rack(kw_idle=0.0, kw_max=10.0)],
                       workloads=[d.workloads["wa"], wb], sites=list(d.sites.values()),
                       rack_sites={("ra", "sa"): rack_site()})


def test_a_flexible_workload_absorbs_the_curtailment_event():
    # wb served as it arrives adds 5 kW in every hour: 26.5 kW in hour 23, the event
    # needs 26.5 / 0.75 = 35.33 kW flexible (26.5 without the event)
    fixed = _solve(with_batch(False))
    assert fixed.tables["grid"].iloc[0].flexible_kw == pytest.approx(26.5 / 0.75, rel=1e-6)
    assert _solve(with_batch(False, depth=0.0)).tables["grid"].iloc[0].flexible_kw == \
        pytest.approx(26.5, rel=1e-6)
    # flexible, wb fills wa's valley (hours 0-22, at most 9.5 + 5 x 1.0625 = 14.8 kW) and
    # leaves hour 23 to wa: 21.5 / 0.75 = 28.67 kW, the batch work deferred out of the event
    res = _solve(with_batch(True))
    assert not res.unserved
    assert res.tables["grid"].iloc[0].flexible_kw == pytest.approx(21.5 / 0.75, rel=1e-6)
    sch = res.tables["schedules"].set_index(["workload", "schedule"]).share_frac
    assert sch["wb", "valley"] == pytest.approx(1.0)
    valley = next(x for x in res.inputs.schedules("wb", 0) if x.name == "valley")
    assert valley.values[23] == pytest.approx(0.0, abs=1e-9)
    assert max(9.5 + 5.0 * v for v in valley.values[:23]) <= 21.5 * 0.75
    # the event hour's 50 tokens/s of wb all wait: 50 x 3600 s in each of the 200 event
    # hours a year; served as it arrives (or with no event) nothing is deferred
    assert res.tables["grid"].iloc[0].deferred_tokens == pytest.approx(50.0 * 3600 * 200,
                                                                       rel=1e-6)
    assert fixed.tables["grid"].iloc[0].deferred_tokens == pytest.approx(0.0, abs=1e-6)


# --- bad input ---------------------------------------------------------------------------

FLEX_BLOCK = """  flexible:
    lead_time_months: 12
    cost_usd_per_mw: 200000
    curtailment_hours_per_year: {hours}
    curtailment_depth: {depth}
    max_mw: 20
"""


@pytest.mark.parametrize(("hours", "depth", "field", "words"), [
    (9000, 0.25, "grid_connection.flexible.curtailment_hours_per_year", ["8760", "9000"]),
    (200, 1.5, "grid_connection.flexible.curtailment_depth", ["1", "1.5"]),
    (200, -0.1, "grid_connection.flexible.curtailment_depth", ["0", "-0.1"]),
])
def test_bad_curtailment_allowance_names_file_entry_and_field(tmp_path, hours, depth, field,
                                                             words):
    from pathlib import Path

    from dcplan.errors import InputError
    from dcplan.sites import load_sites

    src = (Path(__file__).parents[1] / "sites" / "gangwon_chuncheon.yaml").read_text()
    anchor = "  assessment_months: 6\n"
    assert anchor in src
    path = tmp_path / "flex_site.yaml"
    path.write_text(src.replace(anchor, anchor + FLEX_BLOCK.format(hours=hours, depth=depth),
                                1))
    with pytest.raises(InputError) as info:
        load_sites(files=[path])
    (p,) = info.value.problems
    assert p.file.endswith("flex_site.yaml")
    assert (p.entry, p.field) == ("gangwon_chuncheon", field)
    assert p.line is not None
    for w in words:
        assert w in p.message, p.message


def test_a_good_flexible_block_loads_and_its_event_wraps_past_midnight(tmp_path):
    from pathlib import Path

    from dcplan.sites import load_sites

    src = (Path(__file__).parents[1] / "sites" / "gangwon_chuncheon.yaml").read_text()
    anchor = "  assessment_months: 6\n"
    block = FLEX_BLOCK.format(hours=200, depth=0.25) + "    event_start_hour: 22\n"
    path = tmp_path / "flex_site.yaml"
    path.write_text(src.replace(anchor, anchor + block, 1))
    (site_,) = load_sites(files=[path]).values()
    fx = site_.grid_connection.flexible
    assert fx.event_hours_of_day() == (22, 23, 0, 1)
    assert (fx.curtailment_hours_per_year, fx.curtailment_depth) == (200, 0.25)


# --- properties ---------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def three_years(first_flex, depth=0.25, cost=50.0, hour=23, offered=True,
                demand=(100.0,) * 3):
    """2026-2028, ``wa`` ``demand`` tokens/s (100 each year) with :data:`SHAPE` (9.5 kW for
    23 hours, 21.5 kW in hour 23: rack ``ra`` 0 kW idle, 10 kW serving); ``sa``'s firm
    requests arrive two periods later (a 2026 request serves from 2028) at 50 USD/kW, up to
    100 kW; the flexible part (if ``offered``) from period ``first_flex`` on (requests made
    then or before), ``cost`` USD/kW, up to 100 kW, cut by ``depth`` in hour
    ``hour``."""
    fx = FlexData(arrival=tuple(max(q, first_flex) for q in range(3)), cost_usd_per_kw=cost,
                  max_kw=100.0, depth=depth, hours_per_year=200.0, event_hours=(hour,))
    g = GridData(committed_kw=(0.0,) * 3, arrival=(2, 3, 3), arrival_assessed=(3, 3, 3),
                 cost_usd_per_kw=50.0, flexible=fx if offered else None)
    s = dataclasses.replace(site(n=3, grid_kw=100.0, price=0.1), connection=g)
    w = dataclasses.replace(workload(demand=demand, peak=max(SHAPE)), profile=SHAPE)
    return make_inputs(n=3, racks=[rack(kw_idle=0.0, kw_max=10.0)], workloads=[w],
                       sites=[s], rack_sites={("ra", "sa"): rack_site()})


def _first(res) -> int:
    from dcplan.planner.plan_result import first_tokens

    first = first_tokens(res.tables)
    return int(first["sa"]) if "sa" in first else 9999


def test_a_flexible_connection_serves_before_the_firm_one():
    # firm: 2028 at the earliest; flexible from 2027: 2027's 21.5 kW peak hour needs
    # 21.5 / 0.75 = 28.67 kW flexible (the event at 23:00)
    assert _first(_solve(three_years(1, offered=False))) == 2028
    res = _solve(three_years(1))
    assert _first(res) == 2027
    grid = res.tables["grid"].set_index("period")
    assert grid.loc["2027", "flexible_kw"] == pytest.approx(21.5 / 0.75, rel=1e-6)


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(early=st.integers(0, 3), later=st.integers(0, 3), depth=st.floats(0.0, 1.0),
       hour=st.sampled_from([3, 23]), cost=st.floats(1.0, 500.0))
def test_an_earlier_flexible_connection_never_delays_the_first_token(early, later, depth,
                                                                     hour, cost):
    early, later = min(early, later), max(early, later)
    a = _solve(three_years(early, depth=depth, cost=cost, hour=hour))
    b = _solve(three_years(later, depth=depth, cost=cost, hour=hour))
    assert _first(a) <= _first(b)


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=st.integers(0, 3), depth=st.floats(0.0, 1.0),
       hour=st.sampled_from([3, 23]), cost=st.floats(1.0, 500.0))
def test_offering_a_flexible_connection_never_makes_a_plan_dearer(first, depth, hour, cost):
    # the demand of 2026-2027 cannot be served by the firm grid alone (2028 at the
    # earliest): compare the plans that serve 2028 only, demand from 2028
    def inputs(offered):
        return three_years(first, depth=depth, cost=cost, hour=hour, offered=offered,
                           demand=(0.0, 0.0, 100.0))
    without, offered = _solve(inputs(False)), _solve(inputs(True))
    assert not without.unserved and not offered.unserved
    assert offered.objective_usd <= without.objective_usd * (1 + 1e-7) + 1e-6


@pytest.mark.slow
def test_bad_curtailment_from_the_cli_exits_1_without_a_traceback(tmp_path):
    import shutil
    from pathlib import Path

    from typer.testing import CliRunner

    from dcplan.cli import app

    sites = tmp_path / "sites"
    shutil.copytree(Path(__file__).parents[1] / "sites", sites)
    path = sites / "gangwon_chuncheon.yaml"
    anchor = "  assessment_months: 6\n"
    path.write_text(path.read_text().replace(
        anchor, anchor + FLEX_BLOCK.format(hours=9000, depth=0.25), 1))
    res = CliRunner().invoke(app, ["--sites-dir", str(sites), "catalog", "list", "sites"])
    assert res.exit_code == 1
    assert "Traceback" not in res.output
    for w in ("gangwon_chuncheon.yaml", "gangwon_chuncheon",
              "grid_connection.flexible.curtailment_hours_per_year", "8760"):
        assert w in res.output, res.output


@pytest.mark.slow
def test_time_to_power_flexible_example_serves_in_2027_and_holds_through_the_events(
        tmp_path):
    from pathlib import Path

    import dcplan
    from dcplan.case import load_case
    from dcplan.planner import solve_case

    ex = Path(__file__).resolve().parents[1] / "examples"
    res = solve_case(load_case(ex / "time_to_power_flexible.yaml"), size=False)
    summary = res.summary()
    # the firm grid arrives in 2029; a flexible request made in 2026 serves from 2027
    assert summary["first_tokens"] == {"gangwon_chuncheon": "2027"}
    grid = res.tables["grid"].set_index("period")
    assert grid.loc["2026", "flexible_kw"] == 0.0
    assert grid.loc["2027", "flexible_kw"] > 0
    assert {r["period"] for r in summary["grid_connections"]} == set(grid.index)
    # the event (17:00-21:00, 25 % of the flexible MW cut) holds in every representative
    # day, recomputed from the dispatch: load as the grid rows count it, plus charge,
    # less discharge, within the connection less the cut (no generation offered)
    hourly = res.tables["dispatch"]
    event = hourly[hourly.hour.str[-2:].astype(int).isin([17, 18, 19, 20])]
    assert len(event) == 6 * 2 * 4  # periods x days x hours
    slack = {}
    for r in event.itertuples():
        g = grid.loc[r.period]
        limit = g.connected_kw - 0.25 * g.flexible_kw
        load = r.facility_kw + r.battery_charge_kw - r.battery_discharge_kw
        assert load <= limit + 1e-3
        slack[r.period] = min(slack.get(r.period, limit), limit - load)
    # before the firm grid (2027-2028) the event is what sizes the flexible request
    assert slack["2027"] == pytest.approx(0.0, abs=1e-2)
    assert slack["2028"] == pytest.approx(0.0, abs=1e-2)
    # a saved plan keeps the flexible columns and its inputs' flexible part
    back = dcplan.load_plan(dcplan.api.Plan(res).save(tmp_path / "f.plan"))
    assert list(back.tables["grid"].columns) == list(res.tables["grid"].columns)
    assert back.tables["grid"].flexible_kw.tolist() == res.tables["grid"].flexible_kw.tolist()
    assert back.inputs.sites["gangwon_chuncheon"].connection.flexible.event_hours == (
        17, 18, 19, 20)
    # the tables' costs are the solver's objective (flexible requests included)
    assert res.tables["costs"].cost_usd_discounted.sum() == pytest.approx(
        res.objective_usd, rel=1e-6)


def test_flexible_requests_are_first_stage_decisions_of_a_stochastic_plan():
    from dcplan.planner import build_model
    from dcplan.planner.stochastic import _first_stage_vars

    _prob, mv = build_model(three_years(1))
    first = _first_stage_vars(mv, 1)  # decisions of 2026, before the cases part
    assert ("req_flex", ("sa", 0)) in first
    assert ("req_flex", ("sa", 1)) not in first


@pytest.mark.slow
def test_deferred_tokens_reach_the_console_json_and_html():
    """The tokens deferred in the hand-computed event (50 tokens/s x 3600 s x 200 h) in
    the console text, --json's grid_connections and the HTML grid section."""
    from dcplan.export.html import build_html
    from dcplan.export.terminal import plan_text

    res = _solve(with_batch(True))
    want = 50.0 * 3600 * 200
    text = " ".join(plan_text(res).split())  # the line wraps
    assert f"{want / 1e6:,.1f} M a year" in text and "none dropped" in text
    rec = res.summary()["grid_connections"][0]
    assert rec["deferred_tokens"] == pytest.approx(want, rel=1e-6)
    assert "Tokens deferred by curtailment" in build_html(res)


def test_sources_split_the_grid_peak_into_firm_and_flexible():
    # 10 kW committed firm; the event (hour 23, 21.5 kW) needs 10 + 0.75 f >= 21.5:
    # f = 11.5 / 0.75; at the grid's 21.5 kW peak the firm 10 kW carry 10, the flexible
    # MW the other 11.5 (a battery offered, too dear to use, so the sources table exists)
    from dcplan.export.terminal import plan_text

    d = peaky(flex(), storage=True, bat_capex=1e6)
    s = d.sites["sa"]
    g = dataclasses.replace(s.connection, committed_kw=(10.0,))
    d = dataclasses.replace(d, sites={"sa": dataclasses.replace(s, connection=g)})
    res = _solve(d)
    assert res.tables["grid"].iloc[0].flexible_kw == pytest.approx(11.5 / 0.75, rel=1e-6)
    src = res.tables["sources"].iloc[0]
    assert src.grid_kw_peak == pytest.approx(21.5, rel=1e-6)
    assert src.grid_flexible_kw_at_grid_peak == pytest.approx(11.5, rel=1e-6)
    text = " ".join(plan_text(res).split())
    assert "grid firm + grid flexible" in text and "0.0 + 0.0 + 0.0 + 0.0" in text


def test_the_curtailment_event_binds_with_its_shadow_price():
    # the event sets the flexible MW (21.5 kW in hour 23 <= 0.75 f): one more kW in the
    # event saves 1 / 0.75 kW of flexible MW at 1 USD/kW, 1,333.33 USD per MW
    res = solve_inputs(peaky(flex()), SolverOptions(time_limit_s=60, gap=1e-9), explain=True)
    sp = res.tables["shadow_prices"].set_index("family")
    assert sp.loc["curtail", "shadow_price"] == pytest.approx(1000 / 0.75, rel=1e-6)
    b = res.tables["binding"].set_index("limit").loc["curtailment"]
    assert b.site == "sa" and b.value == pytest.approx(21.5, rel=1e-6)
    assert b.shadow_price == pytest.approx(1000 / 0.75, rel=1e-6)
    # an event off the peak does not bind: no curtailment row
    off = solve_inputs(peaky(flex(hours=(3,))), SolverOptions(time_limit_s=60, gap=1e-9),
                       explain=True)
    assert "curtailment" not in set(off.tables["binding"].limit)
