"""Network fabric model: back-end (scale-out) fat tree and front-end, as a networkx graph.

For ``n_racks`` racks of one type the back-end fabric connects every scale-out NIC port
to a leaf switch, leaves to spines, and spines to a core tier when one spine tier does
not fit the switch radix. The same builder makes the front-end (north-south) fabric.
Every link is an edge of a :class:`networkx.MultiGraph` carrying its tier, speed
[Gb/s], length [m] and medium (copper or optical); the bill of materials (switches per
tier, links, transceivers by type, power, capex) is counted from the graph's edges.

Conventions (documented in ``docs/facility.md``):

* Link speed ``p`` = min(NIC port speed, switch port speed); a faster switch port is
  split into ``port_gbps / p`` logical ports (breakout), so the switch radix at ``p`` is
  ``ports * port_gbps / p``.
* Leaf: ``down = floor(R * o / (1 + o))`` ports to NICs, ``up = R - down`` to spines
  (``o`` the oversubscription). Rail-optimised racks put NIC port ``k`` of every server
  on the leaves of rail ``k``.
* Copper (DAC first, then ACC) where the link's length is within the cable's reach:
  inside a rack and to a neighbouring rack of the same row; leaf-spine and spine-core
  links run to the network row and are optical.
* Parallel links between two switches are one edge with a ``links`` multiplicity.
* Transceivers: an optical link has one transceiver (or CPO port) at each end. At a
  switch, the optical Gb/s of all its ports is carried by modules of the chosen
  optic (a twin-port 800G module carries two 400G links), counted per switch; at a
  NIC, one module per NIC port. A switch end is co-packaged (no transceiver, a CPO
  port with the catalog's per-port power) when the switch is a CPO switch or the
  chosen optic is of kind ``cpo``.
* NIC power and capex are reported but are part of the rack's IT power and price, so
  they are not in ``network_kw`` or ``network_capex_usd``.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from dcplan.errors import InputError, Problem
from dcplan.facility.assumptions import value
from dcplan.schema import Nic, Optic, OpticKind, Rack, Switch
from dcplan.yamlio import atomic_path

OPTICAL_KINDS = (OpticKind.pluggable, OpticKind.lpo, OpticKind.cpo, OpticKind.aoc)
COPPER_KINDS = (OpticKind.copper_dac, OpticKind.copper_acc)
MAX_TIERS = 3


@dataclass(frozen=True)
class Layout:
    """Physical layout used for cable lengths.

    Attributes
    ----------
    rack_pitch_m : float
        Distance between neighbouring rack positions in a row [m].
    in_rack_cable_m : float
        Cable length inside a rack, including the run to the overhead tray [m].
    racks_per_row : int
        Compute racks per row; links between rows are optical.
    copper_max_rack_distance : int
        Farthest rack (in positions) a copper cable may reach: 0 = inside the rack,
        1 = the neighbouring rack; beyond it links are optical whatever the cable reach.
    """

    rack_pitch_m: float = field(default_factory=lambda: value("layout", "rack_pitch_m"))
    in_rack_cable_m: float = field(default_factory=lambda: value("layout", "in_rack_cable_m"))
    racks_per_row: int = field(default_factory=lambda: value("layout", "racks_per_row"))
    copper_max_rack_distance: int = field(
        default_factory=lambda: value("layout", "copper_max_rack_distance"))

    def length_m(self, rack_a: int, rack_b: int) -> float:
        """Cable length between devices in racks ``rack_a`` and ``rack_b`` [m].

        Infinite (optical) across rows and beyond ``copper_max_rack_distance``.
        """
        if rack_a // self.racks_per_row != rack_b // self.racks_per_row:
            return math.inf
        if abs(rack_a - rack_b) > self.copper_max_rack_distance:
            return math.inf
        return abs(rack_a - rack_b) * self.rack_pitch_m + self.in_rack_cable_m


@dataclass
class FabricTiers:
    """Switch counts and ports of one fat tree.

    Attributes
    ----------
    leaf, spine, core : int
        Switches per tier.
    down_ports, up_ports : int
        Leaf ports to endpoints and to spines.
    radix : int
        Logical ports per switch at the link speed.
    """

    leaf: int = 0
    spine: int = 0
    core: int = 0
    down_ports: int = 0
    up_ports: int = 0
    radix: int = 0

    @property
    def switches(self) -> int:
        """All switches of the fabric."""
        return self.leaf + self.spine + self.core

    @property
    def tiers(self) -> int:
        """Number of switch tiers (1, 2 or 3)."""
        return 1 + (self.spine > 0) + (self.core > 0)


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
        Optic used on switch ends (``cpo`` when co-packaged).
    link_gbps, frontend_link_gbps : float
        Logical link speed [Gb/s].
    backend, frontend : FabricTiers
    nic_ports : int
        Back-end NIC ports (endpoints).
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
            "backend_tiers": self.backend.tiers,
            "backend_switches": {"leaf": self.backend.leaf, "spine": self.backend.spine,
                                 "core": self.backend.core},
            "frontend_switches": {"leaf": self.frontend.leaf, "spine": self.frontend.spine,
                                  "core": self.frontend.core},
            "nic_ports": self.nic_ports,
            "links": dict(self.links),
            "copper_links": self.copper_links,
            "optical_links": self.optical_links,
            "transceivers": dict(self.transceivers),
            "transceivers_by_end": {k: dict(v) for k, v in self.transceivers_by_end.items()},
            "cpo_ports": self.cpo_ports,
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
        }


# --- choices from the catalog ---------------------------------------------------------


def _err(message: str) -> InputError:
    return InputError(Problem("<network>", message))


#: Most switch links one NIC port is split into: a twin-port module (one 1.6T NIC port
#: as 2 x 800G links, one 800G port as 2 x 400G). A switch whose ports would need a
#: larger split is too slow for the NIC.
MAX_LINKS_PER_NIC_PORT = 2


def check_switch_speed(switch: Switch, nic_gbps: float) -> None:
    """Raise if ``switch``'s ports are too slow for NIC ports of ``nic_gbps`` [Gb/s].

    Raises
    ------
    InputError
        When one NIC port would need more than :data:`MAX_LINKS_PER_NIC_PORT` switch
        links.
    """
    if switch.port_gbps * MAX_LINKS_PER_NIC_PORT < nic_gbps - 1e-9:
        raise _err(f"switch '{switch.id}' has {switch.port_gbps:g} Gb/s ports, below the "
                   f"{nic_gbps:g} Gb/s link speed of the rack's scale-out NIC ports; choose "
                   f"a switch with ports of at least {nic_gbps / MAX_LINKS_PER_NIC_PORT:g} Gb/s "
                   "(see 'dcplan catalog list switches')")


def logical_radix(switch: Switch, link_gbps: float) -> int:
    """Logical ports of ``switch`` at ``link_gbps`` (breakout of faster ports) [count]."""
    if link_gbps >= switch.port_gbps:
        return switch.ports
    return int(switch.ports * (switch.port_gbps // link_gbps))


def choose_switch(catalog, link_gbps: float, switch_id: str | None = None,
                  protocol: str | None = None) -> Switch:
    """Pick the switch model.

    ``switch_id`` if given, else the non-CPO switch with the highest logical radix at
    ``link_gbps`` (fewest tiers and boxes), then the lowest power per Gb/s, then the id.
    """
    if switch_id:
        return catalog.get("switches", switch_id)
    cands = [s for s in catalog.switches.values() if not s.cpo]
    fast = [s for s in cands if s.port_gbps * MAX_LINKS_PER_NIC_PORT >= link_gbps - 1e-9]
    cands = fast or cands
    if protocol:
        cands = [s for s in cands if s.protocol == protocol] or cands
    if not cands:
        raise _err("no (non-CPO) switch in the switches catalog; add one or pass a switch id")
    return sorted(cands, key=lambda s: (-logical_radix(s, min(link_gbps, s.port_gbps)),
                                        s.power_w / (s.ports * s.port_gbps), s.id))[0]


def choose_optic(catalog, optic_id: str | None, switch: Switch) -> Optic:
    """Pick the optic for switch ends.

    ``optic_id`` if given, else the cheapest pluggable whose speed is the switch port
    speed (then any optical module).
    """
    if optic_id:
        optic = catalog.get("optics", optic_id)
        if optic.kind not in OPTICAL_KINDS:
            raise _err(f"optic '{optic_id}' is {optic.kind.value}; choose an optical module "
                       "(pluggable, lpo, cpo or aoc) for --optics")
        return optic
    optical = [o for o in catalog.optics.values() if o.kind in OPTICAL_KINDS]
    for pool in (
        [o for o in optical if o.kind is OpticKind.pluggable and o.gbps == switch.port_gbps],
        [o for o in optical if o.kind is OpticKind.pluggable and o.gbps >= switch.port_gbps],
        [o for o in optical if o.kind is not OpticKind.cpo],
    ):
        if pool:
            return sorted(pool, key=lambda o: (o.gbps, o.capex_usd, o.power_w, o.id))[0]
    raise _err("no optical module in the optics catalog; add a pluggable optic")


def _nic_end_optic(catalog, switch_optic: Optic, port_gbps: float) -> Optic:
    """Pick the module at a NIC end.

    The module must match the NIC link speed: a module of the switch end's kind (LPO
    for LPO; pluggable for CPO) at exactly ``port_gbps``, else a pluggable at exactly
    that speed; only when the catalog has neither, the slowest faster module of that
    kind, then pluggable. A faster module (an 800G LPO on a 400G NIC) would be neither
    what is installed nor priced right.
    """
    kind = OpticKind.pluggable if switch_optic.kind is OpticKind.cpo else switch_optic.kind
    optics = list(catalog.optics.values())
    for pool in (
        [o for o in optics if o.kind is kind and abs(o.gbps - port_gbps) < 1e-9],
        [o for o in optics if o.kind is OpticKind.pluggable and abs(o.gbps - port_gbps) < 1e-9],
        [o for o in optics if o.kind is kind and o.gbps >= port_gbps],
        [o for o in optics if o.kind is OpticKind.pluggable and o.gbps >= port_gbps],
    ):
        if pool:
            return sorted(pool, key=lambda o: (o.gbps, o.capex_usd, o.id))[0]
    pool = [o for o in catalog.optics.values() if o.kind in OPTICAL_KINDS
            and o.kind is not OpticKind.cpo]
    if not pool:
        raise _err("no pluggable optic for NIC ends in the optics catalog")
    return sorted(pool, key=lambda o: (-o.gbps, o.id))[0]


def _cpo_optic(catalog, switch_optic: Optic) -> Optic:
    if switch_optic.kind is OpticKind.cpo:
        return switch_optic
    pool = [o for o in catalog.optics.values() if o.kind is OpticKind.cpo]
    if not pool:
        raise _err("a CPO switch needs an optic of kind 'cpo' in the optics catalog "
                   "(power and price per co-packaged port)")
    return sorted(pool, key=lambda o: o.id)[0]


def _copper_for(catalog, gbps: float, length_m: float) -> Optic | None:
    pool = [o for o in catalog.optics.values()
            if o.kind in COPPER_KINDS and o.gbps >= gbps and o.reach_m >= length_m]
    if not pool:
        return None
    # passive DAC before active ACC, then the cheapest
    return sorted(pool, key=lambda o: (o.kind is not OpticKind.copper_dac, o.capex_usd,
                                       o.power_w, o.id))[0]


# --- fat tree -------------------------------------------------------------------------


def leaf_ports(radix: int, oversubscription: float) -> tuple[int, int]:
    """Split a leaf's ``radix`` into (down, up) ports for ``oversubscription`` = down/up."""
    if oversubscription < 1:
        raise _err(f"oversubscription must be >= 1 (got {oversubscription:g})")
    down = int(math.floor(radix * oversubscription / (1.0 + oversubscription) + 1e-9))
    up = int(math.ceil(down / oversubscription - 1e-9))
    while down + up > radix:
        down -= 1
        up = int(math.ceil(down / oversubscription - 1e-9))
    if down < 1 or up < 1:
        raise _err(f"a {radix}-port switch cannot be split at oversubscription "
                   f"{oversubscription:g}")
    return down, up


def _switch_link(g: nx.MultiGraph, a: str, b: str, tier: str, gbps: float, k: int) -> None:
    """Add ``k`` parallel switch-to-switch links (optical: they run to the network row).

    In a lean graph (``g.graph["lean"]`` is a list) they are recorded there instead of
    as edges: same counts, a fraction of the memory and time for large fabrics.
    """
    lean = g.graph.get("lean")
    if lean is not None:
        lean.append((a, b, tier, gbps, k))
    else:
        g.add_edge(a, b, tier=tier, gbps=gbps, length_m=math.inf, links=k)


@dataclass
class _Run:
    """Consecutive endpoints of one rack (and rail): their node names, or just a count."""

    rack: int
    rail: int
    count: int
    names: list[str] | None = None


def _chunk(runs: list[_Run], size: int) -> list[list[_Run]]:
    """Cut the endpoint sequence ``runs`` into groups of ``size`` endpoints."""
    groups: list[list[_Run]] = []
    cur: list[_Run] = []
    room = size
    for run in runs:
        pos = 0
        while pos < run.count:
            take = min(room, run.count - pos)
            names = run.names[pos:pos + take] if run.names is not None else None
            cur.append(_Run(run.rack, run.rail, take, names))
            pos += take
            room -= take
            if room == 0:
                groups.append(cur)
                cur, room = [], size
    if cur:
        groups.append(cur)
    return groups


def _median_rack(group: list[_Run]) -> int:
    total = sum(r.count for r in group)
    seen = 0
    for run in sorted(group, key=lambda r: r.rack):
        seen += run.count
        if seen > total // 2:
            return run.rack
    return group[-1].rack


def _fat_tree(g: nx.MultiGraph, runs: list[_Run], radix: int, oversubscription: float,
              prefix: str, gbps: float, layout: Layout, rail_optimized: bool,
              endpoint_kind: str) -> FabricTiers:
    """Add a fat tree over the endpoints ``runs`` (rack-major order) to ``g``.

    With named runs every endpoint is its own node and link; with counted runs the
    endpoints of one rack are one node ``{prefix}r{rack}`` and their links to a leaf
    one edge with a ``links`` multiplicity (same counts, far fewer objects).
    """
    tiers = FabricTiers(radix=radix)
    n = sum(r.count for r in runs)
    if n == 0:
        return tiers
    if n <= radix:  # one switch holds every endpoint
        groups = [runs]
        down, up = radix, 0
    else:
        down, up = leaf_ports(radix, oversubscription)
        if rail_optimized:
            by_rail: dict[int, list[_Run]] = defaultdict(list)
            for run in runs:
                by_rail[run.rail].append(run)
            groups = [grp for rail in sorted(by_rail) for grp in _chunk(by_rail[rail], down)]
        else:
            groups = _chunk(runs, down)
    tiers.down_ports, tiers.up_ports = down, up
    leaves = []
    for i, grp in enumerate(groups):
        rack = _median_rack(grp)
        name = f"{prefix}leaf{i}"
        g.add_node(name, kind="switch", tier="leaf", fabric=prefix, rack=rack)
        leaves.append(name)
        bundle: Counter = Counter()
        for run in grp:
            if run.names is not None:
                for node in run.names:
                    g.add_edge(node, name, tier=f"{prefix}nic_leaf", gbps=gbps,
                               length_m=layout.length_m(run.rack, rack))
            else:
                bundle[run.rack] += run.count
        for r, k in bundle.items():
            node = f"{prefix}r{r}"
            if node not in g:
                g.add_node(node, kind=endpoint_kind, rack=r)
            g.add_edge(node, name, tier=f"{prefix}nic_leaf", gbps=gbps,
                       length_m=layout.length_m(r, rack), links=k)
    tiers.leaf = len(leaves)
    if len(leaves) == 1 and n <= radix:
        return tiers
    n_leaf = len(leaves)
    if n_leaf <= radix:  # two tiers
        # leaf i's uplink j goes to spine (i * up + j) mod S: every leaf reaches every
        # spine (S <= up when n_leaf <= radix) and each spine gets at most
        # ceil(n_leaf * up / S) <= radix links
        spines = int(math.ceil(n_leaf * up / radix))
        for s in range(spines):
            g.add_node(f"{prefix}spine{s}", kind="switch", tier="spine", fabric=prefix)
        bundle: Counter = Counter()
        for i, leaf in enumerate(leaves):
            for j in range(up):
                bundle[(leaf, f"{prefix}spine{(i * up + j) % spines}")] += 1
        for (a, b), k in bundle.items():
            _switch_link(g, a, b, f"{prefix}leaf_spine", gbps, k)
        tiers.spine = spines
        return tiers
    # three tiers: pods of radix/2 leaves, each with `up` spines of radix/2 down ports
    pod_leaves = radix // 2
    pods = int(math.ceil(n_leaf / pod_leaves))
    if pods > radix:
        raise _err(f"{n} endpoints need more than {MAX_TIERS} switch tiers with a "
                   f"{radix}-port switch; choose a larger switch or fewer racks")
    spine_names = []
    uplinks = 0
    for p in range(pods):
        pod = leaves[p * pod_leaves:(p + 1) * pod_leaves]
        names = [f"{prefix}spine{p}_{k}" for k in range(up)]
        for nm in names:
            g.add_node(nm, kind="switch", tier="spine", fabric=prefix, pod=p)
        for leaf in pod:
            for nm in names:
                _switch_link(g, leaf, nm, f"{prefix}leaf_spine", gbps, 1)
        spine_names += [(nm, len(pod)) for nm in names]
        uplinks += len(pod) * len(names)
    cores = int(math.ceil(uplinks / radix))
    for c in range(cores):
        g.add_node(f"{prefix}core{c}", kind="switch", tier="core", fabric=prefix)
    counter = 0
    bundle = Counter()
    for nm, n_up in spine_names:  # each spine: as many uplinks as leaf links (1:1)
        for _ in range(n_up):
            bundle[(nm, f"{prefix}core{counter % cores}")] += 1
            counter += 1
    for (a, b), k in bundle.items():
        _switch_link(g, a, b, f"{prefix}spine_core", gbps, k)
    tiers.spine = len(spine_names)
    tiers.core = cores
    return tiers


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


# --- the whole network ----------------------------------------------------------------


def _rack_nics(rack: Rack, nic: Nic) -> tuple[int, float]:
    """(NICs per rack, Gb/s per NIC) of the scale-out back-end."""
    n_nic = int(math.ceil(rack.accelerators_per_rack * rack.scaleout_nics_per_accelerator
                          - 1e-9))
    gbps = rack.scaleout_gbps_per_accelerator * rack.accelerators_per_rack / n_nic
    return n_nic, gbps


def network(catalog, rack_id: str, n_racks: int, optics: str | None = None,
            oversubscription: float = 1.0, switch_id: str | None = None,
            frontend_switch_id: str | None = None, layout: Layout | None = None,
            with_accelerators: bool = False, keep_graph: bool = True,
            detail: bool | None = None) -> NetworkResult:
    """Build the back-end and front-end fabrics of ``n_racks`` racks of ``rack_id``.

    Parameters
    ----------
    catalog : Catalog
    rack_id : str
    n_racks : int
        Racks of this type [count], >= 1.
    optics : str, optional
        Optic id for switch ends (``pluggable_800g``, ``lpo_800g``, ``cpo`` ...); default
        the cheapest pluggable at the switch port speed.
    oversubscription : float
        Leaf down/up bandwidth ratio of the back-end, >= 1 (1 = non-blocking).
    switch_id, frontend_switch_id : str, optional
        Switch models; default :func:`choose_switch`.
    layout : Layout, optional
    with_accelerators : bool
        Also add accelerator nodes (attached to their NICs) to the graph.
    keep_graph : bool
        Keep the graph in the result (drop it to save memory).
    detail : bool, optional
        One node per NIC port (default when the graph is kept) or one node per rack
        and fabric with link multiplicities (default otherwise; same counts, much
        faster for thousands of racks).

    Returns
    -------
    NetworkResult
    """
    if n_racks < 1 or int(n_racks) != n_racks:
        raise _err(f"--racks must be a whole number >= 1 (got {n_racks})")
    n_racks = int(n_racks)
    layout = layout or Layout()
    rack: Rack = catalog.get("racks", rack_id)
    nic: Nic = catalog.get("nics", rack.nic)
    n_nic, nic_gbps = _rack_nics(rack, nic)
    switch = choose_switch(catalog, nic_gbps, switch_id)
    check_switch_speed(switch, nic_gbps)
    link = min(nic_gbps, switch.port_gbps)
    links_per_nic = int(math.ceil(nic_gbps / link - 1e-9))
    radix = logical_radix(switch, link)
    optic = choose_optic(catalog, optics, switch)
    rails = rack.scaleout_rails or value("network", "default_rails")
    per_rack_ports = n_nic * links_per_nic

    detail = keep_graph if detail is None else detail
    if with_accelerators:
        detail = True
    g = nx.MultiGraph(name=f"{n_racks} x {rack_id}")
    if not keep_graph:
        g.graph["lean"] = []
    rail_opt = rack.rail_optimized and n_racks * per_rack_ports > radix
    runs: list[_Run] = []
    for r in range(n_racks):
        names = []
        if detail:
            for j in range(n_nic):
                nic_node = f"r{r}/nic{j}"
                g.add_node(nic_node, kind="nic", rack=r, nic=rack.nic)
                for k in range(links_per_nic):
                    port = nic_node
                    if links_per_nic > 1:
                        port = f"r{r}/nic{j}/p{k}"
                        g.add_node(port, kind="nic_port", rack=r)
                        g.add_edge(nic_node, port, tier="internal", gbps=link, length_m=0.0)
                    names.append(port)
        # port q of a rack (NIC q // links, link q % links) is on rail q mod rails
        if rail_opt:
            for rail in range(min(rails, per_rack_ports)):
                qs = range(rail, per_rack_ports, rails)
                runs.append(_Run(r, rail, len(qs), [names[q] for q in qs] if detail else None))
        else:
            runs.append(_Run(r, 0, per_rack_ports, names if detail else None))
        if with_accelerators:
            a = rack.accelerators_per_rack
            for i in range(a):
                acc = f"r{r}/acc{i}"
                g.add_node(acc, kind="accelerator", rack=r)
            for i in range(a):
                # accelerator i <-> NIC(s) proportionally (k NICs per accelerator or
                # one NIC per 1/k accelerators)
                js = {int(i * n_nic / a)} | {j for j in range(n_nic) if int(j * a / n_nic) == i}
                for j in js:
                    g.add_edge(f"r{r}/acc{i}", f"r{r}/nic{j}", tier="internal",
                               gbps=nic_gbps, length_m=0.0)
    be = _fat_tree(g, runs, radix, oversubscription, "", link, layout, rail_opt, "nic")
    n_endpoints = n_racks * per_rack_ports

    # front-end
    fe_port = value("network", "frontend_port_gbps")
    fe_switch = choose_switch(catalog, fe_port, frontend_switch_id, protocol="ethernet")
    fe_link = min(fe_port, fe_switch.port_gbps)
    fe_tiers = FabricTiers()
    fe_per_rack = int(math.ceil(rack.frontend_gbps_per_rack / fe_link - 1e-9))
    if fe_per_rack:
        fe_runs = []
        for r in range(n_racks):
            names = None
            if detail:
                names = [f"r{r}/fe{j}" for j in range(fe_per_rack)]
                for node in names:
                    g.add_node(node, kind="frontend_port", rack=r)
            fe_runs.append(_Run(r, 0, fe_per_rack, names))
        fe_tiers = _fat_tree(g, fe_runs, logical_radix(fe_switch, fe_link),
                             value("network", "frontend_oversubscription"), "fe_", fe_link,
                             layout, False, "frontend_port")

    result = _count(catalog, g, rack, nic, n_racks, n_nic, switch, fe_switch, optic, link,
                    fe_link, be, fe_tiers, n_endpoints)
    if keep_graph:
        result.graph = g
    return result


def _count(catalog, g, rack, nic, n_racks, n_nic, switch, fe_switch, optic, link, fe_link,
           be, fe, n_endpoints) -> NetworkResult:
    links: Counter = Counter()
    copper_links = optical_links = 0
    copper_capex = 0.0
    copper_kw = 0.0
    optical_gbps_at: Counter = Counter()  # switch -> optical Gb/s on its ports
    nic_modules: Counter = Counter()  # optic id -> modules at NIC/front-end ports
    by_end: dict[str, Counter] = defaultdict(Counter)  # end label -> optic id -> count
    leaf_up = spine_up = 0
    copper_memo: dict = {}
    nic_memo: dict = {}
    kinds = g.nodes(data="kind")
    for a, b, tier, gbps, k in g.graph.get("lean") or ():
        links[tier] += k
        if tier == "leaf_spine":
            leaf_up += k
        elif tier == "spine_core":
            spine_up += k
        optical_links += k
        optical_gbps_at[a] += gbps * k
        optical_gbps_at[b] += gbps * k
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
        key = (gbps, data["length_m"])
        if key not in copper_memo:
            copper_memo[key] = _copper_for(catalog, gbps, data["length_m"])
        cu = copper_memo[key]
        if cu is not None:
            data["medium"] = cu.id
            copper_links += k
            share = gbps / cu.gbps  # breakout share of one cable
            copper_capex += 2 * cu.capex_usd * share * k
            copper_kw += 2 * cu.power_w * share * k / 1000.0
            continue
        data["medium"] = "optical"
        optical_links += k
        for end in (u, v):
            if kinds[end] == "switch":
                optical_gbps_at[end] += gbps * k
            else:
                if gbps not in nic_memo:
                    nic_memo[gbps] = _nic_end_optic(catalog, optic, gbps).id
                nic_modules[nic_memo[gbps]] += k
                end_label = ("front-end NIC ends" if kinds[end] == "frontend_port"
                             else "back-end NIC ends")
                by_end[end_label][nic_memo[gbps]] += k

    transceivers: Counter = Counter(nic_modules)
    cpo_ports = 0
    cpo_id = ""
    optics_kw = copper_kw
    optics_capex = 0.0
    for sw, gbps in optical_gbps_at.items():
        front = g.nodes[sw]["fabric"] == "fe_"
        model = fe_switch if front else switch
        end_label = "front-end switch ends" if front else "back-end switch ends"
        if model.cpo or optic.kind is OpticKind.cpo:
            cpo = _cpo_optic(catalog, optic)
            cpo_id = cpo.id
            ports = int(math.ceil(gbps / cpo.gbps - 1e-9))
            cpo_ports += ports
            optics_kw += ports * cpo.power_w / 1000.0
            optics_capex += ports * cpo.capex_usd
            by_end[end_label][f"{cpo.id} (co-packaged ports)"] += ports
        else:
            # One switch's optical Gb/s in modules of the optic's speed, rounded up per
            # switch (a module cannot span two switches).
            n_mod = int(math.ceil(gbps / optic.gbps - 1e-9))
            transceivers[optic.id] += n_mod
            by_end[end_label][optic.id] += n_mod
    for oid, count in transceivers.items():
        o = catalog.get("optics", oid)
        optics_kw += count * o.power_w / 1000.0
        optics_capex += count * o.capex_usd

    sw_count = be.switches
    fe_count = fe.switches
    switch_kw = (sw_count * switch.power_w + fe_count * fe_switch.power_w) / 1000.0
    switch_capex = sw_count * switch.capex_usd + fe_count * fe_switch.capex_usd
    nics = n_racks * n_nic
    return NetworkResult(
        rack_id=rack.id, n_racks=n_racks, accelerators=n_racks * rack.accelerators_per_rack,
        switch_id=switch.id, frontend_switch_id=fe_switch.id,
        optic_id=optic.id, link_gbps=link, frontend_link_gbps=fe_link, backend=be,
        frontend=fe, nic_ports=n_endpoints, links=dict(sorted(links.items())),
        copper_links=copper_links, optical_links=optical_links,
        transceivers=dict(sorted(transceivers.items())), cpo_ports=cpo_ports,
        switch_kw=switch_kw, optics_kw=optics_kw, nic_kw=nics * nic.power_w / 1000.0,
        switch_capex_usd=switch_capex, optics_capex_usd=optics_capex,
        copper_capex_usd=copper_capex, nic_capex_usd=nics * nic.capex_usd,
        bisection_gbps=_bisection(be, n_endpoints, link, leaf_up, spine_up),
        full_bisection_gbps=n_endpoints * link / 2.0,
        cpo_optic_id=cpo_id, copper_kw=copper_kw,
        transceivers_by_end={k: dict(sorted(v.items())) for k, v in sorted(by_end.items())},
    )


def write_graphml(result: NetworkResult, path: Path | str) -> None:
    """Write the fabric graph to ``path`` as GraphML, atomically.

    Parameters
    ----------
    result : NetworkResult
        A result built with ``keep_graph=True``.
    path : Path or str
        Target file.
    """
    if result.graph is None:
        raise _err("the network was built without its graph; rebuild with keep_graph=True")
    g = nx.MultiGraph(result.graph)
    for _, _, data in g.edges(data=True):
        if math.isinf(data.get("length_m", 0.0)):
            data["length_m"] = -1.0  # GraphML has no infinity: -1 = network row (optical)
    for _, data in g.nodes(data=True):
        for k, v in list(data.items()):
            if v is None:
                del data[k]
    with atomic_path(path) as tmp:
        nx.write_graphml(g, tmp)
