"""bench/server_offline_search.py: the MLPerf pairs as a user asks ``dcplan perf`` for them.

The pairs are perf_accuracy's; each command carries the row's lengths, date, the dataset's
length distribution (length_distributions.yaml), the Server row's limits at the 99th
percentile and a MaxQ row's cap; the ratio is the two answers' quotient, which a direct
``dcplan perf`` call reproduces.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripts import load_script
from typer.testing import CliRunner

from dcplan.cli import app
from dcplan.lengths import LengthDist

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    return load_script(ROOT / "bench" / "server_offline_search.py", "server_offline_search")


def test_length_dist_option_by_hand():
    opt = _bench().length_dist_option
    assert opt(LengthDist()) == "fixed"
    assert opt(LengthDist("uniform", min_frac=0.8)) == "uniform:0.8"
    assert opt(LengthDist("uniform", min_frac=1.0)) == "fixed"     # no spread
    assert opt(LengthDist("lognormal", input_cv=0.5, output_cv=1.0)) == "lognormal:0.5,1"


def test_commands_carry_each_pairs_settings():
    """Eleven pairs (the accuracy table's); the 405B Server command as a user would type it
    (9,400 / 680 tokens, the run's date, the dataset's lognormal, TTFT 6 s, TPOT 175 ms
    at p99); the MaxQ pair at 500 W of H200's 700 W; measured figures per GPU."""
    mod = _bench()
    cmds = mod.commands()
    assert len(cmds) == 11
    # AMD's MLPerf pairs (MI300X v4.1, MI325X v5.0) are asked on their 8-GPU server racks
    assert mod.pairs_without_rack() == []
    amd = {c["configuration"].split()[0]: c["offline_command"][5] for c in cmds
           if c["configuration"].startswith("mi3")}
    assert amd == {"mi300x": "mi300x_rack", "mi325x": "mi325x_rack"}
    b200 = next(c for c in cmds if c["configuration"].startswith("b200 llama31_405b"))
    assert b200["server_command"][3:] == [
        "perf", "--rack", "hgx_b200", "--model", "llama31_405b", "--precision", "fp4",
        "--input-tokens", "9400", "--output-tokens", "680", "--date", "2025-04-02",
        "--length-dist", "lognormal:0.5,1", "--json", "--ttft-s", "6", "--tpot-ms", "175",
        "--percentile", "99"]
    assert b200["offline_command"][-1] == "--offline"
    # NVIDIA's rows: Server 845.82 tokens/s on 8 GPUs, Offline 763.145 on 4
    assert b200["measured_server"] == pytest.approx(845.82 / 8)
    assert b200["measured_offline"] == pytest.approx(763.145 / 4)
    maxq = next(c for c in cmds if "MaxQ" in c["configuration"])
    i = maxq["server_command"].index("--power-cap")
    assert float(maxq["server_command"][i + 1]) == pytest.approx(500 / 700, abs=1e-6)
    assert "--power-cap" in maxq["offline_command"]


@pytest.mark.slow
def test_one_pair_is_what_dcplan_perf_answers(monkeypatch):
    """Restricted to H200 Llama 2 70B (2025-04-02), the bench's figures are the CLI's own
    answers to its two commands, the ratio their quotient, the summary that one pair."""
    mod = _bench()
    pair = [c for c in mod.commands()
            if c["configuration"].startswith("h200_sxm llama2_70b fp8 2025-04-02")]
    assert len(pair) == 1
    monkeypatch.setattr(mod, "commands", lambda calibration=None: pair)
    res = mod.run()
    (p,) = res["pairs"]
    runner = CliRunner()
    got = {}
    for which in ("offline", "server"):
        done = runner.invoke(app, pair[0][f"{which}_command"][3:])
        assert done.exit_code == 0, done.output
        got[which] = json.loads(done.stdout)["output_tokens_per_s_per_gpu"]
    assert p["predicted_offline_per_gpu"] == pytest.approx(got["offline"], rel=1e-9)
    assert p["predicted_server_per_gpu"] == pytest.approx(got["server"], rel=1e-9)
    assert p["predicted_ratio"] == pytest.approx(got["server"] / got["offline"], rel=1e-12)
    assert p["measured_ratio"] == pytest.approx((4133.93 / 1) / (4373.52 / 1), rel=1e-9)
    assert res["median_abs_diff"] == res["max_abs_diff"] == p["abs_diff"]
    assert "| all 1 pairs: median (max) abs diff |" in mod.markdown(res)
