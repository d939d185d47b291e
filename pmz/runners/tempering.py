"""Simulated tempering on many parallel chains, recording a :class:`~pmz.records.TemperingTrace` (RTS Algorithm 1).

Every chain carries a position x and a level k on the ladder ``b_0 = 0 < ... < b_{K-1} = 1``. One *sweep*:

1. move x with ``n_steps_per_sweep`` steps of the batched kernel, each chain at its own ``beta = b_{k_i}`` with
   that level's frozen kernel parameters (one batched log-density call per proposal for all chains);
2. record ``q(. | x_i)`` over all K levels (Rao-Blackwellisation, RTS eq 9), the ``q``-weighted ``U`` and ``U^2``,
   the visits, and ``U`` at the visited level;
3. draw new levels from ``q(k | x)`` (Gibbs) or by +-1 Metropolis moves (:mod:`pmz.runners.levels`).

:func:`adapt_log_zhat` runs the *initial iterations* of RTS section 2.4: short runs alternating with the RTS
update ``log Zhat_k <- log Zhat_k + log(c_hat_k / r_k) - log(c_hat_0 / r_0)``, each restarting from the chains'
last x with fresh uniform levels, until ``max_k |r_k - c_hat_k| < tol / K``. With good ``Zhat`` every level is
visited about ``r_k`` of the time, so the ladder mixes.

Runners record; the estimators in :mod:`pmz.estimators.rts`, :mod:`pmz.estimators.ti` and
:mod:`pmz.estimators.mbar` turn a trace into log Z.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..kernels.base import Kernel, params_per_particle
from ..model.target import count_evaluations
from ..progress import progress_bar
from ..records import TemperingTrace
from .levels import level_log_probs, move_levels

__all__ = [
    "run_tempering",
    "adapt_log_zhat",
    "tempering_sweep",
    "rts_update",
    "uniform_log_prior",
    "start_outside_support_at_zero",
]


def uniform_log_prior(n_levels: int) -> np.ndarray:
    return np.full(n_levels, -np.log(n_levels))


def start_outside_support_at_zero(levels, U, betas) -> np.ndarray:
    """Chains whose ``U`` is not finite (``f1(x) = 0``: a likelihood that is zero there) start at level 0 when
    ``b_0 = 0``, the only level where ``f_b(x) > 0``; at any other level their kernel could never move them (every
    proposal's ratio to a zero density is rejected) and ``q(k | x)`` sends them to level 0 after the first sweep
    anyway."""
    levels = np.asarray(levels, dtype=int)
    if betas[0] != 0.0:
        return levels
    return np.where(np.isfinite(U), levels, 0)


def tempering_sweep(
    rng, state, levels, kernel: Kernel, family, betas, params, log_zhat, log_prior, level_move, n_steps
):
    """One sweep for all chains: x moves at each chain's level, then the levels move.

    Returns ``(state, new_levels, log_q, acceptance, level_accepted)`` where ``log_q (n, K)`` is ``log q(k | x)``
    at the moved x (the Rao-Blackwellised statistics of the sample ``(x, levels)``).
    """
    step_params = params_per_particle(params, levels)
    beta = betas[levels]
    acceptance = np.zeros(levels.size)
    for _ in range(n_steps):
        state, info = kernel.step(rng, state, family, beta, step_params)
        acceptance += info.acceptance
    log_q = level_log_probs(state.parts.U, betas, log_zhat, log_prior)
    new_levels, accepted = move_levels(rng, levels, log_q, level_move)
    return state, new_levels, log_q, acceptance / n_steps, accepted


def rts_update(log_zhat, c_hat, log_prior) -> np.ndarray:
    """The RTS estimate of ``log Z_k - log Z_0`` from a run with guesses ``log_zhat``: RTS eq 10,
    ``Z_k = Zhat_k (r_0 / r_k) (c_k / c_0)``. A level whose ``c_k`` underflowed to 0 gets the smallest finite
    ``log c`` minus 50 nats: a finite guess far below the others, so the next run moves towards it."""
    with np.errstate(divide="ignore"):
        log_c = np.log(c_hat)
    log_c = np.where(np.isfinite(log_c), log_c, np.min(log_c[np.isfinite(log_c)]) - 50.0)
    new = log_zhat + log_c - log_prior
    return new - new[0]


def run_tempering(
    family,
    kernel: Kernel,
    betas,
    params,
    *,
    log_zhat,
    rng: np.random.Generator,
    n_chains: int,
    n_sweeps: int,
    log_prior=None,
    level_move: str = "gibbs",
    n_steps_per_sweep: int = 1,
    start_x=None,
    start_levels=None,
    n_batches: int = 1000,
    n_traces: int = 5,
    store_draws: bool = False,
    progressbar: bool = True,
    tuning: dict | None = None,
    desc: str = "tempering",
) -> TemperingTrace:
    """Run ``n_chains`` simulated-tempering chains for ``n_sweeps`` sweeps with fixed ``log_zhat``.

    Parameters
    ----------
    family : TemperedFamily
    kernel : Kernel
        Any pmz kernel; it receives one beta per chain and per-chain parameters.
    betas : array (K,)
        The ladder, from 0 to 1.
    params : sequence of KernelParams, length K
        Frozen kernel parameters of each level.
    log_zhat : array (K,)
        Guesses of ``log Z_k`` (relative to level 0).
    rng : numpy.random.Generator
    n_chains, n_sweeps : int
    log_prior : array (K,), optional
        ``log r_k``; default uniform.
    level_move : {"gibbs", "metropolis"}
    n_steps_per_sweep : int
        Kernel steps on x per sweep.
    start_x : array (n_chains, dim), optional
        Default: exact draws of f0.
    start_levels : array (n_chains,), optional
        Default: uniform random levels.
    n_batches : int
        The sums are kept per batch of consecutive sweeps (at most ``n_sweeps`` batches: one per sweep for runs
        up to 1000 sweeps); the estimators' error bars come from this series, with its autocorrelation.
    n_traces : int
        Chains whose level trajectories are kept.
    store_draws : bool
        Keep every sample's ``U`` and level (for MBAR): ``n_sweeps * n_chains`` floats.
    """
    betas = np.asarray(betas, dtype=float)
    K = betas.size
    if len(params) != K:
        raise ValueError(f"need one KernelParams per level ({K}), got {len(params)}")
    log_zhat = np.asarray(log_zhat, dtype=float)
    log_prior = uniform_log_prior(K) if log_prior is None else np.asarray(log_prior, dtype=float)
    evals = count_evaluations(family)
    x0 = family.sample_start(rng, n_chains) if start_x is None else np.asarray(start_x, dtype=float)
    levels = rng.integers(0, K, size=n_chains) if start_levels is None else np.asarray(start_levels, dtype=int)
    state = kernel.init_state(family, x0)
    levels = start_outside_support_at_zero(levels, state.parts.U, betas)

    B = max(1, min(int(n_batches), int(n_sweeps)))
    sums = {name: np.zeros((B, K)) for name in ("q", "qU", "qU2", "counts", "U", "U2", "inf", "q_inf")}
    batch_size = np.zeros(B, dtype=int)
    n_traces = min(int(n_traces), n_chains)
    level_traces = np.empty((n_sweeps, n_traces), dtype=int)
    accept_sum, accept_n = np.zeros(K), np.zeros(K)
    level_accepted = 0
    draws_U = np.empty((n_sweeps, n_chains)) if store_draws else None
    draws_level = np.empty((n_sweeps, n_chains), dtype=int) if store_draws else None
    log_q = None
    with progress_bar(total=n_sweeps, desc=desc, disable=not progressbar) as bar:
        for t in range(n_sweeps):
            moved_at = levels
            state, levels, log_q, acceptance, accepted = tempering_sweep(
                rng, state, levels, kernel, family, betas, params, log_zhat, log_prior, level_move, n_steps_per_sweep
            )
            b = t * B // n_sweeps
            q = np.exp(log_q)
            U = state.parts.U
            finite = np.isfinite(U)
            U_finite = np.where(finite, U, 0.0)  # q(k | x) = 0 wherever U is not finite and b_k > 0
            sums["q"][b] += q.sum(axis=0)
            sums["q_inf"][b] += q[~finite].sum(axis=0)
            sums["inf"][b] += np.bincount(moved_at[~finite], minlength=K)
            sums["qU"][b] += U_finite @ q
            sums["qU2"][b] += U_finite**2 @ q
            sums["counts"][b] += np.bincount(moved_at, minlength=K)
            sums["U"][b] += np.bincount(moved_at, weights=U_finite, minlength=K)
            sums["U2"][b] += np.bincount(moved_at, weights=U_finite**2, minlength=K)
            batch_size[b] += n_chains
            accept_sum += np.bincount(moved_at, weights=acceptance, minlength=K)
            accept_n += np.bincount(moved_at, minlength=K)
            level_accepted += int(np.sum(accepted))
            level_traces[t] = levels[:n_traces]
            if store_draws:
                draws_U[t], draws_level[t] = U, moved_at
            bar.update(1)

    with np.errstate(invalid="ignore"):
        acceptance = accept_sum / accept_n
    return TemperingTrace(
        betas=betas,
        log_zhat=log_zhat,
        log_prior=log_prior,
        batch_q=sums["q"],
        batch_qU=sums["qU"],
        batch_qU2=sums["qU2"],
        batch_counts=sums["counts"],
        batch_U=sums["U"],
        batch_U2=sums["U2"],
        batch_size=batch_size,
        batch_inf=sums["inf"],
        batch_q_inf=sums["q_inf"],
        log_z0=float(family.log_z0),
        level_traces=level_traces,
        acceptance=acceptance,
        level_acceptance=level_accepted / max(n_sweeps * n_chains, 1),
        n_chains=int(n_chains),
        n_sweeps=int(n_sweeps),
        n_steps_per_sweep=int(n_steps_per_sweep),
        level_move=level_move,
        kernel=kernel.name,
        draws_U=None if draws_U is None else draws_U.ravel(),
        draws_level=None if draws_level is None else draws_level.ravel(),
        final_x=state.x,
        final_levels=levels,
        final_log_q=log_q,
        n_logp_evals=evals.n_logp_evals,
        n_grad_evals=evals.n_grad_evals,
        tuning=dict(tuning or {}),
    )


def adapt_log_zhat(
    family,
    kernel: Kernel,
    betas,
    params,
    *,
    log_zhat,
    rng: np.random.Generator,
    n_chains: int,
    n_sweeps: int,
    max_iterations: int = 10,
    tol: float = 0.1,
    log_prior=None,
    level_move: str = "gibbs",
    n_steps_per_sweep: int = 1,
    start_x=None,
    progressbar: bool = True,
):
    """The initial iterations of RTS section 2.4 (see module docstring).

    Returns ``(log_zhat, x, levels, stages, converged)``: the adapted guesses, the chains' last positions and
    levels (a long run that starts there needs no burn-in with +-1 level moves, which mix slowly), one
    :class:`TemperingTrace` per iteration (each with the guesses it ran with), and whether
    ``max_k |r_k - c_hat_k| < tol / K`` was reached within ``max_iterations``.
    """
    betas = np.asarray(betas, dtype=float)
    K = betas.size
    log_prior = uniform_log_prior(K) if log_prior is None else np.asarray(log_prior, dtype=float)
    log_zhat = np.asarray(log_zhat, dtype=float)
    x, levels, stages, converged = start_x, None, [], False
    for i in range(int(max_iterations)):
        trace = run_tempering(
            family,
            kernel,
            betas,
            params,
            log_zhat=log_zhat,
            rng=rng,
            n_chains=n_chains,
            n_sweeps=n_sweeps,
            log_prior=log_prior,
            level_move=level_move,
            n_steps_per_sweep=n_steps_per_sweep,
            start_x=x,
            n_batches=1,
            n_traces=0,
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
