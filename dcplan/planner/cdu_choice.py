"""The MILP's CDU model per site (``cdu_choice: milp``): start values and polish.

:func:`~dcplan.planner.model.add_cdu_choice` writes the rows: one model per site over
the horizon, integer CDUs of it per period. Here: the least CDU counts of a chosen
model for a fleet (:func:`least_cdus`, the cooling model's ``ceil(heat / capacity) +
redundancy``), the model a rounded fleet would choose (:func:`cheapest_model`, for the
MIP start) and :func:`polish_cdus`, which sets a solved plan's CDUs to those least
counts, as :func:`~dcplan.planner.network_rows.polish_fabric` does for fabrics, so the
plan's CDUs are what ``dcplan cooling --cdu MODEL`` gives for its fleet.
"""

from __future__ import annotations

import pulp

from dcplan.facility.cooling import cdu_count
from dcplan.planner.inputs import PlanInputs
from dcplan.planner.model_vars import ModelVars


def site_heat_kw(d: PlanInputs, s: str, inst: dict) -> list[float]:
    """Liquid heat at full load at site ``s`` in each period [kW].

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables (``liquid_heat_kw_per_rack`` [kW]).
    s : str
        Site id.
    inst : dict
        (r, s, p) -> racks in service [racks] (whole numbers).

    Returns
    -------
    list of float
        One figure per period [kW].
    """
    models = d.cdu_models(s)
    racks = d.cdu_racks(s, models[0]) if models else []
    return [sum(d.rack_site[r, s].liquid_heat_kw_per_rack * inst.get((r, s, p), 0)
                for r in racks) for p in range(len(d.periods))]


def least_cdus(d: PlanInputs, s: str, c: str, heat_kw: list[float]) -> tuple[list[int],
                                                                              list[int]]:
    """The least CDUs of model ``c`` per period for ``heat_kw``, and the ``on`` binaries.

    ``on`` is 1 from the first period with liquid heat on (the rows' ``cdu_keep``: the
    spares, once bought, stay). CDUs: the most of ``ceil(heat / capacity) +
    redundancy`` (:func:`~dcplan.facility.cooling.cdu_count`, the cooling model's
    count) over this and the earlier periods: CDUs are never retired, so where the
    liquid heat falls the plan keeps those it bought (dropping them would only make it
    buy them again when the heat rises; the cooling model counts the fewer the fleet
    needs then).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables (``cdu_redundancy``, the model's capacity [kW]).
    s : str
        Site id.
    c : str
        CDU model id.
    heat_kw : list of float
        Liquid heat at full load per period [kW].

    Returns
    -------
    counts : list of int
        CDUs in service per period [units].
    on : list of int
        0 or 1 per period [-].
    """
    cap = d.cdu_data(s, c).cdu_capacity_kw
    counts, on, used, most = [], [], False, 0
    for h in heat_kw:
        used = used or h > 0
        on.append(int(used))
        most = max(most, cdu_count(h, cap, d.cdu_redundancy) if h > 0 else 0,
                   d.cdu_redundancy if used else 0)
        counts.append(most)
    return counts, on


def _owned(d: PlanInputs, s: str, c: str) -> int:
    """CDUs of model ``c`` the existing fleet at ``s`` has before the first period [units]."""
    models = d.cdu_models(s)
    racks = d.cdu_racks(s, models[0]) if models else []
    heat0 = sum(d.rack_site[r, s].liquid_heat_kw_per_rack * d.existing_count(r, s, 0)
                for r in racks)
    return cdu_count(heat0, d.cdu_data(s, c).cdu_capacity_kw, d.cdu_redundancy)


def purchases(counts: list[int], owned: int) -> list[int]:
    """CDUs bought per period: the increases of ``counts`` over what was owned.

    Parameters
    ----------
    counts : list of int
        CDUs in service per period [units].
    owned : int
        CDUs owned before the first period [units].

    Returns
    -------
    list of int
        ``max(0, counts[p] - counts[p-1])``, ``counts[-1]`` read as ``owned`` [units].
    """
    out, prev = [], owned
    for n in counts:
        out.append(max(0, n - prev))
        prev = n
    return out


def cheapest_model(d: PlanInputs, s: str, heat_kw: list[float]) -> str | None:
    """The CDU model of least present cost for ``heat_kw`` at ``s`` (None without heat).

    Each model's purchases (:func:`least_cdus`, :func:`purchases`) at its price,
    discounted as the plan discounts capex, less the terminal value the objective
    credits; ties go to the lower id. Positions are not priced (the MIP start only).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    s : str
        Site id.
    heat_kw : list of float
        Liquid heat at full load per period [kW].

    Returns
    -------
    str or None
        CDU model id.
    """
    from dcplan.planner.model import discount

    if not any(h > 0 for h in heat_kw):
        return None
    n = len(d.periods)
    best = None
    for c in d.cdu_models(s):
        price = d.cdu_data(s, c).cdu_capex_usd
        buys = purchases(least_cdus(d, s, c, heat_kw)[0], _owned(d, s, c))
        usd = sum(b * price * (discount(d, "cdu_capex", p) - discount(d, "terminal_value", n - 1)
                               * d.remaining_frac(d.cdu_lifetime_years, p))
                  for p, b in enumerate(buys))
        if best is None or usd < best[0] - 1e-9:
            best = (usd, c)
    return best[1] if best else None


def cdu_start_values(d: PlanInputs, mv: ModelVars, inst: dict) -> dict:
    """Integer start values of the CDU choice for a rounded fleet.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The model's variables (``cdu_site_model``, ``cdu_model_used``,
        ``cdus_in_service``).
    inst : dict
        (r, s, p) -> racks in service of the rounded fleet [racks].

    Returns
    -------
    dict
        Variable -> value: the choice and ``use`` binaries and ``on`` [-], CDUs [units].
    """
    out = {}
    for s in sorted({s for s, _c in mv.cdu_site_model}):
        heat = site_heat_kw(d, s, inst)
        chosen = cheapest_model(d, s, heat)
        for c in d.cdu_models(s):
            counts, on = least_cdus(d, s, c, heat) if c == chosen else ([0] * len(heat),
                                                                        [0] * len(heat))
            out[mv.cdu_site_model[s, c]] = float(c == chosen)
            if c == chosen or chosen is None:
                for p in range(len(d.periods)):
                    out[mv.cdu_site_used[s, p]] = float(on[p])
            for p in range(len(d.periods)):
                out[mv.cdus_in_service[s, c, p]] = float(counts[p])
                out[mv.cdu_model_used[s, c, p]] = float(on[p])
    return out


def chosen_models(mv: ModelVars) -> dict[str, str]:
    """Site -> the CDU model a solved plan chose (sites that chose none left out).

    Parameters
    ----------
    mv : ModelVars
        The solved model's variables (``cdu_site_model``).

    Returns
    -------
    dict of str to str
    """
    out = {}
    for (s, c), var in sorted(mv.cdu_site_model.items()):
        if (var.value() or 0.0) > 0.5:
            out[s] = c
    return out


def polish_cdus(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars) -> float | None:
    """Set a solved plan's CDUs to the least counts of each site's model; the objective.

    Within a MIP gap the solver may keep more CDUs than its rows need, or switch a
    model's ``on`` earlier than the first liquid-cooled rack. With the fleet and each
    site's model fixed, the least values are :func:`least_cdus` of the racks in service,
    purchases the increases, and the heat to the chosen model: the same plan, feasible
    (no more CDU positions) and no dearer (a purchase made no earlier costs no more in
    present value, terminal value included), and its CDUs are the cooling model's for
    the chosen model (``fleet_cdus(..., cdu_id=model)``) wherever the liquid heat has
    not fallen (where it has, the plan keeps the CDUs it bought). A site with liquid
    heat but no model chosen (not possible in a feasible plan) is left as solved.

    Parameters
    ----------
    prob : pulp.LpProblem
        The solved model (its objective is evaluated).
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The model's variables, solved; the CDU values are set in place.

    Returns
    -------
    float or None
        Objective at the polished values [USD, present value]; None without a CDU
        choice in the model.
    """
    if not mv.cdu_site_model:
        return None
    inst = {k: int(round(v.value() or 0.0)) for k, v in mv.racks_in_service.items()}
    chosen = chosen_models(mv)
    n = len(d.periods)
    for s in sorted({s for s, _c in mv.cdu_site_model}):
        heat = site_heat_kw(d, s, inst)
        if s not in chosen:
            continue
        for c in d.cdu_models(s):
            if c == chosen[s]:
                counts, on = least_cdus(d, s, c, heat)
                kw = heat
            else:
                counts, on, kw = [0] * n, [0] * n, [0.0] * n
            buys = purchases(counts, _owned(d, s, c) if c == chosen[s] else 0)
            for p in range(n):
                if c == chosen[s]:
                    mv.cdu_site_used[s, p].varValue = float(on[p])
                mv.cdus_in_service[s, c, p].varValue = float(counts[p])
                mv.cdu_model_used[s, c, p].varValue = float(on[p])
                mv.cdu_heat_kw[s, c, p].varValue = float(kw[p])
                mv.cdus_bought[s, c, p].varValue = float(buys[p])
    return pulp.value(prob.objective)
