"""``dcplan perf``: goodput and power of a rack; frontier; calibration and validation."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Annotated, Any

import typer

from dcplan.cli.app import app
from dcplan.cli.common import (
    STATE,
    check_outputs,
    echo,
    emit_json,
    fail,
    format_table,
    handle_errors,
    note,
)
from dcplan.cli.complete import ids_of
from dcplan.defaults import FRONTIER_PERCENTILE, MAX_BATCH_PER_RANK_MAX

perf_app = typer.Typer(
    help="Performance model: goodput tokens/s and power per rack, the throughput-"
         "interactivity frontier; calibrate and validate it against measurements.",
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
    typer.Option("--calibration", help="Calibration file written by 'dcplan perf calibrate' "
                                       "(default: perf_calibration.yaml next to "
                                       "perf_defaults.yaml; 'none': a-priori defaults)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
PrecisionOpt = Annotated[str | None, typer.Option(
    "--precision", help="bf16, fp8 or fp4 (default: the workload's; fp8 without one).")]
SpecOpt = Annotated[str | None, typer.Option(
    "--speculative", help="none, mtp (the model's multi-token prediction) or draft.")]
AcceptOpt = Annotated[float | None, typer.Option(
    "--acceptance", help="Per-token acceptance of drafted tokens, 0..1 (default: "
                         "perf_defaults.yaml).")]
TpOpt = Annotated[int | None, typer.Option(
    "--tp", help="Fix the tensor parallelism (with --ep, --dp-attention); default: search.")]
EpOpt = Annotated[int | None, typer.Option("--ep", help="Fix the expert parallelism (MoE).")]
DpOpt = Annotated[bool, typer.Option(
    "--dp-attention", help="With --tp/--ep: data-parallel attention (every GPU its own).")]
DateOpt = Annotated[str | None, typer.Option(
    "--date", metavar="YYYY-MM", help="Serving software as of this month (its last day) or "
                                      "YYYY-MM-DD: fitted engine offsets and date trend "
                                      "(default: the latest fitted run).")]
EngineOpt = Annotated[str | None, typer.Option(
    "--engine", help="Serving engine of the calibration's software section (sglang, trt, "
                     "atom...; default: each vendor's planning engine).")]
LengthOpt = Annotated[str | None, typer.Option(
    "--length-dist", metavar="DIST",
    help="Request lengths around the means, input and output tokens: fixed, "
         "uniform:MIN_FRAC (e.g. uniform:0.8, as the InferenceX client draws them), "
         "lognormal:CV or lognormal:INPUT_CV,OUTPUT_CV (default: the workload's; fixed "
         "without one).")]
TrendOpt = Annotated[str, typer.Option(
    "--software-trend", help="After the latest fitted run: 'hold' its level or "
                             "'extrapolate' the fitted trend.")]
MaxBatchOpt = Annotated[int | None, typer.Option(
    "--max-batch", min=1, max=MAX_BATCH_PER_RANK_MAX,
    help="Engine's running-request cap per attention-DP rank (TensorRT-LLM max_batch_size, "
         "SGLang --max-running-requests, vLLM --max-num-seqs); Poisson arrivals that find "
         "every slot taken wait for one. Default: perf_defaults.yaml "
         "serving.max_batch_per_rank; a plan takes the scenario's "
         "serving.max_batch_per_rank.")]

RackOpt = Annotated[str, typer.Option("--rack", help="Rack id.",
                                       autocompletion=ids_of("racks"))]
PowerCapOpt = Annotated[str | None, typer.Option(
    "--power-cap", metavar="FRACTION|KW",
    help="Cap every accelerator's board power: a fraction 0 < f <= 1 of its max power "
         "(0.8, or 80%), or the rack's IT power at the cap with a unit (36kW, 36 kW); "
         "default: uncapped. Goodput, rack power and tokens per joule are at that cap "
         "(catalogs/power_curves.yaml; docs/perf.md, Power caps).")]

_NO_LIMIT = 1e9


def _power_cap(text: str | None, catalog, rack: str, inputs) -> tuple[float, Any]:
    """``--power-cap`` as (fraction of max power [-], the accelerator's curve or None).

    A plain number or a percentage is a fraction of the accelerator's max power; a
    number with ``kW`` the rack's IT power at the cap, converted with
    :func:`dcplan.perf.power.rack_power_at_cap_kw` (the non-accelerator power stays).
    Bad values exit 1 with one line naming the option.
    """
    import re

    from dcplan.errors import InputError
    from dcplan.perf.power import check_power_cap

    if text is None:
        return 1.0, None
    rack_ = catalog.get("racks", rack)
    acc = catalog.get("accelerators", rack_.accelerator)
    m = re.fullmatch(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(%|kw|KW|kW|Kw)?\s*",
                     text)
    if not m:
        fail(f"--power-cap must be a fraction (0.8), a percentage (80%) or rack kW (36kW), "
             f"got '{text}'")
    value, unit = float(m.group(1)), (m.group(2) or "").lower()
    if unit == "%":
        frac = value / 100.0
    elif unit == "kw":
        n = rack_.accelerators_per_rack
        other = max(rack_.it_power_max_kw - n * acc.max_power_w / 1e3, 0.0)
        frac = (value - other) / (n * acc.max_power_w / 1e3)
        if not 0.0 < frac <= 1.0 + 1e-9:
            fail(f"--power-cap {text}: {rack} draws {other:,.1f} kW besides its "
                 f"accelerators and {rack_.it_power_max_kw:,.1f} kW at full power; give "
                 f"a rack power between those")
        frac = min(frac, 1.0)
    else:
        frac = value
    if not (math.isfinite(frac) and 0.0 < frac <= 1.0):
        fail(f"--power-cap must be a fraction 0 < f <= 1 of the accelerator's max power "
             f"(or a percentage up to 100%), got '{text}'")
    if frac >= 1.0:
        return 1.0, None
    try:
        curve = inputs.power_curve(acc.id)
    except InputError:
        fail(f"--power-cap: no power curve for {acc.id} in power_curves.yaml beside "
             f"perf_defaults.yaml; add one to model a cap on it")
    problem = check_power_cap(frac, curve)
    if problem:
        fail(f"--power-cap {text}: {problem}")
    return frac, curve


def _perf_inputs(path: Path | None, catalog, date: str | None = None,
                 engine: str | None = None, trend: str = "hold", dated: bool = True,
                 benchmarks: bool = False):
    """The performance defaults and calibration: the file given, the default, or none.

    One call of :func:`dcplan.perf.params.load_perf_inputs` per command. ``dated``: the
    calibration read with ``engine``'s software as of ``date``
    (:func:`dcplan.perf.software.as_of`; the latest fitted run by default); else the
    stored values (``perf validate`` moves them to each measured run itself).
    ``benchmarks``: also what the measurement files' benchmarks ran (``perf validate``
    and ``calibrate`` predict measurement rows with it).
    """
    from dataclasses import replace

    from dcplan.perf.params import load_perf_inputs
    from dcplan.perf.software import as_of

    inputs = load_perf_inputs(catalog, path,
                              known_accelerators=catalog.entries.get("accelerators", {}),
                              benchmarks=benchmarks)
    steep = inputs.calibration.steep_stop() if inputs.calibration is not None else None
    if steep:
        note(steep)
    if dated:
        inputs = replace(inputs, calibration=as_of(inputs.calibration, date, engine, trend))
    return inputs


def _software(cal, catalog, rack: str) -> dict[str, Any]:
    """What software the answer for ``rack`` assumes (engine, date, basis, one line)."""
    from dcplan.perf.software import describe

    acc = catalog.get("accelerators", catalog.get("racks", rack).accelerator)
    return describe(cal or None, acc.vendor)


def _clean(obj: Any) -> Any:
    """JSON-safe copy: NaN and infinities become None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    return obj


def _layout(tp: int | None, ep: int | None, dp_attention: bool):
    from dcplan.perf import Layout

    if tp is None and ep is None:
        if dp_attention:
            fail("--dp-attention needs --tp or --ep (the instance size)", code=2)
        return None
    # None: not given (1); 0 stays 0, so that the layout check refuses it
    return Layout(tp=1 if tp is None else tp, ep=1 if ep is None else ep,
                  dp_attention=dp_attention)


def _check_choice(name: str, value: str | None, allowed: tuple[str, ...]) -> None:
    if value is not None and value not in allowed:
        fail(f"{name} must be {', '.join(allowed[:-1])} or {allowed[-1]} (got '{value}')", code=2)


def _build_workload(catalog, workload: str | None, model: str | None, opts: dict):
    """Return the workload to evaluate.

    A catalog entry with the options applied, or one made from --input-tokens and
    --output-tokens.
    """
    from pydantic import ValidationError

    from dcplan.catalog import pydantic_problems
    from dcplan.errors import InputError
    from dcplan.schema import Workload

    changes: dict[str, Any] = {}
    for key, field in (("input_tokens", "input_tokens_mean"),
                       ("output_tokens", "output_tokens_mean"), ("ttft_s", "ttft_s"),
                       ("tpot_ms", "tpot_ms"), ("percentile", "percentile"),
                       ("speculative", "speculative"), ("acceptance", "acceptance_frac"),
                       ("cache_hit", "cache_hit_frac"), ("mode", "mode")):
        if opts.get(key) is not None:
            changes[field] = opts[key]
    if opts.get("concurrency") is not None:
        changes["arrival"] = "closed_loop"
        changes["concurrency"] = opts["concurrency"]
    if opts.get("offline"):
        changes["offline"] = True
    if opts.get("precision"):
        changes["precision"] = opts["precision"]
    if opts.get("length_dist") is not None:
        changes["length_distribution"] = _length_option(opts["length_dist"])
    if workload:
        base = catalog.get("workloads", workload).model_dump()
        if model:
            base["model"] = model
        base.update(changes)
    else:
        if not model:
            fail("give --workload, or --model with --input-tokens and --output-tokens", code=2)
        missing = [o for o, k in (("--input-tokens", "input_tokens_mean"),
                                  ("--output-tokens", "output_tokens_mean")) if k not in changes]
        if missing:
            fail(f"without --workload give {' and '.join(missing)}", code=2)
        base = {"id": "command_line", "name": "workload from the command line", "model": model,
                "cache_hit_frac": 0.0, "precision": "fp8", "ttft_s": _NO_LIMIT,
                "tpot_ms": _NO_LIMIT, "source": "dcplan perf options", "as_of": "2026-01",
                **changes}
    try:
        return Workload.model_validate(base)
    except ValidationError as exc:
        raise InputError(pydantic_problems(exc, Workload, "command line", base["id"], None)) \
            from None


def _length_option(text: str):
    """The ``--length-dist`` value as a :class:`~dcplan.lengths.LengthDist` (exit 2 if bad)."""
    from dcplan.lengths import parse_length_option

    try:
        return parse_length_option(text)
    except ValueError as exc:
        fail(f"--length-dist {exc}", code=2)


def _lengths_record(wl, given: bool) -> dict[str, Any]:
    """Which length distribution an answer assumes, and where it comes from."""
    from dcplan.perf.goodput import workload_lengths

    dist = workload_lengths(wl)
    basis = ("--length-dist" if given else
             f"workload '{wl.id}'" if wl.length_distribution is not None else
             "default: fixed lengths (the workload gives none)")
    return {**dist.as_dict(), "text": dist.describe(), "basis": basis}


@perf_app.callback()
@handle_errors
def perf(
    ctx: typer.Context,
    rack: Annotated[str | None, typer.Option("--rack", help="Rack id.",
                                             autocompletion=ids_of("racks"))] = None,
    model: Annotated[str | None, typer.Option(
        "--model", help="Model id (default: the workload's model).",
        autocompletion=ids_of("models"))] = None,
    workload: Annotated[str | None, typer.Option("--workload", help="Workload id.",
                                                 autocompletion=ids_of("workloads"))] = None,
    input_tokens: Annotated[float | None, typer.Option(
        "--input-tokens", help="Prompt tokens per request (overrides the workload's).")] = None,
    output_tokens: Annotated[float | None, typer.Option(
        "--output-tokens", help="Generated tokens per request.")] = None,
    cache_hit: Annotated[float | None, typer.Option(
        "--cache-hit", help="Share of prompt tokens from the prefix cache, 0..1.")] = None,
    ttft_s: Annotated[float | None, typer.Option(
        "--ttft-s", help="TTFT limit [s] at --percentile (none without a workload).")] = None,
    tpot_ms: Annotated[float | None, typer.Option(
        "--tpot-ms", help="TPOT limit [ms] at --percentile.")] = None,
    percentile: Annotated[float | None, typer.Option(
        "--percentile", help="Percentile the limits apply to, 50..99.99 (default 99).")] = None,
    speculative: SpecOpt = None,
    acceptance: AcceptOpt = None,
    concurrency: Annotated[int | None, typer.Option(
        "--concurrency", help="Closed loop: requests in flight per instance (as AIPerf and "
                              "InferenceX run); default: open-loop Poisson arrivals.")] = None,
    offline: Annotated[bool, typer.Option(
        "--offline", help="No latency limits: throughput at the largest batch memory "
                          "allows.")] = False,
    mode: Annotated[str | None, typer.Option(
        "--mode", help="aggregated or disaggregated (default: the workload's).")] = None,
    precision: PrecisionOpt = None,
    length_dist: LengthOpt = None,
    tp: TpOpt = None,
    ep: EpOpt = None,
    dp_attention: DpOpt = False,
    calibration: CalibOpt = None,
    date: DateOpt = None,
    engine: EngineOpt = None,
    software_trend: TrendOpt = "hold",
    sweep: Annotated[str | None, typer.Option(
        "--sweep", help="'batch': print the throughput/latency curve over batch.")] = None,
    power_cap: PowerCapOpt = None,
    max_batch: MaxBatchOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Goodput tokens/s and power of one rack serving a workload under its SLO.

    Examples: dcplan perf --rack gb200_nvl72 --workload chat;
    dcplan perf --rack gb200_nvl72 --model deepseek_r1 --input-tokens 8192
    --output-tokens 1024 --tpot-ms 20 --ttft-s 3 --percentile 50 --speculative mtp
    """
    if ctx.invoked_subcommand is not None:
        return
    if not rack or not (workload or model):
        typer.echo(ctx.get_help())
        fail("give --rack and --workload, or --rack, --model, --input-tokens and "
             "--output-tokens", code=2)
    _check_choice("--precision", precision, ("bf16", "fp8", "fp4"))
    _check_choice("--speculative", speculative, ("none", "mtp", "draft"))
    _check_choice("--mode", mode, ("aggregated", "disaggregated"))
    if sweep is not None and sweep != "batch":
        fail(f"--sweep supports only 'batch' (got '{sweep}')", code=2)
    layout = _layout(tp, ep, dp_attention)
    from dcplan.cli.catalog_cmd import lookup_all
    from dcplan.perf import batch_sweep, workload_performance

    catalog = STATE.catalog()
    # Unknown ids first, all at once, with the closest ids as suggestions.
    lookup_all(catalog, [("racks", rack), ("workloads", workload), ("models", model)])
    wl = _build_workload(catalog, workload, model, dict(
        input_tokens=input_tokens, output_tokens=output_tokens, ttft_s=ttft_s, tpot_ms=tpot_ms,
        percentile=percentile, speculative=speculative, acceptance=acceptance,
        cache_hit=cache_hit, mode=mode, concurrency=concurrency, offline=offline,
        precision=precision, length_dist=length_dist))
    if offline and (ttft_s is not None or tpot_ms is not None):
        note("--offline has no latency limits: --ttft-s and --tpot-ms are not applied")
    if acceptance is not None and wl.speculative.value == "none":
        note("--acceptance is not applied: no speculative decoding (--speculative mtp or "
             "draft uses it)")
    _check_choice("--software-trend", software_trend, ("hold", "extrapolate"))
    pin = _perf_inputs(calibration, catalog, date, engine, software_trend)
    defaults, cal = pin.defaults.with_max_batch(max_batch), pin.calibration
    cap, curve = _power_cap(power_cap, catalog, rack, pin)
    if cap < 1.0 and sweep:
        fail("--sweep batch and --power-cap do not go together; use one of them", code=2)
    perf_ = workload_performance(catalog, rack, model, wl, precision, layout,
                                 defaults=defaults, calibration=cal, power_cap_frac=cap,
                                 power_curve=curve)
    model_id = model or wl.model
    soft = _software(cal, catalog, rack)
    lengths = _lengths_record(wl, length_dist is not None)
    record = {**perf_.as_dict(), "configuration": _configuration(perf_),
              "workload": _workload_record(wl), "software": soft,
              "length_distribution": lengths,
              "max_batch_per_rank": defaults.serving.max_batch_per_rank}
    if not perf_.fits:
        # The reason once, on stderr (the JSON on stdout carries it for scripts).
        if json_out:
            emit_json(_clean({"operating_point": record, "sweep": []} if sweep else record))
            raise typer.Exit(1)
        fail(f"{model_id} does not fit {rack} for workload '{wl.id}' "
             f"({perf_.precision}): {perf_.reason}")
    if sweep:
        rows = batch_sweep(catalog, rack, model, wl, precision, layout, defaults=defaults,
                           calibration=cal)
        if json_out:
            emit_json(_clean({"operating_point": record, "sweep": rows}))
        else:
            _print_point(perf_, rack, model_id, wl, soft, lengths, max_batch)
            typer.echo("")
            typer.echo(format_table(rows))
        return
    if json_out:
        emit_json(_clean(record))
    else:
        _print_point(perf_, rack, model_id, wl, soft, lengths, max_batch)


def _configuration(p) -> dict[str, Any]:
    return {"parallel": p.parallel, "replica_gpus": p.replica_gpus,
            "attention_tp": p.attention_tp, "attention_dp": p.attention_dp,
            "expert_parallel": p.expert_parallel, "prefill_parallel": p.prefill_parallel,
            "prefill_replica_gpus": p.prefill_replica_gpus,
            "prefill_handover_streams": p.prefill_handover_streams, "batch": p.batch,
            "speculative": p.speculative, "draft_tokens": p.draft_tokens,
            "acceptance_frac": p.acceptance_frac, "mode": p.mode, "precision": p.precision}


def _workload_record(wl) -> dict[str, Any]:
    d = wl.model_dump(mode="json", exclude={"estimates", "notes", "source", "as_of", "name"})
    for k in ("ttft_s", "tpot_ms"):
        if d.get(k) and d[k] >= _NO_LIMIT:
            d[k] = None
    return d


def _limit(value: float, unit: str) -> str:
    return "none" if value >= _NO_LIMIT else f"{value:g} {unit}"


def _print_point(p, rack: str, model: str, wl, software: dict[str, Any],
                 lengths: dict[str, Any] | None = None, max_batch: int | None = None) -> None:
    loop = (f"closed loop, {wl.concurrency} in flight per instance"
            if wl.arrival.value == "closed_loop" else "Poisson arrivals")
    slo = ("offline (no latency limits)" if wl.offline else
           f"p{wl.percentile:g} TTFT {_limit(wl.ttft_s, 's')}, TPOT {_limit(wl.tpot_ms, 'ms')}")
    typer.echo(f"{rack} serving {model} for workload '{wl.id}' ({p.precision}, {p.mode}; "
               f"{wl.input_tokens_mean:,.6g} input / {wl.output_tokens_mean:,.6g} output tokens; "
               f"{slo}; {loop})")
    n = p.replicas_per_rack
    acc = "accelerator" if p.replica_gpus == 1 else "accelerators"
    replica = f"{n:g} replica{'s' * (n != 1)} of {p.replica_gpus} {acc} per rack, {p.parallel}"
    if p.mode == "disaggregated":
        replica = f"decode pool: {replica}"
        bottleneck = (f"prefill pool ({p.prefill_share:.0%} of accelerators): "
                      f"{p.prefill_bottleneck}; decode pool ({1 - p.prefill_share:.0%}): "
                      f"{p.decode_bottleneck}")
    else:
        bottleneck = f"{p.bottleneck} (step bound: {p.step_bound})"
    spec = ("none" if p.speculative == "none" else
            f"{p.speculative}, {p.draft_tokens} draft token{'s' * (p.draft_tokens != 1)} at "
            "acceptance "
            f"{p.acceptance_frac:.2f}: {p.tokens_per_step:.2f} tokens per step")
    lines = [
        ("goodput per rack", f"{p.goodput_tokens_per_s:,.0f} tokens/s (input + output)"),
        ("output per rack", f"{p.output_tokens_per_s:,.0f} output tokens/s "
                            f"(input {p.input_tokens_per_s:,.0f})"),
        ("per accelerator", f"{p.output_tokens_per_s_per_gpu:,.0f} output / "
                            f"{p.total_tokens_per_s_per_gpu:,.0f} total tokens/s"),
        ("per user", f"{p.tokens_per_s_per_user:,.1f} output tokens/s (median)"),
        ("replica", replica),
        ("batch", f"{p.batch:,} sequences per replica ("
                  + (f"memory and --max-batch {max_batch:,} per attention-DP rank allow "
                     if max_batch is not None else "memory allows ")
                  + f"{p.max_batch:,})"),
        ("speculative", spec),
        (f"TTFT p{p.percentile:g}", f"{p.ttft_s:.3g} s (median {p.ttft_median_s:.3g} s)"),
        (f"TPOT p{p.percentile:g}", f"{p.tpot_ms:.3g} ms (median {p.tpot_median_ms:.3g} ms)"),
        ("bottleneck", bottleneck),
        ("rack power", f"{p.power_kw:,.1f} kW at the operating point, p99 "
                       f"{p.power_p99_kw:,.1f} kW, nameplate {p.power_nameplate_kw:,.1f} kW "
                       f"(idle {p.idle_power_kw:,.1f} kW)"),
        *([("power cap", f"{p.power_cap_frac:.3g} of each accelerator's max power: rack "
                         f"{p.power_at_cap_kw:,.1f} kW at the cap; core clock prefill "
                         f"{p.prefill_clock_frac:.0%}, decode {p.decode_clock_frac:.0%} "
                         "of uncapped")] if p.power_cap_frac < 1.0 else []),
        ("tokens per joule", f"{p.output_tokens_per_joule:,.3g} output, "
                             f"{p.total_tokens_per_joule:,.3g} total"),
        ("tokens/s per MW IT", f"{p.output_tokens_per_s_per_mw:,.0f} output, "
                               f"{p.total_tokens_per_s_per_mw:,.0f} total"),
        ("software", software["text"]),
    ]
    if lengths is not None:
        lines.append(("request lengths", f"{lengths['text']}; {lengths['basis']}"))
    if p.mode == "disaggregated":
        lines += [
            ("prefill pool", f"{p.prefill_tokens_per_s:,.0f} input tokens/s per rack, "
                             f"replicas of {p.prefill_replica_gpus} ({p.prefill_parallel}), "
                             f"queue at {p.prefill_utilisation:.0%}, KV hand-over on "
                             f"{p.prefill_handover_streams} stream"
                             f"{'s' if p.prefill_handover_streams != 1 else ''} per replica"),
            ("decode pool", f"{p.decode_tokens_per_s:,.0f} output tokens/s per rack"),
            ("prefill:decode racks", f"{p.prefill_racks_per_decode_rack:.3g} : 1"),
        ]
    if p.extrapolation:
        lines.append(("extrapolation", p.extrapolation))
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        typer.echo(f"  {k.ljust(width)}  {v}")


# ----------------------------------------------------------------- frontier

#: Frontier columns left out first when the table does not fit the terminal, in order.
FRONTIER_OPTIONAL = ["draft_tokens", "total_tokens_per_s_per_gpu", "median_ttft_s"]


@perf_app.command("frontier")
@handle_errors
def frontier_cmd(
    rack: RackOpt,
    model: Annotated[str, typer.Option("--model", help="Model id.",
                                       autocompletion=ids_of("models"))],
    input_tokens: Annotated[float, typer.Option("--input-tokens", help="Prompt tokens.")],
    output_tokens: Annotated[float, typer.Option("--output-tokens", help="Generated tokens.")],
    precision: PrecisionOpt = None,
    speculative: SpecOpt = None,
    acceptance: AcceptOpt = None,
    ttft_s: Annotated[float | None, typer.Option(
        "--ttft-s", help="Keep only points whose TTFT at --percentile meets this [s].")] = None,
    percentile: Annotated[float, typer.Option(
        "--percentile", help="Percentile of --ttft-s.")] = FRONTIER_PERCENTILE,
    mode: Annotated[str | None, typer.Option(
        "--mode", help="aggregated or disaggregated (default: both).")] = None,
    length_dist: LengthOpt = None,
    calibration: CalibOpt = None,
    date: DateOpt = None,
    engine: EngineOpt = None,
    software_trend: TrendOpt = "hold",
    png: Annotated[Path | None, typer.Option("--png", help="Draw the frontier to this PNG.",
                                             dir_okay=False)] = None,
    power_cap: PowerCapOpt = None,
    max_batch: MaxBatchOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Pareto frontier of output tokens/s per GPU against output tokens/s per user.

    Every deployable layout, draft length and batch (aggregated and disaggregated) is a
    point; the frontier keeps the ones nothing beats on both axes, each with its
    configuration. Example: dcplan perf frontier --rack gb200_nvl72 --model deepseek_r1
    --input-tokens 8192 --output-tokens 1024 --precision fp4 --png r1.png
    """
    _check_choice("--precision", precision, ("bf16", "fp8", "fp4"))
    _check_choice("--speculative", speculative, ("none", "mtp", "draft"))
    _check_choice("--mode", mode, ("aggregated", "disaggregated"))
    if png is not None:
        check_outputs(files={"--png": png})
    from dcplan.cli.catalog_cmd import lookup_all
    from dcplan.perf.frontier import frontier, plot_frontier

    catalog = STATE.catalog()
    lookup_all(catalog, [("racks", rack), ("models", model)])
    if ttft_s is None and percentile != FRONTIER_PERCENTILE:
        note("--percentile applies to --ttft-s; without --ttft-s it is not applied")
    if acceptance is not None and (speculative or "none") == "none":
        note("--acceptance is not applied: no speculative decoding (--speculative mtp or "
             "draft uses it)")
    # the numbers are checked as a workload's (clear errors naming the option's field)
    _build_workload(catalog, None, model, {
        "input_tokens": input_tokens, "output_tokens": output_tokens, "ttft_s": ttft_s,
        "percentile": percentile, "speculative": speculative, "acceptance": acceptance,
        "precision": precision})
    lengths = _length_option(length_dist) if length_dist is not None else None
    _check_choice("--software-trend", software_trend, ("hold", "extrapolate"))
    pin = _perf_inputs(calibration, catalog, date, engine, software_trend)
    soft = _software(pin.calibration, catalog, rack)
    modes = (mode,) if mode else ("aggregated", "disaggregated")
    cap, curve = _power_cap(power_cap, catalog, rack, pin)
    defaults = pin.defaults.with_max_batch(max_batch)
    fr = frontier(catalog, rack, model, input_tokens, output_tokens, precision,
                  speculative or "none", acceptance, ttft_s, percentile, modes,
                  lengths=lengths, defaults=defaults, calibration=pin.calibration,
                  power_cap_frac=cap, power_curve=curve)
    if fr.reason:
        if json_out:
            emit_json(_clean(fr.as_dict() | {"software": soft}))
            raise typer.Exit(1)
        fail(f"no frontier for {model} on {rack} ({fr.precision}): {fr.reason}")
    caps = "; ".join(
        ([f"power cap {cap:.3g} of max accelerator power"] if cap < 1.0 else [])
        + ([f"at most {max_batch:,} running requests per attention-DP rank (--max-batch)"]
           if max_batch is not None else []))
    if png is not None:
        wide = (f"{fr.extrapolated_points} of {len(fr.points)} frontier points extrapolate "
                "the fitted runs (--json says which and why)"
                if fr.extrapolated_points else "")
        plot_frontier(fr, png, note="\n".join(t for t in (caps, wide) if t))
    if json_out:
        emit_json(_clean(fr.as_dict() | {"software": soft}
                         | ({"png": str(png)} if png else {})))
        return
    echo(f"{model} on {rack} ({fr.precision}), {input_tokens:,.0f} input / "
               f"{output_tokens:,.0f} output tokens: {len(fr.points)} frontier points; "
               f"software {soft['text']}" + (f"; {caps}" if caps else ""))
    if fr.extrapolation:
        echo(f"extrapolation: {fr.extrapolation}")
    echo(f"request lengths: {fr.length_distribution.describe()}; TTFT: "
               + (f"p{percentile:g} at most {ttft_s:g} s" if ttft_s else fr.ttft_bound)
               + " (disaggregated points pair each decode point with its own prefill "
                 "point)")
    typer.echo(format_table(fr.points, ["tokens_per_s_per_user", "output_tokens_per_s_per_gpu",
                                        "total_tokens_per_s_per_gpu", "mode", "parallel",
                                        "prefill_parallel", "batch", "draft_tokens",
                                        "median_ttft_s"],
                            optional=FRONTIER_OPTIONAL,
                            hint="--json shows every field, or a wider terminal (COLUMNS)"))
    if png is not None:
        typer.echo(f"\nwrote {png}")


# ------------------------------------------------------------- power curve


@perf_app.command("power-curve")
@handle_errors
def power_curve_cmd(
    rack: RackOpt,
    workload: Annotated[str, typer.Option("--workload", help="Workload id.",
                                          autocompletion=ids_of("workloads"))],
    model: Annotated[str | None, typer.Option(
        "--model", help="Model id (default: the workload's model).",
        autocompletion=ids_of("models"))] = None,
    precision: PrecisionOpt = None,
    calibration: CalibOpt = None,
    date: DateOpt = None,
    engine: EngineOpt = None,
    software_trend: TrendOpt = "hold",
    png: Annotated[Path | None, typer.Option(
        "--png", help="Draw goodput and tokens per joule against the cap to this PNG.",
        dir_okay=False)] = None,
    json_out: JsonOpt = False,
) -> None:
    """Goodput, rack power and tokens per joule against the accelerators' power cap.

    Caps 1.0, 0.95, ... down to the lowest cap of the accelerator's power curve
    (catalogs/power_curves.yaml), each at its best operating point under the workload's
    SLO. Example: dcplan perf power-curve --rack hgx_h200 --workload chat --png cap.png
    """
    _check_choice("--precision", precision, ("bf16", "fp8", "fp4"))
    if png is not None:
        check_outputs(files={"--png": png})
    from dcplan.cli.catalog_cmd import lookup_all
    from dcplan.perf.capcurve import cap_sweep, plot_cap_sweep

    catalog = STATE.catalog()
    lookup_all(catalog, [("racks", rack), ("workloads", workload), ("models", model)])
    _check_choice("--software-trend", software_trend, ("hold", "extrapolate"))
    pin = _perf_inputs(calibration, catalog, date, engine, software_trend)
    acc = catalog.get("racks", rack).accelerator
    curve = pin.power_curve(acc)
    wl = catalog.get("workloads", workload)
    model_id = model or wl.model
    rows = cap_sweep(catalog, rack, model, wl, curve, precision, defaults=pin.defaults,
                     calibration=pin.calibration)
    if not rows[0]["fits"]:
        fail(f"{model_id} does not fit {rack} for workload '{workload}' even uncapped")
    title = (f"{model_id} on {rack}, workload '{workload}': goodput and energy against the "
             f"power cap\n({acc}, power curve: {'estimate' if curve.estimate else 'measured'}, "
             f"catalogs/power_curves.yaml)")
    if png is not None:
        plot_cap_sweep(rows, png, title)
    if json_out:
        emit_json(_clean({"rack": rack, "model": model_id, "workload": workload,
                          "accelerator": acc, "curve_source": curve.source,
                          "curve_as_of": curve.as_of, "curve_estimate": curve.estimate,
                          "rows": rows} | ({"png": str(png)} if png else {})))
        return
    echo(title.replace("\n", " "))
    echo(f"power curve: {curve.source} (as of {curve.as_of})"
         + (f"; estimate: {curve.estimate}" if curve.estimate else ""))
    typer.echo(format_table(rows, ["power_cap_frac", "accelerator_cap_w",
                                   "rack_power_at_cap_kw", "goodput_tokens_per_s",
                                   "goodput_vs_uncapped_frac", "power_kw",
                                   "total_tokens_per_joule", "tokens_per_s_per_kw_at_cap",
                                   "prefill_clock_frac", "decode_clock_frac", "parallel"],
                            optional=["parallel", "decode_clock_frac", "prefill_clock_frac"],
                            hint="--json shows every field, or a wider terminal (COLUMNS)"))
    if png is not None:
        typer.echo(f"\nwrote {png}")


# ------------------------------------------------------- validate / calibrate

_PHASE_COLUMNS = ["row", "hardware", "model", "precision", "phase", "gpus", "batch",
                  "measured_tokens_per_s", "predicted_tokens_per_s", "tokens_error_pct",
                  "measured_power_w", "predicted_power_w", "power_error_pct", "flag"]
_SERVING_COLUMNS = ["row", "hardware", "precision", "input_tokens", "output_tokens",
                    "concurrency", "configuration", "measured_output_tokens_per_s_per_gpu",
                    "predicted_output_tokens_per_s_per_gpu", "output_tokens_error_pct",
                    "measured_median_tpot_ms", "predicted_median_tpot_ms", "tpot_error_pct",
                    "measured_median_ttft_s", "predicted_median_ttft_s", "ttft_error_pct",
                    "flag"]


def _fmt_summary(label: str, s: dict) -> str:
    if not s["rows"]:
        return f"{label}: no rows with a measured and predicted value"
    return (f"{label}: median |error| {s['median_abs_pct']:.1f}%, p90 {s['p90_abs_pct']:.1f}%, "
            f"max {s['max_abs_pct']:.1f}% over {s['rows']} rows, signed median "
            f"{s['median_signed_pct']:+.1f}%")


def _split_lines(splits: dict[str, list[dict]]) -> list[str]:
    """Lines of the error table by scale-up domain and requests in flight.

    One column per figure (``throughput``, ``ttft``), one line per group of
    :func:`dcplan.perf.calibration.error_groups`; the domain x band groups only where
    the rows span both domain classes (else they repeat the bands).
    """
    names = {"throughput": "output tokens/s per GPU", "tpot": "median TPOT",
             "ttft": "median TTFT"}
    cells: dict[tuple[str, str], dict[str, str]] = {}
    for what, groups in splits.items():
        for g in groups:
            cells.setdefault((g["split"], g["value"]), {})[what] = (
                f"{g['rows']}: {g['median_signed_pct']:+.1f} / {g['median_abs_pct']:.1f} / "
                f"{g['p90_abs_pct']:.1f}")
    both = sum(1 for split, _ in cells if split == "domain") > 1
    keys = [k for k in cells if k[0] != "domain x concurrency" or both]
    if len(keys) < 2:
        return []
    from dcplan.perf.calibration import BOARD, BOARD_DOMAIN, PHASE_BAND, RACK_SCALE

    short = {BOARD: "boards", RACK_SCALE: "rack scale"}
    long = {BOARD: BOARD + "s", RACK_SCALE: f"rack scale (domain > {BOARD_DOMAIN} GPUs)"}

    def band(v: str) -> str:
        return v if v == PHASE_BAND else f"{v} in flight"

    def name(k: tuple[str, str]) -> str:
        split, value = k
        if split == "all":
            return "all rows"
        if split == "domain":
            return long.get(value, value)
        if split == "concurrency":
            return band(value)
        dom, _, rest = value.partition(", ")
        return f"{short.get(dom, dom)}, {band(rest)}"

    label = {k: name(k) for k in keys}
    w0 = max(len(v) for v in label.values())
    cols = [c for c in splits if splits[c]]  # a figure no row measured: no column
    widths = {c: max([len(names[c])] + [len(cells[k].get(c, "-")) for k in keys]) for c in cols}
    lines = ["error % by scale-up domain and requests in flight",
             "(each cell: rows: signed median / median |error| / p90 |error|):",
             "  " + "group".ljust(w0) + "".join("  " + names[c].ljust(widths[c]) for c in cols)]
    for k in keys:
        lines.append("  " + label[k].ljust(w0)
                     + "".join("  " + cells[k].get(c, "-").ljust(widths[c]) for c in cols))
    return [ln.rstrip() for ln in lines]


def _json_record(r) -> dict[str, Any]:
    """One JSON record per input row (serving and phase rows share the key names)."""
    d = r.as_dict()
    p = r.pred
    d["predicted_output_tokens_per_s_per_gpu"] = (
        p.output_tokens_per_s_per_gpu if r.kind == "serving" else None)
    d["predicted_median_tpot_ms"] = p.median_tpot_ms
    d["predicted_median_ttft_s"] = p.median_ttft_s
    return d


def _print_rows(results, files: list[str] | None = None) -> None:
    """Phase rows, then serving rows (two schemas, two tables); ``files``: a file column."""
    recs = [r.as_dict() | ({"file": files[i]} if files else {}) for i, r in enumerate(results)]
    first = ["file"] if files else []
    phase = [d for d, r in zip(recs, results, strict=True) if r.kind == "phase"]
    serving = [d for d, r in zip(recs, results, strict=True) if r.kind == "serving"]
    if phase:
        typer.echo(format_table(phase, first + _PHASE_COLUMNS))
    if serving:
        if phase:
            typer.echo("")
        typer.echo(format_table(serving, first + _SERVING_COLUMNS))


def _print_summary(rep: dict, prefix: str = "") -> None:
    typer.echo(prefix + _fmt_summary("throughput", rep["throughput"]))
    typer.echo(prefix + _fmt_summary("median TPOT", rep["tpot"]))
    typer.echo(prefix + _fmt_summary("median TTFT", rep["ttft"]))
    typer.echo(prefix + _fmt_summary("power", rep["power"]))
    for vendor, s in rep.get("power_by_vendor", {}).items():
        typer.echo(prefix + _fmt_summary(f"  power {vendor} (operating point)", s))
    for line in _split_lines(rep.get("splits", {})):
        typer.echo(prefix + line)
    so = rep.get("server_offline") or []
    diffs = [p["abs_diff"] for p in so if p["abs_diff"] is not None]
    if so:
        typer.echo(prefix + f"Server/Offline throughput per GPU: {len(so)} MLPerf "
                   f"configuration{'s' * (len(so) != 1)} with both rows"
                   + (f", |predicted - measured| median {statistics.median(diffs):.2f}, "
                      f"max {max(diffs):.2f}" if diffs else ", none predicted"))
        for p in so:
            pred = "-" if p["predicted"] is None else f"{p['predicted']:.2f}"
            typer.echo(prefix + f"  {p['configuration']}: measured {p['measured']:.2f}, "
                       f"predicted {pred}")
    if rep["flagged"]:
        typer.echo(prefix + f"{rep['flagged']} rows the model cannot express (see 'flag')")
    if rep.get("low_repeats"):
        from dcplan.perf.calibration import REPEAT_LOW_FRAC, REPEAT_MIN_RUNS

        typer.echo(prefix + f"{rep['low_repeats']} rows measured below "
                   f"{REPEAT_LOW_FRAC:.0%} of the median of their configuration's runs "
                   f"(at least {REPEAT_MIN_RUNS} in the files; likely regressed runs, kept "
                   "in every figure above); without them, "
                   + _fmt_summary("throughput", rep["throughput_without_low_repeats"]))


MeasOpt = Annotated[list[Path], typer.Argument(
    help="Measurement CSVs: phase-level rows and/or serving rows (the header tells which).")]


def _calibration_name(path: Path | None, inputs) -> str:
    """The calibration file as given, else the default one read (``inputs``), else none."""
    from dcplan.errors import display_path

    if path is not None:
        return str(path)
    return display_path(inputs.files[1]) if len(inputs.files) > 1 else "none"


@perf_app.command("validate")
@handle_errors
def validate(
    measurements: MeasOpt,
    models: ModelsOpt = None,
    calibration: CalibOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Measured vs predicted throughput, median TPOT, median TTFT and power, per row.

    Each row is predicted at its own configuration (hardware, precision, parallel
    layout, concurrency, speculative decoding, disaggregation); a row the model
    cannot express is flagged with the reason. A row with bad or impossible values is
    named (file, row, line, column) and left out; the others are still validated.
    """
    from dcplan.perf.calibration import evaluate_rows, repeat_ratios, report
    from dcplan.perf.measurements import little_ratio, load_measurement_files, with_models

    catalog = with_models(STATE.catalog(), models)
    skipped: list = []  # rows the model cannot take, named; the others are validated
    pairs = load_measurement_files(measurements, catalog, with_file=True, skipped=skipped)
    files = [f for f, _ in pairs]
    rows = [m for _, m in pairs]
    pin = _perf_inputs(calibration, catalog, dated=False, benchmarks=True)
    results = evaluate_rows(rows, catalog, pin.defaults, pin.calibration,
                            benchmarks=pin.benchmarks)
    rep = report(results)
    from dcplan.perf.calibration import (
        error_splits,
        power_error_by_vendor,
        server_offline_ratios,
    )

    rep["power_by_vendor"] = power_error_by_vendor(results, catalog)
    rep["splits"] = error_splits(results, catalog)
    rep["server_offline"] = server_offline_ratios(results)
    frac = pin.defaults.serving.measurement_length_frac
    little = [little_ratio(m, frac) for m in rows]
    if json_out:
        records = [_json_record(r) for r in results]
        for rec, q, f, lr in zip(records, repeat_ratios(results), files, little, strict=True):
            rec["runs_of_configuration"] = q[0] if q else None
            rec["measured_vs_runs_median"] = q[1] if q else None
            rec["little_ratio"] = lr
            rec["file"] = f
        emit_json(_clean({"rows": records, "summary": rep,
                          "skipped_rows": [{"file": p.file, "entry": p.entry, "line": p.line,
                                            "field": p.field, "message": p.message}
                                           for p in skipped],
                          "files": [str(m) for m in measurements],
                          "calibration": _calibration_name(calibration, pin)}))
        return
    _print_rows(results, files if len(set(files)) > 1 else None)
    typer.echo("")
    _print_summary(rep)
    for p in skipped:
        note(f"not validated: {p}")
    for line in _little_lines(rows, files, little, frac, "its figures are still compared"):
        note(line)


def _little_lines(rows, files, ratios, frac: float, still: str) -> list[str]:
    """A line per serving row whose figures disagree with its concurrency (Little's law)."""
    from dcplan.errors import display_path
    from dcplan.perf.measurements import LITTLE_RATIO_BOUNDS, little_note

    lo, hi = LITTLE_RATIO_BOUNDS
    return [f"{display_path(f)}:{m.line}, row {m.row}: {little_note(m, r, frac)}; {still}"
            for m, f, r in zip(rows, files, ratios, strict=True)
            if r is not None and not lo <= r <= hi]


@perf_app.command("calibrate")
@handle_errors
def calibrate_cmd(
    measurements: MeasOpt,
    output: Annotated[Path, typer.Option("-o", "--output", help="Calibration YAML to write.",
                                         dir_okay=False)],
    models: ModelsOpt = None,
    starts: Annotated[int, typer.Option(
        "--starts", min=0, max=20,
        help="Also fit from this many perturbed starts (seeds 1..N) and keep the fit of "
             "lowest loss that did not stop on a steep slope (docs/perf.md, How well "
             "the data pin the fit); each start is one more fit. Default 0: one fit "
             "from the a-priori values.")] = 0,
    workers: Annotated[int, typer.Option(
        "--workers", min=1, max=64,
        help="Processes that fit the starts side by side (one per start at most); the "
             "fit kept is the same as with one. Default 1.")] = 1,
    keep_inconsistent: Annotated[bool, typer.Option(
        "--keep-inconsistent-rows",
        help="Also fit the serving rows whose throughput and median latencies break "
             "Little's law (named in the output; left out of the fit by default, "
             "still compared).")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Fit accelerator efficiencies, overheads, power curve and serving physics.

    Writes the per-accelerator fits, a pooled 'default' for accelerators without
    measurements, and the physics (MoE, speculative decoding, latency) parameters.
    A serving row whose figures break Little's law is named and left out of the fit
    (--keep-inconsistent-rows fits it); every row is still compared before and after.
    """
    from dcplan.errors import InputError, display_path
    from dcplan.perf.calibration import calibrate, evaluate_rows, report
    from dcplan.perf.measurements import (
        breaks_little,
        little_ratio,
        load_measurement_files,
        with_models,
    )
    from dcplan.perf.params import NO_CALIBRATION, save_calibration

    check_outputs(files={"--output": output})
    catalog = with_models(STATE.catalog(), models)
    pairs = load_measurement_files(measurements, catalog, with_file=True)
    rows = [m for _, m in pairs]
    pin = _perf_inputs(NO_CALIBRATION, catalog, dated=False, benchmarks=True)
    defaults, bench = pin.defaults, pin.benchmarks
    frac = defaults.serving.measurement_length_frac
    little = _little_lines(rows, [f for f, _ in pairs],
                           [little_ratio(m, frac) for m in rows], frac,
                           "it is still fitted" if keep_inconsistent else
                           "it is left out of the fit and still compared "
                           "(--keep-inconsistent-rows fits it)")
    if not keep_inconsistent and all(breaks_little(m, frac) for m in rows):
        raise InputError(
            f"every row of {', '.join(display_path(m) for m in measurements)} breaks "
            "Little's law (dcplan perf validate names each): nothing is left to fit. "
            "Check the runs, or fit them anyway with --keep-inconsistent-rows")
    before = evaluate_rows(rows, catalog, defaults, benchmarks=bench)
    cal = calibrate(rows, catalog, defaults,
                    source=", ".join(display_path(m) for m in measurements), benchmarks=bench,
                    starts=starts, workers=workers, keep_inconsistent=keep_inconsistent)
    after = evaluate_rows(rows, catalog, defaults, cal, benchmarks=bench)
    rep_before, rep_after = report(before), report(after)
    meta = dict(cal.meta)       # what the fit used: rows left out are not counted
    per_hw = dict(meta["rows_per_hardware"])
    fit = {
        "rows": meta["rows"],
        "left_out_rows": meta["left_out_rows"],
        "throughput_median_abs_pct_before": _r(rep_before["throughput"]["median_abs_pct"]),
        "throughput_median_abs_pct_after": _r(rep_after["throughput"]["median_abs_pct"]),
        "throughput_p90_abs_pct_after": _r(rep_after["throughput"]["p90_abs_pct"]),
        "tpot_median_abs_pct_after": _r(rep_after["tpot"]["median_abs_pct"]),
        "ttft_median_abs_pct_after": _r(rep_after["ttft"]["median_abs_pct"]),
        "power_rows": rep_after["power"]["rows"],
        # how the least-squares fit stopped (an evaluation limit, or a step or cost
        # change below its tolerance), the gradient's size and the loss there (steep_stop)
        **{k: (_r(v) if isinstance(v, float) else v) for k, v in dict(cal.meta).items()
           if k in ("columns", "evaluations", "termination", "first_order_optimality",
                    "cost", "start", "starts")},
    }
    steep = cal.steep_stop()
    save_calibration(cal, output, per_hw, fit)
    warnings = ([steep] if steep else []) + little
    for w in warnings:
        note(w)
    table = []
    for b, a in zip(before, after, strict=True):
        d = a.as_dict()
        d["error_before_pct"] = b.error("throughput")
        d["error_after_pct"] = a.error("throughput")
        table.append(d)
    if json_out:
        emit_json(_clean({"output": str(output), "fit": fit, "warnings": warnings,
                          "rows": table,
                          "hardware": {h: dict(p) for h, p in cal.hardware},
                          "default": dict(cal.default), "physics": dict(cal.physics)}))
        return
    typer.echo(format_table(table, ["row", "kind", "hardware", "model", "configuration",
                                    "error_before_pct", "error_after_pct", "tpot_error_pct",
                                    "ttft_error_pct", "power_error_pct", "flag"]))
    typer.echo("")
    _print_summary(rep_before, "before: ")
    _print_summary(rep_after, "after:  ")
    typer.echo("")
    typer.echo(format_table([{"hardware": h, **dict(p)} for h, p in cal.hardware]))
    typer.echo("")
    typer.echo("physics: " + ", ".join(f"{k} {v:.4g}" for k, v in cal.physics))
    if fit.get("starts"):
        typer.echo("starts: " + ", ".join(
            f"{f['start']} loss {f['cost']:.4g}" + (" (steep)" if f["steep"] else "")
            for f in fit["starts"]) + f"; kept: {fit['start']}")
    typer.echo(f"\nwrote {output}")


def _r(v):
    return None if v is None else round(float(v), 3)
