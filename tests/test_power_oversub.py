"""Power oversubscription: a site provisions ``factor x`` its racks' power at the basis.

Hand-made inputs (``test_planner_helpers``): rack ``ra`` 2 kW idle, 10 kW nameplate,
1000 USD; serving 100 tokens/s at 8 kW with a p99 of 8 + z_0.99 kW (a standard deviation
of 1 kW). No losses, cooling, network or energy price, so the facility peak is the
racks' IT power. The normal figures are worked from ``math.erf`` here, not from the
module under test.
"""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_caps_milp import _caps, _solution, _two_sites
from test_planner_helpers import make_inputs, site, workload

from dcplan.case import load_case
from dcplan.errors import InputError
from dcplan.planner.inputs import PerfData
from dcplan.planner.power_oversub import (
    Z_P99,
    exceed_probability,
    expected_excess_kw,
    lost_fraction,
    rack_power_sigma_kw,
)
from dcplan.planner.run import solve_inputs
from dcplan.planner.tables import _site_power

ROOT = Path(__file__).resolve().parents[1]
#: 100 tokens/s at 8 kW, p99 one standard deviation of 1 kW times z_0.99 above.
SERVE = PerfData(100.0, 8.0, 100.0, 100.0, power_p99_kw=8.0 + Z_P99)


def _phi(z):
    return math.exp(-z * z / 2) / math.sqrt(2 * math.pi)


def _sf(z):
    return 0.5 * math.erfc(z / math.sqrt(2))


def test_closed_form_of_a_normal_draw():
    """mu 100 kW, sigma 10 kW, provision 110 kW: z = 1, P(X > c) = 1 - Phi(1) = 0.158655,
    E[(X - c)+] = 10 phi(1) - 10 (1 - Phi(1)) = 2.419707 - 1.586553 = 0.833155 kW."""
    assert exceed_probability(100.0, 10.0, 110.0) == pytest.approx(0.1586553, abs=1e-7)
    assert expected_excess_kw(100.0, 10.0, 110.0) == pytest.approx(0.8331547, abs=1e-6)
    # at the mean: sigma phi(0) = 10 / sqrt(2 pi) = 3.989423
    assert expected_excess_kw(100.0, 10.0, 100.0) == pytest.approx(3.9894228, abs=1e-6)
    # no spread: the excess itself, or nothing
    assert expected_excess_kw(100.0, 0.0, 90.0) == 10.0
    assert exceed_probability(100.0, 0.0, 110.0) == 0.0
    # the p99 is z_0.99 = 2.326348 standard deviations above the mean
    assert rack_power_sigma_kw(100.0, 100.0 + 2 * 2.3263479) == pytest.approx(2.0, rel=1e-6)
    # a rack at 100 kW (p99 as above, sigma 10), idle 20, provision 110: 0.833155 / 80
    assert lost_fraction(100.0, 100.0 + 10 * Z_P99, 20.0, 110.0) == \
        pytest.approx(0.8331547 / 80.0, rel=1e-6)


@settings(max_examples=60, deadline=None)
@given(mu=st.floats(1.0, 1000.0), spread=st.floats(0.0, 0.3), idle=st.floats(0.0, 0.5),
       basis=st.floats(1.0, 2.0), f_low=st.floats(0.05, 1.0), f_high=st.floats(0.05, 1.0))
def test_a_smaller_factor_never_provisions_more_nor_loses_less(mu, spread, idle, basis,
                                                              f_low, f_high):
    """Provision = factor x basis; with the factor lower the provision is not higher and
    the expected excess, the probability of exceeding and the share lost are not lower."""
    f_low, f_high = sorted((f_low, f_high))
    sigma = spread * mu
    cap_low, cap_high = f_low * basis * mu, f_high * basis * mu
    assert cap_low <= cap_high
    assert expected_excess_kw(mu, sigma, cap_low) >= expected_excess_kw(mu, sigma, cap_high) - 1e-9
    assert exceed_probability(mu, sigma, cap_low) >= exceed_probability(mu, sigma, cap_high)
    p99 = mu + sigma * Z_P99
    assert lost_fraction(mu, p99, idle * mu, cap_low) >= \
        lost_fraction(mu, p99, idle * mu, cap_high) - 1e-12
    assert 0.0 <= lost_fraction(mu, p99, idle * mu, cap_low) <= 1.0


def _one_site(grid=41.0, **kw):
    """``ra`` at ``sa`` (grid ``grid`` kW, no energy price) serving 450 tokens/s, nameplate."""
    return make_inputs(n=1, sites=[site(n=1, grid_kw=grid, price=0.0)],
                       workloads=[workload(demand=(450.0,))], perf={("ra", "wa"): SERVE},
                       nameplate_peak=True, **kw)


def test_oversubscribed_site_serves_more_in_the_same_grid_with_the_loss_counted():
    """Nameplate: 5 racks need 50 kW > 41, so without oversubscription 4 racks serve 400
    of 450 tokens/s. At 0.8 a rack provisions 8 kW, its mean draw: the expected excess
    is sigma phi(0) = 0.398942 kW of its 6 kW above idle, so it loses 6.649 % and serves
    93.351 tokens/s; 450 / 93.351 = 4.82 -> 5 racks, provisioned 0.8 x 50 = 40 kW <= 41."""
    base = solve_inputs(_one_site(), explain=False)
    assert base.unserved
    assert base.tables["demand"].served_tokens_per_s_peak.sum() == pytest.approx(400.0)
    d = _one_site(power_oversub={"sa": 0.8})
    lost = _phi(0.0) / 6.0
    assert d.oversub_lost_frac("ra", "sa", "wa") == pytest.approx(lost, rel=1e-9)
    res = solve_inputs(d, explain=False)
    assert not res.unserved
    assert res.objective_usd == pytest.approx(5000.0, rel=1e-6)
    power = res.tables["power"].set_index("site")
    assert power.loc["sa", "facility_kw_peak"] == pytest.approx(40.0)
    alloc = res.tables["allocation"]
    x = float(alloc.racks.sum())
    assert float(alloc.tokens_per_s.sum()) == pytest.approx(x * 100.0 * (1 - lost))
    assert x * 100.0 * (1 - lost) >= 450.0 * (1 - 1e-7)
    # the site's figures from the fleet: 5 racks, x serving at 8 kW with sigma x x 1 kW
    (row,) = res.tables["power_oversubscription"].itertuples()
    mu, sigma, cap = 2.0 * 5 + 6.0 * x, x * 1.0, 40.0
    z = (cap - mu) / sigma
    excess = sigma * _phi(z) + (mu - cap) * _sf(z)
    assert row.oversubscription_factor == 0.8
    assert row.basis_it_kw == pytest.approx(50.0) and row.provisioned_it_kw == pytest.approx(40.0)
    assert row.draw_it_kw_peak == pytest.approx(mu)
    assert row.draw_sigma_kw_peak == pytest.approx(sigma)
    assert row.exceed_prob == pytest.approx(_sf(z), rel=1e-6)
    assert row.excess_mwh_per_year == pytest.approx(excess * 8.76, rel=1e-6)
    # tokens at the racks' goodput per kW above idle: 100 / 6 tokens/s per kW
    assert row.tokens_lost_per_s_avg == pytest.approx(excess * 100.0 / 6.0, rel=1e-6)
    assert row.tokens_counted_per_s_avg == pytest.approx(x * 100.0 * lost, rel=1e-6)
    assert "power oversubscribed at sa by 0.8" in res.power_basis


@pytest.mark.slow
def test_factor_one_is_no_oversubscription(tmp_path):
    """A factor of 1 (or none) builds the same inputs: nothing oversubscribed, and a
    hand-made plan without the entry has no table and the same objective."""
    from dcplan.planner.prepare import prepare_inputs

    f = tmp_path / "one.yaml"
    f.write_text(f"extends: {ROOT / 'examples' / 'minimal.yaml'}\n"
                 "power_oversubscription: {factor: 1.0, sites: {seoul_metro: 1}}\n")
    assert prepare_inputs(load_case(f)).power_oversub == {}
    a = solve_inputs(_one_site(grid=1000.0), explain=False)
    b = solve_inputs(_one_site(grid=1000.0, power_oversub={}), explain=False)
    assert "power_oversubscription" not in a.tables and "oversubscribed" not in a.power_basis
    assert a.objective_usd == b.objective_usd


@pytest.mark.parametrize("entry, field, words", [
    ("{factor: 1.2}", "power_oversubscription.factor", "<= 1"),
    ("{factor: 0}", "power_oversubscription.factor", "> 0"),
    ("{sites: {seoul_metro: 0}}", "power_oversubscription.sites.seoul_metro", "> 0"),
    ("{}", "power_oversubscription", "gives no factor"),
    ("{sites: {nowhere: 0.9}}", "power_oversubscription.sites", "not one of this scenario's"),
])
def test_bad_factor_names_file_entry_and_field(tmp_path, entry, field, words):
    """A factor above 1 or at 0, no factor, or a site the scenario does not plan: one
    clear problem naming the file, its line and the field."""
    f = tmp_path / "bad.yaml"
    f.write_text(f"extends: {ROOT / 'examples' / 'minimal.yaml'}\n"
                 f"power_oversubscription: {entry}\n")
    with pytest.raises(InputError) as exc:
        load_case(f)
    probs = [p for p in exc.value.problems
             if str(p.field or "").startswith("power_oversubscription")]
    assert len(probs) == 1, exc.value.problems
    text = str(probs[0])
    assert probs[0].field == field and words in text and "bad.yaml:2" in text, text


@pytest.mark.slow
def test_factor_below_the_cap_power_names_the_entry(tmp_path):
    """Nameplate basis, gb200_nvl72 offered caps down to 0.7: at a factor of 0.3 a rack
    provisions 36 kW of its 120, below what it draws at the 0.7 cap; capping could not
    protect the site. Refused when the plan's inputs are built, naming line and field."""
    from dcplan.planner.prepare import prepare_inputs

    f = tmp_path / "low.yaml"
    f.write_text(f"extends: {ROOT / 'examples' / 'minimal.yaml'}\npeak_power: nameplate\n"
                 "power_caps: {gb200_nvl72: [1.0, 0.7]}\n"
                 "power_oversubscription:\n  sites: {seoul_metro: 0.3}\n")
    d_ok = prepare_inputs(load_case(f).with_changes(
        {"power_oversubscription": {"sites": {"seoul_metro": 0.9}}}))
    assert d_ok.power_oversub == {"seoul_metro": 0.9}
    low = d_ok.power_at_cap_kw["gb200_nvl72", 0.7] / d_ok.racks["gb200_nvl72"].it_power_max_kw
    assert 0.3 < low < 0.9
    with pytest.raises(InputError) as exc:
        prepare_inputs(load_case(f))
    (p,) = exc.value.problems
    text = str(p)
    assert p.field == "power_oversubscription.sites.seoul_metro" and "low.yaml:5" in text, text
    assert "gb200_nvl72" in text and "lowest offered cap (0.7)" in text
    assert f"at least {math.ceil(low * 1000) / 1000:g}" in text


def test_nameplate_basis_counts_capped_racks_at_nameplate():
    """With caps offered, ``peak_power: nameplate`` counts a rack at 0.8 at its 10 kW
    nameplate (5 racks: 50 kW) and ``capped`` at its cap's 8 kW (40 kW); so in 41 kW the
    nameplate plan cannot serve wa's 450 tokens/s (4 racks, 400) and the capped one can."""
    nameplate = dataclasses.replace(_caps(_two_sites(), capped=False), nameplate_peak=True)
    capped = _caps(_two_sites(), capped=True)
    for d, kw in ((nameplate, 50.0), (capped, 40.0)):
        peak = _site_power(d, _solution(d, 0.8), "sa", 0, average=False, hour=None)
        assert peak["facility"] == pytest.approx(kw)
    res = solve_inputs(nameplate, explain=False)
    served = res.tables["demand"].set_index("workload")
    assert served.loc["wa", "served_tokens_per_s_peak"] == pytest.approx(400.0, rel=1e-6)
    assert res.peak_power == "nameplate"
    assert not solve_inputs(capped, explain=False).unserved


@pytest.mark.slow
def test_plan_json_reports_the_oversubscription(tmp_path):
    """``dcplan plan SCENARIO --json`` of an oversubscribed scenario lists per site and
    period the factor, the provision (factor x basis), the exceedance and the tokens
    lost, and the power basis says the site is oversubscribed. The scenario is
    examples/seoul_oversub.yaml at its forecast's low case: the same oversubscription
    in 12 s, where the shipped example's demand makes the solve take about two minutes
    (test_examples plans that one and checks its figures)."""
    scen = tmp_path / "seoul_oversub_low.yaml"
    scen.write_text(f"extends: {ROOT / 'examples' / 'seoul_oversub.yaml'}\n"
                    "name: seoul_oversub_low\ndemand:\n  forecast: {file: "
                    f"{ROOT / 'examples' / 'forecasts' / 'korea_provider.yaml'}, case: low}}\n")
    out = subprocess.run(
        [sys.executable, "-m", "dcplan", "plan", str(scen),
         "--json", "--outdir", str(tmp_path / "o"), "--gap", "0.05"],  # fields, not figures
        capture_output=True, text=True, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=1800)
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout)
    rows = data["power_oversubscription"]
    assert rows and {r["site"] for r in rows} == {"seoul_metro"}
    for r in rows:
        assert r["oversubscription_factor"] == 0.85
        assert r["provisioned_it_kw"] == pytest.approx(0.85 * r["basis_it_kw"])
        assert 0.0 <= r["exceed_prob"] <= 1.0 and r["tokens_lost_per_s_avg"] >= 0.0
    assert "power oversubscribed at seoul_metro by 0.85" in data["power_basis"]


def test_tokens_lost_share_shows_its_hundredths_of_a_per_cent():
    """Capping's losses are 0.01-0.3 %: the workbook and HTML format must not round
    them to 0.0 % (seoul_oversub 2029: 0.227 %)."""
    from dcplan.export.labels import format_number, number_format
    from dcplan.planner.oversub_table import TABLE_UNITS

    fmt = number_format(TABLE_UNITS["tokens_lost_frac"], "tokens_lost_frac")
    assert format_number(0.00227, fmt) == "0.227%"
    assert format_number(0.00013, fmt) == "0.013%"
