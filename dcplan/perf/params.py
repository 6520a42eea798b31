"""Parameters of the performance model: defaults file and calibration files.

The efficiency factors, per-step overheads and power-curve parameters are data:
defaults live in ``catalogs/perf_defaults.yaml`` and a calibration file written by
``dcplan perf calibrate`` overrides them per accelerator.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from dcplan.catalog import suggest
from dcplan.errors import InputError, Problem, display_path
from dcplan.paths import data_dir
from dcplan.yamlio import read_yaml, strip_lines, write_text_atomic

DEFAULTS_FILE = "perf_defaults.yaml"

#: Calibration file marker (first key of every file ``dcplan perf calibrate`` writes).
CALIBRATION_KIND = "dcplan_perf_calibration"


@dataclass(frozen=True)
class HardwareParams:
    """Efficiency, overhead and power-curve parameters of one accelerator type.

    Attributes
    ----------
    compute_eff_frac : float
        Share of dense peak FLOPS reached by prefill (long-sequence GEMMs) [0..1].
    decode_compute_eff_frac : float
        Share of dense peak FLOPS reached by decode steps (GEMMs over the batch) [0..1].
    hbm_eff_frac : float
        Share of peak HBM bandwidth reached when streaming weights and KV [0..1].
    scaleup_eff_frac : float
        Share of per-direction scale-up bandwidth reached by collectives [0..1].
    scaleout_eff_frac : float
        Share of scale-out bandwidth reached moving KV between pools [0..1].
    step_overhead_s : float
        Fixed time per forward step [s].
    collective_latency_s : float
        Latency of one collective across the replica [s].
    power_base_frac : float
        Activity of a serving accelerator with idle compute and memory [0..1].
    power_compute_weight, power_memory_weight : float
        Weights of compute and memory utilisation in the activity [-].
    """

    compute_eff_frac: float
    decode_compute_eff_frac: float
    hbm_eff_frac: float
    scaleup_eff_frac: float
    scaleout_eff_frac: float
    step_overhead_s: float
    collective_latency_s: float
    power_base_frac: float
    power_compute_weight: float
    power_memory_weight: float


#: Allowed range of each hardware parameter: name -> (low, high, unit text).
PARAM_BOUNDS: dict[str, tuple[float, float]] = {
    "compute_eff_frac": (1e-3, 1.0),
    "decode_compute_eff_frac": (1e-3, 1.0),
    "hbm_eff_frac": (1e-3, 1.0),
    "scaleup_eff_frac": (1e-3, 1.0),
    "scaleout_eff_frac": (1e-3, 1.0),
    "step_overhead_s": (0.0, 1.0),
    "collective_latency_s": (0.0, 0.01),
    "power_base_frac": (0.0, 1.0),
    "power_compute_weight": (0.0, 2.0),
    "power_memory_weight": (0.0, 2.0),
}

HW_PARAM_NAMES = tuple(f.name for f in fields(HardwareParams))


@dataclass(frozen=True)
class ServingParams:
    """Serving assumptions that do not depend on the accelerator.

    Attributes
    ----------
    hbm_usable_frac : float
        Share of HBM usable by weights and KV cache [0..1].
    activation_bytes : float
        Bytes per activation element in collectives [bytes].
    kv_bytes_per_element : tuple of (str, float)
        Bytes per KV-cache element by precision [bytes].
    max_batch_per_replica : int
        Scheduler limit on sequences decoded at once [sequences].
    prefill_chunk_tokens : int
        Prompt tokens per prefill chunk [tokens].
    ttft_queue_factor : float
        TTFT multiplier on one request's prefill time [-].
    """

    hbm_usable_frac: float
    activation_bytes: float
    kv_bytes_per_element: tuple[tuple[str, float], ...]
    max_batch_per_replica: int
    prefill_chunk_tokens: int
    ttft_queue_factor: float

    def kv_bytes(self, precision: str) -> float:
        """Bytes per KV-cache element when serving at ``precision`` [bytes]."""
        return dict(self.kv_bytes_per_element)[precision]


@dataclass(frozen=True)
class PerfDefaults:
    """Contents of ``perf_defaults.yaml``.

    Attributes
    ----------
    default : HardwareParams
        Parameters of any accelerator without its own entry.
    hardware : tuple
        ``(accelerator id, {param: value})`` overrides.
    serving : ServingParams
    source : str
        Path of the file read.
    """

    default: HardwareParams
    hardware: tuple[tuple[str, tuple[tuple[str, float], ...]], ...]
    serving: ServingParams
    source: str = ""

    def for_hardware(self, accelerator_id: str) -> HardwareParams:
        """Default parameters of ``accelerator_id`` (before calibration)."""
        over = dict(dict(self.hardware).get(accelerator_id, ()))
        return replace(self.default, **over) if over else self.default


@dataclass(frozen=True)
class Calibration:
    """Fitted parameters per accelerator, as written by ``dcplan perf calibrate``.

    Attributes
    ----------
    hardware : tuple
        ``(accelerator id, {param: value})`` fitted values (hashable form).
    default : tuple
        ``{param: value}`` applied to accelerators without their own entry (the
        median of the fitted values), or empty.
    source : str
        Measurement file the fit came from.
    meta : tuple
        Other information (fit statistics), ``(key, value)`` pairs.
    """

    hardware: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()
    default: tuple[tuple[str, float], ...] = ()
    source: str = ""
    meta: tuple[tuple[str, Any], ...] = field(default=(), compare=False, hash=False)

    @classmethod
    def from_dicts(
        cls,
        hardware: Mapping[str, Mapping[str, float]],
        default: Mapping[str, float] | None = None,
        source: str = "",
        meta: Mapping[str, Any] | None = None,
    ) -> Calibration:
        """Build a calibration from plain dicts."""
        hw = tuple(
            (h, tuple(sorted((k, float(v)) for k, v in p.items())))
            for h, p in sorted(hardware.items())
        )
        dflt = tuple(sorted((k, float(v)) for k, v in (default or {}).items()))
        return cls(hw, dflt, source, tuple((meta or {}).items()))

    @property
    def key(self) -> tuple:
        """Hashable identity of the fitted values (for caching)."""
        return (self.hardware, self.default)

    def overrides(self, accelerator_id: str) -> dict[str, float]:
        """Parameter overrides for ``accelerator_id`` (own entry, else the default)."""
        own = dict(self.hardware)
        if accelerator_id in own:
            return {**dict(self.default), **dict(own[accelerator_id])}
        return dict(self.default)

    def apply(self, base: HardwareParams, accelerator_id: str) -> HardwareParams:
        """Return ``base`` with this calibration's values for ``accelerator_id``."""
        over = self.overrides(accelerator_id)
        return replace(base, **over) if over else base


def _check_params(raw: Any, file: str, where: str, problems: list[Problem],
                  require_all: bool = False) -> dict[str, float]:
    """Validate a mapping of hardware parameters; append problems; return the valid ones."""
    out: dict[str, float] = {}
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        problems.append(Problem(file, "must be a mapping of parameter: value", entry=where))
        return out
    for key, value in strip_lines(raw).items():
        if key not in PARAM_BOUNDS:
            hint = suggest(key, PARAM_BOUNDS) or f"; allowed: {', '.join(PARAM_BOUNDS)}"
            problems.append(Problem(file, f"unknown parameter{hint}", entry=where, field=key))
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            problems.append(Problem(file, f"must be a number (got {value!r})", entry=where,
                                    field=key))
            continue
        lo, hi = PARAM_BOUNDS[key]
        if not lo <= value <= hi:
            problems.append(Problem(file, f"must be between {lo} and {hi} (got {value}); "
                                          "correct the value", entry=where, field=key))
            continue
        out[key] = float(value)
    if require_all:
        for key in HW_PARAM_NAMES:
            if key not in out and not any(p.field == key for p in problems):
                problems.append(Problem(file, "required parameter is missing; add it",
                                        entry=where, field=key))
    return out


def defaults_path(catalog: Any = None) -> Path:
    """Where the defaults file is: next to the catalog's racks file, else shipped."""
    files = getattr(catalog, "files", None) or {}
    for path in files.values():
        candidate = Path(path).parent / DEFAULTS_FILE
        if candidate.exists():
            return candidate
        break
    return data_dir("catalogs") / DEFAULTS_FILE


_DEFAULTS_CACHE: dict[str, PerfDefaults] = {}


def load_perf_defaults(path: Path | str | None = None) -> PerfDefaults:
    """Read and validate ``perf_defaults.yaml``.

    Parameters
    ----------
    path : Path or str, optional
        File to read (default: the shipped ``catalogs/perf_defaults.yaml``).

    Returns
    -------
    PerfDefaults

    Raises
    ------
    InputError
        With every problem found.
    """
    path = Path(path) if path else data_dir("catalogs") / DEFAULTS_FILE
    cache_key = str(path.resolve())
    if cache_key in _DEFAULTS_CACHE:
        return _DEFAULTS_CACHE[cache_key]
    shown = display_path(path)
    raw = read_yaml(path)
    problems: list[Problem] = []
    if not isinstance(raw, dict):
        raise InputError(Problem(shown, "must be a mapping with keys default, hardware, serving"))
    raw = strip_lines(raw)
    for key in ("source", "as_of"):
        if not raw.get(key):
            problems.append(Problem(shown, "required field is missing; add it", field=key))
    unknown = set(raw) - {"source", "as_of", "notes", "default", "hardware", "serving"}
    for key in sorted(unknown):
        problems.append(Problem(shown, "unknown top-level key" + suggest(
            key, ["default", "hardware", "serving"]), field=key))
    default = _check_params(raw.get("default"), shown, "default", problems, require_all=True)
    hw_raw = raw.get("hardware") or {}
    hardware = {}
    if not isinstance(hw_raw, dict):
        problems.append(Problem(shown, "must map accelerator id -> parameters", field="hardware"))
    else:
        for hid, params in hw_raw.items():
            hardware[str(hid)] = _check_params(params, shown, f"hardware.{hid}", problems)
    serving = _parse_serving(raw.get("serving"), shown, problems)
    if problems:
        raise InputError(problems)
    out = PerfDefaults(
        default=HardwareParams(**default),
        hardware=tuple((h, tuple(sorted(p.items()))) for h, p in sorted(hardware.items())),
        serving=serving,
        source=shown,
    )
    _DEFAULTS_CACHE[cache_key] = out
    return out


def _parse_serving(raw: Any, file: str, problems: list[Problem]) -> ServingParams | None:
    spec = {
        "hbm_usable_frac": (0.05, 1.0),
        "activation_bytes": (0.5, 8.0),
        "max_batch_per_replica": (1, 1_000_000),
        "prefill_chunk_tokens": (1, 10_000_000),
        "ttft_queue_factor": (1.0, 100.0),
    }
    if not isinstance(raw, dict):
        problems.append(Problem(file, "missing or not a mapping; add the serving section",
                                field="serving"))
        return None
    values: dict[str, Any] = {}
    for key, (lo, hi) in spec.items():
        value = raw.get(key)
        if value is None:
            problems.append(Problem(file, "required field is missing; add it", entry="serving",
                                    field=key))
        elif isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
            problems.append(Problem(file, f"must be a number between {lo} and {hi} "
                                          f"(got {value!r})", entry="serving", field=key))
        else:
            values[key] = value
    for key in set(raw) - set(spec) - {"kv_bytes_per_element"}:
        problems.append(Problem(file, "unknown field" + suggest(key, list(spec)), entry="serving",
                                field=key))
    kv = raw.get("kv_bytes_per_element")
    kv_pairs: list[tuple[str, float]] = []
    if not isinstance(kv, dict) or any(p not in kv for p in ("bf16", "fp8", "fp4")):
        problems.append(Problem(file, "must give bytes for bf16, fp8 and fp4", entry="serving",
                                field="kv_bytes_per_element"))
    else:
        for prec in ("bf16", "fp8", "fp4"):
            value = kv[prec]
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                problems.append(Problem(file, f"must be a positive number (got {value!r})",
                                        entry="serving", field=f"kv_bytes_per_element.{prec}"))
            else:
                kv_pairs.append((prec, float(value)))
    if len(values) < len(spec) or len(kv_pairs) < 3:
        return None
    return ServingParams(
        hbm_usable_frac=float(values["hbm_usable_frac"]),
        activation_bytes=float(values["activation_bytes"]),
        kv_bytes_per_element=tuple(kv_pairs),
        max_batch_per_replica=int(values["max_batch_per_replica"]),
        prefill_chunk_tokens=int(values["prefill_chunk_tokens"]),
        ttft_queue_factor=float(values["ttft_queue_factor"]),
    )


def load_calibration(path: Path | str, known_accelerators: Any = None) -> Calibration:
    """Read and validate a calibration file written by ``dcplan perf calibrate``.

    Parameters
    ----------
    path : Path or str
        YAML file.
    known_accelerators : iterable of str, optional
        Accelerator ids of the catalog; when given, unknown ids are reported.

    Returns
    -------
    Calibration

    Raises
    ------
    InputError
        With every problem found (file, entry, field and what to do).
    """
    shown = display_path(path)
    raw = read_yaml(Path(path))
    if not isinstance(raw, dict) or strip_lines(raw).get("kind") != CALIBRATION_KIND:
        raise InputError(Problem(shown, f"not a calibration file (expected 'kind: "
                                        f"{CALIBRATION_KIND}'); write one with "
                                        "'dcplan perf calibrate MEASUREMENTS.csv -o FILE'"))
    raw = strip_lines(raw)
    problems: list[Problem] = []
    allowed = {"kind", "source", "created", "fit", "default", "hardware", "notes"}
    for key in sorted(set(raw) - allowed):
        problems.append(Problem(shown, "unknown top-level key" + suggest(key, allowed), field=key))
    hw_raw = raw.get("hardware") or {}
    hardware: dict[str, dict[str, float]] = {}
    known = set(known_accelerators) if known_accelerators is not None else None
    if not isinstance(hw_raw, dict):
        problems.append(Problem(shown, "must map accelerator id -> parameters", field="hardware"))
    else:
        for hid, params in hw_raw.items():
            hid = str(hid)
            if known is not None and hid not in known:
                problems.append(Problem(shown, f"unknown accelerator id{suggest(hid, known)}; "
                                               "use an id from accelerators.yaml",
                                        entry=f"hardware.{hid}"))
            if isinstance(params, dict):
                params = {k: v for k, v in params.items() if k != "rows"}
            hardware[hid] = _check_params(params, shown, f"hardware.{hid}", problems)
    default = _check_params(raw.get("default"), shown, "default", problems)
    if problems:
        raise InputError(problems)
    meta = raw.get("fit") if isinstance(raw.get("fit"), dict) else {}
    return Calibration.from_dicts(hardware, default, str(raw.get("source", "")), meta)


def save_calibration(cal: Calibration, path: Path | str, rows_per_hw: Mapping[str, int] | None
                     = None, fit: Mapping[str, Any] | None = None) -> None:
    """Write ``cal`` as YAML (atomically) in the format :func:`load_calibration` reads.

    Parameters
    ----------
    cal : Calibration
    path : Path or str
        Output file.
    rows_per_hw : mapping, optional
        Number of measurement rows behind each accelerator's fit (informative).
    fit : mapping, optional
        Fit statistics to record.
    """
    hardware = {}
    for hid, params in cal.hardware:
        entry = {k: _round(v) for k, v in params}
        if rows_per_hw and hid in rows_per_hw:
            entry["rows"] = int(rows_per_hw[hid])
        hardware[hid] = entry
    doc = {
        "kind": CALIBRATION_KIND,
        "source": cal.source,
        "created": dt.date.today().isoformat(),
        "notes": "Fitted by dcplan perf calibrate (least squares on log throughput and power, "
                 "with a weak pull towards perf_defaults.yaml). 'default' is the median of the "
                 "fitted values and applies to accelerators without their own entry.",
        "fit": dict(fit or {}),
        "default": {k: _round(v) for k, v in cal.default},
        "hardware": hardware,
    }
    write_text_atomic(path, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))


def _round(value: float) -> float:
    return float(f"{value:.6g}")
