"""HTML report of a plan and of a comparison: one self-contained file (no script, no
link to anything outside, charts embedded), user text escaped, and, in a real browser
(headless Chromium), no console errors, the plan's NPV on the page, every chart shown,
no table wider than the page, and a printable PDF."""

from __future__ import annotations

import html as htmllib
import re

import pytest
from browser import CHROMIUM, pdf_pages, render

from dcplan.export.compare import compare_results
from dcplan.export.html import write_compare_html, write_html

EVIL = '=HYPERLINK("http://x","y")'
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed; "
                                                             ".ci/run installs it")


def npv_text(result) -> str:
    """The NPV as the report shows it: million USD with one decimal."""
    return f"{result.kpi('npv_cost_usd') / 1e6:,.1f} million USD"


@pytest.fixture(scope="module")
def report(minimal_plan, tmp_path_factory):
    result, src = minimal_plan
    return write_html(result, tmp_path_factory.mktemp("html") / "plan.html", sources=src)


@pytest.fixture(scope="module")
def compare_report(minimal_plan, tmp_path_factory):
    result, _ = minimal_plan
    cmp = compare_results([result, result], labels=["a.yaml", "b.yaml"])
    return cmp, write_compare_html(cmp, tmp_path_factory.mktemp("cmp") / "compare.html")


def _self_contained(text: str) -> None:
    assert re.search(r"<script", text, re.I) is None  # no script, not even escaped user text
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    links = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)""", text, re.I)
    assert links and all(u.startswith("data:") for u in links), links[:3]
    assert not re.search(r"url\(\s*['\"]?(?!data:)", text)  # no CSS that loads anything
    assert "@import" not in text


@pytest.mark.slow
def test_plan_report_is_self_contained(report, minimal_plan):
    result, _ = minimal_plan
    text = report.read_text(encoding="utf-8")
    _self_contained(text)
    assert text.count('<img alt="') == 4  # the four plan charts, embedded
    assert npv_text(result) in text
    # user text escaped: the description's markup and the formula-like name stay text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert htmllib.escape(EVIL, quote=True) in text
    for heading in ("Headline", "Key figures", "Charts", "What to buy, where and when",
                    "Power against the grid", "Why: the limits that bind", "What it costs"):
        assert f">{heading}</h2>" in text, heading
    assert [p.name for p in report.parent.iterdir()] == ["plan.html"]  # no temporary left


@pytest.mark.slow
def test_comparison_report_is_self_contained(compare_report, minimal_plan):
    result, _ = minimal_plan
    cmp, path = compare_report
    text = path.read_text(encoding="utf-8")
    _self_contained(text)
    assert text.count('<img alt="') == 3
    assert npv_text(result) in text
    for name in cmp.names:
        assert htmllib.escape(name, quote=True) in text


@pytest.mark.slow
@needs_chromium
def test_plan_report_in_headless_chromium(report, minimal_plan, tmp_path):
    result, _ = minimal_plan
    page = render(report)
    assert page.errors == []
    assert npv_text(result) in page.text
    assert EVIL in page.text and "<script>alert(1)</script>" in page.text  # shown as text
    checks = page.checks
    assert checks["scripts"] == 0 and checks["external"] == []
    assert checks["images"] == checks["images_loaded"] == 4
    assert checks["overflowing"] == []  # every table fits the page width
    assert checks["title"] == f"dcplan plan: {EVIL}"
    schemes = {u.split(":", 1)[0] for u in page.requests}
    assert schemes <= {"file", "data"}, page.requests[:3]  # nothing from the network
    shot = tmp_path / "plan.png"
    shot.write_bytes(page.screenshot)
    assert page.screenshot[:8] == b"\x89PNG\r\n\x1a\n" and len(page.screenshot) > 50_000
    assert 2 <= pdf_pages(page.pdf) <= 12  # the printed report: a few A4 pages


@pytest.mark.slow
@needs_chromium
def test_comparison_report_in_headless_chromium(compare_report, minimal_plan):
    result, _ = minimal_plan
    _, path = compare_report
    page = render(path, pdf=False)
    assert page.errors == []
    assert npv_text(result) in page.text
    assert page.checks["images"] == page.checks["images_loaded"] == 3
    assert page.checks["overflowing"] == []


@pytest.mark.slow
@needs_chromium
def test_browser_check_sees_errors(tmp_path):
    """The check can fail: a script error, a console error, a missing image and a
    stylesheet from elsewhere are all reported."""
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><p>x</p><img src='missing.png'>"
                   "<link rel=stylesheet href='https://cdn.invalid/x.css'>"
                   "<script>console.error('boom'); undefined_function();</script>"
                   "</body></html>", encoding="utf-8")
    page = render(bad, pdf=False)
    text = "\n".join(page.errors)
    assert "boom" in text
    assert "exception" in text
    assert "request failed" in text or "log error" in text
    assert page.checks["scripts"] == 1 and page.checks["external"]


@pytest.mark.slow
def test_headline_peak_names_the_sites_drawing_power_then(report, minimal_plan):
    """The peak period's sites are those with facility power in it, and the grid is theirs."""
    result, _ = minimal_plan
    power = result.tables["power"]
    by_period = power.groupby("period", sort=False).facility_kw_peak.sum()
    peak = by_period.idxmax()
    at = power[(power.period == peak) & (power.facility_kw_peak > 0)]
    text = report.read_text(encoding="utf-8")
    n = len(at)
    sites = ", ".join(s for s in dict.fromkeys(power.site) if s in set(at.site))
    grid = at.grid_kw.sum() / 1000
    want = (f"in {peak} at {n} site{'s' if n != 1 else ''} ({htmllib.escape(sites)}), "
            f"against {grid:,.1f} MW of grid there")
    assert want in text
