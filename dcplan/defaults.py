"""Defaults, limits and choices shared by the schemas and the command line, as plain data.

Each is defined here once; the pydantic schemas (:mod:`dcplan.schema`,
:mod:`dcplan.scenario.schema`) and the command line both import them from here, so that
the command line can show them in its help (and ``dcplan --version``, ``--help`` and
shell completion can run) without loading the schemas. This module imports nothing.
"""

from __future__ import annotations

#: MILP solvers a plan can use (scenario ``solver.name``, ``--solver``).
SOLVERS: tuple[str, ...] = ("highs", "cbc")
#: Solver used when none is named.
DEFAULT_SOLVER = "highs"
#: Wall-clock limit of each solve when none is given [s].
DEFAULT_TIME_LIMIT_S = 120.0
#: Relative MIP gap at which a solve stops when none is given [-].
DEFAULT_GAP = 1e-4

#: Most solver threads a plan may ask for: each HiGHS thread reserves its own memory, and
#: a mistyped count (1e9) filled 20 GB before failing; no machine dcplan plans on has
#: more cores than this.
MAX_SOLVER_THREADS = 256
#: Longest solver time limit accepted (a week) [s]; "inf" or 1e400 is a typo, not a limit.
MAX_TIME_LIMIT_S = 7 * 24 * 3600.0

#: Largest running-request cap per attention-DP rank an engine setting may give
#: (``serving.max_batch_per_rank`` in perf_defaults.yaml and in a scenario, ``dcplan
#: perf --max-batch``) [sequences].
MAX_BATCH_PER_RANK_MAX = 1_000_000

#: Default scale-out leaf oversubscription (down:up bandwidth): non-blocking [-].
DEFAULT_OVERSUBSCRIPTION = 1.0

#: Percentile of the frontier's TTFT limit when none is given: the median [%].
FRONTIER_PERCENTILE = 50.0

#: Catalog kinds and the file of each in a catalog folder, in the order they are loaded
#: and listed (their entry classes: :data:`dcplan.schema.KINDS`).
KIND_FILES: dict[str, str] = {
    "accelerators": "accelerators.yaml",
    "racks": "racks.yaml",
    "models": "models.yaml",
    "cdus": "cdus.yaml",
    "heat_rejection": "heat_rejection.yaml",
    "switches": "switches.yaml",
    "optics": "optics.yaml",
    "nics": "nics.yaml",
    "workloads": "workloads.yaml",
    "tokenizers": "tokenizers.yaml",
    "api_prices": "api_prices.yaml",
    "staffing": "staffing.yaml",
    "salaries": "salaries.yaml",
    "software": "software.yaml",
    "ups": "ups.yaml",
    "generators": "generators.yaml",
    "profiles": "profiles.yaml",
    "storage": "storage.yaml",
    "onsite_generation": "onsite_generation.yaml",
}
