"""Synthetic planner instances for the benchmarks (coefficients drawn from a seeded RNG).

The figures are generated, not data: they only need realistic orders of magnitude so
that solver behaviour at scale is representative.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import random

from dcplan.planner.inputs import (
    FlexData,
    GridData,
    OnsiteData,
    PerfData,
    PlanInputs,
    RackData,
    RackSiteData,
    SiteData,
    StorageData,
    WorkloadData,
)
from dcplan.scenario import Period


def _profile_shapes() -> list[tuple[tuple[float, ...], tuple[float, ...]]]:
    """(hourly values, day weights) of the shipped profiles (catalogs/profiles.yaml)."""
    from dcplan.catalog import load_catalog

    cat = load_catalog()
    return [cat.get("profiles", k).shape() for k in ("kr_consumer_chat", "kr_developer_workday",
                                                      "kr_enterprise_workday",
                                                      "kr_batch_submissions")]


def with_features(d: PlanInputs, seed: int = 0, max_hours: int | None = None) -> PlanInputs:
    """``d`` with every planning feature switched on (benchmark ``--features``).

    Daily profiles (the shipped Korean shapes, weekday and weekend) on every workload,
    the last workload flexible (deadline 24 h); target utilisation 0.8-0.9 and
    availability 0.97; N+1 spare racks at every tenth site; rack prices falling 10 %/yr,
    tariffs rising 2 %/yr, a carbon price and a (loose) carbon cap; software speedup
    10 %/yr; grid connections as decisions at every site (the first grid step
    committed, the rest requested with a 2-4-year lead time and a 10 MW assessment
    threshold adding 6 months); building cost in three parts.
    """
    rng = random.Random(seed + 1)
    shapes = _profile_shapes()
    n = len(d.periods)
    workloads = {}
    names = list(d.workloads)
    for j, (w, wd) in enumerate(d.workloads.items()):
        values, weights = shapes[j % len(shapes)]
        workloads[w] = dataclasses.replace(
            wd, profile=values, peak_factor=max(values), flexible=(w == names[-1]),
            target_utilisation=rng.uniform(0.8, 0.9),
            speedup=tuple(1.1 ** p.offset_years for p in d.periods))
    racks = {r: dataclasses.replace(rk, availability=0.97,
                                    capex_path=tuple(rk.capex_usd * 0.9 ** p.offset_years
                                                     for p in d.periods))
             for r, rk in d.racks.items()}
    sites = {}
    step = d.periods[0].years
    for s, sd in d.sites.items():
        lead = rng.choice([2, 3, 4])
        q_lead = int(round(lead / step))
        q_extra = int(round(0.5 / step))
        conn = GridData(committed_kw=tuple(sd.grid_kw[0] for _ in range(n)),
                        arrival=tuple(min(q + q_lead, n) for q in range(n)),
                        arrival_assessed=tuple(min(q + q_lead + q_extra, n) for q in range(n)),
                        cost_usd_per_kw=300.0, threshold_kw=10_000.0,
                        lead_time_months=12 * lead, assessment_months=6)
        sites[s] = dataclasses.replace(
            sd, connection=conn,
            build_parts_usd_per_kw=(("shell", 0.375 * sd.build_capex_usd_per_kw),
                                    ("electrical", 0.45 * sd.build_capex_usd_per_kw),
                                    ("mechanical", 0.117 * sd.build_capex_usd_per_kw)),
            energy_path=tuple(sd.energy_usd_per_kwh * 1.02 ** p.offset_years
                              for p in d.periods))
    spares = {(r, s): 1 for i, s in enumerate(d.sites) if i % 10 == 0 for r in d.racks}
    peak_kg = sum(sd.grid_kw[-1] * sd.carbon_kg_per_kwh for sd in d.sites.values())
    return dataclasses.replace(
        d, workloads=workloads, racks=racks, sites=sites, spare_racks=spares,
        day_names=("weekday", "weekend"), day_weights=shapes[0][1],
        carbon_usd_per_kg=tuple(0.007 * 1.15 ** p.offset_years for p in d.periods),
        carbon_cap_kg=tuple(peak_kg * 8760 * p.years * 0.8 for p in d.periods),
        max_hours=max_hours, name="generated_features")


def with_supply(d: PlanInputs) -> PlanInputs:
    """``d`` (with grid connections as decisions) with the time-to-power options on.

    At every site: a 4-hour battery (the figures of ``lfp_container_4h``), gas engines
    (``recip_engine_gas`` at 0.09 USD/kWh of fuel, from the second period: a year's
    lead time) and a flexible part of its connection (up to half its first grid step,
    energised a year after the request, at the firm request's price, cut by 25 % for up
    to 200 h a year in a 4-hour event from 17:00). Benchmark ``--supply``.

    Parameters
    ----------
    d : PlanInputs
        Instance with grid connections (:func:`with_features`).

    Returns
    -------
    PlanInputs
    """
    n = len(d.periods)
    step = d.periods[0].years
    q_year = max(1, int(round(1 / step)))
    bat = StorageData("lfp", capex_usd_per_kwh=300.0, capex_usd_per_kw=250.0, efficiency=0.85,
                      depth_of_discharge=0.9, life_years=15.0, degradation_per_year=0.02,
                      fixed_om_usd_per_kw_year=35.0)
    gen = OnsiteData("engine", capex_usd_per_kw=2000.0, fuel_usd_per_kwh=(0.09,) * n,
                     carbon_kg_per_kwh=0.44, availability=0.95, first_period=min(q_year, n),
                     life_years=25.0, variable_om_usd_per_kwh=0.007,
                     fixed_om_usd_per_kw_year=35.0, min_stable_load=0.3)
    sites = {}
    for s, sd in d.sites.items():
        g = sd.connection
        fx = FlexData(arrival=tuple(min(q + q_year, n) for q in range(n)),
                      cost_usd_per_kw=g.cost_usd_per_kw, max_kw=0.5 * max(sd.grid_kw[0], 1.0),
                      depth=0.25, hours_per_year=200.0, event_hours=(17, 18, 19, 20))
        sites[s] = dataclasses.replace(sd, connection=dataclasses.replace(g, flexible=fx))
    return dataclasses.replace(d, sites=sites, storage={s: (bat,) for s in d.sites},
                               onsite={s: (gen,) for s in d.sites}, name="generated_supply")


#: Catalog rack whose fabric a generated rack of this IT power [kW] takes (``--fabric``).
FABRIC_OF_KW = {40.0: "hgx_b300", 60.0: "hgx_b300", 120.0: "gb200_nvl72",
                135.0: "gb300_nvl72", 190.0: "vera_rubin_nvl72", 600.0: "rubin_ultra_nvl576"}


def with_fabrics(d: PlanInputs, exact: bool = True) -> PlanInputs:
    """``d`` with the integer fabric of a catalog rack of the same power class per rack.

    Each generated rack takes the back-end and front-end fabrics of the shipped rack
    type of its IT power (:data:`FABRIC_OF_KW`), at the catalog's switch and optics
    prices; its per-rack linear network coefficients are then unused. ``exact=False``
    drops the spine-balancing and striping refinements (leaves, uplinks and ``ceil(U /
    R)`` spines only: a lower bound on the spines, fewer binaries).
    """
    from dcplan.catalog import load_catalog
    from dcplan.planner.fabric import fabric_data
    from dcplan.planner.inputs import network_rack_units

    cat = load_catalog()
    cache: dict = {}
    fabrics = {}
    for r, rk in d.racks.items():
        real = FABRIC_OF_KW[rk.it_power_max_kw]
        most = max(sd.rack_positions // rk.rack_positions for sd in d.sites.values())
        key = (real, most)
        if key not in cache:
            cache[key] = fabric_data(cat, real, 32, most)
        fabrics[r] = tuple(dataclasses.replace(fd, rack=r) if exact else
                           dataclasses.replace(fd, rack=r, gaps=(), overfill=())
                           for fd in cache[key])
    return dataclasses.replace(d, fabrics=fabrics, network_rack_units=network_rack_units())


def generate(n_sites: int, n_periods: int, n_racks: int, n_workloads: int, quarterly: bool,
             seed: int = 0, features: bool = False, max_hours: int | None = None,
             fabric: bool = False, fabric_exact: bool = True,
             supply: bool = False) -> PlanInputs:
    """A random but well-posed instance with growing demand (``features``: see
    :func:`with_features`; ``fabric``: :func:`with_fabrics`; ``supply``: the features
    and :func:`with_supply`)."""
    d = _generate(n_sites, n_periods, n_racks, n_workloads, quarterly, seed)
    d = with_features(d, seed, max_hours) if features or supply else d
    d = with_supply(d) if supply else d
    return with_fabrics(d, fabric_exact) if fabric else d


def _generate(n_sites: int, n_periods: int, n_racks: int, n_workloads: int, quarterly: bool,
              seed: int = 0) -> PlanInputs:
    rng = random.Random(seed)
    step = 0.25 if quarterly else 1.0
    periods = []
    for i in range(n_periods):
        y, q = divmod(i, 4) if quarterly else (i, 0)
        label = f"{2026 + y}q{q + 1}" if quarterly else str(2026 + i)
        periods.append(Period(label, dt.date(2026 + y, 3 * q + 1, 1), step, i * step))
    racks = {}
    for i in range(n_racks):
        kw = rng.choice([40.0, 60.0, 120.0, 135.0, 190.0, 600.0])
        first = 0 if i == 0 else int(rng.random() * n_periods * 0.5)
        racks[f"rack{i}"] = RackData(f"rack{i}", kw * rng.uniform(20e3, 50e3), 0.05,
                                     5.0, 2 if kw >= 600 else 1, kw, kw * 0.2, kw >= 100,
                                     first)
    sites = {}
    for i in range(n_sites):
        base = rng.uniform(5, 60) * 1000
        grid = tuple(base * (1 + 0.4 * p.offset_years * rng.random()) for p in periods)
        sites[f"site{i}"] = SiteData(
            f"site{i}", f"region{i % 4}", grid, rng.randint(200, 3000),
            rng.choice([150.0, 1000.0]), rng.random() < 0.9, rng.uniform(0.05, 0.15),
            rng.uniform(0, 6), rng.uniform(0.1, 0.5), rng.uniform(7e3, 12e3),
            rng.choice([0.0, 5000.0]), 0)
    rack_site = {}
    for r, rk in racks.items():
        for s, sd in sites.items():
            ok = rk.it_power_max_kw <= sd.max_rack_kw and (sd.facility_water or not rk.liquid)
            rack_site[r, s] = RackSiteData(
                allowed=ok, network_kw_per_rack=rk.it_power_max_kw * 0.04,
                network_capex_usd_per_rack=rk.capex_usd * 0.06,
                cooling_kw_per_it_kw_avg=rng.uniform(0.05, 0.2),
                cooling_kw_per_it_kw_peak=rng.uniform(0.15, 0.4), loss_frac=0.05,
                liquid_heat_kw_per_rack=rk.it_power_max_kw * 0.9 if rk.liquid else 0.0,
                cdu_id="cdu_a" if rk.liquid else "", cdu_capacity_kw=1350.0,
                cdu_capex_usd=220e3, cdu_positions=1.0, cooling_capex_usd_per_kw=600.0)
    workloads, perf = {}, {}
    grid_total = [sum(sd.grid_kw[i] for sd in sites.values()) for i in range(n_periods)]
    for j in range(n_workloads):
        w = f"wl{j}"
        share = rng.uniform(0.1, 0.25) / n_workloads
        dem = tuple(share * g * 5e3 for g in grid_total)
        workloads[w] = WorkloadData(w, j % 3 == 2, 0.7, 1.5, dem)
        for r, rk in racks.items():
            rate = rk.it_power_max_kw * rng.uniform(5e3, 2e4) * (1 + 0.3 * rk.first_period * step)
            perf[r, w] = PerfData(rate, rk.it_power_max_kw * 0.9, rate * 1.5, rate * 0.5)
    return PlanInputs(periods, racks, sites, rack_site, perf, workloads, discount_rate=0.08,
                      terminal_value=True, name="generated")
