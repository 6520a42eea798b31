"""Exact sizing of the chosen fleet (facility model) against the linear estimate.

The MILP uses linear per-rack coefficients taken at a planning scale. After solving,
:func:`dcplan.facility.size_fleet` sizes the real network (one fabric per rack type)
and cooling (CDUs and plant shared by the site) of each site's fleet, and compares it
with the linear estimate built from the same coefficients the planner used. Both are
at full rack load. By default each site is sized in its peak period (largest IT
load); ``periods="all"`` sizes every period.

The linear CDU figures are the planner's own: per site and CDU model,
``ceil(liquid heat at full load / capacity) + redundancy`` (the ``cdu_heat``
constraint at its tightest), not the per-rack average of the planning scale (which
spreads the redundant CDUs over the planning-scale racks and so multiplies them with
the fleet). Quantities whose exact figure differs from the linear one by more than
:data:`NOTE_FRAC` are named in a note.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from dcplan.planner.inputs import PlanInputs
from dcplan.planner.results import _frame

COLUMNS = ["site", "period", "quantity", "linear", "exact", "diff", "diff_frac"]
#: Relative difference between exact and linear above which a note names the quantity [-].
NOTE_FRAC = 0.10
#: Quantities left out of the notes (the IT power is the same by construction).
NOT_NOTED = ("it_kw",)
#: Unit of each quantity reported by the facility model.
UNITS = {"it_kw": "kW", "network_kw": "kW", "network_capex_usd": "USD",
         "cooling_kw_avg": "kW", "cooling_kw_peak": "kW", "loss_kw_peak": "kW",
         "facility_kw_peak": "kW", "cdu_count": "units", "cdu_capex_usd": "USD",
         "cooling_capex_usd": "USD", "annual_energy_kwh": "kWh", "pue_annual": "-"}


def sizing_table(case: Any, d: PlanInputs, tables: dict[str, pd.DataFrame],
                 periods: str = "peak") -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Exact vs linear network and cooling per site of the solved fleet, and its equipment.

    The comparison (``table``, and a note where they differ by more than
    :data:`NOTE_FRAC`) is at each site's peak period; the equipment is listed for every
    period with ``periods="all"`` (for the bill of materials, :func:`bom_table`), else
    for the peak period too.

    Parameters
    ----------
    case : Case
        The case the plan was solved from (catalog, sites, optics, oversubscription).
    d : PlanInputs
    tables : dict
        The plan's tables (``fleet``, ``power``).
    periods : {"peak", "all"}

    Returns
    -------
    table : DataFrame
        site, period, quantity, unit, linear, exact, diff (exact - linear), diff_frac
        (diff / linear).
    equipment : DataFrame
        Bill of materials of the same sizing: site, period, category (network or
        cooling), fabric (rack type, or 'site'), item (backend_leaf_switch,
        transceiver, cpo_port, copper_link, nic, cdu, liquid_heat_rejection, ...),
        catalog_id, count [units], kw [kW at full load], capex_usd [USD], in_rack
        (True: inside the rack's IT power and price, e.g. NICs).
    notes : list of str
        Problems met while sizing.
    """
    from dcplan import facility
    from dcplan.facility.bom import COLUMNS as BOM_COLUMNS
    from dcplan.facility.bom import site_bom

    catalog, sites, scn = case.catalog, case.sites, case.scenario
    fleet = tables["fleet"]
    notes: list[str] = []
    rows: list[dict] = []
    bom: list[dict] = []
    bom_units = {c: u for c, u in BOM_COLUMNS.items() if u}
    bom_columns = ["site", "period", *BOM_COLUMNS]
    if not len(fleet):
        return _frame([], {}, COLUMNS), _frame([], bom_units, bom_columns), notes
    power = tables["power"]
    chosen = []
    peak_of: dict[str, Any] = {}
    for site, sub in power.groupby("site", sort=False):
        peak_of[site] = sub.loc[sub.it_kw_peak.idxmax(), "period"]
        labels = list(sub.period) if periods == "all" else [peak_of[site]]
        chosen += [(site, p) for p in labels]
    for site, period in chosen:
        sub = fleet[(fleet.site == site) & (fleet.period == period)]
        mix = {r: int(round(n)) for r, n in zip(sub.rack, sub.installed_racks, strict=True)
               if n > 0}
        if not mix:
            continue
        used = {r: d.facility[r, site] for r in mix if (r, site) in d.facility}
        try:
            sized = facility.size_fleet(catalog, sites[site], mix, optics=scn.optics,
                                        oversubscription=scn.oversubscription,
                                        coefficients_used=used or None)
        except Exception as exc:  # noqa: BLE001 - report, keep the plan
            notes.append(f"exact sizing of {site} in {period} failed: {exc}")
            continue
        bom += [dict(site=site, period=period, **row) for row in site_bom(catalog, sized)]
        linear = dict(sized.linear)
        linear["cdu_count"], linear["cdu_capex_usd"] = planner_cdus(d, site, mix)
        off = []
        if period != peak_of.get(site):
            continue  # the comparison (and its note) at each site's peak period only
        for q, ex in sized.exact.items():
            lin = linear.get(q, 0.0)
            frac = (ex - lin) / lin if lin else None
            rows.append(dict(site=site, period=period, quantity=q, unit=UNITS.get(q, ""),
                             linear=lin, exact=ex, diff=ex - lin, diff_frac=frac))
            if q not in NOT_NOTED and (abs(frac) > NOTE_FRAC if frac is not None else ex > 0):
                pct = f" ({frac:+.0%})" if frac is not None else ""
                off.append(f"{q} {_num(lin)} linear vs {_num(ex)} exact "
                           f"[{UNITS.get(q, '')}]{pct}")
        if off:
            notes.append(f"exact sizing of {site} in {period} differs from the planner's linear "
                         f"estimate by more than {NOTE_FRAC:.0%}: " + "; ".join(off))
    df = _frame(rows, {"linear": "see unit column", "exact": "see unit column",
                       "diff": "see unit column", "diff_frac": "-"},
                ["site", "period", "quantity", "unit", "linear", "exact", "diff", "diff_frac"])
    return df, _frame(bom, bom_units, bom_columns), notes


#: Columns of :func:`bom_table` and their units.
BOM_TABLE_UNITS = {"installed": "units", "new": "units", "removed": "units",
                   "kw": "kW (full load)", "capex_usd": "USD",
                   "new_capex_usd": "USD"}


def bom_table(equipment: pd.DataFrame, fleet: pd.DataFrame, periods: list[str],
              rack_capex_usd: dict[str, float] | None = None) -> pd.DataFrame:
    """Bill of materials by site and period: what is installed and what to order.

    Racks come from the plan's fleet; switches, transceivers, cables, NICs, CDUs,
    heat rejection, UPS and generators from the exact sizing of each site's fleet in
    every period (``sizing_table(..., periods="all")``). ``new`` is what a period adds
    over the one before (to order), ``removed`` what it no longer needs. Racks are
    priced at ``rack_capex_usd`` (rack id -> USD per rack).

    Returns
    -------
    DataFrame
        site, period, category, item, catalog_id, installed, new, removed [units], kw
        [kW at full load], capex_usd [USD, installed], new_capex_usd [USD, to order];
        sorted by site, period, category, item.
    """
    rows: list[dict] = []
    for r in fleet.itertuples():
        n = float(r.installed_racks)
        rows.append(dict(site=r.site, period=r.period, category="racks", item="rack",
                         catalog_id=r.rack, installed=n, kw=0.0,
                         capex_usd=n * (rack_capex_usd or {}).get(r.rack, 0.0)))
    for r in equipment.itertuples():
        rows.append(dict(site=r.site, period=r.period, category=r.category, item=r.item,
                         catalog_id=r.catalog_id, installed=float(r.count), kw=float(r.kw),
                         capex_usd=float(r.capex_usd)))
    cols = ["site", "period", "category", "item", "catalog_id", "installed", "new", "removed",
            "kw", "capex_usd", "new_capex_usd"]
    if not rows:
        return _frame([], BOM_TABLE_UNITS, cols)
    df = pd.DataFrame(rows).groupby(["site", "period", "category", "item", "catalog_id"],
                                    as_index=False, sort=False).sum()
    order = {p: i for i, p in enumerate(periods)}
    df["_p"] = df.period.map(order)
    keys = ["site", "category", "item", "catalog_id"]
    # every period of each (site, item) so that what disappears shows as removed
    full = []
    for key, sub in df.groupby(keys, sort=False):
        first = int(sub._p.min())
        have = dict(zip(sub._p, sub.itertuples(), strict=True))
        prev = 0.0
        for i in range(first, len(periods)):
            row = have.get(i)
            n = float(row.installed) if row is not None else 0.0
            if row is None and prev == 0:
                continue
            unit = row.capex_usd / row.installed if row is not None and row.installed else 0.0
            new = max(0.0, n - prev)
            full.append(dict(zip(keys, key, strict=True), period=periods[i], _p=i,
                             installed=n, new=new, removed=max(0.0, prev - n),
                             kw=float(row.kw) if row is not None else 0.0,
                             capex_usd=float(row.capex_usd) if row is not None else 0.0,
                             new_capex_usd=new * unit))
            prev = n
    out = pd.DataFrame(full).sort_values(["site", "_p", "category", "item", "catalog_id"])
    out = out[(out.installed > 0) | (out.removed > 0)]
    return _frame(out.to_dict("records"), BOM_TABLE_UNITS, cols)


def planner_cdus(d: PlanInputs, site: str, mix: dict[str, int]) -> tuple[float, float]:
    """CDUs the planner's constraint needs for ``mix`` at ``site``, and their capex.

    Per CDU model c: ``ceil(sum_r liquid_heat_kw_per_rack[r] x n_r / capacity_c) +
    redundancy`` (none without liquid heat).

    Parameters
    ----------
    d : PlanInputs
    site : str
    mix : dict
        Rack id -> racks in service [racks].

    Returns
    -------
    count : float
        [units], redundancy included.
    capex_usd : float
        [USD].
    """
    heat: dict[str, float] = {}
    for r, n in mix.items():
        rs = d.rack_site.get((r, site))
        if rs is not None and rs.cdu_id and rs.liquid_heat_kw_per_rack > 0:
            heat[rs.cdu_id] = heat.get(rs.cdu_id, 0.0) + rs.liquid_heat_kw_per_rack * n
    count = capex = 0.0
    for c, kw in heat.items():
        if kw <= 0:
            continue
        cd = d.cdu_data(site, c)
        k = math.ceil(kw / cd.cdu_capacity_kw - 1e-9) + d.cdu_redundancy
        count += k
        capex += k * cd.cdu_capex_usd
    return float(count), capex


def _num(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.4g}"
