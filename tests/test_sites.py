"""Sites: shipped data, the grid step function, climate bins, and clear errors."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest

from dcplan.errors import InputError
from dcplan.sites import (
    TOPOLOGIES,
    Site,
    get_site,
    load_sites,
    monthly_to_bins,
    wet_bulb_c,
)


def test_shipped_sites_load():
    sites = load_sites()
    assert {"seoul_metro", "honam_haenam"} <= set(sites)
    seoul = sites["seoul_metro"]
    assert seoul.region == "seoul_metro" and seoul.country == "KR" and seoul.currency == "KRW"
    assert sites["honam_haenam"].region == "honam"
    for site in sites.values():
        assert math.isclose(sum(b.hours for b in site.climate), 8760.0)
        assert site.facility_water
        # the UPS efficiency comes from the UPS model at the topology's load fraction
        assert site.ups_efficiency is None or 0 < site.ups_efficiency <= 1
        assert site.power_redundancy in TOPOLOGIES


def test_grid_step_function():
    seoul = load_sites()["seoul_metro"]
    steps = sorted(seoul.grid_mw.items())
    first_year, first_mw = steps[0]
    assert seoul.grid_mw_in(first_year - 1) == 0.0
    assert seoul.grid_mw_in(first_year) == first_mw
    # between two steps the earlier value holds
    mw0, (y1, mw1) = steps[0][1], steps[1]
    assert seoul.grid_mw_in(y1 - 1) == mw0
    assert seoul.grid_mw_in(y1) == mw1
    assert seoul.grid_mw_in(2100) == steps[-1][1]


def test_wet_bulb_known_points():
    # Stull (2011) check value: 20 C, 50 % RH -> 13.7 C wet bulb.
    assert wet_bulb_c(20.0, 0.50) == pytest.approx(13.7, abs=0.1)
    # saturated air: wet bulb equals dry bulb (within the fit's accuracy)
    assert wet_bulb_c(25.0, 0.99) == pytest.approx(25.0, abs=0.3)
    assert wet_bulb_c(30.0, 0.3) < 30.0


def test_monthly_bins_hand_computed():
    from dcplan.sites import ClimateMonth

    months = [ClimateMonth(month=m, dry_bulb_mean_c=10.0, dry_bulb_max_c=14.0,
                           dry_bulb_min_c=6.0, rh_frac=0.6) for m in range(1, 13)]
    bins = monthly_to_bins(months)
    assert len(bins) == 48
    assert sum(b.hours for b in bins) == pytest.approx(8760.0)
    # January: 31 days * 24 h / 4 = 186 h per bin; amplitude 4 K
    assert bins[0].hours == pytest.approx(186.0)
    assert bins[0].dry_bulb_c == pytest.approx(10.0 + 4.0 * math.cos(math.pi / 8), abs=1e-3)
    assert bins[3].dry_bulb_c == pytest.approx(10.0 - 4.0 * math.cos(math.pi / 8), abs=1e-3)
    # hours-weighted mean equals the monthly mean
    mean = sum(b.dry_bulb_c * b.hours for b in bins) / 8760.0
    assert mean == pytest.approx(10.0, abs=1e-3)
    assert all(b.wet_bulb_c <= b.dry_bulb_c for b in bins)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text), encoding="utf-8")
    return p


GOOD = """\
id: test_site
name: Test
region: test_region
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
ups_efficiency: 0.95
distribution_efficiency: 0.98
design_dry_bulb_c: 30
design_wet_bulb_c: 24
climate_bins:
  - {dry_bulb_c: 10, wet_bulb_c: 8, hours: 8760}
source: test fixture
as_of: 2025-01
"""


def test_good_fixture(tmp_path):
    _write(tmp_path, "a.yaml", GOOD)
    sites = load_sites(tmp_path)
    assert list(sites) == ["test_site"]
    assert sites["test_site"].demand_charge_per_kw_month == 0.0


def test_bad_site_reports_all_problems(tmp_path):
    bad = GOOD.replace("max_rack_kw: 40", "max_rack_kwh: 40").replace(
        "ups_efficiency: 0.95", "ups_efficiency: 1.5")
    _write(tmp_path, "bad.yaml", bad)
    _write(tmp_path, "hours.yaml", GOOD.replace("test_site", "other").replace(
        "hours: 8760", "hours: 8000"))
    with pytest.raises(InputError) as err:
        load_sites(tmp_path)
    text = str(err.value)
    assert "bad.yaml" in text and "test_site" in text
    assert "max_rack_kwh" in text and "did you mean 'max_rack_kw'" in text
    assert "ups_efficiency" in text
    assert "hours.yaml" in text and "8760" in text and "'other'" in text
    assert "bad.yaml:10" in text  # line of the misspelt field


def test_duplicate_ids_across_files(tmp_path):
    _write(tmp_path, "a.yaml", GOOD)
    _write(tmp_path, "b.yaml", GOOD)
    with pytest.raises(InputError, match="duplicate site id"):
        load_sites(tmp_path)


def test_malformed_yaml_and_missing_climate(tmp_path):
    _write(tmp_path, "broken.yaml", "id: [unclosed\n")
    no_climate = GOOD.split("climate_bins:")[0] + "source: x y z\nas_of: 2025-01\n"
    _write(tmp_path, "noclimate.yaml", no_climate)
    with pytest.raises(InputError) as err:
        load_sites(tmp_path)
    text = str(err.value)
    assert "broken.yaml" in text and "malformed YAML" in text
    assert "noclimate.yaml" in text and "climate_bins or climate_monthly" in text


def test_unknown_site_id_suggests():
    sites = load_sites()
    with pytest.raises(InputError, match="did you mean 'seoul_metro'"):
        get_site(sites, "seoul_metr")


def test_missing_folder(tmp_path):
    with pytest.raises(InputError, match="sites folder not found"):
        load_sites(tmp_path / "nope")


def test_site_is_a_pydantic_entry():
    assert "grid_mw" in Site.model_fields and "pue" not in " ".join(Site.model_fields)
