"""The ``dcplan`` command line (typer): a thin shell over the Python API."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dcplan import __version__
from dcplan.cli.common import STATE

app = typer.Typer(
    name="dcplan",
    help="Plan AI-inference datacenter fleets: racks, sites, grid, cooling, network, cost.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain click help: boolean flags show as "--json", not "--json <bool>", and usage
    # errors are one plain line instead of a framed panel.
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"dcplan {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    catalog_dir: Annotated[
        Path | None,
        typer.Option("--catalog-dir", envvar="DCPLAN_CATALOG_DIR",
                     help="Folder of catalog YAML files (default: the shipped catalogs).",
                     file_okay=False),
    ] = None,
    sites_dir: Annotated[
        Path | None,
        typer.Option("--sites-dir", envvar="DCPLAN_SITES_DIR",
                     help="Folder of site YAML files (default: the shipped sites).",
                     file_okay=False),
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[
        bool | None,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = None,
) -> None:
    """Plan AI-inference datacenter fleets against token demand."""
    STATE.catalog_dir = catalog_dir
    STATE.sites_dir = sites_dir
    STATE.debug = debug
    STATE._catalog = None


# Sub-commands register themselves on `app` when imported.
from dcplan.cli import (  # noqa: E402
    catalog_cmd,  # noqa: F401
    compare_cmd,  # noqa: F401
    facility_cmd,  # noqa: F401
    perf_cmd,  # noqa: F401
    perf_import_cmd,  # noqa: F401
    plan_cmd,  # noqa: F401
    sweep_cmd,  # noqa: F401
    tokens_cmd,  # noqa: F401
)


def main() -> None:
    """Console-script entry point."""
    app()
