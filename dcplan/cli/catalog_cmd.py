"""``dcplan catalog list|show`` and ``dcplan validate``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dcplan.cli.app import app
from dcplan.cli.common import STATE, echo, emit_json, format_table, handle_errors
from dcplan.cli.complete import any_id
from dcplan.defaults import KIND_FILES
from dcplan.errors import InputError, Problem, display_path

# dcplan.catalog (pydantic schemas) is imported by the commands that read a catalog, so
# that `dcplan --help` and shell completion do not load it.

catalog_app = typer.Typer(help="Browse the hardware, model, workload, tokenizer and price catalogs "
                               "and the sites.",
                          no_args_is_help=True, rich_markup_mode=None)
app.add_typer(catalog_app, name="catalog")

#: Columns shown by ``catalog list`` (``--wide`` shows every field).
LIST_COLUMNS = {
    "accelerators": ["id", "vendor", "hbm_gb", "hbm_tb_per_s", "bf16_dense_tflops",
                     "fp8_dense_tflops", "fp4_dense_tflops", "max_power_w", "idle_power_w",
                     "scaleup_gb_per_s", "first_available"],
    "racks": ["id", "accelerator", "accelerators_per_rack", "scaleup_domain", "it_power_max_kw",
              "it_power_idle_kw", "cooling", "liquid_heat_frac", "capex_usd", "first_available",
              "lifetime_years"],
    "models": ["id", "total_params_b", "active_params_b", "layers", "hidden_size",
               "attention_heads", "kv_heads", "head_dim", "experts_total", "experts_active",
               "max_context_tokens"],
    "cdus": ["id", "vendor", "placement", "capacity_kw", "pump_power_kw", "approach_k",
             "capex_usd"],
    "heat_rejection": ["id", "kind", "electric_kw_per_kw_heat", "rated_supply_c",
                       "rated_ambient_c", "ambient_basis", "approach_k", "capex_usd_per_kw"],
    "switches": ["id", "vendor", "protocol", "ports", "port_gbps", "lane_gbps", "rack_units",
                 "power_w", "capex_usd", "cpo"],
    "optics": ["id", "kind", "gbps", "lane_gbps", "fibre", "power_w", "reach_m", "capex_usd"],
    "nics": ["id", "vendor", "ports", "gbps", "lane_gbps", "power_w", "capex_usd"],
    "workloads": ["id", "model", "input_tokens_mean", "output_tokens_mean", "cache_hit_frac",
                  "precision", "ttft_s", "tpot_ms", "mode"],
    "tokenizers": ["id", "reader", "package", "file", "vocab_tokens", "as_of"],
    "api_prices": ["id", "provider", "models", "class_models",
                   "input_usd_per_mtok", "cached_input_usd_per_mtok", "cache_write_usd_per_mtok",
                   "output_usd_per_mtok", "batch_discount_frac", "as_of"],
    "staffing": ["id", "name", "basis", "fte_per_unit"],
    "salaries": ["id", "role", "country", "currency", "loaded_cost_per_fte_year", "as_of"],
    "software": ["id", "name", "vendor", "usd_per_accelerator_year", "licensed_per", "as_of"],
    "ups": ["id", "vendor", "module_kw", "no_load_loss_frac", "proportional_loss_frac",
            "square_loss_frac", "runtime_min", "capex_usd"],
    "generators": ["id", "vendor", "fuel", "rated_kw", "standby_kw", "capex_usd"],
    "profiles": ["id", "region", "timezone", "traffic", "as_of"],
    "storage": ["id", "chemistry", "capex_usd_per_kwh", "capex_usd_per_kw",
                "round_trip_efficiency_frac", "depth_of_discharge_frac", "calendar_life_years"],
    "onsite_generation": ["id", "technology", "capex_usd_per_kw", "heat_rate_mmbtu_per_mwh",
                          "fuel_price_usd_per_mmbtu", "emissions_kg_per_mwh",
                          "permitting_lead_time_months"],
}

#: Columns of ``catalog list`` left out first when the table does not fit the terminal,
#: in order (then the last ones; ``--wide`` and ``--json`` show every field).
LIST_OPTIONAL = {
    "racks": ["liquid_heat_frac", "it_power_idle_kw", "scaleup_domain", "lifetime_years"],
    "accelerators": ["idle_power_w", "bf16_dense_tflops", "scaleup_gb_per_s"],
    "models": ["head_dim", "hidden_size", "attention_heads", "kv_heads"],
    "api_prices": ["cache_write_usd_per_mtok", "batch_discount_frac", "as_of",
                   "cached_input_usd_per_mtok"],
    "ups": ["square_loss_frac", "no_load_loss_frac"],
}
#: Columns of ``catalog list sites`` left out first when they do not fit, in order.
SITE_OPTIONAL = ["design dry/wet bulb C", "demand /kW-month", "region", "gCO2/kWh"]

#: What ``catalog list`` can list: the catalog kinds and the sites.
LISTABLE = [*KIND_FILES, "sites"]


def lookup(catalog, kind: str, ident: str):
    """Catalog entry ``ident`` of ``kind``; an unknown id is an error naming the closest id.

    Raises
    ------
    InputError
        If there is no such entry.
    """
    from dcplan.catalog import unknown_message

    table = catalog.entries.get(kind, {})
    if ident in table:
        return table[ident]
    file = display_path(catalog.files[kind]) if kind in catalog.files else f"<{kind}>"
    raise InputError(Problem(file, unknown_message(kind, ident, table)))


def lookup_all(catalog, wanted: list[tuple[str, str | None]]) -> None:
    """Check ``(kind, id)`` pairs all at once (``None`` ids are skipped).

    Raises
    ------
    InputError
        Naming every unknown id with its closest known ids.
    """
    problems = []
    for kind, ident in wanted:
        if ident is None:
            continue
        try:
            lookup(catalog, kind, ident)
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems)


def lookup_site(sites: dict, ident: str):
    """Site ``ident``; an unknown id is an error naming the closest id."""
    from dcplan.catalog import unknown_message

    if ident in sites:
        return sites[ident]
    raise InputError(Problem("<sites>", unknown_message("sites", ident, sites)))


def _listable(incomplete: str) -> list[str]:
    """Completion of ``catalog list KIND``: the listable kinds that start with ``incomplete``."""
    return [k for k in LISTABLE if k.startswith(incomplete)]


def _check_kind(kind: str) -> str:
    if kind not in LISTABLE:
        from dcplan.catalog import did_you_mean

        raise typer.BadParameter(
            f"unknown catalog '{kind}'{did_you_mean(kind, LISTABLE)}; choose from: "
            f"{', '.join(LISTABLE)}"
        )
    return kind


def _steps(mapping: dict) -> str:
    """``{2026: 9.9, 2028: 30}`` -> ``"2026: 9.9, 2028: 30"``."""
    return ", ".join(f"{k}: {v:,.4g}" for k, v in sorted(mapping.items()))


def site_rows(sites: dict) -> list[dict]:
    """One readable row per site for ``catalog list sites``.

    PUE is not a site input: it comes out of the cooling model (``dcplan cooling``).
    """
    rows = []
    for s in sites.values():
        rows.append({
            "id": s.id, "region": s.region,
            "grid MW by year": _steps(s.grid_mw),
            "energy /kWh": f"{s.energy_price_per_kwh:,.4g} {s.currency}",
            "demand /kW-month": f"{s.demand_charge_per_kw_month:,.4g} {s.currency}",
            "max rack kW": s.max_rack_kw,
            "facility water": "yes" if s.facility_water else "no",
            "rack positions": f"{s.rack_positions:,}",
            "gCO2/kWh": s.carbon_g_per_kwh,
            "design dry/wet bulb C": f"{s.design_dry_bulb_c:g} / {s.design_wet_bulb_c:g}",
        })
    return rows


@catalog_app.command("list")
@handle_errors
def list_cmd(
    kind: Annotated[
        str | None,
        typer.Argument(help=f"Catalog to list: {', '.join(LISTABLE)}. Omit for a summary.",
                       callback=lambda v: _check_kind(v) if v else v,
                       autocompletion=_listable),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON with every field.")] = False,
    wide: Annotated[bool, typer.Option(
        "--wide", help="Show every field, as wide as they need.")] = False,
) -> None:
    """List catalog entries or sites as a table (estimated figures marked with *)."""
    if kind == "sites":
        _list_sites(as_json)
        return
    catalog = STATE.catalog()
    if kind is None:
        rows = [{"catalog": k, "entries": len(catalog.entries.get(k, {})),
                 "file": display_path(catalog.files[k]) if k in catalog.files else "-"}
                for k in KIND_FILES]
        from dcplan.paths import data_dir

        rows.append({"catalog": "sites", "entries": len(_sites()),
                     "file": display_path(data_dir("sites", STATE.sites_dir))})
        if as_json:
            emit_json(rows)
        else:
            typer.echo(format_table(rows))
        return
    entries = catalog.entries.get(kind, {})
    if as_json:
        from dcplan.catalog import entry_table

        emit_json(entry_table(entries))
        return
    from dcplan.export.text import format_cell

    rows = []
    for entry in entries.values():
        row = {k: ", ".join(map(str, v)) or "-" if isinstance(v, list) else v
               for k, v in entry.model_dump(mode="json").items()}
        for field in entry.estimates:
            if row.get(field) is not None:
                row[field] = f"{format_cell(row[field])}*"
        rows.append(row)
    columns = None if wide else LIST_COLUMNS[kind]
    if wide and rows:
        columns = [c for c in rows[0] if c not in ("source", "estimates", "notes", "name")]
    typer.echo(format_table(rows, columns, optional=LIST_OPTIONAL.get(kind),
                            **({"width": None} if wide else {})))
    if any(e.estimates for e in entries.values()):
        typer.echo("\n* estimate; `dcplan catalog show ID` says how it was estimated")


def _sites() -> dict:
    from dcplan.sites import load_sites

    return load_sites(STATE.sites_dir)


def _list_sites(as_json: bool) -> None:
    sites = _sites()
    if as_json:
        emit_json([s.model_dump(mode="json") for s in sites.values()])
        return
    typer.echo(format_table(site_rows(sites), optional=SITE_OPTIONAL, drop_first=True,
                            hint="--json shows every field, or a wider terminal (COLUMNS)"))
    echo("\nPUE is not a site input: `dcplan cooling --site ID` computes it from the "
               "climate; `dcplan catalog show SITE_ID` shows every field.")


@catalog_app.command("show")
@handle_errors
def show_cmd(
    ident: Annotated[str, typer.Argument(metavar="ID", help="Entry id, e.g. gb200_nvl72.",
                                         autocompletion=any_id)],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show every field of one catalog entry or site, with its source and estimates."""
    catalog = STATE.catalog()
    from dcplan.catalog import did_you_mean

    hits = [(k, t[ident]) for k, t in catalog.entries.items() if ident in t]
    where = ""
    if hits:
        kind, entry = hits[0]
        line = catalog.lines.get((kind, ident))
        where = display_path(catalog.files[kind]) + (f":{line}" if line else "")
    else:
        sites = _sites()
        if ident not in sites:
            every = [i for t in catalog.entries.values() for i in t] + list(sites)
            raise InputError(Problem("<catalogs>", f"no catalog entry or site with id "
                                                   f"'{ident}'{did_you_mean(ident, every)}; "
                                                   "see 'dcplan catalog list' and "
                                                   "'dcplan catalog list sites'"))
        kind, entry = "sites", sites[ident]
        from dcplan.paths import data_dir

        folder = data_dir("sites", STATE.sites_dir)
        own = [f for f in (folder / f"{ident}.yaml", folder / f"{ident}.yml") if f.is_file()]
        where = display_path(own[0] if own else folder)
    data = entry.model_dump(mode="json")
    if as_json:
        emit_json({"kind": kind, **data})
        return
    if kind == "sites":
        data = _site_display(entry, data)
    typer.echo(f"{ident}  ({kind}, {where})")
    width = max(len(k) for k in data)
    for key, value in data.items():
        if key in ("estimates", "id"):
            continue
        mark = "  (estimate)" if key in entry.estimates else ""
        typer.echo(f"  {key.ljust(width)}  {'-' if value is None else value}{mark}")
    for key, how in entry.estimates.items():
        typer.echo(f"  * {key}: {how}")


def _site_display(site, data: dict) -> dict:
    """Site fields made readable: year steps on one line, the climate summarised."""
    out = dict(data)
    out["grid_mw"] = _steps(site.grid_mw)
    for key in ("climate_bins", "climate_monthly"):
        value = out.get(key)
        if isinstance(value, list):
            out[key] = f"{len(value)} entries (see the site file)"
    out["rack_positions"] = f"{site.rack_positions:,}"
    return out


@app.command("validate")
@handle_errors
def validate_cmd(
    paths: Annotated[
        list[Path],
        typer.Argument(help="Catalog folders or files (racks.yaml, ...), site folders or "
                            "files, scenario files or folders of them, forecast files, "
                            "measurement CSVs or folders of them."),
    ],
) -> None:
    """Check input files and report every problem at once (exit 1 if any)."""
    from dcplan.catalog import kind_of_file, load_catalog
    problems: list[Problem] = []
    checked: list[str] = []
    catalog_dirs: list[Path] = []
    catalog_files: dict[str, Path] = {}
    others: list[Path] = []
    for path in paths:
        if not path.exists():
            problems.append(Problem(display_path(path), "file or folder not found; check "
                                                        "the path"))
        elif path.is_dir() and _is_catalog_dir(path):
            catalog_dirs.append(path)
            # sub-folders of a catalog folder (measurements/) are checked by content
            others += sorted(p for p in path.iterdir() if p.is_dir()
                             and not p.name.startswith((".", "_")))
        elif path.is_file() and kind_of_file(path):
            catalog_files[kind_of_file(path)] = path
        else:
            others.append(path)
    if catalog_dirs or catalog_files:
        # Kinds not given fall back to the base catalog (the first folder given, else the
        # catalog in use), so a single racks.yaml is checked against known accelerators.
        base = catalog_dirs[0] if catalog_dirs else STATE.catalog_dir
        extra = {}
        for d in catalog_dirs:
            extra.update({k: d / f for k, f in KIND_FILES.items() if (d / f).exists()})
        extra.update(catalog_files)
        try:
            catalog = load_catalog(base, extra_files=extra)
            checked += [f"{len(catalog.entries[k])} {k}" for k in KIND_FILES if k in extra]
        except InputError as exc:
            problems += exc.problems
        for d in catalog_dirs:
            problems += _validate_perf_defaults(d, checked)
    for path in others:
        if path.is_dir():
            problems += _validate_folder(path, checked, top=True)
        else:
            problems += _validate_file(path, checked)
    if problems:
        raise InputError(problems)
    typer.echo(f"ok: {', '.join(checked)}")


def _is_catalog_dir(path: Path) -> bool:
    return any((path / f).exists() for f in KIND_FILES.values())


#: File suffixes ``validate`` looks at inside a folder.
_DATA_SUFFIXES = (".yaml", ".yml", ".csv")


def _validate_folder(path: Path, checked: list[str], top: bool = False) -> list[Problem]:
    """Validate every data file of a folder (and its sub-folders) by its content.

    A folder of site files is checked as one set (duplicate ids across files); other
    files are checked one by one. A folder that holds nothing checkable is a problem
    when it was named on the command line.
    """
    shown = display_path(path)
    if _is_catalog_dir(path):
        before = len(checked)
        problems = validate_catalog_folder(path, checked)
        if len(checked) == before and not problems:
            checked.append(f"catalog folder {shown}")
        return problems
    # not only regular files: a device or FIFO named like data is refused by the reader
    files = sorted(p for p in path.iterdir() if not p.is_dir() and p.suffix in _DATA_SUFFIXES)
    subdirs = sorted(p for p in path.iterdir() if p.is_dir()
                     and not p.name.startswith((".", "_")))
    problems: list[Problem] = []
    kinds: dict[Path, str] = {}
    for f in files:
        kind, found = _classify(f)
        problems += found
        if kind:
            kinds[f] = kind
    site_files = [f for f, k in kinds.items() if k == "site"]
    if site_files:
        from dcplan.sites import load_sites

        try:
            sites = load_sites(files=site_files)
            checked.append(f"{len(sites)} site{'s' * (len(sites) != 1)} in {shown}")
        except InputError as exc:
            problems += exc.problems
    counts: dict[str, int] = {}
    for f, kind in kinds.items():
        if kind == "site":
            continue
        sub: list[str] = []
        found = _validate_file(f, sub, kind)
        problems += found
        if kind in ("measurements", "measurement_support"):
            checked += sub
        elif not found:
            counts[kind] = counts.get(kind, 0) + 1
    for kind, n in counts.items():
        checked.append(f"{n} {_PLURAL[kind] if n != 1 else kind} in {shown}")
    for d in subdirs:
        problems += _validate_folder(d, checked)
    if top and not kinds and not subdirs and not problems:
        problems.append(Problem(shown, "nothing to validate in this folder: no catalog, "
                                       "site, scenario, forecast or measurement files"))
    return problems


def validate_catalog_folder(path: Path, checked: list[str]) -> list[Problem]:
    """Validate a catalog folder found below a folder named on the command line."""
    from dcplan.catalog import load_catalog

    problems = _validate_perf_defaults(path, checked)
    try:
        catalog = load_catalog(path)
    except InputError as exc:
        return exc.problems + problems
    checked.append(f"{sum(len(t) for t in catalog.entries.values())} catalog entries in "
                   f"{display_path(path)}")
    return problems


def _validate_perf_defaults(folder: Path, checked: list[str]) -> list[Problem]:
    """Problems of the performance-model defaults and default calibration of a folder."""
    from dcplan.perf.params import (
        CALIBRATION_FILE,
        DEFAULTS_FILE,
        load_calibration,
        load_perf_defaults,
    )

    problems: list[Problem] = []
    path = folder / DEFAULTS_FILE
    if path.exists():
        try:
            load_perf_defaults(path)
            checked.append(f"performance defaults {display_path(path)}")
        except InputError as exc:
            problems += exc.problems
    cal = folder / CALIBRATION_FILE
    if cal.exists():
        try:
            load_calibration(cal)
            checked.append(f"performance calibration {display_path(cal)}")
        except InputError as exc:
            problems += exc.problems
    return problems


_PLURAL = {"scenario": "scenarios", "forecast": "forecasts", "sweep": "sweeps",
           "calibration": "performance calibrations"}


def _classify(path: Path) -> tuple[str | None, list[Problem]]:
    """What ``path`` holds: a site, scenario, forecast, sweep, calibration or measurements.

    ``measurements``: a CSV of rows; ``measurement_support``: a YAML file the model reads
    beside the CSVs (:data:`dcplan.perf.measurements.SUPPORT_FILES`), known by its name.

    Returns
    -------
    kind, problems
        The kind (None when unknown or unreadable) and the problems that stop reading it.
    """
    if path.suffix == ".csv":
        return "measurements", []
    from dcplan.perf.measurements import is_support_file

    if is_support_file(path):   # read by the model beside the CSVs; known by name
        return "measurement_support", []
    from dcplan.yamlio import read_yaml

    try:
        raw = read_yaml(path)
    except InputError as exc:
        return None, exc.problems
    from dcplan.perf.params import CALIBRATION_KIND

    if isinstance(raw, dict):
        if raw.get("kind") == "dcplan_sweep":
            return "sweep", []
        if raw.get("kind") == CALIBRATION_KIND:
            return "calibration", []
        if "grid_mw" in raw:
            return "site", []
        if "cases" in raw:
            return "forecast", []
        if {"periods", "demand", "extends"} & set(raw):
            return "scenario", []
    return None, [Problem(display_path(path), "cannot tell what this file is: catalog files "
                          "are named after their kind "
                          f"({', '.join(KIND_FILES.values())}), site files have "
                          "'grid_mw', scenario files have 'periods', forecast files have "
                          "'cases', sweep files start with 'kind: dcplan_sweep', calibration "
                          f"files with 'kind: {CALIBRATION_KIND}', measurement "
                          "files end in .csv (beside them: "
                          f"{', '.join(_support_files())})")]


def _support_files() -> list[str]:
    from dcplan.perf.measurements import SUPPORT_FILES

    return list(SUPPORT_FILES)


def _validate_file(path: Path, checked: list[str], kind: str | None = None) -> list[Problem]:
    """Validate one site, scenario, forecast or measurement file; append what was checked."""
    shown = display_path(path)
    if kind is None:
        kind, problems = _classify(path)
        if kind is None:
            return problems
    try:
        if kind == "measurement_support":
            from dcplan.perf.measurements import check_support_file

            what, problems = check_support_file(path, STATE.catalog())
            if not problems:
                checked.append(what)
            return problems
        if kind == "measurements":
            from dcplan.perf.measurements import load_measurements

            rows = load_measurements(path, STATE.catalog())
            checked.append(f"{len(rows)} measurement rows in {shown}")
            return []
        if kind == "site":
            from dcplan.sites import load_sites

            sites = load_sites(files=[path])
            checked.append(f"site {', '.join(sites)}")
            return []
        if kind == "forecast":
            from dcplan.scenario import check_forecast

            problems = check_forecast(path, STATE.catalog())
            if not problems:
                checked.append(f"forecast {shown}")
            return problems
        if kind == "calibration":
            from dcplan.perf.params import load_calibration

            cat = STATE.catalog()
            load_calibration(path, list(cat.entries.get("accelerators", {})))
            checked.append(f"performance calibration {shown}")
            return []
        if kind == "sweep":
            # as `dcplan sweep` checks it: the file, then every parameter on its base case
            from dcplan.sweep import load_sweep_spec, prepare_sweep

            spec = load_sweep_spec(path)
            prepare_sweep(spec, STATE.case(spec.base_path()))
            checked.append(f"sweep {shown}")
            return []
        # A scenario is checked as `plan` reads it: with its catalogs, perf defaults
        # and sites, every problem at once.
        case = STATE.case(path)
        if case.scenario.uncertainty is not None:  # its cases, as `plan` builds them
            from dcplan.planner.stochastic import load_cases

            load_cases(case, prepare=False)
        checked.append(f"scenario {shown}")
        return []
    except InputError as exc:
        return exc.problems
