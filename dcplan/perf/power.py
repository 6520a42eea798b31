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
"""

from __future__ import annotations

import numpy as np

from dcplan.perf.params import HardwareParams
from dcplan.schema import Accelerator, Rack


def activity(params: HardwareParams, compute_util, memory_util) -> np.ndarray:
    """Accelerator activity between idle (0) and max power (1) [-].

    Parameters
    ----------
    params : HardwareParams
        Supplies ``power_base_frac``, ``power_compute_weight``, ``power_memory_weight``.
    compute_util, memory_util : float or array
        Shares of time compute / HBM are busy at their effective rates [0..1].
    """
    u_c = np.clip(np.asarray(compute_util, dtype=float), 0.0, 1.0)
    u_m = np.clip(np.asarray(memory_util, dtype=float), 0.0, 1.0)
    raw = (params.power_base_frac + params.power_compute_weight * u_c
           + params.power_memory_weight * u_m)
    return np.clip(raw, 0.0, 1.0)


def accelerator_power_kw(acc: Accelerator, act) -> np.ndarray:
    """Power of one accelerator at ``act`` activity [kW]."""
    idle, peak = acc.idle_power_w / 1e3, acc.max_power_w / 1e3
    return idle + (peak - idle) * np.asarray(act, dtype=float)


def rack_power_kw(rack: Rack, acc: Accelerator, act) -> np.ndarray:
    """Return the IT power of ``rack`` when its accelerators run at ``act`` activity [kW].

    ``n * P_acc(act) + P_other(act)``, where the non-accelerator power ``P_other`` is
    ``it_power_idle_kw - n * idle`` at idle and ``it_power_max_kw - n * max`` at full
    load (each floored at 0), interpolated linearly; the result is kept within the
    rack's catalog idle and max power.
    """
    n = rack.accelerators_per_rack
    act = np.asarray(act, dtype=float)
    other_idle = max(rack.it_power_idle_kw - n * acc.idle_power_w / 1e3, 0.0)
    other_max = max(rack.it_power_max_kw - n * acc.max_power_w / 1e3, 0.0)
    total = n * accelerator_power_kw(acc, act) + other_idle + (other_max - other_idle) * act
    return np.clip(total, rack.it_power_idle_kw, rack.it_power_max_kw)
