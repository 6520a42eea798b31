"""DeepSeek-R1 on one 8-GPU B200 board against TensorRT-LLM results from before 2025-09.

Two operating points NVIDIA's TensorRT-LLM team published, neither a fitted row:

**One user** ("Pushing Latency Boundaries: Optimizing DeepSeek-R1 Performance on NVIDIA
B200 GPUs", tech blog 1, listed 2025-05-16 in the TensorRT-LLM README;
github.com/NVIDIA/TensorRT-LLM, docs/source/blogs/tech_blog/). DeepSeek-R1 at one
request in flight on 8 B200 (prompts of 1k tokens, answers of 2k; MoE weights NVFP4,
attention BF16; attention TP8, MoE TP8 with expert parallelism 4 at the 253 tokens/s
"before GTC 2025" stage, whose MTP table this uses). Its table of MTP depths gives
tokens per second per user and the mean accepted length per step:

=========  ==========  ================
MTP depth  accepted    tokens/s per user
=========  ==========  ================
none       1.00        111
1          1.92        198
2          2.58        250
3          2.82        253
=========  ==========  ================

This prints the model's answer for each depth at the run's software (TensorRT-LLM as
of 2025-03-15, :func:`dcplan.perf.software.as_of`) and the shipped calibration, batch 1,
KV length 2,048 tokens (the prompt plus half the answer), at two per-token acceptances:
the fitted one (``mtp_acceptance_frac``, fitted on InferenceX's synthetic prompts) and
the one that gives the blog's accepted length
(:func:`dcplan.perf.speculative.expected_tokens` solved for it). The second isolates
the step time (the model's overheads and memory reads at batch 1) from how well drafts
are accepted on the blog's data. The blog's step time is accepted length / tokens per
second per user.

**Maximum throughput** ("Optimizing DeepSeek R1 Throughput on NVIDIA Blackwell GPUs",
tech blog 3, listed 2025-05-30): "approximately 2000 TPS/GPU in February to 4600
TPS/GPU on ISL/OSL 1K/2K", with attention DP8 and MoE EP8, NVFP4 MoE, FP8 KV cache, no
MTP; its reproduction (docs/source/blogs/Best_perf_practice_on_DeepSeek-R1_in_TensorRT-
LLM.md, "B200 max-throughput") runs ``trtllm-bench --tp 8 --ep 8 --concurrency 3072
--max_batch_size 384``. TPS/GPU is read as output tokens/s per GPU (trtllm-bench's "Per
GPU Output Throughput"). This runs ``dcplan perf`` as a user would: the same layout,
3,072 requests in flight, 384 per attention-DP rank, no latency limit, TensorRT-LLM as
of 2025-05-30.

Run: python bench/trtllm_b200_check.py [--calibration FILE|none] [--json FILE]
(a few seconds; docs/perf.md, Assumptions and known weaknesses, quotes it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import brentq

from dcplan.catalog import load_catalog
from dcplan.perf.goodput import Layout, build_setup
from dcplan.perf.params import NO_CALIBRATION, load_perf_inputs
from dcplan.perf.serving import Instance, decode
from dcplan.perf.software import as_of, describe
from dcplan.perf.speculative import expected_tokens

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_args  # noqa: E402

RACK, MODEL, WORKLOAD, PRECISION = "hgx_b200", "deepseek_r1", "chat", "fp4"
ENGINE, DATE = "trt", "2025-03-15"
SOURCE = ("github.com/NVIDIA/TensorRT-LLM docs/source/blogs/tech_blog/blog1_Pushing_Latency_"
          "Boundaries_Optimizing_DeepSeek-R1_Performance_on_NVIDIA_B200_GPUs.md")
#: (MTP depth [draft tokens], accepted tokens per step, tokens/s per user) from the blog.
MEASURED = ((0, 1.00, 111.0), (1, 1.92, 198.0), (2, 2.58, 250.0), (3, 2.82, 253.0))
#: KV length of the one decoding sequence: 1k prompt plus half of the 2k answer [tokens].
CONTEXT_TOKENS = 2048.0
#: Attention TP8 with the MoE at expert parallelism 4 (the blog's `--tp 8 --ep 4`).
LAYOUT = Layout(8, 4, False)


def _acceptance_for(accepted: float, draft: int) -> float:
    """Per-token acceptance whose expected tokens per step are ``accepted`` [-]."""
    if draft == 0:
        return 0.0
    return float(brentq(lambda a: float(expected_tokens(a, draft)) - accepted, 1e-9,
                        1.0 - 1e-9))


def run(calibration: str | None) -> dict:
    """The model's tokens/s per user for each MTP depth at batch 1."""
    catalog = load_catalog()
    pin = load_perf_inputs(catalog, NO_CALIBRATION if calibration == "none" else calibration)
    cal = as_of(pin.calibration, DATE, ENGINE) if pin.calibration is not None else None
    su = build_setup(catalog, RACK, MODEL, WORKLOAD, PRECISION, defaults=pin.defaults,
                     calibration=cal)
    par = LAYOUT.parallel()
    fitted = float(su.physics.mtp_acceptance_frac)
    rows = []
    for draft, accepted, tps in MEASURED:
        row = {"mtp_depth": draft, "measured_accepted": accepted,
               "measured_tokens_per_s_per_user": tps,
               "measured_step_ms": 1e3 * accepted / tps}
        for name, a in (("fitted", fitted), ("blog", _acceptance_for(accepted, draft))):
            inst = Instance(su.hw, par, su.shape, su.physics, su.serving, draft_tokens=draft,
                            acceptance=a if draft else 0.0,
                            draft_cost_frac=float(su.physics.mtp_draft_cost_frac))
            d = decode(inst, 1.0, CONTEXT_TOKENS)
            step = float(np.ravel(d.step_s)[0])
            per_user = float(np.ravel(d.tokens_per_step)[0]) / step
            row[f"{name}_acceptance"] = a if draft else None
            row[f"{name}_tokens_per_s_per_user"] = per_user
            row[f"{name}_error_pct"] = 100.0 * (per_user / tps - 1.0)
            row["model_step_ms"] = 1e3 * step   # the same at either acceptance
        rows.append(row)
    return {"software": describe(cal, su.acc.vendor)["text"] if cal is not None
            else "a-priori defaults", "rows": rows}


#: The throughput run: output tokens/s per GPU, requests in flight, cap per rank, date.
THROUGHPUT, CONCURRENCY, MAX_BATCH, THROUGHPUT_DATE = 4600.0, 3072, 384, "2025-05-30"
THROUGHPUT_SOURCE = ("github.com/NVIDIA/TensorRT-LLM docs/source/blogs/tech_blog/blog3_"
                     "Optimizing_DeepSeek_R1_Throughput_on_NVIDIA_Blackwell_GPUs.md")


def throughput_command(calibration: str | None = None) -> list[str]:
    """The ``dcplan perf`` command of the throughput run (no latency limit)."""
    cmd = [sys.executable, "-m", "dcplan", "perf", "--rack", RACK, "--model", MODEL,
           "--workload", WORKLOAD, "--precision", PRECISION, "--input-tokens", "1024",
           "--output-tokens", "2048", "--concurrency", str(CONCURRENCY), "--tp", "8",
           "--ep", "8", "--dp-attention", "--max-batch", str(MAX_BATCH), "--engine",
           ENGINE, "--date", THROUGHPUT_DATE, "--speculative", "none", "--mode",
           "aggregated", "--ttft-s", "1e5", "--tpot-ms", "1e5", "--json"]
    return cmd + (["--calibration", calibration] if calibration else [])


def run_throughput(calibration: str | None) -> dict:
    """The model's output tokens/s per GPU at the throughput run's settings."""
    done = subprocess.run(throughput_command(calibration), capture_output=True, text=True,
                          check=True, timeout=600)
    d = json.loads(done.stdout)
    per_gpu = float(d["output_tokens_per_s_per_gpu"])
    return {"measured_output_tokens_per_s_per_gpu": THROUGHPUT,
            "model_output_tokens_per_s_per_gpu": per_gpu,
            "error_pct": 100.0 * (per_gpu / THROUGHPUT - 1.0), "batch": d["batch"],
            "parallel": d["parallel"], "software": d["software"]["text"]}


def main() -> None:
    """Print the table (and write JSON with ``--json``)."""
    ap = check_args.parser(__doc__)
    args = ap.parse_args()
    res = run(args.calibration)
    print(f"DeepSeek-R1 on {RACK} ({PRECISION}), one request, KV {CONTEXT_TOKENS:,.0f} tokens, "
          f"attention TP8, MoE EP4; software {res['software']} ({SOURCE})")
    for r in res["rows"]:
        print(f"  MTP {r['mtp_depth']}: measured {r['measured_tokens_per_s_per_user']:5.0f} "
              f"tokens/s per user (step {r['measured_step_ms']:5.2f} ms); model step "
              f"{r['model_step_ms']:5.2f} ms, {r['blog_tokens_per_s_per_user']:5.0f} "
              f"({r['blog_error_pct']:+.1f} %) at the blog's acceptance, "
              f"{r['fitted_tokens_per_s_per_user']:5.0f} ({r['fitted_error_pct']:+.1f} %) "
              "at the fitted one")
    tp = run_throughput(args.calibration)
    res["throughput"] = tp
    print(f"Maximum throughput, 1k/2k, {tp['parallel']}, {tp['batch']:,} sequences in flight "
          f"({MAX_BATCH} per rank), software {tp['software']}: measured "
          f"{THROUGHPUT:,.0f} output tokens/s per GPU, model "
          f"{tp['model_output_tokens_per_s_per_gpu']:,.0f} ({tp['error_pct']:+.1f} %) "
          f"({THROUGHPUT_SOURCE})")
    check_args.write_json(args.json, res)


if __name__ == "__main__":
    main()
