"""Geometric path from a reference q: ``log f_beta = (1 - beta) log q + beta (log prior + log lik)``.

f0 = q is a normalised reference with exact draws (a Laplace Gaussian at the MAP, the prior, or one the user
gives); ``U = log prior + log lik - log q``. A reference close to the posterior makes the path short
(fewer temperatures for the same accuracy) and does not need a proper prior.
"""

from __future__ import annotations

from ..model.pymc import CompiledModel
from ..model.parts import LogDensityParts
from .base import ModelFamily

__all__ = ["GeometricPath"]


class GeometricPath(ModelFamily):
    """Tempered family from a reference ``q`` (beta = 0) to prior x likelihood (beta = 1).

    Parameters
    ----------
    compiled : CompiledModel
    reference : object with ``sample(rng, n)``, ``log_density(X)``, ``grad_log_density(X)``, ``log_z``, ``name``
    """

    name = "geometric"

    def __init__(self, compiled: CompiledModel, reference):
        if reference.dim != compiled.dim:
            raise ValueError(f"reference has dimension {reference.dim}, the model {compiled.dim}")
        super().__init__(compiled)
        self.reference = reference
        self.log_z0 = float(getattr(reference, "log_z", 0.0))
        self.name = f"geometric from {getattr(reference, 'name', 'reference')}"

    def sample_start(self, rng, n):
        return self.reference.sample(rng, n)

    def parts(self, X, *, grad=False):
        log_q = self.reference.log_density(X)
        if grad:
            lp, ll, glp, gll = self.compiled.log_densities_and_grads(X)
            grad_q = self.reference.grad_log_density(X)
            return LogDensityParts(log_q, lp + ll - log_q, grad_q, glp + gll - grad_q)
        lp, ll = self.compiled.log_densities(X)
        return LogDensityParts(log_q, lp + ll - log_q)
