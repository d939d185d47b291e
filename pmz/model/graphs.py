"""Single-point graphs of a PyMC model on its flat value space, before pmz batches and compiles them.

* :func:`batchable`: a single-point graph made ready for ``vectorize_graph``: PyMC's parameter checks as per-point
  ``switch(condition, value, -inf)``, and reductions over a 0-d term dropped;
* :func:`constrained_graph`: the free variables' constrained values as graphs of the flat vector ``x`` (value
  transforms undone), for results and the posterior group;
* :func:`unconstrained_graph`: the flat vector as a batched graph of named constrained draws (value transforms
  applied), to start paths at a user's posterior draws.

:class:`~pmz.model.pymc.CompiledModel` compiles them; ``pytensor.graph.replace.vectorize_graph`` gives each its
batch dimension.
"""

from __future__ import annotations

import pytensor.tensor as pt
from pytensor.graph.basic import Constant
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.replace import clone_replace, graph_replace, vectorize_graph
from pytensor.graph.rewriting.basic import in2out, node_rewriter
from pytensor.tensor.elemwise import CAReduce

from .points import layout_from_model

try:  # pytensor >= 2.31
    from pytensor.graph.traversal import graph_inputs
except ImportError:  # pragma: no cover
    from pytensor.graph.basic import graph_inputs

__all__ = ["batchable", "constrained_graph", "unconstrained_graph", "graph_inputs"]


def batchable(outputs):
    """Single-point graphs of a model's log density made ready for ``vectorize_graph``:

    * PyMC's parameter checks become ``switch(condition, value, -inf)``. This must happen *before* batching:
      vectorised, a check's condition would be reduced over the whole batch, so one particle with an invalid
      parameter would set every particle's log density to -inf. Done on the single-point graph, each particle gets
      its own condition. (Checks marked as not replaceable still raise.)
    * A reduction (sum, product, maximum, all, ...) whose input is 0-d is replaced by that input: it is the
      identity, but ``vectorize_graph`` cannot batch it (it looks for the reduced axis among the core dimensions).
      PyMC's conditional autoregression writes one (``log(tau).sum(axis=-1)`` for a scalar ``tau``).

    The rewrites run on a clone (checks may be nested), whose root inputs are then mapped back to the originals
    so that the flat vector and shared data (``pm.Data``) stay the same objects.
    """
    from pymc.logprob.utils import local_check_parameter_to_ninf_switch

    inputs = [v for v in graph_inputs(outputs) if not isinstance(v, Constant)]
    fgraph = FunctionGraph(inputs, outputs, clone=True)
    in2out(local_check_parameter_to_ninf_switch, _scalar_reduction_dropped).rewrite(fgraph)
    return graph_replace(fgraph.outputs, dict(zip(fgraph.inputs, inputs)), strict=False)


@node_rewriter([CAReduce])
def _scalar_reduction_dropped(fgraph, node):
    if node.inputs[0].ndim == 0:
        return [node.inputs[0].astype(node.outputs[0].dtype)]
    return None


def constrained_graph(model, x):
    """Constrained values of the free RVs as graphs of the flat vector ``x`` (value transforms undone).

    Free RVs are visited in creation (topological) order; a transform whose parameters depend on earlier free
    RVs (``b ~ Uniform(0, a)``) gets those parameters expressed through ``x`` first.
    """
    layout = layout_from_model(model)
    constrained = {}
    for block, rv in zip(layout.blocks, model.free_RVs):
        piece = x[block.start : block.stop].reshape(block.shape) if block.shape else x[block.start]
        transform = model.rvs_to_transforms.get(rv)
        if transform is None:
            constrained[rv] = piece
            continue
        inputs = clone_replace(list(rv.owner.inputs), replace=constrained) if constrained else rv.owner.inputs
        constrained[rv] = transform.backward(piece, *inputs)
    return {rv.name: pt.as_tensor(value) for rv, value in constrained.items()}


def unconstrained_graph(model):
    """Flat unconstrained particles as a graph of batched constrained draws: ``(inputs, flat)``.

    ``inputs`` holds one tensor ``(n, *shape)`` per free RV (in ``model.free_RVs`` order) and ``flat`` the
    ``(n, dim)`` particles, each RV's value transform applied (``forward``, e.g. ``log`` for a positive
    variable, with parameters that may depend on other free RVs) and raveled: the inverse of
    :func:`constrained_graph`.
    """
    placeholders = {rv: rv.type() for rv in model.free_RVs}
    pieces = []
    for rv in model.free_RVs:
        transform = model.rvs_to_transforms.get(rv)
        value = placeholders[rv]
        if transform is not None:
            inputs = clone_replace(list(rv.owner.inputs), replace=placeholders)
            value = transform.forward(value, *inputs)
        pieces.append(pt.as_tensor(value).astype("float64").ravel())
    flat = pt.concatenate(pieces) if len(pieces) > 1 else pieces[0]
    batched_in = [pt.tensor(dtype=rv.type.dtype, shape=(None, *rv.type.shape)) for rv in model.free_RVs]
    return batched_in, vectorize_graph(flat, replace=dict(zip(placeholders.values(), batched_in)))
