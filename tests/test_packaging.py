"""The shipped data is found from an editable install and from a built wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from dcplan.paths import data_dir, shipped_dir

REPO = Path(__file__).resolve().parent.parent


def test_source_tree_finds_shipped_folders():
    assert shipped_dir("catalogs") == REPO / "catalogs"
    assert shipped_dir("sites") == REPO / "sites"


def test_override_and_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("DCPLAN_CATALOG_DIR", str(tmp_path / "env"))
    assert data_dir("catalogs") == tmp_path / "env"
    assert data_dir("catalogs", tmp_path / "cli") == tmp_path / "cli"
    monkeypatch.delenv("DCPLAN_CATALOG_DIR")
    assert data_dir("catalogs") == shipped_dir("catalogs")


@pytest.mark.slow
def test_wheel_carries_data_and_finds_it(tmp_path):
    pytest.importorskip("hatchling")
    out = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(REPO)],
        check=True, capture_output=True, text=True,
    )
    (wheel,) = out.glob("dcplan-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        zf.extractall(site)
    assert "dcplan/_data/catalogs/racks.yaml" in names
    assert any(n.startswith("dcplan/_data/sites/") for n in names)
    # Imported from the unpacked wheel (outside the repository), dcplan finds its data inside.
    env = {k: v for k, v in os.environ.items() if not k.startswith("DCPLAN_")}
    env["PYTHONPATH"] = str(site)
    code = ("import dcplan.paths as p; from dcplan.catalog import load_catalog; "
            "print(p.shipped_dir('catalogs')); print(len(load_catalog().racks))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=True)
    where, racks = done.stdout.split()
    assert Path(where) == site / "dcplan" / "_data" / "catalogs"
    assert int(racks) >= 8
