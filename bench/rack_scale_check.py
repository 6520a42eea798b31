"""Rack-scale wide-EP decode on a result published before 2025-09, batch by batch.

The SGLang team's GB200 NVL72 report (lmsys.org/blog/2025-06-16-gb200-part-1, 16 June
2025) gives 7,583 output tokens/s per GPU decoding DeepSeek-V3/R1 (FP8, no MTP, no
two-batch overlap) on 48 GB200 GPUs (12 nodes of 4) at expert parallelism 48 with
data-parallel attention, prompts of 2,000 tokens, decode held saturated. It does not
give the batch per GPU (its reproduction, github.com/sgl-project/sglang/issues/7116,
leaves it to the user), so this prints the model's decode-only throughput at fixed
batches per GPU up to what memory allows. Since 2026-12-06 the run is a fitted row of
``wide_ep.csv`` at 2,048 sequences per GPU (an estimate, about the memory limit): it
pins ``wide_ep_comm_ratio``, and this shows how far the answer moves with the batch the
row had to guess (with the calibration before that row, ``--calibration FILE``, it
shows the gap that row closed). The same team's H100 run (72 H100 at EP72 over
InfiniBand, 256 sequences per GPU) is a fitted row too.

The instance is built as ``dcplan perf`` builds one (:func:`dcplan.perf.goodput.build_setup`
with the shipped calibration), at two software levels: the run's (SGLang as of
2025-06-16, :func:`dcplan.perf.software.as_of`) and the planner's (each vendor's
planning engine at the latest fitted run), and at expert parallelism 48, which
``dcplan perf`` does not offer on a 72-GPU rack (an instance must divide the scale-up
domain). The step is the decode step alone (:func:`dcplan.perf.serving.decode`), KV
length 2,050 tokens (the prompt plus half of a 100-token answer).

Run: python bench/rack_scale_check.py [--calibration FILE|none] [--json FILE]
(a few seconds; docs/perf.md, Assumptions and known weaknesses, quotes it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from dcplan.catalog import load_catalog
from dcplan.perf.goodput import Layout, build_setup
from dcplan.perf.params import NO_CALIBRATION, load_perf_inputs
from dcplan.perf.roofline import max_batch
from dcplan.perf.serving import Instance, decode
from dcplan.perf.software import as_of, describe

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_args  # noqa: E402

#: The run: rack, expert parallelism [GPUs], measured output tokens/s per GPU, engine,
#: date, source.
RACK, EP, MEASURED, ENGINE, DATE = "gb200_nvl72", 48, 7583.0, "sglang", "2025-06-16"
SOURCE = "lmsys.org/blog/2025-06-16-gb200-part-1"
#: Batches per GPU printed besides the measured one and the memory limit [sequences].
BATCHES = (64, 128, 256, 512, 768)
#: KV length of a decoding sequence: 2,000-token prompt plus half of 100 output [tokens].
CONTEXT_TOKENS = 2050.0


def run(calibration: str | None) -> list[dict]:
    """Model decode throughput per GPU at each batch per GPU, at both software levels."""
    catalog = load_catalog()
    pin = load_perf_inputs(catalog, NO_CALIBRATION if calibration == "none" else calibration)
    levels = [("the run's", as_of(pin.calibration, DATE, ENGINE) if pin.calibration
               else None), ("the planner's", pin.calibration)]
    out = []
    for name, cal in levels:
        su = build_setup(catalog, RACK, "deepseek_r1", "chat", "fp8", defaults=pin.defaults,
                         calibration=cal)
        par = Layout(1, EP, True).parallel()
        inst = Instance(su.hw, par, su.shape, su.physics, su.serving)
        limit = int(float(np.ravel(max_batch(su.hw, par, su.shape, su.serving,
                                             CONTEXT_TOKENS))[0]) // EP)
        rows = []
        for b in sorted({*(x for x in BATCHES if x < limit), limit}):
            d = decode(inst, b * EP, CONTEXT_TOKENS)
            step = float(np.ravel(d.step_s)[0])
            tps = b / step
            rows.append({"batch_per_gpu": b, "step_ms": step * 1e3,
                         "comm_ms": float(np.ravel(d.step.comm_s)[0]) * 1e3,
                         "output_tokens_per_s_per_gpu": tps,
                         "error_pct": 100.0 * (tps / MEASURED - 1.0)})
        out.append({"software": f"{name}: " + describe(cal, su.acc.vendor)["text"]
                    if cal is not None else "a-priori defaults",
                    "memory_limit_batch_per_gpu": limit, "rows": rows})
    return out


def main() -> None:
    """Print the table (and write JSON with ``--json``)."""
    ap = check_args.parser(__doc__)
    args = ap.parse_args()
    res = run(args.calibration)
    print(f"DeepSeek-R1 FP8 decode on {RACK} at DEP{EP}, KV {CONTEXT_TOKENS:,.0f} tokens: "
          f"measured {MEASURED:,.0f} output tokens/s per GPU at an unpublished batch "
          f"({SOURCE})")
    for case in res:
        print(f"software {case['software']}; memory allows "
              f"{case['memory_limit_batch_per_gpu']:,} sequences per GPU")
        for r in case["rows"]:
            print(f"  batch {r['batch_per_gpu']:>5,} per GPU: step {r['step_ms']:7.1f} ms "
                  f"(communication {r['comm_ms']:6.1f}), "
                  f"{r['output_tokens_per_s_per_gpu']:7,.0f} output tokens/s per GPU "
                  f"({r['error_pct']:+.0f} %)")
    check_args.write_json(args.json, res)


if __name__ == "__main__":
    main()
