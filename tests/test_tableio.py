"""Tables as written: rounding at the source, integer counts, numeric years, CSV cells
that spreadsheets read as text (checked in LibreOffice)."""

from __future__ import annotations

import csv
import math
import shutil
import subprocess

import numpy as np
import openpyxl
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dcplan.export.files import csv_safe, write_csv
from dcplan.tableio import RESOLUTION, SIGNIFICANT, round_value, tidy_table, unit_decimals

SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")
EVIL = '=HYPERLINK("http://x","y")'


@pytest.mark.parametrize("x, unit, want", [
    (37.99999999999999, "kW", 38.0),                   # float noise goes
    (62.395500000000006, "kW", 62.3955),                # 6 significant digits kept
    (1436813.9455694654, "USD", 1436813.95),            # money to the cent
    (2309401.076758503, "USD (present value)", 2309401.08),
    (0.04791226328241123, "USD per million tokens", 0.0479123),  # small: 6 digits
    (11548465.997696962, "kWh", 11548465.998),          # energy to the watt-hour
    (4819.174860838943, "tCO2", 4819.174861),           # carbon to the gram
    (0.7475222622105764, "-", 0.747522),
    (0.9622504486493763, None, 0.9622504486),           # no unit: 10 significant digits
    (3467944.3303673286, "tokens/s (peak)", 3467944.33),
])
def test_round_value_hand_computed(x, unit, want):
    assert round_value(x, unit) == want
    assert repr(round_value(x, unit)) == repr(want)


def test_round_value_special_values():
    assert round_value(0.0, "kW") == 0.0
    assert math.isnan(round_value(float("nan"), "kW"))
    assert round_value(float("inf"), "kW") == float("inf")
    assert round_value(7, "kW") == 7 and isinstance(round_value(7, "kW"), int)
    assert round_value("x", "kW") == "x"
    assert round_value(True, "kW") is True
    assert round_value(0.123456789012345, "x", col="discount_factor") == 0.123456789012


@given(st.floats(min_value=-1e15, max_value=1e15, allow_nan=False, allow_infinity=False),
       st.sampled_from([*RESOLUTION, "USD per MW", "kW (peak)", None, "odd unit"]))
def test_rounding_keeps_what_matters(x, unit):
    r = round_value(x, unit)
    dec = unit_decimals(unit)
    # Never off by more than half the unit's resolution or half the sixth significant
    # digit (whichever is finer), and rounding twice changes nothing.
    if x == 0:
        assert r == 0
        return
    sig = SIGNIFICANT if dec is not None else 10
    tol = 0.5 * 10.0 ** (math.floor(math.log10(abs(x))) - sig + 1)
    if dec is not None:
        tol = min(tol, 0.5 * 10.0 ** -dec)
    assert abs(r - x) <= tol * (1 + 1e-9) + abs(x) * 1e-15
    assert round_value(r, unit) == r


def test_tidy_table_counts_years_and_units(minimal_plan):
    result, _ = minimal_plan
    fleet = result.tables["fleet"]
    tidy = tidy_table(fleet)
    assert tidy.period.dtype == np.int64 and tidy.period.iloc[0] == 2026
    for c in ("installed_racks", "new_racks", "retired_racks", "rack_positions"):
        assert tidy[c].dtype == np.int64, c
        assert (tidy[c] == fleet[c]).all()
    assert tidy.allocated_racks.dtype == float  # racks serving demand: continuous
    assert tidy.attrs["units"] == fleet.attrs["units"]
    assert fleet.period.iloc[0] == "2026"  # the planner's table is unchanged
    kpis = tidy_table(result.tables["kpis"]).set_index("kpi").value
    assert isinstance(kpis["racks_bought"], int) and kpis["racks_bought"] > 0
    assert kpis["usd_per_million_tokens"] == pytest.approx(
        result.kpi("usd_per_million_tokens"), rel=1e-5)
    # a column whose unit is a count but whose values are not whole stays a float
    odd = pd.DataFrame({"racks": [1.0, 2.5]})
    odd.attrs["units"] = {"racks": "racks"}
    assert tidy_table(odd).racks.tolist() == [1.0, 2.5]


def test_quarterly_periods_stay_text_and_sort():
    labels = ["2026q1", "2026q2", "2026q3", "2026q4", "2027q1", "2027q2"]
    df = pd.DataFrame({"period": labels[::-1], "cost_usd": [1.0] * 6})
    tidy = tidy_table(df)
    assert tidy.period.tolist() == labels[::-1]
    assert sorted(tidy.period) == labels


@pytest.mark.parametrize("text, safe", [
    (EVIL, "'" + EVIL), ("+1+2", "'+1+2"), ("-y", "'-y"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\t=1+2", "'\t=1+2"), ("-12.5", "-12.5"), ("+3", "+3"), ("1,000", "1,000"),
    ("seoul_metro", "seoul_metro"), ("", ""), ("a=b", "a=b"), ("-", "-"), ("--1", "'--1"),
])
def test_csv_safe(text, safe):
    assert csv_safe(text) == safe


def test_csv_safe_leaves_non_strings():
    assert csv_safe(-3.5) == -3.5 and csv_safe(None) is None


@pytest.fixture(scope="module")
def evil_csv(tmp_path_factory):
    df = pd.DataFrame({"site": [EVIL, "+1+2", "-y", "@SUM(1)", "-12.5", "plain"],
                       "facility_kw_peak": [37.99999999999999, 1.0, 2.0, 3.0, 4.0, 5.0],
                       "new_racks": [1.0, 2.0, 0.0, 3.0, 4.0, 5.0],
                       "period": ["2026", "2027", "2028", "2029", "2030", "2031"]})
    df.attrs["units"] = {"facility_kw_peak": "kW", "new_racks": "racks"}
    df[EVIL] = ["x"] * 6  # a header like a formula, too
    path = tmp_path_factory.mktemp("csv") / "t.csv"
    write_csv(df, path)
    return path


def test_write_csv_text_cells_and_numbers(evil_csv):
    rows = list(csv.reader(evil_csv.open(encoding="utf-8")))
    assert rows[0] == ["site", "facility_kw_peak", "new_racks", "period", "'" + EVIL]
    assert [r[0] for r in rows[1:]] == ["'" + EVIL, "'+1+2", "'-y", "'@SUM(1)", "-12.5",
                                        "plain"]
    assert rows[1][1] == "38.0"  # no float noise
    assert [r[2] for r in rows[1:]] == ["1", "2", "0", "3", "4", "5"]  # integer counts
    assert rows[1][3] == "2026"
    assert [p.name for p in evil_csv.parent.iterdir()] == ["t.csv"]  # no temporary left


@pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed; "
                                            ".ci/run installs it")
@pytest.mark.slow
def test_libreoffice_reads_csv_cells_as_text(evil_csv, tmp_path):
    """LibreOffice evaluates '=1+2' in a CSV; the written cells stay text, numbers stay
    numbers."""
    proc = subprocess.run([SOFFICE, "--headless", "--norestore",
                           f"-env:UserInstallation={(tmp_path / 'lo').as_uri()}",
                           "--convert-to", "xlsx", "--outdir", str(tmp_path), str(evil_csv)],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    ws = openpyxl.load_workbook(tmp_path / "t.xlsx").active
    cells = [c for row in ws.iter_rows() for c in row if c.value is not None]
    assert not [c.coordinate for c in cells if c.data_type == "f"]  # no formula anywhere
    texts = [c.value for c in cells if c.data_type == "s"]
    assert "'" + EVIL in texts and "'+1+2" in texts
    assert ws["B2"].value == 38 and ws["C2"].value == 1 and ws["D2"].value == 2026
    assert ws["A6"].value == -12.5  # a negative number stays a number


def test_yearly_periods_with_gaps_stay_whole_years():
    """A period column where some rows have none (a horizon-wide limit) writes 2026, not 2026.0."""
    import pandas as pd

    from dcplan.tableio import tidy_table

    out = tidy_table(pd.DataFrame({"period": ["2026", None, "2027"], "x": [1.0, 2.0, 3.0]}))
    assert out.to_csv(index=False).splitlines() == ["period,x", "2026,1.0", ",2.0", "2027,3.0"]
    assert list(out.period) == [2026, None, 2027]
