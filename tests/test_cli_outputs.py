"""Output locations are checked before any work, files get normal permissions, pipes close."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from dcplan.cli import app
from dcplan.yamlio import write_text_atomic

REPO = Path(__file__).resolve().parent.parent
runner = CliRunner()


def test_bad_output_places_fail_before_solving(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    res = runner.invoke(app, ["plan", str(REPO / "examples" / "minimal.yaml"),
                              "--xlsx", str(blocker / "plan.xlsx"),
                              "--png-dir", str(blocker / "charts")])
    assert res.exit_code == 1
    assert "--xlsx: cannot write here" in res.stderr
    assert "--png-dir: cannot create or write this folder" in res.stderr
    assert "[plan] solving" not in res.stderr  # nothing was solved
    assert "Traceback" not in res.output


def test_output_file_that_is_a_folder(tmp_path):
    res = runner.invoke(app, ["plan", str(REPO / "examples" / "minimal.yaml"), "-q",
                              "--write-lp", str(tmp_path)])
    assert res.exit_code in (1, 2)
    assert "folder" in res.output.lower() or "directory" in res.output.lower()


def test_atomic_files_get_umask_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        target = tmp_path / "t.csv"
        write_text_atomic(target, "a,b\n")
        assert stat.S_IMODE(target.stat().st_mode) == 0o644
    finally:
        os.umask(old)


def test_closed_pipe_is_quiet():
    import typer

    from dcplan.cli.common import handle_errors

    demo = typer.Typer()

    @demo.command()
    @handle_errors
    def talk() -> None:
        raise BrokenPipeError(32, "Broken pipe")

    res = runner.invoke(demo, [])
    assert res.exit_code == 0
    assert "internal error" not in res.output


def test_closed_pipe_in_a_real_shell_pipeline(tmp_path):
    # Output far larger than a pipe buffer, read by `head`, which closes the pipe early.
    script = tmp_path / "talk.py"
    script.write_text(
        "import sys\n"
        "import typer\n"
        "from dcplan.cli.common import handle_errors\n"
        "@handle_errors\n"
        "def talk():\n"
        "    for _ in range(10000):\n"
        "        print('x' * 1000)\n"
        "try:\n"
        "    talk()\n"
        "except typer.Exit as exc:\n"
        "    sys.exit(exc.exit_code)\n")
    proc = subprocess.run(
        ["bash", "-c", f"'{sys.executable}' '{script}' | head -c 10 >/dev/null; "
                       "echo ${PIPESTATUS[0]}"],
        capture_output=True, text=True, cwd=REPO)
    assert proc.stdout.strip() == "0", proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


def test_wrapped_tables_never_split_a_number_or_an_id():
    """In a tight width the words wrap; 144,826,662 and seoul_metro stay whole."""
    from dcplan.export.text import format_table

    rows = [{"rank": 1, "limit": "grid_request", "site": "seoul_metro", "period": "2035",
             "value": 45000.0, "used": 45000.0, "unit": "kW", "price": 144826662.0,
             "relaxed": 80538868.0, "what": "USD per MW (present value)"}] * 2
    text = format_table(rows, width=90)
    assert "144,826,662" in text and "80,538,868" in text and "seoul_metro" in text
    assert "grid_request" in text
    assert max(len(line) for line in text.splitlines()) <= 90


def test_console_lists_the_grid_requests_of_the_plan(minimal_plan):
    """The grid table's requests, in MW, in the plan's console text."""
    from dcplan.export.terminal import plan_text

    result, _ = minimal_plan
    grid = result.tables["grid"]
    text = plan_text(result)
    assert "Grid connections requested" in text
    asked = grid[grid.requested_kw + grid.requested_assessed_kw > 0]
    assert len(asked)
    for r in asked.itertuples():
        mw = (r.requested_kw + r.requested_assessed_kw) / 1000
        assert any(line.split()[:2] == [str(r.period), r.site] and f"{mw:,.1f}" in line
                   for line in text.splitlines()), (r.period, r.site, mw)
