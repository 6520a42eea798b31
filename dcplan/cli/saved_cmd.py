"""``dcplan show`` and ``dcplan export``: read a saved plan; print it or write its outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dcplan.cli import options
from dcplan.cli.app import app
from dcplan.cli.common import check_outputs, emit_json, fail, handle_errors

SavedPlan = Annotated[Path, typer.Argument(
    metavar="FILE", dir_okay=True,
    help="A plan saved with 'dcplan plan SCENARIO --save FILE'.")]
Shown = Annotated[Path, typer.Argument(
    metavar="PATH", dir_okay=True,
    help="A plan saved with 'dcplan plan SCENARIO --save FILE', or the -o folder of "
         "'dcplan sweep'.")]


def _progress(msg: str) -> None:
    typer.echo(f"[export] {msg}", err=True)


def load_saved(path: Path):
    """The saved plan at ``path`` (exit 1 with a clear message if it is not one)."""
    from dcplan.api import load_plan

    return load_plan(path).result


def no_plan(result, what: str) -> str:
    """Why a saved plan without a solution is not shown, exported or compared as a plan."""
    return (f"holds no plan: the solver found none (status {result.status.value}), so "
            f"there is nothing to {what}; fix the scenario and plan it again")


@app.command("show")
@handle_errors
def show_cmd(path: Shown, as_json: options.Json = False, wide: options.Wide = False
             ) -> None:
    """Print a saved plan or a sweep folder, without solving.

    A saved plan: the same text (or --json summary) 'dcplan plan' printed when it
    solved; the inputs behind it come from the file, not from today's catalogs. A
    saved plan without a solution is shown as such and exits 1. A
    sweep folder (-o of 'dcplan sweep'): what 'dcplan sweep show' prints (percentiles,
    purchase probabilities, sensitivity).
    """
    from dcplan.export.terminal import plan_text
    from dcplan.export.text import terminal_width

    if path.is_dir():
        from dcplan.export.sweep import sweep_summary_text
        from dcplan.sweep import is_sweep_folder, load_sweep, summarize

        if not is_sweep_folder(path):
            fail(f"'{path}' is a folder without a sweep in it; give a saved plan file "
                 "(dcplan plan SCENARIO --save FILE) or the -o folder of 'dcplan sweep'")

        summary = summarize(load_sweep(path))
        if as_json:
            emit_json(summary.to_dict())
        else:
            typer.echo(sweep_summary_text(summary))
        return
    result = load_saved(path)
    if as_json:
        summary = result.summary()
        summary["saved_from"] = result.saved_from
        emit_json(summary)
    else:
        typer.echo(plan_text(result, None if wide else terminal_width()))
    if not result.status.has_solution:  # shown as what it is, and exit 1 as 'plan' does
        fail(f"'{path}' {no_plan(result, 'show')}")


@app.command("export")
@handle_errors
def export_cmd(path: SavedPlan, outdir: options.OutDir = None, xlsx: options.Xlsx = None,
               png_dir: options.PngDir = None, html: options.Html = None,
               quiet: options.Quiet = False) -> None:
    """Write the outputs of a saved plan: CSV tables, workbook, PNG charts, HTML report.

    Nothing is solved or read again but the saved file.
    """
    from dcplan.api import write_outputs

    if outdir is None and xlsx is None and png_dir is None and html is None:
        fail("say what to write: -o DIR, --xlsx FILE, --png-dir DIR and/or --html FILE", 2)
    check_outputs(dirs={"-o/--outdir": outdir, "--png-dir": png_dir},
                  files={"--xlsx": xlsx, "--html": html})
    result = load_saved(path)
    if not result.status.has_solution or not result.tables:
        fail(f"'{path}' {no_plan(result, 'export')}")
    written = write_outputs(result, outdir=outdir, xlsx=xlsx, png_dir=png_dir, html=html,
                            progress=None if quiet else _progress)
    files = [str(p) for paths in written.values() for p in paths]
    typer.echo(f"wrote {len(files)} files")
