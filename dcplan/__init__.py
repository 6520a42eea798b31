"""dcplan: plan AI-inference datacenter fleets against token demand.

The Python API mirrors the command line::

    import dcplan
    r = dcplan.plan("examples/minimal.yaml")    # load, check, solve, explain
    r.fleet, r.kpis, r.bom                      # DataFrames (integer counts and periods)
    r.save("minimal.plan")                      # dcplan.load_plan("minimal.plan") reads it
    r.to_excel("minimal.xlsx"); r.plot_racks()

- :func:`dcplan.load_case` loads and checks a scenario with its data once
  (:meth:`~dcplan.case.Case.with_changes` changes it without reading files);
- :func:`dcplan.plan`, :func:`dcplan.load_plan`, :func:`dcplan.compare` (see
  :mod:`dcplan.api`);
- :mod:`dcplan.perf`, :mod:`dcplan.facility`, :mod:`dcplan.planner` for the models.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dcplan")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = ["__version__", "compare", "load_case", "load_plan", "plan"]


def __getattr__(name: str):
    # The API pulls in pandas and the solver: import it only when used.
    if name in ("plan", "load_plan", "compare", "load_case", "api"):
        import importlib

        api = importlib.import_module("dcplan.api")
        return api if name == "api" else getattr(api, name)
    raise AttributeError(name)
