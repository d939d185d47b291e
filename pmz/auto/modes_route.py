"""The modes route: importance sampling or SMC from a mixture over the modes the chains found, and the prior.

Chains that disagree (split R-hat above ``max_rhat``) sit in separate modes, or have not mixed. First, where the
chains are pmz's own, a search for modes every chain missed (:func:`pmz.auto.chains.search_modes`). Each cluster of
chains then gets a Student-t component fitted to its draws and a mass estimated by importance sampling from it
(not the chains' proportions, which follow the starts); the mixture of the components (weights half the masses,
half even) and of the prior (weight 0.2, so that a mode no chain found can still be reached) is the reference
``q`` (:func:`pmz.runners.modes.mode_reference`). Where a pilot from ``q`` has an ESS below half its draws (a
curved or thin mode, such as a ring, that one component cannot follow), each mode's component is refitted as a
mixture by EM with its size chosen by BIC, and the reference whose pilot has the larger ESS is kept. Where its
importance weights ``p~ / q`` pass their checks, the
estimate is importance sampling from 2^16 exact draws of ``q``, two independent halves giving the check
(:func:`pmz.auto.importance_sampling.importance_from_reference`); otherwise a geometric path ``q^(1-b) p~^b`` to
the posterior, run by resample-move SMC with adaptive tempering, independent runs giving the se. Both are unbiased
for Z whatever the weights, and a reference this close needs few temperatures.
"""

from __future__ import annotations

import time

import numpy as np

from ..families import GeometricPath
from ..reliability import assess
from ..runners.branch_search import has_branches
from ..runners.draw_trust import MISSED_MASS, branch_modes, untrusted_chains_reason
from ..runners.modes import mode_reference
from ..weights import ess as kish_ess
from .chains import N_MODE_SEARCH, chains_at, search_modes
from .contract import Named, Outcome
from .importance_sampling import N_MIXTURE_PILOT, importance_draws, importance_from_reference
from .smc_runs import equally_weighted_runs, smc_runs

__all__ = ["ModesRoute", "MANY_MODES", "UNSEEN", "SCATTERED", "defensive_prior"]

MANY_MODES = 8  # peaks the search reaches beyond the chains' clusters, at least, before the modes count as unsettled
UNSEEN = 0.25  # ... when the Good-Turing chance that one more climb reaches a new peak is above this
SCATTERED = 0.75  # climbs alone at their end point, above which the end points are no list of modes
CURVED_BELOW = 0.5  # pilot ESS fraction of the one-component mixture below which a mixture by EM is tried


class ModesRoute:
    """A mixture over the modes (module docstring)."""

    name = "modes"

    def applies(self, context) -> str:
        if context.target is None:
            return "discrete free variables that cannot be summed out"
        draws = context.chains.draws
        if draws.rhat <= context.options.max_rhat:
            return f"the chains agree (split R-hat {draws.rhat:.3g} <= {context.options.max_rhat})"
        if context.clock.left() <= 0:
            return f"max_time was spent before the chains agreed (split R-hat {draws.rhat:.3g})"
        return ""

    def run(self, context) -> Outcome:
        chains, options = context.chains, context.options
        draws = chains.draws
        if chains.n_modes:
            reason = (f"the chains sit in {chains.n_modes} separate modes (split R-hat {draws.rhat:.3g} over all "
                      f"chains, at most {options.max_rhat} within each mode)")
        else:
            reason = untrusted_chains_reason(draws, options.max_rhat, own_chains=False)
        if chains.own and context.clock.left() > 0:
            search = search_modes(context.target, context.prior, draws, context.streams.search)
            context.clock.mark(f"search for missed modes from {N_MODE_SEARCH} prior draws ({search.n_found} found)")
            unsettled = _unsettled(search, draws.n_chains)
            if unsettled:
                context.many_modes = f"{reason}; the modes do not settle: {unsettled}"
                return Outcome(reason=context.many_modes)
            starts, covs, n_branch = _with_branch_peaks(context, draws, search)
            if starts.shape[0]:
                draws = chains_at(context.target, draws, starts, context.streams.search, covs=covs)
                context.clock.mark(f"a chain in each of the {starts.shape[0]} peaks found")
                found = [f"a search from {N_MODE_SEARCH} prior draws found {search.n_found} more"] if \
                    search.n_found else []
                found += [f"the mixture's components led to {n_branch} more"] if n_branch else []
                reason += f"; {' and '.join(found)} and ran a chain in each"
        return _from_mixture(context, draws, reason)


def _with_branch_peaks(context, draws, search):
    """The peaks a chain is run in: those the search found, and those the mixture branches of the log density lead
    to (:func:`pmz.runners.draw_trust.branch_modes`: a narrow component no climb reaches) in none of the chains'
    clusters, 3 of their sd from every peak found, with a Laplace mass above :data:`MISSED_MASS` of the chains';
    at most as many as there are chains. Returns ``(starts, covs, n_from_branches)``, ``covs`` the inverse
    curvature at each (NaN where the search did not measure it), which sets the new chains' step sizes."""
    X = draws.x.reshape(-1, draws.x.shape[2])
    if not has_branches(context.target):
        return search.peaks, np.full((search.peaks.shape[0], X.shape[1], X.shape[1]), np.nan), 0
    cov = np.atleast_2d(np.cov(X, rowvar=False)) + 1e-10 * np.eye(X.shape[1])
    branch = branch_modes(context.target, draws, cov)
    chains_mass = float(np.max(draws.log_posterior)) + 0.5 * np.linalg.slogdet(2.0 * np.pi * cov)[1]
    new = [i for i in range(branch.points.shape[0]) if branch.log_masses[i] - chains_mass > np.log(MISSED_MASS)
           and all(_far(branch.points[i], peak, branch.covs[i]) for peak in search.peaks)]
    new = new[: max(draws.n_chains - search.peaks.shape[0], 0)]
    starts = np.concatenate([search.peaks, branch.points[new]])
    unmeasured = np.full((search.peaks.shape[0], X.shape[1], X.shape[1]), np.nan)
    covs = np.concatenate([unmeasured, branch.covs[new]])
    return starts, covs, len(new)


def _far(point, peak, cov) -> bool:
    gap = point - peak
    return float(gap @ np.linalg.solve(cov, gap)) > 9.0


def _unsettled(search, n_chains: int) -> str:
    """Why the modes found cannot be trusted to be all that matter ("" when they can): more true peaks (not the
    ends of climbs stopped on a slope) outside the chains' clusters than there are chains (a chain is run in each
    found peak, at most that many), or, with at least :data:`MANY_MODES` of them, a Good-Turing chance above
    :data:`UNSEEN` that one more climb finds a peak none has reached."""
    if search.n_peaks > n_chains:
        return (f"a search from {N_MODE_SEARCH} prior draws reached {search.n_peaks} peaks outside the chains' "
                f"clusters, more than the {n_chains} new chains a mixture may add")
    if search.n_found > n_chains and search.scattered > SCATTERED:
        return (f"{search.scattered:.0%} of the climbs from {N_MODE_SEARCH} prior draws ended where no other did "
                f"({search.n_found} end points outside the chains' clusters, {search.n_peaks} of them true peaks)")
    if search.n_peaks >= MANY_MODES and search.unseen > UNSEEN:
        return (f"a search from {N_MODE_SEARCH} prior draws reached {search.n_peaks} peaks outside the chains' "
                f"clusters, and one more climb would reach a new one with a chance of about {search.unseen:.0%}")
    return ""


def _from_mixture(context, draws, reason) -> Outcome:
    """Importance sampling from the mixture reference where its weights pass, else SMC along the path from it."""
    target, options, clock = context.target, context.options, context.clock
    mass_rng, run_rng, est_rng, post_rng, is_rng = context.streams.smc.spawn(5)
    q, modes, pilot = _reference(context, draws, mass_rng, is_rng)
    chains = dict(rhat=draws.rhat, divergences=draws.divergences,
                  n_posterior_draws=draws.n_chains * draws.n_draws, modes=modes)
    t0 = time.perf_counter()
    estimates, record, posterior, why_not = importance_from_reference(target, q, is_rng, options.max_khat,
                                                                      pilot=pilot)
    if estimates:
        pool, a, b = estimates
        d = pool.estimate.diagnostics
        clock.mark(f"importance sampling from the mixture reference ({d.n_paths} draws)")
        reason = (f"{reason}; importance sampling from the mixture reference (ESS {d.ess_fraction:.0%} of "
                  f"{d.n_paths} draws, Pareto k-hat {d.pareto_khat:.2f})")
        return Outcome(reason=reason, answer=pool, check=(a, b), estimates=estimates, counted=estimates,
                       result_record=record, posterior_x=posterior, sampling_seconds=time.perf_counter() - t0,
                       **chains)
    t0 = time.perf_counter()
    record, est, cut = smc_runs(context, GeometricPath(target, q), context.kernel, q, run_rng, est_rng, target)
    seconds = time.perf_counter() - t0
    answer = Named("smc_modes", assess(est, record))
    clock.mark("modes route (SMC from the mixture reference)")
    return Outcome(reason=f"{reason}; SMC from the mixture reference ({why_not})", answer=answer,
                   estimates=(answer,), counted=(answer,), result_record=record,
                   posterior_x=equally_weighted_runs(record, post_rng), unreliable=cut, sampling_seconds=seconds,
                   **chains)


def _reference(context, draws, mass_rng, pilot_rng):
    """The mixture reference, its :class:`pmz.runners.modes.ModeSummary` and the log weights of a pilot of
    :data:`N_MIXTURE_PILOT` draws from it.

    One Student-t component per mode first; where the pilot's ESS is below :data:`CURVED_BELOW` of its draws (a
    curved or thin mode that one component cannot follow), each mode's component is refitted as a mixture by EM
    (``mode_reference(curved=True)``), piloted in turn, and kept where its pilot's ESS is the larger. The choice
    reads pilots only: the estimate's draws are fresh, so it stays unbiased and its checks independent."""
    target = context.target
    defensive = defensive_prior(target, context.prior)
    q, modes = mode_reference(target, draws.x, mass_rng, defensive=defensive)
    pilot, _ = importance_draws(target, q, pilot_rng, N_MIXTURE_PILOT)
    fraction = kish_ess(pilot) / pilot.size
    context.clock.mark(f"mixture reference over {modes.n_modes} mode(s) (pilot ESS {fraction:.0%})")
    if fraction >= CURVED_BELOW:
        return q, modes, pilot
    curved, curved_modes = mode_reference(target, draws.x, mass_rng, defensive=defensive, curved=True)
    if _n_components(curved) == _n_components(q):
        return q, modes, pilot
    curved_pilot, _ = importance_draws(target, curved, pilot_rng, N_MIXTURE_PILOT)
    curved_fraction = kish_ess(curved_pilot) / curved_pilot.size
    context.clock.mark(f"a mixture fitted by EM in each mode, {_n_components(curved)} components "
                       f"(pilot ESS {curved_fraction:.0%})")
    if curved_fraction > fraction:
        return curved, curved_modes, curved_pilot
    return q, modes, pilot


def _n_components(q) -> int:
    """Components of a (nested) mixture reference, all levels counted."""
    parts = getattr(q, "components", None)
    return 1 if parts is None else sum(_n_components(part) for part in parts)


def defensive_prior(target, prior):
    """``prior`` (:func:`pmz.runners.draw_trust.prior_reference`) as a normalised reference for the mixture, or None
    where it cannot serve: no prior, the discrete variables were summed out (``target`` is not the prior's model),
    or a prior density may not integrate to one for a reason pmz cannot correct
    (``pmz.model.prior_mass.suspect_variables`` other than those whose mass pmz knows: ordered exchangeable entries,
    ``1/K!``, and conditional autoregressions, whose Gaussian constant PyMC leaves out; ``known_log_masses``)."""
    from ..model.mixture_reference import RenormalisedReference
    from ..model.prior_mass import known_log_masses, suspect_variables

    if prior is None or prior.compiled is not target:
        return None
    known = known_log_masses(target.model)
    if set(suspect_variables(target.model)) - set(known):
        return None
    return RenormalisedReference(prior, sum(known.values()), name="prior")
