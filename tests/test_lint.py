"""The code base passes the linter configured in pyproject.toml (style, numpydoc).

ruff is pinned in the test extra so that a new release cannot change the verdict.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_ruff_clean():
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]' installs it)")
    done = subprocess.run([ruff, "check", "--no-cache", "."], cwd=REPO, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_longest_first_files_exist():
    """A renamed test file in conftest.py's LONGEST_FIRST would silently run late."""
    from conftest import LONGEST_FIRST

    tests = Path(__file__).parent
    assert [n for n in LONGEST_FIRST if not (tests / n).is_file()] == []
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
