"""Where the shipped data lives, and how a user points dcplan elsewhere."""

from __future__ import annotations

import os
from pathlib import Path

_PKG = Path(__file__).resolve().parent

#: Environment variables that override the shipped data folders.
ENV_VARS = {
    "catalogs": "DCPLAN_CATALOG_DIR",
    "sites": "DCPLAN_SITES_DIR",
}


def shipped_dir(name: str) -> Path:
    """Folder of shipped data ``name`` (``catalogs``, ``sites`` or ``examples``).

    A regular install carries the data inside the package (``dcplan/_data``); an
    editable install or a source checkout finds it next to the package.
    """
    for candidate in (_PKG / "_data" / name, _PKG.parent / name):
        if candidate.is_dir():
            return candidate
    return _PKG.parent / name


def data_dir(name: str, override: Path | str | None = None) -> Path:
    """Resolve a data folder: explicit ``override``, then the environment, then shipped data.

    Parameters
    ----------
    name : {"catalogs", "sites"}
        Which folder.
    override : Path or str, optional
        Folder given on the command line or by the caller.
    """
    if override:
        return Path(override)
    env = os.environ.get(ENV_VARS.get(name, ""), "")
    if env:
        return Path(env)
    return shipped_dir(name)
