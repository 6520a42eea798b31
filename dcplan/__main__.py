"""``python -m dcplan`` and the ``dcplan`` command: the command line.

Loading the command line imports typer (a tenth of a second; each command imports
pandas, the solver and the schemas it needs when it runs, about a second more). A
Ctrl-C or SIGTERM in that time used to print a Python traceback, kill the process by
the signal, or (once) be swallowed by a library's import; until the command line is
loaded, either one now stops the process at once with "interrupted" and exit 130, as
an interrupted command does (nothing has been read or written yet). Then
:func:`dcplan.cli.main` takes over the signals.
"""

from __future__ import annotations

import os
import signal


def _stop_while_starting(signum, frame) -> None:  # noqa: ARG001 - signal handler
    try:
        # a raw write: the handler may run while the main thread holds sys.stderr's lock
        os.write(2, b"interrupted\n")
    finally:
        os._exit(130)


def main() -> None:
    """Console-script entry point: load the command line, then run it."""
    starting = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) not in (signal.SIG_IGN, None):  # a background job keeps
            starting[sig] = signal.signal(sig, _stop_while_starting)  # ignoring SIGINT
    from dcplan.cli import main as run

    for sig, previous in starting.items():
        signal.signal(sig, previous)
    run()


if __name__ == "__main__":
    main()
