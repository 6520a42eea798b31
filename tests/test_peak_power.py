"""Peak IT, the two PUEs and the power basis: what a plan's outputs say about peak power.

IT power is racks + network everywhere (the annual PUE always counted the network as
IT; peak IT now does too), so the written tables must explain the facility peak:
``peak facility = peak IT x PUE at the peak hour``, per site and period and for the
headline, recomputed here from the CSV files a plan writes. The shipped examples are
checked the same way in tests/test_examples.py (:func:`check_written_power`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from openpyxl import load_workbook

from dcplan.planner.plan_result import power_basis_text

#: How close the written figures must explain the facility peak [-] (the CSVs round
#: power to the watt and ratios to their resolution).
REL = 0.005


def _read(outdir: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(outdir / f"{name}.csv", dtype={"period": str})


def check_written_power(outdir: Path) -> None:
    """Recompute peak IT, the PUEs and the headline from the CSVs in ``outdir``.

    Per site and period: IT at the peak = racks' IT + network; the facility peak is the
    largest facility power of the site's representative hours, and the IT power of that
    hour is the peak IT; facility peak = peak IT x ``pue_peak`` (within :data:`REL`);
    ``pue_annual`` = average facility / average IT. Headline: the period of the largest
    sum of the sites' peaks; peak facility = peak IT x PUE at the peak hour, and the
    annual PUE is facility energy over IT energy, each within :data:`REL`.
    """
    power, cooling = _read(outdir, "power"), _read(outdir, "cooling")
    hours, kpis = _read(outdir, "hours"), _read(outdir, "kpis").set_index("kpi").value
    pw = power.set_index(["period", "site"])
    co = cooling.set_index(["period", "site"])
    for key, row in pw.iterrows():
        # the components of the facility power, and IT = racks + network
        assert row.facility_kw_peak == pytest.approx(
            row.it_kw_peak + row.cooling_kw_peak + row.network_kw + row.losses_kw_peak,
            rel=1e-6, abs=0.01), key
        assert row.it_total_kw_peak == pytest.approx(row.it_kw_peak + row.network_kw,
                                                     rel=1e-6, abs=0.01), key
        assert row.it_total_kw_avg == pytest.approx(row.it_kw_avg + row.network_kw,
                                                    rel=1e-6, abs=0.01), key
        hrs = hours[(hours.period == key[0]) & (hours.site == key[1])]
        if row.facility_kw_peak <= 1.0:
            assert pd.isna(co.pue_peak[key]) or row.it_total_kw_peak > 0, key
            continue
        # the peak is the busiest representative hour, its IT the peak IT; hours can tie
        # in facility power with IT 0.07 kW apart, cooling making up the difference
        # (high_demand, Chuncheon 2034: three hours at 10,695.334 kW), so the peak IT is
        # that of one of the tied hours
        fmax = hrs.facility_kw.max()
        tied = hrs[(fmax - hrs.facility_kw) <= max(0.01, 1e-6 * fmax)]
        assert row.facility_kw_peak == pytest.approx(fmax, rel=1e-6, abs=0.01), key
        match = tied[(tied.it_total_kw - row.it_total_kw_peak).abs()
                     <= np.maximum(0.01, 1e-6 * tied.it_total_kw)]
        assert len(match), (key, row.it_total_kw_peak, list(tied.it_total_kw))
        top = match.iloc[0]
        assert (top.it_total_kw - top.it_kw) == pytest.approx(row.network_kw, rel=1e-6,
                                                              abs=0.01), key
        # facility peak = peak IT x PUE at the peak hour; annual PUE from the averages
        assert row.it_total_kw_peak * co.pue_peak[key] == pytest.approx(
            row.facility_kw_peak, rel=REL), key
        assert co.pue_annual[key] == pytest.approx(row.facility_kw_avg / row.it_total_kw_avg,
                                                   rel=REL), key
        assert co.pue_peak[key] >= 1.0 and co.pue_annual[key] >= 1.0, key
    by_period = power.groupby("period", sort=False)[
        ["facility_kw_peak", "it_total_kw_peak", "it_kw_peak"]].sum()
    top = by_period.facility_kw_peak.idxmax()
    fac, it = by_period.facility_kw_peak[top] / 1000, by_period.it_total_kw_peak[top] / 1000
    assert kpis["peak_facility_mw"] == pytest.approx(fac, rel=REL)
    assert kpis["peak_it_mw"] == pytest.approx(it, rel=REL)
    assert kpis["peak_it_mw"] * kpis["pue_peak"] == pytest.approx(kpis["peak_facility_mw"],
                                                                  rel=REL)
    # IT energy: every hour's IT power at the annual average, hours = energy / power
    hrs_of = power.energy_kwh / power.facility_kw_avg.where(power.facility_kw_avg > 0)
    it_energy = (power.it_total_kw_avg * hrs_of.fillna(0)).sum()
    assert kpis["pue_annual"] == pytest.approx(power.energy_kwh.sum() / it_energy, rel=REL)
    network = power.groupby("period", sort=False).network_kw.sum()[top]
    if network > 0:  # peak IT is more than the racks' IT by the network's power
        assert kpis["peak_it_mw"] * 1000 == pytest.approx(
            by_period.it_kw_peak[top] + network, rel=REL)


@pytest.fixture(scope="module")
def written(minimal_plan, tmp_path_factory):
    """The shared minimal plan's CSV files, workbook and HTML report."""
    from dcplan.api import write_outputs

    result, _case = minimal_plan
    out = tmp_path_factory.mktemp("peak")
    write_outputs(result, outdir=out / "csv", xlsx=out / "plan.xlsx", html=out / "plan.html")
    return result, out


@pytest.mark.slow
def test_minimal_plan_explains_its_facility_peak(written):
    check_written_power(written[1] / "csv")


@pytest.mark.slow
def test_peak_pue_is_the_peak_hours_and_differs_from_the_annual(written):
    # the minimal plan's racks run below their operating point on average, with
    # cooling at its annual mean: the two PUEs are different figures
    result, _ = written
    assert result.kpi("pue_peak") != pytest.approx(result.kpi("pue_annual"), rel=1e-3)
    cool = result.tables["cooling"]
    busy = cool[cool.pue_peak.notna()]
    assert len(busy) and (busy.pue_peak > 1.0).all()


def test_basis_words():
    op = power_basis_text("operating_point", 0.035)
    assert op.startswith("operating point (serving power from the performance model")
    assert "margin 3.5%" in op and "high-percentile (p99)" in op
    assert "not known" in power_basis_text("operating_point", None)
    assert "not known" in power_basis_text("operating_point", float("nan"))
    assert power_basis_text("nameplate", 0.1).startswith("nameplate (")
    assert "margin" not in power_basis_text("nameplate", 0.1)
    assert power_basis_text(None, None).startswith("not recorded")


@pytest.mark.slow
def test_margin_is_the_high_percentile_over_serving_power_of_the_allocated_racks(written):
    # recomputed from the allocation table and the performance model's two powers
    result, _ = written
    d = result.inputs
    alloc, power = result.tables["allocation"], result.tables["power"]
    top = power.groupby("period", sort=False).facility_kw_peak.sum().idxmax()
    rows = alloc[(alloc.period == top) & (alloc.racks > 0)]
    high = sum(r.racks * d.perf[r.rack, r.workload].power_p99_kw for r in rows.itertuples())
    serve = sum(r.racks * d.perf[r.rack, r.workload].power_kw for r in rows.itertuples())
    assert serve > 0 and high >= serve
    assert result.kpi("power_p99_margin_frac") == pytest.approx(high / serve - 1, rel=1e-9)
    assert f"margin {high / serve - 1:.1%}" in result.power_basis


@pytest.mark.slow
def test_power_basis_is_stated_in_every_output(written, tmp_path):
    from dcplan.export.terminal import plan_text

    result, out = written
    basis = result.power_basis
    assert result.peak_power == "operating_point"
    assert basis.startswith("operating point (serving power from the performance model")
    text = " ".join(plan_text(result, 100).split())
    assert f"Power basis: {basis}" in text
    assert "PUE at the peak hour" in text and "PUE, annual" in text
    summary = {c.value for row in load_workbook(out / "plan.xlsx")["Summary"].iter_rows()
               for c in row}
    assert basis in summary and "Power basis" in summary
    assum = {c.value for row in load_workbook(out / "plan.xlsx")["Assumptions"].iter_rows()
             for c in row}
    assert basis in assum
    html = (out / "plan.html").read_text(encoding="utf-8")
    assert basis in " ".join(html.split())
    # --json and 'dcplan show' of the saved plan (plan --json prints the same summary)
    from typer.testing import CliRunner

    from dcplan.cli import app
    from dcplan.planner.saved import save_result

    path = save_result(result, tmp_path / "p.plan")
    res = CliRunner().invoke(app, ["show", str(path), "--json"])
    assert res.exit_code == 0, res.output
    js = json.loads(res.stdout)
    assert js["power_basis"] == basis and js["peak_power"] == "operating_point"
    res = CliRunner().invoke(app, ["show", str(path)])
    assert res.exit_code == 0 and f"Power basis: {basis}" in " ".join(res.stdout.split())


@pytest.mark.slow
def test_nameplate_plan_states_its_basis_and_sizes_peaks_at_full_load(tmp_path):
    # the minimal example (linear fabric) with peak_power: nameplate: the words say so,
    # and each site's peak IT is every installed rack at it_power_max_kw plus the network
    from conftest import LINEAR, REPO

    from dcplan.case import load_case
    from dcplan.planner import solve_case

    case = load_case(REPO / "examples" / "minimal.yaml").with_changes(
        {**LINEAR, "peak_power": "nameplate"})
    result = solve_case(case, size=False)
    assert result.status.has_solution
    assert result.peak_power == "nameplate"
    assert result.power_basis.startswith("nameplate (") and "margin" not in result.power_basis
    result.write_csvs(tmp_path)
    check_written_power(tmp_path)
    fleet, power = result.tables["fleet"], result.tables["power"].set_index(["period", "site"])
    d = result.inputs
    full = fleet.assign(kw=[d.racks[r].it_power_max_kw * n for r, n in
                            zip(fleet.rack, fleet.installed_racks, strict=True)])
    for key, kw in full.groupby(["period", "site"]).kw.sum().items():
        assert power.it_kw_peak[key] == pytest.approx(kw, rel=1e-9, abs=1e-6), key
        assert power.it_total_kw_peak[key] == pytest.approx(kw + power.network_kw[key],
                                                            rel=1e-9, abs=1e-6), key
