"""The planner's input tables: every coefficient the MILP needs, precomputed.

:func:`input_tables` is the only place that calls the performance model
(:func:`dcplan.perf.rack_performance`), and it and :func:`rack_site_data` the only
places that call the facility model (:func:`dcplan.facility.coefficients`).
Everything downstream (model, results, tests) works on the plain dataclasses defined
here, so tests can build tiny instances by hand. The whole preparation, these tables
then the linear network's fit (:mod:`dcplan.planner.network_scale`) and the presolve
reductions (:mod:`dcplan.planner.reductions`), is
:func:`dcplan.planner.prepare.prepare_inputs`.

Discounting convention (see ``docs/planner.md``): the discount rate ``r`` is an
annual effective rate; a period starting ``t`` years after the start of the plan and
lasting ``L`` years has its capex paid at its start, discount factor
``(1 + r) ** -t``, and its opex paid at its middle, ``(1 + r) ** -(t + L / 2)``. The
terminal value (book value of equipment still in service at the end of the horizon
``H``) is credited at ``(1 + r) ** -H``.
"""

from __future__ import annotations

import datetime as dt
import math
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from dcplan.errors import InputError
from dcplan.planner.operations import api_offers, operations_inputs
from dcplan.scenario import Period, Scenario, parse_period_label
from dcplan.scenario.schema import DEFAULT_DEADLINE_HOURS
from dcplan.schema import CoolingType, parse_date
from dcplan.units import HOURS_PER_YEAR, SECONDS_PER_DAY, SECONDS_PER_MONTH

#: Optional memo of facility coefficients shared by many cases (a sweep's samples). When
#: set, :func:`input_tables` and the linear network's fit
#: (:mod:`dcplan.planner.network_scale`) call ``memo(case, site, rack_id, n_racks, compute)``
#: instead of ``compute(case, site, rack_id, n_racks)`` (:func:`rack_site_data`); the memo
#: decides whether the inputs of a stored table are unchanged. None: compute every time.
FACILITY_MEMO: ContextVar[Any] = ContextVar("dcplan_facility_memo", default=None)

POOLS_AGGREGATED = ("all",)
POOLS_DISAGGREGATED = ("prefill", "decode")
POOLS_ALL = frozenset(POOLS_AGGREGATED + POOLS_DISAGGREGATED)


@dataclass(frozen=True)
class RackData:
    """Per rack type.

    Attributes
    ----------
    id : str
    capex_usd : float
        Price per rack [USD].
    maintenance_frac_per_year : float
        Yearly maintenance as a share of capex [1/yr].
    lifetime_years : float
        Economic life [years].
    rack_positions : int
        Positions used [-].
    it_power_max_kw, it_power_idle_kw : float
        Rack IT power at full load and idle [kW].
    liquid : bool
        Needs facility water (direct liquid cooling).
    first_period : int
        Index of the first period in which it may be bought (``len(periods)`` = never).
    availability : float
        Share of installed racks up at any time [-].
    capex_path : tuple of float
        Price per period [USD] (empty: ``capex_usd`` every period).
    """

    id: str
    capex_usd: float
    maintenance_frac_per_year: float
    lifetime_years: float
    rack_positions: int
    it_power_max_kw: float
    it_power_idle_kw: float
    liquid: bool
    first_period: int = 0
    availability: float = 1.0
    capex_path: tuple[float, ...] = ()


@dataclass(frozen=True)
class GridData:
    """A site's grid connection as a decision (see :class:`dcplan.sites.GridConnection`).

    Attributes
    ----------
    committed_kw : tuple of float
        Connected or granted capacity per period [kW].
    arrival : tuple of int
        Per request period: index of the first period a request made then serves
        (``len(periods)`` = not within the horizon).
    arrival_assessed : tuple of int
        The same for requests that need the assessment (extra lead time).
    cost_usd_per_kw : float
        Paid per kW requested, in the request period [USD/kW].
    threshold_kw : float or None
        Connections of this size or more need the assessment [kW]; None: no assessment.
    lead_time_months, assessment_months : float
        As given, for reporting [months].
    """

    committed_kw: tuple[float, ...]
    arrival: tuple[int, ...]
    arrival_assessed: tuple[int, ...]
    cost_usd_per_kw: float
    threshold_kw: float | None = None
    lead_time_months: float = 0.0
    assessment_months: float = 0.0
    flexible: FlexData | None = None


@dataclass(frozen=True)
class FlexData:
    """The curtailable part of a site's connection (see :class:`dcplan.sites.FlexibleConnection`).

    Attributes
    ----------
    arrival : tuple of int
        Per request period: index of the first period a flexible request made then
        serves (``len(periods)`` = not within the horizon; the assessment's months
        included where the site has a threshold: a conservative reading).
    cost_usd_per_kw : float
        Paid per flexible kW requested [USD/kW].
    max_kw : float
        Most flexible kW in all [kW] (on top of the firm connectable capacity).
    depth : float
        Share of the flexible kW cut in a curtailment hour [-].
    hours_per_year : float
        Curtailment allowance [h/yr].
    event_hours : tuple of int
        Hours of the day [0-23] of the representative event [h].
    lead_time_months : float
        As given, for reporting [months].
    """

    arrival: tuple[int, ...]
    cost_usd_per_kw: float
    max_kw: float
    depth: float
    hours_per_year: float
    event_hours: tuple[int, ...]
    lead_time_months: float = 0.0


@dataclass(frozen=True)
class StorageData:
    """A battery storage entry offered at a site (catalog kind ``storage``).

    Attributes
    ----------
    id : str
    capex_usd_per_kwh, capex_usd_per_kw : float
        Price of energy [USD/kWh] and power [USD/kW] capacity.
    efficiency : float
        Round-trip efficiency, counted on charge [-].
    depth_of_discharge : float
        Usable share of the energy bought [-].
    life_years : float
        Calendar life [years].
    degradation_per_year : float
        Usable energy lost per year of age [-/yr].
    fixed_om_usd_per_kw_year : float
        [USD/(kW yr)].
    """

    id: str
    capex_usd_per_kwh: float
    capex_usd_per_kw: float
    efficiency: float
    depth_of_discharge: float
    life_years: float
    degradation_per_year: float = 0.0
    fixed_om_usd_per_kw_year: float = 0.0


@dataclass(frozen=True)
class OnsiteData:
    """An on-site generation entry offered at a site (catalog kind ``onsite_generation``).

    Attributes
    ----------
    id : str
    capex_usd_per_kw : float
        [USD/kW].
    fuel_usd_per_kwh : tuple of float
        Fuel cost per kWh generated in each period (heat rate x fuel price path) [USD/kWh].
    variable_om_usd_per_kwh : float
        [USD/kWh].
    fixed_om_usd_per_kw_year : float
        [USD/(kW yr)].
    carbon_kg_per_kwh : float
        [kgCO2/kWh].
    availability : float
        Share of the rating available in every hour [-].
    first_period : int
        First period it can run (its permitting lead time from the start of the plan).
    life_years : float
        [years].
    min_stable_load : float
        Lowest stable output as a share of the rating [-] (reported, not enforced).
    """

    id: str
    capex_usd_per_kw: float
    fuel_usd_per_kwh: tuple[float, ...]
    carbon_kg_per_kwh: float
    availability: float
    first_period: int
    life_years: float
    variable_om_usd_per_kwh: float = 0.0
    fixed_om_usd_per_kw_year: float = 0.0
    min_stable_load: float = 0.0


@dataclass(frozen=True)
class SiteData:
    """Per site, with money already in USD.

    Attributes
    ----------
    id, region : str
    grid_kw : tuple of float
        Grid capacity per period [kW].
    rack_positions : int
        Positions available [-].
    max_rack_kw : float
        Densest rack it can host [kW].
    facility_water : bool
    energy_usd_per_kwh : float
        Energy price [USD/kWh].
    demand_charge_usd_per_kw_month : float
        Demand charge on peak facility power [USD/(kW month)].
    carbon_kg_per_kwh : float
        Grid emission factor [kgCO2/kWh].
    build_capex_usd_per_kw : float
        Facility build cost [USD/kW].
    built_kw_initial : float
        Facility capacity already built at the start [kW].
    first_build_period : int
        First period in which newly built capacity can be in service (lead time).
    build_parts_usd_per_kw : tuple of (str, float)
        Build cost by part (``shell``, ``electrical``, ``mechanical``) [USD/kW]; empty:
        ``build_capex_usd_per_kw`` is one all-in figure.
    energy_path, demand_charge_path : tuple of float
        Tariffs per period [USD/kWh], [USD/(kW month)] (empty: the constant figures).
    connection : GridData or None
        Grid connection decisions; None: ``grid_kw`` is simply available.
    water_limit_m3_per_year : float or None
        Most site water a year [m3/year] (None: no limit).
    power_redundancy : str
        UPS topology (``N+1``, ``2N``, ...).
    """

    id: str
    region: str
    grid_kw: tuple[float, ...]
    rack_positions: int
    max_rack_kw: float
    facility_water: bool
    energy_usd_per_kwh: float
    demand_charge_usd_per_kw_month: float
    carbon_kg_per_kwh: float
    build_capex_usd_per_kw: float
    built_kw_initial: float = 0.0
    first_build_period: int = 0
    build_parts_usd_per_kw: tuple[tuple[str, float], ...] = ()
    energy_path: tuple[float, ...] = ()
    demand_charge_path: tuple[float, ...] = ()
    connection: GridData | None = None
    water_limit_m3_per_year: float | None = None
    power_redundancy: str = "N+1"


@dataclass(frozen=True)
class CduData:
    """A CDU model the MILP may choose for a site (scenario ``cdu_choice: milp``).

    Its fields carry the names of :class:`RackSiteData`'s CDU fields, so the rows that
    price and place CDUs read either (:meth:`PlanInputs.cdu_data`).

    Attributes
    ----------
    cdu_id : str
        Catalog id (``cdus``).
    cdu_capacity_kw : float
        Heat one CDU moves [kW].
    cdu_capex_usd : float
        Price of one CDU, installed [USD].
    cdu_positions : float
        Rack positions per CDU [positions] (0 for plant-room units).
    pump_power_kw : float
        Rated pump power of one CDU [kW] (reported; the power rows keep each rack
        type's cooling coefficients).
    """

    cdu_id: str
    cdu_capacity_kw: float
    cdu_capex_usd: float
    cdu_positions: float = 0.0
    pump_power_kw: float = 0.0


@dataclass(frozen=True)
class RackSiteData:
    """Linear facility coefficients of one rack type at one site.

    Attributes
    ----------
    allowed : bool
        Whether the site can host the rack (densest rack, facility water, facility
        model).
    reason : str
        Why not, when not allowed.
    network_kw_per_rack, network_capex_usd_per_rack : float
        [kW], [USD] per rack.
    network_positions_per_rack : float
        Network-rack positions (leaves, spines and cores in their own racks) per rack
        [positions/rack] (linear network; the integer fabric counts its own).
    cooling_kw_per_it_kw_avg, cooling_kw_per_it_kw_peak : float
        Cooling electric power per IT kW, annual average and design day [kW/kW].
    loss_frac : float
        Facility = (IT + cooling + network) * (1 + loss_frac) [-].
    liquid_heat_kw_per_rack : float
        Heat to liquid per rack at full load [kW].
    cdu_id : str
        CDU model ('' for air-cooled racks).
    cdu_capacity_kw, cdu_capex_usd, cdu_positions : float
        [kW], [USD], rack positions per CDU.
    cooling_capex_usd_per_kw : float
        Heat-rejection plant capex per kW of IT [USD/kW].
    pue_annual : float
        For reporting [-].
    redundancy_capex_usd_per_kw : float
        UPS and generator capex of the site's topology beyond the N+1 plant its
        electrical build cost covers, per IT kW at full load (0 for N+1 or leaner
        topologies) [USD/kW].
    recharge_kw_per_it_kw : float
        UPS battery recharge the grid connection must carry on top of the facility
        peak, per IT kW at full load [kW/kW].
    water_l_per_it_kwh : float
        Site water per kWh of IT energy at full load (WUE of the cooling plant) [L/kWh].
    network_by_period : tuple of (float, float, float)
        ``network_model: linear`` after
        :func:`~dcplan.planner.network_scale.fit_network_scale`: per period, network
        [kW], capex [USD] and network-rack positions per rack at the fleet the plan's LP
        relaxation holds at the site then; empty: ``network_kw_per_rack``,
        ``network_capex_usd_per_rack`` and ``network_positions_per_rack`` in every
        period.
    network_racks_by_period : tuple of int
        The racks each period's ``network_by_period`` figures are taken at [racks].
    network_tiers : tuple of (int, int, float, float, float)
        ``network_model: tiered``
        (:func:`~dcplan.planner.network_scale.tier_network`): the rack counts between
        which the fabric keeps its number of tiers, ``(first, last, kW, capex USD,
        positions)`` per rack, covering 1 .. the most racks the site holds; the MILP
        chooses the interval of the racks in service (one binary each), so a fleet above
        a tier boundary pays that tier's figures. Empty: ``network_by_period``.
    """

    allowed: bool = True
    reason: str = ""
    network_kw_per_rack: float = 0.0
    network_capex_usd_per_rack: float = 0.0
    cooling_kw_per_it_kw_avg: float = 0.0
    cooling_kw_per_it_kw_peak: float = 0.0
    loss_frac: float = 0.0
    liquid_heat_kw_per_rack: float = 0.0
    cdu_id: str = ""
    cdu_capacity_kw: float = 0.0
    cdu_capex_usd: float = 0.0
    cdu_positions: float = 0.0
    cooling_capex_usd_per_kw: float = 0.0
    pue_annual: float = 1.0
    redundancy_capex_usd_per_kw: float = 0.0
    recharge_kw_per_it_kw: float = 0.0
    water_l_per_it_kwh: float = 0.0
    network_by_period: tuple[tuple[float, ...], ...] = ()
    network_racks_by_period: tuple[int, ...] = ()
    network_positions_per_rack: float = 0.0
    network_tiers: tuple[tuple[int, int, float, float, float], ...] = ()

    def __post_init__(self) -> None:
        # tuples also when read back from JSON (the sweep's facility memo, saved plans)
        object.__setattr__(self, "network_by_period",
                           tuple(tuple(x) for x in self.network_by_period))
        object.__setattr__(self, "network_racks_by_period",
                           tuple(int(n) for n in self.network_racks_by_period))
        object.__setattr__(self, "network_tiers", tuple(
            (int(a), int(b), float(kw), float(c), float(pos))
            for a, b, kw, c, pos in self.network_tiers))

    def network_tier(self, n: float) -> tuple[int, int, float, float, float] | None:
        """The interval of :attr:`network_tiers` holding ``n`` racks (None without tiers).

        Parameters
        ----------
        n : float
            Racks of this type in service at the site [racks] (rounded, at least 1).

        Returns
        -------
        tuple of (int, int, float, float, float) or None
            ``(first [racks], last [racks], network [kW], capex [USD], positions
            [positions])`` per rack of the tier holding ``n`` (the last tier above the
            largest); None without :attr:`network_tiers`.
        """
        if not self.network_tiers:
            return None
        k = max(1, int(round(n)))
        return next((t for t in self.network_tiers if t[0] <= k <= t[1]),
                    self.network_tiers[-1])

    def _network(self, p: int, n: float | None, i: int, single: float) -> float:
        tier = self.network_tier(n) if n is not None else None
        if tier is not None:
            return tier[2 + i]
        if self.network_by_period and len(self.network_by_period[p]) > i:
            return self.network_by_period[p][i]
        return single

    def network_kw(self, p: int, n: float | None = None) -> float:
        """Network power per rack in service in period ``p`` [kW] (linear network).

        With ``n`` (racks in service) and :attr:`network_tiers`, that of their tier.

        Parameters
        ----------
        p : int
            Period index (0-based) [-].
        n : float, optional
            Racks of this type in service at the site [racks]; None: no tier lookup.

        Returns
        -------
        float
            Network power per rack in service [kW].
        """
        return self._network(p, n, 0, self.network_kw_per_rack)

    def network_capex(self, p: int, n: float | None = None) -> float:
        """Network capex per rack bought in period ``p`` [USD] (linear network).

        With ``n`` (racks in service) and :attr:`network_tiers`, that of their tier.

        Parameters
        ----------
        p : int
            Period index (0-based) [-].
        n : float, optional
            Racks of this type in service at the site [racks]; None: no tier lookup.

        Returns
        -------
        float
            Network capex per rack bought [USD].
        """
        return self._network(p, n, 1, self.network_capex_usd_per_rack)

    def network_positions(self, p: int, n: float | None = None) -> float:
        """Network-rack positions per rack in service in period ``p`` (linear network).

        [positions/rack]; with ``n`` (racks in service) and :attr:`network_tiers`, that
        of their tier.

        Parameters
        ----------
        p : int
            Period index (0-based) [-].
        n : float, optional
            Racks of this type in service at the site [racks]; None: no tier lookup.

        Returns
        -------
        float
            Network-rack positions per rack in service [positions/rack].
        """
        return self._network(p, n, 2, self.network_positions_per_rack)


#: Position of each capacity pool in :attr:`PerfData.level`.
POOL_INDEX = {"all": 0, "prefill": 1, "decode": 2}


@dataclass(frozen=True)
class PerfData:
    """Operating point of one rack type serving one workload.

    Attributes
    ----------
    goodput_tokens_per_s : float
        Input + output tokens/s per rack (aggregated mode) [tokens/s].
    power_kw : float
        Rack IT power at that point [kW] (basis: operating point, what the plan sizes
        with ``peak_power: operating_point``).
    prefill_tokens_per_s, decode_tokens_per_s : float
        Per rack used as prefill / decode pool (disaggregated) [tokens/s].
    output_tokens_per_s : float
        [tokens/s].
    level : tuple of (float, float, float)
        Per period, the rates ("all", "prefill", "decode") at the period's software
        level over the ones above, which are at the latest fitted run's level (empty:
        1). Rack power stays at that level's.
    power_p99_kw : float
        Rack IT power exceeded 1 % of the time at that point [kW] (the performance
        model's high percentile, :attr:`dcplan.perf.goodput.RackPerf.power_p99_kw`);
        0: not reported (inputs saved before the planner kept it).
    extrapolation : str
        Why the performance model extrapolates at this point
        (:attr:`dcplan.perf.goodput.RackPerf.extrapolation`; '' when it does not, or
        in inputs saved before the planner kept it).
    """

    goodput_tokens_per_s: float
    power_kw: float
    prefill_tokens_per_s: float = 0.0
    decode_tokens_per_s: float = 0.0
    output_tokens_per_s: float = 0.0
    level: tuple[tuple[float, float, float], ...] = ()
    power_p99_kw: float = 0.0
    extrapolation: str = ""

    def rate(self, pool: str, p: int | None = None) -> float:
        """Tokens/s per rack in ``pool`` ("all", "prefill" or "decode") [tokens/s].

        With period index ``p``: at that period's software level (``level``).

        Parameters
        ----------
        pool : str
            ``all`` (input + output tokens), ``prefill`` (input tokens) or ``decode``
            (output tokens).
        p : int, optional
            Period index (0-based) [-]; None: at the latest fitted run's software level.

        Returns
        -------
        float
            Tokens per second one rack serves in ``pool`` [tokens/s].
        """
        i = POOL_INDEX[pool]
        base = (self.goodput_tokens_per_s, self.prefill_tokens_per_s,
                self.decode_tokens_per_s)[i]
        return base * self.level[p][i] if (p is not None and self.level) else base


@dataclass(frozen=True)
class WorkloadData:
    """Demand of one workload.

    Attributes
    ----------
    id : str
    disaggregated : bool
        Served by separate prefill and decode pools.
    input_frac : float
        Input tokens / (input + output tokens) [-].
    peak_factor : float
        Peak over average demand [-] (the profile's peak when it has one).
    demand_tokens_per_s : tuple of float
        Average demand per period, input + output [tokens/s].
    sites : frozenset of str, optional
        Sites it may be served from (None = all).
    target_utilisation : float
        Largest share of the capacity serving it that its peak may use [-].
    speedup : tuple of float
        Software speedup per period: multiplier of tokens/s per rack [-] (empty: 1).
    profile : tuple of float, optional
        Hourly shape over the representative days, mean 1 (None: at its peak in every
        hour, see :mod:`dcplan.planner.profiles`).
    flexible : bool
        May be served up to ``deadline_hours`` after it arrives [h].
    demand_unit : str
        Unit the scenario states its demand in (``requests_per_month``...).
    tokens_per_unit : float
        Input + output tokens per unit of the stated demand [tokens].
    conversion : str
        How the stated demand became tokens, in words.
    input_tokens_mean, output_tokens_mean : float
        Mean prompt and generated tokens per request [tokens] (0: not given).
    cache_hit_frac : float
        Share of prompt tokens read from the prefix cache [0..1].
    model : str
        Catalog model it serves.
    """

    id: str
    disaggregated: bool
    input_frac: float
    peak_factor: float
    demand_tokens_per_s: tuple[float, ...]
    sites: frozenset[str] | None = None
    target_utilisation: float = 1.0
    speedup: tuple[float, ...] = ()
    profile: tuple[float, ...] | None = None
    flexible: bool = False
    deadline_hours: float = DEFAULT_DEADLINE_HOURS
    demand_unit: str = "tokens_per_month"
    tokens_per_unit: float = 1.0
    conversion: str = ""
    input_tokens_mean: float = 0.0
    output_tokens_mean: float = 0.0
    cache_hit_frac: float = 0.0
    model: str = ""

    def demand_stated(self, p: int) -> float:
        """Average demand in period index ``p`` in its stated unit [unit].

        Parameters
        ----------
        p : int
            Period index (0-based) [-].

        Returns
        -------
        float
            Average demand in :attr:`demand_unit` (per day or per month, input + output
            tokens converted back with :attr:`tokens_per_unit`) [unit].
        """
        sec = SECONDS_PER_DAY if self.demand_unit.endswith("_day") else SECONDS_PER_MONTH
        return self.demand_tokens_per_s[p] * sec / self.tokens_per_unit

    @property
    def pools(self) -> tuple[str, ...]:
        """Capacity pools serving it."""
        return POOLS_DISAGGREGATED if self.disaggregated else POOLS_AGGREGATED

    def pool_share(self, pool: str) -> float:
        """Share of its tokens that ``pool`` must serve [-].

        Parameters
        ----------
        pool : str
            ``all``, ``prefill`` or ``decode``.

        Returns
        -------
        float
            1 for ``all``, :attr:`input_frac` for ``prefill``, its complement for
            ``decode`` [-].
        """
        return {"all": 1.0, "prefill": self.input_frac, "decode": 1.0 - self.input_frac}[pool]

    def peak_tokens_per_s(self, p: int, pool: str = "all") -> float:
        """Peak demand on ``pool`` in period index ``p`` as it arrives [tokens/s].

        Parameters
        ----------
        p : int
            Period index (0-based) [-].
        pool : str
            ``all`` (input + output tokens), ``prefill`` (input) or ``decode`` (output).

        Returns
        -------
        float
            Average demand times :attr:`peak_factor` times :meth:`pool_share` [tokens/s].
        """
        return self.demand_tokens_per_s[p] * self.peak_factor * self.pool_share(pool)

    def speed(self, p: int) -> float:
        """Software speedup in period ``p`` [-].

        Parameters
        ----------
        p : int
            Period index (0-based) [-].

        Returns
        -------
        float
            Multiplier of tokens/s per rack (1 without :attr:`speedup`) [-].
        """
        return self.speedup[p] if self.speedup else 1.0


@dataclass(frozen=True)
class ExistingData:
    """Racks installed before the plan.

    Attributes
    ----------
    rack, site : str
    count : int
    retire_period : int
        Index of the first period they are no longer in service.
    """

    rack: str
    site: str
    count: int
    retire_period: int


def default_cdu_redundancy() -> int:
    """Spare CDUs per site and CDU model when a scenario does not say (facility assumption).

    Returns
    -------
    int
        Spare CDUs [count] (``cooling.default_cdu_redundancy`` of the facility assumptions).
    """
    from dcplan.facility.assumptions import value

    return int(value("cooling", "default_cdu_redundancy"))


@dataclass
class PlanInputs:
    """Everything the MILP needs.

    Attributes
    ----------
    periods : list of Period
    racks : dict
        id -> :class:`RackData`.
    sites : dict
        id -> :class:`SiteData`.
    rack_site : dict
        (rack, site) -> :class:`RackSiteData`.
    perf : dict
        (rack, workload) -> :class:`PerfData` (only pairs that fit).
    workloads : dict
        id -> :class:`WorkloadData`.
    existing : list of ExistingData
    budget_usd : tuple
        Largest undiscounted capex per period [USD], None = no limit.
    discount_rate : float
        [1/yr].
    terminal_value : bool
        Credit straight-line book value at the end of the horizon.
    building_lifetime_years, cdu_lifetime_years : float, optional
        For the terminal value of buildings and CDUs (None = no credit).
    unserved_usd_per_token : float
        Penalty of unserved demand in the elastic model [USD/token].
    unserved_policy : {"least_first", "priced"}
        How the elastic model trades unserved demand against cost (the scenario's
        ``unserved_policy``, :data:`dcplan.scenario.schema.UNSERVED_POLICIES`).
    cdu_redundancy : int
        Spare CDUs per site and CDU model in use.
    cdu_choice : {"per_rack_type", "milp"}
        The scenario's ``cdu_choice``: each rack type's CDU model fixed
        (``RackSiteData.cdu_id``), or one model per site chosen by the MILP among
        :attr:`cdu_options`.
    cdu_options : dict
        Site id -> the CDU models the MILP may choose there (:class:`CduData`, sorted
        by id); filled with ``cdu_choice: milp`` for the sites that can host a
        liquid-cooled rack type, empty otherwise.
    name : str
    notes : list of str
        Warnings from preparation (e.g. racks a site cannot host).
    nameplate_peak : bool
        Size peak (grid, building, demand charge) on every rack at
        ``it_power_max_kw`` instead of the performance model's operating point.
    facility : dict
        (rack, site) -> the facility model's coefficient object the linear terms came
        from (used by the post-solve exact sizing; empty for hand-made inputs).
    spare_racks : dict
        (rack, site) -> spare racks kept while the site hosts the type (N+k).
    carbon_usd_per_kg : tuple of float
        Carbon price per period [USD/kgCO2] (empty: none).
    carbon_cap_kg : tuple
        Largest emissions per period [kgCO2], None = no cap (empty: none).
    day_names, day_weights : tuple
        Representative days of the profiles and their weights (sum 1).
    operations : OperationsData, optional
        Staff and software costs per unit of the fleet (None: not counted).
    api_offers : tuple of ApiOffer
        API prices comparable with the workloads' models (the build-vs-buy table).
    fabrics : dict
        Rack id -> its fabrics (:class:`~dcplan.planner.fabric.FabricData`): integer
        switch and link counts in the MILP (:func:`~dcplan.planner.network_rows.add_fabrics`).
        Rack types without an entry take the per-rack linear network coefficients of
        ``rack_site`` (hand-made inputs).
    network_rack_units : int
        Switch rack units one network rack holds [U].
    network_collapsed : frozenset
        (rack, site) pairs of a linear network with two tiers that the MILP prices at
        the lower tier at any count, without the tier binaries
        (:func:`~dcplan.planner.network_scale.tier_network`: the LP relaxation holds
        them far below the boundary). That model is a relaxation of the one with every
        tier; a plan above the boundary at such a pair is solved again with its tiers
        (:func:`~dcplan.planner.run.solve_inputs`).
    cap_levels : dict
        Rack id -> the board power cap levels offered to it, highest first, fractions
        of the accelerators' ``max_power_w`` [-] (scenario ``power_caps``); rack types
        without an entry run uncapped (one level, ``None`` in the model's keys).
    perf_at_cap : dict
        (rack, workload, cap) -> :class:`PerfData` at that cap (pairs that fit there).
    power_at_cap_kw : dict
        (rack, cap) -> rack IT power when every accelerator draws its cap [kW]
        (:attr:`dcplan.perf.goodput.RackPerf.power_at_cap_kw`).
    capped_peak : bool
        The scenario's ``peak_power`` is ``capped`` (``nameplate_peak`` is then True too:
        the peak counts every rack at the most it can draw at its cap).
    power_oversub : dict
        Site id -> power oversubscription factor below 1 [-] (scenario
        ``power_oversubscription``): the site provisions that share of its racks' power
        at the basis, and its racks' goodput is derated by the tokens capping is
        expected to cost (:meth:`oversub_lost_frac`). Empty: none.
    storage : dict
        Site id -> battery storage offered there (scenario ``storage``); sites without
        an entry have none.
    onsite : dict
        Site id -> on-site generation offered there (scenario ``onsite_generation``).
    """

    periods: list[Period]
    racks: dict[str, RackData]
    sites: dict[str, SiteData]
    rack_site: dict[tuple[str, str], RackSiteData]
    perf: dict[tuple[str, str], PerfData]
    workloads: dict[str, WorkloadData]
    existing: list[ExistingData] = field(default_factory=list)
    budget_usd: tuple[float | None, ...] = ()
    discount_rate: float = 0.0
    terminal_value: bool = True
    building_lifetime_years: float | None = None
    cdu_lifetime_years: float | None = None
    unserved_usd_per_token: float = 1e-4
    unserved_policy: str = "least_first"
    cdu_redundancy: int = field(default_factory=default_cdu_redundancy)
    cdu_choice: str = "per_rack_type"
    cdu_options: dict[str, tuple[CduData, ...]] = field(default_factory=dict)
    name: str = "plan"
    notes: list[str] = field(default_factory=list)
    nameplate_peak: bool = False
    facility: dict[tuple[str, str], Any] = field(default_factory=dict)
    spare_racks: dict[tuple[str, str], int] = field(default_factory=dict)
    carbon_usd_per_kg: tuple[float, ...] = ()
    carbon_cap_kg: tuple[float | None, ...] = ()
    day_names: tuple[str, ...] = ("day",)
    day_weights: tuple[float, ...] = (1.0,)
    max_hours: int | None = None
    operations: Any = None
    api_offers: tuple[Any, ...] = ()
    fabrics: dict[str, tuple] = field(default_factory=dict)
    network_rack_units: int = 0
    network_collapsed: frozenset = frozenset()
    cap_levels: dict[str, tuple[float, ...]] = field(default_factory=dict)
    perf_at_cap: dict[tuple[str, str, float], PerfData] = field(default_factory=dict)
    power_at_cap_kw: dict[tuple[str, float], float] = field(default_factory=dict)
    capped_peak: bool = False
    power_oversub: dict[str, float] = field(default_factory=dict)
    storage: dict[str, tuple[StorageData, ...]] = field(default_factory=dict)
    onsite: dict[str, tuple[OnsiteData, ...]] = field(default_factory=dict)

    # --- time and money ------------------------------------------------------------

    @property
    def horizon_years(self) -> float:
        """End of the last period counted from the start [years]."""
        last = self.periods[-1]
        return last.offset_years + last.years

    def df_capex(self, p: int) -> float:
        """Discount factor of capex in period ``p`` (paid at its start) [-].

        Parameters
        ----------
        p : int
            Period index (0-based) [-].

        Returns
        -------
        float
            ``(1 + r) ** -t`` with ``t`` the period's start [-].
        """
        return (1 + self.discount_rate) ** -self.periods[p].offset_years

    def df_opex(self, p: int) -> float:
        """Discount factor of opex in period ``p`` (paid at its middle) [-].

        Parameters
        ----------
        p : int
            Period index (0-based) [-].

        Returns
        -------
        float
            ``(1 + r) ** -(t + L / 2)`` [-].
        """
        per = self.periods[p]
        return (1 + self.discount_rate) ** -(per.offset_years + per.years / 2)

    def df_end(self) -> float:
        """Discount factor at the end of the horizon [-].

        Returns
        -------
        float
            ``(1 + r) ** -H`` with ``H`` the horizon [-].
        """
        return (1 + self.discount_rate) ** -self.horizon_years

    def hours(self, p: int) -> float:
        """Hours in period ``p`` [h].

        Parameters
        ----------
        p : int
            Period index (0-based) [-].

        Returns
        -------
        float
            Period length at 8,760 h a year [h].
        """
        return self.periods[p].years * HOURS_PER_YEAR

    def months(self, p: int) -> float:
        """Months in period ``p`` [months].

        Parameters
        ----------
        p : int
            Period index (0-based) [-].

        Returns
        -------
        float
            Period length in months (twelfths of a year) [months].
        """
        return self.periods[p].years * 12

    def alive(self, rack: str, bought: int, p: int) -> bool:
        """Whether a rack bought in period ``bought`` is in service in period ``p``.

        See :func:`in_service` (the same rule retires the existing fleet).

        Parameters
        ----------
        rack : str
            Rack type id.
        bought : int
            Index of the period the rack was bought in [-].
        p : int
            Period index (0-based) [-].

        Returns
        -------
        bool
        """
        age = self.periods[p].offset_years - self.periods[bought].offset_years
        return in_service(age, self.racks[rack].lifetime_years)

    def remaining_frac(self, lifetime: float | None, bought: int) -> float:
        """Share of an asset's life left at the end of the horizon (straight line) [-].

        Parameters
        ----------
        lifetime : float or None
            Asset life [years]; None or 0: no credit.
        bought : int
            Index of the period the asset was bought in [-].

        Returns
        -------
        float
            Life left over life, 0 when :attr:`terminal_value` is off [-].
        """
        if not self.terminal_value or not lifetime:
            return 0.0
        used = self.horizon_years - self.periods[bought].offset_years
        return max(0.0, lifetime - used) / lifetime

    # --- prices and paths -----------------------------------------------------------

    def rack_capex(self, rack: str, p: int) -> float:
        """Price of one rack bought in period ``p`` [USD].

        Parameters
        ----------
        rack : str
            Rack type id.
        p : int
            Period index (0-based) [-].

        Returns
        -------
        float
            [USD] per rack (its ``capex_path`` entry, else ``capex_usd``).
        """
        rk = self.racks[rack]
        return rk.capex_path[p] if rk.capex_path else rk.capex_usd

    def energy_price(self, site: str, p: int) -> float:
        """Energy tariff at ``site`` in period ``p`` [USD/kWh].

        Parameters
        ----------
        site : str
            Site id.
        p : int
            Period index (0-based) [-].

        Returns
        -------
        float
            [USD/kWh].
        """
        sd = self.sites[site]
        return sd.energy_path[p] if sd.energy_path else sd.energy_usd_per_kwh

    def demand_charge(self, site: str, p: int) -> float:
        """Demand charge at ``site`` in period ``p`` [USD/(kW month)].

        Parameters
        ----------
        site : str
            Site id.
        p : int
            Period index (0-based) [-].

        Returns
        -------
        float
            [USD/(kW month)].
        """
        sd = self.sites[site]
        return sd.demand_charge_path[p] if sd.demand_charge_path \
            else sd.demand_charge_usd_per_kw_month

    def carbon_price(self, p: int) -> float:
        """Carbon price in period ``p`` [USD/kgCO2].

        Parameters
        ----------
        p : int
            Period index (0-based) [-].

        Returns
        -------
        float
            [USD/kgCO2] (0 without a carbon price).
        """
        return self.carbon_usd_per_kg[p] if self.carbon_usd_per_kg else 0.0

    def carbon_cap(self, p: int) -> float | None:
        """Emission cap of period ``p`` [kgCO2] (None: none).

        Parameters
        ----------
        p : int
            Period index (0-based) [-].

        Returns
        -------
        float or None
            Largest emissions in the period [kgCO2]; None: no cap.
        """
        return self.carbon_cap_kg[p] if self.carbon_cap_kg else None

    # --- schedules, pools and representative hours ------------------------------------

    def _schedule_cache(self) -> dict:
        cache = self.__dict__.get("_schedules")
        if cache is None:
            cache = self.__dict__["_schedules"] = build_schedules(self)
        return cache

    def schedules(self, workload: str, p: int) -> tuple:
        """Schedules of ``workload`` in period ``p`` (see :mod:`dcplan.planner.profiles`).

        Parameters
        ----------
        workload : str
            Workload id.
        p : int
            Period index (0-based) [-].

        Returns
        -------
        tuple of Schedule
            One for a fixed workload, the candidates of a flexible one.
        """
        return self._schedule_cache()["schedules"][workload, p]

    def rep_hours(self, p: int) -> tuple:
        """Representative hours of period ``p``.

        Indices of the profiles' hours (a tuple of them for a merged group); ``(None,)``
        when no workload has a profile.

        Parameters
        ----------
        p : int
            Period index (0-based) [-].

        Returns
        -------
        tuple
            One entry per representative hour: an hour index or a tuple of them.
        """
        return self._schedule_cache()["hours"][p]

    def alloc_pools(self, workload: str, p: int) -> list[tuple[str, str, int]]:
        """``(key, pool, schedule index)`` of every allocation of ``workload`` in ``p``.

        The key is the pool (``all``, ``prefill``, ``decode``) for one schedule, else
        ``<pool>_<schedule name>``.

        Parameters
        ----------
        workload : str
            Workload id.
        p : int
            Period index (0-based) [-].

        Returns
        -------
        list of (str, str, int)
            ``(key, pool, schedule index)``; the index is a position [-].
        """
        wd = self.workloads[workload]
        sch = self.schedules(workload, p)
        if len(sch) == 1:
            return [(k, k, 0) for k in wd.pools]
        return [(f"{k}_{s.name}", k, j) for k in wd.pools for j, s in enumerate(sch)]

    def pool_of(self, workload: str, key: str, p: int) -> tuple[str, int]:
        """(pool, schedule index) of an allocation key.

        Parameters
        ----------
        workload : str
            Workload id.
        key : str
            Allocation key (see :meth:`alloc_pools`).
        p : int
            Period index (0-based) [-].

        Returns
        -------
        tuple of (str, int)
            Pool and schedule index [-].

        Raises
        ------
        KeyError
            When ``key`` is not an allocation of ``workload`` in ``p``.
        """
        for k, base, j in self.alloc_pools(workload, p):
            if k == key:
                return base, j
        raise KeyError(key)

    def schedule_of(self, workload: str, key: str, p: int):
        """The :class:`~dcplan.planner.profiles.Schedule` an allocation key serves.

        Parameters
        ----------
        workload : str
            Workload id.
        key : str
            Allocation key (see :meth:`alloc_pools`).
        p : int
            Period index (0-based) [-].
        """
        return self.schedules(workload, p)[self.pool_of(workload, key, p)[1]]

    def multi_schedule(self, workload: str, p: int) -> bool:
        """Whether ``workload`` has several schedules in ``p`` (a flexible mix).

        Parameters
        ----------
        workload : str
            Workload id.
        p : int
            Period index (0-based) [-].

        Returns
        -------
        bool
        """
        return len(self.schedules(workload, p)) > 1

    def demand_row_tokens(self, workload: str, p: int) -> float:
        """Tokens in period ``p`` per unit of the workload's demand rows [tokens per token/s].

        The rows are in peak tokens/s for one schedule and in mean tokens/s for a
        flexible mix (see :func:`dcplan.planner.model.add_demand`).

        Parameters
        ----------
        workload : str
            Workload id.
        p : int
            Period index (0-based) [-].

        Returns
        -------
        float
            Period seconds over the schedule's peak factor (one schedule) or period seconds
            (flexible mix) [tokens per token/s].
        """
        sch = self.schedules(workload, p)
        return self.hours(p) * 3600.0 / (1.0 if len(sch) > 1 else sch[0].peak_factor)

    def rate(self, rack: str, workload: str, key: str, p: int, cap: float | None = None,
             site: str | None = None) -> float:
        """Tokens/s one rack serves on allocation ``key`` in period ``p`` [tokens/s].

        Parameters
        ----------
        rack : str
            Rack type id.
        workload : str
            Workload id.
        key : str
            Allocation key (see :meth:`alloc_pools`): ``all`` counts input + output tokens,
            ``prefill`` input and ``decode`` output tokens.
        p : int
            Period index (0-based) [-].
        cap : float, optional
            Cap level the rack runs at [-]; None: uncapped.
        site : str, optional
            Site the rack serves at: at a power-oversubscribed site the rate is net of
            the share capping is expected to cost (:meth:`oversub_lost_frac`); None:
            gross.

        Returns
        -------
        float
            At the period's software level and the workload's speedup [tokens/s].
        """
        base = key if key in POOLS_ALL else self.pool_of(workload, key, p)[0]
        gross = self.perf_at(rack, workload, cap).rate(base, p) * \
            self.workloads[workload].speed(p)
        if site is None or site not in self.power_oversub:
            return gross
        return gross * (1.0 - self.oversub_lost_frac(rack, site, workload, cap))

    def basis_rack_kw(self, rack: str, workload: str, cap: float | None = None) -> float:
        """Power one rack serving ``workload`` at cap ``cap`` counts at the power basis [kW].

        Parameters
        ----------
        rack : str
            Rack type id.
        workload : str
            Workload id.
        cap : float, optional
            Cap level [-]; None: uncapped.

        Returns
        -------
        float
            ``power_at_cap_kw`` (capped basis, rack offered caps), ``it_power_max_kw``
            (nameplate, or capped without caps), else the operating point's
            ``power_kw`` [kW].
        """
        if self.capped_peak and rack in self.cap_levels:
            return self.peak_rack_kw(rack, cap)
        if self.nameplate_peak:
            return self.racks[rack].it_power_max_kw
        return self.perf_at(rack, workload, cap).power_kw

    def oversub_lost_frac(self, rack: str, site: str, workload: str,
                          cap: float | None = None) -> float:
        """Expected share of a rack's goodput lost to capping at an oversubscribed site [-].

        :func:`dcplan.planner.power_oversub.lost_fraction` of the rack's operating
        point against ``factor x`` :meth:`basis_rack_kw`: linear in the racks (the
        factor is given), so the MILP derates goodput by it.

        Parameters
        ----------
        rack : str
            Rack type id.
        site : str
            Site id.
        workload : str
            Workload id.
        cap : float, optional
            Cap level [-]; None: uncapped.

        Returns
        -------
        float
            In [0, 1]; 0 at a site not oversubscribed [-].
        """
        f = self.power_oversub.get(site)
        if f is None:
            return 0.0
        cache = self.__dict__.setdefault("_oversub_lost", {})
        key = (rack, site, workload, cap)
        if key not in cache:
            from dcplan.planner.power_oversub import lost_fraction

            pf = self.perf_at(rack, workload, cap)
            cache[key] = lost_fraction(pf.power_kw, pf.power_p99_kw,
                                       self.racks[rack].it_power_idle_kw,
                                       f * self.basis_rack_kw(rack, workload, cap))
        return cache[key]

    def caps(self, rack: str) -> tuple:
        """Cap levels of ``rack`` in the model's keys: ``(None,)`` when it runs uncapped.

        Parameters
        ----------
        rack : str
            Rack type id.

        Returns
        -------
        tuple
            The offered levels, fractions of ``max_power_w`` [-], or ``(None,)``.
        """
        return self.cap_levels.get(rack) or (None,)

    def perf_at(self, rack: str, workload: str, cap: float | None = None) -> PerfData:
        """Operating point of ``rack`` serving ``workload`` at cap level ``cap``.

        Parameters
        ----------
        rack : str
            Rack type id.
        workload : str
            Workload id.
        cap : float, optional
            Cap level [-]; None: uncapped (:attr:`perf`).

        Returns
        -------
        PerfData
        """
        return self.perf[rack, workload] if cap is None else \
            self.perf_at_cap[rack, workload, cap]

    def serves_at(self, rack: str, workload: str, cap: float | None) -> bool:
        """Whether ``rack`` can serve ``workload`` at cap level ``cap`` (None: uncapped).

        Parameters
        ----------
        rack : str
            Rack type id.
        workload : str
            Workload id.
        cap : float or None
            Cap level [-].

        Returns
        -------
        bool
        """
        return (rack, workload) in self.perf if cap is None else \
            (rack, workload, cap) in self.perf_at_cap

    def peak_rack_kw(self, rack: str, cap: float | None = None) -> float:
        """Rack IT power a rack at cap level ``cap`` counts in a capped peak [kW].

        Parameters
        ----------
        rack : str
            Rack type id.
        cap : float, optional
            Cap level [-]; None: uncapped (``it_power_max_kw``).

        Returns
        -------
        float
            ``power_at_cap_kw`` at the cap, else ``it_power_max_kw`` [kW].
        """
        return self.racks[rack].it_power_max_kw if cap is None else \
            self.power_at_cap_kw[rack, cap]

    def linear_network(self, rack: str) -> bool:
        """Whether ``rack``'s network is the per-rack linear coefficient (no fabric data).

        Parameters
        ----------
        rack : str
            Rack type id.

        Returns
        -------
        bool
        """
        return rack not in self.fabrics

    def existing_count(self, rack: str, site: str, p: int) -> int:
        """Racks of the existing fleet in service in period ``p``.

        Parameters
        ----------
        rack : str
            Rack type id.
        site : str
            Site id.
        p : int
            Period index (0-based) [-].

        Returns
        -------
        int
            [racks].
        """
        return sum(e.count for e in self.existing
                   if e.rack == rack and e.site == site and p < e.retire_period)

    def buyable(self, rack: str, site: str, p: int) -> bool:
        """Whether new racks of ``rack`` can be installed at ``site`` in period ``p``.

        Parameters
        ----------
        rack : str
            Rack type id.
        site : str
            Site id.
        p : int
            Period index (0-based) [-].

        Returns
        -------
        bool
        """
        rs = self.rack_site.get((rack, site))
        return bool(rs and rs.allowed) and p >= self.racks[rack].first_period

    def serves(self, rack: str, site: str, workload: str) -> bool:
        """Whether racks of ``rack`` at ``site`` may serve ``workload``.

        Parameters
        ----------
        rack : str
            Rack type id.
        site : str
            Site id.
        workload : str
            Workload id.

        Returns
        -------
        bool
        """
        w = self.workloads[workload]
        return (rack, workload) in self.perf and (w.sites is None or site in w.sites)

    def _cdu_index(self) -> dict:
        """Per site: {CDU model: coefficients of its first rack (sorted)}, cached."""
        key = (id(self.rack_site), len(self.rack_site))
        cache = self.__dict__.get("_cdu_cache")
        if cache is None or cache[0] != key:
            index: dict[str, dict[str, RackSiteData]] = {}
            for (_r, s), rs in sorted(self.rack_site.items()):
                if rs.cdu_id:
                    index.setdefault(s, {}).setdefault(rs.cdu_id, rs)
            models = {}
            for (_r, s), rs in self.rack_site.items():
                if rs.cdu_id and rs.liquid_heat_kw_per_rack > 0:
                    models.setdefault(s, set()).add(rs.cdu_id)
            cache = (key, index, {s: sorted(m) for s, m in models.items()})
            self.__dict__["_cdu_cache"] = cache
        return cache

    def cdu_models(self, site: str) -> list[str]:
        """CDU models the MILP may hold at ``site``.

        ``cdu_choice: per_rack_type``: the models of the liquid-cooled rack types there
        (``RackSiteData.cdu_id``); ``milp``: every model of :attr:`cdu_options` at a
        site that can host a liquid-cooled rack type.

        Parameters
        ----------
        site : str
            Site id.

        Returns
        -------
        list of str
            Sorted CDU model ids.
        """
        if self.cdu_choice == "milp":
            return [c.cdu_id for c in self.cdu_options.get(site, ())] \
                if self._cdu_index()[2].get(site) else []
        return list(self._cdu_index()[2].get(site, []))

    def cdu_racks(self, site: str, cdu: str) -> list[str]:
        """Rack types at ``site`` whose liquid heat CDU model ``cdu`` may move.

        ``per_rack_type``: those whose ``cdu_id`` is ``cdu``; ``milp``: every rack type
        at the site with liquid heat (the site's one model moves it all).

        Parameters
        ----------
        site : str
            Site id.
        cdu : str
            CDU model id.

        Returns
        -------
        list of str
            Rack ids, in the order of :attr:`racks`.
        """
        out = []
        for r in self.racks:
            rs = self.rack_site.get((r, site))
            if rs is None or not rs.cdu_id:
                continue
            if self.cdu_choice == "milp":
                if rs.liquid_heat_kw_per_rack > 0:
                    out.append(r)
            elif rs.cdu_id == cdu:
                out.append(r)
        return out

    def cdu_data(self, site: str, cdu: str) -> RackSiteData | CduData:
        """Capacity, price and positions of CDU model ``cdu`` at ``site``.

        Parameters
        ----------
        site : str
            Site id.
        cdu : str
            CDU model id.

        Returns
        -------
        RackSiteData or CduData
            ``per_rack_type``: the coefficients of the first rack type (sorted by rack
            id) that uses ``cdu``; ``milp``: the option of :attr:`cdu_options`. Either
            has ``cdu_capacity_kw`` [kW], ``cdu_capex_usd`` [USD] and ``cdu_positions``
            [positions].

        Raises
        ------
        StopIteration
            When ``cdu`` is not a model of the site.
        """
        if self.cdu_choice == "milp":
            for c in self.cdu_options.get(site, ()):
                if c.cdu_id == cdu:
                    return c
            raise StopIteration
        try:
            return self._cdu_index()[1][site][cdu]
        except KeyError:
            raise StopIteration from None


# ----------------------------------------------------------------------------------------
# Building the inputs from a scenario
# ----------------------------------------------------------------------------------------


def _demand_conversion(scn: Scenario, wl: Any, w: str) -> dict[str, Any]:
    """WorkloadData fields that say how the scenario's stated demand became tokens."""
    conv = scn.demand_conversions.get(w)
    unit = conv.unit if conv else scn.demand.unit_of(w).unit
    return dict(demand_unit=unit, tokens_per_unit=conv.tokens_per_unit if conv else 1.0,
                conversion=conv.how if conv else "tokens as stated",
                input_tokens_mean=wl.input_tokens_mean, output_tokens_mean=wl.output_tokens_mean,
                cache_hit_frac=wl.cache_hit_frac, model=wl.model)


def _first_period(periods: list[Period], first_available: str) -> int:
    """Index of the first period starting on or after ``first_available``."""
    date = parse_date(first_available)
    for i, p in enumerate(periods):
        if p.start >= date:
            return i
    return len(periods)


def in_service(age_years: float, lifetime_years: float) -> bool:
    """Whether an asset ``age_years`` after its installation is still in service.

    The one lifetime rule of the planner, for new and existing racks alike: a rack
    installed at the start of year (or quarter) Y with a life of L years serves the
    periods that start in ``[Y, Y + L)``; with yearly periods that is Y .. Y+L-1, with
    quarterly periods the 4 L quarters from its installation quarter on.

    Parameters
    ----------
    age_years : float
        Start of the period minus the start of the installation period [years].
    lifetime_years : float
        [years].

    Returns
    -------
    bool
    """
    return -1e-9 < age_years < lifetime_years - 1e-9


def label_offset_years(periods: list[Period], label: Any) -> float:
    """Start of the year or quarter ``label`` counted from the start of the plan [years].

    Parameters
    ----------
    periods : list of Period
        The plan's periods (the first one is the plan's start).
    label : int or str
        Year (e.g. ``2027``) or quarter label (e.g. ``2027Q3``) [-].

    Returns
    -------
    float
        Offset of the label's start from the plan's start [years].
    """
    y, q = parse_period_label(label)
    first = periods[0]
    return (y - first.start.year) + ((q or 1) - 1) / 4 - (first.start.month - 1) / 12


def retire_period(periods: list[Period], installed: Any, lifetime_years: float) -> int:
    """Index of the first period in which racks installed in ``installed`` are retired.

    Parameters
    ----------
    periods : list of Period
    installed : int or str
        Year (installed at its start) or quarter label of the installation (a label, not a
        number of anything) [-].
    lifetime_years : float
        [years].

    Returns
    -------
    int
        Period index (0-based) [-]; ``len(periods)`` when they serve to the end of the
        horizon (see :func:`in_service`).
    """
    born = label_offset_years(periods, installed)
    return next((i for i, p in enumerate(periods)
                 if not in_service(p.offset_years - born, lifetime_years)), len(periods))


def _add_months(date: dt.date, months: float) -> dt.date:
    whole = int(math.ceil(months - 1e-9))
    y, m = divmod(date.month - 1 + whole, 12)
    return dt.date(date.year + y, m + 1, 1)


def _first_period_from(periods: list[Period], date: dt.date) -> int:
    """Index of the first period starting on or after ``date`` (``len(periods)``: none)."""
    return next((i for i, p in enumerate(periods) if p.start >= date), len(periods))


def _grid_data(scn: Scenario, site: Any, periods: list[Period]) -> GridData | None:
    """Connection decisions of a site (None: its ``grid_mw`` is simply available)."""
    gc = getattr(site, "grid_connection", None)
    if gc is None or not scn.grid_requests:
        return None
    extra = gc.assessment_months if gc.assessment_threshold_mw is not None else 0.0
    return GridData(
        committed_kw=tuple(gc.committed_mw_in(p.year) * 1000.0 for p in periods),
        arrival=tuple(_first_period_from(periods, _add_months(p.start, gc.lead_time_months))
                      for p in periods),
        arrival_assessed=tuple(_first_period_from(
            periods, _add_months(p.start, gc.lead_time_months + extra)) for p in periods),
        cost_usd_per_kw=gc.cost_usd_per_mw / 1000.0,
        threshold_kw=(gc.assessment_threshold_mw * 1000.0
                      if gc.assessment_threshold_mw is not None else None),
        lead_time_months=gc.lead_time_months, assessment_months=extra,
        flexible=_flex_data(gc.flexible, extra, periods))


def _flex_data(fx: Any, extra: float, periods: list[Period]) -> FlexData | None:
    """The flexible part of a connection (None when the site offers none).

    Parameters
    ----------
    fx : FlexibleConnection or None
        The site file's ``grid_connection.flexible``.
    extra : float
        The assessment's months (0 without a threshold) [months].
    periods : list of Period
        The plan's periods.

    Returns
    -------
    FlexData or None
    """
    if fx is None:
        return None
    return FlexData(
        arrival=tuple(_first_period_from(periods, _add_months(p.start,
                                                              fx.lead_time_months + extra))
                      for p in periods),
        cost_usd_per_kw=fx.cost_usd_per_mw / 1000.0,
        max_kw=fx.max_mw * 1000.0,
        depth=fx.curtailment_depth, hours_per_year=fx.curtailment_hours_per_year,
        event_hours=fx.event_hours_of_day(), lead_time_months=fx.lead_time_months)


def _site_data(scn: Scenario, site: Any, periods: list[Period]) -> SiteData:
    rate = 1.0 if site.currency == "USD" else scn.economics.exchange_rates_usd_per_unit[
        site.currency]
    ready = _add_months(periods[0].start, site.lead_time_months)
    first_build = _first_period_from(periods, ready)
    parts = site.build_parts_usd_per_mw
    energy = scn.paths.energy_price.get(site.id)
    charge = scn.paths.demand_charge.get(site.id)
    return SiteData(
        id=site.id, region=site.region,
        grid_kw=tuple(site.grid_mw_in(p.year) * 1000.0 for p in periods),
        rack_positions=site.rack_positions, max_rack_kw=site.max_rack_kw,
        facility_water=site.facility_water,
        energy_usd_per_kwh=site.energy_price_per_kwh * rate,
        demand_charge_usd_per_kw_month=site.demand_charge_per_kw_month * rate,
        carbon_kg_per_kwh=site.carbon_g_per_kwh / 1000.0,
        build_capex_usd_per_kw=sum(parts.values()) / 1000.0,
        built_kw_initial=scn.existing_built_mw.get(site.id, 0.0) * 1000.0,
        first_build_period=first_build if scn.lead_time else 0,
        build_parts_usd_per_kw=tuple((k, v / 1000.0) for k, v in parts.items()
                                     if k != "all_in"),
        energy_path=tuple(v * rate for v in energy.values(periods, site.energy_price_per_kwh))
        if energy else (),
        demand_charge_path=tuple(v * rate for v in charge.values(
            periods, site.demand_charge_per_kw_month)) if charge else (),
        connection=_grid_data(scn, site, periods),
        water_limit_m3_per_year=site.water_limit_m3_per_year,
        power_redundancy=site.power_redundancy,
    )


def _compatibility(rack: Any, site: Any) -> str:
    """Why ``site`` cannot host ``rack`` ('' if it can)."""
    if rack.it_power_max_kw > site.max_rack_kw:
        return (f"rack needs {rack.it_power_max_kw:g} kW, site hosts at most "
                f"{site.max_rack_kw:g} kW per rack")
    if rack.cooling is CoolingType.direct_liquid and not site.facility_water:
        return "rack is liquid-cooled and the site has no facility water"
    return ""


def _perf_at_caps(case: Any, cap_levels: dict[str, tuple[float, ...]], wl_ids: list[str],
                  perf: dict[tuple[str, str], PerfData], latest: Any
                  ) -> tuple[dict[tuple[str, str, float], PerfData],
                             dict[tuple[str, float], float]]:
    """Operating points and rack power at each offered cap, from the performance model.

    Each (rack, workload, cap) is :func:`dcplan.perf.rack_performance` at that
    ``power_cap_frac`` with the accelerator's power curve (``power_curves.yaml``); the
    per-period software levels are the uncapped point's (``perf``). A level at which the
    rack misses the workload's SLO gets no entry.

    Parameters
    ----------
    case : Case
        Catalog, performance defaults.
    cap_levels : dict
        Rack id -> cap levels [-].
    wl_ids : list of str
        Workload ids.
    perf : dict
        (rack, workload) -> uncapped :class:`PerfData` (pairs that fit).
    latest : Calibration or None
        The calibration of the latest fitted run.

    Returns
    -------
    perf_at_cap : dict
        (rack, workload, cap) -> :class:`PerfData`.
    power_at_cap : dict
        (rack, cap) -> rack IT power at the cap [kW].

    Raises
    ------
    InputError
        Naming the scenario's ``power_caps`` entry of a rack type whose accelerator has
        no power curve, or a cap below the lowest its curve covers.
    """
    if not cap_levels:
        return {}, {}
    from dcplan import perf as perf_model
    from dcplan.perf.params import (
        POWER_CURVES_FILE,
        load_power_curves,
        perf_folder,
        power_curve_of,
    )
    from dcplan.perf.power import rack_power_at_cap_kw

    catalog, scn = case.catalog, case.scenario
    curves = load_power_curves(perf_folder(catalog) / POWER_CURVES_FILE)
    out: dict[tuple[str, str, float], PerfData] = {}
    power: dict[tuple[str, float], float] = {}
    path = "power_caps" if isinstance(scn.power_caps, list) else None
    problems = []
    for r, caps in cap_levels.items():
        rack = catalog.get("racks", r)
        if min(caps) < 1.0:
            try:
                low = power_curve_of(curves, rack.accelerator).min_cap_frac
            except InputError as exc:
                problems.append(scn.problem(path or f"power_caps.{r}", f"rack '{r}': {exc}",
                                            field="power_caps"))
                continue
            if min(caps) < low - 1e-12:
                problems.append(scn.problem(
                    path or f"power_caps.{r}",
                    f"rack '{r}': a cap of {min(caps):g} is below the lowest cap the power "
                    f"curve of {rack.accelerator} covers ({low:g}, "
                    "catalogs/power_curves.yaml); offer caps of at least that",
                    field="power_caps"))
    if problems:
        raise InputError(problems)
    for r, caps in cap_levels.items():
        rack = catalog.get("racks", r)
        acc = catalog.get("accelerators", rack.accelerator)
        curve = None
        for c in caps:
            power[r, c] = rack_power_at_cap_kw(rack, acc, c)
        for w in wl_ids:
            if (r, w) not in perf:
                continue
            model = catalog.get("workloads", w).model
            for c in caps:
                if c < 1.0 and curve is None:
                    curve = power_curve_of(curves, rack.accelerator)
                rp = perf_model.rack_performance(
                    catalog, r, model, w, defaults=case.model_defaults, calibration=latest,
                    power_cap_frac=c, power_curve=curve)
                if not rp.fits or rp.goodput_tokens_per_s <= 0:
                    continue
                out[r, w, c] = PerfData(
                    goodput_tokens_per_s=rp.goodput_tokens_per_s, power_kw=rp.power_kw,
                    prefill_tokens_per_s=rp.prefill_tokens_per_s,
                    decode_tokens_per_s=rp.decode_tokens_per_s,
                    output_tokens_per_s=rp.output_tokens_per_s,
                    power_p99_kw=rp.power_p99_kw, level=perf[r, w].level,
                    extrapolation=rp.extrapolation)
    return out, power


def _levels(catalog: Any, rack: str, model: str, workload: str, rp: Any,
            levels: list, latest: Any, defaults: Any
            ) -> tuple[tuple[float, float, float], ...]:
    """Per period, ``rack``'s rates at the period's software level over ``rp``'s (1s: ())."""
    from dcplan import perf as perf_model

    key = latest.key if latest is not None else None
    out = []
    for cal in levels:
        if (cal.key if cal is not None else None) == key:
            out.append((1.0, 1.0, 1.0))
            continue
        q = perf_model.rack_performance(catalog, rack, model, workload, defaults=defaults,
                                        calibration=cal)
        ok = q.fits and q.goodput_tokens_per_s > 0
        out.append(tuple(
            (float(b) / float(a) if (ok and a > 0) else 0.0) for a, b in (
                (rp.goodput_tokens_per_s, q.goodput_tokens_per_s),
                (rp.prefill_tokens_per_s, q.prefill_tokens_per_s),
                (rp.decode_tokens_per_s, q.decode_tokens_per_s))))
    return () if all(x == (1.0, 1.0, 1.0) for x in out) else tuple(out)


def _after_fitted(values: tuple[float, ...], last_fitted: int | None) -> tuple[float, ...]:
    """A speedup path counted from the last period at the fitted software level.

    Periods up to ``last_fitted`` are at their fitted level (1); later ones get the
    path's value over its value in that period (from the first period when None).
    """
    if last_fitted is None:
        return tuple(values)
    b = values[last_fitted]
    return tuple(1.0 if i <= last_fitted else v / b for i, v in enumerate(values))


def _software_note(catalog: Any, rack_ids: list[str], periods: list, levels: list,
                   last_fitted: int | None, path: bool) -> str:
    """One note: the serving software each period's figures assume."""
    from dcplan.perf.software import describe

    vendors = sorted({catalog.get("accelerators", catalog.get("racks", r).accelerator).vendor
                      for r in rack_ids})
    runs = []
    for p, cal in zip(periods, levels, strict=True):
        infos = [describe(cal, v) for v in vendors]
        engines = ", ".join(f"{i['engine']} ({v})" for v, i in zip(vendors, infos, strict=True)
                            if i["engine"])
        d = infos[0]
        what = (f"as of {d['date']} ({d['basis']})" if d["date"] else d["text"])
        text = f"{engines} {what}".strip() if engines else what
        held = sorted({f"{k} at its {t} level" for i in infos for k, t in i["held_knobs"].items()})
        if held:
            text += " with " + ", ".join(held)
        if runs and runs[-1][1] == text:
            runs[-1][0].append(p.label)
        else:
            runs.append(([p.label], text))
    parts = [f"{ls[0]}{'..' + ls[-1] if len(ls) > 1 else ''}: {t}" for ls, t in runs]
    tail = ("; after the latest fitted run, tokens/s follow paths.software_speedup"
            if path else "; no paths.software_speedup: no software gain after the latest "
                         "fitted run")
    if last_fitted is None and path:
        tail += " from the first period"
    return "software by period (rack tokens/s; power at the latest fitted level): " + \
        "; ".join(parts) + tail


def _planning_scale(scn: Scenario, perf: dict, rack_id: str, site: Any, rack: Any,
                    demand_peak: float) -> int:
    rates = [p.goodput_tokens_per_s for (r, _), p in perf.items() if r == rack_id]
    best = max(rates, default=0.0)
    need = math.ceil(demand_peak / best) if best > 0 else 1
    cap = max(1, site.rack_positions // rack.rack_positions)
    return int(min(max(need, 1), cap))


def input_tables(case: Any, progress: Any = None) -> tuple[PlanInputs, dict]:
    """Every coefficient table of the MILP from a resolved case, at the planning scale.

    The first step of :func:`dcplan.planner.prepare.prepare_inputs`, which then fits a
    linear network to the plan's fleet (:mod:`dcplan.planner.network_scale`) and drops
    dominated rack types (:mod:`dcplan.planner.reductions`).

    Parameters
    ----------
    case : Case
        The scenario with the catalogs and sites (overrides applied) and the
        performance-model calibration (see :func:`dcplan.case.load_case`).
    progress : callable, optional
        Called with one-line progress messages.

    Returns
    -------
    PlanInputs
    dict
        (rack, site) -> racks the facility figures are taken at (the planning scale)
        [racks], where :func:`~dcplan.planner.network_scale.fit_network_scale` starts.

    Raises
    ------
    InputError
        When a workload cannot be served by any allowed rack.
    """
    from dcplan import perf as perf_model
    from dcplan.perf.software import as_of, period_levels

    say = progress or (lambda _msg: None)
    scn, catalog, sites, calibration = (case.scenario, case.catalog, case.sites,
                                        case.perf_calibration)
    periods = scn.period_list()
    rack_ids = scn.racks or list(catalog.entries["racks"])
    wl_ids = scn.workload_ids()
    notes: list[str] = []

    racks = {}
    for r in rack_ids:
        e = catalog.get("racks", r)
        path = scn.paths.rack_capex.get(r)
        racks[r] = RackData(
            id=r, capex_usd=e.capex_usd, maintenance_frac_per_year=e.maintenance_frac_per_year,
            lifetime_years=e.lifetime_years, rack_positions=e.rack_positions,
            it_power_max_kw=e.it_power_max_kw, it_power_idle_kw=e.it_power_idle_kw,
            liquid=e.cooling is CoolingType.direct_liquid,
            first_period=_first_period(periods, e.first_available),
            availability=scn.serving.availability_of(r),
            capex_path=path.values(periods, e.capex_usd) if path else ())
    all_in = [s_ for s_ in scn.sites if "all_in" in sites[s_].build_parts_usd_per_mw]
    if all_in:
        notes.append("build_capex_usd_per_mw of " + ", ".join(all_in) + " is an all-in figure "
                     "that includes mechanical plant, which the facility model prices again "
                     "(heat rejection, CDUs); give build_shell_usd_per_mw, "
                     "build_electrical_usd_per_mw and build_mechanical_usd_per_mw instead")

    say(f"performance: {len(rack_ids)} rack types x {len(wl_ids)} workloads")
    # software: the fitted level as of each period's first day up to the latest fitted
    # run, then that level times paths.software_speedup (docs/perf.md)
    levels, last_fitted = period_levels(calibration, [p.start.isoformat() for p in periods])
    latest = as_of(calibration, before="hold")
    perf: dict[tuple[str, str], PerfData] = {}
    for r in rack_ids:
        for w in wl_ids:
            wl = catalog.get("workloads", w)
            rp = perf_model.rack_performance(catalog, r, wl.model, w,
                                             defaults=case.model_defaults, calibration=latest)
            if not rp.fits or rp.goodput_tokens_per_s <= 0:
                notes.append(f"{r} cannot serve {w}: {rp.reason or 'no goodput'}")
                continue
            perf[(r, w)] = PerfData(
                goodput_tokens_per_s=rp.goodput_tokens_per_s, power_kw=rp.power_kw,
                prefill_tokens_per_s=rp.prefill_tokens_per_s,
                decode_tokens_per_s=rp.decode_tokens_per_s,
                output_tokens_per_s=rp.output_tokens_per_s,
                power_p99_kw=rp.power_p99_kw, extrapolation=rp.extrapolation,
                level=_levels(catalog, r, wl.model, w, rp, levels, latest,
                              case.model_defaults))
    outside = [f"{r} / {w}" for (r, w), pf in perf.items() if pf.extrapolation]
    if outside:
        notes.append(
            "goodput of " + ", ".join(outside) + " is an extrapolation of the performance "
            "model (a kind of model, dense or MoE, that no fitted row ran on the "
            "accelerator's architecture, rack-scale expert parallelism, wide "
            "expert-parallel decode below the fitted batches, or a KV hand-over outside "
            "the fitted runs: "
            "the estimate note on each goodput coefficient in the workbook's Assumptions "
            "sheet says which; docs/perf.md, Assumptions and known weaknesses)")
    cap_levels = {r: scn.caps_of(r) for r in rack_ids if scn.caps_of(r)}
    if scn.peak_power == "capped" and not cap_levels:
        notes.append("peak_power: capped without power_caps: every rack counts at its "
                     "it_power_max_kw, as with peak_power: nameplate")
    perf_at_cap, power_at_cap = _perf_at_caps(case, cap_levels, wl_ids, perf, latest)
    notes.append(_software_note(catalog, rack_ids, periods, levels, last_fitted,
                                scn.paths.software_speedup is not None))
    cap = scn.serving.max_batch_per_rank
    if cap is not None:
        notes.append(f"serving.max_batch_per_rank {cap:,}: every instance runs at most "
                     f"{cap:,} requests per attention-DP rank (the engine's cap), not "
                     f"perf_defaults.yaml's {case.perf_defaults.serving.max_batch_per_rank:,}")
    steep = calibration.steep_stop() if calibration is not None else None
    if steep:
        notes.append(steep)

    demand = scn.demand_tokens_per_s()
    allowed_sites: dict[str, set[str]] = {}
    for rule in scn.rules:
        chosen = set(rule.sites or [s for s in scn.sites if sites[s].region in rule.regions])
        allowed_sites[rule.workload] = allowed_sites.get(rule.workload, set(scn.sites)) & chosen
    day_names, day_weights, shapes = _profiles(scn, catalog, wl_ids)
    workloads = {}
    for w in wl_ids:
        wl = catalog.get("workloads", w)
        spec = scn.demand.profile_of(w)
        shape = shapes.get(w)
        speed = scn.paths.speedup_of(w)
        speed_values = _after_fitted(speed.values(periods, 1.0), last_fitted) if speed else ()
        workloads[w] = WorkloadData(
            id=w, disaggregated=wl.mode.value == "disaggregated",
            input_frac=wl.input_tokens_mean / (wl.input_tokens_mean + wl.output_tokens_mean),
            peak_factor=max(shape) if shape else scn.peak_factor(w),
            demand_tokens_per_s=tuple(demand[(w, p.label)] for p in periods),
            sites=frozenset(allowed_sites[w]) if w in allowed_sites else None,
            target_utilisation=scn.serving.utilisation(w),
            speedup=speed_values,
            profile=shape, flexible=bool(spec and spec.flexible),
            deadline_hours=spec.deadline_hours if spec else DEFAULT_DEADLINE_HOURS,
            **_demand_conversion(scn, wl, w))
    peak_total = max((sum(wd.peak_tokens_per_s(i) for wd in workloads.values())
                      for i in range(len(periods))), default=0.0)

    for s_ in scn.sites:
        gc = getattr(sites[s_], "grid_connection", None)
        if gc is not None and scn.grid_requests and _add_months(
                periods[0].start, gc.lead_time_months) > periods[-1].start:
            notes.append(f"{s_}: a grid request takes {gc.lead_time_months:g} months, so none "
                         f"can be energised within {periods[0].label}..{periods[-1].label}; "
                         "the site has only its committed capacity")
    say(f"facility: {len(rack_ids)} rack types x {len(scn.sites)} sites")
    _check_fabrics(case, rack_ids)
    site_data, rack_site, fac_objs = {}, {}, {}
    scale: dict[str, int] = {}
    scale_of: dict[tuple[str, str], int] = {}
    most: dict[str, int] = {}
    for s in scn.sites:
        site = sites[s]
        site_data[s] = _site_data(scn, site, periods)
        for r in rack_ids:
            e = catalog.get("racks", r)
            why = _compatibility(e, site)
            if why:
                rack_site[(r, s)] = RackSiteData(allowed=False, reason=why)
                notes.append(f"{s} cannot host {r}: {why}")
                continue
            n = _planning_scale(scn, perf, r, site, e, peak_total)
            try:
                memo = FACILITY_MEMO.get()
                rack_site[(r, s)], fac_objs[r, s] = (
                    rack_site_data(case, site, r, n) if memo is None
                    else memo(case, site, r, n, rack_site_data))
            except InputError as exc:
                rack_site[(r, s)] = RackSiteData(allowed=False, reason=str(exc))
                notes.append(f"{s} cannot host {r}: {exc}")
                continue
            scale[r] = max(scale.get(r, 0), n)
            scale_of[r, s] = n
            most[r] = max(most.get(r, 0), site.rack_positions // e.rack_positions)
    fabrics = rack_fabrics(case, scale, most) if scn.network_model == "integer" else {}

    existing = []
    for ex in scn.existing_fleet:
        life = racks[ex.rack].lifetime_years if ex.rack in racks else \
            catalog.get("racks", ex.rack).lifetime_years
        existing.append(ExistingData(ex.rack, ex.site, ex.count,
                                     retire_period(periods, ex.installed, life)))

    budget = {}
    for key, value in scn.budget_usd.items():
        y, q = parse_period_label(key)
        for i, p in enumerate(periods):
            if (q and p.label == f"{y}q{q}") or (not q and p.year == y):
                budget[i] = budget.get(i, 0.0) + (value * p.years if q is None
                                                  and p.years < 1 else value)
    cap = {}
    for key, value in scn.economics.carbon_cap_t.items():
        y, q = parse_period_label(key)
        for i, p in enumerate(periods):
            if (q and p.label == f"{y}q{q}") or (not q and p.year == y):
                cap[i] = cap.get(i, 0.0) + (value * p.years if q is None and p.years < 1
                                            else value) * 1000.0
    spares = {(r, s_): scn.serving.spares(s_, r) for r in rack_ids for s_ in scn.sites
              if scn.serving.spares(s_, r) > 0}
    econ = scn.economics
    inputs = PlanInputs(
        periods=periods, racks=racks, sites=site_data, rack_site=rack_site, perf=perf,
        workloads=workloads, existing=existing,
        budget_usd=tuple(budget.get(i) for i in range(len(periods))),
        discount_rate=econ.discount_rate, terminal_value=econ.terminal_value == "straight_line",
        building_lifetime_years=econ.building_lifetime_years,
        cdu_lifetime_years=econ.cdu_lifetime_years,
        unserved_usd_per_token=econ.unserved_penalty_usd_per_million_tokens / 1e6,
        unserved_policy=scn.unserved_policy,
        cdu_redundancy=(default_cdu_redundancy() if scn.cdu_redundancy is None
                        else scn.cdu_redundancy), name=scn.name, notes=notes, facility=fac_objs,
        cdu_choice=scn.cdu_choice,
        cdu_options=cdu_options(catalog, rack_site) if scn.cdu_choice == "milp" else {},
        nameplate_peak=scn.peak_power in ("nameplate", "capped"), spare_racks=spares,
        capped_peak=scn.peak_power == "capped", cap_levels=cap_levels,
        perf_at_cap=perf_at_cap, power_at_cap_kw=power_at_cap,
        power_oversub=_power_oversub(scn, racks, perf, cap_levels, power_at_cap, rack_site),
        carbon_usd_per_kg=tuple(c / 1000.0 for c in econ.carbon_prices(periods))
        if econ.carbon_price_usd_per_t is not None else (),
        carbon_cap_kg=tuple(cap.get(i) for i in range(len(periods))) if cap else (),
        day_names=day_names, day_weights=day_weights, fabrics=fabrics,
        network_rack_units=int(network_rack_units()),
        operations=operations_inputs(case, rack_ids) if econ.operations_costs else None,
        api_offers=api_offers(catalog, wl_ids), **_supply_offers(scn, catalog, periods))
    check_servable(inputs, scn)
    return inputs, scale_of


def cdu_options(catalog: Any, rack_site: dict[tuple[str, str], RackSiteData]
                ) -> dict[str, tuple[CduData, ...]]:
    """The CDU models the MILP may choose at each site (``cdu_choice: milp``).

    The models :func:`dcplan.facility.cooling.choose_cdu` chooses among: every in-row
    and facility CDU of the catalog (in-rack units serve one rack, not a site), at every
    site where some rack type with liquid heat is allowed. As there, the facility-water
    supply is lowered to what a model's approach allows, so no model is ruled out by
    the racks' coolant limit.

    Parameters
    ----------
    catalog : Catalog
        The loaded catalogs (``cdus``).
    rack_site : dict
        (rack, site) -> :class:`RackSiteData` (``liquid_heat_kw_per_rack`` [kW]).

    Returns
    -------
    dict
        Site id -> :class:`CduData` options sorted by id [kW, USD, positions, kW].
    """
    from dcplan.schema import CduPlacement

    models = tuple(
        CduData(c.id, float(c.capacity_kw), float(c.capex_usd), float(c.positions),
                float(c.pump_power_kw))
        for c in sorted(catalog.entries.get("cdus", {}).values(), key=lambda c: c.id)
        if c.placement is not CduPlacement.in_rack)
    sites = sorted({s for (_r, s), rs in rack_site.items()
                    if rs.allowed and rs.liquid_heat_kw_per_rack > 0})
    return {s: models for s in sites} if models else {}


def _power_oversub(scn: Scenario, racks: dict[str, RackData],
                   perf: dict[tuple[str, str], PerfData],
                   cap_levels: dict[str, tuple[float, ...]],
                   power_at_cap: dict[tuple[str, float], float],
                   rack_site: dict[tuple[str, str], RackSiteData]) -> dict[str, float]:
    """Sites' power oversubscription factors below 1, checked against the cap's power.

    A site provisioning ``factor x`` a rack's power at the basis must still hold the
    rack at the lowest power capping can bring it to: ``power_at_cap_kw`` at its lowest
    offered cap, or its idle power without caps. Below that capping cannot protect the
    site, and the factor is refused.

    Parameters
    ----------
    scn : Scenario
        The scenario (``power_oversubscription``, ``peak_power``).
    racks : dict
        Rack id -> :class:`RackData` of the plan's rack types.
    perf : dict
        (rack, workload) -> :class:`PerfData` at the uncapped operating point.
    cap_levels : dict
        Rack id -> cap levels offered, highest first [-].
    power_at_cap : dict
        (rack, cap) -> rack IT power at that cap [kW].
    rack_site : dict
        (rack, site) -> :class:`RackSiteData` (rack types a site cannot host are not
        checked there).

    Returns
    -------
    dict
        Site id -> factor [-], only sites with a factor below 1.

    Raises
    ------
    InputError
        Naming the scenario's line and field for each site whose factor is below the
        share of the basis power its racks draw at their lowest cap (or at idle).
    """
    po = scn.power_oversubscription
    if po is None:
        return {}
    out = {s: po.factor_of(s) for s in scn.sites if po.factor_of(s) < 1.0}
    problems = []
    for s, f in out.items():
        worst = None  # (share needed, rack, floor kW, basis kW, what the floor is)
        for r, rk in racks.items():
            if not getattr(rack_site.get((r, s)), "allowed", False):
                continue
            if r in cap_levels:
                low = min(cap_levels[r])
                floor, what = power_at_cap[r, low], f"at its lowest offered cap ({low:g})"
            else:
                floor, what = rk.it_power_idle_kw, "at idle (no power_caps offered)"
            if scn.peak_power == "capped" and r in cap_levels:
                basis = power_at_cap[r, max(cap_levels[r])]
            elif scn.peak_power in ("nameplate", "capped"):
                basis = rk.it_power_max_kw
            else:
                basis = max((pf.power_kw for (r2, _w), pf in perf.items() if r2 == r),
                            default=0.0)
            if basis <= 0:
                continue
            need = floor / basis
            if f < need - 1e-9 and (worst is None or need > worst[0]):
                worst = (need, r, floor, basis, what)
        if worst is None:
            continue
        need, r, floor, basis, what = worst
        path = f"power_oversubscription.sites.{s}" if s in po.sites else \
            "power_oversubscription.factor"
        hint = "offer lower power_caps or " if r in cap_levels else "offer power_caps or "
        problems.append(scn.problem(
            path, f"site '{s}': a factor of {f:g} provisions {f * basis:,.1f} kW for a rack "
            f"of '{r}' ({basis:,.1f} kW at peak_power: {scn.peak_power}), below the "
            f"{floor:,.1f} kW it draws {what}: capping could not bring the site under its "
            f"provision; {hint}use a factor of at least {math.ceil(need * 1000) / 1000:g}",
            field=path))
    if problems:
        raise InputError(problems)
    return out


def _supply_offers(scn: Scenario, catalog: Any, periods: list[Period]) -> dict:
    """Storage and on-site generation offered at each site (``storage``, ``onsite``).

    Parameters
    ----------
    scn : Scenario
    catalog : Catalog
    periods : list of Period

    Returns
    -------
    dict
        ``storage``: site -> tuple of :class:`StorageData`; ``onsite``: site -> tuple of
        :class:`OnsiteData` (sites with nothing offered are absent).
    """
    storage, onsite = {}, {}
    for s in scn.sites:
        bats = []
        for b in scn.supply_at("storage", s):
            e = catalog.get("storage", b)
            bats.append(StorageData(
                id=b, capex_usd_per_kwh=e.capex_usd_per_kwh, capex_usd_per_kw=e.capex_usd_per_kw,
                efficiency=e.round_trip_efficiency_frac,
                depth_of_discharge=e.depth_of_discharge_frac, life_years=e.calendar_life_years,
                degradation_per_year=e.degradation_frac_per_year,
                fixed_om_usd_per_kw_year=e.fixed_om_usd_per_kw_year))
        gens = []
        for g in scn.supply_at("onsite_generation", s):
            e = catalog.get("onsite_generation", g)
            ready = _add_months(periods[0].start, e.permitting_lead_time_months)
            gens.append(OnsiteData(
                id=g, capex_usd_per_kw=e.capex_usd_per_kw,
                fuel_usd_per_kwh=tuple(e.fuel_usd_per_kwh(p.offset_years) for p in periods),
                carbon_kg_per_kwh=e.emissions_kg_per_mwh / 1000.0,
                availability=e.availability_frac,
                first_period=_first_period_from(periods, ready) if scn.lead_time else 0,
                life_years=e.lifetime_years,
                variable_om_usd_per_kwh=e.variable_om_usd_per_mwh / 1000.0,
                fixed_om_usd_per_kw_year=e.fixed_om_usd_per_kw_year,
                min_stable_load=e.min_stable_load_frac))
        if bats:
            storage[s] = tuple(bats)
        if gens:
            onsite[s] = tuple(gens)
    return {"storage": storage, "onsite": onsite}


def _check_fabrics(case: Any, rack_ids: list[str]) -> None:
    """Raise with every rack type whose fabric no catalog switch can join.

    The switch and port speeds do not depend on the site, so a rack entry that no
    switch carries (a ``frontend_port_gbps`` no Ethernet switch takes, a NIC no switch
    fits) is an input error naming that entry, not a rack that no site can host.

    Raises
    ------
    InputError
        With one problem per such rack type.
    """
    from dcplan.facility.network import fabric_setups

    problems = []
    for r in rack_ids:
        try:
            fabric_setups(case.catalog, r, case.scenario.oversubscription)
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems)


def _profiles(scn: Scenario, catalog: Any, wl_ids: list[str]
              ) -> tuple[tuple[str, ...], tuple[float, ...], dict[str, tuple[float, ...]]]:
    """Day names, day weights and each profiled workload's hourly shape (mean 1).

    Profiles of one day are repeated on every representative day of the others; two
    profiles with different representative days are an input error.
    """
    from dcplan.schema import DemandProfile, normalised_shape

    raw: dict[str, tuple[tuple[str, ...], tuple[float, ...], tuple[float, ...]]] = {}
    for w in wl_ids:
        spec = scn.demand.profile_of(w)
        if spec is None:
            continue
        if spec.profile is not None:
            entry: DemandProfile = catalog.get("profiles", spec.profile)
            hours, days = entry.hours, entry.days
        else:
            hours, days = spec.hours, spec.days
        values, weights = normalised_shape(hours, days)
        names = tuple(d.name for d in days) if days else ("day",)
        raw[w] = (names, weights, values)
    multi = {(n, wt) for n, wt, _ in raw.values() if len(n) > 1}
    if len(multi) > 1:
        ws = [w for w, (n, _, _) in raw.items() if len(n) > 1]
        raise InputError([scn.problem(f"demand.profiles.{ws[-1]}",
                                      "profiles with different representative days (names "
                                      "and weights) cannot be combined; give every profile "
                                      "the same days, or one day each", entry=ws[-1])])
    names, weights = next(iter(multi)) if multi else (("day",), (1.0,))
    shapes = {}
    for w, (n, _, values) in raw.items():
        shapes[w] = values if len(n) == len(names) else tuple(values) * len(names)
    return names, weights, shapes


def rack_site_data(case: Any, site: Any, rack_id: str, n_racks: int
                   ) -> tuple[RackSiteData, Any]:
    """Linear facility coefficients of ``rack_id`` at ``site`` taken at ``n_racks`` racks.

    Parameters
    ----------
    case : Case
        For the catalog and the scenario's optics and oversubscription.
    site : Site
    rack_id : str
    n_racks : int
        Scale the network and cooling are sized at [racks].

    Returns
    -------
    RackSiteData, FacilityCoefficients

    Raises
    ------
    InputError
        When the facility model cannot size it.
    """
    from dcplan import facility

    catalog, scn = case.catalog, case.scenario
    fc = facility.coefficients(catalog, site, rack_id, n_racks, optics=scn.optics,
                               oversubscription=scn.oversubscription,
                               cdu_redundancy=scn.cdu_redundancy)
    cdu_pos = 0.0
    if fc.cdu_id and fc.cdu_id in catalog.entries.get("cdus", {}):
        cdu_pos = catalog.get("cdus", fc.cdu_id).positions
    extra, recharge = _redundancy(catalog, site, rack_id, fc)
    return RackSiteData(
        redundancy_capex_usd_per_kw=extra, recharge_kw_per_it_kw=recharge,
        water_l_per_it_kwh=fc.water_l_per_it_kwh,
        network_kw_per_rack=fc.network_kw_per_rack,
        network_capex_usd_per_rack=fc.network_capex_usd_per_rack,
        network_positions_per_rack=fc.network_positions_per_rack,
        cooling_kw_per_it_kw_avg=fc.cooling_kw_per_it_kw_avg,
        cooling_kw_per_it_kw_peak=fc.cooling_kw_per_it_kw_peak,
        loss_frac=fc.loss_frac, liquid_heat_kw_per_rack=fc.liquid_heat_kw_per_rack,
        cdu_id=fc.cdu_id, cdu_capacity_kw=fc.cdu_capacity_kw,
        cdu_capex_usd=fc.cdu_capex_usd, cdu_positions=cdu_pos,
        cooling_capex_usd_per_kw=fc.cooling_capex_usd_per_kw,
        pue_annual=fc.pue_annual), fc


def _redundancy(catalog: Any, site: Any, rack_id: str, fc: Any) -> tuple[float, float]:
    """(UPS and generator capex beyond N+1 [USD per IT kW], recharge [kW per IT kW]).

    Both at the planning scale of ``fc`` (:func:`dcplan.facility.power.redundancy_sizing`
    for the site's topology and for N+1, whose plant the electrical build cost covers).
    """
    from dcplan.facility.power import redundancy_sizing

    rk = catalog.get("racks", rack_id)
    it = rk.it_power_max_kw * fc.n_racks
    if it <= 0:
        return 0.0, 0.0
    net = fc.network_kw_per_rack * fc.n_racks
    cool = fc.cooling_kw_per_it_kw_peak * it
    red = redundancy_sizing(catalog, site, it, net, cool)
    base = redundancy_sizing(catalog, site, it, net, cool, topology="N+1",
                             generator_topology="N+1")
    return max(0.0, red.capex_usd - base.capex_usd) / it, red.recharge_kw / it


def network_rack_units() -> int:
    """Switch rack units one network rack holds [U] (facility assumption).

    Returns
    -------
    int
        [U] (``layout.network_rack_units`` of the facility assumptions).
    """
    from dcplan.facility.assumptions import value

    return int(value("layout", "network_rack_units"))


def rack_fabrics(case: Any, scale: dict[str, int], cap: dict[str, int]) -> dict[str, tuple]:
    """Fabrics of the rack types some site can host (see :mod:`dcplan.planner.fabric`).

    Parameters
    ----------
    case : Case
    scale : dict
        Rack id -> planning scale (where per-link prices are taken) [racks].
    cap : dict
        Rack id -> most racks of the type at one site [racks].

    Returns
    -------
    dict
        Rack id -> its tuple of :class:`~dcplan.planner.fabric.FabricData`.
    """
    from dcplan.planner.fabric import fabric_data

    scn = case.scenario
    return {r: fabric_data(case.catalog, r, scale[r], cap[r], optics=scn.optics,
                           oversubscription=scn.oversubscription) for r in scale}


def check_servable(inputs: PlanInputs, scenario: Any = None) -> None:
    """Raise :class:`InputError` for a workload with demand that no allowed rack can serve.

    With ``scenario``, each problem names its file and the line of its ``racks`` list.

    Parameters
    ----------
    inputs : PlanInputs
        The plan's coefficient tables.
    scenario : Scenario, optional
        Where the problems point (file and line); None: the plan's name.

    Raises
    ------
    InputError
        One problem per workload with demand and no allowed (rack, site) pair.
    """
    from dcplan.errors import Problem

    file, line = (scenario.where("racks") if scenario is not None else (inputs.name, None))
    probs = []
    for w, wd in inputs.workloads.items():
        if not any(wd.demand_tokens_per_s):
            continue
        ok = any(inputs.serves(r, s, w) and inputs.rack_site.get((r, s), RackSiteData()).allowed
                 for r in inputs.racks for s in inputs.sites)
        if not ok:
            why = [n for n in inputs.notes if f" {w}:" in n or "cannot host" in n]
            probs.append(Problem(file, f"workload '{w}' has demand but no allowed rack "
                                       "and site can serve it "
                                       f"({'; '.join(why) or 'check rules'}); add a rack type "
                                       "one of the sites can host to 'racks', a site that can "
                                       "host one to 'sites', or relax 'rules'",
                                 entry=w, field="racks", line=line))
    if probs:
        raise InputError(probs)



def build_schedules(d: PlanInputs) -> dict:
    """Schedules of every workload and period, and the representative hours of each period.

    See :mod:`dcplan.planner.profiles`. Flexible workloads get their candidates per
    period, against the hourly demand of the other workloads of that period.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.

    Returns
    -------
    dict
        ``schedules``: (workload, period index) -> tuple of Schedule; ``hours``: per
        period, the representative hours (see :meth:`PlanInputs.rep_hours`).
    """
    import numpy as np

    from dcplan.planner import profiles as pr

    n = len(d.periods)
    out: dict = {}
    fixed: dict[str, Any] = {}
    for w, wd in d.workloads.items():
        fixed[w] = (pr.peak_schedule(wd.peak_factor) if wd.profile is None
                    else pr.profile_schedule(wd.profile))
    length = next((len(wd.profile) for wd in d.workloads.values() if wd.profile), 0)

    def racks_per_token(w: str) -> float:
        """Racks per token/s of ``w`` on its fastest rack type (0 if none serves it)."""
        best = max((pf.goodput_tokens_per_s for (r, w2), pf in d.perf.items() if w2 == w),
                   default=0.0)
        return 1.0 / best if best > 0 else 0.0

    hours = []
    for p in range(n):
        used = []
        # the other workloads' demand in rack units (what valley filling levels)
        others = np.zeros(length) if length else None
        for w, wd in d.workloads.items():
            if wd.flexible and wd.profile is not None:
                continue
            if others is not None:
                vals = np.asarray(fixed[w].values) if fixed[w].values is not None \
                    else np.ones(length)
                others = others + wd.demand_tokens_per_s[p] * racks_per_token(w) * vals
        weights = []
        for w, wd in d.workloads.items():
            if wd.flexible and wd.profile is not None:
                sch = pr.flexible_schedules(wd.profile, d.day_weights, wd.deadline_hours,
                                            others, wd.demand_tokens_per_s[p]
                                            * racks_per_token(w))
            else:
                sch = (fixed[w],)
            out[w, p] = sch
            if wd.demand_tokens_per_s[p] > 0:
                used += list(sch)
                weights += [wd.demand_tokens_per_s[p] * racks_per_token(w) * s.peak_factor
                            for s in sch]
        groups = pr.hour_groups(used, d.max_hours, weights)
        hours.append(tuple(g[0] if isinstance(g, tuple) and len(g) == 1 else g for g in groups))
    return {"schedules": out, "hours": tuple(hours)}
