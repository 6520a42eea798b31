"""``dcplan perf``: goodput and power of a rack, calibration and validation."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dcplan.cli import app
from dcplan.cli.common import STATE, emit_json, fail, format_table, handle_errors

perf_app = typer.Typer(
    help="Performance model: goodput tokens/s and power per rack; calibrate and validate "
         "it against measurements.",
    invoke_without_command=True,
    no_args_is_help=False,
    rich_markup_mode=None,
)
app.add_typer(perf_app, name="perf")

ModelsOpt = Annotated[
    Path | None,
    typer.Option("--models", help="Extra model shapes (YAML list in the models-catalog format)."),
]
CalibOpt = Annotated[
    Path | None,
    typer.Option("--calibration", help="Calibration file written by 'dcplan perf calibrate'."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _calibration(path: Path | None, catalog):
    if path is None:
        return None
    from dcplan.perf import load_calibration

    return load_calibration(path, known_accelerators=catalog.entries.get("accelerators", {}))


@perf_app.callback()
@handle_errors
def perf(
    ctx: typer.Context,
    rack: Annotated[str | None, typer.Option("--rack", help="Rack id.")] = None,
    model: Annotated[str | None, typer.Option(
        "--model", help="Model id (default: the workload's model).")] = None,
    workload: Annotated[str | None, typer.Option("--workload", help="Workload id.")] = None,
    precision: Annotated[str | None, typer.Option(
        "--precision", help="bf16, fp8 or fp4 (default: the workload's).")] = None,
    calibration: CalibOpt = None,
    sweep: Annotated[str | None, typer.Option(
        "--sweep", help="'batch': print the throughput/latency curve over batch.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Goodput tokens/s and power of one rack serving a workload under its SLO.

    Example: dcplan perf --rack gb200_nvl72 --model llama3_70b --workload chat
    """
    if ctx.invoked_subcommand is not None:
        return
    if not rack or not workload:
        typer.echo(ctx.get_help())
        fail("give --rack and --workload (and optionally --model, --precision)", code=2)
    if precision is not None and precision not in ("bf16", "fp8", "fp4"):
        fail(f"--precision must be bf16, fp8 or fp4 (got '{precision}')", code=2)
    if sweep is not None and sweep != "batch":
        fail(f"--sweep supports only 'batch' (got '{sweep}')", code=2)
    from dcplan.cli.catalog_cmd import lookup_all
    from dcplan.perf import batch_sweep, rack_performance

    catalog = STATE.catalog()
    # Unknown ids first, all at once, with the closest ids as suggestions.
    lookup_all(catalog, [("racks", rack), ("workloads", workload), ("models", model)])
    cal = _calibration(calibration, catalog)
    perf_ = rack_performance(catalog, rack, model, workload, precision, cal)
    model_id = model or catalog.get("workloads", workload).model
    if not perf_.fits:
        # The reason once, on stderr (the JSON on stdout carries it for scripts).
        if json_out:
            emit_json({"operating_point": perf_.as_dict(), "sweep": []} if sweep
                      else perf_.as_dict())
            raise typer.Exit(1)
        fail(f"{model_id} does not fit {rack} for workload '{workload}' "
             f"({perf_.precision}): {perf_.reason}")
    if sweep:
        rows = batch_sweep(catalog, rack, model, workload, precision, cal)
        if json_out:
            emit_json({"operating_point": perf_.as_dict(), "sweep": rows})
        else:
            _print_point(perf_, rack, model_id, workload)
            typer.echo("")
            typer.echo(format_table(rows))
        return
    if json_out:
        emit_json(perf_.as_dict())
    else:
        _print_point(perf_, rack, model_id, workload)


def _print_point(p, rack: str, model: str, workload: str) -> None:
    typer.echo(f"{rack} serving {model} for workload '{workload}' "
               f"({p.precision}, {p.mode})")
    n = p.replicas_per_rack
    acc = "accelerator" if p.replica_gpus == 1 else "accelerators"
    replica = f"{n:g} replica{'s' * (n != 1)} of {p.replica_gpus} {acc} per rack"
    if p.mode == "disaggregated":
        replica = f"decode pool: {replica}"
        bottleneck = (f"prefill pool ({p.prefill_share:.0%} of accelerators): "
                      f"{p.prefill_bottleneck}; decode pool ({1 - p.prefill_share:.0%}): "
                      f"{p.decode_bottleneck}")
    else:
        bottleneck = f"{p.bottleneck} (step bound: {p.step_bound})"
    lines = [
        ("goodput per rack", f"{p.goodput_tokens_per_s:,.0f} tokens/s (input + output)"),
        ("goodput per accelerator", f"{p.goodput_tokens_per_s_per_accelerator:,.0f} tokens/s"),
        ("output per rack", f"{p.output_tokens_per_s:,.0f} tokens/s"),
        ("replica", replica),
        ("batch", f"{p.batch:,} sequences per replica (memory allows {p.max_batch:,})"),
        ("TTFT", f"{p.ttft_s:.3g} s"),
        ("TPOT", f"{p.tpot_ms:.3g} ms"),
        ("bottleneck", bottleneck),
        ("rack power", f"{p.power_kw:,.1f} kW (idle {p.idle_power_kw:,.1f} kW)"),
        ("tokens per joule", f"{p.tokens_per_joule:,.2f}"),
        ("tokens/s per MW IT", f"{p.tokens_per_s_per_mw:,.0f}"),
    ]
    if p.mode == "disaggregated":
        lines += [
            ("prefill pool", f"{p.prefill_tokens_per_s:,.0f} input tokens/s per rack, "
                             f"replicas of {p.prefill_replica_gpus}"),
            ("decode pool", f"{p.decode_tokens_per_s:,.0f} output tokens/s per rack"),
            ("prefill:decode racks", f"{p.prefill_racks_per_decode_rack:.3g} : 1"),
        ]
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        typer.echo(f"  {k.ljust(width)}  {v}")


_ROW_COLUMNS = ["row", "hardware", "model", "precision", "phase", "gpus", "batch",
                "measured_tokens_per_s", "predicted_tokens_per_s", "tokens_error_pct",
                "measured_power_w", "predicted_power_w", "power_error_pct"]


def _fmt_summary(label: str, s: dict) -> str:
    if not s["rows"]:
        return f"{label}: no rows with a measured value"
    return (f"{label}: median |error| {s['median_abs_pct']:.1f}%, max |error| "
            f"{s['max_abs_pct']:.1f}% over {s['rows']} rows")


@perf_app.command("validate")
@handle_errors
def validate(
    measurements: Annotated[Path, typer.Argument(help="Measurement CSV.")],
    models: ModelsOpt = None,
    calibration: CalibOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Predicted vs measured throughput and power for every row of a measurement CSV."""
    from dcplan.perf.calibration import evaluate_rows, report
    from dcplan.perf.measurements import load_measurements, with_models
    from dcplan.perf.params import defaults_path, load_perf_defaults

    catalog = with_models(STATE.catalog(), models)
    rows = load_measurements(measurements, catalog)
    cal = _calibration(calibration, catalog)
    results = evaluate_rows(rows, catalog, load_perf_defaults(defaults_path(catalog)), cal)
    rep = report(results)
    if json_out:
        emit_json({"rows": [r.as_dict() for r in results], "summary": rep,
                   "calibration": str(calibration) if calibration else None})
        return
    typer.echo(format_table([r.as_dict() for r in results], _ROW_COLUMNS))
    typer.echo("")
    typer.echo(_fmt_summary("throughput", rep["throughput"]))
    typer.echo(_fmt_summary("power", rep["power"]))


@perf_app.command("calibrate")
@handle_errors
def calibrate_cmd(
    measurements: Annotated[Path, typer.Argument(help="Measurement CSV.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Calibration YAML to write.",
                                         dir_okay=False)],
    models: ModelsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Fit efficiency factors, step overhead and power curve per accelerator."""
    from dcplan.errors import display_path
    from dcplan.perf.calibration import calibrate, evaluate_rows, report
    from dcplan.perf.measurements import load_measurements, with_models
    from dcplan.perf.params import defaults_path, load_perf_defaults, save_calibration

    catalog = with_models(STATE.catalog(), models)
    rows = load_measurements(measurements, catalog)
    defaults = load_perf_defaults(defaults_path(catalog))
    before = evaluate_rows(rows, catalog, defaults)
    cal = calibrate(rows, catalog, defaults, source=display_path(measurements))
    after = evaluate_rows(rows, catalog, defaults, cal)
    rep_before, rep_after = report(before), report(after)
    per_hw: dict[str, int] = {}
    for m in rows:
        per_hw[m.hardware] = per_hw.get(m.hardware, 0) + 1
    fit = {
        "rows": len(rows),
        "throughput_median_abs_pct_before": _r(rep_before["throughput"]["median_abs_pct"]),
        "throughput_median_abs_pct_after": _r(rep_after["throughput"]["median_abs_pct"]),
        "throughput_max_abs_pct_after": _r(rep_after["throughput"]["max_abs_pct"]),
        "power_rows": rep_after["power"]["rows"],
    }
    save_calibration(cal, output, per_hw, fit)
    table = []
    for b, a in zip(before, after, strict=True):
        d = a.as_dict()
        d["error_before_pct"] = b.tokens_error_pct
        d["error_after_pct"] = a.tokens_error_pct
        table.append(d)
    if json_out:
        emit_json({"output": str(output), "fit": fit, "rows": table,
                   "hardware": {h: dict(p) for h, p in cal.hardware},
                   "default": dict(cal.default)})
        return
    typer.echo(format_table(table, ["row", "hardware", "model", "phase", "gpus", "batch",
                                    "measured_tokens_per_s", "predicted_tokens_per_s",
                                    "error_before_pct", "error_after_pct", "power_error_pct"]))
    typer.echo("")
    typer.echo("before: " + _fmt_summary("throughput", rep_before["throughput"]))
    typer.echo("after:  " + _fmt_summary("throughput", rep_after["throughput"]))
    typer.echo("after:  " + _fmt_summary("power", rep_after["power"]))
    params = [{"hardware": h, **dict(p)} for h, p in cal.hardware]
    typer.echo("")
    typer.echo(format_table(params))
    typer.echo(f"\nwrote {output}")


def _r(v):
    return None if v is None else round(float(v), 3)
