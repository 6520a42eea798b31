"""Speculative decoding: tokens accepted per verification step, and its cost.

A step drafts ``n`` tokens per sequence (MTP head or draft model), then the target
model verifies the ``n + 1`` positions in one forward pass. With per-token acceptance
probability ``a`` (a draft token is kept only if every earlier one was), the expected
tokens produced per step are::

    E(a, n) = 1 + a + a^2 + ... + a^n = (1 - a^(n+1)) / (1 - a)        (n + 1 at a = 1)

so ``E(0, n) = 1``: with nothing accepted a step still yields one token but costs the
verification of ``n + 1`` positions plus ``n`` draft passes, hence never helps.
Time per output token: ``(t_verify(n+1) + n * draft_cost_frac * t_step) / E(a, n)``.
"""

from __future__ import annotations

import numpy as np


def expected_tokens(acceptance, draft_tokens) -> np.ndarray:
    """Expected tokens per verification step ``(1 - a^(n+1)) / (1 - a)`` [tokens].

    Parameters
    ----------
    acceptance : float or array
        Per-token acceptance probability of drafted tokens [-] (0..1).
    draft_tokens : int or array
        Tokens drafted per step [tokens].

    Returns
    -------
    ndarray
        Output tokens per verification step [tokens].
    """
    a = np.asarray(acceptance, dtype=float)
    n = np.asarray(draft_tokens, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        geo = (1.0 - a ** (n + 1.0)) / (1.0 - a)
    return np.where(a >= 1.0, n + 1.0, geo)
