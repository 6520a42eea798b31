"""Facility models: power chain, cooling (CDUs, heat rejection, PUE), network fabric.

Public API used by the planner (keep these names and meanings stable):

``coefficients(catalog, site, rack_id, n_racks, optics=None, oversubscription=1.0)
-> FacilityCoefficients`` gives linear per-rack / per-kW coefficients at the planned
scale; ``size_fleet(catalog, site, fleet, optics=None, oversubscription=1.0)
-> FleetSizing`` sizes the exact network and cooling for a solved fleet
``{rack_id: count}`` at one site; ``fleet_cdus(catalog, site, fleet) -> FleetCdus`` is
the one CDU answer for a fleet at a site (``cooling`` and the plan's tables use it).

Modules: :mod:`~dcplan.facility.power` (power chain), :mod:`~dcplan.facility.cooling`
(CDUs, heat rejection, hours-weighted cooling power),
:mod:`~dcplan.facility.heat_rejection` (plant physics: free cooling, chiller power),
:mod:`~dcplan.facility.water` (water use, WUE), :mod:`~dcplan.facility.network`
(fabric graph), :mod:`~dcplan.facility.steps` (fabric counts as step functions of the
racks, for an integer program), :mod:`~dcplan.facility.bom` (equipment list of a sized
site),
:mod:`~dcplan.facility.coefficients` (planner coefficients and exact sizing).
Equations and assumptions: ``docs/facility.md``.
"""

from __future__ import annotations

from dcplan.facility.coefficients import (
    FacilityCoefficients,
    FleetSizing,
    coefficients,
    size_fleet,
)
from dcplan.facility.cooling import CoolingResult, FleetCdus, cooling, fleet_cdus
from dcplan.facility.network import NetworkResult, network, write_graphml
from dcplan.facility.power import PowerChain, power_chain
from dcplan.facility.steps import FabricSteps, breakpoints, fabric_steps

__all__ = [
    "CoolingResult",
    "FabricSteps",
    "FacilityCoefficients",
    "FleetCdus",
    "FleetSizing",
    "NetworkResult",
    "PowerChain",
    "breakpoints",
    "coefficients",
    "cooling",
    "fabric_steps",
    "fleet_cdus",
    "network",
    "power_chain",
    "size_fleet",
    "write_graphml",
]
