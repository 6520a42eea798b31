"""Disaggregated TTFT with a fixed KV hand-over latency instead of one per prompt token.

A disaggregated request's TTFT adds one KV hand-over (:func:`dcplan.perf.serving.
kv_transfer_s`): ``max(KV bytes / links, input tokens x kv_handover_token_s)``, about
30 us per prompt token in the shipped calibration. The measured rows at up to 64 in
flight add about the same time at 1k and 8k prompts over the aggregated runs on the same
part, which reads as a fixed cost per hand-over. This predicts every disaggregated row
of ``catalogs/measurements/inferencex_deepseek_r1.csv`` with the shipped calibration
twice: as shipped, and with the hand-over in TTFT replaced by ``c + KV bytes / links``
for several constants ``c`` [s]. Only the TTFT's hand-over changes (the prefill pool's
occupancy per request, :func:`dcplan.perf.serving.kv_handover_share_s`, stays fitted);
the closed loop moves the throughput a little through Little's law.

It is a what-if on the shipped fit, not a refit: docs/perf.md (Assumptions and known
weaknesses, TTFT) quotes its figures and says what adopting it takes.

Run: python bench/handover_latency.py [--constants 0.04,0.06,0.08,0.1] (seconds).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

import dcplan.perf.serving as serving
from dcplan.catalog import load_catalog
from dcplan.perf.calibration import evaluate_rows, signed_stats
from dcplan.perf.measurements import load_measurements
from dcplan.perf.params import NO_CALIBRATION, load_calibration, load_perf_inputs

REPO = Path(__file__).resolve().parent.parent
ROWS = REPO / "catalogs" / "measurements" / "inferencex_deepseek_r1.csv"
CALIBRATION = REPO / "catalogs" / "perf_calibration.yaml"
#: Requests in flight up to which no admission limit of the recipes binds [requests].
LOW_LOAD = 64


@contextlib.contextmanager
def fixed_handover(constant_s: float | None) -> Iterator[None]:
    """TTFT's hand-over as ``constant_s`` + KV bytes over the links (None: as shipped)."""
    shipped = serving.kv_transfer_s

    def fixed(prefill_inst, traffic, scaleout_bytes_per_s):
        i_tok = np.asarray(traffic.input_tokens, dtype=float)
        kv = prefill_inst.shape.kv_bytes_seq(i_tok)
        link = (np.asarray(prefill_inst.par.gpus, float) * scaleout_bytes_per_s
                * prefill_inst.hw.params.scaleout_eff_frac)
        return constant_s + kv / link

    if constant_s is not None:
        serving.kv_transfer_s = fixed
    try:
        yield
    finally:
        serving.kv_transfer_s = shipped


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
    head = ["hand-over", "TTFT all", f"TTFT <= {LOW_LOAD}"] + [
        f"{e} <= {LOW_LOAD}: 1k | 8k" for e in engines] + ["throughput all"]
    print(" | ".join(head))
    for c in [None] + [float(x) for x in args.constants.split(",")]:
        with fixed_handover(c):
            res = evaluate_rows(rows, catalog, pin.defaults, cal, benchmarks=pin.benchmarks)
        ttft = [r.error("ttft") for r in res]
        low = [i for i, m in enumerate(rows) if m.concurrency <= LOW_LOAD]
        cells = ["shipped (per token)" if c is None else f"{c:g} s + bytes",
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
