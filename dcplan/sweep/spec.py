"""Sweep files: a base scenario, uncertain parameters with distributions, a sampling method.

A sweep file (``kind: dcplan_sweep``, examples in ``examples/sweeps/``)::

    kind: dcplan_sweep
    name: minimal_uncertainty
    base: ../minimal.yaml          # scenario file, relative to this file
    method: lhs                    # grid | random | lhs | morris | sobol
    samples: 64                    # plans to solve (not for grid)
    seed: 7
    outputs: [npv_cost_usd, usd_per_million_tokens]
    parameters:                    # the uncertain inputs
      - name: chat_growth
        path: demand.growth.chat.annual_growth
        distribution: uniform
        low: 0.5
        high: 0.9
      - name: kyber_capex
        override: {kind: racks, id: rubin_ultra_nvl576, field: capex_usd}
        apply: scale
        distribution: triangular
        low: 0.85
        mode: 1.0
        high: 1.4

Each parameter names one target (``path``, ``override``, ``grid_step``,
``calibration`` or ``calibration_file``, see :class:`Parameter`) and either a
distribution or, for the grid method, a ``grid`` of values. :func:`load_sweep_spec`
reads and validates a file (and the calibration files it names) and reports every
problem at once with file, line, entry (the parameter) and field;
:func:`check_against_case` tries every parameter's extreme values on the base case so
that a wrong path or an impossible value is reported before anything is solved.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dcplan.catalog import explain_errors, suggest
from dcplan.errors import InputError, Problem, display_path
from dcplan.scenario.schema import (
    MAX_TIME_LIMIT_S,
    NOT_BOOL,
    SWEEP_FILE_KIND,
    count_limit,
    not_a_scenario,
)
from dcplan.yamlio import KEY_LINES, LINE_KEY, read_yaml, strip_lines

#: First key of every sweep file.
SWEEP_KIND = SWEEP_FILE_KIND

#: Environment variable that raises or lowers :data:`DEFAULT_MAX_SWEEP_PLANS`.
MAX_SWEEP_PLANS_ENV = "DCPLAN_MAX_SWEEP_PLANS"
#: Most plans one sweep may solve, unless :data:`MAX_SWEEP_PLANS_ENV` says otherwise
#: [plans]: the samples a method generates from ``samples`` (or ``--samples``), or the
#: points of a grid (the product of its parameters' value counts). Every plan is one
#: MILP: 0.5-1 s of CPU in the minimal sweep, 25-60 s for the Korea baseline
#: (docs/uncertainty.md), so 10,000 plans are 1.5-3 CPU-hours to a week of CPU time;
#: drawing the samples alone takes about 3.5 ms per sample of ten parameters (35 s for
#: 10,000). Enough for a Sobol design of 1,024 base samples of 7 parameters (9,216
#: plans) or LHS percentiles to a fraction of a per cent; larger counts are typos.
DEFAULT_MAX_SWEEP_PLANS = 10_000


def max_sweep_plans() -> int:
    """Most plans one sweep may solve [plans] (see :data:`MAX_SWEEP_PLANS_ENV`)."""
    return count_limit(MAX_SWEEP_PLANS_ENV, DEFAULT_MAX_SWEEP_PLANS)

METHODS = ("grid", "random", "lhs", "morris", "sobol")
DISTRIBUTIONS = ("uniform", "normal", "lognormal", "triangular", "choice")
APPLY = ("set", "scale", "add", "grow")

#: Outputs collected when a sweep file does not list its own.
DEFAULT_OUTPUTS = ("npv_cost_usd", "usd_per_million_tokens")

#: Fields each distribution takes (besides ``distribution``); [required], [optional].
DIST_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "uniform": (("low", "high"), ()),
    "triangular": (("low", "mode", "high"), ()),
    "normal": (("mean", "sd"), ("low", "high")),
    "lognormal": (("median", "sigma"), ("low", "high")),
    "choice": (("values",), ("weights",)),
}
_DIST_KEYS = ("low", "high", "mode", "mean", "sd", "median", "sigma", "values", "weights")

#: Morris levels when the file does not say.
DEFAULT_LEVELS = 4

#: Column names a parameter may not take (they are the sample table's own columns).
RESERVED_NAMES = frozenset({"sample_id", "weight", "status", "message", "worker", "solve_s",
                            "block"})

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

Scalar = float | int | str | bool

#: What a parameter can change, one per parameter (see :class:`Parameter`).
TARGETS = ("path", "override", "grid_step", "calibration", "calibration_file")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OverrideTarget(_Strict):
    """A catalog entry's or site's field, as in a scenario's ``overrides`` (no operation)."""

    kind: str
    id: str
    field: str
    from_year: int | None = None


class GridStepTarget(_Strict):
    """A step of a site's ``grid_mw``; the sampled value is its delay [years]."""

    site: str
    year: int


class CalibrationTarget(_Strict):
    """A performance-model parameter (``perf_defaults.yaml`` / a calibration file).

    ``accelerator`` None: every accelerator of the scenario's racks.
    """

    param: str
    accelerator: str | None = None


class Parameter(_Strict):
    """One uncertain input.

    Attributes
    ----------
    name : str
        Column name in the results (lowercase letters, digits, ``_``).
    label, unit : str, optional
        Words and unit for charts and tables (default: the name).
    path : str, optional
        Dotted scenario path (``demand.growth.chat.annual_growth``).
    override : OverrideTarget, optional
        A catalog entry's or site's field (``{kind: racks, id: gb200_nvl72, field:
        capex_usd}``).
    grid_step : GridStepTarget, optional
        The step of ``site``'s ``grid_mw`` at ``year``, moved by the sampled number of
        years (positive: later).
    calibration : CalibrationTarget, optional
        A performance-model efficiency or overhead (``hbm_eff_frac``, ...).
    calibration_file : True, optional
        The whole performance-model calibration: each value names a calibration file
        (``dcplan perf calibrate``, relative to the sweep file), read once when the
        sweep file is loaded. Alternative fits of the same rows keep their parameters'
        joint values, which sampling each parameter alone would not (docs/perf.md,
        "How well the data pin the fit"). A choice or a grid; no ``apply``. A
        ``calibration`` parameter in the same sweep changes the chosen file's values.
    apply : {"set", "scale", "add", "grow"}
        How the sampled value changes the target: replaces it, multiplies it, is added
        to it, or (year-keyed tables such as ``demand.table.chat``) multiplies the
        growth since the first year, year ``y`` getting ``value ** ((y - first) /
        (last - first))``. Default ``set``; ``grid_step`` takes none.
    integer : bool
        Round sampled values to whole numbers.
    distribution : str, optional
        ``uniform`` (low, high), ``triangular`` (low, mode, high), ``normal`` (mean,
        sd, optional low/high truncation), ``lognormal`` (median, sigma of the
        logarithm, optional low/high), ``choice`` (values, optional weights summing to
        1).
    grid : list, optional
        Values for ``method: grid`` (equal weights; a ``choice`` gives its own).
    """

    name: str | None = None
    label: str | None = None
    unit: str | None = None
    path: str | None = None
    override: OverrideTarget | None = None
    grid_step: GridStepTarget | None = None
    calibration: CalibrationTarget | None = None
    calibration_file: Literal[True] | None = None
    apply: Literal["set", "scale", "add", "grow"] | None = None
    integer: bool = False
    distribution: Literal["uniform", "normal", "lognormal", "triangular", "choice"] | None = None
    low: float | None = None
    high: float | None = None
    mode: float | None = None
    mean: float | None = None
    sd: float | None = None
    median: float | None = None
    sigma: float | None = None
    values: list[Scalar] | None = None
    weights: list[float] | None = None
    grid: list[Scalar] | None = None

    @property
    def target(self) -> str:
        """Which target the parameter changes (one of :data:`TARGETS`)."""
        for t in TARGETS:
            if getattr(self, t) is not None:
                return t
        return ""

    @property
    def op(self) -> str:
        """The ``apply`` operation with its default."""
        if self.target == "grid_step":
            return "delay"
        return self.apply or "set"

    @property
    def title(self) -> str:
        """Label with unit, for charts and tables."""
        text = self.label or self.name or ""
        return f"{text} [{self.unit}]" if self.unit else text

    def describe(self) -> str:
        """The target in words (``override racks/gb200_nvl72.capex_usd (scale)``)."""
        if self.path:
            return f"{self.path} ({self.op})"
        if self.override:
            o = self.override
            year = f" from {o.from_year}" if o.from_year is not None else ""
            return f"{o.kind}/{o.id}.{o.field}{year} ({self.op})"
        if self.grid_step:
            return f"grid step of {self.grid_step.site} in {self.grid_step.year} (delay, years)"
        if self.calibration:
            c = self.calibration
            return f"perf {c.param} of {c.accelerator or 'every accelerator'} ({self.op})"
        if self.calibration_file:
            return "performance-model calibration file (set)"
        return ""


class SolverSettings(_Strict):
    """Solver limits per sample (HiGHS runs single-threaded in a sweep).

    Attributes
    ----------
    time_limit_s : float or None
        Time limit of each sample's solve [s]; None: scaled from the base plan's own
        solve time (:func:`dcplan.sweep.run.sample_time_limit`). ``--time-limit`` wins.
    gap : float or None
        Relative MIP gap of each sample [-]; None: the base scenario's. ``--gap`` wins.
    """

    time_limit_s: Annotated[float, NOT_BOOL, Field(gt=0, le=MAX_TIME_LIMIT_S)] | None = None
    gap: Annotated[float, NOT_BOOL, Field(ge=0, lt=1)] | None = None


class SweepSpec(_Strict):
    """A validated sweep file.

    Attributes
    ----------
    name, description : str
    base : str
        Scenario file (relative paths are taken from the sweep file's folder).
    method : str
        ``grid``, ``random``, ``lhs`` (Latin hypercube), ``morris`` (elementary
        effects), ``sobol`` (Saltelli design for Sobol indices).
    samples : int, optional
        Plans to solve. ``morris`` rounds down to whole trajectories of
        ``len(parameters) + 1`` plans, ``sobol`` to a power-of-two base sample times
        ``len(parameters) + 2`` plans; ``grid`` takes none (the grid sets the count).
    seed : int
    levels : int, optional
        Morris levels (default 4).
    outputs : list of str
        KPI names (``kpis`` table of a plan) to collect and analyse.
    solver : SolverSettings
    parameters : list of Parameter
    file : str
        The sweep file as shown in messages (set by :func:`load_sweep_spec`).
    calibrations : dict
        Value of a ``calibration_file`` parameter (as written) -> the calibration its
        file holds (read by :func:`load_sweep_spec`).
    """

    kind: Literal["dcplan_sweep"]
    name: str
    description: str = ""
    base: str
    method: Literal["grid", "random", "lhs", "morris", "sobol"]
    samples: int | None = None
    seed: Annotated[int, Field(ge=0)] = 0
    levels: int | None = None
    outputs: list[str] = Field(default_factory=lambda: list(DEFAULT_OUTPUTS))
    solver: SolverSettings = Field(default_factory=SolverSettings)
    parameters: list[Parameter]
    file: str = Field(default="<sweep>", exclude=True)
    folder: str = Field(default=".", exclude=True)
    lines: dict[str, int] = Field(default_factory=dict, exclude=True)
    calibrations: dict[str, Any] = Field(default_factory=dict, exclude=True)

    def base_path(self) -> Path:
        """The base scenario file."""
        p = Path(self.base)
        return p if p.is_absolute() else Path(self.folder) / p

    def line(self, *loc: Any) -> int | None:
        """Line of a key (``line("parameters", 2, "low")``), else of its mapping."""
        for n in range(len(loc), -1, -1):
            key = ".".join(str(x) for x in loc[:n])
            if key in self.lines:
                return self.lines[key]
        return None

    def problem(self, message: str, index: int | None = None, field: str | None = None
                ) -> Problem:
        """A problem in this file at parameter ``index`` (0-based) and ``field``."""
        if index is None:
            return Problem(self.file, message, field=field, line=self.line(field or ""))
        loc = ("parameters", index, *(field.split(".")[:1] if field else ()))
        return Problem(self.file, message, entry=self.parameters[index].name, field=field,
                       line=self.line(*loc))

    @property
    def names(self) -> list[str]:
        """Parameter names, in file order."""
        return [p.name or "" for p in self.parameters]


def _lines(raw: Any, prefix: str = "", out: dict | None = None) -> dict[str, int]:
    """Dotted key -> line of every key and list item of data read by :func:`read_yaml`."""
    out = {} if out is None else out
    if isinstance(raw, dict):
        if LINE_KEY in raw and prefix:
            out.setdefault(prefix.rstrip("."), raw[LINE_KEY])
        for k, ln in raw.get(KEY_LINES, {}).items():
            out.setdefault(prefix + str(k), ln)
        for k, v in raw.items():
            if not str(k).startswith("__"):
                _lines(v, f"{prefix}{k}.", out)
    elif isinstance(raw, list):
        for i, v in enumerate(raw):
            _lines(v, f"{prefix}{i}.", out)
    return out


def default_name(p: Parameter) -> str:
    """A column name from the target (``capex_usd_gb200_nvl72``) when none is given."""
    if p.path:
        text = p.path.replace(".", "_")
    elif p.override:
        text = f"{p.override.field}_{p.override.id}"
    elif p.grid_step:
        text = f"grid_step_{p.grid_step.site}_{p.grid_step.year}"
    elif p.calibration:
        text = f"{p.calibration.param}_{p.calibration.accelerator or 'all'}"
    elif p.calibration_file:
        text = "calibration_file"
    else:
        text = "parameter"
    text = re.sub(r"[^a-z0-9_]", "_", text.lower()).strip("_") or "parameter"
    return text if text[0].isalpha() else f"p_{text}"


def load_sweep_spec(path: Path | str) -> SweepSpec:
    """Read and validate a sweep file; every problem at once.

    Parameters
    ----------
    path : path
        The sweep YAML file.

    Returns
    -------
    SweepSpec
        With default parameter names filled in.

    Raises
    ------
    InputError
        Naming file, line, entry (parameter) and field of each problem.
    """
    path = Path(path)
    shown = display_path(path)
    raw = read_yaml(path)
    if not isinstance(raw, dict) or strip_lines(raw).get("kind") != SWEEP_KIND:
        raise InputError(Problem(shown, f"not a sweep file: it must be a mapping that starts "
                                        f"with 'kind: {SWEEP_KIND}' (examples in "
                                        "examples/sweeps/)", line=1))
    lines = _lines(raw)
    data = strip_lines(raw)
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as exc:
        problems = []
        params = data.get("parameters") if isinstance(data.get("parameters"), list) else []
        for err, prob in explain_errors(exc, SweepSpec, shown, None, None):
            loc = [str(x) for x in err["loc"] if not _is_tag(x)]
            entry = None
            fld = ".".join(loc) or None
            if len(loc) >= 2 and loc[0] == "parameters" and loc[1].isdigit():
                i = int(loc[1])
                item = params[i] if i < len(params) and isinstance(params[i], dict) else {}
                entry = str(item.get("name") or f"parameters[{i}]")
                fld = ".".join(loc[2:]) or None
            line = None
            for n in range(len(loc), -1, -1):
                key = ".".join(loc[:n])
                if key in lines:
                    line = lines[key]
                    break
            problems.append(Problem(shown, prob.message, entry=entry, field=fld, line=line))
        raise InputError(problems) from None
    params = [p if p.name else p.model_copy(update={"name": default_name(p)})
              for p in spec.parameters]
    spec = spec.model_copy(update={"parameters": params, "file": shown,
                                   "folder": str(path.parent), "lines": lines})
    problems = spec_problems(spec)
    base = _base_problem(spec, path)
    if base is not None:
        problems.append(base)
    calibrations, cal_problems = _calibration_files(spec)
    problems += cal_problems
    if problems:
        raise InputError(problems)
    return spec.model_copy(update={"calibrations": calibrations})


def _calibration_files(spec: SweepSpec) -> tuple[dict[str, Any], list[Problem]]:
    """Read the files of the ``calibration_file`` parameters, once each.

    Returns the calibrations by value as written, and the problems: a file that is not
    there (in this sweep file, at the parameter) and each problem of a file that is not
    a valid calibration (in that file).
    """
    from dcplan.perf.params import load_calibration

    out: dict[str, Any] = {}
    problems: list[Problem] = []
    for i, p in enumerate(spec.parameters):
        if not p.calibration_file:
            continue
        fld = "values" if p.values is not None else "grid"
        for v in (p.values or []) + (p.grid or []):
            if not isinstance(v, str) or v in out:
                continue
            f = Path(v) if Path(v).is_absolute() else Path(spec.folder) / v
            if not f.is_file():     # False also for a name with a NUL byte
                problems.append(spec.problem(
                    f"no calibration file {display_path(f)}; name files written by 'dcplan "
                    "perf calibrate', relative to this sweep file", i, fld))
                continue
            try:
                out[v] = load_calibration(f)
            except InputError as exc:
                problems += exc.problems
    return out, problems


def _base_problem(spec: SweepSpec, path: Path) -> Problem | None:
    """The problem of a ``base`` that names a file other than a scenario, or None.

    This sweep file, another sweep file, a site or a forecast file, told apart by its
    keys (:func:`dcplan.scenario.schema.not_a_scenario`). A base that is missing or
    unreadable is left to the scenario loader, which says why.
    """
    base = spec.base_path()
    shown = display_path(base)
    fix = ("base must name a scenario file (with periods, sites and demand), relative to "
           "this sweep file")
    if base.is_file() and base.resolve() == path.resolve():
        return spec.problem(f"{shown} is a sweep file (this one), not a scenario; {fix}",
                            field="base")
    if not base.is_file():
        return None
    try:
        raw = read_yaml(base)
    except InputError:
        return None
    what = not_a_scenario(raw)
    if what is None:
        return None
    return spec.problem(f"{shown} is {what}, not a scenario; {fix}", field="base")


def _is_tag(part: Any) -> bool:
    """Pydantic's union/literal tags inside an error location (not field names)."""
    s = str(part)
    return s.startswith(("literal[", "function-")) or s in ("float", "int", "str", "bool",
                                                            "list[...]")


def spec_problems(spec: SweepSpec) -> list[Problem]:
    """Problems of a parsed sweep file that its schema cannot see (all of them).

    Names unique and usable as columns; one target per parameter; a distribution (or
    a grid for ``method: grid``) with consistent fields: ``low < high``, positive
    spreads, ``low <= mode <= high``, weights that are non-negative and sum to 1, one
    per value; ``apply`` allowed for the target; the sample count the method needs.
    """
    out: list[Problem] = []
    seen: dict[str, int] = {}
    targets: dict[str, int] = {}
    n_par = len(spec.parameters)
    if not n_par:
        out.append(spec.problem("a sweep needs at least one parameter", field="parameters"))
    for i, p in enumerate(spec.parameters):
        def bad(msg: str, fld: str | None = None, i: int = i, out: list = out) -> None:
            out.append(spec.problem(msg, i, fld))

        name = p.name or ""
        if not _NAME.match(name):
            bad(f"'{name}' is not a usable name: use lowercase letters, digits and '_', "
                "starting with a letter (it becomes a column name)", "name")
        elif name in RESERVED_NAMES:
            bad(f"'{name}' is a column of the results table; choose another name", "name")
        elif name in seen:
            bad(f"the name '{name}' is also parameter {seen[name] + 1}'s; names must differ",
                "name")
        seen.setdefault(name, i)
        given = [t for t in TARGETS if getattr(p, t) is not None]
        if len(given) != 1:
            bad("give exactly one of path, override, grid_step, calibration or "
                "calibration_file"
                + (f" (got {', '.join(given)})" if given else ""), given[1] if len(given) > 1
                else None)
        else:
            key = _target_key(p)
            if key in targets:
                bad(f"changes the same input as parameter {targets[key] + 1} "
                    f"('{spec.parameters[targets[key]].name}'); merge them", given[0])
            targets.setdefault(key, i)
        if p.grid_step is not None and p.apply is not None:
            bad("a grid_step parameter moves the step by the sampled number of years; "
                "remove 'apply'", "apply")
        if p.calibration is not None and p.op not in ("set", "scale"):
            bad(f"a calibration parameter is set or scaled, not '{p.op}'", "apply")
        if p.calibration_file and p.apply is not None:
            bad("a calibration_file parameter chooses a whole calibration; remove 'apply'",
                "apply")
        if p.calibration_file and p.distribution not in (None, "choice"):
            bad("a calibration_file parameter takes a choice of files (distribution: "
                f"choice) or a grid, not a {p.distribution} distribution", "distribution")
        if p.calibration_file:
            for v in (p.values or []) + (p.grid or []):
                if not isinstance(v, str) or not v.strip():
                    bad(f"{v!r} is not a file name; list calibration files (dcplan perf "
                        "calibrate), relative to this sweep file",
                        "values" if p.values else "grid")
        if p.override is not None and p.op == "grow":
            bad("'grow' applies to year-keyed scenario tables given by path; use set, "
                "scale or add", "apply")
        if p.integer and p.distribution == "choice":
            bad("'integer' rounds sampled numbers; a choice already gives its values",
                "integer")
        out += _distribution_problems(spec, i, p)
    out += _method_problems(spec)
    if not spec.outputs:
        out.append(spec.problem("list at least one KPI to collect (e.g. npv_cost_usd)",
                                field="outputs"))
    dup = sorted({o for o in spec.outputs if spec.outputs.count(o) > 1})
    if dup:
        out.append(spec.problem(f"listed twice: {', '.join(dup)}", field="outputs"))
    from dcplan.planner.tables import KPI_NAMES

    for o in dict.fromkeys(spec.outputs):
        if o not in KPI_NAMES:
            out.append(spec.problem(f"'{o}' is not a KPI of a plan{suggest(o, KPI_NAMES)}",
                                    field="outputs"))
    return out


def _target_key(p: Parameter) -> str:
    if p.path:
        return f"path:{p.path}"
    if p.override:
        o = p.override
        return f"override:{o.kind}/{o.id}/{o.field}/{o.from_year}"
    if p.grid_step:
        return f"grid:{p.grid_step.site}/{p.grid_step.year}"
    if p.calibration_file:
        return "calfile"
    c = p.calibration
    return f"cal:{c.param}/{c.accelerator}" if c else ""


def _distribution_problems(spec: SweepSpec, i: int, p: Parameter) -> list[Problem]:
    out: list[Problem] = []

    def bad(msg: str, fld: str | None) -> None:
        out.append(spec.problem(msg, i, fld))

    given = {k for k in _DIST_KEYS if getattr(p, k) is not None}
    if p.distribution is None:
        if p.grid is None:
            bad("give a distribution (uniform, normal, lognormal, triangular or choice) or, "
                "for method grid, a grid of values", "distribution")
        elif spec.method != "grid":
            bad(f"a grid of values is for method grid; method {spec.method} samples a "
                "distribution: give one (e.g. 'distribution: choice' with these values)",
                "grid")
        elif not p.grid:
            bad("the grid is empty; list at least one value", "grid")
        for k in sorted(given):
            bad(f"'{k}' belongs to a distribution; this parameter has none", k)
        return out
    if p.grid is not None:
        bad("give a distribution or a grid, not both", "grid")
    need, optional = DIST_FIELDS[p.distribution]
    for k in need:
        if getattr(p, k) is None:
            bad(f"a {p.distribution} distribution needs '{k}'", k)
    for k in sorted(given - set(need) - set(optional)):
        bad(f"a {p.distribution} distribution takes {', '.join(need + optional)}; "
            f"remove '{k}'" + suggest(k, need + optional), k)
    lo, hi = p.low, p.high
    if lo is not None and hi is not None and not lo < hi:
        bad(f"low ({lo:g}) must be below high ({hi:g})", "low")
    if p.distribution == "triangular" and None not in (lo, hi, p.mode) and lo < hi:
        if not lo <= p.mode <= hi:
            bad(f"mode ({p.mode:g}) must lie between low ({lo:g}) and high ({hi:g})", "mode")
    if p.distribution == "normal" and p.sd is not None and not p.sd > 0:
        bad(f"sd must be > 0 (got {p.sd:g})", "sd")
    if p.distribution == "normal" and None not in (p.mean, p.sd) and p.sd > 0:
        for k, v in (("low", lo), ("high", hi)):
            if v is not None and abs(v - p.mean) > 8 * p.sd:
                bad(f"{k} ({v:g}) is more than 8 sd from the mean: the distribution would "
                    "be cut where it has no weight; widen sd or move the bound", k)
    if p.distribution == "lognormal":
        if p.median is not None and not p.median > 0:
            bad(f"median must be > 0 (got {p.median:g})", "median")
        if p.sigma is not None and not p.sigma > 0:
            bad(f"sigma (the standard deviation of the logarithm) must be > 0 "
                f"(got {p.sigma:g})", "sigma")
        if lo is not None and lo <= 0:
            bad(f"low must be > 0 for a lognormal (got {lo:g})", "low")
    if p.distribution == "choice" and p.values is not None:
        if not p.values:
            bad("list at least one value", "values")
        if p.weights is not None:
            if len(p.weights) != len(p.values):
                bad(f"{len(p.weights)} weights for {len(p.values)} values; give one weight "
                    "per value", "weights")
            if any(w < 0 for w in p.weights):
                bad("weights must be >= 0", "weights")
            total = sum(p.weights)
            if abs(total - 1.0) > 1e-6:
                bad(f"weights sum to {total:.6g}, not 1; they are probabilities", "weights")
        if len({repr(v) for v in p.values}) != len(p.values):
            bad("a value is listed twice; list each once and weight it", "values")
    if p.integer and p.distribution in ("uniform", "triangular") and None not in (lo, hi):
        if math.floor(hi) < math.ceil(lo):
            bad(f"no whole number lies between low ({lo:g}) and high ({hi:g})", "low")
    return out


def _method_problems(spec: SweepSpec) -> list[Problem]:
    out: list[Problem] = []
    if spec.method == "grid":
        if spec.samples is not None:
            out.append(spec.problem("a grid sweep solves every point of the grid; remove "
                                    "'samples'", field="samples"))
        for i, p in enumerate(spec.parameters):
            if p.distribution not in (None, "choice"):
                out.append(spec.problem(f"method grid takes a grid of values or a choice, not "
                                        f"a {p.distribution} distribution", i, "distribution"))
        too_many = plans_limit_problem(spec, None, "parameters")
        if too_many:
            out.append(too_many)
    elif spec.samples is None:
        out.append(spec.problem(f"method {spec.method} needs 'samples' (plans to solve)",
                                field="samples"))
    else:
        out += samples_problems(spec, spec.samples, "samples")
    if spec.levels is not None:
        if spec.method != "morris":
            out.append(spec.problem("levels are for method morris", field="levels"))
        elif spec.levels < 2:
            out.append(spec.problem(f"morris needs at least 2 levels (got {spec.levels})",
                                    field="levels"))
    return out


def runs_for(spec: SweepSpec, samples: int | None) -> int:
    """How many plans the method makes of ``samples`` (morris and sobol round down).

    Computed from the counts alone, before any sample is drawn: a grid's plans are the
    product of its parameters' value counts (a parameter without values counts 0).

    Parameters
    ----------
    spec : SweepSpec
    samples : int or None
        The sample count asked for (not used by ``grid``).

    Returns
    -------
    int
        Plans to solve [plans].
    """
    d = len(spec.parameters)
    if spec.method == "grid":
        return math.prod(len(p.grid or []) if p.distribution is None else len(p.values or [])
                         for p in spec.parameters)
    n = int(samples or 0)
    if spec.method == "morris":
        return (n // (d + 1)) * (d + 1)
    if spec.method == "sobol":
        base = 2 ** int(math.floor(math.log2(max(n // (d + 2), 1))))
        return base * (d + 2)
    return n


def plans_limit_problem(spec: SweepSpec, samples: int | None, where: str) -> Problem | None:
    """The problem of a sweep that would solve more than :func:`max_sweep_plans` plans.

    Parameters
    ----------
    spec : SweepSpec
    samples : int or None
        The sample count (None for a grid).
    where : str
        The field (``samples``) or command-line option (``--samples``) that gave the
        count; a grid's problem is on ``parameters``.

    Returns
    -------
    Problem or None
    """
    most = max_sweep_plans()
    plans = runs_for(spec, samples)
    if plans <= most:
        return None
    raise_it = (f"or raise the limit with the environment variable {MAX_SWEEP_PLANS_ENV} "
                "(docs/uncertainty.md, 'Limits')")
    if spec.method == "grid":
        counts = [len(p.grid or []) if p.distribution is None else len(p.values or [])
                  for p in spec.parameters]
        shown = " x ".join(f"{c:,}" for c in counts[:8]) + (" x ..." if len(counts) > 8 else "")
        return spec.problem(
            f"the grid has {shown} = {plans:,} points, one plan each: more than the limit "
            f"of {most:,} plans per sweep; give fewer grid values, or sample the ranges with "
            f"method lhs or sobol and 'samples', {raise_it}", field="parameters")
    made = " are" if plans == samples else f" make {plans:,} {spec.method} plans,"
    msg = (f"{samples:,} samples{made} more than the limit of {most:,} plans per sweep (each "
           f"plan is a MILP of seconds to a minute); give at most {most:,}, {raise_it}")
    return Problem(where, msg) if where.startswith("--") else spec.problem(msg, field=where)


def samples_problems(spec: SweepSpec, samples: int, where: str) -> list[Problem]:
    """Problems of a sample count for the spec's method (``where``: the field or option).

    Includes a count above :func:`max_sweep_plans`, found before anything is drawn.
    """
    n_par = len(spec.parameters)

    def bad(msg: str) -> list[Problem]:
        if where.startswith("--"):
            return [Problem(where, msg)]
        return [spec.problem(msg, field=where)]

    if spec.method == "grid":
        return bad("a grid sweep solves every point of its grid; leave out the sample count")
    if samples < 1:
        return bad(f"must be at least 1 (got {samples})")
    if spec.method == "morris" and n_par and samples < 2 * (n_par + 1):
        return bad(f"morris needs at least 2 trajectories of {n_par + 1} plans "
                   f"({2 * (n_par + 1)} samples) for {n_par} parameters (got {samples})")
    if spec.method == "sobol" and n_par and samples < 4 * (n_par + 2):
        return bad(f"sobol needs a base sample of at least 4 times {n_par + 2} plans "
                   f"({4 * (n_par + 2)} samples) for {n_par} parameters (got {samples})")
    too_many = plans_limit_problem(spec, samples, where)
    return [too_many] if too_many else []
