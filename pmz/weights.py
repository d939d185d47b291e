"""Importance-weight arithmetic shared by runners, tuning and estimators (all in log space).

* ``ess(log_w) = (sum w)^2 / sum w^2`` (Kish's effective sample size)
* ``log_mean_weight(log_w) = logsumexp(log_w) - log M``
* ``log_cess_fraction(log_w, log_increment)``: the conditional ESS fraction (Zhou, Johansen & Aston 2016) of
  normalised weights ``W`` moved on by increments ``w``, ``CESS / n = (sum_i W_i w_i)^2 / sum_i W_i w_i^2``
* systematic resampling (Carpenter, Clifford & Fearnhead 1999): one uniform ``u``, points ``(i + u) / M``.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "logsumexp",
    "ess",
    "log_cess_fraction",
    "log_mean_weight",
    "log_mean_weight_se",
    "normalized_weights",
    "normalized_log_weights",
    "inverse_cdf",
    "systematic_resample",
]


def logsumexp(a, axis=None):
    """``log sum exp(a)`` along ``axis``, stable for -inf entries (a small, fast version for 1-d/2-d weights)."""
    a = np.asarray(a, dtype=float)
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return out.item() if axis is None else np.squeeze(out, axis=axis)


def ess(log_w) -> float:
    """Kish effective sample size of log weights (0 if no weight is finite)."""
    log_w = np.asarray(log_w, dtype=float)
    finite = np.isfinite(log_w)
    if not finite.any():
        return 0.0
    lw = log_w[finite]
    if np.ptp(lw) == 0:  # equal weights: exactly the number of them (no round-off below it)
        return float(lw.size)
    return float(np.exp(2 * logsumexp(lw) - logsumexp(2 * lw)))


def log_cess_fraction(log_w, log_increment, axis=None):
    """``log(CESS / n) = 2 log sum_i W_i w_i - log sum_i W_i w_i^2`` for normalised log weights ``log_w`` and log
    incremental weights ``log_increment`` (broadcast together; sums along ``axis``)."""
    a = log_w + log_increment
    return 2.0 * logsumexp(a, axis=axis) - logsumexp(a + log_increment, axis=axis)


def log_mean_weight(log_w) -> float:
    """``log((1/M) sum_i w_i)``."""
    log_w = np.asarray(log_w, dtype=float)
    return float(logsumexp(log_w) - np.log(log_w.size))


def log_mean_weight_se(log_w) -> float:
    """Delta-method standard error of ``log_mean_weight``: ``sqrt((M / ESS - 1) / (M - 1))``."""
    M = np.asarray(log_w).size
    return float(np.sqrt(max(M / ess(log_w) - 1.0, 0.0) / max(M - 1, 1)))


def normalized_weights(log_w) -> np.ndarray:
    """``w_i / sum_j w_j`` computed stably."""
    log_w = np.asarray(log_w, dtype=float)
    return np.exp(log_w - logsumexp(log_w))


def normalized_log_weights(log_w) -> np.ndarray:
    """``log(w_i / sum_j w_j)``, NaN treated as ``-inf`` (no weight)."""
    log_w = np.asarray(log_w, dtype=float)
    log_w = np.where(np.isnan(log_w), -np.inf, log_w)
    return log_w - logsumexp(log_w)


def inverse_cdf(w, points) -> np.ndarray:
    """Indices ``i`` with ``sum_{j<i} w_j <= u < sum_{j<=i} w_j`` for each point ``u`` of ``points`` (in [0, 1))."""
    return np.minimum(np.searchsorted(np.cumsum(w), points), w.size - 1)


def systematic_resample(rng: np.random.Generator, log_w, n: int | None = None) -> np.ndarray:
    """Indices of ``n`` (default ``len(log_w)``) particles drawn by systematic resampling."""
    w = normalized_weights(log_w)
    n = w.size if n is None else int(n)
    return inverse_cdf(w, (rng.uniform() + np.arange(n)) / n)
