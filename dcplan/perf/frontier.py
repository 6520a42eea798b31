"""Throughput-interactivity Pareto frontier, as InferenceX draws it.

For one rack, model and request shape, every deployable point (parallel layout x draft
length x decode batch; aggregated and disaggregated) gives a median interactivity
(output tokens/s per user = 1 / median TPOT) and an output throughput per GPU. The
frontier keeps the points no other point beats on both; each carries its
configuration. Disaggregated points pair each decode-pool point with the prefill layout
and utilisation that prefill most requests per GPU within that point's TTFT bound, in
the ratio that balances the pools. The bound: ``--ttft-s`` at its percentile, else a
median TTFT of at most ``serving.frontier_ttft_share_max_frac`` of the point's median
end-to-end latency (perf_defaults.yaml); aggregated points meet the same bound. Requests
arrive as a Poisson stream with the engine's running-request cap (a request that finds
every slot taken waits for one) and the lengths' distribution (fixed by default).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dcplan.lengths import FIXED, LengthDist
from dcplan.perf.goodput import (
    _RHO_GRID,
    Layout,
    _drafts,
    _fit_problem,
    _label,
    _layout_batch_grid,
    _stack,
    _traffic,
    best_rate_within,
    build_setup,
    candidate_layouts,
    capped_setup,
    check_cap_input,
    ep_extrapolation,
    handover_bounds,
    handover_outside_fit,
    kv_handover_extrapolation,
    model_kind_extrapolation,
    slot_wait_quantile,
    small_batch_extrapolation,
    workload_lengths,
)
from dcplan.perf.latency import slot_wait, tpot_quantile, ttft_quantile, wait_tail_mean
from dcplan.perf.params import Calibration, PerfDefaults, PowerCurve
from dcplan.perf.power import activity
from dcplan.perf.roofline import max_batch, weight_bytes_per_gpu
from dcplan.perf.serving import (
    Instance,
    aggregated,
    decode,
    handover_streams,
    kv_handover_share_s,
    kv_transfer_s,
    mix_sd_s,
    prefill,
    prefill_server,
    take_point,
)
from dcplan.schema import FRONTIER_PERCENTILE, Workload


@dataclass
class Frontier:
    """A Pareto frontier and the cloud it was taken from.

    Attributes
    ----------
    rack, model, precision : str
    input_tokens, output_tokens : float
        Request shape [tokens].
    points : list of dict
        Frontier points, by rising interactivity: ``tokens_per_s_per_user``,
        ``output_tokens_per_s_per_gpu``, ``total_tokens_per_s_per_gpu``, ``mode``,
        ``parallel``, ``prefill_parallel``, ``batch``, ``draft_tokens``, ``speculative``,
        ``median_ttft_s``, ``expert_parallel`` (widest expert-parallel group, decode or
        prefill), ``extrapolation`` (why the point lies outside what the calibration
        measured, '' if it does not: for a model of a kind the calibration fitted no
        row of on the accelerator's architecture
        :func:`dcplan.perf.goodput.model_kind_extrapolation`, then
        :func:`dcplan.perf.goodput.ep_extrapolation`,
        :func:`dcplan.perf.goodput.small_batch_extrapolation` for a wide decode group
        below the fitted batches, and for a disaggregated point whose prefill pool the
        KV hand-over bounds outside its fitted runs
        :func:`dcplan.perf.goodput.kv_handover_extrapolation`, joined by "; and ").
    cloud : dict
        ``mode -> (x, y)`` arrays of every feasible point (for the plot).
    reason : str
        Why there is no frontier ('' when there is one).
    length_distribution : LengthDist
        Request lengths assumed (input and output tokens).
    ttft_bound : str
        Without ``--ttft-s``: the bound on every point's median TTFT, in words.
    power_cap_frac : float
        Board power cap of the accelerators, a fraction of ``max_power_w`` [-] (1:
        uncapped; the JSON names it only below 1).
    max_batch_per_rank : int
        Engine's running-request cap per attention data-parallel rank the points
        assume (``serving.max_batch_per_rank``) [sequences].
    extrapolation : str
        Which points lie outside what the calibration measured, in words ('' when
        none does).
    """

    rack: str
    model: str
    precision: str
    input_tokens: float
    output_tokens: float
    points: list[dict[str, Any]] = field(default_factory=list)
    cloud: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    reason: str = ""
    length_distribution: LengthDist = FIXED
    ttft_bound: str = ""
    power_cap_frac: float = 1.0
    max_batch_per_rank: int = 0
    extrapolation: str = ""

    @property
    def extrapolated_points(self) -> int:
        """Points whose ``extrapolation`` is set [count]."""
        return sum(1 for p in self.points if p.get("extrapolation"))

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready dict (without the cloud)."""
        cap = {"power_cap_frac": self.power_cap_frac} if self.power_cap_frac < 1.0 else {}
        return cap | {"rack": self.rack, "model": self.model, "precision": self.precision,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "length_distribution": {**self.length_distribution.as_dict(),
                                        "text": self.length_distribution.describe()},
                "ttft_bound": self.ttft_bound or None,
                "max_batch_per_rank": self.max_batch_per_rank,
                "extrapolation": self.extrapolation,
                "reason": self.reason, "points": self.points}


def pareto(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the points not dominated in (larger x, larger y), by rising x.

    Parameters
    ----------
    x : ndarray
        First objective, larger is better [any unit].
    y : ndarray
        Second objective, larger is better [any unit].

    Returns
    -------
    ndarray
        Indices of the non-dominated points [index from 0], by rising ``x``.
    """
    order = np.lexsort((-y, -x))            # x descending, then y descending
    keep, best = [], -np.inf
    for i in order:
        if y[i] > best * (1 + 1e-9):
            keep.append(i)
            best = y[i]
    return np.array(keep[::-1], dtype=int)


def frontier(catalog, rack_id: str, model_id: str, input_tokens: float, output_tokens: float,
             precision: str | None = None, speculative: str = "none",
             acceptance_frac: float | None = None, ttft_s: float | None = None,
             percentile: float = FRONTIER_PERCENTILE,
             modes: tuple[str, ...] = ("aggregated", "disaggregated"),
             layout: Layout | None = None, lengths: LengthDist | None = None, *,
             defaults: PerfDefaults, calibration: Calibration | None,
             power_cap_frac: float = 1.0, power_curve: PowerCurve | None = None) -> Frontier:
    """Pareto frontier of output tokens/s per GPU against tokens/s per user.

    Parameters
    ----------
    catalog : Catalog
        Loaded catalog (racks, accelerators, models).
    rack_id : str
        Rack id.
    model_id : str
        Model id.
    input_tokens, output_tokens : float
        Mean prompt (input) and generated (output) tokens per request [tokens].
    precision : str, optional
        Serving precision (default: fp8).
    speculative : {"none", "mtp", "draft"}
        Speculative decoding.
    acceptance_frac : float, optional
        Per-token acceptance of drafted tokens [-] (None: the physics default).
    ttft_s : float, optional
        TTFT limit at ``percentile`` every point must meet [s]. None: every point's
        median TTFT is at most ``serving.frontier_ttft_share_max_frac`` of its median
        end-to-end latency (perf_defaults.yaml).
    percentile : float
        Percentile of the TTFT limit [%].
    modes : tuple
        ``aggregated`` and/or ``disaggregated``.
    layout : Layout, optional
        Fix the parallel layout (``--tp/--ep/--dp-attention``); None: every layout.
    lengths : LengthDist, optional
        Distribution of input and output tokens around their means (None: fixed).
    defaults : PerfDefaults
        The model's a-priori parameters (:func:`dcplan.perf.params.load_perf_inputs`).
    calibration : Calibration or None
        Fitted parameters; None: the a-priori defaults.
    power_cap_frac : float
        Board power cap of every accelerator, a fraction of ``max_power_w`` [-] (1:
        uncapped). Every point is throttled as the busiest prefill step and the busiest
        decode step of the uncapped cloud would be (:func:`_capped_frontier_setup`).
    power_curve : PowerCurve, optional
        The accelerator's power curve; needed below a cap of 1.

    Returns
    -------
    Frontier
        With ``reason`` set (and no points) when the model cannot be served.
    """
    model = catalog.get("models", model_id)
    wl = Workload(id="frontier", name="frontier", model=model.id,
                  input_tokens_mean=float(input_tokens), output_tokens_mean=float(output_tokens),
                  cache_hit_frac=0.0, precision=precision or ("fp8" if model.is_moe else "fp8"),
                  ttft_s=ttft_s or 1e9, tpot_ms=1e9, percentile=percentile,
                  speculative=speculative, acceptance_frac=acceptance_frac,
                  length_distribution=lengths, source="dcplan perf frontier",
                  as_of="2026-01")
    su = build_setup(catalog, rack_id, model.id, wl, precision, defaults=defaults,
                     calibration=calibration)
    out = Frontier(rack_id, model.id, su.precision.value, float(input_tokens),
                   float(output_tokens), length_distribution=workload_lengths(wl))
    layouts = candidate_layouts(su.rack, su.model, su.serving, layout)
    if su.hw is not None:
        layouts = [p for p in layouts
                   if float(weight_bytes_per_gpu(p, su.shape)) < su.hw.hbm_capacity] or layouts
    problem = _fit_problem(su, layouts)
    if problem:
        out.reason = problem
        return out
    drafts, acc, cost = _drafts(su)
    nd = len(drafts)
    par = _stack(layouts, nd)
    n = np.tile(np.array(drafts, float), len(layouts))[:, None]
    tr = _traffic(su, 1.0)
    ph, sv = su.physics, su.serving
    bmax = max_batch(su.hw, par, su.shape, sv, tr.decode_context)
    grid = _layout_batch_grid(bmax)      # the search's grid: every layout's limit too
    inst = Instance(su.hw, par, su.shape, ph, sv, n, acc, cost)
    check_cap_input(su, power_cap_frac, power_curve)
    if power_cap_frac < 1.0:
        su = _capped_frontier_setup(su, inst, tr, grid, bmax, power_cap_frac, power_curve)
        inst = Instance(su.hw, par, su.shape, ph, sv, n, acc, cost)
    out.power_cap_frac = power_cap_frac
    out.max_batch_per_rank = int(sv.max_batch_per_rank)
    g = np.asarray(par.gpus, float)
    xs, ys, meta = [], [], []
    o = float(output_tokens)
    # Without --ttft-s a point's median TTFT may take at most this share of its median
    # end-to-end latency: ttft <= share / (1 - share) * o * tpot (docs/perf.md).
    share = sv.frontier_ttft_share_max_frac
    k_ttft = share / (1.0 - share)
    out.ttft_bound = ("" if ttft_s else
                      f"median TTFT at most {share:.0%} of the median end-to-end latency")
    if "aggregated" in modes:
        # Poisson arrivals with the running-request cap bmax: a request waits for a slot
        pt = aggregated(inst, tr, grid, slots=bmax)
        ok = (grid <= bmax) & (pt.utilisation < 1.0)
        tpot = pt.tpot_quantile(50.0, ph.tpot_cv_frac)
        ttft_med = np.full(ok.shape, np.inf)
        li, bi = np.nonzero(ok)
        sub = take_point(pt, ok.shape, li, bi)
        ttft_med[li, bi] = sub.ttft_quantile(50.0)
        if ttft_s:
            lim = np.full(ok.shape, np.inf)
            lim[li, bi] = sub.ttft_quantile(percentile)
            ok &= lim <= ttft_s
        else:
            ok &= ttft_med <= k_ttft * o * tpot
        x = 1.0 / tpot
        y = pt.requests_per_s * o / g
        li, bi = np.nonzero(ok)
        out.cloud["aggregated"] = (x[li, bi], y[li, bi])
        for a, b in zip(li, bi, strict=True):
            xs.append(x[a, b])
            ys.append(y[a, b])
            meta.append(("aggregated", a, b, "", float(ttft_med[a, b]), 0, False))
    if "disaggregated" in modes:
        _disaggregated_points(su, tr, inst, par, layouts, grid, bmax, o, ttft_s, percentile,
                              k_ttft, out, xs, ys, meta)
    if not xs:
        out.reason = ("no stable operating point" + (f" meets TTFT {ttft_s:g} s" if ttft_s else ""))
        return out
    xs_a, ys_a = np.array(xs), np.array(ys)
    total_per_out = (float(input_tokens) + o) / o
    keep = pareto(xs_a, ys_a)
    # Thin the frontier to the best point per 3% band of interactivity, so the table and
    # the plot stay readable.
    band = np.floor(np.log(xs_a[keep]) / np.log(1.03))
    thin = [int(keep[np.flatnonzero(band == b)[np.argmax(ys_a[keep][band == b])]])
            for b in np.unique(band)]
    kv_outside = su.basis is not None and handover_outside_fit(
        su.basis, su.rack.scaleup_domain, float(input_tokens), su.model.id)
    why_kind = model_kind_extrapolation(su.shape.is_moe, su.model.id, su.architecture,
                                        su.basis)
    wide: list[int] = []      # expert-parallel widths of the points that extrapolate EP
    small: list[float] = []   # sequences per GPU of wide decode groups below the fitted
    n_kv = 0
    gpus = np.broadcast_to(np.asarray(par.gpus, float), n.shape)
    for k in thin:
        mode, a, b, plabel, ttft_med, pep, kv_bound = meta[k]
        label, _, _, ep = _label(par, a, su.shape.is_moe)
        why_ep = ep_extrapolation(su.shape.is_moe, ep, su.rack.scaleup_domain, su.basis,
                                  pep)
        seqs = float(grid[0, b]) / float(gpus[a, 0])
        why_small = (small_batch_extrapolation(ep, su.rack.scaleup_domain, su.basis, seqs,
                                               su.serving.board_ep_gpus)
                     if su.shape.is_moe else "")
        why_kv = kv_handover_extrapolation(su.basis) if kv_bound and kv_outside else ""
        wide += [max(ep, pep)] if why_ep else []
        small += [seqs] if why_small else []
        n_kv += bool(why_kv)
        out.points.append({
            "tokens_per_s_per_user": float(xs_a[k]),
            "output_tokens_per_s_per_gpu": float(ys_a[k]),
            "total_tokens_per_s_per_gpu": float(ys_a[k]) * total_per_out,
            "mode": mode, "parallel": label, "prefill_parallel": plabel,
            "batch": int(grid[0, b]), "draft_tokens": int(n[a, 0]),
            "speculative": speculative if int(n[a, 0]) else "none",
            "median_ttft_s": ttft_med,
            "extrapolation": "; and ".join(w for w in (why_kind, why_ep, why_small, why_kv)
                                          if w),
            "expert_parallel": max(ep, pep),
            "decode_expert_parallel": ep, "prefill_expert_parallel": pep or ep,
        })
    said = [f"every point: {why_kind}"] if why_kind else []
    if wide:
        lo, hi = min(wide), max(wide)
        span = f"{lo}" if lo == hi else f"{lo}-{hi}"
        most = ", ".join(f"{phase} at most {n}" if n > 0 else f"no fitted {phase} group"
                         for phase, n in (("decode", su.basis.domain_ep_max),
                                          ("prefill", su.basis.prefill_ep_max)))
        said.append(
            f"{len(wide)} of {len(out.points)} points run expert parallelism {span} inside one "
            f"{su.rack.scaleup_domain}-GPU scale-up domain, wider than the fitted rows' "
            f"groups of that phase inside a domain ({most}): their MoE "
            "all-to-all is an extrapolation (docs/perf.md, Assumptions and known "
            "weaknesses)")
    if small:
        said.append(
            f"{len(small)} of {len(out.points)} points decode with expert parallelism wider "
            f"than a board inside the domain at {min(small):,.0f}-{max(small):,.0f} "
            f"sequences per GPU, {_below_wide(su.basis)}: their step's all-to-all latency "
            "and overheads are fitted on 8-GPU boards only, and such figures may be low "
            "(docs/perf.md, Assumptions and known weaknesses)")
    if n_kv:
        said.append(
            f"{n_kv} of {len(out.points)} points have a prefill pool that the KV hand-over "
            "bounds outside the runs its time is fitted on (docs/perf.md, Serving)")
    if said:
        out.extrapolation = "; ".join(said) + " ('extrapolation' per point)"
    return out


def _below_wide(basis) -> str:
    """Where the fitted wide decode rows' batches stand, in words."""
    fitted = basis.wide_decode_seqs_per_gpu_min
    return (f"below the fitted wide rows' {fitted:,.0f}" if fitted else
            "with no fitted decode row of such a group")


def _capped_frontier_setup(su, inst, tr, grid, bmax, cap_frac: float, curve: PowerCurve):
    """The frontier's setup under a cap: one throttle for every point.

    The clocks are those of the busiest prefill step (over layouts) and the busiest
    decode step (over layouts, drafts and batches that fit) at full clock, so a point
    at a small batch is throttled as the busiest decode step would be (conservative).

    Parameters
    ----------
    su : Setup
        The uncapped setup.
    inst : Instance
        The uncapped instances (layouts x drafts).
    tr : Traffic
        Request lengths.
    grid, bmax : ndarray
        Batches and the largest that fits per layout [sequences].
    cap_frac : float
        Power cap as a fraction of ``max_power_w`` [-].
    curve : PowerCurve
        The accelerator's power curve.

    Returns
    -------
    Setup
        :func:`dcplan.perf.goodput.capped_setup` at those activities.
    """
    pst = prefill(inst, tr).batched
    t_p = np.maximum(np.asarray(pst.total_s, float), 1e-30)
    act_p = activity(su.params, np.asarray(pst.compute_s) / t_p, np.asarray(pst.memory_s) / t_p)
    dec = decode(inst, grid, tr.decode_context)
    t_d = np.maximum(np.asarray(dec.step_s, float), 1e-30)
    act_d = activity(su.params, np.asarray(dec.step.compute_s) / t_d,
                     np.asarray(dec.step.memory_s) / t_d)
    fit = np.broadcast_to(grid <= bmax, np.broadcast_shapes(np.shape(act_d), np.shape(bmax),
                                                            np.shape(grid)))
    act_d = np.broadcast_to(act_d, fit.shape)
    busiest_d = float(act_d[fit].max()) if fit.any() else float(np.max(act_d))
    return capped_setup(su, cap_frac, curve, float(np.max(act_p)), busiest_d)


def _disaggregated_points(su, tr, inst, par, layouts, grid, bmax, o: float,
                          ttft_s: float | None, percentile: float, k_ttft: float,
                          out: Frontier, xs: list, ys: list, meta: list) -> None:
    """Disaggregated points: each decode point paired with its own prefill point.

    Every decode point (layout x draft x batch) gets the prefill layout and utilisation
    that prefill most requests per GPU within the TTFT its own figures allow: with
    ``ttft_s``, that limit at ``percentile``; without, a median TTFT of at most
    ``k_ttft * o * median TPOT``. Both less the decode point's half step and its wait
    for a running-request slot (Poisson arrivals, bmax slots per decode instance).
    The pairing screens with the prefill TTFT plus the slot wait's own quantile; the
    points appended carry the exact TTFT of the sum (a point whose exact TTFT breaks
    its bound is dropped). Appends to ``xs``, ``ys`` and ``meta`` and sets the cloud.
    """
    ph, sv = su.physics, su.serving
    dec = decode(inst, grid, tr.decode_context)
    mix = mix_sd_s(dec, tr)
    tpot = tpot_quantile(dec.token_s, 0.0, 0.0, o, ph.tpot_cv_frac, 50.0, None, 1.0, mix)
    shape = np.broadcast_shapes(np.shape(tpot), np.shape(bmax), np.shape(grid))
    tpot = np.broadcast_to(tpot, shape)
    ok = np.broadcast_to(grid <= bmax, shape)
    g = np.asarray(par.gpus, float)
    rate_d = np.broadcast_to(grid / (o * dec.token_s) / g, shape)   # requests/s per GPU
    slot_p, slot_t = slot_wait(bmax, grid, o * dec.token_s, 1.0, tr.lengths.cv("output") ** 2)
    slot_p, slot_t = np.broadcast_to(slot_p, shape), np.broadcast_to(slot_t, shape)
    step_half = np.broadcast_to(dec.step_s / 2.0, shape)
    ppar = _stack(layouts)
    pinst = Instance(su.hw, ppar, su.shape, ph, sv,
                     handover_streams=handover_streams(ppar, su.handover_per_rank))
    pre = prefill(pinst, tr)
    kvt = kv_transfer_s(pinst, tr, su.hw.scaleout_bytes_per_s)
    pbm = max_batch(su.hw, ppar, su.shape, sv, tr.input_tokens)
    rho = _RHO_GRID[None, :]
    kv_share = kv_handover_share_s(pinst, tr, su.hw.scaleout_bytes_per_s)
    kv_bound = np.ravel(np.broadcast_to(handover_bounds(kv_share, pre.batched.total_s),
                                        (len(layouts), 1)))
    srv = prefill_server(pre, kv_share, tr)
    serve_b = srv.batched_s
    tail = wait_tail_mean(rho, srv.alone_s, 1.0, srv.service_cv2(ph.prefill_service_cv2))
    fixed_p = kvt + su.hw.params.ttft_overhead_s
    pct = percentile if ttft_s else 50.0
    ttft_scr = ttft_quantile(fixed_p, pre.nodes, pre.node_w, rho, tail, pct)
    rate_p = np.where(pbm >= 1, rho / (serve_b * np.asarray(ppar.gpus, float)), -1.0)
    limit = (np.full(shape, float(ttft_s)) if ttft_s else k_ttft * o * tpot)
    budget = limit - step_half - slot_wait_quantile(slot_p, slot_t, pct)
    rp, idx = best_rate_within(np.where(np.isfinite(ttft_scr), ttft_scr, np.inf), rate_p,
                               budget, index=True)
    li, bi = np.nonzero(ok & (rp > 0))
    if not li.size:
        return
    pi, ri = np.unravel_index(idx[li, bi], rate_p.shape)

    def exact(p):
        return ttft_quantile(
            np.broadcast_to(fixed_p, tail.shape)[pi, ri] + step_half[li, bi],
            tuple(np.broadcast_to(x, tail.shape)[pi, ri] for x in pre.nodes), pre.node_w,
            rho[0, ri], tail[pi, ri], p, slot_p=slot_p[li, bi], slot_tail_s=slot_t[li, bi])

    med = exact(50.0)
    keep = (exact(percentile) if ttft_s and percentile != 50.0 else med) <= limit[li, bi]
    li, bi, pi, ri, med = li[keep], bi[keep], pi[keep], ri[keep], med[keep]
    blended = 1.0 / (1.0 / rp[li, bi] + 1.0 / rate_d[li, bi])
    x = 1.0 / tpot[li, bi]
    y = blended * o
    out.cloud["disaggregated"] = (x, y)
    labels = [_label(ppar, i, su.shape.is_moe) for i in range(rate_p.shape[0])]
    for k in range(li.size):
        xs.append(float(x[k]))
        ys.append(float(y[k]))
        meta.append(("disaggregated", int(li[k]), int(bi[k]), labels[int(pi[k])][0],
                     float(med[k]), labels[int(pi[k])][3], bool(kv_bound[int(pi[k])])))


def _config_text(p: dict[str, Any]) -> str:
    text = p["parallel"]
    if p["prefill_parallel"]:
        text += f" (prefill {p['prefill_parallel']})"
    if p["draft_tokens"]:
        text += f", {p['speculative']} {p['draft_tokens']}"
    return text


def plot_frontier(fr: Frontier, path: Path | str, note: str = "") -> None:
    """Draw ``fr`` (cloud and frontier with its configurations) to a PNG file.

    The frontier is split into runs of one configuration; each run is numbered on
    the plot and named in a key below it.

    Parameters
    ----------
    fr : Frontier
        The frontier (points in output tokens/s per GPU and per user [tokens/s]).
    path : Path or str
        The PNG file to write.
    note : str, optional
        Title lines below the first, newline-separated: what the caller set (a power
        cap, a running-request cap) or should know (points that extrapolate).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    from dcplan.yamlio import atomic_path

    runs: list[tuple[str, list[dict[str, Any]]]] = []
    for p in fr.points:
        cfg = f"{p['mode']}: {_config_text(p)}"
        if runs and runs[-1][0] == cfg:
            runs[-1][1].append(p)
        else:
            runs.append((cfg, [p]))
    fig = plt.figure(figsize=(10, 7.2), dpi=110)
    lines_above = note.count("\n") + 1 if note else 0
    ax = fig.add_axes([0.10, 0.41, 0.86, 0.53 - 0.035 * lines_above])  # room for the title
    colours = {"aggregated": "#4C72B0", "disaggregated": "#DD8452"}
    for mode, (x, y) in fr.cloud.items():
        ax.scatter(x, y, s=3, alpha=0.12, color=colours[mode], label=f"{mode}, every point",
                   rasterized=True)
    ax.plot([p["tokens_per_s_per_user"] for p in fr.points],
            [p["output_tokens_per_s_per_gpu"] for p in fr.points], color="black", lw=1.0,
            zorder=2, label="Pareto frontier")
    for i, (_cfg, pts) in enumerate(runs, start=1):
        mode = pts[0]["mode"]
        ax.scatter([p["tokens_per_s_per_user"] for p in pts],
                   [p["output_tokens_per_s_per_gpu"] for p in pts], s=16,
                   color=colours[mode], edgecolor="black", linewidth=0.4, zorder=3)
        mid = pts[len(pts) // 2]
        ax.annotate(str(i), (mid["tokens_per_s_per_user"], mid["output_tokens_per_s_per_gpu"]),
                    textcoords="offset points", xytext=(5, 5), fontsize=8, weight="bold")
    ax.set_xlabel("interactivity: output tokens/s per user (1 / median TPOT)")
    ax.set_ylabel("output tokens/s per GPU")
    ax.set_title(f"{fr.model} on {fr.rack} ({fr.precision}), {fr.input_tokens:,.0f} input / "
                 f"{fr.output_tokens:,.0f} output tokens" + (f"\n{note}" if note else ""))
    ax.grid(alpha=0.3)
    ax.set_xlim(left=0)
    ymax = max(p["output_tokens_per_s_per_gpu"] for p in fr.points)
    ax.set_ylim(0, ymax * 1.12)
    # thousands separators keep six-digit ticks (small models on large racks) inside
    ax.yaxis.set_major_formatter(matplotlib.ticker.StrMethodFormatter("{x:,.0f}"))
    ax.legend(fontsize=8, loc="upper right", markerscale=3)
    lines = [f"{i}. {cfg}" for i, (cfg, _) in enumerate(runs, start=1)]
    col = (len(lines) + 1) // 2 if len(lines) > 8 else len(lines)
    for c, chunk in enumerate((lines[:col], lines[col:])):
        fig.text(0.10 + 0.44 * c, 0.27, "\n".join(chunk[:14]) + ("\n..." if len(chunk) > 14
                                                                 else ""),
                 fontsize=7.5, va="top", family="monospace")
    fig.text(0.10, 0.30, "Configurations along the frontier (instance layout, prefill layout "
                         "when disaggregated, draft tokens per step):", fontsize=8)
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)
