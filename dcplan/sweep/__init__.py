"""Sweeps: one case planned under many samples of uncertain assumptions, on a Dask cluster.

Python API::

    from dcplan.case import load_case
    from dcplan.sweep import load_sweep_spec, prepare_sweep, run_sweep, load_sweep, summarize

    spec = load_sweep_spec("examples/sweeps/minimal_lhs.yaml")
    plan = prepare_sweep(spec, load_case(spec.base_path()), samples=64)
    run_sweep(plan, "out/sweep", workers=2)          # or scheduler="tcp://host:8786"
    summary = summarize(load_sweep("out/sweep"))
    summary.kpis, summary.purchase, summary.sensitivity, summary.tornado

Modules: :mod:`~dcplan.sweep.spec` (sweep files), :mod:`~dcplan.sweep.design`
(sampling: grid, random, Latin hypercube, Morris, Sobol), :mod:`~dcplan.sweep.apply`
(a sample's values applied to the base case), :mod:`~dcplan.sweep.memo` (facility
tables reused across samples), :mod:`~dcplan.sweep.task` (one sample on a worker),
:mod:`~dcplan.sweep.run` (the Dask run and the folder), :mod:`~dcplan.sweep.summary`
(percentiles, purchase probabilities, sensitivity indices). The charts, workbook,
report and summary text are in :mod:`dcplan.export.sweep`. See ``docs/uncertainty.md``.
"""

from __future__ import annotations

from dcplan.sweep.apply import sample_case
from dcplan.sweep.design import Design, make_design
from dcplan.sweep.run import (
    SweepOutcome,
    SweepPlan,
    is_sweep_folder,
    prepare_sweep,
    read_manifest,
    run_sweep,
)
from dcplan.sweep.spec import SweepSpec, load_sweep_spec
from dcplan.sweep.summary import SweepData, SweepSummary, load_sweep, summarize

__all__ = ["Design", "SweepData", "SweepOutcome", "SweepPlan", "SweepSpec", "SweepSummary",
           "is_sweep_folder", "load_sweep", "load_sweep_spec", "make_design", "prepare_sweep",
           "read_manifest", "run_sweep", "sample_case", "summarize"]
