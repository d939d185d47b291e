"""The kernel contract: ``step(rng, state, family, beta, params) -> (state, info)``.

A kernel is a Markov transition that leaves ``f_beta`` of a tempered family invariant, acting on a whole batch
of particles at once (one batched log-density call per proposal or leapfrog step). ``beta`` is a scalar or one
value per particle. Randomness comes in as a ``numpy.random.Generator``; the global RNG is never touched.
State, parameters and info are separate frozen dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.parts import LogDensityParts

__all__ = ["ParticleState", "KernelParams", "KernelInfo", "Kernel", "metropolis_accept", "params_per_particle"]


@dataclass(frozen=True)
class ParticleState:
    """Particles and their cached log-density parts.

    Attributes
    ----------
    x : ndarray (n, dim)
        Positions in the flat unconstrained space.
    parts : LogDensityParts
        ``log f0`` and ``U`` at ``x`` (with gradients for gradient-based kernels), so that an annealing runner
        reads ``U(x)`` for its weights without another evaluation.
    """

    x: np.ndarray
    parts: LogDensityParts

    def take(self, index) -> "ParticleState":
        return ParticleState(self.x[index], self.parts.take(index))

    @staticmethod
    def concatenate(states) -> "ParticleState":
        """The particles of several states, one after the other (e.g. ARM's pool of particle blocks)."""
        if len(states) == 1:
            return states[0]
        x = np.concatenate([s.x for s in states])
        return ParticleState(x, LogDensityParts.concatenate([s.parts for s in states]))


@dataclass(frozen=True)
class KernelParams:
    """Tuning parameters of a kernel at one temperature.

    Attributes
    ----------
    step_size : float or ndarray (n, 1)
        HMC leapfrog step size, or the random-walk proposal scale, in units of ``scale``. One value per
        particle (a column) when the particles sit at different temperatures (simulated tempering).
    scale : ndarray (dim,) or (n, dim)
        Per-coordinate scale (roughly the posterior sd at this temperature): the HMC inverse mass matrix is
        ``diag(scale^2)``; the random-walk proposal sd is ``step_size * scale``. One row per particle when the
        particles sit at different temperatures.
    n_leapfrog : int
        Leapfrog steps per HMC proposal (ignored by random-walk Metropolis).
    """

    step_size: float
    scale: np.ndarray
    n_leapfrog: int = 10


def params_per_particle(params_by_level, levels) -> KernelParams:
    """Per-particle parameters for particles at different temperatures: particle i uses
    ``params_by_level[levels[i]]`` (step size as an ``(n, 1)`` column, scales as ``(n, dim)`` rows; one
    ``n_leapfrog`` for all, the first level's). Kernels broadcast these exactly like the per-temperature ones."""
    levels = np.asarray(levels, dtype=int)
    step_size = np.array([p.step_size for p in params_by_level], dtype=float)[levels][:, None]
    scale = np.stack([np.broadcast_to(p.scale, params_by_level[0].scale.shape) for p in params_by_level])[levels]
    return KernelParams(step_size, scale, params_by_level[0].n_leapfrog)


@dataclass(frozen=True)
class KernelInfo:
    """What one kernel step reports.

    Attributes
    ----------
    acceptance : ndarray (n,)
        Metropolis acceptance probability of each particle's proposal (0 where the proposal was not finite).
    accepted : ndarray (n,) of bool
        Whether each proposal was accepted.
    """

    acceptance: np.ndarray
    accepted: np.ndarray


def metropolis_accept(rng: np.random.Generator, log_ratio: np.ndarray):
    """Accept each proposal with probability ``min(1, exp(log_ratio))``; non-finite ratios are rejected."""
    log_ratio = np.where(np.isfinite(log_ratio), log_ratio, -np.inf)
    acceptance = np.exp(np.minimum(log_ratio, 0.0))
    accepted = np.log(rng.uniform(size=log_ratio.shape)) < log_ratio
    return acceptance, accepted


def select(accepted, new: ParticleState, old: ParticleState) -> ParticleState:
    """Per particle: the proposal where accepted, the old state elsewhere."""
    pick = lambda a, b: None if a is None else np.where(accepted.reshape((-1,) + (1,) * (a.ndim - 1)), a, b)  # noqa: E731
    parts = LogDensityParts(
        pick(new.parts.log_f0, old.parts.log_f0),
        pick(new.parts.U, old.parts.U),
        pick(new.parts.grad_log_f0, old.parts.grad_log_f0),
        pick(new.parts.grad_U, old.parts.grad_U),
    )
    return ParticleState(pick(new.x, old.x), parts)


class Kernel:
    """Base class of pmz kernels.

    Attributes
    ----------
    name : str
    needs_grad : bool
        Whether states must carry gradients.
    target_acceptance : float
        Mean acceptance rate the step-size tuning aims for.
    tunable : bool
        Whether the kernel has a step size to tune (False for Gibbs kernels: runners then skip the pilot).
    """

    name = "kernel"
    needs_grad = False
    target_acceptance = 0.5
    tunable = True

    def default_params(self, dim: int) -> KernelParams:
        raise NotImplementedError

    def step(self, rng, state: ParticleState, family, beta, params: KernelParams):
        raise NotImplementedError

    def init_state(self, family, X) -> ParticleState:
        return ParticleState(np.asarray(X, dtype=float), family.parts(X, grad=self.needs_grad))
