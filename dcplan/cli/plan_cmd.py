"""``dcplan plan SCENARIO.yaml``: solve the fleet plan and explain it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dcplan.cli import app
from dcplan.cli.common import STATE, check_outputs, emit_json, fail, format_table, handle_errors


def _progress(msg: str) -> None:
    typer.echo(f"[plan] {msg}", err=True)


def _fmt_mw(kw: float) -> str:
    return f"{kw / 1000:.1f}"


def _no_nan(rec: dict) -> dict:
    """``rec`` with NaN values as None (printed as '-')."""
    return {k: (None if isinstance(v, float) and v != v else v) for k, v in rec.items()}


def _site_periods(sites: dict[str, list[str]]) -> str:
    return "; ".join(f"{s} ({', '.join(ps)})" for s, ps in sites.items())


def summary_text(result) -> str:
    """Readable summary of a :class:`~dcplan.planner.PlanResult`."""
    from dcplan.planner.analysis import no_grid_sites, not_buildable_sites
    from dcplan.planner.results import LEVELISED_TEXT

    out = []
    out.append(f"Plan '{result.name}': {result.status_text} "
               f"(solver {result.solver}, {result.timings_s.get('total', 0):.1f} s)")
    if result.message:
        out.append(result.message)
    if not result.status.has_solution:
        return "\n".join(out)
    t = result.tables
    kpi = {r.kpi: (r.value, r.unit) for r in t["kpis"].itertuples()}

    def k(name, fmt):
        v = kpi.get(name, (None, ""))[0]
        return "-" if v is None or v != v else fmt.format(v)

    out.append("")
    out.append(f"NPV of costs:          {k('npv_cost_usd', '{:,.0f}')} USD")
    out.append(f"USD per million tokens: {k('usd_per_million_tokens', '{:.4f}')} "
               f"({LEVELISED_TEXT})")
    costs = t.get("costs")
    if costs is not None and len(costs):
        tv = -costs.loc[costs.category == "terminal_value", "cost_usd_discounted"].sum()
        if tv > 0:
            out.append(f"                        (the NPV above is net of a terminal-value "
                       f"credit of {tv:,.0f} USD, present value, so the levelised figure can "
                       "be below every period's cash cost)")
    out.append(f"Tokens per kWh:         {k('tokens_per_kwh', '{:,.0f}')}")
    out.append(f"Peak facility:          {k('peak_facility_mw', '{:.1f}')} MW   "
               f"PUE {k('pue_annual', '{:.3f}')}   utilisation {k('utilisation_frac', '{:.0%}')}"
               f"   carbon {k('carbon_t', '{:,.0f}')} tCO2")
    fleet = t["fleet"]
    out.append("\nRacks in service by period (new this period in brackets):")
    if len(fleet):
        fleet = fleet.assign(col=fleet.site + "/" + fleet.rack)
        cols = list(dict.fromkeys(fleet.col))
        rows = []
        for period, sub in fleet.groupby("period", sort=False):
            row = {"period": period}
            for r in sub.itertuples():
                row[r.col] = f"{r.installed_racks:.0f} (+{r.new_racks:.0f})"
            rows.append(row)
        out.append(format_table(rows, ["period", *cols]))
    else:
        out.append("(none)")
    power = t["power"]
    out.append("\nFacility MW at peak / grid MW by site:")
    rows = []
    for period, sub in power.groupby("period", sort=False):
        row = {"period": period}
        for r in sub.itertuples():
            row[r.site] = f"{_fmt_mw(r.facility_kw_peak)} / {_fmt_mw(r.grid_kw)}"
        rows.append(row)
    out.append(format_table(rows, ["period", *dict.fromkeys(power.site)]))
    if len(t["unserved"]):
        out.append("\nUnserved demand:")
        out.append(format_table(t["unserved"].to_dict("records"),
                                ["workload", "pool", "period", "short_tokens_per_s_peak",
                                 "short_frac"]))
    b = t.get("binding")
    out.append("\nBinding limits (ranked):")
    if b is not None and len(b):
        out.append("shadow_price: saving of one more unit with the chosen fleet fixed; "
                   "shadow_price_relaxed: with rack counts free (LP relaxation).")
        out.append(format_table([_no_nan(r) for r in b.head(15).to_dict("records")],
                                ["rank", "limit", "site", "period", "value", "used", "unit",
                                 "shadow_price", "shadow_price_relaxed", "shadow_unit"]))
    else:
        out.append("(none: no site limit stops one more rack)")
    no_grid = no_grid_sites(t.get("power"))
    if no_grid:
        out.append(f"Sites with no grid yet (not ranked): {_site_periods(no_grid)}")
    if result.inputs is not None:
        waiting = not_buildable_sites(result.inputs, t.get("power"))
        if waiting:
            out.append("Sites where no capacity can be built yet (lead time, not ranked): "
                       + _site_periods(waiting))
    sp = t.get("shadow_prices")
    if sp is not None and len(sp):
        dem = sp[sp.family == "demand"]
        if len(dem):
            out.append("\nMarginal cost of demand [USD per million tokens]:")
            rows = []
            for period, sub in dem.groupby("period", sort=False):
                row = {"period": period}
                for r in sub.itertuples():
                    row[r.workload + ("" if r.pool == "all" else f"/{r.pool}")] = r.shadow_price
                rows.append(row)
            out.append(format_table(rows))
    if result.notes:
        out.append("\nNotes:")
        out += [f"  - {n}" for n in result.notes]
    return "\n".join(out)


def _check_solver(value: str | None) -> str | None:
    if value is not None and value not in ("highs", "cbc"):
        raise typer.BadParameter(f"unknown solver '{value}'; use highs or cbc")
    return value


@app.command("plan")
@handle_errors
def plan_cmd(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML file.", dir_okay=False)],
    outdir: Annotated[Path | None, typer.Option("-o", "--outdir", file_okay=False,
                                                help="Write every result table as CSV here.")
                      ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
    solver: Annotated[str | None, typer.Option("--solver", help="highs (default) or cbc.",
                                               callback=_check_solver)] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", min=0.001,
                                                     help="Solver time limit [s].")] = None,
    gap: Annotated[float | None, typer.Option("--gap", min=0.0,
                                              help="Relative MIP gap to stop at.")] = None,
    threads: Annotated[int | None, typer.Option("--threads", min=1, help="Solver threads.")
                       ] = None,
    allow_unserved: Annotated[bool, typer.Option(
        "--allow-unserved", help="Exit 0 even when demand cannot be fully met.")] = False,
    write_lp: Annotated[Path | None, typer.Option("--write-lp", dir_okay=False,
                                                  help="Write the MILP in LP format.")] = None,
    calibration: Annotated[Path | None, typer.Option(
        "--calibration", dir_okay=False, help="Performance-model calibration YAML.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
    xlsx: Annotated[Path | None, typer.Option("--xlsx", dir_okay=False,
                                              help="Write the Excel workbook here.")] = None,
    png_dir: Annotated[Path | None, typer.Option("--png-dir", file_okay=False,
                                                 help="Write PNG charts here.")] = None,
    rescale: Annotated[bool, typer.Option(
        "--rescale", help="Re-solve once with facility coefficients taken at the solved "
                          "fleet's scale where they differ by more than 10 %.")] = False,
) -> None:
    """Plan the fleet that meets SCENARIO's token demand at least discounted cost.

    Exit codes: 0 plan found; 1 bad input, or demand cannot be met (unless
    --allow-unserved or the scenario says allow_unserved: true); 2 bad command line.
    """
    from dcplan.planner import plan

    check_outputs(dirs={"-o/--outdir": outdir, "--png-dir": png_dir},
                  files={"--xlsx": xlsx, "--write-lp": write_lp})
    progress = None if quiet else _progress
    if progress:
        progress("loading scenario, catalogs and sites")
    case = STATE.case(scenario, calibration)
    result = plan(case, solver=solver, time_limit_s=time_limit, gap=gap, threads=threads,
                  write_lp=write_lp, rescale=rescale, progress=progress)
    if outdir is not None and result.tables:
        paths = result.write_csvs(outdir)
        if progress:
            progress(f"wrote {len(paths)} tables to {outdir}")
    if (xlsx is not None or png_dir is not None) and result.tables:
        from dcplan.export import export_plan

        export_plan(result, xlsx=xlsx, png_dir=png_dir, progress=progress)
    if as_json:
        emit_json(result.summary())
    else:
        typer.echo(summary_text(result))
    if not result.status.has_solution:
        fail(result.message or f"no plan: solver status {result.status.value}")
    if result.unserved and not (allow_unserved or result.unserved_accepted):
        fail(result.message + " Rerun with --allow-unserved to accept this plan.")
