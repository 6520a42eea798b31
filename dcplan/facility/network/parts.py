"""Choice of parts: switches, NIC-to-switch attachment, optics and copper cables.

How NIC ports meet switch ports (lanes, splits, radix at the link speed), which switch
model a fabric uses (:func:`choose_switch`), the setup of each fabric of a rack type
(:func:`fabric_setups`), and which optical modules or copper cable a link class gets
(:func:`_pick_pair`, :func:`_copper_for`). The conventions are in the package's
docstring (:mod:`dcplan.facility.network`) and ``docs/facility.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dcplan.errors import InputError, Problem, display_path
from dcplan.facility.assumptions import value
from dcplan.scenario.schema import DEFAULT_OVERSUBSCRIPTION
from dcplan.schema import Nic, Optic, OpticKind, Rack, Switch

OPTICAL_KINDS = (OpticKind.pluggable, OpticKind.lpo, OpticKind.cpo, OpticKind.aoc)
COPPER_KINDS = (OpticKind.copper_dac, OpticKind.copper_acc)
FIBRES = ("single_mode", "multimode")


# --- how NIC ports meet switch ports ----------------------------------------------------


def _err(message: str) -> InputError:
    """An input error of the network model (file ``<network>``)."""
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

    Parameters
    ----------
    switch : Switch
        The switch model (catalog ``switches``).
    nic_gbps : float
        Speed of one NIC port [Gb/s].

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
    """Logical ports of ``switch`` at ``link_gbps`` split by speed only [count].

    Parameters
    ----------
    switch : Switch
        The switch model (catalog ``switches``).
    link_gbps : float
        Link speed [Gb/s].

    Returns
    -------
    int
        Logical ports at ``link_gbps`` [count].
    """
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

    Parameters
    ----------
    switch : Switch
        The switch model (catalog ``switches``).
    nic_port_gbps : float
        Speed of one NIC port [Gb/s].
    nic_lane_gbps : float or None
        NIC lane rate [Gb/s] (None: no lane data).

    Returns
    -------
    Attachment
        Link speed [Gb/s], links per NIC port and the logical radix at that speed.

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
        The loaded catalogs.
    nic_port_gbps : float
        NIC port speed [Gb/s].
    switch_id : str, optional
        Force this model (checked against ``protocols``).
    protocol : str, optional
        Preferred protocol (front-end: ethernet).
    nic_lane_gbps : float, optional
        NIC lane rate [Gb/s].
    protocols : list of str, optional
        Protocols the NIC supports.

    Returns
    -------
    Switch
        The chosen model.

    Raises
    ------
    InputError
        A forced switch of a protocol the NIC does not join, or no switch that carries
        the NIC ports at full rate.
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

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs.
    optic_id : str or None
        The ``--optics`` id (None or '': the default).

    Returns
    -------
    OpticFamily
        Kind, fibre (None: the cheapest that reaches), requested id and CPO entry.

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

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs.
    optic_id : str or None
        An optic id (None: choose).
    switch : Switch
        The switch model (catalog ``switches``).

    Returns
    -------
    Optic
        The optic entry.

    Raises
    ------
    InputError
        An unknown or copper ``optic_id``, or no optical module in the catalog.
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


# --- the fabrics of one rack type ------------------------------------------------------


def rack_nics(rack: Rack) -> tuple[int, float]:
    """(NICs per rack, Gb/s per NIC) of the scale-out back-end.

    Parameters
    ----------
    rack : Rack
        The rack type (accelerators, scale-out NICs and bandwidth per accelerator).

    Returns
    -------
    (int, float)
        Scale-out NICs per rack [count] and the speed of each [Gb/s].
    """
    n_nic = int(math.ceil(rack.accelerators_per_rack * rack.scaleout_nics_per_accelerator
                          - 1e-9))
    gbps = rack.scaleout_gbps_per_accelerator * rack.accelerators_per_rack / n_nic
    return n_nic, gbps


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


def fabric_setups(catalog, rack_id: str, oversubscription: float = DEFAULT_OVERSUBSCRIPTION,
                  switch_id: str | None = None, frontend_switch_id: str | None = None
                  ) -> tuple[Rack, Nic, FabricSetup, FabricSetup | None]:
    """Rack, NIC, and the back-end and front-end fabric setups of ``rack_id``.

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs.
    rack_id : str
        Rack type (catalog ``racks``).
    oversubscription : float
        Leaf oversubscription, down- over uplink ports [-] (>= 1; 1 = non-blocking).
    switch_id, frontend_switch_id : str, optional
        Force the back-end and front-end switch models.

    Returns
    -------
    (Rack, Nic, FabricSetup, FabricSetup or None)
        The rack and NIC entries, the back-end setup and the front-end setup (None when
        the rack has no front-end bandwidth).

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


# --- media and modules: optics and copper per link class ----------------------------


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
        """One note for every link length [m] that fell back.

        Parameters
        ----------
        lengths : list of float
            Lengths of the links that fell back [m].

        Returns
        -------
        str
            The note, naming the span of lengths and the fibre used.
        """
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
