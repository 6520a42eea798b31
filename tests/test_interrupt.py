"""Ctrl-C (SIGINT) and SIGTERM stop a plan at once, the solve included (issue 27, item 2).

Before: a SIGINT while HiGHS ran raised KeyboardInterrupt inside a HiGHS callback, HiGHS
ended with "Solve error", dcplan fell back to CBC for the rest of the time limit, wrote
the outputs and exited 0 with a plan labelled NOT PROVEN OPTIMAL. Now every HiGHS path
(pulp's interface for small models, the scaled bulk driver and the staged large-model
driver), CBC and the stochastic plan stop within seconds: "interrupted" on stderr, exit
130, no fallback, no outputs. A stop at the time limit is still a time limit.

The command-line tests start ``dcplan plan`` as its own process, wait (generously) until
it says it is solving, send the signal and allow 5 s from the signal to the exit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dcplan.planner import build_model, solve
from dcplan.planner import interrupt as interrupt_mod
from dcplan.planner import solver as solver_mod
from dcplan.planner.interrupt import interrupt_requested, interruptible, request_interrupt
from dcplan.planner.solver import SolveStatus
from dcplan.planner.start import rounding_start
from dcplan.scenario import SolverOptions

REPO = Path(__file__).resolve().parent.parent
MINIMAL = REPO / "examples" / "minimal.yaml"

#: Seconds allowed from the signal to the process's exit.
EXIT_S = 5.0
#: Seconds allowed for ``dcplan plan`` to reach its solve (a loaded 2-core machine).
START_S = 180.0


@pytest.fixture(autouse=True)
def _no_pending_interrupt():
    """No test leaves an interrupt pending for the next one."""
    interrupt_mod._INTERRUPT.clear()
    yield
    interrupt_mod._INTERRUPT.clear()


# --- in-process: the solver --------------------------------------------------------------


@pytest.fixture(scope="module")
def minimal_inputs():
    """The minimal example's MILP inputs (its MIP takes HiGHS over 10 s)."""
    from dcplan.case import load_case
    from dcplan.planner import prepare_inputs

    return prepare_inputs(load_case(MINIMAL))


#: path -> (MIP_START_MIN_VARIABLES, mip_start): pulp's HiGHS interface, the scaled bulk
#: driver alone, the staged driver (relaxation, rounding, sub-MIP, MIP) on the bulk one.
PATHS = {"pulp": (10**9, None), "bulk": (0, False), "staged": (0, None)}


def _solve(d, monkeypatch, path: str, **options):
    threshold, mip_start = PATHS[path]
    monkeypatch.setattr(solver_mod, "MIP_START_MIN_VARIABLES", threshold)
    prob, mv = build_model(d)
    opt = SolverOptions(mip_start=mip_start, **options)
    return solve(prob, opt, rounding=rounding_start(d, mv))


def test_a_signal_inside_interruptible_is_raised_when_the_block_ends():
    if not callable(signal.getsignal(signal.SIGINT)):
        pytest.skip("SIGINT is not handled in Python in this process")
    before = signal.getsignal(signal.SIGINT)
    reached = False
    with pytest.raises(KeyboardInterrupt):
        with interruptible():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)  # the handler runs in here: it must not raise
            reached = interrupt_requested()
    assert reached
    assert signal.getsignal(signal.SIGINT) is before
    assert not interrupt_requested()


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.slow
def test_request_interrupt_stops_every_highs_path_without_fallback(minimal_inputs, path,
                                                                   monkeypatch):
    cbc = []
    monkeypatch.setattr(solver_mod, "_cbc", lambda *a, **k: cbc.append(a))
    asked = []

    def later():
        time.sleep(1.0)
        asked.append(time.perf_counter())
        request_interrupt()

    threading.Thread(target=later, daemon=True).start()
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        _solve(minimal_inputs, monkeypatch, path, time_limit_s=120)
    stopped = time.perf_counter()
    assert asked, f"the solve ended after {stopped - t0:.1f} s, before the interrupt"
    assert stopped - asked[0] < 3.0
    assert not cbc
    assert not interrupt_requested()  # consumed: the next solve runs


@pytest.mark.parametrize("path", ["pulp", "staged"])
@pytest.mark.slow
def test_a_time_limit_is_not_an_interrupt(minimal_inputs, path, monkeypatch):
    """The staged driver stops its MIPs on the wall clock through HiGHS's interrupt: that
    stays a time limit (a plan, NOT PROVEN OPTIMAL), never a KeyboardInterrupt."""
    info = _solve(minimal_inputs, monkeypatch, path, time_limit_s=2.5, fallback=False)
    assert info.status in (SolveStatus.FEASIBLE, SolveStatus.NOT_SOLVED, SolveStatus.OPTIMAL)
    if info.status is not SolveStatus.OPTIMAL:
        assert info.time_limit_hit, info


@pytest.mark.slow
def test_a_pending_interrupt_stops_the_next_solve_at_once(minimal_inputs, monkeypatch):
    request_interrupt()
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        _solve(minimal_inputs, monkeypatch, "pulp", time_limit_s=120)
    assert time.perf_counter() - t0 < 2.0


# --- the command line --------------------------------------------------------------------


#: Runs the command line with the large-model drivers forced on (the examples are small).
LARGE = ("import sys; import dcplan.planner.solver as s; s.MIP_START_MIN_VARIABLES = 0; "
         "from dcplan.cli import main; sys.argv[0] = 'dcplan'; main()")


def _run_and_signal(tmp_path: Path, args: list[str], sig: int, *, large: bool = False,
                    wait_for: str = "[plan] solving with", delay: float = 1.0,
                    env: dict | None = None) -> tuple[int, str, float]:
    """Start ``dcplan ARGS``, signal it ``delay`` s after ``wait_for`` shows on stderr.

    Returns
    -------
    (exit code, stderr and stdout, seconds from the signal to the exit)
    """
    err, out = tmp_path / "stderr.txt", tmp_path / "stdout.txt"
    head = ["-c", LARGE] if large else ["-m", "dcplan"]
    with open(err, "w") as ferr, open(out, "w") as fout:
        proc = subprocess.Popen([sys.executable, *head, *args], stdout=fout, stderr=ferr,
                                stdin=subprocess.DEVNULL, cwd=REPO,
                                env={**os.environ, **(env or {})})
    try:
        deadline = time.monotonic() + START_S
        while wait_for not in err.read_text():
            assert proc.poll() is None, f"ended before '{wait_for}': {err.read_text()}"
            assert time.monotonic() < deadline, f"no '{wait_for}' in {START_S} s"
            time.sleep(0.05)
        time.sleep(delay)
        assert proc.poll() is None, f"ended before the signal: {err.read_text()}"
        t0 = time.monotonic()
        proc.send_signal(sig)
        try:
            code = proc.wait(timeout=EXIT_S)
        except subprocess.TimeoutExpired:
            code = None
        waited = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = err.read_text() + out.read_text()
    assert code is not None, f"still running {EXIT_S} s after the signal: {text[-2000:]}"
    return code, text, waited


def _assert_interrupted(code: int, text: str, outdir: Path) -> None:
    assert code == 130, text[-2000:]
    assert text.rstrip().endswith("interrupted"), text[-2000:]
    assert "cbc" not in text.lower(), text[-2000:]
    assert "solver:" not in text and "wrote" not in text, text[-2000:]
    assert not outdir.exists()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.slow
def test_a_signal_during_the_solve_stops_plan(tmp_path, sig):
    """The issue's case: pulp's HiGHS interface (the examples' path), live display on."""
    outdir = tmp_path / "out"
    code, text, waited = _run_and_signal(
        tmp_path, ["plan", str(MINIMAL), "-o", str(outdir), "--time-limit", "120"], sig)
    _assert_interrupted(code, text, outdir)


@pytest.mark.slow
def test_sigint_stops_the_staged_large_model_driver(tmp_path):
    outdir = tmp_path / "out"
    code, text, _ = _run_and_signal(
        tmp_path, ["plan", str(MINIMAL), "-o", str(outdir), "--time-limit", "120"],
        signal.SIGINT, large=True, delay=2.0)
    _assert_interrupted(code, text, outdir)


@pytest.mark.slow
def test_sigint_stops_the_bulk_driver_without_staging(tmp_path):
    scenario = tmp_path / "bulk.yaml"
    scenario.write_text(f"extends: {MINIMAL}\nsolver: {{mip_start: false}}\n",
                        encoding="utf-8")
    outdir = tmp_path / "out"
    code, text, _ = _run_and_signal(
        tmp_path, ["plan", str(scenario), "-o", str(outdir), "--time-limit", "120"],
        signal.SIGINT, large=True, delay=2.0)
    _assert_interrupted(code, text, outdir)


def _processes_mentioning(text: str) -> list[str]:
    """Command lines of running processes that contain ``text`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmd:
            found.append(cmd)
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs Linux /proc")
def test_sigint_stops_cbc_and_its_process(tmp_path):
    """--solver cbc: CBC runs as a child process of pulp's; it is killed and its model and
    solution files removed (its own temporary folder, under TMPDIR)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    outdir = tmp_path / "out"
    code, text, _ = _run_and_signal(
        tmp_path, ["plan", str(MINIMAL), "-o", str(outdir), "--time-limit", "120",
                   "--solver", "cbc"], signal.SIGINT, delay=2.0,
        env={"TMPDIR": str(tmp)})
    assert code == 130, text[-2000:]
    assert text.rstrip().endswith("interrupted") and not outdir.exists(), text[-2000:]
    assert not _processes_mentioning(str(tmp))
    assert not list(tmp.iterdir())


@pytest.mark.slow
def test_sigint_stops_the_stochastic_plan(tmp_path):
    outdir = tmp_path / "out"
    code, text, _ = _run_and_signal(
        tmp_path, ["plan", str(REPO / "examples" / "stochastic.yaml"), "-o", str(outdir)],
        signal.SIGINT, wait_for="[plan] model:", delay=2.0)
    _assert_interrupted(code, text, outdir)


@pytest.mark.slow
def test_an_interrupted_plan_leaves_the_earlier_outputs_as_they_were(tmp_path):
    outdir = tmp_path / "out"
    args = ["plan", str(MINIMAL), "-o", str(outdir), "--time-limit", "120", "-q"]
    first = subprocess.run([sys.executable, "-m", "dcplan", *args], cwd=REPO,
                           capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-2000:]
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in outdir.rglob("*")
              if p.is_file()}
    assert before
    code, text, _ = _run_and_signal(tmp_path, args[:-1], signal.SIGINT)
    assert code == 130, text[-2000:]
    after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in outdir.rglob("*")
             if p.is_file()}
    assert after == before
    # no temporary folder of the interrupted run beside it
    assert {p.name for p in tmp_path.iterdir()} == {"out", "stderr.txt", "stdout.txt"}


#: Sends ``SIG`` to its own process when the command line's imports reach typer, then
#: runs the console script's entry point: a signal exactly while the command line loads.
_SIGNAL_DURING_IMPORT = """
import os, sys
class Trap:
    def find_spec(self, name, path=None, target=None):
        if name == "typer":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), SIG)
        return None
sys.meta_path.insert(0, Trap())
sys.argv = ["dcplan", "plan", MINIMAL, "-q", "-o", OUT]
from dcplan.__main__ import main
main()
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.slow
def test_a_signal_while_the_command_line_loads_stops_it_cleanly(tmp_path, sig):
    """Before the CLI is loaded (imports take about a second) a Ctrl-C printed a Python
    traceback, SIGTERM killed the process by the signal, and once a SIGINT was swallowed
    and the plan written. Now: "interrupted", exit 130, nothing written."""
    out = tmp_path / "out"
    code = (f"SIG = {int(sig)}\nMINIMAL = {str(MINIMAL)!r}\nOUT = {str(out)!r}\n"
            + _SIGNAL_DURING_IMPORT)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 130, done.stderr
    assert "interrupted" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()
