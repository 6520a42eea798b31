"""One table of performance parameters: dcplan/perf/parameters.csv.

The parameter classes, their bounds and the table of docs/perf.md are built from it,
and the defaults file gives a value for each of its rows.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest
from scripts import load_script

from dcplan.paths import data_dir
from dcplan.perf import params
from dcplan.yamlio import read_yaml, strip_lines

ROOT = Path(__file__).resolve().parent.parent
gen = load_script(ROOT / "docs" / "gen_perf_params.py", "gen_perf_params")


def test_docs_table_is_the_csv():
    text = gen.DOC.read_text(encoding="utf-8")
    assert gen.render(text) == text, \
        "docs/perf.md is out of date; run python docs/gen_perf_params.py"


@pytest.mark.parametrize("cls, level, bounds", [
    (params.HardwareParams, "hardware", params.PARAM_BOUNDS),
    (params.PhysicsParams, "physics", params.PHYSICS_BOUNDS)])
def test_classes_and_bounds_are_the_csv(cls, level, bounds):
    rows = [p for p in params.PARAMETERS if p.level == level]
    assert [f.name for f in fields(cls)] == [p.name for p in rows]
    assert bounds == {p.name: (p.lo, p.hi) for p in rows}
    assert cls.__module__ == "dcplan.perf.params" and cls.__qualname__ == cls.__name__
    for p in rows:
        assert p.name in cls.__doc__ and p.unit and p.description and p.defaults_in


def test_defaults_file_sets_every_row():
    raw = strip_lines(read_yaml(data_dir("catalogs") / "perf_defaults.yaml"))
    assert list(raw["default"]) == [p.name for p in params.PARAMETERS if p.level == "hardware"]
    assert list(raw["physics"]) == [p.name for p in params.PARAMETERS if p.level == "physics"]


def test_bad_table_is_refused(tmp_path):
    good = params.PARAMETERS_FILE.read_text(encoding="utf-8")
    path = tmp_path / "parameters.csv"
    path.write_text(good, encoding="utf-8")
    assert params.read_parameter_table(path) == params.PARAMETERS
    lines = good.splitlines()
    for bad in (["name,level"] + lines[1:], lines + [lines[1]],
                lines + ["x,firmware,-,0,1,here,what,"], lines + ["x,physics,-,2,1,here,what,"]):
        path.write_text("\n".join(bad) + "\n", encoding="utf-8")
        with pytest.raises(ValueError):
            params.read_parameter_table(path)


def test_gemm_limit_is_the_table_bound():
    assert params.GEMM_EFF_MAX_FRAC == params.PARAM_BOUNDS["compute_eff_frac"][1] == 0.8
