"""Peaks of the log density found through the branches of its mixtures (:mod:`pmz.model.mixture_branches`).

A narrow mixture component far from the bulk is dominant only in a ball about separation / width-ratio wide: no
climb from prior draws, chain or SMC particle comes near it, so a search that only climbs the log density misses it
(a 2-D bump 1000 times narrower than the main mode holding 30% of the mass: every climb of the importance route's
search ended in the main mode, and the answer was log 0.7 low with se 0.01, reliable). Its branch (the log density
with the mixture replaced by that one component) is smooth and has its peak at the component: Newton's method on
the branch from the known peak reaches it in a step or two, and Newton's method on the log density itself from there
finishes the peak and gives its curvature, hence its Laplace mass ``log p~(peak) + log det(2 pi Sigma) / 2``.

:func:`branch_peaks` does both for every branch and start, batched: each Newton step one call of the branch (or
log density) function on the central-difference stencils (``2 dim^2 + 1`` points each) of every point still moving,
steps of :data:`REL_STEP` of each coordinate's current Laplace sd, so that a component 1e4 times narrower than the
bulk is measured on its own scale. Used by the default's independent checks for a missed mode
(:func:`pmz.runners.draw_trust.branch_modes`, the importance route's second-peak search).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["BranchPeaks", "branch_peaks", "has_branches", "newton_peaks", "MAX_DIM"]

MAX_DIM = 40  # coordinates up to which the search runs (a stencil of 2 dim^2 + 1 points per Newton step)
N_NEWTON = 40  # Newton steps at most
REL_STEP = 1e-3  # stencil step, in each coordinate's current Laplace sd
N_HALVINGS = 40  # backtracking halvings of a Newton step that does not raise the value


@dataclass(frozen=True)
class BranchPeaks:
    """Distinct peaks of the log density reached from the branches' peaks: ``points (n, dim)``, the log density
    there ``heights (n,)``, their inverse curvatures ``covs (n, dim, dim)`` and Laplace ``log_masses (n,)``, the
    largest mass first."""

    points: np.ndarray
    heights: np.ndarray
    covs: np.ndarray
    log_masses: np.ndarray

    @staticmethod
    def none(dim: int) -> BranchPeaks:
        return BranchPeaks(np.zeros((0, dim)), np.zeros(0), np.zeros((0, dim, dim)), np.zeros(0))


def has_branches(compiled) -> bool:
    """Whether :func:`branch_peaks` has anything to climb: a mixture pmz can read, in at most :data:`MAX_DIM`
    coordinates (cheap: the graph is read once per compiled model)."""
    from ..model.mixture_branches import branch_densities

    return compiled.dim <= MAX_DIM and branch_densities(compiled) is not None


def branch_peaks(compiled, starts, cov) -> BranchPeaks:
    """Newton's method on every branch of every mixture in ``compiled``'s log density from every row of ``starts``
    (stencils scaled by ``cov`` at first), then on the log density itself from each branch peak; the distinct
    peaks it finishes (module docstring). None found where the log density has no mixture pmz can read or more
    than :data:`MAX_DIM` coordinates."""
    from ..model.mixture_branches import branch_densities

    dim = compiled.dim
    branches = branch_densities(compiled) if dim <= MAX_DIM else None
    starts = np.atleast_2d(np.asarray(starts, dtype=float))
    if branches is None or not starts.shape[0]:
        return BranchPeaks.none(dim)
    n_b = branches.n_branches
    owner = np.tile(np.arange(n_b), starts.shape[0])
    points = np.repeat(starts, n_b, axis=0)
    cov = np.broadcast_to(np.atleast_2d(cov), (points.shape[0], dim, dim)).copy()

    def branch_value(X, rows):
        return branches(X)[np.arange(X.shape[0]), rows]

    def log_density(X, rows):
        lp, ll = compiled.log_densities(X)
        with np.errstate(invalid="ignore"):
            value = np.asarray(lp + ll, dtype=float)
        return np.where(np.isnan(value), -np.inf, value)

    peaks, _, covs, ok = newton_peaks(branch_value, points, owner, cov)
    keep = _distinct(peaks[ok], covs[ok])
    peaks, covs = peaks[ok][keep], covs[ok][keep]
    if not peaks.shape[0]:
        return BranchPeaks.none(dim)
    peaks, heights, covs, ok = newton_peaks(log_density, peaks, np.zeros(peaks.shape[0], dtype=int), covs)
    peaks, heights, covs = peaks[ok], heights[ok], covs[ok]
    log_masses = heights + 0.5 * np.array([np.linalg.slogdet(2.0 * np.pi * c)[1] for c in covs])
    order = np.argsort(-log_masses, kind="stable")
    keep = order[_distinct(peaks[order], covs[order])]
    return BranchPeaks(peaks[keep], heights[keep], covs[keep], log_masses[keep])


def newton_peaks(values, starts, rows, covs, n_steps: int = N_NEWTON):
    """Batched Newton's method: ``values(X (n, dim), rows (n,)) -> (n,)`` is the function each start climbs
    (``rows`` tells which, e.g. a branch), ``starts (n, dim)`` where, ``covs (n, dim, dim)`` the scales of the
    first stencils (each then rescaled by the inverse curvature found). Each step: the gradient and Hessian by
    central differences at every point still moving, the Newton step (eigenvalues of the Hessian taken in absolute
    value and floored at 1e-3 of the largest: uphill even where not concave), halved until the value rises.
    Returns ``(points, values, covs, ok)``: ``ok`` where the last stencil found a finite value and a negative
    definite Hessian (then ``covs`` is its negated inverse)."""
    points = np.array(starts, dtype=float)
    covs = np.array(covs, dtype=float)
    n, dim = points.shape
    moving = np.ones(n, dtype=bool)
    for _ in range(n_steps):
        idx = np.flatnonzero(moving)
        if not idx.size:
            break
        f0, grad, hess = _derivatives(values, points[idx], rows[idx], covs[idx])
        lam, V = np.linalg.eigh(-hess)
        concave = np.all(np.isfinite(lam), axis=1) & (lam.min(axis=1, initial=np.inf) > 0)
        covs[idx[concave]] = np.einsum("nij,nj,nkj->nik", V[concave], 1.0 / lam[concave], V[concave])
        lam = np.maximum(np.abs(lam), 1e-3 * np.maximum(np.abs(lam).max(axis=1, keepdims=True), 1e-300))
        step = np.einsum("nij,nj->ni", V, np.einsum("nji,nj->ni", V, grad) / lam)
        gain = np.einsum("ni,ni->n", grad, step)
        finite = np.isfinite(f0) & np.all(np.isfinite(step), axis=1)
        go = finite & (gain > 1e-9)
        moving[idx[~go]] = False
        idx, step, f0 = idx[go], step[go], f0[go]
        for _ in range(N_HALVINGS):
            if not idx.size:
                break
            trial = values(points[idx] + step, rows[idx])
            up = np.isfinite(trial) & (trial >= f0)
            points[idx[up]] += step[up]
            idx, step, f0 = idx[~up], 0.5 * step[~up], f0[~up]
        moving[idx] = False  # no rise even after the halvings: as far as it goes
    f0, _, hess = _derivatives(values, points, rows, covs)
    lam, V = np.linalg.eigh(-hess)
    ok = np.isfinite(f0) & np.all(np.isfinite(lam), axis=1) & (lam.min(axis=1, initial=np.inf) > 0)
    covs[ok] = np.einsum("nij,nj,nkj->nik", V[ok], 1.0 / lam[ok], V[ok])
    return points, f0, covs, ok


def _derivatives(values, points, rows, covs):
    """Value, gradient and Hessian at each row of ``points`` by central differences
    (:func:`pmz.runners.finite_differences.central_derivatives`), steps of :data:`REL_STEP` of each coordinate's
    sd in ``covs``; a point with a value that is not finite anywhere on its stencil, or derivatives that are not,
    gets ``f0 = -inf`` (it stops, and is no peak) and zero derivatives."""
    from .finite_differences import central_derivatives

    h = REL_STEP * np.sqrt(np.abs(np.einsum("nii->ni", covs)))
    h = np.where(np.isfinite(h) & (h > 0), h, REL_STEP)
    per_point = 1 + 2 * points.shape[1] ** 2  # stencil points per point
    f0, grad, hess, f = central_derivatives(lambda X: values(X, np.repeat(rows, per_point)), points, h)
    bad = ~(np.all(np.isfinite(f), axis=1) & np.all(np.isfinite(grad), axis=1)
            & np.all(np.isfinite(hess), axis=(1, 2)))
    f0 = np.where(bad, -np.inf, f0)
    grad[bad], hess[bad] = 0.0, 0.0
    return f0, grad, hess


def _distinct(points, covs) -> list:
    """Indices of the rows of ``points`` (in order) more than 3 sd (in the narrower of the two ``covs``) from every
    row kept before."""
    kept = []
    for i in range(points.shape[0]):
        if all(max(_mahalanobis2(points[i], points[j], covs[j]), _mahalanobis2(points[j], points[i], covs[i])) > 9.0
               for j in kept):
            kept.append(i)
    return kept


def _mahalanobis2(a, b, cov) -> float:
    gap = np.asarray(a) - np.asarray(b)
    try:
        return float(gap @ np.linalg.solve(cov, gap))
    except np.linalg.LinAlgError:
        return np.inf
