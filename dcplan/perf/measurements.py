"""Measurement CSVs: reading, validation, and the model's prediction for each row.

Schema (one row per measured operating point of one replica):

==================  ==========================================================
column              meaning
==================  ==========================================================
hardware            accelerator id (accelerators catalog)
model               model id (models catalog, or a ``--models`` file)
precision           ``bf16``, ``fp8`` or ``fp4``
phase               ``prefill`` or ``decode``
gpus                accelerators in the replica
batch               sequences in flight
context_tokens      prefill: prompt tokens per sequence; decode: tokens already in
                    each sequence's KV cache
tokens_per_s        replica total [tokens/s] (prefill: prompt tokens; decode:
                    generated tokens)
power_w             mean total power of the replica's accelerators [W]; may be empty
==================  ==========================================================

Optional columns: ``source``, ``as_of``, ``notes`` (provenance), and
``prompt_tokens`` + ``output_tokens`` (decode rows only, given together): they mark
an *end-to-end* serving measurement whose ``tokens_per_s`` counts generated tokens
while the replica also prefilled every request's prompt (MLPerf Offline/Server);
the prediction then includes that prefill time. On such rows ``ttft_s`` and
``tpot_ms`` (optional) give latency limits (MLPerf Server): the prediction is then
the throughput at the batch (at most ``batch``) that meets them, like the goodput
search of :mod:`dcplan.perf.goodput`.
"""

from __future__ import annotations

import csv
import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dcplan.catalog import Catalog, load_kind_file, suggest
from dcplan.errors import InputError, Problem, display_path
from dcplan.perf.params import HardwareParams, ServingParams
from dcplan.perf.power import accelerator_power_kw, activity
from dcplan.perf.roofline import ModelShape, Replica
from dcplan.schema import Precision
from dcplan.yamlio import read_text

REQUIRED_COLUMNS = ("hardware", "model", "precision", "phase", "gpus", "batch",
                    "context_tokens", "tokens_per_s", "power_w")
OPTIONAL_COLUMNS = ("source", "as_of", "notes", "prompt_tokens", "output_tokens", "ttft_s",
                    "tpot_ms")
PHASES = ("prefill", "decode")


@dataclass(frozen=True)
class Measurement:
    """One validated measurement row.

    Attributes
    ----------
    row : int
        1-based data row number (the header is line 1, so row ``n`` is line ``n+1``).
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

    @property
    def end_to_end(self) -> bool:
        """Whether the row is an end-to-end serving measurement."""
        return self.prompt_tokens is not None


def with_models(catalog: Catalog, models_file: Path | str | None) -> Catalog:
    """Return ``catalog`` with the model shapes of ``models_file`` added (they win on clashes).

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


def load_measurements(path: Path | str, catalog: Catalog) -> list[Measurement]:
    """Read and validate a measurement CSV against ``catalog``.

    Parameters
    ----------
    path : Path or str
        CSV file with the columns of :data:`REQUIRED_COLUMNS`.
    catalog : Catalog
        Accelerators and models the rows refer to.

    Returns
    -------
    list of Measurement

    Raises
    ------
    InputError
        Every problem found (missing/unknown columns, unknown ids, bad or negative
        values), each naming the row (and its line) and the column.
    """
    shown = display_path(path)
    text = read_text(path, encoding="utf-8-sig")
    lines = [ln for ln in text.splitlines()]
    reader = csv.reader(lines)
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise InputError(Problem(shown, "file is empty; it needs a header row with columns "
                                        + ", ".join(REQUIRED_COLUMNS))) from None
    problems: list[Problem] = []
    allowed = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
    for col in REQUIRED_COLUMNS:
        if col not in header:
            problems.append(Problem(shown, "required column is missing; add it to the header "
                                           f"(columns: {', '.join(REQUIRED_COLUMNS)})", field=col,
                                    line=1))
    for col in header:
        if col not in allowed:
            hint = suggest(col, allowed) or f"; allowed: {', '.join(allowed)}"
            problems.append(Problem(shown, f"unknown column{hint}", field=col, line=1))
    if problems:
        raise InputError(problems)
    accelerators = catalog.entries.get("accelerators", {})
    models = catalog.entries.get("models", {})
    out: list[Measurement] = []
    row_no = 0
    for line_no, cells in enumerate(reader, start=2):
        if not cells or all(not c.strip() for c in cells) or cells[0].lstrip().startswith("#"):
            continue
        row_no += 1
        label = f"row {row_no}"

        def bad(col: str, msg: str, _label=label, _line=line_no) -> None:
            problems.append(Problem(shown, msg, entry=_label, field=col, line=_line))

        if len(cells) != len(header):
            bad("-", f"has {len(cells)} cells but the header has {len(header)} columns; "
                     "quote cells that contain commas")
            continue
        rec = {h: c.strip() for h, c in zip(header, cells, strict=True)}
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
        ):
            raw = rec.get(col, "")
            if raw == "":
                if not allow_empty:
                    bad(col, "is empty; give a value")
                    ok = False
                values[col] = None
                continue
            value = _number(raw, integer)
            if value is None:
                kind = "a whole number" if integer else "a number"
                bad(col, f"'{raw}' is not {kind}")
                ok = False
            elif value < 0 or (value == 0 and not allow_zero):
                bad(col, f"must be {'>= 0' if allow_zero else '> 0'} (got {raw}); negative or "
                         "zero values are not measurements")
                ok = False
            values[col] = value
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
        if ok:
            out.append(Measurement(
                row=row_no, hardware=hw, model=model, precision=Precision(prec), phase=phase,
                gpus=int(values["gpus"]), batch=int(values["batch"]),
                context_tokens=float(values["context_tokens"]),
                tokens_per_s=float(values["tokens_per_s"]), power_w=values["power_w"],
                prompt_tokens=values["prompt_tokens"], output_tokens=values["output_tokens"],
                ttft_s=values["ttft_s"], tpot_ms=values["tpot_ms"],
                source=rec.get("source", ""), as_of=rec.get("as_of", ""),
                notes=rec.get("notes", ""),
            ))
    if not problems and not out:
        problems.append(Problem(shown, "has no data rows; add at least one measurement"))
    if problems:
        raise InputError(problems)
    return out


@dataclass(frozen=True)
class Prediction:
    """The model's throughput and power for one measurement row.

    Attributes
    ----------
    tokens_per_s : float
        Replica total [tokens/s].
    power_w : float
        Replica accelerator power [W].
    fits : bool
        False when the weights + KV of the row do not fit the replica's HBM (the
        prediction is still computed, ignoring capacity).
    """

    tokens_per_s: float
    power_w: float
    fits: bool


def predict(m: Measurement, catalog: Catalog, params: HardwareParams,
            serving: ServingParams) -> Prediction:
    """Predict throughput and power of measurement ``m`` with ``params``.

    decode: ``B / t_dec(B, context)``; prefill: ``B * context / t_prefill``;
    end-to-end decode: ``O / (t_prefill(P) + O * t_dec(B, P + O/2) / B)``.
    """
    acc = catalog.get("accelerators", m.hardware)
    shape = ModelShape.build(catalog.get("models", m.model), m.precision, serving)
    rep = Replica.build(acc, m.gpus, shape, m.precision, params, serving)
    b = float(m.batch)
    if m.phase == "prefill":
        c, mem, x, o = (float(v) for v in rep.prefill_parts(m.context_tokens, 0.0, b,
                                                             batched=False))
        t = max(c, mem) + x + o
        tps, u_c, u_m = b * m.context_tokens / t, c / t, mem / t
        need = b * float(shape.kv_bytes_seq(m.context_tokens))
    elif m.end_to_end:
        p_tok, o_tok = float(m.prompt_tokens), float(m.output_tokens)
        pc, pm, px, po = (float(v) for v in rep.prefill_parts(p_tok, 0.0, 1.0, batched=True))
        t_pre = max(pc, pm) + px + po
        bs = np.arange(1, m.batch + 1, dtype=float) if (m.ttft_s or m.tpot_ms) else np.array([b])
        dc, dm, dx = rep.decode_parts(bs, m.context_tokens)
        t_dec = np.maximum(dc, dm) + dx + params.step_overhead_s
        per_req = t_pre + o_tok * t_dec / bs
        ok = np.ones_like(bs, dtype=bool)
        if m.tpot_ms:
            ok &= t_dec + t_pre * bs / o_tok <= m.tpot_ms / 1e3
        if m.ttft_s:
            t_alone = float(rep.prefill_time(p_tok, 0.0, 1.0, batched=False))
            ok &= serving.ttft_queue_factor * t_alone + t_dec <= m.ttft_s
        i = int(np.argmax(np.where(ok, o_tok / per_req, -1.0))) if ok.any() else 0
        b = float(bs[i])
        tps = o_tok / per_req[i]
        u_c = (pc + o_tok * dc[i] / b) / per_req[i]
        u_m = (pm + o_tok * dm[i] / b) / per_req[i]
        need = b * float(shape.kv_bytes_seq(m.context_tokens))
    else:
        dc, dm, dx = (float(v) for v in rep.decode_parts(b, m.context_tokens))
        t = max(dc, dm) + dx + params.step_overhead_s
        tps, u_c, u_m = b / t, dc / t, dm / t
        need = b * float(shape.kv_bytes_seq(m.context_tokens))
    act = activity(params, u_c, u_m)
    power = float(m.gpus * accelerator_power_kw(acc, act) * 1e3)
    return Prediction(float(tps), power, bool(need <= rep.kv_budget_bytes))


def pct_error(predicted: float, measured: float) -> float:
    """Signed percentage error ``(predicted - measured) / measured * 100`` [%]."""
    return (predicted - measured) / measured * 100.0


def summary(errors: list[float]) -> dict[str, float | None]:
    """Median and max absolute percentage error of ``errors`` (None when empty)."""
    if not errors:
        return {"median_abs_pct": None, "max_abs_pct": None, "rows": 0}
    a = np.abs(np.asarray(errors, dtype=float))
    return {"median_abs_pct": float(np.median(a)), "max_abs_pct": float(a.max()),
            "rows": len(errors)}
