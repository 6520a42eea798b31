"""Hand-computed and property tests of the performance model's physics."""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcplan import perf
from dcplan.catalog import load_catalog
from dcplan.perf import RackPerf
from dcplan.perf.goodput import candidate_layouts
from dcplan.perf.latency import wait_mean, wait_quantile
from dcplan.perf.params import HardwareParams, PhysicsParams, load_perf_defaults, load_perf_inputs
from dcplan.perf.power import rack_power_kw
from dcplan.perf.roofline import (
    Hardware,
    ModelShape,
    Parallel,
    distinct_experts,
    forward_step,
    max_batch,
)
from dcplan.perf.serving import (
    Instance,
    Traffic,
    aggregated,
    decode,
    disaggregated,
    kv_handover_share_s,
    kv_transfer_s,
    prefill,
    solve_closed_loop,
)
from dcplan.perf.speculative import expected_tokens
from dcplan.schema import Precision

#: The shipped performance defaults and calibration (the fixture catalogs have none of
#: their own); the model reads no file itself.
SHIPPED_PERF = load_perf_inputs()
PERF_KW = {"defaults": SHIPPED_PERF.defaults, "calibration": SHIPPED_PERF.calibration}
rack_performance = partial(perf.rack_performance, **PERF_KW)
build_setup = partial(perf.goodput.build_setup, **PERF_KW)

FIX = Path(__file__).parent / "fixtures" / "perf" / "catalog"

# Parameters written out here (not read from perf_defaults.yaml) so that the
# hand-computed expectations below do not move when the defaults are re-tuned.
P = HardwareParams(
    compute_eff_frac=0.5, decode_compute_eff_frac=0.4, moe_gemm_eff_ratio=1.0,
    attention_eff_frac=0.5,
    mla_attention_eff_frac=0.5,
    hbm_eff_frac=0.8, scaleup_eff_frac=0.5, moe_comm_eff_frac=0.25,
    moe_prefill_comm_eff_frac=0.75, scaleout_eff_frac=0.5, kv_handover_token_s=0.0,
    kv_handover_latency_s=0.0,
    step_overhead_s=0.002,
    layer_overhead_s=0.0, collective_latency_s=1e-5, scaleout_latency_s=3e-5,
    alltoall_latency_s=2e-5, comm_overlap_frac=0.0, ttft_overhead_s=0.0,
    power_base_frac=0.3, power_compute_weight=0.5, power_memory_weight=0.4,
)
PH = PhysicsParams(
    grouped_gemm_pad_tokens=8.0, moe_imbalance_frac=0.2, mtp_acceptance_frac=0.7,
    mtp_draft_cost_frac=0.1, draft_acceptance_frac=0.6, draft_cost_frac=0.1,
    closed_loop_arrival_cv2=0.5, prefill_service_cv2=0.0, tpot_cv_frac=0.05,
    wide_ep_comm_ratio=1.0,
    deepgemm_moe_time_ratio=1.0,
)
BW = 4.0e12 * 0.8          # tgpu effective HBM bandwidth [B/s]
FP8 = 2000e12              # tgpu dense fp8 peak [FLOP/s]


@pytest.fixture(scope="module")
def cat():
    return load_catalog(FIX)


@pytest.fixture(scope="module")
def serving():
    return load_perf_defaults().serving


def _parts(cat, serving, model="dense8", precision="fp8", acc="tgpu"):
    shape = ModelShape.build(cat.get("models", model), precision, serving)
    hw = Hardware.build(cat.get("accelerators", acc), shape, P, serving, 400.0, 8)
    return shape, hw


def _step(cat, serving, batch, ctx, par=None, model="dense8", acc="tgpu"):
    par = par or Parallel(1, 1, 1)
    shape, hw = _parts(cat, serving, model, acc=acc)
    dp = float(par.attn_dp)
    return forward_step(hw, par, shape, PH, serving, batch, batch / dp, shape.attended(ctx),
                        batch / dp * shape.kv_bytes_seq(ctx), "decode")


# ----------------------------------------------------------------- hand-computed


def test_decode_batch1_is_weights_over_bandwidth_plus_overhead(cat, serving):
    st_ = _step(cat, serving, 1, 0)
    # 8e9 params x 1 byte (fp8) / (4 TB/s x 0.8) + 2 ms; no KV at context 0.
    assert float(st_.total_s) == pytest.approx(8e9 / BW + 0.002, rel=1e-12)
    assert 8e9 / BW + 0.002 == pytest.approx(0.0045)


def test_attention_split_from_the_shape(cat, serving):
    shape, _ = _parts(cat, serving)
    # q and o: 32 heads x 128, k and v: 8 heads x 128, times hidden 4096, 32 layers
    assert shape.attention_params == 32 * 4096 * 2 * (32 + 8) * 128
    assert shape.attention_params + shape.other_params == pytest.approx(8e9)


def test_decode_batch1_with_kv_reads(cat, serving):
    kv = 32 * 2 * 8 * 128 * 1.0 * 4000  # layers x (K,V) x kv heads x head dim x 1 B x tokens
    st_ = _step(cat, serving, 1, 4000)
    assert float(st_.total_s) == pytest.approx((8e9 + kv) / BW + 0.002, rel=1e-12)


def test_decode_large_batch_is_compute_bound(cat, serving):
    st_ = _step(cat, serving, 4096, 0)
    # 4096 x 2 x 8e9 FLOP / (2000 TFLOPS x 0.4) versus 8e9 B / 3.2 TB/s
    assert float(st_.compute_s) == pytest.approx(4096 * 2 * 8e9 / (FP8 * 0.4))
    assert float(st_.roof_s) == pytest.approx(float(st_.compute_s))


def test_attention_runs_at_its_own_precision_not_the_fp4_peak(cat, serving):
    shape = ModelShape.build(cat.get("models", "moe"), "fp4", serving)
    assert shape.precision == "fp4" and shape.attention_precision == "fp8"
    # FP4 MoE checkpoints quantise the routed experts; the rest stays fp8.
    assert shape.expert_bytes_per_param == 0.5 and shape.other_bytes_per_param == 1.0


def test_tensor_parallel_comm_time(cat, serving):
    tokens = 64
    st_ = _step(cat, serving, tokens, 0, Parallel(4, 1, 1))
    msg = tokens * 4096 * 2.0
    ring = 2 * 3 / 4 * msg
    assert float(st_.comm_s) == pytest.approx(32 * 2 * (ring / (400e9 * 0.5) + 1e-5))
    assert float(_step(cat, serving, tokens, 0).comm_s) == 0.0


def test_tensor_parallel_across_domains_uses_scale_out(cat, serving):
    shape, hw = _parts(cat, serving)
    from dcplan.perf.roofline import allreduce_time

    m = 1e6
    # 16 GPUs = 2 domains of 8: in-domain ring on 8, then 2 (2-1)/2 of M/8 over 50 GB/s x 0.5
    want = 2 * 7 / 8 * m / (400e9 * 0.5) + 2 * 1 / 2 * m / 8 / (50e9 * 0.5) + 3e-5
    assert float(allreduce_time(hw, 16, m)) == pytest.approx(want)


def test_moe_decode_step_with_expert_parallelism(cat, serving):
    """DEP8 decode of 128 sequences: 128 x 4 / 64 = 8 tokens per expert on average."""
    shape, hw = _parts(cat, serving, "moe")
    par = Parallel(attn_tp=1, attn_dp=8, ep=8)
    b, ctx = 128.0, 1000.0
    serving = replace(serving, two_batch_overlap=False)    # in line (overlap tested apart)
    st_ = forward_step(hw, par, shape, PH, serving, b, b / 8, shape.attended(ctx),
                       b / 8 * shape.kv_bytes_seq(ctx), "decode")
    e, k = 64, 4
    expert = (70e9 - 10e9) / (e - k)                  # 1e9 per expert over 10 layers
    attn, other = 2e9, 10e9 - k * expert - 2e9        # given; the rest always-on
    ta = b / 8                                        # sequences per attention rank
    c1, m1 = ta * 2 * attn / (FP8 * 0.4), attn / BW
    c2 = ta * 10 * ctx * (4 * 32 * 576) / (FP8 * 0.5)  # absorbed MLA, fp8 attention
    m2 = ta * 576 * 10 * ctx / BW                      # latent KV, not split by TP 1
    # dense FFN / shared experts / head run on each rank's own tokens, weights
    # replicated per rank (attention TP 1)
    c3, m3 = ta * 2 * other / (FP8 * 0.4), other / BW
    hit = 1 - (1 - k / e) ** b                         # P(an expert is hit)
    hits = e / 8 * hit                                 # of the 8 local experts
    per_expert = b * k / e / hit
    imb = 1 + 0.2 * (1 - 1 / 8) + math.sqrt(2 * math.log(8) / (b * k / 8))
    # the busiest of 8 ranks: mean + sqrt(2 ln 8) binomial standard deviations of its
    # distinct experts (at 128 sequences nearly every expert is hit: hardly any spread)
    busy = min(hits + math.sqrt(2 * math.log(8)) * math.sqrt(8 * hit * (1 - hit)), 8)
    assert hits < busy < hits + 0.05
    c4 = 2 * expert * (hits * per_expert * imb + busy * 8) / (FP8 * 0.4)
    m4 = busy * expert / BW
    roof = max(c1, m1) + max(c2, m2) + max(c3, m3) + max(c4, m4)
    a2a = (b / 8) * imb * k * 4096 * (1 + 2)           # fp8 dispatch + bf16 combine
    comm = 10 * (a2a * 7 / 8 / (400e9 * 0.25) + 2 * 2e-5)   # at moe_comm_eff_frac
    assert per_expert == pytest.approx(8.0, rel=1e-3)
    assert float(st_.compute_s) == pytest.approx(c1 + c2 + c3 + c4)
    assert float(st_.roof_s) == pytest.approx(roof)
    assert float(st_.comm_s) == pytest.approx(comm)
    assert float(st_.total_s) == pytest.approx(roof + comm + 0.002)


def test_grouped_gemm_efficiency_ratio_moves_the_routed_experts_alone(cat, serving):
    """``moe_gemm_eff_ratio`` scales the routed experts' GEMM efficiency only: at 0.5
    their compute time doubles, every other component (and the dense model) is
    unchanged; the product is held to the GEMM bound (prefill 0.5 x 2.0 = 1.0 -> 0.8)."""
    shape, hw = _parts(cat, serving, "moe")
    par = Parallel(attn_tp=1, attn_dp=8, ep=8)
    b, ctx = 128.0, 1000.0
    serving = replace(serving, two_batch_overlap=False)

    def step(ratio, phase="decode", model_hw=hw, sh=shape, p=par):
        h = replace(model_hw, params=replace(P, moe_gemm_eff_ratio=ratio))
        return forward_step(h, p, sh, PH, serving, b, b / 8, sh.attended(ctx),
                            b / 8 * sh.kv_bytes_seq(ctx), phase)

    e, k = 64, 4
    expert = (70e9 - 10e9) / (e - k)
    hit = 1 - (1 - k / e) ** b
    hits, per_expert = e / 8 * hit, b * k / e / hit
    imb = 1 + 0.2 * (1 - 1 / 8) + math.sqrt(2 * math.log(8) / (b * k / 8))
    busy = min(hits + math.sqrt(2 * math.log(8)) * math.sqrt(8 * hit * (1 - hit)), 8)
    c4 = 2 * expert * (hits * per_expert * imb + busy * 8) / (FP8 * 0.4)   # ratio 1
    one, half = step(1.0), step(0.5)
    assert float(half.compute_s - one.compute_s) == pytest.approx(c4)     # 2 c4 - c4
    assert float(half.memory_s) == pytest.approx(float(one.memory_s))
    assert float(half.comm_s) == pytest.approx(float(one.comm_s))
    # prefill: 0.5 x 2.0 would be 1.0 of peak; held to 0.8, as 0.5 x 1.6 is
    assert float(step(2.0, "prefill").compute_s) == pytest.approx(
        float(step(1.6, "prefill").compute_s))
    assert float(step(2.0, "prefill").compute_s) < float(step(1.0, "prefill").compute_s)
    dense, dhw = _parts(cat, serving)
    one_p = Parallel(1, 1, 1)
    assert float(step(0.5, model_hw=dhw, sh=dense, p=one_p).total_s) == pytest.approx(
        float(step(1.0, model_hw=dhw, sh=dense, p=one_p).total_s))


def test_expert_parallel_under_tp_attention_sums_by_all_reduce(cat, serving):
    """TP8 EP8: every GPU holds every token, so no dispatch/combine all-to-all.

    Each GPU runs its own experts on all 16 tokens and one all-reduce of the MoE output
    (16 x 4096 bf16 values, at moe_comm_eff_frac 0.25) sums them, beside attention's
    all-reduce (at scaleup_eff_frac 0.5): the same communication as TP8 with experts
    sliced (EP 1). Under DEP8 the same tokens are dispatched by all-to-alls instead.
    """
    shape, hw = _parts(cat, serving, "moe")
    b = 16.0
    serving = replace(serving, two_batch_overlap=False)
    msg = b * 4096 * 2.0
    moe_ar = 2 * 7 / 8 * msg / (400e9 * 0.25) + 1e-5
    attn_ar = 2 * 7 / 8 * msg / (400e9 * 0.5) + 1e-5
    steps = {}
    for name, par in (("TP8 EP8", Parallel(8, 1, 8)), ("TP8", Parallel(8, 1, 1)),
                      ("DEP8", Parallel(1, 8, 8))):
        dp = float(par.attn_dp)
        steps[name] = forward_step(hw, par, shape, PH, serving, b, b / dp, shape.attended(0),
                                   0.0, "decode")
    assert float(steps["TP8 EP8"].comm_s) == pytest.approx(10 * (moe_ar + attn_ar))
    assert float(steps["TP8"].comm_s) == pytest.approx(10 * (moe_ar + attn_ar))
    imb = 1 + 0.2 * (1 - 1 / 8) + math.sqrt(2 * math.log(8) / (b * 4 / 8))
    a2a = (b / 8) * imb * 4 * 4096 * (1 + 2) * 7 / 8 / (400e9 * 0.25) + 2 * 2e-5
    assert float(steps["DEP8"].comm_s) == pytest.approx(10 * a2a)


def test_busiest_expert_parallel_rank_reads_more_expert_weights(cat, serving):
    """4 tokens x 4 of 64 experts: EP8 ranks read unevenly, EP 1 slices evenly.

    P(an expert is hit) = 1 - (60/64)^4. With experts sliced over 8 GPUs (EP 1) each
    reads 1/8 of the 64 p experts hit; with EP8 a rank owns 8 experts, hits Binomial(8,
    p) of them, and the busiest of 8 ranks is taken as mean + sqrt(2 ln 8) standard
    deviations: 1.82 + 2.04 x 1.19 = 4.24 experts, 2.3 times the mean.
    """
    shape, hw = _parts(cat, serving, "moe")
    expert = (70e9 - 10e9) / (64 - 4)
    hit = 1 - (60 / 64) ** 4
    busy = 8 * hit + math.sqrt(2 * math.log(8)) * math.sqrt(8 * hit * (1 - hit))
    assert busy == pytest.approx(4.24, abs=0.01)
    ep8 = forward_step(hw, Parallel(8, 1, 8), shape, PH, serving, 4.0, 4.0, 0.0, 0.0, "decode")
    ep1 = forward_step(hw, Parallel(8, 1, 1), shape, PH, serving, 4.0, 4.0, 0.0, 0.0, "decode")
    # everything but the routed experts' weight read is the same in both layouts
    assert float(ep8.memory_s) - float(ep1.memory_s) == pytest.approx(
        10 * (busy - 64 * hit / 8) * (expert / 10) / BW)


@given(tokens=st.floats(1.0, 4096.0), ep=st.sampled_from([2, 4, 8, 16]))
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_expert_parallel_weight_read_bounds(cat, serving, tokens, ep):
    """Whole experts (EP) read at least what sliced ones (EP 1) do, at most all local ones.

    Same GPUs, same tensor-parallel attention: only the routed experts' weight read
    differs. Sliced, each GPU reads 1/ep of every expert hit; whole, the busiest rank
    reads its own hits, never fewer than the mean share, never more than its E/ep experts.
    """
    shape, hw = _parts(cat, serving, "moe")
    serving = replace(serving, two_batch_overlap=False)   # one pass: weights read once
    expert = (70e9 - 10e9) / (64 - 4) / 10          # per layer [parameters], fp8
    whole = forward_step(hw, Parallel(ep, 1, ep), shape, PH, serving, tokens, tokens, 0.0,
                         0.0, "decode")
    sliced = forward_step(hw, Parallel(ep, 1, 1), shape, PH, serving, tokens, tokens, 0.0,
                          0.0, "decode")
    extra = float(whole.memory_s) - float(sliced.memory_s)
    mean_share = 64 * (1 - (1 - 4 / 64) ** tokens) / ep
    assert extra >= -1e-15
    assert extra <= 10 * (64 / ep - mean_share) * expert / BW * (1 + 1e-9) + 1e-15


def test_grouped_gemm_padding_charges_few_tokens_per_expert(cat, serving):
    shape, hw = _parts(cat, serving, "moe")
    par = Parallel(1, 8, 8)
    few = forward_step(hw, par, shape, PH, serving, 8.0, 1.0, 0.0, 0.0, "decode")
    nopad = forward_step(hw, par, shape, PhysicsParams(**{**PH.__dict__,
                                                         "grouped_gemm_pad_tokens": 0.0}),
                         serving, 8.0, 1.0, 0.0, 0.0, "decode")
    assert float(few.compute_s) > 2 * float(nopad.compute_s)


def test_kv_bytes_per_token_shapes(cat, serving):
    shape = ModelShape.build(cat.get("models", "dense70"), "bf16", serving)
    assert shape.kv_bytes_per_token == 80 * 2 * 8 * 128 * 2 == 327_680
    mla = ModelShape.build(cat.get("models", "moe"), "bf16", serving)
    assert mla.kv_bytes_per_token == 10 * 576 * 2
    real = load_catalog()
    r1 = ModelShape.build(real.get("models", "deepseek_r1"), "bf16", serving)
    assert r1.kv_bytes_per_token == 61 * 576 * 2 == 70_272  # MLA latent 512 + rope 64


def test_prefill_time_hand_computed(cat, serving):
    shape, hw = _parts(cat, serving)
    n = 1000.0
    st_ = forward_step(hw, Parallel(1, 1, 1), shape, PH, serving, n, n,
                       shape.attended(n / 2), shape.kv_bytes_seq(n), "prefill", steps=1.0)
    gemm = n * 2 * 8e9 / (FP8 * 0.5)
    attn = n * 32 * (n / 2) * 4 * 32 * 128 / (FP8 * 0.5)
    assert float(st_.compute_s) == pytest.approx(gemm + attn)
    assert float(st_.comm_s) == 0.0
    assert float(st_.overhead_s) == pytest.approx(0.002)


def test_memory_bounds_batch(cat, serving):
    shape, hw = _parts(cat, serving, "dense70")
    budget = 100e9 * serving.hbm_usable_frac - 70e9
    per_seq = 80 * 2 * 8 * 128 * serving.kv_bytes("fp8") * 2000
    got = float(max_batch(hw, Parallel(1, 1, 1), shape, serving, 2000))
    assert got == min(budget // per_seq, serving.max_batch_per_rank)
    # TP2 splits the 8 KV heads: half the KV per GPU, twice the room per GPU's share
    got2 = float(max_batch(hw, Parallel(2, 1, 1), shape, serving, 2000))
    assert got2 == min((100e9 * serving.hbm_usable_frac - 35e9) // (per_seq / 2),
                       serving.max_batch_per_rank)


# ------------------------------------------------------------ speculative decoding


def test_expected_tokens_per_step():
    assert float(expected_tokens(0.6, 2)) == pytest.approx(1 + 0.6 + 0.36)
    assert float(expected_tokens(0.0, 3)) == 1.0
    assert float(expected_tokens(1.0, 3)) == 4.0
    assert float(expected_tokens(0.8, 0)) == 1.0


def test_tpot_with_speculative_acceptance(cat, serving):
    shape, hw = _parts(cat, serving)
    b, ctx, n, a = 16.0, 1000.0, 2.0, 0.6
    inst = Instance(hw, Parallel(1, 1, 1), shape, PH, serving, n, a, 0.1)
    got = decode(inst, b, ctx)
    args = (shape.attended(ctx), b * shape.kv_bytes_seq(ctx), "decode")
    verify = forward_step(hw, Parallel(1, 1, 1), shape, PH, serving, b * 3, b * 3, *args)
    plain = forward_step(hw, Parallel(1, 1, 1), shape, PH, serving, b, b, *args)
    want = (float(verify.total_s) + 2 * 0.1 * float(plain.total_s)) / 1.96
    assert float(got.token_s) == pytest.approx(want)
    assert float(got.tokens_per_step) == pytest.approx(1.96)


# ------------------------------------------------------------------- queueing


def test_percentile_wait_is_exact_for_mm1():
    # M/M/1: P(W > t) = rho exp(-(mu - lambda) t), so the p-quantile for p > 1 - rho
    # is ln(rho / (1 - p)) / (mu - lambda); s = 1/mu = 0.1 s, rho = 0.8.
    s, rho = 0.1, 0.8
    mu_minus_lam = (1 - rho) / s
    for p in (50.0, 90.0, 99.0):
        want = math.log(rho / (1 - p / 100)) / mu_minus_lam
        assert float(wait_quantile(rho, s, 1.0, 1.0, p)) == pytest.approx(want)
    assert float(wait_quantile(0.3, s, 1.0, 1.0, 50.0)) == 0.0  # most requests do not wait
    assert float(wait_mean(rho, s, 1.0, 1.0)) == pytest.approx(rho / mu_minus_lam)


def test_mm1_closed_form_matches_a_simulation():
    rng = np.random.default_rng(7)
    lam, mu, n = 8.0, 10.0, 200_000
    inter = rng.exponential(1 / lam, n)
    service = rng.exponential(1 / mu, n)
    w = np.empty(n)
    w[0] = 0.0
    for i in range(1, n):  # Lindley's recursion
        w[i] = max(0.0, w[i - 1] + service[i - 1] - inter[i])
    for p in (90.0, 99.0):
        assert np.percentile(w, p) == pytest.approx(
            float(wait_quantile(lam / mu, 1 / mu, 1.0, 1.0, p)), rel=0.05)


def test_ttft_percentile_of_an_instance(cat, serving):
    shape, hw = _parts(cat, serving, "dense70")
    inst = Instance(hw, Parallel(1, 1, 1), shape, PH, serving)
    tr = Traffic(1000.0, 250.0, 0.0, 1.0)
    pt = aggregated(inst, tr, np.array([32.0]))
    rho = float(pt.utilisation[0])
    s = float(pt.prefill_alone_s[0])
    w99 = float(wait_quantile(rho, s, 1.0, PH.prefill_service_cv2, 99.0))
    assert float(pt.ttft_quantile(99.0)[0]) == pytest.approx(s + w99 + float(pt.step_s[0]) / 2)
    assert 0 < rho < 1
    # chunked prefill slows decode: TPOT = decode time per token + B t_pre / O
    assert float(pt.tpot_mean_s[0]) == pytest.approx(
        float(pt.token_s[0]) + 32 * float(pt.prefill_s[0]) / 250)


def test_closed_loop_obeys_littles_law(cat, serving):
    shape, hw = _parts(cat, serving, "dense70")
    inst = Instance(hw, Parallel(1, 1, 1), shape, PH, serving)
    tr = Traffic(1000.0, 250.0, 0.0, 0.5)
    conc = np.array([1.0, 4.0, 32.0, 200.0])
    bm = max_batch(hw, Parallel(1, 1, 1), shape, serving, tr.decode_context)
    pt, capped = solve_closed_loop(lambda b: (aggregated(inst, tr, b), b), conc,
                                   np.minimum(conc, bm))
    in_flight = pt.requests_per_s * (pt.ttft_mean_s + 250 * pt.tpot_mean_s)
    assert in_flight == pytest.approx(conc, rel=1e-4)
    assert not capped[0]
    # one request in flight decodes less than one sequence on average (it also prefills)
    assert 0 < pt.batch[0] < 1


def test_kv_handover_occupies_per_token_within_the_links(cat, serving):
    """Occupancy = max(KV bytes / (gpus x NIC x scale-out eff), tokens x per-token time);
    a request's own hand-over (its TTFT) = fixed latency + KV bytes / links."""
    shape = ModelShape.build(cat.get("models", "dense70"), "fp8", serving)
    tr = Traffic(1000.0, 250.0)
    # dense70: 80 layers x (K, V) x 8 KV heads x 128 x 1 B = 163,840 B per token
    kv = 1000 * 80 * 2 * 8 * 128
    assert float(shape.kv_bytes_seq(1000.0)) == kv
    nic = 400e9 / 8                                   # 400 Gb/s -> 5e10 B/s

    def handover(token_s, tp, latency_s=0.0, f=kv_handover_share_s):
        hw = Hardware.build(cat.get("accelerators", "tgpu"), shape,
                            replace(P, kv_handover_token_s=token_s,
                                    kv_handover_latency_s=latency_s), serving, 400.0, 8)
        return float(f(Instance(hw, Parallel(tp, 1, 1), shape, PH, serving), tr,
                       hw.scaleout_bytes_per_s))
    # no per-token time: the links (x 0.5), faster with more GPUs
    assert handover(0.0, 1) == pytest.approx(kv / (nic * 0.5))
    assert handover(0.0, 4) == pytest.approx(kv / (4 * nic * 0.5))
    # 1e-5 s per token (0.01 s) is slower than four GPUs' links (1.6 ms), not than one's
    # (6.6 ms): the slower of the two
    assert handover(1e-5, 4) == pytest.approx(1000 * 1e-5)
    assert kv / (nic * 0.5) < 1000 * 1e-5
    assert handover(1e-5, 1) == pytest.approx(1000 * 1e-5)
    assert handover(1e-6, 1) == pytest.approx(kv / (nic * 0.5))
    # what a request's TTFT adds: 0.08 s + 163.84 MB / (4 x 5e10 x 0.5 B/s) = 0.08164 s,
    # whatever the per-token occupancy, and the same fixed 0.08 s at any prompt length
    assert handover(1e-5, 4, 0.08, kv_transfer_s) == pytest.approx(0.08 + 1.6384e-3)
    assert handover(0.0, 4, 0.08, kv_transfer_s) == pytest.approx(0.08 + 1.6384e-3)
    assert handover(1e-5, 1, 0.0, kv_transfer_s) == pytest.approx(6.5536e-3)


def test_kv_handover_runs_per_dp_rank_where_the_engine_does(cat, serving):
    """Per-rank engines hand over as many prompts at once as the instance has DP ranks.

    dense70 at 1,000 prompt tokens and 1e-4 s per token: 0.1 s per stream; an instance
    of 8 attention-DP ranks handing over per rank takes 0.1 / 8 = 12.5 ms, still above
    its links' 163.84 MB / (8 x 5e10 B/s x 0.5) = 0.82 ms; one of TP 8 has one stream.
    """
    from dcplan.perf.serving import handover_streams

    shape = ModelShape.build(cat.get("models", "dense70"), "fp8", serving)
    hw = Hardware.build(cat.get("accelerators", "tgpu"), shape,
                        replace(P, kv_handover_token_s=1e-4), serving, 400.0, 8)
    tr = Traffic(1000.0, 250.0)
    dep8, tp8 = Parallel(1, 8, 8), Parallel(8, 1, 8)
    assert float(handover_streams(dep8, True)) == 8.0
    assert float(handover_streams(dep8, False)) == 1.0
    assert float(handover_streams(tp8, True)) == 1.0
    np.testing.assert_array_equal(handover_streams(dep8, np.array([True, False])), [8.0, 1.0])

    def t(par, per_rank, f=kv_handover_share_s):
        inst = Instance(hw, par, shape, PH, serving,
                        handover_streams=handover_streams(par, per_rank))
        return float(f(inst, tr, hw.scaleout_bytes_per_s))
    assert t(dep8, False) == pytest.approx(0.1)
    assert t(dep8, True) == pytest.approx(0.0125)
    assert t(tp8, True) == pytest.approx(0.1)
    # one request's own hand-over (what its TTFT adds: P has no fixed latency) is its
    # bytes over the links, however many streams and whatever the per-token occupancy
    assert t(dep8, True, kv_transfer_s) == t(dep8, False, kv_transfer_s) == pytest.approx(
        8.192e-4)
    # never faster than the links carry the bytes, however many streams
    assert 1000 * 80 * 2 * 8 * 128 / (8 * 5e10 * 0.5) == pytest.approx(8.192e-4)
    hw0 = replace(hw, params=replace(hw.params, kv_handover_token_s=1e-7))
    inst = Instance(hw0, dep8, shape, PH, serving, handover_streams=8.0)
    assert float(kv_handover_share_s(inst, tr, hw0.scaleout_bytes_per_s)) == pytest.approx(
        8.192e-4)


def test_a_slow_kv_handover_caps_the_prefill_pool(cat, serving):
    """Disaggregated: the prefill queue's server is busy for max(prefill, hand-over).

    Hand-over 1,000 tokens x 3.2768 ms = 3.2768 s, slower than the prefill (0.14 s):
    the utilisation is lambda x 3.2768 / n_p, so a closed loop never completes more
    than n_p / 3.2768 requests/s and approaches it as more requests are in flight,
    waiting in the prefill queue.
    """
    shape = ModelShape.build(cat.get("models", "dense70"), "fp8", serving)
    hw = Hardware.build(cat.get("accelerators", "tgpu"), shape,
                        replace(P, kv_handover_token_s=3.2768e-3), serving, 400.0, 8)
    inst = Instance(hw, Parallel(1, 1, 1), shape, PH, serving)
    tr = Traffic(1000.0, 250.0, 0.0, 0.5)
    pre = prefill(inst, tr)
    t_kv = 1000 * 3.2768e-3
    assert float(kv_handover_share_s(inst, tr, hw.scaleout_bytes_per_s)) == pytest.approx(t_kv)
    assert float(pre.batched_s) < t_kv
    n_p = 2.0
    pt = disaggregated(inst, inst, tr, np.array([1.0]), n_p, 3.0, pre)
    assert float(pt.utilisation[0]) == pytest.approx(
        float(pt.requests_per_s[0]) * t_kv / n_p)
    cap = n_p / t_kv
    conc = np.array([4.0, 16.0, 64.0, 256.0])
    pt, _ = solve_closed_loop(lambda b: (disaggregated(inst, inst, tr, b, n_p, 3.0, pre),
                                         b * 3.0), conc, conc / 3.0)
    rate = pt.requests_per_s
    assert np.all(rate < cap) and np.all(np.diff(rate) > 0)
    assert rate[-1] > 0.99 * cap
    # the prefill GPUs compute only while prefilling: their busy share is
    # lambda x t_prefill / n_p, not the queue's utilisation (near 1 here)
    busy = rate[-1] * float(pre.batched_s) / n_p
    ps = pre.batched
    dec = decode(inst, pt.batch[-1:], tr.decode_context)
    want = (n_p * busy * float(ps.compute_s) / float(ps.total_s)
            + 3.0 * float(dec.step.compute_s[0]) / float(dec.step_s[0])) / (n_p + 3.0)
    assert float(pt.utilisation[-1]) > 0.99 and busy < 0.05
    assert float(pt.compute_util[-1]) == pytest.approx(want, rel=1e-9)


def test_the_prefill_server_spread_is_the_prompt_lengths(cat, serving):
    """The server is busy for max(prefill, hand-over); its spread is the lengths' own.

    The hand-over is proportional to the prompt, and a prefill's fixed overheads only
    narrow its spread, so the lengths' CV^2 bounds the server's from above, whichever
    part is the slower, and does not move with the software's speed.
    """
    from dcplan.lengths import length_dist
    from dcplan.perf.serving import prefill_server

    shape = ModelShape.build(cat.get("models", "dense70"), "fp8", serving)
    dist = length_dist({"kind": "uniform", "min_frac": 0.5})
    tr = Traffic(1000.0, 250.0, 0.0, 1.0, dist)
    x, w = dist.nodes("input")
    mean = float(np.sum(np.asarray(w) * x))
    cv2 = float(np.sum(np.asarray(w) * x * x)) / mean ** 2 - 1.0
    # uniform on [0.5, 1] around its mean 0.75: variance 0.5^2 / 12, CV^2 = 0.0370; the
    # length nodes are a quadrature of it (0.0348)
    assert cv2 == pytest.approx((0.5 ** 2 / 12) / 0.75 ** 2, rel=0.1)
    for token_s, handover_binds in ((1e-3, True), (0.0, False)):
        hw = Hardware.build(cat.get("accelerators", "tgpu"), shape,
                            replace(P, kv_handover_token_s=token_s), serving, 400.0, 8)
        inst = Instance(hw, Parallel(1, 1, 1), shape, PH, serving)
        pre = prefill(inst, tr)
        kvt = float(kv_handover_share_s(inst, tr, hw.scaleout_bytes_per_s))
        srv = prefill_server(pre, kvt, tr)
        assert (kvt > float(pre.alone_s)) == handover_binds
        assert float(srv.alone_s) == pytest.approx(max(float(pre.alone_s), kvt))
        assert float(srv.batched_s) == pytest.approx(max(float(pre.batched_s), kvt))
        assert float(srv.service_cv2(0.0)) == pytest.approx(cv2)
        # the prefill alone has a smaller spread (its overheads do not scale)
        assert float(pre.service_cv2(0.0)) < cv2


def test_one_request_in_flight_is_served(cat):
    """Closed loop at concurrency 1 (as InferenceX and AIPerf run it) answers, within the SLO."""
    from dcplan.perf.goodput import workload_performance
    from dcplan.schema import Arrival

    wl = cat.get("workloads", "chat").model_copy(
        update={"arrival": Arrival.closed_loop, "concurrency": 1})
    rp = workload_performance(cat, "track8", "dense70", wl, **PERF_KW)
    assert rp.fits, rp.reason
    assert rp.goodput_tokens_per_s > 0


# --------------------------------------------------------------------------- MoE


def test_distinct_experts_limits():
    assert float(distinct_experts(256, 8, 1)) == pytest.approx(8.0)
    assert float(distinct_experts(256, 8, 1e6)) == pytest.approx(256.0)
    assert float(distinct_experts(64, 4, 2)) == pytest.approx(64 * (1 - (1 - 4 / 64) ** 2))
    vals = distinct_experts(64, 4, np.arange(1, 500))
    assert np.all(np.diff(vals) > 0) and vals[-1] <= 64


def test_engine_flags_to_layout():
    assert Parallel.from_engine(8, 8, True) == Parallel(1, 8, 8)
    assert Parallel.from_engine(8, 1, False) == Parallel(8, 1, 1)
    assert Parallel.from_engine(1, 16, False) == Parallel(1, 16, 16)
    assert Parallel(1, 16, 16).label() == "DEP16"
    assert Parallel(8, 1, 8).label() == "TP8 EP8"
    assert Parallel(4, 1, 1).label(moe=False) == "TP4"


# ------------------------------------------------------------------ rack level


def test_rack_performance_fields(cat):
    p = rack_performance(cat, "track8", "dense70", "chat")
    assert isinstance(p, RackPerf) and p.fits and p.reason == ""
    assert p.goodput_tokens_per_s > p.output_tokens_per_s > 0
    assert p.prefill_tokens_per_s == 0 and p.decode_tokens_per_s == 0  # aggregated
    assert p.idle_power_kw == 2.0 and 2.0 <= p.power_kw <= 12.0
    assert 8 % p.replica_gpus == 0 and p.parallel == f"TP{p.replica_gpus}"
    assert p.output_tokens_per_joule == pytest.approx(p.output_tokens_per_s / (p.power_kw * 1e3))
    assert p.total_tokens_per_joule == pytest.approx(p.goodput_tokens_per_s / (p.power_kw * 1e3))
    assert p.goodput_tokens_per_s == pytest.approx(p.output_tokens_per_s * (1000 + 250) / 250)
    assert p.input_tokens_per_s == pytest.approx(p.goodput_tokens_per_s - p.output_tokens_per_s)
    assert p.output_tokens_per_s_per_gpu == pytest.approx(p.output_tokens_per_s / 8)
    assert p.tokens_per_s_per_user == pytest.approx(1000 / p.tpot_median_ms)
    d = p.as_dict()
    assert d["rack_power_kw"] == p.power_kw and d["output_tokens_per_s_per_rack"] == \
        p.output_tokens_per_s


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
    rp = p.prefill_tokens_per_s / 1000
    rd = p.decode_tokens_per_s / 250
    assert p.requests_per_s == pytest.approx(1 / (1 / rp + 1 / rd))
    assert p.prefill_racks_per_decode_rack == pytest.approx(rd / rp)
    assert p.prefill_parallel.startswith("TP")


def test_mtp_workload_reports_its_draft_length(cat):
    p = rack_performance(cat, "track8", None, "moe_mtp")
    assert p.fits and p.speculative == "mtp" and p.draft_tokens in (1, 2, 3)
    su = build_setup(cat, "track8", None, "moe_mtp")
    assert p.acceptance_frac == su.physics.mtp_acceptance_frac
    assert p.tokens_per_step == pytest.approx(
        float(expected_tokens(p.acceptance_frac, p.draft_tokens)))


def test_power_between_idle_and_max(cat):
    su = build_setup(cat, "track8", "dense70", "chat")
    assert float(rack_power_kw(su.rack, su.acc, 0.0)) == pytest.approx(2.0)
    assert float(rack_power_kw(su.rack, su.acc, 1.0)) == pytest.approx(12.0)
    # Non-accelerator power: 12 - 8 x 1 kW at max, 2 - 8 x 0.1 kW at idle.
    assert float(rack_power_kw(su.rack, su.acc, 0.5)) == pytest.approx(
        8 * 0.55 + (1.2 + (4.0 - 1.2) * 0.5))


def test_candidate_layouts(cat, serving):
    rack = cat.get("racks", "track8")
    dense = candidate_layouts(rack, cat.get("models", "dense70"), serving)
    assert [int(p.attn_tp) for p in dense] == [1, 2, 4, 8]
    moe = candidate_layouts(rack, cat.get("models", "moe"), serving)
    labels = {p.label() for p in moe}
    assert {"DEP8", "TP8", "TP8 EP8", "TP1", "TP2 DP4 EP8"} <= labels
    assert all(8 % int(p.gpus) == 0 for p in moe)


def test_deterministic_and_cached(cat):
    a = rack_performance(cat, "track8", "moe", "moe_chat")
    b = rack_performance(cat, "track8", "moe", "moe_chat")
    assert a is b


@pytest.mark.slow
def test_every_shipped_rack_and_model_answers():
    real = load_catalog()
    for rack in real.racks:
        for model in real.models:
            for wl in real.workloads:
                p = rack_performance(real, rack, model, wl)
                assert p.fits or len(p.reason) > 20
                if p.fits:
                    assert p.goodput_tokens_per_s > 0 and p.power_kw > 0 and p.parallel
                    w = real.get("workloads", wl)
                    if not w.offline:
                        assert p.ttft_s <= w.ttft_s + 1e-9 and p.tpot_ms <= w.tpot_ms + 1e-9
                    r = real.get("racks", rack)
                    assert r.it_power_idle_kw <= p.power_kw <= r.it_power_max_kw + 1e-9


# ---------------------------------------------------------------- properties

PROP = settings(max_examples=25, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
WORKLOADS = st.sampled_from(["chat", "chat_disagg", "moe_chat", "moe_mtp"])


@PROP
@given(ttft=st.floats(0.05, 5.0), tpot=st.floats(5.0, 200.0), workload=WORKLOADS)
@pytest.mark.slow
def test_goodput_never_violates_its_slo(cat, ttft, tpot, workload):
    c = cat.replace("workloads", workload, ttft_s=ttft, tpot_ms=tpot)
    p = rack_performance(c, "track8", None, workload)
    if p.fits:
        assert p.ttft_s <= ttft * (1 + 1e-12)
        assert p.tpot_ms <= tpot * (1 + 1e-12)
    else:
        assert p.reason


@PROP
@given(p1=st.floats(50.0, 99.9), p2=st.floats(50.0, 99.9), workload=WORKLOADS)
@pytest.mark.slow
def test_higher_percentile_never_raises_goodput(cat, p1, p2, workload):
    lo_p, hi_p = sorted((p1, p2))
    lo = rack_performance(cat.replace("workloads", workload, percentile=lo_p), "track8", None,
                          workload)
    hi = rack_performance(cat.replace("workloads", workload, percentile=hi_p), "track8", None,
                          workload)
    assert hi.goodput_tokens_per_s <= lo.goodput_tokens_per_s * (1 + 1e-9)


@PROP
@given(bw=st.floats(20.0, 2000.0), factor=st.floats(1.0, 4.0),
       workload=st.sampled_from(["moe_chat", "moe_mtp"]))
@pytest.mark.slow
def test_more_scaleup_bandwidth_never_lowers_moe_throughput(cat, bw, factor, workload):
    lo = rack_performance(cat.replace("accelerators", "tgpu", scaleup_gb_per_s=bw), "track8",
                          None, workload)
    hi = rack_performance(cat.replace("accelerators", "tgpu", scaleup_gb_per_s=bw * factor),
                          "track8", None, workload)
    assert hi.goodput_tokens_per_s >= lo.goodput_tokens_per_s * (1 - 1e-9)
    assert hi.output_tokens_per_s >= lo.output_tokens_per_s * (1 - 1e-9)


@pytest.mark.slow
@PROP
@given(ttft=st.floats(0.2, 5.0), tpot=st.floats(10.0, 200.0), pct=st.floats(50.0, 99.0))
def test_mtp_with_acceptance_zero_never_helps(cat, ttft, tpot, pct):
    c = cat.replace("workloads", "moe_mtp", ttft_s=ttft, tpot_ms=tpot, percentile=pct)
    none = rack_performance(c.replace("workloads", "moe_mtp", speculative="none"), "track8",
                            None, "moe_mtp")
    zero = rack_performance(c.replace("workloads", "moe_mtp", acceptance_frac=0.0), "track8",
                            None, "moe_mtp")
    assert zero.goodput_tokens_per_s <= none.goodput_tokens_per_s * (1 + 1e-9)


@PROP
@given(b=st.integers(1, 512), ctx=st.floats(0, 20_000), n=st.integers(1, 3))
def test_acceptance_zero_never_shortens_tpot(cat, serving, b, ctx, n):
    shape, hw = _parts(cat, serving, "moe")
    par = Parallel(1, 8, 8)
    plain = decode(Instance(hw, par, shape, PH, serving), b, ctx)
    spec = decode(Instance(hw, par, shape, PH, serving, float(n), 0.0, 0.05), b, ctx)
    assert float(spec.token_s) >= float(plain.token_s)


@PROP
@given(bw=st.floats(1.0, 20.0), factor=st.floats(1.0, 3.0), workload=WORKLOADS)
@pytest.mark.slow
def test_more_hbm_bandwidth_never_lowers_throughput(cat, bw, factor, workload):
    lo = rack_performance(cat.replace("accelerators", "tgpu", hbm_tb_per_s=bw), "track8", None,
                          workload)
    hi = rack_performance(cat.replace("accelerators", "tgpu", hbm_tb_per_s=bw * factor),
                          "track8", None, workload)
    assert hi.output_tokens_per_s >= lo.output_tokens_per_s * (1 - 1e-9)
    assert hi.decode_tokens_per_s >= lo.decode_tokens_per_s * (1 - 1e-9)
    assert hi.goodput_tokens_per_s >= lo.goodput_tokens_per_s * (1 - 1e-9)


@PROP
@given(h1=st.floats(0.0, 0.95), h2=st.floats(0.0, 0.95), workload=WORKLOADS)
@pytest.mark.slow
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
    par = Parallel(1, 8, 8)
    slow = _step(cat, serving, b, ctx, par, model="moe", acc="tgpu")
    fast = _step(cat, serving, b, ctx, par, model="moe", acc="tgpu_fast")
    nxt = _step(cat, serving, b + 1, ctx, par, model="moe", acc="tgpu")
    assert float(fast.total_s) <= float(slow.total_s)
    assert float(nxt.total_s) >= float(slow.total_s)


def test_precision_enum_accepted(cat):
    assert rack_performance(cat, "track8", "dense70", "chat", precision=Precision.bf16).fits


def test_expert_all_to_all_across_domains(cat, serving):
    """DEP16 over two 8-GPU domains: a token crosses once per remote domain hit."""
    from dcplan.perf.roofline import moe_alltoall_time

    _, hw = _parts(cat, serving, "moe")
    tokens, k, per_token = 32.0, 4, 4096 * 3.0
    got = float(moe_alltoall_time(hw, 16, tokens, k, per_token))
    in_domain = tokens * k * per_token * ((8 - 1) + (16 - 8)) / 16  # own domain + forwarding
    remote = tokens * per_token * (2 - 1) * (1 - (1 - 1 / 2) ** k)   # 15/16 of a copy
    want = in_domain / (400e9 * 0.25) + remote / (50e9 * 0.5) + 2 * max(2e-5, 3e-5)
    assert got == pytest.approx(want)
    inside = float(moe_alltoall_time(hw, 8, tokens, k, per_token))
    assert inside == pytest.approx(tokens * k * per_token * 7 / 8 / (400e9 * 0.25) + 2 * 2e-5)
