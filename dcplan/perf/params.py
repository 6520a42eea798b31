"""Parameters of the performance model: defaults file and calibration files.

Three kinds of parameters, all data (``catalogs/perf_defaults.yaml``):

- :class:`HardwareParams`: efficiencies, overheads and power curve of one accelerator
  type (``default`` for every accelerator, ``hardware:`` overrides per id); a
  calibration fits them per accelerator.
- :class:`PhysicsParams`: serving physics that does not depend on the accelerator
  (grouped-GEMM padding, expert load imbalance, speculative-decoding acceptance and
  draft cost, latency dispersion); a calibration fits them once over all rows.
- :class:`ServingParams`: assumptions that are not fitted (usable HBM share, bytes per
  element, scheduler limits, the parallel sizes engines deploy).
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, make_dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from dcplan.catalog import suggest
from dcplan.defaults import MAX_BATCH_PER_RANK_MAX
from dcplan.errors import InputError, Problem, display_path
from dcplan.paths import data_dir
from dcplan.perf.benchmarks import MEASUREMENTS_FOLDER, Benchmarks, load_benchmarks
from dcplan.perf.recipes import DRAFT_TOKENS_MAX
from dcplan.yamlio import read_yaml, strip_lines, write_text_atomic

DEFAULTS_FILE = "perf_defaults.yaml"
#: Calibration applied by default: next to the defaults file in use (the shipped one is
#: fitted by ``dcplan perf calibrate`` on ``catalogs/measurements/``).
CALIBRATION_FILE = "perf_calibration.yaml"
#: Power-performance curves under a power cap, next to the defaults file.
POWER_CURVES_FILE = "power_curves.yaml"
#: ``calibration`` value that means "no calibration: the defaults' a-priori values".
NO_CALIBRATION = "none"

#: Calibration file marker (first key of every file ``dcplan perf calibrate`` writes).
CALIBRATION_KIND = "dcplan_perf_calibration"

PRECISIONS = ("bf16", "fp8", "fp4")


#: The table of hardware and physics parameters: one row each with its level
#: (``hardware``: per accelerator, fitted per accelerator, vendor, architecture or
#: pooled; ``physics``: fitted once over all rows), unit, allowed range, where its
#: default lives, description and the source of its bounds. :class:`HardwareParams`,
#: :class:`PhysicsParams`, :data:`PARAM_BOUNDS`, :data:`PHYSICS_BOUNDS` and the table of
#: docs/perf.md (``python docs/gen_perf_params.py``) are built from it.
PARAMETERS_FILE = Path(__file__).with_name("parameters.csv")

#: Columns of :data:`PARAMETERS_FILE`, in order.
PARAMETER_COLUMNS = ("name", "level", "unit", "lo", "hi", "defaults_in", "description",
                     "bounds_source")

#: Levels of :data:`PARAMETERS_FILE`.
LEVELS = ("hardware", "physics")


@dataclass(frozen=True)
class ParamSpec:
    """One row of :data:`PARAMETERS_FILE`.

    Attributes
    ----------
    name : str
        Parameter name (the unit is in its suffix: ``_frac``, ``_s``, ``_tokens``...).
    level : {"hardware", "physics"}
        Per accelerator type, or one value for every accelerator.
    unit : str
        Unit: ``0..1`` for a share, ``s``, ``tokens`` or ``-`` (dimensionless).
    lo, hi : float
        Allowed range, in defaults, calibrations and sweeps [unit].
    defaults_in : str
        Where the a-priori default value lives (``perf_defaults.yaml`` section).
    description : str
        What the parameter means.
    bounds_source : str
        Why the bounds are what they are (empty: the unit's natural range).
    """

    name: str
    level: str
    unit: str
    lo: float
    hi: float
    defaults_in: str
    description: str
    bounds_source: str = ""


def read_parameter_table(path: Path | str = PARAMETERS_FILE) -> tuple[ParamSpec, ...]:
    """Read the parameter table (:data:`PARAMETERS_FILE`).

    Parameters
    ----------
    path : Path or str
        The table (default: the shipped ``parameters.csv``).

    Returns
    -------
    tuple of ParamSpec
        One per row: name, level, unit, bounds, where its default is, description.

    Raises
    ------
    ValueError
        For a header other than :data:`PARAMETER_COLUMNS`, an unknown level, a
        duplicate name or bounds that are not numbers with ``lo <= hi``.
    """
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    if not rows or tuple(rows[0]) != PARAMETER_COLUMNS:
        raise ValueError(f"{path}: header must be {','.join(PARAMETER_COLUMNS)}")
    out: list[ParamSpec] = []
    for i, row in enumerate(rows[1:], start=2):
        if len(row) != len(PARAMETER_COLUMNS):
            raise ValueError(f"{path}:{i}: {len(PARAMETER_COLUMNS)} columns expected")
        rec = dict(zip(PARAMETER_COLUMNS, row, strict=True))
        spec = ParamSpec(**{**rec, "lo": float(rec["lo"]), "hi": float(rec["hi"])})
        if spec.level not in LEVELS or not spec.lo <= spec.hi or any(
                p.name == spec.name for p in out):
            raise ValueError(f"{path}:{i}: bad level, bounds or duplicate name {spec.name!r}")
        out.append(spec)
    return tuple(out)


#: Rows of :data:`PARAMETERS_FILE`, in file order.
PARAMETERS: tuple[ParamSpec, ...] = read_parameter_table()


def _params_class(name: str, level: str, summary: str) -> type:
    """Frozen dataclass of the ``level`` rows of :data:`PARAMETERS`, one float field each.

    Fields may hold numpy arrays (one value per measurement row) when many rows are
    predicted at once. The docstring's attributes come from the table.
    """
    specs = [p for p in PARAMETERS if p.level == level]
    cls = make_dataclass(name, [(p.name, float) for p in specs], frozen=True)
    cls.__module__ = __name__  # pickles (sweeps) and saved plans name it from here
    lines = [f"{summary}", "", "Generated from ``parameters.csv`` (level ``{level}``).",
             "", "Attributes", "----------"]
    for p in specs:
        lines += [f"{p.name} : float", f"    {p.description.rstrip('.')} [{p.unit}]."]
    cls.__doc__ = "\n".join(lines).replace("{level}", level)
    return cls


#: Efficiency, overhead and power-curve parameters of one accelerator type.
HardwareParams = _params_class(
    "HardwareParams", "hardware",
    "Efficiency, overhead and power-curve parameters of one accelerator type.")

#: Serving physics that does not depend on the accelerator (fitted over all rows).
PhysicsParams = _params_class(
    "PhysicsParams", "physics",
    "Serving physics that does not depend on the accelerator (fitted over all rows).")

#: Allowed range of each hardware parameter.
PARAM_BOUNDS: dict[str, tuple[float, float]] = {
    p.name: (p.lo, p.hi) for p in PARAMETERS if p.level == "hardware"}

#: Allowed range of each physics parameter.
PHYSICS_BOUNDS: dict[str, tuple[float, float]] = {
    p.name: (p.lo, p.hi) for p in PARAMETERS if p.level == "physics"}

HW_PARAM_NAMES = tuple(f.name for f in fields(HardwareParams))
PHYSICS_NAMES = tuple(f.name for f in fields(PhysicsParams))

#: Highest share of the dense peak a forward pass's GEMMs can sustain [0..1] (the upper
#: bound of ``compute_eff_frac`` in the table; its ``bounds_source`` says why).
GEMM_EFF_MAX_FRAC = PARAM_BOUNDS["compute_eff_frac"][1]


@dataclass(frozen=True)
class ServingParams:
    """Serving assumptions that are not fitted.

    Attributes
    ----------
    hbm_usable_frac : float
        Share of HBM usable by weights and KV cache [0..1].
    activation_bytes : float
        Bytes per activation element in all-reduces and the MoE combine [bytes].
    dispatch_bytes : float
        Bytes per element of the MoE dispatch all-to-all (fp8 dispatch: 1) [bytes].
    kv_bytes_per_element : tuple of (str, float)
        Bytes per KV-cache element by serving precision [bytes].
    attention_precision : tuple of (str, str)
        Precision of the attention kernels' arithmetic by serving precision.
    moe_non_expert_precision : tuple of (str, str)
        Precision of an MoE model's non-expert weights (attention, dense FFN, shared
        experts) by serving precision (FP4 checkpoints quantise the experts only).
    max_batch_per_rank : int
        Scheduler limit on sequences decoded at once per attention data-parallel rank
        (an instance without DP attention has one rank) [sequences].
    two_batch_overlap : bool
        Engines may split an expert-parallel pass into two micro-batches whose
        communication overlaps the other's compute (SGLang two-batch overlap, DeepSeek's
        dual micro-batch overlap); the faster schedule is taken.
    board_ep_gpus : int
        GPUs of one board: a decode expert-parallel group wider than this inside one
        scale-up domain runs its all-to-all at ``wide_ep_comm_ratio`` times
        ``moe_comm_eff_frac`` [GPUs].
    prefill_chunk_tokens : int
        Prompt tokens per prefill chunk [tokens].
    tensor_parallel_sizes : tuple of int
        Attention tensor-parallel sizes engines deploy [-].
    mtp_draft_tokens : tuple of int
        Draft lengths tried with multi-token prediction [tokens].
    draft_tokens : tuple of int
        Draft lengths tried with a draft model [tokens].
    measurement_length_frac : float
        Mean sequence length of a serving-measurement row as a share of its nominal
        lengths (InferenceX draws 80-100%: 0.9) [-].
    phase_rows_percentile : float
        Percentile of the latency limits on phase-level end-to-end rows (MLPerf
        Server: 99) [-].
    measurement_scaleout_gbps : float
        Scale-out bandwidth per GPU for measurement rows whose accelerator is in no
        rack of the catalog [Gb/s].
    frontier_ttft_share_max_frac : float
        ``perf frontier`` without ``--ttft-s``: most of a request's median end-to-end
        latency (median TTFT + output tokens x median TPOT) its median TTFT may take;
        bounds the prefill queue of every point [0..1).
    """

    hbm_usable_frac: float
    activation_bytes: float
    dispatch_bytes: float
    kv_bytes_per_element: tuple[tuple[str, float], ...]
    attention_precision: tuple[tuple[str, str], ...]
    moe_non_expert_precision: tuple[tuple[str, str], ...]
    max_batch_per_rank: int
    two_batch_overlap: bool
    board_ep_gpus: int
    prefill_chunk_tokens: int
    tensor_parallel_sizes: tuple[int, ...]
    mtp_draft_tokens: tuple[int, ...]
    draft_tokens: tuple[int, ...]
    measurement_length_frac: float
    phase_rows_percentile: float
    measurement_scaleout_gbps: float
    frontier_ttft_share_max_frac: float

    def kv_bytes(self, precision: str) -> float:
        """Bytes per KV-cache element when serving at ``precision`` [bytes].

        Parameters
        ----------
        precision : str
            Serving precision (``bf16``, ``fp8``, ``fp4``).

        Returns
        -------
        float
            Bytes per KV-cache element [bytes].
        """
        return dict(self.kv_bytes_per_element)[precision]

    def attention_prec(self, precision: str) -> str:
        """Precision the attention arithmetic runs at when serving at ``precision``.

        Parameters
        ----------
        precision : str
            Serving precision (``bf16``, ``fp8``, ``fp4``).

        Returns
        -------
        str
            The attention precision.
        """
        return dict(self.attention_precision)[precision]

    def non_expert_prec(self, precision: str) -> str:
        """Precision of an MoE model's non-expert weights at serving ``precision``.

        Parameters
        ----------
        precision : str
            Serving precision (``bf16``, ``fp8``, ``fp4``).

        Returns
        -------
        str
            The non-expert weights' precision.
        """
        return dict(self.moe_non_expert_precision)[precision]


#: serving keys: name -> (kind, low, high); kind is "num", "int", "bool", "ints", "bytes",
#: "prec".
_SERVING_SPEC: dict[str, tuple[str, float, float]] = {
    "hbm_usable_frac": ("num", 0.05, 1.0),
    "activation_bytes": ("num", 0.5, 8.0),
    "dispatch_bytes": ("num", 0.25, 8.0),
    "kv_bytes_per_element": ("bytes", 0.25, 8.0),
    "attention_precision": ("prec", 0, 0),
    "moe_non_expert_precision": ("prec", 0, 0),
    "max_batch_per_rank": ("int", 1, MAX_BATCH_PER_RANK_MAX),
    "two_batch_overlap": ("bool", 0, 0),
    "board_ep_gpus": ("int", 1, 1024),
    "prefill_chunk_tokens": ("int", 1, 10_000_000),
    "tensor_parallel_sizes": ("ints", 1, 1024),
    "mtp_draft_tokens": ("ints", 1, DRAFT_TOKENS_MAX),
    "draft_tokens": ("ints", 1, DRAFT_TOKENS_MAX),
    "measurement_length_frac": ("num", 0.05, 1.0),
    "phase_rows_percentile": ("num", 50.0, 99.99),
    "measurement_scaleout_gbps": ("num", 1.0, 100_000.0),
    "frontier_ttft_share_max_frac": ("num", 0.001, 0.9),
}


def year_fraction(date: str) -> float | None:
    """Calendar date ``YYYY-MM[-DD]`` as a fractional year (2026-07-02 -> ~2026.5).

    None for an empty or malformed date.

    Parameters
    ----------
    date : str
        ``YYYY-MM`` (the 15th is taken) or ``YYYY-MM-DD``.

    Returns
    -------
    float or None
        The date as a fractional year [year].
    """
    text = (date or "").strip()
    try:
        parts = [int(x) for x in text.split("-")]
        day = dt.date(parts[0], parts[1], parts[2] if len(parts) > 2 else 15)
    except (ValueError, IndexError):
        return None
    start = dt.date(day.year, 1, 1)
    return day.year + (day - start).days / 365.25


@dataclass(frozen=True)
class SoftwareSpec:
    """How the calibration separates serving software from silicon (``software:``).

    Attributes
    ----------
    base_engine : tuple of (str, str)
        Measurement ``framework`` -> the engine it runs on (``dynamo-trt`` ->
        ``trt``): a framework without rows of its own takes its engine's values.
    knobs : tuple of (str, tuple of str)
        Knob -> the hardware parameters it scales. Each engine gets one log offset
        per knob, and the run date one log trend per knob per year.
    reference_date : str
        Date at which the fitted trend is zero (the middle of the data) [YYYY-MM-DD].
    kv_handover_per_dp_rank : tuple of str
        Engines whose disaggregated prefill instances hand KV caches over per
        attention-DP rank, every rank its own requests at once; the others hand over one
        request at a time per instance (:func:`dcplan.perf.serving.kv_transfer_s`).
    """

    base_engine: tuple[tuple[str, str], ...] = ()
    knobs: tuple[tuple[str, tuple[str, ...]], ...] = ()
    reference_date: str = ""
    kv_handover_per_dp_rank: tuple[str, ...] = ()

    def handover_per_rank(self, framework: str) -> bool:
        """Whether ``framework``'s prefill instances hand KV caches over per DP rank.

        Parameters
        ----------
        framework : str
            Measurement ``framework`` or engine ('' for none: per instance).

        Returns
        -------
        bool
            True when its engine is in ``kv_handover_per_dp_rank``.
        """
        return bool(framework) and self.engine_of(framework) in self.kv_handover_per_dp_rank

    def engine_of(self, framework: str) -> str:
        """The engine ``framework`` runs on (itself when not mapped).

        Parameters
        ----------
        framework : str
            Measurement ``framework``.

        Returns
        -------
        str
            The engine.
        """
        return dict(self.base_engine).get(framework, framework)


@dataclass(frozen=True)
class SoftwareFit:
    """Fitted engine and run-date adjustments of a calibration.

    The calibration's vendor, architecture and accelerator values are what the planner
    uses: the vendor's planning engine (``planning_engine``) at ``reference_date``.
    A measurement row on another engine or date is predicted with, per knob, the log
    factor ``offset(engine) - offset(planning engine) + trend (year - reference year)``
    on the knob's parameters. A row without a framework takes offset 0 (the pooled
    engine), a row without a date the reference date.

    Attributes
    ----------
    knobs : tuple of (str, tuple of str)
        Knob -> hardware parameters it scales.
    engines : tuple of (str, tuple of (str, float))
        Framework or engine -> knob -> fitted log offset.
    base_engine : tuple of (str, str)
        Framework -> engine (a framework without its own offset takes its engine's).
    trend_per_year : tuple of (str, float)
        Knob -> log change per year of run date.
    reference_date : str
        Planning date: the latest run date fitted [YYYY-MM-DD]; a later run is read
        at this date (the trend is not extrapolated).
    earliest_date : str
        Earliest run date fitted [YYYY-MM-DD]; an earlier run is read at this date
        (empty in files written before it was recorded: no lower limit).
    planning_engine : tuple of (str, str)
        Vendor (and ``default``) -> engine the planner's values assume.
    cross_domain : tuple of (str, float)
        Hardware parameter -> log offset of runs whose TP or EP group spans scale-up
        domains (collectives over the scale-out network), fitted on all such rows of
        every accelerator. The planner's layouts stay inside one domain.
    """

    knobs: tuple[tuple[str, tuple[str, ...]], ...] = ()
    engines: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()
    base_engine: tuple[tuple[str, str], ...] = ()
    trend_per_year: tuple[tuple[str, float], ...] = ()
    reference_date: str = ""
    planning_engine: tuple[tuple[str, str], ...] = ()
    cross_domain: tuple[tuple[str, float], ...] = ()
    earliest_date: str = ""

    def offset(self, framework: str) -> dict[str, float]:
        """Knob -> log offset of ``framework`` (its engine's when it has none).

        A framework whose engine was not fitted takes :meth:`typical_offset`; no
        framework (``''``, as MLPerf rows are fitted) offset 0, the pooled engine.

        Parameters
        ----------
        framework : str
            Measurement ``framework`` or engine.

        Returns
        -------
        dict
            Knob -> log offset [ln].
        """
        if self.unfitted_engine(framework):
            return self.typical_offset()
        eng = dict(self.engines)
        if framework in eng:
            return dict(eng[framework])
        return dict(eng.get(dict(self.base_engine).get(framework, framework), ()))

    def unfitted_engine(self, framework: str) -> str:
        """The engine of ``framework`` the fit never saw ('' when it did, or no framework).

        Parameters
        ----------
        framework : str
            Measurement ``framework`` or engine.

        Returns
        -------
        str
            The engine, read as :meth:`offset` reads it, that takes :meth:`typical_offset`.
        """
        eng = dict(self.engines)
        base = dict(self.base_engine).get(framework, framework)
        return "" if not framework or framework in eng or base in eng else base

    def typical_offset(self) -> dict[str, float]:
        """Knob -> mean log offset of the fitted engines (an engine the fit never saw).

        The engines' offsets and the pooled values are split only by their pulls
        towards zero, so offset 0 is no engine in particular; the mean of the fitted
        engines (frameworks excluded) is a typical one. The fit reads the rows of an
        engine it cannot tell apart (``calibration.separable_engines``) at the same
        mean, so a calibration predicts them as it fitted them.

        Returns
        -------
        dict
            Knob -> log offset [ln] (empty without fitted engines).
        """
        bases = dict(self.base_engine)
        own = [dict(o) for e, o in self.engines if bases.get(e, e) == e]
        return {k: float(statistics.fmean([o.get(k, 0.0) for o in own])) for k, _ in self.knobs
                } if own else {}

    def planning(self, vendor: str | None) -> str:
        """The engine the planner's values of ``vendor`` assume.

        Parameters
        ----------
        vendor : str or None
            Accelerator vendor (None: the ``default`` engine).

        Returns
        -------
        str
            The engine ('' when none is recorded).
        """
        plan = dict(self.planning_engine)
        return plan.get(vendor or "", plan.get("default", ""))

    def log_factors(self, vendor: str | None, framework: str, date: str,
                    spans: bool = False) -> dict[str, float]:
        """Parameter -> log factor that moves the planning values to ``framework`` at ``date``.

        ``spans``: the run's TP or EP group spans scale-up domains (adds ``cross_domain``).

        Parameters
        ----------
        vendor : str or None
            Accelerator vendor (picks the planning engine).
        framework : str
            The run's ``framework`` ('' : the pooled engine).
        date : str
            The run's date [YYYY-MM[-DD]] ('' : the reference date).
        spans : bool
            The run's TP or EP group spans scale-up domains (adds ``cross_domain``).

        Returns
        -------
        dict
            Hardware parameter -> log factor [ln].
        """
        here = self.offset(framework)        # no framework: the pooled engine (0)
        ref = self.offset(self.planning(vendor))
        y, y0 = year_fraction(date), year_fraction(self.reference_date)
        # the trend is not extrapolated past the latest run date fitted, nor before the
        # earliest
        dy = min(y - y0, 0.0) if (y is not None and y0 is not None) else 0.0
        ye = year_fraction(self.earliest_date)
        if ye is not None and y0 is not None:
            dy = max(dy, min(ye - y0, 0.0))
        trend = dict(self.trend_per_year)
        out: dict[str, float] = {}
        for knob, names in self.knobs:
            f = here.get(knob, 0.0) - ref.get(knob, 0.0) + trend.get(knob, 0.0) * dy
            for n in names:
                out[n] = out.get(n, 0.0) + f
        if spans:
            for n, f in self.cross_domain:
                out[n] = out.get(n, 0.0) + f
        return out


@dataclass(frozen=True)
class PerfDefaults:
    """Contents of ``perf_defaults.yaml``.

    Attributes
    ----------
    default : HardwareParams
        Parameters of any accelerator without its own entry.
    hardware : tuple
        ``(accelerator id, {param: value})`` overrides.
    physics : PhysicsParams
    serving : ServingParams
    source : str
        Path of the file read.
    software : SoftwareSpec
        How calibrations separate engines and run dates from silicon.
    """

    default: HardwareParams
    hardware: tuple[tuple[str, tuple[tuple[str, float], ...]], ...]
    physics: PhysicsParams
    serving: ServingParams
    source: str = ""
    software: SoftwareSpec = field(default_factory=SoftwareSpec)

    def with_max_batch(self, max_batch_per_rank: int | None) -> PerfDefaults:
        """These defaults with another running-request cap per attention-DP rank.

        Parameters
        ----------
        max_batch_per_rank : int or None
            The engine's cap (``dcplan perf --max-batch``, a scenario's
            ``serving.max_batch_per_rank``) [sequences]; None: these defaults unchanged.

        Returns
        -------
        PerfDefaults
            A copy with ``serving.max_batch_per_rank`` replaced (or ``self``).
        """
        if max_batch_per_rank is None:
            return self
        return replace(self, serving=replace(self.serving,
                                             max_batch_per_rank=int(max_batch_per_rank)))

    def for_hardware(self, accelerator_id: str) -> HardwareParams:
        """Default parameters of ``accelerator_id`` (before calibration).

        Parameters
        ----------
        accelerator_id : str
            Accelerator id.

        Returns
        -------
        HardwareParams
            The pooled defaults with the accelerator's own defaults (units per
            ``parameters.csv``).
        """
        over = dict(dict(self.hardware).get(accelerator_id, ()))
        return replace(self.default, **over) if over else self.default


#: Kinds of model a calibration's basis tells apart per architecture: without routed
#: experts, and mixture-of-experts (:attr:`FitBasis.architecture_kinds`).
MODEL_KINDS = ("dense", "moe")


def model_kind(is_moe: bool) -> str:
    """The kind of a model as a basis records it (:data:`MODEL_KINDS`).

    Parameters
    ----------
    is_moe : bool
        The model has routed experts.

    Returns
    -------
    str
        ``"moe"`` with routed experts, else ``"dense"``.
    """
    return MODEL_KINDS[1] if is_moe else MODEL_KINDS[0]


@dataclass(frozen=True)
class FitBasis:
    """What the rows a calibration is fitted on cover, so figures outside them are named.

    ``dcplan perf calibrate`` works it out from the rows it fits
    (:func:`dcplan.perf.calibration.fit_basis`) and writes it as the calibration file's
    ``basis:`` section. A calibration without one (written before it existed, or
    ``--calibration none``) names no extrapolation. A point outside it is still
    computed; it says that its figure extrapolates the fit
    (:func:`dcplan.perf.goodput.ep_extrapolation`,
    :func:`dcplan.perf.goodput.handover_outside_fit`).

    Attributes
    ----------
    domain_ep_max : int
        Widest MoE expert-parallel group inside one scale-up domain that the rows
        *decode* over (decode phase rows' ``ep``, serving rows' ``decode_ep``, no wider
        than the accelerator's domain; wider groups span domains over the scale-out
        network) [GPUs]; 0: no such row (every expert-parallel group inside one domain
        is then outside the fit).
    prefill_domain_ep_max : int or None
        The same for the groups the rows *prefill* over (prefill phase rows' ``ep``,
        serving rows' ``prefill_ep``) [GPUs]: decode and prefill run different
        all-to-all kernels, fitted apart. None (a basis written before 2026-12-06, which
        counted both phases in ``domain_ep_max``): as ``domain_ep_max``.
    handover_domain_max : int
        Largest scale-up domain of the accelerators of the disaggregated serving rows,
        on which the KV hand-over time is fitted [GPUs]; 0: no such row (every
        bounding hand-over is then outside the fit).
    handover_prompt_tokens_max : float
        Longest nominal prompt of those rows [input tokens]; 0: no such row.
    handover_models : tuple of str
        Models of those rows (sorted). Not checked against a catalog (a catalog without
        the fitted model is legitimate): a point serving another model is outside.
    wide_decode_seqs_per_gpu_min : float or None
        Fewest sequences per GPU that a row decodes at with an expert-parallel group
        wider than one board (``serving.board_ep_gpus``) inside one scale-up domain
        (serving rows: requests in flight over the decode GPUs; decode phase rows: the
        batch over the GPUs) [sequences per GPU]; 0: no such row. Below it the
        all-to-all latency and the step overheads, fitted on boards only, weigh more in
        such a group's decode step. None (a basis written before 2026-12-06, thirteenth):
        not checked.
    architecture_kinds : tuple of (str, tuple of str), optional
        Per architecture of the rows' accelerators (as the calibration shares its
        values), the kinds of model its rows run, ``"dense"`` and/or ``"moe"`` (sorted
        pairs). A dense model on an architecture fitted on MoE rows only (or the
        reverse) takes efficiencies no row of its kind pinned there
        (:func:`dcplan.perf.goodput.model_kind_extrapolation`). None (a basis written
        before 2026-12-06, seventeenth): not checked.
    """

    domain_ep_max: int = 0
    handover_domain_max: int = 0
    handover_prompt_tokens_max: float = 0.0
    handover_models: tuple[str, ...] = ()
    prefill_domain_ep_max: int | None = None
    wide_decode_seqs_per_gpu_min: float | None = None
    architecture_kinds: tuple[tuple[str, tuple[str, ...]], ...] | None = None

    def kinds_on(self, architecture: str) -> tuple[str, ...] | None:
        """Kinds of model (``"dense"``, ``"moe"``) the rows run on ``architecture``.

        Parameters
        ----------
        architecture : str
            Architecture name [-].

        Returns
        -------
        tuple of str or None
            Sorted kinds; () when no row runs on it; None when not recorded.
        """
        if self.architecture_kinds is None:
            return None
        return dict(self.architecture_kinds).get(architecture, ())

    @property
    def prefill_ep_max(self) -> int:
        """Widest fitted prefill group inside one domain [GPUs].

        ``prefill_domain_ep_max``, else (a basis of before 2026-12-06) ``domain_ep_max``.
        """
        return (self.domain_ep_max if self.prefill_domain_ep_max is None
                else self.prefill_domain_ep_max)

    def as_dict(self) -> dict[str, Any]:
        """The ``basis:`` section of a calibration file (plain YAML types)."""
        out = {"domain_ep_max": self.domain_ep_max,
               "prefill_domain_ep_max": self.prefill_domain_ep_max,
               "handover_domain_max": self.handover_domain_max,
               "handover_prompt_tokens_max": self.handover_prompt_tokens_max,
               "handover_models": list(self.handover_models)}
        if self.prefill_domain_ep_max is None:
            del out["prefill_domain_ep_max"]
        if self.wide_decode_seqs_per_gpu_min is not None:
            out["wide_decode_seqs_per_gpu_min"] = self.wide_decode_seqs_per_gpu_min
        if self.architecture_kinds is not None:
            out["architecture_kinds"] = {a: list(k) for a, k in self.architecture_kinds}
        return out


#: A fit has stopped on a steep slope when its gradient, per unit of one column (the
#: columns are ln values and ln factors), is larger than this many times its loss: by
#: the gradient, a 1 % change of one fitted value would move the loss by more than
#: 1 %. The least-squares search (robust loss, finite-difference Jacobian) stops
#: there on step size (``xtol``) when the loss has a kink the gradient does not see (a
#: layout or batch choice switching), or after too few evaluations; restarting it
#: from that point moves nothing (tried on the shipped fit and on two such fits,
#: 2026-12-06). Fits that reached one loss from different starts have 0.04-0.07 times
#: their loss; the two that stopped 6-9 % above it, 1.9 and 3.6 times
#: (catalogs/perf_calibration_alternatives/README.md) [-].
STEEP_STOP_ELASTICITY = 1.0


def steep_stop(fit: Mapping[str, Any]) -> str | None:
    """Why a calibration's fit may have stopped early, or None.

    Parameters
    ----------
    fit : mapping
        The fit's statistics (a calibration file's ``fit`` block, :attr:`Calibration.meta`):
        ``first_order_optimality`` (the gradient's largest component [per ln unit]) and
        ``cost`` (the robust loss there [-]). Without both (files written before the
        loss was recorded), None.

    Returns
    -------
    str or None
        A sentence when the gradient exceeds :data:`STEEP_STOP_ELASTICITY` times the loss.
    """
    try:
        grad, cost = float(fit["first_order_optimality"]), float(fit["cost"])
    except (KeyError, TypeError, ValueError):
        return None
    if not (math.isfinite(grad) and math.isfinite(cost) and cost > 0):
        return None
    if grad <= STEEP_STOP_ELASTICITY * cost:
        return None
    return (f"the calibration's fit stopped on a steep slope (first-order optimality "
            f"{grad:.3g} against a loss of {cost:.3g}: by its gradient, a 1 % change of one "
            f"fitted value would move the loss by {grad / cost:.1f} %); it may have stopped "
            "early or on a kink, and its efficiencies may be far from a converged fit's: "
            "compare its plans with the shipped calibration's (docs/perf.md, How well the "
            "data pin the fit)")


@dataclass(frozen=True)
class Calibration:
    """Fitted parameters, as written by ``dcplan perf calibrate``.

    Attributes
    ----------
    hardware : tuple
        ``(accelerator id, {param: value})`` fitted values (hashable form).
    default : tuple
        ``{param: value}`` for accelerators without their own entry or vendor entry:
        one parameter set fitted to all rows at once (pooled), or empty.
    vendor : tuple
        ``(vendor, {param: value})``: fitted to the rows of each vendor's accelerators;
        applies to that vendor's accelerators without their own entry.
    physics : tuple
        ``{param: value}`` fitted physics parameters (all accelerators).
    source : str
        Measurement file(s) the fit came from.
    meta : tuple
        Other information (fit statistics), ``(key, value)`` pairs.
    architecture : tuple
        ``(architecture, {param: value})``: fitted to the rows of that architecture's
        accelerators (with their vendor's); applies to accelerators of that
        architecture without their own entry.
    software : SoftwareFit or None
        Engine and run-date adjustments (measurement rows only; the planner uses the
        stored values as they are).
    basis : FitBasis or None
        What the fitted rows cover (None: not recorded, no extrapolation is named).
    """

    hardware: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()
    default: tuple[tuple[str, float], ...] = ()
    source: str = ""
    meta: tuple[tuple[str, Any], ...] = field(default=(), compare=False, hash=False)
    physics: tuple[tuple[str, float], ...] = ()
    vendor: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()
    architecture: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()
    software: SoftwareFit | None = None
    basis: FitBasis | None = None

    @classmethod
    def from_dicts(
        cls,
        hardware: Mapping[str, Mapping[str, float]],
        default: Mapping[str, float] | None = None,
        source: str = "",
        meta: Mapping[str, Any] | None = None,
        physics: Mapping[str, float] | None = None,
        vendor: Mapping[str, Mapping[str, float]] | None = None,
        architecture: Mapping[str, Mapping[str, float]] | None = None,
        software: SoftwareFit | None = None,
        basis: FitBasis | None = None,
    ) -> Calibration:
        """Build a calibration from plain dicts.

        Parameters
        ----------
        hardware : mapping
            Accelerator id -> {parameter: value} [units per ``parameters.csv``].
        default : mapping, optional
            Pooled {parameter: value}.
        source : str
            Measurement file(s) the fit came from.
        meta : mapping, optional
            Fit statistics.
        physics : mapping, optional
            Fitted physics {parameter: value}.
        vendor : mapping, optional
            Vendor -> {parameter: value}.
        architecture : mapping, optional
            Architecture -> {parameter: value}.
        software : SoftwareFit, optional
            Engine and run-date adjustments.
        basis : FitBasis, optional
            What the fitted rows cover.

        Returns
        -------
        Calibration
            The calibration in its hashable form.
        """
        def pairs(table):
            return tuple((h, tuple(sorted((k, float(v)) for k, v in p.items())))
                         for h, p in sorted((table or {}).items()))

        dflt = tuple(sorted((k, float(v)) for k, v in (default or {}).items()))
        phys = tuple(sorted((k, float(v)) for k, v in (physics or {}).items()))
        return cls(pairs(hardware), dflt, source, tuple((meta or {}).items()), phys,
                   pairs(vendor), pairs(architecture), software, basis)

    @property
    def key(self) -> tuple:
        """Hashable identity of the fitted values and their basis (for caching)."""
        return (self.hardware, self.default, self.physics, self.vendor, self.architecture,
                self.software, self.basis)

    def overrides(self, accelerator_id: str, vendor: str | None = None,
                  architecture: str | None = None) -> dict[str, float]:
        """Parameter overrides for ``accelerator_id``.

        The default, then the vendor's, the architecture's and its own values.

        Parameters
        ----------
        accelerator_id : str
            Accelerator id.
        vendor : str, optional
            The accelerator's vendor.
        architecture : str, optional
            The accelerator's architecture.

        Returns
        -------
        dict
            Parameter -> value [units per ``parameters.csv``].
        """
        out = dict(self.default)
        if vendor is not None:
            out.update(dict(dict(self.vendor).get(vendor, ())))
        if architecture is not None:
            out.update(dict(dict(self.architecture).get(architecture, ())))
        out.update(dict(dict(self.hardware).get(accelerator_id, ())))
        return out

    def apply(self, base: HardwareParams, accelerator_id: str,
              vendor: str | None = None, architecture: str | None = None) -> HardwareParams:
        """Return ``base`` with this calibration's values for ``accelerator_id``.

        Parameters
        ----------
        base : HardwareParams
            Parameters before calibration.
        accelerator_id : str
            Accelerator id.
        vendor : str, optional
            The accelerator's vendor.
        architecture : str, optional
            The accelerator's architecture.

        Returns
        -------
        HardwareParams
            ``base`` with the calibrated values.
        """
        over = self.overrides(accelerator_id, vendor, architecture)
        return replace(base, **over) if over else base

    def apply_run(self, params: HardwareParams, vendor: str | None, framework: str,
                  date: str, spans: bool = False) -> HardwareParams:
        """``params`` (the planner's values) moved to a measured run's engine and date.

        Without a software section, or for a run on the planning engine at the
        reference date, ``params`` unchanged. Values are kept within
        :data:`PARAM_BOUNDS`.

        Parameters
        ----------
        params : HardwareParams
            The planner's (calibrated) values.
        vendor : str or None
            Accelerator vendor.
        framework : str
            The run's ``framework``.
        date : str
            The run's date [YYYY-MM[-DD]].
        spans : bool
            The run's TP or EP group spans scale-up domains.

        Returns
        -------
        HardwareParams
            The values for the run.
        """
        if self.software is None:
            return params
        return scale_params(params, self.software.log_factors(vendor, framework, date, spans))

    def steep_stop(self) -> str | None:
        """Why this fit may have stopped early, or None (see :func:`steep_stop`)."""
        return steep_stop(dict(self.meta))

    def apply_physics(self, base: PhysicsParams) -> PhysicsParams:
        """Return ``base`` with this calibration's physics values.

        Parameters
        ----------
        base : PhysicsParams
            Physics parameters before calibration.

        Returns
        -------
        PhysicsParams
            ``base`` with the fitted physics values.
        """
        return replace(base, **dict(self.physics)) if self.physics else base


def scale_params(params: HardwareParams, logs: Mapping[str, float]) -> HardwareParams:
    """``params`` with each named parameter times ``exp(log factor)`` [ln].

    Values are kept within :data:`PARAM_BOUNDS`; ``params`` itself when every factor is
    zero. One definition for a run's engine and date and for a software level.

    Parameters
    ----------
    params : HardwareParams
        Parameters to scale.
    logs : mapping
        Parameter -> log factor [ln].

    Returns
    -------
    HardwareParams
        The scaled parameters.
    """
    if not any(logs.values()):
        return params
    new = {}
    for name, f in logs.items():
        lo, hi = PARAM_BOUNDS[name]
        new[name] = float(min(max(getattr(params, name) * math.exp(f), lo), hi))
    return replace(params, **new)


#: Parameters that changed section, with what an older file should do.
MOVED_PARAMS = {
    "ttft_overhead_s": "ttft_overhead_s is an accelerator parameter since 2026-12 (under "
                       "default:, vendor:, architecture: or hardware:, no longer physics:); "
                       "move it there, or re-run 'dcplan perf calibrate' to write a new file",
}


def _check_params(raw: Any, file: str, where: str, problems: list[Problem],
                  bounds: Mapping[str, tuple[float, float]], require_all: bool = False
                  ) -> dict[str, float]:
    """Validate a mapping of parameters against ``bounds``; append problems."""
    out: dict[str, float] = {}
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        problems.append(Problem(file, "must be a mapping of parameter: value", entry=where))
        return out
    for key, value in strip_lines(raw).items():
        if key in MOVED_PARAMS and key not in bounds:
            problems.append(Problem(file, MOVED_PARAMS[key], entry=where, field=key))
            continue
        if key not in bounds:
            hint = suggest(key, bounds) or f"; allowed: {', '.join(bounds)}"
            problems.append(Problem(file, f"unknown parameter{hint}", entry=where, field=key))
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            problems.append(Problem(file, f"must be a number (got {value!r})", entry=where,
                                    field=key))
            continue
        lo, hi = bounds[key]
        if not lo <= value <= hi:
            problems.append(Problem(file, f"must be between {lo} and {hi} (got {value}); "
                                          "correct the value", entry=where, field=key))
            continue
        out[key] = float(value)
    if require_all:
        for key in bounds:
            if key not in out and not any(p.field == key for p in problems):
                problems.append(Problem(file, "required parameter is missing; add it",
                                        entry=where, field=key))
    return out


def perf_folder(catalog: Any = None) -> Path:
    """The folder of the performance data: the catalog's, when it holds a defaults file.

    Parameters
    ----------
    catalog : Catalog, path or None
        A loaded catalog (its racks file's folder) or a catalog folder; None: the
        shipped catalogs.

    Returns
    -------
    Path
        The folder holding ``perf_defaults.yaml`` (and ``perf_calibration.yaml``,
        ``measurements/``): ``catalog``'s own when it has one, else the shipped one.
    """
    if isinstance(catalog, str | Path):
        folders = [Path(catalog)]
    else:
        files = getattr(catalog, "files", None) or {}
        folders = [Path(p).parent for p in list(files.values())[:1]]
    for folder in folders:
        if (folder / DEFAULTS_FILE).exists():
            return folder
    return data_dir("catalogs")


@dataclass(frozen=True)
class PerfInputs:
    """What the performance model reads: defaults and calibration, loaded once.

    Attributes
    ----------
    defaults : PerfDefaults
        ``perf_defaults.yaml``.
    calibration : Calibration or None
        The calibration in use; None: the a-priori defaults.
    files : tuple of str
        The defaults file and the calibration file read, resolved, in reading order.
    benchmarks : Benchmarks or None
        What the measurement files' benchmarks ran (their request lengths and engine
        recipes, :mod:`dcplan.perf.benchmarks`), for predicting measurement rows; None
        when not asked for (plans do not use them).
    power_curves : tuple of PowerCurve
        ``power_curves.yaml`` beside the defaults file (empty when there is none).
    """

    defaults: PerfDefaults
    calibration: Calibration | None
    files: tuple[str, ...] = ()
    benchmarks: Benchmarks | None = None
    power_curves: tuple[PowerCurve, ...] = ()

    def power_curve(self, accelerator: str) -> PowerCurve:
        """The power curve of ``accelerator`` (:func:`power_curve_of`).

        Parameters
        ----------
        accelerator : str
            Accelerator id.

        Returns
        -------
        PowerCurve
            Its curve (InputError when there is none).
        """
        return power_curve_of(self.power_curves, accelerator)


def load_perf_inputs(catalog: Any = None, calibration: Any = None,
                     known_accelerators: Any = None, benchmarks: bool = False) -> PerfInputs:
    """Read the performance defaults and the calibration: the one loader of both.

    Parameters
    ----------
    catalog : Catalog, path or None
        Where the defaults file is (:func:`perf_folder`).
    calibration : Calibration, path or "none", optional
        A calibration as it is, a file to read, ``"none"`` (the a-priori defaults);
        None: ``perf_calibration.yaml`` next to the defaults file when there is one.
    known_accelerators : iterable of str, optional
        Accelerator ids of the catalog: a calibration file's unknown ids are reported.
    benchmarks : bool
        Also read what the measurement files' benchmarks ran
        (:func:`dcplan.perf.benchmarks.load_benchmarks` on the ``measurements/`` folder
        beside the defaults file), as ``dcplan perf validate`` and ``calibrate`` need.

    Returns
    -------
    PerfInputs

    Raises
    ------
    InputError
        With every problem of the defaults file, of the calibration file and (with
        ``benchmarks``) of the recipes file.
    ValueError
        With ``benchmarks``: a length distribution that cannot be read.
    """
    folder = perf_folder(catalog)
    problems: list[Problem] = []
    files: list[str] = []
    defaults = cal = None
    try:
        defaults = load_perf_defaults(folder / DEFAULTS_FILE)
        files.append(str((folder / DEFAULTS_FILE).resolve()))
    except InputError as exc:
        problems += exc.problems
    if isinstance(calibration, Calibration):
        cal = calibration
    elif calibration is not None and str(calibration) == NO_CALIBRATION:
        cal = None
    else:
        path = Path(calibration) if calibration is not None else folder / CALIBRATION_FILE
        if calibration is not None or path.exists():
            try:
                cal = load_calibration(path, known_accelerators=(
                    known_accelerators if calibration is not None else None))
                files.append(str(path.resolve()))
            except InputError as exc:
                problems += exc.problems
    bench = None
    if benchmarks:
        try:
            bench = load_benchmarks(folder / MEASUREMENTS_FOLDER)
        except InputError as exc:
            problems += exc.problems
    curves: tuple[PowerCurve, ...] = ()
    if (folder / POWER_CURVES_FILE).exists():
        try:
            curves = load_power_curves(folder / POWER_CURVES_FILE)
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems)
    return PerfInputs(defaults, cal, tuple(files), bench, curves)


_TOP_KEYS = ("source", "as_of", "notes", "estimates", "default", "hardware", "physics",
             "serving", "software")


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
    shown = display_path(path)
    raw = read_yaml(path)
    problems: list[Problem] = []
    if not isinstance(raw, dict):
        raise InputError(Problem(shown, "must be a mapping with keys default, hardware, "
                                        "physics, serving"))
    raw = strip_lines(raw)
    for key in ("source", "as_of"):
        if not raw.get(key):
            problems.append(Problem(shown, "required field is missing; add it", field=key))
    for key in sorted(set(raw) - set(_TOP_KEYS)):
        problems.append(Problem(shown, "unknown top-level key" + suggest(key, _TOP_KEYS),
                                field=key))
    default = _check_params(raw.get("default"), shown, "default", problems, PARAM_BOUNDS,
                            require_all=True)
    hw_raw = raw.get("hardware") or {}
    hardware = {}
    if not isinstance(hw_raw, dict):
        problems.append(Problem(shown, "must map accelerator id -> parameters", field="hardware"))
    else:
        for hid, params in hw_raw.items():
            hardware[str(hid)] = _check_params(params, shown, f"hardware.{hid}", problems,
                                               PARAM_BOUNDS)
    physics = _check_params(raw.get("physics"), shown, "physics", problems, PHYSICS_BOUNDS,
                            require_all=True)
    serving = _parse_serving(raw.get("serving"), shown, problems)
    software = _parse_software_spec(raw.get("software"), shown, problems)
    _check_estimates(raw.get("estimates"), shown, problems, default, physics)
    if problems:
        raise InputError(problems)
    return PerfDefaults(
        default=HardwareParams(**default),
        hardware=tuple((h, tuple(sorted(p.items()))) for h, p in sorted(hardware.items())),
        physics=PhysicsParams(**physics),
        serving=serving,
        source=shown,
        software=software,
    )


def _check_estimates(raw: Any, file: str, problems: list[Problem], default: dict,
                     physics: dict) -> None:
    """``estimates`` must say, for every default and physics value, how it was set."""
    if not isinstance(raw, dict):
        problems.append(Problem(file, "missing or not a mapping; say how each default and "
                                      "physics value was estimated", field="estimates"))
        return
    known = {f"default.{k}" for k in PARAM_BOUNDS} | {f"physics.{k}" for k in PHYSICS_BOUNDS}
    for key in raw:
        if key not in known:
            problems.append(Problem(file, "names no default or physics parameter"
                                    + suggest(str(key), known), entry="estimates", field=key))
    for key in sorted(known):
        if key not in raw and key.split(".", 1)[1] in {**default, **physics}:
            problems.append(Problem(file, "say how this value was estimated (or measured)",
                                    entry="estimates", field=key))


def _parse_software_spec(raw: Any, file: str, problems: list[Problem]) -> SoftwareSpec:
    """The optional ``software:`` section of perf_defaults.yaml."""
    if raw is None:
        return SoftwareSpec()
    if not isinstance(raw, dict):
        problems.append(Problem(file, "must be a mapping with base_engine, knobs, "
                                      "reference_date, kv_handover_per_dp_rank",
                                field="software"))
        return SoftwareSpec()
    fields = ["base_engine", "knobs", "reference_date", "kv_handover_per_dp_rank"]
    for key in sorted(set(raw) - set(fields)):
        problems.append(Problem(file, "unknown field" + suggest(key, fields),
                                entry="software", field=key))
    base = raw.get("base_engine") or {}
    if not isinstance(base, dict) or not all(isinstance(v, str) for v in base.values()):
        problems.append(Problem(file, "must map framework -> engine name", entry="software",
                                field="base_engine"))
        base = {}
    knobs = raw.get("knobs") or {}
    parsed_knobs = []
    if not isinstance(knobs, dict):
        problems.append(Problem(file, "must map knob -> list of parameters", entry="software",
                                field="knobs"))
        knobs = {}
    seen: set[str] = set()
    for knob, names in knobs.items():
        if not isinstance(names, list) or not names:
            problems.append(Problem(file, "must be a list of hardware parameters",
                                    entry="software.knobs", field=str(knob)))
            continue
        for n in names:
            if n not in PARAM_BOUNDS:
                problems.append(Problem(file, f"'{n}' is not a hardware parameter"
                                        + suggest(str(n), PARAM_BOUNDS),
                                        entry="software.knobs", field=str(knob)))
            elif n in seen:
                problems.append(Problem(file, f"'{n}' is in two knobs; give it one",
                                        entry="software.knobs", field=str(knob)))
            seen.add(str(n))
        parsed_knobs.append((str(knob), tuple(str(n) for n in names)))
    ref = str(raw.get("reference_date", "") or "")
    if year_fraction(ref) is None:
        problems.append(Problem(file, f"must be a date YYYY-MM-DD (got {ref!r})",
                                entry="software", field="reference_date"))
    per_rank = raw.get("kv_handover_per_dp_rank") or []
    engines = set(base.values())
    if not isinstance(per_rank, list) or not all(isinstance(e, str) for e in per_rank):
        problems.append(Problem(file, "must be a list of engine names (values of "
                                      "base_engine), e.g. [trt]", entry="software",
                                field="kv_handover_per_dp_rank"))
        per_rank = []
    for e in per_rank:
        if e not in engines:
            problems.append(Problem(file, f"'{e}' is not an engine of base_engine; give "
                                    f"one of {', '.join(sorted(engines)) or '(none)'}",
                                    entry="software", field="kv_handover_per_dp_rank"))
    return SoftwareSpec(tuple(sorted((str(k), str(v)) for k, v in base.items())),
                        tuple(parsed_knobs), ref,
                        tuple(sorted(e for e in per_rank if e in engines)))


#: Serving settings of 2026-12-05 that became the calibration's :class:`FitBasis`.
_MOVED_TO_BASIS = ("measured_domain_ep_max", "measured_handover_domain_max",
                   "measured_handover_prompt_tokens_max", "measured_handover_models")


def _parse_serving(raw: Any, file: str, problems: list[Problem]) -> ServingParams | None:
    if not isinstance(raw, dict):
        problems.append(Problem(file, "missing or not a mapping; add the serving section",
                                field="serving"))
        return None
    values: dict[str, Any] = {}
    n_before = len(problems)

    def bad(key: str, msg: str) -> None:
        problems.append(Problem(file, msg, entry="serving", field=key))

    for key in sorted(set(raw) - set(_SERVING_SPEC)):
        if key in _MOVED_TO_BASIS:
            bad(key, "no longer a setting: what the fitted rows cover is the calibration "
                     "file's 'basis:' section, which 'dcplan perf calibrate' writes "
                     "(docs/perf.md, Calibration); delete this line")
        else:
            bad(key, "unknown field" + suggest(key, list(_SERVING_SPEC)))
    for key, (kind, lo, hi) in _SERVING_SPEC.items():
        value = raw.get(key)
        if value is None:
            bad(key, "required field is missing; add it")
        elif kind in ("num", "int"):
            if (isinstance(value, bool) or not isinstance(value, int | float)
                    or not lo <= value <= hi or (kind == "int" and value != int(value))):
                bad(key, f"must be a {'whole ' if kind == 'int' else ''}number between {lo} "
                         f"and {hi} (got {value!r})")
            else:
                values[key] = int(value) if kind == "int" else float(value)
        elif kind == "bool":
            if not isinstance(value, bool):
                bad(key, f"must be true or false (got {value!r})")
            else:
                values[key] = value
        elif kind == "ints":
            if (not isinstance(value, list) or not value or any(
                    isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi
                    for v in value)):
                bad(key, f"must be a list of whole numbers between {lo:g} and {hi:g}")
            else:
                values[key] = tuple(sorted(set(int(v) for v in value)))
        else:  # per-precision mapping
            if not isinstance(value, dict) or any(p not in value for p in PRECISIONS):
                bad(key, "must give a value for bf16, fp8 and fp4")
                continue
            pairs = []
            for prec in PRECISIONS:
                v = value[prec]
                if kind == "bytes":
                    if isinstance(v, bool) or not isinstance(v, int | float) or not lo <= v <= hi:
                        bad(f"{key}.{prec}", f"must be a number between {lo} and {hi} "
                                             f"(got {v!r})")
                        continue
                    pairs.append((prec, float(v)))
                else:
                    if v not in PRECISIONS:
                        bad(f"{key}.{prec}", f"must be one of {', '.join(PRECISIONS)} "
                                             f"(got {v!r})")
                        continue
                    pairs.append((prec, str(v)))
            values[key] = tuple(pairs)
    if len(problems) > n_before:
        return None
    return ServingParams(**values)


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
    allowed = {"kind", "source", "created", "fit", "default", "hardware", "vendor", "physics",
               "notes", "architecture", "software", "basis"}
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
            hardware[hid] = _check_params(params, shown, f"hardware.{hid}", problems,
                                          PARAM_BOUNDS)
    default = _check_params(raw.get("default"), shown, "default", problems, PARAM_BOUNDS)
    physics = _check_params(raw.get("physics"), shown, "physics", problems, PHYSICS_BOUNDS)
    vendors: dict[str, dict[str, float]] = {}
    v_raw = raw.get("vendor") or {}
    if not isinstance(v_raw, dict):
        problems.append(Problem(shown, "must map vendor -> parameters", field="vendor"))
    else:
        for ven, params in v_raw.items():
            if isinstance(params, dict):
                params = {k: v for k, v in params.items() if k != "rows"}
            vendors[str(ven)] = _check_params(params, shown, f"vendor.{ven}", problems,
                                              PARAM_BOUNDS)
    archs: dict[str, dict[str, float]] = {}
    a_raw = raw.get("architecture") or {}
    if not isinstance(a_raw, dict):
        problems.append(Problem(shown, "must map architecture -> parameters",
                                field="architecture"))
    else:
        for arch, params in a_raw.items():
            if isinstance(params, dict):
                params = {k: v for k, v in params.items() if k != "rows"}
            archs[str(arch)] = _check_params(params, shown, f"architecture.{arch}", problems,
                                             PARAM_BOUNDS)
    software = _parse_software(raw.get("software"), shown, problems)
    basis = _parse_basis(raw.get("basis"), shown, problems)
    if problems:
        raise InputError(problems)
    meta = raw.get("fit") if isinstance(raw.get("fit"), dict) else {}
    return Calibration.from_dicts(hardware, default, str(raw.get("source", "")), meta, physics,
                                  vendors, archs, software, basis)


def _parse_basis(raw: Any, file: str, problems: list[Problem]) -> FitBasis | None:
    """The ``basis:`` section of a calibration file (None when absent)."""
    if raw is None:
        return None
    keys = tuple(FitBasis(prefill_domain_ep_max=0, wide_decode_seqs_per_gpu_min=0.0,
                          architecture_kinds=()).as_dict())
    # optional: a basis written before decode and prefill groups were told apart, before
    # the wide decode rows' batches were recorded, or before the kinds of model per
    # architecture were
    optional = ("prefill_domain_ep_max", "wide_decode_seqs_per_gpu_min",
                "architecture_kinds")
    if not isinstance(raw, dict):
        problems.append(Problem(file, "must be a mapping with " + ", ".join(keys),
                                field="basis"))
        return None
    n_before = len(problems)
    for key in sorted(set(raw) - set(keys)):
        problems.append(Problem(file, "unknown field" + suggest(str(key), keys), entry="basis",
                                field=str(key)))
    values: dict[str, Any] = {}
    for key in keys:
        v = raw.get(key)
        if key in optional and key not in raw:
            continue
        if key not in raw:
            problems.append(Problem(file, "required field is missing; 'dcplan perf "
                                          "calibrate' writes it", entry="basis", field=key))
            continue
        if key == "architecture_kinds":
            ok = isinstance(v, dict) and all(
                isinstance(a, str) and a.strip() and isinstance(k, list) and k
                and all(x in MODEL_KINDS for x in k) for a, k in v.items())
            if not ok:
                problems.append(Problem(file, "must map each architecture to the kinds of "
                                              f"model its rows run, a non-empty list of "
                                              f"{' and '.join(MODEL_KINDS)} (got {v!r}); "
                                              "'dcplan perf calibrate' writes it",
                                        entry="basis", field=key))
            else:
                values[key] = tuple(sorted((a.strip(), tuple(sorted(set(k))))
                                           for a, k in v.items()))
            continue
        if key == "handover_models":
            if (not isinstance(v, list)
                    or any(not isinstance(m, str) or not m.strip() for m in v)):
                problems.append(Problem(file, f"must be a list of model ids, empty if no "
                                              f"row was disaggregated (got {v!r})",
                                        entry="basis", field=key))
            else:
                values[key] = tuple(sorted(m.strip() for m in v))
            continue
        whole = key not in ("handover_prompt_tokens_max", "wide_decode_seqs_per_gpu_min")
        if (isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v)
                or not 0 <= v <= 1e9 or (whole and v != int(v))):
            problems.append(Problem(file, f"must be a {'whole ' if whole else ''}number "
                                          f"from 0 (no such row) to 1e9 (got {v!r}); "
                                          "'dcplan perf calibrate' writes it",
                                    entry="basis", field=key))
        else:
            values[key] = int(v) if whole else float(v)
    return FitBasis(**values) if len(problems) == n_before else None


def _parse_software(raw: Any, file: str, problems: list[Problem]) -> SoftwareFit | None:
    """The ``software:`` section of a calibration file (None when absent)."""
    if raw is None:
        return None
    keys = ("knobs", "engine_log_offset", "base_engine", "trend_log_per_year",
            "reference_date", "earliest_date", "planning_engine", "cross_domain_log_offset")
    if not isinstance(raw, dict):
        problems.append(Problem(file, "must be a mapping with " + ", ".join(keys),
                                field="software"))
        return None
    for key in sorted(set(raw) - set(keys)):
        problems.append(Problem(file, "unknown field" + suggest(key, keys), entry="software",
                                field=key))

    def number(v, where, key) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) \
                or abs(v) > 20:
            problems.append(Problem(file, f"must be a number between -20 and 20 (got {v!r})",
                                    entry=where, field=key))
            return 0.0
        return float(v)

    knobs = []
    for knob, names in (raw.get("knobs") or {}).items():
        bad = [n for n in (names or []) if n not in PARAM_BOUNDS]
        if not isinstance(names, list) or bad:
            problems.append(Problem(file, f"must list hardware parameters (unknown: "
                                          f"{', '.join(map(str, bad))})",
                                    entry="software.knobs", field=str(knob)))
            continue
        knobs.append((str(knob), tuple(names)))
    knob_names = {k for k, _ in knobs}
    engines = []
    for eng, offs in (raw.get("engine_log_offset") or {}).items():
        if not isinstance(offs, dict):
            problems.append(Problem(file, "must map knob -> log offset",
                                    entry="software.engine_log_offset", field=str(eng)))
            continue
        for k in offs:
            if k not in knob_names:
                problems.append(Problem(file, f"unknown knob '{k}'" + suggest(str(k), knob_names),
                                        entry=f"software.engine_log_offset.{eng}", field=str(k)))
        engines.append((str(eng), tuple(sorted(
            (str(k), number(v, f"software.engine_log_offset.{eng}", k))
            for k, v in offs.items()))))
    trend = tuple(sorted((str(k), number(v, "software.trend_log_per_year", k))
                         for k, v in (raw.get("trend_log_per_year") or {}).items()))
    ref = str(raw.get("reference_date", "") or "")
    if year_fraction(ref) is None:
        problems.append(Problem(file, f"must be a date YYYY-MM-DD (got {ref!r})",
                                entry="software", field="reference_date"))
    earliest = str(raw.get("earliest_date", "") or "")
    if earliest and year_fraction(earliest) is None:
        problems.append(Problem(file, f"must be a date YYYY-MM-DD (got {earliest!r})",
                                entry="software", field="earliest_date"))
    base = raw.get("base_engine") or {}
    plan = raw.get("planning_engine") or {}
    cross = raw.get("cross_domain_log_offset") or {}
    for k in cross:
        if k not in PARAM_BOUNDS:
            problems.append(Problem(file, f"'{k}' is not a hardware parameter"
                                    + suggest(str(k), PARAM_BOUNDS),
                                    entry="software.cross_domain_log_offset", field=str(k)))
    cross_t = tuple(sorted((str(k), number(v, "software.cross_domain_log_offset", k))
                           for k, v in cross.items() if k in PARAM_BOUNDS))
    return SoftwareFit(tuple(knobs), tuple(sorted(engines)),
                    tuple(sorted((str(k), str(v)) for k, v in base.items())), trend, ref,
                    tuple(sorted((str(k), str(v)) for k, v in plan.items())), cross_t,
                    earliest)


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
        "notes": "Fitted by dcplan perf calibrate (robust least squares on log throughput, "
                 "TPOT, TTFT and power, one joint fit of nested levels with a pull of each "
                 "level towards the one above and of the pooled level towards "
                 "perf_defaults.yaml). 'physics' applies to every accelerator. An "
                 "accelerator takes its own entry, else its architecture's, else its "
                 "vendor's, else 'default'. These values are the planner's: the vendor's "
                 "planning engine at the software reference date; 'software' moves them to "
                 "a measured run's engine and date (docs/perf.md, Calibration). 'basis' "
                 "says what the fitted rows cover; a figure outside it says that it "
                 "extrapolates the fit.",
        "fit": dict(fit or {}),
        **({"basis": cal.basis.as_dict()} if cal.basis is not None else {}),
        "physics": {k: _round(v) for k, v in cal.physics},
        "default": {k: _round(v) for k, v in cal.default},
        "vendor": {v: {k: _round(x) for k, x in p} for v, p in cal.vendor},
        "architecture": {a: {k: _round(x) for k, x in p} for a, p in cal.architecture},
        "hardware": hardware,
    }
    sw = cal.software
    if sw is not None:
        doc["software"] = {
            "reference_date": sw.reference_date,
            **({"earliest_date": sw.earliest_date} if sw.earliest_date else {}),
            "planning_engine": dict(sw.planning_engine),
            "knobs": {k: list(v) for k, v in sw.knobs},
            "engine_log_offset": {e: {k: _round(x) for k, x in o} for e, o in sw.engines},
            "base_engine": dict(sw.base_engine),
            "trend_log_per_year": {k: _round(x) for k, x in sw.trend_per_year},
            "cross_domain_log_offset": {k: _round(x) for k, x in sw.cross_domain},
        }
    write_text_atomic(path, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))


def _round(value: float) -> float:
    return float(f"{value:.6g}")


# ------------------------------------------------------------------ power curves


@dataclass(frozen=True)
class PowerCurve:
    """Sustained clocks of one accelerator under a board power cap (``power_curves.yaml``).

    Attributes
    ----------
    accelerator : str
        Accelerator id.
    cap_frac : tuple of float
        Power caps, falling from 1.0, as fractions of ``max_power_w`` [-].
    clock_frac : tuple of float
        Core (SM/CU) clock a compute-saturated load sustains at each cap, as a fraction
        of its uncapped clock [-]; never rises as the cap falls.
    mem_clock_frac : tuple of float
        HBM clock at each cap, as a fraction of the uncapped one [-].
    source, as_of : str
        Where the curve comes from and its date (YYYY-MM).
    estimate : str
        How an estimated curve was made ('' for a measured one).
    """

    accelerator: str
    cap_frac: tuple[float, ...]
    clock_frac: tuple[float, ...]
    mem_clock_frac: tuple[float, ...]
    source: str
    as_of: str
    estimate: str = ""

    @property
    def min_cap_frac(self) -> float:
        """Lowest cap the curve covers [-]."""
        return self.cap_frac[-1]


def power_curve_of(curves: tuple[PowerCurve, ...], accelerator: str) -> PowerCurve:
    """The curve of ``accelerator`` among ``curves``.

    Parameters
    ----------
    curves : tuple of PowerCurve
        Loaded curves (:func:`load_power_curves`).
    accelerator : str
        Accelerator id.

    Returns
    -------
    PowerCurve

    Raises
    ------
    InputError
        When ``curves`` has none for ``accelerator``.
    """
    for c in curves:
        if c.accelerator == accelerator:
            return c
    raise InputError(Problem(POWER_CURVES_FILE, f"no power curve for accelerator "
                             f"'{accelerator}'; add an entry to model a power cap on it",
                             entry=accelerator, field="accelerator"))


_CURVE_KEYS = ("accelerator", "source", "as_of", "estimate", "estimate_model", "points",
               "notes")


def _curve_points(raw: Any, shown: str, entry: str,
                  problems: list[Problem]) -> list[tuple[float, float, float]]:
    """Check the ``points`` of one curve entry; the rows that are valid.

    Parameters
    ----------
    raw : Any
        The entry's ``points`` value.
    shown : str
        File name for messages.
    entry : str
        Entry id for messages.
    problems : list of Problem
        Collects what is wrong.

    Returns
    -------
    list of tuple of float
        Rows ``(cap_frac, clock_frac, mem_clock_frac)`` [-].
    """
    if not isinstance(raw, list) or not raw:
        problems.append(Problem(shown, "must be a list of [cap_frac, clock_frac, "
                                "mem_clock_frac] rows, caps falling from 1.0",
                                entry=entry, field="points"))
        return []
    rows = []
    for i, row in enumerate(raw):
        where = f"points[{i}]"
        ok = (isinstance(row, list) and len(row) in (2, 3)
              and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                      and math.isfinite(v) for v in row))
        if not ok:
            problems.append(Problem(shown, f"must be [cap_frac, clock_frac, mem_clock_frac] "
                                    f"numbers, got {row!r}", entry=entry, field=where))
            return []
        cap, clk = float(row[0]), float(row[1])
        mem = float(row[2]) if len(row) == 3 else 1.0
        for name, v in (("cap_frac", cap), ("clock_frac", clk), ("mem_clock_frac", mem)):
            if not 0.0 < v <= 1.0:
                problems.append(Problem(shown, f"{name} must be in (0, 1], got {v:g}",
                                        entry=entry, field=where))
                return []
        rows.append((cap, clk, mem))
    if rows[0][0] != 1.0 or rows[0][1] != 1.0 or rows[0][2] != 1.0:
        problems.append(Problem(shown, "the first row must be [1.0, 1.0, 1.0] (uncapped: "
                                "full clocks)", entry=entry, field="points[0]"))
        return []
    for i in range(1, len(rows)):
        (c0, f0, m0), (c1, f1, m1) = rows[i - 1], rows[i]
        where = f"points[{i}]"
        if c1 >= c0:
            problems.append(Problem(shown, f"caps must fall down the rows: {c1:g} after "
                                    f"{c0:g}", entry=entry, field=where))
            return []
        if f1 > f0 or m1 > m0:
            problems.append(Problem(shown, f"not monotone: the clock rises from "
                                    f"{max(f0, m0) if f1 > f0 else m0:g} to "
                                    f"{f1 if f1 > f0 else m1:g} as the cap falls from "
                                    f"{c0:g} to {c1:g}; a lower cap cannot raise a clock",
                                    entry=entry, field=where))
            return []
    return rows


def load_power_curves(path: Path | str) -> tuple[PowerCurve, ...]:
    """Read and check a power-curves file (``catalogs/power_curves.yaml``).

    Parameters
    ----------
    path : Path or str
        The file: a list of entries with ``accelerator``, ``source``, ``as_of``,
        ``points`` (rows ``[cap_frac, clock_frac, mem_clock_frac]``, caps falling from
        1.0, clocks never rising) and, for an estimate, ``estimate`` (how it was made)
        and optionally ``estimate_model``.

    Returns
    -------
    tuple of PowerCurve
        One per entry, in file order.

    Raises
    ------
    InputError
        With every problem found, naming file, entry and field.
    """
    import re

    from dcplan.schema import DATE_PATTERN

    shown = display_path(path)
    raw = read_yaml(path)
    if not isinstance(raw, list):
        raise InputError(Problem(shown, "must be a list of power-curve entries "
                                        "(accelerator, source, as_of, points)"))
    raw = strip_lines(raw)
    problems: list[Problem] = []
    out: list[PowerCurve] = []
    seen: set[str] = set()
    for i, e in enumerate(raw):
        if not isinstance(e, dict):
            problems.append(Problem(shown, "must be a mapping", entry=f"#{i + 1}"))
            continue
        entry = str(e.get("accelerator") or f"#{i + 1}")
        bad = len(problems)
        if not e.get("accelerator"):
            problems.append(Problem(shown, "required field is missing; add it", entry=entry,
                                    field="accelerator"))
        elif entry in seen:
            problems.append(Problem(shown, "a second curve for this accelerator; keep one",
                                    entry=entry, field="accelerator"))
        seen.add(entry)
        for key in sorted(set(e) - set(_CURVE_KEYS)):
            problems.append(Problem(shown, "unknown field" + suggest(key, _CURVE_KEYS),
                                    entry=entry, field=key))
        for key in ("source", "as_of"):
            if not str(e.get(key) or "").strip():
                problems.append(Problem(shown, "required field is missing; add it",
                                        entry=entry, field=key))
        as_of = str(e.get("as_of") or "")
        if as_of and not re.match(DATE_PATTERN, as_of):
            problems.append(Problem(shown, f"must be a date YYYY-MM, got '{as_of}'",
                                    entry=entry, field="as_of"))
        if "estimate_model" in e and not str(e.get("estimate") or "").strip():
            problems.append(Problem(shown, "an estimated curve must say how it was made",
                                    entry=entry, field="estimate"))
        rows = _curve_points(e.get("points"), shown, entry, problems)
        if len(problems) == bad and rows:
            out.append(PowerCurve(entry, tuple(r[0] for r in rows), tuple(r[1] for r in rows),
                                  tuple(r[2] for r in rows), str(e["source"]), as_of,
                                  str(e.get("estimate") or "")))
    if problems:
        raise InputError(problems)
    return tuple(out)
