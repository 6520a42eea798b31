"""PNG charts of a plan and a comparison: valid files written atomically, and the memo
rules: only sites that host racks, legends outside the plot, the axis scaled to the
load with higher grid limits marked, the terminal-value credit apart from the cost
stack, categories in words, one shared legend in multi-panel charts."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from dcplan.export.charts import (
    COMPARISON_CHARTS,
    PLAN_CHARTS,
    comparison_figures,
    period_unit_cost,
    plan_figures,
    write_comparison_charts,
    write_plan_charts,
)
from dcplan.export.labels import CATEGORY_LABELS

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def result(minimal_plan):
    return minimal_plan[0]


@pytest.fixture(scope="module")
def figures(result):
    figs = plan_figures(result)
    for fig in figs.values():
        fig.canvas.draw()
    yield figs
    for fig in figs.values():
        plt.close(fig)


def _outside(fig, legend, ax) -> bool:
    """The legend lies right of the axes (it never covers the plot)."""
    lb = legend.get_window_extent(fig.canvas.get_renderer())
    return lb.x0 >= ax.get_window_extent().x1 - 1


@pytest.mark.slow
def test_plan_charts_are_non_empty_pngs(result, tmp_path):
    paths = write_plan_charts(result, tmp_path / "png")
    assert [p.name for p in paths] == list(PLAN_CHARTS)
    for p in paths:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, p
    assert sorted(x.name for x in (tmp_path / "png").iterdir()) == sorted(PLAN_CHARTS)


@pytest.mark.slow
def test_facility_chart_only_hosting_sites_and_readable_axis(result):
    import dataclasses

    # A grid limit far above the load (as Haenam's 200 MW once was for the example's
    # 46 MW): the axis follows the load and the limit is marked at the top edge.
    power = result.tables["power"].copy()
    far = 3 * power.facility_kw_peak.max()
    power.loc[power.index[-1], "grid_kw"] = far
    result = dataclasses.replace(result, tables={**result.tables, "power": power})
    figs = plan_figures(result)
    for f in figs.values():
        f.canvas.draw()
    fig = figs["facility_mw_by_site.png"]
    ax = fig.axes[0]
    power, fleet = result.tables["power"], result.tables["fleet"]
    hosting = set(fleet.loc[fleet.installed_racks > 0, "site"])
    legend = ax.get_legend()
    names = [t.get_text() for t in legend.get_texts()]
    assert set(names[: len(hosting)]) == hosting
    assert _outside(fig, legend, ax)
    # the axis is scaled to the load, not to the largest grid limit
    load = power.facility_kw_peak.max() / 1000
    grid = power[power.site.isin(hosting)].grid_kw.max() / 1000
    low, top = ax.get_ylim()
    assert low == 0 and load < top <= max(1.6 * load, 1.3 * load) * 1.08 + 1e-9
    assert grid > top  # the far limit is above the axis ...
    marks = [t.get_text() for t in ax.texts]
    assert f"{grid:,.0f}" in marks  # ... and marked at the top edge with its value
    for f in figs.values():
        plt.close(f)


def test_sites_without_racks_are_left_out(result):
    """A site that never hosts a rack (zero load, a 500 MW grid) is not drawn and does
    not stretch the axis."""
    import dataclasses

    import pandas as pd

    power = result.tables["power"]
    idle = power[power.site == power.site.iloc[0]].copy()
    idle["site"] = "empty_site"
    for c in ("it_kw_peak", "cooling_kw_peak", "network_kw", "losses_kw_peak",
              "facility_kw_peak"):
        idle[c] = 0.0
    idle["grid_kw"] = 500_000.0
    other = dataclasses.replace(result, tables={**result.tables,
                                                "power": pd.concat([power, idle])})
    figs = plan_figures(other)
    try:
        ax = figs["facility_mw_by_site.png"].axes[0]
        names = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "empty_site" not in names
        load = power.facility_kw_peak.max() / 1000
        assert len(ax.lines) >= 2 * 2 and load < ax.get_ylim()[1] < 500
    finally:
        for f in figs.values():
            plt.close(f)


@pytest.mark.slow
def test_cost_stack_credit_apart_and_words(result, figures):
    fig = figures["cost_stack.png"]
    main, side = fig.axes[0], fig.axes[1]
    assert main.get_ylim()[0] >= 0  # no bar below zero in the stack of costs paid
    heights = [p.get_height() for p in main.patches]
    assert heights and min(heights) >= 0
    costs = result.tables["costs"]
    credit = costs.loc[costs.category == "terminal_value", "cost_usd"].sum() / 1e6
    assert [p.get_height() for p in side.patches] == pytest.approx([credit])
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels and set(labels) <= set(CATEGORY_LABELS.values())
    assert CATEGORY_LABELS["terminal_value"] not in labels
    assert "[million USD]" in fig.legends[0].get_title().get_text()
    # the stack adds up to the costs paid in each period
    paid = costs[costs.kind != "end"].groupby("period").cost_usd.sum() / 1e6
    tops = {}
    for p in main.patches:
        x = round(p.get_x() + p.get_width() / 2)
        tops[x] = max(tops.get(x, 0.0), p.get_y() + p.get_height())
    assert [tops[i] for i in sorted(tops)] == pytest.approx(list(paid), rel=1e-9)


@pytest.mark.slow
def test_legends_outside_the_plot(figures):
    for name in ("racks_by_type.png", "usd_per_million_tokens.png"):
        fig = figures[name]
        ax = fig.axes[0]
        assert _outside(fig, ax.get_legend(), ax), name


@pytest.mark.slow
def test_comparison_charts_one_shared_legend(result, tmp_path):
    results, names = [result, result], ["a", "b"]
    figs = comparison_figures(results, names)
    try:
        fig = figs["facility_mw_by_site.png"]
        fig.canvas.draw()
        panels = [ax for ax in fig.axes if ax.get_visible() and ax.lines]
        assert len(panels) == 2
        assert all(ax.get_legend() is None for ax in fig.axes)
        assert len(fig.legends) == 1
        assert len({ax.get_ylim() for ax in panels}) == 1  # one scale for all panels
        npv = figs["npv_cost_stack.png"]
        assert len(npv.legends) == 1 and all(ax.get_legend() is None for ax in npv.axes)
        texts = [t.get_text() for ax in npv.axes for t in ax.texts]
        assert f"NPV {result.kpi('npv_cost_usd') / 1e6:,.0f}" in texts
    finally:
        for f in figs.values():
            plt.close(f)
    paths = write_comparison_charts(results, names, tmp_path / "cmp")
    assert [p.name for p in paths] == list(COMPARISON_CHARTS)


def test_period_unit_cost_matches_the_tables(result):
    uc = period_unit_cost(result)
    costs = result.tables["costs"]
    first = uc.iloc[0]
    paid = costs[(costs.period == first.period) & (costs.kind != "end")].cost_usd.sum()
    assert first.cost_usd == pytest.approx(paid)
    assert (uc.usd_per_million_tokens > 0).all()
    # tokens over the horizon equal the planner's KPI when all demand is served
    assert uc.tokens.sum() == pytest.approx(result.kpi("tokens_served"), rel=1e-9)


@pytest.mark.slow
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


@pytest.mark.slow
def test_unit_cost_chart_draws_the_annualised_cost_of_the_cashflow_table(result, figures):
    ax = figures[PLAN_CHARTS[3]].axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    ann = lines[f"{result.name}: annualised (capital recovery + opex)"]
    cf = result.tables["cashflow"]
    assert list(ann.get_ydata()) == pytest.approx(list(cf.usd_per_million_tokens_annualised))
    # the annualised cost of the first period is below its cash cost (capex spread)
    cash = lines[f"{result.name}: cash cost in the period"].get_ydata()
    assert ann.get_ydata()[0] < cash[0]
