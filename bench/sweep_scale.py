"""Wall time of a sweep on a local Dask cluster with 1, 2, ... workers.

Usage: python bench/sweep_scale.py [--samples N] [--workers 1,2] [--repeat R]
       [--sweep FILE] [--no-memo]

Runs ``dcplan sweep``'s engine (:func:`dcplan.sweep.run.run_sweep`, a
``distributed.LocalCluster`` of single-threaded worker processes, HiGHS on one thread)
on the sweep file (default: ``examples/sweeps/minimal_lhs.yaml``) into a fresh folder
each time, so that no facility table of an earlier run is reused. Prints, per worker
count, the median over ``R`` runs of the wall time (cluster start and the base plan
included), samples per second, the CPU time the workers spent per sample (what a
busy shared machine does not change much), the share of the workers' wall time they
got a CPU (1.0: each worker had a core to itself), the speed-up over the smallest
worker count, an estimate for an idle machine (the serial start, i.e. the base plan,
the cluster and sending the case, plus the workers' CPU time shared by the workers)
with its speed-up, and the facility tables computed and reused. ``--no-memo`` turns
the facility memo off (every sample computes its tables) to show what it saves.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from dcplan.case import load_case
from dcplan.export.text import format_table
from dcplan.sweep.run import prepare_sweep, run_sweep
from dcplan.sweep.spec import load_sweep_spec

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--sweep", type=Path, default=ROOT / "examples" / "sweeps" /
                    "minimal_lhs.yaml")
    ap.add_argument("--no-memo", action="store_true",
                    help="compute every facility table (no reuse across samples)")
    args = ap.parse_args()
    spec = load_sweep_spec(args.sweep)
    case = load_case(spec.base_path())
    plan = prepare_sweep(spec, case, samples=args.samples)
    counts = [int(x) for x in args.workers.split(",")]
    rows, first = [], None
    for n in counts:
        walls, cpus, starts, tables, statuses = [], [], [], None, None
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="dcplan-bench-sweep-") as tmp:
                t0 = time.perf_counter()
                out = run_sweep(plan, Path(tmp) / "sweep", workers=n,
                                reuse_tables=not args.no_memo)
                walls.append(time.perf_counter() - t0)
                cpus.append(out.cpu_s)
                starts.append(out.startup_s)
                tables, statuses = out.facility_tables, out.statuses
                assert len(out.workers) == n, out.workers
        wall = statistics.median(walls)
        cpu = statistics.median(cpus)
        # what an idle machine would take: the serial start plus the workers' CPU time
        # shared by n cores
        idle = statistics.median(starts) + cpu / n
        first = first or (n, wall, idle)
        reused = tables.get("hits", 0) + tables.get("disk_hits", 0)
        rows.append({
            "workers": n, "samples": plan.design.size,
            "wall_s (median)": f"{wall:.1f}",
            "runs": ", ".join(f"{w:.1f}" for w in walls),
            "samples/s": f"{plan.design.size / wall:.2f}",
            "worker CPU per sample [s]": f"{cpu / plan.design.size:.2f}",
            "CPU share [-]": f"{cpu / (wall * n):.2f}",
            f"speed-up vs {first[0]}": f"{first[1] / wall:.2f}",
            "idle-machine estimate [s]": f"{idle:.0f}",
            f"estimated speed-up vs {first[0]}": f"{first[2] / idle:.2f}",
            "facility tables computed": tables.get("misses", 0),
            "reused": reused,
            "statuses": ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())),
        })
    shown = args.sweep.relative_to(ROOT) if args.sweep.is_relative_to(ROOT) else args.sweep
    print(f"sweep: {shown} ({spec.method}, {len(spec.parameters)} parameters); "
          f"{os.cpu_count()} cores; Python {sys.version.split()[0]}"
          + ("; facility memo OFF" if args.no_memo else ""))
    print(format_table(rows))


if __name__ == "__main__":
    main()
