"""The variables, constraints and cost expressions of one planning model (:class:`ModelVars`).

Filled by the constraint families of :mod:`dcplan.planner.model` and
:mod:`dcplan.planner.network_rows`; read by the result tables, the analysis and the
MIP starts. ``_lin`` and ``_merged`` build the families' affine expressions.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import pulp

from dcplan.planner.names import lp_name


def _lin(terms) -> pulp.LpAffineExpression:
    """Affine expression from ``(variable, coefficient)`` pairs (fast path).

    A variable given twice keeps its last coefficient: merge repeated variables first
    (:func:`_merged`).
    """
    return pulp.LpAffineExpression([(v, c) for v, c in terms if c != 0])


def _merged(terms) -> list:
    """``(variable, coefficient)`` pairs with the coefficients of a repeated variable summed."""
    acc: dict = {}
    for v, c in terms:
        acc[v] = acc.get(v, 0.0) + c
    return list(acc.items())


@dataclass
class ModelVars:
    """Variables, constraints and cost expressions of one model.

    Attributes
    ----------
    new : dict
        (r, s, p) -> integer racks installed in period p [racks].
    inst : dict
        (r, s, p) -> racks in service [racks].
    alloc : dict
        (r, s, w, k, p) -> racks of r at s serving pool k of w at peak [racks].
    unserved : dict
        (w, k, p) -> peak demand not served (elastic model only) [tokens/s].
    cdu, cdu_on, cdu_new : dict
        (s, c, p) -> CDUs in service [-], whether any are needed [0/1], CDUs bought [-].
    built : dict
        (s, p) -> facility capacity added in period p [kW].
    fac_peak, fac_avg : dict
        (s, p) -> facility power on the design day at peak load / annual average [kW]
        (expressions; with several representative hours the peak is the variable
        ``fpk[s,p]``, at least the power of every hour).
    fac_hour : dict
        (s, p, h) -> facility power in representative hour h [kW] (expressions).
    fpk : dict
        (s, p) -> facility peak over the representative hours [kW] (several hours only).
    spare_on : dict
        (r, s, p) -> 1 when the site hosts rack type r, so its spare racks are kept [0/1].
    req, req_assessed : dict
        (s, q) -> grid capacity requested in period q without / with the assessment [kW].
    connected : dict
        (s, p) -> grid capacity connected in period p [kW] (expressions).
    demand_unit : dict
        (w, pool, p) -> tokens in period p per unit of the demand row [tokens per
        token/s]: the row is in peak tokens/s for one schedule, in mean tokens/s for the
        mix of a flexible workload's schedules.
    costs : dict
        (category, p) -> undiscounted cost expression [USD].
    cons : dict
        family -> {keys -> constraint}.
    elastic : bool
    staffed : dict
        (s, p) -> 1 when site s hosts any racks in period p, so its per-site staff is
        paid [0/1] (see :func:`add_operations_costs`).
    fleet_on : dict
        p -> 1 when the fleet has any racks in period p (per-fleet staff) [0/1].
    fabric : dict
        (r, s, fabric, p) -> :class:`FabricVars` (integer switches and links).
    fabric_int : list
        The fabrics' integer and binary variables.
    fabric_item : dict
        (s, item, p) -> (expression, unit price [USD]) of network items
        (:func:`fabric_items`).
    net_buy : dict
        (s, item, p) -> network bought [switches, or USD of links].
    net_racks : dict
        (s, p) -> network racks [positions].
    net_tier : dict
        (r, s, p) -> [(tier, on, racks, bought)] of a linear network with tiers
        (:attr:`RackSiteData.network_tiers`): binary ``on`` when the racks in service
        are in that tier's interval (None with one tier), the racks in service
        ``racks`` counted in it, and the network bought in the period ``bought`` [USD]
        (the same in every entry).
    """

    new: dict = field(default_factory=dict)
    inst: dict = field(default_factory=dict)
    alloc: dict = field(default_factory=dict)
    unserved: dict = field(default_factory=dict)
    cdu: dict = field(default_factory=dict)
    cdu_on: dict = field(default_factory=dict)
    cdu_new: dict = field(default_factory=dict)
    built: dict = field(default_factory=dict)
    fac_peak: dict = field(default_factory=dict)
    fac_avg: dict = field(default_factory=dict)
    fac_hour: dict = field(default_factory=dict)
    fpk: dict = field(default_factory=dict)
    spare_on: dict = field(default_factory=dict)
    req: dict = field(default_factory=dict)
    req_assessed: dict = field(default_factory=dict)
    connected: dict = field(default_factory=dict)
    demand_unit: dict = field(default_factory=dict)
    costs: dict = field(default_factory=dict)
    cons: dict = field(default_factory=lambda: defaultdict(dict))
    staffed: dict = field(default_factory=dict)
    fleet_on: dict = field(default_factory=dict)
    elastic: bool = False
    fabric: dict = field(default_factory=dict)
    fabric_int: list = field(default_factory=list)
    fabric_item: dict = field(default_factory=dict)
    net_buy: dict = field(default_factory=dict)
    net_racks: dict = field(default_factory=dict)
    net_tier: dict = field(default_factory=dict)

    def add(self, prob: pulp.LpProblem, family: str, keys: tuple, constraint) -> None:
        """Add ``constraint`` to ``prob`` named ``lp_name(family, *keys)`` and record it."""
        name = lp_name(family, *keys)
        constraint.name = name
        prob.addConstraint(constraint, name)
        self.cons[family][keys] = constraint

    def integers(self) -> list[pulp.LpVariable]:
        """All integer and binary variables."""
        return [*self.new.values(), *self.cdu.values(), *self.cdu_on.values(),
                *self.spare_on.values(), *self.staffed.values(), *self.fleet_on.values(),
                *self.fabric_int,
                *(t[1] for ts in self.net_tier.values() for t in ts if t[1] is not None)]

    def network_terms(self, r: str, s: str, p: int, what: int) -> list | None:
        """Linear-network terms of (r, s, p) per tier: (racks in the tier, figure) pairs.

        ``what``: 0 kW, 2 positions per rack in service. None without tiers (the caller
        uses the period's single figure).
        """
        tiers = self.net_tier.get((r, s, p))
        if tiers is None:
            return None
        return [(n, t[2 + what]) for t, _on, n, _b in tiers]
