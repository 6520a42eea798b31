"""``dcplan tokens count|list``: measure text in each model's own tokens, offline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dcplan.cli.app import app
from dcplan.cli.common import STATE, emit_json, fail, format_table, handle_errors
from dcplan.cli.complete import ids_of
from dcplan.errors import InputError, Problem

tokens_app = typer.Typer(
    help="Count tokens of text files with each model's own tokenizer (offline).",
    no_args_is_help=True, rich_markup_mode=None)
app.add_typer(tokens_app, name="tokens")


def _resolve(catalog, models: list[str], tokenizers: list[str]) -> dict[str, list[str]]:
    """Tokenizer id -> the requested models it serves (in request order), all problems at once."""
    from dcplan.cli.catalog_cmd import lookup
    from dcplan.tokens import model_tokenizer

    wanted: dict[str, list[str]] = {}
    problems: list[Problem] = []
    for m in models:
        try:
            lookup(catalog, "models", m)
            wanted.setdefault(model_tokenizer(catalog, m).id, []).append(m)
        except InputError as exc:
            problems += exc.problems
    for t in tokenizers:
        try:
            lookup(catalog, "tokenizers", t)
            wanted.setdefault(t, [])
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems)
    return wanted


def _load_all(catalog, ids) -> dict:
    """Load every tokenizer, reporting every missing package or wrong file at once."""
    from dcplan.tokens import load_tokenizer

    loaded, problems = {}, []
    for t in ids:
        try:
            loaded[t] = load_tokenizer(catalog.get("tokenizers", t))
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems)
    return loaded


def _row(s) -> dict:
    return {"file": s.label, "characters": f"{s.characters:,}", "words": f"{s.words:,}",
            "tokens": f"{s.tokens:,}", "tokens/char": f"{s.tokens_per_character:.3f}",
            "tokens/word": f"{s.tokens_per_word:.2f}"}


@tokens_app.command("count")
@handle_errors
def count_cmd(
    files: Annotated[list[Path], typer.Argument(
        metavar="FILE", help="UTF-8 text files (e.g. docs/samples/*.txt; folders are not "
                             "searched).")],
    models: Annotated[list[str] | None, typer.Option(
        "--model", "-m", metavar="ID", help="Catalog model whose tokenizer counts (repeatable; see "
                              "'dcplan catalog list models').",
        autocompletion=ids_of("models"))] = None,
    tokenizers: Annotated[list[str] | None, typer.Option(
        "--tokenizer", "-t", metavar="ID",
        help="Tokenizer id to count with directly (repeatable; see 'dcplan tokens list').",
        autocompletion=ids_of("tokenizers"))] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Tokens per character and per word of text files, per file and in total.

    Counts the text alone, as the model's tokenizer splits it: no chat template or
    beginning-of-text token is added. Characters include spaces and line breaks. Each
    file is read once, a piece at a time (memory does not grow with it), up to
    DCPLAN_MAX_TEXT_MB (1024 MB) per file; only regular files are read.
    """
    from dcplan.errors import display_path
    from dcplan.tokens import check_text_file, measure_file, total

    models, tokenizers = list(models or []), list(tokenizers or [])
    if not models and not tokenizers:
        fail("give --model ID (or --tokenizer ID), e.g. --model deepseek_r1", code=2)
    catalog = STATE.catalog()
    problems: list[Problem] = []
    wanted: dict[str, list[str]] = {}
    try:
        wanted = _resolve(catalog, models, tokenizers)
    except InputError as exc:
        problems += exc.problems
    # each file once, by the name shown; checked (not read) before the tokenizers load
    paths: dict[str, Path] = {}
    for f in files:
        try:
            check_text_file(f)
            paths.setdefault(display_path(f), f)
        except InputError as exc:
            problems += [p for p in exc.problems if p not in problems]
    loaded: dict = {}
    if not problems:
        try:
            loaded = _load_all(catalog, wanted)
        except InputError as exc:
            problems += exc.problems
    # every file is read once, a piece at a time, and counted by every tokenizer (by
    # none if there are problems already: it is still read for its own problems)
    per_file: dict[str, dict] = {}
    for label, f in paths.items():
        try:
            per_file[label] = measure_file(loaded, f, label)
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems)
    results = []
    for tid, tok in loaded.items():
        stats = [per_file[label][tid] for label in paths]
        results.append((tid, tok, wanted[tid], stats, total(stats)))
    if as_json:
        emit_json({"counted": "plain text, no special tokens",
                   "tokenizers": [{"tokenizer": tid, "name": tok.entry.name, "models": ms,
                                   "package": tok.entry.package,
                                   "package_version": tok.package_version,
                                   "files": [s.as_dict() for s in stats],
                                   "total": tot.as_dict()}
                                  for tid, tok, ms, stats, tot in results]})
        return
    for i, (tid, tok, ms, stats, tot) in enumerate(results):
        if i:
            typer.echo("")
        who = f"model{'s' * (len(ms) > 1)} {', '.join(ms)} -> " if ms else ""
        typer.echo(f"{who}tokenizer {tid}: {tok.entry.name} "
                   f"({tok.entry.package} {tok.package_version})")
        rows = [_row(s) for s in stats]
        if len(stats) > 1:
            rows.append(_row(tot))
        typer.echo(format_table(rows))
    typer.echo("\nPlain text only (no chat template); characters include spaces. --json adds "
               "tokens per non-space character.")


@tokens_app.command("list")
@handle_errors
def list_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Tokenizers in the catalog, the models that use them, and whether each loads here."""
    from dcplan.tokens import load_tokenizer

    catalog = STATE.catalog()
    rows = []
    for tid, entry in catalog.entries.get("tokenizers", {}).items():
        users = [m for m, e in catalog.entries.get("models", {}).items() if e.tokenizer == tid]
        try:
            tok = load_tokenizer(entry)
            version, status = tok.package_version, "ok"
        except InputError as exc:
            version, status = "-", exc.problems[0].message
        rows.append({"tokenizer": tid, "models": ", ".join(users) or "-",
                     "package": entry.package, "version": version, "status": status})
    none = [m for m, e in catalog.entries.get("models", {}).items() if e.tokenizer is None]
    if as_json:
        emit_json({"tokenizers": rows, "models_without_tokenizer": none})
        return
    typer.echo(format_table(rows))
    if none:
        typer.echo(f"\nModels without a tokenizer: {', '.join(none)} (see their notes: "
                   "'dcplan catalog show ID').")
