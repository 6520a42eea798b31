"""``dcplan catalog list|show`` and ``dcplan validate``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dcplan.catalog import entry_table, kind_of_file, load_catalog, suggest
from dcplan.cli import app
from dcplan.cli.common import STATE, emit_json, format_table, handle_errors
from dcplan.errors import InputError, Problem, display_path
from dcplan.schema import KINDS

catalog_app = typer.Typer(help="Browse the hardware, model and workload catalogs.",
                          no_args_is_help=True)
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
    "switches": ["id", "vendor", "protocol", "ports", "port_gbps", "power_w", "capex_usd", "cpo"],
    "optics": ["id", "kind", "gbps", "power_w", "reach_m", "capex_usd"],
    "nics": ["id", "vendor", "ports", "gbps", "power_w", "capex_usd"],
    "workloads": ["id", "model", "input_tokens_mean", "output_tokens_mean", "cache_hit_frac",
                  "precision", "ttft_s", "tpot_ms", "mode"],
}


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise typer.BadParameter(
            f"unknown catalog '{kind}'{suggest(kind, KINDS)}; choose from: {', '.join(KINDS)}"
        )
    return kind


@catalog_app.command("list")
@handle_errors
def list_cmd(
    kind: Annotated[
        str | None,
        typer.Argument(help=f"Catalog to list: {', '.join(KINDS)}. Omit for a summary.",
                       callback=lambda v: _check_kind(v) if v else v),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON with every field.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help="Show every field.")] = False,
) -> None:
    """List catalog entries as a table (estimated figures marked with *)."""
    catalog = STATE.catalog()
    if kind is None:
        rows = [{"catalog": k, "entries": len(catalog.entries.get(k, {})),
                 "file": display_path(catalog.files[k]) if k in catalog.files else "-"}
                for k in KINDS]
        if as_json:
            emit_json(rows)
        else:
            typer.echo(format_table(rows))
        return
    entries = catalog.entries.get(kind, {})
    if as_json:
        emit_json(entry_table(entries))
        return
    rows = []
    for entry in entries.values():
        row = entry.model_dump(mode="json")
        for field in entry.estimates:
            if row.get(field) is not None:
                row[field] = f"{format_table([{'v': row[field]}]).splitlines()[-1].strip()}*"
        rows.append(row)
    columns = None if wide else LIST_COLUMNS[kind]
    if wide and rows:
        columns = [c for c in rows[0] if c not in ("source", "estimates", "notes", "name")]
    typer.echo(format_table(rows, columns))
    if any(e.estimates for e in entries.values()):
        typer.echo("\n* estimate; `dcplan catalog show ID` says how it was estimated")


@catalog_app.command("show")
@handle_errors
def show_cmd(
    ident: Annotated[str, typer.Argument(metavar="ID", help="Entry id, e.g. gb200_nvl72.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show every field of one catalog entry, with its source and estimates."""
    catalog = STATE.catalog()
    kind, entry = catalog.find(ident)
    data = entry.model_dump(mode="json")
    if as_json:
        emit_json({"kind": kind, **data})
        return
    line = catalog.lines.get((kind, ident))
    typer.echo(f"{ident}  ({kind}, {display_path(catalog.files[kind])}"
               f"{':' + str(line) if line else ''})")
    width = max(len(k) for k in data)
    for key, value in data.items():
        if key in ("estimates", "id"):
            continue
        mark = "  (estimate)" if key in entry.estimates else ""
        typer.echo(f"  {key.ljust(width)}  {'-' if value is None else value}{mark}")
    for key, how in entry.estimates.items():
        typer.echo(f"  * {key}: {how}")


@app.command("validate")
@handle_errors
def validate_cmd(
    paths: Annotated[
        list[Path],
        typer.Argument(help="Catalog folders or files (racks.yaml, ...), site folders or "
                            "files, scenario files.", exists=True),
    ],
) -> None:
    """Check input files and report every problem at once (exit 1 if any)."""
    problems: list[Problem] = []
    checked: list[str] = []
    catalog_dirs: list[Path] = []
    catalog_files: dict[str, Path] = {}
    others: list[Path] = []
    for path in paths:
        if path.is_dir() and any((path / f).exists() for f, _ in KINDS.values()):
            catalog_dirs.append(path)
        elif path.is_file() and kind_of_file(path):
            catalog_files[kind_of_file(path)] = path
        else:
            others.append(path)
    for path in others:
        problems += _validate_other(path, checked)
    if catalog_dirs or catalog_files:
        # Kinds not given fall back to the base catalog (the first folder given, else the
        # catalog in use), so a single racks.yaml is checked against known accelerators.
        base = catalog_dirs[0] if catalog_dirs else STATE.catalog_dir
        extra = {}
        for d in catalog_dirs:
            extra.update({k: d / f for k, (f, _) in KINDS.items() if (d / f).exists()})
        extra.update(catalog_files)
        try:
            catalog = load_catalog(base, extra_files=extra)
            checked += [f"{len(catalog.entries[k])} {k}" for k in KINDS if k in extra]
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems)
    typer.echo(f"ok: {', '.join(checked)}")


def _validate_other(path: Path, checked: list[str]) -> list[Problem]:
    """Validate a path that is not a catalog: a sites folder, a site file or a scenario."""
    from dcplan.sites import load_sites

    shown = display_path(path)
    try:
        if path.is_dir():
            sites = load_sites(path)
            checked.append(f"{len(sites)} sites in {shown}")
            return []
        from dcplan.yamlio import read_yaml

        raw = read_yaml(path)
        if isinstance(raw, dict) and "grid_mw" in raw:
            sites = load_sites(files=[path])
            checked.append(f"site {', '.join(sites)}")
            return []
        if isinstance(raw, dict) and ({"periods", "demand", "extends"} & set(raw)):
            from dcplan.scenario import apply_overrides, check_scenario, load_scenario

            scenario = load_scenario(path)
            sites_dir = getattr(scenario, "sites_dir", None) or STATE.sites_dir
            sites = load_sites(sites_dir)
            problems = check_scenario(scenario, STATE.catalog(), sites)
            try:
                apply_overrides(scenario, STATE.catalog(), sites)
            except InputError as exc:
                problems += exc.problems
            if not problems:
                checked.append(f"scenario {shown}")
            return problems
    except InputError as exc:
        return exc.problems
    return [Problem(shown, "cannot tell what this file is: catalog files are named after "
                           f"their kind ({', '.join(f for f, _ in KINDS.values())}), site files "
                           "have 'grid_mw', scenario files have 'periods'")]
