"""Sweeps over whole performance-model calibrations (``calibration_file`` parameters).

Alternative fits of the same measurements differ in many parameters at once
(docs/perf.md, "How well the data pin the fit"); a ``calibration_file`` parameter plans
each sample with one of them. The files are read with the sweep file; bad ones are
reported with the sweep file's other problems; a sampled ``calibration`` parameter
changes the chosen file's values; ``dcplan sweep`` plans each file end to end.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from dcplan.errors import InputError
from dcplan.perf.params import load_calibration
from dcplan.sweep.apply import sample_case
from dcplan.sweep.spec import load_sweep_spec

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "catalogs" / "perf_calibration.yaml"


def slower_fit(path: Path, factor: float = 0.6) -> Path:
    """The shipped calibration with every HBM and decode GEMM efficiency times ``factor``."""
    doc = yaml.safe_load(SHIPPED.read_text())
    levels = [doc["default"], *doc["vendor"].values(), *doc["architecture"].values(),
              *doc["hardware"].values()]
    for level in levels:
        for k in ("hbm_eff_frac", "decode_compute_eff_frac"):
            if k in level:
                level[k] = round(level[k] * factor, 6)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def sweep_file(folder: Path, base: Path, files: list[str], *, extra: str = "",
               method: str = "grid") -> Path:
    values = "[" + ", ".join(files) + "]"
    body = (f"kind: dcplan_sweep\nname: fits\nbase: {base}\nmethod: {method}\n"
            "outputs: [npv_cost_usd, racks_bought]\nparameters:\n"
            "  - name: perf_fit\n    calibration_file: true\n"
            f"    distribution: choice\n    values: {values}\n{extra}")
    path = folder / "fits.yaml"
    path.write_text(body)
    return path


def test_the_files_are_read_with_the_sweep_file(tmp_path):
    slow = slower_fit(tmp_path / "slow.yaml")
    spec = load_sweep_spec(sweep_file(tmp_path, REPO / "examples" / "minimal.yaml",
                                      [str(SHIPPED), "slow.yaml"]))
    assert set(spec.calibrations) == {str(SHIPPED), "slow.yaml"}
    assert spec.calibrations["slow.yaml"].key == load_calibration(slow).key
    assert spec.calibrations["slow.yaml"].key != load_calibration(SHIPPED).key
    p = spec.parameters[0]
    assert (p.target, p.op) == ("calibration_file", "set")
    assert "calibration file" in p.describe()


def test_a_file_name_with_a_nul_byte_is_reported_not_raised(tmp_path):
    bad = sweep_file(tmp_path, REPO / "examples" / "minimal.yaml", ['"a\\0b.yaml"'])
    with pytest.raises(InputError, match="no calibration file"):
        load_sweep_spec(bad)


def test_bad_calibration_file_parameters_are_all_reported(tmp_path):
    (tmp_path / "notes.yaml").write_text("kind: something_else\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"kind: dcplan_sweep\nname: fits\nbase: {REPO / 'examples/minimal.yaml'}\n"
                   "method: random\nsamples: 4\nparameters:\n"
                   "  - name: fit_a\n    calibration_file: true\n    apply: scale\n"
                   "    distribution: choice\n    values: [missing.yaml, notes.yaml, 3]\n"
                   "  - name: fit_b\n    calibration_file: true\n"
                   "    distribution: uniform\n    low: 0\n    high: 1\n")
    with pytest.raises(InputError) as info:
        load_sweep_spec(bad)
    text = str(info.value)
    assert "entry 'fit_a', field 'apply'" in text and "remove 'apply'" in text
    assert "3 is not a file name" in text
    assert "no calibration file" in text and "missing.yaml" in text
    assert "notes.yaml" in text and "not a calibration file" in text
    assert "entry 'fit_b', field 'distribution'" in text and "not a uniform" in text
    assert "changes the same input as parameter 1" in text     # two whole calibrations


def test_a_sample_plans_with_its_file_and_calibration_parameters_change_it(tmp_path):
    from dcplan.case import load_case
    from dcplan.perf.predict import calibration_architecture, hardware_params

    slower_fit(tmp_path / "slow.yaml")
    extra = ("  - name: hbm\n    calibration: {param: hbm_eff_frac, accelerator: b200}\n"
             "    apply: scale\n    distribution: choice\n    values: [0.5]\n")
    spec = load_sweep_spec(sweep_file(tmp_path, REPO / "examples" / "minimal.yaml",
                                      [str(SHIPPED), "slow.yaml"], extra=extra))
    case = load_case(REPO / "examples" / "minimal.yaml")
    chosen = spec.calibrations["slow.yaml"]

    def planned(c, acc):
        a = c.catalog.get("accelerators", acc)
        cal = c.perf_calibration
        return hardware_params(c.perf_defaults, acc, cal, a.vendor,
                               calibration_architecture(a, cal))

    alone = sample_case(case, spec, {"perf_fit": "slow.yaml"})
    assert alone.perf_calibration.key == chosen.key
    both = sample_case(case, spec, {"perf_fit": "slow.yaml", "hbm": 0.5})
    # by hand: B200's planning HBM efficiency of the chosen file, halved; GB200 keeps
    # the chosen file's own value
    assert planned(both, "b200").hbm_eff_frac == pytest.approx(
        0.5 * planned(alone, "b200").hbm_eff_frac)
    assert planned(both, "gb200_gpu").hbm_eff_frac == pytest.approx(
        planned(alone, "gb200_gpu").hbm_eff_frac)
    shipped = sample_case(case, spec, {"perf_fit": str(SHIPPED)})
    assert planned(alone, "gb200_gpu").hbm_eff_frac == pytest.approx(
        0.6 * planned(shipped, "gb200_gpu").hbm_eff_frac, rel=1e-5)
    with pytest.raises(InputError, match="not one of the calibration files"):
        sample_case(case, spec, {"perf_fit": "other.yaml"})


@pytest.mark.slow
def test_dcplan_sweep_plans_each_calibration_file(tmp_path, minimal_linear):
    """End to end: a slower fit of the same racks needs more of them and costs more."""
    slower_fit(tmp_path / "slow.yaml", 0.5)
    slower_fit(tmp_path / "mid.yaml", 0.75)
    # listed out of order: a rank or a first-vs-last comparison would mean nothing
    path = sweep_file(tmp_path, minimal_linear, ["slow.yaml", str(SHIPPED), "mid.yaml"])
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "dcplan", "sweep", str(path), "-o", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    df = pd.read_csv(out / "samples.csv")
    runs = df[df["sample_id"] > 0].set_index("perf_fit")
    assert set(runs.index) == {str(SHIPPED), "slow.yaml", "mid.yaml"}
    assert (runs["status"] == "optimal").all()
    npv, racks = runs["npv_cost_usd"], runs["racks_bought"]
    assert racks["slow.yaml"] > racks["mid.yaml"] > racks[str(SHIPPED)]
    assert npv["slow.yaml"] > npv["mid.yaml"] > npv[str(SHIPPED)]
    # the base plan (sample 0) is the scenario with the shipped calibration
    base = df[df["sample_id"] == 0].iloc[0]
    assert base["npv_cost_usd"] == pytest.approx(runs.loc[str(SHIPPED), "npv_cost_usd"],
                                                 rel=2e-3)
    # files have no order: no rank correlation; the tornado compares the files with the
    # lowest and the highest mean NPV (one sample each)
    from dcplan.sweep import load_sweep
    from dcplan.sweep.summary import sensitivity_table, tornado_table

    data = load_sweep(out)
    rho = sensitivity_table(data).query("parameter == 'perf_fit' and method == 'spearman'")
    assert len(rho) and rho["value"].isna().all()
    row = tornado_table(data).set_index("parameter").loc["perf_fit"]
    assert (row["low"], row["high"]) == (SHIPPED.name, "slow.yaml")
    assert row["low_mean"] == pytest.approx(npv[str(SHIPPED)])
    assert row["high_mean"] == pytest.approx(npv["slow.yaml"])
    # a file changed since: --resume refuses to mix its samples with the new file's
    slower_fit(tmp_path / "mid.yaml", 0.7)
    again = subprocess.run([sys.executable, "-m", "dcplan", "sweep", str(path), "-o",
                            str(out), "--resume"], capture_output=True, text=True,
                           timeout=600, cwd=REPO)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "holds another sweep: the calibration files changed" in again.stderr
