"""Multistate Bennett acceptance ratio (MBAR): log Z of K states from their pooled draws (Shirts & Chodera 2008,
J. Chem. Phys. 129, 124105; the same estimator as Kong et al. 2003, JRSS B 65, 585).

Setting. States ``i = 0..K-1`` have unnormalised densities ``f_i`` with normalisers ``Z_i``; ``n_k`` draws of state
k are pooled into ``x_1..x_N`` (``N = sum_k n_k``; which draw came from which state is not needed). With
``l[i, n] = log f_i(x_n)`` the MBAR equations (Shirts & Chodera section II, written for log Z instead of ``f = -log Z``)

    log Z_i = logsumexp_n (l[i, n] - log D_n),     log D_n = logsumexp_k (log n_k + l[k, n] - log Z_k),

fix the log Z's up to a common constant; we set ``log Z_0 = 0``. Only states with ``n_k > 0`` enter ``D_n``, so the
unsampled ones follow from the first equation once the sampled ones are solved. Adding ``c_n`` to every state's
``l[., n]`` changes nothing (we subtract the column maxima), adding ``c_i`` to row i shifts ``log Z_i`` by ``c_i``.

Solver. For the sampled states the solution minimises the convex function (Shirts & Chodera Appendix C)

    F(z) = sum_n logsumexp_k (log n_k + l[k, n] - z_k) + sum_k n_k z_k.

With ``P[k, n] = n_k W[k, n]``, ``W[k, n] = exp(l[k, n] - z_k - log D_n)`` (``P[., n]``: the probability that draw n
came from state k), the gradient is ``n_k - sum_n P[k, n] = n_k (1 - sum_n W[k, n])`` and the Hessian
``diag(sum_n P[k, n]) - P P^T``; it annihilates the ones vector (the common constant), so one z is held fixed and the
rest is positive definite when the states overlap. We start at ``z = 0`` with a few self-consistent steps
``z_k <- z_k + log sum_n W[k, n]`` (the equations above), then take Newton steps with a backtracking (Armijo) line
search, until ``max_k |1 - sum_n W[k, n]| < tol``. The line search needs the change of F along a step ``d``; we
take it from the current P, ``sum_n log sum_k P[k, n] e^{-d_k} + sum_k n_k d_k`` (huge ``l``, 1e4, never enter),
and for small d rearrange it so that every term is second order in d (no round-off floor near the optimum). One
Newton step costs O(N K^2 + K^3) time and O(N K) memory. ``method="lbfgs"`` minimises the same F with scipy's
L-BFGS-B from the warm start instead (no K x K solve), restarted at its end point while that helps.

Covariance (Shirts & Chodera section II and Appendix D). The asymptotic covariance of ``(-)log Z`` is
``Theta = W^T (I_N - W diag(n) W^T)^+ W`` with W here the (N, K) matrix of weights. With the thin SVD
``W = U S V^T`` this is ``Theta = V S (I - S V^T diag(n) V S)^+ S V^T``, a K x K pseudo-inverse; S and V come from
the eigendecomposition of ``W^T W`` (O(N K^2), no N x N matrix; pymbar's default "svd-ew"). The null direction
of ``I_N - W diag(n) W^T`` (the ones vector, ``W diag(n) 1_K = 1_N``) only adds a multiple of ``1 1^T`` to Theta,
which cancels in every difference ``Var(log Z_i - log Z_j) = Theta_ii + Theta_jj - 2 Theta_ij``. We report the
covariance of ``log Z_i - log Z_0`` (row and column 0 are zero). It assumes independent draws.

Power-posterior paths. For ``log f_b = log f0 + b U`` the per-draw term ``log f0(x_n)`` is the same for every state
and cancels, so ``l[k, n] = b_k U(x_n)`` suffices (:func:`tempered_log_f`); with ``b_0 = 0`` and a normalised f0,
``log Z_k - log Z_0`` is the log evidence of the tempered model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import minimize

from ..estimate_diagnostics import TemperingDiagnostics
from ..records import EvidenceEstimate
from ..weights import logsumexp
from .rts import delete_one_se, rts

__all__ = ["MBARSolution", "mbar", "mbar_log_z", "mbar_tempering", "tempered_log_f"]

_METHODS = ("newton", "lbfgs")
_N_WARM = 5  # self-consistent steps before Newton / L-BFGS


@dataclass(frozen=True)
class MBARSolution:
    """The MBAR solution for all K states.

    Attributes
    ----------
    log_z : ndarray, shape (K,)
        ``log Z_i - log Z_0``.
    log_z_cov : ndarray, shape (K, K)
        Asymptotic covariance of ``log_z`` (row and column 0 are zero).
    log_z_se : ndarray, shape (K,)
        Standard error of ``log Z_i - log Z_0`` (``sqrt(diag(log_z_cov))``).
    weights : ndarray, shape (N, K)
        ``W[n, i] = (f_i(x_n) / Z_i) / sum_k n_k f_k(x_n) / Z_k``; each column sums to 1, so
        ``sum_n W[n, i] a(x_n)`` estimates the expectation of ``a`` under state i.
    n_iter : int
        Self-consistent plus Newton (or L-BFGS) iterations.
    converged : bool
        Whether ``max_k |1 - sum_n W[n, k]| < tol`` over the sampled states.
    """

    log_z: np.ndarray
    log_z_cov: np.ndarray
    log_z_se: np.ndarray
    weights: np.ndarray
    n_iter: int
    converged: bool


def tempered_log_f(U, betas) -> np.ndarray:
    """``log f`` (K, N) for the path ``log f_b = log f0 + b U`` at draws with log-likelihoods ``U`` (N,).

    Returns ``betas[k] * U[n]`` (0 where ``b = 0``, also for ``U = -inf``); the common ``log f0`` cancels in MBAR.
    """
    U, betas = np.asarray(U, dtype=float).ravel(), np.asarray(betas, dtype=float).ravel()
    with np.errstate(invalid="ignore"):
        return np.where(betas[:, None] == 0.0, 0.0, betas[:, None] * U[None, :])


def _check(log_f, n_k):
    log_f, n_k = np.asarray(log_f, dtype=float), np.asarray(n_k, dtype=float)
    if log_f.ndim != 2 or n_k.shape != (log_f.shape[0],):
        raise ValueError(f"pmz: MBAR needs log_f (K, N) and n_k (K,), got shapes {log_f.shape} and {n_k.shape}")
    if np.any(n_k < 0) or not np.isclose(n_k.sum(), log_f.shape[1], rtol=1e-9) or log_f.shape[1] == 0:
        raise ValueError(f"pmz: n_k must be >= 0 and sum to the number of draws {log_f.shape[1]}, got {n_k}")
    if np.any(np.isnan(log_f)) or np.any(log_f == np.inf):
        raise ValueError("pmz: log_f must not contain NaN or +inf")
    sampled = n_k > 0
    top = np.max(log_f[sampled], axis=0)
    if not np.all(np.isfinite(top)) or not np.all(np.any(np.isfinite(log_f), axis=1)):
        raise ValueError("pmz: log_f is -inf for some draw under every sampled state, or for some state at every draw")
    return log_f - top, n_k, sampled


def _exp(a):
    """``exp(a)``, results below ``e^-300`` flushed to 0 (their products would be subnormal: LAPACK crawls)."""
    return np.exp(np.where(a < -300.0, -np.inf, a))


def _shift(log_p, n, d):
    """``log P`` after ``z -> z + d`` and the change of F; for small d in a form free of cancellation."""
    a = log_p - d[:, None]
    log_norm = logsumexp(a, axis=0)
    if np.max(np.abs(d)) > 0.1:
        return a - log_norm, float(np.sum(log_norm) + n @ d)
    # F change = sum_n [log1p(s_n) - s_n] + sum_k [(col_k - n_k) e_k + n_k (e_k + d_k)],
    # s_n = sum_k P[k, n] e_k, e_k = exp(-d_k) - 1, col_k = sum_n P[k, n]: every term is second order in d.
    e = np.expm1(-d)
    s = e @ _exp(log_p)
    col = np.exp(logsumexp(log_p, axis=1))
    return a - log_norm, float(np.sum(np.log1p(s) - s) + np.sum((col - n) * e + n * (e + d)))


def _newton_step(log_p, n, grad, col):
    """Newton direction with ``d_0 = 0`` (pseudo-inverse if the reduced Hessian is singular)."""
    P = _exp(log_p)
    H = (np.diag(col) - P @ P.T)[1:, 1:]
    try:
        d = np.linalg.solve(H, -grad[1:])
    except np.linalg.LinAlgError:
        d = -np.linalg.pinv(H, hermitian=True) @ grad[1:]
    return np.concatenate([[0.0], d])


def _solve(log_p, n, method, tol, max_iter):
    """Minimise F over z (z_0 fixed) starting from ``log P`` at z = 0; returns z, log P, iterations, converged."""
    z = np.zeros(n.size)
    for it in range(max_iter + 1):
        log_col = logsumexp(log_p, axis=1)  # log sum_n P[k, n]
        col = np.exp(log_col)
        grad = n - col
        if np.max(np.abs(grad / n)) < tol:
            return z, log_p, it, True
        if it == max_iter:
            break
        if it < _N_WARM or n.size == 1:
            d = log_col - np.log(n)
            d -= d[0]
            log_p, z = _shift(log_p, n, d)[0], z + d
            continue
        if method == "lbfgs":
            return _lbfgs(log_p, n, z, tol, max_iter, it)
        d = _newton_step(log_p, n, grad, col)
        slope, t = float(grad @ d), 1.0
        if not slope < 0:
            break
        while t > 1e-12:
            new, change = _shift(log_p, n, t * d)
            if change <= 1e-4 * t * slope:
                break
            t /= 2
        else:
            break
        log_p, z = new, z + t * d
    col = np.exp(logsumexp(log_p, axis=1))
    return z, log_p, it, bool(np.max(np.abs(1 - col / n)) < tol)


def _lbfgs(log_p, n, z, tol, max_iter, it):
    """L-BFGS-B on F from iteration ``it``, restarted (F re-centred at the current point) while that helps."""

    def fun(x, log_p0):
        d = np.concatenate([[0.0], x])
        new, change = _shift(log_p0, n, d)
        return change, (n - np.exp(logsumexp(new, axis=1)))[1:]

    err = np.inf
    for _ in range(5):  # F is evaluated relative to the start: restarting removes its round-off
        opts = {"maxiter": max(max_iter - it, 1), "ftol": 0.0, "gtol": 0.1 * tol * np.min(n), "maxcor": 30}
        res = minimize(fun, np.zeros(n.size - 1), args=(log_p,), jac=True, method="L-BFGS-B", options=opts)
        d = np.concatenate([[0.0], res.x])
        log_p, z, it = _shift(log_p, n, d)[0], z + d, it + int(res.nit)
        prev, err = err, float(np.max(np.abs(1 - np.exp(logsumexp(log_p, axis=1)) / n)))
        if err < tol or it >= max_iter or err > 0.5 * prev:
            break
    return z, log_p, it, err < tol


def _covariance(W, n_k):
    """Covariance of ``log Z_i - log Z_0`` from the (N, K) weights (Shirts & Chodera Appendix D, via ``W^T W``)."""
    s2, V = np.linalg.eigh(W.T @ W)  # W = U S V^T, W^T W = V S^2 V^T
    A = np.sqrt(np.maximum(s2, 0.0))[:, None] * V.T  # S V^T
    inner = np.eye(n_k.size) - (A * n_k) @ A.T
    theta = A.T @ np.linalg.pinv(inner, rcond=1e-10, hermitian=True) @ A
    cov = theta - theta[:, :1] - theta[:1, :] + theta[0, 0]
    return 0.5 * (cov + cov.T)


def mbar_log_z(log_f, n_k, *, method: str = "newton", tol: float = 1e-10, max_iter: int = 200) -> MBARSolution:
    """Solve the MBAR equations for ``log Z_i - log Z_0`` of all K states, with their asymptotic covariance.

    Parameters
    ----------
    log_f : array_like, shape (K, N)
        ``log_f[i, n]``: log unnormalised density of state i at pooled draw n (``-inf`` allowed, NaN not).
    n_k : array_like, shape (K,)
        Draws from each state (zeros allowed; those states are estimated too); must sum to N.
    method : {"newton", "lbfgs"}
        Newton with line search (default) or scipy's L-BFGS-B on the same convex objective.
    tol : float
        Stop when ``max_k |1 - sum_n W[n, k]|`` over the sampled states (the relative error of ``Z_k``) is below.
    max_iter : int
        Iterations, including the self-consistent warm start.

    Returns
    -------
    MBARSolution

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> sd = np.array([1.0, 2.0])  # f_i(x) = exp(-x^2 / (2 sd_i^2)), log Z_1 - log Z_0 = log 2
    >>> x = np.concatenate([rng.normal(0, s, 2000) for s in sd])
    >>> sol = mbar_log_z(-0.5 * (x[None, :] / sd[:, None]) ** 2, [2000, 2000])
    >>> sol.converged, bool(abs(sol.log_z[1] - np.log(2)) < 4 * sol.log_z_se[1]), bool(0.01 < sol.log_z_se[1] < 0.02)
    (True, True, True)
    """
    if method not in _METHODS:
        raise ValueError(f"pmz: method must be one of {_METHODS}, got {method!r}")
    log_f, n_k, sampled = _check(log_f, n_k)
    n, lf = n_k[sampled], log_f[sampled]
    log_p = np.log(n)[:, None] + lf
    log_p -= logsumexp(log_p, axis=0)
    z_s, _, n_iter, converged = _solve(log_p, n, method, tol, max_iter)
    log_d = logsumexp(np.log(n)[:, None] + lf - z_s[:, None], axis=0)
    log_z = np.empty(n_k.size)
    log_z[sampled] = z_s
    log_z[~sampled] = logsumexp(log_f[~sampled] - log_d, axis=1)
    W = _exp(log_f - log_z[:, None] - log_d).T
    log_z -= log_z[0]
    cov = _covariance(W, n_k)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    return MBARSolution(log_z=log_z, log_z_cov=cov, log_z_se=se, weights=W, n_iter=n_iter, converged=converged)


def mbar(
    log_f, n_k, *, target: int = -1, reference: int = 0, method: str = "newton", tol: float = 1e-10, max_iter: int = 200
) -> EvidenceEstimate:
    """MBAR estimate of ``log Z_target - log Z_reference`` (see :func:`mbar_log_z` for the arguments).

    Returns
    -------
    EvidenceEstimate
        ``method = "mbar"``; :class:`~pmz.estimate_diagnostics.TemperingDiagnostics` ``log_z_k`` and
        ``log_z_k_se`` (every state relative to ``reference``), ``n_iter`` and ``converged``. Warns if the solver did
        not converge.
    """
    sol = mbar_log_z(log_f, n_k, method=method, tol=tol, max_iter=max_iter)
    K = sol.log_z.size
    t, r = range(K)[target], range(K)[reference]
    C = sol.log_z_cov
    curve = sol.log_z - sol.log_z[r]
    curve_se = np.sqrt(np.maximum(np.diag(C) + C[r, r] - 2 * C[:, r], 0.0))
    warnings = []
    if not sol.converged:
        warnings.append(
            f"pmz: mbar: the MBAR equations did not converge in {sol.n_iter} iterations (tol {tol}); the states may "
            "barely overlap: add intermediate states or draws, or raise max_iter"
        )
    return EvidenceEstimate(
        log_z=float(curve[t]),
        log_z_se=float(curve_se[t]),
        method="mbar",
        diagnostics=TemperingDiagnostics(
            log_z_k=curve, log_z_k_se=curve_se, n_iter=sol.n_iter, converged=sol.converged
        ),
        warnings=warnings,
    )


def mbar_tempering(trace, *, n_blocks: int = 10) -> EvidenceEstimate:
    """MBAR on the draws stored by a simulated-tempering run (``store_draws=True``): every sample ``(x_n, k_n)`` is a
    draw of its level ``k_n``, ``n_k`` the visit counts, ``l[k, n] = b_k U(x_n)`` (:func:`tempered_log_f`).

    Error bar. The asymptotic covariance assumes independent draws from fixed states; tempered chains are
    autocorrelated over many sweeps (measured: its se was 2-3 times too small on the 10-D mixture). pmz computes a
    delete-one-block jackknife: the sweeps are cut into ``n_blocks`` consecutive blocks (all chains), MBAR is
    solved without each block, and ``se^2 = (B - 1) / B sum_b (z_(-b) - mean)^2`` (``n_blocks`` more solves). When the
    blocks are not much longer than the chains' autocorrelation time this is still too small (measured on the 10-D
    mixture at 300 sweeps: 0.08 against an RMSE of 0.18), so the reported se is the larger of the jackknife and the
    RTS se of the same run (autocorrelation-aware, :func:`pmz.estimators.rts.rts`): RTS is MBAR with the counts
    replaced by their expectations (RTS Appendix D) and the two had the same RMSE there. ``se_asymptotic``,
    ``se_jackknife`` and ``se_rts`` are kept in the diagnostics.
    """
    if trace.draws_U is None:
        raise ValueError("pmz: MBAR needs the stored draws of a tempering run (store_draws=True)")
    K = trace.n_levels
    U, levels = np.asarray(trace.draws_U, dtype=float), np.asarray(trace.draws_level, dtype=int)
    full = mbar(tempered_log_f(U, trace.betas), np.bincount(levels, minlength=K))
    curve = full.diagnostics.log_z_k
    n_sweeps = U.size // trace.n_chains
    B = min(int(n_blocks), n_sweeps)
    se_curve = full.diagnostics.log_z_k_se
    if B >= 2:
        edges = np.linspace(0, n_sweeps, B + 1).astype(int) * trace.n_chains
        replicates = []
        for a, b in zip(edges[:-1], edges[1:]):
            keep = np.r_[0:a, b : U.size]
            rep = mbar_log_z(tempered_log_f(U[keep], trace.betas), np.bincount(levels[keep], minlength=K))
            replicates.append(rep.log_z)
        se_curve = delete_one_se(replicates)
    se_jackknife = float(se_curve[-1])
    rts_diagnostics = rts(trace).diagnostics
    rts_curve_se = rts_diagnostics.log_z_k_se
    se_curve = np.fmax(se_curve, np.where(np.isfinite(rts_curve_se), rts_curve_se, 0.0))
    return EvidenceEstimate(
        log_z=float(curve[-1] + trace.log_z0),
        log_z_se=float(se_curve[-1]),
        method="mbar",
        diagnostics=replace(
            full.diagnostics,
            log_z_k=curve + trace.log_z0,
            log_z_k_se=se_curve,
            se_asymptotic=full.log_z_se,
            se_jackknife=se_jackknife,
            se_rts=float(rts_curve_se[-1]),
            c_hat=rts_diagnostics.c_hat,  # the same chains' level marginal, for pmz.reliability's level_marginal
            prior=rts_diagnostics.prior,
            max_gap=rts_diagnostics.max_gap,
            n_blocks=B,
            n_samples=int(U.size),
        ),
        warnings=list(full.warnings),
    )
