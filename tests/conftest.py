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


#: A formula-like name given to a site and to the scenario in the shared plan.
EVIL = '=HYPERLINK("http://x","y")'


@pytest.fixture(scope="session")
def minimal_plan():
    """The minimal example solved once for the export tests, with user text that must
    stay text: a site and the scenario named like a formula, a description with
    formula starts and HTML. Returns ``(result, sources)``."""
    from dcplan.export import load_sources
    from dcplan.planner import plan
    from dcplan.scenario import resolve_scenario

    src = load_sources(REPO / "examples" / "minimal.yaml")
    seoul = src.sites_raw["seoul_metro"]
    src.sites_raw["seoul_metro"] = seoul.model_copy(update={"name": EVIL})
    src.scenario = src.scenario.model_copy(
        update={"name": EVIL, "description": "+1+2 @x -y <script>alert(1)</script> & co"})
    src.catalog, src.sites = resolve_scenario(src.scenario, src.catalog_raw, src.sites_raw)
    result = plan(src.scenario, catalog=src.catalog_raw, sites=src.sites_raw)
    assert result.ok
    return result, src
