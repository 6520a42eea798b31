"""The ``power_oversubscription`` result table (the arithmetic: ``power_oversub``)."""

from __future__ import annotations

from typing import Any

from dcplan.planner.power_oversub import (
    exceed_probability,
    expected_excess_kw,
    profile_hours,
    rack_power_sigma_kw,
)
from dcplan.planner.tables import _frame, _site_power, peak_hour
from dcplan.units import HOURS_PER_YEAR

#: Units of the ``power_oversubscription`` table's numeric columns
#: (:func:`power_oversub_table`).
TABLE_UNITS = {
    "oversubscription_factor": "-", "basis_it_kw": "kW", "provisioned_it_kw": "kW",
    "draw_it_kw_peak": "kW", "draw_sigma_kw_peak": "kW", "exceed_prob": "share",
    "exceed_prob_peak_hour": "share", "excess_mwh_per_year": "MWh/year",
    "tokens_lost_per_s_avg": "tokens/s", "tokens_lost_frac": "share",
    "tokens_counted_per_s_avg": "tokens/s"}


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
