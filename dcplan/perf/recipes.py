"""Engine settings of the benchmark recipes behind serving measurement rows.

``catalogs/measurements/serving_recipes.yaml`` says, for the serving engines and
launch flags behind the InferenceX rows, how long a request waits before its prefill:
how often the scheduler polls for new requests (in decode steps), how long attention
data parallelism with balancing holds a prefill back, and how many requests run at once
(admission settings); how the engine sizes its KV cache (memory settings: the share of
memory it gives the cache and what an admitted request reserves); and, where the rows'
files cannot say it, whether a disaggregated row's prefill instances run data-parallel
attention (a layout setting). The rows are
predicted with their recipe's settings (:mod:`dcplan.perf.predict`); plans assume none
of them (a deployment tuned for its latency target, and the planner's own layout search).

This is the data layer: it reads and checks the file; the waits themselves are physics
(:func:`dcplan.perf.serving.with_admission`), and so is the KV cache's size
(:func:`dcplan.perf.roofline.kv_pool_bytes`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dcplan.errors import InputError, Problem, display_path

#: File beside the measurement files that gives their recipes' admission settings.
RECIPES_FILE = "serving_recipes.yaml"

#: Keys an entry's ``match`` may hold, and the type of each value.
MATCH_KEYS = {"framework": str, "hardware": list, "precision": str, "speculative": str,
              "dp_attention": bool, "decode_tp": int, "input_tokens": int,
              "output_tokens": int, "min_concurrency": int, "max_concurrency": int,
              "prefill_ep": int, "from_date": str, "until_date": str}
#: How a match value of each type is named in messages.
KIND_WORDS = {str: "a string", int: "an integer", bool: "true or false",
              list: "a list of accelerator ids"}
#: Admission settings an entry may give (all integers >= 1 but for the timeout, >= 0).
SETTINGS = ("poll_interval_steps", "dp_balance_timeout_steps", "max_running_requests")
#: Memory settings an entry may give, all three together: the share of memory the
#: engine gives its KV cache (0 < share <= 1), what that share is of (``hbm``: all of a
#: GPU's memory, weights included, as SGLang's --mem-fraction-static; ``free``: what the
#: weights leave, as TensorRT-LLM's kv_cache_config.free_gpu_memory_fraction), and what
#: an admitted request reserves (``full``: its prompt plus its whole output, as
#: TensorRT-LLM's default GUARANTEED_NO_EVICT capacity scheduler; ``current``: the
#: tokens it holds so far, as SGLang and vLLM admit).
MEMORY_SETTINGS = ("kv_cache_frac", "kv_cache_frac_of", "kv_reserve")
#: Allowed values of the two word-valued memory settings.
SHARE_OF = ("hbm", "free")
RESERVE = ("full", "current")
#: Layout settings an entry may give (true/false): DP attention on a disaggregated row's
#: prefill instances, where the row's file does not say it
#: (:func:`dcplan.perf.measurements.prefill_dp_attention`).
LAYOUT_SETTINGS = ("prefill_dp_attention",)
#: Kernel settings an entry may give: the library that runs the MoE's grouped GEMMs
#: (TensorRT-LLM's ``moe_config.backend``). Rows without one ran the libraries most
#: rows ran; ``deepgemm`` runs at the fitted ``physics.deepgemm_moe_time_ratio``.
KERNEL_SETTINGS = ("moe_library",)
#: Allowed values of ``moe_library``.
MOE_LIBRARIES = ("cutlass", "trtllm", "deepgemm")
#: Speculative-decoding settings an entry may give: the tokens an MTP recipe drafts per
#: decode step (SGLang ``--speculative-num-steps``, TensorRT-LLM
#: ``num_nextn_predict_layers``, ATOM/vLLM ``--num-speculative-tokens``). Rows without
#: one take the draft length of ``serving.mtp_draft_tokens`` that serves them fastest.
SPECULATIVE_SETTINGS = ("mtp_draft_tokens",)
#: Most tokens drafted per step, in a recipe or in ``serving.mtp_draft_tokens`` [tokens].
DRAFT_TOKENS_MAX = 16


@dataclass(frozen=True)
class Admission:
    """Admission settings of one engine configuration.

    Attributes
    ----------
    poll_interval_steps : int
        The scheduler looks for new requests once every this many decode steps [steps]
        (1: every step).
    dp_balance_timeout_steps : int
        Attention data parallelism with balancing: a prefill waits until every DP rank
        has one, at most this many decode steps (0: no balancing) [steps].
    max_running_requests : int
        Requests the engine runs at once (0: no cap besides the KV cache) [-].
    source : str
        Where the settings come from ('' for the default).
    """

    poll_interval_steps: int = 1
    dp_balance_timeout_steps: int = 0
    max_running_requests: int = 0
    source: str = ""


#: No admission limits: what a row no recipe matches, and every plan, assumes.
NO_LIMITS = Admission()


@dataclass(frozen=True)
class KvMemory:
    """How one engine configuration sizes its KV cache.

    Attributes
    ----------
    share : float
        Share of memory the engine gives the KV cache [-] (0 < share <= 1).
    share_of : {"hbm", "free"}
        ``hbm``: of the GPU's whole memory, weights included (the KV cache gets
        ``share x HBM - weights``); ``free``: of what the weights leave
        (``share x (HBM - weights)``).
    reserve : {"full", "current"}
        What an admitted request holds a place for: ``full``, its prompt plus its whole
        output from the start; ``current``, the tokens it holds so far (on average its
        prompt plus half its output).
    source : str
        Where the settings come from.
    """

    share: float
    share_of: str
    reserve: str
    source: str = ""


@dataclass(frozen=True)
class Recipe:
    """One entry of :data:`RECIPES_FILE`: what it matches and its settings.

    Attributes
    ----------
    match : tuple
        ``(key, value)`` pairs of :data:`MATCH_KEYS`, all of which a row must meet.
    admission : Admission
        Its admission settings (defaults for those it does not give; ``source`` always
        the entry's).
    gives_admission : bool
        Whether the entry gives any of :data:`SETTINGS`; an entry that gives only layout
        settings is passed over when a row's admission is looked up.
    prefill_dp_attention : bool or None
        DP attention on a disaggregated row's prefill instances (None: not given).
    memory : KvMemory or None
        How the engine sizes its KV cache (None: not given).
    moe_library : str or None
        The library of the MoE's grouped GEMMs (:data:`MOE_LIBRARIES`; None: not given).
    mtp_draft_tokens : int or None
        Tokens an MTP recipe drafts per decode step [tokens] (None: not given).
    """

    match: tuple
    admission: Admission
    gives_admission: bool = True
    prefill_dp_attention: bool | None = None
    memory: KvMemory | None = None
    moe_library: str | None = None
    mtp_draft_tokens: int | None = None

    def matches(self, framework: str, hardware: str, precision: str, speculative: str,
                dp_attention: bool, decode_tp: int, input_tokens: float,
                output_tokens: float, concurrency: int, prefill_ep: int = 1,
                date: str = "") -> bool:
        """Whether a row with these values meets every key of ``match``.

        Parameters
        ----------
        framework : str
            Serving framework of the row.
        hardware : str
            Accelerator id.
        precision : str
            Serving precision.
        speculative : str
            Speculative decoding (``none``, ``mtp``, ``draft``).
        dp_attention : bool
            Data-parallel attention.
        decode_tp : int
            Decode tensor-parallel size [GPUs].
        input_tokens : float
            Nominal input (prompt) tokens per request [tokens].
        output_tokens : float
            Nominal output (generated) tokens per request [tokens].
        concurrency : int
            Requests in flight [requests].
        prefill_ep : int
            Expert parallelism of a disaggregated row's prefill instance [GPUs] (1 when
            aggregated).
        date : str
            Run date of the row, YYYY-MM-DD ('' unknown: an entry bounded by date does
            not match it).

        Returns
        -------
        bool
            True when every key matches (``from_date`` and ``until_date`` inclusive).
        """
        row = {"framework": framework, "precision": precision, "speculative": speculative,
               "dp_attention": dp_attention, "decode_tp": decode_tp,
               "input_tokens": input_tokens, "output_tokens": output_tokens,
               "prefill_ep": prefill_ep}
        for key, want in self.match:
            if key == "hardware":
                if hardware not in want:
                    return False
            elif key == "min_concurrency":
                if concurrency < want:
                    return False
            elif key == "max_concurrency":
                if concurrency > want:
                    return False
            elif key == "from_date":
                if not date or date < want:
                    return False
            elif key == "until_date":
                if not date or date > want:
                    return False
            elif row[key] != want:
                return False
        return True


@dataclass(frozen=True)
class Recipes:
    """The entries of :data:`RECIPES_FILE`; for each kind of setting, first match wins."""

    entries: tuple = ()

    def _first(self, setting: str, row: dict) -> Any:
        """``setting`` of the first entry that gives it and that ``row`` matches (None)."""
        for entry in self.entries:
            value = getattr(entry, setting)
            if value is not None and entry.matches(**row):
                return value
        return None

    def admission(self, **row: Any) -> Admission:
        """Admission settings of the first entry a row matches that gives any.

        Parameters
        ----------
        **row
            ``framework``, ``hardware``, ``precision``, ``speculative``,
            ``dp_attention``, ``decode_tp``, ``input_tokens``, ``output_tokens``,
            ``concurrency`` and optionally ``prefill_ep`` and ``date`` of the row
            (nominal lengths [tokens]).

        Returns
        -------
        Admission
            The entry's admission settings (:data:`NO_LIMITS` when no entry matches).
        """
        for entry in self.entries:
            if entry.gives_admission and entry.matches(**row):
                return entry.admission
        return NO_LIMITS

    def memory(self, **row: Any) -> KvMemory | None:
        """How a row's engine sizes its KV cache, from the first entry that says it.

        Parameters
        ----------
        **row
            As for :meth:`admission`.

        Returns
        -------
        KvMemory or None
            The entry's memory settings (None when no matching entry gives them: the
            row's KV cache is the serving default's, ``serving.hbm_usable_frac`` of
            memory with requests holding their current tokens).
        """
        return self._first("memory", row)

    def moe_library(self, **row: Any) -> str | None:
        """The library of a row's MoE grouped GEMMs, from the first entry that says it.

        Parameters
        ----------
        **row
            As for :meth:`admission`.

        Returns
        -------
        str or None
            One of :data:`MOE_LIBRARIES` (None when no matching entry gives it).
        """
        return self._first("moe_library", row)

    def mtp_draft_tokens(self, **row: Any) -> int | None:
        """Tokens a row's MTP recipe drafts per step, from the first entry that says it.

        Parameters
        ----------
        **row
            As for :meth:`admission`.

        Returns
        -------
        int or None
            The entry's draft length [tokens] (None when no matching entry gives it: the
            row takes the length of ``serving.mtp_draft_tokens`` that serves it fastest).
        """
        return self._first("mtp_draft_tokens", row)

    def prefill_dp_attention(self, **row: Any) -> bool | None:
        """DP attention on a row's prefill instances, from the first entry that says it.

        Parameters
        ----------
        **row
            As for :meth:`admission`.

        Returns
        -------
        bool or None
            The entry's ``prefill_dp_attention`` (None when no matching entry gives it:
            the rule of :func:`dcplan.perf.measurements.prefill_dp_attention` applies).
        """
        return self._first("prefill_dp_attention", row)


def check_recipes(doc: Any, shown: str, catalog: Any = None) -> tuple[Recipes, list[Problem]]:
    """Read a parsed :data:`RECIPES_FILE`; every problem with its entry, field and line.

    Parameters
    ----------
    doc : Any
        The parsed YAML (``dcplan.yamlio.read_yaml``).
    shown : str
        The file as shown in messages.
    catalog : Catalog, optional
        When given, ``hardware`` ids are checked against its accelerators.

    Returns
    -------
    (Recipes, list of Problem)
        The entries that read cleanly, and every problem.
    """
    from dcplan.catalog import did_you_mean
    from dcplan.yamlio import KEY_LINES, META_KEYS, strip_lines

    problems: list[Problem] = []
    if doc is None:
        return Recipes(), []
    if not isinstance(doc, dict):
        return Recipes(), [Problem(shown, "expected a mapping with source, as_of and recipes")]

    def line(m, key):
        return (m.get(KEY_LINES) or {}).get(key) if isinstance(m, dict) else None

    for key in doc:
        if key not in META_KEYS and key not in ("source", "as_of", "recipes"):
            problems.append(Problem(shown, "unknown key: rename or remove it (allowed: "
                                           "source, as_of, recipes)", field=str(key),
                                    line=line(doc, key)))
    raw = doc.get("recipes") or []
    if not isinstance(raw, list):
        problems.append(Problem(shown, "expected a list of entries with match and settings",
                                field="recipes", line=line(doc, "recipes")))
        raw = []
    accelerators = (set(catalog.entries.get("accelerators", {}))
                    if catalog is not None else None)
    entries = []
    for i, e in enumerate(raw, start=1):
        where = f"recipes[{i}]"
        if not isinstance(e, dict):
            problems.append(Problem(shown, "expected a mapping with match and settings",
                                    entry=where))
            continue
        n_before = len(problems)
        for key in e:
            allowed = ("match", "source", "notes", *SETTINGS, *MEMORY_SETTINGS,
                       *LAYOUT_SETTINGS, *KERNEL_SETTINGS, *SPECULATIVE_SETTINGS)
            if key not in META_KEYS and key not in allowed:
                problems.append(Problem(shown, f"unknown key{did_you_mean(str(key), allowed)}: "
                                               "rename or remove it (allowed: "
                                               + ", ".join(allowed) + ")", entry=where,
                                        field=str(key), line=line(e, key)))
        m = e.get("match")
        if not isinstance(m, dict) or not strip_lines(m):
            problems.append(Problem(shown, "needs a non-empty match mapping (keys: "
                                           + ", ".join(MATCH_KEYS) + ")", entry=where,
                                    field="match", line=line(e, "match")))
            m = {}
        match = []
        for key, value in strip_lines(m).items():
            kind = MATCH_KEYS.get(key)
            if key in ("from_date", "until_date") and isinstance(value, dt.date):
                value = value.isoformat()   # YAML reads an unquoted 2026-02-05 as a date
            if kind is None:
                problems.append(Problem(shown, f"unknown match key{did_you_mean(key, MATCH_KEYS)}"
                                               " (allowed: " + ", ".join(MATCH_KEYS) + ")",
                                        entry=where,
                                        field=f"match.{key}", line=line(m, key)))
                continue
            ok = (isinstance(value, kind) and not (kind is int and isinstance(value, bool)))
            if kind is list:
                ok = ok and all(isinstance(h, str) for h in value) and len(value) > 0
                if ok and accelerators is not None:
                    for h in value:
                        if h not in accelerators:
                            problems.append(Problem(shown, f"unknown accelerator id '{h}'"
                                                           + did_you_mean(h, accelerators),
                                                    entry=where, field="match.hardware",
                                                    line=line(m, key)))
                value = tuple(value) if ok else value
            if not ok:
                problems.append(Problem(shown, f"{value!r} is not {KIND_WORDS[kind]}",
                                        entry=where,
                                        field=f"match.{key}", line=line(m, key)))
                continue
            if key in ("from_date", "until_date") and not _is_date(value):
                problems.append(Problem(shown, f"{value!r} is not a date YYYY-MM-DD",
                                        entry=where, field=f"match.{key}", line=line(m, key)))
                continue
            match.append((key, value))
        settings = {}
        for key in SETTINGS:
            if key not in e:
                continue
            v = e[key]
            low = 0 if key == "dp_balance_timeout_steps" else 1
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                problems.append(Problem(shown, f"{v!r} is not an integer >= {low}",
                                        entry=where, field=key, line=line(e, key)))
                continue
            settings[key] = v
        memory = _memory(e, shown, where, line, problems)
        layout = {}
        for key in LAYOUT_SETTINGS:
            if key not in e:
                continue
            if not isinstance(e[key], bool):
                problems.append(Problem(shown, f"{e[key]!r} is not true or false",
                                        entry=where, field=key, line=line(e, key)))
                continue
            layout[key] = e[key]
        library = e.get("moe_library")
        if "moe_library" in e and library not in MOE_LIBRARIES:
            problems.append(Problem(shown, f"{library!r} is not a MoE library ("
                                    + ", ".join(MOE_LIBRARIES) + ")",
                                    entry=where, field="moe_library",
                                    line=line(e, "moe_library")))
            library = None
        drafts = e.get("mtp_draft_tokens")
        if "mtp_draft_tokens" in e and (isinstance(drafts, bool) or not isinstance(drafts, int)
                                        or not 1 <= drafts <= DRAFT_TOKENS_MAX):
            problems.append(Problem(shown, f"{drafts!r} is not a whole number of draft "
                                    f"tokens 1-{DRAFT_TOKENS_MAX}", entry=where,
                                    field="mtp_draft_tokens",
                                    line=line(e, "mtp_draft_tokens")))
            drafts = None
        if drafts is not None and ("speculative", "mtp") not in match:
            problems.append(Problem(shown, "mtp_draft_tokens needs speculative: mtp in its "
                                    "match", entry=where, field="match.speculative",
                                    line=line(e, "match")))
        given_memory = any(k in e for k in MEMORY_SETTINGS)
        if (not settings and not layout and not given_memory and "moe_library" not in e
                and "mtp_draft_tokens" not in e and len(problems) == n_before):
            problems.append(Problem(shown, "gives no setting ("
                                    + ", ".join((*SETTINGS, *MEMORY_SETTINGS,
                                                 *LAYOUT_SETTINGS, *KERNEL_SETTINGS,
                                                 *SPECULATIVE_SETTINGS)) + ")",
                                    entry=where))
        if len(problems) == n_before:
            src = str(e.get("source") or "")
            entries.append(Recipe(tuple(match), Admission(**settings, source=src),
                                  gives_admission=bool(settings),
                                  memory=(KvMemory(*memory, source=src) if memory else None),
                                  moe_library=library, mtp_draft_tokens=drafts,
                                  **layout))
    return Recipes(tuple(entries)), problems


def _is_date(value: str) -> bool:
    """Whether ``value`` is a calendar date written YYYY-MM-DD."""
    try:
        return dt.date.fromisoformat(value).isoformat() == value
    except ValueError:
        return False


def _memory(e: dict, shown: str, where: str, line, problems: list) -> tuple | None:
    """An entry's memory settings (share, share_of, reserve), checked; None if not given.

    The three are given together or not at all; each problem is appended to
    ``problems`` with the entry and field.
    """
    given = [k for k in MEMORY_SETTINGS if k in e]
    if not given:
        return None
    n_before = len(problems)
    missing = [k for k in MEMORY_SETTINGS if k not in e]
    if missing:
        problems.append(Problem(shown, "memory settings come together: add "
                                + ", ".join(missing) + " (or remove " + ", ".join(given)
                                + ")", entry=where, field=missing[0]))
        return None
    share, of, reserve = (e[k] for k in MEMORY_SETTINGS)
    if (isinstance(share, bool) or not isinstance(share, int | float)
            or not 0.0 < float(share) <= 1.0):
        problems.append(Problem(shown, f"{share!r} is not a share 0 < x <= 1",
                                entry=where, field="kv_cache_frac",
                                line=line(e, "kv_cache_frac")))
    for key, value, allowed in (("kv_cache_frac_of", of, SHARE_OF),
                                ("kv_reserve", reserve, RESERVE)):
        if value not in allowed:
            problems.append(Problem(shown, f"{value!r} is not one of "
                                    + ", ".join(allowed), entry=where, field=key,
                                    line=line(e, key)))
    if len(problems) > n_before:
        return None
    return float(share), of, reserve


def load_recipes(path: Path | str, catalog: Any = None) -> Recipes:
    """Read :data:`RECIPES_FILE` (no entries when ``path`` does not exist).

    Parameters
    ----------
    path : Path or str
        The recipes file.
    catalog : Catalog, optional
        When given, ``hardware`` ids are checked against its accelerators.

    Returns
    -------
    Recipes
        The entries, first match wins.

    Raises
    ------
    InputError
        Every problem of the file at once (entry, field and line named).
    """
    from dcplan.yamlio import read_yaml

    p = Path(path)
    if not p.exists():
        return Recipes()
    recipes, problems = check_recipes(read_yaml(p), display_path(p), catalog)
    if problems:
        raise InputError(problems)
    return recipes
