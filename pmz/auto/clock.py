"""Time in the default: the ``max_time`` budget, deadlines that cross processes, and the labelled timeline.

A deadline crosses processes as a wall-clock time (``time.time()``): each group of chains or SMC runs turns it into
its own ``time.perf_counter()`` deadline when it starts (:func:`local_deadline`), so a budget holds for chunks
that run one after the other here and for chunks that run at once on other machines.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["Clock", "SAMPLING_SHARE", "local_deadline", "wall_until"]

SAMPLING_SHARE = 0.85  # of max_time, for the posterior chains (the rest for the bridge and the estimates)


def local_deadline(until):
    """A ``time.perf_counter()`` deadline from a wall-clock one (``time.time()``), or None."""
    return None if until is None else time.perf_counter() + (until - time.time())


def wall_until(deadline):
    """The wall-clock time (``time.time()``) of a ``time.perf_counter()`` deadline, or None."""
    return None if deadline is None else time.time() + (deadline - time.perf_counter())


class Clock:
    """Seconds since the start, the deadline for ``max_time`` and a labelled timeline.

    ``deadline``: the whole budget (routes that run after the chains stop there); ``sampling_deadline``: the
    chains' share of it, :data:`SAMPLING_SHARE` (the bridge and the estimates after them take time too).
    """

    def __init__(self, max_time):
        self.t0 = time.perf_counter()
        self.deadline = None if max_time is None else self.t0 + float(max_time)
        self.sampling_deadline = None if max_time is None else self.t0 + SAMPLING_SHARE * float(max_time)
        self.timeline = []

    def mark(self, label):
        self.timeline.append((label, round(time.perf_counter() - self.t0, 3)))

    def wall_deadline(self):
        """The ``max_time`` deadline as a wall-clock time (``time.time()``: the same on every worker), or None."""
        return wall_until(self.deadline)

    def left(self) -> float:
        """Seconds left to start more work (the chains' share of ``max_time``)."""
        return np.inf if self.sampling_deadline is None else self.sampling_deadline - time.perf_counter()

    def past_deadline(self) -> bool:
        """Whether the whole budget is spent (a route that loops stops there)."""
        return self.deadline is not None and time.perf_counter() > self.deadline
