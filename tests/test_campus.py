"""The air-cooled hall of ``examples/campus.yaml``: its limits hold, and its answer.

The hall (the Seoul metro site with the example's overrides) has no facility water, racks
up to 60 kW and 40 positions; five 8-GPU air-cooled rack types are offered. Checked from
the plans' own tables: every rack in service is air-cooled and within 60 kW (catalog),
no CDU is bought, racks plus network racks stay within 40 positions in every period;
offering one rack type alone never plans cheaper than offering all five (a restriction
of the same model: its cost is at least the full plan's proven bound); B200 racks alone
serve all demand, while H200, MI325X or MI300X racks alone leave part of 2030's demand
unserved and name floor space as the limit, which holds by hand: one more rack would
need its own position and, past the fabric's step, one more network rack.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from dcplan.case import load_case
from dcplan.export.html import build_html
from dcplan.planner import solve_case
from dcplan.planner.analysis import binding_rows
from dcplan.planner.tables import rack_network

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "campus.yaml"
SITE = "seoul_metro"
POSITIONS, MAX_RACK_KW = 40, 60.0

pytestmark = pytest.mark.slow

_plans: dict = {}


def plan(racks: tuple[str, ...] | None = None):
    """The example (or the example with only ``racks`` offered), planned once."""
    if racks not in _plans:
        case = load_case(EXAMPLE)
        if racks is not None:
            case = case.with_changes({"racks": list(racks)})
        _plans[racks] = (case, solve_case(case, size=False))
    return _plans[racks]


def objective(res) -> float:
    """The plan's objective: its NPV plus any unserved penalty [USD]."""
    return res.objective_usd


def test_the_hall_limits_hold_in_every_period():
    case, res = plan()
    assert res.status.has_solution and not len(res.tables["unserved"])
    site = case.sites[SITE]
    assert (site.facility_water, site.max_rack_kw, site.rack_positions) == (
        False, MAX_RACK_KW, POSITIONS)
    fleet = res.tables["fleet"]
    in_service = fleet[fleet.installed_racks > 0.5]
    for r in set(in_service.rack):
        rk = case.catalog.get("racks", r)
        assert rk.cooling == "air" and rk.it_power_max_kw <= MAX_RACK_KW, r
    assert res.tables["cooling"].cdus.sum() == 0
    net = res.tables["power"].set_index("period").network_positions
    for period, used in fleet.groupby("period").rack_positions.sum().items():
        assert used + net[period] <= POSITIONS, period


def test_one_vendor_alone_never_plans_cheaper():
    # a one-type plan that leaves demand unserved pays 50 USD per million tokens for it,
    # far above the 0.2 USD it costs to serve here, so its objective is still bounded by
    # the full plan's
    _, full = plan()
    bound = objective(full) * (1 - full.gap)
    for racks in (("hgx_b200",), ("hgx_b300",), ("hgx_h200",), ("mi325x_rack",),
                  ("mi300x_rack",)):
        _, res = plan(racks)
        assert res.status.has_solution, racks
        assert objective(res) >= bound, racks
    # the full plan mixes: B200 racks, topped up with a cheaper rack type
    bought = set(full.tables["fleet"].query("new_racks > 0.5").rack)
    assert "hgx_b200" in bought and len(bought) > 1


@pytest.mark.parametrize("racks", [("hgx_h200",), ("mi325x_rack",), ("mi300x_rack",)])
def test_lower_density_racks_run_out_of_floor_space(racks):
    _, res = plan(racks)
    short = sorted(set(res.tables["unserved"].period.astype(str)))
    assert "2030" in short and set(short) <= {"2029", "2030"}
    assert f"Binding limits: space at seoul_metro in {', '.join(short)}." in res.message
    binding = binding_rows(res.tables["binding"])
    assert sorted(binding.period.astype(str)) == short
    assert set(binding.limit) == {"space"}
    (r,) = racks
    d = res.inputs
    fleet = res.tables["fleet"].assign(period=lambda f: f.period.astype(str)).set_index("period")
    for period, row in binding.assign(period=binding.period.astype(str)).set_index("period"
                                                                              ).iterrows():
        n = int(round(fleet.loc[period].installed_racks))
        # by hand: the fabric's network racks for n and for n + 1 racks of the one type
        per_rack = d.network_rack_units
        net_n = math.ceil(rack_network(d, r, n)["rack_units"] / per_rack - 1e-9)
        net_more = math.ceil(rack_network(d, r, n + 1)["rack_units"] / per_rack - 1e-9)
        free = POSITIONS - n - net_n
        assert 0 <= free < 1 + (net_more - net_n), period
        assert float(row.used) == n + net_n and float(row.value) == POSITIONS
        assert float(row.shadow_price_relaxed) > 0
    # the report's headline names the limit and which price it quotes (the relaxed one:
    # with the racks fixed one more position saves nothing)
    headline = re.sub(r"<[^>]+>", "", build_html(res))
    assert re.search(r"What limits the plan: space at seoul_metro in 20(29|30) \(40 rack "
                     r"positions\): one more unit would save [\d,]+ USD per rack position "
                     r"\(present value\) with the rack counts free \(LP relaxation\)", headline)


def test_b200_racks_alone_serve_all_demand():
    _, res = plan(("hgx_b200",))
    assert not len(res.tables["unserved"])
