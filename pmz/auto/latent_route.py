"""The latent route: Gaussian latents integrated out exactly, importance sampling over a few hyperparameters.

Where the model's untransformed continuous variables (at least :data:`pmz.model.latent_gaussian.MIN_LATENT`
coordinates) enter the log density quadratically given at most :data:`pmz.model.latent_gaussian.MAX_HYPER`
hyperparameter coordinates (AR and other Gaussian state-space models, GP regression, hierarchical normal models,
Gaussian posteriors), the latents are integrated out exactly (:mod:`pmz.model.latent_gaussian`: the precision
from gradients, certified at every value). With no hyperparameters that is log Z itself, the proof of an exact
answer (se 0); otherwise the hyperparameters are integrated by importance sampling
(:mod:`pmz.auto.hyper_importance`), two independent halves giving the check. ``latent=False`` skips the route.
"""

from __future__ import annotations

from ..model.latent_gaussian import MAX_HYPER, MAX_LATENT, MIN_LATENT
from .contract import Outcome
from .hyper_importance import integrate_hyperparameters

__all__ = ["LatentRoute", "hyperparameter_route_blocked"]


def hyperparameter_route_blocked(context) -> str:
    """Why neither the latent nor the importance route can run at this call ("" when they may)."""
    if not context.options.latent:
        return "latent=False"
    if context.options.posterior is not None:
        return "draws were given as posterior="
    if context.has_discrete:
        return "the model has discrete free variables"
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
        if split.latent.size == 0:
            return "no latent coordinates: a model of few coordinates (the importance route's case)"
        return ""

    def run(self, context) -> Outcome:
        return integrate_hyperparameters(context, context.latent_split)
