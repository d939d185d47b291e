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

PyTensor work (building graphs, compiling them, ``pm.sample``) runs in one thread at a time per process
(:data:`PYTENSOR_LOCK`): PyTensor switches process-wide flags while it works. Its ``infer_static_shape`` (called
whenever a graph gets an ``Alloc`` or a random variable with a symbolic shape) folds the shape under
``config.change_flags(cxx="")``, so a function compiled in another thread at that moment gets Python thunks for
some nodes instead of C ones: other bits (bridge sampling's ``pm.sample`` chains on a 2-thread pool: log Z
-27.767253723 instead of -27.767253724). Two threads inside it at once restore each other's ``""``, and C stays
off for the rest of the process (every later compile in Python, silently; 2 of 3 runs of two threads building
300 such graphs each).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from numbers import Integral

__all__ = ["DEFAULT_BLAS_THREADS", "PYTENSOR_LOCK", "check_blas_threads", "blas_thread_limit"]

DEFAULT_BLAS_THREADS = 1

PYTENSOR_LOCK = threading.RLock()  # one thread at a time builds, compiles or samples PyTensor graphs in a process


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
