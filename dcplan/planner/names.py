"""Names of LP variables and constraints: one helper that builds them, one that parses.

Names look like ``grid__seoul_metro__2028``: the family, then the keys, joined by
``__``. Ids are ``[a-z0-9_]+`` (pulp would silently rewrite ``-``, ``+``, spaces and
brackets), and a key may not contain ``__`` itself, so every name parses back.
"""

from __future__ import annotations

import re

SEP = "__"
_KEY_RE = re.compile(r"^[a-z0-9_]+$")
_VALID: set[str] = set()  # parts already checked (large models reuse them many times)


def lp_name(family: str, *keys: object) -> str:
    """Build the LP name of one variable or constraint.

    Parameters
    ----------
    family : str
        Constraint or variable family (``grid``, ``new``, ...).
    *keys
        Ids and period labels.

    Returns
    -------
    str
        ``family`` and the keys joined by the ``__`` separator.

    Raises
    ------
    ValueError
        If a key is not ``[a-z0-9_]+`` or contains ``__``.
    """
    parts = [family, *(str(k) for k in keys)]
    for part in parts:
        if part in _VALID:
            continue
        if not _KEY_RE.match(part) or SEP in part or part.startswith("_") or part.endswith("_"):
            raise ValueError(f"id {part!r} cannot be used in an LP name: use [a-z0-9_] "
                             "without '__' and without a leading or trailing '_'")
        if len(_VALID) < 100_000:
            _VALID.add(part)
    return SEP.join(parts)


def cap_label(cap: float) -> str:
    """LP-name key of a power cap level: ``0.9`` -> ``cap90``, ``0.855`` -> ``cap85p5``.

    Parameters
    ----------
    cap : float
        Cap level, a fraction of the accelerators' ``max_power_w`` [-].

    Returns
    -------
    str
        ``cap`` and the level in percent, ``.`` written ``p``.
    """
    return "cap" + f"{cap * 100:.6g}".replace(".", "p")


def parse_lp_name(name: str) -> tuple[str, tuple[str, ...]]:
    """Split a name made by :func:`lp_name` into ``(family, keys)``.

    Parameters
    ----------
    name : str
        A name made by :func:`lp_name`.

    Returns
    -------
    family : str
    keys : tuple of str
    """
    family, *keys = name.split(SEP)
    return family, tuple(keys)
