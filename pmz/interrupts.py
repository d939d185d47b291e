"""What counts as Ctrl-C: a ``KeyboardInterrupt``, also when a compiled model function wrapped it.

Ctrl-C raises ``KeyboardInterrupt`` at the next Python bytecode. When that bytecode runs inside a call of a
Numba-compiled PyTensor function (PyTensor 3's backend), the function returns with the exception pending and Python
raises ``SystemError: CPUDispatcher(<function numba_funcified_fgraph ...>) returned a result with an exception set``
instead, with the ``KeyboardInterrupt`` as its cause. Every place in pmz that keeps finished work on Ctrl-C, or says
what was interrupted, asks :func:`is_interrupt` rather than catching ``KeyboardInterrupt`` alone, and turns the
wrapped form back into a ``KeyboardInterrupt`` (:func:`as_interrupt`, :func:`interrupts_as_keyboard`), so that the
user sees pmz's interrupt message, never the ``SystemError``.
"""

from __future__ import annotations

import contextlib

__all__ = ["is_interrupt", "as_interrupt", "interrupts_as_keyboard"]

_MAX_CHAIN = 8  # links of __cause__ / __context__ followed (a chain is short; a loop in it must not hang)


def is_interrupt(err: BaseException) -> bool:
    """Whether ``err`` is Ctrl-C: a ``KeyboardInterrupt``, or a ``SystemError`` whose cause or context (followed a
    few links back) is one -- the form a ``KeyboardInterrupt`` takes when it arrives inside a compiled function."""
    if isinstance(err, KeyboardInterrupt):
        return True
    if not isinstance(err, SystemError):
        return False
    seen, link = 0, err
    while link is not None and seen < _MAX_CHAIN:
        link = link.__cause__ or link.__context__
        seen += 1
        if isinstance(link, KeyboardInterrupt):
            return True
    return False


def as_interrupt(err: BaseException, message: str = "") -> KeyboardInterrupt:
    """``err`` as a ``KeyboardInterrupt``: itself if it is one, else a new one saying ``message`` (default: that
    Ctrl-C arrived inside a compiled model function), caused by ``err``. Raise it with ``raise ... from err``."""
    if isinstance(err, KeyboardInterrupt):
        return err
    return KeyboardInterrupt(message or "pmz: interrupted (Ctrl-C) inside a compiled model function")


@contextlib.contextmanager
def interrupts_as_keyboard(message: str = ""):
    """Run the block; Ctrl-C that surfaces as a ``SystemError`` (:func:`is_interrupt`) leaves it as a
    ``KeyboardInterrupt`` (with ``message``), so that the ``except KeyboardInterrupt`` of a caller (a chunk runner
    keeping its finished chunks, ``pm.sample``'s interrupt handling) sees it. Anything else passes unchanged."""
    try:
        yield
    except SystemError as err:
        if not is_interrupt(err):
            raise
        raise as_interrupt(err, message) from err
