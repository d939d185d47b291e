"""What every plot of pmz shares: the unit label, the writing of an estimate with its se, and a new figure's axes.

Numbers are written with as many decimals as their standard error needs (:func:`format_log_z`): an estimate of
-301.7043 with se 0.0013 is never rounded to "-302".
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["NATS", "format_log_z"]

NATS = "(nats)"  # the unit of log Z, log Bayes factors and work on every axis


def _decimals(se: float) -> int:
    """Decimals that show ``se`` with two significant digits (at least 1, at most 8; 3 for a missing se)."""
    if not (np.isfinite(se) and se > 0):
        return 3
    return int(min(8, max(1, 1 - math.floor(math.log10(se)))))


def format_log_z(log_z: float, se: float, *, signed: bool = False) -> str:
    """``"log_z ± se"`` with as many decimals as the se needs (two significant digits of the se).

    Examples
    --------
    >>> format_log_z(-301.70431950, 0.0013282)
    '-301.7043 ± 0.0013'
    >>> format_log_z(-8.42, 0.31, signed=True)
    '-8.42 ± 0.31'
    >>> format_log_z(2.0, float("nan"), signed=True)
    '+2.000 ± nan'
    """
    d = _decimals(se)
    sign = "+" if signed else ""
    return f"{log_z:{sign}.{d}f} ± {se:.{d}f}"


def _figure_axes(nrows=1, ncols=1, figsize=(6.4, 3.8)):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(nrows, ncols, figsize=figsize, layout="constrained", squeeze=False)
    return axes.ravel() if nrows * ncols > 1 else axes[0, 0]
