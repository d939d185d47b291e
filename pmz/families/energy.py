"""The geometric path of an energy model, from its exactly samplable base f0 to its target f1 (docs/methods.md,
section 0):

    log f_beta(x) = (1 - beta) log f0(x) + beta log f1(x) = log f0(x) + beta U(x),   U = log f1 - log f0.

The base is normalised (``log Z0 = 0``), so estimates are ``log Z = log sum_x f1(x)`` (an integral for continuous
states). The model itself (user log density, base distributions) is :mod:`pmz.model.energy_model`.
"""

from __future__ import annotations

import numpy as np

from ..model.energy_model import EnergyModel
from ..model.parts import LogDensityParts
from .base import TemperedFamily

__all__ = ["EnergyFamily"]


class EnergyFamily(TemperedFamily):
    """The geometric path ``log f0 + beta (log f1 - log f0)`` of an :class:`~pmz.model.energy_model.EnergyModel`.

    ``log_z0`` is the base's ``log_z`` (0: normalised), so estimates are ``log Z = log sum_x f1(x)``.
    """

    def __init__(self, model: EnergyModel):
        self.model = model
        self.dim = model.dim
        self.log_z0 = float(getattr(model.base, "log_z", 0.0))
        self.name = f"energy: {model.name}"

    def sample_start(self, rng, n):
        return np.asarray(self.model.base.sample(rng, n), dtype=np.float64)

    def parts(self, X, *, grad=False):
        log_f0 = np.asarray(self.model.base.log_density(X), dtype=np.float64)
        log_f1 = self.model.log_f1(X)
        if not grad:
            return LogDensityParts(log_f0, log_f1 - log_f0)
        g0 = np.asarray(self.model.base.grad_log_density(X), dtype=np.float64)
        return LogDensityParts(log_f0, log_f1 - log_f0, g0, self.model.grad_log_f1(X) - g0)

    @property
    def n_logp_evals(self) -> int:
        return self.model.n_logp_evals

    @property
    def n_grad_evals(self) -> int:
        return self.model.n_grad_evals
