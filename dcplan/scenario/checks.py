"""Cross-checks of a scenario against the catalogs and sites.

:func:`check_scenario` returns every problem (unknown ids, periods outside the
horizon, demand missing for a period, entries naming a site outside the scenario...);
:func:`scenario_problems` adds the problems of its overrides.
"""

from __future__ import annotations

from typing import Any

from dcplan.catalog import Catalog, suggest, unknown_message
from dcplan.errors import InputError, Problem
from dcplan.scenario.overrides import apply_overrides
from dcplan.scenario.schema import (
    MAX_DEMAND_TOKENS_PER_MONTH,
    PricePath,
    Scenario,
    norm_label,
    parse_period_label,
)


def scenario_problems(scn: Scenario, catalog: Catalog, sites: dict[str, Any]) -> list[Problem]:
    """Every problem of ``scn`` against catalogs and sites, overrides included.

    Returns
    -------
    list of Problem
        :func:`check_scenario` problems (against the overridden catalogs and sites,
        or the ones as read when an override is bad) followed by
        :func:`apply_overrides` problems.
    """
    # the scenario is checked against the data it will be planned with: the catalogs
    # and sites after its overrides (an override may give a site the positions or the
    # lead time the scenario's other entries need); with bad overrides, against the
    # data as read, followed by the overrides' problems
    try:
        catalog2, sites2 = apply_overrides(scn, catalog, sites)
    except InputError as exc:
        return check_scenario(scn, catalog, sites) + exc.problems
    return check_scenario(scn, catalog2, sites2)


def _not_in_scenario(site: str, scn: Scenario, sites: dict[str, Any]) -> str:
    """Message for a site named in an entry but missing from ``scn.sites``."""
    if site in sites:
        return (f"site '{site}' is not one of this scenario's sites ({', '.join(scn.sites)}); "
                "add it to 'sites' or remove this entry")
    return unknown_message("sites", site, sites)


def _workload_message(w: str, wanted: list[str], catalog_workloads: Any) -> str:
    """Message for an entry naming workload ``w`` that the scenario does not serve."""
    if w in catalog_workloads:
        return (f"workload '{w}' is not a workload of this scenario ({', '.join(wanted)}); "
                "add it to 'workloads' (with its demand) or remove this entry")
    return unknown_message("workloads", w, list(dict.fromkeys([*wanted, *catalog_workloads])))


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
            at(scn.item_path("sites", i), unknown_message("sites", s, sites), field="sites")
    for i, r in enumerate(scn.racks or []):
        if r not in racks:
            at(scn.item_path("racks", i), unknown_message("racks", r, racks), field="racks")
    wanted = scn.workload_ids()
    for i, w in enumerate(wanted):
        if w not in wls:
            path = scn.item_path("workloads", i) if scn.workloads else f"demand.table.{w}" \
                if w in scn.demand.table else f"demand.growth.{w}"
            at(path, unknown_message("workloads", w, wls), field=path.rsplit(".", 1)[0]
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
    for w in scn.demand.units:
        if w not in wanted:
            at(f"demand.units.{w}", _workload_message(w, wanted, wls))
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
                keyed.add(norm_label(key))
            except ValueError:
                pass
        missing = [p.label for p in scn.period_list()
                   if p.label not in keyed and str(p.year) not in keyed]
        if missing:
            at(fld, f"no demand for period(s) {', '.join(missing)}; add them (0 for none)")
    if isinstance(scn.power_caps, dict):
        for r in scn.power_caps:
            if r not in racks:
                at(f"power_caps.{r}", unknown_message("racks", r, racks), field="power_caps")
            elif scn.racks and r not in scn.racks:
                at(f"power_caps.{r}", f"rack '{r}' is not one of this scenario's racks "
                   f"({', '.join(scn.racks)}); add it to 'racks' or remove this entry",
                   field="power_caps")
    if scn.power_oversubscription is not None:
        for site_id in scn.power_oversubscription.sites:
            if site_id not in scn.sites:
                at(f"power_oversubscription.sites.{site_id}",
                   f"site '{site_id}' is not one of this scenario's sites "
                   f"({', '.join(scn.sites)}); add it to 'sites' or remove this entry",
                   field="power_oversubscription.sites")
    for kind in ("storage", "onsite_generation"):
        offer = getattr(scn, kind)
        known = catalog.entries.get(kind, {})
        lists = ([(kind, offer)] if isinstance(offer, list)
                 else [(f"{kind}.{s_}", ids) for s_, ids in (offer or {}).items()])
        if isinstance(offer, dict):
            for s_ in offer:
                if s_ not in sites or s_ not in scn.sites:
                    at(f"{kind}.{s_}", _not_in_scenario(s_, scn, sites), field=kind)
        for fld, ids in lists:
            for ident in ids:
                if ident not in known:
                    at(fld, unknown_message(kind, ident, known), field=kind)
    for key in scn.budget_usd:
        probs += _check_label(scn, key, labels, years, f"budget_usd.{key}", "budget_usd")
    first = scn.period_list()[0]
    for i, ex in enumerate(scn.existing_fleet):
        fld = scn.item_path("existing_fleet", i)
        if ex.site not in sites or ex.site not in scn.sites:
            if not (broken("sites") and ex.site in sites):
                at(fld + ".site", _not_in_scenario(ex.site, scn, sites))
        if ex.rack not in racks:
            at(fld + ".rack", unknown_message("racks", ex.rack, racks))
        try:
            y, q = parse_period_label(ex.installed)
            if (y, q or 1) > (first.year, (first.start.month - 1) // 3 + 1):
                at(fld + ".installed", f"installed {ex.installed} is after the first period "
                                       f"{first.label}; existing racks must predate the plan")
        except ValueError as exc:
            at(fld + ".installed", str(exc))
    probs += _existing_fits(scn, racks, sites)
    for w, g in scn.demand.growth.items():
        last = scn.period_list()[-1]
        top = g.start * (1 + g.annual_growth) ** last.offset_years
        if top > MAX_DEMAND_TOKENS_PER_MONTH:
            at(f"demand.growth.{w}", f"growth takes the demand to {top:.3g} tokens per "
                                     f"{scn.demand.unit[11:]} by {last.label}, beyond any "
                                     "forecast; check start and annual_growth")
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
    probs += _check_profiles(scn, catalog, wanted, broken)
    probs += _check_serving(scn, racks, sites, wanted, wls, broken)
    probs += _check_paths(scn, racks, sites, wanted, wls, labels, years, broken)
    probs += _check_grid_connections(scn, sites)
    if scn.optics and scn.optics not in catalog.entries.get("optics", {}):
        at("optics", unknown_message("optics", scn.optics, catalog.entries.get("optics", {})))
    if not broken("economics"):
        for s in scn.sites:
            cur = getattr(sites.get(s), "currency", "USD")
            if s in sites and cur != "USD" and cur not in scn.economics.exchange_rates_usd_per_unit:
                at("economics.exchange_rates_usd_per_unit",
                   f"site '{s}' prices in {cur}; add economics.exchange_rates_usd_per_unit."
                   f"{cur} (USD per {cur})")
    return probs


def _check_profiles(scn: Scenario, catalog: Catalog, wanted: list[str], broken: Any
                    ) -> list[Problem]:
    """Problems of ``demand.profiles``: workloads, catalog ids, clashes with peak_to_average."""
    probs: list[Problem] = []
    wls = catalog.entries.get("workloads", {})
    known = catalog.entries.get("profiles", {})
    for w in scn.demand.profiles:
        fld = f"demand.profiles.{w}"
        if w not in wanted:
            if not broken("workloads"):
                probs.append(scn.problem(fld, _workload_message(w, wanted, wls), entry=w))
            continue
        spec = scn.demand.profile_of(w)
        if spec.profile is not None and spec.profile not in known:
            path = fld if isinstance(scn.demand.profiles[w], str) else fld + ".profile"
            probs.append(scn.problem(path, unknown_message("profiles", spec.profile, known),
                                     entry=w))
        ptoa = scn.demand.peak_to_average
        if isinstance(ptoa, dict) and w in ptoa:
            probs.append(scn.problem(
                f"demand.peak_to_average.{w}", f"workload '{w}' has a daily profile "
                "(demand.profiles), whose peak over its mean is the peak-to-average; remove "
                "its peak_to_average or its profile", entry=w))
    return probs


def _check_serving(scn: Scenario, racks: Any, sites: dict[str, Any], wanted: list[str],
                   wls: Any, broken: Any) -> list[Problem]:
    """Problems of ``serving``: workloads, rack types and sites named."""
    probs: list[Problem] = []
    sv = scn.serving
    if isinstance(sv.target_utilisation, dict) and not broken("workloads"):
        for w in sv.target_utilisation:
            if w not in wanted:
                probs.append(scn.problem(f"serving.target_utilisation.{w}",
                                         _workload_message(w, wanted, wls), entry=w))
    if isinstance(sv.availability, dict):
        for r in sv.availability:
            if r not in racks:
                probs.append(scn.problem(f"serving.availability.{r}",
                                         unknown_message("racks", r, racks), entry=r))
    if isinstance(sv.spare_racks, dict):
        for s, per in sv.spare_racks.items():
            if s not in sites:
                probs.append(scn.problem(f"serving.spare_racks.{s}",
                                         unknown_message("sites", s, sites), entry=s))
            for r in per if isinstance(per, dict) else ():
                if r not in racks:
                    probs.append(scn.problem(f"serving.spare_racks.{s}.{r}",
                                             unknown_message("racks", r, racks), entry=r))
    return probs


def _check_paths(scn: Scenario, racks: Any, sites: dict[str, Any], wanted: list[str],
                 wls: Any, labels: set, years: set, broken: Any) -> list[Problem]:
    """Problems of price and technology paths: ids named, every horizon year given."""
    probs: list[Problem] = []
    pa = scn.paths
    for r in pa.rack_capex:
        if r not in racks:
            probs.append(scn.problem(f"paths.rack_capex.{r}", unknown_message("racks", r, racks),
                                     entry=r))
    for sect in ("energy_price", "demand_charge"):
        for s in getattr(pa, sect):
            # a known site outside the scenario is ignored (a child of 'extends' may drop
            # sites of its base); an unknown id is an error
            if s not in sites:
                probs.append(scn.problem(f"paths.{sect}.{s}", unknown_message("sites", s, sites),
                                         entry=s))
    if isinstance(pa.software_speedup, dict) and not broken("workloads"):
        for w in pa.software_speedup:
            if w not in wanted:
                probs.append(scn.problem(f"paths.software_speedup.{w}",
                                         _workload_message(w, wanted, wls), entry=w))
    entries = pa.entries()
    c = scn.economics.carbon_price_usd_per_t
    if isinstance(c, PricePath):
        entries.append(("economics.carbon_price_usd_per_t", c))
        if c.annual_change is not None and c.start is None:
            probs.append(scn.problem("economics.carbon_price_usd_per_t",
                                     "a carbon price path with 'annual_change' needs 'start' "
                                     "(USD/tCO2 at the start of the plan)"))
    if broken("periods"):
        return probs
    need = sorted(years)
    for path, pp in entries:
        if pp.by_year is None or broken(path + ".by_year"):
            continue  # a value refused by the schema is reported there, not as a gap
        entry = path.split(".")[-1] if path.count(".") >= 2 else None
        missing = [y for y in need if y not in pp.by_year]
        if missing:
            probs.append(scn.problem(
                path + ".by_year", f"the path has no value for {_years_text(missing)}; "
                f"give every year of the horizon {need[0]}..{need[-1]} (no gaps)",
                entry=entry))
        outside = sorted(y for y in pp.by_year if y not in years)
        if outside:
            probs.append(scn.problem(
                path + ".by_year", f"year(s) {_years_text(outside)} are outside the horizon "
                f"{need[0]}..{need[-1]}; remove them or widen 'periods'", entry=entry))
    for key in scn.economics.carbon_cap_t:
        probs += _check_label(scn, key, labels, years, f"economics.carbon_cap_t.{key}",
                              "economics.carbon_cap_t")
    return probs


def _years_text(ys: list[int]) -> str:
    return ", ".join(str(y) for y in ys[:6]) + (f" and {len(ys) - 6} more" if len(ys) > 6 else "")


def _check_grid_connections(scn: Scenario, sites: dict[str, Any]) -> list[Problem]:
    """Sites that could never be connected within the plan.

    A request is energised from the first period that starts a lead time after the
    request, and the earliest request is made at the start of the plan; so a site with
    nothing committed whose lead time is longer than the time to the last period's
    start can never be connected: an input error, reported where the lead time was set
    (the site file, or the scenario override that set it). (With committed capacity the
    plan can still use the site; the planner notes that no request can be energised,
    see :mod:`dcplan.planner.inputs`.)
    """
    probs: list[Problem] = []
    if not scn.grid_requests:
        return probs
    periods = scn.period_list()
    last_start_months = 12 * periods[-1].offset_years
    for s in scn.sites:
        site = sites.get(s)
        gc = getattr(site, "grid_connection", None)
        if gc is None:
            continue
        committed = any(gc.committed_mw_in(p.year) > 0 for p in periods)
        if gc.lead_time_months > last_start_months + 1e-9 and not committed:
            file, line = site.where("grid_connection")
            field = "grid_connection.lead_time_months"
            ov = _override_of(scn, "sites", s, field)
            if ov is not None:
                field = scn.item_path("overrides", ov)
                file, line = scn.where(field)
            probs.append(Problem(
                file, f"grid_connection.lead_time_months is {gc.lead_time_months:g} months, "
                f"longer than the {last_start_months:g} months from the start of the plan "
                f"({periods[0].label}) to the start of its last period ({periods[-1].label}) "
                "and nothing is committed: a request made at once would be energised after "
                "the last period starts, so the site could never be connected within the "
                "plan; shorten the lead time, lengthen 'periods', commit capacity "
                "(grid_connection.committed_mw) or drop the site",
                entry=s, field=field, line=line))
    return probs


def _override_of(scn: Scenario, kind: str, entry: str, field: str) -> int | None:
    """Index of the last scenario override that sets ``field`` of ``kind``/``entry``."""
    hits = [i for i, ov in enumerate(scn.overrides)
            if ov.kind == kind and ov.id == entry
            and (ov.field == field or field.startswith(ov.field + "."))]
    return hits[-1] if hits else None


def _existing_fits(scn: Scenario, racks: Any, sites: dict[str, Any]) -> list[Problem]:
    """Problems of existing racks that do not fit their site's rack positions."""
    used: dict[str, int] = {}
    for ex in scn.existing_fleet:
        if ex.site in sites and ex.rack in racks:
            used[ex.site] = used.get(ex.site, 0) + ex.count * racks[ex.rack].rack_positions
    probs = []
    for i, ex in enumerate(scn.existing_fleet):
        site = sites.get(ex.site)
        if site is not None and used.get(ex.site, 0) > site.rack_positions:
            probs.append(scn.problem(
                scn.item_path("existing_fleet", i) + ".count",
                f"the existing fleet at {ex.site} needs {used[ex.site]:,} rack positions and "
                f"the site has {site.rack_positions:,}; correct the count",
                entry=ex.site))
    return probs


def _check_label(scn: Scenario, key: Any, labels: set, years: set, path: str, field: str
                 ) -> list[Problem]:
    """Problems of period label ``key`` (at ``path``, reported as ``field``)."""
    try:
        lab = norm_label(key)
    except ValueError as exc:
        return [scn.problem(path, str(exc), field=field)]
    if lab in labels or (scn.periods.step == "quarter" and lab.isdigit() and int(lab) in years):
        return []
    return [scn.problem(path, f"period {key} is outside the horizon {min(labels)}.."
                              f"{max(labels)}; remove it or widen 'periods'", field=field)]


def resolve_scenario(scn: Scenario, catalog: Catalog, sites: dict[str, Any]
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
