"""Options shared by several commands, with readable placeholders and their defaults.

Defaults and limits come from their one home, :mod:`dcplan.defaults` (plain data, which
:class:`dcplan.scenario.SolverOptions` uses too); help shows them. Nothing here imports
the schemas, so ``--help`` and shell completion run without loading them.
``EXIT_CODES`` is appended to every command's help (see ``dcplan.cli``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dcplan.defaults import (
    DEFAULT_GAP,
    DEFAULT_SOLVER,
    DEFAULT_TIME_LIMIT_S,
    MAX_SOLVER_THREADS,
    MAX_TIME_LIMIT_S,
    SOLVERS,
)
from dcplan.export.text import WIDTH

#: The exit codes of every command (shown at the end of each command's help).
EXIT_CODES = ("Exit codes: 0 done; 1 bad input (every problem named with file, line, entry "
              "and field) or demand that cannot be met; 2 a malformed command line; 3 an "
              "internal or solver error (rerun with --debug and report it); 130 "
              "interrupted (Ctrl-C or SIGTERM: the solve stops at once and no plan output "
              "is written or replaced; a sweep keeps the samples it finished).")


def _check_solver(value: str | None) -> str | None:
    if value is not None and value not in SOLVERS:
        raise typer.BadParameter(f"unknown solver '{value}'; use {' or '.join(SOLVERS)}")
    return value


Solver = Annotated[str | None, typer.Option(
    "--solver", metavar="NAME", callback=_check_solver,
    help=f"MILP solver: {' or '.join(SOLVERS)} (default: the scenario's solver.name, else "
         f"{DEFAULT_SOLVER}).")]
TimeLimit = Annotated[float | None, typer.Option(
    "--time-limit", min=0.001, max=MAX_TIME_LIMIT_S, metavar="SECONDS",
    help=f"Solver time limit per solve [s] (default: the scenario's solver.time_limit_s, "
         f"else {DEFAULT_TIME_LIMIT_S:g}).")]
Gap = Annotated[float | None, typer.Option(
    "--gap", min=0.0, max=1.0, metavar="FRACTION",
    help=f"Relative MIP gap to stop at, e.g. 0.001 = 0.1 % (default: the scenario's "
         f"solver.gap, else {DEFAULT_GAP:g}).")]
Threads = Annotated[int | None, typer.Option(
    "--threads", min=1, max=MAX_SOLVER_THREADS, metavar="N",
    help="Solver threads (default: the scenario's solver.threads, else the solver's "
         "choice).")]
SolverLog = Annotated[bool, typer.Option(
    "--solver-log", help="Stream the solver's own log (on standard output).")]
Calibration = Annotated[Path | None, typer.Option(
    "--calibration", dir_okay=False, metavar="FILE",
    help="Performance-model calibration YAML (written by 'dcplan perf calibrate').")]
Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines on stderr.")]
Wide = Annotated[bool, typer.Option(
    "--wide", help=f"Do not fit tables to the terminal width (COLUMNS, else the terminal's, "
                   f"else {WIDTH}): as wide as they need.")]
AllowUnserved = Annotated[bool, typer.Option(
    "--allow-unserved", help="Exit 0 even when demand cannot be fully met.")]
OutDir = Annotated[Path | None, typer.Option(
    "-o", "--outdir", file_okay=False, metavar="DIR",
    help="Write every result table as CSV to this folder (replaced as a whole).")]
Xlsx = Annotated[Path | None, typer.Option(
    "--xlsx", dir_okay=False, metavar="FILE", help="Write the Excel workbook here.")]
PngDir = Annotated[Path | None, typer.Option(
    "--png-dir", file_okay=False, metavar="DIR", help="Write PNG charts to this folder.")]
Html = Annotated[Path | None, typer.Option(
    "--html", dir_okay=False, metavar="FILE",
    help="Write a self-contained HTML report here.")]
Save = Annotated[Path | None, typer.Option(
    "--save", dir_okay=False, metavar="FILE",
    help="Save the plan (tables, solver outcome, resolved inputs) to one file that "
         "'dcplan show', 'dcplan export' and 'dcplan compare' read without solving.")]
