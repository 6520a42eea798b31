"""PNG charts of one plan and of a scenario comparison (matplotlib, Agg backend).

One plan (:func:`write_plan_charts`): facility MW by site over time (with the grid
limits), racks in service by type over time, the cost stack by category and period,
and USD per million tokens over time. A comparison (:func:`write_comparison_charts`):
NPV and discounted cost stack per scenario, facility MW by site over time per
scenario, and USD per million tokens over time per scenario.

Every file is written to a temporary file and renamed.
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

#: File names of the plan charts.
PLAN_CHARTS = ("facility_mw_by_site.png", "racks_by_type.png", "cost_stack.png",
               "usd_per_million_tokens.png")
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
    if result.inputs is not None:
        return [p.label for p in result.inputs.periods]
    return list(dict.fromkeys(str(p) for p in result.tables["power"].period))


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
        if result.inputs is not None else {p: 8760.0 for p in periods}
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


def plot_facility_mw(ax: Any, result: Any, title: str | None = None) -> None:
    """Facility MW at peak by site over time, with each site's grid limit dashed."""
    power = result.tables.get("power")
    periods = _periods(result)
    ax.set_title(title or f"Facility power at peak by site: {result.name}")
    ax.set_ylabel("Facility power at peak [MW]")
    if power is None or not len(power):
        _empty(ax, "no power table")
        return
    x = range(len(periods))
    for i, (site, sub) in enumerate(power.groupby("site", sort=False)):
        s = sub.set_index("period").reindex(periods)
        color = f"C{i % 10}"
        ax.plot(x, s.facility_kw_peak / 1000.0, marker="o", color=color, label=f"{site}")
        ax.plot(x, s.grid_kw / 1000.0, linestyle="--", color=color, alpha=0.6,
                label=f"{site} grid limit")
    ax.set_xticks(list(x), periods, rotation=45 if len(periods) > 10 else 0)
    ax.set_xlabel("Period")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")


def _stacked(ax: Any, table: pd.DataFrame, periods: Sequence[str]) -> None:
    """Stacked bars of ``table`` (index periods, columns series); negatives stack down."""
    x = list(range(len(periods)))
    pos = [0.0] * len(periods)
    neg = [0.0] * len(periods)
    for i, col in enumerate(table.columns):
        vals = [float(v) for v in table[col].reindex(periods).fillna(0.0)]
        bottoms = [p if v >= 0 else n for v, p, n in zip(vals, pos, neg, strict=True)]
        ax.bar(x, vals, bottom=bottoms, label=str(col), color=f"C{i % 10}")
        pos = [p + max(v, 0.0) for p, v in zip(pos, vals, strict=True)]
        neg = [n + min(v, 0.0) for n, v in zip(neg, vals, strict=True)]
    ax.set_xticks(x, list(periods), rotation=45 if len(periods) > 10 else 0)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.grid(axis="y", alpha=0.3)


def plot_racks(ax: Any, result: Any) -> None:
    """Racks in service by type over time (stacked bars, all sites)."""
    fleet = result.tables.get("fleet")
    periods = _periods(result)
    ax.set_title(f"Racks in service by type: {result.name}")
    ax.set_ylabel("Racks in service [racks]")
    ax.set_xlabel("Period")
    if fleet is None or not len(fleet):
        _empty(ax, "no racks")
        return
    table = fleet.pivot_table(index="period", columns="rack", values="installed_racks",
                              aggfunc="sum", sort=False)
    _stacked(ax, table, periods)
    ax.legend(fontsize="small")


def plot_cost_stack(ax: Any, result: Any) -> None:
    """Undiscounted cost by category and period (stacked; terminal value below zero)."""
    costs = result.tables.get("costs")
    periods = _periods(result)
    ax.set_title(f"Cost by category (undiscounted): {result.name}")
    ax.set_ylabel("Cost [million USD]")
    ax.set_xlabel("Period")
    if costs is None or not len(costs):
        _empty(ax, "no costs")
        return
    table = costs.pivot_table(index="period", columns="category", values="cost_usd",
                              aggfunc="sum", sort=False) / 1e6
    _stacked(ax, table, periods)
    ax.legend(fontsize="small", ncol=2)


def plot_unit_cost(ax: Any, results: Sequence[Any], names: Sequence[str] | None = None) -> None:
    """USD per million tokens over time, one line per plan, levelised figure dotted.

    The subtitle says why the levelised figure can lie below every period's cash cost:
    it is computed from discounted costs net of the terminal value of the assets still
    in service at the end, over discounted tokens.
    """
    from dcplan.planner.results import LEVELISED_TEXT

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
                label=f"{name}: cash cost in the period")
        try:
            lev = r.kpi("usd_per_million_tokens")
        except KeyError:
            lev = None
        if lev is not None:
            ax.axhline(lev, color=color, linestyle=":", label=f"{name}: levelised {lev:.4f}")
    ax.set_xticks(list(x.values()), periods, rotation=45 if len(periods) > 10 else 0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")


def write_plan_charts(result: Any, outdir: Path | str) -> list[Path]:
    """Write the PNG charts of one plan to ``outdir`` (see :data:`PLAN_CHARTS`).

    Returns
    -------
    list of Path
    """
    outdir = Path(outdir)
    out = []
    for name, draw in zip(PLAN_CHARTS, (lambda ax: plot_facility_mw(ax, result),
                                        lambda ax: plot_racks(ax, result),
                                        lambda ax: plot_cost_stack(ax, result),
                                        lambda ax: plot_unit_cost(ax, [result])), strict=True):
        fig, ax = plt.subplots(figsize=(9, 5))
        draw(ax)
        out.append(_save(fig, outdir / name))
    return out


# ----------------------------------------------------------------------------------------
# Comparison
# ----------------------------------------------------------------------------------------


def plot_npv_stack(ax: Any, results: Sequence[Any], names: Sequence[str]) -> None:
    """Discounted cost by category per scenario (stacked), NPV written above each bar."""
    frames = {}
    for r, n in zip(results, names, strict=True):
        c = r.tables.get("costs")
        if c is not None and len(c):
            frames[n] = c.groupby("category", sort=False).cost_usd_discounted.sum() / 1e6
    ax.set_title("NPV of costs and its make-up, per scenario")
    ax.set_ylabel("Present value [million USD]")
    if not frames:
        _empty(ax, "no costs")
        return
    table = pd.DataFrame(frames).T.fillna(0.0)
    _stacked(ax, table, list(table.index))
    for i, (r, n) in enumerate(zip(results, names, strict=True)):
        try:
            npv = r.kpi("npv_cost_usd")
        except KeyError:
            continue
        if npv is not None:
            top = table.loc[n].clip(lower=0).sum() if n in table.index else 0.0
            ax.text(i, top, f"NPV {npv / 1e6:,.0f}", ha="center", va="bottom",
                    fontsize="small", fontweight="bold")
    # Outside the axes, to the right, so that it never covers a bar.
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


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
    fig, ax = plt.subplots(figsize=(max(7, 2.2 * len(results) + 3), 5.5))
    plot_npv_stack(ax, results, names)
    out.append(_save(fig, outdir / COMPARISON_CHARTS[0]))

    n = len(results)
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 4.2 * rows), sharey=True,
                             squeeze=False)
    for k, (r, name) in enumerate(zip(results, names, strict=True)):
        ax = axes[k // cols][k % cols]
        if r.tables:
            plot_facility_mw(ax, r, title=name)
        else:
            _empty(ax, f"{name}: no plan")
    for k in range(n, rows * cols):
        axes[k // cols][k % cols].axis("off")
    fig.suptitle("Facility power at peak by site (dashed: grid limit)")
    fig.tight_layout()
    out.append(_save(fig, outdir / COMPARISON_CHARTS[1]))

    fig, ax = plt.subplots(figsize=(9, 5))
    plot_unit_cost(ax, results, names)
    out.append(_save(fig, outdir / COMPARISON_CHARTS[2]))
    return out
