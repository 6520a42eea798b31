"""bench/perf_accuracy.py's split tables, on hand-made rows with hand-computed figures.

Ten rows of method ``a`` (signed % errors of output tokens/s per GPU, MLPerf: replica
tokens/s):

=====  =========  ======  ===========  ==========  =====  ====================
row    hardware   domain  concurrency  throughput  power  notes
=====  =========  ======  ===========  ==========  =====  ====================
s1     b200       8       4            +10
s2     b200       8       64           -20
s3     b200       8       65           +30
s4     gb200_gpu  72      512          -40
s5     gb200_gpu  72      513          +50                TTFT -90 %
s6     mi355x     8       1024         -5          -10
p1     gb200_gpu  72      phase        +10                Offline, 8 GPUs
p2     gb200_gpu  72      phase        +28.33             Server, 4 GPUs
p3     h200_sxm   8       phase        -25         +10    Offline
p4     h200_sxm   8       phase        0           -20    Server
=====  =========  ======  ===========  ==========  =====  ====================

(s1 also has TTFT +100 %.) Method ``b`` predicts every row exactly.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from scripts import load_script

from dcplan.perf.calibration import (
    BOARD,
    PHASE_BAND,
    RACK_SCALE,
    RowResult,
    concurrency_band,
    domain_class,
    server_offline_pairs,
)
from dcplan.perf.predict import RowPrediction

BENCH = Path(__file__).resolve().parent.parent / "bench" / "perf_accuracy.py"


@pytest.fixture(scope="module")
def pa():
    mod = load_script(BENCH, "perf_accuracy_bench")
    return mod


DOMAINS = {"b200": 8, "gb200_gpu": 72, "mi355x": 8, "h200_sxm": 8}
VENDORS = {"b200": "NVIDIA", "gb200_gpu": "NVIDIA", "mi355x": "AMD", "h200_sxm": "NVIDIA"}


def serving(hw, conc, pred, ttft=None, power=None):
    m = SimpleNamespace(kind="serving", hardware=hw, concurrency=conc,
                        output_tokens_per_s_per_gpu=100.0, median_tpot_ms=None,
                        median_ttft_s=ttft[0] if ttft else None,
                        power_w=power[0] if power else None)
    p = RowPrediction(output_tokens_per_s_per_gpu=pred,
                      median_ttft_s=ttft[1] if ttft else None,
                      power_w=power[1] if power else None)
    return RowResult(m, p)


def phase(hw, gpus, meas, pred, tpot_ms=None, power=None, cap=None, date="2025-04-02"):
    m = SimpleNamespace(kind="phase", hardware=hw, model="llama", precision="fp4",
                        date=date, power_cap_w=cap, tpot_ms=tpot_ms, gpus=gpus,
                        tokens_per_s=meas, power_w=power[0] if power else None)
    p = RowPrediction(tokens_per_s=pred, power_w=power[1] if power else None)
    return RowResult(m, p)


def rows_a():
    return [
        serving("b200", 4, 110.0, ttft=(1.0, 2.0)),
        serving("b200", 64, 80.0),
        serving("b200", 65, 130.0),
        serving("gb200_gpu", 512, 60.0),
        serving("gb200_gpu", 513, 150.0, ttft=(10.0, 1.0)),
        serving("mi355x", 1024, 95.0, power=(1000.0, 900.0)),
        phase("gb200_gpu", 8, 1000.0, 1100.0),
        phase("gb200_gpu", 4, 300.0, 385.0, tpot_ms=175),
        phase("h200_sxm", 1, 4000.0, 3000.0, power=(500.0, 550.0), date="2024-08-28"),
        phase("h200_sxm", 1, 3000.0, 3000.0, tpot_ms=200, power=(600.0, 480.0),
              date="2024-08-28"),
    ]


def exact(rows):
    """The same rows predicted exactly."""
    out = []
    for r in rows:
        pred = RowPrediction(
            output_tokens_per_s_per_gpu=getattr(r.m, "output_tokens_per_s_per_gpu", None),
            tokens_per_s=getattr(r.m, "tokens_per_s", None),
            median_ttft_s=getattr(r.m, "median_ttft_s", None), power_w=r.m.power_w)
        out.append(RowResult(r.m, pred))
    return out


@pytest.fixture(scope="module")
def tables(pa):
    a = rows_a()
    return pa.split_tables({"a": a, "b": exact(a)}, DOMAINS.get, VENDORS.get)


def by_value(rows):
    return {(r["split"], r["value"]): r for r in rows}


def check(row, rows, signed, median, p90):
    assert row["rows"] == rows
    assert row["a signed"] == pytest.approx(signed)
    assert row["a median"] == pytest.approx(median)
    assert row["a p90"] == pytest.approx(p90)
    assert (row["b signed"], row["b median"], row["b p90"]) == (0.0, 0.0, 0.0)


def test_throughput_by_domain_and_concurrency(pa, tables):
    t = by_value(tables["throughput"])
    board, rack = BOARD, RACK_SCALE
    check(t[("all", "all")], 10, 5.0, 22.5, 41.0)
    # board: -25 -20 -5 0 10 30; |.| 0 5 10 20 25 30
    check(t[("domain", board)], 6, -2.5, 15.0, 27.5)
    # rack-scale: -40 10 28.33 50; |.| 10 28.33 40 50
    check(t[("domain", rack)], 4, (10 + 85 / 3) / 2, (85 / 3 + 40) / 2, 47.0)
    check(t[("concurrency", "<= 64")], 2, -5.0, 15.0, 19.0)
    check(t[("concurrency", "65-512")], 2, -5.0, 35.0, 39.0)
    check(t[("concurrency", "> 512")], 2, 22.5, 27.5, 45.5)
    check(t[("concurrency", PHASE_BAND)], 4, 5.0, 17.5, 25 + 0.7 * 10 / 3)
    check(t[("domain x concurrency", f"{rack}, 65-512")], 1, -40.0, 40.0, 40.0)
    check(t[("domain x concurrency", f"{board}, 65-512")], 1, 30.0, 30.0, 30.0)
    # no board row above 512 but s6; no rack-scale serving row at <= 64
    assert (("domain x concurrency", f"{rack}, <= 64")) not in t
    # order: all, domain (board first), concurrency (bands in order), crosses
    order = [(r["split"], r["value"]) for r in tables["throughput"]]
    assert order[:7] == [("all", "all"), ("domain", board), ("domain", rack),
                         ("concurrency", "<= 64"), ("concurrency", "65-512"),
                         ("concurrency", "> 512"), ("concurrency", PHASE_BAND)]


def test_ttft_only_rows_that_measured_it(pa, tables):
    t = by_value(tables["ttft"])
    check(t[("all", "all")], 2, 5.0, 95.0, 99.0)
    check(t[("domain", RACK_SCALE)], 1, -90.0, 90.0, 90.0)
    check(t[("concurrency", "<= 64")], 1, 100.0, 100.0, 100.0)
    assert ("concurrency", PHASE_BAND) not in t


def test_power_per_vendor(tables):
    t = by_value(tables["power"])
    check(t[("all", "all")], 3, -10.0, 10.0, 18.0)
    check(t[("vendor", "NVIDIA")], 2, -5.0, 15.0, 19.0)
    check(t[("vendor", "AMD")], 1, -10.0, 10.0, 10.0)


def test_server_offline_ratio(tables):
    so = tables["server_offline"]
    assert [r["configuration"] for r in so] == [
        "gb200_gpu llama fp4 2025-04-02, TPOT 175 ms",
        "h200_sxm llama fp4 2024-08-28, TPOT 200 ms", "all pairs"]
    # per GPU: measured 75 / 125 = 0.6, predicted 96.25 / 137.5 = 0.7
    assert so[0]["measured"] == pytest.approx(0.6)
    assert so[0]["a predicted"] == pytest.approx(0.7)
    assert so[0]["a abs diff"] == pytest.approx(0.1)
    assert so[0]["b abs diff"] == pytest.approx(0.0)
    # measured 3000 / 4000, predicted 3000 / 3000
    assert so[1]["a abs diff"] == pytest.approx(0.25)
    assert so[2]["a median abs diff"] == pytest.approx(0.175)
    assert so[2]["a max abs diff"] == pytest.approx(0.25)


def test_pairs_respect_power_cap_and_replica_size():
    rows = [
        phase("h200_sxm", 1, 10.0, 10.0).m,                      # Offline, uncapped
        phase("h200_sxm", 1, 9.0, 9.0, tpot_ms=200, cap=500).m,   # MaxQ Server: no pair
        phase("b200", 1, 10.0, 10.0).m,                          # two Offline rows
        phase("b200", 8, 10.0, 10.0).m,
        phase("b200", 8, 9.0, 9.0, tpot_ms=200).m,               # pairs the 8-GPU one
        phase("b200", 4, 9.0, 9.0, tpot_ms=40).m,                # ambiguous: no pair
    ]
    assert [(s, o) for _l, s, o in server_offline_pairs(rows)] == [(4, 3)]


def test_bands_and_domains():
    assert [concurrency_band(SimpleNamespace(kind="serving", concurrency=c))
            for c in (1, 64, 65, 512, 513)] == ["<= 64", "<= 64", "65-512", "65-512", "> 512"]
    assert concurrency_band(SimpleNamespace(kind="phase")) == PHASE_BAND
    assert domain_class(72) == RACK_SCALE
    assert domain_class(8) == domain_class(None) == BOARD


def test_methods_of_different_lengths_are_refused(pa):
    a = rows_a()
    with pytest.raises(ValueError, match="different numbers"):
        pa.split_tables({"a": a, "b": a[:-1]}, DOMAINS.get, VENDORS.get)


def test_fill_doc_replaces_marked_blocks_only(pa):
    doc = ("intro\n" + pa.marked("x", "old x") + "\nmiddle\n" + pa.marked("y", "old y")
           + "\nend\n")
    new, done = pa.fill_doc(doc, {"x": "| new |", "z": "absent"})
    assert done == ["x"]
    assert new == ("intro\n" + pa.marked("x", "| new |") + "\nmiddle\n"
                   + pa.marked("y", "old y") + "\nend\n")


def test_blocks_render_every_table(pa, tables):
    blocks = pa.split_blocks(tables, ["a", "b"], markdown=True)
    assert list(blocks) == ["throughput-domain-concurrency", "ttft-domain-concurrency",
                            "power-vendor", "server-offline"]
    _title, text = blocks["throughput-domain-concurrency"]
    assert f"| domain: {RACK_SCALE} | 4 | +19.2 / 34.2 / 47.0 | +0.0 / 0.0 / 0.0 |" in text
    _title, text = blocks["server-offline"]
    assert "| all 2 pairs: median (max) abs diff | - | 0.17 (0.25) | 0.00 (0.00) |" in text


def test_quick_subset_keeps_phase_rows_of_every_file(pa):
    # two files' phase rows share row numbers, accelerator and model
    rows = [SimpleNamespace(kind="phase", row=1, hardware="h200_sxm", model="m"),
            SimpleNamespace(kind="phase", row=1, hardware="h200_sxm", model="m")]
    assert len(pa.quick_subset(rows)) == 2


def test_measurement_files_are_the_folder_csvs(pa, tmp_path):
    for name in ("b.csv", "a.csv", "notes.yaml"):
        (tmp_path / name).write_text("")
    assert [f.name for f in pa.measurement_files(tmp_path)] == ["a.csv", "b.csv"]


def test_row_records_carry_each_methods_row(pa):
    """--rows-json: one record per row, in row order, with the row's line, hardware,
    kind, scenario and concurrency band and every method's ``as_dict`` of that row; on
    two shipped serving rows (4 requests in flight: band <= 64) and one MLPerf row."""
    from dcplan.catalog import load_catalog
    from dcplan.perf.calibration import evaluate_rows
    from dcplan.perf.measurements import load_measurements
    from dcplan.perf.params import NO_CALIBRATION, load_perf_inputs

    catalog = load_catalog()
    pin = load_perf_inputs(catalog, NO_CALIBRATION, benchmarks=True)
    folder = BENCH.parent.parent / "catalogs" / "measurements"
    serving_rows = [m for m in load_measurements(folder / "inferencex_deepseek_r1.csv",
                                                 catalog) if m.concurrency == 4][:2]
    phase_row = load_measurements(folder / "mlperf_inference.csv", catalog)[0]
    rows = serving_rows + [phase_row]
    res = evaluate_rows(rows, catalog, pin.defaults, benchmarks=pin.benchmarks)
    results = {"a": res, "b": list(reversed(res))}
    recs = pa.row_records(results)
    assert len(recs) == 3 and pa.row_records({}) == []
    for i, (rec, m) in enumerate(zip(recs, rows, strict=True)):
        assert rec["line"] == m.line and rec["hardware"] == m.hardware
        assert rec["kind"] == m.kind
        assert rec["methods"]["a"] == res[i].as_dict()
        assert rec["methods"]["b"] == res[2 - i].as_dict()
    assert [r["band"] for r in recs] == ["<= 64", "<= 64", "phase rows (MLPerf, wide EP)"]
    assert recs[2]["scenario"] == ("server" if phase_row.tpot_ms else "offline")


@pytest.mark.parametrize("args", [["--workers", "0"], ["--starts", "-1"],
                                  ["--fold-starts", "two"]])
def test_bench_counts_are_checked_before_any_fit(pa, args, capsys):
    """A start or worker count below its minimum, or not a number, stops the bench with
    argparse's usage error (exit 2) naming the option, before anything is loaded."""
    with pytest.raises(SystemExit) as info:
        pa.main(args)
    assert info.value.code == 2
    assert args[0] in capsys.readouterr().err


def _row(model, pred):
    """A serving row of ``model`` measured at 100 output tokens/s per GPU."""
    r = serving("b200", 8, pred)
    r.m.model, r.m.scenario = model, "chat"
    return r


def test_start_spread_by_hand(pa):
    """Two folds, two starts each, % errors of output tokens/s per GPU:

    ======  =====  ==========  ==========  =====
    fold    model  start 0     start 1     kept
    ======  =====  ==========  ==========  =====
    A       moe    +10, -30    -20, +40    1
    A       dense  +50         +5
    B       moe    +60         -4          0
    ======  =====  ==========  ==========  =====

    MoE per fold: A 20 / 30, B 60 / 4. Pooled over one start per fold (A, B): (0, 0)
    median(10, 30, 60) = 30, (0, 1) 10, (1, 0) 40 (the kept), (1, 1) 20. Dense: fold A
    alone, 50 / 5, kept 5."""
    cat = SimpleNamespace(get=lambda kind, mid: SimpleNamespace(is_moe=mid == "moe"))
    fold_a = [[_row("moe", 110.0), _row("moe", 70.0), _row("dense", 150.0)],
              [_row("moe", 80.0), _row("moe", 140.0), _row("dense", 105.0)]]
    fold_b = [[_row("moe", 160.0)], [_row("moe", 96.0)]]
    by_fold = [("A", 1, fold_a), ("B", 0, fold_b)]
    moe = pa.start_spread(by_fold, cat, "MoE", chunk=3)   # two blocks of choices
    assert [(f["group"], f["rows"], f["kept"]) for f in moe["folds"]] == [
        ("A", 2, 1), ("B", 1, 0)]
    assert moe["folds"][0]["medians"] == pytest.approx([20.0, 30.0])
    assert moe["folds"][1]["medians"] == pytest.approx([60.0, 4.0])
    assert moe["kept"] == pytest.approx(40.0)
    assert moe["same"] == pytest.approx([30.0, 20.0])
    assert (moe["min"], moe["max"], moe["choices"]) == (pytest.approx(10.0),
                                                        pytest.approx(40.0), 4)
    dense = pa.start_spread(by_fold, cat, "dense")
    assert [f["group"] for f in dense["folds"]] == ["A"]
    assert (dense["kept"], dense["min"], dense["max"], dense["choices"]) == (
        pytest.approx(5.0), pytest.approx(5.0), pytest.approx(50.0), 2)
    text = pa.start_block(moe, "MoE", markdown=True)
    assert "| A | 2 | 20.0 | 30.0* |" in text and "| B | 1 | 60.0* | 4.0 |" in text
    assert "40.0 with each fold at the start its fit keeps" in text
    assert "10.0-40.0 over every choice of one start per fold (4 choices)" in text
    # one start per fold: no spread to show
    assert pa.start_spread([("A", 0, fold_a[:1])], cat, "MoE") is None


def test_server_offline_ratios_by_hand():
    """Per GPU: a 4-GPU Server replica against a 1-GPU Offline one; a missing prediction."""
    from dcplan.perf.calibration import server_offline_ratios

    res = [
        phase("b200", 1, 1000.0, 900.0),                       # Offline, 1 GPU per replica
        phase("b200", 4, 2000.0, 2700.0, tpot_ms=175),         # Server, 4 GPUs
        phase("h200_sxm", 1, 400.0, 500.0, date="2024-08-28"),
        phase("h200_sxm", 1, 300.0, None, tpot_ms=200, date="2024-08-28"),
        phase("mi300x", 1, 300.0, 300.0, tpot_ms=200),         # no Offline row: no pair
    ]
    got = server_offline_ratios(res)
    assert [(g["server_row"], g["offline_row"]) for g in got] == [(1, 0), (3, 2)]
    # measured (2000 / 4) / 1000 = 0.5, predicted (2700 / 4) / 900 = 0.75
    assert got[0]["measured"] == pytest.approx(0.5)
    assert got[0]["predicted"] == pytest.approx(0.75)
    assert got[0]["abs_diff"] == pytest.approx(0.25)
    assert got[0]["configuration"] == "b200 llama fp4 2025-04-02, TPOT 175 ms"
    # measured 300 / 400 = 0.75; the Server row has no prediction
    assert got[1]["measured"] == pytest.approx(0.75)
    assert got[1]["predicted"] is None and got[1]["abs_diff"] is None


def test_error_splits_read_the_domain_from_the_catalog():
    """The library's one-method table (what `dcplan perf validate` prints) on the same
    rows: the catalog puts gb200_gpu at rack scale, and the figures are the hand-computed
    ones of method ``a`` above."""
    from dcplan.catalog import load_catalog
    from dcplan.perf.calibration import error_splits

    t = {(g["split"], g["value"]): g for g in error_splits(rows_a(), load_catalog())["throughput"]}
    for key, (rows, signed, median, p90) in {
            ("all", "all"): (10, 5.0, 22.5, 41.0),
            ("domain", BOARD): (6, -2.5, 15.0, 27.5),
            ("domain", RACK_SCALE): (4, (10 + 85 / 3) / 2, (85 / 3 + 40) / 2, 47.0),
            ("concurrency", "> 512"): (2, 22.5, 27.5, 45.5)}.items():
        g = t[key]
        assert g["rows"] == rows
        assert (g["median_signed_pct"], g["median_abs_pct"], g["p90_abs_pct"]) == (
            pytest.approx(signed), pytest.approx(median), pytest.approx(p90))
