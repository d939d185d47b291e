"""Batched integer indexing for vectorised log densities (discrete variables used as indices).

A discrete variable used as an index (``mu[z]`` with ``z ~ Categorical``) becomes, after batching, a
``Blockwise`` of ``Subtensor`` / ``AdvancedSubtensor`` whose ``perform`` loops over the batch in Python: one
NumPy call per particle. When pmz compiles its C-backend functions, a graph rewrite replaces such nodes, when
the indexed array has ONE core dimension (``x[i]`` for a vector x and an integer or integer array i), by
:class:`BatchedTake`, which gathers for the whole batch in one ``np.take_along_axis`` call:

    out[b..., j...] = x[b..., idx[b..., j...]]

Same output (negative indices count from the end; out-of-range indices raise, as before).
"""

from __future__ import annotations

import numpy as np
from pytensor.compile import optdb
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.graph.rewriting.basic import in2out, node_rewriter
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.subtensor import AdvancedSubtensor, Subtensor

try:  # PyTensor 2: integer-vector indexing has its own op; PyTensor 3 folds it into AdvancedSubtensor
    from pytensor.tensor.subtensor import AdvancedSubtensor1
except ImportError:  # pragma: no cover - PyTensor 3
    AdvancedSubtensor1 = AdvancedSubtensor

from .linalg import REWRITE_TAG

__all__ = ["BatchedTake"]


class BatchedTake(Op):
    """``x (B..., k)`` gathered at integer ``idx (B..., *core)`` along the last axis -> ``(B..., *core)``.

    ``n_batch`` is the number of (broadcast) batch dimensions shared by ``x`` and ``idx``. Forward only: it
    replaces nodes during compilation, after the gradients have been built.
    """

    __props__ = ("n_batch",)

    def __init__(self, n_batch: int):
        self.n_batch = int(n_batch)

    def make_node(self, x, idx, *, output_type=None):
        return Apply(self, [x, idx], [output_type()])

    def perform(self, node, inputs, outputs):
        x, idx = inputs
        nb = self.n_batch
        batch = np.broadcast_shapes(x.shape[:nb], idx.shape[:nb])
        core = idx.shape[nb:]
        xb = np.broadcast_to(x, batch + x.shape[nb:]).reshape(-1, x.shape[-1])
        ib = np.broadcast_to(idx, batch + core).reshape(xb.shape[0], -1)
        out = np.take_along_axis(xb, ib.astype(np.intp), axis=1).reshape(batch + core)
        outputs[0][0] = np.asarray(out, dtype=node.outputs[0].dtype)


def _single_index_of(core, node) -> int | None:
    """Position (in the node's inputs) of the one integer index, if the core op is ``vector[index]``."""
    if isinstance(core, Subtensor):
        if len(core.idx_list) != 1 or isinstance(core.idx_list[0], slice) or len(node.inputs) != 2:
            return None
        return 1
    if isinstance(core, AdvancedSubtensor | AdvancedSubtensor1):
        if len(node.inputs) != 2 or node.inputs[1].type.dtype not in ("int8", "int16", "int32", "int64", "uint8"):
            return None
        return 1
    return None


@node_rewriter([Blockwise])
def local_batched_take(fgraph, node):
    """``Blockwise(vector[int index])`` -> :class:`BatchedTake` (same inputs, same output type)."""
    core = node.op.core_op
    if _single_index_of(core, node) is None:
        return None
    x, idx = node.inputs
    core_x, core_idx = (len(sig) for sig in node.op.inputs_sig)
    n_batch = x.type.ndim - core_x
    if core_x != 1 or idx.type.ndim - core_idx != n_batch or node.outputs[0].type.ndim != n_batch + core_idx:
        return None
    op = BatchedTake(n_batch)
    return [op.make_node(x, idx, output_type=node.outputs[0].type).outputs[0]]


if "pmz_batched_take" not in optdb:
    optdb.register("pmz_batched_take", in2out(local_batched_take), REWRITE_TAG, position=48)
