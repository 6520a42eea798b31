"""Network fabric model: back-end (scale-out) fat tree and front-end, as a networkx graph.

For ``n_racks`` racks of one type the back-end fabric connects every scale-out NIC port
to a leaf switch, leaves to spines, and spines to a core tier when one spine tier does
not fit the switch radix. The same builder makes the front-end (north-south) fabric.
Every link is an edge of a :class:`networkx.MultiGraph` carrying its tier, speed
[Gb/s], lane rate [Gb/s], length [m], medium (copper or optical) and the module at each
of its ends; the bill of materials (switches per tier, links, transceivers by type,
power, capex, network racks) is counted from the graph's edges.

Conventions (documented in ``docs/facility.md``):

* Lanes. A NIC port and a switch port meet at the slower of their lane rates; a link
  uses ``min(NIC lanes, switch-port lanes)`` lanes, a switch port with more lanes is
  split (an 800G port of 8 x 100G carries two 4-lane 400G links), a NIC port with more
  lanes uses two links (a twin-port NIC module). A switch whose lanes would slow the
  NIC below its rate is not paired with it. Without lane data a faster switch port is
  split by speed (``port_gbps // link``).
* Leaf: ``down = floor(R * o / (1 + o))`` ports to NICs; each leaf gets
  ``ceil(used down ports / o)`` uplinks (a part-filled leaf buys only what it uses).
  Rail-optimised racks put NIC port ``q`` on the leaves of rail ``q mod rails``.
* Spines: the fewest that hold all uplinks, raised (by at most a set fraction) to a
  divisor of a full leaf's uplinks so each full leaf has the same number of links to
  every spine, as in NVIDIA's DGX SuperPOD designs; a part-filled leaf with fewer
  uplinks than spines links to spine 0 and the least-loaded others (every two leaves
  share a spine).
* Placement: a leaf stands in the compute rack holding the median of its endpoints when
  that rack type declares free switch rack units, else in a network rack at the end of
  its row; spines and cores stand in a central network row. Network racks are counted.
* Media: copper (DAC before ACC, by lane rate) where the link's length is within the
  cable's reach and the far device is at most ``copper_max_rack_distance`` positions
  away; optical otherwise. Per link class the two end modules have the same fibre and
  lane rate and both reach the link's length; the cheapest such pair of the chosen
  family (kind and fibre) wins. A switch-end module fills one cage (a 1.6T twin-port
  module carries two 800G links), a NIC-end module one NIC port.
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

from dcplan.errors import InputError, Problem, display_path
from dcplan.facility.assumptions import value
from dcplan.schema import Nic, Optic, OpticKind, Rack, Switch
from dcplan.yamlio import atomic_path

OPTICAL_KINDS = (OpticKind.pluggable, OpticKind.lpo, OpticKind.cpo, OpticKind.aoc)
COPPER_KINDS = (OpticKind.copper_dac, OpticKind.copper_acc)
MAX_TIERS = 3
FIBRES = ("single_mode", "multimode")


@dataclass(frozen=True)
class Layout:
    """Physical layout used for cable lengths and network racks.

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
    network_rack_units : int
        Switch rack units a network rack holds [U].
    leaf_to_spine_m, spine_to_core_m : float
        Lengths of switch-to-switch links to the central network row [m].
    """

    rack_pitch_m: float = field(default_factory=lambda: value("layout", "rack_pitch_m"))
    in_rack_cable_m: float = field(default_factory=lambda: value("layout", "in_rack_cable_m"))
    racks_per_row: int = field(default_factory=lambda: value("layout", "racks_per_row"))
    copper_max_rack_distance: int = field(
        default_factory=lambda: value("layout", "copper_max_rack_distance"))
    network_rack_units: int = field(
        default_factory=lambda: value("layout", "network_rack_units"))
    leaf_to_spine_m: float = field(default_factory=lambda: value("layout", "leaf_to_spine_m"))
    spine_to_core_m: float = field(default_factory=lambda: value("layout", "spine_to_core_m"))

    def row(self, rack: int) -> int:
        """Row of compute rack ``rack`` [index]."""
        return rack // self.racks_per_row

    def positions_apart(self, rack: int, place: tuple[str, int], n_racks: int | None = None
                        ) -> float:
        """Rack positions between compute rack ``rack`` and a switch at ``place``.

        ``place`` is ``("rack", r)`` (inside compute rack ``r``) or ``("row_end", w)``
        (the network rack one position past the last compute rack of row ``w``; a row
        holds ``racks_per_row`` racks, the last row what is left of ``n_racks``);
        infinite across rows.
        """
        kind, where = place
        if kind == "rack":
            if self.row(rack) != self.row(where):
                return math.inf
            return abs(rack - where)
        if self.row(rack) != where:
            return math.inf
        in_row = self.racks_per_row
        if n_racks is not None:
            in_row = max(1, min(in_row, n_racks - where * self.racks_per_row))
        return in_row - rack % self.racks_per_row

    def length_to(self, rack: int, place: tuple[str, int], n_racks: int | None = None
                  ) -> float:
        """Cable length from compute rack ``rack`` to a switch at ``place`` [m].

        ``|positions| * pitch + in-rack cable``; across rows ``leaf_to_spine_m``.
        """
        d = self.positions_apart(rack, place, n_racks)
        # across rows the cable runs through the trays to the other row, as far as a
        # leaf-to-spine run (its optics are chosen for that reach)
        return self.leaf_to_spine_m if math.isinf(d) else \
            d * self.rack_pitch_m + self.in_rack_cable_m

    def length_m(self, rack_a: int, rack_b: int) -> float:
        """Cable length between devices in compute racks ``rack_a`` and ``rack_b`` [m]."""
        return self.length_to(rack_a, ("rack", rack_b))


@dataclass
class FabricTiers:
    """Switch counts and ports of one fat tree.

    Attributes
    ----------
    leaf, spine, core : int
        Switches per tier.
    down_ports, up_ports : int
        Ports of a full leaf to endpoints and to spines.
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


# --- how NIC ports meet switch ports ----------------------------------------------------


def _err(message: str) -> InputError:
    return InputError(Problem("<network>", message))


#: Most switch links one NIC port is split into: a twin-port module (one 1.6T NIC port
#: as 2 x 800G links, one 800G port as 2 x 400G). A switch whose ports would need a
#: larger split is too slow for the NIC.
MAX_LINKS_PER_NIC_PORT = 2


@dataclass(frozen=True)
class Attachment:
    """How NIC ports of one speed meet the ports of one switch model.

    Attributes
    ----------
    nic_port_gbps : float
        Speed of one NIC port [Gb/s].
    link_gbps : float
        Speed of one link [Gb/s].
    links_per_nic : int
        Links one NIC port uses (2: a twin-port NIC module).
    radix : int
        Links one switch terminates [count].
    lane_gbps : float
        Lane rate of the links [Gb/s]; 0 when lanes are not modelled.
    lanes_per_link : int
        Lanes of one link (0 when not modelled).
    cage_gbps : float
        Capacity of one switch cage at this lane rate [Gb/s]: what one switch-end
        module carries.
    """

    nic_port_gbps: float
    link_gbps: float
    links_per_nic: int
    radix: int
    lane_gbps: float = 0.0
    lanes_per_link: int = 0
    cage_gbps: float = 0.0

    @property
    def links_per_cage(self) -> int:
        """Links one switch-end module carries [count]."""
        return max(1, int(round(self.cage_gbps / self.link_gbps)))


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
    """Logical ports of ``switch`` at ``link_gbps`` split by speed only [count]."""
    if link_gbps >= switch.port_gbps:
        return switch.ports
    return int(switch.ports * (switch.port_gbps // link_gbps))


def attachment(switch: Switch, nic_port_gbps: float, nic_lane_gbps: float | None
               ) -> Attachment:
    """How NIC ports of ``nic_port_gbps`` [Gb/s] attach to ``switch``.

    With lane rates on both sides: lane = the slower of the two, a link uses
    ``min(NIC lanes, switch-port lanes)`` lanes, a switch port is split into
    ``port lanes / link lanes`` links and a NIC port uses ``NIC lanes / link lanes``
    links. Without lane data: link = ``min(NIC port, switch port)`` and the switch port
    is split by speed.

    Raises
    ------
    InputError
        The switch's ports are too slow, its lanes would slow the NIC below its rate,
        or a NIC port would need more than :data:`MAX_LINKS_PER_NIC_PORT` links.
    """
    check_switch_speed(switch, nic_port_gbps)
    cage_legacy = switch.ports_per_cage * switch.port_gbps
    if not switch.lane_gbps or not nic_lane_gbps:
        link = min(nic_port_gbps, switch.port_gbps)
        return Attachment(nic_port_gbps, link, int(math.ceil(nic_port_gbps / link - 1e-9)),
                          logical_radix(switch, link), cage_gbps=cage_legacy)
    lane = min(switch.lane_gbps, nic_lane_gbps)
    nic_lanes = max(1, int(round(nic_port_gbps / nic_lane_gbps)))
    port_lanes = max(1, int(round(switch.port_gbps / switch.lane_gbps)))
    if nic_lanes * lane < nic_port_gbps - 1e-9:
        raise _err(f"switch '{switch.id}' runs {switch.lane_gbps:g} Gb/s lanes: the NIC's "
                   f"{nic_lanes} x {nic_lane_gbps:g} Gb/s lanes would link at only "
                   f"{nic_lanes * lane:g} of its {nic_port_gbps:g} Gb/s; choose a switch with "
                   f"{nic_lane_gbps:g} Gb/s lanes or faster (see 'dcplan catalog list "
                   "switches')")
    per_link = min(nic_lanes, port_lanes)
    links_per_nic = nic_lanes // per_link
    if nic_lanes % per_link or links_per_nic > MAX_LINKS_PER_NIC_PORT:
        raise _err(f"a {nic_port_gbps:g} Gb/s NIC port ({nic_lanes} lanes) cannot be split "
                   f"over '{switch.id}' ports of {port_lanes} lanes; choose a switch with "
                   "faster ports")
    return Attachment(nic_port_gbps, per_link * lane, links_per_nic,
                      switch.ports * (port_lanes // per_link), lane_gbps=lane,
                      lanes_per_link=per_link,
                      cage_gbps=switch.ports_per_cage * port_lanes * lane)


def choose_switch(catalog, nic_port_gbps: float, switch_id: str | None = None,
                  protocol: str | None = None, nic_lane_gbps: float | None = None,
                  protocols: list[str] | None = None) -> Switch:
    """Pick the switch model.

    ``switch_id`` if given, else among the non-CPO switches of an allowed protocol that
    can carry the NIC ports at their full rate, the one with the highest radix at the
    link speed (fewest tiers and boxes), then the lowest power per Gb/s, then the id.

    Parameters
    ----------
    catalog : Catalog
    nic_port_gbps : float
        NIC port speed [Gb/s].
    switch_id : str, optional
    protocol : str, optional
        Preferred protocol (front-end: ethernet).
    nic_lane_gbps : float, optional
        NIC lane rate [Gb/s].
    protocols : list of str, optional
        Protocols the NIC supports.
    """
    if switch_id:
        sw = catalog.get("switches", switch_id)
        if protocols and sw.protocol not in protocols:
            raise _err(f"switch '{sw.id}' is {sw.protocol}, but the NIC joins only "
                       f"{' or '.join(protocols)} fabrics; choose a {protocols[0]} switch")
        return sw
    cands = [s for s in catalog.switches.values() if not s.cpo]
    if protocols:
        cands = [s for s in cands if s.protocol in protocols] or cands
    if protocol:
        cands = [s for s in cands if s.protocol == protocol] or cands
    fit = []
    for s in cands:
        try:
            fit.append((attachment(s, nic_port_gbps, nic_lane_gbps), s))
        except InputError:
            continue
    if not fit:
        raise _err(f"no (non-CPO) switch in the switches catalog carries {nic_port_gbps:g} "
                   "Gb/s NIC ports at full rate; add one or pass a switch id")
    return sorted(fit, key=lambda t: (-t[0].radix, t[1].power_w / (t[1].ports * t[1].port_gbps),
                                      t[1].id))[0][1]


@dataclass(frozen=True)
class OpticFamily:
    """The optics a user chose: a kind and, optionally, a fibre.

    Attributes
    ----------
    kind : OpticKind
        pluggable, lpo, aoc or cpo.
    fibre : str or None
        Forced fibre; None: the cheapest fibre that reaches, per link class.
    requested : str
        Optic id asked for ('' for the default).
    cpo_id : str
        Optic entry pricing co-packaged ports ('' when none is catalogued).
    """

    kind: OpticKind
    fibre: str | None
    requested: str = ""
    cpo_id: str = ""


def optic_family(catalog, optic_id: str | None) -> OpticFamily:
    """The optic family of ``--optics`` (default: pluggables of any fibre).

    Raises
    ------
    InputError
        An unknown id, or a copper entry.
    """
    cpo = sorted((o for o in catalog.optics.values() if o.kind is OpticKind.cpo),
                 key=lambda o: o.id)
    if not optic_id:
        return OpticFamily(OpticKind.pluggable, None, "", cpo[0].id if cpo else "")
    optic = catalog.get("optics", optic_id)
    if optic.kind not in OPTICAL_KINDS:
        raise _err(f"optic '{optic_id}' is {optic.kind.value}; choose an optical module "
                   "(pluggable, lpo, cpo or aoc) for --optics")
    return OpticFamily(optic.kind, optic.fibre, optic.id,
                       optic.id if optic.kind is OpticKind.cpo else (cpo[0].id if cpo else ""))


def choose_optic(catalog, optic_id: str | None, switch: Switch) -> Optic:
    """One representative optic: ``optic_id``, else the cheapest pluggable at the port speed.

    For callers that want a single module id; the network itself picks modules per
    link class.
    """
    if optic_id:
        fam = optic_family(catalog, optic_id)
        return catalog.get("optics", fam.requested)
    optical = [o for o in catalog.optics.values() if o.kind in OPTICAL_KINDS]
    for pool in (
        [o for o in optical if o.kind is OpticKind.pluggable and o.gbps == switch.port_gbps],
        [o for o in optical if o.kind is OpticKind.pluggable and o.gbps >= switch.port_gbps],
        [o for o in optical if o.kind is not OpticKind.cpo],
    ):
        if pool:
            return sorted(pool, key=lambda o: (o.gbps, o.capex_usd, o.power_w, o.id))[0]
    raise _err("no optical module in the optics catalog; add a pluggable optic")


# --- fat tree: counts (shared with the step-function view) ----------------------------


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


def uplinks_for(used_down: int, oversubscription: float, up_full: int) -> int:
    """Uplinks of a leaf with ``used_down`` endpoint ports [count].

    ``ceil(used / o)``, at most a full leaf's ``up_full``.
    """
    return min(up_full, max(1, int(math.ceil(used_down / oversubscription - 1e-9))))


def stripe_uplinks(uplinks: list[int], spines: int, ports: int
                   ) -> list[dict[int, int]] | None:
    """Spread each leaf's uplinks over ``spines`` spines of ``ports`` leaf-facing ports.

    A leaf with at least as many uplinks as spines gets ``uplinks // spines`` links to
    every spine and the rest to the least-loaded spines; a leaf with fewer (the
    part-filled last leaf of a rail) gets one link to spine 0 and one to each of the
    least-loaded others, so every two leaves share a spine (two hops between any
    endpoints) without buying more uplinks than its downlinks need.

    Returns
    -------
    list of dict or None
        Per leaf {spine index -> links}; None when a spine would need more than
        ``ports`` ports.
    """
    load = [0] * spines
    out: list[dict[int, int]] = []
    for u in uplinks:
        links: dict[int, int] = {}
        if u >= spines:
            base, extra = divmod(u, spines)
            links = dict.fromkeys(range(spines), base)
            if extra:
                for sp in sorted(range(spines), key=lambda x: (load[x], x))[:extra]:
                    links[sp] += 1
        else:
            links[0] = 1
            for sp in sorted(range(1, spines), key=lambda x: (load[x], x))[:u - 1]:
                links[sp] = 1
        for sp, k in links.items():
            load[sp] += k
        out.append(links)
    return None if load and max(load) > ports else out


def spine_count(uplinks: list[int], ports: int, up_full: int
                ) -> tuple[int, list[dict[int, int]]]:
    """Spines for leaves with ``uplinks``, each spine with ``ports`` leaf-facing ports.

    The fewest spines that hold all uplinks, ``S0 = ceil(uplinks / ports)``, raised to
    the smallest divisor of ``up_full`` (a full leaf's uplinks) if that costs at most
    ``spine_balance_max_extra_frac`` more spines (assumptions file), so a full leaf has
    the same number of links to every spine; one more while the striping of
    :func:`stripe_uplinks` would overfill a spine.

    Returns
    -------
    (int, list of dict)
        Spines, and each leaf's links per spine.
    """
    need = max(1, int(math.ceil(sum(uplinks) / ports - 1e-9)))
    limit = need * (1.0 + value("network", "spine_balance_max_extra_frac")) + 1e-9
    divisors = [d for d in range(need, up_full + 1) if up_full % d == 0 and d <= limit]
    spines = divisors[0] if divisors else need
    while True:
        stripes = stripe_uplinks(uplinks, spines, ports)
        if stripes is not None:
            return spines, stripes
        spines += 1


@dataclass(frozen=True)
class TreeCounts:
    """Switch and link counts of one fat tree over leaves with known loads.

    Attributes
    ----------
    leaf, spine, core : int
    leaf_uplinks : tuple of int
        Uplinks of each leaf.
    pods : tuple of (int, int, int)
        (first leaf, end leaf, spines) per pod (two tiers: one pod).
    core_links : int
        Spine-core links.
    stripes : tuple of dict
        Per leaf {spine index within its pod -> links}.
    """

    leaf: int
    spine: int
    core: int
    leaf_uplinks: tuple[int, ...]
    pods: tuple[tuple[int, int, int], ...]
    core_links: int
    stripes: tuple[dict[int, int], ...] = ()

    @property
    def leaf_spine_links(self) -> int:
        """Leaf-spine links [count]."""
        return sum(self.leaf_uplinks)


def tree_counts(loads: list[int], radix: int, oversubscription: float, n: int) -> TreeCounts:
    """Counts of a fat tree whose leaves carry ``loads`` endpoints (``n`` in all).

    One switch when ``n <= radix``; two tiers while leaves <= radix; otherwise pods of
    ``radix // 2`` leaves, each pod with its spines (1:1 down/up), and cores for the
    spines' uplinks.

    Raises
    ------
    InputError
        More than three tiers would be needed.
    """
    if n == 0:
        return TreeCounts(0, 0, 0, (), (), 0)
    if n <= radix:
        return TreeCounts(1, 0, 0, (0,), (), 0)
    _, up_full = leaf_ports(radix, oversubscription)
    ups = [uplinks_for(d, oversubscription, up_full) for d in loads]
    if len(loads) <= radix:
        s, stripes = spine_count(ups, radix, up_full)
        return TreeCounts(len(loads), s, 0, tuple(ups), ((0, len(loads), s),), 0,
                          tuple(stripes))
    pod_leaves = radix // 2
    n_pods = int(math.ceil(len(loads) / pod_leaves))
    if n_pods > radix:
        raise _err(f"{n:,} endpoints need more than {MAX_TIERS} switch tiers with a "
                   f"{radix}-port switch; choose a larger switch or fewer racks")
    pods, all_stripes, spines = [], [], 0
    for p in range(n_pods):
        lo, hi = p * pod_leaves, min(len(loads), (p + 1) * pod_leaves)
        s, stripes = spine_count(ups[lo:hi], radix // 2, up_full)
        pods.append((lo, hi, s))
        all_stripes += stripes
        spines += s
    links = sum(ups)
    cores = int(math.ceil(links / radix - 1e-9))
    return TreeCounts(len(loads), spines, cores, tuple(ups), tuple(pods), links,
                      tuple(all_stripes))


def max_endpoints(radix: int, oversubscription: float) -> int:
    """Most endpoints a three-tier fat tree of ``radix``-port switches holds [count]."""
    down, _ = leaf_ports(radix, oversubscription)
    return radix * (radix // 2) * down


# --- graph building -------------------------------------------------------------------


def _switch_link(g: nx.MultiGraph, a: str, b: str, tier: str, gbps: float, k: int,
                 length_m: float) -> None:
    """Add ``k`` parallel switch-to-switch links (optical: they run to the network row).

    In a lean graph (``g.graph["lean"]`` is a dict) they are summed there instead of
    added as edges: per link class ``(tier, gbps, length_m)`` the links and the links
    at each end's switch, which is all the bill of materials counts (same counts, a
    fraction of the memory and time for large fabrics).
    """
    lean = g.graph.get("lean")
    if lean is not None:
        _lean_links(lean, tier, gbps, length_m, {a: k}, {b: k})
    else:
        g.add_edge(a, b, tier=tier, gbps=gbps, length_m=length_m, links=k)


def _lean_links(lean: dict, tier: str, gbps: float, length_m: float, ends_a: dict,
                ends_b: dict) -> None:
    """Add switch-to-switch links to a lean graph's sums: links at each end's switch."""
    if not sum(ends_a.values()):
        return
    entry = lean.get((tier, gbps, length_m))
    if entry is None:
        entry = lean[tier, gbps, length_m] = [0, Counter(), Counter()]
    entry[0] += sum(ends_a.values())
    entry[1].update(ends_a)
    entry[2].update(ends_b)


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


@dataclass
class _Space:
    """Switch rack units used in compute racks and at row ends."""

    free_per_rack: int
    in_rack: Counter = field(default_factory=Counter)
    row_end: Counter = field(default_factory=Counter)
    central: int = 0

    def place_leaf(self, rack: int, units: int, layout: Layout) -> tuple[str, int]:
        if self.free_per_rack >= units and self.in_rack[rack] + units <= self.free_per_rack:
            self.in_rack[rack] += units
            return ("rack", rack)
        row = layout.row(rack)
        self.row_end[row] += units
        return ("row_end", row)

    def network_racks(self, layout: Layout) -> int:
        per = max(1, layout.network_rack_units)
        return (sum(int(math.ceil(u / per)) for u in self.row_end.values() if u)
                + int(math.ceil(self.central / per)))


def _groups(runs: list[_Run], radix: int, oversubscription: float,
            rail_optimized: bool) -> tuple[list[list[_Run]], int, int]:
    n = sum(r.count for r in runs)
    if n <= radix:
        return [runs], radix, 0
    down, up = leaf_ports(radix, oversubscription)
    if rail_optimized:
        by_rail: dict[int, list[_Run]] = defaultdict(list)
        for run in runs:
            by_rail[run.rail].append(run)
        return [grp for rail in sorted(by_rail) for grp in _chunk(by_rail[rail], down)], \
            down, up
    return _chunk(runs, down), down, up


def _fat_tree(g: nx.MultiGraph, runs: list[_Run], radix: int, oversubscription: float,
              prefix: str, gbps: float, layout: Layout, rail_optimized: bool,
              endpoint_kind: str, space: _Space, units: int) -> FabricTiers:
    """Add a fat tree over the endpoints ``runs`` (rack-major order) to ``g``.

    With named runs every endpoint is its own node and link; with counted runs the
    endpoints of one rack are one node ``{prefix}r{rack}`` and their links to a leaf
    one edge with a ``links`` multiplicity (same counts, far fewer objects).
    """
    tiers = FabricTiers(radix=radix)
    n = sum(r.count for r in runs)
    if n == 0:
        return tiers
    lean = g.graph.get("lean")
    groups, down, up = _groups(runs, radix, oversubscription, rail_optimized)
    n_racks = max(r.rack for r in runs) + 1
    counts = tree_counts([sum(r.count for r in grp) for grp in groups], radix,
                         oversubscription, n)
    tiers.down_ports, tiers.up_ports = down, up
    leaves = []
    for i, grp in enumerate(groups):
        place = space.place_leaf(_median_rack(grp), units, layout)
        name = f"{prefix}leaf{i}"
        g.add_node(name, kind="switch", tier="leaf", fabric=prefix, place=f"{place[0]}:"
                   f"{place[1]}", rack=place[1] if place[0] == "rack" else -1)
        leaves.append(name)
        bundle: Counter = Counter()
        for run in grp:
            if run.names is not None:
                for node in run.names:
                    g.add_edge(node, name, tier=f"{prefix}nic_leaf", gbps=gbps,
                               length_m=layout.length_to(run.rack, place, n_racks),
                               apart=layout.positions_apart(run.rack, place, n_racks))
            else:
                bundle[run.rack] += run.count
        for r, k in bundle.items():
            node = f"{prefix}r{r}"
            if node not in g:
                g.add_node(node, kind=endpoint_kind, rack=r)
            g.add_edge(node, name, tier=f"{prefix}nic_leaf", gbps=gbps,
                       length_m=layout.length_to(r, place, n_racks),
                       apart=layout.positions_apart(r, place, n_racks), links=k)
    tiers.leaf = counts.leaf
    if counts.spine == 0:
        return tiers
    spine_names: list[tuple[str, int]] = []
    for p, (lo, hi, s) in enumerate(counts.pods):
        names = [f"{prefix}spine{s_i}" if counts.core == 0 else f"{prefix}spine{p}_{s_i}"
                 for s_i in range(s)]
        for nm in names:
            g.add_node(nm, kind="switch", tier="spine", fabric=prefix, pod=p,
                       place="central:0", rack=-1)
            space.central += units
        # each leaf's uplinks striped over the pod's spines (stripe_uplinks)
        if lean is not None:  # the sums at each end are all a lean graph keeps
            at_spine = [0] * s
            for i in range(lo, hi):
                for sp, k in counts.stripes[i].items():
                    at_spine[sp] += k
            _lean_links(lean, f"{prefix}leaf_spine", gbps, layout.leaf_to_spine_m,
                        {leaves[i]: sum(counts.stripes[i].values()) for i in range(lo, hi)},
                        dict(zip(names, at_spine, strict=True)))
            spine_names += list(zip(names, at_spine, strict=True))
            continue
        bundle: Counter = Counter()
        for i in range(lo, hi):
            for sp, k in counts.stripes[i].items():
                bundle[(leaves[i], names[sp])] += k
        for (a, b), k in bundle.items():
            _switch_link(g, a, b, f"{prefix}leaf_spine", gbps, k, layout.leaf_to_spine_m)
        load = Counter()
        for (_, b), k in bundle.items():
            load[b] += k
        spine_names += [(nm, load[nm]) for nm in names]
    tiers.spine = counts.spine
    if counts.core == 0:
        return tiers
    cores = counts.core
    for c_i in range(cores):
        g.add_node(f"{prefix}core{c_i}", kind="switch", tier="core", fabric=prefix,
                   place="central:0", rack=-1)
        space.central += units
    if lean is not None:
        # each spine: as many uplinks as leaf links (1:1), dealt to the cores in turn
        total = sum(n_up for _, n_up in spine_names)
        per, rest = divmod(total, cores)
        _lean_links(lean, f"{prefix}spine_core", gbps, layout.spine_to_core_m,
                    {nm: n_up for nm, n_up in spine_names if n_up},
                    {f"{prefix}core{c}": per + (c < rest) for c in range(cores)
                     if per + (c < rest)})
        tiers.core = cores
        return tiers
    counter = 0
    bundle = Counter()
    for nm, n_up in spine_names:  # each spine: as many uplinks as leaf links (1:1)
        for _ in range(n_up):
            bundle[(nm, f"{prefix}core{counter % cores}")] += 1
            counter += 1
    for (a, b), k in bundle.items():
        _switch_link(g, a, b, f"{prefix}spine_core", gbps, k, layout.spine_to_core_m)
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


def rack_nics(rack: Rack) -> tuple[int, float]:
    """(NICs per rack, Gb/s per NIC) of the scale-out back-end."""
    n_nic = int(math.ceil(rack.accelerators_per_rack * rack.scaleout_nics_per_accelerator
                          - 1e-9))
    gbps = rack.scaleout_gbps_per_accelerator * rack.accelerators_per_rack / n_nic
    return n_nic, gbps


_rack_nics = rack_nics


@dataclass(frozen=True)
class FabricSetup:
    """Switch, attachment and per-rack ports of one fabric of one rack type.

    Attributes
    ----------
    switch : Switch
    att : Attachment
    ports_per_rack : int
        Links per rack into the fabric (endpoints) [count].
    rails : int
        Rails (1: not rail-optimised).
    rail_optimized : bool
        Whether the rack type is rail-optimised (applies above one switch).
    oversubscription : float
    """

    switch: Switch
    att: Attachment
    ports_per_rack: int
    rails: int
    rail_optimized: bool
    oversubscription: float


def fabric_setups(catalog, rack_id: str, oversubscription: float = 1.0,
                  switch_id: str | None = None, frontend_switch_id: str | None = None
                  ) -> tuple[Rack, Nic, FabricSetup, FabricSetup | None]:
    """Rack, NIC, and the back-end and front-end fabric setups of ``rack_id``.

    Raises
    ------
    InputError
        Unknown ids, or no switch that can carry the NIC ports.
    """
    rack: Rack = catalog.get("racks", rack_id)
    nic: Nic = catalog.get("nics", rack.nic)
    n_nic, nic_gbps = rack_nics(rack)
    switch = choose_switch(catalog, nic_gbps, switch_id, nic_lane_gbps=nic.lane_gbps,
                           protocols=nic.protocols)
    att = attachment(switch, nic_gbps, nic.lane_gbps)
    rails = rack.scaleout_rails or value("network", "default_rails")
    be = FabricSetup(switch, att, n_nic * att.links_per_nic, rails, rack.rail_optimized,
                     oversubscription)
    fe_port = rack.frontend_port_gbps or value("network", "frontend_port_gbps")
    fe_lane = value("network", "frontend_lane_gbps")
    fe = None
    if rack.frontend_gbps_per_rack > 0:
        try:
            fe_switch = choose_switch(catalog, fe_port, frontend_switch_id,
                                      protocol="ethernet", nic_lane_gbps=fe_lane)
            fe_att = attachment(fe_switch, fe_port, fe_lane)
        except InputError as exc:
            if not rack.frontend_port_gbps:
                raise
            # The rack entry chose the port speed: name it, so the fix is found.
            why = ("; ".join(p.message for p in exc.problems) if frontend_switch_id
                   else "no non-CPO Ethernet switch of the switches catalog carries them "
                        "at full rate")
            raise InputError(Problem(
                display_path(catalog.files.get("racks", "racks")),
                f"front-end ports of {fe_port:g} Gb/s: {why}; set frontend_port_gbps to "
                "a port speed a catalog switch carries (e.g. 200 or 400) or add such a "
                "switch to the switches catalog",
                entry=rack.id, field="frontend_port_gbps",
                line=catalog.field_lines.get(("racks", rack.id, "frontend_port_gbps")))
            ) from exc
        per_rack = int(math.ceil(rack.frontend_gbps_per_rack / fe_port - 1e-9)) \
            * fe_att.links_per_nic
        fe = FabricSetup(fe_switch, fe_att, per_rack, 1, False,
                         value("network", "frontend_oversubscription"))
    return rack, nic, be, fe


def _rail_ports(per_rack: int, rails: int) -> list[int]:
    """Ports of one rack on each rail (port q on rail q mod rails)."""
    return [len(range(r, per_rack, rails)) for r in range(min(rails, per_rack))]


def leaf_loads(setup: FabricSetup, n_racks: int) -> list[int]:
    """Endpoints on each leaf of ``n_racks`` racks (the leaf order of the graph)."""
    n = n_racks * setup.ports_per_rack
    radix = setup.att.radix
    if n <= radix:
        return [n]
    down, _ = leaf_ports(radix, setup.oversubscription)
    if setup.rail_optimized:
        out = []
        for per in _rail_ports(setup.ports_per_rack, setup.rails):
            total = per * n_racks
            out += [down] * (total // down) + ([total % down] if total % down else [])
        return out
    return [down] * (n // down) + ([n % down] if n % down else [])


def leaf_count(setup: FabricSetup, n_racks: int) -> int:
    """Leaves of ``n_racks`` racks [count].

    ``sum over rails of ceil(racks * ports on the rail / down)``; one leaf when every
    endpoint fits one switch.
    """
    n = n_racks * setup.ports_per_rack
    if n <= setup.att.radix:
        return 1 if n else 0
    down, _ = leaf_ports(setup.att.radix, setup.oversubscription)
    if setup.rail_optimized:
        return sum(-(-per * n_racks // down)
                   for per in _rail_ports(setup.ports_per_rack, setup.rails))
    return -(-n // down)


def check_fabric_size(setup: FabricSetup, n_racks: int, label: str = "back-end") -> None:
    """Raise at once if ``n_racks`` racks need more than three tiers.

    Cheap: counts leaves from the per-rail loads without building anything.

    Raises
    ------
    InputError
        Naming the largest rack count that fits.
    """
    radix = setup.att.radix
    leaves = leaf_count(setup, n_racks)
    if leaves <= radix or -(-leaves // (radix // 2)) <= radix:
        return
    lo, hi = 1, n_racks
    while lo < hi:  # largest rack count whose leaves fit radix pods
        mid = (lo + hi + 1) // 2
        if -(-leaf_count(setup, mid) // (radix // 2)) <= radix:
            lo = mid
        else:
            hi = mid - 1
    raise _err(f"{n_racks:,} racks need {n_racks * setup.ports_per_rack:,} {label} ports: "
               f"more than a {MAX_TIERS}-tier fat tree of {radix}-port '{setup.switch.id}' "
               f"switches holds ({max_endpoints(radix, setup.oversubscription):,} ports); "
               f"use at most {lo:,} racks or a larger switch")


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
        Optic family for optical links, named by one of its entries
        (``pluggable_800g``: single-mode DSP pluggables; ``lpo_800g``; ``cpo``:
        co-packaged switch ends); default: DSP pluggables of the cheapest fibre that
        reaches each link class.
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

    Raises
    ------
    InputError
        Bad ids or sizes; a fabric of more than three tiers (refused before building).
    """
    if n_racks < 1 or int(n_racks) != n_racks:
        raise _err(f"--racks must be a whole number >= 1 (got {n_racks})")
    n_racks = int(n_racks)
    layout = layout or Layout()
    family = optic_family(catalog, optics)
    rack, nic, be_setup, fe_setup = fabric_setups(catalog, rack_id, oversubscription,
                                                  switch_id, frontend_switch_id)
    check_fabric_size(be_setup, n_racks)
    if fe_setup is not None:
        check_fabric_size(fe_setup, n_racks, "front-end")
    switch, att = be_setup.switch, be_setup.att
    n_nic = int(be_setup.ports_per_rack / att.links_per_nic)
    per_rack_ports = be_setup.ports_per_rack
    rails = be_setup.rails
    link = att.link_gbps

    detail = keep_graph if detail is None else detail
    if with_accelerators:
        detail = True
    g = nx.MultiGraph(name=f"{n_racks} x {rack_id}")
    if not keep_graph:
        g.graph["lean"] = {}
    rail_opt = rack.rail_optimized and n_racks * per_rack_ports > att.radix
    space = _Space(rack.free_switch_rack_units)
    runs: list[_Run] = []
    links_per_nic = att.links_per_nic
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
                        g.add_node(port, kind="nic_port", rack=r, nic_node=nic_node)
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
                g.add_node(f"r{r}/acc{i}", kind="accelerator", rack=r)
            for i in range(a):
                # accelerator i <-> NIC(s) proportionally (k NICs per accelerator or
                # one NIC per 1/k accelerators)
                js = {int(i * n_nic / a)} | {j for j in range(n_nic) if int(j * a / n_nic) == i}
                for j in js:
                    g.add_edge(f"r{r}/acc{i}", f"r{r}/nic{j}", tier="internal",
                               gbps=att.nic_port_gbps, length_m=0.0)
    be = _fat_tree(g, runs, att.radix, oversubscription, "", link, layout, rail_opt, "nic",
                   space, switch.rack_units)
    n_endpoints = n_racks * per_rack_ports

    # front-end
    fe_tiers = FabricTiers()
    fe_switch = fe_setup.switch if fe_setup is not None else None
    if fe_setup is not None:
        fe_runs = []
        for r in range(n_racks):
            names = None
            if detail:
                names = [f"r{r}/fe{j}" for j in range(fe_setup.ports_per_rack)]
                for node in names:
                    g.add_node(node, kind="frontend_port", rack=r)
            fe_runs.append(_Run(r, 0, fe_setup.ports_per_rack, names))
        fe_tiers = _fat_tree(g, fe_runs, fe_setup.att.radix, fe_setup.oversubscription, "fe_",
                             fe_setup.att.link_gbps, layout, False, "frontend_port", space,
                             fe_switch.rack_units)

    result = _count(catalog, g, rack, nic, n_racks, n_nic, be_setup, fe_setup, family,
                    be, fe_tiers, n_endpoints, layout)
    result.network_rack_positions = space.network_racks(layout)
    if keep_graph:
        result.graph = g
    return result


# --- media and modules ----------------------------------------------------------------


@dataclass(frozen=True)
class _End:
    """One end of a link class: a switch of a model, or a NIC/front-end port."""

    switch: Switch | None
    port_gbps: float  # NIC port speed (NIC ends) or cage capacity (switch ends) [Gb/s]
    cpo: bool


def _fits(o: Optic, gbps: float, lane: float, length: float) -> bool:
    return (abs(o.gbps - gbps) < 1e-9 and (not lane or o.lane_gbps is None
                                           or abs(o.lane_gbps - lane) < 1e-9)
            and o.reach_m >= length - 1e-9)


def _same_fibre(a: Optic, b: Optic) -> bool:
    return a.fibre is None or b.fibre is None or a.fibre == b.fibre


def _end_options(catalog, end: _End, family: OpticFamily, lane: float, length: float,
                 nic_end: bool) -> list[Optic]:
    """Modules that can sit at ``end`` of a link of this lane rate and length."""
    if end.cpo:
        o = catalog.get("optics", family.cpo_id) if family.cpo_id else None
        return [o] if o is not None and o.reach_m >= length - 1e-9 else []
    optics = [o for o in catalog.optics.values()
              if o.kind in OPTICAL_KINDS and o.kind is not OpticKind.cpo
              and _fits(o, end.port_gbps, lane, length)]
    kind = OpticKind.pluggable if family.kind is OpticKind.cpo else family.kind
    same = [o for o in optics if o.kind is kind]
    if same or not nic_end:
        return same
    return [o for o in optics if o.kind is OpticKind.pluggable]


@dataclass(frozen=True)
class FibreFallback:
    """Links whose requested fibre has no module that reaches them: what was used."""

    fibre: str
    lane_gbps: float
    used: str

    def note(self, lengths) -> str:
        """One note for every link length [m] that fell back."""
        lo, hi = min(lengths), max(lengths)
        span = f"{lo:g} m" if lo == hi else f"{lo:g}-{hi:g} m ({len(set(lengths))} lengths)"
        return (f"no {self.fibre.replace('_', '-')} modules reach the links of {span} at "
                f"{self.lane_gbps:g}G lanes; {self.used.replace('_', '-')} fibre used there")


def _pick_pair(catalog, a: _End, b: _End, family: OpticFamily, lane: float, length: float,
               link_gbps: float, b_is_nic: bool) -> tuple[Optic, Optic, str]:
    """The cheapest compatible (module at a, module at b) for one link class.

    Both ends: same fibre and lane rate, both reach ``length``; the family's fibre
    first. Returns the pair and a note: '' when the family was honoured, a text when
    another kind of module was used, a :class:`FibreFallback` when another fibre was
    (the caller gathers those of every length into one note).

    Raises
    ------
    InputError
        No compatible pair in the optics catalog.
    """
    note = ""
    opts_a = _end_options(catalog, a, family, lane, length, False)
    if not opts_a and not a.cpo and family.kind is not OpticKind.pluggable:
        fallback = OpticFamily(OpticKind.pluggable, family.fibre, family.requested,
                               family.cpo_id)
        opts_a = _end_options(catalog, a, fallback, lane, length, False)
        if opts_a:
            note = (f"no {family.kind.value} module fits a {a.port_gbps:g}G cage at "
                    f"{lane:g}G lanes; pluggables used there")
    opts_b = _end_options(catalog, b, family, lane, length, b_is_nic)
    if not opts_b and not b.cpo:
        opts_b = _end_options(catalog, b, OpticFamily(OpticKind.pluggable, None), lane,
                              length, b_is_nic)
    per_a = max(1, round(a.port_gbps / link_gbps))
    per_b = max(1, round(b.port_gbps / link_gbps)) if not b_is_nic else \
        max(1, round(b.port_gbps / link_gbps))

    def best(fibres):
        pairs = [(x, y) for x in opts_a for y in opts_b if _same_fibre(x, y)
                 and (fibres is None or (x.fibre in fibres and y.fibre in (*fibres, None)))]
        if not pairs:
            return None
        return min(pairs, key=lambda p: (p[0].capex_usd / per_a + p[1].capex_usd / per_b,
                                         p[0].power_w / per_a + p[1].power_w / per_b,
                                         p[0].id, p[1].id))

    pair = best((family.fibre,)) if family.fibre else None
    if pair is None:
        pair = best(None)
        if pair is not None and family.fibre:
            note = FibreFallback(family.fibre, lane, pair[0].fibre or "other")
    if pair is None:
        raise _err(f"no compatible pair of optical modules for {link_gbps:g} Gb/s links of "
                   f"{length:g} m at {lane:g} Gb/s lanes (switch cage {a.port_gbps:g} Gb/s, "
                   f"far end {b.port_gbps:g} Gb/s); add modules of the same fibre and lane "
                   "rate that reach this far to the optics catalog")
    return pair[0], pair[1], note


def _copper_for(catalog, gbps: float, lane: float, length_m: float) -> Optic | None:
    pool = [o for o in catalog.optics.values()
            if o.kind in COPPER_KINDS and o.gbps >= gbps - 1e-9 and o.reach_m >= length_m
            and (not lane or o.lane_gbps is None or abs(o.lane_gbps - lane) < 1e-9)]
    if not pool:
        return None
    # passive DAC before active ACC, then the cheapest
    return sorted(pool, key=lambda o: (o.kind is not OpticKind.copper_dac, o.capex_usd,
                                       o.power_w, o.id))[0]


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
        for key in ("length_m", "apart"):
            if math.isinf(data.get(key, 0.0)):
                data[key] = -1.0  # GraphML has no infinity: -1 = not in the same row
        ends = data.pop("ends", None)
        if ends:
            data["end_modules"] = " | ".join(f"{k}={v}" for k, v in ends.items())
    for _, data in g.nodes(data=True):
        for k, v in list(data.items()):
            if v is None:
                del data[k]
    with atomic_path(path) as tmp:
        nx.write_graphml(g, tmp)
