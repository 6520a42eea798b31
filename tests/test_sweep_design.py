"""Sample designs: sizes, strata, trajectories, weights, reproducibility, value mapping."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcplan.sweep.design import TAIL, make_design, runs_for, value_at
from dcplan.sweep.spec import Parameter, SweepSpec


def spec(method: str, params: list[dict], samples: int | None = None, seed: int = 3,
         **kw) -> SweepSpec:
    return SweepSpec(kind="dcplan_sweep", name="t", base="x.yaml", method=method,
                     samples=samples, seed=seed,
                     parameters=[Parameter(name=f"p{i}", path=f"a.b{i}", **p)
                                 for i, p in enumerate(params)], **kw)


U = {"distribution": "uniform", "low": 0.0, "high": 10.0}


def test_grid_is_every_combination_weighted_by_the_choices():
    s = spec("grid", [{"grid": [1, 2, 3]},
                      {"distribution": "choice", "values": ["a", "b"], "weights": [0.8, 0.2]}])
    d = make_design(s)
    assert d.size == 6 == runs_for(s, None)
    assert {(v["p0"], v["p1"]) for v in d.values} == {(x, y) for x in (1, 2, 3)
                                                      for y in ("a", "b")}
    w = {(v["p0"], v["p1"]): w for v, w in zip(d.values, d.weights, strict=True)}
    assert w[1, "a"] == pytest.approx(0.8 / 3) and w[3, "b"] == pytest.approx(0.2 / 3)
    assert d.weights.sum() == pytest.approx(1.0)


def test_latin_hypercube_puts_one_sample_in_each_stratum():
    n = 20
    d = make_design(spec("lhs", [U, U, U], samples=n))
    assert d.size == n
    for j in range(3):
        strata = np.floor(d.unit[:, j] * n).astype(int)
        assert sorted(strata) == list(range(n))
        # and the values follow: one in each tenth-wide slice of [0, 10] per 2 samples
        vals = np.array([v[f"p{j}"] for v in d.values])
        assert sorted(np.floor(vals / 10 * n).astype(int)) == list(range(n))


def test_random_is_not_stratified_but_reproducible():
    a = make_design(spec("random", [U, U], samples=50, seed=11))
    b = make_design(spec("random", [U, U], samples=50, seed=11))
    c = make_design(spec("random", [U, U], samples=50, seed=12))
    assert a.values == b.values and a.digest() == b.digest()
    assert a.values != c.values and a.digest() != c.digest()


@pytest.mark.parametrize("method, n", [("lhs", 16), ("morris", 24), ("sobol", 48),
                                       ("random", 9)])
@pytest.mark.slow
def test_same_seed_same_design(method, n):
    params = [U, {"distribution": "normal", "mean": 1.0, "sd": 0.1},
              {"distribution": "choice", "values": [0, 1, 2]}]
    a, b = (make_design(spec(method, params, samples=n, seed=5)) for _ in range(2))
    assert a.values == b.values
    assert make_design(spec(method, params, samples=n, seed=6)).values != a.values


def test_morris_trajectories_move_one_parameter_at_a_time():
    d_par, r, levels = 4, 5, 4
    s = spec("morris", [U] * d_par, samples=r * (d_par + 1) + 2, levels=levels)
    d = make_design(s)
    assert d.size == r * (d_par + 1)  # rounded down to whole trajectories
    assert list(d.blocks) == [i for i in range(r) for _ in range(d_par + 1)]
    quantiles = {(i + 0.5) / levels for i in range(levels)}
    assert set(np.round(d.unit.ravel(), 12)) <= {round(q, 12) for q in quantiles}
    for t in range(r):
        block = d.unit[t * (d_par + 1):(t + 1) * (d_par + 1)]
        steps = np.abs(np.diff(block, axis=0)) > 1e-12
        assert (steps.sum(axis=1) == 1).all()  # one parameter per step
        assert (steps.sum(axis=0) == 1).all()  # each parameter once


def test_sobol_design_has_d_plus_2_rows_per_base_sample():
    d_par = 3
    s = spec("sobol", [U] * d_par, samples=50)
    d = make_design(s)
    base = 8  # the largest power of two with base * (d + 2) <= 50
    assert d.size == base * (d_par + 2) == runs_for(s, 50)
    assert list(d.blocks) == [i for i in range(base) for _ in range(d_par + 2)]
    # row 0 of a block is A, the last is B, row 1 + j is A with column j from B
    blk = d.unit[: d_par + 2]
    for j in range(d_par):
        expect = blk[0].copy()
        expect[j] = blk[-1][j]
        assert np.allclose(blk[1 + j], expect)


def test_values_follow_the_distribution():
    p = Parameter(name="x", path="a", distribution="triangular", low=1.0, mode=2.0, high=5.0)
    assert value_at(p, 0.0) == pytest.approx(1.0) and value_at(p, 1.0) == pytest.approx(5.0)
    # cdf at the mode is (mode - low) / (high - low)
    assert value_at(p, 0.25) == pytest.approx(2.0)
    n = Parameter(name="x", path="a", distribution="normal", mean=10.0, sd=2.0)
    assert value_at(n, 0.5) == pytest.approx(10.0)
    assert value_at(n, 0.0) == pytest.approx(10.0 + 2.0 * -3.719, abs=1e-3)  # 1e-4 cut
    assert TAIL == 1e-4
    cut = Parameter(name="x", path="a", distribution="normal", mean=10.0, sd=2.0, low=9.0,
                    high=10.0)
    assert value_at(cut, 0.0) == pytest.approx(9.0) and value_at(cut, 1.0) == pytest.approx(10)
    ln = Parameter(name="x", path="a", distribution="lognormal", median=3.0, sigma=0.5)
    assert value_at(ln, 0.5) == pytest.approx(3.0)
    c = Parameter(name="x", path="a", distribution="choice", values=["a", "b", "c"],
                  weights=[0.2, 0.5, 0.3])
    assert [value_at(c, u) for u in (0.0, 0.19, 0.2, 0.69, 0.7, 1.0)] == \
        ["a", "a", "b", "b", "c", "c"]
    i = Parameter(name="x", path="a", distribution="uniform", low=0.0, high=3.0,
                  integer=True)
    assert {value_at(i, u) for u in np.linspace(0, 1, 50)} == {0, 1, 2, 3}


def test_choice_frequencies_match_the_weights_in_a_large_lhs():
    d = make_design(spec("lhs", [{"distribution": "choice", "values": [0, 1, 2],
                                  "weights": [0.5, 0.3, 0.2]}], samples=1000))
    vals = np.array([v["p0"] for v in d.values])
    # stratified: the counts are exact to one sample
    assert [abs((vals == k).sum() - 1000 * w) <= 1 for k, w in ((0, .5), (1, .3), (2, .2))] \
        == [True] * 3


@settings(max_examples=60, deadline=None)
@given(lo=st.floats(-1e6, 1e6), width=st.floats(1e-3, 1e6), u=st.floats(0, 1))
def test_uniform_values_stay_in_range_and_grow_with_u(lo, width, u):
    p = Parameter(name="x", path="a", distribution="uniform", low=lo, high=lo + width)
    v = value_at(p, u)
    assert lo - 1e-9 * max(1, abs(lo)) <= v <= lo + width + 1e-9 * max(1, abs(lo + width))
    assert value_at(p, min(1.0, u + 0.1)) >= v
