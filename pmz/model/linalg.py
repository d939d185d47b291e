"""Batched triangular solves for vectorised log densities.

Batching a model whose log density solves a triangular system (``pm.MvNormal(..., chol=...)``, LKJ models,
Gaussian processes) turns each solve into pytensor's ``Blockwise(SolveTriangular)``, whose C-less ``perform``
calls LAPACK once per batch entry in a Python loop: (particles x observations) calls per evaluation. When pmz
compiles its C-backend functions, a graph rewrite swaps these nodes for :class:`BroadcastTriangularSolve`,
which solves all of them in one call of NumPy's broadcasting ``np.linalg.solve``. Same equation
``A x = b`` (only the ``lower`` or upper triangle of ``A`` is read, ``unit_diagonal`` puts ones on the diagonal),
same output; singular systems give NaN, as pytensor's own op does.
"""

from __future__ import annotations

import numpy as np
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.compile import optdb
from pytensor.graph.rewriting.basic import in2out, node_rewriter
from pytensor.tensor.blockwise import Blockwise

try:  # PyTensor 3
    from pytensor.tensor.linalg import SolveTriangular
except ImportError:  # pragma: no cover - PyTensor 2
    from pytensor.tensor.slinalg import SolveTriangular

__all__ = ["BroadcastTriangularSolve", "REWRITE_TAG"]


class BroadcastTriangularSolve(Op):
    """``x = A^{-1} b`` for broadcast batches of triangular ``A`` (..., m, m) and ``b`` (..., m) or (..., m, k).

    Forward evaluation only: it replaces nodes during compilation, after the gradients have been built.
    """

    __props__ = ("lower", "unit_diagonal", "b_ndim")

    def __init__(self, *, lower: bool, unit_diagonal: bool, b_ndim: int):
        self.lower = bool(lower)
        self.unit_diagonal = bool(unit_diagonal)
        self.b_ndim = int(b_ndim)

    def make_node(self, A, b, *, output_type=None):
        return Apply(self, [A, b], [output_type()])

    def perform(self, node, inputs, outputs):
        A, b = inputs
        A = np.tril(A) if self.lower else np.triu(A)
        if self.unit_diagonal:
            m = A.shape[-1]
            A = A.copy()
            A[..., np.arange(m), np.arange(m)] = 1.0
        rhs = b[..., None] if self.b_ndim == 1 else b
        try:
            x = np.linalg.solve(A, rhs)
        except np.linalg.LinAlgError:
            x = self._solve_each(A, rhs)
        x = x[..., 0] if self.b_ndim == 1 else x
        outputs[0][0] = np.asarray(x, dtype=node.outputs[0].dtype)

    @staticmethod
    def _solve_each(A, rhs):
        """Fallback when some system is singular: solve one by one, NaN where singular."""
        shape = np.broadcast_shapes(A.shape[:-2], rhs.shape[:-2])
        A = np.broadcast_to(A, shape + A.shape[-2:])
        rhs = np.broadcast_to(rhs, shape + rhs.shape[-2:])
        out = np.empty(shape + rhs.shape[-2:])
        for idx in np.ndindex(*shape):
            try:
                out[idx] = np.linalg.solve(A[idx], rhs[idx])
            except np.linalg.LinAlgError:
                out[idx] = np.nan
        return out


@node_rewriter([Blockwise])
def local_broadcast_triangular_solve(fgraph, node):
    """``Blockwise(SolveTriangular)`` -> :class:`BroadcastTriangularSolve` (same inputs, same output type)."""
    core = node.op.core_op
    if not isinstance(core, SolveTriangular):
        return None
    op = BroadcastTriangularSolve(lower=core.lower, unit_diagonal=core.unit_diagonal, b_ndim=core.b_ndim)
    return [op.make_node(*node.inputs, output_type=node.outputs[0].type).outputs[0]]


# Registered under its own tag only: active in pmz's compiled functions (``mode.including(REWRITE_TAG)``),
# never in anybody else's. Position 48: after pytensor's specialisations, before the in-place phase.
REWRITE_TAG = "pmz_batched_linalg"
if "pmz_broadcast_triangular_solve" not in optdb:
    optdb.register("pmz_broadcast_triangular_solve", in2out(local_broadcast_triangular_solve), REWRITE_TAG, position=48)
