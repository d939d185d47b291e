"""Diagnostics the default route decides by: split R-hat over many chains and the Pareto k-hat of importance ratios.

* :func:`split_rhat` (Gelman et al., BDA3 section 11.4): each chain is split in halves; with ``m`` half-chains of
  length ``n``, ``W`` the mean within-half variance and ``B/n`` the variance of the half-chain means,
  ``R-hat = sqrt(((n - 1)/n W + B/n) / W)``. Computed for many quantities at once (vectorised), on the values and
  on their folded ranks' proxy ``|x - median|`` (which catches chains that differ in spread only).
* :func:`pareto_khat` (Vehtari, Simpson, Gelman, Yao & Gabry 2024, PSIS): the shape of a generalised Pareto
  distribution fitted (Zhang & Stephens 2009, with the weakly informative prior of the PSIS paper) to the
  ``M = min(0.2 S, 3 sqrt(S))`` largest ratios. ``k < 0.5``: finite variance, importance sampling is fine;
  ``k > 0.7``: the variance estimate of an importance-sampling estimate is not to be trusted.
"""

from __future__ import annotations

import numpy as np

__all__ = ["split_rhat", "pareto_khat"]


def _rhat(draws):
    chains, n, _ = draws.shape
    half = n // 2
    if half < 2:
        return np.full(draws.shape[2], np.nan)
    halves = np.concatenate([draws[:, :half], draws[:, n - half :]], axis=0)
    means = halves.mean(axis=1)
    within = halves.var(axis=1, ddof=1).mean(axis=0)
    between = half * means.var(axis=0, ddof=1)
    var_plus = (half - 1) / half * within + between / half
    with np.errstate(divide="ignore", invalid="ignore"):
        rhat = np.sqrt(var_plus / within)
    return np.where(within > 0, rhat, np.where(between > 0, np.inf, 1.0))


def split_rhat(draws) -> np.ndarray:
    """Split R-hat of every quantity in ``draws (chain, draw, k)``: the larger of the values' and the folded
    values' (``|x - median|``) R-hat, shape ``(k,)``. Non-finite draws give ``inf``."""
    draws = np.asarray(draws, dtype=float)
    if draws.ndim == 2:
        draws = draws[:, :, None]
    finite = np.all(np.isfinite(draws), axis=(0, 1))
    safe = np.where(np.isfinite(draws), draws, 0.0)
    folded = np.abs(safe - np.median(safe, axis=(0, 1)))
    rhat = np.maximum(_rhat(safe), _rhat(folded))
    return np.where(finite, rhat, np.inf)


def _gpd_fit(tail):
    """Generalised Pareto shape and scale for exceedances ``tail > 0`` (Zhang & Stephens 2009, PSIS prior)."""
    x = np.sort(tail)
    n = x.size
    prior = 3.0
    m = 30 + int(np.sqrt(n))
    quartile = x[int(np.floor(n / 4 + 0.5)) - 1]
    b = 1.0 / x[-1] + (1 - np.sqrt(m / (np.arange(1, m + 1) - 0.5))) / (prior * quartile)
    k = -np.mean(np.log1p(-b[:, None] * x[None, :]), axis=1)  # Zhang & Stephens' sign: k = -shape
    log_lik = n * (np.log(b / k) + k - 1)
    weights = np.exp(log_lik - log_lik.max())
    weights /= weights.sum()
    b_hat = np.sum(b * weights)
    k_hat = np.mean(np.log1p(-b_hat * x))
    sigma = -k_hat / b_hat
    # PSIS's weakly informative prior pulls k towards 0.5 (a = 10 pseudo-observations)
    k_hat = (n * k_hat + 10 * 0.5) / (n + 10)
    return k_hat, sigma


def pareto_khat(log_ratios) -> float:
    """Pareto k-hat of the right tail of ``exp(log_ratios)`` (NaN/inf-safe; ``inf`` if any ratio is +inf).

    The tail is the ``M = min(0.2 S, 3 sqrt(S))`` largest of ``S`` ratios. Where those ``M + 1`` span more than
    700 nats, fewer than ``M + 1`` draws carry all the weight (the smaller exceedances underflow): ``inf``. Exact
    ties among them (repeated draws, e.g. resampled ones) are broken by ``1e-9`` nats in sorted order, so that the
    fit sees distinct exceedances instead of zeros. NaN for fewer than 25 ratios (under 5 exceedances to fit).
    """
    r = np.asarray(log_ratios, dtype=float)
    if np.any(r == np.inf) or np.any(np.isnan(r)):
        return np.inf
    r = r[np.isfinite(r)]
    S = r.size
    if S < 20:
        return np.nan
    M = int(min(0.2 * S, 3 * np.sqrt(S)))
    r = np.sort(r)
    if r[-1] - r[-M - 1] > 700.0:
        return np.inf
    if np.any(np.diff(r[-M - 1 :]) == 0):
        r = r + 1e-9 * np.arange(S)
    cutoff = r[-M - 1]
    tail = np.exp(r[-M:] - r[-1]) - np.exp(cutoff - r[-1])
    if tail.size < 5:
        return np.nan  # too few exceedances to fit (20-24 ratios)
    if not np.all(tail > 0):
        return np.inf  # exceedances lost to underflow: the largest ratio carries the weight
    k, _ = _gpd_fit(tail)
    return float(k)
