"""Readable column headers with units, and number formats, for the result tables.

A header is ``"<label> [<unit>]"``; the unit comes from the table's
``df.attrs["units"]`` (set by the planner), so a new column gets a header with its
unit without changes here. :func:`header` and :func:`column_of` are inverse.
"""

from __future__ import annotations

import pandas as pd

#: Readable names of result-table columns.
LABELS: dict[str, str] = {
    "period": "Period", "site": "Site", "rack": "Rack type", "workload": "Workload",
    "pool": "Pool", "installed_racks": "Racks in service", "new_racks": "New racks",
    "retired_racks": "Retired racks", "allocated_racks": "Racks allocated at peak",
    "rack_positions": "Rack positions used", "utilisation_frac": "Utilisation",
    "racks": "Racks", "tokens_per_s": "Goodput allocated", "it_kw": "IT power",
    "demand_tokens_per_s_avg": "Demand, average", "demand_tokens_per_s_peak": "Demand at peak",
    "served_tokens_per_s_peak": "Served at peak",
    "unserved_tokens_per_s_peak": "Unserved at peak", "it_kw_peak": "IT power at peak",
    "cooling_kw_peak": "Cooling power at peak", "network_kw": "Network power",
    "losses_kw_peak": "Electrical losses at peak", "facility_kw_peak": "Facility power at peak",
    "grid_kw": "Grid limit", "headroom_kw": "Headroom to grid limit",
    "built_kw": "Facility capacity built", "it_kw_avg": "IT power, average",
    "facility_kw_avg": "Facility power, average", "energy_kwh": "Energy", "carbon_t": "Carbon",
    "liquid_heat_kw": "Heat to liquid", "air_heat_kw": "Heat to air", "cdu_ids": "CDU models",
    "cdus": "CDUs incl. redundancy", "cdu_positions": "CDU rack positions",
    "pue_annual": "PUE, annual", "network_capex_usd": "Network capex of the fleet in service",
    "category": "Cost category", "kind": "Kind", "cost_usd": "Cost, undiscounted",
    "discount_factor": "Discount factor", "cost_usd_discounted": "Cost, discounted",
    "short_tokens_per_s_peak": "Shortfall at peak", "short_frac": "Shortfall share",
    "short_tokens_per_month": "Shortfall", "family": "Limit family",
    "shadow_price": "Shadow price (integers fixed)",
    "shadow_price_relaxed": "Shadow price (LP relaxation)", "unit": "Unit", "rank": "Rank",
    "limit": "Limit", "value": "Value", "used": "Used", "shadow_unit": "Shadow price unit",
    "quantity": "Quantity", "linear": "Linear estimate", "exact": "Exact sizing",
    "diff": "Difference exact - linear", "diff_frac": "Difference share", "kpi": "KPI",
    "scenario": "Scenario",
}

#: Units that need a clearer wording in a header.
_UNIT_TEXT = {"see unit column": "see Unit column", "see unit": "see Unit column",
              "see shadow_unit": "see Shadow price unit column"}


def unit_of(df: pd.DataFrame, col: str) -> str:
    """Return the unit of column ``col`` of a result table ('' for text columns)."""
    units = df.attrs.get("units", {}) if hasattr(df, "attrs") else {}
    u = units.get(col)
    if u is None:
        if col.endswith("_usd") or col.endswith("_usd_discounted"):
            return "USD"
        if col.endswith("_kw") or "_kw_" in col:
            return "kW"
        if col.endswith("_frac"):
            return "fraction"
        return ""
    if u == "-":
        return "fraction" if col.endswith("_frac") else "ratio"
    return _UNIT_TEXT.get(u, u)


def header(df: pd.DataFrame, col: str) -> str:
    """Header text of ``col``: readable label and unit in brackets."""
    label = LABELS.get(col, col.replace("_", " ").capitalize())
    unit = unit_of(df, col)
    return f"{label} [{unit}]" if unit else label


def headers(df: pd.DataFrame) -> list[str]:
    """Headers of every column of ``df``."""
    return [header(df, c) for c in df.columns]


def column_of(df: pd.DataFrame, text: str) -> str:
    """Column of ``df`` whose :func:`header` is ``text`` (inverse of :func:`header`)."""
    for c in df.columns:
        if header(df, c) == text:
            return c
    raise KeyError(text)


def number_format(unit: str, col: str = "") -> str:
    """Excel number format for a column with ``unit``."""
    u = unit.lower()
    if col == "discount_factor":
        return "0.0000"
    if col == "rank":
        return "0"
    if u.startswith("usd per million") or u.startswith("usd/mtok"):
        return "#,##0.0000"
    if u.startswith("usd per mw") or u.startswith("usd"):
        return "#,##0"
    if u.startswith("tokens"):
        return "#,##0"
    if u.startswith(("kw", "kwh", "mw", "mwh", "tco2")):
        return "#,##0.0"
    if u.startswith(("racks", "positions", "units")):
        return "#,##0.0"
    if u in ("fraction", "ratio"):
        return "0.000"
    return "#,##0.0###"
