"""Calibration: fit per-accelerator parameters to measurements, and validate.

For each accelerator in a measurement file, :func:`calibrate` fits the compute and
HBM efficiencies and the per-step overhead (and, when the rows carry ``power_w``,
the power-curve parameters) by least squares on the log ratio of predicted to
measured throughput (and power)::

    minimise  sum_rows (ln pred_i - ln meas_i)^2  +  w^2 * sum_params (ln p - ln p0)^2

The second term is a weak pull towards ``perf_defaults.yaml`` (``w`` =
:data:`PRIOR_WEIGHT`): it keeps parameters that the data cannot identify (e.g. HBM
efficiency when every row is compute-bound) at their defaults instead of letting
them wander. Parameters are fitted in log space within :data:`FIT_BOUNDS`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from dcplan.catalog import Catalog
from dcplan.perf.goodput import hardware_params
from dcplan.perf.measurements import Measurement, pct_error, predict, summary
from dcplan.perf.params import Calibration, HardwareParams, PerfDefaults

#: Parameters fitted from throughput rows.
THROUGHPUT_PARAMS = ("compute_eff_frac", "decode_compute_eff_frac", "hbm_eff_frac",
                     "step_overhead_s")
#: Parameters fitted in addition when rows carry power.
POWER_PARAMS = ("power_base_frac", "power_compute_weight", "power_memory_weight")
#: Search bounds of each fitted parameter.
FIT_BOUNDS = {
    "compute_eff_frac": (0.05, 0.95),
    "decode_compute_eff_frac": (0.05, 0.95),
    "hbm_eff_frac": (0.4, 0.95),
    "step_overhead_s": (1e-4, 0.02),
    "power_base_frac": (0.01, 1.0),
    "power_compute_weight": (0.01, 2.0),
    "power_memory_weight": (0.01, 2.0),
}
#: Weight of the pull towards the defaults (per unit of ln parameter).
PRIOR_WEIGHT = 0.3


@dataclass(frozen=True)
class RowResult:
    """Predicted vs measured values of one measurement row.

    Attributes
    ----------
    m : Measurement
    predicted_tokens_per_s : float
        [tokens/s].
    tokens_error_pct : float
        Signed error [%].
    predicted_power_w : float
        [W].
    power_error_pct : float or None
        Signed error [%] (None when the row has no power).
    fits : bool
        Whether the row's weights + KV fit the replica's HBM in the model.
    """

    m: Measurement
    predicted_tokens_per_s: float
    tokens_error_pct: float
    predicted_power_w: float
    power_error_pct: float | None
    fits: bool

    def as_dict(self) -> dict[str, Any]:
        """Row as a flat dict (for tables and JSON)."""
        m = self.m
        return {
            "row": m.row, "hardware": m.hardware, "model": m.model,
            "precision": m.precision.value, "phase": m.phase + ("/e2e" if m.end_to_end else ""),
            "gpus": m.gpus, "batch": m.batch, "context_tokens": m.context_tokens,
            "measured_tokens_per_s": m.tokens_per_s,
            "predicted_tokens_per_s": self.predicted_tokens_per_s,
            "tokens_error_pct": self.tokens_error_pct,
            "measured_power_w": m.power_w, "predicted_power_w": self.predicted_power_w,
            "power_error_pct": self.power_error_pct, "fits_hbm": self.fits,
        }


def evaluate_rows(rows: Iterable[Measurement], catalog: Catalog, defaults: PerfDefaults,
                  calibration: Calibration | None = None) -> list[RowResult]:
    """Predict every row with the defaults (and ``calibration`` when given)."""
    out = []
    for m in rows:
        params = hardware_params(defaults, m.hardware, calibration)
        p = predict(m, catalog, params, defaults.serving)
        perr = pct_error(p.power_w, m.power_w) if m.power_w else None
        out.append(RowResult(m, p.tokens_per_s, pct_error(p.tokens_per_s, m.tokens_per_s),
                             p.power_w, perr, p.fits))
    return out


def report(results: list[RowResult]) -> dict[str, Any]:
    """Median and max absolute % error of throughput and of power."""
    return {
        "throughput": summary([r.tokens_error_pct for r in results]),
        "power": summary([r.power_error_pct for r in results if r.power_error_pct is not None]),
    }


def _fit_one(rows: list[Measurement], catalog: Catalog, base: HardwareParams,
             defaults: PerfDefaults, prior_weight: float) -> tuple[dict[str, float], Any]:
    names = list(THROUGHPUT_PARAMS)
    if any(m.power_w for m in rows):
        names += POWER_PARAMS
    lo = np.log([FIT_BOUNDS[n][0] for n in names])
    hi = np.log([FIT_BOUNDS[n][1] for n in names])
    x0 = np.clip(np.log([max(getattr(base, n), FIT_BOUNDS[n][0]) for n in names]), lo, hi)
    prior = x0.copy()

    def residuals(x: np.ndarray) -> np.ndarray:
        params = replace(base, **{n: float(v) for n, v in zip(names, np.exp(x), strict=True)})
        res = []
        for m in rows:
            p = predict(m, catalog, params, defaults.serving)
            res.append(np.log(p.tokens_per_s / m.tokens_per_s))
            if m.power_w:
                res.append(np.log(p.power_w / m.power_w))
        res.extend(prior_weight * (x - prior))
        return np.asarray(res)

    sol = least_squares(residuals, x0, bounds=(lo, hi), method="trf", x_scale=1.0,
                        max_nfev=2000)
    return {n: float(v) for n, v in zip(names, np.exp(sol.x), strict=True)}, sol


def calibrate(rows: list[Measurement], catalog: Catalog, defaults: PerfDefaults,
              source: str = "", prior_weight: float = PRIOR_WEIGHT) -> Calibration:
    """Fit per-accelerator parameters to ``rows``.

    Parameters
    ----------
    rows : list of Measurement
    catalog : Catalog
        With every model and accelerator the rows name.
    defaults : PerfDefaults
        Starting values and the values the prior pulls towards.
    source : str
        Measurement file name, recorded in the calibration.
    prior_weight : float
        Weight of the pull towards the defaults [per unit of ln parameter]; 0 fits
        the data alone.

    Returns
    -------
    Calibration
        Fitted values per accelerator; ``default`` holds the median of each fitted
        parameter over the accelerators (used for accelerators without data).
    """
    by_hw: dict[str, list[Measurement]] = {}
    for m in rows:
        by_hw.setdefault(m.hardware, []).append(m)
    fitted: dict[str, dict[str, float]] = {}
    for hw in sorted(by_hw):
        fitted[hw], _ = _fit_one(by_hw[hw], catalog, defaults.for_hardware(hw), defaults,
                                 prior_weight)
    default: dict[str, float] = {}
    for name in THROUGHPUT_PARAMS + POWER_PARAMS:
        vals = [p[name] for p in fitted.values() if name in p]
        if vals:
            default[name] = float(np.median(vals))
    meta = {"rows": len(rows), "rows_per_hardware": {h: len(v) for h, v in by_hw.items()}}
    return Calibration.from_dicts(fitted, default, source, meta)


def leave_one_out(rows: list[Measurement], catalog: Catalog,
                  defaults: PerfDefaults) -> list[float]:
    """Throughput % error of each row predicted by a calibration fitted without it."""
    errors = []
    for i, m in enumerate(rows):
        rest = rows[:i] + rows[i + 1:]
        cal = calibrate(rest, catalog, defaults)
        [res] = evaluate_rows([m], catalog, defaults, cal)
        errors.append(res.tokens_error_pct)
    return errors
