"""Performance model: goodput tokens/s and power per rack for a model and workload.

Public API used by the planner (keep these names and meanings stable):

``rack_performance(catalog, rack_id, model_id, workload_id, precision=None,
calibration=None) -> RackPerf``; ``RackPerf.goodput_tokens_per_s`` counts input +
output tokens per rack, ``output_tokens_per_s`` output tokens only.

``load_calibration(path) -> Calibration`` reads a file written by
``dcplan perf calibrate``; pass the result (or the path) as ``calibration``.

Modules: :mod:`~dcplan.perf.roofline` (step times of one instance),
:mod:`~dcplan.perf.serving` (operating points: aggregated, disaggregated, open and
closed loop), :mod:`~dcplan.perf.latency` (queueing and percentiles),
:mod:`~dcplan.perf.speculative`, :mod:`~dcplan.perf.goodput` (layout, batch and draft
length under SLO), :mod:`~dcplan.perf.frontier` (throughput-interactivity Pareto
curve), :mod:`~dcplan.perf.power`, :mod:`~dcplan.perf.params` (defaults and
calibration files), :mod:`~dcplan.perf.measurements` (measurement CSVs),
:mod:`~dcplan.perf.predict` and :mod:`~dcplan.perf.calibration` (validation and
fitting). docs/perf.md explains the equations.
"""

from __future__ import annotations

from dcplan.perf.goodput import (
    Layout,
    RackPerf,
    batch_sweep,
    rack_performance,
    workload_performance,
)
from dcplan.perf.params import Calibration, load_calibration, load_perf_defaults

__all__ = [
    "Calibration",
    "Layout",
    "RackPerf",
    "batch_sweep",
    "load_calibration",
    "load_perf_defaults",
    "rack_performance",
    "workload_performance",
]
