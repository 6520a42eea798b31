"""`dcplan perf validate` accepts DP-attention layouts and flags, never refuses, bad rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dcplan.catalog import load_catalog
from dcplan.errors import InputError
from dcplan.perf.measurements import load_measurements

REPO = Path(__file__).resolve().parent.parent
runner = CliRunner()

HEADER = (REPO / "catalogs" / "measurements" / "inferencex_deepseek_r1.csv").read_text(
    encoding="utf-8").splitlines()[0]
#: A real InferenceX row (B200, DeepSeek-R1 fp4, disaggregated, DEP8 decode).
ROW = ("b200,deepseek_r1,fp4,1024,1024,1024,12,true,4,8,4,4,8,8,true,mtp,{out},,,,,,,,"
       "trt,2026-01-14,test row")


def _row(**cells: str) -> str:
    cols = HEADER.split(",")
    values = ROW.format(out="1000.0").split(",")
    for k, v in cells.items():
        values[cols.index(k)] = v
    return ",".join(values)


def _csv(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "runs.csv"
    path.write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    return path


def test_dp_attention_width_in_decode_tp_is_accepted(tmp_path):
    """Wide-EP runs record the attention-DP width in decode_tp (24 does not divide the
    128 heads of DeepSeek-R1); under DP attention attention runs at TP 1."""
    wide = _row(gpus="52", prefill_gpus="4", decode_gpus="48", decode_tp="24",
                decode_ep="24")
    (m,) = load_measurements(_csv(tmp_path, wide), load_catalog())
    assert (m.decode_tp, m.decode_ep, m.decode_dp_attention) == (24, 24, True)
    # Without DP attention the same width is still refused: heads split evenly.
    plain = wide.replace(",true,mtp,", ",false,mtp,")
    try:
        load_measurements(_csv(tmp_path, plain), load_catalog())
    except InputError as exc:
        assert "does not divide the 128 attention heads" in str(exc)
    else:
        raise AssertionError("TP 24 without DP attention was accepted")


def test_perf_validate_predicts_a_wide_dp_attention_row(tmp_path):
    """Through the CLI: a DEP48 decode row (decode_tp 48 is the attention-DP width, 48
    does not divide 128 heads) is validated, not refused or skipped (issue 28)."""
    from dcplan.cli import app

    wide = _row(gpus="52", prefill_gpus="4", decode_gpus="48", decode_tp="48",
                decode_ep="48")
    res = runner.invoke(app, ["perf", "validate", str(_csv(tmp_path, _row(), wide)), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert not data.get("skipped_rows")
    assert len(data["rows"]) == 2


@pytest.mark.slow
def test_a_bad_row_is_named_and_the_others_are_validated(tmp_path):
    from dcplan.cli import app

    good = _row()
    bad = _row(decode_tp="3", decode_ep="3", decode_dp_attention="false",
               decode_gpus="9", gpus="13")
    path = _csv(tmp_path, good, bad, good)
    res = runner.invoke(app, ["perf", "validate", str(path), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert len(data["rows"]) == 2
    (skipped,) = data["skipped_rows"]
    assert skipped["entry"] == "row 2" and skipped["line"] == 3
    assert skipped["field"] == "decode_tp" and "attention heads" in skipped["message"]
    text = runner.invoke(app, ["perf", "validate", str(path)])
    assert text.exit_code == 0
    assert "row 2" in text.stderr and "not validated" in text.stderr
    # A file whose rows are all bad is still refused (nothing to validate).
    only_bad = runner.invoke(app, ["perf", "validate", str(_csv(tmp_path, bad))])
    assert only_bad.exit_code == 1 and "attention heads" in only_bad.stderr


@pytest.mark.slow
def test_measurement_files_are_bounded_and_odd_bytes_named(tmp_path, monkeypatch):
    """A valid 9 MB file of 72,000 rows took 1.3 GB to validate and over 9 GB (killed at
    120 s) to calibrate; a 5 MB cell and a NUL byte exited 3 or blamed the wrong column."""
    from dcplan.cli import app
    from dcplan.perf.measurements import MAX_ROWS_ENV

    monkeypatch.setenv(MAX_ROWS_ENV, "3")
    many = _csv(tmp_path, *[_row()] * 4)
    res = runner.invoke(app, ["perf", "calibrate", str(many), "-o", str(tmp_path / "c.yaml")])
    assert res.exit_code == 1 and "more than 3 measurement rows" in res.stderr
    assert MAX_ROWS_ENV in res.stderr and not (tmp_path / "c.yaml").exists()
    monkeypatch.delenv(MAX_ROWS_ENV)
    assert runner.invoke(app, ["perf", "validate", str(many)]).exit_code == 0

    cell = tmp_path / "cell.csv"
    cell.write_text(HEADER + "\n" + _row(source='"' + "x" * 200_000 + '"') + "\n")
    res = runner.invoke(app, ["perf", "validate", str(cell)])
    assert res.exit_code == 1 and "not a readable CSV file" in res.stderr
    nul = tmp_path / "nul.csv"
    nul.write_text(HEADER + "\n" + _row(precision="fp\x004") + "\n")
    res = runner.invoke(app, ["perf", "validate", str(nul)])
    assert res.exit_code == 1 and "NUL byte" in res.stderr and "nul.csv:2" in res.stderr


def test_expert_parallel_prefill_pool_runs_dp_attention(tmp_path):
    """The serving files record DP attention for the decode pool only; a disaggregated
    prefill pool with EP is taken to run its attention data parallel (as most InferenceX
    recipes with an expert-parallel prefill worker do), so its TP column is the DP width and
    24 is accepted although it does not divide the 128 heads; without EP the prefill
    pool runs TP attention and the heads must split evenly."""
    from dcplan.perf.calibration import evaluate_rows
    from dcplan.perf.measurements import prefill_dp_attention
    from dcplan.perf.params import load_perf_inputs

    assert prefill_dp_attention(True, 8, False) is True
    assert prefill_dp_attention(True, 1, True) is False
    assert prefill_dp_attention(False, 8, False) is False   # aggregated: the decode flag
    assert prefill_dp_attention(False, 1, True) is True
    cat = load_catalog()
    wide = _row(gpus="32", prefill_gpus="24", decode_gpus="8", prefill_tp="24",
                prefill_ep="24")
    (m,) = load_measurements(_csv(tmp_path, wide), cat)
    assert m.prefill_dp_attention and (m.prefill_tp, m.prefill_ep) == (24, 24)
    pin = load_perf_inputs(cat, benchmarks=True)
    (r,) = evaluate_rows([m], cat, pin.defaults, pin.calibration, benchmarks=pin.benchmarks)
    assert r.pred.configuration.startswith("prefill 1 x DEP24 / decode 1 x DEP8")
    tp_only = _row(gpus="14", prefill_gpus="6", decode_gpus="8", prefill_tp="6",
                   prefill_ep="1")
    with pytest.raises(InputError, match="tensor parallelism 6 does not divide the 128"):
        load_measurements(_csv(tmp_path, tp_only), cat)


def test_prefill_dp_attention_column_overrides_the_rule(tmp_path):
    """The optional prefill_dp_attention column says what the rule cannot (B200 SGLang
    fp8's low-latency 1k/1k recipes prefill TP8 EP8 without DP attention); empty leaves
    the rule; a bad value or one contradicting an aggregated row's decode flag is named."""
    from dcplan.perf.calibration import evaluate_rows
    from dcplan.perf.params import load_perf_inputs

    cat = load_catalog()
    header = HEADER + ",prefill_dp_attention"
    dis = _row(gpus="16", prefill_gpus="8", decode_gpus="8", prefill_tp="8", prefill_ep="8")
    path = tmp_path / "runs.csv"
    path.write_text("\n".join([header, dis + ",false", dis + ",", dis + ",true"]) + "\n",
                    encoding="utf-8")
    rows = load_measurements(path, cat)
    assert [m.prefill_dp_attention for m in rows] == [False, True, True]
    pin = load_perf_inputs(cat, benchmarks=True)
    res = evaluate_rows(rows, cat, pin.defaults, pin.calibration, benchmarks=pin.benchmarks)
    assert [r.pred.configuration.split(" / ")[0] for r in res] == [
        "prefill 1 x TP8 EP8", "prefill 1 x DEP8", "prefill 1 x DEP8"]
    # TP attention must split the heads: 24 without DP attention is refused
    wide = _row(gpus="32", prefill_gpus="24", decode_gpus="8", prefill_tp="24",
                prefill_ep="24")
    agg = _row(gpus="8", disaggregated="false", prefill_gpus="", decode_gpus="",
               prefill_tp="8", prefill_ep="8")
    path.write_text("\n".join([header, dis + ",maybe", wide + ",false", agg + ",false"])
                    + "\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_measurements(path, cat)
    msg = str(exc.value)
    assert "entry 'row 1', field 'prefill_dp_attention': 'maybe' is not true or false" in msg
    assert "entry 'row 2', field 'prefill_tp': tensor parallelism 24 does not divide" in msg
    assert ("entry 'row 3', field 'prefill_dp_attention': differs from decode_dp_attention "
            "on an aggregated row") in msg


def test_perf_validate_reports_server_offline_pairs():
    """MangoBoost's MLPerf v5.0 MI300X Server and Offline rows make one pair: measured
    2,907.50 / 3,224.44 = 0.902 per GPU; the text names it, --json carries it."""
    from dcplan.cli import app

    path = REPO / "catalogs" / "measurements" / "validation" / "mlperf_v50_mi300x.csv"
    res = runner.invoke(app, ["perf", "validate", str(path), "--json"])
    assert res.exit_code == 0, res.output
    (pair,) = json.loads(res.stdout)["summary"]["server_offline"]
    assert (pair["server_row"], pair["offline_row"]) == (1, 0)
    assert pair["measured"] == pytest.approx(2907.50 / 3224.44)
    rows = json.loads(res.stdout)["rows"]
    pred = rows[1]["predicted_tokens_per_s"] / rows[0]["predicted_tokens_per_s"]
    assert pair["predicted"] == pytest.approx(pred)
    assert pair["abs_diff"] == pytest.approx(abs(pred - 2907.50 / 3224.44))
    res = runner.invoke(app, ["perf", "validate", str(path)])
    assert res.exit_code == 0, res.output
    assert ("Server/Offline throughput per GPU: 1 MLPerf configuration with both rows, "
            f"|predicted - measured| median {pair['abs_diff']:.2f}") in res.stdout
    assert (f"mi300x llama2_70b fp8 2025-04-02, TPOT 200 ms: measured 0.90, predicted "
            f"{pred:.2f}") in res.stdout


def test_perf_validate_splits_errors_by_domain_and_load(tmp_path):
    """The held-out check's figures in one command: error by scale-up domain (GB200 NVL72
    is rack scale, B200 a board) and by requests in flight, signed median beside |error|.
    Every group is recomputed here from the rows' own errors in --json."""
    from dcplan.cli import app

    rows = [_row(concurrency="64"), _row(concurrency="200"), _row(),
            _row(hardware="gb200_gpu", gpus="52", prefill_gpus="4", decode_gpus="48",
                 decode_tp="48", decode_ep="48", concurrency="4096"),
            _row(hardware="gb200_gpu", concurrency="32")]
    path = _csv(tmp_path, *rows)
    res = runner.invoke(app, ["perf", "validate", str(path), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    errs = [r["output_tokens_error_pct"] for r in data["rows"]]
    assert all(e is not None for e in errs)
    members = {("all", "all"): [0, 1, 2, 3, 4],
               ("domain", "8-GPU board"): [0, 1, 2],
               ("domain", "rack-scale (domain > 8 GPUs)"): [3, 4],
               ("concurrency", "<= 64"): [0, 4], ("concurrency", "65-512"): [1],
               ("concurrency", "> 512"): [2, 3],
               ("domain x concurrency", "8-GPU board, <= 64"): [0],
               ("domain x concurrency", "8-GPU board, 65-512"): [1],
               ("domain x concurrency", "8-GPU board, > 512"): [2],
               ("domain x concurrency", "rack-scale (domain > 8 GPUs), <= 64"): [4],
               ("domain x concurrency", "rack-scale (domain > 8 GPUs), > 512"): [3]}
    groups = data["summary"]["splits"]["throughput"]
    assert [(g["split"], g["value"]) for g in groups] == list(members)
    for g in groups:
        e = np.array([errs[i] for i in members[(g["split"], g["value"])]])
        assert g["rows"] == len(e)
        assert g["median_signed_pct"] == pytest.approx(np.median(e))
        assert g["median_abs_pct"] == pytest.approx(np.median(np.abs(e)))
        assert g["p90_abs_pct"] == pytest.approx(np.percentile(np.abs(e), 90))
    summ = data["summary"]["throughput"]
    assert summ["median_signed_pct"] == pytest.approx(np.median(errs))
    text = runner.invoke(app, ["perf", "validate", str(path)]).stdout
    assert "error % by scale-up domain and requests in flight" in text
    (line,) = [ln for ln in text.splitlines() if ln.startswith("  rack scale (domain > 8")]
    g = groups[2]
    assert (f"2: {g['median_signed_pct']:+.1f} / {g['median_abs_pct']:.1f} / "
            f"{g['p90_abs_pct']:.1f}") in line
    assert f"signed median {summ['median_signed_pct']:+.1f}%" in text
    assert max(len(ln) for ln in text.splitlines()
               if ln.startswith(("  boards", "  rack", "  all", "  group"))) <= 100
