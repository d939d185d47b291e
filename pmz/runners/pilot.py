"""The tuning pilot: per-temperature kernel parameters from an SMC run over the schedule, then frozen.

Why a pilot: AIS is unbiased only if each transition ``T_k`` is a fixed kernel invariant for ``p_{b_k}``.
Adapting step sizes on the production paths themselves would make the kernels depend on the paths they move.
pmz therefore tunes on a separate pilot population (its own random stream) and freezes the resulting table
``params[k]`` before the production paths start; the production run is then exact AIS.

The pilot is a resample-move SMC run along (a coarse sub-grid of) the schedule, with the SMC stage of
:func:`pmz.runners.smc_stage.smc_stage`: ``n_pilot`` particles start at exact draws of f0; at each visited
temperature the particles are reweighted by ``(b_k - b_{k'}) U``, their weighted per-coordinate sd gives
``scale_k`` (before resampling), they are resampled (systematic) when the ESS falls below half, and ``n_adapt``
kernel steps at ``b_k`` adapt the step size towards the kernel's target acceptance by
``log eps <- log eps + gain * (mean acceptance - target)`` (:mod:`pmz.kernels.adaptation`; starting from the
previous visited temperature's value). The next temperature is chosen after these moves (a fixed sub-grid, or by
conditional ESS: :func:`adaptive_pilot`). Temperatures between visited ones get log-linearly interpolated
parameters.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..kernels.adaptation import tuned_steps, weighted_scale
from ..kernels.base import Kernel, KernelParams
from ..kernels.tuning import TuningResult
from ..model.target import count_evaluations
from ..progress import progress_bar
from ..sequences.by_temperature import TemperingSequence
from ..validate import fraction
from ..weights import normalized_weights
from .smc_stage import SMCSettings, smc_init, smc_stage

__all__ = ["TuningResult", "tune_along_schedule", "run_pilot", "adaptive_pilot"]


def _weighted_moments(U, log_w):
    """Importance-weighted mean and variance of ``U`` (non-finite U carry no weight)."""
    finite = np.isfinite(U)
    if not finite.any():
        return np.nan, np.nan
    w = normalized_weights(np.where(finite, log_w, -np.inf))
    u = np.where(finite, U, 0.0)
    mean = float(np.sum(w * u))
    return mean, float(np.sum(w * (u - mean) ** 2))


def _pilot_run(sequence, rng, next_beta, *, n_pilot, n_adapt, gain, adapt_scale, params0, progressbar, total):
    """The pilot's SMC run from b = 0 to 1 over temperatures chosen by ``next_beta(state)`` after the moves (default:
    the sequence's ``next_position``).

    Each temperature: one SMC stage without moves (reweight; resample when the ESS falls below half), the
    weighted scale, log Z and moments of U on arrival, then ``n_adapt`` kernel steps adapting the step size.
    Returns a dict of arrays over the visited temperatures (the first is b = 0).
    """
    kernel = sequence.kernel
    if next_beta is None:
        next_beta = lambda state: sequence.next_position(state.t, state.particles, state.log_w)  # noqa: E731
    settings = SMCSettings(
        n_pilot, "rm", n_steps_per_temp=0, tune=False, resampling="systematic", resample_threshold=0.5
    )
    state = smc_init(rng, sequence, settings)
    betas, log_eps, log_z, acceptance = [0.0], [np.log(params0.step_size)], [0.0], [np.nan]
    fixed_log_scale = None if adapt_scale else np.log(params0.scale)
    log_scale = [np.log(weighted_scale(state.particles.x, state.log_w)) if adapt_scale else fixed_log_scale]
    moments = [_weighted_moments(state.particles.parts.U, state.log_w)]
    with progress_bar(total=total, desc="tuning", disable=not progressbar) as bar:
        while state.t < 1.0:
            b = float(next_beta(state))
            state, info = smc_stage(rng, state, b, sequence, settings)
            arrival, arrival_log_w = info.arrival, info.arrival_log_w
            log_scale.append(np.log(weighted_scale(arrival.x, arrival_log_w)) if adapt_scale else fixed_log_scale)
            log_z.append(state.log_z)
            moments.append(_weighted_moments(arrival.parts.U, arrival_log_w))
            params = KernelParams(float(np.exp(log_eps[-1])), np.exp(log_scale[-1]), params0.n_leapfrog)
            particles, _, eps, acc = tuned_steps(
                rng, state.particles, lambda r, s, p: sequence.move(r, s, b, p), params, n_adapt,
                log_step_size=log_eps[-1], target=kernel.target_acceptance, gain=gain,
            )
            state = replace(state, particles=particles)
            betas.append(b)
            log_eps.append(eps)
            acceptance.append(acc[-1] if acc.size else np.nan)
            bar.update(1)
    moments = np.array(moments)
    return {
        "betas": np.array(betas),
        "log_eps": np.array(log_eps),
        "log_scale": np.array(log_scale),
        "log_z": np.array(log_z),
        "mean_U": moments[:, 0],
        "var_U": moments[:, 1],
        "acceptance": np.array(acceptance),
    }


def tune_along_schedule(
    family,
    kernel: Kernel,
    schedule,
    rng: np.random.Generator,
    *,
    n_pilot: int = 256,
    n_adapt: int = 4,
    n_tune_temps: int = 40,
    gain: float = 2.0,
    adapt_scale: bool = True,
    initial: KernelParams | None = None,
    progressbar: bool = False,
) -> TuningResult:
    """Tune the kernel along ``schedule`` on a pilot population (see module docstring).

    The pilot visits ``n_tune_temps`` temperatures evenly spaced in the schedule's index (all of them when
    the schedule is shorter); ``log step_size`` and ``log scale`` are interpolated linearly in the index
    between them, so the pilot's cost does not grow with K.
    """
    schedule = np.asarray(schedule, dtype=float)
    K = schedule.size - 1
    tune_idx = np.unique(np.round(np.linspace(0, K, min(int(n_tune_temps), K) + 1)).astype(int))
    params0 = initial if initial is not None else kernel.default_params(family.dim)
    walk = _pilot_run(
        TemperingSequence(family, kernel, schedule=schedule[tune_idx]),
        rng,
        None,
        n_pilot=n_pilot,
        n_adapt=n_adapt,
        gain=gain,
        adapt_scale=adapt_scale,
        params0=params0,
        progressbar=progressbar,
        total=tune_idx.size - 1,
    )
    grid = np.arange(K + 1)
    step_size = np.exp(np.interp(grid, tune_idx, walk["log_eps"]))
    scale = np.exp(np.column_stack([np.interp(grid, tune_idx, walk["log_scale"][:, d]) for d in range(family.dim)]))
    params = [KernelParams(float(step_size[k]), scale[k], params0.n_leapfrog) for k in range(K + 1)]
    pilot_acceptance = np.full(K + 1, np.nan)
    pilot_acceptance[tune_idx[1:]] = walk["acceptance"][1:]
    return TuningResult(
        params,
        pilot_acceptance,
        n_pilot,
        n_adapt,
        np.interp(grid, tune_idx, walk["log_z"]),
        walk,
    )


def run_pilot(
    family, kernel: Kernel, schedule, rng, *, n_pilot: int, n_adapt: int, n_tune_temps: int, progressbar=False
):
    """:func:`tune_along_schedule` and a description of what the pilot did and cost (stored in results)."""
    evals = count_evaluations(family)
    tuned = tune_along_schedule(
        family,
        kernel,
        schedule,
        rng,
        n_pilot=n_pilot,
        n_adapt=n_adapt,
        n_tune_temps=n_tune_temps,
        progressbar=progressbar,
    )
    description = {
        "n_pilot": tuned.n_pilot,
        "n_adapt": tuned.n_adapt,
        "n_tune_temps": int(n_tune_temps),
        "target_acceptance": kernel.target_acceptance,
        "pilot_logp_evals": evals.n_logp_evals,
        "pilot_grad_evals": evals.n_grad_evals,
    }
    return tuned, description


def adaptive_pilot(
    family,
    kernel: Kernel,
    rng: np.random.Generator,
    *,
    cess_target: float = 0.99,
    n_pilot: int = 256,
    n_adapt: int = 4,
    max_temps: int = 10_000,
    gain: float = 2.0,
    progressbar: bool = False,
) -> TuningResult:
    """A pilot whose temperatures are chosen online: each next beta makes the conditional ESS of the pilot's
    weights equal to ``cess_target`` (bisection, :func:`pmz.families.optimal.next_beta_by_cess`; Zhou, Johansen &
    Aston 2016). Equal CESS steps are, to second order, equal steps of thermodynamic length
    (``1 - CESS ~= (db)^2 g(b)``), so the visited temperatures are a constant-speed schedule. ``params`` are on
    the visited temperatures; use :meth:`TuningResult.params_for` for any other schedule.
    """
    fraction(closed_right=False)("cess_target", cess_target)
    params0 = kernel.default_params(family.dim)
    sequence = TemperingSequence(family, kernel, cess_target=cess_target)
    count = [0]

    def next_beta(state):
        count[0] += 1
        if count[0] >= max_temps:
            return 1.0
        return sequence.next_position(state.t, state.particles, state.log_w)

    walk = _pilot_run(
        sequence,
        rng,
        next_beta,
        n_pilot=n_pilot,
        n_adapt=n_adapt,
        gain=gain,
        adapt_scale=True,
        params0=params0,
        progressbar=progressbar,
        total=None,
    )
    params = [
        KernelParams(float(np.exp(e)), np.exp(s), params0.n_leapfrog)
        for e, s in zip(walk["log_eps"], walk["log_scale"])
    ]
    return TuningResult(params, walk["acceptance"], n_pilot, n_adapt, walk["log_z"], walk)
