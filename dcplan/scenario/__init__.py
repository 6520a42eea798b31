"""Scenarios: what to plan, over which periods, against which demand.

Modules by job:

- :mod:`~dcplan.scenario.schema`: the pydantic schema (:class:`Scenario`, periods,
  demand, economics, solver options);
- :mod:`~dcplan.scenario.load`: reading a file, ``extends`` and forecast files, schema
  validation with file and line of every problem;
- :mod:`~dcplan.scenario.forecast`: demand forecast files;
- :mod:`~dcplan.scenario.checks`: cross-checks against catalogs and sites;
- :mod:`~dcplan.scenario.overrides`: scenario overrides of catalog entries and sites.

Most callers want :func:`dcplan.case.load_case`, which loads a scenario with the
catalogs and sites it uses, checks everything at once and applies the overrides.
"""

from __future__ import annotations

from dcplan.scenario.checks import check_scenario, resolve_scenario, scenario_problems
from dcplan.scenario.forecast import check_forecast
from dcplan.scenario.load import load_scenario, parse_scenario, read_scenario_data
from dcplan.scenario.overrides import apply_overrides
from dcplan.scenario.schema import (
    Demand,
    Economics,
    ExistingRacks,
    Growth,
    Override,
    Paths,
    Period,
    Periods,
    PricePath,
    Rule,
    Scenario,
    Serving,
    SolverOptions,
    WorkloadProfile,
    norm_label,
    parse_period_label,
)

__all__ = [
    "Demand", "Economics", "ExistingRacks", "Growth", "Override", "Paths", "Period", "Periods",
    "PricePath", "Rule", "Scenario", "Serving", "SolverOptions", "WorkloadProfile",
    "apply_overrides", "check_forecast", "check_scenario",
    "load_scenario", "norm_label", "parse_period_label", "parse_scenario",
    "read_scenario_data", "resolve_scenario", "scenario_problems",
]
