"""Importance sampling over a few hyperparameters, with any Gaussian latents integrated out exactly: the machinery of
the latent and importance routes (:mod:`pmz.auto.latent_route`, :mod:`pmz.auto.importance_route`; docs/methods.md,
section 12).

With latents ``x`` that enter the log density quadratically given hyperparameters ``theta``
(:class:`pmz.model.latent_gaussian.ConditionalGaussian`),

    Z = int p(y, theta) d theta,    log p(y, theta) = f(theta, x_hat) + (m/2) log 2 pi - (1/2) log det P(theta),

exact in the latents; with no latents (a model of at most 30 coordinates), ``log p(y, theta) = log p~(theta)``.

1. **Laplace in the hyperparameters** (:func:`pmz.auto.peak_search.laplace`): the peak ``theta*`` and
   ``Sigma = (-Hessian)^{-1}``, and a look around it for a second peak. (The Laplace route climbs the Laplace
   approximation of ``log p(y, theta)`` first; where it then integrates independent groups by quadrature, the peak
   is found again on the quadrature's values: the Laplace approximation's error is a sum over the groups, so at
   30,000 logistic groups it moved the peak 4 sd, and a proposal there had an ESS of 0.5%.)
2. **Importance sampling.** ``q = 0.8 Student-t_7(theta*, Sigma) + 0.2 Cauchy(theta*, Sigma)``, a defensive
   mixture whose Cauchy component (cut at :data:`DEFENSIVE_RADIUS` scales) bounds the weights under tails lighter
   than a Cauchy's. A pilot of :data:`N_HYPER_PILOT` draws (fewer, down to :data:`N_HYPER_PILOT_MIN`, where
   ``max_time`` is short) must pass the importance checks (:func:`pmz.auto.importance_sampling.weights_fail`, with
   a Pareto k-hat of at most :data:`MAX_KHAT` = 1/2: plain importance weights with a tail index above 1/2 have
   infinite variance). If it does not, ``q`` is refitted once to the pilot's weighted moments (covariance
   doubled). Then enough draws for ``target_se`` (``se ~ 1/sqrt(n)`` from the pilot, margin 1.2, between
   :data:`N_MIN` and :data:`N_MAX`, within ``max_time``), which must pass the same checks; two independent halves
   give the check of the answer. Where each draw is costly (the Laplace route: a Newton solve and an integral over
   thousands of latents) the run is *thrifty*: a pilot whose weights vary much refits ``q`` to them and is drawn
   again, and the floor is not :data:`N_MIN` but the draws that make the se itself accurate to 10%
   (:func:`draws_for_se_of_se`, from the weights' kurtosis).
3. **Posterior draws**, exact given the weights: each hyperparameter draw carries one draw of ``x | theta, y``;
   four chains by systematic resampling within each quarter of the draws.

Any value where the density is not quadratic in the latents (or their precision is not positive definite), a
second peak, or weights that fail the checks hand over to the next route, with the reason.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..estimate_diagnostics import Diagnostics
from ..model.latent_gaussian import ConditionalGaussian
from ..model.mixture_reference import MixtureReference
from ..model.reference import STUDENT_T_DF, StudentTReference, TruncatedStudentTReference
from ..records import EvidenceEstimate
from .contract import Named, Outcome
from .hyper_quadrature import FLOOR, hyper_quadrature
from .importance_sampling import halves, importance_estimate, kish_ess, resampled_quarters, weights_fail
from .peak_search import NotApplicable, evaluate, laplace, refined_peak

__all__ = ["N_HYPER_PILOT", "N_MIN", "N_MAX", "integrate_hyperparameters"]

N_HYPER_PILOT = 256  # the pilot's importance draws of the hyperparameters
N_HYPER_PILOT_MIN = 64  # a pilot this small only where max_time leaves no room for a full one
N_MIN = 1024  # at 512 the delta-method se came out a little short (z-scores' sd 1.23-1.27 over 20 seeds, 2 models)
N_MAX = 1 << 14
N_EXACT_DRAWS = 500  # per chain, with no hyperparameters (every draw exact)
N_HYPER_SEARCH = 128  # prior draws of the hyperparameters evaluated in the search for a second peak
DEFENSIVE = 0.2  # share of the Cauchy component in the reference (defensive_reference) ...
DEFENSIVE_RADIUS = 30.0  # ... cut at this many scales
REFIT_VARIANCE = 0.25  # a thrifty pilot whose weights vary more than this (ESS below 80%) refits the proposal ...
N_REFIT_ESS = 32  # ... where their ESS is at least this
SE_PRECISION = 0.1  # the relative accuracy of the se that decides a thrifty run's draws (draws_for_se_of_se)
MAX_KHAT = 0.5  # plain importance sampling: above k = 1/2 the weights' variance is infinite and the se means nothing


@dataclass(frozen=True)
class _Weighted:
    """The importance draws of the hyperparameters: their log weights, the full flat draws they carry, how many
    the target se wanted, whether the search for a second peak ran."""

    log_w: np.ndarray
    X: np.ndarray
    wanted: int
    searched: bool
    per_draw: float  # seconds per draw, measured on the pilot


def integrate_hyperparameters(context, split, laplace=None) -> Outcome:
    """The latent route (latents in ``split``) or the importance route (none): the answer, or a hand-over with the
    reason (module docstring). ``laplace``: the Laplace route's conditional
    (:class:`pmz.runners.conditional_laplace.ConditionalLaplace`) in place of the exact Gaussian one; it is calibrated
    at the peak before the importance draws, and its values are then annealed estimates of ``log p(y, theta)``."""
    target = context.target
    curve_rng, draw_rng, resample_rng = context.streams.spawn(3)  # only where the route runs: others keep their bits
    base = target.initial_point()
    cg = laplace if laplace is not None else ConditionalGaussian(target, split, base)
    t_start = time.perf_counter()
    few = split.latent.size == 0  # importance sampling over every coordinate
    what = f"{', '.join(split.latent_names)} ({len(split.latent)} coordinates)"
    label = ("importance sampling from the posterior's peak" if few else "Laplace latents" if laplace is not None
             else "latent Gaussian")
    try:
        context.progress.report(label, 0.0)
        if len(split.hyper) == 0 and laplace is None:
            outcome = _exact(cg, draw_rng, what)
            context.clock.mark("latent Gaussian integrated out, exactly")
            return outcome
        mode, cov, searched = _peak(context, cg, split, base, curve_rng, label, costly=laplace is not None)
        if laplace is not None:
            _calibrate(context, cg, mode, cov, curve_rng, label)
            if cg.quadrature:  # the peak of the quadrature's log p(y, theta), not the Laplace approximation's
                mode, cov = refined_peak(cg, mode, cov, curve_rng)
                context.clock.mark(f"{label}: the peak found again on the quadrature's values")
        if len(split.hyper) == 1 and (laplace is None or cg.quadrature):  # deterministic values of one
            ruled = hyper_quadrature(cg, mode, cov, draw_rng, out_of_time=lambda: context.clock.left() <= 0)
            if ruled is not None:
                return _quadrature_answer(context, cg, split, ruled, searched, label)
        context.progress.report(label if few else f"{label}: importance sampling over the hyperparameters", 0.1)
        weighted = _importance(context, cg, defensive_reference(mode, cov), draw_rng, t_start, label, searched,
                               thrifty=laplace is not None)
    except NotApplicable as why:
        return Outcome(reason=str(why))
    return _answer(context, cg, split, weighted, resample_rng)


def _structure(context, cg, split, base, rng, label):
    """The certificate at the start and the structure of the precision of the latents."""
    # the structure of P (a band and a border where the latents form a chain or hang from a few global ones), from
    # two values where P is small (m^2 gradient entries each)
    probes = [[0.0], [0.3]] if len(split.latent) <= 500 else [[0.0]]
    first = cg.learn_structure(base[split.hyper] + np.array(probes)[:, : len(split.hyper)], rng)
    if first.failure:
        raise NotApplicable(first.failure)
    cg.recentre(first.draw[0, 0])
    few = split.latent.size == 0
    context.clock.mark(f"{label}: the certificate at the start" + ("" if few else f" ({type(cg.structure).__name__})"))


def _calibrate(context, cg, mode, cov, rng, label):
    """The Laplace route's annealed correction: its step size and number of temperatures from a pilot at draws of
    the importance proposal (:meth:`pmz.runners.conditional_laplace.ConditionalLaplace.calibrate`)."""
    from ..runners.conditional_laplace import N_CALIBRATION

    thetas = defensive_reference(mode, cov).sample(rng, N_CALIBRATION)
    why_not = cg.calibrate(thetas, rng, centre=mode)
    if why_not:
        raise NotApplicable(f"{label}: {why_not}")
    context.clock.mark(f"{label}: the integration of the latents calibrated")


def _within_budget(context, cg, theta, rng, label):
    """Hand over where ``max_time`` cannot pay for the fewest values the route needs (four of the peak's stencils,
    the calibration and the smallest pilot), at the cost of one value timed now (after the
    compile): a dense latent field whose every gradient factors its kernel again can cost minutes a value."""
    from ..runners.conditional_laplace import N_CALIBRATION

    left = context.clock.left()
    if not np.isfinite(left):
        return
    t0 = time.perf_counter()
    evaluate(cg, theta[None], rng)
    per_value = time.perf_counter() - t0
    k = len(theta)
    needed = (2 * k * k + 1) * 4 + N_CALIBRATION + N_HYPER_PILOT_MIN
    if needed * per_value > left:
        raise NotApplicable(f"{label}: a hyperparameter value costs {per_value:.2g} s (a Newton solve over "
                            f"{cg.m} latents) and the route needs at least {needed} of them, about "
                            f"{needed * per_value:.0f} s, more than the {max(left, 0.0):.0f} s max_time leaves")


def _peak(context, cg, split, base, rng, label, costly=False):
    """The certificate at the start, the structure of the precision, and the peak of ``log p(y, theta)`` with the
    look around it (:func:`pmz.auto.peak_search.laplace`): ``(mode, cov, searched)``. ``costly`` (the Laplace
    route): first check that ``max_time`` can pay for the route (:func:`_within_budget`)."""
    _structure(context, cg, split, base, rng, label)
    if costly:
        _within_budget(context, cg, base[split.hyper], rng, label)
    mode, cov, searched = laplace(cg, base[split.hyper], lambda: prior_thetas(context.target, split, rng), rng,
                                  context.clock)
    cg.recentre(evaluate(cg, mode[None], rng).draw[0, 0])
    context.clock.mark(f"{label}: the peak" + (" and the search for a second one" if searched else ""))
    return mode, cov, searched


def _weighted_draws(cg, q, rng, n):
    """``n`` draws of ``q`` weighted by importance: ``(conditional draws, log weights)``."""
    thetas = q.sample(rng, n)
    out = evaluate(cg, thetas, rng)
    return out, out.log_marginal - q.log_density(thetas)


def _pilot(cg, q, rng, n_pilot, khat_limit, label, thrifty):
    """A pilot of ``n_pilot`` draws of ``q`` that passes the importance checks, once refitted to its weighted
    moments (covariance doubled) if the first does not, or (``thrifty``) where its weights vary more than
    :data:`REFIT_VARIANCE`: ``(q, conditional draws, log weights, seconds per draw)``."""
    t0 = time.perf_counter()
    out, log_w = _weighted_draws(cg, q, rng, n_pilot)
    per_draw = (time.perf_counter() - t0) / n_pilot
    if weights_fail(log_w, khat_limit, "a pilot of"):
        inflate, what = 2.0, "a refitted pilot of"
    elif thrifty and normalised_variance(log_w) > REFIT_VARIANCE and kish_ess(log_w) >= N_REFIT_ESS:
        inflate, what = 1.0, "a pilot (refitted to the first's weights) of"
    else:
        return q, out, log_w, per_draw
    q = _weighted_fit(out.draw[:, 0][:, cg.split.hyper], log_w, inflate)
    out, log_w = _weighted_draws(cg, q, rng, n_pilot)
    why_not = weights_fail(log_w, khat_limit, what)
    if why_not:
        raise NotApplicable(f"{label}: {why_not}")
    return q, out, log_w, per_draw


def _importance(context, cg, q, rng, t_start, label, searched, thrifty=False, again=False) -> _Weighted:
    """The pilot, then enough draws for the target se within the time left; both must pass the checks.

    ``thrifty`` (the Laplace route, whose every draw costs a Newton solve and an integral over thousands of latents):
    where the pilot's weights vary more than :data:`REFIT_VARIANCE`, ``q`` is refitted to their weighted moments
    (with its own Cauchy component) and the pilot drawn again from it (the first pilot only chose ``q``: the estimate
    uses the draws of the final ``q`` alone, each unbiased given it); and the floor on the draws is not :data:`N_MIN`
    but what the se itself needs (:func:`draws_wanted`). A thrifty run whose draws, all together, fail the checks
    (a few hundred draws: a Pareto k-hat just above 1/2 is often noise there) starts once more from ``q`` refitted
    to all of them with the covariance doubled, and hands over only if that fails too."""
    options, clock = context.options, context.clock
    khat_limit = min(options.max_khat, MAX_KHAT)
    per_value = (time.perf_counter() - t_start) / max(cg.n_evaluations, 1)  # seconds per value so far
    left = clock.left()
    n_pilot = N_HYPER_PILOT if not np.isfinite(left) else int(np.clip(left / per_value, N_HYPER_PILOT_MIN,
                                                                     N_HYPER_PILOT))
    q, out, log_w, per_draw = _pilot(cg, q, rng, n_pilot, khat_limit, label, thrifty)
    clock.mark(f"{label}: a pilot of {n_pilot} importance draws")
    wanted = draws_wanted(log_w, options.target_se, thrifty)
    draws = [out.draw[:, 0]]
    while True:
        n_time = len(log_w) + max(clock.left(), 0.0) / max(per_draw, 1e-9)  # inf without max_time
        n_more = int(min(wanted, n_time)) - len(log_w)
        if n_more <= 0:
            break
        extra, extra_log_w = _weighted_draws(cg, q, rng, n_more)
        log_w = np.concatenate([log_w, extra_log_w])
        draws.append(extra.draw[:, 0])
        if not thrifty:
            break
        wanted = max(wanted, draws_wanted(log_w, options.target_se, thrifty))  # the tails, read again on all
    why_not = weights_fail(log_w, khat_limit, "all")
    if why_not and thrifty and not again and kish_ess(log_w) >= N_REFIT_ESS:
        clock.mark(f"{label}: {why_not}; the proposal refitted to them")
        q = _weighted_fit(np.concatenate(draws)[:, cg.split.hyper], log_w, 2.0)
        return _importance(context, cg, q, rng, t_start, label, searched, thrifty, again=True)
    if why_not:  # tails heavier than the Student-t's, seen only on all draws: the chains instead
        raise NotApplicable(f"{label}: {why_not}")
    return _Weighted(log_w, np.concatenate(draws), wanted, searched, per_draw)


def draws_wanted(log_w, target_se, thrifty) -> int:
    """How many draws in all, from the weights so far: enough for ``target_se`` (``se ~ 1/sqrt(n)``, margin 1.2),
    at least :data:`N_MIN` (thrifty: at least :func:`draws_for_se_of_se`, re-read as draws come in, since a
    sample's kurtosis grows with it where the weights' tails are heavy), at most :data:`N_MAX`."""
    n = len(log_w)
    by_se = int(np.ceil(1.2 * n * (importance_estimate(log_w)[0].log_z_se / target_se) ** 2))
    floor = draws_for_se_of_se(log_w) if thrifty else N_MIN
    return min(max(by_se, floor), N_MAX)


def normalised_variance(log_w) -> float:
    """``Var(w) / E(w)^2`` of the importance weights ``w = exp(log_w)`` (the ``chi^2`` divergence of the proposal
    from the target, estimated): ``n`` draws give ``log Z`` an se near ``sqrt(this / n)``."""
    w = np.exp(log_w - np.max(log_w))
    return float(np.var(w) / np.mean(w) ** 2)


def draws_for_se_of_se(log_w) -> int:
    """The draws that make the delta-method se of ``log Z`` itself accurate to :data:`SE_PRECISION` (relative):
    the sample variance of ``n`` weights has relative sd ``sqrt((kappa - 1) / n)`` (``kappa`` their kurtosis), the se
    half of it, so ``n >= (kappa - 1) / (2 SE_PRECISION)^2``. Light-tailed weights need few; heavy ones many."""
    w = np.exp(log_w - np.max(log_w))
    c = w - np.mean(w)
    kurtosis = float(np.mean(c**4) / max(np.mean(c**2) ** 2, 1e-300))
    return int(np.ceil((kurtosis - 1.0) / (2.0 * SE_PRECISION) ** 2))


def _answer(context, cg, split, weighted: _Weighted, rng) -> Outcome:
    """The pool and its two halves (the check), the resampled posterior draws, the reason and what the clock
    says of the answer."""
    log_w = weighted.log_w
    n = len(log_w) - len(log_w) % 2
    few, k = split.latent.size == 0, len(split.hyper)
    laplace = getattr(cg, "n_temperatures", None) is not None
    (pool, a, b), record = halves("is_laplace" if few else "laplace_ais" if laplace else "is_latent", log_w[:n])
    posterior = resampled_quarters(weighted.X, log_w[:n], rng)
    hyper = ", ".join(split.hyper_names)
    if few:
        reason = (f"{k} coordinates ({hyper}): {n} draws of a Student-t at the posterior's peak are weighted by "
                  f"importance ({cg.n_evaluations} log density evaluations in all)")
    elif laplace:
        peak = "the peak of log p(y, theta)" if cg.quadrature else "the Laplace approximation's peak"
        reason = (f"{cg.proof} given {hyper} ({k} coordinates): {n} hyperparameter draws of a Student-t fitted to "
                  f"{peak} are weighted by importance; at each, {cg.describe()} "
                  f"({cg.n_evaluations} conditional modes in all)")
    else:
        what = f"{', '.join(split.latent_names)} ({len(split.latent)} coordinates)"
        reason = (f"the log density is Gaussian in {what} given {hyper} ({k} coordinates): the latents are "
                  f"integrated out exactly and {n} hyperparameter draws of a Student-t fitted at their peak are "
                  f"weighted by importance ({cg.n_evaluations} conditional Gaussians in all)")
    unreliable = ""
    if not weighted.searched:
        unreliable = "max_time was spent before the search for a second peak of the importance weights' target"
    elif n < weighted.wanted and context.clock.left() <= 0:
        unreliable = f"max_time was spent after {n} of the {weighted.wanted} importance draws wanted"
    context.clock.mark("importance sampling from the posterior's peak" if few else
                       "Laplace latents annealed; importance sampling over the hyperparameters" if laplace else
                       "latent Gaussian integrated out; importance sampling over the hyperparameters")
    return Outcome(reason=reason, answer=pool, check=(a, b), estimates=(pool, a, b), counted=(pool, a, b),
                   result_record=record, posterior_x=posterior, unreliable=unreliable,
                   sampling_seconds=n * weighted.per_draw)


def _quadrature_answer(context, cg, split, ruled, searched, label) -> Outcome:
    """One hyperparameter integrated by the trapezoid rule (:mod:`pmz.auto.hyper_quadrature`)."""
    answer, check, posterior, n_nodes = ruled
    gap = getattr(cg, "quadrature_gap", None)
    values = ("the log density" if split.latent.size == 0 else
              "log p(y, theta) with the latents integrated by their Gauss-Hermite rules" if gap is not None else
              "log p(y, theta) with the latents integrated out exactly")
    reason = (f"{label}: one hyperparameter ({', '.join(split.hyper_names)}), integrated by the trapezoid rule on "
              f"{n_nodes} nodes of {values} about its peak (the rule on every other node differs by "
              f"{abs(check[0].estimate.log_z - check[1].estimate.log_z):.1g}; error bar at least {FLOOR:g} nats)")
    unreliable = "" if searched else "max_time was spent before the search for a second peak"
    context.clock.mark(f"{label}: the hyperparameter integrated by the trapezoid rule")
    return Outcome(reason=reason, answer=answer, check=check, estimates=(answer, *check), counted=(answer,),
                   posterior_x=posterior, unreliable=unreliable)


def _exact(cg, rng, what) -> Outcome:
    """No hyperparameters: the model is Gaussian, log Z is the closed form and the draws are exact."""
    out = evaluate(cg, np.zeros((1, 0)), rng, n_each=4 * N_EXACT_DRAWS)
    estimate = EvidenceEstimate(log_z=float(out.log_marginal[0]), log_z_se=0.0, method="latent_gaussian",
                                diagnostics=Diagnostics())
    answer = Named("latent", estimate)
    reason = (f"the log density is Gaussian in every free variable, {what}: log Z is the Gaussian integral, "
              "exact (se 0), and the posterior draws are exact")
    return Outcome(reason=reason, answer=answer, proof="the Gaussian integral of a density quadratic in every "
                   "free variable", estimates=(answer,), counted=(answer,),
                   posterior_x=out.draw[0].reshape(4, N_EXACT_DRAWS, -1))


def prior_thetas(target, split, rng):
    """:data:`N_HYPER_SEARCH` prior draws of the hyperparameters alone (their prior only: drawing the latents too
    can cost seconds), or None where the prior cannot be drawn from."""
    from ..model.backend import ONE_SHOT_MODE
    from ..model.reference import prior_draws_of

    if getattr(target, "improper_priors", None):
        return None
    draws = prior_draws_of(target, split.hyper_names, rng, N_HYPER_SEARCH, mode=ONE_SHOT_MODE)
    if draws is None or draws.shape[1] != len(split.hyper):
        return None
    return draws[np.all(np.isfinite(draws), axis=1)]


def defensive_reference(mean, cov):
    """The defensive mixture ``(1 - a) t_7(mean, cov) + a t_1(mean, cov)`` with ``a = DEFENSIVE``: the Cauchy
    component keeps the weights ``p~ / q`` bounded wherever the posterior's tails are lighter than a Cauchy's
    (Hesterberg 1995), where a Student-t_7 alone gives weights of infinite variance under tails like ``|x|^-4``
    (a Cauchy posterior came out 5.5 se low, reliable). The Cauchy is cut at ``DEFENSIVE_RADIUS`` scales (its
    draws beyond reach ``e^200`` on a log scale, where a model's numbers overflow); ``q`` still covers every point
    through the Student-t_7."""
    cauchy = TruncatedStudentTReference(mean, cov, df=1.0, radius=DEFENSIVE_RADIUS)
    return MixtureReference([StudentTReference(mean, cov, df=STUDENT_T_DF), cauchy], [1.0 - DEFENSIVE, DEFENSIVE],
                            name="defensive_student_t")


def _weighted_fit(thetas, log_w, inflate):
    """The defensive reference at the weighted draws' mean and ``inflate`` times their covariance."""
    w = np.exp(log_w - np.max(log_w))
    w /= w.sum()
    mean = w @ thetas
    centred = thetas - mean
    return defensive_reference(mean, inflate * (centred.T * w) @ centred + 1e-9 * np.eye(len(mean)))
