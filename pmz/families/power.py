"""Power posterior: ``log f_beta(x) = log prior(x) + beta * log likelihood(x)`` (Friel & Pettitt 2008).

f0 is the prior (pushed to the unconstrained space, Jacobians included), sampled exactly by forward
sampling, with ``log Z0 = 0`` when every prior is proper; U is the log likelihood (plus ``pm.Potential``
terms by default). log Z at beta = 1 is then the log evidence ``log p(y)``.
"""

from __future__ import annotations

from ..model.pymc import CompiledModel, ModelSpecificationError
from ..model.reference import PriorReference
from ..model.parts import LogDensityParts
from .base import ModelFamily

__all__ = ["PowerPosterior"]


class PowerPosterior(ModelFamily):
    """Tempered family from the prior (beta = 0) to the posterior (beta = 1) of a compiled PyMC model.

    Raises
    ------
    ModelSpecificationError
        If ``pm.Potential`` terms were compiled into the prior part (``potentials="prior"``): the start
        density would no longer be the samplable, normalised prior.
        If a prior is improper (``pm.Flat``, ``pm.HalfFlat``): it cannot be sampled and its normaliser is
        infinite, so the power path has no start. Use a proper prior or a reference path
        (``reference="laplace"``).
    """

    name = "power_posterior"
    log_z0 = 0.0

    def __init__(self, compiled: CompiledModel):
        if compiled.improper_priors:
            raise ModelSpecificationError(
                f"pmz: improper prior on {compiled.improper_priors} (pm.Flat / pm.HalfFlat). The power-posterior "
                "path starts from the prior, which must be proper (samplable and normalised). Give these "
                "variables proper priors, or anneal from a reference distribution with reference='laplace' "
                "(log Z is then relative to the improper prior's arbitrary scale)."
            )
        if compiled.potentials == "prior" and compiled.model.potentials:
            raise ModelSpecificationError(
                "pmz: potentials='prior' puts the pm.Potential terms into the start density of the power path, "
                "which must be the prior alone (exact draws, normalised). Keep them tempered "
                "(potentials='likelihood', the default) or anneal from a reference (reference='laplace')."
            )
        super().__init__(compiled)
        self.prior = PriorReference(compiled)
        model = compiled.model
        # no observed variable and no tempered pm.Potential: U = 0, f1 = f0, log Z = log Z0 exactly
        self.trivial_path = not model.observed_RVs and not (compiled.potentials == "likelihood" and model.potentials)

    def sample_start(self, rng, n):
        return self.prior.sample(rng, n)

    def parts(self, X, *, grad=False):
        if grad:
            lp, ll, glp, gll = self.compiled.log_densities_and_grads(X)
            return LogDensityParts(lp, ll, glp, gll)
        lp, ll = self.compiled.log_densities(X)
        return LogDensityParts(lp, ll)
