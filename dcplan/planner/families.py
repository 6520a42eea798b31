"""Every constraint family of the planner's MILP, in one place.

:func:`~dcplan.planner.model.build_model` names each row ``lp_name(family, *keys)``
(:mod:`dcplan.planner.names`) and records it in ``ModelVars.constraints[family]``. This
registry lists each family with the ``add_*`` function that writes it and its row in
one line (the notation of ``docs/planner.md``, "Formulation"). Most families appear
only with a feature switched on (spare racks, network tiers, the integer fabric,
daily profiles, grid connections, storage and on-site generation, CDUs, staff, caps
and budgets).

``tests/golden/`` holds one small LP file per family and ``tests/test_golden_lp.py``
checks that the registry, the golden files and the families the model writes agree:
a new family needs an entry here and a golden case.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    """One constraint family.

    Attributes
    ----------
    builder : str
        Name of the ``add_*`` function that writes the rows (its module may change; the
        name does not).
    rows : str
        The row, in one line.
    indexed : bool
        Whether the LP family name carries an index: ``fab_leaf0``, ``fab_leaf1``, ...
        (one row per rail group, overfill point or balancing step).
    """

    builder: str
    rows: str
    indexed: bool = False


_F = Family
#: Family (the LP name's first part; indexed families without their index) -> Family.
CONSTRAINT_FAMILIES: dict[str, Family] = {
    # fleet
    "stock": _F("add_stock_balance",
                "inst[r,s,p] - sum_{q alive in p} new[r,s,q] = existing[r,s,p] (dense; "
                "large models: the same as a recursion over p)"),
    "spare_on": _F("add_spare_racks", "inst[r,s,p] - cap * on[r,s,p] <= 0"),
    "spare_min": _F("add_spare_racks", "inst[r,s,p] - k * on[r,s,p] >= 0"),
    # linear network with tiers
    "ntier_low": _F("add_network_tiers", "n_t[r,s,p] - first_t * on_t >= 0"),
    "ntier_high": _F("add_network_tiers", "n_t[r,s,p] - last_t * on_t <= 0"),
    "ntier_one": _F("add_network_tiers", "sum_t on_t <= 1"),
    "ntier_split": _F("add_network_tiers", "inst[r,s,p] - sum_t n_t = 0"),
    "ntier_buy": _F("add_network_tiers",
                    "ntier_buy[p] - sum_t capex_t n_t[p] + sum_t capex_t n_t[p-1] >= -owned"),
    # integer fabric (per rack type, site, fabric and period)
    "fab_single": _F("add_fabrics", "single - (P / R) n (+ (P cap / R) multi) >= 0"),
    "fab_multi": _F("add_fabrics", "n - (cap - one) multi <= one"),
    "fab_leaf": _F("add_fabrics", "leaf_g - (p_g / d) n - M multi >= -M", indexed=True),
    "fab_up": _F("add_fabrics", "up_g - (p_g / o) n - M multi >= -M", indexed=True),
    "fab_need": _F("add_fabrics", "R need - sum_g m_g up_g >= 0"),
    "fab_over": _F("add_fabrics", "n - (cap - m + 1) at_m <= m - 1", indexed=True),
    "fab_past": _F("add_fabrics", "n - (m + 1) past_m >= 0", indexed=True),
    "fab_pastat": _F("add_fabrics", "at_m - past_m >= 0", indexed=True),
    "fab_pastnext": _F("add_fabrics", "past_{m-1} - at_m >= 0", indexed=True),
    "fab_spine": _F("add_fabrics", "spines - need - sum_m (at_m - past_m) >= 0"),
    "fab_gap": _F("add_fabrics", "need - (k_max - a_j + 1) z_j <= a_j - 1", indexed=True),
    "fab_bal": _F("add_fabrics", "spines - b_j z_j - sum_m (at_m - past_m) >= 0",
                  indexed=True),
    "fab_gapord": _F("add_fabrics", "z_{j-1} - z_j >= 0", indexed=True),
    "fab_three": _F("add_fabrics", "n - (cap - two_tier_max) three <= two_tier_max"),
    "fab_pod_spine": _F("add_fabrics", "spines - 2 U / R - M three >= -M"),
    "fab_core": _F("add_fabrics", "cores - U / R - M three >= -M"),
    "fab_core_links": _F("add_fabrics", "core_links - U - M three >= -M"),
    "fab_max": _F("add_fabrics", "n <= three_tier_max"),
    "net_buy": _F("add_fabric_purchases",
                  "sum_{q<=p} net_buy[s,i,q] - item[s,i,p] >= -owned"),
    "net_racks": _F("add_network_space",
                    "units_per_rack * net_racks[s,p] - sum switch_units * switches >= 0"),
    # serving
    "capacity": _F("add_allocation_limit",
                   "sum alloc * frac(h) / u - A (inst - k on) <= 0 (per hour h)"),
    "cap_split": _F("add_cap_levels", "sum_c inst_cap[r,s,p,c] - inst[r,s,p] = 0"),
    "cap_capacity": _F("add_allocation_limit",
                       "sum alloc[..,c] * frac(h) / u - A inst_cap[r,s,p,c] <= 0 (per hour h)"),
    "demand": _F("add_demand", "sum rate * alloc (/ M_j) (+ unserved) >= D M share"),
    "unserved_total": _F("add_unserved_limit",
                         "sum_{w,k,p} tokens[w,p] unserved[w,k,p] / 1e6 <= least shortfall"),
    "unserved_floor": _F("add_unserved_limit",
                         "sum_{w,k,p} tokens[w,p] unserved[w,k,p] / 1e6 >= its proven bound"),
    # power
    "power_mix": _F("add_power_expressions",
                    "pmix[s,w,key,p] - sum (1 + loss)(1 + cool)(P - idle) alloc = 0"),
    "peak_power": _F("add_power_expressions", "facility(s,p,h) - fpk[s,p] <= 0"),
    "connectable": _F("add_grid_connections",
                      "sum_{q energised by p} req[s,q] <= grid_kw[s,p] - committed[s,p]"),
    "assessment": _F("add_grid_connections",
                     "sum_q req[s,q] <= threshold - 1 - max committed"),
    "flex_max": _F("add_grid_connections", "sum_q req_flex[s,q] <= flexible MW offered"),
    "curtail": _F("add_curtailment",
                  "peak(h) + sum_b ch - sum_b dis - sum_g avail gen_cap + depth flexible[s,p] "
                  "- connected[s,p] <= 0 (h in the curtailment event)"),
    "grid": _F("add_grid_limit",
               "facility_peak[s,p] + recharge[s,p] (- connected[s,p]) <= grid_kw[s,p] (0); "
               "gpk[s,p] (- connected) <= grid_kw (0) with storage or generation"),
    # storage and on-site generation (time to power)
    "bess_e_stock": _F("add_supply",
                       "bess_e[s,b,p] - sum_{q alive} DoD (1 - deg)^age bess_e_new[s,b,q] = 0"),
    "bess_p_stock": _F("add_supply", "bess_p[s,b,p] - sum_{q alive} bess_p_new[s,b,q] = 0"),
    "bess_power": _F("add_supply", "bess_ch[h] + bess_dis[h] - bess_p <= 0"),
    "bess_soc": _F("add_supply",
                   "bess_soc[h] - bess_soc[h-1 in the day, cyclic] - eta bess_ch[h] "
                   "+ bess_dis[h] = 0"),
    "bess_energy": _F("add_supply", "bess_soc[h] - bess_e <= 0"),
    "gen_stock": _F("add_supply", "gen_cap[s,g,p] - sum_{q alive} gen_new[s,g,q] = 0"),
    "gen_run": _F("add_supply", "gen[h] - availability gen_cap <= 0"),
    "grid_hour": _F("add_supply",
                    "peak(h) + sum_b ch - sum_b dis - sum_g avail gen_cap - gpk[s,p] <= 0"),
    "grid_served": _F("add_supply",
                      "served(h) + sum_b ch - sum_b dis - sum_g gen - gpk[s,p] <= 0"),
    "supply_firm": _F("add_supply",
                      "peak(h) + recharge + sum_b ch - sum_b dis - sum_g avail gen_cap "
                      "- connected[s,p] <= 0"),
    "no_export": _F("add_supply", "served(h) + sum_b ch - sum_b dis - sum_g gen >= 0"),
    # cooling, space and building
    "cdu_keep": _F("add_cdus", "on[s,c,p] - on[s,c,p-1] >= 0"),
    "cdu_heat": _F("add_cdus", "cap cdu - red cap on - sum_r liquid_kw inst >= 0"),
    "cdu_on": _F("add_cdus", "sum_r inst - positions on <= 0"),
    "cdu_buy": _F("add_cdus", "cdu_new[p] - cdu[p] + cdu[p-1] >= -owned (p = 0)"),
    # one CDU model per site chosen by the MILP (cdu_choice: milp)
    "cdu_model_one": _F("add_cdu_choice",
                        "sum_c pick[s,c] <= 1 (= 1 with existing liquid-cooled racks)"),
    "cdu_model_keep": _F("add_cdu_choice", "use[s,p] - use[s,p-1] >= 0"),
    "cdu_model_any": _F("add_cdu_choice", "sum_c on[s,c,p] - use[s,p] = 0"),
    "cdu_model_on": _F("add_cdu_choice", "on[s,c,p] - pick[s,c] <= 0"),
    "cdu_model_split": _F("add_cdu_choice", "sum_c kw[s,c,p] - sum_r liquid_kw inst = 0"),
    "cdu_model_use": _F("add_cdu_choice", "kw[s,c,p] - H_s on[s,c,p] <= 0"),
    "cdu_model_heat": _F("add_cdu_choice", "cap_c cdu - red cap_c on - kw[s,c,p] >= 0"),
    "cdu_model_buy": _F("add_cdu_choice",
                        "cdu_new[p] - cdu[p] + cdu[p-1] >= 0 (p = 0: + owned_c pick[s,c])"),
    "space": _F("add_space_limit",
                "sum (pos + npos) inst + sum pos_c cdu + net_racks <= positions"),
    "building": _F("add_building",
                   "sum_{q <= p} build[s,q] - facility_peak[s,p] >= -built0"),
    # operations
    "staffed": _F("add_operations_costs",
                  "sum_r pos_r inst[r,s,p] - positions staffed[s,p] <= 0"),
    "fleet_on": _F("add_operations_costs", "fleet_on[p] - staffed[s,p] >= 0"),
    # limits
    "carbon_cap": _F("add_carbon_cap", "sum_s hours kgCO2/kWh facility_avg <= cap[p]"),
    "water": _F("add_water_limit",
                "sum_r WUE it_max inst hours / 1000 <= limit x years"),
    "budget": _F("add_budget", "sum_{capex categories} cost[cat, p] <= budget[p]"),
}

_INDEX = re.compile(r"^(.*?)(\d+)$")


def family_of(name: str) -> str | None:
    """The registered family of an LP family name (``fab_leaf1`` -> ``fab_leaf``).

    Parameters
    ----------
    name : str
        A key of ``ModelVars.constraints`` (the first part of a row's LP name).

    Returns
    -------
    str or None
        The key of :data:`CONSTRAINT_FAMILIES`, or None when the name is not registered.
    """
    if name in CONSTRAINT_FAMILIES:
        return name
    m = _INDEX.match(name)
    if m and m.group(1) in CONSTRAINT_FAMILIES and CONSTRAINT_FAMILIES[m.group(1)].indexed:
        return m.group(1)
    return None
