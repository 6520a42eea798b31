"""dcplan: plan AI-inference datacenter fleets against token demand.

The public Python API mirrors the command line:

- :func:`dcplan.catalog.load_catalog` loads and validates the data catalogs;
- :mod:`dcplan.perf` turns hardware + model + workload into goodput and power;
- :mod:`dcplan.facility` sizes power chain, cooling and network;
- :mod:`dcplan.planner` builds and solves the fleet-planning MILP.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dcplan")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
