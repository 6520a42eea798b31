"""How fast and how small dcplan's rejection of hostile input is.

Usage: python bench/hostile_inputs.py

Runs ``dcplan plan`` and ``dcplan validate`` as separate processes on each hostile
input of tests/test_hostile_inputs.py (alias bombs, 20,000 nested brackets, .inf
demand, an impossible date, a malformed perf defaults file, a horizon to 2200, 10^12
existing racks, an 11 MB file, an empty sites folder) and on a million-rack network,
and prints each one's exit code, wall time [s] and peak memory [MB] (the process's
own maximum resident set, from the operating system).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from test_hostile_inputs import CASES, _hostile  # noqa: E402

from dcplan.export.text import format_table  # noqa: E402


def _run(args: list[str]) -> tuple[int, float, float, str]:
    """Exit code, wall time [s], peak resident memory [MB] and first stderr line."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "-m", "dcplan", *args],
                                stdout=subprocess.DEVNULL, stderr=err)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        err.seek(0)
        first = err.read().strip().splitlines()
    code = os.waitstatus_to_exitcode(status)
    return code, wall, usage.ru_maxrss / 1024, (first[0] if first else "")[:70]


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            folder = Path(tmp) / case
            folder.mkdir()
            args, _ = _hostile(folder, case)
            cmds = [args]
            if args[-2] == "plan":
                cmds = [[*args[:-1], "-q", args[-1]], [*args[:-2], "validate", args[-1]]]
            for cmd in cmds:
                code, wall, mb, err = _run(cmd)
                rows.append({"input": case, "command": cmd[-2] if cmd[-2] != "-q" else "plan",
                             "exit": code, "wall_s": f"{wall:.2f}", "peak_mb": f"{mb:.0f}",
                             "message": err})
        code, wall, mb, err = _run(["network", "--rack", "gb200_nvl72", "--racks", "1000000"])
        rows.append({"input": "network of 10^6 racks", "command": "network", "exit": code,
                     "wall_s": f"{wall:.2f}", "peak_mb": f"{mb:.0f}", "message": err})
    print("peak_mb: largest resident set of the process (the operating system's figure)")
    print(format_table(rows))


if __name__ == "__main__":
    main()
