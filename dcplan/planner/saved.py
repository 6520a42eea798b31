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

A saved plan is untrusted data: :func:`load_result` checks the zip's directory and
every member's declared size and compression ratio before it inflates anything, reads
each member with a bounded read, checks the manifest against a schema
(:class:`Manifest`), each table's Parquet metadata (rows, columns, types) before it
decodes it and its figures after (counts whole and not negative, no NaN where a plan
never writes one, row counts as the manifest says, a status consistent with the
tables), and rebuilds the inputs only into the dataclasses of :func:`input_classes`,
never importing a module the file names. Anything else is an :class:`InputError` that
starts with "damaged or not a dcplan plan" and names the file, the member and the
field (docs/outputs.md, "Saved plans").
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import functools
import io
import json
import math
import struct
import zipfile
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from dcplan.errors import InputError, Problem, display_path
from dcplan.planner.plan_result import PlanResult
from dcplan.planner.solver import SolveStatus
from dcplan.yamlio import SizeLimit, atomic_path, check_regular, max_input_bytes

#: Value of ``format`` in the manifest.
FORMAT = "dcplan-plan"
#: Version of the file layout; a reader refuses any other.
FORMAT_VERSION = 1
#: Suffix ``dcplan`` suggests for saved plans.
SUFFIX = ".plan"

_MIB = 1024 * 1024
#: Largest saved-plan file read, as stored (the larger of this and the input-file limit
#: of :func:`dcplan.yamlio.max_input_bytes`) [bytes]. The shipped examples' plans are
#: 0.15-0.17 MB.
MAX_PLAN_BYTES = 128 * _MIB
#: Most members a saved plan's zip may hold [members] (dcplan writes 27: the manifest,
#: 19 tables, 7 input files).
MAX_MEMBERS = 64
#: Largest zip central directory read [bytes] (a real plan's is 1.8 kB; the
#: directory is parsed whole when the zip is opened, so it is checked first).
MAX_DIRECTORY_BYTES = 1 * _MIB
#: Largest uncompressed size of one member [bytes]. The largest member of the shipped
#: examples' plans is ``inputs/catalog.json``, 0.11 MB.
MAX_MEMBER_BYTES = 32 * _MIB
#: Largest uncompressed size of all members together [bytes] (the examples' plans: 0.55
#: to 0.60 MB).
MAX_TOTAL_BYTES = 128 * _MIB
#: Highest compression ratio (uncompressed / compressed size) accepted for a member of
#: more than :data:`RATIO_CHECKED_BYTES` [-]. dcplan's members compress 1.7-6 times
#: (JSON with deflate, Parquet that is already compressed); a run of zeros deflates
#: about 1,000 times.
MAX_COMPRESSION_RATIO = 100.0
#: Members at most this large are not checked for their compression ratio [bytes].
RATIO_CHECKED_BYTES = 1 * _MIB
#: Most cells (rows x columns) of one result table [cells]; checked on the Parquet
#: metadata before the table is decoded. The largest table of the examples' plans has
#: 3,700 cells; a 50-site, 40-quarter, 12-rack, 6-workload plan's allocation table
#: would have at most 1.5 million.
MAX_TABLE_CELLS = 2_500_000
#: Most cells of all tables together [cells] (decoded tables are kept in memory; the
#: examples' plans have 9,400-17,000, such a 50-site plan would have about 4 million).
MAX_PLAN_CELLS = 5_000_000
#: Most bytes the text of one table decodes to [bytes] (checked on its dictionary
#: encoding, before the text is decoded; the examples' tables: at most 18 kB; such a
#: 50-site plan's allocation table about 11 MB).
MAX_TABLE_TEXT_BYTES = 16 * _MIB
#: Most bytes of distinct text values of all tables together, each counted with
#: :data:`TEXT_VALUE_BYTES` of overhead (the Python strings kept) [bytes] (the examples'
#: plans: 22-29 kB).
MAX_TEXT_VALUE_BYTES = 16 * _MIB
#: Memory of a Python string beyond its characters [bytes].
TEXT_VALUE_BYTES = 50
#: Most columns of one result table [columns] (dcplan's widest has 19).
MAX_TABLE_COLUMNS = 256
#: Most separators (commas and opening brackets) in one JSON member [-]: a bound on the
#: values it parses into, checked before parsing (each value but the first follows one).
#: The examples' largest has 3,600 (``inputs/catalog.json``); the ``plan_inputs.json``
#: of the largest benchmark instance (50 sites, 40 quarters, 12 racks, 6 workloads)
#: would have 36,000. The worst JSON within it (250,000 distinct keys of empty objects)
#: makes ``show`` peak at about 265 MB before it is refused.
MAX_JSON_SEPARATORS = 500_000
#: Tolerance of the count checks [count] (as :func:`dcplan.api.typed`).
COUNT_TOLERANCE = 1e-6
#: First words of the units of columns that count things (``racks``, ``racks (at
#: peak)``, ``units``, ``positions``): never negative, NaN or infinite. Some are
#: fractions (racks allocated at the peak, the availability derate, a linear fabric's
#: network positions), so only :data:`WHOLE_COUNTS` must be whole.
COUNT_WORDS = ("racks", "units", "positions", "count")
#: Columns a plan writes as whole, non-negative counts (purchases are integer decision
#: variables, rounded; positions, CDUs and equipment are counted from them), by table.
#: Checked whatever units the manifest gives them.
WHOLE_COUNTS: dict[str, tuple[str, ...]] = {
    "fleet": ("installed_racks", "new_racks", "retired_racks", "spare_racks",
              "rack_positions"),
    "cooling": ("cdus", "milp_cdus"),
    "network": ("racks",),
    "bom": ("installed", "new", "removed"),
    "equipment": ("count",),
}
#: Columns of the result tables as this dcplan writes them (every plan of the examples
#: has exactly these); a table may have more, never fewer (the exporters read them).
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "kpis": ("kpi", "value", "unit"),
    "fleet": (
        "period", "site", "rack", "installed_racks", "new_racks", "retired_racks",
        "allocated_racks", "headroom_racks", "unavailable_racks", "spare_racks", "rack_positions",
        "utilisation_frac"
    ),
    "allocation": (
        "period", "site", "rack", "workload", "pool", "schedule", "racks", "tokens_per_s", "it_kw"
    ),
    "demand": (
        "period", "workload", "pool", "demand_stated", "demand_unit", "tokens_per_unit",
        "conversion", "demand_tokens_per_s_avg", "demand_tokens_per_s_peak",
        "served_tokens_per_s_avg", "served_tokens_per_s_peak", "unserved_tokens_per_s_avg",
        "unserved_tokens_per_s_peak"
    ),
    "power": (
        "period", "site", "peak_hour", "it_kw_peak", "cooling_kw_peak", "network_kw",
        "losses_kw_peak", "facility_kw_peak", "recharge_kw", "power_redundancy",
        "network_positions", "grid_kw", "connectable_kw", "headroom_kw", "built_kw", "it_kw_avg",
        "facility_kw_avg", "energy_kwh", "carbon_t", "it_total_kw_peak", "it_total_kw_avg"
    ),
    "cooling": (
        "period", "site", "liquid_heat_kw", "air_heat_kw", "liquid_heat_kw_full_load", "cdu_ids",
        "cdus", "cdus_by_model", "cdu_positions", "cdu_capex_usd", "cdu_capex_diff_usd",
        "milp_cdus_by_model", "milp_cdus", "milp_cdu_positions", "milp_cdu_capex_usd",
        "cooling_kw_peak", "pue_annual", "pue_peak", "water_m3", "water_limit_m3",
        "wue_l_per_kwh"
    ),
    "network": (
        "period", "site", "rack", "fabric", "racks", "switch_id", "leaf_switches", "spine_switches",
        "core_switches", "nic_leaf_links", "leaf_spine_links", "spine_core_links", "network_kw",
        "network_capex_usd"
    ),
    "costs": ("period", "category", "kind", "cost_usd", "discount_factor", "cost_usd_discounted"),
    "cashflow": (
        "period", "years", "capex_usd", "opex_usd", "staff_software_usd", "depreciation_usd",
        "book_value_usd", "annualised_capital_usd", "annualised_cost_usd", "tokens_served",
        "usd_per_million_tokens_annualised", "usd_per_million_tokens_cash", "api_usd",
        "net_cash_flow_usd", "cumulative_net_cash_flow_usd", "api"
    ),
    "build_vs_buy": (
        "api", "provider", "api_model", "workload", "comparison", "input_mtok", "cached_input_mtok",
        "output_mtok", "api_usd", "api_usd_per_mtok", "plan_usd", "plan_usd_per_mtok",
        "reserve_usd_per_mtok", "saving_frac", "cheaper", "break_even_demand_frac",
        "break_even_utilisation_frac", "as_of"
    ),
    "requests": (
        "workload", "model", "tokens_per_request", "requests", "energy_kwh", "tokens_per_kwh",
        "wh_per_request"
    ),
    "unserved": (
        "workload", "pool", "period", "short_tokens_per_s_peak", "demand_tokens_per_s_peak",
        "short_frac", "short_tokens_per_month"
    ),
    "shadow_prices": (
        "family", "site", "workload", "pool", "period", "shadow_price", "shadow_price_relaxed",
        "unit"
    ),
    "binding": (
        "rank", "limit", "site", "period", "value", "used", "unit", "shadow_price",
        "shadow_price_relaxed", "shadow_unit"
    ),
    "bom": (
        "site", "period", "category", "item", "catalog_id", "purchase", "installed", "new",
        "removed", "kw", "capex_usd", "new_capex_usd", "included_kw", "included_capex_usd"
    ),
    "sizing": ("site", "period", "quantity", "unit", "plan", "exact", "diff", "diff_frac"),
    "equipment": (
        "site", "period", "category", "fabric", "item", "catalog_id", "count", "kw", "capex_usd",
        "in_rack"
    ),
    "grid": (
        "period", "site", "connectable_kw", "committed_kw", "requested_kw", "requested_assessed_kw",
        "energised_kw", "connected_kw", "used_kw", "lead_time_months", "assessment_months"
    ),
    "hours": ("period", "site", "hour", "it_kw", "facility_kw", "it_total_kw"),
    "schedules": (
        "period", "workload", "schedule", "flexible", "peak_to_average", "peak_hour", "share_frac"
    ),
}
#: Columns of the result tables only some plans have (``caps``: a scenario with
#: ``power_caps``; ``dispatch`` and ``sources``: one with ``storage`` or
#: ``onsite_generation``); plans saved before such a table existed simply lack it.
OPTIONAL_TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "caps": ("period", "site", "rack", "power_cap_frac", "racks", "power_at_cap_kw",
             "tokens_per_s", "site_facility_kw_peak", "site_racks_per_mw",
             "site_tokens_per_s_per_mw"),
    "power_oversubscription": (
        "period", "site", "oversubscription_factor", "basis_it_kw", "provisioned_it_kw",
        "draw_it_kw_peak", "draw_sigma_kw_peak", "exceed_prob", "exceed_prob_peak_hour",
        "excess_mwh_per_year", "tokens_lost_per_s_avg", "tokens_lost_frac",
        "tokens_counted_per_s_avg"),
    "dispatch": ("period", "site", "hour", "weight_frac", "facility_kw", "served_kw",
                 "battery_charge_kw", "battery_discharge_kw", "battery_soc_kwh", "onsite_kw",
                 "grid_kw"),
    "sources": ("period", "site", "grid_peak_hour", "grid_kw_peak", "facility_kw_at_grid_peak",
                "served_kw_at_grid_peak", "battery_discharge_kw_at_grid_peak",
                "onsite_kw_at_grid_peak", "battery_kwh", "battery_kw", "onsite_capacity_kw",
                "facility_mwh", "grid_mwh",
                "battery_discharge_mwh", "battery_loss_mwh", "onsite_mwh", "onsite_carbon_t",
                "onsite_fuel_usd", "onsite_hours_below_min_load"),
}
#: Tables whose every numeric column a plan writes finite (other tables hold NaN where
#: a figure does not exist: a KPI without tokens, a PUE without load, the switches of a
#: linear fabric, a relative difference from zero, an infinite break-even).
FINITE_TABLES = ("fleet", "allocation", "demand", "power", "costs", "hours")
#: Tables a plan with a solution always has and that ``show``, ``export`` and
#: ``compare`` read.
REQUIRED_TABLES = ("kpis", "fleet", "power", "costs")
#: Columns of the KPI table.
KPI_COLUMNS = ("kpi", "value", "unit")
#: Input files of a saved plan, under ``inputs/``.
INPUT_FILES = ("scenario.json", "catalog.json", "base_catalog.json", "sites.json",
               "base_sites.json", "perf.json", "plan_inputs.json")
#: How every refusal of a damaged or foreign file starts.
DAMAGED = "damaged or not a dcplan plan"
#: What to do about a damaged file.
FIX = "save the plan again (dcplan plan SCENARIO --save FILE)"


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


#: Qualified names of the dataclasses a saved plan's inputs may name (the allow-list;
#: :func:`input_classes` maps them to the classes). Checked on every input member before
#: anything is rebuilt or imported.
@functools.cache
def input_classes() -> dict[str, type]:
    """The dataclasses a saved plan's inputs may be rebuilt into, by qualified name.

    A fixed list, written out below: the classes :func:`_encode` writes for the
    planner's inputs
    (:class:`~dcplan.planner.inputs.PlanInputs` and what its fields hold), the
    performance-model defaults and calibration and the scenario's demand conversions.
    ``tests/test_saved_hostile.py`` checks that it holds every dataclass reachable from
    those by their fields' types. A name not in it is refused; no module named by a
    file is ever imported.

    Returns
    -------
    dict
        ``"module.QualName"`` (as :func:`_encode` writes it) -> class.
    """
    from dcplan.perf.params import (
        Calibration,
        FitBasis,
        HardwareParams,
        PerfDefaults,
        PhysicsParams,
        ServingParams,
        SoftwareFit,
        SoftwareSpec,
    )
    from dcplan.planner.fabric import FabricData
    from dcplan.planner.inputs import (
        CduData,
        ExistingData,
        FlexData,
        GridData,
        OnsiteData,
        PerfData,
        PlanInputs,
        RackData,
        RackSiteData,
        SiteData,
        StorageData,
        WorkloadData,
    )
    from dcplan.planner.operations import ApiOffer, OperationsData
    from dcplan.scenario.schema import DemandConversion, Period

    classes = (PlanInputs, Period, RackData, SiteData, RackSiteData, GridData, PerfData,
               WorkloadData, ExistingData, FabricData, OperationsData, ApiOffer,
               PerfDefaults, Calibration, HardwareParams, PhysicsParams, ServingParams,
               SoftwareFit, SoftwareSpec, DemandConversion, StorageData, OnsiteData,
               FlexData, CduData, FitBasis)
    return {f"{c.__module__}.{c.__qualname__}": c for c in classes}


def _decode(obj: Any, filled: set[str] | None = None) -> Any:
    """Inverse of :func:`_encode`; dataclasses only from :func:`input_classes`.

    A performance-model set (``HardwareParams``, ``PhysicsParams``, ``ServingParams``,
    ``SoftwareSpec``) written by an older dcplan, before one of its fields existed, takes
    this dcplan's a-priori value of it (:func:`_absent_parameters`); its name is added to
    ``filled`` so the plan can say so.

    Raises
    ------
    ValueError
        For a ``__dataclass__`` name that is not one of :func:`input_classes`.
    """
    def dec(v: Any) -> Any:
        return _decode(v, filled)

    if isinstance(obj, list):
        return [dec(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "__tuple__" in obj:
        return tuple(dec(v) for v in obj["__tuple__"])
    if "__frozenset__" in obj:
        return frozenset(dec(v) for v in obj["__frozenset__"])
    if "__items__" in obj:
        return {dec(k): dec(v) for k, v in obj["__items__"]}
    if "__date__" in obj:
        return dt.date.fromisoformat(obj["__date__"])
    if "__dataclass__" in obj:
        cls = _dataclass(obj["__dataclass__"])
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: dec(v) for k, v in obj.items() if k in names}
        absent = _absent_parameters(cls)
        if absent and names - set(kwargs):
            missing = sorted(names - set(kwargs))
            kwargs |= {k: absent[k] for k in missing}
            if filled is not None:
                filled.update(missing)
        return cls(**kwargs)
    return {k: dec(v) for k, v in obj.items()}


def _absent_parameters(cls: type) -> dict[str, Any]:
    """A-priori values (this dcplan's) of ``cls``'s fields, for performance-model sets only.

    ``HardwareParams``: ``perf_defaults.yaml`` ``default:``; ``PhysicsParams``: its
    ``physics:``; ``ServingParams``: its ``serving:``; ``SoftwareSpec``: its
    ``software:``; any other class: none (a missing field is damage).
    """
    from dcplan.perf.params import (
        HardwareParams,
        PhysicsParams,
        ServingParams,
        SoftwareSpec,
        load_perf_defaults,
    )

    sections = {HardwareParams: "default", PhysicsParams: "physics",
                ServingParams: "serving", SoftwareSpec: "software"}
    if cls not in sections:
        return {}
    part = getattr(load_perf_defaults(), sections[cls])
    return {f.name: getattr(part, f.name) for f in dataclasses.fields(part)}


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
        "gap": result.gap, "bound_usd": result.bound_usd, "bound_source": result.bound_source,
        "solver": result.solver, "unserved": result.unserved,
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

    Parameters
    ----------
    result : PlanResult
        The plan (with its ``case`` and ``inputs`` when set).
    path : Path or str
        File to write (``*.plan`` by convention).

    Returns
    -------
    Path
        ``path``.
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
# Reading: a saved plan is untrusted data
# ----------------------------------------------------------------------------------------

#: A number that is not NaN or infinite.
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
#: A table name: a safe file name (tables are exported as ``<name>.csv``).
TableName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,63}$")]


class TableEntry(BaseModel):
    """One table of the manifest: its member, row count and units."""

    model_config = ConfigDict(strict=True, extra="ignore")

    file: str
    rows: Annotated[int, Field(ge=0)]
    units: dict[str, str] = Field(default_factory=dict)


class Manifest(BaseModel):
    """The manifest of a saved plan, as checked on reading (unknown fields are ignored).

    Attributes
    ----------
    status : SolveStatus
    objective_usd : float or None
        [USD, present value]; finite, and present when the status has a solution.
    gap : float or None
        Relative MIP gap [-]: not negative, not NaN (infinite when the solver had no
        bound).
    bound_usd : float or None
        The lower bound the gap is proven against [USD, present value] (two-stage solve
        of the exact facility), finite and not above ``objective_usd``; absent in plans
        saved before it was written.
    bound_source : str
        Where ``bound_usd`` comes from [-].
    timings_s : dict
        [s], finite and not negative.
    tables : dict
        Table name -> :class:`TableEntry`; the member is ``tables/<name>.parquet``.
    """

    model_config = ConfigDict(strict=True, extra="ignore")

    format: Literal["dcplan-plan"]
    format_version: Literal[1]
    dcplan_version: str | None = None
    created: str | None = None
    scenario: str = ""
    input_digest: str | None = None
    status: SolveStatus
    objective_usd: FiniteFloat | None = None
    gap: Annotated[float, Field(ge=0)] | None = None
    bound_usd: FiniteFloat | None = None
    bound_source: str = ""
    solver: str = ""
    unserved: bool = False
    unserved_accepted: bool = False
    message: str = ""
    notes: list[str] = Field(default_factory=list)
    timings_s: dict[str, Annotated[float, Field(ge=0, allow_inf_nan=False)]] = \
        Field(default_factory=dict)
    model_size: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)
    tables: dict[TableName, TableEntry]

    @model_validator(mode="after")
    def _bound_below_plan(self) -> Manifest:
        if self.bound_usd is not None and self.objective_usd is not None and \
                self.bound_usd > self.objective_usd + 1e-9 * abs(self.objective_usd) + 1e-6:
            raise ValueError(
                f"bound_usd {self.bound_usd:,.2f} is above objective_usd "
                f"{self.objective_usd:,.2f}: a lower bound cannot exceed the plan's cost; "
                "the file was altered or damaged: plan the scenario again")
        return self


class _UnknownClass(ValueError):
    """A ``__dataclass__`` name outside :func:`input_classes`."""


def _unknown_classes(obj: Any) -> list[str]:
    """The ``__dataclass__`` names in JSON data ``obj`` outside :func:`input_classes`.

    An iterative walk (no recursion limit): nothing is imported or built.
    """
    known, unknown, stack = set(input_classes()) | set(RENAMED_CLASSES), [], [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            name = item.get("__dataclass__")
            if "__dataclass__" in item and (not isinstance(name, str) or name not in known):
                unknown.append(str(name)[:120])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return unknown


#: Classes renamed since plans were first saved: old qualified name -> new one.
RENAMED_CLASSES = {"dcplan.perf.params.Software": "dcplan.perf.params.SoftwareFit"}


def _dataclass(qualname: Any) -> type:
    """The class of :func:`input_classes` named ``qualname`` (never an import)."""
    if isinstance(qualname, str):
        qualname = RENAMED_CLASSES.get(qualname, qualname)
    cls = input_classes().get(qualname) if isinstance(qualname, str) else None
    if cls is None:
        raise _UnknownClass(f"unknown class {str(qualname)[:120]!r}")
    return cls


def is_saved_plan(path: Path | str) -> bool:
    """Whether ``path`` is given as a saved plan: named ``*.plan``, or a zip file.

    Cheap (reads at most the end of the file). :func:`load_result` then says what is
    wrong with one that is damaged or not a dcplan plan.

    Parameters
    ----------
    path : Path or str
        File to test.

    Returns
    -------
    bool
    """
    p = Path(path)
    if p.suffix.lower() == SUFFIX:
        return True
    try:
        return p.is_file() and zipfile.is_zipfile(p)
    except OSError:
        return False


def _refuse(shown: str, message: str, field: str | None = None) -> InputError:
    return InputError(Problem(shown, message, field=field))


def _damaged(shown: str, what: str, entry: str | None = None,
             field: str | None = None) -> Problem:
    """A problem "damaged or not a dcplan plan: WHAT; FIX" on member ``entry``."""
    return Problem(shown, f"{DAMAGED}: {what}; {FIX}", entry=entry, field=field)


def _why(exc: BaseException) -> str:
    """A short reason for an exception raised by damaged data."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        return f"{loc}: {first['msg']}{more}"
    text = str(exc)
    return f"{type(exc).__name__}: {text[:200]}{'...' if len(text) > 200 else ''}"


_EOCD = struct.Struct("<4s4H2LH")  # end of central directory record, 22 bytes
_EOCD_SIG = b"PK\x05\x06"
_ZIP64_LOCATOR_SIG = b"PK\x06\x07"


def _check_directory(p: Path, size: int, shown: str) -> None:
    """Refuse a file whose zip directory is missing, ZIP64 or too large.

    Reads only the end of the file, as :mod:`zipfile` does to find the directory (the
    end record without a comment, else the last one in the final 64 kB), before
    :class:`zipfile.ZipFile` parses the whole directory.
    """
    start = max(size - _EOCD.size - (1 << 16), 0)
    with open(p, "rb") as f:
        f.seek(max(start - 20, 0))
        tail = f.read()
    lead = min(start, 20)  # bytes before zipfile's search window (for the ZIP64 locator)
    at = len(tail) - _EOCD.size
    if not (at >= lead and tail[at:at + 4] == _EOCD_SIG and tail[-2:] == b"\0\0"):
        at = tail.rfind(_EOCD_SIG, lead)
    if at < 0 or len(tail) - at < _EOCD.size:
        raise InputError(_damaged(shown, "not a zip archive, so not a saved dcplan plan "
                                         "(dcplan plan SCENARIO --save FILE writes one)"))
    _sig, _d, _cd, _n_disk, n_total, cd_size, cd_offset, _c = _EOCD.unpack_from(tail, at)
    if (at >= 20 and tail[at - 20:at - 16] == _ZIP64_LOCATOR_SIG) or 0xFFFF in (
            n_total, _n_disk) or 0xFFFFFFFF in (cd_size, cd_offset):
        raise InputError(_damaged(shown, "a ZIP64 archive; dcplan writes plain zip files "
                                         "(a saved plan is far below 4 GB)"))
    if n_total > MAX_MEMBERS:
        raise InputError(_damaged(shown, f"the zip directory lists {n_total:,} members; a "
                                         f"saved plan has at most {MAX_MEMBERS}"))
    if cd_size > MAX_DIRECTORY_BYTES:
        raise InputError(_damaged(shown, f"the zip directory takes {cd_size:,} bytes; a "
                                         f"saved plan's takes at most "
                                         f"{MAX_DIRECTORY_BYTES:,}"))


def _check_members(z: zipfile.ZipFile, shown: str) -> None:
    """Refuse members that are encrypted, oddly compressed, too large or too compressed.

    Uses the sizes the zip directory declares, before anything is inflated;
    :func:`_read_member` then reads no more than declared.
    """
    infos = z.infolist()
    if len(infos) > MAX_MEMBERS:
        raise InputError(_damaged(shown, f"{len(infos):,} members; a saved plan has at most "
                                         f"{MAX_MEMBERS}"))
    problems = []
    seen: set[str] = set()
    total = 0
    for i in infos:
        name = i.filename
        if name in seen:
            problems.append(_damaged(shown, "the member is in the zip twice", entry=name))
        seen.add(name)
        if i.flag_bits & 0x1:
            problems.append(_damaged(shown, "the member is encrypted; dcplan never "
                                            "encrypts", entry=name))
        if i.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            problems.append(_damaged(shown, f"compressed with zip method {i.compress_type}; "
                                            "saved plans use deflate (or none)", entry=name))
        if i.file_size > MAX_MEMBER_BYTES:
            problems.append(_damaged(
                shown, f"the member declares {i.file_size:,} bytes uncompressed, above the "
                       f"limit of {MAX_MEMBER_BYTES:,} bytes per member", entry=name))
        elif (i.file_size > RATIO_CHECKED_BYTES
              and i.file_size > MAX_COMPRESSION_RATIO * max(i.compress_size, 1)):
            problems.append(_damaged(
                shown, f"the member inflates {i.file_size / max(i.compress_size, 1):,.0f} "
                       f"times ({i.compress_size:,} to {i.file_size:,} bytes); dcplan's "
                       f"members inflate at most {MAX_COMPRESSION_RATIO:g} times",
                entry=name))
        total += i.file_size
    if total > MAX_TOTAL_BYTES:
        problems.append(_damaged(shown, f"the members declare {total:,} bytes uncompressed "
                                        f"in all, above the limit of {MAX_TOTAL_BYTES:,}"))
    if problems:
        raise InputError(problems)


#: check_regular's size limit for saved plans, which have their own (MAX_PLAN_BYTES).
_NO_SIZE_LIMIT = SizeLimit("", float(1 << 30), "saved plans")


def _open_plan(path: Path | str, shown: str) -> zipfile.ZipFile:
    """The saved plan at ``path`` as an open zip, its directory and member sizes checked."""
    p = Path(path)
    if not p.exists():
        raise _refuse(shown, "saved plan not found; check the path")
    # A folder, device or FIFO (or a link to one) is refused with its reason, by the one
    # rule for input files; the size is held to the saved-plan limit just below.
    size = check_regular(p, _NO_SIZE_LIMIT).st_size
    limit = max(MAX_PLAN_BYTES, max_input_bytes())
    if size > limit:
        raise InputError(_damaged(shown, f"the file has {size:,} bytes, above the limit of "
                                         f"{limit:,} bytes for a saved plan"))
    _check_directory(p, size, shown)
    try:
        z = zipfile.ZipFile(p)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise InputError(_damaged(shown, f"not a readable zip archive ({_why(exc)}), so not "
                                         "a saved dcplan plan")) from None
    try:
        _check_members(z, shown)
    except BaseException:
        z.close()
        raise
    return z


def _read_member(z: zipfile.ZipFile, shown: str, name: str) -> bytes:
    """The bytes of member ``name``, read with a bounded read.

    Never more than the member declares or :data:`MAX_MEMBER_BYTES`; a member that
    cannot be inflated or fails its CRC is damaged.
    """
    info = z.getinfo(name)
    limit = min(info.file_size, MAX_MEMBER_BYTES)
    try:
        with z.open(info) as f:
            data = f.read(limit + 1)
            if len(data) == limit + 1 or (len(data) == limit and f.read(1)):
                raise InputError(_damaged(shown, f"the member inflates to more than the "
                                                 f"{limit:,} bytes it declares", entry=name))
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - zipfile, zlib: any failure is damage
        raise InputError(_damaged(shown, f"the member cannot be read ({_why(exc)})",
                                  entry=name)) from None
    return data


def _json_member(z: zipfile.ZipFile, shown: str, name: str) -> Any:
    """The JSON of member ``name`` (bounded read, bounded number of values)."""
    return _parse_json(_read_member(z, shown, name), shown, name)


def _parse_json(raw: bytes, shown: str, name: str) -> Any:
    """JSON ``raw`` of member ``name``, parsed after its values are counted.

    See :data:`MAX_JSON_SEPARATORS`.
    """
    separators = raw.count(b",") + raw.count(b"[") + raw.count(b"{")
    if separators > MAX_JSON_SEPARATORS:
        raise InputError(_damaged(shown, f"{name} holds {separators:,} JSON values or more; "
                                         f"a saved plan's hold at most "
                                         f"{MAX_JSON_SEPARATORS:,}", entry=name))
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise InputError(_damaged(shown, f"{name} is not valid JSON ({_why(exc)})",
                                  entry=name)) from None


def _checked_manifest(z: zipfile.ZipFile, shown: str) -> tuple[Manifest, dict[str, Any]]:
    """The checked manifest (and its JSON) of an open saved plan."""
    if "manifest.json" not in z.namelist():
        raise InputError(_damaged(shown, "the zip has no manifest.json, so it is not a saved "
                                         "dcplan plan (dcplan plan SCENARIO --save FILE "
                                         "writes one)"))
    raw = _read_member(z, shown, "manifest.json")
    data = _parse_json(raw, shown, "manifest.json")
    if not isinstance(data, dict):
        raise InputError(_damaged(shown, "manifest.json is not a JSON object",
                                  entry="manifest.json"))
    if data.get("format") != FORMAT:
        raise InputError(_damaged(shown, f"format {str(data.get('format'))[:60]!r} is not "
                                         f"{FORMAT!r}: not a saved dcplan plan",
                                  entry="manifest.json", field="format"))
    version = data.get("format_version")
    if version != FORMAT_VERSION:
        raise _refuse(shown, f"saved with plan format version {str(version)[:20]} (dcplan "
                             f"{str(data.get('dcplan_version', '?'))[:40]}); this dcplan "
                             f"reads version {FORMAT_VERSION}: re-plan the scenario with "
                             "this version, or use the dcplan that wrote it", "format_version")
    try:
        m = Manifest.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        problems = []
        for err in exc.errors()[:20]:
            field = ".".join(str(x) for x in err["loc"]) or None
            got = err.get("input")
            shown_got = "" if err["type"] == "missing" or isinstance(got, dict | list) else \
                f" (got {str(got)[:60]!r})"
            problems.append(_damaged(shown, f"{err['msg']}{shown_got}",
                                     entry="manifest.json", field=field))
        raise InputError(problems) from None
    problems = [_damaged(shown, f"table '{name}' must be in member tables/{name}.parquet, "
                                f"not {t.file[:80]!r}", entry="manifest.json",
                         field=f"tables.{name}.file")
                for name, t in m.tables.items() if t.file != f"tables/{name}.parquet"]
    if problems:
        raise InputError(problems)
    return m, data


def _arrow(shown: str, member: str) -> tuple[Any, Any, Any]:
    """pyarrow, pyarrow.compute and pyarrow.parquet, or a clear error without them."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(Problem(
            shown, "cannot read the saved plan's tables: the Parquet engine pyarrow is not "
                   "installed; install it (pip install pyarrow) and run the command again "
                   "(the file was not checked)", entry=member)) from None
    return pa, pc, pq


def _plain_type(pa: Any, t: Any) -> bool:
    """Whether Arrow type ``t`` is one a plan's tables hold: text, number, bool or null."""
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t)
            or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_null(t))


def _read_table(z: zipfile.ZipFile, shown: str, name: str, entry: TableEntry,
                used: dict[str, int] | None = None) -> pd.DataFrame:
    """Table ``name`` of an open saved plan, its Parquet metadata checked before decoding.

    The metadata's row count must be the manifest's, rows x columns at most
    :data:`MAX_TABLE_CELLS` (:data:`MAX_PLAN_CELLS` with the tables before), the columns
    text, numbers, booleans or nulls; text is read dictionary-encoded and refused if it
    would decode to more than :data:`MAX_TABLE_TEXT_BYTES` or its distinct values, with
    those of the tables before, take more than :data:`MAX_TEXT_VALUE_BYTES`. ``used``
    (``cells``, ``text``) counts what the tables before took, and is updated. The file's
    pandas metadata is not used (dcplan's tables have plain columns and a range index).
    """
    member = entry.file
    if member not in z.namelist():
        raise InputError(_damaged(shown, f"table '{name}' is listed in manifest.json but its "
                                         "member is missing (the file is damaged or "
                                         "incomplete)", entry=member))
    data = _read_member(z, shown, member)
    pa, pc, pq = _arrow(shown, member)
    try:
        meta = pq.ParquetFile(pa.BufferReader(data)).metadata
        schema = meta.schema.to_arrow_schema()
    except Exception as exc:  # noqa: BLE001 - pyarrow: any failure is damage
        raise InputError(_damaged(shown, f"not a Parquet table ({_why(exc)})",
                                  entry=member)) from None
    rows, cols = meta.num_rows, meta.num_columns
    if cols > MAX_TABLE_COLUMNS or rows < 0 or rows * max(cols, 1) > MAX_TABLE_CELLS:
        raise InputError(_damaged(shown, f"the table has {rows:,} rows and {cols:,} columns; "
                                         f"a plan's tables have at most "
                                         f"{MAX_TABLE_COLUMNS} columns and "
                                         f"{MAX_TABLE_CELLS:,} cells", entry=member))
    used = {"cells": 0, "text": 0} if used is None else used
    try:
        text_at = {i for i, f in enumerate(schema) if pa.types.is_string(f.type)
                   or pa.types.is_large_string(f.type)}
        chunks = [meta.row_group(g).column(c) for g in range(meta.num_row_groups)
                  for c in range(cols)]
        page_bytes = sum(max(ch.total_uncompressed_size, 0) for ch in chunks)
        text_bytes = sum(max(ch.total_uncompressed_size, 0) for ch in chunks
                         if schema.get_field_index(ch.path_in_schema) in text_at)
    except Exception as exc:  # noqa: BLE001 - pyarrow: any failure is damage
        raise InputError(_damaged(shown, f"not a Parquet table ({_why(exc)})",
                                  entry=member)) from None
    if page_bytes > MAX_MEMBER_BYTES or text_bytes > MAX_TABLE_TEXT_BYTES:
        raise InputError(_damaged(shown, f"the table's pages hold {page_bytes:,} bytes "
                                         f"({text_bytes:,} of text) uncompressed; a plan's "
                                         f"tables hold at most {MAX_MEMBER_BYTES:,} "
                                         f"({MAX_TABLE_TEXT_BYTES:,} of text)", entry=member))
    if used["cells"] + rows * cols > MAX_PLAN_CELLS:
        raise InputError(_damaged(shown, f"with this table's {rows * cols:,} cells the tables "
                                         f"hold more than {MAX_PLAN_CELLS:,} cells in all",
                                  entry=member))
    if rows != entry.rows:
        raise InputError(_damaged(shown, f"the table holds {rows:,} rows where manifest.json "
                                         f"says {entry.rows:,}", entry=member))
    problems = []
    names = schema.names
    for col in sorted({c for c in names if names.count(c) > 1}):
        problems.append(_damaged(shown, "the column is in the table twice", entry=member,
                                 field=col))
    for f in schema:
        if not _plain_type(pa, f.type):
            problems.append(_damaged(shown, f"the column has type {str(f.type)[:60]}; a plan's "
                                            "tables hold text, numbers, booleans or nulls",
                                     entry=member, field=f.name))
    if problems:
        raise InputError(problems)
    text = [f.name for f in schema if pa.types.is_string(f.type)
            or pa.types.is_large_string(f.type)]
    try:
        # ParquetFile.read, not pq.read_table: read_table's dataset scanner may drop its
        # last hold on the Python-owned ``data`` on a worker thread after returning;
        # when that happens while the interpreter exits, the thread is killed taking
        # the GIL and the process aborts ("terminate called without an active
        # exception", exit 134: 5 of 1,200 refusals under load before, 0 of 800 after)
        table = pq.ParquetFile(pa.BufferReader(data), read_dictionary=text).read()
        decoded = values = 0
        for i, f in enumerate(table.schema):
            if pa.types.is_dictionary(f.type) and table.column(i).num_chunks:
                column = table.column(i).unify_dictionaries()  # one dictionary per column
                lengths = pc.binary_length(column.chunk(0).dictionary)
                values += (pc.sum(lengths).as_py() or 0) + TEXT_VALUE_BYTES * len(lengths)
                for chunk in column.chunks:
                    decoded += pc.sum(pc.take(lengths, chunk.indices)).as_py() or 0
        if decoded > MAX_TABLE_TEXT_BYTES:
            raise InputError(_damaged(shown, f"the table's text decodes to {decoded:,} bytes, "
                                             f"above the limit of {MAX_TABLE_TEXT_BYTES:,}",
                                      entry=member))
        if used["text"] + values > MAX_TEXT_VALUE_BYTES:
            raise InputError(_damaged(shown, f"with this table's {values:,} bytes of distinct "
                                             "text values the tables hold more than "
                                             f"{MAX_TEXT_VALUE_BYTES:,}", entry=member))
        for i, f in enumerate(table.schema):
            if pa.types.is_dictionary(f.type):
                table = table.set_column(i, f.name, pc.cast(table.column(i),
                                                             f.type.value_type))
        df = table.replace_schema_metadata(None).to_pandas()
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - pyarrow: any failure is damage
        raise InputError(_damaged(shown, f"the table cannot be decoded ({_why(exc)})",
                                  entry=member)) from None
    if len(df) != entry.rows:
        raise InputError(_damaged(shown, f"the table holds {len(df):,} rows where "
                                         f"manifest.json says {entry.rows:,}", entry=member))
    df.attrs["units"] = dict(entry.units)
    used["cells"] += rows * cols
    used["text"] += values
    return df


def _where(df: pd.DataFrame, i: int) -> str:
    """'row N (period P, site S, ...)' for row position ``i`` of a result table."""
    keys = [f"{k} {str(df[k].iloc[i])[:40]}" for k in
            ("period", "site", "rack", "workload", "category", "item", "kpi") if k in df]
    return f"row {i + 1}" + (f" ({', '.join(keys)})" if keys else "")


def _is_number(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


#: Bill-of-materials items inside a rack's price and IT power in plans saved before
#: the ``bom`` table said so (``facility/bom.py`` marks them ``in_rack``).
OLD_IN_RACK_ITEMS = ("nic",)


def _upgraded(name: str, df: pd.DataFrame) -> pd.DataFrame:
    """A table of a plan saved by an older dcplan, in this dcplan's columns.

    The ``bom`` table gained ``purchase``, ``included_kw`` and ``included_capex_usd``
    (the NICs' kW and USD set apart from the totals). An older plan's ``bom`` has the
    NICs' figures in ``kw``, ``capex_usd`` and ``new_capex_usd``: they are moved as
    :func:`~dcplan.planner.sizing.set_apart_in_rack` moves them, and the table is then
    checked like any other. The ``cooling`` table gained the ``milp_*`` columns
    (:func:`_upgraded_cooling`). Every other table is returned as it is.

    Parameters
    ----------
    name : str
        The table's name in the plan.
    df : DataFrame
        The table as read [its own units].

    Returns
    -------
    DataFrame
        The table, upgraded where it is an older ``bom`` [its own units].
    """
    from dcplan.planner.sizing import BOM_TABLE_UNITS, IN_RACK, OWN, set_apart_in_rack

    if name == "cooling":
        return _upgraded_cooling(df)
    old = ("purchase", "included_kw", "included_capex_usd")
    need = ("item", "catalog_id", "kw", "capex_usd", "new_capex_usd")
    if name != "bom" or any(c in df for c in old) or not all(c in df for c in need):
        return df
    inside = df["item"].isin(OLD_IN_RACK_ITEMS)
    out = set_apart_in_rack(df, inside, ("new_capex_usd",))
    out.insert(list(out.columns).index("catalog_id") + 1, "purchase",
               inside.map({True: IN_RACK, False: OWN}))
    units = dict(df.attrs.get("units", {}))
    units.update({c: BOM_TABLE_UNITS[c] for c in ("included_kw", "included_capex_usd")})
    out.attrs = {**df.attrs, "units": units}
    return out


#: The cooling table's CDU columns that an older dcplan wrote with the MILP's CDUs, and
#: the ``milp_*`` columns that hold those now.
OLD_CDU_COLUMNS = {"cdus_by_model": "milp_cdus_by_model", "cdus": "milp_cdus",
                   "cdu_positions": "milp_cdu_positions",
                   "cdu_capex_usd": "milp_cdu_capex_usd"}


def _upgraded_opex(tables: dict[str, pd.DataFrame]) -> None:
    """An older plan's ``kpis``: opex without staff and software, those apart.

    An older dcplan counted operations staff and software in ``opex_usd``; this one
    counts energy, demand charges, carbon and maintenance there
    (:data:`~dcplan.planner.cashflow.OPEX_CATEGORIES`) and staff and software in
    ``staff_software_usd``. Both are recomputed from the saved ``costs`` table, in place.
    A plan that has ``staff_software_usd``, or lacks ``kpis`` or ``costs``, is left as is.

    Parameters
    ----------
    tables : dict
        The plan's tables as read and checked [their own units].
    """
    from dcplan.planner.cashflow import OPEX_CATEGORIES, STAFF_SOFTWARE_CATEGORIES

    kpis, costs = tables.get("kpis"), tables.get("costs")
    if kpis is None or costs is None or not {"kpi", "value"} <= set(kpis) \
            or "staff_software_usd" in set(kpis.kpi) or "opex_usd" not in set(kpis.kpi) \
            or not {"category", "cost_usd"} <= set(costs):
        return
    opex = float(costs.loc[costs.category.isin(OPEX_CATEGORIES), "cost_usd"].sum())
    staff = float(costs.loc[costs.category.isin(STAFF_SOFTWARE_CATEGORIES), "cost_usd"].sum())
    out = kpis.copy()
    at = out.index[out.kpi == "opex_usd"][0]
    out.loc[at, "value"] = opex
    if "unit" in out:
        out.loc[at, "unit"] = "USD (undiscounted: energy, demand charges, carbon, maintenance)"
    row = {"kpi": "staff_software_usd", "value": staff}
    if "unit" in out:
        row["unit"] = "USD (undiscounted: operations staff and software)"
    pos = list(out.index).index(at) + 1
    out = pd.concat([out.iloc[:pos], pd.DataFrame([row]), out.iloc[pos:]], ignore_index=True)
    out.attrs = kpis.attrs
    tables["kpis"] = out


def _upgraded_cooling(df: pd.DataFrame) -> pd.DataFrame:
    """An older plan's cooling table in this dcplan's columns.

    An older dcplan wrote the CDUs the MILP priced in ``cdus``, ``cdus_by_model``,
    ``cdu_positions`` and ``cdu_capex_usd``: they are copied to the ``milp_*`` columns,
    and ``cdu_capex_diff_usd`` is empty (unknown) until :func:`load_result` puts the
    cooling model's CDUs in the CDU columns from the plan's saved case.

    Parameters
    ----------
    df : DataFrame
        The cooling table as read [its own units].

    Returns
    -------
    DataFrame
        The table with the ``milp_*`` columns [units, positions, USD]; a table that has
        them, or lacks the old ones, as it is.
    """
    if "milp_cdus" in df or not all(c in df for c in OLD_CDU_COLUMNS):
        return df
    out = df.copy()
    at = list(out.columns).index("cdu_capex_usd") + 1
    for i, (old, new) in enumerate([("", "cdu_capex_diff_usd"), *OLD_CDU_COLUMNS.items()]):
        out.insert(at + i, new, float("nan") if not old else df[old])
    units = dict(df.attrs.get("units", {}))
    units.update({new: units.get(old, "") for old, new in OLD_CDU_COLUMNS.items()
                  if old in units})
    units["cdu_capex_diff_usd"] = "USD (installed, cooling model - MILP)"
    out.attrs = {**df.attrs, "units": units, "cdus_from_milp": True}
    return out


def _upgraded_power(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The power figures of a plan saved before IT power counted the network.

    Such a plan's ``power`` table lacks ``it_total_kw_peak`` and ``it_total_kw_avg``
    (racks + network: ``it_kw_peak + network_kw``, ``it_kw_avg + network_kw``), its
    ``hours`` table ``it_total_kw`` (the period's ``network_kw`` added to ``it_kw``),
    its ``cooling`` table ``pue_peak`` and its KPIs ``pue_peak`` and
    ``power_p99_margin_frac``, and its ``peak_it_mw`` left the network out: they are
    recomputed from its own tables as :func:`dcplan.planner.tables.power_table`,
    :func:`~dcplan.planner.tables.cooling_table` and
    :func:`~dcplan.planner.tables.kpi_table` compute them (the margin is not known:
    NaN). A plan saved now, or a damaged one lacking other columns, is returned as it
    is (the checks report what is missing).

    Parameters
    ----------
    tables : dict
        Name -> table as read [their own units].

    Returns
    -------
    dict
        The same tables, upgraded where they are of an older plan [their own units].
    """
    from dcplan.planner.tables import (
        HOURS_UNITS,
        PEAK_IT_UNIT,
        POWER_UNITS,
        PUE_UNITS,
        peak_period,
    )

    power = tables.get("power")
    need = ("period", "site", "it_kw_peak", "it_kw_avg", "network_kw", "facility_kw_peak")
    if (power is None or "it_total_kw_peak" in power or not all(c in power for c in need)
            or not all(_is_number(power[c]) for c in need[2:])):
        return tables
    out = dict(tables)

    def with_units(df: pd.DataFrame, old: pd.DataFrame, units: dict) -> pd.DataFrame:
        df.attrs = {**old.attrs, "units": {**old.attrs.get("units", {}), **units}}
        return df

    power = with_units(power.assign(it_total_kw_peak=power.it_kw_peak + power.network_kw,
                                    it_total_kw_avg=power.it_kw_avg + power.network_kw),
                       power, {c: POWER_UNITS[c] for c in ("it_total_kw_peak",
                                                           "it_total_kw_avg")})
    out["power"] = power
    key = power.assign(period=power.period.astype(str)).set_index(["period", "site"])
    cooling = tables.get("cooling")
    if cooling is not None and "pue_peak" not in cooling and {"period", "site"} <= set(cooling):
        idx = pd.MultiIndex.from_arrays([cooling.period.astype(str), cooling.site])
        fac = key.facility_kw_peak.reindex(idx).to_numpy(dtype=float)
        it = key.it_total_kw_peak.reindex(idx).to_numpy(dtype=float)
        pue = np.divide(fac, it, out=np.full(len(it), np.nan), where=it > 0)
        cooling = cooling.copy()
        at = (list(cooling.columns).index("pue_annual") + 1 if "pue_annual" in cooling
              else len(cooling.columns))
        cooling.insert(at, "pue_peak", pue)
        out["cooling"] = with_units(cooling, tables["cooling"],
                                    {"pue_peak": PUE_UNITS["pue_peak"]})
    hours = tables.get("hours")
    if hours is not None and "it_total_kw" not in hours and {"period", "site", "it_kw"} \
            <= set(hours) and _is_number(hours.it_kw):
        idx = pd.MultiIndex.from_arrays([hours.period.astype(str), hours.site])
        net = key.network_kw.reindex(idx).fillna(0.0).to_numpy(dtype=float)
        out["hours"] = with_units(hours.assign(it_total_kw=hours.it_kw.to_numpy(float) + net),
                                  hours, {"it_total_kw": HOURS_UNITS["it_total_kw"]})
    kpis = tables.get("kpis")
    if kpis is not None and set(KPI_COLUMNS) <= set(kpis) and "pue_peak" not in set(kpis.kpi):
        top = peak_period(power)
        fac = power.groupby("period", sort=False).facility_kw_peak.sum()
        it = power.groupby("period", sort=False).it_total_kw_peak.sum()
        peak_it = it[top] / 1000.0 if top is not None else 0.0
        kpis = kpis.copy()
        kpis.loc[kpis.kpi == "peak_it_mw", ["value", "unit"]] = [
            peak_it, PEAK_IT_UNIT]
        new = pd.DataFrame([
            ("pue_peak", fac[top] / 1000.0 / peak_it if peak_it > 0 else np.nan,
             PUE_UNITS["pue_peak"]),
            ("power_p99_margin_frac", np.nan, "- (not reported: a plan saved before "
                                              "dcplan kept the high-percentile power)")],
            columns=["kpi", "value", "unit"])
        at = (kpis.index[kpis.kpi == "pue_annual"][0] + 1 if "pue_annual" in set(kpis.kpi)
              else len(kpis))
        merged = pd.concat([kpis.iloc[:at], new, kpis.iloc[at:]], ignore_index=True)
        out["kpis"] = with_units(merged, kpis, {})
    return out


def _check_table(shown: str, name: str, df: pd.DataFrame, member: str) -> list[Problem]:
    """Types and signs of one result table (see the module's constants)."""
    problems = []
    units = df.attrs.get("units", {})
    for col, unit in units.items():
        if col in df and not _is_number(df[col]) and df[col].notna().any():
            problems.append(_damaged(shown, f"the column holds text where its unit "
                                            f"{unit[:40]!r} says numbers", entry=member,
                                     field=col))
    missing = [c for c in TABLE_COLUMNS.get(name, OPTIONAL_TABLE_COLUMNS.get(name, ()))
               if c not in df]
    if missing:
        problems.append(_damaged(
            shown, f"the table lacks column(s) {', '.join(missing)}, which this dcplan's "
                   f"{name} table has (a plan saved by an older dcplan: plan the scenario "
                   "again)", entry=member, field=missing[0]))
    whole = WHOLE_COUNTS.get(name, ())
    counts = [*whole, *(c for c, u in units.items() if c in df and c not in whole
                        and u.split(" ")[0] in COUNT_WORDS)]
    for col in counts:
        if col not in df:
            continue  # reported above
        s = df[col]
        if not len(s) or any(p.field == col for p in problems):
            continue
        unit = units.get(col, "")
        if not _is_number(s):
            problems.append(_damaged(shown, "the column holds no numbers but counts",
                                     entry=member, field=col))
            continue
        v = s.to_numpy(dtype=float)
        bad = ~np.isfinite(v)
        why = "counts are never NaN or infinite"
        if not bad.any():
            bad = v < -COUNT_TOLERANCE
            why = "counts are never negative"
        if not bad.any() and col in whole:
            bad = abs(v - v.round()) > COUNT_TOLERANCE
            why = "this count is whole"
        if bad.any():
            i = int(bad.argmax())
            problems.append(_damaged(shown, f"{v[i]:g} {unit[:20]} in {_where(df, i)}; {why}",
                                     entry=member, field=col))
    if name in FINITE_TABLES:
        for col in df.columns:
            if col in counts or not _is_number(df[col]):
                continue
            v = df[col].to_numpy(dtype=float)
            bad = ~np.isfinite(v)
            if bad.any():
                i = int(bad.argmax())
                problems.append(_damaged(shown, f"{v[i]} in {_where(df, i)}; a plan's {name} "
                                                "table has no NaN or infinite figures",
                                         entry=member, field=col))
    return problems


def _check_plan(shown: str, m: Manifest, tables: dict[str, pd.DataFrame]) -> list[Problem]:
    """The status against the tables.

    A status with a solution has a finite objective, the :data:`REQUIRED_TABLES` and a
    finite ``npv_cost_usd`` KPI; a status without one has no tables.
    """
    status = m.status.value
    if not m.status.has_solution:
        if tables:
            return [_damaged(shown, f"status '{status}' means no plan, yet the file holds "
                                    f"{len(tables)} result tables (a saved plan without a "
                                    "solution has none)", entry="manifest.json",
                             field="status")]
        return []
    problems = []
    if m.objective_usd is None:
        problems.append(_damaged(shown, f"a plan with status '{status}' has an objective; "
                                        "this one has none", entry="manifest.json",
                                 field="objective_usd"))
    missing = [t for t in REQUIRED_TABLES if t not in tables]
    if missing:
        problems.append(_damaged(shown, f"a plan with status '{status}' has the tables "
                                        f"{', '.join(REQUIRED_TABLES)}; missing: "
                                        f"{', '.join(missing)}", entry="manifest.json",
                                 field="tables"))
    kpis = tables.get("kpis")
    if kpis is not None:
        member = m.tables["kpis"].file
        lacking = [c for c in KPI_COLUMNS if c not in kpis]
        if lacking:
            problems.append(_damaged(shown, f"the KPI table has no column {lacking[0]}",
                                     entry=member, field=lacking[0]))
        elif not _is_number(kpis["value"]) and len(kpis):
            problems.append(_damaged(shown, "the KPI values are not numbers", entry=member,
                                     field="value"))
        else:
            npv = kpis.loc[kpis["kpi"] == "npv_cost_usd", "value"]
            if not len(npv) or not math.isfinite(float(npv.iloc[0])):
                problems.append(_damaged(
                    shown, f"a plan with status '{status}' has a finite npv_cost_usd KPI; "
                           f"this one has {'none' if not len(npv) else npv.iloc[0]}",
                    entry=member, field="value"))
    return problems


def read_manifest(path: Path | str) -> dict[str, Any]:
    """The manifest of a saved plan, checked (zip, sizes, format, version, schema).

    Parameters
    ----------
    path : Path or str
        A saved plan.

    Returns
    -------
    dict
        The manifest's JSON.

    Raises
    ------
    InputError
        For a file that is not a saved plan, one of another format version, or one
        whose zip or manifest is damaged.
    """
    shown = display_path(path)
    with _open_plan(path, shown) as z:
        return _checked_manifest(z, shown)[1]


def _case_from(data: dict[str, Any], shown: str = "<saved plan>",
               filled: set[str] | None = None) -> Any:
    """Rebuild the Case of a saved plan (entries re-validated by their schemas).

    Performance-model parameters the plan's dcplan did not have yet are filled with this
    dcplan's a-priori values and named in ``filled`` (:func:`_decode`).

    Raises
    ------
    InputError
        Naming the input member that is missing or cannot be rebuilt.
    """
    from dcplan.case import Case
    from dcplan.catalog import Catalog
    from dcplan.perf.params import Calibration, PerfDefaults
    from dcplan.scenario.schema import DemandConversion, Scenario
    from dcplan.schema import KINDS
    from dcplan.sites import Site

    def catalog(d: dict[str, Any]) -> Catalog:
        entries = {}
        for kind, rows in d["entries"].items():
            schema = KINDS[kind][1]
            entries[kind] = {r["id"]: schema.model_validate(r) for r in rows}
        return Catalog(entries=entries, files={k: Path(v) for k, v in d["files"].items()})

    def sites(d: dict[str, Any]) -> dict[str, Site]:
        return {k: Site.model_validate(v) for k, v in d.items()}

    def scenario(s: dict[str, Any]) -> Any:
        conversions = _decode(s.get("demand_conversions", {}))
        if not isinstance(conversions, dict) or not all(
                isinstance(v, DemandConversion) for v in conversions.values()):
            raise ValueError("demand_conversions is not a map of DemandConversion")
        return Scenario.model_validate(s["scenario"]).model_copy(update={
            "source_file": s["source_file"],
            "line_map": {k: tuple(v) for k, v in s["line_map"].items()},
            "demand_conversions": conversions})

    def perf(p: dict[str, Any]) -> tuple[Any, Any]:
        defaults = _decode(p.get("perf_defaults"), filled)
        calibration = _decode(p.get("calibration"), filled)
        if not isinstance(defaults, PerfDefaults | None) or not isinstance(
                calibration, Calibration | None):
            raise ValueError("perf_defaults or calibration is not of its class")
        return defaults, calibration

    scn = _rebuilt(shown, data, "scenario.json", scenario)
    perf_defaults, calibration = _rebuilt(shown, data, "perf.json", perf, optional=True) \
        or (None, None)
    parts = (_rebuilt(shown, data, "catalog.json", catalog),
             _rebuilt(shown, data, "sites.json", sites),
             _rebuilt(shown, data, "base_catalog.json", catalog),
             _rebuilt(shown, data, "base_sites.json", sites))

    def case(s: dict[str, Any]) -> Any:
        return Case(scn, parts[0], parts[1], parts[2], parts[3], perf_defaults, calibration,
                    Path(s["path"]) if s.get("path") else None,
                    tuple(s.get("files", ())),
                    _decode(s.get("changes", {"__tuple__": []})))

    return _rebuilt(shown, data, "scenario.json", case)


def _rebuilt(shown: str, data: dict[str, Any], fname: str, build: Any,
             optional: bool = False) -> Any:
    """``build(data[fname])``; any failure is damage of member ``inputs/<fname>``."""
    member = f"inputs/{fname}"
    if fname not in data:
        if optional:
            return None
        raise InputError(_damaged(shown, "the member is missing (the file is damaged or "
                                         "incomplete)", entry=member))
    try:
        return build(data[fname])
    except InputError:
        raise
    except _UnknownClass as exc:
        raise InputError(_damaged(shown, f"{exc} in {member}", entry=member)) from None
    except Exception as exc:  # noqa: BLE001 - hostile data: any failure is damage
        raise InputError(_damaged(shown, f"the inputs cannot be rebuilt ({_why(exc)})",
                                  entry=member)) from None


def load_result(path: Path | str) -> PlanResult:
    """Read a saved plan back into a :class:`PlanResult` (``case`` and ``inputs`` included).

    The file is untrusted: see the module's docstring for what is checked and
    docs/outputs.md for the limits.

    Parameters
    ----------
    path : Path or str
        A saved plan.

    Returns
    -------
    PlanResult
        Its tables, solver outcome, ``case`` and ``inputs``.

    Raises
    ------
    InputError
        For a file that is not a saved plan, of another format version, or damaged;
        every message about damage starts with "damaged or not a dcplan plan" and names
        the member and field.
    """
    from dcplan.planner.inputs import PlanInputs

    shown = display_path(path)
    with _open_plan(path, shown) as z:
        m, _raw = _checked_manifest(z, shown)
        tables: dict[str, pd.DataFrame] = {}
        problems = []
        used = {"cells": 0, "text": 0}
        for name, entry in m.tables.items():
            try:
                tables[name] = _read_table(z, shown, name, entry, used)
            except InputError as exc:
                problems += exc.problems
                continue
            tables[name] = _upgraded(name, tables[name])
        tables = _upgraded_power(tables)
        for name, entry in m.tables.items():
            if name in tables:
                problems += _check_table(shown, name, tables[name], entry.file)
        if not problems:
            _upgraded_opex(tables)
        if not problems:
            problems = _check_plan(shown, m, tables)
        if problems:
            raise InputError(problems)
        names = set(z.namelist())
        data = {f: _json_member(z, shown, f"inputs/{f}") for f in INPUT_FILES
                if f"inputs/{f}" in names}

    problems = [_damaged(shown, f"unknown class {names[0]!r} in inputs/{f}",
                         entry=f"inputs/{f}")
                for f, d in data.items() if (names := _unknown_classes(d))]
    if problems:
        raise InputError(problems)
    filled: set[str] = set()
    case = _case_from(data, shown, filled) if "scenario.json" in data else None

    def plan_inputs(d: Any) -> PlanInputs:
        inputs = _decode(d, filled)
        if not isinstance(inputs, PlanInputs):
            raise ValueError(f"it holds a {type(inputs).__name__}, not the planner's inputs")
        return inputs

    inputs = _rebuilt(shown, data, "plan_inputs.json", plan_inputs, optional=True)
    notes = list(m.notes)
    if filled:
        notes.append("saved by an older dcplan: its performance-model inputs lack "
                     f"{', '.join(sorted(filled))}; where its inputs are rebuilt they take "
                     "this dcplan's a-priori values (perf_defaults.yaml). Its tables are "
                     "as saved; plan the scenario again to model it with them")
    cool = tables.get("cooling")
    if cool is not None and cool.attrs.pop("cdus_from_milp", False):
        if case is not None and inputs is not None and "fleet" in tables:
            from dcplan.planner.cdus import apply_cdu_answer, cdu_answers

            tables["cooling"] = apply_cdu_answer(cool, cdu_answers(case, inputs,
                                                                   tables["fleet"]))
        notes.append("saved by an older dcplan: its equipment and bill of materials list "
                     "the CDUs its optimisation priced (the cooling table's milp_ columns); "
                     "plan the scenario again for the cooling model's CDUs everywhere")
    result = PlanResult(
        name=m.scenario, status=m.status, objective_usd=m.objective_usd, gap=m.gap,
        bound_usd=m.bound_usd, bound_source=m.bound_source, solver=m.solver,
        unserved=m.unserved, unserved_accepted=m.unserved_accepted,
        message=m.message, tables={n: tables[n] for n in m.tables},
        timings_s=dict(m.timings_s), model_size=dict(m.model_size), notes=notes,
        inputs=inputs, case=case)
    result.saved_from = {"path": str(path), "dcplan_version": m.dcplan_version,
                         "created": m.created, "input_digest": m.input_digest}
    return result


__all__ = ["DAMAGED", "FORMAT", "FORMAT_VERSION", "MAX_COMPRESSION_RATIO",
           "MAX_JSON_SEPARATORS", "MAX_MEMBER_BYTES", "MAX_MEMBERS", "MAX_PLAN_BYTES",
           "MAX_PLAN_CELLS", "MAX_TABLE_CELLS", "MAX_TABLE_TEXT_BYTES", "MAX_TEXT_VALUE_BYTES",
           "MAX_TOTAL_BYTES", "SUFFIX", "TABLE_COLUMNS", "Manifest", "input_classes",
           "is_saved_plan", "load_result", "read_manifest", "save_result"]
