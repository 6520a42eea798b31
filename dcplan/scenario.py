"""Scenario files: what to plan, over which periods, against which demand.

A scenario is a YAML mapping validated by :class:`Scenario` (unknown fields are
rejected with a did-you-mean hint; every problem is reported at once with file,
line and field). :func:`load_scenario` reads and validates the file;
:func:`resolve_scenario` checks it against the catalogs and sites (unknown ids,
periods outside the horizon, overrides of fields that do not exist) and applies the
overrides, returning the catalog and sites the planner should use.

Units: demand in tokens per month (or per day, see ``demand.unit``) converted to
tokens/s; money in USD (site tariffs in another currency are converted with the
scenario's ``exchange_rates_usd_per_unit``); power in MW only where a field name says
``_mw``.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from dcplan.catalog import Catalog, explain_errors, pydantic_problems, suggest
from dcplan.errors import InputError, Problem, display_path
from dcplan.schema import KINDS, Id
from dcplan.yamlio import KEY_LINES, LINE_KEY, read_text, read_yaml

#: Key under which :func:`_tag` stores ``{key: (file, line)}`` of each mapping's keys.
WHERE_KEY = "__where__"
#: Key under which :func:`_tag` stores ``(file, line)`` of a mapping itself.
AT_KEY = "__at__"
_META_KEYS = (LINE_KEY, KEY_LINES, WHERE_KEY, AT_KEY)

#: Seconds in an average month (365.25 days / 12) [s].
SECONDS_PER_MONTH = 365.25 * 86400 / 12
#: Seconds in an average day [s].
SECONDS_PER_DAY = 86400.0
#: Hours in an average year (365.25 days) [h].
HOURS_PER_YEAR = 365.25 * 24

_PERIOD_RE = re.compile(r"^(\d{4})(?:[qQ]([1-4]))?$")

NonNeg = Annotated[float, Field(ge=0)]
Pos = Annotated[float, Field(gt=0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class Period:
    """One planning period.

    Attributes
    ----------
    label : str
        ``"2026"`` for a year, ``"2026q1"`` for a quarter.
    start : datetime.date
        First day of the period.
    years : float
        Length [years] (1 or 0.25).
    offset_years : float
        Start of the period counted from the start of the plan [years].
    """

    label: str
    start: dt.date
    years: float
    offset_years: float

    @property
    def year(self) -> int:
        """Calendar year the period starts in."""
        return self.start.year


def parse_period_label(value: Any) -> tuple[int, int | None]:
    """Parse ``2026`` / ``"2026"`` / ``"2026Q3"`` into ``(year, quarter or None)``.

    Raises
    ------
    ValueError
        If the value is not a year or a year with a quarter.
    """
    m = _PERIOD_RE.match(str(value).strip())
    if not m:
        raise ValueError(f"{value!r} is not a period; write a year (2027) or a quarter (2027Q3)")
    return int(m.group(1)), (int(m.group(2)) if m.group(2) else None)


class Periods(_Strict):
    """Planning horizon.

    Attributes
    ----------
    start, end : str or int
        First and last period, both included: years (``2026``) or quarters
        (``2026Q1``) matching ``step``.
    step : {"year", "quarter"}
    """

    start: int | str
    end: int | str
    step: Literal["year", "quarter"] = "year"

    @model_validator(mode="after")
    def _check(self):
        y0, q0 = parse_period_label(self.start)
        y1, q1 = parse_period_label(self.end)
        if self.step == "quarter":
            q0, q1 = q0 or 1, q1 or 4
        elif q0 or q1:
            raise ValueError("step is 'year' but start/end name quarters; use step: quarter")
        if (y1, q1 or 0) < (y0, q0 or 0):
            raise ValueError(f"end ({self.end}) is before start ({self.start})")
        return self

    def expand(self) -> list[Period]:
        """Return the list of :class:`Period` of the horizon, in order."""
        y0, q0 = parse_period_label(self.start)
        y1, q1 = parse_period_label(self.end)
        out: list[Period] = []
        if self.step == "year":
            origin = dt.date(y0, 1, 1)
            for i, y in enumerate(range(y0, y1 + 1)):
                out.append(Period(str(y), dt.date(y, 1, 1), 1.0, float(i)))
            return out
        q0, q1 = q0 or 1, q1 or 4
        origin = dt.date(y0, 3 * (q0 - 1) + 1, 1)
        y, q, i = y0, q0, 0
        while (y, q) <= (y1, q1):
            start = dt.date(y, 3 * (q - 1) + 1, 1)
            out.append(Period(f"{y}q{q}", start, 0.25, 0.25 * i))
            i += 1
            y, q = (y + 1, 1) if q == 4 else (y, q + 1)
        del origin
        return out


class Growth(_Strict):
    """Demand that grows geometrically from the first period.

    Attributes
    ----------
    start : float
        Demand in the first period [tokens per ``demand.unit``].
    annual_growth : float
        Growth per year as a fraction (0.8 = +80 %/yr), compounded per period.
    """

    start: NonNeg
    annual_growth: Annotated[float, Field(gt=-1)]


class Demand(_Strict):
    """Token demand forecast (input plus output tokens).

    Attributes
    ----------
    unit : {"tokens_per_month", "tokens_per_day"}
        Unit of every figure in ``table`` and ``growth``.
    peak_to_average : float or dict
        Peak-hour over average demand, one figure or one per workload [-] (>= 1).
    table : dict
        workload -> {period label -> demand}. With quarterly periods a year key
        applies to each of its quarters.
    growth : dict
        workload -> :class:`Growth`.
    """

    unit: Literal["tokens_per_month", "tokens_per_day"] = "tokens_per_month"
    peak_to_average: Annotated[float, Field(ge=1)] | dict[Id, Annotated[float, Field(ge=1)]] = 1.0
    table: dict[Id, dict[int | str, Annotated[float, Field(ge=0)]]] = Field(default_factory=dict)
    growth: dict[Id, Growth] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self):
        both = sorted(set(self.table) & set(self.growth))
        if both:
            raise ValueError(f"workload(s) {both} appear in both table and growth; keep one")
        if not self.table and not self.growth:
            raise ValueError("no demand given; add a 'table' or a 'growth' entry per workload")
        return self

    def workloads(self) -> list[str]:
        """Workload ids with demand, in file order."""
        return list(self.table) + list(self.growth)


class ExistingRacks(_Strict):
    """Racks already installed at the start of the plan.

    Attributes
    ----------
    site, rack : str
        Site and rack ids.
    count : int
        Number of racks.
    installed : int or str
        Year (or quarter) of installation, at or before the first period; the racks
        retire ``lifetime_years`` after it.
    """

    site: Id
    rack: Id
    count: Annotated[int, Field(ge=0)]
    installed: int | str


class Rule(_Strict):
    """Restrict where a workload may be served.

    Attributes
    ----------
    workload : str
    sites : list of str, optional
        Only these sites.
    regions : list of str, optional
        Only sites in these regions.
    """

    workload: Id
    sites: list[Id] | None = None
    regions: list[str] | None = None

    @model_validator(mode="after")
    def _one(self):
        if (self.sites is None) == (self.regions is None):
            raise ValueError("give exactly one of 'sites' or 'regions'")
        return self


class Override(_Strict):
    """Change one field of one catalog entry or site for this scenario.

    Attributes
    ----------
    kind : str
        A catalog kind (``racks``, ``workloads``, ...) or ``sites``.
    id : str
        Entry id.
    field : str
        Field to change.
    set : Any, optional
        New value.
    scale : float, optional
        Multiply the current (numeric) value.
    add : float, optional
        Add to the current (numeric) value.
    from_year : int, optional
        For year-keyed step functions (a site's ``grid_mw``): apply the change from
        this year on (the step at ``from_year`` is created if missing).
    """

    kind: str
    id: Id
    field: str
    set: Any = None
    scale: float | None = None
    add: float | None = None
    from_year: int | None = None

    @model_validator(mode="after")
    def _one_op(self):
        ops = [o for o in ("set", "scale", "add") if getattr(self, o) is not None]
        if len(ops) != 1:
            raise ValueError("give exactly one of 'set', 'scale' or 'add'")
        return self


class SolverOptions(_Strict):
    """Solver settings.

    Attributes
    ----------
    name : {"highs", "cbc"}
        MILP solver; CBC is also the fallback when HiGHS fails.
    time_limit_s : float
        Wall-clock limit [s].
    gap : float
        Relative MIP gap at which to stop [-].
    threads : int, optional
        Solver threads (default: solver's choice).
    """

    name: Literal["highs", "cbc"] = "highs"
    time_limit_s: Pos = 120.0
    gap: NonNeg = 1e-4
    threads: Annotated[int, Field(gt=0)] | None = None


class Economics(_Strict):
    """Money assumptions.

    Attributes
    ----------
    discount_rate : float
        Annual discount rate [1/yr].
    exchange_rates_usd_per_unit : dict
        Currency code -> USD per unit (e.g. ``KRW: 0.00072``); USD is 1.
    terminal_value : {"straight_line", "none"}
        Credit the straight-line book value of equipment still in service at the end
        of the horizon, so that late purchases are not charged their full price.
    unserved_penalty_usd_per_million_tokens : float
        Price of demand left unserved in the elastic re-solve [USD per million
        tokens].
    building_lifetime_years, cdu_lifetime_years : float, optional
        Lives used for the terminal value of buildings and CDUs [years]; without
        them, buildings and CDUs get no terminal credit.
    """

    discount_rate: Annotated[float, Field(ge=0, lt=1)] = 0.08
    exchange_rates_usd_per_unit: dict[str, Pos] = Field(default_factory=dict)
    terminal_value: Literal["straight_line", "none"] = "straight_line"
    unserved_penalty_usd_per_million_tokens: Pos = 100.0
    building_lifetime_years: Pos | None = None
    cdu_lifetime_years: Pos | None = None


class Scenario(_Strict):
    """A planning scenario (see ``docs/planner.md`` for the file format).

    Attributes
    ----------
    name : str
    description : str
    periods : Periods
    sites : list of str
        Site ids that may host racks.
    racks : list of str, optional
        Rack ids that may be bought (default: every rack in the catalog).
    workloads : list of str, optional
        Workloads to serve (default: those in the demand forecast).
    demand : Demand
    economics : Economics
    existing_fleet : list of ExistingRacks
    budget_usd : dict, optional
        Period label -> largest undiscounted capex in that period [USD].
    existing_built_mw : dict
        Site -> facility capacity already built at the start [MW].
    rules : list of Rule
    optics : str, optional
        Optic id for the scale-out fabric (default: the facility model's choice).
    oversubscription : float
        Scale-out fabric oversubscription [-].
    cdu_redundancy : int
        Spare CDUs per site that has liquid-cooled racks (1 = N+1).
    planning_scale_racks : int, optional
        Racks per type and site at which the linear facility coefficients are
        taken (default: estimated from the demand).
    lead_time : bool
        Enforce each site's ``lead_time_months``: facility capacity beyond
        ``existing_built_mw`` is in service only from the first period starting at
        least that long after the start of the plan.
    peak_power : {"operating_point", "nameplate"}
        Rack IT power used for the peak (grid limit, facility built, demand charge):
        idle power plus the performance model's serving power of the allocated
        racks (racks are power-capped at their operating point), or every rack at
        ``it_power_max_kw``. Energy always uses the operating point.
    overrides : list of Override
    allow_unserved : bool
        Accept a plan that leaves demand unserved (priced at
        ``economics.unserved_penalty_usd_per_million_tokens``): ``dcplan plan`` then
        reports the shortfall and exits 0, as with ``--allow-unserved``.
    solver : SolverOptions
    catalog_dir, sites_dir : str, optional
        Data folders, relative to the scenario file.
    """

    name: str = "scenario"
    description: str = ""
    periods: Periods
    sites: list[Id] = Field(min_length=1)
    racks: list[Id] | None = None
    workloads: list[Id] | None = None
    demand: Demand
    economics: Economics = Field(default_factory=Economics)
    existing_fleet: list[ExistingRacks] = Field(default_factory=list)
    budget_usd: dict[int | str, NonNeg] = Field(default_factory=dict)
    existing_built_mw: dict[Id, NonNeg] = Field(default_factory=dict)
    rules: list[Rule] = Field(default_factory=list)
    optics: Id | None = None
    oversubscription: Annotated[float, Field(ge=1)] = 1.0
    cdu_redundancy: Annotated[int, Field(ge=0)] = 1
    planning_scale_racks: Annotated[int, Field(gt=0)] | None = None
    lead_time: bool = True
    peak_power: Literal["operating_point", "nameplate"] = "operating_point"
    overrides: list[Override] = Field(default_factory=list)
    allow_unserved: bool = False
    solver: SolverOptions = Field(default_factory=SolverOptions)
    catalog_dir: str | None = None
    sites_dir: str | None = None

    # Set by load_scenario (not part of the file).
    source_file: str = Field(default="<scenario>", exclude=True)
    lines: dict[str, int] = Field(default_factory=dict, exclude=True)
    #: Dotted path (``overrides.2``, ``demand.table.chat``) -> (file, line) of its
    #: entry; entries of a base scenario or forecast file name that file.
    line_map: dict[str, tuple[str, int]] = Field(default_factory=dict, exclude=True)
    #: For a best-effort scenario built from a file with schema errors: list field ->
    #: index in the file of each item kept, and the paths that were dropped.
    item_index: dict[str, list[int]] = Field(default_factory=dict, exclude=True)
    dropped: tuple[str, ...] = Field(default=(), exclude=True)

    def where(self, path: str) -> tuple[str, int | None]:
        """File and line of the entry at dotted ``path`` (or of its nearest parent).

        Parameters
        ----------
        path : str
            Dotted path as in problem messages, e.g. ``overrides.2`` or
            ``existing_fleet.0.site``.
        """
        parts = path.split(".")
        while parts:
            hit = self.line_map.get(".".join(parts))
            if hit:
                return hit[0], hit[1]
            parts.pop()
        return self.source_file, self.lines.get(path.split(".")[0])

    def item_path(self, field: str, i: int) -> str:
        """Dotted path, as in the file, of item ``i`` of list ``field``."""
        index = self.item_index.get(field)
        return f"{field}.{index[i] if index is not None and i < len(index) else i}"

    def problem(self, path: str, message: str, entry: str | None = None,
                field: str | None = None) -> Problem:
        """A :class:`Problem` at dotted ``path`` with the file and line of that entry.

        ``field`` names the field in the message (default ``path``).
        """
        file, line = self.where(path)
        return Problem(file, message, entry=entry, field=field or path, line=line)

    def period_list(self) -> list[Period]:
        """The horizon as a list of :class:`Period`."""
        return self.periods.expand()

    def workload_ids(self) -> list[str]:
        """Workloads to serve."""
        return list(self.workloads) if self.workloads else self.demand.workloads()

    def peak_factor(self, workload: str) -> float:
        """Peak-to-average factor of ``workload`` [-]."""
        p = self.demand.peak_to_average
        return p.get(workload, 1.0) if isinstance(p, dict) else p

    def demand_tokens_per_s(self) -> dict[tuple[str, str], float]:
        """Average demand [tokens/s] per (workload, period label)."""
        periods = self.period_list()
        per = SECONDS_PER_MONTH if self.demand.unit == "tokens_per_month" else SECONDS_PER_DAY
        out: dict[tuple[str, str], float] = {}
        for w, row in self.demand.table.items():
            keyed = {_norm_label(k): v for k, v in row.items()}
            for p in periods:
                value = keyed.get(p.label, keyed.get(str(p.year)))
                out[(w, p.label)] = (value or 0.0) / per
        for w, g in self.demand.growth.items():
            for p in periods:
                out[(w, p.label)] = g.start * (1 + g.annual_growth) ** p.offset_years / per
        return out


def _norm_label(key: Any) -> str:
    y, q = parse_period_label(key)
    return f"{y}q{q}" if q else str(y)


def _line_at(raw: Any, loc: tuple) -> int | None:
    """Line of the innermost mapping along ``loc`` in the raw YAML data."""
    line = raw.get(LINE_KEY) if isinstance(raw, dict) else None
    node = raw
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, dict) and str(part) in node:
            node = node[str(part)]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            break
        if isinstance(node, dict) and node.get(LINE_KEY):
            line = node[LINE_KEY]
    return line


def _key_line(raw: Any, loc: tuple) -> int | None:
    """Line of the deepest key along ``loc`` (else of its mapping, :func:`_line_at`)."""
    node, line = raw, None
    for part in loc:
        if isinstance(node, dict) and (part in node or str(part) in node):
            key = part if part in node else str(part)
            line = node.get(KEY_LINES, {}).get(str(key), line)
            node = node[key]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
            if isinstance(node, dict) and node.get(LINE_KEY):
                line = node[LINE_KEY]
        else:
            break
    return line or _line_at(raw, loc)


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
    data = _strip(raw)
    try:
        scn = Scenario.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err, prob in explain_errors(exc, Scenario, file, None, None):
            loc = tuple(err["loc"])
            if err["type"] == "extra_forbidden":
                parent = _model_at(loc[:-1])
                hint = suggest(str(loc[-1]), parent.model_fields) if parent else ""
                allowed = ", ".join(parent.model_fields) if parent else ""
                msg = ("unknown field" + (hint + " Remove or rename it." if hint
                                          else f"; allowed fields here: {allowed}"))
                prob = Problem(file, msg, field=prob.field)
            problems.append(Problem(file, prob.message, field=prob.field,
                                    line=_key_line(raw, loc)))
        raise InputError(problems) from None
    return scn.model_copy(update={"source_file": file, "line_map": _line_map(raw)})


def _strip(data: Any) -> Any:
    """Return ``data`` without the line and file keys added while reading."""
    if isinstance(data, dict):
        return {k: _strip(v) for k, v in data.items() if k not in _META_KEYS}
    if isinstance(data, list):
        return [_strip(v) for v in data]
    return data


def _tag(data: Any, file: str) -> Any:
    """Record ``file`` with the line of every mapping and key of ``data`` (in place)."""
    if isinstance(data, dict):
        if LINE_KEY in data:
            data[AT_KEY] = (file, data[LINE_KEY])
        data[WHERE_KEY] = {k: (file, ln) for k, ln in data.get(KEY_LINES, {}).items()}
        for k, v in list(data.items()):
            if k not in _META_KEYS:
                _tag(v, file)
    elif isinstance(data, list):
        for v in data:
            _tag(v, file)
    return data


def _line_map(raw: Any, prefix: str = "", out: dict | None = None) -> dict:
    """Dotted path -> (file, line) of every key and list item of tagged ``raw``."""
    out = {} if out is None else out
    if isinstance(raw, dict):
        for k, at in raw.get(WHERE_KEY, {}).items():
            out[prefix + str(k)] = tuple(at)
        for k, v in raw.items():
            if k not in _META_KEYS:
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
    data = _strip(raw)
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


#: Data folders used to check a scenario with schema errors against the catalogs and
#: sites (set by the command line from --catalog-dir / --sites-dir).
_REFERENCE_DIRS: dict[str, Path | str | None] = {"catalogs": None, "sites": None}


def set_reference_dirs(catalog_dir: Path | str | None, sites_dir: Path | str | None) -> None:
    """Set the catalog and sites folders :func:`load_scenario` checks a broken file against.

    Parameters
    ----------
    catalog_dir, sites_dir : Path or str, optional
        Folders given on the command line; None: the scenario's own folders, else the
        environment or the shipped data.
    """
    _REFERENCE_DIRS["catalogs"] = catalog_dir
    _REFERENCE_DIRS["sites"] = sites_dir


def _reference_problems(scn: Scenario, base: Path, catalog: Catalog | None,
                        sites: dict[str, Any] | None) -> list[Problem]:
    """Catalog, site and override problems of a best-effort scenario (never raises)."""
    try:
        if catalog is None:
            from dcplan.catalog import load_catalog

            folder = _REFERENCE_DIRS["catalogs"] or (
                (base / scn.catalog_dir) if scn.catalog_dir else None)
            catalog = load_catalog(folder)
        if sites is None:
            from dcplan.sites import load_sites

            folder = _REFERENCE_DIRS["sites"] or ((base / scn.sites_dir) if scn.sites_dir
                                                   else None)
            sites = load_sites(folder)
    except (InputError, OSError):
        return []  # the data folders have problems of their own; reported when used
    return scenario_problems(scn, catalog, sites)


def scenario_problems(scn: Scenario, catalog: Catalog, sites: dict[str, Any]) -> list[Problem]:
    """Every problem of ``scn`` against catalogs and sites, overrides included.

    Returns
    -------
    list of Problem
        :func:`check_scenario` problems followed by :func:`apply_overrides` problems.
    """
    problems = check_scenario(scn, catalog, sites)
    try:
        apply_overrides(scn, catalog, sites)
    except InputError as exc:
        problems += exc.problems
    return problems


def _model_at(loc: tuple) -> type[BaseModel] | None:
    """Pydantic model class that owns the mapping at ``loc`` (for did-you-mean)."""
    model: Any = Scenario
    for part in loc:
        if isinstance(part, int):
            continue
        if model is None or part not in model.model_fields:
            return None
        ann = model.model_fields[part].annotation
        model = _unwrap_model(ann)
    return model


def _unwrap_model(ann: Any) -> type[BaseModel] | None:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in getattr(ann, "__args__", ()) or ():
        found = _unwrap_model(arg)
        if found:
            return found
    return None


def load_scenario(path: Path | str, catalog: Catalog | None = None,
                  sites: dict[str, Any] | None = None) -> Scenario:
    """Read and validate a scenario YAML file.

    When the file breaks the schema, the parts that do not are still checked against
    the catalogs and sites (and its overrides applied on trial), so that the error
    lists every problem at once rather than the schema problems first.

    Parameters
    ----------
    path : Path or str
    catalog, sites : optional
        Data to check a file with schema errors against (default: the folders set by
        :func:`set_reference_dirs`, the scenario's own folders, or the shipped data).

    Returns
    -------
    Scenario
        With ``source_file`` set; relative ``catalog_dir``/``sites_dir`` are resolved
        against the file's folder.

    Raises
    ------
    InputError
    """
    path = Path(path)
    shown = display_path(path)
    raw = _resolve_file(path, ())
    try:
        scn = parse_scenario(raw, shown)
    except InputError as exc:
        partial = _best_effort(raw, shown)
        if partial is None:
            raise
        more = _reference_problems(partial, path.parent, catalog, sites)
        seen = {str(p) for p in exc.problems}
        raise InputError(exc.problems + [p for p in more if str(p) not in seen]) from None
    updates: dict[str, Any] = {}
    for key in ("catalog_dir", "sites_dir"):
        value = getattr(scn, key)
        if value and not Path(value).is_absolute():
            updates[key] = str((path.parent / value).resolve())
    lines = {}
    for i, text in enumerate(read_text(path).splitlines(), 1):
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s*:", text)
        if m:
            lines.setdefault(m.group(1), i)
    updates["lines"] = lines
    return scn.model_copy(update=updates)


def _resolve_file(path: Path, chain: tuple[Path, ...]) -> Any:
    """Read a scenario file and resolve its ``extends:`` and ``demand.forecast:``.

    ``extends: base.yaml`` (relative to this file) starts from that scenario and
    changes it: mappings merge key by key (a key set to ``null`` removes the base's
    entry), lists replace the base's list, except ``overrides``, which are appended
    to the base's. ``demand: {forecast: {file:
    F, case: C}}`` takes ``demand.table`` (and its unit) from case ``C`` of the
    forecast file ``F``, a mapping with ``unit`` and ``cases: {case: {workload:
    {period: demand}}}``.
    """
    shown = display_path(path)
    if path.resolve() in chain:
        cycle = " -> ".join(display_path(p) for p in (*chain, path.resolve()))
        raise InputError(Problem(shown, f"'extends' forms a cycle ({cycle}); remove one link",
                                 field="extends"))
    raw = _tag(read_yaml(path), shown)
    if not isinstance(raw, dict):
        return raw
    raw = _resolve_forecast(path, raw)
    base_name = raw.get("extends")
    if base_name is None:
        return raw
    line = raw.get(KEY_LINES, {}).get("extends")
    base_path = path.parent / str(base_name)
    if not isinstance(base_name, str) or not base_path.is_file():
        raise InputError(Problem(shown, f"base scenario '{base_name}' not found next to this "
                                        "file; give a path relative to it",
                                 field="extends", line=line))
    base = _resolve_file(base_path, (*chain, path.resolve()))
    # The base must be a valid scenario on its own: its problems are reported in its file.
    parse_scenario(base, display_path(base_path))
    child = {k: v for k, v in raw.items() if k != "extends"}
    return _merge(base, child)


def _merge(base: Any, child: Any, key: str | None = None) -> Any:
    """Deep-merge ``child`` onto ``base`` (see :func:`_resolve_file`)."""
    if isinstance(base, dict) and isinstance(child, dict):
        out = dict(base)
        for k, v in child.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = _merge(base[k], v, k) if k in base and k != LINE_KEY else v
        return out
    if key == "overrides" and isinstance(base, list) and isinstance(child, list):
        return base + child
    return child


def _resolve_forecast(path: Path, raw: dict) -> dict:
    """Replace ``demand.forecast`` by the table of the named case of a forecast file."""
    demand = raw.get("demand")
    if not isinstance(demand, dict) or "forecast" not in demand:
        return raw
    shown = display_path(path)
    ref = demand["forecast"]
    line = demand.get(KEY_LINES, {}).get("forecast")
    if not isinstance(ref, dict) or set(_strip(ref)) != {"file", "case"}:
        raise InputError(Problem(shown, "write forecast as {file: FORECAST.yaml, case: NAME}",
                                 field="demand.forecast", line=line))
    if "table" in demand:
        raise InputError(Problem(shown, "give either demand.table or demand.forecast, not both",
                                 field="demand.forecast", line=line))
    fpath = path.parent / str(ref["file"])
    fshown = display_path(fpath)
    if not fpath.is_file():
        raise InputError(Problem(shown, f"forecast file '{ref['file']}' not found next to this "
                                        "file; give a path relative to it",
                                 field="demand.forecast.file", line=line))
    forecast = _tag(read_yaml(fpath), fshown)
    cases = forecast.get("cases") if isinstance(forecast, dict) else None
    if not isinstance(cases, dict):
        raise InputError(Problem(fshown, "a forecast file needs 'cases: {case: {workload: "
                                         "{period: demand}}}'", field="cases"))
    case = str(ref["case"])
    if case not in cases:
        known = [k for k in cases if k not in _META_KEYS]
        raise InputError(Problem(shown, f"forecast has no case '{case}'{suggest(case, known)}; "
                                        f"cases: {', '.join(known)}",
                                 field="demand.forecast.case", line=line))
    unit = forecast.get("unit")
    if "unit" in demand and unit is not None and demand["unit"] != unit:
        raise InputError(Problem(shown, f"demand.unit '{demand['unit']}' differs from the "
                                        f"forecast's unit '{unit}'; drop demand.unit",
                                 field="demand.unit", line=line))
    new_demand = {k: v for k, v in demand.items() if k != "forecast"}
    new_demand["table"] = cases[case]
    if unit is not None:
        new_demand["unit"] = unit
    return {**raw, "demand": new_demand}


# ----------------------------------------------------------------------------------------
# Checking against catalogs and sites, and applying overrides
# ----------------------------------------------------------------------------------------


def _not_in_scenario(site: str, scn: Scenario, sites: dict[str, Any]) -> str:
    """Message for a site named in an entry but missing from ``scn.sites``."""
    if site in sites:
        return (f"site '{site}' is not one of this scenario's sites ({', '.join(scn.sites)}); "
                "add it to 'sites' or remove this entry")
    return _unknown("site", site, sites)


def _unknown(kind: str, ident: str, known: Any) -> str:
    return f"unknown {kind} id '{ident}'{suggest(ident, known)}; known: {', '.join(known)}"


def _workload_message(w: str, wanted: list[str], catalog_workloads: Any) -> str:
    """Message for an entry naming workload ``w`` that the scenario does not serve."""
    if w in catalog_workloads:
        return (f"workload '{w}' is not a workload of this scenario ({', '.join(wanted)}); "
                "add it to 'workloads' (with its demand) or remove this entry")
    return _unknown("workload", w, list(dict.fromkeys([*wanted, *catalog_workloads])))


def check_scenario(scn: Scenario, catalog: Catalog, sites: dict[str, Any]) -> list[Problem]:
    """Return every problem of ``scn`` against the catalogs and sites.

    Each problem names the line of its own entry (a list item, a demand row) where the
    file gives it. For a best-effort scenario (parts dropped for schema errors, see
    :func:`load_scenario`), cross-checks that the dropped parts would make misleading
    are skipped.
    """
    probs: list[Problem] = []
    racks = catalog.entries.get("racks", {})
    wls = catalog.entries.get("workloads", {})
    labels = {p.label for p in scn.period_list()}
    years = {p.year for p in scn.period_list()}
    dropped = set(scn.dropped)

    def broken(prefix: str) -> bool:
        return any(d == prefix or d.startswith(prefix + ".") for d in dropped)

    def at(path: str, message: str, entry: str | None = None, field: str | None = None
           ) -> None:
        probs.append(scn.problem(path, message, entry=entry, field=field))

    # Lists of ids name the list as the field (the message names the id).
    for i, s in enumerate(scn.sites):
        if s not in sites:
            at(scn.item_path("sites", i), _unknown("site", s, sites), field="sites")
    for i, r in enumerate(scn.racks or []):
        if r not in racks:
            at(scn.item_path("racks", i), _unknown("rack", r, racks), field="racks")
    wanted = scn.workload_ids()
    for i, w in enumerate(wanted):
        if w not in wls:
            path = scn.item_path("workloads", i) if scn.workloads else f"demand.table.{w}" \
                if w in scn.demand.table else f"demand.growth.{w}"
            at(path, _unknown("workload", w, wls), field=path.rsplit(".", 1)[0]
               if scn.workloads else path)
    if not broken("workloads") and not broken("demand"):
        for w in scn.demand.workloads():
            if w not in wanted:
                sect = "table" if w in scn.demand.table else "growth"
                at(f"demand.{sect}.{w}", f"demand for '{w}', which is not in 'workloads'; add "
                                         "it there or remove its demand")
        for i, w in enumerate(wanted):
            if w not in scn.demand.workloads():
                at(scn.item_path("workloads", i) if scn.workloads else "demand",
                   f"workload '{w}' has no demand; add it to demand.table or demand.growth",
                   field="workloads" if scn.workloads else "demand")
    if isinstance(scn.demand.peak_to_average, dict):
        for w in scn.demand.peak_to_average:
            if w not in wanted:
                at(f"demand.peak_to_average.{w}", _workload_message(w, wanted, wls))
    for w, row in scn.demand.table.items():
        fld = f"demand.table.{w}"
        for key in row:
            probs += _check_label(scn, key, labels, years, f"{fld}.{key}", fld)
        if broken(fld):
            continue
        keyed = set()
        for key in row:
            try:
                keyed.add(_norm_label(key))
            except ValueError:
                pass
        missing = [p.label for p in scn.period_list()
                   if p.label not in keyed and str(p.year) not in keyed]
        if missing:
            at(fld, f"no demand for period(s) {', '.join(missing)}; add them (0 for none)")
    for key in scn.budget_usd:
        probs += _check_label(scn, key, labels, years, f"budget_usd.{key}", "budget_usd")
    first = scn.period_list()[0]
    for i, ex in enumerate(scn.existing_fleet):
        fld = scn.item_path("existing_fleet", i)
        if ex.site not in sites or ex.site not in scn.sites:
            if not (broken("sites") and ex.site in sites):
                at(fld + ".site", _not_in_scenario(ex.site, scn, sites))
        if ex.rack not in racks:
            at(fld + ".rack", _unknown("rack", ex.rack, racks))
        try:
            y, q = parse_period_label(ex.installed)
            if (y, q or 1) > (first.year, (first.start.month - 1) // 3 + 1):
                at(fld + ".installed", f"installed {ex.installed} is after the first period "
                                       f"{first.label}; existing racks must predate the plan")
        except ValueError as exc:
            at(fld + ".installed", str(exc))
    for s in scn.existing_built_mw:
        if s not in scn.sites and not (broken("sites") and s in sites):
            at(f"existing_built_mw.{s}", _not_in_scenario(s, scn, sites))
    regions = {getattr(sites[s], "region", None) for s in scn.sites if s in sites}
    for i, rule in enumerate(scn.rules):
        fld = scn.item_path("rules", i)
        if rule.workload not in wanted and not broken("workloads"):
            at(fld + ".workload", _workload_message(rule.workload, wanted, wls))
        for s in rule.sites or []:
            if s not in scn.sites and not (broken("sites") and s in sites):
                at(fld + ".sites", _not_in_scenario(s, scn, sites))
        for reg in rule.regions or []:
            if reg not in regions and not broken("sites"):
                at(fld + ".regions", f"no site of the scenario is in region '{reg}'"
                                     f"{suggest(reg, [r for r in regions if r])}; regions: "
                                     f"{', '.join(sorted(r for r in regions if r))}")
    if scn.optics and scn.optics not in catalog.entries.get("optics", {}):
        at("optics", _unknown("optic", scn.optics, catalog.entries.get("optics", {})))
    if not broken("economics"):
        for s in scn.sites:
            cur = getattr(sites.get(s), "currency", "USD")
            if s in sites and cur != "USD" and cur not in scn.economics.exchange_rates_usd_per_unit:
                at("economics.exchange_rates_usd_per_unit",
                   f"site '{s}' prices in {cur}; add economics.exchange_rates_usd_per_unit."
                   f"{cur} (USD per {cur})")
    return probs


def _check_label(scn: Scenario, key: Any, labels: set, years: set, path: str, field: str
                 ) -> list[Problem]:
    """Problems of period label ``key`` (at ``path``, reported as ``field``)."""
    try:
        lab = _norm_label(key)
    except ValueError as exc:
        return [scn.problem(path, str(exc), field=field)]
    if lab in labels or (scn.periods.step == "quarter" and lab.isdigit() and int(lab) in years):
        return []
    return [scn.problem(path, f"period {key} is outside the horizon {min(labels)}.."
                              f"{max(labels)}; remove it or widen 'periods'", field=field)]


def _changed(old: Any, ov: Override) -> Any:
    if ov.set is not None:
        return ov.set
    if not isinstance(old, int | float) or isinstance(old, bool):
        raise TypeError(f"'scale'/'add' need a numeric field (value is {old!r}); use 'set'")
    return old * ov.scale if ov.scale is not None else old + ov.add


def _apply_step(obj: Any, field: str, ov: Override) -> dict:
    """New value of a year-keyed step function ``field`` with ``ov`` applied from a year."""
    steps = {int(k): v for k, v in dict(getattr(obj, field)).items()}
    y0 = ov.from_year
    if y0 not in steps:
        below = [k for k in steps if k <= y0]
        steps[y0] = steps[max(below)] if below else 0.0
    for y in list(steps):
        if y >= y0:
            steps[y] = _changed(steps[y], ov)
    return dict(sorted(steps.items()))


def apply_overrides(
    scn: Scenario, catalog: Catalog, sites: dict[str, Any]
) -> tuple[Catalog, dict[str, Any]]:
    """Apply ``scn.overrides``; return the new catalog and sites.

    Raises
    ------
    InputError
        With every bad override (unknown kind, id or field; invalid new value).
    """
    f = scn.source_file
    probs: list[Problem] = []
    sites = dict(sites)
    for i, ov in enumerate(scn.overrides):
        fld = scn.item_path("overrides", i)
        ov_file, ov_line = scn.where(fld)
        try:
            if ov.kind == "sites":
                if ov.id not in sites:
                    raise InputError(Problem(f, _unknown("site", ov.id, sites)))
                site = sites[ov.id]
                fields = type(site).model_fields
                if ov.field not in fields:
                    raise InputError(Problem(f, f"cannot override: site has no field "
                                                f"'{ov.field}'{suggest(ov.field, fields)}"))
                old = getattr(site, ov.field)
                new = _apply_step(site, ov.field, ov) if ov.from_year is not None \
                    else _changed(old, ov)
                try:
                    sites[ov.id] = type(site).model_validate({**site.model_dump(),
                                                             ov.field: new})
                except ValidationError as exc:
                    raise InputError(pydantic_problems(exc, type(site), f, ov.id, None)) from None
            elif ov.kind in KINDS:
                old_entry = catalog.get(ov.kind, ov.id)
                old = getattr(old_entry, ov.field, None)
                new = ov.set if ov.field not in type(old_entry).model_fields else (
                    _apply_step(old_entry, ov.field, ov) if ov.from_year is not None
                    else _changed(old, ov))
                catalog = catalog.replace(ov.kind, ov.id, **{ov.field: new})
            else:
                raise InputError(Problem(f, f"unknown kind '{ov.kind}'"
                                            f"{suggest(ov.kind, [*KINDS, 'sites'])}; use one of "
                                            f"{', '.join([*KINDS, 'sites'])}"))
        except InputError as exc:
            for p in exc.problems:
                probs.append(Problem(ov_file, f"override {ov.kind}/{ov.id}.{ov.field}: "
                                              f"{p.message}", entry=ov.id, field=fld,
                                     line=ov_line))
        except (TypeError, ValueError) as exc:
            probs.append(Problem(ov_file, f"override {ov.kind}/{ov.id}.{ov.field}: {exc}",
                                 entry=ov.id, field=fld, line=ov_line))
    if probs:
        raise InputError(probs)
    return catalog, sites


def resolve_scenario(
    scn: Scenario, catalog: Catalog, sites: dict[str, Any]
) -> tuple[Catalog, dict[str, Any]]:
    """Check ``scn`` against catalogs and sites, then apply its overrides.

    Returns
    -------
    catalog, sites
        The data the planner should use.

    Raises
    ------
    InputError
        With every problem found.
    """
    problems = scenario_problems(scn, catalog, sites)
    if problems:
        raise InputError(problems)
    return apply_overrides(scn, catalog, sites)
