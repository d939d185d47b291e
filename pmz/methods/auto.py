"""``method="auto"``: the default evidence route, chosen by measurement (docs/methods.md, section 12).

In order:

1. **Posterior draws.** ``n_chains`` HMC chains moved together with cross-chain warm-up
   (:mod:`pmz.runners.posterior_hmc`), or the user's own ``pm.sample`` result (``posterior=idata``).
2. **Check the chains.** Split R-hat above ``max_rhat`` (chains in different modes or not mixed), divergent
   transitions (more than 1 in 10^4 draws and more than one: the draws miss part of the posterior), or a model
   with discrete free variables, sends the run to the tempered route (step 6).
3. **Bridge sampling, cross-fitted.** The chains are split in two halves A and B. A Gaussian reference q_A is fitted
   to A's draws in the unconstrained space and bridged (BAR with K = 1) with B's draws and as many exact draws of
   q_A; and the other way round. Their mean is the estimate and ``se = (se_A + se_B) / 2`` (each se: the larger
   of the asymptotic one, with the draws' effective size, and the bootstrap); the halves' errors are correlated
   (each uses both sets of chains), so the bound correlation 1 is used (:func:`_pair_se`). Their difference is
   the check.
4. **A path where the overlap is poor.** If either half's Pareto k-hat of ``log p~(x) - log q(x)`` on q's draws
   exceeds ``max_khat`` or its overlap is below ``min_overlap``, run a geometric path ``q^(1-b) p~^b`` from a
   reference fitted to all draws: forward paths from exact q draws, reverse paths from the posterior draws
   (independent of the forward run), temperatures from an adaptive pilot, and BAR over the work.
5. **Spend time where it pays.** While the se is above ``target_se``, and in any case until each chain has as
   many draws as warm-up iterations, the chains draw more and the bridge is recomputed (the se falls as
   1/sqrt(draws)), as far as the time budget ``max_time`` allows.
6. **Tempered route.** Resample-move SMC from the prior with adaptive tempering (pmz's ``"smc"``), independent
   runs giving the se.

The result says which route ran and why (``res.evidence.attrs["route"]``, ``["route_reason"]``), lists every
estimate computed on the way (``res.estimates``: the two bridge halves, the path and its halves, SMC), names the
two independent ones it compared (``res.evidence.attrs["independent_estimates"]``), and holds the posterior draws in
``posterior`` with the model's own names.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from ..estimators.bar import bar
from ..families import GeometricPath
from ..estimate_diagnostics import AutoDiagnostics, WorkDiagnostics
from ..records import EvidenceEstimate
from ..reliability import assess
from ..runners.bridge_sampling import fit_reference, run_bridge
from ..runners.starts import evenly_spaced, posterior_to_flat
from ..weights import systematic_resample
from ..sample_diagnostics import pareto_khat
from ..model.pymc import ModelSpecificationError
from ..runners.posterior_hmc import (
    PosteriorDraws,
    continue_sampling,
    dispersed_starts,
    max_split_rhat,
    sample_posterior,
)

__all__ = ["AutoRecord", "run_auto", "estimate_auto", "untrusted_chains_reason"]

_MAX_GROWTH = 8  # at most this many times the first pass's draws when buying a smaller se
_SLOW_MIXING_RHAT = 1.2  # above max_rhat but below this after a second warm-up: run the chains longer
_DIVERGENT_FRACTION = 1e-4  # more divergent transitions than this fraction of the draws (and > 1): tempered route


def _divergent(draws) -> bool:
    """Whether the chains' divergent transitions say the draws miss part of the posterior (a funnel's neck).

    On the centred eight schools, 19-58 divergences in 32000 draws (R-hat 1.03-1.04) came with path estimates
    2-3 se low; the other benchmark models had none. A single one is allowed (round-off in a long trajectory)."""
    return draws.divergences > max(1.0, _DIVERGENT_FRACTION * draws.n_chains * draws.n_draws)


def untrusted_chains_reason(draws, max_rhat: float, own_chains: bool = True) -> str:
    """Why the chains' draws cannot be trusted for a reference near the posterior ("" when they can).

    Every rule that holds is named, in this order: split R-hat above ``max_rhat`` (chains in different modes or not
    mixed) and, for pmz's own chains (``own_chains``), divergent transitions (:func:`_divergent`). The route does
    not depend on which rule a run meets first, and the reason says all of them.

    >>> from types import SimpleNamespace
    >>> draws = SimpleNamespace(rhat=1.3, divergences=40, n_chains=32, n_draws=1000)
    >>> print(untrusted_chains_reason(draws, 1.05))  # doctest: +NORMALIZE_WHITESPACE
    the chains disagree (split R-hat 1.3 > 1.05); 40 divergent transitions in 32000 posterior draws
    (the chains miss part of the posterior, e.g. a funnel's neck)
    >>> untrusted_chains_reason(SimpleNamespace(rhat=1.01, divergences=1, n_chains=32, n_draws=1000), 1.05)
    ''
    """
    reasons = []
    if not draws.rhat <= max_rhat:
        reasons.append(f"the chains disagree (split R-hat {draws.rhat:.3g} > {max_rhat})")
    if own_chains and _divergent(draws):
        reasons.append(
            f"{draws.divergences} divergent transitions in {draws.n_chains * draws.n_draws} posterior draws "
            "(the chains miss part of the posterior, e.g. a funnel's neck)"
        )
    return "; ".join(reasons)


@dataclass
class AutoRecord:
    """What the auto route ran: the route, why, its sub-records and sub-estimates, and the posterior draws.

    Attributes
    ----------
    route : str
        ``"bridge"``, ``"path"`` or ``"tempered"``.
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
        Tempered route: each SMC run's final particles resampled to equal weights (one chain per run).
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


class _Clock:
    """Seconds since the start, the deadline for ``max_time`` and a labelled timeline."""

    def __init__(self, max_time):
        self.t0 = time.perf_counter()
        self.deadline = None if max_time is None else self.t0 + float(max_time)
        self.timeline = []

    def mark(self, label):
        self.timeline.append((label, round(time.perf_counter() - self.t0, 3)))

    def left(self) -> float:
        return np.inf if self.deadline is None else self.deadline - time.perf_counter()


def _bridge_half(compiled, draws: PosteriorDraws, fit_chains, bridge_chains, rng, n_bootstrap, check=False):
    """Bridge sampling with q fitted to ``fit_chains`` and the draws of ``bridge_chains``; estimate and k-hat.
    ``check``: test that the draws are this model's posterior (a user's draws; pmz's own chains need no test)."""
    X_fit, _ = draws.flat(fit_chains)
    X_bridge, chain = draws.flat(bridge_chains)
    q = fit_reference(X_fit, "gaussian")
    record = run_bridge(compiled, X_bridge, chain, rng, reference=q, split=False, check=check)
    est = bar(record.forward, record.reverse, rng=rng, n_bootstrap=n_bootstrap, n_eff_r=record.n_eff_reverse)
    khat = pareto_khat(record.forward.log_weights)
    est = replace(est, diagnostics=replace(est.diagnostics, pareto_khat=khat))
    return assess(est, record), record  # verdict and honest se (bootstrap floor, overlap, ...)


def _bridge_pair(compiled, draws, rng, n_bootstrap, check=False):
    chains = np.arange(draws.n_chains)
    a, b = chains[::2], chains[1::2]
    rng_a, rng_b = rng.spawn(2)
    est_a, rec_a = _bridge_half(compiled, draws, a, b, rng_a, n_bootstrap, check)
    est_b, rec_b = _bridge_half(compiled, draws, b, a, rng_b, n_bootstrap, check)
    return {"bridge_a": est_a, "bridge_b": est_b}, {"bridge_a": rec_a, "bridge_b": rec_b}


def _bridge_ok(est, options) -> tuple[bool, str]:
    k, overlap = est.diagnostics.pareto_khat, est.diagnostics.overlap
    if not np.isfinite(est.log_z) or not np.isfinite(est.log_z_se):
        return False, "the bridge estimate is not finite"
    if k > options.max_khat:
        return False, f"Pareto k-hat {k:.2f} > {options.max_khat} (the Gaussian reference's tails are too light)"
    if overlap < options.min_overlap:
        return False, f"overlap {overlap:.3f} < {options.min_overlap} between the reference and the posterior"
    return True, ""


def _combined_se(ests) -> float:
    """se of the mean of independent estimates: ``sqrt(sum se_i^2) / k``."""
    return float(np.sqrt(sum(e.log_z_se**2 for e in ests)) / len(ests))


def _pair_se(ests) -> float:
    """se of the mean of the two cross-fitted bridge halves: ``(se_a + se_b) / 2``.

    The halves are not independent: each fits q on one half of the chains and bridges with the other, so both
    carry the same second-order term (the product of the two halves' fitting errors, e.g. ``(m_A - mu)' Sigma^-1
    (m_B - mu)`` for the means). Their errors correlated by 0.4-0.65 on conjugate benchmark models, where
    ``sqrt(se_a^2 + se_b^2) / 2`` covered the truth in 82-88% of 40 runs. The bound ``rho = 1`` of
    ``Var = (se_a^2 + se_b^2 + 2 rho se_a se_b) / 4`` is used instead.
    """
    se = [e.log_z_se for e in ests]
    return float(np.mean(se))


def _draws_wanted(se, n_draws, first_draws, options) -> int:
    """Draws per chain worth having: enough for ``target_se`` (se ~ 1 / sqrt(draws)), and at least as many as the
    warm-up iterations (the draws then cost no more than the warm-up already paid, and the fixed cost of
    compiling and warming up is at most half the time); at most ``_MAX_GROWTH`` times the first pass."""
    for_target = n_draws * (se / options.target_se) ** 2
    wanted = max(for_target, options.n_warmup, n_draws)
    return int(np.ceil(min(wanted, _MAX_GROWTH * first_draws)))


def _draws_from_posterior(compiled, posterior) -> PosteriorDraws:
    X, chain = posterior_to_flat(compiled, posterior)
    ids = np.unique(chain)
    length = min(int(np.sum(chain == c)) for c in ids)
    x = np.stack([X[chain == c][:length] for c in ids])
    lp, ll = compiled.log_densities(x.reshape(-1, compiled.dim))
    log_post = (lp + ll).reshape(x.shape[:2])
    return PosteriorDraws(
        x=x,
        log_posterior=log_post,
        step_size=np.full(ids.size, np.nan),
        n_leapfrog=0,
        metric=np.ones(compiled.dim),
        acceptance=np.nan,
        divergences=0,
        rhat=max_split_rhat(x, log_post),
        n_grad_evals=0,
        seconds=0.0,
        info={"source": "posterior"},
    )


def _path_route(compiled, draws, options, rng, progressbar, kernel):
    """Geometric path from a Gaussian fitted to all draws; forward from q, reverse from the posterior draws."""
    from .annealing import anneal_both_ways
    from .options import ScheduleOptions
    from .schedule import setup_schedule

    X, _ = draws.flat()
    q = fit_reference(X, "gaussian")
    family = GeometricPath(compiled, q)
    n_paths = 256
    path_options = ScheduleOptions(schedule="adaptive", n_temps=64, cess_target=0.95, n_pilot=n_paths, n_tune_temps=20)
    tune_rng, run_rng = rng.spawn(2)
    schedule, params, tuning, _ = setup_schedule(family, kernel, path_options, tune_rng, progressbar)
    # reverse starts alternate between the two chain halves, so that the paths split into two independent runs
    X_a, _ = draws.flat(np.arange(0, draws.n_chains, 2))
    X_b, _ = draws.flat(np.arange(1, draws.n_chains, 2))
    half = n_paths // 2
    starts = np.concatenate([X_a[evenly_spaced(X_a.shape[0], half)], X_b[evenly_spaced(X_b.shape[0], half)]])
    record = anneal_both_ways(
        family,
        kernel,
        schedule,
        params,
        tuning,
        target=compiled,
        n_forward=2 * half,
        n_reverse=2 * half,
        reverse_start=starts,
        rng=run_rng,
        n_steps_per_temp=2,
        keep_particles=False,
        progressbar=progressbar,
    )
    record = replace(record, reverse_start="posterior")
    boot_rng, *half_rngs = rng.spawn(3)
    full = assess(bar(record.forward, record.reverse, rng=boot_rng, n_bootstrap=options.n_bootstrap), record)
    halves = {}
    for name, part, r in (("path_a", slice(0, half), half_rngs[0]), ("path_b", slice(half, 2 * half), half_rngs[1])):
        sub_f = replace(record.forward, log_weights=record.forward.log_weights[part], final_x=None)
        sub_r = replace(record.reverse, log_weights=record.reverse.log_weights[part], final_x=None)
        halves[name] = assess(bar(sub_f, sub_r, rng=r, n_bootstrap=options.n_bootstrap))
    return full, halves, record


def _tempered_route(family, kernel, options, rng, progressbar, target, reason, clock):
    from .options import SMCOptions
    from .smc import estimate_smc_method, run_smc_method

    smc_options = SMCOptions(keep_particles=options.keep_particles, reference="prior")
    record = run_smc_method(family, kernel, smc_options, rng, progressbar, target, method="smc")
    est = estimate_smc_method("smc")(record, smc_options, rng)
    est = assess(_density_evidence(est, family, target, rng.spawn(1)[0]), record)
    clock.mark("tempered route (SMC from the prior)")
    return AutoRecord(
        route="tempered",
        reason=reason,
        estimates={"smc": est},
        records={"smc": record},
        primary="smc",
        smc_posterior=_equally_weighted_runs(record, rng.spawn(1)[0]),
    )


def _density_evidence(est, family, target, rng):
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


def _equally_weighted_runs(record, rng):
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


def _finite_starts(compiled, rng, n):
    """Dispersed starting points (:func:`pmz.runners.posterior_hmc.dispersed_starts`); a clear error naming the
    non-finite terms when the log density is not finite at any of them."""
    X, value = dispersed_starts(compiled, rng, n)
    if not np.isfinite(value).any():
        per_var = compiled.point_logps(X[0])
        culprits = [name for name, v in per_var.items() if not np.isfinite(v)]
        raise ModelSpecificationError(
            f"pmz: the log density is {value[0]} at the initial particles (PyMC's initial point, with and without "
            f"jitter); non-finite terms: {culprits or 'none per variable (check pm.Potential terms)'}. "
            "Check the priors' supports, the observed data (NaN?) and any pm.Potential."
        )
    return X


def run_auto(family, kernel, options, rng, progressbar, target) -> AutoRecord:
    """Run the auto route on a compiled PyMC model (see the module docstring)."""
    from ..progress import progress_bar

    clock = _Clock(options.max_time)
    sample_rng, bridge_rng, more_rng, path_rng, smc_rng = rng.spawn(5)
    if target.layout.discrete_mask.any():
        names = [b.rv_name for b in target.layout.blocks if b.discrete]
        return _tempered_route(
            family, kernel, options, smc_rng, progressbar, target, f"discrete free variables {names}", clock
        )
    with progress_bar(total=100, desc="auto: posterior draws", disable=not progressbar) as bar_:

        def progress(label, fraction):
            bar_.set_description(f"pmz auto: {label}")
            bar_.n = int(100 * min(fraction, 1.0))
            bar_.refresh()

        if options.posterior is not None:
            draws = _draws_from_posterior(target, options.posterior)
        else:
            start_rng, sample_rng = sample_rng.spawn(2)
            draws = sample_posterior(
                target,
                sample_rng,
                starts=_finite_starts(target, start_rng, options.n_chains),
                n_chains=options.n_chains,
                n_draws=options.n_draws,
                n_warmup=options.n_warmup,
                progress=progress,
                deadline=clock.deadline,
            )
        clock.mark("posterior draws")
        if not draws.rhat <= options.max_rhat and options.posterior is None and clock.left() > draws.seconds:
            # not mixed yet (or separate modes): a second warm-up from where the chains are, twice the draws
            first_rhat = draws.rhat
            draws = sample_posterior(
                target,
                sample_rng,
                starts=draws.x[:, -1],
                n_chains=options.n_chains,
                n_draws=2 * options.n_draws,
                n_warmup=options.n_warmup,
                progress=progress,
                deadline=clock.deadline,
            )
            clock.mark(f"second warm-up and draws (split R-hat was {first_rhat:.3g})")
        if options.max_rhat < draws.rhat <= _SLOW_MIXING_RHAT and options.posterior is None:
            # mixing slowly rather than in separate modes: longer chains (the tempered route is no cure for this)
            draws = continue_sampling(target, draws, sample_rng, 3 * draws.n_draws, deadline=clock.deadline)
            clock.mark(f"longer chains (slow mixing, split R-hat {draws.rhat:.3g})")
    unreliable = ""
    if not draws.rhat <= options.max_rhat and clock.left() <= 0:
        unreliable = f"max_time was spent before the chains agreed (split R-hat {draws.rhat:.3g})"
    elif reason := untrusted_chains_reason(draws, options.max_rhat, own_chains=options.posterior is None):
        record = _tempered_route(family, kernel, options, smc_rng, progressbar, target, reason, clock)
        record.rhat, record.divergences = draws.rhat, draws.divergences
        record.n_posterior_draws = draws.n_chains * draws.n_draws
        record.timeline = clock.timeline
        return record

    user_draws = options.posterior is not None
    estimates, records = _bridge_pair(target, draws, bridge_rng, options.n_bootstrap, check=user_draws)
    clock.mark("bridge")
    mismatch = [r.reverse.tuning.get("posterior_mismatch") for r in records.values()] if user_draws else []
    if any(mismatch) and not unreliable:
        reason = next(filter(None, mismatch))
        unreliable = f"the draws given as posterior= do not look like this model's posterior: {reason}"
    first_draws = draws.n_draws
    while (
        all(_bridge_ok(e, options)[0] for e in estimates.values())
        and options.posterior is None
        and clock.left() > draws.seconds * first_draws / draws.n_draws  # time for one more first pass
    ):
        wanted = _draws_wanted(_pair_se(estimates.values()), draws.n_draws, first_draws, options)
        if wanted < 2 * draws.n_draws:
            break
        draws = continue_sampling(
            target, draws, more_rng, wanted - draws.n_draws, deadline=clock.deadline, min_draws=1
        )
        estimates, records = _bridge_pair(target, draws, bridge_rng, options.n_bootstrap)
        clock.mark(f"more draws ({draws.n_draws} per chain) and bridge")

    if _divergent(draws) and options.posterior is None and not unreliable:
        unreliable = f"{draws.divergences} divergent transitions in the posterior draws (they may miss a region)"
    verdicts = [_bridge_ok(e, options) for e in estimates.values()]
    if all(ok for ok, _ in verdicts):
        route, reason, primary = "bridge", "the Gaussian reference overlaps the posterior well", "bridge_a"
    else:
        bad = next(why for ok, why in verdicts if not ok)
        path_est, halves, path_rec = _path_route(target, draws, options, path_rng, progressbar, kernel)
        estimates.update(path=path_est, **halves)
        records["path"] = path_rec
        route, reason, primary = "path", f"bridge sampling alone is not enough: {bad}", "path"
        clock.mark("path BAR from the fitted reference")
    return AutoRecord(
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


def estimate_auto(record: AutoRecord, options, rng) -> EvidenceEstimate:
    """The route's estimate with both estimates, the route and its reason in the diagnostics."""
    ests = record.estimates  # each already carries its own verdict and honest se (pmz.reliability)
    if record.route == "bridge":
        a, b = ests["bridge_a"], ests["bridge_b"]
        log_z = 0.5 * (a.log_z + b.log_z)
        se = _pair_se([a, b])
        first, second = a, b
        names = ["bridge_a", "bridge_b"]
    elif record.route == "path":
        first, second = ests["path_a"], ests["path_b"]
        log_z, se = ests["path"].log_z, max(ests["path"].log_z_se, _combined_se([first, second]))
        names = ["path_a", "path_b"]
    else:
        first = ests["smc"]
        log_z, se, second, names = first.log_z, first.log_z_se, None, ["smc"]
    used = {"bridge": ("bridge_a", "bridge_b"), "path": ("path", "path_a", "path_b"), "tempered": ("smc",)}
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
    draws = record.draws
    work = {name: est.diagnostics for name, est in ests.items() if isinstance(est.diagnostics, WorkDiagnostics)}
    smc = first.diagnostics if record.route == "tempered" else None  # the runs' spread, ... for pmz.reliability
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
        log_z_draws=first.log_z_draws if record.route == "tempered" else None,
        diagnostics=diagnostics,
        warnings=warnings,
        reliable=not reasons,
        reliability_reason="; ".join(reasons),
    )
