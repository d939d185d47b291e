"""Step-size and scale adaptation rules, written once for every sampler in pmz.

* **Robbins-Monro on the log step size** (Robbins & Monro 1951; Andrieu & Thoms 2008, section 4): after a kernel
  step with mean acceptance ``a``,

      log eps <- clip(log eps + gain (a - target), -12, 3),

  with a constant gain (the tuning pilot, 2; the SMC runner's cloud tuning, 1) or the decreasing gain
  ``eta_n = 0.5 (1 + n)^-0.6`` of :func:`decreasing_gain` (the tempering step methods, per level). The clip keeps a
  run of rejections (or acceptances) from driving ``eps`` to 0 (or to infinity): ``[e^-12, e^3] = [6e-6, 20]``.
* **Dual averaging** (Nesterov 2009; Hoffman & Gelman 2014, Algorithm 5 and section 3.2) with ``mu = log(10 eps_0)``:

      h_m = (1 - 1/(m + t0)) h_{m-1} + (target - a_m) / (m + t0),     log eps_m = mu - sqrt(m) h_m / gamma,
      log eps_bar_m = m^-kappa log eps_m + (1 - m^-kappa) log eps_bar_{m-1},

  ``log eps_m`` clipped as above; after tuning ``eps_bar`` is used, frozen (:func:`dual_averaging_step_size`).
* **Scale** from a weighted particle cloud: the per-coordinate weighted standard deviation
  (:func:`weighted_scale`), the diagonal of the HMC inverse mass matrix or the random-walk proposal shape.

>>> log_eps = robbins_monro_log_step(0.0, acceptance=0.5, target=0.8, gain=2.0)
>>> round(log_eps, 2)
-0.6
>>> robbins_monro_log_step(-11.9, acceptance=0.0, target=0.8, gain=2.0)
-12.0
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..weights import normalized_weights
from .base import KernelParams

__all__ = [
    "LOG_STEP_SIZE_BOUNDS",
    "robbins_monro_log_step",
    "decreasing_gain",
    "tuned_steps",
    "DualAveragingState",
    "dual_averaging_init",
    "dual_averaging_update",
    "dual_averaging_step_size",
    "weighted_scale",
]

#: bounds of every adapted ``log step_size``
LOG_STEP_SIZE_BOUNDS = (-12.0, 3.0)


def robbins_monro_log_step(log_step_size, acceptance, target: float, gain):
    """``clip(log eps + gain (acceptance - target), -12, 3)`` (a float for scalar input)."""
    out = np.clip(log_step_size + gain * (acceptance - target), *LOG_STEP_SIZE_BOUNDS)
    return float(out) if np.ndim(out) == 0 else out


def decreasing_gain(n) -> float:
    """The Robbins-Monro gain ``eta_n = 0.5 (1 + n)^-0.6`` after ``n`` earlier updates (sum eta = inf, sum eta^2 <
    inf: the step size settles)."""
    return 0.5 * (1.0 + n) ** -0.6


def tuned_steps(rng, state, step, params: KernelParams, n_steps: int, *, log_step_size=None, target=0.8, gain=1.0):
    """``n_steps`` kernel steps ``step(rng, state, params) -> (state, info)`` on a batch of particles.

    With ``log_step_size`` given, the step size adapts after every step by :func:`robbins_monro_log_step` on the
    batch's mean acceptance (each step uses ``exp(log_step_size)`` of the step before); without it, ``params`` stay
    fixed. Returns ``(state, params, log_step_size, acceptance)``: the moved particles, the parameters of the next
    step, the adapted log step size (None when not adapting) and the mean acceptance of each step ``(n_steps,)``.
    """
    acceptance = np.empty(int(n_steps))
    for i in range(int(n_steps)):
        state, info = step(rng, state, params)
        acceptance[i] = float(np.mean(info.acceptance))
        if log_step_size is not None:
            log_step_size = robbins_monro_log_step(log_step_size, acceptance[i], target, gain)
            params = KernelParams(float(np.exp(log_step_size)), params.scale, params.n_leapfrog)
    return state, params, log_step_size, acceptance


def _scalar_or_array(x):
    """A float for a 0-d result (one chain), the array otherwise (one step size per chain)."""
    return float(x) if np.ndim(x) == 0 else np.asarray(x)


@dataclass(frozen=True)
class DualAveragingState:
    """Dual averaging of ``log eps`` after ``m`` updates (see the module docstring); the fields are floats for one
    chain or arrays (one entry per chain) for many adapted at once.

    Attributes
    ----------
    log_step_size : float
        ``log eps_m``: the step size of the next transition while tuning.
    log_step_size_avg : float
        ``log eps_bar_m``: the iterate average, used once tuning ends.
    h : float
        ``h_m``: the running average of ``target - acceptance``.
    m : int
        Updates so far.
    mu : float
        ``log(10 eps_0)``: the point ``log eps`` is shrunk towards.
    """

    log_step_size: float
    log_step_size_avg: float
    h: float
    m: int
    mu: float


def dual_averaging_init(step_size) -> DualAveragingState:
    """The state before any update: ``log eps_0``, ``mu = log(10 eps_0)`` (a float, or an array of chains)."""
    log_eps = _scalar_or_array(np.log(step_size))
    zero = _scalar_or_array(np.zeros_like(log_eps))
    return DualAveragingState(log_eps, zero, zero, 0, _scalar_or_array(np.log(10.0 * np.asarray(step_size))))


def dual_averaging_update(
    state: DualAveragingState, acceptance: float, target: float, *, gamma=0.05, t0=10.0, kappa=0.75
) -> DualAveragingState:
    """One dual-averaging update after a transition with acceptance probability ``acceptance``."""
    m = state.m + 1
    w = 1.0 / (m + t0)
    h = (1 - w) * state.h + w * (target - acceptance)
    log_eps = _scalar_or_array(np.clip(state.mu - np.sqrt(m) / gamma * h, *LOG_STEP_SIZE_BOUNDS))
    eta = m**-kappa
    return DualAveragingState(log_eps, eta * log_eps + (1 - eta) * state.log_step_size_avg, h, m, state.mu)


def dual_averaging_step_size(state: DualAveragingState) -> float:
    """The step size to freeze when tuning ends: ``eps_bar`` (``eps_0`` before any update)."""
    return _scalar_or_array(np.exp(state.log_step_size_avg if state.m else state.log_step_size))


def weighted_scale(X, log_w, floor=1e-8) -> np.ndarray:
    """Per-coordinate standard deviation of the particles ``X (n, dim)`` under weights ``exp(log_w)``, at least
    ``floor``."""
    w = normalized_weights(log_w)[:, None]
    mean = np.sum(w * X, axis=0)
    sd = np.sqrt(np.sum(w * (X - mean) ** 2, axis=0))
    return np.maximum(sd, floor)
