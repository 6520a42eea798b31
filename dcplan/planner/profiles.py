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
schedules' hourly values (relative to their peaks) against a right-hand side that is the
same in every hour, so an hour whose values are all at or below another hour's, or below
a weighted mean of other hours' values, is dominated: its rows are implied by theirs.
Only the hours that no mix of the others dominates are modelled (the Pareto filter,
then one small LP per remaining hour). This is exact, not an approximation. Energy
needs no hourly rows: a schedule's mean over the day is 1, so energy integrates to the
mean demand.
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

    def frac(self, h: int | tuple[int, ...] | None) -> float:
        """Value in hour ``h`` relative to the peak [0..1] (1 for ``peak`` or ``h`` None).

        ``h`` may be a group of hours: the largest value among them.

        Parameters
        ----------
        h : int or tuple of int or None
            Hour index into :attr:`values` (a tuple: a merged group of hours; None: the
            single hour of a plan without profiles) [-].

        Returns
        -------
        float
            [-].
        """
        if self.values is None or h is None:
            return 1.0
        top = max(self.values)
        if top <= 0:
            return 0.0
        v = max(self.values[i] for i in h) if isinstance(h, tuple) else self.values[h]
        return v / top


def served_share(sch: Schedule, h: int | None) -> float:
    """Share of a schedule's power at peak drawn serving its load in hour ``h`` [-].

    ``values[h] / M`` (the hour's demand over the peak), or the mean ``1 / M`` for a
    schedule without hourly values (``peak``) or the single flat hour (``h`` None). The
    day-weighted mean over the hours is ``1 / M``, the share the annual-average power
    counts.

    Parameters
    ----------
    sch : Schedule
        The schedule.
    h : int or None
        Hour index into its values (None: the single flat hour) [-].

    Returns
    -------
    float
        [-].
    """
    v = sch.values[h] if sch.values is not None and h is not None else 1.0
    return v / sch.peak_factor  # (as the tables compute it: extra x v / M)


def peak_schedule(peak_factor: float) -> Schedule:
    """The schedule of a workload without a profile.

    Parameters
    ----------
    peak_factor : float
        The workload's peak over its mean demand [-].

    Returns
    -------
    Schedule
        Named ``peak``, without hourly values.
    """
    return Schedule("peak", None, float(peak_factor))


def profile_schedule(values: tuple[float, ...], name: str = "profile") -> Schedule:
    """A schedule from hourly values with mean 1.

    Parameters
    ----------
    values : tuple of float
        Hourly values of every representative day, relative to the mean (mean 1) [-].
    name : str
        The schedule's name.

    Returns
    -------
    Schedule
        Its peak factor is the largest value [-].
    """
    return Schedule(name, tuple(float(v) for v in values), float(max(values)))


#: Levels of the piecewise-linear convex cost with which valley filling levels the load.
FILL_LEVELS = 16


def _queue_lp(arrival: np.ndarray, weights: tuple[float, ...], deadline_hours: float,
              base: np.ndarray | None, scale: float) -> np.ndarray | None:
    """Served hourly values that level ``base + scale * served`` (water filling).

    The work of each representative day is served within that day (a circular day):
    backlog ``B[h] = B[h-1] + arrival[h] - served[h] >= 0`` and at most the work that
    arrived in the last ``deadline_hours`` hours (first in, first out, so nothing waits
    longer). The objective is a convex piecewise-linear cost of the hourly load
    (``sum_h sum_k max(0, load_h - level_k)`` over :data:`FILL_LEVELS` levels), which
    fills the lowest hours first and so also minimises the peak; ``base`` None levels
    the served values themselves (as flat as the deadline allows).

    Returns
    -------
    ndarray or None
        Served values (same shape as ``arrival``), None if the LP failed.
    """
    from scipy.optimize import linprog
    from scipy.sparse import lil_matrix

    n_days = len(weights)
    H = HOURS_PER_DAY
    n = n_days * H
    d = int(round(deadline_hours))
    b = np.zeros(n) if base is None else np.asarray(base, dtype=float)
    top = float(np.max(b + scale * arrival))
    lo = float(np.min(b))
    levels = np.linspace(lo, top, FILL_LEVELS + 1)[:-1]
    K = len(levels)
    # variables: served[n], backlog[n], excess[n * K]
    nv = 2 * n + n * K
    c = np.zeros(nv)
    for i in range(n):
        c[2 * n + i * K: 2 * n + (i + 1) * K] = weights[i // H] / max(top, 1e-12)
    a_eq = lil_matrix((n, nv))
    b_eq = np.zeros(n)
    a_ub = lil_matrix((n + n * K, nv))
    b_ub = np.zeros(n + n * K)
    for k in range(n_days):
        for h in range(H):
            i = k * H + h
            prev = k * H + (h - 1) % H
            a_eq[i, n + i] = 1.0
            a_eq[i, n + prev] -= 1.0
            a_eq[i, i] = 1.0
            b_eq[i] = arrival[i]
            a_ub[i, n + i] = 1.0
            b_ub[i] = sum(arrival[k * H + (h - j) % H] for j in range(min(d, H)))
            for j, lev in enumerate(levels):
                r = n + i * K + j
                a_ub[r, i] = scale
                a_ub[r, 2 * n + i * K + j] = -1.0
                b_ub[r] = lev - b[i]
    res = linprog(c, A_ub=a_ub.tocsr(), b_ub=b_ub, A_eq=a_eq.tocsr(), b_eq=b_eq,
                  bounds=[(0, None)] * nv, method="highs")
    if res.status != 0:
        return None
    return np.maximum(res.x[:n], 0.0)


def flexible_schedules(arrival: tuple[float, ...], weights: tuple[float, ...],
                       deadline_hours: float, others: np.ndarray | None,
                       mean_demand: float) -> tuple[Schedule, ...]:
    """Candidate schedules of a flexible workload in one period.

    Parameters
    ----------
    arrival : tuple of float
        Its profile (hourly values of every representative day, mean 1) [-].
    weights : tuple of float
        Day weights (sum 1) [-].
    deadline_hours : float
        Longest wait [h].
    others : ndarray or None
        Hourly demand of the other workloads in the period, in any unit that adds up
        (the planner uses racks on each workload's fastest rack type) [racks] (None or all
        zero: no valley candidate).
    mean_demand : float
        The flexible workload's mean demand in the period, in the unit of ``others``
        [racks] (as :func:`~dcplan.planner.inputs.build_schedules` passes it).

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
    if others is not None and np.any(others > 0) and mean_demand > 0:
        cands.append(("valley", _queue_lp(a, weights, deadline_hours, others,
                                          mean_demand)))
    for name, vals in cands:
        if vals is None:
            continue
        if all(np.max(np.abs(vals - np.asarray(s.values))) <= SAME_SCHEDULE for s in out):
            continue
        out.append(profile_schedule(tuple(vals), name))
    return tuple(out)


def hour_groups(schedules: list[Schedule], max_hours: int | None = None,
                weights: list[float] | None = None
                ) -> tuple[tuple[int, ...], ...] | tuple[None]:
    """Representative hours of a period, merged into at most ``max_hours`` groups.

    The non-dominated hours (:func:`representative_hours`) are exact. When there are
    more than ``max_hours`` of them, the two groups whose envelope (the largest value
    of every schedule over the group's hours) grows least are merged, until
    ``max_hours`` remain; a group's rows use its envelope, so they imply the rows of
    every hour in it: the plan stays feasible in every hour but is conservative (see
    docs/planner.md). ``weights`` (one per schedule, e.g. its peak load in racks)
    weigh how much raising a schedule's value costs.

    Parameters
    ----------
    schedules : list of Schedule
        The schedules of every workload with demand in the period.
    max_hours : int, optional
        Most groups to keep [count]; None or 0: every representative hour.
    weights : list of float, optional
        One per schedule: the cost of raising its value, e.g. its peak load [racks]
        (None: 1 each).

    Returns
    -------
    tuple
        One tuple of hour indices per group; ``(None,)`` without profiles.
    """
    hours = representative_hours(schedules)
    if hours == (None,):
        return (None,)
    groups = [(h,) for h in hours]
    if not max_hours or len(groups) <= max_hours:
        return tuple(groups)
    shaped = [(s, w) for s, w in zip(schedules, weights or [1.0] * len(schedules),
                                     strict=True) if s.values is not None]
    wts = np.array([w for _, w in shaped])
    vec = {h: np.array([s.frac(h) for s, _ in shaped]) for h in hours}
    env = [vec[h] for h in hours]
    while len(groups) > max_hours:
        best = None
        for i in range(len(groups)):
            for j in range(i + 1, len(groups)):
                e = np.maximum(env[i], env[j])
                cost = float(np.sum(wts * (e - env[i])) * len(groups[i])
                             + np.sum(wts * (e - env[j])) * len(groups[j]))
                if best is None or cost < best[0]:
                    best = (cost, i, j, e)
        _, i, j, e = best
        groups[i] = tuple(sorted(groups[i] + groups[j]))
        env[i] = e
        del groups[j], env[j]
    return tuple(groups)


def representative_hours(schedules: list[Schedule]) -> tuple[int | None, ...]:
    """The hours of a period that no other hour, nor mix of hours, dominates.

    See the module docstring: the Pareto filter, then :func:`_hull_hours`.

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
    return _hull_hours(m, tuple(keep))


def _hull_hours(m, hours: tuple[int, ...]) -> tuple[int, ...]:
    """The hours of ``hours`` that no mix of the others dominates.

    A row ``sum_j a_j frac_j(h) <= b`` with ``a >= 0`` holds in hour ``h`` whenever it
    holds in hours ``h_i`` with ``frac(h) <= sum_i l_i frac(h_i)`` for weights ``l >= 0``
    summing to 1; so such an hour adds no row. Tested by one small LP per hour.
    """
    from scipy.optimize import linprog

    keep = list(hours)
    for h in hours:
        others = [k for k in keep if k != h]
        if not others:
            continue
        res = linprog(np.zeros(len(others)), A_ub=-m[others].T, b_ub=-m[h] + 1e-12,
                      A_eq=np.ones((1, len(others))), b_eq=[1.0], bounds=(0, None),
                      method="highs")
        if res.status == 0:
            keep.remove(h)
    return tuple(keep)


def hour_label(h: int | tuple[int, ...] | None, day_names: tuple[str, ...] = ("day",)) -> str:
    """Label of a representative hour.

    ``peak`` for the single hour of profile-less plans, else ``h19`` or
    ``weekend_h19``; a group of hours is named by its first hour and its size
    (``weekday_h01_4h``).

    Parameters
    ----------
    h : int or tuple of int or None
        Hour index over the representative days (a tuple: a group of hours; None: the
        single hour of a plan without profiles) [-].
    day_names : tuple of str
        Names of the representative days (no prefix with one day).

    Returns
    -------
    str
        ``peak``, ``h19``, ``weekend_h19`` or ``weekday_h01_4h``.
    """
    if h is None:
        return "peak"
    if isinstance(h, tuple):
        if len(h) == 1:
            return hour_label(h[0], day_names)
        return f"{hour_label(h[0], day_names)}_{len(h)}h"
    day, hh = divmod(h, HOURS_PER_DAY)
    prefix = "" if len(day_names) <= 1 else f"{day_names[day]}_"
    return f"{prefix}h{hh:02d}"
