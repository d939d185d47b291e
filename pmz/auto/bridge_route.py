"""The bridge route: cross-fitted bridge sampling from a Gaussian fitted to the posterior draws.

The chains are split in two halves A and B. A Gaussian reference q_A is fitted to A's draws in the unconstrained
space and bridged (BAR with K = 1) with B's draws and as many exact draws of q_A; and the other way round. Their
mean is the estimate and ``se = (se_A + se_B) / 2`` (:func:`pair_se`); their difference is the check. While the se
is above ``target_se``, pmz's own chains draw more and the bridge is recomputed (:func:`draws_wanted`); a bridge
that fails its checks on the first pass is recomputed with as many draws per chain as warm-up iterations before
the path runs (a Gaussian fitted to n draws in d dimensions is about ``d^2 / 4n`` nats from the one it estimates).

Where either half's Pareto k-hat of ``log p~(x) - log q(x)`` on q's draws exceeds ``max_khat`` or its overlap is
below ``min_overlap``, the route hands over to the path route (the findings stay in the context for it), unless
``max_time`` is spent: then it answers, flagged. Draws the user gave (``posterior=``) are checked for what makes
them untrustworthy (:mod:`pmz.runners.draw_trust`: the Stein identities, the sampler's divergences, a missed mode).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..estimators.bar import bar
from ..model.reference import curvature_reference
from ..reliability import assess
from ..runners.bridge_sampling import fit_reference, run_bridge
from ..runners.draw_trust import divergent, given_draws_trust, missed_mode, trust_reason
from ..runners.posterior_hmc import PosteriorDraws
from ..sample_diagnostics import pareto_khat
from ..weights import ess as kish_ess
from .contract import Named, Outcome
from .importance_sampling import importance_draws

__all__ = ["BridgeFindings", "BridgeRoute", "bridge_ok", "bridge_pair", "draws_wanted", "gaussian_reference",
           "pair_se"]

N_CHOICE = 1 << 10  # exact draws of each candidate reference when choosing between them
FIT_KL_LIMIT = 0.05  # nats: above this expected divergence of the fitted Gaussian (d^2 / 4n), try the curvature
MAX_GROWTH = 8  # at most this many times the first pass's draws when buying a smaller se


def gaussian_reference(target, X_fit, rng, max_khat: float = 0.7, curvature: bool = True):
    """The Gaussian reference for a bridge or path half: fitted to the draws ``X_fit (n, dim)``, or, where the
    draws are few for the dimension, the Gaussian at their mean with the log posterior's curvature
    (:func:`pmz.model.reference.curvature_reference`) if it matches the posterior better.

    A Gaussian whose covariance is estimated from n draws in d dimensions is about ``d^2 / 4n`` nats (Kullback-
    Leibler) from the one it estimates. Where that exceeds :data:`FIT_KL_LIMIT`, both candidates draw
    :data:`N_CHOICE` exact points and the one whose importance weights ``p~ / q`` have the larger Kish ESS wins,
    provided their Pareto k-hat is at most ``max_khat`` (a curvature that is too sharp for the posterior's tails
    gives few, huge weights). The choice uses its own draws (a stream spawned from ``rng``), none of the bridge's.
    On a 100-D Gaussian posterior with condition number 1e4 the curvature reference is exact.
    ``curvature=False``: the fitted Gaussian alone (a spent ``max_time``: the choice costs 2 d gradients and
    2 :data:`N_CHOICE` evaluations, seconds in a thousand dimensions).
    """
    q = fit_reference(X_fit, "gaussian")
    n, dim = X_fit.shape
    if not curvature or dim * dim / (4.0 * n) <= FIT_KL_LIMIT:
        return q
    curved = curvature_reference(target, q.mean, q.cov)
    if curved is None:
        return q
    scores = []
    for candidate, stream in zip((q, curved), rng.spawn(2)):
        log_w, _ = importance_draws(target, candidate, stream, N_CHOICE, once=True)
        log_w = np.where(np.isfinite(log_w), log_w, -np.inf)
        scores.append((kish_ess(log_w) / N_CHOICE, pareto_khat(log_w)))
    (ess_fit, _), (ess_curved, khat_curved) = scores
    return curved if ess_curved > ess_fit and khat_curved <= max_khat else q


def _bridge_half(target, draws: PosteriorDraws, fit_chains, bridge_chains, rng, n_bootstrap, check, curvature):
    """Bridge sampling with q fitted to ``fit_chains`` and the draws of ``bridge_chains``; estimate and k-hat.
    ``check``: test that the draws are this model's posterior (a user's draws; pmz's own chains need no test);
    ``curvature``: whether q may be the curvature reference (:func:`gaussian_reference`)."""
    X_fit, _ = draws.flat(fit_chains)
    X_bridge, chain = draws.flat(bridge_chains)
    q = gaussian_reference(target, X_fit, rng, curvature=curvature)
    record = run_bridge(target, X_bridge, chain, rng, reference=q, split=False, check=check)
    est = bar(record.forward, record.reverse, rng=rng, n_bootstrap=n_bootstrap, n_eff_r=record.n_eff_reverse)
    khat = pareto_khat(record.forward.log_weights)
    est = replace(est, diagnostics=replace(est.diagnostics, pareto_khat=khat))
    return assess(est, record), record  # verdict and honest se (bootstrap floor, overlap, ...)


@dataclass(frozen=True)
class BridgePair:
    """The two cross-fitted halves: A (q fitted to the even chains) and B (to the odd ones), with their records."""

    a: Named
    b: Named
    records: tuple

    @property
    def halves(self) -> tuple:
        return (self.a, self.b)

    @property
    def mean_log_z(self) -> float:
        return 0.5 * (self.a.estimate.log_z + self.b.estimate.log_z)


def bridge_pair(target, draws, rng, n_bootstrap, check=False, curvature=True) -> BridgePair:
    """Both cross-fitted halves (module docstring), each from its own stream spawned from ``rng``."""
    chains = np.arange(draws.n_chains)
    even, odd = chains[::2], chains[1::2]
    rng_a, rng_b = rng.spawn(2)
    est_a, rec_a = _bridge_half(target, draws, even, odd, rng_a, n_bootstrap, check, curvature)
    est_b, rec_b = _bridge_half(target, draws, odd, even, rng_b, n_bootstrap, check, curvature)
    return BridgePair(Named("bridge_a", est_a), Named("bridge_b", est_b), (rec_a, rec_b))


def bridge_ok(est, options) -> tuple[bool, str]:
    """Whether a half passes: a finite estimate, k-hat at most ``max_khat``, overlap at least ``min_overlap``."""
    k, overlap = est.diagnostics.pareto_khat, est.diagnostics.overlap
    if not np.isfinite(est.log_z) or not np.isfinite(est.log_z_se):
        return False, "the bridge estimate is not finite"
    if k > options.max_khat:
        return False, f"Pareto k-hat {k:.2f} > {options.max_khat} (the Gaussian reference's tails are too light)"
    if overlap < options.min_overlap:
        return False, f"overlap {overlap:.3f} < {options.min_overlap} between the reference and the posterior"
    return True, ""


def pair_se(ests) -> float:
    """se of the mean of the two cross-fitted bridge halves: ``(se_a + se_b) / 2``.

    The halves are not independent: each fits q on one half of the chains and bridges with the other, so both
    carry the same second-order term (the product of the two halves' fitting errors, e.g. ``(m_A - mu)' Sigma^-1
    (m_B - mu)`` for the means). Their errors correlated by 0.4-0.65 on conjugate benchmark models, where
    ``sqrt(se_a^2 + se_b^2) / 2`` covered the truth in 82-88% of 40 runs. The bound ``rho = 1`` of
    ``Var = (se_a^2 + se_b^2 + 2 rho se_a se_b) / 4`` is used instead.
    """
    se = [e.log_z_se for e in ests]
    return float(np.mean(se))


def draws_wanted(se, n_draws, first_draws, options) -> int:
    """Draws per chain worth having: enough for ``target_se`` (se ~ 1 / sqrt(draws), with a margin of 1.2), at
    most :data:`MAX_GROWTH` times the first pass. A Bayes factor needs an se of a few hundredths of a nat; more
    precision than ``target_se`` is not bought by default (``target_se=`` asks for it)."""
    for_target = 1.2 * n_draws * (se / options.target_se) ** 2
    wanted = max(for_target, n_draws)
    return int(np.ceil(min(wanted, MAX_GROWTH * first_draws)))


@dataclass(frozen=True)
class BridgeFindings:
    """What the bridge route found, for itself and for the path route it may hand over to.

    Attributes
    ----------
    pair : BridgePair
        The halves on the final draws.
    draws : PosteriorDraws
        The draws at the end (more than the first pass where the se asked for them).
    growth : float
        Draws per chain at the end over those of the first pass.
    unreliable : str
        Why an answer from these draws cannot be trusted ("" when it can).
    failed : str
        The first half's failed check ("" when both pass).
    """

    pair: BridgePair
    draws: PosteriorDraws
    growth: float
    unreliable: str
    failed: str


def _draw_seconds(draws) -> float | None:
    """Seconds the chains spent on their draws after the warm-up (the warm-up's share taken out by iterations), or
    None for draws given as ``posterior=`` (their cost is not pmz's)."""
    if not draws.seconds:
        return None
    warm_up = getattr(draws.info, "n_warmup_done", 0) or 0
    return draws.seconds * draws.n_draws / (warm_up + draws.n_draws)


class BridgeRoute:
    """Cross-fitted bridge sampling (module docstring)."""

    name = "bridge"

    def applies(self, context) -> str:
        if context.target is None:
            return "discrete free variables that cannot be summed out"
        return ""

    def run(self, context) -> Outcome:
        findings = bridge_findings(context)
        context.bridge = findings
        base = dict(estimates=findings.pair.halves, draws=findings.draws, rhat=findings.draws.rhat,
                    growth=findings.growth)
        a, b = findings.pair.halves
        answer = Named("bridge", replace(a.estimate, log_z=findings.pair.mean_log_z,
                                         log_z_se=pair_se([a.estimate, b.estimate])))
        common = dict(answer=answer, check=(a, b), counted=(a, b), result_record=findings.pair.records[0],
                      sampling_seconds=_draw_seconds(findings.draws), **base)
        if not findings.failed:
            return Outcome(reason="the Gaussian reference overlaps the posterior well",
                           unreliable=findings.unreliable, **common)
        reason = f"bridge sampling alone is not enough: {findings.failed}"
        if context.clock.left() <= 0:
            spent = f"max_time was spent before a path from the reference could run ({findings.failed})"
            return Outcome(reason=reason, unreliable=findings.unreliable or spent, **common)
        return Outcome(reason=reason)


def bridge_findings(context) -> BridgeFindings:
    """The halves on the chains' draws, more draws while the se asks for them (pmz's own chains), and what makes
    the answer untrustworthy."""
    chains, options, clock, streams = context.chains, context.options, context.clock, context.streams
    draws, target = chains.draws, context.target
    out_of_time = clock.left() <= 0
    unreliable = _time_spent(draws, options, out_of_time)
    pair = bridge_pair(target, draws, streams.bridge, options.n_bootstrap, check=not chains.own,
                       curvature=not out_of_time)  # no choice of reference once the time is spent
    clock.mark("bridge")
    first_draws = draws.n_draws
    if chains.own:
        draws, pair = _grow(context, draws, pair, first_draws)
        if divergent(draws) and not unreliable:
            unreliable = f"{draws.divergences} divergent transitions in the posterior draws (they may miss a region)"
    elif not unreliable:
        unreliable = _given_draws_unreliable(context, draws, pair)
    verdicts = [bridge_ok(half.estimate, options) for half in pair.halves]
    failed = next((why for ok, why in verdicts if not ok), "")
    return BridgeFindings(pair, draws, draws.n_draws / first_draws, unreliable, failed)


def _time_spent(draws, options, out_of_time) -> str:
    """Why the draws may not have converged for lack of time ("" when time was not short)."""
    if draws.info.warmup_cut:
        return (f"max_time was spent during the warm-up ({draws.info.n_warmup_done} of {draws.info.n_warmup} "
                "iterations): the chains may not have converged")
    if not draws.rhat <= options.max_rhat and out_of_time:
        return f"max_time was spent before the chains agreed (split R-hat {draws.rhat:.3g})"
    return ""


def _grow(context, draws, pair, first_draws):
    """More draws of pmz's own chains while the se is above ``target_se`` (or, where a half fails its checks, as
    many per chain as warm-up iterations, for a better fitted reference), within the time left."""
    options, clock, streams = context.options, context.clock, context.streams
    while clock.left() > draws.seconds * first_draws / draws.n_draws:
        passed = all(bridge_ok(half.estimate, options)[0] for half in pair.halves)
        if passed:  # precision: draws until the se reaches target_se (draws_wanted)
            wanted = draws_wanted(pair_se([h.estimate for h in pair.halves]), draws.n_draws, first_draws, options)
        else:  # a reference fitted to more draws first (its error falls as d^2 / 4n), then the path if need be
            wanted = max(options.n_warmup, draws.n_draws)
        if wanted < 2 * draws.n_draws:
            break
        draws = context.chain_groups.more(draws, streams.more, wanted - draws.n_draws,
                                          deadline=clock.sampling_deadline, min_draws=1)
        pair = bridge_pair(context.target, draws, streams.bridge, options.n_bootstrap)
        clock.mark(f"more draws ({draws.n_draws} per chain{'' if passed else ', for the reference'}) and bridge")
    return draws, pair


def _given_draws_unreliable(context, draws, pair) -> str:
    """The verdict on the user's draws (:func:`pmz.runners.draw_trust.given_draws_trust`): the Stein check of
    either half (the first that fails), the sampler's divergences, then (only where those pass) a mode the draws
    miss."""
    checks = [record.reverse.notes.draws.check for record in pair.records]
    check = next((c for c in checks if c is not None and c.mismatch), checks[0])
    trust = given_draws_trust(check, draws.divergences, draws.n_chains * draws.n_draws, "posterior")
    why = trust_reason(trust, "posterior")
    if why:
        return why
    missed = missed_mode(context.target, context.prior, draws, context.streams.search, pair.mean_log_z)
    context.clock.mark("search for modes the draws miss")
    return missed
