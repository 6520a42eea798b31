"""Facility models: power chain, cooling (CDUs, heat rejection, PUE), network fabric.

CONTRACT (used by the planner; keep these names and meanings):

``coefficients(catalog, site, rack_id, n_racks, optics=None, oversubscription=1.0)
-> FacilityCoefficients`` gives linear per-rack / per-kW coefficients at the planned
scale; ``size_fleet(catalog, site, fleet, optics=None, oversubscription=1.0)
-> FleetSizing`` sizes the exact network and cooling for a solved fleet
``{rack_id: count}`` at one site.
"""

from __future__ import annotations

from dataclasses import dataclass


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
        Annual-average cooling electric power per kW of IT heat [kW/kW].
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


def coefficients(catalog, site, rack_id, n_racks, optics=None, oversubscription=1.0):
    """Return :class:`FacilityCoefficients` for ``n_racks`` of ``rack_id`` at ``site``."""
    raise NotImplementedError


def size_fleet(catalog, site, fleet, optics=None, oversubscription=1.0):
    """Size the exact network and cooling for ``fleet`` ({rack_id: count}) at ``site``."""
    raise NotImplementedError
