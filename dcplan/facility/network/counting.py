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


# --- the count, step by step ----------------------------------------------------------


@dataclass
class _Tally:
    """What the walk over the network graph's links has counted so far.

    Attributes
    ----------
    catalog : Catalog
    family : OpticFamily
        The optics the user chose.
    layout : Layout
    be_setup, fe_setup : FabricSetup
        The back-end and front-end (None: none) fabric setups.
    kinds, fabric_of : dict
        Node -> its ``kind`` and its ``fabric`` prefix (``fe_`` for the front-end).
    links : Counter
        Link tier -> links [count].
    copper_links, optical_links : int
        Links by medium [count].
    copper_capex : float
        Capex of the copper cables [USD].
    copper_kw : float
        Power of the active copper cables [kW].
    leaf_up, spine_up : int
        Leaf-spine and spine-core links [count].
    notes : list of str
        Notes in the order met.
    fell_back : dict
        :class:`~dcplan.facility.network.parts.FibreFallback` -> link lengths [m].
    at_switch : Counter
        (switch node, module id, link speed [Gb/s]) -> links on that switch's modules
        [count]; one module carries module Gb/s / link Gb/s links (a twin-port 800G
        module: two 400G or four 200G links).
    cpo_ports_at : Counter
        Switch node -> co-packaged ports its optical links take [ports]; a link takes
        the share of a port its lanes use (a 400G link of 4 lanes a whole 4-lane
        Quantum-X800 port).
    nic_modules : defaultdict
        (end label, optic id) -> NIC-end modules, fractional [modules].
    classes : dict
        (tier, medium, switch-end id, far-end id) -> link class row.
    memo : dict
        Link class key -> (medium, module at the switch end, module at the far end).
    """

    catalog: Any
    family: OpticFamily
    layout: Layout
    be_setup: FabricSetup
    fe_setup: FabricSetup | None
    kinds: dict
    fabric_of: dict
    links: Counter = field(default_factory=Counter)
    copper_links: int = 0
    optical_links: int = 0
    copper_capex: float = 0.0
    copper_kw: float = 0.0
    leaf_up: int = 0
    spine_up: int = 0
    notes: list[str] = field(default_factory=list)
    fell_back: dict[FibreFallback, list[float]] = field(default_factory=dict)
    at_switch: Counter = field(default_factory=Counter)
    cpo_ports_at: Counter = field(default_factory=Counter)
    nic_modules: dict[tuple[str, str], float] = field(
        default_factory=lambda: defaultdict(float))
    classes: dict[tuple, dict] = field(default_factory=dict)
    memo: dict[tuple, tuple] = field(default_factory=dict)

    def setup_of(self, node: str) -> FabricSetup:
        """The setup of the fabric that switch ``node`` belongs to."""
        return self.fe_setup if self.fabric_of[node] == "fe_" else self.be_setup

    def switch_end(self, node: str) -> _End:
        """The end of a link at switch ``node``: its model, cage capacity [Gb/s], CPO."""
        st = self.setup_of(node)
        is_cpo = st.switch.cpo or self.family.kind is OpticKind.cpo
        return _End(st.switch, st.att.cage_gbps or st.switch.port_gbps, is_cpo)


def _media(t: _Tally, tier: str, gbps: float, length: float, apart: float, sw_node: str,
           far_node: str) -> tuple[str, Any, Any]:
    """(medium, module at the switch end, module at the far end) of one link class.

    Copper where the far end is at most ``copper_max_rack_distance`` rack positions
    away and a cable reaches ``length`` [m], else the cheapest optical pair
    (:func:`~dcplan.facility.network.parts._pick_pair`); memoised per link class. Notes
    a substitution in ``t.notes`` and a fibre fallback in ``t.fell_back``.
    """
    st = t.setup_of(sw_node)
    lane = st.att.lane_gbps
    far_is_switch = t.kinds[far_node] == "switch"
    key = (tier, gbps, length, apart, far_is_switch, t.fabric_of[sw_node])
    hit = t.memo.get(key)
    if hit is not None:
        return hit
    # a co-packaged switch has no electrical cages: its links are optical
    if apart <= t.layout.copper_max_rack_distance and not t.switch_end(sw_node).cpo:
        cu = _copper_for(t.catalog, gbps, lane, length)
        if cu is not None:
            t.memo[key] = ("copper", cu, cu)
            return t.memo[key]
    if math.isinf(length):
        length = t.layout.leaf_to_spine_m
    a = t.switch_end(sw_node)
    b = t.switch_end(far_node) if far_is_switch else _End(None, st.att.nic_port_gbps, False)
    ma, mb, note = _pick_pair(t.catalog, a, b, t.family, lane, length, gbps,
                              not far_is_switch)
    if isinstance(note, FibreFallback):
        t.fell_back.setdefault(note, []).append(length)
    elif note and note not in t.notes:
        t.notes.append(note)
    t.memo[key] = ("optical", ma, mb)
    return t.memo[key]


def _add_class(t: _Tally, tier: str, medium: str, ma, mb, k: int, length: float) -> None:
    """Count ``k`` links [count] into their link class, and its longest link [m]."""
    key = (tier, medium, ma.id, mb.id)
    c = t.classes.get(key)
    if c is None:
        c = t.classes[key] = {"tier": tier, "medium": medium, "links": 0,
                              "max_length_m": 0.0, "switch_end": ma.id, "far_end": mb.id}
    c["links"] += k
    if length > c["max_length_m"]:
        c["max_length_m"] = round(length, 3)


def _count_tier(t: _Tally, tier: str, k: int) -> None:
    """Count ``k`` links of ``tier`` [count], and the uplinks among them [count]."""
    t.links[tier] += k
    if tier == "leaf_spine":
        t.leaf_up += k
    elif tier == "spine_core":
        t.spine_up += k


def _switch_module(t: _Tally, node: str, module, k: int, gbps: float) -> None:
    """Count ``k`` links of ``gbps`` [Gb/s] on ``module`` at switch ``node``.

    Into ``t.cpo_ports_at`` [ports, fractional] for a co-packaged module, else into
    ``t.at_switch`` [links].
    """
    if module.kind is OpticKind.cpo:
        st = t.setup_of(node)
        t.cpo_ports_at[node] += k * st.switch.ports / st.att.radix
        return
    t.at_switch[(node, module.id, gbps)] += k


def _count_optical(t: _Tally, u: str, v: str, tier: str, gbps: float, k: int,
                   length: float, apart: float, data: dict | None = None) -> bool:
    """Count ``k`` links between ``u`` and ``v`` as optical, if their medium is.

    Optical links [count], their link class, the modules at the switch ends [links]
    and at NIC ends [modules, fractional]; marks the graph edge ``data`` with its
    medium and end modules.

    Returns
    -------
    bool
        False (nothing counted) when the links are copper.
    """
    sw, far = (u, v) if t.kinds[u] == "switch" else (v, u)
    medium, ma, mb = _media(t, tier, gbps, length, apart, sw, far)
    if medium == "copper":
        return False
    t.optical_links += k
    _add_class(t, tier, "optical", ma, mb, k, length)
    _switch_module(t, sw, ma, k, gbps)
    if t.kinds[far] == "switch":
        _switch_module(t, far, mb, k, gbps)
    else:
        st = t.setup_of(sw)
        label = ("front-end NIC ends" if t.kinds[far] == "frontend_port"
                 else "back-end NIC ends")
        t.nic_modules[(label, mb.id)] += k / st.att.links_per_nic
    if data is not None:
        data["medium"] = "optical"
        data["ends"] = {sw: ma.id, far: mb.id}
    return True


def _count_lean_links(t: _Tally, lean: dict) -> None:
    """Count a lean graph's summed switch-to-switch links [count] and their modules.

    They run to the network row: optical, never copper.
    """
    for (tier, gbps, length), (k, ends_a, ends_b) in lean.items():
        _count_tier(t, tier, k)
        _, ma, mb = _media(t, tier, gbps, length, math.inf, next(iter(ends_a)),
                           next(iter(ends_b)))
        t.optical_links += k
        _add_class(t, tier, "optical", ma, mb, k, length)
        for node, n in ends_a.items():
            _switch_module(t, node, ma, n, gbps)
        for node, n in ends_b.items():
            _switch_module(t, node, mb, n, gbps)


def _count_copper(t: _Tally, u: str, v: str, data: dict, k: int) -> None:
    """Count ``k`` copper links of one edge [count], their capex [USD] and power [kW].

    Marks the edge ``data`` with its cable at both ends; a link takes its breakout
    share (link Gb/s / cable Gb/s) of a cable at each end.
    """
    tier, gbps = data["tier"], data["gbps"]
    apart = data.get("apart", math.inf)
    sw = u if t.kinds[u] == "switch" else v
    _, cu, _ = _media(t, tier, gbps, data["length_m"], apart, sw, v if sw == u else u)
    data["medium"] = cu.id
    data["ends"] = {u: cu.id, v: cu.id}
    t.copper_links += k
    _add_class(t, tier, "copper", cu, cu, k, data["length_m"])
    share = gbps / cu.gbps  # breakout share of one cable
    t.copper_capex += 2 * cu.capex_usd * share * k
    t.copper_kw += 2 * cu.power_w * share * k / 1000.0


def _count_edges(t: _Tally, g) -> None:
    """Count the links of every graph edge [count] by tier and medium, with their ends."""
    for u, v, data in g.edges(data=True):
        tier = data["tier"]
        if tier == "internal":
            continue
        k = data.get("links", 1)  # parallel links are one edge with a multiplicity
        _count_tier(t, tier, k)
        if _count_optical(t, u, v, tier, data["gbps"], k, data["length_m"],
                          data.get("apart", math.inf), data):
            continue
        _count_copper(t, u, v, data, k)


def _count_transceivers(t: _Tally, by_end: dict[str, Counter]) -> Counter:
    """Pluggable modules per optic id [modules], also counted per end into ``by_end``.

    NIC ends round their fractional modules up; at a switch a module fills one cage
    and cannot span two switches, so modules are rounded up per switch and module.
    """
    transceivers: Counter = Counter()
    for (label, oid), n in t.nic_modules.items():
        count = int(math.ceil(n - 1e-9))
        transceivers[oid] += count
        by_end[label][oid] += count
    for (sw, oid, gbps), k in t.at_switch.items():
        # a module fills one cage and cannot span two switches: per switch and module
        per_module = max(1, int(round(t.catalog.get("optics", oid).gbps / gbps)))
        n_mod = int(math.ceil(k / per_module - 1e-9))
        transceivers[oid] += n_mod
        label = "front-end switch ends" if t.fabric_of[sw] == "fe_" else \
            "back-end switch ends"
        by_end[label][oid] += n_mod
    return transceivers


def _count_cpo_ports(t: _Tally, by_end: dict[str, Counter], cpo_id: str
                     ) -> tuple[int, str, float, float]:
    """Co-packaged ports [ports], rounded up per switch, also counted into ``by_end``.

    Returns
    -------
    (int, str, float, float)
        Ports [count], the optics entry that prices them ('' or ``cpo_id`` when there
        are none), their power [kW] and capex [USD].
    """
    if not t.cpo_ports_at:
        return 0, cpo_id, 0.0, 0.0
    cpo = t.catalog.get("optics", cpo_id or t.family.cpo_id)
    cpo_ports = 0
    for sw, used in t.cpo_ports_at.items():
        ports = int(math.ceil(used - 1e-9))
        cpo_ports += ports
        label = "front-end switch ends" if t.fabric_of[sw] == "fe_" else \
            "back-end switch ends"
        by_end[label][f"{cpo.id} (co-packaged ports)"] += ports
    return cpo_ports, cpo.id, cpo_ports * cpo.power_w / 1000.0, cpo_ports * cpo.capex_usd


def _family_notes(t: _Tally, by_end: dict[str, Counter]) -> None:
    """Add the notes on the chosen optics: fibre fallbacks, a module that does not fit.

    One note per fibre fallback (all its link lengths [m]), then, per fabric, one when
    the requested module sits on none of its switch ends.
    """
    t.notes.extend(fb.note(lengths) for fb, lengths in t.fell_back.items())
    family = t.family
    if family.requested and family.kind is not OpticKind.cpo:
        for fabric in ("back-end", "front-end"):
            ends = by_end.get(f"{fabric} switch ends", {})
            if ends and family.requested not in ends:
                used = ", ".join(sorted(ends))
                lane = t.be_setup.att.lane_gbps if fabric == "back-end" else \
                    t.fe_setup.att.lane_gbps
                t.notes.append(f"{fabric}: '{family.requested}' does not fit its switch "
                               f"cages at {lane:g}G lanes; the modules of its kind and "
                               f"fibre that do: {used}")


def _optics_power_capex(t: _Tally, transceivers: Counter, cpo_kw: float,
                        cpo_capex: float) -> tuple[float, float]:
    """Power [kW] and capex [USD] of the optics outside the racks.

    Power: the active copper cables, the co-packaged ports (``cpo_kw``) and the
    transceivers; capex: the co-packaged ports (``cpo_capex``) and the transceivers
    (the copper cables' capex is reported apart).
    """
    optics_kw = t.copper_kw + cpo_kw
    optics_capex = cpo_capex
    for oid, count in transceivers.items():
        o = t.catalog.get("optics", oid)
        optics_kw += count * o.power_w / 1000.0
        optics_capex += count * o.capex_usd
    return optics_kw, optics_capex


def _switch_totals(be: FabricTiers, fe: FabricTiers, switch, fe_switch
                   ) -> tuple[float, float, int]:
    """Power [kW], capex [USD] and rack units [U] of both fabrics' switches.

    Without their pluggables; ``fe_switch`` is None when there is no front-end.
    """
    sw_count = be.switches
    fe_count = fe.switches
    switch_kw = (sw_count * switch.power_w + (fe_count * fe_switch.power_w if fe_switch
                                              else 0)) / 1000.0
    switch_capex = sw_count * switch.capex_usd + (fe_count * fe_switch.capex_usd
                                                  if fe_switch else 0)
    units = sw_count * switch.rack_units + (fe_count * fe_switch.rack_units if fe_switch
                                            else 0)
    return switch_kw, switch_capex, units


def _primary_optic(classes: dict[tuple, dict], family: OpticFamily) -> str:
    """The module on the back-end leaves' NIC-facing ends (id; ``cpo`` when co-packaged).

    The switch end of the first optical NIC-leaf class, else of the first optical
    class, else the requested optic ('' for none).
    """
    return next((c["switch_end"] for c in classes.values()
                 if c["tier"] == "nic_leaf" and c["medium"] == "optical"),
                next((c["switch_end"] for c in classes.values()
                      if c["medium"] == "optical"), family.requested or ""))


def _count(catalog, g, rack, nic, n_racks, n_nic, be_setup: FabricSetup,
           fe_setup: FabricSetup | None, family: OpticFamily, be, fe, n_endpoints,
           layout: Layout) -> NetworkResult:
    """Count the bill of materials, power and capex of the network graph ``g``.

    Steps: the lean graph's summed switch-to-switch links, every edge's links (medium,
    modules, copper), the transceivers and co-packaged ports at each end, the optics'
    power and capex, the notes on the chosen optics, the switches' power, capex and
    rack units.

    Returns
    -------
    NetworkResult
        Without its graph and network rack positions (the caller adds them).
    """
    switch, att = be_setup.switch, be_setup.att
    fe_switch = fe_setup.switch if fe_setup else None
    fe_att = fe_setup.att if fe_setup else None
    t = _Tally(catalog, family, layout, be_setup, fe_setup, dict(g.nodes(data="kind")),
               dict(g.nodes(data="fabric")))
    _count_lean_links(t, g.graph.get("lean") or {})
    _count_edges(t, g)
    by_end: dict[str, Counter] = defaultdict(Counter)
    transceivers = _count_transceivers(t, by_end)
    cpo_ports, cpo_id, cpo_kw, cpo_capex = _count_cpo_ports(
        t, by_end, family.cpo_id if family.kind is OpticKind.cpo else "")
    optics_kw, optics_capex = _optics_power_capex(t, transceivers, cpo_kw, cpo_capex)
    _family_notes(t, by_end)
    switch_kw, switch_capex, switch_units = _switch_totals(be, fe, switch, fe_switch)
    nics = n_racks * n_nic
    return NetworkResult(
        rack_id=rack.id, n_racks=n_racks, accelerators=n_racks * rack.accelerators_per_rack,
        switch_id=switch.id, frontend_switch_id=fe_switch.id if fe_switch else "",
        optic_id=_primary_optic(t.classes, family), link_gbps=att.link_gbps,
        frontend_link_gbps=fe_att.link_gbps if fe_att else 0.0, backend=be,
        frontend=fe, nic_ports=n_endpoints, links=dict(sorted(t.links.items())),
        copper_links=t.copper_links, optical_links=t.optical_links,
        transceivers=dict(sorted(transceivers.items())), cpo_ports=cpo_ports,
        switch_kw=switch_kw, optics_kw=optics_kw, nic_kw=nics * nic.power_w / 1000.0,
        switch_capex_usd=switch_capex, optics_capex_usd=optics_capex,
        copper_capex_usd=t.copper_capex, nic_capex_usd=nics * nic.capex_usd,
        bisection_gbps=_bisection(be, n_endpoints, att.link_gbps, t.leaf_up, t.spine_up),
        full_bisection_gbps=n_endpoints * att.link_gbps / 2.0,
        cpo_optic_id=cpo_id, copper_kw=t.copper_kw,
        transceivers_by_end={k: dict(sorted(v.items())) for k, v in sorted(by_end.items())},
        lane_gbps=att.lane_gbps, frontend_lane_gbps=fe_att.lane_gbps if fe_att else 0.0,
        link_classes=sorted(t.classes.values(), key=lambda c: (c["tier"], c["medium"],
                                                               c["switch_end"])),
        switch_rack_units=switch_units,
        notes=t.notes,
    )
