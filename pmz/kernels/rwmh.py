"""Random-walk Metropolis on a batch: ``x' = x + step_size * scale * z``, ``z ~ N(0, I)``.

Accept with probability ``min(1, f_beta(x') / f_beta(x))``; the proposal is symmetric, so ``f_beta`` is left
invariant. One batched log-density call per step, no gradients.
"""

from __future__ import annotations

import numpy as np

from .base import Kernel, KernelInfo, KernelParams, ParticleState, metropolis_accept, select

__all__ = ["RandomWalkMetropolis"]


class RandomWalkMetropolis(Kernel):
    """Batched Gaussian random-walk Metropolis (target acceptance 0.3 for tuning)."""

    name = "rwmh"
    needs_grad = False
    target_acceptance = 0.3

    def default_params(self, dim):
        return KernelParams(step_size=2.38 / np.sqrt(max(dim, 1)), scale=np.ones(dim), n_leapfrog=0)

    def step(self, rng, state, family, beta, params):
        x = state.x
        proposal = x + params.step_size * params.scale * rng.standard_normal(x.shape)
        new = ParticleState(proposal, family.parts(proposal, grad=False))
        log_ratio = new.parts.log_density(beta) - state.parts.log_density(beta)
        acceptance, accepted = metropolis_accept(rng, log_ratio)
        return select(accepted, new, state), KernelInfo(acceptance, accepted)
