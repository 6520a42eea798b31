"""How well the shipped measurements pin the calibration: the same fit from other starts.

``dcplan perf calibrate`` starts its robust least squares at the a-priori values and
stops where its steps become small. This bench fits the same rows (every
``catalogs/measurements/*.csv``) again from ``--starts`` other points (each column plus
normal noise of ``--sd`` ln units, seeds 1..K; the pull towards the a-priori values is
unchanged) and prints, per fit:

* how it stopped (evaluations, the robust loss ``cost``, the solver's message);
* the in-sample median and 90th-percentile |error| of output tokens/s per GPU;
* the planning values of the NVIDIA vendor level (what racks without their own rows,
  such as Vera Rubin and GB300, inherit): prefill and decode GEMM efficiency, HBM
  efficiency, overlap of communication;
* goodput per rack (``dcplan perf --rack R --workload W``) of a few racks and workloads;
* with ``--plans``: the baseline example's NPV, racks bought and peak facility power
  (``dcplan plan examples/baseline.yaml --calibration FILE``, at its file's 0.1 % gap).

Fits whose loss and in-sample errors are alike but whose values and plans differ show
what the data leave open (docs/perf.md, "How well the data pin the fit").

Run: python bench/calibration_starts.py [--starts K] [--sd SD] [--jobs N] [--plans]
[--json FILE] [--save NEW_FOLDER] (``--save`` keeps the fitted calibrations, to plan
with: ``dcplan plan SCENARIO --calibration NEW_FOLDER/calibration_1.yaml``). Each fit
takes 2-3 minutes of one core; K=4 with --plans about 9 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

#: (rack, workload) pairs whose goodput per rack is printed.
PAIRS = (("vera_rubin_nvl72", "chat"), ("vera_rubin_nvl72", "coding_agent"),
         ("gb200_nvl72", "chat"), ("gb200_nvl72", "coding_agent"),
         ("rubin_ultra_nvl576", "coding_agent"))
#: NVIDIA vendor-level planning values printed.
VALUES = ("compute_eff_frac", "decode_compute_eff_frac", "hbm_eff_frac",
          "comm_overlap_frac")


def one_fit(seed: int | None, sd: float, folder: str, plans: bool) -> dict:
    """Fit from the prior (seed None) or a perturbed start; evaluate it [dict]."""
    from dcplan import perf
    from dcplan.api import plan
    from dcplan.catalog import load_catalog
    from dcplan.perf.calibration import calibrate, evaluate_rows, report
    from dcplan.perf.measurements import load_measurement_files
    from dcplan.perf.params import NO_CALIBRATION, load_perf_inputs, save_calibration

    catalog = load_catalog()
    pin = load_perf_inputs(catalog, NO_CALIBRATION, benchmarks=True)
    files = sorted((REPO / "catalogs" / "measurements").glob("*.csv"))
    rows = load_measurement_files(files, catalog)
    t0 = time.process_time()
    cal = calibrate(rows, catalog, pin.defaults, benchmarks=pin.benchmarks,
                    source=", ".join(f"catalogs/measurements/{f.name}" for f in files),
                    start_seed=seed, start_sd=sd)
    fit_cpu = time.process_time() - t0
    rep = report(evaluate_rows(rows, catalog, pin.defaults, cal, benchmarks=pin.benchmarks))
    meta = dict(cal.meta)
    path = Path(folder) / f"calibration_{'prior' if seed is None else seed}.yaml"
    fit = {"rows": meta["rows"], "left_out_rows": meta["left_out_rows"],
           "throughput_median_abs_pct_after": round(rep["throughput"]["median_abs_pct"], 3),
           "throughput_p90_abs_pct_after": round(rep["throughput"]["p90_abs_pct"], 3),
           **{k: meta[k] for k in ("columns", "evaluations", "termination",
                                   "first_order_optimality", "cost", "start") if k in meta}}
    save_calibration(cal, path, dict(meta.get("rows_per_hardware", {})), fit)
    nv = dict(dict(cal.vendor).get("NVIDIA", ()))
    out = {"start": "prior" if seed is None else f"seed {seed}",
           "evaluations": meta.get("evaluations"), "cost": meta.get("cost"),
           "termination": meta.get("termination"), "fit_cpu_s": round(fit_cpu, 1),
           "median_abs_pct": rep["throughput"]["median_abs_pct"],
           "p90_abs_pct": rep["throughput"]["p90_abs_pct"],
           **{f"nvidia_{k}": nv.get(k) for k in VALUES}}
    for rack, wl in PAIRS:
        p = perf.rack_performance(catalog, rack, None, wl, defaults=pin.defaults,
                                  calibration=cal)
        out[f"{rack}/{wl}"] = p.goodput_tokens_per_s if p.fits else None
    if plans:
        res = plan(REPO / "examples" / "baseline.yaml", calibration=str(path)).result
        out.update(baseline_status=str(res.status.value), baseline_gap=res.gap,
                   baseline_npv_musd=res.kpi("npv_cost_usd") / 1e6,
                   baseline_racks=int(round(res.kpi("racks_bought") or 0)),
                   baseline_peak_mw=res.kpi("peak_facility_mw"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--starts", type=int, default=4, help="perturbed starts (seeds 1..K)")
    from dcplan.perf.calibration import START_SD

    ap.add_argument("--sd", type=float, default=START_SD, help="start noise per column [ln]")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--plans", action="store_true", help="also plan examples/baseline.yaml")
    ap.add_argument("--json", type=Path, help="write the records here")
    ap.add_argument("--save", type=Path, help="keep the fitted calibrations in this new "
                    "folder (calibration_prior.yaml, calibration_1.yaml...), to plan with")
    args = ap.parse_args()
    if args.save is not None and args.save.exists():
        ap.error(f"--save {args.save}: exists already; name a new folder")
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    t = time.time()
    seeds = [None, *range(1, args.starts + 1)]
    with tempfile.TemporaryDirectory() as tmp, ProcessPoolExecutor(args.jobs) as ex:
        folder = tmp
        if args.save is not None:
            args.save.mkdir(parents=True)
            folder = str(args.save)
        recs = list(ex.map(one_fit, seeds, [args.sd] * len(seeds), [folder] * len(seeds),
                           [args.plans] * len(seeds)))
    cols = ["start", "evaluations", "cost", "median_abs_pct", "p90_abs_pct",
            *(f"nvidia_{k}" for k in VALUES), *(f"{r}/{w}" for r, w in PAIRS)]
    if args.plans:
        cols += ["baseline_npv_musd", "baseline_racks", "baseline_peak_mw"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in recs:
        cells = []
        for c in cols:
            v = r.get(c)
            cells.append("-" if v is None else f"{v:,.0f}" if isinstance(v, float)
                         and abs(v) >= 100 else f"{v:.3g}" if isinstance(v, float) else str(v))
        print("| " + " | ".join(cells) + " |")
    print(f"wall {time.time() - t:.0f} s; load average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(recs, indent=1, default=str))


if __name__ == "__main__":
    main()
