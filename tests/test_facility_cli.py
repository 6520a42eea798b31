"""CLI: dcplan network and dcplan cooling (exit codes and messages)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dcplan.cli import app

FX = Path(__file__).parent / "fixtures" / "facility"
runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args))


def test_network_shipped():
    r = run("network", "--rack", "gb200_nvl72", "--racks", "8", "--optics", "pluggable_800g")
    assert r.exit_code == 0, r.output
    assert "576 accelerators" in r.output and "bisection" in r.output


def test_network_json_and_graphml(tmp_path):
    out = tmp_path / "g.graphml"
    r = run("--catalog-dir", str(FX / "catalog"), "network", "--rack", "fx_air", "--racks",
            "8", "--graphml", str(out), "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["backend_switches"] == {"leaf": 4, "spine": 2, "core": 0}
    assert out.exists() and out.read_text().startswith("<?xml")


def test_network_cpo_vs_pluggable_json():
    def kw(optic):
        r = run("network", "--rack", "gb200_nvl72", "--racks", "16", "--optics", optic,
                "--json")
        assert r.exit_code == 0, r.output
        return json.loads(r.output)

    plug, cpo = kw("pluggable_800g"), kw("cpo")
    assert cpo["optics_kw"] < plug["optics_kw"]
    assert sum(cpo["links"].values()) == sum(plug["links"].values())


def test_network_bad_ids():
    r = run("network", "--rack", "gb200_nvl7", "--racks", "8")
    assert r.exit_code == 1
    assert "did you mean 'gb200_nvl72'" in r.output
    r = run("network", "--rack", "gb200_nvl72", "--racks", "8", "--optics", "cpoo")
    assert r.exit_code == 1 and "did you mean 'cpo'" in r.output
    r = run("network", "--rack", "gb200_nvl72", "--racks", "8", "--oversubscription", "0.5")
    assert r.exit_code == 2 and "oversubscription" in r.output


def test_cooling_shipped_seoul():
    r = run("cooling", "--rack", "gb200_nvl72", "--racks", "64", "--site", "seoul_metro")
    assert r.exit_code == 0, r.output
    assert "PUE" in r.output and "CDUs:" in r.output
    r = run("cooling", "--rack", "gb200_nvl72", "--racks", "64", "--site", "seoul_metro",
            "--json", "--redundancy", "2")
    data = json.loads(r.output)
    assert data["cdu_redundancy"] == 2
    assert abs(data["heat_removed_kw"] - data["it_kw"] - data["network_kw"]) < 1e-6
    assert 1.0 < data["pue_annual"] < data["pue_peak"]


@pytest.mark.slow
def test_cooling_impossible_requests():
    base = ("--catalog-dir", str(FX / "catalog"), "--sites-dir", str(FX / "sites"), "cooling")
    r = run(*base, "--rack", "fx_kyber", "--racks", "1", "--site", "small_air")
    assert r.exit_code == 1
    assert "600 kW" in r.output and "40 kW" in r.output and "Traceback" not in r.output
    r = run("cooling", "--rack", "rubin_ultra_nvl576", "--racks", "2", "--site", "seoul_metro")
    assert r.exit_code == 1 and "densest rack" in r.output
    r = run("cooling", "--rack", "gb200_nvl72", "--racks", "2", "--site", "seoul")
    assert r.exit_code == 1 and "did you mean 'seoul_metro'" in r.output
    r = run("cooling", "--rack", "gb200_nvl72", "--racks", "2", "--site", "seoul_metro",
            "--supply-water-c", "45")
    assert r.exit_code == 1 and "supply-water-c" in r.output


def test_network_b300_json_uplinks_follow_the_used_downlinks():
    r = run("network", "--rack", "hgx_b300", "--racks", "8", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["links"]["leaf_spine"] <= data["links"]["nic_leaf"] == 256
    ends = {c["tier"]: (c["switch_end"], c["far_end"]) for c in data["link_classes"]
            if c["medium"] == "optical"}
    assert ends["nic_leaf"] == ("pluggable_1600g", "pluggable_800g_dr4")
    assert data["network_rack_positions"] >= 1


def test_network_refuses_more_racks_than_any_site_holds():
    r = run("network", "--rack", "gb200_nvl72", "--racks", "1000000")
    assert r.exit_code == 1
    assert "no site can hold them" in r.stderr and "Traceback" not in r.output


def test_cooling_reports_redundancy_and_water():
    r = run("cooling", "--rack", "gb200_nvl72", "--racks", "16", "--site", "seoul_metro",
            "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    red = data["redundancy"]
    assert red["topology"] == "2N" and red["ups"]["systems"] == 2
    assert 0 < red["usable_it_frac"] < 1
    assert data["water"]["annual_m3"] == 0  # Seoul allows no evaporative cooling
    assert data["positions"]["total"] >= 16
    text = run("cooling", "--rack", "gb200_nvl72", "--racks", "16", "--site", "seoul_metro")
    assert "power redundancy 2N (Uptime Tier IV)" in text.stdout
    assert "WUE" in text.stdout
