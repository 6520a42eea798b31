"""Performance model: goodput tokens/s and power per rack for a model and workload.

Public API used by the planner (keep these names and meanings stable):

``rack_performance(catalog, rack_id, model_id, workload_id, precision=None, *,
defaults, calibration) -> RackPerf``; ``RackPerf.goodput_tokens_per_s`` counts input +
output tokens per rack, ``output_tokens_per_s`` output tokens only.
``power_cap_frac`` (default 1: uncapped) caps every accelerator's board power at that
fraction of its max power, with ``power_curve=inputs.power_curve(acc_id)``
(``catalogs/power_curves.yaml``): goodput, ``power_kw`` and ``power_at_cap_kw`` at that
cap (docs/perf.md, "Power caps").

The model reads no file: ``defaults`` (:class:`~dcplan.perf.params.PerfDefaults`) and
``calibration`` (a :class:`Calibration`, or None for the a-priori defaults) come from a
:class:`~dcplan.case.Case` (``case.model_defaults``: the file's defaults with the
scenario's engine cap, and ``case.perf_calibration``) or from
``load_perf_inputs(catalog, calibration=None)``, the one loader of
``perf_defaults.yaml`` and the calibration next to it (or the file given).
``load_calibration(path) -> Calibration`` reads a file written by
``dcplan perf calibrate``.

Modules: :mod:`~dcplan.perf.roofline` (step times of one instance),
:mod:`~dcplan.perf.serving` (operating points: aggregated, disaggregated, open and
closed loop), :mod:`~dcplan.perf.latency` (queueing and percentiles),
:mod:`~dcplan.perf.speculative`, :mod:`~dcplan.perf.goodput` (layout, batch and draft
length under SLO), :mod:`~dcplan.perf.frontier` (throughput-interactivity Pareto
curve), :mod:`~dcplan.perf.power` (and power caps), :mod:`~dcplan.perf.capcurve`
(goodput and power against the cap), :mod:`~dcplan.perf.params` (defaults and
calibration files), :mod:`~dcplan.perf.measurements` (measurement CSVs),
:mod:`~dcplan.perf.benchmarks` and :mod:`~dcplan.perf.recipes` (what the measurement
files' benchmarks ran: request lengths, engine recipes, MLPerf power systems),
:mod:`~dcplan.perf.predict` and :mod:`~dcplan.perf.calibration` (validation and
fitting). docs/perf.md explains the equations.
"""

from __future__ import annotations

from dcplan.lazy import attach

#: Public name -> the module that defines it, imported when first asked for (PEP 562):
#: reading a calibration or a saved plan needs :mod:`~dcplan.perf.params`, not the
#: model and scipy's solvers.
_HOMES = {
    "Layout": "goodput", "RackPerf": "goodput", "batch_sweep": "goodput",
    "rack_performance": "goodput", "workload_performance": "goodput",
    "Calibration": "params", "PerfInputs": "params", "load_calibration": "params",
    "load_perf_defaults": "params", "load_perf_inputs": "params",
}

__all__ = sorted(_HOMES)
__getattr__, __dir__ = attach(__name__, _HOMES)
