"""Exact sizing of the chosen fleet (facility model) against the plan's own figures.

The MILP holds each rack type's fabric as integer switch and link counts per site
and period (:mod:`dcplan.planner.fabric`) and integer CDUs per site and CDU model.
After solving, :func:`dcplan.facility.size_fleet` sizes the real network (the graph,
one fabric per rack type) and cooling (the cooling model's own CDU choice for the fleet,
as in the cooling table and ``dcplan cooling``, and the plant shared by the site) of
every site's fleet in every period, and :func:`sizing_table` sets the two side by side:
switch and link counts agree by construction (``diff`` 0, tested on the shipped
examples); the CDU count and capex differ where the cooling model's choice for the
fleet is not the planning scale's (:mod:`dcplan.planner.cdus` notes it). The network's
power and capex differ where the graph's layout splits a link tier between copper and
optical links differently from the planning scale's mix (the plan prices each tier per
link at that mix), network racks where row ends round up per row; cooling, losses and
PUE are the planner's linear coefficients at the planning scale. Quantities whose
exact figure differs from the plan's by more than :data:`NOTE_FRAC` are named in a
note.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pandas as pd

from dcplan.planner.inputs import PlanInputs
from dcplan.planner.tables import _frame

COLUMNS = ["site", "period", "quantity", "unit", "plan", "exact", "diff", "diff_frac"]
#: Relative difference between exact and plan above which a note names the quantity [-].
NOTE_FRAC = 0.10
#: Quantities left out of the notes (the IT power is the same by construction; the
#: CDUs have their own note, :func:`dcplan.planner.cdus.cdu_notes`).
NOT_NOTED = ("it_kw", "cdu_count", "cdu_capex_usd")
#: Quantities that are integer decisions of the MILP (equal to the exact sizing).
COUNTS = ("leaf_switches", "spine_switches", "core_switches", "nic_leaf_links",
          "leaf_spine_links", "spine_core_links")
#: Unit of each quantity reported by the facility model.
UNITS = {"it_kw": "kW", "network_kw": "kW", "network_capex_usd": "USD",
         "cooling_kw_avg": "kW", "cooling_kw_peak": "kW", "loss_kw_peak": "kW",
         "facility_kw_peak": "kW", "cdu_count": "units", "cdu_capex_usd": "USD",
         "cooling_capex_usd": "USD", "annual_energy_kwh": "kWh", "pue_annual": "-",
         "leaf_switches": "switches", "spine_switches": "switches",
         "core_switches": "switches", "nic_leaf_links": "links",
         "leaf_spine_links": "links", "spine_core_links": "links",
         "network_positions": "positions"}


def _plan_network(d: PlanInputs, network: pd.DataFrame, site: str, period: Any
                  ) -> dict[str, Any]:
    """The plan's network at one site and period: totals and per rack type [kW, USD]."""
    sub = network[(network.site == site) & (network.period == period)] if len(network) \
        else network
    out: dict[str, Any] = {q: 0.0 for q in COUNTS}
    out.update(network_kw=0.0, network_capex_usd=0.0, units=0.0, by_rack={})
    for r in sub.itertuples():
        kw, capex = float(r.network_kw), float(r.network_capex_usd)
        acc = out["by_rack"].setdefault(r.rack, [0.0, 0.0])
        acc[0] += kw
        acc[1] += capex
        out["network_kw"] += kw
        out["network_capex_usd"] += capex
        if r.fabric == "linear":
            continue
        fd = next(f for f in d.fabrics[r.rack] if f.fabric == r.fabric)
        for q in COUNTS:
            out[q] += float(getattr(r, q))
        out["units"] += fd.switch_rack_units * float(
            r.leaf_switches + r.spine_switches + r.core_switches)
    per = d.network_rack_units or 1
    out["network_positions"] = float(math.ceil(out["units"] / per - 1e-9)) \
        if out["units"] else 0.0
    return out


def _exact_network(sized) -> dict[str, float]:
    out = {q: 0.0 for q in COUNTS}
    for net in sized.networks.values():
        for fab, prefix in ((net.backend, ""), (net.frontend, "fe_")):
            out["leaf_switches"] += fab.leaf
            out["spine_switches"] += fab.spine
            out["core_switches"] += fab.core
            for t in ("nic_leaf", "leaf_spine", "spine_core"):
                out[f"{t}_links"] += net.links.get(prefix + t, 0)
    out["network_positions"] = sized.positions.get("network", 0.0)
    return out


def _plan_positions(tables: dict, site: str, period: Any) -> float:
    """Network-rack positions the plan counts at a site and period (power table)."""
    pw = tables.get("power")
    if pw is None or not len(pw) or "network_positions" not in pw:
        return 0.0
    row = pw[(pw.site == site) & (pw.period == period)]
    return float(row.network_positions.iloc[0]) if len(row) else 0.0


def sizing_table(case: Any, d: PlanInputs, tables: dict[str, pd.DataFrame],
                 periods: str = "all") -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Exact network and cooling of the solved fleet per site and period, vs the plan's.

    Parameters
    ----------
    case : Case
        The case the plan was solved from (catalog, sites, optics, oversubscription).
    d : PlanInputs
    tables : dict
        The plan's tables (``fleet``, ``power``, ``network``, ``cooling``).
    periods : {"all", "peak"}
        Every period (default), or each site's peak period only.

    Returns
    -------
    table : DataFrame
        site, period, quantity, unit, plan, exact, diff (exact - plan), diff_frac
        (diff / plan) [-]; plan, exact and diff in the row's ``unit`` [see unit
        column].
    equipment : DataFrame
        Bill of materials of the same sizing: site, period, category (network or
        cooling), fabric (rack type, or 'site'), item (backend_leaf_switch,
        transceiver, cpo_port, copper_link, nic, cdu, liquid_heat_rejection, ...),
        catalog_id, count [units], kw [kW at full load], capex_usd [USD], in_rack
        (True: inside the rack's IT power and price, e.g. NICs).
    notes : list of str
        Problems met while sizing, and quantities off by more than :data:`NOTE_FRAC`.
    """
    from dcplan import facility
    from dcplan.facility.bom import COLUMNS as BOM_COLUMNS
    from dcplan.facility.bom import site_bom

    catalog, sites, scn = case.catalog, case.sites, case.scenario
    fleet = tables["fleet"]
    network = tables.get("network", pd.DataFrame())
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
    off_by: dict[tuple, list] = {}
    # cdu_choice: milp: each site's CDUs are of the model the MILP chose (the cooling
    # table's cdu_ids); per_rack_type: the cooling model chooses for the fleet
    forced: dict = {}
    cool = tables.get("cooling")
    if d.cdu_choice == "milp" and cool is not None and "cdu_ids" in cool:
        forced = {(r.site, r.period): r.cdu_ids for r in cool.itertuples() if r.cdu_ids}
    for site, period in chosen:
        sub = fleet[(fleet.site == site) & (fleet.period == period)]
        mix = {r: int(round(n)) for r, n in zip(sub.rack, sub.installed_racks, strict=True)
               if n > 0}
        if not mix:
            continue
        net = _plan_network(d, network, site, period)
        used = {}
        for r in mix:
            c = d.facility.get((r, site))
            if c is None:
                continue
            kw, capex = net["by_rack"].get(r, (0.0, 0.0))
            used[r] = dataclasses.replace(c, network_kw_per_rack=kw / mix[r],
                                          network_capex_usd_per_rack=capex / mix[r])
        try:
            # CDUs free: the cooling model's own choice for this fleet (the cooling
            # table's, and what 'dcplan cooling' gives); with cdu_choice: milp the
            # site's model (the cooling table's, 'dcplan cooling --cdu MODEL')
            sized = facility.size_fleet(catalog, sites[site], mix, optics=scn.optics,
                                        oversubscription=scn.oversubscription,
                                        coefficients_used=used or None,
                                        cdu_redundancy=d.cdu_redundancy,
                                        cdu_id=forced.get((site, period)) or None)
        except Exception as exc:  # noqa: BLE001 - report, keep the plan
            notes.append(f"exact sizing of {site} in {period} failed: {exc}")
            continue
        bom += [dict(site=site, period=period, **row) for row in site_bom(catalog, sized)]
        plan = dict(sized.linear)
        integer = all(r in d.fabrics for r in mix)  # network_model: integer
        if integer:
            plan.update({q: net[q] for q in (*COUNTS, "network_positions")})
        # CDUs the MILP's rows need for this fleet (those it keeps may be more: a CDU
        # bought is kept when the liquid heat falls; the cooling table's milp_cdus)
        plan["cdu_count"], plan["cdu_capex_usd"] = planner_cdus(
            d, site, mix, forced.get((site, period)) or None)
        exact = dict(sized.exact)
        if integer:
            exact.update(_exact_network(sized))
        else:  # the linear network's positions: per-rack figure x racks (the space row's)
            plan["network_positions"] = _plan_positions(tables, site, period)
            exact["network_positions"] = sized.positions.get("network", 0.0)
        for q, ex in exact.items():
            pl = plan.get(q, 0.0)
            frac = (ex - pl) / pl if pl else None
            rows.append(dict(site=site, period=period, quantity=q, unit=UNITS.get(q, ""),
                             plan=pl, exact=ex, diff=ex - pl, diff_frac=frac))
            if q not in NOT_NOTED and (abs(frac) > NOTE_FRAC if frac is not None
                                       else abs(ex) > 1e-9):
                off_by.setdefault((site, q), []).append((period, pl, ex, frac))
    for (site, q), hits in off_by.items():
        period, pl, ex, frac = max(hits, key=lambda h: abs(h[3] or 0.0))
        pct = f" ({frac:+.0%})" if frac is not None else ""
        notes.append(f"exact sizing of {site}: {q} differs from the plan's figure by more than "
                     f"{NOTE_FRAC:.0%} in {len(hits)} period(s), most in {period}: "
                     f"{_num(pl)} plan vs {_num(ex)} exact [{UNITS.get(q, '')}]{pct}")
    df = _frame(rows, {"plan": "see unit column", "exact": "see unit column",
                       "diff": "see unit column", "diff_frac": "-"}, COLUMNS)
    return df, _frame(bom, bom_units, bom_columns), notes


#: Columns of :func:`bom_table` and their units.
BOM_TABLE_UNITS = {"installed": "units", "new": "units", "removed": "units",
                   "kw": "kW (full load)", "capex_usd": "USD",
                   "new_capex_usd": "USD", "included_kw": "kW (full load)",
                   "included_capex_usd": "USD"}
#: ``purchase`` of a bill-of-materials line: bought on its own, or inside a rack's price
#: and IT power (the rack's catalog ``capex_basis``; NICs: catalogs/nics.yaml).
OWN, IN_RACK = "own", "in_rack"


def bom_table(equipment: pd.DataFrame, fleet: pd.DataFrame, periods: list[str],
              rack_capex_usd: dict[str, float] | None = None) -> pd.DataFrame:
    """Bill of materials by site and period: what is installed and what to order.

    Racks come from the plan's fleet; switches, transceivers, cables, NICs, CDUs,
    heat rejection, UPS and generators from the exact sizing of each site's fleet in
    every period (``sizing_table(..., periods="all")``). ``new`` is what a period adds
    over the one before (to order), ``removed`` what it no longer needs. Racks are
    priced at ``rack_capex_usd`` (rack id -> USD per rack).

    ``purchase`` says whether a line is bought on its own (:data:`OWN`) or comes inside
    a rack's price and IT power (:data:`IN_RACK`: the equipment table's ``in_rack``,
    the NICs). An in-rack line keeps its counts, but its kW and USD are in
    ``included_kw`` and ``included_capex_usd`` only (information: the rack's price and
    power already hold them), and its ``kw``, ``capex_usd`` and ``new_capex_usd`` are
    empty: summing those columns gives what is bought on its own, never the rack's
    parts twice.

    Parameters
    ----------
    equipment : DataFrame
        The ``equipment`` table of :func:`sizing_table` (``periods='all'``): count
        [units], kw [kW], capex_usd [USD], in_rack.
    fleet : DataFrame
        The plan's ``fleet`` table (its ``installed_racks`` [racks]).
    periods : list of str
        Period labels in plan order (what ``new`` and ``removed`` compare).
    rack_capex_usd : dict, optional
        Rack id -> price per rack [USD]; None: racks at 0 USD.

    Returns
    -------
    DataFrame
        site, period, category, item, catalog_id, purchase (``own`` or ``in_rack``),
        installed, new, removed [units], kw [kW at full load], capex_usd [USD,
        installed], new_capex_usd [USD, to order: the growth of the installed capex],
        included_kw [kW], included_capex_usd [USD] (in-rack lines only); sorted by site,
        period, category, item.
    """
    rows: list[dict] = []
    for r in fleet.itertuples():
        n = float(r.installed_racks)
        rows.append(dict(site=r.site, period=r.period, category="racks", item="rack",
                         catalog_id=r.rack, purchase=OWN, installed=n, kw=0.0,
                         capex_usd=n * (rack_capex_usd or {}).get(r.rack, 0.0)))
    inside = equipment.in_rack.astype(bool) if "in_rack" in equipment else \
        pd.Series(False, index=equipment.index)
    for r, in_rack in zip(equipment.itertuples(), inside, strict=True):
        rows.append(dict(site=r.site, period=r.period, category=r.category, item=r.item,
                         catalog_id=r.catalog_id, purchase=IN_RACK if in_rack else OWN,
                         installed=float(r.count), kw=float(r.kw),
                         capex_usd=float(r.capex_usd)))
    cols = ["site", "period", "category", "item", "catalog_id", "purchase", "installed", "new",
            "removed", "kw", "capex_usd", "new_capex_usd", "included_kw", "included_capex_usd"]
    if not rows:
        return _frame([], BOM_TABLE_UNITS, cols)
    keys = ["site", "category", "item", "catalog_id", "purchase"]
    df = pd.DataFrame(rows).groupby(["site", "period", *keys[1:]], as_index=False,
                                    sort=False).sum()
    order = {p: i for i, p in enumerate(periods)}
    df["_p"] = df.period.map(order)
    # every period of each (site, item) so that what disappears shows as removed
    full = []
    for key, sub in df.groupby(keys, sort=False):
        first = int(sub._p.min())
        have = dict(zip(sub._p, sub.itertuples(), strict=True))
        prev = prev_usd = 0.0
        for i in range(first, len(periods)):
            row = have.get(i)
            n = float(row.installed) if row is not None else 0.0
            if row is None and prev == 0:
                continue
            usd = float(row.capex_usd) if row is not None else 0.0
            kw = float(row.kw) if row is not None else 0.0
            # to order: the installed value's growth (count x unit price for a unit
            # item; a plant line, one per site, grows with its heat at count 1)
            full.append(dict(zip(keys, key, strict=True), period=periods[i], _p=i,
                             installed=n, new=max(0.0, n - prev), removed=max(0.0, prev - n),
                             kw=kw, capex_usd=usd, new_capex_usd=max(0.0, usd - prev_usd)))
            prev, prev_usd = n, usd
    out = pd.DataFrame(full).sort_values(["site", "_p", "category", "item", "catalog_id"])
    out = out[(out.installed > 0) | (out.removed > 0)]
    out = set_apart_in_rack(out, out.purchase == IN_RACK, ("new_capex_usd",))
    return _frame(out.to_dict("records"), BOM_TABLE_UNITS, cols)


def set_apart_in_rack(df: pd.DataFrame, inside: pd.Series, also: tuple[str, ...] = ()
                      ) -> pd.DataFrame:
    """Move the kW and USD of the lines inside a rack's price to their own columns.

    Parameters
    ----------
    df : DataFrame
        Bill-of-materials lines with ``kw`` [kW] and ``capex_usd`` [USD].
    inside : Series of bool
        True for a line inside the rack's price and IT power (same index as ``df``) [-].
    also : tuple of str
        More columns emptied on those lines (e.g. ``new_capex_usd``).

    Returns
    -------
    DataFrame
        A copy: ``included_kw`` [kW] and ``included_capex_usd`` [USD] hold those lines'
        kW and USD (empty elsewhere), and their ``kw``, ``capex_usd`` and ``also`` are
        empty, so that a column's sum is what is bought on its own.
    """
    out = df.copy()
    out["included_kw"] = out.kw.where(inside)
    out["included_capex_usd"] = out.capex_usd.where(inside)
    for c in ("kw", "capex_usd", *also):
        out[c] = out[c].mask(inside)
    return out


def planner_cdus(d: PlanInputs, site: str, mix: dict[str, int], cdu_id: str | None = None
                 ) -> tuple[float, float]:
    """CDUs the planner's constraint needs for ``mix`` at ``site``, and their capex.

    Per CDU model c: ``ceil(sum_r liquid_heat_kw_per_rack[r] x n_r / capacity_c) +
    redundancy`` (none without liquid heat).

    Parameters
    ----------
    d : PlanInputs
    site : str
    mix : dict
        Rack id -> racks in service [racks].
    cdu_id : str, optional
        ``cdu_choice: milp``: the site's model, which moves all the liquid heat
        (default: each rack type's ``cdu_id``).

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
            c = cdu_id or rs.cdu_id
            heat[c] = heat.get(c, 0.0) + rs.liquid_heat_kw_per_rack * n
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
