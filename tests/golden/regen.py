"""Rewrite the golden LP files from their cases: ``python tests/golden/regen.py [family ...]``.

Run it after an intended change of the MILP's rows, then review ``git diff tests/golden``:
every changed line is a changed row. Files of families no case has any more are removed.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import CASES, GOLDEN, golden_text  # noqa: E402


def main(names: list[str]) -> None:
    for name in names or sorted(CASES):
        path = CASES[name].lp
        text = golden_text(name)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(GOLDEN.parent.parent)}")
    if not names:
        for path in sorted(GOLDEN.glob("*.lp")):
            if path.stem not in CASES:
                path.unlink()
                print(f"removed {path.relative_to(GOLDEN.parent.parent)}")


if __name__ == "__main__":
    main(sys.argv[1:])
