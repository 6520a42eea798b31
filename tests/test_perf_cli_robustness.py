"""dcplan perf: one message for a model that does not fit, honest advice, wording."""

from __future__ import annotations

from functools import partial

import pytest
from typer.testing import CliRunner

from dcplan import perf
from dcplan.catalog import load_catalog
from dcplan.cli import app
from dcplan.perf.params import load_perf_inputs

#: The shipped performance defaults and calibration (the fixture catalogs have none of
#: their own); the model reads no file itself.
SHIPPED_PERF = load_perf_inputs()
PERF_KW = {"defaults": SHIPPED_PERF.defaults, "calibration": SHIPPED_PERF.calibration}
rack_performance = partial(perf.rack_performance, **PERF_KW)


runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args))


def test_no_fit_reason_printed_once_on_stderr():
    result = run("perf", "--rack", "hgx_h100", "--model", "deepseek_r1", "--workload", "chat",
                 "--precision", "fp8")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.count("needs 671 GB of weights") == 1


def test_no_fit_advice_only_names_supported_precisions():
    cat = load_catalog()
    p = rack_performance(cat, "hgx_h100", "deepseek_r1", "chat", "fp8")
    assert not p.fits
    assert "lower precision" not in p.reason and "fp4" not in p.reason
    p = rack_performance(cat, "hgx_h100", "deepseek_r1", "chat", "bf16")
    assert "serve at fp8" in p.reason and "fp4" not in p.reason


def test_unknown_rack_suggests_prefix_match():
    result = run("perf", "--rack", "gb200", "--workload", "chat")
    assert result.exit_code == 1
    assert "did you mean 'gb200_nvl72'" in result.stderr
    assert "hgx_b200'?" not in result.stderr


@pytest.mark.slow
def test_replica_wording():
    """'N replicas of M accelerator(s) per rack', with the API's N and M (singular for 1)."""
    p = rack_performance(load_catalog(), "gb200_nvl72", None, "chat_disagg")
    result = run("perf", "--rack", "gb200_nvl72", "--workload", "chat_disagg")
    assert result.exit_code == 0, result.output
    g = p.replica_gpus
    want = (f"{p.replicas_per_rack:g} replicas of {g} "
            f"accelerator{'' if g == 1 else 's'} per rack")
    assert want in result.stdout
    assert "accelerators x" not in result.stdout
    one = run("perf", "--rack", "gb200_nvl72", "--model", "llama3_8b", "--input-tokens", "1000",
              "--output-tokens", "200", "--tp", "1", "--json")
    assert one.exit_code == 0, one.output
    one_txt = run("perf", "--rack", "gb200_nvl72", "--model", "llama3_8b", "--input-tokens",
                  "1000", "--output-tokens", "200", "--tp", "1").stdout
    assert "72 replicas of 1 accelerator per rack" in one_txt


def test_disaggregated_bottleneck_names_both_pools():
    cat = load_catalog()
    p = rack_performance(cat, "gb200_nvl72", None, "chat_disagg", None)
    assert p.fits and p.mode == "disaggregated"
    # The decode batch is at the KV-cache limit: the decode pool says so.
    if p.batch == p.max_batch:
        assert p.decode_bottleneck == "memory_capacity"
    big = "prefill" if p.prefill_share >= 0.5 else "decode"
    assert p.bottleneck == (p.prefill_bottleneck if big == "prefill" else p.decode_bottleneck)
    out = run("perf", "--rack", "gb200_nvl72", "--workload", "chat_disagg").stdout
    assert "prefill pool (" in out and f"decode pool ({1 - p.prefill_share:.0%}): " \
        f"{p.decode_bottleneck}" in out


def test_missing_input_files_exit_1(tmp_path):
    result = run("perf", "validate", str(tmp_path / "nope.csv"))
    assert result.exit_code == 1 and "not found" in result.stderr
    result = run("perf", "validate", "catalogs/measurements/mlperf_inference.csv",
                 "--calibration", str(tmp_path))
    assert result.exit_code == 1, result.output


@pytest.mark.slow
@pytest.mark.parametrize("token_s, bound", [(5e-4, True), (0.0, False)])
def test_a_kv_handover_bound_prefill_pool_says_it_is_extrapolated(tmp_path, token_s, bound):
    """The fitted hand-over comes from 8-GPU boards; where it bounds a point, perf says so.

    A calibration with a hand-over of 5e-4 s per prompt token (2,000 tokens/s per
    prefill instance, far below any prefill) makes it the prefill pool's bound; with 0
    only the links bound it and the line is absent.
    """
    import json
    import re

    from dcplan.paths import data_dir
    from dcplan.perf.goodput import kv_handover_extrapolation

    words = kv_handover_extrapolation(SHIPPED_PERF.calibration.basis)
    assert "deepseek_r1 runs with prompts of at most 8,192 tokens" in words
    from dcplan.perf.params import CALIBRATION_FILE

    text = re.sub(r"(kv_handover_token_s: ).*", rf"\g<1>{token_s}",
                  (data_dir("catalogs") / CALIBRATION_FILE).read_text())
    cal = tmp_path / "cal.yaml"
    cal.write_text(text)
    args = ["perf", "--rack", "gb200_nvl72", "--model", "deepseek_r1", "--input-tokens",
            "8192", "--output-tokens", "1024", "--precision", "fp4", "--mode",
            "disaggregated", "--concurrency", "256", "--calibration", str(cal)]
    out = run(*args)
    assert out.exit_code == 0, out.output
    assert ("prefill pool (" in out.stdout
            and ("): kv_handover; decode pool" in out.stdout) == bound)
    assert (words in out.stdout.replace("\n", "")) == bound
    # the same words in the JSON's extrapolation, with the rack-scale EP reason
    doc = json.loads(run(*args, "--json").stdout)
    assert (words in doc["extrapolation"]) == bound
    # on an 8-GPU board with 8,192-token DeepSeek-R1 prompts, as fitted, a bounding
    # hand-over is no extrapolation
    board = json.loads(run(*[a if a != "gb200_nvl72" else "hgx_b200" for a in args],
                           "--json").stdout)
    if bound:
        assert board["prefill_bottleneck"] == "kv_handover"
    assert words not in board["extrapolation"]


@pytest.mark.parametrize("engine, per_rank", [("", True), ("dynamo-trt", True),
                                               ("dynamo-sglang", False)])
@pytest.mark.slow
def test_perf_says_on_how_many_streams_a_prefill_replica_hands_over(engine, per_rank):
    """TensorRT-LLM (NVIDIA's planning engine) hands KV over per attention-DP rank, so a
    DEP prefill replica has as many streams as DP ranks; SGLang one per replica. The
    text and --json say which the point assumes."""
    import json
    import re

    args = ["perf", "--rack", "gb200_nvl72", "--workload", "coding_agent_disagg"]
    args += ["--engine", engine] if engine else []
    out = run(*args, "--json")
    assert out.exit_code == 0, out.output
    cfg = json.loads(out.stdout)
    cfg = cfg.get("configuration", cfg)
    layout, streams = cfg["prefill_parallel"], cfg["prefill_handover_streams"]
    dp = re.match(r"DEP(\d+)$", layout) or re.search(r"DP(\d+)", layout)
    assert streams == (int(dp.group(1)) if per_rank and dp else 1), (layout, streams)
    text = run(*args)
    assert text.exit_code == 0, text.output
    assert (f"KV hand-over on {streams} stream{'s' if streams != 1 else ''} per replica"
            in text.stdout.replace("\n", " "))


@pytest.mark.slow
def test_max_batch_caps_the_running_requests_and_holds_the_server_batch_below_it():
    """--max-batch sets the engine's running-request cap per attention-DP rank. Offline
    runs at the largest batch, so a TP8 replica (one rank) runs exactly the cap; under a
    Server SLO the Poisson arrivals that find every slot taken wait, so the batch stays
    below the cap and a tighter cap never gives more throughput. MLPerf's Llama 3.1 405B
    Server on H200 ran TP8 with max_batch_size 64 (catalogs/measurements/README.md)."""
    import json

    base = ["perf", "--rack", "hgx_b200", "--model", "llama31_405b", "--precision", "fp4",
            "--input-tokens", "9400", "--output-tokens", "680", "--tp", "8", "--json"]
    off = run(*base, "--offline", "--max-batch", "16")
    assert off.exit_code == 0, off.output
    rec = json.loads(off.stdout)
    assert (rec["batch"], rec["max_batch"], rec["max_batch_per_rank"]) == (16, 16, 16)
    server = ["--ttft-s", "6", "--tpot-ms", "175", "--percentile", "99"]
    got = {}
    for cap in (None, 256, 64, 32):
        out = run(*base, *server, *(["--max-batch", str(cap)] if cap else []))
        assert out.exit_code == 0, out.output
        got[cap] = json.loads(out.stdout)
    assert got[None]["max_batch_per_rank"] == load_perf_inputs().defaults.serving \
        .max_batch_per_rank
    for cap in (64, 32):
        assert got[cap]["batch"] < cap
    tput = [got[c]["output_tokens_per_s"] for c in (None, 256, 64, 32)]
    # never more with a tighter cap (a cap that does not bind, 256 here, gives the same
    # throughput up to the root finder's tolerance)
    assert all(b <= a * (1 + 1e-9) for a, b in zip(tput, tput[1:], strict=False))
    assert tput[-1] < tput[0] * 0.99
    text = run(*base[:-1], *server, "--max-batch", "64")
    assert "--max-batch 64 per attention-DP rank allow 64" in text.stdout.replace("\n", " ")
    bad = run(*base, "--max-batch", "0")
    assert bad.exit_code == 2 and "--max-batch" in bad.output


@pytest.mark.slow
def test_frontier_max_batch_caps_every_point():
    """perf frontier --max-batch caps every point's running requests per attention-DP
    rank: a dense model runs no DP attention, so no point's batch per instance exceeds
    the cap, the uncapped frontier has points above it, and the capped one's most
    throughput per GPU is lower (a cap only removes batches)."""
    import json

    base = ["perf", "frontier", "--rack", "hgx_h200", "--model", "llama3_70b",
            "--input-tokens", "1024", "--output-tokens", "1024", "--mode", "aggregated",
            "--json"]
    free, capped = run(*base), run(*base, "--max-batch", "8")
    assert free.exit_code == 0 and capped.exit_code == 0, free.output + capped.output
    free, capped = json.loads(free.stdout), json.loads(capped.stdout)
    assert capped["max_batch_per_rank"] == 8
    assert free["max_batch_per_rank"] == load_perf_inputs().defaults.serving.max_batch_per_rank
    assert capped["points"] and max(p["batch"] for p in capped["points"]) <= 8
    assert max(p["batch"] for p in free["points"]) > 8

    def best(doc):
        return max(p["output_tokens_per_s_per_gpu"] for p in doc["points"])

    assert best(capped) < best(free)
    text = run(*base[:-1], "--max-batch", "8")
    assert "at most 8 running requests per attention-DP rank" in text.stdout.replace("\n", " ")


def test_ep_extrapolation_names_wide_expert_parallelism_inside_one_domain():
    """Hand cases: an MoE group wider than the measured width inside one domain is an
    extrapolation; as wide as measured, spanning domains (fitted on RDMA runs) or a
    dense model is not; with no basis recorded nothing is named."""
    from dcplan.perf.goodput import ep_extrapolation
    from dcplan.perf.params import FitBasis

    b8 = FitBasis(domain_ep_max=8)
    note = ep_extrapolation(True, 72, 72, b8)
    assert "decode expert parallelism 72 inside one 72-GPU" in note and "at most 8" in note
    assert ep_extrapolation(True, 16, 72, b8).startswith("decode expert parallelism 16")
    assert ep_extrapolation(True, 8, 72, b8) == ""
    assert ep_extrapolation(True, 16, 8, b8) == ""
    assert ep_extrapolation(False, 72, 72, b8) == ""
    assert ep_extrapolation(True, 72, 72, None) == ""   # not recorded (old calibration)
    # a fit on dense rows only (every row EP 1): any in-domain MoE group is outside it
    assert "at most 1 GPUs" in ep_extrapolation(True, 2, 8, FitBasis(domain_ep_max=1))
    # no fitted row with a group inside one domain (all spanning domains): every
    # in-domain group is outside, but EP 1 (no all-to-all) never is
    none = FitBasis(domain_ep_max=0)
    assert "fitted on no group inside one domain" in ep_extrapolation(True, 2, 8, none)
    assert ep_extrapolation(True, 1, 8, none) == ""
    # decode and prefill apart: decode fitted up to 48 inside a domain, prefill up to 8
    split = FitBasis(domain_ep_max=48, prefill_domain_ep_max=8)
    assert split.prefill_ep_max == 8 and b8.prefill_ep_max == 8   # old basis: as decode
    assert ep_extrapolation(True, 48, 72, split, 8) == ""          # disaggregated, inside
    pre = ep_extrapolation(True, 48, 72, split, 24)                # prefill DEP24
    assert pre.startswith("prefill expert parallelism 24") and "decode" not in pre
    # aggregated (no prefill pool): the instance prefills too, so DEP48 is outside
    agg = ep_extrapolation(True, 48, 72, split)
    assert agg.startswith("prefill expert parallelism 48") and "at most 8 GPUs" in agg
    both = ep_extrapolation(True, 72, 72, split, 16)
    assert "decode expert parallelism 72" in both and "at most 48" in both
    assert "; prefill expert parallelism 16" in both and both.endswith(
        "Assumptions and known weaknesses)")


def test_handover_outside_fit_hand_cases():
    """Hand-over rows of DeepSeek-R1 with prompts up to 8,192 tokens on 8-GPU domains:
    inside all three is fitted; a 72-GPU domain, a 32,000-token prompt or another model
    is not; with no disaggregated row every hand-over is outside, and its reason says
    the time is not fitted; with no basis recorded nothing is named."""
    from dcplan.perf.goodput import handover_outside_fit, kv_handover_extrapolation
    from dcplan.perf.params import FitBasis

    b = FitBasis(8, 8, 8192.0, ("deepseek_r1",))
    assert not handover_outside_fit(b, 8, 8192, "deepseek_r1")
    assert handover_outside_fit(b, 72, 1024, "deepseek_r1")
    assert handover_outside_fit(b, 8, 32000, "deepseek_r1")
    assert handover_outside_fit(b, 8, 1024, "llama3_70b")
    none = FitBasis(domain_ep_max=8)
    assert handover_outside_fit(none, 8, 1024, "deepseek_r1")
    assert "not fitted" in kv_handover_extrapolation(none)
    assert "at most 8 GPUs" in kv_handover_extrapolation(b)
    assert not handover_outside_fit(None, 72, 1024, "deepseek_r1")


def test_shipped_calibration_basis_is_what_the_measurement_files_hold():
    """The shipped calibration's basis is recomputed from the shipped rows: the widest
    expert parallelism of decode and of prefill (phase ``ep`` by phase, serving
    ``decode_ep`` / ``prefill_ep``) of a row whose group fits inside its accelerator's
    scale-up domain; and the hand-over fields
    from the disaggregated rows (largest domain, longest prompt, models)."""
    from pathlib import Path

    from dcplan.perf.measurements import load_measurement_files, scaleup_domain

    root = Path(__file__).resolve().parents[1]
    catalog = load_catalog(root / "catalogs")
    rows = load_measurement_files(sorted((root / "catalogs" / "measurements").glob("*.csv")),
                                  catalog)
    def widest(phase):
        eps = [m.ep if m.kind == "phase" and m.phase == phase else
               getattr(m, f"{phase}_ep", 0) for m in rows]
        return max(int(e) for m, e in zip(rows, eps, strict=True)
                   if e and int(e) <= (scaleup_domain(catalog, m.hardware) or 8))

    basis = SHIPPED_PERF.calibration.basis
    # decode: the GB200 NVL72 DEP48 run (wide_ep.csv); prefill: 8-GPU boards
    assert widest("decode") == basis.domain_ep_max == 48
    assert widest("prefill") == basis.prefill_domain_ep_max == 8
    # the hand-over time's rows: the disaggregated serving rows
    dis = [m for m in rows if getattr(m, "disaggregated", False)]
    assert len(dis) > 100
    assert max(scaleup_domain(catalog, m.hardware) for m in dis) \
        == basis.handover_domain_max == 8
    assert max(m.input_tokens for m in dis) == basis.handover_prompt_tokens_max == 8192
    assert sorted({m.model for m in dis}) == list(basis.handover_models) == ["deepseek_r1"]
    # the decode rows with a group wider than a board (8) inside one domain: the GB200
    # NVL72 DEP48 run alone (98,304 sequences on 48 GPUs); no serving row (the B200 and
    # H200 serving rows' domain is their 8-GPU board)
    wide = [m for m in rows if (m.ep if m.kind == "phase" and m.phase == "decode" else
                                getattr(m, "decode_ep", 0) or 0) > 8
            and (m.ep if m.kind == "phase" else m.decode_ep)
            <= (scaleup_domain(catalog, m.hardware) or 8)]
    assert [(m.hardware, m.gpus, m.batch) for m in wide] == [("gb200_gpu", 48, 98304)]
    assert basis.wide_decode_seqs_per_gpu_min == 98304 / 48 == 2048.0
    # the kinds of model per architecture: the rows' models with and without experts
    kinds: dict = {}
    for m in rows:
        acc = catalog.get("accelerators", m.hardware)
        kinds.setdefault(acc.architecture, set()).add(
            "dense" if catalog.get("models", m.model).experts_total is None else "moe")
    assert {a: tuple(sorted(k)) for a, k in kinds.items()} == dict(basis.architecture_kinds)
    # MI355X's rows are DeepSeek-R1 alone; MLPerf's Llama rows run on NVIDIA's parts and
    # on MI300X and MI325X (CDNA3)
    assert basis.kinds_on("cdna4") == ("moe",)
    assert basis.kinds_on("blackwell") == basis.kinds_on("hopper") == ("dense", "moe")
    assert basis.kinds_on("cdna3") == ("dense", "moe")
    assert basis.kinds_on("rubin") == ()


@pytest.mark.slow
def test_a_model_kind_no_row_fitted_on_its_architecture_is_named():
    """Hand cases: a dense model on an architecture whose rows are MoE only is named, and
    the reverse; a kind with rows there, an architecture without rows (its values come
    from elsewhere and are named apart, if at all), a basis without kinds (written
    before them) or no basis names nothing. Through the CLI: the shipped MI355X rack
    serving the dense chat model says so in `perf`, `perf frontier` (once, and per
    point) and the JSON; a Blackwell rack does not."""
    import json

    from dcplan.perf.goodput import model_kind_extrapolation
    from dcplan.perf.params import FitBasis

    b = FitBasis(architecture_kinds=(("blackwell", ("dense", "moe")), ("cdna4", ("moe",)),
                                     ("tpu", ("dense",))))
    note = model_kind_extrapolation(False, "llama3_70b", "cdna4", b)
    assert note.startswith("llama3_70b is a dense model, and the fitted rows on the cdna4 "
                           "architecture run mixture-of-experts models only")
    assert note.endswith("Assumptions and known weaknesses)")
    assert "is a mixture-of-experts model" in model_kind_extrapolation(True, "r1", "tpu", b)
    for args in ((True, "r1", "cdna4", b), (False, "l", "blackwell", b), (False, "l", "rubin", b),
                 (False, "l", "cdna4", FitBasis()), (False, "l", "cdna4", None),
                 (False, "l", None, b)):
        assert model_kind_extrapolation(*args) == "", args

    out = run("perf", "--rack", "mi355x_rack", "--workload", "chat", "--json")
    assert out.exit_code == 0, out.output
    said = json.loads(out.stdout)["extrapolation"]
    assert said.startswith("llama3_70b is a dense model, and the fitted rows on the cdna4")
    text = run("perf", "--rack", "mi355x_rack", "--workload", "chat")
    assert "llama3_70b is a dense model" in " ".join(text.stdout.split())
    front = run("perf", "frontier", "--rack", "mi355x_rack", "--model", "llama3_70b",
                "--input-tokens", "1024", "--output-tokens", "1024", "--json")
    assert front.exit_code == 0, front.output
    f = json.loads(front.stdout)
    assert f["extrapolation"].startswith("every point: llama3_70b is a dense model")
    assert f["points"] and all(p["extrapolation"].startswith("llama3_70b is a dense")
                               for p in f["points"])
    b200 = run("perf", "--rack", "hgx_b200", "--workload", "chat", "--json")
    assert json.loads(b200.stdout)["extrapolation"] == ""


def test_a_basis_with_bad_model_kinds_is_refused_with_the_field(tmp_path):
    """A calibration whose basis maps an architecture to no kind, or to a kind that is
    not dense or moe, is refused: file, entry and field named, exit 1, no traceback."""
    from dcplan.paths import data_dir
    from dcplan.perf.params import CALIBRATION_FILE

    shipped = (data_dir("catalogs") / CALIBRATION_FILE).read_text()
    assert "    cdna4:\n    - moe\n" in shipped
    for bad_kinds in ("    cdna4: []\n", "    cdna4:\n    - sparse\n"):
        bad = tmp_path / "bad.yaml"
        bad.write_text(shipped.replace("    cdna4:\n    - moe\n", bad_kinds))
        out = run("perf", "--rack", "mi355x_rack", "--workload", "chat", "--calibration",
                  str(bad))
        assert out.exit_code == 1, out.output
        text = " ".join(out.output.split())
        assert "bad.yaml" in text and "basis" in text and "architecture_kinds" in text
        assert "non-empty list of dense and moe" in text and "Traceback" not in out.output


def test_small_batch_wide_decode_is_named_by_hand():
    """Hand cases of the small-batch note: a decode group wider than a board (8) inside
    the domain, below the fitted wide rows' sequences per GPU, is named with both
    figures; at or above them, as narrow as a board, spanning domains, with no batch
    recorded (a basis of before the field) or no basis, nothing is; with no wide row
    fitted at all every such group is named. ``ep_extrapolation`` joins it to the
    width note."""
    from dcplan.perf.goodput import ep_extrapolation, small_batch_extrapolation
    from dcplan.perf.params import FitBasis

    b = FitBasis(domain_ep_max=48, prefill_domain_ep_max=8,
                 wide_decode_seqs_per_gpu_min=2048.0)
    note = small_batch_extrapolation(48, 72, b, 100.0, 8)
    assert note.startswith("decode at 100 sequences per GPU with expert parallelism 48 "
                           "inside one 72-GPU scale-up domain")
    assert "hold at least 2,048 per GPU" in note and note.endswith(
        "Assumptions and known weaknesses)")
    assert small_batch_extrapolation(48, 72, b, 2048.0, 8) == ""      # as fitted
    assert small_batch_extrapolation(8, 72, b, 1.0, 8) == ""          # one board
    assert small_batch_extrapolation(16, 8, b, 1.0, 8) == ""          # spans domains
    assert small_batch_extrapolation(48, 72, b, None, 8) == ""        # not checked
    assert small_batch_extrapolation(48, 72, b, 1.0, 0) == ""         # not checked
    assert small_batch_extrapolation(48, 72, None, 1.0, 8) == ""
    old = FitBasis(domain_ep_max=48, prefill_domain_ep_max=8)         # field absent
    assert old.wide_decode_seqs_per_gpu_min is None
    assert small_batch_extrapolation(48, 72, old, 1.0, 8) == ""
    none = FitBasis(domain_ep_max=48, prefill_domain_ep_max=8, wide_decode_seqs_per_gpu_min=0)
    assert "no fitted decode row has a group wider than a board" in \
        small_batch_extrapolation(16, 72, none, 5000.0, 8)
    # joined to the width note (disaggregated DEP72 decode over DEP8 prefill)
    both = ep_extrapolation(True, 72, 72, b, 8, 100.0, 8)
    assert both.startswith("decode expert parallelism 72 inside one 72-GPU")
    assert "; and decode at 100 sequences per GPU with expert parallelism 72" in both
    assert ep_extrapolation(True, 48, 72, b, 8, 100.0, 8) == note
    assert ep_extrapolation(False, 48, 72, b, 8, 100.0, 8) == ""      # dense: no experts


@pytest.mark.slow
def test_perf_says_when_wide_ep_inside_a_rack_domain_is_an_extrapolation():
    """dcplan perf on GB200 NVL72 at DEP72 says its figure is an extrapolation (text and
    JSON); HGX B200 at DEP8, as wide as the fitted runs, does not."""
    import json

    base = ["perf", "--model", "deepseek_r1", "--input-tokens", "1024", "--output-tokens",
            "1024", "--precision", "fp4", "--offline", "--mode", "aggregated", "--tp", "1",
            "--dp-attention"]
    wide = run(*base, "--rack", "gb200_nvl72", "--ep", "72", "--json")
    board = run(*base, "--rack", "hgx_b200", "--ep", "8", "--json")
    assert wide.exit_code == 0 and board.exit_code == 0, wide.output + board.output
    assert json.loads(wide.stdout)["extrapolation"].startswith(
        "decode expert parallelism 72")
    assert json.loads(board.stdout)["extrapolation"] == ""
    text = " ".join(run(*base, "--rack", "gb200_nvl72", "--ep", "72").stdout.split())
    assert "extrapolation" in text and "at most 48 GPUs inside a domain" in text
    # aggregated DEP72 prefills on the instance too: prefill is fitted on boards only
    assert "prefill expert parallelism 72" in text and "at most 8 GPUs inside" in text


@pytest.mark.slow
def test_the_basis_comes_from_the_calibration_file(tmp_path):
    """The flag follows the calibration's basis, not a setting elsewhere: a copy of the
    shipped calibration whose basis says in-domain groups of 72 were fitted names
    nothing at DEP72; one without a basis (written before bases were) names nothing
    and still runs; '--calibration none' names nothing; a basis with wrong values is
    refused with every problem named (file, entry, field), exit 1."""
    import json
    import re

    from dcplan.paths import data_dir
    from dcplan.perf.params import CALIBRATION_FILE

    shipped = (data_dir("catalogs") / CALIBRATION_FILE).read_text()
    assert re.search(r"^basis:\n  domain_ep_max: 48\n  prefill_domain_ep_max: 8$",
                     shipped, re.M)
    base = ["perf", "--model", "deepseek_r1", "--input-tokens", "1024", "--output-tokens",
            "1024", "--precision", "fp4", "--offline", "--mode", "aggregated", "--tp", "1",
            "--dp-attention", "--rack", "gb200_nvl72", "--ep", "72", "--json",
            "--calibration"]
    wide = tmp_path / "wide.yaml"
    wide.write_text(shipped.replace("  domain_ep_max: 48", "  domain_ep_max: 72").replace(
        "  prefill_domain_ep_max: 8", "  prefill_domain_ep_max: 72"))
    # a basis of before 2026-12-06 (no prefill width): domain_ep_max counts for both
    both = tmp_path / "both.yaml"
    both.write_text(shipped.replace("  domain_ep_max: 48", "  domain_ep_max: 72").replace(
        "  prefill_domain_ep_max: 8\n", ""))
    assert "prefill_domain" not in both.read_text()
    old = tmp_path / "old.yaml"
    old.write_text(re.sub(r"^basis:\n(  .*\n)+", "", shipped, flags=re.M))
    assert "\nbasis:" not in old.read_text() and "hardware:" in old.read_text()
    for cal in (wide, both, old, "none"):
        out = run(*base, str(cal))
        assert out.exit_code == 0, out.output
        assert json.loads(out.stdout)["extrapolation"] == "", cal
    bad = tmp_path / "bad.yaml"
    bad.write_text(shipped.replace("  domain_ep_max: 48", "  domain_ep_max: -3").replace(
        "  handover_models:\n  - deepseek_r1", "  handover_models: deepseek_r1").replace(
        "  handover_domain_max: 8", "  handover_domain_max: 8\n  handover_domain: 8"))
    out = run(*base, str(bad))
    assert out.exit_code == 1, out.output
    text = " ".join(out.output.split())
    assert "bad.yaml" in text
    for field in ("domain_ep_max", "handover_models", "handover_domain"):
        assert "basis" in text and field in text, field
    assert "must be a whole number from 0" in text and "must be a list of model ids" in text
    assert "unknown field" in text and "Traceback" not in out.output


@pytest.mark.slow
def test_a_retired_fit_basis_setting_says_where_it_went(tmp_path):
    """perf_defaults.yaml of 2026-12-05 held the basis as serving settings; such a file
    is refused with a message that names the calibration's basis section, exit 1."""
    import shutil

    from dcplan.paths import data_dir

    cat = tmp_path / "catalogs"
    shutil.copytree(data_dir("catalogs"), cat)
    pd = cat / "perf_defaults.yaml"
    text = pd.read_text()
    assert "\n  measurement_scaleout_gbps: 400\n" in text
    pd.write_text(text.replace("\n  measurement_scaleout_gbps: 400\n",
                               "\n  measurement_scaleout_gbps: 400\n"
                               "  measured_domain_ep_max: 8\n"))
    out = run("--catalog-dir", str(cat), "perf", "--rack", "hgx_b200", "--workload", "chat")
    assert out.exit_code == 1, out.output
    text = " ".join(out.output.split())
    assert "perf_defaults.yaml, entry 'serving', field 'measured_domain_ep_max'" in text
    assert "'basis:' section" in text and "delete this line" in text


def test_save_and_load_keep_the_basis(tmp_path):
    """save_calibration writes the basis and load_calibration reads the same back."""
    from dcplan.perf.params import Calibration, FitBasis, load_calibration, save_calibration

    basis = FitBasis(8, 8, 8192.0, ("deepseek_r1", "kimi_k2"))
    cal = Calibration.from_dicts({}, {"hbm_eff_frac": 0.7}, basis=basis)
    save_calibration(cal, tmp_path / "c.yaml")
    assert load_calibration(tmp_path / "c.yaml").basis == basis


@pytest.mark.slow
def test_frontier_names_the_points_whose_kv_handover_is_outside_its_fit(tmp_path):
    """perf frontier, DeepSeek-R1 with 32,000-token prompts on HGX H200 (longer than the
    fitted hand-over rows' 8,192): disaggregated points whose prefill pool the hand-over
    bounds say so, no aggregated point does, and the summary counts them; at 8,192
    tokens on HGX B200 (inside the fit) no point does; a calibration whose basis covers
    32,000-token prompts names none at 32,000."""
    import json

    from dcplan.paths import data_dir
    from dcplan.perf.params import CALIBRATION_FILE

    base = ["perf", "frontier", "--model", "deepseek_r1", "--output-tokens", "1024",
            "--json"]
    # (HGX H200 until 2026-12-06, eighteenth: with that refit no H200 point's prefill
    # pool is bound by the hand-over at 32,000 tokens, so none is named there)
    out = run(*base, "--rack", "hgx_b200", "--input-tokens", "32000")
    assert out.exit_code == 0, out.output
    fr = json.loads(out.stdout)
    kv = [p for p in fr["points"] if "KV hand-over" in p["extrapolation"]]
    assert kv and all(p["mode"] == "disaggregated" for p in kv)
    assert all("prompts of at most 8,192 tokens" in p["extrapolation"] for p in kv)
    assert f"{len(kv)} of {len(fr['points'])} points have a prefill pool" \
        in fr["extrapolation"]
    inside = run(*base, "--rack", "hgx_b200", "--input-tokens", "8192", "--precision", "fp4")
    assert inside.exit_code == 0, inside.output
    assert not any(p["extrapolation"] for p in json.loads(inside.stdout)["points"])
    cal = tmp_path / "cal.yaml"
    shipped = (data_dir("catalogs") / CALIBRATION_FILE).read_text()
    assert "  handover_prompt_tokens_max: 8192.0" in shipped
    cal.write_text(shipped.replace("  handover_prompt_tokens_max: 8192.0",
                                   "  handover_prompt_tokens_max: 32000.0"))
    out = run(*base, "--rack", "hgx_b200", "--input-tokens", "32000", "--calibration",
              str(cal))
    assert out.exit_code == 0, out.output
    assert not any(p["extrapolation"] for p in json.loads(out.stdout)["points"])


def test_frontier_names_the_points_that_extrapolate_wide_ep():
    """perf frontier: on GB200 NVL72 the DeepSeek-R1 points whose decode group is wider
    than the fitted 48 or whose prefill group (aggregated: the instance's) is wider than
    the fitted 8 inside the 72-GPU domain carry the EP extrapolation, and only those (the
    point's decode_ and prefill_expert_parallel say which; others may carry the KV
    hand-over's); the answer says how many; on HGX B200 (EP at most 8 inside its 8-GPU
    domain, 1,024-token prompts inside the hand-over's rows) no point carries any.

    And the points whose decode group is wider than a board (8) inside the domain and
    holds fewer sequences per GPU than the fitted wide row (2,048: the GB200 DEP48 run of
    wide_ep.csv) carry the small-batch note, and only those: every such layout here
    (DEPn, TPa DPb EPn) has its n GPUs in the decode group, so a point's sequences per
    GPU are its batch over its decode expert parallelism."""
    import json

    base = ["perf", "frontier", "--model", "deepseek_r1", "--input-tokens", "1024",
            "--output-tokens", "1024", "--precision", "fp4", "--json"]
    nvl, board = run(*base, "--rack", "gb200_nvl72"), run(*base, "--rack", "hgx_b200")
    assert nvl.exit_code == 0 and board.exit_code == 0, nvl.output + board.output
    nvl, board = json.loads(nvl.stdout), json.loads(board.stdout)
    wide = [p for p in nvl["points"] if "all-to-all is fitted on" in p["extrapolation"]]
    small = [p for p in nvl["points"] if "sequences per GPU" in p["extrapolation"]]
    assert small and small != nvl["points"]
    for p in nvl["points"]:
        ep = p["decode_expert_parallel"]
        assert (p in small) == (8 < ep <= 72 and p["batch"] / ep < 2048), p
        if p in small:
            assert f"decode at {p['batch'] / ep:,.0f} sequences per GPU with expert " \
                   f"parallelism {ep} inside one 72-GPU" in p["extrapolation"]
    assert f"; {len(small)} of {len(nvl['points'])} points decode with expert parallelism " \
           "wider than a board inside the domain at " in nvl["extrapolation"]

    def outside(p):
        return p["decode_expert_parallel"] > 48 or p["prefill_expert_parallel"] > 8

    assert wide and all(outside(p) for p in wide)
    assert not any(outside(p) for p in nvl["points"] if p not in wide)
    for p in nvl["points"]:
        assert p["expert_parallel"] == max(p["decode_expert_parallel"],
                                           p["prefill_expert_parallel"])
        if p["mode"] == "aggregated":
            assert p["decode_expert_parallel"] == p["prefill_expert_parallel"]
    assert nvl["extrapolation"].startswith(f"{len(wide)} of {len(nvl['points'])} points run "
                                           "expert parallelism")
    assert board["extrapolation"] == "" and not any(p["extrapolation"]
                                                    for p in board["points"])



@pytest.mark.slow
def test_perf_names_wide_decode_below_the_fitted_batch(tmp_path):
    """dcplan perf on GB200 NVL72 at DEP36 (aggregated, offline): with the engine's cap at
    16 sequences per rank the answer says the decode holds 16 per GPU, below the fitted
    wide row's 2,048; uncapped (memory allows 73,728 on 36 GPUs: 2,048 per GPU) it does
    not; a calibration whose basis has no recorded batch (written before the field)
    names nothing of it; a negative one is refused, naming file, entry and field."""
    import json

    from dcplan.paths import data_dir
    from dcplan.perf.params import CALIBRATION_FILE

    base = ["perf", "--model", "deepseek_r1", "--input-tokens", "1024", "--output-tokens",
            "1024", "--precision", "fp4", "--offline", "--mode", "aggregated", "--tp", "1",
            "--dp-attention", "--rack", "gb200_nvl72", "--ep", "36", "--json"]
    capped, free = run(*base, "--max-batch", "16"), run(*base)
    assert capped.exit_code == 0 and free.exit_code == 0, capped.output + free.output
    capped, free = json.loads(capped.stdout), json.loads(free.stdout)
    assert capped["batch"] / capped["replica_gpus"] == 16
    assert ("; and decode at 16 sequences per GPU with expert parallelism 36 inside one "
            "72-GPU scale-up domain") in capped["extrapolation"]
    assert "at least 2,048 per GPU" in capped["extrapolation"]
    assert free["batch"] / free["replica_gpus"] == 2048
    assert "sequences per GPU" not in free["extrapolation"]
    # the prefill group's width is named either way
    assert free["extrapolation"].startswith("prefill expert parallelism 36")
    shipped = (data_dir("catalogs") / CALIBRATION_FILE).read_text()
    line = "  wide_decode_seqs_per_gpu_min: 2048.0\n"
    assert shipped.count(line) == 1
    old, bad = tmp_path / "old.yaml", tmp_path / "bad.yaml"
    old.write_text(shipped.replace(line, ""))
    bad.write_text(shipped.replace(line, "  wide_decode_seqs_per_gpu_min: -1\n"))
    out = run(*base, "--max-batch", "16", "--calibration", str(old))
    assert out.exit_code == 0, out.output
    assert "sequences per GPU" not in json.loads(out.stdout)["extrapolation"]
    out = run(*base, "--calibration", str(bad))
    assert out.exit_code == 1
    assert (f"{bad}, entry 'basis', field 'wide_decode_seqs_per_gpu_min': must be a number "
            "from 0 (no such row) to 1e9 (got -1)") in " ".join(out.output.split())
