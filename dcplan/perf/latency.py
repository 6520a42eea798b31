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

Request lengths are distributions (:class:`LengthDist`: fixed, uniform as the
InferenceX client draws them, lognormal for datasets with long tails), represented by
quantile nodes. A request's TPOT is normal given its output length, with a spread that
grows as the output shortens (fewer tokens average the interruptions), so the TPOT
percentile is that of a mixture over output lengths; a request's TTFT adds its own
prompt's prefill (a node of the input distribution) to the queue wait, and in
closed-loop benchmarks the opening burst (all clients at once). Admission: a request
that finds every running-request slot taken waits for one (:func:`slot_wait`, M/G/c
with Erlang C).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize.elementwise import find_root
from scipy.special import gammaincc, gammaln, ndtr, ndtri

# One definition of a length distribution, shared with the workload catalog
# (dcplan/lengths.py keeps it free of numpy/scipy at import time).
from dcplan.lengths import LENGTH_BINS as _LENGTH_BINS


def wait_tail_mean(rho, service_s, arrival_cv2, service_cv2) -> np.ndarray:
    """Mean of the waiting time given that a request waits (Kingman).

    Parameters
    ----------
    rho : float or array
        Utilisation of the prefill server, below 1 [-].
    service_s : float or array
        Service time of one request [s].
    arrival_cv2, service_cv2 : float or array
        Squared coefficients of variation of inter-arrival and service times [-].

    Returns
    -------
    ndarray
        ``s (c_a^2 + c_s^2) / (2 (1 - rho))`` [s]; inf where ``rho >= 1``.
    """
    rho = np.asarray(rho, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (np.asarray(service_s, dtype=float) * (np.asarray(arrival_cv2) + service_cv2)
               / (2.0 * (1.0 - rho)))
    return np.where(rho < 1.0, out, np.inf)


def wait_mean(rho, service_s, arrival_cv2, service_cv2) -> np.ndarray:
    """Mean waiting time in the prefill queue (Kingman).

    Parameters
    ----------
    rho : float or array
        Utilisation of the prefill server, below 1 [-].
    service_s : float or array
        Service time of one request [s].
    arrival_cv2, service_cv2 : float or array
        Squared coefficients of variation of inter-arrival and service times [-].

    Returns
    -------
    ndarray
        ``rho`` times :func:`wait_tail_mean` [s]; 0 where ``rho <= 0``.
    """
    rho = np.asarray(rho, dtype=float)
    return np.where(rho > 0, rho * wait_tail_mean(rho, service_s, arrival_cv2, service_cv2), 0.0)


def wait_quantile(rho, service_s, arrival_cv2, service_cv2, percentile) -> np.ndarray:
    """``percentile``-th percentile of the waiting time in the prefill queue [s].

    Parameters
    ----------
    rho : float or array
        Utilisation of the prefill server, below 1 [-].
    service_s : float or array
        Service time of one request [s].
    arrival_cv2, service_cv2 : float
        Squared coefficients of variation of inter-arrival and service times [-].
    percentile : float
        Percentile of the waiting time [%], 50..100.

    Returns
    -------
    ndarray
        The waiting time at ``percentile`` [s]: 0 when ``1 - p >= rho``, else
        ``mean ln(rho / (1 - p))`` with the mean of :func:`wait_tail_mean`.
    """
    q = 1.0 - np.asarray(percentile, dtype=float) / 100.0
    rho = np.asarray(rho, dtype=float)
    tail = wait_tail_mean(rho, service_s, arrival_cv2, service_cv2)
    with np.errstate(divide="ignore", invalid="ignore"):
        val = tail * np.log(np.maximum(rho, 1e-300) / q)
    return np.where(rho <= q, 0.0, val)


def normal_z(percentile) -> float:
    """Standard-normal quantile of a percentile.

    Parameters
    ----------
    percentile : float
        Percentile [%], 0..100 (exclusive).

    Returns
    -------
    float
        ``z`` with ``P(Z <= z) = percentile / 100`` [-] (0 at the median).
    """
    return float(ndtri(float(percentile) / 100.0))


def tpot_quantile(tpot_mean_s, prefill_s, arrivals_per_s, output_tokens, tpot_cv_frac,
                  percentile, output_nodes=None, prefill_m2_frac=1.0, mix_sd_s=0.0,
                  within_s=None) -> np.ndarray:
    """``percentile`` of per-request TPOT [s].

    A request of ``O x`` output tokens (``x`` its length over the mean ``O``) has
    the mean TPOT and the variance::

        sd^2(x) = (tpot_cv_frac * mean)^2 + mix_sd^2
                  + prefill_s^2 * m2 * lambda * mean / (O x)

    The last term: the prefills that interrupt its ``O x`` tokens are Poisson with mean
    ``lambda O x TPOT``, each of mean ``prefill_s`` and second moment ``m2 prefill_s^2``
    (prompt lengths vary), spread over its ``O x`` tokens (aggregated serving; pass
    ``prefill_s = 0`` for a decode-only pool). ``mix_sd`` is the step-time spread from
    the batch mix. Short requests have the widest spread, so a long-tailed output
    distribution (``output_nodes``) moves the p99 well above the mean: the percentile
    of the mixture over ``x`` (:func:`normal_mixture_quantile`).

    Parameters
    ----------
    tpot_mean_s : array
        Mean TPOT [s].
    prefill_s : array
        Mean prefill time that interrupts decoding, per request [s].
    arrivals_per_s : array
        Requests per second of the instance [1/s].
    output_tokens : array
        Mean output tokens per request [tokens].
    tpot_cv_frac : float
        Base coefficient of variation [-].
    percentile : float
        Percentile of the per-request TPOT [%], 50..100.
    output_nodes : (ndarray, ndarray), optional
        Output length over its mean at the nodes [-], and their weights [-] summing to 1
        (:meth:`~dcplan.lengths.LengthDist.nodes`); None: every request has ``O`` tokens.
    prefill_m2_frac : float or array
        Second moment of the prefill time over its mean squared [-] (1: fixed prompts).
    mix_sd_s : array
        Standard deviation of a request's mean step time from the batch mix [s].
    within_s : array, optional
        A limit [s]: return whether the percentile is within it (one evaluation of the
        distribution at the limit, no root finding) instead of the percentile.

    Returns
    -------
    ndarray
        Per-request TPOT at ``percentile`` [s] (with ``within_s``: bool, at most it).
    """
    mean = np.asarray(tpot_mean_s, dtype=float)
    o = np.asarray(output_tokens, dtype=float)
    base = (tpot_cv_frac * mean) ** 2 + np.asarray(mix_sd_s, dtype=float) ** 2
    inter = (np.asarray(prefill_s) ** 2 * np.asarray(prefill_m2_frac)
             * np.asarray(arrivals_per_s) * mean / o)
    x, w = (np.ones(1), np.ones(1)) if output_nodes is None else output_nodes
    sds = [np.sqrt(base + inter / xk) for xk in x]
    if within_s is not None:
        return normal_mixture_within(mean, sds, w, percentile, within_s)
    return normal_mixture_quantile(mean, sds, w, percentile)

# ------------------------------------------------------------ length distributions

#: Probability bins of the length nodes (:data:`dcplan.lengths.LENGTH_BINS`).
LENGTH_BINS = np.asarray(_LENGTH_BINS)


#: Relative tolerance of a percentile found by root finding [-]: the bracket around the
#: root is narrowed to at most this fraction of the root (plus :data:`QUANTILE_ATOL`).
QUANTILE_RTOL = 1e-13
#: Absolute tolerance of a percentile found by root finding [unit of the percentile].
QUANTILE_ATOL = 1e-300


def _root_in_bracket(survival, lo, hi, q, args=()) -> np.ndarray:
    """Smallest ``t`` in ``[lo, hi]`` with ``survival(t, *args) <= q`` (vectorised).

    ``survival`` is non-increasing in ``t`` and continuous inside each bracket (a jump
    at ``lo`` or ``hi`` is allowed): the root is found by Chandrupatla's method (inverse
    quadratic interpolation safeguarded by bisection, so it always converges;
    :func:`scipy.optimize.elementwise.find_root`) and stops when the bracket is within
    :data:`QUANTILE_RTOL` of the root, not after a fixed number of steps.

    Parameters
    ----------
    survival : callable
        ``survival(t, *args)`` -> ``P(X > t)`` [-], elementwise in ``t`` and ``args``.
    lo, hi : array
        Bracket ``lo <= hi`` [unit of t].
    q : float
        Tail probability ``1 - percentile / 100`` [-].
    args : tuple of array
        Parameters of ``survival``, broadcast with ``lo`` and ``hi``.

    Returns
    -------
    ndarray
        The root [unit of t]: ``lo`` where ``survival(lo) <= q`` or the bracket is
        empty, ``hi`` where ``survival(hi) > q`` (the bracket misses the root), the
        bracket's midpoint where it is not finite (as a bisection gives).
    """
    lo, hi, *args = np.broadcast_arrays(np.asarray(lo, dtype=float),
                                        np.asarray(hi, dtype=float),
                                        *(np.asarray(a, dtype=float) for a in args))
    shape = lo.shape
    lo, hi = lo.ravel(), hi.ravel()
    args = [a.ravel() for a in args]
    with np.errstate(invalid="ignore", over="ignore"):
        out = 0.5 * (lo + hi)
    done = ~(np.isfinite(lo) & np.isfinite(hi))
    todo = np.flatnonzero(~done & (hi > lo))
    out[~done & (hi <= lo)] = lo[~done & (hi <= lo)]
    if todo.size:
        def fun(t, *p):
            # ``survival = q`` on a stretch (a survival that rounds to q, e.g. where
            # the nodes still to wait weigh q exactly) is no root: the smallest t with
            # survival <= q is that stretch's left end, so an exact 0 counts as below
            d = survival(t, *p) - q
            return np.where(d > 0, d, np.minimum(d, -np.finfo(float).tiny))
        sol = find_root(fun, (lo[todo], hi[todo]), args=tuple(x[todo] for x in args),
                        tolerances={"xrtol": QUANTILE_RTOL, "xatol": QUANTILE_ATOL,
                                    # stop on the bracket only: a tiny survival - q is
                                    # no root (its default tolerance is)
                                    "fatol": 0.0, "frtol": 0.0})
        f_lo = sol.f_bracket[0]
        res = np.where(np.isfinite(sol.x), sol.x, 0.5 * (sol.bracket[0] + sol.bracket[1]))
        # no sign change (status -1): an end of the bracket, as a bisection gives
        res = np.where(sol.status == -1, np.where(f_lo > 0, sol.bracket[1], sol.bracket[0]),
                       res)
        out[todo] = res
    return out.reshape(shape)


def normal_mixture_quantile(mean, sds, weights, percentile) -> np.ndarray:
    """``percentile`` of a mixture of normals with a common ``mean`` [same unit as mean].

    Parameters
    ----------
    mean : array
        Common mean of the components [any unit, e.g. s].
    sds : sequence of arrays
        Standard deviation of each component (broadcast with ``mean``) [unit of mean].
    weights : sequence of float
        Component weights, summing to 1 [-].
    percentile : float
        Percentile of the mixture [%], 50..100.

    Returns
    -------
    ndarray
        The mixture's value at ``percentile`` [unit of mean].

    Notes
    -----
    ``P(X > t) = sum_k w_k Q((t - mean) / sd_k)``, solved by a bracketed root finder
    (:func:`_root_in_bracket`) between the smallest and largest component quantile (a
    mixture quantile above the median lies between them).
    """
    p = float(percentile)
    mean = np.asarray(mean, dtype=float)
    sds = [np.asarray(s, dtype=float) for s in sds]
    if len(sds) == 1:
        return mean + normal_z(p) * sds[0]
    z = normal_z(p)
    if z <= 0:
        return mean + 0.0 * sum(sds)
    lo = mean + z * np.minimum.reduce(np.broadcast_arrays(*sds))
    hi = mean + z * np.maximum.reduce(np.broadcast_arrays(*sds))
    q = 1.0 - p / 100.0
    weights = tuple(float(w) for w in weights)
    if len(weights) != len(sds):
        raise ValueError(f"{len(sds)} components but {len(weights)} weights")

    def survival(t, mean, *sds):
        return sum(w * ndtr(-(t - mean) / np.maximum(s, 1e-300)) for w, s in
                   zip(weights, sds, strict=True))
    return _root_in_bracket(survival, lo, hi, q, (mean, *sds))


def normal_mixture_within(mean, sds, weights, percentile, limit) -> np.ndarray:
    """Whether the ``percentile`` of a normal mixture is at most ``limit``.

    The same answer as ``normal_mixture_quantile(...) <= limit`` from one evaluation of
    the survival function at ``limit``: the quantile is at most ``limit`` exactly when
    ``P(X > limit) <= 1 - percentile / 100``.

    Parameters
    ----------
    mean : array
        Common mean of the components [any unit, e.g. s].
    sds : sequence of arrays
        Standard deviation of each component [unit of mean].
    weights : sequence of float
        Component weights, summing to 1 [-].
    percentile : float
        Percentile of the mixture [%], 50..100.
    limit : array
        The limit [unit of mean].

    Returns
    -------
    ndarray
        Whether the percentile is at most ``limit`` [bool], broadcast over the inputs.
    """
    p = float(percentile)
    mean = np.asarray(mean, dtype=float)
    lim = np.asarray(limit, dtype=float)
    sds = [np.asarray(s, dtype=float) for s in sds]
    z = normal_z(p)
    if len(sds) == 1 or z <= 0:
        return normal_mixture_quantile(mean, sds, weights, p) <= lim
    q = 1.0 - p / 100.0
    surv = sum(w * ndtr(-(lim - mean) / np.maximum(s, 1e-300)) for w, s in
               zip(weights, sds, strict=True))
    return surv <= q


class _WaitSum:
    """Two independent waits ``W1 + W2``: the parts of ``P(W1 + W2 > x)`` free of ``x``.

    ``Wi`` is 0 with probability ``1 - pi``, else exponential with mean ``mi`` [s]; when
    both wait the sum is hypoexponential. Computed once per survival
    evaluation (:func:`_wait_survival_of` then needs only ``x``).
    """

    def __init__(self, p1, m1, p2, m2):
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            self.m1, self.m2 = m1, m2
            self.m1_s, self.m2_s = np.maximum(m1, 1e-300), np.maximum(m2, 1e-300)
            d = m1 - m2
            self.same = np.abs(d) <= 1e-9 * np.maximum(m1, m2)
            self.d = np.where(self.same, 1.0, d)
            self.c1, self.c2, self.c12 = p1 * (1 - p2), p2 * (1 - p1), p1 * p2


def _wait_survival_of(ws: _WaitSum, x):
    """``P(W1 + W2 > x)`` [-] for ``x >= 0`` [s] (:class:`_WaitSum`)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        e1 = np.exp(-x / ws.m1_s)
        e2 = np.exp(-x / ws.m2_s)
        hypo = np.where(ws.same, e1 * (1.0 + x / ws.m1_s), (ws.m1 * e1 - ws.m2 * e2) / ws.d)
    return ws.c1 * e1 + ws.c2 * e2 + ws.c12 * hypo


def ttft_quantile(fixed_s, service_s, service_w, rho, tail_mean_s, percentile,
                  burst_share=0.0, burst_span_s=0.0, slot_p=0.0, slot_tail_s=0.0,
                  within_s=None) -> np.ndarray:
    """``percentile`` of TTFT = fixed + own prefill + queue wait (+ ramp-up burst).

    Parameters
    ----------
    fixed_s : array
        Time every request spends besides its prefill and its wait (overheads, half a
        decode step, KV transfer, slot wait) [s].
    service_s : sequence of arrays
        Prefill time of one request alone at each prompt-length node [s].
    service_w : sequence of float
        Weights of the nodes, summing to 1 [-].
    rho : array
        Utilisation of the prefill queue, below 1 [-].
    tail_mean_s : array
        Mean wait given that a request waits (:func:`wait_tail_mean`) [s].
    percentile : float
        Percentile of TTFT [%], 0..100.
    burst_share : float or array
        Closed-loop benchmarks: share of requests sent in the opening burst (all
        clients at once: one request in ``prompts_per_client``) [0..1].
    burst_span_s : array
        Time the prefill pool takes to drain the opening burst; the burst's requests
        wait uniformly between 0 and this [s].
    slot_p, slot_tail_s : array
        Admission: probability of waiting for a running-request slot [0..1] and the mean
        wait given a wait [s] (:func:`slot_wait`); the slot wait adds to the queue wait.
    within_s : array, optional
        A limit [s]: return whether the percentile is within it (one evaluation of the
        survival function at the limit, no root finding) instead of the percentile.

    Returns
    -------
    ndarray
        TTFT at ``percentile`` [s]; inf where the prefill queue (or the slot queue) is
        unstable (with ``within_s``: bool, at most it; False where unstable).

    Notes
    -----
    ``P(T > t) = sum_k w_k [(1 - f) S_W(t - c - s_k) + f S_U(t - c - s_k)]`` with
    ``S_W(x) = 1`` for ``x < 0``, else ``rho exp(-x / tail_mean)`` (the queue of
    :func:`wait_quantile`; with a slot wait, the survival of the sum of the two waits)
    and ``S_U(x) = clip(1 - x / span, 0, 1)`` (the burst).
    ``P(T > t)`` jumps where a node's wait starts (``c + s_k``) and is continuous between:
    the root is found by a search over those points, then a bracketed root finder
    (:func:`_root_in_bracket`) between two of them; with one node, no burst and no slot
    wait it is ``c + s +`` :func:`wait_quantile`.
    """
    q = 1.0 - float(percentile) / 100.0
    c = np.asarray(fixed_s, dtype=float)
    rho = np.asarray(rho, dtype=float)
    tail = np.asarray(tail_mean_s, dtype=float)
    f = np.asarray(burst_share, dtype=float)
    span = np.maximum(np.asarray(burst_span_s, dtype=float), 0.0)
    ss = [np.asarray(s, dtype=float) for s in service_s]
    sp = np.asarray(slot_p, dtype=float)
    st = np.asarray(slot_tail_s, dtype=float)
    slots = bool(np.any(sp > 0))
    if len(ss) == 1 and not np.any(f > 0) and not slots:
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where(rho <= q, 0.0, tail * np.log(np.maximum(rho, 1e-300) / q))
        out = c + ss[0] + w
        return out if within_s is None else out <= np.asarray(within_s, dtype=float)

    weights = tuple(float(w) for w in service_w)
    if len(weights) != len(ss):
        raise ValueError(f"{len(ss)} prompt-length nodes but {len(weights)} weights")
    # node k's request starts waiting at c + s_k: P(T > t) jumps down there (from 1 to
    # the queue's P(W > 0)) and is continuous between these points
    starts = [c + s for s in ss]

    burst = bool(np.any(f > 0))

    def survival(t, rho, tail, f, span, sp, st, *starts, left=False):
        """``P(T > t)``; ``left``: its limit from the left (a wait starting at ``t``)."""
        out = 0.0
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            no_tail = ~np.isfinite(tail)              # an unstable queue: every request waits
            if slots:
                ws = _WaitSum(rho, tail, sp, st)
            else:
                tail_s = np.maximum(tail, 1e-300)
            if burst:
                span_s = np.maximum(span, 1e-300)
            for wk, b in zip(weights, starts, strict=True):
                x = t - b
                xp = np.maximum(x, 0.0)
                sw = _wait_survival_of(ws, xp) if slots else rho * np.exp(-xp / tail_s)
                queue = np.where(((x <= 0) if left else (x < 0)) | no_tail, 1.0, sw)
                if burst:
                    u = np.minimum(np.maximum(1.0 - x / span_s, 0.0), 1.0)
                    out = out + wk * ((1.0 - f) * queue + f * u)
                else:                             # f = 0: the burst term is 0
                    out = out + wk * queue
        return out

    finite = (rho < 1.0) & ((not slots) | np.isfinite(st) | (sp <= 0))
    args = (rho, tail, f, span, sp, st, *starts)
    if within_s is not None:
        # the quantile is at most the limit exactly when P(T > limit) <= q
        return finite & (survival(np.asarray(within_s, dtype=float), *args) <= q)
    s_hi = np.maximum.reduce(np.broadcast_arrays(*ss))
    with np.errstate(divide="ignore", invalid="ignore"):
        # each wait at its q/2 quantile: P(W1 + W2 > a + b) <= q/2 + q/2
        h = q / 2.0
        w_hi = np.where(rho <= h, 0.0, tail * np.log(np.maximum(rho, 1e-300) / h))
        s_hi_w = np.where(sp <= h, 0.0, st * np.log(np.maximum(sp, 1e-300) / h))
    hi = (c + s_hi + np.where(np.isfinite(w_hi), w_hi, 0.0) + span
          + np.where(np.isfinite(s_hi_w), s_hi_w, 0.0))
    hi, finite, *args = np.broadcast_arrays(hi, finite, *args)
    out = np.full(hi.shape, np.inf)
    at = np.flatnonzero(finite.ravel())
    if at.size:
        out.ravel()[at] = _ttft_root(survival, hi.ravel()[at], q,
                                     tuple(x.ravel()[at] for x in args), len(starts))
    return out


def _ttft_root(survival, hi, q, args, n_nodes: int) -> np.ndarray:
    """Smallest ``t`` with ``P(T > t) <= q``, 1-D (:func:`ttft_quantile`).

    ``P(T > t)`` jumps down where a node's wait starts (``args[-n_nodes:]``) and is
    continuous between: a search over those points (sorted) finds the first at or
    beyond the root; the root is that point where the jump crosses ``q``, else it lies
    in the continuous stretch before it (or after the last one, up to ``hi``), where
    :func:`_root_in_bracket` finds it.
    """
    starts = np.sort(np.stack(args[-n_nodes:]), axis=0)          # (nodes, N)
    n, size = starts.shape
    below, above = np.full(size, -1), np.full(size, n)        # S > q at below, <= q at above
    while True:
        act = np.flatnonzero(above - below > 1)
        if not act.size:
            break
        mid = (below[act] + above[act]) // 2
        ok = survival(starts[mid, act], *(x[act] for x in args)) <= q
        above[act] = np.where(ok, mid, above[act])
        below[act] = np.where(ok, below[act], mid)
    j = above
    out = starts[0].copy()                                    # j == 0: the first start
    mid = np.flatnonzero((j > 0) & (j < n))
    jumps = np.zeros(size, bool)
    if mid.size:
        left = survival(starts[j[mid], mid], *(x[mid] for x in args), left=True)
        jumps[mid] = left > q
        out[mid] = starts[j[mid], mid]
    rest = np.flatnonzero((j > 0) & ~jumps)
    if rest.size:
        a = starts[j[rest] - 1, rest]
        b = np.where(j[rest] < n, starts[np.minimum(j[rest], n - 1), rest], hi[rest])
        out[rest] = _root_in_bracket(survival, a, b, q, tuple(x[rest] for x in args))
    return out


def erlang_c(servers, offered) -> np.ndarray:
    """Probability that an arrival waits in an M/M/c queue (Erlang C).

    Parameters
    ----------
    servers : array
        ``c``, slots (running-request cap) [count]; need not be an integer.
    offered : array
        ``a = lambda / mu``, the mean number of slots busy without a cap [count].

    Returns
    -------
    ndarray
        Probability of waiting [0..1]: 1 where ``a >= c``, 0 where ``a <= 0``.

    Notes
    -----
    Through Erlang B, ``B = P(N = c) / P(N <= c)`` for ``N ~ Poisson(a)`` (gamma
    functions, so ``c`` may be fractional and large without a recursion), then
    ``C = c B / (c - a (1 - B))``; 1 when ``a >= c``. ``c = 1`` gives ``a``
    (M/M/1); ``c = 2, a = 1`` gives 1/3.
    """
    c = np.asarray(servers, dtype=float)
    a = np.asarray(offered, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_pmf = c * np.log(np.maximum(a, 1e-300)) - a - gammaln(c + 1.0)
        cdf = gammaincc(c + 1.0, np.maximum(a, 1e-300))   # P(N <= c), continuous in c
        b = np.exp(log_pmf) / np.maximum(cdf, 1e-300)
        b = np.clip(b, 0.0, 1.0)
        out = c * b / (c - a * (1.0 - b))
    return np.where(a >= c, 1.0, np.where(a <= 0, 0.0, np.clip(out, 0.0, 1.0)))


def slot_wait(servers, offered, hold_s, arrival_cv2=1.0, hold_cv2=1.0) -> tuple:
    """Wait for a running-request slot (M/G/c, Allen-Cunneen) [s].

    A request holds one of ``c`` slots for ``hold_s`` (its decode); ``a`` slots are
    busy on average. ``P(wait) = erlang_c(c, a)`` and ``wait | wait`` is exponential
    with mean ``hold_s / (c - a) * (c_a^2 + c_s^2) / 2`` (exact for M/M/c, where the
    factor is 1).

    Parameters
    ----------
    servers : array
        ``c``, running-request slots [count]; need not be an integer.
    offered : array
        ``a``, mean number of slots busy without a cap [count].
    hold_s : array
        Time a request holds its slot [s].
    arrival_cv2, hold_cv2 : float or array
        Squared coefficients of variation of inter-arrival and holding times [-].

    Returns
    -------
    (p_wait, tail_mean_s) : tuple of ndarray
        Probability of waiting [0..1] and mean wait given a wait [s] (inf at ``a >= c``).
    """
    c = np.asarray(servers, dtype=float)
    a = np.asarray(offered, dtype=float)
    p = erlang_c(c, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = (np.asarray(hold_s, dtype=float) / (c - a)
                * (np.asarray(arrival_cv2, dtype=float) + hold_cv2) / 2.0)
    return p, np.where(a < c, tail, np.inf)
