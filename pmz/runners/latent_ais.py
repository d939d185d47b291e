"""Annealed importance sampling from a Gaussian in whitened coordinates, one path per particle: the correction of the
Laplace route (:mod:`pmz.runners.conditional_laplace`; docs/methods.md, section 12).

Each particle carries its own target ``pi(z) = exp(u(z))`` on ``R^m`` (the conditional of the latents at its own
hyperparameter value, in coordinates where its Laplace Gaussian is ``phi = N(0, I)``). The path is geometric,

    log gamma_beta(z) = log phi(z) + beta r(z),      r(z) = u(z) - log phi(z),      beta_k = k / K,

and the log weight of a path (Neal 2001) is ``sum_k (beta_k - beta_{k-1}) r(z_{k-1})``, with ``z_0 ~ phi`` and
``z_k`` one Hamiltonian Monte Carlo move (identity mass, ``n_leapfrog`` steps of size ``step_size``) from
``z_{k-1}`` leaving ``gamma_{beta_k}`` invariant. ``exp(log weight)`` is an unbiased estimate of ``int pi(z) dz``
whatever the number of steps; the steps only shrink its variance (about ``Var_phi(r) / K`` where the moves mix).
The whole batch moves together: one call of ``u_grad`` per leapfrog step. The runner records, it does not estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.latent_gaussian import LOG_2PI

__all__ = ["AnnealedPaths", "anneal_from_gaussian", "TARGET_ACCEPTANCE"]

TARGET_ACCEPTANCE = 0.75  # of the moves, where the step size adapts


@dataclass(frozen=True)
class AnnealedPaths:
    """What the paths recorded.

    Attributes
    ----------
    log_weights : ndarray (N,)
        ``sum_k (beta_k - beta_{k-1}) r(z_{k-1})`` per path: the log of an unbiased estimate of ``int exp(u)``.
    z : ndarray (N, m)
        The final states (weighted by ``exp(log_weights)``, draws of ``pi``).
    u : ndarray (N,)
        ``u`` at the final states.
    acceptance : float
        Mean acceptance of the moves.
    step_size : float
        The step size at the end (adapted along the path where ``adapt``).
    """

    log_weights: np.ndarray
    z: np.ndarray
    u: np.ndarray
    acceptance: float
    step_size: float


def _log_phi(z):
    return -0.5 * np.sum(z * z, axis=1) - 0.5 * z.shape[1] * LOG_2PI


def anneal_from_gaussian(u_grad, z0, n_steps: int, step_size: float, rng, *, n_leapfrog: int = 3,
                         adapt: bool = False) -> AnnealedPaths:
    """Anneal each row of ``z0 (N, m)`` (draws of ``N(0, I)``) to its own ``exp(u)`` in ``n_steps`` temperatures
    (module docstring). ``u_grad(z) -> (u (N,), du/dz (N, m))`` for the whole batch; non-finite values are read as
    zero density. ``adapt``: the step size follows the batch's acceptance towards :data:`TARGET_ACCEPTANCE` (for a
    pilot: the weights of an adapted path are not those of one fixed kernel)."""
    z = np.array(z0, dtype=float)
    u, gu = u_grad(z)
    log_w = np.zeros(len(z))
    eps = float(step_size)
    accepted = []
    for k in range(1, n_steps + 1):
        beta, beta_prev = k / n_steps, (k - 1) / n_steps
        with np.errstate(invalid="ignore", over="ignore"):
            log_w += (beta - beta_prev) * np.where(np.isnan(u), -np.inf, u - _log_phi(z))
        z, u, gu, rate = _hmc_move(u_grad, z, u, gu, beta, eps, n_leapfrog, rng)
        accepted.append(rate)
        if adapt:
            eps *= float(np.exp(np.clip(rate - TARGET_ACCEPTANCE, -0.5, 0.5)))
    return AnnealedPaths(log_w, z, u, float(np.mean(accepted)) if accepted else 1.0, eps)


def _hmc_move(u_grad, z, u, gu, beta, eps, n_leapfrog, rng):
    """One HMC move of every row at ``gamma_beta``; returns the new ``(z, u, du/dz)`` and the acceptance rate."""

    def log_gamma(z_, u_):
        return (1.0 - beta) * -0.5 * np.sum(z_ * z_, axis=1) + beta * u_

    def grad(z_, gu_):
        return -(1.0 - beta) * z_ + beta * gu_

    p = rng.standard_normal(z.shape)
    h0 = -log_gamma(z, u) + 0.5 * np.sum(p * p, axis=1)
    zn, un, gun = z, u, gu
    pn = p + 0.5 * eps * grad(z, gu)
    for step in range(n_leapfrog):
        zn = zn + eps * pn
        un, gun = u_grad(zn)
        with np.errstate(invalid="ignore"):
            pn = pn + (eps if step < n_leapfrog - 1 else 0.5 * eps) * grad(zn, gun)
    with np.errstate(invalid="ignore", over="ignore"):
        h1 = -log_gamma(zn, un) + 0.5 * np.sum(pn * pn, axis=1)
        log_ratio = np.where(np.isfinite(h1), h0 - h1, -np.inf)
    accept = np.log(rng.uniform(size=len(z))) < log_ratio
    z = np.where(accept[:, None], zn, z)
    u = np.where(accept, un, u)
    gu = np.where(accept[:, None], gun, gu)
    return z, u, gu, float(accept.mean())
