"""Fleet planner: how many racks of which type, where and when, at least discounted cost.

Python API::

    from dcplan.planner import plan
    result = plan("examples/minimal.yaml")
    result.status, result.objective_usd
    result.tables["fleet"]          # tidy DataFrames with units in the column names
    for name, df in result:          # every result table
        ...

See ``docs/planner.md`` for the scenario format and the formulation.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dcplan.planner.analysis import binding_limits, diagnosis, no_grid_sites, shadow_prices
from dcplan.planner.inputs import PlanInputs, prepare_inputs
from dcplan.planner.model import build_model
from dcplan.planner.names import lp_name, parse_lp_name
from dcplan.planner.results import (
    Solution,
    allocation_table,
    cooling_table,
    cost_values,
    costs_table,
    demand_table,
    fleet_table,
    kpi_table,
    network_table,
    power_table,
    unserved_table,
)
from dcplan.planner.solve import (
    SolveInfo,
    SolveOptions,
    SolveStatus,
    is_proven_optimal,
    solve,
    status_text,
)
from dcplan.planner.start import rounding_start

__all__ = ["PlanInputs", "PlanResult", "SolveOptions", "SolveStatus", "build_model",
           "is_proven_optimal", "lp_name", "parse_lp_name", "plan", "prepare_inputs",
           "rescale_scale", "solve", "solve_inputs", "status_text"]

#: Order of the result tables (and of the CSV files).
TABLES = ("kpis", "fleet", "allocation", "demand", "power", "cooling", "network", "costs",
          "unserved", "shadow_prices", "binding", "sizing", "equipment")


@dataclass
class PlanResult:
    """A solved (or diagnosed) plan.

    Attributes
    ----------
    name : str
        Scenario name.
    status : SolveStatus
        Of the plan that the tables describe.
    objective_usd : float or None
        Present value of all costs [USD] (the elastic plan's includes the unserved
        penalty).
    gap : float or None
        Relative MIP gap reached; None when the solver does not report it.
    solver : str
    unserved : bool
        True when demand could not be met and the tables describe the elastic plan.
    unserved_accepted : bool
        The scenario accepts unserved demand (``allow_unserved: true``).
    message : str
        Human-readable summary of the outcome (diagnosis when demand is unserved).
    tables : dict
        Name -> DataFrame (see :data:`TABLES`).
    timings_s : dict
        prepare, build, solve, explain, total [s].
    model_size : dict
        variables, integers, constraints, nonzeros.
    notes : list of str
    inputs : PlanInputs
    """

    name: str
    status: SolveStatus
    objective_usd: float | None
    gap: float | None
    solver: str
    unserved: bool = False
    unserved_accepted: bool = False
    message: str = ""
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    timings_s: dict[str, float] = field(default_factory=dict)
    model_size: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    inputs: PlanInputs | None = None

    def __iter__(self) -> Iterator[tuple[str, pd.DataFrame]]:
        """Iterate over ``(name, table)`` in :data:`TABLES` order."""
        for name in TABLES:
            if name in self.tables:
                yield name, self.tables[name]

    @property
    def ok(self) -> bool:
        """A plan exists and meets all demand."""
        return self.status.has_solution and not self.unserved

    @property
    def proven_optimal(self) -> bool:
        """Optimal with a relative gap of at most :data:`~dcplan.planner.solve.PROVEN_GAP`.

        ``status is SolveStatus.OPTIMAL`` only says the solver closed the *requested*
        gap (1 % in some examples); this says the plan is the optimum itself.
        """
        return is_proven_optimal(self.status, self.gap)

    @property
    def status_text(self) -> str:
        """Honest one-line wording of the outcome (see :func:`~dcplan.planner.solve.status_text`).

        E.g. "optimal", "optimal within the 0.27% gap: no plan is more than 0.27%
        cheaper", "solver reported optimal; gap not reported by CBC", or, for a plan
        with unserved demand, "demand NOT fully met (elastic plan); ...".
        """
        return status_text(self.status, self.gap, self.solver, self.unserved)

    def kpi(self, name: str) -> float | None:
        """Value of one KPI (see the ``kpis`` table)."""
        df = self.tables.get("kpis")
        if df is None or name not in set(df.kpi):
            raise KeyError(f"no KPI {name!r}")
        v = df.loc[df.kpi == name, "value"].iloc[0]
        return None if pd.isna(v) else float(v)

    def write_csvs(self, outdir: Path | str) -> list[Path]:
        """Write every table to ``outdir/<name>.csv`` atomically; return the paths."""
        from dcplan.yamlio import atomic_path

        out = []
        for name, df in self:
            path = Path(outdir) / f"{name}.csv"
            with atomic_path(path) as tmp:
                df.to_csv(tmp, index=False)
            out.append(path)
        return out

    def summary(self) -> dict[str, Any]:
        """Machine-readable summary (status, objective, KPIs, fleet, unserved, shadow prices).

        ``status`` is the :class:`SolveStatus` value and ``optimal`` whether it is
        ``optimal`` (within the requested gap); ``proven_optimal`` and ``status_text``
        say whether the gap is actually closed and word the outcome for people;
        ``no_grid_yet`` maps sites to the periods in which they have no grid capacity
        (and host nothing).
        """
        def records(name: str) -> list[dict]:
            df = self.tables.get(name)
            if df is None or not len(df):
                return []
            return [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
                    for r in df.to_dict("records")]

        kpis = {r["kpi"]: r["value"] for r in records("kpis")}
        fleet = [r for r in records("fleet")]
        power = [{k: r[k] for k in ("period", "site", "facility_kw_peak", "grid_kw", "it_kw_peak",
                                    "built_kw")} for r in records("power")]
        return {
            "scenario": self.name, "status": self.status.value,
            "status_text": self.status_text, "optimal": self.status is SolveStatus.OPTIMAL,
            "proven_optimal": self.proven_optimal, "unserved": self.unserved,
            "no_grid_yet": no_grid_sites(self.tables.get("power")),
            "objective_usd": self.objective_usd,
            "gap": self.gap, "solver": self.solver, "message": self.message, "kpis": kpis,
            "fleet": fleet, "power": power, "unserved_demand": records("unserved"),
            "binding": records("binding"), "shadow_prices": records("shadow_prices"),
            "timings_s": self.timings_s, "model_size": self.model_size, "notes": self.notes,
        }


def model_size(prob) -> dict[str, int]:
    """Variables, integer variables, constraints and nonzeros of a pulp problem."""
    variables = prob.variables()
    cons = prob.constraints()
    return {"variables": len(variables),
            "integers": sum(v.cat == "Integer" for v in variables),
            "constraints": len(cons), "nonzeros": sum(len(c) for c in cons)}


def _tables(d: PlanInputs, sol: Solution) -> dict[str, pd.DataFrame]:
    fleet = fleet_table(d, sol)
    power = power_table(d, sol)
    demand = demand_table(d, sol)
    cost = cost_values(d, sol, power)
    costs = costs_table(d, cost)
    return {"fleet": fleet, "allocation": allocation_table(d, sol), "demand": demand,
            "power": power, "cooling": cooling_table(d, sol, power),
            "network": network_table(d, sol), "costs": costs,
            "kpis": kpi_table(d, fleet, power, demand, costs),
            "unserved": unserved_table(d, sol)}


def solve_inputs(d: PlanInputs, options: SolveOptions | None = None, *,
                 explain: bool = True, write_lp: Path | str | None = None,
                 progress: Callable[[str], None] | None = None) -> PlanResult:
    """Build, solve and explain the plan for precomputed inputs.

    If the demand cannot be met, the elastic model (priced unserved demand) is solved
    and the result describes it, with ``unserved=True`` and a diagnosis in
    ``message``.

    Parameters
    ----------
    d : PlanInputs
    options : SolveOptions, optional
    explain : bool
        Compute shadow prices (one more LP solve).
    write_lp : path, optional
        Write the MILP in LP format.
    progress : callable, optional
        Receives one-line progress messages.
    """
    say = progress or (lambda _m: None)
    opt = options or SolveOptions()
    t = {}
    t0 = time.perf_counter()
    prob, mv = build_model(d)
    t["build"] = time.perf_counter() - t0
    size = model_size(prob)
    say(f"model: {size['variables']:,} variables ({size['integers']:,} integer), "
        f"{size['constraints']:,} constraints, built in {t['build']:.2f} s")
    if write_lp:
        prob.writeLP(str(write_lp))
        say(f"wrote {write_lp}")
    say(f"solving with {opt.solver} (time limit {opt.time_limit_s:g} s, gap {opt.gap:g})")
    info = solve(prob, opt, rounding=rounding_start(d, mv))
    t["solve"] = info.runtime_s
    say(f"solver: {info.status.value} in {info.runtime_s:.2f} s"
        + (f", gap {info.gap:.3%}" if info.gap is not None else "")
        + (f" ({info.message})" if info.message else ""))
    unserved = False
    message = info.message
    if info.status in (SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED):
        say("demand cannot be met within the limits; re-solving with priced unserved demand")
        t1 = time.perf_counter()
        prob, mv = build_model(d, elastic=True)
        t["build"] += time.perf_counter() - t1
        info = solve(prob, opt, rounding=rounding_start(d, mv))
        t["solve"] += info.runtime_s
        unserved = info.status.has_solution
        if not info.status.has_solution:
            message = ("infeasible even with unserved demand allowed: the existing fleet "
                       "or the budget does not fit the site limits")
    result = PlanResult(d.name, info.status, info.objective, info.gap, info.solver,
                        unserved=unserved, message=message, model_size=size,
                        notes=list(d.notes), inputs=d)
    if not info.status.has_solution:
        t["total"] = sum(t.values())
        result.timings_s = t
        return result
    t2 = time.perf_counter()
    sol = Solution.from_model(mv)
    tables = _tables(d, sol)
    shadow = None
    if explain:
        say("shadow prices: integers fixed, re-solving the LP")
        shadow = shadow_prices(prob, d, mv, sol, opt)
        tables["shadow_prices"] = shadow
    tables["binding"] = binding_limits(d, sol, tables["power"], tables["fleet"],
                                       tables["cooling"], shadow)
    if unserved:
        result.message = diagnosis(d, tables["unserved"], tables["binding"])
        if not len(tables["unserved"]):
            result.unserved = False
    elif info.status is SolveStatus.FEASIBLE:
        result.message = (f"NOT PROVEN OPTIMAL: {info.message}; the plan may cost up to "
                          f"{info.gap:.2%} more than the optimum" if info.gap is not None
                          else f"NOT PROVEN OPTIMAL: {info.message}")
    t["explain"] = time.perf_counter() - t2
    t["total"] = sum(t.values())
    result.tables = tables
    result.timings_s = t
    return result


def load_inputs(scenario: Any, *, catalog: Any = None, sites: dict | None = None,
                catalog_dir: Path | str | None = None, sites_dir: Path | str | None = None,
                calibration: Any = None,
                progress: Callable[[str], None] | None = None) -> tuple[Any, PlanInputs, Any]:
    """Load a scenario (path or :class:`~dcplan.scenario.Scenario`) and prepare its inputs.

    Returns
    -------
    scenario, inputs, (catalog, sites)
    """
    from dcplan.catalog import load_catalog
    from dcplan.scenario import Scenario, load_scenario, resolve_scenario
    from dcplan.sites import load_sites

    scn = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    if catalog is None:
        catalog = load_catalog(catalog_dir or scn.catalog_dir)
    if sites is None:
        sites = load_sites(sites_dir or scn.sites_dir)
    catalog, sites = resolve_scenario(scn, catalog, sites)
    if isinstance(calibration, str | Path):
        from dcplan.perf import load_calibration

        calibration = load_calibration(calibration)
    d = prepare_inputs(scn, catalog, sites, calibration=calibration, progress=progress)
    return scn, d, (catalog, sites)


def plan(scenario: Any, *, catalog: Any = None, sites: dict | None = None,
         catalog_dir: Path | str | None = None, sites_dir: Path | str | None = None,
         calibration: Any = None, solver: str | None = None, time_limit_s: float | None = None,
         gap: float | None = None, threads: int | None = None, explain: bool = True,
         size: bool = True, rescale: bool = False, write_lp: Path | str | None = None,
         progress: Callable[[str], None] | None = None) -> PlanResult:
    """Plan the fleet of a scenario.

    Parameters
    ----------
    scenario : path or Scenario
        Scenario YAML file or a validated :class:`~dcplan.scenario.Scenario`.
    catalog, sites : optional
        Already-loaded catalog and sites (else loaded from ``catalog_dir`` /
        ``sites_dir``, the scenario's folders, or the shipped data).
    calibration : path or calibration, optional
        Performance-model calibration.
    solver, time_limit_s, gap, threads : optional
        Override the scenario's solver options.
    explain : bool
        Compute shadow prices.
    size : bool
        Size the exact network and cooling of the solved fleet and compare with the
        linear estimate (table ``sizing``); list its equipment (table ``equipment``:
        switches by tier and model, transceivers by type, NICs, CDUs, heat rejection).
    rescale : bool
        Second pass (see :func:`rescale_scale`): where the solved fleet of a rack type at
        a site is so far from the planning scale that its network or cooling
        coefficients per rack change by more than :data:`RESCALE_FRAC`, take them again
        at the solved scale and re-solve once. Deterministic; the result is the second
        plan, with a note naming the pairs and both NPVs.
    write_lp : path, optional
        Write the MILP in LP format.
    progress : callable, optional
        Receives one-line progress messages.

    Returns
    -------
    PlanResult
        Never raises for infeasible demand: check ``result.ok`` / ``result.unserved``.

    Raises
    ------
    InputError
        For a bad scenario, catalog or site file.
    """
    say = progress or (lambda _m: None)
    t0 = time.perf_counter()
    say("loading scenario, catalogs and sites")
    scn, d, (cat, site_map) = load_inputs(scenario, catalog=catalog, sites=sites,
                                          catalog_dir=catalog_dir, sites_dir=sites_dir,
                                          calibration=calibration, progress=progress)
    prep = time.perf_counter() - t0
    so = scn.solver
    opt = SolveOptions(solver=solver or so.name,
                       time_limit_s=time_limit_s if time_limit_s is not None else so.time_limit_s,
                       gap=gap if gap is not None else so.gap,
                       threads=threads if threads is not None else so.threads)
    result = solve_inputs(d, opt, explain=explain, write_lp=write_lp, progress=progress)
    if rescale and result.status.has_solution:
        scale = rescale_scale(scn, d, cat, site_map, result.tables["fleet"])
        if scale:
            from dcplan.planner.inputs import rescaled_inputs

            moves: dict[tuple[str, int, int], list[str]] = {}
            for (r, s), n in sorted(scale.items()):
                moves.setdefault((r, d.facility[r, s].n_racks, n), []).append(s)
            pairs = "; ".join(f"{r}: {a} -> {b} racks at {', '.join(ss)}"
                              for (r, a, b), ss in moves.items())
            say(f"re-solving with facility coefficients at the solved scale ({pairs})")
            d2 = rescaled_inputs(d, scn, cat, site_map, scale)
            second = solve_inputs(d2, opt, explain=explain, progress=progress)
            if second.status.has_solution:
                second.notes.append(
                    f"re-solved once with facility coefficients at the solved scale ({pairs}): "
                    f"NPV {result.objective_usd:,.0f} USD with the planning-scale "
                    f"coefficients, {second.objective_usd:,.0f} USD with these")
                for k, v in result.timings_s.items():
                    second.timings_s[k] = second.timings_s.get(k, 0.0) + v
                result, d = second, d2
            else:
                result.notes.append(f"re-solve at the solved scale ({pairs}) ended "
                                    f"{second.status.value}; the first plan is kept")
    result.name = scn.name
    result.unserved_accepted = scn.allow_unserved
    if size and result.status.has_solution:
        from dcplan.planner.sizing import sizing_table

        t1 = time.perf_counter()
        say("sizing the exact network and cooling of the chosen fleet")
        result.tables["sizing"], result.tables["equipment"], notes = sizing_table(
            scn, d, cat, site_map, result.tables)
        result.notes += notes
        result.timings_s["sizing"] = time.perf_counter() - t1
    result.timings_s["prepare"] = prep
    result.timings_s["total"] = time.perf_counter() - t0
    return result


#: Relative change of a per-rack facility coefficient that triggers the re-solve [-].
RESCALE_FRAC = 0.10
#: Coefficients compared by :func:`rescale_scale`.
RESCALE_FIELDS = ("network_kw_per_rack", "network_capex_usd_per_rack",
                  "cooling_kw_per_it_kw_peak", "cdus_per_rack")


def rescale_scale(scn: Any, d: PlanInputs, catalog: Any, sites: dict,
                  fleet: pd.DataFrame) -> dict[tuple[str, str], int]:
    """(rack, site) pairs whose coefficients should be re-taken at the solved scale.

    The solved scale of a rack type is its largest count of racks in service at one
    site in one period; it is applied to every site that may host the type (so the
    re-solve cannot move the fleet to a site still priced at the planning scale). A
    pair is returned when that count differs from the scale its coefficients were
    taken at and one of :data:`RESCALE_FIELDS` changes by more than
    :data:`RESCALE_FRAC` (relative) between the two scales.

    Returns
    -------
    dict
        (rack, site) -> solved scale [racks]; empty when nothing changes enough.
    """
    from dcplan import facility

    out: dict[tuple[str, str], int] = {}
    if not len(fleet):
        return out
    peak = fleet.groupby("rack").installed_racks.max()
    for (r, s), used in sorted(d.facility.items()):
        n = int(round(peak.get(r, 0.0)))
        if n <= 0 or n == used.n_racks or not d.rack_site[r, s].allowed:
            continue
        try:
            new = facility.coefficients(catalog, sites[s], r, n, optics=scn.optics,
                                        oversubscription=scn.oversubscription)
        except Exception:  # noqa: BLE001 - keep the planning-scale coefficients
            continue
        for f in RESCALE_FIELDS:
            a, b = getattr(used, f), getattr(new, f)
            if abs(b - a) > RESCALE_FRAC * max(abs(a), 1e-12):
                out[r, s] = n
                break
    return out


def result_info(result: PlanResult) -> SolveInfo:
    """The solver outcome of ``result`` as a :class:`SolveInfo`."""
    return SolveInfo(result.status, result.objective_usd, result.gap, result.solver,
                     result.timings_s.get("solve", 0.0), result.message)
