"""Fleet planner: how many racks of which type, where and when, at least discounted cost.

Python API::

    from dcplan.case import load_case
    from dcplan.planner import solve_case
    result = solve_case(load_case("examples/minimal.yaml"))
    result = solve_case("examples/minimal.yaml")   # the same, loading the case itself
    result.status, result.objective_usd
    result.tables["fleet"]          # tidy DataFrames with units in the column names
    for name, df in result:          # every result table
        ...

Modules: :mod:`~dcplan.planner.prepare` (:func:`prepare_inputs`: the coefficient
tables of :mod:`~dcplan.planner.inputs`, the linear network's fit of
:mod:`~dcplan.planner.network_scale`, the presolve :mod:`~dcplan.planner.reductions`),
:mod:`~dcplan.planner.model` (the MILP; its network rows in
:mod:`~dcplan.planner.network_rows`, its variables in
:mod:`~dcplan.planner.model_vars`, its constraint families listed in
:mod:`~dcplan.planner.families`), :mod:`~dcplan.planner.solver` (HiGHS/CBC),
:mod:`~dcplan.planner.run` (:func:`solve_case`), :mod:`~dcplan.planner.plan_result`
(:class:`PlanResult`), :mod:`~dcplan.planner.tables` (result tables),
:mod:`~dcplan.planner.analysis` (shadow prices, binding limits, diagnosis),
:mod:`~dcplan.planner.sizing` (exact sizing of the solved fleet). See
``docs/planner.md`` for the scenario format and the formulation.
"""

from __future__ import annotations

from dcplan.planner.inputs import PlanInputs
from dcplan.planner.model import build_model
from dcplan.planner.names import lp_name, parse_lp_name
from dcplan.planner.plan_result import TABLES, PlanResult, result_info
from dcplan.planner.prepare import prepare_inputs
from dcplan.planner.run import model_size, solve_case, solve_inputs
from dcplan.planner.solver import (
    SolveInfo,
    SolverError,
    SolveStatus,
    is_proven_optimal,
    solve,
    status_text,
)

__all__ = ["TABLES", "PlanInputs", "PlanResult", "SolveInfo", "SolveStatus", "SolverError",
           "build_model", "is_proven_optimal", "lp_name", "model_size", "parse_lp_name",
           "prepare_inputs", "result_info", "solve", "solve_case", "solve_inputs",
           "status_text"]
