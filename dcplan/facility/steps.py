"""Fabric counts as explicit step functions of the rack count (for an integer MILP).

A fat tree's switch and link counts are step functions of the NIC ports, not linear in
the racks. :func:`fabric_steps` returns, for one rack type, switch and optics choice,
the fixed per-fabric figures (endpoints per rack and per rail, leaf down/up ports,
radix) and the counts as functions of ``n`` racks, computed by the same functions that
build the graph (:func:`~dcplan.facility.network.leaf_loads`,
:func:`~dcplan.facility.network.tree_counts`), so they equal the graph's counts for
every ``n`` (tested for n = 1..N).

With ``P`` endpoints per rack, ``p_r`` of them on rail ``r`` (``P`` on one "rail" when
not rail-optimised), ``d`` down and ``u`` up ports of a full leaf (``R`` radix, ``o``
oversubscription)::

    E(n)      = P n                                   NIC-leaf links
    leaves(n) = 1 if P n <= R else sum_r ceil(p_r n / d)
    U(n)      = sum over leaves of ceil(load / o)     leaf-spine links (<= u per leaf)
    spines(n) = S(U(n)) = ceil(U / R), raised to a divisor of u within 25 %
    three tiers when leaves(n) > R: per pod of R/2 leaves, S(U_pod) with R/2 ports,
    cores(n) = ceil(U / R), spine-core links = U.

How an integer program expresses them (per site, period and rack type, racks ``n``
integer): integer ``l_r >= p_r n / d`` (leaves per rail), integer ``U >= P n / o``
(uplinks; exact for full leaves, a lower bound by at most one link per part-filled
leaf), integer ``s >= U / R`` (spines), ``c >= U / R`` when three tiers are allowed;
switch power and capex are linear in ``l_r``, ``s``, ``c``; link and module counts are
linear in ``n`` and ``U``. The divisor rule and the one-switch case (``P n <= R``) are
refinements a solver can ignore (they only round up); :func:`breakpoints` lists the
rack counts at which any count steps, for a piecewise formulation instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dcplan.facility.network import (
    FabricSetup,
    fabric_setups,
    leaf_count,
    leaf_loads,
    leaf_ports,
    tree_counts,
)
from dcplan.facility.network.topology import _rail_ports
from dcplan.scenario.schema import DEFAULT_OVERSUBSCRIPTION


@dataclass(frozen=True)
class FabricSteps:
    """One fabric of one rack type as step functions of its rack count.

    Attributes
    ----------
    fabric : str
        ``backend`` or ``frontend``.
    switch_id : str
    link_gbps : float
        Link speed [Gb/s].
    radix : int
        Links per switch [count].
    leaf_down, leaf_up : int
        Endpoint and spine ports of a full leaf [count].
    endpoints_per_rack : int
        Links per rack into the fabric, ``P`` [count].
    endpoints_per_rail : tuple of int
        ``p_r``: endpoints of one rack on each rail (one entry when not
        rail-optimised) [count].
    oversubscription : float
    """

    fabric: str
    switch_id: str
    link_gbps: float
    radix: int
    leaf_down: int
    leaf_up: int
    endpoints_per_rack: int
    endpoints_per_rail: tuple[int, ...]
    oversubscription: float
    _setup: Any = None

    def counts(self, n: int) -> dict[str, int]:
        """Switches and links of ``n`` racks.

        Parameters
        ----------
        n : int
            Racks of this type on the fabric [racks].

        Returns
        -------
        dict
            ``leaf``, ``spine``, ``core`` [switches]; ``nic_leaf``, ``leaf_spine``,
            ``spine_core`` [links].
        """
        if n <= 0:
            return dict(leaf=0, spine=0, core=0, nic_leaf=0, leaf_spine=0, spine_core=0)
        loads = leaf_loads(self._setup, n)
        t = tree_counts(loads, self.radix, self.oversubscription, n * self.endpoints_per_rack)
        return dict(leaf=t.leaf, spine=t.spine, core=t.core,
                    nic_leaf=n * self.endpoints_per_rack,
                    leaf_spine=t.leaf_spine_links if t.spine else 0,
                    spine_core=t.core_links)

    def leaves(self, n: int) -> int:
        """Leaves of ``n`` racks [count].

        Parameters
        ----------
        n : int
            Racks of this type on the fabric [racks].

        Returns
        -------
        int
            Leaf switches [count].
        """
        return leaf_count(self._setup, n)

    def formula(self) -> str:
        """The counts in words, with this fabric's figures filled in."""
        rails = " + ".join(f"ceil({p} n / {self.leaf_down})" for p in self.endpoints_per_rail)
        return (f"{self.fabric}: E(n) = {self.endpoints_per_rack} n NIC-leaf links; "
                f"leaves = 1 if E <= {self.radix} else {rails}; leaf-spine links U = sum of "
                f"ceil(leaf load / {self.oversubscription:g}) (<= {self.leaf_up} per leaf); "
                f"spines = ceil(U / {self.radix}) (balanced to a divisor of {self.leaf_up} "
                f"within 25 %); three tiers above {self.radix} leaves: pods of "
                f"{self.radix // 2} leaves, cores = ceil(U / {self.radix})")


def _steps(fabric: str, setup: FabricSetup) -> FabricSteps:
    radix = setup.att.radix
    down, up = leaf_ports(radix, setup.oversubscription)
    per_rail = tuple(_rail_ports(setup.ports_per_rack, setup.rails)) \
        if setup.rail_optimized else (setup.ports_per_rack,)
    return FabricSteps(fabric, setup.switch.id, setup.att.link_gbps, radix, down, up,
                       setup.ports_per_rack, per_rail, setup.oversubscription, setup)


def fabric_steps(catalog, rack_id: str, oversubscription: float = DEFAULT_OVERSUBSCRIPTION,
                 switch_id: str | None = None, frontend_switch_id: str | None = None
                 ) -> dict[str, FabricSteps]:
    """Back-end and front-end fabrics of ``rack_id`` as step functions of the racks.

    The optics choice does not change any count (only which module sits on a link),
    so it is not a parameter.

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs.
    rack_id : str
        Rack type (catalog ``racks``).
    oversubscription : float
        Back-end leaf oversubscription, leaf down- over uplink bandwidth [-] (1 =
        non-blocking).
    switch_id, frontend_switch_id : str, optional
        Force the back-end and front-end switch models.

    Returns
    -------
    dict
        ``backend`` (and ``frontend`` when the rack has front-end ports) ->
        :class:`FabricSteps`.
    """
    _, _, be, fe = fabric_setups(catalog, rack_id, oversubscription, switch_id,
                                 frontend_switch_id)
    out = {"backend": _steps("backend", be)}
    if fe is not None:
        out["frontend"] = _steps("frontend", fe)
    return out


def breakpoints(steps: FabricSteps, n_max: int) -> list[int]:
    """Rack counts ``n <= n_max`` at which a switch count steps up [racks].

    Parameters
    ----------
    steps : FabricSteps
        The fabric's step functions.
    n_max : int
        Largest rack count to scan [racks].

    Returns
    -------
    list of int
        Each ``n`` whose leaf, spine or core count differs from that of ``n - 1``
        [racks].
    """
    out, last = [], None
    for n in range(1, n_max + 1):
        c = steps.counts(n)
        key = (c["leaf"], c["spine"], c["core"])
        if key != last:
            out.append(n)
            last = key
    return out


def spine_gaps(up_full: int, k_max: int) -> list[tuple[int, int]]:
    """Where the spine-balancing rule raises the spine count, as (first need, spines).

    :func:`~dcplan.facility.network.spine_count` raises the fewest spines ``k`` to the
    smallest divisor of ``up_full`` within ``spine_balance_max_extra_frac`` (when there
    is one). That rule is ``D(k) = max(k, max{b_j : a_j <= k})`` over the returned
    pairs ``(a_j, b_j)``: from need ``a_j`` on, at least ``b_j`` spines (``b_j > a_j``,
    both increasing). An integer program writes it with one binary per pair.

    Parameters
    ----------
    up_full : int
        Uplinks of a full leaf [count].
    k_max : int
        Largest need ``ceil(uplinks / ports)`` to cover [spines].

    Returns
    -------
    list of (int, int)
        Pairs ``(a_j, b_j)``: from a need of ``a_j`` spines on, at least ``b_j`` spines
        [spines, spines].
    """
    from dcplan.facility.assumptions import value

    extra = value("network", "spine_balance_max_extra_frac")
    out: list[tuple[int, int]] = []
    for k in range(1, max(1, k_max) + 1):
        limit = k * (1.0 + extra) + 1e-9
        b = next((x for x in range(k, up_full + 1) if up_full % x == 0 and x <= limit), k)
        if b > k and (not out or out[-1][1] != b):
            out.append((k, b))
    return out


def link_prices(catalog, result) -> dict[str, tuple[float, float]]:
    """Capex and power per link of each link tier of a sized network.

    Module prices are shared by the links they carry (a twin-port module on two
    links, a NIC-end module per ``links_per_nic``); copper cables as the network model
    prices them. Where a tier mixes copper and optical links (rack-to-leaf links within
    copper reach), the figure is the mix of ``result``'s layout.

    Parameters
    ----------
    catalog : Catalog
    result : NetworkResult

    Returns
    -------
    dict
        Tier (``nic_leaf``, ``leaf_spine``, ``spine_core``, ``fe_...``) ->
        (capex [USD per link], power [kW per link]).
    """
    from dcplan.facility.network import fabric_setups

    _, _, be, fe = fabric_setups(catalog, result.rack_id)
    sums: dict[str, list[float]] = {}
    for c in result.link_classes:
        tier, k = c["tier"], c["links"]
        st = fe if tier.startswith("fe_") and fe is not None else be
        gbps = st.att.link_gbps
        acc = sums.setdefault(tier, [0.0, 0.0, 0.0])
        acc[0] += k
        if c["medium"] == "copper":
            cu = catalog.get("optics", c["switch_end"])
            share = gbps / cu.gbps
            acc[1] += 2 * cu.capex_usd * share * k
            acc[2] += 2 * cu.power_w * share * k / 1000.0
            continue
        for end, at_nic in ((c["switch_end"], False),
                            (c["far_end"], not tier.endswith("_spine") and "nic" in tier)):
            o = catalog.get("optics", end)
            per = st.att.links_per_nic if at_nic else max(1, int(round(o.gbps / gbps)))
            acc[1] += o.capex_usd * k / per
            acc[2] += o.power_w * k / per / 1000.0
    return {t: (v[1] / v[0], v[2] / v[0]) for t, v in sums.items() if v[0]}
