"""Daily demand profiles in the planner: schedules, flexible work and representative hours.

Each workload's demand in a period is spread over the representative day(s) by a
**schedule**: hourly values relative to the mean (they average 1), so that the hour-h
demand is ``mean demand x value[h]``. A workload with a profile has one schedule (its
profile); a workload without one has the special schedule ``peak``, which is at its
peak (the ``peak_to_average`` factor) in every hour: its peak is assumed to coincide
with everybody else's, the conservative reading of a single peak factor.

A **flexible** workload (batch jobs that may wait up to ``deadline_hours``) gets several
candidate schedules, each a way of serving the work that meets the deadline: as it
arrives, as flat as the deadline allows, and filling the valleys of the other
workloads' demand in that period. Each candidate is a linear-programming solution of
the same queue (backlog) constraints, so any mix of them also meets the deadline; the
MILP chooses the mix (and where each part is served), so declaring a workload flexible
can only lower the cost.

**Representative hours.** The capacity, grid and building rows of the MILP are needed
only in hours that can bind. Every such row is a nonnegative combination of the
schedules' hourly values (relative to their peaks), so an hour whose values are all at
or below another hour's is dominated and its rows are implied: only the non-dominated
(Pareto) hours of each period are modelled. This is exact, not an approximation; with
the shipped profiles it keeps 3-8 of the 24 (x days) hours. Energy needs no hourly rows:
a schedule's mean over the day is 1, so energy integrates to the mean demand.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dcplan.schema import HOURS_PER_DAY

#: Two candidate schedules closer than this (largest difference of hourly values) are one.
SAME_SCHEDULE = 1e-6


@dataclass(frozen=True)
class Schedule:
    """How one workload's demand is spread over the representative day(s).

    Attributes
    ----------
    name : str
        ``profile`` (the workload's own shape), ``peak`` (no profile: at its peak every
        hour), or for flexible work ``demand`` (served as it arrives), ``flat`` and
        ``valley`` (filling the other workloads' valleys).
    values : tuple of float or None
        Hourly values of every representative day, one day after the other, relative
        to the mean (day-weighted mean 1); None for ``peak``.
    peak_factor : float
        Peak over mean [-].
    """

    name: str
    values: tuple[float, ...] | None
    peak_factor: float

    def frac(self, h: int | None) -> float:
        """Value in hour ``h`` relative to the peak [0..1] (1 for ``peak`` or ``h`` None)."""
        if self.values is None or h is None:
            return 1.0
        top = max(self.values)
        return self.values[h] / top if top > 0 else 0.0


def peak_schedule(peak_factor: float) -> Schedule:
    """The schedule of a workload without a profile."""
    return Schedule("peak", None, float(peak_factor))


def profile_schedule(values: tuple[float, ...], name: str = "profile") -> Schedule:
    """A schedule from hourly values with mean 1."""
    return Schedule(name, tuple(float(v) for v in values), float(max(values)))


def _queue_lp(arrival: np.ndarray, weights: tuple[float, ...], deadline_hours: float,
              base: np.ndarray | None, scale: float) -> np.ndarray | None:
    """Served hourly values minimising the peak of ``base + scale * served``.

    The work of each representative day is served within that day (a circular day):
    backlog ``B[h] = B[h-1] + arrival[h] - served[h] >= 0`` and at most the work that
    arrived in the last ``deadline_hours`` hours (first in, first out, so nothing waits
    longer). ``base`` None minimises the peak of the served values themselves.

    Returns
    -------
    ndarray or None
        Served values (same shape as ``arrival``), None if the LP failed.
    """
    from scipy.optimize import linprog

    n_days = len(weights)
    H = HOURS_PER_DAY
    n = n_days * H
    d = int(round(deadline_hours))
    # variables: served[n], backlog[n], z
    nv = 2 * n + 1
    c = np.zeros(nv)
    c[-1] = 1.0
    a_eq, b_eq, a_ub, b_ub = [], [], [], []
    for k in range(n_days):
        for h in range(H):
            i = k * H + h
            prev = k * H + (h - 1) % H
            row = np.zeros(nv)
            row[n + i] = 1.0
            row[n + prev] -= 1.0
            row[i] = 1.0
            a_eq.append(row)
            b_eq.append(arrival[i])
            row = np.zeros(nv)
            row[n + i] = 1.0
            a_ub.append(row)
            b_ub.append(sum(arrival[k * H + (h - j) % H] for j in range(min(d, H))))
            row = np.zeros(nv)
            row[i] = scale
            row[-1] = -1.0
            a_ub.append(row)
            b_ub.append(-(base[i] if base is not None else 0.0))
    res = linprog(c, A_ub=np.array(a_ub), b_ub=np.array(b_ub), A_eq=np.array(a_eq),
                  b_eq=np.array(b_eq), bounds=[(0, None)] * nv, method="highs")
    if res.status != 0:
        return None
    return np.maximum(res.x[:n], 0.0)


def flexible_schedules(arrival: tuple[float, ...], weights: tuple[float, ...],
                       deadline_hours: float, others: np.ndarray | None,
                       mean_tokens_per_s: float) -> tuple[Schedule, ...]:
    """Candidate schedules of a flexible workload in one period.

    Parameters
    ----------
    arrival : tuple of float
        Its profile (hourly values of every representative day, mean 1).
    weights : tuple of float
        Day weights (sum 1).
    deadline_hours : float
        Longest wait [h].
    others : ndarray or None
        Hourly demand of the other workloads in the period [tokens/s] (None or all
        zero: no valley candidate).
    mean_tokens_per_s : float
        The flexible workload's mean demand in the period [tokens/s].

    Returns
    -------
    tuple of Schedule
        ``demand`` first, then ``flat`` and ``valley`` where they differ from the ones
        before.
    """
    a = np.asarray(arrival, dtype=float)
    out = [profile_schedule(tuple(a), "demand")]
    flat = _queue_lp(a, weights, deadline_hours, None, 1.0)
    cands = [("flat", flat)]
    if others is not None and np.any(others > 0) and mean_tokens_per_s > 0:
        cands.append(("valley", _queue_lp(a, weights, deadline_hours, others,
                                          mean_tokens_per_s)))
    for name, vals in cands:
        if vals is None:
            continue
        if all(np.max(np.abs(vals - np.asarray(s.values))) <= SAME_SCHEDULE for s in out):
            continue
        out.append(profile_schedule(tuple(vals), name))
    return tuple(out)


def representative_hours(schedules: list[Schedule]) -> tuple[int | None, ...]:
    """The non-dominated hours of a period (see the module docstring).

    Parameters
    ----------
    schedules : list of Schedule
        Every schedule in use in the period.

    Returns
    -------
    tuple
        Hour indices into the schedules' values, in order; ``(None,)`` when no
        schedule has values (one hour, every workload at its peak).
    """
    shaped = [s for s in schedules if s.values is not None]
    if not shaped:
        return (None,)
    m = np.array([[s.frac(h) for s in shaped] for h in range(len(shaped[0].values))])
    keep = []
    for h in range(len(m)):
        ge = np.all(m >= m[h] - 1e-12, axis=1)        # hours at least as high everywhere
        gt = np.any(m > m[h] + 1e-12, axis=1)         # ... and higher somewhere
        dominated = np.any(ge & gt) or any(np.all(np.abs(m[k] - m[h]) <= 1e-12) for k in keep)
        if not dominated:
            keep.append(h)
    return tuple(keep)


def hour_label(h: int | None, day_names: tuple[str, ...] = ("day",)) -> str:
    """``peak`` for the single hour of profile-less plans, else ``h19`` or ``weekend_h19``."""
    if h is None:
        return "peak"
    day, hh = divmod(h, HOURS_PER_DAY)
    prefix = "" if len(day_names) <= 1 else f"{day_names[day]}_"
    return f"{prefix}h{hh:02d}"
