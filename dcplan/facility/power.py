"""Power chain: IT, network and cooling loads -> power drawn from the grid.

IT and network loads pass through the UPS and the distribution (transformers,
switchgear, busways); cooling loads pass through the distribution only, unless the
site puts them on the UPS (``mechanical_on_ups``)::

    facility = (it + network) / (eta_ups * eta_dist) + cooling / eta_mech
    eta_mech = eta_ups * eta_dist if mechanical_on_ups else eta_dist

PUE = facility / (it + network): network switches are IT equipment in The Green
Grid's definition; the rack's NICs are already inside its IT power.
"""

from __future__ import annotations

from dataclasses import dataclass

from dcplan.sites import Site


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


def power_chain(site: Site, it_kw: float, network_kw: float, cooling_kw: float) -> PowerChain:
    """Grid power for the given loads at ``site``.

    Parameters
    ----------
    site : Site
        Gives ``ups_efficiency``, ``distribution_efficiency``, ``mechanical_on_ups``.
    it_kw, network_kw, cooling_kw : float
        Loads [kW].

    Returns
    -------
    PowerChain
    """
    eta_it, eta_mech = site.loss_chain
    facility = (it_kw + network_kw) / eta_it + cooling_kw / eta_mech
    loss = facility - (it_kw + network_kw + cooling_kw)
    return PowerChain(it_kw, network_kw, cooling_kw, loss, facility)
