"""What a sweep tells, for people: summary text, memo charts, a workbook, an HTML report.

All of it reads a sweep folder through :func:`dcplan.sweep.load_sweep` and
:func:`dcplan.sweep.summarize` and only formats what they computed:

* :func:`sweep_summary_text` - the console summary (``dcplan sweep show DIR``);
* :func:`sweep_figures` / :func:`write_sweep_charts` - NPV distribution, tornado, fan
  chart of racks in service by type, purchase probability, sensitivity indices (PNG);
* :func:`write_sweep_workbook` - ``sweep.xlsx`` (Summary, Purchases, Fleet,
  Sensitivity, Tornado, Parameters, Samples), printable like the plan workbook;
* :func:`write_sweep_html` - ``report.html``, one self-contained file in the style of
  the plan report (:mod:`dcplan.export.html`);
* :func:`write_sweep_reports` - all of them into the sweep folder.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from dcplan.export.charts import _txt, figure_png  # noqa: E402
from dcplan.export.labels import format_number, kpi_format, kpi_label, kpi_unit  # noqa: E402
from dcplan.export.text import format_table  # noqa: E402
from dcplan.sweep.summary import (  # noqa: E402
    FAN_LEVELS,
    TORNADO_TAIL,
    SweepData,
    SweepSummary,
    load_sweep,
    summarize,
    unordered,
)

#: File names of the sweep charts (in ``DIR/charts``).
SWEEP_CHARTS = ("npv_distribution.png", "tornado.png", "racks_fan.png",
                "purchase_probability.png", "sensitivity.png")
WORKBOOK = "sweep.xlsx"
REPORT = "report.html"
CHARTS_DIR = "charts"


def _summary(obj: Any) -> SweepSummary:
    if isinstance(obj, SweepSummary):
        return obj
    if isinstance(obj, SweepData):
        return summarize(obj)
    return summarize(load_sweep(obj))


def column_title(col: str) -> str:
    """Words and unit of a ``samples.csv`` figure (KPI, ``peak_mw.<site>``, ...)."""
    if col.startswith("peak_mw."):
        return f"Peak facility power, {col.split('.', 1)[1]} [MW]"
    if col.startswith("racks_bought."):
        return f"Racks bought, {col.split('.', 1)[1]} [racks]"
    if col == "objective_usd":
        return "NPV with unserved-demand penalty [USD (present value)]"
    unit = kpi_unit(col)
    return f"{kpi_label(col)} [{unit}]" if unit else kpi_label(col)


def _fmt(col: str, value: Any) -> str:
    if col.startswith("peak_mw."):
        return format_number(value, "#,##0.0")
    if col.startswith("racks_bought."):
        return format_number(value, "#,##0")
    return format_number(value, kpi_format(col))


def _million(usd: float) -> str:
    return "-" if usd is None or not math.isfinite(usd) else f"{usd / 1e6:,.0f}"


def _is_money(col: str) -> bool:
    return col.endswith("_usd") and col != "usd_per_million_tokens"


def kpi_rows(summary: SweepSummary, extra: bool = True) -> list[dict[str, str]]:
    """KPI percentile rows as text (money in million USD)."""
    rows = []
    frames = [summary.kpis] + ([summary.extra] if extra else [])
    for df in frames:
        for r in df.itertuples():
            money = _is_money(r.kpi)
            title = column_title(r.kpi)
            if money:
                title = title.replace("[USD", "[million USD")

            def f(v: float, money: bool = money, kpi: str = r.kpi) -> str:
                return _million(v) if money else _fmt(kpi, v)

            rows.append({"figure": title, "base case": f(r.base), "P10": f(r.p10),
                         "P50": f(r.p50), "P90": f(r.p90), "mean": f(r.mean),
                         "samples": f"{r.n:,}"})
    return rows


def sensitivity_rows(summary: SweepSummary) -> tuple[str, list[dict[str, str]]]:
    """The method's indices of the first output, per parameter (as text), and a title."""
    s = summary.sensitivity
    data = summary.data
    out = data.outputs[0] if data.outputs else ""
    titles = data.titles
    sub = s[s.output == out]
    method = data.manifest.get("method")
    rows = []
    money = _is_money(out)

    def val(method: str, index: str, name: str) -> pd.Series | None:
        r = sub[(sub.method == method) & (sub["index"] == index) & (sub.parameter == name)]
        return r.iloc[0] if len(r) else None

    for name in data.names:
        row = {"parameter": titles.get(name, name)}
        if method == "morris":
            ms, sg = val("morris", "mu_star", name), val("morris", "sigma", name)
            if ms is not None:
                scale = 1e6 if money else 1.0
                row["mu* (mean |effect|)"] = f"{ms.value / scale:,.1f}"
                row["+- 95 %"] = f"{ms.conf / scale:,.1f}"
                row["sigma (interactions)"] = f"{sg.value / scale:,.1f}"
        if method == "sobol":
            s1, st = val("sobol", "S1", name), val("sobol", "ST", name)
            if s1 is not None:
                row["first-order S1"] = f"{s1.value:.2f} +- {s1.conf:.2f}"
                row["total ST"] = f"{st.value:.2f} +- {st.conf:.2f}"
        rho = val("spearman", "rho", name)
        row["rank correlation"] = "-" if rho is None or not math.isfinite(rho.value) else \
            f"{rho.value:+.2f}"
        rows.append(row)
    key = {"morris": "mu*", "sobol": "total ST"}.get(method or "")
    if key:
        def order(r: dict[str, str]) -> float:
            text = next((v for k, v in r.items() if k.startswith(key)), "")
            try:
                return -float(text.split()[0].replace(",", ""))
            except (ValueError, IndexError):
                return 0.0

        rows.sort(key=order)
    else:
        rows.sort(key=lambda r: -abs(float(r["rank correlation"]))
                  if r["rank correlation"] != "-" else 0.0)
    unit = "million USD" if money else kpi_unit(out)
    what = {"morris": f"Morris elementary effects of {kpi_label(out)} [{unit} per full "
                      "range of the parameter]",
            "sobol": f"Sobol indices of {kpi_label(out)} (share of its variance)"}.get(
        method or "", f"Spearman rank correlation with {kpi_label(out)}")
    return what, rows


def _caveat(manifest: dict) -> str:
    """The tornado's caveat for designs that are not a probability sample of one point each."""
    method = manifest.get("method")
    if method in ("morris", "sobol"):
        return (f" (from a {method} design the groups are small and move together: read the "
                "indices above first)")
    return ""


def sweep_summary_text(obj: Any) -> str:
    """Readable summary of a sweep folder (or of its :class:`SweepSummary`).

    Parameters
    ----------
    obj : path, SweepData or SweepSummary
        A sweep folder (``-o`` of ``dcplan sweep``).

    Returns
    -------
    str
    """
    s = _summary(obj)
    data = s.data
    m = data.manifest
    out = [f"Sweep '{m.get('name')}' of scenario '{m.get('scenario_name')}' "
           f"({m.get('method')}, {len(data.names)} parameters, seed {m.get('seed')}): "
           f"{m.get('state', '?')}", ""]
    out += s.headline()
    if not s.solved:
        return "\n".join(out)
    out.append("")
    out.append("Key figures over the solved samples:")
    out.append(format_table(kpi_rows(s)))
    if len(s.purchase):
        out.append("")
        out.append("Probability that each rack type has been bought by each period:")
        rows = [{"rack type": r, **{str(p): f"{v:.0%}" for p, v in row.items()}}
                for r, row in s.purchase.iterrows()]
        out.append(format_table(rows))
    what, rows = sensitivity_rows(s)
    out.append("")
    out.append(what + ":")
    out.append(format_table(rows))
    if len(s.tornado):
        out.append("")
        first = data.outputs[0]
        money = _is_money(first)
        unit = "million USD" if money else kpi_unit(first)
        out.append(f"Tornado: mean {kpi_label(first)} [{unit}] with the parameter in its "
                   f"lowest / highest {TORNADO_TAIL:.0%} of samples{_caveat(m)}:")
        scale = 1e6 if money else 1.0
        out.append(format_table([{
            "parameter": r.title, "low": r.low, "mean at low": f"{r.low_mean / scale:,.1f}",
            "high": r.high, "mean at high": f"{r.high_mean / scale:,.1f}",
            "swing": f"{r.swing / scale:+,.1f}"} for r in s.tornado.itertuples()]))
    out.append("")
    out.append(f"Files in {data.folder}: samples.csv (one row per sample), fleet.csv, "
               "design.csv, manifest.json" + (", sweep.xlsx, report.html, charts/"
                                             if (Path(data.folder) / REPORT).exists() else ""))
    return "\n".join(out)


# --- charts ----------------------------------------------------------------------------


def _legend_right(ax: Any, **kw: Any) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, labels, fontsize="small", loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **kw)


def plot_npv_distribution(fig: Any, summary: SweepSummary, output: str | None = None) -> None:
    """Histogram and cumulative distribution of an output (default: the first)."""
    data = summary.data
    output = output or data.outputs[0]
    solved = data.solved
    money = _is_money(output)
    scale = 1e6 if money else 1.0
    unit = "million USD, present value" if money else kpi_unit(output)
    y = pd.to_numeric(solved[output], errors="coerce").to_numpy(dtype=float) / scale \
        if output in solved else np.array([])
    w = pd.to_numeric(solved.weight, errors="coerce").to_numpy(dtype=float) \
        if "weight" in solved else None
    ok = np.isfinite(y)
    y, w = y[ok], (w[ok] if w is not None else None)
    ax1, ax2 = fig.subplots(1, 2, sharex=True)
    label = kpi_label(output)
    fig.suptitle(_txt(f"{label}: distribution over {len(y):,} solved samples "
                      f"({data.manifest.get('name')})"))
    if not len(y):
        ax1.text(0.5, 0.5, "no solved sample", ha="center", va="center",
                 transform=ax1.transAxes)
        return
    bins = min(40, max(8, int(math.sqrt(len(y)) * 2)))
    ax1.hist(y, bins=bins, weights=w / w.sum() * 100 if w is not None else
             np.full(len(y), 100.0 / len(y)), color="#7fa7cf", edgecolor="white",
             label="samples")
    ax1.set_ylabel("Share of samples [%]")
    ax1.set_xlabel(f"{label} [{unit}]")
    order = np.argsort(y)
    cw = np.cumsum(w[order] if w is not None else np.ones(len(y)))
    ax2.step(y[order], cw / cw[-1] * 100, where="post", color="#1f5f99",
             label="cumulative share")
    ax2.set_ylabel("Samples at or below [%]")
    ax2.set_xlabel(f"{label} [{unit}]")
    ax2.set_ylim(0, 100)
    k = summary.kpis.set_index("kpi")
    if output in k.index:
        r = k.loc[output]
        for q, style in (("p10", ":"), ("p50", "--"), ("p90", ":")):
            for ax in (ax1, ax2):
                ax.axvline(r[q] / scale, color="#333333", ls=style, lw=1,
                           label=f"{q.upper()} {r[q] / scale:,.{0 if money else 4}f}"
                           if ax is ax2 else None)
        if math.isfinite(r.base):
            for ax in (ax1, ax2):
                ax.axvline(r.base / scale, color="#9a3b00", lw=1.6,
                           label=f"base case {r.base / scale:,.{0 if money else 4}f}"
                           if ax is ax2 else None)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
    _legend_right(ax2)


def plot_tornado(ax: Any, summary: SweepSummary) -> None:
    """Mean of the first output with each parameter low vs high, against the mean of all."""
    data = summary.data
    t = summary.tornado
    output = data.outputs[0]
    money = _is_money(output)
    scale = 1e6 if money else 1.0
    unit = "million USD" if money else kpi_unit(output)
    ax.set_title(_txt(f"What moves the {kpi_label(output)}: mean with each parameter in its "
                      f"lowest vs highest {TORNADO_TAIL:.0%} of samples"), fontsize="medium")
    if not len(t):
        ax.text(0.5, 0.5, "not enough solved samples", ha="center", va="center",
                transform=ax.transAxes)
        return
    t = t.iloc[::-1]
    ypos = np.arange(len(t))
    lo = (t.low_mean - t["mean"]).to_numpy(dtype=float) / scale
    hi = (t.high_mean - t["mean"]).to_numpy(dtype=float) / scale
    # low above high in each row, half height each, so that neither hides the other
    ax.barh(ypos + 0.2, lo, height=0.4, color="#7fa7cf", label="parameter low")
    ax.barh(ypos - 0.2, hi, height=0.4, color="#c8553d", label="parameter high")
    for yy, a, b, rl, rh in zip(ypos, lo, hi, t.low, t.high, strict=True):
        for v, dy, text in ((a, 0.2, rl), (b, -0.2, rh)):
            ax.text(v, yy + dy, f" {text} ", va="center", fontsize="x-small",
                    ha="left" if v >= 0 else "right")
    ax.set_yticks(ypos, [_txt(x) for x in t.title])
    ax.axvline(0, color="#333333", lw=1)
    mean = float(t["mean"].iloc[0]) / scale
    ax.set_xlabel(f"Change of the mean {kpi_label(output)} [{unit}] from the mean of all "
                  f"samples ({mean:,.{0 if money else 4}f})")
    lim = max(np.nanmax(np.abs(np.r_[lo, hi])), 1e-12) * 1.45
    ax.set_xlim(-lim, lim)
    ax.grid(axis="x", alpha=0.3)
    _legend_right(ax)


def plot_racks_fan(fig: Any, summary: SweepSummary) -> None:
    """Racks in service by type over time: median, 25-75 % and 10-90 % bands, base case."""
    data = summary.data
    f = summary.fleet
    racks = [r for r in data.manifest.get("racks", []) if r in set(f.rack)] if len(f) else []
    fig.suptitle(_txt(f"Racks in service by type, all sites: spread over {summary.solved:,} "
                      f"solved samples ({data.manifest.get('name')})"))
    if not racks:
        ax = fig.subplots()
        ax.text(0.5, 0.5, "no racks", ha="center", va="center", transform=ax.transAxes)
        return
    axes = np.atleast_1d(fig.subplots(1, len(racks), sharey=False, squeeze=False)[0])
    base = data.fleet[data.fleet.sample_id == 0].groupby(["period", "rack"]).installed_racks.sum()
    periods = [str(p) for p in data.manifest.get("periods", [])] or list(dict.fromkeys(f.period))
    x = np.arange(len(periods))
    lv = [f"installed_p{int(round(q * 100)):02d}" for q in FAN_LEVELS]
    for ax, rack in zip(axes, racks, strict=True):
        sub = f[f.rack == rack].set_index("period").reindex(periods)
        ax.fill_between(x, sub[lv[0]], sub[lv[4]], color="#1f5f99", alpha=0.18,
                        label="10-90 % of samples")
        ax.fill_between(x, sub[lv[1]], sub[lv[3]], color="#1f5f99", alpha=0.35,
                        label="25-75 % of samples")
        ax.plot(x, sub[lv[2]], color="#1f5f99", lw=2, label="median")
        b = [float(base.get((p, rack), 0.0)) for p in periods]
        ax.plot(x, b, color="#9a3b00", ls="--", lw=1.4, label="base case")
        ax.set_title(_txt(rack), fontsize="medium")
        ax.set_xticks(x, periods, rotation=45 if len(periods) > 6 else 0)
        ax.set_xlabel("Period")
        top = np.nanmax([sub[lv[4]].max(), max(b, default=0.0)])
        ax.set_ylim(0, max(1.0, top * 1.08))
        if not top > 0:
            share = summary.purchase.loc[rack].max() if rack in summary.purchase.index else 0
            ax.text(0.5, 0.5, f"in service in fewer than 10 % of samples\n(bought by the end "
                              f"in {share:.0%})", ha="center", va="center",
                    transform=ax.transAxes, fontsize="small", color="#5b6775")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Racks in service [racks]")
    _legend_right(axes[-1])


def plot_purchase(ax: Any, summary: SweepSummary) -> None:
    """Heat map: probability each rack type has been bought by each period [%]."""
    p = summary.purchase
    ax.set_title(_txt(f"Probability that a rack type has been bought by each period "
                      f"({summary.solved:,} solved samples)"), fontsize="medium")
    if not len(p):
        ax.text(0.5, 0.5, "no racks", ha="center", va="center", transform=ax.transAxes)
        return
    vals = p.to_numpy(dtype=float) * 100
    im = ax.imshow(vals, cmap="Blues", vmin=0, vmax=100, aspect="auto")
    ax.set_xticks(range(p.shape[1]), [str(c) for c in p.columns])
    ax.set_yticks(range(p.shape[0]), [_txt(r) for r in p.index])
    ax.set_xlabel("Period")
    ax.set_ylabel("Rack type")
    for i in range(p.shape[0]):
        for j in range(p.shape[1]):
            v = vals[i, j]
            ax.text(j, i, f"{v:.0f}%", ha="center", va="center", fontsize="small",
                    color="white" if v > 60 else "#1d2733")
    cb = ax.figure.colorbar(im, ax=ax, fraction=0.04, pad=0.02)
    cb.set_label("Samples with some bought by then [%]")


def plot_sensitivity(ax: Any, summary: SweepSummary) -> None:
    """Morris mu* and sigma, Sobol S1 and ST (95 % intervals), or rank correlations."""
    data = summary.data
    s = summary.sensitivity
    output = data.outputs[0]
    method = data.manifest.get("method")
    sub = s[s.output == output]
    titles = data.titles
    money = _is_money(output)
    if method == "morris" and (sub.method == "morris").any():
        scale = 1e6 if money else 1.0
        unit = "million USD" if money else kpi_unit(output)
        ms = sub[(sub.method == "morris") & (sub["index"] == "mu_star")].set_index("parameter")
        sg = sub[(sub.method == "morris") & (sub["index"] == "sigma")].set_index("parameter")
        order = ms.value.sort_values().index
        y = np.arange(len(order))
        ax.barh(y + 0.2, ms.value[order] / scale, height=0.4, xerr=ms.conf[order] / scale,
                color="#1f5f99", label="mu* (mean absolute effect), 95 % interval")
        ax.barh(y - 0.2, sg.value[order] / scale, height=0.4, color="#c8553d", alpha=0.85,
                label="sigma (spread of effects: interactions, non-linearity)")
        ax.set_yticks(y, [_txt(titles.get(n, n)) for n in order])
        ax.set_xlabel(f"Elementary effect on {kpi_label(output)} [{unit} per full range "
                      "of the parameter]")
        blocks = int(ms.blocks.iloc[0]) if len(ms) else 0
        ax.set_title(_txt(f"Morris screening of {kpi_label(output)} ({blocks} trajectories)"),
                     fontsize="medium")
    elif method == "sobol" and (sub.method == "sobol").any():
        s1 = sub[(sub.method == "sobol") & (sub["index"] == "S1")].set_index("parameter")
        st = sub[(sub.method == "sobol") & (sub["index"] == "ST")].set_index("parameter")
        order = st.value.sort_values().index
        y = np.arange(len(order))
        ax.barh(y + 0.2, st.value[order], height=0.4, xerr=st.conf[order], color="#1f5f99",
                label="total index ST (with interactions), 95 % interval")
        ax.barh(y - 0.2, s1.value[order], height=0.4, xerr=s1.conf[order], color="#c8553d",
                alpha=0.85, label="first-order index S1 (alone), 95 % interval")
        ax.set_yticks(y, [_txt(titles.get(n, n)) for n in order])
        ax.set_xlabel(f"Share of the variance of {kpi_label(output)} [-]")
        blocks = int(st.blocks.iloc[0]) if len(st) else 0
        ax.set_title(_txt(f"Sobol indices of {kpi_label(output)} (base sample {blocks})"),
                     fontsize="medium")
    else:
        rho = sub[(sub.method == "spearman")].set_index("parameter")
        order = rho.value.abs().sort_values().index
        y = np.arange(len(order))
        from matplotlib.patches import Patch

        ax.barh(y, rho.value[order], color=["#c8553d" if v > 0 else "#7fa7cf"
                                            for v in rho.value[order]])
        for yi, n in zip(y, order, strict=True):
            if unordered(data, n):       # calibration files: no order to rank
                ax.text(0.02, yi, "no rank correlation: its values have no order (see the "
                        "tornado)", va="center", fontsize="small", color="#555555")
        ax.legend(handles=[Patch(color="#c8553d", label="higher value, higher output"),
                           Patch(color="#7fa7cf", label="higher value, lower output")],
                  fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  borderaxespad=0.0)
        ax.set_yticks(y, [_txt(titles.get(n, n)) for n in order])
        ax.set_xlim(-1, 1)
        ax.axvline(0, color="#333333", lw=1)
        ax.set_xlabel(f"Rank correlation with {kpi_label(output)} [-1..1]")
        ax.set_title(_txt(f"Rank correlation of each parameter with {kpi_label(output)}"),
                     fontsize="medium")
    ax.grid(axis="x", alpha=0.3)
    if ax.get_legend() is None:
        _legend_right(ax)


def sweep_figures(obj: Any) -> dict[str, Any]:
    """The sweep charts as matplotlib figures, by file name (see :data:`SWEEP_CHARTS`)."""
    s = _summary(obj)
    n_par = max(len(s.data.names), 1)
    n_racks = max(len(s.purchase), 1)
    figs = {}
    fig = plt.figure(figsize=(12, 4.6))
    plot_npv_distribution(fig, s)
    figs["npv_distribution.png"] = fig
    fig, ax = plt.subplots(figsize=(11, 1.2 + 0.55 * n_par))
    plot_tornado(ax, s)
    figs["tornado.png"] = fig
    fig = plt.figure(figsize=(max(7.0, 4.2 * n_racks + 2.4), 4.4))
    plot_racks_fan(fig, s)
    figs["racks_fan.png"] = fig
    fig, ax = plt.subplots(figsize=(max(7.0, 0.9 * len(s.purchase.columns) + 3),
                                    1.6 + 0.6 * n_racks))
    plot_purchase(ax, s)
    figs["purchase_probability.png"] = fig
    fig, ax = plt.subplots(figsize=(11, 1.4 + 0.6 * n_par))
    plot_sensitivity(ax, s)
    figs["sensitivity.png"] = fig
    return figs


def sweep_pngs(obj: Any) -> dict[str, bytes]:
    """The sweep charts as PNG bytes, by file name."""
    return {name: figure_png(fig) for name, fig in sweep_figures(obj).items()}


def write_sweep_charts(obj: Any, outdir: Path | str,
                       pngs: dict[str, bytes] | None = None) -> list[Path]:
    """Write the sweep charts as PNG files into ``outdir``; return the paths."""
    from dcplan.export.files import atomic_file

    outdir = Path(outdir)
    paths = []
    for name, png in (pngs if pngs is not None else sweep_pngs(obj)).items():
        with atomic_file(outdir / name, suffix=".png") as tmp:
            Path(tmp).write_bytes(png)
        paths.append(outdir / name)
    return paths


# --- workbook --------------------------------------------------------------------------


def _samples_sheet_table(data: SweepData) -> pd.DataFrame:
    df = data.samples.copy()
    units = {c: "USD" for c in df.columns if _is_money(c)}
    units.update({c: "MW" for c in df.columns if c.startswith("peak_mw.")})
    units.update({c: "racks" for c in df.columns if c.startswith("racks_bought.")})
    units.update({"solve_s": "s", "weight": "-"})
    df.attrs["units"] = units
    return df


def build_sweep_workbook(obj: Any) -> Any:
    """The sweep workbook (openpyxl ``Workbook``); see :func:`write_sweep_workbook`."""
    from openpyxl import Workbook

    from dcplan.export.excel import (
        HEADER_FILL,
        HEADER_FONT,
        NOTE_FONT,
        SECTION_FONT,
        TITLE_FONT,
        WRAP,
        autosize,
        fit_wrapped_rows,
        long_text,
        put,
        write_table,
    )
    from dcplan.export.printing import setup_page

    s = _summary(obj)
    data = s.data
    m = data.manifest
    wb = Workbook()
    ws = wb.active
    ws.title = "Summary"
    put(ws, 1, 1, f"Sweep {m.get('name')}: scenario {m.get('scenario_name')}", font=TITLE_FONT)
    r = 2
    for line in [m.get("description") or "", *s.headline()]:
        if line:
            long_text(ws, r, 1, 8, line, NOTE_FONT)
            r += 1
    r += 1
    put(ws, r, 1, "Key figures over the solved samples", font=SECTION_FONT)
    r += 1
    heads = ["Figure", "Base case", "P10", "P50", "P90", "Mean", "Min", "Max", "Samples"]
    for j, h in enumerate(heads, start=1):
        cell = put(ws, r, j, h, font=HEADER_FONT)
        cell.fill = HEADER_FILL
        cell.alignment = WRAP
    for df in (s.kpis, s.extra):
        for k in df.itertuples():
            r += 1
            fmt = "#,##0" if _is_money(k.kpi) else ("#,##0.0" if k.kpi.startswith(
                ("peak_mw.", "racks_bought.")) else kpi_format(k.kpi))
            put(ws, r, 1, column_title(k.kpi))
            for j, v in enumerate([k.base, k.p10, k.p50, k.p90, k.mean, k.min, k.max], start=2):
                put(ws, r, j, None if not math.isfinite(v) else float(v), fmt)
            put(ws, r, 9, int(k.n), "#,##0")
    r += 2
    put(ws, r, 1, "Method", font=SECTION_FONT)
    long_text(ws, r + 1, 1, 9, f"{m.get('method')} design (seed {m.get('seed')}) of "
                               f"{data.size:,} samples on the base scenario "
                               f"{m.get('base_scenario')}; see the Parameters sheet.")
    ws.column_dimensions["A"].width = 58
    for col in "BCDEFGH":
        ws.column_dimensions[col].width = 17
    ws.column_dimensions["I"].width = 10
    fit_wrapped_rows(ws)
    setup_page(ws, f"dcplan sweep: {m.get('name')}")

    def sheet(title: str, df: pd.DataFrame, heading: str, note: str, id_cols: int = 1) -> None:
        w = wb.create_sheet(title)
        write_table(w, df, title=heading, description=note, id_cols=id_cols)
        autosize(w)
        fit_wrapped_rows(w)
        setup_page(w, f"dcplan sweep: {m.get('name')}", repeat_rows="3:3")

    if len(s.purchase):
        p = s.purchase.reset_index().rename(columns={"index": "rack"})
        p.columns = [str(c) for c in p.columns]
        p.attrs["units"] = {c: "fraction" for c in p.columns if c != "rack"}
        sheet("Purchases", p, "Probability that each rack type has been bought by each "
                              "period", "Share of the solved samples whose plan has bought "
                                        "at least one rack of the type by then (0..1).")
    if len(s.fleet):
        f = s.fleet.copy()
        f.attrs["units"] = {c: "racks" for c in f.columns if c.startswith(("installed_",
                                                                           "new_"))}
        f.attrs["units"].update(prob_bought_in="fraction", prob_bought_by="fraction")
        sheet("Fleet", f, "Racks in service and bought per period and rack type, all sites",
              "Percentiles over the solved samples (installed: the fan chart); prob_bought: "
              "share of samples buying some in that period / by then.", id_cols=2)
    if len(s.sensitivity):
        sens = s.sensitivity.copy()
        sens.attrs["units"] = {"value": "see index", "conf": "see index"}
        sheet("Sensitivity", sens, "Sensitivity indices",
              "morris: mu_star, sigma, mu [output units per full range of the parameter]; "
              "sobol: S1, ST (share of variance, conf = 95 % half-width); spearman: rank "
              "correlation rho. blocks: trajectories, base samples or samples used.", 3)
    if len(s.tornado):
        t = s.tornado.copy()
        t.attrs["units"] = {c: "USD" for c in ("low_mean", "high_mean", "mean", "swing")} \
            if _is_money(data.outputs[0]) else {}
        sheet("Tornado", t, f"Mean {kpi_label(data.outputs[0])} with each parameter low / "
                            "high", f"Low and high: the samples with the parameter in its "
                                    f"lowest / highest {TORNADO_TAIL:.0%} (a parameter of at "
                                    "most five values: at its lowest / highest value).")
    params = pd.DataFrame([{**p, "distribution": spec_text(q)}
                           for p, q in zip(m["parameters"], data.spec.parameters,
                                           strict=True)])
    sheet("Parameters", params, "Parameters of the sweep",
          "What each parameter changes and how it is distributed.")
    sheet("Samples", _samples_sheet_table(data), "Samples (sample 0 is the base case)",
          "One row per sample: parameter values, status, outputs, peak MW by site, racks "
          "bought by type, the Dask worker that solved it.")
    return wb


def spec_text(p: Any) -> str:
    """A parameter's distribution in words (``triangular(0.85, 1, 1.4)``)."""
    d = p.distribution
    if d is None:
        return "grid " + ", ".join(str(v) for v in p.grid or [])
    if d == "uniform":
        return f"uniform({p.low:g}, {p.high:g})"
    if d == "triangular":
        return f"triangular({p.low:g}, mode {p.mode:g}, {p.high:g})"
    cut = "" if p.low is None and p.high is None else \
        f" cut to [{'' if p.low is None else f'{p.low:g}'}, " \
        f"{'' if p.high is None else f'{p.high:g}'}]"
    if d == "normal":
        return f"normal(mean {p.mean:g}, sd {p.sd:g}){cut}"
    if d == "lognormal":
        return f"lognormal(median {p.median:g}, sigma {p.sigma:g}){cut}"
    w = p.weights or [1.0 / len(p.values)] * len(p.values)
    return "choice " + ", ".join(f"{v} ({x:.0%})" for v, x in zip(p.values, w, strict=True))


def write_sweep_workbook(obj: Any, path: Path | str) -> Path:
    """Write the sweep workbook atomically; return its path."""
    from dcplan.export.files import atomic_file

    wb = build_sweep_workbook(obj)
    path = Path(path)
    with atomic_file(path, suffix=".xlsx") as tmp:
        wb.save(tmp)
    return path


# --- HTML ------------------------------------------------------------------------------


def build_sweep_html(obj: Any, pngs: dict[str, bytes] | None = None) -> str:
    """The sweep report: one self-contained HTML page (see :mod:`dcplan.export.html`).

    ``pngs``: the charts of :func:`sweep_pngs`, when already drawn.
    """
    from dcplan.export.html import _page, esc, figure_html

    s = _summary(obj)
    data = s.data
    m = data.manifest
    body = [f"<h1>Sweep {esc(m.get('name'))}</h1>",
            f"<p class=lead>Scenario {esc(m.get('scenario_name'))} "
            f"({esc(m.get('base_scenario'))}) under {len(data.names)} uncertain parameters, "
            f"{esc(m.get('method'))} design of {data.size:,} samples (seed "
            f"{esc(m.get('seed'))}).</p>"]
    if m.get("description"):
        body.append(f"<p>{esc(m['description'])}</p>")
    warn = " warn" if (s.statuses.get("unserved") or m.get("state") != "complete"
                       or s.solved < len(s.data.runs)) else ""
    body.append(f'<div class="outcome{warn}"><ul class="headline">'
                + "".join(f"<li>{esc(x)}</li>" for x in s.headline()) + "</ul></div>")
    if s.solved:
        figs = dict(pngs if pngs is not None else sweep_pngs(s))
        body.append("<h2>Key figures</h2>")
        body.append(_text_table(kpi_rows(s), right=("base case", "P10", "P50", "P90", "mean",
                                                    "samples")))
        body.append(figure_html(figs.pop("npv_distribution.png"),
                                "NPV distribution", "Distribution of the NPV of all costs "
                                "over the solved samples, with P10, P50, P90 and the base "
                                "case."))
        body.append("<h2>What moves the answer</h2>")
        what, rows = sensitivity_rows(s)
        body.append(f"<h3>{esc(what)}</h3>")
        body.append(_text_table(rows, right=[k for k in (rows[0] if rows else {})
                                             if k != "parameter"]))
        body.append(figure_html(figs.pop("sensitivity.png"), "Sensitivity",
                                what))
        body.append(figure_html(figs.pop("tornado.png"), "Tornado",
                                "Mean NPV with each parameter in its lowest and highest "
                                f"{TORNADO_TAIL:.0%} of samples{_caveat(m)}."))
        body.append("<h2>What to buy, and when</h2>")
        if len(s.purchase):
            rows = [{"rack type": r, **{str(p): f"{v:.0%}" for p, v in row.items()}}
                    for r, row in s.purchase.iterrows()]
            body.append("<h3>Probability that each rack type has been bought by each "
                        "period</h3>")
            body.append(_text_table(rows, right=[str(c) for c in s.purchase.columns]))
        body.append(figure_html(figs.pop("purchase_probability.png"),
                                "Purchase probability", "Share of samples whose plan has "
                                "bought the rack type by each period."))
        body.append(figure_html(figs.pop("racks_fan.png"), "Racks fan chart",
                                "Racks in service by type: median, 25-75 % and 10-90 % of "
                                "samples, and the base case."))
    body.append("<h2>Parameters</h2>")
    body.append(_text_table([{"parameter": p["title"], "changes": p["target"],
                              "distribution": spec_text(q)}
                             for p, q in zip(m["parameters"], data.spec.parameters,
                                             strict=True)]))
    runs = m.get("runs", [])
    if runs:
        last = runs[-1]
        body.append(f"<p class=note>Last run: {esc(last.get('cluster'))}, "
                    f"{last.get('solved', 0):,} samples in {last.get('elapsed_s', 0):,.0f} s; "
                    f"workers: {esc(', '.join(last.get('workers', {})))}.</p>")
    return _page(f"dcplan sweep: {m.get('name')}", body)


def _text_table(rows: Sequence[dict[str, str]], right: Sequence[str] = ()) -> str:
    from dcplan.export.html import esc

    if not rows:
        return "<p class=note>(none)</p>"
    cols = list(rows[0])
    head = "".join(f'<th{" class=num" if c in right else ""}>{esc(c)}</th>' for c in cols)
    body = "".join("<tr>" + "".join(
        f'<td{" class=num" if c in right else ""}>{esc(r.get(c, ""))}</td>' for c in cols)
        + "</tr>" for r in rows)
    return f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>' \
           "</table></div>"


def write_sweep_html(obj: Any, path: Path | str, pngs: dict[str, bytes] | None = None
                     ) -> Path:
    """Write the sweep report atomically; return its path."""
    from dcplan.export.files import atomic_file

    path = Path(path)
    text = build_sweep_html(obj, pngs)
    with atomic_file(path, suffix=".html") as tmp:
        Path(tmp).write_text(text, encoding="utf-8")
    return path


def write_sweep_reports(obj: Any) -> list[Path]:
    """Charts (``charts/``), ``sweep.xlsx`` and ``report.html`` into a sweep folder.

    Parameters
    ----------
    obj : path, SweepData or SweepSummary
        The sweep folder (or what was read of it).
    """
    s = _summary(obj)
    folder = Path(s.data.folder)
    files: list[Path] = []
    pngs = sweep_pngs(s) if s.solved else {}
    if pngs:
        files += write_sweep_charts(s, folder / CHARTS_DIR, pngs)
    files.append(write_sweep_workbook(s, folder / WORKBOOK))
    files.append(write_sweep_html(s, folder / REPORT, pngs))
    return files


__all__ = ["REPORT", "SWEEP_CHARTS", "WORKBOOK", "build_sweep_html", "build_sweep_workbook",
           "column_title", "sweep_figures", "sweep_pngs", "sweep_summary_text",
           "write_sweep_charts",
           "write_sweep_html", "write_sweep_reports", "write_sweep_workbook"]
