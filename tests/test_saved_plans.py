"""Saved plans, the Python API, outputs written as a set, and command-line conventions."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import dcplan
from dcplan.cli import app
from dcplan.errors import InputError
from dcplan.export.files import MARKER, replace_folder
from dcplan.planner import TABLES
from dcplan.planner.saved import FORMAT_VERSION, load_result, save_result
from dcplan.yamlio import TMP_TAG

REPO = Path(__file__).resolve().parent.parent
MINIMAL = REPO / "examples" / "minimal.yaml"
runner = CliRunner()


@pytest.fixture(scope="module")
def saved(tmp_path_factory, minimal_linear):
    """The minimal example (linear fabric) planned once through the CLI with --save: the
    saved file, its JSON and the scenario file."""
    folder = tmp_path_factory.mktemp("saved")
    path = folder / "minimal.plan"
    scenario = minimal_linear
    res = runner.invoke(app, ["plan", str(scenario), "-q", "--json", "--save", str(path)])
    assert res.exit_code == 0, res.output
    return path, json.loads(res.stdout), scenario


# --- saved plans -------------------------------------------------------------------------


@pytest.mark.slow
def test_show_gives_the_same_npv_without_solving(saved, monkeypatch):
    path, solved, _scenario = saved
    import dcplan.planner.run as run

    monkeypatch.setattr(run, "solve_inputs", lambda *a, **k: pytest.fail("solved again"))
    res = runner.invoke(app, ["show", str(path), "--json"])
    assert res.exit_code == 0, res.output
    shown = json.loads(res.stdout)
    assert shown["objective_usd"] == solved["objective_usd"]
    assert shown["kpis"] == solved["kpis"] and shown["fleet"] == solved["fleet"]
    assert shown["saved_from"]["input_digest"]
    text = runner.invoke(app, ["show", str(path)]).stdout
    assert "NPV of costs" in text and "read from a saved plan" in text


@pytest.mark.slow
def test_saved_file_is_an_inspectable_zip(saved):
    path, _, _scenario = saved
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("manifest.json"))
    assert manifest["format"] == "dcplan-plan" and manifest["format_version"] == FORMAT_VERSION
    assert manifest["dcplan_version"] == dcplan.__version__
    for name, info in manifest["tables"].items():
        assert info["file"] in names, name
    assert {"inputs/scenario.json", "inputs/catalog.json", "inputs/plan_inputs.json"} <= names
    fleet = pd.read_parquet(zipfile.Path(path, "tables/fleet.parquet").open("rb"))
    assert len(fleet) == manifest["tables"]["fleet"]["rows"]


@pytest.mark.slow
def test_round_trip_keeps_every_table_and_the_inputs(minimal_plan, tmp_path):
    result, case = minimal_plan
    back = load_result(save_result(result, tmp_path / "a.plan"))
    assert [n for n, _ in back] == [n for n, _ in result]
    for name, df in result:
        pd.testing.assert_frame_equal(back.tables[name], df, check_dtype=False)
        assert back.tables[name].attrs["units"] == df.attrs["units"]
    assert back.case.digest == case.digest
    assert back.inputs.periods == result.inputs.periods
    assert back.inputs.perf == result.inputs.perf
    assert back.status == result.status and back.gap == result.gap


@pytest.mark.parametrize("damage, words", [
    ("not_zip", "not a saved dcplan plan"),
    ("other_version", "plan format version 99"),
    ("bad_manifest", "manifest.json is not valid JSON"),
    ("missing_table", "damaged or incomplete"),
])
@pytest.mark.slow
def test_bad_saved_files_are_refused_clearly(saved, tmp_path, damage, words):
    path, _, _scenario = saved
    bad = tmp_path / "bad.plan"
    if damage == "not_zip":
        bad.write_text("periods: {start: 2026, end: 2030}\n")
    else:
        with zipfile.ZipFile(path) as src, zipfile.ZipFile(bad, "w") as dst:
            for item in src.namelist():
                data = src.read(item)
                if item == "manifest.json":
                    m = json.loads(data)
                    if damage == "other_version":
                        m["format_version"] = 99
                    data = b"{not json" if damage == "bad_manifest" else json.dumps(m).encode()
                if damage == "missing_table" and item == "tables/fleet.parquet":
                    continue
                dst.writestr(item, data)
    res = runner.invoke(app, ["show", str(bad)])
    assert res.exit_code == 1 and words in res.stderr, res.output
    assert "Traceback" not in res.stderr


@pytest.mark.slow
def test_export_writes_outputs_from_the_saved_file(saved, tmp_path):
    path, _, _scenario = saved
    res = runner.invoke(app, ["export", str(path), "-o", str(tmp_path / "csv"), "--xlsx",
                              str(tmp_path / "plan.xlsx"), "-q"])
    assert res.exit_code == 0, res.output
    csvs = sorted(p.stem for p in (tmp_path / "csv").glob("*.csv"))
    assert csvs == sorted(TABLES)
    assert (tmp_path / "plan.xlsx").stat().st_size > 10_000
    res = runner.invoke(app, ["export", str(path)])
    assert res.exit_code == 2 and "say what to write" in res.stderr


@pytest.mark.slow
def test_compare_reads_saved_plans_and_scenarios_alike(saved):
    path, solved, scenario = saved
    res = runner.invoke(app, ["compare", str(path), str(scenario), "-q", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    npv = [r for r in out["kpis"] if r["kpi"] == "npv_cost_usd"][0]
    a, b = out["scenarios"]
    assert npv[a] == pytest.approx(solved["objective_usd"])
    assert npv[b] == pytest.approx(solved["objective_usd"], rel=1e-9)  # solved again


# --- the Python API ----------------------------------------------------------------------


@pytest.mark.slow
def test_python_api_typed_tables(minimal_plan, tmp_path):
    r = dcplan.api.Plan(minimal_plan[0])
    fleet = r.fleet
    assert fleet.period.dtype == "int64" and fleet.installed_racks.dtype == "int64"
    assert fleet.allocated_racks.dtype == "float64"  # a fraction: stays float
    assert fleet.attrs["units"]["installed_racks"] == "racks"
    assert r.kpi("npv_cost_usd") == pytest.approx(r.objective_usd)
    bom = r.bom
    assert {"installed", "new", "removed"} <= set(bom.columns)
    assert bom.installed.dtype == "int64"
    back = dcplan.load_plan(r.save(tmp_path / "r.plan"))
    assert back.objective_usd == r.objective_usd and back.fleet.equals(fleet)
    fig = r.plot_racks()
    assert fig.axes and fig.axes[0].get_title()
    with pytest.raises(AttributeError, match="no chart"):
        r.plot_nothing  # noqa: B018


@pytest.mark.slow
def test_bom_new_is_the_increase_of_installed(minimal_plan):
    """Recomputed from the table itself: new - removed = installed - installed before."""
    bom = minimal_plan[0].tables["bom"]
    periods = list(dict.fromkeys(minimal_plan[0].tables["power"].period))
    key = ["site", "category", "item", "catalog_id"]
    for _, sub in bom.groupby(key):
        prev = 0.0
        by_p = dict(zip(sub.period, sub.itertuples(), strict=True))
        for p in periods:
            row = by_p.get(p)
            if row is None:
                continue
            assert row.new - row.removed == pytest.approx(row.installed - prev)
            prev = row.installed
    racks = bom[bom.category == "racks"]
    fleet = minimal_plan[0].tables["fleet"]
    merged = racks.merge(fleet, left_on=["site", "period", "catalog_id"],
                         right_on=["site", "period", "rack"])
    assert (merged.installed == merged.installed_racks).all()


@pytest.mark.slow
def test_solver_progress_reports_the_search(tmp_path):
    from dcplan.case import load_case
    from dcplan.planner import solve_case

    seen = []
    case = load_case(REPO / "examples" / "kyber.yaml")
    result = solve_case(case, explain=False, size=False, gap=1e-4, time_limit_s=20,
                  on_solve=seen.append)
    assert seen, "HiGHS reported no progress"
    with_plan = [p for p in seen if p.incumbent_usd is not None]
    assert with_plan
    last = with_plan[-1]
    assert last.bound_usd is None or last.bound_usd <= last.incumbent_usd * (1 + 1e-9)
    assert last.incumbent_usd == pytest.approx(result.objective_usd, rel=1e-3)
    assert all(b.elapsed_s >= a.elapsed_s for a, b in zip(seen, seen[1:], strict=False))


# --- outputs as a set --------------------------------------------------------------------


def test_replace_folder_keeps_foreign_files(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(InputError, match="holds files dcplan did not write"):
        with replace_folder(mine) as tmp:
            (tmp / "a.csv").write_text("x")
    assert (mine / "notes.txt").read_text() == "keep me"
    assert not [p for p in tmp_path.iterdir() if TMP_TAG in p.name]


def test_replace_folder_is_all_or_nothing(tmp_path):
    out = tmp_path / "out"
    with replace_folder(out) as tmp:
        (tmp / "old.csv").write_text("old")
    with pytest.raises(RuntimeError), replace_folder(out) as tmp:
        (tmp / "new.csv").write_text("new")
        raise RuntimeError("killed half way")
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "old.csv"]
    with replace_folder(out) as tmp:
        (tmp / "new.csv").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "new.csv"]
    assert not [p for p in tmp_path.iterdir() if TMP_TAG in p.name]


def _run_plan(out: Path, extra: list[str], scenario: Path = MINIMAL) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dcplan", "plan", str(scenario), "-q",
                             "-o", str(out / "csv"), "--png-dir", str(out / "png"),
                             "--save", str(out / "a.plan"), *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _state(folder: Path) -> str:
    """'absent', 'complete' or 'partial' for a CSV output folder."""
    if not folder.exists():
        return "absent"
    names = {p.name for p in folder.iterdir()}
    return "complete" if names == {*(f"{t}.csv" for t in TABLES), MARKER} else "partial"


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killed_runs_leave_old_or_new_outputs_and_no_temporaries(tmp_path, sig, minimal_linear):
    """Kill `dcplan plan -o DIR` at several points: DIR is the complete old or new
    folder (or absent), never a mix; no temporary file stays (SIGTERM removes its own;
    after SIGKILL the next run removes them). The points are spread over the whole run
    (loading, solving, writing) as fractions of the first run's own duration, the two
    signals taking turns over them (SIGTERM at the first, third, fifth and seventh,
    SIGKILL at the others, so that together they meet every point); the plan is the
    minimal example with the linear fabric (a few seconds, most of it writing)."""
    out = tmp_path / "run"
    out.mkdir()
    t0 = time.monotonic()
    first = _run_plan(out, [], minimal_linear)
    assert first.wait(timeout=300) == 0
    whole_s = time.monotonic() - t0
    stamp = (out / "csv" / "kpis.csv").stat().st_mtime_ns
    points = (0.1, 0.3, 0.5, 0.65, 0.8, 0.9, 0.97)
    for frac in points[::2] if sig == signal.SIGTERM else points[1::2]:
        proc = _run_plan(out, [], minimal_linear)
        time.sleep(frac * whole_s)
        proc.send_signal(sig)
        proc.wait(timeout=120)
        assert _state(out / "csv") in ("complete", "absent"), frac
        if sig == signal.SIGTERM:
            assert not [p for p in out.iterdir() if TMP_TAG in p.name], frac
    last = _run_plan(out, [], minimal_linear)
    assert last.wait(timeout=300) == 0
    assert _state(out / "csv") == "complete"
    assert (out / "csv" / "kpis.csv").stat().st_mtime_ns >= stamp
    assert not [p for p in out.rglob("*") if TMP_TAG in p.name]
    assert load_result(out / "a.plan").status.has_solution


# --- command-line conventions ------------------------------------------------------------


def _commands():
    """Every command path of the CLI (e.g. ['perf', 'calibrate'])."""
    import typer.main

    click_app = typer.main.get_command(app)

    def walk(cmd, prefix):
        yield prefix
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, [*prefix, name])

    return [p for p in walk(click_app, []) if p]


@pytest.mark.slow
@pytest.mark.parametrize("path", _commands(), ids=" ".join)
def test_every_command_help_is_readable(path):
    res = runner.invoke(app, [*path, "--help"])
    assert res.exit_code == 0, res.output
    text = res.stdout
    assert "Exit codes:" in text, path
    for raw in ("<list[Path]>", "<float range>", "<int range>", "<str>", "{"):
        assert raw not in text, (path, raw)


def test_solver_defaults_in_help_come_from_their_one_home():
    from dcplan.scenario import SolverOptions

    text = runner.invoke(app, ["plan", "--help"]).stdout
    assert f"else {SolverOptions().time_limit_s:g})" in text
    assert "--install-completion" in runner.invoke(app, ["--help"]).stdout


def test_sigterm_handler_is_installed():
    code = ("import signal, dcplan.cli as c; signal.signal = lambda s, h: print(s, h.__name__);"
            " c.app = lambda: None; c.main()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env={**os.environ})
    assert f"{int(signal.SIGTERM)} _on_sigterm" in out.stdout, out


@pytest.mark.slow
def test_json_and_comparison_workbook_carry_cooling_network_costs_and_bom(saved, tmp_path):
    path, solved, _scenario = saved
    for key in ("cooling", "network", "costs", "bill_of_materials"):
        assert solved[key], key
    assert {"installed", "new"} <= set(solved["bill_of_materials"][0])
    out = tmp_path / "cmp.xlsx"
    res = runner.invoke(app, ["compare", str(path), str(path), "-q", "--xlsx", str(out)])
    assert res.exit_code == 0, res.output
    import openpyxl

    names = openpyxl.load_workbook(out, read_only=True).sheetnames
    assert {"Cooling", "Network", "Bill of materials"} <= set(names)


def test_kpi_names_are_the_kpis_of_a_plan(minimal_plan):
    """The list the sweep checks its outputs against is what a plan's kpis table holds."""
    from dcplan.planner.tables import KPI_NAMES

    assert list(minimal_plan[0].tables["kpis"].kpi) == list(KPI_NAMES)
