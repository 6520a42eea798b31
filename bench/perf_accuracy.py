"""Accuracy of the performance model on the shipped measurements.

Rows: ``catalogs/measurements/mlperf_inference.csv`` (18 MLPerf Inference rows, dense
Llama 2 70B / Llama 3.1 405B) and ``catalogs/measurements/inferencex_deepseek_r1.csv``
(1,328 InferenceX DeepSeek-R1 serving runs). For each row the model predicts output
tokens/s per GPU (MLPerf: the replica's output tokens/s), median TPOT and median TTFT
at the row's own configuration, four ways:

* ``defaults``: the a-priori estimates of ``catalogs/perf_defaults.yaml`` (no fit);
* ``in-sample``: calibrated on all rows (what ``catalogs/perf_calibration.yaml`` holds);
* ``leave-one-hardware-out``: each accelerator's rows predicted by a fit that never
  saw that accelerator (it gets its architecture's, vendor's or the pooled values);
* ``leave-one-model-out``: each model's rows predicted by a fit without that model.

and prints median and 90th-percentile absolute % errors split by model family
(dense / MoE), scenario (offline / server / interactive), speculative decoding,
aggregated / disaggregated serving and accelerator.

Run: python bench/perf_accuracy.py [--quick] [--nfev N] [--json FILE] [--markdown]
(about 15-50 minutes depending on the machine; ``--quick`` fits on one row per configuration and
takes a few).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from dcplan.catalog import load_catalog
from dcplan.perf.calibration import calibrate, evaluate_rows, leave_one_out
from dcplan.perf.measurements import load_measurements
from dcplan.perf.params import load_perf_defaults

REPO = Path(__file__).resolve().parent.parent
FILES = (REPO / "catalogs" / "measurements" / "mlperf_inference.csv",
         REPO / "catalogs" / "measurements" / "inferencex_deepseek_r1.csv")
TARGET_MEDIAN, TARGET_P90 = 15.0, 40.0


def _scenario(m) -> str:
    if m.kind == "phase":
        return "server" if m.tpot_ms else "offline"
    return m.scenario


def _split_keys(m, catalog) -> dict[str, str]:
    moe = catalog.get("models", m.model).is_moe
    return {
        "family": "MoE" if moe else "dense",
        "scenario": _scenario(m),
        "speculative": "speculative on" if getattr(m, "speculative", "none") != "none"
        else "speculative off",
        "serving": "disaggregated" if getattr(m, "disaggregated", False) else "aggregated",
        "hardware": m.hardware,
    }


def _stats(errors: list[float]) -> tuple[float | None, float | None, int]:
    a = np.abs([e for e in errors if e is not None and np.isfinite(e)])
    if not len(a):
        return None, None, 0
    return float(np.median(a)), float(np.percentile(a, 90)), len(a)


def table(results: dict[str, list], catalog, what: str = "throughput") -> list[dict]:
    """Rows of (split, value) x method -> median/p90 |error| of ``what``."""
    methods = list(results)
    first = results[methods[0]]
    groups: dict[tuple[str, str], list[int]] = {("all", "all"): list(range(len(first)))}
    for i, r in enumerate(first):
        for split, value in _split_keys(r.m, catalog).items():
            groups.setdefault((split, value), []).append(i)
    out = []
    order = ["all", "family", "scenario", "speculative", "serving", "hardware"]
    for (split, value), idx in sorted(groups.items(), key=lambda kv: (order.index(kv[0][0]),
                                                                      kv[0][1])):
        row = {"split": split, "value": value}
        for meth in methods:
            res = results[meth]
            med, p90, n = _stats([res[i].error(what) for i in idx])
            row[f"{meth} median"] = med
            row[f"{meth} p90"] = p90
            row["rows"] = max(row.get("rows", 0), n)
        out.append(row)
    return out


def _fmt(v) -> str:
    return "-" if v is None else f"{v:.1f}"


def print_table(rows: list[dict], title: str, markdown: bool) -> None:
    cols = [c for c in rows[0] if c not in ("split", "value", "rows")]
    print(f"\n{title} (|error| %, median and 90th percentile)")
    if markdown:
        print("| split | rows | " + " | ".join(cols) + " |")
        print("|---|---:|" + "---:|" * len(cols))
        for r in rows:
            print(f"| {r['split']}: {r['value']} | {r['rows']} | "
                  + " | ".join(_fmt(r[c]) for c in cols) + " |")
        return
    head = f"{'split':34s} {'rows':>5s} " + " ".join(f"{c:>22s}" for c in cols)
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{(r['split'] + ': ' + r['value'])[:34]:34s} {r['rows']:5d} "
              + " ".join(f"{_fmt(r[c]):>22s}" for c in cols))


def quick_subset(rows: list) -> list:
    """One serving row per (hardware, precision, framework, lengths, layout,
    concurrency, speculative), the latest run; every phase row."""
    keep: dict[tuple, object] = {}
    for m in rows:
        if m.kind == "phase":
            keep[("phase", m.row, m.hardware, m.model)] = m
            continue
        k = (m.hardware, m.precision, m.framework, m.input_tokens, m.output_tokens,
             m.prefill_tp, m.prefill_ep, m.decode_tp, m.decode_ep, m.decode_dp_attention,
             m.prefill_gpus, m.decode_gpus, m.concurrency, m.speculative)
        if k not in keep or m.date >= keep[k].date:
            keep[k] = m
    return list(keep.values())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fit on one row per configuration")
    ap.add_argument("--nfev", type=int, default=40, help="function evaluations per fit")
    ap.add_argument("--json", default=None, help="also write the tables as JSON")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    catalog = load_catalog()
    defaults = load_perf_defaults()
    rows = [m for f in FILES for m in load_measurements(f, catalog)]
    if args.quick:
        rows = quick_subset(rows)
    print(f"{len(rows)} rows ({sum(m.kind == 'phase' for m in rows)} MLPerf, "
          f"{sum(m.kind == 'serving' for m in rows)} InferenceX)")
    results = {"defaults": evaluate_rows(rows, catalog, defaults)}
    cal = calibrate(rows, catalog, defaults, max_nfev=args.nfev)
    results["in-sample"] = evaluate_rows(rows, catalog, defaults, cal)
    t1 = time.perf_counter()
    results["leave-one-hardware-out"] = leave_one_out(
        rows, catalog, defaults, key=lambda m: m.hardware, per_hardware=False,
        max_nfev=args.nfev)
    results["leave-one-model-out"] = leave_one_out(
        rows, catalog, defaults, key=lambda m: m.model, per_hardware=True, max_nfev=args.nfev)
    t2 = time.perf_counter()
    out = {}
    for what, title in (("throughput", "Output tokens/s per GPU"), ("tpot", "Median TPOT"),
                        ("ttft", "Median TTFT"), ("power", "Power")):
        tab = table(results, catalog, what)
        out[what] = tab
        print_table(tab, title, args.markdown)
    flagged = {k: sum(1 for r in v if r.pred.flag) for k, v in results.items()}
    print(f"\nrows the model cannot express (flagged): {flagged}")
    lo = {row["value"]: row for row in out["throughput"] if row["split"] == "family"}
    for fam in ("dense", "MoE"):
        if fam in lo:
            med = lo[fam]["leave-one-hardware-out median"]
            p90 = lo[fam]["leave-one-hardware-out p90"]
            ok = med is not None and med <= TARGET_MEDIAN and p90 <= TARGET_P90
            print(f"target, {fam}: leave-one-hardware-out median <= {TARGET_MEDIAN:g}% and "
                  f"p90 <= {TARGET_P90:g}%: {'met' if ok else 'NOT met'} "
                  f"({_fmt(med)}%, {_fmt(p90)}%)")
    print(f"\ntime: fit {t1 - t0:.0f} s, leave-out folds {t2 - t1:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
