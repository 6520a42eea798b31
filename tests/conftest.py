"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def fixtures() -> Path:
    """Folder of test fixture files."""
    return FIXTURES


@pytest.fixture
def min_catalog_dir() -> Path:
    """A minimal valid catalog folder (one entry per kind)."""
    return FIXTURES / "catalog_min"


@pytest.fixture(scope="session")
def minimal_plan():
    """The shipped minimal example, loaded and planned once per test session.

    Tests must not change it (make a new case with ``result.case.with_changes``).
    """
    from dcplan.planner import plan

    result = plan(REPO / "examples" / "minimal.yaml")
    assert result.ok, result.message
    return result


@pytest.fixture(scope="session")
def baseline_inputs():
    """The MILP inputs of examples/baseline.yaml, prepared once per test session."""
    from dcplan.case import load_case
    from dcplan.planner import prepare_inputs

    return prepare_inputs(load_case(REPO / "examples" / "baseline.yaml"))
