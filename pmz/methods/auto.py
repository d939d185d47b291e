"""``method="auto"``: the default evidence route, chosen by measurement (docs/methods.md, section 12).

In order (the pieces live in :mod:`pmz.methods.auto_chains` and :mod:`pmz.methods.auto_routes`):

0. **Discrete unknowns.** When every free variable is discrete and their joint values number at most
   :data:`pmz.model.discrete_sum.MAX_STATES` (a single unbounded one, such as a Poisson count, over the window
   where its terms are not negligible), log Z is their exact sum, with exact posterior draws: the **sum route**.
   Otherwise finite discrete free variables whose joint support has at most
   :data:`pmz.model.discrete_sum.MAX_CONFIGURATIONS` values are summed out exactly (:mod:`pmz.model.discrete_sum`,
   log Z unchanged) and every step below runs on the summed model; their posterior draws come from the exact
   conditionals. Larger or unbounded supports go to the tempered route (step 7).
0b. **Gaussian latents, or few coordinates.** Where the density is quadratic in the untransformed continuous
   variables given at most six hyperparameter coordinates, they are integrated out exactly and the hyperparameters
   by importance sampling: the **latent route**; a model of at most six coordinates is importance sampled from a
   Student-t at its peak: the **importance route** (:mod:`pmz.methods.auto_latent`; ``latent=False`` skips both).
   No chain runs.
1. **Posterior draws.** ``n_chains`` HMC chains moved together with cross-chain warm-up
   (:mod:`pmz.runners.posterior_hmc`), half of them started at exact prior draws and half at PyMC's initial
   point with jitter; or the user's own ``pm.sample`` result (``posterior=idata``).
2. **Check the chains.** Split R-hat above ``max_rhat`` means chains in different modes, stuck, or not mixed.
   Clusters of chains (:func:`pmz.runners.modes.cluster_chains`) whose estimated mass is negligible (below
   ``NEGLIGIBLE_MASS`` of the largest) are chains stuck where they started: they are dropped (restarted from the
   others' states if a second warm-up follows), and the reason says so. When the rest fall into clusters that
   each mix (within-cluster split R-hat at most ``max_rhat``), they sit in separate modes and the run goes
   straight to the modes route (step 6); otherwise a second warm-up from where the chains are, then the modes
   route if they still disagree. Divergent transitions (more than 1 in 10^4 draws and more than one: the draws
   miss part of the posterior) send the run to the tempered route (step 7).
3. **Bridge sampling, cross-fitted.** The chains are split in two halves A and B. A Gaussian reference q_A is fitted
   to A's draws in the unconstrained space and bridged (BAR with K = 1) with B's draws and as many exact draws of
   q_A; and the other way round. Their mean is the estimate and ``se = (se_A + se_B) / 2`` (each se: the larger
   of the asymptotic one, with the draws' effective size, and the bootstrap); the halves' errors are correlated
   (each uses both sets of chains), so the bound correlation 1 is used (:func:`pair_se`). Their difference is
   the check.
4. **A path where the overlap is poor.** If either half's Pareto k-hat of ``log p~(x) - log q(x)`` on q's draws
   exceeds ``max_khat`` or its overlap is below ``min_overlap``, run geometric paths ``q^(1-b) p~^b``,
   cross-fitted like the bridge: q fitted to one half of the chains, forward paths from exact q draws, reverse
   paths from the other half's draws, temperatures from an adaptive pilot, BAR over the work; and the other way
   round (:func:`pmz.methods.auto_routes.path_route`).
5. **Stop when the answer is good enough.** While the se is above ``target_se`` (0.03 nats by default: a Bayes
   factor needs a few hundredths), the chains draw more and the bridge is recomputed (the se falls as
   1/sqrt(draws)), as far as the time budget ``max_time`` allows; the path route doubles its paths likewise. A
   bridge that fails its checks on the first pass is recomputed with as many draws per chain as warm-up
   iterations before the path runs: a Gaussian fitted to n draws in d dimensions is about d^2 / 4n nats from the
   one it estimates, and the path's halves fit their references to the same draws.
6. **Modes route.** First a search for modes the chains missed: ``N_SEARCH`` exact prior draws climb the log
   density (:func:`pmz.runners.modes.climb`) and a new chain runs from every peak that lies in none of the
   chains' clusters. Each cluster then gets a Student-t component (7 degrees of freedom) fitted to its draws and a
   mass estimated by importance sampling from it (not the chains' proportions, which follow the starts); the
   mixture of the components (weights half the masses, half even) and of the prior (weight 0.2, so that a mode
   no chain found can still be reached) is the reference ``q``. Where its importance weights ``p~ / q`` are well
   behaved (Kish ESS at least 10% of the draws, Pareto k-hat at most ``max_khat``, on a pilot and on all draws),
   the estimate is importance sampling ``Z = E_q[p~ / q]`` from 2^16 exact draws of ``q``, two independent
   halves giving the check (:func:`pmz.methods.auto_routes.importance_from_reference`); otherwise a geometric
   path ``q^(1-b) p~^b`` to the posterior, run by resample-move SMC with adaptive tempering, independent runs
   giving the se. Both are unbiased for Z whatever the weights, and a reference this close needs few temperatures.
7. **Tempered route.** Resample-move SMC from the prior with adaptive tempering (pmz's ``"smc"``), independent
   runs giving the se.

The result says which route ran and why (``res.run_attrs["route"]``, ``["route_reason"]``), lists every
estimate computed on the way (``res.estimates``: the two bridge halves, the path and its halves, SMC), says how
many modes the modes route found and their masses (``n_modes``, ``mode_masses``), names the
two independent ones it compared (``res.diagnostics["independent_estimates"]``), and holds the posterior draws in
``posterior`` with the model's own names.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from ..estimate_diagnostics import AutoDiagnostics, SMCDiagnostics, WorkDiagnostics
from ..records import EvidenceEstimate
from ..execution.executors import local_runner
from ..runners.draws_check import mismatch_reason
from ..runners.starts import divergences_reason
from .chain_groups import ChainChunks, wall_until
from .auto_latent import latent_route
from .auto_chains import (
    N_SEARCH,
    NEGLIGIBLE_MASS,
    divergent,
    draws_from_posterior,
    finite_starts,
    first_pass_draws,
    missed_mode,
    prior_reference,
    search_modes,
    separate_modes,
    stuck_chains,
    untrusted_chains_reason,
)
from .auto_routes import (
    AutoRecord,
    bridge_ok,
    bridge_pair,
    modes_route,
    pair_se,
    path_route,
    sum_route,
    tempered_route,
)

__all__ = ["AutoRecord", "run_auto", "estimate_auto", "untrusted_chains_reason"]

_MAX_GROWTH = 8  # at most this many times the first pass's draws when buying a smaller se
_SAMPLING_SHARE = 0.85  # of max_time, for the posterior chains (the rest for the bridge and the estimates)
_SLOW_MIXING_RHAT = 1.2  # above max_rhat but below this after a second warm-up: run the chains longer
CHAIN_CHUNKS = 1  # groups of chains that warm up on their own, with an executor and no n_chunks (see run_auto)


class _Clock:
    """Seconds since the start, the deadline for ``max_time`` and a labelled timeline."""

    def __init__(self, max_time):
        self.t0 = time.perf_counter()
        self.deadline = None if max_time is None else self.t0 + float(max_time)
        # the chains stop a little earlier: the bridge and the estimates after them take time too
        self.sampling_deadline = None if max_time is None else self.t0 + _SAMPLING_SHARE * float(max_time)
        self.timeline = []

    def mark(self, label):
        self.timeline.append((label, round(time.perf_counter() - self.t0, 3)))

    def wall_deadline(self):
        """The ``max_time`` deadline as a wall-clock time (``time.time()``: the same on every worker), or None."""
        return wall_until(self.deadline)

    def left(self) -> float:
        """Seconds left to start more work (the chains' share of ``max_time``)."""
        return np.inf if self.sampling_deadline is None else self.sampling_deadline - time.perf_counter()


def _draws_wanted(se, n_draws, first_draws, options) -> int:
    """Draws per chain worth having: enough for ``target_se`` (se ~ 1 / sqrt(draws), with a margin of 1.2), at
    most ``_MAX_GROWTH`` times the first pass. A Bayes factor needs an se of a few hundredths of a nat; more
    precision than ``target_se`` is not bought by default (``target_se=`` asks for it)."""
    for_target = 1.2 * n_draws * (se / options.target_se) ** 2
    wanted = max(for_target, n_draws)
    return int(np.ceil(min(wanted, _MAX_GROWTH * first_draws)))


def _noted(record, clock, dropped, n_chains, target):
    """The record with the timeline, the known log mass of ordered exchangeable priors and, where chains were
    dropped as stuck, a note in the route's reason."""
    from ..model.prior_mass import ordered_exchangeable_log_mass

    record.timeline = clock.timeline
    record.ordered_log_mass = ordered_exchangeable_log_mass(target.model)
    record.dropped_chains = dropped
    if dropped:
        record.reason += (f"; {dropped} of {n_chains} chains were stuck where the posterior mass is negligible "
                          f"(below {NEGLIGIBLE_MASS:g} of the largest cluster's) and were dropped")
    return record


def run_auto(family, kernel, options, rng, progressbar, target, chunks=None) -> AutoRecord:
    """Run the auto route on a compiled PyMC model (see the module docstring).

    A model whose free variables are all discrete, with at most :data:`pmz.model.discrete_sum.MAX_STATES` joint
    values, is summed exactly (the sum route, :func:`pmz.methods.auto_routes.sum_route`). Otherwise discrete free
    variables whose joint support has at most
    :data:`pmz.model.discrete_sum.MAX_CONFIGURATIONS` values are summed out exactly
    (:mod:`pmz.model.discrete_sum`) and the continuous routes run on the summed model (log Z unchanged); the
    posterior draws then get their discrete values from the exact conditionals. Larger or unbounded discrete
    supports go to the tempered route.

    ``chunks`` (a :class:`~pmz.execution.executors.ChunkRunner`, with ``executor=`` or ``n_chunks``): the chains
    run in ``n_chunks`` groups that warm up on their own (:mod:`pmz.methods.chain_groups`), and the path and SMC
    routes split their paths and runs on the same runner. Without ``n_chunks`` the chains stay one group
    (:data:`CHAIN_CHUNKS`): groups of fewer chains adapt worse in many dimensions (a 400-D Gaussian posterior
    with two groups of 16 chains took the modes route, 233 s and flagged, where one group takes 9 s), so
    splitting them is the user's choice, worth it for models of few dimensions and much data (1.1-1.6x on two
    processes)."""
    from ..model.discrete_sum import MAX_CONFIGURATIONS, discrete_enumeration, discrete_sum

    if not target.layout.discrete_mask.any():
        return _run_continuous(family, kernel, options, rng, progressbar, target, target, chunks=chunks)
    names = [b.rv_name for b in target.layout.blocks if b.discrete]
    if target.layout.discrete_mask.all():
        clock = _Clock(options.max_time)
        enumeration = discrete_enumeration(target)
        if enumeration is not None:
            clock.mark(f"sum over {enumeration.n_states} joint values")
            record = sum_route(enumeration, names, options, rng.spawn(1)[0])
            if options.posterior is not None:
                record.reason += "; the draws given as posterior= are not needed (the posterior draws are exact)"
            return _noted(record, clock, 0, options.n_chains, target)
    summed = discrete_sum(target) if options.posterior is None else None
    if summed is None:
        why = ("draws given as posterior= with discrete variables" if options.posterior is not None else
               f"more than {MAX_CONFIGURATIONS} joint values or an unbounded support, too many to sum out")
        clock = _Clock(options.max_time)
        record = tempered_route(family, kernel, options, rng.spawn(6)[4], progressbar, target,
                                 f"discrete free variables {names} ({why})", clock, chunks)
        return _noted(record, clock, 0, options.n_chains, target)
    continuous_kernel = getattr(kernel, "continuous", kernel)
    record = _run_continuous(family, continuous_kernel, options, rng, progressbar, summed, target, kernel, chunks)
    record.reason += f"; discrete free variables {names} summed out exactly ({summed.n_configurations} values)"
    draw_rng = rng.spawn(1)[0]
    if record.draws is not None:
        record.draws = replace(record.draws, x=summed.with_discrete(record.draws.x, draw_rng))
    if record.smc_posterior is not None and record.route != "tempered":
        record.smc_posterior = summed.with_discrete(record.smc_posterior, draw_rng)
    return record


def _run_continuous(family, kernel, options, rng, progressbar, target, full_target, full_kernel=None,
                    chunks=None) -> AutoRecord:
    """The routes on a model with continuous free variables only (``target``: the model, or the model with its
    discrete variables summed out; ``full_target`` / ``full_kernel``: the model as written and its kernel, for
    the tempered route)."""
    from ..progress import progress_bar

    full_kernel = kernel if full_kernel is None else full_kernel
    chunks = local_runner(progressbar) if chunks is None else chunks
    chains = ChainChunks(chunks, target, chunks.count(options.n_chunks, options.n_chains // 2, CHAIN_CHUNKS))
    clock = _Clock(options.max_time)
    sample_rng, bridge_rng, more_rng, path_rng, smc_rng, stuck_rng, search_rng = rng.spawn(7)
    prior = prior_reference(full_target)
    with progress_bar(total=100, desc="auto: posterior draws", disable=not progressbar, percent=True) as bar_:
        shown = {}

        def progress(label, fraction):  # one line per change of phase or of percent (a log gets no repeats)
            n = int(100 * min(fraction, 1.0))
            if shown.get("label") == label and shown.get("n") == n:
                return
            shown.update(label=label, n=n)
            bar_.set_description_str(f"pmz auto: {label}", refresh=False)  # (set_description adds ": ")
            bar_.n = n
            bar_.refresh()

        if options.latent and options.posterior is None and target is full_target:
            record, why_not = latent_route(target, options, rng, clock, progress)  # spawns only if it applies
            if record is not None:
                clock.mark({"importance": "importance sampling from the posterior's peak",
                            "latent": "latent Gaussian integrated out" + (
                                "; importance sampling over the hyperparameters" if "is_a" in record.estimates
                                else ", exactly")}[record.route])
                return _noted(record, clock, 0, options.n_chains, target)
            if why_not:
                clock.mark(f"latent / importance route not taken: {why_not}")
        if options.posterior is not None:
            draws = draws_from_posterior(target, options.posterior)
        else:
            start_rng, sample_rng = sample_rng.spawn(2)
            draws = chains.sample(
                sample_rng,
                finite_starts(target, start_rng, options.n_chains, prior),
                n_draws=first_pass_draws(target.dim, options),
                n_warmup=options.n_warmup,
                progress=progress,
                deadline=clock.sampling_deadline,
            )
        clock.mark("posterior draws")
        n_modes, dropped = 0, 0
        if not draws.rhat <= options.max_rhat:
            stuck = stuck_chains(target, draws, stuck_rng)
            if stuck.any() and (~stuck).sum() >= 4:
                dropped, restart = int(stuck.sum()), draws.x[:, -1].copy()
                restart[stuck] = restart[~stuck][np.arange(dropped) % (~stuck).sum()]
                draws = draws.keep(~stuck)
                clock.mark(f"{dropped} chains stuck where the posterior mass is negligible dropped")
            n_modes = separate_modes(draws, options.max_rhat) if not draws.rhat <= options.max_rhat else 0
        if not draws.rhat <= options.max_rhat and not n_modes and options.posterior is None and (
            clock.left() > draws.seconds
        ):
            # not mixed yet: a second warm-up from where the chains are (stuck ones restarted from the others'
            # states), twice the draws
            first_rhat = draws.rhat
            draws = chains.sample(
                sample_rng,
                restart if dropped else draws.x[:, -1],
                n_draws=2 * first_pass_draws(target.dim, options),
                n_warmup=options.n_warmup,
                progress=progress,
                deadline=clock.sampling_deadline,
            )
            clock.mark(f"second warm-up and draws (split R-hat was {first_rhat:.3g})")
            if not draws.rhat <= options.max_rhat:
                n_modes = separate_modes(draws, options.max_rhat)
        if (options.max_rhat < draws.rhat <= _SLOW_MIXING_RHAT and not n_modes and options.posterior is None
                and clock.left() > 0):
            # mixing slowly rather than in separate modes: longer chains (the tempered route is no cure for this)
            draws = chains.more(draws, sample_rng, 3 * draws.n_draws, deadline=clock.sampling_deadline)
            clock.mark(f"longer chains (slow mixing, split R-hat {draws.rhat:.3g})")
    own_chains = options.posterior is None
    unreliable = ""
    if draws.info.get("warmup_cut"):
        unreliable = (f"max_time was spent during the warm-up ({draws.info['n_warmup_done']} of "
                      f"{draws.info['n_warmup']} iterations): the chains may not have converged")
    out_of_time = clock.left() <= 0  # then no further route runs: the bridge on these draws, flagged
    if own_chains and divergent(draws) and not out_of_time:
        reason = untrusted_chains_reason(draws, options.max_rhat, own_chains=True)
        record = tempered_route(family, full_kernel, options, smc_rng, progressbar, full_target, reason, clock,
                                chunks)
        record.rhat, record.divergences = draws.rhat, draws.divergences
        record.n_posterior_draws = draws.n_chains * draws.n_draws
        return _noted(record, clock, dropped, options.n_chains, target)
    if not draws.rhat <= options.max_rhat and out_of_time:
        unreliable = unreliable or f"max_time was spent before the chains agreed (split R-hat {draws.rhat:.3g})"
    elif not draws.rhat <= options.max_rhat:
        if n_modes:
            reason = (f"the chains sit in {n_modes} separate modes (split R-hat {draws.rhat:.3g} over all chains, "
                      f"at most {options.max_rhat} within each mode)")
        else:
            reason = untrusted_chains_reason(draws, options.max_rhat, own_chains=False)
        if own_chains:
            draws, n_new = search_modes(target, prior, draws, search_rng)
            clock.mark(f"search for missed modes from {N_SEARCH} prior draws ({n_new} new chains)")
            if n_new:
                reason += f"; a search from {N_SEARCH} prior draws found {n_new} more and ran a chain in each"
        record = modes_route(target, draws, kernel, options, smc_rng, progressbar, reason, clock, prior, chunks)
        return _noted(record, clock, dropped, options.n_chains, target)

    user_draws = options.posterior is not None
    estimates, records = bridge_pair(target, draws, bridge_rng, options.n_bootstrap, check=user_draws,
                                     curvature=not out_of_time)  # no choice of reference once the time is spent
    clock.mark("bridge")
    mismatch = [r.reverse.tuning.get("posterior_mismatch") for r in records.values()] if user_draws else []
    if any(mismatch) and not unreliable:
        unreliable = mismatch_reason(next(filter(None, mismatch)), "posterior")  # names the variable, and advises
    first_draws = draws.n_draws
    while options.posterior is None and clock.left() > draws.seconds * first_draws / draws.n_draws:
        passed = all(bridge_ok(e, options)[0] for e in estimates.values())
        if passed:  # precision: draws until the se reaches target_se (_draws_wanted)
            wanted = _draws_wanted(pair_se(estimates.values()), draws.n_draws, first_draws, options)
        else:  # a reference fitted to more draws first (its error falls as d^2 / 4n), then the path if need be
            wanted = max(options.n_warmup, draws.n_draws)
        if wanted < 2 * draws.n_draws:
            break
        draws = chains.more(draws, more_rng, wanted - draws.n_draws, deadline=clock.sampling_deadline, min_draws=1)
        estimates, records = bridge_pair(target, draws, bridge_rng, options.n_bootstrap)
        clock.mark(f"more draws ({draws.n_draws} per chain{'' if passed else ', for the reference'}) and bridge")

    if divergent(draws) and options.posterior is None and not unreliable:
        unreliable = f"{draws.divergences} divergent transitions in the posterior draws (they may miss a region)"
    elif options.posterior is not None and not unreliable:  # the user's sampler's divergences (pm.sample records)
        unreliable = divergences_reason(draws.divergences, draws.n_chains * draws.n_draws)
    if options.posterior is not None and not unreliable:  # the user's draws may sit in one of several modes
        unreliable = missed_mode(target, prior, draws, search_rng,
                                 0.5 * (estimates["bridge_a"].log_z + estimates["bridge_b"].log_z))
        clock.mark("search for modes the draws miss")
    verdicts = [bridge_ok(e, options) for e in estimates.values()]
    if all(ok for ok, _ in verdicts):
        route, reason, primary = "bridge", "the Gaussian reference overlaps the posterior well", "bridge_a"
    elif clock.left() <= 0:
        bad = next(why for ok, why in verdicts if not ok)
        route, reason, primary = "bridge", f"bridge sampling alone is not enough: {bad}", "bridge_a"
        unreliable = unreliable or f"max_time was spent before a path from the reference could run ({bad})"
    else:
        bad = next(why for ok, why in verdicts if not ok)
        path_est, halves, path_records = path_route(target, draws, options, path_rng, progressbar, kernel,
                                                    deadline=clock.deadline, chunks=chunks)
        estimates.update(path=path_est, **halves)
        records.update(path_records)
        route, reason, primary = "path", f"bridge sampling alone is not enough: {bad}", "path"
        clock.mark("path BAR from the fitted reference")
    record = AutoRecord(
        route=route,
        reason=reason,
        estimates=estimates,
        records=records,
        primary=primary,
        draws=draws,
        timeline=clock.timeline,
        rhat=draws.rhat,
        growth=draws.n_draws / first_draws,
        unreliable=unreliable,
    )
    return _noted(record, clock, dropped, options.n_chains, target)


def _prior_mass_fields(record, first) -> dict:
    """The prior-mass diagnostics of the result (empty when the prior as written integrates to one): the measured
    mass of the tempered route's prior draws, else the known ``-log K!`` of ordered exchangeable variables; with
    ``log_z_normalised_prior``, the evidence of the model whose prior is normalised (``log Z - sum log c``)."""
    d = first.diagnostics
    if d.prior_log_mass is not None:
        mass, se, names = d.prior_log_mass, d.prior_log_mass_se, d.prior_unnormalised
    elif record.ordered_log_mass:
        mass, se, names = float(sum(record.ordered_log_mass.values())), 0.0, ", ".join(record.ordered_log_mass)
    else:
        return {}
    return dict(prior_log_mass=mass, prior_log_mass_se=se, prior_unnormalised=names)


def _ordered_warning(fields, log_z) -> str:
    mass, names = fields["prior_log_mass"], fields["prior_unnormalised"]
    return (
        f"pmz: the prior of {names} as PyMC writes it does not integrate to one (log mass {mass:+.4f}; an ordered "
        f"transform on K exchangeable entries keeps 1/K! of the mass). log Z = {log_z:.4f} is the evidence of the "
        f"density as written; with the prior normalised it is {log_z - mass:.4f} (res.diagnostics["
        "'log_z_normalised_prior']). A Bayes factor between models with different numbers of ordered components "
        "(K against K') needs the normalised one: the difference of the densities' log Z is off by log(K!/K'!)."
    )


def estimate_auto(record: AutoRecord, options, rng) -> EvidenceEstimate:
    """The route's estimate with both estimates, the route and its reason in the diagnostics."""
    ests = record.estimates  # each already carries its own verdict and honest se (pmz.reliability)
    if record.route == "sum":
        first, second, names = ests["sum"], None, ["sum"]
        log_z, se = first.log_z, 0.0
    elif record.route == "bridge":
        a, b = ests["bridge_a"], ests["bridge_b"]
        log_z = 0.5 * (a.log_z + b.log_z)
        se = pair_se([a, b])
        first, second = a, b
        names = ["bridge_a", "bridge_b"]
    elif record.route == "path":
        first, second = ests["path_a"], ests["path_b"]
        log_z, se = ests["path"].log_z, ests["path"].log_z_se  # the halves' mean and its se
        names = ["path_a", "path_b"]
    elif record.primary in ("is_modes", "is_latent", "is_laplace"):  # importance sampling: the pool and halves
        first, second = ests["is_a"], ests["is_b"]
        log_z, se = ests[record.primary].log_z, ests[record.primary].log_z_se
        names = ["is_a", "is_b"]
    else:
        name = record.primary  # "smc_modes", "smc" or "latent" (exact)
        first = ests[name]
        log_z, se, second, names = first.log_z, first.log_z_se, None, [name]
    used = {"sum": ("sum",), "bridge": ("bridge_a", "bridge_b"), "path": ("path_a", "path_b"),
            "modes": ("is_modes", "is_a", "is_b") if record.primary == "is_modes" else ("smc_modes",),
            "tempered": ("smc",), "latent": (record.primary, "is_a", "is_b") if "is_a" in ests else ("latent",),
            "importance": (record.primary, "is_a", "is_b")}
    reasons = [f"{name}: {ests[name].reliability_reason}" for name in used[record.route] if not ests[name].reliable]
    if record.unreliable:
        reasons.append(record.unreliable)
    warnings, disagreement_z = [], None
    if second is not None:
        diff = abs(first.log_z - second.log_z)
        combined = float(np.hypot(first.log_z_se, second.log_z_se))
        disagreement_z = diff / combined
        if diff > 3 * combined:
            warnings.append(
                f"pmz: the two estimates disagree: {names[0]} {first.log_z:.3f} +/- {first.log_z_se:.3f} "
                f"vs {names[1]} {second.log_z:.3f} +/- {second.log_z_se:.3f} ({diff / combined:.1f} combined se); "
                "the reported se covers the difference."
            )
            se = max(se, 0.5 * diff)
    for est in ests.values():
        warnings += [w for w in est.warnings if w not in warnings]
    prior_fields = _prior_mass_fields(record, first)
    if prior_fields:
        warnings.append(_ordered_warning(prior_fields, log_z))
    draws = record.draws
    work = {name: est.diagnostics for name, est in ests.items() if isinstance(est.diagnostics, WorkDiagnostics)}
    smc = first.diagnostics if isinstance(first.diagnostics, SMCDiagnostics) else None  # the runs' spread, ...
    modes = record.modes
    diagnostics = AutoDiagnostics(
        route=record.route,
        route_reason=record.reason,
        estimates={name: (est.log_z, est.log_z_se) for name, est in ests.items()},
        independent_estimates=names,
        timeline=[f"{label}: {t:.2f} s" for label, t in record.timeline],
        rhat=record.rhat if draws is None else draws.rhat,
        growth=record.growth,
        divergences=record.divergences if draws is None else draws.divergences,
        n_posterior_draws=record.n_posterior_draws,
        n_chains=None if draws is None else draws.n_chains,
        n_draws=None if draws is None else draws.n_draws,
        acceptance=None if draws is None else draws.acceptance,
        disagreement_z=disagreement_z,
        n_modes=None if modes is None else modes.n_modes,
        **prior_fields,
        log_z_normalised_prior=float(log_z - prior_fields["prior_log_mass"]) if prior_fields else None,
        dropped_chains=record.dropped_chains or None,
        mode_masses=None if modes is None else np.asarray(modes.masses, dtype=float),
        mode_masses_se=None if modes is None else np.asarray(modes.masses_se, dtype=float),
        pareto_khat_by_estimate={name: d.pareto_khat for name, d in work.items() if d.pareto_khat is not None},
        overlap_by_estimate={name: d.overlap for name, d in work.items() if d.overlap is not None},
        n_eff_reverse_by_estimate={name: d.n_eff_reverse for name, d in work.items() if d.n_eff_reverse is not None},
        smc=smc,
        se_estimator=None if smc is None else smc.se_estimator,  # the route's estimate is SMC's
    )
    return EvidenceEstimate(
        log_z=float(log_z),
        log_z_se=float(se),
        method="auto",
        log_z_draws=first.log_z_draws if smc is not None else None,
        diagnostics=diagnostics,
        warnings=warnings,
        reliable=not reasons,
        reliability_reason="; ".join(reasons),
    )
