"""Hamiltonian Monte Carlo on a batch of particles (Duane et al. 1987; Neal 2011).

Momentum ``p ~ N(0, M)`` with diagonal mass ``M = diag(1 / scale^2)``; Hamiltonian
``H(x, p) = -log f_beta(x) + sum (scale * p)^2 / 2``; ``n_leapfrog`` leapfrog steps of size
``eps = step_size * u``, ``u ~ U(0.8, 1.2)`` drawn per particle (jitter avoids periodic orbits and keeps
reversibility); accept with ``min(1, exp(H(x, p) - H(x', p')))``. Every leapfrog step is one batched
log-density + gradient call for all particles.
"""

from __future__ import annotations

import numpy as np

from .base import Kernel, KernelInfo, KernelParams, ParticleState, metropolis_accept, select

__all__ = ["HamiltonianMC"]


class HamiltonianMC(Kernel):
    """Batched HMC with a diagonal mass matrix and a fixed number of leapfrog steps (target acceptance 0.8)."""

    name = "hmc"
    needs_grad = True
    target_acceptance = 0.8

    def __init__(self, n_leapfrog: int = 10, jitter: float = 0.2):
        if int(n_leapfrog) != n_leapfrog or n_leapfrog < 1:
            raise ValueError(f"n_leapfrog must be a positive integer, got {n_leapfrog!r}")
        if not 0 <= jitter < 1:
            raise ValueError(f"jitter must lie in [0, 1), got {jitter!r}")
        self.n_leapfrog = int(n_leapfrog)
        self.jitter = float(jitter)

    def default_params(self, dim):
        return KernelParams(step_size=0.5 / max(dim, 1) ** 0.25, scale=np.ones(dim), n_leapfrog=self.n_leapfrog)

    def step(self, rng, state, family, beta, params):
        n, dim = state.x.shape
        scale2 = params.scale**2
        eps = params.step_size * rng.uniform(1 - self.jitter, 1 + self.jitter, size=(n, 1))
        # a zero scale freezes a coordinate (discrete sites under MixedKernel): no momentum there
        scale = np.broadcast_to(params.scale, (n, dim))
        inv_scale = np.divide(1.0, scale, out=np.zeros((n, dim)), where=scale > 0)
        p0 = rng.standard_normal((n, dim)) * inv_scale
        x, parts = state.x, state.parts
        with np.errstate(over="ignore", invalid="ignore"):
            p = p0 + 0.5 * eps * parts.grad_log_density(beta)
            for i in range(params.n_leapfrog):
                x = x + eps * scale2 * p
                parts = family.parts(x, grad=True)
                grad = parts.grad_log_density(beta)
                p = p + (eps if i < params.n_leapfrog - 1 else 0.5 * eps) * grad
            kinetic0 = 0.5 * np.sum(scale2 * p0**2, axis=1)
            kinetic1 = 0.5 * np.sum(scale2 * p**2, axis=1)
            log_ratio = parts.log_density(beta) - kinetic1 - state.parts.log_density(beta) + kinetic0
        acceptance, accepted = metropolis_accept(rng, log_ratio)
        return select(accepted, ParticleState(x, parts), state), KernelInfo(acceptance, accepted)
