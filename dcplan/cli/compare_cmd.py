"""``dcplan compare A B ...``: compare scenarios (solved now) or saved plans side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dcplan.cli import options
from dcplan.cli.app import app
from dcplan.cli.common import (
    STATE,
    UNCERTAINTY_IGNORED,
    check_outputs,
    emit_json,
    fail,
    handle_errors,
    note,
    solve_display,
)


def _progress(msg: str) -> None:
    typer.echo(f"[compare] {msg}", err=True)


@app.command("compare")
@handle_errors
def compare_cmd(
    plans: Annotated[list[Path], typer.Argument(
        metavar="PLAN...", dir_okay=False,
        help="Two or more scenario YAML files or saved plans (dcplan plan --save), in any "
             "mix; saved plans are read, not solved.")],
    baseline: Annotated[str | None, typer.Option(
        "--baseline", "-b", metavar="NAME",
        help="Baseline: a scenario name, file or file stem (default: the first).")] = None,
    outdir: Annotated[Path | None, typer.Option(
        "-o", "--outdir", file_okay=False, metavar="DIR",
        help="Write comparison.xlsx, comparison.html, kpis.csv and charts/*.png here.")
                      ] = None,
    xlsx: Annotated[Path | None, typer.Option("--xlsx", dir_okay=False, metavar="FILE",
                                              help="Comparison workbook file.")] = None,
    png_dir: options.PngDir = None,
    html: options.Html = None,
    as_json: options.Json = False,
    solver: options.Solver = None,
    time_limit: options.TimeLimit = None,
    gap: options.Gap = None,
    threads: options.Threads = None,
    solver_log: options.SolverLog = False,
    calibration: options.Calibration = None,
    allow_unserved: Annotated[bool, typer.Option(
        "--allow-unserved", help="Exit 0 even when a plan cannot meet all demand.")] = False,
    quiet: options.Quiet = False,
    wide: options.Wide = False,
) -> None:
    """Compare KPIs, binding limits and fleets of several plans side by side.

    Each PLAN is a scenario file (planned now, with the solver options given here) or a
    saved plan (read as it was saved: solver options and --calibration do not apply to
    it; one without a solution is refused before anything is solved). KPIs come with
    deltas against the baseline; a difference smaller than the two plans' solver gaps
    is marked as no significant difference.
    """
    from dcplan.cli.saved_cmd import no_plan
    from dcplan.errors import InputError, Problem, display_path
    from dcplan.export.compare import compare_results, comparison_text, export_comparison
    from dcplan.export.text import terminal_width
    from dcplan.planner import solve_case
    from dcplan.planner.saved import is_saved_plan, load_result

    if len(plans) < 2:
        fail("give at least two scenario files or saved plans to compare", 2)
    # -o gets named files (kpis.csv, comparison.xlsx, charts/, comparison.html), written
    # into it rather than replacing it: its other files stay.
    check_outputs(dirs={"-o/--outdir": outdir, "--png-dir": png_dir},
                  files={"--xlsx": xlsx, "--html": html}, replaced=False)
    say = None if quiet else _progress
    loaded, problems = [], []
    for path in plans:  # every input's problems at once, before any solve
        try:
            loaded.append(load_result(path) if is_saved_plan(path)
                          else STATE.case(path, calibration))
        except InputError as exc:
            problems += exc.problems
            continue
        item = loaded[-1]
        if hasattr(item, "tables") and not item.status.has_solution:
            problems.append(Problem(display_path(path), no_plan(item, "compare")))
    if problems:
        raise InputError(problems)
    if baseline is not None and not any(
            baseline in (x.name, str(p), p.stem, p.name)
            for x, p in zip(loaded, plans, strict=True)):
        fail(f"--baseline: '{baseline}' is none of the plans (give a scenario name, file "
             "or file stem)", 2)
    results = []
    for path, item in zip(plans, loaded, strict=True):
        if hasattr(item, "tables"):  # a saved plan
            if say:
                say(f"read {path} (saved plan, not solved)")
            results.append(item)
            continue
        if item.scenario.uncertainty is not None:
            note(UNCERTAINTY_IGNORED.format(
                path=path, cmd="compare",
                what="it plans the scenario as written (its base case) as one deterministic plan"))
        if say:
            say(f"planning {path}")
        with solve_display(not quiet and not solver_log, "compare") as on_solve:
            r = solve_case(item, solver=solver, time_limit_s=time_limit, gap=gap, threads=threads,
                     solver_log=solver_log or None, on_solve=on_solve)
        results.append(r)
        if say:
            npv = (r.kpi("npv_cost_usd") if r.status.has_solution and "kpis" in r.tables
                   else None)
            say(f"{path}: {r.status.value}"
                + (f", NPV of costs {npv:,.0f} USD" if npv is not None else "")
                + (" (demand not fully met)" if r.unserved else "")
                + f", solved in {r.timings_s.get('solve', 0):.1f} s")
    try:
        cmp = compare_results(results, baseline, labels=[str(p) for p in plans])
    except ValueError as exc:
        fail(f"--baseline: {exc}", 2)
    files = []
    if outdir is not None or xlsx is not None or png_dir is not None or html is not None:
        files = export_comparison(cmp, outdir=outdir, xlsx=xlsx, png_dir=png_dir, html=html)
        if say:
            say(f"wrote {len(files)} files: " + ", ".join(str(f) for f in files))
    if as_json:
        emit_json(cmp.summary())
    else:
        typer.echo(comparison_text(cmp, None if wide else terminal_width()))
    bad = [n for r, n in zip(results, cmp.names, strict=True) if not r.status.has_solution]
    if bad:
        fail(f"no plan for {', '.join(bad)}")
    short = [n for r, n in zip(results, cmp.names, strict=True)
             if r.unserved and not r.unserved_accepted]
    if short and not allow_unserved:
        fail(f"demand cannot be fully met in {', '.join(short)}; rerun with --allow-unserved "
             "to accept")
