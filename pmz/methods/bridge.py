"""Bridge sampling (``"bridge"``): BAR with one step, from a reference fitted to posterior draws to the posterior
(Meng & Wong 1996; Gronau et al. 2017). The draws are the user's (``posterior=``) or a ``pm.sample`` run's; the
reference is fitted on one half of each chain and the bridge uses the other (:mod:`pmz.runners.bridge_sampling`).
"""

from __future__ import annotations

from dataclasses import replace

from ..runners.bridge_sampling import run_bridge
from ..runners.starts import nuts_draws, posterior_to_flat
from .annealing import two_way_estimator

__all__ = ["run_bridge_method", "estimate_bridge"]


def run_bridge_method(family, kernel, options, rng, progressbar, target):
    if target.kind != "pymc":
        raise ValueError("pmz: method='bridge' needs a PyMC model (posterior draws in its value space)")
    if target.layout.discrete_mask.any() or target.improper_priors:
        raise ValueError(
            "pmz: method='bridge' fits a continuous reference to the posterior draws: it needs continuous free "
            "variables and proper priors; use method='bar' for this model"
        )
    draws_rng, bridge_rng = rng.spawn(2)
    if options.posterior is None:
        X, chain, _ = nuts_draws(
            target, options.n_draws, draws_rng, tune=options.nuts_tune, progressbar=progressbar
        )
        source = "nuts"
    else:
        X, chain = posterior_to_flat(target, options.posterior)
        source = "posterior"
    record = run_bridge(
        target,
        X,
        chain,
        bridge_rng,
        reference=options.bridge_reference,
        n_reference=options.n_reference,
        df=options.df,
        split=options.split,
    )
    return replace(record, reverse_start=source)


def estimate_bridge(record, options, rng):
    """Bridge sampling is BAR with one step (reference -> posterior); the result says "bridge", its evidence group
    names the estimator (``estimator = "bar"``)."""
    estimate = two_way_estimator("bar")(record, options, rng)
    return replace(estimate, method="bridge", diagnostics=replace(estimate.diagnostics, estimator="bar"))
