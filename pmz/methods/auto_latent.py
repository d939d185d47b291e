"""The latent and importance routes of ``method="auto"``: Gaussian latents integrated out exactly, importance
sampling over the hyperparameters; or, for a model of at most six coordinates, importance sampling over all of them
(docs/methods.md, section 12).

Where the model's untransformed continuous variables (at least :data:`pmz.model.latent_gaussian.MIN_LATENT`
coordinates) enter the log density quadratically given at most :data:`pmz.model.latent_gaussian.MAX_HYPER`
hyperparameter coordinates (:mod:`pmz.model.latent_gaussian`: AR and other Gaussian state-space models, GP
regression, hierarchical normal models, Gaussian posteriors), the evidence is

    Z = int p(y, theta) d theta,    log p(y, theta) = f(theta, x_hat) + (m/2) log 2 pi - (1/2) log det P(theta),

exact in the latents. With no hyperparameters that is log Z itself (se 0). Otherwise:

1. **Laplace in the hyperparameters.** Newton's method on ``log p(y, theta)`` from PyMC's initial point, with
   central finite differences for its gradient and Hessian (each Newton step one batched evaluation of the
   ``2k^2 + 1`` stencil points), gives the mode ``theta*`` and ``Sigma = (-Hessian)^{-1}``.
2. **Importance sampling.** ``q = 0.8 Student-t_7(theta*, Sigma) + 0.2 Cauchy(theta*, Sigma)``, a defensive
   mixture whose Cauchy component (cut at 30 scales) bounds the weights under tails lighter than a Cauchy's. A
   pilot of :data:`N_PILOT` draws (fewer, down to :data:`N_PILOT_MIN`, where ``max_time`` is short) must pass the
   importance checks: Kish ESS at least 10% of the draws, Pareto k-hat at most :data:`MAX_KHAT` = 1/2 (or
   ``max_khat`` if lower; plain importance weights with a tail index above 1/2 have infinite variance, so their
   delta-method se would not hold). If it does not, ``q`` is refitted once to the pilot's weighted moments
   (covariance doubled). Then enough draws for ``target_se`` (``se ~ 1/sqrt(n)`` from the pilot, margin 1.2, at
   least :data:`N_MIN`, at most :data:`N_MAX`, within ``max_time``), which must pass the same checks (tails
   heavier than the Student-t's often show only there); two independent halves give the check, as on the modes
   route.
3. **Posterior draws**, exact given the weights: each hyperparameter draw carries one draw of ``x | theta, y``;
   four chains by systematic resampling within each quarter of the draws.

Any hyperparameter value where the density is not quadratic in the latents (or their precision is not positive
definite) stops the route; the chains and the bridge then run as before, and the reason says why.

**Few coordinates** (the importance route): a model of at most :data:`pmz.model.latent_gaussian.MAX_HYPER`
coordinates and fewer than :data:`pmz.model.latent_gaussian.MIN_LATENT` latent ones has every coordinate as a
hyperparameter and nothing to integrate out, ``log p(y, theta) = log p~(theta)``: steps 1-3 run as above, on values
of the log density alone (a few thousand, no gradient, where the chains take about 10^5 gradients).

**A second peak.** One Student-t cannot serve several peaks, and importance sampling never sees a peak it does not
draw near. After the first Newton climb the density must fall along the peak's principal axes out to
:data:`SCAN_SDS` Laplace sd (a rise, or a +inf region, stops the route); then :data:`N_SEARCH` prior draws of the
hyperparameters are evaluated and the best :data:`N_STARTS` of those more than 3 Laplace sd from the peak climb too;
a second peak with more than :data:`SECOND_PEAK` of the first's Laplace mass stops the route (the chains, then the
modes route, take over). Once ``max_time`` is spent the search is skipped and the result flagged.
"""

from __future__ import annotations

import time

import numpy as np

from ..estimate_diagnostics import Diagnostics
from ..model.latent_gaussian import ConditionalGaussian, latent_split
from ..model.mixture_reference import MixtureReference
from ..model.reference import StudentTReference, TruncatedStudentTReference
from ..records import EvidenceEstimate
from ..weights import systematic_resample
from .auto_routes import AutoRecord, _importance_estimate, _weights_fail

__all__ = ["latent_route", "N_PILOT", "N_MIN", "N_MAX"]

N_PILOT = 256
N_PILOT_MIN = 64  # a pilot this small only where max_time leaves no room for a full one
N_MIN = 1024  # at 512 the delta-method se came out a little short (z-scores' sd 1.23-1.27 over 20 seeds, 2 models)
N_MAX = 1 << 14
N_EXACT_DRAWS = 500  # per chain, with no hyperparameters (every draw exact)
DF = 7.0  # the Student-t reference's degrees of freedom (the modes route's components use the same)
DEFENSIVE = 0.2  # share of the Cauchy component in the reference (_reference) ...
DEFENSIVE_RADIUS = 30.0  # ... cut at this many scales
MAX_KHAT = 0.5  # plain importance sampling: above k = 1/2 the weights' variance is infinite and the se means nothing
_STEP = 1e-3  # finite-difference step in the unconstrained hyperparameters
_NEWTON_STEPS = 30
_MAX_STEP = 2.0  # largest Newton move in any unconstrained hyperparameter (a factor e^2 on a log scale)
SCAN_SDS = (2.0, 4.0, 6.0, 8.0, 12.0, 16.0)  # Laplace sd along each principal axis where the density must be lower
N_SEARCH = 128  # prior draws of the hyperparameters evaluated in the search for a second peak ...
N_STARTS = 4  # ... of which the best this many outside the first peak climb: a second peak stops the route
SECOND_PEAK = 1e-3  # Laplace mass of a second peak, relative to the first, above which the route stops


class _NotLatent(Exception):
    """The model is not Gaussian in its latents at some hyperparameter value: the route does not apply."""


def _stencil(theta, h):
    """Central-difference points for the gradient and Hessian at ``theta (k,)``: ``(points (2k^2 + 1, k), plan)``."""
    k = theta.size
    E = h * np.eye(k)
    pts = [theta] + [theta + E[i] for i in range(k)] + [theta - E[i] for i in range(k)]
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    for i, j in pairs:
        pts += [theta + E[i] + E[j], theta + E[i] - E[j], theta - E[i] + E[j], theta - E[i] - E[j]]
    return np.array(pts).reshape(-1, k), pairs


def _derivatives(values, k, pairs, h):
    """Value, gradient and Hessian from the stencil's values."""
    f0, plus, minus = values[0], values[1 : k + 1], values[k + 1 : 2 * k + 1]
    grad = (plus - minus) / (2 * h)
    hess = np.diag((plus - 2 * f0 + minus) / h**2)
    for n, (i, j) in enumerate(pairs):
        a, b, c, d = values[2 * k + 1 + 4 * n : 2 * k + 5 + 4 * n]
        hess[i, j] = hess[j, i] = (a - b - c + d) / (4 * h * h)
    return f0, grad, hess


def _evaluate(cg, thetas, rng, n_each=1):
    out = cg.evaluate(thetas, rng, n_each=n_each)
    if out.failure:
        raise _NotLatent(out.failure)
    return out


def _newton(cg, theta0, rng, near=None):
    """Newton's method on ``log p(y, theta)`` from ``theta0`` (steps of at most ``_MAX_STEP``, backtracking):
    ``(peak, value, covariance)`` with the negated inverse Hessian there, or None where it fails (a value that is
    not finite or fails its certificate at the start, no negative definite curvature at the end) or, given
    ``near = (peak, precision)``, where it comes within 3 sd of that peak (the same peak: no need to finish)."""
    theta, k = np.asarray(theta0, dtype=float), len(theta0)
    for _ in range(_NEWTON_STEPS):
        if near is not None and (theta - near[0]) @ near[1] @ (theta - near[0]) < 9.0:
            return None
        pts, pairs = _stencil(theta, _STEP)
        stencil = cg.evaluate(pts, rng)
        if stencil.failure:
            return None
        f0, grad, hess = _derivatives(stencil.log_marginal, k, pairs, _STEP)
        if not np.all(np.isfinite(stencil.log_marginal)):
            return None
        lam, V = np.linalg.eigh(-hess)
        lam = np.maximum(np.abs(lam), 1e-3 * max(np.abs(lam).max(), 1e-8))  # a step uphill even where not concave
        step = V @ ((V.T @ grad) / lam)
        if float(grad @ step) < 1e-9:
            break
        step *= min(1.0, _MAX_STEP / np.max(np.abs(step)))
        for _ in range(30):  # backtrack until log p(y, theta) rises (a failed certificate there counts as lower)
            trial = cg.evaluate((theta + step)[None], rng)
            if not trial.failure and trial.log_marginal[0] >= f0:
                break
            step = 0.5 * step
        theta = theta + step
        if np.max(np.abs(step)) < 1e-6:
            break
    pts, pairs = _stencil(theta, _STEP)
    stencil = cg.evaluate(pts, rng)
    if stencil.failure:
        return None
    f0, _, hess = _derivatives(stencil.log_marginal, k, pairs, _STEP)
    lam, V = np.linalg.eigh(-hess)
    if not (np.isfinite(f0) and np.all(np.isfinite(lam)) and lam.min() > 0):
        return None
    return theta, f0, (V / lam) @ V.T


def _laplace(cg, start, prior_thetas, rng, clock):
    """The peak of ``log p(y, theta)`` and the negated inverse Hessian there, by Newton's method from ``start``
    (PyMC's initial point). Then a look around it: along each principal axis, at :data:`SCAN_SDS` Laplace sd each
    way, the density must lie below the peak's (a +inf region or a higher peak out there stops the route); and a
    search for a second peak: of the prior draws ``prior_thetas`` more than 3 Laplace sd from the peak, the
    :data:`N_STARTS` with the highest ``log p(y, theta)`` climb too. Raises :class:`_NotLatent` where the first
    climb fails, the scan rises, or another climb reaches a second peak whose Laplace mass is above
    :data:`SECOND_PEAK` of the first's: one Student-t cannot serve several peaks (the chains and the modes route
    can). ``prior_thetas``: a function giving the prior draws, called only if ``clock`` leaves time for the search.
    Returns the peak, the covariance and whether the search ran."""
    first = _newton(cg, start, rng)
    if first is None:
        raise _NotLatent(f"log p(y, theta) has no peak with negative definite curvature reachable from "
                         f"{np.round(start, 4).tolist()}")
    theta, f0, cov = first
    precision = np.linalg.inv(cov)
    lam, V = np.linalg.eigh(cov)
    axes = (V * np.sqrt(lam)).T  # one Laplace sd along each principal axis
    scan = theta + np.concatenate([sign * c * axes for c in SCAN_SDS for sign in (1.0, -1.0)])
    scanned = cg.evaluate(scan, rng).log_marginal
    above = np.flatnonzero(scanned > f0)  # +inf included; NaN and failed certificates are not above
    if above.size:
        i = int(above[0])
        raise _NotLatent(f"log p(y, theta) rises again along the peak's principal axes: "
                         f"{scanned[i]:.6g} at {np.round(scan[i], 3).tolist()}, "
                         f"{SCAN_SDS[i // (2 * len(theta))]:g} Laplace sd out, above {f0:.6g} at the peak")

    def log_mass(peak):
        return peak[1] + 0.5 * np.linalg.slogdet(2 * np.pi * peak[2])[1]

    def far(points):
        gap = np.atleast_2d(points) - theta
        return np.einsum("ij,jk,ik->i", gap, precision, gap) > 9.0

    if clock.left() <= 0:
        return theta, cov, False
    prior_thetas = prior_thetas()
    if prior_thetas is not None and len(prior_thetas):
        outside = prior_thetas[far(prior_thetas)]
        values = cg.evaluate(outside, rng).log_marginal if len(outside) else np.zeros(0)
        for start_j in outside[np.argsort(-np.nan_to_num(values, nan=-np.inf))[:N_STARTS]]:
            peak = _newton(cg, start_j, rng, near=(theta, precision))
            if peak is not None and far(peak[0])[0] and log_mass(peak) - log_mass(first) > np.log(SECOND_PEAK):
                raise _NotLatent(f"log p(y, theta) has a second peak at {np.round(peak[0], 3).tolist()} (besides "
                                 f"{np.round(theta, 3).tolist()}) with a Laplace mass of "
                                 f"{np.exp(min(log_mass(peak) - log_mass(first), 50.0)):.3g} of the first's")
    return theta, cov, True


def _prior_thetas(target, split, rng):
    """:data:`N_SEARCH` prior draws of the hyperparameters alone (their prior only: drawing the latents too can
    cost seconds), or None where the prior cannot be drawn from."""
    from ..model.backend import ONE_SHOT_MODE
    from ..model.reference import prior_draws_of

    if getattr(target, "improper_priors", None):
        return None
    draws = prior_draws_of(target, split.hyper_names, rng, N_SEARCH, mode=ONE_SHOT_MODE)
    if draws is None or draws.shape[1] != len(split.hyper):
        return None
    return draws[np.all(np.isfinite(draws), axis=1)]


def _reference(mean, cov):
    """The defensive mixture ``(1 - a) t_7(mean, cov) + a t_1(mean, cov)`` with ``a = DEFENSIVE``: the Cauchy
    component keeps the weights ``p~ / q`` bounded wherever the posterior's tails are lighter than a Cauchy's
    (Hesterberg 1995), where a Student-t_7 alone gives weights of infinite variance under tails like ``|x|^-4``
    (a Cauchy posterior came out 5.5 se low, reliable). The Cauchy is cut at ``DEFENSIVE_RADIUS`` scales (its
    draws beyond reach ``e^200`` on a log scale, where a model's numbers overflow); ``q`` still covers every point
    through the Student-t_7."""
    cauchy = TruncatedStudentTReference(mean, cov, df=1.0, radius=DEFENSIVE_RADIUS)
    return MixtureReference([StudentTReference(mean, cov, df=DF), cauchy], [1.0 - DEFENSIVE, DEFENSIVE],
                            name="defensive_student_t")


def _weighted_fit(thetas, log_w, inflate):
    """The defensive reference at the weighted draws' mean and ``inflate`` times their covariance."""
    w = np.exp(log_w - np.max(log_w))
    w /= w.sum()
    mean = w @ thetas
    centred = thetas - mean
    return _reference(mean, inflate * (centred.T * w) @ centred + 1e-9 * np.eye(len(mean)))


def latent_route(target, options, rng, clock, progress=None) -> tuple[AutoRecord | None, str]:
    """``(record, "")``: the latent route (module docstring); ``(None, "")`` where the model does not have enough
    untransformed continuous variables given few hyperparameters; ``(None, why)`` where it has them but is not
    Gaussian in them, or importance sampling over the hyperparameters fails its checks: the caller's route runs."""
    split = latent_split(target)
    if split is None:
        return None, ""
    curve_rng, draw_rng, resample_rng = rng.spawn(3)  # only where the route applies: other routes keep their bits
    base = target.initial_point()
    cg = ConditionalGaussian(target, split, base)
    t_start = time.perf_counter()
    k, few = len(split.hyper), split.latent.size == 0  # few: importance sampling over every coordinate
    khat_limit = min(options.max_khat, MAX_KHAT)
    what = f"{', '.join(split.latent_names)} ({len(split.latent)} coordinates)"
    label = "importance sampling from the posterior's peak" if few else "latent Gaussian"
    try:
        if progress:
            progress(label, 0.0)
        if k == 0:
            return _exact(cg, draw_rng, what), ""
        # the certificate at the start, and the structure of P (a band and a border where the latents form a
        # chain or hang from a few global ones), from two values where P is small (m^2 gradient entries each)
        probes = [[0.0], [0.3]] if len(split.latent) <= 500 else [[0.0]]
        first = cg.learn_structure(base[split.hyper] + np.array(probes), curve_rng)
        if first.failure:
            raise _NotLatent(first.failure)
        cg.recentre(first.draw[0, 0])
        clock.mark(f"{label}: the certificate at the start" + ("" if few else f" ({type(cg.structure).__name__})"))
        mode, cov, searched = _laplace(cg, base[split.hyper], lambda: _prior_thetas(target, split, curve_rng),
                                       curve_rng, clock)
        cg.recentre(_evaluate(cg, mode[None], curve_rng).draw[0, 0])
        clock.mark(f"{label}: the peak" + (" and the search for a second one" if searched else ""))
        if progress:
            progress(label if few else "latent Gaussian: importance sampling over the hyperparameters", 0.1)
        q = _reference(mode, cov)
        per_value = (time.perf_counter() - t_start) / max(cg.n_evaluations, 1)  # seconds per value so far
        left = clock.left()
        n_pilot = N_PILOT if not np.isfinite(left) else int(np.clip(left / per_value, N_PILOT_MIN, N_PILOT))
        t0 = time.perf_counter()
        thetas = q.sample(draw_rng, n_pilot)
        out = _evaluate(cg, thetas, draw_rng)
        per_draw = (time.perf_counter() - t0) / n_pilot
        log_w = out.log_marginal - q.log_density(thetas)
        why_not = _weights_fail(log_w, khat_limit, "a pilot of")
        if why_not:  # once more from the pilot's weighted moments, covariance doubled
            q = _weighted_fit(thetas, log_w, 2.0)
            thetas = q.sample(draw_rng, n_pilot)
            out = _evaluate(cg, thetas, draw_rng)
            log_w = out.log_marginal - q.log_density(thetas)
            why_not = _weights_fail(log_w, khat_limit, "a refitted pilot of")
            if why_not:
                raise _NotLatent(f"{label}: {why_not}")
        clock.mark(f"{label}: a pilot of {n_pilot} importance draws")
        se_pilot = _importance_estimate(log_w)[0].log_z_se
        wanted = int(np.ceil(1.2 * n_pilot * (se_pilot / options.target_se) ** 2))
        n = int(np.clip(wanted, N_MIN, N_MAX))
        n_time = n_pilot + max(clock.left(), 0.0) / max(per_draw, 1e-9)  # inf without max_time
        n = int(max(n_pilot, min(n, n_time)))
        draws = [out.draw[:, 0]]
        if n > n_pilot:
            more = q.sample(draw_rng, n - n_pilot)
            extra = _evaluate(cg, more, draw_rng)
            log_w = np.concatenate([log_w, extra.log_marginal - q.log_density(more)])
            draws.append(extra.draw[:, 0])
        X = np.concatenate(draws)
        why_not = _weights_fail(log_w, khat_limit, "all")
        if why_not:  # tails heavier than the Student-t's, seen only on all draws: the chains instead
            raise _NotLatent(f"{label}: {why_not}")
    except _NotLatent as why:
        return None, str(why)
    n = len(log_w) - len(log_w) % 2
    estimates, records = {}, {}
    pool = "is_laplace" if few else "is_latent"
    for name, part in ((pool, log_w[:n]), ("is_a", log_w[: n // 2]), ("is_b", log_w[n // 2 : n])):
        estimates[name], records[name] = _importance_estimate(part)
    quarters = np.split(np.arange(n - n % 4), 4)
    size = min(1000, n // 4)
    posterior = np.stack([X[i[systematic_resample(resample_rng, log_w[i], size)]] for i in quarters])
    if few:
        reason = (f"{k} coordinates ({', '.join(split.hyper_names)}): {n} draws of a Student-t at the posterior's "
                  f"peak are weighted by importance ({cg.n_evaluations} log density evaluations in all)")
    else:
        reason = (f"the log density is Gaussian in {what} given {', '.join(split.hyper_names)} ({k} coordinates): "
                  f"the latents are integrated out exactly and {n} hyperparameter draws of a Student-t fitted at "
                  f"their peak are weighted by importance ({cg.n_evaluations} conditional Gaussians in all)")
    unreliable = ""
    wanted = min(max(wanted, N_MIN), N_MAX)
    if not searched:
        unreliable = "max_time was spent before the search for a second peak of the importance weights' target"
    elif n < wanted and clock.left() <= 0:
        unreliable = f"max_time was spent after {n} of the {wanted} importance draws wanted"
    record = AutoRecord(route="importance" if few else "latent", reason=reason, estimates=estimates,
                        records=records, primary=pool, smc_posterior=posterior, unreliable=unreliable)
    return record, ""


def _exact(cg, rng, what) -> AutoRecord:
    """No hyperparameters: the model is Gaussian, log Z is the closed form and the draws are exact."""
    out = _evaluate(cg, np.zeros((1, 0)), rng, n_each=4 * N_EXACT_DRAWS)
    log_z = float(out.log_marginal[0])
    estimate = EvidenceEstimate(log_z=log_z, log_z_se=0.0, method="latent_gaussian", diagnostics=Diagnostics())
    reason = (f"the log density is Gaussian in every free variable, {what}: log Z is the Gaussian integral, "
              "exact (se 0), and the posterior draws are exact")
    return AutoRecord(route="latent", reason=reason, estimates={"latent": estimate}, primary="latent",
                      smc_posterior=out.draw[0].reshape(4, N_EXACT_DRAWS, -1))
