"""Running a sweep on a Dask cluster, writing each sample's row as it arrives.

:func:`prepare_sweep` checks a sweep against its base case and draws the design (no
solve); :func:`run_sweep` plans the base case here (sample 0, the reference), starts a
:class:`distributed.LocalCluster` (one single-threaded worker process per core) or
connects to a scheduler, sends the case to every worker once (``scatter``), submits one
task per sample and writes ``samples.csv`` and ``fleet.csv`` as results stream back
(:func:`distributed.as_completed`). A failed sample is a row with its status; Ctrl-C
cancels what is left and keeps what is done; ``resume=True`` skips the samples a
folder already holds.

Folder layout (``DIR``):

``manifest.json``
    The sweep (spec, design digest, base-case digest, state, workers, timings).
``design.csv``
    Every sample's parameter values (and unit coordinates), whether solved or not.
``samples.csv``
    One row per solved sample: id, parameters, weight, status, message, the outputs,
    ``objective_usd``, ``peak_mw.<site>`` [MW], ``racks_bought.<rack>`` [racks],
    ``worker``, ``solve_s`` and ``cpu_s`` (wall and CPU time of the sample) [s].
    Sample 0 is the base case.
``fleet.csv``
    Racks in service and bought per sample, period and rack type (all sites).
``facility_tables/``
    Facility coefficient tables shared by the workers of this machine (see
    :mod:`dcplan.sweep.memo`).
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import hashlib
import json
import logging
import math
import os
import time
import uuid
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dcplan.errors import InputError, Problem
from dcplan.sweep.apply import check_against_case
from dcplan.sweep.design import Design, extremes, make_design, runs_for
from dcplan.sweep.spec import DEFAULT_OUTPUTS, SweepSpec, samples_problems
from dcplan.sweep.task import plan_sample, run_sample
from dcplan.tableio import csv_safe, write_csv
from dcplan.yamlio import write_text_atomic

MANIFEST = "manifest.json"
DESIGN_FILE = "design.csv"
SAMPLES_FILE = "samples.csv"
FLEET_FILE = "fleet.csv"
TABLES_DIR = "facility_tables"
#: Marker of a sweep folder's manifest.
RESULT_KIND = "dcplan_sweep_result"
#: Manifest format.
FORMAT = 1
#: Seconds to wait for a scheduler and for its first worker.
CONNECT_TIMEOUT_S = 30

log = logging.getLogger(__name__)

FLEET_COLUMNS = ["sample_id", "period", "rack", "installed_racks", "new_racks"]
#: Default time limit of each sample: this many times the base plan's own solve time
#: (wall time of sample 0, planned first on this machine) ...
SAMPLE_TIME_LIMIT_FACTOR = 5.0
#: ... and never less than this [s] (a base plan of a second leaves room for the samples
#: whose values make a harder MILP, and for a busy machine).
MIN_SAMPLE_TIME_LIMIT_S = 30.0


def sample_time_limit(base_solve_s: float) -> float:
    """Default time limit of each sample [s], scaled from the base plan's solve time.

    ``max(MIN_SAMPLE_TIME_LIMIT_S, SAMPLE_TIME_LIMIT_FACTOR * base_solve_s)``: 30 s for
    a base plan of up to 6 s, five times the base plan's time above.

    Parameters
    ----------
    base_solve_s : float
        Wall time of the base plan (sample 0) [s].
    """
    return max(MIN_SAMPLE_TIME_LIMIT_S, SAMPLE_TIME_LIMIT_FACTOR * float(base_solve_s))


def eta_s(sample_s: list[float], left: int, running_s: list[float]) -> float:
    """Seconds until a sweep is done, from the sample times so far [s].

    Every sample still to come is assumed to take the median ``m`` of ``sample_s``. A
    sample running for ``e`` seconds needs ``m - e`` more, or another ``m`` once it has
    run longer than the median (its time is unknown then, and "0 s" would be wrong).
    The samples not started yet go, one at a time, to the worker free first; the answer
    is when the last worker is done, so it is never below a running sample's estimate.

    Parameters
    ----------
    sample_s : list of float
        Wall times of the samples done so far [s]; empty: no estimate (0).
    left : int
        Samples not done yet, the running ones included.
    running_s : list of float
        How long each worker has been on its current sample [s]; its length is the
        number of workers in use. With fewer samples left than workers, the ones
        running longest are taken as the ones still running.

    Returns
    -------
    float
        [s]; 0 when nothing is left or no sample has finished yet.

    Examples
    --------
    Median 20 s; two workers 5 s and 25 s into their samples (15 s and 20 s to go),
    two more samples queued: they end at 15 + 20 and 20 + 20 s.

    >>> eta_s([10, 20, 30], 4, [5, 25])
    40.0
    """
    if left <= 0 or not sample_s or not running_s:
        return 0.0
    import heapq
    import statistics

    m = float(statistics.median(sample_s))
    running = sorted(running_s, reverse=True)[:left]
    free = [m - e if e < m else m for e in running]
    free += [0.0] * (len(running_s) - len(running))  # idle workers
    heapq.heapify(free)
    for _ in range(left - len(running)):
        heapq.heappush(free, heapq.heappop(free) + m)
    return float(max(free))


@dataclass
class SweepPlan:
    """A checked sweep, ready to run.

    Attributes
    ----------
    spec : SweepSpec
    case : Case
        The base case.
    design : Design
    outputs : list of str
        KPIs collected (the spec's, with NPV and USD per million tokens first).
    sites, racks : list of str
        Of the base case (columns ``peak_mw.<site>`` and ``racks_bought.<rack>``).
    """

    spec: SweepSpec
    case: Any
    design: Design
    outputs: list[str]
    sites: list[str]
    racks: list[str]

    @property
    def columns(self) -> list[str]:
        """Columns of ``samples.csv``."""
        return (["sample_id", *self.design.names, "weight", "block", "status", "message",
                 *self.outputs, "objective_usd"]
                + [f"peak_mw.{s}" for s in self.sites]
                + [f"racks_bought.{r}" for r in self.racks] + ["worker", "solve_s", "cpu_s"])

    def units(self) -> dict[str, str]:
        """Units of the numeric columns (for rounding when written)."""
        out = {"weight": "-", "objective_usd": "USD (present value, with unserved penalty)",
               "solve_s": "s", "cpu_s": "s"}
        out.update({f"peak_mw.{s}": "MW" for s in self.sites})
        out.update({f"racks_bought.{r}": "racks" for r in self.racks})
        out.update({o: ("USD" if o.endswith("_usd") else "-") for o in self.outputs})
        return out


def prepare_sweep(spec: SweepSpec, case: Any, samples: int | None = None) -> SweepPlan:
    """Check ``spec`` against its base case and draw the design; nothing is solved.

    Parameters
    ----------
    spec : SweepSpec
    case : Case
        The base case (:func:`dcplan.case.load_case` of ``spec.base_path()``).
    samples : int, optional
        Replaces the file's sample count (command line ``--samples``).

    Raises
    ------
    InputError
        Every problem at once: a count the method cannot use, and each parameter whose
        extreme values the case refuses (unknown path, id or field, a value out of its
        range).
    """
    problems: list[Problem] = []
    if samples is not None:
        problems += samples_problems(spec, samples, "--samples")
    problems += check_against_case(spec, case, {p.name: extremes(p) for p in spec.parameters})
    if problems:
        raise InputError(problems)
    design = make_design(spec, samples)
    if design.size == 0:
        raise InputError(Problem("--samples" if samples is not None else spec.file,
                                 f"{samples or spec.samples} samples make no complete "
                                 f"{spec.method} design; give more"))
    outputs = list(dict.fromkeys([*DEFAULT_OUTPUTS, *spec.outputs]))
    racks = list(case.scenario.racks or case.catalog.entries.get("racks", {}))
    return SweepPlan(spec, case, design, outputs, list(case.scenario.sites), racks)


def base_values(plan: SweepPlan) -> dict[str, Any]:
    """Parameter values that leave the base case unchanged (the row of sample 0)."""
    from dcplan.sweep.apply import _get_path

    out: dict[str, Any] = {}
    data = None
    for p in plan.spec.parameters:
        if p.op in ("scale", "grow"):
            out[p.name] = 1.0
        elif p.op in ("add", "delay"):
            out[p.name] = 0
        elif p.path:
            data = data if data is not None else plan.case.scenario.model_dump()
            with contextlib.suppress(KeyError):
                v = _get_path(data, p.path)
                out[p.name] = v if isinstance(v, int | float | str | bool) else None
        elif p.override:
            o = p.override
            src = plan.case.sites.get(o.id) if o.kind == "sites" else \
                plan.case.catalog.entries.get(o.kind, {}).get(o.id)
            v = getattr(src, o.field, None)
            out[p.name] = v if isinstance(v, int | float | str | bool) else None
        elif p.calibration or p.calibration_file:
            out[p.name] = None
    return out


@dataclass
class SweepOutcome:
    """What :func:`run_sweep` did.

    Attributes
    ----------
    folder : Path
    total : int
        Samples of the design (sample 0, the base case, not counted).
    done : int
        Samples in the folder now.
    skipped : int
        Samples already in the folder when resumed.
    statuses : Counter
        Status -> samples (of those in the folder).
    workers : list of str
        Dask workers that solved samples in this run.
    interrupted : bool
        Stopped by Ctrl-C (what was done is saved; ``resume`` continues).
    elapsed_s : float
        Wall time of this run [s].
    cpu_s : float
        CPU time the workers spent on this run's samples [s].
    startup_s : float
        Wall time before the first sample could start: the base plan, the cluster and
        sending the case [s].
    facility_tables : dict
        Facility tables computed and reused (memory and disk) by the samples.
    cluster : str
        ``local, N workers`` or the scheduler's address.
    time_limit_s : float or None
        Time limit of each sample's solve in this run [s].
    time_limit_rule : str
        Where it came from: ``--time-limit``, the sweep file, or the default rule of
        :func:`sample_time_limit` with the base plan's time.
    gap : float or None
        Relative MIP gap of each sample [-]; None: the base scenario's.
    """

    folder: Path
    total: int
    done: int
    skipped: int
    statuses: Counter
    workers: list[str]
    interrupted: bool
    elapsed_s: float
    facility_tables: dict[str, int] = field(default_factory=dict)
    cluster: str = ""
    cpu_s: float = 0.0
    startup_s: float = 0.0
    time_limit_s: float | None = None
    time_limit_rule: str = ""
    gap: float | None = None

    @property
    def solved(self) -> int:
        """Samples the statistics use (statuses in :data:`dcplan.sweep.task.SOLVED`)."""
        from dcplan.sweep.task import SOLVED

        return sum(v for k, v in self.statuses.items() if k in SOLVED)


# --- the folder ------------------------------------------------------------------------


def _manifest(plan: SweepPlan) -> dict[str, Any]:
    from dcplan import __version__
    from dcplan.errors import display_path

    spec = plan.spec
    return {
        "kind": RESULT_KIND, "format": FORMAT, "dcplan_version": __version__,
        "name": spec.name, "description": spec.description, "sweep_file": spec.file,
        "spec": spec.model_dump(mode="json"),
        "base_scenario": display_path(spec.base_path()),
        "scenario_name": plan.case.name, "case_digest": plan.case.digest,
        "method": spec.method, "seed": spec.seed, "levels": plan.design.levels,
        "requested": plan.design.requested, "samples": plan.design.size,
        "design_digest": plan.design.digest(),
        "calibrations_digest": calibrations_digest(spec),
        "parameters": [{"name": p.name, "title": p.title, "label": p.label or p.name,
                        "unit": p.unit or "", "target": p.describe(),
                        "distribution": p.distribution or "grid"}
                       for p in spec.parameters],
        "outputs": plan.outputs, "sites": plan.sites, "racks": plan.racks,
        "periods": [p.label for p in plan.case.scenario.period_list()],
    }


def _now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()


def is_sweep_folder(folder: Path | str) -> bool:
    """Whether ``folder`` holds a sweep (a ``manifest.json`` of ``dcplan sweep``)."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return False
    try:
        return json.loads(path.read_text()).get("kind") == RESULT_KIND
    except (OSError, ValueError, AttributeError):
        return False


def read_manifest(folder: Path) -> dict[str, Any]:
    """The manifest of a sweep folder.

    Raises
    ------
    InputError
        When the folder holds no sweep or an unreadable manifest.
    """
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise InputError(Problem(str(folder), f"not a sweep folder (no {MANIFEST}); give the "
                                              "-o folder of a 'dcplan sweep' run"))
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(Problem(str(path), f"unreadable ({exc}); run the sweep again "
                                            "into a new folder")) from None
    if not isinstance(data, dict) or data.get("kind") != RESULT_KIND:
        raise InputError(Problem(str(path), "not a dcplan sweep manifest"))
    return data


def calibrations_digest(spec: SweepSpec) -> str | None:
    """SHA-256 of the fitted values of the sweep's calibration files (None: it has none)."""
    if not spec.calibrations:
        return None
    data = sorted((name, repr(cal.key)) for name, cal in spec.calibrations.items())
    return hashlib.sha256(json.dumps(data).encode()).hexdigest()


def _check_resume(plan: SweepPlan, folder: Path, resume: bool) -> dict[str, Any] | None:
    """The folder's manifest when resuming the same sweep; refuse anything else."""
    taken = (folder / MANIFEST).exists() or (folder / SAMPLES_FILE).exists()
    if not taken:
        return None
    if not resume:
        raise InputError(Problem(str(folder), "already holds a sweep; add --resume to "
                                              "continue it, or choose another -o folder"))
    old = read_manifest(folder)
    new = _manifest(plan)
    why = [what for key, what in (("design_digest", "the samples (parameters, method, "
                                   "seed or count)"),
                                  ("case_digest", "the base scenario, catalogs or sites"),
                                  ("calibrations_digest", "the calibration files"))
           if old.get(key) != new[key]]
    if why:
        raise InputError(Problem(str(folder), f"holds another sweep: {' and '.join(why)} "
                                              "changed since it was started; run into a new "
                                              "-o folder (or delete this one)"))
    return old


def read_samples_csv(path: Path, columns: list[str] | None = None) -> pd.DataFrame:
    """Rows of a (possibly interrupted) ``samples.csv``; a torn last line is dropped."""
    if not path.is_file():
        return pd.DataFrame(columns=columns or ["sample_id"])
    with path.open(newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            return pd.DataFrame(columns=columns or ["sample_id"])
        rows = [r for r in reader if len(r) == len(header)]
    df = pd.DataFrame(rows, columns=header)
    df["sample_id"] = pd.to_numeric(df["sample_id"], errors="coerce")
    df = df[df.sample_id.notna()].copy()
    df["sample_id"] = df.sample_id.astype(int)
    for col in df.columns:
        if col in ("status", "message", "worker"):
            continue
        conv = pd.to_numeric(df[col].replace("", None), errors="coerce")
        if conv.notna().sum() == (df[col] != "").sum():
            df[col] = conv
    return df.drop_duplicates("sample_id", keep="last")


class _Writer:
    """Appends rows to ``samples.csv`` and ``fleet.csv`` as samples arrive."""

    def __init__(self, folder: Path, columns: list[str]):
        self.columns = columns
        self.samples = folder / SAMPLES_FILE
        self.fleet = folder / FLEET_FILE
        new = not self.samples.exists()
        self._s = self.samples.open("a", newline="")
        self._f = self.fleet.open("a", newline="")
        self._sw = csv.writer(self._s)
        self._fw = csv.writer(self._f)
        if new:
            self._sw.writerow(columns)
        if self.fleet.stat().st_size == 0:
            self._fw.writerow(FLEET_COLUMNS)

    @staticmethod
    def _cell(v: Any) -> Any:
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            return ""
        if isinstance(v, float):
            return repr(v)
        if isinstance(v, str):
            return csv_safe(v.replace("\n", " ")[:500])
        return v

    def write(self, row: dict[str, Any], fleet: list[dict[str, Any]]) -> None:
        # the fleet first: a row in samples.csv means its fleet is complete
        for f in fleet:
            self._fw.writerow([self._cell(row["sample_id"])]
                              + [self._cell(f.get(c)) for c in FLEET_COLUMNS[1:]])
        self._f.flush()
        self._sw.writerow([self._cell(row.get(c)) for c in self.columns])
        self._s.flush()

    def close(self) -> None:
        self._s.close()
        self._f.close()


def _finish_files(folder: Path, plan: SweepPlan) -> pd.DataFrame:
    """Rewrite ``samples.csv`` and ``fleet.csv`` sorted by sample, atomically, rounded."""
    df = read_samples_csv(folder / SAMPLES_FILE, plan.columns)
    df = df.reindex(columns=plan.columns).sort_values("sample_id").reset_index(drop=True)
    df.attrs["units"] = plan.units()
    fleet_path = folder / FLEET_FILE
    fleet = pd.read_csv(fleet_path) if fleet_path.is_file() and fleet_path.stat().st_size \
        else pd.DataFrame(columns=FLEET_COLUMNS)
    fleet = fleet[fleet.sample_id.isin(set(df.sample_id))]
    fleet = fleet.drop_duplicates(["sample_id", "period", "rack"], keep="last")
    fleet = fleet.sort_values(["sample_id", "period", "rack"]).reset_index(drop=True)
    fleet.attrs["units"] = {"installed_racks": "racks", "new_racks": "racks"}
    write_csv(fleet, fleet_path)
    write_csv(df, folder / SAMPLES_FILE)
    return df


def _design_table(plan: SweepPlan) -> pd.DataFrame:
    d = plan.design
    rows = []
    for sid, vals, u, w, b in zip(d.ids, d.values, d.unit, d.weights, d.blocks, strict=True):
        row = {"sample_id": sid, **vals, "weight": float(w), "block": int(b)}
        row.update({f"u.{n}": float(x) for n, x in zip(d.names, u, strict=True)})
        rows.append(row)
    return pd.DataFrame(rows)


# --- running ---------------------------------------------------------------------------


def _connect(workers: int | None, scheduler: str | None) -> tuple[Any, Any, str]:
    """A Dask client (and the local cluster it owns, if any)."""
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            client = Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S}s")
        except (OSError, TimeoutError) as exc:
            raise InputError(Problem("--scheduler", f"cannot reach the Dask scheduler at "
                                                    f"{scheduler} ({exc}); start one with "
                                                    "'dask scheduler' and workers with "
                                                    "'dask worker ADDRESS --nthreads 1'")
                             ) from None
        try:
            client.wait_for_workers(1, timeout=CONNECT_TIMEOUT_S)
        except TimeoutError:
            client.close()
            raise InputError(Problem("--scheduler", f"the scheduler at {scheduler} has no "
                                                    f"workers after {CONNECT_TIMEOUT_S} s; "
                                                    "start some with 'dask worker "
                                                    f"{scheduler} --nthreads 1'")) from None
        return client, None, scheduler
    n = workers or os.cpu_count() or 1
    # A terminal's Ctrl-C goes to the whole process group: worker processes that got it
    # too died with their own tracebacks while this process was stopping the sweep.
    # Started with SIGINT ignored (inherited through spawn), they leave the interrupt to
    # this process, which cancels their tasks and closes the cluster.
    previous = _ignore_interrupt()
    try:
        # the scheduler's HTTP server (dashboard or not) takes a free port: on the
        # default 8787, taken by another cluster, distributed warned on the terminal;
        # any other warning of distributed's start goes to the log, not the terminal
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                   dashboard_address=":0", silence_logs=logging.CRITICAL)
        for w in caught:
            log.info("distributed: %s", w.message)
    finally:
        _restore_signal("SIGINT", previous)
    return Client(cluster), cluster, f"local, {n} worker{'s' * (n != 1)}"


def _ignore_interrupt():
    """Ignore SIGINT (main thread only); the previous handler, or None."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, signal.SIG_IGN)


def _term_as_interrupt():
    """Make SIGTERM raise KeyboardInterrupt (main thread only); the previous handler."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(_signum, _frame):
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, handler)


def _restore_signal(name: str, previous) -> None:
    """Put back the handler of signal ``name`` that :func:`signal.signal` returned."""
    import signal

    if previous is not None:
        signal.signal(getattr(signal, name), previous)


def run_sweep(plan: SweepPlan, folder: Path | str, *, workers: int | None = None,
              scheduler: str | None = None, resume: bool = False,
              progress: Callable[[int, int, dict[str, Any]], None] | None = None,
              on_start: Callable[..., None] | None = None,
              reuse_tables: bool = True, time_limit_s: float | None = None,
              gap: float | None = None) -> SweepOutcome:
    """Solve every sample of ``plan`` on a Dask cluster, writing rows as they arrive.

    Parameters
    ----------
    plan : SweepPlan
        From :func:`prepare_sweep`.
    folder : path
        Output folder (created). See the module docstring for its files.
    workers : int, optional
        Worker processes of the local cluster (default: one per core); ignored with
        ``scheduler``.
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:8786``); its workers must
        have dcplan installed.
    resume : bool
        Continue a sweep the folder holds: samples already there are skipped (those
        that failed with ``error`` are run again).
    progress : callable, optional
        ``progress(done, total, row)`` after each sample.
    on_start : callable, optional
        ``on_start(to_do, total, cluster, workers, time_limit_s)`` once the cluster is
        up (``workers``: worker threads of the cluster; ``time_limit_s`` of a sample [s]).
    reuse_tables : bool
        Reuse facility tables across samples (:mod:`dcplan.sweep.memo`); False makes
        every sample compute its own (to measure what the reuse saves).
    time_limit_s : float, optional
        Time limit of each sample's solve [s] (``--time-limit``); replaces the sweep
        file's ``solver.time_limit_s``. Without either: :func:`sample_time_limit` of the
        base plan's wall time (the base plan itself gets the base scenario's limit).
    gap : float, optional
        Relative MIP gap of each sample (``--gap``); replaces the sweep file's
        ``solver.gap``; without either, the base scenario's.

    Returns
    -------
    SweepOutcome

    Raises
    ------
    InputError
        For a folder holding another sweep (or any sweep, without ``resume``), an
        output that is not a KPI, or a scheduler that cannot be reached.
    """
    from distributed import as_completed

    t0 = time.perf_counter()
    folder = Path(folder)
    old = _check_resume(plan, folder, resume)
    done = read_samples_csv(folder / SAMPLES_FILE) if old else pd.DataFrame(
        columns=["sample_id"])
    if len(done) and "status" in done:
        done = done[done.status != "error"]
    done_ids = set(int(i) for i in done.sample_id)
    memo_dir = folder / TABLES_DIR
    limit, rule = _explicit_limit(plan, time_limit_s)
    options = {"outputs": plan.outputs, "time_limit_s": limit,
               "gap": gap if gap is not None else plan.spec.solver.gap,
               "memo_dir": str(memo_dir.resolve()), "memo": reuse_tables}

    # a remote scheduler is reached before anything is solved or written: a wrong address
    # fails at once and leaves no folder behind
    early = _connect(workers, scheduler) if scheduler else None
    base_row = None
    if 0 not in done_ids:
        try:
            base_row = _base_row(plan, options)
        except BaseException:
            if early is not None:
                with contextlib.suppress(Exception):
                    early[0].close(timeout=10)
            raise
    if limit is None:  # the default: scaled from the base plan's own time
        base_s = base_row[0]["solve_s"] if base_row is not None else _base_time(done)
        if base_s is not None:
            options["time_limit_s"] = sample_time_limit(base_s)
            rule = (f"max({MIN_SAMPLE_TIME_LIMIT_S:g} s, {SAMPLE_TIME_LIMIT_FACTOR:g} x the "
                    f"base plan's {base_s:,.1f} s)")
        else:
            rule = "the base scenario's solver.time_limit_s"
    folder.mkdir(parents=True, exist_ok=True)
    memo_dir.mkdir(exist_ok=True)
    # a resumed sweep keeps when it was created and the record of every earlier run
    manifest = {**_manifest(plan), **({k: old[k] for k in ("created", "runs") if k in old}
                                      if old else {})}
    manifest.setdefault("created", _now())
    manifest.update(state="running", updated=_now(),
                    solver={"time_limit_s": options["time_limit_s"], "time_limit_rule": rule,
                            "gap": options["gap"]})
    write_text_atomic(folder / MANIFEST, json.dumps(manifest, indent=2, default=str))
    write_csv(_design_table(plan), folder / DESIGN_FILE)
    if old:  # rows of the same sample written twice (an error run again) keep the last
        _finish_files(folder, plan)
    writer = _Writer(folder, plan.columns)
    design = plan.design
    todo = [(sid, v, w, b) for sid, v, w, b in zip(design.ids, design.values, design.weights,
                                                   design.blocks, strict=True)
            if sid not in done_ids]
    skipped = len(done_ids - {0})
    workers_seen: Counter = Counter()
    tables = Counter()
    interrupted = False
    cluster_text = ""
    count = skipped
    cpu = 0.0
    startup = 0.0
    # a termination signal (``timeout``, a batch system's kill) stops the sweep as Ctrl-C
    # does: the samples done are kept and the folder says "interrupted"
    previous_term = _term_as_interrupt()
    try:
        if base_row is not None:
            writer.write(*base_row)
        client = cluster = None
        try:
            if early is not None and not todo:
                client = early[0]  # nothing left to run: closed below
            if todo:
                # no more local workers than samples left: each is a process of its own
                local = min(workers or os.cpu_count() or 1, len(todo))
                client, cluster, cluster_text = early or _connect(local, scheduler)
                if on_start:
                    on_start(len(todo), design.size, cluster_text,
                             _threads(client, local, scheduler), options["time_limit_s"])
                case_f = client.scatter(plan.case, broadcast=True, hash=False)
                spec_f = client.scatter(plan.spec, broadcast=True, hash=False)
                startup = time.perf_counter() - t0
                # one key per run: two sweeps on one shared cluster never share a task
                tag = uuid.uuid4().hex[:12]
                meta = {}
                futures = []
                for sid, values, w, b in todo:
                    fut = client.submit(run_sample, case_f, spec_f, sid, values, options,
                                        key=f"dcplan-sample-{tag}-{sid}", pure=False)
                    meta[fut.key] = (sid, values, w, b)
                    futures.append(fut)
                pending = as_completed(futures)
                try:
                    for fut in pending:
                        sid, values, w, b = meta[fut.key]
                        try:
                            out = fut.result()
                            row, fleet = out["row"], out["fleet"]
                            tables.update(out.get("memo", {}))
                        except Exception as exc:  # noqa: BLE001 - lost worker, cancelled task
                            row = {"status": "error", "worker": "",
                                   "message": f"{type(exc).__name__}: {exc}"}
                            fleet = []
                        row.update({"sample_id": sid, **values, "weight": float(w),
                                    "block": int(b)})
                        writer.write(row, fleet)
                        cpu += float(row.get("cpu_s") or 0.0)
                        if row.get("worker"):
                            workers_seen[row["worker"]] += 1
                        count += 1
                        if progress:
                            progress(count, design.size, row)
                except KeyboardInterrupt:
                    interrupted = True
                    with contextlib.suppress(Exception):
                        client.cancel([f for f in futures if not f.done()])
        finally:
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close(timeout=10)
            if cluster is not None:
                with contextlib.suppress(Exception):
                    cluster.close(timeout=10)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        writer.close()
        df = _finish_files(folder, plan)
        elapsed = time.perf_counter() - t0
        statuses = Counter(df.loc[df.sample_id > 0, "status"]) if len(df) else Counter()
        n_done = int((df.sample_id > 0).sum()) if len(df) else 0
        complete = n_done >= design.size and not interrupted
        runs = list(manifest.get("runs", []))
        runs.append({"started": manifest["updated"], "finished": _now(),
                     "elapsed_s": round(elapsed, 3), "solved": count - skipped,
                     "cpu_s": round(cpu, 3), "startup_s": round(startup, 3),
                     "cluster": cluster_text, "workers": dict(workers_seen),
                     "time_limit_s": options["time_limit_s"], "time_limit_rule": rule,
                     "gap": options["gap"],
                     "facility_tables": dict(tables), "interrupted": interrupted})
        manifest.update(state="complete" if complete else ("interrupted" if interrupted
                                                           else "partial"),
                        updated=_now(), done=n_done, runs=runs)
        write_text_atomic(folder / MANIFEST, json.dumps(manifest, indent=2, default=str))
        _restore_signal("SIGTERM", previous_term)
    return SweepOutcome(folder, design.size, n_done, skipped, statuses, sorted(workers_seen),
                        interrupted, elapsed, dict(tables), cluster_text, cpu, startup,
                        options["time_limit_s"], rule, options["gap"])


def _explicit_limit(plan: SweepPlan, time_limit_s: float | None
                    ) -> tuple[float | None, str]:
    """The per-sample time limit given (command line, then sweep file) and its source."""
    if time_limit_s is not None:
        return float(time_limit_s), "--time-limit"
    if plan.spec.solver.time_limit_s is not None:
        from dcplan.errors import display_path

        return float(plan.spec.solver.time_limit_s), \
            f"solver.time_limit_s of {display_path(plan.spec.file)}"
    return None, ""


def _base_time(done: pd.DataFrame) -> float | None:
    """Wall time of the base plan (sample 0) of a resumed folder [s], if recorded."""
    if not len(done) or "solve_s" not in done:
        return None
    v = pd.to_numeric(done.loc[done.sample_id == 0, "solve_s"], errors="coerce").dropna()
    return float(v.iloc[0]) if len(v) else None


def _threads(client: Any, local: int, scheduler: str | None) -> int:
    """Worker threads of the cluster (samples that run at once)."""
    if not scheduler:
        return local
    try:
        return max(1, sum(int(w.get("nthreads", 1))
                          for w in client.scheduler_info()["workers"].values()))
    except Exception:  # noqa: BLE001 - an estimate for the progress bar only
        return 1


def _base_row(plan: SweepPlan, options: dict[str, Any]
              ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Plan the base case here (sample 0) and check the outputs are KPIs of its plan."""
    from dcplan.planner import solve_case
    from dcplan.planner.inputs import FACILITY_MEMO
    from dcplan.sweep.memo import FacilityMemo
    from dcplan.sweep.task import result_row

    token = FACILITY_MEMO.set(FacilityMemo())
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        result = solve_case(plan.case, threads=1, explain=False, size=False,
                           time_limit_s=options["time_limit_s"], gap=options["gap"])
    finally:
        FACILITY_MEMO.reset(token)
    kpis = result.tables.get("kpis")
    if kpis is not None:
        known = list(kpis.kpi)
        spec = plan.spec
        bad = [o for o in plan.outputs if o not in known]
        if bad:
            from dcplan.catalog import suggest

            raise InputError([Problem(spec.file, f"'{o}' is not a KPI of a plan"
                                      f"{suggest(o, known) or '; known: ' + ', '.join(known)}",
                                      field="outputs", line=spec.line("outputs"))
                              for o in bad])
    row, fleet = result_row(result, plan.outputs)
    row.update({"sample_id": 0, **base_values(plan), "weight": 0.0, "block": -1,
                "worker": "local (base case)", "solve_s": time.perf_counter() - t0,
                "cpu_s": time.process_time() - c0})
    if not row.get("message"):
        row["message"] = "base case (no parameter changed)"
    return row, fleet


__all__ = ["DESIGN_FILE", "FLEET_FILE", "MANIFEST", "MIN_SAMPLE_TIME_LIMIT_S",
           "SAMPLES_FILE", "SAMPLE_TIME_LIMIT_FACTOR", "SweepOutcome", "SweepPlan", "eta_s",
           "is_sweep_folder", "plan_sample", "prepare_sweep", "read_manifest",
           "read_samples_csv", "run_sweep", "runs_for", "sample_time_limit"]
