"""Self-hosting opex beyond energy and maintenance, as coefficients of the MILP.

A team that serves its own tokens pays operations staff (``staffing.yaml`` ratios at
the loaded cost of each role in the site's country, ``salaries.yaml``) and software
licensed per accelerator (``software.yaml``). :func:`operations_inputs` turns those
catalogs into per-unit yearly costs that the planner puts into its objective
(:func:`dcplan.planner.model.add_operations_costs`), so that they weigh on which racks
are bought and where:

- ``per_rack`` and ``per_accelerator`` roles and software: per rack in service;
- ``per_mw_it`` roles: per kW of nameplate IT power (``it_power_max_kw``) in service;
- ``per_site`` roles: per site that hosts any racks in a period (a 0/1 decision);
- ``per_fleet`` roles: once while the fleet has any racks (a 0/1 decision), at the
  salaries of the country of the scenario's first site.

Units: USD per year; FTE are not rounded to whole people.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dcplan.errors import InputError, Problem, display_path
from dcplan.schema import StaffBasis


@dataclass(frozen=True)
class OperationsData:
    """Yearly staff and software cost per unit of the fleet [USD/yr].

    Attributes
    ----------
    staff_per_site : dict
        site -> per_site roles while the site hosts racks [USD/yr].
    staff_per_kw : dict
        site -> per_mw_it roles per kW of nameplate IT power in service [USD/(kW yr)].
    staff_per_rack : dict
        (rack, site) -> per_rack and per_accelerator roles per rack in service [USD/yr].
    software_per_rack : dict
        rack -> software licences of its accelerators per rack in service [USD/yr].
    staff_per_fleet : float
        per_fleet roles while the fleet has racks [USD/yr].
    fleet_country : str
        Country whose salaries pay the per_fleet roles.
    """

    staff_per_site: dict[str, float] = field(default_factory=dict)
    staff_per_kw: dict[str, float] = field(default_factory=dict)
    staff_per_rack: dict[tuple[str, str], float] = field(default_factory=dict)
    software_per_rack: dict[str, float] = field(default_factory=dict)
    staff_per_fleet: float = 0.0
    fleet_country: str = ""

    @property
    def any(self) -> bool:
        """Whether any staff or software cost is set."""
        return bool(any(self.staff_per_site.values()) or any(self.staff_per_kw.values())
                    or any(self.staff_per_rack.values()) or any(self.software_per_rack.values())
                    or self.staff_per_fleet)


def operations_inputs(case: Any, rack_ids: list[str]) -> OperationsData:
    """Staff and software coefficients of a case (see the module docstring).

    Parameters
    ----------
    case : Case
        The case: its catalog (staffing, salaries, software) and scenario (sites,
        exchange rates).
    rack_ids : list of str
        Rack types of the plan.

    Returns
    -------
    OperationsData
        Yearly costs per unit of the fleet [USD/yr] (empty without staffing and
        software entries).

    Raises
    ------
    InputError
        Naming every (role, country) of the scenario's sites without a salary and
        every salary currency without an exchange rate, all at once.
    """
    catalog, scn = case.catalog, case.scenario
    roles = catalog.entries.get("staffing", {})
    if not roles and not catalog.entries.get("software"):
        return OperationsData()
    rates = {"USD": 1.0, **dict(scn.economics.exchange_rates_usd_per_unit)}
    salaries = {(s.role, s.country): s for s in catalog.entries.get("salaries", {}).values()}
    sal_file = display_path(catalog.files.get("salaries", "salaries.yaml"))
    problems: dict[tuple[str, str], Problem] = {}

    def cost(role: str, country: str) -> float:
        sal = salaries.get((role, country))
        if sal is None:
            problems[role, country] = Problem(
                sal_file, f"no salary for staffing role '{role}' in {country} (a site of the "
                          f"scenario is in {country}); add an entry with role: {role}, "
                          f"country: {country}", entry=role, field="country")
            return 0.0
        if sal.currency not in rates:
            problems[sal.currency, ""] = Problem(
                scn.source_file, f"salary '{sal.id}' is in {sal.currency}; give an exchange "
                f"rate (economics.exchange_rates_usd_per_unit: {{{sal.currency}: ...}})",
                entry=sal.id, field="economics.exchange_rates_usd_per_unit")
            return 0.0
        return sal.loaded_cost_per_fte_year * rates[sal.currency]

    def acc_per_rack(r: str) -> int:
        return catalog.get("racks", r).accelerators_per_rack

    per_site, per_kw, per_rack = {}, {}, {}
    for s in scn.sites:
        country = case.sites[s].country
        per_site[s] = per_kw[s] = 0.0
        for r in rack_ids:
            per_rack[r, s] = 0.0
        for rid, role in roles.items():
            f = role.fte_per_unit
            if not f or role.basis is StaffBasis.per_fleet:
                continue
            c = cost(rid, country)
            if role.basis is StaffBasis.per_site:
                per_site[s] += f * c
            elif role.basis is StaffBasis.per_mw_it:
                per_kw[s] += f * c / 1000.0
            else:
                for r in rack_ids:
                    n = 1 if role.basis is StaffBasis.per_rack else acc_per_rack(r)
                    per_rack[r, s] += f * n * c
    fleet_country = case.sites[scn.sites[0]].country
    per_fleet = sum(role.fte_per_unit * cost(rid, fleet_country) for rid, role in roles.items()
                    if role.basis is StaffBasis.per_fleet and role.fte_per_unit)
    software = {}
    for r in rack_ids:
        rack = catalog.get("racks", r)
        acc = catalog.get("accelerators", rack.accelerator)
        software[r] = sum(
            sw.usd_per_accelerator_year * rack.accelerators_per_rack
            * (acc.dies_per_package if sw.licensed_per == "die" else 1)
            for sw in catalog.entries.get("software", {}).values() if sw.vendor == acc.vendor)
    if problems:
        raise InputError(list(problems.values()))
    return OperationsData(per_site, per_kw, per_rack, software, per_fleet, fleet_country)


def operations_per_rack(d: Any, r: str, s: str) -> float:
    """Yearly staff and software cost of one more rack ``r`` in service at ``s`` [USD/yr].

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables (its ``operations`` and ``racks``).
    r : str
        Rack type id.
    s : str
        Site id.

    Returns
    -------
    float
        Per-rack roles, software licences and per-kW roles times the rack's nameplate
        IT power [USD/yr]; 0 without operations data.
    """
    ops = d.operations
    if ops is None:
        return 0.0
    return (ops.staff_per_rack.get((r, s), 0.0) + ops.software_per_rack.get(r, 0.0)
            + ops.staff_per_kw.get(s, 0.0) * d.racks[r].it_power_max_kw)


@dataclass(frozen=True)
class ApiOffer:
    """An API price row comparable with some of a plan's workloads.

    Attributes
    ----------
    id, name, provider, api_model : str
    workloads : tuple of str
        Workloads of the plan whose model the row serves (same open weights) or is
        compared with by class.
    comparison : dict
        workload -> ``same model`` or ``model class``.
    input_usd_per_mtok, cached_input_usd_per_mtok, cache_write_usd_per_mtok,
    output_usd_per_mtok : float
        [USD per million tokens]; cached and write prices None when the row has none.
    as_of, source : str
    """

    id: str
    name: str
    provider: str
    api_model: str
    workloads: tuple[str, ...]
    comparison: dict[str, str]
    input_usd_per_mtok: float
    cached_input_usd_per_mtok: float | None
    cache_write_usd_per_mtok: float | None
    output_usd_per_mtok: float
    as_of: str = ""
    source: str = ""


def api_offers(catalog: Any, workload_ids: list[str]) -> tuple[ApiOffer, ...]:
    """Every ``api_prices.yaml`` row comparable with at least one of the workloads.

    Parameters
    ----------
    catalog : Catalog
        The catalog holding ``api_prices`` and the workloads.
    workload_ids : list of str
        Workloads of the plan.

    Returns
    -------
    tuple of ApiOffer
        Prices per million tokens as the catalog gives them [USD per million tokens].
    """
    out = []
    wls = {w: catalog.get("workloads", w) for w in workload_ids}
    for row in catalog.entries.get("api_prices", {}).values():
        comp = {}
        for w, wl in wls.items():
            if wl.model in row.models:
                comp[w] = "same model"
            elif wl.model in row.class_models:
                comp[w] = "model class"
        if comp:
            out.append(ApiOffer(row.id, row.name, row.provider, row.api_model, tuple(comp),
                                comp, row.input_usd_per_mtok, row.cached_input_usd_per_mtok,
                                row.cache_write_usd_per_mtok, row.output_usd_per_mtok,
                                str(row.as_of), row.source))
    return tuple(out)
