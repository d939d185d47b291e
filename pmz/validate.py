"""Checks of argument values, written once: each takes the argument's name and value, returns the value (an int
for integers) or raises a ValueError that names the argument and what it must be. Used by pmz.evidence's option sets
(:mod:`pmz.methods.options`), the runners and the step methods, so that one rule has one message everywhere.
Option sets (pmz.evidence's and pmz.boltzmann.learn's) are frozen dataclasses declared with :func:`option` on
:class:`CheckedOptions`, which runs each field's check once, on construction.

>>> positive_int("n_paths", 64)
64
>>> fraction(closed_right=False)("cess_target", 1.0)
Traceback (most recent call last):
...
ValueError: pmz: cess_target must be a number in (0, 1), got 1.0
"""

from __future__ import annotations

import dataclasses
from dataclasses import field, fields
from numbers import Integral, Real

__all__ = [
    "positive_int",
    "non_negative_int",
    "at_least_two",
    "optional_int",
    "fraction",
    "interval",
    "positive_number",
    "optional",
    "one_of",
    "boolean",
    "anything",
    "option",
    "CheckedOptions",
    "option_values",
]


# --------------------------------------------------------------------------


def _is_int(value) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def positive_int(name, value):
    if not _is_int(value) or value < 1:
        raise ValueError(f"pmz: {name} must be a positive integer, got {value!r}")
    return int(value)


def non_negative_int(name, value):
    if not _is_int(value) or value < 0:
        raise ValueError(f"pmz: {name} must be a non-negative integer, got {value!r}")
    return int(value)


def at_least_two(why):
    def check(name, value):
        value = positive_int(name, value)
        if value < 2:
            raise ValueError(f"pmz: {name} must be at least 2{why}, got {value}")
        return value

    return check


def optional_int(low):
    def check(name, value):
        if value is not None and (not _is_int(value) or value < low):
            kind = "a positive integer" if low == 1 else f"an integer >= {low}"
            raise ValueError(f"pmz: {name} must be {kind} or None, got {value!r}")
        return value if value is None else int(value)

    return check


def fraction(closed_right: bool):
    """A number in (0, 1] (``closed_right``) or (0, 1)."""

    def check(name, value):
        inside = _is_number(value) and 0 < value and (value <= 1 if closed_right else value < 1)
        if not inside:
            interval = "a number in (0, 1]" if closed_right else "a number in (0, 1)"
            raise ValueError(f"pmz: {name} must be {interval}, got {value!r}")
        return value

    return check


def interval(low: float, high: float, *, closed_low: bool = True, closed_high: bool = False):
    """A number in ``[low, high)`` (or with the ends open/closed as given; ``high=inf`` for no upper end).

    >>> interval(0.0, 1.0)("momentum", 0.9)
    0.9
    """

    def check(name, value):
        inside = (
            _is_number(value)
            and (low <= value if closed_low else low < value)
            and (value <= high if closed_high else value < high)
        )
        if not inside:
            left, right = "[" if closed_low else "(", "]" if closed_high else ")"
            raise ValueError(f"pmz: {name} must be a number in {left}{low}, {high}{right}, got {value!r}")
        return value

    return check


def positive_number(name, value):
    if not _is_number(value) or not value > 0:
        raise ValueError(f"pmz: {name} must be a positive number, got {value!r}")
    return value


def optional(check):
    def checked(name, value):
        return value if value is None else check(name, value)

    return checked


def one_of(*choices, other=None, message=None):
    """One of the strings ``choices``; anything that is not a string is passed to ``other`` (None: allowed).
    ``message``: the error for an unknown string, formatted with ``name`` and ``value``."""

    def check(name, value):
        if isinstance(value, str):
            if value not in choices:
                if message is not None:
                    raise ValueError(message.format(name=name, value=value))
                extra = f" or {other.__doc__}" if other is not None and other.__doc__ else ""
                raise ValueError(f"pmz: {name} must be one of {list(choices)}{extra}, got {value!r}")
            return value
        return value if other is None else other(name, value)

    return check


def boolean(name, value):
    if not isinstance(value, bool):
        raise ValueError(f"pmz: {name} must be True or False, got {value!r}")
    return value


def anything(name, value):
    return value


# --------------------------------------------------------------------------
# option sets: documented, checked fields
# --------------------------------------------------------------------------


def option(default, doc: str, check=anything):
    """A documented, checked option field (keyword-only, with ``default``)."""
    return field(default=default, metadata={"doc": doc, "check": check})


class CheckedOptions:
    """Base of a frozen option dataclass: runs every field's check once, on construction (``__post_init__``), and
    stores the normalised value."""

    def __post_init__(self):
        for f in fields(self):
            value = f.metadata["check"](f.name, getattr(self, f.name))
            object.__setattr__(self, f.name, value)
        self._check_together()

    def _check_together(self):
        """Checks that involve several fields (none by default)."""

    def replace(self, **changes):
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)


def option_values(options) -> dict:
    """``{name: value}`` of an option set, values as they are (not deep-copied like ``dataclasses.asdict``)."""
    return {f.name: getattr(options, f.name) for f in fields(options)}
