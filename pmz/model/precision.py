"""The precision matrix ``P = -d^2 f / dx^2`` of a quadratic log density, from gradients, in the form that is
cheapest to factor: dense, or a band with a few dense rows and columns (the border).

``f`` quadratic in ``x`` has an affine gradient, so ``g(x0 + s) - g(x0) = -P s`` exactly for any step ``s``.

* :class:`DensePrecision`: the steps ``e_1..e_m`` give every column (``m + 1`` gradient points); Cholesky
  ``P = L L'`` in ``m^3 / 3``.
* :class:`BorderedBandPrecision`: the latents of a Markov chain (state-space states: a band of width ``b``)
  or of a hierarchy (group effects tied to a few global ones: a diagonal with a border of ``r`` dense columns).
  Band columns ``2b + 1`` apart share no row of the band, so one step moves all the columns of a class
  ``p mod (2b + 1)`` at once (Curtis, Powell & Reid 1974) and each border column gets its own step:
  ``2b + 2 + r`` gradient points. With the band block ``A = U'U`` (band Cholesky, ``n b^2``), ``W = U'^{-1} C``
  and the Schur complement ``S = D - W'W = R'R``, ``P = M'M`` with ``M = [[U, W], [0, R]]``, so

      log det P = 2 sum log diag U + 2 sum log diag R,     P^{-1} g by two block triangular solves,
      x_hat + M^{-1} z  ~  N(x_hat, P^{-1}).

The structure is read once from a dense evaluation (:func:`structure_from_pattern`); where it misses an entry the
certificate of :class:`pmz.model.latent_gaussian.ConditionalGaussian` fails, so a wrong structure costs the route,
never the answer.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_solve, cholesky_banded, solve_banded, solve_triangular

__all__ = ["DensePrecision", "BorderedBandPrecision", "structure_from_pattern", "MAX_BORDER"]

MAX_BORDER = 8  # dense rows and columns of a bordered band


class DensePrecision:
    """Every column from its own step; dense Cholesky."""

    def __init__(self, m: int):
        self.m = m

    def steps(self):
        return np.vstack([np.zeros(self.m), np.eye(self.m)])

    def assemble(self, d):
        """``d (B, m, m)``: gradient differences at the steps (row j: ``H e_j``) -> (precisions, asymmetry, scale)."""
        H = d
        asym = np.max(np.abs(H - np.swapaxes(H, 1, 2)), axis=(1, 2))
        return -0.5 * (H + np.swapaxes(H, 1, 2)), asym, np.max(np.abs(H), axis=(1, 2))

    def factor(self, P):
        """``(L, log det P)``, or None where ``P`` is not positive definite."""
        try:
            L = np.linalg.cholesky(P)
        except np.linalg.LinAlgError:
            return None
        return L, 2.0 * float(np.sum(np.log(np.diag(L))))

    def solve(self, L, g):
        return cho_solve((L, True), g, check_finite=False)

    def draw(self, L, z):
        """``L^{-T} z`` for rows ``z (n, m)``: covariance ``P^{-1}``."""
        return solve_triangular(L, z.T, lower=True, trans="T", check_finite=False).T

    def times(self, P, v):
        return P @ v


class BorderedBandPrecision:
    """A band of half-width ``b`` over the ``rest`` coordinates and dense ``border`` rows and columns."""

    def __init__(self, m: int, b: int, border):
        self.m, self.b = m, int(b)
        self.border = np.asarray(border, dtype=int)
        self.rest = np.setdiff1d(np.arange(m), self.border)
        self.n, self.r = len(self.rest), len(self.border)
        self.classes = 2 * self.b + 1

    def steps(self):
        s = np.zeros((1 + self.classes + self.r, self.m))
        p = np.arange(self.n)
        s[1 + p % self.classes, self.rest] = 1.0
        s[1 + self.classes + np.arange(self.r), self.border] = 1.0
        return s

    def assemble(self, d):
        """``d (B, n_steps, m)`` -> ``[(band, C, D)]`` per row (``band``: upper band storage of ``A``), asymmetry of
        the band and border blocks, scale of ``H``."""
        b, n, rest, border, classes = self.b, self.n, self.rest, self.border, self.classes
        B = d.shape[0]
        band = np.zeros((B, b + 1, n))
        asym = np.zeros(B)
        for k in range(b + 1):
            p = np.arange(n - k)
            h_ij, h_ji = d[:, (p + k) % classes, rest[p]], d[:, p % classes, rest[p + k]]
            band[:, b - k, k:] = -0.5 * (h_ij + h_ji)
            asym = np.maximum(asym, np.max(np.abs(h_ij - h_ji), axis=1, initial=0.0))
        cols = d[:, classes:]  # (B, r, m): row q is H e_border[q]
        C = -np.swapaxes(cols[:, :, rest], 1, 2)  # (B, n, r)
        D = -cols[:, :, border]
        asym = np.maximum(asym, np.max(np.abs(D - np.swapaxes(D, 1, 2)), axis=(1, 2), initial=0.0))
        D = 0.5 * (D + np.swapaxes(D, 1, 2))
        scale = np.maximum(np.max(np.abs(band), axis=(1, 2)), np.max(np.abs(cols), axis=(1, 2), initial=0.0))
        return [(band[i], C[i], D[i]) for i in range(B)], asym, scale

    def _lower(self, U):
        """``U'`` (lower band storage) from ``U`` (upper band storage)."""
        b, n = self.b, self.n
        low = np.zeros_like(U)
        for k in range(b + 1):
            low[k, : n - k] = U[b - k, k:]
        return low

    def factor(self, P):
        """``(U, U' lower storage, W, R)`` and ``log det P``, or None where ``P`` is not positive definite."""
        band, C, D = P
        try:
            U = cholesky_banded(band, lower=False, check_finite=False)
            Ut = self._lower(U)
            W = solve_banded((self.b, 0), Ut, C, check_finite=False) if self.r else C
            R = np.linalg.cholesky(D - W.T @ W).T if self.r else np.zeros((0, 0))
        except np.linalg.LinAlgError:
            return None
        log_det = 2.0 * float(np.sum(np.log(U[-1]))) + 2.0 * float(np.sum(np.log(np.diag(R))))
        return (U, Ut, W, R), log_det

    def _permuted(self, x1, x2):
        out = np.empty(x1.shape[:-1] + (self.m,))
        out[..., self.rest], out[..., self.border] = x1, x2
        return out

    def solve(self, fac, g):
        """``P^{-1} g``: ``M' y = g``, then ``M x = y``."""
        U, Ut, W, R = fac
        y1 = solve_banded((self.b, 0), Ut, g[self.rest], check_finite=False)
        if not self.r:
            return self._permuted(solve_banded((0, self.b), U, y1, check_finite=False), g[self.border])
        y2 = solve_triangular(R, g[self.border] - W.T @ y1, lower=False, trans="T", check_finite=False)
        x2 = solve_triangular(R, y2, lower=False, check_finite=False)
        x1 = solve_banded((0, self.b), U, y1 - W @ x2, check_finite=False)
        return self._permuted(x1, x2)

    def draw(self, fac, z):
        """``M^{-1} z`` for rows ``z (n_draws, m)``: covariance ``(M'M)^{-1} = P^{-1}``."""
        U, _, W, R = fac
        z1, z2 = z[:, self.rest].T, z[:, self.border].T
        d2 = solve_triangular(R, z2, lower=False, check_finite=False) if self.r else z2
        d1 = solve_banded((0, self.b), U, z1 - W @ d2, check_finite=False)
        return self._permuted(d1.T, d2.T)

    def times(self, P, v):
        band, C, D = P
        v1, v2 = v[self.rest], v[self.border]
        b = self.b
        a = band[b] * v1
        for k in range(1, b + 1):
            upper = band[b - k, k:]
            a[:-k] += upper * v1[k:]
            a[k:] += upper * v1[:-k]
        return self._permuted(a + C @ v2, C.T @ v1 + D @ v2)


def structure_from_pattern(nonzero) -> DensePrecision | BorderedBandPrecision:
    """The cheapest structure covering a symmetric pattern of nonzeros ``(m, m)``: up to :data:`MAX_BORDER` of the
    fullest columns as the border and the band of the rest, where that takes at most a quarter of the ``m + 1``
    gradient points of the dense form; dense otherwise."""
    nonzero = np.asarray(nonzero, dtype=bool)
    nonzero = nonzero | nonzero.T
    m = nonzero.shape[0]
    order = np.argsort(-nonzero.sum(0), kind="stable")
    i, j = np.nonzero(nonzero)
    best, best_points = None, m + 1
    for r in range(min(MAX_BORDER, m - 1) + 1):
        border = np.sort(order[:r])
        rest = np.setdiff1d(np.arange(m), border)
        position = np.full(m, -1)
        position[rest] = np.arange(len(rest))
        inside = (position[i] >= 0) & (position[j] >= 0)
        b = int(np.max(np.abs(position[i][inside] - position[j][inside]), initial=0))
        points = 2 * b + 2 + r
        if points < best_points:
            best, best_points = (b, border), points
    if best is None or 4 * best_points > m + 1:
        return DensePrecision(m)
    return BorderedBandPrecision(m, *best)
