"""A Gaussian mixture fitted to draws by EM, its number of components chosen by BIC: a reference that follows a
curved or thin posterior (a ring, a banana) where one Gaussian or Student-t over the whole mode leaves importance
weights with a small ESS.

EM (Dempster, Laird & Rubin 1977) for ``q(x) = sum_k pi_k N(x; mu_k, S_k)`` on draws ``x_1..x_n``: responsibilities
``r_ik = pi_k N(x_i; mu_k, S_k) / q(x_i)``, then ``n_k = sum_i r_ik``, ``pi_k = n_k / n``,
``mu_k = sum_i r_ik x_i / n_k``, ``S_k = sum_i r_ik (x_i - mu_k)(x_i - mu_k)' / n_k + floor I``. Starts from
k-means++ seeds (Arthur & Vassilvitskii 2007). The number of components doubles, 1, 2, 4, ..., while the Bayesian
information criterion ``BIC = -2 sum_i log q(x_i) + p log n`` (``p = K (1 + d + d (d + 1) / 2) - 1`` free
numbers) falls, up to ``max_components`` and at most one component per ``DRAWS_PER_NUMBER * (1 + d + d (d + 1) / 2)``
draws. Draws from a chain are correlated, so BIC's ``n`` overstates the information; the cap on draws per number
keeps the fit from chasing noise, and the fitted mixture is only ever a reference: importance sampling from it is
unbiased whatever it is, and its weights are checked before they are trusted.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MixtureFit", "fit_mixture", "mixture_by_bic"]

DRAWS_PER_NUMBER = 10  # draws per free number of a component, at least
MAX_COMPONENTS = 32  # components per fitted mixture, at most
EM_ITERATIONS = 100  # EM steps per fit, at most (it stops earlier once the mean log density gains < EM_TOLERANCE)
EM_TOLERANCE = 1e-4  # nats per draw: a reference needs no closer fit


class MixtureFit:
    """A fitted Gaussian mixture: ``weights (K,)``, ``means (K, d)``, ``covs (K, d, d)``, its mean log density on
    the draws it was fitted to and its BIC."""

    def __init__(self, weights, means, covs, mean_log_density: float, n: int):
        self.weights, self.means, self.covs = weights, means, covs
        self.mean_log_density = float(mean_log_density)
        K, d = means.shape
        self.n_numbers = K * (1 + d + d * (d + 1) // 2) - 1
        self.bic = -2.0 * n * self.mean_log_density + self.n_numbers * np.log(n)

    @property
    def n_components(self) -> int:
        return int(self.weights.size)


def _component_log_densities(XT, weights, means, covs) -> np.ndarray:
    """``log pi_k + log N(x_i; mu_k, S_k)``, shape ``(n, K)``; ``XT (d, n)`` the draws as columns, ``covs``
    positive definite."""
    d = XT.shape[0]
    chol = np.linalg.cholesky(covs)
    white = np.linalg.inv(chol) @ _gaps(XT, means)  # (K, d, n): L^-1 (x - mu) for every draw
    log_det = np.sum(np.log(np.diagonal(chol, axis1=1, axis2=2)), axis=1)
    return (np.log(weights) - log_det - 0.5 * d * np.log(2 * np.pi))[None] - 0.5 * np.sum(white * white, axis=1).T


def _gaps(XT, means) -> np.ndarray:
    """``x_i - mu_k`` laid out ``(K, d, n)``, the draws along the last axis."""
    return XT[None, :, :] - means[:, :, None]


def _log_sum(parts) -> np.ndarray:
    """``log sum_k exp(parts[:, k])`` row by row (rows with a finite entry)."""
    top = np.max(parts, axis=1)
    return top + np.log(np.sum(np.exp(parts - top[:, None]), axis=1))


def _seeds(X, K: int, rng) -> np.ndarray:
    """k-means++: the first seed a draw at random, each next one a draw chosen with probability proportional to its
    squared distance from the nearest seed so far."""
    seeds = [X[rng.integers(X.shape[0])]]
    nearest = np.sum((X - seeds[0]) ** 2, axis=1)
    for _ in range(K - 1):
        total = nearest.sum()
        pick = rng.integers(X.shape[0]) if not total > 0 else rng.choice(X.shape[0], p=nearest / total)
        seeds.append(X[pick])
        nearest = np.minimum(nearest, np.sum((X - X[pick]) ** 2, axis=1))
    return np.array(seeds)


def fit_mixture(X, K: int, rng: np.random.Generator, *, floor: float | None = None) -> MixtureFit:
    """EM for a ``K``-component Gaussian mixture on the rows of ``X (n, d)`` from k-means++ seeds (module
    docstring). ``floor`` (default ``1e-6`` times the mean variance of ``X``'s coordinates) is added to every
    covariance's diagonal, so that no component collapses onto a few repeated draws."""
    X = np.asarray(X, dtype=float)
    XT = np.ascontiguousarray(X.T)
    n, d = X.shape
    spread = np.atleast_2d(np.cov(X, rowvar=False)) if n > 1 else np.eye(d)
    floor = 1e-6 * max(np.trace(spread) / d, 1e-12) if floor is None else float(floor)
    means = _seeds(X, K, rng)
    covs = np.repeat(spread[None] / K ** (2.0 / d) + floor * np.eye(d), K, axis=0)
    weights = np.full(K, 1.0 / K)
    previous = -np.inf
    for _ in range(EM_ITERATIONS):
        parts = _component_log_densities(XT, weights, means, covs)
        log_q = _log_sum(parts)
        current = float(np.mean(log_q))
        r = np.exp(parts - log_q[:, None])
        n_k = r.sum(axis=0)
        alive = n_k > d + 1  # a component with fewer draws than it has coordinates is dropped (not the last)
        if not alive.any():
            alive = n_k == n_k.max()
        if not alive.all():
            r, n_k, means = r[:, alive], n_k[alive], means[alive]
        weights = n_k / n_k.sum()
        means = (r.T @ X) / n_k[:, None]
        gaps = _gaps(XT, means)
        covs = (gaps * r.T[:, None, :]) @ np.swapaxes(gaps, 1, 2) / n_k[:, None, None] + floor * np.eye(d)
        if current - previous < EM_TOLERANCE and alive.all():
            break
        previous = current
    log_q = _log_sum(_component_log_densities(XT, weights, means, covs))
    return MixtureFit(weights, means, covs, float(np.mean(log_q)), n)


def mixture_by_bic(X, rng: np.random.Generator, *, max_components: int = MAX_COMPONENTS) -> MixtureFit:
    """The mixture of 1, 2, 4, ... components with the lowest BIC, doubling while BIC falls (module docstring);
    at most ``max_components`` and one component per ``DRAWS_PER_NUMBER`` draws per free number of a component."""
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    per_component = 1 + d + d * (d + 1) // 2
    cap = max(1, min(int(max_components), n // (DRAWS_PER_NUMBER * per_component)))
    best = fit_mixture(X, 1, rng)  # (one component: EM's first step is the sample mean and covariance)
    K = 2
    while K <= cap:
        fit = fit_mixture(X, K, rng)
        if not fit.bic < best.bic:
            break
        best, K = fit, 2 * K
    return best
