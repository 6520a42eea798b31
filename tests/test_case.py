"""The resolved Case: loaded once, checked once, changed cheaply, carried by the plan."""

from __future__ import annotations

import builtins
import os
import pathlib
from collections import Counter
from pathlib import Path

import pytest

from dcplan.case import CHANGES_FILE, Case, load_case
from dcplan.errors import InputError
from dcplan.planner import solve_case
from dcplan.scenario import parse_scenario

REPO = Path(__file__).resolve().parent.parent
MINIMAL = REPO / "examples" / "minimal.yaml"
KYBER = REPO / "examples" / "kyber.yaml"


@pytest.fixture(scope="module")
def minimal() -> Case:
    return load_case(MINIMAL)


def _count_reads(monkeypatch) -> Counter:
    """Count every opening of a data file (YAML or CSV), by resolved path."""
    reads: Counter = Counter()
    real_open, real_read = builtins.open, pathlib.Path.read_text

    def counted(path) -> None:
        p = Path(str(path))
        if p.suffix in (".yaml", ".yml", ".csv"):
            reads[str(p.resolve())] += 1

    def open_(file, *a, **k):
        if isinstance(file, str | Path):
            counted(file)
        return real_open(file, *a, **k)

    def read_text(self, *a, **k):
        counted(self)
        return real_read(self, *a, **k)

    real_os_open = os.open

    def os_open(path, flags, *a, **k):  # the one input reader (yamlio.read_chunks)
        if not flags & (os.O_WRONLY | os.O_RDWR):
            counted(path)
        return real_os_open(path, flags, *a, **k)

    monkeypatch.setattr(builtins, "open", open_)
    monkeypatch.setattr(pathlib.Path, "read_text", read_text)
    monkeypatch.setattr(os, "open", os_open)
    return reads


@pytest.mark.slow
def test_one_plan_reads_each_file_once(monkeypatch, tmp_path):
    from dcplan.export import export_plan
    from dcplan.facility import assumptions

    assumptions.assumptions.cache_clear()
    reads = _count_reads(monkeypatch)
    case = load_case(KYBER)  # extends baseline.yaml, which names a forecast file
    # the reads do not depend on how close the solve gets: 5 %, not the file's 0.1 %
    result = solve_case(case, size=True, gap=0.05)
    result.write_csvs(tmp_path / "csv")
    export_plan(result, xlsx=tmp_path / "plan.xlsx")
    again = {p: n for p, n in reads.items() if n > 1}
    assert not again, again
    for name in ("kyber.yaml", "baseline.yaml", "korea_provider.yaml", "racks.yaml",
                 "perf_defaults.yaml", "seoul_metro.yaml"):
        assert any(p.endswith(name) for p in reads), name
    assert set(case.files) <= set(reads)
    assert result.case is case


def test_with_changes_reads_nothing_and_checks(minimal, monkeypatch):
    reads = _count_reads(monkeypatch)
    high = minimal.with_changes({"demand.growth.chat.annual_growth": 0.9,
                                 "economics.discount_rate": 0.1})
    assert not reads
    assert high.scenario.demand.growth["chat"].annual_growth == 0.9
    assert high.scenario.economics.discount_rate == 0.1
    assert minimal.scenario.demand.growth["chat"].annual_growth == 0.7  # unchanged
    assert high.changes == (("demand.growth.chat.annual_growth", 0.9),
                            ("economics.discount_rate", 0.1))
    assert high.digest != minimal.digest
    assert minimal.with_changes({}).digest == minimal.digest


def test_with_changes_overrides_apply_to_the_loaded_catalog(minimal):
    dear = minimal.with_changes(overrides=[{"kind": "racks", "id": "gb200_nvl72",
                                            "field": "capex_usd", "scale": 2}])
    base = minimal.catalog.get("racks", "gb200_nvl72").capex_usd
    assert dear.catalog.get("racks", "gb200_nvl72").capex_usd == pytest.approx(2 * base)
    assert minimal.catalog.get("racks", "gb200_nvl72").capex_usd == base
    # twice on the same base: not compounded
    again = minimal.with_changes(overrides=[{"kind": "racks", "id": "gb200_nvl72",
                                             "field": "capex_usd", "scale": 2}])
    assert again.catalog.get("racks", "gb200_nvl72").capex_usd == pytest.approx(2 * base)


def test_with_changes_reports_every_problem(minimal):
    with pytest.raises(InputError) as exc:
        minimal.with_changes({"demand.growth.chatt.annual_growth": 1,
                              "economics.discount_rate": 2, "economics.foo": 1,
                              "sites": ["seoul_metro", "atlantis"]},
                             overrides=[{"kind": "racks", "id": "gb200_nvl72",
                                         "field": "capex_usdd", "scale": 2}])
    text = str(exc.value)
    fields = {p.field for p in exc.value.problems}
    assert "demand.growth.chatt.annual_growth" in fields
    assert "economics.discount_rate" in fields and "economics.foo" in fields
    assert all(p.file == CHANGES_FILE for p in exc.value.problems
               if p.field and p.field.startswith("economics"))
    assert "allowed fields here: discount_rate" in text
    # the reference check runs on what could be validated
    with pytest.raises(InputError, match="unknown site id 'atlantis'"):
        minimal.with_changes({"sites": ["seoul_metro", "atlantis"]})
    with pytest.raises(InputError, match="capex_usdd"):
        minimal.with_changes(overrides=[{"kind": "racks", "id": "gb200_nvl72",
                                         "field": "capex_usdd", "scale": 2}])
    with pytest.raises(InputError, match="has 2 items"):
        minimal.with_changes({"sites.5": "x"})


@pytest.mark.slow
def test_with_changes_plans_like_the_edited_file(minimal, tmp_path):
    """A change through with_changes plans exactly like the same change written in a file."""
    # (both with the linear fabric: 3 s a plan instead of 14)
    changed = minimal.with_changes({"demand.growth.chat.start": 60e12,
                                    "network_model": "linear"})
    f = tmp_path / "edited.yaml"
    f.write_text(f"extends: {MINIMAL}\ndemand:\n  growth:\n    chat: {{start: 60.0e12}}\n"
                 "network_model: linear\n")
    edited = load_case(f)
    assert changed.digest == edited.digest
    a = solve_case(changed, explain=False, size=False)
    b = solve_case(edited, explain=False, size=False)
    assert a.objective_usd == pytest.approx(b.objective_usd, rel=1e-9)


def test_case_from_a_scenario_object():
    scn = parse_scenario({"periods": {"start": 2026, "end": 2027}, "sites": ["honam_haenam"],
                          "workloads": ["chat"],
                          "demand": {"table": {"chat": {2026: 1e12, 2027: 2e12}}},
                          "economics": {"exchange_rates_usd_per_unit": {"KRW": 0.00072}}})
    case = load_case(scn)
    assert case.path is None and case.name == "scenario"
    assert "honam_haenam" in case.sites and case.perf_defaults is not None


def test_load_case_reports_catalog_and_scenario_problems_together(tmp_path):
    import shutil

    cat = tmp_path / "cat"
    shutil.copytree(REPO / "catalogs", cat)
    racks = (cat / "racks.yaml").read_text().replace("capex_usd:", "capex_usdd:", 1)
    (cat / "racks.yaml").write_text(racks)
    f = tmp_path / "s.yaml"
    f.write_text(f"extends: {MINIMAL}\nsites: [seoul_metro, seoul_metr]\neconomics:\n"
                 "  discount_rat: 0.1\n")
    with pytest.raises(InputError) as exc:
        load_case(f, catalog_dir=cat)
    files = {Path(p.file).name for p in exc.value.problems}
    assert {"racks.yaml", "s.yaml"} <= files, exc.value
