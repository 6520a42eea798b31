"""Explaining a plan: binding limits, shadow prices, and why demand cannot be met.

Shadow prices come from the LP obtained by fixing every integer variable (racks,
CDUs) at its value in the plan and re-solving: they are short-run marginal values
with the fleet held fixed.

- grid [USD per MW per period]: present-value saving of 1 MW more grid capacity at
  that site in that period;
- space [USD per rack position per period];
- demand [USD per million tokens]: marginal cost of serving one more token in that
  period, in that period's money (the present-value dual divided by the period's opex
  discount factor and by the tokens one token/s of peak capacity serves in the period);
- budget [USD per USD]: present-value saving of one more USD of budget;
- building [USD per MW]: present-value saving of 1 MW more facility capacity already
  built at that site in that period (what the lead time costs while it binds).

Binding limits leave out limits of zero capacity that nothing uses (a site whose grid
connection starts later, or where nothing can be built before its lead time): they
stop nothing the plan wanted and would otherwise top the ranking; they are listed by
:func:`no_grid_sites` and :func:`not_buildable_sites`, and their shadow prices stay in
the ``shadow_prices`` table.
"""

from __future__ import annotations

import pandas as pd
import pulp

from dcplan.planner.inputs import PlanInputs, label_offset_years
from dcplan.planner.model import build_model
from dcplan.planner.model_vars import ModelVars
from dcplan.planner.solver import SolverError, SolveStatus, solve
from dcplan.planner.tables import Solution, _frame, network_racks
from dcplan.scenario.schema import SolverOptions

#: Families whose duals are reported, with the unit of the reported value.
DUAL_UNITS = {
    "grid": "USD per MW (present value)",
    "space": "USD per rack position (present value)",
    "demand": "USD per million tokens (period money)",
    "budget": "USD per USD (present value)",
    "building": "USD per MW (present value)",
    "connectable": "USD per MW (present value)",
    "assessment": "USD per MW (present value)",
    "carbon_cap": "USD per tCO2 (present value)",
    "curtail": "USD per MW (present value)",
}
#: Limit names of :func:`binding_limits` in words, for messages.
LIMIT_WORDS = {"grid": "grid", "grid_request": "grid request", "space": "space",
               "lead_time": "building lead time", "carbon_cap": "carbon cap (all sites)",
               "budget": "capex budget (all sites)",
               "curtailment": "grid in a curtailment event"}
#: Below this a capacity [kW or positions] counts as zero.
ZERO = 1e-6


def fix_integers(mv: ModelVars, sol: Solution) -> None:
    """Fix racks and CDUs at their planned values and make them continuous.

    Parameters
    ----------
    mv : ModelVars
        The model's variables; racks bought, CDUs, CDU and spare binaries are fixed in
        place.
    sol : Solution
        Variable values of the solved model.
    """
    for d, vals in ((mv.racks_bought, sol.racks_bought), (mv.cdus_in_service, sol.cdus_in_service)):
        for k, var in d.items():
            var.cat = pulp.LpContinuous
            var.lowBound = var.upBound = vals.get(k, 0.0)
    for k, var in mv.cdu_model_used.items():
        on = 1.0 if sol.cdus_in_service.get(k, 0.0) > 0 else 0.0
        if mv.cdu_site_model:  # cdu_choice: milp: on from the first period with CDUs on
            s, c, p = k
            on = 1.0 if any(sol.cdus_in_service.get((s, c, q), 0.0) > 0
                            for q in range(p + 1)) else 0.0
        var.cat = pulp.LpContinuous
        var.lowBound = var.upBound = on
    for (s, p), var in mv.cdu_site_used.items():  # cdu_choice: milp, CDUs at s by p
        on = 1.0 if any(n > 0 for (s2, _c, q), n in sol.cdus_in_service.items()
                        if s2 == s and q <= p) else 0.0
        var.cat = pulp.LpContinuous
        var.lowBound = var.upBound = on
    for (s, c), var in mv.cdu_site_model.items():  # cdu_choice: milp, the model with CDUs
        on = 1.0 if any(n > 0 for (s2, c2, _p), n in sol.cdus_in_service.items()
                        if (s2, c2) == (s, c)) else 0.0
        var.cat = pulp.LpContinuous
        var.lowBound = var.upBound = on
    for k, var in mv.spares_kept.items():
        var.cat = pulp.LpContinuous
        var.lowBound = var.upBound = sol.spares_kept.get(k, 0.0)


def _duals(d: PlanInputs, mv: ModelVars) -> dict[tuple, float]:
    """Reported duals of a solved LP: (family, keys) -> value in :data:`DUAL_UNITS`.

    The ``curtail`` rows of a site-period (one per event hour) are summed into one
    price under (site, period): what one more MW in every hour of the event would save.
    """
    pidx = {per.label: i for i, per in enumerate(d.periods)}
    out = {}
    for family in DUAL_UNITS:
        for keys, con in mv.constraints.get(family, {}).items():
            pi = con.pi
            if pi is None:
                continue
            if family == "curtail":
                key = (family, keys[:2])
                out[key] = round(out.get(key, 0.0) - pi * 1000.0, 9) + 0.0
                continue
            if family in ("grid", "connectable", "assessment", "carbon_cap"):
                value = -pi * 1000.0
            elif family == "building":
                value = pi * 1000.0
            elif family in ("space", "budget"):
                value = -pi
            else:
                w, p = keys[0], pidx[keys[-1]]
                value = pi / d.df_opex(p) / d.demand_row_tokens(w, p) * 1e6
            out[family, keys] = round(float(value), 9) + 0.0
    return out


def shadow_prices(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars, sol: Solution,
                  options: SolverOptions | None = None) -> pd.DataFrame:
    """Duals of the grid, space, demand and budget constraints.

    ``shadow_price`` comes from the LP with every integer fixed at the plan (short
    run: the fleet is given); ``shadow_price_relaxed`` from the LP relaxation of the
    whole model (long run: racks may be added fractionally), which values a limit
    even when the fixed fleet cannot use more of it.

    Parameters
    ----------
    prob : pulp.LpProblem
        The solved model; its integers are fixed and it is solved again as an LP.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The model's variables (their integers are fixed in place).
    sol : Solution
        Variable values of the solved model.
    options : SolverOptions, optional
        Solver, time limit, gap and threads of the LP solves (default: the defaults).

    Returns
    -------
    DataFrame
        family, site, workload, pool, period, shadow_price, shadow_price_relaxed, unit;
        each price in its row's unit (:data:`DUAL_UNITS`: [USD per MW, present value],
        [USD per rack position, present value], [USD per million tokens]...); empty if
        the LPs could not be solved.
    """
    opt = options or SolverOptions()
    lp_opt = SolverOptions(name=opt.name, time_limit_s=opt.time_limit_s, gap=opt.gap,
                           threads=opt.threads, fallback=True)

    def solved(p: pulp.LpProblem) -> bool:
        try:
            return solve(p, lp_opt, mip=False).status is SolveStatus.OPTIMAL
        except SolverError:
            return False  # the plan stands; it is only shown without these prices

    relaxed_prob, relaxed_mv = build_model(d, elastic=mv.elastic)
    relaxed = _duals(d, relaxed_mv) if solved(relaxed_prob) else {}
    fix_integers(mv, sol)
    # The elastic plan's floor (row unserved_floor) holds for the limits as they are: with
    # it, one more MW could not lower the shortfall and the grid's price would drop to
    # what it saves in costs alone (seoul_power's 2035 grid: 0.6 against 91 M USD per
    # MW). A shadow price asks what a unit more of a limit is worth, so the LP goes
    # without it (the fixed plan's shortfall is at least the floor anyway): its right-
    # hand side becomes 0, which every plan meets.
    for con in mv.constraints.get("unserved_floor", {}).values():
        con.changeRHS(0.0)
    cols = ["family", "site", "workload", "pool", "period", "shadow_price",
            "shadow_price_relaxed", "unit"]
    if not solved(prob):
        return _frame([], {"shadow_price": "see unit column"}, cols)
    fixed = _duals(d, mv)
    rows = []
    for (family, keys), value in fixed.items():
        row = dict(family=family, site=None, workload=None, pool=None,
                   period=None if family == "assessment" else keys[-1],
                   shadow_price=value, shadow_price_relaxed=relaxed.get((family, keys)),
                   unit=DUAL_UNITS[family])
        if family in ("grid", "space", "building", "connectable", "assessment", "curtail"):
            row["site"] = keys[0]
        elif family == "demand":
            row.update(workload=keys[0], pool=keys[1])
        rows.append(row)
    return _frame(rows, {"shadow_price": "see unit column",
                         "shadow_price_relaxed": "see unit column"}, cols)


#: Relative slack under which a fleet-wide cap (carbon, budget) counts as reached [-].
CAP_REACHED_FRAC = 1e-4


def _fleet_limits(d: PlanInputs, power: pd.DataFrame, costs: pd.DataFrame | None,
                  shadow: pd.DataFrame | None) -> list[dict]:
    """Rows of :func:`binding_limits` for the fleet-wide caps: carbon and budget.

    A cap binds in a period when the plan uses it to within :data:`CAP_REACHED_FRAC`
    or its shadow price is positive.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables (``carbon_cap`` [kgCO2], ``budget_usd`` [USD]).
    power : DataFrame
        The plan's ``power`` table (its ``carbon_t`` [tCO2] per site and period).
    costs : DataFrame or None
        The plan's ``costs`` table (``kind`` ``capex`` rows [USD]); None: no budget rows.
    shadow : DataFrame or None
        :func:`shadow_prices` (``carbon_cap`` and ``budget`` rows, site blank).

    Returns
    -------
    list of dict
        Rows with site ``all sites`` [tCO2 or USD, see unit].
    """
    prices = {}
    if shadow is not None and len(shadow):
        for r in shadow.itertuples():
            if r.family in ("carbon_cap", "budget"):
                prices[r.family, str(r.period)] = (r.shadow_price, r.shadow_price_relaxed)
    rows = []
    for p, per in enumerate(d.periods):
        found = []
        cap = d.carbon_cap(p)
        if cap is not None and len(power):
            used = float(power.loc[power.period.astype(str) == per.label, "carbon_t"].sum())
            found.append(("carbon_cap", cap / 1000.0, used, "tCO2"))
        limit = d.budget_usd[p] if d.budget_usd else None
        if limit is not None and costs is not None and len(costs):
            sel = (costs.period.astype(str) == per.label) & (costs.kind == "capex")
            found.append(("budget", limit, float(costs.loc[sel, "cost_usd"].sum()), "USD"))
        for family, value, used, unit in found:
            pair = prices.get((family, per.label))
            priced = pair is not None and max(pair[0] or 0.0, pair[1] or 0.0) > 0
            if used >= value * (1 - CAP_REACHED_FRAC) or priced:
                rows.append(dict(limit=family, site="all sites", period=per.label,
                                 value=value, used=used, unit=unit, **_prices(pair),
                                 shadow_unit=DUAL_UNITS[family]))
    return rows


def binding_limits(d: PlanInputs, sol: Solution, power: pd.DataFrame, fleet: pd.DataFrame,
                   cooling: pd.DataFrame, shadow: pd.DataFrame | None = None,
                   costs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Limits that stop the plan from adding one more rack or serving more, ranked.

    A grid limit binds when the headroom is below the facility power of the smallest
    rack the site may host (the connected capacity where connections are decisions; used:
    the facility peak plus the UPS recharge); a grid request limit when the site is
    connected for all the grid can give (connectable) beyond what was committed; space
    when fewer positions are free than one more rack of any allowed type needs (its own
    and the network racks its fabric would add: the 37th rack of a fabric may need one
    more network rack); lead time when the built capacity is full and no new capacity
    can be built yet; the fleet-wide carbon cap and budget when reached
    (:func:`_fleet_limits`, site ``all sites``). A limit of zero capacity that nothing
    uses (no grid yet, nothing built before the lead time) is not listed (see
    :func:`no_grid_sites`, :func:`not_buildable_sites`). Ranked within grid, then space,
    then lead time, carbon cap and budget by the larger of the two shadow prices
    (fixed-fleet and relaxed), largest first; the lead-time price is the dual of the
    site's building constraint.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model.
    power : DataFrame
        The plan's ``power`` table (:func:`~dcplan.planner.tables.power_table`) [kW].
    fleet : DataFrame
        The plan's ``fleet`` table (:func:`~dcplan.planner.tables.fleet_table`) [racks].
    cooling : DataFrame
        The plan's ``cooling`` table (its ``milp_cdu_positions`` [positions]: the
        CDUs the MILP's space row holds).
    shadow : DataFrame, optional
        :func:`shadow_prices` (the ``shadow_unit`` column says each price's unit
        [USD per MW, present value...]); None: no prices.
    costs : DataFrame, optional
        The plan's ``costs`` table [USD], for the budget rows; None: no budget rows.

    Returns
    -------
    DataFrame
        rank, limit, site, period, value, used, unit (``kW``, ``rack positions``,
        ``tCO2`` or ``USD``),
        shadow_price, shadow_price_relaxed, shadow_unit (:data:`DUAL_UNITS`): units as
        those columns say [see unit column].
    """
    rows = []
    sp = {}
    if shadow is not None and len(shadow):
        for r in shadow.itertuples():
            if r.family in ("grid", "space", "building", "connectable", "curtail"):
                sp[r.family, r.site, r.period] = (r.shadow_price, r.shadow_price_relaxed)
    used_pos = fleet.groupby(["period", "site"]).rack_positions.sum() if len(fleet) else {}
    # the space row of the MILP holds the CDUs it priced
    cdu_pos = cooling.set_index(["period", "site"]).milp_cdu_positions
    for row in power.itertuples():
        s, p_label = row.site, row.period
        p = next(i for i, per in enumerate(d.periods) if per.label == p_label)
        sd = d.sites[s]
        allowed = [r for r in d.racks if d.rack_site.get((r, s)) and d.rack_site[r, s].allowed]
        if not allowed:
            continue
        step_kw = min(_rack_facility_kw(d, r, s) for r in allowed)
        unused = row.facility_kw_peak <= ZERO
        if row.headroom_kw < step_kw and not (row.grid_kw <= ZERO and unused):
            rows.append(dict(limit="grid", site=s, period=p_label, value=row.grid_kw,
                             used=row.facility_kw_peak + getattr(row, "recharge_kw", 0.0)
                             if (s, p) not in sol.grid_peak_kw else sol.grid_peak_kw[s, p],
                             unit="kW",
                             **_prices(sp.get(("grid", s, p_label))),
                             shadow_unit=DUAL_UNITS["grid"]))
        # the connectable row bounds the firm MW (connected less flexible)
        firm = row.grid_kw - (sol.flexible_kw(d, s, p) if sol is not None else 0.0)
        if sd.connection is not None and row.connectable_kw - firm < step_kw \
                and firm > sd.connection.committed_kw[p] + ZERO:
            rows.append(dict(limit="grid_request", site=s, period=p_label,
                             value=row.connectable_kw, used=firm,
                             unit="kW connectable (used: connected)",
                             **_prices(sp.get(("connectable", s, p_label))),
                             shadow_unit=DUAL_UNITS["connectable"]))
        rows += _curtailment_limit(d, sol, s, p, sp.get(("curtail", s, p_label)))
        net = float(getattr(row, "network_positions", 0.0))
        pos = float(used_pos.get((p_label, s), 0.0)) + float(cdu_pos.get((p_label, s), 0.0)) \
            + net
        # what one more rack of each allowed type takes: its own positions and the
        # network racks its fabric adds (one more rack can need one more network rack)
        step_pos = min(d.racks[r].rack_positions
                       + (network_racks(d, sol, s, p, more=r) - net if sol is not None
                          else 0.0) for r in allowed)
        if sd.rack_positions - pos < step_pos - 1e-9 \
                and not (sd.rack_positions <= 0 and pos <= 0):
            rows.append(dict(limit="space", site=s, period=p_label, value=sd.rack_positions,
                             used=pos, unit="rack positions",
                             **_prices(sp.get(("space", s, p_label))),
                             shadow_unit=DUAL_UNITS["space"]))
        if p < sd.first_build_period and sd.built_kw_initial - row.facility_kw_peak < step_kw \
                and row.headroom_kw >= step_kw and not (sd.built_kw_initial <= ZERO and unused):
            rows.append(dict(limit="lead_time", site=s, period=p_label,
                             value=sd.built_kw_initial, used=row.facility_kw_peak, unit="kW built",
                             **_prices(sp.get(("building", s, p_label))),
                             shadow_unit=DUAL_UNITS["building"]))
    rows += _fleet_limits(d, power, costs, shadow)
    order = {"grid": 0, "grid_request": 1, "curtailment": 2, "space": 3, "lead_time": 4,
             "carbon_cap": 5, "budget": 6}
    rows.sort(key=lambda r: (order[r["limit"]], -max(r["shadow_price"] or 0.0,
                                                      r["shadow_price_relaxed"] or 0.0),
                             r["period"], r["site"]))
    for i, r in enumerate(rows, 1):
        r["rank"] = i
    return _frame(rows, {"value": "see unit", "used": "see unit",
                         "shadow_price": "see shadow_unit"},
                  ["rank", "limit", "site", "period", "value", "used", "unit", "shadow_price",
                   "shadow_price_relaxed", "shadow_unit"])


def _curtailment_limit(d: PlanInputs, sol: Solution, s: str, p: int,
                       prices: tuple | None) -> list[dict]:
    """The ``curtailment`` row of :func:`binding_limits` for site s in period p.

    Listed where flexible MW are energised and a price of the site-period's ``curtail``
    rows (summed over the event's hours) is positive: the grid in an event (connected
    less depth x flexible) then limits the plan. ``used`` equals ``value`` where the
    fixed-fleet price is positive (the row is tight); with only the relaxed price
    positive, the plan's draw in the event is not recomputed and ``used`` is the value
    too (the relaxation fills it).

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    sol : Solution
        Variable values of the solved model (None: no rows).
    s : str
        Site id.
    p : int
        Period index (0-based) [-].
    prices : tuple or None
        (shadow_price, shadow_price_relaxed) of the site-period's ``curtail`` rows
        [USD per MW, present value]; None: none reported.

    Returns
    -------
    list of dict
        No row or one (limit, site, period, value, used [kW], unit, prices).
    """
    g = d.sites[s].connection
    if sol is None or g is None or g.flexible is None or prices is None:
        return []
    flexible = sol.flexible_kw(d, s, p)
    if flexible <= ZERO or max(x or 0.0 for x in prices) <= ZERO:
        return []
    value = sol.connected_kw(d, s, p) - g.flexible.depth * flexible
    return [dict(limit="curtailment", site=s, period=d.periods[p].label, value=value,
                 used=value, unit="kW in an event", **_prices(prices),
                 shadow_unit=DUAL_UNITS["curtail"])]


def binding_rows(binding: pd.DataFrame | None) -> pd.DataFrame | None:
    """The rows of a ``binding`` table that bind: a positive shadow price.

    The one definition the terminal, the workbook, the HTML report, the comparison and
    the scenario summaries use: a limit binds when one more unit of it would save money,
    with the integers fixed at the plan (``shadow_price``) or in the LP relaxation
    (``shadow_price_relaxed``). A limit the plan fills but that saves nothing (its
    prices zero or missing) is not listed; the plan's ``binding`` table keeps every
    full limit with its prices.

    Parameters
    ----------
    binding : DataFrame or None
        :func:`binding_limits` (or the same with a leading ``scenario`` column) [see
        its unit and shadow_unit columns].

    Returns
    -------
    DataFrame or None
        Those rows, in the table's order and with its ranks and units [see unit
        column]; None for None.
    """
    if binding is None or not len(binding):
        return binding
    price = pd.concat([pd.to_numeric(binding[c], errors="coerce").fillna(0.0)
                       for c in ("shadow_price", "shadow_price_relaxed") if c in binding],
                      axis=1).max(axis=1)
    out = binding[price > 0]
    out.attrs = dict(binding.attrs)
    return out


#: What a quoted shadow price holds fixed, by :func:`quoted_price`'s kind.
PRICE_BASIS = {"relaxed": "with the rack counts free (LP relaxation)",
               "fixed": "with the chosen racks fixed"}


def quoted_price(row) -> tuple[float | None, str]:
    """The shadow price a one-line summary quotes for a binding limit, and its kind.

    The relaxed price (rack counts free, LP relaxation) where it is positive, else the
    price with the chosen racks fixed: the relaxed one says what the limit costs the
    plan even where the integer plan leaves a position or a kilowatt unused.

    Parameters
    ----------
    row : namedtuple
        A row of :func:`binding_rows` (``shadow_price``, ``shadow_price_relaxed``) [see
        its shadow_unit].

    Returns
    -------
    price : float or None
        [see shadow_unit]; None when neither price is positive.
    kind : str
        ``"relaxed"`` or ``"fixed"`` (:data:`PRICE_BASIS` words it); '' with no price.
    """
    relaxed = getattr(row, "shadow_price_relaxed", None)
    fixed = getattr(row, "shadow_price", None)
    if relaxed is not None and relaxed == relaxed and relaxed > 0:
        return float(relaxed), "relaxed"
    if fixed is not None and fixed == fixed and fixed > 0:
        return float(fixed), "fixed"
    return None, ""


def no_grid_sites(power: pd.DataFrame | None) -> dict[str, list[str]]:
    """Sites with no grid capacity (and nothing running) by period.

    Parameters
    ----------
    power : DataFrame or None
        The plan's ``power`` table [kW].

    Returns
    -------
    dict
        Site -> period labels (in plan order) in which its grid capacity is zero and
        it hosts nothing; empty without a power table.
    """
    out: dict[str, list[str]] = {}
    if power is None or not len(power):
        return out
    for row in power.itertuples():
        if row.grid_kw <= ZERO and row.facility_kw_peak <= ZERO:
            out.setdefault(row.site, []).append(str(row.period))
    return out


def not_buildable_sites(d: PlanInputs, power: pd.DataFrame | None) -> dict[str, list[str]]:
    """Sites with grid capacity where nothing can be built yet (lead time) and nothing runs.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    power : DataFrame or None
        The plan's ``power`` table [kW]; None: no result.

    Returns
    -------
    dict
        Site -> period labels before the site's lead time has passed in which it has
        grid capacity, no facility capacity built and no load.
    """
    out: dict[str, list[str]] = {}
    if power is None or not len(power):
        return out
    pidx = {per.label: i for i, per in enumerate(d.periods)}
    for row in power.itertuples():
        sd = d.sites[row.site]
        if pidx[row.period] < sd.first_build_period and sd.built_kw_initial <= ZERO \
                and row.grid_kw > ZERO and row.facility_kw_peak <= ZERO:
            out.setdefault(row.site, []).append(str(row.period))
    return out


def _prices(pair) -> dict:
    fixed, relaxed = pair if pair else (None, None)
    return {"shadow_price": fixed, "shadow_price_relaxed": relaxed}


def _rack_facility_kw(d: PlanInputs, r: str, s: str) -> float:
    """Facility power of one rack at full load at site s [kW]."""
    rs, rk = d.rack_site[r, s], d.racks[r]
    return (1 + rs.loss_frac) * ((1 + rs.cooling_kw_per_it_kw_peak) * rk.it_power_max_kw
                                 + rs.network_kw_per_rack) \
        + rs.recharge_kw_per_it_kw * rk.it_power_max_kw


def diagnosis(d: PlanInputs, unserved: pd.DataFrame, binding: pd.DataFrame,
              chosen: bool = False) -> str:
    """One message: which workload is short, when, by how much, and which limits bind.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    unserved : DataFrame
        The plan's ``unserved`` table (:func:`~dcplan.planner.tables.unserved_table`)
        [tokens/s].
    binding : DataFrame
        :func:`binding_limits` [see unit column].
    chosen : bool
        The shortfall was priced against the cost of serving it (``unserved_policy:
        priced``, or no least shortfall could be found): the message says that the plan
        chose it, at the penalty [USD per million tokens]. Else it is the least the
        limits allow.

    Returns
    -------
    str
        Empty when nothing is unserved.
    """
    if not len(unserved):
        return ""
    parts = []
    for r in unserved.itertuples():
        pool = "" if r.pool == "all" else f" ({r.pool})"
        parts.append(f"{r.workload}{pool} short by {r.short_tokens_per_s_peak:,.0f} tokens/s "
                     f"at peak ({r.short_frac:.0%}) in {r.period}")
    periods = set(unserved.period)
    order = {per.label: i for i, per in enumerate(d.periods)}
    lim = binding[binding.period.isin(periods)] if len(binding) else binding
    if len(lim):
        seen = {}
        for r in lim.itertuples():
            seen.setdefault((r.limit, r.site), []).append(r.period)
        limits = "; ".join(
            f"{LIMIT_WORDS.get(lim_, lim_)}{'' if site == 'all sites' else ' at ' + site} in "
            f"{', '.join(sorted(ps, key=lambda x: order.get(x, 0)))}"
            for (lim_, site), ps in seen.items())
        carried = _carried_over(d, sorted(periods - set(lim.period),
                                          key=lambda x: order.get(x, 0)), binding, order)
        if carried:
            limits += "; " + carried
    else:
        # sites that can have no power in the short periods: no limit "binds" there, as
        # nothing can run, but they are why the demand is short
        dry: dict[str, list[str]] = {}
        late: dict[tuple[str, str], list[str]] = {}
        for p, per in enumerate(d.periods):
            if per.label not in periods:
                continue
            for s, sd in d.sites.items():
                if sd.grid_kw[p] <= ZERO:
                    dry.setdefault(s, []).append(per.label)
                    continue
                why = _no_power_yet(d, sd, p)
                if why:
                    late.setdefault((s, why), []).append(per.label)
        texts = []
        if dry:
            texts.append("no grid capacity: " + "; ".join(
                f"{s} gets 0 MW in {', '.join(ps)}" for s, ps in dry.items())
                + " (give those sites grid_mw or committed_mw, or allow other sites)")
        texts += [f"{s}: {why} in {', '.join(ps)}" for (s, why), ps in late.items()]
        if texts:
            blocked = set(dry) | {s for s, _ in late}
            limits = "; ".join(texts) + ("" if len(blocked) == len(d.sites)
                                         else "; at the other sites no limit binds")
        else:
            limits = ("no site limit binds: the racks that can serve it are not yet available, "
                      "or the rules or budget forbid more")
    if chosen:
        return ("demand left unserved by choice: " + "; ".join(parts) + ". Serving it would "
                "cost more than the penalty of "
                f"{d.unserved_usd_per_token * 1e6:g} USD per million tokens "
                "(economics.unserved_penalty_usd_per_million_tokens); limits that bind: "
                + limits + ".")
    return ("demand cannot be met: " + "; ".join(parts) + " (the least shortfall the limits "
            "allow). Binding limits: " + limits + ".")


def _carried_over(d: PlanInputs, periods: list, binding: pd.DataFrame, order: dict
                  ) -> str:
    """Why short ``periods`` with no binding limit of their own are short [text].

    Racks bought in a period stay in service for their life: a limit that binds in a
    later period within the longest rack life limits the fleet of the earlier one too
    (one more rack then would still draw power, or take space, when that limit binds).
    '' when ``periods`` is empty or no later limit binds.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables (periods, rack lifetimes).
    periods : list of str
        Short period labels without a binding row of their own, in order.
    binding : DataFrame
        :func:`binding_limits` [see unit column].
    order : dict
        Period label -> index [-].

    Returns
    -------
    str
        One clause per such period, or ''.
    """
    life = max((rk.lifetime_years for rk in d.racks.values()), default=0.0)
    texts = []
    for per in periods:
        start = label_offset_years(d.periods, per)
        later = binding[[order.get(x, -1) > order.get(per, -1)
                         and label_offset_years(d.periods, x) < start + life - 1e-9
                         for x in binding.period]]
        if not len(later):
            continue
        first = min(later.period, key=lambda x: order.get(x, 0))
        rows = later[later.period == first]
        what = ", ".join(dict.fromkeys(
            f"{LIMIT_WORDS.get(r.limit, r.limit)}"
            f"{'' if r.site == 'all sites' else ' at ' + r.site}" for r in rows.itertuples()))
        texts.append(f"{per}: no limit of its own binds, but racks bought then would still "
                     f"be in service in {first}, when the {what} binds")
    return "; ".join(texts)


def _no_power_yet(d: PlanInputs, sd, p: int) -> str:
    """Why site ``sd`` can power nothing in period ``p`` though the grid offers it.

    No connection request energised yet, or no building built yet; '' if it can.
    """
    gc = sd.connection
    if gc is not None and gc.committed_kw[p] <= ZERO and min(gc.arrival, default=p + 1) > p:
        first = min(gc.arrival, default=len(d.periods))
        when = (f"before {d.periods[first].label}" if first < len(d.periods)
                else "within the plan")
        return (f"no grid connection can be energised {when} (nothing committed; lead time "
                f"{gc.lead_time_months:g} months from the request)")
    if sd.built_kw_initial <= ZERO and sd.first_build_period > p:
        first = sd.first_build_period
        when = (f"before {d.periods[first].label}" if first < len(d.periods)
                else "within the plan")
        return (f"no building can be finished {when} (nothing built yet; building lead "
                "time from the start of the plan)")
    return ""


def unsolved_status(info_status: SolveStatus) -> str:
    """Wording of a status for messages.

    Parameters
    ----------
    info_status : SolveStatus
        The solver's status.

    Returns
    -------
    str
        Its value with spaces for underscores.
    """
    return info_status.value.replace("_", " ")
