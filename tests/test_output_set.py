"""Output folders hold only what dcplan wrote; one command's outputs land as one set."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import openpyxl
import pytest
from typer.testing import CliRunner

from dcplan.api import write_outputs
from dcplan.cli import app
from dcplan.errors import InputError
from dcplan.export.files import MARKER, check_replaceable, foreign_entries, replace_folder
from dcplan.outputset import RunStamp, output_set
from dcplan.planner.saved import save_result
from dcplan.yamlio import TMP_TAG, write_text_atomic

runner = CliRunner()


def _temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if TMP_TAG in p.name]


def _written(folder: Path, files: dict[str, str]) -> Path:
    with replace_folder(folder) as tmp:
        for name, text in files.items():
            (tmp / name).write_text(text)
    return folder


# --- an output folder is replaced only if it holds exactly what dcplan wrote -------------


def test_a_folder_dcplan_wrote_may_be_replaced(tmp_path):
    out = _written(tmp_path / "out", {"a.csv": "1", "b.csv": "2"})
    assert foreign_entries(out) == []
    _written(out, {"c.csv": "3"})
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "c.csv"]


@pytest.mark.parametrize("extra", ["file", "folder", "changed", "swapped for a folder",
                                   "symlink"])
def test_anything_else_in_the_folder_is_named_and_kept(tmp_path, extra):
    out = _written(tmp_path / "out", {"a.csv": "1"})
    if extra == "file":
        (out / "my_notes.txt").write_text("notes")
        culprit = "my_notes.txt"
    elif extra == "folder":
        (out / "sub").mkdir()
        (out / "sub" / "x").write_text("x")
        culprit = "sub"
    elif extra == "changed":  # a user's edit of a table dcplan wrote is theirs now
        (out / "a.csv").write_text("1, with my comment")
        culprit = "a.csv"
    elif extra == "swapped for a folder":
        (out / "a.csv").unlink()
        (out / "a.csv").mkdir()
        culprit = "a.csv"
    else:
        (out / "link").symlink_to(tmp_path)
        culprit = "link"
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    with pytest.raises(InputError) as err:
        with replace_folder(out) as tmp:
            (tmp / "new.csv").write_text("new")
    assert culprit in str(err.value) and "did not write" in str(err.value)
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before
    assert not _temporaries(tmp_path)


def test_a_folder_without_dcplans_marker_is_never_replaced(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / MARKER).write_text('{"written_by": "someone else", "files": ["x.txt"]}')
    (out / "x.txt").write_text("mine")
    assert foreign_entries(out)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert foreign_entries(empty) == [] and foreign_entries(tmp_path / "new") == []


@pytest.mark.slow
def test_export_twice_keeps_a_users_notes_and_exits_1(minimal_plan, tmp_path):
    """The filed case: export -o out; add notes and a folder; export -o out again."""
    result, _case = minimal_plan
    plan_file = save_result(result, tmp_path / "p.plan")
    out = tmp_path / "out"
    first = runner.invoke(app, ["export", str(plan_file), "-o", str(out), "-q"])
    assert first.exit_code == 0, first.output
    (out / "my_notes.txt").write_text("notes")
    (out / "sub").mkdir()
    again = runner.invoke(app, ["export", str(plan_file), "-o", str(out), "-q"])
    assert again.exit_code == 1, again.output
    assert "my_notes.txt" in again.stderr and "sub" in again.stderr
    assert (out / "my_notes.txt").read_text() == "notes" and (out / "sub").is_dir()
    assert (out / "fleet.csv").is_file()


def test_the_folder_is_checked_before_any_work(minimal_plan, tmp_path, monkeypatch):
    """`plan -o DIR` refuses a folder with a user's file before it loads or solves."""
    import dcplan.planner as planner

    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    monkeypatch.setattr(planner, "solve_case", lambda *a, **k: pytest.fail("solved"))
    res = runner.invoke(app, ["plan", "no-such-scenario.yaml", "-o", str(out)])
    assert res.exit_code == 1 and "keep.txt" in res.stderr
    check_replaceable(tmp_path / "nothing-yet")  # a new folder is fine


# --- the outputs of one command as a set -------------------------------------------------


def test_a_failure_part_way_leaves_every_target_as_it_was(tmp_path):
    old_file = tmp_path / "report.html"
    old_file.write_text("old report")
    old_dir = _written(tmp_path / "tables", {"a.csv": "old"})
    with pytest.raises(RuntimeError):
        with output_set(RunStamp.new()):
            write_text_atomic(old_file, "new report")
            with replace_folder(old_dir) as tmp:
                (tmp / "a.csv").write_text("new")
            write_text_atomic(tmp_path / "new.txt", "new")
            # everything is complete but staged: nothing has moved yet
            assert old_file.read_text() == "old report"
            assert (old_dir / "a.csv").read_text() == "old"
            assert not (tmp_path / "new.txt").exists()
            raise RuntimeError("killed before the set was moved in")
    assert old_file.read_text() == "old report" and (old_dir / "a.csv").read_text() == "old"
    assert not (tmp_path / "new.txt").exists()
    assert not _temporaries(tmp_path)


def test_ctrl_c_while_staging_moves_nothing_in(tmp_path):
    target = tmp_path / "a.txt"
    with pytest.raises(KeyboardInterrupt):
        with output_set(RunStamp.new()):
            write_text_atomic(target, "x")
            raise KeyboardInterrupt
    assert not target.exists() and not _temporaries(tmp_path)


@pytest.mark.slow
def test_every_output_of_a_plan_carries_the_same_run(minimal_plan, tmp_path):
    result, case = minimal_plan
    paths = {"outdir": tmp_path / "tables", "xlsx": tmp_path / "plan.xlsx",
             "png_dir": tmp_path / "charts", "html": tmp_path / "plan.html",
             "save": tmp_path / "plan.plan"}
    write_outputs(result, **paths)
    runs = {}
    for key in ("outdir", "png_dir"):
        runs[key] = json.loads((paths[key] / MARKER).read_text())["run"]
    wb = openpyxl.load_workbook(paths["xlsx"], read_only=True)
    runs["xlsx"] = {"run_id": wb.properties.identifier}
    meta = re.search(r'<meta name="dcplan-run" content="([^"]+)">', paths["html"].read_text())
    runs["html"] = json.loads(meta.group(1).replace("&quot;", '"'))
    with zipfile.ZipFile(paths["save"]) as z:
        runs["save"] = json.loads(z.read("manifest.json"))["run"]
    ids = {r["run_id"] for r in runs.values()}
    assert len(ids) == 1 and len(ids.pop()) == 32
    assert runs["outdir"]["input_digest"] == case.digest == runs["save"]["input_digest"]
    assert set(runs["outdir"]["outputs"]) == {str(p) for p in paths.values()}
    assert case.digest in wb.properties.description
    # A second run gets another id in every output.
    write_outputs(result, outdir=paths["outdir"], html=paths["html"])
    again = json.loads((paths["outdir"] / MARKER).read_text())["run"]["run_id"]
    assert again != runs["outdir"]["run_id"] and again in paths["html"].read_text()
    assert not _temporaries(tmp_path)


def test_a_users_file_named_like_a_temporary_is_theirs(tmp_path):
    """A name containing dcplan's temporary tag was skipped by the check and deleted."""
    out = _written(tmp_path / "out", {"a.csv": "1"})
    (out / "budget.dcplan-tmp.xlsx").write_text("precious")
    with pytest.raises(InputError, match="budget.dcplan-tmp.xlsx"):
        with replace_folder(out) as tmp:
            (tmp / "a.csv").write_text("2")
    assert (out / "budget.dcplan-tmp.xlsx").read_text() == "precious"


@pytest.mark.parametrize("args, words", [
    (["--xlsx", "{d}/same", "--html", "{d}/same"], "--xlsx and --html name the same place"),
    (["-o", "{d}/t", "--png-dir", "{d}/t"], "-o/--outdir and --png-dir name the same place"),
    (["-o", "{d}/t", "--xlsx", "{d}/t/plan.xlsx"], "--xlsx lies inside the -o/--outdir folder"),
    (["-o", "{d}/t", "--png-dir", "{d}/t/charts"], "--png-dir lies inside the -o/--outdir"),
])
def test_outputs_that_clash_are_refused_before_any_work(tmp_path, monkeypatch, args, words):
    """Two outputs on one path kept only the last (a workbook lost without a word); one
    inside a replaced folder was lost with it or broke the set half way."""
    import dcplan.planner as planner

    monkeypatch.setattr(planner, "solve_case", lambda *a, **k: pytest.fail("solved"))
    argv = [a.format(d=tmp_path) for a in args]
    res = runner.invoke(app, ["plan", "examples/minimal.yaml", "-q", *argv])
    assert res.exit_code == 1 and words in res.stderr, res.output
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InputError, match="same place"):
        from dcplan.export.files import check_distinct_outputs

        check_distinct_outputs({"xlsx": tmp_path / "a", "html": tmp_path / "b/../a"}, {})


def test_after_a_signal_no_output_set_is_moved_in(tmp_path, monkeypatch):
    """A Ctrl-C that library code swallowed once let a plan finish and write its outputs:
    the CLI's handler also stops every later output set from moving in."""
    import threading

    from dcplan import outputset

    monkeypatch.setattr(outputset, "_STOP", threading.Event())
    target = tmp_path / "a.txt"
    outputset.request_stop()
    with pytest.raises(KeyboardInterrupt):
        with output_set(RunStamp.new()):
            write_text_atomic(target, "x")
    assert not target.exists() and not _temporaries(tmp_path)


class _Stopped(KeyboardInterrupt):
    pass


@pytest.mark.parametrize("in_set", [True, False])
def test_a_signal_during_the_renames_waits_until_every_output_is_in(tmp_path, monkeypatch,
                                                                     in_set):
    """SIGTERM arriving between two renames of the move-in (CI once caught it there: the
    replaced folders stayed behind under temporary names) is handled once every output
    is in place and every replaced folder is gone; then its handler runs and raises."""
    import os
    import signal

    from dcplan import outputset
    from dcplan.export import files

    tables = _written(tmp_path / "tables", {"a.csv": "old"})
    charts = _written(tmp_path / "charts", {"b.png": "old"})
    report = tmp_path / "report.html"
    report.write_text("old report")
    renames = []
    real_replace = os.replace

    def replace_then_signal(src, dst):
        real_replace(src, dst)
        renames.append(dst)
        if len(renames) == 1:  # after the first rename, before the others
            signal.raise_signal(signal.SIGTERM)

    def on_term(signum, frame):
        raise _Stopped

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        monkeypatch.setattr(outputset.os, "replace", replace_then_signal)
        monkeypatch.setattr(files.os, "replace", replace_then_signal)
        with pytest.raises(_Stopped):
            if in_set:
                with output_set(RunStamp.new()):
                    with replace_folder(tables) as tmp:
                        (tmp / "a.csv").write_text("new")
                    with replace_folder(charts) as tmp:
                        (tmp / "b.png").write_text("new")
                    write_text_atomic(report, "new report")
            else:
                with replace_folder(tables) as tmp:
                    (tmp / "a.csv").write_text("new")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert (tables / "a.csv").read_text() == "new"
    if in_set:
        assert (charts / "b.png").read_text() == "new"
        assert report.read_text() == "new report"
    assert not _temporaries(tmp_path)
