"""Performance model: goodput tokens/s and power per rack for a model and workload.

Public API used by the planner (keep these names and meanings stable):

``rack_performance(catalog, rack_id, model_id, workload_id, precision=None,
calibration=None) -> RackPerf``

``load_calibration(path) -> Calibration`` reads a file written by
``dcplan perf calibrate``; pass the result (or the path) as ``calibration``.

Modules: :mod:`~dcplan.perf.roofline` (per-replica physics),
:mod:`~dcplan.perf.goodput` (replica size and batch under SLO),
:mod:`~dcplan.perf.power` (power curve), :mod:`~dcplan.perf.params` (defaults and
calibration files), :mod:`~dcplan.perf.measurements` (measurement CSVs) and
:mod:`~dcplan.perf.calibration` (fitting and validation). docs/perf.md explains
the equations.
"""

from __future__ import annotations

from dcplan.perf.goodput import RackPerf, batch_sweep, rack_performance
from dcplan.perf.params import Calibration, load_calibration, load_perf_defaults

__all__ = [
    "Calibration",
    "RackPerf",
    "batch_sweep",
    "load_calibration",
    "load_perf_defaults",
    "rack_performance",
]
