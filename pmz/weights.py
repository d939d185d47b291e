"""Importance-weight arithmetic shared by runners, tuning and estimators (all in log space).

* ``ess(log_w) = (sum w)^2 / sum w^2`` (Kish's effective sample size)
* ``log_mean_weight(log_w) = logsumexp(log_w) - log M``
* systematic resampling (Carpenter, Clifford & Fearnhead 1999): one uniform ``u``, points ``(i + u) / M``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["logsumexp", "ess", "log_mean_weight", "log_mean_weight_se", "normalized_weights", "systematic_resample"]


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
    return float(np.exp(2 * logsumexp(lw) - logsumexp(2 * lw)))


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


def systematic_resample(rng: np.random.Generator, log_w, n: int | None = None) -> np.ndarray:
    """Indices of ``n`` (default ``len(log_w)``) particles drawn by systematic resampling."""
    w = normalized_weights(log_w)
    n = w.size if n is None else int(n)
    positions = (rng.uniform() + np.arange(n)) / n
    return np.minimum(np.searchsorted(np.cumsum(w), positions), w.size - 1)
