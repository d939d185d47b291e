"""Per-temperature kernel parameters from a pilot run, then frozen.

Why a pilot: AIS is unbiased only if each transition ``T_k`` is a fixed kernel invariant for ``p_{b_k}``.
Adapting step sizes on the production paths themselves would make the kernels depend on the paths they move.
pmz therefore tunes on a separate pilot population (its own random stream) and freezes the resulting table
``params[k]`` before the production paths start; the production run is then exact AIS.

The pilot is a small resample-move sweep along the schedule: ``n_pilot`` particles start at exact draws of f0;
at each temperature the particles are reweighted by ``(b_k - b_{k-1}) U``, resampled (systematic) when the ESS
falls below half, and their weighted per-coordinate sd gives ``scale_k``; then ``n_adapt`` kernel steps at
``b_k`` adapt the step size towards the kernel's target acceptance by
``log eps <- log eps + gain * (mean acceptance - target)`` (starting from the previous temperature's value).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..progress import progress_bar
from ..weights import ess, normalized_weights, systematic_resample
from .base import Kernel, KernelParams

__all__ = ["TuningResult", "tune_along_schedule"]


@dataclass(frozen=True)
class TuningResult:
    """Frozen kernel parameters per temperature and what the pilot cost.

    Attributes
    ----------
    params : list of KernelParams, length K + 1
    pilot_acceptance : ndarray (K + 1,)
        Mean acceptance of the last adaptation step at each temperature (NaN at b_0).
    n_pilot : int
    n_adapt : int
    """

    params: list
    pilot_acceptance: np.ndarray
    n_pilot: int
    n_adapt: int

    @property
    def step_size(self) -> np.ndarray:
        return np.array([p.step_size for p in self.params])


def _weighted_scale(X, log_w, floor=1e-8):
    w = normalized_weights(log_w)[:, None]
    mean = np.sum(w * X, axis=0)
    sd = np.sqrt(np.sum(w * (X - mean) ** 2, axis=0))
    return np.maximum(sd, floor)


def tune_along_schedule(
    family,
    kernel: Kernel,
    schedule,
    rng: np.random.Generator,
    *,
    n_pilot: int = 256,
    n_adapt: int = 3,
    gain: float = 2.0,
    adapt_scale: bool = True,
    initial: KernelParams | None = None,
    progressbar: bool = False,
) -> TuningResult:
    """Tune the kernel at every temperature of ``schedule`` on a pilot population (see module docstring)."""
    schedule = np.asarray(schedule, dtype=float)
    K = schedule.size - 1
    params0 = initial if initial is not None else kernel.default_params(family.dim)
    X = family.sample_start(rng, n_pilot)
    state = kernel.init_state(family, X)
    log_w = np.zeros(n_pilot)
    log_eps = np.log(params0.step_size)
    scale = _weighted_scale(state.x, log_w) if adapt_scale else params0.scale
    params = [KernelParams(float(np.exp(log_eps)), scale, params0.n_leapfrog)]
    pilot_acceptance = np.full(K + 1, np.nan)
    bar = progress_bar(total=K, desc="tuning", disable=not progressbar)
    for k in range(1, K + 1):
        bar.update(1)
        beta = schedule[k]
        log_w = log_w + (schedule[k] - schedule[k - 1]) * state.parts.U
        log_w = np.where(np.isfinite(log_w), log_w, -np.inf)
        if ess(log_w) < 0.5 * n_pilot:
            state = state.take(systematic_resample(rng, log_w))
            log_w = np.zeros(n_pilot)
        if adapt_scale:
            scale = _weighted_scale(state.x, log_w)
        for _ in range(n_adapt):
            trial = KernelParams(float(np.exp(log_eps)), scale, params0.n_leapfrog)
            state, info = kernel.step(rng, state, family, beta, trial)
            accept = float(np.mean(info.acceptance))
            pilot_acceptance[k] = accept
            log_eps = float(np.clip(log_eps + gain * (accept - kernel.target_acceptance), -12.0, 3.0))
        params.append(KernelParams(float(np.exp(log_eps)), scale, params0.n_leapfrog))
    bar.close()
    return TuningResult(params, pilot_acceptance, n_pilot, n_adapt)
