"""The inputs behind a plan, with provenance, for the Assumptions sheet.

:func:`assumptions_table` lists every input figure a plan used (from the
:class:`~dcplan.case.Case` it was solved from), with unit, source, date, estimate note
and scenario override.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pandas as pd

from dcplan.errors import display_path

#: Columns of :func:`assumptions_table`.
ASSUMPTION_COLUMNS = ["section", "kind", "id", "name", "field", "value", "unit", "source",
                      "as_of", "estimate", "override"]

_META = ("id", "name", "source", "as_of", "estimates", "notes")


# ----------------------------------------------------------------------------------------
# Units of input fields (field names carry their unit, see dcplan.schema)
# ----------------------------------------------------------------------------------------

_SUFFIX_UNITS = [
    ("_usd_per_mw", "USD/MW"), ("_usd_per_kw", "USD/kW"), ("_usd", "USD"),
    ("_g_per_kwh", "gCO2/kWh"), ("_per_kw_month", "{cur}/(kW month)"),
    ("_price_per_kwh", "{cur}/kWh"), ("_kw_per_kw_heat", "kW/kW"), ("_per_k", "1/K"),
    ("_frac_per_year", "1/yr"), ("_frac", "fraction 0..1"), ("_efficiency", "fraction 0..1"),
    ("_kw", "kW"), ("_mw", "MW"), ("_w", "W"), ("_gb_per_s", "GB/s"), ("_tb_per_s", "TB/s"),
    ("_gb", "GB"), ("_gbps", "Gb/s"), ("_tflops", "TFLOPS"), ("_c", "degC"), ("_k", "K"),
    ("_years", "years"), ("_months", "months"), ("_tokens", "tokens"), ("_ms", "ms"),
    ("_s", "s"), ("_b", "billion"), ("_m", "m"), ("_rate", "1/yr"),
]
_NAMED_UNITS = {
    "rack_positions": "positions", "positions": "positions", "ports": "ports",
    "accelerators_per_rack": "accelerators", "scaleup_domain": "accelerators",
    "scaleout_rails": "rails", "scaleout_nics_per_accelerator": "NICs per accelerator",
    "gbps": "Gb/s", "first_available": "date", "layers": "count", "attention_heads": "count",
    "kv_heads": "count", "experts_total": "count", "experts_active": "count",
    "shared_experts": "count", "moe_layers": "count", "sliding_window_layers": "count",
    "head_dim": "count", "hidden_size": "count", "ffn_size": "count",
    "expert_ffn_size": "count", "vocab_size": "count", "kv_latent_dim": "count",
    "input_tokens_mean": "tokens", "output_tokens_mean": "tokens",
    "oversubscription": "ratio", "cdu_redundancy": "spare CDUs per site and model",
    "network_model": "-", "peak_to_average": "ratio",
    "unserved_penalty_usd_per_million_tokens": "USD per million tokens",
    "discount_rate": "1/yr", "annual_growth": "1/yr", "time_limit_s": "s", "gap": "fraction",
    "dry_bulb_mean_c": "degC", "dry_bulb_max_c": "degC", "dry_bulb_min_c": "degC",
    "rh_frac": "fraction 0..1", "month": "month", "hours": "h",
    "lift_sensitivity_per_k": "1/K",
}


def field_unit(field: str, currency: str = "USD") -> str:
    """Return the unit of an input field from its name (``capex_usd`` -> ``USD``)."""
    leaf = field.rsplit(".", 1)[-1].split("[", 1)[0]
    if leaf in _NAMED_UNITS:
        return _NAMED_UNITS[leaf]
    for suffix, unit in _SUFFIX_UNITS:
        if leaf.endswith(suffix):
            return unit.format(cur=currency)
    return "-"


#: A list of at least this many records with the same scalar fields is listed as one
#: row per field (the values in order) instead of one row per record and field.
TABLE_AS_ROWS_MIN = 4


def _flatten(prefix: str, value: Any) -> list[tuple[str, Any]]:
    """Flatten ``{a: {b: 1}}`` to ``[("a.b", 1)]``.

    List items become ``a[1]``, ``a[2]``, except tables (:data:`TABLE_AS_ROWS_MIN`):
    ``[{m: 1, t: 5}, {m: 2, t: 6}, ...]`` gives
    ``[("a.m", "1, 2, ..."), ("a.t", "5, 6, ...")]``.
    """
    if hasattr(value, "model_dump"):
        value = value.model_dump()
    if isinstance(value, dict):
        out = []
        for k, v in value.items():
            key = f"{prefix}.{k}" if prefix and not isinstance(k, int) else (
                f"{prefix}[{k}]" if prefix else str(k))
            out += _flatten(key, v)
        return out
    if isinstance(value, list | tuple):
        if all(not isinstance(v, dict | list | tuple) and not hasattr(v, "model_dump")
               for v in value):
            return [(prefix, ", ".join(str(getattr(v, "value", v)) for v in value))] \
                if value else []
        recs = [v.model_dump() if hasattr(v, "model_dump") else v for v in value]
        if len(recs) >= TABLE_AS_ROWS_MIN and all(
                isinstance(r, dict) and r.keys() == recs[0].keys()
                and not any(isinstance(x, dict | list | tuple) for x in r.values())
                for r in recs):
            # a table (e.g. twelve months of climate): one row per column, values in order
            return [(f"{prefix}.{k}", ", ".join(str(getattr(r[k], "value", r[k])) for r in recs))
                    for k in recs[0]]
        out = []
        for i, v in enumerate(value, start=1):
            out += _flatten(f"{prefix}[{i}]", v)
        return out
    return [(prefix, getattr(value, "value", value))]


def _scalar(v: Any) -> Any:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int | float | str) or v is None:
        return v
    return str(v)


def _entry_rows(section: str, kind: str, entry: Any, raw: Any, currency: str = "USD"
                ) -> list[dict[str, Any]]:
    estimates = dict(getattr(entry, "estimates", None) or {})
    raw_vals = dict(_flatten("", raw)) if raw is not None else {}
    rows = []
    for fld in type(entry).model_fields:
        if fld in _META:
            continue
        for key, v in _flatten(fld, getattr(entry, fld)):
            if v is None:
                continue
            was = raw_vals.get(key, v)
            override = "" if was == v else f"scenario override (catalog/site value {was})"
            est = estimates.get(key.split(".", 1)[0].split("[", 1)[0], "")
            rows.append(dict(section=section, kind=kind, id=entry.id, name=entry.name,
                             field=key, value=_scalar(v), unit=field_unit(key, currency),
                             source=getattr(entry, "source", ""), as_of=entry.as_of,
                             estimate=f"estimate: {est}" if est else "", override=override))
    return rows


def _used_entries(src: Any, inputs: Any, equipment: set[str] | None = None
                  ) -> list[tuple[str, str]]:
    """(kind, id) of the catalog entries behind the plan.

    ``equipment``: catalog ids the plan's sizing chose (switches, optics, heat
    rejection, UPS, generators); without it every entry the facility models choose
    among is listed.
    """
    cat = src.catalog
    scn = src.scenario
    racks = list(inputs.racks) if inputs is not None else (scn.racks or list(cat.racks))
    wls = list(inputs.workloads) if inputs is not None else scn.workload_ids()
    used: list[tuple[str, str]] = []

    def add(kind: str, ident: Any) -> None:
        if ident and (kind, ident) not in used and ident in cat.entries.get(kind, {}):
            used.append((kind, ident))

    for r in racks:
        add("racks", r)
    for r in racks:
        e = cat.get("racks", r)
        add("accelerators", e.accelerator)
        add("nics", e.nic)
    for w in wls:
        add("workloads", w)
    for w in wls:
        add("models", cat.get("workloads", w).model)
    if inputs is not None:
        for rs in inputs.rack_site.values():
            add("cdus", rs.cdu_id)
    for ident in cat.entries.get("cdus", {}):  # the cooling model's CDUs for the fleet
        if equipment is not None and ident in equipment:
            add("cdus", ident)
    # The facility models choose among these (see docs/facility.md).
    for kind in ("heat_rejection", "switches", "optics", "ups", "generators"):
        for ident in cat.entries.get(kind, {}):
            if equipment is None or ident in equipment:
                add(kind, ident)
    return used


def _scenario_rows(src: Any) -> list[dict[str, Any]]:
    scn = src.scenario
    where = display_path(src.path) if src.path else "scenario"
    as_of = ""
    if src.path and Path(src.path).exists():
        as_of = dt.date.fromtimestamp(Path(src.path).stat().st_mtime).isoformat()
    data = scn.model_dump(exclude={"catalog_dir", "sites_dir", "overrides", "name",
                                   "description"})
    rows = [dict(section="scenario", kind="scenario", id=scn.name, name=scn.name,
                 field="description", value=scn.description, unit="-", source=where,
                 as_of=as_of, estimate="", override="")]
    for key, v in _flatten("", data):
        if v is None or v == "":
            continue
        unit = field_unit(key)
        if key.startswith("existing_built_mw"):
            unit = "MW"
        elif key.startswith("budget_usd"):
            unit = "USD"
        elif key.startswith("exchange_rates") or ".exchange_rates_usd_per_unit" in key:
            unit = "USD per unit of currency"
        elif key.startswith("demand.table") or key.endswith(".start"):
            unit = scn.demand.unit.replace("_", " ") if key.startswith("demand") else unit
        rows.append(dict(section="scenario", kind="scenario", id=scn.name, name=scn.name,
                         field=key, value=_scalar(v), unit=unit, source=where, as_of=as_of,
                         estimate="", override=""))
    for i, ov in enumerate(scn.overrides, start=1):
        what = ", ".join(f"{k} {getattr(ov, k)}" for k in ("set", "scale", "add", "from_year")
                         if getattr(ov, k) is not None)
        rows.append(dict(section="scenario override", kind=ov.kind, id=ov.id, name="",
                         field=ov.field, value=what, unit=field_unit(ov.field),
                         source=f"{where} (overrides[{i}])", as_of=as_of, estimate="",
                         override="applied to the catalog/site rows marked below"))
    return rows


def _derived_rows(inputs: Any) -> list[dict[str, Any]]:
    """Coefficients the planner derived from the models (per rack, site, workload)."""
    rows = []

    def row(kind, ident, field, value, unit, source, estimate=""):
        rows.append(dict(section="derived coefficient", kind=kind, id=ident, name="",
                         field=field, value=value, unit=unit, source=source, as_of="",
                         estimate=estimate, override=""))

    perf_src = "dcplan performance model (docs/perf.md)"
    for (r, w), p in sorted(inputs.perf.items()):
        row("rack x workload", f"{r} / {w}", "goodput_tokens_per_s_per_rack",
            p.goodput_tokens_per_s, "tokens/s", perf_src, p.extrapolation)
        row("rack x workload", f"{r} / {w}", "rack_power_kw_at_operating_point", p.power_kw,
            "kW", perf_src)
        if p.power_p99_kw > 0:
            row("rack x workload", f"{r} / {w}", "rack_power_kw_p99", p.power_p99_kw, "kW",
                perf_src + ", high percentile: exceeded 1% of the time")
    fac_src = "dcplan facility model at the planning scale (docs/facility.md)"
    for (r, s), rs in sorted(inputs.rack_site.items()):
        ident = f"{r} @ {s}"
        if not rs.allowed:
            row("rack x site", ident, "not_allowed", rs.reason, "-", fac_src)
            continue
        for fld, unit in (("network_kw_per_rack", "kW"), ("network_capex_usd_per_rack", "USD"),
                          ("cooling_kw_per_it_kw_avg", "kW/kW"),
                          ("cooling_kw_per_it_kw_peak", "kW/kW"), ("loss_frac", "fraction"),
                          ("liquid_heat_kw_per_rack", "kW"), ("cdu_id", "-"),
                          ("cdu_capacity_kw", "kW"), ("cdu_capex_usd", "USD"),
                          ("cooling_capex_usd_per_kw", "USD/kW"), ("pue_annual", "-")):
            row("rack x site", ident, fld, getattr(rs, fld), unit, fac_src)
        # with tiers the MILP prices the tier of the racks, not these per-period figures
        for i, n in enumerate(() if rs.network_tiers else rs.network_racks_by_period):
            label = inputs.periods[i].label
            src = (f"dcplan facility model at {n:,} racks, what the plan's LP relaxation "
                   "holds there (network_model linear; docs/planner.md, Linear network)")
            row("rack x site", f"{ident} in {label}", "network_kw_per_rack",
                rs.network_kw(i), "kW", src)
            row("rack x site", f"{ident} in {label}", "network_capex_usd_per_rack",
                rs.network_capex(i), "USD", src)
        for lo, hi, kw, capex, _pos in rs.network_tiers:
            src = ("dcplan facility model, one tier of the fabric (network_model tiered; "
                   "docs/planner.md, Tiered network)")
            where = f"{ident} at {lo:,}-{hi:,} racks"
            row("rack x site", where, "network_kw_per_rack", kw, "kW", src)
            row("rack x site", where, "network_capex_usd_per_rack", capex, "USD", src)
    site_src = "site data converted to USD with the scenario's exchange rate"
    for s, sd in inputs.sites.items():
        for fld, unit in (("energy_usd_per_kwh", "USD/kWh"),
                          ("demand_charge_usd_per_kw_month", "USD/(kW month)"),
                          ("carbon_kg_per_kwh", "kgCO2/kWh"),
                          ("build_capex_usd_per_kw", "USD/kW"), ("built_kw_initial", "kW")):
            row("site (in USD)", s, fld, getattr(sd, fld), unit, site_src)
    for w, wd in inputs.workloads.items():
        row("workload", w, "peak_factor", wd.peak_factor, "ratio", "scenario demand")
        row("workload", w, "input_frac", wd.input_frac, "fraction", "workload catalog")
    return rows


def equipment_ids(tables: dict[str, pd.DataFrame]) -> set[str] | None:
    """Catalog ids in a plan's equipment table (None when it has none)."""
    eq = tables.get("equipment")
    if eq is None or not len(eq):
        return None
    return {part.strip() for ident in eq.catalog_id.dropna().astype(str)
            for part in ident.split("+") if part.strip()}


def assumptions_table(src: Any, inputs: Any = None, equipment: set[str] | None = None,
                      power_basis: str | None = None) -> pd.DataFrame:
    """Every input figure behind a plan, one per row.

    Parameters
    ----------
    src : Case, optional
        Scenario, catalogs and sites (None: only the planner's derived inputs).
    inputs : PlanInputs, optional
        The planner's inputs (``result.inputs``): selects the entries used and adds
        the derived coefficients.
    equipment : set of str, optional
        Catalog ids the plan's exact sizing chose (:func:`equipment_ids`): of the
        switches, optics, heat-rejection, UPS and generator entries only these are
        listed (default: all of them).
    power_basis : str, optional
        The plan's power basis in words (:attr:`~dcplan.planner.PlanResult.power_basis`):
        the first row when given.

    Returns
    -------
    DataFrame
        Columns :data:`ASSUMPTION_COLUMNS`: section, kind, id, name, field, value,
        unit, source, as_of (date of the figure), estimate (how an estimated figure
        was estimated), override (set when the scenario changed the figure).
    """
    rows: list[dict[str, Any]] = []
    if power_basis is not None:
        name = src.scenario.name if src is not None else ""
        rows.append(dict(section="plan", kind="power basis", id=name, name=name,
                         field="power_basis", value=power_basis, unit="-",
                         source="scenario peak_power; dcplan performance model (docs/perf.md)",
                         as_of="", estimate="", override=""))
    if src is not None:
        rows += _scenario_rows(src)
        for kind, ident in _used_entries(src, inputs, equipment):
            raw = src.base_catalog.entries.get(kind, {}).get(ident)
            rows += _entry_rows("catalog", kind, src.catalog.get(kind, ident), raw)
        site_ids = list(inputs.sites) if inputs is not None else list(src.scenario.sites)
        for s in site_ids:
            site = src.sites[s]
            rows += _entry_rows("site", "sites", site, src.base_sites.get(s), site.currency)
        try:
            from dcplan.facility.assumptions import assumptions

            for section, values in assumptions().items():
                if not isinstance(values, dict):
                    continue
                source = str(values.get("source", "dcplan/facility/assumptions.yaml"))
                for key, v in values.items():
                    if key == "source":
                        continue
                    rows.append(dict(section="facility model assumption", kind=section,
                                     id=section, name="", field=key, value=_scalar(v),
                                     unit=field_unit(key), source=source,
                                     as_of="", estimate="", override=""))
        except Exception:  # noqa: BLE001 - optional extra rows
            pass
    if inputs is not None:
        rows += _derived_rows(inputs)
    df = pd.DataFrame(rows, columns=ASSUMPTION_COLUMNS)
    for c in ASSUMPTION_COLUMNS:
        if c != "value":
            df[c] = df[c].fillna("").astype(str)
    return df
