"""The importance route: a model of at most six coordinates, importance sampled from a Student-t at its peak.

A model of at most :data:`pmz.model.latent_gaussian.MAX_HYPER` coordinates (and fewer than
:data:`pmz.model.latent_gaussian.MIN_LATENT` latent ones) has every coordinate as a hyperparameter and nothing to
integrate out, ``log p(y, theta) = log p~(theta)``: the peak, a look around it for a second one, and importance
sampling from a defensive Student-t there (:mod:`pmz.auto.hyper_importance`), on values of the log density alone (a
few thousand, no gradient, where the chains take about 10^5 gradients). Two independent halves give the check.
``latent=False`` skips the route.
"""

from __future__ import annotations

from ..model.latent_gaussian import MAX_HYPER, MIN_LATENT
from .contract import Outcome
from .hyper_importance import integrate_hyperparameters
from .latent_route import hyperparameter_route_blocked

__all__ = ["ImportanceRoute"]


class ImportanceRoute:
    """Importance sampling from the posterior's peak (module docstring)."""

    name = "importance"

    def applies(self, context) -> str:
        blocked = hyperparameter_route_blocked(context)
        if blocked:
            return blocked
        split = context.latent_split
        if split is None or split.latent.size:
            return f"more than {MAX_HYPER} coordinates, or at least {MIN_LATENT} latent ones"
        return ""

    def run(self, context) -> Outcome:
        return integrate_hyperparameters(context, context.latent_split)
