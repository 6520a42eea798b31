"""Bill of materials of a sized site: items add up to the sizing totals."""

from __future__ import annotations

import pytest

from dcplan.catalog import load_catalog
from dcplan.facility import size_fleet
from dcplan.facility.bom import site_bom
from dcplan.sites import load_sites


@pytest.fixture(scope="module")
def data():
    return load_catalog(), load_sites()


@pytest.mark.parametrize("optics", [None, "lpo_800g", "cpo"])
def test_items_add_up_to_the_sizing(data, optics):
    catalog, sites = data
    sized = size_fleet(catalog, sites["seoul_metro"], {"gb200_nvl72": 24, "hgx_h100": 6},
                       optics=optics)
    rows = site_bom(catalog, sized)
    net = [r for r in rows if r["category"] == "network" and not r["in_rack"]]
    assert sum(r["kw"] for r in net) == pytest.approx(sized.exact["network_kw"], rel=1e-12)
    assert sum(r["capex_usd"] for r in net) == pytest.approx(
        sized.exact["network_capex_usd"], rel=1e-12)
    cool = [r for r in rows if r["category"] == "cooling"]
    assert sum(r["capex_usd"] for r in cool) == pytest.approx(
        sized.exact["cdu_capex_usd"] + sized.exact["cooling_capex_usd"], rel=1e-12)
    assert sum(r["kw"] for r in cool) == pytest.approx(sized.exact["cooling_kw_peak"],
                                                        rel=1e-12)


def test_switch_counts_match_the_fabric_and_nics_are_per_accelerator(data):
    catalog, sites = data
    sized = size_fleet(catalog, sites["honam_haenam"], {"gb200_nvl72": 8})
    rows = {r["item"]: r for r in site_bom(catalog, sized)}
    net = sized.networks["gb200_nvl72"]
    assert rows["backend_leaf_switch"]["count"] == net.backend.leaf
    assert rows["backend_spine_switch"]["count"] == net.backend.spine
    # one ConnectX-7 per GPU in GB200 NVL72: 8 racks x 72
    assert rows["nic"]["count"] == 8 * 72 and rows["nic"]["in_rack"]
    cdu = rows["cdu"]
    assert cdu["count"] == sized.cooling.cdu_count
    assert cdu["capex_usd"] == cdu["count"] * catalog.get("cdus", cdu["catalog_id"]).capex_usd


def test_cpo_replaces_switch_end_transceivers(data):
    catalog, sites = data
    site = sites["honam_haenam"]
    plug = site_bom(catalog, size_fleet(catalog, site, {"gb200_nvl72": 16}))
    cpo = site_bom(catalog, size_fleet(catalog, site, {"gb200_nvl72": 16}, optics="cpo"))
    plug_modules = sum(r["count"] for r in plug if r["item"] == "transceiver")
    cpo_modules = sum(r["count"] for r in cpo if r["item"] == "transceiver")
    cpo_ports = sum(r["count"] for r in cpo if r["item"] == "cpo_port")
    assert cpo_ports > 0 and cpo_modules < plug_modules
    # one CPO port per switch port an optical link uses (a twin-port module served two),
    # the network model's count; the modules left are at the NIC ends
    net = size_fleet(catalog, site, {"gb200_nvl72": 16}, optics="cpo").networks["gb200_nvl72"]
    assert cpo_ports == net.cpo_ports and cpo_modules == sum(net.transceivers.values())
    assert cpo_ports > plug_modules - cpo_modules


def test_ups_and_generators_in_the_bill_of_materials(data):
    catalog, sites = data
    sized = size_fleet(catalog, sites["seoul_metro"], {"gb200_nvl72": 16})
    rows = {r["item"]: r for r in site_bom(catalog, sized) if r["category"] == "power"}
    red = sized.redundancy
    assert rows["ups"]["count"] == red.ups.count and rows["ups"]["catalog_id"] == red.ups.model_id
    assert rows["generator"]["count"] == red.generators.count
    assert rows["ups"]["capex_usd"] + rows["generator"]["capex_usd"] == pytest.approx(
        red.capex_usd)
    assert rows["ups"]["kw"] == pytest.approx(red.ups_loss_kw)
