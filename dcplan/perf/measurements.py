"""Measurement CSVs: two schemas, told apart by the header.

**Phase-level rows** (one measured operating point of one replica; column ``phase``):

==================  ==========================================================
column              meaning
==================  ==========================================================
hardware            accelerator id (accelerators catalog)
model               model id (models catalog, or a ``--models`` file)
precision           ``bf16``, ``fp8`` or ``fp4``
phase               ``prefill`` or ``decode``
gpus                accelerators in the replica (tensor parallel)
batch               sequences in flight
context_tokens      prefill: prompt tokens per sequence; decode: tokens already in
                    each sequence's KV cache
tokens_per_s        replica total [tokens/s] (prefill: prompt tokens; decode:
                    generated tokens)
power_w             mean total power of the replica's accelerators [W]; may be empty
==================  ==========================================================

Optional: ``source``, ``as_of`` (also the run date the calibration's software trend
reads), ``notes``, ``framework`` (serving engine, as in serving rows), ``ep`` (expert
parallel size of an MoE replica; empty: experts tensor-parallel) and ``dp_attention``
(``true``: every GPU runs its own attention, the layout of wide expert parallelism,
``DEP<gpus>``), and
``prompt_tokens`` + ``output_tokens``
(decode rows, together) for an end-to-end run (MLPerf Offline/Server) whose
``tokens_per_s`` counts output tokens while the replica also prefilled every prompt;
``ttft_s`` / ``tpot_ms`` on such rows are MLPerf Server limits (99th percentile,
Poisson arrivals).

**Serving rows** (one benchmark run of a whole deployment, as InferenceX, AIPerf or
``vllm bench serve`` report it; column ``concurrency``): exactly the columns of
:data:`SERVING_COLUMNS`, empty where unknown. See ``catalogs/measurements/README.md``.
"""

from __future__ import annotations

import csv
import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from dcplan.catalog import Catalog, did_you_mean, load_kind_file, suggest
from dcplan.errors import InputError, Problem, display_path
from dcplan.perf.benchmarks import (
    LENGTHS_FILE,
    POWER_SYSTEMS_FILE,
    load_benchmark_lengths,
    load_power_systems,
)
from dcplan.perf.params import year_fraction
from dcplan.perf.recipes import RECIPES_FILE, load_recipes
from dcplan.perf.roofline import Parallel, wide_ep_group
from dcplan.schema import Precision
from dcplan.yamlio import read_text

REQUIRED_COLUMNS = ("hardware", "model", "precision", "phase", "gpus", "batch",
                    "context_tokens", "tokens_per_s", "power_w")
OPTIONAL_COLUMNS = ("source", "as_of", "notes", "prompt_tokens", "output_tokens", "ttft_s",
                    "tpot_ms", "framework", "power_cap_w", "ep", "dp_attention")
PHASES = ("prefill", "decode")

#: Columns of a serving-measurement file (all required in the header, in any order).
SERVING_COLUMNS = (
    "hardware", "model", "precision", "input_tokens", "output_tokens", "concurrency", "gpus",
    "disaggregated", "prefill_gpus", "decode_gpus", "prefill_tp", "prefill_ep", "decode_tp",
    "decode_ep", "decode_dp_attention", "speculative", "output_tokens_per_s_per_gpu",
    "total_tokens_per_s_per_gpu", "median_tokens_per_s_per_user", "median_ttft_s", "p99_ttft_s",
    "median_tpot_ms", "p99_tpot_ms", "power_w_per_gpu", "framework", "date", "source",
)
#: Optional column of a serving-measurement file: the prefill pool's DP attention
#: (true/false; empty or absent: :func:`prefill_dp_attention` infers it).
SERVING_OPTIONAL_COLUMNS = ("prefill_dp_attention",)
SPECULATIVE = ("none", "mtp", "draft")
#: Most GPUs a measurement row may count (``gpus``, ``prefill_gpus``, ``decode_gpus``)
#: [GPUs]: five times the largest single systems built (about 200,000 GPUs in 2025);
#: published inference benchmarks run one replica to a few thousand GPUs. A larger
#: count is a unit or typing mistake.
MAX_MEASUREMENT_GPUS = 1_000_000
#: Environment variable that raises or lowers :data:`DEFAULT_MAX_MEASUREMENT_ROWS`.
MAX_ROWS_ENV = "DCPLAN_MAX_MEASUREMENT_ROWS"
#: Most data rows one measurement file may hold. The shipped files hold 18 to 1,328;
#: validating costs about 20 KB and calibrating about 130 KB of memory per row (a valid
#: 9 MB file of 72,000 rows took 1.3 GB to validate and over 9 GB to calibrate), so
#: 10,000 rows keep either command near a gigabyte.
DEFAULT_MAX_MEASUREMENT_ROWS = 10_000
#: The columns that say what ran (hardware, model, lengths, concurrency, layout, engine):
#: runs with equal values are repeats of one configuration.
CONFIGURATION_COLUMNS = (*SERVING_COLUMNS[:SERVING_COLUMNS.index("speculative") + 1],
                         "framework")


@dataclass(frozen=True)
class Measurement:
    """One validated phase-level measurement row.

    Attributes
    ----------
    row : int
        1-based data row number (the header is line 1, so row ``n`` is line ``n+1``
        when the file has no blank or comment lines).
    hardware, model : str
        Catalog ids.
    precision : Precision
    phase : {"prefill", "decode"}
    gpus, batch : int
    context_tokens : float
        [tokens].
    tokens_per_s : float
        Replica total [tokens/s].
    power_w : float or None
        Replica accelerator power [W].
    prompt_tokens, output_tokens : float or None
        End-to-end decode rows: prompt and generated tokens per request [tokens].
    ttft_s, tpot_ms : float or None
        End-to-end rows measured under latency limits: TTFT [s] and TPOT [ms].
    source, as_of, notes : str
    line : int
        Line of the row in its file.
    framework : str
        Serving engine (``trt`` for TensorRT-LLM, as serving rows name it); '' unknown.
    power_cap_w : float or None
        Power limit per accelerator the run was held to (MLPerf MaxQ) [W] (basis: cap);
        predicted power is capped there, and the row's throughput is not fitted (the
        model has no clock throttling).
    ep : int
        Expert-parallel size of the replica (1: experts tensor-parallel) [-].
    dp_attention : bool
        Every GPU of the replica runs its own attention (attention TP 1).
    """

    row: int
    hardware: str
    model: str
    precision: Precision
    phase: str
    gpus: int
    batch: int
    context_tokens: float
    tokens_per_s: float
    power_w: float | None
    prompt_tokens: float | None = None
    output_tokens: float | None = None
    ttft_s: float | None = None
    tpot_ms: float | None = None
    source: str = ""
    as_of: str = ""
    notes: str = ""
    line: int = 0
    framework: str = ""
    power_cap_w: float | None = None
    ep: int = 1
    dp_attention: bool = False

    kind = "phase"

    @property
    def date(self) -> str:
        """Run date (``as_of``) [YYYY-MM[-DD]]."""
        return self.as_of

    @property
    def end_to_end(self) -> bool:
        """Whether the row is an end-to-end serving measurement."""
        return self.prompt_tokens is not None


def prefill_dp_attention(disaggregated: bool, prefill_ep: int, decode_dp_attention: bool,
                         given: bool | None = None) -> bool:
    """Whether a row's prefill instances run data-parallel attention.

    ``given`` (the optional ``prefill_dp_attention`` column) decides when set; the rule
    below applies where it is empty or absent.

    Aggregated rows prefill on the decode instances (``decode_dp_attention``). The
    serving files record DP attention for the decode pool only; a disaggregated prefill
    pool with expert parallelism is taken to run its attention data parallel, one
    without EP tensor parallel. This is how most recipes behind the rows run them
    (InferenceX ``benchmarks/multi_node``: TensorRT-LLM ``enable_attention_dp: true`` on
    every B200, H100 and H200 prefill worker; SGLang on B200 fp4 and on H200's DEP
    prefill; the MI355X ``server_sglang.sh`` with prefill EP and DP both on by default),
    not all: B200 SGLang fp8's 1k/1k low-latency recipes prefill ``TP8 EP8`` without DP
    attention, and its 8k/1k ones with DP attention and EP 1 (docs/perf.md, "DP
    attention of the prefill pool"); for rows that do not give it, their recipe may say
    it (``serving_recipes.yaml``, applied where rows are predicted:
    :class:`dcplan.perf.predict.ServingRows`).

    Parameters
    ----------
    disaggregated : bool
        Separate prefill and decode pools.
    prefill_ep : int
        Expert parallelism of a prefill instance [GPUs].
    decode_dp_attention : bool
        The decode pool's DP attention flag.
    given : bool or None
        The row's own ``prefill_dp_attention`` (None: not given).

    Returns
    -------
    bool
        DP attention on the prefill instances.
    """
    if given is not None:
        return bool(given)
    if not disaggregated:
        return bool(decode_dp_attention)
    return prefill_ep > 1


@dataclass(frozen=True)
class ServingMeasurement:
    """One validated serving-measurement row (one benchmark run).

    Attributes
    ----------
    row, line : int
        Data row number and line in the file.
    hardware, model : str
    precision : Precision
    input_tokens, output_tokens : float
        Nominal lengths per request [tokens].
    concurrency : int
        Requests the client keeps in flight (closed loop).
    gpus : int
        All GPUs of the deployment.
    disaggregated : bool
    prefill_gpus, decode_gpus : int
        Disaggregated pools (0 when aggregated).
    prefill_tp, prefill_ep, decode_tp, decode_ep : int
        Parallelism of each pool (aggregated: prefill = decode; an empty prefill_tp
        on an aggregated row takes the decode values; empty EP means 1).
    decode_dp_attention : bool
    speculative : {"none", "mtp", "draft"}
    output_tokens_per_s_per_gpu, total_tokens_per_s_per_gpu : float or None
        Generated / input + output tokens per second per GPU of the deployment.
    median_tokens_per_s_per_user : float or None
    median_ttft_s, p99_ttft_s : float or None
        [s].
    median_tpot_ms, p99_tpot_ms : float or None
        [ms].
    power_w_per_gpu : float or None
        Mean power per GPU [W].
    framework, date, source : str
    """

    row: int
    line: int
    hardware: str
    model: str
    precision: Precision
    input_tokens: float
    output_tokens: float
    concurrency: int
    gpus: int
    disaggregated: bool
    prefill_gpus: int
    decode_gpus: int
    prefill_tp: int
    prefill_ep: int
    decode_tp: int
    decode_ep: int
    decode_dp_attention: bool
    speculative: str
    output_tokens_per_s_per_gpu: float | None
    total_tokens_per_s_per_gpu: float | None
    median_tokens_per_s_per_user: float | None
    median_ttft_s: float | None
    p99_ttft_s: float | None
    median_tpot_ms: float | None
    p99_tpot_ms: float | None
    power_w_per_gpu: float | None
    framework: str = ""
    date: str = ""
    source: str = ""
    prefill_dp_attention_given: bool | None = None

    @property
    def prefill_dp_attention(self) -> bool:
        """DP attention on the prefill instances (:func:`prefill_dp_attention`)."""
        return prefill_dp_attention(self.disaggregated, self.prefill_ep,
                                    self.decode_dp_attention, self.prefill_dp_attention_given)

    kind = "serving"

    @property
    def power_w(self) -> float | None:
        """Alias used by power fits: mean power per GPU [W]."""
        return self.power_w_per_gpu

    @property
    def scenario(self) -> str:
        """``offline`` / ``server`` / ``interactive`` by median interactivity.

        Above 50 tokens/s per user (TPOT under 20 ms) is interactive, under 20 tokens/s
        (TPOT over 50 ms) offline-like, between them server.
        """
        tpot = self.median_tpot_ms
        if tpot is None and self.median_tokens_per_s_per_user:
            tpot = 1000.0 / self.median_tokens_per_s_per_user
        if tpot is None:
            return "server"
        return "interactive" if tpot < 20 else ("offline" if tpot > 50 else "server")


def with_models(catalog: Catalog, models_file: Path | str | None) -> Catalog:
    """Return ``catalog`` with the model shapes of ``models_file`` added (they win on clashes).

    Parameters
    ----------
    catalog : Catalog
        The catalog.
    models_file : Path or str or None
        A ``models`` catalog file (None or '': ``catalog`` unchanged).

    Returns
    -------
    Catalog
        The catalog with the file's models.

    Raises
    ------
    InputError
        If the file has invalid entries.
    """
    if not models_file:
        return catalog
    result = load_kind_file(Path(models_file), "models")
    entries, problems = result[0], result[-1]
    if problems:
        raise InputError(problems)
    merged = {k: dict(v) for k, v in catalog.entries.items()}
    merged.setdefault("models", {}).update(entries)
    return dataclasses.replace(catalog, entries=merged)


def _number(text: str, integer: bool = False) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    if integer and value != int(value):
        return None
    return value


def scaleup_domain(catalog: Catalog, accelerator_id: str) -> int | None:
    """Return the scale-up domain of an accelerator's platform.

    Its own ``scaleup_domain``, else the largest domain of the catalog's racks with it,
    else None.

    Parameters
    ----------
    catalog : Catalog
        Accelerators and racks.
    accelerator_id : str
        Accelerator id.

    Returns
    -------
    int or None
        GPUs of the scale-up domain [GPUs]; None when unknown.
    """
    acc = catalog.entries.get("accelerators", {}).get(accelerator_id)
    if acc is not None and getattr(acc, "scaleup_domain", None):
        return int(acc.scaleup_domain)
    doms = [r.scaleup_domain for r in catalog.entries.get("racks", {}).values()
            if r.accelerator == accelerator_id]
    return max(doms) if doms else None


#: Closed-loop serving rows whose Little's-law ratio (requests in flight that the
#: measured throughput and median latencies imply, over the client's concurrency) lies
#: outside these bounds are named by ``perf validate`` and ``perf calibrate``. On the
#: shipped InferenceX rows 99 % lie within 0.62-1.04 (median 0.97: medians, not means,
#: of the latencies); the nine outside 0.6 are runs whose throughput is a half to a
#: fortieth of what their latencies imply (2026-12-06) [-].
LITTLE_RATIO_BOUNDS = (0.6, 1.4)


def little_ratio(m, length_frac: float) -> float | None:
    """Requests in flight that a serving row's figures imply, over its concurrency.

    A closed loop keeps ``concurrency`` requests in flight, so (Little's law) the
    completed requests per second times the time a request takes should give it back:
    requests/s = output tokens/s per GPU x the deployment's GPUs / mean output tokens;
    time per request = median TTFT + (mean output tokens - 1) x median TPOT. The
    deployment is the row's ``gpus`` when disaggregated, else one instance
    (``max(decode_tp, decode_ep)`` GPUs: the rows measure one instance, whatever their
    ``gpus``). Far from 1, the run lost requests or measured another window.

    Parameters
    ----------
    m : ServingMeasurement
        A serving row (phase rows: None).
    length_frac : float
        Mean output length over the nominal (``serving.measurement_length_frac``:
        the benchmark client's draws) [-].

    Returns
    -------
    float or None
        The ratio [-]; None without throughput, both median latencies or concurrency.
    """
    if (m.kind != "serving" or not m.output_tokens_per_s_per_gpu or not m.concurrency
            or m.median_ttft_s is None or m.median_tpot_ms is None):
        return None
    gpus = (m.gpus if m.disaggregated
            else Parallel.from_engine(m.decode_tp, m.decode_ep, m.decode_dp_attention).gpus)
    out = m.output_tokens * length_frac
    per_s = m.output_tokens_per_s_per_gpu * gpus / out
    return per_s * (m.median_ttft_s + (out - 1.0) * m.median_tpot_ms / 1e3) / m.concurrency


def breaks_little(m, length_frac: float) -> bool:
    """Whether a serving row's figures disagree with its concurrency (Little's law).

    Its :func:`little_ratio` lies outside :data:`LITTLE_RATIO_BOUNDS`; rows without one
    (phase rows, rows missing a latency or the throughput) do not.

    Parameters
    ----------
    m : Measurement or ServingMeasurement
        A measurement row.
    length_frac : float
        Mean output length over the nominal [-].

    Returns
    -------
    bool
    """
    r = little_ratio(m, length_frac)
    lo, hi = LITTLE_RATIO_BOUNDS
    return r is not None and not lo <= r <= hi


def little_note(m, ratio: float, length_frac: float) -> str:
    """Say how a serving row's figures disagree with its concurrency (Little's law).

    Parameters
    ----------
    m : ServingMeasurement
        The row.
    ratio : float
        Its :func:`little_ratio` [-].
    length_frac : float
        Mean output length over the nominal [-].

    Returns
    -------
    str
        The sentence, without the row's place.
    """
    return (f"its throughput ({m.output_tokens_per_s_per_gpu:,.4g} output tokens/s per GPU) "
            f"and median latencies (TTFT {m.median_ttft_s:.3g} s, TPOT "
            f"{m.median_tpot_ms:.3g} ms over {m.output_tokens * length_frac:,.0f} output "
            f"tokens) keep {ratio * m.concurrency:,.0f} requests in flight by Little's law, "
            f"where the client kept {m.concurrency:,}: the run may have lost requests or "
            "measured another window")


#: GPUs of a board-scale scale-up domain (an HGX or MI-series 8-GPU board): the domain
#: of a row whose accelerator names none (:func:`row_domain`), and the line between
#: boards and rack scale in the accuracy splits (``dcplan.perf.calibration``).
BOARD_DOMAIN = 8


def row_domain(m, catalog: Catalog) -> int:
    """Scale-up domain a measurement row ran on [GPUs].

    Its accelerator's (:func:`scaleup_domain`), else :data:`BOARD_DOMAIN` (an 8-GPU
    board, as every unlisted platform of the measurement files is).

    Parameters
    ----------
    m : Measurement or ServingMeasurement
        A measurement row.
    catalog : Catalog
        Accelerators and racks.

    Returns
    -------
    int
        GPUs of the row's scale-up domain [GPUs].
    """
    return scaleup_domain(catalog, m.hardware) or BOARD_DOMAIN


def spans_scaleup(m, catalog: Catalog) -> bool:
    """Whether a row's tensor- or expert-parallel group spans scale-up domains.

    Phase rows: ``gpus`` (one TP group); serving rows: decode and prefill TP and EP.
    Such a group's collectives cross the scale-out network.

    Parameters
    ----------
    m : Measurement or ServingMeasurement
        A measurement row.
    catalog : Catalog
        Accelerators and racks (the scale-up domain).

    Returns
    -------
    bool
        True where a group is larger than the scale-up domain.
    """
    domain = row_domain(m, catalog)
    if m.kind == "phase":
        return m.gpus > domain
    return max(m.decode_tp, m.decode_ep, m.prefill_tp, m.prefill_ep) > domain


def wide_decode_group(m, catalog: Catalog, board_gpus: int) -> bool:
    """Whether a row decodes over an all-to-all group wider than a board inside a domain.

    Such a group's dispatch/combine runs at ``wide_ep_comm_ratio`` times the board's
    link share; the rule is :func:`dcplan.perf.roofline.wide_ep_group`, which the
    forward step applies.

    Parameters
    ----------
    m : Measurement or ServingMeasurement
        A measurement row.
    catalog : Catalog
        Accelerators and racks (the scale-up domain).
    board_gpus : int
        GPUs of one board (``serving.board_ep_gpus``) [GPUs].

    Returns
    -------
    bool
        True where the decode expert-parallel group, with data-parallel attention,
        holds more than ``board_gpus`` GPUs of one domain.
    """
    if m.kind == "phase":
        ep, dp = (m.ep, m.dp_attention) if m.phase == "decode" else (1, False)
    else:
        ep, dp = m.decode_ep, m.decode_dp_attention
    return bool(dp) and bool(wide_ep_group(ep, row_domain(m, catalog), board_gpus))


def _read_rows(path: Path | str) -> tuple[str, list[str], list[tuple[int, list[str]]]]:
    from dcplan.scenario.schema import count_limit

    shown = display_path(path)
    text = read_text(path, encoding="utf-8-sig")
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise InputError(Problem(shown, "holds a NUL byte (not text); save the file as plain "
                                        "UTF-8 CSV", line=line))
    reader = csv.reader(text.splitlines())
    limit = count_limit(MAX_ROWS_ENV, DEFAULT_MAX_MEASUREMENT_ROWS)
    rows = []
    try:
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise InputError(Problem(shown, "file is empty; it needs a header row: "
                                            "phase-level columns "
                                            f"{', '.join(REQUIRED_COLUMNS)}, or serving "
                                            f"columns {', '.join(SERVING_COLUMNS)}")) from None
        for line_no, cells in enumerate(reader, start=2):
            if not cells or all(not c.strip() for c in cells) or \
                    cells[0].lstrip().startswith("#"):
                continue
            rows.append((line_no, cells))
            if len(rows) > limit:
                raise InputError(Problem(shown, f"more than {limit:,} measurement rows; split "
                                                "the file, or set "
                                                f"{MAX_ROWS_ENV} to a larger limit (about "
                                                "130 KB of memory per row to calibrate)",
                                         line=line_no))
    except csv.Error as exc:
        raise InputError(Problem(shown, f"not a readable CSV file ({exc}); check quoting near "
                                        "this line", line=reader.line_num or None)) from None
    return shown, header, rows


def measurement_kind(header: list[str]) -> str:
    """``phase`` or ``serving`` from a header (``serving`` has ``concurrency``).

    Parameters
    ----------
    header : list of str
        Column names of the CSV file.

    Returns
    -------
    str
        ``phase`` or ``serving``.
    """
    if "concurrency" in header or "output_tokens_per_s_per_gpu" in header:
        return "serving"
    return "phase"


def load_measurements(path: Path | str, catalog: Catalog,
                      skipped: list[Problem] | None = None
                      ) -> list[Measurement] | list[ServingMeasurement]:
    """Read and validate a measurement CSV of either schema against ``catalog``.

    Parameters
    ----------
    path : Path or str
        CSV file; its header says which schema (``phase`` column: phase-level rows;
        ``concurrency`` column: serving rows).
    catalog : Catalog
        Accelerators and models the rows refer to.
    skipped : list of Problem, optional
        Given: rows with problems are left out and their problems appended here (what
        ``dcplan perf validate`` flags), as long as the file has at least one good row
        and a good header; without it every problem raises.

    Returns
    -------
    list of Measurement or list of ServingMeasurement

    Raises
    ------
    InputError
        Every problem found (missing/unknown columns, unknown ids, text or bad values
        in numbers, impossible configurations), each naming the row, its line and the
        column.
    """
    shown, header, rows = _read_rows(path)
    if measurement_kind(header) == "serving":
        return _load_serving(shown, header, rows, catalog, skipped)
    return _load_phase(shown, header, rows, catalog, skipped)


def load_measurement_files(paths, catalog: Catalog, with_file: bool = False,
                           skipped: list[Problem] | None = None) -> list:
    """Rows of several measurement files (either schema), problems of all files at once.

    In file order, each file's rows in its order; ``with_file``: ``(path shown, row)``
    pairs (row numbers restart in each file). ``skipped``: see
    :func:`load_measurements` (bad rows left out and named there).

    Parameters
    ----------
    paths : iterable of Path or str
        Measurement CSV files.
    catalog : Catalog
        Accelerators, racks and models the rows refer to.
    with_file : bool
        Return ``(path shown, row)`` pairs.
    skipped : list of Problem, optional
        See :func:`load_measurements`.

    Returns
    -------
    list
        Rows (or ``(path, row)`` pairs), in file order.

    Raises
    ------
    InputError
        Every problem of every file.
    """
    out: list = []
    problems: list[Problem] = []
    for path in paths:
        try:
            rows = load_measurements(path, catalog, skipped)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        if with_file:
            out.extend((display_path(Path(path)), m) for m in rows)
        else:
            out.extend(rows)
    if problems:
        raise InputError(problems)
    return out


def check_serving_cells(shown: str, lines: list[list[str]], catalog: Catalog) -> None:
    """Check serving-schema rows given as CSV cells (an importer's output) as a file's.

    The rules of :func:`load_measurements` (ids, numbers, configurations, context,
    dates), so an importer never writes a row that ``perf validate`` then refuses.

    Parameters
    ----------
    shown : str
        File name to show in problems.
    lines : list of list of str
        Rows of CSV cells, the header first.
    catalog : Catalog
        Accelerators, racks and models the rows refer to.

    Raises
    ------
    InputError
        Every problem, each naming its row and column.
    """
    _parse_rows(shown, list(SERVING_COLUMNS), list(enumerate(lines, start=2)),
                partial(_serving_row, catalog=catalog))


def _header_problems(shown: str, header: list[str], required, allowed, schema: str
                     ) -> list[Problem]:
    problems = []
    for col in required:
        if col not in header:
            problems.append(Problem(shown, f"required column is missing; add it to the header "
                                           f"({schema} columns: {', '.join(required)})",
                                    field=col, line=1))
    for col in header:
        if col not in allowed:
            hint = suggest(col, allowed) or f"; allowed: {', '.join(allowed)}"
            problems.append(Problem(shown, f"unknown column{hint}", field=col, line=1))
    dup = sorted({c for c in header if header.count(c) > 1})
    for col in dup:
        problems.append(Problem(shown, "column appears twice; keep one", field=col, line=1))
    return problems


def _check_header(shown: str, header: list[str], required, allowed, schema: str) -> None:
    """Raise every header problem (missing, unknown or repeated columns) at once."""
    problems = _header_problems(shown, header, required, allowed, schema)
    if problems:
        raise InputError(problems)


def _parse_rows(shown: str, header: list[str], rows, parse: Callable,
                skipped: list[Problem] | None = None) -> list:
    """Every data row parsed by ``parse(rec, row_no, line_no, bad)``.

    ``parse`` returns the row's record, or None after calling ``bad(column, message)``
    for each problem; all problems of all rows are raised at once as one
    :class:`InputError`. With a ``skipped`` list, a file with some good rows returns
    them and appends the bad rows' problems to ``skipped`` instead (each names its row).
    """
    problems: list[Problem] = []
    out = []
    for row_no, (line_no, cells) in enumerate(rows, start=1):
        label = f"row {row_no}"

        def bad(col: str, msg: str, _label=label, _line=line_no) -> None:
            problems.append(Problem(shown, msg, entry=_label, field=col, line=_line))

        if len(cells) != len(header):
            bad("-", f"has {len(cells)} cells but the header has {len(header)} columns; "
                     "quote cells that contain commas")
            continue
        rec = parse({h: c.strip() for h, c in zip(header, cells, strict=True)}, row_no,
                    line_no, bad)
        if rec is not None:
            out.append(rec)
    if not problems and not out:
        problems.append(Problem(shown, "has no data rows; add at least one measurement"))
    if problems and skipped is not None and out:
        skipped.extend(problems)
        return out
    if problems:
        raise InputError(problems)
    return out


def _load_phase(shown: str, header: list[str], rows, catalog: Catalog,
                skipped: list[Problem] | None = None) -> list[Measurement]:
    _check_header(shown, header, REQUIRED_COLUMNS, REQUIRED_COLUMNS + OPTIONAL_COLUMNS,
                  "phase-level")
    return _parse_rows(shown, header, rows, partial(_phase_row, catalog=catalog), skipped)


def _phase_row(rec: dict, row_no: int, line_no: int, bad: Callable, *, catalog: Catalog
               ) -> Measurement | None:
    ok = _check_ids(rec, catalog, bad)
    phase = rec["phase"]
    if phase not in PHASES:
        bad("phase", f"'{phase}' is not one of prefill, decode")
        ok = False
    values: dict[str, float | None] = {}
    for col, integer, allow_zero, allow_empty in (
        ("gpus", True, False, False), ("batch", True, False, False),
        ("context_tokens", False, phase == "decode", False),
        ("tokens_per_s", False, False, False), ("power_w", False, False, True),
        ("prompt_tokens", False, False, True), ("output_tokens", False, False, True),
        ("ttft_s", False, False, True), ("tpot_ms", False, False, True),
        ("power_cap_w", False, False, True),
    ):
        values[col], good = _cell(rec.get(col, ""), integer, allow_zero, allow_empty,
                                  col, bad)
        ok &= good
    has_p, has_o = values["prompt_tokens"] is not None, values["output_tokens"] is not None
    if has_p != has_o:
        bad("prompt_tokens" if not has_p else "output_tokens",
            "prompt_tokens and output_tokens go together; give both or neither")
        ok = False
    has_slo = values["ttft_s"] is not None or values["tpot_ms"] is not None
    if has_slo and not (has_p and has_o):
        bad("ttft_s" if values["ttft_s"] is not None else "tpot_ms",
            "latency limits apply to end-to-end rows only; give prompt_tokens and "
            "output_tokens too, or leave the limits empty")
        ok = False
    if (has_p or has_o) and phase == "prefill":
        bad("prompt_tokens", "end-to-end columns apply to decode rows only; leave them "
                             "empty on prefill rows")
        ok = False
    as_of = rec.get("as_of", "")
    if as_of:
        if year_fraction(as_of) is None:
            bad("as_of", f"'{as_of}' is not a date; write YYYY-MM-DD (or YYYY-MM), or leave "
                         "it empty")
            ok = False
    dp_text = (rec.get("dp_attention", "") or "").strip().lower()
    if dp_text not in ("", "true", "false"):
        bad("dp_attention", f"'{rec.get('dp_attention')}' is not true or false; write true, "
                            "false or leave it empty")
        ok = False
    dp_attention = dp_text == "true"
    ep_v, good = _cell(rec.get("ep", ""), True, False, True, "ep", bad)
    ok &= good
    ep = int(ep_v) if ep_v is not None else 1
    # checked whatever else is wrong with the row, so every problem is named at once
    # experts over ep GPUs, each expert tensor-parallel over gpus / ep (TensorRT-LLM's
    # --tp 8 --ep 4: MoE TP2 x EP4)
    if good and values.get("gpus") and int(values["gpus"]) % ep:
        bad("ep", f"expert parallelism {ep} must divide the replica's "
                  f"{int(values['gpus'])} GPUs (each expert tensor-parallel over GPUs / ep); "
                  "1: every expert over all of them")
        ok = False
    model_entry = catalog.entries["models"].get(rec.get("model", ""))
    if good and ep > 1 and model_entry is not None and not model_entry.is_moe:
        bad("ep", f"{rec['model']} has no experts; leave ep empty")
        ok = False
    if ok and values["gpus"]:
        ok &= _check_tp(int(values["gpus"]), "gpus", rec["hardware"], rec["model"],
                        catalog, bad, dp_attention)
    if ok:
        return Measurement(
            row=row_no, hardware=rec["hardware"], model=rec["model"],
            precision=Precision(rec["precision"]), phase=phase,
            gpus=int(values["gpus"]), batch=int(values["batch"]),
            context_tokens=float(values["context_tokens"]),
            tokens_per_s=float(values["tokens_per_s"]), power_w=values["power_w"],
            prompt_tokens=values["prompt_tokens"], output_tokens=values["output_tokens"],
            ttft_s=values["ttft_s"], tpot_ms=values["tpot_ms"],
            source=rec.get("source", ""), as_of=rec.get("as_of", ""),
            notes=rec.get("notes", ""), line=line_no, framework=rec.get("framework", ""),
            power_cap_w=values["power_cap_w"], ep=ep, dp_attention=dp_attention,
        )
    return None


def _check_ids(rec: dict, catalog: Catalog, bad) -> bool:
    accelerators = catalog.entries.get("accelerators", {})
    models = catalog.entries.get("models", {})
    ok = True
    hw = rec["hardware"]
    if hw not in accelerators:
        bad("hardware", f"unknown accelerator id '{hw}'{suggest(hw, accelerators)}; use an "
                        "id from accelerators.yaml")
        ok = False
    model = rec["model"]
    if model not in models:
        bad("model", f"unknown model id '{model}'{suggest(model, models)}; use an id from "
                     "models.yaml or add the shape with --models FILE")
        ok = False
    prec = rec["precision"]
    if prec not in {p.value for p in Precision}:
        bad("precision", f"'{prec}' is not one of bf16, fp8, fp4")
        ok = False
    elif hw in accelerators and accelerators[hw].dense_tflops(prec) is None:
        bad("precision", f"{hw} has no {prec} dense throughput in the catalog")
        ok = False
    return ok


def _cell(raw: str, integer: bool, allow_zero: bool, allow_empty: bool, col: str, bad
          ) -> tuple[float | None, bool]:
    if raw == "":
        if not allow_empty:
            bad(col, "is empty; give a value")
            return None, False
        return None, True
    value = _number(raw, integer)
    if value is None:
        kind = "a whole number" if integer else "a number"
        bad(col, f"'{raw}' is not {kind}")
        return None, False
    if value < 0 or (value == 0 and not allow_zero):
        bad(col, f"must be {'>= 0' if allow_zero else '> 0'} (got {raw}); negative or "
                 "zero values are not measurements")
        return None, False
    if col.endswith("gpus") and value > MAX_MEASUREMENT_GPUS:
        bad(col, f"{value:,.0f} GPUs are more than any system holds (at most "
                 f"{MAX_MEASUREMENT_GPUS:,} GPUs per row); give the GPUs of the measured "
                 "deployment")
        return None, False
    return value, True


def _check_tp(tp: int, col: str, hw: str, model_id: str, catalog: Catalog, bad,
              dp_attention: bool = False) -> bool:
    """Tensor parallelism must split the heads and fill whole scale-up domains.

    Under DP attention the column holds the attention-DP width (engines record
    ``--tp 48 --enable-dp-attention`` so): attention runs at TP 1 on every GPU, so only
    the domain rule applies.
    """
    model = catalog.entries["models"][model_id]
    if not dp_attention and model.attention_heads % tp:
        bad(col, f"tensor parallelism {tp} does not divide the {model.attention_heads} "
                 f"attention heads of {model_id}; engines split heads evenly")
        return False
    domain = scaleup_domain(catalog, hw)
    if domain and tp > domain and tp % domain:
        bad(col, f"tensor parallelism {tp} is larger than the scale-up domain of {hw} "
                 f"({domain}) and not a whole number of domains: impossible; use a "
                 f"multiple of {domain} or at most {domain}")
        return False
    return True


def _load_serving(shown: str, header: list[str], rows, catalog: Catalog,
                  skipped: list[Problem] | None = None) -> list[ServingMeasurement]:
    _check_header(shown, header, SERVING_COLUMNS, SERVING_COLUMNS + SERVING_OPTIONAL_COLUMNS,
                  "serving")
    return _parse_rows(shown, header, rows, partial(_serving_row, catalog=catalog), skipped)


def _serving_row(rec: dict, row_no: int, line_no: int, bad: Callable, *, catalog: Catalog
                 ) -> ServingMeasurement | None:
    ok = _check_ids(rec, catalog, bad)
    v: dict[str, float | None] = {}
    for col in ("input_tokens", "output_tokens", "concurrency", "gpus", "decode_tp"):
        v[col], good = _cell(rec[col], col not in ("input_tokens", "output_tokens"),
                             False, False, col, bad)
        ok &= good
    for col in ("prefill_tp", "prefill_ep", "decode_ep", "prefill_gpus", "decode_gpus"):
        v[col], good = _cell(rec[col], True, False, True, col, bad)
        ok &= good
    for col in ("output_tokens_per_s_per_gpu", "total_tokens_per_s_per_gpu",
                "median_tokens_per_s_per_user", "median_ttft_s", "p99_ttft_s",
                "median_tpot_ms", "p99_tpot_ms", "power_w_per_gpu"):
        v[col], good = _cell(rec[col], False, False, True, col, bad)
        ok &= good
    flags = {}
    for col in ("disaggregated", "decode_dp_attention"):
        text = rec[col].lower()
        if text in ("true", "1", "yes"):
            flags[col] = True
        elif text in ("false", "0", "no", ""):
            flags[col] = False
        else:
            bad(col, f"'{rec[col]}' is not true or false")
            ok = False
    # the prefill pool's DP attention, optional: empty or absent leaves it to the rule
    pre_text = rec.get("prefill_dp_attention", "").lower()
    flags["prefill_dp_attention"] = None
    if pre_text in ("true", "1", "yes"):
        flags["prefill_dp_attention"] = True
    elif pre_text in ("false", "0", "no"):
        flags["prefill_dp_attention"] = False
    elif pre_text:
        bad("prefill_dp_attention", f"'{rec['prefill_dp_attention']}' is not true or false; "
                                    "leave it empty to infer it from prefill_ep")
        ok = False
    if (flags["prefill_dp_attention"] is not None and flags.get("disaggregated") is False
            and flags.get("decode_dp_attention") is not None
            and flags["prefill_dp_attention"] != flags["decode_dp_attention"]):
        bad("prefill_dp_attention", "differs from decode_dp_attention on an aggregated row, "
                                    "whose prefill runs on the decode instances; make them "
                                    "equal or leave prefill_dp_attention empty")
        ok = False
    dis_text = rec["disaggregated"].lower()
    if v["prefill_tp"] is None and v["decode_tp"] is not None:
        if dis_text in ("true", "1", "yes"):
            bad("prefill_tp", "is empty; disaggregated rows need the prefill pool's "
                              "tensor parallelism")
            ok = False
        else:  # aggregated: prefill runs on the decode instances
            v["prefill_tp"], v["prefill_ep"] = v["decode_tp"], v["decode_ep"]
    spec = rec["speculative"] or "none"
    if spec not in SPECULATIVE:
        bad("speculative", f"'{spec}' is not one of {', '.join(SPECULATIVE)}")
        ok = False
    # measured values that contradict each other
    for lo, hi, what in (("output_tokens_per_s_per_gpu", "total_tokens_per_s_per_gpu",
                          "total (input + output) tokens/s below output tokens/s"),
                         ("median_ttft_s", "p99_ttft_s", "p99 TTFT below the median"),
                         ("median_tpot_ms", "p99_tpot_ms", "p99 TPOT below the median")):
        if v.get(lo) is not None and v.get(hi) is not None and v[hi] < v[lo]:
            bad(hi, f"{v[hi]:g} is {what} ({v[lo]:g}); check the columns")
            ok = False
    if ok and all(v[c] is None for c in ("output_tokens_per_s_per_gpu", "median_tpot_ms",
                                         "median_ttft_s")):
        bad("output_tokens_per_s_per_gpu", "no measured value: give at least one of "
            "output_tokens_per_s_per_gpu, median_tpot_ms, median_ttft_s")
        ok = False
    if rec["date"] and year_fraction(rec["date"]) is None:
        bad("date", f"'{rec['date']}' is not a date; write YYYY-MM-DD (or YYYY-MM), or leave "
                    "it empty")
        ok = False
    if ok:
        ok = _check_serving_config(rec, v, flags, spec, catalog, bad)
    if ok:
        dis = flags["disaggregated"]
        return ServingMeasurement(
            row=row_no, line=line_no, hardware=rec["hardware"], model=rec["model"],
            precision=Precision(rec["precision"]),
            input_tokens=float(v["input_tokens"]), output_tokens=float(v["output_tokens"]),
            concurrency=int(v["concurrency"]), gpus=int(v["gpus"]), disaggregated=dis,
            prefill_gpus=int(v["prefill_gpus"] or 0) if dis else 0,
            decode_gpus=int(v["decode_gpus"] or 0) if dis else 0,
            prefill_tp=int(v["prefill_tp"]), prefill_ep=int(v["prefill_ep"] or 1),
            decode_tp=int(v["decode_tp"]), decode_ep=int(v["decode_ep"] or 1),
            decode_dp_attention=flags["decode_dp_attention"], speculative=spec,
            output_tokens_per_s_per_gpu=v["output_tokens_per_s_per_gpu"],
            total_tokens_per_s_per_gpu=v["total_tokens_per_s_per_gpu"],
            median_tokens_per_s_per_user=v["median_tokens_per_s_per_user"],
            median_ttft_s=v["median_ttft_s"], p99_ttft_s=v["p99_ttft_s"],
            median_tpot_ms=v["median_tpot_ms"], p99_tpot_ms=v["p99_tpot_ms"],
            power_w_per_gpu=v["power_w_per_gpu"], framework=rec["framework"],
            date=rec["date"], source=rec["source"],
            prefill_dp_attention_given=flags["prefill_dp_attention"],
        )
    return None


def _check_serving_config(rec: dict, v: dict, flags: dict, spec: str, catalog: Catalog,
                          bad) -> bool:
    """Impossible parallel configurations (each problem names its column)."""
    ok = True
    model = catalog.entries["models"][rec["model"]]
    gpus = int(v["gpus"])
    if spec == "mtp" and not model.mtp_modules:
        bad("speculative", f"{model.id} has no multi-token-prediction module (mtp_modules 0 "
                           "in models.yaml); use none or draft")
        ok = False
    need = float(v["input_tokens"]) + float(v["output_tokens"])
    if need > model.max_context_tokens:
        bad("input_tokens", f"{need:,.0f} input + output tokens are more than the "
                            f"{model.max_context_tokens:,} of context {model.id} supports "
                            "(max_context_tokens in models.yaml)")
        ok = False
    pools = [("prefill", "prefill_tp", "prefill_ep"), ("decode", "decode_tp", "decode_ep")]
    for pool, tp_col, ep_col in pools:
        tp, ep = int(v[tp_col]), int(v[ep_col] or 1)
        # DP attention is recorded for the decode pool; the prefill pool's follows from
        # it and the prefill EP (prefill_dp_attention)
        dp_attn = (flags["decode_dp_attention"] if pool == "decode" else
                   prefill_dp_attention(flags["disaggregated"], ep, flags["decode_dp_attention"],
                                        flags["prefill_dp_attention"]))
        if ep > 1 and not model.is_moe:
            bad(ep_col, f"expert parallelism {ep} on dense model {model.id}; use 1 or empty")
            ok = False
        elif model.is_moe and ep > model.experts_total:
            bad(ep_col, f"expert parallelism {ep} exceeds the {model.experts_total} experts "
                        f"of {model.id}")
            ok = False
        ok &= _check_tp(tp, tp_col, rec["hardware"], rec["model"], catalog, bad, dp_attn)
        domain = scaleup_domain(catalog, rec["hardware"])
        if domain and ep > domain and ep % domain:
            bad(ep_col, f"expert parallelism {ep} is larger than the scale-up domain of "
                        f"{rec['hardware']} ({domain}) and not a whole number of domains: "
                        "impossible")
            ok = False
    if not ok:
        return False
    inst_p = max(int(v["prefill_tp"]), int(v["prefill_ep"] or 1))
    inst_d = max(int(v["decode_tp"]), int(v["decode_ep"] or 1))
    if flags["disaggregated"]:
        pg, dg = v["prefill_gpus"], v["decode_gpus"]
        for col, val in (("prefill_gpus", pg), ("decode_gpus", dg)):
            if val is None:
                bad(col, "disaggregated rows need prefill_gpus and decode_gpus")
                ok = False
        if not ok:
            return False
        if int(pg) + int(dg) != gpus:
            bad("gpus", f"prefill_gpus + decode_gpus = {int(pg) + int(dg)} but gpus = {gpus}; "
                        "gpus counts both pools")
            ok = False
        if inst_p > int(pg) or inst_d > int(dg):
            pool, need, have = (("prefill", inst_p, int(pg)) if inst_p > int(pg)
                                else ("decode", inst_d, int(dg)))
            bad(f"{pool}_gpus", f"{pool} parallelism {need} needs {need} GPUs per instance "
                                f"but the pool has {have}: impossible")
            ok = False
        elif int(pg) % inst_p:
            bad("prefill_gpus", f"{int(pg)} prefill GPUs are not whole instances of "
                                f"max(prefill_tp, prefill_ep) = {inst_p}")
            ok = False
        if inst_d <= int(dg) and int(dg) % inst_d:
            bad("decode_gpus", f"{int(dg)} decode GPUs are not whole instances of "
                               f"max(decode_tp, decode_ep) = {inst_d}")
            ok = False
    else:
        for col in ("prefill_gpus", "decode_gpus"):
            if v[col] is not None:
                bad(col, "aggregated rows have no separate pools; leave it empty")
                ok = False
        if (int(v["prefill_tp"]), int(v["prefill_ep"] or 1)) != (int(v["decode_tp"]),
                                                                 int(v["decode_ep"] or 1)):
            bad("prefill_tp", "aggregated rows run prefill and decode on the same instances; "
                              "prefill_tp/prefill_ep must equal decode_tp/decode_ep")
            ok = False
        if inst_d > gpus:
            bad("decode_tp" if int(v["decode_tp"]) >= inst_d else "decode_ep",
                f"parallelism {inst_d} needs {inst_d} GPUs per instance but the row has "
                f"{gpus}: impossible")
            ok = False
        elif gpus % inst_d:
            bad("gpus", f"{gpus} GPUs are not whole instances of max(decode_tp, decode_ep) = "
                        f"{inst_d}")
            ok = False
    return ok


def pct_error(predicted: float, measured: float) -> float:
    """Signed percentage error ``(predicted - measured) / measured * 100`` [%].

    Parameters
    ----------
    predicted : float
        Predicted value [unit of ``measured``].
    measured : float
        Measured value [any unit, not 0].

    Returns
    -------
    float
        Signed error [%].
    """
    return (predicted - measured) / measured * 100.0


def summary(errors: list[float]) -> dict[str, float | None]:
    """Median, 90th percentile and max absolute percentage error, and the signed median.

    Parameters
    ----------
    errors : list of float
        Signed errors (predicted / measured - 1) [%]; None and non-finite entries are
        left out.

    Returns
    -------
    dict
        ``median_abs_pct``, ``p90_abs_pct``, ``max_abs_pct`` and ``median_signed_pct``
        (the bias: positive where the model predicts too much) [%], None when empty,
        and ``rows`` [count].
    """
    errors = [e for e in errors if e is not None and np.isfinite(e)]
    if not errors:
        return {"median_abs_pct": None, "p90_abs_pct": None, "max_abs_pct": None,
                "median_signed_pct": None, "rows": 0}
    e = np.asarray(errors, dtype=float)
    a = np.abs(e)
    return {"median_abs_pct": float(np.median(a)), "p90_abs_pct": float(np.percentile(a, 90)),
            "max_abs_pct": float(a.max()), "median_signed_pct": float(np.median(e)),
            "rows": len(errors)}


# ------------------------------------------------ files beside the measurement CSVs

#: YAML files that belong with the measurement CSVs (read by the model, not rows):
#: file name -> what it holds.
SUPPORT_FILES = {
    LENGTHS_FILE: "benchmark length distributions",
    POWER_SYSTEMS_FILE: "MLPerf power systems",
    RECIPES_FILE: "admission and layout settings of the serving rows' engine recipes",
}


def is_support_file(path: Path | str) -> bool:
    """Whether ``path`` is one of :data:`SUPPORT_FILES` (by its name).

    Parameters
    ----------
    path : Path or str
        A file.

    Returns
    -------
    bool
        True for a support file's name.
    """
    return Path(path).name in SUPPORT_FILES


def check_support_file(path: Path | str, catalog: Catalog | None = None
                       ) -> tuple[str, list[Problem]]:
    """Validate a file of :data:`SUPPORT_FILES` through the loader that reads it.

    Parameters
    ----------
    path : Path or str
        A file of :data:`SUPPORT_FILES`.
    catalog : Catalog, optional
        To check model ids where the file names them.

    Returns
    -------
    checked, problems
        What was checked (for a summary line; '' when there are problems) and every
        problem found.
    """
    p = Path(path)
    shown = display_path(p)
    try:
        if p.name == POWER_SYSTEMS_FILE:
            systems = load_power_systems(p)
            runs = sum(len(s["runs"]) for s in systems.values())
            return (f"{len(systems)} MLPerf power system{'s' * (len(systems) != 1)} "
                    f"({runs} run{'s' * (runs != 1)}) in {shown}", [])
        if p.name == LENGTHS_FILE:
            problems = check_benchmark_lengths(p, catalog)
            return ("" if problems else f"benchmark length distributions {shown}"), problems
        if p.name == RECIPES_FILE:
            n = len(load_recipes(p, catalog).entries)
            return f"{n} serving recipe{'s' * (n != 1)} in {shown}", []
    except InputError as exc:
        return "", exc.problems
    return "", [Problem(shown, "not a file that belongs with the measurement files ("
                               + ", ".join(SUPPORT_FILES) + ")")]


def check_benchmark_lengths(path: Path | str, catalog: Catalog | None = None
                            ) -> list[Problem]:
    """Every problem of ``length_distributions.yaml`` (empty when it reads cleanly).

    Each distribution is checked on its own (field and line named): its ``kind`` and
    parameters, ``serving_rows.prompts_per_client`` (an integer >= 0), unknown keys (a
    misspelt ``phase_rows`` would otherwise drop every MLPerf distribution silently) and,
    given ``catalog``, that every ``phase_rows`` key is a known model. Then the file is
    read by :func:`dcplan.perf.benchmarks.load_benchmark_lengths`, the loader the model uses.

    Parameters
    ----------
    path : Path or str
        The ``length_distributions.yaml`` file.
    catalog : Catalog, optional
        To check that every ``phase_rows`` key is a known model.

    Returns
    -------
    list of Problem
        Every problem found.
    """
    from dcplan.lengths import length_dist
    from dcplan.yamlio import KEY_LINES, META_KEYS, read_yaml

    p = Path(path)
    shown = display_path(p)
    try:
        doc = read_yaml(p)
    except InputError as exc:
        return exc.problems
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        return [Problem(shown, "expected a mapping with serving_rows and phase_rows")]
    problems: list[Problem] = []

    def line(m, key):
        return (m.get(KEY_LINES) or {}).get(key) if isinstance(m, dict) else None

    def unknown(m, allowed, prefix):
        for key in m:
            if key not in META_KEYS and key not in allowed:
                problems.append(Problem(shown, f"unknown key{did_you_mean(str(key), allowed)}: "
                                               "rename or remove it",
                                        field=f"{prefix}{key}", line=line(m, key)))

    def dist(m, key, field):
        try:
            length_dist(m.get(key))
        except (ValueError, TypeError) as exc:
            problems.append(Problem(shown, str(exc), field=field, line=line(m, key)))

    unknown(doc, ("source", "as_of", "serving_rows", "phase_rows", "estimates"), "")
    sr = doc.get("serving_rows")
    if sr is not None and not isinstance(sr, dict):
        problems.append(Problem(shown, "expected a mapping with length_distribution and "
                                       "prompts_per_client", field="serving_rows",
                                line=line(doc, "serving_rows")))
    elif sr:
        unknown(sr, ("length_distribution", "prompts_per_client"), "serving_rows.")
        dist(sr, "length_distribution", "serving_rows.length_distribution")
        ppc = sr.get("prompts_per_client")
        if ppc is not None and (isinstance(ppc, bool) or not isinstance(ppc, int) or ppc < 0):
            problems.append(Problem(shown, f"{ppc!r} is not an integer >= 0 (requests each "
                                           "closed-loop client sends; 0: no opening burst)",
                                    field="serving_rows.prompts_per_client",
                                    line=line(sr, "prompts_per_client")))
    pr = doc.get("phase_rows")
    if pr is not None and not isinstance(pr, dict):
        problems.append(Problem(shown, "expected a mapping: model id -> length distribution",
                                field="phase_rows", line=line(doc, "phase_rows")))
    elif pr:
        models = catalog.entries.get("models", {}) if catalog is not None else None
        for key in pr:
            if key in META_KEYS:
                continue
            if models is not None and str(key) not in models:
                problems.append(Problem(shown, f"unknown model id '{key}'"
                                               f"{suggest(str(key), models)}",
                                        field=f"phase_rows.{key}", line=line(pr, key)))
            dist(pr, key, f"phase_rows.{key}")
    if not problems:
        try:
            load_benchmark_lengths(p)
        except (ValueError, TypeError) as exc:
            problems += (exc.problems if isinstance(exc, InputError)
                         else [Problem(shown, str(exc))])
    return problems
