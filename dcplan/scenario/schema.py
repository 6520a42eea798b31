"""Scenario schema: what to plan, over which periods, against which demand.

A scenario is a YAML mapping validated by :class:`Scenario` (unknown fields are
rejected with a did-you-mean hint). Loading, ``extends`` and forecast files are in
:mod:`dcplan.scenario.load`, cross-checks against catalogs and sites in
:mod:`dcplan.scenario.checks`, overrides in :mod:`dcplan.scenario.overrides`.

Units: demand in tokens per month (or per day, see ``demand.unit``; input plus output
tokens) converted to tokens/s with :data:`dcplan.units.SECONDS_PER_MONTH`; money in
USD (site tariffs in another currency are converted with the scenario's
``exchange_rates_usd_per_unit``); power in MW only where a field name says ``_mw``.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from dcplan.defaults import (  # the limits and defaults the command line shows too
    DEFAULT_GAP,
    DEFAULT_OVERSUBSCRIPTION,
    DEFAULT_SOLVER,
    DEFAULT_TIME_LIMIT_S,
    MAX_BATCH_PER_RANK_MAX,
    MAX_SOLVER_THREADS,
    MAX_TIME_LIMIT_S,
    SOLVERS,
)
from dcplan.errors import Problem
from dcplan.schema import NOT_BOOL, Id, ProfileDay, shape_problem
from dcplan.units import SECONDS_PER_DAY, SECONDS_PER_MONTH

_PERIOD_RE = re.compile(r"^(\d{4})(?:[qQ]([1-4]))?$")

NonNeg = Annotated[float, NOT_BOOL, Field(ge=0)]
#: A board power cap, a fraction of the accelerators' ``max_power_w`` in (0, 1] [-].
CapFrac = Annotated[float, NOT_BOOL, Field(gt=0, le=1)]
Pos = Annotated[float, NOT_BOOL, Field(gt=0)]

#: Largest demand figure accepted [tokens per month]: about a million times the world's
#: inference demand in 2025; a larger figure is a unit mistake.
MAX_DEMAND_TOKENS_PER_MONTH = 1e21
#: Largest annual growth accepted [1/yr] (+10,000 %/yr).
MAX_ANNUAL_GROWTH = 100.0
DemandFigure = Annotated[float, NOT_BOOL, Field(ge=0, le=MAX_DEMAND_TOKENS_PER_MONTH)]
PeakFactor = Annotated[float, NOT_BOOL, Field(ge=1)]


#: Longest planning horizon accepted [years]: datacenter assets live 5-30 years, and
#: a longer horizon only makes the MILP large without making the plan better informed.
MAX_HORIZON_YEARS = 50
#: Calendar years a period may fall in.
YEAR_RANGE = (2000, 2100)


def count_limit(env: str, default: int) -> int:
    """A count limit: the environment variable ``env`` if it holds a number >= 1, else ``default``.

    As :func:`dcplan.yamlio.max_input_bytes` reads ``DCPLAN_MAX_INPUT_MB``: an empty,
    unreadable, non-finite or non-positive value leaves the default.

    Parameters
    ----------
    env : str
        Name of the environment variable (``DCPLAN_MAX_UNCERTAINTY_CASES``, ...).
    default : int
        The limit when the variable does not give one [count].

    Returns
    -------
    int
        The limit [count], at least 1.
    """
    raw = os.environ.get(env, "")
    try:
        value = float(raw) if raw.strip() else float(default)
    except ValueError:
        value = float(default)
    if not math.isfinite(value) or value < 1:
        value = float(default)
    return int(value)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


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


def norm_label(key: Any) -> str:
    """Canonical period label of ``key``: ``2027`` -> ``"2027"``, ``"2027Q3"`` -> ``"2027q3"``."""
    y, q = parse_period_label(key)
    return f"{y}q{q}" if q else str(y)


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
        lo, hi = YEAR_RANGE
        for y in (y0, y1):
            if not lo <= y <= hi:
                raise ValueError(f"year {y} is outside {lo}..{hi}; give a planning year")
        if y1 - y0 + 1 > MAX_HORIZON_YEARS:
            raise ValueError(f"the horizon {self.start}..{self.end} spans {y1 - y0 + 1} years; "
                             f"dcplan plans at most {MAX_HORIZON_YEARS} years")
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

    start: DemandFigure
    annual_growth: Annotated[float, NOT_BOOL, Field(gt=-1, le=MAX_ANNUAL_GROWTH)]


#: Longest a flexible workload's demand may wait to be served, unless its profile entry
#: says ``deadline_hours`` (a day: batch work arriving by day is done overnight) [h].
DEFAULT_DEADLINE_HOURS = 24.0




class WorkloadProfile(_Strict):
    """The daily shape of one workload's demand, and whether it may be shifted.

    Attributes
    ----------
    profile : str, optional
        Id of a shape in the profiles catalog (``catalogs/profiles.yaml``).
    hours : list of float, optional
        24 hourly values relative to the mean demand (they average 1).
    days : list of ProfileDay, optional
        Representative days with weights (e.g. weekday 5, weekend 2).
    flexible : bool
        The work may be served later than it arrives (batch jobs): the planner chooses
        when within ``deadline_hours``, filling the valleys of the other workloads.
    deadline_hours : float
        Longest delay from arrival to service [h] (1..24, within the representative day).
    """

    profile: Id | None = None
    hours: list[Annotated[float, NOT_BOOL, Field(ge=0)]] | None = None
    days: list[ProfileDay] | None = None
    flexible: bool = False
    deadline_hours: Annotated[float, NOT_BOOL, Field(ge=1, le=24)] = DEFAULT_DEADLINE_HOURS

    @model_validator(mode="after")
    def _one_shape(self):
        given = [n for n in ("profile", "hours", "days") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of 'profile' (a catalog id), 'hours' (24 "
                             "values) or 'days' (representative days)")
        if self.profile is None:
            why = shape_problem(self.hours, self.days)
            if why:
                raise ValueError(why)
        if "deadline_hours" in self.model_fields_set and not self.flexible:
            raise ValueError("'deadline_hours' applies only to flexible work; add "
                             "'flexible: true' or remove 'deadline_hours'")
        return self


#: Units a workload's demand may be stated in: tokens (input + output), requests
#: (converted with the workload's mean input + output tokens per request) or characters
#: of text in a language (converted with the tokens per character of the tokenizer of
#: the model that serves the workload), each per month or per day.
DEMAND_UNITS = ("tokens_per_month", "tokens_per_day", "requests_per_month",
                "requests_per_day", "characters_per_month", "characters_per_day")
DemandUnitName = Literal["tokens_per_month", "tokens_per_day", "requests_per_month",
                         "requests_per_day", "characters_per_month", "characters_per_day"]


class Language(_Strict):
    """How many tokens a character of text in one language is.

    Attributes
    ----------
    sample : str, optional
        A UTF-8 text file in the language (relative to the scenario file that names
        it), measured with the tokenizer of the model serving each workload.
    tokens_per_character : float, optional
        A given ratio [tokens per character], used for every model (a ratio depends on
        the tokenizer; prefer a sample).
    source : str, optional
        Where the ratio comes from.
    """

    sample: str | None = None
    tokens_per_character: Annotated[float, NOT_BOOL, Field(gt=0, le=100)] | None = None
    source: str | None = None

    @model_validator(mode="after")
    def _one_way(self):
        if (self.sample is None) == (self.tokens_per_character is None):
            raise ValueError("give either sample (a text file in the language, measured with "
                             "each model's tokenizer) or tokens_per_character, not both or "
                             "neither")
        return self


class DemandUnit(_Strict):
    """The unit of one workload's demand figures.

    Attributes
    ----------
    unit : str
        One of :data:`DEMAND_UNITS`.
    language : str, optional
        For ``characters_*``: a key of ``demand.languages``.
    """

    unit: DemandUnitName
    language: Id | None = None

    @model_validator(mode="after")
    def _language(self):
        chars = self.unit.startswith("characters")
        if chars and self.language is None:
            raise ValueError(f"{self.unit} needs a language: write {{unit: {self.unit}, "
                             "language: ko} and give demand.languages.ko a sample text or "
                             "tokens_per_character")
        if not chars and self.language is not None:
            raise ValueError(f"language applies to characters_per_month or "
                             f"characters_per_day only, not {self.unit}; remove it")
        return self

    @property
    def kind(self) -> str:
        """``tokens``, ``requests`` or ``characters``."""
        return self.unit.split("_", 1)[0]

    @property
    def seconds(self) -> float:
        """Seconds in the time base of the unit (a month or a day) [s]."""
        return SECONDS_PER_MONTH if self.unit.endswith("month") else SECONDS_PER_DAY


@dataclass(frozen=True)
class DemandConversion:
    """How one workload's stated demand becomes tokens (resolved against the catalog).

    Attributes
    ----------
    workload : str
    unit : str
        The stated unit (one of :data:`DEMAND_UNITS`).
    tokens_per_unit : float
        Input + output tokens per request, per character, or 1 for tokens [tokens].
    how : str
        The conversion in words (shown beside the demand table).
    """

    workload: str
    unit: str
    tokens_per_unit: float
    how: str


class Demand(_Strict):
    """Token demand forecast (input plus output tokens).

    Attributes
    ----------
    unit : {"tokens_per_month", "tokens_per_day"}
        Unit of every figure in ``table`` and ``growth``.
    peak_to_average : float or dict
        Peak-hour over average demand, one figure or one per workload [-] (>= 1), for
        workloads without a profile; their peaks are assumed to coincide with every
        other workload's (the conservative special case of a daily profile).
    profiles : dict
        workload -> daily shape: a profile id of the catalog, or a
        :class:`WorkloadProfile` (inline hours or days, flexibility). The grid peak is
        then the peak of the sum of the shapes and energy integrates them.
    table : dict
        workload -> {period label -> demand}. With quarterly periods a year key
        applies to each of its quarters.
    growth : dict
        workload -> :class:`Growth`.
    units : dict
        workload -> its own unit (a :class:`DemandUnit` or a unit name), overriding
        ``unit`` for that workload's figures: requests or characters per month or day.
    languages : dict
        language -> :class:`Language` (the sample text or ratio that converts
        characters to tokens).
    """

    unit: Literal["tokens_per_month", "tokens_per_day"] = "tokens_per_month"
    peak_to_average: PeakFactor | dict[Id, PeakFactor] = 1.0
    profiles: dict[Id, Id | WorkloadProfile] = Field(default_factory=dict)
    table: dict[Id, dict[int | str, DemandFigure]] = Field(default_factory=dict)
    growth: dict[Id, Growth] = Field(default_factory=dict)
    units: dict[Id, DemandUnit] = Field(default_factory=dict)
    languages: dict[Id, Language] = Field(default_factory=dict)

    @field_validator("units", mode="before")
    @classmethod
    def _bare_units(cls, v: Any) -> Any:
        """``chat: requests_per_month`` is short for ``chat: {unit: requests_per_month}``."""
        if isinstance(v, dict):
            return {k: {"unit": u} if isinstance(u, str) else u for k, u in v.items()}
        return v

    def unit_of(self, workload: str) -> DemandUnit:
        """The unit of ``workload``'s figures (``unit`` unless ``units`` says otherwise)."""
        spec = self.units.get(workload)
        return spec if spec is not None else DemandUnit(unit=self.unit)

    def profile_of(self, workload: str) -> WorkloadProfile | None:
        """The profile given for ``workload`` (a bare id becomes ``{profile: id}``)."""
        spec = self.profiles.get(workload)
        if spec is None or isinstance(spec, WorkloadProfile):
            return spec
        return WorkloadProfile(profile=spec)

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
    count: Annotated[int, NOT_BOOL, Field(ge=0)]
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
    """Solver settings: the one home of their defaults (scenario ``solver:``, CLI, API).

    Attributes
    ----------
    name : {"highs", "cbc"}
        MILP solver.
    time_limit_s : float
        Wall-clock limit of each solve [s].
    gap : float
        Relative MIP gap at which to stop [-].
    threads : int, optional
        Solver threads (default: solver's choice).
    log : bool
        Show the solver's own log.
    fallback : bool
        Try CBC when HiGHS stops without a plan for a reason other than the time limit
        (the result says so). An exception raised inside HiGHS is never retried: it is
        reported as a solver error.
    scale : bool
        Let large models use the scaled bulk HiGHS driver (see
        :mod:`dcplan.planner.highs`).
    mip_start : bool, optional
        Round the relaxation into a start and try a sub-MIP around it first; None =
        only for large models.
    highs_options : dict
        Extra HiGHS options by name.
    strategy : {"auto", "two_stage", "direct"}
        How integer fabrics (``network_model: integer``) are solved: ``two_stage``
        (fleet from the linear network, then the exact facility, with a proven bound:
        :mod:`dcplan.planner.two_stage`), ``direct`` (the exact MILP at once) or ``auto``
        (two stages for large models, direct for small ones).
    """

    name: Literal[SOLVERS] = DEFAULT_SOLVER
    time_limit_s: Annotated[float, NOT_BOOL, Field(gt=0, le=MAX_TIME_LIMIT_S)] = \
        DEFAULT_TIME_LIMIT_S
    gap: Annotated[float, NOT_BOOL, Field(ge=0, le=1)] = DEFAULT_GAP
    threads: Annotated[int, NOT_BOOL, Field(gt=0, le=MAX_SOLVER_THREADS)] | None = None
    log: bool = False
    fallback: bool = True
    scale: bool = True
    mip_start: bool | None = None
    highs_options: dict[str, Any] = Field(default_factory=dict)
    strategy: Literal["auto", "two_stage", "direct"] = "auto"

    @field_validator("highs_options")
    @classmethod
    def _known_highs_options(cls, v: dict[str, Any]) -> dict[str, Any]:
        from dcplan.scenario.highs_options import highs_option_problems

        problems = highs_option_problems(v)
        if problems:
            raise ValueError("; ".join(problems))
        return v

    def updated(self, **changes: Any) -> SolverOptions:
        """Copy with the given fields changed (``None`` values are ignored), re-validated."""
        data = {**self.model_dump(), **{k: v for k, v in changes.items() if v is not None}}
        return SolverOptions.model_validate(data)


Share = Annotated[float, NOT_BOOL, Field(gt=0, le=1)]
Count = Annotated[int, NOT_BOOL, Field(ge=0, le=1000)]

#: Default target peak utilisation: the peak hour's demand is served at most at this
#: share of the capacity in service, leaving room for bursts above the forecast peak
#: hour and for rebalancing. An assumption (15 % burst headroom), in line with the 70-85 %
#: targets of common autoscaling practice; see docs/architecture.md.
DEFAULT_TARGET_UTILISATION = 0.85
#: Default availability: share of installed racks up at any time. An estimate: Meta's
#: Llama 3 paper (2024) reports 419 unexpected interruptions in 54 days on 16,384 H100
#: GPUs (4.7e-4 per GPU-day); a 72-GPU rack then fails 0.034 times a day, and with a
#: day to repair and requalify and some planned maintenance about 3 % of racks are down.
DEFAULT_AVAILABILITY = 0.97
#: Lowest availability accepted [-]. Availability is the share of installed racks up at
#: any time; the planner divides the capacity the demand needs by it, so 0.5 already
#: doubles the fleet. Published fleet figures are far above it (Meta's Llama 3 paper
#: gives about 0.97, see :data:`DEFAULT_AVAILABILITY`); below it more than half of the
#: racks would be down all the time, which is a share *down* given instead of a share
#: up (0.03 for 0.97), a percentage misread, or a typo, not a fleet anyone plans.
MIN_AVAILABILITY = 0.5


def _availability(value: float) -> float:
    """Refuse an availability outside [:data:`MIN_AVAILABILITY`, 1], saying what it means."""
    if not MIN_AVAILABILITY <= value <= 1.0:
        up = f"{1.0 - value:g}"
        hint = (f"; if {value:g} is the share of racks down, give 1 minus it ({up})"
                if 0.0 < value < 1.0 - MIN_AVAILABILITY and up != "1" else "")
        raise ValueError(
            f"availability is the share of installed racks up at any time and must lie "
            f"between {MIN_AVAILABILITY:g} and 1 (got {value:g}; the default is "
            f"{DEFAULT_AVAILABILITY:g}: {1.0 - DEFAULT_AVAILABILITY:.0%} of racks down){hint}")
    return value


#: Lowest target peak utilisation accepted [-]: below a tenth, nine racks in ten would be
#: headroom, surely a typo (0.85 meant 85 %; 1e-300 broke the solver).
MIN_TARGET_UTILISATION = 0.1
#: A target peak utilisation [-], in [:data:`MIN_TARGET_UTILISATION`, 1].
Utilisation = Annotated[float, NOT_BOOL, Field(ge=MIN_TARGET_UTILISATION, le=1)]

#: A rack availability [-], in [:data:`MIN_AVAILABILITY`, 1].
Availability = Annotated[float, NOT_BOOL, AfterValidator(_availability)]


class PowerOversubscription(_Strict):
    """Power oversubscription: a site provisions less than its racks' power at the basis.

    Attributes
    ----------
    factor : float, optional
        Share of the racks' power at the plan's basis (``peak_power``) that every site
        provisions (grid, building, demand charge), in (0, 1] [-]; 1: not
        oversubscribed. Capping is the safety net: the tokens it is expected to cost
        are counted against demand (docs/planner.md, *Power oversubscription*).
    sites : dict
        Site id -> its own factor [-] (over ``factor``).
    """

    factor: CapFrac | None = None
    sites: dict[Id, CapFrac] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _says_something(self) -> PowerOversubscription:
        """Refuse an entry without any factor (it would silently do nothing)."""
        if self.factor is None and not self.sites:
            raise ValueError("gives no factor; give 'factor' (every site, e.g. 0.85) or "
                             "'sites' ({site: factor}), or leave 'power_oversubscription' out")
        return self

    def factor_of(self, site: str) -> float:
        """Oversubscription factor of ``site`` [-] (1: not oversubscribed)."""
        f = self.sites.get(site, self.factor)
        return 1.0 if f is None else float(f)


class Serving(_Strict):
    """Serving headroom and availability: how much installed capacity serves the peak.

    Attributes
    ----------
    target_utilisation : float or dict
        Highest share of the capacity in service that the peak hour may use, one value
        or per workload, in [:data:`MIN_TARGET_UTILISATION`, 1] (default
        :data:`DEFAULT_TARGET_UTILISATION`; workloads
        not listed get the default). The headroom racks draw serving power in the peak
        (the grid and building carry the burst they exist for); energy counts only the
        served load.
    availability : float or dict
        Share of installed racks up at any time, one value or per rack type, in
        [:data:`MIN_AVAILABILITY`, 1] (default :data:`DEFAULT_AVAILABILITY`); racks
        down draw idle power.
    spare_racks : int or dict
        N+k: racks of each type kept spare at each site that hosts the type, one
        number for every site and type, ``{site: k}`` or ``{site: {rack: k}}``.
    max_batch_per_rank : int or None
        The serving engine's running-request cap per attention-DP rank (TensorRT-LLM
        ``max_batch_size``, SGLang ``max_running_requests``, vLLM ``max_num_seqs``) for
        every rack's performance in this plan, as ``dcplan perf --max-batch`` sets it
        for one answer [sequences]; None (default): the catalogs' perf_defaults.yaml
        ``serving.max_batch_per_rank``.
    """

    target_utilisation: Utilisation | dict[Id, Utilisation] = DEFAULT_TARGET_UTILISATION
    availability: Availability | dict[Id, Availability] = DEFAULT_AVAILABILITY
    spare_racks: Count | dict[Id, Count | dict[Id, Count]] = 0
    max_batch_per_rank: Annotated[int, NOT_BOOL,
                                  Field(ge=1, le=MAX_BATCH_PER_RANK_MAX)] | None = None

    def utilisation(self, workload: str) -> float:
        """Target peak utilisation of ``workload`` [-]."""
        u = self.target_utilisation
        return u.get(workload, DEFAULT_TARGET_UTILISATION) if isinstance(u, dict) else u

    def availability_of(self, rack: str) -> float:
        """Availability of racks of type ``rack`` [-]."""
        a = self.availability
        return a.get(rack, DEFAULT_AVAILABILITY) if isinstance(a, dict) else a

    def spares(self, site: str, rack: str) -> int:
        """Spare racks of ``rack`` kept at ``site`` when it hosts the type."""
        k = self.spare_racks
        if isinstance(k, int):
            return k
        at = k.get(site, 0)
        return at.get(rack, 0) if isinstance(at, dict) else at


class PricePath(_Strict):
    """How a price (or another figure) changes over the years of the plan.

    Attributes
    ----------
    annual_change : float, optional
        Change per year as a fraction (-0.15 = 15 % cheaper every year), compounded from
        the start of the plan (quarters get fractional years) on the base value: the
        catalog's or site's figure, or ``start``.
    start : float, optional
        Value at the start of the plan, for figures without a base (a carbon price).
    by_year : dict, optional
        Year -> value, for every year of the horizon (quarters take their year's
        value), in the unit of the figure it replaces.
    """

    annual_change: Annotated[float, NOT_BOOL, Field(gt=-1, le=10)] | None = None
    start: Annotated[float, NOT_BOOL, Field(ge=0)] | None = None
    by_year: dict[int, Annotated[float, NOT_BOOL, Field(ge=0)]] | None = None

    @model_validator(mode="after")
    def _one(self):
        if (self.annual_change is None) == (self.by_year is None):
            raise ValueError("give exactly one of 'annual_change' or 'by_year'")
        if self.start is not None and self.by_year is not None:
            raise ValueError("'start' goes with 'annual_change'; 'by_year' gives every value")
        return self

    def values(self, periods: list[Period], base: float | None = None) -> tuple[float, ...]:
        """The figure in each period (``base`` when ``start`` is not given)."""
        if self.by_year is not None:
            return tuple(float(self.by_year[p.year]) for p in periods)
        b = self.start if self.start is not None else base
        if b is None:
            raise ValueError("an 'annual_change' path of a figure without a base needs 'start'")
        return tuple(b * (1 + self.annual_change) ** p.offset_years for p in periods)


class SpeedupPath(PricePath):
    """A software-speedup path: a :class:`PricePath` of multipliers, every one > 0.

    A multiplier of 0 would make every rack serve nothing, which no software change does.
    """

    by_year: dict[int, Annotated[float, NOT_BOOL, Field(gt=0)]] | None = None
    start: Annotated[float, NOT_BOOL, Field(gt=0)] | None = None


def _speedup_form(value: Any) -> str | None:
    """Which form a ``software_speedup`` value has: one path, or one per workload."""
    if isinstance(value, dict):
        return "one-path" if set(value) & set(PricePath.model_fields) else "per-workload"
    if isinstance(value, PricePath):
        return "one-path"
    return "per-workload" if value is not None else None


#: One software-speedup path for every workload, or one per workload; the form is told
#: from the keys, so a bad value gets the errors of its own form only (the tags have a
#: '-', which the error reports drop from locations as union tags).
SpeedupField = Annotated[
    Annotated[SpeedupPath, Tag("one-path")]
    | Annotated[dict[Id, SpeedupPath], Tag("per-workload")],
    Discriminator(_speedup_form)]


class Paths(_Strict):
    """Price and technology paths by year (each entry a :class:`PricePath`).

    Attributes
    ----------
    rack_capex : dict
        rack -> path of its price [USD per rack; annual_change relative to the catalog's
        ``capex_usd``].
    energy_price : dict
        site -> path of its energy tariff [site currency per kWh].
    demand_charge : dict
        site -> path of its demand charge [site currency per kW and month].
    software_speedup : PricePath or dict, optional
        Multiplier of every rack's tokens/s on the same hardware, from serving-software
        improvements (1 at the start; ``by_year`` gives the multipliers), one path or
        per workload. Rack power is unchanged.
    """

    rack_capex: dict[Id, PricePath] = Field(default_factory=dict)
    energy_price: dict[Id, PricePath] = Field(default_factory=dict)
    demand_charge: dict[Id, PricePath] = Field(default_factory=dict)
    software_speedup: SpeedupField | None = None

    def speedup_of(self, workload: str) -> PricePath | None:
        """Software-speedup path of ``workload`` (None: no speedup)."""
        sp = self.software_speedup
        return sp.get(workload) if isinstance(sp, dict) else sp

    def entries(self) -> list[tuple[str, PricePath]]:
        """(dotted path, path) of every entry, for the horizon checks."""
        out = [(f"paths.{sect}.{k}", v) for sect in ("rack_capex", "energy_price",
                                                     "demand_charge")
               for k, v in getattr(self, sect).items()]
        sp = self.software_speedup
        if isinstance(sp, dict):
            out += [(f"paths.software_speedup.{k}", v) for k, v in sp.items()]
        elif sp is not None:
            out.append(("paths.software_speedup", sp))
        return out


class Economics(_Strict):
    """Money assumptions.

    Attributes
    ----------
    discount_rate : float
        Annual real discount rate [1/yr]. Default 0.08: an assumption (a typical
        weighted average cost of capital for datacenter investments), not a sourced
        figure; set your own.
    exchange_rates_usd_per_unit : dict
        Currency code -> USD per unit (e.g. ``KRW: 0.00072``); USD is 1.
    terminal_value : {"straight_line", "none"}
        Credit the straight-line book value of equipment still in service at the end
        of the horizon, so that late purchases are not charged their full price.
    unserved_penalty_usd_per_million_tokens : float
        Price of demand left unserved in the elastic re-solve [USD per million
        tokens]. Default 100: an assumption chosen far above any API price (a few USD
        per million tokens), so that the planner leaves demand unserved only where no
        rack can serve it; set it to what a shortfall costs you.
    building_lifetime_years, cdu_lifetime_years : float, optional
        Lives used for the terminal value of buildings (and grid connections) and CDUs
        [years]; without them, they get no terminal credit.
    carbon_price_usd_per_t : float or PricePath, optional
        Price of the grid emissions of the energy bought [USD/tCO2]: a constant or a
        path (an ``annual_change`` path needs ``start``).
    carbon_cap_t : dict
        Period label -> largest emissions in that period [tCO2]; a year key with
        quarterly periods caps each quarter at its share of the year.
    operations_costs : bool
        Count what a self-hosting team pays beyond energy and maintenance: operations
        staff (``staffing.yaml`` at ``salaries.yaml`` by each site's country) and
        software licensed per accelerator (``software.yaml``), in the objective and the
        costs (categories ``staff`` and ``software``). False: leave them out (e.g. when
        another budget pays them).
    """

    discount_rate: Annotated[float, NOT_BOOL, Field(ge=0, lt=1)] = 0.08
    exchange_rates_usd_per_unit: dict[str, Pos] = Field(default_factory=dict)
    terminal_value: Literal["straight_line", "none"] = "straight_line"
    unserved_penalty_usd_per_million_tokens: Pos = 100.0
    operations_costs: bool = True
    building_lifetime_years: Pos | None = None
    cdu_lifetime_years: Pos | None = None
    carbon_price_usd_per_t: Annotated[float, NOT_BOOL, Field(ge=0)] | PricePath | None = None
    carbon_cap_t: dict[int | str, NonNeg] = Field(default_factory=dict)

    def carbon_prices(self, periods: list[Period]) -> tuple[float, ...]:
        """Carbon price in each period [USD/tCO2] (0 without one)."""
        c = self.carbon_price_usd_per_t
        if c is None:
            return (0.0,) * len(periods)
        if isinstance(c, PricePath):
            return c.values(periods)
        return (float(c),) * len(periods)


class ForecastRef(_Strict):
    """A case of a demand forecast file (``{file: F, case: C}``, F relative to the scenario)."""

    file: str
    case: str


class UncertaintyCase(_Strict):
    """One case of a two-stage stochastic plan.

    Attributes
    ----------
    name : str
    probability : float
        Probability of the case [-]; the cases' probabilities sum to 1.
    description : str
    forecast : ForecastRef, optional
        Take ``demand.table`` from this case of a forecast file.
    changes : dict
        Dotted scenario path -> value (as :meth:`dcplan.case.Case.with_changes`).
    overrides : list of Override
        Catalog or site changes, as the scenario's own ``overrides``.
    """

    name: Id
    probability: Annotated[float, NOT_BOOL, Field(gt=0, le=1)]
    description: str = ""
    forecast: ForecastRef | None = None
    changes: dict[str, Any] = Field(default_factory=dict)
    overrides: list[Override] = Field(default_factory=list)


#: Default CVaR level: the worst 10 % of the probability [-].
DEFAULT_CVAR_ALPHA = 0.9


class CVaR(_Strict):
    """Risk term of a stochastic plan: minimise ``(1 - weight) E[cost] + weight CVaR_alpha``.

    ``CVaR_alpha`` is the expected cost of the worst ``1 - alpha`` of the probability.
    """

    weight: Annotated[float, NOT_BOOL, Field(ge=0, le=1)]
    alpha: Annotated[float, NOT_BOOL, Field(gt=0, lt=1)] = DEFAULT_CVAR_ALPHA


#: Probabilities of the cases must sum to 1 within this [-].
PROBABILITY_TOLERANCE = 1e-6
#: Environment variable that raises or lowers :data:`DEFAULT_MAX_UNCERTAINTY_CASES`.
MAX_UNCERTAINTY_CASES_ENV = "DCPLAN_MAX_UNCERTAINTY_CASES"
#: Most cases of an ``uncertainty:`` block, unless :data:`MAX_UNCERTAINTY_CASES_ENV`
#: says otherwise [cases]. The extensive form holds one copy of the plan's MILP per
#: case (the Korea baseline: about 1,830 variables, 320 integer, 4,150 constraints and
#: 55 MB per copy) and the analysis adds a solve of each case alone and of every
#: deterministic plan's first stage on every case, up to ``n (n + 2)`` solves: 20 cases
#: are an extensive form of about 37,000 variables (1.4 GB) and up to 440 single-case
#: solves of 1-6 s; 300 cases would be 17 GB and 90,600 solves. docs/uncertainty.md
#: ("Limits") gives the measurements.
DEFAULT_MAX_UNCERTAINTY_CASES = 20


def max_uncertainty_cases() -> int:
    """Most cases an ``uncertainty:`` block may list [cases] (:data:`MAX_UNCERTAINTY_CASES_ENV`)."""
    return count_limit(MAX_UNCERTAINTY_CASES_ENV, DEFAULT_MAX_UNCERTAINTY_CASES)


class Uncertainty(_Strict):
    """A two-stage stochastic plan (``uncertainty:`` in a scenario; docs/planner.md).

    Attributes
    ----------
    first_stage_until : int
        Year: purchases, building and grid requests in periods starting before it are
        decided now and shared by every case; later ones adapt to each case.
    cases : list of UncertaintyCase
        At least two, at most :func:`max_uncertainty_cases`; probabilities sum to 1.
    cvar : CVaR, optional
    expected_value : str, optional
        Case whose deterministic plan is the "expected-value plan" of the VSS (default:
        the scenario as written, without any case's changes).
    """

    first_stage_until: int
    cases: list[UncertaintyCase] = Field(min_length=2)
    cvar: CVaR | None = None
    expected_value: Id | None = None

    @field_validator("cases", mode="before")
    @classmethod
    def _not_too_many(cls, value: Any) -> Any:
        # counted before the cases are validated: a long list is refused in no time
        most = max_uncertainty_cases()
        if isinstance(value, list) and len(value) > most:
            raise ValueError(
                f"{len(value):,} cases are more than the limit of {most:,} cases of a "
                f"stochastic plan: each case adds a copy of the MILP to the extensive form "
                f"and the analysis solves every plan on every case (up to n (n + 2) solves); "
                f"merge similar cases, or raise the limit with the environment variable "
                f"{MAX_UNCERTAINTY_CASES_ENV} (docs/uncertainty.md, 'Limits')")
        return value

    @model_validator(mode="after")
    def _check(self):
        total = sum(c.probability for c in self.cases)
        if abs(total - 1.0) > PROBABILITY_TOLERANCE:
            parts = ", ".join(f"{c.name} {c.probability:g}" for c in self.cases)
            raise ValueError(f"the cases' probabilities sum to {total:.6g} ({parts}); they "
                             "must sum to 1")
        names = [c.name for c in self.cases]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"case names must be unique; repeated: {', '.join(dup)}")
        if self.expected_value is not None and self.expected_value not in names:
            raise ValueError(f"expected_value '{self.expected_value}' is not a case; cases: "
                             f"{', '.join(names)}")
        return self


#: Scenario fields that no longer exist -> why, and what to do instead.
REMOVED_FIELDS = {
    "planning_scale_racks": (
        "planning_scale_racks was removed: the planner now counts each site's switches, "
        "links and CDUs as integers of the racks in service in every period, so there is "
        "no planning scale to choose; delete the field"),
}


#: ``kind`` of a sweep file (:data:`dcplan.sweep.spec.SWEEP_KIND` is this value).
SWEEP_FILE_KIND = "dcplan_sweep"


def not_a_scenario(data: Any) -> str | None:
    """What other dcplan file ``data`` is, when it is not a scenario (None otherwise).

    Told apart by their keys, as ``dcplan validate`` tells files apart: a sweep file
    starts with ``kind: dcplan_sweep``, a site file has ``grid_mw``, a demand forecast
    file has ``cases``; a scenario has ``periods``.

    Parameters
    ----------
    data : Any
        A file's parsed YAML.

    Returns
    -------
    str or None
        ``"a sweep file"``, ``"a site file"``, ``"a demand forecast file"`` or None.
    """
    if not isinstance(data, dict):
        return None
    if data.get("kind") == SWEEP_FILE_KIND:
        return "a sweep file"
    if "periods" in data:
        return None
    if "grid_mw" in data:
        return "a site file"
    if "cases" in data:
        return "a demand forecast file"
    return None


#: What to do instead, per kind of file :func:`not_a_scenario` recognises.
_INSTEAD = {
    "a sweep file": "run it with 'dcplan sweep FILE'; its 'base' names the scenario it samples",
    "a site file": "sites are named in a scenario's 'sites' list and read from the sites folder",
    "a demand forecast file": "a scenario takes a case of it with "
                              "'demand: {forecast: {file: F, case: C}}'",
}


#: The scenario's ``unserved_policy`` choices (see :class:`Scenario`): the least
#: shortfall first, or unserved demand priced against the cost of serving it.
UNSERVED_POLICIES = ("least_first", "priced")

#: The scenario's ``cdu_choice`` choices (see :class:`Scenario`), the default first:
#: each rack type's CDU model fixed before the solve, or one model per site chosen by
#: the MILP.
CDU_CHOICES = ("per_rack_type", "milp")


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
    network_model : {"integer", "linear", "tiered"}
        ``integer`` (default): every rack type's fabric as integer switch and link
        counts per site and period, exact step functions of the racks in service;
        ``linear``: network kW and capex per rack taken at the racks the LP relaxation
        holds (faster to prove optimal on large scenarios; the ``sizing`` table shows
        the error); ``tiered``: per-rack figures of each tier of the fabric (one,
        two or three switch tiers), the MILP choosing the tier of the racks in service
        (within a few per cent of the exact network, slower than ``linear``).
    cdu_redundancy : int, optional
        Spare CDUs per site and CDU model that has liquid-cooled racks (1 = N+1);
        default: the facility model's assumption (``default_cdu_redundancy`` in
        ``dcplan/facility/assumptions.yaml``).
    cdu_choice : {"per_rack_type", "milp"}
        ``per_rack_type`` (default): each rack type's CDU model is the one the cooling
        model picks for that type alone at its planning scale, fixed before the solve;
        ``milp``: the MILP chooses one CDU model per site for all its liquid-cooled
        racks, among the catalog's in-row and facility CDUs, fixed over the horizon
        (:data:`CDU_CHOICES`).
    lead_time : bool
        Enforce each site's ``lead_time_months``: facility capacity beyond
        ``existing_built_mw`` is in service only from the first period starting at
        least that long after the start of the plan.
    grid_requests : bool
        Treat each site's grid as connection decisions where its site file gives a
        ``grid_connection`` (requests with a cost and a lead time counted from the
        request; ``grid_mw`` is the most it can get); False: the ``grid_mw`` steps are
        simply available, free.
    serving : Serving
        Target peak utilisation, availability and spare racks.
    paths : Paths
        Price and technology paths by year.
    peak_power : {"operating_point", "nameplate", "capped"}
        Rack IT power used for the peak (grid limit, facility built, demand charge):
        idle power plus the performance model's serving power of the allocated
        racks (racks are power-capped at their operating point), or every rack at
        ``it_power_max_kw`` (``nameplate``), or at the power it can draw at its cap
        (``capped``: ``power_at_cap_kw`` of the cap level it runs at, nameplate for
        rack types without ``power_caps``). ``nameplate`` counts every rack at
        ``it_power_max_kw`` whatever cap it runs at. Energy always uses the operating point.
    power_caps : list of float or dict, optional
        Board power cap levels offered, fractions of the accelerators' ``max_power_w``
        in (0, 1] [-]: one list for every rack type, or rack id -> list. The plan
        chooses per site, rack type and period how many racks run at each level
        (goodput and power from the performance model at that cap). None: no caps.
    power_oversubscription : PowerOversubscription, optional
        Sites provisioning less than their racks' power at the basis, with capping as
        the safety net (the tokens it costs counted against demand). None: none.
    storage : list of str or dict, optional
        Battery storage (``storage`` catalog ids) the plan may build: one list for every
        site, or site id -> list. The plan decides per site and period the energy [kWh]
        and power [kW] capacity and the hourly charge and discharge within the
        representative days (the grid carries load minus discharge plus charge). None:
        no storage (the default).
    onsite_generation : list of str or dict, optional
        On-site generation (``onsite_generation`` catalog ids) the plan may build, one
        list for every site or site id -> list: capacity per site and period from the
        entry's permitting lead time on, dispatched per representative hour in the
        site's power balance, with its fuel, carbon and cost. None: none (the default).
    overrides : list of Override
    allow_unserved : bool
        Accept a plan that leaves demand unserved (priced at
        ``economics.unserved_penalty_usd_per_million_tokens``): ``dcplan plan`` then
        reports the shortfall and exits 0, as with ``--allow-unserved``.
    unserved_policy : {"least_first", "priced"}
        When demand cannot all be met: ``least_first`` (default) leaves unserved only
        what the limits force (the least shortfall first, then the cheapest plan
        with it); ``priced`` lets the plan leave demand unserved wherever serving it
        costs more than the penalty (a choice, and the plan says so).
    solver : SolverOptions
    uncertainty : Uncertainty, optional
        Cases with probabilities for a two-stage stochastic plan (``dcplan plan``
        then solves it, see :mod:`dcplan.planner.stochastic`).
    catalog_dir, sites_dir : str, optional
        Data folders, relative to the scenario file.
    """

    name: str = "scenario"
    description: str = ""
    periods: Periods
    sites: list[Id] = Field(min_length=1)
    racks: list[Id] | None = None
    workloads: list[Id] | None = None

    @field_validator("racks", "workloads")
    @classmethod
    def _not_empty(cls, v: list[str] | None, info) -> list[str] | None:
        # An empty list read as "every one" would quietly plan with the whole catalog.
        if v is not None and not v:
            what = {"racks": "every rack in the catalog may be bought",
                    "workloads": "every workload of the demand is served"}[info.field_name]
            raise ValueError(f"is an empty list; leave '{info.field_name}' out ({what}) or "
                             "name at least one")
        return v
    demand: Demand
    economics: Economics = Field(default_factory=Economics)
    existing_fleet: list[ExistingRacks] = Field(default_factory=list)
    budget_usd: dict[int | str, NonNeg] = Field(default_factory=dict)
    existing_built_mw: dict[Id, NonNeg] = Field(default_factory=dict)
    rules: list[Rule] = Field(default_factory=list)
    optics: Id | None = None
    oversubscription: Annotated[float, NOT_BOOL, Field(ge=1)] = DEFAULT_OVERSUBSCRIPTION
    cdu_redundancy: Annotated[int, NOT_BOOL, Field(ge=0)] | None = None
    network_model: Literal["integer", "linear", "tiered"] = "integer"
    cdu_choice: Literal[CDU_CHOICES] = CDU_CHOICES[0]
    lead_time: bool = True
    grid_requests: bool = True
    serving: Serving = Field(default_factory=Serving)
    paths: Paths = Field(default_factory=Paths)
    peak_power: Literal["operating_point", "nameplate", "capped"] = "operating_point"
    power_caps: list[CapFrac] | dict[Id, list[CapFrac]] | None = None
    power_oversubscription: PowerOversubscription | None = None

    @field_validator("power_caps")
    @classmethod
    def _caps_not_empty(cls, v: Any) -> Any:
        # An empty list would offer no operating level at all: the racks could not serve.
        lists = [v] if isinstance(v, list) else list((v or {}).values())
        if any(not levels for levels in lists):
            raise ValueError("offers no cap level; give at least one, e.g. [1.0, 0.9, 0.8]")
        if isinstance(v, dict) and not v:
            raise ValueError("is empty; leave 'power_caps' out (no caps) or name a rack type")
        return v
    storage: list[Id] | dict[Id, list[Id]] | None = None
    onsite_generation: list[Id] | dict[Id, list[Id]] | None = None
    overrides: list[Override] = Field(default_factory=list)
    allow_unserved: bool = False
    unserved_policy: Literal[UNSERVED_POLICIES] = "least_first"
    solver: SolverOptions = Field(default_factory=SolverOptions)
    uncertainty: Uncertainty | None = None
    catalog_dir: str | None = None
    sites_dir: str | None = None

    # Set by load_scenario (not part of the file).
    source_file: str = Field(default="<scenario>", exclude=True)
    #: Dotted path (``overrides.2``, ``demand.table.chat``) -> (file, line) of its
    #: entry; entries of a base scenario or forecast file name that file.
    line_map: dict[str, tuple[str, int]] = Field(default_factory=dict, exclude=True)
    #: For a best-effort scenario built from a file with schema errors: list field ->
    #: index in the file of each item kept, and the paths that were dropped.
    item_index: dict[str, list[int]] = Field(default_factory=dict, exclude=True)
    dropped: tuple[str, ...] = Field(default=(), exclude=True)
    #: Workload -> :class:`DemandConversion` of its stated demand to tokens, set when
    #: the case is loaded (:func:`dcplan.scenario.forecast.resolve_demand_units`).
    demand_conversions: dict[str, Any] = Field(default_factory=dict, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _is_a_scenario(cls, data: Any) -> Any:
        # another dcplan file where a scenario is expected: one problem that says so,
        # not one per field the scenario misses
        what = not_a_scenario(data)
        if what:
            raise ValueError(f"this is {what}, not a scenario (a scenario has periods, sites "
                             f"and demand; examples/*.yaml): {_INSTEAD[what]}")
        return data

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
        return self.source_file, None

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

    def caps_of(self, rack: str) -> tuple[float, ...]:
        """Cap levels offered to rack type ``rack``, highest first (empty: none).

        Parameters
        ----------
        rack : str
            Rack type id.

        Returns
        -------
        tuple of float
            Distinct levels of ``power_caps`` for the rack, as fractions of the
            accelerators' ``max_power_w`` [-].
        """
        caps = self.power_caps
        levels = caps if isinstance(caps, list) else (caps or {}).get(rack, [])
        return tuple(sorted(set(levels), reverse=True))

    def supply_at(self, kind: str, site: str) -> tuple[str, ...]:
        """Catalog ids of ``kind`` (``storage``, ``onsite_generation``) offered at ``site``.

        Parameters
        ----------
        kind : str
            ``storage`` or ``onsite_generation`` (the scenario field of that name).
        site : str
            Site id.

        Returns
        -------
        tuple of str
            Distinct ids in the order given (empty: none offered).
        """
        offer = getattr(self, kind)
        ids = offer if isinstance(offer, list) else (offer or {}).get(site, [])
        return tuple(dict.fromkeys(ids))

    def workload_ids(self) -> list[str]:
        """Workloads to serve."""
        return list(self.workloads) if self.workloads else self.demand.workloads()

    def peak_factor(self, workload: str) -> float:
        """Peak-to-average factor of ``workload`` without a profile [-]."""
        p = self.demand.peak_to_average
        return p.get(workload, 1.0) if isinstance(p, dict) else p

    def demand_stated(self) -> dict[tuple[str, str], float]:
        """Demand per (workload, period label) as stated [the workload's unit]."""
        periods = self.period_list()
        out: dict[tuple[str, str], float] = {}
        for w, row in self.demand.table.items():
            keyed = {norm_label(k): v for k, v in row.items()}
            for p in periods:
                value = keyed.get(p.label, keyed.get(str(p.year)))
                out[(w, p.label)] = value or 0.0
        for w, g in self.demand.growth.items():
            for p in periods:
                out[(w, p.label)] = g.start * (1 + g.annual_growth) ** p.offset_years
        return out

    def tokens_per_unit(self, workload: str) -> float:
        """Input + output tokens per unit of ``workload``'s stated demand [tokens].

        Raises
        ------
        ValueError
            For requests or characters before the case resolved the conversion.
        """
        conv = self.demand_conversions.get(workload)
        if conv is not None:
            return conv.tokens_per_unit
        unit = self.demand.unit_of(workload)
        if unit.kind != "tokens":
            raise ValueError(f"demand of '{workload}' is in {unit.unit}; load the scenario "
                             "as a case (dcplan.load_case) to convert it to tokens")
        return 1.0

    def demand_tokens_per_s(self) -> dict[tuple[str, str], float]:
        """Average demand [input + output tokens/s] per (workload, period label)."""
        return {(w, lab): v * self.tokens_per_unit(w) / self.demand.unit_of(w).seconds
                for (w, lab), v in self.demand_stated().items()}
