"""The model's prediction for each measurement row, at that row's own configuration.

Serving rows (one benchmark run: hardware, precision, parallel layout, concurrency,
speculative decoding, aggregated or disaggregated) are predicted as a closed loop at
the row's concurrency (:func:`dcplan.perf.serving.solve_closed_loop`), vectorised over
all rows: :class:`ServingRows` prepares the fixed arrays once, so a calibration can
re-predict every row thousands of times.

* Aggregated rows: the row's figures behave like **one instance** at that
  concurrency (InferenceX reports its per-GPU throughput, TPOT and TTFT so that
  Little's law holds per instance of ``max(tp, ep)`` GPUs), so one instance is
  predicted.
* Disaggregated rows: ``prefill_gpus / max(prefill_tp, prefill_ep)`` prefill instances
  and ``decode_gpus / max(decode_tp, decode_ep)`` decode instances share the
  concurrency; per-GPU figures divide by all GPUs. An expert-parallel prefill pool runs
  DP attention (:func:`dcplan.perf.measurements.prefill_dp_attention`) unless the row's
  file or its recipe (``measurements/serving_recipes.yaml``) says otherwise.
* Lengths: the benchmark draws each request between 80% and 100% of the nominal
  lengths; rows are predicted at the mean, ``measurement_length_frac`` (0.9) of them,
  with the distribution (latency percentiles, prefill service spread) and the opening
  burst of ``measurements/length_distributions.yaml``; MLPerf rows take their
  dataset's distribution from the same file.
* ``mtp`` rows: the draft length the row's recipe set (``mtp_draft_tokens`` in
  ``measurements/serving_recipes.yaml``), else the one of ``serving.mtp_draft_tokens``
  that gives the most throughput at the row's concurrency, as a tuned deployment would
  pick.
* Power is compared at the row's **measured** throughput: a row that measured its
  throughput gets the power curve with its compute and HBM busy shares scaled by
  ``min(1, measured / predicted)`` throughput (:func:`measured_busy_scale`), so a
  throughput error does not leak into the power residual. A run slower than the model
  is idle part of the time; a run faster than the model is taken as fully busy at the
  model's shares (the scale is capped at 1: the model's step cannot run busier). The
  power at the model's own operating point is kept as ``power_w_model_point``. Rows
  held to a power cap (MaxQ) keep the model-point power, capped: their throughput
  deficit is clock throttling, not idle time.

A row the model cannot express (weights or one sequence's KV do not fit the row's
instance) is flagged with the reason and gets no prediction.

Phase-level rows (MLPerf) are predicted one by one: prefill ``B c / t``, decode
``B / t_token``, end-to-end Offline rows at their batch, Server rows at the best batch
(up to the row's) whose 99th-percentile TTFT and TPOT under Poisson arrivals meet the
limits; when none does the row is flagged, not replaced by batch 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from dcplan.catalog import Catalog
from dcplan.perf.benchmarks import BenchmarkLengths
from dcplan.perf.measurements import (
    Measurement,
    ServingMeasurement,
    row_domain,
    scaleup_domain,
)
from dcplan.perf.params import (
    HW_PARAM_NAMES,
    PHYSICS_NAMES,
    HardwareParams,
    PerfDefaults,
    PhysicsParams,
)
from dcplan.perf.power import activity
from dcplan.perf.recipes import Recipes
from dcplan.perf.roofline import (
    Hardware,
    ModelShape,
    Parallel,
    forward_step,
    kv_pool_bytes,
    max_batch,
    weight_bytes_per_gpu,
)
from dcplan.perf.serving import (
    Instance,
    Point,
    Traffic,
    aggregated,
    decode,
    disaggregated,
    handover_streams,
    prefill,
    solve_closed_loop,
    take_point,
    with_admission,
)


@dataclass(frozen=True)
class RowPrediction:
    """Predicted figures of one measurement row (None where not predicted).

    Attributes
    ----------
    output_tokens_per_s_per_gpu : float or None
        Serving rows: generated tokens/s per GPU of the deployment [tokens/s].
    tokens_per_s : float or None
        Phase rows: replica tokens/s in the row's own unit [tokens/s].
    median_tpot_ms, p99_tpot_ms : float or None
        [ms].
    median_ttft_s, p99_ttft_s : float or None
        [s].
    power_w : float or None
        Serving rows: per GPU; phase rows: the replica's accelerators [W]. At the row's
        measured throughput where it has one (busy shares scaled by
        :func:`measured_busy_scale`), else at the model's operating point.
    power_w_model_point : float or None
        The same power at the model's own (predicted) operating point [W].
    configuration : str
        Parallel layout as predicted (``DEP8``, ``TP8 EP8``, ``prefill 1 x TP8 / decode
        3 x DEP16``), with the draft length for speculative rows.
    flag : str
        Why the row could not be predicted ('' when it was).
    notes : str
        Remarks (groups that span scale-up domains).
    batch : float
        Decode batch per (decode) instance at the prediction [sequences].
    """

    output_tokens_per_s_per_gpu: float | None = None
    tokens_per_s: float | None = None
    median_tpot_ms: float | None = None
    p99_tpot_ms: float | None = None
    median_ttft_s: float | None = None
    p99_ttft_s: float | None = None
    power_w: float | None = None
    power_w_model_point: float | None = None
    configuration: str = ""
    flag: str = ""
    notes: str = ""
    batch: float = 0.0


def measured_busy_scale(measured, predicted) -> np.ndarray:
    """Scale of the busy shares at a row's measured throughput.

    ``min(1, measured / predicted)`` throughput: a run slower than the model is idle the
    rest of the time; a run faster than the model is capped at fully busy (the model's
    shares). 1 where nothing was measured (``measured`` None, NaN or not positive) or
    nothing predicted.

    Parameters
    ----------
    measured, predicted : float or array
        Throughput in the same unit [tokens/s].

    Returns
    -------
    ndarray
        ``min(1, measured / predicted)`` [0..1]; 1 where either is missing.
    """
    meas = np.asarray(np.nan if measured is None else measured, dtype=float)
    pred = np.asarray(predicted, dtype=float)
    good = np.isfinite(meas) & (meas > 0) & np.isfinite(pred) & (pred > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(good, meas / np.where(good, pred, 1.0), 1.0)
    return np.minimum(ratio, 1.0)


def hardware_params(defaults: PerfDefaults, accelerator_id: str, calibration,
                    vendor: str | None = None, architecture: str | None = None
                    ) -> HardwareParams:
    """Parameters of ``accelerator_id`` (of ``vendor`` and ``architecture``).

    The defaults, then the calibration's default, vendor, architecture and accelerator
    values.

    Parameters
    ----------
    defaults : PerfDefaults
        The a-priori parameters (``perf_defaults.yaml``; each in the unit of
        ``perf/parameters.csv``).
    accelerator_id : str
        Accelerator id of the catalog [-].
    calibration : Calibration or None
        Fitted values (None or falsy: the defaults alone).
    vendor, architecture : str, optional
        The accelerator's vendor and the architecture whose calibrated values it takes
        (:func:`calibration_architecture`) [-].

    Returns
    -------
    HardwareParams
        Efficiencies [0..1], overheads [s] and power-curve weights [-] of the
        accelerator.
    """
    base = defaults.for_hardware(accelerator_id)
    return (calibration.apply(base, accelerator_id, vendor, architecture) if calibration
            else base)


def calibration_architecture(acc, calibration) -> str | None:
    """Architecture whose calibrated values ``acc`` takes.

    Its own ``architecture`` when the calibration fitted it (or there is no
    calibration), else its ``calibrate_like`` architecture if the calibration fitted
    that one, else its own (then the vendor's values apply).

    Parameters
    ----------
    acc : Accelerator
        Supplies ``architecture`` and ``calibrate_like`` (names [-]).
    calibration : Calibration or None
        Its ``architecture`` level lists the fitted architectures.

    Returns
    -------
    str or None
        Architecture name [-] (None when the accelerator names none).
    """
    arch = getattr(acc, "architecture", None)
    like = getattr(acc, "calibrate_like", None)
    if not calibration or not like:
        return arch
    fitted = dict(getattr(calibration, "architecture", None) or ())
    return like if arch not in fitted and like in fitted else arch


def physics_params(defaults: PerfDefaults, calibration) -> PhysicsParams:
    """Physics parameters: defaults, then calibration overrides.

    Parameters
    ----------
    defaults : PerfDefaults
        Supplies ``physics`` (each in the unit of ``perf/parameters.csv``).
    calibration : Calibration or None
        Fitted physics values (None or falsy: the defaults alone).

    Returns
    -------
    PhysicsParams
        Acceptance, draft cost and imbalance shares [0..1], dispersion [-].
    """
    return calibration.apply_physics(defaults.physics) if calibration else defaults.physics


def scaleout_gbps(catalog: Catalog, accelerator_id: str, fallback: float) -> float:
    """Scale-out bandwidth per GPU of the accelerator's racks (the largest).

    Parameters
    ----------
    catalog : Catalog
        Its racks supply ``scaleout_gbps_per_accelerator`` [Gb/s].
    accelerator_id : str
        Accelerator id [-].
    fallback : float
        Bandwidth when no rack holds the accelerator [Gb/s].

    Returns
    -------
    float
        Scale-out bandwidth per accelerator [Gb/s].
    """
    vals = [r.scaleout_gbps_per_accelerator for r in catalog.entries.get("racks", {}).values()
            if r.accelerator == accelerator_id]
    return max(vals) if vals else fallback


def _given_or(value, default):
    """``value`` unless it is None, else ``default``."""
    return default if value is None else value


def _take(obj, idx):
    """Index every array field of a dataclass (scalars stay)."""
    out = {}
    for k, v in obj.__dict__.items():
        out[k] = v[idx] if isinstance(v, np.ndarray) and v.ndim else v
    return type(obj)(**out)


def _stack_hw(hws: Sequence[Hardware]) -> Hardware:
    keys = ("gemm_flops", "other_flops", "attn_flops", "hbm_bytes_per_s", "hbm_capacity",
            "scaleup_bytes_per_s", "scaleout_bytes_per_s", "domain")
    return Hardware(**{k: np.array([getattr(h, k) for h in hws], float) for k in keys},
                    params=hws[0].params)


def _stack_shapes(shapes: Sequence[ModelShape]) -> ModelShape:
    """One shape of one model whose precision-dependent fields are arrays over rows."""
    first = shapes[0]
    return replace(first, **{k: np.array([getattr(s, k) for s in shapes], float) for k in (
        "expert_bytes_per_param", "other_bytes_per_param", "kv_bytes_per_token_layer")})


def _layout_label(par_p: Parallel | None, n_p, par_d: Parallel, n_d, moe: bool) -> str:
    if par_p is None:
        return par_d.label(moe)
    return (f"prefill {int(n_p)} x {par_p.label(moe)} / decode {int(n_d)} x "
            f"{par_d.label(moe)}")


class ServingRows:
    """Serving rows prepared for repeated vectorised prediction.

    Parameters
    ----------
    rows : sequence of ServingMeasurement
        The rows (lengths [tokens], concurrency [count], measured figures).
    catalog : Catalog
        With every model and accelerator the rows name (powers [W], bandwidths).
    defaults : PerfDefaults
        For the serving assumptions (not for fitted parameters, given at predict time).
    lengths : BenchmarkLengths
        Request-length distribution and opening burst of the rows' benchmark
        (:attr:`dcplan.perf.benchmarks.Benchmarks.lengths`).
    recipes : Recipes
        Admission settings of the rows' engine recipes, and the prefill pools' DP
        attention where the rows do not give it
        (:attr:`dcplan.perf.benchmarks.Benchmarks.recipes`).
    """

    def __init__(self, rows: Sequence[ServingMeasurement], catalog: Catalog,
                 defaults: PerfDefaults, lengths: BenchmarkLengths, recipes: Recipes):
        self.rows = list(rows)
        self.catalog = catalog
        self.serving = defaults.serving
        self.n = len(self.rows)
        self.flags = [""] * self.n
        self.notes = [""] * self.n
        self.configs = [""] * self.n
        self.hardware = [m.hardware for m in self.rows]
        sv = self.serving
        frac = sv.measurement_length_frac
        self.lengths = lengths
        keys = [dict(framework=m.framework, hardware=m.hardware, precision=m.precision.value,
                     speculative=m.speculative, dp_attention=bool(m.decode_dp_attention),
                     decode_tp=m.decode_tp, input_tokens=m.input_tokens,
                     output_tokens=m.output_tokens, concurrency=m.concurrency,
                     prefill_ep=m.prefill_ep if m.disaggregated else 1, date=m.date)
                for m in self.rows]
        self.admission = [recipes.admission(**k) for k in keys]
        self.memory = [recipes.memory(**k) for k in keys]
        # rows whose recipe runs the MoE's grouped GEMMs on DeepGEMM
        self.deepgemm = np.array([recipes.moe_library(**k) == "deepgemm" for k in keys],
                                 dtype=bool)
        # tokens an MTP row's recipe drafts per step (0: not given, the fastest is taken)
        self.drafts = np.array([(recipes.mtp_draft_tokens(**k) or 0)
                                if m.speculative == "mtp" else 0
                                for m, k in zip(self.rows, keys, strict=True)], dtype=int)
        # the prefill pool's DP attention: the row's own column, else its recipe, else
        # the rule (measurements.prefill_dp_attention)
        self.prefill_dpa = [
            m.prefill_dp_attention if (m.prefill_dp_attention_given is not None
                                       or not m.disaggregated)
            else _given_or(recipes.prefill_dp_attention(**k), m.prefill_dp_attention)
            for m, k in zip(self.rows, keys, strict=True)]
        for i, m in enumerate(self.rows):
            heads = catalog.get("models", m.model).attention_heads
            if m.disaggregated and not self.prefill_dpa[i] and heads % m.prefill_tp:
                # only a recipe can get here: the loader refuses such a row's own column
                self.flags[i] = (f"its recipe runs the prefill pool's attention at TP "
                                 f"{m.prefill_tp}, which does not split the {heads} heads of "
                                 f"{m.model} (prefill_dp_attention in serving_recipes.yaml)")
        # group by (model, disaggregated); precisions and speculation vary inside a group
        groups: dict[tuple, list[int]] = {}
        self._shapes: dict[tuple, ModelShape] = {}
        for i, m in enumerate(self.rows):
            key = (m.model, m.disaggregated)
            groups.setdefault(key, []).append(i)
            sk = (m.model, m.precision.value)
            if sk not in self._shapes:
                self._shapes[sk] = ModelShape.build(catalog.get("models", m.model), m.precision,
                                                    sv)
        self.groups = []
        for key, idx in groups.items():
            shapes = [self._shapes[(self.rows[i].model, self.rows[i].precision.value)]
                      for i in idx]
            shape = _stack_shapes(shapes)
            hws, pars_d, pars_p, n_p, n_d = [], [], [], [], []
            for i, shp in zip(idx, shapes, strict=True):
                m = self.rows[i]
                acc = catalog.get("accelerators", m.hardware)
                domain = row_domain(m, catalog)
                hws.append(Hardware.build(acc, shp, defaults.for_hardware(m.hardware), sv,
                                          scaleout_gbps(catalog, m.hardware,
                                                        sv.measurement_scaleout_gbps), domain))
                pd = Parallel.from_engine(m.decode_tp, m.decode_ep, m.decode_dp_attention)
                pars_d.append(pd)
                if m.disaggregated:
                    pp = Parallel.from_engine(m.prefill_tp, m.prefill_ep, self.prefill_dpa[i])
                    pars_p.append(pp)
                    n_p.append(m.prefill_gpus // pp.gpus)
                    n_d.append(m.decode_gpus // pd.gpus)
                else:
                    pp = None
                self.configs[i] = _layout_label(pp, n_p[-1] if pp else 0, pd,
                                                n_d[-1] if pp else 0, shape.is_moe)
                spans = [f"{lab} spans {int(np.ceil(g / domain))} scale-up domains of {domain}"
                         for lab, g in (("decode TP", m.decode_tp), ("decode EP", m.decode_ep),
                                        ("prefill TP", m.prefill_tp), ("prefill EP", m.prefill_ep))
                         if g > domain]
                self.notes[i] = "; ".join(spans) + ("; its collectives cross the scale-out "
                                                    "network" if spans else "")
            hw = _stack_hw(hws)
            par_d = Parallel(*(np.array([getattr(p, f) for p in pars_d], float)
                               for f in ("attn_tp", "attn_dp", "ep")))
            par_p = (Parallel(*(np.array([getattr(p, f) for p in pars_p], float)
                                for f in ("attn_tp", "attn_dp", "ep"))) if pars_p else None)
            rows = [self.rows[i] for i in idx]
            traffic = Traffic(np.array([m.input_tokens for m in rows]) * frac,
                              np.array([m.output_tokens for m in rows]) * frac, 0.0, 1.0,
                              self.lengths.serving_rows, self.lengths.burst_share)
            conc = np.array([m.concurrency for m in rows], float)
            # fit check: weights and one sequence's KV on the decode (and prefill) instance
            bmax = max_batch(hw, par_d, shape, sv, traffic.decode_context)
            ok = bmax >= 1
            for j, i in enumerate(idx):
                if not ok[j] and not self.flags[i]:
                    w = float(weight_bytes_per_gpu(_take(par_d, j), shapes[j])) / 1e9
                    self.flags[i] = (f"{rows[j].model} at {rows[j].precision.value} needs "
                                     f"{w:,.0f} GB of weights per GPU with "
                                     f"{self.configs[i]} but {rows[j].hardware} has "
                                     f"{hws[j].hbm_capacity / 1e9:,.0f} GB usable (with the KV "
                                     "of one sequence): the model cannot hold this row")
            if par_p is not None:
                wp = weight_bytes_per_gpu(par_p, shape)
                okp = wp < hw.hbm_capacity
                for j, i in enumerate(idx):
                    if not okp[j] and not self.flags[i]:
                        self.flags[i] = (f"the prefill instance {par_p.label()} cannot hold "
                                         f"the weights ({float(wp[j]) / 1e9:,.0f} GB per GPU)")
                ok = ok & okp
            ok = ok & np.array([not self.flags[i] for i in idx])
            bmax = self._recipe_kv_batch(idx, rows, hw, par_d, shape, traffic, bmax)
            sel = np.flatnonzero(ok)
            self.groups.append(dict(
                key=key, idx=np.array(idx)[sel], shape=_take(shape, sel), hw=_take(hw, sel),
                spec=np.array([self.rows[i].speculative for i in np.array(idx)[sel]]),
                par_d=_take(par_d, sel), par_p=_take(par_p, sel) if par_p else None,
                n_p=np.array(n_p, float)[sel] if pars_p else None,
                n_d=np.array(n_d, float)[sel] if pars_p else None,
                traffic=_take(traffic, sel), conc=conc[sel], bmax=bmax[sel],
                idle_w=np.array([catalog.get("accelerators", self.rows[i].hardware).idle_power_w
                                 for i in np.array(idx)[sel]]),
                max_w=np.array([catalog.get("accelerators", self.rows[i].hardware).max_power_w
                                for i in np.array(idx)[sel]]),
                meas_tput=np.array([np.nan if self.rows[i].output_tokens_per_s_per_gpu is None
                                    else self.rows[i].output_tokens_per_s_per_gpu
                                    for i in np.array(idx)[sel]], float),
                hw_ids=[self.rows[i].hardware for i in np.array(idx)[sel]],
                poll=np.array([self.admission[i].poll_interval_steps
                               for i in np.array(idx)[sel]], float),
                balance=np.array([self.admission[i].dp_balance_timeout_steps
                                  for i in np.array(idx)[sel]], float),
                max_running=np.array([self.admission[i].max_running_requests or np.inf
                                      for i in np.array(idx)[sel]], float),
                deepgemm=self.deepgemm[np.array(idx, int)[sel]],
                drafts=self.drafts[np.array(idx, int)[sel]],
                handover_per_rank=np.array([defaults.software.handover_per_rank(
                    self.rows[i].framework or "") for i in np.array(idx)[sel]], bool),
            ))

    def _recipe_kv_batch(self, idx, rows, hw, par_d, shape, traffic, bmax) -> np.ndarray:
        """``bmax`` with each row whose recipe sizes the KV cache held to that cache.

        The recipe's memory setting (:class:`dcplan.perf.recipes.KvMemory`) gives the
        cache (:func:`~dcplan.perf.roofline.kv_pool_bytes` of the accelerator's memory)
        and what each request holds a place for: its whole length (prompt plus
        output) when the engine reserves it at admission, else its mean context. The
        decode instance then holds at most that many sequences (at least one); the rest
        of the requests in flight wait for a slot. The row's notes say how many.
        """
        mem = [self.memory[i] for i in idx]
        if not any(mem):
            return bmax
        out = np.array(bmax, dtype=float)
        for j, (i, k) in enumerate(zip(idx, mem, strict=True)):
            if k is None or self.flags[i]:
                continue
            m = rows[j]
            par = _take(par_d, [j])
            shp = _take(shape, [j])
            hbm = self.catalog.get("accelerators", m.hardware).hbm_gb * 1e9
            hw_j = _take(hw, [j])
            pool = kv_pool_bytes(hbm, hw_j.hbm_capacity, weight_bytes_per_gpu(par, shp),
                                 k.share, k.share_of)
            tr = _take(traffic, [j])
            held = (np.asarray(tr.input_tokens, float) + np.asarray(tr.output_tokens, float)
                    if k.reserve == "full" else tr.decode_context)
            cap = float(np.maximum(max_batch(hw_j, par, shp, self.serving, held,
                                             kv_pool=pool), 1.0)[0])
            out[j] = cap
            of = "of its memory" if k.share_of == "hbm" else "of what the weights leave"
            what = ("each request reserving its whole length" if k.reserve == "full"
                    else "each holding its tokens so far")
            note = (f"its recipe's KV cache ({k.share:g} {of}, {what}) holds "
                    f"{cap:,.0f} sequence{'s' * (cap != 1)} per decode instance")
            self.notes[i] = "; ".join(x for x in (self.notes[i], note) if x)
        return out

    def row_params(self, params: Mapping[str, HardwareParams]) -> HardwareParams:
        """Per-row parameter arrays from accelerator id -> parameters.

        Parameters
        ----------
        params : mapping of str to HardwareParams
            Accelerator id [-] -> its parameters (units of ``perf/parameters.csv``).

        Returns
        -------
        HardwareParams
            Every field an array over the rows, shape ``(n,)`` (same units).
        """
        return HardwareParams(**{
            f: np.array([getattr(params[h], f) for h in self.hardware], float)
            for f in HW_PARAM_NAMES})

    def predict(self, params: Mapping[str, HardwareParams] | HardwareParams,
                physics: PhysicsParams, percentiles: tuple[float, ...] = (50.0, 99.0)
                ) -> dict[str, np.ndarray]:
        """Predict every row, for one or many parameter sets at once.

        Parameters
        ----------
        params : mapping or HardwareParams
            Accelerator id -> :class:`HardwareParams`; or one :class:`HardwareParams`
            whose fields are arrays over the rows (shape ``(n,)``) or over ``K``
            parameter sets and the rows (shape ``(K, n)``) (units of
            ``perf/parameters.csv``).
        physics : PhysicsParams
            Fields scalars, or arrays of shape ``(K,)`` (one per parameter set).
        percentiles : tuple of float
            Latency percentiles [%] (the median and p99 are reported).

        Returns
        -------
        dict of ndarray
            One value per row, NaN where flagged; shape ``(K, n)`` when ``params`` or
            ``physics`` carry ``K`` sets, else ``(n,)``:
            ``output_tokens_per_s_per_gpu`` [tokens/s], ``median_tpot_ms``,
            ``p99_tpot_ms`` [ms], ``median_ttft_s``, ``p99_ttft_s`` [s],
            ``power_w_per_gpu`` (at the row's measured throughput where it has one) [W],
            ``power_w_per_gpu_model_point`` (at the model's operating point) [W],
            ``batch`` [sequences], ``draft_tokens`` [tokens].
        """
        rp = self.row_params(params) if isinstance(params, Mapping) else params
        fields_rp = {f: np.asarray(getattr(rp, f), float) for f in HW_PARAM_NAMES}
        fields_ph = {f: np.asarray(getattr(physics, f), float) for f in PHYSICS_NAMES}
        many = (any(v.ndim == 2 for v in fields_rp.values())
                or any(v.ndim == 1 for v in fields_ph.values()))
        k_sets = max([v.shape[0] for v in fields_rp.values() if v.ndim == 2]
                     + [v.shape[0] for v in fields_ph.values() if v.ndim == 1] + [1])
        fields_rp = {f: np.broadcast_to(v if v.ndim == 2 else np.reshape(v, (1, -1)),
                                        (k_sets, self.n)) for f, v in fields_rp.items()}
        keys = ("output_tokens_per_s_per_gpu", "median_tpot_ms", "p99_tpot_ms",
                "median_ttft_s", "p99_ttft_s", "power_w_per_gpu", "power_w_per_gpu_model_point",
                "batch", "draft_tokens")
        out = {k: np.full((k_sets, self.n), np.nan) for k in keys}
        sv = self.serving
        for grp in self.groups:
            if not len(grp["idx"]):
                continue
            spec = grp["spec"]
            nrow = len(spec)
            # Expand each row into its draft-length candidates (one for no speculation,
            # one where its recipe sets the MTP draft length), then every candidate into
            # the K parameter sets.
            cand_row, cand_n = [], []
            for j, (sp, fixed) in enumerate(zip(spec, grp["drafts"], strict=True)):
                for n in ((int(fixed),) if fixed else sv.mtp_draft_tokens if sp == "mtp" else
                          sv.draft_tokens if sp == "draft" else (0,)):
                    cand_row.append(j)
                    cand_n.append(float(n))
            n_c = len(cand_row)
            kk = np.repeat(np.arange(k_sets), n_c)
            ix = np.tile(np.array(cand_row), k_sets)
            n = np.tile(np.array(cand_n), k_sets)
            glob = grp["idx"][ix]
            hp = HardwareParams(**{f: v[kk, glob] for f, v in fields_rp.items()})
            ph = PhysicsParams(**{f: (v[kk] if v.ndim else float(v))
                                  for f, v in fields_ph.items()})
            hw = replace(_take(grp["hw"], ix), params=hp,
                         moe_gemm_time_ratio=np.where(grp["deepgemm"][ix],
                                                      ph.deepgemm_moe_time_ratio, 1.0))
            is_mtp = spec[ix] == "mtp"
            acc = np.where(is_mtp, ph.mtp_acceptance_frac, ph.draft_acceptance_frac)
            cost = np.where(is_mtp, ph.mtp_draft_cost_frac, ph.draft_cost_frac)
            tr = replace(_take(grp["traffic"], ix), arrival_cv2=ph.closed_loop_arrival_cv2)
            shape = _take(grp["shape"], ix)
            par_d = _take(grp["par_d"], ix)
            conc = grp["conc"][ix]
            inst_d = Instance(hw, par_d, shape, ph, sv, n, acc, cost)
            poll, balance = grp["poll"][ix], grp["balance"][ix]
            dp = np.asarray(par_d.attn_dp, float)
            if grp["par_p"] is None:
                pre = prefill(inst_d, tr)

                def pob(b, inst_d=inst_d, pre=pre, tr=tr, poll=poll, balance=balance, dp=dp):
                    pt = aggregated(inst_d, tr, b, pre)
                    return with_admission(pt, poll, balance, dp), b
                n_dec = 1.0
            else:
                par_p = _take(grp["par_p"], ix)
                inst_p = Instance(hw, par_p, shape, ph, sv, handover_streams=handover_streams(
                    par_p, grp["handover_per_rank"][ix]))
                pre = prefill(inst_p, tr)
                n_p, n_dec = grp["n_p"][ix], grp["n_d"][ix]

                def pob(b, inst_d=inst_d, inst_p=inst_p, pre=pre, tr=tr, n_p=n_p, n_d=n_dec,
                        poll=poll, balance=balance, dp=dp):
                    pt = disaggregated(inst_p, inst_d, tr, b, n_p, n_d, pre)
                    return with_admission(pt, poll, balance, dp, n_d), b * n_d
            # the engine's running-request cap (recipe) and the KV cache bound the batch
            cap = np.minimum(np.minimum(grp["bmax"][ix], grp["max_running"][ix]), conc / n_dec)
            pt, _ = solve_closed_loop(pob, conc, cap)
            grp_e = {"idle_w": grp["idle_w"][ix], "max_w": grp["max_w"][ix],
                     "meas_tput": grp["meas_tput"][ix]}
            res = self._summarise(pt, ph, hp, grp_e, percentiles)
            res["draft_tokens"] = n
            # The best draft length per row and parameter set (most throughput).
            slot_key = kk * nrow + ix
            width = int(np.bincount(slot_key).max())
            mat = np.full((k_sets * nrow, width), -1)
            order = np.argsort(slot_key, kind="stable")
            sk = slot_key[order]
            first = np.searchsorted(sk, sk)
            mat[sk, np.arange(len(sk)) - first] = order
            tput = np.where(mat >= 0, res["output_tokens_per_s_per_gpu"][np.maximum(mat, 0)],
                            -np.inf)
            tput = np.where(np.isnan(tput), -np.inf, tput)
            chosen = mat[np.arange(k_sets * nrow), np.argmax(tput, axis=1)]
            for k in keys:
                out[k][:, grp["idx"]] = res[k][chosen].reshape(k_sets, nrow)
        if not many:
            out = {k: v[0] for k, v in out.items()}
        return out

    @staticmethod
    def _summarise(pt: Point, physics: PhysicsParams, hp: HardwareParams, grp, percentiles):
        act = activity(hp, pt.compute_util, pt.memory_util)
        s = measured_busy_scale(grp["meas_tput"], pt.output_tokens_per_s_per_gpu)
        act_meas = activity(hp, s * pt.compute_util, s * pt.memory_util)
        return {
            "output_tokens_per_s_per_gpu": pt.output_tokens_per_s_per_gpu,
            "median_tpot_ms": pt.tpot_quantile(50.0, physics.tpot_cv_frac) * 1e3,
            "p99_tpot_ms": pt.tpot_quantile(99.0, physics.tpot_cv_frac) * 1e3,
            "median_ttft_s": pt.ttft_quantile(50.0),
            "p99_ttft_s": pt.ttft_quantile(99.0),
            "power_w_per_gpu": grp["idle_w"] + (grp["max_w"] - grp["idle_w"]) * act_meas,
            "power_w_per_gpu_model_point": grp["idle_w"] + (grp["max_w"] - grp["idle_w"]) * act,
            "batch": pt.batch,
        }

    def predictions(self, params: Mapping[str, HardwareParams], physics: PhysicsParams
                    ) -> list[RowPrediction]:
        """Row-by-row :class:`RowPrediction` objects.

        Parameters
        ----------
        params : mapping of str to HardwareParams
            Accelerator id [-] -> its parameters (units of ``perf/parameters.csv``).
        physics : PhysicsParams
            Serving physics (scalars).

        Returns
        -------
        list of RowPrediction
            One per row, in row order (figures in the units of :class:`RowPrediction`).
        """
        arr = self.predict(params, physics)
        out = []
        for i, m in enumerate(self.rows):
            if self.flags[i]:
                out.append(RowPrediction(configuration=self.configs[i], flag=self.flags[i],
                                         notes=self.notes[i]))
                continue
            cfg = self.configs[i]
            if m.speculative != "none":
                k = int(arr['draft_tokens'][i])
                cfg += f", {m.speculative} {k} draft token{'s' * (k != 1)}"
            out.append(RowPrediction(
                output_tokens_per_s_per_gpu=float(arr["output_tokens_per_s_per_gpu"][i]),
                median_tpot_ms=float(arr["median_tpot_ms"][i]),
                p99_tpot_ms=float(arr["p99_tpot_ms"][i]),
                median_ttft_s=float(arr["median_ttft_s"][i]),
                p99_ttft_s=float(arr["p99_ttft_s"][i]),
                power_w=float(arr["power_w_per_gpu"][i]),
                power_w_model_point=float(arr["power_w_per_gpu_model_point"][i]),
                configuration=cfg,
                notes=self.notes[i], batch=float(arr["batch"][i])))
        return out


# ------------------------------------------------------------------ phase rows


def _column(obj):
    """The dataclass with its array fields reshaped to ``(K, 1)`` (scalars stay)."""
    return type(obj)(**{k: (np.reshape(np.asarray(v, float), (-1, 1)) if np.ndim(v) else v)
                        for k, v in obj.__dict__.items()})


def phase_arrays(m: Measurement, catalog: Catalog, params: HardwareParams,
                 physics: PhysicsParams, defaults: PerfDefaults, lengths: BenchmarkLengths
                 ) -> dict:
    """Predict one phase-level row for ``K`` parameter sets at once.

    Parameters
    ----------
    m : Measurement
        The phase-level row (batch [sequences], context [tokens], measured
        ``tokens_per_s`` [tokens/s] and ``power_w`` [W]).
    catalog : Catalog
        With the row's model and accelerator (powers [W], bandwidths).
    params : HardwareParams
        The accelerator's parameters (units of ``perf/parameters.csv``): fields
        scalars or arrays of shape ``(K,)``.
    physics : PhysicsParams
        Serving physics (units of ``perf/parameters.csv``): fields scalars or arrays
        of shape ``(K,)``.
    defaults : PerfDefaults
        For the serving assumptions (``serving``).
    lengths : BenchmarkLengths
        Request-length distributions of the rows' benchmarks; an end-to-end row takes
        its model's dataset distribution (:meth:`BenchmarkLengths.for_phase_model`).

    Returns
    -------
    dict
        ``tokens_per_s`` [tokens/s], ``power_w`` (at the row's measured
        ``tokens_per_s``; at the model's operating point for a power-capped row) [W],
        ``power_w_model_point`` [W], ``batch`` [sequences], ``median_tpot_ms``,
        ``p99_tpot_ms`` [ms], ``median_ttft_s``, ``p99_ttft_s`` [s]: arrays of shape
        ``(K,)`` (NaN where no batch meets the row's limits); ``label`` (the parallel
        layout); ``flag`` (why the row cannot be predicted for the first set, '' when
        it can); ``ok`` (shape ``(K,)``, bool).
    """
    sv = defaults.serving
    acc = catalog.get("accelerators", m.hardware)
    shape = ModelShape.build(catalog.get("models", m.model), m.precision, sv)
    domain = scaleup_domain(catalog, m.hardware) or m.gpus
    hp, ph = _column(params), _column(physics)
    hw = Hardware.build(acc, shape, hp, sv,
                        scaleout_gbps(catalog, m.hardware, sv.measurement_scaleout_gbps), domain)
    par = (Parallel.from_engine(m.gpus, m.ep, True) if m.dp_attention
           else Parallel(attn_tp=m.gpus, attn_dp=1, ep=m.ep))
    label = par.label(shape.is_moe)
    inst = Instance(hw, par, shape, ph, sv)
    b = float(m.batch)
    k_sets = max([np.size(v) for v in params.__dict__.values()]
                 + [np.size(v) for v in physics.__dict__.values()])
    nan = np.full(k_sets, np.nan)
    out = {"label": label, "flag": "", "ok": np.ones(k_sets, bool), "batch": nan + b,
           "median_tpot_ms": nan, "p99_tpot_ms": nan, "median_ttft_s": nan,
           "p99_ttft_s": nan}
    free = hw.hbm_capacity - float(weight_bytes_per_gpu(par, shape))
    if free <= 0:
        out.update(tokens_per_s=nan, power_w=nan, power_w_model_point=nan, ok=~out["ok"], flag=(
            f"{m.model} at {m.precision.value} does not fit {m.gpus} x {m.hardware}"))
        return out

    def at(u_c, u_m, scale):
        act = activity(hp, scale * u_c, scale * u_m)
        per_gpu = acc.idle_power_w + (acc.max_power_w - acc.idle_power_w) * act
        if m.power_cap_w:     # MaxQ runs: the accelerators are held to the cap
            per_gpu = np.minimum(per_gpu, m.power_cap_w)
        return np.broadcast_to(m.gpus * per_gpu, (k_sets, 1))[:, 0].copy()

    def power(u_c, u_m, tokens_per_s):
        """Power at the measured and at the model's throughput ``tokens_per_s`` (K,)."""
        model_point = at(u_c, u_m, 1.0)
        if m.power_cap_w:     # throttled, not idle: keep the (capped) model point
            return {"power_w": model_point, "power_w_model_point": model_point}
        s = measured_busy_scale(m.tokens_per_s, np.reshape(tokens_per_s, (-1, 1)))
        return {"power_w": at(u_c, u_m, s), "power_w_model_point": model_point}

    def flat(x):
        return np.broadcast_to(np.asarray(x, float), (k_sets, 1))[:, 0].copy()

    if m.phase == "prefill":
        tokens = b * m.context_tokens
        dp = float(par.attn_dp)
        # a pass holds one chunk per attention data-parallel rank
        st = forward_step(hw, par, shape, ph, sv, tokens, tokens / dp,
                          shape.attended(m.context_tokens / 2.0),
                          b / dp * shape.kv_bytes_seq(m.context_tokens), "prefill",
                          steps=max(1.0, np.ceil(tokens / (sv.prefill_chunk_tokens * dp))))
        t = st.total_s
        out.update(tokens_per_s=flat(tokens / t))
        out.update(power(st.compute_s / t, st.memory_s / t, out["tokens_per_s"]))
        return out
    if not m.end_to_end:
        dec = decode(inst, b, m.context_tokens)
        t = dec.step_s
        out.update(tokens_per_s=flat(b / t), median_tpot_ms=flat(t * 1e3))
        out.update(power(dec.step.compute_s / t, dec.step.memory_s / t, out["tokens_per_s"]))
        return out
    traffic = Traffic(float(m.prompt_tokens), float(m.output_tokens), 0.0, 1.0,
                      lengths.for_phase_model(m.model))
    limited = m.ttft_s is not None or m.tpot_ms is not None
    batches = (np.arange(1.0, b + 1.0) if limited else np.array([b]))[None, :]
    # Server: Poisson arrivals admitted into at most the row's batch of running
    # requests; a request that finds them all taken waits for a slot.
    pt = aggregated(inst, traffic, batches, slots=b if limited else None)
    shp = (k_sets, batches.shape[1])
    rate = np.broadcast_to(pt.requests_per_s * float(m.output_tokens), shp)
    ok = np.ones(shp, dtype=bool)
    pct = sv.phase_rows_percentile
    # Whether each batch meets the limits: each percentile compared with its limit by
    # one evaluation of its distribution there; the percentiles themselves only at the
    # batch chosen per parameter set (below).
    if m.ttft_s is not None:
        ok &= np.broadcast_to(pt.ttft_quantile(pct, within_s=m.ttft_s), shp)
    if m.tpot_ms is not None:
        ok &= np.broadcast_to(pt.tpot_quantile(pct, ph.tpot_cv_frac,
                                               within_s=m.tpot_ms / 1e3), shp)
    ok &= np.broadcast_to(pt.utilisation, shp) < 1.0
    any_ok = ok.any(axis=1)
    i = np.argmax(np.where(ok, rate, -1.0), axis=1)
    r = np.arange(k_sets)

    def pick(x):
        return np.where(any_ok, np.broadcast_to(x, shp)[r, i], np.nan)

    chosen = take_point(pt, shp, r, i)          # the chosen batch of every set, (K,)
    cv = np.ravel(physics.tpot_cv_frac) if np.ndim(physics.tpot_cv_frac) else (
        physics.tpot_cv_frac)

    def when_ok(x):
        return np.where(any_ok, x, np.nan)

    out.update(
        ok=any_ok, tokens_per_s=pick(rate), batch=pick(batches),
        median_tpot_ms=when_ok(chosen.tpot_quantile(50.0, cv)) * 1e3,
        p99_tpot_ms=when_ok(chosen.tpot_quantile(99.0, cv)) * 1e3,
        median_ttft_s=when_ok(chosen.ttft_quantile(50.0)),
        p99_ttft_s=when_ok(chosen.ttft_quantile(99.0)))
    pw = power(np.broadcast_to(pt.compute_util, shp)[r, i][:, None],
               np.broadcast_to(pt.memory_util, shp)[r, i][:, None], out["tokens_per_s"])
    out.update({k: np.where(any_ok, v, np.nan) for k, v in pw.items()})
    if not any_ok[0]:
        first = take_point(pt, shp, np.zeros(shp[1], int), np.arange(shp[1]))
        cv0 = float(np.ravel(physics.tpot_cv_frac)[0])
        out["flag"] = (
            f"no batch up to {m.batch} meets the row's limits at p{pct:g} (TTFT "
            f"{m.ttft_s} s, TPOT {m.tpot_ms} ms): best reachable TTFT "
            f"{float(first.ttft_quantile(pct).min()):.3g} s, TPOT "
            f"{float(first.tpot_quantile(pct, cv0).min()) * 1e3:.3g} ms")
    return out


def predict_phase(m: Measurement, catalog: Catalog, params: HardwareParams,
                  physics: PhysicsParams, defaults: PerfDefaults, lengths: BenchmarkLengths
                  ) -> RowPrediction:
    """Predict one phase-level row (see the module docstring).

    Parameters
    ----------
    m : Measurement
        The phase-level row (batch [sequences], context [tokens], measured
        ``tokens_per_s`` [tokens/s] and ``power_w`` [W]).
    catalog : Catalog
        With the row's model and accelerator (powers [W], bandwidths).
    params : HardwareParams
        The accelerator's parameters (units of ``perf/parameters.csv``).
    physics : PhysicsParams
        Serving physics (units of ``perf/parameters.csv``).
    defaults : PerfDefaults
        For the serving assumptions (``serving``).
    lengths : BenchmarkLengths
        Request-length distributions of the rows' benchmarks; an end-to-end row takes
        its model's dataset distribution (:meth:`BenchmarkLengths.for_phase_model`).

    Returns
    -------
    RowPrediction
        Replica ``tokens_per_s`` [tokens/s], latencies [ms, s], power of the replica's
        accelerators [W]; or the flag saying why the row cannot be predicted.
    """
    a = phase_arrays(m, catalog, params, physics, defaults, lengths)
    if a["flag"]:
        return RowPrediction(configuration=a["label"], flag=a["flag"])

    def f(key):
        v = float(a[key][0])
        return None if np.isnan(v) else v

    return RowPrediction(tokens_per_s=f("tokens_per_s"), configuration=a["label"],
                         batch=float(a["batch"][0]), median_tpot_ms=f("median_tpot_ms"),
                         p99_tpot_ms=f("p99_tpot_ms"), median_ttft_s=f("median_ttft_s"),
                         p99_ttft_s=f("p99_ttft_s"), power_w=f("power_w"),
                         power_w_model_point=f("power_w_model_point"))
