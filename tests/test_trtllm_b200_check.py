"""bench/trtllm_b200_check.py against hand figures and an independent path.

The bench builds a batch-1 decode step as ``dcplan perf`` does (build_setup, software
as of the run); ``perf validate`` predicts a phase-level row through the calibration's
row path. The plain (no MTP) step written as a row must come out the same; the
acceptance the bench solves for must give the blog's accepted lengths.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from scripts import load_script
from typer.testing import CliRunner

from dcplan.cli import app
from dcplan.perf.speculative import expected_tokens

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench" / "trtllm_b200_check.py"


def _bench():
    mod = load_script(BENCH, "trtllm_b200_check_bench")
    return mod


def test_the_solved_acceptance_gives_the_blogs_accepted_length():
    bench = _bench()
    assert bench._acceptance_for(1.92, 1) == pytest.approx(0.92, abs=1e-9)  # 1 + a
    for draft, accepted, _ in bench.MEASURED[1:]:
        a = bench._acceptance_for(accepted, draft)
        assert float(expected_tokens(a, draft)) == pytest.approx(accepted, abs=1e-9)
    # 1 + a + a^2 = 2.58 by hand: a = (-1 + sqrt(1 + 4 x 1.58)) / 2 = 0.8530
    assert bench._acceptance_for(2.58, 2) == pytest.approx(0.853, abs=5e-4)


@pytest.mark.slow
def test_bench_plain_step_agrees_with_perf_validate(tmp_path):
    """The blog's layout (attention TP8, MoE EP4: each expert over 2 GPUs) as a phase
    row; a row whose ep does not divide its GPUs is named, the others still validated."""
    bench = _bench()
    assert (bench.LAYOUT.tp, bench.LAYOUT.ep, bench.LAYOUT.dp_attention) == (8, 4, False)
    res = bench.run(None)
    plain = res["rows"][0]
    assert plain["mtp_depth"] == 0
    # deeper drafts make longer steps and, at the blog's acceptance, more tokens per user
    steps = [r["model_step_ms"] for r in res["rows"]]
    assert steps == sorted(steps)
    with open(ROOT / "catalogs" / "measurements" / "wide_ep.csv", newline="") as fh:
        header = next(csv.reader(fh))
    row = {k: "" for k in header} | {
        "hardware": "b200", "model": bench.MODEL, "precision": bench.PRECISION,
        "phase": "decode", "gpus": "8", "batch": "1",
        "context_tokens": f"{bench.CONTEXT_TOKENS:g}", "tokens_per_s": "111",
        "source": bench.SOURCE, "as_of": bench.DATE, "notes": "test",
        "framework": bench.ENGINE, "ep": "4", "dp_attention": "false"}
    path = tmp_path / "run.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header)
        w.writeheader()
        w.writerow(row)
        w.writerow(row | {"ep": "3"})
    out = CliRunner().invoke(app, ["perf", "validate", str(path), "--json"])
    assert out.exit_code == 0, out.output
    done = json.loads(out.stdout)
    assert len(done["rows"]) == 1
    (skipped,) = done["skipped_rows"]
    assert (skipped["line"], skipped["field"]) == (3, "ep")
    assert "expert parallelism 3 must divide the replica's 8 GPUs" in skipped["message"]
    rec = done["rows"][0]
    assert rec["predicted_tokens_per_s"] == pytest.approx(1e3 / plain["model_step_ms"],
                                                          rel=5e-3)


@pytest.mark.slow
def test_throughput_run_is_the_blogs_layout_and_perfs_answer():
    """The reproduction's settings (--tp 8 --ep 8, 3,072 in flight, 384 per rank: 3,072 =
    384 x 8 attention-DP ranks), and the bench's figure is `dcplan perf`'s."""
    bench = _bench()
    assert bench.CONCURRENCY == bench.MAX_BATCH * 8
    res = bench.run_throughput(None)
    assert res["parallel"] == "DEP8" and res["batch"] <= bench.CONCURRENCY
    assert res["error_pct"] == pytest.approx(
        100 * (res["model_output_tokens_per_s_per_gpu"] / 4600 - 1))
