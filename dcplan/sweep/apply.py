"""One sample of a sweep as a case: its parameter values applied to the base case.

:func:`sample_case` turns ``{parameter name: value}`` into
:meth:`~dcplan.case.Case.with_changes` (scenario paths and override entries) and, for
performance-model parameters and calibration files (read with the sweep file),
:meth:`~dcplan.case.Case.with_calibration`; no file is read. :func:`check_against_case`
tries each parameter's extreme values on the base case and reports what the case
refuses, in the sweep file's terms.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

from dcplan.errors import InputError, Problem
from dcplan.sweep.spec import Parameter, SweepSpec


def _get_path(data: Any, path: str) -> Any:
    """Value at dotted ``path`` of plain scenario data (KeyError naming the path if absent)."""
    node = data
    for i, part in enumerate(path.split(".")):
        if isinstance(node, list):
            try:
                node = node[int(part)]
                continue
            except (ValueError, IndexError):
                pass
        elif isinstance(node, dict):
            if part in node:
                node = node[part]
                continue
            if part.lstrip("-").isdigit() and int(part) in node:
                node = node[int(part)]
                continue
        raise KeyError(f"'{'.'.join(path.split('.')[:i + 1])}' is not set in the base scenario")
    return node


def _numbers(value: Any, fn) -> Any:
    """``value`` with ``fn`` applied to every number in it (mappings and lists too)."""
    if isinstance(value, bool):
        raise TypeError("a yes/no value cannot be scaled or added to; use 'apply: set'")
    if isinstance(value, int | float):
        return fn(value)
    if isinstance(value, dict):
        return {k: _numbers(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v, fn) for v in value]
    if value is None:
        raise TypeError("the base value is empty; use 'apply: set'")
    raise TypeError(f"the base value {value!r} is not a number; use 'apply: set'")


def _grow(table: Any, factor: float) -> dict:
    """Year-keyed table with its growth since the first year multiplied by ``factor``."""
    if not isinstance(table, dict) or not table or not all(
            str(k).lstrip("-").isdigit() for k in table):
        raise TypeError("'grow' needs a table keyed by year (e.g. demand.table.chat)")
    if factor <= 0:
        raise ValueError(f"'grow' needs a factor > 0 (got {factor:g})")
    years = sorted(int(k) for k in table)
    first, last = years[0], years[-1]
    out = {}
    for k, v in table.items():
        y = int(k)
        x = (y - first) / (last - first) if last > first else 1.0
        out[k] = _numbers(v, lambda n, x=x: n * factor ** x)
    return out


def _apply(op: str, base: Any, value: Any) -> Any:
    if op == "set":
        return value
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TypeError(f"'apply: {op}' needs a number (got {value!r})")
    if op == "scale":
        return _numbers(base, lambda n: n * value)
    if op == "add":
        return _numbers(base, lambda n: n + value)
    if op == "grow":
        return _grow(base, float(value))
    raise ValueError(f"unknown apply '{op}'")


def moved_grid(steps: Mapping[int, float], year: int, delay: int) -> dict[int, float]:
    """Grid steps [MW by year] with the step at ``year`` moved by ``delay`` years.

    Raises
    ------
    ValueError
        When there is no step at ``year``, the delay is not whole, or the step would
        pass its neighbour (the order of the steps is kept).
    """
    steps = {int(k): v for k, v in steps.items()}
    if year not in steps:
        raise ValueError(f"has no grid step in {year} (steps: "
                         f"{', '.join(str(y) for y in sorted(steps))})")
    if float(delay) != int(delay):
        raise ValueError(f"a delay is a whole number of years (got {delay!r})")
    delay = int(delay)
    years = sorted(steps)
    k = years.index(year)
    new = year + delay
    if k + 1 < len(years) and new >= years[k + 1]:
        raise ValueError(f"a delay of {delay} years moves the {year} step onto or past the "
                         f"next one ({years[k + 1]}); at most {years[k + 1] - year - 1}")
    if k > 0 and new <= years[k - 1]:
        raise ValueError(f"moving the {year} step {-delay} years earlier puts it onto or "
                         f"before the previous one ({years[k - 1]})")
    if k == 0 and delay < 0:
        raise ValueError("the first step is the grid at the start; it cannot come earlier")
    out = {y: v for y, v in steps.items() if y != year}
    if k == 0:
        # the first step is the grid from the start: a late first step means no grid
        out[years[0]] = 0.0
    out[new] = steps[year]
    return dict(sorted(out.items()))


def _calibration(case: Any, params: list[tuple[Parameter, Any]]) -> Any:
    """The case's calibration with the sampled performance-model parameters.

    A sampled parameter starts from what the planner would use for that accelerator
    (the defaults, then the case's calibration: pooled, vendor's and own values); the
    calibration's pooled, vendor and physics values are kept for everything else.
    """
    from dcplan.perf.params import PARAM_BOUNDS, Calibration
    from dcplan.perf.predict import calibration_architecture, hardware_params

    base = case.perf_calibration  # None for no calibration (case.calibration may be "none")
    defaults = case.model_defaults
    accelerators = case.catalog.entries.get("accelerators", {})
    racks = case.scenario.racks or list(case.catalog.entries.get("racks", {}))
    used = sorted({case.catalog.get("racks", r).accelerator for r in racks})
    hardware = {h: dict(p) for h, p in (base.hardware if base else ())}
    changed: dict[str, dict[str, float]] = {}

    def vendor(acc: str) -> str | None:
        return getattr(accelerators.get(acc), "vendor", None)

    for p, value in params:
        c = p.calibration
        accs = [c.accelerator] if c.accelerator else used
        if c.param not in PARAM_BOUNDS:
            raise ValueError(f"unknown performance-model parameter '{c.param}'; one of "
                             f"{', '.join(PARAM_BOUNDS)}")
        for acc in accs:
            if acc not in accelerators:
                raise ValueError(f"unknown accelerator '{acc}'")
            hw = hardware_params(defaults, acc, base, vendor(acc),
                                 calibration_architecture(accelerators[acc], base))
            now = changed.get(acc, {}).get(c.param, getattr(hw, c.param))
            new = float(_apply(p.op, now, value))
            lo, hi = PARAM_BOUNDS[c.param]
            if not lo <= new <= hi:
                raise ValueError(f"{c.param} of {acc} would be {new:.4g}, outside its range "
                                 f"{lo:g}..{hi:g}")
            changed.setdefault(acc, {})[c.param] = new
    for acc, vals in changed.items():
        own = base.overrides(acc, vendor(acc), calibration_architecture(
            accelerators[acc], base)) if base is not None else {}
        hardware[acc] = {**own, **vals}
    if base is None:
        return Calibration.from_dicts(hardware, source="sweep")
    return Calibration.from_dicts(
        hardware, dict(base.default), base.source, dict(base.meta), dict(base.physics),
        {v: dict(p) for v, p in base.vendor}, {a: dict(p) for a, p in base.architecture},
        base.software, base.basis)


def sample_changes(case: Any, spec: SweepSpec, values: Mapping[str, Any]
                   ) -> tuple[dict[str, Any], list[dict[str, Any]], list[tuple[Parameter, Any]]]:
    """Scenario path changes, override entries and calibration parameters of one sample.

    Raises
    ------
    KeyError, TypeError, ValueError
        For a value the target cannot take (the message says why).
    """
    changes: dict[str, Any] = {}
    overrides: list[dict[str, Any]] = []
    cal: list[tuple[Parameter, Any]] = []
    data = None
    for p in spec.parameters:
        if p.name not in values:
            continue
        value = values[p.name]
        if p.path:
            if p.op == "set":
                changes[p.path] = value
            else:
                if data is None:
                    data = case.scenario.model_dump()
                changes[p.path] = _apply(p.op, copy.deepcopy(_get_path(data, p.path)), value)
        elif p.override:
            o = p.override
            entry = {"kind": o.kind, "id": o.id, "field": o.field, p.op: value}
            if o.from_year is not None:
                entry["from_year"] = o.from_year
            overrides.append(entry)
        elif p.grid_step:
            g = p.grid_step
            if g.site not in case.sites:
                raise KeyError(f"site '{g.site}' is not one of the base scenario's sites "
                               f"({', '.join(case.sites)})")
            overrides.append({"kind": "sites", "id": g.site, "field": "grid_mw",
                              "set": moved_grid(case.sites[g.site].grid_mw, g.year, value)})
        elif p.calibration:
            cal.append((p, value))
    return changes, overrides, cal


def chosen_calibration(spec: SweepSpec, values: Mapping[str, Any]) -> Any:
    """The calibration a ``calibration_file`` parameter's value names, or None.

    The files were read with the sweep file (:attr:`SweepSpec.calibrations`).

    Raises
    ------
    ValueError
        For a value that is not one of the files the sweep file lists.
    """
    for p in spec.parameters:
        if p.calibration_file and p.name in values:
            value = values[p.name]
            if value not in spec.calibrations:
                raise ValueError(f"{value!r} is not one of the calibration files of "
                                 f"parameter '{p.name}'")
            return spec.calibrations[value]
    return None


def sample_case(case: Any, spec: SweepSpec, values: Mapping[str, Any]) -> Any:
    """The base ``case`` with one sample's parameter ``values`` applied (no file read).

    A ``calibration_file`` parameter replaces the case's calibration first; sampled
    ``calibration`` parameters then change that calibration's values.

    Raises
    ------
    InputError
        When the changed case is invalid (file ``<changes>``), or a value cannot be
        applied (file ``<sample>``, field the parameter name).
    """
    try:
        chosen = chosen_calibration(spec, values)
        base = case.with_calibration(chosen) if chosen is not None else case
        changes, overrides, cal = sample_changes(base, spec, values)
        calibration = _calibration(base, cal) if cal else None
    except (KeyError, TypeError, ValueError) as exc:
        msg = exc.args[0] if exc.args else str(exc)
        raise InputError(Problem("<sample>", str(msg))) from None
    out = base.with_changes(changes, overrides=overrides) if (changes or overrides) else base
    return out.with_calibration(calibration) if calibration is not None else out


def check_against_case(spec: SweepSpec, case: Any, extremes: Mapping[str, list[Any]]
                       ) -> list[Problem]:
    """Try each parameter alone at its extreme values on the base case.

    Parameters
    ----------
    spec : SweepSpec
    case : Case
        The base case.
    extremes : mapping
        Parameter name -> values to try (lowest, highest, each choice).

    Returns
    -------
    list of Problem
        In the sweep file (entry: the parameter, field: its target), one per parameter
        and reason.
    """
    out: list[Problem] = []
    for i, p in enumerate(spec.parameters):
        tried = extremes.get(p.name or "", [])
        found: dict[str, list[Any]] = {}
        for value in tried:
            try:
                sample_case(case, spec, {p.name: value})
            except InputError as exc:
                for prob in exc.problems:
                    found.setdefault(prob.message, []).append(value)
        for msg, values in found.items():
            if len(values) == len(tried):  # whatever the value: the target is wrong
                out.append(spec.problem(msg, i, p.target))
                continue
            shown = ", ".join(f"{v:.6g}" if isinstance(v, float) and math.isfinite(v)
                              else repr(v) for v in values)
            out.append(spec.problem(f"at {shown}: {msg}", i, p.target))
    return out
