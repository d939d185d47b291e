"""Which PyTensor backend pmz compiles its batched log densities with, and what compiling costs.

PyMC 6 (PyTensor 3) compiles to Numba by default, PyMC 5 (PyTensor 2) to C. pmz follows each stack's default
(measurements in docs/benchmarks.md, "Both stacks" and "Blockwise nodes"):

* **Numba** (PyTensor 3): 3-6x cheaper per particle than the C backend for log density + gradient on the
  benchmark models, with a first call in a later session as fast as C's (0.2-0.8 s of compilation on a warm
  disk cache; a machine's first-ever compilation costs more, 6-21 s). ``Blockwise`` nodes (batched triangular
  solves, discrete variables used as indices) are compiled into loops by Numba itself, which measured faster
  than pmz's NumPy rewrites below, so those are not applied.
* **C** (PyTensor 2, ``"CVM"``): ``Blockwise`` nodes fall back to a Python loop per batch entry, so pmz swaps
  them at compile time for NumPy ops over the whole batch (:mod:`pmz.model.linalg`, :mod:`pmz.model.indexing`).
  On PyTensor 2 Numba is also 2.5-4x cheaper per particle, but pmz keeps C there: it is what PyMC 5 compiles its
  own functions with (one disk cache), its first-ever compilation is 1.2-2.6x faster, and PyTensor 2's Numba
  took 140 s (C: 6 s) to compile an LKJ model the first time. Long runs on PyMC 5 gain from
  ``compile_mode="NUMBA"``.

Numba compiles pmz's functions without ``fastmath``: with it, a function JIT-compiled afresh and the same function
loaded from PyTensor's disk cache differed in the 8th digit, so the same seed gave different bits in a process
that compiled and in one that loaded (``pm.sample(cores=2)``), on a machine's first run.

On PyMC 5 installed from pip, PyTensor finds no BLAS to link its C code against and warns in five lines ("could not
link to a BLAS installation ... severely degraded"). Its C code then calls NumPy's own BLAS through NumPy's C API,
so pmz compiles with that warning silenced (:func:`quiet_blas_link_warning`); what it would advise, Numba, is
``compile_mode="NUMBA"`` above.

``compile_mode=`` (an option of :func:`pmz.evidence` and the step methods) overrides the choice: any PyTensor
mode name (``"NUMBA"``, ``"CVM"``, ``"FAST_RUN"``, ``"FAST_COMPILE"``, ``"JAX"`` with jax installed) or a
``pytensor.compile.mode.Mode``.
"""

from __future__ import annotations

import time
import warnings
from contextlib import contextmanager, nullcontext

import pytensor
from pytensor.compile.mode import Mode, get_mode

from .linalg import REWRITE_TAG

__all__ = [
    "PYTENSOR_MAJOR",
    "ONE_SHOT_MODE",
    "UNREWRITTEN_MODE",
    "resolve_mode",
    "backend_name",
    "compile_flags",
    "CompileClock",
    "quiet_blas_link_warning",
]

PYTENSOR_MAJOR = int(pytensor.__version__.split(".")[0])

# functions called once or twice per run (value transforms for results and user draws): PyTensor's Python linker
# compiles them in a fraction of a second; a JIT backend can take seconds for no gain
ONE_SHOT_MODE = "FAST_COMPILE"
# graphs evaluated a few times where even FAST_COMPILE's rewrites cost more than the calls (0.5-1.5 s for a
# mixture's branch densities): PyTensor's Python implementations of the ops as written, nothing rewritten
UNREWRITTEN_MODE = Mode(linker="py", optimizer=None)

_JIT_BACKENDS = ("numba", "jax", "pytorch", "mlx")  # linkers that compile whole graphs themselves


def _jit_backend(mode: Mode) -> str | None:
    """``"numba"``, ``"jax"``, ... when the mode's linker is one of the JIT backends, else None."""
    name = type(mode.linker).__name__.lower()
    return next((backend for backend in _JIT_BACKENDS if backend in name), None)


def _is_c_backend(mode: Mode) -> bool:
    """True for PyTensor's C linkers (where Blockwise nodes loop in Python and pmz's rewrites help)."""
    if _jit_backend(mode) is not None:
        return False
    linker = mode.linker
    name = type(linker).__name__.lower()
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


@contextmanager
def quiet_blas_link_warning():
    """Compile without PyTensor 2's warning that it could not link to a BLAS library (see the module docstring)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS", category=UserWarning)
        yield


def backend_name(mode: Mode) -> str:
    """Short name of a mode's linker for the result attrs: ``"numba"``, ``"c"``, ``"jax"``, ``"py"``, ..."""
    return _jit_backend(mode) or ("c" if _is_c_backend(mode) else "py")


def compile_flags():
    """PyTensor flags pmz compiles under: Numba without fastmath (same bits whether compiled or loaded from cache)."""
    if hasattr(pytensor.config, "numba__fastmath"):
        return pytensor.config.change_flags(numba__fastmath=False)
    return nullcontext()


class CompileClock:
    """Seconds spent compiling, summed over a compiled model's functions (reported as ``compile_time``).

    PyTensor compiles lazily: building the function object lowers the graph; with the Numba backend the
    machine code is generated at the first call. Both are counted: :meth:`timed` wraps the build, and the first
    call of each function is timed by :meth:`first_call`.
    """

    #: seconds spent compiling by every clock of this process (the test suite reports it: tests/conftest.py)
    process_seconds = 0.0

    def __init__(self):
        self.seconds = 0.0

    @contextmanager
    def timed(self):
        """Clock the block; compile in it with pmz's backend flags (:func:`compile_flags`)."""
        t0 = time.perf_counter()
        try:
            with compile_flags():
                yield
        finally:
            elapsed = time.perf_counter() - t0
            self.seconds += elapsed
            CompileClock.process_seconds += elapsed

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
