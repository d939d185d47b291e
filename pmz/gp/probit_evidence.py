"""Reference log evidences of probit Gaussian-process classification: exact, EP and Laplace.

Probit GP classification, ``f ~ N(0, K)``, ``p(y_i | f_i) = Phi(y_i f_i)`` with labels ``y_i in {-1, +1}``, has
the evidence of a threshold model: with ``z = f + eps ~ N(0, C)``, ``C = K + I``,

    p(y) = P(y_i z_i > 0 for all i),

an orthant probability of a multivariate normal (ARM eq 10). This module computes it

* exactly (:func:`probit_log_evidence_exact`): Sheppard's closed forms for n <= 3, Genz's quasi-Monte Carlo
  algorithm (``scipy.stats.multivariate_normal.cdf``) for up to ~12 points;
* by expectation propagation (:func:`probit_log_evidence_ep`, GPML Algorithm 3.5, eq 3.65), known to be very
  accurate for probit GP classification (Kuss & Rasmussen 2005; Nickisch & Rasmussen 2008): pmz's reference
  for 100-300 points, where no exact value exists. Its error is small but grows with n: on the digits problems
  (amplitude 2, length scale 4) it is 0.004-0.01 below the exact value for 8-12 points, and about 0.12 (100
  points) and 0.2-0.3 (300 points) below resample-move SMC with the exact z-representation sequence;
* by Laplace's approximation (:func:`probit_log_evidence_laplace`, GPML Algorithm 3.1, eq 3.32), which
  underestimates it more (by 0.2-1 for 8 points, 0.5 for 100 and 300 points on the same problems).

All three take the prior covariance ``K`` of the latent f (without the unit noise variance) and the labels.

References: Rasmussen & Williams, "Gaussian processes for machine learning", MIT Press 2006 (GPML);
Kuss & Rasmussen, "Assessing approximate inference for binary Gaussian process classification", JMLR 2005;
Nickisch & Rasmussen, "Approximations for binary Gaussian process classification", JMLR 2008;
Genz, "Numerical computation of multivariate normal probabilities", J. Comput. Graph. Stat. 1992;
Sheppard, "On the application of the theory of error to cases of normal distribution and normal correlation",
Phil. Trans. R. Soc. A 1899.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg, stats
from scipy.special import log_ndtr

__all__ = ["probit_laplace_mode", "probit_log_evidence_ep", "probit_log_evidence_exact", "probit_log_evidence_laplace"]


def _check_labels(y, n: int | None = None) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or (n is not None and y.size != n):
        raise ValueError(f"y must be a vector of {n} labels, got shape {y.shape}")
    if not np.all(np.isin(y, (-1, 1))):
        raise ValueError("labels must be -1 or +1")
    return y.astype(np.int64)


def _check_problem(K, y) -> tuple[np.ndarray, np.ndarray]:
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"K must be a square matrix, got shape {K.shape}")
    return K, _check_labels(y, K.shape[0])


# -------------------------------------------------------------------------------------- exact evidence


def _sheppard_orthant(R: np.ndarray) -> float:
    """``P(w > 0)`` for ``w ~ N(0, R)``, R a correlation matrix of size 1, 2 or 3 (Sheppard 1899):
    1/2, ``1/4 + asin(r12) / (2 pi)``, ``1/8 + (asin r12 + asin r13 + asin r23) / (4 pi)``."""
    n = R.shape[0]
    if n == 1:
        return 0.5
    if n == 2:
        return 0.25 + np.arcsin(R[0, 1]) / (2.0 * np.pi)
    if n == 3:
        return 0.125 + (np.arcsin(R[0, 1]) + np.arcsin(R[0, 2]) + np.arcsin(R[1, 2])) / (4.0 * np.pi)
    raise ValueError("closed forms exist only for n <= 3")


def probit_log_evidence_exact(
    K,
    y,
    *,
    method: str = "auto",
    abseps: float = 1e-10,
    releps: float = 1e-5,
    maxpts: int | None = None,
    seed: int = 0,
) -> float:
    """Exact log evidence of probit GP classification: the log of an orthant probability.

    With ``z ~ N(0, C)``, ``C = K + I`` and ``w = diag(y) z ~ N(0, diag(y) C diag(y))``,

        p(y) = P(w_i > 0 for all i) = P(w <= 0)        (w and -w have the same distribution),

    a multivariate normal CDF at the origin. ``method="genz"`` uses Genz's randomised quasi-Monte Carlo
    algorithm (``scipy.stats.multivariate_normal.cdf``), accurate to ``max(abseps, releps p)`` for up to ~12
    points (its cost grows quickly with n); ``"closed"`` uses Sheppard's formulas (n <= 3, on the correlation
    matrix); ``"auto"`` picks the closed form when it exists.

    Parameters
    ----------
    K : array (n, n)
        Prior covariance of the latent f (without the unit noise variance, which is added here).
    y : array (n,)
        Labels in {-1, +1}.
    abseps, releps, maxpts : Genz's absolute and relative error tolerance and maximum number of integrand
        evaluations (default ``2 000 000 n``).
    seed : int
        Seed of Genz's randomisation (the result is reproducible).

    >>> float(np.exp(probit_log_evidence_exact(np.array([[3.0]]), [1])))
    0.5
    >>> K = np.array([[1.0, 0.6], [0.6, 1.0]])   # C = K + I has correlation 0.3
    >>> p_genz = np.exp(probit_log_evidence_exact(K, [1, 1], method="genz"))
    >>> round(float(p_genz), 6), round(float(0.25 + np.arcsin(0.3) / (2 * np.pi)), 6)
    (0.298493, 0.298493)
    >>> x = np.linspace(0, 1, 5)
    >>> K = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / 0.5**2)   # squared exponential, l = 0.5
    >>> round(probit_log_evidence_exact(K, [1, 1, 1, -1, -1]), 4)
    -3.2637
    """
    K, y = _check_problem(K, y)
    n = K.shape[0]
    cov = (K + np.eye(n)) * np.outer(y, y)
    if method == "auto":
        method = "closed" if n <= 3 else "genz"
    if method == "closed":
        sd = np.sqrt(np.diag(cov))
        return float(np.log(_sheppard_orthant(cov / np.outer(sd, sd))))
    if method != "genz":
        raise ValueError(f"method must be 'auto', 'closed' or 'genz', got {method!r}")
    maxpts = 2_000_000 * n if maxpts is None else int(maxpts)
    rng = np.random.default_rng(seed)

    def orthant(tolerance):
        return stats.multivariate_normal.cdf(
            np.zeros(n), np.zeros(n), cov, maxpts=maxpts, abseps=tolerance, releps=releps, rng=rng
        )

    # scipy's Genz integrator stops on an absolute error only: a rough first pass sets it relative to p
    rough = orthant(1e-4 * 0.5**n)
    return float(np.log(orthant(max(abseps, releps * rough))))


# --------------------------------------------------------------------------------- Laplace approximation


def _probit_derivatives(f, y):
    """Gradient and negative Hessian (diagonal W) of ``sum_i log Phi(y_i f_i)`` (GPML eq 3.16):
    ``d/df = y r``, ``W = r^2 + y f r`` with ``r = N(f) / Phi(y f)`` computed in log space."""
    r = np.exp(stats.norm.logpdf(f) - log_ndtr(y * f))
    return y * r, r * r + y * f * r


def probit_laplace_mode(K, y, *, tol: float = 1e-10, max_iter: int = 100):
    """Mode ``f^`` of ``Psi(f) = sum_i log Phi(y_i f_i) - f' K^{-1} f / 2`` by Newton's method in the stable form
    of GPML Algorithm 3.1 (``B = I + W^1/2 K W^1/2 = L L'``; steps halved when ``Psi`` does not increase).

    Returns ``(f^, a, W, Psi(f^))`` with ``f^ = K a`` and ``W = -d^2/df^2 sum_i log Phi(y_i f_i)`` at ``f^``.
    """
    K, y = _check_problem(K, y)
    n = K.shape[0]
    f = np.zeros(n)
    a = np.zeros(n)
    psi = np.sum(log_ndtr(y * f))
    for _ in range(max_iter):
        grad, W = _probit_derivatives(f, y)
        sW = np.sqrt(W)
        L = linalg.cholesky(np.eye(n) + sW[:, None] * K * sW[None, :], lower=True)
        b = W * f + grad
        a_new = b - sW * linalg.cho_solve((L, True), sW * (K @ b))
        step = 1.0
        while True:
            a_try = a + step * (a_new - a)
            f_try = K @ a_try
            psi_try = -0.5 * a_try @ f_try + np.sum(log_ndtr(y * f_try))
            if psi_try >= psi - 1e-12 or step < 1e-8:
                break
            step *= 0.5
        converged = abs(psi_try - psi) < tol
        a, f, psi = a_try, f_try, psi_try
        if converged:
            break
    return f, a, _probit_derivatives(f, y)[1], float(psi)


def probit_log_evidence_laplace(K, y, *, tol: float = 1e-10, max_iter: int = 100) -> float:
    """Laplace approximation of the log evidence of probit GP classification (GPML Algorithm 3.1, eq 3.32).

    Newton's method for the mode f^ of ``Psi(f) = log p(y|f) - f' K^{-1} f / 2`` in the stable form with
    ``B = I + W^1/2 K W^1/2 = L L'`` (probit: ``W`` diagonal and positive, log-concave likelihood), then

        log q(y) = -a' f^ / 2 + sum_i log Phi(y_i f^_i) - sum_i log L_ii,        f^ = K a.

    Steps are halved when ``Psi`` does not increase. Known to underestimate the evidence of GP classifiers,
    sometimes badly (Kuss & Rasmussen 2005); prefer :func:`probit_log_evidence_ep`.

    >>> x = np.linspace(0, 1, 5)
    >>> K = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / 0.5**2)   # squared exponential, l = 0.5
    >>> round(probit_log_evidence_laplace(K, [1, 1, 1, -1, -1]), 4)   # exact: -3.2637, EP: -3.2651
    -3.2824
    """
    K, y = _check_problem(K, y)
    _, _, W, psi = probit_laplace_mode(K, y, tol=tol, max_iter=max_iter)
    sW = np.sqrt(W)
    L = linalg.cholesky(np.eye(K.shape[0]) + sW[:, None] * K * sW[None, :], lower=True)
    return float(psi - np.sum(np.log(np.diag(L))))


# ------------------------------------------------------------------------------- expectation propagation


def _ep_posterior(K, tau_site, nu_site):
    """Gaussian posterior ``N(mu, Sigma)``, ``Sigma = (K^-1 + T)^-1``, ``mu = Sigma nu`` (GPML Algorithm 3.5
    lines 14-17): ``L L' = B = I + T^1/2 K T^1/2``, ``V = L^-1 T^1/2 K``, ``Sigma = K - V'V``."""
    n = K.shape[0]
    sT = np.sqrt(tau_site)
    L = linalg.cholesky(np.eye(n) + sT[:, None] * K * sT[None, :], lower=True)
    V = linalg.solve_triangular(L, sT[:, None] * K, lower=True)
    Sigma = K - V.T @ V
    return Sigma, Sigma @ nu_site, L


def _ep_tilted(y, mu_cav, var_cav):
    """Normaliser and moments of the tilted distribution ``Phi(y f) N(f | mu_cav, var_cav)`` (GPML eq 3.58):
    ``z = y mu / sqrt(1 + v)``, ``log Z^ = log Phi(z)``, ``mu^ = mu + y v r / sqrt(1 + v)``,
    ``v^ = v - v^2 r (z + r) / (1 + v)`` with ``r = N(z) / Phi(z)``."""
    s = np.sqrt(1.0 + var_cav)
    z = y * mu_cav / s
    log_z_hat = log_ndtr(z)
    r = np.exp(stats.norm.logpdf(z) - log_z_hat)
    mean = mu_cav + y * var_cav * r / s
    var = var_cav - var_cav**2 * r * (z + r) / (1.0 + var_cav)
    return log_z_hat, mean, var


def probit_log_evidence_ep(K, y, *, tol: float = 1e-9, max_sweeps: int = 200) -> float:
    """Expectation-propagation log evidence of probit GP classification (GPML Algorithm 3.5, eq 3.65).

    Sequential EP: each site ``t_i(f_i) = Z~_i N(f_i | nu~_i / tau~_i, 1 / tau~_i)`` is replaced in turn by the
    Gaussian matching the moments of the tilted distribution ``Phi(y_i f_i) q_-i(f_i)``, with rank-one updates of
    ``Sigma``; after each sweep ``Sigma`` and ``mu`` are recomputed from scratch, and the sweeps stop when the
    site parameters change by less than ``tol``. At convergence, with cavities ``tau_-i = 1/Sigma_ii - tau~_i``,
    ``nu_-i = mu_i/Sigma_ii - nu~_i`` and ``B = I + T~^1/2 K T~^1/2``,

        log Z_EP = sum_i log Phi(z_i) - log|B| / 2 + nu~' mu / 2
                   + sum_i [ log(1 + tau~_i / tau_-i) / 2 - mu_i^2 / (2 Sigma_ii) + nu_-i^2 / (2 tau_-i) ],

    which is GPML's eq 3.65 (the site normalisers written through the cavities; no division by ``tau~_i``).

    EP is known to be very accurate for probit GP classification (Kuss & Rasmussen 2005; Nickisch & Rasmussen
    2008): pmz uses it as the reference log evidence for 100-300 points, where no exact value exists. It is not
    exact, and its error grows with the number of points: on the digits problems it lies 0.004-0.01 below
    :func:`probit_log_evidence_exact` for 8-12 points (tests/gp/test_probit_gp.py), and about 0.12 (100 points) and
    0.2-0.3 (300 points) below resample-move SMC estimates (so compare with a tolerance of a few tenths there).

    >>> x = np.linspace(0, 1, 5)
    >>> K = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / 0.5**2)   # squared exponential, l = 0.5
    >>> round(probit_log_evidence_ep(K, [1, 1, 1, -1, -1]), 4)   # exact: -3.2637
    -3.2651
    """
    K, y = _check_problem(K, y)
    n = K.shape[0]
    tau_site, nu_site = np.zeros(n), np.zeros(n)
    Sigma, mu = K.copy(), np.zeros(n)
    for _ in range(max_sweeps):
        tau_old, nu_old = tau_site.copy(), nu_site.copy()
        for i in range(n):
            tau_cav = 1.0 / Sigma[i, i] - tau_site[i]
            nu_cav = mu[i] / Sigma[i, i] - nu_site[i]
            _, mean, var = _ep_tilted(y[i], nu_cav / tau_cav, 1.0 / tau_cav)
            delta = max(1.0 / var - tau_cav, 0.0) - tau_site[i]  # probit sites have tau~ >= 0
            tau_site[i] += delta
            nu_site[i] = mean / var - nu_cav
            s = Sigma[:, i].copy()
            Sigma -= np.outer(s, s) * (delta / (1.0 + delta * s[i]))
            mu = Sigma @ nu_site
        Sigma, mu, _ = _ep_posterior(K, tau_site, nu_site)
        change = max(np.max(np.abs(tau_site - tau_old)), np.max(np.abs(nu_site - nu_old)))
        if change < tol:
            break
    Sigma, mu, L = _ep_posterior(K, tau_site, nu_site)
    d = np.diag(Sigma)
    tau_cav = 1.0 / d - tau_site
    nu_cav = mu / d - nu_site
    log_z_hat, _, _ = _ep_tilted(y, nu_cav / tau_cav, 1.0 / tau_cav)
    return float(
        np.sum(log_z_hat)
        - np.sum(np.log(np.diag(L)))
        + 0.5 * nu_site @ mu
        + np.sum(0.5 * np.log1p(tau_site / tau_cav) - 0.5 * mu**2 / d + 0.5 * nu_cav**2 / tau_cav)
    )
