"""``dcplan perf import``: benchmark results of AIPerf or vLLM as serving-measurement rows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from dcplan.cli.common import STATE, check_outputs, fail, handle_errors
from dcplan.cli.complete import ids_of
from dcplan.cli.perf_cmd import perf_app

import_app = typer.Typer(
    help="Turn the results of serving benchmarks (AIPerf, vllm bench serve) into rows of the "
         "serving-measurement CSV that 'dcplan perf validate' and 'calibrate' read. The "
         "result files do not record the hardware: give it with the options.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
perf_app.add_typer(import_app, name="import")

HardwareOpt = Annotated[str, typer.Option("--hardware", help="Accelerator id (catalog), "
                                                             "e.g. h200_sxm.",
                                          autocompletion=ids_of("accelerators"))]
ModelOpt = Annotated[str, typer.Option("--model", help="Model id (catalog), e.g. deepseek_r1.",
                                       autocompletion=ids_of("models"))]
PrecisionOpt = Annotated[str, typer.Option("--precision", help="Weight precision: bf16, fp8 "
                                                               "or fp4.")]
GpusOpt = Annotated[int | None, typer.Option(
    "--gpus", help="All GPUs that served the run (per-GPU figures divide by these).")]
TpOpt = Annotated[int | None, typer.Option("--tp", help="Tensor-parallel size of one replica.")]
EpOpt = Annotated[int | None, typer.Option("--ep", help="Expert-parallel size (default 1).")]
DpOpt = Annotated[bool, typer.Option("--dp-attention", help="Data-parallel attention.")]
SpecOpt = Annotated[str, typer.Option("--speculative", help="none, mtp or draft.")]
PrefillGpusOpt = Annotated[int | None, typer.Option(
    "--prefill-gpus", help="Disaggregated serving: GPUs of the prefill pool.")]
DecodeGpusOpt = Annotated[int | None, typer.Option(
    "--decode-gpus", help="Disaggregated serving: GPUs of the decode pool.")]
PrefillTpOpt = Annotated[int | None, typer.Option("--prefill-tp", help="Prefill pool TP "
                                                                       "(default --tp).")]
PrefillEpOpt = Annotated[int | None, typer.Option("--prefill-ep", help="Prefill pool EP "
                                                                       "(default --ep).")]
DecodeTpOpt = Annotated[int | None, typer.Option("--decode-tp", help="Decode pool TP "
                                                                     "(default --tp).")]
DecodeEpOpt = Annotated[int | None, typer.Option("--decode-ep", help="Decode pool EP "
                                                                     "(default --ep).")]
FrameworkOpt = Annotated[str | None, typer.Option(
    "--framework", help="Serving engine, e.g. vllm, sglang, trt, dynamo-trt.")]
DateOpt = Annotated[str | None, typer.Option(
    "--date", help="Run date YYYY-MM-DD (default: the date in the file).")]
SourceOpt = Annotated[str | None, typer.Option(
    "--source", help="Citation for the rows (default: tool, version and file).")]
OutputOpt = Annotated[Path | None, typer.Option(
    "-o", "--output", help="CSV file to write (default: print the CSV).", dir_okay=False)]
AppendOpt = Annotated[bool, typer.Option(
    "--append", help="Add the rows to an existing serving CSV given with -o.")]


def _run(importer: Callable, path: Path, output: Path | None, append: bool, **options) -> None:
    from dcplan.errors import display_path
    from dcplan.perf.importers import Deployment, format_serving_csv, write_serving_csv

    if append and output is None:
        fail("--append adds to the file given with -o; give -o FILE", code=2)
    check_outputs(files={"-o": output})
    notes: list[str] = []
    rows = importer(path, STATE.catalog(), Deployment(**options), notes)
    for note in notes:
        typer.secho(f"note: {note}", err=True)
    if output is None:
        typer.echo(format_serving_csv(rows), nl=False)
        return
    written, skipped = write_serving_csv(rows, output, append=append)
    verb = "added" if append else "wrote"
    extra = f" ({skipped} already there)" if skipped else ""
    typer.echo(f"{verb} {written} row{'s' * (written != 1)} to {display_path(output)}{extra}")


@import_app.command("aiperf")
@handle_errors
def aiperf_cmd(
    path: Annotated[Path, typer.Argument(
        help="AIPerf's profile_export_aiperf.json, or its artifacts folder (every run under "
             "it, e.g. each concurrency of a sweep, becomes a row).")],
    hardware: HardwareOpt,
    model: ModelOpt,
    precision: PrecisionOpt,
    gpus: GpusOpt = None,
    tp: TpOpt = None,
    ep: EpOpt = None,
    dp_attention: DpOpt = False,
    speculative: SpecOpt = "none",
    prefill_gpus: PrefillGpusOpt = None,
    decode_gpus: DecodeGpusOpt = None,
    prefill_tp: PrefillTpOpt = None,
    prefill_ep: PrefillEpOpt = None,
    decode_tp: DecodeTpOpt = None,
    decode_ep: DecodeEpOpt = None,
    framework: FrameworkOpt = None,
    date: DateOpt = None,
    source: SourceOpt = None,
    output: OutputOpt = None,
    append: AppendOpt = False,
) -> None:
    """Import 'aiperf profile' results (closed loop, --concurrency N).

    Example: dcplan perf import aiperf artifacts/ --hardware h200_sxm --model llama3_70b
    --precision fp8 --gpus 8 --tp 8 -o runs.csv
    """
    from dcplan.perf.importers import import_aiperf

    _run(import_aiperf, path, output, append, hardware=hardware, model=model,
         precision=precision, gpus=gpus, tp=tp, ep=ep, dp_attention=dp_attention,
         speculative=speculative, prefill_gpus=prefill_gpus, decode_gpus=decode_gpus,
         prefill_tp=prefill_tp, prefill_ep=prefill_ep, decode_tp=decode_tp,
         decode_ep=decode_ep, framework=framework, date=date, source=source)


@import_app.command("vllm")
@handle_errors
def vllm_cmd(
    file: Annotated[Path, typer.Argument(
        help="JSON written by 'vllm bench serve --save-result' (JSON Lines from "
             "--append-result: one row per line).", dir_okay=False)],
    hardware: HardwareOpt,
    model: ModelOpt,
    precision: PrecisionOpt,
    gpus: GpusOpt = None,
    tp: TpOpt = None,
    ep: EpOpt = None,
    dp_attention: DpOpt = False,
    speculative: SpecOpt = "none",
    prefill_gpus: PrefillGpusOpt = None,
    decode_gpus: DecodeGpusOpt = None,
    prefill_tp: PrefillTpOpt = None,
    prefill_ep: PrefillEpOpt = None,
    decode_tp: DecodeTpOpt = None,
    decode_ep: DecodeEpOpt = None,
    framework: FrameworkOpt = None,
    date: DateOpt = None,
    source: SourceOpt = None,
    output: OutputOpt = None,
    append: AppendOpt = False,
) -> None:
    """Import 'vllm bench serve --save-result' results (closed loop, --max-concurrency N).

    Example: dcplan perf import vllm result.json --hardware h200_sxm --model llama3_70b
    --precision fp8 --gpus 8 --tp 8 --framework vllm -o runs.csv --append
    """
    from dcplan.perf.importers import import_vllm

    _run(import_vllm, file, output, append, hardware=hardware, model=model,
         precision=precision, gpus=gpus, tp=tp, ep=ep, dp_attention=dp_attention,
         speculative=speculative, prefill_gpus=prefill_gpus, decode_gpus=decode_gpus,
         prefill_tp=prefill_tp, prefill_ep=prefill_ep, decode_tp=decode_tp,
         decode_ep=decode_ep, framework=framework, date=date, source=source)
