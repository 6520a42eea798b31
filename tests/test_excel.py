"""Plan workbook: layout, read-back, formula injection, atomic writes, and totals
recalculated by a real spreadsheet program (LibreOffice headless)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import openpyxl
import pandas as pd
import pytest

from dcplan.case import load_case
from dcplan.export.excel import FIRST_DATA_ROW, HEADER_ROW, SHEET_ORDER, SHEETS, write_workbook
from dcplan.export.labels import column_of
from dcplan.export.sources import assumptions_table
from dcplan.planner import plan

REPO = Path(__file__).resolve().parent.parent
EVIL = '=HYPERLINK("http://x","y")'
SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")
needs_soffice = pytest.mark.skipif(
    SOFFICE is None, reason="LibreOffice (soffice) is not installed; .ci/run installs it")


def soffice_convert(src: Path, outdir: Path, fmt: str = "xlsx") -> Path:
    """Convert ``src`` with LibreOffice headless (formulas recalculated on load)."""
    profile = outdir / "lo_profile"
    outdir.mkdir(parents=True, exist_ok=True)
    cmd = [SOFFICE, "--headless", "--norestore", f"-env:UserInstallation={profile.as_uri()}",
           "--convert-to", fmt, "--outdir", str(outdir), str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    out = outdir / (src.stem + "." + fmt.split(":")[0])
    assert proc.returncode == 0 and out.exists(), (proc.stdout, proc.stderr)
    return out


@pytest.fixture(scope="module")
def solved():
    """The minimal example, with a formula-like site name and scenario name."""
    case = load_case(REPO / "examples" / "minimal.yaml").with_changes(
        {"name": EVIL, "description": "+1+2 @x -y"},
        overrides=[{"kind": "sites", "id": "seoul_metro", "field": "name", "set": EVIL}])
    result = plan(case)
    assert result.ok and result.case is case
    return result, case


@pytest.fixture(scope="module")
def book(solved, tmp_path_factory):
    result, src = solved
    path = tmp_path_factory.mktemp("xlsx") / "plan.xlsx"
    write_workbook(result, path, sources=src)
    return path


@pytest.fixture(scope="module")
def recalculated(book, tmp_path_factory):
    if SOFFICE is None:
        pytest.skip("LibreOffice (soffice) is not installed; .ci/run installs it")
    out = soffice_convert(book, tmp_path_factory.mktemp("lo"))
    return openpyxl.load_workbook(out, data_only=True)


def test_sheets_layout_units_formats(book, solved):
    result, _ = solved
    wb = openpyxl.load_workbook(book)
    assert wb.sheetnames == list(SHEET_ORDER)
    for spec in SHEETS:
        ws = wb[spec.sheet]
        df = result.tables[spec.table]
        assert ws.freeze_panes is not None and ws.freeze_panes.endswith(str(FIRST_DATA_ROW))
        assert ws.auto_filter.ref and ws.auto_filter.ref.startswith(f"A{HEADER_ROW}:")
        heads = [c.value for c in ws[HEADER_ROW]][: len(df.columns)]
        for col, h in zip(df.columns, heads, strict=True):
            if pd.api.types.is_float_dtype(df[col]):
                assert "[" in h and h.endswith("]"), (spec.sheet, h)  # unit in the header
                if len(df):
                    cell = ws.cell(FIRST_DATA_ROW, list(df.columns).index(col) + 1)
                    assert cell.number_format != "General", (spec.sheet, col)
        widths = [ws.column_dimensions[c].width for c in "AB"]
        assert all(w and w >= 8 for w in widths)
    assert len(wb["Charts"]._charts) == 3  # facility MW by site, racks by type, cost stack
    fleet = wb["Fleet"]
    total_row = FIRST_DATA_ROW + len(result.tables["fleet"]) + 1
    assert fleet.cell(total_row, 1).value == "Total"
    assert str(fleet.cell(total_row, 5).value).startswith("=SUM(")


def test_every_sheet_reads_back_with_pandas(book, solved):
    result, src = solved
    for spec in SHEETS:
        df = result.tables[spec.table]
        back = pd.read_excel(book, sheet_name=spec.sheet, header=HEADER_ROW - 1, nrows=len(df),
                             engine="openpyxl")
        back = back.iloc[:, : len(df.columns)]
        back.columns = [column_of(df, str(h)) for h in back.columns]
        assert list(back.columns) == list(df.columns)
        assert len(back) == len(df)
        for col in df.columns:
            if pd.api.types.is_numeric_dtype(df[col]) and len(df):
                np.testing.assert_allclose(back[col].astype(float), df[col].astype(float),
                                           rtol=1e-12, equal_nan=True, err_msg=spec.sheet)
            elif len(df):
                want = [None if pd.isna(v) or v == "" else str(v) for v in df[col]]
                # a column of year labels with blanks reads back as floats (2026.0)
                got = [None if pd.isna(v) or v == "" else
                       str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)
                       for v in back[col]]
                assert got == want, (spec.sheet, col)
    want = assumptions_table(src, result.inputs)
    back = pd.read_excel(book, sheet_name="Assumptions", header=HEADER_ROW - 1, engine="openpyxl",
                         keep_default_na=False, na_values=[])
    assert len(back) == len(want)
    assert back.iloc[:, 2].astype(str).tolist() == want["id"].tolist()
    assert back.iloc[:, 4].astype(str).tolist() == want["field"].tolist()
    # every input figure with unit, source and date
    figures = want[want.section.isin(["catalog", "site"])]
    assert (figures.unit != "").all() and (figures.source != "").all()
    assert (figures.as_of != "").all()
    cap = want[(want.id == "gb200_nvl72") & (want.field == "capex_usd")]
    assert float(cap.value.iloc[0]) == 3_000_000 and cap.unit.iloc[0] == "USD"
    grid = want[(want.id == "seoul_metro") & (want.field == "grid_mw[2026]")]
    assert grid.unit.iloc[0] == "MW"


def test_user_text_is_never_a_formula(book):
    wb = openpyxl.load_workbook(book)
    found = []
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if isinstance(cell.value, str) and EVIL in cell.value:
                    assert cell.data_type == "s", (ws.title, cell.coordinate)
                    if cell.value == EVIL:
                        assert cell.quotePrefix
                        found.append(ws.title)
                if isinstance(cell.value, str) and cell.value.startswith("+1+2"):
                    assert cell.data_type == "s"
    assert "Assumptions" in found and "Summary" in found  # site name and scenario name
    with zipfile.ZipFile(book) as z:
        for name in z.namelist():
            if name.startswith("xl/worksheets/"):
                formulas = re.findall(r"<f>(.*?)</f>", z.read(name).decode())
                assert not [f for f in formulas if "HYPERLINK" in f], name


@needs_soffice
@pytest.mark.slow
def test_injection_stays_text_in_libreoffice(recalculated):
    ws = recalculated["Assumptions"]
    names = [c.value for c in ws["D"]]
    assert EVIL in names  # visible text identical, not evaluated to "y"
    assert "y" not in names
    summary = [c.value for c in recalculated["Summary"]["B"]]
    assert EVIL in summary


@needs_soffice
@pytest.mark.slow
def test_opex_check_of_a_plan_with_unserved_demand(tmp_path):
    """The Summary's live Opex formula, the Opex KPI and the costs table agree when the
    plan leaves demand unserved (the KPI used to subtract the discounted penalty from
    undiscounted opex)."""
    from test_planner_reporting import _unserved_plan

    _d, result = _unserved_plan()
    c = result.tables["costs"]
    opex = c[(c.kind == "opex") & (c.category != "unserved_penalty")].cost_usd.sum()
    capex = c[c.kind == "capex"].cost_usd.sum()
    path = tmp_path / "short.xlsx"
    write_workbook(result, path)
    ws = openpyxl.load_workbook(soffice_convert(path, tmp_path / "lo"), data_only=True)["Summary"]
    got = {row[0]: row[1:3] for row in ws.iter_rows(values_only=True)
           if row[0] in ("Opex", "Capex") and isinstance(row[1], int | float)}
    assert got["Opex"][0] == pytest.approx(opex, rel=1e-9)
    assert got["Opex"][1] == pytest.approx(opex, rel=1e-12)
    assert got["Capex"][0] == pytest.approx(capex, rel=1e-9)
    text = [row[1] for row in ws.iter_rows(values_only=True) if row[0] == "What this means"]
    assert text[0].startswith("Demand NOT fully met (elastic plan)")


def test_summary_status_wording(book, solved):
    result, _ = solved
    ws = openpyxl.load_workbook(book)["Summary"]
    rows = {r[0]: r[1] for r in ws.iter_rows(values_only=True) if r[0]}
    assert rows["Plan status"] == result.status_text
    meaning = rows["What this means"]
    if result.proven_optimal:
        assert meaning.startswith("Optimal.") and "No cheaper plan" in meaning
    else:
        assert "gap" in meaning and "No cheaper plan" not in meaning
    k = dict(zip(result.tables["kpis"].kpi, result.tables["kpis"].unit, strict=True))
    assert "terminal value" in k["usd_per_million_tokens"]


@needs_soffice
@pytest.mark.slow
def test_libreoffice_recalculates_totals_to_dcplan_values(recalculated, solved):
    result, _ = solved
    t = result.tables
    kpi = dict(zip(t["kpis"].kpi, t["kpis"].value, strict=True))
    ws = recalculated["Summary"]
    checks = {}
    for row in ws.iter_rows(values_only=True):
        if row[0] in ("NPV of all costs", "Capex", "Opex", "Energy", "Carbon", "Racks bought") \
                and isinstance(row[1], int | float) and row[3] is not None:
            checks[row[0]] = (row[1], row[2])
    assert set(checks) == {"NPV of all costs", "Capex", "Opex", "Energy", "Carbon",
                           "Racks bought"}
    for label, key in (("NPV of all costs", "npv_cost_usd"), ("Capex", "capex_usd"),
                       ("Opex", "opex_usd"), ("Energy", "energy_mwh"), ("Carbon", "carbon_t"),
                       ("Racks bought", "racks_bought")):
        spreadsheet, written = checks[label]
        assert spreadsheet == pytest.approx(kpi[key], rel=1e-9), label
        assert written == pytest.approx(kpi[key], rel=1e-12)
    assert kpi["npv_cost_usd"] == pytest.approx(result.objective_usd, rel=1e-9)

    def total(sheet, table, col):
        df = t[table]
        ws = recalculated[sheet]
        r = FIRST_DATA_ROW + len(df) + 1
        assert ws.cell(r, 1).value == "Total"
        return ws.cell(r, list(df.columns).index(col) + 1).value

    assert total("Fleet", "fleet", "new_racks") == pytest.approx(t["fleet"].new_racks.sum())
    assert total("Power", "power", "energy_kwh") == pytest.approx(t["power"].energy_kwh.sum(),
                                                                  rel=1e-12)
    assert total("Costs", "costs", "cost_usd_discounted") == pytest.approx(
        t["costs"].cost_usd_discounted.sum(), rel=1e-12)

    # Charts sheet pivots (SUMIFS) equal pandas pivots of the result tables
    ws = recalculated["Charts"]
    cells = {}
    for row in ws.iter_rows(values_only=True):
        if row[0] and str(row[0]).startswith("Facility power at peak by site"):
            cells["mode"] = "fac"
        elif row[0] and str(row[0]).startswith("Grid limit by site"):
            cells["mode"] = "grid"
        elif row[0] and str(row[0]).startswith("Racks in service by type"):
            cells["mode"] = "racks"
        elif row[0] and str(row[0]).startswith("Costs by category, undiscounted"):
            cells["mode"] = "cost"
        elif row[0] and str(row[0]).startswith("Costs by category, discounted"):
            cells["mode"] = "disc"
        elif row[0] == "Period":
            cells[cells["mode"] + "_head"] = [h for h in row[1:] if h]
        elif row[0] and cells.get("mode") and row[0] != "Total":
            head = cells[cells["mode"] + "_head"]
            for h, v in zip(head, row[1:], strict=False):
                cells[(cells["mode"], str(row[0]), h)] = v
    fac = t["power"].groupby(["period", "site"]).facility_kw_peak.sum() / 1000
    for (p, s), v in fac.items():
        assert cells[("fac", p, s)] == pytest.approx(v, rel=1e-9, abs=1e-9)
    grid = t["power"].groupby(["period", "site"]).grid_kw.sum() / 1000
    for (p, s), v in grid.items():
        assert cells[("grid", p, s)] == pytest.approx(v, rel=1e-9, abs=1e-9)
    racks = t["fleet"].groupby(["period", "rack"]).installed_racks.sum()
    for (p, r), v in racks.items():
        assert cells[("racks", p, r)] == pytest.approx(v)
    cost = t["costs"].groupby(["period", "category"]).cost_usd.sum() / 1e6
    for (p, c), v in cost.items():
        assert cells[("cost", p, c)] == pytest.approx(v, rel=1e-9, abs=1e-9)
    by_period = t["costs"].groupby("period").cost_usd_discounted.sum() / 1e6
    for p, v in by_period.items():
        assert cells[("disc", p, "Total [million USD]")] == pytest.approx(v, rel=1e-9, abs=1e-6)


@needs_soffice
@pytest.mark.slow
def test_opens_in_libreoffice_as_csv(book, solved, tmp_path):
    """LibreOffice reads the file (no repair needed) and exports the first sheet."""
    out = soffice_convert(book, tmp_path, "csv")
    text = out.read_text(encoding="utf-8", errors="replace")
    assert "Outcome" in text and "OPTIMAL" in text


def test_atomic_write_keeps_old_file_on_failure(book, solved, tmp_path, monkeypatch):
    result, src = solved
    target = tmp_path / "plan.xlsx"
    target.write_bytes(book.read_bytes())
    before = target.read_bytes()

    def broken_save(self, filename):
        Path(filename).write_bytes(b"PK\x03\x04 half a workbook")
        raise OSError("disk full")

    monkeypatch.setattr(openpyxl.Workbook, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        write_workbook(result, target, sources=src)
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.xlsx"]
    monkeypatch.undo()
    write_workbook(result, target, sources=src)  # a good write replaces it
    assert target.read_bytes() != before or zipfile.is_zipfile(target)
    assert oct(os.stat(target).st_mode & 0o044) != "0o0"  # readable by others (umask)
