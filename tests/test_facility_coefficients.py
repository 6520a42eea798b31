"""The planner contract: coefficients() and size_fleet()."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from dcplan.catalog import load_catalog
from dcplan.errors import InputError
from dcplan.facility import FacilityCoefficients, coefficients, size_fleet
from dcplan.sites import load_sites

FX = Path(__file__).parent / "fixtures" / "facility"


@pytest.fixture(scope="module")
def cat():
    return load_catalog(FX / "catalog")


@pytest.fixture(scope="module")
def sites():
    return load_sites(FX / "sites")


def test_contract_fields_present():
    names = {f.name for f in fields(FacilityCoefficients)}
    assert {"network_kw_per_rack", "network_capex_usd_per_rack", "cooling_kw_per_it_kw_avg",
            "cooling_kw_per_it_kw_peak", "loss_frac", "liquid_heat_kw_per_rack", "cdu_id",
            "cdu_capacity_kw", "cdu_capex_usd", "cooling_capex_usd_per_kw",
            "pue_annual"} <= names


def test_coefficients_hand_values(cat, sites):
    # 8 x fx_air: network 3.512 kW and 98,400 USD (see test_network) -> per rack.
    mild = sites["mild"]
    c = coefficients(cat, mild, "fx_air", 8)
    assert c.network_kw_per_rack == pytest.approx(3.512 / 8)
    assert c.network_capex_usd_per_rack == pytest.approx(98400 / 8)
    assert c.liquid_heat_kw_per_rack == 0 and c.cdu_id == ""
    # air loop (18 C): avg 0.115, peak 0.235 kW/kW (see test_cooling) + CRAH 0.05, on
    # IT 80 kW plus network heat 3.512 kW
    heat = 80 + 3.512
    assert c.cooling_kw_per_it_kw_avg == pytest.approx(heat * (0.115 + 0.05) / 80)
    assert c.cooling_kw_per_it_kw_peak == pytest.approx(heat * (0.235 + 0.05) / 80)
    # losses: facility = (IT + net)/(0.95*0.98) + cooling/0.98 at the design day
    cool = heat * (0.235 + 0.05)
    facility = (80 + 3.512) / 0.931 + cool / 0.98
    assert c.loss_frac == pytest.approx(facility / (80 + 3.512 + cool) - 1)
    avg_cool = heat * (0.115 + 0.05)
    assert c.pue_annual == pytest.approx(((80 + 3.512) / 0.931 + avg_cool / 0.98) / 83.512)


def test_liquid_coefficients_and_cdus(cat, sites):
    c = coefficients(cat, sites["mild"], "fx_liquid", 10)
    assert c.liquid_heat_kw_per_rack == pytest.approx(90.0)
    assert c.cdu_id in ("fx_cdu_100", "fx_cdu_1000")
    assert c.cdus_per_rack * 10 == pytest.approx(
        -(-900 // c.cdu_capacity_kw) + c.cdu_redundancy)
    assert c.pue_annual < coefficients(cat, sites["mild"], "fx_air", 10).pue_annual


def test_size_fleet_matches_linear_for_one_type(cat, sites):
    s = size_fleet(cat, sites["mild"], {"fx_liquid": 12})
    for key in ("network_kw", "cooling_kw_avg", "cooling_kw_peak", "facility_kw_peak",
                "cdu_count"):
        assert s.relative_error[key] == pytest.approx(0.0, abs=1e-9)


def test_size_fleet_reports_linear_error(cat, sites):
    mild = sites["mild"]
    # planner used coefficients at 16 racks; the solved fleet has 5 + 3 (two types
    # sharing one CDU spare): exact differs from the linear estimate
    used = {r: coefficients(cat, mild, r, 16) for r in ("fx_liquid", "fx_air")}
    s = size_fleet(cat, mild, {"fx_liquid": 5, "fx_air": 3, "fx_kyber": 0},
                   coefficients_used=used)
    assert set(s.fleet) == {"fx_liquid", "fx_air"}
    assert s.exact["it_kw"] == pytest.approx(530.0) == s.linear["it_kw"]
    # exact CDUs: 450 kW on the chosen model; linear: per-rack share at 16 racks
    assert s.exact["cdu_count"] == s.cooling.cdu_count
    assert s.linear["cdu_count"] == pytest.approx(5 * used["fx_liquid"].cdus_per_rack)
    assert s.difference["network_kw"] == pytest.approx(
        s.exact["network_kw"] - s.linear["network_kw"])
    assert s.exact["network_kw"] != pytest.approx(s.linear["network_kw"])
    assert s.cooling.heat_removed_kw == pytest.approx(530.0 + s.exact["network_kw"])


def test_coefficients_refuse_impossible(cat, sites):
    with pytest.raises(InputError, match="densest rack"):
        coefficients(cat, sites["small_air"], "fx_kyber", 1)


def test_shipped_sites_and_catalog():
    cat = load_catalog()
    sites = load_sites()
    for site in sites.values():
        c = coefficients(cat, site, "gb200_nvl72", 64)
        assert 1.0 < c.pue_annual < 1.3
        assert 0 < c.loss_frac < 0.15
        assert c.network_kw_per_rack > 0 and c.cdu_id
        assert c.cooling_kw_per_it_kw_avg < c.cooling_kw_per_it_kw_peak
