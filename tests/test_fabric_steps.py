"""Fabric counts as step functions of the racks equal the graph-built counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcplan.catalog import load_catalog
from dcplan.facility.network import network
from dcplan.facility.steps import breakpoints, fabric_steps

FX = Path(__file__).parent / "fixtures" / "facility"


@pytest.fixture(scope="module")
def shipped():
    return load_catalog()


@pytest.mark.parametrize("rack,n_max,kw", [
    ("gb200_nvl72", 40, {}), ("hgx_b300", 40, {}), ("vera_rubin_nvl72", 24, {}),
    ("hgx_b200", 36, {"switch_id": "nvidia_qm9700"}),
    ("hgx_h100", 20, {"oversubscription": 3.0}),
])
@pytest.mark.slow
def test_steps_equal_the_graph_for_every_rack_count(shipped, rack, n_max, kw):
    steps = fabric_steps(shipped, rack, **kw)
    for n in range(1, n_max + 1):
        net = network(shipped, rack, n, keep_graph=False, **kw)
        for fabric, tiers, prefix in (("backend", net.backend, ""),
                                      ("frontend", net.frontend, "fe_")):
            if fabric not in steps:
                continue
            c = steps[fabric].counts(n)
            assert (c["leaf"], c["spine"], c["core"]) == (tiers.leaf, tiers.spine,
                                                          tiers.core), (fabric, n)
            for tier in ("nic_leaf", "leaf_spine", "spine_core"):
                assert c[tier] == net.links.get(prefix + tier, 0), (fabric, n, tier)
            assert steps[fabric].leaves(n) == tiers.leaf


def test_three_tier_fixture_and_hand_figures():
    cat = load_catalog(FX / "catalog")
    s = fabric_steps(cat, "fx_air")["backend"]
    # 16-port switch, 4 NICs per rack, non-blocking: 8 down / 8 up
    assert (s.radix, s.leaf_down, s.leaf_up, s.endpoints_per_rack) == (16, 8, 8, 4)
    assert s.counts(40) == dict(leaf=20, spine=20, core=10, nic_leaf=160, leaf_spine=160,
                                spine_core=160)
    assert s.counts(4) == dict(leaf=1, spine=0, core=0, nic_leaf=16, leaf_spine=0,
                               spine_core=0)
    # 5 racks = 20 endpoints > 16: 3 leaves (8, 8, 4) with 8 + 8 + 4 uplinks, 20/16 -> 2
    assert s.counts(5)["leaf"] == 3 and s.counts(5)["spine"] == 2
    assert "ceil(4 n / 8)" in s.formula()
    # the leaf count steps every 2 racks once above one switch
    assert breakpoints(s, 8) == [1, 5, 7]


def test_rail_figures_of_an_nvl72(shipped):
    s = fabric_steps(shipped, "gb200_nvl72")["backend"]
    assert s.endpoints_per_rail == (18, 18, 18, 18) and s.leaf_down == 72
    assert s.leaves(8) == 8 and s.leaves(9) == 12  # ceil(18 * 9 / 72) = 3 per rail
