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

from .graph_walk import (PRODUCTS, SHAPE_OF, SOLVES, STRUCTURAL, NoGraph, cached_proof, inner_values,
                         latent_term_graphs, op_name, value_inputs, walk)

__all__ = ["QuadraticProof", "NotPolynomial", "quadratic_proof", "graph_degree", "MAX_DEGREE"]

MAX_DEGREE = 2  # a quadratic: the Gaussian integral is exact

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
    return cached_proof(_CACHE, model, latent_names, _prove)


def _prove(model, latent_names) -> QuadraticProof:
    """The degree of every term of the log density in the latents; refused at the first term that is not a
    polynomial of degree at most :data:`MAX_DEGREE`."""
    try:
        latents, labels, graphs = latent_term_graphs(model, latent_names)
    except NoGraph as why:
        return QuadraticProof(False, refusal=f"not proven quadratic: {why}")
    memo = {}
    degree, refused = 0, []
    for label, graph in zip(labels, graphs):
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
    return walk(output, memo, _DegreeRules(latents))


class _DegreeRules:
    """The degree rules of the walk (:mod:`pmz.model.graph_walk`): latents have degree 1, other roots 0."""

    def __init__(self, latents):
        self.latents = latents

    def root(self, var):
        return 1 if var in self.latents else 0

    def node(self, node, degrees):
        return [_capped(d, node.op) for d in _node_degrees(self, node, degrees)]

    def scalar(self, op, inputs, degrees, n_out):
        return [_capped(d, op) for d in _scalar_degrees(self, op, inputs, degrees, n_out)]


def _capped(degree, op):
    """A degree above :data:`MAX_DEGREE` refuses, naming the op that raised it."""
    if isinstance(degree, int) and degree > MAX_DEGREE:
        return NotPolynomial(f"`{op_name(op)}` at degree {degree} (more than a quadratic)")
    return degree


def _first_refused(degrees):
    return next((d for d in degrees if isinstance(d, NotPolynomial)), None)


def _node_degrees(rules, node, degrees) -> list:
    """The degrees of a node's outputs from those of its inputs (module docstring)."""
    op, n_out = node.op, len(node.outputs)
    name = type(op).__name__
    if name in SHAPE_OF:
        return [0] * n_out
    if all(d == 0 for d in degrees):
        return [0] * n_out
    if isinstance(op, Elemwise):
        return _scalar_degrees(rules, op.scalar_op, node.inputs, degrees, n_out)
    if isinstance(op, OpFromGraph):
        return inner_values(rules, op.inner_inputs, op.inner_outputs, degrees)
    if isinstance(op, Blockwise):
        return _tensor_op_degrees(op.core_op, degrees, n_out)
    return _tensor_op_degrees(op, degrees, n_out)


def _tensor_op_degrees(op, degrees, n_out) -> list:
    """Reductions, structural ops, products, solves and checks (module docstring); anything else refuses."""
    name = type(op).__name__
    refused = _first_refused(degrees)
    if isinstance(op, CAReduce):
        if refused or not isinstance(op.scalar_op, ps.Add):
            return [refused or NotPolynomial(f"`{op_name(op)}` (a reduction other than a sum)")] * n_out
        return [degrees[0]] * n_out
    if isinstance(op, CheckAndRaise) or name in STRUCTURAL:
        values, indices = value_inputs(op, degrees)
        if refused:
            return [refused] * n_out
        if any(d != 0 for d in indices):
            what = "conditions" if isinstance(op, CheckAndRaise) else "indices or shape"
            return [NotPolynomial(f"the {what} of `{name}`")] * n_out
        return [max(values, default=0)] * n_out
    if refused:
        return [refused] * n_out
    if name in PRODUCTS:
        return [degrees[0] + degrees[1]] * n_out
    if name in SOLVES:
        if degrees[0] != 0:
            return [NotPolynomial(f"the matrix of `{name}`")] * n_out
        return [degrees[1]] * n_out
    return [NotPolynomial(f"`{op_name(op)}`")] * n_out


def _scalar_degrees(rules, scalar_op, inputs, degrees, n_out) -> list:
    """An elementwise op by its scalar op: ``inputs`` are the variables (for a pow's constant exponent)."""
    if all(d == 0 for d in degrees):
        return [0] * n_out
    if isinstance(scalar_op, ps.Composite):
        constants = dict(zip(scalar_op.inputs, inputs))
        return inner_values(rules, scalar_op.inputs, scalar_op.outputs, degrees, constants)
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
    name = op_name(scalar_op)
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
