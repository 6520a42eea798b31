"""Performance model: goodput tokens/s and power per rack for a model and workload.

CONTRACT (used by the planner; keep these names and meanings):

``rack_performance(catalog, rack_id, model_id, workload_id, precision=None,
calibration=None) -> RackPerf``
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RackPerf:
    """Operating point of one rack serving one workload under its SLO.

    Attributes
    ----------
    fits : bool
        False when the model cannot be served on this rack (see ``reason``).
    reason : str
        Why it does not fit (empty when it fits).
    goodput_tokens_per_s : float
        Input + output tokens/s of requests that meet the SLO, per rack [tokens/s]
        (aggregated mode; for disaggregated mode the blended rate of a rack split in
        the optimal prefill:decode ratio).
    output_tokens_per_s : float
        Output (generated) tokens/s per rack [tokens/s].
    prefill_tokens_per_s : float
        Disaggregated mode: input tokens/s one rack prefills when used as a prefill
        pool [tokens/s]; equals 0 in aggregated mode.
    decode_tokens_per_s : float
        Disaggregated mode: output tokens/s one rack decodes when used as a decode
        pool [tokens/s]; equals 0 in aggregated mode.
    power_kw : float
        Rack IT power at this operating point [kW].
    idle_power_kw : float
        Rack IT power when idle [kW].
    """

    fits: bool
    reason: str
    goodput_tokens_per_s: float
    output_tokens_per_s: float
    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    power_kw: float
    idle_power_kw: float


def rack_performance(catalog, rack_id, model_id, workload_id, precision=None, calibration=None):
    """Return the :class:`RackPerf` of ``rack_id`` serving ``workload_id`` with ``model_id``."""
    raise NotImplementedError
