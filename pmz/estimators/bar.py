"""Bennett acceptance ratio (BAR) for log Z from forward and reverse work (Bennett 1976; Shirts et al. 2003;
Habeck 2017 eq 14; Meng & Wong 1996 for the K = 1 bridge-sampling case).

Sign convention. Forward work ``W_f = -log w_f`` with ``E[exp(-W_f)] = Z``, reverse work ``W_r = -log w_r`` with
``E[exp(-W_r)] = 1/Z``; Crooks: ``p_f(W) = p_r(-W) exp(W + log Z)``. From Crooks, for any function ``h``,
``E_f[h(W)] = Z E_r[h(-W_r) exp(-W_r)]``. Taking ``h(W) = F(M + W + C)`` with the Fermi function
``F(x) = 1 / (1 + e^x)`` and ``C = log Z`` gives ``h(-W_r) exp(-W_r) = exp(-M - C) F(-M + W_r - C)``, hence

    n_f E_f[F(M + W_f + log Z)] = n_r E_r[F(-M + W_r - log Z)],   M = log(n_f / n_r),

and BAR replaces the expectations by sample sums:

    sum_i F(M + W_f,i + log Z) = sum_j F(-M + W_r,j - log Z).

The left side decreases and the right side increases with log Z, so the root is unique. We solve
``log(left) - log(right) = 0`` (log-Fermi terms ``-logaddexp(0, x)``, so works of 1e3 neither overflow nor
underflow) with Brent's method, bracketed between the forward and reverse Jarzynski estimates and widened until
the sign changes. (pymbar's ``bar(w_F, w_R)`` takes ``w_F = W_f``, ``w_R = W_r`` and returns
``Delta_f = -log Z``.)

Standard error. Write ``f_F = F(M + W_f + C)``, ``f_R = F(-M + W_r - C)`` at the root and
``D(C) = log mean_F f_F - log mean_R f_R + M`` (zero at the root). By the delta method
``Var(D) ~= Var_F(f_F) / (n_f mean(f_F)^2) + Var_R(f_R) / (n_r mean(f_R)^2)`` and ``Var(log Z) = Var(D) / D'^2``.
Under Crooks the expected slope is ``D' = -1`` (``n_f E[f_F^2] + n_r E[f_R^2] = n_f E[f_F]``), which gives Bennett's
(1976, eq 10a, corrected) asymptotic variance, pymbar's ``uncertainty_method="BAR"`` (our default,
``se_method="bennett"``):

    Var(log Z) = (<f_F^2>/<f_F>^2 - 1) / n_f + (<f_R^2>/<f_R>^2 - 1) / n_r.

Using instead the observed information of the logistic-regression likelihood (Shirts et al. 2003) gives

    Var(log Z) = 1 / (sum_F f_F (1 - f_F) + sum_R f_R (1 - f_R)) - 1/n_f - 1/n_r       (se_method="ml"),

pymbar's ``uncertainty_method="MBAR"``. The two agree when the work distributions overlap and differ (Bennett's
lower, ML's higher) when they do not, in which case neither is to be trusted.

Correlated reverse draws (bridge sampling from MCMC output). With ``n_eff_r`` given, ``n_r`` is replaced by
``n_eff_r`` in ``M = log(n_f / n_eff_r)``, the reverse sum is rescaled to ``(n_eff_r / n_r) sum_j`` (i.e. the
equation becomes ``n_f mean_F f_F = n_eff_r mean_R f_R``; still consistent because the population identity above
holds for any M), and the reverse term of both variances uses ``n_eff_r`` (``(<f_R^2>/<f_R>^2 - 1) / n_eff_r``,
``n_eff_r <f_R (1 - f_R)>`` and ``- 1/n_eff_r``). Means are always over all draws. This is the effective-size
correction used for posterior draws in bridge sampling (Meng & Wong 1996; Gronau et al. 2017).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy.optimize import brentq

from ..estimate_diagnostics import WorkDiagnostics
from ..records import EvidenceEstimate, WorkRecord
from ..weights import logsumexp
from .bounds import bounds_from_log_weights, check_log_weights, check_work_pair

__all__ = ["bar", "bar_fixed_point", "bar_log_z", "bar_overlap", "bar_variances", "range_fractions"]

_SE_METHODS = ("bennett", "ml")


def _log_fermi(x):
    """``log F(x) = -log(1 + e^x)``, stable for any x."""
    return -np.logaddexp(0.0, x)


def _setup(log_w_f, log_w_r, n_eff_r):
    """Works, counts, log count ratio M and the log rescaling of the reverse sum."""
    log_w_f = check_log_weights(log_w_f, "forward log weights")
    log_w_r = check_log_weights(log_w_r, "reverse log weights")
    n_f, n_r = log_w_f.size, log_w_r.size
    n_eff = float(n_r) if n_eff_r is None else float(n_eff_r)
    if not 0 < n_eff <= n_r * (1 + 1e-12):
        raise ValueError(f"pmz: n_eff_r must be in (0, n_reverse = {n_r}], got {n_eff_r!r}")
    return -log_w_f, -log_w_r, n_f, n_r, n_eff, float(np.log(n_f / n_eff)), float(np.log(n_eff / n_r))


def _residual(log_z, work_f, work_r, M, log_c_r):
    """``log sum_i F(M + W_f,i + log Z) - log[(n_eff/n_r) sum_j F(-M + W_r,j - log Z)]``; decreasing in log Z."""
    return logsumexp(_log_fermi(M + work_f + log_z)) - log_c_r - logsumexp(_log_fermi(-M + work_r - log_z))


def _solve(work_f, work_r, M, log_c_r, lo, hi):
    """Root of :func:`_residual`, starting from the bracket ``[lo, hi]`` and widening it until the sign changes."""
    lo, hi = min(lo, hi), max(lo, hi)
    step = max(hi - lo, 1.0)
    while _residual(lo, work_f, work_r, M, log_c_r) < 0:
        lo, step = lo - step, 2 * step
    step = max(hi - lo, 1.0)
    while _residual(hi, work_f, work_r, M, log_c_r) > 0:
        hi, step = hi + step, 2 * step
    if lo == hi:
        return float(lo)
    return float(brentq(_residual, lo, hi, args=(work_f, work_r, M, log_c_r), xtol=1e-13, rtol=1e-15, maxiter=500))


def _jarzynski_pair(work_f, work_r):
    """Forward (biased low) and reverse (biased high) Jarzynski estimates of ``log Z - log Z0``."""
    return (
        float(logsumexp(-work_f) - np.log(work_f.size)),
        float(-(logsumexp(-work_r) - np.log(work_r.size))),
    )


def bar_variances(log_w_f, log_w_r, log_z, n_eff_r=None) -> dict:
    """Asymptotic variances of the BAR ``log Z - log Z0`` evaluated at ``log_z`` (normally the BAR root).

    Returns
    -------
    dict
        ``bennett`` (Bennett 1976 eq 10a; pymbar ``uncertainty_method="BAR"``), ``ml`` (Shirts et al. 2003,
        inverse observed information; pymbar ``"MBAR"``) and ``fisher_information``
        ``sum_F f_F (1 - f_F) + (n_eff_r / n_r) sum_R f_R (1 - f_R)``. Variances are clipped at 0.
    """
    work_f, work_r, n_f, n_r, n_eff, M, log_c_r = _setup(log_w_f, log_w_r, n_eff_r)
    lf_f = _log_fermi(M + work_f + log_z)
    lf_r = _log_fermi(-M + work_r - log_z)
    # <f^2>/<f>^2 / n = sum f^2 / (sum f)^2 for the forward sample; the reverse one carries n_r / n_eff.
    rel_f = np.exp(logsumexp(2 * lf_f) - 2 * logsumexp(lf_f))
    rel_r = np.exp(logsumexp(2 * lf_r) - 2 * logsumexp(lf_r)) * n_r / n_eff
    bennett = rel_f + rel_r - 1.0 / n_f - 1.0 / n_eff
    # f (1 - f) = F(x) F(-x)
    info = np.exp(logsumexp(lf_f + _log_fermi(-(M + work_f + log_z)))) + np.exp(
        log_c_r + logsumexp(lf_r + _log_fermi(-(-M + work_r - log_z)))
    )
    ml = 1.0 / info - 1.0 / n_f - 1.0 / n_eff if info > 0 else np.inf
    return {"bennett": max(float(bennett), 0.0), "ml": max(float(ml), 0.0), "fisher_information": float(info)}


def bar_log_z(log_w_f, log_w_r, n_eff_r=None, *, se_method: str = "bennett") -> tuple[float, float]:
    """BAR estimate of ``log Z - log Z0`` and its asymptotic standard error from arrays of log weights.

    Parameters
    ----------
    log_w_f : array_like, shape (n_f,)
        Forward log weights (``E[w_f] = Z``); K = 1 bridge sampling: ``log f1(x) - log q(x)`` at draws of q.
    log_w_r : array_like, shape (n_r,)
        Reverse log weights (``E[w_r] = 1/Z``); bridge sampling: ``log q(x) - log f1(x)`` at posterior draws.
    n_eff_r : float, optional
        Effective size of the reverse sample (correlated draws); replaces n_r in M and in the variance.
    se_method : {"bennett", "ml"}
        Asymptotic variance formula (see the module docstring).

    Returns
    -------
    log_z, se : float

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> # Crooks-consistent Gaussian work, log Z = -0.5: W_f ~ N(-log Z + 1/2, 1), W_r ~ N(log Z + 1/2, 1)
    >>> work_f, work_r = rng.normal(1.0, 1.0, 400), rng.normal(0.0, 1.0, 300)
    >>> log_z, se = bar_log_z(-work_f, -work_r)
    >>> bool(abs(log_z + 0.5) < 4 * se), bool(0.03 < se < 0.05)
    (True, True)
    """
    if se_method not in _SE_METHODS:
        raise ValueError(f"pmz: se_method must be one of {_SE_METHODS}, got {se_method!r}")
    work_f, work_r, _, _, n_eff, M, log_c_r = _setup(log_w_f, log_w_r, n_eff_r)
    log_z = _solve(work_f, work_r, M, log_c_r, *_jarzynski_pair(work_f, work_r))
    var = bar_variances(-work_f, -work_r, log_z, n_eff)[se_method]
    return log_z, float(np.sqrt(var))


def bar_fixed_point(
    log_w_f, log_w_r, n_eff_r=None, *, log_z_init: float | None = None, tol: float = 1e-12, max_iter: int = 100_000
) -> float:
    """BAR by the multiplicative fixed-point iteration (Habeck 2017 Algorithm 1; Meng & Wong 1996 eq 4.1).

    With ``s_f = n_f / (n_f + n_r)``, ``s_r = n_r / (n_f + n_r)`` (``n_eff_r`` in place of ``n_r`` if given):

        Z <- [ mean_F w_f / (s_r w_f + s_f Z) ] / [ mean_R w_r / (s_r + s_f w_r Z) ],

    iterated in log space until ``|Delta log Z| < tol``. Its fixed point solves the BAR equation; linear
    convergence, slow when the work distributions barely overlap. A cross-check of :func:`bar_log_z`.

    Returns
    -------
    float
        ``log Z - log Z0``.

    Raises
    ------
    RuntimeError
        If the iteration does not converge in ``max_iter`` steps.
    """
    work_f, work_r, n_f, n_r, n_eff, _, _ = _setup(log_w_f, log_w_r, n_eff_r)
    log_w_f, log_w_r = -work_f, -work_r
    log_s_f, log_s_r = np.log(n_f / (n_f + n_eff)), np.log(n_eff / (n_f + n_eff))
    log_z = float(np.mean(_jarzynski_pair(work_f, work_r))) if log_z_init is None else float(log_z_init)
    for _ in range(max_iter):
        log_num = logsumexp(log_w_f - np.logaddexp(log_s_r + log_w_f, log_s_f + log_z)) - np.log(n_f)
        log_den = logsumexp(log_w_r - np.logaddexp(log_s_r, log_s_f + log_w_r + log_z)) - np.log(n_r)
        new = float(log_num - log_den)
        if abs(new - log_z) < tol:
            return new
        log_z = new
    raise RuntimeError(f"pmz: the BAR fixed-point iteration did not converge in {max_iter} steps")


def range_fractions(work_f, neg_work_r) -> tuple[float, float]:
    """Fraction of the forward works ``W_f`` inside ``[min(-W_r), max(-W_r)]``, and of the negated reverse works
    ``-W_r`` inside ``[min(W_f), max(W_f)]``."""
    work_f, neg_work_r = np.asarray(work_f), np.asarray(neg_work_r)
    in_f = np.mean((work_f >= np.min(neg_work_r)) & (work_f <= np.max(neg_work_r)))
    in_r = np.mean((neg_work_r >= np.min(work_f)) & (neg_work_r <= np.max(work_f)))
    return float(in_f), float(in_r)


def bar_overlap(log_w_f, log_w_r, log_z, n_eff_r=None) -> dict:
    """Overlap of the forward work distribution p_f(W) and the negated reverse one p_r(-W).

    Returns
    -------
    dict
        ``overlap``: the two-state MBAR overlap ``O_01 + O_10 = (1/n_f + 1/n_r) sum_n P_0(n) P_1(n)`` (1 minus the
        second eigenvalue of the overlap matrix, Shirts & Chodera 2008), where ``P_1(n) = F(M + u_n + log Z)`` is
        the probability that pooled sample ``n`` (``u = W_f`` or ``-W_r``) came from the reverse run; 0 means no
        overlap, 1 identical distributions (deterministic work). Since the ML variance is
        ``(1/n_f + 1/n_r)(1/overlap - 1)``, it is a size-free measure of how informative each sample is.
        ``fraction_forward_in_reverse_range`` / ``fraction_reverse_in_forward_range``: fraction of ``W_f`` inside
        ``[min(-W_r), max(-W_r)]`` and of ``-W_r`` inside ``[min(W_f), max(W_f)]``.
    """
    work_f, work_r, n_f, _, n_eff, _, _ = _setup(log_w_f, log_w_r, n_eff_r)
    info = bar_variances(-work_f, -work_r, log_z, n_eff)["fisher_information"]
    in_f, in_r = range_fractions(work_f, -work_r)
    return {
        "overlap": float(min(info * (1.0 / n_f + 1.0 / n_eff), 1.0)),
        "fraction_forward_in_reverse_range": float(in_f),
        "fraction_reverse_in_forward_range": float(in_r),
    }


FEW_PATHS = 10  # below this many paths on a side the overlap measure is dominated by 1/n


def _overlap_warning(diagnostics: WorkDiagnostics, min_overlap: float, forward: WorkRecord) -> str | None:
    """The warning for work distributions that barely overlap (None when they do), naming the test that failed and
    advising what applies: more posterior draws or a closer reference for bridge sampling (one step, no kernel
    moves), more temperatures or kernel steps for a path."""
    overlap, n_r = diagnostics.overlap, int(diagnostics.n_reverse)
    f_in_r, r_in_f = diagnostics.fraction_forward_in_reverse_range, diagnostics.fraction_reverse_in_forward_range
    if overlap < min_overlap:
        what = f"barely overlap (overlap {overlap:.3g} < {min_overlap})"
    elif f_in_r == 0.0 or r_in_f == 0.0:
        what = "barely overlap (no " + (
            "forward work lies inside the range of the negated reverse works"
            if f_in_r == 0.0
            else "negated reverse work lies inside the range of the forward works"
        )
        if n_r < FEW_PATHS or diagnostics.n_forward < FEW_PATHS:
            what += f"; the overlap measure, {overlap:.3g}, means nothing with {n_r} reverse path(s)"
        what += ")"
    else:
        return None
    if forward.n_steps_per_temp == 0:  # bridge sampling: a reference and posterior draws, no temperatures
        advice = (
            "Use more posterior draws (n_draws, or a longer pm.sample run given as posterior=) or a reference "
            "closer to the posterior (bridge_reference='student_t'); method='auto' adds a path from the reference "
            "when the overlap is poor."
        )
    else:
        advice = "Use more temperatures or kernel steps so that the paths are closer to equilibrium."
    return (
        f"pmz: the forward and (negated) reverse work distributions {what}; BAR's error bar is then not to be "
        f"trusted. {advice}"
    )


def _bootstrap(work_f, work_r, M, log_c_r, log_z, se, rng, n_bootstrap):
    """BAR on ``n_bootstrap`` resamples of the paths. A resample whose forward (reverse) paths all have zero weight
    estimates ``log Z = -inf`` (``+inf``): the bootstrap se is then infinite, as the data say."""
    out = np.empty(n_bootstrap)
    half = max(3 * se, 1e-3) if np.isfinite(se) else 1.0
    for b in range(n_bootstrap):
        wf = work_f[rng.integers(0, work_f.size, work_f.size)]
        wr = work_r[rng.integers(0, work_r.size, work_r.size)]
        if not np.isfinite(wf).any():
            out[b] = -np.inf
        elif not np.isfinite(wr).any():
            out[b] = np.inf
        else:
            out[b] = _solve(wf, wr, M, log_c_r, log_z - half, log_z + half)
    return out


def bar(
    forward: WorkRecord,
    reverse: WorkRecord,
    *,
    rng: np.random.Generator | None = None,
    n_bootstrap: int = 200,
    n_eff_r: float | None = None,
    se_method: str = "bennett",
    min_overlap: float = 0.03,
) -> EvidenceEstimate:
    """log Z by the Bennett acceptance ratio from a forward and a reverse record.

    Solves ``sum_i F(M + W_f,i + c) = sum_j F(-M + W_r,j - c)`` for ``c = log Z - log Z0``
    (``F(x) = 1/(1+e^x)``, ``M = log(n_f/n_r)``); see the module docstring for the derivation and the se.

    Parameters
    ----------
    forward, reverse : WorkRecord
        Forward and reverse runs over the same schedule with the same ``log_z0``.
    rng : numpy.random.Generator, optional
        For the bootstrap (default: a fixed seed, so the estimate is a pure function of the records).
    n_bootstrap : int
        Bootstrap replicates, resampling paths within each direction (0 to skip). Each replicate solves the BAR
        equation again. With ``n_eff_r`` the bootstrap still resamples draws independently and so ignores their
        autocorrelation.
    n_eff_r : float, optional
        Effective size of the reverse sample (see the module docstring).
    se_method : {"bennett", "ml"}
        Which asymptotic variance becomes ``log_z_se``; both are in the diagnostics.
    min_overlap : float
        Warn when the overlap measure falls below this.

    Returns
    -------
    EvidenceEstimate
        ``method = "bar"``. :class:`~pmz.estimate_diagnostics.WorkDiagnostics`: ``se_bennett``, ``se_ml``,
        ``overlap``, ``fraction_forward_in_reverse_range``, ``fraction_reverse_in_forward_range``,
        ``jarzynski_forward``, ``jarzynski_reverse``, ``lower``, ``upper``, ``gap`` (stochastic bounds, when all
        weights are finite), ``n_forward``, ``n_reverse``, ``n_eff_reverse``, ``log_count_ratio`` (M) and, with a
        bootstrap, ``bootstrap_log_z`` and ``se_bootstrap``.

    Examples
    --------
    >>> import numpy as np
    >>> from pmz.records import WorkRecord
    >>> rng = np.random.default_rng(1)
    >>> f = WorkRecord(log_weights=-rng.normal(1.0, 1.0, 400), schedule=[0.0, 1.0], log_z0=2.0)
    >>> r = WorkRecord(log_weights=-rng.normal(0.0, 1.0, 300), schedule=[0.0, 1.0], direction="reverse", log_z0=2.0)
    >>> est = bar(f, r, n_bootstrap=0)
    >>> abs(est.log_z - 1.5) < 4 * est.log_z_se, est.warnings
    (True, [])
    """
    if se_method not in _SE_METHODS:
        raise ValueError(f"pmz: se_method must be one of {_SE_METHODS}, got {se_method!r}")
    log_w_f, log_w_r, log_z0 = check_work_pair(forward, reverse)
    work_f, work_r, n_f, n_r, n_eff, M, log_c_r = _setup(log_w_f, log_w_r, n_eff_r)
    j_f, j_r = _jarzynski_pair(work_f, work_r)
    log_z = _solve(work_f, work_r, M, log_c_r, j_f, j_r)
    var = bar_variances(log_w_f, log_w_r, log_z, n_eff)
    se = {k: float(np.sqrt(var[k])) for k in _SE_METHODS}
    diagnostics = WorkDiagnostics(
        se_bennett=se["bennett"],
        se_ml=se["ml"],
        **bar_overlap(log_w_f, log_w_r, log_z, n_eff),
        jarzynski_forward=log_z0 + j_f,
        jarzynski_reverse=log_z0 + j_r,
        n_forward=n_f,
        n_reverse=n_r,
        n_eff_reverse=n_eff,
        log_count_ratio=M,
    )
    if np.all(np.isfinite(log_w_f)) and np.all(np.isfinite(log_w_r)):
        b = bounds_from_log_weights(log_w_f, log_w_r)
        diagnostics = replace(diagnostics, lower=log_z0 + b["lower"], upper=log_z0 + b["upper"], gap=b["gap"])
    if n_bootstrap:
        rng = np.random.default_rng(0) if rng is None else rng
        boot = log_z0 + _bootstrap(work_f, work_r, M, log_c_r, log_z, se["bennett"], rng, n_bootstrap)
        se_boot = float(np.std(boot, ddof=1)) if np.isfinite(boot).all() else np.inf
        diagnostics = replace(diagnostics, bootstrap_log_z=boot, se_bootstrap=se_boot)
    warnings = [] if (message := _overlap_warning(diagnostics, min_overlap, forward)) is None else [message]
    return EvidenceEstimate(
        log_z=log_z0 + log_z, log_z_se=se[se_method], method="bar", diagnostics=diagnostics, warnings=warnings
    )
