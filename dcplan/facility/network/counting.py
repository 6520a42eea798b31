"""Counting: switches, links, optics, power and capex of the network graph.

:class:`NetworkResult` and :func:`_count`, which walks the graph's links (and a lean
graph's sums), chooses each link class's medium and modules
(:mod:`~dcplan.facility.network.parts`) and counts the bill of materials.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from dcplan.facility.network.parts import (
    FabricSetup,
    FibreFallback,
    OpticFamily,
    _copper_for,
    _End,
    _pick_pair,
)
from dcplan.facility.network.topology import FabricTiers, Layout
from dcplan.schema import OpticKind


@dataclass
class NetworkResult:
    """Bill of materials, power and capex of the back-end and front-end fabrics.

    Attributes
    ----------
    rack_id : str
    n_racks : int
    accelerators : int
    switch_id, frontend_switch_id : str
    optic_id : str
        Module on the back-end leaves' NIC-facing ends (``cpo`` when co-packaged).
    link_gbps, frontend_link_gbps : float
        Logical link speed [Gb/s].
    backend, frontend : FabricTiers
    nic_ports : int
        Back-end NIC-side link ends (endpoints).
    links : dict
        Link tier (``nic_leaf``, ``leaf_spine``, ``spine_core``, ``fe_...``) -> count.
    copper_links, optical_links : int
    transceivers : dict
        Optic id -> pluggable modules (both fabrics, both ends).
    cpo_ports : int
        Co-packaged optical ports on switches.
    switch_kw, optics_kw, nic_kw : float
        Power of switches (without pluggables), of transceivers/CPO engines/active
        copper, and of the NICs (informational: inside rack IT power) [kW].
    switch_capex_usd, optics_capex_usd, copper_capex_usd, nic_capex_usd : float
        Capex [USD]; NIC capex is informational (inside the rack price).
    bisection_gbps, full_bisection_gbps : float
        Back-end bisection bandwidth and its full (non-blocking) value [Gb/s].
    graph : networkx.MultiGraph or None
    cpo_optic_id : str
        Optics entry priced for the co-packaged ports ('' when there are none).
    copper_kw : float
        Power of the active copper cables (part of ``optics_kw``) [kW].
    transceivers_by_end : dict
        Where the transceivers (and co-packaged ports) are: ``back-end switch ends``,
        ``front-end switch ends``, ``back-end NIC ends``, ``front-end NIC ends`` ->
        {optic id -> count}; the counts add up to ``transceivers`` and ``cpo_ports``.
    lane_gbps, frontend_lane_gbps : float
        Lane rate of the links [Gb/s] (0 where lanes are not modelled).
    link_classes : list of dict
        One row per (tier, medium, end modules): links, longest link [m], the module
        (or cable) at each end.
    network_rack_positions : int
        Network racks holding the switches that are not inside compute racks
        [rack positions].
    switch_rack_units : int
        Rack units of all switches [U].
    notes : list of str
        Substitutions and other things a network engineer should know.
    """

    rack_id: str
    n_racks: int
    accelerators: int
    switch_id: str
    frontend_switch_id: str
    optic_id: str
    link_gbps: float
    frontend_link_gbps: float
    backend: FabricTiers
    frontend: FabricTiers
    nic_ports: int
    links: dict[str, int]
    copper_links: int
    optical_links: int
    transceivers: dict[str, int]
    cpo_ports: int
    switch_kw: float
    optics_kw: float
    nic_kw: float
    switch_capex_usd: float
    optics_capex_usd: float
    copper_capex_usd: float
    nic_capex_usd: float
    bisection_gbps: float
    full_bisection_gbps: float
    graph: Any = None
    cpo_optic_id: str = ""
    copper_kw: float = 0.0
    transceivers_by_end: dict[str, dict[str, int]] = field(default_factory=dict)
    lane_gbps: float = 0.0
    frontend_lane_gbps: float = 0.0
    link_classes: list[dict[str, Any]] = field(default_factory=list)
    network_rack_positions: int = 0
    switch_rack_units: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def network_kw(self) -> float:
        """Network power outside the racks: switches + optics [kW]."""
        return self.switch_kw + self.optics_kw

    @property
    def network_capex_usd(self) -> float:
        """Network capex outside the rack price: switches, optics, copper cables [USD]."""
        return self.switch_capex_usd + self.optics_capex_usd + self.copper_capex_usd

    @property
    def total_links(self) -> int:
        """All links of both fabrics."""
        return sum(self.links.values())

    def summary(self) -> dict[str, Any]:
        """Plain-dict summary (for JSON and tables)."""
        return {
            "rack_id": self.rack_id,
            "n_racks": self.n_racks,
            "accelerators": self.accelerators,
            "switch_id": self.switch_id,
            "frontend_switch_id": self.frontend_switch_id,
            "optic_id": self.optic_id,
            "link_gbps": self.link_gbps,
            "lane_gbps": self.lane_gbps,
            "backend_tiers": self.backend.tiers,
            "backend_switches": {"leaf": self.backend.leaf, "spine": self.backend.spine,
                                 "core": self.backend.core},
            "frontend_switches": {"leaf": self.frontend.leaf, "spine": self.frontend.spine,
                                  "core": self.frontend.core},
            "leaf_ports": {"down": self.backend.down_ports, "up": self.backend.up_ports,
                           "radix": self.backend.radix},
            "nic_ports": self.nic_ports,
            "links": dict(self.links),
            "copper_links": self.copper_links,
            "optical_links": self.optical_links,
            "link_classes": [dict(c) for c in self.link_classes],
            "transceivers": dict(self.transceivers),
            "transceivers_by_end": {k: dict(v) for k, v in self.transceivers_by_end.items()},
            "cpo_ports": self.cpo_ports,
            "network_rack_positions": self.network_rack_positions,
            "switch_rack_units": self.switch_rack_units,
            "switch_kw": self.switch_kw,
            "optics_kw": self.optics_kw,
            "nic_kw_in_rack": self.nic_kw,
            "network_kw": self.network_kw,
            "network_kw_per_rack": self.network_kw / self.n_racks,
            "switch_capex_usd": self.switch_capex_usd,
            "optics_capex_usd": self.optics_capex_usd,
            "copper_capex_usd": self.copper_capex_usd,
            "network_capex_usd": self.network_capex_usd,
            "network_capex_usd_per_rack": self.network_capex_usd / self.n_racks,
            "nic_capex_usd_in_rack": self.nic_capex_usd,
            "bisection_gbps": self.bisection_gbps,
            "full_bisection_gbps": self.full_bisection_gbps,
            "notes": list(self.notes),
        }


def _bisection(tiers: FabricTiers, endpoints: int, gbps: float, n_leaf_up_links: int,
               n_spine_up_links: int) -> float:
    """Return the bisection bandwidth of a fat tree [Gb/s].

    Half the endpoints' injection, limited by half of each tier's uplink capacity.
    """
    half = endpoints * gbps / 2.0
    if tiers.spine == 0:
        return half
    bw = min(half, n_leaf_up_links * gbps / 2.0)
    if tiers.core:
        bw = min(bw, n_spine_up_links * gbps / 2.0)
    return bw


def _count(catalog, g, rack, nic, n_racks, n_nic, be_setup: FabricSetup,
           fe_setup: FabricSetup | None, family: OpticFamily, be, fe, n_endpoints,
           layout: Layout) -> NetworkResult:
    switch, att = be_setup.switch, be_setup.att
    fe_switch = fe_setup.switch if fe_setup else None
    fe_att = fe_setup.att if fe_setup else None
    links: Counter = Counter()
    copper_links = optical_links = 0
    copper_capex = 0.0
    copper_kw = 0.0
    leaf_up = spine_up = 0
    notes: list[str] = []
    fell_back: dict[FibreFallback, list[float]] = {}
    # (switch node, module id, link speed) -> links; one module carries module Gb/s /
    # link Gb/s links (a twin-port 800G module: two 400G or four 200G links)
    at_switch: Counter = Counter()
    # switch node -> co-packaged ports its optical links take (a link takes the share of
    # a port its lanes use: a 400G link of 4 lanes a whole 4-lane Quantum-X800 port)
    cpo_ports_at: Counter = Counter()
    nic_modules: dict[tuple[str, str], float] = defaultdict(float)  # (end label, id) -> n
    classes: dict[tuple, dict] = {}
    memo: dict[tuple, tuple] = {}
    kinds = dict(g.nodes(data="kind"))
    fabric_of = dict(g.nodes(data="fabric"))
    cpo_id = family.cpo_id if family.kind is OpticKind.cpo else ""

    def setup_of(node):
        return fe_setup if fabric_of[node] == "fe_" else be_setup

    def switch_end(node) -> _End:
        st = setup_of(node)
        is_cpo = st.switch.cpo or family.kind is OpticKind.cpo
        return _End(st.switch, st.att.cage_gbps or st.switch.port_gbps, is_cpo)

    def media(tier, gbps, length, apart, sw_node, far_node):
        """(medium, module at sw end, module at far end) for one link class."""
        st = setup_of(sw_node)
        lane = st.att.lane_gbps
        far_is_switch = kinds[far_node] == "switch"
        key = (tier, gbps, length, apart, far_is_switch, fabric_of[sw_node])
        hit = memo.get(key)
        if hit is not None:
            return hit
        # a co-packaged switch has no electrical cages: its links are optical
        if apart <= layout.copper_max_rack_distance and not switch_end(sw_node).cpo:
            cu = _copper_for(catalog, gbps, lane, length)
            if cu is not None:
                memo[key] = ("copper", cu, cu)
                return memo[key]
        if math.isinf(length):
            length = layout.leaf_to_spine_m
        a = switch_end(sw_node)
        b = switch_end(far_node) if far_is_switch else _End(None, st.att.nic_port_gbps, False)
        ma, mb, note = _pick_pair(catalog, a, b, family, lane, length, gbps, not far_is_switch)
        if isinstance(note, FibreFallback):
            fell_back.setdefault(note, []).append(length)
        elif note and note not in notes:
            notes.append(note)
        memo[key] = ("optical", ma, mb)
        return memo[key]

    def add_class(tier, medium, ma, mb, k, length):
        key = (tier, medium, ma.id, mb.id)
        c = classes.get(key)
        if c is None:
            c = classes[key] = {"tier": tier, "medium": medium, "links": 0,
                                "max_length_m": 0.0, "switch_end": ma.id, "far_end": mb.id}
        c["links"] += k
        if length > c["max_length_m"]:
            c["max_length_m"] = round(length, 3)

    def switch_module(node, module, k, gbps):
        if module.kind is OpticKind.cpo:
            st = setup_of(node)
            cpo_ports_at[node] += k * st.switch.ports / st.att.radix
            return
        at_switch[(node, module.id, gbps)] += k

    def optical(u, v, tier, gbps, k, length, apart, data=None):
        nonlocal optical_links
        sw, far = (u, v) if kinds[u] == "switch" else (v, u)
        medium, ma, mb = media(tier, gbps, length, apart, sw, far)
        if medium == "copper":
            return False
        optical_links += k
        add_class(tier, "optical", ma, mb, k, length)
        switch_module(sw, ma, k, gbps)
        if kinds[far] == "switch":
            switch_module(far, mb, k, gbps)
        else:
            st = setup_of(sw)
            label = ("front-end NIC ends" if kinds[far] == "frontend_port"
                     else "back-end NIC ends")
            nic_modules[(label, mb.id)] += k / st.att.links_per_nic
        if data is not None:
            data["medium"] = "optical"
            data["ends"] = {sw: ma.id, far: mb.id}
        return True

    for (tier, gbps, length), (k, ends_a, ends_b) in (g.graph.get("lean") or {}).items():
        # switch-to-switch links run to the network row: optical, never copper
        links[tier] += k
        if tier == "leaf_spine":
            leaf_up += k
        elif tier == "spine_core":
            spine_up += k
        _, ma, mb = media(tier, gbps, length, math.inf, next(iter(ends_a)),
                          next(iter(ends_b)))
        optical_links += k
        add_class(tier, "optical", ma, mb, k, length)
        for node, n in ends_a.items():
            switch_module(node, ma, n, gbps)
        for node, n in ends_b.items():
            switch_module(node, mb, n, gbps)
    for u, v, data in g.edges(data=True):
        tier = data["tier"]
        if tier == "internal":
            continue
        k = data.get("links", 1)  # parallel links are one edge with a multiplicity
        links[tier] += k
        if tier == "leaf_spine":
            leaf_up += k
        elif tier == "spine_core":
            spine_up += k
        gbps = data["gbps"]
        apart = data.get("apart", math.inf)
        if optical(u, v, tier, gbps, k, data["length_m"], apart, data):
            continue
        sw = u if kinds[u] == "switch" else v
        _, cu, _ = media(tier, gbps, data["length_m"], apart, sw, v if sw == u else u)
        data["medium"] = cu.id
        data["ends"] = {u: cu.id, v: cu.id}
        copper_links += k
        add_class(tier, "copper", cu, cu, k, data["length_m"])
        share = gbps / cu.gbps  # breakout share of one cable
        copper_capex += 2 * cu.capex_usd * share * k
        copper_kw += 2 * cu.power_w * share * k / 1000.0

    by_end: dict[str, Counter] = defaultdict(Counter)
    transceivers: Counter = Counter()
    for (label, oid), n in nic_modules.items():
        count = int(math.ceil(n - 1e-9))
        transceivers[oid] += count
        by_end[label][oid] += count
    for (sw, oid, gbps), k in at_switch.items():
        # a module fills one cage and cannot span two switches: per switch and module
        per_module = max(1, int(round(catalog.get("optics", oid).gbps / gbps)))
        n_mod = int(math.ceil(k / per_module - 1e-9))
        transceivers[oid] += n_mod
        label = "front-end switch ends" if fabric_of[sw] == "fe_" else "back-end switch ends"
        by_end[label][oid] += n_mod
    cpo_ports = 0
    optics_kw = copper_kw
    optics_capex = 0.0
    if cpo_ports_at:
        cpo = catalog.get("optics", cpo_id or family.cpo_id)
        cpo_id = cpo.id
        for sw, used in cpo_ports_at.items():
            ports = int(math.ceil(used - 1e-9))
            cpo_ports += ports
            label = "front-end switch ends" if fabric_of[sw] == "fe_" else \
                "back-end switch ends"
            by_end[label][f"{cpo.id} (co-packaged ports)"] += ports
        optics_kw += cpo_ports * cpo.power_w / 1000.0
        optics_capex += cpo_ports * cpo.capex_usd
    for oid, count in transceivers.items():
        o = catalog.get("optics", oid)
        optics_kw += count * o.power_w / 1000.0
        optics_capex += count * o.capex_usd
    notes.extend(fb.note(lengths) for fb, lengths in fell_back.items())
    if family.requested and family.kind is not OpticKind.cpo:
        for fabric in ("back-end", "front-end"):
            ends = by_end.get(f"{fabric} switch ends", {})
            if ends and family.requested not in ends:
                used = ", ".join(sorted(ends))
                notes.append(f"{fabric}: '{family.requested}' does not fit its switch cages "
                             f"at {att.lane_gbps if fabric == 'back-end' else fe_att.lane_gbps:g}"
                             f"G lanes; the modules of its kind and fibre that do: {used}")

    sw_count = be.switches
    fe_count = fe.switches
    switch_kw = (sw_count * switch.power_w + (fe_count * fe_switch.power_w if fe_switch
                                              else 0)) / 1000.0
    switch_capex = sw_count * switch.capex_usd + (fe_count * fe_switch.capex_usd
                                                  if fe_switch else 0)
    nics = n_racks * n_nic
    primary = next((c["switch_end"] for c in classes.values()
                    if c["tier"] == "nic_leaf" and c["medium"] == "optical"),
                   next((c["switch_end"] for c in classes.values()
                         if c["medium"] == "optical"), family.requested or ""))
    return NetworkResult(
        rack_id=rack.id, n_racks=n_racks, accelerators=n_racks * rack.accelerators_per_rack,
        switch_id=switch.id, frontend_switch_id=fe_switch.id if fe_switch else "",
        optic_id=primary, link_gbps=att.link_gbps,
        frontend_link_gbps=fe_att.link_gbps if fe_att else 0.0, backend=be,
        frontend=fe, nic_ports=n_endpoints, links=dict(sorted(links.items())),
        copper_links=copper_links, optical_links=optical_links,
        transceivers=dict(sorted(transceivers.items())), cpo_ports=cpo_ports,
        switch_kw=switch_kw, optics_kw=optics_kw, nic_kw=nics * nic.power_w / 1000.0,
        switch_capex_usd=switch_capex, optics_capex_usd=optics_capex,
        copper_capex_usd=copper_capex, nic_capex_usd=nics * nic.capex_usd,
        bisection_gbps=_bisection(be, n_endpoints, att.link_gbps, leaf_up, spine_up),
        full_bisection_gbps=n_endpoints * att.link_gbps / 2.0,
        cpo_optic_id=cpo_id, copper_kw=copper_kw,
        transceivers_by_end={k: dict(sorted(v.items())) for k, v in sorted(by_end.items())},
        lane_gbps=att.lane_gbps, frontend_lane_gbps=fe_att.lane_gbps if fe_att else 0.0,
        link_classes=sorted(classes.values(), key=lambda c: (c["tier"], c["medium"],
                                                             c["switch_end"])),
        switch_rack_units=sw_count * switch.rack_units
        + (fe_count * fe_switch.rack_units if fe_switch else 0),
        notes=notes,
    )
