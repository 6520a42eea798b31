"""One lifetime rule for existing and new racks, yearly and quarterly periods.

A rack installed in year (or quarter) Y with a life of L years serves the periods that
start in [Y, Y + L): with yearly periods the years Y .. Y+L-1, with quarters the 4 L
quarters from its installation quarter on. The expectations below are counted by hand.
"""

from __future__ import annotations

import datetime as dt

import pytest
from test_planner_helpers import make_inputs, rack, site, workload

from dcplan.planner import solve_inputs
from dcplan.planner.inputs import in_service, retire_period
from dcplan.scenario import Period, Periods, SolverOptions

EXACT = SolverOptions(gap=0.0, time_limit_s=30)


def _quarters(start: int, n: int) -> list[Period]:
    out = []
    for i in range(n):
        y, q = divmod(i, 4)
        out.append(Period(f"{start + y}q{q + 1}", dt.date(start + y, 3 * q + 1, 1), 0.25,
                          0.25 * i))
    return out


def test_in_service_rule():
    assert in_service(0.0, 5) and in_service(4.0, 5) and in_service(4.75, 5)
    assert not in_service(5.0, 5) and not in_service(-0.25, 5)


@pytest.mark.parametrize("installed, life, retire_label", [
    (2025, 5, "2030"),        # serves 2025..2029: in service 2026..2029 (4 years of the plan)
    (2026, 5, "2031"),
    (2022, 5, "2027"),        # 2022..2026: one year left
    (2021, 5, "2026"),        # already retired at the start
    (2024, 2.5, "2027"),      # a half year rounds to the periods that start inside the life
])
def test_existing_retirement_yearly(installed, life, retire_label):
    periods = Periods(start=2026, end=2035).expand()
    i = retire_period(periods, installed, life)
    assert periods[i].label == retire_label


@pytest.mark.parametrize("installed, life, retire_label", [
    (2025, 5, "2030q1"),      # installed at the start of 2025: 20 quarters 2025q1..2029q4
    ("2025Q3", 5, "2030q3"),  # 2025q3..2030q2
    ("2025Q2", 1, "2026q2"),  # 2025q2..2026q1
    ("2026Q1", 0.75, "2026q4"),
])
def test_existing_retirement_quarterly(installed, life, retire_label):
    periods = Periods(start="2026Q1", end="2031Q4", step="quarter").expand()
    i = retire_period(periods, installed, life)
    assert periods[i].label == retire_label


def test_new_racks_follow_the_same_rule_quarterly():
    d = make_inputs(racks=[rack(life=1.0)], sites=[site(n=8)], n=8,
                    workloads=[workload(demand=[100.0] * 8)])
    d.periods = _quarters(2026, 8)
    # bought in 2026q1 with a 1-year life: in service 2026q1..2026q4, out in 2027q1
    assert [d.alive("ra", 0, p) for p in range(8)] == [True] * 4 + [False] * 4
    assert [d.alive("ra", 2, p) for p in range(8)] == [False] * 2 + [True] * 4 + [False] * 2


def test_existing_and_new_retire_alike_in_a_plan():
    """16 racks installed 2025 (life 2): in service 2026, retired 2027; a new one bought in
    2027 (life 2) serves 2027 and 2028 and is replaced in 2029."""
    d = make_inputs(racks=[rack(life=2)], sites=[site(n=4)], n=4,
                    workloads=[workload(demand=(100, 100, 100, 100))],
                    existing=[("ra", "sa", 1, retire_period(
                        make_inputs(n=4).periods, 2025, 2))])
    assert d.existing[0].retire_period == 1
    res = solve_inputs(d, EXACT, explain=False)
    f = res.tables["fleet"]
    assert list(f.installed_racks) == [1, 1, 1, 1]
    assert list(f.new_racks) == [0, 1, 0, 1]
    assert list(f.retired_racks) == [0, 1, 0, 1]


@pytest.mark.slow
def test_baseline_existing_fleet_retires_after_2029(baseline_inputs):
    """The 16 GB200 racks of baseline (installed 2025, life 5) serve 2026-2029 only."""
    d = baseline_inputs
    (ex,) = d.existing
    assert d.periods[ex.retire_period].label == "2030"
    assert [d.existing_count("gb200_nvl72", "seoul_metro", p) for p in range(6)] == \
        [16, 16, 16, 16, 0, 0]
