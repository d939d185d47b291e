"""``method="auto"``: the routes to an estimate (:mod:`pmz.methods.auto`).

Cross-fitted bridge sampling from a Gaussian fitted to the chains; a geometric path from that Gaussian where the
overlap is poor; importance sampling or SMC from a mixture over the modes the chains found (and the prior) where
they sit in separate modes; SMC from the prior where the chains cannot be trusted; the exact sum where every
free variable is discrete and their joint values few.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..estimate_diagnostics import Diagnostics
from ..estimators.bar import bar
from ..estimators.jarzynski import jarzynski
from ..families import GeometricPath
from ..model.discrete_sum import WINDOW_TOLERANCE
from ..model.reference import curvature_reference
from ..records import EvidenceEstimate, WorkRecord
from ..reliability import MIN_ESS_FRACTION, assess
from ..runners.bridge_sampling import fit_reference, run_bridge
from ..runners.modes import mode_reference
from ..runners.posterior_hmc import PosteriorDraws
from ..runners.starts import evenly_spaced
from ..sample_diagnostics import pareto_khat
from ..weights import ess as kish_ess
from ..weights import systematic_resample
from .auto_chains import FIRST_DRAWS_MAX

N_IMPORTANCE = 1 << 16  # the modes route's importance draws: about the gradient evaluations of the chains' warm-up
N_PILOT = 1 << 12
N_CHOICE = 1 << 10  # exact draws of each candidate reference when choosing between them
FIT_KL_LIMIT = 0.05  # nats: above this expected divergence of the fitted Gaussian (d^2 / 4n), try the curvature

__all__ = [
    "AutoRecord",
    "bridge_ok",
    "bridge_pair",
    "defensive_prior",
    "density_evidence",
    "equally_weighted_runs",
    "gaussian_reference",
    "importance_from_reference",
    "modes_route",
    "pair_se",
    "path_route",
    "sum_route",
    "tempered_route",
]


@dataclass
class AutoRecord:
    """What the auto route ran: the route, why, its sub-records and sub-estimates, and the posterior draws.

    Attributes
    ----------
    route : str
        ``"sum"``, ``"latent"``, ``"importance"``, ``"bridge"``, ``"path"``, ``"modes"`` or ``"tempered"``.
    reason : str
        One line: why this route.
    estimates : dict name -> EvidenceEstimate
        Every estimate computed on the way (the two bridge halves, the path BAR, the SMC estimate).
    records : dict name -> record
        Their records (BidirectionalRecord, SMCRecord).
    primary : str
        The record that fills the result's work / smc groups.
    draws : PosteriorDraws or None
        Equally weighted posterior draws (chain, draw, dim); None on the tempered route.
    timeline : list of (label, seconds)
    smc_posterior : ndarray (n_runs, n_particles, dim) or None
        Modes and tempered routes: each SMC run's final particles resampled to equal weights (one chain per run).
    modes : ModeSummary or None
        Modes route: the clusters of chains, each mode's mass and location (:mod:`pmz.runners.modes`).
    ordered_log_mass : dict name -> float
        ``-log K!`` per variable under an ordered transform with exchangeable entries
        (:func:`pmz.model.prior_mass.ordered_exchangeable_log_mass`): the log mass of its density as written.
    dropped_chains : int
        Chains dropped (or restarted from the others' states) because they sat where the posterior mass is
        negligible.
    rhat : float or None
        Largest split R-hat of the posterior draws.
    growth : float or None
        Draws per chain at the end over those of the first pass.
    divergences, n_posterior_draws : int or None
        Tempered route after untrusted chains: the chains' divergent transitions and draws.
    unreliable : str
        Why the route's answer cannot be trusted ("" when it can): max_time spent before the chains agreed,
        divergences, draws given as ``posterior=`` that are not this model's posterior.
    """

    route: str
    reason: str
    estimates: dict = field(default_factory=dict)
    records: dict = field(default_factory=dict)
    primary: str = ""
    draws: PosteriorDraws | None = None
    timeline: list = field(default_factory=list)
    smc_posterior: np.ndarray | None = None
    rhat: float | None = None
    growth: float | None = None
    divergences: int | None = None
    n_posterior_draws: int | None = None
    unreliable: str = ""
    modes: object = None
    dropped_chains: int = 0
    ordered_log_mass: dict = field(default_factory=dict)

    @property
    def posterior_x(self):
        """Equally weighted posterior draws (chain, draw, dim) for the result's posterior group, or None."""
        return self.draws.x if self.draws is not None else self.smc_posterior

    @property
    def result_record(self):
        return self.records.get(self.primary)

    @property
    def final_x(self):
        return None



def gaussian_reference(compiled, X_fit, rng, max_khat: float = 0.7, curvature: bool = True):
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
    curved = curvature_reference(compiled, q.mean, q.cov)
    if curved is None:
        return q
    scores = []
    for candidate, stream in zip((q, curved), rng.spawn(2)):
        log_w, _ = _importance_draws(compiled, candidate, stream, N_CHOICE, once=True)
        log_w = np.where(np.isfinite(log_w), log_w, -np.inf)
        scores.append((kish_ess(log_w) / N_CHOICE, pareto_khat(log_w)))
    (ess_fit, _), (ess_curved, khat_curved) = scores
    return curved if ess_curved > ess_fit and khat_curved <= max_khat else q


def _bridge_half(compiled, draws: PosteriorDraws, fit_chains, bridge_chains, rng, n_bootstrap, check=False,
                 curvature=True):
    """Bridge sampling with q fitted to ``fit_chains`` and the draws of ``bridge_chains``; estimate and k-hat.
    ``check``: test that the draws are this model's posterior (a user's draws; pmz's own chains need no test);
    ``curvature``: whether q may be the curvature reference (:func:`gaussian_reference`)."""
    X_fit, _ = draws.flat(fit_chains)
    X_bridge, chain = draws.flat(bridge_chains)
    q = gaussian_reference(compiled, X_fit, rng, curvature=curvature)
    record = run_bridge(compiled, X_bridge, chain, rng, reference=q, split=False, check=check)
    est = bar(record.forward, record.reverse, rng=rng, n_bootstrap=n_bootstrap, n_eff_r=record.n_eff_reverse)
    khat = pareto_khat(record.forward.log_weights)
    est = replace(est, diagnostics=replace(est.diagnostics, pareto_khat=khat))
    return assess(est, record), record  # verdict and honest se (bootstrap floor, overlap, ...)


def bridge_pair(compiled, draws, rng, n_bootstrap, check=False, curvature=True):
    chains = np.arange(draws.n_chains)
    a, b = chains[::2], chains[1::2]
    rng_a, rng_b = rng.spawn(2)
    est_a, rec_a = _bridge_half(compiled, draws, a, b, rng_a, n_bootstrap, check, curvature)
    est_b, rec_b = _bridge_half(compiled, draws, b, a, rng_b, n_bootstrap, check, curvature)
    return {"bridge_a": est_a, "bridge_b": est_b}, {"bridge_a": rec_a, "bridge_b": rec_b}


def bridge_ok(est, options) -> tuple[bool, str]:
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


N_PATHS_FIRST = 64  # paths each way in each half of the path route's first batch (and its pilot)
N_PATHS_MAX = 512  # at most this many each way in each half


class _PathHalf:
    """One cross-fitted half of the path route: a Gaussian q fitted to ``fit_draws`` (:func:`gaussian_reference`),
    the geometric path ``q^(1-b) p~^b`` with an adaptive schedule tuned on a pilot of :data:`N_PATHS_FIRST` paths,
    and batches of forward paths from exact q draws and reverse paths started at ``start_draws`` (posterior draws q
    was not fitted to; each batch at draws no earlier batch started from, spread evenly over the chains), pooled
    (:func:`pmz.runners.pooling.merge_work`); BAR over their work."""

    def __init__(self, compiled, fit_draws, start_draws, rng, progressbar, kernel, chunks=None):
        from .options import ScheduleOptions
        from .schedule import setup_schedule

        self.compiled, self.kernel, self.start_draws, self.progressbar = compiled, kernel, start_draws, progressbar
        self.chunks = chunks
        self.family = GeometricPath(compiled, gaussian_reference(compiled, fit_draws, rng))
        path_options = ScheduleOptions(schedule="adaptive", n_temps=64, cess_target=0.95, n_pilot=N_PATHS_FIRST,
                                       n_tune_temps=20)
        tune_rng, self.run_rng, self.boot_rng = rng.spawn(3)
        self.schedule, self.params, self.tuning, _ = setup_schedule(self.family, kernel, path_options, tune_rng,
                                                                    progressbar)
        self.used = np.zeros(start_draws.shape[0], dtype=bool)
        self.record = None

    @property
    def n_paths(self) -> int:
        return 0 if self.record is None else self.record.forward.log_weights.size

    def run(self, n_paths: int):
        """``n_paths`` more paths each way, pooled with the earlier ones."""
        from ..runners.pooling import merge_work
        from .annealing import anneal_both_ways

        free = np.flatnonzero(~self.used)
        if free.size < n_paths:  # every draw has started a path: start again from all of them
            self.used[:] = False
            free = np.arange(self.used.size)
        starts = free[evenly_spaced(free.size, n_paths)]
        self.used[starts] = True
        batch = anneal_both_ways(
            self.family,
            self.kernel,
            self.schedule,
            self.params,
            self.tuning,
            target=self.compiled,
            n_forward=n_paths,
            n_reverse=n_paths,
            reverse_start=self.start_draws[starts],
            rng=self.run_rng.spawn(1)[0],
            n_steps_per_temp=2,
            keep_particles=False,
            progressbar=self.progressbar,
            chunks=self.chunks,
        )
        if self.record is not None:
            batch = replace(batch, forward=merge_work([self.record.forward, batch.forward]),
                            reverse=merge_work([self.record.reverse, batch.reverse]))
        self.record = replace(batch, reverse_start="posterior")

    def estimate(self, n_bootstrap):
        est = bar(self.record.forward, self.record.reverse, rng=self.boot_rng.spawn(1)[0], n_bootstrap=n_bootstrap)
        return assess(est, self.record)


def path_route(compiled, draws, options, rng, progressbar, kernel, deadline=None, chunks=None):
    """Geometric paths from Gaussians fitted to the draws, cross-fitted like the bridge (:func:`bridge_pair`).

    Half A: q fitted to the even chains, reverse paths started at the odd chains' draws; half B the other way
    round (:class:`_PathHalf`). The estimate is the halves' mean with ``se = sqrt(se_a^2 + se_b^2) / 2``: the
    halves share the chains (each fits q on one half and starts its reverse paths at the other), but the paths
    correct most of q's fitting error, and the halves' errors were not positively correlated (-0.5 over 7 seeds of
    a 100-D Gaussian posterior), unlike the bridge halves' (:func:`pair_se`). Each half runs
    :data:`N_PATHS_FIRST` paths each way, then doubles them while the se is above ``options.target_se`` (at most
    :data:`N_PATHS_MAX`, and not past ``deadline``, a ``time.perf_counter()`` value).

    A reverse path must start at posterior draws that q was not fitted to: a Gaussian fitted to n draws in d
    dimensions has a higher density at those draws than at fresh ones (by about d^2 / 4n nats), which made
    ``1/Z = E_p[q/p~]`` too large. With one q fitted to all draws and the reverse paths started at the same
    draws, a 100-D Gaussian posterior came out 0.09-0.2 nats low with se 0.025 (3.5-7.7 se, reported reliable).

    ``chunks``: the call's chunk runner (the paths' random numbers do not depend on it).

    Returns the pooled estimate, the two halves ``{"path_a", "path_b"}`` and their records.
    """
    import time

    X_a, _ = draws.flat(np.arange(0, draws.n_chains, 2))
    X_b, _ = draws.flat(np.arange(1, draws.n_chains, 2))
    rng_a, rng_b = rng.spawn(2)
    halves = [_PathHalf(compiled, X_a, X_b, rng_a, progressbar, kernel, chunks),
              _PathHalf(compiled, X_b, X_a, rng_b, progressbar, kernel, chunks)]
    n_paths = N_PATHS_FIRST
    while True:
        for half in halves:
            half.run(n_paths - half.n_paths)
        est_a, est_b = (half.estimate(options.n_bootstrap) for half in halves)
        se = float(np.hypot(est_a.log_z_se, est_b.log_z_se) / 2)
        out_of_time = deadline is not None and time.perf_counter() > deadline
        if se <= options.target_se or 2 * n_paths > N_PATHS_MAX or out_of_time:
            break
        n_paths *= 2
    pooled = replace(
        est_a,
        log_z=0.5 * (est_a.log_z + est_b.log_z),
        log_z_se=se,
        log_z_draws=None,
        reliable=est_a.reliable and est_b.reliable,
        reliability_reason="; ".join(r for r in (est_a.reliability_reason, est_b.reliability_reason) if r),
    )
    return pooled, {"path_a": est_a, "path_b": est_b}, {"path": halves[0].record, "path_b": halves[1].record}


def _smc_runs(family, kernel, reference, options, run_rng, est_rng, progressbar, target, chunks=None, clock=None):
    """pmz's ``"smc"`` (its default particles, runs and adaptive tempering) along ``family`` from ``reference``:
    the record, its estimate (its runs on ``chunks``, the call's chunk runner, when given) and, where ``clock``'s
    ``max_time`` stopped the runs early (no run starts after it once two are done), why the result is
    unreliable."""
    from .options import SMCOptions
    from .smc import estimate_smc_method, run_smc_method

    smc_options = SMCOptions(keep_particles=options.keep_particles, reference=reference)
    until = None if clock is None else clock.wall_deadline()
    record = run_smc_method(family, kernel, smc_options, run_rng, progressbar, target, method="smc", chunks=chunks,
                            until=until)
    cut = ""
    if record.n_runs < smc_options.n_runs:
        cut = f"max_time was spent during SMC: {record.n_runs} of {smc_options.n_runs} runs (the se rests on them)"
    return record, estimate_smc_method("smc")(record, smc_options, est_rng), cut


def tempered_route(family, kernel, options, rng, progressbar, target, reason, clock, chunks=None):
    """SMC from the prior (step 7), its estimate corrected to the density as written (:func:`density_evidence`)."""
    record, est, cut = _smc_runs(family, kernel, "prior", options, rng, rng, progressbar, target, chunks, clock)
    est = assess(density_evidence(est, family, target, rng.spawn(1)[0]), record)
    clock.mark("tempered route (SMC from the prior)")
    return AutoRecord(
        route="tempered",
        reason=reason,
        estimates={"smc": est},
        records={"smc": record},
        primary="smc",
        smc_posterior=equally_weighted_runs(record, rng.spawn(1)[0]),
        unreliable=cut,
    )


def defensive_prior(target, prior):
    """``prior`` (:func:`pmz.methods.auto_chains.prior_reference`) as a normalised reference for the modes route's
    mixture, or None where it cannot serve: no prior, the discrete variables were summed out (``target`` is not the
    prior's model), or a prior density may not integrate to one for a reason pmz cannot correct
    (``pmz.model.prior_mass.suspect_variables`` other than ordered exchangeable ones, whose mass ``1/K!`` is
    known)."""
    from ..model.mixture_reference import RenormalisedReference
    from ..model.prior_mass import ordered_exchangeable_log_mass, suspect_variables

    if prior is None or prior.compiled is not target:
        return None
    known = ordered_exchangeable_log_mass(target.model)
    if set(suspect_variables(target.model)) - set(known):
        return None
    return RenormalisedReference(prior, sum(known.values()), name="prior")


def modes_route(target, draws, kernel, options, rng, progressbar, reason, clock, prior=None, chunks=None):
    """From the mixture ``q`` over the chains' modes and the prior (step 6): importance sampling from ``q`` where
    its weights are well behaved (:func:`importance_from_reference`), else SMC with adaptive tempering along
    ``q^(1-b) p~^b``."""
    mass_rng, run_rng, est_rng, post_rng, is_rng = rng.spawn(5)
    q, modes = mode_reference(target, draws.x, mass_rng, defensive=defensive_prior(target, prior))
    clock.mark(f"mixture reference over {modes.n_modes} mode(s)")
    chains = {"rhat": draws.rhat, "divergences": draws.divergences,
              "n_posterior_draws": draws.n_chains * draws.n_draws, "modes": modes}
    estimates, records, posterior, why_not = importance_from_reference(target, q, is_rng, options.max_khat)
    if estimates:
        pooled = estimates["is_modes"].diagnostics
        clock.mark(f"importance sampling from the mixture reference ({pooled.n_paths} draws)")
        return AutoRecord(
            route="modes",
            reason=(f"{reason}; importance sampling from the mixture reference (ESS {pooled.ess_fraction:.0%} of "
                    f"{pooled.n_paths} draws, Pareto k-hat {pooled.pareto_khat:.2f})"),
            estimates=estimates,
            records=records,
            primary="is_modes",
            smc_posterior=posterior,
            **chains,
        )
    record, est, cut = _smc_runs(GeometricPath(target, q), kernel, q, options, run_rng, est_rng, progressbar, target,
                                 chunks, clock)
    est = assess(est, record)
    clock.mark("modes route (SMC from the mixture reference)")
    return AutoRecord(
        route="modes",
        reason=f"{reason}; SMC from the mixture reference ({why_not})",
        estimates={"smc_modes": est},
        records={"smc_modes": record},
        primary="smc_modes",
        smc_posterior=equally_weighted_runs(record, post_rng),
        unreliable=cut,
        **chains,
    )


def importance_from_reference(target, q, rng, max_khat, *, n_draws: int = N_IMPORTANCE, n_pilot: int = N_PILOT):
    """Importance sampling from a normalised reference ``q``: ``Z = E_q[p~(x) / q(x)]`` from two independent halves
    of ``n_draws`` exact draws of ``q`` (fewer where ``dim`` is large: at most 2^24 stored numbers), each with its
    delta-method se, and their pool.

    It answers only where its error bar can be trusted: a pilot of ``n_pilot`` draws, then the pool, must have a
    Kish ESS of at least ``MIN_ESS_FRACTION`` of the draws (:data:`pmz.reliability.MIN_ESS_FRACTION`) and a Pareto
    k-hat of the largest weights at most ``max_khat`` (Vehtari et al., PSIS: above it the weights' variance is not to
    be trusted). The defensive prior component of the modes route's mixture bounds the weights by the likelihood.

    Returns ``(estimates, records, posterior, why_not)``: estimates ``is_modes`` (the pool), ``is_a``, ``is_b``,
    their forward records (one step from q to the posterior), four chains of equally weighted posterior draws
    (systematic resampling within each quarter of the draws), and ``why_not`` (empty dicts and a reason when the
    weights fail the checks)."""
    pilot, _ = _importance_draws(target, q, rng, n_pilot)
    why_not = _weights_fail(pilot, max_khat, "a pilot of")
    if why_not:
        return {}, {}, None, why_not
    n = 2 * (min(n_draws, (1 << 24) // max(target.dim, 1)) // 2)
    log_w, X = _importance_draws(target, q, rng, n)
    why_not = _weights_fail(log_w, max_khat, "all")
    if why_not:
        return {}, {}, None, why_not
    estimates, records = {}, {}
    for name, part in (("is_modes", log_w), ("is_a", log_w[: n // 2]), ("is_b", log_w[n // 2 :])):
        estimates[name], records[name] = _importance_estimate(part)
    quarters = np.split(np.arange(n - n % 4), 4)
    size = min(1000, n // 4)
    posterior = np.stack([X[i[systematic_resample(rng, log_w[i], size)]] for i in quarters])
    return estimates, records, posterior, ""


def _importance_draws(target, q, rng, n, once: bool = False):
    """``n`` exact draws of ``q`` and their log importance weights ``log p~ - log q`` (NaN read as -inf).
    ``once``: a small one-off batch, evaluated through the already compiled gradient function
    (:meth:`pmz.model.pymc.CompiledModel.log_densities_once`) rather than compiling the value function."""
    X = q.sample(rng, n)
    lp, ll = target.log_densities_once(X) if once else target.log_densities(X)
    log_w = np.asarray(lp + ll, dtype=float) - q.log_density(X)
    return np.where(np.isnan(log_w), -np.inf, log_w), X


def _weights_fail(log_w, max_khat, what) -> str:
    """Why these importance weights cannot carry an estimate ("" when they can)."""
    if not np.isfinite(log_w).any():
        return f"importance sampling from it: no draw with positive weight among {what} {log_w.size} draws"
    fraction = kish_ess(log_w) / log_w.size
    khat = pareto_khat(log_w)
    if fraction < MIN_ESS_FRACTION:
        return f"importance sampling from it: ESS {fraction:.1%} of {what} {log_w.size} draws < {MIN_ESS_FRACTION:.0%}"
    if not khat <= max_khat:
        return f"importance sampling from it: Pareto k-hat {khat:.2f} > {max_khat} on {what} {log_w.size} draws"
    return ""


def _importance_estimate(log_w):
    """Jarzynski's estimator on one-step forward weights (plain importance sampling), with its k-hat, assessed."""
    record = WorkRecord(log_weights=log_w, schedule=np.array([0.0, 1.0]), direction="forward")
    est = jarzynski(record, n_bootstrap=0)
    est = replace(est, method="importance", diagnostics=replace(est.diagnostics, pareto_khat=pareto_khat(log_w)))
    return assess(est, record), record


def sum_route(enumeration, names, options, rng) -> AutoRecord:
    """Every free variable is discrete and their joint values few enough: ``log Z = logsumexp_k log p~(k)`` exactly
    (:class:`pmz.model.discrete_sum.DiscreteEnumeration`, se 0), and ``n_chains x n_draws`` exact posterior draws."""
    reason = (f"every free variable is discrete ({', '.join(names)}): their {enumeration.n_states} joint values "
              "are summed exactly")
    if enumeration.window is not None:
        lo, hi = enumeration.window
        reason += (f" over the window {lo}..{hi} of an unbounded support (the terms at both ends are more than "
                   f"{WINDOW_TOLERANCE:g} nats below the largest and falling; the rest is taken as negligible)")
    estimate = EvidenceEstimate(log_z=enumeration.log_z, log_z_se=0.0, method="sum", diagnostics=Diagnostics())
    return AutoRecord(
        route="sum",
        reason=reason,
        estimates={"sum": estimate},
        primary="sum",
        smc_posterior=enumeration.draw(rng, (options.n_chains, options.n_draws or FIRST_DRAWS_MAX)),
    )


def density_evidence(est, family, target, rng):
    """SMC from prior draws estimates the evidence under the draws' (normalised) prior; the bridge and path routes
    integrate the model's density as PyMC writes it. Where that prior density does not integrate to one (ordered
    transforms: 1/K!; LKJCholeskyCov on PyMC 5), add its measured log mass (:mod:`pmz.model.prior_mass`) so that
    every route answers the same question: ``log Z_density = log Z_prior_draws + sum_v log c_v``."""
    from .draw_checks import prior_normalisation_note

    prior_fields, _ = prior_normalisation_note(family, target, rng, "auto")
    if not prior_fields:
        return est
    noted = replace(est.diagnostics, **prior_fields)
    log_z = est.log_z + noted.prior_log_mass
    se = float(np.hypot(est.log_z_se, noted.prior_log_mass_se))
    return replace(est, log_z=log_z, log_z_se=se, diagnostics=noted)


def equally_weighted_runs(record, rng):
    """Each SMC run's final particles, systematically resampled by their weights within the run: (run, n, dim).

    None when the particles were not kept or the runs' particle counts differ (ARM)."""
    if record.final_x is None or record.final_x.shape[0] % record.n_runs:
        return None
    n = record.final_x.shape[0] // record.n_runs
    x = record.final_x.reshape(record.n_runs, n, -1)
    if record.final_log_weights is None:
        return x
    log_w = record.final_log_weights.reshape(record.n_runs, n)
    return np.stack([x[j, systematic_resample(rng, log_w[j])] for j in range(record.n_runs)])
