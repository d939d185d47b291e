"""Ranges of values, for the proofs read from a model's graph (:mod:`pmz.model.concavity_proof`).

A range is ``(lo, hi, lo_open, hi_open)``: every value ``v`` of the variable, at every value of the model's free
variables, satisfies ``lo <= v <= hi``, strictly where the end is open. Finite values have the range ``(-inf, inf)``
open at both ends; the constant ``-inf`` (a log density's "impossible") is ``[-inf, -inf]``. Interval arithmetic
carries ranges through the elementwise ops, so that a proof can decide a comparison that PyMC's log densities make
(``exp(eta) == 0`` is false for every ``eta``; ``0 <= sigmoid(eta) <= 1`` holds) without any value of the latents.
Where an op is not known here, its range is every real value and nothing is decided.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Range", "REALS", "point", "from_values"]

_INF = math.inf


@dataclass(frozen=True)
class Range:
    """``lo <= v <= hi``, strict where open."""

    lo: float = -_INF
    hi: float = _INF
    lo_open: bool = True
    hi_open: bool = True

    def positive(self) -> bool:
        """Every value is > 0."""
        return self.lo > 0 or (self.lo == 0 and self.lo_open)

    def nonnegative(self) -> bool:
        return self.lo >= 0

    def negative(self) -> bool:
        return self.hi < 0 or (self.hi == 0 and self.hi_open)

    def nonpositive(self) -> bool:
        return self.hi <= 0

    def below(self, other: Range) -> bool:
        """Every value of ``self`` is < every value of ``other``."""
        return self.hi < other.lo or (self.hi == other.lo and (self.hi_open or other.lo_open))

    def at_most(self, other: Range) -> bool:
        """Every value of ``self`` is <= every value of ``other``."""
        return self.hi <= other.lo

    def disjoint(self, other: Range) -> bool:
        return self.below(other) or other.below(self)

    def is_point(self, value: float) -> bool:
        return self.lo == self.hi == value and not (self.lo_open or self.hi_open)

    # ---------------------------------------------------------------- arithmetic
    def __neg__(self) -> Range:
        return Range(-self.hi, -self.lo, self.hi_open, self.lo_open)

    def __add__(self, other: Range) -> Range:
        lo, hi = _sum(self.lo, other.lo, -_INF), _sum(self.hi, other.hi, _INF)
        return Range(lo, hi, self.lo_open or other.lo_open, self.hi_open or other.hi_open)

    def __mul__(self, other: Range) -> Range:
        corners = [(_product(a, b), (ao or bo) and not _closed_zero(a, ao) and not _closed_zero(b, bo))
                   for a, ao in ((self.lo, self.lo_open), (self.hi, self.hi_open))
                   for b, bo in ((other.lo, other.lo_open), (other.hi, other.hi_open))]
        if any(math.isnan(c) for c, _ in corners):
            return REALS
        lo, hi = min(c for c, _ in corners), max(c for c, _ in corners)
        return Range(lo, hi, all(o for c, o in corners if c == lo), all(o for c, o in corners if c == hi))

    def reciprocal(self) -> Range:
        """``1 / v`` where the range excludes 0; every real value otherwise."""
        if self.negative():
            return -(-self).reciprocal()
        if not self.positive():
            return REALS
        lo = 0.0 if self.hi == _INF else 1.0 / self.hi
        hi = _INF if self.lo == 0 else 1.0 / self.lo
        return Range(lo, hi, self.hi_open or self.hi == _INF, self.lo_open or self.lo == 0)

    def monotone(self, fn, lo_limit=None, hi_limit=None) -> Range:
        """The range of an increasing ``fn``, with its limits at the ends where they are infinite."""
        lo = _apply(fn, self.lo, lo_limit)
        hi = _apply(fn, self.hi, hi_limit)
        return Range(lo, hi, self.lo_open, self.hi_open)

    def hull(self, other: Range) -> Range:
        lo_open = self.lo_open if self.lo < other.lo else other.lo_open if other.lo < self.lo else (
            self.lo_open and other.lo_open)
        hi_open = self.hi_open if self.hi > other.hi else other.hi_open if other.hi > self.hi else (
            self.hi_open and other.hi_open)
        return Range(min(self.lo, other.lo), max(self.hi, other.hi), lo_open, hi_open)


REALS = Range()
BOOLEANS = Range(0.0, 1.0, False, False)


def point(value: float) -> Range:
    return Range(float(value), float(value), False, False)


def from_values(values) -> Range:
    """The range of an array of constants (every real value where it holds a NaN or is empty)."""
    import numpy as np

    values = np.asarray(values, dtype=float)
    if values.size == 0 or np.isnan(values).any():
        return REALS
    return Range(float(values.min()), float(values.max()), False, False)


def _closed_zero(end, is_open) -> bool:
    return end == 0 and not is_open


def _sum(a, b, undecided):
    """``a + b``; ``undecided`` where it is ``inf - inf``."""
    if math.isinf(a) and math.isinf(b) and a != b:
        return undecided
    return a + b


def _product(a, b):
    if a == 0 or b == 0:
        return 0.0
    return a * b


def _apply(fn, x, limit):
    if math.isinf(x) and limit is not None:
        return limit(x)
    try:
        return float(fn(x))
    except (OverflowError, ValueError):
        return limit(x) if limit is not None else (_INF if x > 0 else -_INF)
