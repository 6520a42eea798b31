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

    Each field is a dict from its index to pulp variables (or expressions, where said);
    the comment above it gives the index, the meaning and the unit, and in quotes the
    LP name of its variables (:func:`~dcplan.planner.names.lp_name`), which the
    formulation in ``docs/planner.md`` uses. Indices: rack type ``r``, site ``s``,
    workload ``w``, capacity pool ``k``, period ``p`` (``q`` for the period of a grid
    request), CDU model ``c``, representative hour ``h``.

    ``facility_peak_kw`` is an expression; with several representative hours it is
    the variable ``facility_peak_over_hours_kw[s, p]``, at least the power of every hour.
    ``demand_row_tokens`` converts a demand row to tokens: the row is in peak tokens/s
    for one schedule, in mean tokens/s for the mix of a flexible workload's schedules.
    ``network_tier_vars`` holds, per (r, s, p) of a linear network with tiers
    (:attr:`~dcplan.planner.inputs.RackSiteData.network_tiers`), a list of
    ``(tier, on, racks, bought)``: binary ``on`` when the racks in service are in that
    tier's interval (None with one tier), the racks in service counted in it, and the
    network bought in the period [USD] (the same in every entry).
    """

    #: (r, s, p) -> integer racks bought (installed) in period p [racks] ("new").
    racks_bought: dict = field(default_factory=dict)
    #: (r, s, p) -> racks in service [racks] ("inst").
    racks_in_service: dict = field(default_factory=dict)
    #: (r, s, w, k, p, c) -> racks of r at s serving pool k of w at peak, at cap level c
    #: (None: uncapped rack type) [racks] ("alloc", the cap's label last when capped).
    racks_allocated: dict = field(default_factory=dict)
    #: (r, s, p, c) -> integer racks in service running at cap level c [racks] ("inst_cap").
    racks_at_cap: dict = field(default_factory=dict)
    #: (w, k, p) -> peak demand not served, elastic model only [tokens/s] ("unserved").
    unserved_tokens_per_s: dict = field(default_factory=dict)
    #: (s, c, p) -> integer CDUs in service [CDUs] ("cdu").
    cdus_in_service: dict = field(default_factory=dict)
    #: (s, c, p) -> 1 when the site uses CDU model c in period p [0/1] ("cdu_on"; binary,
    #: continuous with ``cdu_choice: milp``).
    cdu_model_used: dict = field(default_factory=dict)
    #: (s, c, p) -> CDUs bought in period p [CDUs] ("cdu_new").
    cdus_bought: dict = field(default_factory=dict)
    #: (s, c) -> 1 when site s's CDUs are of model c, the same in every period
    #: (``cdu_choice: milp``) [0/1] ("cdu_pick"); a facility integer, like the CDUs.
    cdu_site_model: dict = field(default_factory=dict)
    #: (s, p) -> 1 when site s has had liquid-cooled racks by period p, so its CDUs are
    #: kept (``cdu_choice: milp``; ``cdu_model_used`` is then ``use x pick``, continuous)
    #: [0/1] ("cdu_use"); a facility integer.
    cdu_site_used: dict = field(default_factory=dict)
    #: (s, c, p) -> liquid heat at full load that model c moves at s (``cdu_choice:
    #: milp``; 0 unless c is the site's model) [kW] ("cdu_kw").
    cdu_heat_kw: dict = field(default_factory=dict)
    #: (s, p) -> facility capacity built in period p [kW] ("build").
    capacity_built_kw: dict = field(default_factory=dict)
    #: (s, p) -> facility power on the design day at peak load [kW] (expressions).
    facility_peak_kw: dict = field(default_factory=dict)
    #: (s, p) -> facility power, annual average [kW] (expressions).
    facility_avg_kw: dict = field(default_factory=dict)
    #: (s, p, h) -> facility power in representative hour h [kW] (expressions).
    facility_hour_kw: dict = field(default_factory=dict)
    #: (s, p) -> facility peak over the representative hours, several hours only [kW] ("fpk").
    facility_peak_over_hours_kw: dict = field(default_factory=dict)
    #: (r, s, p) -> 1 when the site hosts rack type r, so its spares are kept [0/1] ("spare_on").
    spares_kept: dict = field(default_factory=dict)
    #: (s, q) -> grid capacity requested in period q without the assessment [kW] ("req").
    grid_requested_kw: dict = field(default_factory=dict)
    #: (s, q) -> grid capacity requested in period q with the assessment [kW] ("req_assessed").
    grid_requested_assessed_kw: dict = field(default_factory=dict)
    #: (s, q) -> curtailable grid capacity requested in period q [kW] ("req_flex").
    grid_requested_flex_kw: dict = field(default_factory=dict)
    #: (s, p) -> curtailable grid capacity energised by period p [kW] (expressions).
    grid_flexible_kw: dict = field(default_factory=dict)
    #: (s, p) -> grid capacity connected in period p [kW] (expressions).
    grid_connected_kw: dict = field(default_factory=dict)
    #: (w, k, p) -> tokens in period p per unit of the demand row [tokens per token/s].
    demand_row_tokens: dict = field(default_factory=dict)
    #: (category, p) -> undiscounted cost expression [USD].
    costs_usd: dict = field(default_factory=dict)
    #: constraint family -> {keys -> constraint} (the rows' names: :meth:`add`).
    constraints: dict = field(default_factory=lambda: defaultdict(dict))
    #: (s, p) -> 1 when site s hosts any racks, so its per-site staff is paid [0/1] ("staffed").
    site_staffed: dict = field(default_factory=dict)
    #: p -> 1 when the fleet has any racks, so the per-fleet staff is paid [0/1] ("fleet_on").
    fleet_staffed: dict = field(default_factory=dict)
    #: Whether unserved demand is priced (the elastic model) [bool].
    elastic: bool = False
    #: (r, s, fabric, p) -> FabricVars of an integer fabric (switches and links) [count].
    fabric_vars: dict = field(default_factory=dict)
    #: The integer fabrics' integer and binary variables (list) [count].
    fabric_integers: list = field(default_factory=list)
    #: (s, item, p) -> (expression, unit price [USD]) of a network item [switches or USD].
    network_items: dict = field(default_factory=dict)
    #: (s, item, p) -> network item bought [switches, or USD of links] ("net_buy").
    network_bought: dict = field(default_factory=dict)
    #: (s, p) -> integer network racks [positions] ("net_racks").
    network_racks: dict = field(default_factory=dict)
    #: (r, s, p) -> [(tier, on, racks, bought)] of a linear network with tiers (see above).
    network_tier_vars: dict = field(default_factory=dict)

    #: (s, b, q) -> storage energy bought in period q [kWh nameplate] ("bess_e_new").
    storage_energy_bought_kwh: dict = field(default_factory=dict)
    #: (s, b, q) -> storage power bought in period q [kW] ("bess_p_new").
    storage_power_bought_kw: dict = field(default_factory=dict)
    #: (s, b, p) -> usable storage energy in service [kWh] ("bess_e").
    storage_energy_kwh: dict = field(default_factory=dict)
    #: (s, b, p) -> storage power in service [kW] ("bess_p").
    storage_power_kw: dict = field(default_factory=dict)
    #: (s, b, p, h) -> storage charge in hour h [kW] ("bess_ch").
    storage_charge_kw: dict = field(default_factory=dict)
    #: (s, b, p, h) -> storage discharge in hour h [kW] ("bess_dis").
    storage_discharge_kw: dict = field(default_factory=dict)
    #: (s, b, p, h) -> storage state of charge at the end of hour h [kWh] ("bess_soc").
    storage_soc_kwh: dict = field(default_factory=dict)
    #: (s, g, q) -> on-site generation bought in period q [kW] ("gen_new").
    onsite_bought_kw: dict = field(default_factory=dict)
    #: (s, g, p) -> on-site generation in service [kW] ("gen_cap").
    onsite_capacity_kw: dict = field(default_factory=dict)
    #: (s, g, p, h) -> on-site generation in hour h [kW] ("gen").
    onsite_kw: dict = field(default_factory=dict)
    #: (s, p) -> grid peak of a site with storage or generation [kW] ("gpk").
    grid_peak_kw: dict = field(default_factory=dict)
    #: (s, p) -> what storage and generation add to the site's annual-average grid
    #: power (charge - discharge - generation) [kW] (expressions).
    grid_net_avg_kw: dict = field(default_factory=dict)

    def add(self, prob: pulp.LpProblem, family: str, keys: tuple, constraint) -> None:
        """Add ``constraint`` to ``prob`` named ``lp_name(family, *keys)`` and record it.

        Parameters
        ----------
        prob : pulp.LpProblem
            The model the row is added to.
        family : str
            Constraint family (the name's prefix and the key of :attr:`constraints`).
        keys : tuple
            Index of the row within its family (rack, site, period label...).
        constraint : pulp.LpConstraint
            The row; its name is set.
        """
        name = lp_name(family, *keys)
        constraint.name = name
        prob.addConstraint(constraint, name)
        self.constraints[family][keys] = constraint

    def integers(self) -> list[pulp.LpVariable]:
        """All integer and binary variables."""
        return [*self.racks_bought.values(), *self.racks_at_cap.values(),
                *self.cdus_in_service.values(),
                *(v for v in self.cdu_model_used.values() if v.cat != pulp.LpContinuous),
                *self.cdu_site_model.values(), *self.cdu_site_used.values(),
                *self.spares_kept.values(),
                *self.site_staffed.values(), *self.fleet_staffed.values(),
                *self.fabric_integers,
                *(t[1] for ts in self.network_tier_vars.values() for t in ts if t[1] is not None)]

    def network_terms(self, r: str, s: str, p: int, what: int) -> list | None:
        """Linear-network terms of (r, s, p) per tier: (racks in the tier, figure) pairs.

        ``what``: 0 kW, 2 positions per rack in service. None without tiers (the caller
        uses the period's single figure).

        Parameters
        ----------
        r : str
            Rack type id.
        s : str
            Site id.
        p : int
            Period index (0-based) [-].
        what : int
            Which figure of the tier: 0 network power [kW/rack], 2 network-rack positions
            [positions/rack] (an index into the tier tuple) [-].

        Returns
        -------
        list of (pulp.LpVariable, float) or None
            Racks in service in each tier and the tier's figure per rack [kW/rack] or
            [positions/rack]; None without tiers.
        """
        tiers = self.network_tier_vars.get((r, s, p))
        if tiers is None:
            return None
        return [(n, t[2 + what]) for t, _on, n, _b in tiers]
