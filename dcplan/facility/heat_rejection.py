"""Heat-rejection plant physics: the ambient that limits a plant, free cooling, chiller power.

A free-cooling plant (dry cooler, adiabatic cooler, cooling tower) holds a loop's
supply while ``ambient + approach_k <= supply``; a chiller draws
``e = e_rated * max(floor, 1 + s * (lift - lift_rated))`` kW per kW of heat with
``lift = ambient - supply``, the ambient being dry- or wet-bulb per the plant's
``ambient_basis``. The cooling model (:mod:`dcplan.facility.cooling`) chooses plants
and weighs their power by the climate hours with these; the water model
(:mod:`dcplan.facility.water`) runs each plant in the same climate bins.
"""

from __future__ import annotations

from dcplan.facility.assumptions import value
from dcplan.schema import HeatRejection


def ambient_for(plant: HeatRejection, dry_bulb_c: float, wet_bulb_c: float) -> float:
    """Return the ambient temperature that limits ``plant`` [degC].

    Parameters
    ----------
    plant : HeatRejection
        The heat-rejection plant (catalog entry).
    dry_bulb_c, wet_bulb_c : float
        Outdoor condition: dry- and wet-bulb temperature [degC].

    Returns
    -------
    float
        The wet bulb for a plant whose ``ambient_basis`` is ``wet_bulb``, else the dry bulb
        [degC].
    """
    return wet_bulb_c if plant.ambient_basis == "wet_bulb" else dry_bulb_c


def free_cooling_works(plant: HeatRejection, supply_c: float, dry_bulb_c: float,
                       wet_bulb_c: float) -> bool:
    """Whether a free-cooling plant reaches ``supply_c`` [degC] at this ambient.

    Parameters
    ----------
    plant : HeatRejection
        The heat-rejection plant (catalog entry).
    supply_c : float
        Loop supply the plant must hold [degC].
    dry_bulb_c, wet_bulb_c : float
        Outdoor condition: dry- and wet-bulb temperature [degC].

    Returns
    -------
    bool
        True when ``ambient + approach_k <= supply_c``.
    """
    approach = plant.approach_k or 0.0
    return ambient_for(plant, dry_bulb_c, wet_bulb_c) + approach <= supply_c + 1e-9


def chiller_kw_per_kw(plant: HeatRejection, supply_c: float, dry_bulb_c: float,
                      wet_bulb_c: float) -> float:
    """Chiller electric power per kW of heat at this lift [kW/kW].

    ``e_rated * max(floor, 1 + lift_sensitivity_per_k * (lift - lift_rated))`` with
    ``lift = ambient - supply`` [K] and ``floor`` from the assumptions file.

    Parameters
    ----------
    plant : HeatRejection
        The chiller (catalog entry).
    supply_c : float
        Loop supply the chiller delivers [degC].
    dry_bulb_c, wet_bulb_c : float
        Outdoor condition: dry- and wet-bulb temperature [degC].

    Returns
    -------
    float
        Chiller electric power per kW of heat rejected [kW/kW].
    """
    lift = ambient_for(plant, dry_bulb_c, wet_bulb_c) - supply_c
    rated = plant.rated_ambient_c - plant.rated_supply_c
    factor = 1.0 + plant.lift_sensitivity_per_k * (lift - rated)
    return plant.electric_kw_per_kw_heat * max(value("cooling", "chiller_min_power_frac"),
                                               factor)
