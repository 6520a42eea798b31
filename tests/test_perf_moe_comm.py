"""MoE communication at rack scale: all-to-all by domain and phase, two-batch overlap.

Hand-computed expectations for an EP72 step on a 72-GPU NVLink domain (GB200 NVL72's
shape) with and without two-batch overlap, the prefill/decode kernel split, and the
batch cap per attention data-parallel rank.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from dcplan.catalog import load_catalog
from dcplan.perf.params import HardwareParams, PhysicsParams, load_perf_defaults
from dcplan.perf.roofline import (
    Hardware,
    ModelShape,
    Parallel,
    forward_step,
    max_batch,
    moe_alltoall_time,
)

FIX = Path(__file__).parent / "fixtures" / "perf" / "catalog"

P = HardwareParams(
    compute_eff_frac=0.5, decode_compute_eff_frac=0.4, moe_gemm_eff_ratio=1.0,
    attention_eff_frac=0.5,
    mla_attention_eff_frac=0.5, hbm_eff_frac=0.8, scaleup_eff_frac=0.5,
    moe_comm_eff_frac=0.25, moe_prefill_comm_eff_frac=0.75, scaleout_eff_frac=0.5,
    kv_handover_token_s=0.0,
    kv_handover_latency_s=0.0,
    step_overhead_s=0.002, layer_overhead_s=0.0, collective_latency_s=1e-5,
    scaleout_latency_s=3e-5, alltoall_latency_s=2e-5, comm_overlap_frac=0.0, ttft_overhead_s=0.0,
    power_base_frac=0.3, power_compute_weight=0.5, power_memory_weight=0.4,
)
PH = PhysicsParams(
    grouped_gemm_pad_tokens=8.0, moe_imbalance_frac=0.2, mtp_acceptance_frac=0.7,
    mtp_draft_cost_frac=0.1, draft_acceptance_frac=0.6, draft_cost_frac=0.1,
    closed_loop_arrival_cv2=0.5, prefill_service_cv2=0.0, tpot_cv_frac=0.05,
    wide_ep_comm_ratio=1.0,
    deepgemm_moe_time_ratio=1.0,
)
LINK = 400e9       # tgpu scale-up per direction [B/s]


@pytest.fixture(scope="module")
def serving():
    return load_perf_defaults().serving


@pytest.fixture(scope="module")
def r1(serving):
    """DeepSeek-R1 at fp8 on the 100 GB test GPU in a 72-GPU domain."""
    shape = ModelShape.build(load_catalog().get("models", "deepseek_r1"), "fp8", serving)
    hw = Hardware.build(load_catalog(FIX).get("accelerators", "tgpu"), shape, P, serving,
                        400.0, 72)
    return shape, hw


def _imb(tokens_instance: float, ep: int, k: int = 8) -> float:
    return 1 + 0.2 * (1 - 1 / ep) + math.sqrt(2 * math.log(ep) / (tokens_instance * k / ep))


def test_ep72_alltoall_hand_computed(r1):
    """EP72 inside one 72-GPU domain: every copy moves over NVLink, 71/72 of them remote."""
    shape, hw = r1
    t, k, b = 64.0, 8, 7168 * 3.0          # tokens per GPU, top-8, fp8 + bf16 bytes
    want = t * k * b * 71 / 72 / (LINK * 0.25) + 2 * 2e-5
    assert float(moe_alltoall_time(hw, 72, t, k, b)) == pytest.approx(want)
    # the throughput kernels of prefill reach three times the link share
    want_p = t * k * b * 71 / 72 / (LINK * 0.75) + 2 * 2e-5
    assert float(moe_alltoall_time(hw, 72, t, k, b, 0.75)) == pytest.approx(want_p)
    # the same EP72 on 8-GPU domains: 7/72 of the copies stay on NVLink, the rest
    # (forwarded inside the remote domain) cross scale-out once per remote domain
    hw8 = replace(hw, domain=8)
    m = 72 / 8
    in_domain = t * k * b * (7 + 64) / 72 / (LINK * 0.25)
    remote = t * b * (m - 1) * (1 - (1 - 1 / m) ** k) / (50e9 * 0.5)
    assert float(moe_alltoall_time(hw8, 72, t, k, b)) == pytest.approx(
        in_domain + remote + 2 * 3e-5)
    # decode's low-latency kernels send every remote copy straight over scale-out
    # (pure RDMA, no forwarding): 7/72 of the copies on NVLink, 64/72 over scale-out
    direct = (t * k * b * 7 / 72 / (LINK * 0.25) + t * k * b * 64 / 72 / (50e9 * 0.5)
              + 2 * 3e-5)
    assert float(moe_alltoall_time(hw8, 72, t, k, b, forward=False)) == pytest.approx(direct)
    # inside one domain both kernel families move the same bytes
    assert float(moe_alltoall_time(hw, 72, t, k, b, forward=False)) == pytest.approx(want)


def test_ep72_decode_step_without_and_with_two_batch_overlap(r1, serving):
    """DEP72 decode step: in line, comm adds to the roof; overlapped, 2 max(roof, comm) of
    half the batch, taken only when faster."""
    shape, hw = r1
    par = Parallel(attn_tp=1, attn_dp=72, ep=72)
    ctx = 2000.0

    def step(b, overlap):
        sv = replace(serving, two_batch_overlap=overlap)
        return forward_step(hw, par, shape, PH, sv, b, b / 72, shape.attended(ctx),
                            b / 72 * shape.kv_bytes_seq(ctx), "decode")

    b = 72 * 256.0                                   # 256 sequences per GPU
    plain, half = step(b, False), step(b / 2, False)
    # raw MoE communication of the plain step, by hand: 58 MoE layers, each one
    # all-to-all of 256 x imb tokens per GPU plus two latencies (attention TP 1 and the
    # 3 dense layers data-parallel: no all-reduce)
    a2a = 256 * _imb(b, 72) * 8 * 7168 * 3 * 71 / 72 / (LINK * 0.25) + 2 * 2e-5
    assert float(plain.comm_s) == pytest.approx(58 * a2a)
    assert float(plain.total_s) == pytest.approx(
        float(plain.roof_s) + 58 * a2a + 0.002)
    over = step(b, True)
    want = 2 * max(float(half.roof_s), float(half.comm_s)) + 0.002
    assert min(float(plain.total_s), want) == pytest.approx(float(over.total_s))
    assert bool(over.tbo) == (want < float(plain.total_s))
    # here the all-to-all outweighs the roof (25 % of a 400 GB/s link): overlap wins
    assert bool(over.tbo)
    assert float(over.comm_s) == pytest.approx(
        2 * (float(half.comm_s) - float(half.roof_s)))
    # one sequence per rank cannot be split in two micro-batches
    one = step(72.0, True)
    assert not bool(one.tbo)
    assert float(one.total_s) == pytest.approx(float(step(72.0, False).total_s))


def test_wide_decode_groups_take_the_wide_ep_ratio(r1, serving):
    """Decode groups wider than a board inside one domain run their all-to-all at
    wide_ep_comm_ratio times moe_comm_eff_frac (capped at the link); board-wide groups,
    prefill and groups that span domains keep the board's share."""
    shape, hw = r1
    sv = replace(serving, two_batch_overlap=False, board_ep_gpus=8)
    ph = replace(PH, wide_ep_comm_ratio=1.6)

    def comm(ep, phys, phase="decode", h=hw, per_gpu=64.0):
        par = Parallel(attn_tp=1, attn_dp=ep, ep=ep)
        b = ep * per_gpu
        return float(forward_step(h, par, shape, phys, sv, b, b / ep, shape.attended(2000.0),
                                  per_gpu * shape.kv_bytes_seq(2000.0), phase).comm_s)

    # DEP48 in a 72-GPU domain: 25 % x 1.6 = 40 % of the link, by hand
    a2a = (64 * _imb(48 * 64.0, 48) * 8 * 7168 * 3 * 47 / 48 / (LINK * 0.25 * 1.6)
           + 2 * 2e-5)
    assert comm(48, ph) == pytest.approx(58 * a2a)
    assert comm(48, PH) > comm(48, ph)
    # EP 8 (one board) is what moe_comm_eff_frac was fitted on: unchanged
    assert comm(8, ph) == pytest.approx(comm(8, PH))
    # prefill's throughput kernels are not touched
    assert comm(48, ph, "prefill") == pytest.approx(comm(48, PH, "prefill"))
    # EP 72 over 8-GPU domains: the group inside one domain is a board, unchanged
    hw8 = replace(hw, domain=8)
    assert comm(72, ph, h=hw8) == pytest.approx(comm(72, PH, h=hw8))
    # a ratio that would pass the whole link is capped at it
    big = replace(PH, wide_ep_comm_ratio=10.0)
    full = 64 * _imb(48 * 64.0, 48) * 8 * 7168 * 3 * 47 / 48 / LINK + 2 * 2e-5
    assert comm(48, big) == pytest.approx(58 * full)


def test_prefill_uses_the_throughput_kernels(r1, serving):
    shape, hw = r1
    par = Parallel(attn_tp=1, attn_dp=72, ep=72)
    sv = replace(serving, two_batch_overlap=False)
    n = 72 * 4096.0                                  # one 4,096-token chunk per GPU
    pre = forward_step(hw, par, shape, PH, sv, n, n / 72, shape.attended(2048.0),
                       0.0, "prefill")
    a2a = 4096 * _imb(n, 72) * 8 * 7168 * 3 * 71 / 72 / (LINK * 0.75) + 2 * 2e-5
    assert float(pre.comm_s) == pytest.approx(58 * a2a)


def test_overlap_never_slower_than_in_line(r1, serving):
    shape, hw = r1
    for ep, b in [(8, 8.0), (8, 512.0), (72, 72 * 16.0), (72, 72 * 1024.0)]:
        par = Parallel(attn_tp=1, attn_dp=ep, ep=ep)
        args = (b, b / ep, shape.attended(1000.0), b / ep * shape.kv_bytes_seq(1000.0))
        on = forward_step(hw, par, shape, PH, replace(serving, two_batch_overlap=True),
                          *args, "decode")
        off = forward_step(hw, par, shape, PH, replace(serving, two_batch_overlap=False),
                           *args, "decode")
        assert float(on.total_s) <= float(off.total_s) * (1 + 1e-12)


def test_batch_cap_is_per_attention_rank(r1, serving):
    """A DEP72 instance holds 72 ranks' batches; TP8 one rank's."""
    shape, hw = r1
    sv = replace(serving, max_batch_per_rank=64)
    dep = float(max_batch(hw, Parallel(1, 72, 72), shape, sv, 100.0))
    tp = float(max_batch(hw, Parallel(8, 1, 8), shape, sv, 100.0))
    assert dep == 72 * 64
    assert tp == 64
