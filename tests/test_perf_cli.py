"""CLI tests of dcplan perf (exit codes, messages, JSON keys, frontier PNG)."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from dcplan.cli import app

FIX = Path(__file__).parent / "fixtures" / "perf"
ROOT = Path(__file__).resolve().parent.parent
CAT = ["--catalog-dir", str(FIX / "catalog")]
runner = CliRunner()


def run(*args):
    return runner.invoke(app, [*CAT, "perf", *args])


def test_perf_prints_operating_point():
    r = run("--rack", "track8", "--model", "dense70", "--workload", "chat")
    assert r.exit_code == 0, r.output
    for text in ("goodput per rack", "(input + output)", "output per rack", "per accelerator",
                 "per user", "replica", "TP", "batch", "TTFT p99", "TPOT p99", "bottleneck",
                 "rack power", "tokens per joule", "output,", "tokens/s per MW IT"):
        assert text in r.output, text


def test_perf_json_keys_and_configuration():
    r = run("--rack", "track8", "--workload", "moe_chat", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    for key in ("output_tokens_per_s_per_gpu", "output_tokens_per_s_per_rack", "rack_power_kw",
                "output_tokens_per_joule", "total_tokens_per_joule", "goodput_tokens_per_s",
                "input_tokens_per_s", "tokens_per_s_per_user", "ttft_s", "tpot_ms",
                "percentile"):
        assert key in d, key
    assert "tokens_per_joule" not in d  # the unlabelled figure is gone
    cfg = d["configuration"]
    assert cfg["parallel"] and cfg["replica_gpus"] >= 1 and cfg["speculative"] == "none"
    assert d["output_tokens_per_s_per_rack"] == pytest.approx(d["output_tokens_per_s_per_gpu"] * 8)
    assert d["workload"]["input_tokens_mean"] == 2000


def test_perf_json_disaggregated():
    r = run("--rack", "track8", "--workload", "chat_disagg", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["fits"] and d["mode"] == "disaggregated" and d["prefill_racks_per_decode_rack"] > 0
    assert d["configuration"]["prefill_parallel"]


def test_perf_workload_from_options():
    r = run("--rack", "track8", "--model", "moe", "--input-tokens", "4096", "--output-tokens",
            "512", "--ttft-s", "2", "--tpot-ms", "30", "--percentile", "90", "--speculative",
            "mtp", "--acceptance", "0.8", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["percentile"] == 90 and d["speculative"] == "mtp" and d["acceptance_frac"] == 0.8
    assert d["ttft_s"] <= 2 and d["tpot_ms"] <= 30 and d["draft_tokens"] >= 1
    assert d["workload"]["output_tokens_mean"] == 512


def test_perf_offline_and_concurrency():
    off = json.loads(run("--rack", "track8", "--model", "dense70", "--input-tokens", "1000",
                         "--output-tokens", "250", "--offline", "--json").output)
    assert off["offline"] and off["bottleneck"] in ("memory_capacity", "batch_limit",
                                                    "compute", "memory_bandwidth")
    r = run("--rack", "track8", "--workload", "chat", "--concurrency", "16", "--json")
    assert r.exit_code == 0, r.output
    cl = json.loads(r.output)
    assert cl["arrival"] == "closed_loop" and cl["concurrency"] == pytest.approx(16)
    assert cl["batch"] <= 16


@pytest.mark.slow
def test_perf_fixed_layout():
    r = run("--rack", "track8", "--workload", "moe_chat", "--tp", "8", "--ep", "8",
            "--dp-attention", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["parallel"] == "DEP8"
    bad = run("--rack", "track8", "--workload", "moe_chat", "--tp", "16")
    assert bad.exit_code == 1 and "scale-up domain" in bad.output
    assert run("--rack", "track8", "--workload", "chat", "--ep", "4").exit_code == 1
    assert run("--rack", "track8", "--workload", "chat", "--dp-attention").exit_code == 2
    # zero sizes are refused, not read as 1; data-parallel attention is for MoE models
    for args in (("--tp", "0"), ("--ep", "0")):
        for wl in ("chat", "moe_chat"):
            r = run("--rack", "track8", "--workload", wl, *args)
            assert r.exit_code == 1 and "must be at least 1" in r.output, (wl, args, r.output)
    r = run("--rack", "track8", "--workload", "chat", "--tp", "2", "--dp-attention")
    assert r.exit_code == 1 and "--dp-attention applies to MoE models" in r.output


def test_perf_options_are_checked():
    assert run("--rack", "track8", "--workload", "chat", "--speculative", "eagle").exit_code == 2
    assert run("--rack", "track8", "--workload", "chat", "--mode", "split").exit_code == 2
    r = run("--rack", "track8", "--workload", "chat", "--percentile", "120")
    assert r.exit_code == 1 and "percentile" in r.output
    r = run("--rack", "track8", "--model", "dense70", "--input-tokens", "100")
    assert r.exit_code == 2 and "--output-tokens" in r.output


def test_perf_does_not_fit_exits_1_with_reason():
    r = run("--rack", "track8", "--model", "huge", "--workload", "chat")
    assert r.exit_code == 1
    assert "2,000 GB" in r.output


def test_perf_unknown_rack():
    r = run("--rack", "trak8", "--workload", "chat")
    assert r.exit_code == 1
    assert "unknown rack" in r.output and "trak8" in r.output
    assert "did you mean 'track8'" in r.output


def test_perf_missing_options_is_usage_error():
    r = run("--rack", "track8")
    assert r.exit_code == 2


def test_perf_bad_precision():
    r = run("--rack", "track8", "--workload", "chat", "--precision", "fp16")
    assert r.exit_code == 2 and "bf16, fp8 or fp4" in r.output


def test_perf_sweep_batch():
    r = run("--rack", "track8", "--workload", "chat", "--sweep", "batch", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    batches = [row["batch"] for row in d["sweep"]]
    assert batches[0] == 1 and batches == sorted(batches)
    assert any(not row["meets_slo"] for row in d["sweep"]) or d["operating_point"]["bottleneck"]


@pytest.mark.slow
def test_frontier_json_and_png(tmp_path):
    png = tmp_path / "f.png"
    r = run("frontier", "--rack", "track8", "--model", "moe", "--input-tokens", "1024",
            "--output-tokens", "1024", "--speculative", "mtp", "--png", str(png), "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    pts = d["points"]
    assert len(pts) >= 3
    x = [p["tokens_per_s_per_user"] for p in pts]
    y = [p["output_tokens_per_s_per_gpu"] for p in pts]
    assert x == sorted(x) and y == sorted(y, reverse=True)  # Pareto: more per user, less per GPU
    assert all(p["parallel"] and p["mode"] in ("aggregated", "disaggregated") for p in pts)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000


def test_frontier_says_why_not():
    r = run("frontier", "--rack", "track8", "--model", "huge", "--input-tokens", "1024",
            "--output-tokens", "1024")
    assert r.exit_code == 1 and "2,000 GB" in r.output


@pytest.mark.slow
def test_validate_and_calibrate_round_trip(tmp_path):
    out = tmp_path / "cal.yaml"
    r = run("calibrate", str(FIX / "good_measurements.csv"), "-o", str(out))
    assert r.exit_code == 0, r.output
    assert out.exists() and "median |error|" in r.output and "before" in r.output
    # the file says how the fit stopped, within its evaluation budget
    from dcplan.perf.calibration import MAX_NFEV

    fit = yaml.safe_load(out.read_text())["fit"]
    assert 0 < fit["evaluations"] <= MAX_NFEV and fit["termination"]
    assert fit["first_order_optimality"] >= 0 and fit["columns"] > 0
    assert fit["start"] == "the a-priori values"   # where the search started
    assert fit["cost"] > 0   # the loss, which the gradient is read against (steep_stop)
    # what the rows cover: four dense phase rows (EP 1 on an 8-GPU board), none
    # disaggregated, none with a decode group wider than a board
    assert yaml.safe_load(out.read_text())["basis"] == {
        "domain_ep_max": 1, "prefill_domain_ep_max": 1, "handover_domain_max": 0,
        "handover_prompt_tokens_max": 0.0, "handover_models": [],
        "wide_decode_seqs_per_gpu_min": 0.0,
        # the fixture's accelerator names no architecture: no kinds to record
        "architecture_kinds": {}}
    r = run("validate", str(FIX / "good_measurements.csv"), "--calibration", str(out), "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert len(d["rows"]) == 4 and d["summary"]["power"]["rows"] == 3
    r = run("--rack", "track8", "--workload", "chat", "--calibration", str(out))
    assert r.exit_code == 0, r.output


@pytest.mark.slow
def test_calibrate_with_starts_says_each_and_keeps_one(tmp_path):
    out = tmp_path / "cal.yaml"
    r = run("calibrate", str(FIX / "good_measurements.csv"), "-o", str(out), "--starts", "2")
    assert r.exit_code == 0, r.output
    fit = yaml.safe_load(out.read_text())["fit"]
    assert [f["start"] for f in fit["starts"]] == ["prior", "seed 1", "seed 2"]
    kept = min(fit["starts"], key=lambda f: (f["steep"], f["cost"]))
    assert fit["cost"] == pytest.approx(kept["cost"], abs=1e-3)   # the file rounds to 0.001
    assert ("seed" in fit["start"]) == (kept["start"] != "prior")
    line = next(x for x in r.output.splitlines() if x.startswith("starts: "))
    assert "prior loss" in line and "seed 2 loss" in line and line.endswith(fit["start"])
    # the file reads back
    r = run("--rack", "track8", "--workload", "chat", "--calibration", str(out))
    assert r.exit_code == 0, r.output
    bad = run("calibrate", str(FIX / "good_measurements.csv"), "-o", str(out), "--starts", "-1")
    assert bad.exit_code == 2
    # the starts fitted in two processes: the same file
    two = tmp_path / "cal2.yaml"
    r = run("calibrate", str(FIX / "good_measurements.csv"), "-o", str(two), "--starts", "2",
            "--workers", "2")
    assert r.exit_code == 0, r.output
    assert yaml.safe_load(two.read_text()) == yaml.safe_load(out.read_text())
    assert run("calibrate", str(FIX / "good_measurements.csv"), "-o", str(two),
               "--workers", "0").exit_code == 2


def test_validate_serving_json_one_record_per_row_in_order():
    r = run("validate", str(FIX / "good_serving.csv"), "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    rows = list(csv.DictReader(open(FIX / "good_serving.csv")))
    assert [rec["row"] for rec in d["rows"]] == list(range(1, len(rows) + 1))
    for rec, src in zip(d["rows"], rows, strict=True):
        assert rec["hardware"] == src["hardware"] and rec["concurrency"] == int(src["concurrency"])
        for key in ("predicted_output_tokens_per_s_per_gpu", "predicted_median_tpot_ms",
                    "predicted_median_ttft_s", "output_tokens_error_pct", "tpot_error_pct",
                    "ttft_error_pct", "configuration", "flag"):
            assert key in rec, key
        assert rec["predicted_output_tokens_per_s_per_gpu"] > 0


@pytest.mark.slow
def test_validate_both_schemas_together():
    r = run("validate", str(FIX / "good_measurements.csv"), str(FIX / "good_serving.csv"))
    assert r.exit_code == 0, r.output
    assert "predicted_tokens_per_s" in r.output and "predicted_output_tokens_per_s_per_gpu" in \
        r.output
    assert "median TPOT: median |error|" in r.output
    # several files: each record says which file its row is from, in the order given
    r = run("validate", str(FIX / "good_serving.csv"), str(FIX / "good_measurements.csv"),
            "--json")
    assert r.exit_code == 0, r.output
    recs = json.loads(r.output)["rows"]
    n_serving = len(list(csv.DictReader(open(FIX / "good_serving.csv"))))
    assert [Path(x["file"]).name for x in recs] == (
        ["good_serving.csv"] * n_serving + ["good_measurements.csv"] * (len(recs) - n_serving))
    assert recs[0]["row"] == 1 and recs[n_serving]["row"] == 1


def test_validate_bad_csv_exit_1_names_column():
    r = run("validate", str(FIX / "bad_measurements.csv"))
    assert r.exit_code == 1
    assert "power_w" in r.output and "required column is missing" in r.output
    r = run("validate", str(FIX / "bad_serving.csv"))
    assert r.exit_code == 1
    assert "entry 'row 3', field 'concurrency'" in r.output


def test_validate_models_file(tmp_path):
    models = tmp_path / "extra.yaml"
    models.write_text((FIX / "catalog" / "models.yaml").read_text().replace(
        "id: dense70", "id: dense70_copy"))
    csv_path = tmp_path / "m.csv"
    csv_path.write_text("hardware,model,precision,phase,gpus,batch,context_tokens,tokens_per_s,"
                        "power_w\ntgpu,dense70_copy,fp8,decode,2,64,1000,2000,\n")
    r = run("validate", str(csv_path))
    assert r.exit_code == 1 and "add the shape with --models" in r.output
    r = run("validate", str(csv_path), "--models", str(models))
    assert r.exit_code == 0, r.output
    assert "median |error|" in r.output


@pytest.mark.slow
def test_shipped_mlperf_validate():
    r = runner.invoke(app, ["perf", "validate", "catalogs/measurements/mlperf_inference.csv",
                            "--json"])
    assert r.exit_code == 0, r.output
    assert len(json.loads(r.output)["rows"]) == 22


@pytest.mark.slow
def test_shipped_inferencex_validate_prints_per_row_errors():
    r = runner.invoke(app, ["perf", "validate", "catalogs/measurements/inferencex_deepseek_r1.csv"])
    assert r.exit_code == 0, r.output
    assert r.output.count("\n") > 1328 and "median TTFT: median |error|" in r.output


@pytest.mark.slow
def test_frontier_answers_for_every_rack_and_model():
    from dcplan.catalog import load_catalog
    from dcplan.perf.frontier import frontier
    from dcplan.perf.params import load_perf_inputs

    cat = load_catalog()
    pin = load_perf_inputs(cat)
    for rack in cat.racks:
        for model in cat.models:
            fr = frontier(cat, rack, model, 1024, 1024, defaults=pin.defaults,
                          calibration=pin.calibration)
            assert fr.points or len(fr.reason) > 20, (rack, model)
            for p in fr.points:
                assert p["output_tokens_per_s_per_gpu"] > 0 and p["parallel"]


@pytest.mark.parametrize("args, field", [
    (("--ttft-s", "-1"), "ttft_s"), (("--ttft-s", "0"), "ttft_s"),
    (("--acceptance", "1.5"), "acceptance_frac"), (("--percentile", "30"), "percentile"),
    (("--input-tokens", "0"), "input_tokens_mean")])
def test_frontier_bad_numbers_name_the_field(args, field):
    base = {"--input-tokens": "1000", "--output-tokens": "100"}
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    r = run("frontier", "--rack", "track8", "--model", "dense70",
            *[x for kv in base.items() for x in kv])
    assert r.exit_code == 1, r.output
    assert f"field '{field}'" in r.output and "internal error" not in r.output


def test_batch_sweep_of_a_disaggregated_workload_says_it_is_aggregated_only():
    r = run("--rack", "track8", "--workload", "chat_disagg", "--sweep", "batch")
    assert r.exit_code == 1 and "add --mode aggregated" in r.output
    r = run("--rack", "track8", "--workload", "chat_disagg", "--mode", "aggregated",
            "--sweep", "batch", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["sweep"]


@pytest.mark.slow
def test_options_that_do_not_apply_say_so():
    r = runner.invoke(app, [*CAT, "perf", "--rack", "track8", "--workload", "chat", "--offline",
                            "--ttft-s", "1"])
    assert r.exit_code == 0 and "--ttft-s and --tpot-ms are not applied" in r.stderr
    r = runner.invoke(app, [*CAT, "perf", "--rack", "track8", "--workload", "chat",
                            "--acceptance", "0.5"])
    assert r.exit_code == 0 and "--acceptance is not applied" in r.stderr
    r = runner.invoke(app, [*CAT, "perf", "frontier", "--rack", "track8", "--model", "dense70",
                            "--input-tokens", "1000", "--output-tokens", "100",
                            "--percentile", "99"])
    assert r.exit_code == 0 and "without --ttft-s it is not applied" in r.stderr
    quiet = runner.invoke(app, [*CAT, "perf", "--rack", "track8", "--workload", "chat"])
    assert "not applied" not in quiet.stderr


def test_offline_runs_at_the_largest_batch_memory_allows():
    """Memory-bound offline serving: the batch is the layout's own memory limit, not a
    grid point below it (the grid held the largest layout's limit only)."""
    r = runner.invoke(app, ["perf", "--rack", "gb200_nvl72", "--workload", "chat", "--offline",
                            "--json"])  # the shipped catalog: TP1 wins, below TP8's limit
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["bottleneck"] == "memory_capacity"
    assert d["batch"] == int(d["max_batch"]), d


@pytest.mark.parametrize("fixture", ["good_measurements.csv", "good_serving.csv"])
@pytest.mark.slow
def test_validate_without_calibration_through_the_cli(fixture):
    """`--calibration none` on the validate path (it exited 3: AttributeError on False)."""
    path = str(FIX / fixture)
    bare = run("validate", path, "--calibration", "none", "--json")
    assert bare.exit_code == 0, bare.output
    fitted = run("validate", path, "--json")
    assert fitted.exit_code == 0, fitted.output
    b, f = json.loads(bare.stdout), json.loads(fitted.stdout)
    assert b["calibration"] == "none" and f["calibration"] != "none"
    # The same rows, predicted without the fitted values.
    assert len(b["rows"]) == len(f["rows"]) > 0


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ("--rack", "gb200_nvl72", "--workload", "chat"),
    ("frontier", "--rack", "hgx_h200", "--model", "llama3_70b", "--input-tokens", "1024",
     "--output-tokens", "1024"),
    ("power-curve", "--rack", "hgx_h200", "--workload", "chat")])
def test_calibration_none_on_every_prediction_command(args):
    """`--calibration none` answers (exit 0) on perf, frontier and power-curve too, with
    the a-priori defaults: a different answer from the shipped fit's (issue 28)."""
    shipped = runner.invoke(app, ["perf", *args, "--json"])
    bare = runner.invoke(app, ["perf", *args, "--calibration", "none", "--json"])
    assert shipped.exit_code == 0, shipped.output
    assert bare.exit_code == 0, bare.output
    b, f = json.loads(bare.stdout), json.loads(shipped.stdout)
    assert b != f
    if "software" in b:
        assert b["software"]["basis"] == "a-priori defaults"
        assert f["software"]["basis"] != "a-priori defaults"


def test_steep_stop_reads_the_gradient_against_the_loss():
    from dcplan.perf.params import STEEP_STOP_ELASTICITY, steep_stop

    assert STEEP_STOP_ELASTICITY == 1.0
    assert steep_stop({"first_order_optimality": 0.895, "cost": 19.98}) is None  # shipped
    assert steep_stop({"first_order_optimality": 20.0, "cost": 20.0}) is None    # at the line
    said = steep_stop({"first_order_optimality": 79.2, "cost": 21.74})           # seed 2
    assert said and "first-order optimality 79.2 against a loss of 21.7" in said
    assert "loss by 3.6 %" in said   # 0.01 x 79.2 / 21.74 = 3.64 %
    # files written before the loss was recorded, or broken values: nothing is said
    assert steep_stop({"first_order_optimality": 79.2}) is None
    assert steep_stop({}) is None
    assert steep_stop({"first_order_optimality": "x", "cost": 1.0}) is None
    assert steep_stop({"first_order_optimality": float("nan"), "cost": 1.0}) is None
    assert steep_stop({"first_order_optimality": 5.0, "cost": 0.0}) is None


@pytest.mark.slow
def test_a_calibration_that_stopped_on_a_steep_slope_is_named(tmp_path, minimal_linear):
    """A calibration whose fit block has a gradient above its loss (seed 4 of the
    alternative fits: 39.8 against 21.1) gets a note from `perf` and from `plan`; the
    shipped calibration (0.9 against 20.0) gets none."""
    from dcplan.perf.params import steep_stop

    steep = tmp_path / "steep.yaml"
    raw = yaml.safe_load((ROOT / "catalogs" / "perf_calibration.yaml").read_text())
    assert steep_stop(raw["fit"]) is None
    raw["fit"].update(first_order_optimality=39.8, cost=21.1)
    steep.write_text(yaml.safe_dump(raw, sort_keys=False))
    perf = ["perf", "--rack", "hgx_h200", "--model", "llama3_70b", "--workload", "chat"]
    r = CliRunner().invoke(app, [*perf, "--calibration", str(steep)])
    assert r.exit_code == 0, r.output
    assert "stopped on a steep slope" in r.output and "loss by 1.9 %" in r.output
    r = CliRunner().invoke(app, perf)
    assert r.exit_code == 0 and "steep" not in r.output
    r = CliRunner().invoke(app, ["plan", str(minimal_linear), "--json", "-q",
                                 "--calibration", str(steep)])
    assert r.exit_code == 0, r.output
    assert any("stopped on a steep slope" in n for n in json.loads(r.stdout)["notes"])


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("sig, to_group, code", [(signal.SIGINT, True, 130),
                                                 (signal.SIGTERM, False, 130)])
def test_a_calibration_fitted_side_by_side_stops_at_once_and_whole(tmp_path, sig, to_group,
                                                                    code):
    """Ctrl-C (SIGINT to the terminal's whole process group) or SIGTERM to the command
    alone while `perf calibrate --workers 2` fits: the command ends within seconds with
    its one-line message, no traceback, no calibration file, and no worker left running
    (before, the pool hung on Ctrl-C until killed)."""
    out = tmp_path / "cal.yaml"
    meas = sorted(str(p) for p in (ROOT / "catalogs" / "measurements").glob("*.csv"))
    err = tmp_path / "stderr.txt"
    with open(err, "w") as ferr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dcplan", "perf", "calibrate", *meas, "-o", str(out),
             "--starts", "1", "--workers", "2"], stdout=ferr, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, cwd=ROOT, start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        # the two fits are running once the command has two children
        deadline = time.monotonic() + 120
        while len(_children(proc.pid)) < 2:
            assert proc.poll() is None, err.read_text()[-2000:]
            assert time.monotonic() < deadline, "no workers started"
            time.sleep(0.2)
        time.sleep(2.0)
        if to_group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        assert proc.wait(timeout=30) == code, err.read_text()[-2000:]
        text = err.read_text()
        assert "Traceback" not in text, text[-2000:]
        assert not out.exists()
        deadline = time.monotonic() + 10
        while True:    # every process of the group gone
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
            assert time.monotonic() < deadline, "workers left running"
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def _children(pid: int) -> list[int]:
    """Process ids whose parent is ``pid`` (Linux /proc)."""
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids
