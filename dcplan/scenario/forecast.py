"""Demand forecast files: ``cases: {case: {workload: {period: demand}}}``.

A scenario takes its demand table from one case of a forecast file with
``demand: {forecast: {file: F, case: C}}`` (:func:`resolve_forecast`);
:func:`check_forecast` checks a forecast file on its own (``dcplan validate``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dcplan.catalog import suggest, unknown_message
from dcplan.errors import InputError, Problem, display_path
from dcplan.scenario.schema import parse_period_label
from dcplan.yamlio import KEY_LINES, META_KEYS, read_yaml, strip_lines


def resolve_forecast(path: Path, raw: dict) -> dict:
    """Replace ``demand.forecast`` by the table of the named case of a forecast file."""
    demand = raw.get("demand")
    if not isinstance(demand, dict) or "forecast" not in demand:
        return raw
    shown = display_path(path)
    ref = demand["forecast"]
    line = demand.get(KEY_LINES, {}).get("forecast")
    if not isinstance(ref, dict) or set(strip_lines(ref)) != {"file", "case"}:
        raise InputError(Problem(shown, "write forecast as {file: FORECAST.yaml, case: NAME}",
                                 field="demand.forecast", line=line))
    if "table" in demand:
        raise InputError(Problem(shown, "give either demand.table or demand.forecast, not both",
                                 field="demand.forecast", line=line))
    fpath = path.parent / str(ref["file"])
    fshown = display_path(fpath)
    if not fpath.is_file():
        raise InputError(Problem(shown, f"forecast file '{ref['file']}' not found next to this "
                                        "file; give a path relative to it",
                                 field="demand.forecast.file", line=line))
    forecast = read_yaml(fpath)
    cases = forecast.get("cases") if isinstance(forecast, dict) else None
    if not isinstance(cases, dict):
        raise InputError(Problem(fshown, "a forecast file needs 'cases: {case: {workload: "
                                         "{period: demand}}}'", field="cases"))
    case = str(ref["case"])
    if case not in cases:
        known = [k for k in cases if k not in META_KEYS]
        raise InputError(Problem(shown, f"forecast has no case '{case}'{suggest(case, known)}; "
                                        f"cases: {', '.join(known)}",
                                 field="demand.forecast.case", line=line))
    unit = forecast.get("unit")
    if "unit" in demand and unit is not None and demand["unit"] != unit:
        raise InputError(Problem(shown, f"demand.unit '{demand['unit']}' differs from the "
                                        f"forecast's unit '{unit}'; drop demand.unit",
                                 field="demand.unit", line=line))
    new_demand = {k: v for k, v in demand.items() if k != "forecast"}
    new_demand["table"] = cases[case]
    if unit is not None:
        new_demand["unit"] = unit
    return {**raw, "demand": new_demand}


def check_forecast(path: Path, catalog: Any) -> list[Problem]:
    """Check a demand forecast file (``cases: {case: {workload: {period: demand}}}``).

    Every case must be a mapping of known workload ids to mappings of period labels
    (``2027`` or ``2027Q3``) to non-negative numbers [tokens per ``unit``]; ``unit``,
    if given, is ``tokens_per_month`` or ``tokens_per_day``.

    Returns
    -------
    list of Problem
    """
    shown = display_path(path)
    raw = read_yaml(path)
    meta = META_KEYS
    problems: list[Problem] = []
    lines = raw.get(KEY_LINES, {}) if isinstance(raw, dict) else {}
    cases = raw.get("cases") if isinstance(raw, dict) else None
    if not isinstance(cases, dict) or not [c for c in cases if c not in meta]:
        return [Problem(shown, "a forecast file needs 'cases: {case: {workload: {period: "
                               "demand}}}' with at least one case", field="cases",
                        line=lines.get("cases"))]
    unit = raw.get("unit")
    if unit is not None and unit not in ("tokens_per_month", "tokens_per_day"):
        problems.append(Problem(shown, f"unit must be tokens_per_month or tokens_per_day "
                                       f"(got {unit!r})", field="unit", line=lines.get("unit")))
    workloads = catalog.entries.get("workloads", {})
    for case, table in cases.items():
        if case in meta:
            continue
        cline = cases.get(KEY_LINES, {}).get(str(case))
        if not isinstance(table, dict):
            problems.append(Problem(shown, "a case must map workload ids to {period: demand}",
                                    entry=str(case), field=f"cases.{case}", line=cline))
            continue
        for wl, row in table.items():
            if wl in meta:
                continue
            fld = f"cases.{case}.{wl}"
            wline = table.get(KEY_LINES, {}).get(str(wl), cline)
            if wl not in workloads:
                problems.append(Problem(shown, unknown_message("workloads", str(wl), workloads),
                                        entry=str(case), field=fld, line=wline))
            if not isinstance(row, dict):
                problems.append(Problem(shown, "give demand as {period: tokens}",
                                        entry=str(case), field=fld, line=wline))
                continue
            for period, value in row.items():
                if period in meta:
                    continue
                pline = row.get(KEY_LINES, {}).get(str(period), wline)
                try:
                    parse_period_label(period)
                except ValueError as exc:
                    problems.append(Problem(shown, str(exc), entry=str(case),
                                            field=f"{fld}.{period}", line=pline))
                ok = isinstance(value, int | float) and not isinstance(value, bool) \
                    and value == value and value >= 0
                if not ok:
                    problems.append(Problem(shown, f"demand must be a number >= 0 [tokens per "
                                                   f"{(unit or 'tokens_per_month')[11:]}] "
                                                   f"(got {value!r})",
                                            entry=str(case), field=f"{fld}.{period}",
                                            line=pline))
    return problems
