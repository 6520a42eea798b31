"""PNG charts of one plan: written atomically, non-empty, valid PNG files."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcplan.export.charts import PLAN_CHARTS, period_unit_cost, write_plan_charts

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def result(minimal_plan):
    return minimal_plan


def test_plan_charts_are_non_empty_pngs(result, tmp_path):
    paths = write_plan_charts(result, tmp_path / "png")
    assert [p.name for p in paths] == list(PLAN_CHARTS)
    for p in paths:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, p
    assert sorted(x.name for x in (tmp_path / "png").iterdir()) == sorted(PLAN_CHARTS)


def test_period_unit_cost_matches_the_tables(result):
    uc = period_unit_cost(result)
    costs = result.tables["costs"]
    first = uc.iloc[0]
    paid = costs[(costs.period == first.period) & (costs.kind != "end")].cost_usd.sum()
    assert first.cost_usd == pytest.approx(paid)
    assert (uc.usd_per_million_tokens > 0).all()
    # tokens over the horizon equal the planner's KPI when all demand is served
    assert uc.tokens.sum() == pytest.approx(result.kpi("tokens_served"), rel=1e-9)


def test_failed_chart_write_leaves_no_partial_file(result, tmp_path, monkeypatch):
    import matplotlib.figure

    out = tmp_path / "png"
    write_plan_charts(result, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def broken(self, fname, **kwargs):
        Path(fname).write_bytes(b"\x89PNG partial")
        raise RuntimeError("renderer crashed")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", broken)
    with pytest.raises(RuntimeError):
        write_plan_charts(result, out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
