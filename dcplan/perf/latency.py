"""Latency as distributions: queueing for TTFT, dispersion for TPOT, percentiles.

Prefill is a queue: requests arrive at ``lambda`` [1/s] at one instance's prefill
server (the instance itself in aggregated serving, where prefill steps take priority
over decode; a prefill instance when disaggregated), each needing ``s`` [s] of
service, utilisation ``rho = lambda * s_batched``. The waiting time ``W`` follows the
usual heavy-traffic form of a G/G/1 queue (Kingman's mean with an exponential tail)::

    P(W > 0) = rho,     W | W > 0  ~  Exponential(mean = s (c_a^2 + c_s^2) / (2 (1 - rho)))

with ``c_a^2`` the squared coefficient of variation of inter-arrival times (Poisson:
1; a closed loop of clients: smaller) and ``c_s^2`` that of the service times. For an
M/M/1 queue (``c_a^2 = c_s^2 = 1``) this is exact: ``P(W > t) = rho exp(-(mu - lambda) t)``.

The ``p``-quantile of ``W`` is 0 when ``1 - p >= rho`` and otherwise
``mean * ln(rho / (1 - p))``.

A request's TPOT averages its own decode steps plus the prefill steps that interrupt
them; with Poisson interruptions its spread is ``t_pre * sqrt(lambda * T_decode) / O``
on top of a base spread ``tpot_cv_frac``; the percentile uses a normal approximation.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm


def wait_tail_mean(rho, service_s, arrival_cv2, service_cv2) -> np.ndarray:
    """Mean of the waiting time given that a request waits [s] (inf when ``rho >= 1``)."""
    rho = np.asarray(rho, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (np.asarray(service_s, dtype=float) * (np.asarray(arrival_cv2) + service_cv2)
               / (2.0 * (1.0 - rho)))
    return np.where(rho < 1.0, out, np.inf)


def wait_mean(rho, service_s, arrival_cv2, service_cv2) -> np.ndarray:
    """Mean waiting time in the prefill queue [s] (Kingman)."""
    rho = np.asarray(rho, dtype=float)
    return np.where(rho > 0, rho * wait_tail_mean(rho, service_s, arrival_cv2, service_cv2), 0.0)


def wait_quantile(rho, service_s, arrival_cv2, service_cv2, percentile) -> np.ndarray:
    """``percentile``-th percentile of the waiting time in the prefill queue [s].

    Parameters
    ----------
    rho : float or array
        Utilisation of the prefill server [0..1).
    service_s : float or array
        Service time of one request [s].
    arrival_cv2, service_cv2 : float
        Squared coefficients of variation of inter-arrival and service times [-].
    percentile : float
        [50..100).
    """
    q = 1.0 - np.asarray(percentile, dtype=float) / 100.0
    rho = np.asarray(rho, dtype=float)
    tail = wait_tail_mean(rho, service_s, arrival_cv2, service_cv2)
    with np.errstate(divide="ignore", invalid="ignore"):
        val = tail * np.log(np.maximum(rho, 1e-300) / q)
    return np.where(rho <= q, 0.0, val)


def normal_z(percentile) -> float:
    """Standard-normal quantile of ``percentile`` [%] (0 at the median)."""
    return float(norm.ppf(float(percentile) / 100.0))


def tpot_quantile(tpot_mean_s, prefill_s, arrivals_per_s, output_tokens, tpot_cv_frac,
                  percentile) -> np.ndarray:
    """``percentile`` of per-request TPOT [s].

    ``sd^2 = (tpot_cv_frac * mean)^2 + prefill_s^2 * lambda * (O * mean) / O^2``: the
    number of prefill steps that interrupt a request's ``O`` tokens is Poisson with
    mean ``lambda * O * TPOT`` (aggregated serving; pass ``prefill_s = 0`` for a
    decode-only pool).
    """
    mean = np.asarray(tpot_mean_s, dtype=float)
    o = np.asarray(output_tokens, dtype=float)
    var = ((tpot_cv_frac * mean) ** 2
           + np.asarray(prefill_s) ** 2 * np.asarray(arrivals_per_s) * o * mean / o ** 2)
    return mean + normal_z(percentile) * np.sqrt(var)
