"""A proof, read from the model's PyTensor graph, that its log density is quadratic in its latent variables.

The latent route integrates the latents ``x`` out exactly (:mod:`pmz.model.latent_gaussian`), which is right only
where ``f(theta, x) = log p~(theta, x)`` is a polynomial of degree at most 2 in ``x`` for every ``theta``. Values at
probe points cannot show that (``|x|`` is quadratic in every orthant); the graph can. Every term of the log density
(the prior of each free variable with its Jacobian, the log density of each observed variable, each Potential) is
walked from its inputs to its output, and each variable of the graph gets an upper bound on its **degree** in the
latents:

* constants, shared data and the value variables of the hyperparameters: 0; the latents' value variables: 1;
* ``add``, ``sub``, ``neg``: the largest degree; ``mul``, ``dot`` (and ``matmul``): the sum; ``true_div``: the
  numerator's, where the denominator has degree 0; ``sqr`` and ``pow`` with a constant integer exponent
  ``n >= 0``: ``n`` times the base's; a cast to a float: the value's (to an integer: a rounding, refused);
* reductions by sums, and the ops that only move, pick or repeat entries (DimShuffle, Reshape, Subtensor,
  IncSubtensor, Join, MakeVector, Alloc, Split, SpecifyShape, casts, ...): the largest degree of the entries, with
  indices and shapes of degree 0; the shape of anything: 0;
* ``switch``: the largest degree of its branches, where its condition has degree 0; PyMC's parameter checks
  (CheckParameterValue, Assert): the degree of the checked value, where the conditions have degree 0;
* linear solves ``A^{-1} b`` (solve, solve_triangular, cho_solve, batched or not): the degree of ``b``, where ``A``
  has degree 0;
* fused elementwise ops (Composite) and OpFromGraph: their inner graphs, by the same rules;
* an op whose inputs all have degree 0: 0, whatever it computes (``exp(log_sigma)`` is a constant in ``x``).

Any other op reached by the latents (``abs``, ``exp``, ``log``, ``maximum``, a comparison, a Scan, an op this module
does not know) is not a polynomial: the proof is refused and names the op and the term. A degree above 2 is refused
as well. What the proof gives is exactly the premise of the Gaussian integral: ``f`` is a polynomial of degree at
most 2 in ``x`` at every ``theta``, so its Hessian in ``x`` is constant in ``x``; whether that precision is positive
definite is checked numerically at each ``theta`` (:class:`pmz.model.latent_gaussian.ConditionalGaussian`), where
the probes of the quadratic's identities stay as a second check.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
from pytensor import scalar as ps
from pytensor.compile.builders import OpFromGraph
from pytensor.graph.basic import Constant
from pytensor.raise_op import CheckAndRaise
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import CAReduce, Elemwise

__all__ = ["QuadraticProof", "NotPolynomial", "quadratic_proof", "graph_degree", "MAX_DEGREE"]

MAX_DEGREE = 2  # a quadratic: the Gaussian integral is exact

# ops that only move, pick, repeat or relabel entries: linear in their value inputs (which inputs carry values is
# below; the other inputs are indices, shapes or axes, which must not depend on the latents)
_STRUCTURAL = {
    "DimShuffle", "Reshape", "SpecifyShape", "ExpandDims", "Squeeze", "Unbroadcast", "Transpose", "Flatten",
    "Subtensor", "AdvancedSubtensor", "AdvancedSubtensor1", "Split", "Alloc", "TensorFromScalar",
    "ScalarFromTensor", "ExtractDiag", "AllocDiag", "Repeat", "Tile", "DeepCopyOp", "ViewOp", "OutputGuard",
    "Join", "MakeVector", "IncSubtensor", "AdvancedIncSubtensor", "AdvancedIncSubtensor1", "Identity",
}
_ALL_VALUES = {"MakeVector"}  # every input carries values
_VALUES_AFTER_AXIS = {"Join"}  # the first input is the axis, unless the op holds it
_TWO_VALUES = {"IncSubtensor", "AdvancedIncSubtensor", "AdvancedIncSubtensor1"}  # x and the increment
_SHAPE_OF = {"Shape", "Shape_i"}  # the shape of anything is a constant
_PRODUCTS = {"Dot", "Dot22", "MatMul"}  # bilinear in their two inputs
_SOLVES = {"Solve", "SolveTriangular", "CholeskySolve", "LUSolve"}  # (A, b): linear in b for a constant A
_SCALAR_LINEAR = (ps.Add, ps.Sub, ps.Neg, ps.Identity)


@dataclass(frozen=True)
class NotPolynomial:
    """A variable that is not a polynomial in the latents: ``what`` reached them (e.g. "`abs`"), and whether it
    is a comparison (a switch on it is then named as such)."""

    what: str
    comparison: bool = False


@dataclass(frozen=True)
class QuadraticProof:
    """The outcome of the degree analysis.

    Attributes
    ----------
    proven : bool
        The log density is a polynomial of degree at most :data:`MAX_DEGREE` in the latents.
    proof : str
        What was proven ("" when refused).
    refusal : str
        Why not, naming the op and the term that refuse ("" when proven).
    degree : int or None
        The degree of the log density in the latents (None when refused for an op that is not polynomial).
    """

    proven: bool
    proof: str = ""
    refusal: str = ""
    degree: int | None = None


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def quadratic_proof(model, latent_names) -> QuadraticProof:
    """Prove from the graph of ``model`` (a ``pm.Model``) that its log density is quadratic in the free variables
    named ``latent_names``, or say why not (module docstring). Cached per model and latents; the key includes the
    model's terms, so a model given a new variable or Potential is analysed again."""
    latent_names = tuple(latent_names)
    terms = tuple(model.free_RVs) + tuple(model.observed_RVs) + tuple(model.potentials)
    key = (latent_names, tuple(id(term) for term in terms))
    try:
        cached = _CACHE.setdefault(model, {})
    except TypeError:  # a model that cannot be weakly referenced: not cached
        cached = {}
    if key not in cached:
        cached[key] = _prove(model, latent_names)
    return cached[key]


def _term_labels(model) -> list:
    """Each term of the log density with the words that name it: (term, label)."""
    labels = [(rv, f"the prior of {rv.name}") for rv in model.free_RVs]
    labels += [(rv, f"the log density of {rv.name}") for rv in model.observed_RVs]
    labels += [(pot, f"the Potential {pot.name}") for pot in model.potentials]
    return labels


def _prove(model, latent_names) -> QuadraticProof:
    """The degree of every term of the log density in the latents; refused at the first term that is not a
    polynomial of degree at most :data:`MAX_DEGREE`."""
    by_name = {rv.name: rv for rv in model.free_RVs}
    missing = [name for name in latent_names if name not in by_name]
    if missing:
        return QuadraticProof(False, refusal=f"no free variable named {', '.join(missing)} in the model")
    latents = {model.rvs_to_values[by_name[name]] for name in latent_names}
    labelled = _term_labels(model)
    try:
        graphs = model.logp(vars=[term for term, _ in labelled], jacobian=True, sum=False)
    except Exception as error:  # noqa: BLE001 - whatever PyMC raises, there is no graph to prove from
        return QuadraticProof(False, refusal=f"not proven quadratic: the log density's graph could not be built "
                                             f"({type(error).__name__}: {error})")
    memo = {}
    degree, refused = 0, []
    for (_, label), graph in zip(labelled, graphs):
        found = graph_degree(graph, latents, memo)
        if isinstance(found, NotPolynomial):
            refused.append((label, found))
        else:
            degree = max(degree, found)
    names = ", ".join(latent_names)
    if refused:
        label, found = refused[0]
        more = f" (and {len(refused) - 1} more terms)" if len(refused) > 1 else ""
        return QuadraticProof(False, refusal=f"not proven quadratic from the graph: the latents {names} reach "
                                             f"{found.what} in {label}{more}")
    proof = (f"the latents {names} reach the log density only through affine maps into Gaussian terms and "
             f"quadratic forms (degree {degree} in the graph of every term)")
    return QuadraticProof(True, proof=proof, degree=degree)


def graph_degree(output, latents, memo=None):
    """The degree of ``output`` in the variables ``latents`` (a set of root variables of degree 1): an int at most
    :data:`MAX_DEGREE`, or a :class:`NotPolynomial` naming what is not a polynomial of that degree. ``memo``
    (variable -> degree) may be shared between graphs with common parts."""
    memo = {} if memo is None else memo
    return _walk(output, memo, lambda var: 1 if var in latents else 0)


def _walk(output, memo, root_degree, constants=None):
    """Degrees from the roots to ``output``, each node once (an explicit stack: graphs can be deep). Roots not in
    ``memo`` get ``root_degree(root)``; ``constants`` maps the inputs of an inner scalar graph to the outer
    variables they stand for (a pow's exponent)."""
    stack = [output]
    while stack:
        var = stack[-1]
        if var in memo:
            stack.pop()
            continue
        node = var.owner
        if node is None:
            memo[var] = root_degree(var)
            stack.pop()
            continue
        pending = [inp for inp in node.inputs if inp not in memo]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        degrees = [memo[inp] for inp in node.inputs]
        if isinstance(node.op, ps.ScalarOp):  # inside a Composite
            inputs = [constants.get(inp, inp) for inp in node.inputs] if constants else node.inputs
            outs = _scalar_degrees(node.op, inputs, degrees, len(node.outputs))
        else:
            outs = _node_degrees(node, degrees)
        for out, degree in zip(node.outputs, outs):
            memo[out] = _capped(degree, node.op)
    return memo[output]


def _capped(degree, op):
    """A degree above :data:`MAX_DEGREE` refuses, naming the op that raised it."""
    if isinstance(degree, int) and degree > MAX_DEGREE:
        return NotPolynomial(f"`{_op_name(op)}` at degree {degree} (more than a quadratic)")
    return degree


def _op_name(op) -> str:
    if isinstance(op, Elemwise):
        return _op_name(op.scalar_op)
    if isinstance(op, Blockwise):
        return _op_name(op.core_op)
    if isinstance(op, ps.ScalarOp):
        return getattr(op, "name", None) or type(op).__name__.lower()
    return type(op).__name__


def _first_refused(degrees):
    return next((d for d in degrees if isinstance(d, NotPolynomial)), None)


def _node_degrees(node, degrees) -> list:
    """The degrees of a node's outputs from those of its inputs (module docstring)."""
    op, n_out = node.op, len(node.outputs)
    name = type(op).__name__
    if name in _SHAPE_OF:
        return [0] * n_out
    if all(d == 0 for d in degrees):
        return [0] * n_out
    if isinstance(op, Elemwise):
        return _scalar_degrees(op.scalar_op, node.inputs, degrees, n_out)
    if isinstance(op, OpFromGraph):
        return _inner_degrees(op.inner_inputs, op.inner_outputs, degrees)
    if isinstance(op, Blockwise):
        return _tensor_op_degrees(op.core_op, degrees, n_out)
    return _tensor_op_degrees(op, degrees, n_out)


def _tensor_op_degrees(op, degrees, n_out) -> list:
    """Reductions, structural ops, products, solves and checks (module docstring); anything else refuses."""
    name = type(op).__name__
    refused = _first_refused(degrees)
    if isinstance(op, CAReduce):
        if refused or not isinstance(op.scalar_op, ps.Add):
            return [refused or NotPolynomial(f"`{_op_name(op)}` (a reduction other than a sum)")] * n_out
        return [degrees[0]] * n_out
    if isinstance(op, CheckAndRaise) or name in _STRUCTURAL:
        values, indices = _value_inputs(op, degrees)
        if refused:
            return [refused] * n_out
        if any(d != 0 for d in indices):
            what = "conditions" if isinstance(op, CheckAndRaise) else "indices or shape"
            return [NotPolynomial(f"the {what} of `{name}`")] * n_out
        return [max(values, default=0)] * n_out
    if refused:
        return [refused] * n_out
    if name in _PRODUCTS:
        return [degrees[0] + degrees[1]] * n_out
    if name in _SOLVES:
        if degrees[0] != 0:
            return [NotPolynomial(f"the matrix of `{name}`")] * n_out
        return [degrees[1]] * n_out
    return [NotPolynomial(f"`{_op_name(op)}`")] * n_out


def _value_inputs(op, degrees):
    """Split the input degrees of a structural op or a check into (values, indices/shapes/conditions)."""
    name = type(op).__name__
    if name in _ALL_VALUES:
        return degrees, []
    if name in _VALUES_AFTER_AXIS and getattr(op, "axis", None) is None:  # (PyTensor 3 keeps the axis in the op)
        return degrees[1:], degrees[:1]
    if name in _VALUES_AFTER_AXIS:
        return degrees, []
    if name in _TWO_VALUES:
        return degrees[:2], degrees[2:]
    return degrees[:1], degrees[1:]


def _inner_degrees(inner_inputs, inner_outputs, degrees, constants=None) -> list:
    """The degrees of an inner graph's outputs (Composite, OpFromGraph), its inputs seeded with ``degrees`` (other
    roots of the inner graph are constants: degree 0)."""
    memo = dict(zip(inner_inputs, degrees))
    return [_walk(out, memo, lambda var: 0, constants) for out in inner_outputs]


def _scalar_degrees(scalar_op, inputs, degrees, n_out) -> list:
    """An elementwise op by its scalar op: ``inputs`` are the variables (for a pow's constant exponent)."""
    if all(d == 0 for d in degrees):
        return [0] * n_out
    if isinstance(scalar_op, ps.Composite):
        constants = dict(zip(scalar_op.inputs, inputs))
        return _inner_degrees(scalar_op.inputs, scalar_op.outputs, degrees, constants)
    if isinstance(scalar_op, ps.Switch):
        return [_switch_degree(degrees)] * n_out
    refused = _first_refused(degrees)
    if refused:
        return [refused] * n_out
    return [_polynomial_degree(scalar_op, inputs, degrees)] * n_out


def _switch_degree(degrees):
    """``switch(c, a, b)``: the larger degree of the branches where ``c`` has degree 0."""
    condition, branches = degrees[0], degrees[1:]
    if isinstance(condition, NotPolynomial) and condition.comparison:
        return NotPolynomial(f"the condition of a `switch` ({condition.what} of the latents)")
    if isinstance(condition, NotPolynomial):
        return condition
    if condition != 0:
        return NotPolynomial("the condition of a `switch`")
    return _first_refused(branches) or max(branches)


def _polynomial_degree(scalar_op, inputs, degrees):
    """The scalar ops of a polynomial; any other scalar op reached by the latents refuses."""
    name = _op_name(scalar_op)
    if isinstance(scalar_op, _SCALAR_LINEAR):
        return max(degrees)
    if isinstance(scalar_op, ps.Cast):  # to a float: the value; to an integer or a boolean: a rounding
        return degrees[0] if str(scalar_op.o_type.dtype).startswith("float") else NotPolynomial(f"`{name}`")
    if isinstance(scalar_op, ps.Mul):
        return sum(degrees)
    if isinstance(scalar_op, ps.Second):  # fill(a, b): b, in the shape of a
        return degrees[1]
    if isinstance(scalar_op, ps.TrueDiv):
        return degrees[0] if degrees[1] == 0 else NotPolynomial("the denominator of a `true_div`")
    if isinstance(scalar_op, ps.Sqr):
        return 2 * degrees[0]
    if isinstance(scalar_op, ps.Pow):
        n = _constant_integer(inputs[1]) if degrees[1] == 0 else None
        return degrees[0] * n if n is not None else NotPolynomial("`pow` (not a constant non-negative integer power)")
    return NotPolynomial(f"`{name}`", comparison=isinstance(scalar_op, (ps.LogicalComparison, ps.BinaryBitOp,
                                                                  ps.UnaryBitOp)))


def _constant_integer(var):
    """The value of ``var`` where it is a constant non-negative integer (every entry equal), else None."""
    try:
        from pytensor.tensor.basic import get_underlying_scalar_constant_value

        value = np.asarray(get_underlying_scalar_constant_value(var))
    except Exception:  # noqa: BLE001 - not a constant of any kind PyTensor can read
        if not isinstance(var, Constant):
            return None
        value = np.asarray(var.data)
    if value.size == 0 or not np.all(value == value.flat[0]):
        return None
    first = float(value.flat[0])
    return int(first) if first >= 0 and first == int(first) else None
