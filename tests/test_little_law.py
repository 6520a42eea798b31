"""Little's law on closed-loop serving rows: requests/s x time per request = in flight.

``perf validate`` and ``perf calibrate`` name a serving row whose throughput and median
latencies imply a number of requests in flight far from the client's concurrency (a run
that lost requests or measured another window); the row is still compared, and left out
of the fit unless ``--keep-inconsistent-rows``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from typer.testing import CliRunner

from dcplan.cli import app
from dcplan.perf.measurements import LITTLE_RATIO_BOUNDS, little_ratio

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "catalogs" / "measurements" / "inferencex_deepseek_r1.csv"


def row(**kw):
    base = dict(kind="serving", output_tokens_per_s_per_gpu=100.0, concurrency=16, gpus=64,
                disaggregated=False, decode_tp=8, decode_ep=8, decode_dp_attention=False,
                output_tokens=1000.0, median_ttft_s=0.5, median_tpot_ms=20.0)
    return SimpleNamespace(**(base | kw))


def test_little_ratio_by_hand():
    # aggregated TP8 EP8: one instance of 8 GPUs, whatever the gpus column (64) says;
    # 900 output tokens (0.9 of 1,000): 100 x 8 / 900 = 0.8889 requests/s, each
    # 0.5 + 899 x 0.020 = 18.48 s: 16.43 in flight over 16 -> 1.0267
    assert little_ratio(row(), 0.9) == pytest.approx(100 * 8 / 900 * 18.48 / 16)
    assert little_ratio(row(), 0.9) == pytest.approx(1.0267, abs=1e-4)
    # DEP16 (DP attention): 16 GPUs
    assert little_ratio(row(decode_tp=16, decode_ep=16, decode_dp_attention=True,
                            concurrency=32), 0.9) == pytest.approx(1.0267, abs=1e-4)
    # disaggregated: all of the row's GPUs (24)
    assert little_ratio(row(disaggregated=True, gpus=24, concurrency=48), 0.9) \
        == pytest.approx(100 * 24 / 900 * 18.48 / 48)
    # a run with a tenth of the throughput its latencies imply
    assert little_ratio(row(output_tokens_per_s_per_gpu=10.0), 0.9) \
        == pytest.approx(0.10267, abs=1e-5)
    for missing in ("median_ttft_s", "median_tpot_ms", "output_tokens_per_s_per_gpu"):
        assert little_ratio(row(**{missing: None}), 0.9) is None
    assert little_ratio(row(kind="phase"), 0.9) is None


def test_shipped_rows_mostly_keep_their_concurrency():
    """99 % of the shipped InferenceX rows lie within 0.6-1.04; nine lie below 0.6, the
    worst a fortieth (MI355X ATOM at 512 in flight, 25 output tokens/s per GPU)."""
    import numpy as np

    from dcplan.catalog import load_catalog
    from dcplan.perf.measurements import load_measurements

    rows = load_measurements(SHIPPED, load_catalog())
    r = np.array([little_ratio(m, 0.9) for m in rows])
    lo, hi = LITTLE_RATIO_BOUNDS
    assert np.percentile(r, 50) == pytest.approx(0.97, abs=0.01)
    out = [(m, x) for m, x in zip(rows, r, strict=True) if not lo <= x <= hi]
    assert len(out) == 9 and all(x < lo for _, x in out)
    worst = min(out, key=lambda t: t[1])[0]
    assert (worst.hardware, worst.framework, worst.concurrency) == ("mi355x", "atom", 512)


def _two_rows(tmp_path) -> tuple[Path, int]:
    """A CSV of the shipped header, a consistent row and the ATOM row; the latter's line."""
    with SHIPPED.open(newline="") as f:
        lines = f.read().splitlines()
    head = lines[0]
    atom = next(i for i, text in enumerate(lines) if text.startswith("mi355x,")
                and ",512,8,false" in text and ",atom," in text)
    good = 1
    path = tmp_path / "two.csv"
    path.write_text("\n".join([head, lines[good], lines[atom]]) + "\n")
    rows = list(csv.DictReader(path.open()))
    assert rows[1]["framework"] == "atom" and rows[1]["concurrency"] == "512"
    return path, 3


def test_validate_names_the_row_and_keeps_comparing_it(tmp_path):
    path, line = _two_rows(tmp_path)
    runner = CliRunner()
    done = runner.invoke(app, ["perf", "validate", str(path)])
    assert done.exit_code == 0, done.output
    said = " ".join(done.output.split())
    assert f"two.csv:{line}, row 2: its throughput (25.28 output tokens/s per GPU)" in said
    assert "keep 13 requests in flight by Little's law, where the client kept 512" in said
    assert "its figures are still compared" in said
    assert said.count("by Little's law") == 1          # the consistent row is not named
    rec = json.loads(runner.invoke(app, ["perf", "validate", str(path), "--json"]).stdout)
    ratios = [r["little_ratio"] for r in rec["rows"]]
    assert LITTLE_RATIO_BOUNDS[0] <= ratios[0] <= LITTLE_RATIO_BOUNDS[1]
    assert ratios[1] == pytest.approx(0.0246, abs=1e-4)
    assert rec["rows"][1]["predicted_output_tokens_per_s_per_gpu"] > 0   # still compared


@pytest.mark.slow
def test_calibrate_names_the_row_and_leaves_it_out_unless_kept(tmp_path):
    path, line = _two_rows(tmp_path)
    runner = CliRunner()
    out = tmp_path / "cal.yaml"
    done = runner.invoke(app, ["perf", "calibrate", str(path), "-o", str(out), "--json"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    little = [w for w in data["warnings"] if "Little's law" in w]
    assert len(little) == 1 and little[0].startswith(f"{path}:{line}, row 2: ")
    assert little[0].endswith("; it is left out of the fit and still compared "
                              "(--keep-inconsistent-rows fits it)")
    assert data["fit"]["rows"] == 1 and data["fit"]["left_out_rows"] == 1
    assert len(data["rows"]) == 2                      # both still compared
    saved = yaml.safe_load(out.read_text())
    assert saved["fit"]["rows"] == 1 and saved["fit"]["left_out_rows"] == 1
    # only the consistent row's accelerator (b200) has a fitted entry
    assert set(saved["hardware"]) == {"b200"}

    kept = tmp_path / "kept.yaml"
    done = runner.invoke(app, ["perf", "calibrate", str(path), "-o", str(kept), "--json",
                               "--keep-inconsistent-rows"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    little = [w for w in data["warnings"] if "Little's law" in w]
    assert len(little) == 1 and little[0].endswith("; it is still fitted")
    assert data["fit"]["rows"] == 2 and data["fit"]["left_out_rows"] == 0


def test_calibrate_with_every_row_inconsistent_says_so(tmp_path):
    path, line = _two_rows(tmp_path)
    lines = path.read_text().splitlines()
    only = tmp_path / "only.csv"
    only.write_text("\n".join([lines[0], lines[2]]) + "\n")
    out = tmp_path / "cal.yaml"
    done = CliRunner().invoke(app, ["perf", "calibrate", str(only), "-o", str(out)])
    assert done.exit_code == 1, done.output
    said = " ".join(done.output.split())
    assert "every row of" in said and "only.csv breaks Little's law" in said
    assert "--keep-inconsistent-rows" in said and "Traceback" not in done.output
    assert not out.exists()


@pytest.mark.slow
def test_calibrate_leaves_out_exactly_the_inconsistent_rows(monkeypatch):
    """calibrate() fits the rows within the bounds and records how many it left out;
    the fit it makes equals a fit of those rows alone."""
    from dcplan.catalog import load_catalog
    from dcplan.perf import calibration as calmod
    from dcplan.perf.measurements import breaks_little, load_measurements
    from dcplan.perf.params import NO_CALIBRATION, load_perf_inputs

    cat = load_catalog()
    rows = load_measurements(SHIPPED, cat)
    pin = load_perf_inputs(cat, NO_CALIBRATION, benchmarks=True)
    frac = pin.defaults.serving.measurement_length_frac
    bad = [m for m in rows if breaks_little(m, frac)]
    assert len(bad) == 9
    seen = {}

    def fake_space(rows_, *a, **k):
        seen["rows"] = list(rows_)
        raise RuntimeError("stop here")

    monkeypatch.setattr(calmod, "_Space", fake_space)
    with pytest.raises(RuntimeError, match="stop here"):
        calmod.calibrate(rows, cat, pin.defaults, benchmarks=pin.benchmarks)
    assert len(seen["rows"]) == len(rows) - 9
    assert not any(breaks_little(m, frac) for m in seen["rows"])
    with pytest.raises(RuntimeError, match="stop here"):
        calmod.calibrate(rows, cat, pin.defaults, benchmarks=pin.benchmarks,
                         keep_inconsistent=True)
    assert len(seen["rows"]) == len(rows)
    with pytest.raises(calmod.InputError, match="every row breaks Little's law"):
        calmod.calibrate(bad, cat, pin.defaults, benchmarks=pin.benchmarks)
