"""The structure of the latents' precision for the Laplace route (:mod:`pmz.runners.conditional_laplace`): read
from the Hessian's nonzeros near the start and checked along a random direction.

* :class:`ArrowStructure`: the latents are independent given the hyperparameters and at most
  :data:`pmz.model.precision.MAX_BORDER` shared latents (the border): one step moves every other latent at once;
* :class:`BandStructure`: nonzeros only within ``b <=`` :data:`MAX_HALF_WIDTH` of the diagonal (a random walk or
  an AR(1) in time, a grid's neighbours in row order), where the band is at most a quarter of the latents: ``2b + 1``
  coloured steps read the whole precision. Shared latents beside the band (a field's level) are read as its
  border, which the Laplace route moves to the hyperparameters (the structure is then read again without them);
* :class:`DenseStructure`: every entry, for at most :data:`DENSE_MAX` latents.

Up to :data:`DENSE_PROBE` latents every column of the Hessian is read (central differences of the gradient); beyond,
:data:`N_PROBE_COLUMNS` random columns, whose nonzeros must fall on the diagonal or in rows most columns share. Either
way ``P v`` from the structure must match a central difference of the gradient along a random ``v``: a structure
that misses entries refuses the route (a wrong structure would cost only efficiency, as the correction is exact, but
the groupwise quadrature needs the independence it states, which :mod:`pmz.model.group_terms` checks again).
"""

from __future__ import annotations

import numpy as np

from ..model.batched_precision import MAX_BORDER

__all__ = ["ArrowStructure", "BandStructure", "DenseStructure", "read_structure", "check_structure", "DENSE_MAX",
           "DENSE_PROBE", "MAX_HALF_WIDTH"]

DENSE_MAX = 600  # latents held densely (B m^2 numbers per batch of hyperparameter values)
DENSE_PROBE = 200  # latents up to which the structure is read from the full Hessian (2m gradient points)
N_PROBE_COLUMNS = 48  # columns of the Hessian read beyond that
MAX_HALF_WIDTH = 64  # the widest band held as a band (B m (b + 1) numbers, m b^2 work per factor)


class ArrowStructure:
    """Independent latents given ``theta`` and the ``border`` latents."""

    def __init__(self, m, border):
        self.border = np.asarray(sorted(border), dtype=int)
        self.rest = np.setdiff1d(np.arange(m), self.border)

    def __repr__(self):
        return f"ArrowStructure(border={len(self.border)})"


class BandStructure:
    """Nonzeros within ``half_width`` of the diagonal, beside the ``border`` latents (which the Laplace route moves
    to the hyperparameters; a factor is built only without them)."""

    def __init__(self, m, half_width, border=()):
        self.half_width = int(half_width)
        self.border = np.asarray(sorted(border), dtype=int)
        self.rest = np.setdiff1d(np.arange(m), self.border)

    def colours(self, m):
        """The step each coordinate moves in: coordinates ``2b + 1`` apart share one (no row meets two)."""
        return np.arange(m) % min(2 * self.half_width + 1, m)

    def __repr__(self):
        shared = f", border={len(self.border)}" if len(self.border) else ""
        return f"BandStructure(half_width={self.half_width}{shared})"


class DenseStructure:
    def __repr__(self):
        return "DenseStructure()"


def read_structure(cg, theta, x, h, rng) -> str:
    m = cg.m
    if m <= DENSE_PROBE:
        columns = np.arange(m)
    else:
        columns = np.sort(rng.choice(m, N_PROBE_COLUMNS, replace=False))
    steps = np.zeros((len(columns), m))
    steps[np.arange(len(columns)), columns] = h[0, columns]
    points = np.concatenate([x + steps, x - steps])
    G = cg._gradients(np.repeat(theta, len(points), 0), points)
    H = (G[: len(columns)] - G[len(columns):])  # row j: column columns[j] of the Hessian (unscaled)
    if not np.isfinite(H).all():
        return "the gradient is not finite near the start"
    nonzero = H != 0.0
    nonzero[np.arange(len(columns)), columns] = False  # off the diagonal only
    # rows hit by most probed columns are shared (a population mean, a field's level)
    shared = set(np.flatnonzero(nonzero.sum(0) > len(columns) // 2).tolist()) | set(
        columns[nonzero.sum(1) > len(columns) // 2].tolist())
    if m <= DENSE_PROBE:
        border = _cover(nonzero | nonzero.T)
    else:  # a probed column with neighbours other than the shared rows is not an arrow
        others = [np.setdiff1d(np.flatnonzero(row), list(shared)) for j, row in enumerate(nonzero)
                  if columns[j] not in shared]
        border = None if len(shared) > MAX_BORDER or any(len(o) for o in others) else shared
    if border is not None and len(border) <= MAX_BORDER:
        cg.structure = ArrowStructure(m, border)
        return ""
    shared = shared if len(shared) <= MAX_BORDER else set()
    probe, entry = np.nonzero(nonzero)  # entry of the probed column columns[probe]
    keep = ~np.isin(entry, list(shared)) & ~np.isin(columns[probe], list(shared))
    half_width = int(np.max(np.abs(entry - columns[probe])[keep])) if keep.any() else 0
    if half_width <= MAX_HALF_WIDTH and 4 * (half_width + 1) <= m:
        cg.structure = BandStructure(m, half_width, shared)
        if shared:  # the route moves them to the hyperparameters and reads the rest again
            return (f"the latents' precision is a band of half-width {half_width} beside {len(shared)} shared "
                    "latents")
        return ""
    if m <= DENSE_MAX:
        cg.structure = DenseStructure()
        return ""
    return (f"the latents' precision is neither diagonal beside at most {MAX_BORDER} shared latents, nor a band of "
            f"half-width at most {MAX_HALF_WIDTH} (its entries reach {half_width} from the diagonal), nor small enough "
            f"to hold densely ({m} latents > {DENSE_MAX})")

def check_structure(cg, theta, x, h, rng) -> str:
    """``P v`` from the structure against a central difference of the gradient along a random ``v``."""
    factor = cg._factor(theta, x, h)
    if not factor.ok.all():
        return "the latents' precision is not positive definite at the start"
    v = rng.standard_normal((1, cg.m))
    t = 1e-4 / max(float(np.sqrt(np.mean(factor.diagonal()))), 1e-8)
    _, g_plus = cg._value_grad(theta, x + t * v)
    _, g_minus = cg._value_grad(theta, x - t * v)
    direct = -(g_plus - g_minus) / (2.0 * t)
    via = factor.times(v)
    gap = float(np.max(np.abs(direct - via)))
    scale = float(np.max(np.abs(direct))) + 1e-12
    if not gap <= 1e-3 * scale:
        return (f"the latents' precision has entries outside the structure read from it ({cg.structure}; "
                f"P v off by {gap / scale:.2g} relative along a random v)")
    return ""

def _cover(adjacent) -> set | None:
    """A small set of coordinates that touches every off-diagonal nonzero (greedy: the most connected first), or
    None when it would exceed :data:`MAX_BORDER`."""
    adjacent = adjacent.copy()
    border = set()
    while adjacent.any():
        if len(border) == MAX_BORDER:
            return None
        j = int(np.argmax(adjacent.sum(0)))
        border.add(j)
        adjacent[j, :] = adjacent[:, j] = False
    return border


