"""Exact sizing of the chosen fleet (facility model) against the linear estimate.

The MILP uses linear per-rack coefficients taken at a planning scale. After solving,
:func:`dcplan.facility.size_fleet` sizes the real network and cooling of each site's
fleet in each period; this module tabulates how far the linear estimate was off.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any

import pandas as pd

from dcplan.planner.inputs import PlanInputs
from dcplan.planner.results import _frame

#: Linear-estimate quantities compared with the exact sizing: sizing attribute ->
#: (table, column) of the linear estimate.
COMPARED = {
    "network_kw": ("network", "network_kw"),
    "network_capex_usd": ("network", "network_capex_usd"),
    "cdus": ("cooling", "cdus"),
    "cooling_kw_peak": ("power", "cooling_kw_peak"),
}


def _numeric(obj: Any) -> dict[str, float]:
    if is_dataclass(obj):
        items = {f.name: getattr(obj, f.name) for f in fields(obj)}
    elif hasattr(obj, "model_dump"):
        items = obj.model_dump()
    else:
        items = dict(vars(obj))
    return {k: float(v) for k, v in items.items()
            if isinstance(v, int | float) and not isinstance(v, bool)}


def sizing_table(scn: Any, d: PlanInputs, catalog: Any, sites: dict,
                 tables: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, list[str]]:
    """Exact vs linear network and cooling per (site, period) of the solved fleet.

    Returns
    -------
    table : DataFrame
        site, period, quantity, linear, exact, diff, diff_frac.
    notes : list of str
        Problems met while sizing (the facility model refusing a fleet, ...).
    """
    from dcplan import facility

    fleet = tables["fleet"]
    cols = ["site", "period", "quantity", "linear", "exact", "diff", "diff_frac"]
    notes: list[str] = []
    rows: list[dict] = []
    cache: dict = {}
    lin_tables = {k: tables[k].groupby(["period", "site"]).sum(numeric_only=True)
                  for k in ("network", "cooling", "power") if len(tables[k])}
    for (period, site), sub in fleet.groupby(["period", "site"], sort=False):
        mix = {r: int(round(n)) for r, n in zip(sub.rack, sub.installed_racks, strict=True)
               if n > 0}
        if not mix:
            continue
        key = (site, tuple(sorted(mix.items())))
        if key not in cache:
            try:
                cache[key] = facility.size_fleet(catalog, sites[site], mix, optics=scn.optics,
                                                 oversubscription=scn.oversubscription)
            except NotImplementedError:
                return _frame([], {}, cols), ["exact sizing skipped: facility.size_fleet "
                                              "is not implemented"]
            except Exception as exc:  # noqa: BLE001 - report, keep the plan
                notes.append(f"exact sizing of {site} {period} failed: {exc}")
                cache[key] = None
        exact = cache[key]
        if exact is None:
            continue
        values = _numeric(exact)
        for attr, (table, col) in COMPARED.items():
            if attr not in values or table not in lin_tables:
                continue
            lin = float(lin_tables[table][col].get((period, site), 0.0))
            ex = values[attr]
            rows.append(dict(site=site, period=period, quantity=attr, linear=lin, exact=ex,
                             diff=ex - lin, diff_frac=(ex - lin) / lin if lin else None))
    return _frame(rows, {"linear": "unit of quantity", "exact": "unit of quantity"}, cols), notes
