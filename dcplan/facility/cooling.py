"""Cooling model: CDUs, heat rejection chosen by supply temperature and climate, PUE.

Heat paths (all in [kW] of heat, equal to the electric power that produced it):

* liquid: ``sum(racks * it_kw * liquid_heat_frac)`` goes through CDUs (integer count,
  N + redundancy) to the facility-water loop at ``supply_c``, then to a heat-rejection
  plant;
* air: the rest of the rack heat plus the network switches' heat goes to CRAH fan coils
  on a chilled-water loop at the site's ``air_chilled_water_c``, then to a plant.

For each loop the plant is a free-cooling unit (dry cooler; cooling tower or adiabatic
cooler where the site allows evaporative cooling) working while
``ambient + approach_k <= supply``, backed by a chiller whose electric power per kW of
heat grows with the lift: ``e = e_rated * max(floor, 1 + s * (lift - lift_rated))`` with
``lift = ambient - supply`` (the ambient is dry- or wet-bulb per the plant's
``ambient_basis``). The combination with the lowest annual energy is chosen. Electric
power is weighted by the site's climate hours; the design (peak) value uses the site's
design condition. CDU pump power is linear in the heat moved (rated pump power per kW
of rated capacity).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from dcplan.errors import InputError, Problem
from dcplan.facility.assumptions import value
from dcplan.facility.heat_rejection import chiller_kw_per_kw, free_cooling_works
from dcplan.facility.water import SiteWater, loop_water
from dcplan.schema import Cdu, CduPlacement, CoolingType, HeatRejection, HeatRejectionKind, Rack
from dcplan.sites import Site
from dcplan.units import HOURS_PER_YEAR

FREE_KINDS = (HeatRejectionKind.dry_cooler, HeatRejectionKind.adiabatic_dry_cooler,
              HeatRejectionKind.cooling_tower)
CHILLER_KINDS = (HeatRejectionKind.chiller_air_cooled, HeatRejectionKind.chiller_water_cooled)


def _err(message: str, site: Site | None = None, fld: str | None = None) -> InputError:
    return InputError(Problem("<cooling>" if site is None else f"site {site.id}", message,
                              field=fld))


@dataclass
class LoopPlant:
    """Heat-rejection plant of one water loop and its hours-weighted performance.

    Attributes
    ----------
    supply_c : float
        Loop supply temperature [degC].
    free_id, chiller_id : str or None
        Free-cooling plant and chiller chosen ('' if none).
    free_hours : float
        Hours per year on free cooling alone [h].
    kw_per_kw_avg, kw_per_kw_peak : float
        Electric power per kW of heat, annual average and at the design condition [kW/kW].
    capex_usd_per_kw : float
        Plant capex per kW of heat [USD/kW].
    """

    supply_c: float
    free_id: str = ""
    chiller_id: str = ""
    free_hours: float = 0.0
    kw_per_kw_avg: float = 0.0
    kw_per_kw_peak: float = 0.0
    capex_usd_per_kw: float = 0.0


def _eligible(catalog, site: Site, kinds, evaporative: bool = True) -> list[HeatRejection]:
    out = []
    for p in catalog.heat_rejection.values():
        if p.kind not in kinds:
            continue
        if p.ambient_basis == "wet_bulb" and not (site.evaporative_cooling and evaporative):
            continue
        out.append(p)
    return sorted(out, key=lambda p: p.id)


def loop_plant_options(catalog, site: Site, supply_c: float, evaporative: bool = True
                       ) -> list[LoopPlant]:
    """Every heat-rejection plant that can hold a loop at ``supply_c`` [degC] all year.

    Every (free plant or none) x (chiller or none) combination that covers every
    climate bin and the design condition, best first: the lowest annual energy, then
    the lowest capex, then the ids. ``evaporative=False`` leaves out water-consuming
    plants even where the site allows them. The peak [kW per kW of heat] is the
    largest over the design condition and every climate bin with hours, so a design
    condition milder than the climate's hottest hours cannot undersize the plant.

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs.
    site : Site
        The site (climate bins, design condition, facility water).
    supply_c : float
        Loop supply temperature to hold [degC].
    evaporative : bool
        Allow water-consuming (wet-bulb) plants where the site allows them.

    Returns
    -------
    list of LoopPlant
        Every feasible plant, best first (empty if none can hold ``supply_c``).
    """
    frees = _eligible(catalog, site, FREE_KINDS, evaporative)
    chillers = _eligible(catalog, site, CHILLER_KINDS, evaporative)
    design = (site.design_dry_bulb_c, site.design_wet_bulb_c)
    conditions = [(b.dry_bulb_c, b.wet_bulb_c, b.hours) for b in site.climate]
    found = []
    for free in [None, *frees]:
        for chiller in [None, *chillers]:
            if free is None and chiller is None:
                continue
            energy = 0.0
            free_hours = 0.0
            peak = 0.0
            ok = True
            chiller_used = False
            free_used = False
            for db, wb, hours in [*conditions, (*design, 0.0)]:
                if free is not None and free_cooling_works(free, supply_c, db, wb):
                    e = free.electric_kw_per_kw_heat
                    free_hours += hours
                    free_used = True
                elif chiller is not None:
                    e = chiller_kw_per_kw(chiller, supply_c, db, wb)
                    chiller_used = True
                else:
                    ok = False
                    break
                energy += hours * e
                if hours > 0 or (db, wb) == design:
                    peak = max(peak, e)
            if not ok:
                continue
            capex = ((free.capex_usd_per_kw if free is not None and free_used else 0.0)
                     + (chiller.capex_usd_per_kw if chiller is not None and chiller_used
                        else 0.0))
            key = (round(energy, 9), round(capex, 9), free.id if free else "",
                   chiller.id if chiller else "")
            found.append((key, LoopPlant(
                supply_c=supply_c,
                free_id=free.id if free is not None and free_used else "",
                chiller_id=chiller.id if chiller is not None and chiller_used else "",
                free_hours=free_hours, kw_per_kw_avg=energy / HOURS_PER_YEAR,
                kw_per_kw_peak=peak, capex_usd_per_kw=capex)))
    found.sort(key=lambda t: t[0])
    return [plant for _key, plant in found]


def loop_plant(catalog, site: Site, supply_c: float, evaporative: bool = True) -> LoopPlant:
    """Choose the heat-rejection plant for a loop at ``supply_c`` [degC] at ``site``.

    The first of :func:`loop_plant_options`: the lowest annual energy wins (then the
    lowest capex, then the ids).

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs.
    site : Site
        The site (climate bins, design condition, facility water).
    supply_c : float
        Loop supply temperature to hold [degC].
    evaporative : bool
        Allow water-consuming (wet-bulb) plants where the site allows them.

    Returns
    -------
    LoopPlant
        The chosen plant.

    Raises
    ------
    InputError
        If no combination can hold ``supply_c`` all year.
    """
    options = loop_plant_options(catalog, site, supply_c, evaporative)
    if not options:
        raise _err(f"no heat-rejection plant in the catalog can hold {supply_c:g} C supply "
                   f"water all year (design {site.design_dry_bulb_c:g} C dry bulb); add a "
                   "chiller to the heat_rejection catalog or raise the supply temperature",
                   site)
    return options[0]


# --- CDUs -----------------------------------------------------------------------------


def cdu_count(liquid_heat_kw: float, capacity_kw: float, redundancy: int) -> int:
    """CDUs for ``liquid_heat_kw`` [kW]: ``ceil(heat / capacity) + redundancy`` (0 if no heat).

    Parameters
    ----------
    liquid_heat_kw : float
        Heat to the liquid loop [kW].
    capacity_kw : float
        Heat capacity of one CDU [kW].
    redundancy : int
        Spare units [count] (1 = N+1).

    Returns
    -------
    int
        CDUs including the spares [count].
    """
    if liquid_heat_kw <= 0:
        return 0
    return int(math.ceil(liquid_heat_kw / capacity_kw - 1e-9)) + int(redundancy)


def choose_cdu(catalog, liquid_heat_kw: float, redundancy: int, supply_c: float,
               tcs_max_c: float, cdu_id: str | None = None, fixed_supply: bool = False
               ) -> tuple[Cdu, float]:
    """Pick the CDU model and the facility supply it allows.

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs.
    liquid_heat_kw : float
        Heat to liquid [kW].
    redundancy : int
        Spare units [count] (1 = N+1).
    supply_c : float
        Facility-water supply [degC] (site design or requested).
    tcs_max_c : float
        Warmest technology-coolant supply every rack accepts [degC].
    cdu_id : str, optional
        Force this model.
    fixed_supply : bool
        The supply was requested explicitly: a CDU whose approach makes the rack
        coolant too warm is an error instead of lowering the supply.

    Returns
    -------
    (Cdu, float)
        Model and facility supply temperature [degC] = min(supply, tcs_max - approach).
    """
    if cdu_id:
        pool = [catalog.get("cdus", cdu_id)]
    else:
        pool = [c for c in catalog.cdus.values() if c.placement is not CduPlacement.in_rack]
        if not pool:
            raise _err("no in-row or facility CDU in the cdus catalog; add one or pass a CDU id")
    options = []
    for c in pool:
        allowed = tcs_max_c - c.approach_k
        if fixed_supply and supply_c > allowed + 1e-9:
            continue
        n = cdu_count(liquid_heat_kw, c.capacity_kw, redundancy)
        options.append(((n * c.capex_usd, c.pump_power_kw / c.capacity_kw, c.id), c,
                        min(supply_c, allowed)))
    if not options:
        c = min(pool, key=lambda x: x.approach_k)
        raise _err(f"supply water {supply_c:g} C plus the CDU approach ({c.approach_k:g} K) "
                   f"exceeds the {tcs_max_c:g} C coolant limit of the racks; lower "
                   f"--supply-water-c to at most {tcs_max_c - c.approach_k:g} C")
    _, cdu, supply = min(options, key=lambda t: t[0])
    return cdu, supply


@dataclass(frozen=True)
class FleetCdus:
    """The CDUs of a fleet at a site: the cooling model's one answer.

    :func:`cooling` (hence ``dcplan cooling``) and the plan's result tables both take
    their CDUs from :func:`fleet_cdus`, so that one fleet at one site has one CDU
    model and count wherever it is shown.

    Attributes
    ----------
    cdu_id : str
        CDU model ('' when the fleet has no liquid heat).
    name : str
        The model's display name (catalog ``name``; '' without a model).
    count : int
        CDUs including the spares [units].
    redundancy : int
        Spare CDUs [count] (0 without a model).
    capacity_kw : float
        Heat one CDU moves [kW].
    unit_capex_usd : float
        Price of one CDU, installed [USD].
    positions : float
        Rack positions per CDU [positions] (0 for plant-room units).
    pump_power_kw : float
        Rated pump power of one CDU [kW].
    liquid_heat_kw : float
        Heat to the liquid loop at full IT load [kW].
    requested_supply_c, supply_c : float
        Facility-water supply asked for and the one the CDU allows [degC].
    tcs_max_c : float
        Warmest technology-coolant supply every liquid rack accepts [degC] (inf
        without liquid racks).
    approach_k : float
        The CDU's approach, rack coolant minus facility water [K] (0 without a model).
    """

    cdu_id: str
    name: str
    count: int
    redundancy: int
    capacity_kw: float
    unit_capex_usd: float
    positions: float
    pump_power_kw: float
    liquid_heat_kw: float
    requested_supply_c: float
    supply_c: float
    tcs_max_c: float
    approach_k: float = 0.0

    @property
    def capex_usd(self) -> float:
        """All the CDUs, installed [USD]."""
        return self.count * self.unit_capex_usd

    @property
    def pump_kw(self) -> float:
        """Pump power at full load [kW] (linear in the heat moved)."""
        return self.pump_power_kw * self.liquid_heat_kw / self.capacity_kw \
            if self.capacity_kw > 0 else 0.0

    @property
    def label(self) -> str:
        """``count x id (name)``, e.g. ``7 x liquidstack_cdu_1mw (LiquidStack ...)``."""
        if not self.cdu_id:
            return "no CDUs"
        shown = f" ({self.name})" if self.name and self.name != self.cdu_id else ""
        return f"{self.count} x {self.cdu_id}{shown}"


def _checked_fleet(catalog, site: Site, racks: dict[str, int], redundancy: int | None
                   ) -> tuple[dict[str, int], list[Rack], int]:
    """The racks a site is asked to cool, checked (for :func:`fleet_cdus`, :func:`cooling`).

    Parameters
    ----------
    catalog : Catalog
        Rack catalog.
    site : Site
        The site.
    racks : dict
        Rack id -> count [racks]; zero counts are dropped.
    redundancy : int or None
        Spare CDUs; None: the default [units].

    Returns
    -------
    racks, models, redundancy
        The non-zero counts [racks], their catalog entries and the redundancy [units].

    Raises
    ------
    InputError
        A negative count or redundancy, or a rack the site cannot host.
    """
    racks = {r: int(n) for r, n in racks.items() if n}
    if any(n < 0 for n in racks.values()):
        raise _err("rack counts must be >= 0")
    models = check_racks_fit(catalog, site, racks)
    red = value("cooling", "default_cdu_redundancy") if redundancy is None else int(redundancy)
    if red < 0:
        raise _err(f"--redundancy must be >= 0 (got {red})")
    return racks, models, red


def fleet_cdus(catalog, site: Site, racks: dict[str, int], redundancy: int | None = None,
               supply_water_c: float | None = None, cdu_id: str | None = None) -> FleetCdus:
    """CDU model and count of ``racks`` ({rack_id: count}) at ``site``, at full IT load.

    The liquid heat is ``sum(racks x it_power_max_kw x liquid_heat_frac)``; the model
    is :func:`choose_cdu`'s (the fewest USD for the count :func:`cdu_count` gives,
    then the lowest pump power per kW, then the id) among in-row and facility CDUs.
    This is the one CDU answer: :func:`cooling` and the plan's tables call it.

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs.
    site : Site
        The site (facility water, design supply temperature).
    racks : dict
        Rack id -> count [racks]; each at its maximum IT power.
    redundancy : int, optional
        Spare CDUs [count] (default N+1 from the assumptions file).
    supply_water_c : float, optional
        Facility-water supply asked for [degC] (default: the site's design value, which
        may be lowered for the racks' coolant limit; given: a CDU that needs it lower
        is not chosen).
    cdu_id : str, optional
        Force this CDU model.

    Returns
    -------
    FleetCdus
        The model, count [units], unit price [USD] and the supply it allows [degC].

    Raises
    ------
    InputError
        A rack the site cannot host, a negative count or redundancy, or no CDU that
        keeps the racks' coolant cool enough.
    """
    racks, models, red = _checked_fleet(catalog, site, racks, redundancy)
    liquid = sum(n * m.it_power_max_kw * m.liquid_heat_frac
                 for m, n in zip(models, racks.values(), strict=True))
    supply = site.liquid_supply_c if supply_water_c is None else float(supply_water_c)
    if liquid <= 0:
        return FleetCdus("", "", 0, 0, 0.0, 0.0, 0.0, 0.0, liquid, supply, supply, math.inf)
    tcs_max = min(m.coolant_supply_max_c for m in models
                  if m.cooling is CoolingType.direct_liquid)
    cdu, new_supply = choose_cdu(catalog, liquid, red, supply, tcs_max, cdu_id,
                                 fixed_supply=supply_water_c is not None)
    return FleetCdus(cdu.id, cdu.name or "", cdu_count(liquid, cdu.capacity_kw, red), red,
                     cdu.capacity_kw, cdu.capex_usd, float(cdu.positions), cdu.pump_power_kw,
                     liquid, supply, new_supply, tcs_max, cdu.approach_k)


# --- the cooling result ---------------------------------------------------------------


@dataclass
class CoolingResult:
    """Cooling of a set of racks at one site.

    Attributes
    ----------
    site_id : str
    racks : dict
        Rack id -> count.
    it_kw : float
        IT heat at full load [kW].
    network_kw : float
        Network switch heat added to the air side [kW].
    liquid_heat_kw, air_heat_kw : float
        Heat to the liquid loop and to air [kW]; their sum is ``it_kw + network_kw``.
    supply_c : float
        Facility-water supply of the liquid loop [degC].
    cdu_id : str
    cdu_name : str
        The CDU model's display name (catalog ``name``).
    cdu_count, cdu_redundancy : int
    cdu_capacity_kw, cdu_capex_usd : float
        Per unit.
    pump_kw : float
        CDU pump power at full load [kW].
    crah_id : str
    crah_kw : float
        Air-side fan power [kW].
    liquid_plant, air_plant : LoopPlant
    cooling_kw_avg, cooling_kw_peak : float
        Cooling electric power, annual average (at full IT load) and at the design
        condition [kW].
    capex_usd : float
        CDUs + heat-rejection plants + CRAHs [USD].
    notes : list of str
    """

    site_id: str
    racks: dict[str, int]
    it_kw: float
    network_kw: float
    liquid_heat_kw: float
    air_heat_kw: float
    supply_c: float
    cdu_id: str
    cdu_count: int
    cdu_redundancy: int
    cdu_capacity_kw: float
    cdu_capex_usd: float
    pump_kw: float
    crah_id: str
    crah_kw: float
    liquid_plant: LoopPlant
    air_plant: LoopPlant
    cooling_kw_avg: float
    cooling_kw_peak: float
    plant_capex_usd: float
    notes: list[str] = field(default_factory=list)
    water: SiteWater | None = None
    cdu_name: str = ""

    @property
    def heat_removed_kw(self) -> float:
        """Heat removed by both paths [kW] (equals IT + network heat)."""
        return self.liquid_heat_kw + self.air_heat_kw

    @property
    def cdu_capex_total_usd(self) -> float:
        """All CDUs [USD]."""
        return self.cdu_count * self.cdu_capex_usd

    @property
    def capex_usd(self) -> float:
        """CDUs + plants + CRAHs [USD]."""
        return self.cdu_capex_total_usd + self.plant_capex_usd

    @property
    def annual_cooling_kwh(self) -> float:
        """Cooling energy of a year at full IT load [kWh]."""
        return self.cooling_kw_avg * HOURS_PER_YEAR

    def summary(self) -> dict[str, Any]:
        """Plain-dict summary (for JSON and tables)."""
        return {
            "site_id": self.site_id, "racks": dict(self.racks), "it_kw": self.it_kw,
            "network_kw": self.network_kw, "liquid_heat_kw": self.liquid_heat_kw,
            "air_heat_kw": self.air_heat_kw, "heat_removed_kw": self.heat_removed_kw,
            "supply_water_c": self.supply_c, "cdu_id": self.cdu_id, "cdu_name": self.cdu_name,
            "cdu_count": self.cdu_count, "cdu_redundancy": self.cdu_redundancy,
            "cdu_capacity_kw": self.cdu_capacity_kw, "pump_kw": self.pump_kw,
            "crah_id": self.crah_id, "crah_kw": self.crah_kw,
            "liquid_plant": vars(self.liquid_plant), "air_plant": vars(self.air_plant),
            "cooling_kw_avg": self.cooling_kw_avg, "cooling_kw_peak": self.cooling_kw_peak,
            "annual_cooling_kwh": self.annual_cooling_kwh,
            "cdu_capex_usd": self.cdu_capex_total_usd, "plant_capex_usd": self.plant_capex_usd,
            "capex_usd": self.capex_usd, "notes": list(self.notes),
            "water": self.water.summary() if self.water is not None else None,
        }


def supply_water_range() -> tuple[float, float]:
    """Facility-water supply temperatures a liquid loop can run at [degC].

    The bounds of the site schema's ``liquid_supply_c``: below the lower one the water
    is close to freezing and colder than any chiller is made to deliver (the chillers
    of the heat_rejection catalog are rated at about 7 C) and far below the dew point
    of the white space (cold plates would condense); above the upper one no rack's
    coolant limit is met.
    """
    lo, hi = -math.inf, math.inf
    for m in Site.model_fields["liquid_supply_c"].metadata:
        lo = getattr(m, "ge", None) if getattr(m, "ge", None) is not None else lo
        hi = getattr(m, "le", None) if getattr(m, "le", None) is not None else hi
    return float(lo), float(hi)


def check_supply_water(catalog, site: Site, supply_c: float) -> None:
    """Raise if ``supply_c`` [degC] is not a facility-water supply a loop can run at.

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs.
    site : Site
        The site (climate bins, design condition, facility water).
    supply_c : float
        Facility-water supply to check [degC].

    Raises
    ------
    InputError
        Outside :func:`supply_water_range` (or not a number), with the range and why.
    """
    lo, hi = supply_water_range()
    if not math.isfinite(supply_c) or not lo <= supply_c <= hi:
        chillers = [p for p in catalog.heat_rejection.values() if p.kind in CHILLER_KINDS]
        coldest = min((p.rated_supply_c for p in chillers), default=None)
        rated = (f"; the chillers in the catalog are rated for {coldest:g} C water"
                 if coldest is not None else "")
        raise _err(f"a facility-water supply of {supply_c:g} C is impossible: it must be "
                   f"between {lo:g} C (colder water freezes, condenses on cold plates and is "
                   f"colder than chillers make{rated}) and {hi:g} C; site {site.id} designs "
                   f"for {site.liquid_supply_c:g} C (design wet bulb {site.design_wet_bulb_c:g} "
                   "C)", site)


def check_racks_fit(catalog, site: Site, rack_ids) -> list[Rack]:
    """Check every rack can be hosted at ``site``; return the racks.

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs.
    site : Site
        The site (climate bins, design condition, facility water).
    rack_ids : iterable of str
        Rack ids (catalog ``racks``).

    Returns
    -------
    list of Rack
        The racks' catalog entries, in the order of ``rack_ids``.

    Raises
    ------
    InputError
        A rack denser than ``max_rack_kw``, or a liquid rack at a site without facility
        water (all problems at once).
    """
    racks = [catalog.get("racks", r) for r in rack_ids]
    problems = []
    for rack in racks:
        if rack.it_power_max_kw > site.max_rack_kw + 1e-9:
            problems.append(Problem(
                f"site {site.id}", f"rack '{rack.id}' draws {rack.it_power_max_kw:g} kW but "
                f"the densest rack this site can host is {site.max_rack_kw:g} kW; choose "
                "another site or rack", field="max_rack_kw"))
        if rack.cooling is CoolingType.direct_liquid and not site.facility_water:
            problems.append(Problem(
                f"site {site.id}", f"rack '{rack.id}' is direct-liquid-cooled but the site "
                "has no facility water; choose a site with facility_water: true or an "
                "air-cooled rack", field="facility_water"))
    if problems:
        raise InputError(problems)
    return racks


def cooling(catalog, site: Site, racks: dict[str, int], network_kw: float = 0.0,
            supply_water_c: float | None = None, redundancy: int | None = None,
            cdu_id: str | None = None) -> CoolingResult:
    """Size the cooling of ``racks`` ({rack_id: count}) at ``site`` at full IT load.

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs.
    site : Site
        The site (climate bins, design condition, facility water).
    racks : dict
        Rack id -> count [racks]; each at its maximum IT power (``it_power_max_kw``).
    network_kw : float
        Network switch and optics power whose heat goes to the air side [kW].
    supply_water_c : float, optional
        Facility-water supply of the liquid loop [degC]; default the site's design
        value, lowered if a rack's coolant limit needs it.
    redundancy : int, optional
        Spare CDUs [count] (default N+1 from the assumptions file).
    cdu_id : str, optional
        Force a CDU model.

    Returns
    -------
    CoolingResult
        CDUs, plants, cooling electric power [kW], capex [USD] and water.
    """
    racks, models, red = _checked_fleet(catalog, site, racks, redundancy)
    if supply_water_c is not None:
        check_supply_water(catalog, site, float(supply_water_c))
    cdus = fleet_cdus(catalog, site, racks, red, supply_water_c, cdu_id)
    it_kw = sum(n * m.it_power_max_kw for m, n in zip(models, racks.values(), strict=True))
    liquid = cdus.liquid_heat_kw
    air = it_kw - liquid + network_kw
    notes = []
    supply = cdus.supply_c
    if cdus.cdu_id and cdus.supply_c < cdus.requested_supply_c - 1e-9:
        notes.append(f"facility supply lowered from {cdus.requested_supply_c:g} C to "
                     f"{cdus.supply_c:g} C so that rack coolant stays at or below "
                     f"{cdus.tcs_max_c:g} C after the CDU's "
                     f"{cdus.approach_k:g} K approach")
    pump_kw = cdus.pump_kw
    n_cdu = cdus.count
    crah_kw = 0.0
    crah_id = ""
    crah_capex = 0.0
    if air > 0:
        crahs = sorted((p for p in catalog.heat_rejection.values()
                        if p.kind is HeatRejectionKind.crah), key=lambda p: p.id)
        if not crahs:
            raise _err("air-side cooling needs a 'crah' entry (fan coil power per kW of "
                       "heat) in the heat_rejection catalog")
        crah = crahs[0]
        crah_id = crah.id
        crah_kw = crah.electric_kw_per_kw_heat * air
        crah_capex = crah.capex_usd_per_kw * air
    it_kwh = (it_kw + network_kw) * HOURS_PER_YEAR
    liquid_plant, air_plant, water = _plants(catalog, site, supply, liquid, air, it_kwh, True)
    if not water.within_limit:
        over = water.annual_m3
        liquid_plant, air_plant, water = _plants_within_limit(catalog, site, supply, liquid,
                                                              air, it_kwh)
        notes.append(f"the plants of least energy would use {over:,.0f} m3 of water a year, "
                     f"over the site's {site.water_limit_m3_per_year:,.0f} m3/year "
                     f"allowance; chosen instead: {_plant_text(liquid_plant, air_plant)}, "
                     f"{water.annual_m3:,.0f} m3/year")

    avg = (pump_kw + liquid * liquid_plant.kw_per_kw_avg + crah_kw
           + air * air_plant.kw_per_kw_avg)
    peak = (pump_kw + liquid * liquid_plant.kw_per_kw_peak + crah_kw
            + air * air_plant.kw_per_kw_peak)
    plant_capex = (liquid * liquid_plant.capex_usd_per_kw + air * air_plant.capex_usd_per_kw
                   + crah_capex)
    return CoolingResult(
        site_id=site.id, racks=racks, it_kw=it_kw, network_kw=network_kw,
        liquid_heat_kw=liquid, air_heat_kw=air, supply_c=supply,
        cdu_id=cdus.cdu_id, cdu_count=n_cdu, cdu_redundancy=cdus.redundancy,
        cdu_capacity_kw=cdus.capacity_kw, cdu_capex_usd=cdus.unit_capex_usd, pump_kw=pump_kw,
        crah_id=crah_id,
        crah_kw=crah_kw, liquid_plant=liquid_plant, air_plant=air_plant,
        cooling_kw_avg=avg, cooling_kw_peak=peak, plant_capex_usd=plant_capex, notes=notes,
        water=water, cdu_name=cdus.name)


def _plants_within_limit(catalog, site: Site, supply: float, liquid: float, air: float,
                         it_kwh: float) -> tuple[LoopPlant, LoopPlant, SiteWater]:
    """The liquid and air plants of least annual energy whose water stays within the limit.

    Each loop may keep an evaporative plant (an adiabatic cooler, or a tower on one loop
    only) as long as the two together stay within ``water_limit_m3_per_year``; then
    the lowest peak, then the lowest capex. Water-free plants on both loops always fit.
    """
    def options(heat, supply_c):
        if heat <= 0:
            return [LoopPlant(supply_c)]
        return loop_plant_options(catalog, site, supply_c, True) or \
            [loop_plant(catalog, site, supply_c, False)]

    best = None
    for lp in options(liquid, supply):
        for ap in options(air, site.air_chilled_water_c):
            water = _site_water(catalog, site, lp, ap, liquid, air, it_kwh)
            if not water.within_limit:
                continue
            key = (round(liquid * lp.kw_per_kw_avg + air * ap.kw_per_kw_avg, 9),
                   round(liquid * lp.kw_per_kw_peak + air * ap.kw_per_kw_peak, 9),
                   round(liquid * lp.capex_usd_per_kw + air * ap.capex_usd_per_kw, 6))
            if best is None or key < best[0]:
                best = (key, lp, ap, water)
    if best is None:  # the water-free plants (no catalog lists only wet plants)
        return _plants(catalog, site, supply, liquid, air, it_kwh, False)
    return best[1], best[2], best[3]


def _plant_text(liquid_plant: LoopPlant, air_plant: LoopPlant) -> str:
    parts = []
    for name, p in (("liquid loop", liquid_plant), ("air loop", air_plant)):
        ids = " + ".join(i for i in (p.free_id, p.chiller_id) if i)
        if ids:
            parts.append(f"{name} {ids}")
    return "; ".join(parts) or "no plant"


def _plants(catalog, site: Site, supply: float, liquid: float, air: float, it_kwh: float,
            evaporative: bool) -> tuple[LoopPlant, LoopPlant, SiteWater]:
    """Plants of the liquid and air loops and their water over a year."""
    liquid_plant = loop_plant(catalog, site, supply, evaporative) if liquid > 0 \
        else LoopPlant(supply)
    air_plant = loop_plant(catalog, site, site.air_chilled_water_c, evaporative) if air > 0 \
        else LoopPlant(site.air_chilled_water_c)
    return liquid_plant, air_plant, _site_water(catalog, site, liquid_plant, air_plant,
                                                liquid, air, it_kwh)


def _site_water(catalog, site: Site, liquid_plant: LoopPlant, air_plant: LoopPlant,
                liquid: float, air: float, it_kwh: float) -> SiteWater:
    """The site's water over a year with these loop plants (heat [kW], IT energy [kWh])."""
    loops = {}
    if liquid > 0:
        loops["liquid"] = loop_water(catalog, site, liquid_plant, liquid)
    if air > 0:
        loops["air"] = loop_water(catalog, site, air_plant, air)
    return SiteWater(loops, it_kwh, site.water_limit_m3_per_year)
