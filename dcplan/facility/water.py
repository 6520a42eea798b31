"""Water use of heat rejection: litres per kWh of heat by plant and climate bin, WUE.

Cooling towers (and the towers of water-cooled chillers) evaporate water; per climate
bin the evaporation per kWh of heat follows from a heat and moisture balance of the air
through the tower (the psychrometric relations of the ASHRAE Handbook - Fundamentals):
air enters at the bin's dry and wet bulb and leaves saturated at the mean water
temperature in the fill, so::

    evaporation [kg/kWh] = 3600 * (W_out - W_in) / (h_out - h_in)

with humidity ratios ``W`` [kg/kg dry air] and enthalpies ``h`` [kJ/kg dry air]. Drift
is ``drift_frac`` of the circulating water (``3600 / (4.186 * range_k)`` kg per kWh);
blowdown keeps the basin at ``cycles_of_concentration``:
``blowdown = evaporation / (cycles - 1) - drift``; make-up = evaporation + drift +
blowdown. Adiabatic coolers wet their pads only when dry operation cannot hold the
supply (above the switch-over dry bulb ``supply - dry_approach_k``) and then evaporate
``3600 * effectiveness * (dry bulb - wet bulb) / (h_fg * air_rise_k)`` kg per kWh, plus
bleed at the same cycles rule. Dry coolers, air-cooled chillers and CRAHs use none.

WUE is The Green Grid's site water usage effectiveness: annual site water [L] over IT
equipment energy [kWh] (The Green Grid White Paper #35, 2011); network switches count
as IT equipment, as in PUE. 1 kg of water = 1 L.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from dcplan.facility.heat_rejection import chiller_kw_per_kw, free_cooling_works
from dcplan.schema import HeatRejection, HeatRejectionKind
from dcplan.units import HOURS_PER_YEAR

#: Specific heat of water [kJ/(kg K)].
CP_WATER = 4.186
#: Latent heat of evaporation of water near 25 degC [kJ/kg].
H_FG = 2450.0
#: Sea-level atmospheric pressure [kPa].
P_ATM = 101.325

EVAPORATIVE = (HeatRejectionKind.cooling_tower, HeatRejectionKind.chiller_water_cooled)


def saturation_pressure_kpa(t_c: float) -> float:
    """Saturation vapour pressure of water [kPa] at ``t_c`` [degC] (Magnus form).

    Parameters
    ----------
    t_c : float
        Temperature [degC].

    Returns
    -------
    float
        Saturation vapour pressure [kPa].
    """
    return 0.61094 * math.exp(17.625 * t_c / (t_c + 243.04))


def saturation_ratio(t_c: float, p_kpa: float = P_ATM) -> float:
    """Humidity ratio of saturated air at ``t_c`` [degC] [kg water / kg dry air].

    Parameters
    ----------
    t_c : float
        Temperature [degC].
    p_kpa : float
        Atmospheric pressure [kPa] (default sea level).

    Returns
    -------
    float
        Humidity ratio of saturated air [kg water / kg dry air].
    """
    p = saturation_pressure_kpa(t_c)
    return 0.621945 * p / (p_kpa - p)


def humidity_ratio(dry_bulb_c: float, wet_bulb_c: float) -> float:
    """Humidity ratio of air at a dry and wet bulb [kg/kg dry air].

    The ASHRAE psychrometric relation for a wet bulb above freezing (used below it too,
    a small error on a small quantity).

    Parameters
    ----------
    dry_bulb_c : float
        Dry-bulb temperature [degC].
    wet_bulb_c : float
        Wet-bulb temperature [degC].

    Returns
    -------
    float
        Humidity ratio, at least 0 [kg water / kg dry air].
    """
    ws = saturation_ratio(wet_bulb_c)
    w = ((2501.0 - 2.326 * wet_bulb_c) * ws - 1.006 * (dry_bulb_c - wet_bulb_c)) / \
        (2501.0 + 1.86 * dry_bulb_c - 4.186 * wet_bulb_c)
    return max(0.0, w)


def enthalpy(t_c: float, w: float) -> float:
    """Moist-air enthalpy [kJ/kg dry air] at ``t_c`` [degC] and humidity ratio ``w``.

    Parameters
    ----------
    t_c : float
        Dry-bulb temperature [degC].
    w : float
        Humidity ratio [kg water / kg dry air].

    Returns
    -------
    float
        Moist-air enthalpy [kJ/kg dry air].
    """
    return 1.006 * t_c + w * (2501.0 + 1.86 * t_c)


def tower_evaporation_l_per_kwh(dry_bulb_c: float, wet_bulb_c: float, water_out_c: float,
                                range_k: float) -> float:
    """Evaporation of a wet tower per kWh of heat [L/kWh].

    Air enters at (``dry_bulb_c``, ``wet_bulb_c``) and leaves saturated at the mean
    water temperature ``water_out_c + range_k / 2`` [degC].

    Parameters
    ----------
    dry_bulb_c : float
        Dry bulb of the entering air [degC].
    wet_bulb_c : float
        Wet bulb of the entering air [degC].
    water_out_c : float
        Cold-water temperature leaving the tower [degC].
    range_k : float
        Tower range, hot minus cold water [K].

    Returns
    -------
    float
        Water evaporated per kWh of heat rejected [L/kWh].
    """
    t_ex = water_out_c + range_k / 2.0
    w_in = humidity_ratio(dry_bulb_c, wet_bulb_c)
    h_in = enthalpy(dry_bulb_c, w_in)
    w_ex = saturation_ratio(t_ex)
    h_ex = enthalpy(t_ex, w_ex)
    dh = h_ex - h_in
    if dh <= 1e-9:
        return 3600.0 / H_FG  # air cannot take the heat sensibly: all latent
    return max(0.0, 3600.0 * (w_ex - w_in) / dh)


def makeup_l_per_kwh(evaporation: float, plant: HeatRejection, drift: bool = True
                     ) -> tuple[float, float, float]:
    """(drift, blowdown, make-up) per kWh of heat [L/kWh] for ``evaporation`` [L/kWh].

    Parameters
    ----------
    evaporation : float
        Evaporation per kWh of heat [L/kWh].
    plant : HeatRejection
        The plant (``drift_frac``, ``range_k``, ``cycles_of_concentration``).
    drift : bool
        Count drift (False for adiabatic pads).

    Returns
    -------
    (float, float, float)
        Drift, blowdown and make-up (evaporation + drift + blowdown) per kWh of heat
        [L/kWh].
    """
    d = 0.0
    if drift and plant.drift_frac:
        d = plant.drift_frac * 3600.0 / (CP_WATER * plant.range_k)
    c = plant.cycles_of_concentration or math.inf
    blow = max(0.0, evaporation / (c - 1.0) - d) if math.isfinite(c) else 0.0
    return d, blow, evaporation + d + blow


def plant_water_l_per_kwh(plant: HeatRejection, supply_c: float, dry_bulb_c: float,
                          wet_bulb_c: float, chiller_kw_per_kw: float = 0.0) -> float:
    """Make-up water of ``plant`` per kWh of loop heat in one climate condition [L/kWh].

    Parameters
    ----------
    plant : HeatRejection
        The plant running in this condition.
    supply_c : float
        Loop supply the plant holds [degC].
    dry_bulb_c, wet_bulb_c : float
        Outdoor condition [degC].
    chiller_kw_per_kw : float
        Water-cooled chillers: compressor power per kW of heat [kW/kW]; the tower
        rejects heat plus compressor power.

    Returns
    -------
    float
        Make-up water per kWh of loop heat; 0 for plants that use none [L/kWh].
    """
    if plant.kind is HeatRejectionKind.cooling_tower:
        e = tower_evaporation_l_per_kwh(dry_bulb_c, wet_bulb_c, supply_c, plant.range_k)
        return makeup_l_per_kwh(e, plant)[2]
    if plant.kind is HeatRejectionKind.chiller_water_cooled:
        cw = wet_bulb_c + plant.tower_approach_k
        e = tower_evaporation_l_per_kwh(dry_bulb_c, wet_bulb_c, cw, plant.range_k)
        return makeup_l_per_kwh(e, plant)[2] * (1.0 + chiller_kw_per_kw)
    if plant.kind is HeatRejectionKind.adiabatic_dry_cooler:
        if dry_bulb_c + plant.dry_approach_k <= supply_c + 1e-9:
            return 0.0  # dry pads below the switch-over temperature
        e = 3600.0 * plant.adiabatic_effectiveness * max(0.0, dry_bulb_c - wet_bulb_c) / \
            (H_FG * plant.air_rise_k)
        return makeup_l_per_kwh(e, plant, drift=False)[2]
    return 0.0


@dataclass
class LoopWater:
    """Water of one loop's plant over a year at full load.

    Attributes
    ----------
    supply_c : float
    heat_kw : float
        Heat of the loop [kW].
    annual_l : float
        Make-up water [L/year].
    wet_hours : float
        Hours a year the plant uses water [h].
    by_plant : dict
        Plant id -> L/year.
    switchover_dry_bulb_c : float or None
        Adiabatic coolers: dry bulb above which the pads are wetted [degC].
    """

    supply_c: float
    heat_kw: float
    annual_l: float = 0.0
    wet_hours: float = 0.0
    by_plant: dict[str, float] = field(default_factory=dict)
    switchover_dry_bulb_c: float | None = None

    @property
    def l_per_kwh_heat(self) -> float:
        """Annual make-up per kWh of heat rejected [L/kWh]."""
        return self.annual_l / (self.heat_kw * HOURS_PER_YEAR) if self.heat_kw > 0 else 0.0


def loop_water(catalog, site, plant: Any, heat_kw: float) -> LoopWater:
    """Annual make-up water of a loop plant (:class:`~dcplan.facility.cooling.LoopPlant`).

    In each climate bin the free-cooling plant runs where it can hold the supply, the
    chiller otherwise (the same rule as the cooling energy).

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs.
    site : Site
        The site (climate bins, design condition, facility water).
    plant : LoopPlant
        The loop's free-cooling plant and chiller.
    heat_kw : float
        Heat of the loop at full IT load (racks at their maximum IT power) [kW].

    Returns
    -------
    LoopWater
        Annual make-up [L/year], wet hours [h] and litres by plant.
    """
    out = LoopWater(plant.supply_c, heat_kw)
    if heat_kw <= 0:
        return out
    free = catalog.get("heat_rejection", plant.free_id) if plant.free_id else None
    chiller = catalog.get("heat_rejection", plant.chiller_id) if plant.chiller_id else None
    if free is not None and free.kind is HeatRejectionKind.adiabatic_dry_cooler:
        out.switchover_dry_bulb_c = plant.supply_c - free.dry_approach_k
    for b in site.climate:
        if free is not None and free_cooling_works(free, plant.supply_c, b.dry_bulb_c,
                                                   b.wet_bulb_c):
            used, per = free, plant_water_l_per_kwh(free, plant.supply_c, b.dry_bulb_c,
                                                    b.wet_bulb_c)
        elif chiller is not None:
            e = chiller_kw_per_kw(chiller, plant.supply_c, b.dry_bulb_c, b.wet_bulb_c)
            used, per = chiller, plant_water_l_per_kwh(chiller, plant.supply_c,
                                                       b.dry_bulb_c, b.wet_bulb_c, e)
        else:
            continue
        litres = per * heat_kw * b.hours
        if litres > 0:
            out.annual_l += litres
            out.wet_hours += b.hours
            out.by_plant[used.id] = out.by_plant.get(used.id, 0.0) + litres
    return out


@dataclass
class SiteWater:
    """Water of a site's cooling over a year at full load.

    Attributes
    ----------
    loops : dict
        ``liquid`` / ``air`` -> :class:`LoopWater`.
    it_kwh : float
        IT (incl. network) energy of the year [kWh].
    limit_m3 : float or None
        The site's allowance [m3/year].
    """

    loops: dict[str, LoopWater]
    it_kwh: float
    limit_m3: float | None = None

    @property
    def annual_m3(self) -> float:
        """Make-up water of all loops [m3/year]."""
        return sum(w.annual_l for w in self.loops.values()) / 1000.0

    @property
    def wue_l_per_kwh(self) -> float:
        """Site WUE: annual water over IT energy [L/kWh]."""
        return self.annual_m3 * 1000.0 / self.it_kwh if self.it_kwh > 0 else 0.0

    @property
    def within_limit(self) -> bool:
        """Whether the water fits the site's allowance (True without one)."""
        return self.limit_m3 is None or self.annual_m3 <= self.limit_m3 + 1e-9

    def summary(self) -> dict[str, Any]:
        """Plain-dict summary (for JSON and tables)."""
        return {
            "annual_m3": self.annual_m3, "wue_l_per_kwh": self.wue_l_per_kwh,
            "limit_m3_per_year": self.limit_m3, "within_limit": self.within_limit,
            "loops": {k: {"supply_c": w.supply_c, "heat_kw": w.heat_kw,
                          "annual_m3": w.annual_l / 1000.0, "wet_hours": w.wet_hours,
                          "l_per_kwh_heat": w.l_per_kwh_heat,
                          "by_plant_m3": {p: v / 1000.0 for p, v in w.by_plant.items()},
                          "switchover_dry_bulb_c": w.switchover_dry_bulb_c}
                      for k, w in self.loops.items()},
        }
