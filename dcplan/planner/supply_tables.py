"""Result tables of storage and on-site generation: the power sources of each site.

``dispatch``: per period, site and hour of the representative days, the facility load
and where its power came from (grid, battery, on-site generation). ``sources``: per
period and site, the sources at the grid's peak hour, the energy of each over the
year, the capacity in service and bought, the fuel, carbon and cost of bridging. Both
exist only for plans offered storage or on-site generation
(:func:`~dcplan.planner.supply.has_supply`).
"""

from __future__ import annotations

import pandas as pd

from dcplan.planner.inputs import PlanInputs
from dcplan.planner.profiles import hour_label
from dcplan.planner.supply import hour_weight, supply_hours
from dcplan.planner.tables import Solution, _frame, _site_power

#: Hours whose grid power is within this of the grid's peak tie with it [kW].
GRID_PEAK_TIE_KW = 1e-6
#: Units of the ``dispatch`` table.
DISPATCH_UNITS = {"weight_frac": "- (share of the year)", "facility_kw": "kW",
                  "served_kw": "kW",
                  "battery_charge_kw": "kW", "battery_discharge_kw": "kW",
                  "battery_soc_kwh": "kWh", "onsite_kw": "kW", "grid_kw": "kW"}
#: Units of the ``sources`` table.
SOURCES_UNITS = {
    "grid_kw_peak": "kW", "facility_kw_at_grid_peak": "kW", "served_kw_at_grid_peak": "kW",
    "battery_discharge_kw_at_grid_peak": "kW", "onsite_kw_at_grid_peak": "kW",
    "battery_kwh": "kWh (usable)", "battery_kw": "kW", "onsite_capacity_kw": "kW",
    "facility_mwh": "MWh", "grid_mwh": "MWh", "battery_discharge_mwh": "MWh",
    "battery_loss_mwh": "MWh", "onsite_mwh": "MWh", "onsite_carbon_t": "tCO2",
    "onsite_fuel_usd": "USD", "onsite_hours_below_min_load": "h (representative hours)"}


def dispatch_table(d: PlanInputs, sol: Solution) -> pd.DataFrame:
    """Hourly power sources of every site offered storage or generation [kW].

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.

    Returns
    -------
    DataFrame
        period, site, hour; weight_frac [-]; facility_kw (as the peak rows count it:
        design-day cooling, headroom racks at serving power), served_kw (the load
        served: annual-average cooling, no headroom), battery_charge_kw,
        battery_discharge_kw, onsite_kw, grid_kw [kW] (grid = served + charge -
        discharge - on-site); battery_soc_kwh [kWh, end of the hour].
    """
    rows = []
    for (s, p) in sorted(sol.grid_peak_kw, key=lambda k: (k[1], k[0])):
        for h in supply_hours(d, p):
            fac = _site_power(d, sol, s, p, False, h, provisioned=True)["facility"]
            served = _site_power(d, sol, s, p, True, h)["facility"]
            ch = sum(sol.storage_charge_kw.get((s, b.id, p, h), 0.0) for b in d.storage.get(s, ()))
            dis = sum(sol.storage_discharge_kw.get((s, b.id, p, h), 0.0)
                      for b in d.storage.get(s, ()))
            soc = sum(sol.storage_soc_kwh.get((s, b.id, p, h), 0.0) for b in d.storage.get(s, ()))
            gen = sum(sol.onsite_kw.get((s, g.id, p, h), 0.0) for g in d.onsite.get(s, ()))
            rows.append(dict(period=d.periods[p].label, site=s, hour=hour_label(h, d.day_names),
                             weight_frac=hour_weight(d, h), facility_kw=fac,
                             served_kw=served,
                             battery_charge_kw=ch, battery_discharge_kw=dis,
                             battery_soc_kwh=soc, onsite_kw=gen,
                             grid_kw=max(0.0, served + ch - dis - gen)))
    return _frame(rows, DISPATCH_UNITS, ["period", "site", "hour", *DISPATCH_UNITS])


def sources_table(d: PlanInputs, sol: Solution, dispatch: pd.DataFrame,
                  power: pd.DataFrame) -> pd.DataFrame:
    """Power sources per period and site: at the grid's peak hour and over the year.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.
    dispatch : DataFrame
        :func:`dispatch_table` [kW].
    power : DataFrame
        The ``power`` table (its ``energy_kwh``: the facility's energy [kWh]).

    Returns
    -------
    DataFrame
        period, site, grid_peak_hour (the hour of the grid's peak; of several at it, the
        one of the largest facility load); the facility load then as the peak rows count
        it and the load served, and the sources then (grid, battery net discharge and
        generation, which add up to the load served) [kW]; capacity in
        service [kWh], [kW]; energy over the period [MWh] (the grid's: the facility's
        annual-average energy plus charge less discharge and generation); on-site carbon [tCO2] and
        fuel with variable O&M [USD]; hours the generation ran above 0 and below its
        minimum stable load [representative hours]. Where a site is offered a flexible
        connection, ``grid_flexible_kw_at_grid_peak``: the part of the grid's peak above
        the firm MW connected (connected less flexible), carried by the flexible MW [kW]
        (the rest of ``grid_kw_peak`` is firm).
    """
    rows = []
    energy = {(r.period, r.site): r.energy_kwh / 1000.0 for r in power.itertuples()}
    for (period, s), part in dispatch.groupby(["period", "site"], sort=False):
        p = next(i for i, per in enumerate(d.periods) if per.label == period)
        # the grid's peak hour; among hours at that peak, the one of the largest load
        # (a battery charging up to the peak before it discharges ties with it)
        near = part[part.grid_kw >= part.grid_kw.max() - GRID_PEAK_TIE_KW]
        top = near.loc[near.facility_kw.idxmax()]
        hours = d.hours(p)

        def mwh(col: str, part=part, hours=hours) -> float:
            """Energy of a dispatch column over the period [MWh]."""
            return float((part[col] * part.weight_frac).sum()) * hours / 1000.0
        gens = d.onsite.get(s, ())
        carbon = fuel = 0.0
        below = 0
        for g in gens:
            cap = sol.onsite_capacity_kw.get((s, g.id, p), 0.0)
            for h in supply_hours(d, p):
                run = sol.onsite_kw.get((s, g.id, p, h), 0.0)
                kwh = run * hour_weight(d, h) * hours
                carbon += kwh * g.carbon_kg_per_kwh / 1000.0
                fuel += kwh * (g.fuel_usd_per_kwh[p] + g.variable_om_usd_per_kwh)
                if 1e-6 < run < g.min_stable_load * g.availability * cap - 1e-6:
                    below += 1
        rows.append(dict(
            period=period, site=s, grid_peak_hour=top.hour,
            grid_kw_peak=sol.grid_peak_kw[s, p], facility_kw_at_grid_peak=top.facility_kw,
            served_kw_at_grid_peak=top.served_kw,
            battery_discharge_kw_at_grid_peak=top.battery_discharge_kw - top.battery_charge_kw,
            onsite_kw_at_grid_peak=top.onsite_kw,
            battery_kwh=sum(sol.storage_energy_kwh.get((s, b.id, p), 0.0)
                            for b in d.storage.get(s, ())),
            battery_kw=sum(sol.storage_power_kw.get((s, b.id, p), 0.0)
                           for b in d.storage.get(s, ())),
            onsite_capacity_kw=sum(sol.onsite_capacity_kw.get((s, g.id, p), 0.0) for g in gens),
            facility_mwh=energy[period, s],
            grid_mwh=energy[period, s] + mwh("battery_charge_kw") - mwh("battery_discharge_kw")
            - mwh("onsite_kw"),
            battery_discharge_mwh=mwh("battery_discharge_kw"),
            battery_loss_mwh=mwh("battery_charge_kw") - mwh("battery_discharge_kw"),
            onsite_mwh=mwh("onsite_kw"), onsite_carbon_t=carbon, onsite_fuel_usd=fuel,
            onsite_hours_below_min_load=below, **_flexible_at_peak(d, sol, s, p)))
    cols = ["period", "site", "grid_peak_hour", *SOURCES_UNITS]
    if any(sd.connection is not None and sd.connection.flexible is not None
           for sd in d.sites.values()):
        cols.insert(cols.index("grid_kw_peak") + 1, FLEX_AT_PEAK)
    return _frame(rows, {**SOURCES_UNITS, FLEX_AT_PEAK: "kW"}, cols)


#: Column of the ``sources`` table a plan offered a flexible connection adds.
FLEX_AT_PEAK = "grid_flexible_kw_at_grid_peak"


def _flexible_at_peak(d: PlanInputs, sol: Solution, s: str, p: int) -> dict:
    """The flexible MW's part of site s's grid peak in period p (empty without an offer).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.
    s : str
        Site id.
    p : int
        Period index (0-based) [-].

    Returns
    -------
    dict
        ``{FLEX_AT_PEAK: kW}``: the grid's peak above the firm MW connected, at most
        the flexible MW [kW]; 0 where the site is offered no flexible part.
    """
    g = d.sites[s].connection
    if g is None or g.flexible is None:
        return {FLEX_AT_PEAK: 0.0}
    flexible = sol.flexible_kw(d, s, p)
    firm = sol.connected_kw(d, s, p) - flexible
    return {FLEX_AT_PEAK: min(flexible, max(0.0, sol.grid_peak_kw[s, p] - firm))}
