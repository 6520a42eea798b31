"""The Python API for notebooks and scripts: plan, load, save, export, compare.

::

    import dcplan
    r = dcplan.plan("examples/minimal.yaml")       # load, check, solve, explain
    r.fleet, r.kpis, r.bom                         # DataFrames: integer counts and periods
    r.save("minimal.plan"); r.to_excel("minimal.xlsx"); r.plot_racks()
    same = dcplan.load_plan("minimal.plan")        # no solving
    cmp = dcplan.compare([r, dcplan.plan("examples/kyber.yaml")])

A :class:`Plan` wraps the planner's :class:`~dcplan.planner.PlanResult` (``r.result``;
every attribute of it is also one of the plan: ``r.status``, ``r.objective_usd``,
``r.tables``, ``r.case``...). Its table properties are typed copies of
``r.tables[...]``: yearly periods as integers, rack and unit counts as integers, units
in ``df.attrs["units"]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dcplan.case import Case, load_case
from dcplan.planner import PlanResult
from dcplan.planner.saved import is_saved_plan, load_result, save_result

#: Units of columns that count whole things (converted to integers when they are).
COUNT_UNITS = ("racks", "units", "positions", "count")


def typed(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of a result table with yearly periods and whole counts as integers.

    ``period`` becomes ``int64`` when every period is a year (quarterly labels such as
    ``2026q3`` stay text); a column whose unit is a count (:data:`COUNT_UNITS`) and
    whose values are all whole becomes ``int64``. Units stay in ``attrs["units"]``.

    Parameters
    ----------
    df : DataFrame
        A result table; its columns' units in ``df.attrs["units"]`` [column units].

    Returns
    -------
    DataFrame
        The typed copy, ``attrs`` copied [units of ``df``, unchanged].
    """
    out = df.copy()
    out.attrs = {k: (dict(v) if isinstance(v, dict) else v) for k, v in df.attrs.items()}
    if "period" in out and len(out):
        labels = out["period"].astype(str)
        if labels.str.fullmatch(r"\d{4}").all():
            out["period"] = labels.astype("int64")
    units = out.attrs.get("units", {})
    for col, unit in units.items():
        if col in out and unit in COUNT_UNITS and pd.api.types.is_numeric_dtype(out[col]):
            values = out[col]
            if values.notna().all() and ((values - values.round()).abs() < 1e-6).all():
                out[col] = values.round().astype("int64")
    return out


class Plan:
    """A solved (or diagnosed) plan, as notebooks use it.

    Parameters
    ----------
    result : PlanResult
        The planner's result this plan wraps (``Plan.result``).
    """

    def __init__(self, result: PlanResult):
        self.result = result

    def __getattr__(self, name: str) -> Any:
        if name.startswith("plot_"):
            return self._plotter(name)
        if name in ("result",):
            raise AttributeError(name)
        return getattr(self.result, name)

    def __repr__(self) -> str:
        npv = self.result.objective_usd
        money = f", NPV {npv:,.0f} USD" if npv is not None else ""
        return f"<dcplan Plan {self.result.name!r}: {self.result.status_text}{money}>"

    # --- tables ---------------------------------------------------------------------

    def table(self, name: str) -> pd.DataFrame:
        """Result table ``name`` (see :data:`dcplan.planner.TABLES`), typed (:func:`typed`).

        Parameters
        ----------
        name : str
            Table name (``kpis``, ``fleet``, ``power``...).

        Returns
        -------
        DataFrame
            The typed table; column units in ``attrs["units"]`` [column units].

        Raises
        ------
        KeyError
            If the plan has no table ``name``.
        """
        if name not in self.result.tables:
            known = ", ".join(self.result.tables) or "none: the plan has no solution"
            raise KeyError(f"no table {name!r}; tables: {known}")
        return typed(self.result.tables[name])

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """Every result table, typed."""
        return {name: typed(df) for name, df in self.result}

    kpis = property(lambda self: self.table("kpis"), doc="KPIs: kpi, value, unit.")
    fleet = property(lambda self: self.table("fleet"),
                     doc="Racks in service, new and retired by period, site and type.")
    allocation = property(lambda self: self.table("allocation"),
                          doc="Racks and tokens/s at peak by workload, site and type.")
    demand = property(lambda self: self.table("demand"), doc="Demand served and unserved.")
    power = property(lambda self: self.table("power"), doc="MW, grid, energy by site.")
    cooling = property(lambda self: self.table("cooling"), doc="Heat, CDUs and PUE by site.")
    network = property(lambda self: self.table("network"), doc="Network kW and capex.")
    costs = property(lambda self: self.table("costs"), doc="Costs by category and period.")
    bom = property(lambda self: self.table("bom"),
                   doc="Bill of materials by site and period: installed and to order.")

    def kpi(self, name: str) -> float | None:
        """One KPI value (see the ``kpis`` table).

        Parameters
        ----------
        name : str
            KPI name, as in the ``kpi`` column of the ``kpis`` table.

        Returns
        -------
        float or None
            The value, None where the plan has none [the KPI's ``unit`` in ``kpis``].

        Raises
        ------
        KeyError
            If the plan has no such KPI.
        """
        return self.result.kpi(name)

    # --- files ----------------------------------------------------------------------

    def save(self, path: Path | str) -> Path:
        """Write the plan, its inputs and its tables to one file (:mod:`dcplan.planner.saved`).

        Parameters
        ----------
        path : path
            The saved-plan file to write (replaced atomically).

        Returns
        -------
        Path
            The file written.
        """
        return save_result(self.result, path)

    def to_csv(self, outdir: Path | str) -> list[Path]:
        """Write every table as CSV to ``outdir`` (the folder is replaced as a whole).

        Parameters
        ----------
        outdir : path
            The folder of CSV tables (replaced whole; see :func:`write_outputs`).

        Returns
        -------
        list of Path
            The CSV files written.
        """
        return write_outputs(self.result, outdir=outdir)["csv"]

    def to_excel(self, path: Path | str) -> Path:
        """Write the facilities workbook (docs/outputs.md).

        Parameters
        ----------
        path : path
            The ``.xlsx`` file to write.

        Returns
        -------
        Path
            The workbook written.
        """
        from dcplan.export.excel import write_workbook

        return write_workbook(self.result, path)

    def write_charts(self, outdir: Path | str) -> list[Path]:
        """Write the PNG charts of the plan to ``outdir``.

        Parameters
        ----------
        outdir : path
            The folder to write the charts to.

        Returns
        -------
        list of Path
            The PNG files written.
        """
        from dcplan.export.charts import write_plan_charts

        return write_plan_charts(self.result, outdir)

    def _plotter(self, name: str) -> Callable[..., Any]:
        from dcplan.export import charts

        fn = getattr(charts, name, None)
        if fn is None:
            known = ", ".join(n for n in dir(charts) if n.startswith("plot_"))
            raise AttributeError(f"no chart {name!r}; charts: {known}")

        def plot(ax: Any = None, **kwargs: Any) -> Any:
            """Draw the chart on ``ax`` (a new figure if None); return the figure."""
            import matplotlib.pyplot as plt

            if ax is None:
                _fig, ax = plt.subplots(figsize=(9, 4.5))
            first = [self.result] if name == "plot_unit_cost" else self.result
            fn(ax, first, **kwargs)
            return ax.figure

        plot.__name__ = name
        plot.__doc__ = fn.__doc__
        return plot


def plan(scenario: Path | str | Case, **options: Any) -> Plan:
    """Load (unless a :class:`~dcplan.case.Case` is given), solve and explain a scenario.

    Parameters
    ----------
    scenario : path or Case
        A scenario file, or a case already loaded (no file is read then).
    **options
        Those of :func:`dcplan.planner.solve_case` (``solver``, ``time_limit_s``, ``gap``,
        ``threads``, ``calibration``, ``catalog_dir``, ``sites_dir``, ``progress``...).

    Returns
    -------
    Plan
        The solved (or diagnosed) plan.
    """
    from dcplan.planner import solve_case  # the MILP's modules: not for saved plans

    return Plan(solve_case(scenario, **options))


def load_plan(path: Path | str) -> Plan:
    """Read a plan saved with :meth:`Plan.save` or ``dcplan plan --save`` (no solving).

    Parameters
    ----------
    path : path
        The saved-plan file (untrusted: checked by :func:`dcplan.planner.saved.load_result`).

    Returns
    -------
    Plan
        The plan as saved, with its case and tables.
    """
    return Plan(load_result(path))


def plan_or_load(path: Path | str, **options: Any) -> Plan:
    """A saved plan is read, a scenario file is planned.

    Parameters
    ----------
    path : path
        A saved-plan file or a scenario file.
    **options
        Those of :func:`plan`, used only when ``path`` is a scenario.

    Returns
    -------
    Plan
        The loaded or solved plan.
    """
    return load_plan(path) if is_saved_plan(path) else plan(path, **options)


def compare(plans: Sequence[Plan | PlanResult], baseline: str | int | None = None,
            labels: Sequence[str] | None = None) -> Any:
    """Line up plans against a baseline (see :func:`dcplan.export.compare.compare_results`).

    Parameters
    ----------
    plans : sequence of Plan or PlanResult
        The plans to compare.
    baseline : str or int, optional
        Name, file label or index (position in ``plans`` [index from 0]) of the
        baseline (default: the first).
    labels : sequence of str, optional
        File labels of the plans (e.g. paths), to pick the baseline and to make repeated
        names unique.

    Returns
    -------
    Comparison
        See :class:`dcplan.export.compare.Comparison`.
    """
    from dcplan.export.compare import compare_results

    results = [p.result if isinstance(p, Plan) else p for p in plans]
    return compare_results(results, baseline, labels=labels)


def write_outputs(result: PlanResult, *, outdir: Path | str | None = None,
                  xlsx: Path | str | None = None, png_dir: Path | str | None = None,
                  html: Path | str | None = None, save: Path | str | None = None,
                  progress: Callable[[str], None] | None = None) -> dict[str, list[Path]]:
    """Write the outputs of one plan as a set: all staged, then moved in together.

    Every output is written to a temporary next to its target; only when all are
    complete are they moved into place (:func:`dcplan.outputset.output_set`), so an
    error or Ctrl-C on the way leaves every target as it was. ``outdir`` (CSV tables)
    and ``png_dir`` replace any older folder whole, and only one that holds nothing but
    what dcplan wrote there (:func:`dcplan.export.files.check_replaceable`, checked
    before anything is written). Each output carries the run's
    :class:`~dcplan.outputset.RunStamp` (run id, input digest, time).

    Parameters
    ----------
    result : PlanResult
        The plan; one without tables (no solution) writes nothing.
    outdir : path, optional
        Folder of CSV tables (replaced whole).
    xlsx : path, optional
        The facilities workbook.
    png_dir : path, optional
        Folder of PNG charts (replaced whole).
    html : path, optional
        The HTML report.
    save : path, optional
        The saved-plan file.
    progress : callable, optional
        ``progress(line)`` for each output, once all are in place.

    Returns
    -------
    dict
        ``csv``, ``xlsx``, ``png``, ``html``, ``save`` -> paths written.
    """
    from dcplan.export.files import check_distinct_outputs, check_replaceable
    from dcplan.outputset import RunStamp, output_set

    say = progress or (lambda _m: None)
    out: dict[str, list[Path]] = {"csv": [], "xlsx": [], "png": [], "html": [], "save": []}
    if not result.tables:
        return out
    check_distinct_outputs({"xlsx": xlsx, "html": html, "save": save},
                           {"outdir": outdir, "png_dir": png_dir})
    for folder in (outdir, png_dir):
        if folder is not None:
            check_replaceable(folder)  # before any work: a user's file is never lost
    case = result.case
    stamp = RunStamp.new(input_digest=case.digest if case is not None else
                         (result.saved_from or {}).get("input_digest"),
                         scenario=result.name, outputs=(outdir, xlsx, png_dir, html, save))
    done: list[str] = []
    with output_set(stamp):
        _write_each(result, out, outdir=outdir, xlsx=xlsx, png_dir=png_dir, html=html,
                    save=save, say=done.append)
    for line in done:  # said once every output is in place, not while staged
        say(line)
    return out


def _write_each(result: PlanResult, out: dict[str, list[Path]], *, outdir, xlsx, png_dir,
                html, save, say: Callable[[str], None]) -> None:
    """Write each output of :func:`write_outputs` (staged in its output set)."""
    from dcplan.export.files import replace_folder

    if save is not None:
        out["save"].append(save_result(result, save))
        say(f"saved the plan to {save}")
    if outdir is not None:
        with replace_folder(outdir) as tmp:
            written = result.write_csvs(tmp)
        out["csv"] = [Path(outdir) / p.name for p in written]
        say(f"wrote {len(written)} tables to {outdir}")
    if xlsx is not None:
        from dcplan.export.excel import write_workbook

        out["xlsx"].append(write_workbook(result, xlsx))
        say(f"wrote workbook {xlsx}")
    if png_dir is not None:
        from dcplan.export.charts import write_plan_charts

        with replace_folder(png_dir) as tmp:
            pngs = write_plan_charts(result, tmp)
        out["png"] = [Path(png_dir) / p.name for p in pngs]
        say(f"wrote {len(pngs)} charts to {png_dir}")
    if html is not None:
        from dcplan.export import html as html_mod

        out["html"].append(html_mod.write_html(result, html))
        say(f"wrote report {html}")


def sweep(sweep_file: Path | str, outdir: Path | str, *, samples: int | None = None,
          workers: int | None = None, scheduler: str | None = None, resume: bool = False,
          report: bool = True, catalog_dir: Path | str | None = None,
          sites_dir: Path | str | None = None,
          progress: Callable[[int, int, dict], None] | None = None,
          time_limit_s: float | None = None, gap: float | None = None) -> Any:
    """Plan every sample of a sweep file on a Dask cluster; return what the sweep tells.

    Parameters
    ----------
    sweep_file : path
        ``kind: dcplan_sweep`` file (see ``docs/uncertainty.md``).
    outdir : path
        The sweep folder (``samples.csv``, ``fleet.csv``, ``manifest.json``; with
        ``report`` also ``charts/``, ``sweep.xlsx`` and ``report.html``).
    samples, workers, scheduler, resume
        As ``dcplan sweep``'s ``--samples``, ``--workers``, ``--scheduler``, ``--resume``.
    report : bool
        Write the charts, workbook and HTML report.
    catalog_dir, sites_dir : path, optional
        Data folders for the base scenario.
    progress : callable, optional
        ``progress(done, total, row)`` after each sample.
    time_limit_s, gap : float, optional
        As ``--time-limit`` [s] and ``--gap`` [-]: each sample's solver limits, replacing
        the sweep file's ``solver`` (default time limit: max(30 s, 5 x the base plan's
        solve time), :func:`dcplan.sweep.run.sample_time_limit`).

    Returns
    -------
    SweepSummary
        See :func:`dcplan.sweep.summarize` (``.kpis``, ``.purchase``, ``.sensitivity``,
        ``.tornado``, ``.data.samples``).
    """
    from dcplan.sweep import load_sweep_spec, prepare_sweep, run_sweep

    spec = load_sweep_spec(sweep_file)
    case = load_case(spec.base_path(), catalog_dir=catalog_dir, sites_dir=sites_dir)
    run_sweep(prepare_sweep(spec, case, samples), outdir, workers=workers,
              scheduler=scheduler, resume=resume, progress=progress,
              time_limit_s=time_limit_s, gap=gap)
    summary = load_sweep(outdir)
    if report:
        from dcplan.export.sweep import write_sweep_reports

        write_sweep_reports(summary)
    return summary


def load_sweep(folder: Path | str) -> Any:
    """What a sweep folder tells (:class:`dcplan.sweep.SweepSummary`), without solving.

    Parameters
    ----------
    folder : path
        A sweep folder written by :func:`sweep` or ``dcplan sweep``.

    Returns
    -------
    SweepSummary
        See :func:`dcplan.sweep.summarize`.
    """
    from dcplan.sweep import load_sweep as _load_sweep
    from dcplan.sweep import summarize

    return summarize(_load_sweep(folder))


__all__ = ["Plan", "compare", "load_case", "load_plan", "load_sweep", "plan", "plan_or_load",
           "sweep", "typed", "write_outputs"]
