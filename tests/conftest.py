"""Shared test fixtures."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parent.parent
#: Where the suite keeps compiled bytecode when ``PYTHONDONTWRITEBYTECODE`` is set: a
#: folder of the system's temporary directory, never the source tree.
PYCACHE = Path(tempfile.gettempdir()) / f"dcplan-tests-pycache-{os.getuid()}"

if sys.dont_write_bytecode:
    # With PYTHONDONTWRITEBYTECODE set (as on this project's machines), every pytest
    # worker compiled the test modules again, with their assertions rewritten, and the
    # dcplan modules they import: `pytest --collect-only -n 0` took 23.5 s of CPU, and
    # 13.8 and 12.5 s in the two runs after the folder was filled (load 2.6-3.4 beside a
    # two-process bench, 2026-12-07). Kept in
    # PYCACHE instead (Python checks each cached file against its source, pytest its
    # rewritten modules too, so a stale one is never used).
    sys.pycache_prefix = str(PYCACHE)
    sys.dont_write_bytecode = False


#: Test files whose tests take longest together, longest first (seconds of test time in
#: the twenty-fifth session's full run, 2026-12-07: 324, 152, 142, 121, 121, 119, 97, 76,
#: then 31-49). pytest-xdist hands each worker one whole file at a time (``--dist
#: loadfile``) in collection order (``--no-loadscope-reorder``), so these go first and
#: the many short files fill the workers' ends: by xdist's own order (most tests first)
#: the fresh install (one test, two minutes here) and the Dask, stochastic and memo files
#: came last, and one worker ran alone for about a minute. A file missing from this list
#: only runs later; tests/test_lint.py checks that each one named exists.
LONGEST_FIRST = (
    "test_examples.py", "test_saved_plans.py", "test_sweep_dask.py", "test_stochastic.py",
    "test_fresh_install.py", "test_saved_hostile.py", "test_interrupt.py",
    "test_perf_calibration.py", "test_excel.py", "test_hostile_inputs.py",
    "test_sweep_memo.py", "test_perf_import.py", "test_input_files.py", "test_two_stage.py",
    "test_perf_model.py", "test_perf_cli.py", "test_bom_purchase.py",
    "test_sweep_calibration_file.py",
)


def pytest_collection_modifyitems(config, items):
    """Run the files of :data:`LONGEST_FIRST` first, in its order; the others after,
    in collection order (a stable sort keeps each file's tests together and in order)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.fixture(autouse=True, scope="session")
def _bytecode_for_subprocesses():
    """Let the commands the tests start (``python -m dcplan ...``) keep compiled
    bytecode in :data:`PYCACHE`, not in the source tree.

    With ``PYTHONDONTWRITEBYTECODE`` set (as on this project's machines) and a fresh
    clone, every one of them compiled dcplan's modules again: tests/test_saved_hostile.py
    took 183 s without compiled modules, 166 s with this folder empty (the first
    commands compile what they import into it, the installed packages' too) and 159 s
    with it filled (2 workers, load 3.6-3.9 beside a bench, 2026-12-07). Python checks
    each cached file against its source, so a stale one is never used."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPYCACHEPREFIX", str(PYCACHE))
        mp.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
        yield


@pytest.fixture(autouse=True, scope="session")
def _terminal_width():
    """Terminal text at the default width, whatever the terminal running the tests
    (session-wide, so module fixtures that run a command see it too)."""
    from dcplan.export.text import WIDTH

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", str(WIDTH))
        yield


@pytest.fixture
def fixtures() -> Path:
    """Folder of test fixture files."""
    return FIXTURES


@pytest.fixture
def min_catalog_dir() -> Path:
    """A minimal valid catalog folder (one entry per kind)."""
    return FIXTURES / "catalog_min"


#: The changes that make the minimal example quick to plan in tests that are not about
#: the fabric: the linear fabric, and chat at 45T tokens/month in 2026 (the linear
#: fabric's network power would leave the example's 68T partly unserved).
LINEAR = {"network_model": "linear", "demand.growth.chat.start": 45e12}

#: A formula-like name given to a site and to the scenario in the shared plan.
EVIL = '=HYPERLINK("http://x","y")'


@pytest.fixture(scope="session")
def minimal_plan():
    """The minimal example solved once for the export tests, with user text that must
    stay text: a site and the scenario named like a formula, a description with
    formula starts and HTML. It plans with the linear fabric (3 s instead of 14 s: the
    export tests are about the outputs, and test_examples.py and test_planner_fabric.py
    test the integer fabric) and chat at 45T tokens/month in 2026 (the linear fabric's
    network power would leave the example's 68T partly unserved). Returns ``(result,
    case)``; tests must not change them."""
    from dcplan.case import load_case
    from dcplan.planner import solve_case

    case = load_case(REPO / "examples" / "minimal.yaml").with_changes(
        {"name": EVIL, "description": "+1+2 @x -y <script>alert(1)</script> & co",
         **LINEAR},
        overrides=[{"kind": "sites", "id": "seoul_metro", "field": "name", "set": EVIL}])
    result = solve_case(case)
    assert result.ok and result.case is case
    return result, case


@pytest.fixture(scope="session")
def minimal_linear(tmp_path_factory) -> Path:
    """A scenario file: the minimal example with :data:`LINEAR` (a CLI test that is not
    about the fabric solves it in 3 s instead of 14 s)."""
    path = tmp_path_factory.mktemp("minimal_linear") / "minimal.yaml"
    path.write_text(f"extends: {REPO / 'examples' / 'minimal.yaml'}\nnetwork_model: linear\n"
                    "demand:\n  growth:\n    chat: {start: 45.0e12}\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def baseline_inputs():
    """The MILP inputs of examples/baseline.yaml, prepared once per test session."""
    from dcplan.case import load_case
    from dcplan.planner import prepare_inputs

    return prepare_inputs(load_case(REPO / "examples" / "baseline.yaml"))
