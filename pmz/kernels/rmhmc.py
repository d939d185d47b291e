"""Riemannian-manifold HMC for Gaussian-process models, on a batch of particles.

Girolami & Calderhead (2011, "Riemann manifold Langevin and Hamiltonian Monte Carlo methods", JRSS B 73) sample
with a position-dependent metric G(x); Fraccaro, Paquet & Winther (ARM section 4) use it for GP models, where
plain HMC oscillates across the narrow, correlated valleys of the posterior. For a model found by
:func:`pmz.model.gp.gp_structure`, sampled variable ``v ~ N(mu_v, Sigma_v)``, latent ``f = a + A v`` and a
factorised likelihood tempered by beta, the metric is the prior precision plus the expected Fisher information

    G(v) = Sigma_v^{-1} + A' W A,      W = beta Lambda(f) = diag(beta lambda(f_i))

(``K^{-1} + beta Lambda(f)`` for the centred ``A = I``, ``Sigma_v = K``; ``I + beta L' Lambda(f) L`` for the
whitened ``A = L = chol(K)``). All algebra goes through ``B = I + S K S = L_B L_B'``, ``S = W^{1/2}``, whose
eigenvalues are >= 1 (K is never inverted; Rasmussen & Williams 2006, section 3.4.3):

    G^{-1} = Sigma_v - C' S B^{-1} S C,   C = A Sigma_v            (Woodbury)
    log |G| = log |B| - log |Sigma_v|
    diag(A G^{-1} A') = diag(K) - colsums((L_B^{-1} S K)^2)

The Hamiltonian (momentum ``p ~ N(0, G(v))``) is

    H(v, p) = -log f_beta(v) + 1/2 log |G(v)| + 1/2 p' G(v)^{-1} p.

Because ``dG/dv_k = A' (dW/dv_k) A`` and W is diagonal in f, ``dG/dv = sum_i beta lambda'(f_i) (dA_i) a_i a_i'``
is a sum of rank-one terms (one per likelihood term, ``a_i`` the i-th row of A), and

    dH/dv = -grad log f_beta(v) + A' [ beta lambda'(f) * ( diag(A G^{-1} A') - (A G^{-1} p)^2 ) / 2 ]

needs only ``diag(A G^{-1} A')`` and ``G^{-1} p`` (``diag(G^{-1})`` in the centred case).

One transition is the generalised leapfrog (Girolami & Calderhead eq 16-18), ``n_leapfrog`` times:

    p' = p - eps/2 dH/dv(v, p')                              implicit: fixed-point iteration at fixed v
    v' = v + eps/2 [G^{-1}(v) + G^{-1}(v')] p'               implicit: fixed-point iteration, a Cholesky of B
                                                              at every iterate
    p'' = p' - eps/2 dH/dv(v', p')                           explicit

then acceptance with ``min(1, exp(H(v, p) - H(v', p'')))``. The iterations stop when the largest change of a
particle's coordinates is below ``fixed_point_tol`` (relative to max(1, largest coordinate)); particles that do not
converge within ``max_fixed_point`` iterations, or produce non-finite values, are rejected. ``eps = step_size * u``
with ``u ~ U(1 - jitter, 1 + jitter)`` per particle.

Cost per leapfrog step and particle (n likelihood terms, d sampled coordinates): one batched log-density +
gradient evaluation of the model; per position iterate one Cholesky of B (n^3/3 flops) and two triangular
solves; at the new position one more Cholesky and one triangular solve with n right-hand sides (n^3) for
``diag(A G^{-1} A')``; momentum iterates cost two triangular solves each (n^2). A Normal likelihood has a constant
metric: the leapfrog is then explicit and costs one factorisation per transition (RMHMC = HMC with the tempered
posterior precision as mass matrix). All of it is batched over particles: ``(N, n, n)`` stacks, one
``np.linalg.cholesky`` call per iterate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular

from .base import Kernel, KernelInfo, KernelParams, ParticleState, metropolis_accept, select

__all__ = ["GPMetric", "MetricFactors", "GPRiemannianHMC", "RMHMCInfo"]


# Batched dense linear algebra. NumPy's stacked routines run one C loop over the stack (no per-matrix Python
# overhead) but use unblocked LU / Cholesky; SciPy's per-matrix LAPACK calls win once the matrices are large.
_SMALL_TRIANGULAR = 40  # triangular solves: NumPy's LU on the triangle below, SciPy's trsm above
_SMALL_FACTOR = 100  # Cholesky / SPD solves: NumPy's stacked routines below, SciPy per matrix above


def _solve_lower(L, b, trans: bool = False):
    """``L^{-1} b`` (or ``L'^{-1} b``) for lower-triangular stacks ``L (N, m, m)`` and ``b (N, m, k)``."""
    if L.shape[-1] <= _SMALL_TRIANGULAR:
        return np.linalg.solve(np.swapaxes(L, -1, -2) if trans else L, b)
    solve = lambda Li, bi: solve_triangular(Li, bi, lower=True, trans=int(trans), check_finite=False)  # noqa: E731
    return np.stack([solve(Li, bi) for Li, bi in zip(L, b)])


def _cholesky(B, ok):
    """Lower Cholesky factors of a stack of SPD matrices; a matrix that fails (or is flagged not ok) gets the
    identity and ``ok = False``."""
    m = B.shape[-1]
    B = np.where(ok[:, None, None], B, np.eye(m))
    if m <= _SMALL_FACTOR:
        try:
            return np.linalg.cholesky(B), ok
        except np.linalg.LinAlgError:
            pass
    L, ok = np.empty_like(B), ok.copy()
    for i in range(B.shape[0]):
        try:
            L[i] = cho_factor(B[i], lower=True, check_finite=False)[0]
            L[i][np.triu_indices(m, 1)] = 0.0
        except np.linalg.LinAlgError:
            L[i], ok[i] = np.eye(m), False
    return L, ok


def _solve_spd(B, u, ok):
    """``B^{-1} u`` for a stack of SPD matrices ``B (N, m, m)`` and vectors ``u (N, m)``: one LU solve (small m) or
    one Cholesky factorisation and two triangular solves per matrix (large m). ``ok`` is False where it failed."""
    m = B.shape[-1]
    B = np.where(ok[:, None, None], B, np.eye(m))
    if m <= _SMALL_FACTOR:
        try:
            return np.linalg.solve(B, u[:, :, None])[:, :, 0], ok
        except np.linalg.LinAlgError:
            pass
    z, ok = np.zeros_like(u), ok.copy()
    for i in range(B.shape[0]):
        try:
            z[i] = cho_solve(cho_factor(B[i], lower=True, check_finite=False), u[i], check_finite=False)
        except np.linalg.LinAlgError:
            ok[i] = False
    return z, ok


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
    """

    f: np.ndarray
    sqrt_w: np.ndarray
    dw: np.ndarray
    chol: np.ndarray
    log_det: np.ndarray
    ok: np.ndarray
    inv_chol: np.ndarray

    def take(self, rows) -> "MetricFactors":
        """The factors of a subset of the particles."""
        fields = ("f", "sqrt_w", "dw", "chol", "log_det", "ok", "inv_chol")
        return MetricFactors(*(getattr(self, k)[rows] for k in fields))


class GPMetric:
    """The Fisher metric of a :class:`~pmz.model.gp.GPStructure` and its algebra (see the module docstring).

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
        """Latent values, ``S = sqrt(beta lambda(f))``, ``beta lambda'(f)`` (if ``derivative``), ``B = I + S K S``
        and a flag: False where something was not finite (the weights are then set to 0, ``B = I``)."""
        F = self.structure.offset + V @ self.A.T
        beta = np.asarray(beta, dtype=float)[:, None]
        if derivative:
            lam, dlam = self.structure.fisher_information(F)
            dw = beta * dlam
        else:
            lam, dw = self.structure.fisher_information(F, derivative=False), None
        w = beta * lam
        with np.errstate(invalid="ignore", over="ignore"):
            total = np.sum(w, axis=1) + np.sum(F, axis=1) + (0.0 if dw is None else np.sum(dw, axis=1))
            ok = np.isfinite(total)
            if not ok.all():
                w = np.where(ok[:, None], w, 0.0)
                dw = None if dw is None else np.where(ok[:, None], dw, 0.0)
            S = np.sqrt(w)
            B = S[:, :, None] * self.K * S[:, None, :]
            B[:, self._diag, self._diag] += 1.0
            ok &= np.isfinite(np.sum(B, axis=(1, 2)))
        return F, S, dw, B, ok

    def factors(self, V, beta) -> MetricFactors:
        """Factor ``G`` at positions ``V (N, d)`` for inverse temperatures ``beta (N,)``: one Cholesky of B and the
        inverse factor ``L_B^{-1}`` (a triangular solve with n right-hand sides) per particle."""
        F, S, dw, B, ok = self._weights(V, beta)
        L, ok = _cholesky(B, ok)
        log_det = 2.0 * np.sum(np.log(np.diagonal(L, axis1=1, axis2=2)), axis=1)
        inv_chol = _solve_lower(L, np.broadcast_to(np.eye(L.shape[-1]), L.shape))
        return MetricFactors(F, S, dw, L, log_det, ok, inv_chol)

    def solve_at(self, V, beta, P):
        """``G(v)^{-1} p`` at new positions without keeping factors (the iterates of the implicit position update):
        one SPD solve with B per particle. Returns ``(G^{-1} p (N, d), ok (N,))``."""
        _, S, _, B, ok = self._weights(V, beta, derivative=False)
        z, ok = _solve_spd(B, S * (P @ self.C.T), ok)
        return P @ self.sigma_v - (S * z) @ self.C, ok

    def solve(self, fac: MetricFactors, P) -> np.ndarray:
        """``G^{-1} p = Sigma_v p - C' S B^{-1} S C p`` for momenta ``P (N, d)``."""
        u = fac.sqrt_w * (P @ self.C.T)
        z = np.einsum("nji,nj->ni", fac.inv_chol, np.einsum("nij,nj->ni", fac.inv_chol, u))
        return P @ self.sigma_v - (fac.sqrt_w * z) @ self.C

    def latent_variances(self, fac: MetricFactors) -> np.ndarray:
        """``diag(A G^{-1} A') = diag(K) - colsums((L_B^{-1} S K)^2)``, shape ``(N, n)`` (one triangular solve
        with n right-hand sides per particle). In the centred case (A = I) this is ``diag(G^{-1})``."""
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

    def hamiltonian_gradient(self, fac: MetricFactors, latent_var, grad_log_density, P, GinvP=None) -> np.ndarray:
        """``dH/dv = -grad log f_beta + A' [beta lambda'(f) (diag(A G^{-1} A') - (A G^{-1} p)^2) / 2]``."""
        GinvP = self.solve(fac, P) if GinvP is None else GinvP
        r = GinvP @ self.A.T
        return -grad_log_density + (0.5 * fac.dw * (latent_var - r**2)) @ self.A

    def dense(self, V, beta) -> np.ndarray:
        """``G(v)`` as dense matrices ``(N, d, d)``, inverting ``Sigma_v``: for checks on small problems only."""
        beta = np.asarray(beta, dtype=float)
        beta = np.broadcast_to(beta, (np.shape(V)[0],))
        lam, _ = self.structure.fisher_information(self.structure.latent_values(V))
        W = beta[:, None] * lam
        return np.linalg.inv(self.sigma_v) + np.einsum("ji,nj,jk->nik", self.A, W, self.A)


@dataclass(frozen=True)
class RMHMCInfo(KernelInfo):
    """What one RMHMC transition reports, per particle (besides ``acceptance`` and ``accepted``).

    Attributes
    ----------
    n_fixed_point : ndarray (n,) of int
        Fixed-point iterations of the trajectory (momentum and position updates together).
    converged : ndarray (n,) of bool
        Every implicit update converged and every value was finite (else the proposal was rejected).
    energy_error : ndarray (n,)
        ``H(end) - H(start)`` (NaN where not converged).
    """

    n_fixed_point: np.ndarray
    converged: np.ndarray
    energy_error: np.ndarray


class GPRiemannianHMC(Kernel):
    """Batched Riemannian-manifold HMC with the Fisher metric of a GP model (see the module docstring).

    Parameters
    ----------
    structure : GPStructure
        From :func:`pmz.model.gp.gp_structure`; or build the kernel with :meth:`from_model`.
    n_leapfrog : int
        Generalised leapfrog steps per transition (paper: 10 with eps = 0.1).
    fixed_point_tol : float
        Convergence tolerance of the implicit updates (largest change, relative to max(1, largest coordinate)).
    max_fixed_point : int
        Iterations allowed per implicit update; particles that do not converge are rejected.
    jitter : float in [0, 1)
        Per-particle step-size jitter ``eps = step_size * U(1 - jitter, 1 + jitter)``.

    Notes
    -----
    ``params.step_size`` is tuned by pmz's pilot towards ``target_acceptance = 0.8``; ``params.scale`` is ignored
    (the metric replaces the mass matrix); ``params.n_leapfrog`` is used. The state's log-density parts come from
    the family (``family.parts(x, grad=True)``, one call per leapfrog step); the metric uses only the structure.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pmz
    >>> with pm.Model() as model:
    ...     gp = pm.gp.Latent(cov_func=pm.gp.cov.ExpQuad(1, ls=0.5))
    ...     f = gp.prior("f", np.linspace(0, 1, 5)[:, None])
    ...     _ = pm.Bernoulli("y", p=pm.math.invprobit(f), observed=[0, 1, 1, 0, 1])
    >>> kernel = GPRiemannianHMC.from_model(model)
    >>> res = pmz.evidence(model, method="ais", kernel=kernel, n_paths=32, n_temps=20, progressbar=False,
    ...                    random_seed=1)                                            # doctest: +SKIP
    """

    name = "rmhmc"
    needs_grad = True
    target_acceptance = 0.8

    def __init__(
        self,
        structure,
        *,
        n_leapfrog: int = 10,
        fixed_point_tol: float = 1e-6,
        max_fixed_point: int = 50,
        jitter: float = 0.2,
    ):
        if int(n_leapfrog) != n_leapfrog or n_leapfrog < 1:
            raise ValueError(f"n_leapfrog must be a positive integer, got {n_leapfrog!r}")
        if not fixed_point_tol > 0:
            raise ValueError(f"fixed_point_tol must be positive, got {fixed_point_tol!r}")
        if int(max_fixed_point) != max_fixed_point or max_fixed_point < 1:
            raise ValueError(f"max_fixed_point must be a positive integer, got {max_fixed_point!r}")
        if not 0 <= jitter < 1:
            raise ValueError(f"jitter must lie in [0, 1), got {jitter!r}")
        self.structure = structure
        self.metric = GPMetric(structure)
        self.n_leapfrog = int(n_leapfrog)
        self.fixed_point_tol = float(fixed_point_tol)
        self.max_fixed_point = int(max_fixed_point)
        self.jitter = float(jitter)

    @classmethod
    def from_model(cls, model=None, **options) -> "GPRiemannianHMC":
        """The kernel for a PyMC GP model (structure detected by :func:`pmz.model.gp.gp_structure`)."""
        from ..model.gp import gp_structure

        return cls(gp_structure(model), **options)

    def default_params(self, dim):
        return KernelParams(step_size=0.5, scale=np.ones(dim), n_leapfrog=self.n_leapfrog)

    # ------------------------------------------------------------------ implicit updates
    def _fixed_point(self, update, start):
        """Iterate ``z <- update(z)`` per particle from ``start (N, k)``.

        ``update(z, rows) -> (candidates for those rows, ok flags)``. A particle converges when its largest change
        is at most ``fixed_point_tol * max(1, largest coordinate)``; it fails (and is no longer updated) when a value
        is not finite, its update is flagged not ok, or the iteration stops contracting (a change not smaller than
        the previous one: the iteration would not converge). Returns ``(z, iterations (N,), converged (N,))``.
        """
        z = start.copy()
        n = z.shape[0]
        iters, converged = np.zeros(n, dtype=int), np.zeros(n, dtype=bool)
        previous = np.full(n, np.inf)
        rows = np.arange(n)
        for _ in range(self.max_fixed_point):
            cand, ok = update(z, rows)
            change = np.max(np.abs(cand - z[rows]), axis=1)
            z[rows] = cand
            iters[rows] += 1
            threshold = self.fixed_point_tol * np.maximum(1.0, np.max(np.abs(cand), axis=1))
            done = ok & (change <= threshold)
            failed = ~ok | ~np.isfinite(change) | (change >= previous[rows])
            converged[rows[done]] = True
            previous[rows] = change
            rows = rows[~done & ~failed]
            if rows.size == 0:
                break
        return z, iters, converged

    def _momentum_half_step(self, fac, latent_var, grad, P, eps):
        """Solve ``p' = p - eps/2 dH/dv(v, p')`` at fixed v by fixed-point iteration (each iterate: two
        matrix-vector products with ``L_B^{-1}`` per particle)."""
        metric = self.metric
        fixed = -grad + (0.5 * fac.dw * latent_var) @ metric.A  # the part of dH/dv that does not depend on p
        start = P - 0.5 * eps * fixed
        if metric.constant:
            n = P.shape[0]
            return start, np.zeros(n, dtype=int), np.ones(n, dtype=bool)

        def update(P_half, rows):
            sub = fac if rows.size == P.shape[0] else fac.take(rows)
            r = metric.solve(sub, P_half[rows]) @ metric.A.T
            cand = P[rows] - 0.5 * eps[rows] * (fixed[rows] - (0.5 * sub.dw * r**2) @ metric.A)
            return cand, np.ones(rows.size, dtype=bool)

        return self._fixed_point(update, start)

    def _position_step(self, V, P_half, fac, beta, eps):
        """Solve ``v' = v + eps/2 [G^{-1}(v) + G^{-1}(v')] p'`` by fixed-point iteration (each iterate: one solve
        with B at the iterate per particle still iterating)."""
        metric = self.metric
        q0 = metric.solve(fac, P_half)
        start = V + eps * q0
        if metric.constant:
            n = V.shape[0]
            return start, np.zeros(n, dtype=int), np.ones(n, dtype=bool)

        def update(V_new, rows):
            GinvP, ok = metric.solve_at(V_new[rows], beta[rows], P_half[rows])
            return V[rows] + 0.5 * eps[rows] * (q0[rows] + GinvP), ok

        return self._fixed_point(update, start)

    # ------------------------------------------------------------------ one transition
    def step(self, rng, state, family, beta, params):
        X = state.x
        n, dim = X.shape
        s = self.structure
        if (s.start, s.stop) != (0, dim):
            raise ValueError(f"pmz: the GP structure covers coordinates {s.start}:{s.stop}, the particles have {dim}")
        metric = self.metric
        betas = np.broadcast_to(np.asarray(beta, dtype=float), (n,))
        eps = np.broadcast_to(np.reshape(np.asarray(params.step_size, dtype=float), (-1, 1)), (n, 1))
        eps = eps * rng.uniform(1 - self.jitter, 1 + self.jitter, size=(n, 1))

        fac = metric.factors(X, betas)
        latent_var = metric.latent_variances(fac)
        P0 = metric.sample_momentum(rng, fac)
        parts = state.parts
        grad = parts.grad_log_density(beta)
        ok = fac.ok.copy()
        n_fixed = np.zeros(n, dtype=int)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            H0 = -parts.log_density(beta) + 0.5 * fac.log_det + metric.kinetic(fac, P0)
            x, P = X, P0
            for _ in range(params.n_leapfrog):
                P_half, it_p, conv_p = self._momentum_half_step(fac, latent_var, grad, P, eps)
                x_new, it_x, conv_x = self._position_step(x, P_half, fac, betas, eps)
                ok &= conv_p & conv_x & np.all(np.isfinite(x_new), axis=1) & np.all(np.isfinite(P_half), axis=1)
                n_fixed += it_p + it_x
                x = np.where(ok[:, None], x_new, X)  # failed particles are evaluated at their start (rejected)
                P_half = np.where(ok[:, None], P_half, P0)
                parts = family.parts(x, grad=True)
                grad = parts.grad_log_density(beta)
                if not metric.constant:
                    fac = metric.factors(x, betas)
                    latent_var = metric.latent_variances(fac)
                    ok &= fac.ok
                GinvP = metric.solve(fac, P_half)
                P = P_half - 0.5 * eps * metric.hamiltonian_gradient(fac, latent_var, grad, P_half, GinvP)
            H1 = -parts.log_density(beta) + 0.5 * fac.log_det + metric.kinetic(fac, P)
            ok &= np.isfinite(H1)
            energy_error = np.where(ok, H1 - H0, np.nan)
            log_ratio = np.where(ok, H0 - H1, -np.inf)
        acceptance, accepted = metropolis_accept(rng, log_ratio)
        info = RMHMCInfo(acceptance, accepted, n_fixed, ok, energy_error)
        return select(accepted, ParticleState(x, parts), state), info
