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

Modules, by job:

* :mod:`~dcplan.facility.network.parts`: choice of parts: the switch model, how NIC
  ports attach to it, the fabric setups of a rack type, the optics or copper of a link
  class.
* :mod:`~dcplan.facility.network.topology`: the layout, the fat-tree counts (shared
  with the step-function view) and the graph of one fabric.
* :mod:`~dcplan.facility.network.counting`: :class:`NetworkResult`, counted from the
  graph's links.
* :mod:`~dcplan.facility.network.build`: the driver, :func:`network`.
* :mod:`~dcplan.facility.network.export`: GraphML output.
"""

from __future__ import annotations

from dcplan.facility.network.build import network
from dcplan.facility.network.counting import NetworkResult
from dcplan.facility.network.export import write_graphml
from dcplan.facility.network.parts import OPTICAL_KINDS, FabricSetup, fabric_setups
from dcplan.facility.network.topology import (
    Layout,
    leaf_count,
    leaf_loads,
    leaf_ports,
    spine_count,
    tree_counts,
)

__all__ = [
    "OPTICAL_KINDS",
    "FabricSetup",
    "Layout",
    "NetworkResult",
    "fabric_setups",
    "leaf_count",
    "leaf_loads",
    "leaf_ports",
    "network",
    "spine_count",
    "tree_counts",
    "write_graphml",
]
