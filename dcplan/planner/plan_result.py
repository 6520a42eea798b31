"""The result of a plan: status, tables, timings, notes and the case it was solved from."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dcplan.planner.analysis import no_grid_sites
from dcplan.planner.inputs import PlanInputs
from dcplan.planner.solver import SolveInfo, SolveStatus, is_proven_optimal, status_text

#: Order of the result tables (and of the CSV files).
TABLES = ("kpis", "fleet", "allocation", "demand", "power", "cooling", "network", "costs",
          "cashflow", "build_vs_buy", "requests", "unserved", "shadow_prices", "binding",
          "bom", "sizing", "equipment", "grid", "hours", "schedules")
#: Tables only some plans have, after :data:`TABLES` (``caps``: a scenario with
#: ``power_caps``; ``power_oversubscription``: one with ``power_oversubscription``;
#: ``sources`` and ``dispatch``: one with ``storage`` or ``onsite_generation``).
OPTIONAL_TABLES = ("caps", "power_oversubscription", "sources", "dispatch")


def first_tokens(tables: dict) -> dict[str, str]:
    """First period each site serves tokens in (time to power), in site order of use.

    Parameters
    ----------
    tables : dict
        A plan's tables (``allocation``: tokens/s per rack type, site and period;
        ``power``: the periods in plan order).

    Returns
    -------
    dict
        Site id -> label of the first period with tokens served [-]; sites that never
        serve are left out.
    """
    alloc, power = tables.get("allocation"), tables.get("power")
    if alloc is None or not len(alloc) or power is None:
        return {}
    order = {str(p): i for i, p in enumerate(dict.fromkeys(power.period))}
    served = alloc[alloc.tokens_per_s > 0]
    out: dict[str, str] = {}
    for s in dict.fromkeys(served.site):
        periods = [str(p) for p in served[served.site == s].period]
        out[s] = min(periods, key=lambda p: order.get(p, len(order)))
    return out


def time_to_power_line(tables: dict) -> str:
    """"First tokens served (time to power): site period; ..." for time-to-power plans.

    Parameters
    ----------
    tables : dict
        A plan's tables.

    Returns
    -------
    str
        The line for a plan with a ``sources`` table (storage or on-site generation
        offered) or a flexible connection (``grid`` with ``flexible_kw``), over the sites
        those tables name; '' for any other plan or when none of them serves.
    """
    sites: list = []
    src, grid = tables.get("sources"), tables.get("grid")
    if src is not None and len(src):
        sites += list(src.site)
    if grid is not None and "flexible_kw" in grid.columns:
        sites += list(grid[grid.flexible_kw > 0].site)
    first = first_tokens(tables)
    shown = [f"{s} {first[s]}" for s in dict.fromkeys(sites) if s in first]
    return "First tokens served (time to power): " + "; ".join(shown) if shown else ""


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
        The MILP's coefficients.
    case : Case
        The resolved scenario, catalogs and sites the plan was solved from.
    saved_from : dict or None
        For a plan read from a file: path, dcplan version, creation time and input
        digest (see :mod:`dcplan.planner.saved`).
    bound_usd : float or None
        The best valid lower bound on the objective the gap is taken against, where the
        solve reports one of its own (two-stage solve of the exact facility) [USD,
        present value].
    bound_source : str
        Where ``bound_usd`` comes from (solver, model and seconds) [-].
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
    case: Any = None
    saved_from: dict[str, Any] | None = None
    bound_usd: float | None = None
    bound_source: str = ""

    def __iter__(self) -> Iterator[tuple[str, pd.DataFrame]]:
        """Iterate over ``(name, table)`` in :data:`TABLES` order, then the optional ones."""
        for name in (*TABLES, *OPTIONAL_TABLES):
            if name in self.tables:
                yield name, self.tables[name]

    @property
    def ok(self) -> bool:
        """A plan exists and meets all demand."""
        return self.status.has_solution and not self.unserved

    @property
    def proven_optimal(self) -> bool:
        """Optimal with a relative gap of at most :data:`~dcplan.planner.solver.PROVEN_GAP`.

        ``status is SolveStatus.OPTIMAL`` only says the solver closed the *requested*
        gap (1 % in some examples); this says the plan is the optimum itself.
        """
        return is_proven_optimal(self.status, self.gap)

    @property
    def status_text(self) -> str:
        """Honest one-line wording of the outcome (see :func:`~dcplan.planner.solver.status_text`).

        E.g. "optimal", "optimal within the 0.27% gap: no plan is more than 0.27%
        cheaper", "solver reported optimal; gap not reported by CBC", or, for a plan
        with unserved demand, "demand NOT fully met (elastic plan); ...".
        """
        return status_text(self.status, self.gap, self.solver, self.unserved)

    @property
    def peak_power(self) -> str | None:
        """The power basis the plan sized its peaks on (operating_point, nameplate, capped).

        From the planner's inputs (``nameplate_peak``), else the scenario's
        ``peak_power``; None when the plan has neither (a saved plan without inputs).
        """
        if self.inputs is not None:
            if getattr(self.inputs, "capped_peak", False):
                return "capped"
            return "nameplate" if self.inputs.nameplate_peak else "operating_point"
        scn = getattr(self.case, "scenario", None)
        return getattr(scn, "peak_power", None)

    @property
    def power_oversub(self) -> dict[str, float]:
        """Site -> power oversubscription factor below 1 [-] (empty: none).

        From the planner's inputs, else the saved ``power_oversubscription`` table.
        """
        if self.inputs is not None:
            return dict(getattr(self.inputs, "power_oversub", None) or {})
        t = self.tables.get("power_oversubscription")
        if t is None or not len(t):
            return {}
        return {str(site): float(f) for site, f in
                zip(t.site, t.oversubscription_factor, strict=True)}

    @property
    def power_basis(self) -> str:
        """The plan's power basis in words (:func:`power_basis_text`)."""
        try:
            margin = self.kpi("power_p99_margin_frac")
        except KeyError:
            margin = None
        return power_basis_text(self.peak_power, margin, self.power_oversub)

    def kpi(self, name: str) -> float | None:
        """Value of one KPI (see the ``kpis`` table).

        Parameters
        ----------
        name : str
            A KPI name (:data:`~dcplan.planner.tables.KPI_NAMES`).

        Returns
        -------
        float or None
            In the unit of the ``kpis`` table's ``unit`` column [see unit column]; None
            when not defined (e.g. no tokens served).

        Raises
        ------
        KeyError
            When the plan has no such KPI.
        """
        df = self.tables.get("kpis")
        if df is None or name not in set(df.kpi):
            raise KeyError(f"no KPI {name!r}")
        v = df.loc[df.kpi == name, "value"].iloc[0]
        return None if pd.isna(v) else float(v)

    def write_csvs(self, outdir: Path | str) -> list[Path]:
        """Write every table to ``outdir/<name>.csv``, each atomically; return the paths.

        Tables go through :func:`dcplan.tableio.write_csv` (rounded to their units,
        whole counts and yearly periods as integers, text safe for spreadsheets).

        Parameters
        ----------
        outdir : Path or str
            Folder the files are written to.

        Returns
        -------
        list of Path
            The files written, one per table.
        """
        from dcplan.tableio import write_csv

        return [write_csv(df, Path(outdir) / f"{name}.csv") for name, df in self]

    def summary(self) -> dict[str, Any]:
        """Machine-readable summary of the plan and its tables.

        Status, objective, KPIs, fleet, power, cooling, network, costs, bill of
        materials, unserved demand, binding limits and shadow prices.

        ``status`` is the :class:`SolveStatus` value and ``optimal`` whether it is
        ``optimal`` (within the requested gap); ``proven_optimal`` and ``status_text``
        say whether the gap is actually closed and word the outcome for people;
        ``bound_usd`` and ``bound_source`` the lower bound the gap is proven against
        and where it comes from, when the solve reports one (two-stage solve);
        ``no_grid_yet`` maps sites to the periods in which they have no grid capacity
        (and host nothing); ``first_tokens`` each site to the first period it serves
        tokens in (time to power, :func:`first_tokens`); ``grid_connections`` the
        ``grid`` table where a site offers a flexible connection.
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
                                    "network_kw", "it_total_kw_peak", "built_kw") if k in r}
                 for r in records("power")]
        return {
            "scenario": self.name, "status": self.status.value,
            "peak_power": self.peak_power, "power_basis": self.power_basis,
            "status_text": self.status_text, "optimal": self.status is SolveStatus.OPTIMAL,
            "proven_optimal": self.proven_optimal, "unserved": self.unserved,
            "no_grid_yet": no_grid_sites(self.tables.get("power")),
            "objective_usd": self.objective_usd,
            "gap": self.gap, "bound_usd": self.bound_usd, "bound_source": self.bound_source,
            "solver": self.solver, "message": self.message, "kpis": kpis,
            "fleet": fleet, "power": power, "unserved_demand": records("unserved"),
            "cooling": records("cooling"), "network": records("network"),
            "costs": records("costs"), "cashflow": records("cashflow"),
            "build_vs_buy": records("build_vs_buy"), "power_caps": records("caps"),
            "power_oversubscription": records("power_oversubscription"),
            "requests": records("requests"), "demand": records("demand"),
            "bill_of_materials": records("bom"),
            "binding": records("binding"), "shadow_prices": records("shadow_prices"),
            "timings_s": self.timings_s, "model_size": self.model_size, "notes": self.notes,
            **({"power_sources": records("sources"), "dispatch": records("dispatch")}
               if "sources" in self.tables else {}),
            "first_tokens": first_tokens(self.tables),
            **({"grid_connections": records("grid")}
               if "flexible_kw" in getattr(self.tables.get("grid"), "columns", ()) else {}),
        }


#: Heading of the power basis wherever a plan states it.
POWER_BASIS_LABEL = "Power basis"


def power_basis_text(peak_power: str | None, margin: float | None,
                     oversub: dict[str, float] | None = None) -> str:
    """What rack IT power the plan's peaks (grid, building, PUE at the peak) are sized at.

    Parameters
    ----------
    peak_power : str or None
        ``operating_point``, ``nameplate``, ``capped`` or None (not known).
    margin : float or None
        The high-percentile rack power over the serving power of the racks allocated at
        the facility peak, minus 1 (KPI ``power_p99_margin_frac``) [-]; None: the
        performance model reported none.
    oversub : dict, optional
        Site -> power oversubscription factor below 1 [-]: the sentence then says those
        sites provision that share of it.

    Returns
    -------
    str
        One sentence, e.g. "operating point (serving power from the performance model;
        margin 3.5%: its high-percentile (p99) power ... is that much higher; ...)".
    """
    text = _basis_text(peak_power, margin)
    if not oversub:
        return text
    sites = ", ".join(f"{s} by {f:g}" for s, f in oversub.items())
    return (f"{text}; power oversubscribed at {sites} (the site provisions that share of "
            "its racks' power at this basis, power capping keeps the draw under it and the "
            "tokens capping is expected to cost are counted against demand; scenario "
            "power_oversubscription)")


def _basis_text(peak_power: str | None, margin: float | None) -> str:
    """The power basis sentence without oversubscription (:func:`power_basis_text`).

    Parameters
    ----------
    peak_power : str or None
        ``operating_point``, ``nameplate``, ``capped`` or None (not known).
    margin : float or None
        KPI ``power_p99_margin_frac`` [-]; None: not reported.

    Returns
    -------
    str
        One sentence.
    """
    if peak_power == "nameplate":
        return ("nameplate (the catalog's full-load rack IT power, it_power_max_kw, for "
                "every rack installed; scenario peak_power: nameplate)")
    if peak_power == "capped":
        return ("capped (each rack at the most it can draw at the power cap it runs at, "
                "power_at_cap_kw, the cap levels of scenario power_caps chosen by the plan; "
                "rack types without caps at it_power_max_kw; scenario peak_power: capped)")
    if peak_power == "operating_point":
        head = "operating point (serving power from the performance model"
        if margin is None or margin != margin:
            return (head + "; the performance model reported no high-percentile power for "
                    "these racks, so the margin to it is not known; scenario peak_power: "
                    "operating_point)")
        return (head + f"; margin {margin:.1%}: its high-percentile (p99) power, which the "
                "racks exceed 1% of the time, is that much higher; scenario peak_power: "
                "operating_point)")
    return "not recorded (a saved plan without its inputs)"


def result_info(result: PlanResult) -> SolveInfo:
    """The solver outcome of ``result`` as a :class:`SolveInfo`.

    Parameters
    ----------
    result : PlanResult
        A plan.

    Returns
    -------
    SolveInfo
        Status, objective [USD], gap [-], solver, solve time [s] and message.
    """
    return SolveInfo(result.status, result.objective_usd, result.gap, result.solver,
                     result.timings_s.get("solve", 0.0), result.message)
