"""Power caps: the power curves, clocks and power under a cap, the CLI, bad input."""

from __future__ import annotations

import functools
import json
import shutil
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dcplan import perf
from dcplan.catalog import load_catalog
from dcplan.cli import app
from dcplan.errors import InputError
from dcplan.perf.capcurve import cap_sweep, sweep_caps
from dcplan.perf.goodput import build_setup
from dcplan.perf.params import POWER_CURVES_FILE, load_perf_inputs, load_power_curves
from dcplan.perf.power import (
    accelerator_power_kw,
    cap_activity,
    capped_activity,
    curve_clocks,
    phase_clocks,
    rack_power_at_cap_kw,
)
from dcplan.perf.roofline import Parallel, forward_step

ROOT = Path(__file__).resolve().parents[1]
CATALOGS = ROOT / "catalogs"
PERF_IN = load_perf_inputs()
PERF_KW = {"defaults": PERF_IN.defaults, "calibration": PERF_IN.calibration}
rack_performance = partial(perf.rack_performance, **PERF_KW)
runner = CliRunner()


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(CATALOGS)


def _perf(catalog, rack, workload, cap):
    acc = catalog.get("racks", rack).accelerator
    return rack_performance(catalog, rack, None, workload, power_cap_frac=cap,
                            power_curve=PERF_IN.power_curve(acc))


# ------------------------------------------------------------------ the data


def test_every_accelerator_has_a_curve_with_source_and_date(catalog):
    ids = set(catalog.entries["accelerators"])
    assert {c.accelerator for c in PERF_IN.power_curves} == ids
    for c in PERF_IN.power_curves:
        assert c.source and c.as_of
        assert c.cap_frac[0] == 1.0 and c.clock_frac[0] == 1.0
        assert all(np.diff(c.cap_frac) < 0) and all(np.diff(c.clock_frac) <= 0)


def test_estimated_points_follow_their_stated_model(catalog):
    """Each estimate's points recomputed by hand from its ``estimate_model``."""
    raw = yaml.safe_load((CATALOGS / POWER_CURVES_FILE).read_text())
    for e in raw:
        m = e["estimate_model"]
        acc = catalog.get("accelerators", e["accelerator"])
        # the static share is the catalog's idle / max power
        assert m["static_frac"] == pytest.approx(acc.idle_power_w / acc.max_power_w, abs=5e-4)
        s, mem, alpha = m["static_frac"], m["memory_frac"], m["alpha"]
        for cap, clk, mclk in e["points"]:
            core = ((cap - s) / (1 - s) - mem) / (1 - mem)
            assert clk == pytest.approx(core ** (1 / alpha), abs=6e-4), (e["accelerator"], cap)
            assert mclk == 1.0


def test_h100_at_600_w_loses_what_the_cited_check_says():
    # 700 -> 600 W: the curve's clock for a compute-bound load; the file header cites a
    # 10-15 % loss on compute-bound training steps
    clk, mem = curve_clocks(PERF_IN.power_curve("h100_sxm"), 600 / 700)
    assert 0.85 <= clk <= 0.90 and mem == 1.0


# ---------------------------------------------------------- clocks and power


def test_curve_interpolates_between_rows():
    c = PERF_IN.power_curve("h200_sxm")
    # rows 0.80 -> 0.798 and 0.75 -> 0.744: half way
    assert curve_clocks(c, 0.775)[0] == pytest.approx((0.798 + 0.744) / 2, abs=1e-12)
    assert curve_clocks(c, 1.0) == (1.0, 1.0)
    with pytest.raises(ValueError, match="below the lowest cap"):
        curve_clocks(c, 0.4)


def test_phase_clocks_by_hand(catalog):
    acc = catalog.get("accelerators", "h200_sxm")     # 90 W idle, 700 W max
    c = PERF_IN.power_curve("h200_sxm")
    s = 90 / 700
    k = (0.8 - s) / (1 - s)                             # 0.770492
    assert cap_activity(acc, 0.8) == pytest.approx(k, rel=1e-12)
    # decode at activity 0.6 draws 90 + 610 * 0.6 = 456 W < 560 W: not throttled
    assert phase_clocks(c, acc, 0.8, 0.6) == (1.0, 1.0, 1.0)
    # prefill at activity 0.9 draws 639 W > 560 W: it runs where the curve's saturated
    # load is at cap s + (0.8 - s) / 0.9 = 0.874603, between the rows 0.90 -> 0.902 and
    # 0.85 -> 0.851
    phase_cap = s + (0.8 - s) / 0.9
    clk, mem, scale = phase_clocks(c, acc, 0.8, 0.9)
    assert clk == pytest.approx(0.851 + (phase_cap - 0.85) / 0.05 * (0.902 - 0.851), rel=1e-9)
    assert mem == 1.0
    assert scale == pytest.approx(k / 0.9, rel=1e-12)
    # its power is then the cap: 90 + 610 * 0.9 * scale = 560 W
    assert float(accelerator_power_kw(acc, 0.9 * scale)) * 1e3 == pytest.approx(560.0)


@functools.cache
def _gb200_gpu():
    """The catalog's GB200 GPU, read once for the property below."""
    return load_catalog(CATALOGS).get("accelerators", "gb200_gpu")


@given(act=st.floats(0.0, 1.0), cap=st.floats(0.5, 1.0))
@settings(max_examples=200, deadline=None)
@pytest.mark.slow
def test_accelerator_power_never_exceeds_the_cap(act, cap):
    acc = _gb200_gpu()
    c = PERF_IN.power_curve("gb200_gpu")
    _clk, _mem, scale = phase_clocks(c, acc, cap, act)
    p = float(accelerator_power_kw(acc, capped_activity(act, scale, cap_activity(acc, cap))))
    assert p * 1e3 <= cap * acc.max_power_w + 1e-9
    # and never more than uncapped
    assert p <= float(accelerator_power_kw(acc, act)) + 1e-12


def test_rack_power_at_the_cap_by_hand(catalog):
    rack = catalog.get("racks", "hgx_h200")
    acc = catalog.get("accelerators", "h200_sxm")
    n = rack.accelerators_per_rack
    other = rack.it_power_max_kw - n * 0.7
    assert rack_power_at_cap_kw(rack, acc, 0.8) == pytest.approx(n * 0.56 + other)
    assert rack_power_at_cap_kw(rack, acc, 1.0) == rack.it_power_max_kw


# ------------------------------------------------------------ step times


def _setup_and_layout(catalog):
    su = build_setup(catalog, "hgx_h200", "llama3_70b", "chat", **PERF_KW)
    return su, Parallel.from_engine(8, 1, False)


def test_decode_step_loses_little_under_a_lower_clock(catalog):
    """Memory-bound decode at batch 8: every component stays memory-bound at 80 % clock."""
    su, par = _setup_and_layout(catalog)
    args = (par, su.shape, su.physics, su.serving)
    ctx = 2000.0
    att, kv = su.shape.attended(ctx), 8 * float(su.shape.kv_bytes_seq(ctx))
    full = forward_step(su.hw, *args, 8.0, 8.0, att, kv, "decode")
    slow = forward_step(replace(su.hw, decode_clock_frac=0.8), *args, 8.0, 8.0, att, kv,
                        "decode")
    assert float(full.compute_s) / 0.8 < float(full.memory_s)   # memory-bound at 0.8 too
    assert float(slow.compute_s) == pytest.approx(float(full.compute_s) / 0.8, rel=1e-12)
    assert float(slow.memory_s) == pytest.approx(float(full.memory_s), rel=1e-12)
    loss = 1 - float(full.total_s) / float(slow.total_s)
    assert 0.0 <= loss < 0.02          # small: far below the 20 % clock cut


def test_prefill_step_slows_near_the_clock_ratio(catalog):
    """Compute-bound prefill of 8,192 tokens: the roof grows by 1 / clock exactly."""
    su, par = _setup_and_layout(catalog)
    args = (par, su.shape, su.physics, su.serving)
    T = 8192.0
    att = su.shape.attended(T / 2)
    full = forward_step(su.hw, *args, T, T, att, 0.0, "prefill")
    slow = forward_step(replace(su.hw, prefill_clock_frac=0.8), *args, T, T, att, 0.0,
                        "prefill")
    assert float(full.compute_s) > float(full.memory_s)
    assert float(slow.roof_s) == pytest.approx(float(full.roof_s) / 0.8, rel=1e-9)
    ratio = float(slow.total_s) / float(full.total_s)
    assert 1.0 < ratio <= 1 / 0.8 + 1e-12
    # the rest of the step does not slow: overheads stay, and the longer roof can only
    # hide more of the communication, at most comm_overlap_frac of the roof's growth
    grow = float(slow.roof_s) - float(full.roof_s)
    hidden = float(full.comm_s) - float(slow.comm_s)
    assert float(slow.overhead_s) == pytest.approx(float(full.overhead_s), rel=1e-12)
    assert 0.0 <= hidden <= su.hw.params.comm_overlap_frac * grow + 1e-15
    assert float(slow.total_s) - float(full.total_s) == pytest.approx(grow - hidden)
    # and the decode clock does not touch a prefill step
    other = forward_step(replace(su.hw, decode_clock_frac=0.5), *args, T, T, att, 0.0,
                         "prefill")
    assert float(other.total_s) == float(full.total_s)


# ------------------------------------------------------------ rack level


@pytest.mark.parametrize("rack,wl", [("hgx_h200", "chat"), ("gb200_nvl72", "chat_disagg"),
                                     ("mi355x_rack", "coding_agent")])
def test_uncapped_is_todays_prediction(catalog, rack, wl):
    today = rack_performance(catalog, rack, None, wl)
    capped_at_1 = _perf(catalog, rack, wl, 1.0)
    assert capped_at_1.as_dict() == today.as_dict()
    assert today.power_cap_frac == 1.0 and today.power_at_cap_kw == today.power_nameplate_kw
    assert today.prefill_clock_frac == today.decode_clock_frac == 1.0


def test_clocks_follow_the_uncapped_step_activities(catalog):
    acc = catalog.get("accelerators", "h200_sxm")
    base = _perf(catalog, "hgx_h200", "chat", 1.0)
    capped = _perf(catalog, "hgx_h200", "chat", 0.6)
    c = PERF_IN.power_curve("h200_sxm")
    assert capped.prefill_clock_frac == phase_clocks(c, acc, 0.6, base.prefill_activity)[0]
    assert capped.decode_clock_frac == phase_clocks(c, acc, 0.6, base.decode_activity)[0]
    assert capped.prefill_clock_frac < 1.0
    assert capped.power_kw <= capped.power_at_cap_kw


@pytest.mark.slow
@pytest.mark.parametrize("rack,wl", [("hgx_h200", "chat"), ("gb200_nvl72", "chat_disagg")])
@given(a=st.floats(0.5, 1.0), b=st.floats(0.5, 1.0))
@settings(max_examples=12, deadline=None)
def test_a_lower_cap_never_raises_goodput_or_power(rack, wl, a, b):
    cat = load_catalog(CATALOGS)
    hi, lo = max(a, b), min(a, b)
    p_hi, p_lo = _perf(cat, rack, wl, hi), _perf(cat, rack, wl, lo)
    assert p_lo.goodput_tokens_per_s <= p_hi.goodput_tokens_per_s * (1 + 1e-9)
    assert p_lo.power_kw <= p_hi.power_kw * (1 + 1e-9)
    assert p_lo.power_at_cap_kw <= p_hi.power_at_cap_kw
    assert p_lo.power_kw <= p_lo.power_at_cap_kw + 1e-9


@pytest.mark.slow
def test_sweep_best_cap_and_unthrottled_caps(catalog):
    wl = catalog.get("workloads", "chat")
    rows = cap_sweep(catalog, "hgx_h200", None, wl, PERF_IN.power_curve("h200_sxm"),
                     **PERF_KW)
    assert [r["power_cap_frac"] for r in rows] == sweep_caps(PERF_IN.power_curve("h200_sxm"))
    assert rows[0]["power_cap_frac"] == 1.0 and rows[-1]["power_cap_frac"] == 0.5
    best = max(r["total_tokens_per_joule"] for r in rows)
    assert best >= rows[0]["total_tokens_per_joule"]
    # where neither phase is throttled the answer is the uncapped one, bit for bit ...
    free = [r for r in rows if r["prefill_clock_frac"] == r["decode_clock_frac"] == 1.0]
    assert len(free) >= 2
    for r in free:
        assert r["goodput_tokens_per_s"] == rows[0]["goodput_tokens_per_s"]
        assert r["total_tokens_per_joule"] == rows[0]["total_tokens_per_joule"]
    # ... while the rack needs less power at the cap: more tokens/s per kW provisioned
    assert max(r["tokens_per_s_per_kw_at_cap"] for r in free) > rows[0][
        "tokens_per_s_per_kw_at_cap"]


def test_api_refuses_bad_caps(catalog):
    with pytest.raises(InputError, match="0 < f <= 1"):
        _perf(catalog, "hgx_h200", "chat", 1.5)
    with pytest.raises(InputError, match="0 < f <= 1"):
        _perf(catalog, "hgx_h200", "chat", 0.0)
    with pytest.raises(InputError, match="below the lowest cap"):
        _perf(catalog, "hgx_h200", "chat", 0.3)
    with pytest.raises(InputError, match="power curve"):
        rack_performance(catalog, "hgx_h200", None, "chat", power_cap_frac=0.8)


# ------------------------------------------------------------------- CLI


def _cli(*args, cat=None):
    pre = ["--catalog-dir", str(cat)] if cat else []
    return runner.invoke(app, [*pre, "perf", *args])


@pytest.mark.slow
def test_cli_perf_power_cap_fraction_and_kw():
    r = _cli("--rack", "hgx_h200", "--workload", "chat", "--power-cap", "0.8", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["power_cap_frac"] == 0.8
    assert d["power_kw"] <= d["power_at_cap_kw"]
    assert d["total_tokens_per_joule"] == pytest.approx(
        d["goodput_tokens_per_s"] / (d["power_kw"] * 1e3))
    # the same cap as the rack's kW at it
    r2 = _cli("--rack", "hgx_h200", "--workload", "chat", "--power-cap",
              f"{d['power_at_cap_kw']:.6f}kW", "--json")
    assert r2.exit_code == 0, r2.output
    assert json.loads(r2.stdout)["power_cap_frac"] == pytest.approx(0.8, rel=1e-6)
    r3 = _cli("--rack", "hgx_h200", "--workload", "chat", "--power-cap", "80%")
    assert r3.exit_code == 0, r3.output
    assert "power cap" in r3.output and "kW at the cap" in r3.output


@pytest.mark.parametrize("bad,msg", [("1.2", "0 < f <= 1"), ("0", "0 < f <= 1"),
                                     ("-0.5", "0 < f <= 1"), ("abc", "must be a fraction"),
                                     ("0.3", "below the lowest cap"), ("1kW", "between")])
@pytest.mark.slow
def test_cli_bad_caps_exit_1(bad, msg):
    r = _cli("--rack", "hgx_h200", "--workload", "chat", "--power-cap", bad)
    assert r.exit_code == 1, r.output
    assert msg in r.output and "Traceback" not in r.output


@pytest.mark.slow
def test_cli_power_curve_table_json_png(tmp_path):
    png = tmp_path / "cap.png"
    r = _cli("power-curve", "--rack", "hgx_h200", "--workload", "chat", "--json",
             "--png", str(png))
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert [row["power_cap_frac"] for row in d["rows"]][:3] == [1.0, 0.95, 0.9]
    assert len(d["rows"]) == 11 and d["curve_source"] and d["curve_as_of"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = _cli("power-curve", "--rack", "hgx_h200", "--workload", "chat")
    assert r.exit_code == 0, r.output
    assert "power curve: estimate" in r.output and "0.95" in r.output


@pytest.mark.slow
def test_cli_frontier_power_cap():
    args = ["frontier", "--rack", "hgx_h200", "--model", "llama3_70b", "--input-tokens",
            "1000", "--output-tokens", "500", "--mode", "aggregated", "--json"]
    full = json.loads(_cli(*args).stdout)
    r = _cli(*args, "--power-cap", "0.6")
    assert r.exit_code == 0, r.output
    capped = json.loads(r.stdout)
    assert capped["power_cap_frac"] == 0.6 and "power_cap_frac" not in full
    assert (max(p["output_tokens_per_s_per_gpu"] for p in capped["points"])
            <= max(p["output_tokens_per_s_per_gpu"] for p in full["points"]))
    assert _cli(*args, "--power-cap", "2").exit_code == 1


# ------------------------------------------------------------ bad curve files


def _curves_text(**change) -> str:
    raw = yaml.safe_load((CATALOGS / POWER_CURVES_FILE).read_text())
    entry = next(e for e in raw if e["accelerator"] == "h200_sxm")
    for k, v in change.items():
        if v is None:
            entry.pop(k)
        else:
            entry[k] = v
    return yaml.safe_dump(raw, sort_keys=False)


@pytest.mark.parametrize("change,field,msg", [
    ({"points": [[1.0, 1.0, 1.0], [0.9, 0.9, 1.0], [0.8, 0.95, 1.0]]}, "points[2]",
     "not monotone"),
    ({"points": [[1.0, 1.0, 1.0], [1.2, 0.9, 1.0]]}, "points[1]", "(0, 1]"),
    ({"points": [[1.0, 1.0, 1.0], [0.0, 0.9, 1.0]]}, "points[1]", "(0, 1]"),
    ({"source": None}, "source", "missing"),
    ({"as_of": None}, "as_of", "missing"),
    ({"as_of": "May 2026"}, "as_of", "YYYY-MM"),
])
def test_bad_curve_file_names_file_entry_field(tmp_path, change, field, msg):
    path = tmp_path / POWER_CURVES_FILE
    path.write_text(_curves_text(**change))
    with pytest.raises(InputError) as exc:
        load_power_curves(path)
    (p,) = exc.value.problems
    assert p.entry == "h200_sxm" and p.field == field and msg in p.message
    assert POWER_CURVES_FILE in p.file


def test_cli_bad_curve_file_exits_1(tmp_path):
    cat = tmp_path / "cat"
    cat.mkdir()
    for f in CATALOGS.glob("*.yaml"):
        shutil.copy(f, cat / f.name)
    (cat / POWER_CURVES_FILE).write_text(_curves_text(
        points=[[1.0, 1.0, 1.0], [0.9, 0.8, 1.0], [0.8, 0.85, 1.0]]))
    r = _cli("--rack", "hgx_h200", "--workload", "chat", "--power-cap", "0.8", cat=cat)
    assert r.exit_code == 1, r.output
    assert "power_curves.yaml" in r.output and "h200_sxm" in r.output
    assert "points[2]" in r.output and "Traceback" not in r.output
