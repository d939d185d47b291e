"""Resample-move sequential Monte Carlo and the adaptive resample-move algorithm (ARM) of Fraccaro, Paquet & Winther,
over any :class:`~pmz.sequences.base.SMCSequence`, recorded as an :class:`~pmz.records.SMCRecord`.

One stage of a run, from position ``t`` to ``t' = sequence.next_position(t, ...)`` (METHODS.md section 10):

1. **anticipate** (``"arm_anticipate"`` only): with the look-ahead weights ``w~ ∝ Wbar W``, a particle with
   ``c = floor(R w~) > 1`` is split into ``c`` copies of weight ``Wbar / c`` (so the move spreads them out where
   the next distribution puts its mass);
2. **move**: ``n_steps`` batched kernel steps invariant for ``p_t`` (none at the first stage, whose particles are
   exact draws); the kernel's scale is the weighted particle sd and its step size follows the acceptance rate
   (``log eps += gain (acceptance - target)`` after every step), as PyMC's and BlackJAX's SMC tune from the cloud;
3. **smooth**: incremental weights ``W = f_{t'} / f_t`` (new components summed out); the stage's estimate of
   ``Z_{t'} / Z_t`` is ``sum_r Wbar_r W_r``;
4. **generate** (ARM): while ``gamma = R_eff / R_n < gamma_threshold`` (``gamma_relative_to="pool"``, ARM as
   METHODS.md states it; ``"base"``: ``gamma = R_eff / R``, stop once the pool holds ``gamma_threshold R`` effective
   particles) and fewer than ``max_generate`` rounds, add
   a block of particles that target ``p_t`` -- the last block copied and moved ``n_steps`` more steps (``"arm"``,
   ``"arm_anticipate"``), or ``S = max((1 - gamma / gamma_threshold) R, min_reseed)`` fresh particles from the
   sequence, burnt in by ``reseed_steps`` moves (``"arm_reseed"``); at the first stage, ``R`` new exact draws of
   ``p_{t_0}`` -- and pool all blocks, block ``b`` of
   ``n_b`` particles getting total weight ``n_b / R_n`` (ARM Proposition 1); ``R_eff`` is the Kish ESS of
   ``Wbar W`` over the pool;
5. **resample**: ARM resamples back to ``R`` at every stage; resample-move (``"rm"``) when the ESS of the
   accumulated weights falls below ``resample_threshold * R_n``;
6. **augment**: the components ``p_{t'}`` adds are drawn from their exact conditional.

``log Z = log Z_{t_0} + sum_stages log(sum_r Wbar_r W_r)``. Several independent runs (``n_runs``) are made one
after the other, each vectorised over its particles (one batched log-density call per kernel step).
"""

from __future__ import annotations

import numpy as np

from ..kernels.base import KernelParams, ParticleState
from ..kernels.tuning import _weighted_scale
from ..model.target import count_evaluations
from ..progress import progress_bar
from ..records import SMCRecord
from ..weights import ess, logsumexp, normalized_log_weights
from .resampling import RESAMPLING_SCHEMES, resample

__all__ = ["ALGORITHMS", "run_smc"]

ALGORITHMS = ("rm", "arm", "arm_anticipate", "arm_reseed")
_FIELDS = (
    "log_increment",
    "run",
    "position",
    "position_from",
    "n_particles",
    "ess",
    "ess_start",
    "gamma",
    "gamma_initial",
    "n_generate",
    "acceptance",
    "step_size",
    "n_moves",
    "resampled",
)


class _Mover:
    """Moves particles with the sequence's kernel, tuning the kernel from the particle cloud.

    ``scale`` is the weighted per-coordinate sd of the particles at the stage's start; the step size adapts after
    every step, ``log eps += gain (mean acceptance - target)``, and carries over to the next stage.
    """

    def __init__(self, sequence, *, n_steps, tune, gain=1.0):
        self.sequence = sequence
        self.kernel = sequence.kernel
        self.n_steps = int(n_steps)
        self.tune = bool(tune) and self.kernel.tunable
        self.gain = float(gain)
        self.params = self.kernel.default_params(sequence.dim)
        self.log_eps = float(np.log(self.params.step_size)) if self.kernel.tunable else np.nan
        self.n_moves = 0
        self.accept = []

    def fit(self, state, log_w):
        """Scale from the weighted cloud (tunable kernels)."""
        if self.tune:
            scale = _weighted_scale(state.x, log_w)
            self.params = KernelParams(float(np.exp(self.log_eps)), scale, self.params.n_leapfrog)

    def move(self, rng, state, t, n_steps=None):
        for _ in range(self.n_steps if n_steps is None else int(n_steps)):
            state, info = self.sequence.move(rng, state, t, self.params)
            acceptance = float(np.mean(info.acceptance))
            self.accept.append(acceptance)
            self.n_moves += state.x.shape[0]
            if self.tune:
                self.log_eps = float(np.clip(self.log_eps + self.gain * (acceptance - self.kernel.target_acceptance), -12, 3))
                self.params = KernelParams(float(np.exp(self.log_eps)), self.params.scale, self.params.n_leapfrog)
        return state

    def stage_stats(self):
        """(mean acceptance, particle moves) since the last call."""
        acc = float(np.mean(self.accept)) if self.accept else np.nan
        moves, self.accept, self.n_moves = self.n_moves, [], 0
        return acc, moves


def _split(state, log_w, log_W_ahead, R):
    """ARM-anticipate: particle ``r`` becomes ``max(1, floor(R w~_r))`` copies, each with weight ``Wbar_r / c_r``."""
    look_ahead = np.exp(normalized_log_weights(log_w + log_W_ahead))
    copies = np.maximum(1, np.floor(R * look_ahead)).astype(np.int64)
    index = np.repeat(np.arange(copies.size), copies)
    return state.take(index), np.repeat(normalized_log_weights(log_w) - np.log(copies), copies)


def _one_run(sequence, rng, *, run, R, algorithm, mover, opts, rows, bar, max_stages):
    """One SMC run; appends one dict per stage to ``rows``; returns (final state, final log weights, log Z)."""
    state = sequence.start(rng, R)
    log_w = np.zeros(R)
    t = float(sequence.t_start)
    begins_block = True
    ess_start = float(R)
    log_z = float(sequence.log_z0)
    relative_to = (lambda n: n) if opts["gamma_relative_to"] == "pool" else (lambda n: R)  # noqa: E731
    for stage in range(max_stages):
        if t >= sequence.t_end:
            break
        t_new = float(sequence.next_position(t, state, log_w))
        if not t_new > t:
            raise RuntimeError(f"pmz: the sequence did not advance from position {t} (next {t_new})")
        if stage > 0 and algorithm == "arm_anticipate":
            log_W_ahead, _ = sequence.log_increment(state, t, t_new)
            state, log_w = _split(state, log_w, log_W_ahead, R)
        mover.fit(state, log_w)
        if stage > 0:  # the first particles are exact draws of p_{t_0}
            state = mover.move(rng, state, t)
        log_W, state_new = sequence.log_increment(state, t, t_new)
        blocks = [(state, state_new, normalized_log_weights(log_w), log_W)]

        def pooled():
            n_total = sum(b[0].x.shape[0] for b in blocks)
            lw = np.concatenate([np.log(b[0].x.shape[0] / n_total) + b[2] for b in blocks])
            return n_total, lw, np.concatenate([b[3] for b in blocks])

        n_pool, pool_lw, pool_W = pooled()
        gamma_initial = gamma = ess(pool_lw + pool_W) / relative_to(n_pool)
        n_generate = 0
        while algorithm != "rm" and gamma < opts["gamma_threshold"] and n_generate < opts["max_generate"]:
            if stage == 0:  # exact draws of p_{t_0} are the best particles to add
                new = sequence.start(rng, R)
                new_lw = np.full(R, -np.log(R))
            elif algorithm == "arm_reseed":
                size = max(int((1 - gamma / opts["gamma_threshold"]) * R), int(opts["min_reseed"]))
                new = mover.move(rng, sequence.fresh(rng, size, t), t, n_steps=opts["reseed_steps"])
                new_lw = np.full(size, -np.log(size))
            else:  # copy the last block and move it on
                new = mover.move(rng, blocks[-1][0], t)
                new_lw = blocks[-1][2]
            new_W, new_state_new = sequence.log_increment(new, t, t_new)
            blocks.append((new, new_state_new, new_lw, new_W))
            n_pool, pool_lw, pool_W = pooled()
            gamma = ess(pool_lw + pool_W) / relative_to(n_pool)
            n_generate += 1
        if begins_block:
            ess_start = ess(pool_lw)
        post = pool_lw + pool_W
        log_increment = float(logsumexp(post))
        if not np.isfinite(log_increment):
            raise FloatingPointError(
                f"pmz: every particle has zero (or non-finite) weight going from {sequence.label} = {t:g} to "
                f"{t_new:g}: p_{{t'}} puts no mass where the particles are (check the model's support and the data), "
                "or the step is far too large (lower cess_target, add temperatures)"
            )
        log_z += log_increment
        ess_after = ess(post)
        state = ParticleState.concatenate([b[1] for b in blocks])
        last = t_new >= sequence.t_end
        resampled = algorithm != "rm" or ess_after < opts["resample_threshold"] * n_pool
        if resampled:
            state = state.take(resample(rng, post, R, opts["resampling"]))
            log_w = np.zeros(R)
        else:
            log_w = post
        state = sequence.augment(rng, state, t, t_new)
        acceptance, n_moves = mover.stage_stats()
        rows.append(
            dict(
                log_increment=log_increment,
                run=run,
                position=t_new,
                position_from=t,
                n_particles=n_pool,
                ess=ess_after,
                ess_start=ess_start,
                gamma=gamma,
                gamma_initial=gamma_initial,
                n_generate=n_generate,
                acceptance=acceptance,
                step_size=float(np.exp(mover.log_eps)) if mover.tune else np.nan,
                n_moves=n_moves,
                resampled=resampled or last,
            )
        )
        begins_block = resampled
        bar.update(t_new - t)
        t = t_new
    else:
        raise RuntimeError(f"pmz: SMC did not reach the end of the sequence in {max_stages} stages (at {t})")
    return state, log_w, log_z


def run_smc(
    sequence,
    *,
    rng: np.random.Generator,
    n_particles: int = 1000,
    n_runs: int = 4,
    algorithm: str = "rm",
    n_steps: int = 5,
    resampling: str = "systematic",
    resample_threshold: float = 0.8,
    gamma_threshold: float = 0.7,
    gamma_relative_to: str = "pool",
    max_generate: int = 10,
    min_reseed: int = 100,
    reseed_steps: int = 20,
    tune: bool = True,
    keep_final: bool = True,
    progressbar: bool = True,
    max_stages: int = 100_000,
) -> SMCRecord:
    """Run ``n_runs`` independent SMC runs of ``algorithm`` over ``sequence`` (see the module docstring).

    Parameters
    ----------
    sequence : SMCSequence
    rng : numpy.random.Generator
        Spawned into one stream per run.
    n_particles : int
        Base particle count ``R`` (particles after each resampling).
    n_runs : int
        Independent runs (their spread gives the between-run standard error).
    algorithm : {"rm", "arm", "arm_anticipate", "arm_reseed"}
    n_steps : int
        Kernel steps per stage (and per generated block).
    resampling : {"systematic", "residual", "stratified", "multinomial"}
    resample_threshold : float
        ``"rm"`` resamples when the ESS falls below this fraction of the particles.
    gamma_threshold, max_generate : float, int
        ARM's ``gamma_thr`` (0.7) and ``i_max``.
    gamma_relative_to : {"pool", "base"}
        ``gamma = R_eff / R_n`` (the pool's ESS fraction; adding particles that target ``p_n`` leaves its
        expectation ``1 / (1 + v_n)`` unchanged, so on a stage with ``v_n > 1 / gamma_thr - 1`` the loop runs to
        ``max_generate``) or ``R_eff / R`` (stop once the pool's effective size reaches ``gamma_thr R``: particles
        per stage grow like ``1 + v_n``).
    min_reseed, reseed_steps : int
        ARM-reseed: the least number of fresh particles per round, and their burn-in moves.
    tune : bool
        Tune the kernel's scale and step size from the particle cloud.
    keep_final : bool
        Keep every run's final particles in the record (with log weights that pool the runs).
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"pmz: unknown SMC algorithm {algorithm!r}; choose one of {ALGORITHMS}")
    if resampling not in RESAMPLING_SCHEMES:
        raise ValueError(f"pmz: unknown resampling scheme {resampling!r}; choose one of {sorted(RESAMPLING_SCHEMES)}")
    if not 0 < resample_threshold <= 1:
        raise ValueError(f"pmz: resample_threshold must lie in (0, 1], got {resample_threshold!r}")
    if not 0 < gamma_threshold <= 1:
        raise ValueError(f"pmz: gamma_threshold must lie in (0, 1], got {gamma_threshold!r}")
    if gamma_relative_to not in ("pool", "base"):
        raise ValueError(f"pmz: gamma_relative_to must be 'pool' or 'base', got {gamma_relative_to!r}")
    R, n_runs = int(n_particles), int(n_runs)
    if R < 2 or n_runs < 1:
        raise ValueError(f"pmz: need n_particles >= 2 and n_runs >= 1, got {R} and {n_runs}")
    opts = dict(
        resampling=resampling,
        resample_threshold=float(resample_threshold),
        gamma_threshold=float(gamma_threshold),
        gamma_relative_to=gamma_relative_to,
        max_generate=int(max_generate),
        min_reseed=int(min_reseed),
        reseed_steps=int(reseed_steps),
    )
    evals = count_evaluations(sequence)
    rows, finals = [], []
    span = float(sequence.t_end - sequence.t_start)
    desc = "ARM" if algorithm != "rm" else "SMC"
    with progress_bar(
        total=n_runs * span, desc=f"{desc} ({sequence.name})", disable=not progressbar, percent=True
    ) as bar:
        for run, stream in enumerate(rng.spawn(n_runs)):
            bar.set_postfix_str(f"run {run + 1}/{n_runs}", refresh=False)
            mover = _Mover(sequence, n_steps=n_steps, tune=tune)
            state, log_w, log_z = _one_run(
                sequence, stream, run=run, R=R, algorithm=algorithm, mover=mover, opts=opts, rows=rows, bar=bar,
                max_stages=max_stages,
            )
            finals.append((state.x, normalized_log_weights(log_w) + log_z))
    final_x = final_log_w = None
    if keep_final:
        final_x = np.concatenate([x for x, _ in finals])
        final_log_w = np.concatenate([lw for _, lw in finals])
        final_log_w = final_log_w - logsumexp(final_log_w)
    columns = {name: np.array([row[name] for row in rows]) for name in _FIELDS}
    return SMCRecord(
        **columns,
        log_z0=float(sequence.log_z0),
        n_runs=n_runs,
        n_base_particles=R,
        algorithm=algorithm,
        sequence=sequence.name,
        label=sequence.label,
        kernel=sequence.kernel.name,
        final_x=final_x,
        final_log_weights=final_log_w,
        n_logp_evals=evals.n_logp_evals,
        n_grad_evals=evals.n_grad_evals,
        tuning={**opts, "n_steps": int(n_steps), "tune": bool(tune), **sequence.describe()},
    )
