"""The next temperature of an adaptive schedule, by conditional effective sample size (Zhou, Johansen & Aston 2016).

Moving weighted particles from ``beta`` to ``beta'`` multiplies their weights by ``exp((beta' - beta) U)``; the
next temperature is the ``beta'`` at which the conditional ESS of these weights falls to a target fraction
(:func:`next_beta_by_cess`). SMC's tempering sequence and the adaptive pilot of the annealing methods use it.

Reference
---------
Zhou, Y., Johansen, A. M. and Aston, J. A. D. (2016). Toward automatic model comparison: an adaptive sequential
Monte Carlo approach. Journal of Computational and Graphical Statistics 25, 701-726.
"""

from __future__ import annotations

import numpy as np

from ..weights import log_cess_fraction, normalized_log_weights

__all__ = ["next_beta_by_cess"]


def next_beta_by_cess(beta: float, log_w, U, target: float, *, beta_max: float = 1.0, tol: float = 1e-10) -> float:
    """Next inverse temperature of an adaptive schedule: the ``beta'`` whose conditional ESS fraction is ``target``.

    Moving particles with normalised weights ``W_i`` from ``beta`` to ``beta'`` multiplies their weights by
    ``w_i = exp((beta' - beta) U_i)``. The conditional effective sample size (Zhou, Johansen & Aston 2016)

        CESS(beta') = n (sum_i W_i w_i)^2 / sum_i W_i w_i^2

    measures how well the current weighted particles represent ``p_beta'``; ``CESS / n = 1 / (1 + CV_W^2[w])``
    is 1 at ``beta' = beta`` and non-increasing in ``beta'`` (``log E_W[e^{2 d U}] - 2 log E_W[e^{d U}]`` has
    derivative ``2 (K'(2d) - K'(d)) >= 0``, ``K`` the cumulant generating function of ``U`` under ``W``). The
    root of ``CESS(beta') / n = target`` in ``(beta, beta_max]`` is found by bisection to ``tol``; the upper
    end of the final bracket is returned (strictly above ``beta``, with ``CESS / n`` within the bracket's
    tolerance of ``target``). If ``CESS(beta_max) / n >= target``, ``beta_max`` is returned. All sums are
    computed in log space.

    Parameters
    ----------
    beta : float
        Current inverse temperature.
    log_w : array (n,)
        Current particle log weights (normalised or not; ``-inf`` for particles without weight).
    U : array (n,)
        ``U = log f1 - log f0`` at the particles (NaN is treated as ``-inf``: no weight after the move).
    target : float
        Wanted ``CESS / n`` in ``(0, 1)``.
    beta_max : float
        Largest allowed next inverse temperature (default 1).
    tol : float
        Width of the final bisection bracket in ``beta``.
    """
    log_w = np.asarray(log_w, dtype=float)
    U = np.asarray(U, dtype=float)
    if log_w.ndim != 1 or log_w.shape != U.shape:
        raise ValueError(f"log_w and U must be 1-d arrays of the same length, got {log_w.shape} and {U.shape}")
    if not 0 < target < 1:
        raise ValueError(f"target must lie in (0, 1), got {target}")
    if not beta < beta_max:
        raise ValueError(f"beta_max must exceed beta, got beta={beta}, beta_max={beta_max}")
    if not np.any(np.isfinite(log_w) & np.isfinite(U)):
        raise ValueError("pmz: no particle has a finite weight and a finite U")
    U = np.where(np.isnan(U), -np.inf, U)
    log_W = normalized_log_weights(log_w)
    log_target = np.log(target)

    def above_target(b):
        value = log_cess_fraction(log_W, (b - beta) * U)
        return np.isfinite(value) and value >= log_target

    if above_target(beta_max):
        return float(beta_max)
    lo, hi = float(beta), float(beta_max)
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if above_target(mid):
            lo = mid
        else:
            hi = mid
    return hi
