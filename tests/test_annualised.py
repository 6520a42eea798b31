"""The annualised cost per million tokens, the cash-flow table, the terminal share of the
NPV, payback and IRR against the API: recomputed by hand on a two-period plan, on hand
cash flows, and as invariants over an example's tables."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from test_planner_helpers import make_inputs, rack, site, workload

from dcplan.planner import solve_inputs
from dcplan.planner.cashflow import (
    TERMINAL_NOTE_FRAC,
    crf,
    irr,
    npv_at,
    payback,
    terminal_note,
)
from dcplan.planner.operations import ApiOffer
from dcplan.scenario import SolverOptions

EXACT = SolverOptions(gap=0.0, time_limit_s=30)
#: Seconds in a period of one year (8,760 h) [s].
YEAR_S = 8760 * 3600.0


def _offer(id_, inp, out):
    return ApiOffer(id_, id_, "p", id_, ("wa",), {"wa": "same model"}, inp, None, None, out,
                    "2025-06-01", "test")


@pytest.fixture(scope="module")
def two_period():
    """One rack already installed, demand 100 then 200 tokens/s at 100 tokens/s a rack:
    one rack bought at the start of the second year. Rack 1,000 USD, life 4 years,
    maintenance 10 % of the price a year; no energy price, no carbon price; r = 10 %;
    no API row."""
    d = make_inputs(racks=[rack(capex=1000.0, maint=0.1, life=4.0)],
                    sites=[site(n=2, price=0.0)],
                    workloads=[workload(demand=(100.0, 200.0), input_frac=0.5)], n=2,
                    rate=0.10, terminal=True, existing=[("ra", "sa", 1, 10)])
    res = solve_inputs(d, EXACT)
    assert res.ok
    fleet = res.tables["fleet"]
    assert list(fleet.installed_racks) == [1, 2] and list(fleet.new_racks) == [0, 1]
    return res


@pytest.fixture(scope="module")
def built():
    """The same without the existing rack (one rack bought in each year), and two API rows
    at 0.2 / 0.6 and 0.4 / 0.2 USD per million input / output tokens."""
    d = make_inputs(racks=[rack(capex=1000.0, maint=0.1, life=4.0)],
                    sites=[site(n=2, price=0.0)],
                    workloads=[workload(demand=(100.0, 200.0), input_frac=0.5)], n=2,
                    rate=0.10, terminal=True,
                    api_offers=(_offer("dear", 0.2, 0.6), _offer("cheap", 0.4, 0.2)))
    res = solve_inputs(d, EXACT)
    assert res.ok and list(res.tables["fleet"].new_racks) == [1, 1]
    return res


def test_annualised_cost_per_token_by_hand(two_period):
    cf = two_period.tables["cashflow"]
    # CRF(10 %, 4 years) = 0.1 x 1.1^4 / (1.1^4 - 1) = 0.1 x 1.4641 / 0.4641 = 0.3154708
    assert crf(0.10, 4.0) == pytest.approx(0.1 * 1.4641 / 0.4641, rel=1e-12)
    assert crf(0.0, 4.0) == 0.25
    k = 0.1 * 1.4641 / 0.4641
    # Year 1: the existing rack (no capex); maintenance 0.1 x 1,000 x 1 rack = 100 USD;
    # tokens 100 tokens/s x 8,760 h x 3,600 s = 3.1536e9.
    # Year 2: capital 1,000 x 0.3154708 = 315.47 USD; maintenance 2 racks = 200 USD;
    # tokens 200 x 8,760 x 3,600 = 6.3072e9.
    assert list(cf.capex_usd) == pytest.approx([0.0, 1000.0])
    assert list(cf.opex_usd) == pytest.approx([100.0, 200.0])
    assert list(cf.annualised_capital_usd) == pytest.approx([0.0, 1000.0 * k])
    assert list(cf.tokens_served) == pytest.approx([100 * YEAR_S, 200 * YEAR_S])
    # 100 / 3.1536e9 x 1e6 = 0.031710 and (315.47 + 200) / 6.3072e9 x 1e6 = 0.081727
    assert list(cf.usd_per_million_tokens_annualised) == pytest.approx(
        [100.0 / (100 * YEAR_S) * 1e6, (1000.0 * k + 200.0) / (200 * YEAR_S) * 1e6],
        rel=1e-9)
    assert cf.usd_per_million_tokens_annualised.iloc[1] == pytest.approx(0.0817274, rel=1e-5)
    # Cash cost of year 2: (1,000 + 200) / 6.3072e9 x 1e6
    assert cf.usd_per_million_tokens_cash.iloc[1] == pytest.approx(1200 / (200 * YEAR_S) * 1e6)
    # Horizon figure: (100 + 315.47 + 200) / 9.4608e9 x 1e6
    assert two_period.kpi("usd_per_million_tokens_annualised") == pytest.approx(
        (300.0 + 1000.0 * k) / (300 * YEAR_S) * 1e6, rel=1e-9)


def test_depreciation_book_value_and_terminal_share_by_hand(two_period):
    cf = two_period.tables["cashflow"]
    # Straight line over 4 years from the start of year 2: 250 in year 2, book value 750.
    assert list(cf.depreciation_usd) == pytest.approx([0.0, 250.0])
    assert list(cf.book_value_usd) == pytest.approx([0.0, 750.0])
    # The terminal credit of the NPV is that book value at the end of year 2: 750 x 1.1^-2
    tv = 750.0 / 1.1 ** 2
    assert two_period.kpi("terminal_value_usd") == pytest.approx(tv, rel=1e-9)
    # NPV: rack 1,000 at t = 1; maintenance 100 at t = 0.5 and 200 at t = 1.5; less tv.
    npv = 1000 / 1.1 + 100 / 1.1 ** 0.5 + 200 / 1.1 ** 1.5 - tv
    assert two_period.kpi("npv_cost_usd") == pytest.approx(npv, rel=1e-9)
    assert two_period.kpi("terminal_value_frac") == pytest.approx(tv / npv, rel=1e-9)
    # Opex is energy, demand charges, carbon and maintenance; no staff here.
    assert two_period.kpi("opex_usd") == pytest.approx(300.0)
    assert two_period.kpi("staff_software_usd") == 0.0


def test_api_payback_and_irr_by_hand(built, two_period):
    cf = built.tables["cashflow"]
    # Half input, half output: 'dear' costs (0.2 + 0.6) / 2 = 0.4, 'cheap' (0.4 + 0.2) / 2
    # = 0.3 USD per million tokens: the cheaper one is the return.
    api = [0.3e-6 * 100 * YEAR_S, 0.3e-6 * 200 * YEAR_S]   # 946.08, 1,892.16 USD
    assert list(cf.api_usd) == pytest.approx(api)
    # Capex 1,000 each year; maintenance 100 then 200.
    net = [api[0] - 1000.0 - 100.0, api[1] - 1000.0 - 200.0]  # -153.92, 692.16
    assert list(cf.net_cash_flow_usd) == pytest.approx(net)
    assert list(cf.cumulative_net_cash_flow_usd) == pytest.approx([net[0], net[0] + net[1]])
    # Cumulative -153.92 after year 1, +538.24 after year 2: payback at the end of year 2.
    assert built.kpi("payback_years") == 2.0
    # Flows: -1,000 at 0; +846.08 at 0.5 y; -1,000 at 1 y; +1,692.16 at 1.5 y.
    flows = [(0.0, -1000.0), (0.5, api[0] - 100.0), (1.0, -1000.0), (1.5, api[1] - 200.0)]
    rate = built.kpi("irr_vs_api_frac")
    assert rate is not None and rate > 0
    assert npv_at(rate, flows) == pytest.approx(0.0, abs=1e-6)
    # With the book value recovered at 2 y: 1,000 x 2/4 + 1,000 x 3/4 = 1,250 USD.
    assert cf.book_value_usd.iloc[-1] == pytest.approx(1250.0)
    rate_t = built.kpi("irr_vs_api_with_terminal_frac")
    assert rate_t > rate and npv_at(rate_t, flows + [(2.0, 1250.0)]) == pytest.approx(
        0.0, abs=1e-6)
    assert built.kpi("api_avoided_usd") == pytest.approx(sum(api))
    # No API row: no avoided spend, payback or IRR.
    assert two_period.tables["cashflow"].api_usd.isna().all()
    for k in ("payback_years", "irr_vs_api_frac", "api_avoided_usd"):
        assert two_period.kpi(k) is None


def test_irr_on_hand_cash_flows():
    # -100 now, +110 in a year: 10 %.
    assert irr([(0.0, -100.0), (1.0, 110.0)]) == pytest.approx(0.10, abs=1e-9)
    # -100 now, +60 in one and two years: 60 x^2 + 60 x - 100 = 0 with x = 1 / (1 + r),
    # x = (-60 + sqrt(3,600 + 24,000)) / 120 = 0.884437, r = 0.130663
    x = (-60 + math.sqrt(3600 + 24000)) / 120
    assert irr([(0.0, -100.0), (1.0, 60.0), (2.0, 60.0)]) == pytest.approx(1 / x - 1, abs=1e-9)
    assert irr([(0.0, -100.0), (1.0, 60.0), (2.0, 60.0)]) == pytest.approx(0.130663, abs=1e-6)
    # Never changes sign: no IRR.
    assert irr([(0.0, -100.0), (1.0, -5.0)]) is None
    assert irr([(0.0, 100.0), (1.0, 5.0)]) is None
    # Returns that never repay the outlay, even at -99 %/yr: none within the bracket.
    assert irr([(0.0, -100.0), (1.0, 0.5)]) is None


def test_payback_on_a_hand_table(two_period):
    d = two_period.inputs
    table = pd.DataFrame({"cumulative_net_cash_flow_usd": [-5.0, 3.0]})
    assert payback(d, table) == ("2027", 2.0)
    assert payback(d, pd.DataFrame({"cumulative_net_cash_flow_usd": [-5.0, -1.0]})) == \
        (None, None)


def test_terminal_note_above_a_quarter():
    assert terminal_note(TERMINAL_NOTE_FRAC) is None
    assert terminal_note(None) is None
    assert "79% of the NPV rests on the terminal-value credit" in terminal_note(0.79)


def test_example_invariants(minimal_plan):
    """Over the minimal example's tables: capex and opex as the costs table has them, book
    value + cumulative depreciation = cumulative capex, the last book value is the
    terminal credit, and the annualised cost recomputed from its columns."""
    res, _case = minimal_plan
    cf, costs = res.tables["cashflow"], res.tables["costs"]
    by = costs.groupby(["period", "category"]).cost_usd.sum()

    def cat(p, names):
        return sum(by.get((p, c), 0.0) for c in names)

    for row in cf.itertuples():
        caps = costs[(costs.period == row.period) & (costs.kind == "capex")].cost_usd.sum()
        assert row.capex_usd == pytest.approx(caps, rel=1e-9)
        assert row.opex_usd == pytest.approx(
            cat(row.period, ("energy", "demand_charge", "carbon", "maintenance")), rel=1e-9)
        assert row.staff_software_usd == pytest.approx(cat(row.period, ("staff", "software")),
                                                       rel=1e-9)
        assert row.annualised_cost_usd == pytest.approx(
            row.annualised_capital_usd + row.opex_usd + row.staff_software_usd, rel=1e-12)
        assert row.usd_per_million_tokens_annualised == pytest.approx(
            row.annualised_cost_usd / row.tokens_served * 1e6, rel=1e-12)
    cum = cf.capex_usd.cumsum()
    assert list(cf.book_value_usd + cf.depreciation_usd.cumsum()) == pytest.approx(
        list(cum), rel=1e-9)
    tv = costs.loc[costs.category == "terminal_value", "cost_usd"].sum()
    assert cf.book_value_usd.iloc[-1] == pytest.approx(-tv, rel=1e-9)
    k = {r.kpi: r.value for r in res.tables["kpis"].itertuples()}
    assert k["opex_usd"] + k["staff_software_usd"] == pytest.approx(
        costs[(costs.kind == "opex") & (costs.category != "unserved_penalty")].cost_usd.sum(),
        rel=1e-9)
    assert k["capex_usd"] == pytest.approx(cf.capex_usd.sum(), rel=1e-9)
    tv_pv = -costs.loc[costs.category == "terminal_value", "cost_usd_discounted"].sum()
    assert k["terminal_value_frac"] == pytest.approx(tv_pv / k["npv_cost_usd"], rel=1e-9)
    # The tokens of the cash-flow table are the plan's tokens served.
    assert cf.tokens_served.sum() == pytest.approx(k["tokens_served"], rel=1e-9)
    # The minimal example buys most of its racks late: more than a quarter of its NPV
    # rests on the terminal credit, and the outputs say so.
    assert k["terminal_value_frac"] > TERMINAL_NOTE_FRAC
