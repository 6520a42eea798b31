"""A fresh install without the test extra can plan, save, show, export and compare.

The filed defect: pyarrow came only with the test extra, so CI passed while a user's
first ``dcplan plan ... --save`` on a fresh install crashed after the solve. This test
makes a virtual environment with ``pip install -e .`` only (or reuses the one
``.ci/run`` made for the README's first command, after checking it has no test extra)
and runs the saved-plan commands with its ``dcplan``.
"""

from __future__ import annotations

import json
import os
import subprocess
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: Packages only the test extra brings; none may be in the fresh environment.
TEST_ONLY = ("pytest", "hypothesis", "aiperf")


def _python(env_dir: Path) -> Path:
    return env_dir / "bin" / "python"


def _fresh_env(tmp_path_factory) -> Path:
    given = os.environ.get("DCPLAN_FRESH_VENV")
    if given and _python(Path(given)).is_file():
        return Path(given)
    env_dir = tmp_path_factory.mktemp("fresh") / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    # --no-compile: pip compiles every installed module (pandas, scipy, matplotlib...),
    # where the commands below import a small share of them (78 against 40 s of CPU for
    # the install, +6 s for the first command to compile what it imports; one run each,
    # side by side, load 3.2-3.5 beside a two-process bench, 2026-12-07)
    done = subprocess.run([str(_python(env_dir)), "-m", "pip", "install", "-q",
                           "--no-compile", "-e", str(REPO)],
                          capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    return env_dir


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    env_dir = _fresh_env(tmp_path_factory)
    code = ("import importlib.util, sys; "
            f"print([m for m in {TEST_ONLY!r} if importlib.util.find_spec(m)])")
    out = subprocess.run([str(_python(env_dir)), "-c", code], capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]", f"not a fresh install without the test extra: {out}"
    return env_dir


def _dcplan(env_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DCPLAN_", "PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([str(env_dir / "bin" / "dcplan"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_fresh_install_saves_shows_exports_and_compares(fresh, tmp_path):
    assert (fresh / "bin" / "dcplan").is_file()
    saved = tmp_path / "minimal.plan"
    planned = _dcplan(fresh, "plan", str(REPO / "examples" / "minimal.yaml"), "-q",
                      "--json", "--save", str(saved), "-o", str(tmp_path / "tables"),
                      cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr[-3000:]
    npv = json.loads(planned.stdout)["objective_usd"]
    assert saved.is_file() and (tmp_path / "tables" / "fleet.csv").is_file()

    shown = _dcplan(fresh, "show", str(saved), "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert json.loads(shown.stdout)["objective_usd"] == npv

    exported = _dcplan(fresh, "export", str(saved), "--xlsx", str(tmp_path / "plan.xlsx"),
                       "--html", str(tmp_path / "plan.html"), "-q", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr[-3000:]
    assert (tmp_path / "plan.xlsx").stat().st_size > 0
    assert (tmp_path / "plan.html").stat().st_size > 0

    other = tmp_path / "again.plan"
    other.write_bytes(saved.read_bytes())
    compared = _dcplan(fresh, "compare", str(saved), str(other), "--json", cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr[-3000:]
    assert "Traceback" not in compared.stderr
