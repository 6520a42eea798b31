"""The command line starts without its heavy libraries, and completes ids.

``dcplan --version``, ``--help`` and a shell-completion TAB run the console script's own
entry point in a fresh interpreter; the modules it loaded are read from ``sys.modules``
after it finished. The completions are compared with ids read independently from the
catalog and site files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import typer.core
import typer.main
import yaml

REPO = Path(__file__).resolve().parent.parent

#: Libraries that neither a sub-command's help nor completion needs.
HEAVY = {"pandas", "numpy", "matplotlib", "dask", "distributed", "scipy", "pulp", "highspy",
         "openpyxl", "networkx"}
#: Not needed by ``dcplan --version`` and ``dcplan --help`` either. Typer (0.29) coerces
#: every parameter it parses with pydantic, so a sub-command's help and a completion
#: (which parse the global options first) load pydantic itself; dcplan's schemas stay
#: unloaded (:data:`SCHEMAS`). Completion reads YAML; tables are drawn with rich.
NOT_FOR_VERSION = HEAVY | {"pydantic", "pydantic_core", "yaml", "rich"}
#: dcplan's schema modules (pydantic models), loaded only by commands that read data.
SCHEMAS = {"dcplan.schema", "dcplan.catalog", "dcplan.sites", "dcplan.scenario",
           "dcplan.case", "dcplan.api"}

#: Runs the ``dcplan`` console script's entry point as the shell runs it (program name
#: "dcplan", so completion reads _DCPLAN_COMPLETE), then reports the top-level modules
#: loaded on stderr.
_RUN = """
import json, sys
sys.argv = ["dcplan", *json.loads(sys.argv[1])]
from dcplan.__main__ import main
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
sys.stdout.flush()
print("MODULES=" + json.dumps(sorted(sys.modules)), file=sys.stderr)
sys.exit(code)
"""


def _dcplan(args: list[str], env: dict[str, str] | None = None, cwd: Path = REPO):
    """Run dcplan in a fresh interpreter: (completed process, modules loaded).

    The modules are the top-level packages loaded and dcplan's own modules.
    """
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    done = subprocess.run([sys.executable, "-c", _RUN, json.dumps(args)], cwd=cwd,
                          env=full_env, capture_output=True, text=True, timeout=120)
    lines = done.stderr.splitlines()
    marks = [ln for ln in lines if ln.startswith("MODULES=")]
    assert marks, done.stderr
    names = json.loads(marks[-1].removeprefix("MODULES="))
    return done, {n.split(".")[0] for n in names} | {n for n in names if n.startswith("dcplan")}


def _complete(words: str, env: dict[str, str] | None = None, cwd: Path = REPO):
    """Bash completion of the last word of ``words`` (as the installed hook asks for it)."""
    parts = words.split(" ")
    done, modules = _dcplan([], {"_DCPLAN_COMPLETE": "complete_bash", "COMP_WORDS": words,
                                 "COMP_CWORD": str(len(parts) - 1), **(env or {})}, cwd)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return [ln for ln in done.stdout.splitlines() if ln], modules


def _ids(path: Path) -> list[str]:
    """Ids of a catalog file, read here with PyYAML (not with dcplan)."""
    return [e["id"] for e in yaml.safe_load(path.read_text())]


@pytest.mark.parametrize("args", [["--version"], ["--help"]])
@pytest.mark.slow
def test_version_and_help_load_no_heavy_library(args):
    done, modules = _dcplan(args)
    assert done.returncode == 0, done.stderr
    assert "dcplan.cli.app" in modules and "typer" in modules  # the report is of the run
    assert not modules & NOT_FOR_VERSION, sorted(modules & NOT_FOR_VERSION)
    assert not modules & SCHEMAS
    assert done.stdout.startswith("dcplan " if args == ["--version"] else "Usage: dcplan")


@pytest.mark.parametrize("args", [["perf", "--help"], ["plan", "--help"],
                                  ["catalog", "list", "--help"], ["sweep", "--help"],
                                  ["cooling", "--help"], ["perf", "frontier", "--help"]])
@pytest.mark.slow
def test_command_help_loads_no_schema(args):
    done, modules = _dcplan(args)
    assert done.returncode == 0, done.stderr
    assert "Usage: dcplan" in done.stdout
    assert not modules & (HEAVY | SCHEMAS), sorted(modules & (HEAVY | SCHEMAS))


@pytest.mark.slow
def test_a_command_still_loads_what_it_needs():
    # The check above is not vacuous: a command that reads the catalog loads pydantic.
    done, modules = _dcplan(["catalog", "list", "racks", "--json"])
    assert done.returncode == 0, done.stderr
    assert "dcplan.catalog" in modules and "pydantic" in modules
    assert {r["id"] for r in json.loads(done.stdout)} == set(_ids(REPO / "catalogs/racks.yaml"))


@pytest.mark.slow
def test_rack_completion_gives_the_catalog_ids_and_loads_no_heavy_library():
    got, modules = _complete("dcplan perf --rack gb2")
    expected = [i for i in _ids(REPO / "catalogs/racks.yaml") if i.startswith("gb2")]
    assert expected and all(i.startswith("gb200") for i in expected)  # the catalog's GB200
    assert sorted(got) == sorted(expected)
    assert "gb200_nvl72" in got
    assert not modules & (HEAVY | SCHEMAS), sorted(modules & (HEAVY | SCHEMAS))


@pytest.mark.parametrize(("words", "kind"), [
    ("dcplan perf --model deep", "models"),
    ("dcplan perf --workload c", "workloads"),
    ("dcplan perf frontier --rack ", "racks"),
    ("dcplan perf frontier --model llama", "models"),
    ("dcplan network --optics lpo", "optics"),
    ("dcplan tokens count -m ll", "models"),
])
@pytest.mark.slow
def test_id_completion_of_each_kind(words, kind):
    got, _ = _complete(words)
    typed = words.rsplit(" ", 1)[1]
    expected = [i for i in _ids(REPO / "catalogs" / f"{kind}.yaml") if i.startswith(typed)]
    assert expected
    assert sorted(got) == sorted(expected)


@pytest.mark.slow
def test_site_completion_reads_every_site_file():
    got, modules = _complete("dcplan cooling --rack gb200_nvl72 --racks 10 --site ")
    expected = [yaml.safe_load(p.read_text())["id"] for p in (REPO / "sites").glob("*.yaml")]
    assert len(expected) >= 2
    assert sorted(got) == sorted(expected)
    assert not modules & (HEAVY | SCHEMAS)


@pytest.mark.slow
def test_completion_uses_the_catalog_the_command_would(tmp_path):
    (tmp_path / "racks.yaml").write_text("- id: my_rack\n  name: mine\n- id: other\n")
    got, _ = _complete(f"dcplan --catalog-dir {tmp_path} perf --rack m")
    assert got == ["my_rack"]
    got, _ = _complete("dcplan perf --rack ", env={"DCPLAN_CATALOG_DIR": str(tmp_path)})
    assert sorted(got) == ["my_rack", "other"]


@pytest.mark.slow
def test_an_unreadable_catalog_completes_nothing_without_an_error(tmp_path):
    (tmp_path / "racks.yaml").write_text("- id: [unclosed\n")
    got, _ = _complete(f"dcplan --catalog-dir {tmp_path} perf --rack ")
    assert got == []  # the shell then completes file names (complete -o default)
    got, _ = _complete(f"dcplan --catalog-dir {tmp_path / 'missing'} cooling --rack x")
    assert got == []


@pytest.mark.slow
def test_catalog_show_and_list_completion():
    got, _ = _complete("dcplan catalog show gb")
    expected = [i for kind in ("accelerators", "racks")
                for i in _ids(REPO / "catalogs" / f"{kind}.yaml") if i.startswith("gb")]
    assert len(expected) >= 2
    assert sorted(got) == sorted(expected)
    got, _ = _complete("dcplan catalog list s")
    assert sorted(got) == ["salaries", "sites", "software", "staffing", "storage", "switches"]


@pytest.mark.slow
def test_scenario_completion_in_the_repository():
    got, modules = _complete("dcplan plan examples/min")
    assert got == ["examples/minimal.yaml"]
    got, _ = _complete("dcplan plan ")
    examples = sorted(f"examples/{p.name}" for p in (REPO / "examples").glob("*.yaml"))
    assert set(examples) <= set(got)
    assert all(g.endswith((".yaml", ".yml")) for g in got)
    assert not modules & (HEAVY | SCHEMAS)


def test_scenario_completion_elsewhere(tmp_path, monkeypatch):
    from dcplan.cli.complete import scenario_files

    (tmp_path / "a.yaml").write_text("{}")
    (tmp_path / "b.txt").write_text("")
    (tmp_path / ".hidden.yaml").write_text("{}")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.yml").write_text("{}")
    monkeypatch.chdir(tmp_path)
    examples = sorted(str(p) for p in (REPO / "examples").glob("*.yaml"))
    assert scenario_files("") == sorted(["a.yaml", *examples])  # examples by full path
    assert scenario_files("sub/") == ["sub/c.yml"]
    assert scenario_files(".h") == [".hidden.yaml"]
    assert scenario_files("zzz") == []  # the shell completes file names itself
    assert scenario_files(str(REPO / "examples" / "min")) == [
        str(REPO / "examples" / "minimal.yaml")]


#: Options that name a catalog entry or site, and the kind each completes.
ID_OPTIONS = {"--rack": "racks", "--model": "models", "--workload": "workloads",
              "--site": "sites", "--hardware": "accelerators", "--optics": "optics",
              "--switch": "switches", "--tokenizer": "tokenizers"}


def _options(cmd, path: str = "dcplan"):
    """Every (command path, option) of the command tree."""
    for p in cmd.params:
        if isinstance(p, typer.core.TyperOption):
            yield path, p
    for name, sub in getattr(cmd, "commands", {}).items():
        yield from _options(sub, f"{path} {name}")


def _kind_ids(kind: str) -> set[str]:
    """Ids of a catalog kind or of the sites, read here with PyYAML."""
    if kind == "sites":
        return {yaml.safe_load(p.read_text())["id"] for p in (REPO / "sites").glob("*.yaml")}
    return set(_ids(REPO / "catalogs" / f"{kind}.yaml"))


@pytest.mark.slow
def test_every_id_option_completes_its_kind():
    from dcplan.cli import app

    root = typer.main.get_command(app)
    seen = 0
    for path, opt in _options(root):
        kind = next((ID_OPTIONS[o] for o in opt.opts if o in ID_OPTIONS), None)
        if kind is None:
            continue
        seen += 1
        where = f"{path} {opt.opts[0]}"
        assert opt._custom_shell_complete is not None, f"{where} has no completion"
        got = {c.value for c in opt.shell_complete(typer.Context(root), "")}
        assert got == _kind_ids(kind), where
    assert seen >= 12
