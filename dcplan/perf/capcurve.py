"""Goodput, power and tokens per joule of a rack against the accelerators' power cap.

``dcplan perf power-curve``: one :func:`dcplan.perf.goodput.workload_performance` per
cap (1.0, 0.95, ... down to the lowest cap the accelerator's power curve covers, 0.5
for the shipped curves), each at its own best operating point under the SLO. The
physics is in :mod:`dcplan.perf.power` (:func:`~dcplan.perf.power.phase_clocks`);
docs/perf.md, "Power caps", explains it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dcplan.perf.goodput import Layout, workload_performance
from dcplan.perf.params import Calibration, PerfDefaults, PowerCurve
from dcplan.schema import Workload

#: Step between the caps of a power-curve sweep [-].
CAP_STEP_FRAC = 0.05


def sweep_caps(curve: PowerCurve) -> list[float]:
    """Caps of a sweep: 1.0 down by :data:`CAP_STEP_FRAC` to the curve's lowest [-].

    Parameters
    ----------
    curve : PowerCurve
        The accelerator's power curve.

    Returns
    -------
    list of float
        Caps, falling from 1.0 [-].
    """
    n = int(np.floor((1.0 - curve.min_cap_frac) / CAP_STEP_FRAC + 1e-9))
    return [round(1.0 - CAP_STEP_FRAC * i, 4) for i in range(n + 1)]


def cap_sweep(catalog, rack_id: str, model_id: str | None, workload: Workload,
              curve: PowerCurve, precision: str | None = None,
              layout: Layout | None = None, caps: list[float] | None = None, *,
              defaults: PerfDefaults, calibration: Calibration | None) -> list[dict[str, Any]]:
    """One row per power cap: goodput, power and tokens per joule at its operating point.

    Parameters
    ----------
    catalog : Catalog
        Loaded catalog.
    rack_id : str
        Rack id.
    model_id : str or None
        Model id (None: the workload's).
    workload : Workload
        The workload.
    curve : PowerCurve
        The rack accelerator's power curve.
    precision : str, optional
        Serving precision (default: the workload's).
    layout : Layout, optional
        Fixed parallel layout (None: search).
    caps : list of float, optional
        Caps as fractions of ``max_power_w`` [-] (default :func:`sweep_caps`).
    defaults, calibration
        The performance model's parameters.

    Returns
    -------
    list of dict
        Per cap: ``power_cap_frac`` [-], ``accelerator_cap_w`` [W],
        ``rack_power_at_cap_kw`` [kW], ``goodput_tokens_per_s`` [tokens/s per rack],
        ``goodput_vs_uncapped_frac`` [-], ``power_kw`` (operating point) [kW],
        ``total_tokens_per_joule`` [tokens/J], ``tokens_per_s_per_kw_at_cap``
        [tokens/s per kW of rack power at the cap], the phases' clock fractions [-],
        ``parallel`` and ``batch``; ``fits`` False (and zeros) where the SLO cannot be met.
    """
    acc = catalog.get("accelerators", catalog.get("racks", rack_id).accelerator)
    rows: list[dict[str, Any]] = []
    base = None
    for cap in caps if caps is not None else sweep_caps(curve):
        p = workload_performance(catalog, rack_id, model_id, workload, precision, layout,
                                 defaults=defaults, calibration=calibration,
                                 power_cap_frac=cap, power_curve=curve)
        if base is None:
            base = p.goodput_tokens_per_s
        at_cap = p.power_at_cap_kw or p.power_nameplate_kw
        rows.append({
            "power_cap_frac": cap, "accelerator_cap_w": cap * acc.max_power_w,
            "rack_power_at_cap_kw": at_cap, "fits": p.fits,
            "goodput_tokens_per_s": p.goodput_tokens_per_s,
            "goodput_vs_uncapped_frac": p.goodput_tokens_per_s / base if base else 0.0,
            "power_kw": p.power_kw, "total_tokens_per_joule": p.total_tokens_per_joule,
            "tokens_per_s_per_kw_at_cap": p.goodput_tokens_per_s / at_cap if at_cap else 0.0,
            "prefill_clock_frac": p.prefill_clock_frac,
            "decode_clock_frac": p.decode_clock_frac,
            "parallel": p.parallel, "batch": p.batch,
        })
    return rows


def plot_cap_sweep(rows: list[dict[str, Any]], path: Path | str, title: str) -> None:
    """Draw goodput and tokens per joule (and per kW at the cap) against the cap to a PNG.

    Parameters
    ----------
    rows : list of dict
        :func:`cap_sweep` rows.
    path : Path or str
        The PNG file to write.
    title : str
        Plot title.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dcplan.yamlio import atomic_path

    ok = [r for r in rows if r["fits"]]
    if not ok:
        raise ValueError("no cap in the sweep meets the SLO: nothing to draw")
    x = [r["power_cap_frac"] for r in ok]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 7.5), dpi=110, sharex=True)
    ax1.plot(x, [r["goodput_tokens_per_s"] for r in ok], "o-", color="#4C72B0")
    ax1.set_ylabel("goodput per rack\n[tokens/s, input + output]")
    ax1.set_ylim(0, 1.12 * max(r["goodput_tokens_per_s"] for r in ok))
    ax1.grid(alpha=0.3)
    ax1.set_title(title, fontsize=10)
    ax2.plot(x, [r["total_tokens_per_joule"] for r in ok], "o-", color="#DD8452",
             label="tokens per joule (operating-point power)")
    ax2.set_ylabel("tokens per joule [tokens/J]")
    ax2.set_ylim(0, 1.15 * max(r["total_tokens_per_joule"] for r in ok))
    ax2.grid(alpha=0.3)
    ax3 = ax2.twinx()
    ax3.plot(x, [r["tokens_per_s_per_kw_at_cap"] for r in ok], "s--", color="#55A868",
             label="tokens/s per kW of rack power at the cap")
    ax3.set_ylabel("tokens/s per kW at the cap")
    ax3.set_ylim(0, 1.15 * max(r["tokens_per_s_per_kw_at_cap"] for r in ok))
    lines = ax2.get_lines() + ax3.get_lines()
    ax2.legend(lines, [ln.get_label() for ln in lines], loc="lower left", fontsize=8)
    ax2.set_xlabel("power cap [fraction of the accelerator's max power]")
    ax2.invert_xaxis()
    fig.tight_layout()
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)
