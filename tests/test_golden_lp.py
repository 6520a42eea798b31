"""Golden LP files: every constraint family of the MILP, row by row, on a tiny instance.

``tests/golden/<family>.lp`` holds the rows of one family (see ``tests/golden/cases.py``
for the instances). A changed row fails here with a diff; after an intended change of
the formulation, regenerate with ``python tests/golden/regen.py`` and review the diff.
The registry :data:`dcplan.planner.families.CONSTRAINT_FAMILIES` must name every family
the model writes, and every registered family needs a golden case.
"""

from __future__ import annotations

import ast
import difflib
import importlib
import pkgutil
import re
from functools import cache
from pathlib import Path

import pytest
from golden.cases import CASES, GOLDEN, golden_text

import dcplan.planner
from dcplan.planner import build_model
from dcplan.planner.families import CONSTRAINT_FAMILIES, family_of
from dcplan.units import HOURS_PER_YEAR

REGEN = "python tests/golden/regen.py"


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.slow
def test_golden_lp(name):
    path = CASES[name].lp
    assert path.exists(), f"{path.name} is missing: run {REGEN} {name}"
    want, got = path.read_text(), golden_text(name)
    if got != want:
        diff = "".join(difflib.unified_diff(
            want.splitlines(True), got.splitlines(True), f"golden/{path.name}", "model now"))
        pytest.fail(f"the {name} rows changed; if intended, run {REGEN} {name} and review "
                    f"the diff:\n{diff}")


# --- the registry -------------------------------------------------------------------------


@cache
def _model(builder, elastic: bool, unserved_limit: float | None = None,
           unserved_floor: float | None = None):
    return build_model(builder(), elastic=elastic, unserved_limit=unserved_limit,
                       unserved_floor=unserved_floor)


def test_every_registered_family_has_a_golden_case_and_file():
    assert set(CASES) == set(CONSTRAINT_FAMILIES), \
        "every family in dcplan/planner/families.py needs a case in tests/golden/cases.py"
    files = {p.stem for p in GOLDEN.glob("*.lp")}
    assert files == set(CASES), f"run {REGEN} (missing or stale .lp files)"


def test_each_case_writes_its_family_and_only_registered_families():
    for name, case in CASES.items():
        _prob, mv = _model(case.build, case.elastic, case.unserved_limit, case.unserved_floor)
        written = {family_of(f) for f in mv.constraints if mv.constraints[f]}
        assert None not in written, \
            f"{case.build.__name__}() writes unregistered families: " \
            f"{sorted(f for f in mv.constraints if family_of(f) is None)}"
        assert name in written, f"{case.build.__name__}() writes no {name} rows"


def test_every_family_named_in_the_planner_source_is_registered():
    """Literal family names given to ``ModelVars.add`` anywhere in ``dcplan/planner``.

    Indexed names (``f"fab_over{j}"``) must be registered as indexed; names built at
    run time only (``f"{kind}{i}"``) are covered by the cases above.
    """
    root = Path(dcplan.planner.__file__).parent
    seen = []
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "add" and len(node.args) == 4):
                continue
            arg = node.args[1]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                seen.append((path.name, arg.value, False))
            elif isinstance(arg, ast.JoinedStr) and isinstance(arg.values[0], ast.Constant):
                seen.append((path.name, arg.values[0].value, True))
    assert len(seen) > 30
    for where, name, indexed in seen:
        assert name in CONSTRAINT_FAMILIES, f"{where}: family {name!r} is not registered"
        assert CONSTRAINT_FAMILIES[name].indexed == indexed, (where, name)


def test_registered_builders_exist():
    funcs = {}
    for mod in pkgutil.iter_modules(dcplan.planner.__path__):
        m = importlib.import_module(f"dcplan.planner.{mod.name}")
        funcs.update({k: v for k, v in vars(m).items() if k.startswith("add_")
                      and callable(v)})
    for family, f in CONSTRAINT_FAMILIES.items():
        assert f.builder in funcs, (family, f.builder)
        assert f.rows, family


def test_family_of_indexed_names():
    assert family_of("fab_leaf0") == "fab_leaf" and family_of("fab_over12") == "fab_over"
    assert family_of("grid") == "grid" and family_of("grid2") is None
    assert family_of("nonsense") is None


# --- coefficients recomputed by hand from the inputs ---------------------------------------


def _rows(family: str) -> dict[str, tuple[dict[str, float], str, float]]:
    """Rows of a golden file: name -> ({variable: coefficient}, sense, rhs)."""
    text = CASES[family].lp.read_text()
    body = text.split("Subject To\n", 1)[1]
    body = re.split(r"^(Bounds|Generals|Binaries|End)$", body, flags=re.M)[0]
    out = {}
    for line in body.splitlines():
        name, expr = line.split(":", 1)
        lhs, sense, rhs = re.fullmatch(r"(.*) (<=|>=|=) (\S+)", expr.strip()).groups()
        terms, sign, coef = {}, 1.0, 1.0
        for tok in lhs.split():
            if tok in "+-":
                sign, coef = (1.0 if tok == "+" else -1.0), 1.0
            elif re.fullmatch(r"[-+0-9.e]+", tok):
                coef = float(tok)
            else:
                terms[tok] = sign * coef
                sign, coef = 1.0, 1.0
        out[name] = (terms, sense, float(rhs))
    return out


def test_grid_and_building_coefficients_by_hand():
    d = CASES["grid"].build()
    rs, rk = d.rack_site["ra", "sa"], d.racks["ra"]
    idle = (1 + rs.loss_frac) * (1 + rs.cooling_kw_per_it_kw_peak) * rk.it_power_idle_kw
    serve = (1 + rs.loss_frac) * (1 + rs.cooling_kw_per_it_kw_peak) \
        * (d.perf["ra", "wa"].power_kw - rk.it_power_idle_kw)
    terms, sense, rhs = _rows("grid")["grid__sa__2026"]
    assert terms == pytest.approx({"inst__ra__sa__2026": idle,
                                   "alloc__ra__sa__wa__all__2026": serve})
    assert (sense, rhs) == ("<=", d.sites["sa"].grid_kw[0])
    terms, sense, rhs = _rows("building")["building__sa__2027"]
    assert terms["inst__ra__sa__2027"] == pytest.approx(-idle)
    assert terms["build__sa__2026"] == terms["build__sa__2027"] == 1.0
    assert (sense, rhs) == (">=", -d.sites["sa"].built_kw_initial)


def test_water_and_carbon_coefficients_by_hand():
    d = CASES["water"].build()
    rs, rk = d.rack_site["ra", "sa"], d.racks["ra"]
    terms, _sense, rhs = _rows("water")["water__sa__2027"]
    assert terms == pytest.approx(
        {"inst__ra__sa__2027": rs.water_l_per_it_kwh * rk.it_power_max_kw * HOURS_PER_YEAR
         / 1000})
    assert rhs == d.sites["sa"].water_limit_m3_per_year
    d = CASES["carbon_cap"].build()
    rs, sd = d.rack_site["ra", "sa"], d.sites["sa"]
    avg = (1 + rs.loss_frac) * (1 + rs.cooling_kw_per_it_kw_avg)
    terms, _sense, rhs = _rows("carbon_cap")["carbon_cap__2027"]
    assert terms["inst__ra__sa__2027"] == pytest.approx(
        HOURS_PER_YEAR * sd.carbon_kg_per_kwh * avg * d.racks["ra"].it_power_idle_kw)
    assert rhs == d.carbon_cap_kg[1]


def test_demand_cdu_and_fabric_right_hand_sides_by_hand():
    d = CASES["demand"].build()
    wl = d.workloads["wa"]
    terms, _sense, rhs = _rows("demand")["demand__wa__prefill__2026"]
    assert rhs == pytest.approx(wl.demand_tokens_per_s[0] * wl.peak_factor * wl.input_frac)
    assert terms["alloc__ra__sa__wa__prefill__2026"] == d.perf["ra", "wa"].prefill_tokens_per_s
    assert terms["unserved__wa__prefill__2026"] == 1.0
    d = CASES["cdu_buy"].build()
    rs = d.rack_site["ra", "sa"]
    owned = -(-rs.liquid_heat_kw_per_rack * d.existing_count("ra", "sa", 0)
              // rs.cdu_capacity_kw) + d.cdu_redundancy
    assert _rows("cdu_buy")["cdu_buy__sa__c1__2026"][2] == -owned
    d = CASES["fab_gap"].build()
    fd, cap = d.fabrics["ra"][0], d.sites["sa"].rack_positions
    (m, pg), = fd.rail_groups
    k_max = -(-(m * pg * cap / fd.oversubscription) // fd.radix)  # spines for the most racks
    a = fd.gaps[0][0]
    terms, _sense, rhs = _rows("fab_gap")["fab_gap0__ra__sa__backend__2026"]
    assert terms["fab_gap0__ra__sa__backend__2026"] == -(k_max - a + 1)
    assert rhs == a - 1


def test_budget_counts_every_capex_category_of_a_new_rack():
    d = CASES["budget"].build()
    rs, rk = d.rack_site["ra", "sa"], d.racks["ra"]
    terms, _sense, rhs = _rows("budget")["budget__2026"]
    assert rhs == d.budget_usd[0]
    assert terms["new__ra__sa__2026"] == pytest.approx(
        rk.capex_usd + rs.cooling_capex_usd_per_kw * rk.it_power_max_kw)
