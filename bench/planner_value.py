"""Value of optimisation: the MILP plan vs a greedy spreadsheet heuristic.

Usage: python bench/planner_value.py [--quick]

The heuristic is what a spreadsheet planner would do, period by period: for each
workload's unmet peak demand, buy the rack type with the lowest cost per token
(annualised capex + maintenance + energy at the site tariff, per token/s of goodput)
at the cheapest site that still has grid, space and built capacity, until demand is
met. Its plan is then costed with the same model (racks fixed, everything else
optimised), so both figures are present values on the same basis.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from planner_gen import generate  # noqa: E402

from dcplan.cli.common import format_table  # noqa: E402
from dcplan.planner import build_model, solve  # noqa: E402
from dcplan.planner.inputs import PlanInputs  # noqa: E402
from dcplan.scenario import SolverOptions  # noqa: E402

EXAMPLE = Path(__file__).parent.parent / "examples" / "minimal.yaml"


def _rack_kw(d: PlanInputs, r: str, s: str) -> float:
    rs, rk = d.rack_site[r, s], d.racks[r]
    return (1 + rs.loss_frac) * ((1 + rs.cooling_kw_per_it_kw_peak) * rk.it_power_max_kw
                                 + rs.network_kw_per_rack)


def greedy(d: PlanInputs) -> dict:
    """Rack purchases {(rack, site, period): count} of the spreadsheet heuristic."""
    new: dict = {}

    def installed(r, s, p):
        return d.existing_count(r, s, p) + sum(n for (r2, s2, q), n in new.items()
                                               if (r2, s2) == (r, s) and q <= p
                                               and d.alive(r, q, p))

    for p in range(len(d.periods)):
        used_kw = {s: sum(installed(r, s, p) * _rack_kw(d, r, s) for r in d.racks
                          if (r, s) in d.rack_site and d.rack_site[r, s].allowed)
                   for s in d.sites}
        used_pos = {s: sum(installed(r, s, p) * d.racks[r].rack_positions for r in d.racks)
                    for s in d.sites}
        # Capacity already in service serves demand first (largest workloads first).
        spare = {(r, s): float(installed(r, s, p)) for r in d.racks for s in d.sites}
        for w, wd in sorted(d.workloads.items(), key=lambda kv: -kv[1].demand_tokens_per_s[p]):
            need = sum(wd.peak_tokens_per_s(p, k) for k in wd.pools)
            for (r, s), n in spare.items():
                if need <= 0 or n <= 0 or not d.serves(r, s, w):
                    continue
                rate = d.perf[r, w].goodput_tokens_per_s
                use = min(n, need / rate)
                spare[r, s] -= use
                need -= use * rate
            options = []
            for r in d.racks:
                for s, sd in d.sites.items():
                    if not d.buyable(r, s, p) or not d.serves(r, s, w):
                        continue
                    rk = d.racks[r]
                    yearly = (rk.capex_usd / rk.lifetime_years
                              + rk.capex_usd * rk.maintenance_frac_per_year
                              + _rack_kw(d, r, s) * 8766 * sd.energy_usd_per_kwh)
                    options.append((yearly / d.perf[r, w].goodput_tokens_per_s, r, s))
            for _, r, s in sorted(options):
                if need <= 0:
                    break
                sd, kw = d.sites[s], _rack_kw(d, r, s)
                built = sd.built_kw_initial if p < sd.first_build_period else math.inf
                room_kw = min(sd.grid_kw[p], built) - used_kw[s]
                room = min(room_kw // kw, (sd.rack_positions - used_pos[s])
                           // d.racks[r].rack_positions)
                n = int(min(room, math.ceil(need / d.perf[r, w].goodput_tokens_per_s)))
                if n <= 0:
                    continue
                new[r, s, p] = new.get((r, s, p), 0) + n
                used_kw[s] += n * kw
                used_pos[s] += n * d.racks[r].rack_positions
                need -= n * d.perf[r, w].goodput_tokens_per_s
    return new


def cost_of(d: PlanInputs, new: dict) -> tuple[float, bool]:
    """Present value of a fixed purchase plan (elastic, so a short plan pays its penalty)."""
    prob, mv = build_model(d, elastic=True)
    for k, var in mv.racks_bought.items():
        var.lowBound = var.upBound = new.get(k, 0)
    info = solve(prob, SolverOptions(gap=1e-4, time_limit_s=120))
    short = any((v.value() or 0) > 1e-6 for v in mv.unserved_tokens_per_s.values())
    return info.objective, short


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    cases = []
    if EXAMPLE.exists():
        from dcplan.case import load_case
        from dcplan.planner import prepare_inputs

        d = prepare_inputs(load_case(EXAMPLE))
        cases.append(("examples/minimal.yaml", d))
    sizes = [(2, 8, 4, 2, 1), (3, 8, 4, 2, 2)] if args.quick else \
        [(2, 8, 4, 2, 1), (3, 8, 4, 2, 2), (4, 10, 5, 3, 3), (5, 12, 6, 3, 4)]
    for n_s, n_p, n_r, n_w, seed in sizes:
        cases.append((f"generated {n_s}x{n_p}x{n_r}x{n_w} seed {seed}",
                      generate(n_s, n_p, n_r, n_w, False, seed=seed)))
    rows = []
    for name, d in cases:
        prob, _ = build_model(d)
        milp = solve(prob, SolverOptions(gap=0.005, time_limit_s=120))
        g_cost, g_short = cost_of(d, greedy(d))
        rows.append({"case": name, "milp_npv_musd": milp.objective / 1e6,
                     "milp_status": milp.status.value,
                     "greedy_npv_musd": g_cost / 1e6,
                     "greedy_meets_demand": "no (penalty incl.)" if g_short else "yes",
                     "saving_frac": f"{(g_cost - milp.objective) / g_cost:.1%}"})
        print(format_table(rows[-1:]).splitlines()[-1], flush=True)
    print()
    print(format_table(rows))


if __name__ == "__main__":
    main()
