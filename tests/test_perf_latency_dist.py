"""Latency distributions: request lengths, admission (slot waits), ramp-up, percentiles.

Hand-computed expectations in the comments; property tests with hypothesis.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcplan.lengths import LengthDist, length_dist
from dcplan.paths import data_dir
from dcplan.perf.benchmarks import load_benchmark_lengths
from dcplan.perf.latency import (
    erlang_c,
    normal_mixture_quantile,
    slot_wait,
    tpot_quantile,
    ttft_quantile,
)

# ----------------------------------------------------------------- admission


def test_erlang_c_hand_values():
    # c = 1: M/M/1, P(wait) = a = 0.5.
    assert float(erlang_c(1, 0.5)) == pytest.approx(0.5, rel=1e-9)
    # c = 2, a = 1: B = (1/2) / (1 + 1 + 1/2) = 0.2; C = 2 * 0.2 / (2 - 1 * 0.8) = 1/3.
    assert float(erlang_c(2, 1.0)) == pytest.approx(1.0 / 3.0, rel=1e-9)
    # saturated and idle
    assert float(erlang_c(4, 4.0)) == 1.0
    assert float(erlang_c(4, 0.0)) == 0.0


def test_ttft_with_admission_cap_closed_form():
    # Two running-request slots, one busy on average (a = 1), each held 10 s: Erlang C
    # gives P(wait) = 1/3, and wait | wait ~ Exp(mean 10 / (2 - 1) = 10 s) (M/M/c).
    p, tail = slot_wait(2, 1.0, 10.0, 1.0, 1.0)
    assert float(p) == pytest.approx(1 / 3, rel=1e-9)
    assert float(tail) == pytest.approx(10.0, rel=1e-12)
    # No prefill queue (rho 0), fixed 0.1 s, prefill 0.2 s:
    # P(TTFT > t) = 1/3 exp(-(t - 0.3) / 10), so p99 = 0.3 + 10 ln(100 / 3) = 35.366 s.
    t99 = float(ttft_quantile(0.1, (np.array(0.2),), (1.0,), 0.0, 1.0, 99.0,
                              slot_p=p, slot_tail_s=tail))
    assert t99 == pytest.approx(0.3 + 10.0 * math.log(100.0 / 3.0), rel=1e-6)
    assert t99 == pytest.approx(35.366, abs=1e-3)
    # The median: 1/3 of requests wait, so the median request does not: 0.3 s.
    assert float(ttft_quantile(0.1, (np.array(0.2),), (1.0,), 0.0, 1.0, 50.0,
                               slot_p=p, slot_tail_s=tail)) == pytest.approx(0.3, abs=1e-6)


def test_ttft_prefill_queue_and_slot_wait_add():
    # Prefill queue rho 0.5 with tail mean 1 s, slot wait p 0.5 with tail mean 2 s,
    # no fixed part, no prefill: P(W1 + W2 > x) = 0.25 e^{-x} + 0.25 e^{-x/2}
    # + 0.25 (2 e^{-x/2} - e^{-x}) / (2 - 1) = 0.75 e^{-x/2}; p99 -> x = 2 ln 75 = 8.635.
    t = float(ttft_quantile(0.0, (np.array(0.0),), (1.0,), 0.5, 1.0, 99.0,
                            slot_p=0.5, slot_tail_s=2.0))
    assert t == pytest.approx(2.0 * math.log(75.0), rel=1e-6)


def test_ttft_ramp_up_burst():
    # 1 request in 10 meets the opening burst, drained in 10 s (uniform wait 0..10 s);
    # no steady-state queue: P(TTFT > t) = 0.1 (1 - t / 10) for t >= 0. p99 -> t = 9 s.
    t = float(ttft_quantile(0.0, (np.array(0.0),), (1.0,), 0.0, 1.0, 99.0,
                            burst_share=0.1, burst_span_s=10.0))
    assert t == pytest.approx(9.0, rel=1e-6)
    # the median is untouched (0.1 < 0.5)
    assert float(ttft_quantile(0.0, (np.array(0.0),), (1.0,), 0.0, 1.0, 50.0,
                               burst_share=0.1, burst_span_s=10.0)) == pytest.approx(0, abs=1e-9)


def test_ttft_long_prompt_tail():
    # Two prompt lengths, equal weight, prefills 0.1 s and 1.1 s, no queue, fixed 0:
    # P(TTFT > t) = 0.5 for t in [0.1, 1.1); p99 = 1.1 s; p40 = 0.1 s.
    nodes = (np.array(0.1), np.array(1.1))
    assert float(ttft_quantile(0.0, nodes, (0.5, 0.5), 0.0, 1.0, 99.0)) == pytest.approx(
        1.1, abs=1e-6)
    assert float(ttft_quantile(0.0, nodes, (0.5, 0.5), 0.0, 1.0, 40.0)) == pytest.approx(
        0.1, abs=1e-6)


# ------------------------------------------------------------------- TPOT


def test_mixture_quantile_hand():
    # Half the requests spread N(0, 1), half not at all: 0.5 Q(x) = 0.01, Q(x) = 0.02,
    # x = 2.0537 (normal table).
    q = float(normal_mixture_quantile(0.0, [1.0, 0.0], [0.5, 0.5], 99.0))
    assert q == pytest.approx(2.0537, abs=1e-3)


def test_p99_tpot_from_length_distribution_hand():
    # Outputs: half of 0.25 O, half of 1.75 O (mean O = 100 tokens); TPOT mean 20 ms;
    # prefill interruptions 0.1 s at 2 requests/s, no base spread:
    # sd^2(x) = 0.1^2 * 2 * 0.02 / (100 x) = 4e-6 / x -> sd = 4 ms at x = 0.25,
    # 1.512 ms at x = 1.75. The long requests barely reach p99, so the p99 is close to
    # that of the short half alone: 0.5 Q(d / 4 ms) = 0.01 -> d = 2.0537 * 4 ms.
    nodes = (np.array([0.25, 1.75]), np.array([0.5, 0.5]))
    t = float(tpot_quantile(0.02, 0.1, 2.0, 100.0, 0.0, 99.0, nodes))
    assert t == pytest.approx(0.02 + 2.0537 * 0.004, rel=2e-3)
    # Every request of the mean length: 0.02 + 2.3263 * 2 ms = 24.65 ms (lower).
    fixed = float(tpot_quantile(0.02, 0.1, 2.0, 100.0, 0.0, 99.0))
    assert fixed == pytest.approx(0.02 + 2.3263 * 0.002, rel=1e-4)
    assert t > fixed


def test_p99_tpot_lognormal_matches_simulation():
    # The model's own assumptions sampled: O x with x lognormal (CV 1), TPOT | x normal.
    rng = np.random.default_rng(7)
    dist = LengthDist("lognormal", input_cv=0.5, output_cv=1.0)
    s2 = math.log(2.0)
    x = rng.lognormal(-s2 / 2, math.sqrt(s2), 400_000)
    sd = np.sqrt((0.05 * 0.02) ** 2 + 0.1 ** 2 * 2.0 * 0.02 / (100 * x))
    sim = np.percentile(0.02 + sd * rng.standard_normal(x.size), 99)
    model = float(tpot_quantile(0.02, 0.1, 2.0, 100.0, 0.05, 99.0, dist.nodes("output")))
    assert model == pytest.approx(sim, rel=0.03)


# ------------------------------------------------------------ distributions


def test_uniform_inferencex_nodes():
    # min_frac 0.8 of nominal: mean 0.9 nominal; as ratio to the mean 0.889..1.111;
    # CV (1 - 0.8) / (sqrt(3) 1.8) = 0.06415.
    d = LengthDist("uniform", 0.8)
    x, w = d.nodes("output")
    assert float(np.sum(w * x)) == pytest.approx(1.0, rel=1e-12)
    assert x.min() >= 0.8 / 0.9 - 1e-9 and x.max() <= 1.0 / 0.9 + 1e-9
    assert d.cv("input") == pytest.approx(0.06415, abs=1e-5)


def test_shipped_benchmark_lengths_agree_with_defaults():
    bl = load_benchmark_lengths(data_dir("catalogs") / "measurements"
                                / "length_distributions.yaml")
    # InferenceX: uniform 0.8-1.0, whose mean (1 + 0.8) / 2 = 0.9 is the defaults' frac
    assert bl.serving_rows.kind == "uniform"
    assert (1 + bl.serving_rows.min_frac) / 2 == pytest.approx(0.9)
    assert bl.burst_share == pytest.approx(0.1)
    assert bl.for_phase_model("llama2_70b").kind == "lognormal"
    assert bl.for_phase_model("no_such_model").is_fixed


def test_length_dist_rejects_bad_input():
    with pytest.raises(ValueError):
        length_dist({"kind": "pareto"})
    with pytest.raises(ValueError):
        length_dist({"kind": "uniform", "min_frac": 0.0})
    with pytest.raises(ValueError):
        length_dist({"kind": "lognormal", "output_cv": -1})


@settings(max_examples=60, deadline=None)
@given(st.floats(0.05, 1.0), st.floats(0.0, 3.0), st.floats(0.0, 3.0))
def test_nodes_have_mean_one(min_frac, icv, ocv):
    for d in (LengthDist("uniform", min_frac), LengthDist("lognormal", 1.0, icv, ocv)):
        for which in ("input", "output"):
            x, w = d.nodes(which)
            assert float(np.sum(w)) == pytest.approx(1.0)
            assert float(np.sum(w * x)) == pytest.approx(1.0, rel=1e-9)
            assert np.all(x > 0)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.0, 0.95), st.floats(0.0, 0.9), st.floats(0.0, 0.5),
       st.floats(0.0, 1.0), st.floats(50.0, 99.9), st.floats(50.0, 99.9))
@pytest.mark.slow
def test_ttft_quantile_monotone_and_bounded(rho, slot_p, share, s1, p_a, p_b):
    lo_p, hi_p = sorted((p_a, p_b))
    nodes = (np.array(0.1), np.array(0.1 + s1))
    kw = dict(burst_share=share, burst_span_s=5.0, slot_p=slot_p, slot_tail_s=2.0)
    t_lo = float(ttft_quantile(0.05, nodes, (0.5, 0.5), rho, 1.0, lo_p, **kw))
    t_hi = float(ttft_quantile(0.05, nodes, (0.5, 0.5), rho, 1.0, hi_p, **kw))
    assert 0.15 - 1e-9 <= t_lo <= t_hi + 1e-9


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(1e-4, 1.0), min_size=2, max_size=6), st.floats(50.0, 99.9))
def test_mixture_quantile_between_components(sds, p):
    w = [1.0 / len(sds)] * len(sds)
    q = float(normal_mixture_quantile(1.0, sds, w, p))
    lo = float(normal_mixture_quantile(1.0, [min(sds)], [1.0], p))
    hi = float(normal_mixture_quantile(1.0, [max(sds)], [1.0], p))
    assert lo - 1e-9 <= q <= hi + 1e-9
