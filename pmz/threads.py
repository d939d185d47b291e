"""pmz's thread policy: one BLAS thread inside its hot loops unless the user says otherwise.

pmz evaluates whole batches of particles at once, in blocks sized to stay in cache
(:attr:`pmz.model.CompiledModel.block_size`). Each block's matrix products are small, so a second BLAS thread
saves little when a core is free, and when the other cores are busy (another process, a notebook kernel, the
other chain of ``pm.sample``) OpenBLAS's threads spin-wait for each other: on a loaded 2-core machine an AIS run
on a 10-coefficient regression with 1000 observations took 65-229 s with OpenBLAS's default threads and 3-15 s
with one (docs/benchmarks.md, "Thread policy", both stacks). So :func:`pmz.evidence` runs with BLAS limited to
``blas_threads=1`` thread, restoring the process's own setting when it returns.

Override with ``pmz.evidence(..., blas_threads=n)`` (``n`` threads) or ``blas_threads=None`` (leave BLAS
as the process has it, e.g. as set by ``OPENBLAS_NUM_THREADS`` or the user's own ``threadpoolctl`` limits).
"""

from __future__ import annotations

from contextlib import contextmanager
from numbers import Integral

__all__ = ["DEFAULT_BLAS_THREADS", "check_blas_threads", "blas_thread_limit"]

DEFAULT_BLAS_THREADS = 1


def check_blas_threads(value):
    """``None`` or a positive integer; anything else is a clear error."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"pmz: blas_threads must be a positive integer or None (leave BLAS as it is), got {value!r}")
    return int(value)


@contextmanager
def blas_thread_limit(blas_threads=DEFAULT_BLAS_THREADS):
    """Limit BLAS (OpenBLAS, MKL, BLIS) to ``blas_threads`` threads inside the block; ``None``: no change."""
    blas_threads = check_blas_threads(blas_threads)
    if blas_threads is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=blas_threads, user_api="blas"):
        yield
