"""The tempered-family contract shared by every family, kernel and runner.

A tempered family is a path of unnormalised densities between a start density f0 (exact draws, known
normaliser ``exp(log_z0)``) and a target f1:

    log f_beta(x) = log f0(x) + beta * U(x),        U(x) = log f1(x) - log f0(x),   beta in [0, 1].

A family evaluates the two parts ``log f0`` and ``U`` (and, on request, their gradients) for a whole batch of
particles in one call; the temperature is an argument of :meth:`LogDensityParts.log_density`, never a
recompilation, so a batch may even carry one beta per particle (simulated tempering).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LogDensityParts", "TemperedFamily", "ModelFamily"]


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


class TemperedFamily:
    """Interface of a tempered family (see module docstring). Subclasses implement the four members.

    Attributes
    ----------
    dim : int
        Dimension of the flat particle space.
    log_z0 : float
        log normalising constant of f0 (0 for a normalised prior or reference).
    name : str
    trivial_path : bool
        True when ``U`` is identically zero (``f1 = f0``, e.g. a model without observed data or potentials):
        there is nothing to anneal, ``log Z = log Z0`` exactly, and runners use a one-step schedule.
    """

    dim: int
    log_z0: float = 0.0
    name: str = "family"
    trivial_path: bool = False

    def sample_start(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` exact draws from f0, shape ``(n, dim)``."""
        raise NotImplementedError

    def parts(self, X, *, grad: bool = False) -> LogDensityParts:
        """``log f0`` and ``U`` (with gradients if ``grad``) for particles ``X (n, dim)``: one batched call."""
        raise NotImplementedError

    @property
    def n_logp_evals(self) -> int:
        """Particle evaluations without gradients so far."""
        return 0

    @property
    def n_grad_evals(self) -> int:
        """Particle evaluations with gradients so far."""
        return 0


class ModelFamily(TemperedFamily):
    """A tempered family built on a :class:`~pmz.model.pymc.CompiledModel`; its counters are the model's."""

    def __init__(self, compiled):
        self.compiled = compiled
        self.dim = compiled.dim

    @property
    def n_logp_evals(self) -> int:
        return self.compiled.n_logp_evals

    @property
    def n_grad_evals(self) -> int:
        return self.compiled.n_grad_evals
