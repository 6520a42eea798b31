"""Roofline physics of one model replica inside one scale-up domain.

A *replica* is one copy of a model spread over ``g`` accelerators of one scale-up
(NVLink) domain with tensor/expert parallelism. Its step times come from three
ceilings: FLOPs against peak compute x efficiency, bytes against HBM bandwidth x
efficiency, and collectives against scale-up bandwidth, plus a fixed per-step
overhead. Every function is vectorised over the batch (numpy arrays welcome).

Units: seconds, bytes, FLOPs, tokens. Catalog units (GB, TB/s, TFLOPS, GB/s) are
converted in :meth:`Replica.build`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dcplan.perf.params import HardwareParams, ServingParams
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
    weight_bytes_per_param : float
        [bytes].
    kv_bytes_per_token_layer : float
        KV-cache bytes per token per (full-attention) layer [bytes].
    layers, full_layers, window_layers : int
        All layers, full-attention layers, sliding-window layers.
    window_tokens : float
        Sliding window [tokens] (inf when none).
    attn_width : float
        ``attention_heads * head_dim`` [-].
    hidden_size : int
    moe_layers : int
        Layers with a routed-expert FFN (0 for dense models).
    experts_total, experts_active : int
    expert_params : float
        Parameters of one routed expert summed over the MoE layers [-].
    """

    total_params: float
    active_params: float
    weight_bytes_per_param: float
    kv_bytes_per_token_layer: float
    layers: int
    full_layers: int
    window_layers: int
    window_tokens: float
    attn_width: float
    hidden_size: int
    moe_layers: int
    experts_total: int
    experts_active: int
    expert_params: float

    @classmethod
    def build(cls, model: LLM, precision: Precision | str, serving: ServingParams) -> ModelShape:
        """Derive the shape of ``model`` served at ``precision``."""
        precision = Precision(precision)
        kv_elem = serving.kv_bytes(precision.value)
        per_layer = (model.kv_latent_dim if model.kv_latent_dim else
                     2 * model.kv_heads * model.head_dim) * kv_elem
        window_layers = model.sliding_window_layers if model.sliding_window_tokens else 0
        if model.is_moe:
            e, k = model.experts_total, model.experts_active
            moe_layers = model.moe_layers or model.layers
            # One routed expert's parameters, from the catalog's total and active
            # counts: total - active = (E - k) experts' worth of parameters.
            expert = ((model.total_params_b - model.active_params_b) * 1e9 / (e - k)
                      if e > k else 0.0)
        else:
            e = k = moe_layers = 0
            expert = 0.0
        return cls(
            total_params=model.total_params_b * 1e9,
            active_params=model.active_params_b * 1e9,
            weight_bytes_per_param=BYTES_PER_ELEMENT[precision],
            kv_bytes_per_token_layer=float(per_layer),
            layers=model.layers,
            full_layers=model.layers - window_layers,
            window_layers=window_layers,
            window_tokens=float(model.sliding_window_tokens or np.inf),
            attn_width=float(model.attention_heads * model.head_dim),
            hidden_size=model.hidden_size,
            moe_layers=moe_layers,
            experts_total=e,
            experts_active=k,
            expert_params=expert,
        )

    @property
    def weight_bytes(self) -> float:
        """Bytes of all weights [bytes]."""
        return self.total_params * self.weight_bytes_per_param

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes one token adds while inside every layer's window [bytes]."""
        return self.kv_bytes_per_token_layer * self.layers

    def kv_bytes_seq(self, context_tokens) -> np.ndarray:
        """KV-cache bytes of one sequence holding ``context_tokens`` tokens [bytes]."""
        c = np.asarray(context_tokens, dtype=float)
        return self.kv_bytes_per_token_layer * (
            self.full_layers * c + self.window_layers * np.minimum(c, self.window_tokens))

    def attended(self, context_tokens) -> np.ndarray:
        """Layer-summed key positions one query attends to at ``context_tokens`` [-]."""
        c = np.asarray(context_tokens, dtype=float)
        return self.full_layers * c + self.window_layers * np.minimum(c, self.window_tokens)

    def decode_flops_per_token(self, context_tokens) -> np.ndarray:
        """FLOPs to generate one token at ``context_tokens`` of context [FLOP].

        ``2 * active_params`` for the matrix multiplies plus ``4 * heads * head_dim``
        per attended key position (QK^T and AV).
        """
        return 2.0 * self.active_params + 4.0 * self.attn_width * self.attended(context_tokens)

    def prefill_flops(self, new_tokens, cached_tokens) -> np.ndarray:
        """FLOPs to prefill ``new_tokens`` after ``cached_tokens`` of cached prefix [FLOP].

        Cached tokens skip the matrix multiplies; the new tokens attend to the prefix
        and causally to each other (``cached + new/2`` positions on average).
        """
        n = np.asarray(new_tokens, dtype=float)
        p = np.asarray(cached_tokens, dtype=float)
        mean_ctx = p + n / 2.0
        attended = self.full_layers * mean_ctx + self.window_layers * np.minimum(
            mean_ctx, self.window_tokens)
        return n * (2.0 * self.active_params + 4.0 * self.attn_width * attended)

    def weights_touched_bytes(self, tokens) -> np.ndarray:
        """Weight bytes read by one forward step over ``tokens`` tokens [bytes].

        Dense models read every weight. MoE models read the always-on weights plus
        the expected number of distinct routed experts hit (:func:`distinct_experts`).
        """
        tokens = np.asarray(tokens, dtype=float)
        if not self.experts_total:
            return np.full_like(tokens, self.weight_bytes, dtype=float)
        always_on = self.active_params - self.experts_active * self.expert_params
        hit = distinct_experts(self.experts_total, self.experts_active, np.maximum(tokens, 1.0))
        return (always_on + hit * self.expert_params) * self.weight_bytes_per_param


@dataclass(frozen=True)
class Replica:
    """One model copy on ``gpus`` accelerators of one scale-up domain, in base units.

    Attributes
    ----------
    gpus : int
        Accelerators in the replica [-].
    flops_per_s : float
        Effective prefill compute = gpus x dense peak x compute efficiency [FLOP/s].
    decode_flops_per_s : float
        Effective decode compute = gpus x dense peak x decode efficiency [FLOP/s].
    peak_flops_per_s : float
        Peak dense compute of the replica [FLOP/s].
    bytes_per_s : float
        Effective HBM bandwidth = gpus x peak x HBM efficiency [bytes/s].
    peak_bytes_per_s : float
        Peak HBM bandwidth of the replica [bytes/s].
    link_bytes_per_s : float
        Effective scale-up bandwidth per accelerator and direction [bytes/s].
    hbm_bytes : float
        HBM usable by weights + KV = gpus x capacity x usable share [bytes].
    shape : ModelShape
    params : HardwareParams
    serving : ServingParams
    """

    gpus: int
    flops_per_s: float
    decode_flops_per_s: float
    peak_flops_per_s: float
    bytes_per_s: float
    peak_bytes_per_s: float
    link_bytes_per_s: float
    hbm_bytes: float
    shape: ModelShape
    params: HardwareParams
    serving: ServingParams

    @classmethod
    def build(cls, acc: Accelerator, gpus: int, shape: ModelShape, precision: Precision | str,
              params: HardwareParams, serving: ServingParams) -> Replica:
        """Convert catalog units (TFLOPS, TB/s, GB, GB/s) into a replica in base units."""
        tflops = acc.dense_tflops(precision)
        if tflops is None:
            raise ValueError(f"{acc.id} has no {Precision(precision).value} dense throughput")
        peak_flops = gpus * tflops * 1e12
        peak_bw = gpus * acc.hbm_tb_per_s * 1e12
        return cls(
            gpus=gpus,
            flops_per_s=peak_flops * params.compute_eff_frac,
            decode_flops_per_s=peak_flops * params.decode_compute_eff_frac,
            peak_flops_per_s=peak_flops,
            bytes_per_s=peak_bw * params.hbm_eff_frac,
            peak_bytes_per_s=peak_bw,
            link_bytes_per_s=acc.scaleup_gb_per_s * 1e9 * params.scaleup_eff_frac,
            hbm_bytes=gpus * acc.hbm_gb * 1e9 * serving.hbm_usable_frac,
            shape=shape,
            params=params,
            serving=serving,
        )

    # ------------------------------------------------------------------ memory
    @property
    def kv_budget_bytes(self) -> float:
        """HBM left for the KV cache after the weights [bytes] (negative: no fit)."""
        return self.hbm_bytes - self.shape.weight_bytes

    def max_batch(self, context_tokens: float) -> int:
        """Most sequences of ``context_tokens`` whose KV fits next to the weights [-]."""
        per_seq = float(self.shape.kv_bytes_seq(context_tokens))
        if self.kv_budget_bytes <= 0 or per_seq <= 0:
            return 0
        return int(min(self.kv_budget_bytes // per_seq, self.serving.max_batch_per_replica))

    # --------------------------------------------------------- communication
    def comm_time(self, tokens) -> np.ndarray:
        """Scale-up collective time of one forward step over ``tokens`` tokens [s].

        Dense layers: two ring all-reduces of ``tokens x hidden`` activations, each
        moving ``2 (g-1)/g`` of the message per accelerator. MoE layers: one
        all-reduce (attention) plus expert dispatch and combine all-to-alls, each
        moving ``tokens/g x k x hidden x (g-1)/g`` per accelerator. Each collective
        also costs a fixed latency. Zero for a single accelerator.
        """
        tokens = np.asarray(tokens, dtype=float)
        g = self.gpus
        if g <= 1:
            return np.zeros_like(tokens)
        s = self.shape
        msg = tokens * s.hidden_size * self.serving.activation_bytes
        ring = 2.0 * (g - 1) / g * msg
        dense_layers = s.layers - s.moe_layers
        a2a = msg / g * max(s.experts_active, 1) * (g - 1) / g
        volume = dense_layers * 2 * ring + s.moe_layers * (ring + 2 * a2a)
        count = dense_layers * 2 + s.moe_layers * 3
        return volume / self.link_bytes_per_s + count * self.params.collective_latency_s

    # ---------------------------------------------------------------- decode
    def decode_parts(self, batch, context_tokens):
        """Compute, memory and communication times of one decode step [s].

        Parameters
        ----------
        batch : float or array
            Sequences decoded together ``B`` [-].
        context_tokens : float
            Mean tokens in each sequence's KV cache [tokens].

        Returns
        -------
        compute_s, memory_s, comm_s : ndarray
            ``B * flops_per_token / C_decode``; ``(weights touched + B * KV per
            sequence) / BW_eff``; collective time [s].
        """
        b = np.asarray(batch, dtype=float)
        s = self.shape
        flops = b * s.decode_flops_per_token(context_tokens)
        mem = s.weights_touched_bytes(b) + b * s.kv_bytes_seq(context_tokens)
        return flops / self.decode_flops_per_s, mem / self.bytes_per_s, self.comm_time(b)

    def decode_step_time(self, batch, context_tokens) -> np.ndarray:
        """Time of one decode step = max(compute, memory) + comm + overhead [s]."""
        c, m, x = self.decode_parts(batch, context_tokens)
        return np.maximum(c, m) + x + self.params.step_overhead_s

    # --------------------------------------------------------------- prefill
    def prefill_parts(self, prompt_tokens, cached_tokens=0.0, sequences=1.0, batched=True):
        """Compute, memory, communication and overhead times to prefill [s].

        Parameters
        ----------
        prompt_tokens : float or array
            Prompt tokens per sequence, cached prefix included [tokens].
        cached_tokens : float or array
            Prefix tokens per sequence served from the prefix cache [tokens].
        sequences : float
            Sequences prefilled together [-].
        batched : bool
            True: the chunk is shared with other requests, so weight reads, per-step
            overhead and collective latency are charged pro rata to the new tokens
            (throughput view). False: this request alone; at least one full step
            (latency view).

        Returns
        -------
        compute_s, memory_s, comm_s, overhead_s : ndarray
        """
        s = self.shape
        prompt = np.asarray(prompt_tokens, dtype=float)
        cached = np.asarray(cached_tokens, dtype=float)
        new = np.maximum(prompt - cached, 0.0)
        n_all = sequences * new
        chunks = n_all / self.serving.prefill_chunk_tokens
        if not batched:
            chunks = np.maximum(chunks, 1.0)
        flops = sequences * s.prefill_flops(new, cached)
        # KV of the cached prefix is read and KV of the new tokens written:
        # together the whole prompt's KV once.
        kv = sequences * s.kv_bytes_seq(prompt)
        weights = s.weights_touched_bytes(self.serving.prefill_chunk_tokens) * chunks
        mem = kv + weights
        tokens_per_chunk = np.where(chunks > 0, n_all / np.maximum(chunks, 1e-12), 0.0)
        comm = chunks * self.comm_time(tokens_per_chunk)
        overhead = chunks * self.params.step_overhead_s
        return flops / self.flops_per_s, mem / self.bytes_per_s, comm, overhead

    def prefill_time(self, prompt_tokens, cached_tokens=0.0, sequences=1.0,
                     batched=True) -> np.ndarray:
        """Prefill time = max(compute, memory) + comm + overhead [s] (see prefill_parts)."""
        c, m, x, o = self.prefill_parts(prompt_tokens, cached_tokens, sequences, batched)
        return np.maximum(c, m) + x + o
