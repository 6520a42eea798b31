"""Build or buy: the API cost of a token mix, self-hosting opex, and the break-even.

Three pure pieces that plan results, the workbook and comparisons can share:

- :func:`api_cost`: what buying a workload mix from one API price row
  (``api_prices.yaml``) costs, with each workload's prompt-cache hits at the cache-read
  price, cache writes at the cache-write price where the provider charges one, the rest
  of the input at the input price and the output at the output price;
- :func:`operations_opex`: what a self-hosting team pays beyond energy and the racks'
  maintenance contracts: operations staff (``staffing.yaml`` ratios, ``salaries.yaml``
  by the site's country) and software licensed per accelerator (``software.yaml``);
- :func:`break_even`: the demand, and the utilisation of a given capacity, above which
  building is cheaper than the API, from fixed and per-token cost components.

Units: tokens, USD, years; prices in USD per million tokens where a name says
``_per_mtok``. Token counts say whether they are input, output or both.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import pandas as pd

from dcplan.errors import InputError, Problem, display_path
from dcplan.schema import ApiPrice, StaffBasis, Workload

#: Tokens per million tokens (prices are per million).
MTOK = 1e6


@dataclass(frozen=True)
class TokenMix:
    """Tokens one workload buys over some period.

    Attributes
    ----------
    workload : str
        Workload id (a label).
    input_tokens : float
        Prompt tokens, cached and uncached [tokens].
    output_tokens : float
        Generated tokens, reasoning included [tokens].
    cache_hit_frac : float
        Share of the input tokens read from the provider's prompt cache [0..1].
    cache_write_frac : float
        Share of the input tokens written to the prompt cache [0..1]; billed at the
        cache-write price where the provider has one, else as input. With
        ``cache_hit_frac`` at most 1.
    batch : bool
        Bought as asynchronous batch jobs (the row's batch discount applies).
    """

    workload: str
    input_tokens: float
    output_tokens: float
    cache_hit_frac: float = 0.0
    cache_write_frac: float = 0.0
    batch: bool = False

    def __post_init__(self):
        for name in ("input_tokens", "output_tokens"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0):
                raise ValueError(f"{self.workload}: {name} must be a finite number >= 0 "
                                 f"(got {v!r})")
        for name in ("cache_hit_frac", "cache_write_frac"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{self.workload}: {name} must be in [0, 1] (got {v!r})")
        if self.cache_hit_frac + self.cache_write_frac > 1.0 + 1e-12:
            raise ValueError(f"{self.workload}: cache_hit_frac + cache_write_frac exceed 1 "
                             "(a prompt token is read from or written to the cache, not both)")

    @classmethod
    def from_total(cls, workload: str, tokens: float, input_frac: float,
                   cache_hit_frac: float = 0.0, cache_write_frac: float = 0.0,
                   batch: bool = False) -> TokenMix:
        """A mix from total tokens [input + output] and the input share [0..1]."""
        if not 0.0 <= input_frac <= 1.0:
            raise ValueError(f"{workload}: input_frac must be in [0, 1] (got {input_frac!r})")
        return cls(workload, tokens * input_frac, tokens * (1.0 - input_frac), cache_hit_frac,
                   cache_write_frac, batch)

    @classmethod
    def for_workload(cls, workload: Workload, tokens: float, cache_write_frac: float = 0.0,
                     batch: bool = False) -> TokenMix:
        """A catalog workload's mix: its input/output split and prompt-cache hit share.

        Parameters
        ----------
        workload : Workload
            Catalog entry (``input_tokens_mean``, ``output_tokens_mean``,
            ``cache_hit_frac``).
        tokens : float
            Input + output tokens bought [tokens].
        """
        inp, out = workload.input_tokens_mean, workload.output_tokens_mean
        return cls.from_total(workload.id, tokens, inp / (inp + out), workload.cache_hit_frac,
                              cache_write_frac, batch)

    @property
    def tokens(self) -> float:
        """Input + output tokens [tokens]."""
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class ApiCostLine:
    """What one workload's tokens cost at one price row (token counts and USD)."""

    workload: str
    uncached_input_tokens: float
    cached_input_tokens: float
    cache_write_tokens: float
    output_tokens: float
    input_usd: float
    cached_input_usd: float
    cache_write_usd: float
    output_usd: float
    batch_discount_frac: float

    @property
    def usd(self) -> float:
        """Total [USD]."""
        return self.input_usd + self.cached_input_usd + self.cache_write_usd + self.output_usd

    @property
    def tokens(self) -> float:
        """Input + output tokens [tokens]."""
        return (self.uncached_input_tokens + self.cached_input_tokens + self.cache_write_tokens
                + self.output_tokens)


@dataclass(frozen=True)
class ApiCost:
    """The cost of a mix at one API price row, by workload.

    Attributes
    ----------
    price : str
        Price row id.
    lines : tuple of ApiCostLine
        One per workload of the mix.
    """

    price: str
    lines: tuple[ApiCostLine, ...] = field(default_factory=tuple)

    @property
    def usd(self) -> float:
        """Total [USD]."""
        return sum(line.usd for line in self.lines)

    @property
    def tokens(self) -> float:
        """Input + output tokens bought [tokens]."""
        return sum(line.tokens for line in self.lines)

    @property
    def usd_per_mtok(self) -> float | None:
        """Blended price of the mix [USD per million input + output tokens]."""
        return self.usd / self.tokens * MTOK if self.tokens else None


def api_cost(mix: Iterable[TokenMix], price: ApiPrice) -> ApiCost:
    """The cost of buying a token mix from one API price row.

    For each workload: cache hits (``input x cache_hit_frac``) at the cache-read price
    (the input price when the row has none), cache writes (``input x cache_write_frac``)
    at the cache-write price (the input price when the row has none), the remaining
    input at the input price, output at the output price; a batch mix takes the row's
    batch discount off every price (none if the row has no batch price).

    Parameters
    ----------
    mix : iterable of TokenMix
    price : ApiPrice
        A row of ``api_prices.yaml`` [USD per million tokens].

    Returns
    -------
    ApiCost
    """
    lines = []
    for m in mix:
        cached = m.input_tokens * m.cache_hit_frac
        written = m.input_tokens * m.cache_write_frac
        uncached = max(m.input_tokens - cached - written, 0.0)
        disc = (price.batch_discount_frac or 0.0) if m.batch else 0.0
        k = (1.0 - disc) / MTOK
        read_p = (price.cached_input_usd_per_mtok if price.cached_input_usd_per_mtok is not None
                  else price.input_usd_per_mtok)
        write_p = (price.cache_write_usd_per_mtok if price.cache_write_usd_per_mtok is not None
                   else price.input_usd_per_mtok)
        lines.append(ApiCostLine(
            m.workload, uncached, cached, written, m.output_tokens,
            uncached * price.input_usd_per_mtok * k, cached * read_p * k, written * write_p * k,
            m.output_tokens * price.output_usd_per_mtok * k, disc))
    return ApiCost(price.id, tuple(lines))


def comparable_prices(catalog, model_id: str) -> dict[str, list[ApiPrice]]:
    """API price rows comparable with a catalog model.

    Returns
    -------
    dict
        ``{"same_model": [...], "model_class": [...]}``: rows serving the same open
        weights, and rows compared by a stated class (``model_class`` says which).
    """
    rows = catalog.entries.get("api_prices", {}).values()
    return {"same_model": [r for r in rows if model_id in r.models],
            "model_class": [r for r in rows if model_id in r.class_models]}


@dataclass(frozen=True)
class SiteFleet:
    """What is in service at one site in one period (the input of :func:`operations_opex`).

    Attributes
    ----------
    period : str
        Period label.
    years : float
        Length of the period [years].
    site : str
        Site id.
    country : str
        The site's ISO 3166 country code (salaries are looked up by it).
    racks : mapping
        Rack id -> racks in service [racks].
    it_mw : float
        IT capacity in service [MW] (the basis of ``per_mw_it`` staff).
    """

    period: str
    years: float
    site: str
    country: str
    racks: Mapping[str, float]
    it_mw: float


#: Columns of the :func:`operations_opex` table and their units.
OPEX_UNITS = {"quantity": "FTE or licences", "usd_per_year": "USD/yr", "usd": "USD"}


def operations_opex(fleet: Iterable[SiteFleet], catalog,
                    usd_per_unit: Mapping[str, float] | None = None,
                    fleet_country: str | None = None) -> pd.DataFrame:
    """Staff and software a self-hosted fleet pays for, per period and site.

    Staff: each role of ``staffing.yaml`` times its basis (a site with racks, MW of IT,
    racks, accelerator packages, or the fleet once), at the loaded cost of that role in
    the site's country (``salaries.yaml``). Software: every ``software.yaml`` entry of
    the vendor of each rack's accelerator, per package or per die. FTE are not rounded
    to whole people.

    Parameters
    ----------
    fleet : iterable of SiteFleet
    catalog : Catalog
        With racks, accelerators, staffing, salaries and software.
    usd_per_unit : mapping, optional
        Currency -> USD per unit (the scenario's ``exchange_rates_usd_per_unit``); USD is 1.
    fleet_country : str, optional
        Country whose salaries pay ``per_fleet`` roles; default: the country of the site
        with the most IT MW in each period.

    Returns
    -------
    DataFrame
        period, site (``(fleet)`` for per-fleet roles), category (``staff`` or
        ``software``), item (role or software id), basis, quantity [FTE or licences],
        usd_per_year [USD/yr], usd [USD over the period].

    Raises
    ------
    InputError
        Naming every (role, country) without a salary and every currency without an
        exchange rate, all at once.
    """
    rates = {"USD": 1.0, **dict(usd_per_unit or {})}
    roles = catalog.entries.get("staffing", {})
    salaries = {(s.role, s.country): s for s in catalog.entries.get("salaries", {}).values()}
    software = list(catalog.entries.get("software", {}).values())
    sal_file = display_path(catalog.files.get("salaries", "salaries.yaml"))
    rows, problems = [], {}

    def cost(role: str, country: str) -> float | None:
        sal = salaries.get((role, country))
        if sal is None:
            problems[(role, country)] = Problem(
                sal_file, f"no salary for staffing role '{role}' in {country}; add an entry "
                          f"with role: {role}, country: {country}", entry=role, field="country")
            return None
        if sal.currency not in rates:
            problems[(sal.currency, "")] = Problem(
                sal_file, f"salary '{sal.id}' is in {sal.currency}; give an exchange rate "
                          f"(economics.exchange_rates_usd_per_unit: {{{sal.currency}: ...}})",
                entry=sal.id, field="currency")
            return None
        return sal.loaded_cost_per_fte_year * rates[sal.currency]

    by_period: dict[str, list[SiteFleet]] = {}
    for f in fleet:
        by_period.setdefault(f.period, []).append(f)
    for period, sites in by_period.items():
        years = sites[0].years
        if any(f.years != years for f in sites):
            raise ValueError(f"period {period}: sites give different lengths "
                             f"{sorted({f.years for f in sites})} [years]")
        live = [f for f in sites if sum(f.racks.values()) > 0]
        for f in live:
            n_racks = sum(f.racks.values())
            n_acc = sum(n * catalog.get("racks", r).accelerators_per_rack
                        for r, n in f.racks.items())
            for rid, role in roles.items():
                units = {StaffBasis.per_site: 1.0, StaffBasis.per_mw_it: f.it_mw,
                         StaffBasis.per_rack: n_racks,
                         StaffBasis.per_accelerator: n_acc}.get(role.basis)
                if units is None:
                    continue  # per_fleet below
                fte = role.fte_per_unit * units
                c = cost(rid, f.country)
                if c is not None and fte:
                    rows.append((period, f.site, "staff", rid, role.basis.value, fte, fte * c,
                                 fte * c * f.years))
            for sw in software:
                lic = 0.0
                for r, n in f.racks.items():
                    rack = catalog.get("racks", r)
                    acc = catalog.get("accelerators", rack.accelerator)
                    if acc.vendor != sw.vendor:
                        continue
                    per = acc.dies_per_package if sw.licensed_per == "die" else 1
                    lic += n * rack.accelerators_per_rack * per
                if lic:
                    usd = lic * sw.usd_per_accelerator_year
                    rows.append((period, f.site, "software", sw.id, sw.licensed_per, lic, usd,
                                 usd * f.years))
        if live:
            country = fleet_country or max(live, key=lambda f: f.it_mw).country
            for rid, role in roles.items():
                if role.basis is not StaffBasis.per_fleet or not role.fte_per_unit:
                    continue
                c = cost(rid, country)
                if c is not None:
                    fte = role.fte_per_unit
                    rows.append((period, "(fleet)", "staff", rid, role.basis.value, fte,
                                 fte * c, fte * c * years))
    if problems:
        raise InputError(list(problems.values()))
    df = pd.DataFrame(rows, columns=["period", "site", "category", "item", "basis", "quantity",
                                     "usd_per_year", "usd"])
    df.attrs["units"] = dict(OPEX_UNITS)
    return df


@dataclass(frozen=True)
class BreakEven:
    """Where building becomes cheaper than buying.

    Attributes
    ----------
    demand_mtok : float or None
        Demand at which both cost the same [million tokens per period of the fixed cost];
        None when building is never cheaper (the API is not dearer than the variable cost).
    utilisation_frac : float or None
        ``demand_mtok`` as a share of ``capacity_mtok`` [-]; None without a capacity or
        when building is never cheaper. Above 1, the fleet cannot serve that much.
    """

    fixed_usd: float
    variable_usd_per_mtok: float
    api_usd_per_mtok: float
    capacity_mtok: float | None
    demand_mtok: float | None
    utilisation_frac: float | None

    @property
    def reachable(self) -> bool | None:
        """Whether the fleet can serve the break-even demand (None without a capacity)."""
        if self.capacity_mtok is None:
            return None
        return self.utilisation_frac is not None and self.utilisation_frac <= 1.0


def self_hosted_usd_per_mtok(fixed_usd: float, variable_usd_per_mtok: float,
                             demand_mtok: float) -> float:
    """Levelised self-hosted cost at a demand [USD per million tokens].

    ``(fixed + variable x demand) / demand``; infinite at zero demand.
    """
    if demand_mtok <= 0:
        return math.inf
    return fixed_usd / demand_mtok + variable_usd_per_mtok


def break_even(fixed_usd: float, variable_usd_per_mtok: float, api_usd_per_mtok: float,
               capacity_mtok: float | None = None) -> BreakEven:
    """Demand (and utilisation) above which building is cheaper than buying.

    Building costs ``fixed + variable x D`` for a demand ``D``; buying costs
    ``api x D``. They are equal at ``D* = fixed / (api - variable)`` when the API price
    exceeds the variable cost; otherwise building never wins.

    Parameters
    ----------
    fixed_usd : float
        Costs that do not scale with tokens served over the period: capex annuity or
        depreciation, staff, software, maintenance, demand charges [USD].
    variable_usd_per_mtok : float
        Costs per token served, mainly energy [USD per million tokens].
    api_usd_per_mtok : float
        Blended API price of the same mix (:attr:`ApiCost.usd_per_mtok`) [USD per
        million tokens].
    capacity_mtok : float, optional
        What the fleet can serve over the period at full utilisation [million tokens].

    Any consistent period works: a year, a plan period, or present values with
    discounted tokens.
    """
    for name, v in (("fixed_usd", fixed_usd), ("variable_usd_per_mtok", variable_usd_per_mtok),
                    ("api_usd_per_mtok", api_usd_per_mtok)):
        if not (math.isfinite(v) and v >= 0):
            raise ValueError(f"{name} must be a finite number >= 0 (got {v!r})")
    if capacity_mtok is not None and not capacity_mtok > 0:
        raise ValueError(f"capacity_mtok must be > 0 (got {capacity_mtok!r})")
    margin = api_usd_per_mtok - variable_usd_per_mtok
    demand = fixed_usd / margin if margin > 0 else None
    util = demand / capacity_mtok if demand is not None and capacity_mtok else None
    return BreakEven(fixed_usd, variable_usd_per_mtok, api_usd_per_mtok, capacity_mtok, demand,
                     util)
