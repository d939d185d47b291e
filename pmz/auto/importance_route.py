"""The importance route: a model of at most 30 coordinates, importance sampled from a Student-t at its peak.

A model of at most :data:`pmz.model.latent_gaussian.MAX_IMPORTANCE` coordinates that the latent and Laplace routes
did not answer has every coordinate as a hyperparameter and nothing to integrate out,
``log p(y, theta) = log p~(theta)``: the peak, a look around it for a second one, and importance sampling from a
defensive Student-t there (:mod:`pmz.auto.hyper_importance`), on values of the log density alone (a few thousand
to 10^5, no gradient, where the chains take about 10^5 gradients). The Pareto k-hat of the weights and the ESS
decide whether it answers (a thin curved posterior, a funnel, hands over to the chains); two independent halves
give the check. ``latent=False`` skips the route.
"""

from __future__ import annotations

from ..model.latent_gaussian import MAX_IMPORTANCE
from .contract import Outcome
from .hyper_importance import integrate_hyperparameters
from .latent_route import hyperparameter_route_blocked

__all__ = ["ImportanceRoute"]


class ImportanceRoute:
    """Importance sampling from the posterior's peak (module docstring)."""

    name = "importance"

    def applies(self, context) -> str:
        blocked = hyperparameter_route_blocked(context, summed=True)
        if blocked:
            return blocked
        if context.importance_split is None:
            return f"more than {MAX_IMPORTANCE} coordinates"
        return ""

    def run(self, context) -> Outcome:
        return integrate_hyperparameters(context, context.importance_split)
