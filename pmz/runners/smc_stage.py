"""One stage of resample-move SMC or of the adaptive resample-move algorithm (ARM) of Fraccaro, Paquet & Winther, as a
step ``(rng, state, t_new) -> (state, info)`` over any :class:`~pmz.sequences.base.SMCSequence`.

The stage from position ``t`` to ``t'`` (docs/methods.md, section 10):

1. **anticipate** (``"arm_anticipate"`` only): with the look-ahead weights ``w~ ∝ Wbar W``, a particle with
   ``c = floor(R w~) > 1`` is split into ``c`` copies of weight ``Wbar / c`` (so the move spreads them out where
   the next distribution puts its mass);
2. **move**: ``n_steps_per_temp`` batched kernel steps invariant for ``p_t`` (none at the first stage, whose particles
   are exact draws); the kernel's scale is the weighted particle sd and its step size follows the acceptance rate
   (``log eps += gain (acceptance - target)`` after every step, :mod:`pmz.kernels.adaptation`), as PyMC's and
   BlackJAX's SMC tune from the cloud;
3. **reweight**: incremental weights ``W = f_{t'} / f_t`` (new components summed out); the stage's estimate of
   ``Z_{t'} / Z_t`` is ``sum_r Wbar_r W_r``;
4. **generate** (ARM): while ``gamma = R_eff / R_n < gamma_threshold`` (``gamma_relative_to="pool"``, ARM as
   docs/methods.md, section 10, states it; ``"base"``: ``gamma = R_eff / R``, stop once the pool holds
   ``gamma_threshold R`` effective particles) and fewer than ``max_generate`` rounds, add a block of particles that
   target ``p_t`` -- the last block copied and moved ``n_steps_per_temp`` more steps (``"arm"``,
   ``"arm_anticipate"``), or ``S = max((1 - gamma / gamma_threshold) R, min_reseed)`` fresh particles from the
   sequence, burnt in by ``reseed_steps`` moves (``"arm_reseed"``); at the first stage, ``R`` new exact draws of
   ``p_{t_0}`` -- and pool all blocks, block ``b`` of ``n_b`` particles getting total weight ``n_b / R_n`` (ARM
   Proposition 1); ``R_eff`` is the Kish ESS of ``Wbar W`` over the pool;
5. **resample**: ARM resamples back to ``R`` at every stage; resample-move (``"rm"``) when the ESS of the
   accumulated weights falls below ``resample_threshold * R_n``;
6. **augment**: the components ``p_{t'}`` adds are drawn from their exact conditional.

``log Z_{t'} = log Z_t + log(sum_r Wbar_r W_r)``. :func:`pmz.runners.resample_move.run_smc` drives stages over a
sequence; the tuning pilot (:mod:`pmz.runners.pilot`) is an SMC run over a schedule with the same stage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels.adaptation import tuned_steps, weighted_scale
from ..kernels.base import KernelParams, ParticleState
from ..weights import ess, logsumexp, normalized_log_weights
from .resampling import resample

__all__ = ["ALGORITHMS", "SMCSettings", "SMCState", "SMCInfo", "smc_init", "smc_stage"]

ALGORITHMS = ("rm", "arm", "arm_anticipate", "arm_reseed")


@dataclass(frozen=True)
class SMCSettings:
    """How a stage moves, generates and resamples (the options of :func:`pmz.runners.resample_move.run_smc`).

    Attributes
    ----------
    n_particles : int
        ``R``: particles after each resampling.
    algorithm : {"rm", "arm", "arm_anticipate", "arm_reseed"}
    n_steps_per_temp : int
        Kernel steps per stage and per generated block.
    tune : bool
        Tune a tunable kernel from the cloud (scale and step size, see the module docstring).
    gain : float
        Robbins-Monro gain of the log step size.
    resampling : str
        Resampling scheme (:mod:`pmz.runners.resampling`).
    resample_threshold : float
        ``"rm"`` resamples when the ESS falls below this fraction of the particles.
    gamma_threshold, gamma_relative_to, max_generate, min_reseed, reseed_steps
        ARM's generate loop (module docstring).
    """

    n_particles: int
    algorithm: str = "rm"
    n_steps_per_temp: int = 5
    tune: bool = True
    gain: float = 1.0
    resampling: str = "systematic"
    resample_threshold: float = 0.8
    gamma_threshold: float = 0.7
    gamma_relative_to: str = "pool"
    max_generate: int = 10
    min_reseed: int = 100
    reseed_steps: int = 20


@dataclass(frozen=True)
class SMCState:
    """The particle system of one SMC run between stages.

    Attributes
    ----------
    particles : ParticleState
        The particles (targeting ``p_t`` with ``log_w``).
    log_w : ndarray (n,)
        Their log weights: zeros after resampling, the accumulated increments otherwise.
    t : float
        The position.
    log_z : float
        The run's estimate of ``log Z_t``.
    n_stages : int
        Stages taken (the first one moves nothing: its particles are exact draws).
    params : KernelParams
        The kernel's parameters (scale from the last stage's cloud, step size as adapted).
    log_step_size : float
        The adapted ``log eps`` (NaN when the kernel is not tuned), carried from stage to stage.
    ess_start : float
        ESS of the weights at the start of the stages since the last resampling.
    begins_block : bool
        Whether the last stage resampled (the next one starts a new block of weights).
    """

    particles: ParticleState
    log_w: np.ndarray
    t: float
    log_z: float
    n_stages: int
    params: KernelParams
    log_step_size: float
    ess_start: float
    begins_block: bool = True


@dataclass(frozen=True)
class SMCInfo:
    """What one stage did (a row of :class:`~pmz.records.SMCRecord`, documented there, without ``run``).

    ``arrival`` and ``arrival_log_w`` are the pooled particles reweighted to ``t'`` and their log weights, before
    resampling and augmenting: the best weighted picture of ``p_{t'}`` (the pilot measures scales and ``U`` there).
    """

    log_increment: float
    position: float
    position_from: float
    n_particles: int
    ess: float
    ess_start: float
    gamma: float
    gamma_initial: float
    n_generate: int
    acceptance: float
    step_size: float
    n_moves: int
    resampled: bool
    arrival: ParticleState
    arrival_log_w: np.ndarray


def smc_init(rng, sequence, settings: SMCSettings) -> SMCState:
    """``R`` exact draws of ``p_{t_start}`` with equal weights, the kernel's default parameters."""
    R = int(settings.n_particles)
    kernel = sequence.kernel
    params = kernel.default_params(sequence.dim)
    log_eps = float(np.log(params.step_size)) if kernel.tunable else np.nan
    particles = sequence.start(rng, R)
    t, log_z = float(sequence.t_start), float(sequence.log_z0)
    return SMCState(particles, np.zeros(R), t, log_z, 0, params, log_eps, float(R))


def _split(state, log_w, log_W_ahead, R):
    """ARM-anticipate: particle ``r`` becomes ``max(1, floor(R w~_r))`` copies, each with weight ``Wbar_r / c_r``."""
    look_ahead = np.exp(normalized_log_weights(log_w + log_W_ahead))
    copies = np.maximum(1, np.floor(R * look_ahead)).astype(np.int64)
    index = np.repeat(np.arange(copies.size), copies)
    return state.take(index), np.repeat(normalized_log_weights(log_w) - np.log(copies), copies)


def smc_stage(rng, state: SMCState, t_new: float, sequence, settings: SMCSettings) -> tuple[SMCState, SMCInfo]:
    """One stage from ``state.t`` to ``t_new`` (see the module docstring).

    Raises ``FloatingPointError`` when every particle has zero weight at ``t_new``.
    """
    R, algorithm, first = int(settings.n_particles), settings.algorithm, state.n_stages == 0
    t = state.t
    kernel = sequence.kernel
    tune = bool(settings.tune) and kernel.tunable
    particles, log_w = state.particles, state.log_w
    if not first and algorithm == "arm_anticipate":
        log_W_ahead, _ = sequence.log_increment(particles, t, t_new)
        particles, log_w = _split(particles, log_w, log_W_ahead, R)
    params, log_eps = state.params, state.log_step_size
    if tune:  # the scale of this stage's moves: the weighted cloud at its start
        params = KernelParams(float(np.exp(log_eps)), weighted_scale(particles.x, log_w), params.n_leapfrog)
    acceptance, n_moves = [], 0

    def move(block, n_steps_per_temp):
        nonlocal params, log_eps, n_moves
        block, params, new_log_eps, acc = tuned_steps(
            rng, block, lambda r, s, p: sequence.move(r, s, t, p), params, n_steps_per_temp,
            log_step_size=log_eps if tune else None, target=kernel.target_acceptance, gain=settings.gain,
        )
        log_eps = new_log_eps if tune else log_eps
        acceptance.append(acc)
        n_moves += block.x.shape[0] * acc.size
        return block

    if not first:  # the first particles are exact draws of p_{t_0}
        particles = move(particles, settings.n_steps_per_temp)
    log_W, particles_new = sequence.log_increment(particles, t, t_new)
    blocks = [(particles, particles_new, normalized_log_weights(log_w), log_W)]

    def pooled():
        n_total = sum(b[0].x.shape[0] for b in blocks)
        lw = np.concatenate([np.log(b[0].x.shape[0] / n_total) + b[2] for b in blocks])
        return n_total, lw, np.concatenate([b[3] for b in blocks])

    relative_to = (lambda n: n) if settings.gamma_relative_to == "pool" else (lambda n: R)  # noqa: E731
    n_pool, pool_lw, pool_W = pooled()
    gamma_initial = gamma = ess(pool_lw + pool_W) / relative_to(n_pool)
    n_generate = 0
    while algorithm != "rm" and gamma < settings.gamma_threshold and n_generate < settings.max_generate:
        if first:  # exact draws of p_{t_0} are the best particles to add
            new = sequence.start(rng, R)
            new_lw = np.full(R, -np.log(R))
        elif algorithm == "arm_reseed":
            size = max(int((1 - gamma / settings.gamma_threshold) * R), int(settings.min_reseed))
            new = move(sequence.fresh(rng, size, t), settings.reseed_steps)
            new_lw = np.full(size, -np.log(size))
        else:  # copy the last block and move it on
            new = move(blocks[-1][0], settings.n_steps_per_temp)
            new_lw = blocks[-1][2]
        new_W, new_state_new = sequence.log_increment(new, t, t_new)
        blocks.append((new, new_state_new, new_lw, new_W))
        n_pool, pool_lw, pool_W = pooled()
        gamma = ess(pool_lw + pool_W) / relative_to(n_pool)
        n_generate += 1
    ess_start = ess(pool_lw) if state.begins_block else state.ess_start
    post = pool_lw + pool_W
    log_increment = float(logsumexp(post))
    if not np.isfinite(log_increment):
        raise FloatingPointError(
            f"pmz: every particle has zero (or non-finite) weight going from {sequence.label} = {t:g} to "
            f"{t_new:g}: p_{{t'}} puts no mass where the particles are (check the model's support and the data), "
            "or the step is far too large (lower cess_target, add temperatures)"
        )
    ess_after = ess(post)
    arrival = ParticleState.concatenate([b[1] for b in blocks])
    resampled = algorithm != "rm" or ess_after < settings.resample_threshold * n_pool
    if resampled:
        particles, log_w = arrival.take(resample(rng, post, R, settings.resampling)), np.zeros(R)
    else:
        particles, log_w = arrival, post
    particles = sequence.augment(rng, particles, t, t_new)
    acceptance = np.concatenate(acceptance) if acceptance else np.empty(0)
    info = SMCInfo(
        log_increment=log_increment,
        position=t_new,
        position_from=t,
        n_particles=n_pool,
        ess=ess_after,
        ess_start=ess_start,
        gamma=gamma,
        gamma_initial=gamma_initial,
        n_generate=n_generate,
        acceptance=float(np.mean(acceptance)) if acceptance.size else np.nan,
        step_size=float(np.exp(log_eps)) if tune else np.nan,
        n_moves=n_moves,
        resampled=resampled or t_new >= sequence.t_end,
        arrival=arrival,
        arrival_log_w=post,
    )
    new_state = SMCState(
        particles, log_w, t_new, state.log_z + log_increment, state.n_stages + 1, params, log_eps, ess_start, resampled
    )
    return new_state, info
