"""``dcplan sweep SWEEP.yaml``: many plans under uncertain assumptions, on a Dask cluster.

``dcplan sweep SWEEP.yaml`` (the same as ``dcplan sweep run SWEEP.yaml``) plans every
sample of a sweep file and writes the sweep folder; ``dcplan sweep show DIR`` prints
what a sweep folder tells; ``dcplan sweep report DIR`` writes its charts, workbook and
HTML report again.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from dcplan.cli.app import app
from dcplan.cli.common import (
    STATE,
    UNCERTAINTY_IGNORED,
    check_outputs,
    emit_json,
    handle_errors,
    note,
)
from dcplan.defaults import MAX_TIME_LIMIT_S


class _RunByDefault(TyperGroup):
    """``dcplan sweep FILE ...`` means ``dcplan sweep run FILE ...``."""

    def parse_args(self, ctx, args):  # noqa: D102
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


sweep_app = typer.Typer(
    cls=_RunByDefault, no_args_is_help=True, rich_markup_mode=None,
    help="Plan a scenario under uncertain assumptions: one plan per sample on a Dask "
         "cluster (dcplan sweep SWEEP.yaml -o DIR), then percentiles, purchase "
         "probabilities and sensitivity indices (dcplan sweep show DIR).")
app.add_typer(sweep_app, name="sweep")


class _Bar:
    """Progress on stderr: a rich bar with ETA on a terminal, a line per tenth otherwise.

    The ETA is :func:`dcplan.sweep.run.eta_s`: the median sample time so far, the
    samples left shared among the workers, and what the running samples still need.
    """

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.progress = None
        self.task = None
        self.counts: dict[str, int] = {}
        self.next_line = 0.0
        self.t0 = time.perf_counter()
        self.times: list[float] = []
        self.free_at: dict[str, float] = {}  # worker -> when its last sample ended
        self.workers = 1
        self.limit: float | None = None

    def eta(self, done: int) -> float:
        """Seconds left [s] (see :func:`dcplan.sweep.run.eta_s`)."""
        from dcplan.sweep.run import eta_s

        now = time.perf_counter()
        ends = sorted(self.free_at.values(), reverse=True)[:self.workers]
        ends += [self.started] * (self.workers - len(ends))  # busy since the start
        return eta_s(self.times, self.total - done, [now - t for t in ends])

    def start(self, todo: int, total: int, cluster: str, workers: int = 1,
              time_limit_s: float | None = None) -> None:
        self.started = time.perf_counter()
        self.workers, self.limit = max(1, workers), time_limit_s
        self.first = total - todo
        self.total = total
        if self.quiet:
            return
        limit = f", at most {time_limit_s:,.0f} s each" if time_limit_s else ""
        typer.echo(f"[sweep] {todo:,} of {total:,} samples to solve on {cluster}{limit}",
                   err=True)
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.progress = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), TextColumn("ETA {task.fields[eta]}"),
                                     TextColumn("{task.fields[what]}"),
                                     console=Console(stderr=True), transient=False)
            self.progress.start()
            self.task = self.progress.add_task("sweep", total=total, completed=total - todo,
                                               what="", eta="-")

    def update(self, done: int, total: int, row: dict) -> None:
        status = str(row.get("status"))
        self.counts[status] = self.counts.get(status, 0) + 1
        if row.get("solve_s") not in (None, ""):
            self.times.append(float(row["solve_s"]))
        if row.get("worker"):
            self.free_at[str(row["worker"])] = time.perf_counter()
        if self.quiet:
            return
        what = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        eta = self.eta(done)
        if self.progress is not None:
            self.progress.update(self.task, completed=done, what=what,
                                 eta=f"{eta:,.0f} s" if self.times else "-")
        elif done / total >= self.next_line or done == total:
            el = time.perf_counter() - self.t0
            typer.echo(f"[sweep] {done:,}/{total:,} samples ({what}), {el:,.0f} s, "
                       f"ETA {eta:,.0f} s", err=True)
            self.next_line = done / total + 0.1

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()


@sweep_app.command("run")
@handle_errors
def run_cmd(
    sweep_file: Annotated[Path, typer.Argument(metavar="SWEEP.yaml",
                                               help="Sweep YAML file (kind: dcplan_sweep).",
                                               dir_okay=False)],
    samples: Annotated[int | None, typer.Option(
        "--samples", "-n", help="Plans to solve (replaces the file's 'samples'; morris and "
                                "sobol round down to whole trajectories / base samples).")] = None,
    workers: Annotated[int | None, typer.Option(
        "--workers", min=1, help="Worker processes of the local Dask cluster "
                                 "(default: one per core).")] = None,
    scheduler: Annotated[str | None, typer.Option(
        "--scheduler", help="Address of a running Dask scheduler, e.g. tcp://host:8786 "
                            "(its workers need dcplan installed).")] = None,
    outdir: Annotated[Path | None, typer.Option(
        "-o", "--outdir", file_okay=False,
        help="Sweep folder (default: sweep-<name> in the current folder).")] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue the sweep in the folder: skip the samples it holds.")
    ] = False,
    time_limit: Annotated[float | None, typer.Option(
        "--time-limit", min=0.001, max=MAX_TIME_LIMIT_S, metavar="SECONDS",
        help="Time limit of each sample's solve [s] (replaces the sweep file's "
             "solver.time_limit_s; default: max(30 s, 5 x the base plan's own solve "
             "time)).")] = None,
    gap: Annotated[float | None, typer.Option(
        "--gap", min=0.0, max=0.999, metavar="FRACTION",
        help="Relative MIP gap of each sample, e.g. 0.01 = 1 % (replaces the sweep "
             "file's solver.gap; default: the base scenario's solver.gap).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress.")] = False,
    no_report: Annotated[bool, typer.Option(
        "--no-report", help="Skip the charts, workbook and HTML report.")] = False,
) -> None:
    """Plan every sample of a sweep file and write the sweep folder.

    Each sample is the base scenario with the sampled values applied, planned as one
    Dask task (one thread per worker, HiGHS on one thread). Results are written to
    DIR/samples.csv as they arrive; a failed or infeasible sample is recorded, never
    fatal; Ctrl-C stops and keeps what is done (--resume continues). The base case is
    sample 0. Then DIR gets charts/, sweep.xlsx and report.html, from the samples
    that solved (optimal or unserved), with how many of all that is.

    Exit codes: 0 every sample solved; 1 bad input, or some samples did not solve
    (the folder, report and percentiles of the others are written all the same; the
    message names them); 130 interrupted.
    """
    from dcplan.errors import InputError, Problem
    from dcplan.sweep import load_sweep, prepare_sweep, run_sweep, summarize
    from dcplan.sweep.spec import load_sweep_spec

    cores = os.cpu_count() or 1
    if workers is not None and workers > cores:
        raise InputError(Problem("--workers", f"{workers} local workers on a machine with "
                                              f"{cores} cores: each worker is a process with "
                                              "its own solver (about 250 MB) and more than "
                                              f"one per core gains nothing; give at most "
                                              f"{cores}, or --scheduler for a larger cluster"))
    if workers is not None and scheduler:
        raise InputError(Problem("--workers", "give --workers (a local cluster) or "
                                              "--scheduler (an existing one), not both"))
    spec = load_sweep_spec(sweep_file)
    folder = outdir or Path(f"sweep-{spec.name}")
    check_outputs(dirs={"-o": folder}, replaced=False)  # a sweep folder is resumed, not replaced
    case = STATE.case(spec.base_path())
    if case.scenario.uncertainty is not None:
        note(UNCERTAINTY_IGNORED.format(
            path=spec.base_path(), cmd="a sweep",
            what="each sample is one deterministic plan of the base case with its sampled values"))
    plan = prepare_sweep(spec, case, samples=samples)
    bar = _Bar(quiet or as_json and not sys.stderr.isatty())
    try:
        outcome = run_sweep(plan, folder, workers=workers, scheduler=scheduler, resume=resume,
                            progress=bar.update, on_start=bar.start,
                            time_limit_s=time_limit, gap=gap)
    finally:
        bar.stop()
    data = load_sweep(folder)
    summary = summarize(data)
    files: list[Path] = []
    if not no_report:
        from dcplan.export.sweep import write_sweep_reports

        files = write_sweep_reports(summary)
    if as_json:
        emit_json({"folder": str(folder), "state": data.manifest.get("state"),
                   "samples": outcome.total, "done": outcome.done, "skipped": outcome.skipped,
                   "solved": summary.solved, "statuses": dict(outcome.statuses),
                   "workers": outcome.workers, "cluster": outcome.cluster,
                   "time_limit_s": outcome.time_limit_s,
                   "time_limit_rule": outcome.time_limit_rule, "gap": outcome.gap,
                   "elapsed_s": round(outcome.elapsed_s, 3),
                   "facility_tables": outcome.facility_tables,
                   "interrupted": outcome.interrupted,
                   "files": [str(p) for p in files], "summary": summary.to_dict()})
    else:
        from dcplan.export.sweep import sweep_summary_text

        typer.echo(sweep_summary_text(summary))
        if not outcome.interrupted:
            t = outcome.facility_tables
            typer.echo(f"\n{outcome.done - outcome.skipped:,} samples run in "
                       f"{outcome.elapsed_s:,.0f} s on {outcome.cluster or 'no cluster'}; "
                       f"facility tables computed {t.get('misses', 0):,}, reused "
                       f"{t.get('hits', 0) + t.get('disk_hits', 0):,}", err=True)
    if outcome.interrupted:
        typer.secho(f"interrupted: {outcome.done:,} of {outcome.total:,} samples are saved in "
                    f"{folder}; 'dcplan sweep {sweep_file} -o {folder} --resume' continues",
                    err=True)
        raise typer.Exit(130)
    if outcome.done and not summary.solved:
        typer.secho(f"error: no sample was solved; see the status and message columns of "
                    f"{folder / 'samples.csv'}"
                    + ("" if time_limit else "; give more time with --time-limit SECONDS"),
                    fg=typer.colors.RED, err=True)
        raise typer.Exit(1)
    unsolved = outcome.done - summary.solved
    if unsolved > 0:
        typer.secho(f"error: {unsolved:,} of {outcome.done:,} samples did not solve (see "
                    f"the headline above and {folder / 'samples.csv'}); the statistics and "
                    f"report are over the other {summary.solved:,}. To solve them, run again "
                    f"into a new -o folder with a longer --time-limit (this run: "
                    f"{outcome.time_limit_s or 0:,.0f} s per sample) or a larger --gap",
                    fg=typer.colors.RED, err=True)
        raise typer.Exit(1)


@sweep_app.command("show")
@handle_errors
def show_cmd(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="Sweep folder (-o of dcplan sweep).",
                                           file_okay=False)],
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
) -> None:
    """Print what a sweep folder tells: percentiles, purchases, sensitivity, tornado."""
    from dcplan.export.sweep import sweep_summary_text
    from dcplan.sweep import load_sweep, summarize

    summary = summarize(load_sweep(folder))
    if as_json:
        emit_json(summary.to_dict())
    else:
        typer.echo(sweep_summary_text(summary))


@sweep_app.command("report")
@handle_errors
def report_cmd(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="Sweep folder (-o of dcplan sweep).",
                                           file_okay=False)],
) -> None:
    """Write a sweep folder's charts, workbook and HTML report again."""
    from dcplan.export.sweep import write_sweep_reports
    from dcplan.sweep import load_sweep

    load_sweep(folder)  # a clear error for a folder without a sweep
    for path in write_sweep_reports(folder):
        typer.echo(f"wrote {path}")
