"""Flexible (curtailable) grid connections: the representative curtailment event.

A site whose ``grid_connection`` offers a ``flexible`` part may request curtailable
capacity ``req_flex[s,q]`` (:func:`~dcplan.planner.model.add_grid_connections`): it
arrives after its own lead time, at its own price, and counts in the connected capacity
``connected[s,p]`` like firm capacity, so it carries the site's peak in every ordinary
hour. In a curtailment event the grid operator cuts it by ``depth``: the site then has
``connected[s,p] - depth x flexible[s,p]``.

**The representative event.** The allowance (up to ``hours_per_year`` hours a year) is
modelled as one event in every representative day, the site file's ``event_hours``
hours from ``event_start_hour`` (the grid's evening peak by default). For each of those
hours ``h`` of every representative day (the single flat hour without profiles) the
row ``curtail`` requires::

    peak(h) + sum_b (ch[h] - dis[h]) - sum_g availability x gen_cap
        + depth x flexible[s,p] - connected[s,p] <= 0

with the facility power as the grid rows count it (``peak(h)``: design-day cooling,
headroom racks at serving power) and the battery's and generation's own terms as in
:mod:`dcplan.planner.supply` (a battery dispatched as on the ordinary day, so every day
keeps its charge for an event; generation at its available capacity). Flexible
workloads absorb an event through their schedule mix (a ``valley`` schedule moves
batch work out of the event's hours), and the fleet serves elsewhere what a site cannot
(spare capacity at other sites).

Assumed (a conservative reading): an event may come on any day, so every
representative day holds the reduced limit in the event's hours; events come at the
same hours of the day; the UPS recharge is not counted in an event (no outage at the
same time). The allowance's hours are reported, not optimised: the plan holds in any
event of the given hours, so the whole allowance may be used. No tokens are dropped
in an event (the rows are hard); work a flexible schedule moves out of the event
hours is served later within its deadline.
"""

from __future__ import annotations

from collections.abc import Callable

import pulp

from dcplan.planner.inputs import PlanInputs
from dcplan.planner.model_vars import ModelVars, _lin, _merged
from dcplan.planner.profiles import hour_label
from dcplan.planner.supply import hour_power_terms
from dcplan.schema import HOURS_PER_DAY


def event_hours(d: PlanInputs, s: str, p: int) -> tuple:
    """Hours of the representative days in the curtailment event at site s in period p.

    Parameters
    ----------
    d : PlanInputs
        The plan's coefficient tables.
    s : str
        Site id (its connection must offer a flexible part).
    p : int
        Period index (0-based) [-].

    Returns
    -------
    tuple
        Hour indices ``24 x day + hour of day`` whose hour of day is in the event, or
        ``(None,)`` without profiles (one flat hour, always in the event).
    """
    if d.rep_hours(p) == (None,):
        return (None,)
    fx = d.sites[s].connection.flexible
    return tuple(h for h in range(HOURS_PER_DAY * len(d.day_names))
                 if h % HOURS_PER_DAY in fx.event_hours)


def add_curtailment(prob: pulp.LpProblem, d: PlanInputs, mv: ModelVars,
                    parts: Callable) -> None:
    """Rows ``curtail`` of every site-period with flexible capacity (module docstring).

    Parameters
    ----------
    prob : pulp.LpProblem
        The model the rows are added to.
    d : PlanInputs
        The plan's coefficient tables.
    mv : ModelVars
        The variables, expressions and rows built so far, updated in place.
    parts : callable
        :func:`dcplan.planner.model._site_power_parts` (the facility power's terms).
    """
    for (s, p), flex in mv.grid_flexible_kw.items():
        fx = d.sites[s].connection.flexible
        if not len(flex) or not fx.depth or not fx.hours_per_year:
            continue
        if not len(mv.facility_peak_kw.get((s, p), _lin([]))):
            continue
        conn = mv.grid_connected_kw[s, p]
        limit = conn.constant
        base = [(v, fx.depth * c) for v, c in flex.items()]
        base += [(v, -c) for v, c in conn.items()]
        base += [(mv.onsite_capacity_kw[s, g.id, p], -g.availability)
                 for g in d.onsite.get(s, ()) if (s, g.id, p) in mv.onsite_capacity_kw]
        cache: dict = {}

        def once(d_, mv_, s_, p_, average, cache=cache):
            """The site-period's power terms, computed once per basis."""
            if average not in cache:
                cache[average] = parts(d_, mv_, s_, p_, average)
            return cache[average]
        label = d.periods[p].label
        for h in event_hours(d, s, p):
            bat = []
            for b in d.storage.get(s, ()):
                key = (s, b.id, p, h)
                if key in mv.storage_charge_kw:
                    bat += [(mv.storage_charge_kw[key], 1.0),
                            (mv.storage_discharge_kw[key], -1.0)]
            peak = hour_power_terms(d, mv, s, p, h, once)
            names = (s, label) if h is None else (s, label, hour_label(h, d.day_names))
            mv.add(prob, "curtail", names, _lin(_merged([*peak, *bat, *base])) <= limit)
