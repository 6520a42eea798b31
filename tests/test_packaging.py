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


#: Import names whose distribution (as pip names it) is spelled differently.
_DISTRIBUTION_OF = {"yaml": "pyyaml", "SALib": "salib", "distributed": "dask",
                    "llama_models": "llama-models", "tiktoken_ext": "tiktoken"}


def _runtime_imports() -> set[str]:
    """Top-level third-party modules that dcplan/ imports (deferred imports included)."""
    import ast

    found: set[str] = set()
    for path in (REPO / "dcplan").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m != "dcplan"}


def _declared() -> set[str]:
    import re
    import tomllib

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return {re.split(r"[\[<>=!~ ;]", d, maxsplit=1)[0].lower().replace("_", "-")
            for d in deps}


@pytest.mark.slow
def test_every_runtime_import_is_a_declared_dependency():
    # A package pulled in only by the test extra (pyarrow once was) passes CI and fails a
    # user's fresh install: each module dcplan imports must be declared directly.
    declared = _declared()
    missing = sorted(m for m in _runtime_imports()
                     if _DISTRIBUTION_OF.get(m, m).lower().replace("_", "-") not in declared)
    assert not missing, f"imported by dcplan/ but not in [project] dependencies: {missing}"


@pytest.mark.slow
def test_the_import_scan_finds_what_it_checks_and_the_parquet_engine_is_declared():
    assert {"numpy", "pandas", "highspy", "rich"} <= _runtime_imports()
    # pandas imports its Parquet engine itself (saved plans need it), so the scan cannot
    # see it: a fresh install without it could not --save or read a plan.
    assert "pyarrow" in _declared()
