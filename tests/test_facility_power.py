"""Power redundancy: UPS and generator plants by topology, hand-computed; bad input."""

from __future__ import annotations

import math
import textwrap

import pytest

from dcplan.catalog import load_catalog
from dcplan.errors import InputError
from dcplan.facility.power import plant_blocks, plant_modules, redundancy_sizing
from dcplan.sites import TOPOLOGIES, load_sites


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


@pytest.fixture(scope="module")
def honam():
    return load_sites()["honam_haenam"]  # 98 % distribution, cooling off the UPS


def _eff(a, b, c, f):
    return f / (f + a + b * f + c * f * f)


def test_module_counts_per_topology():
    t = TOPOLOGIES
    # 2,000 kW on 500 kW modules
    assert plant_modules(2000, 500, t["N"]) == (4, 4)
    assert plant_modules(2000, 500, t["N+1"]) == (5, 5)
    assert plant_modules(2000, 500, t["2N"]) == (4, 8)
    assert plant_modules(2000, 500, t["2N+1"]) == (5, 10)
    assert plant_modules(2000, 500, t["DR3/2"]) == (2, 6)  # 3 systems of 1,000 kW
    assert plant_modules(2000, 500, t["DR4/3"]) == (2, 8)  # 4 of 667 kW -> 2 modules each
    assert plant_modules(2001, 500, t["N+1"]) == (6, 6)   # one kW over
    assert plant_modules(0, 500, t["2N"]) == (0, 0)


def test_n_plus_1_by_hand(cat, honam):
    # UPS load 2,000 kW (IT + network; cooling is not on the UPS), 500 kW modules:
    # N+1 = ceil(2000/500) + 1 = 5 modules at 2000/2500 = 80 % load.
    # efficiency = 0.8 / (0.8 + 0.009 + 0.013*0.8 + 0.008*0.64) = 0.970262
    r = redundancy_sizing(cat, honam, 2000.0, 0.0, 300.0, topology="N+1",
                          ups_id="ups_500kw_modular", generator_id="genset_2000kw")
    assert (r.ups.count, r.ups.systems, r.ups.modules_per_system) == (5, 1, 5)
    assert r.ups.load_frac == pytest.approx(0.8)
    eff = _eff(0.009, 0.013, 0.008, 0.8)
    assert eff == pytest.approx(0.970262, abs=1e-6)
    assert r.ups_efficiency == pytest.approx(eff)
    assert r.ups_loss_kw == pytest.approx(2000 * (1 / eff - 1))
    # generators carry the facility + battery recharge (10 % of 2,000 kW = 200 kW):
    # facility = 2000/(eff*0.98) + (300 + standby)/0.98; 3 x 2 MW sets (N+1 of 2):
    # standby 3 x 8 = 24 kW -> facility = 2103.35 + 330.61 = 2433.96 kW
    facility = 2000 / (eff * 0.98) + (300 + 24) / 0.98
    assert r.generators.count == 3 and r.generator_standby_kw == pytest.approx(24.0)
    assert r.facility_kw_peak == pytest.approx(facility)
    assert r.recharge_kw == pytest.approx(200.0)
    assert r.grid_kw == pytest.approx(facility + 200)
    assert r.usable_it_frac == pytest.approx(2000 / (facility + 200))
    assert r.capex_usd == pytest.approx(5 * 175_000 + 3 * 1_200_000)
    assert r.uptime_tier.startswith("II")


def test_2n_runs_at_half_load_and_loses_more(cat, honam):
    # 2N: 2 systems x ceil(2000/500) = 8 modules at 2000/4000 = 50 % load:
    # efficiency = 0.5 / (0.5 + 0.009 + 0.0065 + 0.002) = 0.966184
    n1 = redundancy_sizing(cat, honam, 2000.0, 0.0, 300.0, topology="N+1",
                           ups_id="ups_500kw_modular", generator_id="genset_2000kw")
    two = redundancy_sizing(cat, honam, 2000.0, 0.0, 300.0, topology="2N",
                            ups_id="ups_500kw_modular", generator_id="genset_2000kw")
    assert (two.ups.count, two.ups.systems, two.ups.modules_per_system) == (8, 2, 4)
    assert two.ups_efficiency == pytest.approx(_eff(0.009, 0.013, 0.008, 0.5))
    assert two.ups_efficiency == pytest.approx(0.966184, abs=1e-6)
    assert two.ups_loss_kw > n1.ups_loss_kw
    # generators 2N: 2 x ceil(G / 2000) with G = facility + recharge ~ 2.64 MW -> 2 x 2
    assert two.generators.count == 2 * math.ceil((two.facility_kw_peak + 200) / 2000)
    assert two.capex_usd > n1.capex_usd
    assert two.usable_it_frac < n1.usable_it_frac
    assert two.uptime_tier == "IV"


def test_distributed_redundant_and_cheapest_model(cat, honam):
    dr = redundancy_sizing(cat, honam, 2000.0, 0.0, 300.0, topology="DR3/2")
    # without a forced model the cheaper plant wins: 500 kW modules (3 x 2 = 6 x 175k)
    # against 1,250 kW modules (3 x ceil(1000/1250) = 3 x 375k)
    assert dr.ups.model_id == "ups_500kw_modular" and dr.ups.count == 6
    assert dr.ups.load_frac == pytest.approx(2000 / 3000)


def test_the_site_topology_is_the_default(cat):
    sites = load_sites()
    r = redundancy_sizing(cat, sites["seoul_metro"], 5000.0, 100.0, 500.0)
    assert r.topology == "2N" == sites["seoul_metro"].power_redundancy
    assert r.generator_topology == "2N"


def _site_yaml(**changes):
    text = textwrap.dedent("""\
        id: test_site
        name: Test
        region: test
        country: KR
        currency: USD
        grid_mw: {2026: 10}
        energy_price_per_kwh: 0.08
        carbon_g_per_kwh: 400
        rack_positions: 10
        max_rack_kw: 40
        facility_water: false
        liquid_supply_c: 30
        build_capex_usd_per_mw: 1.0e7
        lead_time_months: 24
        distribution_efficiency: 0.98
        power_redundancy: "2N"
        design_dry_bulb_c: 30
        design_wet_bulb_c: 24
        climate_bins:
          - {dry_bulb_c: 10, wet_bulb_c: 8, hours: 8760}
        source: test fixture
        as_of: 2025-01
        """)
    for old, new in changes.items():
        text = text.replace(old, new)
    return text


def test_unknown_topology_is_a_clear_error(tmp_path):
    (tmp_path / "s.yaml").write_text(_site_yaml(**{'power_redundancy: "2N"':
                                                   'power_redundancy: "3N"'}))
    with pytest.raises(InputError) as err:
        load_sites(tmp_path)
    text = str(err.value)
    assert "s.yaml" in text and "test_site" in text and "power_redundancy" in text
    assert "'N+1'" in text and "'DR4/3'" in text  # names the choices


def test_unknown_topology_override_is_a_clear_error(cat, honam):
    with pytest.raises(InputError, match="unknown redundancy topology '3N'"):
        redundancy_sizing(cat, honam, 100.0, 0.0, 10.0, topology="3N")


def test_the_tier_is_that_of_the_weaker_plant(cat, honam):
    # 2N UPS with N generators: the Tier Standard asks the whole path, generators
    # included, to meet the Tier, so the site is Tier I, not IV
    weak = redundancy_sizing(cat, honam, 2000.0, 0.0, 300.0, topology="2N",
                             generator_topology="N")
    assert weak.uptime_tier == "I, limited by the N generator plant"
    # a generator plant stronger than the UPS does not raise the Tier
    strong = redundancy_sizing(cat, honam, 2000.0, 0.0, 300.0, topology="N+1",
                               generator_topology="2N")
    assert strong.uptime_tier.startswith("II (")
    assert redundancy_sizing(cat, honam, 2000.0, 0.0, 300.0, topology="DR3/2",
                             generator_topology="DR4/3").uptime_tier == "III"


def test_a_large_load_is_split_into_paralleled_blocks_each_with_its_spare():
    """At most 8 modules on one bus: 20,000 kW on 500 kW modules N+1 needs 40 working
    modules; blocks of 7 + 1 spare: ceil(40 / 7) = 6 blocks of ceil(40 / 6) + 1 = 8,
    48 modules (not 41: one spare for forty modules)."""
    from dcplan.sites import TOPOLOGIES as t

    assert plant_blocks(20_000, 500, t["N+1"], 8) == (6, 8)
    assert plant_modules(20_000, 500, t["N+1"], 8) == (48, 48)
    assert plant_modules(20_000, 500, t["N+1"]) == (41, 41)  # no limit
    # 2N (no spare inside a system): each system carries the whole load on
    # ceil(40 / 8) = 5 blocks of 8: 40 per system, 80 in all
    assert plant_blocks(20_000, 500, t["2N"], 8) == (5, 8)
    assert plant_modules(20_000, 500, t["2N"], 8) == (40, 80)
    # within the limit nothing changes
    assert plant_modules(3_000, 500, t["N+1"], 8) == plant_modules(3_000, 500, t["N+1"])
    with pytest.raises(InputError):
        plant_modules(20_000, 500, t["N+2"], 2)  # no room for the two spares


def test_the_shipped_ups_plant_of_a_large_site_has_a_spare_per_block(cat, honam):
    r = redundancy_sizing(cat, honam, 60_000.0, 2_000.0, 6_000.0, ups_id="ups_1250kw")
    ups = r.ups
    assert ups.modules_per_system <= cat.get("ups", "ups_1250kw").max_parallel_modules
    assert ups.count == ups.systems * ups.modules_per_system
    # every block carries its share with one module out
    per_block_load = ups.load_kw / ups.systems
    assert per_block_load <= (ups.modules_per_system - 1) * ups.module_kw + 1e-6
