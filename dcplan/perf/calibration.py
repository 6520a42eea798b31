"""Calibration: fit the model's parameters to measurements, and validate it.

Residuals are log ratios of predicted to measured values: throughput (phase rows:
``tokens_per_s``; serving rows: output tokens/s per GPU), median TPOT, median TTFT
(weight :data:`TTFT_WEIGHT`), p99 TPOT (weight :data:`P99_TPOT_WEIGHT`) and power
where measured, the power taken at the row's measured throughput (busy shares scaled
by ``min(1, measured / predicted)``, :func:`dcplan.perf.predict.measured_busy_scale`)
so a throughput error does not bend the power curve. The fit is robust (``soft_l1``
loss, scale :data:`LOSS_SCALE`, so a broken benchmark run cannot drag the fit).

**One joint fit of nested levels.** Every accelerator parameter of a row is, in log
space, the sum of

* a pooled value (pulled towards ``perf_defaults.yaml`` with :data:`PRIOR_WEIGHT`),
* offsets of the row's vendor, architecture and accelerator (each pulled towards zero,
  weights :data:`LEVEL_PRIOR`: the architecture carries what siblings share, the
  accelerator only what sets it apart from them),
* software knobs (``perf_defaults.yaml`` ``software.knobs``: overheads, kernel
  efficiencies, communication overlap): an offset per serving engine (``framework``;
  a framework such as ``dynamo-trt`` adds its own offset to its engine's, ``trt``)
  and a trend per year of run date, shared by all accelerators,

plus the physics parameters (MoE, speculative decoding, latency), shared by all. A
level whose rows are exactly those of the level above (one vendor; an architecture
with one measured accelerator) is not fitted, so nothing splits between two names
for the same rows; nor is a vendor level unless two of its architectures have a
level (:data:`MIN_LEVEL_ROWS` rows inside one scale-up domain each), as with one it
could not be told from that architecture's. Rows are weighted so that dense and MoE
models carry equal weight, and within a family an accelerator with many rows does not
drown the others (:func:`balance_weights`).

An accelerator without rows takes its architecture's values when a sibling was fitted,
else its vendor's, else the pooled ones: what :func:`leave_one_out` measures when it
holds one accelerator out (its rows touch no level, engine or trend of that fold).

The stored values are the planner's: each vendor's *planning engine* (the fitted
engine with the best knobs among those with rows of that vendor's accelerators) at the
latest run date fitted (no extrapolation); :meth:`Calibration.apply_run` moves them to
a measured run's engine and date.

The Jacobian is taken by finite differences, all columns whose rows do not overlap
perturbed in the same batched prediction (:class:`dcplan.perf.predict.ServingRows`
predicts many parameter sets at once).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import pickle
import signal
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from dcplan.catalog import Catalog
from dcplan.errors import InputError
from dcplan.perf.benchmarks import Benchmarks
from dcplan.perf.measurements import (
    BOARD_DOMAIN,
    CONFIGURATION_COLUMNS,
    Measurement,
    ServingMeasurement,
    breaks_little,
    pct_error,
    row_domain,
    scaleup_domain,
    spans_scaleup,
    summary,
    wide_decode_group,
)
from dcplan.perf.params import (
    GEMM_EFF_MAX_FRAC,
    HW_PARAM_NAMES,
    PARAM_BOUNDS,
    PHYSICS_NAMES,
    Calibration,
    FitBasis,
    HardwareParams,
    PerfDefaults,
    PhysicsParams,
    SoftwareFit,
    model_kind,
    steep_stop,
    year_fraction,
)
from dcplan.perf.predict import (
    RowPrediction,
    ServingRows,
    hardware_params,
    phase_arrays,
    physics_params,
)
from dcplan.perf.software import faster_sign

#: Accelerator parameters fitted from throughput and latency. The all-reduce (scale-up)
#: and scale-out efficiencies stay at their a-priori values: fitted together with the MoE
#: rows they sink MoE costs and then slow dense prefills (Llama 3.1 405B) far below
#: measurement; ``moe_comm_eff_frac`` takes the MoE communication instead.
THROUGHPUT_PARAMS = ("compute_eff_frac", "decode_compute_eff_frac", "moe_gemm_eff_ratio",
                     "attention_eff_frac",
                     "mla_attention_eff_frac",
                     "hbm_eff_frac", "step_overhead_s", "layer_overhead_s",
                     "alltoall_latency_s", "collective_latency_s", "scaleout_latency_s",
                     "comm_overlap_frac", "moe_comm_eff_frac", "moe_prefill_comm_eff_frac",
                     "ttft_overhead_s", "kv_handover_token_s")
#: Accelerator parameters fitted in addition where rows carry power (accelerator level).
POWER_PARAMS = ("power_base_frac", "power_compute_weight", "power_memory_weight")
#: Physics parameters, each fitted only when some row depends on it.
PHYSICS_FIT = ("grouped_gemm_pad_tokens", "moe_imbalance_frac", "mtp_acceptance_frac",
               "mtp_draft_cost_frac", "closed_loop_arrival_cv2", "tpot_cv_frac",
               "wide_ep_comm_ratio", "deepgemm_moe_time_ratio")
#: Search bounds of each fitted pooled and physics parameter (per-row values, with the
#: levels' offsets, are kept within :data:`dcplan.perf.params.PARAM_BOUNDS`).
FIT_BOUNDS = {
    "compute_eff_frac": (0.05, GEMM_EFF_MAX_FRAC),
    "decode_compute_eff_frac": (0.05, GEMM_EFF_MAX_FRAC),
    "moe_gemm_eff_ratio": (0.1, 2.0),
    "attention_eff_frac": (0.05, 0.95),
    "mla_attention_eff_frac": (0.02, 0.95),
    "hbm_eff_frac": (0.3, 0.95),
    "scaleup_eff_frac": (0.1, 0.95),
    "moe_comm_eff_frac": (0.02, 0.95),
    "moe_prefill_comm_eff_frac": (0.05, 0.95),
    "step_overhead_s": (1e-4, 0.05),
    "layer_overhead_s": (1e-7, 1e-3),
    "alltoall_latency_s": (1e-6, 1e-3),
    "comm_overlap_frac": (0.01, 0.99),
    "collective_latency_s": (1e-6, 1e-3),
    "scaleout_latency_s": (1e-6, 2e-3),
    "power_base_frac": (0.01, 1.0),
    "power_compute_weight": (0.01, 2.0),
    "power_memory_weight": (0.01, 2.0),
    "grouped_gemm_pad_tokens": (0.5, 512.0),
    "moe_imbalance_frac": (0.01, 3.0),
    "mtp_acceptance_frac": (0.05, 0.95),
    "mtp_draft_cost_frac": (0.005, 0.3),
    "closed_loop_arrival_cv2": (0.01, 2.0),
    "ttft_overhead_s": (0.001, 2.0),
    "kv_handover_token_s": (1e-7, 5e-4),
    "tpot_cv_frac": (0.005, 1.0),
    "wide_ep_comm_ratio": (0.2, 15.0),
    "deepgemm_moe_time_ratio": (0.5, 4.0),
}
#: Weight of the pull of the pooled and physics values towards the defaults (per unit of
#: ln parameter).
PRIOR_WEIGHT = 0.3
#: Weights of the pull of single physics parameters towards the defaults where it is not
#: :data:`PRIOR_WEIGHT` (per unit of ln parameter). ``wide_ep_comm_ratio`` is set by the
#: one rack-scale decode row (wide_ep.csv): at 0.3 the pull held it at 1.23 and the fit
#: moved Blackwell's GEMM efficiencies instead (prefill 0.50 -> 0.61, decode 0.57 ->
#: 0.49), with 0.05 it reaches 1.43, about the row's own 1.44 (docs/perf.md).
PHYSICS_PRIOR_WEIGHT = {"wide_ep_comm_ratio": 0.05}
#: Fewest rows inside one scale-up domain a vendor, architecture or accelerator level
#: needs to be fitted (the cross-domain level counts its spanning rows); a level with
#: fewer fits nothing of its own, its rows fit the level above. Three rows cannot speak
#: for a part's 14 offsets, yet they did for a sibling held out: with B200 held out the
#: three GB200 MLPerf rows (dense Llama) alone set the Blackwell level, with step and
#: layer overheads 1.3-1.5x NVIDIA's where B200's own are 0.7-0.8x (held-out B200 20 %
#: slow); with H200 held out, H100's rows (3 MLPerf rows, 29 serving rows TP16 across two
#: boards) set the Hopper level and their cross-domain penalty with it (held-out H200
#: 14 % slow). One row per offset (14) would leave a calibration on the MLPerf file
#: alone (3-6 rows per accelerator) without any accelerator level: 16 % off its own rows
#: against 6.7 % with 4 (docs/perf.md, Calibration).
MIN_LEVEL_ROWS = 4
#: Weight of the pull of each level's offsets towards zero (per unit of ln parameter;
#: trend: per unit of ln change per year). Vendor and architecture weigh 1.0 (0.3 until
#: 2026-12-05), chosen by leave-one-hardware-out (MoE median / p90 |error|, 40-evaluation
#: fits): vendor and architecture 0.3: 12.4 / 43.6 %; 1.0: 11.6 / 39.8 %; 3.0: 12.8 /
#: 37.1 %; vendor 1.0 with architecture 0.3: 12.6 / 45.0 %. A held-out part takes its
#: vendor's (or the pooled) values, which at 0.3 followed the parts that fitted them
#: too closely. The accelerator level stays at 1.0: at 3.0 (three times the
#: architecture's, as before) the planner's figures for parts that take Blackwell's
#: values moved by up to -20 % (GB200 NVL72 chat) on the same in-sample fit, at 1.0 by
#: +2 % (chat) to -16 % (coding_agent: Blackwell's MLA attention efficiency 0.23,
#: B200's own 0.29; docs/scenarios.md).
LEVEL_PRIOR = {"vendor": 1.0, "architecture": 1.0, "hardware": 1.0, "engine": 0.5,
               "framework": 1.0, "trend": 1.0, "cross_domain": 0.3}
#: Residual weights of median TTFT and p99 TPOT relative to throughput and TPOT.
#: TTFT weighs 0.3. It weighed 0.1 while the model lacked the engines' admission limits
#: (serving_recipes.yaml): it under-predicted the TTFT of closed-loop runs with many
#: requests in flight (0.07-0.18 of the measured median at 65-512) and at 0.5 the fit
#: absorbed that by slowing prefill to 0.11-0.19 of peak. With the poll interval, DP
#: balancing and running-request caps modelled, 0.3 fits aggregated TTFT to 17 % median
#: with the GEMM efficiencies at 0.15-0.52 (docs/perf.md, Calibration).
TTFT_WEIGHT = 0.3
#: Weight of a disaggregated row's TTFT, relative to :data:`TTFT_WEIGHT`, at up to
#: :data:`DISAGGREGATED_TTFT_MAX_CONCURRENCY` requests in flight; above it 0. Above it
#: their recipes' admission settings (prefill-server queueing, transfer batching of the
#: multi-node Dynamo/MoRI deployments) are not in ``serving_recipes.yaml`` and their
#: measured TTFT is 2-10x the model's; fitted, all of them raised every NVIDIA
#: accelerator's ``ttft_overhead_s`` and made the aggregated rows' TTFT 55-64 % too
#: long. At low load no such limit binds, and with the hand-over a fixed latency
#: (``kv_handover_latency_s``) the model meets them (docs/perf.md, TTFT). Their TTFT
#: error is reported at every load.
DISAGGREGATED_TTFT_WEIGHT = 1.0
#: Requests in flight up to which no admission limit of the disaggregated recipes binds
#: [requests]: their TTFT is fitted up to here (:data:`DISAGGREGATED_TTFT_WEIGHT`).
DISAGGREGATED_TTFT_MAX_CONCURRENCY = 64
P99_TPOT_WEIGHT = 0.3
#: Scale of the robust loss (log ratio at which it turns linear, ~15%).
LOSS_SCALE = 0.15
#: Function evaluations of a fit (the shipped calibration is fitted with these) [-].
MAX_NFEV = 60
#: Spread of the noise added to each column of a fit's start with ``start_seed``
#: (bench/calibration_starts.py) [ln units].
START_SD = 0.15
#: Exponent of the per-accelerator row balance: a family's rows of an accelerator with
#: ``n`` rows weigh ``n^-HARDWARE_BALANCE`` each (squared weights; 0: every row alike, 1:
#: every accelerator alike).
HARDWARE_BALANCE = 0.5
#: Finite-difference step of the Jacobian [ln parameter].
DIFF_STEP = 2e-3
#: Bound of every level offset [ln parameter] and trend [ln per year].
OFFSET_BOUND = 3.0


@dataclass(frozen=True)
class RowResult:
    """Measured and predicted values of one measurement row.

    Attributes
    ----------
    m : Measurement or ServingMeasurement
    pred : RowPrediction
    """

    m: Measurement | ServingMeasurement
    pred: RowPrediction

    @property
    def kind(self) -> str:
        """``phase`` or ``serving``."""
        return self.m.kind

    @property
    def measured_throughput(self) -> float | None:
        """Phase rows: tokens/s of the replica; serving rows: output tokens/s per GPU."""
        return (self.m.tokens_per_s if self.kind == "phase"
                else self.m.output_tokens_per_s_per_gpu)

    @property
    def predicted_throughput(self) -> float | None:
        """Predicted counterpart of :attr:`measured_throughput`."""
        return (self.pred.tokens_per_s if self.kind == "phase"
                else self.pred.output_tokens_per_s_per_gpu)

    def error(self, what: str) -> float | None:
        """Signed % error of ``throughput``, ``tpot``, ``ttft`` or ``power`` (None if n/a).

        ``power`` is the power at the row's measured throughput (see
        :mod:`dcplan.perf.predict`); ``power_model_point`` the power at the model's own
        operating point.

        Parameters
        ----------
        what : str
            ``throughput``, ``tpot``, ``ttft``, ``power`` or ``power_model_point``.

        Returns
        -------
        float or None
            (predicted - measured) / measured [%]; None without both figures.
        """
        m, p = self.m, self.pred
        pairs = {
            "throughput": (self.measured_throughput, self.predicted_throughput),
            "tpot": (getattr(m, "median_tpot_ms", None), p.median_tpot_ms),
            "ttft": (getattr(m, "median_ttft_s", None), p.median_ttft_s),
            "power": (m.power_w, p.power_w),
            "power_model_point": (m.power_w, p.power_w_model_point),
        }
        meas, pred = pairs[what]
        if meas is None or pred is None or not np.isfinite(pred):
            return None
        return pct_error(pred, meas)

    def as_dict(self) -> dict[str, Any]:
        """Row as a flat dict (for tables and JSON)."""
        m, p = self.m, self.pred
        base = {"row": m.row, "line": m.line, "kind": self.kind, "hardware": m.hardware,
                "model": m.model, "precision": m.precision.value}
        if self.kind == "phase":
            base.update({
                "phase": m.phase + ("/e2e" if m.end_to_end else ""), "gpus": m.gpus,
                "batch": m.batch, "context_tokens": m.context_tokens,
                "measured_tokens_per_s": m.tokens_per_s,
                "predicted_tokens_per_s": p.tokens_per_s,
                "tokens_error_pct": self.error("throughput"),
            })
        else:
            base.update({
                "input_tokens": m.input_tokens, "output_tokens": m.output_tokens,
                "concurrency": m.concurrency, "gpus": m.gpus,
                "disaggregated": m.disaggregated, "speculative": m.speculative,
                "framework": m.framework, "date": m.date,
                "measured_output_tokens_per_s_per_gpu": m.output_tokens_per_s_per_gpu,
                "predicted_output_tokens_per_s_per_gpu": p.output_tokens_per_s_per_gpu,
                "output_tokens_error_pct": self.error("throughput"),
                "measured_median_tpot_ms": m.median_tpot_ms,
                "predicted_median_tpot_ms": p.median_tpot_ms,
                "tpot_error_pct": self.error("tpot"),
                "measured_median_ttft_s": m.median_ttft_s,
                "predicted_median_ttft_s": p.median_ttft_s,
                "ttft_error_pct": self.error("ttft"),
                "predicted_p99_ttft_s": p.p99_ttft_s, "predicted_p99_tpot_ms": p.p99_tpot_ms,
            })
        base.update({"measured_power_w": m.power_w, "predicted_power_w": p.power_w,
                     "power_error_pct": self.error("power"),
                     "predicted_power_model_point_w": p.power_w_model_point,
                     "power_model_point_error_pct": self.error("power_model_point"),
                     "configuration": p.configuration,
                     "flag": p.flag, "notes": p.notes})
        return base


def _ph_names(physics: PhysicsParams) -> dict[str, Any]:
    return {f: getattr(physics, f) for f in PHYSICS_NAMES}


class Predictor:
    """Every row of a mixed list (phase and serving rows), predicted at once.

    One or many parameter sets are predicted in one pass; the residual layout of the
    fit is fixed at construction.

    Parameters
    ----------
    rows : sequence of Measurement or ServingMeasurement
    catalog : Catalog
    defaults : PerfDefaults
    weights : sequence of float, optional
        Row weights of the residuals (default 1).
    use_power : bool
        Include power residuals of rows that measured power.
    benchmarks : Benchmarks
        What the rows' benchmarks ran: request lengths and engine recipes
        (:func:`dcplan.perf.params.load_perf_inputs` with ``benchmarks=True``).
    """

    def __init__(self, rows: Sequence, catalog: Catalog, defaults: PerfDefaults,
                 weights: Sequence[float] | None = None, use_power: bool = False, *,
                 benchmarks: Benchmarks):
        self.rows = list(rows)
        self.catalog = catalog
        self.defaults = defaults
        self.lengths = benchmarks.lengths
        self.phase_idx = [i for i, m in enumerate(self.rows) if m.kind == "phase"]
        self.serving_idx = [i for i, m in enumerate(self.rows) if m.kind == "serving"]
        self.serving = (ServingRows([self.rows[i] for i in self.serving_idx], catalog, defaults,
                                    benchmarks.lengths, benchmarks.recipes)
                        if self.serving_idx else None)
        #: Rows whose recipe ran the MoE's grouped GEMMs on DeepGEMM (serving_recipes.yaml).
        self.deepgemm = np.zeros(len(self.rows), dtype=bool)
        if self.serving is not None:
            self.deepgemm[self.serving_idx] = self.serving.deepgemm
        self.hardware = sorted({m.hardware for m in self.rows})
        self.weights = np.ones(len(self.rows)) if weights is None else np.asarray(weights, float)
        self.use_power = use_power
        # Residual layout: (data row, what, weight) for every measured value.
        owner: list[int] = []
        self._phase_layout = []
        for i in self.phase_idx:
            m = self.rows[i]
            entry = [len(owner)]
            owner.append(i)
            if use_power and m.power_w:
                entry.append(len(owner))
                owner.append(i)
            self._phase_layout.append((i, entry))
        self._serving_layout = []
        if self.serving is not None:
            srows = self.serving.rows
            flagged = np.array([bool(f) for f in self.serving.flags])
            ws = self.weights[self.serving_idx]
            for key, w in (("output_tokens_per_s_per_gpu", 1.0), ("median_tpot_ms", 1.0),
                           ("median_ttft_s", TTFT_WEIGHT), ("p99_tpot_ms", P99_TPOT_WEIGHT),
                           ("power_w_per_gpu", 1.0 if use_power else 0.0)):
                if w == 0.0:
                    continue
                meas = np.array([getattr(m, key) or np.nan for m in srows], float)
                wk = w * ws
                if key == "median_ttft_s":
                    wk = wk * np.array([
                        (DISAGGREGATED_TTFT_WEIGHT
                         if m.concurrency <= DISAGGREGATED_TTFT_MAX_CONCURRENCY else 0.0)
                        if m.disaggregated else 1.0 for m in srows])
                sel = np.flatnonzero(np.isfinite(meas) & ~flagged & (wk > 0))
                pos = np.arange(len(owner), len(owner) + len(sel))
                owner.extend(int(self.serving_idx[j]) for j in sel)
                self._serving_layout.append((key, sel, meas[sel], wk[sel], pos))
        #: Data row of every residual entry.
        self.owner = np.array(owner, dtype=int)

    def _phase_params(self, rp: dict[str, np.ndarray], i: int) -> HardwareParams:
        return HardwareParams(**{f: v[:, i] for f, v in rp.items()})

    def residuals(self, row_params: HardwareParams, physics: PhysicsParams) -> np.ndarray:
        """Weighted log-ratio residuals, shape ``(K, n_residuals)``.

        ``row_params`` fields have shape ``(K, n_rows)``; ``physics`` fields scalars or
        ``(K,)``. A value the model cannot predict (flagged) gives a large residual.

        Parameters
        ----------
        row_params : HardwareParams
            Hardware parameters per row; fields of shape ``(K, n_rows)`` (``K`` parameter
            sets) or ``(n_rows,)``.
        physics : PhysicsParams
            Physics parameters; fields scalars or ``(K,)``.

        Returns
        -------
        ndarray
            Weighted ``ln(predicted / measured)`` per parameter set and residual entry [-].
        """
        rp = {f: np.atleast_2d(np.asarray(getattr(row_params, f), float))
              for f in HW_PARAM_NAMES}
        k_sets = max(v.shape[0] for v in rp.values())
        k_sets = max([k_sets] + [np.size(v) for v in _ph_names(physics).values()])
        rp = {f: np.broadcast_to(v, (k_sets, len(self.rows))) for f, v in rp.items()}
        out = np.empty((k_sets, len(self.owner)))
        for i, entry in self._phase_layout:
            m = self.rows[i]
            w = self.weights[i]
            a = phase_arrays(m, self.catalog, self._phase_params(rp, i), physics, self.defaults,
                             self.lengths)
            # a power-capped (MaxQ) row's throughput is not fitted: no clock throttling
            wt = 0.0 if m.power_cap_w else w
            r = wt * np.log(np.maximum(a["tokens_per_s"], 1e-12) / m.tokens_per_s)
            out[:, entry[0]] = np.where(np.isfinite(r), r, 3.0 * wt)
            if len(entry) > 1:
                r = w * np.log(np.maximum(a["power_w"], 1e-12) / m.power_w)
                out[:, entry[1]] = np.where(np.isfinite(r), r, 3.0 * w)
        if self.serving is not None:
            sp = HardwareParams(**{f: v[:, self.serving_idx] for f, v in rp.items()})
            arr = self.serving.predict(sp, physics)
            for key, sel, meas, w, pos in self._serving_layout:
                pred = np.atleast_2d(arr[key])[:, sel]
                r = w * np.log(np.maximum(pred, 1e-12) / meas)
                out[:, pos] = np.where(np.isfinite(r), r, 3.0 * w)
        return out

    def predictions(self, row_params: HardwareParams, physics: PhysicsParams
                    ) -> list[RowPrediction]:
        """One :class:`RowPrediction` per row, in row order (``row_params``: ``(n,)``).

        Parameters
        ----------
        row_params : HardwareParams
            Hardware parameters per row, fields of shape ``(n_rows,)``.
        physics : PhysicsParams
            Physics parameters.

        Returns
        -------
        list of RowPrediction
            In row order.
        """
        from dcplan.perf.predict import predict_phase

        rp = {f: np.asarray(getattr(row_params, f), float) for f in HW_PARAM_NAMES}
        out: list[RowPrediction | None] = [None] * len(self.rows)
        for i in self.phase_idx:
            hp = HardwareParams(**{f: float(v[i]) for f, v in rp.items()})
            out[i] = predict_phase(self.rows[i], self.catalog, hp, physics, self.defaults,
                                   self.lengths)
        if self.serving is not None:
            sp = HardwareParams(**{f: v[self.serving_idx] for f, v in rp.items()})
            for i, p in zip(self.serving_idx, self.serving.predictions(sp, physics),
                            strict=True):
                out[i] = p
        return out  # type: ignore[return-value]


def _accelerator(catalog: Catalog, accelerator_id: str):
    return catalog.get("accelerators", accelerator_id)


def run_params(rows: Sequence, catalog: Catalog, defaults: PerfDefaults,
               calibration: Calibration | None | bool) -> HardwareParams:
    """Per-row parameters (arrays over ``rows``) at each row's engine and run date.

    Parameters
    ----------
    rows : sequence of Measurement or ServingMeasurement
        Measurement rows (phase-level and/or serving).
    catalog : Catalog
        With every model and accelerator the rows name.
    defaults : PerfDefaults
        The a-priori parameters.
    calibration : Calibration or None or bool
        Fitted parameters; None or False: the defaults.

    Returns
    -------
    HardwareParams
        Each field an array over ``rows``, in row order.
    """
    per = []
    for m in rows:
        acc = _accelerator(catalog, m.hardware)
        hp = hardware_params(defaults, m.hardware, calibration, acc.vendor, acc.architecture)
        if calibration:  # None, False and the "none" sentinel mean no calibration
            hp = calibration.apply_run(hp, acc.vendor, getattr(m, "framework", ""), m.date,
                                       spans_scaleup(m, catalog))
        per.append(hp)
    return HardwareParams(**{f: np.array([getattr(p, f) for p in per], float)
                             for f in HW_PARAM_NAMES})


def evaluate_rows(rows: Iterable, catalog: Catalog, defaults: PerfDefaults,
                  calibration: Calibration | None = None, *, benchmarks: Benchmarks
                  ) -> list[RowResult]:
    """Predict every row with the defaults (and ``calibration`` when given).

    With a calibration, each row is predicted at its accelerator's calibrated values
    moved to the row's own engine and run date (:meth:`Calibration.apply_run`).

    Parameters
    ----------
    rows : iterable of Measurement or ServingMeasurement
        Measurement rows.
    catalog : Catalog
        With every model and accelerator the rows name.
    defaults : PerfDefaults
        The a-priori parameters.
    calibration : Calibration, optional
        Fitted parameters (None: the defaults).
    benchmarks : Benchmarks
        What the rows' benchmarks ran (:class:`Predictor`).

    Returns
    -------
    list of RowResult
        Measured and predicted figures, in row order.
    """
    rows = list(rows)
    pr = Predictor(rows, catalog, defaults, benchmarks=benchmarks)
    preds = pr.predictions(run_params(rows, catalog, defaults, calibration),
                           physics_params(defaults, calibration))
    sw = getattr(calibration, "software", None) if calibration else None
    out = []
    for m, p in zip(rows, preds, strict=True):
        new = sw.unfitted_engine(getattr(m, "framework", "") or "") if sw else ""
        if new:
            note = (f"engine '{new}' is not in the calibration: the fitted engines' mean "
                    "offsets are used")
            p = replace(p, notes=f"{p.notes}; {note}" if p.notes else note)
        out.append(RowResult(m, p))
    return out


#: A serving row measured below this share of the median of its configuration's runs
#: (at least :data:`REPEAT_MIN_RUNS` in the files) is counted apart in :func:`report`:
#: nightly benchmarks repeat a configuration, and a run far below its repeats is more
#: likely a regressed night (a software or machine fault) than the configuration's speed.
REPEAT_LOW_FRAC = 0.6
#: Runs of one configuration needed before a row is compared with their median (with
#: two, a row below 60 % of their median is below 43 % of the other run).
REPEAT_MIN_RUNS = 2



def repeat_ratios(results: Sequence[RowResult]) -> list[tuple[int, float] | None]:
    """Per row: (runs of its configuration, measured throughput / their median).

    Serving rows only (phase rows and rows without a measured output tokens/s give
    None), and only where the files hold at least :data:`REPEAT_MIN_RUNS` runs of the
    same configuration (every column of the serving schema but the measured ones, the
    date and the source).

    Parameters
    ----------
    results : sequence of RowResult
        Predicted rows.

    Returns
    -------
    list of (int, float) or None
        Per row: runs of its configuration [count] and measured output throughput over
        their median [-]; None where not compared.
    """
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(results):
        if r.kind == "serving" and r.measured_throughput:
            key = tuple(getattr(r.m, f, None) for f in CONFIGURATION_COLUMNS)
            groups.setdefault(key, []).append(i)
    out: list[tuple[int, float] | None] = [None] * len(results)
    for idx in groups.values():
        if len(idx) < REPEAT_MIN_RUNS:
            continue
        med = float(np.median([results[i].measured_throughput for i in idx]))
        for i in idx:
            out[i] = (len(idx), float(results[i].measured_throughput) / med)
    return out


def report(results: list[RowResult]) -> dict[str, Any]:
    """Median, p90 and max absolute % error of throughput, TPOT, TTFT and power.

    Also ``low_repeats``: the serving rows measured below :data:`REPEAT_LOW_FRAC` of
    their configuration's median run (:func:`repeat_ratios`), and
    ``throughput_without_low_repeats``: the throughput errors of the other rows. Both
    are information on the data; the fit and the main figures keep every row.

    Parameters
    ----------
    results : list of RowResult
        Predicted rows.

    Returns
    -------
    dict
        ``throughput``, ``tpot``, ``ttft``, ``power`` -> :func:`summary` of the absolute
        errors [%]; ``flagged``, ``low_repeats`` [rows]; ``throughput_without_low_repeats``
        [%].
    """
    ratios = repeat_ratios(results)
    low = [i for i, q in enumerate(ratios) if q is not None and q[1] < REPEAT_LOW_FRAC]
    rest = [r for i, r in enumerate(results) if i not in set(low)]
    return {what: summary([r.error(what) for r in results])
            for what in ("throughput", "tpot", "ttft", "power")} | {
        "flagged": sum(1 for r in results if r.pred.flag),
        "low_repeats": len(low),
        "throughput_without_low_repeats": summary([r.error("throughput") for r in rest])}


def server_offline_pairs(rows: Sequence) -> list[tuple[str, int, int]]:
    """MLPerf configurations measured in both the Server and the Offline scenario.

    A phase row with a TPOT limit (``tpot_ms``) is a Server (or Interactive) row, one
    without an Offline row. Rows of one configuration share accelerator, model,
    precision, run date (``as_of``) and power cap (MLPerf Power MaxQ runs pair among
    themselves); where a configuration has several Offline rows, the one with the
    Server row's GPUs per replica is taken, and none if that is not one row.

    Parameters
    ----------
    rows : sequence of Measurement or ServingMeasurement
        Serving rows are ignored.

    Returns
    -------
    list of (str, int, int)
        (label, index of the Server row [-], index of the Offline row [-]), in row
        order.
    """
    def key(m) -> tuple:
        return (m.hardware, m.model, str(getattr(m.precision, "value", m.precision)),
                m.date, getattr(m, "power_cap_w", None))

    offline: dict[tuple, list[int]] = {}
    for i, m in enumerate(rows):
        if m.kind == "phase" and not m.tpot_ms:
            offline.setdefault(key(m), []).append(i)
    out = []
    for i, m in enumerate(rows):
        if m.kind != "phase" or not m.tpot_ms:
            continue
        cand = offline.get(key(m), [])
        if len(cand) > 1:
            cand = [j for j in cand if rows[j].gpus == m.gpus]
        if len(cand) != 1:
            continue
        hw, model, prec, date, cap = key(m)
        label = f"{hw} {model} {prec} {date}" + (f" MaxQ {cap:g} W" if cap else "")
        out.append((f"{label}, TPOT {m.tpot_ms:g} ms", i, cand[0]))
    return out


def _per_gpu(value: float | None, gpus: int) -> float | None:
    if value is None or not np.isfinite(value) or value <= 0:
        return None
    return value / gpus


def server_offline_ratios(results: Sequence[RowResult]) -> list[dict[str, Any]]:
    """Server/Offline throughput ratio per GPU, predicted against measured, per pair.

    Throughput per GPU of each row (a configuration's two rows may run replicas of
    different sizes); the pairs of :func:`server_offline_pairs`. A pair whose measured
    throughput is missing is left out.

    Parameters
    ----------
    results : sequence of RowResult
        Predicted rows.

    Returns
    -------
    list of dict
        Per pair, in row order: ``configuration`` (label), ``server_row`` and
        ``offline_row`` (indices into ``results``), ``measured`` and ``predicted``
        (ratios [-]; ``predicted`` None where a row has no prediction) and ``abs_diff``
        (|predicted - measured| [-], or None).
    """
    rows = [r.m for r in results]
    out = []
    for label, s, o in server_offline_pairs(rows):
        ms = _per_gpu(results[s].measured_throughput, rows[s].gpus)
        mo = _per_gpu(results[o].measured_throughput, rows[o].gpus)
        if ms is None or mo is None:
            continue
        ps = _per_gpu(results[s].predicted_throughput, rows[s].gpus)
        po = _per_gpu(results[o].predicted_throughput, rows[o].gpus)
        ratio = None if ps is None or po is None else ps / po
        out.append({"configuration": label, "server_row": s, "offline_row": o,
                    "measured": ms / mo, "predicted": ratio,
                    "abs_diff": None if ratio is None else abs(ratio - ms / mo)})
    return out


def power_error_by_vendor(results, catalog) -> dict[str, dict]:
    """Power error of measured rows per accelerator vendor (basis: operating point).

    Parameters
    ----------
    results : list of RowResult
        Validated rows; those without measured or predicted power are left out.
    catalog : Catalog
        Supplies each accelerator's ``vendor``.

    Returns
    -------
    dict
        Vendor -> :func:`~dcplan.perf.measurements.summary` of the signed % errors.
    """
    errs: dict[str, list[float]] = {}
    for r in results:
        e = r.error("power")
        if e is None or not np.isfinite(e):
            continue
        vendor = catalog.get("accelerators", r.m.hardware).vendor
        errs.setdefault(vendor, []).append(float(e))
    return {v: summary(e) for v, e in sorted(errs.items())}


# ------------------------------------------------ errors by scale-up domain and load

# An accelerator whose platform domain is larger than a board (BOARD_DOMAIN, from
# dcplan.perf.measurements: NVL72 and up) is rack-scale in error_splits.

#: Bands of requests in flight of serving rows: (largest concurrency in the band, or
#: None for no limit; label).
CONCURRENCY_BANDS = ((64, "<= 64"), (512, "65-512"), (None, "> 512"))
#: Band of the phase rows (MLPerf and the wide-EP runs: no requests-in-flight figure).
PHASE_BAND = "phase rows (MLPerf, wide EP)"
RACK_SCALE = f"rack-scale (domain > {BOARD_DOMAIN} GPUs)"
BOARD = f"{BOARD_DOMAIN}-GPU board"
#: Splits of :func:`error_groups`, in their order.
ERROR_SPLITS = ("all", "domain", "concurrency", "domain x concurrency")


def domain_class(domain: int | None) -> str:
    """Scale-up class of a platform domain: :data:`RACK_SCALE` or :data:`BOARD`.

    Parameters
    ----------
    domain : int or None
        GPUs of the accelerator's scale-up domain [GPUs] (None: unknown, read as a
        board, as :func:`dcplan.perf.measurements.row_domain` reads it).

    Returns
    -------
    str
    """
    return RACK_SCALE if (domain or BOARD_DOMAIN) > BOARD_DOMAIN else BOARD


def concurrency_band(m) -> str:
    """Band of requests in flight of a row (:data:`CONCURRENCY_BANDS`).

    Parameters
    ----------
    m : Measurement or ServingMeasurement
        A row (``kind`` and, for serving rows, ``concurrency`` [requests]).

    Returns
    -------
    str
        The band's label; :data:`PHASE_BAND` for phase rows.
    """
    if m.kind != "serving":
        return PHASE_BAND
    for top, label in CONCURRENCY_BANDS:
        if top is None or m.concurrency <= top:
            return label
    raise AssertionError("the last band has no limit")


def signed_stats(errors: Sequence[float | None]) -> dict[str, float | int | None]:
    """Signed median, median and 90th-percentile |error| of signed % errors.

    Parameters
    ----------
    errors : sequence of float or None
        Signed errors (predicted / measured - 1) [%]; None and non-finite ones are left
        out.

    Returns
    -------
    dict
        ``signed`` (median signed error, the bias), ``median``, ``p90`` (of |error|)
        [%], None without errors, and ``n`` (errors used) [count].
    """
    e = np.array([x for x in errors if x is not None and np.isfinite(x)], float)
    if not len(e):
        return {"signed": None, "median": None, "p90": None, "n": 0}
    a = np.abs(e)
    return {"signed": float(np.median(e)), "median": float(np.median(a)),
            "p90": float(np.percentile(a, 90)), "n": int(len(e))}


def error_groups(rows: Sequence, domain_of: Callable[[str], int | None]
                 ) -> list[tuple[str, str, list[int]]]:
    """Rows grouped by scale-up domain, by requests in flight and by both.

    Parameters
    ----------
    rows : sequence of Measurement or ServingMeasurement
        The rows (``hardware``, ``kind``, serving rows' ``concurrency``).
    domain_of : callable
        Accelerator id -> GPUs of its platform's scale-up domain [GPUs] (None: unknown).

    Returns
    -------
    list of (str, str, list of int)
        (split, value, row indices [index from 0]): split ``all`` (every row), ``domain``
        (:data:`BOARD`, :data:`RACK_SCALE`), ``concurrency`` (:data:`CONCURRENCY_BANDS`,
        then :data:`PHASE_BAND`) and ``domain x concurrency`` (value ``"<domain>,
        <band>"``), in that order; within a split boards before rack scale and bands in
        order. Groups without rows are left out.
    """
    groups: dict[tuple[str, str], list[int]] = {("all", "all"): list(range(len(rows)))}
    for i, m in enumerate(rows):
        dom = domain_class(domain_of(m.hardware))
        band = concurrency_band(m)
        for key in (("domain", dom), ("concurrency", band),
                    ("domain x concurrency", f"{dom}, {band}")):
            groups.setdefault(key, []).append(i)
    values = [BOARD, RACK_SCALE] + [lab for _, lab in CONCURRENCY_BANDS] + [PHASE_BAND]

    def rank(item) -> tuple:
        (split, value), _ = item
        parts = value.split(", ")
        return (ERROR_SPLITS.index(split),
                tuple(values.index(p) if p in values else len(values) for p in parts), value)

    return [(s, v, idx) for (s, v), idx in sorted(groups.items(), key=rank)]


def error_splits(results: Sequence[RowResult], catalog: Catalog,
                 what: Sequence[str] = ("throughput", "ttft")) -> dict[str, list[dict]]:
    """Signed median, median and p90 |error| by scale-up domain and requests in flight.

    What a held-out check reads beside the overall figures: whether the model is biased
    (signed median) at rack scale or under load, not only how far off it is.

    Parameters
    ----------
    results : sequence of RowResult
        Predicted rows.
    catalog : Catalog
        Accelerators and racks (each accelerator's scale-up domain,
        :func:`~dcplan.perf.measurements.scaleup_domain`).
    what : sequence of str
        Figures to split (:meth:`RowResult.error`): ``throughput``, ``tpot``, ``ttft``.

    Returns
    -------
    dict of str to list of dict
        Per figure, per group of :func:`error_groups` with an error: ``split``,
        ``value``, ``rows`` [count] and ``median_signed_pct``, ``median_abs_pct``,
        ``p90_abs_pct`` [%].
    """
    domains = {h: scaleup_domain(catalog, h) for h in {r.m.hardware for r in results}}
    groups = error_groups([r.m for r in results], domains.get)
    out: dict[str, list[dict]] = {}
    for w in what:
        out[w] = []
        for split, value, idx in groups:
            st = signed_stats([results[i].error(w) for i in idx])
            if st["n"]:
                out[w].append({"split": split, "value": value, "rows": st["n"],
                               "median_signed_pct": st["signed"],
                               "median_abs_pct": st["median"], "p90_abs_pct": st["p90"]})
    return out


def _physics_in_use(rows: Sequence, wide: np.ndarray | None = None,
                    deepgemm: np.ndarray | None = None) -> list[str]:
    """Physics parameters some row depends on.

    ``wide`` marks the rows that decode over a group wider than a board inside one domain
    (:func:`wide_decode_group`); without it ``wide_ep_comm_ratio`` is not fitted.
    ``deepgemm`` marks the rows whose recipe ran the MoE on DeepGEMM
    (:attr:`Predictor.deepgemm`); without it ``deepgemm_moe_time_ratio`` is not fitted.
    """
    names = []
    serving = [m for m in rows if m.kind == "serving"]
    moe = any(m.decode_ep > 1 or m.prefill_ep > 1 or m.model.startswith("deepseek")
              for m in serving)
    for name in PHYSICS_FIT:
        if name in ("grouped_gemm_pad_tokens", "moe_imbalance_frac") and not moe:
            continue
        if name.startswith("mtp") and not any(m.speculative == "mtp" for m in serving):
            continue
        if name in ("closed_loop_arrival_cv2", "tpot_cv_frac") and not serving:
            continue
        if name == "wide_ep_comm_ratio" and (wide is None or not np.any(wide)):
            continue
        if name == "deepgemm_moe_time_ratio" and (deepgemm is None or not np.any(deepgemm)):
            continue
        names.append(name)
    return names


#: Instances larger than this many GPUs are "wide" (expert parallelism across a rack or
#: across nodes); their rows form their own balancing group, so that the few wide runs
#: are not outweighed by hundreds of 8-GPU-board runs of the same accelerator.
WIDE_INSTANCE_GPUS = 8


def instance_gpus(m) -> int:
    """GPUs of the largest model instance of a measurement row [-].

    Parameters
    ----------
    m : Measurement or ServingMeasurement
        A measurement row.

    Returns
    -------
    int
        GPUs of the largest instance [GPUs].
    """
    if m.kind == "phase":
        return int(m.gpus)
    return int(max(m.prefill_tp or 1, m.prefill_ep or 1, m.decode_tp or 1, m.decode_ep or 1))


def balance_weights(rows: Sequence, catalog: Catalog,
                    hardware_balance: float = HARDWARE_BALANCE) -> np.ndarray:
    """Row weights balancing model families, accelerators and instance scale.

    Dense and MoE rows carry equal total weight, and within a family the rows of one
    accelerator at one scale (instances of at most :data:`WIDE_INSTANCE_GPUS` GPUs, or
    wider) weigh ``n_h^-hardware_balance`` each (squared).

    ``w^2 = N / (G W_f) n_h^-b`` for a row of family ``f`` (``G`` families, ``N`` rows)
    in a group with ``n_h`` rows of that family, ``W_f = sum_h n_h^(1-b)`` (so each
    family's squared weights sum to ``N / G``). Residuals are squared, hence the root.

    Parameters
    ----------
    rows : sequence of Measurement or ServingMeasurement
        Measurement rows (phase-level and/or serving).
    catalog : Catalog
        With every model the rows name (dense or MoE).
    hardware_balance : float
        Row-balance exponent ``b`` [-].

    Returns
    -------
    ndarray
        Row weights ``w`` (residual multipliers) [-], in row order.
    """
    fam = ["moe" if catalog.get("models", m.model).is_moe else "dense" for m in rows]
    grp = [(m.hardware, instance_gpus(m) > WIDE_INSTANCE_GPUS) for m in rows]
    n_fh: dict[tuple[str, tuple], int] = {}
    for f, h in zip(fam, grp, strict=True):
        n_fh[(f, h)] = n_fh.get((f, h), 0) + 1
    fams = sorted(set(fam))
    w_f = {f: sum(c ** (1.0 - hardware_balance) for (g, _), c in n_fh.items() if g == f)
           for f in fams}
    n, g = len(rows), len(fams)
    return np.array([np.sqrt(n / (g * w_f[f]) * n_fh[(f, h)] ** -hardware_balance)
                     for f, h in zip(fam, grp, strict=True)])


# ---------------------------------------------------------------- the fit space


def separable_engines(rows: Sequence, engines: Sequence[str]) -> list[str]:
    """The engines whose offsets the rows can tell from the accelerators and models.

    An engine is separable where some accelerator and model it ran was also run by
    another engine: only there do the rows compare engines on the same work. An engine
    alone on its accelerators and models (vLLM in AMD's MLPerf Llama 2 70B results, the
    only dense AMD rows) would take up whatever its rows differ by, the accelerator's
    or the model kind's share included, and could then become its vendor's planning
    engine on that alone.

    Parameters
    ----------
    rows : sequence of Measurement or ServingMeasurement
        The fitted rows.
    engines : sequence of str
        Each row's engine ('' for none), in row order.

    Returns
    -------
    list of str
        The separable engines, sorted.
    """
    ran: dict[str, set[tuple[str, str]]] = {}
    for m, e in zip(rows, engines, strict=True):
        if e:
            ran.setdefault(e, set()).add((m.hardware, m.model))
    return sorted(e for e, work in ran.items()
                  if any(work & other for o, other in ran.items() if o != e))


@dataclass
class _Column:
    name: str
    lo: float
    hi: float
    centre: float
    weight: float
    support: np.ndarray          # bool over rows


class _Space:
    """Columns of the joint fit and the map from a column vector to per-row parameters.

    ``ln p[row] = const_p[row] + A_p[row] @ x`` for every hardware parameter ``p``;
    physics parameters are ``exp(x)`` of their columns.
    """

    def __init__(self, rows: Sequence, catalog: Catalog, defaults: PerfDefaults,
                 per_vendor: bool, per_hardware: bool, use_power: bool, prior_weight: float,
                 level_prior: dict[str, float], deepgemm: np.ndarray | None = None):
        self.rows = list(rows)
        n = len(self.rows)
        self.defaults = defaults
        spec = defaults.software
        accs = [_accelerator(catalog, m.hardware) for m in self.rows]
        self.hw = np.array([m.hardware for m in self.rows], dtype=object)
        self.vendor = np.array([a.vendor for a in accs], dtype=object)
        self.arch = np.array([a.architecture or "" for a in accs], dtype=object)
        self.framework = np.array([getattr(m, "framework", "") or "" for m in self.rows],
                                  dtype=object)
        self.engine = np.array([spec.engine_of(f) if f else "" for f in self.framework],
                               dtype=object)
        ref = year_fraction(spec.reference_date) or 0.0
        years = [year_fraction(m.date) for m in self.rows]
        self.dates = [m.date for m in self.rows if year_fraction(m.date) is not None]
        # a row without a date is read at the latest date (the planning date)
        latest = max((y for y in years if y is not None), default=ref)
        self.years = np.array([(latest if y is None else y) - ref for y in years])
        self.cols: list[_Column] = []
        self.terms: dict[str, list[tuple[int, np.ndarray]]] = {p: [] for p in HW_PARAM_NAMES}
        base = defaults.default
        self.const = {p: np.array([np.log(max(getattr(defaults.for_hardware(h), p), 1e-30))
                                   for h in self.hw]) for p in HW_PARAM_NAMES}
        all_rows = np.ones(n, bool)
        self.fitted = list(THROUGHPUT_PARAMS)

        def add(name, lo, hi, centre, weight, support, params, value=None):
            j = len(self.cols)
            self.cols.append(_Column(name, lo, hi, centre, weight, support))
            for p in params:
                self.terms[p].append((j, support.astype(float) if value is None else value))
            return j

        self.pooled = {}
        for p in THROUGHPUT_PARAMS:
            lo, hi = FIT_BOUNDS[p]
            c = np.log(max(getattr(base, p), lo))
            self.const[p] = self.const[p] - np.log(max(getattr(base, p), 1e-30))
            self.pooled[p] = add(f"pooled:{p}", np.log(lo), np.log(hi), c, prior_weight,
                                 all_rows, [p])
        # nested levels; a level whose rows equal its parent's is not fitted
        self.level: dict[tuple[str, str], dict[str, int]] = {}

        # rows whose TP/EP group spans scale-up domains (collectives over scale-out)
        self.spans = np.array([spans_scaleup(m, catalog) for m in self.rows])
        # rows that decode over a group wider than a board inside one domain (the rack's
        # all-to-all, wide_ep_comm_ratio)
        self.wide = np.array([wide_decode_group(m, catalog, defaults.serving.board_ep_gpus)
                              for m in self.rows], dtype=bool)
        apart = self.spans | self.wide

        def level(kind, key, mask, parent_mask):
            # the cross-domain level is all spanning rows; any other level counts the
            # rows inside one board-wide group, which alone tell its speed from the
            # cross-domain penalty and the wide all-to-all (else one rack-scale row would
            # give its accelerator a level of its own and take up the ratio's share)
            own = mask if kind == "cross_domain" else mask & ~apart
            if own.sum() < MIN_LEVEL_ROWS or (mask == parent_mask).all():
                return
            self.level[(kind, key)] = {
                p: add(f"{kind}:{key}:{p}", -OFFSET_BOUND, OFFSET_BOUND, 0.0,
                       level_prior[kind], mask, [p]) for p in THROUGHPUT_PARAMS}

        def own_rows(mask) -> int:
            return int((mask & ~apart).sum())

        for v in sorted(set(self.vendor)):
            vm = self.vendor == v
            # A vendor level carries what its architectures share, so it is fitted only
            # where at least two of them can be told apart: two architectures with a
            # level of their own (or one and the vendor's accelerators of no
            # architecture). With one, the level could not be told from that
            # architecture's, and the equal pulls would hand half of that
            # architecture's offset to every other architecture of the vendor, a new
            # one included; its rows then fit that architecture's level only, and a new
            # architecture of the vendor gets the pooled values.
            archs = set(self.arch[vm])
            groups = sum(own_rows(vm & (self.arch == a)) >= MIN_LEVEL_ROWS
                         for a in archs - {""})
            groups += own_rows(vm & (self.arch == "")) >= MIN_LEVEL_ROWS
            own_vendor = per_vendor and groups >= 2
            if own_vendor:
                level("vendor", v, vm, all_rows)
            for a in sorted(archs - {""}):
                am = vm & (self.arch == a)
                level("architecture", a, am, vm if own_vendor else all_rows)
                if per_hardware:
                    for h in sorted(set(self.hw[am])):
                        level("hardware", h, am & (self.hw == h), am)
            if per_hardware:
                for h in sorted(set(self.hw[vm & (self.arch == "")])):
                    level("hardware", h, vm & (self.hw == h), vm if own_vendor else all_rows)
        # rows whose TP/EP group spans scale-up domains: one shared offset level, so
        # the cross-domain penalty (which the scale-out physics under-predicts) is not
        # taken up by the architecture or accelerator of the rows that happen to have it
        level("cross_domain", "all", self.spans, all_rows)
        # software: engine and framework offsets per knob, trend per knob
        self.knobs = list(spec.knobs)
        self.engine_cols: dict[str, dict[str, int]] = {}
        engines = separable_engines(self.rows, self.engine)
        # an engine no other engine shares an accelerator and model with cannot be told
        # from them: its rows run at the separable engines' typical (mean) offset, as an
        # engine the fit never saw is read (SoftwareFit.typical_offset)
        self.unseparated = sorted(set(self.engine) - {""} - set(engines))
        if self.knobs and len(engines) > 1:
            for e in engines:
                em = self.engine == e
                self.engine_cols[e] = {k: add(f"engine:{e}:{k}", -OFFSET_BOUND, OFFSET_BOUND,
                                              0.0, level_prior["engine"], em, names)
                                       for k, names in self.knobs}
                for f in sorted(set(self.framework[em]) - {e}):
                    fm = self.framework == f
                    if (fm == em).all():
                        continue
                    self.engine_cols[f] = {k: add(f"framework:{f}:{k}", -OFFSET_BOUND,
                                                  OFFSET_BOUND, 0.0, level_prior["framework"],
                                                  fm, names) for k, names in self.knobs}
        um = np.isin(self.engine, self.unseparated)
        if um.any() and len(self.engine_cols) > 1:
            bases = [e for e in engines if e in self.engine_cols]
            for e in bases:
                for k, names in self.knobs:
                    j = self.engine_cols[e][k]
                    self.cols[j].support = self.cols[j].support | um
                    for q in names:
                        self.terms[q].append((j, um / len(bases)))
        self.trend_cols: dict[str, int] = {}
        if self.knobs and len(set(np.round(self.years, 3))) > 1:
            moved = self.years != 0
            for k, names in self.knobs:
                self.trend_cols[k] = add(f"trend:{k}", -OFFSET_BOUND, OFFSET_BOUND, 0.0,
                                         level_prior["trend"], moved, names, self.years)
        # physics
        self.physics_cols = {}
        for q in _physics_in_use(self.rows, self.wide, deepgemm):
            lo, hi = FIT_BOUNDS[q]
            self.physics_cols[q] = add(f"physics:{q}", np.log(lo), np.log(hi),
                                       np.log(max(getattr(defaults.physics, q), lo)),
                                       PHYSICS_PRIOR_WEIGHT.get(q, prior_weight),
                                       deepgemm if q == "deepgemm_moe_time_ratio" else all_rows,
                                       [])
        # power curve, per accelerator with power rows
        self.power_cols: dict[str, dict[str, int]] = {}
        if use_power and per_hardware:
            for h in sorted(set(self.hw)):
                hm = self.hw == h
                if not any(self.rows[i].power_w for i in np.flatnonzero(hm)):
                    continue
                self.power_cols[h] = {}
                for p in POWER_PARAMS:
                    lo, hi = FIT_BOUNDS[p]
                    c = np.log(max(getattr(defaults.for_hardware(h), p), lo))
                    self.const[p] = np.where(hm, 0.0, self.const[p])
                    self.power_cols[h][p] = add(f"power:{h}:{p}", np.log(lo), np.log(hi), c,
                                                prior_weight, hm, [p])
        c = len(self.cols)
        self.A = {}
        for p, terms in self.terms.items():
            if terms:
                a = np.zeros((n, c))
                for j, val in terms:
                    a[:, j] += val
                self.A[p] = a
        self.x0 = np.array([col.centre for col in self.cols])
        self.lo = np.array([col.lo for col in self.cols])
        self.hi = np.array([col.hi for col in self.cols])
        self.w = np.array([col.weight for col in self.cols])
        self.support = np.array([col.support for col in self.cols])

    def row_params(self, x: np.ndarray) -> HardwareParams:
        """Per-row parameters, fields ``(K, n)`` for ``x`` of shape ``(K, columns)``."""
        x = np.atleast_2d(x)
        out = {}
        for p in HW_PARAM_NAMES:
            logp = self.const[p][None, :] + (x @ self.A[p].T if p in self.A else 0.0)
            lo, hi = PARAM_BOUNDS[p]
            out[p] = np.clip(np.exp(logp), lo, hi)
            if p not in self.A:
                out[p] = np.broadcast_to(out[p], (x.shape[0], len(self.rows)))
        return HardwareParams(**out)

    def physics(self, x: np.ndarray) -> PhysicsParams:
        """Physics parameters for ``x`` of shape ``(K, columns)`` (fields ``(K,)``)."""
        x = np.atleast_2d(x)
        base = _ph_names(self.defaults.physics)
        for q, j in self.physics_cols.items():
            base[q] = np.exp(x[:, j])
        return PhysicsParams(**base)

    def groups(self) -> list[list[int]]:
        """Columns in groups whose rows do not overlap (perturbed together)."""
        order = np.argsort(-self.support.sum(axis=1), kind="stable")
        groups: list[tuple[list[int], np.ndarray]] = []
        for j in order:
            s = self.support[j]
            for cols, union in groups:
                if not (union & s).any():
                    cols.append(int(j))
                    union |= s
                    break
            else:
                groups.append(([int(j)], s.copy()))
        return [cols for cols, _ in groups]


def _fit(space: _Space, pr: Predictor, max_nfev: int, start_seed: int | None = None,
         start_sd: float = START_SD):
    """Robust least squares over the space's columns with a grouped, batched Jacobian.

    The search starts at the prior (``space.x0``), or, with ``start_seed``, there plus
    normal noise of ``start_sd`` per column [ln units] (the prior pull stays at
    ``space.x0``): how far equally good fits lie apart (bench/calibration_starts.py).
    """
    groups = space.groups()
    owner_support = space.support[:, pr.owner]          # columns x residual entries
    cache: dict[bytes, np.ndarray] = {}

    def data_res(xs: np.ndarray) -> np.ndarray:
        return pr.residuals(space.row_params(xs), space.physics(xs))

    def fun(x: np.ndarray) -> np.ndarray:
        key = x.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = data_res(x[None, :])[0]
        return np.concatenate([cache[key], space.w * (x - space.x0)])

    def jac(x: np.ndarray) -> np.ndarray:
        r0 = fun(x)[: len(pr.owner)]
        xs = np.repeat(x[None, :], len(groups), axis=0)
        steps = np.where(x + DIFF_STEP <= space.hi, DIFF_STEP, -DIFF_STEP)
        for g, cols in enumerate(groups):
            xs[g, cols] += steps[cols]
        rs = data_res(xs)
        jm = np.zeros((len(r0) + len(x), len(x)))
        for g, cols in enumerate(groups):
            for j in cols:
                m = owner_support[j]
                jm[: len(r0)][m, j] = (rs[g, m] - r0[m]) / steps[j]
        jm[len(r0) + np.arange(len(x)), np.arange(len(x))] = space.w
        return jm

    x0 = space.x0
    if start_seed is not None:
        x0 = x0 + np.random.default_rng(start_seed).normal(0.0, start_sd, size=x0.shape)
    x0 = np.clip(x0, space.lo + 1e-9, space.hi - 1e-9)
    sol = least_squares(fun, x0, jac=jac, bounds=(space.lo, space.hi), method="trf",
                        loss="soft_l1", f_scale=LOSS_SCALE, max_nfev=max_nfev)
    return sol.x, sol


def _planning(space: _Space, x: np.ndarray) -> tuple[dict[str, str], dict[str, dict[str, float]]]:
    """Planning engine per vendor (and ``default``) and every engine's knob offsets."""
    offsets: dict[str, dict[str, float]] = {}
    for e, cols in space.engine_cols.items():
        base = space.defaults.software.engine_of(e)
        own = {k: float(x[j]) for k, j in cols.items()}
        if e != base and base in space.engine_cols:
            own = {k: own[k] + float(x[space.engine_cols[base][k]]) for k in own}
        offsets[e] = own

    # a knob's offset counts towards faster serving by the sign of its parameters
    # (overheads and hand-over times: smaller is faster; efficiencies: larger)
    sign = {k: float(faster_sign(names[0]) or 1) for k, names in space.knobs}

    def score(e: str) -> float:
        o = offsets.get(e, {})
        return sum(o.get(k, 0.0) * sign[k] for k, _ in space.knobs)

    plan: dict[str, str] = {}
    bases = [e for e in sorted(set(space.engine) - {""}) if e in space.engine_cols]
    if bases:
        plan["default"] = max(bases, key=score)
        for v in sorted(set(space.vendor)):
            cand = sorted(set(space.engine[space.vendor == v]) & set(bases))
            if cand:
                plan[v] = max(cand, key=score)
    return plan, offsets


def _dated(date: str) -> str:
    """``YYYY-MM[-DD]`` as ``YYYY-MM-DD`` (day 15 when missing)."""
    parts = date.strip().split("-")
    return f"{parts[0]}-{parts[1]}-{parts[2] if len(parts) > 2 else '15'}"


def _calibration(space: _Space, x: np.ndarray, source: str, meta: dict) -> Calibration:
    spec = space.defaults.software
    plan, offsets = _planning(space, x)
    trend = {k: float(x[j]) for k, j in space.trend_cols.items()}
    ref = year_fraction(spec.reference_date) or 0.0
    plan_date = max(space.dates, key=lambda d: year_fraction(d)) if space.dates else ""
    plan_year = year_fraction(plan_date) if plan_date else ref

    def plan_log(vendor: str | None) -> dict[str, float]:
        eng = plan.get(vendor or "", plan.get("default", ""))
        o = offsets.get(eng, {})
        out: dict[str, float] = {}
        for k, names in space.knobs:
            f = o.get(k, 0.0) + trend.get(k, 0.0) * (plan_year - ref)
            for n in names:
                out[n] = out.get(n, 0.0) + f
        return out

    def values(levels: list[tuple[str, str]], vendor: str | None) -> dict[str, float]:
        adj = plan_log(vendor)
        out = {}
        for p in THROUGHPUT_PARAMS:
            logp = x[space.pooled[p]] + adj.get(p, 0.0)
            for lv in levels:
                if lv in space.level:
                    logp += x[space.level[lv][p]]
            lo, hi = PARAM_BOUNDS[p]
            out[p] = float(np.clip(np.exp(logp), lo, hi))
        return out

    default = values([], "default")
    vendors, archs, hardware = {}, {}, {}
    for v in sorted(set(space.vendor)):
        vendors[v] = values([("vendor", v)], v)
        vm = space.vendor == v
        for a in sorted(set(space.arch[vm]) - {""}):
            archs[a] = values([("vendor", v), ("architecture", a)], v)
        for h in sorted(set(space.hw[vm])):
            a = str(space.arch[space.hw == h][0])
            levels = [("vendor", v)] + ([("architecture", a)] if a else []) + [("hardware", h)]
            hardware[h] = values(levels, v)
            for p, j in space.power_cols.get(h, {}).items():
                hardware[h][p] = float(np.exp(x[j]))
    software = None
    if space.knobs:
        software = SoftwareFit(
            knobs=tuple(space.knobs),
            engines=tuple(sorted((e, tuple(sorted(o.items()))) for e, o in offsets.items())),
            base_engine=spec.base_engine,
            trend_per_year=tuple(sorted(trend.items())),
            reference_date=_dated(plan_date) if plan_date else spec.reference_date,
            earliest_date=_dated(min(space.dates, key=lambda d: year_fraction(d)))
            if space.dates else "",
            planning_engine=tuple(sorted(plan.items())),
            cross_domain=tuple(sorted(
                (p, float(x[j])) for p, j in space.level.get(("cross_domain", "all"),
                                                              {}).items())))
    physics = {q: float(np.exp(x[j])) for q, j in space.physics_cols.items()}
    return Calibration.from_dicts(hardware, default, source, meta, physics, vendors, archs,
                                  software)


def fit_basis(rows: Sequence, catalog: Catalog, board_gpus: int) -> FitBasis:
    """What ``rows`` cover, for naming the figures a fit on them extrapolates.

    The widest MoE expert-parallel groups inside one scale-up domain, decode and
    prefill apart (phase rows' ``ep`` by their phase, serving rows' ``decode_ep`` and
    ``prefill_ep``; a group wider than the row's domain,
    :func:`dcplan.perf.measurements.row_domain`, spans domains over the scale-out
    network and does not count); per architecture of the rows' accelerators, the kinds
    of model (dense, MoE) they run; the fewest sequences per GPU that a decode group wider
    than ``board_gpus`` inside one domain runs at (serving rows: ``concurrency`` over
    the decode GPUs, all GPUs when aggregated; decode phase rows: ``batch`` over
    ``gpus``); and of the disaggregated serving rows (the KV hand-over's): the largest
    domain, the longest prompt and the models.

    Parameters
    ----------
    rows : sequence of Measurement or ServingMeasurement
        The rows a calibration is fitted on.
    catalog : Catalog
        Accelerators and racks (the scale-up domains).
    board_gpus : int
        GPUs of one board (``serving.board_ep_gpus``) [GPUs].

    Returns
    -------
    FitBasis
        Zeros and no models where no row has such a group or hand-over.
    """
    widest = {"decode": 0, "prefill": 0}
    wide_seqs: list[float] = []       # sequences per GPU of wide decode groups in a domain
    for m in rows:
        domain = row_domain(m, catalog)
        if m.kind == "phase":
            phase = m.phase if m.phase in widest else "decode"
            groups = [(phase, m.ep, m.batch / m.gpus if phase == "decode" else 0.0)]
        else:
            seqs = m.concurrency / (m.decode_gpus if m.disaggregated else m.gpus)
            groups = [("decode", m.decode_ep, seqs), ("prefill", m.prefill_ep, 0.0)]
        for phase, ep, seqs in groups:
            if ep and int(ep) <= domain:
                widest[phase] = max(widest[phase], int(ep))
                if phase == "decode" and int(ep) > board_gpus:
                    wide_seqs.append(float(seqs))
    dis = [m for m in rows if getattr(m, "disaggregated", False)]
    kinds: dict[str, set[str]] = {}
    for m in rows:
        arch = getattr(catalog.get("accelerators", m.hardware), "architecture", None)
        if arch:
            kinds.setdefault(arch, set()).add(model_kind(catalog.get("models", m.model).is_moe))
    return FitBasis(
        domain_ep_max=widest["decode"], prefill_domain_ep_max=widest["prefill"],
        wide_decode_seqs_per_gpu_min=min(wide_seqs, default=0.0),
        handover_domain_max=max((row_domain(m, catalog) for m in dis), default=0),
        handover_prompt_tokens_max=float(max((m.input_tokens for m in dis), default=0)),
        handover_models=tuple(sorted({m.model for m in dis})),
        architecture_kinds=tuple(sorted((a, tuple(sorted(k))) for a, k in kinds.items())))


def calibrate(rows: list, catalog: Catalog, defaults: PerfDefaults, source: str = "",
              prior_weight: float = PRIOR_WEIGHT, per_hardware: bool = True,
              max_nfev: int = MAX_NFEV, per_vendor: bool = True,
              level_prior: dict[str, float] | None = None,
              hardware_balance: float = HARDWARE_BALANCE, *, benchmarks: Benchmarks,
              start_seed: int | None = None, start_sd: float = START_SD,
              starts: int = 0, workers: int = 1,
              keep_inconsistent: bool = False) -> Calibration:
    """Fit the parameters to ``rows`` (phase-level and/or serving rows).

    A serving row whose throughput and median latencies break Little's law
    (:func:`dcplan.perf.measurements.breaks_little`: the requests in flight they imply
    lie outside ``LITTLE_RATIO_BOUNDS`` of the client's concurrency; the run lost
    requests or measured another window) is left out of the fit unless
    ``keep_inconsistent``: which of its figures is wrong is unknown, so none is fitted.

    Parameters
    ----------
    rows : list of Measurement or ServingMeasurement
        Measurement rows (phase-level and/or serving).
    catalog : Catalog
        With every model and accelerator the rows name.
    defaults : PerfDefaults
        Starting values, the values the pooled level is pulled towards, and the
        software knobs (``software:``).
    source : str
        Measurement file name(s), recorded in the calibration.
    prior_weight : float
        Weight of the pull of the pooled and physics values towards the defaults [per
        unit of ln parameter]; 0 fits the data alone.
    per_hardware : bool
        Fit accelerator-level offsets (and power).
    max_nfev : int
        Function evaluations of the fit [count].
    per_vendor : bool
        Fit vendor-level offsets.
    level_prior : dict, optional
        Weights of the levels' pulls towards zero (default :data:`LEVEL_PRIOR`).
    hardware_balance : float
        Row-balance exponent (:func:`balance_weights`) [-].
    benchmarks : Benchmarks
        What the rows' benchmarks ran (:class:`Predictor`).
    start_seed : int, optional
        Start the search away from the prior: each column plus normal noise of
        ``start_sd`` [ln units] drawn with this seed (the pull stays at the prior).
        None (default): start at the prior, as the shipped calibration does.
    start_sd : float
        Spread of that noise [ln units].
    starts : int
        Also fit from this many other starts (seeds 1..``starts`` with ``start_sd``,
        after the one of ``start_seed``) and keep the fit of lowest loss among those that
        did not stop on a steep slope (:func:`dcplan.perf.params.steep_stop`), or of
        lowest loss if all did: the finite-difference gradient does not see the kinks
        where a layout, batch or queue switches, and a fit from another start is the
        remedy (docs/perf.md, How well the data pin the fit). 0: one fit [count].
    workers : int
        Processes that fit the starts side by side; the fits and the one kept are the
        same as with one [count].
    keep_inconsistent : bool
        Fit the rows that break Little's law too (default: leave them out).

    Returns
    -------
    Calibration
        ``default`` = pooled values, ``vendor``/``architecture``/``hardware`` = each
        level's values (all at the planning engine and date), ``physics``, ``software``;
        its ``meta`` says how the fit went: ``rows`` (fitted), ``left_out_rows`` (rows
        left out for breaking Little's law), ``columns``, ``evaluations``
        [count], ``termination`` (the least-squares solver's message: the evaluation
        limit, or a step or cost change below tolerance) and
        ``first_order_optimality`` (the gradient's largest component there [-]),
        ``cost`` (the robust loss there [-]), ``start`` (where the search started);
        its ``basis`` what the rows cover (:func:`fit_basis`).
    """
    return calibrate_starts(
        rows, catalog, defaults, source, prior_weight, per_hardware, max_nfev, per_vendor,
        level_prior, hardware_balance, benchmarks=benchmarks, start_seed=start_seed,
        start_sd=start_sd, starts=starts, workers=workers,
        keep_inconsistent=keep_inconsistent)[0]


def kept_start(fits: Sequence[tuple[bool, float]]) -> int:
    """Which of several starts' fits a calibration keeps.

    The lowest loss among the fits that did not stop on a steep slope
    (:func:`dcplan.perf.params.steep_stop`), else the lowest of all; the first such in
    start order on a tie.

    Parameters
    ----------
    fits : sequence of (bool, float)
        Per start, in start order: whether its fit stopped on a steep slope, and its
        robust loss [-].

    Returns
    -------
    int
        The kept start's index [count from 0].
    """
    return min(range(len(fits)), key=lambda i: (fits[i][0], fits[i][1]))


def calibrate_starts(rows: list, catalog: Catalog, defaults: PerfDefaults, source: str = "",
                     prior_weight: float = PRIOR_WEIGHT, per_hardware: bool = True,
                     max_nfev: int = MAX_NFEV, per_vendor: bool = True,
                     level_prior: dict[str, float] | None = None,
                     hardware_balance: float = HARDWARE_BALANCE, *, benchmarks: Benchmarks,
                     start_seed: int | None = None, start_sd: float = START_SD,
                     starts: int = 0, workers: int = 1,
                     keep_inconsistent: bool = False
                     ) -> tuple[Calibration, list[Calibration]]:
    """:func:`calibrate`, and the fit of every start besides the one it keeps.

    How far held-out figures move with the start a fit keeps (bench/perf_accuracy.py,
    docs/perf.md "How well the data pin the fit"): fits from other starts reach losses
    within a few percent of each other and can predict rows they did not see quite
    differently.

    Parameters
    ----------
    rows, catalog, defaults, source, prior_weight, per_hardware, max_nfev, per_vendor, \
level_prior, hardware_balance, benchmarks, start_seed, start_sd, starts, workers, \
keep_inconsistent
        As :func:`calibrate`.

    Returns
    -------
    kept : Calibration
        What :func:`calibrate` returns.
    each : list of Calibration
        One per start, in start order (``start_seed``'s, then seeds 1..``starts``); the
        kept one is among them (the same object). Each other's ``meta`` holds ``start``,
        ``cost`` [-], ``first_order_optimality`` [-] and ``evaluations`` [count] of its
        own fit.
    """
    frac = defaults.serving.measurement_length_frac
    left_out = 0 if keep_inconsistent else sum(breaks_little(m, frac) for m in rows)
    if left_out:
        rows = [m for m in rows if not breaks_little(m, frac)]
    if left_out and not rows:
        raise InputError("every row breaks Little's law (its throughput and median "
                         "latencies disagree with its concurrency): nothing is left to "
                         "fit; fit them anyway with keep_inconsistent")
    weights = balance_weights(rows, catalog, hardware_balance)
    use_power = any(m.power_w for m in rows) and per_hardware
    pr = Predictor(rows, catalog, defaults, weights, use_power=use_power, benchmarks=benchmarks)
    space = _Space(rows, catalog, defaults, per_vendor, per_hardware, use_power, prior_weight,
                   {**LEVEL_PRIOR, **(level_prior or {})}, deepgemm=pr.deepgemm)
    seeds = [start_seed, *(k for k in range(1, starts + 1) if k != start_seed)]
    fits = []
    for seed, (x, sol) in zip(seeds, _map(partial(_fit, space, pr, max_nfev,
                                                  start_sd=start_sd), seeds, workers),
                              strict=True):
        steep = steep_stop({"first_order_optimality": sol.optimality, "cost": sol.cost})
        fits.append((steep is not None, float(sol.cost), seed, x, sol))
    _, _, seed, x, sol = fits[kept_start([(f[0], f[1]) for f in fits])]

    def start_words(k):
        return ("the a-priori values" if k is None else
                f"the a-priori values plus normal noise of sd {start_sd:g} ln units "
                f"(seed {k})")

    meta = {"rows": len(rows), "left_out_rows": left_out, "columns": len(space.cols),
            "evaluations": int(sol.nfev),
            "termination": str(sol.message), "first_order_optimality": float(sol.optimality),
            "cost": float(sol.cost), "start": start_words(seed),
            "rows_per_hardware": {h: int((space.hw == h).sum()) for h in sorted(set(space.hw))}}
    if starts:
        meta["starts"] = [{"start": "prior" if k is None else f"seed {k}",
                           "cost": c,
                           "first_order_optimality": float(so.optimality),
                           "steep": bool(st)} for st, c, k, _, so in fits]
    basis = fit_basis(rows, catalog, defaults.serving.board_ep_gpus)
    kept = replace(_calibration(space, x, source, meta), basis=basis)
    each = [kept if k == seed else replace(_calibration(
        space, xk, source, {"start": start_words(k), "cost": c,
                            "first_order_optimality": float(so.optimality),
                            "evaluations": int(so.nfev)}), basis=basis)
        for _, c, k, xk, so in fits]
    return kept, each


def _worker_signals() -> None:
    """In a worker process: leave Ctrl-C to the parent, which stops the workers.

    The worker ends quietly when the parent stops it (not through the command line's own
    SIGTERM handler, which the worker inherited).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _map(fn: Callable, items: Sequence, workers: int) -> list:
    """``[fn(i) for i in items]``, in up to ``workers`` processes when more than one.

    Ctrl-C reaches the parent alone; leaving the pool (on an interrupt or an error as
    on success) terminates the workers, so nothing keeps running or hangs.
    """
    if workers <= 1 or len(items) <= 1:
        return [fn(i) for i in items]
    with multiprocessing.Pool(min(workers, len(items)), initializer=_worker_signals) as pool:
        return pool.map(fn, items, chunksize=1)


def _fold_start(rows: list, catalog: Catalog, defaults: PerfDefaults,
                benchmarks: Benchmarks, fit: dict, cache: FoldCache | None,
                task: tuple[Any, list[int], int | None]
                ) -> tuple[bool, float, list[RowResult]]:
    """One start's fit without the rows ``idx`` of ``task = (group, idx, seed)``.

    Returns whether the fit stopped on a steep slope, its loss [-] and the rows ``idx``
    as it predicts them; read from and written to ``cache`` when given.
    """
    group, idx, seed = task
    if cache is not None:
        hit = cache.get(group, seed)
        if hit is not None:
            return hit
    held = set(idx)
    rest = [m for i, m in enumerate(rows) if i not in held]
    cal = calibrate(rest, catalog, defaults, benchmarks=benchmarks, start_seed=seed,
                    **{**fit, "starts": 0})
    meta = dict(cal.meta)
    steep = steep_stop({"first_order_optimality": meta["first_order_optimality"],
                        "cost": meta["cost"]}) is not None
    out = (steep, float(meta["cost"]),
           evaluate_rows([rows[i] for i in idx], catalog, defaults, cal,
                         benchmarks=benchmarks))
    if cache is not None:
        cache.put(group, seed, out)
    return out


class FoldCache:
    """Each fold's fit from each start, kept on disk by :func:`leave_one_out_starts`.

    A run stopped part way then goes on where it stopped.

    One pickle per fold and start in ``folder``, named by a digest of ``fingerprint``
    (what the caller fitted: the code, the rows, the settings; a changed fingerprint
    finds nothing), the fold's group and the start. The files are the caller's own:
    pickles are read back as they were written, so the folder must not be shared with
    anyone else.

    Parameters
    ----------
    folder : Path
        Folder of the pickles (made when missing).
    fingerprint : str
        Everything the fits depend on besides the fold and the start.
    """

    def __init__(self, folder: Path | str, fingerprint: str):
        self.folder = Path(folder)
        self.fingerprint = fingerprint
        self.folder.mkdir(parents=True, exist_ok=True)

    def _path(self, group: Any, seed: int | None) -> Path:
        key = hashlib.blake2b(repr((self.fingerprint, str(group), seed)).encode(),
                              digest_size=16).hexdigest()
        return self.folder / f"fold-{key}.pkl"

    def get(self, group: Any, seed: int | None):
        """The kept result of ``group``'s fit from ``seed``.

        Parameters
        ----------
        group : Any
            The fold's group (``key``'s value of its rows).
        seed : int or None
            The start's seed (None: the a-priori values) [-].

        Returns
        -------
        tuple or None
            What :func:`_fold_start` returned: (stopped on a steep slope, loss [-], the
            fold's rows as predicted); None when nothing was kept.
        """
        path = self._path(group, seed)
        return pickle.loads(path.read_bytes()) if path.is_file() else None

    def put(self, group: Any, seed: int | None, value) -> None:
        """Keep ``value``, written whole or not at all.

        Parameters
        ----------
        group : Any
            The fold's group.
        seed : int or None
            The start's seed [-].
        value : tuple
            What :func:`_fold_start` returned.
        """
        path = self._path(group, seed)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, path)


def leave_one_out(rows: list, catalog: Catalog, defaults: PerfDefaults,
                  key: Callable[[Any], Any] | None = None, per_hardware: bool = True,
                  max_nfev: int = MAX_NFEV, *, benchmarks: Benchmarks, workers: int = 1,
                  **fit) -> list[RowResult]:
    """Each group of rows predicted by a calibration fitted without it.

    Parameters
    ----------
    rows : list of Measurement or ServingMeasurement
        Measurement rows.
    catalog : Catalog
        With every model and accelerator the rows name.
    defaults : PerfDefaults
        The a-priori parameters.
    key : callable, optional
        Row -> group (default: each row its own group). ``lambda m: m.hardware`` is
        leave-one-hardware-out: the held-out accelerator's rows touch no level, engine
        or trend of the fold, and it gets its architecture's values (a sibling was
        fitted), else its vendor's, else the pooled ones.
    per_hardware : bool
        Fit accelerator-level offsets of the accelerators in each fold.
    max_nfev : int
        Function evaluations of each fold's fit [count].
    benchmarks : Benchmarks
        What the rows' benchmarks ran (:class:`Predictor`).
    workers : int
        Processes that fit side by side, each fit one fold from one start; the results
        are the same as with one [count].
    **fit
        Passed to :func:`calibrate` (``level_prior``, ``hardware_balance``, ``starts``:
        each fold fitted as the shipped calibration is, ...).

    Returns
    -------
    list of RowResult
        In row order.
    """
    return leave_one_out_starts(rows, catalog, defaults, key, per_hardware, max_nfev,
                                benchmarks=benchmarks, workers=workers, each_start=False,
                                **fit)[0]


def leave_one_out_starts(rows: list, catalog: Catalog, defaults: PerfDefaults,
                         key: Callable[[Any], Any] | None = None, per_hardware: bool = True,
                         max_nfev: int = MAX_NFEV, *, benchmarks: Benchmarks,
                         workers: int = 1, each_start: bool = True,
                         cache: FoldCache | None = None, **fit
                         ) -> tuple[list[RowResult], list[tuple[Any, int, list[list[RowResult]]]]]:
    """:func:`leave_one_out`, and each fold's rows predicted by the fit of every start.

    Parameters
    ----------
    rows, catalog, defaults, key, per_hardware, max_nfev, benchmarks, workers
        As :func:`leave_one_out`.
    each_start : bool
        Also predict each fold's rows with every start's fit (False: an empty list).
    cache : FoldCache, optional
        Keeps each fold's fit from each start as it ends, and gives back those kept
        before (a run stopped part way goes on where it stopped).
    **fit
        As :func:`leave_one_out` (``starts``: the other starts of each fold).

    Returns
    -------
    kept : list of RowResult
        What :func:`leave_one_out` returns, in row order.
    by_fold : list of (group, int, list of list of RowResult)
        Per fold (``key``'s group): the index of the start it keeps [count from 0], and
        its rows (in row order) as predicted by each start's fit, in start order
        (:func:`calibrate_starts`, whose rule :func:`kept_start` picks the kept one;
        the kept start's are ``kept``'s).
    """
    key = key or (lambda m: id(m))
    groups: dict[Any, list[int]] = {}
    for i, m in enumerate(rows):
        groups.setdefault(key(m), []).append(i)
    names = [g for g, idx in groups.items() if len(idx) < len(rows)]
    first = fit.pop("start_seed", None)
    seeds = [first, *(k for k in range(1, fit.get("starts", 0) + 1) if k != first)]
    tasks = [(g, groups[g], seed) for g in names for seed in seeds]
    fold = partial(_fold_start, rows, catalog, defaults, benchmarks,
                   {"per_hardware": per_hardware, "max_nfev": max_nfev, **fit}, cache)
    done = iter(_map(fold, tasks, workers))
    out: list[RowResult | None] = [None] * len(rows)
    by_fold = []
    for g in names:
        fits = [next(done) for _ in seeds]
        k = kept_start([(steep, cost) for steep, cost, _ in fits])
        for i, r in zip(groups[g], fits[k][2], strict=True):
            out[i] = r
        if each_start:
            by_fold.append((g, k, [res for _, _, res in fits]))
    return [r for r in out if r is not None], by_fold
