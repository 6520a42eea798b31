"""One CDU answer: the plan's tables, its notes and ``dcplan cooling`` agree.

For the plan's own fleet at every site and period, the CDU model and count of the
cooling table, the equipment and bill-of-materials tables, the exact sizing and the
terminal are those of the cooling model (``size_fleet(...).cooling``, what ``dcplan
cooling`` calls), and what the MILP priced stays beside them with the USD difference
recomputed here from the catalog's unit prices.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dcplan.case import load_case
from dcplan.cli import app
from dcplan.facility import size_fleet
from dcplan.planner import solve_case
from dcplan.planner.cdus import fleet_mix

REPO = Path(__file__).resolve().parents[1]


def _by_model(text) -> dict[str, float]:
    """``"a: 3, b: 1"`` -> {a: 3.0, b: 1.0}."""
    out = {}
    for part in str(text or "").split(","):
        if ":" in part:
            c, n = part.split(":")
            out[c.strip()] = float(n)
    return out


def _check_one_answer(result) -> int:
    """Every site and period: the tables' CDUs are the cooling model's for the fleet.

    Returns the number of site-periods where the MILP priced other CDUs (so that a
    caller can require the check to have bitten)."""
    case, d, t = result.case, result.inputs, result.tables
    cat = case.catalog
    cool = t["cooling"]
    eq, bom, sz = t["equipment"], t["bom"], t["sizing"]
    differ = 0
    for r in cool.itertuples():
        mix = fleet_mix(t["fleet"], r.site, r.period)
        if not mix:
            assert r.cdus == 0 and r.cdu_ids == "" and r.cdu_capex_usd == 0
            continue
        # the function 'dcplan cooling' calls (cli/facility_cmd.py), on the same fleet
        want = size_fleet(cat, case.sites[r.site], mix, optics=case.scenario.optics,
                          cdu_redundancy=d.cdu_redundancy, linear=False).cooling
        assert (r.cdu_ids, int(r.cdus)) == (want.cdu_id, want.cdu_count), (r.site, r.period)
        assert _by_model(r.cdus_by_model) == ({want.cdu_id: want.cdu_count}
                                              if want.cdu_id else {})
        if want.cdu_id:
            unit = cat.get("cdus", want.cdu_id)
            assert r.cdu_capex_usd == want.cdu_count * unit.capex_usd
            assert r.cdu_positions == want.cdu_count * unit.positions
        # what the MILP priced, and the difference, from the catalog's unit prices
        milp = _by_model(r.milp_cdus_by_model)
        assert r.milp_cdus == sum(milp.values())
        milp_usd = sum(n * cat.get("cdus", c).capex_usd for c, n in milp.items())
        assert r.milp_cdu_capex_usd == pytest.approx(milp_usd, abs=1e-6)
        assert r.cdu_capex_diff_usd == pytest.approx(r.cdu_capex_usd - milp_usd, abs=1e-6)
        differ += milp != _by_model(r.cdus_by_model)
        # the equipment, the bill of materials and the exact sizing list the same CDUs
        here = (eq.site == r.site) & (eq.period == r.period) & (eq.item == "cdu")
        assert dict(zip(eq[here].catalog_id, eq[here]["count"], strict=True)) == \
            ({want.cdu_id: want.cdu_count} if want.cdu_id else {})
        here = (bom.site == r.site) & (bom.period == r.period) & (bom.item == "cdu") \
            & (bom.installed > 0)
        assert dict(zip(bom[here].catalog_id, bom[here].installed, strict=True)) == \
            ({want.cdu_id: want.cdu_count} if want.cdu_id else {})
        exact = sz[(sz.site == r.site) & (sz.period == r.period)].set_index("quantity").exact
        assert exact["cdu_count"] == want.cdu_count
    return differ


def _check_notes(result) -> None:
    """A note per site whose CDUs differ, with the tables' counts, ids and USD."""
    cool = result.tables["cooling"]
    cat = result.case.catalog
    for s, sub in cool.groupby("site"):
        differs = [_by_model(a) != _by_model(b)
                   for a, b in zip(sub.cdus_by_model, sub.milp_cdus_by_model, strict=True)]
        notes = [n for n in result.notes if n.startswith(f"CDUs at {s}:")]
        assert bool(notes) == any(differs), s
        if not notes:
            continue
        m = re.search(r"chooses (?:(\d+) x (\w+) \((.+?)\)|no CDUs), ([\d,]+) USD in (\w+), "
                      r"where the plan's optimisation priced (.+?), ([\d,]+) USD \(([+-][\d,]+)"
                      r" USD; the CDUs differ in (\d+) period", " ".join(notes[0].split()))
        assert m, notes[0]
        k, cid, name, usd, period, _milp, milp_usd, diff, n_periods = m.groups()
        row = sub.set_index("period").loc[period if period in set(sub.period) else int(period)]
        if cid:
            assert (cid, int(k)) == (row.cdu_ids, row.cdus)
            assert name == cat.get("cdus", cid).name
        assert int(usd.replace(",", "")) == round(row.cdu_capex_usd)
        assert int(milp_usd.replace(",", "")) == round(row.milp_cdu_capex_usd)
        assert int(diff.replace(",", "")) == round(row.cdu_capex_diff_usd)
        assert int(n_periods) == sum(differs)


def _terminal_counts(result) -> None:
    """The terminal's "CDUs in service" per period is the cooling model's total."""
    from dcplan.export.terminal import plan_text

    text = plan_text(result, width=200)
    cool = result.tables["cooling"]
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Capex, cooling"))
    for period, sub in cool.groupby("period"):
        line = next(x for x in lines[start:] if x.startswith(str(period) + " "))
        assert line.split()[2] == f"{int(sub.cdus.sum()):,}", (period, line)  # 3rd column


def _case(name: str):
    return load_case(REPO / "examples" / f"{name}.yaml").with_changes(
        {"network_model": "linear", "solver.gap": 0.02})


@pytest.fixture(scope="module")
def minimal():
    """The minimal example (the linear fabric: the CDUs do not depend on it)."""
    result = solve_case(_case("minimal"))
    assert result.ok
    return result


@pytest.mark.slow
def test_minimal_plan_cdus_are_the_cooling_models(minimal):
    assert _check_one_answer(minimal) > 0   # the planning scale's model is not the fleet's
    _check_notes(minimal)
    _terminal_counts(minimal)


@pytest.mark.slow
def test_dcplan_cooling_prints_the_plans_cdus(minimal):
    """``dcplan cooling --site S --rack R --racks N`` for a site with one rack type."""
    cool, fleet = minimal.tables["cooling"], minimal.tables["fleet"]
    asked = {}
    for r in cool.itertuples():
        mix = fleet_mix(fleet, r.site, r.period)
        if len(mix) == 1 and r.cdus > 0:
            asked.setdefault(next(iter(mix.items())) + (r.site,), r)
    assert len(asked) >= 2
    runner = CliRunner()
    for (rack, n, site), r in list(asked.items())[:4]:
        out = runner.invoke(app, ["cooling", "--site", site, "--rack", rack, "--racks", str(n)])
        assert out.exit_code == 0, out.output
        line = next(x for x in out.output.splitlines() if x.startswith("CDUs:"))
        assert line.startswith(f"CDUs: {int(r.cdus)} x {r.cdu_ids} "), (line, r)
        js = json.loads(runner.invoke(app, ["cooling", "--site", site, "--rack", rack,
                                            "--racks", str(n), "--json"]).output)
        assert (js["cdu_count"], js["cdu_id"], js["cdu_capex_usd"]) == \
            (r.cdus, r.cdu_ids, r.cdu_capex_usd)


@pytest.mark.slow
def test_baseline_plan_cdus_are_the_cooling_models_at_every_site():
    """The baseline example: liquid-cooled racks at several sites."""
    result = solve_case(_case("baseline"))
    assert result.ok
    cool = result.tables["cooling"]
    assert cool[cool.cdus > 0].site.nunique() >= 2
    _check_one_answer(result)
    _check_notes(result)


def test_cdu_names_state_their_capacity():
    """Each CDU's display name says its capacity (the ids need not)."""
    from dcplan.catalog import load_catalog

    for c in load_catalog().cdus.values():
        kw, mw = f"{c.capacity_kw:,.0f} kW", f"{c.capacity_kw / 1000:g} MW"
        assert kw in c.name or mw in c.name, (c.id, c.name)
