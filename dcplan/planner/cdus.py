"""The plan's CDUs: the cooling model's one answer for the plan's own fleet.

The MILP holds integer CDUs per site and CDU model, each rack type's model taken at
one planning scale (:func:`dcplan.facility.coefficients`: the model the cooling model
picks for that rack type alone at that scale). For the fleet the plan actually
installs, the cooling model may pick another model and count: 7 x a 1,350 kW in-row
CDU where the planning scale chose 3 x a 5 MW facility unit. The plan's tables show
one answer, the cooling model's (:func:`dcplan.facility.cooling.fleet_cdus`, the
function ``dcplan cooling`` uses), for the racks in service at each site and period;
what the MILP priced stays beside it (``milp_*`` columns) with the difference in USD,
and a note per site says what the difference is worth in present value.

With ``cdu_choice: milp`` the MILP chooses one CDU model per site for the horizon and
holds the least count of it (:mod:`dcplan.planner.cdu_choice`); the tables show the
cooling model's count for that model (``fleet_cdus(..., cdu_id=model)``, as
``dcplan cooling --cdu MODEL``), which is the MILP's, and one note says where the
cooling model's own choice for a single period's fleet would differ, with its USD.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from dcplan.planner.inputs import PlanInputs

#: The cooling table's columns of the cooling model's answer, filled by
#: :func:`apply_cdu_answer` (empty until then).
ANSWER_COLUMNS = ("cdu_ids", "cdus", "cdus_by_model", "cdu_positions", "cdu_capex_usd",
                  "cdu_capex_diff_usd")
#: The cooling table's columns of what the MILP priced.
MILP_COLUMNS = ("milp_cdus_by_model", "milp_cdus", "milp_cdu_positions",
                "milp_cdu_capex_usd")


def fleet_mix(fleet: pd.DataFrame, site: str, period: Any) -> dict[str, int]:
    """Racks in service of each type at a site and period (the plan's ``fleet`` table).

    Parameters
    ----------
    fleet : DataFrame
        The plan's ``fleet`` table (``installed_racks`` [racks]).
    site : str
        Site id.
    period : str or int
        Period label as in the tables [-].

    Returns
    -------
    dict of str to int
        Rack id -> racks in service [racks], those with none left out.
    """
    if not len(fleet):
        return {}
    sub = fleet[(fleet.site == site) & (fleet.period == period)]
    return {r: int(round(n)) for r, n in zip(sub.rack, sub.installed_racks, strict=True)
            if n > 0}


def cdu_answers(case: Any, d: PlanInputs, fleet: pd.DataFrame,
                models: dict[str, str] | None = None) -> dict[tuple[str, Any], Any]:
    """The cooling model's CDUs for the plan's fleet at every site and period.

    Parameters
    ----------
    case : Case
        The case the plan was solved from (its catalog and sites).
    d : PlanInputs
        The plan's inputs (its ``cdu_redundancy`` [count]).
    fleet : DataFrame
        The plan's ``fleet`` table (``installed_racks`` [racks]).
    models : dict, optional
        Site -> CDU model to force there (``fleet_cdus``'s ``cdu_id``); sites not in it
        get the cooling model's own choice.

    Returns
    -------
    dict
        (site, period label) -> :class:`~dcplan.facility.cooling.FleetCdus` (count
        [units], unit price [USD]); every site and period of the plan.
    """
    from dcplan.facility.cooling import fleet_cdus

    out = {}
    memo: dict[tuple, Any] = {}
    models = models or {}
    for s in d.sites:
        for per in d.periods:
            mix = fleet_mix(fleet, s, per.label)
            key = (s, tuple(sorted(mix.items())))
            if key not in memo:
                memo[key] = fleet_cdus(case.catalog, case.sites[s], mix,
                                       redundancy=d.cdu_redundancy, cdu_id=models.get(s))
            out[s, per.label] = memo[key]
    return out


def apply_cdu_answer(cooling: pd.DataFrame, answers: dict[tuple[str, Any], Any]
                     ) -> pd.DataFrame:
    """The cooling table with the cooling model's CDUs in its CDU columns.

    Parameters
    ----------
    cooling : DataFrame
        The plan's ``cooling`` table (:func:`~dcplan.planner.tables.cooling_table`),
        its ``milp_*`` columns filled [units, positions, USD].
    answers : dict
        :func:`cdu_answers` [units, USD].

    Returns
    -------
    DataFrame
        A copy: ``cdu_ids``, ``cdus`` [units], ``cdus_by_model`` ("model: count"),
        ``cdu_positions`` [positions], ``cdu_capex_usd`` [USD, installed] of the
        cooling model's choice, and ``cdu_capex_diff_usd`` = ``cdu_capex_usd -
        milp_cdu_capex_usd`` [USD].
    """
    out = cooling.copy()
    cols = {c: [] for c in ANSWER_COLUMNS}
    for r in out.itertuples():
        a = answers.get((r.site, r.period))
        has = a is not None and bool(a.cdu_id)
        cols["cdu_ids"].append(a.cdu_id if has else "")
        cols["cdus"].append(float(a.count) if has else 0.0)
        cols["cdus_by_model"].append(f"{a.cdu_id}: {a.count}" if has else "")
        cols["cdu_positions"].append(a.count * a.positions if has else 0.0)
        usd = a.capex_usd if has else 0.0
        cols["cdu_capex_usd"].append(usd)
        cols["cdu_capex_diff_usd"].append(usd - float(r.milp_cdu_capex_usd))
    for c, v in cols.items():
        out[c] = v
    out.attrs = dict(cooling.attrs)
    return out


def _purchases_pv(d, counts: list[dict[str, float]], price: dict[str, float]) -> float:
    """Present value of the CDUs bought [USD].

    Each period's growth of each model's count x its price, discounted as capex
    (``d.df_capex``).
    """
    out, prev = 0.0, {}
    for i, now in enumerate(counts):
        out += d.df_capex(i) * sum(max(0.0, n - prev.get(c, 0.0)) * price[c]
                                   for c, n in now.items())
        prev = now
    return out


def _by_model(text: str) -> dict[str, float]:
    """``"a: 3, b: 1"`` -> {a: 3, b: 1} [units]."""
    out = {}
    for part in str(text or "").split(","):
        if ":" in part:
            c, n = part.split(":")
            out[c.strip()] = float(n)
    return out


def cdu_notes(cooling: pd.DataFrame, d: PlanInputs, answers: dict[tuple[str, Any], Any],
              catalog: Any) -> list[str]:
    """One note per site whose CDUs differ between the MILP and the cooling model.

    Each names, in the period of the largest difference, the cooling model's choice
    (count, id and display name, USD) and the MILP's, and the present value of the
    CDU purchases of both over the horizon (each model's growth in count from zero
    before the first period, priced at the catalog's unit price and discounted as the
    plan discounts capex; no terminal value).

    Parameters
    ----------
    cooling : DataFrame
        The cooling table after :func:`apply_cdu_answer` [units, USD].
    d : PlanInputs
        The plan's inputs (periods and discount factors).
    answers : dict
        :func:`cdu_answers`.
    catalog : Catalog
        For the CDUs' unit prices [USD] and display names.

    Returns
    -------
    list of str
    """
    notes = []
    labels = [p.label for p in d.periods]
    cdus = catalog.entries.get("cdus", {})
    price = {c: e.capex_usd for c, e in cdus.items()}
    for s in d.sites:
        sub = cooling[cooling.site == s].set_index("period")
        if not len(sub):
            continue
        differs = [p for p in labels if p in sub.index and (
            _by_model(sub.cdus_by_model[p]) != _by_model(sub.milp_cdus_by_model[p]))]
        if not differs:
            continue
        worst = max(differs, key=lambda p: (abs(sub.cdu_capex_diff_usd[p]),
                                            -labels.index(p)))
        a = answers[s, worst]
        milp = ", ".join(f"{n:g} x {c}" for c, n in
                         _by_model(sub.milp_cdus_by_model[worst]).items()) or "no CDUs"
        mine = [_by_model(sub.cdus_by_model[p]) if p in sub.index else {} for p in labels]
        theirs = [_by_model(sub.milp_cdus_by_model[p]) if p in sub.index else {}
                  for p in labels]
        pv_mine = _purchases_pv(d, mine, price)
        pv_milp = _purchases_pv(d, theirs, price)
        notes.append(
            f"CDUs at {s}: for the plan's fleet the cooling model (as 'dcplan cooling') "
            f"chooses {a.label}, {_usd(sub.cdu_capex_usd[worst])} USD in {worst}, where "
            f"the plan's optimisation priced {milp}, {_usd(sub.milp_cdu_capex_usd[worst])} "
            f"USD ({_usd(sub.cdu_capex_diff_usd[worst], True)} USD; the CDUs differ in "
            f"{len(differs)} period(s)); the tables show the cooling model's CDUs. CDU "
            f"purchases, present value: {_usd(pv_mine)} USD for those vs {_usd(pv_milp)} "
            f"USD priced ({_usd(pv_mine - pv_milp, True)} USD, not in the NPV): the "
            "optimisation takes each rack type's CDU model at one planning scale "
            "(docs/planner.md, Known weaknesses)")
    return notes


def table_models(cooling: pd.DataFrame) -> dict[str, str]:
    """Site -> the CDU model the MILP holds there (``cdu_choice: milp``).

    Parameters
    ----------
    cooling : DataFrame
        The plan's cooling table (``milp_cdus_by_model``, "model: count") [units].

    Returns
    -------
    dict of str to str
        The model of the first period with CDUs of each site that has any (one model
        per site under ``cdu_choice: milp``).
    """
    out: dict[str, str] = {}
    for r in cooling.itertuples():
        for c, n in _by_model(r.milp_cdus_by_model).items():
            if n > 0:
                out.setdefault(r.site, c)
    return out


def choice_notes(cooling: pd.DataFrame, d: PlanInputs, free: dict[tuple[str, Any], Any],
                 catalog: Any) -> list[str]:
    """One note on where the cooling model alone would choose other CDUs (``milp``).

    The plan holds one model per site over the horizon; for a single period's fleet the
    cooling model (``dcplan cooling`` without ``--cdu``) may choose another, cheaper
    for that snapshot. The note names, per site, the periods where it differs and the
    period of the largest difference (both choices, USD), and the present value of the
    CDU purchases of the per-period choices (a model switch buys the new model's
    units in full) against the plan's.

    Parameters
    ----------
    cooling : DataFrame
        The cooling table after :func:`apply_cdu_answer` with the plan's models
        [units, USD].
    d : PlanInputs
        The plan's inputs (periods and discount factors).
    free : dict
        :func:`cdu_answers` without forced models (the cooling model's own choices).
    catalog : Catalog
        For the CDUs' unit prices [USD].

    Returns
    -------
    list of str
        Empty, or one note.
    """
    labels = [p.label for p in d.periods]
    price = {c: e.capex_usd for c, e in catalog.entries.get("cdus", {}).items()}
    parts = []
    for s in d.sites:
        sub = cooling[cooling.site == s].set_index("period")
        if not len(sub):
            continue
        differs = [p for p in labels if p in sub.index and free[s, p].cdu_id and
                   free[s, p].cdu_id != sub.cdu_ids[p]]
        if not differs:
            continue
        worst = max(differs, key=lambda p: (abs(free[s, p].capex_usd - sub.cdu_capex_usd[p]),
                                            -labels.index(p)))
        a = free[s, worst]
        plan = [_by_model(sub.milp_cdus_by_model[p]) if p in sub.index else {}
                for p in labels]
        own = [{free[s, p].cdu_id: float(free[s, p].count)} if free[s, p].cdu_id else {}
               for p in labels]
        pv_plan = _purchases_pv(d, plan, price)
        pv_own = _purchases_pv(d, own, price)
        parts.append(
            f"{s} in {len(differs)} period(s), e.g. {worst}: {a.label}, "
            f"{_usd(a.capex_usd)} USD, vs the plan's {sub.cdus[worst]:g} x "
            f"{sub.cdu_ids[worst]}, {_usd(sub.cdu_capex_usd[worst])} USD "
            f"({_usd(a.capex_usd - sub.cdu_capex_usd[worst], True)} USD); CDU purchases, "
            f"present value: {_usd(pv_own)} USD with the per-period choices vs "
            f"{_usd(pv_plan)} USD with the plan's model ({_usd(pv_own - pv_plan, True)} USD)")
    if not parts:
        return []
    return ["CDUs (cdu_choice: milp): the plan holds one CDU model per site over the "
            "horizon, chosen with the whole plan's cost; for a single period's fleet the "
            "cooling model alone ('dcplan cooling' without --cdu) would choose another "
            "model at " + "; ".join(parts) + ". The tables show the plan's model"]


def milp_count_notes(cooling: pd.DataFrame) -> list[str]:
    """Periods where the plan keeps more CDUs than the cooling model counts for its model.

    After :func:`~dcplan.planner.cdu_choice.polish_cdus` the two agree until the site's
    liquid heat falls; then the plan keeps the CDUs it bought (they are never retired),
    where the cooling model counts those the fleet in service needs.

    Parameters
    ----------
    cooling : DataFrame
        The cooling table after :func:`apply_cdu_answer` [units].

    Returns
    -------
    list of str
        One note per site with such periods.
    """
    notes = []
    for s, sub in cooling.groupby("site", sort=False):
        off = [r for r in sub.itertuples() if abs(float(r.cdus) - float(r.milp_cdus)) > 1e-9]
        if off:
            r = off[0]
            notes.append(f"CDUs at {s}: in {len(off)} period(s), e.g. {r.period}, the plan "
                         f"keeps the CDUs it bought ({r.milp_cdus_by_model or 'none'}; CDUs "
                         f"are never retired) where the fleet in service needs {r.cdus:g} "
                         f"(the cooling model's count, shown in the cdus column; the "
                         "plan's in milp_cdus)")
    return notes


def space_notes(tables: dict[str, pd.DataFrame], d: PlanInputs) -> list[str]:
    """Sites where the cooling model's in-row CDUs need more positions than the site has.

    Parameters
    ----------
    tables : dict
        The plan's tables (``fleet``, ``power``, ``cooling`` after
        :func:`apply_cdu_answer`) [racks, positions].
    d : PlanInputs
        The plan's inputs (each site's ``rack_positions``).

    Returns
    -------
    list of str
    """
    fleet, power, cool = tables.get("fleet"), tables.get("power"), tables.get("cooling")
    if fleet is None or power is None or cool is None or not len(cool):
        return []
    used = fleet.groupby(["period", "site"]).rack_positions.sum() if len(fleet) else {}
    net = power.set_index(["period", "site"]).get("network_positions")
    notes = []
    for r in cool.itertuples():
        if r.cdu_positions <= r.milp_cdu_positions:
            continue
        total = float(used.get((r.period, r.site), 0.0)) + float(r.cdu_positions) + (
            float(net.get((r.period, r.site), 0.0)) if net is not None else 0.0)
        have = d.sites[r.site].rack_positions
        if total > have + 1e-9:
            notes.append(f"CDUs at {r.site} in {r.period}: the cooling model's "
                         f"{r.cdus_by_model} take {r.cdu_positions:g} rack positions; with "
                         f"the racks and network racks {total:,.0f} positions, over the "
                         f"site's {have:,.0f}")
    return notes


def cdu_answer(case: Any, d: PlanInputs, tables: dict[str, pd.DataFrame]
               ) -> tuple[pd.DataFrame, list[str]]:
    """The cooling table with the cooling model's CDUs, and the notes on the difference.

    Parameters
    ----------
    case : Case
        The case the plan was solved from (catalog, sites).
    d : PlanInputs
        The plan's inputs.
    tables : dict
        The plan's tables (``fleet``, ``power``, ``cooling``) [racks, kW, units].

    Returns
    -------
    cooling : DataFrame
        :func:`apply_cdu_answer` of the plan's cooling table [units, positions, USD];
        with ``cdu_choice: milp`` the cooling model's counts of each site's chosen model.
    notes : list of str
        :func:`cdu_notes` and :func:`space_notes`; with ``cdu_choice: milp``
        :func:`choice_notes`, :func:`milp_count_notes` and :func:`space_notes`.
    """
    if d.cdu_choice == "milp":
        models = table_models(tables["cooling"])
        cooling = apply_cdu_answer(tables["cooling"],
                                   cdu_answers(case, d, tables["fleet"], models))
        free = cdu_answers(case, d, tables["fleet"])
        notes = choice_notes(cooling, d, free, case.catalog) + milp_count_notes(cooling)
        return cooling, notes + space_notes({**tables, "cooling": cooling}, d)
    answers = cdu_answers(case, d, tables["fleet"])
    cooling = apply_cdu_answer(tables["cooling"], answers)
    notes = cdu_notes(cooling, d, answers, case.catalog)
    notes += space_notes({**tables, "cooling": cooling}, d)
    return cooling, notes


def _usd(v: float, sign: bool = False) -> str:
    """Whole USD with thousand separators, signed on request."""
    if not math.isfinite(v):
        return "n/a"
    return f"{v:+,.0f}" if sign else f"{v:,.0f}"
