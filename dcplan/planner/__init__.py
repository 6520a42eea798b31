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

from dcplan.lazy import attach

#: Public name -> the module that defines it, imported when first asked for (PEP 562):
#: the commands that only read a saved plan (show, compare, export) need
#: :mod:`~dcplan.planner.saved` and the tables, not the MILP, its solver or pulp.
_HOMES = {
    "PlanInputs": "inputs", "build_model": "model", "lp_name": "names",
    "parse_lp_name": "names", "TABLES": "plan_result", "PlanResult": "plan_result",
    "result_info": "plan_result", "prepare_inputs": "prepare", "model_size": "run",
    "solve_case": "run", "solve_inputs": "run", "SolveInfo": "solver",
    "SolverError": "solver", "SolveStatus": "solver", "is_proven_optimal": "solver",
    "solve": "solver", "status_text": "solver",
}

__all__ = sorted(_HOMES)
__getattr__, __dir__ = attach(__name__, _HOMES)
