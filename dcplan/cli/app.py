"""The ``dcplan`` typer application and its global options (``--catalog-dir``, ...).

The sub-command modules (``dcplan/cli/*_cmd.py``) register their commands on
:data:`app`; :mod:`dcplan.cli` imports them all and is what runs the command line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
import typer.core

from dcplan import __version__
from dcplan.cli.common import STATE

app = typer.Typer(
    name="dcplan",
    help="Plan AI-inference datacenter fleets: racks, sites, grid, cooling, network, cost.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    # Plain click help: boolean flags show as "--json", not "--json <bool>", and usage
    # errors are one plain line instead of a framed panel.
    rich_markup_mode=None,
)


# Help text as people read it. Typer (0.2x) labels values by Python type ("<float range>",
# "<list[Path]>") and wraps arguments in braces in the usage line ("{scenario}"); these two
# small replacements of its display methods show metavars and plain names instead.

#: Typer's type labels in help ("<float range>", "<list[Path]>") as people read them.
_READABLE_TYPES = {"<float range>": "NUMBER", "<float>": "NUMBER", "<int range>": "N",
                   "<int>": "N", "<str>": "TEXT", "<file>": "FILE", "<dir>": "DIR",
                   "<path>": "PATH", "<list[Path]>": "PATH...", "<list[str]>": "TEXT..."}


def _readable_type(original):
    """Wrap typer's ``display_type_rich``: a metavar, else a readable label of the type."""

    def display(self, ctx):
        if self.metavar is not None:
            # An argument's help line already starts with its metavar.
            return None if isinstance(self, typer.core.TyperArgument) else self.metavar
        label = original(self, ctx)
        if label is None or not label.startswith("<"):
            return label
        return _READABLE_TYPES.get(label, label.strip("<>").upper())

    return display


for _cls in (typer.core.TyperArgument, typer.core.TyperOption):
    _cls.display_type_rich = _readable_type(_cls.display_type_rich)


def _usage_name(self) -> str:
    """An argument in the usage line as in most tools: SCENARIO, [ID], PATH..."""
    name = (self.metavar or self.name or "").upper()
    if self.nargs != 1 and not name.endswith("..."):
        name += "..."
    return name if self.required else f"[{name}]"


typer.core.TyperArgument._usage_display_name = _usage_name


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
