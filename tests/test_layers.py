"""The layering of docs/architecture.md holds: no module imports a higher layer, and no
module imports itself through others (no import circle).

Every ``import``/``from ... import`` in the package is read with :mod:`ast`, including
imports inside functions (a deferred import is still a dependency).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "dcplan"

#: Layers, lowest first: (name, module prefixes). The first matching prefix wins, so
#: the data modules of the perf and facility packages sit below their physics.
LAYERS = [
    ("base", ["dcplan.errors", "dcplan.units", "dcplan.paths", "dcplan.defaults",
              "dcplan.outputset", "dcplan.yamlio", "dcplan.tableio", "dcplan.lazy"]),
    ("data", ["dcplan.schema", "dcplan.catalog", "dcplan.sites", "dcplan.scenario",
              "dcplan.perf.params", "dcplan.perf.benchmarks", "dcplan.perf.recipes",
              "dcplan.facility.assumptions", "dcplan.tokens", "dcplan.lengths"]),
    ("case", ["dcplan.case"]),
    ("models", ["dcplan.perf", "dcplan.facility", "dcplan.buildbuy",
                "dcplan.demand"]),
    ("planner", ["dcplan.planner"]),
    ("sweep", ["dcplan.sweep"]),
    ("export", ["dcplan.export"]),
    ("api", ["dcplan.api"]),
    ("cli", ["dcplan.cli", "dcplan.__main__"]),
]


def layer_of(module: str) -> int | None:
    """Index in :data:`LAYERS` of a dcplan module (None for the package itself)."""
    for i, (_name, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    return None


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text())
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                up = up[: len(up) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            out.append((base, node.lineno))
            out += [(f"{base}.{a.name}", node.lineno) for a in node.names]
    return [(m, ln) for m, ln in out if m.startswith("dcplan")]


def test_every_module_has_a_layer():
    missing = [_module_name(p) for p in PKG.rglob("*.py")
               if _module_name(p) != "dcplan" and layer_of(_module_name(p)) is None]
    assert not missing, missing


@pytest.mark.slow
def test_no_import_points_up():
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        me = _module_name(path)
        mine = layer_of(me)
        if mine is None:
            continue
        for target, line in _imports(path):
            theirs = layer_of(target)
            if theirs is not None and theirs > mine:
                bad.append(f"{path.relative_to(PKG.parent)}:{line}: {me} ({LAYERS[mine][0]}) "
                           f"imports {target} ({LAYERS[theirs][0]})")
    assert not bad, "\n".join(bad)


def _module_graph():
    """Directed graph of the package's modules: an edge for each import of another module.

    ``from a.b import c`` points at ``a.b.c`` when that is a module, else at ``a.b``;
    ``import a.b.c`` at the longest module prefix of the name. Importing a submodule is
    not counted as importing its package's ``__init__`` (Python runs it first, but a
    package that imports its own submodules would otherwise always be a circle).
    Deferred imports (inside functions) count, like in :func:`test_no_import_points_up`.
    """
    import networkx as nx

    modules = {_module_name(p): p for p in PKG.rglob("*.py")}

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for me, path in modules.items():
        package = me if path.name == "__init__.py" else me.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [known(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")
                    up = up[: len(up) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else known(base)
                           for a in node.names]
            else:
                continue
            for target in targets:
                if target is not None and target != me:
                    graph.add_edge(me, target, where=f"{path.relative_to(PKG.parent)}:"
                                                     f"{node.lineno}")
    return graph


@pytest.mark.slow
def test_no_import_cycles():
    """No module of the package imports, directly or through others, one that imports it."""
    import networkx as nx

    graph = _module_graph()
    bad = []
    for group in nx.strongly_connected_components(graph):
        if len(group) < 2:
            continue
        cycle = nx.find_cycle(graph.subgraph(group))
        bad.append(" -> ".join(f"{a} ({graph.edges[a, b]['where']})" for a, b in cycle)
                   + f" -> {cycle[0][0]}" + (f"  [{len(group)} modules in the circle: "
                                             f"{', '.join(sorted(group))}]"
                                             if len(group) > len(cycle) else ""))
    assert not bad, "import circles:\n" + "\n".join(bad)


#: Performance physics: takes parameters, never files (pvlib's ``sapm_cell(poa_global,
#: temp_air, wind_speed, a, b, deltaT)`` is the model). Defaults and calibration come in
#: from the Case or :func:`dcplan.perf.params.load_perf_inputs`; what the measurement
#: files' benchmarks ran (lengths, recipes) from the same loader
#: (:mod:`dcplan.perf.benchmarks`).
PERF_PHYSICS = ["roofline", "serving", "speculative", "software", "goodput", "latency",
                "power", "predict"]
#: What reading a file takes: modules and names.
FILE_MODULES = ("pathlib", "dcplan.yamlio", "dcplan.paths", "yaml", "csv", "io")
FILE_NAMES = ("load_catalog", "read_yaml", "load_perf_defaults", "load_calibration",
              "load_perf_inputs", "perf_folder", "data_dir", "load_benchmarks",
              "load_benchmark_lengths", "load_power_systems", "load_recipes")


def _file_access(path: Path) -> list[str]:
    """Imports of file-reading modules or loaders, and open() calls, in ``path``."""
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] + [a.name for a in node.names]
        elif isinstance(node, ast.Call):
            f = node.func
            called = f.id if isinstance(f, ast.Name) else f.attr if isinstance(
                f, ast.Attribute) else ""
            if called in ("open", "read_text", "read_bytes"):
                out.append(f"{path.name}:{node.lineno}: calls {called}()")
        for n in names:
            if n in FILE_NAMES or any(n == m or n.startswith(m + ".") for m in FILE_MODULES):
                out.append(f"{path.name}:{node.lineno}: imports {n}")
    return out


@pytest.mark.parametrize("module", PERF_PHYSICS)
def test_perf_physics_reads_no_file(module):
    found = _file_access(PKG / "perf" / f"{module}.py")
    assert not found, "\n".join(found)
