"""Splitting a run into independent chunks and pooling the chunks' records exactly.

Every chunked method (:mod:`pmz.execution.executors`; a call without ``n_chunks`` or an executor is one chunk) cuts
the work into pieces the algorithm already treats as independent: whole blocks of annealing paths, whole blocks of
simulated-tempering chains that share one frozen ladder and frozen level weights, groups of SMC runs. Every path,
chain and run draws from its own random stream (:mod:`pmz.runners.row_streams`), and records keep their sums per
fixed block of work (:func:`block_offsets`). The functions here put the records back together, adding the blocks'
sums in block order, so that the pooled record depends on the seed only, never on the chunking or on where or in
which order the chunks ran.

* :func:`split`: ``n`` units into ``n_chunks`` nearly equal consecutive groups; :func:`block_offsets`,
  :func:`chunk_rows`: the fixed blocks of work and chunks of whole blocks;
* :func:`merge_work`: WorkRecords of disjoint paths over one schedule -> one WorkRecord (weights and blocks
  concatenated; the on-the-fly ESS and the acceptance from the blocks' sums, :func:`pool_work`);
* :func:`merge_traces`: TemperingTraces of disjoint chains over one ladder with the same guesses and batches ->
  one TemperingTrace. Every estimator of a trace reads sums over samples per batch of sweeps (all chains pooled:
  RTS's ``sum q(k | x)``, TI's sums of ``U``, the visit counts) or every sample (MBAR's ``U`` and level), so adding
  the blocks' batch sums in order (:func:`pool_trace`) and joining the samples gives exactly the statistics of one
  run of all chains;
* :func:`merge_smc`: SMCRecords of disjoint runs -> one SMCRecord (stages concatenated in run order, final particles
  pooled with ``log sum_j Z_j``-consistent weights).

>>> split(10, 3)
[4, 3, 3]
"""

from __future__ import annotations

from dataclasses import replace
from functools import reduce

import numpy as np

from ..records import RunNotes, SMCRecord, TemperingTrace, WorkRecord
from ..weights import logsumexp

__all__ = [
    "split",
    "block_offsets",
    "chunk_rows",
    "PATH_BLOCKS",
    "CHAIN_BLOCKS",
    "pool_work",
    "pool_trace",
    "pooled_trace_sums",
    "merge_work",
    "merge_traces",
    "merge_smc",
    "SMC_COLUMNS",
]

PATH_BLOCKS = 64  # blocks of work of an annealing run (and so at most 64 chunks)
CHAIN_BLOCKS = 8  # blocks of work of a tempering run: each keeps its own batch sums (B x K per statistic)
TRACE_SUMS = ("q", "qU", "qU2", "counts", "U", "U2", "inf", "q_inf")  # the order of TemperingTrace.block_sums

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


def block_offsets(n_rows: int, max_blocks: int) -> np.ndarray:
    """The fixed blocks of work of a run of ``n_rows`` rows (paths, chains): ``min(n_rows, max_blocks)`` consecutive
    blocks as equal as possible, as offsets ``0 = o_0 < o_1 < ... < o_G = n_rows``. They depend on ``n_rows`` only;
    a chunk is a run of whole blocks, and the run's sums are kept per block and added in block order, so the pooled
    record is the same bits for any chunking."""
    n_rows = int(n_rows)
    return np.concatenate([[0], np.cumsum(split(n_rows, min(n_rows, int(max_blocks))))]).astype(int)


def chunk_rows(n_rows: int, n_chunks: int, max_blocks: int) -> list[tuple[int, int]]:
    """The rows ``(start, stop)`` of ``n_chunks`` chunks of whole blocks (:func:`block_offsets`), as equal as
    possible; a clear error when there are fewer blocks than chunks."""
    offsets = block_offsets(n_rows, max_blocks)
    n_blocks = offsets.size - 1
    if not 1 <= int(n_chunks) <= n_blocks:
        raise ValueError(
            f"pmz: cannot split {n_rows} paths or chains into {n_chunks} chunks of whole blocks of work "
            f"(n_chunks <= {n_blocks})"
        )
    ends = np.concatenate([[0], np.cumsum(split(n_blocks, n_chunks))])
    return [(int(offsets[a]), int(offsets[b])) for a, b in zip(ends[:-1], ends[1:])]


def _in_order(op, arrays):
    """``op`` folded over ``arrays`` from the first: the same order however the blocks were grouped."""
    return reduce(op, list(arrays))


def segment_logsumexp(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``log sum exp`` of ``x`` over the segments that begin at the indices ``starts`` (and run to the next)."""
    m = np.maximum.reduceat(x, starts)
    shift = np.where(np.isfinite(m), m, 0.0)
    lengths = np.diff(np.append(starts, x.size))
    with np.errstate(divide="ignore"):
        return np.log(np.add.reduceat(np.exp(x - np.repeat(shift, lengths)), starts)) + shift


def pool_work(record: WorkRecord) -> WorkRecord:
    """``record`` with its pooled ``ess_path`` and ``acceptance`` made from its blocks' sums, in block order
    (``ess = exp(2 log sum w - log sum w^2)``; acceptance = accepted moves / (paths x steps))."""
    lse_w = _in_order(np.logaddexp, record.block_log_sum_w)
    lse_w2 = _in_order(np.logaddexp, record.block_log_sum_w2)
    acceptance = _in_order(np.add, record.block_accept_sum) / (record.n_paths * record.n_steps_per_temp)
    acceptance[0] = acceptance[-1] = np.nan
    return replace(record, ess_path=np.exp(2 * lse_w - lse_w2), acceptance=acceptance)


def pooled_trace_sums(block_sums, block_accept, block_level_accepted, n_samples: int) -> dict:
    """The TemperingTrace fields made from its blocks' sums, each added in block order: the batch sums
    (:data:`TRACE_SUMS`), the acceptance per level and the level acceptance over ``n_samples`` samples."""
    sums = {name: _in_order(np.add, block_sums[i]) for i, name in enumerate(TRACE_SUMS)}
    with np.errstate(invalid="ignore"):
        acceptance = _in_order(np.add, block_accept[0]) / _in_order(np.add, block_accept[1])
    return dict(
        batch_q=sums["q"],
        batch_qU=sums["qU"],
        batch_qU2=sums["qU2"],
        batch_counts=sums["counts"],
        batch_U=sums["U"],
        batch_U2=sums["U2"],
        batch_inf=sums["inf"],
        batch_q_inf=sums["q_inf"],
        acceptance=acceptance,
        level_acceptance=float(np.sum(block_level_accepted)) / max(int(n_samples), 1),
    )


def pool_trace(trace: TemperingTrace) -> TemperingTrace:
    """``trace`` with its batch sums, acceptance and level acceptance made from its blocks' sums
    (:func:`pooled_trace_sums`)."""
    pooled = pooled_trace_sums(
        trace.block_sums, trace.block_accept, trace.block_level_accepted, trace.n_sweeps * trace.n_chains
    )
    return replace(trace, **pooled)


def _concat(arrays):
    return None if any(a is None for a in arrays) else np.concatenate(arrays)


def merge_work(records: list[WorkRecord], *, notes: RunNotes | None = None) -> WorkRecord:
    """One WorkRecord of the paths of ``records`` (runs of disjoint paths over one schedule with one set of frozen
    kernels, in chunk order): weights and blocks joined, the pooled statistics made from the blocks
    (:func:`pool_work`). ``notes``: the run's notes to keep (default the first record's)."""
    first = records[0]
    joined = replace(
        first,
        log_weights=np.concatenate([r.log_weights for r in records]),
        final_x=_concat([r.final_x for r in records]),
        n_logp_evals=sum(r.n_logp_evals for r in records),
        n_grad_evals=sum(r.n_grad_evals for r in records),
        notes=first.notes if notes is None else notes,
        block_log_sum_w=np.concatenate([r.block_log_sum_w for r in records]),
        block_log_sum_w2=np.concatenate([r.block_log_sum_w2 for r in records]),
        block_accept_sum=np.concatenate([r.block_accept_sum for r in records]),
    )
    return pool_work(joined)


def _draws(traces, name):
    """Every sample's ``U`` or level, sweep-major as one run of all chains stores them: ``(n_sweeps, n_chains)``
    raveled, the chunks' chains side by side."""
    values = [getattr(t, name) for t in traces]
    if any(v is None for v in values):
        return None
    return np.concatenate([v.reshape(t.n_sweeps, t.n_chains) for v, t in zip(values, traces)], axis=1).ravel()


def merge_traces(traces: list[TemperingTrace], *, n_traces: int = 5) -> TemperingTrace:
    """One TemperingTrace of the chains of ``traces`` (runs of disjoint chains over one ladder with the same frozen
    ``log_zhat``, sweeps and batches, in chunk order): blocks and samples joined, the batch sums, acceptance and
    level acceptance made from the blocks (:func:`pool_trace`), the level trajectories of the first ``n_traces``
    chains."""
    first = traces[0]
    for t in traces[1:]:
        if t.n_sweeps != first.n_sweeps or t.batch_q.shape != first.batch_q.shape:
            raise ValueError("pmz: tempering chunks must share their sweeps and batches")
        if not np.array_equal(t.log_zhat, first.log_zhat) or not np.array_equal(t.betas, first.betas):
            raise ValueError("pmz: tempering chunks must share the ladder and the frozen log Zhat")
    level_traces = None
    if all(t.level_traces is not None for t in traces):
        level_traces = np.concatenate([t.level_traces for t in traces], axis=1)[:, :n_traces]
    joined = replace(
        first,
        batch_size=_in_order(np.add, [t.batch_size for t in traces]),
        level_traces=level_traces,
        n_chains=int(sum(t.n_chains for t in traces)),
        draws_U=_draws(traces, "draws_U"),
        draws_level=_draws(traces, "draws_level"),
        final_x=_concat([t.final_x for t in traces]),
        final_levels=_concat([t.final_levels for t in traces]),
        final_log_q=_concat([t.final_log_q for t in traces]),
        n_logp_evals=sum(t.n_logp_evals for t in traces),
        n_grad_evals=sum(t.n_grad_evals for t in traces),
        block_sums=np.concatenate([t.block_sums for t in traces], axis=1),
        block_accept=np.concatenate([t.block_accept for t in traces], axis=1),
        block_level_accepted=np.concatenate([t.block_level_accepted for t in traces]),
    )
    return pool_trace(joined)


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
