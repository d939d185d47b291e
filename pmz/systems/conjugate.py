"""Conjugate PyMC models whose evidence log p(y) is known in closed form.

Each builder simulates a data set from the model's prior predictive
distribution (with ``numpy.random.default_rng(seed)``), wraps it in a PyMC
model and returns a :class:`KnownTruth` holding the model, the exact log
evidence and a short name. They are the reference problems against which
the evidence estimators in pmz are tested.

Examples
--------
>>> from pmz.systems import normal_mean
>>> system = normal_mean(n_obs=10, seed=1)
>>> system.model, system.log_z          # doctest: +SKIP
>>> model, log_z, name = normal_mean()  # tuple unpacking needs three names
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pymc as pm
from scipy.special import betaln, gammaln

from ..records import KnownTruth

__all__ = [
    "KnownTruth",
    "ALL_SYSTEMS",
    "normal_mean",
    "linear_regression",
    "nig_regression",
    "beta_binomial",
    "poisson_gamma",
    "correlated_gaussian",
]

LOG_2PI = float(np.log(2.0 * np.pi))


def _check_positive(**values: float) -> None:
    for key, value in values.items():
        if not value > 0:
            raise ValueError(f"{key} must be positive, got {value!r}")


def _float64(*values: float) -> tuple[np.float64, ...]:
    """Hyperparameters as float64 scalars.

    pytensor turns a Python float such as 1.5 into a float32 constant when it
    is exactly representable, and then evaluates e.g. log(1.5) or lgamma(2.5)
    in single precision (errors ~1e-8 in the model's logp). numpy float64
    scalars stay float64.
    """
    return tuple(np.float64(v) for v in values)


def _logdet_and_solve(a: np.ndarray, b: np.ndarray) -> tuple[float, np.ndarray]:
    """log det(a) and a^{-1} b for a symmetric positive definite matrix a."""
    chol = np.linalg.cholesky(a)
    logdet = 2.0 * float(np.sum(np.log(np.diag(chol))))
    half = np.linalg.solve(chol, b)
    return logdet, np.linalg.solve(chol.T, half)


# --------------------------------------------------------------------------
# 1. Normal mean with known noise scale
# --------------------------------------------------------------------------


def normal_mean(
    *,
    n_obs: int = 20,
    prior_mu: float = 0.0,
    prior_sigma: float = 2.0,
    sigma: float = 1.0,
    seed: int = 0,
) -> KnownTruth:
    r"""Normal observations with unknown mean and known standard deviation.

    Model::

        mu  ~ Normal(prior_mu, prior_sigma^2)
        y_i ~ Normal(mu, sigma^2),   i = 1..n,   sigma known

    Marginally ``y ~ MVN(prior_mu 1, Sigma)`` with
    ``Sigma = sigma^2 I + prior_sigma^2 1 1'``. With ``r = y - prior_mu 1``,
    ``s2 = sigma^2``, ``t2 = prior_sigma^2`` (Sherman-Morrison and the
    matrix determinant lemma)::

        log p(y) = -n/2 log(2 pi) - n/2 log s2 - 1/2 log(1 + n t2 / s2)
                   - 1/(2 s2) [ r'r - t2 (sum r)^2 / (s2 + n t2) ]

    Parameters
    ----------
    n_obs : int
        Number of observations n.
    prior_mu, prior_sigma : float
        Mean and standard deviation of the normal prior on ``mu``.
    sigma : float
        Known observation standard deviation.
    seed : int
        Seed for ``numpy.random.default_rng``; same seed, same data.

    Returns
    -------
    KnownTruth
        Model with free variable ``mu`` and observed ``y``; exact log p(y).
    """
    _check_positive(n_obs=n_obs, prior_sigma=prior_sigma, sigma=sigma)
    prior_mu, prior_sigma, sigma = _float64(prior_mu, prior_sigma, sigma)
    rng = np.random.default_rng(seed)
    mu_true = rng.normal(prior_mu, prior_sigma)
    y = rng.normal(mu_true, sigma, size=n_obs)

    with pm.Model() as model:
        mu = pm.Normal("mu", prior_mu, prior_sigma)
        pm.Normal("y", mu, sigma, observed=y)

    s2, t2 = sigma**2, prior_sigma**2
    r = y - prior_mu
    quad = (r @ r - t2 * r.sum() ** 2 / (s2 + n_obs * t2)) / s2
    logdet = n_obs * np.log(s2) + np.log1p(n_obs * t2 / s2)
    log_z = -0.5 * (n_obs * LOG_2PI + logdet + quad)
    return KnownTruth(model, float(log_z), "normal_mean")


# --------------------------------------------------------------------------
# 2. Linear regression with known noise scale
# --------------------------------------------------------------------------


def linear_regression(
    *,
    n_obs: int = 50,
    n_coef: int = 3,
    prior_sigma: float = 1.0,
    sigma: float = 0.5,
    seed: int = 0,
) -> KnownTruth:
    r"""Bayesian linear regression with a Gaussian prior and known noise scale.

    Model (design ``X`` of shape (n, p) with iid standard normal entries)::

        beta ~ Normal(0, prior_sigma^2 I_p)
        y    ~ Normal(X beta, sigma^2 I_n),   sigma known

    Marginally ``y ~ MVN(0, sigma^2 I + prior_sigma^2 X X')``. It is
    evaluated in p dimensions: with ``s2 = sigma^2``, ``t2 = prior_sigma^2``
    and ``A = X'X + (s2 / t2) I_p`` (Woodbury and the determinant lemma)::

        log p(y) = -n/2 log(2 pi) - (n - p)/2 log s2 - p/2 log t2
                   - 1/2 log|A| - 1/(2 s2) [ y'y - y'X A^{-1} X'y ]

    Parameters
    ----------
    n_obs : int
        Number of observations n.
    n_coef : int
        Number of regression coefficients p (no separate intercept).
    prior_sigma : float
        Prior standard deviation of each coefficient.
    sigma : float
        Known observation standard deviation.
    seed : int
        Seed for ``numpy.random.default_rng``; same seed, same X and y.

    Returns
    -------
    KnownTruth
        Model with free vector ``beta`` (shape (p,)) and observed ``y``.
    """
    _check_positive(n_obs=n_obs, n_coef=n_coef, prior_sigma=prior_sigma, sigma=sigma)
    prior_sigma, sigma = _float64(prior_sigma, sigma)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_obs, n_coef))
    beta_true = rng.normal(0.0, prior_sigma, size=n_coef)
    y = rng.normal(X @ beta_true, sigma)

    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, prior_sigma, shape=n_coef)
        pm.Normal("y", pm.math.dot(X, beta), sigma, observed=y)

    s2, t2 = sigma**2, prior_sigma**2
    Xty = X.T @ y
    logdet_a, a_inv_xty = _logdet_and_solve(X.T @ X + (s2 / t2) * np.eye(n_coef), Xty)
    quad = (y @ y - Xty @ a_inv_xty) / s2
    logdet = (n_obs - n_coef) * np.log(s2) + n_coef * np.log(t2) + logdet_a
    log_z = -0.5 * (n_obs * LOG_2PI + logdet + quad)
    return KnownTruth(model, float(log_z), "linear_regression")


# --------------------------------------------------------------------------
# 3. Normal-inverse-gamma regression (unknown noise variance)
# --------------------------------------------------------------------------


def nig_regression(
    *,
    n_obs: int = 40,
    n_coef: int = 2,
    a0: float = 3.0,
    b0: float = 2.0,
    prior_scale: float = 1.0,
    seed: int = 0,
) -> KnownTruth:
    r"""Linear regression with a conjugate normal-inverse-gamma prior.

    Model (design ``X`` of shape (n, p) with iid standard normal entries)::

        sigma2        ~ InverseGamma(a0, b0)
        beta | sigma2 ~ Normal(0, sigma2 V0),   V0 = prior_scale^2 I_p
        y             ~ Normal(X beta, sigma2 I_n)

    With the usual updates ``Vn = (V0^{-1} + X'X)^{-1}``,
    ``mn = Vn X'y``, ``an = a0 + n/2`` and
    ``bn = b0 + (y'y - mn' Vn^{-1} mn) / 2``::

        log p(y) = -n/2 log(2 pi) + 1/2 (log|Vn| - log|V0|)
                   + a0 log b0 - an log bn + lgamma(an) - lgamma(a0)

    Equivalently ``y ~ Student-t_{2 a0}(0, (b0/a0)(I + prior_scale^2 X X'))``.

    Parameters
    ----------
    n_obs : int
        Number of observations n.
    n_coef : int
        Number of regression coefficients p.
    a0, b0 : float
        Shape and scale of the inverse-gamma prior on ``sigma2``.
    prior_scale : float
        Prior standard deviation of each coefficient, relative to ``sqrt(sigma2)``.
    seed : int
        Seed for ``numpy.random.default_rng``; same seed, same X and y.

    Returns
    -------
    KnownTruth
        Model with free ``sigma2`` and vector ``beta``, observed ``y``.
    """
    _check_positive(n_obs=n_obs, n_coef=n_coef, a0=a0, b0=b0, prior_scale=prior_scale)
    a0, b0, prior_scale = _float64(a0, b0, prior_scale)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_obs, n_coef))
    sigma2_true = b0 / rng.gamma(a0)  # 1 / Gamma(a0, rate b0)
    beta_true = rng.normal(0.0, np.sqrt(sigma2_true) * prior_scale, size=n_coef)
    y = rng.normal(X @ beta_true, np.sqrt(sigma2_true))

    with pm.Model() as model:
        sigma2 = pm.InverseGamma("sigma2", a0, b0)
        sd = pm.math.sqrt(sigma2)
        beta = pm.Normal("beta", 0.0, sd * prior_scale, shape=n_coef)
        pm.Normal("y", pm.math.dot(X, beta), sd, observed=y)

    Xty = X.T @ y
    precision_n = X.T @ X + np.eye(n_coef) / prior_scale**2  # Vn^{-1}
    logdet_prec_n, mean_n = _logdet_and_solve(precision_n, Xty)
    logdet_v0 = 2.0 * n_coef * np.log(prior_scale)
    a_n = a0 + 0.5 * n_obs
    b_n = b0 + 0.5 * (y @ y - Xty @ mean_n)  # mn' Vn^{-1} mn = X'y . mn
    log_z = (
        -0.5 * n_obs * LOG_2PI
        + 0.5 * (-logdet_prec_n - logdet_v0)
        + a0 * np.log(b0)
        - a_n * np.log(b_n)
        + gammaln(a_n)
        - gammaln(a0)
    )
    return KnownTruth(model, float(log_z), "nig_regression")


# --------------------------------------------------------------------------
# 4. Beta-binomial
# --------------------------------------------------------------------------


def beta_binomial(
    *,
    n_groups: int = 10,
    n_trials: int = 20,
    a: float = 2.0,
    b: float = 3.0,
    seed: int = 0,
) -> KnownTruth:
    r"""Binomial counts with a shared success probability and a beta prior.

    Model::

        p   ~ Beta(a, b)
        k_i ~ Binomial(N, p),   i = 1..m groups,   N = n_trials

    Exact evidence::

        log p(k) = sum_i log C(N, k_i)
                   + log B(a + sum_i k_i, b + sum_i (N - k_i)) - log B(a, b)

    Parameters
    ----------
    n_groups : int
        Number of binomial observations m.
    n_trials : int
        Number of trials N in each observation.
    a, b : float
        Parameters of the beta prior on ``p``.
    seed : int
        Seed for ``numpy.random.default_rng``; same seed, same counts.

    Returns
    -------
    KnownTruth
        Model with free ``p`` and observed counts ``k``.
    """
    _check_positive(n_groups=n_groups, n_trials=n_trials, a=a, b=b)
    a, b = _float64(a, b)
    n_trials = np.int64(n_trials)
    rng = np.random.default_rng(seed)
    p_true = rng.beta(a, b)
    k = rng.binomial(n_trials, p_true, size=n_groups)

    with pm.Model() as model:
        p = pm.Beta("p", a, b)
        pm.Binomial("k", n_trials, p, observed=k)

    log_choose = gammaln(n_trials + 1) - gammaln(k + 1) - gammaln(n_trials - k + 1)
    successes, failures = k.sum(), (n_trials - k).sum()
    log_z = log_choose.sum() + betaln(a + successes, b + failures) - betaln(a, b)
    return KnownTruth(model, float(log_z), "beta_binomial")


# --------------------------------------------------------------------------
# 5. Poisson-gamma
# --------------------------------------------------------------------------


def poisson_gamma(
    *,
    n_obs: int = 30,
    alpha: float = 2.0,
    beta: float = 1.0,
    seed: int = 0,
) -> KnownTruth:
    r"""Poisson counts with a gamma prior on the rate.

    Model::

        lam ~ Gamma(alpha, rate=beta)
        y_i ~ Poisson(lam),   i = 1..n

    Exact evidence, with ``S = sum_i y_i``::

        log p(y) = -sum_i log(y_i!) + alpha log(beta) - lgamma(alpha)
                   + lgamma(alpha + S) - (alpha + S) log(beta + n)

    Parameters
    ----------
    n_obs : int
        Number of observations n.
    alpha, beta : float
        Shape and rate of the gamma prior on ``lam``.
    seed : int
        Seed for ``numpy.random.default_rng``; same seed, same counts.

    Returns
    -------
    KnownTruth
        Model with free ``lam`` and observed ``y``.
    """
    _check_positive(n_obs=n_obs, alpha=alpha, beta=beta)
    alpha, beta = _float64(alpha, beta)
    rng = np.random.default_rng(seed)
    lam_true = rng.gamma(alpha, 1.0 / beta)
    y = rng.poisson(lam_true, size=n_obs)

    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=alpha, beta=beta)
        pm.Poisson("y", lam, observed=y)

    total = y.sum()
    log_z = (
        -gammaln(y + 1).sum()
        + alpha * np.log(beta)
        - gammaln(alpha)
        + gammaln(alpha + total)
        - (alpha + total) * np.log(beta + n_obs)
    )
    return KnownTruth(model, float(log_z), "poisson_gamma")


def correlated_gaussian(
    *,
    dim: int = 100,
    condition: float = 1e4,
    prior_sigma: float = 10.0,
    seed: int = 0,
) -> KnownTruth:
    r"""A ``dim``-dimensional Gaussian posterior whose covariance has condition number about ``condition``.

    Model (``C = Q diag(lambda) Q'`` with ``Q`` a random rotation and ``lambda`` log-spaced from
    ``condition^(-1/2)`` to ``condition^(1/2)``)::

        x ~ Normal(0, prior_sigma^2 I_d)
        y ~ MvNormal(x, C)                 (one observed vector of length d)

    The posterior is exactly Gaussian with covariance ``(I / prior_sigma^2 + C^-1)^-1``, strongly correlated and
    badly scaled: the easiest case for a Gaussian reference in principle, and a hard one for a reference fitted
    to a few thousand draws. Exactly ``log p(y) = log MVN(y; 0, C + prior_sigma^2 I)``.

    Parameters
    ----------
    dim : int
    condition : float
        Ratio of the largest to the smallest eigenvalue of ``C``.
    prior_sigma : float
    seed : int
        Seed for ``numpy.random.default_rng``: the rotation and ``y``.

    Returns
    -------
    KnownTruth
        Model with free vector ``x`` (shape (dim,)) and observed ``y``.
    """
    _check_positive(dim=dim, condition=condition, prior_sigma=prior_sigma)
    (prior_sigma,) = _float64(prior_sigma)
    rng = np.random.default_rng(seed)
    rotation, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    eigenvalues = np.logspace(-0.5, 0.5, dim) ** np.log10(condition)
    cov = (rotation * eigenvalues) @ rotation.T
    cov = 0.5 * (cov + cov.T)
    marginal = cov + prior_sigma**2 * np.eye(dim)
    y = rng.multivariate_normal(np.zeros(dim), marginal)
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, prior_sigma, shape=dim)
        pm.MvNormal("y", mu=x, cov=cov, observed=y)
    logdet, solved = _logdet_and_solve(marginal, y)
    log_z = -0.5 * (dim * LOG_2PI + logdet + y @ solved)
    return KnownTruth(model, float(log_z), f"correlated_gaussian_{dim}")


ALL_SYSTEMS: dict[str, Callable[..., KnownTruth]] = {
    "normal_mean": normal_mean,
    "linear_regression": linear_regression,
    "nig_regression": nig_regression,
    "beta_binomial": beta_binomial,
    "poisson_gamma": poisson_gamma,
}
"""Registry of the known-truth builders, name -> function."""
