"""Schedules, flexible candidates and representative hours (dcplan.planner.profiles)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcplan.planner import profiles as pr

H = 24


def _norm(v):
    v = np.asarray(v, dtype=float)
    return tuple(v / v.mean())


shape = st.lists(st.floats(0.0, 5.0), min_size=H, max_size=H).filter(lambda v: sum(v) > 1e-3)


@settings(max_examples=40, deadline=None)
@given(st.lists(shape, min_size=1, max_size=4),
       st.lists(st.floats(0.0, 10.0), min_size=4, max_size=4))
@pytest.mark.slow
def test_representative_hours_keep_every_peak(shapes, weights):
    """The largest nonnegative combination over the kept hours is the largest over all."""
    sch = [pr.profile_schedule(_norm(v)) for v in shapes]
    kept = pr.representative_hours(sch)
    assert len(kept) <= H

    def load(h):
        return sum(w * s.frac(h) for w, s in zip(weights, sch, strict=False))

    assert max(load(h) for h in kept) == pytest.approx(max(load(h) for h in range(H)),
                                                       abs=1e-9)


def test_dominated_hours_dropped_and_profile_less_plans_have_one_hour():
    day = pr.profile_schedule(_norm([1.0] * 8 + [3.0] * 12 + [1.0] * 4))
    night = pr.profile_schedule(_norm([3.0] * 8 + [1.0] * 12 + [3.0] * 4))
    kept = pr.representative_hours([day, night])
    # hours 0-7 and 20-23 tie (night high, day low), 8-19 tie (day high): two distinct
    # vectors remain
    assert len(kept) == 2
    assert pr.representative_hours([pr.peak_schedule(1.5)]) == (None,)
    assert pr.peak_schedule(1.5).frac(3) == 1.0


def test_hour_groups_envelope_implies_every_member():
    rng = np.random.default_rng(1)
    sch = [pr.profile_schedule(_norm(rng.uniform(0.1, 3, H))) for _ in range(4)]
    groups = pr.hour_groups(sch, max_hours=3)
    assert len(groups) <= 3
    members = sorted(h for g in groups for h in g)
    assert members == sorted(pr.representative_hours(sch))
    for g in groups:
        for s in sch:
            assert s.frac(g) >= max(s.frac(h) for h in g) - 1e-12
    assert pr.hour_label(groups[0], ("weekday",)).startswith("h")


def _served_within_deadline(arrival, served, deadline):
    """Replay first-in-first-out on a circular day: no work waits longer than ``deadline``."""
    a, y = np.asarray(arrival), np.asarray(served)
    assert y.sum() == pytest.approx(a.sum(), rel=1e-6)
    # two days in a row: the backlog of the first settles the circular start
    queue = []
    for day in range(3):
        for h in range(H):
            queue.append([day * H + h, a[h]])
            cap = y[h]
            while cap > 1e-9 and queue:
                take = min(cap, queue[0][1])
                queue[0][1] -= take
                cap -= take
                if queue[0][1] <= 1e-9:
                    queue.pop(0)
            if day == 2:
                for t, left in queue:
                    if left > 1e-6:
                        assert day * H + h - t < deadline, (h, t)


@pytest.mark.parametrize("deadline", [1, 4, 12, 24])
def test_flexible_candidates_meet_the_deadline(deadline):
    arrival = _norm([0.2] * 8 + [2.0] * 10 + [0.5] * 6)
    others = np.asarray(_norm([0.3] * 7 + [1.5] * 14 + [0.8] * 3))
    sch = pr.flexible_schedules(arrival, (1.0,), deadline, others, 0.5)
    assert sch[0].name == "demand" and sch[0].values == pytest.approx(arrival)
    for s in sch:
        assert np.mean(s.values) == pytest.approx(1.0, rel=1e-6)
        _served_within_deadline(arrival, s.values, deadline + 1e-9)
    if deadline == 24:
        names = [s.name for s in sch]
        assert "valley" in names
        valley = sch[names.index("valley")]
        # the valley candidate lowers the peak of the total load
        total = others + 0.5 * np.asarray(valley.values)
        assert total.max() < (others + 0.5 * np.asarray(arrival)).max()
