"""Small views of a plan's result tables shared by the workbook, charts and HTML.

Its periods in order, the sites that host racks, the cost categories in stacking
order, and the terminal-value credit. No plan figure is recomputed here.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from dcplan.planner.categories import CATEGORIES


def periods(result: Any) -> list[str]:
    """Period labels of a plan, in plan order."""
    if getattr(result, "inputs", None) is not None:
        return [p.label for p in result.inputs.periods]
    labels: list[str] = []
    for name in ("power", "fleet", "costs"):
        df = result.tables.get(name)
        if df is not None:
            labels += [str(p) for p in df.period]
    return list(dict.fromkeys(labels))


def hosting_sites(result: Any) -> list[str]:
    """Sites that host racks in some period (in the order of the power table).

    A site of the scenario that never hosts a rack is left out of charts: its load
    is zero throughout and its grid limit would only squash the others.
    """
    fleet = result.tables.get("fleet")
    if fleet is None or not len(fleet):
        return []
    hosting = set(fleet.loc[fleet.installed_racks > 0, "site"])
    power = result.tables.get("power")
    order = list(dict.fromkeys(power.site)) if power is not None and len(power) else []
    order += [s for s in dict.fromkeys(fleet.site) if s not in order]
    return [s for s in order if s in hosting]


def stack_categories(costs: pd.DataFrame | None) -> tuple[list[str], list[str]]:
    """Cost categories of a costs table: (stacked: capex then opex, apart: end of horizon).

    The terminal value (kind ``end``, a credit at the end of the horizon) is kept apart
    from the stack of costs paid, so that it does not dwarf them.
    """
    if costs is None or not len(costs):
        return [], []
    present = list(dict.fromkeys(costs.category))
    order = [c for c in CATEGORIES if c in present] + [c for c in present if c not in CATEGORIES]
    kind = dict(zip(costs.category, costs.kind, strict=True))
    stacked = [c for c in order if kind.get(c) != "end"]
    apart = [c for c in order if kind.get(c) == "end"]
    return stacked, apart


def terminal_credit(costs: pd.DataFrame | None, discounted: bool = False
                    ) -> tuple[float, str | None]:
    """Terminal-value credit of a plan [USD, negative] and the period it is booked in."""
    if costs is None or not len(costs):
        return 0.0, None
    sub = costs[costs.kind == "end"]
    if not len(sub):
        return 0.0, None
    col = "cost_usd_discounted" if discounted else "cost_usd"
    return float(sub[col].sum()), str(sub.period.iloc[-1])


def operations_counted(costs: pd.DataFrame | None) -> bool:
    """Whether a plan's costs include operations staff or software (not switched off)."""
    if costs is None or not len(costs):
        return False
    sub = costs[costs.category.isin(("staff", "software"))]
    return bool(len(sub)) and float(sub.cost_usd.abs().sum()) > 0.0


def bound_sentence(result: Any) -> str:
    """The lower bound a plan's gap is proven against, with its source ("" without one).

    Parameters
    ----------
    result : PlanResult
        ``bound_usd`` [USD], ``bound_source`` and ``gap`` [-] (the two-stage solve of the
        exact facility sets them).

    Returns
    -------
    str
        E.g. ``Lower bound: 1,096,379,629 USD (HiGHS branch and bound on ...); gap 0.510%
        (proven)``.
    """
    if getattr(result, "bound_usd", None) is None or result.gap is None:
        return ""
    from dcplan.planner.solver import format_gap

    return (f"Lower bound: {result.bound_usd:,.0f} USD ({result.bound_source}); "
            f"gap {format_gap(result.gap)} (proven)")


def outcome_sentence(result: Any) -> str:
    """What the solver outcome means, in words that never overstate it."""
    if not result.status.has_solution:
        return f"No plan: the solver ended with status {result.status.value.upper()}."
    text = result.status_text
    head = text[0].upper() + text[1:] + "."
    if result.unserved:
        head += (" The sites cannot host all demand, so the cheapest plan leaves some "
                 "unserved at the scenario's penalty: see Unserved demand below.")
    elif result.proven_optimal:
        head += " No cheaper plan meets the same demand within the limits."
        head += " All token demand is served in every period."
    else:
        head += " All token demand is served in every period."
    bound = bound_sentence(result)
    return f"{head} {bound}." if bound else head
