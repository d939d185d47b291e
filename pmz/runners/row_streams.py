"""The random streams of a run's rows (annealing paths, tempering chains), fixed by the seed and the number of rows
alone, so that a row's random numbers do not depend on which other rows share its batch, its chunk or its worker.

The rows ``0 .. n - 1`` of a run fall into fixed blocks of :data:`ROWS_PER_STREAM` consecutive rows, block ``j``
with its own stream (the ``j``-th child of the run's seed), and one more stream, *shared*, serves the draws that are
not one per row (a random site order, say). :class:`RowStreams` holds these seeds (small, picklable: it travels with
a chunk to any worker) and :meth:`RowStreams.generator` gives the ``numpy.random.Generator`` look-alike for the rows
``start .. stop - 1`` of one batch:

* a draw whose first dimension is the batch size is a draw *per row*: each block that the batch touches draws its
  whole block from its own stream (fresh from its seed) and the batch keeps its rows of it. A block cut by a chunk
  boundary is drawn in full by both chunks, each keeping its part: at most two blocks of extra draws per chunk;
* any other draw of a listed method (:attr:`BlockStreams.PER_ROW`) comes from the shared stream, fresh from its seed
  for every batch, so every batch of a run sees the same shared numbers however the rows were grouped (one block: its
  own stream does everything, as before); so do the batch-wide draws :attr:`BlockStreams.SHARED` lists. Any other
  method is refused with an error that says so: a kernel that draws in a new way must say which kind of draw it is.

Hence a run gives the same bits in one batch, in memory chunks (``chunk_size``), in ``n_chunks`` chunks, in this
process or on any executor, provided the kernel's sequence of draws does not depend on the batch size other than
through the first dimension of its per-row draws (true of pmz's HMC, random-walk and site-Gibbs kernels; the
lattice kernels' raw bits are drawn for the whole batch, so those runs are the same bits for one chunking only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ROWS_PER_STREAM", "RowStreams", "BlockStreams"]

ROWS_PER_STREAM = 128  # rows (paths, chains) per random stream


@dataclass(frozen=True)
class RowStreams:
    """The seeds of a run's rows: one per block of :data:`ROWS_PER_STREAM` rows, and the shared one.

    Attributes
    ----------
    blocks : tuple of numpy.random.SeedSequence
        Block ``j`` covers rows ``j * ROWS_PER_STREAM`` up to the next block (the last may be shorter).
    shared : numpy.random.SeedSequence or None
        The stream of draws that are not one per row; None for a run of one block (its stream does everything).
    n_rows : int
    bit_generator : type
        The bit generator of the run's generator (PCG64 unless the user passed another).
    """

    blocks: tuple
    shared: object
    n_rows: int
    bit_generator: type = np.random.PCG64

    @classmethod
    def spawn(cls, rng: np.random.Generator, n_rows: int) -> "RowStreams":
        """The streams of ``n_rows`` rows spawned from ``rng``: its next ``n_blocks`` children for the blocks, then
        (several blocks) one more for the shared stream; what ``rng.spawn`` would give, in the same order."""
        n_rows = int(n_rows)
        n_blocks = max(1, -(-n_rows // ROWS_PER_STREAM))
        seed = rng.bit_generator.seed_seq
        blocks = tuple(seed.spawn(n_blocks))
        shared = seed.spawn(1)[0] if n_blocks > 1 else None
        return cls(blocks, shared, n_rows, type(rng.bit_generator))

    def _generator(self, seed) -> np.random.Generator:
        return np.random.Generator(self.bit_generator(seed))

    def generator(self, start: int = 0, stop: int | None = None) -> "BlockStreams":
        """The generator of the rows ``start .. stop - 1`` (default: all), every stream fresh from its seed."""
        stop = self.n_rows if stop is None else int(stop)
        start = int(start)
        if not 0 <= start < stop <= self.n_rows:
            raise ValueError(f"pmz: rows {start}..{stop} outside the run's {self.n_rows} rows")
        first, last = start // ROWS_PER_STREAM, (stop - 1) // ROWS_PER_STREAM
        streams = [self._generator(self.blocks[j]) for j in range(first, last + 1)]
        shared = streams[0] if self.shared is None else self._generator(self.shared)
        bounds = [(j * ROWS_PER_STREAM, min((j + 1) * ROWS_PER_STREAM, self.n_rows)) for j in range(first, last + 1)]
        return BlockStreams(streams, bounds, start, stop, shared)


class BlockStreams:
    """A ``numpy.random.Generator`` look-alike for the rows ``start .. stop - 1`` of a run whose rows are grouped
    into blocks, each with its own stream (see the module docstring): a draw whose first dimension is the number of
    rows is made block by block, each block drawing all its rows and keeping those in range; draws of any other
    shape, and the batch-wide attributes of :attr:`SHARED`, come from ``shared``; anything else is an error.

    Parameters
    ----------
    streams : sequence of numpy.random.Generator
        One per block the rows touch, in order.
    bounds : sequence of (int, int)
        Each block's rows ``(first, end)`` in the run.
    start, stop : int
        The rows of this batch.
    shared : numpy.random.Generator
    """

    def __init__(self, streams, bounds, start, stop, shared):
        self.streams = list(streams)
        self.bounds = [(int(a), int(b)) for a, b in bounds]
        self.start, self.stop = int(start), int(stop)
        self.n = self.stop - self.start
        self.shared = shared

    def rows(self, draw):
        """``draw(stream, m)`` (m rows from one stream) for every block, each block's rows in range kept and
        stacked: e.g. start states, ``rows(lambda g, m: family.sample_start(g, m))``."""
        parts = []
        for stream, (a, b) in zip(self.streams, self.bounds):
            values = draw(stream, b - a)
            parts.append(values[max(a, self.start) - a : min(b, self.stop) - a])
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _draw(self, method, size, *args, **kwargs):
        shape = () if size is None else tuple(np.atleast_1d(size))
        if not shape or shape[0] != self.n:
            return getattr(self.shared, method)(*args, size=size, **kwargs)
        return self.rows(lambda g, m: getattr(g, method)(*args, size=(m, *shape[1:]), **kwargs))

    #: the draws made block by block when their first dimension is the batch size (from the shared stream otherwise)
    PER_ROW = ("standard_normal", "normal", "uniform", "random", "integers", "choice", "chisquare",
               "standard_exponential")

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

    def standard_exponential(self, size=None):
        return self._draw("standard_exponential", size)

    #: what a batch takes from the shared stream as it is (never per row): a random order of sites or units, and the
    #: raw bits of the lattice kernels (drawn for the whole batch: those runs are the same bits for one chunking only)
    SHARED = ("permutation", "bit_generator")

    def __getattr__(self, name):
        if name in BlockStreams.SHARED:
            return getattr(self.shared, name)
        raise AttributeError(
            f"pmz: BlockStreams has no draw {name!r}: a draw per row must be listed here (made block by block, so "
            f"that the rows' numbers do not depend on the batch), and a batch-wide one in BlockStreams.SHARED; "
            f"listed: {', '.join(sorted(BlockStreams.PER_ROW + BlockStreams.SHARED))}"
        )
