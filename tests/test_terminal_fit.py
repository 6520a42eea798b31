"""Terminal text fits ``COLUMNS``: tables wrap or leave out columns, never cut a number."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from typer.testing import CliRunner

from dcplan.cli import app
from dcplan.export.text import WIDTH, fit_lines, format_cell, format_table, terminal_width
from dcplan.planner.analysis import binding_rows

runner = CliRunner()

WIDTHS = (100, 160)


def _run(width: int, *args: str):
    result = runner.invoke(app, list(args), env={"COLUMNS": str(width)})
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        result.exception
    return result


def _too_long(text: str, width: int) -> list[str]:
    return [ln for ln in text.splitlines() if len(ln) > width]


def _whole(number: str, text: str) -> bool:
    """``number`` appears in ``text`` with no digit, comma or point glued to either side."""
    return re.search(rf"(?<![\d.,]){re.escape(number)}(?![\d]|[.,]\d)", text) is not None


def test_terminal_width_reads_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "123")
    assert terminal_width() == 123
    monkeypatch.setenv("COLUMNS", "5")
    assert terminal_width() == 40  # never narrower than MIN_WIDTH
    monkeypatch.delenv("COLUMNS")
    assert terminal_width() >= 40  # the terminal's, or WIDTH when not a terminal
    monkeypatch.setenv("COLUMNS", "wide")
    assert terminal_width() >= 40


def test_fit_lines_wraps_long_lines_and_keeps_words_whole():
    text = "  - " + " ".join(["1,234,567.89"] * 20) + "\nshort"
    out = fit_lines(text, 50)
    assert not _too_long(out, 50)
    assert out.split("\n")[1].startswith("    1,234,567.89")  # under the bullet's text
    assert out.count("1,234,567.89") == 20 and out.endswith("\nshort")
    assert fit_lines(text, None) == text


def test_format_table_narrows_then_leaves_out_columns_never_cutting_numbers():
    rows = [{"id": f"rack_type_{i}", "it_power_max_kw": 40.8 * i, "capex_usd": 3_000_000 * i,
             "description": "a long text column that may wrap over several lines",
             "first_available": "2026-07", "lifetime_years": 5}
            for i in range(1, 6)]
    wide = format_table(rows)
    assert max(len(ln) for ln in wide.splitlines()) > 100
    for width in (100, 60, 40):
        text = format_table(rows, width=width, optional=["first_available"])
        assert not _too_long(text, width), text
        left_out = " ".join(text.split("(left out")[1:])
        for r in rows:
            assert r["id"] in text
            for c in ("it_power_max_kw", "capex_usd", "lifetime_years"):
                if c not in left_out:
                    assert _whole(format_cell(r[c]), text), (c, text)
    narrow = " ".join(format_table(rows, width=40, optional=["first_available"]).split())
    note = narrow.split("(left out to fit 40 columns: ")[1]
    assert note.startswith("first_available")  # the optional column goes first
    assert "--json" in note


def test_binding_rows_keep_only_positive_shadow_prices():
    b = pd.DataFrame({"rank": [1, 2, 3, 4], "limit": ["grid"] * 4,
                      "shadow_price": [5.0, 0.0, 0.0, None],
                      "shadow_price_relaxed": [5.0, 7.0, 0.0, None]})
    b.attrs["units"] = {"shadow_price": "see shadow_unit"}
    out = binding_rows(b)
    assert list(out["rank"]) == [1, 2]
    assert out.attrs == b.attrs
    assert binding_rows(None) is None


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_catalog_list_fits(width):
    for kind in ("racks", "api_prices", "accelerators", "models", "sites"):
        text = _run(width, "catalog", "list", kind).stdout
        assert not _too_long(text, width), (kind, _too_long(text, width))
    data = json.loads(_run(width, "catalog", "list", "racks", "--json").stdout)
    text = _run(width, "catalog", "list", "racks").stdout
    for rec in data:
        assert rec["id"] in text
        for c in ("it_power_max_kw", "accelerators_per_rack"):
            if c in text.replace("_\n", "_") or width >= 160:
                assert _whole(format_cell(rec[c]), text), (c, rec[c])


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_perf_frontier_fits(width):
    args = ["perf", "frontier", "--rack", "gb200_nvl72", "--model", "deepseek_r1",
            "--input-tokens", "8192", "--output-tokens", "1024", "--precision", "fp4"]
    text = _run(width, *args).stdout
    assert not _too_long(text, width), _too_long(text, width)
    points = json.loads(_run(width, *args, "--json").stdout)["points"]
    for p in points:
        for c in ("tokens_per_s_per_user", "output_tokens_per_s_per_gpu", "batch"):
            assert _whole(format_cell(p[c]), text), (c, p[c])


@pytest.mark.slow
def test_plan_and_compare_fit(minimal_linear, tmp_path):
    """plan, show and compare at 100 and 160 columns: no longer line, no number cut."""
    other = tmp_path / "high.yaml"
    other.write_text(f"extends: {minimal_linear}\nname: minimal_high\n"
                     "demand:\n  growth:\n    chat: {start: 50.0e12}\n", encoding="utf-8")
    a, b = tmp_path / "a.dcplan", tmp_path / "b.dcplan"
    plan = _run(160, "plan", str(minimal_linear), "-q", "--save", str(a))
    _run(WIDTH, "plan", str(other), "-q", "--save", str(b), "--allow-unserved")
    summary = json.loads(_run(WIDTH, "show", str(a), "--json").stdout)
    assert not _too_long(plan.stdout, 160)
    for width in WIDTHS:
        text = _run(width, "show", str(a)).stdout
        assert not _too_long(text, width), _too_long(text, width)
        assert _whole(f"{summary['kpis']['npv_cost_usd']:,.0f}", text)
        shown = text.split("Binding limits")[1].split("\n\n")[0]
        for rec in summary["binding"]:  # the rows that bind, each value whole; no others
            price = max(rec["shadow_price"] or 0, rec["shadow_price_relaxed"] or 0)
            row = re.search(rf"\b{rec['rank']}\s+{rec['limit']}\s+{rec['site']}\s+"
                            rf"{rec['period']}\b", shown)
            assert (row is not None) == (price > 0), (rec, shown)
            if price > 0:
                assert _whole(format_cell(rec["value"]), shown), rec
        cmp = _run(width, "compare", str(a), str(b), "-q", "--allow-unserved").stdout
        assert not _too_long(cmp, width), _too_long(cmp, width)
        data = json.loads(_run(width, "compare", str(a), str(b), "-q", "--allow-unserved",
                               "--json").stdout)
        for rec in data["kpis"]:
            if rec["kpi"] in ("npv_cost_usd", "capex_usd", "opex_usd", "carbon_t"):
                for n in data["scenarios"]:
                    assert _whole(f"{rec[n]:,.0f}", cmp), (rec["kpi"], n, rec[n])
