"""Power chain and power redundancy: loads -> grid power, UPS and generator plants.

IT and network loads pass through the UPS and the distribution (transformers,
switchgear, busways); cooling loads pass through the distribution only, unless the
site puts them on the UPS (``mechanical_on_ups``)::

    facility = (it + network) / (eta_ups * eta_dist) + cooling / eta_mech
    eta_mech = eta_ups * eta_dist if mechanical_on_ups else eta_dist

PUE = facility / (it + network): network switches are IT equipment in The Green
Grid's definition; the rack's NICs are already inside its IT power.

:func:`redundancy_sizing` sizes the UPS and generator plants of a site for its
redundancy topology (N, N+1, 2N, distributed redundant; :data:`dcplan.sites.TOPOLOGIES`):
``systems`` systems of ``ceil(load / needed / module) + spare`` modules each. The UPS
efficiency follows from the load fraction every module then carries in normal
operation, which is how a 2N plant at 50 % (or less) loses more than an N+1 plant.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from dcplan.errors import InputError, Problem
from dcplan.sites import TOPOLOGIES, Site, Topology, uptime_tier


@dataclass(frozen=True)
class PowerChain:
    """Power flows of one load point [kW].

    Attributes
    ----------
    it_kw, network_kw, cooling_kw : float
        Loads.
    loss_kw : float
        UPS and distribution losses.
    facility_kw : float
        Power drawn from the grid.
    """

    it_kw: float
    network_kw: float
    cooling_kw: float
    loss_kw: float
    facility_kw: float

    @property
    def pue(self) -> float:
        """Facility power over IT (incl. network) power [-]."""
        return self.facility_kw / (self.it_kw + self.network_kw)

    @property
    def loss_frac(self) -> float:
        """Losses as a share of the loads they feed [-]."""
        return self.loss_kw / (self.it_kw + self.network_kw + self.cooling_kw)


def power_chain(site: Site, it_kw: float, network_kw: float, cooling_kw: float,
                ups_efficiency: float | None = None, extra_kw: float = 0.0) -> PowerChain:
    """Grid power for the given loads at ``site``.

    Parameters
    ----------
    site : Site
        Gives ``distribution_efficiency``, ``mechanical_on_ups`` and, when it states
        one, a fixed ``ups_efficiency`` (which wins over ``ups_efficiency``).
    it_kw, network_kw, cooling_kw : float
        Loads [kW].
    ups_efficiency : float, optional
        UPS efficiency at this load (from :func:`redundancy_sizing`) [0..1].
    extra_kw : float
        Facility loads outside the UPS (generator standby heaters) fed through the
        distribution; counted as losses [kW].

    Returns
    -------
    PowerChain
    """
    eta_it, eta_mech = site.loss_chain(ups_efficiency)
    facility = (it_kw + network_kw) / eta_it + (cooling_kw + extra_kw) / eta_mech
    loss = facility - (it_kw + network_kw + cooling_kw)
    return PowerChain(it_kw, network_kw, cooling_kw, loss, facility)


# --- redundancy -----------------------------------------------------------------------


@dataclass(frozen=True)
class Plant:
    """A UPS or generator plant sized for a topology.

    Attributes
    ----------
    model_id : str
    module_kw : float
        Rating of one module or set [kW].
    systems : int
        Paralleled systems: the topology's systems, each split into blocks where it
        would have more modules than one bus may parallel [count].
    modules_per_system : int
        Modules of each paralleled system, its spares included [count].
    count : int
        All modules or sets [count].
    load_kw : float
        Load the plant carries [kW].
    load_frac : float
        Load of each module in normal operation, as a share of its rating [-].
    capex_usd : float
    """

    model_id: str
    module_kw: float
    systems: int
    modules_per_system: int
    count: int
    load_kw: float
    load_frac: float
    capex_usd: float

    @property
    def installed_kw(self) -> float:
        """Installed rating of all modules [kW]."""
        return self.count * self.module_kw


def plant_blocks(load_kw: float, module_kw: float, topology: Topology,
                 max_parallel: int | None = None) -> tuple[int, int]:
    """(paralleled blocks per system, modules per block) for ``load_kw`` [kW].

    Each of the ``systems`` systems carries ``load / needed`` on ``ceil(load / needed /
    module) + spare_modules`` modules. Where that is more than ``max_parallel`` (the
    most modules one paralleled bus may have), the system's load is split over ``b``
    blocks, each with its own spares: ``b = ceil(working / (max_parallel - spare))``
    and ``ceil(load / needed / b / module) + spare`` modules per block, so one spare
    never stands for a hundred modules.

    Parameters
    ----------
    load_kw : float
        Load the plant carries [kW].
    module_kw : float
        Rating of one module or set [kW].
    topology : Topology
        Redundancy topology (systems, systems needed, spare modules per system).
    max_parallel : int, optional
        Most modules one paralleled bus may have [count] (None: no limit).

    Returns
    -------
    (int, int)
        Paralleled blocks per system [count] and modules per block, spares included
        [count]; (0, 0) without load.

    Raises
    ------
    InputError
        If ``max_parallel`` cannot hold the topology's spares.
    """
    if load_kw <= 0:
        return 0, 0
    per_system = load_kw / topology.needed / module_kw
    working = int(math.ceil(per_system - 1e-9))
    spare = topology.spare_modules
    blocks = 1
    if max_parallel is not None and working + spare > max_parallel:
        if max_parallel <= spare:
            raise InputError(Problem("ups", f"a paralleled system of at most {max_parallel} "
                                     f"modules cannot hold the {spare} spare(s) of its "
                                     "topology; raise max_parallel_modules",
                                     field="max_parallel_modules"))
        blocks = int(math.ceil(working / (max_parallel - spare)))
    per_block = int(math.ceil(per_system / blocks - 1e-9)) + spare
    return blocks, per_block


def plant_modules(load_kw: float, module_kw: float, topology: Topology,
                  max_parallel: int | None = None) -> tuple[int, int]:
    """(modules per system, all modules) for ``load_kw`` [kW] on ``module_kw`` modules.

    See :func:`plant_blocks`; without a parallel limit ``ceil(load / needed / module) +
    spare_modules`` per system.

    Parameters
    ----------
    load_kw : float
        Load the plant carries [kW].
    module_kw : float
        Rating of one module or set [kW].
    topology : Topology
        Redundancy topology (systems, systems needed, spare modules per system).
    max_parallel : int, optional
        Most modules one paralleled bus may have [count] (None: no limit).

    Returns
    -------
    (int, int)
        Modules per system, spares included [count], and modules of all systems
        [count].
    """
    blocks, per_block = plant_blocks(load_kw, module_kw, topology, max_parallel)
    per = blocks * per_block
    return per, per * topology.systems


def _plant(model, load_kw: float, rating_kw: float, topology: Topology) -> Plant:
    limit = getattr(model, "max_parallel_modules", None)
    blocks, per_block = plant_blocks(load_kw, rating_kw, topology, limit)
    count = blocks * per_block * topology.systems
    frac = load_kw / (count * rating_kw) if count else 0.0
    return Plant(model.id, rating_kw, topology.systems * blocks if count else 0, per_block,
                 count, load_kw, frac, count * model.capex_usd)


@dataclass
class RedundancySizing:
    """UPS and generator plants of a site and what they cost and lose.

    Attributes
    ----------
    topology, generator_topology : str
        Names (:data:`dcplan.sites.TOPOLOGIES`).
    uptime_tier : str
        Uptime Institute Tier the site maps to: that of the weaker of its UPS and
        generator topologies (:func:`dcplan.sites.uptime_tier`).
    ups, generators : Plant or None
        None when the catalog has no such entries.
    ups_efficiency : float
        At the plant's load fraction (or the site's fixed figure) [0..1].
    ups_loss_kw : float
        UPS losses at the design load [kW].
    generator_standby_kw : float
        Standby heaters and chargers of all sets [kW].
    recharge_kw : float
        Battery recharge after an outage, on top of the load [kW].
    facility_kw_peak : float
        Grid power at the design day with these plants [kW].
    grid_kw : float
        What the grid connection must carry: facility peak + recharge [kW].
    usable_it_frac : float
        IT load per kW of grid connection [-]: ``it_kw / grid_kw``.
    capex_usd : float
        UPS + generator plants [USD].
    notes : list of str
    """

    topology: str
    generator_topology: str
    uptime_tier: str
    ups: Plant | None
    generators: Plant | None
    ups_efficiency: float
    ups_loss_kw: float
    generator_standby_kw: float
    recharge_kw: float
    facility_kw_peak: float
    grid_kw: float
    usable_it_frac: float
    capex_usd: float
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Plain-dict summary (for JSON and tables)."""
        out = {k: v for k, v in asdict(self).items() if k not in ("ups", "generators")}
        out["ups"] = asdict(self.ups) if self.ups else None
        out["generators"] = asdict(self.generators) if self.generators else None
        return out

    def usable_it_mw(self, grid_mw: float) -> float:
        """IT load a grid connection of ``grid_mw`` [MW] can feed [MW].

        Parameters
        ----------
        grid_mw : float
            Grid connection [MW].

        Returns
        -------
        float
            Rack IT load (network excluded) it can feed, with the site's design-day
            overheads and the battery recharge on top [MW].
        """
        return grid_mw * self.usable_it_frac


def _best(pool, load_kw: float, rating, topology: Topology, efficiency=None):
    """Cheapest plant of ``pool`` for ``load_kw``, then lowest losses, then id."""
    best = None
    for model in sorted(pool, key=lambda m: m.id):
        p = _plant(model, load_kw, rating(model), topology)
        loss = 0.0 if efficiency is None else load_kw * (1 / max(efficiency(model, p), 1e-9) - 1)
        key = (round(p.capex_usd, 6), round(loss, 9), model.id)
        if best is None or key < best[0]:
            best = (key, model, p)
    return best


def redundancy_sizing(catalog, site: Site, it_kw: float, network_kw: float,
                      cooling_kw_peak: float, topology: str | None = None,
                      generator_topology: str | None = None, ups_id: str | None = None,
                      generator_id: str | None = None) -> RedundancySizing:
    """Size the UPS and generator plants of ``site`` for its redundancy topology.

    The UPS carries IT + network (+ cooling when ``mechanical_on_ups``); the
    generators carry the whole facility at the design day plus the UPS battery
    recharge. Per topology, ``systems x (ceil(load / needed / module) + spare)``
    modules; the model with the lowest capex (then losses) wins unless one is named.

    Parameters
    ----------
    catalog : Catalog
    site : Site
    it_kw, network_kw : float
        IT and network load [kW].
    cooling_kw_peak : float
        Cooling power at the design day [kW].
    topology, generator_topology : str, optional
        Override the site's ``power_redundancy`` / ``generator_redundancy``.
    ups_id, generator_id : str, optional
        Force a model.

    Returns
    -------
    RedundancySizing

    Raises
    ------
    InputError
        An unknown topology or model id; a site without a fixed UPS efficiency and a
        catalog without UPS entries.
    """
    name = topology or site.power_redundancy
    gname = generator_topology or site.generator_redundancy or name
    for fld, value in (("power_redundancy", name), ("generator_redundancy", gname)):
        if value not in TOPOLOGIES:
            raise InputError(Problem(f"site {site.id}", f"unknown redundancy topology "
                                     f"'{value}'; use one of: {', '.join(TOPOLOGIES)}",
                                     field=fld))
    topo, gtopo = TOPOLOGIES[name], TOPOLOGIES[gname]
    notes: list[str] = []
    ups_load = it_kw + network_kw + (cooling_kw_peak if site.mechanical_on_ups else 0.0)
    ups_pool = [catalog.get("ups", ups_id)] if ups_id else list(catalog.ups.values())
    ups = None
    eff = site.ups_efficiency
    recharge = 0.0
    if ups_pool and ups_load > 0:
        _, model, ups = _best(ups_pool, ups_load, lambda m: m.module_kw, topo,
                              lambda m, p: m.efficiency(p.load_frac))
        if eff is None:
            eff = model.efficiency(ups.load_frac)
        else:
            notes.append(f"the site's fixed UPS efficiency {eff:.1%} is used, not the "
                         f"{model.id} curve ({model.efficiency(ups.load_frac):.1%} at "
                         f"{ups.load_frac:.0%} load)")
        recharge = model.recharge_frac * ups_load
    elif eff is None:
        site.loss_chain()  # raises the clear error
    gen_pool = [catalog.get("generators", generator_id)] if generator_id else \
        list(catalog.generators.values())
    standby = 0.0
    gens = None
    if gen_pool:
        # the sets' standby draw is itself a facility load: two passes converge
        for _ in range(2):
            chain = _chain(site, it_kw, network_kw, cooling_kw_peak, eff, standby)
            _, gmodel, gens = _best(gen_pool, chain.facility_kw + recharge,
                                    lambda m: m.rated_kw, gtopo)
            standby = gens.count * gmodel.standby_kw
    else:
        notes.append("no generators in the catalog: no standby plant sized")
    chain = _chain(site, it_kw, network_kw, cooling_kw_peak, eff, standby)
    if not ups_pool:
        notes.append("no UPS in the catalog: the site's fixed UPS efficiency is used")
    grid = chain.facility_kw + recharge
    ups_loss = ups_load * (1.0 / eff - 1.0) if eff else 0.0
    return RedundancySizing(
        topology=name, generator_topology=gname, uptime_tier=uptime_tier(name, gname), ups=ups,
        generators=gens, ups_efficiency=float(eff), ups_loss_kw=ups_loss,
        generator_standby_kw=standby, recharge_kw=recharge,
        facility_kw_peak=chain.facility_kw, grid_kw=grid,
        usable_it_frac=it_kw / grid if grid > 0 else 0.0,
        capex_usd=(ups.capex_usd if ups else 0.0) + (gens.capex_usd if gens else 0.0),
        notes=notes)


def _chain(site, it_kw, network_kw, cooling_kw, eff, standby) -> PowerChain:
    return power_chain(site, it_kw, network_kw, cooling_kw, ups_efficiency=eff,
                       extra_kw=standby)
