"""One walk over a model's log-density graph, shared by the proofs read from it.

The proofs that a route's premise holds for the whole model (:mod:`pmz.model.quadratic_proof`: a polynomial of
degree at most 2 in the latents; :mod:`pmz.model.concavity_proof`: concave in the latents) each give every variable
of the graph an abstract value (a degree; a curvature with a range), computed from the values of its inputs by rules
for each op. What they share is here: the terms of the log density with the words that name them, the walk from the
roots to an output (each node once, with an explicit stack: graphs can be deep), the descent into inner graphs
(fused elementwise ``Composite`` ops, ``OpFromGraph``), and which inputs of a structural op carry values and which
carry indices or shapes. A proof supplies its rules as an object with three methods:

* ``root(var)``: the value of a variable with no owner (a latent's value variable, a constant, shared data);
* ``node(node, values)``: the values of a tensor op's outputs;
* ``scalar(op, inputs, values, n_out)``: the values of a scalar op's outputs (inside a ``Composite``, ``inputs`` are
  the outer variables the inner inputs stand for, so that a constant exponent can be read).
"""

from __future__ import annotations

from pytensor import scalar as ps
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import Elemwise

__all__ = ["term_labels", "term_graphs", "latent_term_graphs", "cached_proof", "NoGraph", "walk", "inner_values", "op_name", "value_inputs", "STRUCTURAL",
           "SHAPE_OF", "PRODUCTS", "SOLVES"]

# ops that only move, pick, repeat or relabel entries: which inputs carry values is below; the other inputs are
# indices, shapes or axes
STRUCTURAL = {
    "DimShuffle", "Reshape", "SpecifyShape", "ExpandDims", "Squeeze", "Unbroadcast", "Transpose", "Flatten",
    "Subtensor", "AdvancedSubtensor", "AdvancedSubtensor1", "Split", "Alloc", "TensorFromScalar",
    "ScalarFromTensor", "ExtractDiag", "AllocDiag", "Repeat", "Tile", "DeepCopyOp", "ViewOp", "OutputGuard",
    "Join", "MakeVector", "IncSubtensor", "AdvancedIncSubtensor", "AdvancedIncSubtensor1", "Identity",
}
_ALL_VALUES = {"MakeVector"}  # every input carries values
_VALUES_AFTER_AXIS = {"Join"}  # the first input is the axis, unless the op holds it
_TWO_VALUES = {"IncSubtensor", "AdvancedIncSubtensor", "AdvancedIncSubtensor1"}  # x and the increment
SHAPE_OF = {"Shape", "Shape_i"}  # the shape of anything is a constant
PRODUCTS = {"Dot", "Dot22", "MatMul"}  # bilinear in their two inputs
SOLVES = {"Solve", "SolveTriangular", "CholeskySolve", "LUSolve"}  # (A, b): linear in b for a constant A


def term_labels(model) -> list:
    """Each term of the log density with the words that name it: (term, label)."""
    labels = [(rv, f"the prior of {rv.name}") for rv in model.free_RVs]
    labels += [(rv, f"the log density of {rv.name}") for rv in model.observed_RVs]
    labels += [(pot, f"the Potential {pot.name}") for pot in model.potentials]
    return labels


def term_graphs(model):
    """``(labels, graphs)``: every term's label (:func:`term_labels`) and its elementwise log density graph (prior
    terms with their Jacobians), as PyMC builds it. Raises whatever PyMC raises where it cannot."""
    labelled = term_labels(model)
    graphs = model.logp(vars=[term for term, _ in labelled], jacobian=True, sum=False)
    return [label for _, label in labelled], graphs


class NoGraph(Exception):
    """The model's terms cannot be read for these latents; the message says why."""


def latent_term_graphs(model, latent_names):
    """``(latents, labels, graphs)``: the value variables of the free variables named ``latent_names`` and every
    term's label and graph (:func:`term_graphs`). Raises :class:`NoGraph` naming a missing variable, or what PyMC
    raised building the graph."""
    by_name = {rv.name: rv for rv in model.free_RVs}
    missing = [name for name in latent_names if name not in by_name]
    if missing:
        raise NoGraph(f"no free variable named {', '.join(missing)} in the model")
    latents = {model.rvs_to_values[by_name[name]] for name in latent_names}
    try:
        labels, graphs = term_graphs(model)
    except Exception as error:  # noqa: BLE001 - whatever PyMC raises, there is no graph to prove from
        raise NoGraph(f"the log density's graph could not be built ({type(error).__name__}: {error})") from error
    return latents, labels, graphs


def cached_proof(cache, model, latent_names, prove):
    """``prove(model, latent_names)``, cached per model (weakly), latents and terms: a model given a new variable or
    Potential is analysed again."""
    latent_names = tuple(latent_names)
    terms = tuple(model.free_RVs) + tuple(model.observed_RVs) + tuple(model.potentials)
    key = (latent_names, tuple(id(term) for term in terms))
    try:
        cached = cache.setdefault(model, {})
    except TypeError:  # a model that cannot be weakly referenced: not cached
        cached = {}
    if key not in cached:
        cached[key] = prove(model, latent_names)
    return cached[key]


def walk(output, memo, rules, constants=None):
    """The value of ``output`` under ``rules`` (module docstring), each node once. ``memo`` (variable -> value)
    may be shared between graphs with common parts; roots not in it get ``rules.root``. ``constants`` maps the
    inputs of an inner scalar graph to the outer variables they stand for."""
    stack = [output]
    while stack:
        var = stack[-1]
        if var in memo:
            stack.pop()
            continue
        node = var.owner
        if node is None:
            memo[var] = rules.root(var)
            stack.pop()
            continue
        pending = [inp for inp in node.inputs if inp not in memo]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        values = [memo[inp] for inp in node.inputs]
        if isinstance(node.op, ps.ScalarOp):  # inside a Composite
            inputs = [constants.get(inp, inp) for inp in node.inputs] if constants else node.inputs
            outs = rules.scalar(node.op, inputs, values, len(node.outputs))
        else:
            outs = rules.node(node, values)
        for out, value in zip(node.outputs, outs):
            memo[out] = value
    return memo[output]


def inner_values(rules, inner_inputs, inner_outputs, values, constants=None) -> list:
    """The values of an inner graph's outputs (Composite, OpFromGraph), its inputs seeded with ``values``; its other
    roots are constants, valued by ``rules.root``."""
    memo = dict(zip(inner_inputs, values))
    return [walk(out, memo, rules, constants) for out in inner_outputs]


def op_name(op) -> str:
    """A short name of an op for a refusal: the scalar op of an elementwise op, the core op of a batched one."""
    if isinstance(op, Elemwise):
        return op_name(op.scalar_op)
    if isinstance(op, Blockwise):
        return op_name(op.core_op)
    if isinstance(op, ps.ScalarOp):
        return getattr(op, "name", None) or type(op).__name__.lower()
    return type(op).__name__


def value_inputs(op, values):
    """Split the input values of a structural op or a check into (values, indices/shapes/conditions)."""
    name = type(op).__name__
    if name in _ALL_VALUES:
        return values, []
    if name in _VALUES_AFTER_AXIS and getattr(op, "axis", None) is None:  # (PyTensor 3 keeps the axis in the op)
        return values[1:], values[:1]
    if name in _VALUES_AFTER_AXIS:
        return values, []
    if name in _TWO_VALUES:
        return values[:2], values[2:]
    return values[:1], values[1:]
