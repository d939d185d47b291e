"""Annealed importance sampling runner (Neal 2001), forward and reverse, recorded as a :class:`WorkRecord`.

Forward: each of ``n_paths`` independent paths starts at an exact draw ``x_0 ~ f0`` and, for ``k = 1..K``,

    log w_f += (b_k - b_{k-1}) U(x_{k-1}),      then (k < K)  x_k ~ T_k^n(x_{k-1}, .)

where ``T_k`` leaves ``f_{b_k}`` invariant and is applied ``n_steps_per_temp`` times. ``E[w_f] = Z1 / Z0``.

Reverse (Habeck 2017 section 3; Burda et al. 2015 "RAISE"): paths start at draws of p1 (the posterior) and
run the same kernels in the reverse order, for ``k = K..1``,

    log w_r -= (b_k - b_{k-1}) U(x),            then (k > 1)  x ~ T_{k-1}^n(x, .)

so that ``E[w_r] = Z0 / Z1`` when the starts are exact draws of p1. The work ``W = -log w`` of both directions
feeds the two-sided estimators (BAR, histogram, bounds). All paths of a batch move together (one batched
log-density call per kernel step); ``chunk_size`` bounds a batch's memory. The random numbers of a path belong to
the path, not to its batch or chunk (:mod:`pmz.runners.row_streams`: fixed blocks of paths, each with its own
stream), so neither ``chunk_size`` nor the chunks of a run split over an executor (``rows=``) change a seeded result.
The runner records;
it never computes log Z (see ``pmz.estimators``).
"""

from __future__ import annotations

import numpy as np

from ..kernels.base import Kernel
from ..model.target import count_evaluations
from ..records import RunNotes, WorkRecord
from ..progress import progress_bar
from .pooling import PATH_BLOCKS, block_offsets, pool_work, segment_logsumexp
from .row_streams import ROWS_PER_STREAM, RowStreams

__all__ = ["run_ais"]


def _batches(start: int, stop: int, chunk_size: int | None, n_paths: int) -> list[tuple[int, int]]:
    """The batches of the rows ``start .. stop - 1`` moved together: ``chunk_size`` paths rounded up to whole
    streams' blocks (default: the run's paths, up to 4096), cut at multiples of that size counted from the run's
    first path, so that every chunk of the run cuts its paths where the whole run would."""
    per_batch = max(1, int(np.ceil(int(chunk_size or min(n_paths, 4096)) / ROWS_PER_STREAM))) * ROWS_PER_STREAM
    edges = [start] + list(range((start // per_batch + 1) * per_batch, stop, per_batch)) + [stop]
    return list(zip(edges[:-1], edges[1:]))


def run_ais(
    family,
    kernel: Kernel,
    schedule,
    params,
    *,
    n_paths: int,
    n_steps_per_temp: int = 1,
    rng: np.random.Generator | None = None,
    streams: RowStreams | None = None,
    rows: tuple[int, int] | None = None,
    chunk_size: int | None = None,
    keep_particles: bool = True,
    progressbar: bool = True,
    notes: RunNotes | None = None,
    direction: str = "forward",
    starts=None,
) -> WorkRecord:
    """Run AIS paths over ``schedule`` with frozen per-temperature ``params``: all ``n_paths`` paths, or the paths
    ``rows`` of a run of ``n_paths`` (one chunk of it).

    Parameters
    ----------
    family : TemperedFamily
    kernel : Kernel
    schedule : array (K + 1,)
    params : sequence of KernelParams, length K + 1 (``params[k]`` is used at ``b_k``)
    n_paths : int
        Paths of the whole run.
    n_steps_per_temp : int
    rng : numpy.random.Generator, optional
        The run's stream: the paths' streams are :meth:`RowStreams.spawn(rng, n_paths)
        <pmz.runners.row_streams.RowStreams.spawn>`. Give ``rng`` or ``streams``.
    streams : RowStreams, optional
        The run's row streams (a chunk of a run gets those of the whole run).
    rows : (int, int), optional
        The paths ``start .. stop - 1`` to run (default: all); the record holds those paths only.
    chunk_size : int, optional
        Paths moved together (default: all, up to 4096), rounded up to a multiple of
        :data:`~pmz.runners.row_streams.ROWS_PER_STREAM`. A memory bound: it does not change a seeded result.
    keep_particles : bool
        Keep the final positions (weighted draws from the target) in the record.
    progressbar : bool
    notes : RunNotes, optional
        How ``params`` and the schedule were chosen and where the paths start, stored in the record.
    direction : {"forward", "reverse"}
    starts : array (stop - start, dim), optional
        Start states of the paths run. Required for ``"reverse"`` (draws of p1); forward runs draw exact starts
        from f0.
    """
    schedule = np.asarray(schedule, dtype=float)
    K = schedule.size - 1
    if len(params) != K + 1:
        raise ValueError(f"need one KernelParams per temperature ({K + 1}), got {len(params)}")
    if direction not in ("forward", "reverse"):
        raise ValueError(f"direction must be 'forward' or 'reverse', got {direction!r}")
    if (rng is None) == (streams is None):
        raise ValueError("pmz: run_ais needs rng= (the run's stream) or streams= (its row streams), not both")
    streams = RowStreams.spawn(rng, n_paths) if streams is None else streams
    first, stop = (0, int(n_paths)) if rows is None else (int(rows[0]), int(rows[1]))
    m_paths = stop - first
    if starts is not None:
        starts = np.asarray(starts, dtype=float)
        if starts.ndim != 2 or starts.shape != (m_paths, family.dim):
            raise ValueError(f"starts must have shape ({m_paths}, {family.dim}), got {starts.shape}")
    elif direction == "reverse":
        raise ValueError("a reverse run needs starts: draws of the target p1 (e.g. posterior draws)")
    # (increment index k, sign, temperature index to move at afterwards or None), in the order they happen
    if direction == "forward":
        steps = [(k, 1.0, k if k < K else None) for k in range(1, K + 1)]
    else:
        steps = [(k, -1.0, k - 1 if k > 1 else None) for k in range(K, 0, -1)]
    offsets = block_offsets(n_paths, PATH_BLOCKS)
    if first not in offsets or stop not in offsets:
        raise ValueError(f"pmz: rows {first}..{stop} are not whole blocks of work of a run of {n_paths} paths")
    offsets = offsets[(offsets >= first) & (offsets <= stop)]  # this run's blocks
    batches = _batches(first, stop, chunk_size, n_paths)
    evals = count_evaluations(family)

    log_w = np.empty(m_paths)
    final_x = np.empty((m_paths, family.dim)) if keep_particles else None
    n_blocks = offsets.size - 1
    # per block of work: running logsumexp of w and w^2 at each temperature (the on-the-fly ESS) and the summed
    # acceptance, kept per block so that the pooled values do not depend on how the blocks were grouped
    accept_sum = np.zeros((n_blocks, K + 1))
    lse_w = np.full((n_blocks, K + 1), -np.inf)
    lse_w2 = np.full((n_blocks, K + 1), -np.inf)
    desc = "AIS" if direction == "forward" else "reverse AIS"
    with progress_bar(total=K * len(batches), desc=desc, disable=not progressbar) as bar:
        for start, end in batches:
            m = end - start
            here = slice(start - first, end - first)
            stream = streams.generator(start, end)
            x0 = stream.rows(family.sample_start) if starts is None else starts[here]
            state = kernel.init_state(family, x0)
            # the pieces of blocks in this batch: where each begins (in the batch) and which block it is
            cuts = np.union1d([start], offsets[(offsets > start) & (offsets < end)]) - start
            block = np.searchsorted(offsets, cuts + start, side="right") - 1
            lw = np.zeros(m)
            lse_w[block, 0] = np.logaddexp(lse_w[block, 0], np.log(np.diff(np.append(cuts, m))))
            lse_w2[block, 0] = lse_w[block, 0]
            for i, (k, sign, move_at) in enumerate(steps, start=1):
                lw = lw + sign * (schedule[k] - schedule[k - 1]) * state.parts.U
                lw = np.where(np.isnan(lw), -np.inf, lw)
                lse_w[block, i] = np.logaddexp(lse_w[block, i], segment_logsumexp(lw, cuts))
                lse_w2[block, i] = np.logaddexp(lse_w2[block, i], segment_logsumexp(2 * lw, cuts))
                if move_at is not None:
                    for _ in range(n_steps_per_temp):
                        state, info = kernel.step(stream, state, family, schedule[move_at], params[move_at])
                        accept_sum[block, move_at] += np.add.reduceat(np.asarray(info.acceptance, float), cuts)
                bar.update(1)
            log_w[here] = lw
            if keep_particles:
                final_x[here] = state.x

    record = WorkRecord(
        log_weights=log_w,
        schedule=schedule,
        direction=direction,
        log_z0=float(family.log_z0),
        n_steps_per_temp=int(n_steps_per_temp),
        kernel=kernel.name,
        step_size=np.array([p.step_size for p in params]),
        final_x=final_x,
        n_logp_evals=evals.n_logp_evals,
        n_grad_evals=evals.n_grad_evals,
        notes=RunNotes() if notes is None else notes,
        block_log_sum_w=lse_w,
        block_log_sum_w2=lse_w2,
        block_accept_sum=accept_sum,
    )
    return pool_work(record)
