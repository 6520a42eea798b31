"""Network fabric: hand-counted fat trees, connectivity, bisection, optics, GraphML."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest

from dcplan.catalog import load_catalog
from dcplan.errors import InputError
from dcplan.facility.network import Layout, leaf_ports, network, write_graphml

FX = Path(__file__).parent / "fixtures" / "facility"

# The fixture layout, fixed here so the hand counts below do not depend on the
# shipped assumptions file.
LAYOUT = Layout(rack_pitch_m=0.6, in_rack_cable_m=2.0, racks_per_row=16,
                copper_max_rack_distance=1)


@pytest.fixture(scope="module")
def cat():
    return load_catalog(FX / "catalog")


def test_leaf_port_split():
    assert leaf_ports(16, 1.0) == (8, 8)
    assert leaf_ports(16, 3.0) == (12, 4)
    assert leaf_ports(64, 1.0) == (32, 32)
    with pytest.raises(InputError):
        leaf_ports(16, 0.5)


def test_two_tier_hand_count(cat):
    # 8 racks x 4 NICs x 400G = 32 endpoints on 16-port 400G switches, non-blocking:
    # leaf = 8 down + 8 up -> 32/8 = 4 leaves; 4*8 = 32 uplinks / 16 ports = 2 spines.
    # Leaf i serves racks 2i and 2i+1 and sits in rack 2i+1: every NIC link is in the
    # rack or to the neighbour, 2.0 m / 2.6 m <= 3 m DAC -> 32 copper links.
    # 32 leaf-spine links are optical: 2 transceivers each = 64 modules of 400G.
    r = network(cat, "fx_air", 8, layout=LAYOUT)
    assert (r.backend.leaf, r.backend.spine, r.backend.core) == (4, 2, 0)
    assert r.links == {"leaf_spine": 32, "nic_leaf": 32}
    assert r.copper_links == 32 and r.optical_links == 32
    assert r.transceivers == {"fx_pluggable_400": 64}
    assert r.switch_kw == pytest.approx(6 * 0.5)
    assert r.optics_kw == pytest.approx(64 * 8 / 1000)
    assert r.switch_capex_usd == pytest.approx(6 * 10000)
    assert r.optics_capex_usd == pytest.approx(64 * 500)
    assert r.copper_capex_usd == pytest.approx(32 * 2 * 100)
    assert r.nic_kw == pytest.approx(32 * 0.020)
    assert r.network_kw == pytest.approx(3.0 + 0.512)  # NICs are in rack IT power


def test_all_optical_when_racks_far(cat):
    # copper only inside the rack (distance 0) and a 5 m in-rack run > 3 m DAC reach:
    # every link is optical; NIC ends 32 modules, leaf down ends 32, leaf up 32, spine 32.
    far = Layout(rack_pitch_m=0.6, in_rack_cable_m=5.0, racks_per_row=16,
                 copper_max_rack_distance=0)
    r = network(cat, "fx_air", 8, layout=far)
    assert r.copper_links == 0 and r.optical_links == 64
    assert r.transceivers == {"fx_pluggable_400": 128}


def test_rail_optimised_hand_count(cat):
    # fx_rail: 8 NICs per rack = 2 servers x 4 rails. 4 racks -> 32 endpoints > 16.
    # Per rail 4 racks x 2 = 8 endpoints = one leaf's 8 down ports -> 4 leaves, 2 spines.
    # Each rail leaf holds NICs of racks 0..3 and sits in rack 2 (median): racks 1-3 are
    # within one position (copper, 6 links), rack 0 is two away (optical, 2 links).
    # Modules: NIC ends 4 leaves x 2 = 8; leaf ends (2 down + 8 up) x 4 = 40; spines 2 x 16.
    # Front-end: 800 Gb/s per rack = 2 x 400G ports; 8 ports fit one switch in rack 2:
    # 6 copper, 2 optical -> 2 NIC-end + 2 switch-end modules.
    r = network(cat, "fx_rail", 4, layout=LAYOUT)
    assert (r.backend.leaf, r.backend.spine) == (4, 2)
    assert (r.frontend.leaf, r.frontend.spine) == (1, 0)
    assert r.links == {"fe_nic_leaf": 8, "leaf_spine": 32, "nic_leaf": 32}
    assert r.copper_links == 24 + 6
    assert r.transceivers == {"fx_pluggable_400": 8 + 40 + 32 + 4}
    g = r.graph
    for leaf in ("leaf0", "leaf1", "leaf2", "leaf3"):
        rails = {int(n.split("nic")[1]) % 4 for n in g.neighbors(leaf) if "/nic" in n}
        assert sum(d["links"] for _, _, d in g.edges(leaf, data=True) if "links" in d) == 8
        assert len(rails) == 1  # one rail per leaf


def test_three_tiers_hand_count(cat):
    # 40 racks x 4 = 160 endpoints -> 20 leaves > 16 (a spine's ports): three tiers.
    # Pods of 16/2 = 8 leaves: 3 pods (8, 8, 4 leaves), 8 spines each = 24 spines;
    # spine uplinks = leaf links = (8 + 8 + 4) * 8 = 160 -> 160/16 = 10 core switches.
    r = network(cat, "fx_air", 40, layout=LAYOUT)
    assert (r.backend.leaf, r.backend.spine, r.backend.core) == (20, 24, 10)
    assert r.links["spine_core"] == 160
    assert r.bisection_gbps == pytest.approx(r.full_bisection_gbps)
    assert nx.is_connected(r.graph)


def test_every_accelerator_reaches_every_other(cat):
    for rack, n in (("fx_air", 8), ("fx_rail", 4), ("fx_air", 40)):
        g = network(cat, rack, n, layout=LAYOUT, with_accelerators=True).graph
        accs = [v for v, d in g.nodes(data=True) if d["kind"] == "accelerator"]
        assert len(accs) == n * (8 if rack == "fx_rail" else 4)
        comp = nx.node_connected_component(g, accs[0])
        assert all(a in comp for a in accs)


def _max_flow_between_halves(g, gbps):
    eps = sorted((v for v, d in g.nodes(data=True) if d["kind"] == "nic"),
                 key=lambda v: (int(v.split("/")[0][1:]), int(v.split("nic")[1])))
    half = len(eps) // 2
    d = nx.DiGraph()
    for u, v, data in g.edges(data=True):
        if data["tier"].startswith("fe_"):
            continue
        for a, b in ((u, v), (v, u)):
            cap = (d.get_edge_data(a, b, {"capacity": 0})["capacity"]
                   + data["gbps"] * data.get("links", 1))
            d.add_edge(a, b, capacity=cap)
    for v in eps[:half]:
        d.add_edge("SRC", v, capacity=gbps)
    for v in eps[half:]:
        d.add_edge(v, "DST", capacity=gbps)
    return nx.maximum_flow_value(d, "SRC", "DST"), half * gbps


def test_oversubscription_one_gives_full_bisection(cat):
    r = network(cat, "fx_air", 8, layout=LAYOUT, oversubscription=1.0)
    flow, full = _max_flow_between_halves(r.graph, 400.0)
    assert flow == pytest.approx(full) == pytest.approx(16 * 400)
    assert r.bisection_gbps == pytest.approx(r.full_bisection_gbps)


def test_oversubscription_three_is_not_full(cat):
    # leaf = 12 down + 4 up: 3 leaves (12, 12, 8), 12 uplinks; worst-case bisection
    # limited by half the uplinks: 12 * 400 / 2 = 2400 Gb/s < 6400.
    r = network(cat, "fx_air", 8, layout=LAYOUT, oversubscription=3.0)
    assert (r.backend.leaf, r.backend.spine) == (3, 1)
    assert r.bisection_gbps == pytest.approx(2400.0)
    flow, full = _max_flow_between_halves(r.graph, 400.0)
    assert flow < full


def test_cpo_lowers_optics_power_by_catalog_factor(cat):
    # switch ends: pluggable 8 W vs CPO 2 W per 400G port; links unchanged; with the
    # default layout every optical link is switch-to-switch (64 ends).
    plug = network(cat, "fx_air", 8, layout=LAYOUT, optics="fx_pluggable_400")
    cpo = network(cat, "fx_air", 8, layout=LAYOUT, optics="fx_cpo")
    assert cpo.links == plug.links and cpo.total_links == plug.total_links
    assert cpo.cpo_ports == 64 and cpo.transceivers == {}
    assert cpo.optics_kw / plug.optics_kw == pytest.approx(2.0 / 8.0)
    # a CPO switch model has co-packaged ends even with pluggable optics chosen
    sw = network(cat, "fx_air", 8, layout=LAYOUT, switch_id="fx_sw16_cpo")
    assert sw.cpo_ports == 64 and sw.optics_kw == pytest.approx(cpo.optics_kw)


def test_lpo_and_nic_ends(cat):
    far = Layout(rack_pitch_m=0.6, in_rack_cable_m=5.0, racks_per_row=16,
                 copper_max_rack_distance=0)
    plug = network(cat, "fx_air", 8, layout=far, optics="fx_pluggable_400")
    lpo = network(cat, "fx_air", 8, layout=far, optics="fx_lpo_400")
    cpo = network(cat, "fx_air", 8, layout=far, optics="fx_cpo")
    assert lpo.optics_kw == pytest.approx(128 * 4 / 1000)
    assert plug.optics_kw == pytest.approx(128 * 8 / 1000)
    # CPO on switch ends, pluggable modules stay on the 32 NIC ends
    assert cpo.transceivers == {"fx_pluggable_400": 32} and cpo.cpo_ports == 96
    assert cpo.optics_kw == pytest.approx((32 * 8 + 96 * 2) / 1000)


def test_single_switch_and_errors(cat):
    r = network(cat, "fx_air", 2, layout=LAYOUT)
    assert (r.backend.leaf, r.backend.spine) == (1, 0)
    assert r.bisection_gbps == pytest.approx(r.full_bisection_gbps)
    with pytest.raises(InputError, match="did you mean 'fx_air'"):
        network(cat, "fx_ai", 2)
    with pytest.raises(InputError, match="optical module"):
        network(cat, "fx_air", 2, optics="fx_dac_400")
    with pytest.raises(InputError, match="whole number"):
        network(cat, "fx_air", 0)


def test_graphml_export_is_atomic(cat, tmp_path):
    r = network(cat, "fx_air", 8, layout=LAYOUT, with_accelerators=True)
    out = tmp_path / "fabric.graphml"
    write_graphml(r, out)
    g = nx.read_graphml(out)
    assert g.number_of_nodes() == r.graph.number_of_nodes()
    assert g.number_of_edges() == r.graph.number_of_edges()
    assert [p.name for p in tmp_path.iterdir()] == ["fabric.graphml"]  # no temp left


# --- NVIDIA DGX SuperPOD scalable units on the shipped catalog -----------------------


@pytest.fixture(scope="module")
def shipped():
    return load_catalog()


def test_superpod_b200_scalable_unit(shipped):
    # B200 SU: 32 DGX B200 = 8 racks x 4 servers = 256 GPUs; 8 rails; a 64 x 400G
    # switch (QM9700-class) = 32 down + 32 up: one leaf per rail = 8 leaves,
    # 8 x 32 / 64 = 4 spines. Four SUs (1,024 GPUs): 32 leaves, 16 spines.
    su = network(shipped, "hgx_b200", 8, switch_id="nvidia_sn5400", keep_graph=False)
    assert su.accelerators == 256
    assert (su.backend.leaf, su.backend.spine, su.backend.core) == (8, 4, 0)
    pod = network(shipped, "hgx_b200", 32, switch_id="nvidia_sn5400", keep_graph=False)
    assert pod.accelerators == 1024
    assert (pod.backend.leaf, pod.backend.spine) == (32, 16)


def test_superpod_gb200_scalable_unit(shipped):
    # GB200 SU: 8 NVL72 racks = 576 GPUs, 1 x 400G per GPU, 4 rails (NICs per compute
    # tray). Quantum-X800 144 x 800G = 288 x 400G: 144 down per leaf; per rail
    # 8 racks x 18 trays = 144 NICs -> 4 leaves; 4 x 144 / 288 = 2 spines.
    # 128 racks (9,216 GPUs): 64 leaves, 32 spines, still two tiers.
    su = network(shipped, "gb200_nvl72", 8, switch_id="nvidia_q3400", keep_graph=False)
    assert su.accelerators == 576
    assert (su.backend.leaf, su.backend.spine, su.backend.core) == (4, 2, 0)
    full = network(shipped, "gb200_nvl72", 128, switch_id="nvidia_q3400", keep_graph=False)
    assert full.accelerators == 9216
    assert (full.backend.leaf, full.backend.spine, full.backend.core) == (64, 32, 0)


def test_superpod_b300_scalable_unit(shipped):
    # B300 SU (XDR RA): 72 DGX B300 = 18 racks x 4 = 576 GPUs, 1 x 800G per GPU, 8 rails;
    # Quantum-X800 at 800G: 72 down + 72 up; per rail 72 NICs -> 8 leaves;
    # 8 x 72 / 144 = 4 spines.
    su = network(shipped, "hgx_b300", 18, switch_id="nvidia_q3400", keep_graph=False)
    assert su.accelerators == 576
    assert (su.backend.leaf, su.backend.spine) == (8, 4)


def test_shipped_optics_comparison(shipped):
    res = {o: network(shipped, "gb200_nvl72", 16, optics=o, keep_graph=False)
           for o in ("pluggable_800g", "lpo_800g", "cpo")}
    links = {o: r.total_links for o, r in res.items()}
    assert len(set(links.values())) == 1
    assert res["cpo"].optics_kw < res["lpo_800g"].optics_kw < res["pluggable_800g"].optics_kw


def test_no_switch_exceeds_its_ports(cat, shipped):
    cases = [(cat, "fx_air", 8, None), (cat, "fx_air", 40, None), (cat, "fx_rail", 4, None),
             (shipped, "gb200_nvl72", 128, "nvidia_q3400"),
             (shipped, "hgx_b200", 32, "nvidia_sn5400")]
    for catalog, rack, n, sw in cases:
        r = network(catalog, rack, n, switch_id=sw)
        for v, d in r.graph.nodes(data=True):
            if d["kind"] == "switch":
                radix = r.frontend.radix if d["fabric"] == "fe_" else r.backend.radix
                ports = sum(d.get("links", 1) for _, _, d in r.graph.edges(v, data=True))
                assert ports <= radix, (rack, n, v)


def test_aggregated_graph_counts_equal_detailed(cat, shipped):
    cases = [(cat, "fx_air", 8, None, LAYOUT), (cat, "fx_rail", 4, None, LAYOUT),
             (cat, "fx_air", 40, None, LAYOUT), (shipped, "gb200_nvl72", 24, "cpo", None),
             (shipped, "hgx_b300", 20, "lpo_800g", None)]
    for catalog, rack, n, optic, layout in cases:
        a = network(catalog, rack, n, optics=optic, layout=layout, detail=False,
                    keep_graph=False).summary()
        b = network(catalog, rack, n, optics=optic, layout=layout, detail=True).summary()
        assert a.keys() == b.keys()
        for key in a:
            if isinstance(a[key], float):
                assert a[key] == pytest.approx(b[key]), (rack, n, key)
            else:
                assert a[key] == b[key], (rack, n, key)


def test_nic_end_optic_matches_nic_speed():
    """LPO on the switch ends must not put 800G modules on 400G NIC ports."""
    from dcplan.catalog import load_catalog
    from dcplan.facility.network import network

    cat = load_catalog()
    pl = network(cat, "gb200_nvl72", 64, optics="pluggable_800g", keep_graph=False)
    lpo = network(cat, "gb200_nvl72", 64, optics="lpo_800g", keep_graph=False)
    nic_ends = {k: v for k, v in lpo.transceivers_by_end.items() if "NIC" in k}
    for counts in nic_ends.values():
        for oid in counts:
            assert cat.get("optics", oid).gbps == lpo.link_gbps
    # same NIC-end modules as with pluggables; only the switch ends change
    assert {k: v for k, v in pl.transceivers_by_end.items() if "NIC" in k} == nic_ends
    assert lpo.transceivers["lpo_800g"] == pl.transceivers["pluggable_800g"]


def test_1600g_modules_are_per_switch_twin_port_count():
    """A 1.6T module carries four 400G links: per switch ceil(links / 4)."""
    import math

    from dcplan.catalog import load_catalog
    from dcplan.facility.network import network

    cat = load_catalog()
    r = network(cat, "gb200_nvl72", 64, optics="pluggable_1600g")
    g = r.graph
    per_switch = {}
    for u, v, d in g.edges(data=True):
        if d.get("medium") == "optical":
            for end in (u, v):
                if g.nodes[end]["kind"] == "switch":
                    per_switch[end] = per_switch.get(end, 0) + d["gbps"] * d.get("links", 1)
    expected = sum(math.ceil(gb / 1600 - 1e-9) for gb in per_switch.values())
    assert r.transceivers["pluggable_1600g"] == expected
    switch_ends = sum(c for k, v in r.transceivers_by_end.items() if "switch" in k
                      for c in v.values())
    assert switch_ends == expected


def test_switch_slower_than_nic_is_a_clear_error():
    from dcplan.catalog import load_catalog
    from dcplan.errors import InputError
    from dcplan.facility.network import network

    with pytest.raises(InputError, match="1 Gb/s ports, below the 400 Gb/s"):
        network(load_catalog(), "gb200_nvl72", 64, switch_id="nvidia_sn2201", keep_graph=False)
