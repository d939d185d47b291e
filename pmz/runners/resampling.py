"""Resampling schemes for sequential Monte Carlo: ``n`` indices drawn so that particle ``i`` gets ``N_i`` copies
with ``E[N_i] = n w_i`` (unbiased; Douc, Cappe & Moulines 2005).

* ``"systematic"`` (Carpenter, Clifford & Fearnhead 1999): one uniform ``u``, points ``(j + u) / n``; the
  lowest variance in practice (shared with the tuning pilot: :func:`pmz.weights.systematic_resample`).
* ``"residual"`` (Liu & Chen 1998): ``floor(n w_i)`` copies deterministically, the remaining
  ``n - sum floor(n w_i)`` by multinomial draws with probabilities proportional to the residuals
  ``n w_i - floor(n w_i)``.
* ``"stratified"``: one uniform per stratum, points ``(j + u_j) / n``.
* ``"multinomial"``: ``n`` independent draws (the reference scheme, highest variance).

All take log weights (any normalisation, ``-inf`` for zero weight) and a ``numpy.random.Generator``.
"""

from __future__ import annotations

import numpy as np

from ..weights import inverse_cdf, normalized_weights, systematic_resample

__all__ = ["RESAMPLING_SCHEMES", "resample", "residual_resample", "stratified_resample", "multinomial_resample"]


def stratified_resample(rng: np.random.Generator, log_w, n: int | None = None) -> np.ndarray:
    """Indices of ``n`` particles by stratified resampling: one uniform per stratum ``[j/n, (j+1)/n)``."""
    w = normalized_weights(log_w)
    n = w.size if n is None else int(n)
    return inverse_cdf(w, (np.arange(n) + rng.uniform(size=n)) / n)


def multinomial_resample(rng: np.random.Generator, log_w, n: int | None = None) -> np.ndarray:
    """Indices of ``n`` independent draws from the weights (sorted)."""
    w = normalized_weights(log_w)
    n = w.size if n is None else int(n)
    return inverse_cdf(w, np.sort(rng.uniform(size=n)))


def residual_resample(rng: np.random.Generator, log_w, n: int | None = None) -> np.ndarray:
    """Indices of ``n`` particles by residual resampling: ``floor(n w_i)`` copies, the rest multinomial on the
    residuals."""
    w = normalized_weights(log_w)
    n = w.size if n is None else int(n)
    expected = n * w
    copies = np.floor(expected).astype(np.int64)
    n_rest = n - int(copies.sum())
    if n_rest > 0:
        residual = expected - copies
        copies += rng.multinomial(n_rest, residual / residual.sum())
    return np.repeat(np.arange(w.size), copies)


RESAMPLING_SCHEMES = {
    "systematic": systematic_resample,
    "residual": residual_resample,
    "stratified": stratified_resample,
    "multinomial": multinomial_resample,
}


def resample(rng: np.random.Generator, log_w, n: int | None = None, scheme: str = "systematic") -> np.ndarray:
    """Indices of ``n`` (default ``len(log_w)``) particles drawn by ``scheme`` (see the module docstring).

    >>> rng = np.random.default_rng(0)
    >>> np.bincount(resample(rng, np.log([0.5, 0.25, 0.25]), 4, "residual"), minlength=3).tolist()
    [2, 1, 1]
    """
    if scheme not in RESAMPLING_SCHEMES:
        raise ValueError(f"pmz: unknown resampling scheme {scheme!r}; choose one of {sorted(RESAMPLING_SCHEMES)}")
    return RESAMPLING_SCHEMES[scheme](rng, log_w, n)
