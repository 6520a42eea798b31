"""The files beside the measurement CSVs that say what their benchmarks ran.

``catalogs/measurements/`` (beside ``perf_defaults.yaml``) holds, next to the rows:

- :data:`LENGTHS_FILE`: the request-length distributions of the benchmarks
  (:class:`BenchmarkLengths`, :func:`load_benchmark_lengths`);
- :data:`~dcplan.perf.recipes.RECIPES_FILE`: the engine recipes' admission settings
  (:mod:`dcplan.perf.recipes`);
- :data:`POWER_SYSTEMS_FILE`: the wall power of the MLPerf Power runs behind
  ``mlperf_power.csv`` and how it is split (:func:`load_power_systems`; the split
  itself is :func:`dcplan.perf.power.gpu_share_w`).

This is the data layer: it reads and checks the files. The physics that predicts
measurement rows (:mod:`dcplan.perf.predict`) takes what they say as arguments
(:class:`Benchmarks`, loaded once by :func:`load_benchmarks`, which
:func:`dcplan.perf.params.load_perf_inputs` calls for ``dcplan perf validate`` and
``dcplan perf calibrate``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from dcplan.catalog import did_you_mean
from dcplan.errors import InputError, Problem, display_path
from dcplan.lengths import FIXED, LengthDist, length_dist
from dcplan.perf.recipes import RECIPES_FILE, Recipes, load_recipes
from dcplan.yamlio import KEY_LINES, META_KEYS, read_yaml

#: Folder beside ``perf_defaults.yaml`` that holds the measurement files.
MEASUREMENTS_FOLDER = "measurements"

#: File beside the measurement files that gives their benchmarks' length distributions.
LENGTHS_FILE = "length_distributions.yaml"


@dataclass(frozen=True)
class BenchmarkLengths:
    """Length distributions of the benchmarks behind the measurement files.

    Attributes
    ----------
    serving_rows : LengthDist
        Closed-loop serving rows (InferenceX client: uniform 0.8-1.0 of nominal).
    prompts_per_client : int
        Requests each closed-loop client sends (0: no opening burst modelled) [-].
    phase_rows : dict
        Model id -> distribution of its MLPerf dataset (phase-level end-to-end rows).
    """

    serving_rows: LengthDist = FIXED
    prompts_per_client: int = 0
    phase_rows: tuple = ()

    def for_phase_model(self, model: str) -> LengthDist:
        """Distribution of ``model``'s dataset (fixed when not listed).

        Parameters
        ----------
        model : str
            Model id of the catalog.

        Returns
        -------
        LengthDist
            Distribution of its dataset's request lengths (input and output tokens)
            around their mean.
        """
        return dict(self.phase_rows).get(model, FIXED)

    @property
    def burst_share(self) -> float:
        """Share of a closed-loop run's requests sent in its opening burst [0..1]."""
        return 1.0 / self.prompts_per_client if self.prompts_per_client else 0.0


def load_benchmark_lengths(path) -> BenchmarkLengths:
    """Read :data:`LENGTHS_FILE` (all fixed when ``path`` does not exist).

    Parameters
    ----------
    path : Path or str
        The ``length_distributions.yaml`` file of the measurements folder.

    Returns
    -------
    BenchmarkLengths
        The serving rows' and each MLPerf model's request-length distributions.
    """
    p = Path(path)
    if not p.exists():
        return BenchmarkLengths()
    doc = read_yaml(p) or {}
    sr = doc.get("serving_rows") or {}
    ppc = int(sr.get("prompts_per_client") or 0)
    if ppc < 0:
        raise ValueError(f"{p}: serving_rows.prompts_per_client must be >= 0")
    phase = tuple(sorted((str(k), length_dist(v))
                         for k, v in (doc.get("phase_rows") or {}).items()
                         if not str(k).startswith("__")))
    return BenchmarkLengths(length_dist(sr.get("length_distribution")), ppc, phase)


@dataclass(frozen=True)
class Benchmarks:
    """What the benchmarks behind the measurement files ran, beside their rows.

    Attributes
    ----------
    lengths : BenchmarkLengths
        Request-length distributions (:data:`LENGTHS_FILE`; all fixed when absent).
    recipes : Recipes
        Admission settings of the engine recipes (:data:`~dcplan.perf.recipes.RECIPES_FILE`;
        no limits when absent).
    """

    lengths: BenchmarkLengths = field(default_factory=BenchmarkLengths)
    recipes: Recipes = field(default_factory=Recipes)


def load_benchmarks(folder: Path | str) -> Benchmarks:
    """Read :data:`LENGTHS_FILE` and the recipes file of a measurements folder.

    Parameters
    ----------
    folder : path
        The folder of the measurement files (:data:`MEASUREMENTS_FOLDER` beside
        ``perf_defaults.yaml``); a file it lacks reads as fixed lengths / no limits.

    Returns
    -------
    Benchmarks

    Raises
    ------
    InputError
        Every problem of the recipes file (its accelerator ids are not checked here: an
        id the catalog lacks never matches a row; ``dcplan validate`` checks them).
    ValueError
        A length distribution that cannot be read.
    """
    folder = Path(folder)
    return Benchmarks(load_benchmark_lengths(folder / LENGTHS_FILE),
                      load_recipes(folder / RECIPES_FILE))


#: File beside the measurement CSVs that records the wall power of MLPerf Power runs and
#: how it is split into the GPU share (``mlperf_power.csv``'s ``power_w``).
POWER_SYSTEMS_FILE = "mlperf_power_systems.yaml"

#: Numeric fields of a system: (name, required, low, high, low open, integer).
_SYSTEM_FIELDS = (("gpus", True, 1, None, False, True),
                  ("gpu_idle_w", True, 0.0, None, True, False),
                  ("psu_efficiency_frac", True, 0.0, 1.0, True, False),
                  ("power_cap_w_per_gpu", False, 0.0, None, True, False))
#: Numeric fields of a run: (name, required, integer).
_RUN_FIELDS = (("wall_w", True, False), ("wall_preload_w", True, False),
               ("wall_p99_w", False, False), ("samples", False, True))
_SYSTEM_TEXT = ("description", "source", "as_of", "how")


def load_power_systems(path) -> dict[str, dict]:
    """Read :data:`POWER_SYSTEMS_FILE`: measured systems, their runs and the split.

    Every problem is named at once (entry = system, field = ``runs.<run>.<field>``, with
    the line): a missing or non-positive number, a PSU efficiency outside (0, 1], a run
    whose wall power under load is not above its pre-load wall power (no GPU share), a
    99th percentile below the mean, an unknown field, a missing ``source``.

    Parameters
    ----------
    path : Path or str
        The MLPerf power systems file of the measurements folder.

    Returns
    -------
    dict
        System name -> its fields (numbers as float / int) with ``runs``: run name ->
        ``wall_w``, ``wall_preload_w`` (and ``wall_p99_w``, ``samples`` where given).

    Raises
    ------
    InputError
    """
    p = Path(path)
    shown = display_path(p)
    doc = read_yaml(p)
    problems: list[Problem] = []
    if not isinstance(doc, dict) or not isinstance(doc.get("systems"), dict):
        raise InputError(Problem(shown, "expected a mapping with 'systems': system name -> "
                                        "gpus, gpu_idle_w, psu_efficiency_frac, runs"))

    def line(m, key):
        return (m.get(KEY_LINES) or {}).get(key) if isinstance(m, dict) else None

    def number(m, key, entry, field, required, lo, hi, lo_open, integer):
        v = m.get(key)
        if v is None:
            if required:
                problems.append(Problem(shown, "missing; give a number", entry, field,
                                        line(m, key)))
            return None
        ok = (isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
              and (not integer or float(v).is_integer()))
        if ok:
            ok = (lo is None or (v > lo if lo_open else v >= lo)) and (hi is None or v <= hi)
        if not ok:
            rng = (f"{'an integer' if integer else 'a number'}"
                   + (f" {'>' if lo_open else '>='} {lo:g}" if lo is not None else "")
                   + (f" and <= {hi:g}" if hi is not None else ""))
            problems.append(Problem(shown, f"{v!r} is not {rng}", entry, field, line(m, key)))
            return None
        return int(v) if integer else float(v)

    allowed = {f[0] for f in _SYSTEM_FIELDS} | set(_SYSTEM_TEXT) | {"runs", "estimates"}
    run_allowed = {f[0] for f in _RUN_FIELDS}
    out: dict[str, dict] = {}
    systems = doc["systems"]
    for name, sysd in systems.items():
        if name in META_KEYS:
            continue
        if not isinstance(sysd, dict):
            problems.append(Problem(shown, "expected a mapping of the system's fields",
                                    str(name), None, line(systems, name)))
            continue
        rec: dict = {k: sysd[k] for k in _SYSTEM_TEXT + ("estimates",) if k in sysd}
        for key in sysd:
            if key not in META_KEYS and key not in allowed:
                problems.append(Problem(shown, f"unknown field{did_you_mean(key, allowed)}: rename "
                                               "or remove it", str(name), str(key),
                                        line(sysd, key)))
        for key, req, lo, hi, lo_open, integer in _SYSTEM_FIELDS:
            rec[key] = number(sysd, key, str(name), key, req, lo, hi, lo_open, integer)
        if not sysd.get("source"):
            problems.append(Problem(shown, "missing: say where the measurement was published",
                                    str(name), "source", line(sysd, "source")))
        runs = sysd.get("runs")
        if not isinstance(runs, dict) or not any(k not in META_KEYS for k in runs):
            problems.append(Problem(shown, "expected a mapping of runs: run name -> wall_w, "
                                           "wall_preload_w", str(name), "runs",
                                    line(sysd, "runs")))
            runs = {}
        rec["runs"] = {}
        for run, r in runs.items():
            if run in META_KEYS:
                continue
            where = f"runs.{run}"
            if not isinstance(r, dict):
                problems.append(Problem(shown, "expected a mapping with wall_w and "
                                               "wall_preload_w", str(name), where,
                                        line(runs, run)))
                continue
            for key in r:
                if key not in META_KEYS and key not in run_allowed:
                    problems.append(Problem(shown, f"unknown field"
                                                   f"{did_you_mean(key, run_allowed)}: rename or "
                                                   "remove it", str(name), f"{where}.{key}",
                                            line(r, key)))
            vals = {key: number(r, key, str(name), f"{where}.{key}", req, 0.0, None, True,
                                integer)
                    for key, req, integer in _RUN_FIELDS}
            wall, pre, p99 = vals["wall_w"], vals["wall_preload_w"], vals["wall_p99_w"]
            if wall is not None and pre is not None and wall <= pre:
                problems.append(Problem(shown, f"wall_w {wall:g} W is not above wall_preload_w "
                                               f"{pre:g} W: the run leaves no GPU share",
                                        str(name), f"{where}.wall_w", line(r, "wall_w")))
            if wall is not None and p99 is not None and p99 < wall:
                problems.append(Problem(shown, f"wall_p99_w {p99:g} W is below the mean "
                                               f"wall_w {wall:g} W", str(name),
                                        f"{where}.wall_p99_w", line(r, "wall_p99_w")))
            rec["runs"][str(run)] = {k: v for k, v in vals.items() if v is not None}
        out[str(name)] = rec
    if problems:
        raise InputError(problems)
    return out
