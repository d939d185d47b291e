"""Simulated tempering on many parallel chains, recording a :class:`~pmz.records.TemperingTrace` (RTS Algorithm 1).

Every chain carries a position x and a level k on the ladder ``b_0 = 0 < ... < b_{K-1} = 1``. One *sweep*
(:func:`tempering_sweep`: the step that :func:`run_tempering`, :func:`pmz.runners.wang_landau.run_wang_landau` and
the PyMC step methods of :mod:`pmz.step_methods.tempered_step` share; :func:`tempering_init` starts the chains):

1. move x with ``n_steps_per_temp`` steps of the batched kernel, each chain at its own ``beta = b_{k_i}`` with
   that level's frozen kernel parameters (one batched log-density call per proposal for all chains);
2. compute ``q(. | x_i)`` over all K levels at the new x (Rao-Blackwellisation, RTS eq 9);
3. draw new levels from ``q(k | x)`` (Gibbs) or by +-1 Metropolis moves (:mod:`pmz.runners.levels`).

:func:`run_tempering` drives sweeps with frozen guesses and records, per batch of sweeps, ``q``, the ``q``-weighted
``U`` and ``U^2``, the visits, and ``U`` at the visited level.

:func:`adapt_log_zhat` runs the *initial iterations* of RTS section 2.4: short runs alternating with the RTS
update ``log Zhat_k <- log Zhat_k + log(c_hat_k / r_k) - log(c_hat_0 / r_0)`` (:func:`rts_update`, in
:mod:`pmz.runners.level_weights` with the other rules that adapt the guesses), each restarting from the chains'
last x with fresh uniform levels, until ``max_k |r_k - c_hat_k| < tol / K``. With good ``Zhat`` every level is
visited about ``r_k`` of the time, so the ladder mixes.

The settings of a sweep and of a run (:class:`~pmz.runners.tempering_settings.SweepSettings`,
:class:`~pmz.runners.tempering_settings.TemperingSettings`) are documented and checked once, in
:mod:`pmz.runners.tempering_settings`.

Runners record; the estimators in :mod:`pmz.estimators.rts`, :mod:`pmz.estimators.ti` and
:mod:`pmz.estimators.mbar` turn a trace into log Z.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..kernels.base import Kernel, ParticleState, params_per_particle
from ..model.target import count_evaluations
from ..progress import progress_bar
from ..records import RunNotes, TemperingTrace
from .level_weights import rts_update
from .pooling import CHAIN_BLOCKS, TRACE_SUMS, block_offsets, pooled_trace_sums
from .row_streams import RowStreams
from .levels import level_log_probs, move_levels
from .tempering_settings import SweepSettings, TemperingSettings, uniform_log_prior

__all__ = [
    "run_tempering",
    "adapt_log_zhat",
    "TemperingState",
    "TemperingInfo",
    "tempering_init",
    "tempering_sweep",
    "rts_update",
    "uniform_log_prior",
    "start_outside_support_at_zero",
]


def start_outside_support_at_zero(levels, U, betas) -> np.ndarray:
    """Chains whose ``U`` is not finite (``f1(x) = 0``: a likelihood that is zero there) start at level 0 when
    ``b_0 = 0``, the only level where ``f_b(x) > 0``; at any other level their kernel could never move them (every
    proposal's ratio to a zero density is rejected) and ``q(k | x)`` sends them to level 0 after the first sweep
    anyway."""
    levels = np.asarray(levels, dtype=int)
    if betas[0] != 0.0:
        return levels
    return np.where(np.isfinite(U), levels, 0)


@dataclass(frozen=True)
class TemperingState:
    """Simulated-tempering chains (a batch; the PyMC step methods use a batch of one).

    Attributes
    ----------
    particles : ParticleState
        Each chain's position x with its cached log-density parts (``U`` gives the level conditional).
    levels : ndarray (n,) of int
        Each chain's level k (``beta = b_k``).
    """

    particles: ParticleState
    levels: np.ndarray


@dataclass(frozen=True)
class TemperingInfo:
    """What one sweep did, per chain.

    Attributes
    ----------
    moved_at : ndarray (n,) of int
        The levels at which x moved (the levels before the level move): ``(x, moved_at)`` is the recorded sample.
    log_q : ndarray (n, K)
        ``log q(k | x)`` at the moved x for every level, with the guesses of the sweep (Rao-Blackwellisation).
    acceptance : ndarray (n,)
        Kernel acceptance probability, averaged over the sweep's kernel steps.
    level_accepted : ndarray (n,) of bool
        Whether the level move was accepted (always True for Gibbs draws).
    """

    moved_at: np.ndarray
    log_q: np.ndarray
    acceptance: np.ndarray
    level_accepted: np.ndarray


def tempering_sweep(
    rng,
    state: TemperingState,
    *,
    family,
    kernel: Kernel,
    betas,
    params,
    log_zhat,
    settings: SweepSettings,
) -> tuple[TemperingState, TemperingInfo]:
    """One sweep of RTS Algorithm 1 for all chains: ``settings.n_steps_per_temp`` kernel steps on x, each chain at
    its own ``beta = b_k`` with level k's parameters ``params[k]``, then ``log q(k | x)`` at the new x (guesses
    ``log_zhat``, prior ``settings.log_prior``) and a level move ``settings.level_move``
    (:func:`pmz.runners.levels.move_levels`). The same step serves :func:`run_tempering`,
    :func:`pmz.runners.wang_landau.run_wang_landau`, :func:`pmz.runners.cast.cast_step` and the PyMC step methods
    (one chain); ``settings`` is any :class:`~pmz.runners.tempering_settings.SweepSettings` (those of the loop).
    """
    n_steps_per_temp = settings.n_steps_per_temp
    levels = state.levels
    step_params = params_per_particle(params, levels)
    beta = betas[levels]
    particles = state.particles
    acceptance = np.zeros(levels.size)
    for _ in range(n_steps_per_temp):
        particles, info = kernel.step(rng, particles, family, beta, step_params)
        acceptance += info.acceptance
    log_q = level_log_probs(particles.parts.U, betas, log_zhat, settings.log_prior_of(betas.size))
    new_levels, accepted = move_levels(rng, levels, log_q, settings.level_move)
    return TemperingState(particles, new_levels), TemperingInfo(levels, log_q, acceptance / n_steps_per_temp, accepted)


def tempering_init(rng, family, kernel: Kernel, betas, n_chains: int, *, start_x=None, start_levels=None):
    """The chains' start: ``x`` exact draws of f0 (or ``start_x``), levels uniform (or ``start_levels``), and a chain
    outside the support of f1 at level 0 (:func:`start_outside_support_at_zero`)."""
    x0 = family.sample_start(rng, n_chains) if start_x is None else np.asarray(start_x, dtype=float)
    levels = rng.integers(0, betas.size, size=n_chains) if start_levels is None else np.asarray(start_levels, dtype=int)
    particles = kernel.init_state(family, x0)
    return TemperingState(particles, start_outside_support_at_zero(levels, particles.parts.U, betas))


def _add_sample(sums, b, U, info: TemperingInfo, K: int, cuts: np.ndarray):
    """Add a sweep's Rao-Blackwellised and visited-level statistics to batch ``b`` of each block's sums (``sums``:
    (8, G, B, K) in the order of :data:`pmz.runners.pooling.TRACE_SUMS`; block ``g`` holds the chains from
    ``cuts[g]`` to the next cut)."""
    q = np.exp(info.log_q)
    G = cuts.size
    block = np.repeat(np.arange(G), np.diff(np.append(cuts, U.size)))
    moved_at = block * K + info.moved_at  # (block, level) as one index
    finite = np.isfinite(U)
    U_finite = np.where(finite, U, 0.0)  # q(k | x) = 0 wherever U is not finite and b_k > 0

    def per_block(values):  # (n_chains, K) -> (G, K): each block's column sums
        return np.add.reduceat(values, cuts, axis=0)

    def per_level(weights=None):  # sums over each block's chains by the level they moved at -> (G, K)
        return np.bincount(moved_at, weights=weights, minlength=G * K).reshape(G, K)

    sums[0, :, b] += per_block(q)
    sums[1, :, b] += per_block(U_finite[:, None] * q)
    sums[2, :, b] += per_block(U_finite[:, None] ** 2 * q)
    sums[3, :, b] += per_level()
    sums[4, :, b] += per_level(U_finite)
    sums[5, :, b] += per_level(U_finite**2)
    sums[6, :, b] += per_level(np.where(finite, 0.0, 1.0))
    sums[7, :, b] += per_block(np.where(finite[:, None], 0.0, q))


def run_tempering(
    family,
    kernel: Kernel,
    betas,
    params,
    settings: TemperingSettings,
    *,
    log_zhat,
    rng: np.random.Generator | None = None,
    streams: RowStreams | None = None,
    rows: tuple[int, int] | None = None,
    start_x=None,
    start_levels=None,
    progressbar: bool = True,
    notes: RunNotes | None = None,
    desc: str = "tempering",
    keep_on_interrupt: bool = False,
) -> TemperingTrace:
    """Run ``settings.n_chains`` simulated-tempering chains (or the chains ``rows`` of them) for
    ``settings.n_sweeps`` sweeps with fixed ``log_zhat``.

    With ``keep_on_interrupt`` (a whole run in one chunk here: no chunks to keep), Ctrl-C after two sweeps keeps the
    finished sweeps: the trace is that of a shorter run and its ``notes.interrupted`` says so (``pmz.evidence``
    marks the result partial and unreliable); otherwise it raises.

    Parameters
    ----------
    family : TemperedFamily
    kernel : Kernel
        Any pmz kernel; it receives one beta per chain and per-chain parameters.
    betas : array (K,)
        The ladder, from 0 to 1.
    params : sequence of KernelParams, length K
        Frozen kernel parameters of each level.
    settings : TemperingSettings
        Chains, sweeps, level move, kernel steps per sweep, prior over levels and what is kept
        (:class:`~pmz.runners.tempering_settings.TemperingSettings`).
    log_zhat : array (K,)
        Guesses of ``log Z_k`` (relative to level 0).
    rng : numpy.random.Generator, optional
        The run's stream: the chains' streams are :meth:`RowStreams.spawn(rng, settings.n_chains)
        <pmz.runners.row_streams.RowStreams.spawn>`. Give ``rng`` or ``streams``.
    streams : RowStreams, optional
        The run's row streams (a chunk of a run gets those of the whole run).
    rows : (int, int), optional
        The chains ``start .. stop - 1`` to run (default: all; whole blocks of work,
        :func:`pmz.runners.pooling.block_offsets`); the trace holds those chains only.
    start_x : array (stop - start, dim), optional
        Default: exact draws of f0.
    start_levels : array (stop - start,), optional
        Default: uniform random levels.
    progressbar : bool
    notes : RunNotes, optional
        How ``params`` were obtained, stored in the trace (with an interruption it survived).
    desc : str
        The progress bar's label.
    keep_on_interrupt : bool
        Keep the finished sweeps on Ctrl-C (see above).
    """
    betas = np.asarray(betas, dtype=float)
    K = betas.size
    if len(params) != K:
        raise ValueError(f"need one KernelParams per level ({K}), got {len(params)}")
    log_zhat = np.asarray(log_zhat, dtype=float)
    log_prior = settings.log_prior_of(K)
    n_chains, n_sweeps = settings.n_chains, settings.n_sweeps
    if (rng is None) == (streams is None):
        raise ValueError("pmz: run_tempering needs rng= (the run's stream) or streams= (its row streams), not both")
    streams = RowStreams.spawn(rng, n_chains) if streams is None else streams
    first, stop = (0, int(n_chains)) if rows is None else (int(rows[0]), int(rows[1]))
    offsets = block_offsets(n_chains, CHAIN_BLOCKS)
    if first not in offsets or stop not in offsets:
        raise ValueError(f"pmz: chains {first}..{stop} are not whole blocks of work of a run of {n_chains} chains")
    cuts = offsets[(offsets >= first) & (offsets < stop)] - first  # where this run's blocks begin
    n_run = stop - first
    stream = streams.generator(first, stop)
    evals = count_evaluations(family)
    if start_x is None:  # each chain's exact draw of f0 from its own stream
        start_x = stream.rows(family.sample_start)
    state = tempering_init(stream, family, kernel, betas, n_run, start_x=start_x, start_levels=start_levels)

    B = max(1, min(settings.n_batches, n_sweeps))
    G = cuts.size
    sums = np.zeros((len(TRACE_SUMS), G, B, K))
    block_accept = np.zeros((2, G, K))  # acceptance sums and moves per block and level
    level_accepted = np.zeros(G, dtype=int)
    block = np.repeat(np.arange(G), np.diff(np.append(cuts, n_run)))
    batch_size = np.zeros(B, dtype=int)
    store_draws = settings.store_draws
    n_traces = min(settings.n_traces, n_run)
    level_traces = np.empty((n_sweeps, n_traces), dtype=int)
    draws_U = np.empty((n_sweeps, n_run)) if store_draws else None
    draws_level = np.empty((n_sweeps, n_run), dtype=int) if store_draws else None
    log_q, notes, done = None, RunNotes() if notes is None else notes, n_sweeps
    with progress_bar(total=n_sweeps, desc=desc, disable=not progressbar) as bar:
        for t in range(n_sweeps):
            try:
                state, info = tempering_sweep(
                    stream, state, family=family, kernel=kernel, betas=betas, params=params, log_zhat=log_zhat,
                    settings=settings,
                )
            except KeyboardInterrupt:  # Ctrl-C: keep the finished sweeps where asked
                if not (keep_on_interrupt and t >= 2):
                    raise
                done = t
                notes = replace(notes, interrupted=f"interrupted (Ctrl-C) after {t} of {n_sweeps} sweeps")
                break
            b = t * B // n_sweeps
            _add_sample(sums, b, state.particles.parts.U, info, K, cuts)
            batch_size[b] += n_run
            at = block * K + info.moved_at
            block_accept[0] += np.bincount(at, weights=info.acceptance, minlength=G * K).reshape(G, K)
            block_accept[1] += np.bincount(at, minlength=G * K).reshape(G, K)
            level_accepted += np.add.reduceat(np.asarray(info.level_accepted, dtype=int), cuts)
            level_traces[t] = state.levels[:n_traces]
            if store_draws:
                draws_U[t], draws_level[t] = state.particles.parts.U, info.moved_at
            log_q = info.log_q
            bar.update(1)

    if done < n_sweeps:  # the batches the finished sweeps reached
        n_used = int(np.count_nonzero(batch_size))
        sums, batch_size = sums[:, :, :n_used], batch_size[:n_used]
        level_traces = level_traces[:done]
        draws_U = None if draws_U is None else draws_U[:done]
        draws_level = None if draws_level is None else draws_level[:done]
    return TemperingTrace(
        betas=betas,
        log_zhat=log_zhat,
        log_prior=log_prior,
        batch_size=batch_size,
        log_z0=float(family.log_z0),
        level_traces=level_traces,
        n_chains=int(n_run),
        n_sweeps=int(done),
        n_steps_per_temp=settings.n_steps_per_temp,
        level_move=settings.level_move,
        kernel=kernel.name,
        draws_U=None if draws_U is None else draws_U.ravel(),
        draws_level=None if draws_level is None else draws_level.ravel(),
        final_x=state.particles.x,
        final_levels=state.levels,
        final_log_q=log_q,
        n_logp_evals=evals.n_logp_evals,
        n_grad_evals=evals.n_grad_evals,
        notes=notes,
        block_sums=sums,
        block_accept=block_accept,
        block_level_accepted=level_accepted,
        **pooled_trace_sums(sums, block_accept, level_accepted, done * n_run),
    )


def adapt_log_zhat(
    family,
    kernel: Kernel,
    betas,
    params,
    settings: TemperingSettings,
    *,
    log_zhat,
    rng: np.random.Generator,
    max_iterations: int = 10,
    tol: float = 0.1,
    start_x=None,
    progressbar: bool = True,
):
    """The initial iterations of RTS section 2.4 (see module docstring): at most ``max_iterations`` runs of
    :func:`run_tempering` with ``settings`` (``settings.n_sweeps`` sweeps each; one batch, no level trajectories
    and no draws kept, whatever ``settings`` says), each from the last one's positions with fresh uniform levels.

    Returns ``(log_zhat, x, levels, stages, converged)``: the adapted guesses, the chains' last positions and
    levels (a long run that starts there needs no burn-in with +-1 level moves, which mix slowly), one
    :class:`TemperingTrace` per iteration (each with the guesses it ran with), and whether
    ``max_k |r_k - c_hat_k| < tol / K`` was reached within ``max_iterations``.
    """
    betas = np.asarray(betas, dtype=float)
    K = betas.size
    log_prior = settings.log_prior_of(K)
    log_zhat = np.asarray(log_zhat, dtype=float)
    each = settings.replace(n_batches=1, n_traces=0, store_draws=False)
    x, levels, stages, converged = start_x, None, [], False
    for i in range(int(max_iterations)):
        trace = run_tempering(
            family,
            kernel,
            betas,
            params,
            each,
            log_zhat=log_zhat,
            rng=rng,
            start_x=x,
            progressbar=progressbar,
            desc=f"RTS initial iteration {i + 1}",
        )
        x, levels = trace.final_x, trace.final_levels
        stages.append(replace(trace, final_x=None, final_log_q=None))  # the stages keep their statistics only
        gap = float(np.max(np.abs(np.exp(log_prior) - trace.c_hat)))
        log_zhat = rts_update(log_zhat, trace.c_hat, log_prior)
        if gap < tol / K:
            converged = True
            break
    return log_zhat, x, levels, stages, converged
