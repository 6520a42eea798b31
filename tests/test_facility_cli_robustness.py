"""dcplan network / cooling: impossible requests, exit codes, readable numbers."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from dcplan.cli import app

runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args))


def test_cooling_supply_water_out_of_range_is_usage_error():
    result = run("cooling", "--rack", "gb200_nvl72", "--racks", "4", "--site", "seoul_metro",
                 "--supply-water-c", "-40")
    assert result.exit_code == 2
    assert "--supply-water-c" in result.output and "between 5 C and 70 C" in result.output


def test_cooling_more_racks_than_positions():
    result = run("cooling", "--rack", "gb200_nvl72", "--racks", "5000", "--site", "seoul_metro")
    assert result.exit_code == 1
    err = result.stderr
    assert "5,000 rack positions" in err and "has 320" in err
    assert "grid capacity (at most 45 MW)" in err


def test_cooling_over_grid_warns():
    result = run("cooling", "--rack", "gb200_nvl72", "--racks", "320", "--site", "seoul_metro",
                 "--json")
    assert result.exit_code == 0, result.output
    assert "warning:" in result.stderr and "45 MW" in result.stderr
    assert json.loads(result.stdout)["warnings"]


def test_cooling_unknown_ids_suggest_prefix_matches():
    result = run("cooling", "--rack", "gb200", "--racks", "3", "--site", "seoul")
    assert result.exit_code == 1
    assert "did you mean 'gb200_nvl72'" in result.stderr
    assert "did you mean 'seoul_metro'" in result.stderr


def test_network_range_errors_are_usage_errors():
    base = ["network", "--rack", "gb200_nvl72"]
    for extra in (["--racks", "0"], ["--racks", "4", "--oversubscription", "0"]):
        result = run(*base, *extra)
        assert result.exit_code == 2, (extra, result.output)


def test_network_slow_switch_names_port_speed():
    result = run("network", "--rack", "gb200_nvl72", "--racks", "64", "--switch", "nvidia_sn2201")
    assert result.exit_code == 1
    assert "1 Gb/s ports" in result.stderr and "400 Gb/s" in result.stderr
    assert "tiers" not in result.stderr


def test_network_thousand_separators_and_transceivers_by_end():
    result = run("network", "--rack", "gb200_nvl72", "--racks", "64", "--optics", "lpo_800g")
    assert result.exit_code == 0, result.output
    out = result.stdout
    # every whole number of 1,000 or more has separators (14,172 modules in all)
    assert not re.search(r"(?<![\w,.])\d{4,}(?![\w,.])", out), out
    assert "14,172" in out
    assert "back-end NIC ends" in out and "back-end switch ends" in out


def test_unknown_switch_id_uses_the_singular():
    result = run("network", "--rack", "gb200_nvl72", "--racks", "8", "--switch", "nvidia_q34")
    assert result.exit_code == 1
    assert "unknown switch id 'nvidia_q34'" in result.stderr
    assert "unknown switche" not in result.stderr


def test_network_infinite_oversubscription_is_a_usage_error():
    r = run("network", "--rack", "gb200_nvl72", "--racks", "4", "--oversubscription", "inf")
    assert r.exit_code == 2 and "finite ratio" in r.output


def test_links_across_rows_have_a_length():
    """17 HGX racks: a leaf serves racks of two rows; those links run the tray length
    (leaf_to_spine_m), never 'inf', and --json works."""
    import json
    import math

    r = run("network", "--rack", "hgx_h100", "--racks", "17", "--json")
    assert r.exit_code == 0, r.output
    classes = json.loads(r.output)["link_classes"]
    assert classes and all(math.isfinite(c["max_length_m"]) for c in classes)
    assert "inf" not in run("network", "--rack", "hgx_h100", "--racks", "17").output
