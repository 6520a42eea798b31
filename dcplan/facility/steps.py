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
    _rail_ports,
    fabric_setups,
    leaf_count,
    leaf_loads,
    leaf_ports,
    tree_counts,
)


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
        """Leaves of ``n`` racks [count]."""
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


def fabric_steps(catalog, rack_id: str, oversubscription: float = 1.0,
                 switch_id: str | None = None, frontend_switch_id: str | None = None
                 ) -> dict[str, FabricSteps]:
    """Back-end and front-end fabrics of ``rack_id`` as step functions of the racks.

    The optics choice does not change any count (only which module sits on a link),
    so it is not a parameter.

    Parameters
    ----------
    catalog : Catalog
    rack_id : str
    oversubscription : float
        Back-end leaf oversubscription (1 = non-blocking).
    switch_id, frontend_switch_id : str, optional

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

    Returns
    -------
    list of int
        Each ``n`` whose leaf, spine or core count differs from that of ``n - 1``.
    """
    out, last = [], None
    for n in range(1, n_max + 1):
        c = steps.counts(n)
        key = (c["leaf"], c["spine"], c["core"])
        if key != last:
            out.append(n)
            last = key
    return out
