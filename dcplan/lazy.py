"""Public names of a package imported only when first asked for (PEP 562).

A package whose ``__init__`` imported every module it names made each command import
all of them: the commands that read a saved plan imported the MILP and its solver.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def attach(package: str, homes: Mapping[str, str]
           ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for a package that names its API lazily.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    homes : mapping of str to str
        Public name -> the submodule (relative to ``package``) that defines it.

    Returns
    -------
    tuple of callable
        The module-level ``__getattr__`` (imports the home of a public name, raises
        AttributeError for any other) and ``__dir__``.
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{home}"), name)

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes})

    return __getattr__, __dir__
