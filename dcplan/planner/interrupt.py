"""Stopping a running solve: Ctrl-C (SIGINT), SIGTERM or :func:`request_interrupt`.

While HiGHS runs (:func:`interruptible`) a signal only sets a flag that HiGHS's
interrupt callbacks read (:func:`interrupt_requested`; a handler raising inside a
callback would unwind through HiGHS, which then reports "Solve error"); the exception
is raised once HiGHS has returned. See :mod:`dcplan.planner.solver`.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: Set while an interrupt is pending: by :func:`request_interrupt`, or by SIGINT/SIGTERM
#: while HiGHS runs (:func:`interruptible`); HiGHS's interrupt callbacks read it.
_INTERRUPT = threading.Event()


def request_interrupt() -> None:
    """Ask the running (or the next) solve to stop; it raises :class:`KeyboardInterrupt`.

    Safe from any thread and from a signal handler.
    """
    _INTERRUPT.set()


def interrupt_requested() -> bool:
    """Whether an interrupt is pending (HiGHS's interrupt callbacks stop the solve)."""
    return _INTERRUPT.is_set()


#: The signals that stop a solve (those the process handles in Python).
_STOP_SIGNALS = ("SIGINT", "SIGTERM")


@contextmanager
def interruptible() -> Iterator[None]:
    """Run a HiGHS solve that SIGINT, SIGTERM and :func:`request_interrupt` stop.

    In the main thread, the signals that have a Python handler (Ctrl-C's
    :class:`KeyboardInterrupt`, the command line's SIGTERM handler) only set the
    interrupt flag while the block runs: HiGHS's interrupt callbacks see it and stop,
    and no exception unwinds through HiGHS (which would end the solve as "Solve error").
    Ignored or default signals are left as they are (a sweep's workers ignore SIGINT).
    When the block ends with an interrupt pending, the flag is cleared and the first
    signal's own handler is called (it raises, e.g. :class:`KeyboardInterrupt`); a
    handler that returns, or :func:`request_interrupt`, gives :class:`KeyboardInterrupt`.

    Raises
    ------
    KeyboardInterrupt
        On entry when an interrupt is already pending, on exit when one came in.
    """
    if _INTERRUPT.is_set():
        _INTERRUPT.clear()
        raise KeyboardInterrupt
    previous: dict[int, Any] = {}
    received: list[int] = []

    def defer(signum: int, frame: Any) -> None:  # noqa: ARG001 - signal handler
        received.append(signum)
        _INTERRUPT.set()

    if threading.current_thread() is threading.main_thread():
        for name in _STOP_SIGNALS:
            sig = getattr(signal, name, None)
            handler = None if sig is None else signal.getsignal(sig)
            if callable(handler):
                previous[sig] = handler
                signal.signal(sig, defer)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if _INTERRUPT.is_set():
            _INTERRUPT.clear()
            if received:
                previous[received[0]](received[0], None)
            raise KeyboardInterrupt
