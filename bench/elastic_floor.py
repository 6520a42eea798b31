"""The elastic plan's second stage with and without the least shortfall's floor.

Usage: python bench/elastic_floor.py [--gap G] [--time-limit S] [--effort E] [--seed N]
[--no-compare] [NAME ...]

For each example that leaves demand unserved (default: seoul_only, seoul_power,
seoul_oversub, carbon_cap), the first stage (least shortfall, proven to ``LEAST_GAP``)
is solved once; then the second stage (cheapest plan that leaves no more unserved, from
the first stage's plan as solve_inputs starts it) is solved with the row
``unserved_floor`` (the first stage's proven bound) and without it. Prints per example
and variant: the LP relaxation's objective at the root (before cuts), the second stage's
solve time [s, wall and process], its objective and gap.

The second stage runs with the planner's options (:func:`dcplan.planner.run.
second_stage_options`: HiGHS's ``mip_heuristic_effort`` at
:data:`~dcplan.planner.run.SECOND_STAGE_HEURISTIC_EFFORT`); ``--effort`` sets another
value, ``--seed`` HiGHS's random seed (the planner fixes it at 0), and ``--no-compare``
leaves out the run without the floor.

The floor cuts off no plan (its objectives must agree within the gaps); it raises the
relaxation, which otherwise serves fractional racks' worth of tokens and prices less
unserved demand than any plan leaves. HiGHS's search is deterministic for one model, so
a repeat measures only the machine's noise; a changed row changes the whole search, so
one example's time says little, and the table shows all of them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from pathlib import Path

from dcplan.case import load_case
from dcplan.cli.common import format_table
from dcplan.planner import prepare_inputs
from dcplan.planner.model import build_model
from dcplan.planner.run import _least_unserved, second_stage_options
from dcplan.planner.solver import solve
from dcplan.planner.start import rounding_start
from dcplan.scenario import SolverOptions

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DEFAULT = ("seoul_only", "seoul_power", "seoul_oversub", "carbon_cap")


def _second_stage(d, opt: SolverOptions, limit: float, floor: float | None,
                  plan: dict[str, float]) -> dict:
    """The second stage as :func:`dcplan.planner.run.solve_inputs` solves it: the rounding
    start and the first stage's plan as MIP start."""
    opt = second_stage_options(opt)
    root, _ = build_model(d, elastic=True, unserved_limit=limit, unserved_floor=floor)
    lp = solve(root, opt, mip=False)
    prob, mv = build_model(d, elastic=True, unserved_limit=limit, unserved_floor=floor)
    start = {v: plan[v.name] for v in prob.variables() if v.name in plan}
    c0, t0 = time.process_time(), time.perf_counter()
    info = solve(prob, opt, rounding=rounding_start(d, mv), start=start or None)
    return {"root LP [M USD]": lp.objective / 1e6,
            "solve [s]": time.perf_counter() - t0, "process [s]": time.process_time() - c0,
            "objective [M USD]": None if info.objective is None else info.objective / 1e6,
            "gap": info.gap, "status": info.status.value,
            "effort": opt.highs_options.get("mip_heuristic_effort", 0.05)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=list(DEFAULT))
    ap.add_argument("--gap", type=float, default=0.01, help="relative MIP gap (the tests' 1 %%)")
    ap.add_argument("--time-limit", type=float, default=1200.0, help="per solve [s]")
    ap.add_argument("--effort", type=float, default=None,
                    help="HiGHS mip_heuristic_effort of the second stage (default: the "
                         "planner's, SECOND_STAGE_HEURISTIC_EFFORT)")
    ap.add_argument("--seed", type=int, default=0, help="HiGHS random_seed (the planner's: 0)")
    ap.add_argument("--no-compare", action="store_true",
                    help="solve the second stage with the floor only")
    args = ap.parse_args(argv)
    if args.seed:
        import dcplan.planner.highs as highs_mod

        init = highs_mod.HighsDirect.__init__

        def seeded(self, *a, **k):
            init(self, *a, **{**k, "random_seed": args.seed})

        highs_mod.HighsDirect.__init__ = seeded
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
          f"({os.cpu_count()} cores)")
    opt = SolverOptions(gap=args.gap, time_limit_s=args.time_limit)
    second = opt if args.effort is None else opt.updated(
        highs_options={"mip_heuristic_effort": args.effort})
    rows = []
    for name in args.names:
        case = load_case(EXAMPLES / f"{name}.yaml").with_changes(
            {"solver.gap": args.gap, "solver.time_limit_s": args.time_limit})
        d = prepare_inputs(case)
        t = {"build": 0.0, "solve": 0.0}
        limit, floor, _note, plan = _least_unserved(d, opt, t, lambda _m: None)
        if limit is None:
            print(f"{name}: the first stage found no plan")
            continue
        variants = (("floor", floor),) if args.no_compare else (("floor", floor),
                                                                   ("none", None))
        for variant, fl in variants:
            r = _second_stage(d, second, limit, fl, plan)
            rows.append({
                "example": name, "floor": variant, "first stage [s]": f"{t['solve']:.0f}",
                "root LP [M USD]": f"{r['root LP [M USD]']:,.1f}",
                "second stage [s]": f"{r['solve [s]']:.0f}",
                "process [s]": f"{r['process [s]']:.0f}",
                "objective [M USD]": "-" if r["objective [M USD]"] is None
                else f"{r['objective [M USD]']:,.1f}",
                "gap": "-" if r["gap"] is None else f"{r['gap']:.3%}", "status": r["status"],
                "effort": f"{r['effort']:g}", "seed": str(args.seed)})
            print(" | ".join(rows[-1].values()), flush=True)
    print(format_table(rows, width=None))
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
