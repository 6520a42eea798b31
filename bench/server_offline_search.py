"""MLPerf Server/Offline ratios as a user gets them: ``dcplan perf`` choosing the layout.

``bench/perf_accuracy.py`` compares each MLPerf configuration measured in both scenarios
at the rows' own layouts and running-request caps (NVIDIA's configs; docs/perf.md,
"Server/Offline ratio and power"). A user, and the issue's check on newer MLPerf rounds,
asks ``dcplan perf`` instead and lets it search the layout and batch:

    dcplan perf --rack R --model M --precision P --input-tokens I --output-tokens O
        --date D --length-dist DIST --offline
    dcplan perf ... --ttft-s T --tpot-ms S --percentile 99

with the Server row's TTFT and TPOT limits, the run's date, and the benchmark dataset's
length distribution (``catalogs/measurements/length_distributions.yaml``, ``phase_rows``;
the mean lengths are the rows'). MaxQ rows add their power cap (``--power-cap``, the
cap over the accelerator's maximum power). This runs those two commands for every pair
of ``dcplan.perf.calibration.server_offline_pairs`` (the rows of
``catalogs/measurements/*.csv``, fitted ones: in sample) and prints the measured and
predicted output tokens/s per GPU of each scenario, the layouts the search chose, and
the predicted Server/Offline ratio against the measured one. A pair whose accelerator no
catalog rack holds (MI300X, MI325X) cannot be asked that way and is listed as such.

Run: python bench/server_offline_search.py [--calibration FILE|none] [--json FILE]
[--markdown] (under a minute; docs/perf.md, "Server/Offline ratio and power", quotes
it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import check_args  # noqa: E402

from dcplan.catalog import load_catalog  # noqa: E402
from dcplan.lengths import LengthDist  # noqa: E402
from dcplan.perf.calibration import server_offline_pairs  # noqa: E402
from dcplan.perf.measurements import load_measurement_files  # noqa: E402
from dcplan.perf.params import load_perf_inputs  # noqa: E402

#: Percentile of the Server scenario's TTFT and TPOT limits (MLPerf's) [%].
SERVER_PERCENTILE = 99


def length_dist_option(dist: LengthDist) -> str:
    """``--length-dist`` text of a distribution (``fixed``, ``uniform:F``, ``lognormal:A,B``)."""
    if dist.is_fixed:
        return "fixed"
    if dist.kind == "uniform":
        return f"uniform:{dist.min_frac:g}"
    return f"lognormal:{dist.input_cv:g},{dist.output_cv:g}"


def rack_of(catalog, accelerator: str) -> str | None:
    """The catalog's rack of ``accelerator`` (the first listed; None when none holds it)."""
    for rid, rack in catalog.racks.items():
        if rack.accelerator == accelerator:
            return rid
    return None


def _pairs():
    catalog = load_catalog()
    rows = load_measurement_files(sorted((REPO / "catalogs" / "measurements").glob("*.csv")),
                                  catalog)
    return catalog, rows, server_offline_pairs(rows)


def pairs_without_rack() -> list[str]:
    """The pairs whose accelerator no catalog rack holds: ``dcplan perf`` cannot ask them."""
    catalog, rows, pairs = _pairs()
    return [label for label, si, _ in pairs if rack_of(catalog, rows[si].hardware) is None]


def commands(calibration: str | None = None) -> list[dict]:
    """The pairs a rack holds and, for each, its Offline and Server ``dcplan perf`` commands."""
    catalog, rows, pairs = _pairs()
    pin = load_perf_inputs(catalog, None, benchmarks=True)
    out = []
    for label, si, oi in pairs:
        s, o = rows[si], rows[oi]
        rack = rack_of(catalog, s.hardware)
        if rack is None:
            continue
        acc = catalog.get("accelerators", s.hardware)
        base = [sys.executable, "-m", "dcplan", "perf", "--rack", rack,
                "--model", s.model, "--precision", str(getattr(s.precision, "value",
                                                               s.precision)),
                "--input-tokens", f"{s.prompt_tokens:g}", "--output-tokens",
                f"{s.output_tokens:g}", "--date", str(s.date), "--length-dist",
                length_dist_option(pin.benchmarks.lengths.for_phase_model(s.model)), "--json"]
        if getattr(s, "power_cap_w", None):
            base += ["--power-cap", f"{s.power_cap_w / acc.max_power_w:.6g}"]
        if calibration:
            base += ["--calibration", calibration]
        out.append({
            "configuration": label,
            "measured_offline": o.tokens_per_s / o.gpus,
            "measured_server": s.tokens_per_s / s.gpus,
            "offline_command": base + ["--offline"],
            "server_command": base + ["--ttft-s", f"{s.ttft_s:g}", "--tpot-ms",
                                      f"{s.tpot_ms:g}", "--percentile",
                                      str(SERVER_PERCENTILE)]})
    return out


def _perf(cmd: list[str]) -> dict:
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600,
                          cwd=REPO)
    return json.loads(done.stdout)


def run(calibration: str | None = None) -> dict:
    """Every pair's measured and searched figures, and the summary [dict]."""
    pairs = []
    for p in commands(calibration):
        off, srv = _perf(p["offline_command"]), _perf(p["server_command"])
        po, ps = off["output_tokens_per_s_per_gpu"], srv["output_tokens_per_s_per_gpu"]
        measured = p["measured_server"] / p["measured_offline"]
        predicted = ps / po
        pairs.append({
            "configuration": p["configuration"],
            "measured_offline_per_gpu": p["measured_offline"],
            "measured_server_per_gpu": p["measured_server"],
            "predicted_offline_per_gpu": po, "predicted_server_per_gpu": ps,
            "offline_error_pct": 100.0 * (po / p["measured_offline"] - 1.0),
            "server_error_pct": 100.0 * (ps / p["measured_server"] - 1.0),
            "offline_layout": f"{off['parallel']}, batch {off['batch']:,}",
            "server_layout": f"{srv['parallel']}, batch {srv['batch']:,}",
            "measured_ratio": measured, "predicted_ratio": predicted,
            "abs_diff": abs(predicted - measured),
            "server_command": " ".join(["dcplan"] + p["server_command"][3:])})
    diffs = [p["abs_diff"] for p in pairs]
    return {"pairs": pairs, "median_abs_diff": float(np.median(diffs)) if diffs else None,
            "max_abs_diff": max(diffs) if diffs else None,
            "without_rack": pairs_without_rack()}


def markdown(res: dict) -> str:
    """The pairs as a markdown table."""
    lines = ["| configuration | measured Offline / Server per GPU | searched Offline (layout) "
             "| searched Server (layout) | measured ratio | searched ratio (abs diff) |",
             "|---|---:|---|---|---:|---:|"]
    for p in res["pairs"]:
        lines.append(
            f"| {p['configuration']} | {p['measured_offline_per_gpu']:,.0f} / "
            f"{p['measured_server_per_gpu']:,.0f} | {p['predicted_offline_per_gpu']:,.0f} "
            f"({p['offline_error_pct']:+.0f} %; {p['offline_layout']}) | "
            f"{p['predicted_server_per_gpu']:,.0f} ({p['server_error_pct']:+.0f} %; "
            f"{p['server_layout']}) | {p['measured_ratio']:.2f} | "
            f"{p['predicted_ratio']:.2f} ({p['abs_diff']:.2f}) |")
    if res["pairs"]:
        lines.append(f"| all {len(res['pairs'])} pairs: median (max) abs diff | - | - | - | - "
                     f"| {res['median_abs_diff']:.2f} ({res['max_abs_diff']:.2f}) |")
    if res.get("without_rack"):
        lines += ["", "Not asked (no rack in the catalog holds the accelerator): "
                  + "; ".join(res["without_rack"]) + "."]
    return "\n".join(lines)


def main() -> None:
    """Print the table (and write JSON with ``--json``)."""
    ap = check_args.parser(__doc__)
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = ap.parse_args()
    res = run(args.calibration)
    if args.markdown:
        print(markdown(res))
    else:
        for p in res["pairs"]:
            print(f"{p['configuration']}: Offline {p['predicted_offline_per_gpu']:,.0f} "
                  f"({p['offline_error_pct']:+.0f} %, {p['offline_layout']}), Server "
                  f"{p['predicted_server_per_gpu']:,.0f} ({p['server_error_pct']:+.0f} %, "
                  f"{p['server_layout']}) output tokens/s per GPU; ratio "
                  f"{p['predicted_ratio']:.2f} against {p['measured_ratio']:.2f} measured")
        if res["pairs"]:
            print(f"median (max) abs diff of the ratio: {res['median_abs_diff']:.2f} "
                  f"({res['max_abs_diff']:.2f}) over {len(res['pairs'])} pairs")
        for label in res["without_rack"]:
            print(f"{label}: not asked, no rack in the catalog holds the accelerator")
    check_args.write_json(args.json, res)


if __name__ == "__main__":
    main()
