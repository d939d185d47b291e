"""The tempered route: resample-move SMC from the prior with adaptive tempering (pmz's ``"smc"``), independent
runs giving the se.

It answers where nothing nearer the posterior can be trusted: discrete free variables with too many joint values to
sum out (or draws given with them), and pmz's own chains with divergent transitions (their draws miss part of the
posterior, e.g. a funnel's neck) while time is left; a log density that jumps by a finite amount in a continuous
variable (:func:`pmz.model.jumps.finite_jumps`: a region behind a step up is invisible to gradients); and, as the
plan's second entry, where the modes route found modes that do not settle (a product of double wells: more modes
than any list of them). The estimate is corrected to the density as written (:func:`density_evidence`), so that
every route answers the same question. Where a mixture in the log density has a narrow component that no final
particle reached (:func:`pmz.runners.draw_trust.particles_miss_a_component`), the result is flagged.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from ..model.discrete_sum import MAX_CONFIGURATIONS
from ..reliability import assess
from ..runners.draw_trust import divergent, particles_miss_a_component, untrusted_chains_reason
from .contract import Named, Outcome
from .smc_runs import equally_weighted_runs, smc_runs

__all__ = ["TemperedRoute", "density_evidence"]


class TemperedRoute:
    """SMC from the prior (module docstring). ``after_modes=True``: the plan's second entry, which applies only
    where the modes route handed over because the modes do not settle (``context.many_modes``)."""

    name = "tempered"

    def __init__(self, after_modes: bool = False):
        self.after_modes = after_modes

    def applies(self, context) -> str:
        if self.after_modes:
            return "" if context.many_modes else "the modes route did not hand over"
        if context.discrete_left:
            return ""
        if context.jumps and context.own_chains:
            return ""
        if not context.own_chains:
            return "draws were given as posterior= (their sampler's divergences flag the result instead)"
        chains = context.chains
        if not divergent(chains.draws):
            return "the chains have no more divergent transitions than round-off makes"
        if context.clock.left() <= 0:
            return "max_time was spent (the bridge answers from the draws, flagged)"
        return ""

    def run(self, context) -> Outcome:
        full, rng = context.full_target, context.streams.smc
        t0 = time.perf_counter()
        record, est, cut = smc_runs(context, context.family, context.full_kernel, "prior", rng, rng, full)
        seconds = time.perf_counter() - t0
        est = assess(density_evidence(est, context.family, full, rng.spawn(1)[0]), record)
        context.clock.mark("tempered route (SMC from the prior)")
        answer = Named("smc", est)
        chains = {}
        if context.discrete_left:
            reason = f"discrete free variables {context.discrete_names} ({context.discrete_left})"
        elif context.jumps and not context.many_modes:
            reason = (f"{context.jumps}: gradient-based chains and climbs do not see across a jump, SMC's particles "
                      "start everywhere the prior puts mass")
        else:
            draws = context.chains.draws
            reason = context.many_modes or untrusted_chains_reason(draws, context.options.max_rhat, own_chains=True)
            chains = dict(rhat=draws.rhat, divergences=draws.divergences,
                          n_posterior_draws=draws.n_chains * draws.n_draws)
        particles = equally_weighted_runs(record, rng.spawn(1)[0])
        missed = "" if context.discrete_left else particles_miss_a_component(full, particles, est.log_z)
        return Outcome(reason=reason, answer=answer, estimates=(answer,), counted=(answer,), result_record=record,
                       posterior_x=particles, on_full_model=True, unreliable=cut or missed,
                       sampling_seconds=seconds, **chains)


def density_evidence(est, family, target, rng):
    """SMC from prior draws estimates the evidence under the draws' (normalised) prior; the bridge and path routes
    integrate the model's density as PyMC writes it. Where that prior density does not integrate to one (ordered
    transforms: 1/K!; LKJCholeskyCov on PyMC 5), add its measured log mass (:mod:`pmz.model.prior_mass`) so that
    every route answers the same question: ``log Z_density = log Z_prior_draws + sum_v log c_v``."""
    from ..methods.draw_checks import prior_normalisation_note

    prior_fields, _ = prior_normalisation_note(family, target, rng, "auto")
    if not prior_fields:
        return est
    noted = replace(est.diagnostics, **prior_fields)
    log_z = est.log_z + noted.prior_log_mass
    se = float(np.hypot(est.log_z_se, noted.prior_log_mass_se))
    return replace(est, log_z=log_z, log_z_se=se, diagnostics=noted)


def discrete_left_reason(posterior_given: bool) -> str:
    """Why discrete free variables cannot be summed out of the model (the tempered route's reason)."""
    if posterior_given:
        return "draws given as posterior= with discrete variables"
    return f"more than {MAX_CONFIGURATIONS} joint values or an unbounded support, too many to sum out"
