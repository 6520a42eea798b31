"""Load and validate the data catalogs into typed entries.

Each catalog kind (see :data:`dcplan.schema.KINDS`) is a YAML file holding a list of
entries. Loading checks every entry against its schema and every cross-reference
(a rack's accelerator, a workload's model), and reports every problem found in one
:class:`~dcplan.errors.InputError`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from dcplan.errors import InputError, Problem, display_path
from dcplan.paths import data_dir
from dcplan.schema import DATE_PATTERN, ID_RE, KINDS, OPTIONAL_KINDS, PATTERN_HINTS, Entry
from dcplan.yamlio import KEY_LINES, LINE_KEY, read_yaml, strip_lines

E = TypeVar("E", bound=BaseModel)


def singular(kind: str) -> str:
    """Singular noun of a catalog kind (``racks`` -> ``rack``)."""
    return {"heat_rejection": "heat-rejection entry", "switches": "switch",
            "staffing": "staffing role", "salaries": "salary", "api_prices": "API price",
            "software": "software entry", "ups": "UPS", "profiles": "demand profile",
            "storage": "storage entry", "onsite_generation": "on-site generator"}.get(
        kind, kind[:-1] if kind.endswith("s") else kind
    )


def closest(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """The ids among ``choices`` that ``word`` most likely means (at most ``n``).

    Ids that start with ``word`` (``gb200`` -> ``gb200_nvl72``) come first, then ids
    that contain it, then the closest spelling.
    """
    choices = [str(c) for c in choices]
    w = str(word).lower()
    if w:
        for pool in ([c for c in choices if c.lower().startswith(w)],
                     [c for c in choices if w in c.lower()]):
            if pool:
                return sorted(pool, key=lambda c: (len(c), c))[:n]
    return difflib.get_close_matches(str(word), choices, n=1, cutoff=0.6)


def suggest(word: str, choices: Iterable[str]) -> str:
    """Return a "; did you mean 'x'?" hint for ``word`` among ``choices``, or ''."""
    hits = closest(word, choices, n=1)
    return f"; did you mean '{hits[0]}'?" if hits else ""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'x' or 'y'?)"`` for :func:`closest`, or ''."""
    hits = closest(word, choices)
    if not hits:
        return ""
    return f" (did you mean {' or '.join(repr(h) for h in hits)}?)"


def unknown_message(kind: str, ident: str, known: Iterable[str], where: str = "") -> str:
    """The one wording of an unknown id: what was asked, the closest ids, the known ones.

    Parameters
    ----------
    kind : str
        Catalog kind (``racks``, ``switches``...) or ``sites``.
    ident : str
        The id that was not found.
    known : iterable of str
        The ids that exist.
    where : str
        Where they were looked for (a folder), named when none exist.
    """
    known = [str(k) for k in known]
    noun = singular(kind)
    if not known:
        place = f" in {where}" if where else ""
        return (f"unknown {noun} id '{ident}': no {kind.replace('_', '-')} are defined{place}; "
                f"check the folder holds {kind.replace('_', '-')} files")
    return f"unknown {noun} id '{ident}'{did_you_mean(ident, known)}; known: {', '.join(known)}"


def _fmt_input(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def pydantic_problems(
    exc: ValidationError,
    schema: type[BaseModel],
    file: str,
    entry: str | None,
    line: int | None,
    key_lines: Mapping[str, int] | None = None,
) -> list[Problem]:
    """Turn a pydantic ValidationError into readable :class:`Problem` objects.

    See :func:`explain_errors` for the parameters.
    """
    return [p for _, p in explain_errors(exc, schema, file, entry, line, key_lines)]


def explain_errors(
    exc: ValidationError,
    schema: type[BaseModel],
    file: str,
    entry: str | None,
    line: int | None,
    key_lines: Mapping[str, int] | None = None,
) -> list[tuple[dict, Problem]]:
    """Pair each reported pydantic error (union tags removed) with a readable Problem.

    Parameters
    ----------
    exc : ValidationError
    schema : type
        The model that was validated (used for did-you-mean suggestions).
    file, entry : str
        Where the data came from.
    line : int, optional
        Line of the entry in the file.
    key_lines : mapping, optional
        Line of each top-level field of the entry.
    """
    key_lines = key_lines or {}
    errors = _union_errors(exc.errors())
    # A misspelt field shows up twice (unknown + missing); report it once, as the typo.
    typo_targets = {
        close[0]
        for err in errors
        if err["type"] == "extra_forbidden"
        for close in [difflib.get_close_matches(
            str(err["loc"][-1]), fields_at(schema, err["loc"][:-1]), n=1, cutoff=0.6)]
        if close
    }
    out = []
    for err in errors:
        loc = [str(p) for p in err["loc"]]
        fld = ".".join(loc) if loc else None
        kind = err["type"]
        got = err.get("input")
        ctx = err.get("ctx") or {}
        if kind == "missing" and loc and loc[-1] in typo_targets:
            continue
        if kind == "extra_forbidden":
            here = fields_at(schema, err["loc"][:-1])  # the fields of the nested entry
            hint = suggest(loc[-1], here)
            if hint:
                msg = f"unknown field{hint} Rename it."
            else:
                msg = f"unknown field; remove it (allowed fields: {', '.join(here)})"
        elif kind == "missing":
            msg = "required field is missing; add it"
        elif kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
            op = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<",
                  "less_than_equal": "<="}[kind]
            bound = next(iter(ctx.values())) if ctx else "?"
            msg = f"must be {op} {bound} (got {_fmt_input(got)}); correct the value"
        elif kind == "string_pattern_mismatch":
            pattern = ctx.get("pattern", "")
            if pattern.startswith("^[a-z0-9_]"):
                msg = (f"{_fmt_input(got)} is not a valid id; use only lowercase letters, digits "
                       "and '_' (e.g. 'gb200_nvl72')")
            elif pattern == DATE_PATTERN:
                msg = f"{_fmt_input(got)} is not a date; write YYYY-MM or YYYY-MM-DD"
            else:
                msg = (f"{_fmt_input(got)} is not "
                       f"{PATTERN_HINTS.get(pattern, f'of the form {pattern}')}")
        elif kind == "enum" or kind == "literal_error":
            msg = f"{_fmt_input(got)} is not allowed; {err['msg'][:1].lower() + err['msg'][1:]}"
        elif kind == "value_error":
            msg = err["msg"].removeprefix("Value error, ")
        else:
            msg = f"{err['msg']} (got {_fmt_input(got)})"
        where = key_lines.get(loc[0], line) if loc else line
        out.append((err, Problem(file, msg, entry=entry, field=fld, line=where)))
    return out


def fields_at(schema: type[BaseModel], loc: Sequence[Any]) -> list[str]:
    """Fields of the model at ``loc`` inside ``schema`` (list indices skipped).

    ``("parameters", 0)`` of a sweep spec gives a parameter's fields; a location that
    leaves the models (a mapping's keys) keeps the last model's. Fields excluded from
    the file (``exclude=True``) are not offered.
    """
    import typing

    model = schema
    for part in loc:
        if isinstance(part, int) or str(part).isdigit():
            continue
        info = model.model_fields.get(str(part))
        if info is None:  # a mapping's key (a workload or rack id): same model below
            continue
        found = None
        todo = [info.annotation]
        while todo:
            t = todo.pop()
            if isinstance(t, type) and issubclass(t, BaseModel):
                found = t
                break
            todo.extend(typing.get_args(t))
        if found is None:
            break
        model = found
    return [n for n, f in model.model_fields.items() if not f.exclude]


_TYPE_ERRORS = {"float_type", "float_parsing", "int_type", "int_parsing", "int_from_float",
                "string_type", "bool_type", "bool_parsing", "dict_type", "list_type",
                "model_type", "model_attributes_type", "none_required", "literal_error",
                "enum", "is_instance_of"}


def _is_union_tag(part: Any) -> bool:
    """Whether a location part names a union member (pydantic adds these), not a key."""
    text = str(part)
    return ("[" in text or "-" in text or text in
            {"float", "int", "str", "bool", "dict", "list", "none", "tagged-union"})


def _union_errors(errors: list[dict]) -> list[dict]:
    """Drop union-member tags from error locations and keep the informative errors.

    For a field typed ``float | dict[str, float]`` given a dict with a bad value,
    pydantic reports one error per union member; the "wrong type" error of the
    member that was not meant is noise once another member has a specific error.
    """
    groups: dict[tuple, list[dict]] = {}
    out = []
    for err in errors:
        loc = tuple(err["loc"])
        cut = next((i for i, part in enumerate(loc) if _is_union_tag(part)), None)
        if cut is None:
            out.append(err)
            continue
        clean = tuple(p for p in loc if not _is_union_tag(p))
        groups.setdefault(loc[:cut], []).append({**err, "loc": clean})
    for group in groups.values():
        specific = [e for e in group if e["type"] not in _TYPE_ERRORS]
        out += specific or group[:1] if specific else group
    return out


def validate_entries(
    raw: Any, schema: type[E], file: str, key: str = "id"
) -> tuple[dict[str, E], list[Problem]]:
    """Validate a list of raw entry mappings against ``schema``.

    Parameters
    ----------
    raw : Any
        Parsed YAML (should be a list of mappings, or a mapping with key ``entries``).
    schema : type
        Pydantic model of one entry.
    file : str
        Displayed file name.
    key : str
        Field holding the entry id.

    Returns
    -------
    entries : dict
        Valid entries by id, in file order.
    problems : list of Problem
    """
    problems: list[Problem] = []
    if isinstance(raw, dict) and "entries" in raw:
        raw = raw["entries"]
    if raw is None:
        return {}, [Problem(file, "file is empty; it must hold a list of entries")]
    if not isinstance(raw, list):
        return {}, [Problem(file, "must be a YAML list of entries ('- id: ...')")]
    entries: dict[str, E] = {}
    first_line: dict[str, int | None] = {}
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            problems.append(Problem(file, f"item {index + 1} is not a mapping of fields; "
                                    "write it as '- id: ...' with one 'field: value' per line",
                                    entry=f"item {index + 1}"))
            continue
        line = item.get(LINE_KEY)
        key_lines = item.get(KEY_LINES, {})
        data = strip_lines(item)
        ident = data.get(key)
        label = str(ident) if ident is not None else f"#{index + 1}"
        if isinstance(ident, str) and ident in first_line:
            where = f" (first at line {first_line[ident]})" if first_line[ident] else ""
            problems.append(
                Problem(file, f"duplicate id{where}; ids must be unique, rename one",
                        entry=label, field=key, line=key_lines.get(key, line))
            )
            continue
        try:
            entry = schema.model_validate(data)
        except ValidationError as exc:
            problems += pydantic_problems(exc, schema, file, label, line, key_lines)
            if isinstance(ident, str):
                first_line[ident] = line
            continue
        entries[label] = entry
        first_line[label] = line
    return entries, problems


@dataclass
class Catalog:
    """All catalog entries, by kind and id.

    Attributes
    ----------
    entries : dict
        kind -> {id -> entry}.
    files : dict
        kind -> file it was loaded from.
    lines : dict
        (kind, id) -> line of the entry in its file.
    """

    entries: dict[str, dict[str, Entry]] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    lines: dict[tuple[str, str], int] = field(default_factory=dict)
    field_lines: dict[tuple[str, str, str], int] = field(default_factory=dict)
    #: kind -> ids whose entries failed validation, or None when the whole file failed;
    #: references to them are not reported again.
    invalid: dict[str, set[str] | None] = field(default_factory=dict)

    def __getattr__(self, kind: str) -> dict[str, Entry]:
        if kind in KINDS:
            return self.entries.get(kind, {})
        raise AttributeError(kind)

    def get(self, kind: str, ident: str) -> Entry:
        """Return entry ``ident`` of ``kind``.

        Raises
        ------
        InputError
            If there is no such entry (with a did-you-mean suggestion).
        """
        table = self.entries.get(kind, {})
        if ident not in table:
            file = display_path(self.files[kind]) if kind in self.files else kind
            raise InputError(Problem(file, unknown_message(kind, ident, table)))
        return table[ident]

    def find(self, ident: str) -> tuple[str, Entry]:
        """Find ``ident`` in any kind; return ``(kind, entry)``."""
        hits = [(k, t[ident]) for k, t in self.entries.items() if ident in t]
        if not hits:
            every = [i for t in self.entries.values() for i in t]
            raise InputError(Problem("<catalogs>", f"no entry with id '{ident}'"
                                                   f"{suggest(ident, every)}"))
        return hits[0]

    def replace(self, kind: str, ident: str, **changes: Any) -> Catalog:
        """Return a copy with fields of one entry changed and re-validated.

        Raises
        ------
        InputError
            If a changed field does not exist or the new value is invalid.
        """
        old = self.get(kind, ident)
        schema = type(old)
        unknown = [k for k in changes if k not in schema.model_fields]
        file = display_path(self.files.get(kind, kind))
        if unknown:
            raise InputError([
                Problem(file, f"cannot override: no such field{suggest(k, schema.model_fields)}",
                        entry=ident, field=k) for k in unknown
            ])
        try:
            new = schema.model_validate({**old.model_dump(), **changes})
        except ValidationError as exc:
            raise InputError(pydantic_problems(exc, schema, file, ident, None)) from None
        entries = {k: dict(v) for k, v in self.entries.items()}
        entries[kind][ident] = new
        out = Catalog(entries=entries, files=dict(self.files), lines=dict(self.lines),
                      field_lines=dict(self.field_lines))
        check_references(out, raise_=True)
        return out


def check_references(catalog: Catalog, raise_: bool = False) -> list[Problem]:
    """Check that every id-reference field names an existing entry of its kind."""
    problems = []
    for kind, table in catalog.entries.items():
        file = display_path(catalog.files.get(kind, kind))
        for ident, entry in table.items():
            for fld, target in type(entry).references.items():
                raw = getattr(entry, fld)
                values = raw if isinstance(raw, list | tuple) else [raw]
                for value in values:
                    if value is None or value in catalog.entries.get(target, {}):
                        continue
                    bad = catalog.invalid.get(target, set())
                    if bad is None or value in bad:
                        continue  # already reported where that entry is defined
                    known = catalog.entries.get(target, {})
                    hint = suggest(value, known)
                    problems.append(
                        Problem(file, f"unknown {singular(target)} '{value}'"
                                      f"{' (' + hint[2:] + ')' if hint else ''}; add it to "
                                      f"{KINDS[target][0]} or use one of: "
                                      f"{', '.join(known) or '(none loaded)'}",
                                entry=ident, field=fld,
                                line=catalog.field_lines.get((kind, ident, fld),
                                                             catalog.lines.get((kind, ident))))
                    )
    problems += check_consistency(catalog)
    if raise_ and problems:
        raise InputError(problems)
    return problems


def check_consistency(catalog: Catalog) -> list[Problem]:
    """Rules across entries: what one entry may claim about another.

    - a model's tokenizer has no more base tokens than the model's ``vocab_size``
      (a model cannot embed ids its tokenizer would produce beyond its vocabulary);
    - one salary per (role, country).
    """
    problems = []
    models = catalog.entries.get("models", {})
    tokenizers = catalog.entries.get("tokenizers", {})
    for ident, model in models.items():
        tok = tokenizers.get(getattr(model, "tokenizer", None) or "")
        if tok is not None and tok.vocab_tokens > model.vocab_size:
            problems.append(Problem(
                display_path(catalog.files.get("models", "models")),
                f"tokenizer '{tok.id}' has {tok.vocab_tokens:,} base tokens, more than this "
                f"model's vocab_size {model.vocab_size:,}; it is not this model's tokenizer",
                entry=ident, field="tokenizer",
                line=catalog.field_lines.get(("models", ident, "tokenizer"),
                                             catalog.lines.get(("models", ident)))))
    seen: dict[tuple[str, str], str] = {}
    for ident, sal in catalog.entries.get("salaries", {}).items():
        key = (sal.role, sal.country)
        if key in seen:
            problems.append(Problem(
                display_path(catalog.files.get("salaries", "salaries")),
                f"a second salary for role '{sal.role}' in {sal.country} (first: "
                f"'{seen[key]}'); keep one per role and country",
                entry=ident, field="country",
                line=catalog.field_lines.get(("salaries", ident, "country"),
                                             catalog.lines.get(("salaries", ident)))))
        else:
            seen[key] = ident
    return problems


def load_kind_file(
    path: Path, kind: str
) -> tuple[dict[str, Entry], dict[str, int], dict[tuple[str, str], int], list[Problem]]:
    """Load one catalog file of ``kind``.

    Returns
    -------
    entries, entry_lines, field_lines, problems
        Entries by id, the line of each entry, the line of each (id, field), and the
        problems found.
    """
    shown = display_path(path)
    try:
        raw = read_yaml(path)
    except InputError as exc:
        return {}, {}, {}, exc.problems
    lines: dict[str, int] = {}
    field_lines: dict[tuple[str, str], int] = {}
    if isinstance(raw, list):
        for it in raw:
            if isinstance(it, dict):
                ident = str(it.get("id"))
                lines.setdefault(ident, it.get(LINE_KEY))
                for fld, ln in it.get(KEY_LINES, {}).items():
                    field_lines.setdefault((ident, fld), ln)
    entries, problems = validate_entries(raw, KINDS[kind][1], shown)
    return entries, lines, field_lines, problems


def kind_of_file(path: Path) -> str | None:
    """Guess the catalog kind of ``path`` from its file name (``racks.yaml`` -> racks)."""
    stem = path.name.split(".")[0]
    return stem if stem in KINDS else None


def load_catalog(
    catalog_dir: Path | str | None = None,
    extra_files: Mapping[str, Path] | None = None,
    require_all: bool = True,
) -> Catalog:
    """Load every catalog kind from ``catalog_dir`` and validate it.

    Parameters
    ----------
    catalog_dir : Path or str, optional
        Folder with one ``<kind>.yaml`` per kind; defaults to ``$DCPLAN_CATALOG_DIR``
        or the shipped catalogs.
    extra_files : mapping, optional
        kind -> file that replaces that kind's file from ``catalog_dir``.
    require_all : bool
        Report a missing kind file as a problem (kinds in
        :data:`~dcplan.schema.OPTIONAL_KINDS` may always be absent).

    Returns
    -------
    Catalog

    Raises
    ------
    InputError
        With every problem found in every file.
    """
    base = data_dir("catalogs", catalog_dir)
    extra = dict(extra_files or {})
    catalog = Catalog()
    problems: list[Problem] = []
    if not base.is_dir() and len(extra) < len(KINDS) - len(OPTIONAL_KINDS):
        raise InputError(Problem(display_path(base), "catalog folder not found; pass "
                                 "--catalog-dir or set DCPLAN_CATALOG_DIR to a folder with "
                                 f"{', '.join(f for f, _ in KINDS.values())}"))
    for kind, (fname, _) in KINDS.items():
        path = extra.get(kind, base / fname)
        if not path.exists():
            if kind in OPTIONAL_KINDS:
                continue  # reference data; an absent file is an empty catalog
            if require_all:
                problems.append(Problem(display_path(path), f"missing {kind} catalog file; "
                                        f"create {fname} with a list of entries"))
            continue
        entries, lines, field_lines, found = load_kind_file(path, kind)
        catalog.entries[kind] = entries
        catalog.files[kind] = path
        catalog.lines.update({(kind, i): ln for i, ln in lines.items() if ln})
        catalog.field_lines.update({(kind, i, f): ln for (i, f), ln in field_lines.items()})
        if found:
            catalog.invalid[kind] = (set(lines) - set(entries)) if lines else None
        problems += found
    problems += check_references(catalog)
    if problems:
        raise InputError(problems)
    return catalog


def entry_table(entries: Mapping[str, Entry]) -> list[dict[str, Any]]:
    """Entries as plain dicts (enums as their values), for tables and JSON."""
    return [e.model_dump(mode="json") for e in entries.values()]


def check_ids(values: Iterable[str]) -> list[str]:
    """Return the values that are not valid ids."""
    return [v for v in values if not ID_RE.match(v)]
