"""The curvature calculus of the concavity proof (:mod:`pmz.model.concavity_proof`): what is known of a variable
of a log-density graph (its curvature in the latents, its range of values, whether its logarithm is concave or
convex), and how each elementwise operation combines what is known of its inputs. The rules are those of
disciplined convex programming (Grant, Boyd & Ye 2006) with the log-concave atoms a likelihood of a linear
predictor needs; the module docstring of :mod:`pmz.model.concavity_proof` lists them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pytensor import scalar as ps

from .intervals import BOOLEANS, REALS, Range, point

CONST, AFFINE, CONCAVE, CONVEX, UNKNOWN = "constant", "affine", "concave", "convex", "unknown"
_CONCAVE_KINDS = (CONST, AFFINE, CONCAVE)
_CONVEX_KINDS = (CONST, AFFINE, CONVEX)
_NONNEG = Range(0.0, np.inf, False, True)
_POSITIVE = Range(0.0, np.inf, True, True)


@dataclass(frozen=True)
class Curve:
    """What is known of a variable: its curvature in the latents (``kind``), its range, and whether it is positive
    with a concave (``log_concave``) or convex (``log_convex``) logarithm, or ``1 - v`` (``one_minus_log_concave``)
    or ``1 + v`` (``one_plus_log_concave``) is; ``square_convex``: ``v`` is a constant of either sign times a positive
    log-convex term (``(y - mu) / exp(eta)``), so that ``v ** 2`` is convex. ``why``: the op where the curvature was
    lost (kind unknown)."""

    kind: str
    range: Range = REALS
    log_concave: bool = False
    log_convex: bool = False
    one_minus_log_concave: bool = False
    one_plus_log_concave: bool = False
    square_convex: bool = False
    why: str = ""



def _const(rng: Range) -> Curve:
    positive = rng.positive()
    return Curve(CONST, rng, log_concave=positive, log_convex=positive,
                 one_minus_log_concave=(-rng + point(1.0)).positive(),
                 one_plus_log_concave=(rng + point(1.0)).positive())


def _unknown(why: str, rng: Range = REALS) -> Curve:
    return Curve(UNKNOWN, rng, why=why)


def _curve(rng: Range, why: str, log_concave=False, log_convex=False) -> Curve:
    """A term of unknown curvature but known logarithm: a log-convex one is ``exp`` of a convex term, so convex."""
    return Curve(CONVEX if log_convex else UNKNOWN, rng, log_concave=log_concave, log_convex=log_convex,
                 why="" if log_convex else why)


def _kind_of(kinds) -> str:
    """The common curvature of a sum or a choice of entries."""
    kinds = set(kinds)
    if UNKNOWN in kinds:
        return UNKNOWN
    if kinds <= {CONST}:
        return CONST
    if kinds <= {CONST, AFFINE}:
        return AFFINE
    if kinds <= set(_CONCAVE_KINDS):
        return CONCAVE
    if kinds <= set(_CONVEX_KINDS):
        return CONVEX
    return UNKNOWN


def _first_why(values, default):
    return next((v.why for v in values if v.kind == UNKNOWN and v.why), default)


def _add(values) -> Curve:
    rng = values[0].range
    for v in values[1:]:
        rng = rng + v.range
    kind = _kind_of(v.kind for v in values)
    if kind == CONST:
        return _const(rng)
    one = [v for v in values if v.kind == CONST and v.range.is_point(1.0)]
    rest = [v for v in values if not (v.kind == CONST and v.range.is_point(1.0))]
    log_concave = (kind in _CONCAVE_KINDS and rng.positive()) or (
        len(one) == 1 and len(rest) == 1 and rest[0].one_plus_log_concave)
    log_convex = rng.positive() and all(v.log_convex for v in values)
    why = _first_why(values, "a sum of a concave and a convex term") if kind == UNKNOWN else ""
    return Curve(kind, rng, log_concave=log_concave, log_convex=log_convex, why=why)


def _neg(v: Curve) -> Curve:
    kind = {CONCAVE: CONVEX, CONVEX: CONCAVE}.get(v.kind, v.kind)
    return Curve(kind, -v.range, one_minus_log_concave=v.one_plus_log_concave,
                 one_plus_log_concave=v.one_minus_log_concave, why=v.why)


def _mul(inputs, values) -> Curve:
    constants = [v for v in values if v.kind == CONST]
    varying = [(inp, v) for inp, v in zip(inputs, values) if v.kind != CONST]
    scale = point(1.0)
    for v in constants:
        scale = scale * v.range
    if not varying:
        return _const(scale)
    rng = scale
    for _, v in varying:
        rng = rng * v.range
    if len(varying) == 1:
        u = varying[0][1]
        if scale.is_point(0.0):
            return _const(point(0.0))
        if u.kind in (AFFINE, UNKNOWN):
            kind = u.kind
        elif scale.nonnegative():
            kind = u.kind
        elif scale.nonpositive():
            kind = CONVEX if u.kind == CONCAVE else CONCAVE
        else:
            kind = UNKNOWN
        why = u.why if u.kind == UNKNOWN else "a product of a curved term with a constant of either sign"
        positive = scale.positive()
        return Curve(kind, rng, log_concave=positive and _is_log_concave(u), log_convex=positive and u.log_convex,
                     square_convex=u.log_convex or u.square_convex, why=why if kind == UNKNOWN else "")
    first_input, first = varying[0]
    if len(varying) == 2 and varying[1][0] is first_input and first.kind == AFFINE:  # x * x
        return Curve(CONVEX if scale.nonnegative() else CONCAVE if scale.nonpositive() else UNKNOWN, rng,
                     why="a product of a square with a constant of either sign")
    positive = scale.positive()
    return _curve(rng, "a product of two terms in the latents",
                  log_concave=positive and all(_is_log_concave(v) for _, v in varying),
                  log_convex=positive and all(v.log_convex for _, v in varying))


def _is_log_concave(v: Curve) -> bool:
    return v.log_concave or (v.kind in _CONCAVE_KINDS and v.range.positive())


def _div(a: Curve, b: Curve) -> Curve:
    if b.kind == CONST:
        inverse = b.range.reciprocal()
        if inverse is REALS and a.kind in (CONST, AFFINE):  # an affine term over a constant of either sign
            return Curve(a.kind, REALS) if a.kind == AFFINE else _const(REALS)
        if inverse is REALS:
            return _unknown("a `true_div` of a curved term by a constant of either sign")
        return _mul([None, None], [a, _const(inverse)])
    rng = a.range * b.range.reciprocal()
    log_concave, log_convex = _is_log_concave(a) and b.log_convex, a.log_convex and _is_log_concave(b)
    if log_concave or log_convex:  # log(a / b) = log a - log b
        return _curve(rng, "a ratio of terms in the latents", log_concave, log_convex)
    if a.kind == CONST and _is_log_concave(b):  # a constant of either sign times the log-convex 1 / b
        return Curve(UNKNOWN, rng, square_convex=True, why="a constant of either sign over a term in the latents")
    return _unknown("the denominator of a `true_div` (a term in the latents)", rng)


def _power(a: Curve, n) -> Curve:
    if n is None:
        return _unknown("`pow` with an exponent that is not a constant")
    even = n > 0 and float(n).is_integer() and int(n) % 2 == 0
    if a.kind == CONST:
        if even or (n >= 0 and a.range.nonnegative()):
            return _const(_POSITIVE if a.range.positive() or a.range.negative() else _NONNEG)
        return _const(REALS)
    if n == 1.0:
        return a
    if even and a.kind == AFFINE:
        return Curve(CONVEX, _NONNEG)
    if even and a.square_convex:  # (c w)^n = c^n w^n, w^n log-convex
        return Curve(CONVEX, _NONNEG)
    log_concave = n >= 0 and _is_log_concave(a)
    log_convex = n >= 0 and a.log_convex
    if 0 <= n <= 1 and a.kind == CONCAVE and a.range.nonnegative():
        return Curve(CONCAVE, _NONNEG, log_concave=log_concave)
    return Curve(UNKNOWN, _POSITIVE if (log_concave or log_convex) else REALS, log_concave=log_concave,
                 log_convex=log_convex, why=f"`pow` with exponent {n:g} of a term in the latents")


def _exp(a: Curve) -> Curve:
    rng = a.range.monotone(np.exp, lambda x: 0.0 if x < 0 else np.inf, lambda x: 0.0 if x < 0 else np.inf)
    rng = Range(rng.lo, rng.hi, rng.lo_open or rng.lo == 0, rng.hi_open)
    if a.kind == CONST:
        return _const(rng)
    kind = CONVEX if a.kind in _CONVEX_KINDS else UNKNOWN
    return Curve(kind, rng, log_concave=a.kind in _CONCAVE_KINDS, log_convex=a.kind in _CONVEX_KINDS,
                 why="" if kind != UNKNOWN else (a.why or "`exp` of a concave term"))


def _log(a: Curve) -> Curve:
    if a.range.positive():
        rng = Range(-np.inf if a.range.lo == 0 else float(np.log(a.range.lo)),
                    np.inf if a.range.hi == np.inf else float(np.log(a.range.hi)),
                    a.range.lo_open or a.range.lo == 0, a.range.hi_open)
    else:
        rng = Range(-np.inf, np.inf if a.range.hi == np.inf else float(np.log(max(a.range.hi, 1e-300))), False,
                    a.range.hi_open)
    if a.kind == CONST:
        return _const(rng)
    concave, convex = _is_log_concave(a), a.log_convex
    kind = AFFINE if concave and convex else CONCAVE if concave else CONVEX if convex else UNKNOWN
    return Curve(kind, rng, why="" if kind != UNKNOWN else "`log` of a term not known to be log-concave")


def _sigmoid(a: Curve) -> Curve:
    rng = a.range.monotone(lambda x: 1.0 / (1.0 + np.exp(-x)), lambda x: 0.0 if x < 0 else 1.0,
                           lambda x: 0.0 if x < 0 else 1.0)
    rng = Range(rng.lo, rng.hi, rng.lo_open or rng.lo == 0, rng.hi_open or rng.hi == 1)
    if a.kind == CONST:
        return _const(rng)
    return Curve(UNKNOWN, rng, log_concave=a.kind in _CONCAVE_KINDS, one_minus_log_concave=a.kind in _CONVEX_KINDS,
                 why="`sigmoid` of a term in the latents")


def _join(values) -> Curve:
    rng = values[0].range
    for v in values[1:]:
        rng = rng.hull(v.range)
    kind = _kind_of(v.kind for v in values)
    if kind == CONST:
        return _const(rng)
    return Curve(kind, rng, log_concave=all(_is_log_concave(v) for v in values),
                 log_convex=all(v.log_convex for v in values),
                 one_minus_log_concave=all(v.one_minus_log_concave for v in values),
                 one_plus_log_concave=all(v.one_plus_log_concave for v in values),
                 why=_first_why(values, "a choice between a concave and a convex term") if kind == UNKNOWN else "")


def _switch(condition: Curve, a: Curve, b: Curve) -> Curve:
    if condition.range.is_point(1.0):
        return a
    if condition.range.is_point(0.0):
        return b
    if condition.kind != CONST:
        return _unknown("the condition of a `switch` (a comparison of the latents)")
    return _join([a, b])


def _comparison(op, values) -> Curve:
    a, b = values[0].range, values[1].range
    decided = None
    if isinstance(op, ps.LT):
        decided = True if a.below(b) else False if b.at_most(a) else None
    elif isinstance(op, ps.GT):
        decided = True if b.below(a) else False if a.at_most(b) else None
    elif isinstance(op, ps.LE):
        decided = True if a.at_most(b) else False if b.below(a) else None
    elif isinstance(op, ps.GE):
        decided = True if b.at_most(a) else False if a.below(b) else None
    elif isinstance(op, ps.EQ):
        decided = False if a.disjoint(b) else True if (a.lo == a.hi == b.lo == b.hi and a.is_point(a.lo)
                                                        and b.is_point(b.lo)) else None
    elif isinstance(op, ps.NEQ):
        decided = True if a.disjoint(b) else None
    if decided is not None:
        return _const(point(1.0 if decided else 0.0))
    if all(v.kind == CONST for v in values):
        return _const(BOOLEANS)
    return _unknown("a comparison of the latents", BOOLEANS)


def _logic(op, values) -> Curve:
    truth = [1.0 if v.range.is_point(1.0) else 0.0 if v.range.is_point(0.0) else None for v in values]
    decided = None
    if isinstance(op, ps.AND):
        decided = 0.0 if 0.0 in truth else 1.0 if all(t == 1.0 for t in truth) else None
    elif isinstance(op, ps.OR):
        decided = 1.0 if 1.0 in truth else 0.0 if all(t == 0.0 for t in truth) else None
    elif truth[0] is not None:  # invert
        decided = 1.0 - truth[0]
    if decided is not None:
        return _const(point(decided))
    if all(v.kind == CONST for v in values):
        return _const(BOOLEANS)
    return _unknown("a comparison of the latents", BOOLEANS)


