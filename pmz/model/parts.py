"""Log-density parts: ``log f0`` and ``U`` (and their gradients) of a batch of particles, from one compiled call.

Every tempered density in pmz is a path between a start density f0 and a target f1,

    log f_beta(x) = log f0(x) + beta * U(x),        U(x) = log f1(x) - log f0(x),   beta in [0, 1],

so a batch evaluated once gives ``log f_beta`` at any temperature (:meth:`LogDensityParts.log_density`), even one
beta per particle (simulated tempering). Families return these parts, kernels cache them in their particle state,
SMC sequences carry them; they live here, in the lowest layer, so that none of those imports upward.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LogDensityParts"]


@dataclass(frozen=True)
class LogDensityParts:
    """``log f0`` and ``U`` (and optionally gradients) at a batch of particles.

    Attributes
    ----------
    log_f0 : ndarray (n,)
        Log density of the start distribution f0.
    U : ndarray (n,)
        ``log f1 - log f0``: the log-likelihood for the power posterior.
    grad_log_f0, grad_U : ndarray (n, dim) or None
        Gradients with respect to the flat particle coordinates (None when not computed).
    """

    log_f0: np.ndarray
    U: np.ndarray
    grad_log_f0: np.ndarray | None = None
    grad_U: np.ndarray | None = None

    def log_density(self, beta) -> np.ndarray:
        """``log f_beta = log f0 + beta U``; ``beta`` is a scalar or one value per particle ``(n,)``.

        ``beta U`` is 0 at ``beta = 0`` also where ``U = -inf`` (``f1(x) = 0``): ``f_0 = f0`` is the start density
        everywhere, including where the target vanishes, so a kernel at ``beta = 0`` samples all of f0.
        """
        beta = np.asarray(beta, dtype=float)
        with np.errstate(invalid="ignore"):
            return self.log_f0 + np.where(beta == 0.0, 0.0, beta * self.U)

    def grad_log_density(self, beta) -> np.ndarray:
        if self.grad_U is None:
            raise ValueError("these log-density parts were computed without gradients")
        b = np.asarray(beta, dtype=float)
        return self.grad_log_f0 + (b[:, None] if b.ndim else b) * self.grad_U

    def take(self, index) -> "LogDensityParts":
        """The parts of a subset (or resampled copy) of the particles."""
        pick = lambda a: None if a is None else a[index]  # noqa: E731
        return LogDensityParts(self.log_f0[index], self.U[index], pick(self.grad_log_f0), pick(self.grad_U))

    @staticmethod
    def concatenate(parts) -> "LogDensityParts":
        """The parts of several particle sets, one after the other (gradients only when every set has them)."""
        join = lambda name: (  # noqa: E731
            None if getattr(parts[0], name) is None else np.concatenate([getattr(p, name) for p in parts])
        )
        return LogDensityParts(join("log_f0"), join("U"), join("grad_log_f0"), join("grad_U"))
