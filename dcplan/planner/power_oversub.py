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
from typing import Any

from scipy.stats import norm

from dcplan.units import HOURS_PER_YEAR

#: Standard normal quantile of the performance model's high percentile (``power_p99_kw``
#: is the rack power exceeded 1 % of the time) [-].
Z_P99 = float(norm.ppf(0.99))
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
    return float(norm.sf((cap_kw - mu_kw) / sigma_kw))


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
    return max(0.0, float(sigma_kw * norm.pdf(z) + (mu_kw - cap_kw) * norm.sf(z)))


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


#: Units of the ``power_oversubscription`` table's numeric columns
#: (:func:`power_oversub_table`).
TABLE_UNITS = {
    "oversubscription_factor": "-", "basis_it_kw": "kW (racks at the power basis)",
    "provisioned_it_kw": "kW (factor x basis)", "draw_it_kw_peak": "kW (mean, busiest hour)",
    "draw_sigma_kw_peak": "kW (busiest hour)", "exceed_prob": "- (share of the year)",
    "exceed_prob_peak_hour": "- (busiest hour)", "excess_mwh_per_year": "MWh/year (IT)",
    "tokens_lost_per_s_avg": "tokens/s (annual average)",
    "tokens_lost_frac": "- (of the site's tokens)",
    "tokens_counted_per_s_avg": "tokens/s (annual average, derated in the plan)"}


def power_oversub_table(d: Any, sol: Any) -> Any:
    """Provisioned power, exceedance probability and tokens lost per oversubscribed site.

    Per (period, site) with a factor below 1: the racks' IT power at the basis
    (``basis_it_kw``, at the facility peak's hour) and the share provisioned; the fleet's
    draw in every hour of the representative days, normal with mean ``idle x racks +
    (P - idle) x allocated x frac(h) / u`` (as the MILP's hourly power) and standard
    deviation the sum over the serving racks of their :func:`rack_power_sigma_kw`
    (fully correlated); from it the share of the year the draw exceeds the provision
    (:func:`exceed_probability`), the expected energy above it
    (:func:`expected_excess_kw`), and the tokens that costs at the site's goodput per kW
    above idle. ``tokens_counted_per_s_avg`` is what the plan derated the racks'
    goodput by (:meth:`~dcplan.planner.inputs.PlanInputs.oversub_lost_frac`).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.

    Returns
    -------
    DataFrame
        period, site and the columns of :data:`TABLE_UNITS` [see units]; no rows
        without a site oversubscribed.
    """
    from dcplan.planner.tables import _frame, _site_power, peak_hour

    rows = []
    for s, f in d.power_oversub.items():
        for p, per in enumerate(d.periods):
            allocs = [(r, w, key, c, x) for (r, s2, w, key, p2, c), x in
                      sol.racks_allocated.items() if s2 == s and p2 == p and x > 1e-6]
            installed = {r: sol.installed(d, r, s, p) for r in d.racks if (r, s) in d.rack_site}
            if not any(n > 0 for n in installed.values()):
                continue
            provisioned = _site_power(d, sol, s, p, False, peak_hour(d, sol, s, p),
                                      provisioned=True)["it"]
            idle = sum(d.racks[r].it_power_idle_kw * n for r, n in installed.items())
            parts = []  # (schedule, utilisation, extra kW, sigma kW, gross rate, net rate)
            for r, w, key, c, x in allocs:
                pf = d.perf_at(r, w, c)
                parts.append((d.schedule_of(w, key, p), d.workloads[w].target_utilisation,
                              x * max(0.0, pf.power_kw - d.racks[r].it_power_idle_kw),
                              x * rack_power_sigma_kw(pf.power_kw, pf.power_p99_kw),
                              x * d.rate(r, w, key, p, c), x * d.rate(r, w, key, p, c, site=s)))
            hours, weights = profile_hours([sch for sch, *_ in parts], d.day_weights)
            prob = excess = 0.0
            top = (-1.0, 0.0, 0.0)  # (mean, sigma, probability) of the busiest hour
            for h, wt in zip(hours, weights, strict=True):
                mu = idle + sum(e * sch.frac(h) / u for sch, u, e, *_ in parts)
                sig = sum(sg * sch.frac(h) / u for sch, u, _e, sg, *_ in parts)
                ph = exceed_probability(mu, sig, provisioned)
                prob += wt * ph
                excess += wt * expected_excess_kw(mu, sig, provisioned)
                if mu > top[0]:
                    top = (mu, sig, ph)
            dynamic = sum(e for _s, _u, e, *_ in parts)
            gross = sum(g / sch.peak_factor for sch, _u, _e, _sg, g, _n in parts)
            net = sum(n / sch.peak_factor for sch, _u, _e, _sg, _g, n in parts)
            per_kw = sum(g for *_, g, _n in parts) / dynamic if dynamic > 0 else 0.0
            lost = excess * per_kw
            rows.append(dict(
                period=per.label, site=s, oversubscription_factor=f,
                basis_it_kw=provisioned / f, provisioned_it_kw=provisioned,
                draw_it_kw_peak=max(top[0], 0.0), draw_sigma_kw_peak=top[1],
                exceed_prob=prob, exceed_prob_peak_hour=top[2],
                excess_mwh_per_year=excess * HOURS_PER_YEAR / 1000.0, tokens_lost_per_s_avg=lost,
                tokens_lost_frac=lost / gross if gross > 0 else 0.0,
                tokens_counted_per_s_avg=gross - net))
    return _frame(rows, TABLE_UNITS, ["period", "site", *TABLE_UNITS])
