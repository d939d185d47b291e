"""An AR(1) state-space model with two unknown scales and exact log evidence (Kalman filter + quadrature).

Model, for ``t = 1..T``::

    sigma_state, sigma_obs ~ HalfNormal(prior_sd)
    x_1 ~ Normal(0, sigma_state^2 / (1 - rho^2))          (the stationary law)
    x_t ~ Normal(rho x_{t-1}, sigma_state^2),  t >= 2
    y_t ~ Normal(x_t, sigma_obs^2)

written with ``pm.AR``. Free parameters: the ``T`` latent states and the two scales (dimension ``T + 2``).

Given the scales, ``y`` is Gaussian and the Kalman filter gives ``log p(y | sigma_state, sigma_obs)`` exactly
in ``O(T)``; the two scales are integrated by the trapezoid rule over their logarithms (the integrand is smooth and
falls off fast, so the rule converges geometrically), on a box of 12 Laplace standard deviations around the peak.
:func:`ar1_log_evidence` states the error of that rule measured against a grid twice as fine.

Reference: J. Durbin & S. J. Koopman, *Time Series Analysis by State Space Methods*, 2nd ed., Oxford (2012),
section 4.3 (the Kalman filter) and 7.2 (its log likelihood).

Examples
--------
>>> from pmz.systems.state_space import ar1_state_space
>>> system = ar1_state_space(T=50)
>>> system.model.initial_point()["lat"].shape
(50,)
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from scipy import optimize
from scipy.special import logsumexp

from ..records import KnownTruth

__all__ = ["ar1_state_space", "ar1_log_evidence", "ar1_kalman_log_likelihood"]

LOG_2PI = float(np.log(2.0 * np.pi))


def ar1_kalman_log_likelihood(y, state_var, obs_var, rho: float):
    """``log p(y | state_var, obs_var)`` of the AR(1) state-space model by the Kalman filter, vectorised over
    arrays of variances (broadcast together)."""
    q, r = np.broadcast_arrays(np.asarray(state_var, float), np.asarray(obs_var, float))
    mean = np.zeros(q.shape)
    var = q / (1.0 - rho**2)
    ll = np.full(q.shape, -0.5 * LOG_2PI * len(y))
    for t, yt in enumerate(np.asarray(y, float)):
        if t:
            mean = rho * mean
            var = rho * rho * var + q
        f = var + r
        v = yt - mean
        ll -= 0.5 * (np.log(f) + v * v / f)
        gain = var / f
        mean = mean + gain * v
        var = var * r / f
    return ll


def _log_joint(y, rho, prior_sd):
    """``(u, v) -> log p(y, u, v)`` with ``u = log sigma_state``, ``v = log sigma_obs`` (Jacobians included)."""

    def log_halfnormal(s):
        return 0.5 * np.log(2.0 / np.pi) - np.log(prior_sd) - 0.5 * (s / prior_sd) ** 2

    def f(u, v):
        s, o = np.exp(u), np.exp(v)
        return log_halfnormal(s) + u + log_halfnormal(o) + v + ar1_kalman_log_likelihood(y, s * s, o * o, rho)

    return f


def ar1_log_evidence(y, *, rho: float = 0.9, prior_sd: float = 1.0, n: int = 161) -> tuple[float, float]:
    """Exact ``log p(y)`` of the model (module docstring) and the quadrature's error: ``(log_z, error)``, the error
    being the change from an ``n x n`` grid to a ``(2n - 1) x (2n - 1)`` one (both on the same box)."""
    f = _log_joint(y, rho, prior_sd)
    peak = optimize.minimize(lambda p: -f(p[0], p[1]), np.zeros(2), method="Nelder-Mead",
                             options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 4000}).x
    h = 1e-3
    hess = np.empty((2, 2))
    for i in range(2):
        for j in range(2):
            ei, ej = np.eye(2)[i] * h, np.eye(2)[j] * h
            hess[i, j] = (f(*(peak + ei + ej)) - f(*(peak + ei - ej)) - f(*(peak - ei + ej))
                          + f(*(peak - ei - ej))) / (4 * h * h)
    sd = np.sqrt(np.diag(np.linalg.inv(-hess)))

    def trapezoid(points):
        u = np.linspace(peak[0] - 12 * sd[0], peak[0] + 12 * sd[0], points)
        v = np.linspace(peak[1] - 12 * sd[1], peak[1] + 12 * sd[1], points)
        U, V = np.meshgrid(u, v, indexing="ij")
        w = np.ones(points)
        w[[0, -1]] = 0.5
        log_w = np.log(np.outer(w, w)) + np.log((u[1] - u[0]) * (v[1] - v[0]))
        return float(logsumexp(f(U, V) + log_w))

    coarse, fine = trapezoid(n), trapezoid(2 * n - 1)
    return fine, abs(fine - coarse)


def ar1_state_space(
    T: int = 400,
    *,
    rho: float = 0.9,
    state_sd: float = 0.5,
    obs_sd: float = 1.0,
    prior_sd: float = 1.0,
    seed: int = 0,
) -> KnownTruth:
    """The AR(1) state-space model (module docstring) with ``T`` simulated observations and its exact log Z."""
    if T < 2:
        raise ValueError(f"T must be at least 2, got {T}")
    if not (abs(rho) < 1 and state_sd > 0 and obs_sd > 0 and prior_sd > 0):
        raise ValueError("need |rho| < 1 and positive state_sd, obs_sd and prior_sd")
    rng = np.random.default_rng(seed)
    x = np.empty(T)
    x[0] = rng.normal(0.0, state_sd / np.sqrt(1 - rho**2))
    for t in range(1, T):
        x[t] = rho * x[t - 1] + rng.normal(0.0, state_sd)
    y = x + rng.normal(0.0, obs_sd, T)
    with pm.Model() as model:
        sigma_state = pm.HalfNormal("sigma_state", sigma=prior_sd)
        sigma_obs = pm.HalfNormal("sigma_obs", sigma=prior_sd)
        lat = pm.AR("lat", rho=[rho], sigma=sigma_state,
                    init_dist=pm.Normal.dist(0.0, sigma_state / np.sqrt(1 - rho**2)), steps=T - 1)
        pm.Normal("y", mu=lat, sigma=sigma_obs, observed=y)
    log_z, _ = ar1_log_evidence(y, rho=rho, prior_sd=prior_sd)
    return KnownTruth(model=model, log_z=log_z, name=f"ar1_state_space_{T}")
