"""Engine admission in TTFT: the scheduler's poll interval, attention-DP balancing, the
running-request cap and the KV cache size of a recipe (dcplan/perf/recipes.py,
serving.with_admission, roofline.kv_pool_bytes)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dcplan.catalog import load_catalog
from dcplan.errors import InputError
from dcplan.perf.measurements import check_support_file, load_measurements
from dcplan.perf.params import load_perf_defaults, load_perf_inputs
from dcplan.perf.predict import ServingRows, hardware_params, physics_params
from dcplan.perf.recipes import NO_LIMITS, Recipes, check_recipes, load_recipes
from dcplan.perf.roofline import ModelShape, Parallel, kv_pool_bytes, weight_bytes_per_gpu
from dcplan.perf.serving import Point, balance_gather_s, with_admission
from dcplan.schema import Precision

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
    pt = _point(step=0.02, lam=40.0)
    # 8 ranks at 40 requests/s: arrivals land on random ranks until all 8 hold one
    # (coupon collector, H_8 = 761/280, H2_8 = 1.527422): (8 (H2 + H^2) - 2 H) / (2 lambda H)
    h, h2 = 761.0 / 280.0, sum(1.0 / k ** 2 for k in range(1, 9))
    expect = (8 * (h2 + h * h) - 2 * h) / (2 * 40.0 * h)
    assert expect == pytest.approx(0.30298, abs=1e-5)
    assert float(with_admission(pt, 1, 60, 8).admission_s[0]) == pytest.approx(expect)
    # timeout 10 steps of 20 ms = 0.2 s caps it
    assert float(with_admission(pt, 1, 10, 8).admission_s[0]) == pytest.approx(0.2)
    # one rank, or no balancing: no wait
    assert float(with_admission(pt, 1, 60, 1).admission_s[0]) == 0.0
    assert float(with_admission(pt, 1, 0, 8).admission_s[0]) == 0.0
    # two decode instances share the arrivals: 20 / s each, twice the wait
    assert float(with_admission(pt, 1, 60, 8, 2.0).admission_s[0]) == pytest.approx(2 * expect)
    # both waits add: (11 - 1) / 2 steps of 20 ms = 0.1 s
    both = with_admission(pt, 11, 60, 8)
    assert float(both.admission_s[0]) == pytest.approx(0.1 + expect)


@pytest.mark.slow
def test_balance_gather_by_hand_and_by_simulation():
    # two ranks: K = 2 w.p. 1/2, 3 w.p. 1/4, ...: E[K] = 3, E[K (K - 1)] = 8, so the
    # mean wait is 8 / (2 lambda 3) = 4 / (3 lambda); four ranks 68 / (15 lambda)
    assert float(balance_gather_s(2, 1.0)) == pytest.approx(4.0 / 3.0)
    assert float(balance_gather_s(4, 2.0)) == pytest.approx(68.0 / 15.0 / 2.0)
    assert float(balance_gather_s(1, 5.0)) == 0.0
    assert np.isinf(balance_gather_s(4, 0.0))
    # dealt in turn a group of D gathers in (D - 1) / lambda: random ranks wait longer
    d = np.arange(2, 73)
    assert np.all(balance_gather_s(d, 1.0) > (d - 1) / 2.0)
    # a simulation of Poisson arrivals on uniform ranks, released when all ranks hold one
    rng = np.random.default_rng(7)
    for ranks in (3, 8):
        waits, t, held, pending = [], 0.0, set(), []
        for _ in range(200_000):
            t += rng.exponential(1.0)
            pending.append(t)
            held.add(int(rng.integers(ranks)))
            if len(held) == ranks:
                waits += [t - a for a in pending]
                held, pending = set(), []
        assert np.mean(waits) == pytest.approx(float(balance_gather_s(ranks, 1.0)), rel=0.02)


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


def _one_row(tmp_path, line):
    """A predictor of one InferenceX-format row under given recipe entries: entries ->
    (predicted figures of the row, the row's notes)."""
    cat = load_catalog()
    defaults = load_perf_defaults()
    csv = tmp_path / "rows.csv"
    head = (SHIPPED / "inferencex_deepseek_r1.csv").read_text().splitlines()[0]
    csv.write_text(head + "\n" + line + "\n")
    rows = load_measurements(csv, cat)
    params = {"b200": hardware_params(defaults, "b200", None)}
    phys = physics_params(defaults, None)
    lengths = load_perf_inputs(cat, benchmarks=True).benchmarks.lengths

    def run(entries):
        recipes = _recipes(entries) if entries else Recipes()
        sr = ServingRows(rows, cat, defaults, lengths, recipes)
        out = sr.predict(params, phys)
        return {k: float(v[0]) for k, v in out.items()}, sr.notes[0]
    return run


def test_a_running_request_cap_holds_the_batch_and_adds_a_slot_wait(tmp_path):
    predict = _one_row(tmp_path, "b200,deepseek_r1,fp8,1024,1024,256,8,false,,,8,8,8,8,false,"
                                 "none,1000,2000,20,1.0,2.0,30,35,,sglang,2026-03-01,synthetic")

    def run(entries):
        return predict(entries)[0]

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



def test_memory_entries_are_looked_up_apart_with_run_dates():
    rec = _recipes([
        {"match": {"framework": "trt", "hardware": ["b200"], "from_date": "2026-02-05",
                   "until_date": "2026-03-26"},
         "kv_cache_frac": 0.7, "kv_cache_frac_of": "free", "kv_reserve": "full"},
        {"match": {"framework": "trt"}, "dp_balance_timeout_steps": 60},
        {"match": {"framework": "trt"}, "kv_cache_frac": 0.8, "kv_cache_frac_of": "free",
         "kv_reserve": "full", "source": "later"},
    ])
    trt = {**ROW, "framework": "trt"}
    # the dates are inclusive; a row without a date meets no dated entry
    assert rec.memory(**trt, date="2026-02-05").share == 0.7
    assert rec.memory(**trt, date="2026-03-26").share == 0.7
    assert rec.memory(**trt, date="2026-03-27").share == 0.8
    assert rec.memory(**trt, date="2026-02-04").source == "later"
    assert rec.memory(**trt).share == 0.8
    # memory entries give no admission and admission entries no memory
    assert rec.admission(**trt, date="2026-02-05").dp_balance_timeout_steps == 60
    assert rec.memory(**ROW) is None


def test_bad_memory_settings_are_named_with_their_field(tmp_path):
    p = tmp_path / "serving_recipes.yaml"
    p.write_text(
        "recipes:\n"
        "  - match: {framework: trt}\n    kv_cache_frac: 0.8\n"
        "  - match: {framework: trt}\n    kv_cache_frac: 0\n    kv_cache_frac_of: all\n"
        "    kv_reserve: full\n"
        "  - match: {framework: trt}\n    kv_cache_frac: 1.5\n    kv_cache_frac_of: free\n"
        "    kv_reserve: max\n"
        "  - match: {framework: trt, from_date: '2026-13-01'}\n    kv_cache_frac: true\n"
        "    kv_cache_frac_of: hbm\n    kv_reserve: current\n")
    with pytest.raises(InputError) as exc:
        load_recipes(p)
    got = {(pr.entry, pr.field) for pr in exc.value.problems}
    assert got == {("recipes[1]", "kv_cache_frac_of"), ("recipes[2]", "kv_cache_frac"),
                   ("recipes[2]", "kv_cache_frac_of"), ("recipes[3]", "kv_cache_frac"),
                   ("recipes[3]", "kv_reserve"), ("recipes[4]", "match.from_date"),
                   ("recipes[4]", "kv_cache_frac")}
    text = str(exc.value)
    assert "come together: add kv_cache_frac_of, kv_reserve" in text
    # an unquoted date (YAML reads it as a date) matches like a quoted one
    p.write_text("recipes:\n  - match: {framework: trt, from_date: 2026-02-05}\n"
                 "    kv_cache_frac: 0.7\n    kv_cache_frac_of: free\n    kv_reserve: full\n")
    rec = load_recipes(p)
    assert rec.memory(**{**ROW, "framework": "trt"}, date="2026-02-05").share == 0.7
    assert rec.memory(**{**ROW, "framework": "trt"}, date="2026-02-04") is None
    assert "'all' is not one of hbm, free" in text and "not a date YYYY-MM-DD" in text


def test_kv_pool_by_hand():
    # SGLang: 0.82 of 180 GB holds 84 GB of weights and 63.6 GB of cache
    assert float(kv_pool_bytes(180e9, 171e9, 84e9, 0.82, "hbm")) == pytest.approx(63.6e9)
    # TensorRT-LLM: 0.8 of what 84 GB of weights leave of the usable 171 GB
    assert float(kv_pool_bytes(180e9, 171e9, 84e9, 0.8, "free")) == pytest.approx(69.6e9)
    # weights above the share leave no cache (never negative)
    assert float(kv_pool_bytes(180e9, 171e9, 160e9, 0.82, "hbm")) == 0.0


def test_a_recipe_kv_cache_holds_the_batch_and_queues_the_rest(tmp_path):
    """A TensorRT-LLM TP8 row at 8K/1K with 256 in flight: 0.8 of the free memory and
    each request reserving its whole length hold fewer than 256 (the recomputed count),
    so the others wait for a slot and TTFT rises by seconds; reserving only the current
    tokens holds more of them."""
    run = _one_row(tmp_path, "b200,deepseek_r1,fp8,8192,1024,256,8,false,,,8,1,8,1,false,"
                             "none,250,2250,11,4.9,9.0,92,110,,trt,2026-05-18,synthetic")
    cat = load_catalog()
    defaults = load_perf_defaults()
    mem = {"kv_cache_frac": 0.8, "kv_cache_frac_of": "free"}
    free, _ = run([])
    held, note = run([{"match": {"framework": "trt"}, **mem, "kv_reserve": "full"}])
    # recompute the count: 0.8 of (usable - weights) over each request's whole length
    shape = ModelShape.build(cat.get("models", "deepseek_r1"), Precision("fp8"),
                             defaults.serving)
    acc = cat.get("accelerators", "b200")
    usable = acc.hbm_gb * 1e9 * defaults.serving.hbm_usable_frac
    w = float(weight_bytes_per_gpu(Parallel(8, 1, 1), shape))
    frac = defaults.serving.measurement_length_frac
    n = np.floor(0.8 * (usable - w) / float(shape.kv_bytes_seq((8192 + 1024) * frac)))
    assert 200 < n < 256
    assert f"holds {n:,.0f} sequences" in note and "whole length" in note
    assert held["batch"] <= n + 1e-9 < free["batch"]
    # 256 - n wait for a slot: by Little's law at least (256 - n) / lambda more TTFT
    lam = held["output_tokens_per_s_per_gpu"] * 8 / (1024 * frac)
    assert held["median_ttft_s"] - free["median_ttft_s"] >= 0.5 * (256 - n) / lam > 1.0
    # holding only the tokens so far (prompt and half the output), the same share holds
    # more of them, and fewer wait
    cur, note = run([{"match": {"framework": "trt"}, **mem, "kv_reserve": "current"}])
    n_cur = np.floor(0.8 * (usable - w) / float(shape.kv_bytes_seq((8192 + 512) * frac)))
    assert n < n_cur and f"holds {n_cur:,.0f} sequences" in note and "so far" in note
    assert free["median_ttft_s"] < cur["median_ttft_s"] < held["median_ttft_s"]


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


def test_moe_library_entries_are_looked_up_apart_and_checked():
    """``moe_library`` alone makes an entry (no "gives no setting"), is looked up among
    the entries that give it (first match, run dates inclusive) and must be a known
    library; the shipped file names DeepGEMM exactly for the B200 TensorRT-LLM FP8
    recipes of the commits it cites."""
    rec = _recipes([
        {"match": {"framework": "trt", "until_date": "2026-01-28"}, "moe_library": "deepgemm"},
        {"match": {"framework": "trt"}, "dp_balance_timeout_steps": 60},
        {"match": {"framework": "trt"}, "moe_library": "trtllm"},
    ])
    trt = {**ROW, "framework": "trt"}
    assert rec.moe_library(**trt, date="2026-01-28") == "deepgemm"
    assert rec.moe_library(**trt, date="2026-01-29") == "trtllm"
    assert rec.moe_library(**ROW) is None
    assert rec.admission(**trt, date="2026-01-28").dp_balance_timeout_steps == 60
    _, problems = check_recipes({"recipes": [
        {"match": {"framework": "trt"}, "moe_library": "deep_gemm"}]}, "r.yaml")
    (p,) = problems
    assert p.field == "moe_library" and "'deep_gemm' is not a MoE library" in p.message
    assert "cutlass, trtllm, deepgemm" in p.message
    shipped = load_recipes(SHIPPED / "serving_recipes.yaml")
    b200 = {**ROW, "framework": "trt", "precision": "fp8"}
    assert shipped.moe_library(**b200, date="2025-12-10") == "deepgemm"
    assert shipped.moe_library(**b200, date="2026-01-29") == "trtllm"
    assert shipped.moe_library(**{**b200, "input_tokens": 1024, "output_tokens": 8192,
                                     "concurrency": 256}, date="2026-02-10") == "deepgemm"
    mtp = {**b200, "speculative": "mtp"}
    assert shipped.moe_library(**mtp, date="2026-02-04") == "deepgemm"
    assert shipped.moe_library(**mtp, date="2026-02-05") == "trtllm"
    assert shipped.moe_library(**{**mtp, "dp_attention": True}, date="2026-03-01") == "deepgemm"
    for other in ({**b200, "precision": "fp4"}, {**b200, "hardware": "h200_sxm"},
                  {**b200, "framework": "sglang"}):
        assert shipped.moe_library(**other, date="2025-12-10") is None


def _b200_trt_row(tmp_path, speculative: str, date: str):
    """One synthetic B200 TensorRT-LLM FP8 row (TP8 EP8, 4 in flight, 1k/1k) as loaded,
    with the catalog, the defaults, B200's a-priori parameters and the benchmark lengths."""
    cat = load_catalog()
    defaults = load_perf_defaults()
    csv = tmp_path / "rows.csv"
    head = (SHIPPED / "inferencex_deepseek_r1.csv").read_text().splitlines()[0]
    csv.write_text(head + "\nb200,deepseek_r1,fp8,1024,1024,4,8,false,,,8,8,8,8,false,"
                   f"{speculative},100,200,20,0.1,0.2,8,9,,trt,{date},synthetic\n")
    rows = load_measurements(csv, cat)
    params = {"b200": hardware_params(defaults, "b200", None)}
    lengths = load_perf_inputs(cat, benchmarks=True).benchmarks.lengths
    return rows, cat, defaults, params, lengths


def test_deepgemm_rows_take_the_ratio_on_their_moe_gemms_alone(tmp_path):
    """A row whose recipe runs DeepGEMM: its MoE GEMMs take physics.deepgemm_moe_time_ratio
    times their time. Ratio 1 predicts exactly what no library entry does; a larger
    ratio a longer TPOT and less throughput, monotonically; the same row under another
    library is unchanged by the ratio."""
    rows, cat, defaults, params, lengths = _b200_trt_row(tmp_path, "none", "2025-12-10")

    def run(library, ratio):
        recipes = (_recipes([{"match": {"framework": "trt"}, "moe_library": library}])
                   if library else Recipes())
        phys = replace(physics_params(defaults, None), deepgemm_moe_time_ratio=ratio)
        out = ServingRows(rows, cat, defaults, lengths, recipes).predict(params, phys)
        return {k: float(v[0]) for k, v in out.items()}

    base = run(None, 1.0)
    assert run("deepgemm", 1.0) == base
    got = [run("deepgemm", r) for r in (1.0, 1.3, 1.6)]
    tpot = [g["median_tpot_ms"] for g in got]
    tput = [g["output_tokens_per_s_per_gpu"] for g in got]
    assert tpot[0] < tpot[1] < tpot[2] and tput[0] > tput[1] > tput[2]
    assert run("cutlass", 1.6) == base and run(None, 1.6) == base


def test_mtp_draft_tokens_entries_are_looked_up_apart_and_checked():
    """``mtp_draft_tokens`` alone makes an entry, is looked up among the entries that
    give it (first match wins), must be a whole number 1-16 and needs ``speculative:
    mtp`` in its match."""
    rec = _recipes([
        {"match": {"framework": "trt", "speculative": "mtp", "dp_attention": True},
         "mtp_draft_tokens": 1},
        {"match": {"framework": "trt", "speculative": "mtp"}, "mtp_draft_tokens": 3},
    ])
    trt = {**ROW, "framework": "trt", "speculative": "mtp"}
    assert rec.mtp_draft_tokens(**{**trt, "dp_attention": True}) == 1
    assert rec.mtp_draft_tokens(**trt) == 3
    assert rec.mtp_draft_tokens(**{**trt, "speculative": "none"}) is None
    assert rec.admission(**trt).poll_interval_steps == 1      # gives no admission
    for bad, words in ((0, "0 is not a whole number of draft tokens 1-16"),
                       (17, "17 is not a whole number"), (2.5, "2.5 is not a whole"),
                       (True, "True is not a whole")):
        _, problems = check_recipes({"recipes": [
            {"match": {"framework": "trt", "speculative": "mtp"},
             "mtp_draft_tokens": bad}]}, "r.yaml")
        (p,) = problems
        assert p.field == "mtp_draft_tokens" and words in p.message, p.message
    _, problems = check_recipes({"recipes": [
        {"match": {"framework": "trt"}, "mtp_draft_tokens": 2}]}, "r.yaml")
    (p,) = problems
    assert p.field == "match.speculative" and "needs speculative: mtp" in p.message


def test_a_recipes_draft_length_is_the_only_one_tried(tmp_path):
    """An MTP row whose recipe sets the draft length is predicted at that length (its
    configuration says so, and it equals the search's answer when the search picks the
    same length); without an entry the search picks the fastest of 1-3."""
    rows, cat, defaults, params, lengths = _b200_trt_row(tmp_path, "mtp", "2026-03-10")
    phys = physics_params(defaults, None)

    def run(n):
        recipes = (_recipes([{"match": {"framework": "trt", "speculative": "mtp"},
                              "mtp_draft_tokens": n}]) if n else Recipes())
        sr = ServingRows(rows, cat, defaults, lengths, recipes)
        out = sr.predict(params, phys)
        return {k: float(v[0]) for k, v in out.items()}

    free = run(None)
    best = int(free["draft_tokens"])
    assert best in (1, 2, 3)
    fixed = {n: run(n) for n in (1, 2, 3)}
    assert all(fixed[n]["draft_tokens"] == n for n in fixed)
    assert fixed[best] == free
    # the search's pick is the fastest of the three
    assert free["output_tokens_per_s_per_gpu"] == max(
        f["output_tokens_per_s_per_gpu"] for f in fixed.values())
    assert run(5)["draft_tokens"] == 5            # outside the search's list, still taken
