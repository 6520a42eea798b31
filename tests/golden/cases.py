"""Golden LP cases: one tiny hand-made instance per constraint family of the MILP.

Each case names a family of :data:`dcplan.planner.families.CONSTRAINT_FAMILIES`, the
inputs builder below that switches its feature on, and its golden file
``tests/golden/<family>.lp``. The golden text is that family's rows of the whole model
as pulp's ``writeLP`` writes them (one line per row, sorted by name), then the bounds,
integers and binaries of the variables they use, under a header that states the
instance and one coefficient worked out by hand.

Regenerate after an intended change of the formulation: ``python tests/golden/regen.py``
(then read the diff: every changed row is a changed model).
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent
sys.path.insert(0, str(GOLDEN.parent))  # test_planner_helpers

from test_planner_helpers import make_inputs, rack, rack_site, site, workload  # noqa: E402

from dcplan.planner import build_model  # noqa: E402
from dcplan.planner.fabric import FabricData  # noqa: E402
from dcplan.planner.families import family_of  # noqa: E402
from dcplan.planner.inputs import CduData, GridData  # noqa: E402
from dcplan.planner.operations import OperationsData  # noqa: E402

# --- inputs builders (small numbers, easy to check by hand) ----------------------------

#: Rack ``ra``: 2 kW idle, 10 kW at full load and at its operating point, 1000 USD.
RACK = dict(kw_idle=2.0, kw_max=10.0, capex=1000.0)
#: Facility at ``sa``: 10 % losses, cooling 0.2 kW per IT kW on the design day, 0.1 on
#: average.
FAC = dict(loss=0.1, cool_peak=0.2, cool_avg=0.1)


def base(**kw):
    """Two periods (2026, 2027), rack ``ra`` at site ``sa`` (50 kW, 10 positions), two
    existing racks retiring after 2026, workload ``wa`` 100 then 300 tokens/s at 100
    tokens/s per rack."""
    args = dict(n=2, racks=[rack(**RACK)],
                sites=[site(n=2, grid_kw=50.0, positions=10, build=1.0)],
                rack_sites={("ra", "sa"): rack_site(**FAC)},
                existing=[("ra", "sa", 2, 1)])
    args.update(kw)
    return make_inputs(**args)


def spare():
    """``base`` with one spare rack of ``ra`` kept at ``sa`` (N+1)."""
    return base(spare_racks={("ra", "sa"): 1})


def disaggregated():
    """``base`` with ``wa`` disaggregated: 25 % input tokens, peak 1.5 x mean."""
    return base(workloads=[workload(demand=(100.0, 300.0), peak=1.5, disagg=True,
                                    input_frac=0.25)])


def tiers():
    """``base`` without existing racks, ``ra``'s linear network in two tiers at ``sa``:
    1-4 racks 1 kW and 100 USD per rack, 5-10 racks 3 kW and 300 USD."""
    rs = dataclasses.replace(rack_site(**FAC), network_tiers=(
        (1, 4, 1.0, 100.0, 0.0), (5, 10, 3.0, 300.0, 0.0)))
    return base(existing=(), rack_sites={("ra", "sa"): rs})


def _shape(values):
    m = sum(values) / len(values)
    return tuple(v / m for v in values)


def profiles():
    """One period; ``wa`` by day (08-20 h) and ``wb`` by night, each 100 tokens/s on
    average (200 at its peak); racks ``ra`` (2 kW idle) and ``rb`` (1 kW idle), both
    10 kW serving, both serve both workloads, so the power of each schedule mixes two
    allocations."""
    day = _shape([0.0] * 8 + [2.0] * 12 + [0.0] * 4)
    night = _shape([2.0] * 8 + [0.0] * 12 + [2.0] * 4)
    a = dataclasses.replace(workload("wa", demand=(100.0,), peak=max(day)), profile=day)
    b = dataclasses.replace(workload("wb", demand=(100.0,), peak=max(night)), profile=night)
    return make_inputs(n=1, racks=[rack("ra", **RACK), rack("rb", kw_idle=1.0, kw_max=10.0,
                                                            capex=1500.0)],
                       workloads=[a, b], sites=[site(n=1, grid_kw=1e3, build=1.0)],
                       rack_sites={("ra", "sa"): rack_site(**FAC),
                                   ("rb", "sa"): rack_site(**FAC)})


def connection():
    """Three periods; ``sa``'s grid is a decision: 10 kW committed, up to 100 kW, a
    request energised one period later (two through the assessment), the assessment
    from 60 kW."""
    g = GridData(committed_kw=(10.0,) * 3, arrival=(1, 2, 3), arrival_assessed=(2, 3, 3),
                 cost_usd_per_kw=50.0, threshold_kw=60.0)
    s = dataclasses.replace(site(n=3, grid_kw=100.0), connection=g)
    return make_inputs(n=3, racks=[rack(**RACK)], sites=[s],
                       rack_sites={("ra", "sa"): rack_site(**FAC)})


def liquid():
    """``base`` with ``ra`` liquid-cooled: 8 kW of heat per rack to CDUs ``c1`` of 20 kW,
    0.5 positions and 50 USD each, N+1."""
    return base(racks=[rack(liquid=True, **RACK)], redundancy=1,
                rack_sites={("ra", "sa"): rack_site(liquid_kw=8.0, cdu_id="c1", cdu_kw=20.0,
                                                    cdu_capex=50.0, cdu_pos=0.5, **FAC)})


def liquid_choice():
    """``liquid`` with ``cdu_choice: milp``: the MILP chooses ``sa``'s CDU model between
    ``c1`` (20 kW, 50 USD, 0.5 positions) and ``c2`` (50 kW, 100 USD, no position)."""
    opts = (CduData("c1", 20.0, 50.0, 0.5), CduData("c2", 50.0, 100.0, 0.0))
    return dataclasses.replace(liquid(), cdu_choice="milp", cdu_options={"sa": opts})


def staff():
    """One period, sites ``sa`` and ``sb`` (10 positions each), per-site staff 1000
    USD/yr, per-fleet staff 500 USD/yr."""
    ops = OperationsData(staff_per_site={"sa": 1000.0, "sb": 1000.0}, staff_per_fleet=500.0)
    return make_inputs(n=1, racks=[rack(**RACK)], workloads=[workload(demand=(100.0,))],
                       sites=[site("sa", n=1, grid_kw=50.0), site("sb", n=1, grid_kw=50.0)],
                       operations=ops)


def carbon():
    """``base`` with a cap of 100 t CO2 in 2027 (0.5 kg CO2 per kWh at ``sa``)."""
    return base(carbon_cap_kg=(None, 1e5))


def water():
    """``base`` with ``ra``'s plant at ``sa`` using 1.8 L per IT kWh and a site limit of
    200 m3 a year."""
    s = dataclasses.replace(site(n=2, grid_kw=50.0, positions=10, build=1.0),
                            water_limit_m3_per_year=200.0)
    rs = dataclasses.replace(rack_site(**FAC), water_l_per_it_kwh=1.8)
    return base(sites=[s], rack_sites={("ra", "sa"): rs})


def budget():
    """``base`` with 50 USD/kW of heat-rejection capex and a 5000 USD budget in 2026."""
    return base(budget=[5000.0, None],
                rack_sites={("ra", "sa"): rack_site(cool_capex=50.0, **FAC)})


def storage():
    """One period, ``wa`` 100 tokens/s on average, 2.15 x the mean in hour 23 and 0.95 x in
    the other 23 (rack ``ra``: 0 kW idle, 10 kW serving, no losses or cooling), ``sa``'s
    grid 15 kW; battery ``bat`` offered: 85 % round trip, 90 % usable, 2 %/yr fade, 10
    years."""
    from dcplan.planner.inputs import StorageData

    shape = tuple([0.95] * 23 + [2.15])
    w = dataclasses.replace(workload(demand=(100.0,), peak=max(shape)), profile=shape)
    bat = StorageData("bat", capex_usd_per_kwh=1.0, capex_usd_per_kw=1.0, efficiency=0.85,
                      depth_of_discharge=0.9, life_years=10.0, degradation_per_year=0.02)
    return make_inputs(n=1, racks=[rack(kw_idle=0.0, kw_max=10.0, capex=1000.0)],
                       workloads=[w], sites=[site(n=1, grid_kw=15.0)],
                       rack_sites={("ra", "sa"): rack_site()}, storage={"sa": (bat,)})


def flexible():
    """``storage`` at a site whose grid is a decision: nothing committed, a firm request
    never energised within the one period, a flexible part energised at once (up to 20
    kW, 1 USD/kW), cut by 25 % in a one-hour event at 23:00."""
    from dcplan.planner.inputs import FlexData

    fx = FlexData(arrival=(0,), cost_usd_per_kw=1.0, max_kw=20.0, depth=0.25,
                  hours_per_year=200.0, event_hours=(23,))
    g = GridData(committed_kw=(0.0,), arrival=(1,), arrival_assessed=(1,),
                 cost_usd_per_kw=50.0, flexible=fx)
    d = storage()
    return dataclasses.replace(d, sites={"sa": dataclasses.replace(d.sites["sa"],
                                                                   connection=g)})


def onsite():
    """Three periods, ``sa``'s grid 0 kW until 2028 (then 100 kW), rack ``ra`` (2 kW idle,
    10 kW serving) with 10 % losses and 0.2 kW cooling per IT kW on the design day, its UPS
    recharging at 0.1 kW per IT kW; generation ``gt`` offered from 2027 (its lead time):
    90 % available, 20-year life."""
    from dcplan.planner.inputs import OnsiteData

    gt = OnsiteData("gt", capex_usd_per_kw=100.0, fuel_usd_per_kwh=(0.08,) * 3,
                    carbon_kg_per_kwh=0.5, availability=0.9, first_period=1, life_years=20.0)
    rs = dataclasses.replace(rack_site(**FAC), recharge_kw_per_it_kw=0.1)
    return make_inputs(n=3, racks=[rack(**RACK)], sites=[site(n=3, grid_kw=[0.0, 0.0, 100.0])],
                       rack_sites={("ra", "sa"): rs}, onsite={"sa": (gt,)},
                       workloads=[workload(demand=(0.0, 100.0, 100.0))])


#: A hand-made fabric: radix 8, 2 links per rack on one rail, leaves of 4 down and 4 up
#: ports (1:1), one switch up to 4 racks, two tiers up to 16, three up to 24; spine
#: balancing steps (3 -> 4, 5 -> 8); one spine more at 6 and at 10 racks.
FABRIC = FabricData(
    rack="ra", fabric="backend", switch_id="sw", radix=8, down=4, up=4, ports_per_rack=2,
    rail_groups=((1, 2),), oversubscription=1.0, switch_capex_usd=1000.0, switch_kw=0.5,
    switch_rack_units=1,
    link_capex_usd={"nic_leaf": 10.0, "leaf_spine": 20.0, "spine_core": 30.0},
    link_kw={"nic_leaf": 0.01, "leaf_spine": 0.02, "spine_core": 0.03},
    gaps=((3, 4), (5, 8)), one_switch_max=4, two_tier_max=16, three_tier_max=24,
    overfill=(6, 10), rail_ports=(2,))


def fabric():
    """``base`` (no existing racks, 30 positions, 1 MW) with ``ra`` on :data:`FABRIC`
    and 4 switches per network rack."""
    return base(existing=(), sites=[site(n=2, grid_kw=1e3, positions=30, build=1.0)],
                fabrics={"ra": (FABRIC,)}, network_rack_units=4)


# --- the cases --------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One golden case: a family, its instance and the coefficient checked by hand."""

    family: str
    build: Callable
    check: str
    elastic: bool = False
    unserved_limit: float | None = None
    unserved_floor: float | None = None

    @property
    def lp(self) -> Path:
        """The golden file."""
        return GOLDEN / f"{self.family}.lp"


_FAB = "fabric (FABRIC, at most 30 racks): "
#: Case name (= family) -> Case.
def caps():
    """``base`` with caps 1.0 and 0.8 offered to ``ra`` and a capped peak: at 0.8 the rack
    draws at most 8 kW (``power_at_cap_kw``) and serves 90 tokens/s at 7 kW."""
    from dcplan.planner.inputs import PerfData

    return base(cap_levels={"ra": (1.0, 0.8)}, nameplate_peak=True, capped_peak=True,
                perf_at_cap={("ra", "wa", 1.0): PerfData(100.0, 10.0, 100.0, 100.0),
                             ("ra", "wa", 0.8): PerfData(90.0, 7.0, 90.0, 90.0)},
                power_at_cap_kw={("ra", 1.0): 10.0, ("ra", 0.8): 8.0})


CASES: dict[str, Case] = {c.family: c for c in (
    Case("stock", base, "stock 2026: inst - new = 2 existing racks; 2027: inst - new 2026 "
         "- new 2027 = 0 (the existing racks retired)"),
    Case("spare_on", spare, "inst - 10 on <= 0 (10 positions / 1 position per rack)"),
    Case("spare_min", spare, "inst - 1 on >= 0 (k = 1 spare)"),
    Case("ntier_low", tiers, "tier 1 (5-10 racks): n_1 - 5 on_1 >= 0"),
    Case("ntier_high", tiers, "tier 1: n_1 - 10 on_1 <= 0"),
    Case("ntier_one", tiers, "on_0 + on_1 <= 1"),
    Case("ntier_split", tiers, "inst - n_0 - n_1 = 0"),
    Case("ntier_buy", tiers, "2027: buy - 100 n_0 - 300 n_1 (2027) + 100 n_0 + 300 n_1 "
         "(2026) >= 0 (USD per rack of each tier)"),
    Case("fab_single", fabric, _FAB + "single - 2/8 n + 2 x 30 / 8 = 7.5 multi >= 0"),
    Case("fab_multi", fabric, _FAB + "n - (30 - 4) multi <= 4"),
    Case("fab_leaf", fabric, _FAB + "leaf0 - 2/4 n - (2 x 4 / 4 = 2) multi >= -2"),
    Case("fab_up", fabric, _FAB + "up0 - 2/1 n - (2 x 4 / 1 = 8) multi >= -8"),
    Case("fab_need", fabric, _FAB + "8 need - up0 >= 0 (radix 8, one rail)"),
    Case("fab_over", fabric, _FAB + "overfill at 6 racks: n - (30 - 6 + 1 = 25) at0 <= 5"),
    Case("fab_past", fabric, _FAB + "n - (6 + 1 = 7) past0 >= 0"),
    Case("fab_pastat", fabric, _FAB + "at0 - past0 >= 0"),
    Case("fab_pastnext", fabric, _FAB + "past0 - at1 >= 0"),
    Case("fab_spine", fabric, _FAB + "spine - need - at0 + past0 - at1 + past1 >= 0"),
    Case("fab_gap", fabric, _FAB + "k_max = ceil(2 x 30 / 8) = 8; step (3, 4): "
         "need - (8 - 3 + 1 = 6) gap0 <= 2"),
    Case("fab_bal", fabric, _FAB + "step (5, 8): spine - 8 gap1 - at0 + past0 - at1 + "
         "past1 >= 0"),
    Case("fab_gapord", fabric, _FAB + "gap0 - gap1 >= 0"),
    Case("fab_three", fabric, _FAB + "n - (30 - 16 = 14) three <= 16"),
    Case("fab_pod_spine", fabric, _FAB + "U_max = 60: spine - up0 / 4 - (60 / 4 = 15) "
         "three >= -15"),
    Case("fab_core", fabric, _FAB + "core - up0 / 8 - (60 / 8 = 7.5) three >= -7.5"),
    Case("fab_core_links", fabric, _FAB + "core_links - up0 - 60 three >= -60"),
    Case("fab_max", fabric, _FAB + "n <= 24 (three tiers hold 24 racks)"),
    Case("net_buy", fabric, _FAB + "links_ra 2026: buy - (10 x 2 = 20) n - 20 up0 - "
         "30 core_links >= 0 (USD per link of each tier)"),
    Case("net_racks", fabric, _FAB + "4 net_racks - single - leaf0 - spine - core >= 0 "
         "(1 U per switch, 4 per network rack)"),
    Case("capacity", base, "alloc - 1 inst <= 0 (availability 1, utilisation 1)"),
    Case("cap_split", caps, "inst_cap cap100 + inst_cap cap80 - inst = 0"),
    Case("cap_capacity", caps, "alloc at cap80 - 1 inst_cap cap80 <= 0 (availability 1)"),
    Case("demand", disaggregated, "elastic; prefill 2026: 100 alloc + unserved >= 100 "
         "tokens/s x 1.5 peak x 0.25 input share = 37.5", elastic=True),
    Case("unserved_total", disaggregated, "elastic, least shortfall 10 million tokens: "
         "each unserved tokens/s of a row counts 8760 h x 3600 s / 1.5 peak / 1e6 = "
         "21.024 million tokens <= 10", elastic=True, unserved_limit=10.0),
    Case("unserved_floor", disaggregated, "elastic, least shortfall proven at least 8 "
         "million tokens: the same 21.024 million tokens per unserved tokens/s >= 8",
         elastic=True, unserved_limit=10.0, unserved_floor=8.0),
    Case("power_mix", profiles, "pmix wa: (1.1 x 1.2 x (10 - 2) = 10.56) alloc ra, "
         "(1.1 x 1.2 x (10 - 1) = 11.88) alloc rb"),
    Case("peak_power", profiles, "idle: ra 1.1 x 1.2 x 2 = 2.64 kW, rb 1.1 x 1.2 x 1 = "
         "1.32 kW per rack; by night wb's schedule is at its peak (pmix wb x 1), wa's at 0"),
    Case("connectable", connection, "2027: req 2026 <= 100 - 10 committed = 90 kW"),
    Case("assessment", connection, "req 2026 + req 2027 <= 60 - 1 - 10 = 49 kW (a 2028 "
         "request would arrive after the horizon)"),
    Case("grid", base, "idle 1.1 x 1.2 x 2 = 2.64 kW per rack in service, serving "
         "1.1 x 1.2 x (10 - 2) = 10.56 kW more per allocated rack <= 50 kW"),
    Case("bess_e_stock", storage, "2026 (one year): bess_e - 0.9 usable x 0.98 fade after "
         "the year = 0.882 bess_e_new = 0"),
    Case("bess_p_stock", storage, "bess_p - bess_p_new = 0"),
    Case("bess_power", storage, "h23: bess_ch + bess_dis - bess_p <= 0"),
    Case("bess_soc", storage, "h00: soc h00 - soc h23 (the day cycles) - 0.85 ch h00 + "
         "dis h00 = 0"),
    Case("bess_energy", storage, "h23: soc - bess_e <= 0"),
    Case("gen_stock", onsite, "2027: gen_cap - gen_new 2027 = 0; 2028: gen_cap - gen_new "
         "2027 - gen_new 2028 = 0 (none in 2026, before the lead time)"),
    Case("gen_run", onsite, "gen - 0.9 gen_cap <= 0 (90 % available)"),
    Case("grid_hour", storage, "h23: (10 kW x 2.15 / 2.15 = 10) alloc + ch - dis - gpk "
         "<= 0; h00: (10 x 0.95 / 2.15 = 4.4186) alloc + ch - dis - gpk <= 0"),
    Case("no_export", onsite, "2027: served load: idle 1.1 x 1.1 (average cooling) x 2 = "
         "2.42 inst + 1.1 x 1.1 x 8 = 9.68 alloc - gen >= 0"),
    Case("supply_firm", onsite, "2027: peak 2.64 inst + 10.56 alloc + UPS recharge 0.1 x "
         "10 kW = 1 inst - 0.9 gen_cap <= 0 kW of grid"),
    Case("grid_served", onsite, "2027: 2.42 inst + 9.68 alloc - gen - gpk <= 0 (the served "
         "load, average cooling)"),
    Case("curtail", flexible, "h23: (10 kW x 2.15 / 2.15 = 10) alloc + ch - dis + 0.25 "
         "req_flex - req_flex (connected) <= 0 kW: the event cuts a quarter of it"),
    Case("flex_max", flexible, "req_flex 2026 <= 20 kW offered"),
    Case("cdu_keep", liquid, "on 2027 - on 2026 >= 0"),
    Case("cdu_heat", liquid, "20 cdu - 1 x 20 on - 8 inst >= 0 (N+1, 20 kW CDUs, 8 kW "
         "per rack)"),
    Case("cdu_on", liquid, "inst - 10 on <= 0 (10 positions)"),
    Case("cdu_buy", liquid, "2026: cdu_new - cdu >= -(ceil(2 x 8 / 20) + 1 = 2) owned "
         "with the existing racks"),
    Case("space", liquid, "inst + 0.5 cdu <= 10 positions"),
    Case("cdu_model_one", liquid_choice, "pick c1 + pick c2 = 1 (the existing racks are "
         "liquid-cooled)"),
    Case("cdu_model_keep", liquid_choice, "use 2027 - use 2026 >= 0"),
    Case("cdu_model_any", liquid_choice, "on c1 + on c2 - use = 0 (each period)"),
    Case("cdu_model_on", liquid_choice, "on c1 - pick c1 <= 0 (each period)"),
    Case("cdu_model_split", liquid_choice, "kw c1 + kw c2 - 8 inst = 0 (8 kW per rack)"),
    Case("cdu_model_use", liquid_choice, "kw c1 - 80 on c1 <= 0 (10 positions x 8 kW "
         "per one-position rack)"),
    Case("cdu_model_heat", liquid_choice, "c2: 50 cdu - 1 x 50 on - kw c2 >= 0 (N+1)"),
    Case("cdu_model_buy", liquid_choice, "2026, c1: cdu_new - cdu + (ceil(2 x 8 / 20) + 1 "
         "= 2) pick c1 >= 0; c2: + (ceil(16 / 50) + 1 = 2) pick c2"),
    Case("building", base, "build 2026 - facility peak (2.64 inst + 10.56 alloc) >= 0"),
    Case("staffed", staff, "inst - 10 staffed <= 0 (10 positions)"),
    Case("fleet_on", staff, "fleet_on - staffed[sa] >= 0, and the same for sb"),
    Case("carbon_cap", carbon, "2027: 8760 h x 0.5 kg/kWh x 1.1 x 1.1 x 2 kW = 10599.6 "
         "inst + 8760 x 0.5 x 1.1 x 1.1 x 8 = 42398.4 alloc <= 100000 kg"),
    Case("water", water, "1.8 L/kWh x 10 kW x 8760 h / 1000 = 157.68 m3 per rack in "
         "service <= 200 m3 x 1 year"),
    Case("budget", budget, "2026: (1000 rack + 50 USD/kW x 10 kW cooling = 1500) new + 1 "
         "build <= 5000 USD (every capex category of a new rack counted)"),
)}


# --- the golden text ----------------------------------------------------------------------


def _sections(text: str) -> dict[str, list[str]]:
    """Lines of a pulp LP file per section, each row on one line."""
    out: dict[str, list[str]] = {}
    sec = None
    for line in text.splitlines():
        if line in ("Minimize", "Maximize", "Subject To", "Bounds", "Generals", "Binaries",
                    "End"):
            sec = out.setdefault(line, [])
        elif sec is not None and sec is out.get("Subject To") and line.startswith(" "):
            sec[-1] += line  # a row pulp wrapped (a name never starts with a blank)
        elif sec is not None:
            sec.append(line)
    return out


def golden_text(name: str) -> str:
    """The golden LP text of case ``name`` (what its ``.lp`` file must hold)."""
    case = CASES[name]
    d = case.build()
    prob, mv = build_model(d, elastic=case.elastic, unserved_limit=case.unserved_limit,
                           unserved_floor=case.unserved_floor)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.lp"
        prob.writeLP(str(path))
        sec = _sections(path.read_text())
    rows = [r for r in sec.get("Subject To", [])
            if family_of(r.split(":", 1)[0].split("__", 1)[0]) == case.family]
    used = {v.name for fam, cons in mv.constraints.items() if family_of(fam) == case.family
            for con in cons.values() for v in con.keys()}
    bounds = [b for b in sec.get("Bounds", []) if used & set(b.split())]
    ints = [v for v in sec.get("Generals", []) if v in used]
    bins = [v for v in sec.get("Binaries", []) if v in used]
    doc = " ".join((case.build.__doc__ or "").split())
    head = [f"family {case.family}: {case.build.__name__}(){' elastic' if case.elastic else ''}"
            f"{'' if case.unserved_limit is None else f' unserved_limit={case.unserved_limit:g}'}"
            f"{'' if case.unserved_floor is None else f' unserved_floor={case.unserved_floor:g}'}",
            f"instance: {doc}", f"hand check: {case.check}",
            "regenerate: python tests/golden/regen.py"]
    out = [f"\\* {part} *\\" for h in head for part in textwrap.wrap(h, 84)]
    out += ["Subject To", *rows]
    for title, lines in (("Bounds", bounds), ("Generals", ints), ("Binaries", bins)):
        if lines:
            out += [title, *lines]
    return "\n".join([*out, "End"]) + "\n"
