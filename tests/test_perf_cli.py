"""CLI tests of dcplan perf (exit codes and messages)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from dcplan.cli import app

FIX = Path(__file__).parent / "fixtures" / "perf"
CAT = ["--catalog-dir", str(FIX / "catalog")]
runner = CliRunner()


def run(*args):
    return runner.invoke(app, [*CAT, "perf", *args])


def test_perf_prints_operating_point():
    r = run("--rack", "track8", "--model", "dense70", "--workload", "chat")
    assert r.exit_code == 0, r.output
    for text in ("goodput per rack", "goodput per accelerator", "replica", "batch", "TTFT",
                 "TPOT", "bottleneck", "rack power", "tokens per joule", "tokens/s per MW IT"):
        assert text in r.output


def test_perf_json():
    r = run("--rack", "track8", "--workload", "chat_disagg", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["fits"] and d["mode"] == "disaggregated" and d["prefill_racks_per_decode_rack"] > 0


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


def test_validate_and_calibrate_round_trip(tmp_path):
    out = tmp_path / "cal.yaml"
    r = run("calibrate", str(FIX / "good_measurements.csv"), "-o", str(out))
    assert r.exit_code == 0, r.output
    assert out.exists() and "median |error|" in r.output and "before" in r.output
    r = run("validate", str(FIX / "good_measurements.csv"), "--calibration", str(out), "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert len(d["rows"]) == 4 and d["summary"]["power"]["rows"] == 3
    r = run("--rack", "track8", "--workload", "chat", "--calibration", str(out))
    assert r.exit_code == 0, r.output


def test_validate_bad_csv_exit_1_names_column():
    r = run("validate", str(FIX / "bad_measurements.csv"))
    assert r.exit_code == 1
    assert "power_w" in r.output and "required column is missing" in r.output


def test_validate_models_file(tmp_path):
    models = tmp_path / "extra.yaml"
    models.write_text((FIX / "catalog" / "models.yaml").read_text().replace(
        "id: dense70", "id: dense70_copy"))
    csv = tmp_path / "m.csv"
    csv.write_text("hardware,model,precision,phase,gpus,batch,context_tokens,tokens_per_s,"
                   "power_w\ntgpu,dense70_copy,fp8,decode,2,64,1000,2000,\n")
    r = run("validate", str(csv))
    assert r.exit_code == 1 and "add the shape with --models" in r.output
    r = run("validate", str(csv), "--models", str(models))
    assert r.exit_code == 0, r.output
    assert "median |error|" in r.output


def test_shipped_mlperf_validate():
    r = runner.invoke(app, ["perf", "validate", "catalogs/measurements/mlperf_inference.csv",
                            "--json"])
    assert r.exit_code == 0, r.output
    assert len(json.loads(r.output)["rows"]) == 18
