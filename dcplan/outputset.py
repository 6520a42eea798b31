"""The outputs of one command, written as a set: all staged, then moved in together.

``dcplan plan ... -o DIR --xlsx F --png-dir D --html H --save P`` writes five outputs.
Each writer already writes to a temporary next to its target; inside
:func:`output_set` those temporaries are not renamed one by one as each writer
finishes but kept until every output of the command is complete, and then moved into
place in one quick sequence of renames (:meth:`OutputSet.commit`). A failure, Ctrl-C
or SIGTERM before that point leaves every target as it was and removes the
temporaries.

Each output of the set carries the set's :class:`RunStamp` (run id, input digest,
time, and the other outputs of the same run): the marker file of an output folder, the
manifest of a saved plan, the document properties of a workbook and a ``<meta>`` tag
of an HTML report. A kill (SIGKILL, power loss) during the renames themselves can
still leave some targets from the new run and some from the old one; the run id in
each tells which is which (docs/outputs.md).

This module is in the base layer: :func:`dcplan.yamlio.atomic_path` (every file
writer) and :func:`dcplan.export.files.replace_folder` (every output folder) consult
:func:`current` and stage into the set when one is open.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import tempfile
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Marker in the names of dcplan's temporary files and folders: ``.<name>.<TMP_TAG>.<pid>.``.
TMP_TAG = "dcplan-tmp"


def temp_prefix(target: Path) -> str:
    """Prefix of this process's temporary files for ``target`` (hidden, names the pid)."""
    return f".{target.name}.{TMP_TAG}.{os.getpid()}."


@dataclass(frozen=True)
class RunStamp:
    """What identifies one run's outputs, written into each of them.

    Attributes
    ----------
    run_id : str
        Random id of the run (32 hex digits), the same in every output of the set.
    created : str
        When the run wrote its outputs (UTC, ISO 8601, seconds).
    input_digest : str or None
        :attr:`dcplan.case.Case.digest` of the inputs the plan was solved from.
    scenario : str or None
        Scenario name.
    outputs : tuple of str
        Every output of the set, as given on the command line.
    """

    run_id: str
    created: str
    input_digest: str | None = None
    scenario: str | None = None
    outputs: tuple[str, ...] = ()

    @classmethod
    def new(cls, input_digest: str | None = None, scenario: str | None = None,
            outputs: Sequence[Path | str | None] = ()) -> RunStamp:
        """A stamp with a fresh run id and the current time."""
        return cls(run_id=uuid.uuid4().hex,
                   created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                   input_digest=input_digest, scenario=scenario,
                   outputs=tuple(str(p) for p in outputs if p is not None))

    def as_dict(self) -> dict[str, Any]:
        """The stamp as JSON-ready data."""
        return {"run_id": self.run_id, "created": self.created,
                "input_digest": self.input_digest, "scenario": self.scenario,
                "outputs": list(self.outputs)}


@dataclass
class OutputSet:
    """Outputs staged as temporaries next to their targets, moved in by :meth:`commit`.

    Attributes
    ----------
    stamp : RunStamp
    staged : list of (Path, Path)
        ``(temporary, target)`` pairs in the order they were staged.
    """

    stamp: RunStamp
    staged: list[tuple[Path, Path]] = field(default_factory=list)

    def stage(self, tmp: Path, target: Path) -> None:
        """Keep ``tmp`` (a complete file or folder) to become ``target`` at commit."""
        self.staged.append((Path(tmp), Path(target)))

    def commit(self) -> None:
        """Move every staged output into place (folders replace older folders whole).

        SIGINT and SIGTERM arriving meanwhile are held until every output is in place
        and the replaced folders are removed (:func:`signals_held`), then handled: a
        signal never leaves some targets new and others old, nor a replaced folder
        behind under a temporary name.
        """
        move_in(self.staged)
        self.staged.clear()

    def discard(self) -> None:
        """Remove every staged temporary; the targets stay as they were."""
        for tmp, _target in self.staged:
            try:
                if tmp.is_dir() and not tmp.is_symlink():
                    shutil.rmtree(tmp, ignore_errors=True)
                elif tmp.exists() or tmp.is_symlink():
                    tmp.unlink()
            except OSError:
                pass
        self.staged.clear()


#: Signals whose handlers :func:`signals_held` holds back while outputs are moved in.
_HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM for the block, then run their handlers as they arrived.

    Python runs signal handlers in the main thread only, so elsewhere this holds
    nothing (the handler runs in the main thread, not in the block). A signal whose
    handler is not a Python function (ignored, default) is not touched.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    previous = {}
    for sig in _HELD_SIGNALS:
        handler = signal.getsignal(sig)
        if callable(handler):
            previous[sig] = handler
            signal.signal(sig, lambda signum, _frame: arrived.append(signum))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for signum in arrived:
            previous[signum](signum, None)  # may raise (KeyboardInterrupt, Terminated)


def move_in(pairs: Sequence[tuple[Path, Path]]) -> None:
    """Rename each complete temporary onto its target, with signals held.

    A folder takes the place of an older folder as a whole: the old one is renamed
    aside first and removed once every pair is in. SIGINT and SIGTERM wait until then
    (:func:`signals_held`).

    Parameters
    ----------
    pairs : sequence of (Path, Path)
        ``(temporary, target)`` pairs, moved in in this order.
    """
    with signals_held():
        olds: list[Path] = []
        for tmp, target in pairs:
            if tmp.is_dir() and not tmp.is_symlink() and target.exists():
                old = Path(tempfile.mkdtemp(prefix=temp_prefix(target), dir=target.parent))
                os.rmdir(old)
                os.replace(target, old)
                olds.append(old)
            os.replace(tmp, target)
        for old in olds:
            shutil.rmtree(old, ignore_errors=True)


_CURRENT: ContextVar[OutputSet | None] = ContextVar("dcplan_output_set", default=None)

#: Set by the command line's SIGINT/SIGTERM handlers: no output set is moved in after it,
#: even where library code swallowed the KeyboardInterrupt the signal raised.
_STOP = threading.Event()


def request_stop() -> None:
    """Make every later :func:`output_set` discard its outputs (a signal arrived)."""
    _STOP.set()


def stop_requested() -> bool:
    """Whether :func:`request_stop` was called in this process."""
    return _STOP.is_set()


def current() -> OutputSet | None:
    """The output set open in this context (None: writers rename at once)."""
    return _CURRENT.get()


def current_stamp() -> RunStamp | None:
    """The :class:`RunStamp` of the open output set, if any."""
    s = _CURRENT.get()
    return s.stamp if s is not None else None


@contextmanager
def output_set(stamp: RunStamp) -> Iterator[OutputSet]:
    """Collect the outputs written inside the block; move them in together at its end.

    On any exception (KeyboardInterrupt and SystemExit included) nothing is moved in
    and every temporary is removed.

    Parameters
    ----------
    stamp : RunStamp
        Written into each output (see the module docstring).
    """
    s = OutputSet(stamp)
    token = _CURRENT.set(s)
    try:
        yield s
    except BaseException:
        _CURRENT.reset(token)
        s.discard()
        raise
    _CURRENT.reset(token)
    if _STOP.is_set():  # interrupted on the way: nothing is moved in
        s.discard()
        raise KeyboardInterrupt
    try:
        s.commit()
    except BaseException:
        s.discard()
        raise


__all__ = ["TMP_TAG", "OutputSet", "RunStamp", "current", "current_stamp", "move_in",
           "output_set", "request_stop", "signals_held", "stop_requested", "temp_prefix"]
