"""Percentiles and the closed-loop batch found by bracketed root finding.

The percentile is the smallest ``t`` with ``P(X > t) <= q``: checked against the
survival function itself (the ``within_s`` evaluations, no root finding) just below and
just above the answer, on random mixtures (hypothesis), and on hand-computed cases
where the answer sits on a jump of ``P(T > t)``. The closed-loop batch is checked
against Little's law solved by hand.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcplan.perf.latency import (
    QUANTILE_RTOL,
    normal_mixture_quantile,
    normal_mixture_within,
    ttft_quantile,
)
from dcplan.perf.serving import solve_closed_loop

#: Prompt-length node weights as the length distributions give them (ten bins).
BINS = (0.0, 0.002, 0.01, 0.05, 0.2, 0.5, 0.8, 0.95, 0.99, 0.998, 1.0)
W10 = tuple(np.diff(BINS))


def _smallest_within(within, t):
    """``t`` is within the limit at ``t (1 + 1e-9)`` and not at ``t (1 - 1e-9)``."""
    up, down = t * (1 + 1e-9) + 1e-15, t * (1 - 1e-9) - 1e-15
    return bool(within(up)) and not bool(within(down))


@settings(max_examples=50, deadline=None)
@given(st.floats(0.0, 0.99), st.floats(0.0, 0.9), st.floats(0.0, 0.5),
       st.floats(0.01, 3.0), st.floats(0.0, 2.0), st.floats(0.5, 10.0),
       st.floats(50.0, 99.9), st.integers(0, 2**31 - 1))
@pytest.mark.slow
def test_ttft_percentile_is_the_smallest_time_within(rho, slot_p, share, tail, spread, span,
                                                      p, seed):
    # ten prompt-length nodes of random prefill times, queue, slot wait and burst: the
    # root found is where P(T > t) crosses 1 - p/100 (on a jump or between two)
    rng = np.random.default_rng(seed)
    nodes = tuple(np.array(x) for x in np.sort(0.05 + spread * rng.random(10)))
    kw = dict(burst_share=share, burst_span_s=span, slot_p=slot_p, slot_tail_s=1.5)
    t = float(ttft_quantile(0.02, nodes, W10, rho, tail, p, **kw))
    assert np.isfinite(t)

    def within(limit):
        return ttft_quantile(0.02, nodes, W10, rho, tail, p, within_s=limit, **kw)
    assert _smallest_within(within, t)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(1e-4, 1.0), min_size=2, max_size=10), st.floats(50.5, 99.9))
def test_mixture_percentile_is_the_smallest_value_within(sds, p):
    w = [1.0 / len(sds)] * len(sds)
    t = float(normal_mixture_quantile(1.0, sds, w, p))
    assert _smallest_within(lambda lim: normal_mixture_within(1.0, sds, w, p, lim), t)


def test_ttft_percentile_on_a_jump_hand():
    # Two prompts, prefill 0.1 s and 0.5 s, half each; fixed 0.05 s; queue rho 0.2 with
    # mean wait 1 s. Just after 0.15 s the short request's wait has begun and the long
    # one's not: P(T > t) >= 0.5 > 0.4 up to 0.55 s, where the long request's wait
    # begins and P(T > 0.55) = 0.5 * 0.2 exp(-0.4) + 0.5 * 0.2 = 0.167 <= 0.4: the
    # 60th percentile is 0.55 s exactly.
    nodes = (np.array(0.1), np.array(0.5))
    t = float(ttft_quantile(0.05, nodes, (0.5, 0.5), 0.2, 1.0, 60.0))
    assert t == pytest.approx(0.55, rel=1e-13)


def test_ttft_percentile_between_jumps_hand():
    # The same, p90: P(T > 0.55) = 0.167 > 0.1, so the root lies past the last jump,
    # where P(T > t) = 0.5 * 0.2 exp(-(t - 0.15)) + 0.5 * 0.2 exp(-(t - 0.55)) is
    # smooth: 0.1 at e^t = e^0.15 + e^0.55, t = 0.55 + ln(1 + e^-0.4).
    nodes = (np.array(0.1), np.array(0.5))
    t = float(ttft_quantile(0.05, nodes, (0.5, 0.5), 0.2, 1.0, 90.0))
    assert t == pytest.approx(0.55 + np.log(np.exp(-0.4) + 1.0), rel=1e-10)


def test_percentiles_elementwise():
    # an array of points gives each point's own answer (the root finder works on the
    # points still unsettled only)
    rho = np.array([0.0, 0.3, 0.6, 0.9])
    nodes = (np.array(0.1), np.array(0.4))
    kw = dict(slot_p=np.array([0.0, 0.2, 0.4, 0.6]), slot_tail_s=2.0)
    many = ttft_quantile(0.05, nodes, (0.3, 0.7), rho, 1.0, 99.0, **kw)
    for i in range(rho.size):
        one = ttft_quantile(0.05, nodes, (0.3, 0.7), rho[i], 1.0, 99.0,
                            slot_p=kw["slot_p"][i], slot_tail_s=2.0)
        assert float(one) == pytest.approx(float(many[i]), rel=10 * QUANTILE_RTOL)
    assert np.all(np.diff(many) > 0)                # more load, longer TTFT


def _little(tau_s, step_s, batch_max, conc):
    """Closed loop with ``lambda = B / (O TPOT)``: ``g(B) = B + lambda tau - C``."""
    def point_of_batch(b):
        b = np.asarray(b, float)
        pt = SimpleNamespace(requests_per_s=b / step_s, ttft_mean_s=np.full(b.shape, tau_s),
                             burst_share=0.0)
        return pt, b
    return solve_closed_loop(point_of_batch, conc, batch_max)


def test_closed_loop_batch_hand():
    # g(B) = B (1 + tau / T) - C = 0: B = C / (1 + tau / T); tau 0.5 s, T 2 s (one
    # request's decode), C = 10, 100, 1000: B = 8, 80, 800.
    conc = np.array([10.0, 100.0, 1000.0])
    pt, capped = _little(0.5, 2.0, np.array([1e4, 1e4, 1e4]), conc)
    b = pt.requests_per_s * 2.0
    np.testing.assert_allclose(b, [8.0, 80.0, 800.0], rtol=1e-10)
    assert not capped.any()


def test_closed_loop_elementwise():
    # every deployment is solved as if alone, though all are evaluated together
    conc = np.array([3.0, 50.0, 700.0, 0.5])
    pt, _ = _little(1.5, 4.0, np.full(4, 1e4), conc)
    for i in range(conc.size):
        one, _ = _little(1.5, 4.0, np.array([1e4]), conc[i:i + 1])
        assert float(one.requests_per_s[0]) == pytest.approx(float(pt.requests_per_s[i]),
                                                             rel=1e-12)
