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

Measured system power (MLPerf Power) is wall power of a whole server; :func:`gpu_share_w`
takes the accelerators' share of it (catalogs/measurements/mlperf_power_systems.yaml, read
and checked by :func:`dcplan.perf.benchmarks.load_power_systems`).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import binom

from dcplan.perf.params import HardwareParams
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
    m = float(binom.ppf(percentile / 100.0, k, rho)) if 0.0 < rho < 1.0 else k * rho
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
