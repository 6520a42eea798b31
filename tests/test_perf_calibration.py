"""Calibration recovers known parameters; measurement CSVs are validated."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import pytest

from dcplan.catalog import load_catalog
from dcplan.errors import InputError
from dcplan.perf import load_calibration, rack_performance
from dcplan.perf.calibration import calibrate, evaluate_rows, report
from dcplan.perf.measurements import Measurement, load_measurements, predict
from dcplan.perf.params import Calibration, load_perf_defaults, save_calibration
from dcplan.schema import Precision

FIX = Path(__file__).parent / "fixtures" / "perf"
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
                    p = predict(m, cat, true, defaults.serving)
                    rows.append(replace(m, tokens_per_s=p.tokens_per_s, power_w=p.power_w))
    return rows


def test_calibration_recovers_known_parameters(cat):
    defaults = load_perf_defaults()
    rows = _synthetic(cat, defaults)
    cal = calibrate(rows, cat, defaults, prior_weight=0.0)
    got = dict(dict(cal.hardware)["tgpu"])
    for name, value in TRUE.items():
        assert got[name] == pytest.approx(value, rel=0.02), name
    after = report(evaluate_rows(rows, cat, defaults, cal))
    assert after["throughput"]["max_abs_pct"] < 0.5
    assert after["power"]["max_abs_pct"] < 0.5


def test_calibration_with_prior_stays_close(cat):
    defaults = load_perf_defaults()
    rows = _synthetic(cat, defaults)
    cal = calibrate(rows, cat, defaults)
    got = dict(dict(cal.hardware)["tgpu"])
    for name in ("compute_eff_frac", "decode_compute_eff_frac", "hbm_eff_frac"):
        assert got[name] == pytest.approx(TRUE[name], rel=0.1), name


def test_calibration_file_round_trip_changes_rack_performance(cat, tmp_path):
    cal = Calibration.from_dicts({"tgpu": {"decode_compute_eff_frac": 0.2, "hbm_eff_frac": 0.4}},
                                 {}, "test")
    path = tmp_path / "cal.yaml"
    save_calibration(cal, path, {"tgpu": 3}, {"rows": 3})
    loaded = load_calibration(path, known_accelerators=["tgpu"])
    assert loaded.key == cal.key
    base = rack_performance(cat, "track8", "dense70", "chat")
    slower = rack_performance(cat, "track8", "dense70", "chat", calibration=loaded)
    assert slower.goodput_tokens_per_s < base.goodput_tokens_per_s
    assert rack_performance(cat, "track8", "dense70", "chat", calibration=path) == slower


def test_bad_calibration_file(tmp_path):
    path = tmp_path / "cal.yaml"
    path.write_text("kind: dcplan_perf_calibration\nhardware:\n  tgpx:\n"
                    "    hbm_eff: 0.5\n    compute_eff_frac: 3\n")
    with pytest.raises(InputError) as exc:
        load_calibration(path, known_accelerators=["tgpu"])
    msg = str(exc.value)
    assert "3 problems" in msg
    assert "unknown accelerator id" in msg and "did you mean 'tgpu'" in msg
    assert "field 'hbm_eff'" in msg and "hbm_eff_frac" in msg
    assert "field 'compute_eff_frac'" in msg and "between" in msg
    other = tmp_path / "other.yaml"
    other.write_text("a: 1\n")
    with pytest.raises(InputError, match="not a calibration file"):
        load_calibration(other)


def test_bad_measurements_all_problems_at_once(cat):
    with pytest.raises(InputError) as exc:
        load_measurements(FIX / "bad_measurements.csv", cat)
    msg = str(exc.value)
    assert "field 'power_w'" in msg and "required column is missing" in msg
    # Missing columns stop before the rows; add the column and check row problems.


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


def test_good_measurements_load(cat):
    rows = load_measurements(FIX / "good_measurements.csv", cat)
    assert len(rows) == 4 and rows[3].power_w is None and rows[0].power_w == 1500


def test_shipped_mlperf_file_loads_and_calibrates():
    real = load_catalog()
    rows = load_measurements(Path(__file__).parent.parent / "catalogs" / "measurements"
                             / "mlperf_inference.csv", real)
    assert {m.hardware for m in rows} == {"h100_sxm", "h200_sxm", "b200", "gb200_gpu"}
    assert {m.model for m in rows} == {"llama2_70b", "llama31_405b"}
    assert all(m.source and m.as_of and m.notes for m in rows)
    defaults = load_perf_defaults()
    before = report(evaluate_rows(rows, real, defaults))["throughput"]["median_abs_pct"]
    cal = calibrate(rows, real, defaults)
    after = report(evaluate_rows(rows, real, defaults, cal))["throughput"]["median_abs_pct"]
    assert after < before
    assert after <= 15.0


def test_measurement_header_written_as_issue_schema():
    header = next(csv.reader(open(Path(__file__).parent.parent / "catalogs" / "measurements"
                                  / "mlperf_inference.csv")))
    assert header[:9] == ["hardware", "model", "precision", "phase", "gpus", "batch",
                          "context_tokens", "tokens_per_s", "power_w"]
