"""Annealed importance sampling runner (Neal 2001), forward and reverse, recorded as a :class:`WorkRecord`.

Forward: each of ``n_paths`` independent paths starts at an exact draw ``x_0 ~ f0`` and, for ``k = 1..K``,

    log w_f += (b_k - b_{k-1}) U(x_{k-1}),      then (k < K)  x_k ~ T_k^n(x_{k-1}, .)

where ``T_k`` leaves ``f_{b_k}`` invariant and is applied ``n_steps_per_temp`` times. ``E[w_f] = Z1 / Z0``.

Reverse (Habeck 2017 section 3; Burda et al. 2015 "RAISE"): paths start at draws of p1 (the posterior) and
run the same kernels in the reverse order, for ``k = K..1``,

    log w_r -= (b_k - b_{k-1}) U(x),            then (k > 1)  x ~ T_{k-1}^n(x, .)

so that ``E[w_r] = Z0 / Z1`` when the starts are exact draws of p1. The work ``W = -log w`` of both directions
feeds the two-sided estimators (BAR, histogram, bounds). All paths of a chunk move together (one batched
log-density call per kernel step); chunks bound memory. Random streams belong to fixed blocks of
:data:`PATHS_PER_STREAM` paths, not to chunks: a chunk is a whole number of blocks, and every per-path random number
(start draws, momenta, proposals, acceptance) of a block comes from its own stream, so ``chunk_size`` does not change
a seeded result. (Kernels that also draw numbers shared by a whole batch, such as a random site order or raw bits,
take them from one stream shared by all chunks; their results may change with ``chunk_size``.) The runner records;
it never computes log Z (see ``pmz.estimators``).
"""

from __future__ import annotations

import numpy as np

from ..kernels.base import Kernel
from ..model.target import count_evaluations
from ..records import WorkRecord
from ..weights import logsumexp
from ..progress import progress_bar

__all__ = ["run_ais", "PATHS_PER_STREAM", "BlockStreams"]

PATHS_PER_STREAM = 128  # paths per random stream; chunks are whole numbers of such blocks


class BlockStreams:
    """A ``numpy.random.Generator`` look-alike for a batch made of consecutive blocks of paths, each block with
    its own stream: a draw whose first dimension is the batch size is made block by block (block ``j``'s rows from
    ``streams[j]``) and stacked, so a path's random numbers do not depend on which other blocks share its batch.
    Draws of any other shape, and any other attribute, come from ``shared``.

    Parameters
    ----------
    streams : sequence of numpy.random.Generator
    sizes : sequence of int
        Paths in each block.
    shared : numpy.random.Generator, optional
        Default: the first block's stream (a run of one block then uses one stream for everything).
    """

    def __init__(self, streams, sizes, shared=None):
        self.streams = list(streams)
        self.sizes = [int(m) for m in sizes]
        self.n = sum(self.sizes)
        self.shared = self.streams[0] if shared is None else shared

    def _draw(self, method, size, *args, **kwargs):
        shape = () if size is None else tuple(np.atleast_1d(size))
        if not shape or shape[0] != self.n:
            return getattr(self.shared, method)(*args, size=size, **kwargs)
        if len(self.streams) == 1:
            return getattr(self.streams[0], method)(*args, size=size, **kwargs)
        parts = [getattr(g, method)(*args, size=(m, *shape[1:]), **kwargs) for g, m in zip(self.streams, self.sizes)]
        return np.concatenate(parts)

    def standard_normal(self, size=None):
        return self._draw("standard_normal", size)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return self._draw("normal", size, loc, scale)

    def uniform(self, low=0.0, high=1.0, size=None):
        return self._draw("uniform", size, low, high)

    def random(self, size=None):
        return self._draw("random", size)

    def integers(self, low, high=None, size=None):
        return self._draw("integers", size, low, high)

    def choice(self, a, size=None, replace=True, p=None):
        return self._draw("choice", size, a, replace=replace, p=p)

    def chisquare(self, df, size=None):
        return self._draw("chisquare", size, df)

    def __getattr__(self, name):
        return getattr(self.shared, name)


def _blocks(n_paths: int, chunk_size: int | None):
    """``(chunks, block_sizes)``: each chunk a list of block indices; ``chunk_size`` rounded up to whole blocks."""
    sizes = [min(PATHS_PER_STREAM, n_paths - start) for start in range(0, n_paths, PATHS_PER_STREAM)]
    per_chunk = max(1, int(np.ceil(int(chunk_size or min(n_paths, 4096)) / PATHS_PER_STREAM)))
    chunks = [list(range(j, min(j + per_chunk, len(sizes)))) for j in range(0, len(sizes), per_chunk)]
    return chunks, sizes


def run_ais(
    family,
    kernel: Kernel,
    schedule,
    params,
    *,
    n_paths: int,
    n_steps_per_temp: int = 1,
    rng: np.random.Generator,
    chunk_size: int | None = None,
    keep_particles: bool = True,
    progressbar: bool = True,
    tuning: dict | None = None,
    direction: str = "forward",
    starts=None,
    start_info: dict | None = None,
) -> WorkRecord:
    """Run ``n_paths`` AIS paths over ``schedule`` with frozen per-temperature ``params``.

    Parameters
    ----------
    family : TemperedFamily
    kernel : Kernel
    schedule : array (K + 1,)
    params : sequence of KernelParams, length K + 1 (``params[k]`` is used at ``b_k``)
    n_paths : int
    n_steps_per_temp : int
    rng : numpy.random.Generator
        Spawned into one stream per block of :data:`PATHS_PER_STREAM` paths (and, with several blocks, one shared
        stream).
    chunk_size : int, optional
        Paths moved together (default: all, up to 4096), rounded up to a multiple of :data:`PATHS_PER_STREAM`.
        A memory bound: it does not change a seeded result.
    keep_particles : bool
        Keep the final positions (weighted draws from the target) in the record.
    progressbar : bool
    tuning : dict, optional
        Description of how ``params`` were obtained, stored in the record.
    direction : {"forward", "reverse"}
    starts : array (n_paths, dim), optional
        Start states. Required for ``"reverse"`` (draws of p1); forward runs draw exact starts from f0.
    start_info : dict, optional
        How the starts were obtained (e.g. ``{"reverse_start": "nuts"}``), stored in the record's ``tuning``.
    """
    schedule = np.asarray(schedule, dtype=float)
    K = schedule.size - 1
    if len(params) != K + 1:
        raise ValueError(f"need one KernelParams per temperature ({K + 1}), got {len(params)}")
    if direction not in ("forward", "reverse"):
        raise ValueError(f"direction must be 'forward' or 'reverse', got {direction!r}")
    if starts is not None:
        starts = np.asarray(starts, dtype=float)
        if starts.ndim != 2 or starts.shape != (n_paths, family.dim):
            raise ValueError(f"starts must have shape ({n_paths}, {family.dim}), got {starts.shape}")
    elif direction == "reverse":
        raise ValueError("a reverse run needs starts: draws of the target p1 (e.g. posterior draws)")
    # (increment index k, sign, temperature index to move at afterwards or None), in the order they happen
    if direction == "forward":
        steps = [(k, 1.0, k if k < K else None) for k in range(1, K + 1)]
    else:
        steps = [(k, -1.0, k - 1 if k > 1 else None) for k in range(K, 0, -1)]
    chunks, sizes = _blocks(n_paths, chunk_size)
    streams = rng.spawn(len(sizes))
    shared = rng.spawn(1)[0] if len(sizes) > 1 else None  # one block: its stream does everything
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    evals = count_evaluations(family)

    log_w = np.empty(n_paths)
    final_x = np.empty((n_paths, family.dim)) if keep_particles else None
    accept_sum = np.zeros(K + 1)
    # running logsumexp of w and w^2 over all paths at each temperature, for the on-the-fly ESS
    lse_w = np.full(K + 1, -np.inf)
    lse_w2 = np.full(K + 1, -np.inf)
    desc = "AIS" if direction == "forward" else "reverse AIS"
    with progress_bar(total=K * len(chunks), desc=desc, disable=not progressbar) as bar:
        for blocks in chunks:
            start, stop = int(offsets[blocks[0]]), int(offsets[blocks[-1] + 1])
            m = stop - start
            stream = BlockStreams([streams[j] for j in blocks], [sizes[j] for j in blocks], shared)
            if starts is None:
                x0 = np.concatenate([family.sample_start(streams[j], sizes[j]) for j in blocks])
            else:
                x0 = starts[start:stop]
            state = kernel.init_state(family, x0)
            lw = np.zeros(m)
            lse_w[0] = np.logaddexp(lse_w[0], np.log(m))
            lse_w2[0] = np.logaddexp(lse_w2[0], np.log(m))
            for i, (k, sign, move_at) in enumerate(steps, start=1):
                lw = lw + sign * (schedule[k] - schedule[k - 1]) * state.parts.U
                lw = np.where(np.isnan(lw), -np.inf, lw)
                lse_w[i] = np.logaddexp(lse_w[i], logsumexp(lw))
                lse_w2[i] = np.logaddexp(lse_w2[i], logsumexp(2 * lw))
                if move_at is not None:
                    for _ in range(n_steps_per_temp):
                        state, info = kernel.step(stream, state, family, schedule[move_at], params[move_at])
                        accept_sum[move_at] += np.sum(info.acceptance)
                bar.update(1)
            log_w[start:stop] = lw
            if keep_particles:
                final_x[start:stop] = state.x

    acceptance = accept_sum / (n_paths * n_steps_per_temp)
    acceptance[0] = acceptance[K] = np.nan
    return WorkRecord(
        log_weights=log_w,
        schedule=schedule,
        direction=direction,
        log_z0=float(family.log_z0),
        n_steps_per_temp=int(n_steps_per_temp),
        kernel=kernel.name,
        acceptance=acceptance,
        step_size=np.array([p.step_size for p in params]),
        ess_path=np.exp(2 * lse_w - lse_w2),
        final_x=final_x,
        n_logp_evals=evals.n_logp_evals,
        n_grad_evals=evals.n_grad_evals,
        tuning={**(tuning or {}), **(start_info or {})},
        log_sum_w=lse_w,
        log_sum_w2=lse_w2,
    )
