"""Modes found by many chains: which chains sit together, a reference per mode, and each mode's mass.

Chains started at dispersed points and run on a multimodal posterior settle in different modes and stay there;
their pooled draws then say nothing about the modes' relative masses. This module turns such chains into a
reference that covers every mode they found:

1. :func:`cluster_chains` groups chains whose locations agree. Chain ``i``'s mean ``m_i`` and the pooled
   within-chain standard deviation ``s_k`` of each coordinate give the distance
   ``d_ij = max_k |m_ik - m_jk| / s_k`` (``s_k`` the median over chains of their sd: a few wide chains do not
   blur the rest); chains closer than ``threshold`` (3 within-chain sd) are linked, and the
   clusters are the connected groups (single linkage). Chains in one mode differ by about ``s / sqrt(ESS)``;
   separate modes by many ``s``. Splitting one mode in two costs efficiency only (two components there).
2. :func:`fit_mode_components`: a Gaussian (or Student-t) per cluster in the unconstrained space, its covariance
   shrunk towards its diagonal when the cluster has few draws per dimension.
3. :func:`mode_masses`: each component's mass by importance sampling from it,
   ``Z_c = E_{q_c}[p~(x) / q_c(x)]`` (the posterior mass near mode ``c`` times Z), with its se and Pareto k-hat.
   The chains' proportions are not used (they follow the starts, not the masses).

The mixture ``sum_c w_c q_c`` with ``w_c`` proportional to the masses is where the multimodal route's tempered
path starts (:mod:`pmz.auto.modes_route`); its estimate is unbiased for ``Z`` whatever the weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from ..model.mixture_reference import MixtureReference
from ..model.reference import STUDENT_T_DF, GaussianReference, StudentTReference
from ..sample_diagnostics import pareto_khat
from ..weights import log_mean_weight, log_mean_weight_se

__all__ = [
    "ModeSummary",
    "climb",
    "cluster_chains",
    "curved_mode_components",
    "fit_mode_components",
    "mode_masses",
    "mode_reference",
    "new_modes",
    "outside_clusters",
]


def cluster_chains(x, threshold: float = 3.0) -> np.ndarray:
    """Cluster label of every chain (0, 1, ... in order of first appearance); ``x`` has shape (chain, draw, dim).

    Single linkage on ``d_ij = max_k |m_ik - m_jk| / s_k`` (module docstring) with ``d_ij < threshold``.

    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(6, 200, 2)) + np.array([0, 0, 0, 8, 8, 8])[:, None, None]
    >>> cluster_chains(x).tolist()
    [0, 0, 0, 1, 1, 1]
    """
    x = np.asarray(x, dtype=float)
    means = x.mean(axis=1)
    within = _within_sd(x)
    return _single_linkage(np.max(np.abs(means[:, None, :] - means[None, :, :]) / within, axis=2), threshold)


def _within_sd(x) -> np.ndarray:
    """Per coordinate, the median over chains of each chain's sd (1 where it is 0): the unit of the distances
    between chains (a few wide or stuck chains do not change it)."""
    within = np.median(x.std(axis=1, ddof=1), axis=0)
    return np.where(within > 0, within, 1.0)


def _single_linkage(distance, threshold) -> np.ndarray:
    """Groups of the items linked by ``distance < threshold`` (connected components), labelled 0, 1, ... in order
    of first appearance."""
    n = distance.shape[0]
    parent = np.arange(n)

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in zip(*np.nonzero(distance < threshold)):
        parent[root(i)] = root(j)
    roots = [root(i) for i in range(n)]
    order = {r: k for k, r in enumerate(dict.fromkeys(roots))}
    return np.array([order[r] for r in roots])


def climb(compiled, X, scale, *, n_steps: int = 100, first_step: float = 0.5, done=None):
    """Batched hill climbing on ``log p~`` from every row of ``X (n, dim)``: each point moves along its gradient
    ``g`` in the metric ``scale`` (per-coordinate lengths), ``x <- x + eta D g / sqrt(g' D g)``,
    ``D = diag(scale^2)`` (a step of length ``eta`` in units of ``scale``); a step
    that raises the density is kept and ``eta`` grows by 1.5, otherwise it is undone and ``eta`` halves. The
    normalised step makes it indifferent to the gradient's size (huge where a term overflows). One compiled
    gradient call per step for the points still moving. ``done`` (optional): a function of the points
    ``(m, dim) -> bool (m,)`` marking those that need not move further (e.g. they reached a peak already known);
    they stop where they are. Returns the points and their log densities (local maxima, near enough, after
    ``n_steps``)."""
    X = np.array(X, dtype=float)
    lp, ll, glp, gll = compiled.log_densities_and_grads(X)
    value, grad = lp + ll, glp + gll
    eta = np.full(X.shape[0], float(first_step))
    moving = np.ones(X.shape[0], dtype=bool) if done is None else ~np.asarray(done(X), dtype=bool)
    for _ in range(n_steps):
        idx = np.flatnonzero(moving)
        if not idx.size:
            break
        direction = grad[idx] * scale**2
        norm = np.sqrt(np.sum((direction / scale) ** 2, axis=1))
        ok = np.isfinite(value[idx]) & np.isfinite(norm) & (norm > 0)
        step = np.where(ok[:, None], eta[idx, None] * direction / np.where(ok, norm, 1.0)[:, None], 0.0)
        lp, ll, glp, gll = compiled.log_densities_and_grads(X[idx] + step)
        new = lp + ll
        better = ok & np.isfinite(new) & (new > value[idx])
        X[idx[better]] += step[better]
        value[idx] = np.where(better, new, value[idx])
        grad[idx] = np.where(better[:, None], glp + gll, grad[idx])
        eta[idx] = np.where(better, 1.5 * eta[idx], 0.5 * eta[idx])
        if done is not None:
            moving[idx[better]] = ~np.asarray(done(X[idx[better]]), dtype=bool)
    return X, value


def new_modes(x, labels, points, values, *, threshold: float = 3.0, min_log_density=-np.inf, counts=False):
    """Points (one per group) that lie in none of the chains' clusters: at least ``threshold`` within-chain sd
    (:func:`cluster_chains`' distance) from every cluster's mean, grouped by the same single linkage, each group
    represented by its highest point; only points with log density above ``min_log_density``. With ``counts``:
    ``(points, sizes)``, the number of the given points in each group as well."""
    x = np.asarray(x, dtype=float)
    within = _within_sd(x)
    keep = np.isfinite(values) & (values > min_log_density)
    points, values = points[keep], values[keep]
    far = outside_clusters(x, labels, points, threshold=threshold)
    points, values = points[far], values[far]
    if points.shape[0] == 0:
        return (points, np.zeros(0, dtype=int)) if counts else points
    groups = _single_linkage(np.max(np.abs(points[:, None, :] - points[None, :, :]) / within, axis=2), threshold)
    best = [np.flatnonzero(groups == g)[np.argmax(values[groups == g])] for g in np.unique(groups)]
    if counts:
        return points[best], np.array([int(np.sum(groups == g)) for g in np.unique(groups)])
    return points[best]


def outside_clusters(x, labels, points, *, threshold: float = 3.0) -> np.ndarray:
    """Which ``points (n, dim)`` lie at least ``threshold`` within-chain sd (:func:`cluster_chains`' distance)
    from the mean of every cluster of the chains ``x`` (chain, draw, dim) labelled ``labels``."""
    x, points = np.asarray(x, dtype=float), np.atleast_2d(points)
    if not points.shape[0]:
        return np.zeros(0, dtype=bool)
    within = _within_sd(x)
    means = np.array([x[labels == c].reshape(-1, x.shape[2]).mean(axis=0) for c in range(int(labels.max()) + 1)])
    return np.min(np.max(np.abs(points[:, None, :] - means[None]) / within, axis=2), axis=1) >= threshold


def laplace_log_masses(compiled, peaks, cov, *, max_decrement: float = 2.0) -> np.ndarray:
    """Laplace log masses ``log p~(peak) + log det(2 pi Sigma) / 2`` of climbed points, ``Sigma`` the inverse
    curvature there (:func:`pmz.model.reference.curvature_reference`, measured along ``cov``'s Cholesky factor);
    ``-inf`` where the point is no peak: the curvature not positive definite, or a Newton decrement
    ``g' Sigma g`` above ``max_decrement`` (a slope the climb did not finish, e.g. a funnel's neck)."""
    from ..model.reference import curvature_reference

    peaks = np.atleast_2d(peaks)
    lp, ll, glp, gll = compiled.log_densities_and_grads(peaks)
    out = np.full(peaks.shape[0], -np.inf)
    for i, (peak, height, grad) in enumerate(zip(peaks, lp + ll, glp + gll)):
        curved = curvature_reference(compiled, peak, cov)
        if curved is None or not float(grad @ curved.cov @ grad) <= max_decrement or not np.isfinite(height):
            continue
        out[i] = float(height) + 0.5 * np.linalg.slogdet(2.0 * np.pi * np.atleast_2d(curved.cov))[1]
    return out


def _shrunk_covariance(X) -> np.ndarray:
    """Sample covariance shrunk towards its diagonal by ``lambda = min(1, dim / n)``: well conditioned with few
    draws per dimension, the sample covariance when there are many."""
    n, dim = X.shape
    cov = np.atleast_2d(np.cov(X, rowvar=False))
    lam = min(1.0, dim / max(n, 1))
    cov = (1 - lam) * cov + lam * np.diag(np.diag(cov))
    floor = 1e-10 * max(np.trace(cov) / dim, 1e-12)
    return cov + floor * np.eye(dim)


def fit_mode_components(x, labels, *, kind: str = "gaussian", inflate: float = 1.2,
                        df: float = STUDENT_T_DF) -> list:
    """One reference per cluster of chains, fitted to all its chains' draws (``x``: chain, draw, dim).

    The covariance is :func:`_shrunk_covariance` times ``inflate**2`` (a little wider than the mode, so that the
    component covers its tails); ``kind="student_t"`` gives heavier tails with ``df`` degrees of freedom.
    """
    components = []
    for c in range(int(labels.max()) + 1):
        X = x[labels == c].reshape(-1, x.shape[2])
        cov = _shrunk_covariance(X) * inflate**2
        if kind == "student_t":
            components.append(StudentTReference(X.mean(axis=0), cov * (df - 2) / df, df, name=f"mode {c}"))
        else:
            components.append(GaussianReference(X.mean(axis=0), cov, name=f"mode {c}"))
    return components


def curved_mode_components(x, labels, rng: np.random.Generator, *, inflate: float = 1.2,
                           df: float = STUDENT_T_DF) -> list:
    """One reference per cluster of chains that follows a curved or thin mode: a mixture of Student-t components
    (``df`` degrees of freedom) at the Gaussian components EM fits to the cluster's draws, their number chosen by
    BIC (:func:`pmz.model.mixture_fit.mixture_by_bic`: 1 where one component is enough, up to 32 along a ring),
    each covariance times ``inflate**2`` as in :func:`fit_mode_components`. A cluster where BIC keeps one component
    (or whose draws are too few for two) keeps :func:`fit_mode_components`'s."""
    from ..model.mixture_fit import mixture_by_bic

    components = fit_mode_components(x, labels, kind="student_t", inflate=inflate, df=df)
    for c in range(len(components)):
        fit = mixture_by_bic(x[labels == c].reshape(-1, x.shape[2]), rng)
        if fit.n_components > 1:
            parts = [StudentTReference(mean, cov * inflate**2 * (df - 2) / df, df, name=f"mode {c}.{k}")
                     for k, (mean, cov) in enumerate(zip(fit.means, fit.covs))]
            components[c] = MixtureReference(parts, fit.weights, name=f"mode {c}")
    return components


@dataclass(frozen=True)
class ModeSummary:
    """What the chains found: one entry per mode (cluster of chains).

    Attributes
    ----------
    labels : ndarray (n_chains,)
        Each chain's mode (-1: a cluster of negligible mass, left out).
    log_mass : ndarray (n_modes,)
        ``log Z_c``: log of the posterior mass near mode ``c`` times Z, by importance sampling from its component.
    log_mass_se : ndarray (n_modes,)
        Delta-method se of ``log Z_c``.
    pareto_khat : ndarray (n_modes,)
        Pareto k-hat of each component's importance weights (> 0.7: that mass is not to be trusted).
    location : ndarray (n_modes, dim)
        Each component's mean (flat unconstrained space).
    n_logp_evals : int
    """

    labels: np.ndarray
    log_mass: np.ndarray
    log_mass_se: np.ndarray
    pareto_khat: np.ndarray
    location: np.ndarray
    n_logp_evals: int

    @property
    def n_modes(self) -> int:
        return int(self.log_mass.size)

    @property
    def masses(self) -> np.ndarray:
        """Relative masses ``Z_c / sum_c Z_c`` (they double count where two components share one mode)."""
        finite = np.isfinite(self.log_mass)
        if not finite.any():
            return np.full(self.n_modes, np.nan)
        return np.where(finite, np.exp(self.log_mass - logsumexp(self.log_mass[finite])), 0.0)

    @property
    def masses_se(self) -> np.ndarray:
        """Delta-method se of :attr:`masses`: ``w_c sqrt((1 - w_c)^2 s_c^2 + sum_{j != c} w_j^2 s_j^2)`` with
        ``s_c`` the se of ``log Z_c``."""
        w = self.masses
        s = np.where(np.isfinite(self.log_mass_se), self.log_mass_se, 0.0)
        total = np.sum(w**2 * s**2)
        return w * np.sqrt(np.maximum((1 - w) ** 2 * s**2 + total - w**2 * s**2, 0.0))


def mode_masses(compiled, components, rng: np.random.Generator, n_draws: int):
    """``log Z_c = log mean_i p~(x_i) / q_c(x_i)``, ``x_i ~ q_c``, with its delta-method se
    (:func:`pmz.weights.log_mean_weight_se`) and k-hat for every component.

    One compiled log-density call for all components' draws. Returns ``(log_mass, log_mass_se, khat)``."""
    draws = [component.sample(rng, n_draws) for component in components]
    lp, ll = compiled.log_densities_once(np.concatenate(draws))
    log_p = (lp + ll).reshape(len(components), n_draws)
    log_mass, se, khat = [], [], []
    for c, component in enumerate(components):
        log_w = log_p[c] - component.log_density(draws[c])
        log_w = np.where(np.isfinite(log_w), log_w, -np.inf)
        log_mass.append(log_mean_weight(log_w))
        finite = np.isfinite(log_mass[-1])
        se.append(log_mean_weight_se(log_w) if finite else np.inf)
        khat.append(float(pareto_khat(log_w)) if finite else np.inf)
    return np.array(log_mass), np.array(se), np.array(khat)


def mode_reference(compiled, x, rng: np.random.Generator, *, n_mass_draws: int = 500, even_share: float = 0.5,
                   min_mass: float = 1e-4, threshold: float = 3.0, kind: str = "student_t", defensive=None,
                   defensive_weight: float = 0.2, curved: bool = False):
    """The mixture reference over the modes the chains found, and a :class:`ModeSummary` of them.

    One component per cluster of chains (:func:`fit_mode_components`; ``kind="student_t"`` by default, 7 degrees of
    freedom, :data:`pmz.model.reference.STUDENT_T_DF`: on the benchmark's eggbox, whose modes at the prior's
    bounds are exponential tails in the unconstrained
    space, Gaussian components left the importance weights with an ESS of 0.3% and SMC from them 4.5 se low, where
    Student-t components gave ESS 41-47% on most seeds; on the other benchmark models the ESS was the same or higher).
    ``curved=True``: each cluster's component is a mixture fitted by EM instead (:func:`curved_mode_components`),
    for modes one component cannot follow (on the benchmark's two Gaussian shells the ESS went from 11-12% to
    70-85%).

    Clusters whose estimated relative mass is below ``min_mass`` (chains in local modes of no weight, or still
    drifting) are left out: they would take particles and add at most ``min_mass`` each to Z (the ``defensive``
    component, where there is one, still lets the path reach them). Weights of the rest:
    ``(1 - even_share) m_c + even_share / n_modes`` with ``m_c`` the estimated relative masses: every mode keeps
    particles even where its mass was underestimated, or where one wide component's importance-sampling mass (it
    may cover several modes, or be noisy) would take nearly all of them. ``defensive``: a normalised reference
    that covers the whole posterior (the prior), added with weight ``defensive_weight`` so that a path from the
    mixture can still find a mode no chain visited (Hesterberg's defensive mixture); its mass is not estimated (it
    is not a mode).
    """
    labels = cluster_chains(x, threshold)
    components = curved_mode_components(x, labels, rng) if curved else fit_mode_components(x, labels, kind=kind)
    log_mass, se, khat = mode_masses(compiled, components, rng, n_mass_draws)
    finite = np.isfinite(log_mass)
    if finite.any():
        rel = np.where(finite, np.exp(log_mass - logsumexp(log_mass[finite])), 0.0)
        keep = rel >= min_mass
    else:
        rel, keep = np.full(log_mass.size, 1.0 / log_mass.size), np.ones(log_mass.size, bool)
    kept = np.flatnonzero(keep)
    relabel = np.full(log_mass.size, -1)
    relabel[kept] = np.arange(kept.size)
    rel = rel[kept] / rel[kept].sum()
    weights = (1 - even_share) * rel + even_share / kept.size
    components = [components[c] for c in kept]
    summary = ModeSummary(
        labels=relabel[labels],
        log_mass=log_mass[kept],
        log_mass_se=se[kept],
        pareto_khat=khat[kept],
        location=np.array([x[labels == c].reshape(-1, x.shape[2]).mean(axis=0) for c in kept]),
        n_logp_evals=n_mass_draws * log_mass.size,
    )
    name = f"mixture over {len(components)} mode{'s' if len(components) > 1 else ''}"
    if defensive is not None:
        components = [*components, defensive]
        weights = np.append((1 - defensive_weight) * weights, defensive_weight)
        name += f" and the {getattr(defensive, 'name', 'reference')}"
    return MixtureReference(components, weights, name=name), summary
