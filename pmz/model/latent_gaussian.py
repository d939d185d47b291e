"""Gaussian latent variables integrated out exactly, given a few hyperparameters.

Split the flat value vector into hyperparameters ``theta`` (a few coordinates) and latent variables ``x`` (the
untransformed continuous free variables: states of a state-space model, values of a latent GP, group effects,
regression coefficients). Where ``f(theta, x) = log p~(theta, x)`` (log prior + log likelihood, Jacobians
included) is quadratic in ``x`` for fixed ``theta`` -- Gaussian latents under a Gaussian likelihood -- the
conditional posterior is exactly Gaussian, ``x | theta, y ~ N(x_hat(theta), P(theta)^{-1})`` with precision
``P = -d^2 f / dx^2`` and mode ``x_hat = x0 + P^{-1} g(x0)`` (``g = df/dx``, one Newton step from any ``x0``), and

    log p(y, theta) = f(theta, x_hat) + (m / 2) log(2 pi) - (1 / 2) log det P(theta)            (m = dim x)

holds exactly (the Gaussian integral). The evidence is then an integral over the few hyperparameters,
``Z = int p(y, theta) d theta``, which importance sampling does well (:mod:`pmz.auto.hyper_importance`); with no
hyperparameters it is the closed form above. This is the exact Gaussian conditional of the integrated nested
Laplace approximation (Rue, Martino & Chopin 2009, eq. 3) where the model is conjugate in its latents, so no
Laplace error remains (docs/methods.md, section 12).

How ``P`` is found: for a quadratic ``f`` the gradient is affine in ``x``, so ``g(x0 + e_j) - g(x0) = -P e_j``
exactly (up to round-off). One batched gradient call on the ``m + 1`` points ``x0, x0 + e_1, ..., x0 + e_m``
gives ``P(theta)``; a batch of hyperparameters is one call on ``B (m + 1)`` points.

That ``f`` is quadratic in ``x`` is a property of the model, proven from its PyTensor graph before this module
is used (:mod:`pmz.model.quadratic_proof`: a degree analysis, refusing ``abs``, ``exp``, switches and comparisons
of the latents and anything of degree above 2); values at points cannot prove it (``|x|`` is quadratic in every
orthant). Given the proof, ``P`` is constant in ``x`` and the only open question is whether it is symmetric
positive definite at each ``theta``, which is checked here. The probes stay as a second check: the conditional
draw ``x_hat + L^{-T} z`` (``P = L L'``, ``z ~ N(0, I)``) is evaluated with ``x_hat``, and the values must obey the
quadratic's identities ``f(x_hat + d) = f(x_hat) - |z|^2 / 2``, ``g(x_hat) = 0`` and ``g(x_hat + d) = -P d`` to
round-off. They catch a structure of ``P`` learnt wrong, or round-off too large to trust, at every ``theta``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .precision import DensePrecision, structure_from_pattern

__all__ = ["LatentSplit", "ConditionalGaussian", "latent_split", "MIN_LATENT", "MAX_LATENT", "MAX_HYPER",
           "MAX_IMPORTANCE", "every_coordinate"]

MIN_LATENT = 8  # latent coordinates worth integrating out (fewer: the importance route over every coordinate)
MAX_HYPER = 6  # hyperparameter coordinates importance sampling integrates well beside latents (each value a solve)
MAX_IMPORTANCE = 30  # coordinates importance sampling integrates well where it has every coordinate (cheap values)
MAX_LATENT = 4000  # the first, dense probe of P holds (m + 1) x dim gradient entries: 128 MB at this size
ROUNDOFF = 1e-7  # relative tolerance of the quadratic's gradient identities (to the gradient's scale) ...
VALUE_ROUNDOFF = 1e-9  # ... and of its value identity (to |f|: 1e-5 nats at |f| = 10^4)
_MAX_STORED = 1 << 23  # numbers per batched call (64 MB per array)
LOG_2PI = float(np.log(2.0 * np.pi))


@dataclass(frozen=True)
class LatentSplit:
    """Indices of the hyperparameters and latent variables in the flat vector, and their variables' names."""

    hyper: np.ndarray
    latent: np.ndarray
    hyper_names: tuple
    latent_names: tuple


def latent_split(target, max_latent: int = MAX_LATENT, as_hyper=()) -> LatentSplit | None:
    """The untransformed continuous free variables (but those named in ``as_hyper``) as latents, the rest as
    hyperparameters; None when the model is not a PyMC model, has discrete variables, or fewer than
    :data:`MIN_LATENT` or more than ``max_latent`` (default :data:`MAX_LATENT`) latent or more than
    :data:`MAX_HYPER` hyperparameter coordinates. Whether ``f`` is
    quadratic (or concave) in the latents is proven from the graph (:func:`pmz.model.quadratic_proof.quadratic_proof`,
    :func:`pmz.model.concavity_proof.concavity_proof`) and probed at every hyperparameter value, not here."""
    layout = _continuous_layout(target)
    if layout is None:
        return None
    transforms = {rv.name: target.model.rvs_to_transforms.get(rv) for rv in target.model.free_RVs}
    hyper, latent, hyper_names, latent_names = [], [], [], []
    for block in layout.blocks:
        idx = list(range(block.start, block.stop))
        if transforms.get(block.rv_name) is None and block.bounds is None and block.rv_name not in as_hyper:
            latent += idx
            latent_names.append(block.rv_name)
        else:
            hyper += idx
            hyper_names.append(block.rv_name)
    if not MIN_LATENT <= len(latent) <= max_latent or len(hyper) > MAX_HYPER:
        return None
    return LatentSplit(np.array(hyper, dtype=int), np.array(latent, dtype=int), tuple(hyper_names),
                       tuple(latent_names))


def every_coordinate(target) -> LatentSplit | None:
    """Every coordinate a hyperparameter, nothing to integrate out (the importance route's split), where the model
    is a PyMC model of continuous free variables with at most :data:`MAX_IMPORTANCE` coordinates; else None."""
    layout = _continuous_layout(target)
    if layout is None or layout.dim > MAX_IMPORTANCE:
        return None
    names = getattr(target, "continuous_names", None) or tuple(dict.fromkeys(b.rv_name for b in layout.blocks))
    return LatentSplit(np.arange(layout.dim), np.zeros(0, dtype=int), names, ())


def _continuous_layout(target):
    """The flat layout of a PyMC model's free variables, None unless every one is continuous."""
    layout = getattr(target, "layout", None)
    if getattr(target, "kind", None) != "pymc" or getattr(target, "model", None) is None or layout is None:
        return None
    return None if layout.discrete_mask.any() else layout


@dataclass
class Conditional:
    """The conditional posterior of the latents at a batch of hyperparameters.

    ``log_marginal``: ``log p(y, theta)`` (-inf where the certificate failed); ``draw``: one exact draw of
    ``x | theta, y`` each, as full flat vectors; ``failure``: why the first failed ``theta`` is not quadratic
    ("" when none failed)."""

    log_marginal: np.ndarray
    draw: np.ndarray
    failure: str


class ConditionalGaussian:
    """``theta -> log p(y, theta)`` with the latents integrated out, and exact draws of ``x | theta, y``.

    Parameters
    ----------
    target : CompiledModel
    split : LatentSplit
    base : ndarray (dim,)
        A flat point; its latent part is the expansion point ``x0``.
    """

    def __init__(self, target, split: LatentSplit, base):
        self.target = target
        self.split = split
        self.m = len(split.latent)
        self.x0 = np.asarray(base, dtype=float)[split.latent].copy()
        self.structure = DensePrecision(self.m)  # of P; learn_structure finds a cheaper one where P is sparse
        self.n_evaluations = 0  # hyperparameter values evaluated

    def recentre(self, x):
        """Expand about the latent part of ``x`` from now on (steps of one unit about a mode stay well scaled)."""
        self.x0 = np.asarray(x, dtype=float)[self.split.latent].copy()

    def learn_structure(self, thetas, rng) -> Conditional:
        """Evaluate densely at ``thetas`` and keep the cheapest structure of ``P`` their nonzeros allow
        (:func:`pmz.model.precision.structure_from_pattern`: a band with a few dense rows and columns takes
        ``2b + 2 + r`` gradient points instead of ``m + 1``). Two or more ``thetas``, so that an entry zero by
        chance at one is seen at another; a missed entry makes the certificate fail, not the answer wrong."""
        self.structure = DensePrecision(self.m)
        out, H = self._evaluate_batch(np.asarray(thetas, float), rng, 1, keep_hessian=True)
        if H is None:
            return out
        finite = np.array([np.isfinite(h).all() for h in H])
        if finite.any():
            self.structure = structure_from_pattern(np.any(np.stack(H)[finite] != 0.0, axis=0))
        return out

    def _points(self, theta, latent):
        """Flat points with the given hyperparameter rows and latent rows."""
        X = np.empty((latent.shape[0], self.target.dim))
        X[:, self.split.hyper] = theta
        X[:, self.split.latent] = latent
        return X

    def _gradient(self, X):
        lp, ll, glp, gll = self.target.log_densities_and_grads(X)
        with np.errstate(invalid="ignore"):
            return lp + ll, (glp + gll)[:, self.split.latent]

    def evaluate(self, thetas, rng, n_each: int = 1) -> Conditional:
        """``log p(y, theta)`` and ``n_each`` exact latent draws at each row of ``thetas (n, k)``, batch by batch."""
        thetas = np.asarray(thetas, dtype=float)
        thetas = thetas[None] if thetas.ndim == 1 else thetas
        batch = max(1, _MAX_STORED // (len(self.structure.steps()) * max(self.target.dim, self.m * (n_each + 1))))
        parts = [self._evaluate_batch(thetas[i : i + batch], rng, n_each)[0] for i in range(0, len(thetas), batch)]
        failure = next((p.failure for p in parts if p.failure), "")
        return Conditional(np.concatenate([p.log_marginal for p in parts]),
                           np.concatenate([p.draw for p in parts]), failure)

    def _evaluate_batch(self, thetas, rng, n_each, keep_hessian=False):
        B, m = len(thetas), self.m
        self.n_evaluations += B
        if m == 0:  # nothing to integrate: the log density itself (values only, no gradient)
            X = self._points(thetas, np.zeros((B, 0)))
            lp, ll = self.target.log_densities(X)
            with np.errstate(invalid="ignore"):
                f = np.asarray(lp + ll, dtype=float)
            draw = np.repeat(X[:, None], n_each, axis=1)
            return Conditional(np.where(np.isnan(f), -np.inf, f), draw, ""), None
        structure = self.structure
        steps = structure.steps()
        latent = (self.x0 + steps)[None].repeat(B, 0).reshape(B * len(steps), m)
        f, g = self._gradient(self._points(np.repeat(thetas, len(steps), axis=0), latent))
        g = g.reshape(B, len(steps), m)
        g0 = g[:, 0]
        d = g[:, 1:] - g0[:, None]
        P, asym, h_scale = structure.assemble(d)
        scale = h_scale + np.max(np.abs(g0), axis=1) + 1.0
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(f.reshape(B, len(steps))).all(1) & np.isfinite(d).all(axis=(1, 2))
            ok &= asym <= ROUNDOFF * scale
        x_hat = np.tile(self.x0, (B, 1))
        zs = rng.standard_normal((B, n_each, m))
        deltas = np.zeros((B, n_each, m))
        log_det = np.zeros(B)
        for b in np.flatnonzero(ok):  # factor, mode x_hat = x0 + P^{-1} g(x0) and draws (m^3/3 or n b^2 each)
            factored = structure.factor(P[b])
            if factored is None:
                ok[b] = False
                continue
            x_hat[b] += structure.solve(factored[0], g0[b])
            deltas[b] = structure.draw(factored[0], zs[b])
            log_det[b] = factored[1]
        fail_reason = "" if ok.all() else "the precision of the latents is not symmetric positive definite"
        z, delta = zs[:, 0], deltas[:, 0]
        f2, g2 = self._gradient(self._points(np.repeat(thetas, 2, axis=0),
                                             np.stack([x_hat, x_hat + delta], 1).reshape(2 * B, m)))
        f2, g2 = f2.reshape(B, 2), g2.reshape(B, 2, m)
        half_z2 = 0.5 * np.sum(z * z, axis=1)
        with np.errstate(invalid="ignore"):
            value_gap = np.abs(f2[:, 1] - f2[:, 0] + half_z2)
            p_delta = np.array([structure.times(P[b], delta[b]) for b in range(B)])
            grad_gap = np.maximum(np.max(np.abs(g2[:, 0]), axis=1), np.max(np.abs(g2[:, 1] + p_delta), axis=1))
            f_scale = np.abs(f2[:, 0]) + half_z2 + 1.0
            quadratic = np.isfinite(f2).all(1) & (value_gap <= VALUE_ROUNDOFF * f_scale)
            quadratic &= grad_gap <= ROUNDOFF * scale
        if ok.all() and not quadratic.all():
            b = int(np.flatnonzero(~quadratic)[0])
            fail_reason = (f"the log density is not quadratic in {', '.join(self.split.latent_names)} at "
                           f"{self.split.hyper_names or 'the model'} = {np.round(thetas[b], 4).tolist()} (value off "
                           f"by {value_gap[b]:.3g}, gradient by {grad_gap[b]:.3g})")
        ok &= quadratic
        log_marginal = np.where(ok, f2[:, 0] + 0.5 * m * LOG_2PI - 0.5 * log_det, -np.inf)
        latent_draws = (x_hat[:, None] + deltas).reshape(B * n_each, m)
        draw = self._points(np.repeat(thetas, n_each, axis=0), latent_draws).reshape(B, n_each, -1)
        return Conditional(log_marginal, draw, fail_reason), (P if keep_hessian else None)
