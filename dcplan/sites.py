"""Sites: where racks can be installed, with grid, tariff, space, power chain and climate.

A site file is YAML: either one mapping (one site) or a list of site mappings. Every
``*.yaml`` file in the sites folder is read (see :func:`load_sites`); every problem in
every file is reported at once, each naming the file, the site id, the field and the
line.

Climate
-------
Cooling needs the hours of the year spent at each outdoor condition. A site gives
either ``climate_bins`` (a list of ``{dry_bulb_c, wet_bulb_c, hours}`` summing to 8,760
hours) or ``climate_monthly`` (twelve monthly normals of mean, mean-daily-maximum and
mean-daily-minimum dry-bulb temperature and mean relative humidity), from which
:func:`monthly_to_bins` derives 48 bins: each month's diurnal cycle is a sinusoid
between the daily minimum and maximum, sampled at four phase quarters; the dew point is
held at the monthly mean and the wet bulb follows from Stull (2011). This is a
documented simplification: weather extremes beyond the normal daily cycle appear only
in the design (peak) condition ``design_dry_bulb_c`` / ``design_wet_bulb_c``.

Units: temperatures [degC], power [MW] for the grid and [kW] per rack, money in the
site's ``currency`` for tariffs and [USD] for build cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from dcplan.catalog import unknown_message, validate_entries
from dcplan.errors import InputError, Problem, display_path
from dcplan.paths import data_dir
from dcplan.schema import Entry, Frac, Id, NonNeg, Pos, PosInt
from dcplan.units import HOURS_PER_YEAR
from dcplan.yamlio import KEY_LINES, LINE_KEY, read_yaml

#: Days in each month of a non-leap year.
DAYS_PER_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
#: Tolerance on the hours of ``climate_bins`` [h].
HOURS_TOLERANCE = 1.0

Efficiency = Annotated[float, Field(gt=0, le=1)]


@dataclass(frozen=True)
class Topology:
    """A power-redundancy topology: how many systems, each carrying what share.

    Attributes
    ----------
    systems : int
        Independent systems (UPS or generator plants) [count].
    needed : int
        Systems that together carry the whole load; each is sized for
        ``load / needed`` [count].
    spare_modules : int
        Extra modules inside each system (N+1 inside a system) [count].
    uptime_tier : str
        Uptime Institute Tier the topology maps to (the Tier also needs the
        distribution paths, which dcplan does not model).
    meaning : str
    tier_rank : int
        The Tier as a number (1 to 4), to compare two plants: a site is no better
        than its weaker plant.
    """

    systems: int
    needed: int
    spare_modules: int
    uptime_tier: str
    meaning: str
    tier_rank: int


#: Power-redundancy topologies a site may name (``power_redundancy``). Definitions
#: after the Uptime Institute Tier Standard: Topology (Tier I basic capacity N, Tier II
#: redundant components N+1, Tier III concurrently maintainable, Tier IV fault tolerant
#: 2N / 2(N+1)) and the distributed-redundant ("catcher", k-to-make-(k-1)) designs of
#: large operators; see docs/facility.md.
TOPOLOGIES: dict[str, Topology] = {
    "N": Topology(1, 1, 0, "I", "one system sized for the load, no spare", 1),
    "N+1": Topology(1, 1, 1, "II (III with a second distribution path)",
                    "one system with one spare module", 2),
    "N+2": Topology(1, 1, 2, "II (III with a second distribution path)",
                    "one system with two spare modules", 2),
    "2N": Topology(2, 1, 0, "IV", "two systems, each sized for the whole load", 4),
    "2N+1": Topology(2, 1, 1, "IV", "two systems, each N+1: 2(N+1)", 4),
    "DR3/2": Topology(3, 2, 0, "III", "distributed redundant: three systems, any two "
                      "carry the load (3-to-make-2)", 3),
    "DR4/3": Topology(4, 3, 0, "III", "distributed redundant: four systems, any three "
                      "carry the load (4-to-make-3)", 3),
}


def uptime_tier(ups: str, generators: str) -> str:
    """Uptime Institute Tier of a site whose UPS and generator plants have these topologies.

    The Tier Standard asks the whole power path to meet the Tier, engine generators
    included, so the site is at the Tier of its weaker plant; when that is the
    generator plant the label says so.

    Parameters
    ----------
    ups, generators : str
        Topology names (:data:`TOPOLOGIES`).

    Returns
    -------
    str
    """
    u, g = TOPOLOGIES[ups], TOPOLOGIES[generators]
    if g.tier_rank < u.tier_rank:
        return f"{g.uptime_tier}, limited by the {generators} generator plant"
    return u.uptime_tier

#: Topology of a site that names none.
DEFAULT_TOPOLOGY = "N+1"

PowerTopology = Literal["N", "N+1", "N+2", "2N", "2N+1", "DR3/2", "DR4/3"]


class ClimateBin(BaseModel):
    """Hours of the year at one outdoor condition.

    Attributes
    ----------
    dry_bulb_c : float
        Dry-bulb temperature [degC].
    wet_bulb_c : float
        Wet-bulb temperature [degC]; not above the dry bulb.
    hours : float
        Hours per year at this condition [h].
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    dry_bulb_c: Annotated[float, Field(ge=-60, le=60)]
    wet_bulb_c: Annotated[float, Field(ge=-60, le=40)]
    hours: NonNeg

    @model_validator(mode="after")
    def _wet_below_dry(self):
        if self.wet_bulb_c > self.dry_bulb_c + 1e-9:
            raise ValueError(
                f"wet_bulb_c ({self.wet_bulb_c}) must not exceed dry_bulb_c ({self.dry_bulb_c})"
            )
        return self


class ClimateMonth(BaseModel):
    """Monthly climate normals of one month.

    Attributes
    ----------
    month : int
        1..12.
    dry_bulb_mean_c, dry_bulb_max_c, dry_bulb_min_c : float
        Monthly mean, mean daily maximum and mean daily minimum dry bulb [degC].
    rh_frac : float
        Monthly mean relative humidity [0..1].
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    month: Annotated[int, Field(ge=1, le=12)]
    dry_bulb_mean_c: Annotated[float, Field(ge=-60, le=60)]
    dry_bulb_max_c: Annotated[float, Field(ge=-60, le=60)]
    dry_bulb_min_c: Annotated[float, Field(ge=-60, le=60)]
    rh_frac: Annotated[float, Field(gt=0.01, le=1)]

    @model_validator(mode="after")
    def _ordered(self):
        if not self.dry_bulb_min_c <= self.dry_bulb_mean_c <= self.dry_bulb_max_c:
            raise ValueError(
                f"month {self.month}: need dry_bulb_min_c <= dry_bulb_mean_c <= dry_bulb_max_c"
            )
        return self


# --- psychrometrics -------------------------------------------------------------------

_MAGNUS_B = 17.62
_MAGNUS_C = 243.12  # [degC]


def dew_point_c(dry_bulb_c: float, rh_frac: float) -> float:
    """Dew point from dry bulb and relative humidity (Magnus formula).

    Parameters
    ----------
    dry_bulb_c : float
        Dry-bulb temperature [degC].
    rh_frac : float
        Relative humidity [0..1].

    Returns
    -------
    float
        Dew point [degC].
    """
    gamma = math.log(rh_frac) + _MAGNUS_B * dry_bulb_c / (_MAGNUS_C + dry_bulb_c)
    return _MAGNUS_C * gamma / (_MAGNUS_B - gamma)


def rh_from_dew_point(dry_bulb_c: float, dew_c: float) -> float:
    """Relative humidity [0..1] of air at ``dry_bulb_c`` [degC] with dew point ``dew_c`` [degC]."""
    rh = math.exp(
        _MAGNUS_B * dew_c / (_MAGNUS_C + dew_c) - _MAGNUS_B * dry_bulb_c / (_MAGNUS_C + dry_bulb_c)
    )
    return min(1.0, rh)


def wet_bulb_c(dry_bulb_c: float, rh_frac: float) -> float:
    """Wet-bulb temperature at sea-level pressure (Stull 2011 empirical fit).

    Parameters
    ----------
    dry_bulb_c : float
        Dry-bulb temperature [degC].
    rh_frac : float
        Relative humidity [0..1].

    Returns
    -------
    float
        Wet-bulb temperature [degC], never above the dry bulb. Stull quotes about
        +-1 K accuracy for 5-99 % RH and -20..50 degC.
    """
    rh = max(5.0, min(99.0, rh_frac * 100.0))
    t = dry_bulb_c
    tw = (
        t * math.atan(0.151977 * math.sqrt(rh + 8.313659))
        + math.atan(t + rh)
        - math.atan(rh - 1.676331)
        + 0.00391838 * rh**1.5 * math.atan(0.023101 * rh)
        - 4.686035
    )
    return min(tw, t)


#: Phases (cosine values) of the four equal-hour samples of a diurnal sinusoid.
_DIURNAL = (math.cos(math.pi / 8), math.cos(3 * math.pi / 8),
            -math.cos(3 * math.pi / 8), -math.cos(math.pi / 8))


def monthly_to_bins(months: list[ClimateMonth]) -> list[ClimateBin]:
    """Derive annual climate bins from twelve monthly normals.

    Each month's hours are split in four equal parts at ``mean + a * cos(phase)``,
    ``a = (max - min) / 2``, ``cos(phase)`` in (0.924, 0.383, -0.383, -0.924) (the
    quarter-means of a sinusoid's sorted values, rounded to the mid-quarter points);
    the dew point stays at its monthly-mean value through the day.

    Parameters
    ----------
    months : list of ClimateMonth
        Twelve months.

    Returns
    -------
    list of ClimateBin
        48 bins whose hours sum to 8,760 [h].
    """
    bins = []
    for m in sorted(months, key=lambda x: x.month):
        hours = DAYS_PER_MONTH[m.month - 1] * 24.0 / len(_DIURNAL)
        amp = (m.dry_bulb_max_c - m.dry_bulb_min_c) / 2.0
        dew = dew_point_c(m.dry_bulb_mean_c, m.rh_frac)
        for c in _DIURNAL:
            t = m.dry_bulb_mean_c + amp * c
            rh = rh_from_dew_point(t, dew)
            bins.append(ClimateBin(dry_bulb_c=round(t, 3),
                                   wet_bulb_c=round(wet_bulb_c(t, rh), 3), hours=hours))
    return bins


# --- the site -------------------------------------------------------------------------


class FlexibleConnection(BaseModel):
    """The curtailable ("flexible") part a site may be offered per connection request.

    Flexible MW are energised sooner (``lead_time_months``, typically shorter than the
    firm request's) or cheaper, and count toward the site's grid limit except in
    curtailment events, when the grid operator may cut them by ``curtailment_depth``
    for up to ``curtailment_hours_per_year`` hours (demand-response agreements for ML
    workloads; Emerald AI cut a cluster's power by 25 % for three hours, arXiv
    2507.00909). The planner models one representative event a day, ``event_hours``
    hours from ``event_start_hour`` of every representative day (the grid's evening
    peak by default, an assumption), and requires the site to serve its load through it
    (:mod:`dcplan.planner.flexgrid`).

    Attributes
    ----------
    lead_time_months : float
        From request to energised flexible capacity [months].
    cost_usd_per_mw : float
        Paid per flexible MW requested [USD/MW].
    curtailment_hours_per_year : float
        Most hours a year the flexible part may be curtailed [h/yr], at most 8,760.
    curtailment_depth : float
        Share of the flexible MW that may be cut in a curtailment hour [-], 0-1.
    max_mw : float
        Most flexible MW the site is offered in all [MW], on top of the firm MW
        ``grid_mw`` allows (the operator offers it where the grid has room outside its
        peak hours, before reinforcement makes it firm).
    event_start_hour : int
        Local hour of the day the representative event starts [h], 0-23.
    event_hours : int
        Length of the representative event [h], 1-24 (wrapping past midnight).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    lead_time_months: NonNeg
    cost_usd_per_mw: NonNeg
    curtailment_hours_per_year: Annotated[float, Field(ge=0, le=HOURS_PER_YEAR)]
    curtailment_depth: Frac
    max_mw: Pos
    event_start_hour: Annotated[int, Field(ge=0, le=23)] = 17
    event_hours: Annotated[int, Field(ge=1, le=24)] = 4

    def event_hours_of_day(self) -> tuple[int, ...]:
        """Hours of the day [0-23] in the representative curtailment event [h]."""
        return tuple((self.event_start_hour + i) % 24 for i in range(self.event_hours))


class GridConnection(BaseModel):
    """A site's grid connection as a decision: what is committed, what a request costs.

    The site's ``grid_mw`` is then the most the grid can give in each year
    (connectable); the planner chooses how much more to request and when, and a
    request is energised ``lead_time_months`` later (plus ``assessment_months`` once the
    site's connection reaches ``assessment_threshold_mw``).

    Attributes
    ----------
    committed_mw : dict
        Year -> MW connected or already granted, in service from that year on (a step
        function, cumulative; 0 before the first year) [MW].
    lead_time_months : float
        From request to energised capacity [months].
    cost_usd_per_mw : float
        What the operator pays per MW requested (customer-funded lines and substation,
        connection charges) [USD/MW], paid when requesting.
    assessment_threshold_mw : float, optional
        Connections of this size or more need an assessment first (Korea: the grid
        impact assessment of the Distributed Energy Act for 10 MW or more, counted
        cumulatively) [MW].
    assessment_months : float
        Extra lead time of a request that takes the connection to the threshold or
        above [months].
    flexible : FlexibleConnection, optional
        A curtailable part offered sooner or cheaper (None: firm requests only).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    committed_mw: dict[int, NonNeg] = Field(default_factory=dict)
    lead_time_months: NonNeg
    cost_usd_per_mw: NonNeg
    assessment_threshold_mw: Pos | None = None
    assessment_months: NonNeg = 0.0
    flexible: FlexibleConnection | None = None

    def committed_mw_in(self, year: int | float) -> float:
        """MW committed in ``year`` [MW]: the latest step at or before it, else 0."""
        steps = [y for y in self.committed_mw if y <= year]
        return float(self.committed_mw[max(steps)]) if steps else 0.0


class Site(Entry):
    """A place to install racks.

    Attributes
    ----------
    region : str
        Region id (e.g. ``seoul_metro``, ``honam``), used by scenario rules.
    country : str
        ISO 3166 alpha-2 code (``KR``, ``US``).
    currency : {"KRW", "USD"}
        Currency of the tariff fields.
    grid_mw : dict
        Year -> grid capacity available to us from that year on [MW] (a step function;
        0 before the first year). With a ``grid_connection`` this is the most the site
        can be connected for (connectable MW), not what it has.
    energy_price_per_kwh : float
        Energy charge [currency/kWh].
    demand_charge_per_kw_month : float
        Demand (basic) charge on contracted or peak power [currency/(kW month)]; 0 if none.
    carbon_g_per_kwh : float
        Grid emission factor [gCO2/kWh].
    rack_positions : int
        Rack positions (floor tiles) available for IT racks.
    max_rack_kw : float
        Densest rack the site can power and cool [kW/rack].
    facility_water : bool
        Whether the site has a facility-water loop for direct-liquid-cooled racks.
    liquid_supply_c : float
        Design facility-water supply temperature of the liquid loop [degC].
    air_chilled_water_c : float
        Chilled-water supply temperature of the air-side plant (CRAH coils) [degC].
    grid_connection : GridConnection, optional
        Connection requests as decisions (committed MW, cost, lead time, assessment);
        without it ``grid_mw`` is simply available.
    tariff_class : str, optional
        The utility tariff the energy and demand-charge figures come from.
    build_shell_usd_per_mw, build_electrical_usd_per_mw, build_mechanical_usd_per_mw : float
        Cost to build facility capacity, per MW of facility power, split into shell and
        core (land works, structure, envelope, fit-out, fire protection), electrical
        (utility intake, MV/LV switchgear, transformers, UPS, generators, distribution)
        and mechanical work the facility model does not price (facility-water and
        air-side distribution: piping, air handlers, controls; the heat-rejection plant
        and the CDUs are priced by the facility model, so they are not in here) [USD/MW].
    build_capex_usd_per_mw : float, optional
        One all-in figure instead of the three parts (older site files): it includes the
        mechanical plant, which the facility model prices again (the planner notes it).
    lead_time_months : float
        Time from decision to energised capacity [months].
    ups_efficiency : float, optional
        Fixed UPS efficiency [0..1] (a measured figure). Default: the efficiency of the
        UPS model the redundancy sizing picks, at its load fraction.
    distribution_efficiency : float
        Transformer + switchgear + cabling efficiency [0..1]; all loads pass through it.
    mechanical_on_ups : bool
        Whether cooling loads are also fed through the UPS.
    evaporative_cooling : bool
        Whether water-consuming heat rejection (cooling towers, adiabatic coolers,
        water-cooled chillers: plants rated on the wet bulb) may be used.
    power_redundancy : str
        UPS (and, unless ``generator_redundancy`` is given, generator) topology, one of
        :data:`TOPOLOGIES`; default ``N+1``.
    generator_redundancy : str, optional
        Generator topology when it differs from the UPS topology.
    water_limit_m3_per_year : float, optional
        Site water allowance [m3/year]; evaporative heat rejection is dropped when the
        cooling would use more.
    design_dry_bulb_c, design_wet_bulb_c : float
        Peak design outdoor condition for sizing (e.g. ASHRAE 0.4 %) [degC].
    climate_bins : list of ClimateBin, optional
        Annual hours per outdoor condition (sum 8,760 h).
    climate_monthly : list of ClimateMonth, optional
        Twelve monthly normals; used when ``climate_bins`` is not given.
    """

    region: Id
    country: Annotated[str, Field(pattern=r"^[A-Z]{2}$")]
    currency: Literal["KRW", "USD"]
    grid_mw: dict[int, NonNeg]
    energy_price_per_kwh: Pos
    demand_charge_per_kw_month: NonNeg = 0.0
    carbon_g_per_kwh: NonNeg
    rack_positions: PosInt
    max_rack_kw: Pos
    facility_water: bool
    liquid_supply_c: Annotated[float, Field(ge=5, le=70)]
    air_chilled_water_c: Annotated[float, Field(ge=4, le=30)] = 18.0
    grid_connection: GridConnection | None = None
    tariff_class: str | None = None
    build_shell_usd_per_mw: NonNeg | None = None
    build_electrical_usd_per_mw: NonNeg | None = None
    build_mechanical_usd_per_mw: NonNeg | None = None
    build_capex_usd_per_mw: NonNeg | None = None
    lead_time_months: NonNeg
    ups_efficiency: Efficiency | None = None
    distribution_efficiency: Efficiency
    mechanical_on_ups: bool = False
    evaporative_cooling: bool = False
    power_redundancy: PowerTopology = DEFAULT_TOPOLOGY
    generator_redundancy: PowerTopology | None = None
    water_limit_m3_per_year: NonNeg | None = None
    design_dry_bulb_c: Annotated[float, Field(ge=-30, le=60)]
    design_wet_bulb_c: Annotated[float, Field(ge=-30, le=40)]
    climate_bins: list[ClimateBin] | None = None
    climate_monthly: list[ClimateMonth] | None = None
    #: File and lines the site was read from (set by :func:`load_sites`).
    _source: dict = PrivateAttr(default_factory=dict)

    def where(self, field: str | None = None) -> tuple[str, int | None]:
        """File and line of the site entry, or of its top-level ``field`` if known."""
        src = self._source
        line = src.get("lines", {}).get(field.split(".")[0]) if field else None
        return src.get("file", "<sites>"), line or src.get("line")

    def with_source_of(self, other: Site) -> Site:
        """Give this site ``other``'s file and lines (after an override); return it."""
        self._source = dict(other._source)
        return self

    @model_validator(mode="after")
    def _consistency(self):
        problems = []
        if not self.grid_mw:
            problems.append("grid_mw needs at least one 'year: MW' step")
        elif any(y < 1990 or y > 2200 for y in self.grid_mw):
            problems.append("grid_mw keys must be years (e.g. 2027: 40)")
        if (self.climate_bins is None) == (self.climate_monthly is None):
            problems.append("give exactly one of climate_bins or climate_monthly")
        if self.climate_bins is not None:
            total = sum(b.hours for b in self.climate_bins)
            if abs(total - HOURS_PER_YEAR) > HOURS_TOLERANCE:
                problems.append(
                    f"climate_bins hours sum to {total:g}; they must sum to "
                    f"{HOURS_PER_YEAR:g} (one year)"
                )
        if self.climate_monthly is not None:
            months = sorted(m.month for m in self.climate_monthly)
            if months != list(range(1, 13)):
                problems.append("climate_monthly needs each month 1..12 exactly once")
        if self.design_wet_bulb_c > self.design_dry_bulb_c:
            problems.append("design_wet_bulb_c must not exceed design_dry_bulb_c")
        parts = [self.build_shell_usd_per_mw, self.build_electrical_usd_per_mw,
                 self.build_mechanical_usd_per_mw]
        if any(p is not None for p in parts):
            if any(p is None for p in parts) or self.build_capex_usd_per_mw is not None:
                problems.append("give the three build cost parts (build_shell_usd_per_mw, "
                                "build_electrical_usd_per_mw, build_mechanical_usd_per_mw) "
                                "and no build_capex_usd_per_mw")
        elif self.build_capex_usd_per_mw is None:
            problems.append("give the build cost: build_shell_usd_per_mw, "
                            "build_electrical_usd_per_mw and build_mechanical_usd_per_mw")
        gc = self.grid_connection
        if gc is not None and self.grid_mw:
            years = sorted(set(gc.committed_mw) | set(self.grid_mw))
            over = [y for y in years if gc.committed_mw_in(y) > self.grid_mw_in(y) + 1e-9]
            if over:
                y = over[0]
                problems.append(f"grid_connection.committed_mw exceeds grid_mw in {y} "
                                f"({gc.committed_mw_in(y):g} > {self.grid_mw_in(y):g} MW): "
                                "grid_mw is the most the grid can give, committed MW included")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def grid_mw_in(self, year: int | float) -> float:
        """Grid capacity available in ``year`` [MW]: the latest step at or before it, else 0."""
        steps = [y for y in self.grid_mw if y <= year]
        return float(self.grid_mw[max(steps)]) if steps else 0.0

    @cached_property
    def climate(self) -> tuple[ClimateBin, ...]:
        """Annual climate bins (given, or derived from the monthly normals)."""
        if self.climate_bins is not None:
            return tuple(self.climate_bins)
        return tuple(monthly_to_bins(list(self.climate_monthly or [])))

    @property
    def build_parts_usd_per_mw(self) -> dict[str, float]:
        """Build cost by part [USD/MW]: shell, electrical, mechanical; or ``all_in``."""
        if self.build_capex_usd_per_mw is not None:
            return {"all_in": float(self.build_capex_usd_per_mw)}
        return {"shell": float(self.build_shell_usd_per_mw or 0.0),
                "electrical": float(self.build_electrical_usd_per_mw or 0.0),
                "mechanical": float(self.build_mechanical_usd_per_mw or 0.0)}

    def loss_chain(self, ups_efficiency: float | None = None) -> tuple[float, float]:
        """Efficiencies (IT/network path, cooling path) from grid to load [0..1].

        Parameters
        ----------
        ups_efficiency : float, optional
            UPS efficiency to use when the site states none [0..1].
        """
        ups = self.ups_efficiency if self.ups_efficiency is not None else ups_efficiency
        if ups is None:
            raise InputError(Problem(f"site {self.id}", "no UPS efficiency: the site gives "
                                     "no ups_efficiency and no UPS model sized it; add "
                                     "ups_efficiency or a ups catalog", field="ups_efficiency"))
        it = ups * self.distribution_efficiency
        mech = it if self.mechanical_on_ups else self.distribution_efficiency
        return it, mech

    @property
    def topology(self) -> Topology:
        """UPS redundancy topology."""
        return TOPOLOGIES[self.power_redundancy]

    @property
    def generator_topology(self) -> Topology:
        """Generator redundancy topology."""
        return TOPOLOGIES[self.generator_redundancy or self.power_redundancy]


def _site_files(folder: Path) -> list[Path]:
    # Everything named *.yaml but a folder: a link to a device or a FIFO is then refused
    # by the reader with its reason instead of silently dropping a site from the plan.
    return sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml")
                  and not p.is_dir())


def load_sites(sites_dir: Path | str | None = None, files: list[Path] | None = None
               ) -> dict[str, Site]:
    """Load and validate every site file.

    Parameters
    ----------
    sites_dir : Path or str, optional
        Folder of site YAML files; defaults to ``$DCPLAN_SITES_DIR`` or the shipped
        ``sites/``.
    files : list of Path, optional
        Load exactly these files instead of a folder.

    Returns
    -------
    dict
        Site id -> :class:`Site`, sorted by id.

    Raises
    ------
    InputError
        With every problem of every file (file, site, field, line).
    """
    if files is None:
        folder = data_dir("sites", sites_dir)
        if not folder.is_dir():
            raise InputError(Problem(display_path(folder), "sites folder not found; pass "
                                     "--sites-dir or set DCPLAN_SITES_DIR to a folder of site "
                                     "YAML files"))
        files = _site_files(folder)
        if not files:
            raise InputError(Problem(display_path(folder), "the sites folder holds no site "
                                     "files (*.yaml); add site files or point --sites-dir / "
                                     "DCPLAN_SITES_DIR at the folder that has them"))
    sites: dict[str, Site] = {}
    where: dict[str, str] = {}
    problems: list[Problem] = []
    for path in files:
        shown = display_path(path)
        try:
            raw = read_yaml(path)
        except InputError as exc:
            problems += exc.problems
            continue
        if isinstance(raw, dict) and "entries" not in raw:
            raw = [raw]
        entries, found = validate_entries(raw, Site, shown)
        problems += found
        lines = {}
        for item in raw if isinstance(raw, list) else []:
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                lines.setdefault(item["id"], (item.get(LINE_KEY), dict(item.get(KEY_LINES, {}))))
        for ident, site in entries.items():
            line, key_lines = lines.get(ident, (None, {}))
            site._source = {"file": shown, "line": line, "lines": key_lines}
            if ident in sites:
                problems.append(Problem(shown, f"duplicate site id (also in {where[ident]}); "
                                        "site ids must be unique, rename one",
                                        entry=ident, field="id"))
                continue
            sites[ident] = site
            where[ident] = shown
    if problems:
        raise InputError(problems)
    return dict(sorted(sites.items()))


def get_site(sites: dict[str, Site], site_id: str) -> Site:
    """Return ``sites[site_id]`` or raise an :class:`InputError` with a suggestion."""
    if site_id not in sites:
        raise InputError(Problem("<sites>", unknown_message("sites", site_id, sites)))
    return sites[site_id]
