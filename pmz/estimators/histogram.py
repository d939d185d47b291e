"""Histogram (WHAM) estimator of log Z and its Bayesian posterior by Gibbs sampling (Habeck 2017 section 5.3;
Ferrenberg & Swendsen 1989 for the self-consistent histogram equations).

Pool the work values as draws from two "temperatures" ``lambda`` of one density of states ``g(u) = p_f(u)``:
forward works ``u = W_f`` at ``lambda = 0`` (density ``g(u)``) and *negated* reverse works ``u = -W_r`` at
``lambda = 1`` (density ``g(u) exp(-u) / Z``, which by Crooks, ``p_f(u) exp(-u) = Z p_r(-u)``, is the density of
``-W_r``). With one weight ``g_n`` per pooled sample and ``N_0 = n_f``, ``N_1 = n_r``:

    log Z_k = logsumexp_n(log g_n - lambda_k u_n),
    g_n = 1 / sum_k N_k exp(-lambda_k u_n - log Z_k),
    log Z = log Z_1 - log Z_0.

Only ratios of the ``g_n`` matter (scale ``g`` and both ``Z_k`` scale with it). Fixing ``Z_0 = 1`` the equations
reduce to one equation for ``c = log Z``: ``sum_n 1 / (N_0 + N_1 exp(-u_n - c)) = 1`` (``sum_n g_n = 1``), whose
forward/reverse split is exactly the BAR equation with ``M = log(n_f / n_r)``: the ML histogram estimate *is* BAR.
Its added value is the density of states (``p_f(u)`` as the weighted empirical distribution ``sum_n g_n
delta(u - u_n)``) and the Bayesian treatment below.

Posterior (Habeck's Bayesian WHAM; Gamma data augmentation). With a prior ``g_n ~ Gamma(a, b)`` alternate

    t_k | g ~ Gamma(shape N_k, rate Z_k(g)),     g_n | t ~ Gamma(shape a + 1, rate b + sum_k t_k exp(-lambda_k u_n)),

and record ``log Z_1(g) - log Z_0(g)`` after each sweep. All in log space (``log Gamma(s, rate r) =
log Gamma(s, 1) - log r``). With ``b = 0`` the sampler is scale-invariant and ``g`` is renormalised after each sweep
(this does not change the chain of ratios).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

from ..estimate_diagnostics import HistogramDiagnostics
from ..records import EvidenceEstimate, WorkRecord
from ..weights import logsumexp
from .bar import bar_overlap, bar_variances
from .bounds import check_log_weights, check_work_pair

__all__ = ["histogram", "histogram_gibbs", "histogram_posterior", "pool_works", "wham_log_z"]


def pool_works(log_w_f, log_w_r) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pooled work values ``u = (W_f, -W_r) = (-log w_f, log w_r)``, their ``lambda`` (0 / 1) and the counts."""
    log_w_f = check_log_weights(log_w_f, "forward log weights", allow_minus_inf=False)
    log_w_r = check_log_weights(log_w_r, "reverse log weights", allow_minus_inf=False)
    u = np.concatenate([-log_w_f, log_w_r])
    lam = np.concatenate([np.zeros(log_w_f.size), np.ones(log_w_r.size)])
    return u, lam, np.array([log_w_f.size, log_w_r.size], dtype=float)


def _log_dos(u, log_counts, log_z):
    """``log g_n = -log(N_0 + N_1 exp(-u_n - log Z))`` at ``Z_0 = 1``."""
    return -np.logaddexp(log_counts[0], log_counts[1] - u - log_z)


def _solve_normalisation(u, log_counts, start):
    """Root in ``c`` of ``log sum_n g_n(c) = 0`` (increasing in c), bracket widened from ``start``."""

    def r(c):
        return logsumexp(_log_dos(u, log_counts, c))

    lo, hi = min(start), max(start)
    step = max(hi - lo, 1.0)
    while r(lo) > 0:
        lo, step = lo - step, 2 * step
    step = max(hi - lo, 1.0)
    while r(hi) < 0:
        hi, step = hi + step, 2 * step
    return lo if lo == hi else float(brentq(r, lo, hi, xtol=1e-13, rtol=1e-15, maxiter=500))


def _iterate(u, log_counts, log_z, tol, max_iter):
    """Classic self-consistent iteration of the two-state WHAM equations in log space."""
    log_zk = np.array([0.0, log_z])
    for _ in range(max_iter):
        log_g = -logsumexp(log_counts[:, None] - np.outer([0.0, 1.0], u) - log_zk[:, None], axis=0)
        new = np.array([logsumexp(log_g), logsumexp(log_g - u)])
        new -= new[0]
        if abs(new[1] - log_zk[1]) < tol:
            return float(new[1])
        log_zk = new
    raise RuntimeError(f"pmz: the WHAM iteration did not converge in {max_iter} steps")


def wham_log_z(log_w_f, log_w_r, *, method: str = "solve", tol: float = 1e-12, max_iter: int = 100_000):
    """Maximum-likelihood histogram (WHAM) estimate of ``log Z - log Z0`` and the density of states.

    Parameters
    ----------
    log_w_f, log_w_r : array_like
        Forward and reverse log weights (all finite).
    method : {"solve", "iterate"}
        ``"solve"``: Brent's method on the normalisation ``sum_n g_n(c) = 1`` (one equation in ``c = log Z``);
        ``"iterate"``: the classic self-consistent iteration (linear convergence) to ``|Delta log Z| < tol``.

    Returns
    -------
    log_z : float
    work : ndarray, shape (n_f + n_r,)
        Pooled work values ``u = (W_f, -W_r)``.
    log_dos : ndarray, shape (n_f + n_r,)
        ``log g_n``, normalised (``logsumexp(log_dos) = 0``): ``p_f(u) ~= sum_n g_n delta(u - u_n)``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(3)
    >>> log_w_f, log_w_r = -rng.normal(1.0, 1.0, 300), -rng.normal(0.0, 1.0, 200)
    >>> log_z, work, log_dos = wham_log_z(log_w_f, log_w_r)
    >>> abs(log_z - wham_log_z(log_w_f, log_w_r, method="iterate")[0]) < 1e-10
    True
    >>> round(float(np.exp(log_dos).sum()), 12), round(float(np.exp(log_dos - work).sum() - np.exp(log_z)), 12)
    (1.0, 0.0)
    """
    u, _, counts = pool_works(log_w_f, log_w_r)
    log_counts = np.log(counts)
    n_f = int(counts[0])
    start = (float(logsumexp(-u[:n_f]) - log_counts[0]), float(-(logsumexp(u[n_f:]) - log_counts[1])))
    if method == "solve":
        log_z = _solve_normalisation(u, log_counts, start)
    elif method == "iterate":
        log_z = _iterate(u, log_counts, float(np.mean(start)), tol, max_iter)
    else:
        raise ValueError(f"pmz: method must be 'solve' or 'iterate', got {method!r}")
    log_g = _log_dos(u, log_counts, log_z)
    return log_z, u, log_g - logsumexp(log_g)


def histogram(forward: WorkRecord, reverse: WorkRecord, *, method: str = "solve") -> EvidenceEstimate:
    """Maximum-likelihood histogram (WHAM) estimate of log Z with the density of states (equals BAR).

    Returns
    -------
    EvidenceEstimate
        ``method = "histogram_ml"``; ``log_z_se`` is the inverse-information (Shirts et al. 2003) se of this
        likelihood. :class:`~pmz.estimate_diagnostics.HistogramDiagnostics` ``se_ml``, ``se_bennett``, ``overlap``,
        ``work`` (pooled ``u``), ``lam`` (0 for forward, 1 for reverse samples), ``log_dos`` (normalised
        ``log g_n``), ``n_forward``, ``n_reverse``.
    """
    log_w_f, log_w_r, log_z0 = check_work_pair(forward, reverse)
    log_z, u, log_g = wham_log_z(log_w_f, log_w_r, method=method)
    var = bar_variances(log_w_f, log_w_r, log_z)
    diagnostics = HistogramDiagnostics(
        se_ml=float(np.sqrt(var["ml"])),
        se_bennett=float(np.sqrt(var["bennett"])),
        overlap=bar_overlap(log_w_f, log_w_r, log_z)["overlap"],
        work=u,
        lam=np.concatenate([np.zeros(log_w_f.size), np.ones(log_w_r.size)]),
        log_dos=log_g,
        n_forward=log_w_f.size,
        n_reverse=log_w_r.size,
    )
    return EvidenceEstimate(
        log_z=log_z0 + log_z, log_z_se=diagnostics.se_ml, method="histogram_ml", diagnostics=diagnostics
    )


def histogram_gibbs(
    log_w_f,
    log_w_r,
    *,
    n_draws: int = 2000,
    n_burn: int = 200,
    rng: np.random.Generator,
    a: float = 0.0,
    b: float = 0.0,
    log_g_init=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Gibbs sampler for the posterior of ``log Z - log Z0`` under the histogram likelihood (Habeck 2017).

    One sweep is O(n_f + n_r) vectorised NumPy work; see the module docstring for the conditionals.

    Parameters
    ----------
    log_w_f, log_w_r : array_like
        Forward and reverse log weights (all finite).
    n_draws, n_burn : int
        Sweeps kept and sweeps discarded first.
    rng : numpy.random.Generator
    a, b : float
        Gamma(a, b) prior on each ``g_n`` (shape, rate; ``a, b -> 0`` is the default limit). With ``b > 0`` the
        answer depends on the scale of ``exp(-u)``: keep ``b`` tiny.
    log_g_init : array_like, optional
        Start; default the ML density of states.

    Returns
    -------
    log_z_draws : ndarray, shape (n_draws,)
    dos_mean : ndarray, shape (n_f + n_r,)
        Posterior mean of the normalised ``g_n``.
    """
    if a < 0 or b < 0:
        raise ValueError(f"pmz: the Gamma prior needs a >= 0 and b >= 0, got a={a!r}, b={b!r}")
    if n_draws < 1 or n_burn < 0:
        raise ValueError("pmz: n_draws must be positive and n_burn non-negative")
    u, _, counts = pool_works(log_w_f, log_w_r)
    log_g = wham_log_z(log_w_f, log_w_r)[2] if log_g_init is None else np.asarray(log_g_init, dtype=float).copy()
    log_b = np.log(b) if b > 0 else -np.inf
    draws = np.empty(n_draws)
    dos_sum = np.zeros(u.size)
    for sweep in range(n_burn + n_draws):
        log_z0_g, log_z1_g = logsumexp(log_g), logsumexp(log_g - u)
        log_t = np.log(rng.gamma(counts)) - np.array([log_z0_g, log_z1_g])
        log_rate = np.logaddexp(log_b, np.logaddexp(log_t[0], log_t[1] - u))
        log_g = np.log(rng.gamma(a + 1.0, size=u.size)) - log_rate
        log_norm = logsumexp(log_g)
        if b == 0:
            log_g -= log_norm
            log_norm = 0.0
        if sweep >= n_burn:
            draws[sweep - n_burn] = logsumexp(log_g - u) - log_norm
            dos_sum += np.exp(log_g - log_norm)
    return draws, dos_sum / n_draws


def _ess_draws(x: np.ndarray) -> float:
    """Effective sample size of a Markov chain (Geyer's initial positive sequence on FFT autocorrelations)."""
    n = x.size
    if n < 4 or np.var(x) == 0:
        return float(n)
    d = x - x.mean()
    f = np.fft.rfft(d, 2 * n)
    acf = np.fft.irfft(f * np.conj(f))[:n] / (n * np.var(x))
    pairs = acf[: n - n % 2].reshape(-1, 2).sum(axis=1)
    k = np.argmax(pairs <= 0) if np.any(pairs <= 0) else pairs.size
    tau = -1.0 + 2.0 * np.sum(pairs[:k])
    return float(n / max(tau, 1.0 / n))


def histogram_posterior(
    forward: WorkRecord,
    reverse: WorkRecord,
    *,
    n_draws: int = 2000,
    n_burn: int = 200,
    rng: np.random.Generator | None = None,
    a: float = 0.0,
    b: float = 0.0,
    min_overlap: float = 0.03,
) -> EvidenceEstimate:
    """Posterior over log Z from the histogram likelihood (Habeck 2017 section 5.3), by Gibbs sampling.

    Parameters
    ----------
    forward, reverse : WorkRecord
        Forward and reverse runs over the same schedule with the same ``log_z0``.
    n_draws, n_burn : int
        Gibbs sweeps kept and discarded.
    rng : numpy.random.Generator, optional
        Source of randomness (default: a fixed seed, so the estimate is a pure function of the records).
    a, b : float
        Gamma(a, b) prior on each density-of-states weight (default the ``a, b -> 0`` limit).
    min_overlap : float
        Warn when the overlap of the work distributions is below this (the posterior is then too narrow).

    Returns
    -------
    EvidenceEstimate
        ``method = "histogram"``, ``log_z`` = posterior mean, ``log_z_se`` = posterior sd, ``log_z_draws`` (after
        burn-in). :class:`~pmz.estimate_diagnostics.HistogramDiagnostics`: ``estimates`` (``{"ml": (log_z, se)}``:
        the WHAM maximum, which is BAR), ``se_ml``, ``overlap``, ``work``, ``lam``, ``log_dos`` (ML, normalised),
        ``dos_posterior_mean``, ``ess_draws`` (of the Gibbs chain), ``mcse`` (Monte Carlo se of the posterior mean),
        ``n_draws``, ``n_burn``, ``a``, ``b``.

    Examples
    --------
    >>> import numpy as np
    >>> from pmz.records import WorkRecord
    >>> rng = np.random.default_rng(2)
    >>> f = WorkRecord(log_weights=-rng.normal(1.0, 1.0, 300), schedule=[0.0, 1.0])
    >>> r = WorkRecord(log_weights=-rng.normal(0.0, 1.0, 300), schedule=[0.0, 1.0], direction="reverse")
    >>> est = histogram_posterior(f, r, n_draws=500, rng=np.random.default_rng(0))
    >>> abs(est.log_z - histogram(f, r).log_z) < 0.5 * est.log_z_se, est.log_z_draws.shape
    (True, (500,))
    """
    log_w_f, log_w_r, log_z0 = check_work_pair(forward, reverse)
    ml = histogram(forward, reverse)
    rng = np.random.default_rng(0) if rng is None else rng
    draws, dos_mean = histogram_gibbs(
        log_w_f, log_w_r, n_draws=n_draws, n_burn=n_burn, rng=rng, a=a, b=b, log_g_init=ml.diagnostics.log_dos
    )
    draws = draws + log_z0
    sd = float(np.std(draws, ddof=1)) if draws.size > 1 else np.inf
    ess = _ess_draws(draws)
    diagnostics = HistogramDiagnostics(
        estimates={"ml": (ml.log_z, ml.log_z_se)},
        se_ml=ml.log_z_se,
        overlap=ml.diagnostics.overlap,
        work=ml.diagnostics.work,
        lam=ml.diagnostics.lam,
        log_dos=ml.diagnostics.log_dos,
        dos_posterior_mean=dos_mean,
        ess_draws=ess,
        mcse=sd / np.sqrt(ess),
        n_draws=n_draws,
        n_burn=n_burn,
        a=a,
        b=b,
    )
    warnings = []
    if diagnostics.overlap < min_overlap:
        warnings.append(
            f"pmz: the forward and (negated) reverse work distributions barely overlap (overlap "
            f"{diagnostics.overlap:.3g} < {min_overlap}); the histogram posterior is then too narrow and its "
            "error bar is not to be trusted."
        )
    return EvidenceEstimate(
        log_z=float(np.mean(draws)),
        log_z_se=sd,
        method="histogram",
        log_z_draws=draws,
        diagnostics=diagnostics,
        warnings=warnings,
    )
