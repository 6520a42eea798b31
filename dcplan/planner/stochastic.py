"""Two-stage stochastic plan: one extensive-form MILP over a scenario's uncertainty cases.

A scenario's ``uncertainty:`` block (:class:`~dcplan.scenario.schema.Uncertainty`) lists
cases with probabilities and a year ``first_stage_until``. Every case is a full
deterministic model (:func:`~dcplan.planner.model.build_model` of its own inputs); the
extensive form puts them side by side in one MILP and ties their **first-stage
decisions** together (non-anticipativity): the racks ordered, the facility capacity
built and the grid capacity requested in every period that starts before
``first_stage_until`` are the same in every case. Operations in those periods (which
racks serve which workload, power, energy), the CDUs (they follow the racks, and their
model depends on each case's planning scale) and every decision from
``first_stage_until`` on are the case's own recourse. An order that one case cannot
deliver (a rack type not yet available in that case in that period) is shared by the
cases that can, and is simply not delivered, nor paid, in the others, which must serve
their demand without it.

The objective is the probability-weighted NPV of the cases' costs [USD, present value],
or, with ``cvar: {weight: w, alpha: a}``, ``(1 - w) E[cost] + w CVaR_a[cost]`` (the
Rockafellar-Uryasev linearisation: ``CVaR = eta + sum_k p_k u_k / (1 - a)``,
``u_k >= cost_k - eta``, ``u_k >= 0``).

Reported besides the plan (:class:`StochasticResult`):

* **EVPI**, the expected value of perfect information: the stochastic plan's objective
  minus the objective of the cases' own optimal costs, each case planned alone as if it
  were known (the wait-and-see value). What knowing the future in advance would save.
* **VSS**, the value of the stochastic solution: the objective of the expected-value
  plan's first stage, fixed and evaluated on every case (each case choosing its best
  recourse), minus the stochastic plan's objective. What planning for the spread of
  cases saves over planning for one forecast. The expected-value plan is the
  deterministic plan of the scenario as written (or of the case named by
  ``expected_value``).
* the **regret** of each deterministic plan (the plan of one case, or of the scenario
  as written): its first stage evaluated on all cases, minus the stochastic objective.

Solver honesty: EVPI, VSS and regrets come only from solves that ended optimal within
their requested gap; each is given with the interval the gaps allow (a solve with
objective ``z`` and relative gap ``g`` proves the optimum lies in ``[z - g|z|, z]``),
and is marked as within the solver gap when that interval contains zero. Every solve
of the analysis (the extensive form, each case alone, each evaluation) allows demand
to go unserved at the scenario's ``unserved_penalty_usd_per_million_tokens``, so that
they compare like with like: a first stage that cannot serve a case pays the penalty
there, and the stochastic plan may do the same where that is cheaper than serving.
Cases left short are flagged.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pulp

from dcplan.errors import InputError, Problem
from dcplan.planner.inputs import PlanInputs
from dcplan.planner.model import build_model
from dcplan.planner.model_vars import ModelVars
from dcplan.planner.names import lp_name
from dcplan.planner.prepare import prepare_inputs
from dcplan.planner.solver import SolveInfo, SolveStatus, solve
from dcplan.scenario.schema import DEFAULT_CVAR_ALPHA

#: First-stage decisions: their label in the first-stage keys ``(label, key)`` -> the
#: :class:`~dcplan.planner.model_vars.ModelVars` field holding them; the last key element
#: is the period. (The labels are the LP variable names; the non-anticipativity rows are
#: numbered in the order of the keys.)
FIRST_STAGE = {"new": "racks_bought", "built": "capacity_built_kw",
               "req": "grid_requested_kw", "req_assessed": "grid_requested_assessed_kw",
               "req_flex": "grid_requested_flex_kw"}
#: Words for the labels of :data:`FIRST_STAGE` (tables).
FIRST_STAGE_WORDS = {"new": "racks bought", "built": "facility capacity built [kW]",
                     "req": "grid requested [kW]",
                     "req_assessed": "grid requested, with assessment [kW]",
                     "req_flex": "flexible grid requested [kW]"}
#: First-stage values below this count as zero [racks, kW].
ZERO = 1e-6
#: Name of the deterministic plan of the scenario as written.
AS_WRITTEN = "as_written"


# --------------------------------------------------------------------------------------
# Cases


@dataclass
class StochasticCase:
    """One case: its name, probability, changed case and planner inputs."""

    name: str
    probability: float
    case: Any
    inputs: PlanInputs
    description: str = ""


def risk_objective(costs: Sequence[float], probs: Sequence[float], weight: float = 0.0,
                   alpha: float = DEFAULT_CVAR_ALPHA) -> float:
    """``(1 - weight) E[cost] + weight CVaR_alpha[cost]`` of a discrete distribution [USD].

    ``CVaR_alpha`` is ``min_eta eta + sum_k p_k max(c_k - eta, 0) / (1 - alpha)``; the
    minimum is at one of the costs.

    Parameters
    ----------
    costs : sequence of float
        Cost of each case [USD, present value].
    probs : sequence of float
        Probability of each case (sum 1) [-].
    weight : float
        Weight of the CVaR [-] (0: the expected cost).
    alpha : float
        CVaR level: the share of the distribution below the tail averaged [-].

    Returns
    -------
    float
        [USD, present value].
    """
    expected = sum(p * c for p, c in zip(probs, costs, strict=True))
    if not weight:
        return expected
    cvar = min(eta + sum(p * max(c - eta, 0.0) for p, c in zip(probs, costs, strict=True))
               / (1 - alpha) for eta in costs)
    return (1 - weight) * expected + weight * cvar


def load_cases(case: Any, progress: Callable[[str], None] | None = None,
               prepare: bool = True) -> list[StochasticCase]:
    """The changed case and planner inputs of each uncertainty case of ``case``.

    ``prepare=False`` checks the cases without preparing the planner's inputs (what
    ``dcplan validate`` does); ``inputs`` is then None.

    Parameters
    ----------
    case : Case
        The case whose scenario has an ``uncertainty`` block.
    progress : callable, optional
        Receives one-line progress messages.
    prepare : bool
        Prepare each case's planner inputs (False: check the cases only).

    Returns
    -------
    list of StochasticCase
        One per uncertainty case, with its probability [-].

    Raises
    ------
    InputError
        Every problem at once, each naming the scenario file, the case (entry) and the
        field: a ``first_stage_until`` outside the horizon, a forecast file or case
        that does not exist, an unknown scenario path or override, cases whose periods
        differ.
    """
    from pathlib import Path

    from dcplan.scenario.forecast import resolve_forecast

    say = progress or (lambda _m: None)
    scn = case.scenario
    unc = scn.uncertainty
    if unc is None:
        raise ValueError("the scenario has no uncertainty block")
    problems: list[Problem] = []
    periods = scn.period_list()
    first, last = periods[0].start.year, periods[-1].start.year
    if not first < unc.first_stage_until <= last:
        problems.append(scn.problem(
            "uncertainty.first_stage_until",
            f"first_stage_until {unc.first_stage_until} is outside the horizon: give a year "
            f"after the first period ({first}) and at most the last ({last}), so that some "
            "decisions are shared and some adapt", entry="uncertainty",
            field="uncertainty.first_stage_until"))
    out: list[StochasticCase] = []
    for i, c in enumerate(unc.cases):
        where = f"uncertainty.cases.{i}"
        changes = dict(c.changes)
        if c.forecast is not None:
            path = Path(scn.source_file)
            try:
                raw = resolve_forecast(path, {"demand": {"forecast": {
                    "file": c.forecast.file, "case": c.forecast.case}}})
                changes.setdefault("demand.table", raw["demand"]["table"])
                if "unit" in raw["demand"]:
                    changes.setdefault("demand.unit", raw["demand"]["unit"])
            except InputError as exc:
                for p in exc.problems:
                    problems.append(scn.problem(
                        f"{where}.forecast", p.message.replace("demand.forecast", "forecast"),
                        entry=c.name, field=f"{where}.forecast"))
                continue
        try:
            changed = case.with_changes(changes, overrides=[
                o.model_dump(exclude_none=True) for o in c.overrides])
        except InputError as exc:
            for p in exc.problems:
                fld = p.field or ""
                if fld in changes:
                    path_ = f"{where}.changes.{fld}"
                elif fld.startswith("overrides"):
                    path_ = f"{where}.overrides"
                else:
                    path_ = where
                problems.append(scn.problem(path_, p.message, entry=c.name,
                                            field=f"{path_}" + (f" ({fld})" if fld and
                                                                fld not in path_ else "")))
            continue
        if not prepare:
            out.append(StochasticCase(c.name, c.probability, changed, None, c.description))
            continue
        say(f"case {c.name}: preparing inputs")
        try:
            d = prepare_inputs(changed)
        except InputError as exc:
            problems.extend(scn.problem(where, p.message, entry=c.name, field=where)
                            for p in exc.problems)
            continue
        labels = [p.label for p in d.periods]
        if labels != [p.label for p in periods]:
            problems.append(scn.problem(where, "a case may not change the periods; every "
                                        "case plans the scenario's horizon", entry=c.name,
                                        field=where))
            continue
        d.name = c.name
        # every network tier in the MILP: the extensive form is solved once, without the
        # deterministic plan's re-solve for a collapsed tier the plan passes
        d.network_collapsed = frozenset()
        out.append(StochasticCase(c.name, c.probability, changed, d, c.description))
    if problems:
        raise InputError(problems)
    return out


def first_stage_count(d: PlanInputs, until: int) -> int:
    """Number of leading periods that start before year ``until``.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    until : int
        Calendar year the first stage ends before [year].

    Returns
    -------
    int
        [count] of periods.
    """
    return sum(1 for p in d.periods if p.start.year < until)


def _first_stage_vars(mv: ModelVars, n_first: int) -> dict[tuple, Any]:
    out = {}
    for label, attr in FIRST_STAGE.items():
        for key, v in getattr(mv, attr).items():
            if key[-1] < n_first and isinstance(v, pulp.LpVariable):
                out[label, key] = v
    return out


# --------------------------------------------------------------------------------------
# Solves


@dataclass
class Solved:
    """One solve: status, objective and the bound its gap proves [USD, present value]."""

    status: SolveStatus
    objective: float | None
    gap: float | None
    runtime_s: float = 0.0
    unserved: bool = False
    message: str = ""

    @property
    def optimal(self) -> bool:
        """Ended optimal within the requested gap, with an objective."""
        return self.status is SolveStatus.OPTIMAL and self.objective is not None

    @property
    def lower(self) -> float | None:
        """Proven lower bound of the optimum (the objective when the gap is unknown)."""
        if self.objective is None:
            return None
        return self.objective - (self.gap or 0.0) * abs(self.objective)


def _solved(info: SolveInfo, unserved: bool = False) -> Solved:
    return Solved(info.status, info.objective, info.gap, info.runtime_s, unserved,
                  info.message)


def _case_objective(prob: pulp.LpProblem) -> pulp.LpAffineExpression:
    obj = prob.objective
    return obj if obj is not None else pulp.LpAffineExpression()


def build_extensive(cases: Sequence[StochasticCase], n_first: int,
                    cvar: Any = None, elastic: bool = False):
    """The extensive-form MILP of ``cases`` (see the module docstring).

    Parameters
    ----------
    cases : sequence of StochasticCase
        The cases, with their prepared inputs and probabilities [-].
    n_first : int
        First-stage periods: the leading periods whose decisions are shared [count].
    cvar : CVaR, optional
        Weight [-] and level [-] of the CVaR term; None: the expected cost.
    elastic : bool
        Allow priced unserved demand in every case.

    Returns
    -------
    prob : pulp.LpProblem
    models : list of ModelVars
        One per case, its variables renamed ``k<i>_<name>``.
    costs : list of pulp.LpAffineExpression
        Each case's NPV expression [USD, present value].
    shared : dict
        (attr, key) -> list of the variables tied together (of the cases that have it).
    """
    master = pulp.LpProblem(lp_name("dcplan", "stochastic"), pulp.LpMinimize)
    models, costs = [], []
    for i, c in enumerate(cases):
        prob, mv = build_model(c.inputs, elastic=elastic)
        for v in prob.variables():
            v.name = f"k{i}_{v.name}"
        for con in prob.constraints():
            master.addConstraint(con, f"k{i}_{con.name}")
        models.append(mv)
        costs.append(_case_objective(prob))
    tied: dict[tuple, list[Any]] = {}
    for mv in models:
        for k, v in _first_stage_vars(mv, n_first).items():
            tied.setdefault(k, []).append(v)
    for j, (_, vs) in enumerate(sorted(tied.items(), key=lambda kv: str(kv[0]))):
        for i, v in enumerate(vs[1:], 1):
            master.addConstraint(pulp.LpAffineExpression([(v, 1.0), (vs[0], -1.0)]) == 0,
                                 f"na_{j}_{i}")
    probs = [c.probability for c in cases]
    expected = pulp.lpSum(p * e for p, e in zip(probs, costs, strict=True))
    if cvar is not None and cvar.weight > 0:
        eta = master.add_variable("cvar_eta")
        us = []
        for i, e in enumerate(costs):
            u = master.add_variable(f"cvar_u_{i}", 0)
            master.addConstraint(u - e + eta >= 0, f"cvar_{i}")
            us.append(u)
        risk = eta + pulp.lpSum(p * u for p, u in zip(probs, us, strict=True)) / (1 - cvar.alpha)
        master.setObjective((1 - cvar.weight) * expected + cvar.weight * risk)
    else:
        master.setObjective(expected)
    return master, models, costs, tied


def _expr_value(e: pulp.LpAffineExpression) -> float:
    return float(pulp.value(e) or 0.0)


def evaluate_first_stage(c: StochasticCase, fixed: dict[tuple, float], n_first: int,
                         options: Any) -> tuple[Solved, str]:
    """Best recourse of case ``c`` with the first-stage decisions fixed at ``fixed``.

    Parameters
    ----------
    c : StochasticCase
        The case.
    fixed : dict
        ``(label, key)`` (:data:`FIRST_STAGE`) -> value: racks bought [racks], capacity
        built and grid requested [kW].
    n_first : int
        First-stage periods: the leading periods whose decisions are shared [count].
    options : SolverOptions
        Solver, time limit, gap and threads.

    Returns
    -------
    Solved, str
        The solve (priced unserved demand when the fixed first stage cannot serve the
        case otherwise: ``unserved`` True) and '' or which orders this case cannot
        deliver (they are dropped, as in the extensive form).
    """
    for elastic in (True,):
        prob, mv = build_model(c.inputs, elastic=elastic)
        own = _first_stage_vars(mv, n_first)
        missing = [k for k, x in fixed.items() if x > ZERO and k not in own]
        why = "; ".join(
            f"{FIRST_STAGE_WORDS[a]} {', '.join(map(str, k[:-1]))} in "
            f"{c.inputs.periods[k[-1]].label} ({fixed[a, k]:,.6g}) not delivered in case "
            f"{c.name}" for a, k in missing)
        for k, v in own.items():
            x = fixed.get(k, 0.0)
            x = float(round(x)) if v.cat == pulp.LpInteger else max(0.0, x)
            v.lowBound = v.upBound = x
        info = solve(prob, options)
        if info.status.has_solution or elastic:
            return _solved(info, unserved=info.status.has_solution and _short(mv)), why
    raise AssertionError("unreachable")


def _short(mv: ModelVars) -> bool:
    """Whether a solved model leaves any demand unserved."""
    return any((v.value() or 0.0) > ZERO for v in mv.unserved_tokens_per_s.values())


def _values(fixed_vars: dict[tuple, Any]) -> dict[tuple, float]:
    return {k: float(v.value() or 0.0) for k, v in fixed_vars.items()}


# --------------------------------------------------------------------------------------
# Result


@dataclass
class Bounded:
    """A difference of optimal objectives with the interval the solver gaps allow [USD]."""

    value: float | None
    low: float | None = None
    high: float | None = None
    reason: str = ""

    @property
    def within_gap(self) -> bool | None:
        """True when the gaps cannot tell it from zero; None when not computed."""
        if self.value is None or self.low is None:
            return None
        return self.low <= 0.0 <= self.high

    def to_dict(self) -> dict[str, Any]:
        """Value, interval, whether within the gap, and why not computed."""
        return {"usd": self.value, "low_usd": self.low, "high_usd": self.high,
                "within_solver_gap": self.within_gap, "why_not_computed": self.reason or None}


@dataclass
class StochasticResult:
    """The two-stage stochastic plan and what it is worth.

    Attributes
    ----------
    name : str
    first_stage_until : int
    status : SolveStatus
        Of the extensive form.
    objective_usd, gap
        Its objective [USD, present value] (expected cost, or the CVaR-weighted
        objective) and relative gap.
    expected_cost_usd : float
        Probability-weighted NPV of the cases under the stochastic plan [USD].
    cvar : CVaR or None
    cases : pandas.DataFrame
        One row per case: probability, stochastic_cost_usd (the case's NPV under the
        stochastic plan), perfect_info_cost_usd (the case planned alone), their gaps
        and statuses, and the deterministic plans' costs in that case.
    first_stage : pandas.DataFrame
        period, decision, site, item (rack type), value: the shared decisions
        [racks, kW]; delivered_in: "every case", or the cases that can deliver an
        order (the others do not get it).
    recourse : pandas.DataFrame
        case, period, site, rack, new_racks, installed_racks: every case's fleet
        under the stochastic plan (first-stage periods included).
    plans : pandas.DataFrame
        Deterministic plans (each case's, and the scenario as written): the racks
        their first stage orders, its objective on all cases [USD], regret [USD] and
        its interval, notes.
    evpi, vss : Bounded
    unserved : bool
        The stochastic plan leaves demand unserved in some case.
    message : str
        Why there is no plan, or, with unserved demand, which case and workload is
        short, when and by how much.
    unserved_accepted : bool
        The scenario accepts unserved demand (``allow_unserved: true``).
    shortfall : pandas.DataFrame
        case, workload, pool, period, short_tokens_per_s_peak [tokens/s],
        demand_tokens_per_s_peak [tokens/s], short_frac [-], short_tokens_per_month:
        the demand the stochastic plan leaves unserved (empty when none).
    notes : list of str
    timings_s : dict
    """

    name: str
    first_stage_until: int
    first_stage_periods: list[str]
    status: SolveStatus
    objective_usd: float | None
    gap: float | None
    expected_cost_usd: float | None
    cvar: Any
    cases: pd.DataFrame
    first_stage: pd.DataFrame
    recourse: pd.DataFrame
    plans: pd.DataFrame
    evpi: Bounded
    vss: Bounded
    expected_value_plan: str
    unserved: bool = False
    message: str = ""
    unserved_accepted: bool = False
    shortfall: pd.DataFrame = field(default_factory=pd.DataFrame)
    notes: list[str] = field(default_factory=list)
    timings_s: dict[str, float] = field(default_factory=dict)
    model_size: dict[str, int] = field(default_factory=dict)

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """The result tables by name (CSV files and workbook sheets), with their units."""
        return {"stochastic_cases": _with_units(self.cases),
                "stochastic_first_stage": self.first_stage,
                "stochastic_recourse": _with_units(self.recourse),
                "stochastic_plans": _with_units(self.plans)}

    def summary(self) -> dict[str, Any]:
        """Machine-readable summary (``dcplan plan --json``)."""
        def num(v):
            return None if isinstance(v, float) and not math.isfinite(v) else v

        def rec(df):
            return [{k: num(v) for k, v in r.items()} for r in df.to_dict("records")]

        return {
            "name": self.name, "kind": "stochastic", "status": self.status.value,
            "gap": self.gap, "objective_usd": self.objective_usd,
            "expected_cost_usd": self.expected_cost_usd,
            "cvar": None if self.cvar is None else {"weight": self.cvar.weight,
                                                    "alpha": self.cvar.alpha},
            "first_stage_until": self.first_stage_until,
            "first_stage_periods": self.first_stage_periods,
            "evpi_usd": self.evpi.value, "vss_usd": self.vss.value,
            "evpi": self.evpi.to_dict(), "vss": self.vss.to_dict(),
            "expected_value_plan": self.expected_value_plan,
            "unserved": self.unserved, "message": self.message,
            "unserved_accepted": self.unserved_accepted,
            "unserved_demand": rec(self.shortfall),
            "cases": rec(self.cases), "first_stage": rec(self.first_stage),
            "plans": rec(self.plans), "notes": list(self.notes),
            "model_size": self.model_size,
            "timings_s": {k: round(v, 3) for k, v in self.timings_s.items()},
        }


def _bounded(stoch: Solved, others: list[Solved], probs: list[float], weight: float,
             alpha: float, sign: int, what: str) -> Bounded:
    """``sign * (f(others) - stochastic)`` with its gap interval (sign -1: EVPI)."""
    bad = [s for s in [stoch, *others] if not s.optimal]
    if bad:
        return Bounded(None, reason=f"{what} needs optimal solves; one ended "
                                    f"{bad[0].status.value}" + (f" ({bad[0].message})"
                                                                if bad[0].message else ""))
    hi = risk_objective([s.objective for s in others], probs, weight, alpha)
    lo = risk_objective([s.lower for s in others], probs, weight, alpha)
    z, zl = stoch.objective, stoch.lower
    if sign > 0:   # others - stochastic (VSS, regret)
        return Bounded(hi - z, lo - z, hi - zl)
    return Bounded(z - hi, zl - hi, z - lo)   # stochastic - others (EVPI)


def plan_stochastic(case: Any, options: Any = None, *,
                    progress: Callable[[str], None] | None = None) -> StochasticResult:
    """Solve the two-stage stochastic plan of a scenario with an ``uncertainty:`` block.

    Parameters
    ----------
    case : Case
    options : SolverOptions, optional
        Default: the scenario's. Every solve (the extensive form, each case alone, each
        evaluation) uses them.
    progress : callable, optional
        Receives one-line progress messages.

    Returns
    -------
    StochasticResult
        Never presents a non-optimal solve as a plan: ``status`` says what the
        extensive form ended with; EVPI and VSS are None (with the reason) unless
        every solve they need ended optimal.
    """
    from dcplan.planner.run import model_size
    from dcplan.planner.tables import Solution, fleet_table, unserved_table

    say = progress or (lambda _m: None)
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    scn = case.scenario
    unc = scn.uncertainty
    opt = options or scn.solver
    cases = load_cases(case, progress)
    timings["prepare"] = time.perf_counter() - t0
    n_first = first_stage_count(cases[0].inputs, unc.first_stage_until)
    labels = [p.label for p in cases[0].inputs.periods]
    probs = [c.probability for c in cases]
    weight = unc.cvar.weight if unc.cvar else 0.0
    alpha = unc.cvar.alpha if unc.cvar else DEFAULT_CVAR_ALPHA
    notes: list[str] = []

    # 1. the extensive form
    t1 = time.perf_counter()
    say(f"extensive form: {len(cases)} cases, first stage {labels[0]}..{labels[n_first - 1]}")
    prob, models, costs, tied = build_extensive(cases, n_first, unc.cvar, elastic=True)
    size = model_size(prob)
    say(f"model: {size['variables']:,} variables ({size['integers']:,} integer), "
        f"{size['constraints']:,} constraints")
    info = solve(prob, opt)
    unserved = info.status.has_solution and any(_short(mv) for mv in models)
    timings["extensive"] = time.perf_counter() - t1
    stoch = _solved(info, unserved)
    say(f"stochastic plan: {info.status.value}"
        + (f", gap {info.gap:.3%}" if info.gap is not None else "")
        + f" in {info.runtime_s:.1f} s")
    empty = pd.DataFrame()
    if not info.status.has_solution:
        why = f"the stochastic plan ended {info.status.value}" + (
            f" ({info.message})" if info.message else "")
        none = Bounded(None, reason=why)
        return StochasticResult(case.name, unc.first_stage_until, labels[:n_first],
                                info.status, None, info.gap, None, unc.cvar, empty, empty,
                                empty, empty, none, none, "", message=why,
                                timings_s=timings, model_size=size)
    case_costs = [_expr_value(e) for e in costs]
    expected = sum(p * c for p, c in zip(probs, case_costs, strict=True))
    first_vals = {k: float(vs[0].value() or 0.0) for k, vs in tied.items()}
    owners = [set(_first_stage_vars(mv, n_first)) for mv in models]
    rows = []
    for (attr, key), x in first_vals.items():
        if abs(x) <= ZERO:
            continue
        site = key[1] if attr == "new" else key[0]
        item = key[0] if attr == "new" else ""
        have = [c.name for c, own in zip(cases, owners, strict=True) if (attr, key) in own]
        rows.append({"period": labels[key[-1]], "decision": FIRST_STAGE_WORDS[attr],
                     "site": site, "item": item,
                     "value": float(round(x)) if attr == "new" else x,
                     "delivered_in": "every case" if len(have) == len(cases)
                     else ", ".join(have)})
    first_stage = pd.DataFrame(rows, columns=["period", "decision", "site", "item", "value",
                                              "delivered_in"])
    first_stage = first_stage.sort_values(["period", "decision", "site", "item"],
                                          ignore_index=True)
    rec = []
    short = []
    for c, mv in zip(cases, models, strict=True):
        sol = Solution.from_model(mv)
        if unserved:
            short.append(unserved_table(c.inputs, sol).assign(case=c.name))
        fleet = fleet_table(c.inputs, sol)
        fleet = fleet[(fleet.new_racks > 0) | (fleet.installed_racks > 0)]
        rec.append(fleet[["period", "site", "rack", "new_racks", "installed_racks"]]
                   .assign(case=c.name))
    recourse = pd.concat(rec, ignore_index=True)[["case", "period", "site", "rack",
                                                   "new_racks", "installed_racks"]]
    recourse["stage"] = ["first" if labels.index(str(p)) < n_first else "second"
                         for p in recourse.period]

    # 2. each case alone, with perfect information
    t2 = time.perf_counter()
    alone: list[Solved] = []
    alone_first: list[dict[tuple, float] | None] = []
    for c in cases:
        say(f"case {c.name} alone (perfect information)")
        solved, fixed = solve_alone(c.inputs, opt, n_first)
        alone.append(solved)
        alone_first.append(fixed)
    timings["perfect_information"] = time.perf_counter() - t2

    # 3. the deterministic plans' first stages on every case
    t3 = time.perf_counter()
    plans: list[tuple[str, dict[tuple, float] | None, str]] = [
        (c.name, f if a.optimal else None, a.message)
        for c, f, a in zip(cases, alone_first, alone, strict=True)]
    ev_name = unc.expected_value or AS_WRITTEN
    if unc.expected_value is None:
        same = [c.name for c in cases if _same_inputs(c, case)]
        if same:
            ev_name = same[0]
            notes.append(f"the scenario as written is case {same[0]}: its plan is the "
                         "expected-value plan")
        else:
            say("the scenario as written (expected-value plan)")
            d = prepare_inputs(case)
            d.network_collapsed = frozenset()  # every tier, as in the cases
            solved, fixed = solve_alone(d, opt, n_first)
            if not solved.optimal:
                notes.append(f"the scenario as written ended {solved.status.value}; no VSS")
            plans.append((AS_WRITTEN, fixed if solved.optimal else None, solved.message))
    evals: dict[str, list[tuple[Solved, str]]] = {}
    for name, fixed, _ in plans:
        if fixed is None:
            continue
        say(f"plan of {name}: its first stage on every case")
        evals[name] = [evaluate_first_stage(c, fixed, n_first, opt) for c in cases]
    timings["evaluation"] = time.perf_counter() - t3

    # 4. EVPI, VSS, regrets
    evpi = _bounded(stoch, alone, probs, weight, alpha, -1, "EVPI")
    ev_eval = evals.get(ev_name)
    if ev_eval is None:
        vss = Bounded(None, reason=f"the expected-value plan ({ev_name}) has no optimal plan")
    else:
        vss = _bounded(stoch, [s for s, _ in ev_eval], probs, weight, alpha, 1, "VSS")
    plan_rows = []
    for name, fixed_, msg in plans:
        ev = evals.get(name)
        row = {"plan": name, "expected_value_plan": name == ev_name,
               "first_stage": _first_stage_words(fixed_, labels)}
        if ev is None:
            row.update(objective_usd=None, regret_usd=None, regret_low_usd=None,
                       regret_high_usd=None, within_solver_gap=None,
                       notes=msg or "no optimal plan")
        else:
            b = _bounded(stoch, [s for s, _ in ev], probs, weight, alpha, 1, "regret")
            shortfall = [c.name for c, (s, _) in zip(cases, ev, strict=True) if s.unserved]
            words = [why for _, why in ev if why]
            if shortfall:
                words.append(f"leaves demand unserved (priced) in {', '.join(shortfall)}")
            row.update(objective_usd=None if b.value is None else b.value + stoch.objective,
                       regret_usd=b.value, regret_low_usd=b.low, regret_high_usd=b.high,
                       within_solver_gap=b.within_gap,
                       notes="; ".join(words) or b.reason)
        plan_rows.append(row)
    plan_df = pd.DataFrame(plan_rows)

    case_rows = []
    for i, c in enumerate(cases):
        row = {"case": c.name, "probability": c.probability,
               "stochastic_cost_usd": case_costs[i],
               "perfect_info_cost_usd": alone[i].objective,
               "perfect_info_status": alone[i].status.value,
               "perfect_info_gap": alone[i].gap,
               "perfect_info_unserved": alone[i].unserved}
        for name, ev in evals.items():
            row[f"cost_with_{name}_plan_usd"] = ev[i][0].objective
        case_rows.append(row)
    case_df = pd.DataFrame(case_rows)
    timings["total"] = time.perf_counter() - t0
    if weight:
        notes.append(f"objective: {1 - weight:g} x expected cost + {weight:g} x CVaR at "
                     f"{alpha:g} (the mean cost of the worst {1 - alpha:.0%} of the "
                     "probability); EVPI, VSS and regrets are differences of this objective")
    shortfall = pd.DataFrame()
    message = info.message
    if unserved:
        # cases served in full add no rows (an empty frame in concat is deprecated)
        shortfall = pd.concat([t for t in short if len(t)] or short[:1], ignore_index=True)
        shortfall = shortfall[["case", *[c for c in shortfall.columns if c != "case"]]]
        unserved = bool(len(shortfall))
    if unserved:
        message = shortfall_message(
            shortfall, scn.economics.unserved_penalty_usd_per_million_tokens)
        notes.append(message)
    return StochasticResult(
        case.name, unc.first_stage_until, labels[:n_first], info.status, info.objective,
        info.gap, expected, unc.cvar, case_df, first_stage, recourse, plan_df, evpi, vss,
        ev_name, unserved=unserved, message=message,
        unserved_accepted=scn.allow_unserved, shortfall=shortfall, notes=notes,
        timings_s=timings, model_size=size)


def shortfall_message(shortfall: pd.DataFrame, penalty_usd_per_million_tokens: float) -> str:
    """Which case and workload the stochastic plan leaves short, when and by how much.

    Parameters
    ----------
    shortfall : pandas.DataFrame
        Rows of :func:`dcplan.planner.tables.unserved_table` with a ``case`` column
        [tokens/s, -].
    penalty_usd_per_million_tokens : float
        The scenario's price of unserved demand [USD per million tokens].

    Returns
    -------
    str
        One sentence per case: each short workload (and pool), its periods and its
        largest shortfall at peak [tokens/s] and as a share of its demand.
    """
    parts = []
    for name, rows in shortfall.groupby("case", sort=False):
        words = []
        for (w, pool), g in rows.groupby(["workload", "pool"], sort=False):
            label = w if pool == "all" else f"{w} ({pool})"
            words.append(f"{label} short by up to {g.short_tokens_per_s_peak.max():,.0f} "
                         f"tokens/s at peak ({g.short_frac.max():.0%}) in "
                         f"{', '.join(map(str, dict.fromkeys(g.period)))}")
        parts.append(f"case {name}: " + "; ".join(words))
    return ("the stochastic plan leaves demand unserved, priced at "
            f"economics.unserved_penalty_usd_per_million_tokens = "
            f"{penalty_usd_per_million_tokens:g} USD per million tokens: "
            + ". ".join(parts) + ". Demand goes unserved where the sites' limits leave no "
            "room for the racks it needs, or where serving it would cost more than the "
            "penalty (a higher penalty serves such demand).")


def _with_units(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the units of its money and rack-count columns.

    ``*_usd`` [USD, present value] and ``*_racks`` [racks], so that written tables round
    money to the cent and write whole rack counts as integers.
    """
    out = df.copy()
    units = dict(df.attrs.get("units", {}))
    for c in df.columns:
        if c.endswith("_usd"):
            units.setdefault(c, "USD (present value)")
        elif c.endswith("_racks"):
            units.setdefault(c, "racks")
    out.attrs["units"] = units
    return out


def _first_stage_words(fixed: dict[tuple, float] | None, labels: list[str]) -> str:
    """Racks a first stage orders, as text ('2027: 26 gb200_nvl72 at seoul_metro')."""
    if fixed is None:
        return ""
    parts = [f"{labels[k[-1]]}: {round(x):,} {k[0]} at {k[1]}"
             for (a, k), x in sorted(fixed.items(), key=lambda kv: (kv[0][1][-1], str(kv)))
             if a == "new" and round(x) > 0]
    return "; ".join(parts) or "no racks"


def solve_alone(d: PlanInputs, options: Any, n_first: int
                ) -> tuple[Solved, dict[tuple, float] | None]:
    """The deterministic plan of one case's inputs and its first-stage decisions.

    With priced unserved demand allowed, as every solve of the stochastic analysis.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    options : SolverOptions
        Solver, time limit, gap and threads.
    n_first : int
        First-stage periods: the leading periods whose decisions are shared [count].

    Returns
    -------
    solved : Solved
        Status, objective and bound [USD, present value].
    first_stage : dict or None
        ``(label, key)`` -> value: racks bought [racks], capacity built and grid
        requested [kW]; None without a solution.
    """
    from dcplan.planner.start import rounding_start

    prob, mv = build_model(d, elastic=True)
    info = solve(prob, options, rounding=rounding_start(d, mv))
    if info.status.has_solution:
        return _solved(info, _short(mv)), _values(_first_stage_vars(mv, n_first))
    return _solved(info), None


def _same_inputs(c: StochasticCase, case: Any) -> bool:
    """Whether case ``c`` changes nothing of the scenario as written."""
    unc = case.scenario.uncertainty
    spec = next(x for x in unc.cases if x.name == c.name)
    return spec.forecast is None and not spec.changes and not spec.overrides
