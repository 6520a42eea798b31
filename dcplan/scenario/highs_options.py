"""HiGHS options a scenario may pass through (``solver.highs_options``), checked at load.

HiGHS ignores an option it does not know and one of the wrong type (it logs an error
and solves with its default), so a misspelt option would silently change nothing. Each
name and value is checked against HiGHS itself; the options dcplan sets from its own
solver fields are refused with the field to use.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: HiGHS options set from dcplan's own ``solver`` fields: option -> the field to use
#: (None: fixed by dcplan, so that the same input gives the same plan).
OWN_OPTIONS: dict[str, str | None] = {
    "threads": "threads", "time_limit": "time_limit_s", "mip_rel_gap": "gap",
    "output_flag": "log", "log_to_console": "log", "random_seed": None,
}


@contextmanager
def quiet_stdout(active: bool = True) -> Iterator[None]:
    """Send C-level stdout to the null device (HiGHS prints a banner on stdout)."""
    if not active:
        yield
        return
    try:
        sys.stdout.flush()
        saved = os.dup(1)
        null = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError):
        yield
        return
    os.dup2(null, 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


def _names() -> list[str]:
    import highspy

    return sorted(a for a in dir(highspy._core.HighsOptions()) if not a.startswith("_"))


def highs_option_problems(options: dict[str, Any]) -> list[str]:
    """What is wrong with each of ``options`` (name -> value); empty when all are fine."""
    if not options:
        return []
    import highspy

    problems = []
    with quiet_stdout():
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        for name, value in options.items():
            if name in OWN_OPTIONS:
                field = OWN_OPTIONS[name]
                problems.append(f"'{name}' is set by dcplan" + (
                    f" from solver.{field}: set that instead" if field else
                    " (fixed, so that the same input gives the same plan): remove it"))
                continue
            status, _kind = h.getOptionType(name)
            if status != highspy.HighsStatus.kOk:
                close = difflib.get_close_matches(name, _names(), n=1)
                problems.append(f"'{name}' is not a HiGHS option"
                                + (f" (did you mean '{close[0]}'?)" if close else ""))
                continue
            _, default = h.getOptionValue(name)
            if isinstance(value, bool) is not isinstance(default, bool) or \
                    h.setOptionValue(name, value) != highspy.HighsStatus.kOk:
                problems.append(f"'{name}': {value!r} is not a valid value (HiGHS default: "
                                f"{default!r}; see the HiGHS options reference)")
    return problems
