"""Power of accelerators and racks at an operating point.

An accelerator's power rises from idle to max with how hard its compute and memory
are driven::

    activity = min(1, base + w_c * u_compute + w_m * u_memory)
    P_acc    = P_idle + (P_max - P_idle) * activity

where ``u_compute`` is the share of time the tensor cores run at their effective
rate and ``u_memory`` the share of time HBM streams at its effective bandwidth
(both 0..1). The rack adds its non-accelerator power (CPUs, NICs, switches, fans,
conversion), taken from the rack catalog as rack power minus accelerator power at
idle and at max, and interpolated with the same activity. All powers in kW.

Three rack figures, each on its own basis:

- **nameplate** [kW]: the catalog's ``it_power_max_kw``, what the rack draws at activity 1
  (:func:`rack_power_kw` returns exactly it there);
- **operating point** [kW]: the time-average at the modelled operating point (prefill
  and decode weighted by their time shares), what energy and the grid contract see;
- **high percentile** [kW] (:func:`rack_power_percentile_kw`): the rack power that is
  exceeded ``100 - p`` % of the time when the rack's instances prefill independently,
  each a share ``rho`` of the time at prefill activity and otherwise at decode activity;
  what a breaker and the grid connection must carry (prefill bursts are
  compute-bound and drive the accelerators near max).

Under a board power cap ``c`` (a fraction of ``max_power_w``; :func:`phase_clocks`),
a step whose power at full clock stays below the cap runs unthrottled; one above it
slows to the clock at which it draws the cap. The accelerator's power curve
(``power_curves.yaml``, :class:`~dcplan.perf.params.PowerCurve`) gives the clock a
compute-saturated load (activity 1) sustains at each cap; a step at activity ``a``
reaches the cap as that load does at the *phase cap* ``s + (c - s) / a`` (``s`` the
idle share of max power), so its clock is the curve's there. Its dynamic power scales
by ``min(1, ((c - s) / (1 - s)) / a)``: the accelerator never draws more than the cap.

Measured system power (MLPerf Power) is wall power of a whole server; :func:`gpu_share_w`
takes the accelerators' share of it (catalogs/measurements/mlperf_power_systems.yaml, read
and checked by :func:`dcplan.perf.benchmarks.load_power_systems`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import bdtr

from dcplan.perf.params import HardwareParams, PowerCurve
from dcplan.schema import Accelerator, Rack


def activity(params: HardwareParams, compute_util, memory_util) -> np.ndarray:
    """Accelerator activity between idle (0) and max power (1) [-].

    Parameters
    ----------
    params : HardwareParams
        Supplies ``power_base_frac``, ``power_compute_weight``, ``power_memory_weight``
        [-] (scalars or arrays).
    compute_util, memory_util : float or array
        Shares of time compute / HBM are busy at their effective rates [0..1].

    Returns
    -------
    ndarray
        ``min(1, base + w_c u_c + w_m u_m)`` [0..1].
    """
    u_c = np.clip(np.asarray(compute_util, dtype=float), 0.0, 1.0)
    u_m = np.clip(np.asarray(memory_util, dtype=float), 0.0, 1.0)
    raw = (params.power_base_frac + params.power_compute_weight * u_c
           + params.power_memory_weight * u_m)
    return np.clip(raw, 0.0, 1.0)


def accelerator_power_kw(acc: Accelerator, act) -> np.ndarray:
    """Power of one accelerator at an activity.

    Parameters
    ----------
    acc : Accelerator
        Supplies ``idle_power_w`` and ``max_power_w`` [W].
    act : float or array
        Activity between idle (0) and max power (1) [0..1] (:func:`activity`).

    Returns
    -------
    ndarray
        ``idle + (max - idle) act`` [kW].
    """
    idle, peak = acc.idle_power_w / 1e3, acc.max_power_w / 1e3
    return idle + (peak - idle) * np.asarray(act, dtype=float)


def rack_power_kw(rack: Rack, acc: Accelerator, act) -> np.ndarray:
    """Return the IT power of ``rack`` when its accelerators run at ``act`` activity.

    ``n * P_acc(act) + P_other(act)``, where the non-accelerator power ``P_other`` is
    ``it_power_idle_kw - n * idle`` at idle and ``it_power_max_kw - n * max`` at full
    load (each floored at 0), interpolated linearly; the result is kept within the
    rack's catalog idle and max power.

    Parameters
    ----------
    rack : Rack
        Supplies ``accelerators_per_rack`` [count], ``it_power_idle_kw`` and
        ``it_power_max_kw`` [kW].
    acc : Accelerator
        The rack's accelerator: ``idle_power_w`` and ``max_power_w`` [W].
    act : float or array
        Accelerator activity [0..1] (:func:`activity`).

    Returns
    -------
    ndarray
        Rack IT power [kW] (basis: operating point at ``act``; nameplate at 1).
    """
    n = rack.accelerators_per_rack
    act = np.asarray(act, dtype=float)
    other_idle = max(rack.it_power_idle_kw - n * acc.idle_power_w / 1e3, 0.0)
    other_max = max(rack.it_power_max_kw - n * acc.max_power_w / 1e3, 0.0)
    total = n * accelerator_power_kw(acc, act) + other_idle + (other_max - other_idle) * act
    return np.clip(total, rack.it_power_idle_kw, rack.it_power_max_kw)


def binomial_quantile(q: float, n: int, p: float) -> int:
    """Least ``m`` with P(Binomial(``n``, ``p``) <= m) >= ``q`` [count].

    As ``scipy.stats.binom.ppf`` for ``0 < q < 1``, from the distribution function
    ``scipy.special.bdtr``: scipy.stats takes about a second to import, which every
    ``dcplan plan`` paid for this one quantile.

    Parameters
    ----------
    q : float
        Probability [0..1]; 0 gives 0 and 1 gives ``n``.
    n : int
        Trials [count], >= 0.
    p : float
        Success probability of each trial [0..1].

    Returns
    -------
    int
        The quantile [count], 0..``n``.
    """
    cdf = bdtr(np.arange(n + 1), n, p)
    return int(min(np.searchsorted(cdf >= q, True), n)) if q > 0.0 else 0


def rack_power_percentile_kw(rack: Rack, acc: Accelerator, act_prefill: float,
                             act_decode: float, prefill_frac: float, instances: float,
                             percentile: float = 99.0) -> float:
    """Rack IT power exceeded ``100 - percentile`` % of the time [kW] (basis: high percentile).

    The rack holds ``k = max(1, round(instances))`` instances; each prefills a share
    ``prefill_frac`` of the time, independently of the others, at activity
    ``act_prefill``, and decodes the rest at ``act_decode``. The number prefilling at
    once is Binomial(k, prefill_frac); at its ``percentile`` quantile ``m`` the rack runs
    at activity ``(m act_prefill + (k - m) act_decode) / k``. Never below the
    operating-point power at the mean activity, never above the nameplate.

    Parameters
    ----------
    rack, acc : Rack, Accelerator
        The rack (``accelerators_per_rack`` [count], IT power [kW]) and its accelerator
        (idle and max power [W]).
    act_prefill, act_decode : float
        Accelerator activity in a prefill step and in a decode step [0..1].
    prefill_frac : float
        Share of each instance's time spent in prefill [0..1].
    instances : float
        Instances per rack (``replicas_per_rack``) [count].
    percentile : float
        Percentile of the rack power over time [%], 0..100.

    Returns
    -------
    float
        Rack IT power [kW].
    """
    k = max(1, int(round(instances)))
    rho = float(np.clip(prefill_frac, 0.0, 1.0))
    m = binomial_quantile(percentile / 100.0, k, rho) if 0.0 < rho < 1.0 else k * rho
    mean_act = rho * act_prefill + (1.0 - rho) * act_decode
    act = max((m * act_prefill + (k - m) * act_decode) / k, mean_act)
    return float(rack_power_kw(rack, acc, min(act, 1.0)))


def gpu_share_w(wall_w: float, wall_preload_w: float, gpus: int, gpu_idle_w: float,
                psu_efficiency_frac: float) -> float:
    """Accelerators' share of a server's measured wall power [W] (basis: operating point).

    ``gpus * gpu_idle_w + psu_efficiency_frac * (wall_w - wall_preload_w)``: the GPUs
    idle before the load starts, and the rise of the wall power under load, less PSU
    losses, is all GPU power. Fans and host CPUs rise with the load too, so this is an
    upper estimate by their rise.

    Parameters
    ----------
    wall_w : float
        Mean wall (AC) power over the measured run [W].
    wall_preload_w : float
        Wall power with the engines loaded and no load [W].
    gpus : int
        Accelerators in the server [count].
    gpu_idle_w : float
        Idle power per accelerator [W].
    psu_efficiency_frac : float
        DC out / AC in of the power supplies [0..1].

    Returns
    -------
    float
        Power of all the server's accelerators together [W].
    """
    return gpus * gpu_idle_w + psu_efficiency_frac * (wall_w - wall_preload_w)


def check_power_cap(cap_frac: float, curve: PowerCurve) -> str:
    """Why ``cap_frac`` cannot be modelled with ``curve`` ('' when it can).

    Parameters
    ----------
    cap_frac : float
        Power cap as a fraction of ``max_power_w`` [-].
    curve : PowerCurve
        The accelerator's power curve.

    Returns
    -------
    str
        The reason, '' when ``min_cap_frac <= cap_frac <= 1``.
    """
    if not np.isfinite(cap_frac) or cap_frac <= 0.0 or cap_frac > 1.0:
        return (f"a power cap must be a fraction 0 < f <= 1 of the accelerator's max power, "
                f"got {cap_frac:g}")
    if cap_frac < curve.min_cap_frac - 1e-12:
        return (f"a power cap of {cap_frac:g} is below the lowest cap the power curve of "
                f"{curve.accelerator} covers ({curve.min_cap_frac:g}); use at least that")
    return ""


def curve_clocks(curve: PowerCurve, cap_frac: float) -> tuple[float, float]:
    """Core and HBM clock fractions a compute-saturated load sustains at ``cap_frac`` [-].

    Linear between the curve's rows; 1 at and above a cap of 1.

    Parameters
    ----------
    curve : PowerCurve
        Rows of cap, core clock and HBM clock fractions [-].
    cap_frac : float
        Power cap as a fraction of ``max_power_w`` [-], at least ``curve.min_cap_frac``.

    Returns
    -------
    tuple of float
        ``(clock_frac, mem_clock_frac)`` [0..1].

    Raises
    ------
    ValueError
        For a cap below the curve (:func:`check_power_cap`).
    """
    if cap_frac >= 1.0:
        return 1.0, 1.0
    problem = check_power_cap(cap_frac, curve)
    if problem:
        raise ValueError(problem)
    caps = np.array(curve.cap_frac[::-1])
    clk = float(np.interp(cap_frac, caps, np.array(curve.clock_frac[::-1])))
    mem = float(np.interp(cap_frac, caps, np.array(curve.mem_clock_frac[::-1])))
    return clk, mem


def cap_activity(acc: Accelerator, cap_frac: float) -> float:
    """Activity at which an accelerator at full clock draws ``cap_frac`` of max power [-].

    ``(c - s) / (1 - s)`` with ``s = idle_power_w / max_power_w``, at most 1.

    Parameters
    ----------
    acc : Accelerator
        Supplies ``idle_power_w`` and ``max_power_w`` [W].
    cap_frac : float
        Power cap as a fraction of ``max_power_w`` [-].

    Returns
    -------
    float
        Activity [0..1].
    """
    s = acc.idle_power_w / acc.max_power_w
    return float(np.clip((cap_frac - s) / (1.0 - s), 0.0, 1.0))


def phase_clocks(curve: PowerCurve, acc: Accelerator, cap_frac: float,
                 act: float) -> tuple[float, float, float]:
    """Clocks and dynamic-power scale of a step of activity ``act`` under a power cap.

    A step whose power at full clock, ``P_idle + (P_max - P_idle) act``, is at most the
    cap runs at full clocks. Above it, the step runs where it draws the cap: its
    dynamic power scales by ``k = cap_activity / act``, which the curve's
    compute-saturated load reaches at the phase cap ``s + (c - s) / act``; the clocks
    are the curve's there.

    Parameters
    ----------
    curve : PowerCurve
        The accelerator's power curve.
    acc : Accelerator
        Supplies ``idle_power_w`` and ``max_power_w`` [W].
    cap_frac : float
        Power cap as a fraction of ``max_power_w`` [-].
    act : float
        Activity of the step at full clock [0..1] (:func:`activity`).

    Returns
    -------
    tuple of float
        ``(clock_frac, mem_clock_frac, power_scale)`` [0..1].
    """
    k_cap = cap_activity(acc, cap_frac)
    if cap_frac >= 1.0 or act <= k_cap:
        return 1.0, 1.0, 1.0
    s = acc.idle_power_w / acc.max_power_w
    phase_cap = min(s + (cap_frac - s) / act, 1.0)
    clk, mem = curve_clocks(curve, max(phase_cap, cap_frac))
    return clk, mem, k_cap / act


def capped_activity(act, power_scale, cap_act) -> np.ndarray:
    """Activity that gives a throttled step's power: ``min(act k, cap_act)`` [0..1].

    Parameters
    ----------
    act : float or array
        Activity of the step at its (throttled) clocks [0..1].
    power_scale : float
        Dynamic-power scale ``k`` of the step (:func:`phase_clocks`) [0..1].
    cap_act : float
        :func:`cap_activity` of the cap [0..1]: the accelerator never draws more.

    Returns
    -------
    ndarray
        Activity for :func:`accelerator_power_kw` and :func:`rack_power_kw` [0..1].
    """
    return np.minimum(np.asarray(act, dtype=float) * power_scale, cap_act)


def rack_power_at_cap_kw(rack: Rack, acc: Accelerator, cap_frac: float) -> float:
    """Rack IT power when every accelerator draws its cap [kW] (basis: nameplate at the cap).

    ``n c P_max`` plus the non-accelerator power at full load
    (``it_power_max_kw - n P_max``, floored at 0), which the cap does not change; the
    catalog's ``it_power_max_kw`` at ``cap_frac`` 1.

    Parameters
    ----------
    rack : Rack
        Supplies ``accelerators_per_rack`` [count] and ``it_power_max_kw`` [kW].
    acc : Accelerator
        Supplies ``max_power_w`` [W].
    cap_frac : float
        Power cap as a fraction of ``max_power_w`` [-].

    Returns
    -------
    float
        Rack IT power [kW].
    """
    if cap_frac >= 1.0:
        return float(rack.it_power_max_kw)
    n = rack.accelerators_per_rack
    other = max(rack.it_power_max_kw - n * acc.max_power_w / 1e3, 0.0)
    return float(n * cap_frac * acc.max_power_w / 1e3 + other)
