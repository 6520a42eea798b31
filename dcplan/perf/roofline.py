"""Roofline physics of one model instance: step times per GPU of a forward pass.

An *instance* (replica) is one copy of a model on ``g`` accelerators deployed as the
serving engines do (:class:`Parallel`): attention with tensor parallelism ``TP`` over
``attn_tp`` GPUs, replicated ``attn_dp`` times (data-parallel attention), and the MoE
layers with expert parallelism over ``ep`` GPUs (each expert sliced over
``g / ep``). A group larger than the scale-up domain spans domains and its
collectives cross the scale-out network.

A forward step over ``T`` tokens is the sum of per-component rooflines (each the
larger of its compute and memory time) plus communication and fixed overheads:

- attention projections (non-expert precision),
- attention core: QK^T and softmax-V at the attention precision against the KV-cache
  read (MLA decode runs *absorbed*: queries in the 512+64-wide latent space),
- dense FFN, shared experts and head (non-expert precision),
- routed experts: grouped GEMMs over ``m`` tokens per expert, charged as ``m + pad``
  rows, on the busiest expert-parallel rank (load imbalance), against the weights of
  the distinct experts that rank's tokens hit (the busiest rank's count, above the mean
  by the binomial spread, so few tokens over many EP ranks read unevenly),
- all-reduces (attention TP; the MoE output where attention is tensor-parallel, EP or
  not) and dispatch/combine all-to-alls (EP under data-parallel attention) over the
  scale-up domain, or partly over scale-out when the group spans domains.

Every function is vectorised: hardware parameters, parallel sizes and token counts
may be numpy arrays that broadcast together. Units: seconds, bytes, FLOPs, tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from dcplan.perf.params import GEMM_EFF_MAX_FRAC, HardwareParams, PhysicsParams, ServingParams
from dcplan.schema import BYTES_PER_ELEMENT, LLM, Accelerator, Precision


def distinct_experts(experts_total: int, experts_active: int, tokens) -> np.ndarray:
    """Return the expected distinct routed experts hit by ``tokens`` tokens in one layer.

    With uniform routing each token picks ``k`` of ``E`` experts, so an expert is
    missed by one token with probability ``1 - k/E`` and by all ``B`` tokens with
    probability ``(1 - k/E)^B``:

    ``E_hit(B) = E * (1 - (1 - k/E)^B)``; ``E_hit(1) = k`` and ``E_hit(inf) = E``.

    Parameters
    ----------
    experts_total : int
        Routed experts per MoE layer ``E`` [-].
    experts_active : int
        Experts each token uses ``k`` [-].
    tokens : float or array
        Tokens in the step ``B`` [tokens].

    Returns
    -------
    ndarray
        Expected distinct experts [-].
    """
    e, k = float(experts_total), float(experts_active)
    tokens = np.asarray(tokens, dtype=float)
    return e * (1.0 - (1.0 - k / e) ** tokens)


@dataclass(frozen=True)
class ModelShape:
    """Quantities of an LLM at one serving precision, in base units.

    Attributes
    ----------
    total_params, active_params : float
        Parameters stored / used per token [-].
    attention_params : float
        Parameters of the attention projections, all layers [-].
    other_params : float
        Always-on parameters besides attention (dense FFN, shared experts, embeddings
        and head) [-].
    expert_params : float
        Parameters of one routed expert summed over the MoE layers [-].
    expert_bytes_per_param, other_bytes_per_param : float
        Bytes per weight of the routed experts (dense models: of every GEMM) and of the
        non-expert weights [bytes].
    precision, other_precision, attention_precision : str
        Precisions of the expert (or dense) GEMMs, the non-expert GEMMs and the
        attention arithmetic.
    kv_bytes_per_token_layer : float
        KV-cache bytes per token per full-attention layer [bytes].
    layers, full_layers, window_layers, moe_layers, dense_layers : int
    window_tokens : float
        Sliding window [tokens] (inf when none).
    heads, kv_heads : int
    mla : bool
        Multi-head latent attention (the KV cache is one latent per token, shared by
        all heads: tensor parallelism replicates it).
    decode_flops_per_key, prefill_flops_per_key : float
        Attention FLOPs per query token per attended key per layer, decode (MLA
        absorbed: ``4 heads kv_latent_dim``) and prefill (``4 heads head_dim``) [FLOP].
    hidden_size : int
    experts_total, experts_active : int
    mtp_modules : int
    """

    total_params: float
    active_params: float
    attention_params: float
    other_params: float
    expert_params: float
    expert_bytes_per_param: float
    other_bytes_per_param: float
    precision: str
    other_precision: str
    attention_precision: str
    kv_bytes_per_token_layer: float
    layers: int
    full_layers: int
    window_layers: int
    moe_layers: int
    dense_layers: int
    window_tokens: float
    heads: int
    kv_heads: int
    mla: bool
    decode_flops_per_key: float
    prefill_flops_per_key: float
    hidden_size: int
    experts_total: int
    experts_active: int
    mtp_modules: int

    @classmethod
    def build(cls, model: LLM, precision: Precision | str, serving: ServingParams) -> ModelShape:
        """Derive the shape of ``model`` served at ``precision``.

        Parameters
        ----------
        model : LLM
            The model (catalog ``models``).
        precision : Precision or str
            Serving precision of the expert (or dense) GEMMs.
        serving : ServingParams
            Serving parameters (KV-cache, attention and non-expert precisions).

        Returns
        -------
        ModelShape
            The shape, in base units (parameters, bytes, tokens).
        """
        prec = Precision(precision).value
        kv_elem = serving.kv_bytes(prec)
        mla = bool(model.kv_latent_dim)
        per_layer = (model.kv_latent_dim if mla else 2 * model.kv_heads * model.head_dim) * kv_elem
        window_layers = model.sliding_window_layers if model.sliding_window_tokens else 0
        attn = (model.attention_params_b * 1e9 if model.attention_params_b else
                model.layers * model.hidden_size * 2.0 * (model.attention_heads + model.kv_heads)
                * model.head_dim)
        if model.is_moe:
            e, k = model.experts_total, model.experts_active
            moe_layers = model.moe_layers or model.layers
            # One routed expert's parameters, from the catalog's total and active
            # counts: total - active = (E - k) experts' worth of parameters.
            expert = ((model.total_params_b - model.active_params_b) * 1e9 / (e - k)
                      if e > k else 0.0)
            other_prec = serving.non_expert_prec(prec)
        else:
            e = k = moe_layers = 0
            expert = 0.0
            other_prec = prec
        always_on = model.active_params_b * 1e9 - k * expert
        attn = min(attn, 0.9 * always_on)
        return cls(
            total_params=model.total_params_b * 1e9,
            active_params=model.active_params_b * 1e9,
            attention_params=attn,
            other_params=always_on - attn,
            expert_params=expert,
            expert_bytes_per_param=BYTES_PER_ELEMENT[Precision(prec)],
            other_bytes_per_param=BYTES_PER_ELEMENT[Precision(other_prec)],
            precision=prec,
            other_precision=other_prec,
            attention_precision=serving.attention_prec(prec),
            kv_bytes_per_token_layer=float(per_layer),
            layers=model.layers,
            full_layers=model.layers - window_layers,
            window_layers=window_layers,
            moe_layers=moe_layers,
            dense_layers=model.layers - moe_layers,
            window_tokens=float(model.sliding_window_tokens or np.inf),
            heads=model.attention_heads,
            kv_heads=model.kv_heads,
            mla=mla,
            decode_flops_per_key=4.0 * model.attention_heads * (
                model.kv_latent_dim if mla else model.head_dim),
            prefill_flops_per_key=4.0 * model.attention_heads * model.head_dim,
            hidden_size=model.hidden_size,
            experts_total=e,
            experts_active=k,
            mtp_modules=model.mtp_modules,
        )

    @property
    def is_moe(self) -> bool:
        """Whether the model has routed experts."""
        return self.experts_total > 0

    @property
    def weight_bytes(self) -> float:
        """Bytes of all weights [bytes]."""
        return ((self.attention_params + self.other_params) * self.other_bytes_per_param
                + self.experts_total * self.expert_params * self.expert_bytes_per_param)

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes one token adds while inside every layer's window [bytes]."""
        return self.kv_bytes_per_token_layer * self.layers

    def kv_bytes_seq(self, context_tokens) -> np.ndarray:
        """KV-cache bytes of one sequence holding ``context_tokens`` tokens [bytes].

        Parameters
        ----------
        context_tokens : float or array
            Tokens a sequence holds: its prompt (input) plus the output tokens generated so far
            [tokens].

        Returns
        -------
        ndarray
            KV-cache bytes of the sequence over all layers [bytes].
        """
        c = np.asarray(context_tokens, dtype=float)
        return self.kv_bytes_per_token_layer * (
            self.full_layers * c + self.window_layers * np.minimum(c, self.window_tokens))

    def attended(self, context_tokens) -> np.ndarray:
        """Layer-summed key positions one query attends to at ``context_tokens`` [-].

        Parameters
        ----------
        context_tokens : float or array
            Tokens a sequence holds: its prompt (input) plus the output tokens generated so far
            [tokens].

        Returns
        -------
        ndarray
            Key positions attended to, summed over the layers [-].
        """
        c = np.asarray(context_tokens, dtype=float)
        return self.full_layers * c + self.window_layers * np.minimum(c, self.window_tokens)


@dataclass(frozen=True)
class Parallel:
    """How one instance is spread over its GPUs (fields may be arrays).

    Attributes
    ----------
    attn_tp : int
        Tensor-parallel size of attention (heads split over this many GPUs).
    attn_dp : int
        Data-parallel attention replicas (each holds its own sequences' KV cache).
    ep : int
        Expert-parallel size of the MoE layers (1: experts tensor-parallel over all
        GPUs). Dense models: 1.
    """

    attn_tp: int = 1
    attn_dp: int = 1
    ep: int = 1

    @property
    def gpus(self):
        """GPUs of the instance ``attn_tp * attn_dp``."""
        return self.attn_tp * self.attn_dp

    @property
    def moe_tp(self):
        """Tensor-parallel slices of each expert ``gpus / ep``."""
        return self.gpus / self.ep

    @classmethod
    def from_engine(cls, tp: int, ep: int, dp_attention: bool) -> Parallel:
        """Map an engine's flags (``--tp``, ``--ep``, DP attention) to a layout.

        The instance has ``max(tp, ep)`` GPUs; with DP attention every GPU runs its own
        attention (TP 1), otherwise attention is TP ``tp`` replicated over the rest.

        Parameters
        ----------
        tp : int
            Tensor-parallel size (``--tp``) [GPUs].
        ep : int
            Expert-parallel size (``--ep``) [GPUs].
        dp_attention : bool
            Data-parallel attention (every GPU runs its own attention).

        Returns
        -------
        Parallel
            The layout.
        """
        gpus = max(tp, ep)
        if dp_attention:
            return cls(attn_tp=1, attn_dp=gpus, ep=ep)
        return cls(attn_tp=tp, attn_dp=gpus // tp, ep=ep)

    def label(self, moe: bool = True) -> str:
        """Engine-style name, e.g. ``TP8``, ``TP8 EP8``, ``DEP16`` (DP attention 16, EP 16).

        Parameters
        ----------
        moe : bool
            Name the expert parallelism too (False for dense models).

        Returns
        -------
        str
            The name.
        """
        g = int(self.gpus)
        if not moe:
            return f"TP{int(self.attn_tp)}" + (f" x DP{int(self.attn_dp)}" if self.attn_dp > 1
                                               else "")
        if self.attn_tp == 1 and self.attn_dp > 1 and self.ep == g:
            return f"DEP{g}"
        att = f"TP{int(self.attn_tp)}" + (f" DP{int(self.attn_dp)}" if self.attn_dp > 1 else "")
        return att + (f" EP{int(self.ep)}" if self.ep > 1 else "")


@dataclass(frozen=True)
class Hardware:
    """One accelerator in base units, with its parameters (fields may be arrays).

    Attributes
    ----------
    gemm_flops, other_flops, attn_flops : float
        Dense peak at the expert/dense GEMM precision, the non-expert precision and the
        attention precision [FLOP/s].
    hbm_bytes_per_s : float
        Peak HBM bandwidth [bytes/s].
    hbm_capacity : float
        HBM usable by weights + KV [bytes].
    scaleup_bytes_per_s : float
        Scale-up bandwidth per direction [bytes/s].
    scaleout_bytes_per_s : float
        Scale-out bandwidth [bytes/s].
    domain : int
        GPUs per scale-up domain.
    params : HardwareParams
    prefill_clock_frac, decode_clock_frac : float
        Core clock in prefill / decode steps as a fraction of the uncapped one [-]
        (1 unless a power cap throttles the phase: :func:`dcplan.perf.power.phase_clocks`); the
        peak FLOP/s of that phase scale with it.
    prefill_mem_clock_frac, decode_mem_clock_frac : float
        HBM clock in prefill / decode steps as a fraction of the uncapped one [-]; the
        HBM bandwidth of that phase scales with it.
    moe_gemm_time_ratio : float
        Time of the MoE grouped GEMMs (compute and weight reads) as a multiple of the
        libraries most measured runs used [-]: 1, or ``physics.deepgemm_moe_time_ratio``
        where a measured row's recipe ran DeepGEMM (plans: 1).
    """

    gemm_flops: float
    other_flops: float
    attn_flops: float
    hbm_bytes_per_s: float
    hbm_capacity: float
    scaleup_bytes_per_s: float
    scaleout_bytes_per_s: float
    domain: int
    params: HardwareParams
    prefill_clock_frac: float = 1.0
    decode_clock_frac: float = 1.0
    prefill_mem_clock_frac: float = 1.0
    decode_mem_clock_frac: float = 1.0
    moe_gemm_time_ratio: float = 1.0

    def clocks(self, prefill: bool) -> tuple[float, float]:
        """Core and HBM clock fractions of a prefill or a decode step.

        Parameters
        ----------
        prefill : bool
            True: a prefill step; False: a decode step.

        Returns
        -------
        tuple of float
            ``(clock_frac, mem_clock_frac)`` [-].
        """
        if prefill:
            return self.prefill_clock_frac, self.prefill_mem_clock_frac
        return self.decode_clock_frac, self.decode_mem_clock_frac

    @classmethod
    def build(cls, acc: Accelerator, shape: ModelShape, params: HardwareParams,
              serving: ServingParams, scaleout_gbps: float, domain: int) -> Hardware:
        """Convert catalog units (TFLOPS, TB/s, GB, GB/s, Gb/s) into base units.

        Parameters
        ----------
        acc : Accelerator
            The accelerator (catalog ``accelerators``: TFLOPS, TB/s, GB, GB/s).
        shape : ModelShape
            The model at its serving precision (chooses the peak FLOP/s used).
        params : HardwareParams
            Efficiencies, latencies and overheads of the hardware.
        serving : ServingParams
            Serving parameters (usable share of HBM).
        scaleout_gbps : float
            Scale-out bandwidth per GPU [Gb/s].
        domain : int
            GPUs per scale-up domain [GPUs].

        Returns
        -------
        Hardware
            The accelerator in base units (FLOP/s, bytes/s, bytes).

        Raises
        ------
        ValueError
            If the accelerator has no dense throughput at the model's precision.
        """
        def peak(prec: str) -> float:
            tf = acc.dense_tflops(prec)
            if tf is None:  # e.g. fp8 attention on a part that only lists bf16
                tf = acc.bf16_dense_tflops
            return tf * 1e12

        if acc.dense_tflops(shape.precision) is None:
            raise ValueError(f"{acc.id} has no {shape.precision} dense throughput")
        return cls(
            gemm_flops=peak(shape.precision),
            other_flops=peak(shape.other_precision),
            attn_flops=peak(shape.attention_precision),
            hbm_bytes_per_s=acc.hbm_tb_per_s * 1e12,
            hbm_capacity=acc.hbm_gb * 1e9 * serving.hbm_usable_frac,
            scaleup_bytes_per_s=acc.scaleup_gb_per_s * 1e9,
            scaleout_bytes_per_s=scaleout_gbps * 1e9 / 8.0,
            domain=domain,
            params=params,
        )


def stack_params(params: list[HardwareParams]) -> HardwareParams:
    """One :class:`HardwareParams` whose fields are arrays over ``params``.

    Parameters
    ----------
    params : list of HardwareParams
        Parameters of several configurations.

    Returns
    -------
    HardwareParams
        Each field an array over ``params``, in their order.
    """
    return HardwareParams(**{f.name: np.array([getattr(p, f.name) for p in params], float)
                             for f in fields(HardwareParams)})


# --------------------------------------------------------------------- collectives


def allreduce_time(hw: Hardware, group, message_bytes, eff=None) -> np.ndarray:
    """Ring all-reduce of ``message_bytes`` per GPU over ``group`` GPUs [s].

    Inside one domain: ``2 (n-1)/n * M / link``. A group of ``n`` domains is reduced
    hierarchically: the in-domain ring plus ``2 (n-1)/n * (M/d) / scale-out`` for the
    share each GPU exchanges across domains. Plus one latency (in- or cross-domain).
    Zero for a group of one. ``eff`` replaces ``scaleup_eff_frac`` (MoE layers use
    ``moe_comm_eff_frac``).

    Parameters
    ----------
    hw : Hardware
        The accelerator in base units, with its parameters.
    group : int or array
        GPUs in the all-reduce [GPUs].
    message_bytes : float or array
        Message per GPU [bytes].
    eff : float or array, optional
        Share of the scale-up link bandwidth achieved [-] (default
        ``scaleup_eff_frac``).

    Returns
    -------
    ndarray
        All-reduce time [s].
    """
    n = np.asarray(group, dtype=float)
    m = np.asarray(message_bytes, dtype=float)
    p = hw.params
    d = np.minimum(n, hw.domain)
    nodes = np.ceil(n / hw.domain)
    up = hw.scaleup_bytes_per_s * (p.scaleup_eff_frac if eff is None else eff)
    out = hw.scaleout_bytes_per_s * p.scaleout_eff_frac
    t = 2.0 * (d - 1.0) / d * m / up + np.where(
        nodes > 1, 2.0 * (nodes - 1.0) / nodes * m / d / out + p.scaleout_latency_s,
        p.collective_latency_s)
    return np.where(n > 1, t, 0.0)


def moe_alltoall_time(hw: Hardware, group, tokens_per_gpu, experts_active: int,
                      bytes_per_token: float, eff=None, forward: bool = True) -> np.ndarray:
    """MoE dispatch + combine all-to-all over an expert-parallel ``group`` [s].

    Each of a GPU's ``tokens_per_gpu`` tokens goes to its ``k`` experts, spread evenly
    over the ``n`` GPUs; ``d = min(n, domain)`` of them share the scale-up domain.
    Copies for GPUs of the same domain move over scale-up: ``tokens k bytes (d - 1)/n``.
    Copies for other domains travel one of two ways, as DeepEP's two kernel families do:

    - ``forward=True`` (prefill's throughput kernels): a token crosses to another domain
      once per remote domain its experts fall in and is forwarded inside it, so
      scale-out carries ``tokens bytes r`` with ``r = (m - 1)(1 - (1 - 1/m)^k)`` the
      expected remote domains of ``m = n/d``, and the forwarding adds
      ``tokens k bytes (n - d)/n`` to scale-up;
    - ``forward=False`` (decode's low-latency kernels, pure RDMA): every remote copy goes
      straight to its GPU, ``tokens k bytes (n - d)/n`` over scale-out.

    Scale-up runs at ``eff`` (default ``moe_comm_eff_frac``) of the link, scale-out at
    ``scaleout_eff_frac``. ``bytes_per_token`` is the dispatch plus combine bytes of one
    token copy. Plus two latencies (``alltoall_latency_s``, or ``scaleout_latency_s``
    when crossing domains).

    Parameters
    ----------
    hw : Hardware
        The accelerator in base units, with its parameters.
    group : int or array
        GPUs in the expert-parallel group [GPUs].
    tokens_per_gpu : float or array
        Tokens a GPU dispatches [tokens].
    experts_active : int
        Routed experts per token [count].
    bytes_per_token : float
        Dispatch plus combine bytes of one token copy [bytes].
    eff : float or array, optional
        Share of the scale-up link bandwidth achieved [-] (default ``moe_comm_eff_frac``).
    forward : bool
        Cross domains once and forward inside (prefill's kernels), or send every remote
        copy straight (decode's).

    Returns
    -------
    ndarray
        Dispatch plus combine time [s].
    """
    n = np.asarray(group, dtype=float)
    t = np.asarray(tokens_per_gpu, dtype=float)
    p = hw.params
    d = np.minimum(n, hw.domain)
    m = np.maximum(n / hw.domain, 1.0)
    up = hw.scaleup_bytes_per_s * (p.moe_comm_eff_frac if eff is None else eff)
    out = hw.scaleout_bytes_per_s * p.scaleout_eff_frac
    k = float(experts_active)
    outside = np.maximum(n - hw.domain, 0.0)
    if forward:
        in_domain = t * k * bytes_per_token * ((d - 1.0) + outside) / n
        remote = t * bytes_per_token * (m - 1.0) * (1.0 - (1.0 - 1.0 / m) ** k)
    else:
        in_domain = t * k * bytes_per_token * (d - 1.0) / n
        remote = t * k * bytes_per_token * outside / n
    lat = np.where(n > hw.domain, np.maximum(p.alltoall_latency_s, p.scaleout_latency_s),
                   p.alltoall_latency_s)
    return np.where(n > 1, in_domain / up + remote / out + 2.0 * lat, 0.0)


def wide_ep_group(ep, domain, board_gpus):
    """Whether an expert-parallel group holds more than a board's GPUs of one domain.

    Such a group's decode all-to-all (with data-parallel attention) runs at
    ``wide_ep_comm_ratio`` times the board-fitted ``moe_comm_eff_frac``; a group that
    spans domains counts its GPUs inside one domain.

    Parameters
    ----------
    ep : int or array
        GPUs of the expert-parallel group [GPUs].
    domain : int
        GPUs of the scale-up domain [GPUs].
    board_gpus : int
        GPUs of one board (``serving.board_ep_gpus``) [GPUs].

    Returns
    -------
    bool or ndarray of bool
    """
    return np.minimum(ep, domain) > board_gpus


# ------------------------------------------------------------------- forward step


@dataclass(frozen=True)
class StepTime:
    """Per-GPU time of one forward step, split for bottleneck labels and power [s].

    ``compute_s`` and ``memory_s`` are the summed compute and memory times of the
    components; ``roof_s`` the sum of each component's larger one (what the step
    takes before communication and overheads); ``comm_s`` the communication left
    exposed: after ``comm_overlap_frac`` of it (at most the roof time) hides behind the
    roof or, with two-batch overlap, what the micro-batches' communication exceeds
    their roof. ``tbo`` says where two-batch overlap was the faster schedule.
    """

    compute_s: np.ndarray
    memory_s: np.ndarray
    roof_s: np.ndarray
    comm_s: np.ndarray
    overhead_s: np.ndarray
    tbo: np.ndarray | bool = False

    @property
    def total_s(self) -> np.ndarray:
        """Step time [s]."""
        return self.roof_s + self.comm_s + self.overhead_s


def _pass_times(hw: Hardware, par: Parallel, shape: ModelShape, phys: PhysicsParams,
                serving: ServingParams, T, Ta, kv, attended_per_token, prefill: bool,
                lf) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Compute, memory, roof and raw (not overlapped) communication time of one pass [s].

    ``T`` tokens in the instance, ``Ta`` on the busiest attention rank, ``kv`` KV-cache
    bytes that rank reads; weights are read once per pass.
    """
    p = hw.params
    clock, mem_clock = hw.clocks(prefill)
    bw = hw.hbm_bytes_per_s * mem_clock * p.hbm_eff_frac
    gemm_flops, other_flops, attn_flops = (hw.gemm_flops * clock, hw.other_flops * clock,
                                           hw.attn_flops * clock)
    g = np.asarray(par.gpus, dtype=float)
    t_a = np.asarray(par.attn_tp, dtype=float)
    ep = np.asarray(par.ep, dtype=float)
    gemm_eff = p.compute_eff_frac if prefill else p.decode_compute_eff_frac
    key_flops = shape.prefill_flops_per_key if prefill else shape.decode_flops_per_key

    # 1. attention projections (TP over attn_tp, replicated over DP ranks)
    c1 = Ta * 2.0 * shape.attention_params * lf / t_a / (other_flops * gemm_eff)
    m1 = shape.attention_params * lf * shape.other_bytes_per_param / t_a / bw
    # 2. attention core: heads split over attn_tp; MLA's latent KV is not
    kv_shard = 1.0 if shape.mla else np.minimum(t_a, shape.kv_heads)
    attn_eff = p.mla_attention_eff_frac if shape.mla else p.attention_eff_frac
    c2 = Ta * attended_per_token * lf * key_flops / t_a / (attn_flops * attn_eff)
    m2 = kv * lf / kv_shard / bw
    # 3. dense FFN, shared experts, head: run like attention, tensor-parallel over
    #    attn_tp inside each data-parallel rank on the rank's own tokens (SGLang
    #    moe-dense-tp-size 1 and DP LM head under DP attention; no DP: over all GPUs)
    c3 = Ta * 2.0 * shape.other_params * lf / t_a / (other_flops * gemm_eff)
    m3 = shape.other_params * lf * shape.other_bytes_per_param / t_a / bw
    compute = c1 + c2 + c3
    memory = m1 + m2 + m3
    roof = np.maximum(c1, m1) + np.maximum(c2, m2) + np.maximum(c3, m3)
    msg_rank = Ta * shape.hidden_size * serving.activation_bytes
    if shape.is_moe:
        e, k = float(shape.experts_total), float(shape.experts_active)
        hit_p = 1.0 - (1.0 - k / e) ** np.maximum(T, 1.0)
        hits = e / ep * hit_p                     # distinct local experts hit
        moe_tp = g / ep
        per_expert = T * k / e / hit_p            # tokens per expert hit
        lam = np.maximum(T * k / ep, 1e-9)        # token-expert pairs per EP rank
        imb = np.minimum(1.0 + phys.moe_imbalance_frac * (1.0 - 1.0 / ep)
                         + np.sqrt(2.0 * np.log(ep) / lam), ep)
        # the busiest EP rank reads the weights of its own distinct experts: per rank a
        # binomial count over its e/ep experts, the largest of ep ranks about
        # sqrt(2 ln ep) standard deviations above the mean (EP 1: every GPU reads a
        # slice of every expert hit, no spread)
        local = e / ep
        spread = np.sqrt(np.maximum(local * hit_p * (1.0 - hit_p), 0.0))
        hits_busy = np.minimum(hits + np.sqrt(2.0 * np.log(ep)) * spread, local)
        # grouped GEMMs at their own share of the phase's GEMM efficiency, at most the
        # GEMM bound
        moe_eff = np.minimum(gemm_eff * p.moe_gemm_eff_ratio, GEMM_EFF_MAX_FRAC)
        c4 = (2.0 * shape.expert_params * lf / moe_tp
              * (hits * per_expert * imb + hits_busy * phys.grouped_gemm_pad_tokens)
              / (gemm_flops * moe_eff))
        m4 = hits_busy * shape.expert_params * lf * shape.expert_bytes_per_param / moe_tp / bw
        c4, m4 = c4 * hw.moe_gemm_time_ratio, m4 * hw.moe_gemm_time_ratio
        compute = compute + c4
        memory = memory + m4
        roof = roof + np.maximum(c4, m4)
        # MoE layers: with data-parallel attention each rank holds its own tokens, so
        # they are dispatched to their experts and combined back by all-to-alls over EP
        # (prefill: the throughput kernels; decode: the low-latency kernels). With
        # tensor-parallel attention every GPU already holds every token: each runs its
        # own experts (EP) or expert slices (EP 1) and one all-reduce sums the outputs
        # (SGLang --ep-size without an all-to-all backend, TensorRT-LLM EP under TP
        # attention).
        per_token = shape.hidden_size * (serving.dispatch_bytes + serving.activation_bytes)
        # decode groups wider than a board inside one domain run the rack's all-to-all
        # (not the board's) at wide_ep_comm_ratio times the board-fitted share
        if prefill:
            a2a_eff = p.moe_prefill_comm_eff_frac
        else:
            wide = wide_ep_group(ep, hw.domain, serving.board_ep_gpus)
            a2a_eff = np.minimum(p.moe_comm_eff_frac * np.where(
                wide, phys.wide_ep_comm_ratio, 1.0), 1.0)
        a2a = (ep > 1) & (np.asarray(par.attn_dp, dtype=float) > 1)
        moe_comm = np.where(a2a, moe_alltoall_time(hw, ep, T / g * imb, shape.experts_active,
                                                      per_token, a2a_eff, forward=prefill),
                            allreduce_time(hw, g, T * shape.hidden_size
                                           * serving.activation_bytes, p.moe_comm_eff_frac))
        ar_rank = allreduce_time(hw, t_a, msg_rank)
        comm = shape.moe_layers * lf * (moe_comm + ar_rank)
        if shape.dense_layers:
            comm = comm + shape.dense_layers * lf * 2.0 * ar_rank
    else:
        # dense: attention and FFN all-reduces per layer over the TP group
        comm = shape.layers * lf * 2.0 * allreduce_time(hw, t_a, msg_rank)
    return compute, memory, roof, comm


def forward_step(hw: Hardware, par: Parallel, shape: ModelShape, phys: PhysicsParams,
                 serving: ServingParams, tokens, rank_tokens, attended_per_token,
                 kv_bytes_per_rank, phase: str = "decode", steps=1.0,
                 layers_frac=1.0) -> StepTime:
    """Time of one forward pass (or ``steps`` chunks of one) over ``tokens`` tokens.

    Communication is scheduled one of two ways, and the faster is taken (engines are
    configured for it):

    - **in line**: ``comm_overlap_frac`` of the communication (at most the roof time)
      hides behind the same pass's compute and memory time;
    - **two-batch overlap** (``serving.two_batch_overlap``, expert-parallel MoE only,
      at least two tokens on a rank): the pass is split into two micro-batches of half
      the tokens, and one's dispatch/combine runs while the other computes, so per
      layer the pass takes ``2 max(roof(T/2), comm(T/2))``. Each micro-batch reads the
      weights again, and each collective pays its latency twice: it helps when the
      communication is a large share of the step (wide-EP prefill), not at small decode
      batches.

    Parameters
    ----------
    hw, par, shape, phys, serving
        Hardware, parallel layout, model, physics and serving parameters.
    tokens : float or array
        Tokens entering the MoE/FFN layers of the instance in this pass [tokens].
    rank_tokens : float or array
        Tokens on the busiest attention data-parallel rank [tokens].
    attended_per_token : float or array
        Layer-summed key positions each query attends to (:meth:`ModelShape.attended`)
        [-].
    kv_bytes_per_rank : float or array
        KV-cache bytes the busiest attention rank reads (before TP sharding) [bytes].
    phase : {"decode", "prefill"}
        Decode uses ``decode_compute_eff_frac``, absorbed MLA attention and the
        low-latency all-to-all (``moe_comm_eff_frac``, times ``wide_ep_comm_ratio`` for
        groups wider than ``serving.board_ep_gpus`` inside one domain, at most 1);
        prefill ``compute_eff_frac``,
        the decompressed (per-head) attention and the throughput all-to-all
        (``moe_prefill_comm_eff_frac``).
    steps : float
        Weight reads and overheads are paid this many times (prefill chunks) [count].
    layers_frac : float
        Share of the layers run (1; a draft module uses a fraction) [-].

    Returns
    -------
    StepTime
        Per-GPU compute, memory, roof, exposed communication and overhead times [s].
    """
    p = hw.params
    n_steps = np.asarray(steps, dtype=float)
    # Work per chunk; weight reads, latencies and overheads are paid once per chunk.
    T = np.asarray(tokens, dtype=float) / n_steps
    Ta = np.asarray(rank_tokens, dtype=float) / n_steps
    kv = np.asarray(kv_bytes_per_rank, dtype=float) / n_steps
    prefill = phase == "prefill"
    args = (hw, par, shape, phys, serving)
    compute, memory, roof, comm_raw = _pass_times(*args, T, Ta, kv, attended_per_token,
                                                  prefill, layers_frac)
    # In line: part of the communication hides behind the pass's compute and memory time.
    comm = comm_raw - p.comm_overlap_frac * np.minimum(comm_raw, roof)
    tbo = np.zeros(np.shape(roof + comm), dtype=bool)
    if serving.two_batch_overlap and shape.is_moe:
        hc, hm, hr, hcomm = _pass_times(*args, T / 2.0, Ta / 2.0, kv / 2.0,
                                        attended_per_token, prefill, layers_frac)
        tbo_roof, tbo_comm = 2.0 * hr, 2.0 * np.maximum(hcomm - hr, 0.0)
        ep = np.asarray(par.ep, dtype=float)
        tbo = (ep > 1) & (Ta >= 2.0) & (tbo_roof + tbo_comm < roof + comm)
        compute = np.where(tbo, 2.0 * hc, compute)
        memory = np.where(tbo, 2.0 * hm, memory)
        roof = np.where(tbo, tbo_roof, roof)
        comm = np.where(tbo, tbo_comm, comm)
    overhead = p.step_overhead_s + shape.layers * layers_frac * p.layer_overhead_s
    z = 0.0 * roof
    return StepTime(n_steps * compute, n_steps * memory, n_steps * roof, n_steps * comm + z,
                    n_steps * overhead + z, tbo)


# ----------------------------------------------------------------------- memory


def weight_bytes_per_gpu(par: Parallel, shape: ModelShape) -> np.ndarray:
    """Weights one GPU of the instance holds [bytes].

    Attention projections and the other always-on weights (dense FFN, shared experts,
    head) are split over ``attn_tp`` and replicated over the DP ranks; the routed
    experts are spread over all GPUs of the instance.

    Parameters
    ----------
    par : Parallel
        The instance's parallel layout.
    shape : ModelShape
        The model at its serving precision.

    Returns
    -------
    ndarray
        Weight bytes per GPU [bytes].
    """
    g = np.asarray(par.gpus, dtype=float)
    t_a = np.asarray(par.attn_tp, dtype=float)
    return ((shape.attention_params + shape.other_params) * shape.other_bytes_per_param / t_a
            + shape.experts_total * shape.expert_params * shape.expert_bytes_per_param / g)


def kv_bytes_per_gpu(par: Parallel, shape: ModelShape, context_tokens) -> np.ndarray:
    """KV-cache bytes one sequence of ``context_tokens`` puts on each GPU of its rank.

    Parameters
    ----------
    par : Parallel
        The instance's parallel layout.
    shape : ModelShape
        The model at its serving precision.
    context_tokens : float or array
        Tokens a sequence holds: its prompt (input) plus the output tokens generated so far
        [tokens].

    Returns
    -------
    ndarray
        KV-cache bytes per GPU of the sequence's rank [bytes].
    """
    t_a = np.asarray(par.attn_tp, dtype=float)
    shard = 1.0 if shape.mla else np.minimum(t_a, shape.kv_heads)
    return shape.kv_bytes_seq(context_tokens) / shard


def kv_pool_bytes(hbm_bytes, usable_bytes, weight_bytes, share, share_of: str) -> np.ndarray:
    """KV-cache bytes per GPU an engine sets aside, by its memory setting [bytes].

    ``share_of`` ``hbm``: ``share`` of the whole memory holds the weights and the cache
    (SGLang ``--mem-fraction-static``, vLLM ``--gpu-memory-utilization``; the rest is
    the runtime's), so the cache gets ``share x HBM - weights``. ``free``: the cache
    takes ``share`` of the memory free once the model is loaded (TensorRT-LLM
    ``kv_cache_config.free_gpu_memory_fraction``), taken as what the weights leave of
    the usable memory (``serving.hbm_usable_frac`` of it, the same allowance for the
    runtime's buffers, activations and CUDA graphs as the default's):
    ``share x (usable - weights)``.

    Parameters
    ----------
    hbm_bytes : float or array
        The GPU's memory [bytes].
    usable_bytes : float or array
        Its usable memory (:attr:`Hardware.hbm_capacity`) [bytes].
    weight_bytes : float or array
        Weights per GPU (:func:`weight_bytes_per_gpu`) [bytes].
    share : float or array
        The engine's memory share [-] (0 < share <= 1).
    share_of : {"hbm", "free"}
        What the share is of.

    Returns
    -------
    ndarray
        KV-cache bytes per GPU, at least 0 [bytes].
    """
    hbm, usable, w, f = (np.asarray(x, dtype=float)
                         for x in (hbm_bytes, usable_bytes, weight_bytes, share))
    pool = f * hbm - w if share_of == "hbm" else f * (usable - w)
    return np.maximum(pool, 0.0)


def max_batch(hw: Hardware, par: Parallel, shape: ModelShape, serving: ServingParams,
              context_tokens, kv_pool=None) -> np.ndarray:
    """Most sequences of ``context_tokens`` the instance holds next to its weights [-].

    Each attention data-parallel rank holds the KV of its own sequences and the
    scheduler caps each rank at ``max_batch_per_rank`` (engines apply their batch limit
    per rank: TensorRT-LLM's ``max_batch_size``, SGLang's ``cuda-graph-bs`` under DP
    attention), so a DEP32 instance holds up to 32 times one rank's batch.

    Parameters
    ----------
    hw : Hardware
        The accelerator in base units, with its parameters.
    par : Parallel
        The instance's parallel layout.
    shape : ModelShape
        The model at its serving precision.
    serving : ServingParams
        Serving parameters (``max_batch_per_rank``).
    context_tokens : float or array
        Tokens a sequence holds a place for: its prompt (input) plus the output tokens
        generated so far, or its whole output where the engine reserves it at admission
        [tokens].
    kv_pool : float or array, optional
        KV-cache bytes per GPU the engine sets aside (:func:`kv_pool_bytes`); default:
        what the weights leave of ``hw.hbm_capacity`` (``serving.hbm_usable_frac`` of
        memory) [bytes].

    Returns
    -------
    ndarray
        Sequences the instance holds [sequences].
    """
    free = (hw.hbm_capacity - weight_bytes_per_gpu(par, shape) if kv_pool is None
            else np.asarray(kv_pool, dtype=float))
    per_seq = kv_bytes_per_gpu(par, shape, context_tokens)
    per_rank = np.floor(np.maximum(free, 0.0) / np.maximum(per_seq, 1e-30))
    return (np.minimum(per_rank, serving.max_batch_per_rank)
            * np.asarray(par.attn_dp, dtype=float))
