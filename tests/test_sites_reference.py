"""The reference site set: Korean metro and regional sites plus US comparison sites.

Checks the shipped data, not the Site schema (that is ``test_sites.py``): which sites
exist, that their sources and estimates are recorded, that the grid outlook tells the
Seoul-metro story the scenarios rely on, and that the cooling model runs on each one.
"""

from __future__ import annotations

import pytest

from dcplan.catalog import load_catalog
from dcplan.facility.cooling import cooling
from dcplan.sites import load_sites

KOREAN_REGIONAL = ("honam_haenam", "yeongnam_ulsan", "gangwon_chuncheon", "chungcheong_sejong")
US_SITES = ("us_northern_virginia", "us_texas")


@pytest.fixture(scope="module")
def sites():
    return load_sites()


def test_reference_set_present(sites):
    assert "seoul_metro" in sites
    assert set(KOREAN_REGIONAL) <= set(sites)
    assert set(US_SITES) <= set(sites)
    regions = {sites[s].region for s in KOREAN_REGIONAL}
    assert len(regions) >= 3 and "seoul_metro" not in regions


def test_countries_and_currencies(sites):
    for s in ("seoul_metro", *KOREAN_REGIONAL):
        assert sites[s].country == "KR" and sites[s].currency == "KRW"
    for s in US_SITES:
        assert sites[s].country == "US" and sites[s].currency == "USD"
        # EIA averages are all-in (revenue / sales): no separate demand charge
        assert sites[s].demand_charge_per_kw_month == 0
        assert 0.03 < sites[s].energy_price_per_kwh < 0.15


def test_provenance_recorded(sites):
    for s in (*KOREAN_REGIONAL, *US_SITES):
        site = sites[s]
        assert site.source and site.as_of
        # the grid outlook is always a planning assumption: it must say so
        assert "grid_mw" in site.estimates
        assert "climate_monthly" in site.estimates


@pytest.mark.parametrize("site_id", ["yeongnam_ulsan", "gangwon_chuncheon", "chungcheong_sejong"])
def test_metro_conflict_recorded(sites, site_id):
    notes = sites[site_id].notes or ""
    assert "40 of 601" in notes and "64" in notes


def test_metro_grid_is_the_tight_one(sites):
    """Seoul has the least grid by the end of the horizon; every regional site has more."""
    seoul = sites["seoul_metro"].grid_mw_in(2035)
    for s in KOREAN_REGIONAL:
        assert sites[s].grid_mw_in(2035) > seoul
    # Seoul's first step stays under the 10 MW grid-impact-assessment trigger
    assert sites["seoul_metro"].grid_mw_in(2026) < 10


def test_kyber_hosts(sites):
    """At least two Korean sites can host a 600 kW rack; Seoul cannot."""
    hosts = [s for s in KOREAN_REGIONAL if sites[s].max_rack_kw >= 600]
    assert len(hosts) >= 2
    assert sites["seoul_metro"].max_rack_kw < 600


def test_cooling_runs_everywhere(sites):
    catalog = load_catalog()
    pue = {}
    for s, site in sites.items():
        res = cooling(catalog, site, {"gb200_nvl72": 16})
        assert res.heat_removed_kw == pytest.approx(res.it_kw + res.network_kw)
        pue[s] = 1 + res.cooling_kw_avg / res.it_kw
    # the coldest site (Chuncheon) needs less cooling energy than the hottest (Texas)
    assert pue["gangwon_chuncheon"] < pue["us_texas"]
