"""Power caps as a planning decision: the MILP chooses how many racks run at each cap.

Hand-made inputs (``test_planner_helpers``): rack ``ra`` 2 kW idle, 10 kW at full load,
100 tokens/s per rack uncapped (10 kW at its operating point); at cap 0.8 it serves
90 tokens/s at 8 kW and draws at most 8 kW (``power_at_cap_kw``). No losses, cooling,
network or energy price unless said, so the facility peak is the racks' IT power.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_planner_helpers import make_inputs, rack, site, workload

from dcplan.case import load_case
from dcplan.errors import InputError
from dcplan.planner.inputs import PerfData
from dcplan.planner.run import solve_inputs
from dcplan.planner.tables import Solution, _site_power

ROOT = Path(__file__).resolve().parents[1]
FULL = PerfData(100.0, 10.0, 100.0, 100.0)
AT_80 = PerfData(90.0, 8.0, 90.0, 90.0)


def _caps(d, levels=(1.0, 0.8), perf_80=AT_80, at_cap_80=8.0, capped=True):
    """``d`` with cap levels offered to ``ra`` (perf at 1.0 is the uncapped point)."""
    perf = {}
    power = {}
    for (r, w), pf in d.perf.items():
        for c in levels:
            perf[r, w, c] = pf if c == 1.0 else perf_80
            power[r, c] = d.racks[r].it_power_max_kw if c == 1.0 else at_cap_80
    return dataclasses.replace(d, cap_levels={"ra": tuple(levels)}, perf_at_cap=perf,
                               power_at_cap_kw=power, nameplate_peak=capped or d.nameplate_peak,
                               capped_peak=capped)


def _two_sites(grid_a=41.0):
    """Site ``sa`` (grid ``grid_a`` kW) serves ``wa`` 450 tokens/s, ``sb`` (1 MW) ``wb`` 400."""
    return make_inputs(
        n=1, racks=[rack()],
        sites=[site("sa", n=1, grid_kw=grid_a, price=0.0),
               site("sb", n=1, grid_kw=1000.0, price=0.0)],
        workloads=[workload("wa", demand=(450.0,), sites={"sa"}),
                   workload("wb", demand=(400.0,), sites={"sb"})],
        perf={("ra", "wa"): FULL, ("ra", "wb"): FULL})


def _at_cap(res, site_, cap):
    t = res.tables["caps"]
    sel = t[(t.site == site_) & (t.power_cap_frac == cap)]
    return float(sel.racks.sum())


def test_mixed_cap_choice_where_the_grid_binds_at_one_site_only():
    """sa: 450 tokens/s in 41 kW. Uncapped, 5 racks (4 serve only 400) draw 50 kW > 41;
    with n racks at 1.0 and 5 - n at 0.8 the peak is 10 n + 8 (5 - n) = 40 + 2 n <= 41,
    so n = 0: all 5 at 0.8 (450 tokens/s, 40 kW). sb: 400 tokens/s, grid ample: 4 racks
    at 1.0 (at 0.8, 4 racks serve 360 < 400 and a fifth costs 1000 USD). 9 racks x
    1000 USD, nothing else priced."""
    d = _caps(_two_sites())
    res = solve_inputs(d, explain=False)
    assert not res.unserved
    assert _at_cap(res, "sa", 0.8) == 5 and _at_cap(res, "sa", 1.0) == 0
    assert _at_cap(res, "sb", 1.0) == 4 and _at_cap(res, "sb", 0.8) == 0
    assert res.objective_usd == pytest.approx(9000.0, rel=1e-6)
    power = res.tables["power"].set_index("site")
    assert power.loc["sa", "facility_kw_peak"] == pytest.approx(40.0)
    assert power.loc["sb", "facility_kw_peak"] == pytest.approx(40.0)
    caps = res.tables["caps"].set_index(["site", "power_cap_frac"])
    # sa: 5 racks in 40 kW = 125 racks/MW, 450 tokens/s / 0.04 MW = 11,250 tokens/s per MW
    assert caps.loc[("sa", 0.8), "site_racks_per_mw"] == pytest.approx(125.0)
    assert caps.loc[("sa", 0.8), "site_tokens_per_s_per_mw"] == pytest.approx(11250.0)


def test_without_caps_the_grid_bound_site_falls_short():
    """The same case without caps cannot serve sa in 41 kW: 4 racks, 400 of 450 tokens/s."""
    d = dataclasses.replace(_two_sites(), nameplate_peak=True)
    res = solve_inputs(d, explain=False)
    assert res.unserved
    short = res.tables["demand"].set_index("workload")
    assert short.loc["wa", "unserved_tokens_per_s_peak"] == pytest.approx(50.0, abs=1e-6)
    assert "caps" not in res.tables


def test_operating_point_basis_caps_change_serving_power():
    """Operating-point basis, sa grid 38 kW: IT = 2 kW idle x racks + (P - 2) x allocated.
    Serving at 1.0 adds 8 kW per 100 tokens/s (12.5 tokens/s per kW), at 0.8 6 kW per 90
    (15 per kW), so the grid goes to level 0.8. 5 racks: 10 + 6 a <= 38, a = 4.667
    racks, 420 tokens/s; 4 racks serve at most 390 (4 allocated, 3 of them moved to
    1.0 in the 6 kW left), 6 racks 390 (12 + 6 a <= 38). Least shortfall: 420 of 450.
    """
    d = _caps(_two_sites(grid_a=38.0), capped=False)
    res = solve_inputs(d, explain=False)
    served = res.tables["demand"].set_index("workload")
    assert served.loc["wa", "served_tokens_per_s_peak"] == pytest.approx(420.0, rel=1e-6)


def _solution(d, cap, racks=5.0):
    """All ``racks`` of ``ra`` at ``sa`` in service at ``cap``, fully allocated to ``wa``."""
    key = ("ra", "sa", "wa", "all", 0, cap)
    return Solution(racks_in_service={("ra", "sa", 0): racks},
                    racks_bought={("ra", "sa", 0): racks},
                    racks_allocated={key: racks},
                    racks_at_cap={("ra", "sa", 0, c): (racks if c == cap else 0.0)
                                  for c in d.cap_levels["ra"]})


@pytest.mark.parametrize("capped", [True, False])
def test_lower_cap_never_raises_site_peak_for_the_same_allocation(capped):
    """Same racks and allocation: the site peak at 0.8 (8 kW per rack) is below 1.0's (10)."""
    d = _caps(make_inputs(n=1, sites=[site(n=1, price=0.0)],
                          workloads=[workload(demand=(450.0,))]), capped=capped)
    peaks = [_site_power(d, _solution(d, c), "sa", 0, average=False, hour=None)["facility"]
             for c in (1.0, 0.8)]
    assert peaks == [pytest.approx(50.0), pytest.approx(40.0)]
    assert peaks[1] <= peaks[0]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(demand=st.integers(50, 600), goodput_80=st.floats(60.0, 100.0),
       kw_80=st.floats(5.0, 10.0), price=st.sampled_from([0.0, 0.1, 0.5]),
       capped=st.booleans())
@pytest.mark.slow
def test_caps_offered_never_make_the_plan_dearer(demand, goodput_80, kw_80, price, capped):
    """Caps add operating choices (1.0 is the uncapped point): the optimum cannot rise."""
    base = make_inputs(n=1, sites=[site(n=1, grid_kw=1000.0, price=price)],
                       workloads=[workload(demand=(float(demand),))],
                       nameplate_peak=capped)
    with_caps = _caps(base, perf_80=PerfData(goodput_80, kw_80, goodput_80, goodput_80),
                      at_cap_80=kw_80, capped=capped)
    a = solve_inputs(base, explain=False)
    b = solve_inputs(with_caps, explain=False)
    assert not a.unserved and not b.unserved
    assert b.objective_usd <= a.objective_usd * (1 + 1e-6) + 1e-6


@pytest.mark.parametrize("caps, field, words", [
    ("{gb200_nvl72: [1.2, 0.8]}", "power_caps.gb200_nvl72.0", "<= 1"),
    ("[1.0, 0]", "power_caps.1", "> 0"),
    ("{gb200_nvl72: []}", "power_caps", "no cap level"),
    ("{nosuch: [0.9]}", "power_caps", "unknown rack id 'nosuch'"),
    ("{vera_rubin_nvl72: [0.9]}", "power_caps", "not one of this scenario's racks"),
])
@pytest.mark.slow
def test_bad_caps_name_file_entry_and_field(tmp_path, caps, field, words):
    """A cap above 1 or at 0, no level, or a rack the scenario does not plan: one clear
    problem naming the file, its line and the field."""
    f = tmp_path / "bad.yaml"
    f.write_text(f"extends: {ROOT / 'examples' / 'minimal.yaml'}\npower_caps: {caps}\n")
    with pytest.raises(InputError) as exc:
        load_case(f)
    probs = [p for p in exc.value.problems if str(p.field or "").startswith("power_caps")]
    assert len(probs) == 1, exc.value.problems
    text = str(probs[0])
    assert probs[0].field == field and words in text and "bad.yaml:2" in text, text


def test_cap_below_the_power_curve_names_the_entry(tmp_path):
    """A cap the accelerator's power curve does not cover (it starts at 0.5) is refused
    when the plan's inputs are built, naming the scenario's line and field."""
    from dcplan.planner.prepare import prepare_inputs

    f = tmp_path / "low.yaml"
    f.write_text(f"extends: {ROOT / 'examples' / 'minimal.yaml'}\npower_caps:\n"
                 "  gb200_nvl72: [1.0, 0.4]\n")
    with pytest.raises(InputError) as exc:
        prepare_inputs(load_case(f))
    (p,) = exc.value.problems
    assert p.field == "power_caps" and "low.yaml:3" in str(p) and "0.4" in str(p), str(p)


@pytest.mark.slow
def test_caps_levels_come_from_the_performance_model():
    """The planner's inputs at each cap are the performance model's (one definition):
    goodput and operating power from rack_performance at that cap with the rack's power
    curve, power_at_cap_kw from it; 1.0 is the uncapped point, and the lower cap's rack
    power at the cap is below it_power_max_kw."""
    from dcplan import perf as perf_model
    from dcplan.perf.params import (
        POWER_CURVES_FILE,
        load_power_curves,
        perf_folder,
        power_curve_of,
    )
    from dcplan.perf.software import as_of
    from dcplan.planner.prepare import prepare_inputs

    case = load_case(ROOT / "examples" / "minimal.yaml").with_changes(
        {"power_caps": {"gb200_nvl72": [0.8, 1.0]}})
    d = prepare_inputs(case)
    assert d.cap_levels == {"gb200_nvl72": (1.0, 0.8)}
    rk = case.catalog.get("racks", "gb200_nvl72")
    assert d.power_at_cap_kw["gb200_nvl72", 1.0] == pytest.approx(rk.it_power_max_kw)
    assert d.power_at_cap_kw["gb200_nvl72", 0.8] < rk.it_power_max_kw
    curve = power_curve_of(load_power_curves(perf_folder(case.catalog) / POWER_CURVES_FILE),
                           rk.accelerator)
    latest = as_of(case.perf_calibration, before="hold")
    checked = 0
    for (r, w, c), pf in d.perf_at_cap.items():
        if c == 1.0:
            assert pf.goodput_tokens_per_s == pytest.approx(d.perf[r, w].goodput_tokens_per_s)
            continue
        rp = perf_model.rack_performance(
            case.catalog, r, case.catalog.get("workloads", w).model, w,
            defaults=case.perf_defaults, calibration=latest, power_cap_frac=c,
            power_curve=curve)
        assert pf.goodput_tokens_per_s == rp.goodput_tokens_per_s
        assert pf.power_kw == rp.power_kw <= d.power_at_cap_kw[r, c] + 1e-9
        assert d.power_at_cap_kw[r, c] == pytest.approx(rp.power_at_cap_kw)
        checked += 1
    assert checked > 0


@pytest.mark.slow
def test_seoul_power_example_reports_the_chosen_caps(tmp_path):
    """``dcplan plan examples/seoul_power.yaml --json`` lists racks per cap level.

    Solved at 1 %, not the file's 0.1 %: the table's consistency with the fleet does not
    depend on the gap, and test_examples compares the plan with the recorded 0.1 % one."""
    saved = tmp_path / "p.plan"
    out = subprocess.run(
        [sys.executable, "-m", "dcplan", "plan", str(ROOT / "examples" / "seoul_power.yaml"),
         "--json", "--outdir", str(tmp_path / "o"), "--save", str(saved), "--gap", "0.01"],
        capture_output=True, text=True, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=1800)
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout)
    assert data["peak_power"] == "capped"
    caps = data["power_caps"]
    assert caps and {r["power_cap_frac"] for r in caps} <= {1.0, 0.9, 0.8, 0.7}
    assert all(r["racks"] > 0 for r in caps)
    # racks at the caps add up to the racks in service of each site, rack and period
    fleet = {(str(r["period"]), r["site"], r["rack"]): r["installed_racks"]
             for r in data["fleet"]}
    by_key: dict = {}
    for r in caps:
        key = (str(r["period"]), r["site"], r["rack"])
        by_key[key] = by_key.get(key, 0.0) + r["racks"]
    assert by_key == pytest.approx({k: v for k, v in fleet.items() if v > 0})
    # the saved plan (same run) keeps the table
    shown = subprocess.run([sys.executable, "-m", "dcplan", "show", str(saved), "--json"],
                           capture_output=True, text=True, cwd=ROOT, timeout=600,
                           env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert json.loads(shown.stdout)["power_caps"] == caps
