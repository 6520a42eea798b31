"""Shared plumbing of the command line: global options, error handling, output."""

from __future__ import annotations

import functools
import json
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from dcplan.errors import InputError


@dataclass
class State:
    """Options given before the sub-command (``dcplan --catalog-dir X ...``)."""

    catalog_dir: Path | None = None
    sites_dir: Path | None = None
    debug: bool = False
    _catalog: Any = None

    def catalog(self):
        """Load (once) and return the validated :class:`~dcplan.catalog.Catalog`."""
        if self._catalog is None:
            from dcplan.catalog import load_catalog

            self._catalog = load_catalog(self.catalog_dir)
        return self._catalog


STATE = State()


def fail(message: str, code: int = 1) -> None:
    """Print one clear error line to stderr and exit with ``code``."""
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


def handle_errors(func: Callable) -> Callable:
    """Decorate a command: bad input -> message on stderr and exit 1, no traceback.

    With ``--debug`` the traceback is printed as well. Unexpected exceptions exit 3
    with a one-line message (and the traceback under ``--debug``).
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except typer.Exit:
            raise
        except InputError as exc:
            if STATE.debug:
                traceback.print_exc()
            typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            typer.secho("interrupted", err=True)
            raise typer.Exit(130) from None
        except Exception as exc:  # noqa: BLE001 - last-resort handler of the CLI
            if STATE.debug:
                traceback.print_exc()
            typer.secho(
                f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for details)",
                fg=typer.colors.RED,
                err=True,
            )
            raise typer.Exit(3) from None

    return wrapper


def emit_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON on stdout (dates and enums as strings)."""
    sys.stdout.write(json.dumps(obj, indent=2, default=str, allow_nan=False) + "\n")


def format_table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    """Format ``rows`` as a plain-text table with aligned columns."""
    if not rows:
        return "(none)"
    columns = columns or list(rows[0])

    def cell(v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:,.4g}" if abs(v) < 1e4 else f"{v:,.0f}"
        return str(getattr(v, "value", v))

    grid = [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(g[i]) for g in grid)) for i, c in enumerate(columns)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    for g in grid:
        out.append("  ".join(v.ljust(w) for v, w in zip(g, widths, strict=True)))
    return "\n".join(out)
