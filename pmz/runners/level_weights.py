"""Adaptation rules of simulated tempering's level weights ``log Zhat_k`` (``log Zhat_0 = 0``), written once for the
many-chain runners and the PyMC step methods.

Simulated tempering samples ``q(x, k) ∝ r_k f_k(x) / Zhat_k``; its levels mix when ``Zhat_k ~= Z_k``. Three rules
learn the guesses:

* :func:`rts_update`, the batch update of RTS (Carlson et al. 2016, eq 10 and section 2.4) from a run with frozen
  guesses: ``log Zhat_k <- log Zhat_k + log(c_k / r_k) - log(c_0 / r_0)``, ``c_k = mean_i q(k | x_i)``;
* :func:`samc_update`, the online Rao-Blackwellised stochastic approximation of SAMC (Liang, Liu & Carroll 2007;
  Atchade & Liu 2010): ``log Zhat_k <- log Zhat_k + gamma_t (q(k | x_t) / r_k - 1)``, ``gamma_t = min(0.1, 1/t)``;
* :func:`wang_landau_update`, Wang-Landau (Wang & Landau 2001; Atchade & Liu 2010; Belardinelli & Pereyra 2007
  for the 1/t rule): ``theta_k <- theta_k + log(1 + gamma_t) v_k / (c r_k)`` after every update (``v_k``: the
  fraction of chains at level k, or its Rao-Blackwellised ``mean_i q(k | x_i)``); ``gamma`` is halved whenever the
  visit histogram since the last halving is flat (every ``h_k / r_k`` at least ``(1 - flatness)`` times their
  mean), and follows ``gamma_t = c / t`` once a halving takes it below that. ``c`` is the time unit: 1 for the
  runner (one update per sweep of all chains moves the weights as much as K single-walker steps), K for one chain
  (the classic update of the visited level, ``log(1 + gamma) / (K r_k)``, with the 1/t rule ``K / t`` in
  single-walker steps): the same schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "rts_update",
    "samc_update",
    "WangLandauState",
    "WangLandauInfo",
    "wang_landau_init",
    "wang_landau_update",
]


def rts_update(log_zhat, c_hat, log_prior) -> np.ndarray:
    """The RTS estimate of ``log Z_k - log Z_0`` from a run with guesses ``log_zhat``: RTS eq 10,
    ``Z_k = Zhat_k (r_0 / r_k) (c_k / c_0)``. A level whose ``c_k`` underflowed to 0 gets the smallest finite
    ``log c`` minus 50 nats: a finite guess far below the others, so the next run moves towards it. A run without
    one finite ``c_k`` (its densities were NaN or +inf: :func:`pmz.api` says so) leaves the guesses as they were."""
    with np.errstate(divide="ignore", invalid="ignore"):
        log_c = np.log(c_hat)
    if not np.any(np.isfinite(log_c)):
        return np.asarray(log_zhat, dtype=float) - log_zhat[0]
    log_c = np.where(np.isfinite(log_c), log_c, np.min(log_c[np.isfinite(log_c)]) - 50.0)
    new = log_zhat + log_c - log_prior
    return new - new[0]


def samc_update(log_zhat, q, log_prior, t: int) -> np.ndarray:
    """``log Zhat_k + gamma_t (q_k / r_k - 1)`` renormalised to ``log Zhat_0 = 0``, with ``gamma_t = min(0.1, 1/t)``
    at step ``t >= 1``.

    The mean field ``d log Zhat_k / dt = q_k / r_k - 1`` has, near ``Zhat = Z``, the Jacobian ``-(I - 1 r')``: every
    direction that matters relaxes at rate 1, which makes the gain ``1 / t`` the efficient one (``c / t`` with
    ``c > 1/2`` converges at the ``1/sqrt(t)`` rate, ``c = 1`` with the smallest asymptotic variance); the cap 0.1
    keeps the first steps from throwing away a good initial guess (``|q_k / r_k - 1| <= K - 1``).
    """
    gamma = min(0.1, 1.0 / t)
    log_zhat = log_zhat + gamma * (q / np.exp(log_prior) - 1.0)
    return log_zhat - log_zhat[0]


@dataclass(frozen=True)
class WangLandauState:
    """Wang-Landau's adaptation state (see the module docstring).

    Attributes
    ----------
    log_g : ndarray (K,)
        The weights ``theta_k - theta_0``: estimates of ``log Z_k - log Z_0``.
    gamma : float
        The modification factor: an update moves the weights by ``log(1 + gamma)`` per unit of visits.
    histogram : ndarray (K,)
        Visits (chains at each level after each update) since the last halving of ``gamma``.
    t : int
        Updates so far.
    one_over_t_from : int
        The update at which the 1/t rule took over, or -1.
    """

    log_g: np.ndarray
    gamma: float
    histogram: np.ndarray
    t: int = 0
    one_over_t_from: int = -1


@dataclass(frozen=True)
class WangLandauInfo:
    """What one Wang-Landau update did.

    Attributes
    ----------
    halved : bool
        The histogram was flat and ``gamma`` was halved (the histogram restarts).
    """

    halved: bool


def wang_landau_init(n_levels: int, gamma0: float, log_g=None) -> WangLandauState:
    """Start from ``log_g`` (default zeros) with ``gamma = gamma0``."""
    theta = np.zeros(n_levels) if log_g is None else np.asarray(log_g, dtype=float).copy()
    return WangLandauState(theta, float(gamma0), np.zeros(n_levels))


def wang_landau_update(
    state: WangLandauState,
    visits,
    occupied,
    *,
    log_prior,
    flatness: float,
    time_unit: float = 1.0,
    one_over_t: bool = False,
) -> tuple[WangLandauState, WangLandauInfo]:
    """One Wang-Landau update of the level weights (see the module docstring).

    Parameters
    ----------
    state : WangLandauState
    visits : array (K,)
        ``v_k``: the fraction of chains at each level (or its Rao-Blackwellised version).
    occupied : array (K,)
        Chains now at each level (added to the histogram).
    log_prior : array (K,)
        ``log r_k``.
    flatness : float in (0, 1)
    time_unit : float
        ``c``: the weights move by ``log(1 + gamma) v_k / (c r_k)``; the 1/t rule is ``gamma_t = c / t``.
    one_over_t : bool
        Switch to the 1/t rule now if it is not on yet (the step methods do when tuning ends).
    """
    t = state.t + 1
    gamma, one_over_t_from = state.gamma, state.one_over_t_from
    if one_over_t_from < 0 and one_over_t:
        one_over_t_from = t
    if one_over_t_from >= 0:
        gamma = time_unit / t
    prior = np.exp(log_prior)
    theta = state.log_g + np.log1p(gamma) * visits / (time_unit * prior)
    theta = theta - theta[0]
    histogram = state.histogram + occupied
    halved = False
    if one_over_t_from < 0 and np.all(histogram / prior >= (1 - flatness) * np.mean(histogram / prior)):
        gamma /= 2.0
        halved = True
        histogram = np.zeros(histogram.size)
        if gamma < time_unit / t:  # the 1/t rule from now on (checked when the histogram is flat)
            one_over_t_from, gamma = t, time_unit / t
    return WangLandauState(theta, gamma, histogram, t, one_over_t_from), WangLandauInfo(halved)
