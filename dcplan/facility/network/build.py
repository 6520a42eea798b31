"""The driver: :func:`network` builds both fabrics of a rack type and counts them."""

from __future__ import annotations

import networkx as nx

from dcplan.facility.network.counting import NetworkResult, _count
from dcplan.facility.network.parts import _err, fabric_setups, optic_family
from dcplan.facility.network.topology import (
    FabricTiers,
    Layout,
    _fat_tree,
    _Run,
    _Space,
    check_fabric_size,
)
from dcplan.scenario.schema import DEFAULT_OVERSUBSCRIPTION


def network(catalog, rack_id: str, n_racks: int, optics: str | None = None,
            oversubscription: float = DEFAULT_OVERSUBSCRIPTION, switch_id: str | None = None,
            frontend_switch_id: str | None = None, layout: Layout | None = None,
            with_accelerators: bool = False, keep_graph: bool = True,
            detail: bool | None = None) -> NetworkResult:
    """Build the back-end and front-end fabrics of ``n_racks`` racks of ``rack_id``.

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs.
    rack_id : str
        Rack type (catalog ``racks``).
    n_racks : int
        Racks of this type [count], >= 1.
    optics : str, optional
        Optic family for optical links, named by one of its entries
        (``pluggable_800g``: single-mode DSP pluggables; ``lpo_800g``; ``cpo``:
        co-packaged switch ends); default: DSP pluggables of the cheapest fibre that
        reaches each link class.
    oversubscription : float
        Leaf down/up bandwidth ratio of the back-end [-], >= 1 (1 = non-blocking).
    switch_id, frontend_switch_id : str, optional
        Switch models; default :func:`choose_switch`.
    layout : Layout, optional
        Rack pitch, rows and cable runs (default: the assumptions file).
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
