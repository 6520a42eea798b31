"""Build or buy: API cost of a token mix, self-hosting opex, break-even; energy per request."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dcplan.buildbuy import (
    SiteFleet,
    TokenMix,
    api_cost,
    break_even,
    comparable_prices,
    operations_opex,
    self_hosted_usd_per_mtok,
)
from dcplan.catalog import load_catalog
from dcplan.demand import energy_per_request_wh
from dcplan.errors import InputError
from dcplan.schema import ApiPrice

#: An Anthropic-like row: cache reads at 10% of input, writes at 125%, batch half price.
PRICE = ApiPrice(id="p", name="p", provider="x", api_model="m", input_usd_per_mtok=3.0,
                 cached_input_usd_per_mtok=0.30, cache_write_usd_per_mtok=3.75,
                 output_usd_per_mtok=15.0, batch_discount_frac=0.5,
                 source="https://example.com/pricing", as_of="2026-12")

CHAT = TokenMix("chat", input_tokens=10e6, output_tokens=2e6, cache_hit_frac=0.3)
AGENT = TokenMix("agent", input_tokens=100e6, output_tokens=5e6, cache_hit_frac=0.85,
                 cache_write_frac=0.10)


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def test_two_workload_mix_with_cache_hits_hand_computed():
    cost = api_cost([CHAT, AGENT], PRICE)
    chat, agent = cost.lines
    # chat: 3M cached x $0.30 + 7M uncached x $3 + 2M output x $15
    assert chat.cached_input_usd == pytest.approx(0.90)
    assert chat.input_usd == pytest.approx(21.00)
    assert chat.output_usd == pytest.approx(30.00)
    assert chat.usd == pytest.approx(51.90)
    # agent: 85M cached x $0.30 + 10M written x $3.75 + 5M uncached x $3 + 5M output x $15
    assert agent.cached_input_usd == pytest.approx(25.50)
    assert agent.cache_write_usd == pytest.approx(37.50)
    assert agent.input_usd == pytest.approx(15.00)
    assert agent.output_usd == pytest.approx(75.00)
    assert agent.usd == pytest.approx(153.00)
    assert cost.usd == pytest.approx(204.90)
    assert cost.tokens == pytest.approx(117e6)
    assert cost.usd_per_mtok == pytest.approx(204.90 / 117)


def test_batch_discount_only_for_batch_mixes():
    batch_agent = TokenMix("agent", 100e6, 5e6, 0.85, 0.10, batch=True)
    cost = api_cost([CHAT, batch_agent], PRICE)
    assert cost.lines[0].usd == pytest.approx(51.90)       # chat pays full price
    assert cost.lines[1].usd == pytest.approx(153.00 / 2)  # the batch job half
    assert cost.lines[1].batch_discount_frac == 0.5


def test_provider_without_cache_write_price_bills_writes_as_input(catalog):
    # DeepSeek-R1 first-party: hit $0.14, miss $0.55, output $2.19, no write charge
    cost = api_cost([CHAT, AGENT], catalog.get("api_prices", "deepseek_api_r1"))
    assert cost.lines[0].usd == pytest.approx(3e6 * 0.14e-6 + 7e6 * 0.55e-6 + 2e6 * 2.19e-6)
    assert cost.lines[1].usd == pytest.approx(85e6 * 0.14e-6 + 15e6 * 0.55e-6 + 5e6 * 2.19e-6)
    assert cost.usd == pytest.approx(8.65 + 31.10)


def test_provider_without_cache_discount_bills_hits_as_input(catalog):
    row = catalog.get("api_prices", "together_deepseek_r1")  # $3 in, $7 out, no cache price
    cost = api_cost([AGENT], row)
    assert cost.usd == pytest.approx(100 * 3.00 + 5 * 7.00)


def test_mix_from_a_catalog_workload(catalog):
    chat = catalog.get("workloads", "chat")  # 1,500 in / 400 out, 30% cache hits
    mix = TokenMix.for_workload(chat, 19e6)
    assert (mix.input_tokens, mix.output_tokens) == pytest.approx((15e6, 4e6))
    assert mix.cache_hit_frac == 0.3
    total = TokenMix.from_total("x", 10.0, 0.25)
    assert (total.input_tokens, total.output_tokens) == (2.5, 7.5)


def test_bad_mix_is_refused():
    with pytest.raises(ValueError, match="exceed 1"):
        TokenMix("w", 1.0, 1.0, cache_hit_frac=0.8, cache_write_frac=0.3)
    with pytest.raises(ValueError, match="input_tokens must be a finite number >= 0"):
        TokenMix("w", -1.0, 1.0)
    with pytest.raises(ValueError, match="input_frac"):
        TokenMix.from_total("w", 1.0, 1.5)


mixes = st.builds(TokenMix, st.just("w"), st.floats(0, 1e9), st.floats(0, 1e9),
                  st.floats(0, 0.6), st.floats(0, 0.4), st.booleans())


@given(st.lists(mixes, min_size=1, max_size=4), st.floats(0.1, 100))
def test_cost_is_linear_in_tokens_and_cache_hits_never_add(mix, k):
    cost = api_cost(mix, PRICE).usd
    scaled = [TokenMix(m.workload, m.input_tokens * k, m.output_tokens * k, m.cache_hit_frac,
                       m.cache_write_frac, m.batch) for m in mix]
    assert api_cost(scaled, PRICE).usd == pytest.approx(cost * k, rel=1e-9, abs=1e-9)
    no_hits = [TokenMix(m.workload, m.input_tokens, m.output_tokens, 0.0, m.cache_write_frac,
                        m.batch) for m in mix]
    assert cost <= api_cost(no_hits, PRICE).usd + 1e-9


def test_comparable_prices_same_model_and_class(catalog):
    rows = comparable_prices(catalog, "deepseek_r1")
    same = {r.id for r in rows["same_model"]}
    cls = {r.id for r in rows["model_class"]}
    assert {"deepseek_api_r1", "together_deepseek_r1"} <= same
    assert "openai_o1" in cls and not same & cls
    for r in rows["model_class"]:
        assert r.model_class


def test_operations_opex_hand_computed(min_catalog_dir):
    cat = load_catalog(min_catalog_dir)
    fleet = [SiteFleet("2027", 1.0, "a", "KR", {"test_rack": 5}, it_mw=0.05),
             SiteFleet("2027", 1.0, "b", "KR", {"test_rack": 0}, it_mw=0.0),
             SiteFleet("2028", 2.0, "a", "KR", {"test_rack": 10}, it_mw=0.1)]
    df = operations_opex(fleet, cat, {"KRW": 0.001})
    got = {(r.period, r.site, r.item): (r.quantity, r.usd_per_year, r.usd)
           for r in df.itertuples()}
    # crew: 10 FTE x 100M KRW x 0.001 USD/KRW; techs: 0.1 FTE/rack x 50M KRW;
    # licences: 8 accelerators per rack x $1,000
    assert got[("2027", "a", "test_crew")] == pytest.approx((10, 1_000_000, 1_000_000))
    assert got[("2027", "a", "test_techs")] == pytest.approx((0.5, 25_000, 25_000))
    assert got[("2027", "a", "test_licence")] == pytest.approx((40, 40_000, 40_000))
    assert got[("2028", "a", "test_crew")] == pytest.approx((10, 1_000_000, 2_000_000))
    assert got[("2028", "a", "test_techs")] == pytest.approx((1.0, 50_000, 100_000))
    assert got[("2028", "a", "test_licence")] == pytest.approx((80, 80_000, 160_000))
    assert not any(site == "b" for _, site, _ in got)  # no racks, no staff
    assert df.attrs["units"]["usd"] == "USD"


def test_operations_opex_names_missing_salaries_and_rates(min_catalog_dir):
    cat = load_catalog(min_catalog_dir)
    with pytest.raises(InputError) as info:
        operations_opex([SiteFleet("2027", 1.0, "a", "US", {"test_rack": 1}, 0.01)], cat)
    msgs = [p.message for p in info.value.problems]
    assert any("no salary for staffing role 'test_crew' in US" in m for m in msgs)
    assert any("no salary for staffing role 'test_techs' in US" in m for m in msgs)
    with pytest.raises(InputError, match=r"is in KRW; give an exchange rate"):
        operations_opex([SiteFleet("2027", 1.0, "a", "KR", {"test_rack": 1}, 0.01)], cat)


def test_operations_opex_shipped_catalogs(catalog):
    fleet = [SiteFleet("2027", 1.0, "seoul_metro", "KR", {"gb200_nvl72": 20}, it_mw=2.4),
             SiteFleet("2027", 1.0, "us_texas", "US", {"mi355x_rack": 4}, it_mw=0.45)]
    df = operations_opex(fleet, catalog, {"KRW": 0.00072})
    sw = df[df.category == "software"].set_index(["site", "item"])
    assert sw.loc[("seoul_metro", "nvidia_ai_enterprise"), "usd_per_year"] == 20 * 72 * 4500
    assert sw.loc[("us_texas", "amd_rocm"), "usd_per_year"] == 0
    sre = df[df.item == "platform_sre"]
    assert list(sre.site) == ["(fleet)"]              # once for the fleet
    assert sre.usd_per_year.iloc[0] == pytest.approx(8 * 121_855_512 * 0.00072)  # Seoul: most MW
    crews = df[df.item == "facility_shift_crew"]
    assert set(crews.site) == {"seoul_metro", "us_texas"}
    hw = df[(df.item == "hardware_technician") & (df.site == "seoul_metro")]
    assert hw.quantity.iloc[0] == pytest.approx(20 * 72 * 0.001)


def test_break_even_hand_computed():
    be = break_even(fixed_usd=1_000_000, variable_usd_per_mtok=0.05, api_usd_per_mtok=0.55,
                    capacity_mtok=4_000_000)
    assert be.demand_mtok == pytest.approx(2_000_000)  # 1M / (0.55 - 0.05)
    assert be.utilisation_frac == pytest.approx(0.5)
    assert be.reachable is True
    tight = break_even(1_000_000, 0.05, 0.55, capacity_mtok=1_000_000)
    assert tight.utilisation_frac == pytest.approx(2.0) and tight.reachable is False
    never = break_even(1_000_000, 0.60, 0.55, capacity_mtok=4_000_000)
    assert never.demand_mtok is None and never.utilisation_frac is None
    assert never.reachable is False
    assert break_even(0.0, 0.05, 0.55).demand_mtok == 0.0
    with pytest.raises(ValueError):
        break_even(-1.0, 0.05, 0.55)


@given(st.floats(1, 1e9), st.floats(0, 10), st.floats(0.01, 50))
def test_break_even_is_where_costs_cross(fixed, variable, margin):
    api = variable + margin
    be = break_even(fixed, variable, api)
    d = be.demand_mtok
    assert self_hosted_usd_per_mtok(fixed, variable, d) == pytest.approx(api, rel=1e-9)
    assert self_hosted_usd_per_mtok(fixed, variable, d * 1.1) < api
    assert self_hosted_usd_per_mtok(fixed, variable, d * 0.9) > api
    assert math.isinf(self_hosted_usd_per_mtok(fixed, variable, 0.0))


def test_energy_per_request_hand_computed():
    # 1.9 kilo-tokens at 1M tokens per kWh = 1.9 Wh
    assert energy_per_request_wh(1_000_000, 1500, 400) == pytest.approx(1.9)
    assert energy_per_request_wh(250_000, 32000, 1500) == pytest.approx(134.0)
    with pytest.raises(ValueError):
        energy_per_request_wh(0, 1, 1)
