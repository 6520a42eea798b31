"""Sweeps on the real engine: a Dask scheduler and two workers started here, on 127.0.0.1.

``dcplan sweep ... --scheduler tcp://127.0.0.1:PORT`` must solve every sample and use
both workers; a local cluster run stopped by Ctrl-C (SIGINT) keeps what is done and
``--resume`` finishes it. Processes are stopped by their process ids.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
SHIPPED_SWEEP = REPO / "examples" / "sweeps" / "minimal_lhs.yaml"
#: Longest wait for the cluster to come up, and for one command [s].
START_S = 90
COMMAND_S = 420


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dcplan(*args: str, timeout: float = COMMAND_S, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dcplan", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=REPO, **kw)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory, minimal_linear) -> Path:
    """The shipped minimal_lhs sweep over the minimal example with the linear fabric
    (``minimal_linear``: a sample solves in about a second instead of about ten; these
    tests are about the cluster, Ctrl-C and resuming, not the fabric)."""
    text = SHIPPED_SWEEP.read_text(encoding="utf-8")
    assert "\nbase: ../minimal.yaml\n" in text
    path = tmp_path_factory.mktemp("sweep") / "minimal_lhs.yaml"
    path.write_text(text.replace("\nbase: ../minimal.yaml\n", f"\nbase: {minimal_linear}\n"),
                    encoding="utf-8")
    return path


@pytest.fixture
def cluster(tmp_path):
    """``(address, [worker addresses])`` of a scheduler and two single-threaded workers."""
    from distributed import Client

    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    logs = tmp_path / "logs"
    logs.mkdir()
    procs = []

    def start(name: str, *args: str) -> subprocess.Popen:
        log = (logs / f"{name}.log").open("w")
        p = subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=log,
                             stderr=subprocess.STDOUT, cwd=tmp_path)
        procs.append(p)
        return p

    try:
        start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", str(port),
              "--no-dashboard")
        for name in ("w1", "w2"):
            start(name, "worker", address, "--nthreads", "1", "--nworkers", "1",
                  "--host", "127.0.0.1", "--no-dashboard", "--name", name)
        deadline = time.monotonic() + START_S
        client = None
        while client is None:
            try:
                client = Client(address, timeout="5s")
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        try:
            client.wait_for_workers(2, timeout=START_S)
            workers = sorted(client.scheduler_info()["workers"])
        finally:
            client.close()
        yield address, workers
    finally:
        for p in reversed(procs):
            stop(p)


def test_sweep_on_a_running_scheduler_uses_both_workers(cluster, tmp_path, sweep_file):
    address, workers = cluster
    assert len(workers) == 2
    out = tmp_path / "sweep"
    done = dcplan("sweep", str(sweep_file), "--samples", "8", "--scheduler", address, "-o",
                  str(out), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["state"] == "complete" and report["done"] == 8
    assert sorted(report["workers"]) == workers
    df = pd.read_csv(out / "samples.csv")
    runs = df[df.sample_id > 0]
    assert sorted(runs.sample_id) == list(range(1, 9))
    assert runs.status.isin(["optimal", "unserved"]).all(), runs[["status", "message"]]
    assert runs.npv_cost_usd.notna().all() and (runs.npv_cost_usd > 0).all()
    assert set(runs.worker) == set(workers)  # both workers took part
    assert df.loc[df.sample_id == 0, "worker"].item() == "local (base case)"
    # each sample's fleet is in fleet.csv, and the racks bought add up to the row's
    fleet = pd.read_csv(out / "fleet.csv")
    bought = fleet.groupby("sample_id").new_racks.sum()
    total = runs.set_index("sample_id").filter(like="racks_bought.").sum(axis=1)
    assert (bought.reindex(total.index) == total).all()
    for name in ("report.html", "sweep.xlsx", "charts/tornado.png", "charts/racks_fan.png"):
        assert (out / name).is_file(), name

    # resuming a complete sweep solves nothing and needs no cluster
    again = dcplan("sweep", str(sweep_file), "--samples", "8", "-o", str(out), "--resume",
                   "--json", "--no-report")
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads(again.stdout)["skipped"] == 8
    shown = dcplan("sweep", "show", str(out))
    assert shown.returncode == 0 and "8 of 8 samples solved" in shown.stdout


def test_a_sample_equals_the_plan_of_its_changed_case(tmp_path, sweep_file):
    """The row of a sample is exactly dcplan's plan of the base case with its values."""
    from dcplan.case import load_case
    from dcplan.planner import solve_case
    from dcplan.sweep.design import make_design
    from dcplan.sweep.spec import load_sweep_spec
    from dcplan.sweep.task import plan_sample

    spec = load_sweep_spec(sweep_file)
    case = load_case(spec.base_path())
    values = make_design(spec, 4).values[2]
    row = plan_sample(case, spec, values, {"outputs": ["npv_cost_usd"], "memo_dir": None})
    grid = dict(case.sites["seoul_metro"].grid_mw)
    step = grid.pop(2028)
    grid[2028 + values["seoul_grid_delay"]] = step
    by_hand = case.with_changes(
        {"demand.growth.chat.annual_growth": values["chat_growth"],
         "demand.growth.coding_agent.annual_growth": values["agent_growth"]},
        overrides=[{"kind": "racks", "id": "rubin_ultra_nvl576", "field": "capex_usd",
                    "scale": values["kyber_capex"]},
                   {"kind": "sites", "id": "seoul_metro", "field": "grid_mw",
                    "set": dict(sorted(grid.items()))},
                   {"kind": "workloads", "id": "coding_agent", "field": "cache_hit_frac",
                    "set": values["agent_cache_hit"]}])
    from dcplan.perf.params import Calibration
    from dcplan.perf.predict import calibration_architecture, hardware_params

    # the shipped calibration with each accelerator's own HBM efficiency scaled
    base = case.calibration or Calibration()
    own = {h: dict(p) for h, p in base.hardware}
    for acc in ("gb200_gpu", "rubin_ultra"):
        entry = case.catalog.get("accelerators", acc)
        arch = calibration_architecture(entry, case.calibration)
        now = hardware_params(case.perf_defaults, acc, case.calibration, entry.vendor,
                              arch).hbm_eff_frac
        own[acc] = {**own.get(acc, {}), "hbm_eff_frac": now * values["hbm_efficiency"]}
    by_hand = by_hand.with_calibration(Calibration.from_dicts(
        own, dict(base.default), physics=dict(base.physics),
        vendor={v: dict(p) for v, p in base.vendor},
        architecture={a: dict(p) for a, p in base.architecture}, software=base.software))
    direct = solve_case(by_hand, threads=1, explain=False, size=False)
    assert row["row"]["status"] == "optimal"
    assert row["row"]["npv_cost_usd"] == pytest.approx(direct.kpi("npv_cost_usd"), rel=1e-9)


def test_ctrl_c_keeps_what_is_done_and_resume_finishes(tmp_path, sweep_file):
    """Ctrl-C as a terminal sends it: SIGINT to the whole process group, workers too.
    12 samples of about a second each, two at a time: after the base case and three,
    most are left (the Ctrl-C follows the third within half a second)."""
    out = tmp_path / "sweep"
    SAMPLES = 12  # noqa: N806
    args = [sys.executable, "-m", "dcplan", "sweep", str(sweep_file), "--samples", str(SAMPLES),
            "--workers", "2", "-o", str(out), "--no-report"]
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + COMMAND_S
        while True:  # wait for the base case and three samples
            path = out / "samples.csv"
            if path.is_file() and len(path.read_text().splitlines()) >= 5:
                break
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        stop(proc)
    assert proc.returncode == 130, err[-3000:]
    assert "--resume" in err
    assert "Traceback" not in err, err[-3000:]
    first = pd.read_csv(out / "samples.csv")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["state"] == "interrupted" and manifest["done"] == (first.sample_id > 0).sum()
    assert first.sample_id.is_unique
    # a sample whose worker the Ctrl-C stopped is an 'error' row, run again on resume
    solved = first[first.status.isin(["optimal", "unserved"])]
    assert 3 <= (solved.sample_id > 0).sum() < SAMPLES
    assert set(first.status) <= {"optimal", "unserved", "error"}
    assert solved.npv_cost_usd.notna().all()

    again = dcplan("sweep", str(sweep_file), "--samples", str(SAMPLES), "--workers", "2",
                   "-o", str(out), "--resume", "--json", "--no-report")
    assert again.returncode == 0, again.stderr[-3000:]
    report = json.loads(again.stdout)
    kept_ids = first.sample_id[(first.sample_id > 0) & (first.status != "error")]
    assert report["skipped"] == len(kept_ids) and report["done"] == SAMPLES
    final = pd.read_csv(out / "samples.csv")
    assert sorted(final.sample_id) == list(range(SAMPLES + 1))
    assert final.status.isin(["optimal", "unserved"]).all()
    # the samples done before the interruption were kept as they were
    before = first.set_index("sample_id").loc[kept_ids, "npv_cost_usd"]
    assert list(final.set_index("sample_id").loc[kept_ids, "npv_cost_usd"]) == list(before)


def _sigint_ignored() -> bool:
    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_local_workers_leave_ctrl_c_to_the_sweep():
    """Worker processes ignore SIGINT (a terminal sends it to all of them): only the
    sweep process handles it, and its own handler is put back after the start."""
    from dcplan.sweep import run

    before = signal.getsignal(signal.SIGINT)
    client, cluster, text = run._connect(2, None)
    try:
        assert text == "local, 2 workers"
        assert signal.getsignal(signal.SIGINT) is before
        ignored = client.run(_sigint_ignored)
        assert len(ignored) == 2 and all(ignored.values()), ignored
    finally:
        client.close()
        cluster.close()


def test_an_unreachable_scheduler_is_an_input_error(monkeypatch):
    import dcplan.sweep.run as run
    from dcplan.errors import InputError

    monkeypatch.setattr(run, "CONNECT_TIMEOUT_S", 2)
    with pytest.raises(InputError, match="cannot reach the Dask scheduler"):
        run._connect(None, f"tcp://127.0.0.1:{free_port()}")


def test_an_unreachable_scheduler_fails_before_the_base_plan_and_leaves_no_folder(
        monkeypatch, tmp_path):
    from typer.testing import CliRunner

    import dcplan.sweep.run as run
    from dcplan.cli import app

    monkeypatch.setattr(run, "CONNECT_TIMEOUT_S", 2)
    solved = []
    monkeypatch.setattr(run, "_base_row", lambda *a, **k: solved.append(1))
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["sweep", str(SHIPPED_SWEEP), "--scheduler",
                                 f"tcp://127.0.0.1:{free_port()}", "-o", str(out), "-q"])
    assert r.exit_code == 1 and "cannot reach the Dask scheduler" in r.output
    assert not out.exists() and not solved
