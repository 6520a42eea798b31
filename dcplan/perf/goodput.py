"""Goodput under SLO: choose replica size and batch that maximise tokens/s per rack.

Aggregated mode (prefill chunks interleaved with decode steps on the same replica),
per replica of ``g`` accelerators decoding ``B`` sequences, for a workload with
``I`` input tokens (a share ``h`` cached) and ``O`` output tokens per request::

    t_pre  = prefill time of one request, chunk shared with others   [s]
    t_dec  = decode step time at batch B, context I + O/2             [s]
    R      = 1 / (t_pre + O * t_dec / B)                 requests/s per replica
    TPOT   = t_dec + t_pre * B / O     (each step also carries B/O prefills)
    TTFT   = q * t_pre_alone + t_dec   (q: queueing factor, perf_defaults.yaml)

Goodput per rack = R * (I + O) * accelerators_per_rack / g, maximised over ``g``
(divisors of the scale-up domain) and ``B`` (1 .. memory limit) subject to
``TTFT <= ttft_s`` and ``TPOT <= tpot_ms``.

Disaggregated mode sizes a prefill pool (requests/s per rack under the TTFT limit,
plus the KV transfer over scale-out) and a decode pool (TPOT = t_dec) separately
and blends them in the ratio that balances request rates.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dcplan.perf.params import (
    Calibration,
    HardwareParams,
    PerfDefaults,
    ServingParams,
    defaults_path,
    load_calibration,
    load_perf_defaults,
)
from dcplan.perf.power import accelerator_power_kw, activity, rack_power_kw
from dcplan.perf.roofline import ModelShape, Replica
from dcplan.schema import (
    BYTES_PER_ELEMENT,
    LLM,
    Accelerator,
    Precision,
    Rack,
    ServingMode,
    Workload,
)


@dataclass(frozen=True)
class RackPerf:
    """Operating point of one rack serving one workload under its SLO.

    Attributes
    ----------
    fits : bool
        False when the model cannot be served on this rack (see ``reason``).
    reason : str
        Why it does not fit (empty when it fits).
    goodput_tokens_per_s : float
        Input + output tokens/s of requests that meet the SLO, per rack [tokens/s]
        (aggregated mode; for disaggregated mode the blended rate of a rack split in
        the optimal prefill:decode ratio).
    output_tokens_per_s : float
        Output (generated) tokens/s per rack [tokens/s].
    prefill_tokens_per_s : float
        Disaggregated mode: input tokens/s one rack prefills when used as a prefill
        pool [tokens/s]; equals 0 in aggregated mode.
    decode_tokens_per_s : float
        Disaggregated mode: output tokens/s one rack decodes when used as a decode
        pool [tokens/s]; equals 0 in aggregated mode.
    power_kw : float
        Rack IT power at this operating point [kW].
    idle_power_kw : float
        Rack IT power when idle [kW].
    bottleneck : str
        What limits goodput: ``slo`` (a larger batch would break the TTFT/TPOT
        limit), ``memory_capacity`` (the KV cache is full), ``batch_limit`` (the
        scheduler's batch cap), else the ceiling that dominates the step time:
        ``compute``, ``memory_bandwidth``, ``interconnect`` or ``overhead``.
    step_bound : str
        Which ceiling dominates the step time at the operating point (``compute``,
        ``memory_bandwidth``, ``interconnect`` or ``overhead``).
    replica_gpus : int
        Accelerators per replica (decode replica in disaggregated mode).
    replicas_per_rack : float
        Replicas per rack (decode pool in disaggregated mode).
    batch : int
        Sequences decoded at once per replica.
    max_batch : int
        Most sequences whose KV fits per replica at the chosen size.
    ttft_s : float
        Time to first token at the operating point [s].
    tpot_ms : float
        Time per output token at the operating point [ms].
    goodput_tokens_per_s_per_accelerator : float
        [tokens/s].
    tokens_per_joule : float
        Goodput tokens per joule of rack IT energy [tokens/J].
    tokens_per_s_per_mw : float
        Goodput per MW of rack IT power [tokens/s/MW].
    requests_per_s : float
        Requests completed per second per rack [1/s].
    activity : float
        Accelerator activity between idle (0) and max power (1) [-].
    precision : str
    mode : str
        ``aggregated`` or ``disaggregated``.
    prefill_replica_gpus : int
        Disaggregated mode: accelerators per prefill replica (0 otherwise).
    prefill_racks_per_decode_rack : float
        Disaggregated mode: prefill:decode capacity ratio in racks (0 otherwise).
    prefill_bottleneck, decode_bottleneck : str
        Disaggregated mode: what limits each pool (the prefill pool's step bound; the
        decode pool's ``slo``, ``memory_capacity``, ``batch_limit`` or step bound).
        ``bottleneck`` is that of the pool with more of the accelerators.
    prefill_share : float
        Disaggregated mode: share of the accelerators in the prefill pool [-].
    """

    fits: bool
    reason: str
    goodput_tokens_per_s: float
    output_tokens_per_s: float
    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    power_kw: float
    idle_power_kw: float
    bottleneck: str = ""
    step_bound: str = ""
    replica_gpus: int = 0
    replicas_per_rack: float = 0.0
    batch: int = 0
    max_batch: int = 0
    ttft_s: float = 0.0
    tpot_ms: float = 0.0
    goodput_tokens_per_s_per_accelerator: float = 0.0
    tokens_per_joule: float = 0.0
    tokens_per_s_per_mw: float = 0.0
    requests_per_s: float = 0.0
    activity: float = 0.0
    precision: str = ""
    mode: str = ""
    prefill_replica_gpus: int = 0
    prefill_racks_per_decode_rack: float = 0.0
    prefill_bottleneck: str = ""
    decode_bottleneck: str = ""
    prefill_share: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """Plain dict of every field (for JSON and tables)."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class Setup:
    """Everything one evaluation needs, resolved from the catalog."""

    rack: Rack
    acc: Accelerator
    model: LLM
    workload: Workload
    precision: Precision
    params: HardwareParams
    serving: ServingParams
    shape: ModelShape


def resolve_calibration(calibration: Calibration | str | Path | None) -> Calibration | None:
    """Accept a :class:`Calibration`, a path to one, or None."""
    if calibration is None or isinstance(calibration, Calibration):
        return calibration
    return load_calibration(calibration)


def hardware_params(defaults: PerfDefaults, accelerator_id: str,
                    calibration: Calibration | None) -> HardwareParams:
    """Parameters of ``accelerator_id``: defaults, then calibration overrides."""
    base = defaults.for_hardware(accelerator_id)
    return calibration.apply(base, accelerator_id) if calibration else base


def build_setup(catalog, rack_id: str, model_id: str | None, workload_id: str,
                precision: Precision | str | None = None,
                calibration: Calibration | str | Path | None = None,
                defaults: PerfDefaults | None = None) -> Setup:
    """Resolve ids against ``catalog`` (unknown ids raise :class:`InputError`)."""
    rack = catalog.get("racks", rack_id)
    workload = catalog.get("workloads", workload_id)
    model = catalog.get("models", model_id or workload.model)
    acc = catalog.get("accelerators", rack.accelerator)
    prec = Precision(precision) if precision else workload.precision
    defaults = defaults or load_perf_defaults(defaults_path(catalog))
    params = hardware_params(defaults, acc.id, resolve_calibration(calibration))
    shape = ModelShape.build(model, prec, defaults.serving)
    return Setup(rack, acc, model, workload, prec, params, defaults.serving, shape)


def replica_sizes(rack: Rack, model: LLM | None = None) -> list[int]:
    """Candidate replica sizes [accelerators].

    Divisors of the scale-up domain; for a dense model also divisors of its attention
    heads (tensor parallelism splits heads). MoE models may use any divisor (expert
    parallelism with data-parallel attention).
    """
    d = rack.scaleup_domain
    sizes = [g for g in range(1, d + 1) if d % g == 0]
    if model is not None and not model.is_moe:
        sizes = [g for g in sizes if model.attention_heads % g == 0]
    return sizes


# ---------------------------------------------------------------------------
# Aggregated mode
# ---------------------------------------------------------------------------


@dataclass
class _Curve:
    """Per-batch arrays of one replica size in aggregated mode."""

    gpus: int
    batch: np.ndarray
    max_batch: int
    req_per_s_rack: np.ndarray
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    compute_util: np.ndarray
    memory_util: np.ndarray
    parts: dict[str, np.ndarray]


def _aggregated_curve(su: Setup, g: int, batches: np.ndarray | None = None) -> _Curve | None:
    wl = su.workload
    rep = Replica.build(su.acc, g, su.shape, su.precision, su.params, su.serving)
    i_tok, o_tok = wl.input_tokens_mean, wl.output_tokens_mean
    cached = i_tok * wl.cache_hit_frac
    # Paged KV: B sequences at uniformly spread points of their generation hold
    # I + O/2 tokens each on average.
    bmax = rep.max_batch(i_tok + o_tok / 2.0)
    if bmax < 1:
        return None
    b = np.arange(1, bmax + 1, dtype=float) if batches is None else np.asarray(batches, float)
    ctx = i_tok + o_tok / 2.0
    dc, dm, dx = rep.decode_parts(b, ctx)
    t_dec = np.maximum(dc, dm) + dx + su.params.step_overhead_s
    pc, pm, px, po = (float(v) for v in rep.prefill_parts(i_tok, cached, 1.0, batched=True))
    t_pre = max(pc, pm) + px + po
    t_alone = float(rep.prefill_time(i_tok, cached, 1.0, batched=False))
    per_req = t_pre + o_tok * t_dec / b
    per_rack = su.rack.accelerators_per_rack / g
    parts = {
        "pre_roof": np.full_like(b, max(pc, pm)), "pre_roof_is_compute": np.full_like(b, pc >= pm),
        "pre_comm": np.full_like(b, px), "pre_over": np.full_like(b, po),
        "dec_roof": o_tok * np.maximum(dc, dm) / b, "dec_roof_is_compute": dc >= dm,
        "dec_comm": o_tok * dx / b, "dec_over": o_tok * su.params.step_overhead_s / b,
    }
    return _Curve(
        gpus=g,
        batch=b,
        max_batch=bmax,
        req_per_s_rack=per_rack / per_req,
        ttft_s=su.serving.ttft_queue_factor * t_alone + t_dec,
        tpot_s=t_dec + t_pre * b / o_tok,
        compute_util=(pc + o_tok * dc / b) / per_req,
        memory_util=(pm + o_tok * dm / b) / per_req,
        parts=parts,
    )


def _step_bound(parts: dict[str, np.ndarray], i: int) -> str:
    """Label the ceiling that takes most of the time per request at index ``i``."""
    score = {"compute": 0.0, "memory_bandwidth": 0.0, "interconnect": 0.0, "overhead": 0.0}
    for phase in ("pre", "dec"):
        roof = float(parts[f"{phase}_roof"][i])
        score["compute" if bool(parts[f"{phase}_roof_is_compute"][i]) else
              "memory_bandwidth"] += roof
        score["interconnect"] += float(parts[f"{phase}_comm"][i])
        score["overhead"] += float(parts[f"{phase}_over"][i])
    return max(score, key=lambda k: score[k])


def _no_fit(su: Setup, reason: str, bottleneck: str = "") -> RackPerf:
    return RackPerf(
        fits=False, reason=reason, goodput_tokens_per_s=0.0, output_tokens_per_s=0.0,
        prefill_tokens_per_s=0.0, decode_tokens_per_s=0.0,
        power_kw=su.rack.it_power_idle_kw, idle_power_kw=su.rack.it_power_idle_kw,
        bottleneck=bottleneck, precision=su.precision.value, mode=su.workload.mode.value,
    )


def _fit_problem(su: Setup) -> str | None:
    """Reason the model cannot run on the rack at all, or None."""
    acc, model, wl, rack = su.acc, su.model, su.workload, su.rack
    if acc.dense_tflops(su.precision) is None:
        have = [p.value for p in Precision if acc.dense_tflops(p) is not None]
        return (f"{acc.id} has no {su.precision.value} dense throughput in the catalog; "
                f"serve at {' or '.join(have)} (--precision)")
    need = wl.input_tokens_mean + wl.output_tokens_mean
    if need > model.max_context_tokens:
        return (f"workload '{wl.id}' needs {need:,.0f} tokens of context but {model.id} supports "
                f"{model.max_context_tokens:,}")
    domain = max(replica_sizes(rack, model))
    rep = Replica.build(acc, domain, su.shape, su.precision, su.params, su.serving)
    weights_gb = su.shape.weight_bytes / 1e9
    usable_gb = rep.hbm_bytes / 1e9
    if rep.kv_budget_bytes <= 0:
        # Only precisions with fewer bytes per weight that this accelerator runs help.
        lower = [p.value for p in Precision
                 if BYTES_PER_ELEMENT[p] < BYTES_PER_ELEMENT[su.precision]
                 and acc.dense_tflops(p) is not None]
        fix = (f"serve at {' or '.join(lower)} (--precision) or use a rack with a larger "
               "scale-up domain" if lower else
               f"{acc.id} runs no precision below {su.precision.value}; use a rack with a "
               "larger scale-up domain or more memory per accelerator")
        return (f"{model.id} at {su.precision.value} needs {weights_gb:,.0f} GB of weights but one "
                f"scale-up domain of {domain} x {acc.id} holds {domain} x {acc.hbm_gb:g} GB = "
                f"{domain * acc.hbm_gb:,.0f} GB ({usable_gb:,.0f} GB usable) in the largest "
                f"replica it allows; {fix}")
    if rep.max_batch(need) < 1:
        kv_gb = float(su.shape.kv_bytes_seq(need)) / 1e9
        return (f"{model.id} at {su.precision.value} fits its {weights_gb:,.0f} GB of weights in "
                f"{domain} x {acc.id} but not the {kv_gb:,.1f} GB KV cache of one "
                f"{need:,.0f}-token sequence ({usable_gb:,.0f} GB usable)")
    return None


def _aggregated(su: Setup) -> RackPerf:
    wl = su.workload
    ttft_lim, tpot_lim = wl.ttft_s, wl.tpot_ms / 1e3
    best: tuple[float, _Curve, int] | None = None
    best_ttft, best_tpot = np.inf, np.inf
    for g in replica_sizes(su.rack, su.model):
        cv = _aggregated_curve(su, g)
        if cv is None:
            continue
        best_ttft = min(best_ttft, float(cv.ttft_s.min()))
        best_tpot = min(best_tpot, float(cv.tpot_s.min()))
        ok = (cv.ttft_s <= ttft_lim) & (cv.tpot_s <= tpot_lim)
        if not ok.any():
            continue
        rate = np.where(ok, cv.req_per_s_rack, -1.0)
        i = int(np.argmax(rate))
        if best is None or rate[i] > best[0] * (1 + 1e-12):
            best = (float(rate[i]), cv, i)
    if best is None:
        return _no_fit(su, _slo_reason(su, best_ttft, best_tpot), bottleneck="slo")
    _, cv, i = best
    bound = _step_bound(cv.parts, i)
    bottleneck = bound
    # What stops a larger batch: the SLO or the KV-cache capacity?
    if i + 1 < len(cv.batch):
        if cv.req_per_s_rack[i + 1] > cv.req_per_s_rack[i]:
            bottleneck = "slo"
    else:
        nxt = _aggregated_curve(su, cv.gpus, np.array([cv.batch[i] + 1.0]))
        if nxt is not None and nxt.req_per_s_rack[0] > cv.req_per_s_rack[i]:
            bottleneck = ("memory_capacity" if cv.max_batch < su.serving.max_batch_per_replica
                          else "batch_limit")
    act = float(activity(su.params, cv.compute_util[i], cv.memory_util[i]))
    req = float(cv.req_per_s_rack[i])
    return _finish(su, req, act, bottleneck, bound, cv.gpus, int(cv.batch[i]), cv.max_batch,
                   float(cv.ttft_s[i]), float(cv.tpot_s[i]))


def _slo_reason(su: Setup, best_ttft: float, best_tpot: float) -> str:
    wl = su.workload
    return (f"cannot meet the SLO of workload '{wl.id}' (TTFT {wl.ttft_s:g} s, TPOT "
            f"{wl.tpot_ms:g} ms) with {su.model.id} at {su.precision.value} on {su.rack.id}: "
            f"the best reachable are TTFT {best_ttft:.3g} s and TPOT {best_tpot * 1e3:.3g} ms "
            "(each at its most favourable replica size and batch)")


def _finish(su: Setup, req_rack: float, act: float, bottleneck: str, bound: str, gpus: int,
            batch: int, max_batch: int, ttft: float, tpot: float, *, prefill_tps: float = 0.0,
            decode_tps: float = 0.0, prefill_gpus: int = 0, ratio: float = 0.0,
            power_kw: float | None = None) -> RackPerf:
    wl, rack = su.workload, su.rack
    goodput = req_rack * (wl.input_tokens_mean + wl.output_tokens_mean)
    power = float(rack_power_kw(rack, su.acc, act)) if power_kw is None else power_kw
    return RackPerf(
        fits=True, reason="", goodput_tokens_per_s=goodput,
        output_tokens_per_s=req_rack * wl.output_tokens_mean,
        prefill_tokens_per_s=prefill_tps, decode_tokens_per_s=decode_tps,
        power_kw=power, idle_power_kw=rack.it_power_idle_kw,
        bottleneck=bottleneck, step_bound=bound, replica_gpus=gpus,
        replicas_per_rack=rack.accelerators_per_rack / gpus, batch=batch, max_batch=max_batch,
        ttft_s=ttft, tpot_ms=tpot * 1e3,
        goodput_tokens_per_s_per_accelerator=goodput / rack.accelerators_per_rack,
        tokens_per_joule=goodput / (power * 1e3),
        tokens_per_s_per_mw=goodput / (power / 1e3),
        requests_per_s=req_rack, activity=act, precision=su.precision.value,
        mode=wl.mode.value, prefill_replica_gpus=prefill_gpus,
        prefill_racks_per_decode_rack=ratio,
    )


# ---------------------------------------------------------------------------
# Disaggregated mode
# ---------------------------------------------------------------------------


def _disaggregated(su: Setup) -> RackPerf:
    wl, rack, acc = su.workload, su.rack, su.acc
    i_tok, o_tok = wl.input_tokens_mean, wl.output_tokens_mean
    cached = i_tok * wl.cache_hit_frac
    n = rack.accelerators_per_rack
    best_p = None  # (req/s per rack, g, ttft, act)
    best_d = None  # (req/s per rack, g, batch, bmax, tpot, act, bound, i, parts)
    best_ttft, best_tpot = np.inf, np.inf
    for g in replica_sizes(rack, su.model):
        rep = Replica.build(acc, g, su.shape, su.precision, su.params, su.serving)
        if rep.kv_budget_bytes < float(su.shape.kv_bytes_seq(i_tok)):
            continue
        # Prefill pool.
        pc, pm, px, po = (float(v) for v in rep.prefill_parts(i_tok, cached, 1.0, batched=True))
        t_pre = max(pc, pm) + px + po
        link = g * rack.scaleout_gbps_per_accelerator * 1e9 / 8 * su.params.scaleout_eff_frac
        ttft = (su.serving.ttft_queue_factor * float(rep.prefill_time(i_tok, cached, 1.0, False))
                + float(su.shape.kv_bytes_seq(i_tok)) / link)
        best_ttft = min(best_ttft, ttft)
        if ttft <= wl.ttft_s:
            rate = n / g / t_pre
            if best_p is None or rate > best_p[0] * (1 + 1e-12):
                best_p = (rate, g, ttft, float(activity(su.params, pc / t_pre, pm / t_pre)),
                          "compute" if pc >= pm else "memory_bandwidth")
        # Decode pool.
        bmax = rep.max_batch(i_tok + o_tok / 2.0)
        if bmax < 1:
            continue
        b = np.arange(1, bmax + 1, dtype=float)
        dc, dm, dx = rep.decode_parts(b, i_tok + o_tok / 2.0)
        t_dec = np.maximum(dc, dm) + dx + su.params.step_overhead_s
        best_tpot = min(best_tpot, float(t_dec.min()))
        ok = t_dec <= wl.tpot_ms / 1e3
        if not ok.any():
            continue
        rate = np.where(ok, n / g * b / (o_tok * t_dec), -1.0)
        i = int(np.argmax(rate))
        if best_d is None or rate[i] > best_d[0] * (1 + 1e-12):
            parts = {"pre_roof": np.zeros(1), "pre_roof_is_compute": np.zeros(1, bool),
                     "pre_comm": np.zeros(1), "pre_over": np.zeros(1),
                     "dec_roof": np.array([max(dc[i], dm[i])]),
                     "dec_roof_is_compute": np.array([dc[i] >= dm[i]]),
                     "dec_comm": np.array([dx[i]]),
                     "dec_over": np.array([su.params.step_overhead_s])}
            slo_binds = i + 1 < len(b) and rate[i + 1] < 0 and (
                b[i + 1] / t_dec[i + 1] > b[i] / t_dec[i])
            cap_binds = i + 1 == len(b)
            best_d = (float(rate[i]), g, int(b[i]), bmax, float(t_dec[i]),
                      float(activity(su.params, dc[i] / t_dec[i], dm[i] / t_dec[i])),
                      _step_bound(parts, 0), "slo" if slo_binds else
                      (("memory_capacity" if bmax < su.serving.max_batch_per_replica
                        else "batch_limit") if cap_binds else ""))
    if best_p is None or best_d is None:
        return _no_fit(su, _slo_reason(su, best_ttft, best_tpot), bottleneck="slo")
    rp, gp, ttft, act_p, bound_p = best_p
    rd, gd, batch, bmax, tpot, act_d, bound_d, limit_d = best_d
    share_p = (1 / rp) / (1 / rp + 1 / rd)
    blended = 1.0 / (1.0 / rp + 1.0 / rd)
    power = (share_p * float(rack_power_kw(rack, acc, act_p))
             + (1 - share_p) * float(rack_power_kw(rack, acc, act_d)))
    act = share_p * act_p + (1 - share_p) * act_d
    # The pool with more of the accelerators names the rack's bottleneck; both pools'
    # limits are reported (the batch shown is the decode pool's).
    decode_limit = limit_d or bound_d
    bound = bound_p if share_p >= 0.5 else bound_d
    bottleneck = bound_p if share_p >= 0.5 else decode_limit
    out = _finish(su, blended, act, bottleneck, bound, gd, batch, bmax, ttft, tpot,
                  prefill_tps=rp * i_tok, decode_tps=rd * o_tok, prefill_gpus=gp,
                  ratio=rd / rp, power_kw=power)
    return dataclasses.replace(out, prefill_bottleneck=bound_p, decode_bottleneck=decode_limit,
                               prefill_share=share_p)


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------

_CACHE: dict[tuple, RackPerf] = {}
_CACHE_MAX = 20_000


def evaluate(su: Setup) -> RackPerf:
    """Operating point of a resolved :class:`Setup` (no caching)."""
    problem = _fit_problem(su)
    if problem:
        return _no_fit(su, problem)
    if su.workload.mode is ServingMode.disaggregated:
        return _disaggregated(su)
    return _aggregated(su)


def rack_performance(catalog, rack_id: str, model_id: str | None, workload_id: str,
                     precision: Precision | str | None = None,
                     calibration: Calibration | str | Path | None = None) -> RackPerf:
    """Return the :class:`RackPerf` of ``rack_id`` serving ``workload_id`` with ``model_id``.

    Parameters
    ----------
    catalog : Catalog
        Loaded catalog (racks, accelerators, models, workloads).
    rack_id, model_id, workload_id : str
        Catalog ids; ``model_id`` None means the workload's own model.
    precision : {"bf16", "fp8", "fp4"}, optional
        Serving precision (default: the workload's).
    calibration : Calibration or path, optional
        Fitted parameters (``dcplan perf calibrate``); default: perf_defaults.yaml.

    Returns
    -------
    RackPerf
        ``fits=False`` with a ``reason`` when the model cannot be served on the rack
        within the workload's SLO.

    Raises
    ------
    InputError
        For unknown ids or an invalid calibration/defaults file.
    """
    cal = resolve_calibration(calibration)
    rack = catalog.get("racks", rack_id)
    workload = catalog.get("workloads", workload_id)
    model = catalog.get("models", model_id or workload.model)
    acc = catalog.get("accelerators", rack.accelerator)
    dpath = defaults_path(catalog)
    key = (rack.model_dump_json(), acc.model_dump_json(), model.model_dump_json(),
           workload.model_dump_json(), Precision(precision).value if precision else None,
           cal.key if cal else None, str(dpath))
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    su = build_setup(catalog, rack_id, model_id, workload_id, precision, cal,
                     load_perf_defaults(dpath))
    out = evaluate(su)
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[key] = out
    return out


def batch_sweep(catalog, rack_id: str, model_id: str | None, workload_id: str,
                precision: Precision | str | None = None,
                calibration: Calibration | str | Path | None = None,
                replica_gpus: int | None = None) -> list[dict[str, Any]]:
    """Throughput/latency curve over batch for one replica size (aggregated serving).

    Parameters
    ----------
    replica_gpus : int, optional
        Replica size; default: the size :func:`rack_performance` chooses (or the
        whole scale-up domain when nothing meets the SLO).

    Returns
    -------
    list of dict
        One row per batch on a doubling grid up to the memory limit: batch,
        goodput/output tokens/s per rack, TTFT [s], TPOT [ms], whether the SLO is met,
        step bound and rack power [kW].
    """
    su = build_setup(catalog, rack_id, model_id, workload_id, precision, calibration)
    if replica_gpus is None:
        perf = rack_performance(catalog, rack_id, model_id, workload_id, precision, calibration)
        replica_gpus = perf.replica_gpus or su.rack.scaleup_domain
    if su.rack.scaleup_domain % replica_gpus:
        from dcplan.errors import InputError

        raise InputError(f"replica size {replica_gpus} does not divide the scale-up domain "
                         f"({su.rack.scaleup_domain}) of {su.rack.id}")
    if _fit_problem(su):
        return []
    full = _aggregated_curve(su, replica_gpus)
    if full is None:
        return []
    grid = sorted({int(v) for v in 2 ** np.arange(0, 20) if v <= full.max_batch}
                  | {full.max_batch})
    wl = su.workload
    rows = []
    for bval in grid:
        i = bval - 1
        act = float(activity(su.params, full.compute_util[i], full.memory_util[i]))
        req = float(full.req_per_s_rack[i])
        rows.append({
            "replica_gpus": replica_gpus,
            "batch": bval,
            "goodput_tokens_per_s": req * (wl.input_tokens_mean + wl.output_tokens_mean),
            "output_tokens_per_s": req * wl.output_tokens_mean,
            "ttft_s": float(full.ttft_s[i]),
            "tpot_ms": float(full.tpot_s[i]) * 1e3,
            "meets_slo": bool(full.ttft_s[i] <= wl.ttft_s and full.tpot_s[i] * 1e3 <= wl.tpot_ms),
            "step_bound": _step_bound(full.parts, i),
            "power_kw": float(rack_power_kw(su.rack, su.acc, act)),
        })
    return rows


def replica_power_w(acc: Accelerator, params: HardwareParams, gpus: int, compute_util: float,
                    memory_util: float) -> float:
    """Total power of a replica's accelerators [W]."""
    act = activity(params, compute_util, memory_util)
    return float(gpus * accelerator_power_kw(acc, act) * 1e3)
