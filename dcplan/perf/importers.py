"""Import serving benchmark results as serving-measurement rows.

Two client-side benchmark tools are read:

- **AIPerf** (NVIDIA, ``aiperf profile``): its summary ``profile_export_aiperf.json``
  (see :func:`import_aiperf`); an artifacts folder imports every run under it (a
  ``--concurrency 4,8,16`` sweep gives one row per concurrency).
- **vLLM** (``vllm bench serve --save-result``): the result JSON, or the JSON Lines file
  that ``--append-result`` grows (see :func:`import_vllm`).

Neither file records what the server ran on, so the hardware, model, precision, GPUs and
parallelism come from a :class:`Deployment`, checked against the catalog. Each run becomes
one row of the serving-measurement schema (:data:`SERVING_COLUMNS`, the columns of
InferenceX's results), ``None`` where the file does not tell. :func:`write_serving_csv`
writes the rows.

Token accounting: ``output_tokens_per_s_per_gpu`` counts generated tokens only (reasoning
tokens included), ``total_tokens_per_s_per_gpu`` input + output tokens; both divide by
**all** GPUs of the deployment (prefill + decode when disaggregated). ``input_tokens`` and
``output_tokens`` are the mean tokens per completed request, as the tool counted them.
Latencies: TTFT in seconds, TPOT in milliseconds; ``median_*`` is the 50th and ``p99_*``
the 99th percentile over completed requests, as the tool computed them.

Only closed-loop runs (a fixed number of requests kept in flight, ``concurrency``) fit the
schema; runs at an arrival rate are refused with the reason.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from dcplan.catalog import Catalog, suggest
from dcplan.errors import InputError, Problem, display_path
from dcplan.perf.measurements import SERVING_COLUMNS, SPECULATIVE, check_serving_cells
from dcplan.schema import Precision
from dcplan.yamlio import atomic_path, read_text

#: File name of AIPerf's per-run summary export.
AIPERF_EXPORT_NAME = "profile_export_aiperf.json"

#: Where problems with the deployment options are reported.
OPTIONS = "<options>"

_TIME_UNITS_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0}
# GPU power fields of AIPerf's telemetry summary (DCGM/pynvml for NVIDIA, amdsmi for AMD).
_POWER_FIELDS = ("nvidia_power_usage", "amd_power", "gpu_power_usage")
_VLLM_SIGNATURE = ("completed", "duration", "output_throughput")


@dataclass(frozen=True)
class Deployment:
    """What a benchmark ran on: the facts the result files do not record.

    Aggregated serving: give ``gpus`` and ``tp`` (and ``ep`` for expert parallelism);
    prefill and decode columns then both get ``tp``/``ep``. Disaggregated serving: give
    ``prefill_gpus`` and ``decode_gpus`` (``gpus`` is their sum) and each pool's
    ``prefill_tp``/``decode_tp``/``prefill_ep``/``decode_ep``, or ``tp``/``ep`` for both.

    Attributes
    ----------
    hardware : str
        Accelerator id (accelerators catalog).
    model : str
        Model id (models catalog).
    precision : str
        Weight precision: ``bf16``, ``fp8`` or ``fp4``; the accelerator must support it.
    gpus : int, optional
        All GPUs serving the benchmark (throughput per GPU divides by these).
    tp, ep : int, optional
        Tensor- and expert-parallel size of one replica (``ep`` defaults to 1).
    dp_attention : bool
        Data-parallel attention in the decode replicas.
    speculative : str
        ``none``, ``mtp`` (multi-token prediction) or ``draft`` (a draft model).
    prefill_gpus, decode_gpus : int, optional
        GPUs of each pool when prefill and decode are disaggregated.
    prefill_tp, prefill_ep, decode_tp, decode_ep : int, optional
        Parallelism of each pool (default: ``tp`` and ``ep``).
    framework : str, optional
        Serving engine (``vllm``, ``sglang``, ``trt``, ``dynamo-trt``...).
    date : str, optional
        Run date ``YYYY-MM-DD`` (default: the date the file records).
    source : str, optional
        Citation of the run (default: the tool, its version and the file).
    """

    hardware: str
    model: str
    precision: str
    gpus: int | None = None
    tp: int | None = None
    ep: int | None = None
    dp_attention: bool = False
    speculative: str = "none"
    prefill_gpus: int | None = None
    decode_gpus: int | None = None
    prefill_tp: int | None = None
    prefill_ep: int | None = None
    decode_tp: int | None = None
    decode_ep: int | None = None
    framework: str | None = None
    date: str | None = None
    source: str | None = None

    @property
    def disaggregated(self) -> bool:
        """Whether prefill and decode pools are given."""
        return self.prefill_gpus is not None or self.decode_gpus is not None


def deployment_columns(catalog: Catalog, dep: Deployment) -> dict[str, Any]:
    """Check ``dep`` against the catalog and return its serving-schema columns.

    Parameters
    ----------
    catalog : Catalog
        Catalog with the accelerators and models.
    dep : Deployment
        The options.

    Returns
    -------
    dict
        ``hardware, model, precision, gpus, disaggregated, prefill_gpus, decode_gpus,
        prefill_tp, prefill_ep, decode_tp, decode_ep, decode_dp_attention, speculative,
        framework`` (and ``date``/``source`` when given).

    Raises
    ------
    InputError
        Every problem at once, each naming its option: unknown ids (with the closest
        ids), a precision the accelerator lacks, missing or impossible parallelism.
    """
    cols, problems = _deployment_columns(catalog, dep)
    if problems:
        raise InputError(problems)
    return cols


def _deployment_columns(catalog: Catalog, dep: Deployment) -> tuple[dict, list[Problem]]:
    problems: list[Problem] = []

    def bad(option: str, message: str) -> None:
        problems.append(Problem(OPTIONS, message, field=option))

    accelerators = catalog.entries.get("accelerators", {})
    models = catalog.entries.get("models", {})
    racks = catalog.entries.get("racks", {})
    acc = accelerators.get(dep.hardware)
    if acc is None:
        if dep.hardware in racks:
            bad("--hardware", f"'{dep.hardware}' is a rack; give its accelerator id "
                              f"'{racks[dep.hardware].accelerator}'")
        else:
            bad("--hardware", f"unknown accelerator id '{dep.hardware}'"
                              f"{suggest(dep.hardware, accelerators)}; known: "
                              f"{', '.join(accelerators)}")
    model = models.get(dep.model)
    if model is None:
        bad("--model", f"unknown model id '{dep.model}'{suggest(dep.model, models)}; "
                       f"known: {', '.join(models)}")
    precisions = [p.value for p in Precision]
    if dep.precision not in precisions:
        bad("--precision", f"unknown precision '{dep.precision}'"
                           f"{suggest(dep.precision, precisions)}; choose from "
                           f"{', '.join(precisions)}")
    elif acc is not None and acc.dense_tflops(dep.precision) is None:
        have = [p for p in precisions if acc.dense_tflops(p) is not None]
        bad("--precision", f"{dep.hardware} does not support {dep.precision} (catalog: "
                           f"{', '.join(have)})")
    if dep.speculative not in SPECULATIVE:
        bad("--speculative", f"unknown value '{dep.speculative}'"
                             f"{suggest(dep.speculative, SPECULATIVE)}; choose from "
                             f"{', '.join(SPECULATIVE)}")
    if dep.date is not None:
        try:
            date.fromisoformat(dep.date)
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", dep.date):
                raise ValueError
        except ValueError:
            bad("--date", f"'{dep.date}' is not a date; write YYYY-MM-DD")

    for option, value in (("--gpus", dep.gpus), ("--tp", dep.tp), ("--ep", dep.ep),
                          ("--prefill-gpus", dep.prefill_gpus),
                          ("--decode-gpus", dep.decode_gpus),
                          ("--prefill-tp", dep.prefill_tp), ("--prefill-ep", dep.prefill_ep),
                          ("--decode-tp", dep.decode_tp), ("--decode-ep", dep.decode_ep)):
        if value is not None and value < 1:
            bad(option, f"must be at least 1 (got {value})")

    ep = dep.ep if dep.ep is not None else 1
    prefill_tp = dep.prefill_tp if dep.prefill_tp is not None else dep.tp
    decode_tp = dep.decode_tp if dep.decode_tp is not None else dep.tp
    prefill_ep = dep.prefill_ep if dep.prefill_ep is not None else ep
    decode_ep = dep.decode_ep if dep.decode_ep is not None else ep
    gpus = dep.gpus
    if dep.disaggregated:
        if dep.prefill_gpus is None or dep.decode_gpus is None:
            bad("--prefill-gpus" if dep.prefill_gpus is None else "--decode-gpus",
                "disaggregated serving needs both --prefill-gpus and --decode-gpus")
        else:
            total = dep.prefill_gpus + dep.decode_gpus
            if gpus is not None and gpus != total:
                bad("--gpus", f"{gpus} is not --prefill-gpus + --decode-gpus = {total}; "
                              "leave --gpus out or make them agree")
            gpus = total
        if prefill_tp is None:
            bad("--prefill-tp", "give each pool's tensor parallelism: --prefill-tp and "
                                "--decode-tp, or --tp for both")
        if decode_tp is None:
            bad("--decode-tp", "give each pool's tensor parallelism: --prefill-tp and "
                               "--decode-tp, or --tp for both")
        pools = [("prefill", dep.prefill_gpus, prefill_tp, prefill_ep),
                 ("decode", dep.decode_gpus, decode_tp, decode_ep)]
    else:
        for option, value in (("--prefill-tp", dep.prefill_tp), ("--prefill-ep", dep.prefill_ep),
                              ("--decode-tp", dep.decode_tp), ("--decode-ep", dep.decode_ep)):
            if value is not None:
                bad(option, "applies only to disaggregated serving (with --prefill-gpus and "
                            "--decode-gpus); use --tp/--ep for aggregated serving")
        if gpus is None:
            bad("--gpus", "give the number of GPUs that served the benchmark (per-GPU "
                          "figures divide by all of them)")
        if dep.tp is None:
            bad("--tp", "give the tensor-parallel size of one replica (e.g. --tp 8 for one "
                        "replica on an 8-GPU server)")
        pools = [("", gpus, dep.tp, ep)]

    own = {"prefill": (dep.prefill_tp, dep.prefill_ep), "decode": (dep.decode_tp, dep.decode_ep)}
    for pool, n, tp, pool_ep in pools:
        if n is None or n < 1:
            continue
        pool_tp, pool_ep_given = own.get(pool, (None, None))
        tp_opt = f"--{pool}-tp" if pool_tp is not None else "--tp"
        ep_opt = f"--{pool}-ep" if pool_ep_given is not None else "--ep"
        where = f"the {pool} pool's {n} GPUs" if pool else f"{n} GPUs"
        for opt, kind, size in ((tp_opt, "tensor", tp), (ep_opt, "expert", pool_ep)):
            if size is None or size < 1:
                continue
            if size > n:
                bad(opt, f"{kind} parallelism {size} is more than {where}")
            elif n % size:
                bad(opt, f"{kind} parallelism {size} does not divide {where} into whole "
                         "replicas")
        if pool_ep is not None and pool_ep > 1 and model is not None:
            if not model.is_moe:
                bad(ep_opt, f"expert parallelism needs a mixture-of-experts model; "
                            f"{dep.model} is dense (use 1)")
            elif pool_ep > model.experts_total:
                bad(ep_opt, f"expert parallelism {pool_ep} exceeds {dep.model}'s "
                            f"{model.experts_total} experts")

    cols = {
        "hardware": dep.hardware, "model": dep.model, "precision": dep.precision,
        "gpus": gpus, "disaggregated": dep.disaggregated,
        "prefill_gpus": dep.prefill_gpus if dep.disaggregated else None,
        "decode_gpus": dep.decode_gpus if dep.disaggregated else None,
        "prefill_tp": prefill_tp, "prefill_ep": prefill_ep,
        "decode_tp": decode_tp, "decode_ep": decode_ep,
        "decode_dp_attention": bool(dep.dp_attention), "speculative": dep.speculative,
        "framework": dep.framework or None,
    }
    return cols, problems


# --------------------------------------------------------------------------- helpers


def _number(value: Any) -> float | None:
    """A finite number, or None (missing, null, NaN, infinite, text, bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


class _Reader:
    """Field access into one result object that collects problems instead of raising."""

    def __init__(self, data: Mapping, shown: str, entry: str | None, tool: str):
        self.data, self.shown, self.entry, self.tool = data, shown, entry, tool
        self.problems: list[Problem] = []

    def problem(self, field: str | None, message: str) -> None:
        self.problems.append(Problem(self.shown, message, entry=self.entry, field=field))

    def number(self, field: str, value: Any, required: bool, positive: bool = False,
               ) -> float | None:
        """``value`` as a number, or None with a problem recorded.

        Missing or NaN is a problem only when ``required``; text (or any other
        non-number) always is.
        """
        if value is None or (isinstance(value, float) and math.isnan(value)):
            if required:
                self.problem(field, f"missing (every {self.tool} has it; is this the "
                                    "right file?)" if value is None else "not a number (NaN)")
            return None
        num = _number(value)
        if num is None:
            self.problem(field, f"not a finite number ({value!r})")
            return None
        if positive and num <= 0:
            self.problem(field, f"must be above 0 (got {num:g})")
            return None
        return num


def _read_json_documents(path: Path) -> list[tuple[int | None, Any]]:
    """Parse ``path`` as one JSON document or as JSON Lines; ``(line, document)`` pairs."""
    shown = display_path(path)
    text = read_text(path)
    if not text.strip():
        raise InputError(Problem(shown, "file is empty; give the JSON result of the run"))
    try:
        return [(None, json.loads(text))]
    except json.JSONDecodeError as whole:
        docs = []
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                docs.append((n, json.loads(line)))
            except json.JSONDecodeError:
                raise InputError(Problem(
                    shown, f"not JSON ({whole.msg} at line {whole.lineno} column "
                           f"{whole.colno}); give the JSON file the benchmark wrote",
                    line=whole.lineno)) from None
        return docs


def _date_or_none(text: Any, fmt: str) -> str | None:
    """``text`` parsed with ``fmt`` as ``YYYY-MM-DD``, or None."""
    from datetime import datetime

    if not isinstance(text, str):
        return None
    try:
        return datetime.strptime(text, fmt).date().isoformat()
    except ValueError:
        return None


def _row(cols: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    row = dict.fromkeys(SERVING_COLUMNS)
    row.update(cols)
    row.update(values)
    return row


def _per_gpu(value: float | None, gpus: int | None) -> float | None:
    return None if value is None or not gpus else value / gpus


# --------------------------------------------------------------------------- AIPerf


def aiperf_export_files(path: Path | str) -> list[Path]:
    """The AIPerf summary exports at ``path``.

    The file itself, or every ``profile_export_aiperf.json`` under a folder (sorted).

    Parameters
    ----------
    path : Path or str
        An export file, or a folder of AIPerf artifacts.

    Returns
    -------
    list of Path
        The export files.

    Raises
    ------
    InputError
        If ``path`` does not exist or a folder holds no export.
    """
    path = Path(path)
    shown = display_path(path)
    if path.is_dir():
        found = sorted(path.rglob(AIPERF_EXPORT_NAME))
        if not found:
            raise InputError(Problem(
                shown, f"no {AIPERF_EXPORT_NAME} in this folder or below; give the artifacts "
                       "folder of an 'aiperf profile' run (--artifact-dir), or the export "
                       "file itself if the run renamed it (--profile-export-prefix)"))
        return found
    if not path.exists():
        raise InputError(Problem(shown, "file not found; give AIPerf's "
                                        f"{AIPERF_EXPORT_NAME} or its artifacts folder"))
    return [path]


def import_aiperf(path: Path | str, catalog: Catalog, deployment: Deployment,
                  notes: list[str] | None = None) -> list[dict[str, Any]]:
    """Serving-schema rows from AIPerf's ``profile_export_aiperf.json``.

    Parameters
    ----------
    path : Path or str
        The export file, or a folder: every ``profile_export_aiperf.json`` under it is
        imported (one row per run, sorted by concurrency).
    catalog : Catalog
        Catalog the deployment is checked against.
    deployment : Deployment
        Hardware, model, precision, GPUs and parallelism of the served model.
    notes : list of str, optional
        Receives remarks that do not stop the import (failed requests, a cancelled run,
        power left out).

    Returns
    -------
    list of dict
        One row per run, keys :data:`SERVING_COLUMNS`, ``None`` where unknown.

    Notes
    -----
    Field mapping (AIPerf metric ``.stat`` -> column; AIPerf computes percentiles over
    the profiling phase's requests):

    - ``input_sequence_length.avg``, ``output_sequence_length.avg`` -> ``input_tokens``,
      ``output_tokens`` [tokens per request, rounded]; output counts reasoning tokens.
    - ``input_config.phases[profiling].concurrency`` (AIPerf 0.13; older exports:
      ``input_config.loadgen.concurrency``) -> ``concurrency``; the phase must be of type
      ``concurrency`` (closed loop).
    - ``output_token_throughput.avg`` [generated tokens/s] / GPUs ->
      ``output_tokens_per_s_per_gpu``; ``total_token_throughput.avg`` [input + output
      tokens/s] / GPUs -> ``total_tokens_per_s_per_gpu``. AIPerf divides the tokens of
      the profiling phase by its duration (first request sent to last response).
    - ``output_token_throughput_per_user.p50`` [1 / inter-token latency] ->
      ``median_tokens_per_s_per_user``.
    - ``time_to_first_token.p50``/``.p99`` -> ``median_ttft_s``/``p99_ttft_s`` [s].
    - ``inter_token_latency.p50``/``.p99`` [(request latency - TTFT) / (output tokens -
      1), i.e. TPOT] -> ``median_tpot_ms``/``p99_tpot_ms`` [ms].
    - ``telemetry_data.endpoints.*.gpus.*.metrics.<vendor>_power(_usage).avg`` [W],
      averaged over the GPUs -> ``power_w_per_gpu``; only when the telemetry saw exactly
      the deployment's GPUs (``aiperf profile --gpu-telemetry``).
    - ``start_time`` -> ``date``; ``aiperf_version``, ``benchmark_id`` -> ``source``.

    Raises
    ------
    InputError
        All problems at once: bad options, a missing or non-JSON file, another tool's
        file, missing fields, an open-loop run.
    """
    files = aiperf_export_files(path)
    cols, problems = _deployment_columns(catalog, deployment)
    rows: list[tuple[tuple, dict]] = []
    for file in files:
        shown = display_path(file)
        try:
            docs = _read_json_documents(file)
        except InputError as exc:
            problems += exc.problems
            continue
        if len(docs) != 1:
            problems.append(Problem(shown, "holds several JSON documents; an AIPerf export "
                                           "is one JSON object"))
            continue
        reader = _Reader(docs[0][1], shown, None, "AIPerf export")
        row = _aiperf_row(reader, cols, deployment, notes if notes is not None else [])
        problems += reader.problems
        if row is not None:
            rows.append(((row["concurrency"] or 0, str(file)), row))
    if problems:
        raise InputError(problems)
    out = [r for _, r in sorted(rows, key=lambda kr: kr[0])]
    _check_rows(path, out, catalog)
    return out


def _check_rows(path: Path | str, rows: list[dict[str, Any]], catalog: Catalog) -> None:
    """The imported rows pass the serving schema's rules (as ``perf validate`` reads them)."""
    check_serving_cells(f"rows imported from {display_path(Path(path))}",
                        serving_csv_lines(rows), catalog)


def _aiperf_row(rd: _Reader, cols: dict, dep: Deployment, notes: list[str]) -> dict | None:
    data = rd.data
    if not isinstance(data, Mapping):
        rd.problem(None, f"not an AIPerf export (the top level is a JSON "
                         f"{type(data).__name__}, not an object)")
        return None
    if all(k in data for k in _VLLM_SIGNATURE):
        rd.problem(None, "this is a 'vllm bench serve' result, not an AIPerf export; import "
                         "it with 'dcplan perf import vllm'")
        return None
    meta = data.get("metadata")
    if isinstance(meta, Mapping) and "aggregation_type" in meta:
        rd.problem(None, "this is an AIPerf aggregate over repeated runs; import the per-run "
                         f"{AIPERF_EXPORT_NAME} files (give the artifacts folder to import "
                         "all of them)")
        return None
    if "input_config" not in data or not any(
            isinstance(v, Mapping) and "unit" in v for v in data.values()):
        rd.problem(None, f"not an AIPerf export (no 'input_config' and metric results); give "
                         f"the {AIPERF_EXPORT_NAME} that 'aiperf profile' wrote")
        return None

    def metric(name: str, stat: str, required: bool, unit: str | None = None) -> float | None:
        """``data[name][stat]``; with ``unit`` a time unit, converted to seconds."""
        field = f"{name}.{stat}"
        block = data.get(name)
        if block is None:
            if required:
                rd.problem(name, "missing; an AIPerf export of a text-generation run has "
                                 "this metric")
            return None
        if not isinstance(block, Mapping):
            rd.problem(name, f"not a metric result object ({block!r})")
            return None
        value = rd.number(field, block.get(stat), required)
        if value is None or unit is None:
            return value
        have = block.get("unit")
        if have not in _TIME_UNITS_S:
            rd.problem(f"{name}.unit", f"unknown time unit {have!r}; expected one of "
                                       f"{', '.join(_TIME_UNITS_S)}")
            return None
        return value * _TIME_UNITS_S[have] / _TIME_UNITS_S[unit]

    concurrency = _aiperf_concurrency(rd)
    requests = metric("request_count", "avg", True)
    if requests is not None and requests <= 0:
        rd.problem("request_count.avg", "no request completed; nothing to import")
    isl = metric("input_sequence_length", "avg", True)
    osl = metric("output_sequence_length", "avg", True)
    out_tps = metric("output_token_throughput", "avg", True)
    total_tps = metric("total_token_throughput", "avg", False)
    if total_tps is None:
        in_tps = metric("input_token_throughput", "avg", False)
        total_tps = None if in_tps is None or out_tps is None else in_tps + out_tps
    gpus = cols.get("gpus")
    power = _aiperf_power(rd, gpus, notes)
    errors = metric("error_request_count", "avg", False)
    if errors:
        notes.append(f"{rd.shown}: {errors:g} requests failed; the figures count the "
                     f"{requests or 0:g} that completed")
    if data.get("was_cancelled"):
        notes.append(f"{rd.shown}: the run was cancelled; the figures cover the requests "
                     "that finished")
    ttft_p50 = metric("time_to_first_token", "p50", False, unit="s")
    if ttft_p50 is None and "time_to_first_token" not in data:
        notes.append(f"{rd.shown}: no time_to_first_token (a run without --streaming); "
                     "TTFT and TPOT are left empty")
    if rd.problems:
        return None
    version = data.get("aiperf_version")
    bench = data.get("benchmark_id")
    source = dep.source or (
        f"AIPerf {version or '(version not recorded)'} profile export"
        + (f", benchmark {bench}" if bench else "") + f"; {rd.shown}")
    values = {
        "input_tokens": round(isl), "output_tokens": round(osl),
        "concurrency": concurrency,
        "output_tokens_per_s_per_gpu": _per_gpu(out_tps, gpus),
        "total_tokens_per_s_per_gpu": _per_gpu(total_tps, gpus),
        "median_tokens_per_s_per_user": metric("output_token_throughput_per_user", "p50",
                                               False),
        "median_ttft_s": ttft_p50,
        "p99_ttft_s": metric("time_to_first_token", "p99", False, unit="s"),
        "median_tpot_ms": metric("inter_token_latency", "p50", False, unit="ms"),
        "p99_tpot_ms": metric("inter_token_latency", "p99", False, unit="ms"),
        "power_w_per_gpu": power,
        "date": dep.date or _date_or_none(str(data.get("start_time", ""))[:10], "%Y-%m-%d"),
        "source": source,
    }
    return _row(cols, values)


def _aiperf_concurrency(rd: _Reader) -> int | None:
    """Concurrency of the profiling phase; a problem if the run was not closed loop."""
    config = rd.data.get("input_config")
    if not isinstance(config, Mapping):
        rd.problem("input_config", "missing or not an object; the run's concurrency is "
                                   "recorded there")
        return None
    phases = config.get("phases")
    if isinstance(phases, list):
        profiling = [(i, p) for i, p in enumerate(phases)
                     if isinstance(p, Mapping) and p.get("kind", p.get("name")) == "profiling"
                     and not p.get("exclude_from_results")]
        if not profiling:
            rd.problem("input_config.phases", "no profiling phase recorded")
            return None
        if len(profiling) > 1:
            rd.problem("input_config.phases", f"{len(profiling)} profiling phases in one run; "
                                              "the serving schema holds one operating point "
                                              "per row")
            return None
        i, phase = profiling[0]
        field = f"input_config.phases[{i}]"
        if phase.get("type") != "concurrency":
            rd.problem(f"{field}.type", f"the run was '{phase.get('type')}' (requests at an "
                                        "arrival rate), not closed loop; the serving schema "
                                        "records runs at a fixed concurrency: rerun with "
                                        "--concurrency N and no --request-rate")
            return None
        value = phase.get("concurrency")
    else:
        loadgen = config.get("loadgen")
        if not isinstance(loadgen, Mapping):
            rd.problem("input_config.phases", "missing; the run's concurrency is recorded "
                                              "there (older AIPerf: input_config.loadgen)")
            return None
        field = "input_config.loadgen"
        if loadgen.get("request_rate") is not None:
            rd.problem(f"{field}.request_rate",
                       f"the run sent requests at {loadgen['request_rate']} per second, not "
                       "closed loop; the serving schema records runs at a fixed concurrency")
            return None
        value = loadgen.get("concurrency")
    num = rd.number(f"{field}.concurrency", value, True, positive=True)
    if num is None:
        return None
    if num != int(num):
        rd.problem(f"{field}.concurrency", f"not a whole number ({num:g})")
        return None
    return int(num)


def _aiperf_power(rd: _Reader, gpus: int | None, notes: list[str]) -> float | None:
    """Mean GPU power [W] over the GPUs AIPerf's telemetry saw, or None."""
    telemetry = rd.data.get("telemetry_data")
    if not isinstance(telemetry, Mapping):
        return None
    per_gpu = []
    for endpoint in (telemetry.get("endpoints") or {}).values():
        for gpu in ((endpoint or {}).get("gpus") or {}).values():
            gpu_metrics = (gpu or {}).get("metrics") or {}
            for name in _POWER_FIELDS:
                value = _number((gpu_metrics.get(name) or {}).get("avg"))
                if value is not None:
                    per_gpu.append(value)
                    break
    if not per_gpu:
        return None
    if gpus is not None and len(per_gpu) != gpus:
        notes.append(f"{rd.shown}: GPU telemetry reports power for {len(per_gpu)} GPUs but "
                     f"the deployment has {gpus}; power_w_per_gpu is left empty")
        return None
    return sum(per_gpu) / len(per_gpu)


# --------------------------------------------------------------------------- vLLM


def import_vllm(path: Path | str, catalog: Catalog, deployment: Deployment,
                notes: list[str] | None = None) -> list[dict[str, Any]]:
    """Serving-schema rows from the JSON of ``vllm bench serve --save-result``.

    Parameters
    ----------
    path : Path or str
        The result file: one JSON object, or JSON Lines (``--append-result``), one row
        per object.
    catalog : Catalog
        Catalog the deployment is checked against.
    deployment : Deployment
        Hardware, model, precision, GPUs and parallelism of the served model.
    notes : list of str, optional
        Receives remarks that do not stop the import (failed requests, empty latencies).

    Returns
    -------
    list of dict
        One row per result, keys :data:`SERVING_COLUMNS`, ``None`` where unknown.

    Notes
    -----
    Field mapping (vLLM's ``vllm/benchmarks/serve.py``; percentiles are numpy's over the
    completed requests, ``p99`` with the default ``--metric-percentiles 99``):

    - ``total_input_tokens / completed``, ``total_output_tokens / completed`` ->
      ``input_tokens``, ``output_tokens`` [tokens per request, rounded].
    - ``max_concurrency`` -> ``concurrency``; ``request_rate`` must be ``inf``
      (closed loop).
    - ``output_throughput`` [generated tokens/s] / GPUs -> ``output_tokens_per_s_per_gpu``;
      ``total_token_throughput`` [input + output tokens/s] / GPUs ->
      ``total_tokens_per_s_per_gpu``; vLLM divides by ``duration`` (first request to
      last response).
    - ``median_ttft_ms``/``p99_ttft_ms`` / 1000 -> ``median_ttft_s``/``p99_ttft_s`` [s].
    - ``median_tpot_ms``/``p99_tpot_ms`` [(latency - TTFT) / (output tokens - 1)] ->
      ``median_tpot_ms``/``p99_tpot_ms``; ``1000 / median_tpot_ms`` ->
      ``median_tokens_per_s_per_user``. (vLLM's ``*_itl_ms`` are gaps between streamed
      chunks, not TPOT, and are not used.)
    - ``date`` (``YYYYMMDD-HHMMSS``) -> ``date``; ``backend``, ``model_id`` -> ``source``.
    - ``power_w_per_gpu`` stays empty: the file has no power.

    Raises
    ------
    InputError
        All problems at once: bad options, a missing or non-JSON file, another tool's
        file, missing fields, an open-loop run.
    """
    path = Path(path)
    cols, problems = _deployment_columns(catalog, deployment)
    try:
        docs = _read_json_documents(path)
    except InputError as exc:
        raise InputError(problems + exc.problems) from None
    shown = display_path(path)
    rows = []
    for n, (line, doc) in enumerate(docs, start=1):
        entry = f"result {n}" if len(docs) > 1 else None
        if line is not None and len(docs) > 1:
            entry = f"result {n} (line {line})"
        reader = _Reader(doc, shown, entry, "vllm bench serve")
        row = _vllm_row(reader, cols, deployment, notes if notes is not None else [])
        problems += reader.problems
        if row is not None:
            rows.append(row)
    if problems:
        raise InputError(problems)
    _check_rows(path, rows, catalog)
    return rows


def _vllm_row(rd: _Reader, cols: dict, dep: Deployment, notes: list[str]) -> dict | None:
    data = rd.data
    if not isinstance(data, Mapping):
        rd.problem(None, f"not a vllm bench serve result (the top level is a JSON "
                         f"{type(data).__name__}, not an object)")
        return None
    if "aiperf_version" in data or "input_config" in data:
        rd.problem(None, "this is an AIPerf export, not a vllm bench serve result; import it "
                         "with 'dcplan perf import aiperf'")
        return None
    if not any(k in data for k in _VLLM_SIGNATURE):
        rd.problem(None, "not a vllm bench serve result (none of "
                         f"{', '.join(_VLLM_SIGNATURE)}); give the JSON written by "
                         "'vllm bench serve --save-result'")
        return None
    label = rd.entry + ": " if rd.entry else ""

    def num(field: str, required: bool = True, positive: bool = False) -> float | None:
        return rd.number(field, data.get(field), required, positive)

    completed = num("completed", positive=True)
    duration = num("duration", positive=True)
    total_in = num("total_input_tokens")
    total_out = num("total_output_tokens")
    # vLLM's throughputs are these totals divided by the duration (first request sent to
    # last response); derived here only where a file lacks them.
    out_tps = num("output_throughput", required=False)
    total_tps = num("total_token_throughput", required=False)
    if out_tps is None and duration and total_out is not None:
        out_tps = total_out / duration
    if total_tps is None and duration and total_out is not None and total_in is not None:
        total_tps = (total_in + total_out) / duration

    concurrency = None
    if "max_concurrency" not in data:
        rd.problem("max_concurrency", "missing; a vllm bench serve result records it (null "
                                      "when unlimited)")
    elif data["max_concurrency"] is None:
        rd.problem("max_concurrency", "null: the benchmark sent all its prompts at once "
                                      "rather than keeping a fixed number in flight; rerun "
                                      "with --max-concurrency N")
    else:
        c = num("max_concurrency", positive=True)
        if c is not None and c != int(c):
            rd.problem("max_concurrency", f"not a whole number ({c:g})")
        elif c is not None:
            concurrency = int(c)
    rate = data.get("request_rate", "inf")
    if not (rate == "inf" or (isinstance(rate, float) and math.isinf(rate) and rate > 0)):
        rd.problem("request_rate", f"the run sent requests at {rate!r} per second (open loop); "
                                   "the serving schema records closed-loop runs at a fixed "
                                   "concurrency: rerun with --max-concurrency N and the "
                                   "default --request-rate inf")
    if data.get("ramp_up_strategy"):
        rd.problem("ramp_up_strategy", "a run with a request-rate ramp is not closed loop; "
                                       "the serving schema records runs at a fixed "
                                       "concurrency")

    def latency(field: str) -> float | None:
        value = num(field, required=False)
        # vLLM writes 0 when nothing was measured (no streaming, one-token outputs).
        return value if value else None

    ttft50, ttft99 = latency("median_ttft_ms"), latency("p99_ttft_ms")
    tpot50, tpot99 = latency("median_tpot_ms"), latency("p99_tpot_ms")
    if ttft50 is None:
        notes.append(f"{rd.shown}: {label}no median_ttft_ms (a run without streaming, or "
                     "--percentile-metrics without ttft); TTFT is left empty")
    if tpot50 is None:
        notes.append(f"{rd.shown}: {label}no median_tpot_ms; TPOT and tokens/s per user "
                     "are left empty")
    failed = _number(data.get("failed"))
    if failed:
        notes.append(f"{rd.shown}: {label}{failed:g} requests failed; the figures count the "
                     f"{completed or 0:g} that completed")
    if rd.problems:
        return None
    gpus = cols.get("gpus")
    run_date = _date_or_none(data.get("date"), "%Y%m%d-%H%M%S")
    described = ", ".join(str(data[k]) for k in ("backend", "model_id") if data.get(k))
    source = dep.source or (
        "vllm bench serve --save-result" + (f" ({described})" if described else "")
        + f"; {rd.shown}" + (f" {rd.entry}" if rd.entry else ""))
    values = {
        "input_tokens": round(total_in / completed), "output_tokens": round(total_out / completed),
        "concurrency": concurrency,
        "output_tokens_per_s_per_gpu": _per_gpu(out_tps, gpus),
        "total_tokens_per_s_per_gpu": _per_gpu(total_tps, gpus),
        "median_tokens_per_s_per_user": 1000.0 / tpot50 if tpot50 else None,
        "median_ttft_s": ttft50 / 1000.0 if ttft50 else None,
        "p99_ttft_s": ttft99 / 1000.0 if ttft99 else None,
        "median_tpot_ms": tpot50, "p99_tpot_ms": tpot99,
        "date": dep.date or run_date,
        "source": source,
    }
    return _row(cols, values)


# --------------------------------------------------------------------------- CSV


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(round(value, 4))
    return str(value)


def serving_csv_lines(rows: Iterable[Mapping[str, Any]]) -> list[list[str]]:
    """Cells of ``rows`` in :data:`SERVING_COLUMNS` order, formatted for CSV.

    Booleans as ``true``/``false``, unknown as empty, floats rounded to 4 decimals.

    Parameters
    ----------
    rows : iterable of dict
        Rows with keys :data:`SERVING_COLUMNS` (units in the column names).

    Returns
    -------
    list of list of str
        One list of cells per row.
    """
    return [[_cell(r.get(c)) for c in SERVING_COLUMNS] for r in rows]


def format_serving_csv(rows: Iterable[Mapping[str, Any]], header: bool = True) -> str:
    """``rows`` as serving-schema CSV text (with the header line unless ``header=False``).

    Parameters
    ----------
    rows : iterable of dict
        Rows with keys :data:`SERVING_COLUMNS` (units in the column names).
    header : bool
        Start with the header line.

    Returns
    -------
    str
        The CSV text.
    """
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    if header:
        writer.writerow(SERVING_COLUMNS)
    writer.writerows(serving_csv_lines(rows))
    return buf.getvalue()


def write_serving_csv(rows: Iterable[Mapping[str, Any]], path: Path | str,
                      append: bool = False) -> tuple[int, int]:
    """Write ``rows`` as a serving-schema CSV, atomically.

    Parameters
    ----------
    rows : iterable of dict
        Rows with keys :data:`SERVING_COLUMNS`.
    path : Path or str
        File to write (replaced unless ``append``).
    append : bool
        Keep the rows of an existing ``path`` (its header must be the serving schema's)
        and add the new ones after them; rows already in the file are not added twice.

    Returns
    -------
    (int, int)
        Rows written, and rows skipped because the file already held them [rows].

    Raises
    ------
    InputError
        If ``append`` and the existing file is not a serving-schema CSV.
    """
    path = Path(path)
    new = serving_csv_lines(rows)
    old_text = ""
    skipped = 0
    if append and path.exists():
        shown = display_path(path)
        old_text = read_text(path)
        if old_text.strip():
            existing = list(csv.reader(io.StringIO(old_text)))
            if tuple(existing[0]) != SERVING_COLUMNS:
                raise InputError(Problem(
                    shown, "cannot append: its header is not the serving-measurement schema "
                           f"({', '.join(SERVING_COLUMNS[:4])}, ...); append to a file this "
                           "command wrote, or write a new one", line=1))
            have = {tuple(r) for r in existing[1:]}
            kept = [r for r in new if tuple(r) not in have]
            skipped = len(new) - len(kept)
            new = kept
            if not old_text.endswith("\n"):
                old_text += "\n"
        else:
            old_text = ""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    if not old_text:
        writer.writerow(SERVING_COLUMNS)
    writer.writerows(new)
    with atomic_path(path) as tmp:
        tmp.write_text(old_text + buf.getvalue(), encoding="utf-8")
    return len(new), skipped
