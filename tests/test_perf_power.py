"""Rack power: nameplate at full load, high percentile, MLPerf Power rows and power caps."""

from __future__ import annotations

import csv
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binom

from dcplan import perf
from dcplan.catalog import load_catalog
from dcplan.perf.calibration import evaluate_rows, power_error_by_vendor
from dcplan.perf.measurements import load_measurements
from dcplan.perf.params import load_perf_inputs
from dcplan.perf.power import (
    binomial_quantile,
    gpu_share_w,
    rack_power_kw,
    rack_power_percentile_kw,
)
from dcplan.schema import ServingMode

#: The shipped performance defaults and calibration (the fixture catalogs have none of
#: their own); the model reads no file itself.
SHIPPED_PERF = load_perf_inputs(benchmarks=True)
BENCH = SHIPPED_PERF.benchmarks
PERF_KW = {"defaults": SHIPPED_PERF.defaults, "calibration": SHIPPED_PERF.calibration}
rack_performance = partial(perf.rack_performance, **PERF_KW)


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


def test_binomial_quantile_by_hand():
    # Binomial(16, 0.1): P(X<=4) = 0.98300, P(X<=5) = 0.99670 -> 5 at 99 %, 4 at 98 %
    assert binomial_quantile(0.99, 16, 0.1) == 5
    assert binomial_quantile(0.98, 16, 0.1) == 4
    # Binomial(1, 0.3): P(X<=0) = 0.7 -> 0 at 70 %, 1 above
    assert binomial_quantile(0.7, 1, 0.3) == 0
    assert binomial_quantile(0.7001, 1, 0.3) == 1
    assert binomial_quantile(0.0, 5, 0.5) == 0 and binomial_quantile(1.0, 5, 0.5) == 5


@given(q=st.floats(1e-6, 1 - 1e-6), n=st.integers(0, 600), p=st.floats(1e-6, 1 - 1e-6))
def test_binomial_quantile_is_scipys(q, n, p):
    """scipy.stats's quantile, but where the distribution function meets q exactly
    (Binomial(495, 0.5) at 0.5: P(X <= 247) = 1/2 by symmetry), where rounding may put
    scipy's one above: then the two differ by one and q is the lower one's CDF."""
    got, want = binomial_quantile(q, n, p), binom.ppf(q, n, p)
    if got != want:
        assert abs(got - want) == 1 and binom.cdf(min(got, want), n, p) == pytest.approx(
            q, rel=1e-12), (got, want)


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
    p = evaluate(build_setup(catalog, "gb200_nvl72", "llama3_70b", wl, **PERF_KW))
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
    defaults = load_perf_inputs(catalog).defaults
    res = evaluate_rows(rows, catalog, defaults, None, benchmarks=BENCH)
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
    assert [r.pred.power_w for r in evaluate_rows(low, catalog, defaults, None,
                                                  benchmarks=BENCH)] == [
        pytest.approx(100.0), pytest.approx(100.0)]


# --- power at the measured throughput ----------------------------------------------------


def test_busy_shares_at_half_the_predicted_throughput_by_hand():
    from types import SimpleNamespace

    from dcplan.perf.power import activity
    from dcplan.perf.predict import measured_busy_scale

    hp = SimpleNamespace(power_base_frac=0.25, power_compute_weight=0.6,
                         power_memory_weight=0.4)
    s = measured_busy_scale(500.0, 1000.0)
    assert float(s) == 0.5
    # H100 (90 W idle, 700 W max) at u_c 0.3, u_m 0.9: model point 0.25 + 0.18 + 0.36 = 0.79
    # -> 90 + 610 x 0.79 = 571.9 W; at half the throughput 0.25 + 0.09 + 0.18 = 0.52
    # -> 90 + 610 x 0.52 = 407.2 W
    assert 90 + 610 * float(activity(hp, 0.3, 0.9)) == pytest.approx(571.9)
    assert 90 + 610 * float(activity(hp, s * 0.3, s * 0.9)) == pytest.approx(407.2)
    # faster than the model: capped at fully busy (the model's shares); nothing measured: 1
    assert float(measured_busy_scale(3000.0, 1000.0)) == 1.0
    assert float(measured_busy_scale(None, 1000.0)) == 1.0
    assert float(measured_busy_scale(float("nan"), 1000.0)) == 1.0


def _half_and_double(rows, catalog, defaults, field):
    """Rows re-measured at half and at twice the model's throughput, predicted."""
    first = evaluate_rows(rows, catalog, defaults, None, benchmarks=BENCH)
    half = [replace(r.m, **{field: r.predicted_throughput / 2}) for r in first]
    double = [replace(r.m, **{field: r.predicted_throughput * 2}) for r in first]
    return (first, evaluate_rows(half, catalog, defaults, None, benchmarks=BENCH),
            evaluate_rows(double, catalog, defaults, None, benchmarks=BENCH))


def _at_half(res, acc, base, gpus):
    """Power at half the busy shares from the model-point power, by linearity.

    P = gpus (idle + (max - idle) (base + w_c u_c + w_m u_m)), so halving u_c and u_m
    gives gpus idle + (P_model - gpus idle) / 2 + gpus (max - idle) base / 2 (activity
    below 1, no clipping).
    """
    idle, span = gpus * acc.idle_power_w, gpus * (acc.max_power_w - acc.idle_power_w)
    return idle + (res.pred.power_w_model_point - idle) / 2 + span * base / 2


def test_phase_row_power_is_taken_at_the_measured_throughput(catalog):
    from dcplan.perf.predict import hardware_params

    defaults = load_perf_inputs(catalog).defaults
    rows = load_measurements(MEAS / "validation" / "nvidia_power.csv", catalog)[:2]
    acc = catalog.get("accelerators", "h100_sxm")
    base = float(hardware_params(defaults, "h100_sxm", None).power_base_frac)
    first, half, double = _half_and_double(rows, catalog, defaults, "tokens_per_s")
    for f, h, d, m in zip(first, half, double, rows, strict=True):
        # the model's operating point does not move with the measured throughput
        assert h.pred.tokens_per_s == pytest.approx(f.pred.tokens_per_s)
        assert h.pred.power_w_model_point == pytest.approx(f.pred.power_w_model_point)
        assert f.pred.power_w_model_point < m.gpus * acc.max_power_w
        assert h.pred.power_w == pytest.approx(_at_half(h, acc, base, m.gpus))
        assert h.pred.power_w < h.pred.power_w_model_point
        # a run faster than the model is capped at fully busy: the model-point power
        assert d.pred.power_w == pytest.approx(d.pred.power_w_model_point)
        assert h.as_dict()["predicted_power_model_point_w"] == h.pred.power_w_model_point
        assert h.error("power_model_point") == pytest.approx(
            (h.pred.power_w_model_point - m.power_w) / m.power_w * 100)


def test_serving_row_power_is_taken_at_the_measured_throughput(catalog):
    from dcplan.perf.predict import hardware_params

    defaults = load_perf_inputs(catalog).defaults
    rows = [m for m in load_measurements(MEAS / "inferencex_deepseek_r1.csv", catalog)
            if m.hardware == "mi355x" and m.power_w][:2]
    acc = catalog.get("accelerators", "mi355x")
    base = float(hardware_params(defaults, "mi355x", None, acc.vendor,
                                 acc.architecture).power_base_frac)
    first, half, double = _half_and_double(rows, catalog, defaults,
                                           "output_tokens_per_s_per_gpu")
    for f, h, d in zip(first, half, double, strict=True):
        assert not h.pred.flag
        assert h.pred.power_w_model_point == pytest.approx(f.pred.power_w_model_point)
        assert h.pred.power_w == pytest.approx(_at_half(h, acc, base, 1))   # per GPU
        assert d.pred.power_w == pytest.approx(d.pred.power_w_model_point)


def test_capped_row_keeps_the_model_point_power(catalog):
    defaults = load_perf_inputs(catalog).defaults
    rows = load_measurements(MEAS / "mlperf_power.csv", catalog)
    for r in evaluate_rows(rows, catalog, defaults, None, benchmarks=BENCH):
        assert r.pred.power_w == r.pred.power_w_model_point == pytest.approx(500.0)
