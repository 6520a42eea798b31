"""Plain-text tables for terminals and text reports."""

from __future__ import annotations

from typing import Any


def format_table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    """Format ``rows`` as a plain-text table with aligned columns."""
    if not rows:
        return "(none)"
    columns = columns or list(rows[0])

    def cell(v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:,.4g}" if abs(v) < 1e4 else f"{v:,.0f}"
        return str(getattr(v, "value", v))

    grid = [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(g[i]) for g in grid)) for i, c in enumerate(columns)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    for g in grid:
        out.append("  ".join(v.ljust(w) for v, w in zip(g, widths, strict=True)))
    return "\n".join(out)
