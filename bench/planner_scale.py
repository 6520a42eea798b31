"""Planner scale benchmark: model size, build time and solve time to 0.5 % gap.

Usage: python bench/planner_scale.py [--quick] [--time-limit S] [--no-cbc] [--no-start]
                                    [--max-sites N] [--features] [--supply] [--max-hours N]
                                    [--fabric] [--exact [--runs N]]

``--exact``: the exact facility (integer fabric) solved in two stages
(``dcplan.planner.two_stage``) on examples/baseline_exact.yaml, examples/kyber_exact.yaml
and the two smallest generated instances with ``--fabric`` (``--quick``: the smallest
only): seconds until the plan is proven within 1 % and 0.5 % of the bound (the solve
stops at 0.5 %), plan, bound and its source, per run.

Prints one row per (instance, solver). Instances are generated (see planner_gen.py),
from 2 sites x 8 years x 4 rack types x 2 workloads up to 50 sites x 40 quarters x 12
rack types x 6 workloads.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from planner_gen import generate  # noqa: E402

from dcplan.cli.common import format_table  # noqa: E402
from dcplan.planner import build_model, model_size, solve  # noqa: E402
from dcplan.planner.start import rounding_start  # noqa: E402
from dcplan.scenario import SolverOptions  # noqa: E402

SIZES = [  # sites, periods, racks, workloads, quarterly
    (2, 8, 4, 2, False),
    (5, 12, 6, 3, False),
    (10, 20, 8, 4, True),
    (25, 40, 10, 5, True),
    (50, 40, 12, 6, True),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only the two smallest instances")
    ap.add_argument("--time-limit", type=float, default=120.0, help="per solve [s]")
    ap.add_argument("--gap", type=float, default=0.005)
    ap.add_argument("--no-cbc", action="store_true", help="HiGHS only")
    ap.add_argument("--no-start", action="store_true",
                    help="HiGHS without the rounded-relaxation start (as before)")
    ap.add_argument("--max-sites", type=int, default=None, help="skip larger instances")
    ap.add_argument("--cbc-max-sites", type=int, default=10,
                    help="skip CBC above this many sites (it is much slower)")
    ap.add_argument("--features", action="store_true",
                    help="every planning feature on (profiles, flexible work, headroom, "
                         "spares, paths, carbon, grid connections; see planner_gen)")
    ap.add_argument("--supply", action="store_true",
                    help="--features plus a battery, gas engines and a flexible grid "
                         "connection at every site (time to power; see planner_gen)")
    ap.add_argument("--max-hours", type=int, default=None,
                    help="merge the representative hours into at most N groups")
    ap.add_argument("--min-sites", type=int, default=None, help="skip smaller instances")
    ap.add_argument("--fabric", action="store_true",
                    help="integer fabric (switches and links per site, period and rack "
                         "type) instead of the per-rack linear network coefficients")
    ap.add_argument("--fabric-rounded", action="store_true",
                    help="with --fabric: without the spine-balancing and striping binaries "
                         "(spines = ceil(uplinks / radix), a lower bound)")
    ap.add_argument("--exact", action="store_true",
                    help="exact facility, two-stage solve: time to a proven 1 %% and 0.5 %%")
    ap.add_argument("--runs", type=int, default=1, help="with --exact: runs per instance")
    args = ap.parse_args()
    if args.exact:
        exact_rows(args)
        return
    rows = []
    sizes = SIZES[:2] if args.quick else SIZES
    for n_s, n_p, n_r, n_w, quarterly in sizes:
        if args.max_sites is not None and n_s > args.max_sites:
            continue
        if args.min_sites is not None and n_s < args.min_sites:
            continue
        d = generate(n_s, n_p, n_r, n_w, quarterly, features=args.features,
                     max_hours=args.max_hours, fabric=args.fabric,
                     fabric_exact=not args.fabric_rounded, supply=args.supply)
        solvers = ["highs"] + ([] if args.no_cbc or n_s > args.cbc_max_sites else ["cbc"])
        for solver in solvers:
            t0 = time.perf_counter()
            prob, mv = build_model(d)
            build = time.perf_counter() - t0
            size = model_size(prob)
            info = solve(prob, SolverOptions(name=solver, gap=args.gap,
                                            time_limit_s=args.time_limit, fallback=False,
                                            mip_start=not args.no_start),  # on at every size
                         rounding=rounding_start(d, mv))
            rows.append({
                "sites x periods x racks x wl": f"{n_s}x{n_p}{'q' if quarterly else 'y'}"
                                                f"x{n_r}x{n_w}",
                "hours": max(len(d.rep_hours(p)) for p in range(len(d.periods))),
                "solver": solver, "vars": size["variables"], "ints": size["integers"],
                "cons": size["constraints"], "nonzeros": size["nonzeros"],
                "build_s": round(build, 2), "solve_s": round(info.runtime_s, 2),
                "status": info.status.value,
                "gap": (f"<={args.gap:.1%} (CBC)" if info.gap is None and info.status.value ==
                        "optimal" else "unknown" if info.gap is None else f"{info.gap:.3%}"),
                "objective_musd": None if info.objective is None else info.objective / 1e6,
            })
            # as wide as they need: a row cut to the terminal loses its columns
            print(format_table(rows[-1:], width=None), flush=True) if len(rows) == 1 else \
                print(format_table(rows[-1:], width=None).splitlines()[-1], flush=True)
    print()
    print(format_table(rows, width=None))


def exact_rows(args) -> None:
    """``--exact``: two-stage solves of the exact facility, time to a proven 1 % / 0.5 %."""
    import dataclasses
    import os

    from dcplan.case import load_case
    from dcplan.planner.prepare import prepare_inputs
    from dcplan.planner.two_stage import solve_two_stage

    root = Path(__file__).resolve().parent.parent
    cases = []
    for name in () if args.quick else ("baseline_exact", "kyber_exact"):
        case = load_case(root / "examples" / f"{name}.yaml")
        cases.append((name, lambda c=case: (prepare_inputs(c), prepare_inputs(
            c.with_network_model("linear")))))
    for n_s, n_p, n_r, n_w, quarterly in SIZES[:1 if args.quick else 2]:
        def gen(n_s=n_s, n_p=n_p, n_r=n_r, n_w=n_w, quarterly=quarterly):
            d = generate(n_s, n_p, n_r, n_w, quarterly, fabric=True)
            return d, dataclasses.replace(d, fabrics={})
        cases.append((f"{n_s}x{n_p}{'q' if quarterly else 'y'}x{n_r}x{n_w} --fabric", gen))
    rows = []
    for name, make in cases:
        d, first = make()
        for run in range(args.runs):
            prob, mv = build_model(d)
            size = model_size(prob)
            opt = SolverOptions(gap=0.005, time_limit_s=args.time_limit, fallback=False)
            t0 = time.perf_counter()
            _p, _m, info, rep = solve_two_stage(d, first, opt, model=(prob, mv))
            wall = time.perf_counter() - t0
            src, bound = rep.best_bound or ("-", None)
            t1, t05 = rep.seconds_to(0.01), rep.seconds_to(0.005)
            rows.append({
                "instance": name, "run": run + 1, "vars": size["variables"],
                "ints": size["integers"], "solve_s": round(wall, 1),
                "to_1pct_s": "-" if t1 is None else round(t1, 1),
                "to_0.5pct_s": "-" if t05 is None else round(t05, 1),
                "plan_musd": None if info is None else round(info.objective / 1e6, 2),
                "bound_musd": None if bound is None else round(bound / 1e6, 2),
                "gap": "-" if info is None or info.gap is None else f"{info.gap:.3%}",
                "bound from": src.split(",")[0].replace("HiGHS branch and bound on the ", ""),
                "load": f"{os.getloadavg()[0]:.1f}",
            })
            # as wide as they need: a row cut to the terminal loses its columns
            print(format_table(rows[-1:], width=None), flush=True) if len(rows) == 1 else \
                print(format_table(rows[-1:], width=None).splitlines()[-1], flush=True)
    print()
    print(format_table(rows, width=None))


if __name__ == "__main__":
    main()
