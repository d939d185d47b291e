"""The structure of the latents' precision for the Laplace route (:mod:`pmz.runners.conditional_laplace`): read
from the Hessian's nonzeros near the start and checked along a random direction.

* :class:`ArrowStructure`: the latents are independent given the hyperparameters and at most
  :data:`pmz.model.precision.MAX_BORDER` shared latents (the border): one step moves every other latent at once;
* :class:`DenseStructure`: every entry, for at most :data:`DENSE_MAX` latents.

Up to :data:`DENSE_PROBE` latents every column of the Hessian is read (central differences of the gradient); beyond,
:data:`N_PROBE_COLUMNS` random columns, whose nonzeros must fall on the diagonal or in rows most columns share. Either
way ``P v`` from the structure must match a central difference of the gradient along a random ``v``: a structure
that misses entries refuses the route (a wrong structure would cost only efficiency, as the correction is exact, but
the groupwise quadrature needs the independence it states, which :mod:`pmz.model.group_terms` checks again).
"""

from __future__ import annotations

import numpy as np

from ..model.batched_precision import MAX_BORDER, ArrowFactor

__all__ = ["ArrowStructure", "DenseStructure", "read_structure", "check_structure", "DENSE_MAX", "DENSE_PROBE"]

DENSE_MAX = 600  # latents held densely (B m^2 numbers per batch of hyperparameter values)
DENSE_PROBE = 200  # latents up to which the structure is read from the full Hessian (2m gradient points)
N_PROBE_COLUMNS = 48  # columns of the Hessian read beyond that


class ArrowStructure:
    """Independent latents given ``theta`` and the ``border`` latents."""

    def __init__(self, m, border):
        self.border = np.asarray(sorted(border), dtype=int)
        self.rest = np.setdiff1d(np.arange(m), self.border)

    def __repr__(self):
        return f"ArrowStructure(border={len(self.border)})"


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
    if m <= DENSE_PROBE:
        border = _cover(nonzero | nonzero.T)
    else:  # rows hit by most probed columns are shared; a probed column with other neighbours is not an arrow
        hits = nonzero.sum(0)
        border = set(np.flatnonzero(hits > len(columns) // 2).tolist()) | set(
            columns[nonzero.sum(1) > len(columns) // 2].tolist())
        others = [np.setdiff1d(np.flatnonzero(row), list(border)) for j, row in enumerate(nonzero)
                  if columns[j] not in border]
        if len(border) > MAX_BORDER or any(len(o) for o in others):
            border = None
    if border is not None and len(border) <= MAX_BORDER:
        cg.structure = ArrowStructure(m, border)
        return ""
    if m <= DENSE_MAX:
        cg.structure = DenseStructure()
        return ""
    return (f"the latents' precision is neither diagonal beside at most {MAX_BORDER} shared latents nor small "
            f"enough to hold densely ({m} latents > {DENSE_MAX})")

def check_structure(cg, theta, x, h, rng) -> str:
    """``P v`` from the structure against a central difference of the gradient along a random ``v``."""
    factor = cg._factor(theta, x, h)
    if not factor.ok.all():
        return "the latents' precision is not positive definite at the start"
    v = rng.standard_normal((1, cg.m))
    t = 1e-4 / max(float(np.sqrt(np.mean(cg._diagonal(factor)))), 1e-8)
    _, g_plus = cg._value_grad(theta, x + t * v)
    _, g_minus = cg._value_grad(theta, x - t * v)
    direct = -(g_plus - g_minus) / (2.0 * t)
    via = _times(factor, v)
    gap = float(np.max(np.abs(direct - via)))
    scale = float(np.max(np.abs(direct))) + 1e-12
    if not gap <= 1e-3 * scale:
        return (f"the latents' precision has entries outside the structure read from it ({cg.structure}; "
                f"P v off by {gap / scale:.2g} relative along a random v)")
    return ""

def _times(factor, v):
    """``P v`` for one row from its factor (``P = M'M``)."""
    if isinstance(factor, ArrowFactor):
        v1, v2 = v[:, factor.rest], v[:, factor.border]
        Mv1 = factor.sqrt_d * v1 + np.einsum("bni,bi->bn", factor.W, v2)
        Mv2 = np.einsum("bji,bj->bi", factor.L, v2)  # L' v2
        out = np.empty_like(v)
        out[:, factor.rest] = factor.sqrt_d * Mv1
        out[:, factor.border] = np.einsum("bni,bn->bi", factor.W, Mv1) + np.einsum("bij,bj->bi", factor.L, Mv2)
        return out
    return np.einsum("bij,bkj,bk->bi", factor.L, factor.L, v)


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


