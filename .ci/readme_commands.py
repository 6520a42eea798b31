"""Run the README's quick-start install line and its "Everyday commands" as a new user.

Used by ``.ci/run`` in a fresh virtual environment made without the test extra, so that
a dependency that only the test extra brings in (pyarrow once was one) fails CI instead
of a user's first ``--save``. Each command must exit 0 and write every file or folder
it names with an output option. Outputs go under ``out/`` (ignored by git).

Usage: ``python .ci/readme_commands.py [--first] [--everyday]`` from the repository root,
with the fresh environment's ``bin`` first on ``PATH``.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: Options whose value is a file or folder the command writes.
OUTPUT_OPTIONS = ("-o", "--outdir", "--output", "--xlsx", "--png-dir", "--html", "--save",
                  "--png")
#: Longest a single README command may take here [s].
COMMAND_TIMEOUT_S = 1200


def _blocks(text: str) -> dict[str, list[str]]:
    """The ```bash blocks of the README by the heading above them (first block only)."""
    out: dict[str, list[str]] = {}
    heading = ""
    for m in re.finditer(r"^## ([^\n]+)$|^```bash\n(.*?)^```", text, flags=re.M | re.S):
        if m.group(1):
            heading = m.group(1).strip()
        elif heading not in out:
            out[heading] = [ln for ln in m.group(2).splitlines() if ln.strip()]
    return out


def commands() -> tuple[str, list[str]]:
    """The quick start's first line and the everyday commands, as the README has them."""
    blocks = _blocks((REPO / "README.md").read_text(encoding="utf-8"))
    first = blocks["Quick start"][0]
    return first, blocks["Everyday commands"]


def _outputs(line: str) -> list[Path]:
    words = shlex.split(line, comments=True)
    return [REPO / words[i + 1] for i, w in enumerate(words[:-1]) if w in OUTPUT_OPTIONS]


def run(line: str) -> float:
    """Run one README line with bash in the repository root; exit on failure."""
    t0 = time.perf_counter()
    print(f"$ {line}", flush=True)
    done = subprocess.run(["bash", "-c", line], cwd=REPO, timeout=COMMAND_TIMEOUT_S,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    took = time.perf_counter() - t0
    tail = "\n".join(done.stdout.splitlines()[-15:])
    if done.returncode != 0:
        print(tail)
        sys.exit(f"README command failed (exit {done.returncode}): {line}")
    missing = [str(p) for p in _outputs(line) if not p.exists()]
    if missing:
        print(tail)
        sys.exit(f"README command wrote no {', '.join(missing)}: {line}")
    print(f"  ok in {took:.0f} s", flush=True)
    return took


def main(argv: list[str]) -> None:
    """Run the first line (``--first``) and/or the everyday commands (``--everyday``)."""
    first, everyday = commands()
    if "--first" in argv:
        run(first)
    if "--everyday" in argv:
        for line in everyday:
            run(line)
    print("README commands: all passed")


if __name__ == "__main__":
    main(sys.argv[1:])
