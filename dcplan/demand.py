"""Demand in the units people have: per request.

Planners and the public think in requests (a chat turn, an agent step, a document), the
planner in tokens. This module converts plan figures to per-request figures.

Units: tokens (input and output counted separately), kWh, Wh.
"""

from __future__ import annotations

import math


def energy_per_request_wh(tokens_per_kwh: float, input_tokens: float,
                          output_tokens: float) -> float:
    """Facility energy of one request [Wh].

    Parameters
    ----------
    tokens_per_kwh : float
        Input + output tokens served per kWh of facility energy [tokens/kWh] (the plan's
        ``tokens_per_kwh`` KPI, which counts IT, network, cooling and power-distribution
        losses, and idle or spare racks).
    input_tokens, output_tokens : float
        Mean prompt and generated tokens per request [tokens] (a workload's
        ``input_tokens_mean`` and ``output_tokens_mean``).

    Returns
    -------
    float
        ``(input + output) / tokens_per_kwh x 1000`` [Wh per request]. It spreads the
        energy evenly over input and output tokens, as the KPI does; a mix with a
        different input share per token costs more or less than the average.
    """
    for name, v in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
        if not (math.isfinite(v) and v >= 0):
            raise ValueError(f"{name} must be a finite number >= 0 (got {v!r})")
    if not (math.isfinite(tokens_per_kwh) and tokens_per_kwh > 0):
        raise ValueError(f"tokens_per_kwh must be a finite number > 0 (got {tokens_per_kwh!r})")
    return (input_tokens + output_tokens) / tokens_per_kwh * 1000.0
