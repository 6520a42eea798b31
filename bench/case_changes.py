"""Cost of loading a case once and changing it many times (what sweeps do per sample).

Usage: python bench/case_changes.py [--repeat N] [--scenario FILE]

Times :func:`dcplan.case.load_case` (reads and checks every file) and
:meth:`dcplan.case.Case.with_changes` (no file read: re-validates the scenario, re-checks
it against the loaded catalogs and sites, re-applies the overrides) for a scenario path
change, an override entry, and both; then :func:`dcplan.planner.prepare_inputs` (the
performance and facility coefficients a plan needs) for comparison. Medians of N runs
in one process [ms].
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from dcplan.case import load_case
from dcplan.export.text import format_table
from dcplan.planner import prepare_inputs

ROOT = Path(__file__).resolve().parent.parent


def _median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--scenario", type=Path, default=ROOT / "examples" / "baseline.yaml")
    args = ap.parse_args()
    case = load_case(args.scenario)
    path = {"demand.peak_to_average": 1.6}
    override = [{"kind": "racks", "id": "gb200_nvl72", "field": "capex_usd", "scale": 1.1}]
    rows = [
        {"step": "load_case (read + check every file)",
         "median_ms": _median_ms(lambda: load_case(args.scenario), max(5, args.repeat // 10))},
        {"step": "with_changes: one scenario path",
         "median_ms": _median_ms(lambda: case.with_changes(path), args.repeat)},
        {"step": "with_changes: one override entry",
         "median_ms": _median_ms(lambda: case.with_changes(overrides=override), args.repeat)},
        {"step": "with_changes: path + override",
         "median_ms": _median_ms(lambda: case.with_changes(path, overrides=override),
                                 args.repeat)},
        {"step": "prepare_inputs (perf + facility coefficients)",
         "median_ms": _median_ms(lambda: prepare_inputs(case), max(3, args.repeat // 10))},
    ]
    shown = args.scenario.relative_to(ROOT) if args.scenario.is_relative_to(ROOT) \
        else args.scenario
    print(f"scenario: {shown} ({len(case.files)} files); Python {sys.version.split()[0]}")
    print(format_table([{k: (f"{v:.2f}" if isinstance(v, float) else v) for k, v in r.items()}
                        for r in rows]))


if __name__ == "__main__":
    main()
