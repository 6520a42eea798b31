"""``dcplan plan --write-mps``: the model as built and as HiGHS receives it, both solvable."""

from __future__ import annotations

import json
import math
from pathlib import Path

import highspy
import pytest
from typer.testing import CliRunner

from dcplan.cli import app
from dcplan.planner.highs import scaled_path

FIX = Path(__file__).parent / "fixtures" / "planner"
runner = CliRunner()


def _solve(path: Path) -> tuple[highspy.Highs, float]:
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("random_seed", 0)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return h, h.getInfo().objective_function_value


def test_scaled_path_sits_beside_the_raw_file():
    assert scaled_path("out/model.mps") == Path("out/model.scaled.mps")
    assert scaled_path(Path("m")) == Path("m.scaled.mps")


@pytest.mark.slow
def test_write_mps_writes_both_models_that_solve_to_the_same_plan(tmp_path):
    mps = tmp_path / "m.mps"
    lp = tmp_path / "m.lp"
    res = runner.invoke(app, ["plan", str(FIX / "small_linear.yaml"), "--write-mps", str(mps),
                              "--write-lp", str(lp), "--gap", "0", "--json"])
    assert res.exit_code == 0, res.output
    scaled = tmp_path / "m.scaled.mps"
    assert mps.exists() and scaled.exists()
    assert "scaled as HiGHS receives" in res.stderr
    raw_h, raw_obj = _solve(mps)
    sc_h, sc_obj = _solve(scaled)
    lp_h, lp_obj = _solve(lp)
    # the same rows and columns, named as in the LP file
    for h in (raw_h, sc_h):
        assert h.getNumRow() == lp_h.getNumRow() and h.getNumCol() == lp_h.getNumCol()
    names = {sc_h.getColName(i)[1] for i in range(sc_h.getNumCol())}
    assert any(n.startswith("new__") for n in names)
    rows = {sc_h.getRowName(i)[1] for i in range(sc_h.getNumRow())}
    assert any(n.startswith("grid__seoul_metro__") for n in rows)
    # the same optimum: the scaled objective is the raw one times a power of two
    assert raw_obj == pytest.approx(lp_obj, rel=1e-9)
    ratio = sc_obj / raw_obj
    assert math.log2(ratio) == pytest.approx(round(math.log2(ratio)), abs=1e-6)
    npv = json.loads(res.stdout)
    assert npv["objective_usd"] == pytest.approx(raw_obj, rel=1e-6)


def test_write_mps_checks_the_scaled_file_before_solving(tmp_path):
    (tmp_path / "m.scaled.mps").mkdir()  # where the scaled model would go
    res = runner.invoke(app, ["plan", str(FIX / "small_linear.yaml"), "--write-mps",
                              str(tmp_path / "m.mps")])
    assert res.exit_code == 1
    assert "--write-mps (scaled)" in res.stderr
    assert "[plan] solving" not in res.stderr and "Traceback" not in res.output
    assert not (tmp_path / "m.mps").exists()
