"""Hostile and broken input: every case is a clear input error (exit 1, file and field),
never a hang, a crash or another exception; a fuzzer mutates scenario and catalog YAML.

How fast and how small these rejections are is measured in ``bench/hostile_inputs.py``
(table in docs/planner.md), not asserted here.
"""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dcplan.case import load_case
from dcplan.cli import app
from dcplan.errors import InputError
from dcplan.planner import prepare_inputs
from dcplan.yamlio import MAX_INPUT_ENV, strip_lines

REPO = Path(__file__).resolve().parent.parent
MINIMAL = REPO / "examples" / "minimal.yaml"
CATALOGS = REPO / "catalogs"
runner = CliRunner()

BOMB = "".join(
    ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]\n']
    + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 9)])


def _scenario(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


def _extends(tmp_path: Path, body: str) -> Path:
    return _scenario(tmp_path, f"extends: {MINIMAL}\n{body}")


def _catalog_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "catalogs"
    shutil.copytree(CATALOGS, folder)
    return folder


def _hostile(tmp_path: Path, case: str) -> tuple[list[str], list[str]]:
    """(command line, words the error must contain) of one hostile input."""
    if case == "alias_bomb":
        f = _scenario(tmp_path, MINIMAL.read_text() + BOMB)
        return ["plan", str(f)], ["aliases", "expand", "s.yaml"]
    if case == "alias_bomb_in_description":
        f = _extends(tmp_path, BOMB + "description: *a8\n")
        return ["plan", str(f)], ["aliases", "expand"]
    if case == "deep_nesting":
        f = _scenario(tmp_path, "name: " + "[" * 20000 + "]" * 20000 + "\n")
        return ["plan", str(f)], ["nesting deeper", "s.yaml:1"]
    if case == "infinite_demand":
        f = _extends(tmp_path, "demand:\n  growth:\n    chat: {start: .inf, annual_growth: 0.7}\n")
        return ["plan", str(f)], ["'.inf' is not a finite number", "s.yaml:4"]
    if case == "bad_month":
        cat = _catalog_copy(tmp_path)
        text = (cat / "racks.yaml").read_text()
        (cat / "racks.yaml").write_text(re.sub(r"(?m)^(\s+first_available:) \S+",
                                               r"\1 2024-13", text, count=1))
        assert "2024-13" in (cat / "racks.yaml").read_text()
        return ["--catalog-dir", str(cat), "plan", str(MINIMAL)], [
            "racks.yaml", "first_available", "'2024-13' is not a calendar date"]
    if case == "malformed_perf_defaults":
        cat = _catalog_copy(tmp_path)
        (cat / "perf_defaults.yaml").write_text("default: [1, 2\n")
        return ["validate", str(cat)], ["perf_defaults.yaml", "malformed YAML"]
    if case == "horizon_2200":
        f = _extends(tmp_path, "periods: {start: 2026, end: 2200}\n")
        return ["plan", str(f)], ["periods", "2200", "s.yaml:2"]
    if case == "long_horizon":
        f = _extends(tmp_path, "periods: {start: 2026, end: 2090}\n")
        return ["plan", str(f)], ["periods", "at most 50 years"]
    if case == "huge_existing_fleet":
        f = _extends(tmp_path, "existing_fleet:\n  - {site: seoul_metro, rack: gb200_nvl72, "
                               "count: 1000000000000, installed: 2025}\n")
        return ["plan", str(f)], ["existing_fleet.0.count", "rack positions", "s.yaml:3"]
    if case == "huge_growth":
        f = _extends(tmp_path, "demand:\n  growth:\n    chat: {start: 1.0e20, "
                               "annual_growth: 99}\n")
        return ["plan", str(f)], ["demand.growth.chat", "beyond any forecast"]
    if case == "oversized_file":
        f = tmp_path / "big.yaml"
        with f.open("w") as fh:
            fh.write(MINIMAL.read_text())
            fh.write("# " + "x" * (11 * 1024 * 1024) + "\n")
        return ["plan", str(f)], ["big.yaml", "MB limit", MAX_INPUT_ENV]
    if case == "empty_sites_dir":
        empty = tmp_path / "nosites"
        empty.mkdir()
        return ["--sites-dir", str(empty), "plan", str(MINIMAL)], ["holds no site files"]
    raise AssertionError(case)


CASES = ["alias_bomb", "alias_bomb_in_description", "deep_nesting", "infinite_demand",
         "bad_month", "malformed_perf_defaults", "horizon_2200", "long_horizon",
         "huge_existing_fleet", "huge_growth", "oversized_file", "empty_sites_dir"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.slow
def test_hostile_input_is_a_clear_error(tmp_path, case):
    args, words = _hostile(tmp_path, case)
    commands = [args]
    if args[-2] == "plan":  # the same input through validate
        commands = [[*args[:-1], "-q", args[-1]], [*args[:-2], "validate", args[-1]]]
    for cmd in commands:
        res = runner.invoke(app, cmd)
        err = res.stderr
        assert res.exit_code == 1, (cmd, res.output)
        assert err.startswith("error: ") and "Traceback" not in err, err
        assert len(err.strip().splitlines()) <= 3, err
        for w in words:
            assert w in err, (cmd, w, err)


def test_unknown_ids_are_worded_once(tmp_path):
    """Unknown ids read 'unknown <singular> id' with the closest ids, in every command."""
    res = runner.invoke(app, ["network", "--rack", "gb200_nvl72", "--racks", "4",
                              "--optics", "cpo_800"])
    assert res.exit_code == 1
    assert "unknown optic id 'cpo_800'" in res.stderr and "did you mean" in res.stderr
    res = runner.invoke(app, ["catalog", "show", "q340"])
    assert res.exit_code == 1 and "switche" not in res.stderr


# --- fuzzing ------------------------------------------------------------------------------

SCENARIO = strip_lines(yaml.safe_load(MINIMAL.read_text()))
ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
    st.sampled_from([0.0, -0.0, 1e308, -1e308, 5e-324, 1e21, -1.0, 0.5, 2.0]),
    st.text(max_size=8), st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    st.sampled_from(["2026", "2024-13", "2027Q5", "seoul_metro", "gb200_nvl72", "nan"]))


def _paths(node, prefix=()):
    """Every path to a value of nested dicts/lists."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def mutated(draw, base):
    data = copy.deepcopy(base)
    paths = _paths(data)
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = data
        for p in path[:-1]:
            parent = parent[p]
        op = draw(st.sampled_from(["delete", "replace", "rename"]))
        try:
            if op == "delete":
                del parent[path[-1]]
            elif op == "replace":
                parent[path[-1]] = draw(ODD_VALUES)
            elif isinstance(parent, dict):
                parent[str(path[-1]) + draw(st.sampled_from(["x", "_", "s"]))] = \
                    parent.pop(path[-1])
        except (KeyError, IndexError, TypeError):
            pass
        paths = _paths(data)
    return data


def _assert_input_error(exc: InputError) -> None:
    assert exc.problems
    for p in exc.problems:
        assert p.file and p.message
        assert p.field is not None or p.line is not None or p.entry is not None, str(p)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(data=mutated(SCENARIO))
@pytest.mark.slow
def test_mutated_scenarios_load_or_fail_cleanly(tmp_path, data):
    f = tmp_path / "mutated.yaml"
    try:
        f.write_text(yaml.safe_dump(data, sort_keys=False))
    except (yaml.YAMLError, ValueError):
        return
    try:
        case = load_case(f)
    except InputError as exc:
        _assert_input_error(exc)
        return
    try:
        prepare_inputs(case)
    except InputError as exc:
        _assert_input_error(exc)


RACKS = strip_lines(yaml.safe_load((CATALOGS / "racks.yaml").read_text()))


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(data=mutated(RACKS))
@pytest.mark.slow
def test_mutated_catalogs_load_or_fail_cleanly(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("cat")
    for p in CATALOGS.glob("*.yaml"):
        shutil.copy(p, folder / p.name)
    (folder / "racks.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    try:
        case = load_case(MINIMAL, catalog_dir=folder)
    except InputError as exc:
        _assert_input_error(exc)
        return
    try:
        prepare_inputs(case)
    except InputError as exc:
        _assert_input_error(exc)


def test_allowed_values_keep_their_case(tmp_path):
    """A wrong currency is answered with the values as files write them (KRW, USD)."""
    sites = tmp_path / "sites"
    shutil.copytree(REPO / "sites", sites)
    f = sites / "seoul_metro.yaml"
    f.write_text(f.read_text().replace("currency: KRW", "currency: krw"))
    res = runner.invoke(app, ["--sites-dir", str(sites), "plan", "-q", str(MINIMAL)])
    assert res.exit_code == 1
    assert "'krw' is not allowed; input should be 'KRW' or 'USD'" in res.stderr
