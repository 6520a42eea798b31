"""Saved plans are untrusted: hostile and damaged files through the real command line.

One genuine saved plan is written per module (the shared minimal plan, solved once per
session); every hostile variant is that file rewritten. Each variant goes through
``python -m dcplan show`` (and ``export`` or ``compare`` for some) in its own process,
whose processor time and peak resident memory are measured (``os.wait4``: its own
rusage, see :data:`MEASURE`): exit 1, "damaged or not a dcplan plan" and the member or
field on stderr, no traceback, within :func:`cpu_limit_s` of processor time and 300 MB.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import typing
import zipfile
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import pytest

from dcplan.errors import InputError
from dcplan.planner.saved import (
    DAMAGED,
    MAX_COMPRESSION_RATIO,
    MAX_JSON_SEPARATORS,
    MAX_MEMBER_BYTES,
    MAX_MEMBERS,
    MAX_PLAN_CELLS,
    MAX_TABLE_CELLS,
    MAX_TABLE_TEXT_BYTES,
    MAX_TEXT_VALUE_BYTES,
    RATIO_CHECKED_BYTES,
    TABLE_COLUMNS,
    input_classes,
    load_result,
    save_result,
)

pytestmark = pytest.mark.skipif(not hasattr(os, "wait4") or not hasattr(os, "fork"),
                                reason="needs os.fork and os.wait4 (POSIX)")

#: Bounds of a refusal (the issue: 3.2 GB and 89 s before "damaged"): processor time
#: (user + system) [s] and peak resident set [MB]. Processor time, not wall time: on a
#: shared 2-core machine the same refusal took 1.0 to 4.1 s of wall time and a genuine
#: ``show`` 2.2 to 8.3 s (measured while other test runs competed for the cores),
#: while the processor time stays put. Wall time only has to stay below
#: :data:`HANG_LIMIT_S`. The processor-time bound is :func:`cpu_limit_s`: at least
#: ``CPU_LIMIT_S``, and :data:`CPU_LIMIT_IMPORTS` times what merely importing the
#: commands costs on the machine running the tests.
CPU_LIMIT_S = 5.0
#: Multiple of the import cost allowed to a command on a saved plan [-]. Most of a
#: refusal is Python importing pandas, scipy and dcplan's command line: 3.0-3.1 s of
#: processor time on a 2-core machine of 2026-12-07, where a genuine ``compare`` of two
#: plans took 4.5-4.7 s (CI's run of a fixed 5 s bound failed on ``compare`` at 5.2-5.4 s
#: that day); the refusals took 1.1-1.8 s on the faster machine of 2026-12-03. Three
#: times the import cost still fails the filed defect's 89 s by far.
CPU_LIMIT_IMPORTS = 3.0
#: What a command on a saved plan imports before it opens the file (dcplan/cli/saved_cmd.py
#: and compare_cmd.py import these when they run).
COMMAND_IMPORTS = "import dcplan.cli, dcplan.api, dcplan.export.compare, dcplan.export.terminal"
RSS_LIMIT_MB = 300.0
HANG_LIMIT_S = 60.0
#: The 1.5 GiB member of zeros of the filed defect [bytes].
BOMB_BYTES = 96 * 16 * 1024 * 1024


class Run(NamedTuple):
    """What one ``python -m dcplan`` process did."""

    rc: int
    out: str
    err: str
    wall_s: float
    cpu_s: float
    rss_mb: float


#: Runs ``python -m dcplan ARGS`` as its own child and writes that child's peak resident
#: set [KiB on Linux] and processor time [s] to the file ``argv[1]``. A small process in
#: between, because a child's ``ru_maxrss`` starts at its parent's resident set when it
#: forks (this test process holds pandas and the hostile files' data) and stays so
#: across exec.
MEASURE = """
import os, sys
report, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, *argv])
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as f:
    f.write(f"{usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}")
sys.exit(os.waitstatus_to_exitcode(status) % 256)
"""


def run_cli(tmp: Path, *args: str) -> Run:
    """Run ``python -m dcplan ARGS``; measure its wall time, processor time and peak RSS."""
    return run_python(tmp, "-m", "dcplan", *args)


def run_python(tmp: Path, *argv: str) -> Run:
    """Run ``python ARGV``; measure its wall time, processor time and peak RSS."""
    out, err, report = tmp / "stdout.txt", tmp / "stderr.txt", tmp / "maxrss.txt"
    with open(out, "wb") as fo, open(err, "wb") as fe:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", MEASURE, str(report), *argv],
                                stdout=fo, stderr=fe, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            proc.wait(timeout=HANG_LIMIT_S * 2)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        wall = time.perf_counter() - t0
    maxrss, cpu = report.read_text().split() if report.exists() else (10**12, 10**6)
    rss = int(maxrss) / (1024 * 1024 if sys.platform == "darwin" else 1024)  # MB
    report.unlink(missing_ok=True)
    return Run(proc.returncode, out.read_text(errors="replace"),
               err.read_text(errors="replace"), wall, float(cpu), rss)


@functools.cache
def cpu_limit_s() -> float:
    """Processor time a command on a saved plan may take here [s].

    The larger of :data:`CPU_LIMIT_S` and :data:`CPU_LIMIT_IMPORTS` times the processor
    time of a process that only imports :data:`COMMAND_IMPORTS`, measured once per test
    process on this machine, so that the bound is a ratio measured in the same run and
    not a machine's speed.
    """
    with tempfile.TemporaryDirectory() as tmp:
        run = run_python(Path(tmp), "-c", COMMAND_IMPORTS)
    assert run.rc == 0, run
    print(f"importing the commands: {run.cpu_s:.2f} s CPU")
    return max(CPU_LIMIT_S, CPU_LIMIT_IMPORTS * run.cpu_s)


@pytest.mark.slow
def test_cpu_limit_stays_far_below_the_defect():
    """The machine-relative bound still catches the filed defect (89 s before "damaged"):
    it fails once importing the commands alone costs a third of that."""
    assert CPU_LIMIT_S <= cpu_limit_s() < 89.0 / 3


def assert_refused(run: Run, *words: str) -> None:
    """Exit 1 with a clear "damaged" message naming ``words``, fast and small."""
    print(f"exit {run.rc}, {run.cpu_s:.2f} s CPU, {run.wall_s:.2f} s wall, {run.rss_mb:.0f} MB: "
          f"{run.err.strip()[:300]}")
    assert run.rc == 1, run
    assert DAMAGED in run.err, run.err
    assert "Traceback" not in run.err and "internal error" not in run.err, run.err
    for w in words:
        assert w in run.err, (w, run.err)
    assert run.cpu_s < cpu_limit_s() and run.wall_s < HANG_LIMIT_S, run
    assert run.rss_mb < RSS_LIMIT_MB, run


# --- building the files ------------------------------------------------------------------


@pytest.fixture(scope="module")
def good(tmp_path_factory, minimal_plan) -> Path:
    """A genuine saved plan: the shared minimal plan (linear fabric), saved."""
    return save_result(minimal_plan[0], tmp_path_factory.mktemp("good") / "good.plan")


def rewrite(src: Path, dst: Path, *, manifest=None, members: dict | None = None,
            drop: tuple[str, ...] = ()) -> Path:
    """Copy saved plan ``src`` to ``dst``: ``manifest(m)`` edits the manifest's JSON in
    place, ``members`` replaces (or adds) members' bytes, ``drop`` leaves members out."""
    members = dict(members or {})
    with zipfile.ZipFile(src) as a, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as b:
        for name in a.namelist():
            if name in drop:
                continue
            data = members.pop(name, None)
            if data is None:
                data = a.read(name)
                if name == "manifest.json" and manifest is not None:
                    m = json.loads(data)
                    manifest(m)
                    data = json.dumps(m).encode()
            b.writestr(name, data)
        for name, data in members.items():
            b.writestr(name, data)
    return dst


def table(path: Path, name: str) -> pd.DataFrame:
    with zipfile.ZipFile(path) as z:
        return pd.read_parquet(io.BytesIO(z.read(f"tables/{name}.parquet")))


def parquet(df: pd.DataFrame, **options) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False, **options)
    return buf.getvalue()


def with_table(good: Path, dst: Path, name: str, edit, **options) -> Path:
    """``good`` with table ``name`` replaced by ``edit(df)`` (rows in the manifest too;
    ``options`` for ``to_parquet``)."""
    df = edit(table(good, name))

    def rows(m):
        m["tables"][name]["rows"] = len(df)

    return rewrite(good, dst, manifest=rows,
                   members={f"tables/{name}.parquet": parquet(df, **options)})


def set_cell(col: str, value, row: int = 0):
    def edit(df):
        df = df.astype({col: object}) if isinstance(value, str) else df.copy()
        df.loc[row, col] = value
        return df
    return edit


def with_class(good: Path, dst: Path, qualname: str) -> Path:
    """``good`` whose plan_inputs.json names ``qualname`` as its top-level class."""
    with zipfile.ZipFile(good) as z:
        data = json.loads(z.read("inputs/plan_inputs.json"))
    data["__dataclass__"] = qualname
    return rewrite(good, dst, members={"inputs/plan_inputs.json": json.dumps(data).encode()})


@pytest.fixture(scope="module")
def bomb(good, tmp_path_factory) -> Path:
    """``good`` with tables/fleet.parquet replaced by 1.5 GiB of zeros (7 MB deflated at
    level 1; streamed, so this test never holds it)."""
    dst = tmp_path_factory.mktemp("bomb") / "bomb.plan"
    chunk = bytes(16 * 1024 * 1024)
    with zipfile.ZipFile(good) as a, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED,
                                                     compresslevel=1) as b:
        for name in a.namelist():
            if name != "tables/fleet.parquet":
                b.writestr(name, a.read(name))
                continue
            with b.open(name, "w") as f:
                for _ in range(BOMB_BYTES // len(chunk)):
                    f.write(chunk)
    return dst


def lying_header(good: Path, dst: Path) -> Path:
    """tables/fleet.parquet holds 64 MiB of zeros but its headers say 1,000 bytes."""
    name = b"tables/fleet.parquet"
    rewrite(good, dst, members={name.decode(): bytes(64 * 1024 * 1024)})
    raw = bytearray(dst.read_bytes())
    for sig, size_at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):  # local, central
        at = 0
        while (at := raw.find(sig, at)) >= 0:
            name_at = at + (30 if sig == b"PK\x03\x04" else 46)
            if raw[name_at:name_at + len(name)] == name:
                raw[at + size_at:at + size_at + 4] = (1000).to_bytes(4, "little")
            at += 4
    dst.write_bytes(bytes(raw))
    with zipfile.ZipFile(dst) as z:
        assert z.getinfo(name.decode()).file_size == 1000
    return dst


def cells_in_all(good: Path, dst: Path) -> Path:
    """Two tables at the limit of cells per table: with the plan's other tables, more
    than the limit for all tables."""
    big = parquet(pd.DataFrame({"it_kw": [0.0] * MAX_TABLE_CELLS}))

    def rows(m):
        for name in ("hours", "schedules"):
            m["tables"][name]["rows"] = MAX_TABLE_CELLS

    assert 2 * MAX_TABLE_CELLS >= MAX_PLAN_CELLS
    return rewrite(good, dst, manifest=rows, members={"tables/hours.parquet": big,
                                                      "tables/schedules.parquet": big})


def many_members(good: Path, dst: Path) -> Path:
    extra = {f"inputs/x{i}.json": b"{}" for i in range(MAX_MEMBERS + 10)}
    return rewrite(good, dst, members=extra)


def manifest_edit(**changes):
    def edit(m):
        for k, v in changes.items():
            if v is ...:
                del m[k]
            else:
                m[k] = v
    return edit


def row_mismatch(m):
    m["tables"]["fleet"]["rows"] += 1


def traversal(m):
    m["tables"]["../../evil"] = dict(m["tables"]["kpis"])


HOSTILE = {  # name -> (build(good, dst), words the message must hold)
    "lying_header": (lying_header, ["tables/fleet.parquet", "cannot be read"]),
    "ratio": (lambda g, d: rewrite(g, d, members={
        "tables/hours.parquet": bytes(RATIO_CHECKED_BYTES * 16)}),
        ["tables/hours.parquet", "inflates", f"at most {MAX_COMPRESSION_RATIO:g} times"]),
    "bogus_status": (lambda g, d: rewrite(g, d, manifest=manifest_edit(status="bogus")),
                     ["manifest.json", "field 'status'", "'bogus'"]),
    "missing_status": (lambda g, d: rewrite(g, d, manifest=manifest_edit(status=...)),
                       ["manifest.json", "field 'status'", "Field required"]),
    "infeasible_status": (lambda g, d: rewrite(g, d, manifest=manifest_edit(
        status="infeasible")), ["field 'status'", "status 'infeasible' means no plan"]),
    "nan_objective": (lambda g, d: rewrite(g, d, manifest=manifest_edit(
        objective_usd=float("nan"))), ["field 'objective_usd'", "finite number"]),
    "string_objective": (lambda g, d: rewrite(g, d, manifest=manifest_edit(
        objective_usd="1e9")), ["field 'objective_usd'"]),
    "bound_above_plan": (lambda g, d: rewrite(g, d, manifest=lambda m: m.update(
        bound_usd=m["objective_usd"] * 1.01, bound_source="edited")),
        ["manifest.json", "bound_usd", "above objective_usd", "cannot exceed"]),
    "nan_bound": (lambda g, d: rewrite(g, d, manifest=manifest_edit(
        bound_usd=float("nan"))), ["field 'bound_usd'", "finite number"]),
    "nan_npv_kpi": (lambda g, d: with_table(g, d, "kpis", set_cell("value", float("nan"))),
                    ["tables/kpis.parquet", "npv_cost_usd"]),
    "negative_racks": (lambda g, d: with_table(g, d, "fleet", set_cell("installed_racks", -3.0)),
                       ["tables/fleet.parquet", "field 'installed_racks'", "-3 racks",
                        "never negative"]),
    "fractional_racks": (lambda g, d: with_table(g, d, "fleet", set_cell("new_racks", 2.5)),
                         ["field 'new_racks'", "2.5 racks", "whole"]),
    "nan_allocated_racks": (lambda g, d: with_table(g, d, "allocation", set_cell(
        "racks", float("nan"))), ["tables/allocation.parquet", "field 'racks'", "NaN"]),
    "inf_power": (lambda g, d: with_table(g, d, "power", set_cell(
        "facility_kw_peak", float("inf"))), ["field 'facility_kw_peak'", "inf"]),
    "text_racks": (lambda g, d: with_table(g, d, "fleet", lambda df: df.astype(
        {"installed_racks": str})), ["field 'installed_racks'", "holds text"]),
    "row_mismatch": (lambda g, d: rewrite(g, d, manifest=row_mismatch),
                     ["tables/fleet.parquet", "where manifest.json says"]),
    "table_name_traversal": (lambda g, d: rewrite(g, d, manifest=traversal),
                             ["manifest.json", "../../evil", "should match pattern"]),
    "missing_table": (lambda g, d: rewrite(g, d, drop=("tables/fleet.parquet",)),
                      ["tables/fleet.parquet", "missing"]),
    "missing_column": (lambda g, d: with_table(g, d, "power", lambda df: df.drop(
        columns=["facility_kw_peak"])), ["tables/power.parquet", "field 'facility_kw_peak'",
                                         "lacks column(s) facility_kw_peak"]),
    "text_pages": (lambda g, d: with_table(g, d, "fleet", lambda df: df.assign(
        site="x" * (MAX_TABLE_TEXT_BYTES // len(df) + 1)), use_dictionary=False),
        ["tables/fleet.parquet", "of text) uncompressed"]),
    "text_bomb": (lambda g, d: with_table(g, d, "hours", lambda df: pd.DataFrame(
        {"site": ["x" * 2**19] * (MAX_TABLE_TEXT_BYTES // 2**19 + 1)})),
        ["tables/hours.parquet", "decodes to"]),
    "text_values": (lambda g, d: with_table(g, d, "hours", lambda df: pd.DataFrame(
        {"site": [f"{i:09d}" for i in range(MAX_TEXT_VALUE_BYTES // 59 + 1)]})),
        ["tables/hours.parquet", "distinct text values"]),
    "cells_in_all": (cells_in_all, ["tables/schedules.parquet", "cells in all"]),
    "row_bomb": (lambda g, d: with_table(g, d, "hours", lambda df: pd.DataFrame(
        {"it_kw": [0.0] * (MAX_TABLE_CELLS + 1)})), ["tables/hours.parquet", "cells"]),
    "class_dcplan_main": (lambda g, d: with_class(g, d, "dcplan.__main__.X"),
                          ["inputs/plan_inputs.json",
                           "unknown class 'dcplan.__main__.X' in inputs/plan_inputs.json"]),
    "class_os_system": (lambda g, d: with_class(g, d, "os.system"),
                        ["unknown class 'os.system' in inputs/plan_inputs.json"]),
    "not_a_zip": (lambda g, d: d.write_text("periods: {start: 2026, end: 2030}\n") and d,
                  ["not a zip archive", "not a saved dcplan plan"]),
    "zip_without_manifest": (lambda g, d: rewrite(g, d, drop=("manifest.json",)),
                             ["no manifest.json"]),
    "many_members": (many_members, [f"at most {MAX_MEMBERS}"]),
    "json_values": (lambda g, d: rewrite(g, d, members={"inputs/catalog.json": b"[%s]" % (
        b",".join(b"%d" % (i * 7919 % 10**7) for i in range(MAX_JSON_SEPARATORS + 1)))}),
        ["inputs/catalog.json", "JSON values"]),
    "truncated": (lambda g, d: d.write_bytes(g.read_bytes()[: g.stat().st_size // 2]) and d,
                  ["not a zip archive"]),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
@pytest.mark.slow
def test_hostile_plan_is_refused_by_show(good, tmp_path, case):
    build, words = HOSTILE[case]
    bad = build(good, tmp_path / f"{case}.plan")
    assert_refused(run_cli(tmp_path, "show", str(bad)), str(bad.name), *words)


@pytest.mark.slow
def test_zero_bomb_is_refused_before_inflating(bomb, tmp_path):
    """The filed defect: 1.5 GiB of zeros in a 7 MB file (was 3.2 GB and 89 s)."""
    with zipfile.ZipFile(bomb) as z:
        assert z.getinfo("tables/fleet.parquet").file_size == BOMB_BYTES > MAX_MEMBER_BYTES
    words = ["tables/fleet.parquet", f"{BOMB_BYTES:,} bytes uncompressed"]
    assert_refused(run_cli(tmp_path, "show", str(bomb)), *words)
    assert_refused(run_cli(tmp_path, "export", str(bomb), "-o", str(tmp_path / "csv")), *words)
    assert not (tmp_path / "csv").exists()
    assert_refused(run_cli(tmp_path, "compare", str(bomb), str(bomb)), *words)


@pytest.mark.parametrize("case", ["infeasible_status", "class_dcplan_main", "negative_racks"])
@pytest.mark.slow
def test_hostile_plan_is_refused_by_export_and_compare(good, tmp_path, case):
    build, words = HOSTILE[case]
    bad = build(good, tmp_path / f"{case}.plan")
    out = tmp_path / "csv"
    assert_refused(run_cli(tmp_path, "export", str(bad), "-o", str(out)), *words)
    assert not out.exists()
    run = run_cli(tmp_path, "compare", str(good), str(bad), "-q")
    assert_refused(run, *words)
    assert "npv_cost_usd" not in run.out  # refused before any comparison is printed


@pytest.mark.slow
def test_genuine_plan_is_shown_within_the_same_bounds(good, tmp_path):
    """The control: the measurements that refuse the hostile files pass a real plan."""
    run = run_cli(tmp_path, "show", str(good))
    print(f"genuine: exit {run.rc}, {run.cpu_s:.2f} s CPU, {run.wall_s:.2f} s wall, "
          f"{run.rss_mb:.0f} MB")
    assert run.rc == 0, run
    assert "NPV of costs" in run.out and DAMAGED not in run.err
    assert run.cpu_s < cpu_limit_s() and run.rss_mb < RSS_LIMIT_MB, run


@pytest.mark.slow
def test_plan_tables_are_read_without_the_dataset_scanner(good, monkeypatch):
    """Each table is read by ParquetFile, never by pq.read_table (pd.read_parquet uses it).

    read_table's dataset scanner can release the Python-owned bytes of a table on one of
    its worker threads after it has returned. When that happens while the interpreter
    exits (a refused plan exits at once), the worker is killed taking the GIL and the
    process aborts with "terminate called without an active exception" (exit 134; CI
    saw it once on the text_bomb case, and 5 of 1,200 refusals under load, 0 of 800 with
    ParquetFile). The abort is too rare to test directly; this pins the reader.
    """
    import pyarrow.parquet as pq

    from dcplan.planner.saved import load_result

    def refuse(*args, **kwargs):
        raise AssertionError("pq.read_table reached")

    rows = len(table(good, "hours"))
    monkeypatch.setattr(pq, "read_table", refuse)
    monkeypatch.setattr(pd, "read_parquet", refuse)
    assert len(load_result(good).tables["hours"]) == rows > 0


# --- a saved plan without a solution -----------------------------------------------------


@pytest.fixture(scope="module")
def no_plan(good, tmp_path_factory) -> Path:
    """What dcplan saves for a plan without a solution: status infeasible, no objective
    and no tables (``PlanResult.save`` of an infeasible result)."""
    def edit(m):
        m.update(status="infeasible", objective_usd=None, gap=None, tables={},
                 message="demand cannot be met: no site has grid capacity")

    with zipfile.ZipFile(good) as z:
        tables = tuple(n for n in z.namelist() if n.startswith("tables/"))
    return rewrite(good, tmp_path_factory.mktemp("no_plan") / "none.plan", manifest=edit,
                   drop=tables)


@pytest.mark.slow
def test_plan_without_solution_is_shown_as_no_plan_and_never_exported(no_plan, tmp_path):
    back = load_result(no_plan)  # not damaged: the file says honestly there is no plan
    assert not back.status.has_solution and not back.tables
    show = run_cli(tmp_path, "show", str(no_plan))
    assert show.rc == 1 and "no plan: infeasible" in show.out, show
    assert "NPV of costs" not in show.out and "optimal" not in show.out
    assert "holds no plan" in show.err and DAMAGED not in show.err, show
    js = run_cli(tmp_path, "show", str(no_plan), "--json")
    assert js.rc == 1 and json.loads(js.out)["status"] == "infeasible", js
    out = tmp_path / "csv"
    export = run_cli(tmp_path, "export", str(no_plan), "-o", str(out))
    assert export.rc == 1 and "nothing to export" in export.err and not out.exists(), export
    cmp = run_cli(tmp_path, "compare", str(no_plan), str(no_plan), "-q")
    assert cmp.rc == 1 and "nothing to compare" in cmp.err and not cmp.out.strip(), cmp
    for run in (show, export, cmp):
        assert "Traceback" not in run.err and run.cpu_s < cpu_limit_s()


# --- in process ---------------------------------------------------------------------------


@pytest.mark.slow
def test_no_module_named_by_the_file_is_imported(good, tmp_path, monkeypatch):
    import importlib

    imported, real = [], importlib.import_module
    monkeypatch.setattr(importlib, "import_module",
                        lambda name, *a, **k: imported.append(name) or real(name, *a, **k))
    monkeypatch.setattr(os, "system", lambda *a: pytest.fail("os.system called"))
    had_main = "dcplan.__main__" in sys.modules
    named = ("dcplan.__main__.X", "os.system", "dcplan.cli.app",
             "dcplan.planner.inputs.PlanInputs.__init__", "builtins.dict")
    for qualname in named:
        bad = with_class(good, tmp_path / "c.plan", qualname)
        with pytest.raises(InputError, match="unknown class") as info:
            load_result(bad)
        assert info.value.problems[0].entry == "inputs/plan_inputs.json"
    assert ("dcplan.__main__" in sys.modules) == had_main
    assert not set(imported) & {q.rpartition(".")[0] for q in named}, imported


def _reachable(roots) -> set[str]:
    """Qualified names of the dataclasses reachable from ``roots`` by field types (the
    fields :func:`dcplan.planner.saved._encode` writes)."""
    seen: dict[str, type] = {}

    def walk(tp):
        for arg in typing.get_args(tp):
            walk(arg)
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            name = f"{tp.__module__}.{tp.__qualname__}"
            if name in seen:
                return
            seen[name] = tp
            hints = typing.get_type_hints(tp)
            for f in dataclasses.fields(tp):
                if not f.name.startswith("_") and f.name != "facility":
                    walk(hints[f.name])

    for root in roots:
        walk(root)
    return set(seen)


@pytest.mark.slow
def test_allow_list_holds_every_class_a_plan_writes(good):
    from dcplan.perf.params import Calibration, PerfDefaults
    from dcplan.planner.fabric import FabricData
    from dcplan.planner.inputs import PlanInputs
    from dcplan.planner.operations import ApiOffer, OperationsData
    from dcplan.scenario.schema import DemandConversion

    # PlanInputs.operations, .api_offers and .fabrics are typed Any or bare tuples:
    # their classes are roots of their own.
    roots = (PlanInputs, PerfDefaults, Calibration, DemandConversion, OperationsData,
             ApiOffer, FabricData)
    allowed = set(input_classes())
    assert _reachable(roots) == allowed
    written = set()

    def collect(obj):
        if isinstance(obj, dict):
            if "__dataclass__" in obj:
                written.add(obj["__dataclass__"])
            for v in obj.values():
                collect(v)
        elif isinstance(obj, list):
            for v in obj:
                collect(v)

    with zipfile.ZipFile(good) as z:
        for name in z.namelist():
            if name.endswith(".json"):
                collect(json.loads(z.read(name)))
    assert {"dcplan.planner.inputs.PlanInputs", "dcplan.perf.params.PerfDefaults",
            "dcplan.scenario.schema.DemandConversion"} <= written <= allowed


def test_genuine_plan_round_trips_with_its_nans(good, minimal_plan):
    """A real plan loads whole: NaN where a plan writes it (a linear fabric's switches)
    and an infinite gap (no bound yet) are not damage."""
    result = minimal_plan[0]
    back = load_result(good)
    assert back.status == result.status and back.objective_usd == result.objective_usd
    with zipfile.ZipFile(good) as z:
        for name, df in result:
            assert len(back.tables[name]) == len(df), name
            stored = pd.read_parquet(io.BytesIO(z.read(f"tables/{name}.parquet")))
            pd.testing.assert_frame_equal(back.tables[name], stored)
    assert back.tables["network"].leaf_switches.isna().any()
    assert type(back.inputs).__name__ == "PlanInputs" and back.case.digest == \
        minimal_plan[1].digest
    feasible = rewrite(good, good.with_name("inf_gap.plan"), manifest=manifest_edit(
        status="feasible", gap=float("inf")))
    assert load_result(feasible).gap == float("inf")


def test_table_columns_are_those_a_plan_writes(minimal_plan):
    """A plan solved now has exactly the columns the reader asks of a saved one."""
    result = minimal_plan[0]
    assert {name: tuple(df.columns) for name, df in result} == TABLE_COLUMNS


def test_missing_parquet_engine_is_not_called_damage(good, monkeypatch):
    for mod in ("pyarrow", "pyarrow.parquet", "pyarrow.compute"):
        monkeypatch.setitem(sys.modules, mod, None)  # import raises ImportError
    with pytest.raises(InputError) as info:
        load_result(good)
    text = str(info.value)
    assert "pyarrow is not installed" in text and "pip install pyarrow" in text
    assert DAMAGED not in text


def test_a_cooling_table_saved_before_the_milp_columns_is_upgraded(good, tmp_path):
    """A plan saved when the cooling table's CDU columns held the MILP's CDUs (no
    ``milp_*`` columns) loads with those in the ``milp_*`` columns and the cooling
    model's CDUs, from the saved case, in the CDU columns: as a plan saved now."""
    now = table(good, "cooling")
    assert (now.cdus_by_model != now.milp_cdus_by_model).any()

    def old_layout(df):
        out = df.drop(columns=["cdu_capex_diff_usd", "milp_cdus_by_model", "milp_cdus",
                               "milp_cdu_positions", "milp_cdu_capex_usd"])
        for c in ("cdus_by_model", "cdus", "cdu_positions", "cdu_capex_usd"):
            out[c] = df[f"milp_{c}"]
        out["cdu_ids"] = [",".join(sorted(p.split(":")[0].strip() for p in t.split(",") if p))
                          for t in df.milp_cdus_by_model]
        return out

    back = load_result(with_table(good, tmp_path / "old.plan", "cooling", old_layout))
    cool = back.tables["cooling"]
    assert list(cool.columns) == list(now.columns)
    pd.testing.assert_frame_equal(cool, now, check_dtype=False)
    assert any("saved by an older dcplan" in n for n in back.notes)


def _without_key(obj, key: str):
    """``obj`` (decoded JSON) with every mapping's ``key`` left out."""
    if isinstance(obj, dict):
        return {k: _without_key(v, key) for k, v in obj.items() if k != key}
    if isinstance(obj, list):
        return [_without_key(v, key) for v in obj]
    return obj


@pytest.mark.slow
def test_a_plan_saved_before_a_model_parameter_existed_still_loads(good, tmp_path):
    """A plan saved before kv_handover_token_s and frontier_ttft_share_max_frac existed
    (its perf inputs lack a hardware parameter and a serving setting): show, export and
    compare work (exit 0), its notes name both and where they come from now, and the
    rebuilt defaults hold this dcplan's a-priori values. A field missing from any other
    input class is still damage."""
    from dcplan.perf.params import load_perf_defaults

    with zipfile.ZipFile(good) as z:
        perf = json.loads(z.read("inputs/perf.json"))
        inputs = json.loads(z.read("inputs/plan_inputs.json"))
    assert "kv_handover_token_s" in json.dumps(perf)
    assert "frontier_ttft_share_max_frac" in json.dumps(perf)
    stripped = _without_key(_without_key(perf, "kv_handover_token_s"),
                            "frontier_ttft_share_max_frac")
    # and the fields of 2026-12-06 (eleventh): a physics parameter, a serving setting
    # and the basis's prefill width (a basis without it reads domain_ep_max for both)
    # and of 2026-12-07 (twenty-third): the hand-over's fixed latency
    for key in ("wide_ep_comm_ratio", "board_ep_gpus", "prefill_domain_ep_max",
                "kv_handover_latency_s"):
        assert key in json.dumps(perf), key
        stripped = _without_key(stripped, key)
    old = rewrite(good, tmp_path / "old.plan",
                  members={"inputs/perf.json": json.dumps(stripped).encode()})
    back = load_result(old)
    note = [n for n in back.notes if "saved by an older dcplan" in n]
    assert len(note) == 1, back.notes
    assert ("lack board_ep_gpus, frontier_ttft_share_max_frac, kv_handover_latency_s, "
            "kv_handover_token_s, wide_ep_comm_ratio;") in note[0]
    assert "perf_defaults.yaml" in note[0]
    basis = back.case.calibration.basis
    assert basis.prefill_domain_ep_max is None
    assert basis.prefill_ep_max == basis.domain_ep_max
    shipped = load_perf_defaults()
    assert back.case.perf_defaults.default.kv_handover_token_s \
        == shipped.default.kv_handover_token_s
    assert back.case.perf_defaults.default.kv_handover_latency_s \
        == shipped.default.kv_handover_latency_s == 0.08
    assert back.case.perf_defaults.serving.frontier_ttft_share_max_frac \
        == shipped.serving.frontier_ttft_share_max_frac
    for args in (("show", str(old)), ("export", str(old), "-o", str(tmp_path / "x")),
                 ("compare", str(old), str(good))):
        r = run_cli(tmp_path, *args)
        assert r.rc == 0, (args, r.err)
    assert ("frontier_ttft_share_max_frac, kv_handover_latency_s, kv_handover_token_s, "
            "wide_ep_comm_ratio;") in " ".join(
        run_cli(tmp_path, "show", str(old)).out.split())
    # the planner's inputs are not parameter sets: a field they lack is damage
    field = next(k for k in inputs if not k.startswith("__"))
    bad = rewrite(good, tmp_path / "bad.plan", members={"inputs/plan_inputs.json": json.dumps(
        {k: v for k, v in inputs.items() if k != field}).encode()})
    assert_refused(run_cli(tmp_path, "show", str(bad)), "plan_inputs.json")


def test_a_bill_of_materials_saved_before_purchase_is_upgraded(good, tmp_path):
    """A plan saved before the ``bom`` table had ``purchase`` (the NICs' kW and USD in
    ``kw``, ``capex_usd`` and ``new_capex_usd``) loads with the NICs set apart, as a
    plan saved now has them; it is not refused."""
    now = table(good, "bom")
    inside = now.purchase == "in_rack"
    assert inside.any() and (now.item[inside] == "nic").all()

    def old_layout(df):
        out = df.drop(columns=["purchase", "included_kw", "included_capex_usd"])
        out.loc[inside, "kw"] = df.included_kw[inside]
        out.loc[inside, "capex_usd"] = df.included_capex_usd[inside]
        out.loc[inside, "new_capex_usd"] = 1.0  # an older plan counted the NICs' capex
        return out

    back = load_result(with_table(good, tmp_path / "old.plan", "bom", old_layout))
    bom = back.tables["bom"]
    assert list(bom.columns) == list(now.columns)
    pd.testing.assert_frame_equal(bom, now)
    assert bom.attrs["units"]["included_kw"] == "kW (full load)"


def test_kpis_saved_when_opex_held_staff_and_software_are_upgraded(good, tmp_path):
    """A plan saved when ``opex_usd`` counted staff and software (no
    ``staff_software_usd`` row) loads with opex and staff/software apart, recomputed
    from its costs table: as a plan saved now."""
    now = table(good, "kpis")
    costs = table(good, "costs")
    kv = now.set_index("kpi").value
    staff = costs.loc[costs.category.isin(("staff", "software")), "cost_usd"].sum()
    assert kv["staff_software_usd"] == pytest.approx(staff)

    def old_layout(df):
        out = df[df.kpi != "staff_software_usd"].reset_index(drop=True)
        out.loc[out.kpi == "opex_usd", "value"] = kv["opex_usd"] + kv["staff_software_usd"] + 1.0
        return out

    back = load_result(with_table(good, tmp_path / "old.plan", "kpis", old_layout))
    pd.testing.assert_frame_equal(back.tables["kpis"], now, check_dtype=False)


def test_power_figures_saved_before_it_counted_the_network_are_upgraded(good, tmp_path):
    """A plan saved before IT power counted the network (no ``it_total_kw_*`` columns, no
    ``pue_peak``, a ``peak_it_mw`` of the racks alone) loads with the figures a plan
    saved now has, recomputed from its own tables; the high-percentile margin it never
    had is blank, and its power basis still comes from its inputs."""
    now = {n: table(good, n) for n in ("power", "cooling", "hours", "kpis")}
    old = tmp_path / "a.plan"
    with_table(good, old, "power", lambda df: df.drop(columns=["it_total_kw_peak",
                                                               "it_total_kw_avg"]))
    older = with_table(old, tmp_path / "b.plan", "cooling",
                       lambda df: df.drop(columns=["pue_peak"]))
    oldest = with_table(older, tmp_path / "c.plan", "hours",
                        lambda df: df.drop(columns=["it_total_kw"]))

    def old_kpis(df):
        out = df[~df.kpi.isin(["pue_peak", "power_p99_margin_frac"])].reset_index(drop=True)
        out.loc[out.kpi == "peak_it_mw", "value"] = 1.0  # the racks alone, once
        return out

    plan = with_table(oldest, tmp_path / "d.plan", "kpis", old_kpis)
    back = load_result(plan)
    for name in ("power", "cooling", "hours"):
        got = back.tables[name]
        assert list(got.columns) == list(now[name].columns)
        pd.testing.assert_frame_equal(got, now[name], check_exact=False, rtol=1e-9)
    k = back.tables["kpis"]
    assert list(k.kpi) == list(now["kpis"].kpi)
    for name in ("peak_it_mw", "pue_peak"):
        assert back.kpi(name) == pytest.approx(
            float(now["kpis"].set_index("kpi").value[name]), rel=1e-9)
    assert back.kpi("power_p99_margin_frac") is None
    assert back.power_basis.startswith("operating point")
    assert "not known" in back.power_basis
