"""Demand forecast files: ``cases: {case: {workload: {period: demand}}}``.

A scenario takes its demand table from one case of a forecast file with
``demand: {forecast: {file: F, case: C}}`` (:func:`resolve_forecast`);
:func:`check_forecast` checks a forecast file on its own (``dcplan validate``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dcplan.catalog import suggest, unknown_message
from dcplan.errors import InputError, Problem, display_path
from dcplan.scenario.schema import parse_period_label
from dcplan.yamlio import KEY_LINES, META_KEYS, read_yaml, strip_lines


def resolve_forecast(path: Path, raw: dict) -> dict:
    """Replace ``demand.forecast`` by the table of the named case of a forecast file."""
    demand = raw.get("demand")
    if not isinstance(demand, dict) or demand.get("forecast", None) is None:
        return raw  # none, or ``forecast: null`` (a child dropping its base's forecast)
    shown = display_path(path)
    ref = demand["forecast"]
    line = demand.get(KEY_LINES, {}).get("forecast")
    if not isinstance(ref, dict) or set(strip_lines(ref)) != {"file", "case"}:
        raise InputError(Problem(shown, "write forecast as {file: FORECAST.yaml, case: NAME}",
                                 field="demand.forecast", line=line))
    if "table" in demand:
        raise InputError(Problem(shown, "give either demand.table or demand.forecast, not both",
                                 field="demand.forecast", line=line))
    fpath = path.parent / str(ref["file"])
    fshown = display_path(fpath)
    if not fpath.exists():  # a folder or device is reported by read_yaml
        raise InputError(Problem(shown, f"forecast file '{ref['file']}' not found next to this "
                                        "file; give a path relative to it",
                                 field="demand.forecast.file", line=line))
    forecast = read_yaml(fpath)
    cases = forecast.get("cases") if isinstance(forecast, dict) else None
    if not isinstance(cases, dict):
        raise InputError(Problem(fshown, "a forecast file needs 'cases: {case: {workload: "
                                         "{period: demand}}}'", field="cases"))
    case = str(ref["case"])
    if case not in cases:
        known = [k for k in cases if k not in META_KEYS]
        raise InputError(Problem(shown, f"forecast has no case '{case}'{suggest(case, known)}; "
                                        f"cases: {', '.join(known)}",
                                 field="demand.forecast.case", line=line))
    unit = forecast.get("unit")
    if "unit" in demand and unit is not None and demand["unit"] != unit:
        raise InputError(Problem(shown, f"demand.unit '{demand['unit']}' differs from the "
                                        f"forecast's unit '{unit}'; drop demand.unit",
                                 field="demand.unit", line=line))
    new_demand = {k: v for k, v in demand.items() if k != "forecast"}
    new_demand["table"] = cases[case]
    if unit is not None:
        new_demand["unit"] = unit
    return {**raw, "demand": new_demand}


def check_forecast(path: Path, catalog: Any) -> list[Problem]:
    """Check a demand forecast file (``cases: {case: {workload: {period: demand}}}``).

    Every case must be a mapping of known workload ids to mappings of period labels
    (``2027`` or ``2027Q3``) to non-negative numbers [tokens per ``unit``]; ``unit``,
    if given, is ``tokens_per_month`` or ``tokens_per_day``.

    Returns
    -------
    list of Problem
    """
    shown = display_path(path)
    raw = read_yaml(path)
    meta = META_KEYS
    problems: list[Problem] = []
    lines = raw.get(KEY_LINES, {}) if isinstance(raw, dict) else {}
    cases = raw.get("cases") if isinstance(raw, dict) else None
    if not isinstance(cases, dict) or not [c for c in cases if c not in meta]:
        return [Problem(shown, "a forecast file needs 'cases: {case: {workload: {period: "
                               "demand}}}' with at least one case", field="cases",
                        line=lines.get("cases"))]
    unit = raw.get("unit")
    if unit is not None and unit not in ("tokens_per_month", "tokens_per_day"):
        problems.append(Problem(shown, f"unit must be tokens_per_month or tokens_per_day "
                                       f"(got {unit!r})", field="unit", line=lines.get("unit")))
    workloads = catalog.entries.get("workloads", {})
    for case, table in cases.items():
        if case in meta:
            continue
        cline = cases.get(KEY_LINES, {}).get(str(case))
        if not isinstance(table, dict):
            problems.append(Problem(shown, "a case must map workload ids to {period: demand}",
                                    entry=str(case), field=f"cases.{case}", line=cline))
            continue
        for wl, row in table.items():
            if wl in meta:
                continue
            fld = f"cases.{case}.{wl}"
            wline = table.get(KEY_LINES, {}).get(str(wl), cline)
            if wl not in workloads:
                problems.append(Problem(shown, unknown_message("workloads", str(wl), workloads),
                                        entry=str(case), field=fld, line=wline))
            if not isinstance(row, dict):
                problems.append(Problem(shown, "give demand as {period: tokens}",
                                        entry=str(case), field=fld, line=wline))
                continue
            for period, value in row.items():
                if period in meta:
                    continue
                pline = row.get(KEY_LINES, {}).get(str(period), wline)
                try:
                    parse_period_label(period)
                except ValueError as exc:
                    problems.append(Problem(shown, str(exc), entry=str(case),
                                            field=f"{fld}.{period}", line=pline))
                ok = isinstance(value, int | float) and not isinstance(value, bool) \
                    and value == value and value >= 0
                if not ok:
                    problems.append(Problem(shown, f"demand must be a number >= 0 [tokens per "
                                                   f"{(unit or 'tokens_per_month')[11:]}] "
                                                   f"(got {value!r})",
                                            entry=str(case), field=f"{fld}.{period}",
                                            line=pline))
    return problems


#: Measured samples: (tokenizer id, file, mtime, size) -> (tokens, characters).
_MEASURED: dict[tuple, tuple[int, int]] = {}


def _sample_path(scn: Any, lang: str, sample: str) -> Path:
    """A language's sample file, relative to the scenario file that names it."""
    p = Path(sample)
    if p.is_absolute():
        return p
    file, _line = scn.where(f"demand.languages.{lang}.sample")
    base = Path(file).parent if file and not file.startswith("<") else Path(".")
    return base / p


def _measure(tokenizer_entry: Any, path: Path) -> tuple[int, int]:
    """Tokens and characters of a text file with a tokenizer (cached per file state).

    The file is read a piece at a time (:func:`dcplan.tokens.measure_file`): it must be
    a regular file within :data:`dcplan.yamlio.TEXT_LIMIT`.
    """
    from dcplan.tokens import check_text_file, load_tokenizer, measure_file

    st = path.stat()
    key = (tokenizer_entry.id, str(path.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _MEASURED:
        check_text_file(path)  # before the tokenizer loads
        stats = measure_file({"t": load_tokenizer(tokenizer_entry)}, path)["t"]
        _MEASURED[key] = (stats.tokens, stats.characters)
    return _MEASURED[key]


def resolve_demand_units(scn: Any, catalog: Any) -> Any:
    """The scenario with every workload's stated demand converted to tokens once.

    Requests convert with the workload's ``input_tokens_mean + output_tokens_mean``
    [tokens per request]; characters with the tokens per character of the language's
    sample text, measured with the tokenizer of the model that serves the workload
    (or the language's given ``tokens_per_character``); tokens stay tokens. The
    conversions are recorded in ``scn.demand_conversions`` (workload ->
    :class:`~dcplan.scenario.schema.DemandConversion`).

    Parameters
    ----------
    scn : Scenario
        Checked against ``catalog`` (workloads known).
    catalog : Catalog
        With workloads, models and tokenizers (the catalog the plan uses).

    Returns
    -------
    Scenario

    Raises
    ------
    InputError
        Naming the scenario file, the workload or language (entry) and the field of
        every problem at once: a language not in ``demand.languages``, a sample file
        missing, empty or not text, a model without a loadable tokenizer.
    """
    from dcplan.scenario.schema import DemandConversion
    from dcplan.tokens import model_tokenizer

    problems: list[Problem] = []
    out: dict[str, DemandConversion] = {}
    workloads = catalog.entries.get("workloads", {})
    for w in scn.workload_ids():
        if w not in workloads:
            continue  # reported by the scenario checks
        unit = scn.demand.unit_of(w)
        per = unit.unit.rsplit("_", 1)[1]
        wl = workloads[w]
        if unit.kind == "tokens":
            out[w] = DemandConversion(w, unit.unit, 1.0, f"tokens per {per} as stated")
            continue
        if unit.kind == "requests":
            inp, outp = wl.input_tokens_mean, wl.output_tokens_mean
            out[w] = DemandConversion(
                w, unit.unit, inp + outp,
                f"requests x {inp + outp:,.0f} tokens per request ({inp:,.0f} input + "
                f"{outp:,.0f} output, workload '{w}' in the catalog)")
            continue
        lang = unit.language
        spec = scn.demand.languages.get(lang)
        fld = f"demand.units.{w}.language"
        if spec is None:
            known = list(scn.demand.languages)
            problems.append(scn.problem(
                f"demand.units.{w}", f"language '{lang}' is not in demand.languages"
                f"{suggest(lang, known)}; add demand.languages.{lang} with a sample text "
                "(sample: FILE.txt) or a ratio (tokens_per_character: N)", entry=w, field=fld))
            continue
        if spec.tokens_per_character is not None:
            r = spec.tokens_per_character
            src = f", {spec.source}" if spec.source else ""
            out[w] = DemandConversion(
                w, unit.unit, r, f"characters x {r:.4g} tokens per character ({lang}, "
                                 f"given{src})")
            continue
        sfld = f"demand.languages.{lang}.sample"
        try:
            tok = model_tokenizer(catalog, wl.model)
        except InputError as exc:
            why = exc.problems[0].message if exc.problems else ""
            problems.append(scn.problem(
                sfld, f"workload '{w}' is served by model '{wl.model}', whose tokenizer "
                      f"cannot measure the sample ({why}); give demand.languages.{lang}."
                      "tokens_per_character instead", entry=w, field=sfld))
            continue
        path = _sample_path(scn, lang, spec.sample)
        try:
            tokens, chars = _measure(tok, path)
        except FileNotFoundError:
            problems.append(scn.problem(
                sfld, f"sample file '{spec.sample}' not found ({display_path(path)}); give a "
                      "path relative to the scenario file", entry=lang, field=sfld))
            continue
        except InputError as exc:
            for p in exc.problems:
                problems.append(scn.problem(sfld, f"sample {p.file}: {p.message}",
                                            entry=lang, field=sfld))
            continue
        r = tokens / chars
        out[w] = DemandConversion(
            w, unit.unit, r,
            f"characters x {r:.4f} tokens per character ({lang}: {tokens:,} tokens / "
            f"{chars:,} characters of {display_path(path)}, tokenizer {tok.id} of model "
            f"'{wl.model}')")
    if problems:
        raise InputError(problems)
    return scn.model_copy(update={"demand_conversions": out})
