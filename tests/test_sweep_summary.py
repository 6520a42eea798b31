"""What a sweep tells, computed by hand on tiny sweep folders written here."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from dcplan.sweep.design import make_design
from dcplan.sweep.run import RESULT_KIND
from dcplan.sweep.spec import Parameter, SweepSpec
from dcplan.sweep.summary import load_sweep, quantiles, summarize


def make_spec(method="random", n=2, samples=None, levels=None, params=None):
    params = params or [Parameter(name=f"x{i}", path=f"a.b{i}", distribution="uniform",
                                  low=0.0, high=1.0) for i in range(n)]
    return SweepSpec(kind="dcplan_sweep", name="t", base="b.yaml", method=method,
                     samples=samples, levels=levels, parameters=params, seed=1,
                     outputs=["npv_cost_usd"])


def write_folder(folder, spec, rows, fleet=(), design=None, periods=("2026", "2027"),
                 racks=("a", "b"), levels=None):
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {"kind": RESULT_KIND, "name": "t", "scenario_name": "s", "state": "complete",
                "spec": spec.model_dump(mode="json"), "method": spec.method, "seed": 1,
                "levels": levels, "samples": len(design) if design is not None else
                len([r for r in rows if r["sample_id"] > 0]),
                "parameters": [{"name": p.name, "title": p.name, "target": "", "unit": ""}
                               for p in spec.parameters],
                "outputs": ["npv_cost_usd"], "periods": list(periods), "racks": list(racks)}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    pd.DataFrame(rows).to_csv(folder / "samples.csv", index=False)
    pd.DataFrame(list(fleet), columns=["sample_id", "period", "rack", "installed_racks",
                                       "new_racks"]).to_csv(folder / "fleet.csv", index=False)
    if design is not None:
        design.to_csv(folder / "design.csv", index=False)
    return load_sweep(folder)


def test_quantiles_by_hand():
    assert quantiles([100, 200, 300, 400, 500]) == pytest.approx([140, 300, 460])
    # weighted: the first value whose cumulative weight reaches the level
    assert quantiles([10, 20], weights=[0.8, 0.2]) == [10, 10, 20]
    assert quantiles([20, 10, 30], weights=[1, 1, 2]) == [10, 20, 30]
    assert all(math.isnan(q) for q in quantiles([]))


def test_kpi_percentiles_use_solved_samples_only(tmp_path):
    spec = make_spec(n=1)
    rows = [{"sample_id": 0, "x0": 0.5, "weight": 0, "status": "optimal",
             "npv_cost_usd": 250.0}]
    rows += [{"sample_id": i, "x0": i / 10, "weight": 0.2, "status": "optimal",
              "npv_cost_usd": 100.0 * i} for i in range(1, 6)]
    rows += [{"sample_id": 6, "x0": 0.9, "weight": 0.2, "status": "infeasible",
              "npv_cost_usd": None}]
    s = summarize(write_folder(tmp_path / "s", spec, rows))
    k = s.kpis.set_index("kpi").loc["npv_cost_usd"]
    assert (k.base, k["mean"], k.p10, k.p50, k.p90, k.n) == (250, 300, 140, 300, 460, 5)
    assert s.statuses == {"optimal": 5, "infeasible": 1}
    assert s.solved == 5


def test_weighted_grid_percentiles_and_mean(tmp_path):
    spec = make_spec("grid", params=[Parameter(name="x0", path="a", distribution="choice",
                                               values=[1, 2], weights=[0.8, 0.2])])
    rows = [{"sample_id": 1, "x0": 1, "weight": 0.8, "status": "optimal",
             "npv_cost_usd": 10.0},
            {"sample_id": 2, "x0": 2, "weight": 0.2, "status": "optimal",
             "npv_cost_usd": 20.0}]
    k = summarize(write_folder(tmp_path / "g", spec, rows)).kpis.iloc[0]
    assert (k.p10, k.p50, k.p90) == (10, 10, 20) and k["mean"] == pytest.approx(12.0)


def test_purchase_probability_and_fan_by_hand(tmp_path):
    spec = make_spec(n=1)
    rows = [{"sample_id": i, "x0": 0.1 * i, "weight": 0.25, "status": "optimal",
             "npv_cost_usd": 1.0} for i in range(1, 5)]
    fleet = [(1, 2026, "a", 4, 4), (1, 2027, "a", 4, 0),
             (2, 2026, "a", 2, 2), (2, 2027, "a", 2, 0),
             (3, 2027, "a", 6, 6),
             (3, 2027, "b", 1, 1)]  # sample 4 buys nothing: no rows at all
    s = summarize(write_folder(tmp_path / "p", spec, rows, fleet))
    p = s.purchase
    assert list(p.columns) == ["2026", "2027"]
    assert p.loc["a", "2026"] == 0.5 and p.loc["a", "2027"] == 0.75
    assert p.loc["b", "2026"] == 0.0 and p.loc["b", "2027"] == 0.25
    f = s.fleet.set_index(["rack", "period"])
    # racks of a in service in 2027 over the 4 samples: 4, 2, 6, 0
    assert f.loc[("a", "2027"), "installed_p50"] == pytest.approx(3.0)
    assert f.loc[("a", "2027"), "installed_p10"] == pytest.approx(0.6)
    assert f.loc[("a", "2026"), "prob_bought_in"] == 0.5
    assert f.loc[("a", "2027"), "prob_bought_in"] == 0.25


def test_tornado_by_hand(tmp_path):
    spec = make_spec(n=2)
    rows = [{"sample_id": i, "x0": float(i), "x1": float(11 - i) * 0 + (i % 2),
             "weight": 0.1, "status": "optimal", "npv_cost_usd": 100.0 * i}
            for i in range(1, 11)]
    t = summarize(write_folder(tmp_path / "t", spec, rows)).tornado.set_index("parameter")
    # x0: 1..10, lowest fifth x <= 2.8 -> {1, 2}, highest x >= 8.2 -> {9, 10}
    assert t.loc["x0", "low_mean"] == 150 and t.loc["x0", "high_mean"] == 950
    assert t.loc["x0", "swing"] == 800 and t.loc["x0", "mean"] == 550
    # x1 takes two values: split at them (odd i -> 1: 100, 300, ..., 900 -> mean 500)
    assert t.loc["x1", "low_mean"] == 600 and t.loc["x1", "high_mean"] == 500
    assert list(t.index) == ["x0", "x1"]  # largest swing first


def _design_frame(d):
    rows = []
    for sid, vals, u, w, b in zip(d.ids, d.values, d.unit, d.weights, d.blocks, strict=True):
        row = {"sample_id": sid, **vals, "weight": w, "block": b}
        row.update({f"u.{n}": x for n, x in zip(d.names, u, strict=True)})
        rows.append(row)
    return pd.DataFrame(rows)


def test_morris_indices_of_a_linear_function(tmp_path):
    levels = 4
    spec = make_spec("morris", n=2, samples=30, levels=levels)
    d = make_design(spec)
    # linear in the parameters' quantiles: +5 and -2 per full range (quantile 0 to 1),
    # whatever the level grid (SALib's coordinates span (p - 1) / p of that range)
    y = 5.0 * d.unit[:, 0] - 2.0 * d.unit[:, 1]
    rows = [{"sample_id": sid, **v, "weight": w, "status": "optimal", "npv_cost_usd": yy}
            for sid, v, w, yy in zip(d.ids, d.values, d.weights, y, strict=True)]
    rows[4]["status"] = "infeasible"  # trajectory 1 (rows 3..5) is incomplete
    data = write_folder(tmp_path / "m", spec, rows, design=_design_frame(d), levels=levels)
    s = summarize(data).sensitivity
    m = s[s.method == "morris"].pivot(index="parameter", columns="index", values="value")
    assert m.loc["x0", "mu_star"] == pytest.approx(5.0)
    assert m.loc["x1", "mu_star"] == pytest.approx(2.0)
    assert m.loc["x1", "mu"] == pytest.approx(-2.0)
    assert m.loc["x0", "sigma"] == pytest.approx(0.0, abs=1e-9)
    assert set(s[s.method == "morris"].blocks) == {d.size // 3 - 1}


@pytest.mark.slow
def test_sobol_indices_of_a_one_parameter_function(tmp_path):
    spec = make_spec("sobol", n=3, samples=64 * 5)
    d = make_design(spec)
    y = np.array([v["x0"] for v in d.values]) ** 2
    rows = [{"sample_id": sid, **v, "weight": w, "status": "optimal", "npv_cost_usd": yy}
            for sid, v, w, yy in zip(d.ids, d.values, d.weights, y, strict=True)]
    s = summarize(write_folder(tmp_path / "s", spec, rows, design=_design_frame(d))).sensitivity
    so = s[s.method == "sobol"].pivot(index="parameter", columns="index", values="value")
    assert so.loc["x0", "S1"] == pytest.approx(1.0, abs=0.1)
    assert so.loc["x0", "ST"] == pytest.approx(1.0, abs=0.1)
    for other in ("x1", "x2"):
        assert abs(so.loc[other, "S1"]) < 0.05 and abs(so.loc[other, "ST"]) < 0.05


def test_rank_correlation_and_summary_text(tmp_path):
    from dcplan.export.sweep import sweep_summary_text

    spec = make_spec(n=2)
    rng = np.random.default_rng(0)
    x0, x1 = rng.random(30), rng.random(30)
    rows = [{"sample_id": 0, "x0": 0.5, "x1": 0.5, "weight": 0, "status": "optimal",
             "npv_cost_usd": 5e8}]
    rows += [{"sample_id": i + 1, "x0": a, "x1": b, "weight": 1 / 30, "status": "optimal",
              "npv_cost_usd": 1e9 * a} for i, (a, b) in enumerate(zip(x0, x1, strict=True))]
    data = write_folder(tmp_path / "r", spec, rows)
    s = summarize(data)
    rho = s.sensitivity[s.sensitivity.method == "spearman"].set_index("parameter").value
    assert rho["x0"] == pytest.approx(1.0) and abs(rho["x1"]) < 0.5
    text = sweep_summary_text(data)
    assert "30 of 30 samples solved" in text and "NPV of costs: P10" in text
    assert "x0" in text.split("What moves the NPV most:")[1].split(";")[0]


def test_a_folder_without_a_sweep_is_refused(tmp_path):
    from dcplan.errors import InputError

    with pytest.raises(InputError, match="not a sweep folder"):
        load_sweep(tmp_path)
