"""Exact sizing of the chosen fleet (facility model) against the linear estimate.

The MILP uses linear per-rack coefficients taken at a planning scale. After solving,
:func:`dcplan.facility.size_fleet` sizes the real network (one fabric per rack type)
and cooling (CDUs and plant shared by the site) of each site's fleet, and compares it
with the linear estimate built from the same coefficients the planner used. Both are
at full rack load. By default each site is sized in its peak period (largest IT
load); ``periods="all"`` sizes every period.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from dcplan.planner.inputs import PlanInputs
from dcplan.planner.results import _frame

COLUMNS = ["site", "period", "quantity", "linear", "exact", "diff", "diff_frac"]
#: Unit of each quantity reported by the facility model.
UNITS = {"it_kw": "kW", "network_kw": "kW", "network_capex_usd": "USD",
         "cooling_kw_avg": "kW", "cooling_kw_peak": "kW", "loss_kw_peak": "kW",
         "facility_kw_peak": "kW", "cdu_count": "units", "cdu_capex_usd": "USD",
         "cooling_capex_usd": "USD", "annual_energy_kwh": "kWh", "pue_annual": "-"}


def sizing_table(scn: Any, d: PlanInputs, catalog: Any, sites: dict,
                 tables: dict[str, pd.DataFrame], periods: str = "peak"
                 ) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Exact vs linear network and cooling per site (and period) of the solved fleet.

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
    for site, sub in power.groupby("site", sort=False):
        labels = list(sub.period) if periods == "all" else \
            [sub.loc[sub.it_kw_peak.idxmax(), "period"]]
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
        for q, ex in sized.exact.items():
            lin = sized.linear.get(q, 0.0)
            rows.append(dict(site=site, period=period, quantity=q, unit=UNITS.get(q, ""),
                             linear=lin, exact=ex, diff=ex - lin,
                             diff_frac=(ex - lin) / lin if lin else None))
    df = _frame(rows, {"linear": "see unit column", "exact": "see unit column",
                       "diff": "see unit column", "diff_frac": "-"},
                ["site", "period", "quantity", "unit", "linear", "exact", "diff", "diff_frac"])
    return df, _frame(bom, bom_units, bom_columns), notes
