"""``dcplan plan`` of a scenario with an ``uncertainty:`` block: the two-stage stochastic plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from dcplan.cli.common import emit_json, exit_for


def plan_stochastic_cmd(case: Any, *, outdir: Path | None, xlsx: Path | None, as_json: bool,
                        solver: str | None, time_limit: float | None, gap: float | None,
                        threads: int | None, solver_log: bool, wide: bool,
                        progress: Any, allow_unserved: bool = False) -> None:
    """Solve, print and write the stochastic plan of ``case``.

    Exits as a deterministic plan does (:func:`dcplan.cli.common.exit_for`): 1 without
    a plan, and 1 when it leaves demand unserved in some case unless ``allow_unserved``
    (``--allow-unserved``) or the scenario's ``allow_unserved: true`` accepts it.
    """
    from dcplan.export.stochastic import stochastic_text, write_stochastic_outputs
    from dcplan.export.text import terminal_width
    from dcplan.planner.stochastic import plan_stochastic

    opt = case.scenario.solver.updated(name=solver, time_limit_s=time_limit, gap=gap,
                                       threads=threads, log=solver_log or None)
    res = plan_stochastic(case, opt, progress=progress)
    if res.status.has_solution and (outdir is not None or xlsx is not None):
        written = write_stochastic_outputs(res, outdir=outdir, xlsx=xlsx,
                                           input_digest=case.digest)
        if progress:
            where = ", ".join(str(p) for p in (outdir, xlsx) if p is not None)
            progress(f"wrote {len(written)} files ({where})")
    if as_json:
        emit_json(res.summary())
    else:
        typer.echo(stochastic_text(res, None if wide else terminal_width()))
    exit_for(res, allow_unserved)
