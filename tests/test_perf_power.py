"""Rack power: nameplate at full load, high percentile, MLPerf Power rows and power caps."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from dcplan.catalog import load_catalog
from dcplan.perf import rack_performance
from dcplan.perf.calibration import evaluate_rows
from dcplan.perf.measurements import load_measurements
from dcplan.perf.params import defaults_path, load_perf_defaults
from dcplan.perf.power import (
    gpu_share_w,
    power_error_by_vendor,
    rack_power_kw,
    rack_power_percentile_kw,
)
from dcplan.schema import ServingMode

ROOT = Path(__file__).resolve().parents[1]
MEAS = ROOT / "catalogs" / "measurements"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(ROOT / "catalogs")


def test_every_rack_draws_its_nameplate_at_full_activity(catalog):
    for rack in catalog.entries["racks"].values():
        acc = catalog.get("accelerators", rack.accelerator)
        assert float(rack_power_kw(rack, acc, 1.0)) == pytest.approx(rack.it_power_max_kw,
                                                                     abs=1e-9), rack.id
        assert float(rack_power_kw(rack, acc, 0.0)) == pytest.approx(rack.it_power_idle_kw,
                                                                     abs=1e-9), rack.id


def test_hgx_h100_power_is_linear_in_activity(catalog):
    # 32 x H100 (90 W idle, 700 W max); rack 10.0 kW idle, 40.8 kW max:
    # 32 (0.09 + 0.61 a) + 7.12 + 11.28 a = 10.0 + 30.8 a
    rack = catalog.get("racks", "hgx_h100")
    acc = catalog.get("accelerators", "h100_sxm")
    assert float(rack_power_kw(rack, acc, 0.5)) == pytest.approx(25.4)


def test_p99_one_instance_prefilling_30pct_of_the_time_is_at_prefill_activity(catalog):
    rack = catalog.get("racks", "hgx_h100")
    acc = catalog.get("accelerators", "h100_sxm")
    # Binomial(1, 0.3) at 99 %: 1 instance prefilling -> activity 0.9: 10 + 30.8 x 0.9
    assert rack_power_percentile_kw(rack, acc, 0.9, 0.5, 0.3, 1) == pytest.approx(37.72)


def test_p99_sixteen_instances_counts_prefills_at_once(catalog):
    rack = catalog.get("racks", "hgx_h100")
    acc = catalog.get("accelerators", "h100_sxm")
    # Binomial(16, 0.1): P(X<=4) = 0.98300, P(X<=5) = 0.99670 -> 5 prefill at once;
    # activity (5 x 0.9 + 11 x 0.5) / 16 = 0.625 -> 10 + 30.8 x 0.625 = 29.25 kW,
    # above the mean (activity 0.54: 26.632 kW)
    assert rack_power_percentile_kw(rack, acc, 0.9, 0.5, 0.1, 16) == pytest.approx(29.25)
    # no prefill: the decode activity (0.5 -> 25.4 kW); all prefill: 0.9 -> 37.72 kW
    assert rack_power_percentile_kw(rack, acc, 0.9, 0.5, 0.0, 16) == pytest.approx(25.4)
    assert rack_power_percentile_kw(rack, acc, 0.9, 0.5, 1.0, 16) == pytest.approx(37.72)


def test_rackperf_reports_nameplate_operating_point_and_p99(catalog):
    p = rack_performance(catalog, "gb200_nvl72", "llama3_70b", "chat")
    assert p.fits
    assert p.power_nameplate_kw == 120.0          # racks.yaml gb200_nvl72 it_power_max_kw
    assert p.idle_power_kw < p.power_kw <= p.power_p99_kw <= p.power_nameplate_kw
    d = p.as_dict()
    assert d["power_operating_point_kw"] == d["power_kw"] == d["rack_power_kw"]
    assert d["power_p99_kw"] == p.power_p99_kw


def test_disaggregated_rackperf_has_a_p99_within_nameplate(catalog):
    from dcplan.perf.goodput import build_setup, evaluate

    wl = catalog.get("workloads", "chat").model_copy(update={"mode": ServingMode.disaggregated})
    p = evaluate(build_setup(catalog, "gb200_nvl72", "llama3_70b", wl))
    assert p.fits
    assert p.power_kw <= p.power_p99_kw <= p.power_nameplate_kw == 120.0


def test_gpu_share_of_wall_power_by_hand():
    # 8 x 90 W + 0.95 x (6,152.98 - 2,524.40) W = 720 + 3,447.151 = 4,167.151 W
    assert gpu_share_w(6152.98, 2524.40, 8, 90.0, 0.95) == pytest.approx(4167.151)


def test_mlperf_power_rows_are_the_gpu_share_of_the_recorded_wall_power():
    systems = yaml.safe_load((MEAS / "mlperf_power_systems.yaml").read_text())["systems"]
    sysd = systems["H200-SXM-141GBx8_TRT_MaxQ"]
    with open(MEAS / "mlperf_power.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2
    for row in rows:
        scenario = "Offline" if "/Offline/" in row["source"] else "Server"
        run = sysd["runs"][f"llama2-70b-99/{scenario}"]
        share = gpu_share_w(run["wall_w"], run["wall_preload_w"], sysd["gpus"],
                            sysd["gpu_idle_w"], sysd["psu_efficiency_frac"])
        assert float(row["power_w"]) == pytest.approx(share / sysd["gpus"], abs=0.05)
        assert float(row["power_cap_w"]) == sysd["power_cap_w_per_gpu"]
        assert row["source"] and row["as_of"] < "2025-09" and "ESTIMATE" in row["notes"]
    # by hand: Offline 4,167.151 / 8 = 520.9 W; Server (720 + 0.95 x 3,727.56) / 8 = 532.6 W
    assert sorted(float(r["power_w"]) for r in rows) == [520.9, 532.6]


def test_power_cap_holds_predicted_power_and_errors_by_vendor(catalog):
    rows = load_measurements(MEAS / "mlperf_power.csv", catalog)
    defaults = load_perf_defaults(defaults_path(catalog))
    res = evaluate_rows(rows, catalog, defaults, None)
    # the uncapped model draws more than 500 W per H200 here, so the cap binds
    assert [r.pred.power_w for r in res] == [pytest.approx(500.0), pytest.approx(500.0)]
    by = power_error_by_vendor(res, catalog)
    # (500 - 520.9) / 520.9 = -4.012 %, (500 - 532.6) / 532.6 = -6.121 %
    assert list(by) == ["NVIDIA"]
    assert by["NVIDIA"]["rows"] == 2
    assert by["NVIDIA"]["median_abs_pct"] == pytest.approx((4.0123 + 6.1209) / 2, abs=1e-3)
    assert by["NVIDIA"]["median_signed_pct"] == pytest.approx(-(4.0123 + 6.1209) / 2, abs=1e-3)
    # a cap far below the operating point: predicted power is the cap itself
    low = [replace(m, power_cap_w=100.0) for m in rows]
    assert [r.pred.power_w for r in evaluate_rows(low, catalog, defaults, None)] == [
        pytest.approx(100.0), pytest.approx(100.0)]
