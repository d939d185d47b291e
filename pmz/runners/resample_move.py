"""Resample-move sequential Monte Carlo and the adaptive resample-move algorithm (ARM) of Fraccaro, Paquet & Winther,
over any :class:`~pmz.sequences.base.SMCSequence`, recorded as an :class:`~pmz.records.SMCRecord`.

A run is a short driver around one step, :func:`pmz.runners.smc_stage.smc_stage` (anticipate, move, reweight,
generate, resample, augment: docs/methods.md, section 10): from ``t = t_start``, choose ``t' = sequence.next_position(t,
...)`` from the weighted particles, take the stage, record its row, until ``t_end``.
``log Z = log Z_{t_0} + sum_stages log(sum_r Wbar_r W_r)``. Several independent runs (``n_runs``) are made one
after the other, each vectorised over its particles (one batched log-density call per kernel step).
"""

from __future__ import annotations

import time

import numpy as np

from ..interrupts import as_interrupt, is_interrupt
from ..model.target import count_evaluations
from ..progress import progress_bar
from ..records import RunNotes, SMCRecord
from ..weights import normalized_log_weights
from .pooling import SMC_COLUMNS, merge_smc
from .resampling import RESAMPLING_SCHEMES
from .smc_stage import ALGORITHMS, SMCSettings, smc_init, smc_stage

__all__ = ["ALGORITHMS", "run_smc", "smc_runs", "smc_settings"]


PACE_WINDOW = 250  # stages over which the pace of a run is measured (from 2 windows on)


def _projected_stages(positions, t_end) -> float:
    """Stages a run would take if its steps keep growing as they did over its last two windows of
    :data:`PACE_WINDOW` stages (``positions``: the run's positions so far, at least ``2 * PACE_WINDOW + 1``).

    With ``d`` the distance covered in the last window and ``r`` its ratio to the window before, the remaining
    distance ``R`` takes ``w`` more windows where ``d (r + r^2 + ... + r^w) = R``: ``w = R / d`` for ``r <= 1``
    (steps that stay the same size: data far in the prior's tail, whose particles cross the gap a little at every
    stage), ``w = log(1 + R (r - 1) / (d r)) / log r`` for steps that grow (the usual adaptive run)."""
    now, one, two = positions[-1], positions[-1 - PACE_WINDOW], positions[-1 - 2 * PACE_WINDOW]
    d, before = now - one, one - two
    if not d > 0:
        return np.inf
    remaining = t_end - now
    r = d / before if before > 0 else np.inf
    if r <= 1.0:
        windows = remaining / d
    elif not np.isfinite(r):
        windows = 1.0
    else:
        windows = np.log1p(remaining * (r - 1.0) / (d * r)) / np.log(r)
    return len(positions) - 1 + windows * PACE_WINDOW


def _one_run(sequence, rng, settings: SMCSettings, *, run, rows, bar, max_stages):
    """One SMC run; appends one dict per stage to ``rows``; returns the final :class:`SMCState`. A run whose pace
    (:func:`_projected_stages`) says it cannot end within ``max_stages`` stops with a clear error after
    ``2 * PACE_WINDOW`` stages (a y = 1e6 under a N(0, 2) prior ran 100,000 stages, 328 s, before it failed)."""
    state = smc_init(rng, sequence, settings)
    positions = [float(state.t)]
    for stage in range(max_stages):
        if state.t >= sequence.t_end:
            break
        t, t_new = state.t, float(sequence.next_position(state.t, state.particles, state.log_w))
        if not t_new > t:
            raise RuntimeError(f"pmz: the sequence did not advance from position {t} (next {t_new})")
        state, info = smc_stage(rng, state, t_new, sequence, settings)
        rows.append({name: run if name == "run" else getattr(info, name) for name in SMC_COLUMNS})
        bar.update(t_new - t)
        positions.append(t_new)
        if stage + 1 >= 2 * PACE_WINDOW and (stage + 1) % PACE_WINDOW == 0 and t_new < sequence.t_end:
            projected = _projected_stages(positions, sequence.t_end)
            if projected > max_stages:
                raise RuntimeError(
                    f"pmz: SMC cannot reach the end of its sequence: after {stage + 1} stages it is at {t_new:.3g} "
                    f"of {sequence.t_end:g}, and at the pace of its last {PACE_WINDOW} stages it would need about "
                    f"{projected:.3g} stages (at most {max_stages}). The posterior is far from where the sequence "
                    "starts (data far in the prior's tail?): use method='auto' (it starts from posterior draws) or "
                    "reference='laplace' (a path from a Gaussian at the posterior mode)"
                )
    else:
        raise RuntimeError(f"pmz: SMC did not reach the end of the sequence in {max_stages} stages (at {state.t})")
    return state


def run_smc(
    sequence,
    *,
    rng: np.random.Generator,
    n_runs: int = 4,
    keep_particles: bool = True,
    progressbar: bool = True,
    max_stages: int = 100_000,
    **settings,
) -> SMCRecord:
    """Run ``n_runs`` independent SMC runs over ``sequence`` (see the module docstring).

    Parameters
    ----------
    sequence : SMCSequence
    rng : numpy.random.Generator
        Spawned into one stream per run.
    n_runs : int
        Independent runs (their spread gives the between-run standard error).
    keep_particles : bool
        Keep every run's final particles in the record (with log weights that pool the runs).
    **settings
        The algorithm's settings, with their defaults and checks in :func:`smc_settings`: ``n_particles``
        (default 1000), ``algorithm``, ``n_steps_per_temp``, ``resampling``, ``resample_threshold``,
        ``gamma_threshold``, ``gamma_relative_to``, ``max_generate``, ``min_reseed``, ``reseed_steps``, ``tune``.
    """
    settings = smc_settings(**{"n_particles": 1000, **settings})
    n_runs = int(n_runs)
    if n_runs < 1:
        raise ValueError(f"pmz: need n_runs >= 1, got {n_runs}")
    record = smc_runs(
        sequence, rng.spawn(n_runs), settings, keep_particles=keep_particles, progressbar=progressbar,
        max_stages=max_stages,
    )
    return merge_smc([record])


def smc_settings(
    *,
    n_particles: int,
    algorithm: str = "rm",
    n_steps_per_temp: int = 5,
    resampling: str = "systematic",
    resample_threshold: float = 0.8,
    gamma_threshold: float = 0.7,
    gamma_relative_to: str = "pool",
    max_generate: int = 10,
    min_reseed: int = 100,
    reseed_steps: int = 20,
    tune: bool = True,
) -> SMCSettings:
    """The checked :class:`SMCSettings` of an SMC run (clear errors for values out of range).

    Parameters
    ----------
    n_particles : int
        Base particle count ``R`` (particles after each resampling).
    algorithm : {"rm", "arm", "arm_anticipate", "arm_reseed"}
    n_steps_per_temp : int
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
    if int(n_particles) < 2:
        raise ValueError(f"pmz: need n_particles >= 2, got {n_particles}")
    return SMCSettings(
        int(n_particles),
        algorithm,
        int(n_steps_per_temp),
        bool(tune),
        1.0,
        resampling=resampling,
        resample_threshold=float(resample_threshold),
        gamma_threshold=float(gamma_threshold),
        gamma_relative_to=gamma_relative_to,
        max_generate=int(max_generate),
        min_reseed=int(min_reseed),
        reseed_steps=int(reseed_steps),
    )


def smc_runs(
    sequence,
    streams,
    settings: SMCSettings,
    *,
    first_run: int = 0,
    keep_particles: bool = True,
    progressbar: bool = False,
    max_stages: int = 100_000,
    until: float | None = None,
    min_runs: int = 2,
    keep_on_interrupt: bool = False,
) -> SMCRecord:
    """The runs of ``streams`` (one ``numpy.random.Generator`` each), numbered from ``first_run``: an SMCRecord
    whose final log weights are each run's own (normalised within the run, plus the run's log Z), unpooled.

    ``until``: a wall-clock time (``time.time()``, so that it means the same on any worker) after which no further
    run starts once ``min_runs`` runs are done (the record's ``n_runs`` says how many ran). With
    ``keep_on_interrupt`` (a whole run in one chunk here: no chunks to keep), Ctrl-C during a run after the first
    keeps the finished runs and the record's ``notes.interrupted`` says so (``pmz.evidence`` then marks the
    result partial and unreliable); otherwise it raises, and the chunk runner keeps the finished chunks.

    :func:`run_smc` makes all its runs here and pools them with :func:`pmz.runners.pooling.merge_smc`; a run split
    into chunks (:mod:`pmz.execution.executors`) makes each chunk's runs here, with the streams the whole run would
    give them, so the pooled record is the same bits however the runs were grouped.
    """
    evals = count_evaluations(sequence)
    streams = list(streams)
    rows, finals, interrupted = [], [], None
    span = float(sequence.t_end - sequence.t_start)
    desc = "ARM" if settings.algorithm != "rm" else "SMC"
    with progress_bar(
        total=len(streams) * span, desc=f"{desc} ({sequence.name})", disable=not progressbar, percent=True
    ) as bar:
        for i, stream in enumerate(streams):
            if until is not None and i >= min_runs and time.time() > until:
                break
            run = int(first_run) + i
            bar.set_postfix_str(f"run {i + 1}/{len(streams)}", refresh=False)
            n_rows = len(rows)
            try:
                state = _one_run(sequence, stream, settings, run=run, rows=rows, bar=bar, max_stages=max_stages)
            except (KeyboardInterrupt, SystemError) as err:  # Ctrl-C: keep the finished runs (flagged partial)
                if not is_interrupt(err):
                    raise
                if not (finals and keep_on_interrupt):
                    if isinstance(err, KeyboardInterrupt):
                        raise
                    raise as_interrupt(err, f"pmz: interrupted (Ctrl-C) during SMC run {i + 1}") from err
                del rows[n_rows:]
                interrupted = f"interrupted (Ctrl-C) after {len(finals)} of {len(streams)} SMC runs"
                break
            finals.append((state.particles.x, normalized_log_weights(state.log_w) + state.log_z))
    final_x = final_log_w = None
    if keep_particles:
        final_x = np.concatenate([x for x, _ in finals])
        final_log_w = np.concatenate([lw for _, lw in finals])
    columns = {name: np.array([row[name] for row in rows]) for name in SMC_COLUMNS}
    description = {
        "resampling": settings.resampling,
        "resample_threshold": settings.resample_threshold,
        "gamma_relative_to": settings.gamma_relative_to,
        "max_generate": settings.max_generate,
        "min_reseed": settings.min_reseed,
        "reseed_steps": settings.reseed_steps,
        "n_steps_per_temp": settings.n_steps_per_temp,
        "tune": settings.tune,
        **sequence.describe(),
    }
    notes = RunNotes(description=description, gamma_threshold=settings.gamma_threshold,
                     interrupted=interrupted or "")
    return SMCRecord(
        **columns,
        log_z0=float(sequence.log_z0),
        n_runs=len(finals),
        n_base_particles=settings.n_particles,
        algorithm=settings.algorithm,
        sequence=sequence.name,
        label=sequence.label,
        kernel=sequence.kernel.name,
        final_x=final_x,
        final_log_weights=final_log_w,
        n_logp_evals=evals.n_logp_evals,
        n_grad_evals=evals.n_grad_evals,
        notes=notes,
    )
