"""Tiny hand-made planner inputs for unit tests (no perf or facility model needed)."""

from __future__ import annotations

import datetime as dt

from dcplan.planner.inputs import (
    ExistingData,
    PerfData,
    PlanInputs,
    RackData,
    RackSiteData,
    SiteData,
    WorkloadData,
)
from dcplan.scenario import Period


def periods(n: int, start: int = 2026) -> list[Period]:
    return [Period(str(start + i), dt.date(start + i, 1, 1), 1.0, float(i)) for i in range(n)]


def rack(id="ra", capex=1000.0, maint=0.0, life=10.0, pos=1, kw_max=10.0, kw_idle=2.0,
         liquid=False, first=0) -> RackData:
    return RackData(id, capex, maint, life, pos, kw_max, kw_idle, liquid, first)


def site(id="sa", n=3, grid_kw=100.0, positions=10, max_kw=1000.0, water=True, price=0.1,
         demand_charge=0.0, carbon=0.5, build=0.0, built0=0.0, first_build=0,
         region="r1") -> SiteData:
    grid = tuple(grid_kw) if isinstance(grid_kw, list | tuple) else (grid_kw,) * n
    return SiteData(id, region, grid, positions, max_kw, water, price, demand_charge, carbon,
                    build, built0, first_build)


def rack_site(loss=0.0, cool_avg=0.0, cool_peak=0.0, net_kw=0.0, net_capex=0.0, liquid_kw=0.0,
              cdu_id="", cdu_kw=0.0, cdu_capex=0.0, cdu_pos=0.0, cool_capex=0.0,
              allowed=True) -> RackSiteData:
    return RackSiteData(allowed, "" if allowed else "not allowed", net_kw, net_capex, cool_avg,
                        cool_peak, loss, liquid_kw, cdu_id, cdu_kw, cdu_capex, cdu_pos,
                        cool_capex, 1.0 + cool_avg)


def workload(id="wa", demand=(100.0, 200.0, 300.0), peak=1.0, disagg=False, input_frac=0.5,
             sites=None) -> WorkloadData:
    return WorkloadData(id, disagg, input_frac, peak, tuple(demand),
                        frozenset(sites) if sites else None)


def make_inputs(racks=None, sites=None, workloads=None, perf=None, rack_sites=None, n=3,
                rate=0.0, existing=(), budget=None, terminal=False, redundancy=1,
                **kw) -> PlanInputs:
    """One rack, one site, one workload by default; every coefficient overridable."""
    racks = racks or [rack()]
    sites = sites or [site(n=n)]
    workloads = workloads or [workload(demand=[100.0 * (i + 1) for i in range(n)])]
    rs = {(r.id, s.id): rack_site() for r in racks for s in sites}
    rs.update(rack_sites or {})
    pf = {(r.id, w.id): PerfData(goodput_tokens_per_s=100.0, power_kw=r.it_power_max_kw,
                                 prefill_tokens_per_s=100.0, decode_tokens_per_s=100.0)
          for r in racks for w in workloads}
    pf.update(perf or {})
    return PlanInputs(
        periods=periods(n), racks={r.id: r for r in racks}, sites={s.id: s for s in sites},
        rack_site=rs, perf=pf, workloads={w.id: w for w in workloads},
        existing=[ExistingData(*e) for e in existing],
        budget_usd=tuple(budget) if budget else (None,) * n, discount_rate=rate,
        terminal_value=terminal, cdu_redundancy=redundancy, **kw)
