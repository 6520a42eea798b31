"""Engine admission in TTFT: the scheduler's poll interval, attention-DP balancing and the
running-request cap of a recipe (dcplan/perf/recipes.py, serving.with_admission)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dcplan.catalog import load_catalog
from dcplan.errors import InputError
from dcplan.perf.measurements import check_support_file, load_measurements
from dcplan.perf.params import load_perf_defaults, load_perf_inputs
from dcplan.perf.predict import ServingRows, hardware_params, physics_params
from dcplan.perf.recipes import NO_LIMITS, Recipes, check_recipes, load_recipes
from dcplan.perf.serving import Point, with_admission

SHIPPED = Path(__file__).resolve().parents[1] / "catalogs" / "measurements"


def _point(step=0.02, lam=4.0, fixed=0.05, prefill=0.1):
    z = np.zeros(1)
    return Point(batch=z + 8, requests_per_s=z + lam, gpus=z + 8, tpot_mean_s=z + step,
                 ttft_mean_s=z + fixed + prefill + step / 2, utilisation=z,
                 compute_util=z, memory_util=z, prefill_s=z + prefill,
                 prefill_alone_s=z + prefill, token_s=z + step, step_s=z + step,
                 arrival_cv2=z + 1, service_cv2=1.0, tokens_per_step=z + 1,
                 kv_transfer_s=z, interrupt_s=z, output_tokens=z + 1000.0, parts={},
                 fixed_s=fixed)


def test_poll_interval_adds_half_the_extra_steps():
    pt = _point()
    # no queue, one prompt length: TTFT = 0.05 + 0.1 + 0.01 = 0.16 s at every percentile
    assert float(pt.ttft_quantile(50.0)[0]) == pytest.approx(0.16)
    # polling every 30 steps: (30 - 1) / 2 * 20 ms = 0.29 s more, mean and median alike
    got = with_admission(pt, 30, 0, 1)
    assert float(got.admission_s[0]) == pytest.approx(0.29)
    assert float(got.ttft_mean_s[0]) == pytest.approx(0.16 + 0.29)
    assert float(got.ttft_quantile(50.0)[0]) == pytest.approx(0.45)
    assert float(got.ttft_quantile(99.0)[0]) == pytest.approx(0.45)
    # polling every step is what every point already holds (the half step under way)
    same = with_admission(pt, 1, 0, 1)
    assert float(same.ttft_mean_s[0]) == pytest.approx(float(pt.ttft_mean_s[0]))


def test_dp_balancing_waits_for_a_group_at_most_its_timeout():
    pt = _point(step=0.02, lam=4.0)
    # 8 ranks at 4 requests/s: a group of 8 gathers in 7 / 4 s, members wait 7 / 8 s
    assert float(with_admission(pt, 1, 60, 8).admission_s[0]) == pytest.approx(0.875)
    # timeout 20 steps of 20 ms = 0.4 s caps it
    assert float(with_admission(pt, 1, 20, 8).admission_s[0]) == pytest.approx(0.4)
    # one rank, or no balancing: no wait
    assert float(with_admission(pt, 1, 60, 1).admission_s[0]) == 0.0
    assert float(with_admission(pt, 1, 0, 8).admission_s[0]) == 0.0
    # two decode instances share the arrivals: 2 / s each, 7 / 4 s wait, capped at 1.2 s
    assert float(with_admission(pt, 1, 60, 8, 2.0).admission_s[0]) == pytest.approx(1.2)
    # both waits add
    both = with_admission(pt, 11, 60, 8)
    assert float(both.admission_s[0]) == pytest.approx(0.1 + 0.875)


def _recipes(entries):
    rec, problems = check_recipes({"recipes": entries}, "r.yaml")
    assert not problems, problems
    return rec


ROW = dict(framework="sglang", hardware="b200", precision="fp8", speculative="none",
           dp_attention=False, decode_tp=8, input_tokens=1024, output_tokens=1024,
           concurrency=16)


def test_first_matching_recipe_wins_and_bounds_are_inclusive():
    rec = _recipes([
        {"match": {"framework": "sglang", "hardware": ["b200"], "max_concurrency": 15},
         "poll_interval_steps": 10},
        {"match": {"framework": "sglang", "hardware": ["b200"]}, "poll_interval_steps": 30,
         "max_running_requests": 128},
        {"match": {"framework": "trt", "dp_attention": True}, "dp_balance_timeout_steps": 60},
    ])
    assert rec.admission(**{**ROW, "concurrency": 15}).poll_interval_steps == 10
    got = rec.admission(**ROW)
    assert (got.poll_interval_steps, got.max_running_requests) == (30, 128)
    assert rec.admission(**{**ROW, "hardware": "h200_sxm"}) == NO_LIMITS
    trt = rec.admission(**{**ROW, "framework": "trt", "dp_attention": True})
    assert (trt.poll_interval_steps, trt.dp_balance_timeout_steps) == (1, 60)
    assert rec.admission(**{**ROW, "framework": "trt"}) == NO_LIMITS


def test_a_bad_recipes_file_names_every_problem(tmp_path):
    p = tmp_path / "serving_recipes.yaml"
    p.write_text(
        "source: s\nas_of: '2026-06'\nrecipes:\n"
        "  - match: {framework: sglang, hardwre: [b200]}\n    poll_interval_steps: 30\n"
        "  - match: {framework: sglang, hardware: [b2000]}\n    poll_interval_steps: 0\n"
        "  - match: {}\n    max_running_requests: 8\n"
        "  - match: {framework: trt}\n    dp_balance_timeout: 60\n")
    with pytest.raises(InputError) as exc:
        load_recipes(p, load_catalog())
    got = {(pr.entry, pr.field) for pr in exc.value.problems}
    assert got == {("recipes[1]", "match.hardwre"), ("recipes[2]", "match.hardware"),
                   ("recipes[2]", "poll_interval_steps"), ("recipes[3]", "match"),
                   ("recipes[4]", "dp_balance_timeout")}
    assert all(pr.line for pr in exc.value.problems if pr.field)
    text = str(exc.value)
    assert "did you mean 'hardware'" in text and "'dp_balance_timeout_steps'" in text
    # dcplan validate reads it through the same loader
    checked, problems = check_support_file(p, load_catalog())
    assert checked == "" and len(problems) == len(exc.value.problems)


def test_perf_inputs_read_the_benchmarks_only_when_asked(tmp_path):
    """load_perf_inputs reads measurements/ beside the defaults with benchmarks=True, once,
    and names a bad recipes file with the defaults file's problems; plans never read it."""
    import shutil

    shutil.copy(SHIPPED.parent / "perf_defaults.yaml", tmp_path / "perf_defaults.yaml")
    (tmp_path / "measurements").mkdir()
    assert load_perf_inputs(tmp_path, "none").benchmarks is None
    empty = load_perf_inputs(tmp_path, "none", benchmarks=True).benchmarks
    assert empty.recipes == Recipes() and empty.lengths.serving_rows.is_fixed
    shipped = load_perf_inputs(benchmarks=True).benchmarks
    assert len(shipped.recipes.entries) >= 10 and shipped.lengths.burst_share > 0
    (tmp_path / "measurements" / "serving_recipes.yaml").write_text(
        "recipes:\n  - match: {framework: sglang}\n    poll_interval_steps: 0\n")
    assert load_perf_inputs(tmp_path, "none").benchmarks is None   # not read
    with pytest.raises(InputError) as exc:
        load_perf_inputs(tmp_path, "none", benchmarks=True)
    assert [(p.entry, p.field) for p in exc.value.problems] == [
        ("recipes[1]", "poll_interval_steps")]


def test_shipped_recipes_read_and_match_the_rows_they_cite():
    cat = load_catalog()
    rec = load_recipes(SHIPPED / "serving_recipes.yaml", cat)
    assert len(rec.entries) >= 10
    for e in rec.entries:
        assert e.admission.source
    b200 = rec.admission(**ROW)
    assert (b200.poll_interval_steps, b200.max_running_requests) == (30, 128)
    h200 = rec.admission(**{**ROW, "hardware": "h200_sxm", "concurrency": 4})
    assert (h200.poll_interval_steps, h200.max_running_requests) == (1, 512)


def test_a_running_request_cap_holds_the_batch_and_adds_a_slot_wait(tmp_path):
    cat = load_catalog()
    defaults = load_perf_defaults()
    csv = tmp_path / "rows.csv"
    head = (SHIPPED / "inferencex_deepseek_r1.csv").read_text().splitlines()[0]
    csv.write_text(head + "\n" + "b200,deepseek_r1,fp8,1024,1024,256,8,false,,,8,8,8,8,false,"
                   "none,1000,2000,20,1.0,2.0,30,35,,sglang,2026-03-01,synthetic\n")
    rows = load_measurements(csv, cat)
    params = {"b200": hardware_params(defaults, "b200", None)}
    phys = physics_params(defaults, None)

    lengths = load_perf_inputs(cat, benchmarks=True).benchmarks.lengths

    def run(entries):
        recipes = _recipes(entries) if entries else Recipes()
        out = ServingRows(rows, cat, defaults, lengths, recipes).predict(params, phys)
        return {k: float(v[0]) for k, v in out.items()}

    free = run([])
    assert free["batch"] > 64
    capped = run([{"match": {"framework": "sglang"}, "max_running_requests": 64}])
    assert capped["batch"] == pytest.approx(64.0)
    # the other 192 in flight wait for a slot: Little's law, C - 64 = lambda * wait
    lam = capped["output_tokens_per_s_per_gpu"] * 8 / (1024 * 0.9)
    assert capped["median_ttft_s"] >= 0.9 * (256 - 64) / lam
    polled = run([{"match": {"framework": "sglang"}, "poll_interval_steps": 30}])
    # 14.5 more steps of its own (a little shorter: fewer sequences decode meanwhile)
    assert polled["median_ttft_s"] - free["median_ttft_s"] == pytest.approx(
        14.5 * polled["median_tpot_ms"] / 1e3, rel=0.1)



def test_a_layout_entry_gives_the_prefill_dp_attention_and_no_admission():
    """An entry that gives only ``prefill_dp_attention`` is passed over for admission
    (the row keeps the admission entry after it); the layout comes from the first entry
    that gives one, ``prefill_ep`` matches, and a row no layout entry matches gets None
    (the rule)."""
    rec = _recipes([
        {"match": {"framework": "sglang", "prefill_ep": 1}, "prefill_dp_attention": True},
        {"match": {"framework": "sglang", "input_tokens": 1024},
         "prefill_dp_attention": False},
        {"match": {"framework": "sglang"}, "poll_interval_steps": 30},
        {"match": {"framework": "sglang"}, "prefill_dp_attention": True},
    ])
    assert rec.admission(**ROW).poll_interval_steps == 30          # passes the layouts
    assert rec.prefill_dp_attention(**ROW) is True                 # prefill_ep 1 default
    assert rec.prefill_dp_attention(**ROW, prefill_ep=8) is False  # second entry
    assert rec.prefill_dp_attention(**{**ROW, "input_tokens": 8192}, prefill_ep=8) is True
    assert rec.prefill_dp_attention(**{**ROW, "framework": "trt"}) is None
    assert rec.admission(**{**ROW, "framework": "trt"}) == NO_LIMITS
    both = _recipes([{"match": {"framework": "sglang"}, "poll_interval_steps": 4,
                      "prefill_dp_attention": False}])
    assert both.admission(**ROW).poll_interval_steps == 4
    assert both.prefill_dp_attention(**ROW) is False
    # a layout value must be a boolean; a match on prefill_ep an integer
    _, problems = check_recipes({"recipes": [
        {"match": {"framework": "sglang"}, "prefill_dp_attention": "yes"},
        {"match": {"prefill_ep": "8"}, "prefill_dp_attention": True}]}, "r.yaml")
    assert [(p.entry, p.field) for p in problems] == [
        ("recipes[1]", "prefill_dp_attention"), ("recipes[2]", "match.prefill_ep")]
    assert "'yes' is not true or false" in str(problems[0])
    assert "'8' is not an integer" in str(problems[1])


def _disagg_rows(tmp_path, prefill_tp=8, prefill_ep=8, extra=""):
    """One synthetic B200 Dynamo SGLang fp8 disaggregated row (one prefill instance and
    8 decode GPUs, decode TEP8)."""
    gpus = max(prefill_tp, prefill_ep)
    csv = tmp_path / "rows.csv"
    head = (SHIPPED / "inferencex_deepseek_r1.csv").read_text().splitlines()[0]
    csv.write_text(head + ("," + extra.split("=")[0] if extra else "") + "\n"
                   + f"b200,deepseek_r1,fp8,1024,1024,64,{gpus + 8},true,{gpus},8,{prefill_tp},"
                   f"{prefill_ep},8,8,false,none,100,200,20,1.0,2.0,30,35,,dynamo-sglang,"
                   "2026-03-01,synthetic" + ("," + extra.split("=")[1] if extra else "")
                   + "\n")
    return load_measurements(csv, load_catalog())


def test_a_recipe_sets_the_prefill_layout_where_the_row_does_not(tmp_path):
    """Prefill TP8 EP8: the rule runs it with DP attention (DEP8); a recipe saying false
    makes it TP8 EP8; the row's own column beats the recipe; a recipe's TP attention
    whose width does not split the heads flags the row instead of predicting it."""
    cat = load_catalog()
    defaults = load_perf_defaults()
    lengths = load_perf_inputs(cat, benchmarks=True).benchmarks.lengths
    off = _recipes([{"match": {"framework": "dynamo-sglang", "prefill_ep": 8},
                     "prefill_dp_attention": False}])

    def config(rows, recipes):
        sr = ServingRows(rows, cat, defaults, lengths, recipes)
        return sr.configs[0].split(" / ")[0], sr.flags[0]

    rows = _disagg_rows(tmp_path)
    assert rows[0].prefill_dp_attention                        # the rule
    assert config(rows, Recipes()) == ("prefill 1 x DEP8", "")
    assert config(rows, off) == ("prefill 1 x TP8 EP8", "")
    own = _disagg_rows(tmp_path, extra="prefill_dp_attention=true")
    assert config(own, off) == ("prefill 1 x DEP8", "")       # the row's column wins
    # EP 6 runs DP attention by the rule, so TP 6 loads; the recipe's TP6 attention
    # cannot split 128 heads: flagged, not predicted
    six = _disagg_rows(tmp_path, prefill_tp=6, prefill_ep=6)
    six_off = _recipes([{"match": {"framework": "dynamo-sglang"},
                         "prefill_dp_attention": False}])
    sr = ServingRows(six, cat, defaults, lengths, six_off)
    assert "TP 6, which does not split the 128 heads" in sr.flags[0]
    params = {"b200": hardware_params(defaults, "b200", None)}
    out = sr.predict(params, physics_params(defaults, None))
    assert np.isnan(out["output_tokens_per_s_per_gpu"][0])


def test_shipped_layout_entries_change_exactly_the_rows_they_cite():
    """The shipped file's two layout entries cover the 13 B200 Dynamo SGLang fp8 rows
    whose multi-node recipes the rule gets wrong (docs/perf.md): 10 1k/1k rows with TEP8
    decode prefill TP8 EP8 without DP attention, 3 8k/1k rows prefill DP8 with EP 1."""
    cat = load_catalog()
    rows = load_measurements(SHIPPED / "inferencex_deepseek_r1.csv", cat)
    b = load_perf_inputs(cat, benchmarks=True).benchmarks
    sr = ServingRows(rows, cat, load_perf_defaults(), b.lengths, b.recipes)
    changed = [m for m, dpa in zip(rows, sr.prefill_dpa, strict=True)
               if dpa != m.prefill_dp_attention]
    assert len(changed) == 13
    assert all((m.hardware, m.framework, m.precision.value) == ("b200", "dynamo-sglang", "fp8")
               for m in changed)
    off = [m for m in changed if m.input_tokens == 1024]
    on = [m for m in changed if m.input_tokens == 8192]
    assert len(off) == 10 and all(not m.decode_dp_attention and m.prefill_ep == 8
                                  for m in off)
    assert len(on) == 3 and all(m.prefill_ep == 1 for m in on)
    assert not any(sr.flags[i] for i in range(len(rows)) if rows[i].disaggregated
                   and sr.prefill_dpa[i] != rows[i].prefill_dp_attention)
