"""Calibration recovers known parameters; measurement CSVs (both schemas) are validated."""

from __future__ import annotations

import csv
import hashlib
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from dcplan import perf
from dcplan.catalog import load_catalog
from dcplan.errors import InputError
from dcplan.perf import load_calibration
from dcplan.perf.calibration import (
    calibrate,
    calibrate_starts,
    evaluate_rows,
    leave_one_out,
    leave_one_out_starts,
    report,
)
from dcplan.perf.measurements import (
    SERVING_COLUMNS,
    Measurement,
    ServingMeasurement,
    load_measurement_files,
    load_measurements,
)
from dcplan.perf.params import (
    Calibration,
    SoftwareFit,
    load_perf_defaults,
    load_perf_inputs,
    save_calibration,
)
from dcplan.perf.predict import ServingRows, predict_phase
from dcplan.schema import Precision

#: The shipped performance defaults and calibration (the fixture catalogs have none of
#: their own); the model reads no file itself.
SHIPPED_PERF = load_perf_inputs(benchmarks=True)
#: What the shipped measurement files' benchmarks ran (every catalog here reads the
#: shipped measurements/ folder: none has its own perf_defaults.yaml).
BENCH = SHIPPED_PERF.benchmarks
PERF_KW = {"defaults": SHIPPED_PERF.defaults, "calibration": SHIPPED_PERF.calibration}
rack_performance = partial(perf.rack_performance, **PERF_KW)


FIX = Path(__file__).parent / "fixtures" / "perf"
ROOT = Path(__file__).parent.parent
#: The reference copy beside the checkout (../shared), where this machine has one.
SHARED = next((p / "shared" / "reference" / "serving" / "inferencex_deepseek_r1.csv"
               for p in ROOT.parents
               if (p / "shared" / "reference" / "serving").is_dir()),
              ROOT.parent / "shared" / "reference" / "serving" / "inferencex_deepseek_r1.csv")
INFERENCEX = ROOT / "catalogs" / "measurements" / "inferencex_deepseek_r1.csv"
TRUE = {"compute_eff_frac": 0.62, "decode_compute_eff_frac": 0.33, "hbm_eff_frac": 0.71,
        "step_overhead_s": 0.0035, "power_base_frac": 0.25, "power_compute_weight": 0.6,
        "power_memory_weight": 0.3}


@pytest.fixture(scope="module")
def cat():
    return load_catalog(FIX / "catalog")


def _synthetic(cat, defaults):
    true = replace(defaults.for_hardware("tgpu"), **TRUE)
    rows = []
    n = 0
    for model, gpus in (("dense8", 1), ("dense70", 2), ("moe", 4)):
        for batch in (1, 8, 64, 512):
            for ctx in (500.0, 4000.0):
                for phase in ("decode", "prefill"):
                    n += 1
                    m = Measurement(n, "tgpu", model, Precision.fp8, phase, gpus,
                                    batch if phase == "decode" else max(batch // 64, 1),
                                    ctx, 1.0, 1.0)
                    p = predict_phase(m, cat, true, defaults.physics, defaults, BENCH.lengths)
                    # measured = predicted throughput: the power at the model's point
                    rows.append(replace(m, tokens_per_s=p.tokens_per_s,
                                        power_w=p.power_w_model_point))
    return rows


@pytest.mark.slow
def test_calibration_recovers_known_parameters(cat):
    defaults = load_perf_defaults()
    rows = _synthetic(cat, defaults)
    cal = calibrate(rows, cat, defaults, prior_weight=0.0, max_nfev=200, benchmarks=BENCH)
    after = report(evaluate_rows(rows, cat, defaults, cal, benchmarks=BENCH))
    assert after["throughput"]["max_abs_pct"] < 0.5
    assert after["power"]["max_abs_pct"] < 0.5
    got = dict(dict(cal.hardware)["tgpu"])
    for name in ("compute_eff_frac", "decode_compute_eff_frac", "hbm_eff_frac",
                 "power_base_frac", "power_compute_weight", "power_memory_weight"):
        assert got[name] == pytest.approx(TRUE[name], rel=0.03), name


@pytest.mark.slow
def test_a_perturbed_start_finds_the_same_identified_parameters(cat):
    """On rows made by the model from known values, a fit started away from the prior
    (bench/calibration_starts.py) recovers the same values; with no noise it is the
    prior start's fit exactly."""
    defaults = load_perf_defaults()
    rows = _synthetic(cat, defaults)
    kw = {"prior_weight": 0.0, "max_nfev": 200, "benchmarks": BENCH}
    cal = calibrate(rows, cat, defaults, start_seed=1, start_sd=0.3, **kw)
    got = dict(dict(cal.hardware)["tgpu"])
    for name in ("compute_eff_frac", "decode_compute_eff_frac", "hbm_eff_frac"):
        assert got[name] == pytest.approx(TRUE[name], rel=0.03), name
    assert dict(cal.meta)["cost"] >= 0.0 and dict(cal.meta)["termination"]
    same = calibrate(rows, cat, defaults, start_seed=1, start_sd=0.0, max_nfev=3,
                     prior_weight=0.0, benchmarks=BENCH)
    prior = calibrate(rows, cat, defaults, max_nfev=3, prior_weight=0.0, benchmarks=BENCH)
    moved = calibrate(rows, cat, defaults, start_seed=1, start_sd=0.3, max_nfev=3,
                      prior_weight=0.0, benchmarks=BENCH)
    assert dict(same.hardware) == dict(prior.hardware)
    assert dict(moved.hardware) != dict(prior.hardware)


@pytest.mark.slow
def test_several_starts_keep_the_lowest_loss_that_did_not_stop_steeply(cat):
    """calibrate(starts=2) fits from the prior and seeds 1 and 2, records each, and keeps
    the lowest loss among the fits whose gradient is not above their loss (else the
    lowest of all): the kept calibration is that start's own fit, value for value."""
    defaults = load_perf_defaults()
    rows = _synthetic(cat, defaults)
    kw = {"prior_weight": 0.0, "max_nfev": 3, "benchmarks": BENCH, "start_sd": 0.3}
    cal = calibrate(rows, cat, defaults, starts=2, **kw)
    meta = dict(cal.meta)
    runs = meta["starts"]
    assert [r["start"] for r in runs] == ["prior", "seed 1", "seed 2"]
    for r in runs:
        assert r["steep"] == (r["first_order_optimality"] > r["cost"])
    best = min(runs, key=lambda r: (r["steep"], r["cost"]))
    seed = None if best["start"] == "prior" else int(best["start"].split()[1])
    alone = calibrate(rows, cat, defaults, start_seed=seed, **kw)
    assert dict(alone.hardware) == dict(cal.hardware)
    assert meta["start"] == dict(alone.meta)["start"]
    assert meta["cost"] == pytest.approx(best["cost"], abs=1e-3)
    # one fit records no starts
    assert "starts" not in dict(alone.meta)


@pytest.mark.slow
def test_starts_and_folds_fitted_side_by_side_give_the_same_results(cat):
    """workers=2 fits the starts (calibrate) and the folds (leave_one_out) in two
    processes: the same calibration and the same held-out predictions as one process,
    and each fold's predictions are those of a fit without its rows, in row order."""
    defaults = load_perf_defaults()
    rows = _synthetic(cat, defaults)[::4]
    kw = {"prior_weight": 0.0, "max_nfev": 2, "benchmarks": BENCH, "start_sd": 0.3}
    assert calibrate(rows, cat, defaults, starts=1, workers=2, **kw) == \
        calibrate(rows, cat, defaults, starts=1, **kw)
    key = lambda m: m.model  # noqa: E731
    one = leave_one_out(rows, cat, defaults, key=key, starts=1, **kw)
    two = leave_one_out(rows, cat, defaults, key=key, starts=1, workers=2, **kw)
    assert [r.m for r in one] == rows and [r.m for r in two] == rows
    assert [r.as_dict() for r in one] == [r.as_dict() for r in two]
    held = [m for m in rows if m.model == "moe"]
    rest = [m for m in rows if m.model != "moe"]
    alone = evaluate_rows(held, cat, defaults,
                          calibrate(rest, cat, defaults, starts=1, **kw), benchmarks=BENCH)
    assert [r.as_dict() for r in one if r.m.model == "moe"] == [r.as_dict() for r in alone]


@pytest.mark.slow
def test_each_start_of_every_fold(cat):
    """calibrate_starts returns calibrate's fit and every start's own fit (each equal to
    a one-start fit from that start); leave_one_out_starts returns leave_one_out's
    predictions and, per fold, its rows under each start's fit, the kept one's among
    them."""
    defaults = load_perf_defaults()
    rows = _synthetic(cat, defaults)[::4]
    kw = {"prior_weight": 0.0, "max_nfev": 2, "benchmarks": BENCH, "start_sd": 0.3}
    kept, each = calibrate_starts(rows, cat, defaults, starts=1, **kw)
    assert kept == calibrate(rows, cat, defaults, starts=1, **kw)
    assert [c is kept for c in each].count(True) == 1
    for seed, c in zip((None, 1), each, strict=True):
        alone = calibrate(rows, cat, defaults, start_seed=seed, **kw)
        assert (c.hardware, c.default) == (alone.hardware, alone.default)
    key = lambda m: m.model  # noqa: E731
    plain = leave_one_out(rows, cat, defaults, key=key, starts=1, **kw)
    got, by_fold = leave_one_out_starts(rows, cat, defaults, key=key, starts=1, **kw)
    assert [r.as_dict() for r in got] == [r.as_dict() for r in plain]
    assert sorted(g for g, _, _ in by_fold) == sorted({m.model for m in rows})
    for g, k, per in by_fold:
        held = [m for m in rows if m.model == g]
        rest = [m for m in rows if m.model != g]
        assert [r.as_dict() for r in per[k]] == [r.as_dict() for r in plain if r.m.model == g]
        for seed, res in zip((None, 1), per, strict=True):
            alone = evaluate_rows(held, cat, defaults,
                                  calibrate(rest, cat, defaults, start_seed=seed, **kw),
                                  benchmarks=BENCH)
            assert [r.as_dict() for r in res] == [r.as_dict() for r in alone]
    # the starts' fits differ, so the checks above tell them apart
    assert any([r.as_dict() for r in per[0]] != [r.as_dict() for r in per[1]]
               for _, _, per in by_fold)
    # without each_start, no per-start predictions
    assert leave_one_out_starts(rows, cat, defaults, key=key, starts=1, each_start=False,
                                **kw)[1] == []


def test_kept_start_is_the_lowest_loss_off_a_steep_slope():
    from dcplan.perf.calibration import kept_start

    assert kept_start([(False, 3.0), (True, 1.0), (False, 2.0)]) == 2
    assert kept_start([(True, 3.0), (True, 1.0)]) == 1  # all steep: the lowest loss
    assert kept_start([(False, 2.0), (False, 2.0)]) == 0  # a tie: the first start


def test_folds_kept_on_disk_are_read_back_and_not_fitted_again(cat, tmp_path, monkeypatch):
    """A run with a FoldCache writes one file per fold and start; a second run with the
    same fingerprint fits nothing and gives the same predictions; another fingerprint
    fits again."""
    from dcplan.perf import calibration as calmod

    defaults = load_perf_defaults()
    rows = _synthetic(cat, defaults)[::4]
    kw = {"prior_weight": 0.0, "max_nfev": 2, "benchmarks": BENCH, "start_sd": 0.3}
    key = lambda m: m.model  # noqa: E731
    cache = calmod.FoldCache(tmp_path / "folds", "code and rows v1")
    first, by_fold = leave_one_out_starts(rows, cat, defaults, key=key, starts=1,
                                          cache=cache, **kw)
    folds = {m.model for m in rows}
    assert len(list((tmp_path / "folds").glob("fold-*.pkl"))) == 2 * len(folds)
    assert not list((tmp_path / "folds").glob(".*"))  # no temporary left

    def no_fit(*_a, **_k):
        raise AssertionError("fitted again")

    monkeypatch.setattr(calmod, "calibrate", no_fit)
    again, by_fold2 = leave_one_out_starts(rows, cat, defaults, key=key, starts=1,
                                           cache=cache, **kw)
    assert [r.as_dict() for r in again] == [r.as_dict() for r in first]
    assert [(g, k) for g, k, _ in by_fold2] == [(g, k) for g, k, _ in by_fold]
    other = calmod.FoldCache(tmp_path / "folds", "code and rows v2")
    with pytest.raises(AssertionError, match="fitted again"):
        leave_one_out_starts(rows, cat, defaults, key=key, starts=1, cache=other, **kw)


@pytest.mark.slow
def test_calibration_with_prior_stays_close(cat):
    defaults = load_perf_defaults()
    rows = _synthetic(cat, defaults)
    cal = calibrate(rows, cat, defaults, benchmarks=BENCH)
    got = dict(dict(cal.hardware)["tgpu"])
    for name in ("compute_eff_frac", "decode_compute_eff_frac", "hbm_eff_frac"):
        assert got[name] == pytest.approx(TRUE[name], rel=0.1), name
    # one accelerator: the pooled default is the same fit
    assert dict(cal.default)["hbm_eff_frac"] == pytest.approx(got["hbm_eff_frac"], rel=0.1)


@pytest.mark.slow
def test_serving_rows_recover_physics(cat):
    """Synthetic serving rows made by the model: the fit finds acceptance and overhead."""
    defaults = load_perf_defaults()
    true_phys = replace(defaults.physics, mtp_acceptance_frac=0.55)
    true_hw = replace(defaults.for_hardware("tgpu"), decode_compute_eff_frac=0.3,
                      hbm_eff_frac=0.65, ttft_overhead_s=0.12)
    base = load_measurements(FIX / "good_serving.csv", cat)
    rows = []
    for conc in (2, 8, 32, 128):
        for spec in ("none", "mtp"):
            for m in base:
                if m.model == "moe":
                    rows.append(replace(m, concurrency=conc, speculative=spec))
    sr = ServingRows(rows, cat, defaults, BENCH.lengths, BENCH.recipes)
    pred = sr.predict({"tgpu": true_hw}, true_phys)
    rows = [replace(m, output_tokens_per_s_per_gpu=float(pred["output_tokens_per_s_per_gpu"][i]),
                    median_tpot_ms=float(pred["median_tpot_ms"][i]),
                    median_ttft_s=float(pred["median_ttft_s"][i]),
                    p99_tpot_ms=float(pred["p99_tpot_ms"][i]), power_w_per_gpu=None)
            for i, m in enumerate(rows)]
    cal = calibrate(rows, cat, defaults, prior_weight=0.0, per_hardware=False, max_nfev=120,
                    benchmarks=BENCH)
    after = report(evaluate_rows(rows, cat, defaults, cal, benchmarks=BENCH))
    assert after["throughput"]["median_abs_pct"] < 1.0
    assert dict(cal.physics)["mtp_acceptance_frac"] == pytest.approx(0.55, rel=0.05)
    assert dict(cal.default)["ttft_overhead_s"] == pytest.approx(0.12, rel=0.1)


def test_calibration_file_round_trip_changes_rack_performance(cat, tmp_path):
    cal = Calibration.from_dicts({"tgpu": {"decode_compute_eff_frac": 0.2, "hbm_eff_frac": 0.4}},
                                 {}, "test", physics={"moe_imbalance_frac": 0.5})
    path = tmp_path / "cal.yaml"
    save_calibration(cal, path, {"tgpu": 3}, {"rows": 3})
    loaded = load_calibration(path, known_accelerators=["tgpu"])
    assert loaded.key == cal.key
    base = rack_performance(cat, "track8", "dense70", "chat", calibration=None)
    slower = rack_performance(cat, "track8", "dense70", "chat", calibration=loaded)
    assert slower.goodput_tokens_per_s < base.goodput_tokens_per_s
    assert rack_performance(cat, "track8", "dense70", "chat",
                            calibration=load_perf_inputs(cat, path).calibration) == slower
    # without one, the loader takes the shipped fit next to perf_defaults.yaml
    shipped = rack_performance(cat, "track8", "dense70", "chat",
                               calibration=load_perf_inputs(cat).calibration)
    assert shipped == rack_performance(
        cat, "track8", "dense70", "chat",
        calibration=load_calibration(ROOT / "catalogs" / "perf_calibration.yaml"))
    assert shipped != base


def test_bad_calibration_file(tmp_path):
    path = tmp_path / "cal.yaml"
    path.write_text("kind: dcplan_perf_calibration\nhardware:\n  tgpx:\n"
                    "    hbm_eff: 0.5\n    compute_eff_frac: 3\nphysics:\n  moe_imbalance: 1\n")
    with pytest.raises(InputError) as exc:
        load_calibration(path, known_accelerators=["tgpu"])
    msg = str(exc.value)
    assert "4 problems" in msg
    assert "unknown accelerator id" in msg and "did you mean 'tgpu'" in msg
    assert "field 'hbm_eff'" in msg and "hbm_eff_frac" in msg
    assert "field 'compute_eff_frac'" in msg and "between" in msg
    assert "field 'moe_imbalance'" in msg and "moe_imbalance_frac" in msg
    other = tmp_path / "other.yaml"
    other.write_text("a: 1\n")
    with pytest.raises(InputError, match="not a calibration file"):
        load_calibration(other)


# ------------------------------------------------------------ phase-level files


def test_bad_measurements_missing_column(cat):
    with pytest.raises(InputError) as exc:
        load_measurements(FIX / "bad_measurements.csv", cat)
    msg = str(exc.value)
    assert "field 'power_w'" in msg and "required column is missing" in msg


def test_bad_measurement_rows(cat, tmp_path):
    lines = (FIX / "bad_measurements.csv").read_text().splitlines()
    path = tmp_path / "m.csv"
    path.write_text("\n".join([lines[0] + ",power_w"] + [ln + "," for ln in lines[1:]]) + "\n")
    with pytest.raises(InputError) as exc:
        load_measurements(path, cat)
    msg = str(exc.value)
    assert "entry 'row 2', field 'hardware': unknown accelerator id 'tgpx'" in msg
    assert "did you mean 'tgpu'" in msg
    assert "entry 'row 3', field 'model': unknown model id 'dense71'" in msg
    assert "entry 'row 4', field 'batch': must be > 0 (got -4)" in msg
    assert "entry 'row 5', field 'phase'" in msg
    assert "entry 'row 5', field 'tokens_per_s': must be > 0 (got -3)" in msg
    assert ":5," in msg  # row 4 is line 5 of the file
    assert "5 problems" in msg


def test_phase_rows_reject_text_in_numbers_and_impossible_tp(cat, tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("hardware,model,precision,phase,gpus,batch,context_tokens,tokens_per_s,"
                    "power_w\ntgpu,dense70,fp8,decode,2,lots,1000,2000,\n"
                    "tgpu,dense70,fp8,decode,3,64,1000,2000,\n")
    with pytest.raises(InputError) as exc:
        load_measurements(path, cat)
    msg = str(exc.value)
    assert "entry 'row 1', field 'batch': 'lots' is not a whole number" in msg
    assert "entry 'row 2', field 'gpus': tensor parallelism 3 does not divide" in msg


def test_good_measurements_load(cat):
    rows = load_measurements(FIX / "good_measurements.csv", cat)
    assert len(rows) == 4 and rows[3].power_w is None and rows[0].power_w == 1500
    assert all(isinstance(m, Measurement) for m in rows)


# ---------------------------------------------------------------- serving files


def test_serving_header_is_the_shared_files_columns():
    header = next(csv.reader(open(FIX / "good_serving.csv")))
    assert tuple(header) == SERVING_COLUMNS


def test_bad_serving_file_names_row_and_column(cat):
    with pytest.raises(InputError) as exc:
        load_measurements(FIX / "bad_serving.csv", cat)
    msg = str(exc.value)
    assert "11 problems" in msg
    assert ":2, entry 'row 1', field 'hardware': unknown accelerator id 'tgpx'" in msg
    assert "entry 'row 2', field 'model': unknown model id 'moe9'; did you mean 'moe'" in msg
    assert "entry 'row 3', field 'concurrency': 'sixteen' is not a whole number" in msg
    assert ("entry 'row 4', field 'decode_ep': expert parallelism 12 is larger than the "
            "scale-up domain of tgpu (8)") in msg
    assert "entry 'row 5', field 'gpus': prefill_gpus + decode_gpus = 16 but gpus = 24" in msg
    assert "entry 'row 6', field 'decode_ep': expert parallelism 4 on dense model" in msg
    assert "entry 'row 7', field 'decode_dp_attention': 'maybe' is not true or false" in msg
    assert "entry 'row 8', field 'speculative': dense70 has no multi-token-prediction" in msg
    assert ("entry 'row 9', field 'decode_tp': parallelism 16 needs 16 GPUs per instance but "
            "the row has 8") in msg


def test_serving_file_missing_and_unknown_columns(cat, tmp_path):
    path = tmp_path / "s.csv"
    cols = [c for c in SERVING_COLUMNS if c != "concurrency"] + ["concurency"]
    path.write_text(",".join(cols) + "\n")
    with pytest.raises(InputError) as exc:
        load_measurements(path, cat)
    msg = str(exc.value)
    assert "field 'concurrency': required column is missing" in msg
    assert "field 'concurency': unknown column; did you mean 'concurrency'" in msg


def test_good_serving_rows_predicted_at_their_configuration(cat):
    rows = load_measurements(FIX / "good_serving.csv", cat)
    assert all(isinstance(m, ServingMeasurement) for m in rows)
    res = evaluate_rows(rows, cat, load_perf_defaults(), benchmarks=BENCH)
    cfg = [r.pred.configuration for r in res]
    assert cfg[0] == "TP8 EP8" and cfg[1].startswith("DEP8, mtp")
    assert cfg[2] == "prefill 1 x DEP8 / decode 2 x DEP8"
    assert cfg[3] == "TP2"
    assert "spans 2 scale-up domains" in res[4].pred.notes
    for r in res:
        assert not r.pred.flag and r.pred.output_tokens_per_s_per_gpu > 0
        assert r.pred.median_tpot_ms > 0 and r.pred.median_ttft_s > 0
    # cross-domain TP pays its all-reduces over scale-out: slower than TP8
    assert res[4].pred.median_tpot_ms > res[0].pred.median_tpot_ms * 0.5


def test_row_that_does_not_fit_is_flagged_not_replaced(cat, tmp_path):
    lines = (FIX / "good_serving.csv").read_text().splitlines()
    path = tmp_path / "s.csv"
    # the 70 GB MoE on one 100 GB GPU leaves no room for 1024-token sequences? it does;
    # the 70B dense model on one GPU at bf16 (140 GB) does not fit
    path.write_text(lines[0] + "\n" + lines[4].replace(",2,1,2,1,", ",1,1,1,1,").replace(
        "tgpu,dense70,fp8", "tgpu,dense70,bf16") + "\n")
    [res] = evaluate_rows(load_measurements(path, cat), cat, load_perf_defaults(),
                          benchmarks=BENCH)
    assert "cannot hold this row" in res.pred.flag
    assert res.pred.output_tokens_per_s_per_gpu is None and res.error("throughput") is None


def test_mixed_files_load_together(cat):
    rows = load_measurement_files([FIX / "good_measurements.csv", FIX / "good_serving.csv"], cat)
    assert [m.kind for m in rows] == ["phase"] * 4 + ["serving"] * 5
    with pytest.raises(InputError) as exc:
        load_measurement_files([FIX / "bad_serving.csv", FIX / "bad_measurements.csv"], cat)
    assert "bad_serving.csv" in str(exc.value) and "bad_measurements.csv" in str(exc.value)


# ------------------------------------------------------------------ shipped data


def test_shipped_mlperf_file_loads():
    real = load_catalog()
    rows = load_measurements(ROOT / "catalogs" / "measurements" / "mlperf_inference.csv", real)
    assert {m.hardware for m in rows} == {"h100_sxm", "h200_sxm", "b200", "gb200_gpu",
                                          "mi300x", "mi325x"}
    assert {m.model for m in rows} == {"llama2_70b", "llama31_405b"}
    assert all(m.source and m.as_of and m.notes for m in rows)


@pytest.mark.slow
def test_shipped_calibration_keeps_dense_llama_within_ten_percent():
    real = load_catalog()
    rows = load_measurements(ROOT / "catalogs" / "measurements" / "mlperf_inference.csv", real)
    cal = load_calibration(ROOT / "catalogs" / "perf_calibration.yaml")
    res = report(evaluate_rows(rows, real, load_perf_defaults(), cal,
                               benchmarks=BENCH))["throughput"]
    assert res["median_abs_pct"] <= 10.0 and res["rows"] == 22


@pytest.mark.slow
def test_shipped_mlperf_file_calibrates_on_its_own():
    real = load_catalog()
    rows = load_measurements(ROOT / "catalogs" / "measurements" / "mlperf_inference.csv", real)
    defaults = load_perf_defaults()
    before = report(evaluate_rows(rows, real, defaults,
                                  benchmarks=BENCH))["throughput"]["median_abs_pct"]
    cal = calibrate(rows, real, defaults, benchmarks=BENCH)
    after = report(evaluate_rows(rows, real, defaults, cal,
                                 benchmarks=BENCH))["throughput"]["median_abs_pct"]
    assert after < before
    assert after <= 11.0


def test_shipped_inferencex_copy_matches_the_shared_file():
    """The shipped copy has the reference file's digest (tests/fixtures/perf/README.md);
    where the reference lies beside the checkout, the recorded digest is its digest."""
    recorded = (FIX / "inferencex_deepseek_r1.sha256").read_text().split()[0]
    assert hashlib.sha256(INFERENCEX.read_bytes()).hexdigest() == recorded
    if SHARED.exists():
        assert hashlib.sha256(SHARED.read_bytes()).hexdigest() == recorded


@pytest.mark.slow
def test_inferencex_rows_validate_and_calibrate():
    real = load_catalog()
    rows = load_measurements(INFERENCEX, real)
    assert len(rows) == 1328
    defaults = load_perf_defaults()
    before = report(evaluate_rows(rows, real, defaults, benchmarks=BENCH))
    # 10 evaluations, not the shipped fit's 60: the fit's first steps take the a-priori
    # 71 % to under 10 % (25 evaluations: 9.1 %), at a sixth of the CPU time
    cal = calibrate(rows, real, defaults, benchmarks=BENCH, max_nfev=10)
    after = report(evaluate_rows(rows, real, defaults, cal, benchmarks=BENCH))
    assert after["throughput"]["median_abs_pct"] < before["throughput"]["median_abs_pct"]
    assert after["throughput"]["median_abs_pct"] <= 15.0
    assert after["tpot"]["median_abs_pct"] <= 15.0
    assert after["power"]["rows"] == 31
    assert np.isfinite(after["ttft"]["median_abs_pct"])


def test_serving_row_with_empty_optional_cells(cat, tmp_path):
    lines = (FIX / "good_serving.csv").read_text().splitlines()
    cells = lines[1].split(",")
    head = lines[0].split(",")
    for col in ("prefill_tp", "prefill_ep", "decode_ep", "decode_dp_attention", "speculative",
                "total_tokens_per_s_per_gpu", "p99_ttft_s", "power_w_per_gpu", "framework"):
        cells[head.index(col)] = ""
    path = tmp_path / "s.csv"
    path.write_text(lines[0] + "\n" + ",".join(cells) + "\n")
    [m] = load_measurements(path, cat)
    assert (m.prefill_tp, m.prefill_ep, m.decode_ep) == (8, 1, 1)
    assert m.speculative == "none" and not m.decode_dp_attention


# ------------------------------------------------------- software adjustments


def test_software_log_factors_hand_computed():
    """Engine offset relative to the planning engine, trend per year, cross-domain."""
    sw = SoftwareFit(knobs=(("efficiency", ("hbm_eff_frac",)), ("overhead", ("step_overhead_s",))),
                  engines=(("sglang", (("efficiency", -0.2), ("overhead", 0.1))),
                           ("trt", (("efficiency", 0.1), ("overhead", 0.3)))),
                  base_engine=(("dynamo-trt", "trt"),),
                  trend_per_year=(("efficiency", 0.2), ("overhead", -0.5)),
                  reference_date="2026-01-01", planning_engine=(("NVIDIA", "trt"),),
                  cross_domain=(("hbm_eff_frac", -0.4),))
    # sglang one year before the reference: -0.2 - 0.1 + 0.2 * (-1)
    f = sw.log_factors("NVIDIA", "sglang", "2025-01-01")
    assert f["hbm_eff_frac"] == pytest.approx(-0.5, abs=2e-3)
    assert f["step_overhead_s"] == pytest.approx(0.1 - 0.3 + 0.5, abs=2e-3)
    # a framework without its own offset takes its engine's; a later run is read at the
    # reference date (no extrapolation); a run spanning scale-up domains adds its offset
    assert sw.log_factors("NVIDIA", "dynamo-trt", "2027-06-01")["hbm_eff_frac"] == 0.0
    assert sw.log_factors("NVIDIA", "trt", "2026-01-01", spans=True)["hbm_eff_frac"] == -0.4
    # nor before the earliest run fitted: with it at 2025-07-02 (half a year back), a
    # run in 2020 is read there: -0.2 - 0.1 + 0.2 * (-0.5)
    early = replace(sw, earliest_date="2025-07-02")
    assert early.log_factors("NVIDIA", "sglang", "2020-01-01")["hbm_eff_frac"] == \
        pytest.approx(-0.4, abs=2e-3)
    assert early.log_factors("NVIDIA", "sglang", "2025-10-01")["hbm_eff_frac"] == \
        sw.log_factors("NVIDIA", "sglang", "2025-10-01")["hbm_eff_frac"]
    cal = Calibration(software=sw)
    base = load_perf_defaults().default
    moved = cal.apply_run(base, "NVIDIA", "sglang", "2026-01-01")
    assert moved.hbm_eff_frac == pytest.approx(base.hbm_eff_frac * np.exp(-0.3))
    assert cal.apply_run(base, "NVIDIA", "trt", "2026-01-01") == base


def test_shipped_calibration_software_section_round_trips(tmp_path):
    cal = load_calibration(ROOT / "catalogs" / "perf_calibration.yaml")
    assert cal.software is not None and cal.software.cross_domain
    assert {a for a, _ in cal.architecture} >= {"blackwell", "hopper", "cdna3", "cdna4"}
    path = tmp_path / "cal.yaml"
    save_calibration(cal, path)
    assert load_calibration(path).key == cal.key


def test_unmeasured_generation_takes_its_calibrate_like_architecture():
    """Rubin has no serving rows: it takes Blackwell's fitted efficiencies (the catalog's
    calibrate_like), not the NVIDIA average; a fitted architecture keeps its own."""
    from types import SimpleNamespace

    from dcplan.case import load_case
    from dcplan.perf.predict import calibration_architecture, hardware_params

    case = load_case(Path(__file__).resolve().parents[1] / "examples" / "minimal.yaml")
    cal, defaults = case.calibration, case.perf_defaults
    rubin = case.catalog.get("accelerators", "rubin")
    assert rubin.architecture == "rubin" and rubin.calibrate_like == "blackwell"
    assert "rubin" not in dict(cal.architecture) and "blackwell" in dict(cal.architecture)
    assert calibration_architecture(rubin, cal) == "blackwell"
    got = hardware_params(defaults, rubin.id, cal, rubin.vendor, "blackwell")
    want = dict(dict(cal.architecture)["blackwell"])
    assert got.compute_eff_frac == pytest.approx(want["compute_eff_frac"])
    fitted = SimpleNamespace(architecture="hopper", calibrate_like="blackwell")
    assert calibration_architecture(fitted, cal) == "hopper"
    assert calibration_architecture(rubin, None) == "rubin"


@pytest.mark.slow
def test_runs_far_below_their_repeats_are_counted_apart(tmp_path):
    """Hand-built file: one configuration run three times, one run at a third of the others."""
    from typer.testing import CliRunner

    from dcplan.cli import app
    from dcplan.perf.calibration import repeat_ratios

    lines = INFERENCEX.read_text().splitlines()
    head = lines[0].split(",")
    col = head.index("output_tokens_per_s_per_gpu")
    total = head.index("total_tokens_per_s_per_gpu")
    first = lines[1].split(",")
    rows = []
    for value in ("300", "100", "310", "290"):
        cells = list(first)
        cells[col], cells[total] = value, str(2 * float(value))
        rows.append(",".join(cells))
    other = lines[-1]  # another configuration, run once: never compared
    path = tmp_path / "runs.csv"
    path.write_text("\n".join([lines[0], *rows, other]) + "\n")
    real = load_catalog()
    results = evaluate_rows(load_measurements(path, real), real, load_perf_defaults(),
                            benchmarks=BENCH)
    ratios = repeat_ratios(results)
    # median of (300, 100, 310, 290) is 295
    assert [q[0] for q in ratios[:4]] == [4, 4, 4, 4]
    assert ratios[1][1] == pytest.approx(100 / 295)
    assert ratios[0][1] == pytest.approx(300 / 295)
    assert ratios[4] is None
    rep = report(results)
    assert rep["low_repeats"] == 1
    assert rep["throughput_without_low_repeats"]["rows"] == 4
    assert rep["throughput"]["rows"] == 5  # the main figures keep every row
    out = CliRunner().invoke(app, ["perf", "validate", str(path)])
    assert out.exit_code == 0, out.output
    assert "1 rows measured below 60% of the median of their configuration's runs" in out.output
    js = CliRunner().invoke(app, ["perf", "validate", str(path), "--json"])
    import json

    recs = json.loads(js.output)["rows"]
    assert [r["runs_of_configuration"] for r in recs] == [4, 4, 4, 4, None]
    assert recs[1]["measured_vs_runs_median"] == pytest.approx(100 / 295)


@pytest.mark.slow
def test_low_repeats_of_the_shipped_file_recomputed_from_the_csv():
    """The count of runs below 60 % of their configuration's median, recomputed with pandas."""
    import pandas as pd

    from dcplan.perf.calibration import REPEAT_LOW_FRAC, REPEAT_MIN_RUNS

    df = pd.read_csv(INFERENCEX)
    keys = ["hardware", "model", "precision", "input_tokens", "output_tokens", "concurrency",
            "gpus", "disaggregated", "prefill_gpus", "decode_gpus", "prefill_tp",
            "prefill_ep", "decode_tp", "decode_ep", "decode_dp_attention", "speculative",
            "framework"]
    g = df.fillna(-1).groupby(keys)["output_tokens_per_s_per_gpu"]
    n, med = g.transform("size"), g.transform("median")
    expected = int(((n >= REPEAT_MIN_RUNS)
                    & (df.output_tokens_per_s_per_gpu < REPEAT_LOW_FRAC * med)).sum())
    real = load_catalog()
    rows = load_measurements(INFERENCEX, real)
    rep = report(evaluate_rows(rows, real, load_perf_defaults(), benchmarks=BENCH))
    assert expected > 0
    assert rep["low_repeats"] == expected


def _first_row_changed(tmp_path, changes) -> Path:
    """A serving file: the shipped file's first row once per (column, value) change."""
    lines = INFERENCEX.read_text().splitlines()
    head = lines[0].split(",")
    rows = []
    for col, value in changes:
        cells = lines[1].split(",")
        cells[head.index(col)] = value
        rows.append(",".join(cells))
    path = tmp_path / "bad.csv"
    path.write_text("\n".join([lines[0], *rows]) + "\n")
    return path


def _problems_of(path) -> tuple[set, str]:
    with pytest.raises(InputError) as info:
        load_measurements(path, load_catalog())
    return {(p.entry, p.field) for p in info.value.problems}, str(info.value)


def test_serving_rows_with_bad_dates_or_beyond_the_context_are_refused(tmp_path):
    got, text = _problems_of(_first_row_changed(tmp_path, (
        ("date", "2026-13-45"), ("date", "yesterday"), ("input_tokens", "1000000"))))
    assert got == {("row 1", "date"), ("row 2", "date"), ("row 3", "input_tokens")}
    assert "'2026-13-45' is not a date" in text and "163,840" in text


def test_serving_rows_whose_measurements_contradict_each_other_are_refused(tmp_path):
    got, _ = _problems_of(_first_row_changed(tmp_path, (
        ("total_tokens_per_s_per_gpu", "10"), ("p99_ttft_s", "0.01"), ("p99_tpot_ms", "0.5"))))
    assert got == {("row 1", "total_tokens_per_s_per_gpu"), ("row 2", "p99_ttft_s"),
                   ("row 3", "p99_tpot_ms")}


def test_engine_the_fit_never_saw_takes_the_mean_fitted_engine():
    """An unfitted engine is a typical fitted engine (mean per knob of the engines,
    frameworks left out: what the fit reads an engine it cannot tell apart at), not
    offset 0; a row without a framework keeps 0, and a framework on an unfitted engine
    takes the typical one too."""
    sw = SoftwareFit(knobs=(("efficiency", ("hbm_eff_frac",)), ("overhead", ("step_overhead_s",))),
                     engines=(("atom", (("efficiency", -0.1), ("overhead", -0.1))),
                              ("dynamo-trt", (("efficiency", 0.5), ("overhead", 0.5))),
                              ("sglang", (("efficiency", -0.2), ("overhead", 0.1))),
                              ("trt", (("efficiency", 0.1), ("overhead", 0.3)))),
                     base_engine=(("dynamo-trt", "trt"), ("dynamo-vllm", "vllm")),
                     reference_date="2026-01-01", planning_engine=(("NVIDIA", "trt"),))
    # mean of atom, sglang, trt (dynamo-trt is a framework): (-0.1 - 0.2 + 0.1) / 3 and
    # (-0.1 + 0.1 + 0.3) / 3 (the median would be -0.1 and 0.1; with the framework
    # 0.075 and 0.2)
    assert sw.typical_offset() == pytest.approx({"efficiency": -0.2 / 3, "overhead": 0.1})
    assert sw.offset("vllm") == sw.offset("dynamo-vllm") == sw.typical_offset()
    assert sw.offset("") == {}
    assert sw.offset("dynamo-trt") == {"efficiency": 0.5, "overhead": 0.5}
    # relative to the planning engine trt at the reference date: -0.2/3 - 0.1, 0.1 - 0.3
    f = sw.log_factors("NVIDIA", "vllm", "2026-01-01")
    assert f["hbm_eff_frac"] == pytest.approx(-0.2 / 3 - 0.1)
    assert f["step_overhead_s"] == pytest.approx(-0.2)
    assert sw.log_factors("NVIDIA", "", "2026-01-01")["hbm_eff_frac"] == pytest.approx(-0.1)
    assert (sw.unfitted_engine("vllm"), sw.unfitted_engine("dynamo-vllm")) == ("vllm", "vllm")
    assert sw.unfitted_engine("dynamo-trt") == sw.unfitted_engine("") == ""


def test_an_engine_alone_on_its_work_is_read_at_the_mean_engine():
    """vLLM ran only AMD's MLPerf Llama 2 70B rows (MI300X, MI325X), which no other
    engine ran: its offsets could not be told from those parts' or a dense model's. It
    gets no columns of its own and is no vendor's planning engine; each of its rows
    carries 1/n of every separable engine's column per knob (their mean, as
    ``typical_offset`` reads an engine the fit never saw) and no framework's."""
    from types import SimpleNamespace as Row

    from dcplan.perf.calibration import (
        LEVEL_PRIOR,
        PRIOR_WEIGHT,
        _planning,
        _Space,
        separable_engines,
    )

    work = [Row(hardware="h200", model="a"), Row(hardware="h200", model="a"),
            Row(hardware="mi300x", model="b"), Row(hardware="b200", model="a")]
    assert separable_engines(work, ["trt", "sglang", "vllm", "trt"]) == ["sglang", "trt"]
    assert separable_engines(work, ["trt", "trt", "vllm", ""]) == []

    catalog = load_catalog(ROOT / "catalogs")
    rows = load_measurement_files(sorted((ROOT / "catalogs" / "measurements").glob("*.csv")),
                                  catalog)
    space = _Space(rows, catalog, SHIPPED_PERF.defaults, True, True, True, PRIOR_WEIGHT,
                   LEVEL_PRIOR)
    bases = separable_engines(rows, space.engine)
    assert space.unseparated == ["vllm"] and "vllm" not in bases
    assert {"atom", "sglang", "trt"} <= set(bases) and "vllm" not in space.engine_cols
    mine = [i for i, m in enumerate(rows) if m.framework == "vllm"]
    assert {rows[i].hardware for i in mine} == {"mi300x", "mi325x"}
    for knob, names in space.knobs:
        a = space.A[names[0]]
        for e, cols in space.engine_cols.items():
            want = 1.0 / len(bases) if e in bases else 0.0
            assert a[mine, cols[knob]] == pytest.approx(want)
            if e in bases:
                assert space.support[cols[knob]][mine].all()
    plan, offsets = _planning(space, space.x0 + 0.1)
    assert "vllm" not in offsets and plan["AMD"] in bases
    # the shipped calibration reads vLLM at the mean of the engines the fit averaged
    sw = SHIPPED_PERF.calibration.software
    own = {e for e, _ in sw.engines if dict(sw.base_engine).get(e, e) == e}
    assert own == set(bases) and sw.unfitted_engine("vllm") == "vllm"
    typical = sw.typical_offset()
    for knob, _ in sw.knobs:
        assert sw.offset("vllm")[knob] == typical[knob] == pytest.approx(
            np.mean([dict(o).get(knob, 0.0) for e, o in sw.engines if e in bases]))


def test_a_row_on_an_unfitted_engine_says_so():
    """perf validate's notes name the engine the calibration lacks; a fitted one has none."""
    catalog = load_catalog(ROOT / "catalogs")
    row = next(m for m in load_measurements(INFERENCEX, catalog)
               if m.framework == "sglang" and not m.disaggregated)
    res = evaluate_rows([row, replace(row, framework="vllm")], catalog, SHIPPED_PERF.defaults,
                        SHIPPED_PERF.calibration, benchmarks=BENCH)
    assert "not in the calibration" not in res[0].pred.notes
    assert "engine 'vllm' is not in the calibration" in res[1].pred.notes


def test_a_level_needs_rows_inside_one_domain():
    """Levels with fewer than MIN_LEVEL_ROWS rows inside one scale-up domain are not fitted:
    GB200's three MLPerf rows, H100's three (its 29 serving rows are TP16 over two
    boards); B200's are;
    the cross-domain level counts its spanning rows. A vendor level needs two
    architectures with a level each: held out, B200 then takes the pooled values, not a
    Blackwell level set by GB200's three rows alone nor an NVIDIA level that would be
    half of Hopper's offset."""
    from dcplan.perf.calibration import (
        LEVEL_PRIOR,
        MIN_LEVEL_ROWS,
        PRIOR_WEIGHT,
        THROUGHPUT_PARAMS,
        _Space,
    )
    from dcplan.perf.measurements import spans_scaleup, wide_decode_group

    catalog = load_catalog(ROOT / "catalogs")
    defaults = SHIPPED_PERF.defaults
    rows = load_measurement_files(sorted((ROOT / "catalogs" / "measurements").glob("*.csv")),
                                  catalog)
    assert 3 < MIN_LEVEL_ROWS < len(THROUGHPUT_PARAMS)
    board = defaults.serving.board_ep_gpus

    def apart(m):
        return spans_scaleup(m, catalog) or wide_decode_group(m, catalog, board)

    inside = {h: sum(1 for m in rows if m.hardware == h and not apart(m))
              for h in {m.hardware for m in rows}}
    assert inside["gb200_gpu"] == 3 and inside["h100_sxm"] == 3 and inside["b200"] > 400
    # GB200's fourth row, the rack-scale DEP48 decode run, is wide: it pins the wide
    # all-to-all ratio, not a level of GB200's own
    assert sum(m.hardware == "gb200_gpu" for m in rows) == 4

    def levels(rs, per_hardware=True):
        return set(_Space(rs, catalog, defaults, True, per_hardware, True, PRIOR_WEIGHT,
                          LEVEL_PRIOR).level)

    full = levels(rows)
    assert ("hardware", "b200") in full and ("hardware", "h200_sxm") in full
    assert ("hardware", "gb200_gpu") not in full and ("hardware", "h100_sxm") not in full
    assert ("cross_domain", "all") in full and ("architecture", "blackwell") in full
    assert ("vendor", "NVIDIA") in full and ("vendor", "AMD") in full
    assert ("architecture", "hopper") in full
    no_b200 = levels([m for m in rows if m.hardware != "b200"], per_hardware=False)
    assert ("architecture", "blackwell") not in no_b200
    assert ("architecture", "hopper") in no_b200 and ("vendor", "NVIDIA") not in no_b200
    no_h200 = levels([m for m in rows if m.hardware != "h200_sxm"], per_hardware=False)
    assert ("architecture", "hopper") not in no_h200
    assert ("architecture", "blackwell") in no_h200 and ("vendor", "NVIDIA") not in no_h200
    assert ("cross_domain", "all") in no_h200
    # AMD: without MI325X, CDNA 3 keeps MI300X's level beside CDNA 4, so AMD's is fitted;
    # without MI355X, CDNA 3 is AMD's only architecture and AMD's level is not
    no_mi325x = levels([m for m in rows if m.hardware != "mi325x"], per_hardware=False)
    assert {("architecture", "cdna3"), ("architecture", "cdna4"),
            ("vendor", "AMD")} <= no_mi325x
    no_mi355x = levels([m for m in rows if m.hardware != "mi355x"], per_hardware=False)
    assert ("architecture", "cdna3") in no_mi355x and ("vendor", "AMD") not in no_mi355x


def test_the_wide_all_to_all_ratio_is_fitted_only_on_wide_decode_groups():
    """wide_ep_comm_ratio is a fitted column only when some row decodes over a group wider
    than a board inside one domain: the GB200 DEP48 row is; the H100 EP72 row (8-GPU
    boards: a board-wide group inside each domain), DEP8 on a board and a prefill group
    are not."""
    from dcplan.perf.calibration import LEVEL_PRIOR, PHYSICS_PRIOR_WEIGHT, PRIOR_WEIGHT, _Space
    from dcplan.perf.measurements import wide_decode_group

    catalog = load_catalog(ROOT / "catalogs")
    defaults = SHIPPED_PERF.defaults
    rows = load_measurement_files([ROOT / "catalogs" / "measurements" / "wide_ep.csv"],
                                  catalog)
    board = defaults.serving.board_ep_gpus
    assert board == 8
    wide = [wide_decode_group(m, catalog, board) for m in rows]
    assert [(m.hardware, m.phase, m.gpus) for m, w in zip(rows, wide, strict=True) if w] \
        == [("gb200_gpu", "decode", 48)]
    # the same row without DP attention reduces over TP attention: no all-to-all
    gb = next(m for m, w in zip(rows, wide, strict=True) if w)
    assert not wide_decode_group(replace(gb, dp_attention=False), catalog, board)
    assert not wide_decode_group(replace(gb, ep=8, gpus=8), catalog, board)
    assert wide_decode_group(replace(gb, ep=16, gpus=16), catalog, board)
    assert not wide_decode_group(replace(gb, phase="prefill"), catalog, board)

    def cols(rs):
        sp = _Space(rs, catalog, defaults, True, True, False, PRIOR_WEIGHT, LEVEL_PRIOR)
        return sp, {c.name: c for c in sp.cols}

    sp, c = cols(rows)
    assert c["physics:wide_ep_comm_ratio"].weight == PHYSICS_PRIOR_WEIGHT[
        "wide_ep_comm_ratio"] < PRIOR_WEIGHT
    assert list(sp.wide) == wide
    _, c = cols([m for m, w in zip(rows, wide, strict=True) if not w])
    assert not any(n.startswith("physics:wide") for n in c)


def test_the_deepgemm_ratio_is_a_column_only_over_rows_that_ran_deepgemm():
    """deepgemm_moe_time_ratio is fitted only when a row's recipe ran the MoE on DeepGEMM
    (serving_recipes.yaml moe_library), and its column touches those rows alone: the
    B200 TensorRT-LLM FP8 runs of December 2025 do, the same runs' FP4 siblings and
    H200's TensorRT-LLM FP8 runs do not."""
    from dcplan.perf.calibration import LEVEL_PRIOR, PRIOR_WEIGHT, Predictor, _Space

    catalog = load_catalog(ROOT / "catalogs")
    defaults = SHIPPED_PERF.defaults
    rows = load_measurement_files([ROOT / "catalogs" / "measurements"
                                   / "inferencex_deepseek_r1.csv"], catalog)
    pick = [m for m in rows if m.framework == "trt" and m.date.startswith("2025-12")
            and m.hardware in ("b200", "h200_sxm")][::3]
    pr = Predictor(pick, catalog, defaults, benchmarks=SHIPPED_PERF.benchmarks)
    expect = [m.hardware == "b200" and m.precision.value == "fp8" and m.speculative == "none"
              for m in pick]
    assert any(expect) and not all(expect)
    assert list(pr.deepgemm) == expect
    sp = _Space(pick, catalog, defaults, True, True, False, PRIOR_WEIGHT, LEVEL_PRIOR,
                deepgemm=pr.deepgemm)
    col = next(c for c in sp.cols if c.name == "physics:deepgemm_moe_time_ratio")
    assert list(col.support) == expect
    none = _Space([m for m, e in zip(pick, expect, strict=True) if not e], catalog,
                  defaults, True, True, False, PRIOR_WEIGHT, LEVEL_PRIOR,
                  deepgemm=np.zeros(len(pick) - sum(expect), bool))
    assert not any(c.name == "physics:deepgemm_moe_time_ratio" for c in none.cols)


def test_disaggregated_ttft_is_fitted_only_where_no_admission_limit_binds():
    """The fit's TTFT residuals take every aggregated row, and a disaggregated row only
    at up to DISAGGREGATED_TTFT_MAX_CONCURRENCY (64) requests in flight, at
    DISAGGREGATED_TTFT_WEIGHT times the aggregated rows' weight; throughput takes all."""
    from dcplan.perf.calibration import (
        DISAGGREGATED_TTFT_MAX_CONCURRENCY,
        DISAGGREGATED_TTFT_WEIGHT,
        TTFT_WEIGHT,
        Predictor,
    )

    assert DISAGGREGATED_TTFT_MAX_CONCURRENCY == 64 and DISAGGREGATED_TTFT_WEIGHT == 1.0
    catalog = load_catalog(ROOT / "catalogs")
    rows = load_measurement_files([ROOT / "catalogs" / "measurements"
                                   / "inferencex_deepseek_r1.csv"], catalog)
    pick = []
    for dis, conc in ((True, 64), (True, 128), (False, 64), (False, 256)):
        pick.append(next(m for m in rows if m.disaggregated == dis and m.concurrency == conc
                         and m.median_ttft_s))
    pr = Predictor(pick, catalog, SHIPPED_PERF.defaults, benchmarks=SHIPPED_PERF.benchmarks)
    layout = {key: (list(sel), list(w)) for key, sel, _meas, w, _pos in pr._serving_layout}
    sel, w = layout["median_ttft_s"]
    assert sel == [0, 2, 3]                       # not the disaggregated row at 128
    assert w == pytest.approx([TTFT_WEIGHT * DISAGGREGATED_TTFT_WEIGHT, TTFT_WEIGHT,
                               TTFT_WEIGHT])
    assert layout["output_tokens_per_s_per_gpu"][0] == [0, 1, 2, 3]
