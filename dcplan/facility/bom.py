"""Bill of materials of a sized site: network, cooling and power equipment, item by item.

Rows come from the exact sizing (:func:`dcplan.facility.size_fleet`); their kW and
USD add up to the sizing's totals (``network_kw``, ``network_capex_usd``, cooling
capex, the redundancy plants' capex and losses), which the tests check.
"""

from __future__ import annotations

from typing import Any

from dcplan.facility.network import NetworkResult

#: Columns of a bill-of-materials row, with units.
COLUMNS = {
    "category": "",       # network | cooling | power
    "fabric": "",         # rack type whose fabric it belongs to, or 'site'
    "item": "",           # leaf_switch, transceiver, cdu, ...
    "catalog_id": "",
    "count": "units",
    "kw": "kW",           # electric power at full load
    "capex_usd": "USD",
    "in_rack": "",        # True: already inside the rack's IT power and price
}


def _row(category, fabric, item, catalog_id, count, kw, capex, in_rack=False) -> dict:
    return {"category": category, "fabric": fabric, "item": item, "catalog_id": catalog_id,
            "count": count, "kw": kw, "capex_usd": capex, "in_rack": in_rack}


def network_bom(catalog: Any, net: NetworkResult) -> list[dict]:
    """Network items of one rack type's fabric.

    Parameters
    ----------
    catalog : Catalog
    net : NetworkResult

    Returns
    -------
    list of dict
        Rows with :data:`COLUMNS`: switches by fabric and tier, transceivers by
        type, co-packaged optical ports, copper cables, and the NICs (``in_rack``:
        counted in the rack's IT power and price, not in the network's).
    """
    rows = []
    for fabric, tiers, switch_id in (("backend", net.backend, net.switch_id),
                                     ("frontend", net.frontend, net.frontend_switch_id)):
        sw = catalog.get("switches", switch_id) if switch_id else None
        for tier in ("leaf", "spine", "core"):
            n = getattr(tiers, tier)
            if n and sw is not None:
                rows.append(_row("network", net.rack_id, f"{fabric}_{tier}_switch", sw.id, n,
                                 n * sw.power_w / 1000.0, n * sw.capex_usd))
    for optic_id, n in net.transceivers.items():
        o = catalog.get("optics", optic_id)
        rows.append(_row("network", net.rack_id, "transceiver", o.id, n,
                         n * o.power_w / 1000.0, n * o.capex_usd))
    if net.cpo_ports:
        o = catalog.get("optics", net.cpo_optic_id)
        rows.append(_row("network", net.rack_id, "cpo_port", o.id, net.cpo_ports,
                         net.cpo_ports * o.power_w / 1000.0, net.cpo_ports * o.capex_usd))
    if net.copper_links:
        rows.append(_row("network", net.rack_id, "copper_link", "", net.copper_links,
                         net.copper_kw, net.copper_capex_usd))
    nic = catalog.get("racks", net.rack_id).nic
    n_nics = round(net.nic_capex_usd / catalog.get("nics", nic).capex_usd) \
        if catalog.get("nics", nic).capex_usd else 0
    rows.append(_row("network", net.rack_id, "nic", nic, n_nics, net.nic_kw,
                     net.nic_capex_usd, in_rack=True))
    return rows


def cooling_bom(catalog: Any, cool: Any) -> list[dict]:
    """Cooling items of one site (:class:`~dcplan.facility.cooling.CoolingResult`).

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs.
    cool : CoolingResult
        The site's cooling.

    Returns
    -------
    list of dict
        CDUs (count includes the redundant units; kW is pump power), the heat
        rejection of the liquid loop and of the air side (kW is electric power on the
        design day), and the air handlers (CRAH fans).
    """
    rows = []
    if cool.cdu_count:
        rows.append(_row("cooling", "site", "cdu", cool.cdu_id, cool.cdu_count, cool.pump_kw,
                         cool.cdu_count * cool.cdu_capex_usd))
    for item, plant, heat in (("liquid_heat_rejection", cool.liquid_plant, cool.liquid_heat_kw),
                              ("air_heat_rejection", cool.air_plant, cool.air_heat_kw)):
        if heat <= 0:
            continue
        ids = " + ".join(i for i in (plant.free_id, plant.chiller_id) if i)
        rows.append(_row("cooling", "site", item, ids, 1, heat * plant.kw_per_kw_peak,
                         heat * plant.capex_usd_per_kw))
    if cool.crah_id:
        crah = catalog.get("heat_rejection", cool.crah_id)
        rows.append(_row("cooling", "site", "crah", crah.id, 1, cool.crah_kw,
                         crah.capex_usd_per_kw * cool.air_heat_kw))
    return rows


def power_bom(redundancy: Any) -> list[dict]:
    """UPS modules and generator sets of a :class:`~dcplan.facility.power.RedundancySizing`.

    Parameters
    ----------
    redundancy : RedundancySizing or None
        The site's UPS and generator sizing (None: no rows).

    Returns
    -------
    list of dict
        ``ups`` (count includes the redundant modules; kW is the UPS losses at the
        design load) and ``generator`` (kW is the sets' standby draw).
    """
    if redundancy is None:
        return []
    rows = []
    if redundancy.ups is not None and redundancy.ups.count:
        u = redundancy.ups
        rows.append(_row("power", "site", "ups", u.model_id, u.count, redundancy.ups_loss_kw,
                         u.capex_usd))
    if redundancy.generators is not None and redundancy.generators.count:
        g = redundancy.generators
        rows.append(_row("power", "site", "generator", g.model_id, g.count,
                         redundancy.generator_standby_kw, g.capex_usd))
    return rows


def site_bom(catalog: Any, sizing: Any) -> list[dict]:
    """Every network, cooling and power item of a :class:`~dcplan.facility.FleetSizing`.

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs.
    sizing : FleetSizing
        The site's sized facility (networks, cooling, redundancy).

    Returns
    -------
    list of dict
        The rows of :func:`network_bom` (each rack type's network), :func:`cooling_bom` and
        :func:`power_bom`, in that order.
    """
    rows = []
    for net in sizing.networks.values():
        rows += network_bom(catalog, net)
    return rows + cooling_bom(catalog, sizing.cooling) + power_bom(sizing.redundancy)
