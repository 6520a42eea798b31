"""What a sweep tells: percentiles, purchase probabilities, sensitivity indices.

:func:`load_sweep` reads a sweep folder (written by :func:`dcplan.sweep.run.run_sweep`)
into a :class:`SweepData`; :func:`summarize` computes, from the samples solved to the
requested gap (statuses ``optimal`` and ``unserved``; sample 0, the base case, is the
reference and not one of them):

* P10, P50 and P90 (and mean, min, max) of each output KPI, of the peak facility MW
  of each site and of the racks bought of each type;
* the probability that each rack type has been bought by each period, and the
  percentiles of racks in service and bought per period (the fan chart);
* sensitivity indices: Morris mu* and sigma (SALib, complete trajectories only),
  Sobol first-order and total indices with 95 % confidence intervals (SALib, complete
  base samples only), and for every method Spearman rank correlations;
* a tornado: the mean of the first output among the samples with each parameter in
  its lowest and its highest fifth, against the mean of all.

Percentiles of equally weighted samples interpolate linearly between order
statistics (``numpy.quantile``'s default); those of a weighted grid take the first
value whose cumulative weight reaches the level (``inverted_cdf``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dcplan.errors import InputError, Problem
from dcplan.sweep.run import DESIGN_FILE, FLEET_FILE, SAMPLES_FILE, read_manifest
from dcplan.sweep.spec import SweepSpec
from dcplan.sweep.task import SOLVED

#: Percentile levels reported [-].
LEVELS = (0.10, 0.50, 0.90)
#: Fan chart bands [-].
FAN_LEVELS = (0.10, 0.25, 0.50, 0.75, 0.90)
#: Share of samples in each tail group of the tornado [-].
TORNADO_TAIL = 0.2


@dataclass
class SweepData:
    """A sweep folder, read.

    Attributes
    ----------
    folder : Path
    manifest : dict
    spec : SweepSpec
    samples : DataFrame
        ``samples.csv`` (sample 0 is the base case).
    fleet : DataFrame
        ``fleet.csv`` (sample, period, rack, installed and new racks, all sites).
    design : DataFrame
        ``design.csv`` (every sample of the design, solved or not).
    """

    folder: Path
    manifest: dict[str, Any]
    spec: SweepSpec
    samples: pd.DataFrame
    fleet: pd.DataFrame
    design: pd.DataFrame

    @property
    def names(self) -> list[str]:
        """Parameter names."""
        return [p["name"] for p in self.manifest["parameters"]]

    @property
    def titles(self) -> dict[str, str]:
        """Parameter name -> label with unit."""
        return {p["name"]: p["title"] for p in self.manifest["parameters"]}

    @property
    def outputs(self) -> list[str]:
        """Output KPI names."""
        return list(self.manifest["outputs"])

    @property
    def base(self) -> pd.Series | None:
        """Row of the base case (sample 0), if it was solved."""
        rows = self.samples[self.samples.sample_id == 0]
        return rows.iloc[0] if len(rows) else None

    @property
    def runs(self) -> pd.DataFrame:
        """Rows of the design's samples (the base case left out)."""
        return self.samples[self.samples.sample_id > 0]

    @property
    def solved(self) -> pd.DataFrame:
        """Samples solved to the requested gap (``optimal`` or ``unserved``)."""
        r = self.runs
        return r[r.status.isin(SOLVED)]

    @property
    def size(self) -> int:
        """Samples in the design."""
        return int(self.manifest.get("samples", len(self.design)))


def load_sweep(folder: Path | str) -> SweepData:
    """Read a sweep folder.

    Parameters
    ----------
    folder : path
        The ``-o`` folder of ``dcplan sweep``.

    Returns
    -------
    SweepData

    Raises
    ------
    InputError
        When the folder holds no sweep, or its files are unreadable.
    """
    from dcplan.sweep.run import read_samples_csv

    folder = Path(folder)
    manifest = read_manifest(folder)
    try:
        spec = SweepSpec.model_validate(manifest["spec"])
        samples = read_samples_csv(folder / SAMPLES_FILE)
        fpath = folder / FLEET_FILE
        fleet = pd.read_csv(fpath) if fpath.is_file() and fpath.stat().st_size else \
            pd.DataFrame(columns=["sample_id", "period", "rack", "installed_racks",
                                  "new_racks"])
        dpath = folder / DESIGN_FILE
        design = pd.read_csv(dpath) if dpath.is_file() else pd.DataFrame()
    except (OSError, ValueError, KeyError) as exc:
        raise InputError(Problem(str(folder), f"cannot read this sweep folder ({exc}); run "
                                              "the sweep again into a new folder")) from None
    if "status" not in samples:
        samples["status"] = pd.Series(dtype=object)
    fleet["period"] = fleet["period"].astype(str)
    for col in ("installed_racks", "new_racks"):
        fleet[col] = pd.to_numeric(fleet[col], errors="coerce").astype(float)
    fleet["sample_id"] = pd.to_numeric(fleet["sample_id"], errors="coerce")
    return SweepData(folder, manifest, spec, samples, fleet, design)


# --- statistics ------------------------------------------------------------------------


def quantiles(values: Any, levels: Any = LEVELS, weights: Any = None) -> list[float]:
    """Percentiles of ``values`` (weighted: inverted CDF; else linear interpolation).

    Parameters
    ----------
    values : array-like
    levels : sequence of float
        In [0, 1].
    weights : array-like, optional
        Probability weights (any positive scale).

    Returns
    -------
    list of float
        NaN for no values.
    """
    v = np.asarray(values, dtype=float)
    ok = np.isfinite(v)
    if weights is not None:
        w = np.asarray(weights, dtype=float)
        ok &= np.isfinite(w) & (w > 0)
    v = v[ok]
    if not len(v):
        return [math.nan for _ in levels]
    if weights is None or np.allclose(w[ok], w[ok][0]):
        return [float(q) for q in np.quantile(v, list(levels))]
    return [float(q) for q in np.quantile(v, list(levels), weights=w[ok],
                                          method="inverted_cdf")]


def _weights(df: pd.DataFrame) -> np.ndarray | None:
    if "weight" not in df or not len(df):
        return None
    w = pd.to_numeric(df.weight, errors="coerce").to_numpy(dtype=float)
    return None if np.allclose(w, w[0]) else w


def _mean(values: Any, weights: Any = None) -> float:
    v = np.asarray(values, dtype=float)
    ok = np.isfinite(v)
    if not ok.any():
        return math.nan
    if weights is None:
        return float(v[ok].mean())
    w = np.asarray(weights, dtype=float)[ok]
    return float((v[ok] * w).sum() / w.sum())


def kpi_table(data: SweepData, columns: list[str] | None = None) -> pd.DataFrame:
    """Base value, mean, P10, P50, P90, min, max of outputs (or ``columns``) over solved samples.

    Returns
    -------
    DataFrame
        ``kpi``, ``base``, ``mean``, ``p10``, ``p50``, ``p90``, ``min``, ``max``, ``n``.
    """
    solved = data.solved
    w = _weights(solved)
    base = data.base
    rows = []
    for col in columns or data.outputs:
        if col not in solved:
            continue
        v = pd.to_numeric(solved[col], errors="coerce")
        q = quantiles(v, LEVELS, w)
        finite = v[np.isfinite(v)]
        b = pd.to_numeric(pd.Series([base.get(col) if base is not None else None]),
                          errors="coerce").iloc[0]
        rows.append({"kpi": col, "base": float(b) if pd.notna(b) else math.nan,
                     "mean": _mean(v, w), "p10": q[0], "p50": q[1], "p90": q[2],
                     "min": float(finite.min()) if len(finite) else math.nan,
                     "max": float(finite.max()) if len(finite) else math.nan,
                     "n": int(len(finite))})
    return pd.DataFrame(rows, columns=["kpi", "base", "mean", "p10", "p50", "p90", "min",
                                       "max", "n"])


def _fleet_grid(data: SweepData) -> pd.DataFrame:
    """Installed and new racks for every solved sample, period and rack (0 where absent)."""
    ids = list(data.solved.sample_id)
    periods = [str(p) for p in data.manifest.get("periods", [])] or sorted(
        data.fleet.period.unique())
    racks = list(data.manifest.get("racks", [])) or sorted(data.fleet.rack.unique())
    idx = pd.MultiIndex.from_product([ids, periods, racks],
                                     names=["sample_id", "period", "rack"])
    f = data.fleet[data.fleet.sample_id.isin(ids)]
    f = f.groupby(["sample_id", "period", "rack"])[["installed_racks", "new_racks"]].sum()
    out = f.reindex(idx, fill_value=0.0).reset_index()
    out[["installed_racks", "new_racks"]] = out[["installed_racks", "new_racks"]].astype(float)
    return out


def fleet_table(data: SweepData) -> pd.DataFrame:
    """Percentiles of racks in service and bought per period and rack type, and P(bought).

    Returns
    -------
    DataFrame
        ``period``, ``rack``, ``installed_p10`` .. ``installed_p90`` (the fan levels),
        ``new_p10``, ``new_p50``, ``new_p90``, ``prob_bought_in`` (some bought in that
        period), ``prob_bought_by`` (some bought in that period or before) [-].
    """
    grid = _fleet_grid(data)
    if not len(grid):
        return pd.DataFrame(columns=["period", "rack"])
    wmap = dict(zip(data.solved.sample_id, pd.to_numeric(data.solved.weight,
                                                         errors="coerce"), strict=True))
    weighted = _weights(data.solved) is not None
    periods = list(dict.fromkeys(grid.period))
    grid = grid.sort_values(["sample_id", "rack", "period"],
                            key=lambda s: s.map({p: i for i, p in enumerate(periods)})
                            if s.name == "period" else s)
    grid["bought_by"] = grid.groupby(["sample_id", "rack"]).new_racks.cumsum()
    rows = []
    for (period, rack), sub in grid.groupby(["period", "rack"], sort=False):
        w = sub.sample_id.map(wmap).to_numpy(dtype=float) if weighted else None
        inst = quantiles(sub.installed_racks, FAN_LEVELS, w)
        new = quantiles(sub.new_racks, LEVELS, w)
        row = {"period": period, "rack": rack}
        row.update({f"installed_p{int(round(q * 100)):02d}": v
                    for q, v in zip(FAN_LEVELS, inst, strict=True)})
        row.update({f"new_p{int(round(q * 100)):02d}": v
                    for q, v in zip(LEVELS, new, strict=True)})
        row["prob_bought_in"] = _mean((sub.new_racks > 0.5).astype(float), w)
        row["prob_bought_by"] = _mean((sub.bought_by > 0.5).astype(float), w)
        rows.append(row)
    out = pd.DataFrame(rows)
    order = {p: i for i, p in enumerate(periods)}
    return out.sort_values(["rack", "period"], key=lambda s: s.map(order)
                           if s.name == "period" else s).reset_index(drop=True)


def purchase_table(data: SweepData) -> pd.DataFrame:
    """Probability each rack type has been bought by each period: rack x period [-]."""
    f = fleet_table(data)
    if not len(f):
        return pd.DataFrame()
    wide = f.pivot(index="rack", columns="period", values="prob_bought_by")
    periods = [p for p in dict.fromkeys(f.period)]
    return wide.reindex(columns=periods)


def param_values(data: SweepData, name: str, frame: pd.DataFrame) -> np.ndarray:
    """A parameter's values in ``frame`` as numbers; text choices by their order in the file.

    A choice of dates or ids (``first_available: 2026-07 / 2027-01``) is ordinal: its
    values count 0, 1, ... in the order the sweep file lists them.
    """
    if name not in frame:
        return np.full(len(frame), np.nan)
    col = frame[name]
    num = pd.to_numeric(col, errors="coerce")
    if num.notna().sum() == col.notna().sum():
        return num.to_numpy(dtype=float)
    p = next((q for q in data.spec.parameters if q.name == name), None)
    order = list((p.values if p is not None and p.values else None)
                 or (p.grid if p is not None and p.grid else None) or sorted(col.dropna()))
    rank = {str(v): float(i) for i, v in enumerate(order)}
    return np.array([rank.get(str(v), np.nan) for v in col], dtype=float)


def unordered(data: SweepData, name: str) -> bool:
    """Whether parameter ``name``'s values have no order (calibration files).

    Such a parameter gets no rank correlation, and its tornado compares the values with
    the lowest and the highest mean instead of its first and last value.
    """
    p = next((q for q in data.spec.parameters if q.name == name), None)
    return bool(p is not None and p.calibration_file)


def _y(data: SweepData, output: str, frame: pd.DataFrame) -> np.ndarray:
    return pd.to_numeric(frame[output], errors="coerce").to_numpy(dtype=float) \
        if output in frame else np.full(len(frame), np.nan)


def _complete_blocks(data: SweepData, output: str, size: int) -> tuple[pd.DataFrame, int]:
    """Design rows of the blocks whose every sample was solved with a finite output."""
    d = data.design
    if not len(d):
        return d, 0
    y = data.solved.set_index("sample_id")[output] if output in data.solved else pd.Series()
    y = pd.to_numeric(y, errors="coerce")
    d = d.assign(y=d.sample_id.map(y))
    ok = d.groupby("block").y.transform(lambda s: bool(np.isfinite(s).all()
                                                       and len(s) == size))
    keep = d[ok.astype(bool)].sort_values("sample_id")
    return keep, int(keep.block.nunique()) if len(keep) else 0


def sensitivity_table(data: SweepData) -> pd.DataFrame:
    """Sensitivity indices of every output to every parameter.

    Returns
    -------
    DataFrame
        ``output``, ``parameter``, ``method`` (``morris``, ``sobol``, ``spearman``),
        ``index`` (``mu_star``, ``sigma``, ``mu``, ``S1``, ``ST``, ``rho``),
        ``value``, ``conf`` (95 % half-width where SALib gives one), ``blocks``
        (trajectories or base samples used).
    """
    names = data.names
    d = len(names)
    method = data.manifest.get("method")
    rows: list[dict[str, Any]] = []
    problem = {"num_vars": d, "names": names, "bounds": [[0.0, 1.0]] * d}
    solved = data.solved
    for out in data.outputs:
        if method == "morris" and len(data.design):
            from SALib.analyze import morris

            keep, n = _complete_blocks(data, out, d + 1)
            if n >= 2:
                levels = int(data.manifest.get("levels") or 4)
                u = keep[[f"u.{x}" for x in names]].to_numpy(dtype=float)
                grid = np.round((u * levels - 0.5) / (levels - 1), 12)
                res = morris.analyze(problem, grid, keep.y.to_numpy(dtype=float),
                                     num_levels=levels, seed=data.spec.seed)
                # SALib's effects are per unit of its level grid (level 0 to p - 1); the
                # levels sit at quantiles (i + 0.5) / p, so the grid spans (p - 1) / p of
                # the quantile range: per full range (quantile 0 to 1) is p / (p - 1) more
                per_range = levels / (levels - 1)
                for i, nm in enumerate(names):
                    for idx, conf in (("mu_star", "mu_star_conf"), ("sigma", None),
                                      ("mu", None)):
                        rows.append({"output": out, "parameter": nm, "method": "morris",
                                     "index": idx,
                                     "value": float(res[idx][i]) * per_range,
                                     "conf": float(res[conf][i]) * per_range if conf
                                     else math.nan,
                                     "blocks": n})
        if method == "sobol" and len(data.design):
            from SALib.analyze import sobol

            keep, n = _complete_blocks(data, out, d + 2)
            if n >= 2:
                y = keep.y.to_numpy(dtype=float)
                if np.ptp(y) > 0:
                    res = sobol.analyze(problem, y, calc_second_order=False,
                                        seed=data.spec.seed)
                    for i, nm in enumerate(names):
                        for idx in ("S1", "ST"):
                            rows.append({"output": out, "parameter": nm, "method": "sobol",
                                         "index": idx, "value": float(res[idx][i]),
                                         "conf": float(res[f"{idx}_conf"][i]), "blocks": n})
        y = _y(data, out, solved)
        for nm in names:
            x = param_values(data, nm, solved)
            ok = np.isfinite(x) & np.isfinite(y)
            rho = math.nan
            if unordered(data, nm):
                ok &= False              # no rank correlation without an order
            if ok.sum() >= 3 and np.ptp(x[ok]) > 0 and np.ptp(y[ok]) > 0:
                from scipy.stats import spearmanr

                rho = float(spearmanr(x[ok], y[ok]).statistic)
            rows.append({"output": out, "parameter": nm, "method": "spearman",
                         "index": "rho", "value": rho, "conf": math.nan,
                         "blocks": int(ok.sum())})
    return pd.DataFrame(rows, columns=["output", "parameter", "method", "index", "value",
                                       "conf", "blocks"])


def tornado_table(data: SweepData, output: str | None = None) -> pd.DataFrame:
    """Mean of ``output`` with each parameter in its lowest and highest fifth of samples.

    A parameter with at most five distinct values is split at its lowest and highest
    value instead; one without order (:func:`unordered`) at its values with the lowest
    and highest mean (shown by file name). Sorted by the swing (largest first).

    Returns
    -------
    DataFrame
        ``parameter``, ``title``, ``low``, ``high`` (the values that define the groups,
        as text), ``low_mean``, ``high_mean``, ``mean`` (all solved samples),
        ``swing`` (``high_mean - low_mean``), ``n_low``, ``n_high``.
    """
    output = output or data.outputs[0]
    solved = data.solved
    y = _y(data, output, solved)
    w = _weights(solved)
    mean = _mean(y, w)
    rows = []
    for nm in data.names:
        if nm not in solved:
            continue
        x = param_values(data, nm, solved)
        ok = np.isfinite(x) & np.isfinite(y)
        if ok.sum() < 2:
            continue
        xv, yv = x[ok], y[ok]
        raw = solved[nm].to_numpy()[ok]
        wv = w[ok] if w is not None else None
        distinct = np.unique(xv)
        if len(distinct) < 2:
            continue
        if unordered(data, nm):
            means = {v: _mean(yv[xv == v], wv[xv == v] if wv is not None else None)
                     for v in distinct}
            v_lo, v_hi = min(means, key=means.get), max(means, key=means.get)
            lo_m, hi_m = xv == v_lo, xv == v_hi
            lo_t, hi_t = (Path(str(raw[lo_m][0])).name, Path(str(raw[hi_m][0])).name)
        elif len(distinct) <= 5:
            lo_m, hi_m = xv == distinct[0], xv == distinct[-1]
            lo_t, hi_t = (_fmt(raw[lo_m][0]), _fmt(raw[hi_m][0]))
        else:
            qlo, qhi = np.quantile(xv, [TORNADO_TAIL, 1 - TORNADO_TAIL])
            lo_m, hi_m = xv <= qlo, xv >= qhi
            lo_t, hi_t = f"<= {_fmt(qlo)}", f">= {_fmt(qhi)}"
        lo = _mean(yv[lo_m], wv[lo_m] if wv is not None else None)
        hi = _mean(yv[hi_m], wv[hi_m] if wv is not None else None)
        rows.append({"parameter": nm, "title": data.titles.get(nm, nm), "low": lo_t,
                     "high": hi_t, "low_mean": lo, "high_mean": hi, "mean": mean,
                     "swing": hi - lo, "n_low": int(lo_m.sum()), "n_high": int(hi_m.sum())})
    out = pd.DataFrame(rows, columns=["parameter", "title", "low", "high", "low_mean",
                                      "high_mean", "mean", "swing", "n_low", "n_high"])
    return out.reindex(out.swing.abs().sort_values(ascending=False).index).reset_index(
        drop=True)


def _fmt(x: Any) -> str:
    try:
        return f"{float(x):.4g}"
    except (TypeError, ValueError):
        return str(x)


@dataclass
class SweepSummary:
    """Everything :func:`summarize` computes, as tables.

    Attributes
    ----------
    data : SweepData
    kpis : DataFrame
        :func:`kpi_table` of the outputs.
    extra : DataFrame
        :func:`kpi_table` of peak MW by site and racks bought by type.
    fleet : DataFrame
        :func:`fleet_table`.
    purchase : DataFrame
        :func:`purchase_table`.
    sensitivity : DataFrame
        :func:`sensitivity_table`.
    tornado : DataFrame
        :func:`tornado_table` of the first output.
    statuses : dict
        Status -> samples (base case not counted).
    """

    data: SweepData
    kpis: pd.DataFrame
    extra: pd.DataFrame
    fleet: pd.DataFrame
    purchase: pd.DataFrame
    sensitivity: pd.DataFrame
    tornado: pd.DataFrame
    statuses: dict[str, int] = field(default_factory=dict)

    @property
    def solved(self) -> int:
        """Samples the statistics use."""
        return int(len(self.data.solved))

    def headline(self) -> list[str]:
        """Sentences for the top of a report (plain text)."""
        from dcplan.sweep.task import STATUSES

        data, out = self.data, []
        n, size = self.solved, data.size
        done = int(len(data.runs))
        line = (f"{n:,} of {size:,} samples solved"
                + (f" ({done:,} run so far)" if done < size else ""))
        other = {k: v for k, v in self.statuses.items() if k not in ("optimal",)}
        if other:
            runs = data.runs
            line += "; " + "; ".join(
                f"{v:,} {k} ({STATUSES.get(k, k)})"
                + ("" if k in SOLVED else f": {_ids(runs.sample_id[runs.status == k])}")
                for k, v in sorted(other.items()))
        out.append(line + ".")
        limit = (data.manifest.get("solver") or {})
        if limit.get("time_limit_s") is not None:
            out.append(f"Time limit per sample: {limit['time_limit_s']:,.0f} s "
                       f"({limit.get('time_limit_rule') or 'given'})"
                       + (f", gap {limit['gap']:g}" if limit.get("gap") is not None else "")
                       + ".")
        if 0 < n < done:
            out.append(f"Statistics are over the {n:,} of {done:,} samples that solved; the "
                       f"other {done - n:,} are left out (a longer --time-limit or a larger "
                       "--gap may solve them).")
        if n == 0:  # no statistics without a solved sample (not "P10 nan")
            out.append("No sample is solved yet: no percentiles, sensitivity or purchase "
                       "probabilities" + ("; rerun with --resume to go on." if done < size
                                          else "."))
            return out
        k = self.kpis.set_index("kpi") if len(self.kpis) else None
        if k is not None and "npv_cost_usd" in k.index:
            r = k.loc["npv_cost_usd"]
            out.append(f"NPV of costs: P10 {r.p10 / 1e6:,.0f}, P50 {r.p50 / 1e6:,.0f}, "
                       f"P90 {r.p90 / 1e6:,.0f} million USD (base case "
                       f"{r.base / 1e6:,.0f}).")
        if k is not None and "usd_per_million_tokens" in k.index:
            r = k.loc["usd_per_million_tokens"]
            out.append(f"USD per million tokens: P10 {r.p10:.4f}, P50 {r.p50:.4f}, "
                       f"P90 {r.p90:.4f} (base {r.base:.4f}).")
        top = self.top_drivers()
        if top:
            out.append("What moves the NPV most: " + "; ".join(top) + ".")
        if len(self.purchase):
            first = self.purchase.columns[0]
            sure = [f"{r} in {p:.0%} of samples" for r, p in self.purchase[first].items()
                    if p > 0]
            if sure:
                out.append(f"Bought in {first}: " + "; ".join(sure) + ".")
        return out

    def top_drivers(self, n: int = 3) -> list[str]:
        """The parameters that move the first output most, with their index, in words."""
        s = self.sensitivity
        out_name = self.data.outputs[0]
        titles = self.data.titles
        money = out_name.endswith("_usd")
        mu = "Morris mu* {:,.0f} million USD" if money else "Morris mu* {:.4g}"
        for method, idx, fmt, scale in (("sobol", "ST", "total Sobol index {:.2f}", 1.0),
                                        ("morris", "mu_star", mu, 1e6 if money else 1.0)):
            sub = s[(s.output == out_name) & (s.method == method) & (s["index"] == idx)]
            if len(sub):
                sub = sub.sort_values("value", ascending=False).head(n)
                return [f"{titles.get(r.parameter, r.parameter)} "
                        f"({fmt.format(r.value / scale)})" for r in sub.itertuples()]
        t = self.tornado
        if len(t):
            return [f"{r.title} (swing {r.swing / 1e6:+,.0f} million)" if out_name.endswith(
                "_usd") else f"{r.title} (swing {r.swing:+.4g})"
                for r in t.head(n).itertuples()]
        return []

    def to_dict(self) -> dict[str, Any]:
        """Machine-readable summary (``--json``)."""
        def records(df: pd.DataFrame) -> list[dict[str, Any]]:
            return [{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                     for k, v in r.items()} for r in df.to_dict("records")]

        m = self.data.manifest
        return {"sweep": m.get("name"), "folder": str(self.data.folder),
                "method": m.get("method"), "samples": self.data.size,
                "solved": self.solved, "statuses": self.statuses,
                "state": m.get("state"), "kpis": records(self.kpis),
                "peaks_and_racks": records(self.extra),
                "purchase_probability": {r: {str(p): (None if not math.isfinite(v) else v)
                                             for p, v in row.items()}
                                         for r, row in self.purchase.iterrows()},
                "sensitivity": records(self.sensitivity),
                "tornado": records(self.tornado), "headline": self.headline()}


def _ids(ids: Any, most: int = 10) -> str:
    """``samples 3, 5 and 9`` (the first ``most``, then how many more)."""
    ids = sorted(int(i) for i in ids)
    head = ", ".join(str(i) for i in ids[:most])
    more = f" and {len(ids) - most:,} more" if len(ids) > most else ""
    return f"sample{'s' * (len(ids) != 1)} {head}{more}"


def summarize(data: SweepData) -> SweepSummary:
    """Compute every table of :class:`SweepSummary` from a sweep folder's data."""
    extra_cols = [c for c in data.samples.columns
                  if c.startswith(("peak_mw.", "racks_bought."))]
    statuses = {str(k): int(v) for k, v in data.runs.status.value_counts().items()}
    return SweepSummary(data, kpi_table(data), kpi_table(data, extra_cols),
                        fleet_table(data), purchase_table(data), sensitivity_table(data),
                        tornado_table(data) if data.outputs else pd.DataFrame(), statuses)
