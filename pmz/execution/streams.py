"""Random streams from ``random_seed``, with errors a user can act on.

* :func:`seeded_streams`: independent ``numpy.random.Generator`` streams from ``random_seed``, which may be None,
  a non-negative int of any size (or a list of them), a ``numpy.random.SeedSequence`` or a
  ``numpy.random.Generator``; a TypeError or ValueError naming ``random_seed`` for anything else (the legacy
  ``RandomState``, negative numbers, floats, strings).
* :func:`seed_label`: the seed as the result stores it (an int, or the repr of a SeedSequence / Generator);
  :mod:`pmz.results` writes ints that do not fit netcdf's int64 (seeds >= 2**63) as decimal strings.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

__all__ = ["seeded_streams", "seed_label", "SEED_KINDS"]

SEED_KINDS = "None, a non-negative int (or a list of them), a numpy SeedSequence or a numpy Generator"


def _seed_integers(random_seed) -> list | None:
    """The integers numpy would hash into a SeedSequence, or None when ``random_seed`` is not made of integers."""
    if isinstance(random_seed, list | tuple | np.ndarray):
        try:
            values = np.ravel(np.asarray(random_seed, dtype=object)).tolist()
        except ValueError:  # a ragged nest of lists
            return None
    else:
        values = [random_seed]
    if not values or any(isinstance(v, bool | np.bool_) or not isinstance(v, Integral) for v in values):
        return None
    return values


def seeded_streams(random_seed, n: int) -> list[np.random.Generator]:
    """``n`` independent generators from ``random_seed``; a clear error for what numpy would reject deep inside.

    The same seed gives the same streams: ``np.random.default_rng(random_seed).spawn(n)``.
    """
    if isinstance(random_seed, np.random.RandomState):
        raise TypeError(
            "pmz: random_seed=np.random.RandomState(...) is numpy's legacy generator, which cannot spawn independent "
            "streams; pass an int, np.random.SeedSequence(...) or np.random.default_rng(...)"
        )
    if not (random_seed is None or isinstance(random_seed, np.random.Generator | np.random.SeedSequence)):
        values = _seed_integers(random_seed)
        if values is None:
            kind = type(random_seed).__name__
            raise TypeError(f"pmz: random_seed must be {SEED_KINDS}; got {random_seed!r} ({kind})")
        if any(v < 0 for v in values):
            raise ValueError(f"pmz: random_seed must be non-negative (numpy seeds are unsigned), got {random_seed!r}")
    try:
        return np.random.default_rng(random_seed).spawn(n)
    except (TypeError, ValueError) as err:  # e.g. a Generator whose bit generator has no SeedSequence to spawn from
        raise TypeError(
            f"pmz: random_seed {random_seed!r} cannot seed independent streams ({err}); pass {SEED_KINDS}"
        ) from None


def seed_label(random_seed):
    """The seed as the result stores it: None, an int, or the repr of anything else (a SeedSequence, a Generator)."""
    if random_seed is None:
        return None
    if isinstance(random_seed, Integral):
        return int(random_seed)
    return repr(random_seed)
