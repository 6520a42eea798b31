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
and checked by :func:`load_power_systems`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import binom

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
    act_prefill, act_decode : float
        Accelerator activity in a prefill step and in a decode step [0..1].
    prefill_frac : float
        Share of each instance's time spent in prefill [0..1].
    instances : float
        Instances per rack (``replicas_per_rack``) [-].
    percentile : float
        [0..100].

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
        Accelerators in the server.
    gpu_idle_w : float
        Idle power per accelerator [W].
    psu_efficiency_frac : float
        DC out / AC in of the power supplies [0..1].
    """
    return gpus * gpu_idle_w + psu_efficiency_frac * (wall_w - wall_preload_w)


#: File beside the measurement CSVs that records the wall power of MLPerf Power runs and
#: how it is split into the GPU share (``mlperf_power.csv``'s ``power_w``).
POWER_SYSTEMS_FILE = "mlperf_power_systems.yaml"

#: Numeric fields of a system: (name, required, low, high, low open, integer).
_SYSTEM_FIELDS = (("gpus", True, 1, None, False, True),
                  ("gpu_idle_w", True, 0.0, None, True, False),
                  ("psu_efficiency_frac", True, 0.0, 1.0, True, False),
                  ("power_cap_w_per_gpu", False, 0.0, None, True, False))
#: Numeric fields of a run: (name, required, integer).
_RUN_FIELDS = (("wall_w", True, False), ("wall_preload_w", True, False),
               ("wall_p99_w", False, False), ("samples", False, True))
_SYSTEM_TEXT = ("description", "source", "as_of", "how")


def load_power_systems(path) -> dict[str, dict]:
    """Read :data:`POWER_SYSTEMS_FILE`: measured systems, their runs and the split.

    Every problem is named at once (entry = system, field = ``runs.<run>.<field>``, with
    the line): a missing or non-positive number, a PSU efficiency outside (0, 1], a run
    whose wall power under load is not above its pre-load wall power (no GPU share), a
    99th percentile below the mean, an unknown field, a missing ``source``.

    Returns
    -------
    dict
        System name -> its fields (numbers as float / int) with ``runs``: run name ->
        ``wall_w``, ``wall_preload_w`` (and ``wall_p99_w``, ``samples`` where given).

    Raises
    ------
    InputError
    """
    from pathlib import Path

    from dcplan.catalog import did_you_mean
    from dcplan.errors import InputError, Problem, display_path
    from dcplan.yamlio import KEY_LINES, META_KEYS, read_yaml

    p = Path(path)
    shown = display_path(p)
    doc = read_yaml(p)
    problems: list[Problem] = []
    if not isinstance(doc, dict) or not isinstance(doc.get("systems"), dict):
        raise InputError(Problem(shown, "expected a mapping with 'systems': system name -> "
                                        "gpus, gpu_idle_w, psu_efficiency_frac, runs"))

    def line(m, key):
        return (m.get(KEY_LINES) or {}).get(key) if isinstance(m, dict) else None

    def number(m, key, entry, field, required, lo, hi, lo_open, integer):
        v = m.get(key)
        if v is None:
            if required:
                problems.append(Problem(shown, "missing; give a number", entry, field,
                                        line(m, key)))
            return None
        ok = (isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
              and (not integer or float(v).is_integer()))
        if ok:
            ok = (lo is None or (v > lo if lo_open else v >= lo)) and (hi is None or v <= hi)
        if not ok:
            rng = (f"{'an integer' if integer else 'a number'}"
                   + (f" {'>' if lo_open else '>='} {lo:g}" if lo is not None else "")
                   + (f" and <= {hi:g}" if hi is not None else ""))
            problems.append(Problem(shown, f"{v!r} is not {rng}", entry, field, line(m, key)))
            return None
        return int(v) if integer else float(v)

    allowed = {f[0] for f in _SYSTEM_FIELDS} | set(_SYSTEM_TEXT) | {"runs", "estimates"}
    run_allowed = {f[0] for f in _RUN_FIELDS}
    out: dict[str, dict] = {}
    systems = doc["systems"]
    for name, sysd in systems.items():
        if name in META_KEYS:
            continue
        if not isinstance(sysd, dict):
            problems.append(Problem(shown, "expected a mapping of the system's fields",
                                    str(name), None, line(systems, name)))
            continue
        rec: dict = {k: sysd[k] for k in _SYSTEM_TEXT + ("estimates",) if k in sysd}
        for key in sysd:
            if key not in META_KEYS and key not in allowed:
                problems.append(Problem(shown, f"unknown field{did_you_mean(key, allowed)}: rename "
                                               "or remove it", str(name), str(key),
                                        line(sysd, key)))
        for key, req, lo, hi, lo_open, integer in _SYSTEM_FIELDS:
            rec[key] = number(sysd, key, str(name), key, req, lo, hi, lo_open, integer)
        if not sysd.get("source"):
            problems.append(Problem(shown, "missing: say where the measurement was published",
                                    str(name), "source", line(sysd, "source")))
        runs = sysd.get("runs")
        if not isinstance(runs, dict) or not any(k not in META_KEYS for k in runs):
            problems.append(Problem(shown, "expected a mapping of runs: run name -> wall_w, "
                                           "wall_preload_w", str(name), "runs",
                                    line(sysd, "runs")))
            runs = {}
        rec["runs"] = {}
        for run, r in runs.items():
            if run in META_KEYS:
                continue
            where = f"runs.{run}"
            if not isinstance(r, dict):
                problems.append(Problem(shown, "expected a mapping with wall_w and "
                                               "wall_preload_w", str(name), where,
                                        line(runs, run)))
                continue
            for key in r:
                if key not in META_KEYS and key not in run_allowed:
                    problems.append(Problem(shown, f"unknown field"
                                                   f"{did_you_mean(key, run_allowed)}: rename or "
                                                   "remove it", str(name), f"{where}.{key}",
                                            line(r, key)))
            vals = {key: number(r, key, str(name), f"{where}.{key}", req, 0.0, None, True,
                                integer)
                    for key, req, integer in _RUN_FIELDS}
            wall, pre, p99 = vals["wall_w"], vals["wall_preload_w"], vals["wall_p99_w"]
            if wall is not None and pre is not None and wall <= pre:
                problems.append(Problem(shown, f"wall_w {wall:g} W is not above wall_preload_w "
                                               f"{pre:g} W: the run leaves no GPU share",
                                        str(name), f"{where}.wall_w", line(r, "wall_w")))
            if wall is not None and p99 is not None and p99 < wall:
                problems.append(Problem(shown, f"wall_p99_w {p99:g} W is below the mean "
                                               f"wall_w {wall:g} W", str(name),
                                        f"{where}.wall_p99_w", line(r, "wall_p99_w")))
            rec["runs"][str(run)] = {k: v for k, v in vals.items() if v is not None}
        out[str(name)] = rec
    if problems:
        raise InputError(problems)
    return out
