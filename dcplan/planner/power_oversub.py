"""Power oversubscription: a site provisions less than its racks' power at the basis.

A site oversubscribed by ``factor`` f provisions (grid, building, demand charge) ``f``
times its racks' power at the plan's power basis (``peak_power``); when the fleet draws
more, power capping brings it back under the provision and the tokens the capped racks
would have served are lost. This module holds the arithmetic (docs/planner.md, *Power
oversubscription*):

* rack power at an operating point is taken as normal with the performance model's
  mean ``power_kw`` and its high percentile ``power_p99_kw`` as the 99th percentile:
  ``sigma = (p99 - mean) / z_0.99`` (:func:`rack_power_sigma_kw`);
* the racks of a site are taken as fully correlated (they serve the same traffic
  and batch together; the conservative choice: the fleet's spread is the sum of the
  racks' spreads, so its relative spread does not shrink with size);
* the expected power above a provision ``c`` has the closed form
  ``E[(X - c)+] = sigma phi(z) + (mu - c) (1 - Phi(z))``, ``z = (c - mu) / sigma``
  (:func:`expected_excess_kw`), and ``P(X > c) = 1 - Phi(z)``
  (:func:`exceed_probability`);
* power removed by capping is converted to tokens at the rack's goodput per kW above
  idle (:func:`lost_fraction`): an upper bound on the tokens a cap costs, since
  goodput is a concave function of power that is zero at idle (decode loses far
  less, docs/perf.md *Power caps*).
"""

from __future__ import annotations

import math

from scipy.special import ndtr, ndtri

# scipy.special, not scipy.stats: the saved-plan commands (show, compare, export) import
# this module through the planner, and scipy.stats alone took 1.6 s of their processor
# time, more than loading and checking the plan.

#: Standard normal quantile of the performance model's high percentile (``power_p99_kw``
#: is the rack power exceeded 1 % of the time) [-].
Z_P99 = float(ndtri(0.99))
#: Beyond this many standard deviations the normal tail is taken as 0 [-] (phi(40) is
#: about 1e-348, below the smallest float).
Z_FAR = 40.0


def rack_power_sigma_kw(power_kw: float, power_p99_kw: float) -> float:
    """Standard deviation of one rack's power at an operating point [kW].

    Parameters
    ----------
    power_kw : float
        Mean rack IT power at the operating point [kW].
    power_p99_kw : float
        Rack IT power exceeded 1 % of the time [kW] (0 or below the mean: no spread
        known).

    Returns
    -------
    float
        ``max(0, p99 - mean) / z_0.99`` [kW].
    """
    return max(0.0, power_p99_kw - power_kw) / Z_P99


def exceed_probability(mu_kw: float, sigma_kw: float, cap_kw: float) -> float:
    """Probability that a normal power draw exceeds a provision [-].

    Parameters
    ----------
    mu_kw : float
        Mean draw [kW].
    sigma_kw : float
        Standard deviation of the draw [kW] (0: a fixed draw).
    cap_kw : float
        Provisioned power [kW].

    Returns
    -------
    float
        ``P(X > c) = 1 - Phi((c - mu) / sigma)``; with no spread, 1 when ``mu > c``
        else 0 [-].
    """
    if sigma_kw <= 0:
        return 1.0 if mu_kw > cap_kw else 0.0
    return float(ndtr((mu_kw - cap_kw) / sigma_kw))


def expected_excess_kw(mu_kw: float, sigma_kw: float, cap_kw: float) -> float:
    """Expected power of a normal draw above a provision, ``E[(X - c)+]`` [kW].

    Parameters
    ----------
    mu_kw : float
        Mean draw [kW].
    sigma_kw : float
        Standard deviation of the draw [kW] (0: a fixed draw).
    cap_kw : float
        Provisioned power [kW].

    Returns
    -------
    float
        ``sigma phi(z) + (mu - c) (1 - Phi(z))`` with ``z = (c - mu) / sigma``;
        ``max(0, mu - c)`` without spread [kW].
    """
    if sigma_kw <= 0:
        return max(0.0, mu_kw - cap_kw)
    z = (cap_kw - mu_kw) / sigma_kw
    if abs(z) > Z_FAR:  # the tail term is below any float next to the other
        return max(0.0, mu_kw - cap_kw)
    phi = math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)  # standard normal density
    return max(0.0, float(sigma_kw * phi + (mu_kw - cap_kw) * ndtr(-z)))


def lost_fraction(power_kw: float, power_p99_kw: float, idle_kw: float,
                  provision_kw: float) -> float:
    """Share of one rack's tokens lost to capping at a provision [-].

    The rack draws ``N(power_kw, sigma)`` (:func:`rack_power_sigma_kw`); capping
    removes ``E[(X - provision)+]`` of it, which costs at most the rack's goodput per
    kW above idle: ``lost = E[(X - provision)+] / (power_kw - idle_kw)``, at most 1.

    Parameters
    ----------
    power_kw : float
        Mean rack IT power at the operating point [kW].
    power_p99_kw : float
        Rack IT power exceeded 1 % of the time [kW].
    idle_kw : float
        Rack IT power at idle [kW].
    provision_kw : float
        The rack's share of the site's provision: factor x its power at the basis [kW].

    Returns
    -------
    float
        Expected share of the rack's goodput lost to capping, in [0, 1] [-].
    """
    excess = expected_excess_kw(power_kw, rack_power_sigma_kw(power_kw, power_p99_kw),
                                provision_kw)
    if excess <= 0:
        return 0.0
    dynamic = power_kw - idle_kw
    return 1.0 if dynamic <= 0 else min(1.0, excess / dynamic)


def profile_hours(schedules, day_weights: tuple[float, ...]) -> tuple[list, list[float]]:
    """Every hour of the representative days and its share of the year.

    Parameters
    ----------
    schedules : iterable of Schedule
        The schedules the site's allocations serve (:mod:`dcplan.planner.profiles`).
    day_weights : tuple of float
        Share of the year each representative day stands for (sum 1) [-].

    Returns
    -------
    tuple of (list, list of float)
        Hour indices into the schedules' values (``[None]`` when none has a profile:
        every hour at the schedules' peak, a conservative reading) and their weights,
        ``day_weight / hours per day`` (sum 1) [-].
    """
    n = max((len(s.values) for s in schedules if s.values is not None), default=0)
    if n == 0:
        return [None], [1.0]
    days = max(1, len(day_weights))
    per_day = max(1, math.ceil(n / days))
    weights = [day_weights[min(i // per_day, days - 1)] / per_day if day_weights else 1.0 / n
               for i in range(n)]
    total = sum(weights)
    return list(range(n)), [w / total for w in weights] if total > 0 else [1.0 / n] * n

