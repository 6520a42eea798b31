"""``dcplan network`` and ``dcplan cooling``: the facility models on the command line."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer

from dcplan.cli.app import app
from dcplan.cli.common import STATE, emit_json, fail, format_table, handle_errors
from dcplan.cli.complete import ids_of
from dcplan.defaults import DEFAULT_OVERSUBSCRIPTION
from dcplan.errors import InputError, Problem


def _supply_in_range(value: float | None) -> float | None:
    """Reject a facility-water supply no liquid loop can run at (a usage error)."""
    if value is None:
        return value
    from dcplan.facility.cooling import supply_water_range

    lo, hi = supply_water_range()
    if not lo <= value <= hi:
        raise typer.BadParameter(
            f"{value:g} C is impossible for a liquid loop: facility water must be between "
            f"{lo:g} C and {hi:g} C (colder water freezes, condenses on cold plates and is "
            "colder than chillers deliver; warmer water cools no rack)")
    return value


def _fleet_text(mix: dict[str, int]) -> str:
    """``{a: 12, b: 4}`` -> ``12 x a + 4 x b`` (racks with a count above 0)."""
    return " + ".join(f"{n:,} x {r}" for r, n in mix.items() if n)


def _n(value) -> str:
    """Whole number with thousand separators (``3384`` -> ``3,384``)."""
    return f"{value:,.0f}"


def _ids(catalog, **wanted) -> None:
    """Check ids (kind=id) all at once; unknown ids name the closest known ids."""
    from dcplan.cli.catalog_cmd import lookup_all

    lookup_all(catalog, list(wanted.items()))


@app.command("network")
@handle_errors
def network_cmd(
    rack: Annotated[str, typer.Option("--rack", help="Rack id (see 'dcplan catalog list racks').",
                                      autocompletion=ids_of("racks"))],
    racks: Annotated[int, typer.Option("--racks", help="Number of racks.", min=1)],
    optics: Annotated[str | None, typer.Option(
        "--optics", help="Optic on switch ends: pluggable_800g, lpo_800g, cpo ... "
        "(default: cheapest pluggable at the switch port speed).",
        autocompletion=ids_of("optics"))] = None,
    oversubscription: Annotated[float, typer.Option(
        "--oversubscription", min=1.0,
        help="Leaf down:up bandwidth ratio (1 = non-blocking).")] = DEFAULT_OVERSUBSCRIPTION,
    switch: Annotated[str | None, typer.Option(
        "--switch", help="Back-end switch id (default: highest radix).",
        autocompletion=ids_of("switches"))] = None,
    graphml: Annotated[Path | None, typer.Option(
        "--graphml", help="Write the fabric graph to this GraphML file.", dir_okay=False)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Back-end and front-end fabric of N racks: switches, links, optics, power, capex."""
    from dcplan.facility.network import network, write_graphml

    if not math.isfinite(oversubscription):
        fail(f"--oversubscription must be a finite ratio of at least 1 (got "
             f"{oversubscription:g})", code=2)
    catalog = STATE.catalog()
    _ids(catalog, racks=rack, optics=optics, switches=switch)
    _fits_a_site(catalog, rack, racks)
    result = network(catalog, rack, racks, optics=optics,
                     oversubscription=oversubscription, switch_id=switch,
                     with_accelerators=graphml is not None, keep_graph=graphml is not None)
    if graphml is not None:
        write_graphml(result, graphml)
    summary = result.summary()
    if graphml is not None:
        summary["graphml"] = str(graphml)
    if json_out:
        emit_json(summary)
        return
    s = summary
    typer.echo(f"{s['n_racks']} x {s['rack_id']}: {s['accelerators']:,} accelerators, "
               f"{s['nic_ports']:,} back-end NIC ports at {s['link_gbps']:g} Gb/s")
    typer.echo(f"back-end: {result.backend.tiers}-tier fat tree of {s['switch_id']} "
               f"(radix {result.backend.radix} at {s['link_gbps']:g} Gb/s), "
               f"oversubscription {oversubscription:g}:1; front-end: {s['frontend_switch_id']}")
    rows = [
        {"fabric": "back-end", "leaf": _n(result.backend.leaf),
         "spine": _n(result.backend.spine), "core": _n(result.backend.core),
         "switches": _n(result.backend.switches)},
        {"fabric": "front-end", "leaf": _n(result.frontend.leaf),
         "spine": _n(result.frontend.spine), "core": _n(result.frontend.core),
         "switches": _n(result.frontend.switches)},
    ]
    typer.echo(format_table(rows))
    typer.echo("")
    typer.echo(format_table([
        {"links": c["tier"], "medium": c["medium"], "count": _n(c["links"]),
         "longest m": c["max_length_m"], "switch end": c["switch_end"],
         "far end": c["far_end"]} for c in s["link_classes"]]))
    typer.echo(f"copper links {s['copper_links']:,}, optical links {s['optical_links']:,}; "
               f"leaves {s['leaf_ports']['down']} down + {s['leaf_ports']['up']} up ports; "
               f"network racks {s['network_rack_positions']:,} positions "
               f"({s['switch_rack_units']:,} U of switches)")
    media = [{"optic": oid, "where": end, "count": _n(count)}
             for end, counts in s["transceivers_by_end"].items()
             for oid, count in counts.items()]
    total = sum(s["transceivers"].values())
    media.append({"optic": "total transceivers", "where": "",
                  "count": _n(total)})
    if s["cpo_ports"]:
        media.append({"optic": "total co-packaged ports", "where": "",
                      "count": _n(s["cpo_ports"])})
    typer.echo(format_table(media))
    typer.echo("")
    typer.echo(format_table([
        {"item": "switches", "kW": s["switch_kw"], "capex USD": s["switch_capex_usd"]},
        {"item": "optics + active copper", "kW": s["optics_kw"],
         "capex USD": s["optics_capex_usd"] + s["copper_capex_usd"]},
        {"item": "network total", "kW": s["network_kw"], "capex USD": s["network_capex_usd"]},
        {"item": "per rack", "kW": s["network_kw_per_rack"],
         "capex USD": s["network_capex_usd_per_rack"]},
        {"item": "NICs (inside rack IT power)", "kW": s["nic_kw_in_rack"],
         "capex USD": s["nic_capex_usd_in_rack"]},
    ]))
    full = s["bisection_gbps"] >= s["full_bisection_gbps"] - 1e-6
    typer.echo(f"bisection bandwidth {s['bisection_gbps'] / 1000:,.1f} Tb/s "
               f"({'full' if full else 'oversubscribed'}; full = "
               f"{s['full_bisection_gbps'] / 1000:,.1f} Tb/s)")
    for note in s["notes"]:
        typer.echo(f"note: {note}")
    if graphml is not None:
        typer.echo(f"graph written to {graphml}")


def _fits_a_site(catalog, rack_id: str, n_racks: int) -> None:
    """Refuse more racks than the largest site holds (before any fabric is built)."""
    from dcplan.sites import load_sites

    try:
        sites = load_sites(STATE.sites_dir)
    except InputError:
        return  # no usable sites folder: the fabric size check still applies
    if not sites:
        return
    per = catalog.get("racks", rack_id).rack_positions
    big = max(sites.values(), key=lambda x: x.rack_positions)
    if n_racks * per > big.rack_positions:
        raise InputError(Problem(
            "--racks", f"{n_racks:,} x {rack_id} need {n_racks * per:,} rack positions; "
            f"the largest site ({big.id}) has {big.rack_positions:,}: no site can hold "
            f"them; use at most {big.rack_positions // per:,} racks"))


def parse_fleet(text: str) -> dict[str, int]:
    """``"gb200_nvl72=12,hgx_b200=4"`` -> {rack id: count} (``--fleet`` of ``dcplan cooling``).

    Parameters
    ----------
    text : str
        Comma-separated ``rack=count`` pairs; counts are whole numbers >= 0 [racks].

    Returns
    -------
    dict of str to int
        Rack id -> racks, in the order given.

    Raises
    ------
    InputError
        A pair without ``=``, a count that is not a whole number >= 0, a rack named
        twice, or no rack at all (each problem named, all at once).
    """
    problems, out = [], {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        rack, sep, count = (x.strip() for x in part.partition("="))
        if not sep or not rack:
            problems.append(Problem("--fleet", f"'{part}' is not RACK=COUNT; write e.g. "
                                    "--fleet gb200_nvl72=12,hgx_b200=4", field=part))
            continue
        try:
            n = int(count)
        except ValueError:
            n = -1
        if n < 0:
            problems.append(Problem("--fleet", f"the count of '{rack}' must be a whole number "
                                    f">= 0, not '{count}'", field=rack))
        elif rack in out:
            problems.append(Problem("--fleet", f"'{rack}' is named twice; give each rack "
                                    "type once with its total count", field=rack))
        else:
            out[rack] = n
    if not problems and not any(out.values()):
        problems.append(Problem("--fleet", "no racks: give at least one RACK=COUNT with a "
                                "count above 0"))
    if problems:
        raise InputError(problems)
    return out


@app.command("cooling")
@handle_errors
def cooling_cmd(
    site: Annotated[str, typer.Option("--site", help="Site id (see sites/).",
                                      autocompletion=ids_of("sites"))],
    rack: Annotated[str | None, typer.Option(
        "--rack", help="Rack id (with --racks; or give a mixed fleet with --fleet).",
        autocompletion=ids_of("racks"))] = None,
    racks: Annotated[int | None, typer.Option("--racks", help="Number of racks of --rack.",
                                              min=1)] = None,
    fleet: Annotated[str | None, typer.Option(
        "--fleet", help="A fleet of several rack types, RACK=COUNT pairs: "
        "gb200_nvl72=12,hgx_b200=4 (instead of --rack and --racks).")] = None,
    cdu: Annotated[str | None, typer.Option(
        "--cdu", help="Force this CDU model (catalog cdus; default: the cooling model's "
        "choice for the fleet).", autocompletion=ids_of("cdus"))] = None,
    supply_water_c: Annotated[float | None, typer.Option(
        "--supply-water-c", callback=_supply_in_range,
        help="Facility-water supply of the liquid loop [C] "
        "(default: the site's design value).")] = None,
    redundancy: Annotated[int | None, typer.Option(
        "--redundancy", help="Spare CDUs (default 1 = N+1).", min=0)] = None,
    optics: Annotated[str | None, typer.Option(
        "--optics", help="Optic for the network whose heat is added (default pluggable).",
        autocompletion=ids_of("optics"))
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Cooling, power and water of a fleet at a site: CDUs, heat rejection, UPS, PUE, WUE.

    The fleet is --rack R --racks N, or --fleet R1=N1,R2=N2 for several rack types.
    UPS and generators are sized for the site's redundancy topology.
    """
    from dcplan.cli.catalog_cmd import lookup_all, lookup_site
    from dcplan.facility import size_fleet
    from dcplan.facility.cooling import check_racks_fit, check_supply_water
    from dcplan.sites import load_sites
    from dcplan.units import HOURS_PER_YEAR

    if fleet is not None and (rack is not None or racks is not None):
        fail("give either --fleet or --rack with --racks, not both")
    if fleet is None and (rack is None or racks is None):
        fail("give --rack and --racks (one rack type), or --fleet RACK=COUNT,... "
             "(e.g. --fleet gb200_nvl72=12,hgx_b200=4)")
    mix = parse_fleet(fleet) if fleet is not None else {rack: racks}
    catalog = STATE.catalog()
    problems = []
    try:
        lookup_all(catalog, [*(("racks", r) for r in mix), ("optics", optics), ("cdus", cdu)])
    except InputError as exc:
        problems += exc.problems
    try:
        the_site = lookup_site(load_sites(STATE.sites_dir), site)
    except InputError as exc:
        problems += exc.problems
    if problems:
        raise InputError(problems)
    if supply_water_c is not None:
        check_supply_water(catalog, the_site, supply_water_c)
    models = dict(zip(mix, check_racks_fit(catalog, the_site, list(mix)), strict=True))
    needed = sum(n * models[r].rack_positions for r, n in mix.items())
    if needed > the_site.rack_positions:
        it_mw = sum(n * models[r].it_power_max_kw for r, n in mix.items()) / 1e3
        grid_mw = max(the_site.grid_mw.values())
        grid = (f"; their IT load alone ({it_mw:,.1f} MW) is also over the site's grid "
                f"capacity (at most {grid_mw:,.4g} MW)" if it_mw > grid_mw else "")
        if len(mix) == 1:
            per = next(iter(models.values())).rack_positions
            fix = f"use at most {the_site.rack_positions // per:,} racks or another site"
        else:
            fix = "use fewer racks or another site"
        raise InputError(Problem(
            f"site {the_site.id}", f"{_fleet_text(mix)} need {needed:,} rack positions but "
            f"the site has {the_site.rack_positions:,}{grid}; {fix}",
            field="rack_positions"))
    sized = size_fleet(catalog, the_site, mix, optics=optics,
                       supply_water_c=supply_water_c, cdu_redundancy=redundancy,
                       cdu_id=cdu, linear=False)
    res, red = sized.cooling, sized.redundancy
    peak, avg = sized.power_peak, sized.power_avg
    net_kw = res.network_kw
    out = res.summary()
    out.update({
        "pue_annual": avg.pue, "pue_peak": peak.pue, "loss_kw_peak": peak.loss_kw,
        "facility_kw_peak": peak.facility_kw, "facility_kw_avg": avg.facility_kw,
        "annual_facility_kwh": avg.facility_kw * HOURS_PER_YEAR,
        "cooling_kw_per_it_kw_avg": res.cooling_kw_avg / res.it_kw,
        "cooling_kw_per_it_kw_peak": res.cooling_kw_peak / res.it_kw,
        "redundancy": red.summary(), "positions": dict(sized.positions),
        "usable_it_mw": {str(y): red.usable_it_mw(mw) for y, mw in
                         sorted(the_site.grid_mw.items())},
    })
    warnings = []
    grid_mw = max(the_site.grid_mw.values())
    if red.grid_kw > grid_mw * 1e3:
        year = min(y for y, mw in the_site.grid_mw.items() if mw == grid_mw)
        warnings.append(f"facility peak {peak.facility_kw / 1e3:,.1f} MW (grid connection "
                        f"{red.grid_kw / 1e3:,.1f} MW with battery recharge) exceeds site "
                        f"{the_site.id}'s grid capacity in every year (at most "
                        f"{grid_mw:,.4g} MW, from {year})")
    if sized.positions["total"] > the_site.rack_positions:
        warnings.append(f"racks, network racks and in-row CDUs need "
                        f"{sized.positions['total']:,.0f} positions, the site has "
                        f"{the_site.rack_positions:,}")
    water = res.water
    if water is not None and not water.within_limit:
        warnings.append(f"cooling water {water.annual_m3:,.0f} m3/year exceeds the site's "
                        f"{the_site.water_limit_m3_per_year:,.0f} m3/year allowance")
    if warnings:
        out["warnings"] = warnings
        for w in warnings:
            typer.secho(f"warning: {w}", fg=typer.colors.YELLOW, err=True)
    if json_out:
        emit_json(out)
        return
    pos = sized.positions
    typer.echo(f"{_fleet_text(mix)} at {the_site.id} ({the_site.name}), full IT load; "
               f"{pos['total']:,.0f} of {the_site.rack_positions:,} rack positions "
               f"({pos['compute']:,.0f} racks, {pos['network']:,.0f} network racks, "
               f"{pos['cdu']:,.0f} CDU positions)")
    typer.echo(format_table([
        {"heat": "IT", "kW": res.it_kw},
        {"heat": "network (air side)", "kW": net_kw},
        {"heat": "to liquid", "kW": res.liquid_heat_kw},
        {"heat": "to air", "kW": res.air_heat_kw},
    ]))
    if res.cdu_id:
        name = f' "{res.cdu_name}"' if res.cdu_name and res.cdu_name != res.cdu_id else ""
        typer.echo(f"CDUs: {res.cdu_count} x {res.cdu_id}{name} ({res.cdu_capacity_kw:,.0f} kW "
                   f"each, N+{res.cdu_redundancy}); facility supply {res.supply_c:g} C; "
                   f"pumps {res.pump_kw:,.1f} kW")
    lp, ap = res.liquid_plant, res.air_plant
    loops = water.loops if water is not None else {}
    rows = []
    for name, heat, plant in (("liquid", res.liquid_heat_kw, lp),
                              ("air (CRAH)", res.air_heat_kw, ap)):
        if not heat:
            continue
        w = loops.get("liquid" if name == "liquid" else "air")
        rows.append({"loop": f"{name} {plant.supply_c:g} C", "free cooling": plant.free_id or "-",
                     "chiller": plant.chiller_id or "-", "free hours": plant.free_hours,
                     "kW/kW avg": plant.kw_per_kw_avg, "kW/kW peak": plant.kw_per_kw_peak,
                     "water L/kWh heat": w.l_per_kwh_heat if w else 0.0})
    typer.echo(format_table(rows))
    typer.echo(f"cooling power: {res.cooling_kw_avg:,.1f} kW annual average, "
               f"{res.cooling_kw_peak:,.1f} kW on the design day; "
               f"{res.annual_cooling_kwh / 1e3:,.0f} MWh/year")
    typer.echo(f"facility power: {peak.facility_kw:,.1f} kW peak (losses {peak.loss_kw:,.1f} "
               f"kW); PUE {avg.pue:.3f} annual, {peak.pue:.3f} design day")
    if water is not None:
        limit = (f" of a {water.limit_m3:,.0f} m3/year allowance"
                 if water.limit_m3 is not None else "")
        typer.echo(f"water: {water.annual_m3:,.0f} m3/year{limit}; WUE "
                   f"{water.wue_l_per_kwh:.3f} L/kWh of IT energy")
    typer.echo("")
    prow = []
    for label, plant in (("UPS", red.ups), ("generators", red.generators)):
        if plant is None:
            continue
        prow.append({"plant": label, "model": plant.model_id,
                     "topology": red.topology if label == "UPS" else red.generator_topology,
                     "count": f"{plant.systems} x {plant.modules_per_system}",
                     "module kW": plant.module_kw, "load %": 100 * plant.load_frac,
                     "capex USD": plant.capex_usd})
    if prow:
        typer.echo(format_table(prow))
    typer.echo(f"power redundancy {red.topology} (Uptime Tier {red.uptime_tier}): UPS "
               f"efficiency {red.ups_efficiency:.2%}, losses {red.ups_loss_kw:,.1f} kW; "
               f"generator standby {red.generator_standby_kw:,.1f} kW; grid connection "
               f"{red.grid_kw:,.1f} kW with battery recharge: {red.usable_it_frac:.1%} of it "
               f"usable as IT load")
    typer.echo(f"cooling capex: {res.capex_usd:,.0f} USD (CDUs {res.cdu_capex_total_usd:,.0f}); "
               f"UPS and generators {red.capex_usd:,.0f} USD")
    for note in res.notes + red.notes:
        typer.echo(f"note: {note}")
