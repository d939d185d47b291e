"""Latents that are concave but not Gaussian given a few hyperparameters: the conditional mode, the Laplace Gaussian
there, and an annealed correction from it (the Laplace route, :mod:`pmz.auto.laplace_route`).

Split the flat vector into hyperparameters ``theta`` and latents ``x`` (:func:`pmz.model.latent_gaussian.
latent_split`). Where ``f(theta, x) = log p~(theta, x)`` is concave in ``x`` (proven from the graph:
:mod:`pmz.model.concavity_proof`), at each ``theta``:

1. **The conditional mode** ``x_hat(theta)`` by Newton's method with backtracking (from the last mode found), with
   the precision ``P(x) = -d^2 f / dx^2`` from central differences of the gradient along a few structured steps
   (:class:`pmz.model.batched_precision.ArrowFactor`: one step moves every group effect at once where they are
   independent given ``theta`` and a few shared latents; :class:`~pmz.model.batched_precision.BandFactor` for a
   band, with ``2b + 1`` steps; :class:`~pmz.model.batched_precision.DenseFactor` for a few hundred dependent
   latents). The structure is read once from the Hessian's nonzeros and checked along a random direction. Newton's
   iterations steer by forward differences, central ones where those lose definiteness, and a value whose climb
   fails starts again from the latents' zero.
2. **The Laplace approximation** ``log p_LA(y, theta) = f(theta, x_hat) + (m/2) log 2 pi - (1/2) log det P(x_hat)``
   (Tierney & Kadane 1986; Rue, Martino & Chopin 2009): smooth in ``theta``, it is what the peak search and the
   importance proposal over ``theta`` are fitted to. It is never the answer.
3. **The correction**: annealed importance sampling in the latents (:func:`pmz.runners.latent_ais.
   anneal_from_gaussian`) from ``N(x_hat, P^{-1})`` to ``p~(theta, x)`` gives an unbiased estimate ``p^(y, theta)``
   of ``int p~(theta, x) dx``, whatever the Laplace error; its variance falls like ``1 / K`` in the number of
   temperatures, which is chosen from a pilot so that ``Var log p^`` is about :data:`LOG_VARIANCE_TARGET`.

The importance sampler over ``theta`` (:mod:`pmz.auto.hyper_importance`) then weights each draw
``theta_i ~ q`` by ``p^(y, theta_i) / q(theta_i)``: an unbiased estimate of ``Z`` (pseudo-marginal importance
sampling), whose se, Pareto k-hat and independent halves carry the noise of both levels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.batched_precision import ArrowFactor, BandFactor, DenseFactor
from ..model.group_terms import read_group_terms
from ..model.latent_gaussian import _MAX_STORED, LOG_2PI, Conditional
from .latent_ais import anneal_from_gaussian
from .laplace_structure import ArrowStructure, BandStructure, check_structure, read_structure

__all__ = ["ConditionalLaplace", "LaplaceFit", "LOG_VARIANCE_TARGET", "N_CALIBRATION"]

FD_SD = 1e-3  # central-difference step, in conditional sd
NEWTON_STEPS = 60
NEWTON_TOL = 1e-12  # the Newton decrement g' P^{-1} g, relative to 1 + |f|, at which the mode is found
LOG_VARIANCE_TARGET = 0.5  # Var log p^(y, theta) the temperatures aim at (pseudo-marginal: near the cost optimum)
N_CALIBRATION = 32  # hyperparameter values of the pilot that calibrates the correction
N_TEMPERATURES_PILOT = 24
MIN_TEMPERATURES, MAX_TEMPERATURES = 8, 1024
N_LEAPFROG = 3
NODES = (6, 8, 10, 12, 16, 20, 24, 32, 48, 64)  # Gauss-Hermite rules tried in turn for independent groups ...
QUADRATURE_TOL = 1e-4  # ... until two successive ones agree on log p(y, theta) to this, at every pilot value
N_RESAMPLE = 8  # candidates per group for a draw of x | theta, y (sampling-importance-resampling)


@dataclass
class LaplaceFit:
    """The Laplace Gaussians at a batch of hyperparameter values: modes ``x_hat (B, m)``, ``f_hat = f(theta,
    x_hat)``, the factor of their precisions, and ``ok`` (a mode with a positive definite precision was found)."""

    thetas: np.ndarray
    x_hat: np.ndarray
    f_hat: np.ndarray
    factor: object
    ok: np.ndarray

    @property
    def log_marginal(self):
        m = self.x_hat.shape[1]
        out = self.f_hat + 0.5 * m * LOG_2PI - 0.5 * self.factor.log_det
        return np.where(self.ok & np.isfinite(out), out, -np.inf)


class ConditionalLaplace:
    """``theta -> log p(y, theta)``, by Laplace (:meth:`fit`) or corrected (:meth:`evaluate` once :meth:`calibrate`
    has run), and draws of ``x | theta, y`` (module docstring).

    Parameters
    ----------
    target : CompiledModel
    split : LatentSplit
    base : ndarray (dim,)
        A flat point; its latent part is the first start of Newton's method.
    """

    def __init__(self, target, split, base, proof: str = "", structure=None):
        self.target = target
        self.known_structure = structure  # read by the caller already: learn_structure only checks it
        self.proof = proof  # what the graph proved (stated in the route's reason)
        self.split = split
        self.m = len(split.latent)
        self.x0 = np.asarray(base, dtype=float)[split.latent].copy()
        self.structure = None
        self.n_evaluations = 0
        self.n_temperatures = None  # set by calibrate: evaluate then returns the corrected log p(y, theta)
        self.step_size = 1.0
        self.log_variance = None  # Var log p^ per value measured by the pilot
        self.groups = None  # independent groups: the terms of each latent (pmz.model.group_terms)
        self.n_nodes = None  # ... and the Gauss-Hermite rule that integrates each
        self.quadrature_gap = None  # the change of log p(y, theta) to the next finer rule at the pilot values
        self.groups_refusal = ""  # why the groups are not integrated one at a time
        self.slope = None  # (theta*, x_hat(theta*), d x_hat / d theta): Newton's start at theta is the linear guess

    # ---------------------------------------------------------------- values and derivatives
    def _points(self, thetas, latent):
        X = np.empty((latent.shape[0], self.target.dim))
        X[:, self.split.hyper] = thetas
        X[:, self.split.latent] = latent
        return X

    def _value_grad(self, thetas, latent):
        lp, ll, glp, gll = self.target.log_densities_and_grads(self._points(thetas, latent))
        with np.errstate(invalid="ignore"):
            f = np.asarray(lp + ll, dtype=float)
            g = (glp + gll)[:, self.split.latent]
        return np.where(np.isnan(f), -np.inf, f), g

    def _gradients(self, thetas, latent):
        """The latents' gradients at the rows ``(thetas, latent)``, in chunks of at most :data:`_MAX_STORED`
        numbers."""
        chunk = max(1, _MAX_STORED // max(self.target.dim, 1))
        return np.concatenate([self._value_grad(thetas[i:i + chunk], latent[i:i + chunk])[1]
                               for i in range(0, len(latent), chunk)])

    def _steps(self, h):
        """The structured steps (S, B, m) for per-coordinate sizes ``h (B, m)``: for a band of half-width ``b``,
        the coordinates ``2b + 1`` apart move together (no row of ``P`` meets two of them)."""
        B, m = h.shape
        if isinstance(self.structure, BandStructure):
            colours = self.structure.colours(m)
            steps = np.zeros((colours.max() + 1, B, m))
            steps[colours, :, np.arange(m)] = h.T
            return steps
        if isinstance(self.structure, ArrowStructure):
            rest, border = self.structure.rest, self.structure.border
            steps = np.zeros((1 + len(border), B, m))
            steps[0][:, rest] = h[:, rest]
            for j, b in enumerate(border):
                steps[1 + j][:, b] = h[:, b]
            return steps
        steps = np.zeros((m, B, m))
        steps[np.arange(m), :, np.arange(m)] = h.T
        return steps

    def _factor(self, thetas, x, h, g=None):
        """The factor of ``P`` at each row ``(theta, x)`` by central differences along the structured steps, or
        forward differences from the gradient ``g`` at ``x`` where it is given (Newton's iterations: the Hessian
        only steers them)."""
        steps = self._steps(h)
        S, B, m = steps.shape
        sides = 1 if g is not None else 2
        points = (x[None] + steps if g is not None else np.concatenate([x[None] + steps, x[None] - steps]))
        points = points.reshape(sides * S * B, m)
        G = self._gradients(np.tile(thetas, (sides * S, 1)), points).reshape(sides, S, B, m)
        if g is not None:  # forward: (g(x + s) - g(x)) / s, written as the central form's two halves
            G = np.stack([G[0], np.broadcast_to(g, (S, B, m))])
            h = h / 2.0
        if isinstance(self.structure, BandStructure):
            return BandFactor(self._band(G, h))
        if isinstance(self.structure, ArrowStructure):
            rest, border = self.structure.rest, self.structure.border
            D = -(G[0, 0][:, rest] - G[1, 0][:, rest]) / (2.0 * h[:, rest])
            cols = -(G[0, 1:] - G[1, 1:]) / (2.0 * h[:, border].T[:, :, None])  # (r, B, m): column b of P
            C = np.transpose(cols[:, :, rest], (1, 2, 0))
            E = np.transpose(cols[:, :, border], (1, 2, 0))
            E = 0.5 * (E + np.swapaxes(E, 1, 2))
            return ArrowFactor(rest, border, D, C, E)
        P = -np.transpose(G[0] - G[1], (1, 0, 2)) / (2.0 * h[:, :, None])
        return DenseFactor(0.5 * (P + np.swapaxes(P, 1, 2)))

    def _band(self, G, h):
        """``P[i, i - k]`` for ``k = 0..b`` (``(B, m, b + 1)``) from the gradients along the coloured steps
        ``G (2, S, B, m)``: column ``j`` of ``P`` is read from the step of ``j``'s colour, and the two readings of
        each entry (row and column) are averaged."""
        colours = self.structure.colours(self.m)
        B, m, b = h.shape[0], self.m, self.structure.half_width
        band = np.zeros((B, m, b + 1))
        rows = np.arange(m)
        for k in range(b + 1):
            i, j = rows[k:], rows[:m - k]
            below = -(G[0][colours[j], :, i] - G[1][colours[j], :, i]).T / (2.0 * h[:, j])  # P[i, j] from column j
            above = -(G[0][colours[i], :, j] - G[1][colours[i], :, j]).T / (2.0 * h[:, i])  # P[j, i] from column i
            band[:, k:, k] = 0.5 * (below + above)
        return band

    # ---------------------------------------------------------------- structure
    def learn_structure(self, thetas, rng) -> Conditional:
        """Read the structure of ``P`` at the first of ``thetas`` (near the start, jittered off special points), check
        it along a random direction, and evaluate the Laplace approximation at ``thetas``. ``failure`` says why the
        route cannot run ("" when it can)."""
        thetas = np.atleast_2d(np.asarray(thetas, dtype=float))
        theta = thetas[:1]
        x = (self.x0 + 0.1 * rng.standard_normal(self.m))[None]
        h = 1e-4 * np.maximum(1.0, np.abs(x))
        if self.known_structure is not None:
            self.structure, failure = self.known_structure, ""
        else:
            failure = read_structure(self, theta, x, h, rng)
        if not failure:
            failure = check_structure(self, theta, x, h, rng)
        if failure:
            return Conditional(np.full(len(thetas), -np.inf), np.zeros((len(thetas), 1, self.target.dim)), failure)
        return self.evaluate(thetas, rng)

    # ---------------------------------------------------------------- modes
    def recentre(self, x):
        """Start Newton's method from the latent part of ``x`` from now on."""
        self.x0 = np.asarray(x, dtype=float)[self.split.latent].copy()

    def fit(self, thetas) -> LaplaceFit:
        """The conditional modes and Laplace Gaussians at ``thetas (B, k)`` by Newton's method with backtracking,
        from :attr:`x0` or the linear guess, whichever is higher; values where that fails start again from the
        latents' zero (far hyperparameter values, where the guess sends ``exp`` of a latent out of range)."""
        thetas = np.atleast_2d(np.asarray(thetas, dtype=float))
        B = len(thetas)
        self.n_evaluations += B
        x = np.tile(self.x0, (B, 1))
        f, g = self._value_grad(thetas, x)
        if self.slope is not None:  # the linear guess where it is higher
            centre, x_centre, J = self.slope
            guess = x_centre + (thetas - centre) @ J.T
            f_guess, g_guess = self._value_grad(thetas, guess)
            better = f_guess > f
            x[better], f[better], g[better] = guess[better], f_guess[better], g_guess[better]
        x, f, h, failed, unfinished = self._newton(thetas, x, f, g)
        if (failed | unfinished).any():
            again = np.flatnonzero(failed | unfinished)
            zero = np.zeros((len(again), self.m))
            f0, g0 = self._value_grad(thetas[again], zero)
            x[again], f[again], h[again], failed[again], _ = self._newton(thetas[again], zero, f0, g0)
        factor = self._factor(thetas, x, h)
        return LaplaceFit(thetas, x, f, factor, factor.ok & np.isfinite(f) & ~failed)

    def _newton(self, thetas, x, f, g):
        """Newton's iterations from ``x`` (values ``f``, gradients ``g``): the modes, their values, the
        finite-difference steps, which rows failed and which had not converged after :data:`NEWTON_STEPS`."""
        x, f, g = x.copy(), f.copy(), g.copy()
        h = 1e-4 * np.maximum(1.0, np.abs(x))
        active = np.isfinite(f)
        failed = ~active
        for _ in range(NEWTON_STEPS):
            idx = np.flatnonzero(active)
            if not idx.size:
                break
            factor = self._factor(thetas[idx], x[idx], h[idx], g[idx])
            if not factor.ok.all():  # forward differences lose definiteness where the curvature grows fast (exp)
                factor = self._factor(thetas[idx], x[idx], h[idx])
            h[idx] = FD_SD / np.sqrt(np.maximum(factor.diagonal(), 1e-12))
            with np.errstate(invalid="ignore"):
                step = factor.solve(np.nan_to_num(g[idx]))
                decrement = np.sum(g[idx] * step, axis=1)
            go = factor.ok & (decrement > NEWTON_TOL * (1.0 + np.abs(f[idx])))
            failed[idx[~factor.ok]] = True
            active[idx[~go]] = False
            idx, step, decrement = idx[go], step[go], decrement[go]
            t = np.ones(len(idx))
            pending = np.ones(len(idx), dtype=bool)
            for _ in range(30):  # backtracking (Armijo)
                rows = np.flatnonzero(pending)
                if not rows.size:
                    break
                candidate = x[idx[rows]] + t[rows, None] * step[rows]
                fc, gc = self._value_grad(thetas[idx[rows]], candidate)
                good = fc >= f[idx[rows]] + 1e-4 * t[rows] * decrement[rows]
                done = idx[rows[good]]
                x[done], f[done], g[done] = candidate[good], fc[good], gc[good]
                pending[rows[good]] = False
                t[rows[~good]] *= 0.5
            # no ascent along Newton's direction: at the mode to round-off, or lost
            active[idx[pending]] = False
            failed[idx[pending & (decrement > 1e-6)]] = True
        return x, f, h, failed, active

    # ---------------------------------------------------------------- the correction
    def _u_grad(self, fit):
        """``z -> (u, du/dz)`` with ``u(z) = f(theta, x_hat + M^{-1} z) - (1/2) log det P``."""

        def u_grad(z):
            x = fit.x_hat + fit.factor.from_white(z)
            f, g = self._value_grad(fit.thetas, x)
            with np.errstate(invalid="ignore"):
                return f - 0.5 * fit.factor.log_det, fit.factor.whiten(np.nan_to_num(g))

        return u_grad

    def _anneal(self, fit, rng, n_steps, adapt=False, repeats=1):
        z0 = rng.standard_normal((repeats * len(fit.thetas), self.m))
        if repeats > 1:
            fit = LaplaceFit(np.tile(fit.thetas, (repeats, 1)), np.tile(fit.x_hat, (repeats, 1)),
                             np.tile(fit.f_hat, repeats), _tiled(fit.factor, repeats), np.tile(fit.ok, repeats))
        paths = anneal_from_gaussian(self._u_grad(fit), z0, n_steps, self.step_size, rng, n_leapfrog=N_LEAPFROG,
                                     adapt=adapt)
        return fit, paths

    def _learn_slope(self, centre, step=1e-3):
        """``d x_hat / d theta`` at ``centre`` by central differences: Newton's start at other values."""
        k = len(centre)
        points = np.concatenate([centre[None], centre + step * np.eye(k), centre - step * np.eye(k)])
        fit = self.fit(points)
        if not fit.ok.all():
            return
        J = (fit.x_hat[1:k + 1] - fit.x_hat[k + 1:]).T / (2.0 * step)
        self.slope = (centre, fit.x_hat[0], J)

    def calibrate(self, thetas, rng, centre=None) -> str:
        """Choose the step size and the number of temperatures from a pilot: two annealed paths at each of
        ``thetas`` (adapting the step size), their disagreement giving ``Var log p^``, and ``K`` scaled so that it
        comes to :data:`LOG_VARIANCE_TARGET`. Returns why the correction cannot be made ("" when it can)."""
        self._learn_slope(thetas[0] if centre is None else centre)
        fit = self.fit(thetas)
        if not fit.ok.any():
            return "no conditional mode with a positive definite precision at the pilot's hyperparameter values"
        keep = np.flatnonzero(fit.ok)
        fit = LaplaceFit(fit.thetas[keep], fit.x_hat[keep], fit.f_hat[keep], _taken(fit.factor, keep), fit.ok[keep])
        if self._calibrate_quadrature(fit, rng):
            self.n_temperatures = 0
            return ""
        self.step_size = 1.2 * self.m ** -0.25
        _, warm = self._anneal(fit, rng, N_TEMPERATURES_PILOT, adapt=True)
        self.step_size = warm.step_size
        _, paths = self._anneal(fit, rng, N_TEMPERATURES_PILOT, adapt=False, repeats=2)
        n = len(keep)
        a, b = paths.log_weights[:n], paths.log_weights[n:]
        finite = np.isfinite(a) & np.isfinite(b)
        if finite.mean() < 0.9:
            return "the annealed correction's paths lost their way (non-finite weights) in the pilot"
        variance = 0.5 * float(np.var(a[finite] - b[finite]))
        self.log_variance = variance
        wanted = int(np.ceil(N_TEMPERATURES_PILOT * variance / LOG_VARIANCE_TARGET))
        if wanted > 4 * MAX_TEMPERATURES:
            return (f"the Laplace Gaussians are far from the latents' conditionals: Var log p^ = {variance:.3g} over "
                    f"{N_TEMPERATURES_PILOT} temperatures would need {wanted} temperatures")
        self.n_temperatures = int(np.clip(wanted, MIN_TEMPERATURES, MAX_TEMPERATURES))
        return ""

    @property
    def quadrature(self) -> bool:
        """Whether :meth:`evaluate` integrates the latents by the groupwise quadrature (deterministic, smooth values)
        rather than by annealing (unbiased noisy estimates); known after :meth:`calibrate`."""
        return self.groups is not None

    def describe(self) -> str:
        """How :meth:`evaluate` integrates the latents, for the route's reason (after :meth:`calibrate`)."""
        if self.groups is not None:
            finer = NODES[NODES.index(self.n_nodes) + 1]
            return (f"the {self.m} latents are independent given them, so each is integrated by an adaptive "
                    f"Gauss-Hermite rule of {self.n_nodes} nodes about its conditional mode (the rule of {finer} "
                    f"nodes differs by at most {self.quadrature_gap:.1g} in log p(y, theta) at the pilot's values)")
        return (f"the latents are annealed in {self.n_temperatures} temperatures from the Gaussian at their "
                f"conditional mode ({self.structure}; Var log p^ {self.log_variance:.2g} at "
                f"{N_TEMPERATURES_PILOT} temperatures in the pilot), each path an unbiased estimate of p(y, theta)")

    # ---------------------------------------------------------------- independent groups
    def _calibrate_quadrature(self, fit, rng) -> bool:
        """Where the latents are independent given ``theta`` (a diagonal precision) and each term of the log density
        reads at most one of them (:func:`pmz.model.group_terms.read_group_terms`), choose the first Gauss-Hermite
        rule of :data:`NODES` that agrees with the next on ``log p(y, theta)`` to :data:`QUADRATURE_TOL` at every
        pilot value. False where this does not hold (the annealed correction then runs)."""
        if not isinstance(self.structure, ArrowStructure) or len(self.structure.border):
            return False
        sd = 1.0 / np.sqrt(fit.factor.diagonal()[0])
        point = self._points(fit.thetas[:1], fit.x_hat[:1])[0]
        groups = read_group_terms(self.target.log_density_terms, point, self.split.latent, 0.5 * sd, rng)
        if isinstance(groups, str):
            self.groups_refusal = groups
            return False
        self.groups = groups
        previous = self._quadrature(fit, NODES[0])
        for coarse, fine in zip(NODES[:-1], NODES[1:]):
            values = self._quadrature(fit, fine)
            gap = float(np.max(np.abs(values - previous)))
            if gap <= QUADRATURE_TOL:  # the coarser rule is within about the gap of the finer, far closer still
                self.n_nodes, self.quadrature_gap = coarse, gap
                return True
            previous = values
        self.groups = None
        self.groups_refusal = f"Gauss-Hermite rules of {NODES[-2]} and {NODES[-1]} nodes differ by {gap:.2g}"
        return False

    def _chunk(self, n_rows_each):
        """Hyperparameter values per batched call where each takes ``n_rows_each`` rows of terms."""
        width = self.target.dim if self.groups is None else max(self.target.dim, self.groups.n_terms)
        return max(1, _MAX_STORED // max(n_rows_each * width, 1))

    def _quadrature(self, fit, n_nodes):
        """``log p(y, theta) = c(theta) + sum_g log int exp(f_g)``, each integral by the adaptive Gauss-Hermite rule
        of ``n_nodes`` nodes about its mode (Liu & Pierce 1994): nodes ``x_hat + sqrt(2 / D) t_q``."""
        t, w = np.polynomial.hermite.hermgauss(n_nodes)
        scale = np.sqrt(2.0 / fit.factor.diagonal())
        out = np.empty(len(fit.thetas))
        chunk = self._chunk(n_nodes)
        for i in range(0, len(out), chunk):
            rows = slice(i, i + chunk)
            b = len(fit.thetas[rows])
            latent = (fit.x_hat[rows][:, None] + scale[rows][:, None] * t[None, :, None]).reshape(b * n_nodes, -1)
            T = self.target.log_density_terms(self._points(np.repeat(fit.thetas[rows], n_nodes, 0), latent))
            f_groups = self.groups.per_group(T).reshape(b, n_nodes, -1)
            log_terms = f_groups + (t**2 + np.log(w))[None, :, None]
            top = np.max(log_terms, axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                log_integrals = np.log(scale[rows]) + top + np.log(np.sum(np.exp(log_terms - top[:, None]), axis=1))
            out[rows] = self.groups.constant_part(T).reshape(b, n_nodes)[:, 0] + log_integrals.sum(axis=1)
        return np.where(fit.ok & np.isfinite(out), out, -np.inf)

    def _group_draws(self, fit, rng):
        """One draw of ``x | theta, y`` per value: in each group, one of :data:`N_RESAMPLE` draws of its Laplace
        Gaussian picked with probability proportional to its importance weight (sampling-importance-resampling)."""
        R = N_RESAMPLE
        sd = 1.0 / np.sqrt(fit.factor.diagonal())
        out = np.empty_like(fit.x_hat)
        chunk = self._chunk(R)
        for i in range(0, len(out), chunk):
            rows = slice(i, i + chunk)
            b = len(fit.thetas[rows])
            z = rng.standard_normal((b, R, self.m))
            latent = fit.x_hat[rows][:, None] + sd[rows][:, None] * z
            T = self.target.log_density_terms(self._points(np.repeat(fit.thetas[rows], R, 0),
                                                           latent.reshape(b * R, -1)))
            log_w = self.groups.per_group(T).reshape(b, R, -1) + 0.5 * z**2
            pick = np.argmax(np.nan_to_num(log_w, nan=-np.inf) + rng.gumbel(size=log_w.shape), axis=1)
            out[rows] = np.take_along_axis(latent, pick[:, None], axis=1)[:, 0]
        return out

    def evaluate(self, thetas, rng, n_each: int = 1) -> Conditional:
        """``log p(y, theta)`` at each row of ``thetas``: the Laplace approximation before :meth:`calibrate`, the
        log of the annealed correction's unbiased estimate after; and ``n_each`` draws of ``x | theta, y`` (the
        Laplace Gaussian's before, the paths' final states after: weighted by the correction)."""
        thetas = np.atleast_2d(np.asarray(thetas, dtype=float))
        B = len(thetas)
        if B == 0:
            return Conditional(np.zeros(0), np.zeros((0, n_each, self.target.dim)), "")
        chunk = max(1, _MAX_STORED // (8 * max(self.target.dim, 1)))  # x, its steps and gradients per value
        if B > chunk:
            parts = [self.evaluate(thetas[i:i + chunk], rng, n_each) for i in range(0, B, chunk)]
            return Conditional(np.concatenate([p.log_marginal for p in parts]),
                               np.concatenate([p.draw for p in parts]), next((p.failure for p in parts if p.failure),
                                                                             ""))
        fit = self.fit(thetas)
        failure = ""
        if not fit.ok.all():
            b = int(np.flatnonzero(~fit.ok)[0])
            failure = (f"no conditional mode of {', '.join(self.split.latent_names)} with a positive definite "
                       f"precision at {self.split.hyper_names} = {np.round(thetas[b], 4).tolist()}")
        if self.n_temperatures is None:
            z = rng.standard_normal((n_each, B, self.m))
            latent = fit.x_hat[None] + np.stack([fit.factor.from_white(zi) for zi in z])
            draw = np.stack([self._points(thetas, latent[i]) for i in range(n_each)], axis=1)
            return Conditional(fit.log_marginal, draw, failure)
        if self.groups is not None:
            draw = self._points(thetas, self._group_draws(fit, rng))[:, None].repeat(n_each, axis=1)
            return Conditional(self._quadrature(fit, self.n_nodes), draw, failure)
        _, paths = self._anneal(fit, rng, self.n_temperatures)
        log_marginal = np.where(fit.ok, paths.log_weights, -np.inf)
        x = fit.x_hat + fit.factor.from_white(paths.z)
        draw = self._points(thetas, x)[:, None].repeat(n_each, axis=1)
        return Conditional(np.where(np.isnan(log_marginal), -np.inf, log_marginal), draw, failure)


def _taken(factor, rows):
    """The factor restricted to some rows of its batch."""
    out = object.__new__(type(factor))
    out.__dict__.update({k: (v[rows] if isinstance(v, np.ndarray) and v.ndim and v.shape[0] == len(factor.ok)
                             and k not in ("rest", "border") else v) for k, v in factor.__dict__.items()})
    return out


def _tiled(factor, repeats):
    return _taken(factor, np.tile(np.arange(len(factor.ok)), repeats))
