"""Reading scenario files: ``extends``, forecast files, schema validation with lines.

:func:`read_scenario_data` reads a scenario file and resolves ``extends:`` and
``demand.forecast:`` into one mapping that still records the file and line of every
key (see :mod:`dcplan.yamlio`); :func:`parse_scenario` validates it against
:class:`~dcplan.scenario.schema.Scenario`; :func:`load_scenario` does both and, when
the file breaks the schema, checks the parts that do not against catalogs and sites
given to it so that every problem is reported at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from dcplan.catalog import Catalog, explain_errors, fields_at, suggest
from dcplan.errors import InputError, Problem, display_path
from dcplan.scenario.forecast import resolve_forecast
from dcplan.scenario.schema import REMOVED_FIELDS, PricePath, Scenario
from dcplan.yamlio import AT_KEY, KEY_LINES, LINE_KEY, META_KEYS, WHERE_KEY, read_yaml, strip_lines


def _where(raw: Any, loc: tuple, file: str) -> tuple[str, int | None]:
    """File and line of the deepest key or list item along ``loc`` in read data.

    Falls back to the innermost mapping on the way, then to ``file`` without a line.
    """
    node, at = raw, (raw.get(AT_KEY) if isinstance(raw, dict) else None)
    for part in loc:
        if isinstance(node, dict) and (part in node or str(part) in node):
            key = part if part in node else str(part)
            at = node.get(WHERE_KEY, {}).get(str(key), at)
            node = node[key]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
            if isinstance(node, dict) and node.get(AT_KEY):
                at = node[AT_KEY]
        else:
            break
    return (at[0], at[1]) if at else (file, None)


def parse_scenario(raw: Any, file: str = "<scenario>") -> Scenario:
    """Validate already-parsed scenario data (with or without line keys).

    Raises
    ------
    InputError
        With every problem found (file, line, field and fix).
    """
    if not isinstance(raw, dict):
        raise InputError(Problem(file, "a scenario must be a YAML mapping of fields "
                                       "(periods:, sites:, demand:, ...)"))
    data = strip_lines(raw)
    try:
        scn = Scenario.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err, prob in explain_errors(exc, Scenario, file, None, None):
            loc = tuple(err["loc"])
            if err["type"] == "extra_forbidden" and len(loc) == 1 \
                    and loc[0] in REMOVED_FIELDS:
                prob = Problem(file, REMOVED_FIELDS[loc[0]], field=prob.field)
            elif err["type"] == "extra_forbidden":
                here = fields_at(Scenario, loc[:-1])
                hint = suggest(str(loc[-1]), here)
                allowed = ", ".join(here)
                msg = ("unknown field" + (hint + " Remove or rename it." if hint
                                          else f"; allowed fields here: {allowed}"))
                prob = Problem(file, msg, field=prob.field)
            where, line = _where(raw, loc, file)
            problems.append(Problem(where, prob.message, entry=_entry_of(loc),
                                    field=prob.field, line=line))
        raise InputError(problems) from None
    return scn.model_copy(update={"source_file": file, "line_map": _line_map(raw)})


#: Mappings keyed by a workload, rack or site id: a schema problem inside one names
#: that id as its entry.
_KEYED = {("demand", "profiles"), ("demand", "growth"), ("demand", "table"),
          ("demand", "units"), ("demand", "languages"),
          ("serving", "target_utilisation"), ("serving", "availability"),
          ("serving", "spare_racks"), ("paths", "rack_capex"), ("paths", "energy_price"),
          ("paths", "demand_charge"), ("paths", "software_speedup")}


def _entry_of(loc: tuple) -> str | None:
    """The id a schema problem at ``loc`` belongs to (a key of a :data:`_KEYED` mapping)."""
    if len(loc) > 2 and tuple(loc[:2]) in _KEYED and isinstance(loc[2], str):
        if tuple(loc[:2]) == ("paths", "software_speedup") and loc[2] in PricePath.model_fields:
            return None  # one path for every workload, not a workload's
        return loc[2]
    return None


def _line_map(raw: Any, prefix: str = "", out: dict | None = None) -> dict:
    """Dotted path -> (file, line) of every key and list item of tagged ``raw``."""
    out = {} if out is None else out
    if isinstance(raw, dict):
        for k, at in raw.get(WHERE_KEY, {}).items():
            out[prefix + str(k)] = tuple(at)
        for k, v in raw.items():
            if k not in META_KEYS:
                _line_map(v, f"{prefix}{k}.", out)
    elif isinstance(raw, list):
        for i, v in enumerate(raw):
            if isinstance(v, dict) and AT_KEY in v:
                out[f"{prefix}{i}"] = tuple(v[AT_KEY])
            _line_map(v, f"{prefix}{i}.", out)
    return out


#: List fields whose broken items are dropped from a best-effort scenario.
_LIST_FIELDS = ("sites", "racks", "workloads", "existing_fleet", "rules", "overrides")


def _best_effort(raw: Any, file: str) -> Scenario | None:
    """The scenario without the parts that fail the schema, or None if that is not possible.

    Used to check the valid parts against catalogs and sites even when the file has
    schema errors, so that every problem is reported at once. Broken list items are
    dropped (``item_index`` keeps the original positions); a broken mapping key is
    removed; anything else (a required field missing or broken) gives None.
    """
    if not isinstance(raw, dict):
        return None
    data = strip_lines(raw)
    index = {f: list(range(len(data[f]))) for f in _LIST_FIELDS
             if isinstance(data.get(f), list)}
    dropped: list[str] = []
    for _ in range(8):
        try:
            scn = Scenario.model_validate(data)
        except ValidationError as exc:
            drops: dict[str, set[int]] = {}
            pops: list[tuple[dict, Any, str]] = []
            for err in exc.errors():
                if err["type"] == "missing":
                    return None
                loc = tuple(err["loc"])
                if loc and loc[0] in index and len(loc) > 1 and isinstance(loc[1], int):
                    drops.setdefault(loc[0], set()).add(loc[1])
                    continue
                parent, key, node, path = None, None, data, []
                for part in loc:
                    if isinstance(node, dict) and part in node:
                        parent, key, node = node, part, node[part]
                    elif isinstance(node, dict) and str(part) in node:
                        parent, key, node = node, str(part), node[str(part)]
                    else:
                        break
                    path.append(str(part))
                if parent is None:
                    return None
                pops.append((parent, key, ".".join(path)))
            if not drops and not pops:
                return None
            for f, idx in drops.items():
                for i in sorted(idx, reverse=True):
                    dropped.append(f"{f}.{index[f][i]}")
                    del data[f][i]
                    del index[f][i]
            for parent, key, path in pops:
                if key in parent:
                    del parent[key]
                    dropped.append(path)
            continue
        return scn.model_copy(update={"source_file": file, "line_map": _line_map(raw),
                                      "item_index": index, "dropped": tuple(dropped)})
    return None


def load_scenario(path: Path | str, catalog: Catalog | None = None,
                  sites: dict[str, Any] | None = None, raw: Any = None) -> Scenario:
    """Read and validate a scenario YAML file (schema only; see :func:`dcplan.case.load_case`).

    When the file breaks the schema and ``catalog`` and ``sites`` are given, the parts
    that do not are still checked against them (and its overrides applied on trial),
    so that the error lists every problem at once rather than the schema problems
    first.

    Parameters
    ----------
    path : Path or str
    catalog, sites : optional
        Data to check a file with schema errors against.
    raw : optional
        The file's data as :func:`read_scenario_data` returned it (not read again).

    Returns
    -------
    Scenario
        With ``source_file`` and ``line_map`` set; relative ``catalog_dir`` and
        ``sites_dir`` are resolved against the file's folder.

    Raises
    ------
    InputError
    """
    from dcplan.scenario.checks import scenario_problems

    path = Path(path)
    shown = display_path(path)
    if raw is None:
        raw = read_scenario_data(path)
    try:
        scn = parse_scenario(raw, shown)
    except InputError as exc:
        partial = _best_effort(raw, shown)
        if partial is None or catalog is None or sites is None:
            raise
        more = scenario_problems(partial, catalog, sites)
        seen = {str(p) for p in exc.problems}
        raise InputError(exc.problems + [p for p in more if str(p) not in seen]) from None
    updates: dict[str, Any] = {}
    for key in ("catalog_dir", "sites_dir"):
        value = getattr(scn, key)
        if value and not Path(value).is_absolute():
            updates[key] = str((path.parent / value).resolve())
    return scn.model_copy(update=updates) if updates else scn


def data_folder(raw: Any, key: str, path: Path) -> Path | None:
    """``catalog_dir`` or ``sites_dir`` named in scenario data, resolved against its file.

    Returns None when the data does not name one (or names something that is not a
    path; the schema reports that).
    """
    value = raw.get(key) if isinstance(raw, dict) else None
    if not isinstance(value, str) or not value:
        return None
    folder = Path(value)
    return folder if folder.is_absolute() else (path.parent / folder).resolve()


def read_scenario_data(path: Path | str) -> Any:
    """Read a scenario file with its ``extends:`` and ``demand.forecast:`` resolved.

    Returns
    -------
    Any
        The merged data, every mapping still carrying the file and line of its keys
        (see :mod:`dcplan.yamlio`).

    Raises
    ------
    InputError
        For an unreadable file, malformed YAML, a missing or cyclic base, a bad
        forecast reference or a base scenario with schema problems.
    """
    return _resolve_file(Path(path), ())


def _resolve_file(path: Path, chain: tuple[Path, ...]) -> Any:
    """Read a scenario file and resolve its ``extends:`` and ``demand.forecast:``.

    ``extends: base.yaml`` (relative to this file) starts from that scenario and
    changes it: mappings merge key by key (a key set to ``null`` removes the base's
    entry; ``demand: {forecast: null}`` removes the base's demand table and unit, which
    a base's forecast became), lists replace the base's list, except ``overrides``,
    which are appended to the base's. ``demand: {forecast: {file:
    F, case: C}}`` takes ``demand.table`` (and its unit) from case ``C`` of the
    forecast file ``F``, a mapping with ``unit`` and ``cases: {case: {workload:
    {period: demand}}}``.
    """
    shown = display_path(path)
    if path.resolve() in chain:
        cycle = " -> ".join(display_path(p) for p in (*chain, path.resolve()))
        raise InputError(Problem(shown, f"'extends' forms a cycle ({cycle}); remove one link",
                                 field="extends"))
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        return raw
    raw = resolve_forecast(path, raw)
    base_name = raw.get("extends")
    if base_name is None:
        return raw
    line = raw.get(KEY_LINES, {}).get("extends")
    base_path = path.parent / str(base_name)
    # A base that exists but is no regular file (a device, a FIFO) is refused by the
    # reader with that reason; only a missing one is "not found".
    if not isinstance(base_name, str) or not (base_path.exists() and not base_path.is_dir()):
        raise InputError(Problem(shown, f"base scenario '{base_name}' not found next to this "
                                        "file; give a path relative to it",
                                 field="extends", line=line))
    base = _resolve_file(base_path, (*chain, path.resolve()))
    # The base must be a valid scenario on its own: its problems are reported in its file.
    parse_scenario(base, display_path(base_path))
    child = {k: v for k, v in raw.items() if k != "extends"}
    demand = child.get("demand")
    if isinstance(demand, dict) and "forecast" in demand and demand["forecast"] is None \
            and isinstance(base.get("demand"), dict):
        # ``forecast: null`` drops the base's demand table (its forecast, resolved into
        # the table) and the unit it came with: the child gives its own
        base = {**base, "demand": {k: v for k, v in base["demand"].items()
                                   if k not in ("table", "unit")}}
    return _merge(base, child)


def _merge(base: Any, child: Any, key: str | None = None) -> Any:
    """Deep-merge ``child`` onto ``base`` (see :func:`_resolve_file`)."""
    if isinstance(base, dict) and isinstance(child, dict):
        out = dict(base)
        for k, v in child.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = _merge(base[k], v, k) if k in base and k not in (LINE_KEY, AT_KEY) else v
        return out
    if key == "overrides" and isinstance(base, list) and isinstance(child, list):
        return base + child
    return child
