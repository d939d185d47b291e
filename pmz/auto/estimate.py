"""The default's estimate: the answering route's log Z and se, its verdict, and the diagnostics a result shows.

No route is recognised by its name here: the outcome says what the answer is, which two estimates are its check
(their disagreement beyond 3 combined se is a warning and raises the se to half the difference), which estimates'
verdicts count, and why the route itself distrusts it (:class:`pmz.auto.contract.Outcome`).
"""

from __future__ import annotations

import numpy as np

from ..estimate_diagnostics import AutoDiagnostics, SMCDiagnostics, WorkDiagnostics
from ..records import EvidenceEstimate

__all__ = ["estimate_auto"]


def _prior_mass_fields(record, first) -> dict:
    """The prior-mass diagnostics of the result (empty when the prior as written integrates to one): the measured
    mass of the tempered route's prior draws, else the masses known from the model's structure (``-log K!`` of
    ordered exchangeable variables, the constant PyMC leaves out of a conditional autoregression); with
    ``log_z_normalised_prior``, the evidence of the model whose prior is normalised (``log Z - sum log c``)."""
    d = first.diagnostics
    if d.prior_log_mass is not None:
        mass, se, names = d.prior_log_mass, d.prior_log_mass_se, d.prior_unnormalised
    elif record.known_log_mass:
        mass, se, names = float(sum(record.known_log_mass.values())), 0.0, ", ".join(record.known_log_mass)
    else:
        return {}
    return dict(prior_log_mass=mass, prior_log_mass_se=se, prior_unnormalised=names)


def _unnormalised_warning(fields, log_z) -> str:
    mass, names = fields["prior_log_mass"], fields["prior_unnormalised"]
    return (
        f"pmz: the prior of {names} as PyMC writes it does not integrate to one (log mass {mass:+.4f}: an ordered "
        "transform on K exchangeable entries keeps 1/K! of the mass; PyMC's CAR leaves out its Gaussian constant "
        f"-(n/2) log 2 pi + (1/2) log det D). log Z = {log_z:.4f} is the evidence of the density as written; with "
        f"the prior normalised it is {log_z - mass:.4f} (res.diagnostics['log_z_normalised_prior']). A Bayes factor "
        "against a model without the same unnormalised prior needs the normalised one."
    )


def _check(outcome, se) -> tuple:
    """The disagreement of the check's two estimates: ``(se, its z, warnings)``; the se covers half a difference
    beyond 3 combined se."""
    if not outcome.check:
        return se, None, []
    (first_name, first), (second_name, second) = outcome.check
    diff = abs(first.log_z - second.log_z)
    combined = float(np.hypot(first.log_z_se, second.log_z_se))
    if not diff > 3 * combined:
        return se, diff / combined, []
    warning = (f"pmz: the two estimates disagree: {first_name} {first.log_z:.3f} +/- {first.log_z_se:.3f} "
               f"vs {second_name} {second.log_z:.3f} +/- {second.log_z_se:.3f} ({diff / combined:.1f} combined se); "
               "the reported se covers the difference.")
    return max(se, 0.5 * diff), diff / combined, [warning]


def _seconds_to_halve(outcome, monte_carlo_se, se) -> float | None:
    """About how many more seconds would halve the se: a Monte Carlo se falls as one over the square root of the
    draws (paths, runs) behind it, so four times as many halve it, three times their time more
    (``outcome.sampling_seconds``). None where the se is not a Monte Carlo one (a proof, a quadrature rule), the
    draws' cost is not pmz's, or the se was raised to cover two estimates that disagree (more draws of the same
    kind need not close that gap)."""
    seconds = outcome.sampling_seconds
    if seconds is None or outcome.proof or not monte_carlo_se > 0 or se > monte_carlo_se:
        return None
    return 3.0 * float(seconds)


def _diagnostics(record, outcome, log_z, disagreement_z, prior_fields, seconds_to_halve_se) -> AutoDiagnostics:
    """The result's ``evidence`` diagnostics of the default (:class:`pmz.estimate_diagnostics.AutoDiagnostics`)."""
    draws, modes, first = outcome.draws, outcome.modes, outcome.first.estimate
    work = {name: est.diagnostics for name, est in outcome.estimates if isinstance(est.diagnostics, WorkDiagnostics)}
    smc = first.diagnostics if isinstance(first.diagnostics, SMCDiagnostics) else None  # the runs' spread, ...
    return AutoDiagnostics(
        route=record.route,
        route_reason=record.reason,
        proof=outcome.proof or None,
        estimates={name: (est.log_z, est.log_z_se) for name, est in outcome.estimates},
        independent_estimates=[named.name for named in (outcome.check or (outcome.answer,))],
        independent=None if not outcome.check else tuple((n, e.log_z, e.log_z_se) for n, e in outcome.check),
        routes_tried=[trial.line() for trial in record.trials],
        timeline=[f"{label}: {t:.2f} s" for label, t in record.timeline],
        rhat=outcome.rhat if draws is None else draws.rhat,
        growth=outcome.growth,
        divergences=outcome.divergences if draws is None else draws.divergences,
        n_posterior_draws=outcome.n_posterior_draws,
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
        seconds_to_halve_se=seconds_to_halve_se,
    )


def estimate_auto(record, options, rng) -> EvidenceEstimate:
    """The answering route's estimate, with the check's disagreement, every counted estimate's verdict and the
    route's own reason to distrust it; the route, its reason and the routes tried in the diagnostics."""
    outcome = record.outcome
    log_z, se = outcome.answer.estimate.log_z, outcome.answer.estimate.log_z_se
    reasons = [f"{name}: {est.reliability_reason}" for name, est in outcome.counted if not est.reliable]
    if outcome.unreliable:
        reasons.append(outcome.unreliable)
    monte_carlo_se = se
    se, disagreement_z, warnings = _check(outcome, se)
    for _, est in outcome.estimates:
        warnings += [w for w in est.warnings if w not in warnings]
    first = outcome.first.estimate
    prior_fields = _prior_mass_fields(record, first)
    if prior_fields:
        warnings.append(_unnormalised_warning(prior_fields, log_z))
    diagnostics = _diagnostics(record, outcome, log_z, disagreement_z, prior_fields,
                               _seconds_to_halve(outcome, monte_carlo_se, se))
    return EvidenceEstimate(
        log_z=float(log_z),
        log_z_se=float(se),
        method="auto",
        log_z_draws=first.log_z_draws if diagnostics.smc is not None else None,
        diagnostics=diagnostics,
        warnings=warnings,
        reliable=not reasons,
        reliability_reason="; ".join(reasons),
    )
