"""Bridge sampling from existing posterior draws: the K = 1 case of the two-sided estimators.

Meng & Wong (1996); Gronau et al. (2017); Habeck (2017) section 5 (BAR with one step). Given posterior draws
``x_j ~ p1`` in the flat unconstrained space and a normalised reference ``q`` fitted to them,

    forward  ("from q"):     x_i ~ q,    log w_f,i = log f1(x_i) - log q(x_i)
    reverse  ("from p1"):    x_j ~ p1,   log w_r,j = log q(x_j) - log f1(x_j)

with ``f1 = prior x likelihood`` (unnormalised posterior). BAR on these works is the optimal bridge sampling
estimate of ``log Z = log p(y)``. The reference is fitted to the first half of every chain and the bridge uses
the second half (so q does not overfit the draws it is evaluated at). The reverse draws are MCMC draws: their
effective sample size (ArviZ bulk ESS of the reverse log weights over chains) is recorded and used in place of
their count for the variance. The draws are also tested (:func:`pmz.runners.draws_check.check_draws`): draws of
another model with the same variable names give a confident wrong answer, and the records' notes then hold a
:class:`pmz.records.DrawsCheck` with a non-empty ``mismatch``.

This runner records; :func:`pmz.estimators.bar.bar` estimates.
"""

from __future__ import annotations

import numpy as np

from ..model.reference import GaussianReference, StudentTReference
from ..records import BidirectionalRecord, DrawsTrust, RunNotes, WorkRecord
from .starts import chain_ess, check_draws

__all__ = ["fit_reference", "run_bridge"]


def fit_reference(X, kind: str = "gaussian", *, df: float = 5.0, inflate: float = 1.0):
    """A normalised reference q matched to draws ``X (n, dim)``: mean and (inflated) covariance (its diagonal
    where the draws are fewer than ``dim + 2``).

    ``kind``: "gaussian" or "student_t" (heavier tails, ``df`` degrees of freedom, scale matrix chosen so that
    the covariance matches the draws' when ``df > 2``).
    """
    X = np.asarray(X, dtype=float)
    mean = X.mean(axis=0)
    if X.shape[0] < X.shape[1] + 2:  # too few draws for a full covariance (a max_time cut in many dimensions)
        cov = np.diag(np.var(X, axis=0, ddof=1 if X.shape[0] > 1 else 0)) * inflate**2
    else:
        cov = np.atleast_2d(np.cov(X, rowvar=False)) * inflate**2
    cov = cov + 1e-10 * np.eye(mean.size) * max(np.trace(cov) / mean.size, 1e-12)
    if kind == "gaussian":
        return GaussianReference(mean, cov, name="gaussian fit")
    if kind == "student_t":
        scale_matrix = cov * (df - 2) / df if df > 2 else cov
        return StudentTReference(mean, scale_matrix, df, name=f"student_t({df:g}) fit")
    raise ValueError(f"pmz: unknown bridge reference {kind!r}; use 'gaussian', 'student_t' or a reference object")


def _split_by_chain(chain):
    """Index arrays: the first half of every chain (for fitting) and the second half (for the bridge)."""
    fit, bridge = [], []
    for c in np.unique(chain):
        idx = np.flatnonzero(chain == c)
        half = idx.size // 2
        fit.append(idx[:half])
        bridge.append(idx[half:])
    return np.concatenate(fit), np.concatenate(bridge)


def run_bridge(
    compiled,
    draws,
    chain,
    rng: np.random.Generator,
    *,
    reference="gaussian",
    n_reference: int | None = None,
    df: float = 5.0,
    split: bool = True,
    check: bool = True,
) -> BidirectionalRecord:
    """Record the forward (from q) and reverse (posterior draws) log weights of bridge sampling.

    Parameters
    ----------
    compiled : CompiledModel
    draws : array (n, dim)
        Posterior draws in the flat unconstrained space (see :func:`pmz.runners.starts.posterior_to_flat`).
    chain : array (n,) of int
        Chain of each draw.
    rng : numpy.random.Generator
    reference : "gaussian", "student_t" or a reference object (``sample``, ``log_density``, ``dim``)
    n_reference : int, optional
        Draws from q (default: as many as bridge draws).
    split : bool
        Fit q on the first half of each chain and bridge with the second half (default). With False, all draws
        serve both purposes (slightly optimistic).
    check : bool
        Test that the draws look like this model's posterior (:func:`pmz.runners.draws_check.check_draws`); its
        :class:`pmz.records.DrawsCheck` goes to both records' notes (``notes.draws.check``).
    """
    draws = np.asarray(draws, dtype=float)
    chain = np.asarray(chain)
    if draws.ndim != 2 or draws.shape[1] != compiled.dim:
        raise ValueError(f"draws must have shape (n, {compiled.dim}), got {draws.shape}")
    if split:
        fit_idx, bridge_idx = _split_by_chain(chain)
    else:
        fit_idx = bridge_idx = np.arange(draws.shape[0])
    if bridge_idx.size < 10 or (isinstance(reference, str) and fit_idx.size < compiled.dim + 2):
        raise ValueError(
            f"pmz: bridge sampling needs more posterior draws (got {draws.shape[0]} for dimension {compiled.dim})"
        )
    q = reference if not isinstance(reference, str) else fit_reference(draws[fit_idx], reference, df=df)
    x_post = draws[bridge_idx]
    n_q = int(n_reference or bridge_idx.size)
    x_q = q.sample(rng, n_q)

    x_all = np.vstack([x_q, x_post])
    lp, ll = compiled.log_densities_once(x_all)
    log_f1 = lp + ll
    log_q = q.log_density(x_all)
    log_w_f = log_f1[:n_q] - log_q[:n_q]
    log_w_r = log_q[n_q:] - log_f1[n_q:]
    log_w_f = np.where(np.isnan(log_w_f), -np.inf, log_w_f)
    log_w_r = np.where(np.isnan(log_w_r), np.inf, log_w_r)
    n_eff = chain_ess(np.where(np.isfinite(log_w_r), log_w_r, 0.0), chain[bridge_idx])

    description = {"reference": getattr(q, "name", "reference"), "n_fit": int(fit_idx.size), "split": bool(split)}
    trust = None
    if check:  # do the draws look like this model's posterior? (all of them)
        trust = DrawsTrust(check=check_draws(compiled, draws, chain, rng.spawn(1)[0]))
    notes = RunNotes(description=description, draws=trust)
    schedule = np.array([0.0, 1.0])
    common = dict(schedule=schedule, log_z0=float(getattr(q, "log_z", 0.0)), n_steps_per_temp=0, kernel="none",
                  notes=notes)
    forward = WorkRecord(log_weights=log_w_f, direction="forward", final_x=x_q, n_logp_evals=n_q, **common)
    reverse = WorkRecord(
        log_weights=log_w_r, direction="reverse", final_x=x_post, n_logp_evals=bridge_idx.size, **common
    )
    return BidirectionalRecord(forward, reverse, reverse_start="posterior", n_eff_reverse=n_eff)
