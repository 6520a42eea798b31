"""PNG charts of one plan and of a scenario comparison (matplotlib, Agg backend).

One plan (:func:`write_plan_charts`): facility MW by site over time (with the grid
limits), racks in service by type over time, the cost stack by category and period
(the terminal-value credit in a panel of its own), and USD per million tokens over
time. A comparison (:func:`write_comparison_charts`): present value of the costs paid
per scenario with its NPV (the credit apart), facility MW by site over time per
scenario (one shared legend), and USD per million tokens over time per scenario.

Charts are made for a memo: only sites that host racks, legends outside the plot,
the axis scaled to the load (a grid limit above it is marked at the top edge with its
value), categories in words with units. :func:`plan_figures` and
:func:`comparison_figures` return the figures (the HTML report embeds them); every
file is written to a temporary file and renamed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from dcplan.export.files import atomic_file  # noqa: E402
from dcplan.export.labels import category_label  # noqa: E402
from dcplan.export.views import hosting_sites, stack_categories, terminal_credit  # noqa: E402
from dcplan.planner.categories import CATEGORIES  # noqa: E402
from dcplan.units import HOURS_PER_YEAR  # noqa: E402

#: File names of the plan charts.
PLAN_CHARTS = ("facility_mw_by_site.png", "racks_by_type.png", "cost_stack.png",
               "usd_per_million_tokens.png")
#: File names of the plan charts only some plans have (``power_sources.png``: a plan
#: offered storage or on-site generation, its ``sources`` table).
OPTIONAL_PLAN_CHARTS = ("power_sources.png",)
#: File names of the comparison charts.
COMPARISON_CHARTS = ("npv_cost_stack.png", "facility_mw_by_site.png",
                     "usd_per_million_tokens.png")

_DPI = 110


def _save(fig: Any, path: Path) -> Path:
    with atomic_file(path, suffix=".png") as tmp:
        fig.savefig(tmp, format="png", dpi=_DPI, bbox_inches="tight")
    plt.close(fig)
    return path


def _periods(result: Any) -> list[str]:
    from dcplan.export.views import periods

    return periods(result)


def _txt(text: Any) -> str:
    """User text for a matplotlib label: ``$`` escaped so it is never read as math."""
    return str(text).replace("$", r"\$")


def figure_png(fig: Any, dpi: int = _DPI) -> bytes:
    """PNG bytes of ``fig`` (closed afterwards)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


#: Colour of each cost category (same in every chart).
#: One distinct colour per cost category (tab20: more categories than tab10 has colours,
#: so that no two categories in one stack share a colour; the credit is drawn apart).
CATEGORY_COLORS = {c: (matplotlib.colormaps["tab20"](i) if i < 20
                       else matplotlib.colormaps["tab20b"](4 * (i - 20) % 20))
                   for i, c in enumerate(CATEGORIES)}
CATEGORY_COLORS["terminal_value"] = "dimgray"
#: Room above the highest load on a facility-power axis.
HEADROOM = 1.3


def _empty(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)


def period_unit_cost(result: Any) -> pd.DataFrame:
    """Cost per million tokens served in each period.

    Uses the planner's ``kpis_by_period`` table when it has one. Otherwise it is the
    ratio of two totals of the result tables: the period's undiscounted capex + opex
    (costs table, without the terminal value and the unserved penalty) over the tokens
    served in the period (demand table: average demand x served/peak-demand share x
    hours x 3600). Capex counts when paid, so the figure jumps in build-out years;
    the plan's levelised figure is the ``usd_per_million_tokens`` KPI.

    Returns
    -------
    DataFrame
        period, cost_usd [USD], tokens [tokens], usd_per_million_tokens
        [USD per million tokens].
    """
    t = result.tables
    by_period = t.get("kpis_by_period")
    if by_period is not None and "usd_per_million_tokens" in by_period:
        return by_period
    periods = _periods(result)
    costs = t.get("costs")
    demand = t.get("demand")
    rows = []
    hours = {p.label: result.inputs.hours(i) for i, p in enumerate(result.inputs.periods)} \
        if result.inputs is not None else {p: HOURS_PER_YEAR for p in periods}
    for p in periods:
        cost = 0.0
        if costs is not None and len(costs):
            sub = costs[(costs.period == p) & costs.kind.isin(["capex", "opex"])
                        & (costs.category != "unserved_penalty")]
            cost = float(sub.cost_usd.sum())
        tokens = 0.0
        if demand is not None and len(demand):
            d = demand[demand.period == p]
            share = (d.served_tokens_per_s_peak / d.demand_tokens_per_s_peak).where(
                d.demand_tokens_per_s_peak > 0, 0.0)
            tokens = float((d.demand_tokens_per_s_avg * share).sum()) * hours[p] * 3600.0
        rows.append(dict(period=p, cost_usd=cost, tokens=tokens,
                         usd_per_million_tokens=cost / tokens * 1e6 if tokens > 0 else None))
    df = pd.DataFrame(rows)
    df.attrs["units"] = {"cost_usd": "USD", "tokens": "tokens",
                         "usd_per_million_tokens": "USD per million tokens"}
    return df


# ----------------------------------------------------------------------------------------
# One plan
# ----------------------------------------------------------------------------------------


def _site_colors(sites: Sequence[str]) -> dict[str, str]:
    return {s: f"C{i % 10}" for i, s in enumerate(sites)}


def facility_axis_top(results: Sequence[Any], sites: Sequence[str]) -> float:
    """Top of a facility-power axis [MW]: the highest load with room above it.

    A grid limit just above the load (up to 1.6 x) raises the top so that it shows;
    higher limits are marked at the top edge instead of squashing the load.
    """
    peak, near = 0.0, 0.0
    for r in results:
        p = r.tables.get("power")
        if p is None or not len(p):
            continue
        sub = p[p.site.isin(sites)]
        if not len(sub):
            continue
        load = float(sub.facility_kw_peak.max()) / 1000.0
        peak = max(peak, load)
    for r in results:
        p = r.tables.get("power")
        if p is None or not len(p):
            continue
        grid = p[p.site.isin(sites)].grid_kw / 1000.0
        close = grid[(grid > 0) & (grid <= 1.6 * peak)]
        if len(close):
            near = max(near, float(close.max()))
    if peak <= 0:
        return 1.0
    return max(HEADROOM * peak, 1.08 * near)


def plot_facility_mw(ax: Any, result: Any, title: str | None = None, *,
                     colors: dict[str, str] | None = None, top: float | None = None,
                     sites: Sequence[str] | None = None, legend: bool = True,
                     pad: float | None = None) -> list[Any]:
    """Facility MW at peak by site over time, with each site's grid limit dashed.

    Only sites that host racks are drawn. The axis is scaled to the load; a grid limit
    above the axis is drawn at its top edge with a triangle and its value [MW].

    Returns
    -------
    list
        Legend handles (for a legend shared by several panels).
    """
    from matplotlib.lines import Line2D

    power = result.tables.get("power")
    periods = _periods(result)
    ax.set_title(_txt(title or f"Facility power at peak by site: {result.name}"))
    ax.set_ylabel("Facility power at peak [MW]")
    sites = list(sites if sites is not None else hosting_sites(result))
    if power is None or not len(power) or not sites:
        _empty(ax, "no site hosts racks")
        return []
    colors = colors or _site_colors(sites)
    top = top or facility_axis_top([result], sites)
    x = list(range(len(periods)))
    clipped = False
    tables = {site: power[power.site == site].set_index("period").reindex(periods)
              for site in sites if (power.site == site).any()}
    over = [site for site, s in tables.items() if (s.grid_kw / 1000.0 > top).any()]
    for site, s in tables.items():
        color = colors.get(site, "C0")
        load = s.facility_kw_peak / 1000.0
        grid = s.grid_kw / 1000.0
        ax.plot(x, load, marker="o", color=color, linewidth=2)
        ax.plot(x, grid.clip(upper=top), linestyle="--", color=color, alpha=0.7)
        above = [(i, g) for i, g in zip(x, grid, strict=True) if g == g and g > top]
        if above:
            clipped = True
            k = over.index(site)  # sites above the axis side by side, labels stacked
            dx = (k - (len(over) - 1) / 2) * 0.18
            ax.plot([i + dx for i, _ in above], [top] * len(above), linestyle="none",
                    marker="^", color=color, clip_on=False, markersize=7)
            last = None
            for i, g in above:
                if g != last:  # label where the limit changes
                    ax.annotate(f"{g:,.0f}", (i + dx, top), textcoords="offset points",
                                xytext=(0, 6 + 9 * k), ha="center", fontsize="x-small",
                                color=color, annotation_clip=False)
                last = g
    ax.set_ylim(0, top)
    if clipped or pad:  # room for the limit values above the axis
        ax.set_title(ax.get_title(), pad=max(pad or 0, 10 + 9 * len(over) if clipped else 0))
    ax.set_xticks(x, periods, rotation=45 if len(periods) > 10 else 0)
    ax.set_xlabel("Period")
    ax.grid(alpha=0.3)
    handles = [Line2D([], [], color=colors[s], marker="o", linewidth=2, label=_txt(s))
               for s in sites]
    handles.append(Line2D([], [], color="gray", linestyle="--", label="grid limit (dashed)"))
    if clipped:
        handles.append(Line2D([], [], color="gray", linestyle="none", marker="^",
                              label="grid limit above the axis\n(value in MW)"))
    if legend:
        ax.legend(handles=handles, fontsize="small", loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, title="Site")
    return handles


def _stacked(ax: Any, table: pd.DataFrame, periods: Sequence[str],
             colors: dict[str, str] | None = None, labels: dict[str, str] | None = None
             ) -> None:
    """Stacked bars of ``table`` (index periods, columns series); negatives stack down."""
    x = list(range(len(periods)))
    pos = [0.0] * len(periods)
    neg = [0.0] * len(periods)
    for i, col in enumerate(table.columns):
        vals = [float(v) for v in table[col].reindex(periods).fillna(0.0)]
        bottoms = [p if v >= 0 else n for v, p, n in zip(vals, pos, neg, strict=True)]
        ax.bar(x, vals, bottom=bottoms, label=_txt((labels or {}).get(col, col)),
               color=(colors or {}).get(col, f"C{i % 10}"))
        pos = [p + max(v, 0.0) for p, v in zip(pos, vals, strict=True)]
        neg = [n + min(v, 0.0) for n, v in zip(neg, vals, strict=True)]
    ax.set_xticks(x, list(periods), rotation=45 if len(periods) > 10 else 0)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.grid(axis="y", alpha=0.3)


def _legend_right(ax: Any, title: str | None = None) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:  # top of the stack first, as in the bars
        ax.legend(handles[::-1], labels[::-1], fontsize="small", loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, title=title)


def plot_racks(ax: Any, result: Any) -> None:
    """Racks in service by type over time (stacked bars, all sites)."""
    fleet = result.tables.get("fleet")
    periods = _periods(result)
    ax.set_title(_txt(f"Racks in service by type: {result.name}"))
    ax.set_ylabel("Racks in service [racks]")
    ax.set_xlabel("Period")
    if fleet is None or not len(fleet):
        _empty(ax, "no racks")
        return
    table = fleet.pivot_table(index="period", columns="rack", values="installed_racks",
                              aggfunc="sum", sort=False)
    _stacked(ax, table, periods)
    _legend_right(ax, "Rack type")


def _credit_panel(ax: Any, values: dict[str, float], what: str) -> None:
    """Bars of terminal-value credits [million USD] on their own axis, labelled."""
    names = list(values)
    x = list(range(len(names)))
    vals = [values[n] for n in names]
    ax.bar(x, vals, color="white", edgecolor=CATEGORY_COLORS["terminal_value"], hatch="//",
           linewidth=1.2)
    for i, v in zip(x, vals, strict=True):
        ax.annotate(f"{v:,.0f}", (i, v), textcoords="offset points", xytext=(0, -12),
                    ha="center", fontsize="small")
    ax.set_xticks(x, [_txt(n) for n in names], rotation=0 if len(names) < 3 else 30)
    ax.axhline(0, color="black", linewidth=0.6)
    low = min(vals + [0.0])
    ax.set_ylim(low * 1.25 if low < 0 else -1.0, 0)
    ax.set_title(what, fontsize="small")
    ax.set_ylabel("Credit [million USD]")
    ax.yaxis.set_label_position("right")
    ax.yaxis.tick_right()
    ax.grid(axis="y", alpha=0.3)


def plot_cost_stack(fig: Any, result: Any) -> None:
    """Costs paid by category and period (undiscounted, stacked), the credit apart.

    The terminal value (book value of the assets still in service at the end, a
    credit) is drawn in a narrow panel of its own with its own scale, so that it does
    not dwarf the costs paid.
    """
    costs = result.tables.get("costs")
    periods = _periods(result)
    stacked, apart = stack_categories(costs)
    credit, when = terminal_credit(costs)
    if credit:
        gs = fig.add_gridspec(1, 2, width_ratios=[5, 1], wspace=0.08)
        ax = fig.add_subplot(gs[0, 0])
        side = fig.add_subplot(gs[0, 1])
    else:
        ax, side = fig.add_subplot(1, 1, 1), None
    ax.set_title(_txt(f"Costs paid by category (undiscounted): {result.name}"))
    ax.set_ylabel("Cost [million USD]")
    ax.set_xlabel("Period")
    if costs is None or not len(costs):
        _empty(ax, "no costs")
        return
    sub = costs[costs.category.isin(stacked)]
    table = sub.pivot_table(index="period", columns="category", values="cost_usd",
                            aggfunc="sum", sort=False)[stacked] / 1e6
    _stacked(ax, table, periods, CATEGORY_COLORS, {c: category_label(c) for c in stacked})
    if side is not None:
        _credit_panel(side, {f"end of {when}": credit / 1e6},
                      "Terminal-value credit\n(not a cost paid)")
        handles, labels = ax.get_legend_handles_labels()
        fig.legend(handles[::-1], labels[::-1], fontsize="small", loc="upper left",
                   bbox_to_anchor=(0.99, 0.88), title="Cost category [million USD]")
    else:
        _legend_right(ax, "Cost category [million USD]")


def plot_unit_cost(ax: Any, results: Sequence[Any], names: Sequence[str] | None = None) -> None:
    """USD per million tokens over time, one line per plan, levelised figure dotted.

    Per plan: the cash cost of each period (solid), the annualised cost of each period
    (dashed: capital recovery of each purchase over its life plus opex, from the
    ``cashflow`` table, where the plan has one) and the levelised figure (dotted). The
    subtitle says why the levelised figure can lie below every period's cash cost: it
    is computed from discounted costs net of the terminal value of the assets still in
    service at the end, over discounted tokens.
    """
    from dcplan.planner.tables import LEVELISED_TEXT

    what = LEVELISED_TEXT.replace("levelised: ", "levelised cost = ").replace(" / ", " /\n")
    ax.set_title(f"Cost per million tokens served\ndotted: {what}", fontsize="medium")
    ax.set_ylabel("Cost [USD per million tokens]")
    ax.set_xlabel("Period")
    names = list(names or [r.name for r in results])
    periods: list[str] = []
    for r in results:
        periods += [p for p in _periods(r) if p not in periods]
    x = {p: i for i, p in enumerate(periods)}
    for i, (r, name) in enumerate(zip(results, names, strict=True)):
        if not r.tables:
            continue
        uc = period_unit_cost(r)
        color = f"C{i % 10}"
        ax.plot([x[p] for p in uc.period], uc.usd_per_million_tokens, marker="o", color=color,
                label=_txt(f"{name}: cash cost in the period"))
        cf = r.tables.get("cashflow")
        if cf is not None and "usd_per_million_tokens_annualised" in cf and len(cf):
            ok = cf[cf.period.astype(str).isin(x) & cf.usd_per_million_tokens_annualised.notna()]
            ax.plot([x[str(p)] for p in ok.period], ok.usd_per_million_tokens_annualised,
                    marker="s", linestyle="--", color=color, alpha=0.8,
                    label=_txt(f"{name}: annualised (capital recovery + opex)"))
        try:
            lev = r.kpi("usd_per_million_tokens")
        except KeyError:
            lev = None
        if lev is not None:
            ax.axhline(lev, color=color, linestyle=":",
                       label=_txt(f"{name}: levelised {lev:.4f}"))
    ax.set_xticks(list(x.values()), periods, rotation=45 if len(periods) > 10 else 0)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0),
              borderaxespad=0.0)


#: Series of the power-sources chart: sources-table column -> label.
SOURCE_SERIES = {"grid_kw_peak": "Grid", "battery_discharge_kw_at_grid_peak": "Battery (net)",
                 "onsite_kw_at_grid_peak": "On-site generation"}
#: The ``sources`` column of the grid's flexible part at its peak (flexible connections).
FLEX_SERIES = "grid_flexible_kw_at_grid_peak"


def plot_power_sources(ax: Any, result: Any) -> None:
    """Power sources at the grid's peak hour by period (stacked bars, all sites) [MW].

    Each site at its own grid peak hour (the ``sources`` table): the grid, the battery's
    net discharge and the on-site generation then, summed over the sites.

    Parameters
    ----------
    ax : matplotlib Axes
        Where to draw.
    result : PlanResult
        A plan; an empty chart says so without a ``sources`` table.
    """
    src = result.tables.get("sources")
    periods = _periods(result)
    ax.set_title(_txt(f"Power sources at the grid's peak hour: {result.name}"))
    ax.set_ylabel("Power [MW]")
    ax.set_xlabel("Period")
    if src is None or not len(src):
        _empty(ax, "no storage or on-site generation")
        return
    table = (src.assign(period=src.period.astype(str))
             .groupby("period", sort=False)[list(SOURCE_SERIES)].sum() / 1000.0)
    labels = SOURCE_SERIES
    if FLEX_SERIES in src.columns and (src[FLEX_SERIES] > 0).any():
        # the grid split into firm and flexible (the part above the firm MW)
        flex = (src.assign(period=src.period.astype(str))
                .groupby("period", sort=False)[FLEX_SERIES].sum() / 1000.0)
        table = table.assign(grid_kw_peak=table.grid_kw_peak - flex)
        table.insert(1, FLEX_SERIES, flex)
        labels = {"grid_kw_peak": "Grid, firm", FLEX_SERIES: "Grid, flexible",
                  **{k: v for k, v in SOURCE_SERIES.items() if k != "grid_kw_peak"}}
    _stacked(ax, table, periods, labels=labels)
    _legend_right(ax, "Source")


def plan_figures(result: Any) -> dict[str, Any]:
    """The plan's charts as matplotlib figures, by file name.

    :data:`PLAN_CHARTS`, and :data:`OPTIONAL_PLAN_CHARTS` where the plan has their table.
    """
    figs = {}
    fig, ax = plt.subplots(figsize=(9, 5))
    plot_facility_mw(ax, result)
    figs[PLAN_CHARTS[0]] = fig
    fig, ax = plt.subplots(figsize=(9, 5))
    plot_racks(ax, result)
    figs[PLAN_CHARTS[1]] = fig
    fig = plt.figure(figsize=(10, 5))
    plot_cost_stack(fig, result)
    figs[PLAN_CHARTS[2]] = fig
    fig, ax = plt.subplots(figsize=(9, 5))
    plot_unit_cost(ax, [result])
    figs[PLAN_CHARTS[3]] = fig
    src = result.tables.get("sources")
    if src is not None and len(src):
        fig, ax = plt.subplots(figsize=(9, 5))
        plot_power_sources(ax, result)
        figs[OPTIONAL_PLAN_CHARTS[0]] = fig
    return figs


def write_plan_charts(result: Any, outdir: Path | str) -> list[Path]:
    """Write the PNG charts of one plan to ``outdir`` (see :data:`PLAN_CHARTS`).

    Returns
    -------
    list of Path
    """
    outdir = Path(outdir)
    out = []
    figs = plan_figures(result)
    try:
        for name in [*PLAN_CHARTS, *(n for n in OPTIONAL_PLAN_CHARTS if n in figs)]:
            out.append(_save(figs.pop(name), outdir / name))
    finally:
        for fig in figs.values():
            plt.close(fig)
    return out


# ----------------------------------------------------------------------------------------
# Comparison
# ----------------------------------------------------------------------------------------


def plot_npv_stack(fig: Any, results: Sequence[Any], names: Sequence[str]) -> None:
    """Present value of the costs paid by category per scenario (stacked), with the NPV.

    Each bar stacks the discounted capex and opex; the NPV (those costs net of the
    terminal-value credit) is a diamond with its value; the credits are in a panel of
    their own.
    """
    from matplotlib.lines import Line2D

    frames, credits = {}, {}
    for r, n in zip(results, names, strict=True):
        c = r.tables.get("costs")
        if c is not None and len(c):
            frames[n] = c.groupby("category", sort=False).cost_usd_discounted.sum() / 1e6
            credits[n] = terminal_credit(c, discounted=True)[0] / 1e6
    has_credit = any(v for v in credits.values())
    if has_credit:
        gs = fig.add_gridspec(1, 2, width_ratios=[4, 1.4], wspace=0.1)
        ax = fig.add_subplot(gs[0, 0])
        side = fig.add_subplot(gs[0, 1])
    else:
        ax, side = fig.add_subplot(1, 1, 1), None
    ax.set_title("NPV of costs per scenario: present value of the costs paid, by category")
    ax.set_ylabel("Present value [million USD]")
    if not frames:
        _empty(ax, "no costs")
        return
    table = pd.DataFrame(frames).T.fillna(0.0)
    cats = [c for c in CATEGORIES if c in table.columns and c != "terminal_value"]
    cats += [c for c in table.columns if c not in cats and c != "terminal_value"]
    _stacked(ax, table[cats], list(table.index), CATEGORY_COLORS,
             {c: category_label(c) for c in cats})
    ax.set_xticks(range(len(table.index)), [_txt(n) for n in table.index])
    top = table[cats].clip(lower=0).sum(axis=1).max()
    for i, (r, n) in enumerate(zip(results, names, strict=True)):
        try:
            npv = r.kpi("npv_cost_usd")
        except KeyError:
            continue
        if npv is not None and n in table.index:
            ax.plot([i], [npv / 1e6], marker="D", color="black", markersize=7, zorder=5)
            ax.annotate(f"NPV {npv / 1e6:,.0f}", (i, npv / 1e6), textcoords="offset points",
                        xytext=(9, -3), fontsize="small", fontweight="bold",
                        bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.8))
    ax.set_ylim(0, top * 1.08)
    handles, labels = ax.get_legend_handles_labels()
    handles, labels = handles[::-1], labels[::-1]
    handles.append(Line2D([], [], marker="D", color="black", linestyle="none"))
    labels.append("NPV (costs paid - terminal-value credit)")
    if side is not None:
        _credit_panel(side, credits, "Terminal-value credit\n(present value)")
        fig.legend(handles, labels, fontsize="small", loc="upper left",
                   bbox_to_anchor=(0.99, 0.88), title="Cost category [million USD]")
    else:
        ax.legend(handles, labels, fontsize="small", loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), title="Cost category [million USD]")


def comparison_figures(results: Sequence[Any], names: Sequence[str]) -> dict[str, Any]:
    """The comparison charts as figures, by file name (see :data:`COMPARISON_CHARTS`)."""
    figs = {}
    fig = plt.figure(figsize=(max(8, 2.0 * len(results) + 6), 5.5))
    plot_npv_stack(fig, results, names)
    figs[COMPARISON_CHARTS[0]] = fig

    n = len(results)
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols + 2.2, 4.0 * rows), sharey=True,
                             squeeze=False)
    sites: list[str] = []
    for r in results:
        sites += [s for s in hosting_sites(r) if s not in sites]
    colors = _site_colors(sites)
    top = facility_axis_top(results, sites)
    over = max((sum((r.tables["power"][r.tables["power"].site == s].grid_kw / 1000.0 > top).any()
                    for s in sites) for r in results if r.tables.get("power") is not None),
               default=0)
    handles: dict[str, Any] = {}
    for k, (r, name) in enumerate(zip(results, names, strict=True)):
        ax = axes[k // cols][k % cols]
        if r.tables:
            for h in plot_facility_mw(ax, r, title=name, colors=colors, top=top,
                                      sites=[s for s in sites if s in hosting_sites(r)],
                                      legend=False, pad=10 + 9 * over if over else None):
                handles.setdefault(h.get_label(), h)
            if k % cols:
                ax.set_ylabel("")
        else:
            _empty(ax, f"{name}: no plan")
    for k in range(n, rows * cols):
        axes[k // cols][k % cols].axis("off")
    fig.suptitle("Facility power at peak by site [MW] (dashed: grid limit)")
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    order = [_txt(s) for s in sites] + [k for k in handles if k not in map(_txt, sites)]
    fig.legend([handles[k] for k in order if k in handles], [k for k in order if k in handles],
               fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 0.93), title="Site")
    figs[COMPARISON_CHARTS[1]] = fig

    fig, ax = plt.subplots(figsize=(9, 5))
    plot_unit_cost(ax, results, names)
    figs[COMPARISON_CHARTS[2]] = fig
    return figs


def write_comparison_charts(results: Sequence[Any], names: Sequence[str],
                            outdir: Path | str) -> list[Path]:
    """Write the comparison PNGs to ``outdir`` (see :data:`COMPARISON_CHARTS`).

    Parameters
    ----------
    results : sequence of PlanResult
    names : sequence of str
        Scenario names shown (unique).
    outdir : path

    Returns
    -------
    list of Path
    """
    outdir = Path(outdir)
    out = []
    figs = comparison_figures(results, names)
    try:
        for name in COMPARISON_CHARTS:
            out.append(_save(figs.pop(name), outdir / name))
    finally:
        for fig in figs.values():
            plt.close(fig)
    return out
