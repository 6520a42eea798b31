"""A resolved case: a scenario with the catalogs and sites it plans with, checked once.

:func:`load_case` reads a scenario file (following ``extends`` and
``demand.forecast``), the catalogs, the performance-model defaults and the sites, each
file once, checks everything against everything and reports every problem at once; it
then applies the scenario's overrides. The planner, the exporters, ``compare`` and the
command line all take the resulting :class:`Case`.

:meth:`Case.with_changes` returns a new checked case with some scenario fields or
overrides changed, without reading any file: sweeps call it once per sample.

Example::

    from dcplan.case import load_case
    case = load_case("examples/baseline.yaml")
    high = case.with_changes({"demand.growth.chat.annual_growth": 0.9})
    pricier = case.with_changes(overrides=[{"kind": "racks", "id": "gb200_nvl72",
                                            "field": "capex_usd", "scale": 1.2}])
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from dcplan.catalog import Catalog, load_catalog
from dcplan.errors import InputError, Problem, display_path
from dcplan.paths import data_dir
from dcplan.scenario.checks import resolve_scenario, scenario_problems
from dcplan.scenario.forecast import resolve_demand_units
from dcplan.scenario.load import _best_effort, data_folder, parse_scenario, read_scenario_data
from dcplan.scenario.schema import Override, Scenario
from dcplan.sites import Site, load_sites

#: File name shown in problems of :meth:`Case.with_changes`.
CHANGES_FILE = "<changes>"


@dataclass(frozen=True, eq=False)
class Case:
    """A scenario, resolved and checked against the data it plans with.

    Attributes
    ----------
    scenario : Scenario
        The validated scenario (``extends`` and forecast files resolved).
    catalog : Catalog
        The catalogs with the scenario's overrides applied (what the plan uses).
    sites : dict
        Site id -> :class:`~dcplan.sites.Site`, with overrides applied.
    base_catalog, base_sites
        The same as loaded, before overrides.
    perf_defaults : PerfDefaults
        The performance model's parameters (``perf_defaults.yaml`` next to the
        catalogs).
    calibration : Calibration or "none"
        The performance-model calibration the plan uses: the one given, else the
        default next to the catalogs (``perf_calibration.yaml``, fitted on the shipped
        measurements); ``"none"`` for the a-priori defaults.
    path : Path or None
        The scenario file (None for a scenario built in Python).
    files : tuple of str
        Every file read to build the case, resolved, in reading order.
    changes : tuple
        ``(path, value)`` pairs and override entries applied by
        :meth:`with_changes` on the way from the loaded case (empty for a loaded one).
    """

    scenario: Scenario
    catalog: Catalog
    sites: dict[str, Site]
    base_catalog: Catalog
    base_sites: dict[str, Site]
    perf_defaults: Any = None
    calibration: Any = None
    path: Path | None = None
    files: tuple[str, ...] = ()
    changes: tuple[Any, ...] = field(default=())

    @property
    def name(self) -> str:
        """Scenario name."""
        return self.scenario.name

    @cached_property
    def digest(self) -> str:
        """SHA-256 of every input figure of the case (scenario, catalogs, sites, calibration).

        Two cases with the same digest plan the same thing, whatever files they came
        from; a saved plan records it to tell whether its inputs changed.
        """
        h = hashlib.sha256()

        def feed(obj: Any) -> None:
            h.update(json.dumps(obj, sort_keys=True, default=str).encode())
            h.update(b"\0")

        feed(self.scenario.model_dump(mode="json"))
        for kind in sorted(self.catalog.entries):
            feed([kind, [e.model_dump(mode="json")
                         for _, e in sorted(self.catalog.entries[kind].items())]])
        feed([s.model_dump(mode="json") for _, s in sorted(self.sites.items())])
        feed(repr(getattr(self.perf_defaults, "__dict__", self.perf_defaults)))
        feed(repr(getattr(self.calibration, "key", None)))
        return h.hexdigest()

    @cached_property
    def model_defaults(self) -> Any:
        """The performance model's defaults as this plan uses them [PerfDefaults].

        :attr:`perf_defaults` (the file's) with the scenario's engine settings:
        ``serving.max_batch_per_rank`` when it is set.
        """
        if self.perf_defaults is None:
            return None
        return self.perf_defaults.with_max_batch(self.scenario.serving.max_batch_per_rank)

    @property
    def perf_calibration(self) -> Any:
        """The calibration the performance model takes: a Calibration, or None for none."""
        return None if self.calibration is None or isinstance(self.calibration, str) \
            else self.calibration

    def with_changes(self, changes: Mapping[str, Any] | None = None, *,
                     overrides: Iterable[Mapping[str, Any] | Override] = ()) -> Case:
        """A new checked case with some scenario fields changed, without reading files.

        Parameters
        ----------
        changes : mapping, optional
            Dotted scenario path -> new value, e.g. ``{"demand.growth.chat.annual_growth":
            0.9, "economics.discount_rate": 0.1, "sites": ["seoul_metro"]}``. List
            items are addressed by index (``existing_fleet.0.count``).
        overrides : iterable
            Override entries (``{kind, id, field, set|scale|add[, from_year]}``, as in a
            scenario file), applied after the scenario's own overrides.

        Returns
        -------
        Case
            Checked as :func:`load_case` checks a file; ``changes`` records what was
            changed.

        Raises
        ------
        InputError
            Naming each path or override that does not exist or gives an invalid
            value (file ``<changes>``), and every problem the changed scenario has
            against the catalogs and sites.
        """
        data = self.scenario.model_dump(exclude_unset=False)
        problems: list[Problem] = []
        for path, value in (changes or {}).items():
            try:
                _set_path(data, str(path), value)
            except (KeyError, IndexError, TypeError) as exc:
                problems.append(Problem(CHANGES_FILE, f"no such scenario path: {exc.args[0]}; "
                                        "write it as in the scenario file, e.g. "
                                        "demand.growth.chat.annual_growth",
                                        field=str(path)))
        extra = [o.model_dump(exclude_none=True) if isinstance(o, Override) else dict(o)
                 for o in overrides]
        if extra:
            data["overrides"] = list(data.get("overrides") or []) + extra
        try:
            scn = parse_scenario(data, CHANGES_FILE)
        except InputError as exc:
            problems += exc.problems
        if problems:
            raise InputError(problems)
        keep = {k: getattr(self.scenario, k) for k in
                ("source_file", "line_map", "catalog_dir", "sites_dir")}
        scn = scn.model_copy(update=keep)
        catalog, sites = resolve_scenario(scn, self.base_catalog, self.base_sites)
        scn = resolve_demand_units(scn, catalog)
        huge = huge_figure_problems(scn, catalog, sites)
        if huge:
            raise InputError(huge)
        done = tuple(dict(changes or {}).items()) + tuple(extra)
        return Case(scn, catalog, sites, self.base_catalog, self.base_sites,
                    self.perf_defaults, self.calibration, self.path, self.files,
                    self.changes + done)

    def with_network_model(self, network_model: str) -> Case:
        """The same case with another ``network_model`` (nothing else is resolved again).

        Parameters
        ----------
        network_model : {"integer", "linear", "tiered"}

        Returns
        -------
        Case
        """
        scn = self.scenario.model_copy(update={"network_model": network_model})
        return Case(scn, self.catalog, self.sites, self.base_catalog, self.base_sites,
                    self.perf_defaults, self.calibration, self.path, self.files,
                    self.changes)

    def with_calibration(self, calibration: Any) -> Case:
        """The same case planned with another performance-model calibration (or None)."""
        return Case(self.scenario, self.catalog, self.sites, self.base_catalog,
                    self.base_sites, self.perf_defaults, calibration, self.path, self.files,
                    self.changes)


def _set_path(data: Any, path: str, value: Any) -> None:
    """Set ``value`` at dotted ``path`` inside plain scenario data (in place).

    The last mapping on the way may gain a key (the schema then says whether it may);
    a missing key before it, an index out of range or a step into a number raises.
    """
    parts = path.split(".")
    node = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            try:
                idx = int(part)
            except ValueError:
                raise TypeError(f"'{'.'.join(parts[:i])}' is a list: give an item number, "
                                f"not '{part}'") from None
            if not -len(node) <= idx < len(node):
                raise IndexError(f"'{'.'.join(parts[:i])}' has {len(node)} items")
            if last:
                node[idx] = value
            else:
                node = node[idx]
        elif isinstance(node, dict):
            key: Any = part
            if key not in node and part.lstrip("-").isdigit() and int(part) in node:
                key = int(part)  # year-keyed tables (demand.table.chat.2027)
            if last:
                node[key] = value
            elif key in node and node[key] is not None:
                node = node[key]
            else:
                raise KeyError(f"'{'.'.join(parts[:i + 1])}' is not set in this scenario")
        else:
            raise TypeError(f"'{'.'.join(parts[:i])}' is a value, not a mapping")


def load_case(scenario: Path | str | Scenario, *, catalog_dir: Path | str | None = None,
              sites_dir: Path | str | None = None, calibration: Any = None) -> Case:
    """Load a scenario with its catalogs, performance defaults and sites; check all at once.

    Parameters
    ----------
    scenario : path or Scenario
        Scenario YAML file, or a :class:`~dcplan.scenario.Scenario` built in Python.
    catalog_dir, sites_dir : path, optional
        Data folders (command line ``--catalog-dir``/``--sites-dir``). Default: the
        scenario's own ``catalog_dir``/``sites_dir``, else ``$DCPLAN_CATALOG_DIR`` /
        ``$DCPLAN_SITES_DIR``, else the shipped data.
    calibration : path, Calibration or "none", optional
        Performance-model calibration (``dcplan perf calibrate``); default: the
        ``perf_calibration.yaml`` next to the catalogs; ``"none"``: no calibration.

    Returns
    -------
    Case

    Raises
    ------
    InputError
        With every problem of every file: scenario (schema, references, overrides),
        catalogs, performance defaults, sites and calibration.
    """
    from dcplan.perf.params import NO_CALIBRATION, load_perf_inputs

    problems: list[Problem] = []
    files: list[str] = []
    raw: Any = None
    path: Path | None = None
    if isinstance(scenario, Scenario):
        scn_given: Scenario | None = scenario
    else:
        scn_given = None
        path = Path(scenario)
        raw = read_scenario_data(path)  # unreadable or malformed YAML stops here
        files.append(str(path.resolve()))

    def folder(arg: Any, key: str) -> Path:
        if arg:
            return Path(arg)
        if scn_given is not None:
            own = getattr(scn_given, key)
            return data_dir("catalogs" if key == "catalog_dir" else "sites", own)
        own = data_folder(raw, key, path) if path is not None else None
        return data_dir("catalogs" if key == "catalog_dir" else "sites", own)

    catalog = sites = defaults = None
    try:
        catalog = load_catalog(folder(catalog_dir, "catalog_dir"))
    except InputError as exc:
        problems += exc.problems
    cal: Any = NO_CALIBRATION
    cal_files: tuple[str, ...] = ()
    if catalog is not None:
        files += [str(Path(p).resolve()) for p in catalog.files.values()]
        try:
            perf = load_perf_inputs(catalog, calibration,
                                    known_accelerators=catalog.entries.get("accelerators", {}))
            defaults, files, cal_files = perf.defaults, files + [perf.files[0]], perf.files[1:]
            cal = perf.calibration if perf.calibration is not None else NO_CALIBRATION
        except InputError as exc:
            problems += exc.problems
    try:
        sites_folder = folder(sites_dir, "sites_dir")
        sites = load_sites(sites_folder)
        files += sorted(str(p.resolve()) for p in sites_folder.iterdir()
                        if p.suffix in (".yaml", ".yml") and not p.is_dir())
    except InputError as exc:
        problems += exc.problems
    files += cal_files
    scn: Scenario | None = scn_given
    if scn is None:
        shown = display_path(path)
        try:
            scn = parse_scenario(raw, shown)
            for key in ("catalog_dir", "sites_dir"):
                value = getattr(scn, key)
                if value and not Path(value).is_absolute():
                    scn = scn.model_copy(update={key: str((path.parent / value).resolve())})
        except InputError as exc:
            problems += exc.problems
            partial = _best_effort(raw, shown)
            if partial is not None and catalog is not None and sites is not None:
                seen = {str(p) for p in problems}
                problems += [p for p in scenario_problems(partial, catalog, sites)
                             if str(p) not in seen]
            raise InputError(problems) from None
    if catalog is None or sites is None or problems:
        raise InputError(problems)
    catalog_used, sites_used = resolve_scenario(scn, catalog, sites)
    scn = resolve_demand_units(scn, catalog_used)
    huge = huge_figure_problems(scn, catalog_used, sites_used)
    if huge:
        raise InputError(huge)
    return Case(scn, catalog_used, sites_used, catalog, sites, defaults, cal, path,
                tuple(dict.fromkeys(files)))


#: Largest magnitude of any figure a plan is built from. Real figures stay far below it
#: (the largest are demands of at most 1e21 tokens per month); 1e300 in a price, a ratio
#: or a grid limit is a typo that would overflow the model (an OverflowError or a solver
#: failure, exit 3) instead of being named.
HUGE_FIGURE = 1e22


def _huge(obj: Any, path: str = "") -> list[tuple[str, float]]:
    """(dotted path, value) of every number in ``obj`` whose magnitude passes HUGE_FIGURE."""
    if isinstance(obj, bool):
        return []
    if isinstance(obj, int | float):
        return [(path, float(obj))] if abs(obj) > HUGE_FIGURE else []
    if isinstance(obj, dict):
        return [hit for k, v in obj.items() for hit in _huge(v, f"{path}.{k}" if path else str(k))]
    if isinstance(obj, list | tuple):
        return [hit for i, v in enumerate(obj) for hit in _huge(v, f"{path}.{i}")]
    return []


def huge_figure_problems(scenario: Scenario, catalog: Any, sites: dict[str, Any]
                         ) -> list[Problem]:
    """Figures too large to be real, named by file, entry and field.

    Every number of the scenario, catalogs and sites (overrides applied) whose magnitude
    passes :data:`HUGE_FIGURE`.
    """
    fix = (f"above {HUGE_FIGURE:g} in magnitude, no real figure is that large; correct the "
           "value")
    out = []
    for path, v in _huge(scenario.model_dump(mode="python")):
        file, line = scenario.where(path)
        out.append(Problem(file, f"{v:.3g} is {fix}", field=path, line=line))
    for kind, table in catalog.entries.items():
        shown = display_path(catalog.files[kind]) if kind in catalog.files else kind
        for ident, e in table.items():
            for path, v in _huge(e.model_dump(mode="python")):
                out.append(Problem(shown, f"{v:.3g} is {fix} (after the scenario's overrides)",
                                   entry=str(ident), field=path))
    for ident, site in sites.items():
        for path, v in _huge(site.model_dump(mode="python")):
            out.append(Problem(f"site {ident}", f"{v:.3g} is {fix} (after the scenario's "
                                                "overrides)", entry=str(ident), field=path))
    return out


def case_of(obj: Any, **kwargs: Any) -> Case:
    """``obj`` if it is a :class:`Case`, else :func:`load_case` of it (path or Scenario)."""
    return obj if isinstance(obj, Case) else load_case(obj, **kwargs)


__all__ = ["CHANGES_FILE", "Case", "case_of", "load_case"]
