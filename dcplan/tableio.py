"""Result tables as they are handed over: rounded, integer counts, safe CSV cells.

Rounded at the source, counts as integers, yearly periods as numbers, and CSV cells
that no spreadsheet program evaluates.

Every writer of a table to a file (CSV, workbook, HTML) goes through
:func:`tidy_table`, and every CSV writer through :func:`write_csv`, so the figures a
user reads are the same everywhere. The tables in memory keep full precision; only
what is written is rounded.

Rounding keeps what matters and drops float noise (``37.99999999999999`` becomes
``38``): each value is rounded to the resolution of its unit (:data:`RESOLUTION`:
money to the cent, power and energy to the watt and watt-hour, carbon to the gram,
token rates to a thousandth) but never to fewer than :data:`SIGNIFICANT` significant
digits, so a small figure such as 0.0032 USD per million tokens keeps its digits.

This module sits below the planner and the exporters (it imports neither), so both
can use it.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: First characters that make a spreadsheet program read a cell as a formula (or, for
#: tab and carriage return, that can hide one); a text cell starting with one of them
#: is written with a leading ``'`` in CSV and with the quote prefix in a workbook.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

#: Text cells that start like a formula but cannot be one, written as they are: a lone
#: ``-`` (the unit of a dimensionless figure, and the mark of "none").
NOT_FORMULAS = frozenset({"-"})

#: Fewest significant digits a rounded value keeps.
SIGNIFICANT = 6

#: Decimals kept per unit (the unit's first word, lower case), see :func:`unit_decimals`.
RESOLUTION: dict[str, int] = {
    "usd": 2, "kw": 3, "kwh": 3, "mw": 6, "mwh": 6, "tco2": 6, "tokens/s": 3,
    "tokens/kwh": 3, "tokens/month": 0, "tokens": 0, "racks": 6, "units": 6,
    "positions": 6, "fraction": 6, "ratio": 6, "-": 6,
}
#: Decimals of columns whose precision is needed beyond their unit's.
COLUMN_DECIMALS: dict[str, int] = {"discount_factor": 12}
#: Units of counted things: a column with one of them whose values are all whole
#: numbers is written as integers.
COUNT_UNITS = ("racks", "units", "positions", "count", "tokens")
#: Fallback: significant digits of a value whose unit has no resolution.
FALLBACK_SIGNIFICANT = 10

_YEAR = re.compile(r"^\d{4}$")
_PER_ROW_UNIT = {"see unit column": "unit", "see unit": "unit",
                 "see shadow_unit": "shadow_unit"}


def unit_decimals(unit: str | None, col: str = "") -> int | None:
    """Decimals kept for a value of ``unit`` (None: only significant digits count).

    Parameters
    ----------
    unit : str
        A unit as in ``df.attrs["units"]`` or a table's unit column, e.g. ``"kW"``,
        ``"USD (present value)"``, ``"tokens/s (peak)"``, ``"USD per MW"``.
    col : str
        Column name (see :data:`COLUMN_DECIMALS`).
    """
    if col in COLUMN_DECIMALS:
        return COLUMN_DECIMALS[col]
    if not unit:
        return None
    first = str(unit).strip().lower().split(" ")[0].rstrip(",")
    if first in RESOLUTION:
        return RESOLUTION[first]
    if first.startswith("usd"):
        return RESOLUTION["usd"]
    return None


def round_value(x: Any, unit: str | None = None, col: str = "") -> Any:
    """Round one number for output (see the module docstring); other values pass through.

    Parameters
    ----------
    x : Any
    unit : str, optional
    col : str, optional

    Returns
    -------
    float or the input
        Rounded float; NaN, infinities, integers, booleans and non-numbers unchanged.
    """
    if isinstance(x, bool | np.bool_) or not isinstance(x, float | np.floating):
        return x
    x = float(x)
    if x == 0.0 or not math.isfinite(x):
        return x
    magnitude = math.floor(math.log10(abs(x)))
    dec = unit_decimals(unit, col)
    sig = SIGNIFICANT if dec is not None else FALLBACK_SIGNIFICANT
    keep = sig - 1 - magnitude
    dec = keep if dec is None else max(dec, keep)
    if dec > 300:
        return x
    return round(x, dec)


def _is_count(unit: str | None) -> bool:
    return bool(unit) and str(unit).strip().lower() in COUNT_UNITS


def _whole(values: pd.Series) -> bool:
    v = pd.to_numeric(values, errors="coerce").dropna()
    return len(v) > 0 and bool(np.all(np.abs(v - np.round(v)) < 1e-6))


def _as_int(x: Any) -> Any:
    if isinstance(x, float | np.floating) and math.isfinite(x) and abs(x - round(x)) < 1e-6:
        return int(round(x))
    return x


def is_year_column(values: pd.Series) -> bool:
    """All values are yearly period labels (``"2026"``)."""
    v = [str(x) for x in values if not (x is None or (isinstance(x, float) and x != x))]
    return bool(v) and all(_YEAR.match(s) for s in v)


def tidy_table(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of a result table ready to be written.

    - float columns rounded per unit (``df.attrs["units"]``; a column whose unit is
      ``"see unit column"`` is rounded row by row with the row's unit);
    - count columns (unit racks, units, positions) whose values are all whole numbers
      become integers (nullable ``Int64`` when some are missing), and so do whole
      values of a per-row unit that is a count (e.g. the ``racks_bought`` KPI);
    - a ``period`` column of yearly labels becomes integers (``"2026"`` -> 2026);
      quarterly labels (``"2026q1"``) stay text, which sorts in time order.

    Units and other ``attrs`` are kept.

    Parameters
    ----------
    df : DataFrame

    Returns
    -------
    DataFrame
    """
    out = df.copy()
    units = dict(df.attrs.get("units", {}))
    for col in out.columns:
        s = out[col]
        unit = units.get(col)
        if col == "period" and is_year_column(s):
            ints = [None if v is None or (isinstance(v, float) and v != v) else int(v)
                    for v in s]
            # where some rows have no period (shadow prices of a horizon-wide limit) the
            # column holds ints and None (object): a numeric one would write 2026.0
            out[col] = (pd.Series(ints, index=out.index, dtype=object) if s.isna().any()
                        else pd.Series(ints, index=out.index, dtype="int64"))
            continue
        row_unit_col = _PER_ROW_UNIT.get(str(unit)) if unit else None
        if row_unit_col and row_unit_col in out.columns and (
                pd.api.types.is_float_dtype(s) or s.dtype == object):
            vals = []
            for v, u in zip(s, out[row_unit_col], strict=True):
                r = round_value(v, u, col)
                vals.append(_as_int(r) if _is_count(u) else r)
            out[col] = pd.Series(vals, index=out.index, dtype=object)
            continue
        if pd.api.types.is_float_dtype(s):
            if _is_count(unit) and _whole(s):
                r = np.round(s.astype(float))
                out[col] = r.astype("Int64") if r.isna().any() else r.astype("int64")
            else:
                out[col] = [round_value(v, unit, col) for v in s]
                out[col] = out[col].astype(float)
    out.attrs = {k: (dict(v) if isinstance(v, dict) else v) for k, v in df.attrs.items()}
    return out


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return text.strip() == text


def csv_safe(value: Any) -> Any:
    """``value`` as a CSV cell that spreadsheet programs read as text, not a formula.

    A string that starts with ``=``, ``+``, ``-``, ``@`` (or a tab or carriage return)
    and is not a plain number gets a leading ``'``: ``=HYPERLINK("http://x","y")``
    becomes ``'=HYPERLINK("http://x","y")``, which Excel and LibreOffice show as
    that text instead of evaluating it. ``-12.5`` and ``+3`` stay as they are;
    non-strings are returned unchanged, and so is a lone ``-`` (:data:`NOT_FORMULAS`).
    """
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _is_number(value) \
            and value not in NOT_FORMULAS:
        return "'" + value
    return value


def csv_ready(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`tidy_table` of ``df`` with every text cell and header made :func:`csv_safe`."""
    out = tidy_table(df)
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col]):
            out[col] = pd.Series([csv_safe(v) for v in out[col]], index=out.index,
                                 dtype=object)
    out.columns = [csv_safe(str(c)) for c in out.columns]
    return out


def write_csv(df: pd.DataFrame, path: Path | str) -> Path:
    """Write a result table to a CSV file, atomically (temporary file + rename).

    The table goes through :func:`csv_ready`: rounded at the source, integer counts,
    yearly periods as numbers, text cells safe for spreadsheets. The file gets the
    usual permissions (``0o666`` less the umask).

    Parameters
    ----------
    df : DataFrame
    path : path

    Returns
    -------
    Path
    """
    from dcplan.yamlio import atomic_path

    path = Path(path)
    ready = csv_ready(df)
    with atomic_path(path, suffix=".csv") as tmp:
        ready.to_csv(tmp, index=False)
    return path
