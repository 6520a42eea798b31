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

from dcplan.case import load_case  # noqa: F401
from dcplan.export.excel import (
    CHART_SHEETS,
    FIRST_DATA_ROW,
    HEADER_ROW,
    KPI_SHEET_HEADERS,
    NAME_SUFFIX,
    SHEET_ORDER,
    SHEETS,
    fit_widths,
    header_text,
    kpi_sheet_table,
    with_names,
    write_workbook,
)
from dcplan.export.labels import (
    LABELS,
    NAME_COLUMNS,
    TABLE_LABELS,
    catalog_names,
    category_label,
    name_of,
)
from dcplan.export.printing import (
    MIN_FONT_PT,
    column_inches,
    effective_font_pt,
    min_scale,
    page_layout,
    printable,
    printed_width,
    repeated_cols,
    text_width,
)
from dcplan.export.sources import assumptions_table, equipment_ids
from dcplan.tableio import tidy_table

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


def sheet_table(solved, table):
    """A result table as its sheet holds it: tidy, a name column before each id column
    that has names; and the id columns that got one."""
    result, src = solved
    return with_names(tidy_table(result.tables[table]), catalog_names(src))


def col_of(solved, table, col):
    """1-based sheet column of ``col`` of result table ``table``."""
    return list(sheet_table(solved, table)[0].columns).index(col) + 1


@pytest.fixture(scope="module")
def solved(minimal_plan):
    """The minimal example, with a formula-like site name and scenario name."""
    return minimal_plan


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


@pytest.mark.slow
def test_sheets_layout_units_formats(book, solved):
    result, _ = solved
    wb = openpyxl.load_workbook(book)
    assert wb.sheetnames == list(SHEET_ORDER)
    for spec in SHEETS:
        ws = wb[spec.sheet]
        df = result.tables[spec.table]
        assert ws.freeze_panes is not None and ws.freeze_panes.endswith(str(FIRST_DATA_ROW))
        assert ws.auto_filter.ref and ws.auto_filter.ref.startswith(f"A{HEADER_ROW}:")
        cols = (list(sheet_table(solved, spec.table)[0].columns) if spec.table != "kpis"
                else list(df.columns))
        heads = [c.value for c in ws[HEADER_ROW]][: len(cols)]
        for col, h in zip(cols, heads, strict=True):
            if col in df and pd.api.types.is_float_dtype(df[col]) and spec.table != "kpis":
                assert "[" in h and h.endswith("]"), (spec.sheet, h)  # unit in the header
                if len(df):
                    cell = ws.cell(FIRST_DATA_ROW, cols.index(col) + 1)
                    assert cell.number_format != "General", (spec.sheet, col)
        widths = [ws.column_dimensions[c].width for c in "AB"]
        assert all(w and w >= 8 for w in widths)
    for name, sheet in CHART_SHEETS.items():
        assert len(wb[sheet]._charts) == 1, name  # facility MW, racks by type, cost stack
    fleet = wb["Fleet"]
    total_row = FIRST_DATA_ROW + len(result.tables["fleet"]) + 1
    assert fleet.cell(total_row, 1).value == "Total"
    assert str(fleet.cell(total_row, col_of(solved, "fleet", "new_racks")).value).startswith(
        "=SUM(")


@pytest.mark.slow
def test_headers_and_kpis_in_words(book, solved):
    """Every column of every table the plan has is named in words (no 'Kw [kW]' or
    'Capex usd [USD]' made up from the column name), and the KPIs sheet shows KPI names,
    not ids like npv_cost_usd, in its first column."""
    result, _ = solved
    for name, df in result:
        for col in df.columns:
            assert col in LABELS or col in TABLE_LABELS.get(name, {}), (name, col)
    wb = openpyxl.load_workbook(book)
    for spec in SHEETS:
        heads = [c.value for c in wb[spec.sheet][HEADER_ROW] if c.value]
        for h in heads:
            assert not re.match(r"^(Kw|Capex usd|Cost usd)\b", h), (spec.sheet, h)
    ws = wb["Bill of materials"]
    heads = [c.value for c in ws[HEADER_ROW] if c.value]
    assert "Power, installed [kW (full load)]" in heads, heads
    assert "Equipment kind" in heads and "To order (new) [units]" in heads
    kpis = wb["KPIs"]
    names = [kpis.cell(r, 1).value for r in range(FIRST_DATA_ROW, FIRST_DATA_ROW + 15)]
    assert names[:3] == ["NPV of all costs", "Capex", "Opex"]
    assert not [n for n in names if n and "_" in n]
    assert [c.value for c in kpis[HEADER_ROW]][:5] == list(KPI_SHEET_HEADERS.values())
    # cost categories in words on the chart data and in the chart legend
    ws = wb["Chart data"]
    texts = {c.value for row in ws.iter_rows() for c in row if isinstance(c.value, str)}
    assert category_label("rack_capex") in texts and "rack_capex" not in texts


@pytest.mark.slow
def test_periods_numbers_counts_integers(book, solved):
    """Yearly periods are stored as numbers, rack and CDU counts as integers with an
    integer format, and no cell holds float noise."""
    result, _ = solved
    wb = openpyxl.load_workbook(book)
    ws = wb["Fleet"]
    cols = list(sheet_table(solved, "fleet")[0].columns)
    n = len(result.tables["fleet"])
    for r in range(FIRST_DATA_ROW, FIRST_DATA_ROW + n):
        period = ws.cell(r, cols.index("period") + 1)
        assert isinstance(period.value, int) and 2026 <= period.value <= 2032
        assert period.number_format in ("0", "General")
        for c in ("installed_racks", "new_racks", "retired_racks"):
            cell = ws.cell(r, cols.index(c) + 1)
            assert isinstance(cell.value, int), (c, cell.value)
            assert cell.number_format == "#,##0"
    ws = wb["Cooling"]
    cols = list(sheet_table(solved, "cooling")[0].columns)
    cdus = [ws.cell(r, cols.index("cdus") + 1).value
            for r in range(FIRST_DATA_ROW, FIRST_DATA_ROW + len(result.tables["cooling"]))]
    assert all(isinstance(v, int) for v in cdus)
    # rounded at the source: no value carries more than 6 significant digits of noise
    for name in ("Power", "Costs", "Allocation"):
        for row in wb[name].iter_rows(min_row=FIRST_DATA_ROW):
            for cell in row:
                if isinstance(cell.value, float):
                    text = repr(cell.value)
                    assert "99999999" not in text and "00000001" not in text, (name, text)
    # the pivots on Chart data select numeric periods too
    data = wb["Chart data"]
    firsts = [row[0].value for row in data.iter_rows() if isinstance(row[0].value, int)]
    assert firsts and set(firsts) <= set(range(2026, 2033))


@pytest.mark.slow
def test_every_sheet_reads_back_with_pandas(book, solved):
    """Each sheet equals the tidy table (rounded at the source) exactly, and the tidy
    table equals the planner's table within the rounding."""
    result, src = solved
    for spec in SHEETS:
        df = result.tables[spec.table]
        if spec.table == "kpis":
            want, _ = kpi_sheet_table(df)
            back = pd.read_excel(book, sheet_name=spec.sheet, header=HEADER_ROW - 1,
                                 nrows=len(want), engine="openpyxl")
            assert list(back.columns[:5]) == list(KPI_SHEET_HEADERS.values())
            assert back.iloc[:, 4].tolist() == df.kpi.tolist()
            np.testing.assert_allclose(back.iloc[:, 1].astype(float), df.value.astype(float),
                                       rtol=1e-5)
            continue
        tidy = tidy_table(df)
        want, named = sheet_table(solved, spec.table)
        back = pd.read_excel(book, sheet_name=spec.sheet, header=HEADER_ROW - 1, nrows=len(df),
                             engine="openpyxl")
        back = back.iloc[:, : len(want.columns)]
        assert [str(h) for h in back.columns] == [header_text(want, c, spec.table, named)
                                                 for c in want.columns], spec.sheet
        back.columns = list(want.columns)
        assert len(back) == len(df)
        for c in named:  # each name is the catalog's (or the site file's) for the id beside
            assert back[c + NAME_SUFFIX].fillna("").tolist() == [
                name_of(catalog_names(src), c, v) or "" for v in df[c]], (spec.sheet, c)
        for col in df.columns:
            if pd.api.types.is_numeric_dtype(df[col]) and not pd.api.types.is_bool_dtype(
                    df[col]) and len(df):
                np.testing.assert_array_equal(back[col].astype(float),
                                              tidy[col].astype(float), err_msg=spec.sheet)
                np.testing.assert_allclose(tidy[col].astype(float), df[col].astype(float),
                                           rtol=5e-6, atol=5e-3, err_msg=spec.sheet)
            elif len(df):
                want = [None if pd.isna(v) or v == "" else str(v) for v in df[col]]
                # a column of year labels with blanks reads back as floats (2026.0)
                got = [None if pd.isna(v) or v == "" else
                       str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)
                       for v in back[col]]
                assert got == want, (spec.sheet, col)
    want = assumptions_table(src, result.inputs, equipment_ids(result.tables),
                             result.power_basis)
    back = pd.read_excel(book, sheet_name="Assumptions", header=HEADER_ROW - 1, engine="openpyxl",
                         keep_default_na=False, na_values=[])
    assert len(back) == len(want)
    assert back.iloc[:, 2].astype(str).tolist() == want["id"].tolist()
    assert back.iloc[:, 4].astype(str).tolist() == want["field"].tolist()
    assert back["Source"].astype(str).tolist() == want["source"].tolist()
    sources = pd.read_excel(book, sheet_name="Sources", header=HEADER_ROW - 1, engine="openpyxl")
    ref_of = dict(zip(sources["Source"], sources["Ref."], strict=True))
    assert back["Source ref. [Sources sheet]"].tolist() == [ref_of.get(s, "")
                                                          for s in want["source"]]
    assert sources["Figures citing it [count]"].sum() == (want["source"] != "").sum()
    # every input figure with unit, source and date
    figures = want[want.section.isin(["catalog", "site"])]
    assert (figures.unit != "").all() and (figures.source != "").all()
    assert (figures.as_of != "").all()
    cap = want[(want.id == "gb200_nvl72") & (want.field == "capex_usd")]
    assert float(cap.value.iloc[0]) == 3_000_000 and cap.unit.iloc[0] == "USD"
    grid = want[(want.id == "seoul_metro") & (want.field == "grid_mw[2026]")]
    assert grid.unit.iloc[0] == "MW"


@pytest.mark.slow
def test_page_setup_on_every_sheet(book, solved):
    """A4 at a stated scale (not squeezed to the page width), body text at 8 pt or more,
    one page wide unless the table prints in column blocks (then with its id columns
    repeated), a print area, the header row repeated on data sheets, the scenario name
    and page numbers in the page header/footer; chart sheets fit on one page."""
    wb = openpyxl.load_workbook(book)
    for ws in wb.worksheets:
        ps = ws.page_setup
        assert str(ps.paperSize) == ws.PAPERSIZE_A4, ws.title
        # a hidden sheet (the charts' source) has no print area: LibreOffice would print it
        assert bool(ws.print_area) == (ws.sheet_state == "visible"), ws.title
        assert ws.sheet_state == "visible" or ws.title == "Chart data", ws.title
        if ws.sheet_state != "visible":
            continue
        assert EVIL in ws.oddHeader.left.text, ws.title
        assert "&P" in ws.oddFooter.right.text and "&N" in ws.oddFooter.right.text
        assert ws.page_margins.left <= 0.5
        if ws.title in CHART_SHEETS.values():
            assert ws.sheet_properties.pageSetUpPr.fitToPage, ws.title
            assert ps.fitToWidth == 1 and ps.fitToHeight == 1, ws.title
            continue
        assert not ws.sheet_properties.pageSetUpPr.fitToPage, ws.title
        # the smallest font of the print area at the sheet's scale
        smallest = min((c.font.sz or 11) for row in ws.iter_rows() for c in row
                       if c.value is not None)
        assert smallest * ps.scale / 100 >= MIN_FONT_PT, (ws.title, smallest, ps.scale)
        assert effective_font_pt(ws) >= MIN_FONT_PT, ws.title
        last_col = openpyxl.utils.column_index_from_string(
            re.sub(r"\d", "", ws.print_area.split(":")[-1].replace("$", "")))
        inches = sum(column_inches(printed_width(ws, j))
                     for j in range(1, last_col + 1)) * ps.scale / 100
        if inches > printable(ps.orientation)[0]:  # column blocks: the ids repeated
            assert ps.orientation == "landscape" and ps.scale == min_scale(), ws.title
        if ws.title in {s.sheet for s in SHEETS} | {"Assumptions", "Sources"}:
            assert ws.print_title_rows.replace("$", "") == f"{HEADER_ROW}:{HEADER_ROW}", ws.title


def test_page_layout_hand_computed():
    """Hand-computed layouts: a narrow long table prints portrait at 100 %; a table
    too wide for portrait at 8 pt goes landscape; one too wide for landscape prints at
    the smallest readable scale in blocks of columns, the ids repeated."""
    # 60 characters = 60 x 7 pt = 420 pt = 5.83 in < 7.47 x 0.98 in (portrait): 100 %
    # would print 200 rows of 15 pt (3,000 pt) on 4 pages of 10.69 in (770 pt); at
    # 76 % a page holds 770 / 0.76 = 1,013 pt: 3 pages (at 77 %, 999.6 pt: still 4);
    # 40 rows (600 pt) fit on one page at 100 %
    assert page_layout([20, 20, 20], [15.0] * 200) == ("portrait", 76, [])
    assert page_layout([20, 20, 20], [15.0] * 40) == ("portrait", 100, [])
    # 140 characters = 13.6 in: portrait would need 53 % (< 73 %); landscape
    # 10.89 x 0.98 / 13.6 = 78 %
    assert page_layout([10] * 14, [15.0] * 40) == ("landscape", 78, [])
    # 30 columns of 10 = 29.2 in; landscape at 73 % holds 10.67 / 0.73 = 14.6 in
    # = 15 columns of 0.972 in; blocks repeat the first column: 15, then 14 more, ...
    orient, scale, breaks = page_layout([10] * 30, [15.0] * 10, repeat_cols=1)
    assert (orient, scale) == ("landscape", min_scale()) and min_scale() == 73
    assert breaks == [15, 29]
    assert repeated_cols([10] * 30, 1) == 1
    # ids beyond 60 % of the page (14.6 x 0.6 = 8.8 in) are not repeated: 2 x 3.9 in do
    assert repeated_cols([40, 40, 40], 3) == 2 and repeated_cols([70, 70], 2) == 1


def test_text_width_and_fit_widths_hand_computed():
    """Digits are one character of column width each (DejaVu Sans, 2 % margin); two
    10-digit words (10.2 each, a space 0.51) start at 11 (a word of up to SHORT_WORD =
    10 kept whole, + 1 of padding: two lines, or more) and widen by the step that
    makes them one line for the least: +8 (19) saves nothing, +13 (24 >= 20.91 + 0.5
    of padding) saves what is over one line, so 24 and the 6 left are not spent; the
    header row counts once."""
    assert text_width("0" * 10) == pytest.approx(10.2)
    assert text_width("il") < text_width("00") < text_width("WM")
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.cell(HEADER_ROW, 1, "N")
    cell = ws.cell(FIRST_DATA_ROW, 1, "0123456789 0123456789")
    cell.alignment = openpyxl.styles.Alignment(wrap_text=True)
    tall = fit_widths(ws, [1], 30)
    assert ws.column_dimensions["A"].width == 24
    assert tall == 15.0 + 15.0  # header and one line
    # a budget below the narrowest widths: those, and no height
    assert fit_widths(ws, [1], 10) == float("inf") and ws.column_dimensions["A"].width == 11


@pytest.mark.slow
def test_constant_columns_hidden_and_named(book):
    """A hidden column of a data table holds one value in every row of the table and
    the description names it with that value; the Power sheet's Peak hour (always the
    peak hour) is one."""
    wb = openpyxl.load_workbook(book)
    seen = 0
    for spec in SHEETS[1:]:
        ws = wb[spec.sheet]
        last = FIRST_DATA_ROW
        while ws.cell(last + 1, 1).value not in (None, "Total"):
            last += 1
        for j in range(1, ws.max_column + 1):
            values = {ws.cell(r, j).value for r in range(FIRST_DATA_ROW, last + 1)}
            head = " ".join(str(ws.cell(HEADER_ROW, j).value).split())
            if ws.column_dimensions[openpyxl.utils.get_column_letter(j)].hidden:
                seen += 1
                assert len(values) == 1, (spec.sheet, head)
                assert f"{head}: " in ws.cell(2, 1).value, (spec.sheet, head)
    power = wb["Power"]
    j = [c.value for c in power[HEADER_ROW]].index("Peak hour") + 1
    assert power.column_dimensions[openpyxl.utils.get_column_letter(j)].hidden
    assert "Peak hour: peak" in power.cell(2, 1).value and seen >= 3


@pytest.mark.slow
def test_every_id_column_has_its_name_beside_it(book, solved):
    """Each id column with names in the catalogs or site files (site, rack type,
    workload, catalog entry, switch, CDU...) has a name column just left of it, headed
    by the label ("Rack type") while the ids are headed "Rack type id"; the names are
    the catalogs' ("NVIDIA GB200 NVL72" for gb200_nvl72)."""
    result, src = solved
    names = catalog_names(src)
    wb = openpyxl.load_workbook(book)
    seen = set()
    for spec in SHEETS:
        df = result.tables[spec.table]
        ws = wb[spec.sheet]
        heads = [c.value for c in ws[HEADER_ROW]]
        for col in df.columns:
            if col not in NAME_COLUMNS or not any(name_of(names, col, v) for v in df[col]):
                continue
            label = TABLE_LABELS.get(spec.table, {}).get(col, LABELS.get(col))
            j = heads.index(f"{label} id") + 1
            assert heads[j - 2] == label, (spec.sheet, col)
            for r in range(FIRST_DATA_ROW, FIRST_DATA_ROW + len(df)):
                ident, name = ws.cell(r, j).value, ws.cell(r, j - 1).value
                assert (name or "") == (name_of(names, col, ident) or ""), (spec.sheet, r)
            seen.add(col)
    assert {"site", "rack", "workload", "catalog_id", "category"} <= seen, seen
    fleet = wb["Fleet"]
    heads = [c.value for c in fleet[HEADER_ROW]]
    j = heads.index("Rack type id") + 1
    pairs = {(fleet.cell(r, j - 1).value, fleet.cell(r, j).value)
             for r in range(FIRST_DATA_ROW, FIRST_DATA_ROW + len(result.tables["fleet"]))}
    assert ("NVIDIA GB200 NVL72", "gb200_nvl72") in pairs


def test_page_header_escapes_ampersand(solved, tmp_path):
    from dcplan.export.printing import hf_text

    assert hf_text("R&D & co") == "R&&D && co"
    assert len(hf_text("x" * 500)) <= 60


@pytest.mark.slow
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
    assert got["Opex"][0] == pytest.approx(opex, rel=1e-9, abs=0.05)
    assert got["Opex"][1] == pytest.approx(opex, abs=0.005)  # rounded to the cent
    assert got["Capex"][0] == pytest.approx(capex, rel=1e-9)
    text = [row[1] for row in ws.iter_rows(values_only=True) if row[0] == "What this means"]
    assert text[0].startswith("Demand NOT fully met (elastic plan)")


@pytest.mark.slow
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
    """The spreadsheet's totals over the (rounded) rows equal dcplan's KPIs within the
    rounding, and its pivots equal pandas pivots of the tables as written."""
    result, _ = solved
    t = result.tables
    tidy = {name: tidy_table(df) for name, df in t.items()}
    kpi = dict(zip(t["kpis"].kpi, t["kpis"].value, strict=True))
    kpi_written = dict(zip(tidy["kpis"].kpi, tidy["kpis"].value, strict=True))
    ws = recalculated["Summary"]
    checks = {}
    for row in ws.iter_rows(values_only=True):
        if row[0] in ("NPV of all costs", "Capex", "Opex", "Energy", "Carbon", "Racks bought") \
                and isinstance(row[1], int | float) and isinstance(row[4], int | float):
            checks[row[0]] = (row[1], row[2], row[4])
    assert set(checks) == {"NPV of all costs", "Capex", "Opex", "Energy", "Carbon",
                           "Racks bought"}
    for label, key in (("NPV of all costs", "npv_cost_usd"), ("Capex", "capex_usd"),
                       ("Opex", "opex_usd"), ("Energy", "energy_mwh"), ("Carbon", "carbon_t"),
                       ("Racks bought", "racks_bought")):
        spreadsheet, written, diff = checks[label]
        assert spreadsheet == pytest.approx(kpi[key], rel=1e-9), label
        assert written == kpi_written[key]
        assert written == pytest.approx(kpi[key], rel=1e-11, abs=0.005)
        assert diff == pytest.approx(spreadsheet - written, abs=1e-6)
        assert abs(diff) < 1.0, label  # rounding of each row to the cent / watt-hour only
    assert kpi["npv_cost_usd"] == pytest.approx(result.objective_usd, rel=1e-9)

    def total(sheet, table, col):
        df = t[table]
        ws = recalculated[sheet]
        r = FIRST_DATA_ROW + len(df) + 1
        assert ws.cell(r, 1).value == "Total"
        return ws.cell(r, col_of(solved, table, col)).value

    assert total("Fleet", "fleet", "new_racks") == t["fleet"].new_racks.sum()
    assert total("Power", "power", "energy_kwh") == pytest.approx(
        tidy["power"].energy_kwh.sum(), rel=1e-12)
    assert total("Costs", "costs", "cost_usd_discounted") == pytest.approx(
        tidy["costs"].cost_usd_discounted.sum(), rel=1e-12)

    # Chart data pivots (SUMIFS) equal pandas pivots of the tables as written
    ws = recalculated["Chart data"]
    cells = {}
    modes = {"Facility power at peak by site": "fac", "Grid limit by site": "grid",
             "Racks in service by type": "racks", "Costs by category, undiscounted": "cost",
             "Costs by category, discounted": "disc"}
    for row in ws.iter_rows(values_only=True):
        head = str(row[0]) if row[0] is not None else ""
        mode = next((m for k, m in modes.items() if head.startswith(k)), None)
        if mode:
            cells["mode"] = mode
        elif row[0] == "Id":  # sites and rack types: ids above the names
            cells[cells["mode"] + "_ids"] = [h for h in row[1:] if h]
        elif row[0] == "Period":
            heads = [h for h in row[1:] if h]
            ids = cells.get(cells["mode"] + "_ids", [])
            cells[cells["mode"] + "_names"] = heads[: len(ids)]
            cells[cells["mode"] + "_head"] = ids + heads[len(ids):]
        elif row[0] is not None and cells.get("mode") and row[0] != "Total":
            head = cells[cells["mode"] + "_head"]
            for h, v in zip(head, row[1:], strict=False):
                cells[(cells["mode"], row[0], h)] = v
    power = tidy["power"]
    hosting = set(t["fleet"].loc[t["fleet"].installed_racks > 0, "site"])
    assert cells["fac_head"][:-1] == [s for s in dict.fromkeys(power.site) if s in hosting]
    # the chart series are named by the sites' and rack types' names
    names = catalog_names(solved[1])
    for mode, column in (("fac", "site"), ("grid", "site"), ("racks", "rack")):
        assert cells[mode + "_names"] == [name_of(names, column, i) or i
                                          for i in cells[mode + "_ids"]], mode
    assert "NVIDIA GB200 NVL72" in cells["racks_names"]
    fac = power[power.site.isin(hosting)].groupby(["period", "site"]).facility_kw_peak.sum() / 1000
    for (p, s), v in fac.items():
        assert cells[("fac", p, s)] == pytest.approx(v, rel=1e-12, abs=1e-12)
    grid = power.groupby(["period", "site"]).grid_kw.sum() / 1000
    for (p, s), v in grid.items():
        assert cells[("grid", p, s)] == pytest.approx(v, rel=1e-12, abs=1e-12)
    racks = tidy["fleet"].groupby(["period", "rack"]).installed_racks.sum()
    for (p, r), v in racks.items():
        assert cells[("racks", p, r)] == v
    costs = tidy["costs"]
    cost = costs.groupby(["period", "category"]).cost_usd.sum() / 1e6
    for (p, c), v in cost.items():
        assert cells[("cost", p, category_label(c))] == pytest.approx(v, rel=1e-12, abs=1e-12)
    by_period = costs.groupby("period").cost_usd_discounted.sum() / 1e6
    for p, v in by_period.items():
        assert cells[("disc", p, "Total [million USD]")] == pytest.approx(v, rel=1e-12,
                                                                         abs=1e-9)


@needs_soffice
@pytest.mark.slow
def test_opens_in_libreoffice_as_csv(book, solved, tmp_path):
    """LibreOffice reads the file (no repair needed) and exports the first sheet."""
    out = soffice_convert(book, tmp_path, "csv")
    text = out.read_text(encoding="utf-8", errors="replace")
    assert "Outcome" in text and "OPTIMAL" in text


@pytest.mark.slow
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


def pdf_pages(pdf: Path) -> int:
    """Pages of a PDF written by LibreOffice (page objects counted in the file)."""
    data = pdf.read_bytes()
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", data))


@pytest.fixture(scope="module")
def printed(book, tmp_path_factory):
    """The workbook printed by LibreOffice: (PDF, pages), each page a list of words
    ``(x0, y0, x1, y1, text)`` [pt] as pdftotext places them."""
    if SOFFICE is None or shutil.which("pdftotext") is None:
        pytest.skip("LibreOffice (soffice) and pdftotext (poppler-utils) are needed")
    out = tmp_path_factory.mktemp("pdf")
    pdf = soffice_convert(book, out, "pdf")
    html = out / "words.html"
    subprocess.run(["pdftotext", "-bbox", str(pdf), str(html)], check=True, timeout=120)
    pages = []
    for page in html.read_text().split("<page ")[1:]:
        pages.append([(float(a), float(b), float(c), float(d), t) for a, b, c, d, t in
                      re.findall(r'xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" '
                                 r'yMax="([\d.]+)">([^<]*)<', page)])
    return pdf, pages


#: Lowest top of a running-header word [pt from the top of the page]: the page header
#: (0.2 in down, 8 pt) ends above it, the body (0.5 in down) starts below it.
PAGE_HEAD_PT = 30


def page_sheet(words, sheets):
    """Sheet of a printed page: the sheet name at the right of its page header."""
    top = " ".join(w[4] for w in sorted(words, key=lambda w: w[0])
                   if w[1] < PAGE_HEAD_PT and w[0] > 300)
    return next((s for s in sorted(sheets, key=len, reverse=True) if top.endswith(s)), None)


#: Most pages the minimal plan's workbook may print on (see the test below).
MAX_PAGES = 105


@pytest.mark.slow
@needs_soffice
def test_minimal_workbook_prints_readably_on_at_most_max_pages(book, printed):
    """LibreOffice prints the minimal plan's workbook (every sheet) on at most
    :data:`MAX_PAGES` pages with the body text at 8 pt or more. Before any page setup it
    took 187 pages; fitted to the page width 39-41, at 3 to 5 pt on the widest sheets.
    At 8 pt a landscape A4 page holds about 30 rows below the repeated header and 148
    characters of columns, and the workbook has about 1,500 table rows (Assumptions 437,
    Sizing 247, Bill of materials 245, in three blocks of columns) with a name beside
    every id: 112 pages at first, 120 as more rows and sheets came; with the Chart data
    sheet hidden, wrapped text measured in glyph widths, columns sized for the fewest
    wrapped lines and constant columns hidden, 95 for this plan (96 for
    examples/minimal.yaml: Assumptions 29, Bill of materials 24); the bound leaves 10 %.
    A blank page (a row nearly a page tall made LibreOffice print one) fails the order
    check below: it names no sheet."""
    pdf, pages = printed
    wb = openpyxl.load_workbook(book)
    assert len(wb.sheetnames) - 1 <= len(pages) == pdf_pages(pdf) <= MAX_PAGES, len(pages)
    # every visible sheet prints, in order, each from a page of its own; the hidden
    # Chart data sheet (the charts' source) does not
    shown = [ws.title for ws in wb.worksheets if ws.sheet_state == "visible"]
    assert "Chart data" not in shown and len(shown) == len(wb.sheetnames) - 1
    order = [page_sheet(words, wb.sheetnames) for words in pages]
    assert list(dict.fromkeys(order)) == shown


@pytest.mark.slow
@needs_soffice
def test_printed_text_is_8_pt_or_more(printed):
    """Every word of the printed workbook is at least 8 pt tall: pdftotext's box of
    8 pt DejaVu Sans (LibreOffice's stand-in for Calibri) is 7.55 pt high; the sheets
    squeezed to the page width printed words 2.9 to 6.8 pt high."""
    _pdf, pages = printed
    low = [(i, w[4], round(w[3] - w[1], 2)) for i, words in enumerate(pages, start=1)
           for w in words if w[3] - w[1] < 7.5]
    assert not low, low[:10]


@pytest.mark.slow
@needs_soffice
def test_header_row_repeats_on_every_printed_page(book, printed):
    """Each page of a data sheet shows the sheet's column headers: the header row is
    repeated at the top of every page, the id columns on every block of columns."""
    _pdf, pages = printed
    wb = openpyxl.load_workbook(book)
    data = {s.sheet for s in SHEETS} | {"Assumptions", "Sources"}
    by_sheet: dict[str, list] = {}
    for words in pages:
        by_sheet.setdefault(page_sheet(words, wb.sheetnames), []).append(words)
    assert sum(len(v) > 1 for k, v in by_sheet.items() if k in data) >= 5  # long sheets
    for name in data:
        ws = wb[name]
        first = str(ws.cell(HEADER_ROW, 1).value).split()[0]  # e.g. "Period", "Site"
        for k, words in enumerate(by_sheet[name], start=1):
            body = [w[4] for w in words if w[1] > PAGE_HEAD_PT]
            assert first in body, (name, k, first)


@pytest.mark.slow
def test_summary_sheet_guide_names_the_sheets_that_exist(book):
    """Every sheet of the workbook is in the Summary's guide, and the guide names no other."""
    wb = openpyxl.load_workbook(book)
    ws = wb["Summary"]
    col = [c.value for c in ws["A"]]
    start = col.index("Sheets in this workbook")
    names = set()
    for value in col[start + 1:]:
        if not value:
            continue
        parts = [x.strip() for x in str(value).split(" / ")]
        if parts[0].startswith("Chart ") and len(parts) > 1:  # "Chart power / racks / costs"
            names |= {parts[0]} | {f"Chart {x}" for x in parts[1:]}
        else:
            names |= set(parts)
    sheets = set(wb.sheetnames) - {"Summary"}
    assert names == sheets, (names - sheets, sheets - names)


def test_row_breaks_fill_each_page_from_the_top_and_repeat_the_header():
    """Hand-computed: a 250 pt page; rows of 20 (title), then 100 each; the 20 pt header
    row repeats after the first page. Page 1 holds 20 + 100 + 100 = 220 (the next 100
    would make 320), page 2 the repeated 20 + 100 + 100; a row taller than a page still
    gets a page of its own; rows that fit on one page get no break. The writer sets
    them, so LibreOffice's pagination cannot add a page of rows that prints blank."""
    from dcplan.export.printing import row_breaks

    assert row_breaks([20, 100, 100, 100, 100], 250.0, 20.0) == [3]
    assert row_breaks([20, 100, 100, 100, 100, 100], 250.0, 20.0) == [3, 5]
    assert row_breaks([10, 300, 10], 250.0) == [1, 2]
    assert row_breaks([50] * 5, 250.0) == []
    assert row_breaks([0, 0, 250], 250.0) == []    # hidden rows take no room


@pytest.mark.slow
def test_goodput_coefficients_name_the_performance_models_extrapolations():
    """The minimal example serves DeepSeek-R1 (coding_agent) at rack-scale expert
    parallelism on both racks and a dense chat model without it: the planner keeps each
    point's extrapolation (as dcplan.perf says it) and the Assumptions table carries it
    as the goodput coefficient's estimate note, and nothing on the others."""
    from dcplan import perf
    from dcplan.planner.inputs import input_tables

    case = load_case(Path(__file__).resolve().parents[1] / "examples" / "minimal.yaml")
    inputs, _ = input_tables(case)
    df = assumptions_table(case, inputs)
    goodput = df[df["field"] == "goodput_tokens_per_s_per_rack"].set_index("id")["estimate"]
    flagged = set()
    for (r, w), p in inputs.perf.items():
        wl = case.catalog.get("workloads", w)
        rp = perf.rack_performance(case.catalog, r, wl.model, w, defaults=case.perf_defaults,
                                   calibration=case.calibration)
        assert p.extrapolation == rp.extrapolation
        assert goodput[f"{r} / {w}"] == p.extrapolation
        if p.extrapolation:
            flagged.add((r, w))
            assert re.match(r"(decode|prefill) expert parallelism ", p.extrapolation)
    assert flagged == {("gb200_nvl72", "coding_agent"), ("rubin_ultra_nvl576", "coding_agent")}
    said = [n for n in inputs.notes if "extrapolation of the performance model" in n]
    assert len(said) == 1 and all(f"{r} / {w}" in said[0] for r, w in flagged)
    assert "/ chat" not in said[0]


@pytest.mark.slow
def test_a_dense_model_on_an_moe_only_architecture_is_named_in_the_plan(tmp_path):
    """The minimal example offered an MI355X rack: its dense chat model runs on CDNA4,
    whose fitted rows are DeepSeek-R1 alone, so that pair's goodput coefficient carries
    the kind note as its estimate and the plan's note names it; the GB200 chat pair
    (Blackwell: dense rows fitted) carries none."""
    from dcplan.planner.inputs import input_tables

    scen = tmp_path / "mi355x.yaml"
    scen.write_text(f"extends: {Path(__file__).resolve().parents[1] / 'examples' / 'minimal.yaml'}"
                    "\nname: minimal_mi355x\nracks: [mi355x_rack, gb200_nvl72]\n")
    case = load_case(scen)
    inputs, _ = input_tables(case)
    kind = inputs.perf[("mi355x_rack", "chat")].extrapolation
    assert kind.startswith(f"{case.catalog.get('workloads', 'chat').model} is a dense model, "
                           "and the fitted rows on the cdna4 architecture run "
                           "mixture-of-experts models only")
    assert inputs.perf[("gb200_nvl72", "chat")].extrapolation == ""
    goodput = assumptions_table(case, inputs)
    goodput = goodput[goodput["field"] == "goodput_tokens_per_s_per_rack"].set_index("id")
    assert goodput.loc["mi355x_rack / chat", "estimate"] == kind
    said = [n for n in inputs.notes if "extrapolation of the performance model" in n]
    assert len(said) == 1 and "mi355x_rack / chat" in said[0]
    assert "a kind of model, dense or MoE, that no fitted row ran" in said[0]
