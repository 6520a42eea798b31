"""Disaggregated TTFT against the fixed latency of the KV hand-over.

A disaggregated request's TTFT adds one KV hand-over (:func:`dcplan.perf.serving.
kv_transfer_s`): ``kv_handover_latency_s`` + the prompt's KV bytes over the prefill
instance's links. The latency is an a-priori value (``catalogs/perf_defaults.yaml``,
0.08 s), not fitted: the measured rows at up to 64 in flight add about the same time
at 1k and 8k prompts over the aggregated runs on the same part. Until 2026-12-07 the
model took ``max(KV bytes / links, input tokens x kv_handover_token_s)``, about 30 us per
prompt token (docs/perf.md, TTFT, gives its figures).

This predicts every disaggregated row of ``catalogs/measurements/inferencex_deepseek_r1.csv``
with the shipped calibration, at the shipped latency and at the latencies of
``--constants``. Only the latency changes: the calibration stays the one fitted at the
shipped value, so the other figures show how sensitive the rows are to it, not what a
refit at another value would give.

Run: python bench/handover_latency.py [--constants 0.04,0.06,0.08,0.1] (seconds).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from dcplan.catalog import load_catalog
from dcplan.perf.calibration import (
    DISAGGREGATED_TTFT_MAX_CONCURRENCY,
    evaluate_rows,
    signed_stats,
)
from dcplan.perf.measurements import load_measurements
from dcplan.perf.params import NO_CALIBRATION, PerfDefaults, load_calibration, load_perf_inputs

REPO = Path(__file__).resolve().parent.parent
ROWS = REPO / "catalogs" / "measurements" / "inferencex_deepseek_r1.csv"
CALIBRATION = REPO / "catalogs" / "perf_calibration.yaml"
#: Requests in flight up to which no admission limit of the recipes binds [requests].
LOW_LOAD = DISAGGREGATED_TTFT_MAX_CONCURRENCY


def with_latency(defaults: PerfDefaults, latency_s: float | None) -> PerfDefaults:
    """``defaults`` with every accelerator's ``kv_handover_latency_s`` at ``latency_s``
    [s] (None: as shipped)."""
    if latency_s is None:
        return defaults
    hw = tuple((acc, tuple((k, v) for k, v in over if k != "kv_handover_latency_s"))
               for acc, over in defaults.hardware)
    return dataclasses.replace(
        defaults, hardware=hw,
        default=dataclasses.replace(defaults.default, kv_handover_latency_s=latency_s))


def _cell(errors) -> str:
    st = signed_stats(list(errors))
    if not st["n"]:
        return "-"
    return f"{st['signed']:+.0f} / {st['median']:.1f} ({st['n']})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--constants", default="0.04,0.06,0.08,0.1",
                    help="fixed hand-over latencies to try [s], comma-separated")
    args = ap.parse_args(argv)
    catalog = load_catalog()
    pin = load_perf_inputs(catalog, NO_CALIBRATION, benchmarks=True)
    cal = load_calibration(CALIBRATION)
    rows = [m for m in load_measurements(ROWS, catalog)
            if m.disaggregated and m.median_ttft_s]
    engines = sorted({m.framework for m in rows})
    print(f"{len(rows)} disaggregated rows with a measured median TTFT; cells: signed "
          "median / median |error| % (rows)")
    head = ["hand-over latency", "TTFT all", f"TTFT <= {LOW_LOAD}"] + [
        f"{e} <= {LOW_LOAD}: 1k | 8k" for e in engines] + ["throughput all"]
    print(" | ".join(head))
    shipped = pin.defaults.default.kv_handover_latency_s
    for c in [None] + [float(x) for x in args.constants.split(",")]:
        res = evaluate_rows(rows, catalog, with_latency(pin.defaults, c), cal,
                            benchmarks=pin.benchmarks)
        ttft = [r.error("ttft") for r in res]
        low = [i for i, m in enumerate(rows) if m.concurrency <= LOW_LOAD]
        cells = [f"shipped ({shipped:g} s)" if c is None else f"{c:g} s",
                 _cell(ttft), _cell(ttft[i] for i in low)]
        for e in engines:
            by_len = [_cell(ttft[i] for i in low if rows[i].framework == e
                            and int(rows[i].input_tokens) == n) for n in (1024, 8192)]
            cells.append(" | ".join(by_len))
        cells.append(_cell(r.error("throughput") for r in res))
        print(" | ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
