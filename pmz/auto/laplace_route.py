"""The Laplace route: latents that are concave but not Gaussian given a few hyperparameters (random effects under a
Poisson, logistic, binomial or negative-binomial likelihood; latent fields), integrated by an annealed correction
from the Laplace Gaussian at their conditional mode, and importance sampling over the hyperparameters.

It applies where the model splits into at most :data:`pmz.model.latent_gaussian.MAX_HYPER` hyperparameter
coordinates (the transformed or bounded variables) and :data:`pmz.model.latent_gaussian.MIN_LATENT` to
:data:`MAX_LATENT` latent ones (the untransformed continuous variables), and where the log density is proven concave
in the latents from the model's graph (:mod:`pmz.model.concavity_proof`); a model it cannot prove so is refused
with the op and the term named. At each hyperparameter value the conditional mode and the precision there
(:mod:`pmz.runners.conditional_laplace`; the precision diagonal beside a few shared latents, banded, or dense) give a
Gaussian; annealed importance sampling from it to the true
conditional gives an unbiased estimate of ``p(y, theta)``; the hyperparameters are integrated by importance sampling
from a Student-t fitted at the peak of the Laplace approximation (:mod:`pmz.auto.hyper_importance`). The Laplace
approximation is only the proposal: the estimate is unbiased in ``Z``, and its se, Pareto k-hat and two independent
halves say how far to trust it. Weights that fail their checks, a second peak, or a correction that would need more
than :data:`pmz.runners.conditional_laplace.MAX_TEMPERATURES` temperatures hand over with the reason. ``latent=False``
skips the route.
"""

from __future__ import annotations

import numpy as np

from ..model.concavity_proof import concavity_proof
from ..runners.conditional_laplace import ConditionalLaplace
from ..runners.laplace_structure import ArrowStructure, BandStructure
from ..model.latent_gaussian import MAX_HYPER, MIN_LATENT, LatentSplit
from .contract import Outcome
from .hyper_importance import integrate_hyperparameters
from .latent_route import hyperparameter_route_blocked

__all__ = ["LaplaceRoute", "MAX_LATENT"]

MAX_LATENT = 1 << 20  # latents (memory: a few batches of them per hyperparameter value)


class LaplaceRoute:
    """Concave latents: Laplace Gaussians corrected by annealing, importance over the hyperparameters (module
    docstring)."""

    name = "laplace"

    def applies(self, context) -> str:
        blocked = hyperparameter_route_blocked(context)
        if blocked:
            return blocked
        split = context.laplace_split
        if split is None:
            return (f"not {MIN_LATENT} to {MAX_LATENT} untransformed continuous coordinates beside at most "
                    f"{MAX_HYPER} others")
        if split.hyper.size == 0:
            return "no hyperparameters: the latents alone (not yet a case of this route)"
        proof = concavity_proof(context.target.model, split.latent_names)
        return "" if proof.proven else proof.refusal

    def run(self, context) -> Outcome:
        target = context.target
        split = context.laplace_split
        proof = concavity_proof(target.model, split.latent_names)
        if not proof.proven:
            return Outcome(reason=proof.refusal)
        base = target.initial_point()
        if hasattr(target, "terms_beside_gradients"):
            target.terms_beside_gradients()  # few data: the quadrature's terms and the gradients in one compile
        split, structure = _shared_latents_as_hyperparameters(target, split, base, context.streams.spawn(1)[0])
        laplace = ConditionalLaplace(target, split, base, proof=proof.proof, structure=structure)
        return integrate_hyperparameters(context, split, laplace=laplace)


def _shared_latents_as_hyperparameters(target, split, base, rng):
    """Where the latents are independent given the hyperparameters and a few shared latents (a population mean
    under group effects: an arrow-shaped precision), or form a band beside a few shared latents (a field's level),
    the shared ones join the hyperparameters (up to :data:`pmz.model.latent_gaussian.MAX_HYPER` in all), so that
    the groups are integrated one at a time, or the band is factored alone. Returns the split and the structure of
    the latents' precision where it is known (else None: the route reads it)."""
    probe = ConditionalLaplace(target, split, base)
    failure = probe.learn_structure(base[split.hyper][None], rng).failure
    structure = probe.structure
    banded = isinstance(structure, BandStructure) and len(structure.border)
    if failure and not banded:
        return split, None  # the route's own reading of the structure says why
    if not isinstance(structure, (ArrowStructure, BandStructure)):
        return split, structure
    if not 0 < len(structure.border) <= MAX_HYPER - len(split.hyper) or len(structure.rest) < MIN_LATENT:
        return split, None if failure else structure
    shared = split.latent[structure.border]
    names = tuple(dict.fromkeys(block.rv_name for block in target.layout.blocks
                                if any(block.start <= i < block.stop for i in shared)))
    rest_names = tuple(dict.fromkeys(block.rv_name for block in target.layout.blocks
                                     if any(block.start <= i < block.stop for i in split.latent[structure.rest])))
    moved = LatentSplit(np.concatenate([split.hyper, shared]), split.latent[structure.rest],
                        tuple(split.hyper_names) + names, rest_names)
    return moved, ArrowStructure(len(structure.rest), []) if isinstance(structure, ArrowStructure) else None
