"""The sweep's facility memo: same tables as computing them, keyed by what the model reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcplan import facility
from dcplan.planner.inputs import FACILITY_MEMO
from dcplan.planner.prepare import prepare_inputs
from dcplan.schema import KINDS
from dcplan.sweep.memo import (
    FACILITY_KINDS,
    RACK_FIELDS_NOT_READ,
    SITE_FIELDS_NOT_READ,
    FacilityMemo,
)

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def minimal_case():
    from dcplan.case import load_case

    return load_case(REPO / "examples" / "minimal.yaml")


class _Fields:
    """Forwards attribute reads to ``obj`` and records their names."""

    def __init__(self, obj, seen: set):
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_seen", seen)

    def __getattr__(self, name):
        self._seen.add(name)
        return getattr(self._obj, name)


class _Catalog:
    """A catalog that records the kinds, entries and rack fields it is asked for."""

    def __init__(self, catalog):
        self._cat = catalog
        self.kinds: set[str] = set()
        self.racks: set[str] = set()
        self.rack_fields: set[str] = set()

    def get(self, kind, ident):
        self.kinds.add(kind)
        entry = self._cat.get(kind, ident)
        if kind == "racks":
            self.racks.add(ident)
            return _Fields(entry, self.rack_fields)
        return entry

    @property
    def entries(self):
        outer = self

        class _Kinds(dict):
            def get(self, kind, default=None):
                outer.kinds.add(kind)
                return outer._cat.entries.get(kind, default)

            def __getitem__(self, kind):
                outer.kinds.add(kind)
                return outer._cat.entries[kind]

            def __contains__(self, kind):
                outer.kinds.add(kind)
                return kind in outer._cat.entries

        return _Kinds()

    def __getattr__(self, name):
        if name in KINDS:
            self.kinds.add(name)
            return self._cat.entries.get(name, {})
        return getattr(self._cat, name)


@pytest.mark.parametrize("rack, site", [("gb200_nvl72", "seoul_metro"),
                                        ("rubin_ultra_nvl576", "honam_haenam"),
                                        ("hgx_h100", "us_texas")])
def test_the_key_covers_everything_the_facility_model_reads(minimal_case, rack, site):
    from dcplan.sites import load_sites

    sites = load_sites()
    cat = _Catalog(minimal_case.catalog)
    site_fields: set[str] = set()
    facility.coefficients(cat, _Fields(sites[site], site_fields), rack, 40)
    # the recorder sees the reads (so the checks below can fail)
    assert {"switches", "optics"} <= cat.kinds and "it_power_max_kw" in cat.rack_fields
    assert "design_dry_bulb_c" in site_fields
    assert cat.kinds - {"racks"} <= set(FACILITY_KINDS), cat.kinds
    assert cat.racks == {rack}  # only the rack type's own entry
    assert not cat.rack_fields & RACK_FIELDS_NOT_READ, cat.rack_fields & RACK_FIELDS_NOT_READ
    assert not site_fields & SITE_FIELDS_NOT_READ, site_fields & SITE_FIELDS_NOT_READ


def _changed_cases(case):
    over = [
        [{"kind": "racks", "id": "rubin_ultra_nvl576", "field": "capex_usd", "scale": 1.3}],
        [{"kind": "racks", "id": "gb200_nvl72", "field": "lifetime_years", "set": 4}],
        [{"kind": "sites", "id": "seoul_metro", "field": "grid_mw", "add": 20,
          "from_year": 2029}],
        [{"kind": "sites", "id": "honam_haenam", "field": "energy_price_per_kwh",
          "scale": 1.5}],
    ]
    return [case.with_changes(overrides=o) for o in over]


@pytest.mark.slow
def test_tables_are_the_computed_ones_and_reused_across_unchanged_inputs(minimal_case, tmp_path):
    base = prepare_inputs(minimal_case)
    cases = _changed_cases(minimal_case)
    memo = FacilityMemo(tmp_path)
    token = FACILITY_MEMO.set(memo)
    try:
        with_memo = [prepare_inputs(c) for c in [minimal_case, *cases]]
    finally:
        FACILITY_MEMO.reset(token)
    pairs = len(base.facility)
    # the first case computes each table, the others change nothing the model reads
    assert memo.misses == pairs and memo.hits == pairs * len(cases)
    plain = [prepare_inputs(c) for c in [minimal_case, *cases]]
    for a, b in zip(with_memo, plain, strict=True):
        assert a.rack_site == b.rack_site and a.facility == b.facility
    # a second memo on the same folder reads every table back, bit for bit
    again = FacilityMemo(tmp_path)
    token = FACILITY_MEMO.set(again)
    try:
        back = prepare_inputs(minimal_case)
    finally:
        FACILITY_MEMO.reset(token)
    assert again.disk_hits == pairs and again.misses == 0
    assert back.rack_site == base.rack_site and back.facility == base.facility


def test_changed_facility_inputs_compute_a_new_table(minimal_case):
    memo = FacilityMemo()
    site = minimal_case.sites["honam_haenam"]
    key = memo.key(minimal_case, site, "gb200_nvl72", 100)
    assert memo.key(minimal_case, site, "gb200_nvl72", 101) != key  # planning scale
    switch = sorted(minimal_case.catalog.entries["switches"])[0]
    pricier = minimal_case.with_changes(overrides=[
        {"kind": "switches", "id": switch, "field": "capex_usd", "scale": 1.1}])
    assert memo.key(pricier, pricier.sites["honam_haenam"], "gb200_nvl72", 100) != key
    denser = minimal_case.with_changes(overrides=[
        {"kind": "racks", "id": "gb200_nvl72", "field": "it_power_max_kw", "scale": 1.05}])
    assert memo.key(denser, denser.sites["honam_haenam"], "gb200_nvl72", 100) != key
    hotter = minimal_case.with_changes(overrides=[
        {"kind": "sites", "id": "honam_haenam", "field": "design_dry_bulb_c", "add": 2}])
    assert memo.key(hotter, hotter.sites["honam_haenam"], "gb200_nvl72", 100) != key
    cheaper = minimal_case.with_changes(overrides=[
        {"kind": "racks", "id": "gb200_nvl72", "field": "capex_usd", "scale": 0.5}])
    assert memo.key(cheaper, cheaper.sites["honam_haenam"], "gb200_nvl72", 100) == key


def test_errors_are_remembered_as_errors(minimal_case):
    from dcplan.errors import InputError

    memo = FacilityMemo()
    calls = []

    def refuse(case, site, rack, n):
        calls.append(n)
        raise InputError("too big")

    site = minimal_case.sites["seoul_metro"]
    for _ in range(2):
        with pytest.raises(InputError, match="too big"):
            memo(minimal_case, site, "gb200_nvl72", 5, refuse)
    assert calls == [5]
