"""Load a script of the repository (bench/, docs/) as a module, for the tests that check it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_script(path: Path, name: str) -> ModuleType:
    """Execute the script at ``path`` as module ``name`` (registered in ``sys.modules``,
    which dataclasses defined in it need) and return it."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
