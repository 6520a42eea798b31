"""``dcplan sweep`` on the command line without solving: errors, folders, show, report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_sweep_summary import make_spec, write_folder
from typer.testing import CliRunner

from dcplan.cli import app

REPO = Path(__file__).resolve().parent.parent
MINIMAL_SWEEP = REPO / "examples" / "sweeps" / "minimal_lhs.yaml"
runner = CliRunner()


def test_help_lists_run_show_and_report():
    done = runner.invoke(app, ["sweep", "--help"])
    assert done.exit_code == 0
    for cmd in ("run", "show", "report"):
        assert cmd in done.output


def test_a_bad_sweep_file_exits_1_naming_file_line_entry_and_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(MINIMAL_SWEEP.read_text().replace("base: ../minimal.yaml",
                                                      f"base: {REPO / 'examples/minimal.yaml'}")
                    .replace("low: 0.45", "low: 1.45").replace("samples: 64", "samples: 0"))
    done = runner.invoke(app, ["sweep", str(path), "-o", str(tmp_path / "out")])
    assert done.exit_code == 1
    err = done.output
    assert "2 problems found" in err
    assert "bad.yaml:26, entry 'chat_growth', field 'low': low (1.45) must be below high" in err
    assert "field 'samples': must be at least 1" in err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_folder_that_holds_another_sweep_is_refused(tmp_path):
    folder = tmp_path / "sw"
    write_folder(folder, make_spec(n=1), [{"sample_id": 1, "x0": 0.1, "weight": 1,
                                           "status": "optimal", "npv_cost_usd": 1.0}])
    done = runner.invoke(app, ["sweep", str(MINIMAL_SWEEP), "-o", str(folder)])
    assert done.exit_code == 1 and "already holds a sweep" in done.output
    done = runner.invoke(app, ["sweep", str(MINIMAL_SWEEP), "-o", str(folder), "--resume"])
    assert done.exit_code == 1 and "holds another sweep" in done.output


def test_workers_and_scheduler_exclude_each_other(tmp_path):
    done = runner.invoke(app, ["sweep", "run", str(MINIMAL_SWEEP), "--workers", "2",
                               "--scheduler", "tcp://127.0.0.1:1", "-o", str(tmp_path / "o")])
    assert done.exit_code == 1 and "not both" in done.output


def _folder(tmp_path):
    folder = tmp_path / "sw"
    rows = [{"sample_id": 0, "x0": 0.5, "weight": 0, "status": "optimal",
             "npv_cost_usd": 3e8, "usd_per_million_tokens": 0.03}]
    rows += [{"sample_id": i, "x0": i / 10, "weight": 0.1, "status": "optimal",
              "npv_cost_usd": 1e8 * i, "usd_per_million_tokens": 0.01 * i}
             for i in range(1, 11)]
    fleet = [(i, 2026, "a", i, i) for i in range(0, 11)]
    data = write_folder(folder, make_spec(n=1), rows, fleet)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["description"] = "<script>alert(1)</script> & =HYPERLINK(\"x\")"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder, data


def test_show_of_a_sweep_folder(tmp_path):
    from dcplan.sweep import is_sweep_folder

    folder, _ = _folder(tmp_path)
    assert is_sweep_folder(folder) and not is_sweep_folder(tmp_path)
    done = runner.invoke(app, ["sweep", "show", str(folder)])
    assert done.exit_code == 0, done.output
    assert "10 of 10 samples solved" in done.output
    assert "NPV of costs: P10 190, P50 550, P90 910 million USD (base case 300)" in done.output
    done = runner.invoke(app, ["sweep", "show", str(folder), "--json"])
    data = json.loads(done.output)
    assert data["solved"] == 10 and data["kpis"][0]["p50"] == pytest.approx(5.5e8)


@pytest.mark.slow
def test_report_of_a_sweep_folder(tmp_path):
    from openpyxl import load_workbook
    from test_html import _self_contained

    folder, _ = _folder(tmp_path)
    done = runner.invoke(app, ["sweep", "report", str(folder)])
    assert done.exit_code == 0, done.output
    for name in ("npv_distribution", "tornado", "racks_fan", "purchase_probability",
                 "sensitivity"):
        png = (folder / "charts" / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    text = (folder / "report.html").read_text(encoding="utf-8")
    _self_contained(text)
    assert text.count('<img alt="') == 5
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "P10 190, P50 550, P90 910 million USD" in text
    wb = load_workbook(folder / "sweep.xlsx")
    assert wb.sheetnames == ["Summary", "Purchases", "Fleet", "Sensitivity", "Tornado",
                             "Parameters", "Samples"]
    desc = next(c.value for row in wb["Summary"].iter_rows() for c in row
                if isinstance(c.value, str) and "HYPERLINK" in c.value)
    assert desc.startswith("<script>")  # text, not a formula
    samples = wb["Samples"]
    assert samples.max_row == 3 + 11  # title, note, header, then sample 0 and 10 samples


@pytest.mark.slow
def test_sweep_report_in_headless_chromium(tmp_path):
    from browser import CHROMIUM, render

    if CHROMIUM is None:
        pytest.skip("no Chromium (.ci/run installs it)")
    folder, _ = _folder(tmp_path)
    from dcplan.export.sweep import write_sweep_reports

    write_sweep_reports(folder)
    page = render(folder / "report.html", pdf=False)
    assert page.errors == []
    assert page.checks["images"] == page.checks["images_loaded"] == 5
    assert page.checks["overflowing"] == []
    assert "NPV of costs: P10 190" in page.text


@pytest.mark.slow
def test_dcplan_show_reads_a_sweep_folder_too(tmp_path):
    folder, _ = _folder(tmp_path)
    done = runner.invoke(app, ["show", str(folder)])
    assert done.exit_code == 0, done.output
    assert done.output == runner.invoke(app, ["sweep", "show", str(folder)]).output
    data = json.loads(runner.invoke(app, ["show", str(folder), "--json"]).output)
    assert data["solved"] == 10
    empty = tmp_path / "empty"
    empty.mkdir()
    done = runner.invoke(app, ["show", str(empty)])
    assert done.exit_code == 1 and "without a sweep" in done.output
    assert "--save" in done.output and "dcplan sweep" in done.output


def test_show_refuses_a_folder_without_a_sweep(tmp_path):
    done = runner.invoke(app, ["sweep", "show", str(tmp_path)])
    assert done.exit_code == 1 and "not a sweep folder" in done.output
