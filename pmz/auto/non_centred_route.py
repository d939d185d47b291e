"""The non-centred route: funnels. A Normal free variable whose scale depends on other free variables is written as
its location plus its scale times a standard Normal (:mod:`pmz.model.non_centring`: the same model, the same log Z),
and the routes that need no chains run on that model.

On the rewritten model the scales' variables are the hyperparameters (with the transformed ones) and the standard
Normals, with the other untransformed variables, the latents: the latent route where the density is proven quadratic
in them (Neal's funnel with data on some coordinates: given the log scale the rest is Gaussian), then the Laplace
route where it is proven concave, then importance sampling over every coordinate (at most 30). Each keeps its own
checks; where none answers, the route hands over to the chains on the model as written. The posterior draws are
mapped back to the model as written (``x = mu + sigma z``). ``latent=False`` skips the route.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..model.latent_gaussian import every_coordinate, latent_split
from ..model.non_centring import funnel_children, non_centred_model
from ..model.posterior_draws import posterior_dataset
from .contract import Outcome
from .importance_route import ImportanceRoute
from .laplace_route import MAX_LATENT as MAX_LAPLACE_LATENT
from .laplace_route import LaplaceRoute
from .latent_route import LatentRoute, hyperparameter_route_blocked

__all__ = ["NonCentredRoute"]


class NonCentredRoute:
    """The routes without chains on the non-centred model (module docstring)."""

    name = "non-centred"

    def applies(self, context) -> str:
        blocked = hyperparameter_route_blocked(context)
        if blocked:
            return blocked
        model = getattr(context.target, "model", None)
        if getattr(context.target, "kind", None) != "pymc" or model is None:
            return "not a PyMC model"
        if not funnel_children(model):
            return "no Normal free variable whose scale depends on other free variables"
        return ""

    def run(self, context) -> Outcome:
        from ..model.pymc import CompiledModel

        model = context.target.model
        children = funnel_children(model)
        scales = tuple(dict.fromkeys(name for parents in children.values() for name in parents))
        options = context.options
        target = CompiledModel(non_centred_model(model, children), potentials=options.potentials,
                               mode=options.compile_mode)
        target.compile_clock = context.target.compile_clock  # its compiles are the call's compile_time
        rewritten = _Rewritten(context, target, scales)
        what = (f"{', '.join(children)} non-centred given {', '.join(scales)} ({_name(children)} = mu + sigma z, "
                "z ~ N(0, 1): the same model and log Z)")
        context.clock.mark(f"non-centred model: {what}")
        tried = []
        try:
            for route in (LatentRoute(), LaplaceRoute(), ImportanceRoute()):
                why_not = route.applies(rewritten)
                if why_not:
                    tried.append(f"{route.name}: {why_not}")
                    continue
                outcome = route.run(rewritten)
                if outcome.answered:
                    rows = _as_written(context.target, target, outcome.posterior_x)
                    before = "".join(f"{line}; " for line in tried)
                    return replace(outcome, posterior_x=rows,
                                   reason=f"{what}; on it, {before}the {route.name} route: {outcome.reason}")
                tried.append(f"{route.name}: {outcome.reason}")
        finally:  # its evaluations are the call's (n_logp_evals, n_grad_evals)
            context.target.n_logp_evals += target.n_logp_evals
            context.target.n_grad_evals += target.n_grad_evals
        return Outcome(reason=f"{what}; on it, {'; '.join(tried)}")


def _name(children) -> str:
    return next(iter(children)) if len(children) == 1 else "each"


class _Rewritten:
    """What the latent, Laplace and importance routes read of the default's context, for the non-centred model:
    its compiled model and splits (the scales' variables as hyperparameters), the same options, streams, clock and
    progress bar."""

    has_discrete = False
    jumps = ""  # the model as written has none (the route applies only then); the rewrite adds none

    def __init__(self, context, target, scales):
        self.options, self.streams, self.clock, self.progress = (context.options, context.streams, context.clock,
                                                                  context.progress)
        self.target = target
        self.latent_split = latent_split(target, as_hyper=scales)
        self.laplace_split = latent_split(target, MAX_LAPLACE_LATENT, as_hyper=scales)
        self.importance_split = every_coordinate(target)


def _as_written(written, target, rows):
    """Posterior draws ``(chain, draw, dim)`` of the non-centred model as flat draws of the model as written: its
    posterior group (:func:`pmz.model.posterior_draws.posterior_dataset`: the free variables and the deterministic
    ``x = mu + sigma z``) read back through the written model's value transforms."""
    if rows is None:
        return None
    rows = np.asarray(rows, dtype=float)
    named = posterior_dataset(target, rows)
    X = written.from_constrained({rv.name: named[rv.name].values.reshape(-1, *named[rv.name].shape[2:])
                                  for rv in written.model.free_RVs})
    return X.reshape(*rows.shape[:-1], written.dim)
