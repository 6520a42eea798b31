"""Words for what the exporters show: headers with units, KPI and category names.

Column headers with units, KPI names, cost categories and number formats: the one
mapping used by the workbook, the charts, the HTML report and the comparison.

A header is ``"<label> [<unit>]"``; the unit comes from the table's
``df.attrs["units"]`` (set by the planner), so a new column gets a header with its
unit without changes here. :func:`header` and :func:`column_of` are inverse.
"""

from __future__ import annotations

import re

import pandas as pd

#: Readable names of result-table columns (see :data:`TABLE_LABELS` for the columns
#: whose name means something else in one table).
LABELS: dict[str, str] = {
    "period": "Period", "site": "Site", "rack": "Rack type", "workload": "Workload",
    "pool": "Pool", "installed_racks": "Racks in service", "new_racks": "New racks",
    "retired_racks": "Retired racks", "allocated_racks": "Racks allocated at peak",
    "rack_positions": "Rack positions used", "utilisation_frac": "Utilisation",
    "racks": "Racks", "tokens_per_s": "Goodput allocated", "it_kw": "Rack IT power",
    "demand_tokens_per_s_avg": "Demand, average", "demand_tokens_per_s_peak": "Demand at peak",
    "served_tokens_per_s_peak": "Served at peak",
    "unserved_tokens_per_s_peak": "Unserved at peak",
    "it_kw_peak": "Rack IT power at peak (without network)",
    "cooling_kw_peak": "Cooling power at peak", "network_kw": "Network power",
    "losses_kw_peak": "Electrical losses at peak", "facility_kw_peak": "Facility power at peak",
    "grid_kw": "Grid limit", "headroom_kw": "Headroom to grid limit",
    "built_kw": "Facility capacity built",
    "it_kw_avg": "Rack IT power, average (without network)",
    "it_total_kw_peak": "IT power at peak (racks + network)",
    "it_total_kw_avg": "IT power, average (racks + network)",
    "it_total_kw": "IT power (racks + network)",
    "facility_kw_avg": "Facility power, average", "energy_kwh": "Energy", "carbon_t": "Carbon",
    "liquid_heat_kw": "Heat to liquid", "air_heat_kw": "Heat to air",
    "liquid_heat_kw_full_load": "Heat to liquid at full load", "cdu_ids": "CDU models",
    "cdus": "CDUs incl. redundancy", "cdu_positions": "CDU rack positions",
    "pue_annual": "PUE, annual (energy-weighted)", "pue_peak": "PUE at the peak hour",
    "network_capex_usd": "Network capex of the fleet in service",
    "category": "Cost category", "kind": "Kind", "cost_usd": "Cost, undiscounted",
    "discount_factor": "Discount factor", "cost_usd_discounted": "Cost, discounted",
    "short_tokens_per_s_peak": "Shortfall at peak", "short_frac": "Shortfall share",
    "short_tokens_per_month": "Shortfall", "family": "Limit family",
    "shadow_price": "Shadow price (integers fixed)",
    "shadow_price_relaxed": "Shadow price (LP relaxation)", "unit": "Unit", "rank": "Rank",
    "limit": "Limit", "value": "Value", "used": "Used", "shadow_unit": "Shadow price unit",
    "quantity": "Quantity", "plan": "Plan", "linear": "Linear estimate", "exact": "Exact sizing",
    "diff": "Difference exact - plan", "diff_frac": "Difference share", "kpi": "KPI",
    "scenario": "Scenario", "fabric": "Fabric", "item": "Item", "catalog_id": "Catalog entry",
    "count": "Count", "kw": "Power", "capex_usd": "Capex", "in_rack": "Inside the rack",
    "cost_usd_total": "Cost, undiscounted", "tokens": "Tokens served",
    "usd_per_million_tokens": "Cost per million tokens",
    "installed": "Installed", "new": "To order (new)", "removed": "No longer needed",
    "new_capex_usd": "Capex of what to order", "purchase": "Purchase",
    "included_kw": "Power, in the rack's (not summed)",
    "included_capex_usd": "Capex, in the rack's price (not summed)",
    "headroom_racks": "Racks held as serving headroom",
    "unavailable_racks": "Racks held for availability", "spare_racks": "Spare racks (N+k)",
    "schedule": "Schedule", "demand_stated": "Demand as stated", "demand_unit": "Stated unit",
    "tokens_per_unit": "Tokens per unit", "conversion": "Conversion to tokens",
    "served_tokens_per_s_avg": "Served, average",
    "unserved_tokens_per_s_avg": "Unserved, average", "peak_hour": "Peak hour",
    "connectable_kw": "Grid capacity that can be connected", "committed_kw": "Grid committed",
    "requested_kw": "Grid requested", "requested_assessed_kw": "Grid requested with assessment",
    "energised_kw": "Grid energised", "connected_kw": "Grid connected", "used_kw": "Grid used",
    "lead_time_months": "Lead time", "assessment_months": "Assessment time", "hour": "Hour",
    "requested_flex_kw": "Flexible grid requested", "flexible_kw": "Flexible grid connected",
    "curtailed_kw": "Cut in a curtailment event", "curtailment_hours": "Curtailment allowance",
    "deferred_tokens": "Tokens deferred by curtailment",
    "facility_kw": "Facility power", "flexible": "Flexible",
    "peak_to_average": "Peak to average", "share_frac": "Share",
    "api": "API price", "provider": "Provider", "api_model": "API model",
    "comparison": "Compared as", "input_mtok": "Input tokens, uncached",
    "cached_input_mtok": "Input tokens, cache hits", "output_mtok": "Output tokens",
    "api_usd": "Cost of buying", "api_usd_per_mtok": "API cost per million tokens",
    "plan_usd": "Cost of building (plan)", "plan_usd_per_mtok": "Plan cost per million tokens",
    "reserve_usd_per_mtok": "of which reserve capacity",
    "saving_frac": "Saving of building", "cheaper": "Cheaper",
    "break_even_demand_frac": "Break-even demand",
    "break_even_utilisation_frac": "Break-even utilisation", "as_of": "Price as of",
    "model": "Model", "tokens_per_request": "Tokens per request",
    "requests": "Requests served", "tokens_per_kwh": "Tokens per kWh",
    "wh_per_request": "Energy per request",
    "recharge_kw": "UPS battery recharge", "power_redundancy": "Power redundancy",
    "network_positions": "Network rack positions", "cdus_by_model": "CDUs by model",
    "cdu_capex_usd": "CDU capex of those in service",
    "cdu_capex_diff_usd": "CDU capex, cooling model minus optimisation",
    "milp_cdus_by_model": "CDUs priced by the optimisation, by model",
    "milp_cdus": "CDUs priced by the optimisation",
    "milp_cdu_positions": "CDU positions priced by the optimisation",
    "milp_cdu_capex_usd": "CDU capex priced by the optimisation",
    "water_m3": "Site water at full load",
    "water_limit_m3": "Site water limit", "wue_l_per_kwh": "Water per IT energy (WUE)",
    "switch_id": "Switch model", "leaf_switches": "Leaf switches",
    "spine_switches": "Spine switches", "core_switches": "Core switches",
    "nic_leaf_links": "NIC-leaf links", "leaf_spine_links": "Leaf-spine links",
    "spine_core_links": "Spine-core links",
}

#: Column names that mean something else in one table: table -> column -> label.
TABLE_LABELS: dict[str, dict[str, str]] = {
    "caps": {"power_cap_frac": "Power cap", "racks": "Racks at the cap",
             "power_at_cap_kw": "Rack power at the cap", "tokens_per_s": "Tokens served",
             "site_facility_kw_peak": "Site facility peak",
             "site_racks_per_mw": "Site racks per MW",
             "site_tokens_per_s_per_mw": "Site tokens per MW"},
    "sources": {"grid_peak_hour": "Grid peak hour", "grid_kw_peak": "Grid peak",
                "grid_flexible_kw_at_grid_peak": "Of which flexible grid",
                "facility_kw_at_grid_peak": "Facility load then (peak basis)",
                "served_kw_at_grid_peak": "Load served then",
                "battery_discharge_kw_at_grid_peak": "Battery net discharge then",
                "onsite_kw_at_grid_peak": "On-site generation then",
                "battery_kwh": "Battery energy (usable)", "battery_kw": "Battery power",
                "onsite_capacity_kw": "On-site capacity", "facility_mwh": "Facility energy",
                "grid_mwh": "Grid energy", "battery_discharge_mwh": "Battery discharge",
                "battery_loss_mwh": "Battery losses", "onsite_mwh": "On-site energy",
                "onsite_carbon_t": "On-site CO2", "onsite_fuel_usd": "Fuel and variable O&M",
                "onsite_hours_below_min_load": "Hours below min. stable load"},
    "power_oversubscription": {
        "oversubscription_factor": "Oversubscription factor",
        "basis_it_kw": "Racks' IT power at the basis",
        "provisioned_it_kw": "Provisioned IT power (factor x basis)",
        "draw_it_kw_peak": "Mean IT draw, busiest hour",
        "draw_sigma_kw_peak": "Spread of the draw (1 sd), busiest hour",
        "exceed_prob": "Share of the year over the provision",
        "exceed_prob_peak_hour": "Probability over, busiest hour",
        "excess_mwh_per_year": "IT energy over the provision",
        "tokens_lost_per_s_avg": "Tokens lost to capping (annual mean)",
        "tokens_lost_frac": "Share of the site's tokens lost",
        "tokens_counted_per_s_avg": "Tokens counted against demand (annual mean)"},
    "equipment": {"category": "Equipment kind"},
    "bom": {"category": "Equipment kind", "kw": "Power, installed",
            "capex_usd": "Capex of what is installed"},
    "cashflow": {"years": "Length", "capex_usd": "Capex paid",
                 "opex_usd": "Opex (energy, demand charges, carbon, maintenance)",
                 "staff_software_usd": "Staff and software",
                 "depreciation_usd": "Depreciation (straight line)",
                 "book_value_usd": "Book value at the end",
                 "annualised_capital_usd": "Capital recovery (annualised capex)",
                 "annualised_cost_usd": "Annualised cost",
                 "tokens_served": "Tokens served",
                 "usd_per_million_tokens_annualised": "Annualised cost per million tokens",
                 "usd_per_million_tokens_cash": "Cash cost per million tokens",
                 "api_usd": "Avoided API spend", "api": "Cheapest comparable API",
                 "net_cash_flow_usd": "Net cash flow vs API",
                 "cumulative_net_cash_flow_usd": "Cumulative net cash flow vs API"},
}

#: KPI id -> (name, unit as shown, what it means). One home for the words of a KPI.
KPI_LABELS: dict[str, tuple[str, str, str]] = {
    "npv_cost_usd": ("NPV of all costs", "USD (present value)",
                     "Present value of capex and opex over the horizon, minus the book value "
                     "left at the end."),
    "capex_usd": ("Capex", "USD", "Racks, network, cooling plant, CDUs and buildings, "
                  "undiscounted."),
    "opex_usd": ("Opex", "USD", "Energy, demand charges, carbon price and maintenance, "
                 "undiscounted (staff and software apart; without the penalty of unserved "
                 "demand)."),
    "staff_software_usd": ("Staff and software", "USD", "Operations staff and software "
                           "licences, undiscounted (0 when economics.operations_costs is "
                           "false)."),
    "usd_per_million_tokens_annualised": (
        "Annualised cost per million tokens", "USD per million tokens",
        "Each purchase's capital recovery (CRF at the discount rate over its life) + opex + "
        "staff and software, summed over the periods / tokens served; by period on the Cash "
        "flow sheet. No terminal credit."),
    "terminal_value_usd": ("Terminal-value credit", "USD (present value)",
                           "Book value of the assets still in service at the end, discounted: "
                           "what the NPV is net of."),
    "terminal_value_frac": ("Terminal share of the NPV", "share",
                            "Terminal-value credit / NPV of all costs; above 25 % the "
                            "levelised cost rests heavily on assets bought late."),
    "api_avoided_usd": ("Avoided API spend", "USD",
                        "Tokens served bought at each workload's cheapest comparable API, "
                        "undiscounted: the return of building."),
    "payback_years": ("Payback against the API", "years",
                      "From the start to the end of the first period whose cumulative net "
                      "cash flow (avoided API spend - capex - opex - staff and software) is "
                      ">= 0; empty: never within the horizon."),
    "irr_vs_api_frac": ("IRR against the API", "share per year",
                        "Rate at which the cash flows of building against the avoided API "
                        "spend are worth 0; no terminal value. Empty: no IRR."),
    "irr_vs_api_with_terminal_frac": ("IRR against the API, with terminal value",
                                      "share per year",
                                      "The same with the book value recovered at the end of "
                                      "the horizon."),
    "usd_per_million_tokens": ("Cost per million tokens", "USD per million tokens",
                               "Levelised: discounted costs net of the terminal value of "
                               "assets still in service / discounted tokens served (input + "
                               "output). The terminal-value credit can put it below every "
                               "period's cash cost."),
    "tokens_served": ("Tokens served", "tokens", "Input + output tokens over the horizon."),
    "tokens_per_kwh": ("Tokens per kWh", "tokens per kWh",
                       "Tokens served per kWh of facility energy."),
    "goodput_per_watt": ("Goodput per watt", "tokens/s per W", "Tokens/s served at peak per W "
                         "of facility power in the last period."),
    "peak_facility_mw": ("Peak facility power", "MW", "Largest total facility power of all "
                         "sites in one period."),
    "peak_it_mw": ("Peak IT power", "MW", "IT power (racks + network) of all sites in the "
                   "period of the peak facility power, each site at its peak hour: peak "
                   "facility power = peak IT power x PUE at the peak hour."),
    "energy_mwh": ("Energy", "MWh", "Facility energy over the horizon."),
    "pue_annual": ("PUE, annual (energy-weighted)", "ratio", "Facility energy / IT energy "
                   "over the horizon (IT = racks + network)."),
    "pue_peak": ("PUE at the peak hour", "ratio", "Peak facility power / peak IT power "
                 "(racks + network) in the hours that size the grid and the building."),
    "power_p99_margin_frac": ("High-percentile power margin", "share",
                              "How much higher the racks' high-percentile (p99) IT power is "
                              "than the serving power the plan sizes at the operating point "
                              "(racks allocated in the period of the facility peak; blank: "
                              "the performance model reported none)."),
    "utilisation_frac": ("Utilisation", "share", "Racks allocated at peak / racks in "
                         "service."),
    "carbon_t": ("Carbon", "tCO2", "Grid emissions of the energy used."),
    "racks_bought": ("Racks bought", "racks", "New racks over the horizon."),
    "unserved_tokens_per_s_peak_max": ("Largest unserved demand", "tokens/s", "Peak tokens/s "
                                       "not served in the worst period (0 = all demand met)."),
    "reserve_frac": ("Reserve capacity", "share", "Racks held for serving headroom, "
                     "availability and N+k spares / racks in service (rack-periods at peak)."),
    "reserve_cost_usd": ("Cost of reserve capacity", "USD (present value)",
                         "Reserve share of the installed rack-periods (discounted) x the "
                         "present value of the fixed costs (all but energy and carbon)."),
    "reserve_cost_frac": ("Reserve capacity share of the NPV", "share",
                          "Cost of reserve capacity / NPV of all costs."),
}

#: Excel number format of each KPI value.
KPI_FORMATS: dict[str, str] = {
    "usd_per_million_tokens": "0.0000", "utilisation_frac": "0.0%", "pue_annual": "0.000",
    "pue_peak": "0.000", "power_p99_margin_frac": "0.0%",
    "peak_facility_mw": "#,##0.0", "peak_it_mw": "#,##0.0", "goodput_per_watt": "#,##0.0",
    "energy_mwh": "#,##0", "carbon_t": "#,##0", "tokens_served": "0.000E+00",
    "reserve_frac": "0.0%", "reserve_cost_frac": "0.0%",
    "usd_per_million_tokens_annualised": "0.0000", "terminal_value_frac": "0.0%",
    "payback_years": "0.0", "irr_vs_api_frac": "0.0%", "irr_vs_api_with_terminal_frac": "0.0%",
}

#: Cost category id -> words (charts, pivots, HTML).
CATEGORY_LABELS: dict[str, str] = {
    "rack_capex": "Racks", "network_capex": "Network", "cooling_capex": "Cooling plant",
    "cdu_capex": "CDUs", "redundancy_capex": "UPS and generators beyond N+1",
    "building_capex": "Buildings (facility capacity)",
    "building_shell": "Building shell", "building_electrical": "Building electrical",
    "building_mechanical": "Building mechanical", "grid_connection": "Grid connection",
    "storage_capex": "Battery storage", "onsite_capex": "On-site generation",
    "onsite_fuel": "On-site fuel and variable O&M",
    "carbon": "Carbon price",
    "maintenance": "Maintenance", "staff": "Operations staff",
    "software": "Software and support", "energy": "Energy", "demand_charge": "Demand charges",
    "unserved_penalty": "Unserved-demand penalty (not paid)",
    "terminal_value": "Terminal value (credit)",
}

#: Units that need a clearer wording in a header.
_UNIT_TEXT = {"see unit column": "see Unit column", "see unit": "see Unit column",
              "see shadow_unit": "see Shadow price unit column"}
_ACRONYMS = {"kw": "kW", "kwh": "kWh", "mw": "MW", "mwh": "MWh", "usd": "USD", "cdu": "CDU",
             "cdus": "CDUs", "pue": "PUE", "it": "IT", "nic": "NIC", "nics": "NICs",
             "id": "id", "lp": "LP", "tco2": "tCO2"}
_UNIT_SUFFIXES = ("usd", "kw", "kwh", "mw", "mwh", "frac", "t")
_IDENT = re.compile(r"^[a-z0-9_]+$")


def kpi_label(kpi: str) -> str:
    """Name of a KPI in words (the id itself for an unknown KPI)."""
    return KPI_LABELS.get(kpi, (words(kpi), "", ""))[0]


def kpi_unit(kpi: str, unit: str = "") -> str:
    """Unit of a KPI as shown (short), falling back to the planner's ``unit`` text."""
    if kpi in KPI_LABELS:
        return KPI_LABELS[kpi][1]
    return unit


def kpi_meaning(kpi: str) -> str:
    """What a KPI means, one sentence ('' when unknown)."""
    return KPI_LABELS.get(kpi, ("", "", ""))[2]


def kpi_format(kpi: str) -> str:
    """Excel number format of a KPI value."""
    return KPI_FORMATS.get(kpi, "#,##0")


def category_label(category: str) -> str:
    """Cost category in words."""
    return CATEGORY_LABELS.get(category, words(category))


def words(name: str) -> str:
    """A snake_case name in words, its unit suffix dropped (``capex_usd`` -> ``Capex``).

    Names that are not snake_case identifiers (a scenario name, say) are returned
    unchanged.
    """
    if not _IDENT.match(name):
        return name
    parts = [p for p in name.split("_") if p]
    while len(parts) > 1 and parts[-1] in _UNIT_SUFFIXES:
        parts.pop()
    text = " ".join(_ACRONYMS.get(p, p) for p in parts)
    return text[:1].upper() + text[1:]


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


def label_of(col: str, table: str | None = None) -> str:
    """Readable name of column ``col`` (of result table ``table``), without unit."""
    if table and col in TABLE_LABELS.get(table, {}):
        return TABLE_LABELS[table][col]
    return LABELS.get(col, words(col))


def header(df: pd.DataFrame, col: str, table: str | None = None) -> str:
    """Header text of ``col``: readable label and unit in brackets."""
    label = label_of(col, table)
    unit = unit_of(df, col)
    return f"{label} [{unit}]" if unit else label


def headers(df: pd.DataFrame, table: str | None = None) -> list[str]:
    """Headers of every column of ``df``."""
    return [header(df, c, table) for c in df.columns]


def column_of(df: pd.DataFrame, text: str, table: str | None = None) -> str:
    """Column of ``df`` whose :func:`header` is ``text`` (inverse of :func:`header`)."""
    for c in df.columns:
        if header(df, c, table) == text:
            return c
    raise KeyError(text)


def number_format(unit: str, col: str = "", integer: bool = False) -> str:
    """Excel number format for a column with ``unit``.

    Parameters
    ----------
    unit : str
    col : str
        Column name (a few columns have their own format).
    integer : bool
        The column holds whole numbers (counts): no decimals.
    """
    u = unit.lower()
    if integer:
        return "#,##0" if col != "period" else "0"
    if col == "discount_factor":
        return "0.0000"
    if col == "rank":
        return "0"
    if col == "tokens_lost_frac":  # capping's losses are hundredths of a per cent
        return "0.000%"
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
    if u.startswith("share"):
        return "0.0%"
    if u.startswith("requests"):
        return "#,##0"
    if u == "wh":
        return "#,##0.000"
    if u.startswith("million tokens"):
        return "#,##0"
    return "#,##0.0###"


def format_number(value: object, excel_format: str) -> str:
    """``value`` as text the way Excel shows it with ``excel_format`` (HTML, console).

    Supports the formats :func:`number_format` and :data:`KPI_FORMATS` produce:
    thousands separators, a fixed number of decimals, optional trailing ``#``
    decimals and percentages. None and NaN give ``''``.
    """
    if value is None or isinstance(value, str):
        return "" if value is None else value
    if isinstance(value, bool):
        return "yes" if value else "no"
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if v != v:
        return ""
    if v in (float("inf"), float("-inf")):
        return str(v)
    if "E+" in excel_format:
        dec = excel_format.split(".")[1].split("E")[0] if "." in excel_format else ""
        return f"{v:.{len(dec)}E}"
    pct = excel_format.endswith("%")
    fmt = excel_format.rstrip("%")
    if pct:
        v *= 100.0
    sep = "," if "," in fmt else ""
    dec = fmt.split(".")[1] if "." in fmt else ""
    fixed, optional = dec.count("0"), dec.count("#")
    text = f"{v:{sep}.{fixed + optional}f}"
    if optional:
        head, _, tail = text.partition(".")
        tail = tail[:fixed] + tail[fixed:].rstrip("0")
        text = head + ("." + tail if tail else "")
    if text.startswith("-") and float(text.replace(",", "").rstrip("%") or 0) == 0:
        text = text[1:]
    return text + ("%" if pct else "")


#: Identifier columns of the result tables that have a name in the catalogs or sites:
#: column -> catalog kinds the id is looked up in (``"sites"``: the site files; an
#: empty tuple: every kind). The workbook writes the name beside each such column.
NAME_COLUMNS: dict[str, tuple[str, ...]] = {
    "site": ("sites",), "rack": ("racks",), "workload": ("workloads",),
    "switch_id": ("switches",), "cdu_ids": ("cdus",), "catalog_id": (), "api": ("api_prices",),
    "model": ("models",), "category": ("cost_categories",),
}

_TRAILING_NOTE = re.compile(r"\s+\([^()]*\)\s*$")


def short_name(name: str) -> str:
    """A catalog name without its trailing note in brackets, for tables and legends.

    ``"Haenam Solaseado AI campus (South Jeolla)"`` -> ``"Haenam Solaseado AI
    campus"``; the full name is on the Assumptions sheet. A name that is only a note
    is kept whole.
    """
    text = " ".join(str(name).split())
    short = _TRAILING_NOTE.sub("", text)
    return short or text


def catalog_names(case: object) -> dict[str, dict[str, str]]:
    """Short names of every catalog entry and site of ``case``: kind -> id -> name.

    ``case`` is a :class:`dcplan.case.Case` (or None: no names). Kinds are the
    catalog's (``racks``, ``switches``...), ``sites`` and ``cost_categories``
    (:data:`CATEGORY_LABELS`).
    """
    if case is None:
        return {}
    out: dict[str, dict[str, str]] = {}
    catalog = getattr(case, "catalog", None)
    for kind, entries in (getattr(catalog, "entries", None) or {}).items():
        out[kind] = {str(i): short_name(getattr(e, "name", "") or i) for i, e in entries.items()}
    out["sites"] = {str(i): short_name(getattr(s, "name", "") or i)
                    for i, s in (getattr(case, "sites", None) or {}).items()}
    out["cost_categories"] = dict(CATEGORY_LABELS)
    return out


def name_of(names: dict[str, dict[str, str]], column: str, ident: object) -> str | None:
    """Name of the id ``ident`` of column ``column`` (see :data:`NAME_COLUMNS`).

    A list of ids (``"a, b"`` or ``"a + b"``) gives the list of names. None when
    the column has no names or an id is unknown (``ident`` is not an id, e.g. a
    total's label).
    """
    if column not in NAME_COLUMNS or ident is None or ident != ident:
        return None
    kinds = NAME_COLUMNS[column] or tuple(k for k in names
                                          if k not in ("sites", "cost_categories"))
    out = []
    for part in _ID_LIST.split(str(ident)):
        if _ID_LIST.fullmatch(part):  # a separator, kept
            out.append(part)
            continue
        name = next((names[k][part] for k in kinds if part in names.get(k, {})), None)
        if name is None:
            return None
        out.append(name)
    return "".join(out) or None


_ID_LIST = re.compile(r"(\s*[,+]\s*)")
