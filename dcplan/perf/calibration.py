"""Calibration: fit the model's parameters to measurements, and validate it.

Residuals are log ratios of predicted to measured values: throughput (phase rows:
``tokens_per_s``; serving rows: output tokens/s per GPU), median TPOT, median TTFT
(weight :data:`TTFT_WEIGHT`), p99 TPOT (weight :data:`P99_TPOT_WEIGHT`) and power
where measured. The fit is robust (``soft_l1`` loss, scale :data:`LOSS_SCALE`, so a
broken benchmark run cannot drag the fit) and pulls weakly towards the defaults::

    minimise  sum_rows rho(ln pred - ln meas)  +  w^2 sum_params (ln p - ln p0)^2

Rows of dense and of MoE models get equal total weight (the serving file has 1,328
MoE rows, the MLPerf file 18 dense ones), so neither family is fitted at the other's
expense. Three stages:

The power curve is fitted per accelerator only (its rows' measured power).

1. **Pooled**: one set of accelerator parameters for every accelerator, fitted with
   the physics parameters (MoE, speculative decoding, latency) on all rows. The
   accelerator set becomes the calibration's ``default`` and the physics set its
   ``physics``.
2. **Per vendor**: the accelerator parameters of each vendor's rows (NVIDIA, AMD),
   physics fixed, pulled towards the pooled values: what an accelerator without
   measurements of that vendor gets (B300, GB300, Rubin take NVIDIA's).
3. **Per accelerator**: each accelerator's own parameters on its own rows, pulled
   towards its vendor's values.

:func:`leave_one_out` refits without a group of rows (an accelerator, a model, a row)
and predicts them: the honest out-of-sample error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from dcplan.catalog import Catalog
from dcplan.perf.measurements import Measurement, ServingMeasurement, pct_error, summary
from dcplan.perf.params import Calibration, HardwareParams, PerfDefaults, PhysicsParams
from dcplan.perf.predict import (
    RowPrediction,
    ServingRows,
    hardware_params,
    physics_params,
    predict_phase,
)

#: Accelerator parameters fitted from throughput and latency. The all-reduce (scale-up)
#: and scale-out efficiencies stay at their a-priori values: fitted together with the MoE
#: rows they sink MoE costs and then slow dense prefills (Llama 3.1 405B) far below
#: measurement; ``moe_comm_eff_frac`` takes the MoE communication instead.
THROUGHPUT_PARAMS = ("compute_eff_frac", "decode_compute_eff_frac", "attention_eff_frac",
                     "mla_attention_eff_frac",
                     "hbm_eff_frac", "step_overhead_s", "layer_overhead_s",
                     "alltoall_latency_s", "collective_latency_s", "scaleout_latency_s",
                     "comm_overlap_frac", "moe_comm_eff_frac")
#: Accelerator parameters fitted in addition where rows carry power.
POWER_PARAMS = ("power_base_frac", "power_compute_weight", "power_memory_weight")
#: Physics parameters, each fitted only when some row depends on it.
PHYSICS_FIT = ("grouped_gemm_pad_tokens", "moe_imbalance_frac", "mtp_acceptance_frac",
               "mtp_draft_cost_frac", "closed_loop_arrival_cv2", "ttft_overhead_s",
               "tpot_cv_frac")
#: Search bounds of each fitted parameter.
FIT_BOUNDS = {
    "compute_eff_frac": (0.05, 0.95),
    "decode_compute_eff_frac": (0.05, 0.95),
    "attention_eff_frac": (0.05, 0.95),
    "mla_attention_eff_frac": (0.02, 0.95),
    "hbm_eff_frac": (0.3, 0.95),
    "scaleup_eff_frac": (0.1, 0.95),
    "moe_comm_eff_frac": (0.02, 0.95),
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
    "tpot_cv_frac": (0.005, 1.0),
}
#: Weight of the pull towards the defaults (per unit of ln parameter).
PRIOR_WEIGHT = 0.3
#: Residual weights of median TTFT and p99 TPOT relative to throughput and TPOT.
TTFT_WEIGHT = 0.5
P99_TPOT_WEIGHT = 0.3
#: Scale of the robust loss (log ratio at which it turns linear, ~15%).
LOSS_SCALE = 0.15


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
        """Signed % error of ``throughput``, ``tpot``, ``ttft`` or ``power`` (None if n/a)."""
        m, p = self.m, self.pred
        pairs = {
            "throughput": (self.measured_throughput, self.predicted_throughput),
            "tpot": (getattr(m, "median_tpot_ms", None), p.median_tpot_ms),
            "ttft": (getattr(m, "median_ttft_s", None), p.median_ttft_s),
            "power": (m.power_w, p.power_w),
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
                     "power_error_pct": self.error("power"), "configuration": p.configuration,
                     "flag": p.flag, "notes": p.notes})
        return base


def _split(rows: Sequence) -> tuple[list[int], list[int]]:
    phase = [i for i, m in enumerate(rows) if m.kind == "phase"]
    serving = [i for i, m in enumerate(rows) if m.kind == "serving"]
    return phase, serving


class Predictor:
    """Every row of a mixed list (phase and serving rows), predicted on demand."""

    def __init__(self, rows: Sequence, catalog: Catalog, defaults: PerfDefaults,
                 weights: Sequence[float] | None = None):
        self.rows = list(rows)
        self.catalog = catalog
        self.defaults = defaults
        self.phase_idx, self.serving_idx = _split(self.rows)
        self.serving = (ServingRows([self.rows[i] for i in self.serving_idx], catalog, defaults)
                        if self.serving_idx else None)
        self.hardware = sorted({m.hardware for m in self.rows})
        self.weights = np.ones(len(self.rows)) if weights is None else np.asarray(weights, float)

    def predictions(self, params: dict[str, HardwareParams], physics: PhysicsParams
                    ) -> list[RowPrediction]:
        """One :class:`RowPrediction` per row, in row order."""
        out: list[RowPrediction | None] = [None] * len(self.rows)
        for i in self.phase_idx:
            m = self.rows[i]
            out[i] = predict_phase(m, self.catalog, params[m.hardware], physics, self.defaults)
        if self.serving is not None:
            for i, p in zip(self.serving_idx, self.serving.predictions(params, physics),
                            strict=True):
                out[i] = p
        return out  # type: ignore[return-value]

    def residuals(self, params: dict[str, HardwareParams], physics: PhysicsParams,
                  use_power: bool) -> np.ndarray:
        """Weighted log-ratio residuals of every measured value (flagged rows: large)."""
        res: list[float] = []
        for i in self.phase_idx:
            m = self.rows[i]
            w = self.weights[i]
            p = predict_phase(m, self.catalog, params[m.hardware], physics, self.defaults)
            if p.tokens_per_s is None:
                res.append(3.0 * w)
                continue
            res.append(w * np.log(p.tokens_per_s / m.tokens_per_s))
            if use_power and m.power_w:
                res.append(w * np.log(p.power_w / m.power_w))
        if self.serving is not None:
            arr = self.serving.predict(params, physics)
            rows = self.serving.rows
            ws = self.weights[self.serving_idx]
            for key, meas_key, w in (
                ("output_tokens_per_s_per_gpu", "output_tokens_per_s_per_gpu", 1.0),
                ("median_tpot_ms", "median_tpot_ms", 1.0),
                ("median_ttft_s", "median_ttft_s", TTFT_WEIGHT),
                ("p99_tpot_ms", "p99_tpot_ms", P99_TPOT_WEIGHT),
                ("power_w_per_gpu", "power_w_per_gpu", 1.0 if use_power else 0.0),
            ):
                if w == 0.0:
                    continue
                meas = np.array([getattr(m, meas_key) or np.nan for m in rows], float)
                pred = arr[key]
                sel = np.isfinite(meas) & ~np.array([bool(f) for f in self.serving.flags])
                r = w * ws[sel] * np.log(np.maximum(pred[sel], 1e-12) / meas[sel])
                res.extend(np.where(np.isfinite(r), r, 3.0 * w * ws[sel]))
        return np.asarray(res, dtype=float)


def evaluate_rows(rows: Iterable, catalog: Catalog, defaults: PerfDefaults,
                  calibration: Calibration | None = None) -> list[RowResult]:
    """Predict every row with the defaults (and ``calibration`` when given)."""
    rows = list(rows)
    pr = Predictor(rows, catalog, defaults)
    params = {h: hardware_params(defaults, h, calibration, _vendor(catalog, h))
              for h in pr.hardware}
    preds = pr.predictions(params, physics_params(defaults, calibration))
    return [RowResult(m, p) for m, p in zip(rows, preds, strict=True)]


def report(results: list[RowResult]) -> dict[str, Any]:
    """Median, p90 and max absolute % error of throughput, TPOT, TTFT and power."""
    return {what: summary([r.error(what) for r in results])
            for what in ("throughput", "tpot", "ttft", "power")} | {
        "flagged": sum(1 for r in results if r.pred.flag)}


def _physics_in_use(rows: Sequence) -> list[str]:
    names = []
    serving = [m for m in rows if m.kind == "serving"]
    moe = any(m.decode_ep > 1 or m.prefill_ep > 1 or m.model.startswith("deepseek")
              for m in serving)
    for name in PHYSICS_FIT:
        if name in ("grouped_gemm_pad_tokens", "moe_imbalance_frac") and not moe:
            continue
        if name.startswith("mtp") and not any(m.speculative == "mtp" for m in serving):
            continue
        if name in ("closed_loop_arrival_cv2", "ttft_overhead_s", "tpot_cv_frac") and not serving:
            continue
        names.append(name)
    return names


def _least_squares(fun: Callable, names: list[str], start: dict[str, float],
                   prior: dict[str, float], prior_weight: float, max_nfev: int):
    lo = np.log([FIT_BOUNDS[n][0] for n in names])
    hi = np.log([FIT_BOUNDS[n][1] for n in names])
    x0 = np.clip(np.log([max(start[n], FIT_BOUNDS[n][0]) for n in names]), lo + 1e-9, hi - 1e-9)
    x_prior = np.clip(np.log([max(prior[n], FIT_BOUNDS[n][0]) for n in names]), lo, hi)

    def residuals(x: np.ndarray) -> np.ndarray:
        vals = dict(zip(names, np.exp(x), strict=True))
        r = fun(vals)
        return np.concatenate([r, prior_weight * (x - x_prior)])

    sol = least_squares(residuals, x0, bounds=(lo, hi), method="trf", loss="soft_l1",
                        f_scale=LOSS_SCALE, max_nfev=max_nfev, diff_step=1e-3)
    return dict(zip(names, np.exp(sol.x), strict=True)), sol


def _vendor(catalog: Catalog, accelerator_id: str) -> str:
    return catalog.get("accelerators", accelerator_id).vendor


def balance_weights(rows: Sequence, catalog: Catalog) -> np.ndarray:
    """Row weights giving dense-model rows and MoE-model rows equal total weight.

    ``w = sqrt(N / (G n_g))`` for a row of family ``g`` with ``n_g`` rows, ``G``
    families present and ``N`` rows in all (residuals are squared, hence the root).
    """
    fam = ["moe" if catalog.get("models", m.model).is_moe else "dense" for m in rows]
    counts = {f: fam.count(f) for f in set(fam)}
    n, g = len(rows), len(counts)
    return np.array([np.sqrt(n / (g * counts[f])) for f in fam])


def calibrate(rows: list, catalog: Catalog, defaults: PerfDefaults, source: str = "",
              prior_weight: float = PRIOR_WEIGHT, per_hardware: bool = True,
              max_nfev: int = 60, per_vendor: bool = True) -> Calibration:
    """Fit the parameters to ``rows`` (phase-level and/or serving rows).

    Parameters
    ----------
    rows : list of Measurement or ServingMeasurement
    catalog : Catalog
        With every model and accelerator the rows name.
    defaults : PerfDefaults
        Starting values and the values the prior pulls towards.
    source : str
        Measurement file name(s), recorded in the calibration.
    prior_weight : float
        Weight of the pull towards the defaults [per unit of ln parameter]; 0 fits
        the data alone.
    per_hardware, per_vendor : bool
        Also fit each accelerator (stage 3) / each vendor (stage 2) on its own rows.
    max_nfev : int
        Function evaluations per fit.

    Returns
    -------
    Calibration
        ``default`` = pooled accelerator parameters, ``vendor`` = per-vendor ones,
        ``physics`` = fitted physics, ``hardware`` = per-accelerator parameters.
    """
    weights = balance_weights(rows, catalog)
    pr = Predictor(rows, catalog, defaults, weights)
    use_power = any(m.power_w for m in rows)
    # The power curve is fitted per accelerator only (stage 3): the measured power of one
    # accelerator says little about another's, so pooled and vendor values keep the
    # a-priori curve of perf_defaults.yaml.
    hw_names = list(THROUGHPUT_PARAMS)
    phys_names = _physics_in_use(rows)
    base = defaults.default
    phys0 = defaults.physics
    names = hw_names + phys_names

    def pooled(vals: dict[str, float]) -> np.ndarray:
        hp = replace(base, **{n: vals[n] for n in hw_names})
        ph = replace(phys0, **{n: vals[n] for n in phys_names})
        return pr.residuals({h: hp for h in pr.hardware}, ph, False)

    start = {**{n: getattr(base, n) for n in hw_names},
             **{n: getattr(phys0, n) for n in phys_names}}
    fitted, _ = _least_squares(pooled, names, start, start, prior_weight, max_nfev)
    default = {n: fitted[n] for n in hw_names}
    physics = {n: fitted[n] for n in phys_names}
    phys = replace(phys0, **physics)

    def fit_group(sub: list, centre: dict[str, float], own_base: HardwareParams,
                  ids: list[str], with_power: bool) -> dict[str, float]:
        spr = Predictor(sub, catalog, defaults, balance_weights(sub, catalog))
        power = with_power and any(m.power_w for m in sub)
        names_g = list(THROUGHPUT_PARAMS) + (list(POWER_PARAMS) if power else [])
        start_g = {n: centre.get(n, getattr(own_base, n)) for n in names_g}
        centred = replace(own_base, **centre)

        def own(vals: dict[str, float]) -> np.ndarray:
            hp = replace(centred, **vals)
            return spr.residuals({h: hp for h in ids}, phys, power)

        got, _ = _least_squares(own, names_g, start_g, start_g, prior_weight, max_nfev)
        return got

    vendors: dict[str, dict[str, float]] = {}
    by_vendor: dict[str, list[str]] = {}
    for h in pr.hardware:
        by_vendor.setdefault(_vendor(catalog, h), []).append(h)
    if per_vendor:
        for ven, ids in sorted(by_vendor.items()):
            sub = [m for m in rows if m.hardware in ids]
            vendors[ven] = {**default, **fit_group(sub, default, base, ids, False)}
    hardware: dict[str, dict[str, float]] = {}
    if per_hardware:
        for hw in pr.hardware:
            centre = vendors.get(_vendor(catalog, hw), default)
            sub = [m for m in rows if m.hardware == hw]
            hardware[hw] = fit_group(sub, centre, defaults.for_hardware(hw), [hw], use_power)
    meta = {"rows": len(rows), "rows_per_hardware": {
        h: sum(1 for m in rows if m.hardware == h) for h in pr.hardware}}
    return Calibration.from_dicts(hardware, default, source, meta, physics, vendors)


def leave_one_out(rows: list, catalog: Catalog, defaults: PerfDefaults,
                  key: Callable[[Any], Any] | None = None, per_hardware: bool = True,
                  max_nfev: int = 60) -> list[RowResult]:
    """Each group of rows predicted by a calibration fitted without it.

    Parameters
    ----------
    key : callable, optional
        Row -> group (default: each row its own group). ``lambda m: m.hardware`` is
        leave-one-hardware-out: the held-out accelerator gets the pooled ``default``
        of the others.
    per_hardware : bool
        Fit per-accelerator parameters in each fold (other accelerators' rows).

    Returns
    -------
    list of RowResult
        In row order.
    """
    key = key or (lambda m: id(m))
    groups: dict[Any, list[int]] = {}
    for i, m in enumerate(rows):
        groups.setdefault(key(m), []).append(i)
    out: list[RowResult | None] = [None] * len(rows)
    for _g, idx in groups.items():
        held = set(idx)
        rest = [m for i, m in enumerate(rows) if i not in held]
        if not rest:
            continue
        cal = calibrate(rest, catalog, defaults, per_hardware=per_hardware, max_nfev=max_nfev,
                        per_vendor=True)
        res = evaluate_rows([rows[i] for i in idx], catalog, defaults, cal)
        for i, r in zip(idx, res, strict=True):
            out[i] = r
    return [r for r in out if r is not None]
