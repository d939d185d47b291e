"""The tempering sequence: ``f_beta = f0 exp(beta U)`` of a tempered family, beta from 0 to 1.

The incremental weight from ``beta`` to ``beta'`` is ``W(x) = exp((beta' - beta) U(x))``, read from the cached
``U`` of the particles (no evaluation). The next ``beta'`` is either the next point of a fixed schedule or chosen
adaptively so that the conditional ESS of the weighted particles is ``cess_target`` (bisection; Zhou, Johansen &
Aston 2016): ``CESS(beta') = n (sum_i Wbar_i w_i)^2 / sum_i Wbar_i w_i^2``, ``w_i = exp((beta' - beta) U_i)``. Moves
are the family's batched kernel at ``beta``.
"""

from __future__ import annotations

import numpy as np

from ..families.adaptive import next_beta_by_cess
from ..families.schedules import validate_schedule
from ..validate import fraction
from .base import SMCSequence

__all__ = ["TemperingSequence"]


class TemperingSequence(SMCSequence):
    """SMC over the temperatures of a :class:`~pmz.families.base.TemperedFamily`.

    Parameters
    ----------
    family : TemperedFamily
    kernel : Kernel
        Batched kernel invariant for ``f_beta`` (HMC, random-walk Metropolis, Gibbs, a model's own kernel).
    schedule : array, optional
        A fixed schedule ``0 = b_0 < ... < b_K = 1``; default: adaptive by conditional ESS.
    cess_target : float
        Conditional-ESS fraction kept per adaptive step (ignored with a fixed schedule).
    """

    name = "tempering"
    label = "beta"

    def __init__(self, family, kernel, *, schedule=None, cess_target: float = 0.9):
        self.family = self.evaluator = family
        self.kernel = kernel
        self.dim = family.dim
        self.log_z0 = float(family.log_z0)
        self.t_start, self.t_end = 0.0, 1.0
        self.schedule = None if schedule is None else validate_schedule(np.asarray(schedule, dtype=float))
        fraction(closed_right=False)("cess_target", cess_target)
        self.cess_target = float(cess_target)

    def start(self, rng, n):
        return self.kernel.init_state(self.family, self.family.sample_start(rng, n))

    def next_position(self, t, state, log_w):
        if self.schedule is not None:
            return float(self.schedule[np.searchsorted(self.schedule, t, side="right")])
        U = np.where(np.isnan(state.parts.U), -np.inf, state.parts.U)
        return float(next_beta_by_cess(t, log_w, U, self.cess_target))

    def log_increment(self, state, t, t_new):
        with np.errstate(invalid="ignore"):
            log_W = (t_new - t) * state.parts.U
        return np.where(np.isnan(log_W), -np.inf, log_W), state

    def move(self, rng, state, t, params):
        return self.kernel.step(rng, state, self.family, t, params)

    def fresh(self, rng, n, t):
        return self.start(rng, n)

    def describe(self):
        if self.schedule is None:
            return {"schedule": "adaptive", "cess_target": self.cess_target}
        return {"schedule": "fixed", "n_temps": int(self.schedule.size - 1)}
