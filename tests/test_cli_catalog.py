"""CLI: catalog list/show, validate, --version; exit codes and messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dcplan import __version__
from dcplan.cli import app
from dcplan.schema import KINDS

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]


def run(*args, env=None):
    return runner.invoke(app, list(args), env=env)


def test_version():
    result = run("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"dcplan {__version__}"


def test_list_kinds_summary(min_catalog_dir):
    result = run("--catalog-dir", str(min_catalog_dir), "catalog", "list")
    assert result.exit_code == 0, result.output
    assert "racks" in result.stdout and "workloads" in result.stdout


def test_list_json_has_all_fields(min_catalog_dir):
    result = run("--catalog-dir", str(min_catalog_dir), "catalog", "list", "racks", "--json")
    assert result.exit_code == 0, result.output
    (rack,) = json.loads(result.stdout)
    assert rack["id"] == "test_rack"
    assert rack["it_power_max_kw"] == 10.0
    assert rack["source"] == "test fixture"


def test_catalog_dir_from_environment(min_catalog_dir):
    result = run("catalog", "list", "racks", "--json",
                 env={"DCPLAN_CATALOG_DIR": str(min_catalog_dir)})
    assert result.exit_code == 0, result.output
    assert [r["id"] for r in json.loads(result.stdout)] == ["test_rack"]


def test_show(min_catalog_dir):
    result = run("--catalog-dir", str(min_catalog_dir), "catalog", "show", "test_gpu")
    assert result.exit_code == 0, result.output
    assert "hbm_tb_per_s" in result.stdout and "4.0" in result.stdout
    assert "accelerators.yaml:2" in result.stdout


def test_show_unknown_id_suggests(min_catalog_dir):
    result = run("--catalog-dir", str(min_catalog_dir), "catalog", "show", "test_rak")
    assert result.exit_code == 1
    assert "id 'test_rak' (did you mean 'test_rack'?)" in result.stderr
    assert "Traceback" not in result.output


def test_unknown_kind_is_usage_error(min_catalog_dir):
    result = run("--catalog-dir", str(min_catalog_dir), "catalog", "list", "rackz")
    assert result.exit_code == 2
    assert "did you mean 'racks'" in result.output


def test_validate_ok(min_catalog_dir):
    result = run("validate", str(min_catalog_dir))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ok:")


def test_validate_names_all_three_problems(min_catalog_dir, fixtures):
    broken = fixtures / "broken" / "racks.three_problems.yaml"
    result = run("validate", str(min_catalog_dir), str(broken))
    assert result.exit_code == 1
    err = result.stderr
    assert "3 problems found" in err
    for entry, field in [("rack_typo", "it_power_max_kww"), ("rack_negative", "it_power_max_kw"),
                         ("rack_unknown_gpu", "accelerator")]:
        line = next(ln for ln in err.splitlines() if f"entry '{entry}'" in ln)
        assert "racks.three_problems.yaml:" in line
        assert f"field '{field}'" in line
    assert "Traceback" not in result.output


def test_validate_single_file_against_catalog_in_use(min_catalog_dir, fixtures):
    broken = fixtures / "broken" / "racks.unknown_reference.yaml"
    result = run("--catalog-dir", str(min_catalog_dir), "validate", str(broken))
    assert result.exit_code == 1
    assert "unknown accelerator 'test_gpuu' (did you mean 'test_gpu'?)" in result.stderr


def test_bad_catalog_dir_is_clear(tmp_path):
    result = run("--catalog-dir", str(tmp_path / "nope"), "catalog", "list", "racks")
    assert result.exit_code == 1
    assert "catalog folder not found" in result.stderr


def test_debug_shows_traceback(tmp_path):
    result = run("--debug", "--catalog-dir", str(tmp_path / "nope"), "catalog", "list", "racks")
    assert result.exit_code == 1
    assert "Traceback" in result.output


def test_missing_path_is_bad_input(tmp_path):
    result = run("validate", str(tmp_path / "missing.yaml"))
    assert result.exit_code == 1
    assert "missing.yaml: file or folder not found" in result.stderr


@pytest.mark.parametrize("args", [["catalog", "list", "racks"], ["catalog", "show", "x"]])
def test_broken_catalog_fails_every_command_cleanly(tmp_path, min_catalog_dir, fixtures, args):
    for f in min_catalog_dir.iterdir():
        (tmp_path / f.name).write_text(f.read_text())
    (tmp_path / "racks.yaml").write_text(
        (fixtures / "broken" / "racks.out_of_range.yaml").read_text())
    result = run("--catalog-dir", str(tmp_path), *args)
    assert result.exit_code == 1
    assert "liquid_heat_frac" in result.stderr


# --- robustness: validate by content, sites, exit codes, help ---------------------------


@pytest.mark.slow
def test_validate_classifies_folders_by_content():
    """examples/ is a folder of scenarios (and a forecast), not of sites."""
    result = run("validate", "catalogs", "sites", "examples")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "grid_mw" not in result.output
    assert "scenarios in examples" in out
    assert "forecast in examples/forecasts" in out
    assert "7 sites in sites" in out
    assert "measurement rows in catalogs/measurements/mlperf_inference.csv" in out
    assert "4 performance calibrations in catalogs/perf_calibration_alternatives" in out


def test_validate_checks_calibration_files_by_their_kind(tmp_path):
    good = ROOT / "catalogs" / "perf_calibration_alternatives" / "start_seed_2.yaml"
    (tmp_path / "fit_a.yaml").write_text(good.read_text())
    (tmp_path / "fit_b.yaml").write_text(good.read_text().replace(
        "physics:", "phisics: {}\nphysics:", 1))
    result = run("validate", str(tmp_path))
    assert result.exit_code == 1, result.output
    assert "fit_b.yaml" in result.stderr and "field 'phisics'" in result.stderr
    assert "did you mean 'physics'" in result.stderr
    assert "fit_a.yaml" not in result.stderr
    assert run("validate", str(tmp_path / "fit_a.yaml")).exit_code == 0
    (tmp_path / "listed.yaml").write_text("- a\n- b\n")       # not a mapping at all
    listed = run("validate", str(tmp_path / "listed.yaml"))
    assert listed.exit_code == 1 and "cannot tell what this file is" in listed.stderr
    assert "kind: dcplan_perf_calibration" in listed.stderr


def test_validate_measurement_csv_and_forecast_files():
    result = run("validate", "catalogs/measurements/mlperf_inference.csv",
                 "examples/forecasts/korea_provider.yaml", "catalogs/measurements")
    assert result.exit_code == 0, result.output
    assert "measurement rows in catalogs/measurements/mlperf_inference.csv" in result.stdout
    assert "forecast examples/forecasts/korea_provider.yaml" in result.stdout


def test_validate_bad_forecast(tmp_path):
    f = tmp_path / "fc.yaml"
    f.write_text("unit: tokens_per_month\ncases:\n  base:\n    chat: {2026: -1.0e12, 2027: x}\n"
                 "    chatt: {2026: 1}\n")
    result = run("validate", str(f))
    assert result.exit_code == 1
    err = result.stderr
    assert "cases.base.chat.2026" in err and "number >= 0" in err
    assert "cases.base.chat.2027" in err
    assert "unknown workload id 'chatt'" in err
    assert f"{f.name}:4" in err


def test_validate_empty_folder_is_an_error(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing here")
    result = run("validate", str(tmp_path))
    assert result.exit_code == 1
    assert "nothing to validate" in result.stderr
    assert "ok:" not in result.stdout


def test_validate_missing_path_exits_1(tmp_path):
    result = run("validate", str(tmp_path / "nope.yaml"))
    assert result.exit_code == 1
    assert "not found" in result.stderr


@pytest.mark.slow
def test_list_and_show_sites():
    result = run("catalog", "list", "sites")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "seoul_metro" in out and "honam_haenam" in out
    assert "2026: 9.9, 2028: 30, 2031: 45" in out
    head = " ".join(out.split("\n\u2500")[0].split())  # headers may wrap over lines
    assert "positions" in head and "facility" in head and "water" in head
    data = json.loads(run("catalog", "list", "sites", "--json").stdout)
    assert {d["id"] for d in data} >= {"seoul_metro", "honam_haenam"}
    shown = run("catalog", "show", "seoul_metro")
    assert shown.exit_code == 0, shown.output
    assert "sites/seoul_metro.yaml" in shown.stdout
    assert "rack_positions" in shown.stdout and "grid_mw" in shown.stdout
    summary = run("catalog", "list")
    assert "sites" in summary.stdout


def test_unknown_catalog_kind_suggests_sites():
    result = run("catalog", "list", "site")
    assert result.exit_code == 2
    assert "did you mean 'sites'" in result.output


def test_show_unknown_id_prefers_prefix_matches():
    result = run("catalog", "show", "gb200")
    assert result.exit_code == 1
    assert "gb200_nvl72" in result.stderr


@pytest.mark.parametrize("args", [["network", "--help"], ["--help"], ["perf", "--help"],
                                  ["validate", "--help"]])
def test_help_shows_flags_without_value(args):
    result = run(*args)
    assert result.exit_code == 0
    assert "<bool>" not in result.stdout
    assert "--help" in result.stdout


@pytest.mark.parametrize("kind", ["tokenizers", "api_prices", "staffing", "salaries", "software"])
@pytest.mark.slow
def test_list_reference_kinds(kind):
    result = run("catalog", "list", kind)
    assert result.exit_code == 0, result.output
    rows = json.loads(run("catalog", "list", kind, "--json").stdout)
    assert rows and all(r["source"] and r["as_of"] for r in rows)
    for r in rows:
        assert r["id"] in result.stdout


def test_list_api_prices_shows_model_mapping():
    result = run("catalog", "list", "api_prices")
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("openai_o1 "))
    assert "deepseek_r1" in line and "[" not in line  # lists shown as plain ids


def test_catalog_without_reference_kinds_still_loads(tmp_path, fixtures):
    # A catalog folder of one's own may leave the reference kinds out.
    result = run("--catalog-dir", str(fixtures / "facility" / "catalog"), "tokens", "list")
    assert result.exit_code == 0, result.output
    result = run("--catalog-dir", str(fixtures / "facility" / "catalog"), "catalog", "list")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.slow
def test_every_catalog_kind_lists(kind):
    from dcplan.cli.catalog_cmd import LIST_COLUMNS

    assert kind in LIST_COLUMNS
    result = run("catalog", "list", kind)
    assert result.exit_code == 0, result.output


def test_validate_checks_the_yaml_files_beside_the_measurement_csvs():
    """length_distributions.yaml and mlperf_power_systems.yaml go through their loaders."""
    result = run("validate", "catalogs/measurements")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "benchmark length distributions catalogs/measurements/length_distributions.yaml" in out
    assert ("1 MLPerf power system (2 runs) in catalogs/measurements/mlperf_power_systems.yaml"
            in out)


def test_validate_names_every_problem_of_a_broken_length_distributions_file(tmp_path):
    src = (ROOT / "catalogs" / "measurements" / "length_distributions.yaml").read_text()
    bad = (src.replace("kind: uniform, min_frac: 0.8", "kind: uniform, min_frac: 1.8")
           .replace("prompts_per_client: 10", "prompts_per_client: -2")
           .replace("llama2_70b: {kind: lognormal,", "llama2_70bb: {kind: lognormall,")
           .replace("phase_rows:", "phase_row:\n  x: 1\nphase_rows:"))
    folder = tmp_path / "measurements"
    folder.mkdir()
    (folder / "length_distributions.yaml").write_text(bad)
    result = run("validate", str(folder))
    assert result.exit_code == 1
    err = result.stderr
    assert "ok:" not in result.stdout and "cannot tell what this file is" not in err
    assert "field 'serving_rows.length_distribution'" in err and "min_frac 1.8" in err
    assert "field 'serving_rows.prompts_per_client'" in err and "-2 is not an integer" in err
    assert "unknown model id 'llama2_70bb'; did you mean 'llama2_70b'?" in err
    assert "kind 'lognormall' is not known" in err
    assert "field 'phase_row'" in err and "did you mean 'phase_rows'?" in err
    # malformed YAML: named with its line, not taken for some other kind of file
    (folder / "length_distributions.yaml").write_text("phase_rows: [1\n")
    result = run("validate", str(folder / "length_distributions.yaml"))
    assert result.exit_code == 1
    assert "length_distributions.yaml:2: malformed YAML" in result.stderr


def test_validate_names_problems_of_a_broken_power_systems_file(tmp_path):
    src = (ROOT / "catalogs" / "measurements" / "mlperf_power_systems.yaml").read_text()
    bad = (src.replace("psu_efficiency_frac: 0.95", "psu_efficiency_frac: 1.95")
           .replace("wall_preload_w: 2524.40", "wall_preload_w: 7000")
           .replace("samples: 2500", "sampels: 2500"))
    f = tmp_path / "mlperf_power_systems.yaml"
    f.write_text(bad)
    result = run("validate", str(f))
    assert result.exit_code == 1
    err = result.stderr
    assert "field 'psu_efficiency_frac': 1.95 is not a number > 0 and <= 1" in err
    assert "field 'runs.llama2-70b-99/Offline.wall_w'" in err and "no GPU share" in err
    assert "field 'runs.llama2-70b-99/Server.sampels'" in err and "'samples'" in err
