"""The fabric of each rack type as the planner sees it: integer switch and link counts.

A fat tree's switch and link counts are step functions of the racks in service
(:mod:`dcplan.facility.steps`). The MILP writes them with integer variables
(:func:`dcplan.planner.network_rows.add_fabrics`); this module holds the per-rack-type
data it needs (:class:`FabricData`) and the exact counts of ``n`` racks
(:func:`fabric_counts`, the same functions that build the network graph), which the
result tables and the tests use to check the plan's figures.

Per fabric (back end, front end) of a rack type with ``P`` links per rack, ``p_g``
of them on each of the ``m_g`` rails of group ``g``, leaves of radix ``R`` with ``d``
down and ``u`` up ports at oversubscription ``o``:

- one switch while ``P n <= R``;
- else leaves ``sum_g m_g ceil(p_g n / d)``, uplinks ``sum_g m_g ceil(p_g n / o)``
  (exact when ``d = u o``, true at 1:1 and the shipped front-end 3:1),
  spines ``D(ceil(U / R))`` with the balancing rule ``D`` of
  :func:`~dcplan.facility.steps.spine_gaps`;
- three tiers (leaves > R): spines at least ``2 U / R``, cores ``ceil(U / R)`` and
  ``U`` spine-core links (the pods' own rounding is not modelled: a lower bound).

Link capex and power are per link of each tier, taken from the network model at the
planning scale (:func:`~dcplan.facility.steps.link_prices`): where a tier mixes
copper and optical links or shares twin-port modules, that mix is the planning
scale's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from dcplan.errors import InputError
from dcplan.scenario.schema import DEFAULT_OVERSUBSCRIPTION

#: Link tiers of one fabric, in the order they are reported.
TIERS = ("nic_leaf", "leaf_spine", "spine_core")


@dataclass(frozen=True)
class FabricData:
    """One fabric of one rack type for the MILP.

    Attributes
    ----------
    rack : str
    fabric : str
        ``backend`` or ``frontend``.
    switch_id : str
    radix, down, up : int
        Links per switch, and endpoint / spine ports of a full leaf [count].
    ports_per_rack : int
        ``P``: links per rack into the fabric [count].
    rail_groups : tuple of (int, int)
        (rails ``m_g``, links per rack on each ``p_g``); one group ``(1, P)`` when the
        fabric is not rail-optimised.
    oversubscription : float
    switch_capex_usd, switch_kw : float
        Per switch [USD], [kW] (typical, without pluggables).
    switch_rack_units : int
        [U].
    link_capex_usd, link_kw : dict
        Tier -> per link [USD], [kW] (both ends' modules or the cable).
    gaps : tuple of (int, int)
        Spine balancing (:func:`~dcplan.facility.steps.spine_gaps`).
    one_switch_max : int
        Most racks on one switch, ``floor(R / P)`` [racks].
    two_tier_max : int
        Most racks whose leaves fit two tiers (leaves <= R) [racks].
    three_tier_max : int
        Most racks three tiers hold [racks].
    exact_uplinks : bool
        Whether ``d = u o`` (uplinks are exactly ``ceil(p_g n / o)`` per rail).
    overfill : tuple of int
        Rack counts (two tiers) at which striping the uplinks needs one spine more
        than the balancing rule gives (:func:`~dcplan.facility.network.spine_count`).
    rail_ports : tuple of int
        Links per rack on each rail, in rail order (one entry when not rail-optimised).
    rail_optimized : bool
        Whether the rack type's fabric is rail-optimised (above one switch).
    """

    rack: str
    fabric: str
    switch_id: str
    radix: int
    down: int
    up: int
    ports_per_rack: int
    rail_groups: tuple[tuple[int, int], ...]
    oversubscription: float
    switch_capex_usd: float
    switch_kw: float
    switch_rack_units: int
    link_capex_usd: dict[str, float] = field(default_factory=dict)
    link_kw: dict[str, float] = field(default_factory=dict)
    gaps: tuple[tuple[int, int], ...] = ()
    one_switch_max: int = 0
    two_tier_max: int = 0
    three_tier_max: int = 0
    exact_uplinks: bool = True
    overfill: tuple[int, ...] = ()
    rail_ports: tuple[int, ...] = ()
    rail_optimized: bool = False

    def tier(self, base: str) -> str:
        """Link tier name as the network model reports it (``fe_`` prefix on the front end).

        Parameters
        ----------
        base : str
            Link tier name (one of :data:`TIERS`).

        Returns
        -------
        str
            ``base`` on the back end, ``fe_<base>`` on the front end.
        """
        return base if self.fabric == "backend" else f"fe_{base}"


def _largest(ok, lo: int, hi: int) -> int:
    """Largest n in [lo, hi] with ok(n) (ok monotone, true at lo)."""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def fabric_data(catalog: Any, rack_id: str, n_ref: int, n_max: int, optics: str | None = None,
                oversubscription: float = DEFAULT_OVERSUBSCRIPTION) -> tuple[FabricData, ...]:
    """The fabrics of ``rack_id`` for the MILP.

    Parameters
    ----------
    catalog : Catalog
    rack_id : str
    n_ref : int
        Racks at which the per-link prices are taken (at least the smallest count with
        two tiers) [racks].
    n_max : int
        Most racks of the type at any site (bounds the spine balancing rule) [racks].
    optics : str, optional
    oversubscription : float
        Back-end leaf oversubscription (down over up ports) [-].

    Returns
    -------
    tuple of FabricData
    """
    from dcplan.facility.coefficients import cached_network
    from dcplan.facility.network import leaf_count
    from dcplan.facility.steps import fabric_steps, link_prices, spine_gaps

    steps = fabric_steps(catalog, rack_id, oversubscription)
    singles = [st.radix // st.endpoints_per_rack for st in steps.values()]
    n_ref = max(int(n_ref), *(s + 1 for s in singles), 1)
    prices = link_prices(catalog, cached_network(catalog, rack_id, n_ref, optics,
                                                 oversubscription))
    out = []
    for name, st in steps.items():
        sw = catalog.get("switches", st.switch_id)
        groups: dict[int, int] = {}
        for p in st.endpoints_per_rail:
            groups[p] = groups.get(p, 0) + 1
        setup = st._setup
        radix = st.radix
        two = _largest(lambda n, s=setup, r=radix: leaf_count(s, n) <= r, 1, max(1, n_max))
        three = _largest(lambda n, s=setup, r=radix: -(-leaf_count(s, n) // (r // 2)) <= r,
                         1, max(1, n_max))
        u_max = math.ceil(st.endpoints_per_rack * max(1, n_max) / st.oversubscription)
        fd = FabricData(
            rack=rack_id, fabric=name, switch_id=st.switch_id, radix=radix,
            down=st.leaf_down, up=st.leaf_up, ports_per_rack=st.endpoints_per_rack,
            rail_groups=tuple((m, p) for p, m in groups.items()),
            oversubscription=st.oversubscription, switch_capex_usd=float(sw.capex_usd),
            switch_kw=sw.power_w / 1000.0, switch_rack_units=int(sw.rack_units),
            gaps=tuple(spine_gaps(st.leaf_up, -(-u_max // radix))),
            one_switch_max=radix // st.endpoints_per_rack, two_tier_max=two,
            three_tier_max=three,
            exact_uplinks=abs(st.leaf_down - st.leaf_up * st.oversubscription) < 1e-9,
            rail_ports=tuple(st.endpoints_per_rail),
            rail_optimized=bool(setup.rail_optimized))
        object.__setattr__(fd, "overfill", overfill_points(fd, min(two, max(1, n_max))))
        tiers = {t: prices.get(fd.tier(t), (0.0, 0.0)) for t in TIERS}
        object.__setattr__(fd, "link_capex_usd", {t: v[0] for t, v in tiers.items()})
        object.__setattr__(fd, "link_kw", {t: v[1] for t, v in tiers.items()})
        out.append(fd)
    return tuple(out)


def tier_limits(catalog: Any, rack_id: str, n_max: int,
                oversubscription: float = DEFAULT_OVERSUBSCRIPTION) -> tuple[int, ...]:
    """Last rack counts below ``n_max`` with one switch, or two tiers, of each fabric.

    [racks] A fabric's per-rack network cost is nearly flat while its number of tiers stays
    the same and jumps where it changes (GB200 NVL72: about 310,000 USD per rack with
    two tiers, 485,000 with three); these are the counts after which it jumps.

    Parameters
    ----------
    catalog : Catalog
        The catalog holding the rack type and its switches.
    rack_id : str
        Rack type id.
    n_max : int
        Most racks of the type at any site [racks].
    oversubscription : float
        Back-end leaf oversubscription (down over up ports) [-].

    Returns
    -------
    tuple of int
        Sorted rack counts [racks].
    """
    from dcplan.facility.steps import fabric_steps

    out: set[int] = set()
    for st in fabric_steps(catalog, rack_id, oversubscription).values():
        for tier in ("spine", "core"):
            def flat(n: int, st=st, tier=tier) -> bool:
                try:
                    return st.counts(n)[tier] == 0
                except InputError:  # more tiers than any switch allows: not flat
                    return False

            if n_max > 1 and flat(1):
                last = _largest(flat, 1, n_max)
                if last < n_max:
                    out.add(last)
    return tuple(sorted(out))


def balanced_spines(fd: FabricData, n: int) -> int:
    """Spines of the balancing rule alone: ``D(ceil(U / R))`` for ``n`` racks (two tiers).

    Parameters
    ----------
    fd : FabricData
        The fabric.
    n : int
        Racks on the fabric [racks].

    Returns
    -------
    int
        Spine switches [count].
    """
    u = sum(m * math.ceil(pg * n / fd.oversubscription - 1e-9) for m, pg in fd.rail_groups)
    k = math.ceil(u / fd.radix - 1e-9)
    return max([k] + [b for a, b in fd.gaps if a <= k])


def overfill_points(fd: FabricData, n_max: int) -> tuple[int, ...]:
    """Rack counts up to ``n_max`` (two tiers) whose spines exceed :func:`balanced_spines`.

    Parameters
    ----------
    fd : FabricData
        The fabric.
    n_max : int
        Most racks to check [racks].

    Returns
    -------
    tuple of int
        Rack counts [racks].

    Raises
    ------
    ValueError
        When the excess is more than one spine (the MILP rows assume at most one).
    """
    out = []
    for n in range(fd.one_switch_max + 1, n_max + 1):
        extra = fabric_counts(fd, n)["spine"] - balanced_spines(fd, n)
        if extra > 1:
            raise ValueError(f"{fd.rack} {fd.fabric}: {n} racks need {extra} spines more "
                             "than the balancing rule")
        if extra == 1:
            out.append(n)
    return tuple(out)


def fabric_counts(fd: FabricData, n: float) -> dict[str, int]:
    """Exact switches and links of ``n`` racks on fabric ``fd``.

    The network model's tree (:func:`~dcplan.facility.network.tree_counts`) over its
    leaf loads; tests check it against :func:`~dcplan.facility.steps.fabric_steps`.

    Parameters
    ----------
    fd : FabricData
        The fabric.
    n : float
        Racks on the fabric [racks] (rounded to a whole number).

    Returns
    -------
    dict
        ``leaf``, ``spine``, ``core`` [switches]; ``nic_leaf``, ``leaf_spine``,
        ``spine_core`` [links].
    """
    from dcplan.facility.network import tree_counts

    n = int(round(n))
    if n <= 0:
        return dict(leaf=0, spine=0, core=0, nic_leaf=0, leaf_spine=0, spine_core=0)
    t = tree_counts(_leaf_loads(fd, n), fd.radix, fd.oversubscription, n * fd.ports_per_rack)
    return dict(leaf=t.leaf, spine=t.spine, core=t.core, nic_leaf=n * fd.ports_per_rack,
                leaf_spine=t.leaf_spine_links if t.spine else 0, spine_core=t.core_links)


def _leaf_loads(fd: FabricData, n: int) -> list[int]:
    """Endpoints on each leaf of ``n`` racks, in the graph's leaf order.

    The rule of :func:`~dcplan.facility.network.leaf_loads`, from the fabric's own
    figures (so inputs read back from a saved plan need no catalog).
    """
    total = n * fd.ports_per_rack
    if total <= fd.radix:
        return [total]
    per_rail = fd.rail_ports if fd.rail_optimized else (fd.ports_per_rack,)
    out: list[int] = []
    for per in per_rail:
        t = per * n
        out += [fd.down] * (t // fd.down) + ([t % fd.down] if t % fd.down else [])
    return out


def fabric_figures(fd: FabricData, counts: dict[str, int]) -> dict[str, float]:
    """Capex, power and rack units of a fabric with ``counts``.

    Parameters
    ----------
    fd : FabricData
        The fabric.
    counts : dict of str to int
        :func:`fabric_counts`: switches per tier [switches], links per tier [links].

    Returns
    -------
    dict
        ``switches`` [count], ``switch_capex_usd``, ``link_capex_usd``, ``capex_usd``
        [USD], ``kw`` [kW], ``rack_units`` [U].
    """
    sw = counts["leaf"] + counts["spine"] + counts["core"]
    links_capex = sum(counts[t] * fd.link_capex_usd[t] for t in TIERS)
    return dict(switches=float(sw), switch_capex_usd=sw * fd.switch_capex_usd,
                link_capex_usd=links_capex, capex_usd=sw * fd.switch_capex_usd + links_capex,
                kw=sw * fd.switch_kw + sum(counts[t] * fd.link_kw[t] for t in TIERS),
                rack_units=float(sw * fd.switch_rack_units))
