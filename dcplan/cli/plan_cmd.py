"""``dcplan plan SCENARIO.yaml``: solve the fleet plan and explain it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dcplan.cli import options
from dcplan.cli.app import app
from dcplan.cli.common import (
    STATE,
    check_outputs,
    emit_json,
    exit_for,
    fail,
    handle_errors,
    solve_display,
)
from dcplan.cli.complete import scenario_files


def _progress(msg: str) -> None:
    typer.echo(f"[plan] {msg}", err=True)


@app.command("plan")
@handle_errors
def plan_cmd(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML file.", dir_okay=False,
                                             metavar="SCENARIO",
                                             autocompletion=scenario_files)],
    outdir: options.OutDir = None,
    as_json: options.Json = False,
    solver: options.Solver = None,
    time_limit: options.TimeLimit = None,
    gap: options.Gap = None,
    threads: options.Threads = None,
    solver_log: options.SolverLog = False,
    allow_unserved: options.AllowUnserved = False,
    write_lp: Annotated[Path | None, typer.Option("--write-lp", dir_okay=False, metavar="FILE",
                                                  help="Write the MILP in LP format.")] = None,
    write_mps: Annotated[Path | None, typer.Option(
        "--write-mps", dir_okay=False, metavar="FILE",
        help="Write the MILP in MPS format: FILE as built, and FILE's name with "
             ".scaled.mps as HiGHS receives it (rows, continuous columns and objective "
             "scaled by powers of two), to try another solver on either.")] = None,
    calibration: options.Calibration = None,
    quiet: options.Quiet = False,
    xlsx: options.Xlsx = None,
    png_dir: options.PngDir = None,
    html: options.Html = None,
    save: options.Save = None,
    wide: options.Wide = False,
) -> None:
    """Plan the fleet that meets SCENARIO's token demand at least discounted cost.

    Prints the fleet by period, MW by site against the grid, NPV, KPIs, equipment and
    capex by year and the binding limits; -o, --xlsx, --png-dir, --html and --save write
    tables, a workbook, charts, a report and a saved plan. Demand that cannot be met
    exits 1 unless --allow-unserved (or allow_unserved: true in the scenario).
    """
    from dcplan.api import write_outputs
    from dcplan.export.terminal import plan_text
    from dcplan.export.text import terminal_width
    from dcplan.planner import solve_case
    from dcplan.planner.highs import scaled_path

    check_outputs(dirs={"-o/--outdir": outdir, "--png-dir": png_dir},
                  files={"--xlsx": xlsx, "--write-lp": write_lp, "--html": html,
                         "--save": save, "--write-mps": write_mps,
                         "--write-mps (scaled)": scaled_path(write_mps) if write_mps
                         else None})
    progress = None if quiet else _progress
    if progress:
        progress("loading scenario, catalogs and sites")
    case = STATE.case(scenario, calibration)
    if case.scenario.uncertainty is not None:  # two-stage stochastic plan
        from dcplan.cli.stochastic_cmd import plan_stochastic_cmd

        if png_dir or html or save or write_lp or write_mps:
            fail("a stochastic plan writes -o tables, --xlsx and --json; --png-dir, --html, "
                 "--save, --write-lp and --write-mps are for deterministic plans", 2)
        return plan_stochastic_cmd(case, outdir=outdir, xlsx=xlsx, as_json=as_json,
                                   solver=solver, time_limit=time_limit, gap=gap,
                                   threads=threads, solver_log=solver_log, wide=wide,
                                   progress=progress, allow_unserved=allow_unserved)
    with solve_display(not quiet and not solver_log) as on_solve:
        result = solve_case(case, solver=solver, time_limit_s=time_limit, gap=gap, threads=threads,
                      solver_log=solver_log or None, write_lp=write_lp, write_mps=write_mps,
                      progress=progress, on_solve=on_solve)
    write_outputs(result, outdir=outdir, xlsx=xlsx, png_dir=png_dir, html=html, save=save,
                  progress=progress)
    if as_json:
        emit_json(result.summary())
    else:
        typer.echo(plan_text(result, None if wide else terminal_width()))
    exit_for(result, allow_unserved)
