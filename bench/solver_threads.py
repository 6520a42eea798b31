"""HiGHS threads 1 against 2 on the shipped examples, several random seeds.

Each example is planned (no shadow prices, no sizing) with ``threads`` 1 and 2 and each
of ``--seeds`` HiGHS random seeds (the planner itself always uses seed 0; this bench
changes it to see how much of a difference between thread counts is the search's luck).
Reports wall time [s], CPU time of the process [s], the proven gap and the NPV per run,
and per example and thread count the median over the seeds, with the load average
before and after. Run it on a machine with nothing else running:

    python bench/solver_threads.py examples/minimal.yaml examples/baseline.yaml --seeds 3

``--cap-ratio 3`` stops each two-thread run at three times the one-thread median (a
run that slow has lost; its wall shows as ``>T``), so every example fits in one sitting.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path


def _uptime() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def run_one(path: Path, threads: int, seed: int, time_limit_s: float | None = None) -> dict:
    """Plan ``path`` with ``threads`` HiGHS threads and random seed ``seed``.

    ``time_limit_s`` replaces the scenario's solver time limit [s] when given.

    Returns
    -------
    dict
        ``wall_s`` and ``cpu_s`` [s] (this process and its waited-for children), ``gap`` [-],
        ``npv_usd`` [USD], ``status``, ``solver`` (``cbc`` when HiGHS failed and CBC answered).
    """
    from dcplan.planner import highs
    from dcplan.planner.run import solve_case

    init = highs.HighsDirect.__init__

    def seeded(self, *a, **kw):
        kw["random_seed"] = seed
        init(self, *a, **kw)

    highs.HighsDirect.__init__ = seeded
    try:
        c0, t0 = os.times(), time.perf_counter()
        res = solve_case(path, threads=threads, explain=False, size=False,
                         time_limit_s=time_limit_s)
        wall = time.perf_counter() - t0
        c1 = os.times()
    finally:
        highs.HighsDirect.__init__ = init
    cpu = sum(b - a for a, b in zip(c0[:4], c1[:4], strict=True))  # self + children
    return {"wall_s": wall, "cpu_s": cpu, "gap": res.gap, "npv_usd": res.objective_usd,
            "status": res.status.value, "solver": res.solver}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenarios", nargs="+", type=Path)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--cap-ratio", type=float, default=None,
                    help="stop each 2-thread run at this multiple of the 1-thread median "
                         "wall time (at least --cap-min-s; within the scenario's own "
                         "limit): a run stopped there is shown as '>T' and lost")
    ap.add_argument("--cap-min-s", type=float, default=20.0)
    args = ap.parse_args()
    print(f"start: {_uptime()}")
    print("| example | threads | wall [s] per seed | median wall [s] | median CPU [s] | "
          "gaps | NPV [M USD] per seed |")
    print("|---|---:|---|---:|---:|---|---|")
    for path in args.scenarios:
        one = None
        for threads in (1, 2):
            cap = None
            if threads == 2 and args.cap_ratio and one is not None:
                cap = max(args.cap_min_s, args.cap_ratio * one)
            runs = [run_one(path, threads, seed, cap) for seed in range(args.seeds)]
            if threads == 1:
                one = statistics.median(r["wall_s"] for r in runs)
            # a run HiGHS did not finish itself (CBC's fallback) is no HiGHS timing
            walls = ", ".join(
                (f">{cap:.0f}" if cap is not None and r["status"] != "optimal"
                 else f"{r['wall_s']:.1f}")
                + ("" if r["solver"] == "highs" else f" ({r['solver']})") for r in runs)
            gaps = ", ".join("-" if r["gap"] is None else f"{r['gap'] * 100:.2f} %"
                             for r in runs)
            npvs = ", ".join(f"{(r['npv_usd'] or 0) / 1e6:,.1f}" for r in runs)
            print(f"| {path.stem} | {threads} | {walls} | "
                  f"{statistics.median(r['wall_s'] for r in runs):.1f} | "
                  f"{statistics.median(r['cpu_s'] for r in runs):.1f} | {gaps} | {npvs} |",
                  flush=True)
    print(f"end: {_uptime()}")


if __name__ == "__main__":
    main()
