"""Facility coefficients reused across a sweep's samples whose inputs for them are unchanged.

The performance model already keeps its results by the content of the catalog entries
it reads (:func:`dcplan.perf.rack_performance`, about 1 ms a rack and workload). The
facility model (network fabric, cooling, power chain) takes 0.1-2 s per rack type, site
and planning scale and keeps its networks only per catalog object, and every sample
has a new catalog object. :class:`FacilityMemo` keys each table by a digest of the
inputs the facility model reads:

* every entry of the kinds in :data:`FACILITY_KINDS` (switches, optics, NICs, CDUs,
  heat rejection, UPS, generators);
* the rack type's entry without :data:`RACK_FIELDS_NOT_READ` (price, maintenance,
  life and availability: a capex sweep reuses every table);
* the site without :data:`SITE_FIELDS_NOT_READ` (grid steps, tariffs, build cost,
  lead time: a grid-step sweep reuses every table);
* the planning scale [racks], the scenario's optics and oversubscription, the facility
  assumptions file and the source code of the facility model (a changed model never
  reads a stale table).

``tests/test_sweep_memo.py`` records what the facility model reads and fails if it
starts reading a kind or field that the key leaves out.

Tables live in memory (least recently used first out) and, when ``folder`` is given,
as JSON files there, so that the workers of one machine (and a resumed sweep) share
them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from dcplan.errors import InputError, Problem
from dcplan.yamlio import write_text_atomic

#: Catalog kinds the facility model reads (all their entries go into the key).
FACILITY_KINDS = ("switches", "optics", "nics", "cdus", "heat_rejection", "ups", "generators")

#: Fields of a rack entry the facility model does not read.
RACK_FIELDS_NOT_READ = frozenset({
    "capex_usd", "maintenance_frac_per_year", "lifetime_years", "first_available",
    "name", "source", "as_of", "estimates", "notes"})

#: Fields of a site the facility model does not read.
SITE_FIELDS_NOT_READ = frozenset({
    "grid_mw", "energy_price_per_kwh", "demand_charge_per_kw_month", "carbon_g_per_kwh",
    "build_capex_usd_per_mw", "lead_time_months", "currency", "country", "region",
    "rack_positions", "name", "source", "as_of", "estimates", "notes"})

#: Memo format; stored tables of another format are ignored.
FORMAT = 1


def _sha(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


@lru_cache(maxsize=1)
def model_digest() -> str:
    """Digest of the facility model: its source files, the planner's input code, assumptions."""
    import dcplan.facility
    import dcplan.planner.inputs

    h = hashlib.sha256()
    folder = Path(dcplan.facility.__file__).parent
    for path in sorted([*folder.glob("*.py"), *folder.glob("*.yaml"),
                        Path(dcplan.planner.inputs.__file__)]):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


class FacilityMemo:
    """Callable memo for :data:`dcplan.planner.inputs.FACILITY_MEMO`.

    Parameters
    ----------
    folder : path, optional
        Folder for the tables as JSON files (shared by the processes that see it); used
        only if it exists.
    max_entries : int
        Tables kept in memory.

    Attributes
    ----------
    hits, misses, disk_hits : int
        Tables found in memory, computed, read from ``folder``.
    """

    def __init__(self, folder: Path | str | None = None, max_entries: int = 2048):
        self.folder = Path(folder) if folder else None
        self.max_entries = max_entries
        self._tables: OrderedDict[str, Any] = OrderedDict()
        self._entry_digests: dict[int, tuple[Any, str]] = {}
        self.hits = self.misses = self.disk_hits = 0

    # --- keys ------------------------------------------------------------------------

    def _digest(self, entry: Any, skip: frozenset[str] = frozenset()) -> str:
        """Digest of one pydantic entry (cached per object: unchanged entries are shared)."""
        ident = (id(entry), skip)
        hit = self._entry_digests.get(ident)  # type: ignore[arg-type]
        if hit is not None and hit[0] is entry:
            return hit[1]
        data = {k: v for k, v in entry.model_dump(mode="json").items() if k not in skip}
        digest = _sha(data)
        if len(self._entry_digests) > 20_000:
            self._entry_digests.clear()
        self._entry_digests[ident] = (entry, digest)  # type: ignore[index]
        return digest

    def key(self, case: Any, site: Any, rack_id: str, n_racks: int) -> str:
        """Digest of every input of the facility table of ``rack_id`` at ``site``."""
        catalog = case.catalog
        kinds = [[kind, sorted((i, self._digest(e))
                               for i, e in catalog.entries.get(kind, {}).items())]
                 for kind in FACILITY_KINDS]
        return _sha([FORMAT, model_digest(), kinds,
                     self._digest(catalog.get("racks", rack_id), RACK_FIELDS_NOT_READ),
                     self._digest(site, SITE_FIELDS_NOT_READ), rack_id, int(n_racks),
                     case.scenario.optics, float(case.scenario.oversubscription)])

    # --- the memo --------------------------------------------------------------------

    def __call__(self, case: Any, site: Any, rack_id: str, n_racks: int,
                 compute: Callable[[Any, Any, str, int], Any]) -> Any:
        """``compute(case, site, rack_id, n_racks)``, or the stored table of the same inputs."""
        key = self.key(case, site, rack_id, n_racks)
        stored = self._tables.get(key)
        if stored is None:
            stored = self._read(key)
            if stored is not None:
                self.disk_hits += 1
        else:
            self.hits += 1
            self._tables.move_to_end(key)
        if stored is None:
            self.misses += 1
            try:
                stored = ("ok", compute(case, site, rack_id, n_racks))
            except InputError as exc:
                stored = ("error", tuple(exc.problems))
            self._write(key, stored)
        self._tables[key] = stored
        if len(self._tables) > self.max_entries:
            self._tables.popitem(last=False)
        if stored[0] == "error":
            raise InputError(list(stored[1]))
        return stored[1]

    def stats(self) -> dict[str, int]:
        """hits, disk_hits, misses so far."""
        return {"hits": self.hits, "disk_hits": self.disk_hits, "misses": self.misses}

    # --- the folder ------------------------------------------------------------------

    def _path(self, key: str) -> Path | None:
        if self.folder is None or not self.folder.is_dir():
            return None
        return self.folder / f"{key}.json"

    def _read(self, key: str) -> Any:
        path = self._path(key)
        if path is None or not path.is_file():
            return None
        from dcplan.facility.coefficients import FacilityCoefficients
        from dcplan.planner.inputs import RackSiteData

        try:
            data = json.loads(path.read_text())
            if data.get("format") != FORMAT:
                return None
            if "error" in data:
                return ("error", tuple(Problem(**p) for p in data["error"]))
            return ("ok", (RackSiteData(**data["rack_site"]),
                           FacilityCoefficients(**data["facility"])))
        except (OSError, ValueError, TypeError, KeyError):
            return None  # unreadable or of another version: compute it again

    def _write(self, key: str, stored: Any) -> None:
        path = self._path(key)
        if path is None:
            return
        if stored[0] == "error":
            data = {"format": FORMAT, "error": [dataclasses.asdict(p) for p in stored[1]]}
        else:
            rs, fc = stored[1]
            data = {"format": FORMAT, "rack_site": dataclasses.asdict(rs),
                    "facility": dataclasses.asdict(fc)}
        try:
            write_text_atomic(path, json.dumps(data))
        except OSError:
            pass  # a full or read-only disk only costs the reuse
