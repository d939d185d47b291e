"""What the tuning pilot hands to a production run: frozen kernel parameters per temperature (:class:`TuningResult`).

The pilot itself is an SMC run over the schedule (:mod:`pmz.runners.pilot`); its step-size and scale rules live in
:mod:`pmz.kernels.adaptation`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import KernelParams

__all__ = ["TuningResult"]


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
