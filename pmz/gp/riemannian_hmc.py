"""Riemannian-manifold HMC for Gaussian-process models, on a batch of particles.

Girolami & Calderhead (2011, "Riemann manifold Langevin and Hamiltonian Monte Carlo methods", JRSS B 73) sample
with a position-dependent metric G(x); Fraccaro, Paquet & Winther (ARM section 4) use it for GP models, where
plain HMC oscillates across the narrow, correlated valleys of the posterior. For a model found by
:func:`pmz.gp.structure.gp_structure`, sampled variable ``v ~ N(mu_v, Sigma_v)``, latent ``f = a + A v`` and a
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
    v' = v + eps/2 [G^{-1}(v) + G^{-1}(v')] p'               implicit: fixed-point iteration, an SPD solve
                                                              with B at every iterate
    p'' = p' - eps/2 dH/dv(v', p')                           explicit

then acceptance with ``min(1, exp(H(v, p) - H(v', p'')))``. A particle's iteration stops when its residual
``|z - g(z)|`` (largest coordinate) is below ``fixed_point_tol`` (relative to max(1, largest coordinate)) and
returns ``g(z)``; only the particles still iterating are computed. The iterates are accelerated by Anderson mixing
of depth ``anderson`` (Walker & Ni 2011; the same fixed points, ~30% fewer iterates and a much shorter tail), and
the position iteration starts from a second-order guess (one more solve at v). Particles that do not converge
within ``max_fixed_point`` iterations, whose residual stops decreasing, or that produce non-finite values, are
rejected. ``eps = step_size * u`` with ``u ~ U(1 - jitter, 1 + jitter)`` per particle.

Cost per leapfrog step and particle (n likelihood terms, d sampled coordinates): one batched log-density +
gradient evaluation of the model; per position iterate (4-5 at tuned step sizes) one Cholesky of B and two
triangular solves (n^3/3 flops, LAPACK dposv); at the new position one Cholesky of B and its triangular inverse
(2 n^3/3), after which ``diag(A G^{-1} A')`` costs O(n^2) (see :meth:`GPMetric.factors`) and each
momentum iterate two matrix-vector products (n^2). A Normal likelihood has a constant metric: the leapfrog is then
explicit and costs one factorisation per transition (RMHMC = HMC with the tempered posterior precision as mass
matrix). Everything is batched over particles; above a few dozen points the matrices are built a few particles at
a time (cache-sized blocks) and factored by one LAPACK call each, below by NumPy's stacked routines.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels.base import Kernel, KernelInfo, KernelParams, ParticleState, metropolis_accept, select
from .fisher_metric import GPMetric, MetricFactors  # noqa: F401  (re-exported)

__all__ = ["GPMetric", "MetricFactors", "GPRiemannianHMC", "RMHMCInfo"]


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
        From :func:`pmz.gp.structure.gp_structure`; or build the kernel with :meth:`from_model`.
    n_leapfrog : int
        Generalised leapfrog steps per transition (paper: 10 with eps = 0.1).
    fixed_point_tol : float
        Convergence tolerance of the implicit updates (largest change, relative to max(1, largest coordinate)).
    max_fixed_point : int
        Iterations allowed per implicit update; particles that do not converge are rejected.
    jitter : float in [0, 1)
        Per-particle step-size jitter ``eps = step_size * U(1 - jitter, 1 + jitter)``.
    anderson : int
        Depth of the Anderson mixing of the fixed-point iterates (0: the plain iteration ``z <- g(z)``).

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
        anderson: int = 2,
    ):
        if int(n_leapfrog) != n_leapfrog or n_leapfrog < 1:
            raise ValueError(f"n_leapfrog must be a positive integer, got {n_leapfrog!r}")
        if not fixed_point_tol > 0:
            raise ValueError(f"fixed_point_tol must be positive, got {fixed_point_tol!r}")
        if int(max_fixed_point) != max_fixed_point or max_fixed_point < 1:
            raise ValueError(f"max_fixed_point must be a positive integer, got {max_fixed_point!r}")
        if not 0 <= jitter < 1:
            raise ValueError(f"jitter must lie in [0, 1), got {jitter!r}")
        if int(anderson) != anderson or anderson < 0:
            raise ValueError(f"anderson must be a non-negative integer, got {anderson!r}")
        self.structure = structure
        self.metric = GPMetric(structure)
        self.n_leapfrog = int(n_leapfrog)
        self.fixed_point_tol = float(fixed_point_tol)
        self.max_fixed_point = int(max_fixed_point)
        self.jitter = float(jitter)
        self.anderson = int(anderson)

    @classmethod
    def from_model(cls, model=None, **options) -> "GPRiemannianHMC":
        """The kernel for a PyMC GP model (structure detected by :func:`pmz.gp.structure.gp_structure`)."""
        from .structure import gp_structure

        return cls(gp_structure(model), **options)

    def default_params(self, dim):
        return KernelParams(step_size=0.5, scale=np.ones(dim), n_leapfrog=self.n_leapfrog)

    # ------------------------------------------------------------------ implicit updates
    def _fixed_point(self, update, start):
        """Solve ``z = g(z)`` per particle from ``start (N, k)`` by Anderson-accelerated fixed-point iteration.

        ``update(z, rows) -> (g(z[rows]), ok flags)``. A particle converges when its residual
        ``|g(z) - z|`` (largest coordinate) is at most ``fixed_point_tol * max(1, largest coordinate of g(z))``;
        the solution returned is then ``g(z)``, as for the plain iteration. The next iterate is the plain
        ``g(z_k)`` corrected by Anderson mixing of depth ``anderson`` (Walker & Ni 2011, type II):
        ``z_{k+1} = g_k - dG gamma`` with ``gamma = argmin |f_k - dF gamma|_2``, ``f = g(z) - z``, ``dF, dG`` the
        differences of the last residuals and images. The iterations converge to the same fixed point as the plain
        ones, in fewer steps (the implicit leapfrog updates contract linearly, at rates 0.1-0.3 at tuned step
        sizes). A particle whose residual does not decrease has its history cleared (a plain step); it fails (and is
        no longer updated) when a plain step does not decrease the residual either (the iteration would not
        converge), a value is not finite, or its update is flagged not ok. Returns
        ``(z, iterations (N,), converged (N,))``.
        """
        z = start.copy()
        n, k = z.shape
        depth, tol = self.anderson, self.fixed_point_tol
        iters, converged = np.zeros(n, dtype=int), np.zeros(n, dtype=bool)
        previous = np.full(n, np.inf)
        plain = np.ones(n, dtype=bool)  # the current iterate came from a plain step
        if depth:  # ring buffers of the last differences of residuals and images, per particle
            d_res, d_img = np.zeros((n, depth, k)), np.zeros((n, depth, k))
            valid = np.zeros((n, depth), dtype=bool)
            last_res, last_img = np.zeros((n, k)), np.zeros((n, k))
            ridge = 1e-10 * np.eye(depth)
        rows = np.arange(n)
        for it in range(self.max_fixed_point):
            cand, ok = update(z, rows)
            res = cand - z[rows]
            change = np.max(np.abs(res), axis=1)
            iters[rows] += 1
            done = ok & (change <= tol * np.maximum(1.0, np.max(np.abs(cand), axis=1)))
            worse = ~(change < previous[rows])  # also where the change is not finite
            stop = done | ~ok | ~np.isfinite(change) | (worse & plain[rows])
            previous[rows] = change
            if stop.any():
                z[rows[stop]] = cand[stop]
                converged[rows[done]] = True
                keep = ~stop
                rows, cand, res, worse = rows[keep], cand[keep], res[keep], worse[keep]
                if rows.size == 0:
                    break
            if not depth:
                z[rows] = cand
                continue
            if it > 0:  # the newest differences go to slot it % depth; a growing residual clears the history
                slot = it % depth
                d_res[rows, slot] = res - last_res[rows]
                d_img[rows, slot] = cand - last_img[rows]
                valid[rows, slot] = True
                valid[rows[worse]] = False
            last_res[rows], last_img[rows] = res, cand
            mask = valid[rows]
            mix = mask.any(axis=1)
            plain[rows] = ~mix
            nxt = cand
            if mix.any():
                r, mask = rows[mix], mask[mix].astype(float)
                dF = d_res[r] * mask[:, :, None]
                gram = dF @ np.swapaxes(dF, 1, 2)
                scale = np.trace(gram, axis1=1, axis2=2)[:, None, None]
                gram += ridge * scale + np.eye(depth) * (1.0 - mask)[:, :, None] + 1e-300 * np.eye(depth)
                gamma = np.linalg.solve(gram, dF @ res[mix][:, :, None])[:, :, 0] * mask
                gamma = np.where(np.isfinite(gamma), gamma, 0.0)
                nxt = cand.copy()
                nxt[mix] -= (gamma[:, None, :] @ d_img[r])[:, 0, :]
            z[rows] = nxt
        return z, iters, converged

    def _momentum_half_step(self, fac, grad, P, eps):
        """Solve ``p' = p - eps/2 dH/dv(v, p')`` at fixed v by fixed-point iteration (each iterate: two
        matrix-vector products with ``L_B^{-1}`` per particle)."""
        metric = self.metric
        fixed = -grad + (0.5 * fac.dw_var) @ metric.A  # the part of dH/dv that does not depend on p
        start = P - 0.5 * eps * fixed
        if metric.constant:
            n = P.shape[0]
            return start, np.zeros(n, dtype=int), np.ones(n, dtype=bool)

        def update(P_half, rows):
            r = metric.solve(fac, P_half[rows], rows) @ metric.A.T
            cand = P[rows] - 0.5 * eps[rows] * (fixed[rows] - (0.5 * fac.dw[rows] * r**2) @ metric.A)
            return cand, np.ones(rows.size, dtype=bool)

        return self._fixed_point(update, start)

    def _position_step(self, V, P_half, fac, beta, eps):
        """Solve ``v' = v + eps/2 [G^{-1}(v) + G^{-1}(v')] p'`` by fixed-point iteration (each iterate: one solve
        with B at the iterate per particle still iterating).

        The iteration starts from the second-order guess ``v + eps q + eps/2 J (eps q)``, ``q = G^{-1}(v) p'``,
        ``J = d(G^{-1} p')/dv = -G^{-1} A' diag(beta lambda'(f) * (A q)) A`` (one more solve at v, O(n^2)), instead
        of ``v + eps q``: about one iterate less, at the same fixed point.
        """
        metric = self.metric
        q0 = metric.solve(fac, P_half)
        start = V + eps * q0
        if metric.constant:
            n = V.shape[0]
            return start, np.zeros(n, dtype=int), np.ones(n, dtype=bool)
        A = metric.A
        with np.errstate(over="ignore", invalid="ignore"):
            slope = -metric.solve(fac, (fac.dw * ((eps * q0) @ A.T) * (q0 @ A.T)) @ A)
            start = np.where(np.isfinite(slope), start + 0.5 * eps * slope, start)

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
        P0 = metric.sample_momentum(rng, fac)
        parts = state.parts
        grad = parts.grad_log_density(beta)
        ok = fac.ok.copy()
        n_fixed = np.zeros(n, dtype=int)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            H0 = -parts.log_density(beta) + 0.5 * fac.log_det + metric.kinetic(fac, P0)
            x, P = X, P0
            for _ in range(params.n_leapfrog):
                P_half, it_p, conv_p = self._momentum_half_step(fac, grad, P, eps)
                x_new, it_x, conv_x = self._position_step(x, P_half, fac, betas, eps)
                ok &= conv_p & conv_x & np.all(np.isfinite(x_new), axis=1) & np.all(np.isfinite(P_half), axis=1)
                n_fixed += it_p + it_x
                x = np.where(ok[:, None], x_new, X)  # failed particles are evaluated at their start (rejected)
                P_half = np.where(ok[:, None], P_half, P0)
                parts = family.parts(x, grad=True)
                grad = parts.grad_log_density(beta)
                if not metric.constant:
                    fac = metric.factors(x, betas)
                    ok &= fac.ok
                GinvP = metric.solve(fac, P_half)
                P = P_half - 0.5 * eps * metric.hamiltonian_gradient(fac, grad, P_half, GinvP)
            H1 = -parts.log_density(beta) + 0.5 * fac.log_det + metric.kinetic(fac, P)
            ok &= np.isfinite(H1)
            energy_error = np.where(ok, H1 - H0, np.nan)
            log_ratio = np.where(ok, H0 - H1, -np.inf)
        acceptance, accepted = metropolis_accept(rng, log_ratio)
        info = RMHMCInfo(acceptance, accepted, n_fixed, ok, energy_error)
        return select(accepted, ParticleState(x, parts), state), info
