"""Factors of a batch of precision matrices ``P = M'M``, one per hyperparameter value, for the Laplace route.

The Laplace route (:mod:`pmz.runners.conditional_laplace`) keeps, for each of a batch of ``B`` hyperparameter values, a
Gaussian ``N(x_hat, P^{-1})`` in the latents, and moves its particles in whitened coordinates ``z``,
``x = x_hat + M^{-1} z``, where ``log q(x) = log phi(z) + (1/2) log det P``. Every operation it needs acts on the
whole batch at once:

* ``solve(g)``: ``P^{-1} g`` (a Newton step);
* ``from_white(z)``: ``M^{-1} z`` (a draw of ``N(0, P^{-1})`` from ``z ~ N(0, I)``);
* ``whiten(g)``: ``M^{-T} g`` (the gradient in ``z`` of a function of ``x``);
* ``log_det``: ``log det P``;
* ``diagonal()``: the diagonal of ``P``; ``times(v)``: ``P v`` (the check of a structure against the gradient).

Three structures:

* :class:`ArrowFactor`: a diagonal ``D`` over the ``n`` "rest" coordinates with ``r`` dense border rows and
  columns (``C`` the rest-border block, ``E`` the border block): the latents of independent groups, tied to at most
  :data:`MAX_BORDER` shared ones (a population mean). With ``U = D^{1/2}``, ``W = U^{-1} C`` and the Schur
  complement ``E - W'W = L L'``, ``M = [[U, W], [0, L']]``; memory and time ``O(B n r^2)``.
* :class:`BandFactor`: ``P`` with nonzeros only within ``b`` of its diagonal (a random walk or an AR(1) in time,
  ``b = 1``; a grid's neighbours in row order, ``b`` = its side), ``P = L L'`` with ``L`` banded too (the banded
  Cholesky factorisation, Golub & Van Loan 2013, section 4.3), ``M = L'``; memory ``O(B m b)``, time ``O(B m b^2)``,
  a loop over the ``m`` rows with the batch and the band vectorised.
* :class:`DenseFactor`: ``P = L L'`` (batched Cholesky), ``M = L'``; memory ``O(B m^2)``, for a few hundred
  latents (a latent Gaussian process).

A factor whose matrix is not positive definite in some row marks that row in ``ok`` (its arrays then hold an
identity, so that the batch stays finite).
"""

from __future__ import annotations

import numpy as np

from .precision import MAX_BORDER

__all__ = ["ArrowFactor", "BandFactor", "DenseFactor", "MAX_BORDER"]


def _batched_cholesky(S):
    """``(L, ok)``: the lower Cholesky factor of each of ``S (B, r, r)``, identity where not positive definite."""
    B, r = S.shape[0], S.shape[-1]
    L = np.broadcast_to(np.eye(r), S.shape).copy()
    ok = np.ones(B, dtype=bool)
    if r == 0:
        return L, ok
    finite = np.isfinite(S).all(axis=(1, 2))
    ok &= finite
    try:
        L[finite] = np.linalg.cholesky(S[finite])
        return L, ok
    except np.linalg.LinAlgError:
        pass
    for b in np.flatnonzero(finite):  # one failed: find which
        try:
            L[b] = np.linalg.cholesky(S[b])
        except np.linalg.LinAlgError:
            ok[b] = False
    return L, ok


class ArrowFactor:
    """``P = [[diag(D), C], [C', E]]`` over (``rest``, ``border``) coordinates of ``m``, for a batch (module
    docstring). ``D (B, n)``, ``C (B, n, r)``, ``E (B, r, r)``."""

    def __init__(self, rest, border, D, C, E):
        self.rest, self.border = np.asarray(rest), np.asarray(border)
        self.m = len(self.rest) + len(self.border)
        with np.errstate(invalid="ignore"):
            self.ok = np.isfinite(D).all(axis=1) & (D > 0).all(axis=1) & np.isfinite(C).all(axis=(1, 2))
        D = np.where(self.ok[:, None], D, 1.0)
        C = np.where(self.ok[:, None, None], C, 0.0)
        E = np.where(self.ok[:, None, None], E, np.eye(E.shape[-1]))
        self.sqrt_d = np.sqrt(D)
        self.W = C / self.sqrt_d[:, :, None]
        self.L, chol_ok = _batched_cholesky(E - np.einsum("bni,bnj->bij", self.W, self.W))
        self.ok &= chol_ok
        self.L_inv = np.linalg.inv(self.L) if self.L.shape[-1] else self.L
        self.log_det = 2.0 * np.sum(np.log(self.sqrt_d), axis=1) + 2.0 * np.sum(
            np.log(np.diagonal(self.L, axis1=1, axis2=2)), axis=1)

    def _split(self, v):
        return v[:, self.rest], v[:, self.border]

    def _join(self, v1, v2):
        out = np.empty((v1.shape[0], self.m))
        out[:, self.rest], out[:, self.border] = v1, v2
        return out

    def whiten(self, g):
        """``M^{-T} g``: ``U y1 = g1``, ``L y2 = g2 - W' y1``."""
        g1, g2 = self._split(g)
        y1 = g1 / self.sqrt_d
        y2 = np.einsum("bij,bj->bi", self.L_inv, g2 - np.einsum("bni,bn->bi", self.W, y1))
        return self._join(y1, y2)

    def from_white(self, z):
        """``M^{-1} z``: ``L' d2 = z2``, ``U d1 = z1 - W d2``."""
        z1, z2 = self._split(z)
        d2 = np.einsum("bji,bj->bi", self.L_inv, z2)
        d1 = (z1 - np.einsum("bni,bi->bn", self.W, d2)) / self.sqrt_d
        return self._join(d1, d2)

    def solve(self, g):
        """``P^{-1} g = M^{-1} M^{-T} g``."""
        return self.from_white(self.whiten(g))

    def diagonal(self):
        d = np.empty((self.sqrt_d.shape[0], self.m))
        d[:, self.rest] = self.sqrt_d**2
        d[:, self.border] = np.einsum("bij,bij->bi", self.L, self.L) + np.einsum("bni,bni->bi", self.W, self.W)
        return d

    def times(self, v):
        """``P v = M' (M v)``."""
        v1, v2 = self._split(v)
        Mv1 = self.sqrt_d * v1 + np.einsum("bni,bi->bn", self.W, v2)
        Mv2 = np.einsum("bji,bj->bi", self.L, v2)  # L' v2
        return self._join(self.sqrt_d * Mv1,
                          np.einsum("bni,bn->bi", self.W, Mv1) + np.einsum("bij,bj->bi", self.L, Mv2))


class BandFactor:
    """``P = L L'`` with ``P`` and ``L`` banded, stored by rows: ``band[:, i, k] = P[i, i - k]`` for
    ``k = 0..b`` (module docstring). ``band (B, m, b + 1)``; entries before the first row are ignored."""

    def __init__(self, band):
        B, m, width = band.shape
        self.m, self.b = m, width - 1
        L = np.zeros_like(band)
        ok = np.isfinite(band).all(axis=(1, 2))
        band = np.where(ok[:, None, None], band, np.eye(1, width)[0])
        for i in range(m):
            for k in range(min(self.b, i), 0, -1):  # L[i, i-k], from the rows above
                j = i - k
                inner = np.einsum("bt,bt->b", L[:, i, k + 1:], L[:, j, 1:width - k]) if k < self.b else 0.0
                L[:, i, k] = (band[:, i, k] - inner) / L[:, j, 0]
            pivot = band[:, i, 0] - np.einsum("bt,bt->b", L[:, i, 1:], L[:, i, 1:])
            bad = ~(pivot > 0)
            if bad.any():  # not positive definite: the row's factor becomes the identity's
                ok &= ~bad
                L[bad] = np.eye(1, width)[0]
                band = np.where(bad[:, None, None], np.eye(1, width)[0], band)
                pivot = np.where(bad, 1.0, pivot)
            L[:, i, 0] = np.sqrt(pivot)
        self.L, self.ok = L, ok
        self.log_det = 2.0 * np.sum(np.log(L[:, :, 0]), axis=1)

    def whiten(self, g):
        """``M^{-T} g = L^{-1} g``: forward substitution."""
        y = np.empty_like(g)
        for i in range(self.m):
            k = min(self.b, i)
            y[:, i] = (g[:, i] - np.einsum("bt,bt->b", self.L[:, i, 1:k + 1], y[:, i - 1::-1][:, :k] if i else
                                           y[:, :0])) / self.L[:, i, 0]
        return y

    def from_white(self, z):
        """``M^{-1} z = L^{-T} z``: back substitution, ``d_i = (z_i - sum_k L[i + k, i] d_{i + k}) / L[i, i]``."""
        d = np.empty_like(z)
        m = self.m
        for i in range(m - 1, -1, -1):
            k = min(self.b, m - 1 - i)
            rows = np.arange(i + 1, i + 1 + k)
            d[:, i] = (z[:, i] - np.einsum("bt,bt->b", self.L[:, rows, np.arange(1, k + 1)], d[:, i + 1:i + 1 + k])
                       ) / self.L[:, i, 0]
        return d

    def solve(self, g):
        return self.from_white(self.whiten(g))

    def diagonal(self):
        return np.sum(self.L**2, axis=2)

    def times(self, v):
        """``P v = L (L' v)``."""
        m = self.m
        u = self.L[:, :, 0] * v  # L' v: u_j = sum_k L[j + k, j] v_{j + k}
        for k in range(1, self.b + 1):
            u[:, :m - k] += self.L[:, k:, k] * v[:, k:]
        out = self.L[:, :, 0] * u  # L u: (L u)_i = sum_k L[i, i - k] u_{i - k}
        for k in range(1, self.b + 1):
            out[:, k:] += self.L[:, k:, k] * u[:, :m - k]
        return out


class DenseFactor:
    """``P (B, m, m) = L L'``, ``M = L'`` (module docstring)."""

    def __init__(self, P):
        self.m = P.shape[-1]
        self.L, self.ok = _batched_cholesky(P)
        self.L_inv = np.linalg.inv(self.L)
        self.log_det = 2.0 * np.sum(np.log(np.diagonal(self.L, axis1=1, axis2=2)), axis=1)

    def whiten(self, g):
        """``M^{-T} g = L^{-1} g``."""
        return np.einsum("bij,bj->bi", self.L_inv, g)

    def from_white(self, z):
        """``M^{-1} z = L^{-T} z``."""
        return np.einsum("bji,bj->bi", self.L_inv, z)

    def solve(self, g):
        return self.from_white(self.whiten(g))

    def diagonal(self):
        return np.einsum("bij,bij->bi", self.L, self.L)

    def times(self, v):
        return np.einsum("bij,bkj,bk->bi", self.L, self.L, v)
