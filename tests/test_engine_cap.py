"""A scenario's engine cap (``serving.max_batch_per_rank``) is what a plan's racks serve at."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dcplan.case import load_case
from dcplan.cli import app
from dcplan.errors import InputError

REPO = Path(__file__).resolve().parent.parent
CAP = 16


def _capped(tmp_path: Path, value, base: Path) -> Path:
    path = tmp_path / "capped.yaml"
    path.write_text(f"extends: {base}\nserving:\n  max_batch_per_rank: {value}\n",
                    encoding="utf-8")
    return path


def test_the_cap_reaches_the_models_defaults_and_the_digest(tmp_path, minimal_linear):
    base = load_case(minimal_linear)
    file_cap = base.perf_defaults.serving.max_batch_per_rank
    assert base.model_defaults is base.perf_defaults   # no cap set: the file's defaults
    capped = load_case(_capped(tmp_path, CAP, minimal_linear))
    assert capped.model_defaults.serving.max_batch_per_rank == CAP
    assert capped.perf_defaults.serving.max_batch_per_rank == file_cap   # file untouched
    assert capped.digest != base.digest
    # a sweep or comparison changes it like any scenario field
    changed = base.with_changes({"serving.max_batch_per_rank": CAP})
    assert changed.model_defaults.serving.max_batch_per_rank == CAP
    assert changed.digest == capped.digest


@pytest.mark.slow
def test_plan_goodput_is_perfs_answer_at_the_same_cap(tmp_path, minimal_linear):
    """Each rack's goodput in the plan's inputs is `dcplan perf --max-batch 16`'s answer
    to the float; the cap binds on at least one rack and raises none."""
    from dcplan.planner import prepare_inputs

    plain = prepare_inputs(load_case(minimal_linear)).perf
    case = load_case(_capped(tmp_path, CAP, minimal_linear))
    capped = prepare_inputs(case).perf
    assert set(capped) == set(plain)
    for (r, w), pf in capped.items():
        assert pf.goodput_tokens_per_s <= plain[r, w].goodput_tokens_per_s * (1 + 1e-12)
    assert any(pf.goodput_tokens_per_s < 0.9 * plain[k].goodput_tokens_per_s
               for k, pf in capped.items())
    (r, w), pf = sorted(capped.items())[0]
    model = case.catalog.get("workloads", w).model
    done = subprocess.run([sys.executable, "-m", "dcplan", "perf", "--rack", r, "--model", model,
                           "--workload", w, "--max-batch", str(CAP), "--json"],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["goodput_tokens_per_s"] == pf.goodput_tokens_per_s


@pytest.mark.slow
def test_a_capped_plan_says_so(tmp_path, minimal_linear):
    # 16 per rank leaves the minimal example's grid short of racks: the plan is
    # accepted with its shortfall, which is not what this checks
    done = CliRunner().invoke(app, ["plan", str(_capped(tmp_path, CAP, minimal_linear)),
                                    "--json", "-q", "--allow-unserved"])
    assert done.exit_code == 0, done.output
    notes = json.loads(done.stdout)["notes"]
    assert any(n.startswith(f"serving.max_batch_per_rank {CAP}: every instance runs at most")
               for n in notes), notes


@pytest.mark.parametrize("value, words", [
    (0, "must be >= 1 (got 0)"), ("true", "expected a number, got true"),
    (2_000_000, "must be <= 1000000"), (1.5, "")])
def test_a_bad_cap_names_file_line_and_field(tmp_path, minimal_linear, value, words):
    path = _capped(tmp_path, value, minimal_linear)
    with pytest.raises(InputError) as err:
        load_case(path)
    said = str(err.value)
    assert "capped.yaml:3" in said and "serving.max_batch_per_rank" in said and words in said
