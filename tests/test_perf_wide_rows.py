"""Wide expert-parallel measurement rows: phase rows with a layout, their prediction and
their weight in the fit."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dcplan.catalog import load_catalog
from dcplan.errors import InputError
from dcplan.perf.calibration import balance_weights, instance_gpus
from dcplan.perf.measurements import Measurement, load_measurements
from dcplan.perf.params import load_perf_defaults, load_perf_inputs
from dcplan.perf.predict import hardware_params, phase_arrays, physics_params
from dcplan.perf.roofline import Hardware, ModelShape, Parallel, forward_step
from dcplan.schema import Precision

HEADER = ("hardware,model,precision,phase,gpus,batch,context_tokens,tokens_per_s,power_w,"
          "source,as_of,framework,ep,dp_attention\n")

#: Request lengths of the shipped measurement files' benchmarks.
LENGTHS = load_perf_inputs(benchmarks=True).benchmarks.lengths


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def _write(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "rows.csv"
    p.write_text(HEADER + body)
    return p


def test_dep_row_parses_and_is_predicted_with_its_layout(cat, tmp_path):
    rows = load_measurements(_write(tmp_path, (
        "h100_sxm,deepseek_r1,fp8,decode,72,18432,2000,200538,,blog,2025-05-05,sglang,72,"
        "true\n"
        "h100_sxm,deepseek_r1,fp8,decode,8,512,2000,20000,,blog,2025-05-05,sglang,,\n")), cat)
    wide, board = rows
    assert (wide.ep, wide.dp_attention, board.ep, board.dp_attention) == (72, True, 1, False)
    d = load_perf_defaults()
    hp, ph = hardware_params(d, "h100_sxm", None), physics_params(d, None)
    a = phase_arrays(wide, cat, hp, ph, d, LENGTHS)
    assert a["label"] == "DEP72"
    b = phase_arrays(board, cat, hp, ph, d, LENGTHS)
    assert b["label"] == "TP8"


def test_dep_prefill_row_chunks_per_rank(cat):
    """A DEP32 prefill pass holds one 8,192-token chunk per rank: 524,288 tokens in two
    passes, not 64."""
    d = load_perf_defaults()
    m = Measurement(row=1, hardware="h100_sxm", model="deepseek_r1",
                    precision=Precision("fp8"), phase="prefill", gpus=32, batch=256,
                    context_tokens=2048.0, tokens_per_s=218172.0, power_w=None, ep=32,
                    dp_attention=True)
    hp, ph = hardware_params(d, "h100_sxm", None), physics_params(d, None)
    got = float(phase_arrays(m, cat, hp, ph, d, LENGTHS)["tokens_per_s"][0])
    sv = d.serving
    shape = ModelShape.build(cat.get("models", "deepseek_r1"), "fp8", sv)
    hw = Hardware.build(cat.get("accelerators", "h100_sxm"), shape, hp, sv, 400.0, 8)
    tokens = 256 * 2048.0
    passes = math.ceil(tokens / (sv.prefill_chunk_tokens * 32))
    assert passes == 2
    st = forward_step(hw, Parallel(1, 32, 32), shape, ph, sv, tokens, tokens / 32,
                      shape.attended(1024.0), 256 / 32 * shape.kv_bytes_seq(2048.0),
                      "prefill", steps=passes)
    assert got == pytest.approx(tokens / float(st.total_s))


@pytest.mark.parametrize("cells, field", [
    ("8,256,2000,1,,b,2025-05,sglang,3,true", "ep"),   # 3 does not divide 8 GPUs
    ("8,256,2000,1,,b,2025-05,sglang,8,yes", "dp_attention"),
])
def test_bad_layout_cells_are_named(cat, tmp_path, cells, field):
    with pytest.raises(InputError) as e:
        load_measurements(_write(tmp_path, "h100_sxm,deepseek_r1,fp8,decode," + cells + "\n"),
                          cat)
    assert any(p.field == field for p in e.value.problems)


def test_a_bad_ep_is_named_with_the_rows_other_problems(cat, tmp_path):
    # a bad date and dp_attention do not hide the EP that does not fit the replica
    with pytest.raises(InputError) as e:
        load_measurements(_write(tmp_path, "h100_sxm,deepseek_r1,fp8,decode,8,256,2000,1,,b,"
                                           "20x5-05,sglang,3,yes\n"), cat)
    assert {p.field for p in e.value.problems} >= {"as_of", "dp_attention", "ep"}


def test_an_ep_dividing_the_replica_is_a_layout(cat, tmp_path):
    """EP 4 on 8 GPUs (TensorRT-LLM --tp 8 --ep 4: each expert over 2 GPUs) loads."""
    (m,) = load_measurements(_write(tmp_path, "h100_sxm,deepseek_r1,fp8,decode,8,256,2000,1,"
                                              ",b,2025-05,trt,4,false\n"), cat)
    assert (m.gpus, m.ep, m.dp_attention) == (8, 4, False)


def test_ep_on_a_dense_model_is_refused(cat, tmp_path):
    with pytest.raises(InputError) as e:
        load_measurements(_write(tmp_path, "h100_sxm,llama2_70b,fp8,decode,8,64,500,900,,"
                                           "b,2024-08,trt,8,\n"), cat)
    assert any(p.field == "ep" for p in e.value.problems)


def test_wide_rows_are_their_own_balancing_group(cat):
    """Three board rows and one wide row of one accelerator (MoE only): groups of 3 and 1.

    ``w^2 = N / (G W_f) n^-1/2`` with ``N = 4``, ``G = 1``, ``W_f = 3^(1/2) + 1^(1/2)``.
    """
    base = Measurement(row=1, hardware="h100_sxm", model="deepseek_r1",
                       precision=Precision("fp8"), phase="decode", gpus=8, batch=64,
                       context_tokens=1000.0, tokens_per_s=1.0, power_w=None)
    rows = [base, base, base, replace(base, gpus=72, ep=72, dp_attention=True)]
    assert [instance_gpus(m) for m in rows] == [8, 8, 8, 72]
    w = balance_weights(rows, cat, 0.5)
    wf = math.sqrt(3) + 1.0
    assert w[:3] == pytest.approx(np.sqrt(4 / wf * 3 ** -0.5))
    assert w[3] == pytest.approx(np.sqrt(4 / wf * 1.0))
    # the single wide row weighs as much as the three board rows together, to the root
    assert w[3] ** 2 == pytest.approx(3 ** 0.5 * w[0] ** 2)
