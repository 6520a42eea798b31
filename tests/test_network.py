"""Network fabric: hand-counted fat trees, connectivity, bisection, optics, GraphML."""

from __future__ import annotations

import math
from pathlib import Path

import networkx as nx
import pytest

from dcplan.catalog import load_catalog
from dcplan.errors import InputError
from dcplan.facility.network import Layout, leaf_ports, network, write_graphml
from dcplan.schema import OpticKind

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
    # Pods of 16/2 = 8 leaves (8 spine ports down): 3 pods of 8, 8 and 4 leaves with 8
    # uplinks each. Pod spines = uplinks / 8 down ports: 64/8 = 8, 8, and 32/8 = 4 for
    # the part-filled pod (4 divides a leaf's 8 uplinks: 2 links to each spine) = 20
    # spines; spine uplinks = leaf links = 160 -> 160/16 = 10 core switches.
    r = network(cat, "fx_air", 40, layout=LAYOUT)
    assert (r.backend.leaf, r.backend.spine, r.backend.core) == (20, 20, 10)
    assert r.links["leaf_spine"] == 160
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
    # leaf = 12 down + 4 up: 3 leaves (12, 12, 8 endpoints); uplinks sized to the used
    # downlinks at 3:1: 4 + 4 + ceil(8/3) = 11; worst-case bisection limited by half
    # the uplinks: 11 * 400 / 2 = 2200 Gb/s < 6400.
    r = network(cat, "fx_air", 8, layout=LAYOUT, oversubscription=3.0)
    assert (r.backend.leaf, r.backend.spine) == (3, 1)
    assert r.links["leaf_spine"] == 11
    assert r.bisection_gbps == pytest.approx(2200.0)
    flow, full = _max_flow_between_halves(r.graph, 400.0)
    assert flow < full


def test_cpo_lowers_optics_power_by_catalog_factor(cat):
    # switch ends: pluggable 8 W vs CPO 2 W per 400G port; links unchanged. With
    # pluggables the 32 NIC links are copper (in reach of their leaf) and the 32
    # leaf-spine links optical (64 switch-end modules, 0.512 kW). A co-packaged switch
    # has no electrical cages: all 64 links are optical, 96 CPO ports (64 + 32) and 32
    # pluggables at the NIC ends: (96 x 2 + 32 x 8) W = 0.448 kW.
    plug = network(cat, "fx_air", 8, layout=LAYOUT, optics="fx_pluggable_400")
    cpo = network(cat, "fx_air", 8, layout=LAYOUT, optics="fx_cpo")
    assert cpo.links == plug.links and cpo.total_links == plug.total_links
    assert plug.copper_links == 32 and plug.transceivers == {"fx_pluggable_400": 64}
    assert plug.optics_kw == pytest.approx(64 * 8 / 1000)
    assert cpo.copper_links == 0 and cpo.cpo_ports == 96
    assert cpo.transceivers == {"fx_pluggable_400": 32}
    assert cpo.optics_kw == pytest.approx((96 * 2 + 32 * 8) / 1000)
    # a CPO switch model has co-packaged ends even with pluggable optics chosen
    sw = network(cat, "fx_air", 8, layout=LAYOUT, switch_id="fx_sw16_cpo")
    assert sw.cpo_ports == 96 and sw.optics_kw == pytest.approx(cpo.optics_kw)


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


def test_superpod_b200_matches_the_published_design(shipped):
    # NVIDIA DGX SuperPOD RA B200, component counts (docs/facility.md): QM9700 (64 x
    # 400G NDR, 32 down + 32 up), 8 rails, 32 DGX per SU = 8 racks of 4.
    # SU  racks  leaf  spine  core  node-leaf  leaf-spine  spine-core
    published = {
        2: (16, 16, 8, 0, 512, 512, 0),
        4: (32, 32, 16, 0, 1024, 1024, 0),
        8: (64, 64, 32, 0, 2048, 2048, 0),
        16: (128, 128, 128, 64, 4096, 4096, 4096),
    }
    for su, (racks, leaf, spine, core, nl, ls, sc) in published.items():
        r = network(shipped, "hgx_b200", racks, switch_id="nvidia_qm9700", keep_graph=False)
        assert r.accelerators == 256 * su
        assert (r.backend.leaf, r.backend.spine, r.backend.core) == (leaf, spine, core), su
        assert (r.links["nic_leaf"], r.links["leaf_spine"],
                r.links.get("spine_core", 0)) == (nl, ls, sc), su


def test_superpod_b300_xdr_matches_the_published_design(shipped):
    # NVIDIA DGX SuperPOD RA B300 XDR (Quantum-X800 Q3400, 144 x 800G: 72 down + 72 up),
    # 72 DGX B300 per SU = 18 racks of 4. 4 and 8 SUs: 16 and 32 spines would hold the
    # uplinks, the design buys 18 and 36 (72 uplinks per leaf = 4 and 2 links to each
    # spine): the balanced-striping rule reproduces it.
    published = {1: (18, 8, 4, 576), 2: (36, 16, 8, 1152), 4: (72, 32, 18, 2304),
                 8: (144, 64, 36, 4608), 18: (324, 144, 72, 10368)}
    for su, (racks, leaf, spine, cables) in published.items():
        r = network(shipped, "hgx_b300", racks, switch_id="nvidia_q3400", keep_graph=False)
        assert (r.backend.leaf, r.backend.spine, r.backend.core) == (leaf, spine, 0), su
        assert r.links["nic_leaf"] == r.links["leaf_spine"] == cables, su


def test_superpod_b300_spectrum_x_matches_per_plane(shipped):
    # NVIDIA DGX SuperPOD RA B300 (Spectrum-X, twin-plane: each GPU 2 x 400GbE, one per
    # plane), 64 DGX per SU = 16 racks. dcplan has no multi-plane fabric: one plane is
    # a 400G-per-GPU fabric on SN5610 (128 x 400G at 100G lanes, 64 down); two planes
    # double it. Published per SU count: 16 leaf, 8 spine; cables are twin-port (two
    # 400G links each): 512 node-leaf and 512 leaf-spine per SU.
    plane = shipped.replace("racks", "hgx_b300", nic="connectx7_400g",
                            scaleout_gbps_per_accelerator=400)
    published = {1: (16, 8, 512), 2: (32, 16, 1024), 4: (64, 32, 2048),
                 8: (128, 64, 4096), 16: (256, 128, 8192)}
    for su, (leaf, spine, cables) in published.items():
        r = network(plane, "hgx_b300", 16 * su, switch_id="nvidia_sn5610", keep_graph=False)
        assert (2 * r.backend.leaf, 2 * r.backend.spine, r.backend.core) == (leaf, spine, 0)
        # two planes of links, two 400G links per twin-port cable
        assert 2 * r.links["nic_leaf"] / 2 == cables == 2 * r.links["leaf_spine"] / 2


def test_gb200_scalable_unit_counts(shipped):
    # GB200 SU: 8 NVL72 racks = 576 GPUs, one 400G ConnectX-7 (4 x 100G lanes) per GPU,
    # 4 rails. On Quantum-X800 a 4-lane 400G link takes a whole 800G port (4 x 200G
    # lanes run at 100G): radix 144 at 400G, 72 down: per rail 144 NICs = 2 leaves -> 8
    # leaves, 576 uplinks / 144 = 4 spines. On QM9700 (the NDR switch of the GB200 RA):
    # 32 down, per rail ceil(144/32) = 5 leaves (4 full + 1 of 16) = 20 leaves, 576
    # uplinks / 64 = 9 spines (16, a divisor of 32, would cost 78 % more).
    su = network(shipped, "gb200_nvl72", 8, switch_id="nvidia_q3400", keep_graph=False)
    assert su.accelerators == 576 and su.backend.radix == 144
    assert (su.backend.leaf, su.backend.spine, su.backend.core) == (8, 4, 0)
    ndr = network(shipped, "gb200_nvl72", 8, switch_id="nvidia_qm9700", keep_graph=False)
    assert (ndr.backend.leaf, ndr.backend.spine) == (20, 9)
    assert ndr.links["leaf_spine"] == ndr.links["nic_leaf"] == 576


def test_part_filled_leaves_buy_only_the_uplinks_they_use(shipped):
    # 8 x hgx_b300 = 256 GPUs at 800G, 8 rails of 32 NICs: 8 leaves with 32 of 72 down
    # ports used -> 32 uplinks each = 256 leaf-spine links (not 8 x 72 = 576), 2 spines.
    r = network(shipped, "hgx_b300", 8, keep_graph=False)
    assert r.links["nic_leaf"] == 256
    assert r.links["leaf_spine"] == 256 <= r.links["nic_leaf"]
    assert (r.backend.leaf, r.backend.spine) == (8, 2)


def test_shipped_optics_comparison(shipped):
    res = {o: network(shipped, "gb200_nvl72", 16, optics=o, keep_graph=False)
           for o in ("pluggable_800g", "lpo_800g", "cpo")}
    links = {o: r.total_links for o, r in res.items()}
    assert len(set(links.values())) == 1
    assert res["lpo_800g"].optics_kw < res["pluggable_800g"].optics_kw
    assert res["cpo"].optics_kw < res["pluggable_800g"].optics_kw
    # a co-packaged port per switch port its optical links use, and no copper at a
    # co-packaged switch. Back end (Quantum-X800 Q3400): a 400G link takes a whole 4-lane
    # port, at both ends of a leaf-spine link; front end (7060X6, 800G ports of 8 lanes)
    # four 200G links (GB200's BlueField-3 ports, 2 lanes each) share a port
    cpo, n = res["cpo"], res["cpo"].links
    assert cpo.copper_links == 0
    assert n["fe_nic_leaf"] == 16 * 36  # 7,200 Gb/s of 200G ports per rack
    assert cpo.cpo_ports == (2 * n["leaf_spine"] + n["nic_leaf"]
                             + (n["fe_nic_leaf"] + 2 * n["fe_leaf_spine"]) // 4)
    assert cpo.cpo_ports == 3696  # 2 x 1,152 + 1,152 + (576 + 2 x 192) / 4


@pytest.mark.slow
def test_no_switch_exceeds_its_ports(cat, shipped):
    cases = [(cat, "fx_air", 8, None), (cat, "fx_air", 40, None), (cat, "fx_rail", 4, None),
             (shipped, "gb200_nvl72", 128, "nvidia_q3400"),
             (shipped, "hgx_b200", 32, "nvidia_qm9700"),
             (shipped, "gb200_nvl72", 8, "nvidia_qm9700")]
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


def test_nic_end_optic_matches_nic_speed_and_fibre():
    """Single-mode DR8 (or LPO) at the switch: single-mode DR4 at the NIC, never a
    multimode SR4; 400G at the back-end ConnectX-7 ports, 200G at the front-end
    BlueField-3 ports."""
    from dcplan.catalog import load_catalog
    from dcplan.facility.network import network

    cat = load_catalog()
    pl = network(cat, "gb200_nvl72", 64, optics="pluggable_800g", keep_graph=False)
    lpo = network(cat, "gb200_nvl72", 64, optics="lpo_800g", keep_graph=False)
    for r in (pl, lpo):
        assert set(r.transceivers_by_end["back-end NIC ends"]) == {"pluggable_400g"}
        assert set(r.transceivers_by_end["front-end NIC ends"]) == {"pluggable_200g_dr"}
        speed = {"back-end NIC ends": r.link_gbps, "front-end NIC ends": r.frontend_link_gbps}
        assert speed["front-end NIC ends"] == 200
        for end, link_gbps in speed.items():
            for oid in r.transceivers_by_end[end]:
                assert cat.get("optics", oid).gbps == link_gbps
                assert cat.get("optics", oid).fibre == "single_mode"
    # same NIC-end modules as with pluggables; only the switch ends change
    assert ({k: v for k, v in pl.transceivers_by_end.items() if "NIC" in k}
            == {k: v for k, v in lpo.transceivers_by_end.items() if "NIC" in k})
    assert lpo.transceivers["lpo_800g"] == pl.transceivers["pluggable_800g"]


def test_1600g_modules_on_800g_ports_one_per_cage():
    """GB300 (800G XDR NICs, 200G lanes): one 1.6T twin-port module per cage (2 x 800G
    links), counted per switch as ceil(optical links / 2); 800G DR4 at the NICs."""
    import math

    from dcplan.catalog import load_catalog
    from dcplan.facility.network import network

    cat = load_catalog()
    r = network(cat, "gb300_nvl72", 16)
    assert r.lane_gbps == 200 and r.link_gbps == 800
    g = r.graph
    per_switch = {}
    for u, v, d in g.edges(data=True):
        if d.get("medium") == "optical" and not d["tier"].startswith("fe_"):
            for end in (u, v):
                if g.nodes[end]["kind"] == "switch":
                    per_switch[end] = per_switch.get(end, 0) + d.get("links", 1)
    expected = sum(math.ceil(k / 2) for k in per_switch.values())
    assert r.transceivers_by_end["back-end switch ends"] == {"pluggable_1600g": expected}
    assert r.transceivers_by_end["back-end NIC ends"] == {
        "pluggable_800g_dr4": r.links["nic_leaf"] - sum(
            d.get("links", 1) for _, _, d in g.edges(data=True)
            if d["tier"] == "nic_leaf" and d.get("medium") != "optical")}
    # asking for 800G DR8 modules there: same kind and fibre at the cage's rate, noted
    dr8 = network(cat, "gb300_nvl72", 16, optics="pluggable_800g", keep_graph=False)
    assert dr8.transceivers_by_end["back-end switch ends"] == {"pluggable_1600g": expected}
    assert any("pluggable_800g" in n for n in dr8.notes)


def test_switch_slower_than_nic_is_a_clear_error():
    from dcplan.catalog import load_catalog
    from dcplan.errors import InputError
    from dcplan.facility.network import network

    with pytest.raises(InputError, match="1 Gb/s ports, below the 400 Gb/s"):
        network(load_catalog(), "gb200_nvl72", 64, switch_id="nvidia_sn2201", keep_graph=False)


# --- both ends of every link are modules that can link --------------------------------

WALK = [("gb200_nvl72", 8, None), ("gb200_nvl72", 8, "pluggable_800g"),
        ("gb200_nvl72", 8, "lpo_800g"), ("gb200_nvl72", 8, "cpo"),
        ("gb200_nvl72", 8, "pluggable_800g_sr8"), ("gb300_nvl72", 8, None),
        ("hgx_b300", 8, None), ("hgx_b300", 20, "pluggable_1600g"),
        ("vera_rubin_nvl72", 4, None), ("hgx_h100", 6, None), ("mi355x_rack", 4, None)]


@pytest.mark.parametrize("rack,n,optic", WALK)
def test_every_link_class_has_compatible_ends(shipped, rack, n, optic):
    """Walk the graph: per link, both ends' modules have the same fibre and lane rate,
    both reach the link, a switch-end module fills one cage, a NIC-end module one port."""
    from dcplan.facility.network import OPTICAL_KINDS, fabric_setups

    r = network(shipped, rack, n, optics=optic)
    _, _, be, fe = fabric_setups(shipped, rack)
    layout = Layout()
    g = r.graph
    seen = 0
    for u, v, d in g.edges(data=True):
        if d["tier"] == "internal":
            continue
        setup = fe if d["tier"].startswith("fe_") else be
        lane = setup.att.lane_gbps
        length = d["length_m"] if math.isfinite(d["length_m"]) else layout.leaf_to_spine_m
        ends = d["ends"]
        assert set(ends) == {u, v}
        mods = {node: shipped.get("optics", oid) for node, oid in ends.items()}
        for node, m in mods.items():
            assert m.reach_m >= length - 1e-9, (d["tier"], m.id, length)
            if m.kind is not OpticKind.cpo:
                assert m.lane_gbps == lane, (d["tier"], m.id, lane)
            if d["medium"] != "optical":
                continue
            assert m.kind in OPTICAL_KINDS
            if g.nodes[node]["kind"] == "switch":
                if m.kind is not OpticKind.cpo:
                    assert m.gbps == setup.att.cage_gbps, (m.id, setup.att.cage_gbps)
            else:
                assert m.gbps == setup.att.nic_port_gbps, (m.id, setup.att.nic_port_gbps)
        a, b = mods.values()
        assert a.fibre == b.fibre, (d["tier"], a.id, b.id)
        if d["medium"] == "optical" and optic == "pluggable_800g":
            assert a.fibre == "single_mode"  # no multimode end against a DR8 switch end
        seen += 1
    assert seen == g.number_of_edges() - sum(
        1 for *_, d in g.edges(data=True) if d["tier"] == "internal")


def test_copper_reach_is_shorter_at_200g_lanes(shipped):
    # Leaves inside the compute racks (racks declaring free switch space): in-rack
    # links are 2.0 m, to the neighbour 2.6 m. At 100G lanes (hgx_b200) the 3 m DAC
    # covers both; at 200G lanes (hgx_b300) the DAC reaches 1 m: in-rack links take
    # the 2.5 m active copper cable and neighbour links go optical.
    slow = shipped.replace("racks", "hgx_b200", free_switch_rack_units=8)
    fast = shipped.replace("racks", "hgx_b300", free_switch_rack_units=8)
    b200 = network(slow, "hgx_b200", 2, switch_id="nvidia_qm9700")
    b300 = network(fast, "hgx_b300", 2)
    cu200 = {c["switch_end"] for c in b200.link_classes if c["medium"] == "copper"
             and c["tier"] == "nic_leaf"}
    cu300 = {c["switch_end"] for c in b300.link_classes if c["medium"] == "copper"
             and c["tier"] == "nic_leaf"}
    assert cu200 == {"dac_800g"} and cu300 == {"acc_1600g"}
    assert shipped.get("optics", "dac_1600g").reach_m < shipped.get("optics", "dac_800g").reach_m
    lens = {c["medium"]: c["max_length_m"] for c in b300.link_classes if c["tier"] == "nic_leaf"}
    assert lens["copper"] <= 2.5 < lens["optical"]


def test_leaves_stand_at_the_row_end_without_free_rack_space(cat):
    # fx_air without free switch space: the 4 leaves stand in a network rack after the
    # last of the 8 compute racks. Only rack 7 is one position away (2.6 m <= 3 m DAC):
    # its 4 links are copper, the other 28 optical. Network racks: 4 leaves at the row
    # end + 2 spines centrally, 1 U each -> 1 + 1 positions.
    eor = cat.replace("racks", "fx_air", free_switch_rack_units=0)
    r = network(eor, "fx_air", 8, layout=LAYOUT)
    assert (r.backend.leaf, r.backend.spine) == (4, 2)
    assert r.copper_links == 4
    assert r.optical_links == 28 + 32
    assert r.network_rack_positions == 2
    tor = network(cat, "fx_air", 8, layout=LAYOUT)
    assert tor.network_rack_positions == 1  # only the spines' rack


def test_impossible_sizes_are_refused_with_the_largest_that_fits(shipped):
    # Q3400 at 400G: radix 144, 72 down; three tiers hold 144 pods x 72 leaves = 10,368
    # leaves = 746,496 ports. An NVL72 rack has 4 rails x 18 NICs: 4 x ceil(18 n / 72)
    # leaves, so 10,368 racks fill the fabric exactly and 10,369 do not fit.
    from dcplan.facility.network import fabric_setups, leaf_count

    _, _, be, _ = fabric_setups(shipped, "gb200_nvl72")
    assert leaf_count(be, 10_368) == 10_368
    for n in (1_000_000, 10_369):
        with pytest.raises(InputError, match="use at most 10,368 racks"):
            network(shipped, "gb200_nvl72", n, keep_graph=False)


def test_part_filled_last_leaves_share_a_spine_without_extra_uplinks(shipped):
    # 130 x hgx_h100 (4,160 NICs at 400G, 8 rails of 520): per rail 7 full leaves of 72
    # and one of 16; 4,160 uplinks / 144 = 29 spines, balanced to 36 (a divisor of 72
    # within 25 %). The 16-uplink leaves cannot reach all 36 spines: each has one link
    # to spine 0 and 15 to the least-loaded others, so any two leaves share a spine
    # and leaf-spine links stay equal to the NIC links.
    r = network(shipped, "hgx_h100", 130)
    assert (r.backend.leaf, r.backend.spine) == (64, 36)
    assert r.links["leaf_spine"] == r.links["nic_leaf"] == 4160
    g = r.graph
    spines_of = {}
    for u, v, d in g.edges(data=True):
        if d["tier"] == "leaf_spine":
            leaf, spine = (u, v) if g.nodes[u]["tier"] == "leaf" else (v, u)
            spines_of.setdefault(leaf, set()).add(spine)
    leaves = sorted(spines_of)
    assert all(spines_of[a] & spines_of[b] for a in leaves for b in leaves)
    load = {}
    for u, v, d in g.edges(data=True):
        if d["tier"] == "leaf_spine":
            spine = u if g.nodes[u]["tier"] == "spine" else v
            load[spine] = load.get(spine, 0) + d["links"]
    assert max(load.values()) <= r.backend.radix


def test_a_fibre_fallback_is_one_note_per_lane_rate(shipped):
    """SR8 (multimode) at 200G-lane XDR cages: no multimode module fits, so every link
    length falls back to single mode; one note per lane rate says so, with the span of
    lengths, instead of one note per length."""
    r = network(shipped, "hgx_b300", 64, optics="pluggable_800g_sr8")
    fall = [n for n in r.notes if n.startswith("no multimode modules reach")]
    lanes = [n.split(" at ")[1].split("G lanes")[0] for n in fall]
    assert len(fall) == len(set(lanes)) >= 1, r.notes
    assert all("single-mode fibre used there" in n for n in fall)
    assert any("lengths)" in n for n in fall)


def test_twin_port_module_carries_four_200g_front_end_links():
    """8 GB200 racks: 8 x 36 front-end ports of 200G (BlueField-3). 252 of them are
    optical (the rest copper to the neighbouring network rack); one twin-port 800G SR8
    at the switch takes four 200G links (1:2 splitter fibres), so 252 / 4 = 63 modules,
    where the back end's 504 optical 400G links need 504 / 2 = 252."""
    from dcplan.catalog import load_catalog
    from dcplan.facility.network import network

    r = network(load_catalog(), "gb200_nvl72", 8, keep_graph=False)
    assert r.links["fe_nic_leaf"] == 8 * 36
    by_end = r.transceivers_by_end
    assert by_end["front-end NIC ends"] == {"pluggable_200g_sr": 252}
    assert by_end["front-end switch ends"]["pluggable_800g_sr8"] == 63
    assert by_end["back-end NIC ends"] == {"pluggable_400g_sr4": 504}
    assert by_end["back-end switch ends"]["pluggable_800g_sr8"] == 252


@pytest.mark.slow
def test_a_frontend_port_speed_no_switch_carries_names_the_rack_entry(tmp_path):
    """A rack entry's frontend_port_gbps that no catalog switch carries is reported on
    that entry and field of racks.yaml, with the fix (not as a generic network error)."""
    from dcplan.catalog import load_catalog
    from dcplan.errors import InputError
    from dcplan.facility.network import fabric_setups

    text = load_catalog().files["racks"].read_text()
    assert "frontend_port_gbps: 200" in text
    path = tmp_path / "racks.yaml"
    path.write_text(text.replace("frontend_port_gbps: 200", "frontend_port_gbps: 1000", 1))
    catalog = load_catalog(extra_files={"racks": path})
    with pytest.raises(InputError) as err:
        fabric_setups(catalog, "gb200_nvl72")
    (problem,) = err.value.problems
    assert (problem.entry, problem.field) == ("gb200_nvl72", "frontend_port_gbps")
    assert problem.file.endswith("racks.yaml") and problem.line
    assert "1000 Gb/s" in problem.message and "set frontend_port_gbps" in problem.message


@pytest.mark.slow
def test_a_plan_with_such_a_rack_stops_on_the_rack_entry(tmp_path):
    """The same bad entry in a plan's catalogs stops the plan with that error and exit 1
    (it used to make every site 'unable to host' the rack type, and the plan then
    reported unmet demand)."""
    import shutil

    from typer.testing import CliRunner

    from dcplan.catalog import load_catalog
    from dcplan.cli import app

    src = load_catalog().files["racks"].parent
    cat = tmp_path / "catalogs"
    shutil.copytree(src, cat)
    racks = cat / "racks.yaml"
    racks.write_text(racks.read_text().replace("frontend_port_gbps: 200",
                                               "frontend_port_gbps: 1000", 1))
    repo = Path(__file__).resolve().parents[1]
    res = CliRunner().invoke(app, ["--catalog-dir", str(cat), "plan",
                                   str(repo / "examples" / "minimal.yaml")])
    assert res.exit_code == 1
    out = res.stdout + (res.stderr or "")
    assert "entry 'gb200_nvl72', field 'frontend_port_gbps'" in out
    assert "demand cannot be met" not in out and "Traceback" not in out
