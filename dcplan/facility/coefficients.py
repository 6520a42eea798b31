"""Linear facility coefficients for the planner, and exact post-solve sizing.

:func:`coefficients` sizes the network and cooling of ``n_racks`` racks of one type at
one site (the planned scale) and divides by the rack count or the IT kW, so the planner
can write network, cooling and losses as linear terms. :func:`size_fleet` sizes the
exact network (one back-end and front-end fabric per rack type) and cooling (CDUs and
plants shared by the whole site) of a solved fleet and reports the difference from the
linear estimate.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from dcplan.facility.cooling import CoolingResult, cooling
from dcplan.facility.network import NetworkResult, network
from dcplan.facility.power import PowerChain, RedundancySizing, power_chain, redundancy_sizing
from dcplan.scenario.schema import DEFAULT_OVERSUBSCRIPTION
from dcplan.sites import Site
from dcplan.units import HOURS_PER_YEAR


@dataclass(frozen=True)
class FacilityCoefficients:
    """Linear facility coefficients for one rack type at one site.

    Attributes
    ----------
    network_kw_per_rack : float
        Scale-out + front-end network power attributable to one rack (switches,
        optics; NICs inside the rack's IT power are not counted again) [kW].
    network_capex_usd_per_rack : float
        Network capex per rack (switches, transceivers, cables) [USD].
    cooling_kw_per_it_kw_avg : float
        Annual-average cooling electric power per kW of IT heat [kW/kW] (includes the
        cooling of the network's heat, CDU pumps and air-side fans).
    cooling_kw_per_it_kw_peak : float
        Cooling electric power per kW of IT heat on the design (hottest) day [kW/kW].
    loss_frac : float
        Power-chain losses as a share of the load they feed (UPS, transformers,
        distribution): facility = (IT + cooling + network) * (1 + loss_frac).
    liquid_heat_kw_per_rack : float
        Heat to liquid per rack at full load [kW].
    cdu_id : str
        CDU model chosen for this site and rack type ('' for air-cooled racks).
    cdu_capacity_kw : float
        Heat one CDU moves [kW].
    cdu_capex_usd : float
        Price of one CDU [USD].
    cooling_capex_usd_per_kw : float
        Heat-rejection and air-side plant capex per kW of IT heat [USD/kW].
    pue_annual : float
        Annual PUE of a hall of this rack type at this site (for reporting).
    cdu_redundancy : int
        Spare CDUs per site (N + this).
    cdus_per_rack : float
        CDUs per rack at the planned scale, redundancy included [count/rack].
    n_racks : int
        Planned scale the coefficients were computed at [racks].
    supply_water_c : float
        Facility-water supply of the liquid loop [degC].
    ups_efficiency : float
        UPS efficiency at the planned scale's load fraction (site topology) [0..1].
    redundancy_capex_usd_per_it_kw : float
        UPS and generator plants per kW of IT load [USD/kW] (part of the site's build
        cost per MW; shown to compare topologies).
    usable_it_frac : float
        IT load per kW of grid connection (losses, cooling, battery recharge) [-].
    water_l_per_it_kwh : float
        Site water per kWh of IT energy (WUE) at full load [L/kWh].
    network_positions_per_rack : float
        Network-rack positions per rack at the planned scale [positions/rack].
    """

    network_kw_per_rack: float
    network_capex_usd_per_rack: float
    cooling_kw_per_it_kw_avg: float
    cooling_kw_per_it_kw_peak: float
    loss_frac: float
    liquid_heat_kw_per_rack: float
    cdu_id: str
    cdu_capacity_kw: float
    cdu_capex_usd: float
    cooling_capex_usd_per_kw: float
    pue_annual: float
    cdu_redundancy: int
    cdus_per_rack: float = 0.0
    n_racks: int = 0
    supply_water_c: float = 0.0
    ups_efficiency: float = 0.0
    redundancy_capex_usd_per_it_kw: float = 0.0
    usable_it_frac: float = 0.0
    water_l_per_it_kwh: float = 0.0
    network_positions_per_rack: float = 0.0


def _catalog_key(catalog) -> int:
    return id(catalog)


_NET_CACHE: dict[tuple, NetworkResult] = {}


def cached_network(catalog, rack_id: str, n_racks: int, optics=None,
                   oversubscription: float = DEFAULT_OVERSUBSCRIPTION) -> NetworkResult:
    """:func:`~dcplan.facility.network.network` without the graph, memoised per catalog.

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs.
    rack_id : str
        Rack type (catalog ``racks``).
    n_racks : int
        Racks on the fabric [racks].
    optics : str, optional
        Optic id for switch ends.
    oversubscription : float
        Back-end leaf oversubscription, leaf down- over uplink bandwidth [-] (1 =
        non-blocking).

    Returns
    -------
    NetworkResult
        The sized network (no graph); the same object for the same arguments and
        catalog.
    """
    key = (_catalog_key(catalog), rack_id, int(n_racks), optics, float(oversubscription))
    hit = _NET_CACHE.get(key)
    if hit is None or hit.__dict__.get("_catalog") is not catalog:
        hit = network(catalog, rack_id, int(n_racks), optics=optics,
                      oversubscription=oversubscription, keep_graph=False)
        hit.__dict__["_catalog"] = catalog
        if len(_NET_CACHE) > 4096:
            _NET_CACHE.clear()
        _NET_CACHE[key] = hit
    return hit


def coefficients(catalog, site: Site, rack_id: str, n_racks: int, optics: str | None = None,
                 oversubscription: float = DEFAULT_OVERSUBSCRIPTION,
                 cdu_redundancy: int | None = None) -> FacilityCoefficients:
    """Linear facility coefficients for ``n_racks`` racks of ``rack_id`` at ``site``.

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs.
    site : Site
        The site.
    rack_id : str
        Rack type (catalog ``racks``).
    n_racks : int
        Planned scale [racks] (network and CDU integer effects are spread over it).
    optics : str, optional
        Optic id for switch ends (see :func:`~dcplan.facility.network.network`).
    oversubscription : float
        Back-end leaf oversubscription, leaf down- over uplink bandwidth [-] (1 =
        non-blocking).
    cdu_redundancy : int, optional
        Spare CDUs per site and CDU model [count] (default: the facility assumption
        ``default_cdu_redundancy``).

    Returns
    -------
    FacilityCoefficients

    Raises
    ------
    InputError
        Unknown ids, or a rack the site cannot host (too dense, no facility water).
    """
    n = max(1, int(math.ceil(n_racks)))
    net = cached_network(catalog, rack_id, n, optics, oversubscription)
    cool = cooling(catalog, site, {rack_id: n}, network_kw=net.network_kw,
                   redundancy=cdu_redundancy)
    it_kw = cool.it_kw
    red = redundancy_sizing(catalog, site, it_kw, net.network_kw, cool.cooling_kw_peak)
    peak, avg = site_power(site, red, it_kw, net.network_kw, cool)
    water = cool.water
    return FacilityCoefficients(
        network_kw_per_rack=net.network_kw / n,
        network_capex_usd_per_rack=net.network_capex_usd / n,
        cooling_kw_per_it_kw_avg=cool.cooling_kw_avg / it_kw,
        cooling_kw_per_it_kw_peak=cool.cooling_kw_peak / it_kw,
        loss_frac=peak.loss_frac,
        liquid_heat_kw_per_rack=cool.liquid_heat_kw / n,
        cdu_id=cool.cdu_id,
        cdu_capacity_kw=cool.cdu_capacity_kw,
        cdu_capex_usd=cool.cdu_capex_usd,
        cooling_capex_usd_per_kw=cool.plant_capex_usd / it_kw,
        pue_annual=avg.pue,
        cdu_redundancy=cool.cdu_redundancy,
        cdus_per_rack=cool.cdu_count / n,
        n_racks=n,
        supply_water_c=cool.supply_c,
        ups_efficiency=red.ups_efficiency,
        redundancy_capex_usd_per_it_kw=red.capex_usd / it_kw,
        usable_it_frac=red.usable_it_frac,
        water_l_per_it_kwh=water.annual_m3 * 1000.0 / (it_kw * HOURS_PER_YEAR)
        if water is not None else 0.0,
        network_positions_per_rack=net.network_rack_positions / n,
    )


def site_power(site: Site, red: RedundancySizing, it_kw: float, network_kw: float,
               cool: CoolingResult) -> tuple[PowerChain, PowerChain]:
    """Power chain at the design day and on the annual average with ``red``'s plants.

    Parameters
    ----------
    site : Site
        The site.
    red : RedundancySizing
        The site's UPS and generator plants (UPS efficiency, generator standby draw).
    it_kw : float
        IT power, racks at their maximum IT power (``it_power_max_kw``) [kW].
    network_kw : float
        Network switch and optics power [kW].
    cool : CoolingResult
        The site's cooling (design-day and annual-average electric power).

    Returns
    -------
    (PowerChain, PowerChain)
        Peak, average.
    """
    kw = dict(ups_efficiency=red.ups_efficiency, extra_kw=red.generator_standby_kw)
    return (power_chain(site, it_kw, network_kw, cool.cooling_kw_peak, **kw),
            power_chain(site, it_kw, network_kw, cool.cooling_kw_avg, **kw))


@dataclass
class FleetSizing:
    """Exact network and cooling of a fleet at one site, and the linear estimate.

    Attributes
    ----------
    site_id : str
    fleet : dict
        Rack id -> count.
    networks : dict
        Rack id -> :class:`~dcplan.facility.network.NetworkResult` (one fabric per type).
    cooling : CoolingResult
        Shared by the whole site.
    exact, linear, difference : dict
        Quantities [kW, USD, count, -]: ``it_kw``, ``network_kw``, ``network_capex_usd``,
        ``cooling_kw_avg``, ``cooling_kw_peak``, ``loss_kw_peak``, ``facility_kw_peak``,
        ``cdu_count``, ``cdu_capex_usd``, ``cooling_capex_usd``, ``annual_energy_kwh``,
        ``pue_annual``; difference = exact - linear.
    relative_error : dict
        (linear - exact) / exact per quantity (0 where exact is 0) [-].
    redundancy : RedundancySizing
        UPS and generator plants of the site for its topology.
    power_peak, power_avg : PowerChain
        Power chain at the design day and on the annual average.
    positions : dict
        Rack positions used: ``compute``, ``network`` (network racks), ``cdu``
        (in-row CDUs), ``total`` [positions].
    """

    site_id: str
    fleet: dict[str, int]
    networks: dict[str, NetworkResult]
    cooling: CoolingResult
    exact: dict[str, float]
    linear: dict[str, float]
    difference: dict[str, float] = field(default_factory=dict)
    relative_error: dict[str, float] = field(default_factory=dict)
    redundancy: RedundancySizing | None = None
    power_peak: PowerChain | None = None
    power_avg: PowerChain | None = None
    positions: dict[str, float] = field(default_factory=dict)

    @property
    def water(self):
        """The site's cooling water (:class:`~dcplan.facility.water.SiteWater`)."""
        return self.cooling.water

    def summary(self) -> dict[str, Any]:
        """Plain-dict summary."""
        return {
            "site_id": self.site_id, "fleet": dict(self.fleet),
            "networks": {k: v.summary() for k, v in self.networks.items()},
            "cooling": self.cooling.summary(), "exact": dict(self.exact),
            "linear": dict(self.linear), "difference": dict(self.difference),
            "relative_error": dict(self.relative_error),
            "redundancy": self.redundancy.summary() if self.redundancy else None,
            "positions": dict(self.positions),
        }


def _quantities(site: Site, it_kw, network_kw, network_capex, cool_avg, cool_peak, cdus,
                cdu_capex, cooling_capex, ups_efficiency, extra_kw) -> dict[str, float]:
    kw = dict(ups_efficiency=ups_efficiency, extra_kw=extra_kw)
    peak = power_chain(site, it_kw, network_kw, cool_peak, **kw)
    avg = power_chain(site, it_kw, network_kw, cool_avg, **kw)
    return {
        "it_kw": it_kw, "network_kw": network_kw, "network_capex_usd": network_capex,
        "cooling_kw_avg": cool_avg, "cooling_kw_peak": cool_peak,
        "loss_kw_peak": peak.loss_kw, "facility_kw_peak": peak.facility_kw,
        "cdu_count": float(cdus), "cdu_capex_usd": cdu_capex,
        "cooling_capex_usd": cooling_capex,
        "annual_energy_kwh": avg.facility_kw * HOURS_PER_YEAR,
        "pue_annual": avg.pue if it_kw + network_kw > 0 else 0.0,
    }


def size_fleet(catalog, site: Site, fleet: dict[str, int], optics: str | None = None,
               oversubscription: float = DEFAULT_OVERSUBSCRIPTION,
               coefficients_used: dict[str, FacilityCoefficients] | None = None,
               supply_water_c: float | None = None, cdu_redundancy: int | None = None,
               cdu_id: str | None = None, linear: bool = True) -> FleetSizing:
    """Size the exact network and cooling for ``fleet`` ({rack_id: count}) at ``site``.

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs.
    site : Site
        The site.
    fleet : dict
        Rack id -> count [racks] (zero counts are ignored).
    optics : str, optional
        Optic id for switch ends.
    oversubscription : float
        Back-end leaf oversubscription, leaf down- over uplink bandwidth [-] (1 =
        non-blocking).
    coefficients_used : dict, optional
        Rack id -> the :class:`FacilityCoefficients` the planner used; default the
        coefficients at each type's own count in ``fleet``.
    supply_water_c : float, optional
        Facility-water supply [degC]; passed to :func:`~dcplan.facility.cooling.cooling`.
    cdu_redundancy : int, optional
        Spare CDUs [count]; passed to :func:`~dcplan.facility.cooling.cooling`.
    cdu_id : str, optional
        Force a CDU model; passed to :func:`~dcplan.facility.cooling.cooling`.
    linear : bool
        Also build the linear estimate (False: ``linear`` and the differences are
        empty).

    Returns
    -------
    FleetSizing
        Exact figures, the linear estimate (coefficients x counts, CDUs as
        ``cdus_per_rack`` x racks rounded up) and their difference, the redundancy
        plants, the power chain and the rack positions.
    """
    fleet = {r: int(n) for r, n in fleet.items() if n}
    nets = {r: cached_network(catalog, r, n, optics, oversubscription)
            for r, n in fleet.items()}
    net_kw = sum(v.network_kw for v in nets.values())
    net_capex = sum(v.network_capex_usd for v in nets.values())
    cool = cooling(catalog, site, fleet, network_kw=net_kw, supply_water_c=supply_water_c,
                   redundancy=cdu_redundancy, cdu_id=cdu_id)
    red = redundancy_sizing(catalog, site, cool.it_kw, net_kw, cool.cooling_kw_peak)
    peak, avg = site_power(site, red, cool.it_kw, net_kw, cool)
    exact = _quantities(site, cool.it_kw, net_kw, net_capex, cool.cooling_kw_avg,
                        cool.cooling_kw_peak, cool.cdu_count, cool.cdu_capex_total_usd,
                        cool.plant_capex_usd, red.ups_efficiency, red.generator_standby_kw)
    cdu_pos = catalog.get("cdus", cool.cdu_id).positions * cool.cdu_count if cool.cdu_id \
        else 0.0
    compute = sum(catalog.get("racks", r).rack_positions * n for r, n in fleet.items())
    net_pos = sum(v.network_rack_positions for v in nets.values())
    positions = {"compute": float(compute), "network": float(net_pos), "cdu": float(cdu_pos),
                 "total": float(compute + net_pos + cdu_pos)}
    common = dict(site_id=site.id, fleet=fleet, networks=nets, cooling=cool, exact=exact,
                  redundancy=red, power_peak=peak, power_avg=avg, positions=positions)
    if not linear:
        return FleetSizing(linear={}, **common)

    coefs = dict(coefficients_used or {})
    for r, n in fleet.items():
        if r not in coefs:
            coefs[r] = coefficients(catalog, site, r, n, optics, oversubscription)
    it = l_net = l_capex = l_avg = l_peak = l_cdu = l_cdu_capex = l_cool_capex = 0.0
    l_fac = l_eff = 0.0
    for r, n in fleet.items():
        c = coefs[r]
        rack_it = catalog.get("racks", r).it_power_max_kw * n
        it += rack_it
        l_net += c.network_kw_per_rack * n
        l_capex += c.network_capex_usd_per_rack * n
        l_avg += c.cooling_kw_per_it_kw_avg * rack_it
        l_peak += c.cooling_kw_per_it_kw_peak * rack_it
        cdus = c.cdus_per_rack * n
        l_cdu += cdus
        l_cdu_capex += cdus * c.cdu_capex_usd
        l_cool_capex += c.cooling_capex_usd_per_kw * rack_it
        l_fac += (rack_it + c.network_kw_per_rack * n
                  + c.cooling_kw_per_it_kw_peak * rack_it) * (1 + c.loss_frac)
        l_eff += (c.ups_efficiency or red.ups_efficiency) * rack_it
    linear = _quantities(site, it, l_net, l_capex, l_avg, l_peak, l_cdu, l_cdu_capex,
                         l_cool_capex, l_eff / it if it else red.ups_efficiency, 0.0)
    linear["facility_kw_peak"] = l_fac
    linear["loss_kw_peak"] = l_fac - (it + l_net + l_peak)
    diff = {k: exact[k] - linear[k] for k in exact}
    rel = {k: ((linear[k] - exact[k]) / exact[k] if exact[k] else 0.0) for k in exact}
    return FleetSizing(linear=linear, difference=diff, relative_error=rel, **common)


def coefficients_dict(c: FacilityCoefficients) -> dict[str, Any]:
    """Return the coefficients as a plain dict.

    Parameters
    ----------
    c : FacilityCoefficients
        The coefficients.

    Returns
    -------
    dict
        Field name -> value (units in the field names).
    """
    return asdict(c)

