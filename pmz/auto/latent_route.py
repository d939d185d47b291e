"""The latent route: Gaussian latents integrated out exactly, importance sampling over a few hyperparameters.

Where the model's untransformed continuous variables (at least :data:`pmz.model.latent_gaussian.MIN_LATENT`
coordinates) enter the log density quadratically given at most :data:`pmz.model.latent_gaussian.MAX_HYPER`
hyperparameter coordinates (AR and other Gaussian state-space models, GP regression, hierarchical normal models,
Gaussian posteriors), the latents are integrated out exactly (:mod:`pmz.model.latent_gaussian`: the precision
from gradients). That the log density is quadratic in the latents is proven from the model's PyTensor graph before
the route applies (:mod:`pmz.model.quadratic_proof`: the latents reach it only through sums, products, linear maps
and solves and integer powers, of total degree at most 2); a model it cannot prove so (``abs``, ``exp``, a switch
or a comparison of the latents, a term of degree 3, an op it does not know) is refused with the op and the term
named. The probes of the quadratic's identities at every value stay as a second check. With no hyperparameters the
Gaussian integral is log Z itself, the proof of an exact answer (se 0, the graph's proof in ``Outcome.proof``);
otherwise the hyperparameters are integrated by importance sampling (:mod:`pmz.auto.hyper_importance`), two
independent halves giving the check, and the graph's proof is stated in the reason. ``latent=False`` skips the
route.
"""

from __future__ import annotations

from dataclasses import replace

from ..model.latent_gaussian import MAX_HYPER, MAX_LATENT, MIN_LATENT
from ..model.quadratic_proof import QuadraticProof, quadratic_proof
from .contract import Outcome
from .hyper_importance import integrate_hyperparameters

__all__ = ["LatentRoute", "hyperparameter_route_blocked"]


def hyperparameter_route_blocked(context, summed: bool = False) -> str:
    """Why neither the latent nor the importance route can run at this call ("" when they may). ``summed``: discrete
    variables summed out exactly (``context.summed``) do not block the route (the importance route: it reads the
    summed model's log density only, no graph). Draws given as ``posterior=`` do not block them: these routes need
    no draws, and a call with draws is never slower than one without (the draws are read where a route needs
    them)."""
    if not context.options.latent:
        return "latent=False"
    if context.has_discrete and not (summed and getattr(context, "summed", None) is not None):
        return "the model has discrete free variables"
    if context.jumps:
        return f"{context.jumps}: climbs and importance draws from a peak do not see across a jump"
    return ""


class LatentRoute:
    """Gaussian latents integrated out exactly (module docstring)."""

    name = "latent"

    def applies(self, context) -> str:
        blocked = hyperparameter_route_blocked(context)
        if blocked:
            return blocked
        split = context.latent_split
        if split is None:
            return (f"not {MIN_LATENT} to {MAX_LATENT} untransformed continuous coordinates beside at most "
                    f"{MAX_HYPER} others")
        proof = graph_proof(context)
        return "" if proof.proven else proof.refusal

    def run(self, context) -> Outcome:
        proof = graph_proof(context)
        if not proof.proven:  # (applies refuses first; a plan that runs the route unasked gets the same answer)
            return Outcome(reason=proof.refusal)
        outcome = integrate_hyperparameters(context, context.latent_split)
        if not outcome.answered:
            return outcome
        if outcome.proof:  # no hyperparameters: the Gaussian integral is exact, and the graph says why it applies
            return replace(outcome, proof=f"{outcome.proof}, proven from the model's graph: {proof.proof}")
        return replace(outcome, reason=f"{outcome.reason}; proven from the model's graph: {proof.proof}")


def graph_proof(context) -> QuadraticProof:
    """The proof from the graph (:func:`pmz.model.quadratic_proof.quadratic_proof`) that the log density of the
    context's model is quadratic in the latents of its split, or the refusal naming what is not."""
    model = getattr(context.target, "model", None)
    if model is None:
        return QuadraticProof(False, refusal="not a PyMC model: no graph to prove the latents quadratic from")
    return quadratic_proof(model, context.latent_split.latent_names)
