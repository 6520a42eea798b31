"""The bill of materials never counts a rack's own parts twice.

A line is bought on its own (``purchase`` = ``own``) or comes inside a rack's price and
IT power (``in_rack``: the NICs, catalogs/racks.yaml ``capex_basis``); an in-rack line
keeps its counts, its kW and USD stand apart (``included_*``) and enter no total. The
own-purchase network capex to order, recomputed from the CSV files, is the plan's
network capex of the cost table; the CDUs to order are the growth of the cooling
table's (the cooling model's), the cost table's CDU capex that of its ``milp_`` CDUs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from dcplan.export import write_workbook
from dcplan.export.excel import HEADER_ROW
from dcplan.planner.sizing import IN_RACK, OWN

REPO = Path(__file__).resolve().parent.parent


def _capex_by_period(costs: pd.DataFrame, category: str) -> pd.Series:
    return costs[costs.category == category].groupby("period").cost_usd.sum()


def _to_order(bom: pd.DataFrame, mask: pd.Series) -> pd.Series:
    return bom[mask].groupby("period").new_capex_usd.sum()


def _cdu_growth(cooling: pd.DataFrame, column: str, price: dict) -> pd.Series:
    """USD of CDUs bought per period: each site's and model's growth in count (from the
    cooling table's "model: count" column) x the catalog's unit price."""
    usd: dict = {}
    for _site, sub in cooling.groupby("site", sort=False):
        prev: dict = {}
        for r in sub.itertuples():
            now = {c.strip(): float(n) for c, n in (part.split(":") for part in
                                                     str(getattr(r, column) or "").split(",")
                                                     if ":" in part)}
            usd[r.period] = usd.get(r.period, 0.0) + sum(
                max(0.0, n - prev.get(c, 0.0)) * price[c] for c, n in now.items())
            prev = now
    return pd.Series(usd)


def test_in_rack_lines_stand_apart_and_cdus_are_the_cooling_tables(minimal_plan, tmp_path):
    result, case = minimal_plan
    result.write_csvs(tmp_path)
    bom = pd.read_csv(tmp_path / "bom.csv")
    costs = pd.read_csv(tmp_path / "costs.csv")
    assert set(bom.purchase) == {OWN, IN_RACK}
    inside = bom.purchase == IN_RACK
    assert set(bom[inside].item) == {"nic"}  # what the racks' capex_basis includes
    assert (bom[~inside].item != "nic").all()
    # in-rack lines: counts kept, kW and USD only in the information columns
    assert (bom[inside].installed > 0).any()
    assert bom.loc[inside, ["kw", "capex_usd", "new_capex_usd"]].isna().all().all()
    assert bom.loc[~inside, ["included_kw", "included_capex_usd"]].isna().all().all()
    assert bom.loc[~inside, ["kw", "capex_usd", "new_capex_usd"]].notna().all().all()
    price = {n.id: n.capex_usd for n in case.catalog.nics.values()}
    assert bom[inside].included_capex_usd.to_numpy() == pytest.approx(
        (bom[inside].installed * bom[inside].catalog_id.map(price)).to_numpy())
    # the CDUs to order are the growth of the cooling table's (the cooling model's for
    # the fleet); the plan's CDU capex is the growth of the CDUs the MILP priced
    cool = pd.read_csv(tmp_path / "cooling.csv", keep_default_na=False)
    price = {c.id: c.capex_usd for c in case.catalog.cdus.values()}
    cdu = _to_order(bom, bom.item == "cdu")
    mine = _cdu_growth(cool, "cdus_by_model", price)
    assert cdu.reindex(mine.index, fill_value=0).to_numpy() == pytest.approx(
        mine.to_numpy(), rel=1e-9)
    plan = _capex_by_period(costs, "cdu_capex")
    milp = _cdu_growth(cool, "milp_cdus_by_model", price)
    assert len(plan) and milp.reindex(plan.index, fill_value=0).to_numpy() == pytest.approx(
        plan.to_numpy(), rel=1e-9)


@pytest.mark.slow
def test_workbook_totals_sum_the_own_purchases_only(minimal_plan, tmp_path):
    result, _ = minimal_plan
    bom = result.tables["bom"]
    path = write_workbook(result, tmp_path / "m.xlsx")
    ws = openpyxl.load_workbook(path)["Bill of materials"]
    total = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == "Total")
    heads = {str(ws.cell(HEADER_ROW, j).value): j for j in range(1, ws.max_column + 1)}
    col = {c: next(j for h, j in heads.items() if h.startswith(text))
           for c, text in (("purchase", "Purchase"), ("new_capex_usd", "Capex of what to"),
                           ("new", "To order"))}
    letter = openpyxl.utils.get_column_letter(col["purchase"])
    for c in ("new_capex_usd", "new"):
        f = ws.cell(total, col[c]).value
        assert f.startswith(f"=SUMIF({letter}") and f'"{OWN}"' in f, f
    assert ws.cell(total, col["purchase"]).value == OWN
    # the figures those totals add up: nothing of the NICs
    own = bom[bom.purchase == OWN]
    assert bom.new_capex_usd.sum() == pytest.approx(own.new_capex_usd.sum())
    assert bom[bom.purchase == IN_RACK].included_capex_usd.sum() > 0


@pytest.mark.slow
def test_own_purchases_are_the_plans_equipment_capex(tmp_path):
    """Integer fabric (the BOM's switches and links are then the plan's own counts):
    from the CLI's CSV files, the own-purchase capex to order by period is the cost
    table's network capex; the NICs would add 19-45 % to it."""
    out = tmp_path / "csv"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "dcplan", "plan",
                           str(REPO / "examples" / "minimal.yaml"), "-o", str(out), "-q"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    bom, costs = pd.read_csv(out / "bom.csv"), pd.read_csv(out / "costs.csv")
    sizing = pd.read_csv(out / "sizing.csv")
    own = bom.purchase == OWN
    periods = sorted(set(bom.period))
    # CDUs: the bill's are the cooling model's, the cost table's the MILP's
    # (tests/test_cdu_answer.py and the test above)
    net = _to_order(bom, own & (bom.category == "network")).reindex(periods, fill_value=0)
    plan_net = _capex_by_period(costs, "network_capex").reindex(periods, fill_value=0)
    # switch and link counts are the plan's; link prices differ by the optics mix
    # (the plan prices a link at its tier's mean) and the re-settled three-tier fabric
    assert net.to_numpy() == pytest.approx(plan_net.to_numpy(), rel=0.02)
    assert net.sum() == pytest.approx(plan_net.sum(), rel=0.01)
    inside = bom[bom.purchase == IN_RACK]
    nic = (inside.new * (inside.included_capex_usd / inside.installed).fillna(0)).groupby(
        inside.period).sum().reindex(periods, fill_value=0)
    assert ((net + nic - plan_net).abs() > 0.1 * plan_net).all()  # counted twice: off
    # installed: the own network lines are the exact sizing's network capex
    inst = bom[own & (bom.category == "network")].groupby(["site", "period"]).capex_usd.sum()
    ex = sizing[sizing.quantity == "network_capex_usd"].set_index(["site", "period"]).exact
    assert inst.reindex(ex.index, fill_value=0).to_numpy() == pytest.approx(ex.to_numpy(),
                                                                            rel=1e-9)
