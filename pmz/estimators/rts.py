"""Rao-Blackwellised tempered sampling (RTS) and its count-based cousin (TS) (Carlson et al. 2016).

A simulated-tempering run with guesses ``Zhat_k`` samples ``q(x, k) ∝ r_k f_k(x) / Zhat_k``, whose level marginal
is ``q(k) = (r_k Z_k / Zhat_k) / sum_j r_j Z_j / Zhat_j``. Estimating ``q(k)`` by the Rao-Blackwellised average
``c_hat_k = (1/N) sum_i q(k | x_i)`` (RTS eq 9) and solving for ``Z_k`` gives (RTS eq 10)

    log Z_k - log Z_0 = log Zhat_k - log Zhat_0 + log(r_0 / r_k) + log(c_hat_k / c_hat_0).

TS uses the visit fractions ``(n_k + 0.1) / (N + 0.1 K)`` instead (the 0.1 pseudo-count keeps empty levels
finite). The reported log Z is level ``K-1`` (``b = 1``) plus the family's ``log Z0``.

Error bars (RTS eq 15-16): by the delta method, ``Var(log Z_k) ~= Var(c_k)/c_k^2 + Var(c_0)/c_0^2 -
2 Cov(c_0, c_k)/(c_0 c_k)``, i.e. the variance of the mean of the linearised series ``c_bk / c_k - c_b0 / c_0``
over batches b of consecutive sweeps (all chains pooled). Chains are autocorrelated over many sweeps (a chain must
walk down the ladder and back to decorrelate), so that variance is taken with the series' autocorrelation
(ArviZ's MCSE of the mean) rather than treating the batches as independent. The jackknife pseudo-values of the same
batches give a second se (``se_jackknife``).

Several runs with different guesses (the initial iterations) are combined by maximising the multinomial likelihood
of RTS Appendix A, ``L(z) = sum_s sum_k Q_sk log pi_k^(s)(z)`` with ``pi^(s)(z) = softmax_k(log r_k + z_k -
log Zhat_sk)`` and ``Q_sk = sum_i q(k | x_i)`` of run s; ``L`` is concave, its maximiser for one run is eq 10.
"""

from __future__ import annotations

import numpy as np

from ..estimate_diagnostics import TemperingDiagnostics
from ..records import EvidenceEstimate, TemperingTrace
from ..weights import logsumexp

__all__ = ["rts", "ts", "rts_combine", "rts_from_draws", "log_z_curve", "jackknife_se", "delete_one_se", "series_se"]


def log_z_curve(log_zhat, c, log_prior) -> np.ndarray:
    """``log Z_k - log Z_0`` for all levels from level marginals ``c`` (RTS eq 10)."""
    with np.errstate(divide="ignore"):
        log_c = np.log(np.asarray(c, dtype=float))
    out = np.asarray(log_zhat) + log_c - np.asarray(log_prior)
    return out - out[0]


def series_se(series) -> float:
    """Standard error of the mean of a time series (one value per batch of consecutive sweeps), accounting for its
    autocorrelation: ArviZ's Monte Carlo standard error of the mean (Geyer's initial monotone sequence)."""
    series = np.asarray(series, dtype=float)
    if series.size < 4 or not np.all(np.isfinite(series)):
        return float("nan")
    if np.ptp(series) == 0:
        return 0.0
    from ..inference_data import mcse_mean

    return mcse_mean(series[None, :])


def _delta_se(batch_c, c, sizes):
    """se of ``log c_k - log c_0`` for every level by the delta method (RTS eq 16), with the variance of the
    linearised batch series ``s_b = c_bk / c_k - c_b0 / c_0`` estimated with its autocorrelation (:func:`series_se`).
    The batches are weighted by their sizes (all equal but possibly the last)."""
    weights = sizes / sizes.mean()
    with np.errstate(divide="ignore", invalid="ignore"):
        s = (batch_c / c - (batch_c[:, :1] / c[0])) * weights[:, None]
    return np.array([0.0] + [series_se(s[:, k]) for k in range(1, c.size)])


def delete_one_se(replicates) -> np.ndarray:
    """Jackknife se from delete-one replicates ``(B, ...)``: ``sqrt((B - 1) / B sum_b (theta_(-b) - mean)^2)``."""
    replicates = np.asarray(replicates, dtype=float)
    B = replicates.shape[0]
    if B < 2:
        return np.full(replicates.shape[1:], np.nan)
    return np.sqrt((B - 1) / B * np.sum((replicates - replicates.mean(axis=0)) ** 2, axis=0))


def jackknife_se(statistic, batches: dict) -> float:
    """se of ``statistic(sums)`` from the batch jackknife *pseudo-values* ``B theta - (B - 1) theta_(-b)`` (one per
    batch of consecutive sweeps, ``batches``: name -> array with batches on axis 0), whose mean's se is taken with
    the series' autocorrelation (:func:`series_se`). For a smooth statistic the pseudo-values are its linearisation
    (influence values), so this is the delta method without writing the derivative out."""
    B = next(iter(batches.values())).shape[0]
    if B < 2:
        return float("nan")
    totals = {k: v.sum(axis=0) for k, v in batches.items()}
    theta = statistic(totals)
    leave_one_out = np.array([statistic({k: totals[k] - v[b] for k, v in batches.items()}) for b in range(B)])
    return series_se(B * theta - (B - 1) * leave_one_out)


def _estimate(trace: TemperingTrace, method, batch_c, c):
    curve = log_z_curve(trace.log_zhat, c, trace.log_prior)
    sizes = trace.batch_size.astype(float)
    curve_se = _delta_se(batch_c, c, sizes)

    def top(sums):
        return log_z_curve(trace.log_zhat, sums["c"] / sums["n"], trace.log_prior)[-1]

    weighted = batch_c * sizes[:, None]
    se_jack = jackknife_se(top, {"c": weighted, "n": sizes})
    gap = trace.max_gap
    warnings = []
    if not np.all(np.isfinite(curve)):
        warnings.append(f"pmz: {method}: some levels were never reached; log Z_k is not finite there")
    if gap > 0.5 / trace.n_levels:
        warnings.append(
            f"pmz: {method}: the level marginal is far from the prior over levels (max |r_k - c_k| = {gap:.3g}): the "
            "guesses log Zhat were poor and some levels are rarely visited; increase the initial iterations"
        )
    se = float(curve_se[-1]) if np.isfinite(curve_se[-1]) else se_jack
    return EvidenceEstimate(
        log_z=float(curve[-1] + trace.log_z0),
        log_z_se=se,
        method=method,
        diagnostics=TemperingDiagnostics(
            log_z_k=curve + trace.log_z0,
            log_z_k_se=curve_se,
            c_hat=np.asarray(c, dtype=float),
            prior=trace.prior,
            max_gap=gap,
            se_jackknife=se_jack,
            n_samples=trace.n_samples,
            n_batches=int(batch_c.shape[0]),
        ),
        warnings=warnings,
    )


def rts(trace: TemperingTrace) -> EvidenceEstimate:
    """RTS estimate of log Z and the whole curve ``log Z_k`` (:class:`~pmz.estimate_diagnostics.TemperingDiagnostics`
    ``log_z_k``, ``log_z_k_se``)."""
    batch_c = trace.batch_q / trace.batch_size[:, None]
    return _estimate(trace, "rts", batch_c, trace.c_hat)


def ts(trace: TemperingTrace, pseudo_count: float = 0.1) -> EvidenceEstimate:
    """Tempered-sampling estimate from visit fractions ``(n_k + 0.1) / (N + 0.1 K)``."""
    K = trace.n_levels
    batch_c = (trace.batch_counts + pseudo_count) / (trace.batch_size[:, None] + pseudo_count * K)
    c = (trace.counts + pseudo_count) / (trace.n_samples + pseudo_count * K)
    return _estimate(trace, "ts", batch_c, c)


def _multinomial_solve(Q, n, log_zhat, log_prior, z, *, max_iter=100, tol=1e-10):
    """Maximise ``L(z) = sum_s sum_k Q_sk log pi_k^(s)(z)`` (RTS Appendix A) by Newton with ``z_0 = 0``.

    Returns ``(z, cov, converged)``, ``cov`` the inverse observed information (zero row and column 0; inf where the
    information is singular: levels the draws never reached, whose ``log Z_k`` the draws do not identify).
    """

    def pieces(z):
        logits = log_prior + z - log_zhat
        log_pi = logits - logsumexp(logits, axis=1)[:, None]
        pi = np.exp(log_pi)
        value = float(np.sum(Q * log_pi))
        grad = np.sum(Q - n[:, None] * pi, axis=0)
        hess = np.einsum("s,sk,sj->kj", n, pi, pi) - np.diag(np.sum(n[:, None] * pi, axis=0))
        return value, grad, hess

    converged = False
    for _ in range(max_iter):
        value, grad, hess = pieces(z)
        step = np.zeros_like(z)
        if not (np.all(np.isfinite(hess)) and np.all(np.isfinite(grad))):
            break  # draws whose level probabilities are not finite: not converged, no information (cov below)
        step[1:] = np.linalg.lstsq(hess[1:, 1:], -grad[1:], rcond=None)[0]  # singular: levels never reached
        t = 1.0
        while pieces(z + t * step)[0] < value - 1e-12 and t > 1e-8:
            t /= 2
        z = z + t * step
        if np.max(np.abs(t * step)) < tol:
            converged = True
            break
    _, _, hess = pieces(z)
    cov = np.zeros_like(hess)
    try:
        if not np.all(np.isfinite(hess)):
            raise np.linalg.LinAlgError
        cov[1:, 1:] = np.linalg.inv(-hess[1:, 1:])
    except np.linalg.LinAlgError:  # levels the draws never reached: their log Z_k, and so log Z, is not identified
        cov[1:, 1:] = np.inf
    return z, cov, converged


def _finite_start(z):
    z = np.asarray(z, dtype=float)
    return np.where(np.isfinite(z), z, np.nanmin(np.where(np.isfinite(z), z, np.nan)) - 50.0)


def rts_combine(traces, *, stages=None) -> EvidenceEstimate:
    """Combine runs with different guesses by the multinomial likelihood of RTS Appendix A (Newton, ``z_0 = 0``).

    ``traces``: the runs (the last one's estimate sets the start and the se); ``stages``: optionally more runs
    given only by their statistics ``(Q (S, K), n (S,), log_zhat (S, K))``, ``Q_sk = sum_i q(k | x_i)`` (what a
    trace keeps of its initial iterations in ``stage_q``, ``stage_n``, ``stage_log_zhat``).

    The se is the inverse observed information, rescaled by the ratio of the last run's batch-means se to its own
    multinomial se (autocorrelated chains carry less information than independent draws; Rao-Blackwellised
    averages carry more than counts).
    """
    traces = list(traces)
    own = traces[-1]
    Q = np.stack([t.c_hat * t.n_samples for t in traces])  # (S, K)
    n = np.array([t.n_samples for t in traces], dtype=float)
    log_zhat = np.stack([t.log_zhat for t in traces])
    if stages is not None and len(stages[1]):
        Q = np.concatenate([np.asarray(stages[0], dtype=float), Q])
        n = np.concatenate([np.asarray(stages[1], dtype=float), n])
        log_zhat = np.concatenate([np.asarray(stages[2], dtype=float), log_zhat])
    start = _finite_start(log_z_curve(own.log_zhat, own.c_hat, own.log_prior))
    z, cov, converged = _multinomial_solve(Q, n, log_zhat, own.log_prior, start)
    se_multinomial = np.sqrt(np.maximum(np.diag(cov), 0.0))
    last = rts(own)
    c = own.c_hat
    own_info = own.n_samples * (np.diag(c) - np.outer(c, c))
    own_cov = np.linalg.inv(own_info[1:, 1:])
    inflation = last.log_z_se / np.sqrt(own_cov[-1, -1]) if np.isfinite(last.log_z_se) else 1.0
    se = se_multinomial * float(inflation)
    return EvidenceEstimate(
        log_z=float(z[-1] + own.log_z0),
        log_z_se=float(se[-1]),
        method="rts_combined",
        diagnostics=TemperingDiagnostics(
            log_z_k=z + own.log_z0,
            log_z_k_se=se,
            n_runs=len(n),
            converged=converged,
            se_inflation=float(inflation),
        ),
        warnings=[] if converged else ["pmz: rts_combine: Newton iterations did not converge"],
    )


def rts_from_draws(rb_probs, log_zhat, log_prior, groups, *, log_z0: float = 0.0) -> EvidenceEstimate:
    """RTS from individual simulated-tempering draws whose guesses may differ from draw to draw (a PyMC trace of
    :class:`pmz.SimulatedTempering` or the adapting :class:`pmz.WangLandau`).

    Each draw i is a "run" of one sample with ``Q_i = q_i(. | x_i)`` (``rb_probs (N, K)``) and guesses
    ``log_zhat (N, K)``; the Appendix A likelihood is maximised over all draws at once (for fixed guesses this is
    exactly eq 10). The se is a delete-one-group jackknife over ``groups (N,)`` (e.g. batches of consecutive draws
    within each chain), which accounts for autocorrelation.
    """
    Q = np.asarray(rb_probs, dtype=float)
    log_zhat = np.asarray(log_zhat, dtype=float)
    log_prior = np.asarray(log_prior, dtype=float)
    groups = np.asarray(groups)
    n = np.ones(Q.shape[0])
    pooled = np.sum(Q, axis=0) / Q.shape[0]
    start = _finite_start(log_z_curve(np.mean(log_zhat, axis=0), pooled, log_prior))
    z, _, converged = _multinomial_solve(Q, n, log_zhat, log_prior, start)
    labels = np.unique(groups)
    replicates = []
    for g in labels:
        keep = groups != g
        z_g, _, _ = _multinomial_solve(Q[keep], n[keep], log_zhat[keep], log_prior, z)
        replicates.append(z_g)
    B = labels.size
    se_k = delete_one_se(replicates) if B > 1 else np.full(z.size, np.nan)
    return EvidenceEstimate(
        log_z=float(z[-1] + log_z0),
        log_z_se=float(se_k[-1]),
        method="rts",
        diagnostics=TemperingDiagnostics(
            log_z_k=z + log_z0,
            log_z_k_se=se_k,
            c_hat=pooled,
            prior=np.exp(log_prior),
            n_samples=int(Q.shape[0]),
            n_groups=int(B),
            converged=converged,
        ),
        warnings=[] if converged else ["pmz: rts: Newton iterations did not converge"],
    )
