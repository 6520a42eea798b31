"""Sample designs: which parameter values each plan of a sweep gets.

Every method first draws points in the unit hypercube (one coordinate per parameter,
``u`` in [0, 1]) and then maps each coordinate to the parameter's value through the
inverse of its distribution (:func:`value_at`):

* ``random``: independent uniform points (:func:`numpy.random.default_rng`);
* ``lhs``: a Latin hypercube (:class:`scipy.stats.qmc.LatinHypercube`), one point in
  each of ``n`` equal-probability strata of every parameter;
* ``morris``: SALib's elementary-effects trajectories on ``levels`` levels; level ``i``
  of ``p`` is the quantile ``(i + 0.5) / p``, so that unbounded distributions get finite
  values and the levels are equally likely;
* ``sobol``: SALib's Saltelli design for first-order and total indices
  (``n (d + 2)`` points from a scrambled Sobol' sequence, ``n`` a power of two);
* ``grid``: every combination of the parameters' grids or choices, weighted by the
  product of the choices' weights.

Unbounded distributions (normal and lognormal without ``low``/``high``) are cut at their
:data:`TAIL` and ``1 - TAIL`` quantiles.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from dcplan.errors import InputError
from dcplan.sweep.spec import (
    DEFAULT_LEVELS,
    Parameter,
    SweepSpec,
    plans_limit_problem,
    runs_for,
)

#: Quantile at which unbounded distributions are cut [-].
TAIL = 1e-4


@dataclass
class Design:
    """The samples of a sweep.

    Attributes
    ----------
    method : str
    names : list of str
        Parameter names (columns of ``unit``).
    unit : ndarray
        Points in the unit hypercube, one row per sample [-].
    values : list of dict
        Parameter name -> value, one per sample (sample ``i`` has id ``i + 1``).
    weights : ndarray
        Probability weight of each sample (1 / n except for weighted grids) [-].
    blocks : ndarray
        Morris trajectory or Sobol base sample of each row (0-based; for other methods
        the row number): the rows an index needs together.
    problem : dict
        SALib problem definition (names, unit bounds).
    levels : int or None
        Morris levels.
    requested : int or None
        The sample count asked for (morris and sobol round it down).
    """

    method: str
    names: list[str]
    unit: np.ndarray
    values: list[dict[str, Any]]
    weights: np.ndarray
    blocks: np.ndarray
    problem: dict[str, Any] = field(default_factory=dict)
    levels: int | None = None
    requested: int | None = None

    @property
    def size(self) -> int:
        """Number of samples."""
        return len(self.values)

    @property
    def ids(self) -> list[int]:
        """Sample ids, 1..size."""
        return list(range(1, self.size + 1))

    def digest(self) -> str:
        """SHA-256 of the values of every sample (same digest, same sweep)."""
        return hashlib.sha256(json.dumps([self.method, self.names, self.values],
                                         default=str).encode()).hexdigest()


def _dist(p: Parameter):
    """Frozen scipy distribution of a continuous parameter, and its [cdf_lo, cdf_hi]."""
    d = p.distribution
    if d == "uniform":
        return stats.uniform(loc=p.low, scale=p.high - p.low), 0.0, 1.0
    if d == "triangular":
        c = (p.mode - p.low) / (p.high - p.low)
        return stats.triang(c=c, loc=p.low, scale=p.high - p.low), 0.0, 1.0
    if d == "normal":
        dist = stats.norm(loc=p.mean, scale=p.sd)
    elif d == "lognormal":
        dist = stats.lognorm(s=p.sigma, scale=p.median)
    else:
        raise ValueError(f"no continuous distribution '{d}'")
    lo = float(dist.cdf(p.low)) if p.low is not None else TAIL
    hi = float(dist.cdf(p.high)) if p.high is not None else 1.0 - TAIL
    return dist, lo, hi


def value_at(p: Parameter, u: float) -> Any:
    """Value of parameter ``p`` at unit coordinate ``u`` (its quantile ``u``, cut tails).

    Parameters
    ----------
    p : Parameter
    u : float
        In [0, 1].

    Returns
    -------
    float, int or the choice's value
    """
    u = min(max(float(u), 0.0), 1.0)
    if p.distribution == "choice":
        w = np.asarray(p.weights if p.weights is not None
                       else [1.0 / len(p.values)] * len(p.values), dtype=float)
        cum = np.cumsum(w) / w.sum()
        k = int(np.searchsorted(cum, u, side="right"))
        return p.values[min(k, len(p.values) - 1)]
    dist, lo, hi = _dist(p)
    q = lo + u * (hi - lo)
    if p.distribution in ("uniform", "triangular"):
        q = min(max(q, 0.0), 1.0)
    v = float(dist.ppf(q))
    if p.low is not None:
        v = max(v, p.low)
    if p.high is not None:
        v = min(v, p.high)
    if p.integer:
        return int(round(v))
    return v


def extremes(p: Parameter) -> list[Any]:
    """Values a parameter can take at its ends (every value of a choice or grid)."""
    if p.distribution is None:
        return list(p.grid or [])
    if p.distribution == "choice":
        return list(p.values or [])
    ends = [value_at(p, 0.0), value_at(p, 1.0)]
    if p.integer:
        lo = math.ceil(p.low) if p.low is not None else ends[0]
        hi = math.floor(p.high) if p.high is not None else ends[1]
        ends = [max(int(lo), ends[0]), min(int(hi), ends[1])]
    return ends


def middle(p: Parameter) -> Any:
    """The median value (the most likely choice), for the reference plan's row."""
    if p.distribution is None:
        return (p.grid or [None])[len(p.grid or [None]) // 2]
    if p.distribution == "choice":
        w = p.weights or [1.0] * len(p.values)
        return p.values[int(np.argmax(w))]
    return value_at(p, 0.5)


def make_design(spec: SweepSpec, samples: int | None = None) -> Design:
    """The samples of ``spec`` (``samples`` replaces the file's count).

    Returns
    -------
    Design
        Reproducible: the same spec, count and seed give the same design.

    Raises
    ------
    InputError
        When the design would hold more than :func:`dcplan.sweep.spec.max_sweep_plans`
        plans (counted before anything is drawn).
    """
    n = samples if samples is not None else spec.samples
    too_many = plans_limit_problem(spec, None if spec.method == "grid" else n,
                                   "--samples" if samples is not None else "samples")
    if too_many is not None:  # counted before anything is drawn
        raise InputError(too_many)
    names = spec.names
    d = len(names)
    problem = {"num_vars": d, "names": names, "bounds": [[0.0, 1.0]] * d}
    levels = None
    if spec.method == "grid":
        axes = []
        for p in spec.parameters:
            if p.distribution is None:
                vals, w = list(p.grid), [1.0 / len(p.grid)] * len(p.grid)
            else:
                vals = list(p.values)
                w = list(p.weights) if p.weights else [1.0 / len(vals)] * len(vals)
            axes.append(list(zip(vals, w, np.linspace(0, 1, len(vals)) if len(vals) > 1
                                 else [0.5], strict=True)))
        rows = list(itertools.product(*axes))
        values = [{nm: cell[0] for nm, cell in zip(names, row, strict=True)} for row in rows]
        weights = np.array([math.prod(cell[1] for cell in row) for row in rows])
        unit = np.array([[cell[2] for cell in row] for row in rows], dtype=float).reshape(-1, d)
        return Design("grid", names, unit, values, weights / weights.sum(),
                      np.arange(len(rows)), problem, None, None)
    if spec.method == "random":
        unit = np.random.default_rng(spec.seed).random((n, d))
        blocks = np.arange(n)
    elif spec.method == "lhs":
        from scipy.stats import qmc

        unit = qmc.LatinHypercube(d=d, seed=spec.seed).random(n)
        blocks = np.arange(n)
    elif spec.method == "morris":
        from SALib.sample import morris

        levels = spec.levels or DEFAULT_LEVELS
        r = n // (d + 1)
        grid = morris.sample(problem, N=r, num_levels=levels, seed=spec.seed)
        unit = (grid * (levels - 1) + 0.5) / levels  # level i -> quantile (i + 0.5) / p
        blocks = np.repeat(np.arange(r), d + 1)
    elif spec.method == "sobol":
        from SALib.sample import sobol

        base = runs_for(spec, n) // (d + 2)
        unit = sobol.sample(problem, base, calc_second_order=False, scramble=True,
                            seed=spec.seed)
        blocks = np.repeat(np.arange(base), d + 2)
    else:
        raise ValueError(f"unknown method {spec.method}")
    values = [{p.name: value_at(p, u) for p, u in zip(spec.parameters, row, strict=True)}
              for row in unit]
    weights = np.full(len(values), 1.0 / max(len(values), 1))
    return Design(spec.method, names, np.asarray(unit, dtype=float), values, weights, blocks,
                  problem, levels, n)
