"""How long the command line takes: start-up, help, TAB, two whole commands.

Start-up: --version, help, a completion TAB; two whole commands whose time is mostly
imports and reading inputs.

Usage: python bench/cli_start.py [--repeat N] [--tree DIR]

The whole commands: ``dcplan show`` of a saved plan (the minimal example with the
linear network, planned once by this checkout before the runs) and ``dcplan plan`` of
that scenario with no outputs but the terminal's.

Runs each command line as its own process, as the ``dcplan`` console script runs (its
entry point, program name ``dcplan``), N times, and prints the median CPU time (user +
system of the process, from the operating system) and wall time [s], with the load
average before. ``--tree`` times another checkout of dcplan (e.g. an older commit's
worktree) for comparison; the default is this one.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The console script's entry point under the program name ``dcplan``.
_RUN = ("import sys; sys.argv = ['dcplan', *sys.argv[1:]]; "
        "from dcplan.__main__ import main; main()")

#: (what, arguments, extra environment).
CASES = [
    ("dcplan --version", ["--version"], {}),
    ("dcplan --help", ["--help"], {}),
    ("dcplan perf --help", ["perf", "--help"], {}),
    ("TAB: dcplan perf --rack gb2", [], {"_DCPLAN_COMPLETE": "complete_bash",
                                         "COMP_WORDS": "dcplan perf --rack gb2",
                                         "COMP_CWORD": "3"}),
    ("TAB: dcplan cooling --site ", [], {"_DCPLAN_COMPLETE": "complete_bash",
                                         "COMP_WORDS": "dcplan cooling --site ",
                                         "COMP_CWORD": "3"}),
    ("TAB: dcplan plan ex", [], {"_DCPLAN_COMPLETE": "complete_bash",
                                 "COMP_WORDS": "dcplan plan ex", "COMP_CWORD": "2"}),
    ("dcplan catalog list racks (reads the catalogs)", ["catalog", "list", "racks"], {}),
    ("dcplan show PLAN (a saved plan)", ["show", "{plan}"], {}),
    ("dcplan plan SCENARIO -q (minimal, linear network)", ["plan", "{scenario}", "-q"], {}),
]


def _inputs(folder: Path) -> dict[str, str]:
    """The scenario and saved plan the whole commands read, made in ``folder``."""
    scenario = folder / "minimal_linear.yaml"
    scenario.write_text(f"extends: {ROOT / 'examples' / 'minimal.yaml'}\n"
                        "network_model: linear\n", encoding="utf-8")
    plan = folder / "minimal.plan"
    subprocess.run([sys.executable, "-m", "dcplan", "plan", str(scenario), "-q",
                    "--save", str(plan)], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return {"{scenario}": str(scenario), "{plan}": str(plan)}


def _run(tree: Path, args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """CPU time (user + system) [s] and wall time [s] of one run."""
    full = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "100", **env}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", _RUN, *args], cwd=tree, env=full,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{args or env.get('COMP_WORDS')}: exit "
                         f"{os.waitstatus_to_exitcode(status)}")
    return usage.ru_utime + usage.ru_stime, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tree", type=Path, default=ROOT)
    args = ap.parse_args()
    tree = args.tree.resolve()
    folder = Path(tempfile.mkdtemp(prefix="cli_start."))
    files = _inputs(folder)
    print(f"{tree}, load average {os.getloadavg()[0]:.2f}, medians of {args.repeat} runs")
    print("| command | CPU [s] | wall [s] |")
    print("|---|---|---|")
    for what, argv, env in CASES:
        argv = [files.get(a, a) for a in argv]
        runs = [_run(tree, argv, env) for _ in range(args.repeat)]
        cpu = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[1] for r in runs)
        print(f"| `{what}` | {cpu:.2f} | {wall:.2f} |")
    shutil.rmtree(folder)


if __name__ == "__main__":
    main()
