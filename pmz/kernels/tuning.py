"""Per-temperature kernel parameters from a pilot run, then frozen.

Why a pilot: AIS is unbiased only if each transition ``T_k`` is a fixed kernel invariant for ``p_{b_k}``.
Adapting step sizes on the production paths themselves would make the kernels depend on the paths they move.
pmz therefore tunes on a separate pilot population (its own random stream) and freezes the resulting table
``params[k]`` before the production paths start; the production run is then exact AIS.

The pilot is a small resample-move sweep along (a coarse sub-grid of) the schedule: ``n_pilot`` particles start
at exact draws of f0; at each visited temperature the particles are reweighted by ``(b_k - b_{k'}) U``, their
weighted per-coordinate sd gives ``scale_k``, they are resampled (systematic) when the ESS falls below half, and
``n_adapt`` kernel steps at ``b_k`` adapt the step size towards the kernel's target acceptance by
``log eps <- log eps + gain * (mean acceptance - target)`` (starting from the previous visited temperature's
value). Temperatures between visited ones get log-linearly interpolated parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.target import count_evaluations
from ..progress import progress_bar
from ..weights import ess, log_mean_weight, normalized_weights, systematic_resample
from .base import Kernel, KernelParams

__all__ = ["TuningResult", "tune_along_schedule", "run_pilot", "adaptive_pilot"]


@dataclass(frozen=True)
class TuningResult:
    """Frozen kernel parameters per temperature and what the pilot cost.

    Attributes
    ----------
    params : list of KernelParams, length K + 1
    pilot_acceptance : ndarray (K + 1,)
        Mean acceptance of the last adaptation step at each temperature the pilot visited (NaN at b_0 and at
        the temperatures between visited ones).
    n_pilot : int
    n_adapt : int
    log_z_path : ndarray (K + 1,)
        The pilot's own resample-move (SMC) estimate of ``log Z(b_k) - log Z(b_0)`` at each visited temperature,
        linearly interpolated in between: a cheap first guess of the whole log Z curve (simulated tempering starts
        from it).
    walk : dict
        The pilot's arrays over the temperatures it visited (``betas``, ``log_eps``, ``log_scale``, ``log_z``,
        ``mean_U``, ``var_U``, ``acceptance``), from which :meth:`params_for` and :meth:`log_z_for` interpolate
        onto any other schedule. ``mean_U`` and ``var_U`` are the importance-weighted mean and variance of ``U``
        over the pilot particles on arrival at each temperature ("on-the-fly" weights, VAROPT): estimates of
        ``E_b[U] = d log Z / db`` and of the thermodynamic metric ``g(b) = Var_b[U]``.
    """

    params: list
    pilot_acceptance: np.ndarray
    n_pilot: int
    n_adapt: int
    log_z_path: np.ndarray | None = None
    walk: dict | None = None

    def params_for(self, schedule) -> list:
        """Kernel parameters on another schedule: ``log step_size`` and ``log scale`` interpolated linearly in beta
        between the temperatures the pilot visited (``walk["betas"]``)."""
        b = np.asarray(schedule, dtype=float)
        visited = self.walk["betas"]
        step = np.exp(np.interp(b, visited, self.walk["log_eps"]))
        log_scale = self.walk["log_scale"]
        scale = np.exp(np.column_stack([np.interp(b, visited, log_scale[:, d]) for d in range(log_scale.shape[1])]))
        n_leapfrog = self.params[0].n_leapfrog
        return [KernelParams(float(step[k]), scale[k], n_leapfrog) for k in range(b.size)]

    def log_z_for(self, schedule) -> np.ndarray:
        """The pilot's log Z curve interpolated (linearly in beta) onto another schedule."""
        return np.interp(np.asarray(schedule, dtype=float), self.walk["betas"], self.walk["log_z"])

    @property
    def step_size(self) -> np.ndarray:
        return np.array([p.step_size for p in self.params])


def _weighted_scale(X, log_w, floor=1e-8):
    w = normalized_weights(log_w)[:, None]
    mean = np.sum(w * X, axis=0)
    sd = np.sqrt(np.sum(w * (X - mean) ** 2, axis=0))
    return np.maximum(sd, floor)


def _weighted_moments(U, log_w):
    """Importance-weighted mean and variance of ``U`` (non-finite U carry no weight)."""
    finite = np.isfinite(U)
    if not finite.any():
        return np.nan, np.nan
    w = normalized_weights(np.where(finite, log_w, -np.inf))
    u = np.where(finite, U, 0.0)
    mean = float(np.sum(w * u))
    return mean, float(np.sum(w * (u - mean) ** 2))


def _pilot_walk(family, kernel, rng, next_beta, *, n_pilot, n_adapt, gain, adapt_scale, params0, progressbar, total):
    """The pilot's resample-move walk from b = 0 to 1 along temperatures chosen by ``next_beta(b, U, log_w)``.

    At each new temperature: reweight by ``(b_new - b) U``, record the weighted scale, log Z and moments of U,
    resample (systematic) when the ESS falls below half, then ``n_adapt`` kernel steps adapting the step size.
    Returns a dict of arrays over the visited temperatures (the first is b = 0).
    """
    state = kernel.init_state(family, family.sample_start(rng, n_pilot))
    log_w = np.zeros(n_pilot)
    betas, log_eps, log_z, acceptance = [0.0], [np.log(params0.step_size)], [0.0], [np.nan]
    log_scale = [np.log(_weighted_scale(state.x, log_w) if adapt_scale else params0.scale)]
    moments = [_weighted_moments(state.parts.U, log_w)]
    log_z_resampled = 0.0
    with progress_bar(total=total, desc="tuning", disable=not progressbar) as bar:
        while betas[-1] < 1.0:
            b_prev = betas[-1]
            b = float(next_beta(b_prev, state.parts.U, log_w))
            log_w = log_w + (b - b_prev) * state.parts.U
            log_w = np.where(np.isfinite(log_w), log_w, -np.inf)
            log_scale.append(np.log(_weighted_scale(state.x, log_w)) if adapt_scale else log_scale[0])
            log_z.append(log_z_resampled + log_mean_weight(log_w))
            moments.append(_weighted_moments(state.parts.U, log_w))
            if ess(log_w) < 0.5 * n_pilot:
                state = state.take(systematic_resample(rng, log_w))
                log_w = np.zeros(n_pilot)
                log_z_resampled = log_z[-1]
            eps, acc = log_eps[-1], np.nan
            for _ in range(n_adapt):
                trial = KernelParams(float(np.exp(eps)), np.exp(log_scale[-1]), params0.n_leapfrog)
                state, info = kernel.step(rng, state, family, b, trial)
                acc = float(np.mean(info.acceptance))
                eps = float(np.clip(eps + gain * (acc - kernel.target_acceptance), -12.0, 3.0))
            betas.append(b)
            log_eps.append(eps)
            acceptance.append(acc)
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
    targets = iter(schedule[tune_idx[1:]])

    def next_beta(b, U, log_w):
        return next(targets)

    walk = _pilot_walk(
        family,
        kernel,
        rng,
        next_beta,
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
    from ..families.adaptive import next_beta_by_cess

    if not 0 < cess_target < 1:
        raise ValueError(f"pmz: cess_target must lie in (0, 1), got {cess_target!r}")
    params0 = kernel.default_params(family.dim)
    count = [0]

    def next_beta(b, U, log_w):
        count[0] += 1
        if count[0] >= max_temps:
            return 1.0
        U = np.where(np.isfinite(U), U, -np.inf)
        return next_beta_by_cess(b, log_w, U, cess_target)

    walk = _pilot_walk(
        family,
        kernel,
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
