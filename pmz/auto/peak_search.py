"""The peak of ``log p(y, theta)`` over a few hyperparameters, and a look around it (the latent and importance
routes of the default, :mod:`pmz.auto.hyper_importance`).

``log p(y, theta)`` comes from :class:`pmz.model.latent_gaussian.ConditionalGaussian`: the latents integrated out
exactly where the density is Gaussian in them (or, with no latents, the log density itself). Newton's method with
central finite differences finds the peak and the curvature there (each Newton step one batched evaluation of the
``2k^2 + 1`` stencil points); then the density must fall along the peak's principal axes out to :data:`SCAN_SDS`
Laplace sd, and a search for a second peak runs: a second peak with more than :data:`SECOND_PEAK` of the first's
Laplace mass stops the route (one Student-t cannot serve two).

The search is the route's independent check against a missed mode. With latents (each value a Cholesky
factorisation) the :data:`N_STARTS` best prior draws more than 3 Laplace sd away climb by Newton's method. With no
latents (the importance route: at most 30 coordinates, each value one cheap density call) every prior draw more
than 3 Laplace sd away and :data:`N_DISPERSED` points spread from 4 to 32 Laplace sd around the peak climb
together, one batched gradient call per step (:func:`pmz.runners.modes.climb`), and the best point of each basin
they reach (at most :data:`N_BASINS`) is finished by Newton's method: a 2-D posterior whose second mode (3% of the
mass, 50 sd away) lay where none of the four best prior draws climbed came out 3.3 se low, reliable, before. There
too, the peaks that the branches of a mixture in the log density lead to are second-peak candidates
(:func:`pmz.runners.branch_search.branch_peaks`): a component 1e4 times narrower than the bulk, whose basin no climb
reaches, holding 30% of the mass, was left out (log 0.7 low, se 0.011, reliable).
"""

from __future__ import annotations

import numpy as np

__all__ = ["NotApplicable", "SCAN_SDS", "N_STARTS", "N_DISPERSED", "N_PRIOR_CLIMBS", "N_BASINS", "SECOND_PEAK",
           "evaluate", "laplace", "refined_peak"]

STEP = 1e-3  # finite-difference step in the unconstrained hyperparameters
NEWTON_STEPS = 30
MAX_STEP = 2.0  # largest Newton move in any unconstrained hyperparameter (a factor e^2 on a log scale)
SCAN_SDS = (2.0, 4.0, 6.0, 8.0, 12.0, 16.0)  # Laplace sd along each principal axis where the density must be lower
N_STARTS = 4  # with latents: the best this many prior draws outside the first peak climb by Newton's method
N_DISPERSED = 16  # without latents: points spread around the peak that climb besides the prior draws outside it
N_PRIOR_CLIMBS = 32  # ... and at most this many of those prior draws (evenly spaced among them)
FD_STEP = 1e-4  # forward-difference step of the climb's gradient, in Laplace sd
DISPERSED_SDS = (4.0, 8.0, 16.0, 32.0)  # ... at these many Laplace sd (a quarter at each)
N_CLIMB_STEPS = 40  # steps of the batched climb (each at most 1.5 times the last: far enough in 40)
N_BASINS = 8  # basins reached by the batched climb that Newton's method finishes (the highest first)
SECOND_PEAK = 1e-3  # Laplace mass of a second peak, relative to the first, above which the route stops


class NotApplicable(Exception):
    """The route cannot answer at this model: not Gaussian in its latents at some hyperparameter value, no peak, a
    second peak, or importance weights that fail their checks. Its message is the reason the route hands over."""


def _stencil_derivatives(cg, theta, rng):
    """``(value, gradient, Hessian, stencil values)`` of ``log p(y, theta)`` at ``theta (k,)`` by central
    differences with steps :data:`STEP` (:func:`pmz.runners.finite_differences.central_derivatives`: one batched
    evaluation of the ``2k^2 + 1`` stencil points), or None where a stencil point fails its certificate."""
    from ..runners.finite_differences import central_derivatives

    failures = []

    def values(points):
        out = cg.evaluate(points, rng)
        failures.append(out.failure)
        return out.log_marginal

    f0, grad, hess, f = central_derivatives(values, theta[None], np.full((1, theta.size), STEP))
    return None if failures[0] else (f0[0], grad[0], hess[0], f[0])


def evaluate(cg, thetas, rng, n_each=1):
    """``cg.evaluate``, raising :class:`NotApplicable` where the certificate fails at some value."""
    out = cg.evaluate(thetas, rng, n_each=n_each)
    if out.failure:
        raise NotApplicable(out.failure)
    return out


def _newton(cg, theta0, rng, near=None):
    """Newton's method on ``log p(y, theta)`` from ``theta0`` (steps of at most ``MAX_STEP``, backtracking):
    ``(peak, value, covariance)`` with the negated inverse Hessian there, or None where it fails (a value that is
    not finite or fails its certificate at the start, no negative definite curvature at the end) or, given
    ``near = (peak, precision)``, where it comes within 3 sd of that peak (the same peak: no need to finish)."""
    theta = np.asarray(theta0, dtype=float)
    for _ in range(NEWTON_STEPS):
        if near is not None and (theta - near[0]) @ near[1] @ (theta - near[0]) < 9.0:
            return None
        derivatives = _stencil_derivatives(cg, theta, rng)
        if derivatives is None:
            return None
        f0, grad, hess, stencil = derivatives
        if not np.all(np.isfinite(stencil)):
            return None
        lam, V = np.linalg.eigh(-hess)
        lam = np.maximum(np.abs(lam), 1e-3 * max(np.abs(lam).max(), 1e-8))  # a step uphill even where not concave
        step = V @ ((V.T @ grad) / lam)
        if float(grad @ step) < 1e-9:
            break
        step *= min(1.0, MAX_STEP / np.max(np.abs(step)))
        for _ in range(30):  # backtrack until log p(y, theta) rises (a failed certificate there counts as lower)
            trial = cg.evaluate((theta + step)[None], rng)
            if not trial.failure and trial.log_marginal[0] >= f0:
                break
            step = 0.5 * step
        theta = theta + step
        if np.max(np.abs(step)) < 1e-6:
            break
    derivatives = _stencil_derivatives(cg, theta, rng)
    if derivatives is None:
        return None
    f0, _, hess, _ = derivatives
    lam, V = np.linalg.eigh(-hess)
    if not (np.isfinite(f0) and np.all(np.isfinite(lam)) and lam.min() > 0):
        return None
    return theta, f0, (V / lam) @ V.T


def refined_peak(cg, theta, cov, rng):
    """The peak and negated inverse Hessian of ``log p(y, theta)`` found again by Newton's method from ``theta``,
    where ``cg``'s values have changed from those the first search climbed (the Laplace route: the Laplace
    approximation first, then the groupwise quadrature, whose error grows with the number of groups while the peak's
    width shrinks); ``(theta, cov)`` as they were where the climb fails."""
    peak = _newton(cg, theta, rng)
    return (theta, cov) if peak is None else (peak[0], peak[2])


def laplace(cg, start, prior_thetas, rng, clock):
    """The peak of ``log p(y, theta)`` and the negated inverse Hessian there, by Newton's method from ``start``
    (PyMC's initial point). Then a look around it: along each principal axis, at :data:`SCAN_SDS` Laplace sd each
    way, the density must lie below the peak's (a +inf region or a higher peak out there stops the route); and a
    search for a second peak: of the prior draws ``prior_thetas`` more than 3 Laplace sd from the peak, the
    :data:`N_STARTS` with the highest ``log p(y, theta)`` climb too. Raises :class:`NotApplicable` where the first
    climb fails, the scan rises, or another climb reaches a second peak whose Laplace mass is above
    :data:`SECOND_PEAK` of the first's: one Student-t cannot serve several peaks (the chains and the modes route
    can). ``prior_thetas``: a function giving the prior draws, called only if ``clock`` leaves time for the search.
    Returns the peak, the covariance and whether the search ran."""
    first = _newton(cg, start, rng)
    if first is None:
        raise NotApplicable(f"log p(y, theta) has no peak with negative definite curvature reachable from "
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
        raise NotApplicable(f"log p(y, theta) rises again along the peak's principal axes: "
                            f"{scanned[i]:.6g} at {np.round(scan[i], 3).tolist()}, "
                            f"{SCAN_SDS[i // (2 * len(theta))]:g} Laplace sd out, above {f0:.6g} at the peak")

    def log_mass(peak):
        return peak[1] + 0.5 * np.linalg.slogdet(2 * np.pi * peak[2])[1]

    def far(points):
        return _mahalanobis2(points, theta, precision) > 9.0

    if clock.left() <= 0:
        return theta, cov, False
    first_mass = log_mass(first)
    for peak in _second_peaks(cg, first, prior_thetas(), rng):
        if far(peak[0])[0] and log_mass(peak) - first_mass > np.log(SECOND_PEAK):
            raise NotApplicable(
                f"log p(y, theta) has a second peak at {np.round(peak[0], 3).tolist()} (besides "
                f"{np.round(theta, 3).tolist()}) with a Laplace mass of "
                f"{np.exp(min(log_mass(peak) - first_mass, 50.0)):.3g} of the first's")
    return theta, cov, True


def _mahalanobis2(points, centre, precision) -> np.ndarray:
    gap = np.atleast_2d(points) - centre
    return np.einsum("ij,jk,ik->i", gap, precision, gap)


def _second_peaks(cg, first, prior_thetas, rng):
    """Peaks other than ``first = (theta, value, cov)`` reached from the prior draws outside it (and, without
    latents, from points spread around it), each ``(peak, value, cov)`` (module docstring)."""
    theta, _, cov = first
    precision = np.linalg.inv(cov)
    outside = np.zeros((0, theta.size))
    if prior_thetas is not None and len(prior_thetas):
        outside = prior_thetas[_mahalanobis2(prior_thetas, theta, precision) > 9.0]
    if cg.m:  # each value a factorisation: Newton's method from the best few prior draws
        values = cg.evaluate(outside, rng).log_marginal if len(outside) else np.zeros(0)
        starts = outside[np.argsort(-np.nan_to_num(values, nan=-np.inf))[:N_STARTS]]
    else:
        spaced = outside[np.unique(np.linspace(0, len(outside) - 1, N_PRIOR_CLIMBS).astype(int))] if len(
            outside) else outside
        starts = _basins(cg, theta, cov, np.concatenate([spaced, _dispersed(theta, cov, rng)]))
    peaks = (_newton(cg, start, rng, near=(theta, precision)) for start in starts)
    found = [peak for peak in peaks if peak is not None]
    return found if cg.m else found + _branch_peaks(cg, theta, cov)


def _branch_peaks(cg, theta, cov) -> list:
    """Without latents: the peaks that the branches of a mixture in the log density lead to, from the first peak
    (:func:`pmz.runners.branch_search.branch_peaks`; a narrow component whose basin no climb reaches), each
    ``(peak, value, cov)`` in the hyperparameters' order."""
    from ..runners.branch_search import branch_peaks

    hyper = np.asarray(cg.split.hyper)
    x = np.empty(cg.target.dim)
    x[hyper] = theta
    cov_x = np.empty((cg.target.dim, cg.target.dim))
    cov_x[np.ix_(hyper, hyper)] = cov
    found = branch_peaks(cg.target, x, cov_x)
    return [(point[hyper], float(height), c[np.ix_(hyper, hyper)])
            for point, height, c in zip(found.points, found.heights, found.covs)]


def _dispersed(theta, cov, rng) -> np.ndarray:
    """:data:`N_DISPERSED` points around ``theta`` in random directions, a quarter at each of
    :data:`DISPERSED_SDS` Laplace sd (in the metric of ``cov``)."""
    k = theta.size
    z = rng.standard_normal((N_DISPERSED, k))
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    radius = np.repeat(DISPERSED_SDS, -(-N_DISPERSED // len(DISPERSED_SDS)))[:N_DISPERSED]
    return theta + (radius[:, None] * z) @ np.linalg.cholesky(cov).T


def _basins(cg, theta, cov, starts) -> np.ndarray:
    """The batched climb from ``starts`` on the log density itself (no latents; gradients by forward differences, so
    that the route compiles no gradient), each point stopping once within 3 Laplace sd of the first peak; then the
    highest point of each basin reached outside it (single linkage at 3 Laplace sd; at most :data:`N_BASINS`)."""
    from ..runners.modes import climb

    if not len(starts):
        return starts
    precision = np.linalg.inv(cov)
    scale = np.sqrt(np.diag(cov))

    def at_the_first_peak(points):  # that basin is known: the point stops climbing
        return _mahalanobis2(points, theta, precision) <= 9.0

    points, values = climb(_ForwardDifferences(cg, FD_STEP * scale), starts, scale, n_steps=N_CLIMB_STEPS,
                           done=at_the_first_peak)
    keep = np.isfinite(values) & ~at_the_first_peak(points)
    points, values = points[keep], values[keep]
    chosen = []
    for i in np.argsort(-values):  # the highest point of each basin, at least 3 Laplace sd from every one chosen
        if all(_mahalanobis2(points[i], points[j], precision)[0] > 9.0 for j in chosen):
            chosen.append(i)
            if len(chosen) == N_BASINS:
                break
    return points[chosen]


class _ForwardDifferences:
    """``log p(y, theta)`` of a model without latents and its gradient by forward differences (steps ``h`` per
    coordinate), in the form :func:`pmz.runners.modes.climb` reads: one batched density call of ``n (k + 1)``
    points per step."""

    def __init__(self, cg, h):
        self.cg, self.h = cg, np.asarray(h, dtype=float)

    def log_densities_and_grads(self, thetas):
        n, k = thetas.shape
        shifted = thetas[:, None, :] + np.concatenate([np.zeros((1, k)), np.diag(self.h)])[None]
        values = self.cg.evaluate(shifted.reshape(-1, k), None).log_marginal.reshape(n, k + 1)
        with np.errstate(invalid="ignore"):
            grad = (values[:, 1:] - values[:, :1]) / self.h
        return values[:, 0], np.zeros(n), grad, np.zeros_like(grad)
