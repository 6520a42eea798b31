"""Write the estimated points of catalogs/power_curves.yaml from each entry's ``estimate_model``.

Usage: ``python docs/gen_power_curves.py`` prints the points of every entry whose
curve is an estimate; ``--update`` rewrites them in place (the rest of the file, with
its sources and comments, is kept). The model (docs/perf.md, "Power caps"): a
compute-saturated accelerator (activity 1) under a cap ``c`` (fraction of
``max_power_w``) draws ``c = s + (1 - s) (m + (1 - m) f**alpha)`` at core clock
fraction ``f``: ``s`` the static (idle) share, ``m`` the share of the dynamic power
that does not follow the core clock (HBM, I/O), ``alpha`` the exponent of the core's
dynamic power in its clock.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

FILE = Path(__file__).resolve().parent.parent / "catalogs" / "power_curves.yaml"
CAPS = [round(1.0 - 0.05 * i, 2) for i in range(11)]


def clock_frac(cap: float, static: float, memory: float, alpha: float) -> float:
    """Sustained core clock fraction at ``cap`` for a compute-saturated load [-].

    Parameters
    ----------
    cap : float
        Power cap as a fraction of max power [-].
    static, memory, alpha : float
        Static share of max power [-], share of dynamic power not following the core
        clock [-], exponent of core dynamic power in clock [-].

    Returns
    -------
    float
        Clock fraction [0..1], rounded to 3 decimals.
    """
    dyn = (cap - static) / (1.0 - static)
    core = max((dyn - memory) / (1.0 - memory), 0.0)
    return round(core ** (1.0 / alpha), 3)


def points(model: dict) -> list[list[float]]:
    """Points ``[cap_frac, clock_frac, mem_clock_frac]`` for one entry's model [-].

    Parameters
    ----------
    model : dict
        ``static_frac``, ``memory_frac``, ``alpha`` [-].

    Returns
    -------
    list of list of float
        One row per cap in :data:`CAPS`.
    """
    return [[c, clock_frac(c, model["static_frac"], model["memory_frac"], model["alpha"]), 1.0]
            for c in CAPS]


def main() -> None:
    """Print or (``--update``) rewrite the estimated points."""
    text = FILE.read_text()
    entries = yaml.safe_load(text)
    for e in entries:
        if "estimate_model" not in e:
            continue
        rows = points(e["estimate_model"])
        flow = "[" + ", ".join(f"[{c:.2f}, {f:.3f}, {m:.1f}]" for c, f, m in rows) + "]"
        print(e["accelerator"], flow)
        pat = re.compile(r"(- accelerator: " + re.escape(e["accelerator"])
                         + r"\n(?:  .*\n)*?  points: ).*\n")
        text = pat.sub(lambda mo, row=flow: mo.group(1) + row + "\n", text, count=1)
    if "--update" in sys.argv:
        FILE.write_text(text)


if __name__ == "__main__":
    main()
