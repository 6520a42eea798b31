"""The ``dcplan`` command line (typer): a thin shell over the Python API.

The application and its global options are :mod:`dcplan.cli.app`; each sub-command
module registers its commands on it when imported here.
"""

from __future__ import annotations

import typer

from dcplan.cli import (  # the sub-commands register themselves on `app` when imported
    catalog_cmd,  # noqa: F401
    compare_cmd,  # noqa: F401
    facility_cmd,  # noqa: F401
    perf_cmd,  # noqa: F401
    perf_import_cmd,  # noqa: F401
    plan_cmd,  # noqa: F401
    saved_cmd,  # noqa: F401
    sweep_cmd,  # noqa: F401
    tokens_cmd,  # noqa: F401
)
from dcplan.cli.app import app
from dcplan.cli.common import STATE
from dcplan.cli.options import EXIT_CODES


def _unset(value) -> bool:
    from typer.models import DefaultPlaceholder

    return value is None or isinstance(value, DefaultPlaceholder)


def _with_exit_codes(group: typer.Typer) -> None:
    """Every command's help ends with the exit codes (one text for all)."""
    if _unset(group.info.epilog):
        group.info.epilog = EXIT_CODES
    for cmd in group.registered_commands:
        if _unset(cmd.epilog):
            cmd.epilog = EXIT_CODES
    for sub in group.registered_groups:
        if _unset(sub.epilog):
            sub.epilog = EXIT_CODES
        if sub.typer_instance is not None:
            _with_exit_codes(sub.typer_instance)


_with_exit_codes(app)


class Terminated(KeyboardInterrupt):
    """SIGTERM as an exception, so that every temporary file is removed on the way out.

    Treated as Ctrl-C: the command stops at once (a running solve too, see
    :func:`dcplan.planner.interrupt.interruptible`), writes nothing more, prints
    "interrupted" and exits 130.
    """


def _stop_requested() -> None:
    from dcplan.outputset import request_stop

    STATE.interrupted = True
    request_stop()  # no output set is moved in from now on


def _on_sigterm(signum, frame):  # noqa: ARG001
    _stop_requested()
    raise Terminated(signum)


def _on_sigint(signum, frame):  # noqa: ARG001
    # Python's own handler, remembering that it fired (see State.interrupted).
    _stop_requested()
    raise KeyboardInterrupt


def main() -> None:
    """Console-script entry point."""
    import signal

    # Default SIGTERM kills the process without unwinding: temporaries would stay.
    signal.signal(signal.SIGTERM, _on_sigterm)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not when ignored
        signal.signal(signal.SIGINT, _on_sigint)
    try:
        app()
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM outside a command's own handler (while typer parses the
        # command line or sets the command up): nothing was written yet.
        typer.secho("interrupted", err=True)
        raise SystemExit(130) from None
