"""log Z and posterior weights from a ``pm.sample`` trace of :class:`SimulatedTempering` or :class:`WangLandau`.

Draw i of the trace (all chains, all post-tuning draws, ``N`` in total) carries the level conditional
``Q_i = q_i(. | x_i)`` over all K levels (stat ``rb_probs``), the guesses ``log Zhat^(i)`` it was made with
(``log_zhat``) and the prior over levels ``log r`` (``log_prior``).

:func:`tempered_evidence` maximises the multinomial likelihood of RTS Appendix A (Carlson et al. 2016) over ``z_k =
log Z_k - log Z_0`` (``z_0 = 0``),

    L(z) = sum_i sum_k Q_ik log pi_k^(i)(z),      pi^(i)(z) = softmax_k(log r_k + z_k - log Zhat^(i)_k),

which for guesses that do not change is exactly the RTS estimate (RTS eq 10)
``z_k = log Zhat_k - log Zhat_0 + log(r_0 / r_k) + log(c_k / c_0)``, ``c_k = mean_i Q_ik``; with guesses that
differ between chains (each chain runs its own pilot) or between draws (Wang-Landau) it weighs every draw with its
own guesses (:func:`pmz.estimators.rts.rts_from_draws`). log Z = ``z_{K-1}`` (the prior is normalised, log Z_0 = 0).
The standard error is a delete-one-group jackknife, a group being a batch of consecutive draws of one chain
(``n_batches_per_chain`` per chain): batches are nearly independent when they are much longer than the chain's
autocorrelation time.

:func:`tempered_weights` turns every draw into an importance sample of the beta = 1 posterior. Draw i comes from
the x-marginal of ``q^(i)(x, k) ∝ r_k f_k(x) / Zhat^(i)_k``, i.e. from ``q^(i)(x) = sum_k r_k f_k(x) / Zhat^(i)_k
/ C^(i)`` with ``C^(i) = sum_k r_k Z_k / Zhat^(i)_k``; the posterior is ``f_{K-1} / Z_{K-1}``, so

    w_i ∝ f_{K-1}(x_i) / q^(i)(x_i) ∝ q^(i)(K-1 | x_i) Zhat^(i)_{K-1} / r_{K-1} * C^(i),

with ``C^(i)`` computed from the RTS estimate ``z``: ``C^(i) = sum_k r_k exp(z_k - log Zhat^(i)_k)`` (up to the
common factor ``Z_0``). ``C^(i)`` is constant within a chain whose guesses are frozen, but differs between chains
and changes from draw to draw under Wang-Landau. Self-normalised, ``sum_i w_i = 1`` and

    E_post[h(x)] ≈ sum_i w_i h(x_i)

for any function h of the draws (e.g. ``(w * idata.posterior["mu"]).sum()``). Every draw contributes, not only
those at ``level == K - 1``; draws far below beta = 1 get weights near zero.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import xarray as xr

from ..estimators.rts import rts_from_draws
from ..inference_data import get_group, is_inference_data
from ..reliability import assess, mark_unreliable, non_finite_reason
from ..results import EvidenceResult, issue_warnings, make_result
from ..weights import ess, logsumexp

__all__ = ["tempered_evidence", "tempered_weights"]

_STATS = ("rb_probs", "log_zhat", "log_prior")
N_BATCHES_PER_CHAIN = 10  # the jackknife's default batches per chain


def _tempering_stats(idata):
    """``{name: (chain, draw, K)}`` arrays of the three tempering stats, looked up by name in ``sample_stats``."""
    stats = get_group(idata, "sample_stats") if is_inference_data(idata) else None
    if stats is None:
        raise ValueError("pmz: the trace has no sample_stats group; sample with pm.sample(step=...)")
    missing = [name for name in _STATS if name not in stats]
    if missing:
        raise ValueError(
            f"pmz: sample_stats lacks {missing}: was the trace sampled with pmz.SimulatedTempering or pmz.WangLandau?"
        )
    out = {}
    for name in _STATS:
        da = stats[name]
        if "chain" not in da.dims or "draw" not in da.dims or da.ndim != 3:
            raise ValueError(f"pmz: sample_stats[{name!r}] must have dims (chain, draw, level), got {da.dims}")
        out[name] = np.asarray(da.transpose("chain", "draw", ...).values, dtype=float)
    shapes = {v.shape for v in out.values()}
    if len(shapes) != 1:
        raise ValueError(f"pmz: the tempering stats have different shapes {sorted(shapes)}")
    log_prior = out["log_prior"]
    if not np.allclose(log_prior, log_prior[:1, :1]):
        raise ValueError(
            "pmz: the prior over levels (log_prior) changes between draws; tempered_evidence needs one prior"
        )
    return out, stats


def _non_finite_evals(sample_stats) -> tuple[int, int]:
    """Points where the model's log density was NaN during the kept draws, and +inf at any time (tuning and the
    start's pilot included: +inf anywhere makes log Z infinite), from the steps' cumulative counts (traces of older
    pmz releases have none: (0, 0))."""
    if "nan_evals" not in sample_stats or "posinf_evals" not in sample_stats:
        return 0, 0
    nan = np.asarray(sample_stats["nan_evals"].transpose("chain", "draw").values, dtype=np.int64)
    posinf = np.asarray(sample_stats["posinf_evals"].values, dtype=np.int64)
    return int(np.sum(nan.max(axis=1) - nan.min(axis=1))), int(posinf.max())


def tempered_evidence(idata, *, n_batches_per_chain: int = N_BATCHES_PER_CHAIN) -> EvidenceResult:
    """RTS estimate of log Z (log p(y)) from a tempering trace (see module docstring).

    The estimate goes through the same reliability checks as ``pmz.evidence``'s (:func:`pmz.reliability.assess`),
    and its warnings are issued as ``UserWarning`` and kept in the result.

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree
        From ``pm.sample(step=pmz.SimulatedTempering(...))`` or ``pmz.WangLandau``; only ``sample_stats`` (the
        post-tuning draws; tuning draws kept by ``discard_tuned_samples=False`` are in ``warmup_sample_stats`` and
        are not used) is read.
    n_batches_per_chain : int
        Batches of consecutive draws per chain for the jackknife standard error.

    Returns
    -------
    EvidenceResult
        The result type of ``pmz.evidence`` (groups ``posterior`` and ``evidence``): ``.log_z``, ``.log_z_se``,
        ``.method`` (``"rts"``), ``.reliable``, ``.reliability_reason``, ``.warnings`` and ``.diagnostics``:
        ``log_z_k`` (the whole curve), ``log_z_k_se``, ``c_hat`` (pooled level marginal), ``prior``,
        ``max_gap = max_k |r_k - c_k|``, ``n_chains``, ``n_draws``, ``n_groups``. ``.run_attrs`` holds the settings:
        ``options`` (``n_batches_per_chain``), ``estimator``, ``n_levels``, ``n_chains``, ``n_draws`` and
        ``wall_time``.
    """
    result = _rts_result(idata, n_batches_per_chain)
    issue_warnings(result.warnings, stacklevel=2)
    return result


def _rts_result(idata, n_batches_per_chain) -> EvidenceResult:
    """:func:`tempered_evidence` without issuing its warnings (they are in the result)."""
    t0 = time.perf_counter()
    stats, sample_stats = _tempering_stats(idata)
    n_chains, n_draws, K = stats["rb_probs"].shape
    B = int(n_batches_per_chain)
    if B < 1 or B > n_draws:
        raise ValueError(f"pmz: n_batches_per_chain must lie in [1, {n_draws}], got {n_batches_per_chain!r}")
    if n_chains * B < 2:
        raise ValueError("pmz: need at least two batches in all (several chains or n_batches_per_chain >= 2)")
    groups = (np.arange(n_chains)[:, None] * B + (np.arange(n_draws) * B // n_draws)[None, :]).ravel()
    log_prior = stats["log_prior"][0, 0]
    est = rts_from_draws(
        stats["rb_probs"].reshape(-1, K), stats["log_zhat"].reshape(-1, K), log_prior, groups, log_z0=0.0
    )
    gap = float(np.max(np.abs(np.exp(log_prior) - est.diagnostics.c_hat)))
    warnings = list(est.warnings)
    if gap > 0.5 / K:
        warnings.append(
            "pmz: tempered_evidence: the level marginal is far from the prior over levels "
            f"(max |r_k - c_k| = {gap:.3g}): some "
            "levels were rarely visited; tune longer or give better log_zhat guesses"
        )
    diagnostics = replace(est.diagnostics, max_gap=gap, n_chains=int(n_chains), n_draws=int(n_draws))
    estimate = assess(replace(est, diagnostics=diagnostics, warnings=warnings))
    nan, posinf = _non_finite_evals(sample_stats)
    if nan or posinf:
        estimate = mark_unreliable(estimate, non_finite_reason(nan, posinf, " while the chains ran"))
    attrs = {
        "options": {"n_batches_per_chain": B},
        "estimator": "rts_from_draws",
        "n_levels": int(K),
        "n_chains": int(n_chains),
        "n_draws": int(n_draws),
        "wall_time": time.perf_counter() - t0,
    }
    return make_result(estimate, attrs=attrs)


def tempered_weights(idata, *, estimate: EvidenceResult | None = None) -> xr.DataArray:
    """Self-normalised importance weights ``(chain, draw)`` of all draws for the beta = 1 posterior.

    ``E_post[h] ≈ sum_i w_i h(x_i)``; see the module docstring for the formula. ``estimate`` is the result of
    :func:`tempered_evidence` on the same trace (computed, without issuing its warnings, when not given). The Kish
    effective sample size
    ``(sum w)^2 / sum w^2`` is in ``attrs["ess_kish"]``; it ignores autocorrelation, so for a Monte Carlo error of a
    weighted mean use the ESS of the series ``N w_i (h_i - mean)`` (e.g. ``arviz.mcse(..., method="mean")``).
    """
    stats, sample_stats = _tempering_stats(idata)
    if estimate is None:
        estimate = _rts_result(idata, N_BATCHES_PER_CHAIN)
    curve = estimate.diagnostics["log_z_k"]  # EvidenceResult.diagnostics: the result's evidence group, a dict
    z = np.asarray(curve, dtype=float) - curve[0]
    log_prior = stats["log_prior"]
    log_zhat = stats["log_zhat"]
    with np.errstate(divide="ignore"):
        log_q_top = np.log(stats["rb_probs"][..., -1])
    log_c = logsumexp(log_prior + z - log_zhat, axis=-1)
    log_w = log_q_top - log_prior[..., -1] + log_zhat[..., -1] + log_c
    w = np.exp(log_w - logsumexp(log_w.ravel()))
    return xr.DataArray(
        w,
        dims=("chain", "draw"),
        coords={"chain": sample_stats["chain"].values, "draw": sample_stats["draw"].values},
        name="tempered_weight",
        attrs={"ess_kish": ess(log_w.ravel()), "log_z": float(estimate.log_z)},
    )
