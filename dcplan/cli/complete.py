"""Shell completion of catalog ids, site ids and example scenarios.

Every TAB runs the command line once (``dcplan --install-completion`` installs the
shell's hook), so the ``autocompletion=`` callbacks here stay cheap: they read only the
one catalog file the option needs (or the site files), with the C YAML parser, and load
no schema. The catalogs and sites are those the command would use: ``--catalog-dir`` /
``--sites-dir`` when given before the sub-command, else ``DCPLAN_CATALOG_DIR`` /
``DCPLAN_SITES_DIR``, else the shipped ones. A file that cannot be read gives no
candidates, never an error: the shell then falls back to completing file names.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from dcplan.defaults import KIND_FILES

#: Suffixes of YAML files (scenarios, sites).
_YAML = (".yaml", ".yml")


def _load(path: Path) -> Any:
    """Parsed YAML of ``path``, read with the input limits of :mod:`dcplan.yamlio`.

    Raises
    ------
    Exception
        Whatever stops reading it (missing, special or too large file, bad YAML).
    """
    import yaml

    from dcplan.yamlio import read_text

    return yaml.load(read_text(path), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _given(ctx: typer.Context | None, name: str) -> Path | None:
    """A global option (``--catalog-dir``) given before the sub-command, else None."""
    root = ctx.find_root() if ctx is not None else None
    return root.params.get(name) if root is not None else None


def catalog_ids(kind: str, catalog_dir: Path | str | None = None) -> list[tuple[str, str]]:
    """Ids of one catalog kind with their names, in file order.

    Parameters
    ----------
    kind : str
        Catalog kind (a key of :data:`dcplan.defaults.KIND_FILES`).
    catalog_dir : Path or str, optional
        Catalog folder (default: ``DCPLAN_CATALOG_DIR``, else the shipped catalogs).

    Returns
    -------
    list of (str, str)
        ``(id, name)`` of each entry that has a text id (name "" when it has none);
        empty when the file cannot be read.
    """
    from dcplan.paths import data_dir

    try:
        data = _load(data_dir("catalogs", catalog_dir) / KIND_FILES[kind])
    except Exception:  # noqa: BLE001 - a TAB never fails; the shell completes files
        return []
    if not isinstance(data, list):
        return []
    return [(e["id"], str(e.get("name") or "")) for e in data
            if isinstance(e, dict) and isinstance(e.get("id"), str)]


def site_ids(sites_dir: Path | str | None = None) -> list[tuple[str, str]]:
    """Ids of the sites with their names, by file name.

    Parameters
    ----------
    sites_dir : Path or str, optional
        Folder of site files (default: ``DCPLAN_SITES_DIR``, else the shipped sites).

    Returns
    -------
    list of (str, str)
        ``(id, name)`` of each site file that can be read and has a text id.
    """
    from dcplan.paths import data_dir

    try:
        files = sorted(p for p in data_dir("sites", sites_dir).iterdir()
                       if p.suffix in _YAML and p.is_file())
    except OSError:
        return []
    out = []
    for path in files:
        try:
            data = _load(path)
        except Exception:  # noqa: BLE001 - a TAB never fails
            continue
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            out.append((data["id"], str(data.get("name") or "")))
    return out


def ids_of(kind: str) -> Callable[..., list[tuple[str, str]]]:
    """An ``autocompletion=`` callback for the ids of ``kind`` (a catalog kind or "sites").

    Parameters
    ----------
    kind : str
        A key of :data:`dcplan.defaults.KIND_FILES`, or ``"sites"``.

    Returns
    -------
    callable
        ``(ctx, incomplete) -> [(id, name), ...]``: the ids that start with
        ``incomplete``.
    """
    if kind != "sites" and kind not in KIND_FILES:
        raise ValueError(f"unknown catalog kind {kind!r}")

    def complete(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
        """Ids of the catalog kind (or sites) that start with ``incomplete``."""
        if kind == "sites":
            found = site_ids(_given(ctx, "sites_dir"))
        else:
            found = catalog_ids(kind, _given(ctx, "catalog_dir"))
        return [(i, name) for i, name in found if i.startswith(incomplete)]

    complete.__name__ = f"complete_{kind}"
    return complete


def any_id(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """``autocompletion=`` callback of ``catalog show``: ids of every catalog and site.

    Parameters
    ----------
    ctx : typer.Context
        Completion context (for ``--catalog-dir`` / ``--sites-dir``).
    incomplete : str
        What has been typed of the id.

    Returns
    -------
    list of (str, str)
        ``(id, kind)`` of each id that starts with ``incomplete``.
    """
    catalog_dir = _given(ctx, "catalog_dir")
    found = [(i, kind) for kind in KIND_FILES for i, _ in catalog_ids(kind, catalog_dir)]
    found += [(i, "sites") for i, _ in site_ids(_given(ctx, "sites_dir"))]
    return [(i, kind) for i, kind in found if i.startswith(incomplete)]


def _shown(path: Path) -> str:
    """``path`` as typed on the command line: relative to the working folder when inside it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive
        return str(path)
    return str(path) if rel.startswith("..") else rel


def scenario_files(incomplete: str) -> list[str]:
    """``autocompletion=`` callback of a scenario argument: YAML files and the examples.

    Parameters
    ----------
    incomplete : str
        What has been typed of the path.

    Returns
    -------
    list of str
        The YAML files whose path starts with ``incomplete`` (in the folder it names, as
        the shell would complete them) and the shipped examples whose path does (relative
        to the working folder when they are inside it, as in a source checkout, else
        absolute). Empty: the shell completes file names itself (folders too).
    """
    from dcplan.paths import shipped_dir

    head, slash, tail = incomplete.rpartition("/")
    folder = Path(os.path.expanduser(head + slash)) if slash else Path(".")
    found: set[str] = set()
    try:
        for p in folder.iterdir():
            if (p.name.startswith(tail) and p.suffix in _YAML and p.is_file()
                    and (tail.startswith(".") or not p.name.startswith("."))):
                found.add(head + slash + p.name)
    except OSError:
        pass
    try:
        examples = sorted(p for p in shipped_dir("examples").iterdir()
                          if p.suffix in _YAML and p.is_file())
    except OSError:
        examples = []
    found |= {s for s in map(_shown, examples) if s.startswith(incomplete)}
    return sorted(found)
