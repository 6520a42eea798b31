"""Shared plumbing of the command line: global options, error handling, output."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from dcplan.errors import InputError, Problem
from dcplan.export.text import fit_lines, terminal_width
from dcplan.export.text import format_table as _format_table


@dataclass
class State:
    """Options given before the sub-command (``dcplan --catalog-dir X ...``)."""

    catalog_dir: Path | None = None
    sites_dir: Path | None = None
    debug: bool = False
    #: A Ctrl-C or SIGTERM arrived (set by the handlers of :func:`dcplan.cli.main`): an
    #: error that follows it is its consequence (an import the KeyboardInterrupt broke
    #: half way fails later with an ImportError), reported as "interrupted", exit 130.
    interrupted: bool = False
    _catalog: Any = None

    def catalog(self):
        """Load (once) and return the validated :class:`~dcplan.catalog.Catalog`."""
        if self._catalog is None:
            from dcplan.catalog import load_catalog

            self._catalog = load_catalog(self.catalog_dir)
        return self._catalog

    def case(self, scenario: Path, calibration: Path | None = None):
        """Load and check a scenario with the data folders given on the command line.

        Returns
        -------
        Case
            See :func:`dcplan.case.load_case`.
        """
        from dcplan.case import load_case

        return load_case(scenario, catalog_dir=self.catalog_dir, sites_dir=self.sites_dir,
                         calibration=calibration)


STATE = State()


def note(message: str) -> None:
    """Print one ``note:`` line to stderr (shown with --quiet too: it qualifies the answer)."""
    typer.secho(fit_lines(f"note: {message}", terminal_width()), fg=typer.colors.YELLOW,
                err=True)


UNCERTAINTY_IGNORED = ("{path} has an uncertainty block, which {cmd} does not use: {what}; "
                       "`dcplan plan {path}` gives the two-stage stochastic plan")


def fail(message: str, code: int = 1) -> None:
    """Print one clear error line to stderr and exit with ``code``."""
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


def handle_errors(func: Callable) -> Callable:
    """Decorate a command: bad input -> message on stderr and exit 1, no traceback.

    With ``--debug`` the traceback is printed as well. A solver failure and unexpected
    exceptions exit 3 with a one-line message (and the traceback under ``--debug``).
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            out = func(*args, **kwargs)
        except typer.Exit:
            if STATE.interrupted:  # e.g. "demand cannot be met" after a swallowed Ctrl-C
                _interrupted()
            raise
        except KeyboardInterrupt:
            _interrupted()
        except BrokenPipeError:
            # The reader went away (e.g. `dcplan ... | head`): stop quietly.
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except (OSError, ValueError):  # stdout without a file descriptor
                pass
            raise typer.Exit(0) from None
        except InputError as exc:
            if STATE.interrupted:
                _interrupted()
            if STATE.debug:
                traceback.print_exc()
            typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
            raise typer.Exit(1) from None
        except OSError as exc:
            if STATE.interrupted:
                _interrupted()
            if STATE.debug:
                traceback.print_exc()
            where = f" '{exc.filename}'" if exc.filename else ""
            typer.secho(f"error: cannot use{where}: {exc.strerror or exc}", fg=typer.colors.RED,
                        err=True)
            raise typer.Exit(1) from None
        except Exception as exc:  # noqa: BLE001 - last-resort handler of the CLI
            if STATE.interrupted:
                _interrupted()
            if STATE.debug:
                traceback.print_exc()
            # The solver module is imported only by commands that solve.
            solver_error = getattr(sys.modules.get("dcplan.planner.solver"), "SolverError", ())
            if solver_error and isinstance(exc, solver_error):
                typer.secho(f"solver error: {exc}", fg=typer.colors.RED, err=True)
                raise typer.Exit(3) from None
            typer.secho(
                f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for details)",
                fg=typer.colors.RED,
                err=True,
            )
            raise typer.Exit(3) from None
        if STATE.interrupted:  # a library swallowed the KeyboardInterrupt: still stopped
            _interrupted()
        return out

    return wrapper


def _interrupted() -> None:
    """Ctrl-C or SIGTERM, or an error it caused: "interrupted", exit 130."""
    typer.secho("interrupted", err=True)
    raise typer.Exit(130) from None


def check_outputs(dirs: dict[str, Path | None] | None = None,
                  files: dict[str, Path | None] | None = None, replaced: bool = True) -> None:
    """Check output locations before any work is done; exit 1 naming the option if bad.

    Parameters
    ----------
    dirs : dict
        Option name -> folder that will be created if missing (``-o``, ``--png-dir``).
    files : dict
        Option name -> file that will be written (``--xlsx``, ``--write-lp``).
    replaced : bool
        The folders are replaced whole (:func:`dcplan.export.files.replace_folder`), so
        one holding anything dcplan did not write there is refused too.

    Raises
    ------
    InputError
        Every unusable location: a folder that is a file, a file that is a folder, a
        place that cannot be created or written, or a folder to be replaced that holds
        files dcplan did not write.
    """
    problems = []

    def writable_parent(path: Path) -> Path | None:
        for parent in [path, *path.parents]:
            if parent.exists():
                return parent
        return None

    def can_write_in(folder: Path | None) -> bool:
        # Permission bits say little for root or special file systems: try it.
        if folder is None or not folder.is_dir():
            return False
        try:
            fd, probe = tempfile.mkstemp(prefix=".dcplan-probe-", dir=folder)
        except OSError:
            return False
        os.close(fd)
        os.unlink(probe)
        return True

    for option, path in (dirs or {}).items():
        if path is None:
            continue
        base = writable_parent(path)
        if path.exists() and not path.is_dir():
            problems.append(Problem(str(path), f"{option}: exists and is not a folder; "
                                               "choose a folder"))
        elif not can_write_in(base):
            problems.append(Problem(str(path), f"{option}: cannot create or write this folder "
                                               f"(no write access to '{base}'); choose another"))
        elif replaced:
            from dcplan.export.files import check_replaceable

            try:
                check_replaceable(path, option)
            except InputError as exc:
                problems += exc.problems
    for option, path in (files or {}).items():
        if path is None:
            continue
        base = writable_parent(path.parent)
        if path.is_dir():
            problems.append(Problem(str(path), f"{option}: is a folder; give a file name"))
        elif path.exists() and not path.is_file():
            from dcplan.yamlio import check_replaceable_file

            try:
                check_replaceable_file(path)
            except InputError as exc:
                problems += [dataclasses.replace(pr, message=f"{option}: {pr.message}")
                             for pr in exc.problems]
        elif not can_write_in(base):
            problems.append(Problem(str(path), f"{option}: cannot write here (no write access "
                                               f"to '{base}'); choose another place"))
    from dcplan.export.files import check_distinct_outputs

    try:
        check_distinct_outputs(files or {}, dirs or {}, folders_replaced=replaced)
    except InputError as exc:
        problems += exc.problems
    if problems:
        raise InputError(problems)


def format_table(rows: list[dict[str, Any]], columns: list[str] | None = None,
                 **kwargs: Any) -> str:
    """Text table fitted to the terminal (:func:`dcplan.export.text.format_table`).

    ``width=None``: as wide as it needs.
    """
    kwargs.setdefault("width", terminal_width())
    return _format_table(rows, columns, **kwargs)


def echo(text: str) -> None:
    """Print ``text`` on stdout with its long lines wrapped to the terminal width."""
    typer.echo(fit_lines(text, terminal_width()))


def emit_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON on stdout (dates and enums as strings)."""
    sys.stdout.write(json.dumps(obj, indent=2, default=str, allow_nan=False) + "\n")


__all__ = ["STATE", "State", "check_outputs", "echo", "emit_json", "exit_for", "fail",
           "format_table", "handle_errors"]


# ----------------------------------------------------------------------------------------
# Live solver display
# ----------------------------------------------------------------------------------------


class _SolveStatus:
    """What the live line shows: elapsed time, best plan, bound and gap (rich renderable)."""

    def __init__(self, label: str):
        import time

        self.label = label
        self.t0 = time.perf_counter()
        self.last = None

    def update(self, progress: Any) -> None:
        self.last = progress

    def text(self) -> str:
        import time

        elapsed = time.perf_counter() - self.t0
        p = self.last
        stage = getattr(p, "stage", "") if p is not None else ""
        line = f"[{self.label}] solving{' the ' + stage if stage else ''}: {elapsed:5.1f} s"
        if p is not None and p.incumbent_usd is not None:
            line += f", best plan {p.incumbent_usd / 1e6:,.1f} M USD"
        if p is not None and p.bound_usd is not None:
            line += f", bound {p.bound_usd / 1e6:,.1f} M USD"
        if p is not None and p.gap is not None:
            line += f", gap {p.gap:.2%}"
        return line

    def __rich__(self) -> str:
        return self.text()


class solve_display:  # noqa: N801 - used as a context manager like a function
    """Show the solver's progress on stderr while a plan solves; yields the callback.

    On a terminal: one live line (elapsed time, best plan, bound, gap; for a stage that
    is not the cost, such as an elastic plan's least shortfall, its name, time and gap)
    that the solver's callbacks update and that disappears when the solve ends.
    Elsewhere (a log file, a pipe): a line once there is a plan (or a gap), at most every
    5 s. Disabled (the callback is None) with ``enabled=False``.
    """

    def __init__(self, enabled: bool, label: str = "plan"):
        self.enabled = enabled
        self.label = label
        self.live = None

    def __enter__(self):
        if not self.enabled:
            return None
        import time

        from rich.console import Console
        from rich.live import Live

        status = _SolveStatus(self.label)
        console = Console(stderr=True)
        if console.is_terminal:
            self.live = Live(status, console=console, refresh_per_second=4, transient=True)
            self.live.__enter__()
            return status.update
        state = {"t": -1e9}

        def report(progress: Any) -> None:
            status.update(progress)
            now = time.perf_counter()
            found = progress.incumbent_usd is not None or progress.gap is not None
            if found and now - state["t"] >= 5.0:
                state["t"] = now
                typer.echo(status.text(), err=True)

        return report

    def __exit__(self, *exc):
        if self.live is not None:
            self.live.__exit__(*exc)
        return False


def exit_for(result, allow_unserved: bool) -> None:
    """Exit 1 for a plan without a solution, or with unserved demand not accepted.

    Parameters
    ----------
    result : PlanResult or StochasticResult
        Read: ``status``, ``message``, ``unserved`` and ``unserved_accepted`` (the
        scenario's ``allow_unserved``).
    allow_unserved : bool
        ``--allow-unserved``.
    """
    if not result.status.has_solution:
        fail(result.message or f"no plan: solver status {result.status.value}")
    if result.unserved and not (allow_unserved or result.unserved_accepted):
        fail(result.message + " Rerun with --allow-unserved to accept this plan.")
