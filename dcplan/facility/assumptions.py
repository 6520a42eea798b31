"""Modelling assumptions of the facility models, read from ``assumptions.yaml``.

These are not properties of one product or one site (those live in the catalogs and
site files) but layout and design conventions; each carries its source in the file.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from dcplan.yamlio import read_yaml, strip_lines

_FILE = Path(__file__).with_name("assumptions.yaml")


@lru_cache(maxsize=1)
def assumptions() -> dict[str, Any]:
    """Return the assumptions as nested dicts (``layout``, ``network``, ``cooling``)."""
    return strip_lines(read_yaml(_FILE))


def value(section: str, key: str) -> Any:
    """Return one assumption, e.g. ``value("layout", "rack_pitch_m")``.

    Parameters
    ----------
    section : str
        Section of ``assumptions.yaml`` (``layout``, ``network``, ``cooling``).
    key : str
        Key in that section.

    Returns
    -------
    Any
        The value as read from the file (its unit is in the key's name).
    """
    return assumptions()[section][key]
