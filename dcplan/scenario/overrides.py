"""Scenario overrides: change one field of one catalog entry or site for a scenario."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from dcplan.catalog import Catalog, pydantic_problems, suggest, unknown_message
from dcplan.errors import InputError, Problem
from dcplan.scenario.schema import Override, Scenario
from dcplan.schema import KINDS


def _changed(old: Any, ov: Override) -> Any:
    if ov.set is not None:
        return ov.set
    if not isinstance(old, int | float) or isinstance(old, bool):
        raise TypeError(f"'scale'/'add' need a numeric field (value is {old!r}); use 'set'")
    return old * ov.scale if ov.scale is not None else old + ov.add


def _apply_step(obj: Any, field: str, ov: Override, years: range | None = None) -> dict:
    """New value of a year-keyed step function ``field`` with ``ov`` applied from a year.

    Raises
    ------
    TypeError
        ``field`` is not a year-keyed step function (a plain number or text).
    ValueError
        ``from_year`` after the horizon (``years``): the override would change nothing.
    """
    value = getattr(obj, field)
    if not isinstance(value, dict):
        raise TypeError(f"'from_year' applies only to a year-keyed step function (e.g. "
                        f"grid_mw: {{2027: 40}}); '{field}' is {value!r}: remove 'from_year'")
    y0 = ov.from_year
    if years is not None and len(years) and y0 > years[-1]:
        raise ValueError(f"from_year {y0} is after the plan's horizon ({years[0]}.."
                         f"{years[-1]}): the override would change nothing; give a year "
                         "of the horizon")
    steps = {int(k): v for k, v in dict(value).items()}
    if y0 not in steps:
        below = [k for k in steps if k <= y0]
        steps[y0] = steps[max(below)] if below else 0.0
    for y in list(steps):
        if y >= y0:
            steps[y] = _changed(steps[y], ov)
    return dict(sorted(steps.items()))


def apply_overrides(
    scn: Scenario, catalog: Catalog, sites: dict[str, Any]
) -> tuple[Catalog, dict[str, Any]]:
    """Apply ``scn.overrides``; return the new catalog and sites.

    Raises
    ------
    InputError
        With every bad override (unknown kind, id or field; invalid new value).
    """
    f = scn.source_file
    probs: list[Problem] = []
    sites = dict(sites)
    try:
        plan_years = [p.year for p in scn.period_list()]
        years = range(min(plan_years), max(plan_years) + 1)
    except Exception:  # noqa: BLE001 - bad periods are reported by their own check
        years = None
    for i, ov in enumerate(scn.overrides):
        fld = scn.item_path("overrides", i)
        ov_file, ov_line = scn.where(fld)
        try:
            if ov.kind == "sites":
                if ov.id not in sites:
                    raise InputError(Problem(f, unknown_message("sites", ov.id, sites)))
                site = sites[ov.id]
                fields = type(site).model_fields
                top, _, sub = ov.field.partition(".")
                if top not in fields:
                    raise InputError(Problem(f, f"cannot override: site has no field "
                                                f"'{top}'{suggest(top, fields)}"))
                data = site.model_dump()
                if sub:
                    parent = getattr(site, top)
                    sub_fields = type(parent).model_fields if parent is not None else {}
                    if sub not in sub_fields:
                        raise InputError(Problem(f, f"cannot override: site field '{top}' has "
                                                    f"no field '{sub}'"
                                                    f"{suggest(sub, sub_fields)}"))
                    new = _apply_step(parent, sub, ov, years) if ov.from_year is not None \
                        else _changed(getattr(parent, sub), ov)
                    data[top] = {**data[top], sub: new}
                else:
                    old = getattr(site, top)
                    data[top] = _apply_step(site, top, ov, years) if ov.from_year is not None \
                        else _changed(old, ov)
                try:
                    sites[ov.id] = type(site).model_validate(data).with_source_of(site)
                except ValidationError as exc:
                    raise InputError(pydantic_problems(exc, type(site), f, ov.id, None)) from None
            elif ov.kind in KINDS:
                old_entry = catalog.get(ov.kind, ov.id)
                old = getattr(old_entry, ov.field, None)
                new = ov.set if ov.field not in type(old_entry).model_fields else (
                    _apply_step(old_entry, ov.field, ov, years) if ov.from_year is not None
                    else _changed(old, ov))
                catalog = catalog.replace(ov.kind, ov.id, **{ov.field: new})
            else:
                raise InputError(Problem(f, f"unknown kind '{ov.kind}'"
                                            f"{suggest(ov.kind, [*KINDS, 'sites'])}; use one of "
                                            f"{', '.join([*KINDS, 'sites'])}"))
        except InputError as exc:
            for p in exc.problems:
                probs.append(Problem(ov_file, f"override {ov.kind}/{ov.id}.{ov.field}: "
                                              f"{p.message}", entry=ov.id, field=fld,
                                     line=ov_line))
        except (TypeError, ValueError) as exc:
            probs.append(Problem(ov_file, f"override {ov.kind}/{ov.id}.{ov.field}: {exc}",
                                 entry=ov.id, field=fld, line=ov_line))
    if probs:
        raise InputError(probs)
    return catalog, sites
