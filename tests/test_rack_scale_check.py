"""bench/rack_scale_check.py against an independent path: ``dcplan perf validate``.

The bench builds a decode step as ``dcplan perf`` does (build_setup, software as of the
run); ``perf validate`` predicts a measurement row through the calibration's row path
(phase_arrays). The same run written as a row must come out the same, and throughput
must rise with the batch (what makes the bench's "at least 30 % slow" a bound).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from scripts import load_script
from typer.testing import CliRunner

from dcplan.cli import app

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench" / "rack_scale_check.py"


def _bench():
    mod = load_script(BENCH, "rack_scale_check_bench")
    return mod


@pytest.mark.slow
def test_bench_decode_agrees_with_perf_validate_on_the_same_run(tmp_path):
    bench = _bench()
    run_level, _planner = bench.run(None)
    limit = run_level["memory_limit_batch_per_gpu"]
    at_limit = run_level["rows"][-1]
    assert at_limit["batch_per_gpu"] == limit > 768
    tps = [r["output_tokens_per_s_per_gpu"] for r in run_level["rows"]]
    assert tps == sorted(tps)            # more batch, more throughput: the bound holds
    # the same run as a phase-level row (wide_ep.csv's columns), at the bench's batch
    with open(ROOT / "catalogs" / "measurements" / "wide_ep.csv", newline="") as fh:
        header = next(csv.reader(fh))
    row = {k: "" for k in header} | {
        "hardware": "gb200_gpu", "model": "deepseek_r1", "precision": "fp8",
        "phase": "decode", "gpus": str(bench.EP), "batch": str(limit * bench.EP),
        "context_tokens": f"{bench.CONTEXT_TOKENS:g}",
        "tokens_per_s": f"{bench.MEASURED * bench.EP:g}", "source": bench.SOURCE,
        "as_of": bench.DATE, "notes": "test", "framework": bench.ENGINE,
        "ep": str(bench.EP), "dp_attention": "true"}
    path = tmp_path / "run.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header)
        w.writeheader()
        w.writerow(row)
    out = CliRunner().invoke(app, ["perf", "validate", str(path), "--json"])
    assert out.exit_code == 0, out.output
    rec = json.loads(out.stdout)["rows"][0]
    per_gpu = rec["predicted_tokens_per_s"] / bench.EP
    assert abs(per_gpu / at_limit["output_tokens_per_s_per_gpu"] - 1) < 0.005
    assert abs(rec["tokens_error_pct"] - at_limit["error_pct"]) < 0.5
