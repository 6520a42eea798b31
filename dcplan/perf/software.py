"""Serving software as of a date: a calibration read at an engine and a run date.

A calibration's stored values are each vendor's *planning engine* at the latest run date
fitted (``software.reference_date``). :func:`as_of` reads it at another date and engine:
per software knob (overheads, kernel efficiencies, overlap) the engine's fitted log
offset relative to the planning engine, plus the fitted trend per year times the time
from the reference date, on the knob's parameters.

Rules (docs/perf.md, "Software as of a date"):

* A month (``YYYY-MM``) means its last day: the software fitted up to the month's end.
* After the latest fitted run the level is **held** at that run's level, unless the
  trend is asked to be extrapolated (``trend="extrapolate"``).
* Before the earliest fitted run there is no fitted software: refused
  (``before="refuse"``, the command line) or held at the earliest run's level
  (``before="hold"``, the planner's early periods, with a note).
* **Best level so far.** Each parameter takes the better of its fitted value at the date
  and at the earliest fitted run: a knob whose fitted trend makes serving slower is held
  at its earliest level (an operator keeps the older setting). So an earlier date never
  predicts more throughput than a later one, whatever the signs of the fitted trends;
  with every trend improving (the shipped fit) this is the fitted level itself.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from dcplan.errors import InputError, Problem
from dcplan.perf.params import Calibration, HardwareParams, scale_params, year_fraction

#: Ways to read the trend after the latest fitted run.
TRENDS = ("hold", "extrapolate")

_DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")


def faster_sign(param: str) -> int:
    """+1 when a larger value of ``param`` serves faster, -1 when a smaller one, 0 neither.

    Read from the unit in the name (``HardwareParams``): a time ``*_s`` (overheads,
    latencies) is faster smaller; a share ``*_frac`` (efficiencies, overlap) faster
    larger; the power curve's shares (``power_*``) do not set speed.

    Parameters
    ----------
    param : str
        A hardware parameter name.

    Returns
    -------
    int
        +1, -1 or 0 [-].
    """
    if param.startswith("power_"):
        return 0
    if param.endswith("_s"):
        return -1
    if param.endswith("_frac"):
        return 1
    return 0


def month_end(date: str) -> str:
    """``YYYY-MM`` -> its last day ``YYYY-MM-DD``; a full date unchanged ('' if malformed).

    Parameters
    ----------
    date : str
        ``YYYY-MM`` or ``YYYY-MM-DD``.

    Returns
    -------
    str
        ``YYYY-MM-DD``, '' if malformed.
    """
    text = (date or "").strip()
    if not _DATE.match(text) or year_fraction(text) is None:
        return ""
    if len(text) == 7:
        y, m = int(text[:4]), int(text[5:])
        return f"{text}-{calendar.monthrange(y, m)[1]:02d}"
    return text


def _day(date: str) -> dt.date:
    return dt.date.fromisoformat(date)


@dataclass(frozen=True)
class SoftwareLevel:
    """The serving software a prediction assumes.

    Attributes
    ----------
    engine : str
        Serving engine (a ``software`` engine or framework of the calibration); ''
        means each vendor's planning engine.
    date : str
        Date the software is read at [YYYY-MM-DD], after the rules of this module
        (held at the latest or earliest fitted run, or extrapolated).
    trend : {"hold", "extrapolate"}
        How the trend was read after the latest fitted run.
    """

    engine: str = ""
    date: str = ""
    trend: str = "hold"


@dataclass(frozen=True)
class DatedCalibration(Calibration):
    """A :class:`Calibration` read at a :class:`SoftwareLevel`.

    Everything that takes a calibration (``rack_performance``, the frontier, the batch
    sweep, the planner) predicts with this software level: :meth:`apply` moves the
    stored values (planning engine, latest fitted run) to ``level``.
    """

    level: SoftwareLevel = field(default_factory=SoftwareLevel)
    requested: str = field(default="", compare=False, hash=False)

    @property
    def key(self) -> tuple:
        """Hashable identity of the fitted values and the level (for caching).

        The stored calibration's key where the level is its stored one (predictions are
        the same, so caches share them).
        """
        if not self.level.engine and self.level.date == self.software.reference_date \
                and not _held(self):
            return super().key
        return (*super().key, self.level)

    def apply(self, base: HardwareParams, accelerator_id: str,
              vendor: str | None = None, architecture: str | None = None) -> HardwareParams:
        """Return the calibrated values of ``accelerator_id`` at this software level.

        Parameters
        ----------
        base : HardwareParams
            Parameters before calibration.
        accelerator_id : str
            Accelerator id.
        vendor : str, optional
            The accelerator's vendor.
        architecture : str, optional
            The accelerator's architecture.

        Returns
        -------
        HardwareParams
            The calibrated values moved to this level.
        """
        params = super().apply(base, accelerator_id, vendor, architecture)
        return scale_params(params, level_log_factors(self, vendor)[0])


def base_calibration(cal: Calibration | None) -> Calibration | None:
    """The stored calibration under a dated one (itself when not dated).

    Parameters
    ----------
    cal : Calibration or None
        A calibration, dated or not.

    Returns
    -------
    Calibration or None
        The stored calibration.
    """
    if isinstance(cal, DatedCalibration):
        kw = {f: getattr(cal, f) for f in Calibration.__dataclass_fields__}
        return Calibration(**kw)
    return cal


def _bad(message: str, option: str) -> InputError:
    return InputError(Problem("command line", message, field=option))


def engines(cal: Calibration) -> list[str]:
    """Engines and frameworks ``cal`` has fitted software for (sorted).

    Parameters
    ----------
    cal : Calibration
        A calibration.

    Returns
    -------
    list of str
        Engine and framework names (empty without fitted software).
    """
    sw = cal.software
    if sw is None:
        return []
    return sorted({e for e, _ in sw.engines} | {f for f, e in sw.base_engine
                                                 if e in dict(sw.engines)})


def as_of(cal: Calibration | None, date: str | None = None, engine: str | None = None,
          trend: str = "hold", before: str = "refuse") -> Calibration | None:
    """``cal`` read with ``engine``'s software as of ``date``.

    Parameters
    ----------
    cal : Calibration or None
        The stored calibration; None (a-priori defaults) has no software to date.
    date : str, optional
        ``YYYY-MM`` (its last day) or ``YYYY-MM-DD``; None: the latest fitted run.
    engine : str, optional
        A fitted engine or framework (``sglang``, ``trt``, ``atom``...); None: each
        vendor's planning engine.
    trend : {"hold", "extrapolate"}
        After the latest fitted run: hold its level (default) or extrapolate the trend.
    before : {"refuse", "hold"}
        Before the earliest fitted run: an input error naming it, or its level.

    Returns
    -------
    Calibration or None
        A :class:`DatedCalibration` (that says which level it assumes, see
        :func:`describe`), or ``cal`` itself without fitted software.

    Raises
    ------
    InputError
        Malformed date, unknown engine or trend, a date before the earliest fitted run
        (``before="refuse"``), or a date or engine with a calibration that has no fitted
        software.
    """
    if trend not in TRENDS:
        raise _bad(f"--software-trend must be hold or extrapolate (got '{trend}')",
                   "--software-trend")
    day = ""
    if date is not None:
        day = month_end(date)
        if not day:
            raise _bad(f"'{date}' is not a date; give YYYY-MM (e.g. 2025-09) or YYYY-MM-DD",
                       "--date")
    cal = base_calibration(cal)
    sw = cal.software if cal is not None else None
    if sw is None or not sw.reference_date:
        if engine or date is not None:
            what = ("the a-priori defaults (--calibration none) have" if cal is None else
                    "this calibration has")
            raise _bad(f"{what} no fitted serving software (engine offsets and date "
                       "trend), so --date and --engine cannot be applied; use a calibration "
                       "written by 'dcplan perf calibrate' or leave them out",
                       "--date" if date is not None else "--engine")
        return cal
    if engine and engine not in engines(cal):
        known = set(dict(sw.base_engine)) | set(dict(sw.base_engine).values())
        why = (" (a known engine without offsets of its own: no fitted row ran it, or its "
               "rows ran no accelerator and model another engine ran, so the fit could not "
               "tell it from them; docs/perf.md, Calibration)" if engine in known else "")
        raise _bad(f"no fitted software for engine '{engine}'{why}; fitted: "
                   f"{', '.join(engines(cal)) or 'none'}, or leave --engine out for each "
                   "vendor's planning engine", "--engine")
    ref = sw.reference_date
    eff = ref
    if day:
        if sw.earliest_date and _day(day) < _day(sw.earliest_date):
            if before == "refuse":
                first = _day(sw.earliest_date)
                raise _bad(f"{date} is before the earliest run the calibration fitted "
                           f"({sw.earliest_date}); there is no fitted software level before "
                           f"it: give --date {first:%Y-%m} or later", "--date")
            eff = sw.earliest_date
        elif _day(day) <= _day(ref) or trend == "extrapolate":
            eff = day
    level = SoftwareLevel(engine or "", eff, trend if _day(eff) > _day(ref) else "hold")
    dated = DatedCalibration(**{f: getattr(cal, f) for f in Calibration.__dataclass_fields__},
                             level=level, requested=day)
    return dated


def _held(cal: DatedCalibration) -> bool:
    """Whether any knob is held at an earlier level (an adverse fitted trend)."""
    sw = cal.software
    vendors = {v for v, _ in sw.planning_engine} | {None}
    return any(level_log_factors(cal, v)[1] for v in vendors)


def level_log_factors(cal: Calibration, vendor: str | None
                      ) -> tuple[dict[str, float], dict[str, str]]:
    """Parameter -> log factor from the stored values to ``cal``'s level, for ``vendor``.

    Parameters
    ----------
    cal : Calibration
        A calibration (dated: at its level; else the stored level).
    vendor : str or None
        Accelerator vendor (picks the planning engine).

    Returns
    -------
    (dict, dict)
        The log factors [ln], and knob -> date it is held at where its fitted trend
        makes serving slower: such a trend is not believed (the fit confounds software
        with benchmarks and engines over time), the knob stays at its latest fitted
        level at every date, so an earlier date never predicts more throughput and the
        default answer is the stored calibration.
    """
    sw = cal.software
    level = cal.level if isinstance(cal, DatedCalibration) else SoftwareLevel()
    if sw is None or not sw.reference_date:
        return {}, {}
    plan = sw.planning(vendor)
    here, ref = sw.offset(level.engine or plan), sw.offset(plan)
    y0 = year_fraction(sw.reference_date)
    y = year_fraction(level.date) if level.date else y0
    dy = (y - y0) if (y is not None and y0 is not None) else 0.0
    trend = dict(sw.trend_per_year)
    out: dict[str, float] = {}
    held: dict[str, str] = {}
    for knob, names in sw.knobs:
        t = trend.get(knob, 0.0)
        for n in names:
            s = faster_sign(n)
            step = t * dy
            if s * t < 0:
                # an adverse fitted trend (serving slower with time) is not believed:
                # the knob stays at its latest fitted level at every date
                step = 0.0
                held[knob] = sw.reference_date
            out[n] = out.get(n, 0.0) + here.get(knob, 0.0) - ref.get(knob, 0.0) + step
    return out, held


def engine_at(cal: Calibration | None, vendor: str | None) -> str:
    """The serving engine ``cal`` predicts ``vendor``'s accelerators with.

    Parameters
    ----------
    cal : Calibration or None
        A calibration (dated: its level's engine, else the vendor's planning engine).
    vendor : str or None
        Accelerator vendor.

    Returns
    -------
    str
        The engine; '' without a calibration or without a dated software section.
    """
    if cal is None or cal.software is None or not cal.software.reference_date:
        return ""
    level = cal.level if isinstance(cal, DatedCalibration) else SoftwareLevel()
    return level.engine or cal.software.planning(vendor)


def describe(cal: Calibration | None, vendor: str | None = None) -> dict[str, Any]:
    """What software ``cal``'s predictions for ``vendor``'s racks assume.

    Parameters
    ----------
    cal : Calibration or None
        A calibration (None: the a-priori defaults).
    vendor : str, optional
        Accelerator vendor (picks the planning engine).

    Returns
    -------
    dict
        ``engine`` (the engine read, '' without fitted software), ``date`` (the date it
        is read at, YYYY-MM-DD, '' without), ``requested`` (the date asked for, '' for
        the default), ``latest_fitted`` and ``earliest_fitted`` run dates, ``basis``
        (``latest fitted run``, ``fitted``, ``held at the latest fitted run``,
        ``held at the earliest fitted run``, ``extrapolated``, ``a-priori defaults``,
        ``not dated``), ``held_knobs`` (knob -> date, see :func:`level_log_factors`) and
        ``text`` (one line).
    """
    if cal is None:
        return {"engine": "", "date": "", "requested": "", "latest_fitted": "",
                "earliest_fitted": "", "basis": "a-priori defaults", "held_knobs": {},
                "text": "a-priori defaults (no fitted serving software or date)"}
    sw = cal.software
    if sw is None or not sw.reference_date:
        return {"engine": "", "date": "", "requested": "", "latest_fitted": "",
                "earliest_fitted": "", "basis": "not dated", "held_knobs": {},
                "text": "as fitted (the calibration records no serving engine or run date)"}
    level = cal.level if isinstance(cal, DatedCalibration) else SoftwareLevel()
    requested = cal.requested if isinstance(cal, DatedCalibration) else ""
    engine = engine_at(cal, vendor)
    date = level.date or sw.reference_date
    ref, first = sw.reference_date, sw.earliest_date
    if not requested:
        basis = "latest fitted run"
    elif _day(requested) > _day(ref):
        basis = "extrapolated" if level.trend == "extrapolate" else \
            "held at the latest fitted run"
    elif first and _day(requested) < _day(first):
        basis = "held at the earliest fitted run"
    else:
        basis = "fitted"
    _, held = level_log_factors(cal, vendor)
    if not any(t for _, t in sw.trend_per_year):
        basis += "; no fitted trend"
    text = f"{engine or 'pooled engine'} as of {date}"
    if basis == "held at the latest fitted run":
        text += f" (asked {requested}: held at {ref}, the latest fitted run; the trend " \
                "is not extrapolated unless asked)"
    elif basis == "held at the earliest fitted run":
        text += f" (asked {requested}: held at {first}, the earliest fitted run)"
    elif basis.startswith("extrapolated"):
        text += f" (extrapolated past {ref}, the latest fitted run)"
    elif basis.startswith("latest fitted run"):
        text += " (the latest fitted run)"
    else:
        text += f" (fitted runs {first or '?'}..{ref})"
    if held:
        text += "; " + ", ".join(f"{k} held at its {d} level (fitted trend slower)"
                                 for k, d in sorted(held.items()))
    return {"engine": engine, "date": date, "requested": requested, "latest_fitted": ref,
            "earliest_fitted": first, "basis": basis, "held_knobs": held, "text": text}


def period_levels(cal: Calibration | None, starts: list[str]
                  ) -> tuple[list[Calibration | None], int | None]:
    """The software level of each planning period, and where the fitted levels end.

    Parameters
    ----------
    cal : Calibration or None
        The stored calibration.
    starts : list of str
        First day of each period [YYYY-MM-DD].

    Returns
    -------
    (list, int or None)
        Per period, ``cal`` read as of its first day (held at the latest fitted run
        after it, at the earliest before it); and the index of the last period that
        starts on or before the latest fitted run [index from 0] (None where the first
        period starts after it, or ``cal`` has no fitted software: a software-speedup
        path then counts from the first period).
    """
    sw = cal.software if cal is not None else None
    if sw is None or not sw.reference_date:
        return [cal] * len(starts), None
    levels = [as_of(cal, s, before="hold") for s in starts]
    last = None
    for i, s in enumerate(starts):
        if _day(s) <= _day(sw.reference_date):
            last = i
    return levels, last
