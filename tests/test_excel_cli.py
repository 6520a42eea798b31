"""dcplan plan --xlsx / --png-dir."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest
from typer.testing import CliRunner

from dcplan.cli import app
from dcplan.export.charts import PLAN_CHARTS
from dcplan.export.excel import SHEET_ORDER
from dcplan.export.files import MARKER

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_plan_writes_workbook_and_charts(tmp_path, minimal_linear):
    xlsx = tmp_path / "book" / "minimal.xlsx"
    png = tmp_path / "png"
    res = CliRunner().invoke(app, ["plan", str(minimal_linear), "--xlsx",
                                   str(xlsx), "--png-dir", str(png)])
    assert res.exit_code == 0, res.output
    assert "wrote workbook" in res.output
    wb = openpyxl.load_workbook(xlsx)
    assert wb.sheetnames == list(SHEET_ORDER)
    assert wb["Summary"]["B7"].value == "OPTIMAL"
    assert sorted(p.name for p in png.iterdir()) == sorted([*PLAN_CHARTS, MARKER])
    assert [p.name for p in xlsx.parent.iterdir()] == ["minimal.xlsx"]  # no temporary left
