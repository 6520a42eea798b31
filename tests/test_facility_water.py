"""Water: a cooling-tower climate bin by hand, dry and adiabatic plants, WUE, limits."""

from __future__ import annotations

import textwrap

import pytest

from dcplan.catalog import load_catalog
from dcplan.errors import InputError
from dcplan.facility.cooling import cooling
from dcplan.facility.water import (
    humidity_ratio,
    makeup_l_per_kwh,
    plant_water_l_per_kwh,
    saturation_ratio,
    tower_evaporation_l_per_kwh,
)
from dcplan.paths import data_dir
from dcplan.sites import load_sites

SITE = textwrap.dedent("""\
    id: wet_site
    name: One hot humid bin
    region: test
    country: US
    currency: USD
    grid_mw: {2026: 100}
    energy_price_per_kwh: 0.08
    carbon_g_per_kwh: 400
    rack_positions: 1000
    max_rack_kw: 200
    facility_water: true
    liquid_supply_c: 29.5
    build_capex_usd_per_mw: 1.0e7
    lead_time_months: 24
    distribution_efficiency: 0.98
    evaporative_cooling: true
    design_dry_bulb_c: 30
    design_wet_bulb_c: 24
    climate_bins:
      - {dry_bulb_c: 30, wet_bulb_c: 24, hours: 8760}
    source: test fixture
    as_of: 2025-01
    """)


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def _site(tmp_path, text=SITE):
    (tmp_path / "s.yaml").write_text(text)
    return next(iter(load_sites(tmp_path).values()))


def test_cooling_tower_bin_by_hand(cat):
    # Air in at 30 C dry bulb / 24 C wet bulb; tower water 35 -> 29.5 C (range 5.5 K),
    # exhaust saturated at the mean water temperature 32.25 C.
    #   p_ws(24) = 0.61094 exp(17.625 * 24 / 267.04) = 2.9780 kPa
    #   W_s(24) = 0.621945 * 2.9780 / (101.325 - 2.9780) = 0.018833
    #   W_in = ((2501 - 2.326*24) * 0.018833 - 1.006 * 6) / (2501 + 1.86*30 - 4.186*24)
    #        = (46.050 - 6.036) / 2456.34 = 0.016290
    #   h_in = 1.006*30 + 0.016290 * (2501 + 1.86*30) = 30.18 + 41.65 = 71.83 kJ/kg
    #   W_out = W_s(32.25) = 0.031040; h_out = 32.44 + 0.031040 * 2560.99 = 111.94
    #   evaporation = 3600 * (0.031040 - 0.016290) / (111.94 - 71.83) = 1.324 L/kWh
    assert saturation_ratio(24.0) == pytest.approx(0.018833, abs=2e-6)
    assert humidity_ratio(30.0, 24.0) == pytest.approx(0.016290, abs=2e-6)
    evap = tower_evaporation_l_per_kwh(30.0, 24.0, 29.5, 5.5)
    assert evap == pytest.approx(1.324, abs=2e-3)
    tower = cat.get("heat_rejection", "cooling_tower")  # 4 cycles, 0.005 % drift
    # drift = 0.00005 * 3600 / (4.186 * 5.5) = 0.00782 L/kWh;
    # blowdown = evap / (4 - 1) - drift = 0.4413 - 0.0078 = 0.4335; make-up 1.765
    drift, blow, total = makeup_l_per_kwh(evap, tower)
    assert drift == pytest.approx(0.0078185, rel=1e-4)
    assert blow == pytest.approx(evap / 3 - drift)
    assert total == pytest.approx(evap * 4 / 3, rel=1e-9)  # cycles rule: E * C / (C - 1)
    assert total == pytest.approx(1.765, abs=3e-3)
    assert plant_water_l_per_kwh(tower, 29.5, 30.0, 24.0) == pytest.approx(total)


def test_dry_plants_use_no_water_and_adiabatic_only_above_switchover(cat):
    assert plant_water_l_per_kwh(cat.get("heat_rejection", "dry_cooler"), 35, 30, 24) == 0
    assert plant_water_l_per_kwh(cat.get("heat_rejection", "chiller_air_cooled"), 18, 30,
                                 24) == 0
    adia = cat.get("heat_rejection", "adiabatic_dry_cooler")  # dry approach 8 K
    # 35 C supply: switch-over at 35 - 8 = 27 C dry bulb
    assert plant_water_l_per_kwh(adia, 35.0, 26.9, 20.0) == 0.0
    wet = plant_water_l_per_kwh(adia, 35.0, 30.0, 22.0)
    # 3600 * 0.85 * (30 - 22) / (2450 * 10) = 0.99918 L/kWh evaporated, x 3/2 bleed
    assert wet == pytest.approx(3600 * 0.85 * 8 / (2450 * 10) * 1.5)


def test_site_water_and_wue(cat, tmp_path):
    site = _site(tmp_path)
    # 10 x gb200_nvl72: 1,020 kW to liquid on a 29.5 C loop: the tower holds it in the
    # one bin (24 + 5.5 <= 29.5); water = 1.765 L/kWh x 1,020 kW x 8,760 h
    r = cooling(cat, site, {"gb200_nvl72": 10})
    liq = r.water.loops["liquid"]
    assert r.liquid_plant.free_id == "cooling_tower"
    per = plant_water_l_per_kwh(cat.get("heat_rejection", "cooling_tower"), 29.5, 30, 24)
    assert liq.annual_l == pytest.approx(per * r.liquid_heat_kw * 8760)
    assert liq.l_per_kwh_heat == pytest.approx(per)
    it_kwh = (r.it_kw + r.network_kw) * 8760
    assert r.water.wue_l_per_kwh == pytest.approx(r.water.annual_m3 * 1000 / it_kwh)
    assert r.water.annual_m3 > 0


def test_water_limit_drops_evaporative_plants(cat, tmp_path):
    site = _site(tmp_path, SITE.replace("evaporative_cooling: true",
                                        "evaporative_cooling: true\nwater_limit_m3_per_year: 1"))
    r = cooling(cat, site, {"gb200_nvl72": 10})
    assert r.water.annual_m3 == 0 and r.water.within_limit
    assert r.liquid_plant.free_id != "cooling_tower"
    assert any("allowance" in n for n in r.notes)


def test_negative_water_limit_is_a_clear_error(tmp_path):
    bad = SITE.replace("evaporative_cooling: true",
                       "evaporative_cooling: true\nwater_limit_m3_per_year: -5")
    (tmp_path / "bad.yaml").write_text(bad)
    with pytest.raises(InputError) as err:
        load_sites(tmp_path)
    text = str(err.value)
    assert "bad.yaml" in text and "wet_site" in text and "water_limit_m3_per_year" in text
    assert "-5" in text


def test_a_water_limit_keeps_the_wet_plant_of_the_loop_that_fits(cat, tmp_path):
    """A limit between one loop's water and both loops': the plants of least energy
    that stay within it keep evaporative cooling where it fits, instead of dropping
    every wet plant (which cost hundreds of kW of design-day cooling)."""
    import itertools

    from dcplan.facility.cooling import loop_plant_options
    from dcplan.facility.water import SiteWater, loop_water

    src = data_dir("sites") / "us_northern_virginia.yaml"
    free = cooling(cat, _copy_with(tmp_path / "free", src, ""), {"gb200_nvl72": 64})
    loops = free.water.loops
    assert set(loops) == {"liquid", "air"} and free.water.annual_m3 > 0
    small = min(lw.annual_l for lw in loops.values()) / 1000.0  # [m3/year]
    limit = small + 0.5 * (free.water.annual_m3 - small)
    site = _copy_with(tmp_path / "lim", src, f"water_limit_m3_per_year: {limit:.0f}\n")
    r = cooling(cat, site, {"gb200_nvl72": 64})
    assert r.water.within_limit and 0 < r.water.annual_m3 <= limit
    assert any("allowance" in n for n in r.notes)
    # brute force over every pair of loop plants within the limit: least annual energy
    best = None
    for lp, ap in itertools.product(
            loop_plant_options(cat, site, r.supply_c, True),
            loop_plant_options(cat, site, site.air_chilled_water_c, True)):
        w = SiteWater({"liquid": loop_water(cat, site, lp, r.liquid_heat_kw),
                       "air": loop_water(cat, site, ap, r.air_heat_kw)},
                      1.0, site.water_limit_m3_per_year)
        if w.within_limit:
            e = r.liquid_heat_kw * lp.kw_per_kw_avg + r.air_heat_kw * ap.kw_per_kw_avg
            best = e if best is None else min(best, e)
    got = r.liquid_heat_kw * r.liquid_plant.kw_per_kw_avg + \
        r.air_heat_kw * r.air_plant.kw_per_kw_avg
    assert got == pytest.approx(best)
    # and it is below the water-free design's energy
    dry = cooling(cat, _copy_with(tmp_path / "dry", src, "water_limit_m3_per_year: 0\n"),
                  {"gb200_nvl72": 64})
    assert dry.water.annual_m3 == 0 and r.cooling_kw_avg < dry.cooling_kw_avg


def test_the_peak_is_never_below_the_climate_s_hottest_hours(cat, tmp_path):
    """A design condition milder than the climate's hottest bin: the peak is taken over
    the bins too (hand check: the only chiller hour is the 30 C / 24 C bin)."""
    from dcplan.facility.heat_rejection import chiller_kw_per_kw

    mild = SITE.replace("design_dry_bulb_c: 30", "design_dry_bulb_c: 15").replace(
        "design_wet_bulb_c: 24", "design_wet_bulb_c: 10").replace(
        "evaporative_cooling: true", "evaporative_cooling: false")
    site = _site(tmp_path, mild)
    r = cooling(cat, site, {"gb200_nvl72": 10})
    chiller = cat.get("heat_rejection", r.liquid_plant.chiller_id)
    assert r.liquid_plant.kw_per_kw_peak == pytest.approx(
        chiller_kw_per_kw(chiller, r.supply_c, 30, 24))


def _copy_with(folder, src, extra: str):
    """The site of ``src`` copied into ``folder`` with ``extra`` lines appended."""
    folder.mkdir()
    (folder / src.name).write_text(src.read_text() + extra)
    return next(iter(load_sites(folder).values()))
