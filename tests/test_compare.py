"""dcplan compare: side-by-side KPIs with deltas, binding limits, fleets; workbook and PNGs."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
from typer.testing import CliRunner

from dcplan.cli import app
from dcplan.export.compare import compare_results

REPO = Path(__file__).resolve().parent.parent
MINIMAL = REPO / "examples" / "minimal.yaml"
EVIL = '=HYPERLINK("http://x","y")'
SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")


@pytest.fixture(scope="module")
def run(tmp_path_factory, minimal_linear):
    """Compare the minimal example with a copy whose GB200 racks cost 20 % more (both
    with the linear fabric: what is compared is not the fabric)."""
    tmp = tmp_path_factory.mktemp("compare")
    text = (minimal_linear.read_text(encoding="utf-8")
            + 'name: "=HYPERLINK(\\"http://x\\",\\"y\\")"\n'
            + "overrides:\n  - {kind: racks, id: gb200_nvl72, field: capex_usd, scale: 1.2}\n")
    pricier = tmp / "pricier.yaml"
    pricier.write_text(text, encoding="utf-8")
    out = tmp / "out"
    res = CliRunner().invoke(app, ["compare", str(minimal_linear), str(pricier), "--baseline",
                                   "minimal", "-o", str(out), "-q"])
    return res, out, tmp


@pytest.mark.slow
def test_compare_cli_prints_side_by_side(run):
    res, out, _ = run
    assert res.exit_code == 0, res.output
    text = res.stdout
    assert "baseline: minimal" in text
    assert "Key figures (delta = scenario - baseline" in text
    npv = next(line for line in text.splitlines() if line.startswith("NPV of all costs"))
    assert "minimal" not in npv and "+" in npv and "%" in npv  # positive delta with percent
    assert "Binding limits:" in text and "grid" in text
    assert "Racks bought over the horizon" in text


@pytest.mark.slow
def test_compare_writes_workbook_csv_and_charts(run):
    _, out, _ = run
    kpis = pd.read_csv(out / "kpis.csv")
    # the scenario named like a formula heads its column as text ('=...), never a formula
    assert "'" + EVIL in kpis.columns and EVIL not in kpis.columns
    row = kpis[kpis.kpi == "npv_cost_usd"].iloc[0]
    evil = "'" + EVIL
    assert row[f"delta vs minimal: {EVIL}"] == pytest.approx(row[evil] - row["minimal"],
                                                             abs=0.02)  # rounded to cents
    assert row[evil] > row["minimal"]
    for name in ("npv_cost_stack.png", "facility_mw_by_site.png", "usd_per_million_tokens.png"):
        png = out / "charts" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    wb = openpyxl.load_workbook(out / "comparison.xlsx")
    assert wb.sheetnames[:2] == ["Comparison", "NPV"]
    heads = [c.value for c in wb["Comparison"][3]]
    assert EVIL in heads
    cell = next(c for c in wb["Comparison"][3] if c.value == EVIL)
    assert cell.data_type == "s"  # a scenario name is never a formula
    assert str(wb["Comparison"]["E4"].value).startswith("=IF(")  # live delta


@pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed; "
                                            ".ci/run installs it")
@pytest.mark.slow
def test_comparison_workbook_recalculates_in_libreoffice(run):
    _, out, tmp = run
    lo = tmp / "lo"
    proc = subprocess.run([SOFFICE, "--headless", "--norestore",
                           f"-env:UserInstallation={(tmp / 'lo_profile').as_uri()}",
                           "--convert-to", "xlsx", "--outdir", str(lo),
                           str(out / "comparison.xlsx")], capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr
    wb = openpyxl.load_workbook(lo / "comparison.xlsx", data_only=True)
    kpis = pd.read_csv(out / "kpis.csv").set_index("kpi")
    ws = wb["NPV"]
    total = next(r for r in ws.iter_rows(values_only=True) if r[0] == "Total (NPV)")
    assert total[1] * 1e6 == pytest.approx(kpis.loc["npv_cost_usd", "minimal"], rel=1e-9)
    assert total[2] * 1e6 == pytest.approx(kpis.loc["npv_cost_usd", "'" + EVIL], rel=1e-9)
    cats = [r[0] for r in ws.iter_rows(min_row=4, values_only=True) if r[0]]
    assert "Racks" in cats and "Terminal value (credit)" in cats  # categories in words
    ws = wb["Comparison"]
    npv_row = next(r for r in ws.iter_rows(values_only=True) if r[0] == "NPV of all costs")
    assert npv_row[4] == pytest.approx(npv_row[3] - npv_row[2], rel=1e-12)
    assert npv_row[5] == pytest.approx(npv_row[3] / npv_row[2] - 1, rel=1e-9)
    assert ws["C3"].value == "minimal" and ws["D3"].value == EVIL


@pytest.mark.slow
def test_compare_json_and_bad_command_lines(run, tmp_path):
    runner = CliRunner()
    res = runner.invoke(app, ["compare", str(MINIMAL)])
    assert res.exit_code == 2 and "at least two" in res.output
    res = runner.invoke(app, ["compare", str(MINIMAL), str(tmp_path / "missing.yaml")])
    assert res.exit_code == 1 and "not found" in res.output
    res = runner.invoke(app, ["compare", str(MINIMAL), str(MINIMAL), "--baseline", "nope"])
    assert res.exit_code == 2 and "none of the plans" in res.output


def test_compare_results_baseline_and_names():
    from types import SimpleNamespace

    from dcplan.planner import SolveStatus

    def fake(name, npv):
        kpis = pd.DataFrame({"kpi": ["npv_cost_usd"], "value": [npv], "unit": ["USD"]})
        fleet = pd.DataFrame({"period": ["2026"], "site": ["s"], "rack": ["r"],
                              "installed_racks": [npv], "new_racks": [npv]})
        return SimpleNamespace(name=name, tables={"kpis": kpis, "fleet": fleet}, inputs=None,
                               status=SolveStatus.OPTIMAL, gap=0.0, solver="highs",
                               unserved=False, message="")

    cmp = compare_results([fake("a", 1.0), fake("a", 3.0)], baseline="y",
                          labels=["x.yaml", "y.yaml"])
    assert cmp.names == ["a (x)", "a (y)"] and cmp.baseline == "a (y)"
    assert cmp.kpis.loc[0, "delta vs a (y): a (x)"] == -2.0
    assert len(cmp.fleet_diff) == 1
    with pytest.raises(ValueError, match="none of the scenarios"):
        compare_results([fake("a", 1.0), fake("b", 2.0)], baseline="zzz")
    json.dumps(cmp.summary())


@pytest.mark.slow
def test_comparison_workbook_prints_kpis_with_values(run):
    """Page 1 of the comparison (the Comparison sheet, one page wide) holds the KPI names
    in words next to every scenario's value; every sheet has a page setup."""
    _, out, _ = run
    wb = openpyxl.load_workbook(out / "comparison.xlsx")
    ws = wb["Comparison"]
    assert ws["A4"].value == "NPV of all costs" and ws["B4"].value == "USD (present value)"
    assert isinstance(ws["C4"].value, int | float) and isinstance(ws["D4"].value, int | float)
    last = max(c.column for c in ws[3] if c.value is not None)
    area = str(ws.print_area).replace("$", "")
    assert area.endswith(f"{openpyxl.utils.get_column_letter(max(last, 6))}{ws.max_row}")
    from dcplan.export.printing import MIN_FONT_PT, effective_font_pt

    for sheet in wb.worksheets:
        assert sheet.page_setup.orientation in ("landscape", "portrait"), sheet.title
        assert effective_font_pt(sheet) >= MIN_FONT_PT and sheet.print_area, sheet.title
        assert EVIL in sheet.oddHeader.left.text, sheet.title
def test_differences_within_the_solver_gaps_are_marked():
    from types import SimpleNamespace

    from dcplan.export.compare import WITHIN_GAP, comparison_text, within_gap
    from dcplan.planner import SolveStatus

    def fake(name, npv, gap):
        kpis = pd.DataFrame({"kpi": ["npv_cost_usd", "racks_bought"], "value": [npv, 3.0],
                             "unit": ["USD", "racks"]})
        fleet = pd.DataFrame({"period": ["2026"], "site": ["s"], "rack": ["r"],
                              "installed_racks": [1.0], "new_racks": [1.0]})
        return SimpleNamespace(name=name, tables={"kpis": kpis, "fleet": fleet}, inputs=None,
                               status=SolveStatus.OPTIMAL, gap=gap, solver="highs",
                               unserved=False, message="")

    # 0.1 % gaps: 1000 vs 1001.5 differ by 1.5, less than 1.0 + 1.0015 allowed
    assert within_gap(1000.0, 1001.5, 0.001, 0.001)
    assert not within_gap(1000.0, 1003.0, 0.001, 0.001)
    assert within_gap(1000.0, 1001.5, None, 0.001) is None
    cmp = compare_results([fake("a", 1000.0, 0.001), fake("b", 1001.5, 0.001),
                           fake("c", 1003.0, 0.001), fake("d", 1003.0, 0.002)])
    row = cmp.kpis.set_index("kpi").loc["npv_cost_usd"]
    assert row["significance vs a: b"] == WITHIN_GAP
    assert row["significance vs a: c"] == "significant"
    assert row["significance vs a: d"] == WITHIN_GAP     # 3 <= 1.0 + 2.006
    racks = cmp.kpis.set_index("kpi").loc["racks_bought"]
    assert racks["significance vs a: b"] == ""            # the gap bounds only the NPV
    text = comparison_text(cmp)
    assert text.count(WITHIN_GAP) == 2     # b and d, listed below the table


def test_caveats_for_other_years_or_other_demand():
    """Hand-built plans: same years and demand give no caveat; other years or +50 % demand do."""
    from types import SimpleNamespace

    from dcplan.export.compare import comparison_caveats, comparison_text
    from dcplan.planner import SolveStatus

    def fake(name, years, tokens_per_s):
        labels = [str(y) for y in years]
        inputs = SimpleNamespace(
            periods=[SimpleNamespace(label=x) for x in labels], hours=lambda _i: 8760.0,
            df_opex=lambda _p: 1.0,
            workloads={"w": SimpleNamespace(pool_share=lambda _k: 1.0)})
        demand = pd.DataFrame({"period": labels, "workload": "w", "pool": "all",
                               "demand_tokens_per_s_avg": tokens_per_s})
        kpis = pd.DataFrame({"kpi": ["npv_cost_usd"], "value": [1.0], "unit": ["USD"]})
        fleet = pd.DataFrame({"period": labels[:1], "site": ["s"], "rack": ["r"],
                              "installed_racks": [1.0], "new_racks": [1.0]})
        return SimpleNamespace(name=name, inputs=inputs, status=SolveStatus.OPTIMAL, gap=0.0,
                               solver="highs", unserved=False, message="",
                               tables={"kpis": kpis, "fleet": fleet, "demand": demand})

    a = fake("a", (2026, 2027), 100.0)
    same = fake("same", (2026, 2027), 100.0)
    longer = fake("longer", (2026, 2027, 2028), 100.0)  # 3 years of 100: +50 % tokens
    more = fake("more", (2026, 2027), 150.0)
    assert comparison_caveats([a, same], ["a", "same"], 0) == []
    got = comparison_caveats([a, longer, more], ["a", "longer", "more"], 0)
    assert got[0].startswith("longer plans 2026-2028, the baseline a 2026-2027")
    assert got[1].startswith("longer plans for +50% token demand")
    assert got[2].startswith("more plans for +50% token demand")
    assert len(got) == 3
    cmp = compare_results([a, more])
    assert "Read with care:" in comparison_text(cmp) and cmp.summary()["caveats"] == got[2:]
