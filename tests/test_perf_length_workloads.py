"""Workload length distributions wired into the search (rack_performance, frontier, CLI).

Hand-computed expectations in the comments.
"""

from __future__ import annotations

import json
import math
import shutil
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import dcplan.lengths as lengths_mod
from dcplan.catalog import load_catalog
from dcplan.cli import app
from dcplan.errors import InputError
from dcplan.lengths import FIXED, LengthDist, length_dist, parse_length_option
from dcplan.paths import data_dir
from dcplan.perf import frontier as perf_frontier
from dcplan.perf import goodput
from dcplan.perf.goodput import (
    best_rate_within,
    take_point,
)
from dcplan.perf.params import load_perf_inputs
from dcplan.perf.serving import Point

#: The shipped performance defaults and calibration (the fixture catalogs have none of
#: their own); the model reads no file itself.
SHIPPED_PERF = load_perf_inputs()
PERF_KW = {"defaults": SHIPPED_PERF.defaults, "calibration": SHIPPED_PERF.calibration}
rack_performance = partial(goodput.rack_performance, **PERF_KW)
workload_performance = partial(goodput.workload_performance, **PERF_KW)
frontier = partial(perf_frontier.frontier, **PERF_KW)

FIX = Path(__file__).parent / "fixtures" / "perf"
runner = CliRunner()


@pytest.fixture(scope="module")
def shipped():
    return load_catalog(None)


@pytest.fixture(scope="module")
def small():
    return load_catalog(FIX / "catalog")


# ------------------------------------------------------- two-point distribution

#: Probability bins that give a distribution two nodes, at u = 0.25 and 0.75.
TWO_BINS = (0.0, 0.5, 1.0)


def two_point_lognormal() -> LengthDist:
    """A lognormal whose two nodes (TWO_BINS) are 0.25 and 1.75 of the mean.

    Nodes exp(-s^2/2 +- s z75), z75 = 0.67449: their ratio is exp(2 s z75) = 7, so
    s = ln 7 / (2 z75) and CV = sqrt(exp(s^2) - 1); normalised to mean 1: 2/8, 14/8.
    """
    s = math.log(7.0) / (2.0 * 0.6744897501960817)
    return LengthDist("lognormal", input_cv=0.0, output_cv=math.sqrt(math.exp(s * s) - 1.0))


def test_two_point_nodes(monkeypatch):
    monkeypatch.setattr(lengths_mod, "LENGTH_BINS", TWO_BINS)
    x, w = two_point_lognormal().nodes("output")
    assert x == pytest.approx([0.25, 1.75], rel=1e-9)
    assert w == pytest.approx([0.5, 0.5])


def test_p99_tpot_of_a_workload_distribution_through_the_search_path(monkeypatch):
    # The colleague's hand case (tests/test_perf_latency_dist.py): outputs half of
    # 0.25 O, half of 1.75 O (O = 100 tokens); mean TPOT 20 ms; prefills of 0.1 s
    # interrupt at 2 requests/s; no base spread. sd(x) = sqrt(0.1^2 * 2 * 0.02 /
    # (100 x)) = 4 ms at x = 0.25: p99 = 20 ms + 2.0537 * 4 ms = 28.21 ms.
    # Here the nodes come from a workload's distribution, and the percentile is
    # taken the way _aggregated takes it: a Point of layouts x batches, the candidate
    # points taken out (take_point), then Point.tpot_quantile.
    monkeypatch.setattr(lengths_mod, "LENGTH_BINS", TWO_BINS)
    wl = _workload(length_distribution=two_point_lognormal())
    nodes = goodput.workload_lengths(wl).nodes("output")
    z = np.zeros((2, 3))
    pt = Point(batch=z + 8, requests_per_s=z + 2.0, gpus=z + 1, tpot_mean_s=z + 0.02,
               ttft_mean_s=z, utilisation=z + 0.2, compute_util=z, memory_util=z,
               prefill_s=z + 0.1, prefill_alone_s=z + 0.1, token_s=z + 0.02, step_s=z + 0.02,
               arrival_cv2=z + 1, service_cv2=1.0, tokens_per_step=z + 1,
               kv_transfer_s=z, interrupt_s=z + 0.1, output_tokens=z + 100.0, parts={},
               output_nodes=nodes)
    sub = take_point(pt, z.shape, np.array([1]), np.array([2]))
    p99 = float(sub.tpot_quantile(99.0, 0.0)[0])
    assert p99 == pytest.approx(0.02 + 2.0537 * 0.004, rel=2e-3)
    # fixed lengths: 20 ms + 2.3263 * 2 ms = 24.65 ms
    fixed = Point(**{**pt.__dict__, "output_nodes": None})
    assert float(take_point(fixed, z.shape, np.array([1]), np.array([2])).tpot_quantile(
        99.0, 0.0)[0]) == pytest.approx(0.02 + 2.3263 * 0.002, rel=1e-4)


def test_rack_performance_reports_the_mixture_percentile(small, monkeypatch):
    # rack_performance's reported p99 TPOT is the mixture percentile of the operating
    # point it chose: recompute it from serving.aggregated at that layout and batch.
    from dcplan.perf.goodput import Layout, _traffic, build_setup
    from dcplan.perf.serving import Instance, aggregated

    monkeypatch.setattr(lengths_mod, "LENGTH_BINS", TWO_BINS)
    monkeypatch.setattr(goodput, "_CACHE", {})
    wl = _workload(small, "chat", length_distribution=two_point_lognormal())
    perf = workload_performance(small, "track8", None, wl)
    assert perf.fits
    su = build_setup(small, "track8", None, wl, **PERF_KW)
    lay = Layout(tp=perf.attention_tp)
    inst = Instance(su.hw, lay.parallel(), su.shape, su.physics, su.serving)
    # the search's batch is real (a time-average), reported rounded: the reported p99
    # TPOT lies between the mixture percentiles half a sequence either side of it (TPOT
    # rises with the batch)
    around = np.array([perf.batch - 0.5, perf.batch + 0.5])
    pt = aggregated(inst, _traffic(su, 1.0), around)
    lo, hi = pt.tpot_quantile(wl.percentile, su.physics.tpot_cv_frac) * 1e3
    assert lo < perf.tpot_ms <= hi
    assert hi / lo < 1.01                     # so the bracket is narrow
    # and the spread is wider than with every request of the mean length, even at the
    # larger batch
    fixed = aggregated(inst, _traffic(su.__class__(**{**su.__dict__, "workload": _workload(
        small, "chat")}), 1.0), around)
    assert (perf.tpot_ms > float(fixed.tpot_quantile(wl.percentile,
                                                     su.physics.tpot_cv_frac)[1]) * 1e3)


# --------------------------------------------------------------- the workload field


def _workload(catalog=None, wid: str = "chat", **changes):
    from dcplan.schema import Workload

    if catalog is None:
        base = dict(id="hand", name="hand", model="m", input_tokens_mean=1000,
                    output_tokens_mean=100, cache_hit_frac=0.0, precision="fp8", ttft_s=1.0,
                    tpot_ms=50.0, source="hand-made", as_of="2026-01")
    else:
        base = catalog.get("workloads", wid).model_dump()
    return Workload.model_validate({**base, **changes})


def test_absent_field_is_fixed_and_equal_to_explicit_fixed(small):
    goodput._CACHE.clear()
    plain = workload_performance(small, "track8", None, _workload(small, "chat"))
    explicit = workload_performance(small, "track8", None,
                                    _workload(small, "chat", length_distribution={"kind": "fixed"}))
    assert _workload(small, "chat").length_distribution is None
    assert goodput.workload_lengths(_workload(small, "chat")) == FIXED
    assert plain.goodput_tokens_per_s == pytest.approx(explicit.goodput_tokens_per_s, rel=1e-12)
    assert plain.tpot_ms == pytest.approx(explicit.tpot_ms, rel=1e-12)


def test_field_round_trips_with_only_its_kinds_fields():
    wl = _workload(length_distribution={"kind": "lognormal", "input_cv": 0.5, "output_cv": 1})
    assert wl.length_distribution == LengthDist("lognormal", 1.0, 0.5, 1.0)
    dumped = wl.model_dump(mode="json")["length_distribution"]
    assert dumped == {"kind": "lognormal", "input_cv": 0.5, "output_cv": 1.0}
    assert _workload(length_distribution=dumped).length_distribution == wl.length_distribution


def test_bad_fields_are_named_all_at_once(tmp_path):
    cat = tmp_path / "catalog"
    shutil.copytree(data_dir("catalogs"), cat)
    text = (cat / "workloads.yaml").read_text()
    text = text.replace("  length_distribution: {kind: lognormal, input_cv: 0.3, output_cv: 0.6}",
                        "  length_distribution: {kind: lognormal, input_cv: 7, outptu_cv: 0.6}")
    text = text.replace("  length_distribution: {kind: lognormal, input_cv: 0.5, output_cv: 0.5}",
                        "  length_distribution: {kind: pareto, alpha: 1.2}")
    (cat / "workloads.yaml").write_text(text)
    with pytest.raises(InputError) as info:
        load_catalog(cat)
    probs = [p for p in info.value.problems if p.field == "length_distribution"]
    by_entry = {p.entry: p for p in probs}
    assert set(by_entry) == {"rag", "batch"}
    rag, batch = by_entry["rag"], by_entry["batch"]
    assert rag.file.endswith("workloads.yaml") and rag.line
    # every problem of the entry, each with its fix
    assert "input_cv 7: expected 0 <= input_cv <= 5" in rag.message
    assert "unknown field 'outptu_cv': did you mean 'output_cv'? Rename it" in rag.message
    assert "kind 'pareto' is not known: write fixed, uniform (with min_frac) or lognormal" \
        in batch.message


@pytest.mark.parametrize(("spec", "text"), [
    ({"kind": "uniform", "min_frac": 0.8, "input_cv": 0.5},
     "'input_cv' does not apply to kind uniform (it takes min_frac); remove it"),
    ({"kind": "uniform", "min_frac": 0}, "min_frac 0: expected 0 < min_frac <= 1"),
    ({"kind": "lognormal", "output_cv": True}, "output_cv True is not a number"),
])
def test_length_dist_messages(spec, text):
    with pytest.raises(ValueError, match=None) as info:
        length_dist(spec)
    assert text in str(info.value)


def test_shipped_workloads_carry_a_distribution_with_its_note(shipped):
    from dcplan.yamlio import read_yaml

    raw = {e["id"]: e for e in read_yaml(data_dir("catalogs") / "workloads.yaml")}
    for wid, wl in shipped.entries["workloads"].items():
        assert wl.length_distribution is not None, wid
        assert "length_distribution" in wl.estimates, wid
        assert raw[wid]["source"] and raw[wid]["as_of"]
    # InferenceX-shaped workloads take the client's published uniform 0.8-1.0
    assert shipped.get("workloads", "reasoning_r1").length_distribution == \
        LengthDist("uniform", 0.8)


def test_parse_length_option():
    assert parse_length_option("fixed") == FIXED
    assert parse_length_option("uniform:0.8") == LengthDist("uniform", 0.8)
    assert parse_length_option("lognormal:0.8") == LengthDist("lognormal", 1.0, 0.8, 0.8)
    assert parse_length_option("lognormal:0.5,1.0") == LengthDist("lognormal", 1.0, 0.5, 1.0)
    for bad in ("pareto:1", "uniform", "lognormal:1,2,3", "uniform:1.5"):
        with pytest.raises(ValueError):
            parse_length_option(bad)


# --------------------------------------------------- search: admission and pairing


def test_open_loop_never_runs_at_the_slot_cap(shipped):
    # Poisson arrivals into bmax running-request slots: at b = bmax every request waits
    # (Erlang C = 1, an unbounded wait), so the search stays below the cap.
    for wid in ("chat", "rag"):
        p = rack_performance(shipped, "hgx_h200", None, wid)
        assert p.fits and p.batch < p.max_batch, wid


def test_disaggregated_meets_its_slo_with_the_new_percentiles(shipped):
    for rack in ("hgx_h200", "gb200_nvl72"):
        p = rack_performance(shipped, rack, None, "chat_disagg")
        wl = shipped.get("workloads", "chat_disagg")
        assert p.fits
        assert p.ttft_s <= wl.ttft_s + 1e-9 and p.tpot_ms <= wl.tpot_ms + 1e-9
        assert p.ttft_median_s <= p.ttft_s and p.tpot_median_ms <= p.tpot_ms


def test_best_rate_within_hand():
    # prefill points (TTFT, rate): (0.5, 1), (1.0, 2), (2.0, 4), (0.7, 1.5), (1.5, 3), (3, 5)
    t = np.array([[0.5, 1.0, 2.0], [0.7, 1.5, 3.0]])
    r = np.array([[1.0, 2.0, 4.0], [1.5, 3.0, 5.0]])
    rate, idx = best_rate_within(t, r, np.array([0.4, 0.6, 0.8, 1.6, 10.0]), index=True)
    assert rate.tolist() == [-1.0, 1.0, 1.5, 3.0, 5.0]
    assert idx[1:].tolist() == [0, 3, 4, 5]


# ------------------------------------------------------------------ frontier


def test_frontier_ttft_is_per_point_and_bounded(shipped):
    # Before: every disaggregated point took the prefill pool at 99.5% utilisation and
    # showed one median TTFT (~21.6 s here). Now each decode point has its own prefill
    # point, whose median TTFT stays within 10% of the point's median end-to-end time:
    # ttft <= 0.1 / 0.9 * 1024 tokens / interactivity.
    fr = frontier(shipped, "gb200_nvl72", "deepseek_r1", 8192, 1024, "fp4", "mtp")
    dis = [p for p in fr.points if p["mode"] == "disaggregated"]
    assert len(dis) >= 5
    ttfts = [p["median_ttft_s"] for p in dis]
    assert len({round(t, 3) for t in ttfts}) > len(dis) // 2
    for p in dis:
        bound = 0.1 / 0.9 * 1024 / p["tokens_per_s_per_user"]
        assert p["median_ttft_s"] <= bound * (1 + 1e-6)
    # below the one TTFT every point showed before (21.6 s): the slowest points' bounds
    # are about 12 s (0.1 / 0.9 x 1,024 tokens at ~9.4 tokens/s per user since the
    # seventh refit; ~11 tokens/s and 10 s before), most points' far lower
    assert max(ttfts) < 0.6 * 21.6 and float(np.median(ttfts)) < 0.5 * 21.6
    assert fr.as_dict()["ttft_bound"].startswith("median TTFT at most 10%")


def test_frontier_with_a_ttft_limit_meets_it(shipped):
    fr = frontier(shipped, "hgx_h200", "llama3_70b", 1024, 1024, "fp8", ttft_s=0.5,
                  percentile=99.0, lengths=LengthDist("lognormal", 1.0, 0.8, 0.8))
    assert fr.points and fr.as_dict()["length_distribution"]["kind"] == "lognormal"
    # medians of points whose p99 meets 0.5 s
    assert all(p["median_ttft_s"] <= 0.5 for p in fr.points)


# ----------------------------------------------------------------------- CLI


def _cli(*args):
    return runner.invoke(app, ["--catalog-dir", str(FIX / "catalog"), "perf", *args])


@pytest.mark.slow
def test_cli_length_dist_is_shown_and_applied():
    r = _cli("--rack", "track8", "--workload", "chat", "--length-dist", "lognormal:0.5,1.0",
             "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["length_distribution"]["kind"] == "lognormal"
    assert d["length_distribution"]["basis"] == "--length-dist"
    assert d["workload"]["length_distribution"] == {"kind": "lognormal", "input_cv": 0.5,
                                                   "output_cv": 1.0}
    r = _cli("--rack", "track8", "--workload", "chat")
    assert r.exit_code == 0, r.output
    assert "request lengths" in r.output and "fixed" in r.output
    r = _cli("--rack", "track8", "--workload", "chat", "--length-dist", "uniform:0.8")
    assert "uniform (0.8-1 of the longest" in r.output and "--length-dist" in r.output


def test_cli_bad_length_dist_exits_2():
    r = _cli("--rack", "track8", "--workload", "chat", "--length-dist", "pareto:2")
    assert r.exit_code == 2
    assert "--length-dist" in r.output and "uniform:MIN_FRAC" in r.output
