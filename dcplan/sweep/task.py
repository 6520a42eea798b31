"""One sample of a sweep, as it runs on a Dask worker: change the case, plan, one row.

:func:`run_sample` never raises: an invalid sample, a plan that cannot meet demand, a
solver failure or any other error becomes a row with its status and message, so that
one bad sample never stops a sweep.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Mapping
from typing import Any

from dcplan.errors import InputError
from dcplan.sweep.memo import FacilityMemo

#: Status of a sample (column ``status`` of ``samples.csv``).
STATUSES = {
    "optimal": "solved to the requested gap, all demand served",
    "unserved": "demand could not all be met: planned with priced unserved demand",
    "not_optimal": "a plan was found but not proven within the gap (time limit)",
    "infeasible": "no plan exists, even with unserved demand",
    "no_plan": "the solver stopped without a plan (time limit)",
    "input_error": "the sample's values make an invalid case",
    "solver_error": "the solver failed",
    "error": "the task failed (a bug, or a worker that was lost)",
}
#: Statuses whose plans the statistics use: proven optimal within the gap, or planned
#: with priced unserved demand once demand was proven impossible to meet.
SOLVED = ("optimal", "unserved")

_MEMO: FacilityMemo | None = None


def worker_memo(folder: str | None) -> FacilityMemo:
    """The facility memo of this process (one per worker process, kept between tasks)."""
    global _MEMO
    if _MEMO is None or str(_MEMO.folder or "") != str(folder or ""):
        _MEMO = FacilityMemo(folder)
    return _MEMO


def worker_name() -> str:
    """Address of the Dask worker running this task ("local" outside Dask)."""
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return "local"


def status_of(result: Any) -> str:
    """The sweep status of a :class:`~dcplan.planner.PlanResult`."""
    from dcplan.planner.solver import SolveStatus

    if not result.status.has_solution:
        if result.status in (SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED):
            return "infeasible"
        return "no_plan"
    # the planner re-solves with priced unserved demand only once the plan that serves
    # everything is proven impossible: such a sample is "unserved" even when the second
    # solve stopped at the time limit (its message says so)
    if result.unserved:
        return "unserved"
    if result.status is not SolveStatus.OPTIMAL:
        return "not_optimal"
    return "optimal"


def result_row(result: Any, outputs: list[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """KPIs, peak MW by site, racks bought by type, and the fleet by year of one plan.

    Returns
    -------
    row : dict
        ``status``, ``message``, each output KPI, ``objective_usd`` (with any unserved
        penalty), ``peak_mw.<site>`` [MW], ``racks_bought.<rack>`` [racks].
    fleet : list of dict
        ``period``, ``rack``, ``installed_racks``, ``new_racks`` summed over sites.
    """
    from dcplan.planner.solver import SolveStatus

    row: dict[str, Any] = {"status": status_of(result), "message": result.message or ""}
    if row["status"] == "unserved" and result.status is not SolveStatus.OPTIMAL:
        gap = f" (gap {result.gap:.2%})" if result.gap is not None else ""
        row["message"] = ("plan with unserved demand not proven within the gap at the time "
                          f"limit{gap}; " + row["message"]).rstrip("; ")
    if not result.status.has_solution:
        return row, []
    for name in outputs:
        try:
            row[name] = result.kpi(name)
        except KeyError:
            row[name] = None
    row["objective_usd"] = result.objective_usd
    scn = result.case.scenario if result.case is not None else None
    # a site that hosts nothing and a rack type never bought are zeros, not gaps
    for site in (scn.sites if scn is not None else []):
        row[f"peak_mw.{site}"] = 0.0
    for rack in ((scn.racks or list(result.case.catalog.entries.get("racks", {})))
                 if scn is not None else []):
        row[f"racks_bought.{rack}"] = 0.0
    power = result.tables.get("power")
    if power is not None and len(power):
        for site, kw in power.groupby("site").facility_kw_peak.max().items():
            row[f"peak_mw.{site}"] = float(kw) / 1000.0
    fleet = result.tables.get("fleet")
    rows = []
    if fleet is not None and len(fleet):
        for rack, n in fleet.groupby("rack").new_racks.sum().items():
            row[f"racks_bought.{rack}"] = float(n)
        by = fleet.groupby(["period", "rack"], sort=False)[["installed_racks", "new_racks"]].sum()
        rows = [{"period": p, "rack": r, "installed_racks": float(v.installed_racks),
                 "new_racks": float(v.new_racks)} for (p, r), v in by.iterrows()]
    return row, rows


def plan_sample(case: Any, spec: Any, values: Mapping[str, Any], options: Mapping[str, Any]
                ) -> dict[str, Any]:
    """Apply one sample's values to ``case``, plan it, and describe the result.

    Parameters
    ----------
    case : Case
        The base case.
    spec : SweepSpec
    values : mapping
        Parameter name -> value.
    options : mapping
        ``outputs`` (KPI names), ``time_limit_s``, ``gap``, ``memo_dir`` (folder of
        shared facility tables or None), ``memo`` (False: compute every facility table).

    Returns
    -------
    dict
        ``row`` (see :func:`result_row`, plus ``solve_s`` (wall) and ``cpu_s`` (CPU time
        of the worker process) [s], and ``worker``), ``fleet``
        and ``memo`` (facility tables computed and reused in this task).
    """
    from dcplan.planner import solve_case
    from dcplan.planner.inputs import FACILITY_MEMO
    from dcplan.sweep.apply import sample_case

    t0, c0 = time.perf_counter(), time.process_time()
    memo = worker_memo(options.get("memo_dir")) if options.get("memo", True) \
        else FacilityMemo(max_entries=0)
    before = memo.stats()
    token = FACILITY_MEMO.set(memo)
    fleet: list[dict[str, Any]] = []
    try:
        sample = sample_case(case, spec, values)
        result = solve_case(sample, threads=1, explain=False, size=False,
                      time_limit_s=options.get("time_limit_s"), gap=options.get("gap"))
        row, fleet = result_row(result, list(options.get("outputs") or []))
    except InputError as exc:
        row = {"status": "input_error", "message": str(exc)}
    except Exception as exc:  # noqa: BLE001 - a sample never stops the sweep
        from dcplan.planner.solver import SolverError

        status = "solver_error" if isinstance(exc, SolverError) else "error"
        where = traceback.extract_tb(exc.__traceback__)[-1:]
        at = f" at {where[0].filename.rsplit('/', 1)[-1]}:{where[0].lineno}" if where else ""
        row = {"status": status, "message": f"{type(exc).__name__}: {exc}{at}"}
    finally:
        FACILITY_MEMO.reset(token)
    after = memo.stats()
    row["solve_s"] = time.perf_counter() - t0
    row["cpu_s"] = time.process_time() - c0
    row["worker"] = worker_name()
    return {"row": row, "fleet": fleet,
            "memo": {k: after[k] - before[k] for k in after}}


def run_sample(case: Any, spec: Any, sample_id: int, values: Mapping[str, Any],
               options: Mapping[str, Any]) -> dict[str, Any]:
    """The Dask task: :func:`plan_sample` with the sample id attached."""
    out = plan_sample(case, spec, values, options)
    out["sample_id"] = int(sample_id)
    return out
