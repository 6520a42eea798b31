"""The planner's inputs from a case: tables, the linear network's fit, reductions.

:func:`prepare_inputs` runs the steps in order: the coefficient tables
(:func:`dcplan.planner.inputs.input_tables`), the linear network at the plan's fleet
(:mod:`dcplan.planner.network_scale`, which solves LP relaxations of the model) and
the presolve reductions (:mod:`dcplan.planner.reductions`).
"""

from __future__ import annotations

from typing import Any

from dcplan.planner.inputs import PlanInputs, input_tables
from dcplan.planner.network_scale import fit_network_scale, tier_network
from dcplan.planner.reductions import drop_dominated_racks


def prepare_inputs(case: Any, progress: Any = None, solver: Any = None) -> PlanInputs:
    """Compute every coefficient the MILP needs from a resolved case.

    Parameters
    ----------
    case : Case
        The scenario with the catalogs and sites (overrides applied) and the
        performance-model calibration (see :func:`dcplan.case.load_case`).
    progress : callable, optional
        Called with one-line progress messages.
    solver : SolverOptions, optional
        For the LP solves of the linear network's fit
        (:func:`~dcplan.planner.network_scale.fit_network_scale`); default: the
        scenario's ``solver``.

    Returns
    -------
    PlanInputs

    Raises
    ------
    InputError
        When a workload cannot be served by any allowed rack.
    """
    say = progress or (lambda _msg: None)
    scn = case.scenario
    inputs, scale_of = input_tables(case, progress)
    if scn.network_model in ("linear", "tiered"):
        fit_network_scale(case, inputs, scale_of, say, solver=solver)
    if scn.network_model == "tiered":
        tier_network(case, inputs)
    drop_dominated_racks(inputs)
    return inputs
