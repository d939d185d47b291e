"""The Fisher metric of a Gaussian-process model and its stable algebra (Girolami & Calderhead 2011; Rasmussen &
Williams 2006, section 3.4.3), used by :class:`pmz.gp.riemannian_hmc.GPRiemannianHMC`.

For a model found by :func:`pmz.gp.structure.gp_structure` (sampled ``v ~ N(mu_v, Sigma_v)``, latent ``f = a + A v``,
likelihood tempered by beta) the metric is ``G(v) = Sigma_v^{-1} + A' W A`` with ``W = beta Lambda(f)``; all of its
algebra goes through ``B = I + S K S`` (``S = W^{1/2}``), whose eigenvalues are >= 1, so K is never inverted (see the
formulas in :mod:`pmz.gp.riemannian_hmc`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import lapack, solve_triangular

__all__ = ["GPMetric", "MetricFactors"]


# Dense linear algebra on stacks of B = I + S K S, one matrix per particle. NumPy's stacked routines run one C loop
# over the stack without per-matrix Python overhead, but they copy every matrix to Fortran order, solve SPD systems
# by LU (twice Cholesky's flops), have no triangular inverse, and a stack of 100 matrices of 100 x 100 (8 MB) no
# longer fits in cache, so building it and then factoring it streams it through memory twice. Above a few dozen
# rows pmz builds B for a few particles at a time (about 512 kB) and calls LAPACK once per matrix: dposv (Cholesky
# and solve) or dpotrf + dtrtri (factor and triangular inverse), on the transposed C-ordered matrix (B is symmetric:
# no copy). Measured on one core, 100 particles, n = 100: 4.7 ms per batch of solves against 8.3 ms for NumPy's
# stacked LU; crossovers at about 24 rows (solve) and 10 rows (inverse).
_LAPACK_SOLVE = 24
_LAPACK_INVERSE = 10
_CHUNK_BYTES = 1 << 19


def _spd_matrices(S, K, diag):
    """``B = I + S K S`` for a stack ``S (N, m)``: one outer product, one in-place product with K."""
    B = np.multiply(S[:, :, None], S[:, None, :])
    B *= K
    B[:, diag, diag] += 1.0
    return B


def _chunk(m: int) -> int:
    """Particles per block of B matrices built at once (about ``_CHUNK_BYTES``)."""
    return max(1, _CHUNK_BYTES // (8 * m * m))


def _factor(S, K, ok):
    """Lower Cholesky factors ``L`` of ``B = I + S K S`` and their inverses, stacks ``(N, m, m)``, from ``S (N, m)``.
    A particle flagged not ok, or whose B is not positive definite, gets identities and ``ok = False``."""
    N, m = S.shape
    diag = np.arange(m)
    ok = ok.copy()
    if m < _LAPACK_INVERSE:
        B = _spd_matrices(S, K, diag)
        B[~ok] = np.eye(m)
        try:
            L = np.linalg.cholesky(B)
            return L, np.linalg.solve(L, np.broadcast_to(np.eye(m), L.shape)), ok
        except np.linalg.LinAlgError:
            pass
    L, inv = np.empty((N, m, m)), np.empty((N, m, m))
    step = _chunk(m)
    for a in range(0, N, step):
        B = _spd_matrices(S[a : a + step], K, diag)
        for j in range(B.shape[0]):
            i = a + j
            # B[j].T is B[j] in Fortran order: its upper factor U = L' comes back in Fortran order, U.T = L in C order
            U, info = lapack.dpotrf(B[j].T, lower=0, clean=1, overwrite_a=1) if ok[i] else (None, 1)
            if info != 0:
                L[i], inv[i], ok[i] = np.eye(m), np.eye(m), False
                continue
            L[i] = U.T
            inv[i] = lapack.dtrtri(U, lower=0, overwrite_c=1)[0].T  # (L')^{-1} = (L^{-1})'
    return L, inv, ok


def _solve_spd(S, K, u, ok):
    """``B^{-1} u`` for ``B = I + S K S``, ``S (N, m)``, ``u (N, m)``: NumPy's stacked LU solve for small m, one LAPACK
    dposv (Cholesky and two triangular solves) per matrix above ``_LAPACK_SOLVE`` rows. ``ok`` is False where it
    failed (or was flagged not ok on entry: those rows are not solved)."""
    N, m = S.shape
    diag = np.arange(m)
    ok = ok.copy()
    if m < _LAPACK_SOLVE:
        B = _spd_matrices(S, K, diag)
        B[~ok] = np.eye(m)
        try:
            return np.linalg.solve(B, u[:, :, None])[:, :, 0], ok
        except np.linalg.LinAlgError:
            pass
    z = np.zeros_like(u)
    step = _chunk(m)
    for a in range(0, N, step):
        B = _spd_matrices(S[a : a + step], K, diag)
        for j in range(B.shape[0]):
            i = a + j
            if not ok[i]:
                continue
            _, x, info = lapack.dposv(B[j].T, u[i], lower=0, overwrite_a=1)
            if info == 0:
                z[i] = x
            else:
                ok[i] = False
    return z, ok


def _matvec(M, u, trans: bool = False):
    """``M u`` (or ``M' u``) for stacks ``M (N, m, m)``, ``u (N, m)`` (NumPy's batched matmul: 2x einsum's speed)."""
    return np.matmul(np.swapaxes(M, 1, 2) if trans else M, u[:, :, None])[:, :, 0]


@dataclass(frozen=True)
class MetricFactors:
    """The metric ``G(v) = Sigma_v^{-1} + A' W A`` at a batch of positions, in factored form.

    Attributes
    ----------
    f : ndarray (N, n)
        Latent values ``a + A v``.
    sqrt_w : ndarray (N, n)
        ``S = sqrt(beta lambda(f))``.
    dw : ndarray (N, n)
        ``beta lambda'(f)``: the derivative of W's diagonal with respect to f.
    chol : ndarray (N, n, n)
        Lower Cholesky factor of ``B = I + S K S``.
    log_det : ndarray (N,)
        ``log |B| = log |G| + log |Sigma_v|``.
    ok : ndarray (N,) of bool
        False where the Fisher information or the factorisation was not finite.
    inv_chol : ndarray (N, n, n)
        ``L_B^{-1}``: every later solve at these positions (the momentum iterates) is two matrix-vector products.
    dw_var : ndarray (N, n)
        ``beta lambda'(f) * diag(A G^{-1} A')``, the part of dH/dv that does not depend on p, computed in O(n^2)
        from ``diag(B^{-1})`` (see :meth:`GPMetric.factors`).
    """

    f: np.ndarray
    sqrt_w: np.ndarray
    dw: np.ndarray
    chol: np.ndarray
    log_det: np.ndarray
    ok: np.ndarray
    inv_chol: np.ndarray
    dw_var: np.ndarray

    def take(self, rows) -> "MetricFactors":
        """The factors of a subset of the particles."""
        fields = ("f", "sqrt_w", "dw", "chol", "log_det", "ok", "inv_chol", "dw_var")
        return MetricFactors(*(getattr(self, k)[rows] for k in fields))


class GPMetric:
    """The Fisher metric of a :class:`~pmz.gp.structure.GPStructure` and its algebra (see the module docstring).

    The constants ``K = A Sigma_v A'``, ``C = A Sigma_v`` and ``R = chol(Sigma_v)^{-T}`` (``R R' = Sigma_v^{-1}``,
    for momentum draws) are computed once.
    """

    def __init__(self, structure):
        self.structure = structure
        A = np.asarray(structure.loading, dtype=float)
        sigma_v = np.asarray(structure.value_cov, dtype=float)
        self.A = A
        self.sigma_v = sigma_v
        self.K = A @ sigma_v @ A.T
        self.K = 0.5 * (self.K + self.K.T)
        self.C = A @ sigma_v
        self.diag_K = np.diag(self.K).copy()
        self._diag = np.arange(self.K.shape[0])
        self._diagonal_prior = np.count_nonzero(sigma_v - np.diag(np.diag(sigma_v))) == 0
        if self._diagonal_prior:
            self.R = np.diag(1.0 / np.sqrt(np.diag(sigma_v)))
        else:
            L = np.linalg.cholesky(sigma_v)
            self.R = solve_triangular(L, np.eye(L.shape[0]), lower=True).T
        self.constant = structure.likelihood == "normal"  # lambda' = 0: the metric does not depend on v

    def _weights(self, V, beta, derivative: bool = True):
        """Latent values, ``w = beta lambda(f)``, ``beta lambda'(f)`` (if ``derivative``) and a flag: False where
        something was not finite (the weights are then set to 0, so that ``B = I + S K S = I``)."""
        F = self.structure.offset + V @ self.A.T
        beta = np.asarray(beta, dtype=float)[:, None]
        if derivative:
            lam, dlam = self.structure.fisher_information(F)
            dw = beta * dlam
        else:
            lam, dw = self.structure.fisher_information(F, derivative=False), None
        w = beta * lam
        with np.errstate(invalid="ignore", over="ignore"):
            total = np.sum(w * self.diag_K, axis=1) + np.sum(F, axis=1) + (0.0 if dw is None else np.sum(dw, axis=1))
            ok = np.isfinite(total)  # B's diagonal finite, hence B (|B_ij| <= sqrt(B_ii B_jj))
            if not ok.all():
                w = np.where(ok[:, None], w, 0.0)
                dw = None if dw is None else np.where(ok[:, None], dw, 0.0)
        return F, w, dw, ok

    def factors(self, V, beta) -> MetricFactors:
        """Factor ``G`` at positions ``V (N, d)`` for inverse temperatures ``beta (N,)``: one Cholesky of B and its
        triangular inverse ``L_B^{-1}`` per particle (n^3 / 3 flops each).

        The p-independent part of dH/dv needs ``beta lambda'(f_i) diag(A G^{-1} A')_i``. With
        ``A G^{-1} A' = K - K S B^{-1} S K`` and ``S (K S B^{-1} S K) S = (B - I) B^{-1} (B - I) = B - 2 I + B^{-1}``,
        ``diag(A G^{-1} A')_i = (1 - [B^{-1}]_ii) / w_i``, so that

            beta lambda'(f_i) diag(A G^{-1} A')_i = (lambda'(f_i) / lambda(f_i)) (1 - [B^{-1}]_ii),

        with ``diag(B^{-1})`` the column sums of ``L_B^{-1}`` squared: O(n^2) instead of the O(n^3) product
        ``L_B^{-1} S K``. Where ``w_i`` underflows the factor ``1 - [B^{-1}]_ii`` is exactly 0 (row i of B is e_i)
        and so is the term; its absolute error is ``|lambda'/lambda|`` times the rounding of ``diag(B^{-1})``.
        """
        F, w, dw, ok = self._weights(V, beta)
        S = np.sqrt(w)
        L, inv_chol, ok = _factor(S, self.K, ok)
        log_det = 2.0 * np.sum(np.log(np.diagonal(L, axis1=1, axis2=2)), axis=1)
        binv_diag = np.einsum("nji,nji->ni", inv_chol, inv_chol)
        with np.errstate(divide="ignore", invalid="ignore"):
            dw_var = np.where(w > 0, dw / w, 0.0) * (1.0 - binv_diag)
        return MetricFactors(F, S, dw, L, log_det, ok, inv_chol, dw_var)

    def solve_at(self, V, beta, P):
        """``G(v)^{-1} p`` at new positions without keeping factors (the iterates of the implicit position update):
        one SPD solve with B per particle. Returns ``(G^{-1} p (N, d), ok (N,))``."""
        _, w, _, ok = self._weights(V, beta, derivative=False)
        S = np.sqrt(w)
        z, ok = _solve_spd(S, self.K, S * (P @ self.C.T), ok)
        return P @ self.sigma_v - (S * z) @ self.C, ok

    def solve(self, fac: MetricFactors, P, rows=None) -> np.ndarray:
        """``G^{-1} p = Sigma_v p - C' S B^{-1} S C p`` for momenta ``P (N, d)`` (or the particles ``rows`` of
        ``fac``, one row of P each): two batched matrix-vector products with ``L_B^{-1}``."""
        sqrt_w = fac.sqrt_w if rows is None else fac.sqrt_w[rows]
        u = sqrt_w * (P @ self.C.T)
        n_all = fac.inv_chol.shape[0]
        if rows is None or 4 * len(rows) <= n_all:
            inv_chol = fac.inv_chol if rows is None else fac.inv_chol[rows]
            z = _matvec(inv_chol, _matvec(inv_chol, u), trans=True)
        else:  # most particles: multiply all of them rather than copy the matrices of the subset
            full = np.zeros((n_all, u.shape[1]))
            full[rows] = u
            z = _matvec(fac.inv_chol, _matvec(fac.inv_chol, full), trans=True)[rows]
        return P @ self.sigma_v - (sqrt_w * z) @ self.C

    def latent_variances(self, fac: MetricFactors) -> np.ndarray:
        """``diag(A G^{-1} A') = diag(K) - colsums((L_B^{-1} S K)^2)``, shape ``(N, n)`` (a triangular-times-full
        product per particle, O(n^3); for checks: the kernel uses ``fac.dw_var``). In the centred case (A = I) this
        is ``diag(G^{-1})``."""
        SK = fac.sqrt_w[:, :, None] * self.K
        M = fac.inv_chol @ SK
        return self.diag_K - np.sum(M**2, axis=1)

    def kinetic(self, fac: MetricFactors, P, GinvP=None) -> np.ndarray:
        """``p' G^{-1} p / 2``, shape ``(N,)``."""
        GinvP = self.solve(fac, P) if GinvP is None else GinvP
        return 0.5 * np.sum(P * GinvP, axis=1)

    def sample_momentum(self, rng: np.random.Generator, fac: MetricFactors) -> np.ndarray:
        """``p ~ N(0, G)`` as ``R z1 + A' S z2`` with ``z1 ~ N(0, I_d)``, ``z2 ~ N(0, I_n)``: the covariance is
        ``Sigma_v^{-1} + A' W A``, no factorisation of G needed."""
        N = fac.f.shape[0]
        z1 = rng.standard_normal((N, self.R.shape[0]))
        z2 = rng.standard_normal((N, self.A.shape[0]))
        return z1 @ self.R.T + (fac.sqrt_w * z2) @ self.A

    def hamiltonian_gradient(self, fac: MetricFactors, grad_log_density, P, GinvP=None) -> np.ndarray:
        """``dH/dv = -grad log f_beta + A' [beta lambda'(f) (diag(A G^{-1} A') - (A G^{-1} p)^2) / 2]``."""
        GinvP = self.solve(fac, P) if GinvP is None else GinvP
        r = GinvP @ self.A.T
        return -grad_log_density + (0.5 * (fac.dw_var - fac.dw * r**2)) @ self.A

    def dense(self, V, beta) -> np.ndarray:
        """``G(v)`` as dense matrices ``(N, d, d)``, inverting ``Sigma_v``: for checks on small problems only."""
        beta = np.asarray(beta, dtype=float)
        beta = np.broadcast_to(beta, (np.shape(V)[0],))
        lam = self.structure.fisher_information(self.structure.latent_values(V), derivative=False)
        W = beta[:, None] * lam
        return np.linalg.inv(self.sigma_v) + np.einsum("ji,nj,jk->nik", self.A, W, self.A)
