"""Splitting a run into independent chunks and pooling the chunks' records exactly.

A chunked run (``pmz.evidence(..., n_chunks=..., executor=...)``, :mod:`pmz.execution.executors`) cuts the work into
pieces the algorithm already treats as independent: groups of annealing paths, groups of simulated-tempering
chains that share one frozen ladder and frozen level weights, groups of SMC runs. Each chunk gets its own random
stream, spawned from the run's stream by chunk index, and records what the whole run would record for its share.
The functions here put the records back together, in chunk order, so that the pooled record depends on the chunking
and the seed only, never on where or in which order the chunks ran.

* :func:`split`: ``n`` units into ``n_chunks`` nearly equal consecutive groups;
* :func:`merge_work`: WorkRecords of disjoint paths over one schedule -> one WorkRecord (weights concatenated; the
  on-the-fly ESS pooled from ``log sum w`` and ``log sum w^2``; acceptance weighted by paths);
* :func:`merge_traces`: TemperingTraces of disjoint chains over one ladder with the same guesses and batches ->
  one TemperingTrace. Every estimator of a trace reads sums over samples per batch of sweeps (all chains pooled:
  RTS's ``sum q(k | x)``, TI's sums of ``U``, the visit counts) or every sample (MBAR's ``U`` and level), so adding
  the chunks' batch sums and joining their samples gives exactly the statistics of one run of all chains;
* :func:`merge_smc`: SMCRecords of disjoint runs -> one SMCRecord (stages concatenated in run order, final particles
  pooled with ``log sum_j Z_j``-consistent weights).

>>> split(10, 3)
[4, 3, 3]
"""

from __future__ import annotations

from dataclasses import replace
from functools import reduce

import numpy as np

from ..records import SMCRecord, TemperingTrace, WorkRecord
from ..weights import logsumexp

__all__ = ["split", "merge_work", "merge_traces", "merge_smc", "SMC_COLUMNS"]

SMC_COLUMNS = (
    "log_increment",
    "run",
    "position",
    "position_from",
    "n_particles",
    "ess",
    "ess_start",
    "gamma",
    "gamma_initial",
    "n_generate",
    "acceptance",
    "step_size",
    "n_moves",
    "resampled",
)


def split(n: int, n_chunks: int) -> list[int]:
    """Sizes of ``n_chunks`` consecutive groups of ``n`` units, as equal as possible (larger ones first)."""
    n, n_chunks = int(n), int(n_chunks)
    if not 1 <= n_chunks <= n:
        raise ValueError(f"pmz: cannot split {n} paths, chains or runs into {n_chunks} chunks (n_chunks <= {n})")
    base, extra = divmod(n, n_chunks)
    return [base + (c < extra) for c in range(n_chunks)]


def _sum(arrays):
    """Elementwise sum, in order (the same order whatever ran where)."""
    return reduce(np.add, arrays)


def _concat(arrays):
    return None if any(a is None for a in arrays) else np.concatenate(arrays)


def merge_work(records: list[WorkRecord], *, tuning: dict | None = None) -> WorkRecord:
    """One WorkRecord of the paths of ``records`` (runs of disjoint paths over one schedule with one set of frozen
    kernels, in chunk order). ``tuning``: the description to keep (default the first record's)."""
    first = records[0]
    n = np.array([r.n_paths for r in records], dtype=float)
    acceptance = None
    if first.acceptance is not None:
        acceptance = _sum([r.acceptance * m for r, m in zip(records, n)]) / n.sum()
    ess_path = log_sum_w = log_sum_w2 = None
    if all(r.log_sum_w is not None for r in records):
        log_sum_w = reduce(np.logaddexp, [r.log_sum_w for r in records])
        log_sum_w2 = reduce(np.logaddexp, [r.log_sum_w2 for r in records])
        ess_path = np.exp(2 * log_sum_w - log_sum_w2)
    return replace(
        first,
        log_weights=np.concatenate([r.log_weights for r in records]),
        acceptance=acceptance,
        ess_path=ess_path,
        final_x=_concat([r.final_x for r in records]),
        n_logp_evals=sum(r.n_logp_evals for r in records),
        n_grad_evals=sum(r.n_grad_evals for r in records),
        tuning=dict(first.tuning if tuning is None else tuning),
        log_sum_w=log_sum_w,
        log_sum_w2=log_sum_w2,
    )


def _draws(traces, name):
    """Every sample's ``U`` or level, sweep-major as one run of all chains stores them: ``(n_sweeps, n_chains)``
    raveled, the chunks' chains side by side."""
    values = [getattr(t, name) for t in traces]
    if any(v is None for v in values):
        return None
    return np.concatenate([v.reshape(t.n_sweeps, t.n_chains) for v, t in zip(values, traces)], axis=1).ravel()


def merge_traces(traces: list[TemperingTrace], *, n_traces: int = 5) -> TemperingTrace:
    """One TemperingTrace of the chains of ``traces`` (runs of disjoint chains over one ladder with the same frozen
    ``log_zhat``, sweeps and batches, in chunk order): batch sums added, samples and final states joined, the
    acceptance weighted by visits, the level trajectories of the first ``n_traces`` chains."""
    first = traces[0]
    for t in traces[1:]:
        if t.n_sweeps != first.n_sweeps or t.batch_q.shape != first.batch_q.shape:
            raise ValueError("pmz: tempering chunks must share their sweeps and batches")
        if not np.array_equal(t.log_zhat, first.log_zhat) or not np.array_equal(t.betas, first.betas):
            raise ValueError("pmz: tempering chunks must share the ladder and the frozen log Zhat")
    batch = {
        name: _sum([getattr(t, name) for t in traces])
        for name in ("batch_q", "batch_qU", "batch_qU2", "batch_counts", "batch_U", "batch_U2", "batch_size")
    }
    for name in ("batch_inf", "batch_q_inf"):
        values = [getattr(t, name) for t in traces]
        batch[name] = None if any(v is None for v in values) else _sum(values)
    visits = [np.sum(t.batch_counts, axis=0) for t in traces]
    accepted = _sum([np.where(v > 0, np.nan_to_num(t.acceptance) * v, 0.0) for t, v in zip(traces, visits)])
    with np.errstate(invalid="ignore"):
        acceptance = accepted / _sum(visits)
    samples = np.array([t.n_sweeps * t.n_chains for t in traces], dtype=float)
    level_traces = None
    if all(t.level_traces is not None for t in traces):
        level_traces = np.concatenate([t.level_traces for t in traces], axis=1)[:, :n_traces]
    return replace(
        first,
        **batch,
        acceptance=acceptance,
        level_acceptance=float(sum(t.level_acceptance * m for t, m in zip(traces, samples)) / samples.sum()),
        level_traces=level_traces,
        n_chains=int(sum(t.n_chains for t in traces)),
        draws_U=_draws(traces, "draws_U"),
        draws_level=_draws(traces, "draws_level"),
        final_x=_concat([t.final_x for t in traces]),
        final_levels=_concat([t.final_levels for t in traces]),
        final_log_q=_concat([t.final_log_q for t in traces]),
        n_logp_evals=sum(t.n_logp_evals for t in traces),
        n_grad_evals=sum(t.n_grad_evals for t in traces),
    )


def merge_smc(records: list[SMCRecord]) -> SMCRecord:
    """One SMCRecord of the runs of ``records`` (disjoint runs numbered as in the whole, in run order), each with
    its final particles' log weights unpooled (within-run normalised weights plus the run's log Z, as
    :func:`pmz.runners.resample_move.smc_runs` leaves them); the pooled final weights are normalised over all runs."""
    first = records[0]
    columns = {name: np.concatenate([getattr(r, name) for r in records]) for name in SMC_COLUMNS}
    run = columns["run"]  # runs numbered 0.. in order (a partial run may lack some of the whole run's numbers)
    columns["run"] = np.unique(run, return_inverse=True)[1].reshape(run.shape).astype(run.dtype)
    final_x, final_log_w = _concat([r.final_x for r in records]), _concat([r.final_log_weights for r in records])
    if final_log_w is not None:
        final_log_w = final_log_w - logsumexp(final_log_w)
    return replace(
        first,
        **columns,
        n_runs=int(sum(r.n_runs for r in records)),
        final_x=final_x,
        final_log_weights=final_log_w,
        n_logp_evals=sum(r.n_logp_evals for r in records),
        n_grad_evals=sum(r.n_grad_evals for r in records),
    )
