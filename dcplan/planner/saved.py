"""Saved plans: one file with a plan's tables, its solver outcome and the inputs behind it.

A saved plan (``dcplan plan SCENARIO --save FILE``) is a ZIP archive, readable with any
zip tool, pandas or pyarrow:

``manifest.json``
    ``format: dcplan-plan``, ``format_version``, the dcplan version that wrote it, the
    time, the scenario name, the input digest (:attr:`dcplan.case.Case.digest`), solver
    status, gap, objective, messages, notes, timings, model size, and for every table
    its file, units and row count.
``tables/<name>.parquet``
    Every result table (Apache Parquet, one file per table; units also in the file's
    pandas metadata).
``inputs/*.json``
    The resolved inputs: the scenario, the catalogs and sites with and without the
    scenario's overrides, the performance-model defaults and calibration, and the
    planner's coefficient tables (``plan_inputs.json``), so that the plan can be shown,
    exported and compared without the original files and without solving.

A file with another ``format`` or ``format_version`` is refused with a clear message;
one written by another dcplan version with the same format version is read.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd

from dcplan.errors import InputError, Problem, display_path
from dcplan.planner.result import PlanResult
from dcplan.planner.solver import SolveStatus
from dcplan.yamlio import atomic_path, max_input_bytes

#: Value of ``format`` in the manifest.
FORMAT = "dcplan-plan"
#: Version of the file layout; a reader refuses any other.
FORMAT_VERSION = 1
#: Largest saved plan read (it is a zip of tables; a plan of the largest benchmark is a
#: few MB) [bytes].
MAX_PLAN_BYTES = 200 * 1024 * 1024
#: Suffix ``dcplan`` suggests for saved plans.
SUFFIX = ".plan"


# ----------------------------------------------------------------------------------------
# JSON for dataclasses (the planner's inputs, performance parameters)
# ----------------------------------------------------------------------------------------


def _encode(obj: Any) -> Any:
    """Plain JSON data for dataclasses, tuples, sets, dates, enums and non-string keys."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {"__dataclass__": f"{type(obj).__module__}.{type(obj).__qualname__}"}
        for f in dataclasses.fields(obj):
            if f.name.startswith("_") or f.name == "facility":
                continue  # caches; facility-model objects are not inputs of the MILP
            out[f.name] = _encode(getattr(obj, f.name))
        return out
    if isinstance(obj, enum.Enum):
        return _encode(obj.value)
    if isinstance(obj, dict):
        if all(isinstance(k, str) for k in obj):
            return {k: _encode(v) for k, v in obj.items()}
        return {"__items__": [[_encode(k), _encode(v)] for k, v in obj.items()]}
    if isinstance(obj, tuple):
        return {"__tuple__": [_encode(v) for v in obj]}
    if isinstance(obj, frozenset | set):
        return {"__frozenset__": sorted((_encode(v) for v in obj), key=str)}
    if isinstance(obj, list):
        return [_encode(v) for v in obj]
    if isinstance(obj, dt.date):
        return {"__date__": obj.isoformat()}
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if hasattr(obj, "item") and not isinstance(obj, str | bytes):  # numpy scalars
        return obj.item()
    return obj


def _decode(obj: Any) -> Any:
    """Inverse of :func:`_encode` (dataclasses are rebuilt from dcplan's own modules)."""
    if isinstance(obj, list):
        return [_decode(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "__tuple__" in obj:
        return tuple(_decode(v) for v in obj["__tuple__"])
    if "__frozenset__" in obj:
        return frozenset(_decode(v) for v in obj["__frozenset__"])
    if "__items__" in obj:
        return {_decode(k): _decode(v) for k, v in obj["__items__"]}
    if "__date__" in obj:
        return dt.date.fromisoformat(obj["__date__"])
    if "__dataclass__" in obj:
        cls = _dataclass(obj["__dataclass__"])
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: _decode(v) for k, v in obj.items() if k in names}
        return cls(**kwargs)
    return {k: _decode(v) for k, v in obj.items()}


def _dataclass(qualname: str) -> type:
    import importlib

    module, _, name = qualname.rpartition(".")
    if not module.startswith("dcplan."):
        raise ValueError(f"not a dcplan class: {qualname}")
    cls = getattr(importlib.import_module(module), name)
    if not dataclasses.is_dataclass(cls):
        raise ValueError(f"not a dataclass: {qualname}")
    return cls


# ----------------------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------------------


def _catalog_data(catalog: Any) -> dict[str, Any]:
    return {"entries": {kind: [e.model_dump(mode="json") for e in table.values()]
                        for kind, table in catalog.entries.items()},
            "files": {k: str(v) for k, v in catalog.files.items()}}


def _case_data(case: Any) -> dict[str, dict[str, Any]]:
    scn = case.scenario
    return {
        "scenario.json": {"scenario": scn.model_dump(mode="json"),
                          "source_file": scn.source_file,
                          "line_map": {k: list(v) for k, v in scn.line_map.items()},
                          "path": str(case.path) if case.path else None,
                          "files": list(case.files), "changes": _encode(case.changes),
                          "demand_conversions": _encode(scn.demand_conversions)},
        "catalog.json": _catalog_data(case.catalog),
        "base_catalog.json": _catalog_data(case.base_catalog),
        "sites.json": {k: s.model_dump(mode="json") for k, s in case.sites.items()},
        "base_sites.json": {k: s.model_dump(mode="json") for k, s in case.base_sites.items()},
        "perf.json": {"perf_defaults": _encode(case.perf_defaults),
                      "calibration": _encode(case.calibration)},
    }


def _manifest(result: PlanResult) -> dict[str, Any]:
    from dcplan import __version__

    case = result.case
    return {
        "format": FORMAT, "format_version": FORMAT_VERSION, "dcplan_version": __version__,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "scenario": result.name, "input_digest": case.digest if case is not None else None,
        "status": result.status.value, "objective_usd": result.objective_usd,
        "gap": result.gap, "solver": result.solver, "unserved": result.unserved,
        "unserved_accepted": result.unserved_accepted, "message": result.message,
        "notes": list(result.notes), "timings_s": result.timings_s,
        "model_size": result.model_size,
        # the run this file was written by, shared with the command's other outputs
        "run": _run_stamp(),
        "tables": {name: {"file": f"tables/{name}.parquet", "rows": int(len(df)),
                          "units": dict(df.attrs.get("units", {}))}
                   for name, df in result},
    }


def _run_stamp() -> dict[str, Any] | None:
    """The open output set's run (:mod:`dcplan.outputset`), or None outside one."""
    from dcplan.outputset import current_stamp

    run = current_stamp()
    return run.as_dict() if run is not None else None


def save_result(result: PlanResult, path: Path | str) -> Path:
    """Write ``result`` (with the case it was solved from) to one saved-plan file.

    Written to a temporary file next to ``path`` and renamed, so ``path`` is either the
    old file or the complete new one.

    Returns
    -------
    Path
    """
    path = Path(path)
    with atomic_path(path, suffix=".zip") as tmp:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
            z.writestr("manifest.json", json.dumps(_manifest(result), indent=2, default=str))
            for name, df in result:
                buf = io.BytesIO()
                df.to_parquet(buf, index=False)
                z.writestr(f"tables/{name}.parquet", buf.getvalue())
            if result.case is not None:
                for fname, data in _case_data(result.case).items():
                    z.writestr(f"inputs/{fname}", json.dumps(data, default=str))
            if result.inputs is not None:
                z.writestr("inputs/plan_inputs.json", json.dumps(_encode(result.inputs)))
    return path


# ----------------------------------------------------------------------------------------
# Reading
# ----------------------------------------------------------------------------------------


def is_saved_plan(path: Path | str) -> bool:
    """Whether ``path`` is a zip file with a dcplan manifest (cheap: reads the zip index)."""
    try:
        with zipfile.ZipFile(path) as z:
            return "manifest.json" in z.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def _refuse(shown: str, message: str, field: str | None = None) -> InputError:
    return InputError(Problem(shown, message, field=field))


def read_manifest(path: Path | str) -> dict[str, Any]:
    """The manifest of a saved plan, checked for format and version.

    Raises
    ------
    InputError
        For a file that is not a saved plan, or one of another format version.
    """
    shown = display_path(path)
    p = Path(path)
    if not p.is_file():
        raise _refuse(shown, "saved plan not found; check the path")
    if p.stat().st_size > max(MAX_PLAN_BYTES, max_input_bytes()):
        raise _refuse(shown, "file is too large to be a saved plan")
    try:
        with zipfile.ZipFile(p) as z:
            raw = z.read("manifest.json")
    except (zipfile.BadZipFile, KeyError):
        raise _refuse(shown, "not a saved dcplan plan (write one with 'dcplan plan SCENARIO "
                             "--save FILE')") from None
    try:
        manifest = json.loads(raw)
    except ValueError:
        raise _refuse(shown, "the saved plan's manifest.json is not valid JSON; the file is "
                             "damaged: save the plan again", "manifest.json") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise _refuse(shown, f"not a saved dcplan plan (format {manifest.get('format')!r})"
                      if isinstance(manifest, dict) else "not a saved dcplan plan", "format")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise _refuse(shown, f"saved with plan format version {version} (dcplan "
                             f"{manifest.get('dcplan_version', '?')}); this dcplan reads "
                             f"version {FORMAT_VERSION}: re-plan the scenario with this "
                             "version, or use the dcplan that wrote it", "format_version")
    return manifest


def _case_from(data: dict[str, Any]) -> Any:
    """Rebuild the Case of a saved plan (entries re-validated by their schemas)."""
    from dcplan.case import Case
    from dcplan.catalog import Catalog
    from dcplan.scenario.schema import Scenario
    from dcplan.schema import KINDS
    from dcplan.sites import Site

    def catalog(d: dict[str, Any]) -> Catalog:
        entries = {}
        for kind, rows in d["entries"].items():
            schema = KINDS[kind][1]
            entries[kind] = {r["id"]: schema.model_validate(r) for r in rows}
        return Catalog(entries=entries, files={k: Path(v) for k, v in d["files"].items()})

    s = data["scenario.json"]
    scn = Scenario.model_validate(s["scenario"]).model_copy(update={
        "source_file": s["source_file"],
        "line_map": {k: tuple(v) for k, v in s["line_map"].items()},
        "demand_conversions": _decode(s.get("demand_conversions", {}))})
    perf = data.get("perf.json", {})
    return Case(scn, catalog(data["catalog.json"]),
                {k: Site.model_validate(v) for k, v in data["sites.json"].items()},
                catalog(data["base_catalog.json"]),
                {k: Site.model_validate(v) for k, v in data["base_sites.json"].items()},
                _decode(perf.get("perf_defaults")), _decode(perf.get("calibration")),
                Path(s["path"]) if s.get("path") else None, tuple(s.get("files", ())),
                _decode(s.get("changes", {"__tuple__": []})))


def load_result(path: Path | str) -> PlanResult:
    """Read a saved plan back into a :class:`PlanResult` (``case`` and ``inputs`` included).

    Raises
    ------
    InputError
        For a file that is not a saved plan, of another format version, or damaged.
    """
    shown = display_path(path)
    m = read_manifest(path)
    tables: dict[str, pd.DataFrame] = {}
    data: dict[str, Any] = {}
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            for name, info in m.get("tables", {}).items():
                df = pd.read_parquet(io.BytesIO(z.read(info["file"])))
                df.attrs["units"] = dict(info.get("units", {}))
                tables[name] = df
            for fname in ("scenario.json", "catalog.json", "base_catalog.json", "sites.json",
                          "base_sites.json", "perf.json", "plan_inputs.json"):
                if f"inputs/{fname}" in names:
                    data[fname] = json.loads(z.read(f"inputs/{fname}"))
        case = _case_from(data) if "scenario.json" in data else None
        inputs = _decode(data["plan_inputs.json"]) if "plan_inputs.json" in data else None
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - any damage is one clear message
        raise _refuse(shown, f"the saved plan is damaged or incomplete ({type(exc).__name__}: "
                             f"{exc}); save the plan again") from None
    result = PlanResult(
        name=m.get("scenario", ""), status=SolveStatus(m["status"]),
        objective_usd=m.get("objective_usd"), gap=m.get("gap"), solver=m.get("solver", ""),
        unserved=bool(m.get("unserved")), unserved_accepted=bool(m.get("unserved_accepted")),
        message=m.get("message", ""), tables=tables, timings_s=dict(m.get("timings_s", {})),
        model_size=dict(m.get("model_size", {})), notes=list(m.get("notes", [])),
        inputs=inputs, case=case)
    result.saved_from = {"path": str(path), "dcplan_version": m.get("dcplan_version"),
                         "created": m.get("created"), "input_digest": m.get("input_digest")}
    return result


__all__ = ["FORMAT", "FORMAT_VERSION", "SUFFIX", "is_saved_plan", "load_result",
           "read_manifest", "save_result"]
