"""Accuracy of the performance model against published MLPerf Inference results.

Prints, for every row of catalogs/measurements/mlperf_inference.csv, the measured
and predicted throughput with the default parameters (perf_defaults.yaml), after
calibration on all rows (in-sample), and leave-one-out (each row predicted by a
calibration fitted without it: the honest out-of-sample figure), then the median
and max absolute percentage errors.

Run: python bench/perf_accuracy.py [MEASUREMENTS.csv] [--models FILE]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from dcplan.catalog import load_catalog
from dcplan.cli.common import format_table
from dcplan.perf.calibration import calibrate, evaluate_rows, leave_one_out, report
from dcplan.perf.measurements import load_measurements, with_models
from dcplan.perf.params import defaults_path, load_perf_defaults

REPO = Path(__file__).resolve().parent.parent
TARGET_PCT = 15.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="?",
                    default=str(REPO / "catalogs" / "measurements" / "mlperf_inference.csv"))
    ap.add_argument("--models", default=None)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    catalog = with_models(load_catalog(), args.models)
    defaults = load_perf_defaults(defaults_path(catalog))
    rows = load_measurements(args.csv, catalog)
    before = evaluate_rows(rows, catalog, defaults)
    cal = calibrate(rows, catalog, defaults, source=args.csv)
    after = evaluate_rows(rows, catalog, defaults, cal)
    loo = leave_one_out(rows, catalog, defaults)
    table = []
    for b, a, lo in zip(before, after, loo, strict=True):
        m = b.m
        table.append({
            "row": m.row, "hardware": m.hardware, "model": m.model, "prec": m.precision.value,
            "scenario": "server" if m.tpot_ms else ("offline" if m.end_to_end else m.phase),
            "gpus": m.gpus, "batch": m.batch, "measured_tok_s": m.tokens_per_s,
            "default_pct": b.tokens_error_pct, "calibrated_pct": a.tokens_error_pct,
            "loo_pct": lo,
        })
    print(format_table(table))
    print()
    rb, ra = report(before)["throughput"], report(after)["throughput"]
    rl = np.abs(np.asarray(loo))
    print(f"rows: {len(rows)}")
    print(f"default parameters:        median |error| {rb['median_abs_pct']:5.1f}%, "
          f"max {rb['max_abs_pct']:5.1f}%")
    print(f"calibrated (in-sample):    median |error| {ra['median_abs_pct']:5.1f}%, "
          f"max {ra['max_abs_pct']:5.1f}%")
    print(f"leave-one-out calibrated:  median |error| {np.median(rl):5.1f}%, "
          f"max {rl.max():5.1f}%")
    print(f"target: median <= {TARGET_PCT:g}% after calibration -> "
          f"{'met' if ra['median_abs_pct'] <= TARGET_PCT else 'NOT met'} in-sample, "
          f"{'met' if np.median(rl) <= TARGET_PCT else 'NOT met'} leave-one-out")
    print("power: no power-measured rows in this file (MLPerf Power LLM results not found)")
    print(f"\nfitted parameters per accelerator (time {time.perf_counter() - t0:.1f} s):")
    print(format_table([{"hardware": h, **dict(p)} for h, p in cal.hardware]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
