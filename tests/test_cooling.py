"""Cooling: CDU counts at capacity boundaries, hand-computed plant power, PUE trends,
energy balance, impossible requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcplan.catalog import load_catalog
from dcplan.errors import InputError
from dcplan.facility.cooling import cdu_count, cooling, loop_plant
from dcplan.facility.heat_rejection import chiller_kw_per_kw, free_cooling_works
from dcplan.facility.power import power_chain
from dcplan.sites import load_sites

FX = Path(__file__).parent / "fixtures" / "facility"


@pytest.fixture(scope="module")
def cat():
    return load_catalog(FX / "catalog")


@pytest.fixture(scope="module")
def sites():
    return load_sites(FX / "sites")


def test_cdu_count_boundaries():
    assert cdu_count(1000.0, 100.0, 1) == 11  # exactly full: 10 + 1 spare
    assert cdu_count(1001.0, 100.0, 1) == 12  # one kW over: 11 + 1
    assert cdu_count(999.0, 100.0, 1) == 11
    assert cdu_count(1000.0, 100.0, 0) == 10
    assert cdu_count(1000.0, 100.0, 2) == 12
    assert cdu_count(0.0, 100.0, 1) == 0


def test_cdu_count_in_the_model(cat, sites):
    mild = sites["mild"]
    # 5 x 600 kW all-liquid racks = 3,000 kW on 1,000 kW CDUs: 3 + 1
    r = cooling(cat, mild, {"fx_kyber": 5}, cdu_id="fx_cdu_1000")
    assert r.liquid_heat_kw == pytest.approx(3000.0)
    assert r.cdu_count == 4
    # one kW over (600.2 kW racks -> 3,001 kW): 4 + 1
    bigger = cat.replace("racks", "fx_kyber", it_power_max_kw=600.2)
    assert cooling(bigger, mild, {"fx_kyber": 5}, cdu_id="fx_cdu_1000").cdu_count == 5
    # redundancy 2 (N+2) and 0
    assert cooling(cat, mild, {"fx_kyber": 5}, cdu_id="fx_cdu_1000", redundancy=2).cdu_count == 5
    assert cooling(cat, mild, {"fx_kyber": 5}, cdu_id="fx_cdu_1000", redundancy=0).cdu_count == 3


def test_plant_physics_hand_values(cat):
    dry = cat.get("heat_rejection", "fx_dry_cooler")  # approach 8 K
    chiller = cat.get("heat_rejection", "fx_chiller_air")  # 0.25 at 15 C / 35 C, 2 %/K
    assert free_cooling_works(dry, 35.0, 27.0, 20.0)  # 27 + 8 = 35 <= 35
    assert not free_cooling_works(dry, 35.0, 27.1, 20.0)
    # lift 30 - 35 = -5 K vs rated 20 K: 1 + 0.02 * (-25) = 0.5
    assert chiller_kw_per_kw(chiller, 35.0, 30.0, 24.0) == pytest.approx(0.125)
    # lift -25 K: 1 + 0.02 * (-45) = 0.1 -> floored at 0.3
    assert chiller_kw_per_kw(chiller, 35.0, 10.0, 8.0) == pytest.approx(0.25 * 0.3)


def test_hand_computed_cooling_and_pue(cat, sites):
    # mild site: 4,380 h at 10 C, 4,380 h at 30 C; design 35 C; liquid loop 35 C,
    # chilled water 18 C. 10 x fx_liquid: IT 1,000 kW, 900 kW to liquid, 100 kW to air.
    # liquid loop: 10 C -> dry cooler (10+8 <= 35) 0.02; 30 C -> chiller, lift -5 K,
    #   0.25 * (1 + 0.02 * (-5 - 20)) = 0.125; avg 0.0725; design 35 C: lift 0 -> 0.15.
    # air loop 18 C: 10 C -> dry (10+8 <= 18) 0.02; 30 C -> lift 12 K: 0.25*0.84 = 0.21;
    #   avg 0.115; design: lift 17 K: 0.25 * 0.94 = 0.235.
    # pumps 2 kW per 100 kW x 900 = 18 kW; CRAH 0.05 x 100 = 5 kW.
    r = cooling(cat, sites["mild"], {"fx_liquid": 10}, cdu_id="fx_cdu_100")
    assert r.liquid_plant.free_id == "fx_dry_cooler"
    assert r.liquid_plant.chiller_id == "fx_chiller_air"
    assert r.liquid_plant.free_hours == pytest.approx(4380.0)
    assert r.liquid_plant.kw_per_kw_avg == pytest.approx(0.0725)
    assert r.liquid_plant.kw_per_kw_peak == pytest.approx(0.15)
    assert r.air_plant.kw_per_kw_avg == pytest.approx(0.115)
    assert r.air_plant.kw_per_kw_peak == pytest.approx(0.235)
    assert r.pump_kw == pytest.approx(18.0)
    assert r.crah_kw == pytest.approx(5.0)
    avg = 18 + 900 * 0.0725 + 5 + 100 * 0.115
    peak = 18 + 900 * 0.15 + 5 + 100 * 0.235
    assert r.cooling_kw_avg == pytest.approx(avg)
    assert r.cooling_kw_peak == pytest.approx(peak)
    assert r.annual_cooling_kwh == pytest.approx(avg * 8760)
    assert r.cdu_count == 10  # 900 / 100 = 9, + 1
    # power chain: IT through UPS 0.95 and distribution 0.98, cooling through 0.98
    chain = power_chain(sites["mild"], 1000.0, 0.0, avg)
    assert chain.facility_kw == pytest.approx(1000 / (0.95 * 0.98) + avg / 0.98)
    assert chain.pue == pytest.approx((1000 / 0.931 + avg / 0.98) / 1000)


def test_energy_balance(cat, sites):
    r = cooling(cat, sites["mild"], {"fx_liquid": 7, "fx_air": 5, "fx_kyber": 1},
                network_kw=12.5)
    it = 7 * 100 + 5 * 10 + 600
    assert r.it_kw == pytest.approx(it)
    assert r.liquid_heat_kw == pytest.approx(7 * 90 + 600)
    assert r.heat_removed_kw == pytest.approx(it + 12.5)
    assert r.cooling_kw_avg <= r.cooling_kw_peak


def test_pue_rises_with_hotter_climate(cat, sites):
    def pue(site, rack):
        r = cooling(cat, site, {rack: 10})
        return power_chain(site, r.it_kw, 0.0, r.cooling_kw_avg).pue

    for rack in ("fx_liquid", "fx_air"):
        assert pue(sites["hot"], rack) > pue(sites["mild"], rack)


def test_pue_rises_with_colder_supply_water(cat, sites):
    site = sites["mild"]
    pues = []
    for supply in (40.0, 35.0, 25.0, 15.0):
        r = cooling(cat, site, {"fx_liquid": 10}, supply_water_c=supply, cdu_id="fx_cdu_100")
        pues.append(power_chain(site, r.it_kw, 0.0, r.cooling_kw_avg).pue)
    assert pues == sorted(pues) and len(set(pues)) == 4


def test_supply_lowered_for_rack_limit_and_explicit_too_warm(cat, sites):
    site = sites["mild"].model_copy(update={"liquid_supply_c": 44.0})
    r = cooling(cat, site, {"fx_liquid": 2}, cdu_id="fx_cdu_100")  # 45 C max, 3 K approach
    assert r.supply_c == pytest.approx(42.0) and r.notes
    with pytest.raises(InputError, match="at most 42"):
        cooling(cat, site, {"fx_liquid": 2}, cdu_id="fx_cdu_100", supply_water_c=44.0)


def test_impossible_requests(cat, sites):
    small = sites["small_air"]
    with pytest.raises(InputError) as err:
        cooling(cat, small, {"fx_kyber": 1})
    text = str(err.value)
    assert "600 kW" in text and "40 kW" in text and "facility water" in text
    light = cat.replace("racks", "fx_liquid", it_power_max_kw=30.0, it_power_idle_kw=5.0)
    with pytest.raises(InputError, match="no facility water"):
        cooling(light, small, {"fx_liquid": 1})
    # an air rack is fine there
    assert cooling(cat, small, {"fx_air": 3}).cdu_count == 0


def test_no_plant_can_hold_supply(cat, sites):
    import dataclasses

    entries = {k: dict(v) for k, v in cat.entries.items()}
    del entries["heat_rejection"]["fx_chiller_air"]
    no_chiller = dataclasses.replace(cat, entries=entries)
    with pytest.raises(InputError, match="heat-rejection plant"):
        loop_plant(no_chiller, sites["hot"], 20.0)


def test_seoul_warm_water_beats_air_cooled_hall():
    cat = load_catalog()
    seoul = load_sites()["seoul_metro"]

    def pue(rack):
        from dcplan.facility.power import redundancy_sizing

        r = cooling(cat, seoul, {rack: 64})
        eff = redundancy_sizing(cat, seoul, r.it_kw, 0.0, r.cooling_kw_peak).ups_efficiency
        return power_chain(seoul, r.it_kw, 0.0, r.cooling_kw_avg, ups_efficiency=eff).pue

    liquid, air = pue("gb200_nvl72"), pue("hgx_h100")
    assert liquid < air
    assert 1.0 < liquid < 1.2 and air < 1.4
