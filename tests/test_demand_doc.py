"""docs/demand.md shows the figures docs/gen_demand.py measures now (tokens and prices)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripts import load_script

from dcplan.catalog import load_catalog

ROOT = Path(__file__).resolve().parent.parent
gen = load_script(ROOT / "docs" / "gen_demand.py", "gen_demand")


@pytest.mark.slow
def test_token_and_price_tables_are_current():
    # The ENERGY block runs the planner and is refreshed with `python docs/gen_demand.py`.
    text = gen.DOC.read_text(encoding="utf-8")
    fresh = gen.render(text, load_catalog(), names=("TOKENS", "PRICES"))
    assert fresh == text, "docs/demand.md is out of date; run python docs/gen_demand.py"
