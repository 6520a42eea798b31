"""Goodput under SLO: the parallel layout, batch and draft length that maximise tokens/s.

For a rack, model and workload the search runs over the layouts engines deploy
(:func:`candidate_layouts`: tensor parallel sizes for dense models; for MoE models
every instance size dividing the scale-up domain, with attention TP 1..8 and the rest
data-parallel, experts tensor- or expert-parallel), the draft lengths of the
workload's speculative decoding, and the decode batch, all at once (numpy arrays of
layouts x batches). A point is feasible when its prefill queue is stable and, unless
the workload is offline, its TTFT and TPOT at the workload's percentile meet the
limits (:mod:`dcplan.perf.latency`). The best feasible point (most requests/s per
GPU) is the operating point; ``docs/perf.md`` gives every equation.

Token accounting: ``goodput_tokens_per_s`` is input + output tokens/s per rack (what
the planner's demand counts); input, output and total figures are reported
separately, and per joule both ``output_tokens_per_joule`` (what MLPerf and InferenceX
count) and ``total_tokens_per_joule``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from dcplan.errors import InputError, Problem
from dcplan.lengths import FIXED, LengthDist
from dcplan.perf.latency import slot_wait, tpot_quantile, ttft_quantile, wait_tail_mean
from dcplan.perf.params import (
    Calibration,
    FitBasis,
    HardwareParams,
    PerfDefaults,
    PhysicsParams,
    PowerCurve,
    ServingParams,
    model_kind,
)
from dcplan.perf.power import (
    activity,
    cap_activity,
    capped_activity,
    check_power_cap,
    phase_clocks,
    rack_power_at_cap_kw,
    rack_power_kw,
    rack_power_percentile_kw,
)
from dcplan.perf.predict import calibration_architecture, hardware_params, physics_params
from dcplan.perf.roofline import (
    Hardware,
    ModelShape,
    Parallel,
    max_batch,
    weight_bytes_per_gpu,
)
from dcplan.perf.serving import (
    Instance,
    Traffic,
    aggregated,
    bottleneck_label,
    decode,
    handover_streams,
    kv_handover_share_s,
    kv_transfer_s,
    mix_sd_s,
    prefill,
    prefill_server,
    solve_closed_loop,
    take_point,
)
from dcplan.perf.software import engine_at
from dcplan.schema import (
    BYTES_PER_ELEMENT,
    LLM,
    Accelerator,
    Arrival,
    Precision,
    Rack,
    ServingMode,
    Speculative,
    Workload,
)

#: Bottleneck label of a disaggregated prefill pool whose instances hand KV caches over
#: more slowly than they prefill (``kv_handover_token_s``).
KV_HANDOVER = "kv_handover"



@dataclass(frozen=True)
class RackPerf:
    """Operating point of one rack serving one workload under its SLO.

    Token kinds: *input* = prompt tokens, *output* = generated tokens, *total* = both.

    Attributes
    ----------
    fits : bool
        False when the model cannot be served on this rack (see ``reason``).
    reason : str
        Why it does not fit (empty when it fits).
    goodput_tokens_per_s : float
        Input + output tokens/s per rack of requests that meet the SLO [tokens/s]
        (disaggregated: the blended rate of a rack split in the optimal
        prefill:decode ratio). The planner's demand counts the same tokens.
    output_tokens_per_s : float
        Output tokens/s per rack [tokens/s].
    prefill_tokens_per_s : float
        Disaggregated: input tokens/s one rack prefills as a prefill pool; 0 otherwise.
    decode_tokens_per_s : float
        Disaggregated: output tokens/s one rack decodes as a decode pool; 0 otherwise.
    power_kw : float
        Rack IT power at this operating point [kW] (basis: operating point, the
        time-average over prefill and decode; JSON also as ``power_operating_point_kw``).
    idle_power_kw : float
        Rack IT power when idle [kW].
    power_nameplate_kw : float
        The catalog's rack IT power at full load, ``it_power_max_kw`` [kW] (basis:
        nameplate; the model's power at activity 1).
    power_p99_kw : float
        Rack IT power exceeded 1 % of the time [kW] (basis: high percentile of the step
        mix: instances prefilling at once, Binomial over the rack's instances, at the
        model's prefill and decode activities; see
        :func:`dcplan.perf.power.rack_power_percentile_kw`); what breakers and the grid
        connection see.
    input_tokens_per_s : float
        Input tokens/s per rack [tokens/s].
    output_tokens_per_s_per_gpu, total_tokens_per_s_per_gpu : float
        Output and input + output tokens/s per accelerator [tokens/s].
    goodput_tokens_per_s_per_accelerator : float
        Same as ``total_tokens_per_s_per_gpu`` [tokens/s].
    tokens_per_s_per_user : float
        Median interactivity ``1000 / median TPOT`` [output tokens/s per request].
    output_tokens_per_joule, total_tokens_per_joule : float
        Output / input + output tokens per joule of rack IT energy [tokens/J].
    output_tokens_per_s_per_mw, total_tokens_per_s_per_mw : float
        Per MW of rack IT power [tokens/s/MW].
    bottleneck : str
        ``slo`` (a larger batch would break the TTFT/TPOT limit), ``memory_capacity``
        (the KV cache is full), ``batch_limit`` (the scheduler cap), else the ceiling
        that takes most time per request (``compute``, ``memory_bandwidth``,
        ``interconnect``, ``overhead``; a disaggregated prefill pool also
        ``kv_handover``: its instances hand KV caches over more slowly than they
        prefill).
    step_bound : str
        The ceiling that takes most time per request at the operating point.
    replica_gpus : int
        Accelerators per instance (decode instance when disaggregated).
    replicas_per_rack : float
        Instances per rack (decode pool when disaggregated).
    batch : int
        Sequences decoding per instance.
    max_batch : int
        Most sequences whose KV fits per instance.
    ttft_s, tpot_ms : float
        TTFT [s] and TPOT [ms] at the workload's percentile.
    ttft_median_s, tpot_median_ms : float
        Medians [s], [ms].
    percentile : float
        Percentile the SLO applies to.
    requests_per_s : float
        Requests completed per second per rack [1/s].
    activity : float
        Accelerator activity between idle (0) and max power (1) [-].
    precision, mode : str
    parallel : str
        Engine-style layout of the (decode) instance: ``TP8``, ``TP4 DP2 EP8``,
        ``DEP16`` (attention data-parallel 16 with expert parallelism 16).
    attention_tp, attention_dp, expert_parallel : int
        The layout's sizes.
    prefill_parallel : str
        Disaggregated: layout of the prefill instances.
    prefill_replica_gpus : int
        Disaggregated: accelerators per prefill instance (0 otherwise).
    prefill_handover_streams : int
        Disaggregated: KV hand-overs a prefill instance runs at once [count] (its
        attention-DP ranks where the engine hands over per rank, else 1; 0 otherwise).
    prefill_racks_per_decode_rack : float
        Disaggregated: prefill:decode capacity ratio in racks (0 otherwise).
    prefill_bottleneck, decode_bottleneck : str
        Disaggregated: what limits each pool.
    prefill_share : float
        Disaggregated: share of the accelerators in the prefill pool [-].
    prefill_utilisation : float
        Utilisation of the prefill queue at the operating point [0..1].
    speculative : str
        ``none``, ``mtp`` or ``draft``.
    draft_tokens : int
        Draft length chosen (0 without speculative decoding).
    acceptance_frac : float
        Per-token acceptance used [0..1].
    tokens_per_step : float
        Output tokens per decode step per sequence [tokens].
    arrival : str
        ``poisson`` or ``closed_loop``.
    concurrency : float
        Requests in flight per instance (closed loop: the workload's; open loop: the
        result of Little's law) [-].
    offline : bool
        No latency limits were applied.
    power_cap_frac : float
        Board power cap of every accelerator as a fraction of its ``max_power_w`` [-]
        (1: uncapped).
    power_at_cap_kw : float
        Rack IT power with every accelerator at its cap [kW] (basis: nameplate at the
        cap; ``power_nameplate_kw`` uncapped).
    prefill_clock_frac, decode_clock_frac : float
        Core clock of prefill / decode steps under the cap, as a fraction of the
        uncapped clock [-].
    prefill_activity, decode_activity : float
        Activity of a prefill / decode step at this operating point, before a cap
        scales its power [0..1].
    extrapolation : str
        Why this figure lies outside what the calibration measured ('' when it does
        not): an MoE expert-parallel group inside one scale-up domain wider than the
        calibration's fitted ones of its phase (``basis.domain_ep_max`` decode,
        ``basis.prefill_ep_max`` prefill)
        (:func:`ep_extrapolation`), and/or a prefill pool the KV hand-over bounds
        outside the rows its time is fitted on (:func:`handover_outside_fit`,
        :func:`kv_handover_extrapolation`), joined by "; and ".
    """

    fits: bool
    reason: str
    goodput_tokens_per_s: float
    output_tokens_per_s: float
    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    power_kw: float
    idle_power_kw: float
    input_tokens_per_s: float = 0.0
    output_tokens_per_s_per_gpu: float = 0.0
    total_tokens_per_s_per_gpu: float = 0.0
    goodput_tokens_per_s_per_accelerator: float = 0.0
    tokens_per_s_per_user: float = 0.0
    output_tokens_per_joule: float = 0.0
    total_tokens_per_joule: float = 0.0
    output_tokens_per_s_per_mw: float = 0.0
    total_tokens_per_s_per_mw: float = 0.0
    bottleneck: str = ""
    step_bound: str = ""
    replica_gpus: int = 0
    replicas_per_rack: float = 0.0
    batch: int = 0
    max_batch: int = 0
    ttft_s: float = 0.0
    tpot_ms: float = 0.0
    ttft_median_s: float = 0.0
    tpot_median_ms: float = 0.0
    percentile: float = 0.0
    requests_per_s: float = 0.0
    activity: float = 0.0
    precision: str = ""
    mode: str = ""
    parallel: str = ""
    attention_tp: int = 0
    attention_dp: int = 0
    expert_parallel: int = 0
    prefill_parallel: str = ""
    prefill_replica_gpus: int = 0
    prefill_handover_streams: int = 0
    prefill_racks_per_decode_rack: float = 0.0
    prefill_bottleneck: str = ""
    decode_bottleneck: str = ""
    prefill_share: float = 0.0
    prefill_utilisation: float = 0.0
    speculative: str = "none"
    draft_tokens: int = 0
    acceptance_frac: float = 0.0
    tokens_per_step: float = 1.0
    arrival: str = "poisson"
    concurrency: float = 0.0
    offline: bool = False
    power_nameplate_kw: float = 0.0
    power_p99_kw: float = 0.0
    power_cap_frac: float = 1.0
    power_at_cap_kw: float = 0.0
    prefill_clock_frac: float = 1.0
    decode_clock_frac: float = 1.0
    prefill_activity: float = 0.0
    decode_activity: float = 0.0
    extrapolation: str = ""

    def as_dict(self) -> dict[str, Any]:
        """Plain dict of every field plus the per-rack aliases the CLI's JSON names.

        The aliases: ``rack_power_kw`` and ``power_operating_point_kw`` (both
        ``power_kw``), ``output_tokens_per_s_per_rack``,
        ``total_tokens_per_s_per_rack``, ``input_tokens_per_s_per_rack``.
        """
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["rack_power_kw"] = self.power_kw
        out["power_operating_point_kw"] = self.power_kw
        out["output_tokens_per_s_per_rack"] = self.output_tokens_per_s
        out["input_tokens_per_s_per_rack"] = self.input_tokens_per_s
        out["total_tokens_per_s_per_rack"] = self.goodput_tokens_per_s
        return out


@dataclass(frozen=True)
class Layout:
    """A fixed parallel layout (``dcplan perf --tp --ep --dp-attention``).

    Attributes
    ----------
    tp : int
        Tensor parallelism (``--tp``).
    ep : int
        Expert parallelism (``--ep``; 1 for dense models).
    dp_attention : bool
        Data-parallel attention (each GPU its own attention).
    """

    tp: int
    ep: int = 1
    dp_attention: bool = False

    def parallel(self) -> Parallel:
        """The :class:`Parallel` layout these flags deploy."""
        return Parallel.from_engine(self.tp, self.ep, self.dp_attention)


@dataclass(frozen=True)
class Setup:
    """Everything one evaluation needs, resolved from the catalog.

    Under a power cap (:func:`capped_setup`), ``hw`` carries the phases' throttled
    clocks and ``prefill_power_scale`` / ``decode_power_scale`` the phases' dynamic-power
    scales (:func:`dcplan.perf.power.phase_clocks`); all 1 uncapped.
    ``handover_per_rank``: the calibration's engine for the accelerator hands KV caches
    over per attention-DP rank of a prefill instance
    (:meth:`dcplan.perf.params.SoftwareSpec.handover_per_rank`). ``basis``: what the
    calibration's rows cover (None without a calibration or for one written without
    it: no extrapolation is named).
    """

    rack: Rack
    acc: Accelerator
    model: LLM
    workload: Workload
    precision: Precision
    params: HardwareParams
    physics: PhysicsParams
    serving: ServingParams
    shape: ModelShape
    hw: Hardware | None
    power_cap_frac: float = 1.0
    prefill_power_scale: float = 1.0
    decode_power_scale: float = 1.0
    handover_per_rank: bool = False
    basis: FitBasis | None = None
    architecture: str | None = None


def build_setup(catalog, rack_id: str, model_id: str | None, workload: str | Workload,
                precision: Precision | str | None = None, *, defaults: PerfDefaults,
                calibration: Calibration | None) -> Setup:
    """Resolve ids against ``catalog`` (unknown ids raise :class:`InputError`).

    ``defaults`` and ``calibration`` (None: the a-priori defaults) as
    :func:`dcplan.perf.params.load_perf_inputs` or a :class:`~dcplan.case.Case` give them.

    Parameters
    ----------
    catalog : Catalog
        Loaded catalog (racks, accelerators, models, workloads).
    rack_id : str
        Rack id.
    model_id : str or None
        Model id; None: the workload's own model.
    workload : str or Workload
        Workload id, or a workload object.
    precision : {"bf16", "fp8", "fp4"}, optional
        Serving precision (default: the workload's).
    defaults : PerfDefaults
        The model's a-priori parameters (``Case.model_defaults``, or
        :func:`dcplan.perf.params.load_perf_inputs`).
    calibration : Calibration or None
        Fitted parameters (``Case.perf_calibration``); None: the a-priori defaults.

    Returns
    -------
    Setup
        Rack, accelerator, model, workload, precision, parameters, model shape and the
        accelerator in base units (None when it has no dense throughput at the
        precision).
    """
    rack = catalog.get("racks", rack_id)
    wl = workload if isinstance(workload, Workload) else catalog.get("workloads", workload)
    model = catalog.get("models", model_id or wl.model)
    acc = catalog.get("accelerators", rack.accelerator)
    prec = Precision(precision) if precision else wl.precision
    cal = calibration
    arch = calibration_architecture(acc, cal)
    params = hardware_params(defaults, acc.id, cal, acc.vendor, arch)
    physics = physics_params(defaults, cal)
    shape = ModelShape.build(model, prec, defaults.serving)
    hw = (Hardware.build(acc, shape, params, defaults.serving,
                         rack.scaleout_gbps_per_accelerator, rack.scaleup_domain)
          if acc.dense_tflops(prec) is not None else None)
    per_rank = defaults.software.handover_per_rank(engine_at(cal, acc.vendor))
    return Setup(rack, acc, model, wl, prec, params, physics, defaults.serving, shape, hw,
                 handover_per_rank=per_rank,
                 basis=cal.basis if cal is not None else None, architecture=arch)


def candidate_layouts(rack: Rack, model: LLM, serving: ServingParams,
                      fixed: Layout | None = None) -> list[Parallel]:
    """Parallel layouts engines deploy for ``model`` inside one scale-up domain.

    Dense models: tensor parallelism ``tp`` from ``tensor_parallel_sizes`` that
    divides the attention heads. MoE models: every instance size ``g`` dividing the
    scale-up domain, with attention TP ``t`` (from ``tensor_parallel_sizes``,
    dividing ``g`` and the heads) and ``g / t`` data-parallel attention ranks, and the
    experts either expert-parallel over all ``g`` GPUs or tensor-parallel (EP 1).

    Parameters
    ----------
    rack : Rack
        The rack (scale-up domain).
    model : LLM
        The model (attention heads, experts).
    serving : ServingParams
        Serving parameters (``tensor_parallel_sizes``).
    fixed : Layout, optional
        Only this layout (``--tp/--ep/--dp-attention``).

    Returns
    -------
    list of Parallel
        The layouts.
    """
    d = rack.scaleup_domain
    if fixed is not None:
        return [fixed.parallel()]
    tps = [t for t in serving.tensor_parallel_sizes if t <= d and model.attention_heads % t == 0]
    if not model.is_moe:
        return [Parallel(attn_tp=t, attn_dp=1, ep=1) for t in tps]
    out = []
    for g in (g for g in range(1, d + 1) if d % g == 0):
        for t in tps:
            if g % t:
                continue
            for ep in sorted({1, g}):
                if ep > model.experts_total:
                    continue
                if ep == 1 and g > max(tps):
                    continue  # experts tensor-parallel beyond 8 GPUs: not deployed
                out.append(Parallel(attn_tp=t, attn_dp=g // t, ep=ep))
    return out


def _stack(pars: list[Parallel], repeat: int = 1) -> Parallel:
    arr = [p for p in pars for _ in range(repeat)]
    return Parallel(*(np.array([getattr(p, f) for p in arr], float)[:, None]
                      for f in ("attn_tp", "attn_dp", "ep")))


def _drafts(su: Setup) -> tuple[list[int], float, float]:
    wl, ph, sv = su.workload, su.physics, su.serving
    if wl.speculative is Speculative.mtp:
        acc = ph.mtp_acceptance_frac if wl.acceptance_frac is None else wl.acceptance_frac
        return list(sv.mtp_draft_tokens), acc, ph.mtp_draft_cost_frac
    if wl.speculative is Speculative.draft:
        acc = ph.draft_acceptance_frac if wl.acceptance_frac is None else wl.acceptance_frac
        return list(sv.draft_tokens), acc, ph.draft_cost_frac
    return [0], 0.0, 0.0


def _batch_grid(limit: int) -> np.ndarray:
    """Integer batches 1..limit: every one up to 64, then ~2% steps."""
    small = np.arange(1, min(limit, 64) + 1)
    big = np.unique(np.round(np.geomspace(64, max(limit, 64), 160))) if limit > 64 else []
    return np.unique(np.concatenate([small, big, [limit]])).astype(float)


def _layout_batch_grid(bmax: np.ndarray) -> np.ndarray:
    """Batches to try for layouts whose memory allows ``bmax`` each, as a (1, n) row.

    :func:`_batch_grid` up to the largest limit, and every layout's own limit, so that
    each layout is tried at the largest batch its memory allows.
    """
    limits = np.floor(np.asarray(bmax, float).ravel())
    return np.unique(np.concatenate([_batch_grid(int(max(1.0, float(limits.max())))),
                                     limits[limits >= 1]]))[None, :]


def workload_lengths(wl: Workload) -> LengthDist:
    """Length distribution a workload is evaluated with (fixed when it gives none).

    Parameters
    ----------
    wl : Workload
        The workload.

    Returns
    -------
    LengthDist
        Its input and output length distribution [tokens], or the fixed one.
    """
    return wl.length_distribution or FIXED


def _traffic(su: Setup, arrival_cv2: float) -> Traffic:
    """The workload's traffic: mean input and output tokens, and their distribution.

    A service (open or closed loop) has no opening burst: ``burst_share`` 0.
    """
    wl = su.workload
    return Traffic(float(wl.input_tokens_mean), float(wl.output_tokens_mean),
                   float(wl.cache_hit_frac), arrival_cv2, workload_lengths(wl))


def _arrival_cv2(su: Setup) -> float:
    return (su.physics.closed_loop_arrival_cv2 if su.workload.arrival is Arrival.closed_loop
            else 1.0)


# ------------------------------------------------------------------- fit check


def _fit_problem(su: Setup, layouts: list[Parallel]) -> str | None:
    """Reason the model cannot run on the rack at all, or None."""
    acc, model, wl, rack = su.acc, su.model, su.workload, su.rack
    if acc.dense_tflops(su.precision) is None:
        have = [p.value for p in Precision if acc.dense_tflops(p) is not None]
        return (f"{acc.id} has no {su.precision.value} dense throughput in the catalog; "
                f"serve at {' or '.join(have)} (--precision)")
    if wl.speculative is Speculative.mtp and not model.mtp_modules:
        return (f"{model.id} has no multi-token-prediction module (mtp_modules 0); use "
                "--speculative none or draft")
    need = wl.input_tokens_mean + wl.output_tokens_mean
    if need > model.max_context_tokens:
        return (f"workload '{wl.id}' needs {need:,.0f} tokens of context but {model.id} supports "
                f"{model.max_context_tokens:,}")
    if not layouts:
        return (f"no parallel layout of {model.id} fits a scale-up domain of "
                f"{rack.scaleup_domain} (tensor parallelism must divide its "
                f"{model.attention_heads} heads)")
    domain = rack.scaleup_domain
    usable_gb = su.hw.hbm_capacity / 1e9
    per_gpu = min(float(weight_bytes_per_gpu(p, su.shape)) for p in layouts)
    weights_gb = su.shape.weight_bytes / 1e9
    if per_gpu >= su.hw.hbm_capacity:
        lower = [p.value for p in Precision
                 if BYTES_PER_ELEMENT[p] < BYTES_PER_ELEMENT[su.precision]
                 and acc.dense_tflops(p) is not None]
        fix = (f"serve at {' or '.join(lower)} (--precision) or use a rack with a larger "
               "scale-up domain" if lower else
               f"{acc.id} runs no precision below {su.precision.value}; use a rack with a "
               "larger scale-up domain or more memory per accelerator")
        return (f"{model.id} at {su.precision.value} needs {weights_gb:,.0f} GB of weights but one "
                f"scale-up domain of {domain} x {acc.id} holds {domain} x {acc.hbm_gb:g} GB = "
                f"{domain * acc.hbm_gb:,.0f} GB ({usable_gb * domain:,.0f} GB usable) in the "
                f"largest instance it allows; {fix}")
    bm = max(float(max_batch(su.hw, p, su.shape, su.serving, need)) for p in layouts)
    if bm < 1:
        kv_gb = float(su.shape.kv_bytes_seq(need)) / 1e9
        return (f"{model.id} at {su.precision.value} fits its {weights_gb:,.0f} GB of weights in "
                f"{domain} x {acc.id} but not the {kv_gb:,.1f} GB KV cache of one "
                f"{need:,.0f}-token sequence next to them")
    return None


def _no_fit(su: Setup, reason: str, bottleneck: str = "") -> RackPerf:
    wl = su.workload
    return RackPerf(
        fits=False, reason=reason, goodput_tokens_per_s=0.0, output_tokens_per_s=0.0,
        prefill_tokens_per_s=0.0, decode_tokens_per_s=0.0,
        power_kw=su.rack.it_power_idle_kw, idle_power_kw=su.rack.it_power_idle_kw,
        power_nameplate_kw=su.rack.it_power_max_kw, power_p99_kw=su.rack.it_power_idle_kw,
        bottleneck=bottleneck, precision=su.precision.value, mode=wl.mode.value,
        percentile=wl.percentile, speculative=wl.speculative.value, arrival=wl.arrival.value,
        offline=wl.offline,
    )


def _slo_reason(su: Setup, best_ttft: float, best_tpot: float) -> str:
    wl = su.workload
    return (f"cannot meet the SLO of workload '{wl.id}' (p{wl.percentile:g} TTFT {wl.ttft_s:g} s, "
            f"TPOT {wl.tpot_ms:g} ms) with {su.model.id} at {su.precision.value} on "
            f"{su.rack.id}: the best reachable are TTFT {best_ttft:.3g} s and TPOT "
            f"{best_tpot * 1e3:.3g} ms (each at its most favourable layout and batch)")


# ----------------------------------------------------------------- aggregated


def _batch_cap(sv, p: Parallel, i: int) -> float:
    """Scheduler limit of layout ``i``'s instance: the per-rank cap times its DP ranks."""
    return sv.max_batch_per_rank * float(np.asarray(p.attn_dp).ravel()[i])


def _label(p: Parallel, i: int, moe: bool) -> tuple[str, int, int, int]:
    t, d, e = (int(np.asarray(p.attn_tp).ravel()[i]), int(np.asarray(p.attn_dp).ravel()[i]),
               int(np.asarray(p.ep).ravel()[i]))
    return Parallel(t, d, e).label(moe), t, d, e


def _aggregated(su: Setup, layouts: list[Parallel]) -> RackPerf:
    wl, sv, ph = su.workload, su.serving, su.physics
    drafts, acc, cost = _drafts(su)
    nd = len(drafts)
    par = _stack(layouts, nd)
    n = np.tile(np.array(drafts, float), len(layouts))[:, None]
    tr = _traffic(su, _arrival_cv2(su))
    bmax = max_batch(su.hw, par, su.shape, sv, tr.decode_context)
    inst = Instance(su.hw, par, su.shape, ph, sv, n, acc, cost)
    pre = prefill(inst, tr)
    closed = wl.arrival is Arrival.closed_loop
    if closed:
        conc = np.full_like(bmax, float(wl.concurrency))
        pt, _capped = solve_closed_loop(lambda b: (aggregated(inst, tr, b, pre), b), conc,
                                        np.minimum(bmax, conc))
        grid = None
    else:
        grid = _layout_batch_grid(bmax)
        # Open loop: the running-request cap (engine limit or KV capacity) is bmax; a
        # request that finds every slot taken waits for one (M/G/c, Erlang C). Offline
        # jobs have no latency limit: their queue does not matter.
        pt = aggregated(inst, tr, grid, pre, slots=None if wl.offline else bmax)
    g = np.asarray(par.gpus, float)
    # closed loop: the batch is the time-average of sequences decoding, below one with a
    # single request in flight (it spends part of its time in prefill)
    valid = ((pt.batch <= bmax) & ((pt.batch > 0) if closed else (pt.batch >= 1))
             & (pt.utilisation < 1.0) & (bmax >= 1))
    shape = np.broadcast_shapes(np.shape(pt.requests_per_s), np.shape(g), np.shape(valid))
    valid = np.broadcast_to(valid, shape)
    rate_all = np.where(valid, pt.requests_per_s / g, -1.0)

    def meets(li, bi, at_pt=None, within=False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """SLO met at the points (li, bi); their TTFT [s] and TPOT [s] at the percentile.

        ``at_pt``: (Point, shape) to read the points from (default: the coarse grid's).
        ``within``: only whether the SLO is met (each percentile compared with its limit
        by one evaluation of the distribution there, no root finding); TTFT and TPOT
        None.
        """
        sub = take_point(*(at_pt or (pt, shape)), li, bi)
        if within:
            ok = np.asarray(sub.tpot_quantile(wl.percentile, ph.tpot_cv_frac,
                                              within_s=wl.tpot_ms / 1e3), bool).copy()
            if wl.offline:
                return np.ones(ok.shape, bool), None, None
            if ok.any():
                ok[ok] = take_point(sub, ok.shape, np.flatnonzero(ok), None).ttft_quantile(
                    wl.percentile, within_s=wl.ttft_s)
            return ok, None, None
        tp = sub.tpot_quantile(wl.percentile, ph.tpot_cv_frac)
        if wl.offline:
            return np.ones(tp.shape, bool), sub.ttft_quantile(wl.percentile), tp
        # TTFT (the costlier percentile) only where TPOT meets its limit
        ok_tp = tp * 1e3 <= wl.tpot_ms
        tt = np.full(tp.shape, np.inf)
        if ok_tp.any():
            tt[ok_tp] = take_point(sub, tp.shape, np.flatnonzero(ok_tp), None
                                   ).ttft_quantile(wl.percentile)
        return ok_tp & (tt <= wl.ttft_s), tt, tp

    # Whether the points meet the SLO (each percentile's distribution evaluated at its
    # limit), in order of falling rate, a chunk at a time, up to the first chunk with a
    # point that meets it (the best one; the same as evaluating every point); the
    # percentiles themselves (root finding) only at that point.
    order = np.argsort(-rate_all, axis=None, kind="stable")
    order = order[rate_all.ravel()[order] > 0]
    at = None
    for start in range(0, order.size, _CHUNK):
        li_c, bi_c = np.unravel_index(order[start:start + _CHUNK], shape)
        ok_c, _, _ = meets(li_c, bi_c, within=True)
        if ok_c.any():
            k = int(np.argmax(ok_c))
            at = (int(li_c[k]), int(bi_c[k]))
            one = take_point(pt, shape, li_c[k:k + 1], bi_c[k:k + 1])
            ttft_at = float(one.ttft_quantile(wl.percentile)[0])
            tpot_at = float(one.tpot_quantile(wl.percentile, ph.tpot_cv_frac)[0])
            break
    if at is None:
        li_v, bi_v = np.nonzero(valid)
        _, tt_v, tp_v = meets(li_v, bi_v)
        bt = float(np.min(tt_v, initial=np.inf))
        bp = float(np.min(tp_v, initial=np.inf))
        return _no_fit(su, _slo_reason(su, bt, bp), bottleneck="slo")
    if not closed:
        # between the grid's batches: the largest feasible batch of every layout that
        # could beat the best grid point (see _refine_batch); the answer is re-evaluated
        # at that batch and the next one tried (li, 0) and (li, 1)
        pt, at, ttft_at, tpot_at = _refine_batch(
            su, inst, tr, pre, bmax, g, pt, grid, rate_all, at, (ttft_at, tpot_at), meets)
        shape = np.shape(pt.requests_per_s)
        valid = ((pt.batch <= bmax) & (pt.batch >= 1) & (pt.utilisation < 1.0) & (bmax >= 1))
        rate_all = np.where(valid, pt.requests_per_s / g, -1.0)
    li, bi = at
    rate = np.where(valid, rate_all, -1.0)

    def ok_at(point) -> bool:
        return bool(valid[point] and meets(np.array([point[0]]), np.array([point[1]]),
                                           (pt, shape))[0][0])
    parts = {k: np.broadcast_to(v, rate.shape)[at] for k, v in pt.parts.items()}
    bound = bottleneck_label(parts)
    bottleneck = bound
    b_here = float(np.broadcast_to(pt.batch, rate.shape)[at])
    if not closed and bi + 1 < rate.shape[1]:
        nxt = (li, bi + 1)
        if (valid[nxt] and pt.requests_per_s[nxt] > pt.requests_per_s[at]
                and not ok_at(nxt)):
            bottleneck = "slo"
        elif b_here >= float(bmax[li, 0]) - 1e-9:
            bottleneck = ("batch_limit" if b_here >= _batch_cap(sv, par, li)
                          else "memory_capacity")
    elif not closed and b_here >= float(bmax[li, 0]) - 1e-9:
        bottleneck = ("batch_limit" if b_here >= _batch_cap(sv, par, li)
                      else "memory_capacity")
    act = float(activity(su.params, pt.compute_util[at], pt.memory_util[at]))
    phases = _phase_activities(su, pre, pt, at, li)
    steps = (phases[0], phases[1])
    if su.power_cap_frac < 1.0:
        act, phases = _capped_phases(su, act, phases)
    li_at, bi_at = np.array([li]), np.array([bi])
    label, t, d, e = _label(par, li, su.shape.is_moe)
    draft = int(n[li, 0])
    return _finish(
        su, req_rack=float(pt.requests_per_s[at]) * su.rack.accelerators_per_rack / g[li, 0],
        act=act, bottleneck=bottleneck, bound=bound, gpus=int(g[li, 0]), batch=b_here,
        max_batch_=float(bmax[li, 0]), ttft=ttft_at, tpot=tpot_at,
        ttft_med=float(take_point(pt, shape, li_at, bi_at).ttft_quantile(50.0)[0]),
        tpot_med=float(take_point(pt, shape, li_at, bi_at).tpot_quantile(
            50.0, ph.tpot_cv_frac)[0]), parallel=label,
        sizes=(t, d, e), draft=draft, acceptance=acc if draft else 0.0,
        tokens_per_step=float(np.broadcast_to(pt.tokens_per_step, rate.shape)[at]),
        utilisation=float(pt.utilisation[at]),
        concurrency=b_here + float(pt.requests_per_s[at] * pt.ttft_mean_s[at]),
        phases=phases, steps=steps)


#: Points tried per layout in the first round of refining the batch between grid points
#: (_refine_batch), and at least in every later one: a round of k points narrows the
#: interval (k + 1)-fold.
_REFINE_POINTS = 15

#: Points per round after the first, over all layouts left (at most 255 each).
_REFINE_BUDGET = 4096

#: Relative width of the batch interval at which the refinement stops [-]: the rate
#: found is within about this share of the supremum.
_REFINE_TOL = 1e-10


def _refine_batch(su: Setup, inst, tr, pre, bmax, g, coarse, grid, rate_all, at, lat,
                  meets):
    """Aggregated, open loop: the best batch of all real batches, not only the grid's.

    The grid (:func:`_layout_batch_grid`) has every integer up to 64 and ~2 % steps
    above. A layout's request rate rises with its batch and so do its TPOT, TTFT and
    utilisation, so its feasible batches are an interval from 1 and its best one is the
    largest feasible. Every grid point whose rate beats the best feasible grid point
    ``at`` was found infeasible, so only the interval below a layout's first such point
    ``b_j`` can hold a better answer: ``(b_{j-1}, b_j)``. In each of those, the largest
    feasible batch is found by a search of :data:`_REFINE_POINTS` points a round (up to
    255 when few layouts are left), vectorised over the layouts, to a relative width of
    :data:`_REFINE_TOL`.

    Why real batches: the open-loop batch is the time-average number of sequences
    decoding. At a later date (faster software) the same batch serves more requests,
    which loads the prefill queue more, so a batch feasible earlier can miss the TTFT
    later; the best *integer* batch then drops by one and the rate can fall (a
    sawtooth in the date). Over real batches a later date reaches the earlier rate at a
    smaller batch with no longer steps and no more load, so its best is never lower.

    Parameters
    ----------
    su : Setup
        The resolved setup.
    inst : Instance
        The instances (layouts x drafts as rows).
    tr : Traffic
        The workload's traffic.
    pre : Prefill
        Prefill times of ``tr`` on ``inst``.
    bmax : ndarray
        (L, 1) running-request limit of every layout [sequences].
    g : ndarray
        (L, 1) GPUs per instance [count].
    coarse : Point
        The coarse pass's points (L, n).
    grid : ndarray
        (1, n) batches of the coarse pass [sequences].
    rate_all : ndarray
        (L, n) requests/s per GPU of the coarse points, -1 where invalid [1/s].
    at : tuple of int
        (layout, grid index) of the best feasible grid point.
    lat : tuple of float
        Its TTFT and TPOT at the percentile [s].
    meets : callable
        ``meets(li, bi, (Point, shape), within)``: (SLO met, TTFT [s], TPOT [s]) at the
        points; ``within=True``: only whether met, by the distributions at the limits.

    Returns
    -------
    tuple
        (Point over (L, 2) batches, (layout, 0), TTFT [s], TPOT [s]): column 0 holds the
        best batch of the answer's layout, column 1 the next batch tried above it (the
        interval's upper end), so that the caller can say what stopped the batch there.
    """
    n_l, n_b = rate_all.shape
    b = np.broadcast_to(grid, rate_all.shape)
    limit = np.floor(bmax)
    best_rate = float(rate_all[at])
    # every layout's first grid batch (within its limit) whose rate beats the best;
    # rates rise with the batch, so higher grid points are infeasible as well
    raw = np.where((b <= limit) & (b >= 1),
                   np.broadcast_to(coarse.requests_per_s / g, rate_all.shape), -1.0)
    beats = raw > best_rate
    j = np.argmax(beats, axis=1)
    cand = np.flatnonzero(beats.any(axis=1) & (j >= 1))
    lo = b[cand, j[cand] - 1].astype(float)
    hi = b[cand, j[cand]].astype(float)
    # The first round tries the interval's lower end too: a layout infeasible there has
    # no feasible batch in it (feasibility falls with the batch) and is dropped; so is
    # a layout whose rate at its interval's upper end cannot beat the best found.
    hi_rate = raw[cand, j[cand]]
    # the answer so far: (layout, batch, next batch tried above it, rate)
    li0, bi0 = at
    pick = (li0, float(b[at]), float(b[li0, bi0 + 1]) if bi0 + 1 < n_b else float(b[at]) + 1.0,
            best_rate)
    found = np.full(cand.size, np.nan)
    found_rate = np.full(cand.size, -1.0)
    k = _REFINE_POINTS
    steps = np.arange(0, k) / k
    first = True
    ctx = (inst, pre, bmax, g)           # the instances evaluated (local: cand's rows)
    local = cand
    while cand.size and np.any(hi - lo > _REFINE_TOL * hi):
        if not first:
            # after the first round only the layouts left are evaluated (usually one),
            # with more points a round: a round costs about the same at any size
            k = int(np.clip(_REFINE_BUDGET // cand.size, _REFINE_POINTS, 255))
            steps = np.arange(1, k + 1) / (k + 1)
        pts = lo[:, None] + (hi - lo)[:, None] * steps[None, :]
        ok, r = _feasible_at(su, ctx[0], tr, ctx[1], ctx[2], ctx[3], local, pts, meets)
        last = np.where(ok.any(axis=1), k - 1 - np.argmax(ok[:, ::-1], axis=1), -1)
        rows = np.arange(cand.size)
        at_last, at_next = np.maximum(last, 0), np.minimum(last + 1, k - 1)
        up = last < k - 1
        found = np.where(last >= 0, pts[rows, at_last], found)
        found_rate = np.where(last >= 0, r[rows, at_last], found_rate)
        lo = np.where(last >= 0, found, lo)
        hi_rate = np.where(up, r[rows, at_next], hi_rate)
        hi = np.where(up, pts[rows, at_next], hi)
        kk = int(np.argmax(found_rate))
        if found_rate[kk] > pick[3]:
            pick = (int(cand[kk]), float(found[kk]), float(hi[kk]), float(found_rate[kk]))
        incumbent = pick[3]
        keep = (hi_rate > incumbent) | (found_rate >= incumbent)
        cand, lo, hi, hi_rate = cand[keep], lo[keep], hi[keep], hi_rate[keep]
        found, found_rate = found[keep], found_rate[keep]
        if first:
            keep = found_rate > -1.0                 # infeasible at the lower end: none
            cand, lo, hi, hi_rate = cand[keep], lo[keep], hi[keep], hi_rate[keep]
            found, found_rate = found[keep], found_rate[keep]
            sub = _instance_rows(inst, cand)
            ctx = (sub, prefill(sub, tr), bmax[cand], g[cand])
            first = False
        local = np.arange(cand.size)
    pick_l, pick_b, pick_next, _ = pick
    col = np.ones((n_l, 2))
    col[pick_l] = (pick_b, pick_next)
    pt = aggregated(inst, tr, col, pre, slots=None if su.workload.offline else bmax)
    shp = np.shape(pt.requests_per_s)
    if pick_l == li0 and pick_b == float(b[at]):
        ttft, tpot = lat
    else:
        # both percentiles at the point (the search compared them with their limits by
        # the distribution at the limit; the root-found values agree to ~1e-12)
        sub = take_point(pt, shp, np.array([pick_l]), np.array([0]))
        ttft = float(sub.ttft_quantile(su.workload.percentile)[0])
        tpot = float(sub.tpot_quantile(su.workload.percentile, su.physics.tpot_cv_frac)[0])
    return pt, (pick_l, 0), ttft, tpot


def _instance_rows(inst: Instance, rows: np.ndarray) -> Instance:
    """The instances (layouts x drafts) at ``rows`` of ``inst`` [index from 0]."""
    par = inst.par
    n = np.asarray(inst.draft_tokens, float)
    return dataclasses.replace(
        inst, par=Parallel(*(np.asarray(getattr(par, f), float)[rows]
                             for f in ("attn_tp", "attn_dp", "ep"))),
        draft_tokens=n[rows] if n.ndim else n)


def _feasible_at(su: Setup, inst, tr, pre, bmax, g, cand, pts, meets
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Layouts ``cand`` at batches ``pts`` (C, k): valid and meeting the SLO, and rate.

    Parameters
    ----------
    su : Setup
        The resolved setup.
    inst : Instance
        The instances (L rows).
    tr : Traffic
        The workload's traffic.
    pre : Prefill
        Prefill times of ``tr`` on ``inst``.
    bmax : ndarray
        (L, 1) running-request limits [sequences].
    g : ndarray
        (L, 1) GPUs per instance [count].
    cand : ndarray
        C layout indices [index from 0].
    pts : ndarray
        (C, k) batches to try [sequences].
    meets : callable
        As in :func:`_refine_batch` (called with ``within=True``).

    Returns
    -------
    (ndarray, ndarray)
        (C, k): whether each point is feasible, and its requests/s per GPU [1/s].
    """
    n_l = np.shape(bmax)[0]
    full = np.ones((n_l, pts.shape[1]))
    full[cand] = pts
    pt = aggregated(inst, tr, full, pre, slots=None if su.workload.offline else bmax)
    shp = np.shape(pt.requests_per_s)
    valid = np.broadcast_to((pt.batch <= np.floor(bmax)) & (pt.batch >= 1)
                            & (pt.utilisation < 1.0), shp)
    pts_l = np.repeat(cand, pts.shape[1])
    pts_b = np.tile(np.arange(pts.shape[1]), cand.size)
    ok = valid[pts_l, pts_b]
    if ok.any():
        m, _, _ = meets(pts_l[ok], pts_b[ok], (pt, shp), within=True)
        ok[ok] = m
    rate = np.broadcast_to(pt.requests_per_s / g, shp)[pts_l, pts_b]
    return ok.reshape(pts.shape), rate.reshape(pts.shape)


def _capped_phases(su: Setup, act: float, phases: tuple[float, float, float]
                   ) -> tuple[float, tuple[float, float, float]]:
    """Aggregated under a cap: time-average and phase activities that give the power.

    Each phase's activity times its dynamic-power scale, at most the cap's activity
    (:func:`dcplan.perf.power.capped_activity`); the time-average loses the same.

    Parameters
    ----------
    su : Setup
        The capped setup (power scales and cap).
    act : float
        Time-average activity at the operating point [0..1].
    phases : tuple of float
        (prefill step activity [0..1], decode step activity [0..1], prefill time share
        [0..1]).

    Returns
    -------
    tuple
        (time-average activity [0..1], (prefill, decode, prefill time share)).
    """
    a_p, a_d, rho = phases
    k = cap_activity(su.acc, su.power_cap_frac)
    e_p = float(capped_activity(a_p, su.prefill_power_scale, k))
    e_d = float(capped_activity(a_d, su.decode_power_scale, k))
    return max(act - rho * (a_p - e_p) - (1.0 - rho) * (a_d - e_d), 0.0), (e_p, e_d, rho)


#: Decode points whose exact prefill pairing is evaluated at once (_disaggregated).
_PAIR_CHUNK = 4


def _largest_feasible_rho(cand, ttft_k, shape, wl: Workload) -> np.ndarray:
    """Largest utilisation index per (decode candidate, prefill layout) meeting the TTFT.

    Parameters
    ----------
    cand : tuple of ndarray
        K decode points (layout, batch indices).
    ttft_k : callable
        ``ttft_k(cand, r_idx)``: whether the exact TTFT meets the limit at utilisation
        indices ``r_idx`` (K, P, n) [bool].
    shape : tuple
        (P prefill layouts, R utilisations).
    wl : Workload

    Returns
    -------
    ndarray
        (K, P) indices into the utilisation grid; -1 where none meets the limit.
        TTFT rises with utilisation, so the feasible indices are a prefix.
    """
    k, (p, r) = len(cand[0]), shape
    if wl.offline:
        return np.full((k, p), r - 1)
    # two passes of one call each (a call costs about the same at any size): every
    # _RHO_STRIDE-th index, then the indices between the last feasible one and the next
    coarse = np.arange(0, r, _RHO_STRIDE)
    idx = np.broadcast_to(coarse, (k, p, coarse.size))
    ok = ttft_k(cand, idx)
    n_ok = np.where(ok.any(axis=2), coarse.size - np.argmax(ok[:, :, ::-1], axis=2), 0)
    # TTFT rises with the index: the feasible ones are a prefix; n_ok of them
    base = np.where(n_ok > 0, coarse[np.maximum(n_ok - 1, 0)], -1)
    fine = base[:, :, None] + np.arange(1, _RHO_STRIDE)[None, None, :]
    ok_f = ttft_k(cand, np.clip(fine, 0, r - 1)) & (fine < r)
    # the fine ones are a prefix too
    n_f = np.where(ok_f.any(axis=2), _RHO_STRIDE - 1 - np.argmax(ok_f[:, :, ::-1], axis=2), 0)
    return base + n_f


#: Stride of the coarse pass over the utilisation grid (_largest_feasible_rho).
_RHO_STRIDE = 8


#: Operating points whose latency percentiles are evaluated at once (see _aggregated).
_CHUNK = 256

def _phase_activities(su: Setup, pre, pt, at, li: int) -> tuple[float, float, float]:
    """Aggregated: (prefill activity, decode activity, prefill time share) at ``at``.

    The prefill step's compute and HBM shares come from the batched prefill; the decode
    step's follow from the time-averaged shares ``u = rho u_prefill + (1 - rho) u_decode``.
    """
    rho = float(np.clip(np.broadcast_to(pt.utilisation, pt.compute_util.shape)[at], 0.0, 1.0))
    ps = pre.batched
    t_p = np.maximum(np.asarray(ps.total_s, float), 1e-30)
    pc = float(np.broadcast_to(np.asarray(ps.compute_s, float) / t_p, pt.compute_util.shape)[at])
    pm = float(np.broadcast_to(np.asarray(ps.memory_s, float) / t_p, pt.compute_util.shape)[at])
    uc, um = float(pt.compute_util[at]), float(pt.memory_util[at])
    if rho >= 1.0 - 1e-9:
        dc, dm = pc, pm
    else:
        dc = (uc - rho * pc) / (1.0 - rho)
        dm = (um - rho * pm) / (1.0 - rho)
    return (float(activity(su.params, pc, pm)), float(activity(su.params, dc, dm)), rho)


def _finish(su: Setup, *, req_rack: float, act: float, bottleneck: str, bound: str, gpus: int,
            batch: float, max_batch_: float, ttft: float, tpot: float, ttft_med: float,
            tpot_med: float, parallel: str, sizes: tuple[int, int, int], draft: int,
            acceptance: float, tokens_per_step: float, utilisation: float,
            concurrency: float, prefill_tps: float = 0.0, decode_tps: float = 0.0,
            prefill_gpus: int = 0, ratio: float = 0.0, power_kw: float | None = None,
            prefill_parallel: str = "", phases: tuple[float, float, float] | None = None,
            power_p99_kw: float | None = None,
            steps: tuple[float, float] = (0.0, 0.0), prefill_ep: int = 0) -> RackPerf:
    wl, rack = su.workload, su.rack
    n = rack.accelerators_per_rack
    i_tok, o_tok = wl.input_tokens_mean, wl.output_tokens_mean
    total = req_rack * (i_tok + o_tok)
    out_tps = req_rack * o_tok
    power = float(rack_power_kw(rack, su.acc, act)) if power_kw is None else power_kw
    if power_p99_kw is None:
        act_p, act_d, rho = phases if phases is not None else (act, act, 0.0)
        power_p99_kw = rack_power_percentile_kw(rack, su.acc, act_p, act_d, rho, n / gpus)
    return RackPerf(
        fits=True, reason="", goodput_tokens_per_s=total, output_tokens_per_s=out_tps,
        prefill_tokens_per_s=prefill_tps, decode_tokens_per_s=decode_tps,
        power_kw=power, idle_power_kw=rack.it_power_idle_kw,
        input_tokens_per_s=req_rack * i_tok,
        output_tokens_per_s_per_gpu=out_tps / n, total_tokens_per_s_per_gpu=total / n,
        goodput_tokens_per_s_per_accelerator=total / n,
        tokens_per_s_per_user=1.0 / tpot_med if tpot_med > 0 else 0.0,
        output_tokens_per_joule=out_tps / (power * 1e3),
        total_tokens_per_joule=total / (power * 1e3),
        output_tokens_per_s_per_mw=out_tps / (power / 1e3),
        total_tokens_per_s_per_mw=total / (power / 1e3),
        bottleneck=bottleneck, step_bound=bound, replica_gpus=gpus, replicas_per_rack=n / gpus,
        batch=int(round(batch)), max_batch=int(max_batch_), ttft_s=ttft, tpot_ms=tpot * 1e3,
        ttft_median_s=ttft_med, tpot_median_ms=tpot_med * 1e3, percentile=wl.percentile,
        requests_per_s=req_rack, activity=act, precision=su.precision.value,
        mode=wl.mode.value, parallel=parallel, attention_tp=sizes[0], attention_dp=sizes[1],
        expert_parallel=sizes[2], prefill_parallel=prefill_parallel,
        prefill_replica_gpus=prefill_gpus, prefill_racks_per_decode_rack=ratio,
        prefill_utilisation=utilisation, speculative=wl.speculative.value,
        draft_tokens=draft, acceptance_frac=acceptance, tokens_per_step=tokens_per_step,
        arrival=wl.arrival.value, concurrency=concurrency, offline=wl.offline,
        power_nameplate_kw=rack.it_power_max_kw, power_p99_kw=max(power_p99_kw, power),
        power_cap_frac=su.power_cap_frac,
        power_at_cap_kw=rack_power_at_cap_kw(rack, su.acc, su.power_cap_frac),
        prefill_clock_frac=su.hw.prefill_clock_frac if su.hw is not None else 1.0,
        decode_clock_frac=su.hw.decode_clock_frac if su.hw is not None else 1.0,
        prefill_activity=steps[0], decode_activity=steps[1],
        extrapolation="; and ".join(w for w in (
            model_kind_extrapolation(su.shape.is_moe, su.model.id, su.architecture,
                                     su.basis),
            ep_extrapolation(su.shape.is_moe, sizes[2], rack.scaleup_domain, su.basis,
                             prefill_ep, batch / gpus, su.serving.board_ep_gpus)) if w),
    )


def model_kind_extrapolation(is_moe: bool, model_id: str, architecture: str | None,
                             basis: FitBasis | None) -> str:
    """Say why a model's kind was not fitted on its architecture ('' if it was).

    Every efficiency is fitted per accelerator, architecture, vendor and pooled; where
    an architecture's rows run only mixture-of-experts models (MI355X: DeepSeek-R1
    alone), a dense model's GEMM efficiencies there are set by those rows through the
    routed experts' share of them (``moe_gemm_eff_ratio``), split by the pulls towards
    the vendor's level, not by any dense row on that architecture (docs/perf.md,
    Assumptions and known weaknesses). The same holds the other way round.

    Parameters
    ----------
    is_moe : bool
        The model has routed experts.
    model_id : str
        The model's id, for the message [-].
    architecture : str or None
        Architecture whose calibrated values the accelerator takes
        (:func:`dcplan.perf.predict.calibration_architecture`); None: not checked.
    basis : FitBasis or None
        What the calibration's rows cover; None, or no kinds recorded (a basis of
        before 2026-12-06, seventeenth): nothing is named.

    Returns
    -------
    str
        The reason in words, or ''.
    """
    if basis is None or architecture is None:
        return ""
    kinds = basis.kinds_on(architecture)
    kind = model_kind(is_moe)
    if kinds is None or not kinds or kind in kinds:
        return ""
    words = {"moe": "mixture-of-experts", "dense": "dense"}
    return (f"{model_id} is a {words[kind]} model, and the fitted rows on the "
            f"{architecture} architecture run {words[kinds[0]]} models only: the "
            f"efficiencies a {words[kind]} model's step leans on come there from "
            f"{words[kinds[0]]} rows and the vendor's other architectures, not from a "
            f"{words[kind]} row on it, so this figure is an extrapolation (docs/perf.md, "
            "Assumptions and known weaknesses)")


def handover_bounds(handover_s, prefill_step_s) -> np.ndarray:
    """Whether the KV hand-over, not the prefill step, bounds each prefill instance.

    Parameters
    ----------
    handover_s : array
        Hand-over time per prefill batch (:func:`dcplan.perf.serving.kv_handover_share_s`)
        [s].
    prefill_step_s : array
        Prefill step time of the batch (``Prefill.batched.total_s``) [s].

    Returns
    -------
    ndarray of bool
        True where the hand-over takes longer than the step [-].
    """
    return np.asarray(handover_s, float) > np.asarray(prefill_step_s, float)


def handover_outside_fit(basis: FitBasis | None, domain: int, prompt_tokens: float,
                         model_id: str) -> bool:
    """Whether a KV hand-over lies outside the rows its time is fitted on.

    Those rows (the calibration's ``basis``) ran some models on accelerators of some
    scale-up domains with prompts up to a length; a larger domain (NVLink rack
    hand-over), a longer prompt or another model is outside them, and with no
    disaggregated row at all every hand-over is. With no basis recorded (no
    calibration, or one written before bases were), nothing is named, as with
    :func:`ep_extrapolation`.

    Parameters
    ----------
    basis : FitBasis or None
        What the calibration's rows cover (``handover_domain_max``,
        ``handover_prompt_tokens_max``, ``handover_models``).
    domain : int
        The rack's scale-up domain [GPUs].
    prompt_tokens : float
        Mean prompt length of the workload [input tokens].
    model_id : str
        The served model's id.

    Returns
    -------
    bool
        True when the point is outside the fitted rows.
    """
    if basis is None:
        return False
    return (not basis.handover_models
            or domain > basis.handover_domain_max
            or prompt_tokens > basis.handover_prompt_tokens_max
            or model_id not in basis.handover_models)


def kv_handover_extrapolation(basis: FitBasis) -> str:
    """Why a hand-over-bound point outside its fitted rows is an extrapolation, in words.

    For a point whose prefill pool the KV hand-over bounds outside the rows its time
    is fitted on (:func:`handover_outside_fit`).

    Parameters
    ----------
    basis : FitBasis
        What the calibration's rows cover (the ``handover_*`` fields).

    Returns
    -------
    str
        The reason.
    """
    if not basis.handover_models:
        fitted = ("is not fitted: no disaggregated run is among the calibration's rows "
                  "(perf_defaults.yaml's value)")
    else:
        fitted = (f"is fitted on {', '.join(basis.handover_models)} runs with prompts of at "
                  f"most {basis.handover_prompt_tokens_max:,.0f} tokens on scale-up domains "
                  f"of at most {basis.handover_domain_max} GPUs")
    return ("the KV hand-over bounds the prefill pool; its time per prompt token (one "
            "stream per prefill instance, or per attention-DP rank for the engines of "
            f"perf_defaults.yaml software.kv_handover_per_dp_rank) {fitted}, so here it is "
            "an extrapolation (docs/perf.md, Serving; kv_handover_token_s in a calibration "
            "file changes it)")


def ep_extrapolation(is_moe: bool, ep: int, domain: int, basis: FitBasis | None,
                     prefill_ep: int | None = None, seqs_per_gpu: float | None = None,
                     board_gpus: int = 0) -> str:
    """Say why an expert-parallel group lies outside the measured ones ('' if it does not).

    The MoE all-to-alls are fitted on rows whose groups inside one scale-up domain are
    at most ``basis.domain_ep_max`` wide in decode and ``basis.prefill_ep_max`` in
    prefill (decode and prefill run different kernels; wider fitted groups span domains
    over the scale-out network); a wider group inside one domain (NVL72-class wide EP)
    is an extrapolation of that fit.

    Parameters
    ----------
    is_moe : bool
        The model has routed experts.
    ep : int
        Expert-parallel group of the decode instance (aggregated: of the instance, which
        prefills too) [GPUs].
    domain : int
        The rack's scale-up domain [GPUs].
    basis : FitBasis or None
        What the calibration's rows cover; None (not recorded): nothing is named. A
        width of 0 (no fitted row has such a group inside one domain): every
        expert-parallel group of that phase inside one domain is named.
    prefill_ep : int, optional
        Expert-parallel group of a disaggregated prefill instance [GPUs]; None or 0
        (aggregated): the instance ``ep`` prefills too.
    seqs_per_gpu : float, optional
        The decode instance's sequences per GPU at the operating point [sequences per
        GPU], for :func:`small_batch_extrapolation` (None: not checked).
    board_gpus : int
        GPUs of one board [GPUs], for the same (0: not checked).

    Returns
    -------
    str
        The reasons in words, joined by "; and ", or ''.
    """
    if basis is None or not is_moe:
        return ""
    groups = [("decode", ep, basis.domain_ep_max),
              ("prefill", prefill_ep or ep, basis.prefill_ep_max)]
    out = [(phase, n, fitted) for phase, n, fitted in groups
           if max(fitted, 1) < n <= domain]
    small = small_batch_extrapolation(ep, domain, basis, seqs_per_gpu, board_gpus)
    if not out:
        return small

    def fitted_on(fitted: int) -> str:
        return (f"is fitted on groups of at most {fitted} GPUs inside a domain"
                if fitted > 0 else "is fitted on no group inside one domain")

    parts = [f"{phase} expert parallelism {n} inside one {domain}-GPU scale-up domain: "
             f"the {phase} all-to-all {fitted_on(fitted)}" for phase, n, fitted in out]
    wide = ("; ".join(parts) + " (wider fitted groups span domains over the scale-out "
            "network), so this figure is an extrapolation (docs/perf.md, Assumptions and "
            "known weaknesses)")
    return "; and ".join(w for w in (wide, small) if w)


def small_batch_extrapolation(ep: int, domain: int, basis: FitBasis | None,
                              seqs_per_gpu: float | None, board_gpus: int) -> str:
    """Say why a wide decode group decodes below the fitted rows' batches ('' if not).

    A decode expert-parallel group wider than one board inside one scale-up domain is
    fitted on rows that decode at least ``basis.wide_decode_seqs_per_gpu_min``
    sequences per GPU (a throughput run); below that, the all-to-all latency and the
    step and layer overheads, which only rows on 8-GPU boards pin, weigh more, and a
    check against a newer published GB200 NVL72 result at 125 tokens/s per user, where
    they bound the step, gave 68 % of the measured throughput (docs/perf.md,
    Assumptions and known weaknesses).

    Parameters
    ----------
    ep : int
        Expert-parallel group of the decode instance [GPUs].
    domain : int
        The rack's scale-up domain [GPUs].
    basis : FitBasis or None
        What the calibration's rows cover; None, or no recorded batch (a basis of
        before 2026-12-06, thirteenth): nothing is named.
    seqs_per_gpu : float or None
        Sequences the decode instance holds per GPU [sequences per GPU]; None: not
        checked.
    board_gpus : int
        GPUs of one board (``serving.board_ep_gpus``) [GPUs]; 0: not checked.

    Returns
    -------
    str
        The reason in words, or ''.
    """
    if (basis is None or basis.wide_decode_seqs_per_gpu_min is None or seqs_per_gpu is None
            or not board_gpus or not board_gpus < ep <= domain):
        return ""
    fitted = basis.wide_decode_seqs_per_gpu_min
    if fitted and seqs_per_gpu >= fitted:
        return ""
    rows = (f"the fitted decode rows of groups wider than a board inside one domain hold "
            f"at least {fitted:,.0f} per GPU" if fitted else
            "no fitted decode row has a group wider than a board inside one domain")
    return (f"decode at {seqs_per_gpu:,.0f} sequences per GPU with expert parallelism {ep} "
            f"inside one {domain}-GPU scale-up domain: {rows}; at smaller batches the "
            "all-to-all latency and the step overheads, fitted on 8-GPU boards only, weigh "
            "more (where they bound the step the figure may be low: a newer published GB200 "
            "NVL72 result at 125 tokens/s per user measured 1.5 times the model's "
            "throughput), so this figure is an extrapolation (docs/perf.md, Assumptions and "
            "known weaknesses)")


# -------------------------------------------------------------- disaggregated

_RHO_GRID = np.linspace(0.005, 0.995, 199)


def _disaggregated(su: Setup, layouts: list[Parallel]) -> RackPerf:
    wl, sv, ph, rack = su.workload, su.serving, su.physics, su.rack
    n_rack = rack.accelerators_per_rack
    tr = _traffic(su, _arrival_cv2(su))
    o_tok = wl.output_tokens_mean
    # Decode pool: layouts x drafts x batches, TPOT at the percentile (no prefill).
    drafts, acc, cost = _drafts(su)
    nd = len(drafts)
    par = _stack(layouts, nd)
    n = np.tile(np.array(drafts, float), len(layouts))[:, None]
    bmax = max_batch(su.hw, par, su.shape, sv, tr.decode_context)
    inst = Instance(su.hw, par, su.shape, ph, sv, n, acc, cost)
    if wl.arrival is Arrival.closed_loop:
        grid = np.array([[float(wl.concurrency)]])
    else:
        grid = _layout_batch_grid(bmax)
    dec = decode(inst, grid, tr.decode_context)
    g = np.asarray(par.gpus, float)
    # TPOT of a decode-only pool: no prefill interrupts it, so its spread (base and
    # batch mix) does not depend on the request's output length: one node.
    mix = mix_sd_s(dec, tr)
    tpot_p = tpot_quantile(dec.token_s, 0.0, 0.0, o_tok, ph.tpot_cv_frac, wl.percentile,
                           None, 1.0, mix)
    valid = (grid <= bmax) & (bmax >= 1)
    ok_d = valid & ((tpot_p * 1e3 <= wl.tpot_ms) | wl.offline)
    rate_d = np.where(ok_d, grid / (o_tok * dec.token_s) / g, -1.0)   # requests/s per GPU
    # Admission: open-loop requests that find all of a decode instance's bmax running-
    # request slots taken wait for one (M/G/c); each holds a slot for its decode.
    slots = wl.arrival is Arrival.poisson and not wl.offline
    if slots:
        slot_p, slot_t = slot_wait(bmax, grid, o_tok * dec.token_s, tr.arrival_cv2,
                                   tr.lengths.cv("output") ** 2)
    else:
        slot_p, slot_t = np.zeros_like(rate_d), np.zeros_like(rate_d)
    slot_p = np.broadcast_to(slot_p, rate_d.shape)
    slot_t = np.broadcast_to(slot_t, rate_d.shape)
    step_half = np.broadcast_to(dec.step_s / 2.0, rate_d.shape)
    # Prefill pool: layouts x utilisation; TTFT at the percentile from the prompt-length
    # nodes, the queue (with the prompts' service spread) and the fixed parts.
    ppar = _stack(layouts)
    pinst = Instance(su.hw, ppar, su.shape, ph, sv,
                     handover_streams=handover_streams(ppar, su.handover_per_rank))
    pbm = max_batch(su.hw, ppar, su.shape, sv, tr.input_tokens)
    pre = prefill(pinst, tr)
    kvt = kv_transfer_s(pinst, tr, su.hw.scaleout_bytes_per_s)
    kv_share = kv_handover_share_s(pinst, tr, su.hw.scaleout_bytes_per_s)
    best_tpot = float(np.min(np.where(valid, tpot_p, np.inf)))
    if not ok_d.any():
        ttft0 = float(np.min(np.where(pbm >= 1, pre.alone_s + kvt + su.hw.params.ttft_overhead_s,
                                        np.inf)))
        return _no_fit(su, _slo_reason(su, ttft0, best_tpot), bottleneck="slo")
    rho = _RHO_GRID[None, :]
    srv = prefill_server(pre, kv_share, tr)
    serve_b = srv.batched_s
    tail = wait_tail_mean(rho, srv.alone_s, tr.arrival_cv2,
                          srv.service_cv2(ph.prefill_service_cv2))
    fixed_p = kvt + su.hw.params.ttft_overhead_s
    gp = np.asarray(ppar.gpus, float)
    rate_p_all = np.where(pbm >= 1, rho / (serve_b * gp), -1.0)

    def prefill_ttft_k(cand, r_idx):
        """TTFT within the limit: decode candidates ``cand`` x prefill layouts at ``r_idx``.

        By the exact TTFT distribution at the limit (no root finding) [bool].
        """
        extra = (None,) * (np.ndim(r_idx) - 1)           # r_idx: (K, P) or (K, P, n)
        p_idx = np.arange(tail.shape[0])[(None, slice(None)) + extra[1:]]

        def at_r(v):
            return np.broadcast_to(v, tail.shape)[p_idx, r_idx]

        def per_k(v):
            return v[cand][(slice(None),) + extra]
        return ttft_quantile(at_r(fixed_p) + per_k(step_half),
                             tuple(at_r(x) for x in pre.nodes), pre.node_w,
                             at_r(rho), at_r(tail), wl.percentile,
                             slot_p=per_k(slot_p), slot_tail_s=per_k(slot_t),
                             within_s=wl.ttft_s)

    def prefill_ttft(at, percentile, pr=None):
        """TTFT at ``percentile`` [s], prefill grid (or its point ``pr``) with ``at``."""
        if pr is None:
            return ttft_quantile(fixed_p + step_half[at], pre.nodes, pre.node_w, rho, tail,
                                 percentile, slot_p=slot_p[at], slot_tail_s=slot_t[at])

        def one(v):
            return np.broadcast_to(v, tail.shape)[pr]
        return ttft_quantile(one(fixed_p) + step_half[at], tuple(one(x) for x in pre.nodes),
                             pre.node_w, one(rho), one(tail), percentile,
                             slot_p=slot_p[at], slot_tail_s=slot_t[at])

    # Pair the pools. An optimistic screen first: a request's TTFT is at least its
    # prefill's TTFT plus the decode point's half step (the slot wait only adds), and
    # at least the slot wait's own quantile plus the shortest fixed part; so every
    # decode point's best prefill rate within the screened budget bounds its true one
    # from above. Then, in order of that bound, the exact best prefill point of each
    # candidate (largest utilisation per prefill layout whose exact TTFT of the sum
    # meets the limit: TTFT rises with it, so a coarse pass and a fine one find it),
    # until no unchecked candidate's bound beats the best exact pair.
    ttft0 = ttft_quantile(fixed_p, pre.nodes, pre.node_w, rho, tail, wl.percentile)
    ttft0 = np.where(np.isfinite(ttft0) & (pbm >= 1), ttft0, np.inf)
    slot_q = slot_wait_quantile(slot_p, slot_t, wl.percentile)
    if wl.offline:
        budget = np.full(rate_d.shape, np.inf)
    else:
        floor = float(np.min(np.broadcast_to(fixed_p, tail.shape)[:, 0]
                             + np.min(np.broadcast_arrays(*pre.nodes), axis=0)[:, 0]))
        budget = np.where(step_half + slot_q + floor <= wl.ttft_s, wl.ttft_s - step_half,
                          -np.inf)
    rp_bound = best_rate_within(ttft0, rate_p_all, budget)
    with np.errstate(divide="ignore"):
        bound = np.where(ok_d & (rp_bound > 0),
                         1.0 / (1.0 / np.maximum(rp_bound, 1e-300) + 1.0 / rate_d), -1.0)
    order = np.argsort(-bound, axis=None, kind="stable")
    order = order[bound.ravel()[order] > 0]
    best = (-1.0, None, None)                       # (pair rate, decode point, prefill point)
    for start in range(0, min(order.size, 16 * _PAIR_CHUNK), _PAIR_CHUNK):
        if best[0] > 0 and bound.ravel()[order[start]] <= best[0]:
            break
        cand = np.unravel_index(order[start:start + _PAIR_CHUNK], bound.shape)
        r_idx = _largest_feasible_rho(cand, prefill_ttft_k, tail.shape, wl)
        rates = np.where(r_idx >= 0, rate_p_all[np.arange(tail.shape[0])[None, :],
                                                np.maximum(r_idx, 0)], -1.0)
        p_best = np.argmax(rates, axis=1)
        rp_k = rates[np.arange(rates.shape[0]), p_best]
        with np.errstate(divide="ignore"):
            pair_k = np.where(rp_k > 0, 1.0 / (1.0 / np.maximum(rp_k, 1e-300)
                                               + 1.0 / rate_d[cand]), -1.0)
        k = int(np.argmax(pair_k))
        if pair_k[k] > best[0]:
            pk = int(p_best[k])
            best = (float(pair_k[k]), (int(cand[0][k]), int(cand[1][k])),
                    (pk, int(r_idx[k, pk])))
    if best[1] is None:
        reach = np.where(pbm >= 1, ttft0[:, :1], np.inf) + float(np.min(step_half))
        return _no_fit(su, _slo_reason(su, float(np.min(reach)), best_tpot), bottleneck="slo")
    at = best[1]
    li, bi = at
    pi, ri = best[2]
    rate_p = rate_p_all
    ttft_at = float(prefill_ttft(at, wl.percentile, (pi, ri)))
    rp = float(rate_p[pi, ri]) * n_rack        # requests/s per rack as prefill pool
    rd = float(rate_d[at]) * n_rack            # requests/s per rack as decode pool
    share_p = (1 / rp) / (1 / rp + 1 / rd)
    blended = 1.0 / (1.0 / rp + 1.0 / rd)
    pst = pre.batched
    t_p = float(np.asarray(pst.total_s).ravel()[pi])
    # the share of time the prefill GPUs compute: the queue's utilisation, less the time
    # an instance waits on a KV hand-over slower than its prefill
    u = float(_RHO_GRID[ri])
    busy = u * t_p / float(np.asarray(serve_b).ravel()[pi])
    act_p = float(activity(su.params, busy * float(np.asarray(pst.compute_s).ravel()[pi]) / t_p,
                           busy * float(np.asarray(pst.memory_s).ravel()[pi]) / t_p))
    ds = dec.step
    t_d = float(dec.step_s[at])
    act_d = float(activity(su.params, float(np.broadcast_to(ds.compute_s, rate_d.shape)[at]) / t_d,
                           float(np.broadcast_to(ds.memory_s, rate_d.shape)[at]) / t_d))
    # the activity of a prefill step (the pool computes a share ``busy`` of the time)
    t_pb = float(np.asarray(pst.total_s).ravel()[pi])
    act_pb = float(activity(su.params, float(np.asarray(pst.compute_s).ravel()[pi]) / t_pb,
                            float(np.asarray(pst.memory_s).ravel()[pi]) / t_pb))
    steps = (act_pb, act_d)
    if su.power_cap_frac < 1.0:
        k = cap_activity(su.acc, su.power_cap_frac)
        e_pb = float(capped_activity(act_pb, su.prefill_power_scale, k))
        act_p = max(act_p - busy * (act_pb - e_pb), 0.0)
        act_pb = e_pb
        act_d = float(capped_activity(act_d, su.decode_power_scale, k))
    power = (share_p * float(rack_power_kw(rack, su.acc, act_p))
             + (1 - share_p) * float(rack_power_kw(rack, su.acc, act_d)))
    # high percentile: the prefill pool's instances each computing a share ``busy`` of
    # the time at the activity of a prefill step, the decode pool steady
    p99_p = rack_power_percentile_kw(rack, su.acc, act_pb, float(activity(su.params, 0.0, 0.0)),
                                     busy, n_rack / float(gp[pi, 0]))
    power_p99 = share_p * p99_p + (1 - share_p) * float(rack_power_kw(rack, su.acc, act_d))
    act = share_p * act_p + (1 - share_p) * act_d
    comp = float(np.asarray(pst.compute_s).ravel()[pi])
    mem = float(np.asarray(pst.memory_s).ravel()[pi])
    bound_p = "compute" if comp >= mem else "memory_bandwidth"
    if float(np.asarray(pst.comm_s).ravel()[pi]) > max(comp, mem):
        bound_p = "interconnect"
    if bool(np.ravel(handover_bounds(kv_share, pst.total_s))[pi]):
        bound_p = KV_HANDOVER
    dparts = {"compute": 0.0, "memory_bandwidth": 0.0, "interconnect": 0.0, "overhead": 0.0}
    c_at = float(np.broadcast_to(ds.compute_s, rate_d.shape)[at])
    m_at = float(np.broadcast_to(ds.memory_s, rate_d.shape)[at])
    dparts["compute" if c_at >= m_at else "memory_bandwidth"] = float(
        np.broadcast_to(ds.roof_s, rate_d.shape)[at])
    dparts["interconnect"] = float(np.broadcast_to(ds.comm_s, rate_d.shape)[at])
    dparts["overhead"] = float(np.broadcast_to(ds.overhead_s, rate_d.shape)[at])
    bound_d = bottleneck_label(dparts)
    b_here = float(grid[0, bi])
    limit_d = ""
    if bi + 1 < grid.shape[1] and valid[li, bi + 1] and not ok_d[li, bi + 1]:
        limit_d = "slo"
    elif b_here >= float(bmax[li, 0]) - 1e-9:
        limit_d = ("batch_limit" if b_here >= _batch_cap(sv, par, li)
                   else "memory_capacity")
    decode_limit = limit_d or bound_d
    label, t, d, e = _label(par, li, su.shape.is_moe)
    plabel, _, _, pe = _label(ppar, pi, su.shape.is_moe)
    draft = int(n[li, 0])
    tpot_med = float(tpot_quantile(dec.token_s[at], 0.0, 0.0, o_tok, ph.tpot_cv_frac, 50.0,
                                   None, 1.0, np.broadcast_to(mix, rate_d.shape)[at]))
    ttft_med = float(prefill_ttft(at, 50.0, (pi, ri)))
    out = _finish(
        su, req_rack=blended, act=act, bottleneck=bound_p if share_p >= 0.5 else decode_limit,
        bound=bound_p if share_p >= 0.5 else bound_d, gpus=int(g[li, 0]), batch=b_here,
        max_batch_=float(bmax[li, 0]), ttft=ttft_at, tpot=float(tpot_p[at]),
        ttft_med=ttft_med, tpot_med=tpot_med, parallel=label, sizes=(t, d, e), draft=draft,
        acceptance=acc if draft else 0.0,
        tokens_per_step=float(np.broadcast_to(dec.tokens_per_step, rate_d.shape)[at]),
        utilisation=u, concurrency=b_here, prefill_tps=rp * wl.input_tokens_mean,
        decode_tps=rd * o_tok, prefill_gpus=int(gp[pi, 0]), ratio=rd / rp, power_kw=power,
        prefill_parallel=plabel, power_p99_kw=power_p99, steps=steps, prefill_ep=pe)
    streams = np.ravel(np.broadcast_to(pinst.handover_streams, np.shape(ppar.attn_dp)))
    kv_outside = (bound_p == KV_HANDOVER and su.basis is not None
                  and handover_outside_fit(su.basis, rack.scaleup_domain,
                                           wl.input_tokens_mean, su.model.id))
    why = [w for w in (out.extrapolation,
                       kv_handover_extrapolation(su.basis) if kv_outside else "") if w]
    return dataclasses.replace(out, prefill_bottleneck=bound_p, decode_bottleneck=decode_limit,
                               prefill_share=share_p, prefill_handover_streams=int(streams[pi]),
                               extrapolation="; and ".join(why))


def best_rate_within(ttft, rate, budget, index: bool = False):
    """Highest ``rate`` among points whose ``ttft`` is within each ``budget``.

    Parameters
    ----------
    ttft : array
        TTFT of every prefill operating point (layout x utilisation) [s].
    rate : array
        Requests/s per GPU of those points (negative: infeasible) [1/s].
    budget : array
        TTFT each decode point leaves to the prefill pool [s].

    index : bool
        Also return the flat index into ``ttft`` of the point that gives each rate.

    Returns
    -------
    ndarray, or (ndarray, ndarray)
        Shaped like ``budget``: the best rate, -1 where no point fits [1/s]; with
        ``index``, also the flat index of that point (meaningless where the rate is -1).
    """
    t = np.asarray(ttft, float).ravel()
    r = np.asarray(rate, float).ravel()
    order = np.argsort(t, kind="stable")
    t_sorted = t[order]
    r_sorted = r[order]
    best = np.maximum.accumulate(r_sorted)
    k = np.searchsorted(t_sorted, np.asarray(budget, float), side="right")
    kk = np.maximum(k - 1, 0)
    out = np.where(k > 0, best[kk], -1.0)
    if not index:
        return out
    # where the running maximum was reached
    pos = np.maximum.accumulate(np.where(r_sorted >= best, np.arange(r.size), 0))
    return out, order[pos[kk]]


def slot_wait_quantile(slot_p, slot_tail_s, percentile) -> np.ndarray:
    """``percentile`` of the wait for a running-request slot alone [s].

    0 where fewer than ``1 - percentile`` of the requests wait, else
    ``tail ln(p_wait / q)`` (:func:`dcplan.perf.latency.slot_wait`); inf at saturation.

    Parameters
    ----------
    slot_p : float or array
        Probability of waiting for a slot [-].
    slot_tail_s : float or array
        Mean wait given a wait [s].
    percentile : float
        Percentile [%].

    Returns
    -------
    ndarray
        Slot wait at the percentile [s].
    """
    q = 1.0 - float(percentile) / 100.0
    sp = np.asarray(slot_p, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(sp <= q, 0.0, np.asarray(slot_tail_s, float)
                       * np.log(np.maximum(sp, 1e-300) / q))
    return np.where(np.isnan(out), np.inf, out)


# ------------------------------------------------------------------ public API

_CACHE: dict[tuple, RackPerf] = {}
_CACHE_MAX = 20_000


def evaluate(su: Setup, layout: Layout | None = None) -> RackPerf:
    """Operating point of a resolved :class:`Setup` (no caching).

    Parameters
    ----------
    su : Setup
        The resolved setup (:func:`build_setup`).
    layout : Layout, optional
        Fix the parallel layout (``--tp/--ep/--dp-attention``); None: search.

    Returns
    -------
    RackPerf
        The best operating point that meets the workload's SLO, or ``fits=False`` with a
        reason.
    """
    layouts = candidate_layouts(su.rack, su.model, su.serving, layout)
    if su.hw is not None:
        layouts = [p for p in layouts if float(weight_bytes_per_gpu(p, su.shape))
                   < su.hw.hbm_capacity] or layouts
    problem = _fit_problem(su, layouts)
    if problem:
        return _no_fit(su, problem)
    if su.workload.mode is ServingMode.disaggregated:
        return _disaggregated(su, layouts)
    return _aggregated(su, layouts)


def capped_setup(su: Setup, cap_frac: float, curve: PowerCurve, prefill_act: float,
                 decode_act: float) -> Setup:
    """The setup under a power cap, each phase throttled as its step activity says.

    A phase's clocks and dynamic-power scale come from its step activity at full clock
    (:func:`dcplan.perf.power.phase_clocks`): :func:`evaluate_capped` takes them at the
    uncapped operating point, after which the search on the capped setup may choose
    another layout or batch.

    Parameters
    ----------
    su : Setup
        The uncapped setup.
    cap_frac : float
        Power cap as a fraction of ``max_power_w`` [-].
    curve : PowerCurve
        The accelerator's power curve.
    prefill_act, decode_act : float
        Activity of a prefill and of a decode step at full clock [0..1].

    Returns
    -------
    Setup
        ``hw`` with the phases' clock fractions, the power scales and the cap.
    """
    cp, mp, sp = phase_clocks(curve, su.acc, cap_frac, prefill_act)
    cd, md, sd = phase_clocks(curve, su.acc, cap_frac, decode_act)
    hw = None if su.hw is None else dataclasses.replace(
        su.hw, prefill_clock_frac=cp, decode_clock_frac=cd, prefill_mem_clock_frac=mp,
        decode_mem_clock_frac=md)
    return dataclasses.replace(su, hw=hw, power_cap_frac=cap_frac, prefill_power_scale=sp,
                               decode_power_scale=sd)


def check_cap_input(su: Setup, cap_frac: float, curve: PowerCurve | None) -> None:
    """Refuse a cap outside (0, 1], below the curve, or without a curve.

    Parameters
    ----------
    su : Setup
        The setup (its accelerator).
    cap_frac : float
        Power cap as a fraction of ``max_power_w`` [-].
    curve : PowerCurve or None
        The accelerator's power curve.

    Raises
    ------
    InputError
        Naming what is wrong.
    """
    if not (np.isfinite(cap_frac) and 0.0 < cap_frac <= 1.0):
        raise InputError(f"a power cap must be a fraction 0 < f <= 1 of the accelerator's "
                         f"max power, got {cap_frac:g}")
    if cap_frac >= 1.0:
        return
    if curve is None:
        raise InputError(f"a power cap needs the power curve of {su.acc.id} "
                         f"(power_curves.yaml beside perf_defaults.yaml)")
    if curve.accelerator != su.acc.id:
        raise InputError(f"the power curve given is {curve.accelerator}'s, not {su.acc.id}'s")
    problem = check_power_cap(cap_frac, curve)
    if problem:
        raise InputError(problem)


def evaluate_capped(su: Setup, layout: Layout | None, cap_frac: float,
                    curve: PowerCurve | None) -> RackPerf:
    """Operating point of ``su`` with every accelerator capped at ``cap_frac`` of max power.

    Parameters
    ----------
    su : Setup
        The resolved (uncapped) setup.
    layout : Layout or None
        Fixed parallel layout; None: search.
    cap_frac : float
        Power cap as a fraction of ``max_power_w`` [-]; 1: :func:`evaluate` as it is.
    curve : PowerCurve or None
        The accelerator's power curve (needed below 1).

    Returns
    -------
    RackPerf
        The best operating point under the cap (``fits=False`` as uncapped).

    Raises
    ------
    InputError
        A cap outside (0, 1], below the curve, or no curve.
    """
    check_cap_input(su, cap_frac, curve)
    base = evaluate(su, layout)
    if cap_frac >= 1.0 or not base.fits:
        return base
    return evaluate(capped_setup(su, cap_frac, curve, base.prefill_activity,
                                 base.decode_activity), layout)


def workload_performance(catalog, rack_id: str, model_id: str | None, workload: Workload,
                         precision: Precision | str | None = None,
                         layout: Layout | None = None, *, defaults: PerfDefaults,
                         calibration: Calibration | None, power_cap_frac: float = 1.0,
                         power_curve: PowerCurve | None = None) -> RackPerf:
    """Return :func:`rack_performance` for a :class:`Workload` object.

    The workload need not be in the catalog; ``layout`` fixes the parallel layout.

    Parameters
    ----------
    catalog : Catalog
        Loaded catalog (racks, accelerators, models, workloads).
    rack_id : str
        Rack id.
    model_id : str or None
        Model id; None: the workload's own model.
    workload : Workload
        The workload (need not be in the catalog).
    precision : {"bf16", "fp8", "fp4"}, optional
        Serving precision (default: the workload's).
    layout : Layout, optional
        Fix the parallel layout (``--tp/--ep/--dp-attention``); None: search.
    defaults : PerfDefaults
        The model's a-priori parameters (``Case.model_defaults``, or
        :func:`dcplan.perf.params.load_perf_inputs`).
    calibration : Calibration or None
        Fitted parameters (``Case.perf_calibration``); None: the a-priori defaults.
    power_cap_frac : float
        Board power cap of every accelerator, a fraction of ``max_power_w`` [-]
        (default 1: uncapped, the predictions without a cap).
    power_curve : PowerCurve, optional
        The accelerator's power curve (``PerfInputs.power_curve(acc_id)``); needed
        below a cap of 1.

    Returns
    -------
    RackPerf
        As :func:`rack_performance` (memoised).

    Raises
    ------
    InputError
        Unknown ids, or a ``layout`` the rack cannot deploy.
    """
    cal = calibration
    rack = catalog.get("racks", rack_id)
    model = catalog.get("models", model_id or workload.model)
    acc = catalog.get("accelerators", rack.accelerator)
    key = (rack.model_dump_json(), acc.model_dump_json(), model.model_dump_json(),
           workload.model_dump_json(), Precision(precision).value if precision else None,
           cal.key if cal else None, defaults, layout)
    if power_cap_frac != 1.0:
        key = key + (float(power_cap_frac), power_curve)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    su = build_setup(catalog, rack_id, model.id, workload, precision, defaults=defaults,
                     calibration=cal)
    if layout is not None:
        problem = check_layout(su, layout)
        if problem:
            raise InputError(problem)
    out = (evaluate(su, layout) if power_cap_frac == 1.0
           else evaluate_capped(su, layout, power_cap_frac, power_curve))
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[key] = out
    return out


def check_layout(su: Setup, layout: Layout) -> str:
    """Why ``layout`` cannot be deployed on the rack ('' if it can).

    Parameters
    ----------
    su : Setup
        The resolved setup.
    layout : Layout
        The requested layout.

    Returns
    -------
    str
        The reason, '' when the layout can be deployed.
    """
    if layout.tp < 1 or layout.ep < 1:
        return "--tp and --ep must be at least 1"
    par = layout.parallel()
    d = su.rack.scaleup_domain
    if int(par.gpus) > d:
        return (f"the layout needs {int(par.gpus)} accelerators in one scale-up domain but "
                f"{su.rack.id} has {d}; use at most {d}")
    if d % int(par.gpus):
        return (f"an instance of {int(par.gpus)} accelerators does not divide the scale-up "
                f"domain of {su.rack.id} ({d})")
    if su.model.attention_heads % layout.tp and not layout.dp_attention:
        return (f"--tp {layout.tp} does not divide the {su.model.attention_heads} attention "
                f"heads of {su.model.id}")
    if layout.ep > 1 and not su.model.is_moe:
        return f"--ep applies to MoE models; {su.model.id} is dense"
    if layout.dp_attention and not su.model.is_moe:
        # engines shard a dense model's attention with its MLP (SGLang's and vLLM's
        # data-parallel attention serve MoE models); the layout search never uses it
        return (f"--dp-attention applies to MoE models; {su.model.id} is dense: use --tp "
                "for the instance size (replicas fill the rest of the rack)")
    if max(layout.tp, layout.ep) % min(layout.tp, layout.ep):
        return "--tp and --ep must divide one another (the larger is the instance size)"
    return ""


def rack_performance(catalog, rack_id: str, model_id: str | None, workload_id: str,
                     precision: Precision | str | None = None, *, defaults: PerfDefaults,
                     calibration: Calibration | None, power_cap_frac: float = 1.0,
                     power_curve: PowerCurve | None = None) -> RackPerf:
    """Return the :class:`RackPerf` of ``rack_id`` serving ``workload_id`` with ``model_id``.

    Parameters
    ----------
    catalog : Catalog
        Loaded catalog (racks, accelerators, models, workloads).
    rack_id, model_id, workload_id : str
        Catalog ids; ``model_id`` None means the workload's own model.
    precision : {"bf16", "fp8", "fp4"}, optional
        Serving precision (default: the workload's).
    defaults : PerfDefaults
        The model's a-priori parameters (``Case.model_defaults``, or
        :func:`dcplan.perf.params.load_perf_inputs`).
    calibration : Calibration or None
        Fitted parameters (``Case.perf_calibration``; ``dcplan perf calibrate`` writes
        them, the shipped fit is ``perf_calibration.yaml`` next to
        ``perf_defaults.yaml``); None: the a-priori defaults.
    power_cap_frac : float
        Board power cap of every accelerator, a fraction of ``max_power_w`` [-]
        (default 1: uncapped). Goodput, ``power_kw`` (never above ``power_at_cap_kw``)
        and tokens per joule are at that cap.
    power_curve : PowerCurve, optional
        The accelerator's power curve (``PerfInputs.power_curve(acc_id)``); needed
        below a cap of 1.

    Returns
    -------
    RackPerf
        ``fits=False`` with a ``reason`` when the model cannot be served on the rack
        within the workload's SLO.

    Raises
    ------
    InputError
        For unknown ids.
    """
    workload = catalog.get("workloads", workload_id)
    return workload_performance(catalog, rack_id, model_id, workload, precision,
                                defaults=defaults, calibration=calibration,
                                power_cap_frac=power_cap_frac, power_curve=power_curve)


def batch_sweep(catalog, rack_id: str, model_id: str | None, workload: str | Workload,
                precision: Precision | str | None = None, layout: Layout | None = None, *,
                defaults: PerfDefaults, calibration: Calibration | None
                ) -> list[dict[str, Any]]:
    """Throughput/latency curve over batch at the chosen layout (aggregated serving).

    Parameters
    ----------
    catalog : Catalog
        Loaded catalog (racks, accelerators, models, workloads).
    rack_id : str
        Rack id.
    model_id : str or None
        Model id; None: the workload's own model.
    workload : str or Workload
        Workload id, or a workload object (aggregated serving).
    precision : {"bf16", "fp8", "fp4"}, optional
        Serving precision (default: the workload's).
    layout : Layout, optional
        Fix the parallel layout (``--tp/--ep/--dp-attention``); None: search.
    defaults : PerfDefaults
        The model's a-priori parameters (``Case.model_defaults``, or
        :func:`dcplan.perf.params.load_perf_inputs`).
    calibration : Calibration or None
        Fitted parameters (``Case.perf_calibration``); None: the a-priori defaults.

    Returns
    -------
    list of dict
        One row per batch on a doubling grid up to the memory limit: batch, total and
        output tokens/s per rack, TTFT and TPOT at the workload's percentile, whether
        the SLO is met, step bound and rack power [kW].
    """
    wl = workload if isinstance(workload, Workload) else catalog.get("workloads", workload)
    if wl.mode is ServingMode.disaggregated:
        raise InputError(Problem(
            "command line", f"the batch sweep is a curve of aggregated serving; workload "
            f"'{wl.id}' is disaggregated (its prefill and decode pools are sized apart): "
            "add --mode aggregated for the aggregated curve", entry=wl.id, field="mode"))
    perf = workload_performance(catalog, rack_id, model_id, wl, precision, layout,
                                defaults=defaults, calibration=calibration)
    su = build_setup(catalog, rack_id, model_id, wl, precision, defaults=defaults,
                     calibration=calibration)
    if not perf.fits:
        return []
    par = Parallel(perf.attention_tp, perf.attention_dp, perf.expert_parallel)
    drafts, acc, cost = _drafts(su)
    inst = Instance(su.hw, par, su.shape, su.physics, su.serving, float(perf.draft_tokens), acc,
                    cost)
    tr = _traffic(su, _arrival_cv2(su))
    bm = int(float(max_batch(su.hw, par, su.shape, su.serving, tr.decode_context)))
    grid = np.array(sorted({int(v) for v in 2 ** np.arange(0, 20) if v <= bm} | {bm}), float)
    # Poisson arrivals into bm running-request slots (as the search; none offline)
    pt = aggregated(inst, tr, grid, slots=None if wl.offline else float(bm))
    per_rack = su.rack.accelerators_per_rack / float(par.gpus)
    rows = []
    for i, bval in enumerate(grid):
        req = float(pt.requests_per_s[i]) * per_rack
        ttft = float(pt.ttft_quantile(wl.percentile)[i])
        tpot = float(pt.tpot_quantile(wl.percentile, su.physics.tpot_cv_frac)[i]) * 1e3
        act = float(activity(su.params, pt.compute_util[i], pt.memory_util[i]))
        stable = bool(pt.utilisation[i] < 1.0)
        rows.append({
            "parallel": perf.parallel, "batch": int(bval),
            "total_tokens_per_s": req * (wl.input_tokens_mean + wl.output_tokens_mean),
            "output_tokens_per_s": req * wl.output_tokens_mean,
            f"ttft_p{wl.percentile:g}_s": ttft if stable else float("inf"),
            f"tpot_p{wl.percentile:g}_ms": tpot,
            "meets_slo": bool(stable and (wl.offline or (ttft <= wl.ttft_s
                                                         and tpot <= wl.tpot_ms))),
            "step_bound": bottleneck_label(pt.parts, i),
            "power_kw": float(rack_power_kw(su.rack, su.acc, act)),
        })
    return rows
