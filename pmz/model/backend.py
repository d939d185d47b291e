"""Which PyTensor backend pmz compiles its batched log densities with, and what compiling costs.

PyMC 5 (PyTensor 2) compiles to C by default; PyMC 6 (PyTensor 3) to Numba. pmz follows each stack's default,
because that is what measured fastest for batched log density + gradient (docs/benchmarks.md, "Compile time and
per-particle cost by backend"):

* **Numba** (PyTensor 3's default): ``Blockwise`` nodes (batched triangular solves, batched integer indexing
  of discrete variables) are compiled into loops, so no pmz rewrite is needed, and every op is fused into one
  machine-code function. 3-5x cheaper per particle than the C backend on the benchmark models.
* **C** (``"FAST_RUN"`` / ``"CVM"``, PyTensor 2's default): ``Blockwise`` nodes fall back to a Python loop
  per batch entry, so pmz swaps them at compile time for NumPy ops that act on the whole batch
  (:mod:`pmz.model.linalg`, :mod:`pmz.model.indexing`). These rewrites are for the C backend only: under Numba
  they would drop back to Python object mode.

``compile_mode=`` (an option of :func:`pmz.evidence` and the step methods) overrides the choice: any PyTensor
mode name (``"NUMBA"``, ``"CVM"``, ``"FAST_RUN"``, ``"FAST_COMPILE"``, ``"JAX"`` with jax installed) or a
``pytensor.compile.mode.Mode``.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import pytensor
from pytensor.compile.mode import Mode, get_mode

from .linalg import REWRITE_TAG

__all__ = ["PYTENSOR_MAJOR", "resolve_mode", "backend_name", "CompileClock"]

PYTENSOR_MAJOR = int(pytensor.__version__.split(".")[0])

def _is_c_backend(mode: Mode) -> bool:
    """True for PyTensor's C linkers (where Blockwise nodes loop in Python and pmz's rewrites help)."""
    linker = mode.linker
    name = type(linker).__name__.lower()
    if "numba" in name or "jax" in name or "pytorch" in name or "mlx" in name:
        return False
    if hasattr(linker, "c_thunks"):  # the VM linkers: C thunks unless built without them (FAST_COMPILE)
        return bool(linker.c_thunks)
    return "c" in name  # CLinker, OpWiseCLinker, DualLinker


def resolve_mode(compile_mode=None) -> Mode:
    """The PyTensor mode pmz compiles with: the stack's default backend unless ``compile_mode`` names another.

    On the C backend pmz's batched rewrites (``REWRITE_TAG``) are included; on any other backend they are not.
    """
    if compile_mode is not None and not isinstance(compile_mode, str | Mode):
        raise TypeError(f"pmz: compile_mode must be a PyTensor mode name or Mode, got {compile_mode!r}")
    try:
        mode = get_mode(compile_mode)
    except Exception as err:  # pytensor raises a bare Exception/ValueError for unknown names
        raise ValueError(
            f"pmz: unknown compile_mode {compile_mode!r}; use e.g. 'NUMBA', 'CVM', 'FAST_RUN' or 'FAST_COMPILE'"
        ) from err
    return mode.including(REWRITE_TAG) if _is_c_backend(mode) else mode


def backend_name(mode: Mode) -> str:
    """Short name of a mode's linker for the result attrs: ``"numba"``, ``"c"``, ``"jax"``, ``"py"``, ..."""
    linker = type(mode.linker).__name__.lower()
    for name in ("numba", "jax", "pytorch", "mlx"):
        if name in linker:
            return name
    return "c" if _is_c_backend(mode) else "py"


class CompileClock:
    """Seconds spent compiling, summed over a compiled model's functions (reported as ``compile_time``).

    PyTensor compiles lazily: building the function object lowers the graph; with the Numba backend the
    machine code is generated at the first call. Both are counted: :meth:`timed` wraps the build, and the first
    call of each function is timed by :meth:`first_call`.
    """

    def __init__(self):
        self.seconds = 0.0

    @contextmanager
    def timed(self):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds += time.perf_counter() - t0

    def first_call(self, fn):
        """Wrap compiled ``fn`` so that its first call (JIT compilation included) is added to the clock."""
        return _ClockedFunction(fn, self)


class _ClockedFunction:
    """A compiled PyTensor function whose first call is timed; every other attribute is the function's own."""

    def __init__(self, fn, clock: CompileClock):
        self.fn = fn
        self._clock = clock
        self._first = True

    def __call__(self, *args, **kwargs):
        if self._first:
            self._first = False
            with self._clock.timed():
                return self.fn(*args, **kwargs)
        return self.fn(*args, **kwargs)

    def __getattr__(self, name):  # .maker, .trust_input, ...
        if name.startswith("__") or name in ("fn", "_clock", "_first"):
            raise AttributeError(name)
        return getattr(self.fn, name)
