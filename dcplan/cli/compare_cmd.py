"""``dcplan compare A.yaml B.yaml ...``: solve scenarios and compare them side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dcplan.cli import app
from dcplan.cli.common import STATE, check_outputs, emit_json, fail, handle_errors


def _progress(msg: str) -> None:
    typer.echo(f"[compare] {msg}", err=True)


@app.command("compare")
@handle_errors
def compare_cmd(
    scenarios: Annotated[list[Path], typer.Argument(help="Two or more scenario YAML files.",
                                                    dir_okay=False)],
    baseline: Annotated[str | None, typer.Option(
        "--baseline", "-b", help="Baseline scenario: its name, file or file stem "
                                 "(default: the first).")] = None,
    outdir: Annotated[Path | None, typer.Option(
        "-o", "--outdir", file_okay=False,
        help="Write comparison.xlsx, kpis.csv and charts/*.png here.")] = None,
    xlsx: Annotated[Path | None, typer.Option("--xlsx", dir_okay=False,
                                              help="Comparison workbook file.")] = None,
    png_dir: Annotated[Path | None, typer.Option("--png-dir", file_okay=False,
                                                 help="Folder of PNG charts.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
    solver: Annotated[str | None, typer.Option("--solver", help="highs (default) or cbc.")
                      ] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", min=0.001,
                                                     help="Solver time limit per scenario [s].")
                          ] = None,
    gap: Annotated[float | None, typer.Option("--gap", min=0.0,
                                              help="Relative MIP gap to stop at.")] = None,
    allow_unserved: Annotated[bool, typer.Option(
        "--allow-unserved", help="Exit 0 even when a scenario cannot meet all demand.")
                              ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
) -> None:
    """Solve each scenario and compare KPIs, binding limits and fleets side by side.

    KPIs come with deltas against the baseline; -o/--xlsx/--png-dir also write a
    comparison workbook and PNG charts.

    Exit codes: 0 compared; 1 bad input, a scenario without a plan, or unmet demand
    (unless --allow-unserved); 2 bad command line.
    """
    from dcplan.errors import InputError
    from dcplan.export.compare import compare_results, comparison_text, export_comparison
    from dcplan.planner import plan

    if len(scenarios) < 2:
        fail("give at least two scenario files to compare", 2)
    if solver is not None and solver not in ("highs", "cbc"):
        fail(f"unknown solver '{solver}'; use highs or cbc", 2)
    check_outputs(dirs={"-o/--outdir": outdir, "--png-dir": png_dir}, files={"--xlsx": xlsx})
    say = None if quiet else _progress
    cases, problems = [], []
    for path in scenarios:  # every scenario's problems at once
        try:
            cases.append(STATE.case(path))
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems)
    if baseline is not None and not any(
            baseline in (c.name, str(p), p.stem, p.name)
            for c, p in zip(cases, scenarios, strict=True)):
        fail(f"--baseline: '{baseline}' is none of the scenarios (give a scenario name, file "
             "or file stem)", 2)
    results = []
    for path, case in zip(scenarios, cases, strict=True):
        if say:
            say(f"planning {path}")
        results.append(plan(case, solver=solver, time_limit_s=time_limit, gap=gap))
        r = results[-1]
        if say:
            say(f"{path}: {r.status.value}"
                + (f", NPV {r.objective_usd:,.0f} USD" if r.objective_usd is not None else "")
                + f" in {r.timings_s.get('total', 0):.1f} s")
    try:
        cmp = compare_results(results, baseline, labels=[str(p) for p in scenarios])
    except ValueError as exc:
        fail(f"--baseline: {exc}", 2)
    files = []
    if outdir is not None or xlsx is not None or png_dir is not None:
        files = export_comparison(cmp, outdir=outdir, xlsx=xlsx, png_dir=png_dir)
        if say:
            say(f"wrote {len(files)} files: " + ", ".join(str(f) for f in files))
    if as_json:
        emit_json(cmp.summary())
    else:
        typer.echo(comparison_text(cmp))
    bad = [n for r, n in zip(results, cmp.names, strict=True) if not r.status.has_solution]
    if bad:
        fail(f"no plan for {', '.join(bad)}")
    short = [n for r, n in zip(results, cmp.names, strict=True)
             if r.unserved and not r.unserved_accepted]
    if short and not allow_unserved:
        fail(f"demand cannot be fully met in {', '.join(short)}; rerun with --allow-unserved "
             "to accept")
