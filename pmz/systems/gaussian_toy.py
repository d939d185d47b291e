"""The one-dimensional Gaussian annealing toy of Habeck (2017, section 4), with exact log Z.

A sequence of unnormalised Gaussians ``f_k(x) = exp(-(x - mu_k)^2 / (2 s_k^2))``, ``k = 0..K``, from
``N(20, 10^2)`` to ``N(0, 1)``. Whatever the intermediate densities, ``Z_k = sqrt(2 pi) s_k`` and

    log Z = log(Z_K / Z_0) = log(s_K / s_0) = -log 10.

Path (our documented choice): ``mu_k`` and ``s_k`` linear in ``k / K`` between the end points. Kernels
``T_k(x | x') = N((1 - tau) mu_k + tau x', (1 - tau^2) s_k^2)`` leave ``p_k`` invariant and are reversible;
``tau = 0`` draws exactly from ``p_k`` (equilibrium, zero lag), ``tau -> 1`` barely moves (far from equilibrium).

Forward path: ``x_0 ~ p_0``; for ``k = 1..K``: ``log w_f += log f_k(x_{k-1}) - log f_{k-1}(x_{k-1})``, then
``x_k ~ T_k(. | x_{k-1})``. Reverse path: ``x_K ~ p_K``; for ``k = K..1``: ``log w_r += log f_{k-1}(x_k) -
log f_k(x_k)``, then ``x_{k-1} ~ T_{k-1}(. | x_k)``. So ``E[w_f] = Z_K / Z_0`` and ``E[w_r] = Z_0 / Z_K``.
The path is not geometric (``f_k`` is not ``f_0^(1-b) f_K^b``), so the records' ``schedule = linspace(0, 1, K+1)``
only indexes the steps by ``k / K``; estimators read the log weights, not the schedule.
"""

from __future__ import annotations

import numpy as np

from ..records import RunNotes, WorkRecord

__all__ = ["GAUSSIAN_TOY_LOG_Z", "gaussian_toy_path", "gaussian_toy_works"]

GAUSSIAN_TOY_LOG_Z = float(-np.log(10.0))
"""Exact ``log(Z_K / Z_0) = log(1 / 10)`` of the default toy."""


def gaussian_toy_path(K: int = 10, *, mu_start=20.0, sd_start=10.0, mu_end=0.0, sd_end=1.0):
    """Means and standard deviations ``(mu_k, s_k)``, ``k = 0..K``, linear in ``k / K``."""
    if int(K) != K or K < 1:
        raise ValueError(f"K must be a positive integer, got {K!r}")
    if not (sd_start > 0 and sd_end > 0):
        raise ValueError("sd_start and sd_end must be positive")
    t = np.linspace(0.0, 1.0, int(K) + 1)
    return mu_start + t * (mu_end - mu_start), sd_start + t * (sd_end - sd_start)


def _log_f(x, mu, sd):
    return -0.5 * ((x - mu) / sd) ** 2


def gaussian_toy_works(
    n_forward: int,
    n_reverse: int,
    *,
    K: int = 10,
    tau: float = 0.5,
    rng: np.random.Generator,
    mu_start: float = 20.0,
    sd_start: float = 10.0,
    mu_end: float = 0.0,
    sd_end: float = 1.0,
) -> tuple[WorkRecord, WorkRecord, float]:
    """Simulate forward and reverse annealing paths of the Gaussian toy (vectorised over paths).

    Parameters
    ----------
    n_forward, n_reverse : int
        Number of forward and reverse paths.
    K : int
        Number of annealing steps (K + 1 densities).
    tau : float in [0, 1)
        Lag of the autoregressive kernels (0: exact draws at each step).
    rng : numpy.random.Generator
        Source of all randomness.
    mu_start, sd_start, mu_end, sd_end : float
        End points of the path (defaults: Habeck's N(20, 10^2) -> N(0, 1)).

    Returns
    -------
    forward, reverse : WorkRecord
        Records with ``log_z0 = 0``, so that estimators report ``log(Z_K / Z_0)``; ``schedule =
        linspace(0, 1, K + 1)`` (see the module docstring), ``kernel = "gaussian_ar1"``.
    log_z : float
        The exact ``log(sd_end / sd_start)`` (``GAUSSIAN_TOY_LOG_Z`` for the defaults).

    Examples
    --------
    >>> import numpy as np
    >>> f, r, log_z = gaussian_toy_works(5000, 5000, K=10, tau=0.0, rng=np.random.default_rng(0))
    >>> round(log_z, 4), f.n_paths, r.direction
    (-2.3026, 5000, 'reverse')
    >>> # stochastic bounds: mean(log w_f) <= log Z <= -mean(log w_r)
    >>> bool(np.mean(f.log_weights) < log_z < -np.mean(r.log_weights))
    True
    """
    if not 0.0 <= tau < 1.0:
        raise ValueError(f"tau must be in [0, 1), got {tau!r}")
    for n, name in ((n_forward, "n_forward"), (n_reverse, "n_reverse")):
        if int(n) != n or n < 1:
            raise ValueError(f"{name} must be a positive integer, got {n!r}")
    mu, sd = gaussian_toy_path(K, mu_start=mu_start, sd_start=sd_start, mu_end=mu_end, sd_end=sd_end)
    K = int(K)
    lag_sd = np.sqrt(1.0 - tau * tau)

    def move(x, k):
        return (1.0 - tau) * mu[k] + tau * x + lag_sd * sd[k] * rng.standard_normal(x.size)

    x = mu[0] + sd[0] * rng.standard_normal(int(n_forward))
    log_w_f = np.zeros(x.size)
    for k in range(1, K + 1):
        log_w_f += _log_f(x, mu[k], sd[k]) - _log_f(x, mu[k - 1], sd[k - 1])
        if k < K:
            x = move(x, k)

    x = mu[K] + sd[K] * rng.standard_normal(int(n_reverse))
    log_w_r = np.zeros(x.size)
    for k in range(K, 0, -1):
        log_w_r += _log_f(x, mu[k - 1], sd[k - 1]) - _log_f(x, mu[k], sd[k])
        if k > 1:
            x = move(x, k - 1)

    schedule = np.linspace(0.0, 1.0, K + 1)
    common = {"schedule": schedule, "log_z0": 0.0, "n_steps_per_temp": 1, "kernel": "gaussian_ar1"}
    common["notes"] = RunNotes(description={"tau": tau})
    forward = WorkRecord(log_weights=log_w_f, direction="forward", **common)
    reverse = WorkRecord(log_weights=log_w_r, direction="reverse", **common)
    return forward, reverse, float(np.log(sd_end / sd_start))
