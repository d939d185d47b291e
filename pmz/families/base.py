"""The tempered-family contract shared by every family, kernel and runner.

A tempered family is a path of unnormalised densities between a start density f0 (exact draws, known
normaliser ``exp(log_z0)``) and a target f1:

    log f_beta(x) = log f0(x) + beta * U(x),        U(x) = log f1(x) - log f0(x),   beta in [0, 1].

A family evaluates the two parts ``log f0`` and ``U`` (and, on request, their gradients) for a whole batch of
particles in one call (a :class:`~pmz.model.parts.LogDensityParts`); the temperature is an argument of its
``log_density``, never a recompilation, so a batch may even carry one beta per particle (simulated tempering).
"""

from __future__ import annotations

import numpy as np

from ..model.parts import LogDensityParts

__all__ = ["TemperedFamily", "ModelFamily"]


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
