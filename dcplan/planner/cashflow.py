"""Cash flows by period, the annualised cost per token, payback and IRR against an API.

The levelised cost (``usd_per_million_tokens``) divides the NPV, net of the terminal
value of the assets still in service at the end, by the discounted tokens. When much
is bought late in the horizon that credit is large and the levelised figure can sit
below every period's cash cost. This module gives the figures that do not rest on it:

- the **cash-flow table** by period: capex as paid, opex (energy, demand charges,
  carbon price, maintenance), staff and software, straight-line depreciation of every
  purchase over its life, and the book value at the end of the period;
- the **annualised cost** per period: each purchase's capital recovery charge
  ``CRF(r, L) = r (1 + r)^L / ((1 + r)^L - 1)`` per year of its life that falls in the
  period, plus the period's opex, staff and software, over the tokens served in it;
- the **terminal share**: present value of the terminal credit / NPV;
- **payback and IRR of building against the cheapest comparable API**: the avoided
  API spend (the served tokens bought at the cheapest comparable row of
  ``api_prices.yaml`` per workload) is the return, capex, opex, staff and software the
  outlay.

Lives are the ones the terminal value uses (a rack type's life for its racks, network
and cooling plant; the switches' and links' own in a fabric; ``cdu_lifetime_years`` for
CDUs; ``building_lifetime_years`` for buildings, power redundancy and grid
connections). A purchase without a life (no ``building_lifetime_years``) gets no
terminal credit in the NPV, so here it is written off over what is left of the horizon.

Money is undiscounted USD per period unless a name says present value; rates per year.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dcplan.buildbuy import MTOK, TokenMix, api_cost
from dcplan.planner.inputs import PlanInputs

#: Opex as the outputs and docs define it: what running the fleet costs in energy,
#: demand charges, carbon price and maintenance contracts.
OPEX_CATEGORIES = ("energy", "demand_charge", "carbon", "maintenance", "onsite_fuel")
#: Operations staff and software licences: their own KPI (``staff_software_usd``).
STAFF_SOFTWARE_CATEGORIES = ("staff", "software")
#: Above this share of the NPV resting on the terminal credit, the outputs say so [-].
TERMINAL_NOTE_FRAC = 0.25
#: Bracket searched for the IRR [1/yr].
IRR_BRACKET = (-0.99, 100.0)

#: Units of the cash-flow table.
CASHFLOW_UNITS = {
    "years": "years", "capex_usd": "USD", "opex_usd": "USD", "staff_software_usd": "USD",
    "depreciation_usd": "USD", "book_value_usd": "USD", "annualised_capital_usd": "USD",
    "annualised_cost_usd": "USD", "tokens_served": "tokens",
    "usd_per_million_tokens_annualised": "USD per million tokens",
    "usd_per_million_tokens_cash": "USD per million tokens", "api_usd": "USD",
    "net_cash_flow_usd": "USD", "cumulative_net_cash_flow_usd": "USD",
}
#: Columns of the cash-flow table.
CASHFLOW_COLUMNS = ["period", "years", "capex_usd", "opex_usd", "staff_software_usd",
                    "depreciation_usd", "book_value_usd", "annualised_capital_usd",
                    "annualised_cost_usd", "tokens_served", "usd_per_million_tokens_annualised",
                    "usd_per_million_tokens_cash", "api_usd", "net_cash_flow_usd",
                    "cumulative_net_cash_flow_usd", "api"]


@dataclass(frozen=True)
class Purchase:
    """One capex item bought.

    Attributes
    ----------
    category : str
        Cost category (``rack_capex``...).
    period : int
        Index of the period it is paid in (at its start) [-].
    usd : float
        Price paid [USD].
    life_years : float or None
        The life its terminal value uses [years]; None or 0: none given.
    """

    category: str
    period: int
    usd: float
    life_years: float | None


def crf(rate: float, life_years: float) -> float:
    """Capital recovery factor: the annuity that repays 1 USD over a life [1/yr].

    Parameters
    ----------
    rate : float
        Discount rate [1/yr].
    life_years : float
        Life [years], > 0.

    Returns
    -------
    float
        ``r (1 + r)^n / ((1 + r)^n - 1)``; ``1 / n`` at ``r = 0`` [1/yr].
    """
    if rate == 0:
        return 1.0 / life_years
    g = (1.0 + rate) ** life_years
    return rate * g / (g - 1.0)


def asset_life(d: PlanInputs, life_years: float | None, bought: int) -> float:
    """The life a purchase is depreciated and annualised over [years].

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    life_years : float or None
        Its life [years]; None or 0: the rest of the horizon from its purchase.
    bought : int
        Index of the period it is bought in [-].

    Returns
    -------
    float
        [years], > 0.
    """
    if life_years:
        return float(life_years)
    return d.horizon_years - d.periods[bought].offset_years


def _in_service_years(d: PlanInputs, buy: Purchase, p: int) -> float:
    """Years of period ``p`` within the life of ``buy`` [years]."""
    start = d.periods[buy.period].offset_years
    end = start + asset_life(d, buy.life_years, buy.period)
    per = d.periods[p]
    return max(0.0, min(end, per.offset_years + per.years) - max(start, per.offset_years))


def _book_value(d: PlanInputs, buy: Purchase, p: int) -> float:
    """Straight-line book value of ``buy`` at the end of period ``p`` [USD]."""
    if p < buy.period:
        return 0.0
    life = asset_life(d, buy.life_years, buy.period)
    per = d.periods[p]
    used = per.offset_years + per.years - d.periods[buy.period].offset_years
    return buy.usd * max(0.0, 1.0 - used / life)


def cheapest_api(d: PlanInputs) -> dict[str, tuple[Any, float]]:
    """The cheapest comparable API row of each workload and its price for its mix.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables (``api_offers``, workloads).

    Returns
    -------
    dict
        workload -> (:class:`~dcplan.planner.operations.ApiOffer`, price of the
        workload's token mix there [USD per token]); workloads without a comparable
        row are absent.
    """
    best: dict[str, tuple[Any, float]] = {}
    for offer in d.api_offers:
        for w in offer.workloads:
            wd = d.workloads[w]
            mix = TokenMix.from_total(w, MTOK, wd.input_frac, wd.cache_hit_frac)
            usd = api_cost([mix], offer).usd / MTOK
            if w not in best or usd < best[w][1]:
                best[w] = (offer, usd)
    return best


def cashflow_table(d: PlanInputs, purchases: Sequence[Purchase], cost: dict,
                   tok: dict) -> pd.DataFrame:
    """Cash flows, depreciation, book value and annualised cost by period.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    purchases : sequence of Purchase
        Every capex item bought (:func:`~dcplan.planner.tables.cost_values`).
    cost : dict
        ``(category, period index)`` -> undiscounted cost [USD].
    tok : dict
        ``(workload, period index)`` -> tokens served [tokens]
        (:func:`~dcplan.planner.tables.workload_tokens`).

    Returns
    -------
    DataFrame
        :data:`CASHFLOW_COLUMNS`, one row per period, units in
        ``df.attrs['units']`` (:data:`CASHFLOW_UNITS`): money [USD, undiscounted],
        tokens [tokens], unit costs [USD per million tokens]. ``api_usd`` is the
        served tokens at each workload's cheapest comparable API, NaN when a workload
        that serves tokens has none, ``api`` names those rows (``workload: api id``);
        ``net_cash_flow_usd`` = ``api_usd`` - capex -
        opex - staff and software.
    """
    api = cheapest_api(d)
    rows, cum = [], 0.0
    for p, per in enumerate(d.periods):
        capex = sum(b.usd for b in purchases if b.period == p)
        opex = sum(cost.get((c, p), 0.0) for c in OPEX_CATEGORIES)
        staff = sum(cost.get((c, p), 0.0) for c in STAFF_SOFTWARE_CATEGORIES)
        dep = sum(b.usd / asset_life(d, b.life_years, b.period) * _in_service_years(d, b, p)
                  for b in purchases)
        book = sum(_book_value(d, b, p) for b in purchases)
        annual_cap = sum(b.usd * crf(d.discount_rate, asset_life(d, b.life_years, b.period))
                         * _in_service_years(d, b, p) for b in purchases)
        annual = annual_cap + opex + staff
        tokens = sum(t for (_w, q), t in tok.items() if q == p)
        served = [w for (w, q), t in tok.items() if q == p and t > 0]
        api_usd = (sum(t * api[w][1] for (w, q), t in tok.items() if q == p and t > 0)
                   if all(w in api for w in served) else math.nan)
        names = "; ".join(f"{w}: {api[w][0].id}" for w in sorted(set(served)) if w in api)
        net = api_usd - capex - opex - staff
        cum += net
        rows.append(dict(
            period=per.label, years=per.years, capex_usd=capex, opex_usd=opex,
            staff_software_usd=staff, depreciation_usd=dep, book_value_usd=book,
            annualised_capital_usd=annual_cap, annualised_cost_usd=annual,
            tokens_served=tokens,
            usd_per_million_tokens_annualised=annual / tokens * MTOK if tokens else math.nan,
            usd_per_million_tokens_cash=(capex + opex + staff) / tokens * MTOK
            if tokens else math.nan,
            api_usd=api_usd, api=names, net_cash_flow_usd=net,
            cumulative_net_cash_flow_usd=cum))
    df = pd.DataFrame(rows, columns=CASHFLOW_COLUMNS)
    df.attrs["units"] = dict(CASHFLOW_UNITS)
    return df


def npv_at(rate: float, flows: Sequence[tuple[float, float]]) -> float:
    """Present value of dated cash flows at a rate [USD].

    Parameters
    ----------
    rate : float
        Discount rate [1/yr], > -1.
    flows : sequence of (float, float)
        (time from the start [years], amount [USD]).

    Returns
    -------
    float
        ``sum amount (1 + rate)^-t`` [USD].
    """
    return sum(a * (1.0 + rate) ** -t for t, a in flows)


def irr(flows: Sequence[tuple[float, float]]) -> float | None:
    """Internal rate of return of dated cash flows [1/yr], None when there is none.

    The rate at which their present value is zero, found by
    :func:`scipy.optimize.brentq` within :data:`IRR_BRACKET`. None when the flows never
    change sign (all outlay or all return) or the present value does not change sign
    within the bracket. With several sign changes there may be several rates; the one
    found is returned.

    Parameters
    ----------
    flows : sequence of (float, float)
        (time from the start [years], amount [USD]).

    Returns
    -------
    float or None
        [1/yr].
    """
    from scipy.optimize import brentq

    amounts = [a for _t, a in flows if a != 0 and not math.isnan(a)]
    if not amounts or all(a > 0 for a in amounts) or all(a < 0 for a in amounts):
        return None
    lo, hi = IRR_BRACKET
    f_lo, f_hi = npv_at(lo, flows), npv_at(hi, flows)
    if not (math.isfinite(f_lo) and math.isfinite(f_hi)) or f_lo * f_hi > 0:
        return None
    return float(brentq(npv_at, lo, hi, args=(list(flows),), xtol=1e-12, rtol=1e-10,
                        maxiter=500))


def api_flows(d: PlanInputs, table: pd.DataFrame, terminal: bool = False
              ) -> list[tuple[float, float]]:
    """Dated cash flows of building instead of buying from the API [years, USD].

    Capex at the start of each period; avoided API spend less opex, staff and software
    at its middle (as the NPV discounts them); with ``terminal``, the book value at the
    end of the horizon as a final inflow.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    table : DataFrame
        :func:`cashflow_table` [USD].
    terminal : bool
        Recover the book value at the end.

    Returns
    -------
    list of (float, float)
        (time [years], amount [USD]).
    """
    out = []
    for p, row in enumerate(table.itertuples()):
        per = d.periods[p]
        out.append((per.offset_years, -row.capex_usd))
        out.append((per.offset_years + per.years / 2,
                    row.api_usd - row.opex_usd - row.staff_software_usd))
    if terminal and len(table):
        out.append((d.horizon_years, float(table.book_value_usd.iloc[-1])))
    return out


def payback(d: PlanInputs, table: pd.DataFrame) -> tuple[str | None, float | None]:
    """First period whose cumulative net cash flow against the API is >= 0.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    table : DataFrame
        :func:`cashflow_table` [USD].

    Returns
    -------
    label, years : str or None, float or None
        The period's label and its end counted from the start of the plan [years];
        None when the cumulative flow never turns non-negative (or there is no API).
    """
    for p, row in enumerate(table.itertuples()):
        if row.cumulative_net_cash_flow_usd >= 0:
            per = d.periods[p]
            return str(per.label), per.offset_years + per.years
    return None, None


def terminal_credit_pv(costs: pd.DataFrame) -> float:
    """Present value of the terminal-value credit, as a positive amount [USD].

    Parameters
    ----------
    costs : DataFrame
        The plan's ``costs`` table [USD].

    Returns
    -------
    float
        ``-sum`` of the discounted ``terminal_value`` rows [USD, present value].
    """
    if not len(costs):
        return 0.0
    return float(-costs.loc[costs.category == "terminal_value", "cost_usd_discounted"].sum())


def cashflow_kpis(d: PlanInputs, table: pd.DataFrame, costs: pd.DataFrame,
                  npv: float | None) -> pd.DataFrame:
    """KPI rows: terminal share, annualised cost per token, payback and IRR vs API.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    table : DataFrame
        :func:`cashflow_table` [USD].
    costs : DataFrame
        The plan's ``costs`` table [USD].
    npv : float or None
        The ``npv_cost_usd`` KPI [USD, present value].

    Returns
    -------
    DataFrame
        kpi, value, unit: ``terminal_value_usd`` [USD, present value],
        ``terminal_value_frac`` [-], ``usd_per_million_tokens_annualised`` [USD per
        million tokens], ``api_avoided_usd`` [USD], ``payback_years`` [years],
        ``irr_vs_api_frac`` and ``irr_vs_api_with_terminal_frac`` [1/yr].
    """
    tv = terminal_credit_pv(costs)
    tokens = table.tokens_served.sum() if len(table) else 0.0
    annual = table.annualised_cost_usd.sum() if len(table) else 0.0
    has_api = len(table) and not table.api_usd.isna().any()
    _label, pay = payback(d, table) if has_api else (None, None)
    rows = [
        ("terminal_value_usd", tv, "USD (present value of the terminal-value credit)"),
        ("terminal_value_frac", tv / npv if npv else None,
         "- (present value of the terminal-value credit / npv_cost_usd)"),
        ("usd_per_million_tokens_annualised", annual / tokens * MTOK if tokens else None,
         "USD per million tokens (annualised: capital recovery of each purchase over its "
         "life at the discount rate + opex + staff and software, summed over the periods / "
         "tokens served)"),
        ("api_avoided_usd", float(table.api_usd.sum()) if has_api else None,
         "USD (undiscounted: tokens served bought at each workload's cheapest comparable "
         "API)"),
        ("payback_years", pay, "years (from the start to the end of the first period "
                               "whose cumulative net cash flow against the API is >= 0)"),
        ("irr_vs_api_frac", irr(api_flows(d, table)) if has_api else None,
         "1/yr (IRR of capex, opex, staff and software against the avoided API spend; "
         "no terminal value)"),
        ("irr_vs_api_with_terminal_frac",
         irr(api_flows(d, table, terminal=True)) if has_api else None,
         "1/yr (the same, the book value recovered at the end of the horizon)"),
    ]
    return pd.DataFrame(rows, columns=["kpi", "value", "unit"])


def terminal_note(terminal_frac: float | None) -> str | None:
    """A plain warning when much of the NPV rests on the terminal credit.

    Parameters
    ----------
    terminal_frac : float or None
        ``terminal_value_frac`` [-].

    Returns
    -------
    str or None
        The note when the share exceeds :data:`TERMINAL_NOTE_FRAC`, else None.
    """
    if terminal_frac is None or terminal_frac <= TERMINAL_NOTE_FRAC:
        return None
    return (f"{terminal_frac:.0%} of the NPV rests on the terminal-value credit (the book "
            "value of assets still in service at the end, mostly what is bought late), and so "
            "does the levelised cost per million tokens, which can then sit below every "
            "year's cost; the annualised cost per million tokens by period does not.")



#: What the annualised unit cost is (KPI unit, terminal, workbook, HTML).
ANNUALISED_TEXT = ("annualised: each purchase's capital recovery (CRF at the discount rate "
                   "over its life) + opex + staff and software, per period / tokens served "
                   "in it")


def api_return_text(kpi: dict, table: pd.DataFrame | None) -> str | None:
    """One sentence: payback and IRR of building against the cheapest comparable API.

    Parameters
    ----------
    kpi : dict
        KPI id -> value (``payback_years``, ``irr_vs_api_frac``,
        ``irr_vs_api_with_terminal_frac``) [years, 1/yr].
    table : DataFrame or None
        The plan's ``cashflow`` table [USD].

    Returns
    -------
    str or None
        The sentence; None without a cash-flow table or without an API to compare with.
    """
    if table is None or not len(table) or table.api_usd.isna().any():
        return None

    def rate(v: Any) -> str:
        return "no IRR (the cash flows never turn)" if v is None or v != v else f"{v:.1%}"

    first = table[table.cumulative_net_cash_flow_usd >= 0]
    pay = (f"pays back in {first.period.iloc[0]} (cumulative net cash flow >= 0 after "
           f"{kpi.get('payback_years'):g} years)" if len(first)
           and kpi.get("payback_years") == kpi.get("payback_years")
           and kpi.get("payback_years") is not None
           else "does not pay back within the horizon")
    names = str(table.api.iloc[-1]) if "api" in table and table.api.iloc[-1] else ""
    which = f" ({names})" if names else ""
    return (f"Against the cheapest comparable API{which}, its price for the tokens served "
            f"as the return: building {pay}; IRR {rate(kpi.get('irr_vs_api_frac'))} without the "
            f"terminal value, {rate(kpi.get('irr_vs_api_with_terminal_frac'))} with the book "
            "value recovered at the end.")
