"""Request-length distributions (input and output tokens per request around their means).

One definition, used by the workload catalog (``length_distribution`` of a workload,
:mod:`dcplan.schema`), the measurement files' benchmarks
(``catalogs/measurements/length_distributions.yaml``) and the performance model
(:mod:`dcplan.perf.latency` re-exports these names). Kept outside :mod:`dcplan.perf`
and free of numpy/scipy at import time, so that loading the catalog stays light;
:meth:`LengthDist.nodes` imports them when called.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any

#: Probability bins over which a length distribution is represented: one node at
#: each bin's probability midpoint, weighted by the bin's width. Finer in both tails
#: (the p99 TPOT comes from the shortest outputs, the p99 TTFT from the longest prompts).
LENGTH_BINS = (0.0, 0.002, 0.01, 0.05, 0.2, 0.5, 0.8, 0.95, 0.99, 0.998, 1.0)

#: The kinds of distribution and the parameters each takes.
KIND_FIELDS = {"fixed": (), "uniform": ("min_frac",), "lognormal": ("input_cv", "output_cv")}

#: Upper bound of a coefficient of variation [-] (a lognormal at CV 5 already puts the
#: top node at ~30x the mean).
CV_MAX = 5.0


@dataclass(frozen=True)
class LengthDist:
    """Distribution of request lengths around their mean (input and output tokens).

    Attributes
    ----------
    kind : {"fixed", "uniform", "lognormal"}
        ``fixed``: every request has the mean length. ``uniform``: lengths uniform
        between ``min_frac`` and 1 of a nominal maximum (the InferenceX client draws
        each request's input and output length this way, ``--random-range-ratio``);
        the mean is ``(1 + min_frac) / 2`` of the nominal. ``lognormal``: a long tail,
        with the coefficients of variation ``input_cv`` and ``output_cv``.
    min_frac : float
        Uniform: shortest length as a share of the longest (both input and output) [-].
    input_cv, output_cv : float
        Lognormal: coefficient of variation (standard deviation / mean) of the input
        (prompt) and output (generated) tokens per request [-].
    """

    kind: str = "fixed"
    min_frac: float = 1.0
    input_cv: float = 0.0
    output_cv: float = 0.0

    @property
    def is_fixed(self) -> bool:
        """True when every request has the mean lengths."""
        return (self.kind == "fixed" or (self.kind == "uniform" and self.min_frac >= 1.0)
                or (self.kind == "lognormal" and self.input_cv <= 0 and self.output_cv <= 0))

    def cv(self, which: str) -> float:
        """Coefficient of variation of the ``"input"`` or ``"output"`` tokens [-]."""
        if self.kind == "uniform":
            m = self.min_frac
            return (1.0 - m) / (math.sqrt(3.0) * (1.0 + m))
        if self.kind == "lognormal":
            return self.input_cv if which == "input" else self.output_cv
        return 0.0

    def nodes(self, which: str):
        """Length / mean at the nodes of :data:`LENGTH_BINS`, and their weights [-].

        ``which``: ``"input"`` (prompt) or ``"output"`` (generated) tokens. The ratios
        are rescaled so that their weighted mean is exactly 1.

        Returns
        -------
        (ndarray, ndarray)
            Ratios and weights (one node of ratio 1 when the lengths are fixed).
        """
        import numpy as np

        if self.is_fixed:
            return np.ones(1), np.ones(1)
        bins = np.asarray(LENGTH_BINS)
        u = 0.5 * (bins[1:] + bins[:-1])
        w = np.diff(bins)
        if self.kind == "uniform":
            m = self.min_frac
            x = 2.0 / (1.0 + m) * (m + (1.0 - m) * u)
        else:
            from scipy.special import ndtri

            cv = self.cv(which)
            if cv <= 0:
                return np.ones(1), np.ones(1)
            s2 = np.log1p(cv * cv)
            x = np.exp(-s2 / 2.0 + np.sqrt(s2) * ndtri(u))
        return x / float(np.sum(w * x)), w

    def as_dict(self) -> dict[str, Any]:
        """The fields the kind takes, as written in the YAML files."""
        return {"kind": self.kind, **{f: getattr(self, f) for f in KIND_FIELDS[self.kind]}}

    def describe(self) -> str:
        """One line, e.g. ``lognormal (input CV 0.8, output CV 1)``."""
        if self.kind == "uniform":
            return (f"uniform ({self.min_frac:g}-1 of the longest, input and output; "
                    f"CV {self.cv('input'):.2g})")
        if self.kind == "lognormal":
            return f"lognormal (input CV {self.input_cv:g}, output CV {self.output_cv:g})"
        return "fixed (every request has the mean lengths)"


FIXED = LengthDist()


def length_dist(spec) -> LengthDist:
    """A :class:`LengthDist` from a mapping, an object with its fields, or None (fixed).

    The fields: ``kind`` (default ``fixed``), ``min_frac`` (uniform), ``input_cv`` and
    ``output_cv`` (lognormal).

    Raises
    ------
    ValueError
        Naming every problem at once and the fix: an unknown kind or field, a field
        the kind does not take, a parameter outside its range (``min_frac`` in (0, 1],
        CVs in [0, 5]) or not a number.
    """
    if spec is None:
        return FIXED
    if isinstance(spec, LengthDist):
        return spec
    if isinstance(spec, dict):
        get = spec.get
        # keys of the form __x__ are the YAML reader's line bookkeeping, not fields
        names = [str(k) for k in spec if not str(k).startswith("__")]
    else:
        def get(k, d=None):
            return getattr(spec, k, d)
        names = []
    raw_kind = get("kind", "fixed")
    kind = str(getattr(raw_kind, "value", raw_kind))
    problems = []
    if kind not in KIND_FIELDS:
        problems.append(f"kind {kind!r} is not known: write fixed, uniform (with min_frac) "
                        "or lognormal (with input_cv and output_cv)")
    allowed = ("kind",) + KIND_FIELDS.get(kind, ("min_frac", "input_cv", "output_cv"))
    every = ("kind", "min_frac", "input_cv", "output_cv")
    for name in names:
        if name not in allowed:
            takes = ", ".join(KIND_FIELDS.get(kind, ())) or "no parameters"
            close = difflib.get_close_matches(name, every, n=1, cutoff=0.6)
            if name not in every and close and close[0] in allowed:
                problems.append(f"unknown field {name!r}: did you mean {close[0]!r}? "
                                "Rename it")
            else:
                problems.append(f"{name!r} does not apply to kind {kind} (it takes "
                                f"{takes}); remove it")

    def number(name, default, lo, hi, lo_open):
        v = get(name, None)
        if v is None:
            return default
        if isinstance(v, bool) or not isinstance(v, int | float | str):
            problems.append(f"{name} {v!r} is not a number")
            return default
        try:
            x = float(v)
        except ValueError:
            problems.append(f"{name} {v!r} is not a number")
            return default
        bad = not math.isfinite(x) or x > hi or (x <= lo if lo_open else x < lo)
        if bad:
            rng = f"{lo:g} < {name} <= {hi:g}" if lo_open else f"{lo:g} <= {name} <= {hi:g}"
            problems.append(f"{name} {x:g}: expected {rng}")
            return default
        return x

    min_frac = number("min_frac", 1.0, 0.0, 1.0, True)
    in_cv = number("input_cv", 0.0, 0.0, CV_MAX, False)
    out_cv = number("output_cv", 0.0, 0.0, CV_MAX, False)
    if problems:
        raise ValueError("length distribution: " + "; ".join(problems))
    return LengthDist(kind, min_frac, in_cv, out_cv)


def parse_length_option(text: str) -> LengthDist:
    """A :class:`LengthDist` from a command-line value.

    ``fixed``; ``uniform:MIN_FRAC`` (e.g. ``uniform:0.8``, the InferenceX client);
    ``lognormal:CV`` (input and output alike) or ``lognormal:INPUT_CV,OUTPUT_CV``.

    Raises
    ------
    ValueError
        A value of another form, or parameters out of range (:func:`length_dist`).
    """
    kind, _, args = str(text).strip().partition(":")
    parts = [a.strip() for a in args.split(",")] if args.strip() else []
    if kind == "fixed" and not parts:
        return FIXED
    if kind == "uniform" and len(parts) == 1:
        return length_dist({"kind": "uniform", "min_frac": parts[0]})
    if kind == "lognormal" and len(parts) in (1, 2):
        return length_dist({"kind": "lognormal", "input_cv": parts[0],
                            "output_cv": parts[-1]})
    raise ValueError(f"{text!r}: write fixed, uniform:MIN_FRAC (e.g. uniform:0.8) or "
                     "lognormal:CV or lognormal:INPUT_CV,OUTPUT_CV (e.g. lognormal:0.8,1.0)")
