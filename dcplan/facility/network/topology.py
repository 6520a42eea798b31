"""Fabric topology: the layout, fat-tree counts and the graph of one fabric.

The physical :class:`Layout` (cable lengths, rows, network racks), the fat-tree rules
(leaf ports, uplinks, spines striped over the leaves, pods and cores:
:func:`tree_counts`, shared with the step-function view of
:mod:`dcplan.facility.steps`), the leaf loads of a rack count, and :func:`_fat_tree`,
which adds one fabric's switches and links to the network graph.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import networkx as nx

from dcplan.facility.assumptions import value
from dcplan.facility.network.parts import FabricSetup, _err

MAX_TIERS = 3


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
        """Row of compute rack ``rack`` [index].

        Parameters
        ----------
        rack : int
            Compute rack [index from 0].

        Returns
        -------
        int
            Its row [index from 0].
        """
        return rack // self.racks_per_row

    def positions_apart(self, rack: int, place: tuple[str, int], n_racks: int | None = None
                        ) -> float:
        """Rack positions between compute rack ``rack`` and a switch at ``place``.

        ``place`` is ``("rack", r)`` (inside compute rack ``r``) or ``("row_end", w)``
        (the network rack one position past the last compute rack of row ``w``; a row
        holds ``racks_per_row`` racks, the last row what is left of ``n_racks``);
        infinite across rows.

        Parameters
        ----------
        rack : int
            Compute rack [index from 0].
        place : (str, int)
            ``("rack", r)``: inside compute rack ``r``; ``("row_end", w)``: the network rack
            at the end of row ``w`` [kind, index from 0].
        n_racks : int, optional
            Compute racks in all [racks], to size the last row (None: full rows).

        Returns
        -------
        float
            Rack positions apart [positions]; ``inf`` across rows.
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

        Parameters
        ----------
        rack : int
            Compute rack [index from 0].
        place : (str, int)
            ``("rack", r)``: inside compute rack ``r``; ``("row_end", w)``: the network rack
            at the end of row ``w`` [kind, index from 0].
        n_racks : int, optional
            Compute racks in all [racks], to size the last row (None: full rows).

        Returns
        -------
        float
            Cable length [m].
        """
        d = self.positions_apart(rack, place, n_racks)
        # across rows the cable runs through the trays to the other row, as far as a
        # leaf-to-spine run (its optics are chosen for that reach)
        return self.leaf_to_spine_m if math.isinf(d) else \
            d * self.rack_pitch_m + self.in_rack_cable_m

    def length_m(self, rack_a: int, rack_b: int) -> float:
        """Cable length between devices in compute racks ``rack_a`` and ``rack_b`` [m].

        Parameters
        ----------
        rack_a, rack_b : int
            Compute racks [index from 0].

        Returns
        -------
        float
            Cable length [m].
        """
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


# --- fat tree: counts (shared with the step-function view) ----------------------------


def leaf_ports(radix: int, oversubscription: float) -> tuple[int, int]:
    """Split a leaf's ``radix`` into (down, up) ports for ``oversubscription`` = down/up.

    Parameters
    ----------
    radix : int
        Logical ports of the leaf switch [count].
    oversubscription : float
        Leaf oversubscription, down- over uplink ports [-] (>= 1; 1 = non-blocking).

    Returns
    -------
    (int, int)
        Endpoint (down) and spine (up) ports of a full leaf [count].

    Raises
    ------
    InputError
        An oversubscription below 1, or a radix that cannot be split at it.
    """
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

    Parameters
    ----------
    used_down : int
        Endpoint ports in use on the leaf [count].
    oversubscription : float
        Leaf oversubscription, down- over uplink ports [-] (>= 1; 1 = non-blocking).
    up_full : int
        Uplinks of a full leaf [count].

    Returns
    -------
    int
        Uplinks, at least 1 [count].
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

    Parameters
    ----------
    uplinks : list of int
        Uplinks of each leaf [count].
    spines : int
        Spines [count].
    ports : int
        Leaf-facing ports of a spine [count].

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

    Parameters
    ----------
    uplinks : list of int
        Uplinks of each leaf [count].
    ports : int
        Leaf-facing ports of a spine [count].
    up_full : int
        Uplinks of a full leaf [count].

    Returns
    -------
    (int, list of dict)
        Spines [count], and each leaf's links per spine (spine index -> links [count]).
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

    Parameters
    ----------
    loads : list of int
        Endpoints on each leaf [count].
    radix : int
        Logical ports per switch [count].
    oversubscription : float
        Leaf oversubscription, down- over uplink ports [-] (>= 1; 1 = non-blocking).
    n : int
        Endpoints in all [count].

    Returns
    -------
    TreeCounts
        Switches per tier, uplinks per leaf, pods and spine-core links.

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
    """Most endpoints a three-tier fat tree of ``radix``-port switches holds [count].

    Parameters
    ----------
    radix : int
        Logical ports per switch [count].
    oversubscription : float
        Leaf oversubscription, down- over uplink ports [-] (>= 1; 1 = non-blocking).

    Returns
    -------
    int
        Endpoints [count].
    """
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


# --- leaves of a rack count (shared with the step-function view) ----------------------


def _rail_ports(per_rack: int, rails: int) -> list[int]:
    """Ports of one rack on each rail (port q on rail q mod rails)."""
    return [len(range(r, per_rack, rails)) for r in range(min(rails, per_rack))]


def leaf_loads(setup: FabricSetup, n_racks: int) -> list[int]:
    """Endpoints on each leaf of ``n_racks`` racks (the leaf order of the graph).

    Parameters
    ----------
    setup : FabricSetup
        The fabric of the rack type (switch, attachment, ports per rack, rails).
    n_racks : int
        Racks of this type [racks].

    Returns
    -------
    list of int
        Endpoints per leaf [count].
    """
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

    Parameters
    ----------
    setup : FabricSetup
        The fabric of the rack type (switch, attachment, ports per rack, rails).
    n_racks : int
        Racks of this type [racks].

    Returns
    -------
    int
        Leaves [count].
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

    Parameters
    ----------
    setup : FabricSetup
        The fabric of the rack type (switch, attachment, ports per rack, rails).
    n_racks : int
        Racks of this type [racks].
    label : str
        Name of the fabric in the message (``back-end``, ``front-end``).

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
