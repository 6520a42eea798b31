"""Hand-computed and property tests of the roofline performance model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcplan.catalog import load_catalog
from dcplan.perf import RackPerf, rack_performance
from dcplan.perf.goodput import build_setup, replica_sizes
from dcplan.perf.params import HardwareParams, load_perf_defaults
from dcplan.perf.power import rack_power_kw
from dcplan.perf.roofline import ModelShape, Replica, distinct_experts
from dcplan.schema import Precision

FIX = Path(__file__).parent / "fixtures" / "perf" / "catalog"

# Parameters written out here (not read from perf_defaults.yaml) so that the
# hand-computed expectations below do not move when the defaults are re-tuned.
P = HardwareParams(
    compute_eff_frac=0.5, decode_compute_eff_frac=0.4, hbm_eff_frac=0.8, scaleup_eff_frac=0.5,
    scaleout_eff_frac=0.5, step_overhead_s=0.002, collective_latency_s=1e-5,
    power_base_frac=0.3, power_compute_weight=0.5, power_memory_weight=0.4,
)


@pytest.fixture(scope="module")
def cat():
    return load_catalog(FIX)


@pytest.fixture(scope="module")
def serving():
    return load_perf_defaults().serving


def _replica(cat, serving, model="dense8", gpus=1, precision="fp8", acc="tgpu"):
    shape = ModelShape.build(cat.get("models", model), precision, serving)
    return Replica.build(cat.get("accelerators", acc), gpus, shape, precision, P, serving)


# ----------------------------------------------------------------- hand-computed


def test_decode_batch1_is_weights_over_bandwidth_plus_overhead(cat, serving):
    rep = _replica(cat, serving)
    # 8e9 params x 1 byte (fp8) / (4 TB/s x 0.8) + 2 ms; no KV at context 0.
    expected = 8e9 / (4.0e12 * 0.8) + 0.002
    assert float(rep.decode_step_time(1, 0)) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(0.0045)


def test_decode_batch1_with_kv_reads(cat, serving):
    rep = _replica(cat, serving)
    kv = 32 * 2 * 8 * 128 * 1.0 * 4000  # layers x (K,V) x kv heads x head dim x 1 B x tokens
    expected = (8e9 + kv) / 3.2e12 + 0.002
    assert float(rep.decode_step_time(1, 4000)) == pytest.approx(expected, rel=1e-12)


def test_decode_large_batch_is_compute_bound(cat, serving):
    rep = _replica(cat, serving)
    c, m, _ = rep.decode_parts(4096, 0)
    # 4096 x 2 x 8e9 FLOP / (2000 TFLOPS x 0.4) versus (8e9 B) / 3.2 TB/s
    assert float(c) == pytest.approx(4096 * 2 * 8e9 / (2000e12 * 0.4))
    assert float(c) > float(m)


def test_kv_bytes_per_token_llama3_70b_shape(cat, serving):
    shape = ModelShape.build(cat.get("models", "dense70"), "bf16", serving)
    assert shape.kv_bytes_per_token == 80 * 2 * 8 * 128 * 2 == 327_680


def test_kv_bytes_per_token_mla(cat, serving):
    shape = ModelShape.build(cat.get("models", "moe"), "bf16", serving)
    assert shape.kv_bytes_per_token == 10 * 576 * 2


def test_shipped_catalog_kv_bytes(serving):
    real = load_catalog()
    l70 = ModelShape.build(real.get("models", "llama3_70b"), "bf16", serving)
    assert l70.kv_bytes_per_token == 327_680  # 80 layers x 2 x 8 KV heads x 128 x 2 B
    r1 = ModelShape.build(real.get("models", "deepseek_r1"), "bf16", serving)
    assert r1.kv_bytes_per_token == 61 * 576 * 2 == 70_272  # MLA latent 512 + rope 64


def test_prefill_time_hand_computed(cat, serving):
    rep = _replica(cat, serving)
    n = 1000.0
    flops = n * (2 * 8e9 + 4 * 32 * 128 * 32 * (n / 2))
    c, m, x, o = rep.prefill_parts(n, 0.0, 1.0, batched=False)
    assert float(c) == pytest.approx(flops / (2000e12 * 0.5))
    assert float(x) == 0.0  # single accelerator: no collectives
    assert float(o) == pytest.approx(0.002)  # one chunk


def test_cached_prefix_skips_compute_but_reads_kv(cat, serving):
    rep = _replica(cat, serving)
    c0, m0, _, _ = rep.prefill_parts(4000, 0.0)
    c1, m1, _, _ = rep.prefill_parts(4000, 3000.0)
    assert float(c1) < float(c0) / 3
    kv_bytes = 32 * 2 * 8 * 128 * 4000
    # KV of the whole prompt is touched either way (read prefix + write new).
    assert float(m1) * rep.bytes_per_s >= kv_bytes


def test_tensor_parallel_comm_time(cat, serving):
    rep = _replica(cat, serving, model="dense8", gpus=4)
    tokens = 64
    msg = tokens * 4096 * 2.0
    ring = 2 * 3 / 4 * msg
    expected = 32 * 2 * ring / (400e9 * 0.5) + 32 * 2 * 1e-5
    assert float(rep.comm_time(tokens)) == pytest.approx(expected)
    assert float(_replica(cat, serving, gpus=1).comm_time(tokens)) == 0.0


def test_memory_bounds_batch(cat, serving):
    rep = _replica(cat, serving, model="dense70", gpus=1)
    budget = 100e9 * serving.hbm_usable_frac - 70e9
    per_seq = 80 * 2 * 8 * 128 * serving.kv_bytes("fp8") * 2000
    assert rep.max_batch(2000) == min(int(budget // per_seq), serving.max_batch_per_replica)


# --------------------------------------------------------------------------- MoE


def test_distinct_experts_limits():
    assert float(distinct_experts(256, 8, 1)) == pytest.approx(8.0)
    assert float(distinct_experts(256, 8, 1e6)) == pytest.approx(256.0)
    assert float(distinct_experts(64, 4, 2)) == pytest.approx(64 * (1 - (1 - 4 / 64) ** 2))
    vals = distinct_experts(64, 4, np.arange(1, 500))
    assert np.all(np.diff(vals) > 0) and vals[-1] <= 64


def test_moe_weights_touched_between_active_and_total(cat, serving):
    shape = ModelShape.build(cat.get("models", "moe"), "fp8", serving)
    assert float(shape.weights_touched_bytes(1)) == pytest.approx(10e9)
    assert float(shape.weights_touched_bytes(1e6)) == pytest.approx(70e9)
    # Expert size from total/active: (70 - 10) / (64 - 4) = 1 B params per expert.
    assert shape.expert_params == pytest.approx(1e9)


# ------------------------------------------------------------------ rack level


def test_rack_performance_contract_fields(cat):
    p = rack_performance(cat, "track8", "dense70", "chat")
    assert isinstance(p, RackPerf) and p.fits and p.reason == ""
    assert p.goodput_tokens_per_s > p.output_tokens_per_s > 0
    assert p.prefill_tokens_per_s == 0 and p.decode_tokens_per_s == 0  # aggregated
    assert p.idle_power_kw == 2.0 and 2.0 <= p.power_kw <= 12.0
    assert p.replica_gpus in replica_sizes(cat.get("racks", "track8"))
    assert p.tokens_per_joule == pytest.approx(p.goodput_tokens_per_s / (p.power_kw * 1e3))
    assert p.goodput_tokens_per_s == pytest.approx(
        p.output_tokens_per_s * (1000 + 250) / 250)


def test_model_too_big_gives_reason_not_exception(cat):
    p = rack_performance(cat, "track8", "huge", "chat")
    assert not p.fits
    assert "2,000 GB" in p.reason and "8 x tgpu" in p.reason
    assert p.goodput_tokens_per_s == 0


def test_impossible_slo_gives_reason(cat):
    p = rack_performance(cat, "track8", "dense70", "impossible")
    assert not p.fits and p.bottleneck == "slo" and "cannot meet the SLO" in p.reason


def test_unsupported_precision(cat):
    p = rack_performance(cat, "track8", "dense70", "chat", precision="fp4")
    assert not p.fits and "no fp4" in p.reason


def test_disaggregated_ratio(cat):
    p = rack_performance(cat, "track8", "dense70", "chat_disagg")
    assert p.fits and p.prefill_tokens_per_s > 0 and p.decode_tokens_per_s > 0
    # Racks per request/s: 1/Rp + 1/Rd; the blend must match the pool rates.
    rp = p.prefill_tokens_per_s / 1000
    rd = p.decode_tokens_per_s / 250
    assert p.requests_per_s == pytest.approx(1 / (1 / rp + 1 / rd))
    assert p.prefill_racks_per_decode_rack == pytest.approx(rd / rp)


def test_power_between_idle_and_max(cat):
    su = build_setup(cat, "track8", "dense70", "chat")
    assert float(rack_power_kw(su.rack, su.acc, 0.0)) == pytest.approx(2.0)
    assert float(rack_power_kw(su.rack, su.acc, 1.0)) == pytest.approx(12.0)
    # Non-accelerator power: 12 - 8 x 1 kW at max, 2 - 8 x 0.1 kW at idle.
    assert float(rack_power_kw(su.rack, su.acc, 0.5)) == pytest.approx(
        8 * 0.55 + (1.2 + (4.0 - 1.2) * 0.5))


def test_deterministic_and_cached(cat):
    a = rack_performance(cat, "track8", "moe", "moe_chat")
    b = rack_performance(cat, "track8", "moe", "moe_chat")
    assert a is b


def test_every_shipped_rack_and_model_answers():
    real = load_catalog()
    for rack in real.racks:
        for model in real.models:
            for wl in real.workloads:
                p = rack_performance(real, rack, model, wl)
                assert p.fits or len(p.reason) > 20
                if p.fits:
                    assert p.goodput_tokens_per_s > 0 and p.power_kw > 0
                    w = real.get("workloads", wl)
                    assert p.ttft_s <= w.ttft_s + 1e-9 and p.tpot_ms <= w.tpot_ms + 1e-9


# ---------------------------------------------------------------- properties

PROP = settings(max_examples=25, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


@PROP
@given(ttft=st.floats(0.05, 5.0), tpot=st.floats(5.0, 200.0),
       workload=st.sampled_from(["chat", "chat_disagg", "moe_chat"]))
def test_goodput_never_violates_its_slo(cat, ttft, tpot, workload):
    c = cat.replace("workloads", workload, ttft_s=ttft, tpot_ms=tpot)
    p = rack_performance(c, "track8", None, workload)
    if p.fits:
        assert p.ttft_s <= ttft * (1 + 1e-12)
        assert p.tpot_ms <= tpot * (1 + 1e-12)
    else:
        assert p.reason


@PROP
@given(bw=st.floats(1.0, 20.0), factor=st.floats(1.0, 3.0),
       workload=st.sampled_from(["chat", "chat_disagg", "moe_chat"]))
def test_more_hbm_bandwidth_never_lowers_decode_throughput(cat, bw, factor, workload):
    lo = rack_performance(cat.replace("accelerators", "tgpu", hbm_tb_per_s=bw), "track8", None,
                          workload)
    hi = rack_performance(cat.replace("accelerators", "tgpu", hbm_tb_per_s=bw * factor),
                          "track8", None, workload)
    assert hi.output_tokens_per_s >= lo.output_tokens_per_s * (1 - 1e-9)
    assert hi.decode_tokens_per_s >= lo.decode_tokens_per_s * (1 - 1e-9)
    assert hi.goodput_tokens_per_s >= lo.goodput_tokens_per_s * (1 - 1e-9)


@PROP
@given(h1=st.floats(0.0, 0.95), h2=st.floats(0.0, 0.95),
       workload=st.sampled_from(["chat", "chat_disagg", "moe_chat"]))
def test_higher_cache_hit_never_lowers_goodput(cat, h1, h2, workload):
    lo_h, hi_h = sorted((h1, h2))
    lo = rack_performance(cat.replace("workloads", workload, cache_hit_frac=lo_h), "track8",
                          None, workload)
    hi = rack_performance(cat.replace("workloads", workload, cache_hit_frac=hi_h), "track8",
                          None, workload)
    assert hi.goodput_tokens_per_s >= lo.goodput_tokens_per_s * (1 - 1e-9)


@PROP
@given(b=st.integers(1, 4096), ctx=st.floats(0, 100_000))
def test_decode_step_monotone_in_batch_and_bandwidth(cat, serving, b, ctx):
    slow = _replica(cat, serving, model="moe", acc="tgpu")
    fast = _replica(cat, serving, model="moe", acc="tgpu_fast")
    assert float(fast.decode_step_time(b, ctx)) <= float(slow.decode_step_time(b, ctx))
    assert float(slow.decode_step_time(b + 1, ctx)) >= float(slow.decode_step_time(b, ctx))


def test_precision_enum_accepted(cat):
    assert rack_performance(cat, "track8", "dense70", "chat", precision=Precision.bf16).fits
