"""Cost categories of a plan and when each is paid.

A module of its own, free of the model and its solver, so that the commands that only
read a saved plan (show, compare, export) get the categories without them.
"""

from __future__ import annotations

#: Cost categories and when they are paid ("capex": period start, "opex": middle,
#: "end": end of the horizon).
CATEGORIES = {
    "rack_capex": "capex", "network_capex": "capex", "cooling_capex": "capex",
    "cdu_capex": "capex", "redundancy_capex": "capex", "building_shell": "capex",
    "building_electrical": "capex", "building_mechanical": "capex", "building_capex": "capex",
    "grid_connection": "capex", "storage_capex": "capex", "onsite_capex": "capex",
    "maintenance": "opex", "staff": "opex", "software": "opex", "energy": "opex",
    "onsite_fuel": "opex", "demand_charge": "opex", "carbon": "opex",
    "unserved_penalty": "opex", "terminal_value": "end",
}
