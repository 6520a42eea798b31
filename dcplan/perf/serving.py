"""Serving operating points of one instance or one prefill/decode deployment.

Aggregated serving (prefill steps interleaved with decode steps on one instance, prefill
first, as vLLM, SGLang and TensorRT-LLM schedule by default), for a decode batch of
``B`` sequences, ``I`` input tokens (share ``h`` cached), ``O`` output tokens::

    t_tok  = (t_verify(B (n+1)) + n * draft_cost * t_step(B)) / E(a, n)   decode time per token
    t_pre  = prefill time of one request in shared chunks                [s]
    lambda = B / (O * t_tok + B * t_pre)                                 requests/s
    TPOT   = t_tok + B * t_pre / O             (every token waits for B/O prefills)
    rho    = lambda * t_pre                    (share of time spent prefilling)
    TTFT_p = s + W_p(rho) + t_step / 2         (service alone, queue, the step under way)

Open loop (Poisson arrivals): ``lambda`` follows from ``B``. Closed loop at ``C``
requests in flight (AIPerf, InferenceX): Little's law ``C = lambda (TTFT + O TPOT)``
fixes ``B``, found by a bracketed root finder (:func:`solve_closed_loop`).

Disaggregated serving: ``n_p`` prefill instances (queue utilisation
``lambda t_pre / n_p``) hand the KV cache over the scale-out network to ``n_d``
decode instances (``TPOT = t_tok``).

All functions are vectorised over rows (parameters, parallel layouts, lengths and
concurrencies as arrays) and over batches.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy.optimize.elementwise import find_root
from scipy.special import digamma, polygamma

from dcplan.lengths import FIXED, LengthDist
from dcplan.perf.latency import (
    slot_wait,
    tpot_quantile,
    ttft_quantile,
    wait_mean,
    wait_tail_mean,
)
from dcplan.perf.params import PhysicsParams, ServingParams
from dcplan.perf.roofline import Hardware, ModelShape, Parallel, StepTime, forward_step
from dcplan.perf.speculative import expected_tokens


@dataclass(frozen=True)
class Instance:
    """One model instance: hardware, layout, model and speculative decoding.

    Attributes
    ----------
    hw : Hardware
    par : Parallel
    shape : ModelShape
    phys : PhysicsParams
    serving : ServingParams
    draft_tokens : int or array
        Tokens drafted per step (0: no speculative decoding).
    acceptance : float or array
        Per-token acceptance probability of drafted tokens [0..1].
    draft_cost_frac : float or array
        One draft pass as a share of a plain decode step [-].
    handover_streams : float or array
        KV hand-overs a prefill instance runs at once [count]: its attention-DP ranks
        where the engine hands over per rank, else 1 (:func:`handover_streams`).
    """

    hw: Hardware
    par: Parallel
    shape: ModelShape
    phys: PhysicsParams
    serving: ServingParams
    draft_tokens: float = 0.0
    acceptance: float = 0.0
    draft_cost_frac: float = 0.0
    handover_streams: float = 1.0


@dataclass(frozen=True)
class Traffic:
    """Request shape (arrays allowed).

    Attributes
    ----------
    input_tokens, output_tokens : float
        Mean prompt (input) and generated (output) tokens per request [tokens].
    cached_frac : float
        Share of the prompt served from the prefix cache [0..1].
    arrival_cv2 : float
        Squared coefficient of variation of inter-arrival times (Poisson: 1).
    lengths : LengthDist
        Distribution of input and output tokens around their means (default: fixed).
    burst_share : float
        Closed-loop benchmark: share of requests sent in the opening burst, when every
        client sends its first request at once (one in ``prompts_per_client``) [0..1].
    """

    input_tokens: float
    output_tokens: float
    cached_frac: float = 0.0
    arrival_cv2: float = 1.0
    lengths: LengthDist = FIXED
    burst_share: float = 0.0

    @property
    def context_cv(self):
        """Coefficient of variation of one decoding sequence's KV length [-].

        Its context is ``I + k`` with ``k`` uniform on ``[0, O]`` for an output of
        ``O`` tokens: ``var = var(I) + E[O^2] / 3 - E[O]^2 / 4``.
        """
        i = np.asarray(self.input_tokens, float)
        o = np.asarray(self.output_tokens, float)
        ci, co = self.lengths.cv("input"), self.lengths.cv("output")
        var = (i * ci) ** 2 + o * o * (1.0 + co * co) / 3.0 - o * o / 4.0
        return np.sqrt(np.maximum(var, 0.0)) / np.maximum(i + o / 2.0, 1e-30)

    @property
    def decode_context(self):
        """Mean KV length of a decoding sequence ``I + O/2`` [tokens]."""
        return np.asarray(self.input_tokens, float) + np.asarray(self.output_tokens, float) / 2


# --------------------------------------------------------------------- decode


@dataclass(frozen=True)
class Decode:
    """Decode at a batch: per-token time and the parts of one step [s]."""

    token_s: np.ndarray
    step_s: np.ndarray
    tokens_per_step: np.ndarray
    step: StepTime
    draft_s: np.ndarray
    kv_read_s: np.ndarray | float = 0.0
    seqs_rank: np.ndarray | float = 1.0


def decode(inst: Instance, batch, context) -> Decode:
    """Decode ``batch`` sequences of mean KV length ``context`` on ``inst``.

    The verification pass processes ``B (n+1)`` tokens and reads the KV cache once;
    ``n`` draft passes each cost ``draft_cost_frac`` of a plain step at batch ``B``.

    Parameters
    ----------
    inst : Instance
        The instance (hardware, layout, model, speculative decoding).
    batch : float or array
        Sequences decoding on the instance [sequences].
    context : float or array
        Mean KV length of a decoding sequence, input plus output so far [tokens].

    Returns
    -------
    Decode
        Time per generated (output) token, step time [s], tokens per step and the
        step's parts.
    """
    b = np.asarray(batch, dtype=float)
    n = np.asarray(inst.draft_tokens, dtype=float)
    s = inst.shape
    dp = np.asarray(inst.par.attn_dp, dtype=float)
    seqs_rank = np.maximum(b / dp, np.minimum(b, 1.0))
    kv_rank = seqs_rank * s.kv_bytes_seq(context)
    att = s.attended(context)
    verify = forward_step(inst.hw, inst.par, s, inst.phys, inst.serving, b * (n + 1.0),
                          seqs_rank * (n + 1.0), att, kv_rank, "decode")
    if np.any(n > 0):
        plain = forward_step(inst.hw, inst.par, s, inst.phys, inst.serving, b, seqs_rank, att,
                             kv_rank, "decode")
        draft = n * inst.draft_cost_frac * plain.total_s
    else:
        draft = np.zeros_like(verify.total_s)
    e = expected_tokens(inst.acceptance, n)
    step_s = verify.total_s + draft
    kv_read = kv_rank / (inst.hw.hbm_bytes_per_s * inst.hw.decode_mem_clock_frac
                         * inst.hw.params.hbm_eff_frac)
    return Decode(step_s / e, step_s, e + 0.0 * step_s, verify, draft, kv_read, seqs_rank)


def mix_sd_s(dec: Decode, traffic: Traffic) -> np.ndarray:
    """Spread of a request's time per token from the batch mix [s].

    A step reads the KV cache of every sequence on the rank; their contexts differ
    (:attr:`Traffic.context_cv`), so the KV read of a step varies with coefficient of
    variation ``context_cv / sqrt(sequences per rank)``; per token, divided by the
    tokens per step. The batch turns over about once in a request's life, so a request
    keeps most of this spread (taken whole).

    Parameters
    ----------
    dec : Decode
        Decode at the batch (:func:`decode`).
    traffic : Traffic
        The request shape (mean input and output tokens, prefix cache, lengths).

    Returns
    -------
    ndarray
        Standard deviation of the time per output token [s].
    """
    seqs = np.maximum(np.asarray(dec.seqs_rank, float), 1.0)
    return dec.kv_read_s / dec.tokens_per_step * traffic.context_cv / np.sqrt(seqs)


# -------------------------------------------------------------------- prefill


@dataclass(frozen=True)
class Prefill:
    """Prefill of one request: shared-chunk (throughput) and alone (latency) times [s]."""

    batched_s: np.ndarray
    alone_s: np.ndarray
    batched: StepTime
    alone_nodes: tuple = ()
    node_w: tuple = (1.0,)
    m2_frac: float = 1.0

    @property
    def nodes(self) -> tuple:
        """Prefill-alone times at the prompt-length nodes [s] (the mean length when fixed)."""
        return self.alone_nodes or (self.alone_s,)

    @property
    def alone_mean_s(self) -> np.ndarray:
        """Mean prefill-alone time over the prompt-length distribution [s]."""
        return sum(w * s for w, s in zip(self.node_w, self.nodes, strict=True))

    def service_cv2(self, base_cv2) -> np.ndarray:
        """Squared CV of prefill service: ``base_cv2`` plus the prompt lengths' share [-].

        Parameters
        ----------
        base_cv2 : float or array
            Squared CV of prefill service at a fixed prompt length [-].

        Returns
        -------
        ndarray
            Squared CV of prefill service [-].
        """
        m = self.alone_mean_s
        m2 = sum(w * s * s for w, s in zip(self.node_w, self.nodes, strict=True))
        return base_cv2 + np.maximum(m2 / np.maximum(m * m, 1e-300) - 1.0, 0.0)


def prefill(inst: Instance, traffic: Traffic) -> Prefill:
    """Prefill times of one request of ``traffic`` on ``inst``.

    Batched: the request's new tokens share passes with other requests; each attention
    DP rank prefills a chunk of ``prefill_chunk_tokens`` per pass, so weight reads and
    overheads are paid pro rata. Alone: one request, at least one whole chunk, its
    attention on one DP rank.

    Parameters
    ----------
    inst : Instance
        The instance (hardware, layout, model, speculative decoding).
    traffic : Traffic
        The request shape (mean input and output tokens, prefix cache, lengths).

    Returns
    -------
    Prefill
        Batched and alone prefill times of one request's prompt (input tokens) [s].
    """
    s = inst.shape
    i_tok = np.asarray(traffic.input_tokens, dtype=float)
    cached = i_tok * np.asarray(traffic.cached_frac, dtype=float)
    new = np.maximum(i_tok - cached, 1.0)
    att = s.attended(cached + new / 2.0)
    kv = s.kv_bytes_seq(i_tok)
    chunk = float(inst.serving.prefill_chunk_tokens)
    dp = np.asarray(inst.par.attn_dp, dtype=float)
    # batched: each attention data-parallel rank prefills its own chunk, so a pass of
    # the instance holds dp chunks
    batched = forward_step(inst.hw, inst.par, s, inst.phys, inst.serving, new, new / dp, att,
                           kv / dp, "prefill", steps=new / (chunk * dp))

    def alone_at(x):
        n_x = np.maximum(new * x, 1.0)
        return forward_step(inst.hw, inst.par, s, inst.phys, inst.serving, n_x, n_x,
                            s.attended(cached + n_x / 2.0), s.kv_bytes_seq(cached + n_x),
                            "prefill", steps=np.maximum(np.ceil(n_x / chunk), 1.0)).total_s

    alone = forward_step(inst.hw, inst.par, s, inst.phys, inst.serving, new, new, att, kv,
                         "prefill", steps=np.maximum(np.ceil(new / chunk), 1.0))
    dist = traffic.lengths
    if dist.is_fixed:
        return Prefill(batched.total_s, alone.total_s, batched)
    x, w = dist.nodes("input")
    return Prefill(batched.total_s, alone.total_s, batched,
                   tuple(alone_at(xk) for xk in x), tuple(float(v) for v in w),
                   float(np.sum(w * x * x)))


# ----------------------------------------------------------------- aggregated


@dataclass(frozen=True)
class Point:
    """An operating point (arrays over batches or rows).

    Attributes
    ----------
    batch : ndarray
        Sequences decoding per instance (per decode instance when disaggregated).
    requests_per_s : ndarray
        Completed requests per second of the whole deployment [1/s].
    gpus : ndarray
        GPUs of the deployment.
    tpot_mean_s, ttft_mean_s : ndarray
        Mean TPOT and TTFT [s].
    utilisation : ndarray
        Prefill-queue utilisation [0..1].
    compute_util, memory_util : ndarray
        Time shares compute and HBM are busy, averaged over the deployment's GPUs.
    prefill_s, prefill_alone_s, token_s, step_s : ndarray
        Batched and alone prefill time per request, decode time per token, decode step.
    arrival_cv2 : ndarray
    tokens_per_step : ndarray
        Tokens per decode step per sequence (speculative decoding).
    kv_transfer_s : ndarray
        Disaggregated: one request's KV-cache hand-over, which its TTFT adds [s].
    interrupt_s : ndarray
        Prefill time that interrupts decoding, per prefill (aggregated) [s].
    output_tokens : ndarray
        Output tokens per request [tokens].
    parts : dict
        Per-request time split for the bottleneck label (compute, memory_bandwidth,
        interconnect, overhead) [s].
    slot_wait_s : ndarray
        Closed loop with a full KV cache: wait for a decode slot (Little's law) [s].
    fixed_s : float
        Time outside the model before the first token (``ttft_overhead_s``) [s].
    prefill_nodes : tuple of ndarray
        Prefill-alone time at each prompt-length node [s] (empty: the mean length).
    node_w : tuple of float
        Weights of the prompt-length nodes.
    output_nodes : (ndarray, ndarray) or None
        Output length over its mean at the nodes, and weights (None: fixed).
    prefill_m2_frac : float
        Second moment of the interrupting prefill time over its mean squared [-].
    mix_sd_s : ndarray
        Spread of a request's time per token from the batch mix [s].
    burst_share : float
        Share of requests in a closed-loop benchmark's opening burst [0..1].
    burst_span_s : ndarray
        Time the prefill pool takes to drain the opening burst [s].
    prefill_servers : ndarray
        Prefill instances sharing the queue (1 aggregated, ``n_p`` disaggregated).
    kv_share_s : ndarray or None
        Disaggregated: a prefill instance's hand-over time per request
        (:func:`kv_handover_share_s`) [s]; None: ``kv_transfer_s``.
    slot_p, slot_tail_s : ndarray
        Open loop: probability of waiting for a running-request slot, and the mean wait
        given a wait [s] (:func:`dcplan.perf.latency.slot_wait`).
    admission_s : ndarray
        Mean wait for the engine to admit a request beyond the step under way: the
        scheduler's poll interval and attention-DP balancing (:func:`with_admission`) [s].
    """

    batch: np.ndarray
    requests_per_s: np.ndarray
    gpus: np.ndarray
    tpot_mean_s: np.ndarray
    ttft_mean_s: np.ndarray
    utilisation: np.ndarray
    compute_util: np.ndarray
    memory_util: np.ndarray
    prefill_s: np.ndarray
    prefill_alone_s: np.ndarray
    token_s: np.ndarray
    step_s: np.ndarray
    arrival_cv2: np.ndarray
    service_cv2: float
    tokens_per_step: np.ndarray
    kv_transfer_s: np.ndarray
    interrupt_s: np.ndarray
    output_tokens: np.ndarray
    parts: dict
    slot_wait_s: np.ndarray | float = 0.0
    fixed_s: float = 0.0
    prefill_nodes: tuple = ()
    node_w: tuple = (1.0,)
    output_nodes: tuple | None = None
    prefill_m2_frac: float = 1.0
    mix_sd_s: np.ndarray | float = 0.0
    burst_share: float = 0.0
    burst_span_s: np.ndarray | float = 0.0
    prefill_servers: np.ndarray | float = 1.0
    slot_p: np.ndarray | float = 0.0
    slot_tail_s: np.ndarray | float = 0.0
    admission_s: np.ndarray | float = 0.0
    kv_share_s: np.ndarray | float | None = None

    @property
    def output_tokens_per_s_per_gpu(self) -> np.ndarray:
        """Generated tokens/s per GPU of the deployment [tokens/s]."""
        return self.requests_per_s * self.output_tokens / self.gpus

    @property
    def kv_busy_s(self) -> np.ndarray:
        """A prefill instance's hand-over time per request [s] (its queue's server)."""
        return self.kv_transfer_s if self.kv_share_s is None else self.kv_share_s

    def ttft_quantile(self, percentile, within_s=None) -> np.ndarray:
        """TTFT at ``percentile`` [s] (or whether it is within ``within_s``).

        Its own prompt's prefill (a node of the input distribution) + the prefill queue
        wait + an open loop's slot wait + the closed loop's opening burst + fixed parts
        (:func:`dcplan.perf.latency.ttft_quantile`).

        Parameters
        ----------
        percentile : float or array
            Percentile [%] (e.g. 50, 99).
        within_s : float or array, optional
            A limit [s]: return whether the percentile is at most it (no root finding).

        Returns
        -------
        ndarray
            Time to first token [s] (with ``within_s``: bool).
        """
        # the queue's server is busy for the longer of the prefill and the KV hand-over
        # (disaggregated; aggregated points hand nothing over)
        tail = wait_tail_mean(self.utilisation,
                              np.maximum(self.prefill_alone_s, self.kv_busy_s),
                              self.arrival_cv2, self.service_cv2)
        fixed = (self.kv_transfer_s + self.step_s / 2.0 + self.slot_wait_s + self.fixed_s
                 + self.admission_s)
        return ttft_quantile(fixed, self.prefill_nodes or (self.prefill_alone_s,),
                             self.node_w, self.utilisation, tail, percentile,
                             self.burst_share, self.burst_span_s, self.slot_p,
                             self.slot_tail_s, within_s)

    def tpot_quantile(self, percentile, tpot_cv_frac, within_s=None) -> np.ndarray:
        """TPOT at ``percentile`` [s] (a mixture over output lengths; or whether within).

        Parameters
        ----------
        percentile : float or array
            Percentile [%] (e.g. 50, 99).
        tpot_cv_frac : float or array
            Base coefficient of variation of a request's time per output token [-].
        within_s : float or array, optional
            A limit [s]: return whether the percentile is at most it (no root finding).

        Returns
        -------
        ndarray
            Time per output token [s] (with ``within_s``: bool).
        """
        arrivals = np.where(self.interrupt_s > 0, self.requests_per_s, 0.0)
        return tpot_quantile(self.tpot_mean_s, self.interrupt_s, arrivals, self.output_tokens,
                             tpot_cv_frac, percentile, self.output_nodes,
                             self.prefill_m2_frac, self.mix_sd_s, within_s)


#: Point fields that are not per-point arrays (kept whole by :func:`take_point`).
_POINT_WHOLE = ("node_w", "output_nodes", "parts")


def take_point(pt: Point, shape: tuple, li: np.ndarray, bi: np.ndarray | None) -> Point:
    """The operating points ``(li[k], bi[k])`` of ``pt`` (layout x batch), as 1-D arrays.

    ``bi`` None: ``pt`` is 1-D already (of ``shape``) and ``li`` indexes it.

    Every array field is broadcast to ``shape`` and indexed; the prompt-length nodes
    are indexed each; node weights, output-length nodes and the parts dict stay whole.

    Parameters
    ----------
    pt : Point
        Operating points over layouts x batches (or 1-D).
    shape : tuple
        Shape the array fields are broadcast to [count per axis].
    li : ndarray
        Layout indices [index from 0] (1-D ``pt``: point indices).
    bi : ndarray or None
        Batch indices [index from 0]; None when ``pt`` is 1-D.

    Returns
    -------
    Point
        The selected points.
    """
    def one(v):
        if not np.ndim(v):
            return v
        a = np.broadcast_to(np.asarray(v, float), shape)
        return a[li] if bi is None else a[li, bi]

    changes = {}
    for f in dataclasses.fields(pt):
        v = getattr(pt, f.name)
        if f.name in _POINT_WHOLE:
            continue
        changes[f.name] = tuple(one(a) for a in v) if f.name == "prefill_nodes" else one(v)
    return dataclasses.replace(pt, **changes)


def aggregated(inst: Instance, traffic: Traffic, batch, pre: Prefill | None = None,
               slots=None) -> Point:
    """Operating point of one aggregated instance decoding ``batch`` sequences.

    ``pre`` (from :func:`prefill`) may be passed when it was computed already.
    ``slots``: running-request cap of the instance (engine limit or KV capacity) under
    open-loop arrivals; a request that finds all taken waits for one (M/G/c with
    ``batch`` slots busy on average, each held for the request's decode). None: no
    slot wait (closed loops cap the batch instead, :func:`solve_closed_loop`).

    Parameters
    ----------
    inst : Instance
        The instance (hardware, layout, model, speculative decoding).
    traffic : Traffic
        The request shape (mean input and output tokens, prefix cache, lengths).
    batch : float or array
        Sequences decoding on the instance [sequences].
    pre : Prefill, optional
        Prefill times of ``traffic`` on ``inst``, if computed already.
    slots : float or array, optional
        Running-request cap of the instance under open-loop arrivals [sequences] (None:
        no slot wait).

    Returns
    -------
    Point
        The operating point (request rate [requests/s], GPUs, TPOT and TTFT [s],
        utilisations [-]).
    """
    b = np.asarray(batch, dtype=float)
    o = np.asarray(traffic.output_tokens, dtype=float)
    dec = decode(inst, b, traffic.decode_context)
    pre = prefill(inst, traffic) if pre is None else pre
    per_req = o * dec.token_s + b * pre.batched_s
    lam = b / per_req
    rho = lam * pre.batched_s
    tpot = dec.token_s + b * pre.batched_s / o
    cv2 = np.asarray(traffic.arrival_cv2, dtype=float)
    cs2 = pre.service_cv2(inst.phys.prefill_service_cv2)
    w = wait_mean(rho, pre.alone_s, cv2, cs2)
    ttft = pre.alone_mean_s + w + dec.step_s / 2.0 + inst.hw.params.ttft_overhead_s
    slot_p, slot_tail = 0.0 * b, 0.0 * b
    if slots is not None:
        hold = o * tpot
        slot_p, slot_tail = slot_wait(slots, b, hold, cv2, traffic.lengths.cv("output") ** 2)
        ttft = ttft + slot_p * slot_tail
    # time shares: prefill rho, decode 1 - rho
    ps, ds = pre.batched, dec.step
    pre_t = np.maximum(ps.total_s, 1e-30)
    dec_t = np.maximum(dec.step_s, 1e-30)
    u_c = rho * ps.compute_s / pre_t + (1 - rho) * ds.compute_s / dec_t
    u_m = rho * ps.memory_s / pre_t + (1 - rho) * ds.memory_s / dec_t
    steps_per_req = o / dec.tokens_per_step
    parts = _parts(ps, 1.0, ds, steps_per_req / b, dec.draft_s)
    g = np.asarray(inst.par.gpus, dtype=float) + 0.0 * b
    return Point(b, lam, g, tpot, ttft, rho, np.clip(u_c, 0, 1), np.clip(u_m, 0, 1),
                 pre.batched_s + 0 * b, pre.alone_s + 0 * b, dec.token_s, dec.step_s, cv2 + 0 * b,
                 cs2, dec.tokens_per_step, 0.0 * b,
                 pre.batched_s + 0 * b, o + 0 * b, parts, 0.0, inst.hw.params.ttft_overhead_s,
                 **_dist_fields(pre, traffic, dec), slot_p=slot_p, slot_tail_s=slot_tail)


def _dist_fields(pre: Prefill, traffic: Traffic, dec: Decode) -> dict:
    """The length-distribution fields of a :class:`Point`."""
    fixed = traffic.lengths.is_fixed
    return dict(prefill_nodes=pre.alone_nodes, node_w=pre.node_w,
                output_nodes=None if fixed else traffic.lengths.nodes("output"),
                prefill_m2_frac=pre.m2_frac, mix_sd_s=mix_sd_s(dec, traffic),
                burst_share=float(traffic.burst_share))


def _parts(pre: StepTime | None, pre_count, dec: StepTime, dec_count, draft_s) -> dict:
    """Per-request time by ceiling: compute, memory bandwidth, interconnect, overhead."""
    out = {"compute": 0.0, "memory_bandwidth": 0.0, "interconnect": 0.0, "overhead": 0.0}
    for st, n in ((pre, pre_count), (dec, dec_count)):
        if st is None:
            continue
        comp_dom = st.compute_s >= st.memory_s
        out["compute"] = out["compute"] + n * np.where(comp_dom, st.roof_s, 0.0)
        out["memory_bandwidth"] = out["memory_bandwidth"] + n * np.where(comp_dom, 0.0, st.roof_s)
        out["interconnect"] = out["interconnect"] + n * st.comm_s
        out["overhead"] = out["overhead"] + n * st.overhead_s
    out["overhead"] = out["overhead"] + dec_count * draft_s
    return out


def bottleneck_label(parts: dict, i=None) -> str:
    """The ceiling that takes most of the time per request (at index ``i``).

    Parameters
    ----------
    parts : dict
        Ceiling -> time per request [s] (``Point.parts``).
    i : int, optional
        Index into array-valued parts [index from 0] (None: scalars).

    Returns
    -------
    str
        ``compute``, ``memory_bandwidth``, ``interconnect`` or ``overhead``.
    """
    vals = {k: float(np.asarray(v)[i] if i is not None and np.ndim(v) else np.asarray(v))
            for k, v in parts.items()}
    return max(vals, key=lambda k: vals[k])


# -------------------------------------------------------------- disaggregated


def kv_transfer_s(prefill_inst: Instance, traffic: Traffic, scaleout_bytes_per_s) -> np.ndarray:
    """Time one prompt's KV cache takes to reach a decode instance [s] (its own latency).

    ``kv_handover_latency_s + KV bytes / links``: a fixed latency per hand-over
    (connection and slot set-up, the transfer engine's completion polling) plus the
    prompt's (input tokens') KV bytes over the prefill instance's links (``gpus x
    scale-out`` at the scale-out efficiency). Fixed, not per prompt token: at up to 64
    requests in flight the measured disaggregated runs add about the same time over the
    aggregated ones at 1k and at 8k prompts (docs/perf.md, TTFT). This is what a
    request's TTFT adds; how long the instance is occupied per request, which does grow
    with the prompt, is :func:`kv_handover_share_s`.

    Parameters
    ----------
    prefill_inst : Instance
        The prefill instance.
    traffic : Traffic
        The request shape (mean input and output tokens, prefix cache, lengths).
    scaleout_bytes_per_s : float or array
        Scale-out bandwidth per GPU of the prefill instance [bytes/s].

    Returns
    -------
    ndarray
        Hand-over time of the prompt's (input tokens') KV cache [s].
    """
    i_tok = np.asarray(traffic.input_tokens, dtype=float)
    return (np.asarray(prefill_inst.hw.params.kv_handover_latency_s, float)
            + prefill_inst.shape.kv_bytes_seq(i_tok) / _link_bytes_per_s(prefill_inst,
                                                                          scaleout_bytes_per_s))


def kv_handover_share_s(prefill_inst: Instance, traffic: Traffic,
                        scaleout_bytes_per_s) -> np.ndarray:
    """Time a prefill instance spends on hand-overs per request [s] (its occupancy).

    The instance hands requests over one after another per hand-over stream
    (``Instance.handover_streams``: one per instance, or one per attention-DP rank
    where the engine hands over per rank), so it passes ``streams`` prompts per
    :func:`kv_transfer_s`, never faster than its links carry the bytes: ``max(kv bytes /
    links, I x kv_handover_token_s / streams)``.

    Parameters
    ----------
    prefill_inst, traffic, scaleout_bytes_per_s
        As :func:`kv_transfer_s`.

    Returns
    -------
    ndarray
        Hand-over time per request of the instance [s].
    """
    return _handover_s(prefill_inst, traffic, scaleout_bytes_per_s,
                       prefill_inst.handover_streams)


def _handover_s(prefill_inst: Instance, traffic: Traffic, scaleout_bytes_per_s,
                streams) -> np.ndarray:
    """``max(kv bytes / links, I x kv_handover_token_s / streams)`` [s]."""
    i_tok = np.asarray(traffic.input_tokens, dtype=float)
    kv = prefill_inst.shape.kv_bytes_seq(i_tok)
    link = _link_bytes_per_s(prefill_inst, scaleout_bytes_per_s)
    return np.maximum(kv / link, i_tok * np.asarray(prefill_inst.hw.params.kv_handover_token_s,
                                                    float) / np.asarray(streams, float))


def _link_bytes_per_s(prefill_inst: Instance, scaleout_bytes_per_s) -> np.ndarray:
    """What a prefill instance's links carry: ``gpus x scale-out x efficiency`` [bytes/s]."""
    return (np.asarray(prefill_inst.par.gpus, float) * scaleout_bytes_per_s
            * prefill_inst.hw.params.scaleout_eff_frac)


def handover_streams(par: Parallel, per_rank) -> np.ndarray:
    """KV hand-overs a prefill instance of layout ``par`` runs at once [count].

    Parameters
    ----------
    par : Parallel
        The prefill instance's layout (attention-DP ranks).
    per_rank : bool or array of bool
        Whether its engine hands over per attention-DP rank [-]
        (:meth:`dcplan.perf.params.SoftwareSpec.handover_per_rank`).

    Returns
    -------
    ndarray
        Hand-over streams [count]: the attention-DP ranks where ``per_rank``, else 1.
    """
    return np.where(per_rank, np.asarray(par.attn_dp, float), 1.0)


def prefill_server(pre: Prefill, handover_s, traffic: Traffic) -> Prefill:
    """The prefill queue's server of a disaggregated instance: prefill, then hand-over.

    The instance is busy with a request for the longer of its prefill and its KV
    hand-over share (the hand-over of one request overlaps the next one's prefill; with
    several hand-over streams, the instance's time per request,
    :func:`kv_handover_share_s`), so the hand-over bounds the pool's request rate when
    it is the slower. The server's spread is taken as the prompt lengths' own: the
    hand-over is proportional to the prompt, and a prefill's fixed overheads only narrow its
    spread, so this bounds it from above whichever part is the slower. (Taking at each
    length node the longer part instead let faster software widen the spread at a
    fixed utilisation, and an earlier software date then predicted more throughput.)

    Parameters
    ----------
    pre : Prefill
        Prefill times of the traffic on the prefill instance [s].
    handover_s : array
        :func:`kv_handover_share_s` at the mean prompt [s].
    traffic : Traffic
        The request shape (its input-length distribution gives the nodes).

    Returns
    -------
    Prefill
        ``pre`` with the batched and alone times the longer of prefill and hand-over
        [s], and nodes in proportion to the prompt lengths, so that
        :meth:`Prefill.service_cv2` gives the lengths' spread.
    """
    kvt = np.asarray(handover_s, float)
    alone = np.maximum(pre.alone_s, kvt)
    nodes = ()
    if pre.alone_nodes:
        x, _ = traffic.lengths.nodes("input")
        nodes = tuple(alone * xk for xk in x)
    return dataclasses.replace(pre, batched_s=np.maximum(pre.batched_s, kvt),
                               alone_s=alone, alone_nodes=nodes)


def disaggregated(pre_inst: Instance, dec_inst: Instance, traffic: Traffic, batch,
                  n_prefill, n_decode, pre: Prefill | None = None) -> Point:
    """Operating point of ``n_prefill`` prefill and ``n_decode`` decode instances.

    ``batch`` is the decode batch per decode instance; the request rate is the decode
    pool's, ``lambda = n_d B / (O t_tok)``; the prefill queue runs at
    ``rho = lambda max(t_pre, t_kv / streams) / n_p``, where ``t_kv`` is one prompt's
    KV hand-over (:func:`kv_transfer_s`), which its TTFT adds, and ``streams`` the
    hand-overs an instance runs at once (:func:`kv_handover_share_s`,
    :func:`prefill_server`).

    Parameters
    ----------
    pre_inst : Instance
        A prefill instance.
    dec_inst : Instance
        A decode instance.
    traffic : Traffic
        The request shape (mean input and output tokens, prefix cache, lengths).
    batch : float or array
        Sequences decoding per decode instance [sequences].
    n_prefill : float or array
        Prefill instances [count].
    n_decode : float or array
        Decode instances [count].
    pre : Prefill, optional
        Prefill times of ``traffic`` on ``pre_inst``, if computed already.

    Returns
    -------
    Point
        The operating point of the deployment (request rate [requests/s], GPUs, TPOT and
        TTFT [s], utilisations [-]).
    """
    b = np.asarray(batch, dtype=float)
    o = np.asarray(traffic.output_tokens, dtype=float)
    n_p = np.asarray(n_prefill, dtype=float)
    n_d = np.asarray(n_decode, dtype=float)
    dec = decode(dec_inst, b, traffic.decode_context)
    pre = prefill(pre_inst, traffic) if pre is None else pre
    lam = n_d * b / (o * dec.token_s)
    kvt = kv_transfer_s(pre_inst, traffic, pre_inst.hw.scaleout_bytes_per_s) + 0 * b
    share = kv_handover_share_s(pre_inst, traffic, pre_inst.hw.scaleout_bytes_per_s) + 0 * b
    srv = prefill_server(pre, share, traffic)
    rho = lam * srv.batched_s / n_p
    cv2 = np.asarray(traffic.arrival_cv2, dtype=float)
    cs2 = srv.service_cv2(pre_inst.phys.prefill_service_cv2)
    w = wait_mean(rho, srv.alone_s, cv2, cs2)
    ttft = pre.alone_mean_s + w + kvt + dec.step_s / 2.0 + pre_inst.hw.params.ttft_overhead_s
    g_p = np.asarray(pre_inst.par.gpus, float) * n_p
    g_d = np.asarray(dec_inst.par.gpus, float) * n_d
    g = g_p + g_d + 0 * b
    ps, ds = pre.batched, dec.step
    pre_t = np.maximum(ps.total_s, 1e-30)
    dec_t = np.maximum(dec.step_s, 1e-30)
    busy_p = np.minimum(lam * pre.batched_s / n_p, 1.0)   # prefill compute, not hand-over
    u_c = (g_p * busy_p * ps.compute_s / pre_t + g_d * ds.compute_s / dec_t) / g
    u_m = (g_p * busy_p * ps.memory_s / pre_t + g_d * ds.memory_s / dec_t) / g
    parts = _parts(ps, 1.0, ds, o / dec.tokens_per_step / b, dec.draft_s)
    return Point(b, lam, g, dec.token_s, ttft, rho, np.clip(u_c, 0, 1), np.clip(u_m, 0, 1),
                 pre.batched_s + 0 * b, pre.alone_s + 0 * b, dec.token_s, dec.step_s, cv2 + 0 * b,
                 cs2, dec.tokens_per_step, kvt, 0.0 * b, o + 0 * b,
                 parts, 0.0, pre_inst.hw.params.ttft_overhead_s,
                 **_dist_fields(pre, traffic, dec),
                 prefill_servers=n_p + 0 * b, kv_share_s=share)


# ---------------------------------------------------------------- closed loop


#: Tolerance of the closed-loop batch in log space [-]: the solved batch is within this
#: relative error of the one where Little's law holds.
CLOSED_LOOP_LOG_TOL = 1e-11


def solve_closed_loop(point_of_batch, concurrency, batch_max):
    """Decode batch at which Little's law holds for ``concurrency`` requests in flight.

    ``C = lambda * (TTFT_mean + O * TPOT_mean)``; with ``B = lambda O TPOT`` this is
    ``g(B) = B_total + lambda TTFT_mean - C = 0``, increasing in ``B``. Solved in log
    space between a tiny batch and ``min(C, batch_max)`` by a bracketed root finder
    (Chandrupatla's: interpolation safeguarded by bisection,
    :func:`scipy.optimize.elementwise.find_root`) to :data:`CLOSED_LOOP_LOG_TOL`. Where
    even the largest batch leaves ``g < 0`` (the KV cache is full), the remaining
    requests wait for a slot and the batch stays at its maximum.

    Parameters
    ----------
    point_of_batch : callable
        ``B -> (Point, sequences decoding in the deployment)``, elementwise in ``B``.
    concurrency : array
        Requests in flight [requests].
    batch_max : array
        Largest batch per (decode) instance [sequences].

    Returns
    -------
    (Point, ndarray)
        The point at the solution and a flag: True where the KV cache caps the batch.
    """
    c = np.asarray(concurrency, dtype=float)
    hi = np.maximum(np.asarray(batch_max, dtype=float), 1e-3)
    lo = np.full_like(hi, 1e-3)

    def gap(b):
        pt, seqs = point_of_batch(b)
        with np.errstate(invalid="ignore"):
            val = seqs + pt.requests_per_s * pt.ttft_mean_s - c
        return np.where(np.isfinite(val), val, np.inf)

    g_hi = gap(hi)
    capped = g_hi < 0
    shape = np.broadcast_shapes(hi.shape, g_hi.shape)
    g_hi = np.broadcast_to(g_hi, shape)
    b_hi = np.broadcast_to(hi, shape).ravel()
    g_lo = np.broadcast_to(gap(np.broadcast_to(lo, shape)), shape)
    b = np.where(g_lo >= 0, np.broadcast_to(lo, shape), b_hi.reshape(shape)).ravel()
    at = np.flatnonzero(((g_lo < 0) & (g_hi >= 0)).ravel())
    if at.size:
        u_lo, u_hi = np.log(lo.ravel()[0]) + np.zeros(at.size), np.log(b_hi[at])
        ends = ((u_lo, g_lo.ravel()[at]), (u_hi, g_hi.ravel()[at]))

        def fun(u, idx):
            # the bracket's ends are evaluated already; other points: every element of
            # the deployment at once (the model is vectorised over them), those not
            # asked for at their largest batch
            for u_end, g_end in ends:
                if u.shape == u_end.shape and np.array_equal(u, u_end):
                    return g_end
            full = b_hi.copy()
            full[idx] = np.exp(u)
            return gap(full.reshape(shape)).ravel()[idx]

        sol = find_root(fun, (u_lo, u_hi), args=(at,),
                        tolerances={"xatol": CLOSED_LOOP_LOG_TOL, "xrtol": 0.0})
        u = np.where(np.isfinite(sol.x), sol.x, 0.5 * (sol.bracket[0] + sol.bracket[1]))
        b[at] = np.exp(u)
    b = b.reshape(shape)
    pt, seqs = point_of_batch(b)
    if pt.burst_share:
        # Ramp-up: every client sends its first request at once; the prefill pool
        # drains the burst of C requests at its throughput, one batched prefill (or KV
        # hand-over, where that is the slower) each.
        span = c * np.maximum(pt.prefill_s, pt.kv_busy_s) / np.maximum(
            pt.prefill_servers, 1.0)
        pt = dataclasses.replace(pt, burst_span_s=span)
    if np.any(capped):
        # Requests beyond the KV capacity queue for a slot: Little's law gives TTFT.
        wait = np.where(capped, (c - seqs) / np.maximum(pt.requests_per_s, 1e-30), 0.0)
        pt = _with_extra_wait(pt, wait)
    return pt, capped


def balance_gather_s(dp_ranks, requests_per_s) -> np.ndarray:
    """Mean wait of a prefill for every attention-DP rank to hold one [s].

    TensorRT-LLM's attention-DP balancing (``attention_dp_config.enable_balance``)
    starts context requests only once every one of the ``D`` ranks has one waiting.
    It sends each new request to the rank with the fewest active requests, and in a
    closed loop that is the rank where a request just finished: arrivals land on
    ranks independently and uniformly, so a group gathers when ``K`` arrivals have
    covered all ``D`` ranks, the coupon collector's count, with
    ``E[K] = D H`` and ``E[K (K - 1)] = D^2 (H2 + H^2) - 2 D H`` (``H``, ``H2``: the
    ``D``-th harmonic numbers of orders 1 and 2). With Poisson arrivals at
    ``lambda`` the ``j``-th member waits for the ``K - j`` gaps after it, so the mean
    wait per request is ``E[K (K - 1)] / (2 lambda E[K])``
    ``= (D (H2 + H^2) - 2 H) / (2 lambda H)``: 4.53 / lambda for four ranks, three
    times the ``(D - 1) / (2 lambda)`` of requests dealt to the ranks in turn.

    Parameters
    ----------
    dp_ranks : float or array
        Attention data-parallel ranks ``D`` of the instance [-] (whole numbers >= 1).
    requests_per_s : float or array
        Requests arriving at the instance ``lambda`` [requests/s].

    Returns
    -------
    ndarray
        Mean wait [s]: 0 for one rank, infinite without arrivals.
    """
    d = np.maximum(np.asarray(dp_ranks, float), 1.0)
    lam = np.asarray(requests_per_s, float)
    # a few distinct rank counts over many points: the special functions once each
    ranks, at = np.unique(d, return_inverse=True)
    h = (digamma(ranks + 1.0) + np.euler_gamma)[at].reshape(d.shape)            # H_D
    h2 = (np.pi ** 2 / 6.0 - polygamma(1, ranks + 1.0))[at].reshape(d.shape)    # H_D, order 2
    pairs = d * (h2 + h * h) - 2.0 * h               # E[K (K - 1)] / D
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(lam > 0, np.maximum(pairs, 0.0) / (2.0 * lam * h), np.inf)


def with_admission(pt: Point, poll_interval_steps, balance_timeout_steps, dp_ranks,
                   instances=1.0) -> Point:
    """``pt`` with the engine's admission waits added to its TTFT.

    Two waits before a request's prefill starts, in decode steps ``t_step``
    (:attr:`Point.step_s`), beyond the half step under way that every point holds:

    * **Poll interval** ``N``: the scheduler looks for new requests once every ``N``
      steps, so an arrival waits uniformly 0 to ``N`` steps: ``(N - 1) / 2 * t_step``
      more on average than polling every step. Its mean is used at every percentile.
    * **Attention-DP balancing** with timeout ``T`` steps over ``D`` ranks: a prefill
      waits until every rank has one (:func:`balance_gather_s`), at most ``T t_step``.
      No wait with ``T = 0`` or one rank.

    Parameters
    ----------
    pt : Point
    poll_interval_steps, balance_timeout_steps : array
        ``N`` and ``T`` [steps] (1 and 0: no wait).
    dp_ranks : array
        Attention data-parallel ranks of the (decode) instance ``D`` [-].
    instances : array
        (Decode) instances sharing ``pt.requests_per_s`` [-].

    Returns
    -------
    Point
        ``ttft_mean_s`` and :attr:`Point.admission_s` raised by the wait [s].
    """
    step = np.asarray(pt.step_s, float)
    n = np.maximum(np.asarray(poll_interval_steps, float), 1.0)
    poll = (n - 1.0) / 2.0 * step
    d = np.asarray(dp_ranks, float)
    t = np.asarray(balance_timeout_steps, float)
    lam = np.asarray(pt.requests_per_s, float) / np.maximum(np.asarray(instances, float), 1.0)
    balance = np.where((t > 0) & (d > 1), np.minimum(balance_gather_s(d, lam), t * step), 0.0)
    wait = poll + balance
    return dataclasses.replace(pt, ttft_mean_s=pt.ttft_mean_s + wait,
                               admission_s=pt.admission_s + wait)


def _with_extra_wait(pt: Point, wait) -> Point:
    extra = np.maximum(wait - pt.ttft_mean_s, 0.0)
    return dataclasses.replace(pt, ttft_mean_s=pt.ttft_mean_s + extra, slot_wait_s=extra)
