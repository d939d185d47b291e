"""A proof, read from the model's PyTensor graph, that its log density is concave in its latent variables.

The Laplace route (:mod:`pmz.auto.laplace_route`) finds, at each value of a few hyperparameters, the conditional
mode of the latents by Newton's method and uses the Gaussian there as the start of an annealed correction. That the
conditional has one mode, which Newton's method finds from anywhere, holds where ``f(theta, x) = log p~(theta, x)``
is concave in ``x`` for every ``theta``: random effects and latent fields with a Gaussian prior under Poisson
(log link), Bernoulli and binomial (logit link), negative-binomial (log link), Gaussian or exponential-family
likelihoods of a linear predictor. Values at points cannot show it; the graph can, by the rules of disciplined
convex programming (Grant, Boyd & Ye 2006) with a few known log-concave atoms. Every term of the log density
(each free variable's prior with its Jacobian, each observed variable's log density, each Potential) is walked from
its inputs (:mod:`pmz.model.graph_walk`) and every variable gets a **curvature** in the latents, a **range** of
values (:mod:`pmz.model.intervals`) and what is known of its logarithm:

* kinds: constant (no latent reaches it), affine, concave, convex, or unknown (with the op where it was lost);
* constants, shared data and the hyperparameters' value variables are constants, with the range of their values;
  the latents' value variables are affine;
* sums keep a common curvature (concave plus affine is concave); a product with constants scales it (a negative
  constant turns concave into convex); ``-x`` flips it; ``x ** 2`` of an affine ``x`` is convex; a switch or a
  join picks entries by conditions that no latent reaches (or that the ranges decide: ``exp(eta) == 0`` is false)
  and keeps the curvature both branches share; sums over entries, and the ops that only move, pick or repeat
  entries, keep it; a product with a constant matrix or a solve by one keeps an affine map affine;
* logarithms: a positive ``v`` is **log-concave** (``log v`` concave) when it is ``exp`` of a concave term, a
  positive concave term, ``sigmoid`` of an affine (or concave) term, a positive constant, or a product or positive
  power of log-concave terms; it is **log-convex** when it is ``exp`` of a convex term, a positive constant, or a
  sum, product or positive power of log-convex terms; ``u / v`` is log-concave for a log-concave ``u`` and a
  log-convex ``v`` (``mu / (mu + alpha)`` of the negative binomial); ``1 - sigmoid(a)`` is ``sigmoid(-a)``. Then
  ``log v`` is concave (log-concave), convex (log-convex) or affine (both: ``log(exp(eta)) = eta``), and
  ``log1p(v)`` is ``log(1 + v)``;
* an even power of a constant of either sign times a log-convex term (or over a log-concave one) is convex: the
  Normal's ``((y - mu) / sigma)^2`` with ``sigma = exp(eta)`` and ``mu`` free of the latents (stochastic volatility).

Atoms known whole: the prior of a conditional autoregression (``pm.CAR``) with a mean affine in the latents and
the other parameters free of them is a Gaussian with a positive definite precision (:func:`_gaussian_prior_labels`).

A term of unknown or convex curvature (``abs``, a ``maximum``, a Student-t or Cauchy likelihood of the latents, a
switch on a comparison of the latents, an op not known here) refuses the proof, naming the op and the term. What
the proof gives is the premise of the route: ``f`` is concave in ``x`` at every ``theta``; that it is strictly
concave (a positive definite precision) is checked numerically at each ``theta`` (a Cholesky factor).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, replace

import numpy as np
from pytensor import scalar as ps
from pytensor.compile.builders import OpFromGraph
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.raise_op import CheckAndRaise
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import CAReduce, Elemwise

from .curvature import (_CONCAVE_KINDS, _CONVEX_KINDS, _NONNEG, _POSITIVE, AFFINE, CONST, CONVEX, UNKNOWN, Curve, _add,
                        _comparison, _const, _div, _exp, _join, _log, _logic, _mul, _neg, _power, _sigmoid, _switch,
                        _unknown)
from .graph_walk import (PRODUCTS, SHAPE_OF, SOLVES, STRUCTURAL, NoGraph, cached_proof, inner_values,
                         latent_term_graphs, op_name, term_labels, value_inputs, walk)
from .intervals import BOOLEANS, REALS, Range, from_values, point

__all__ = ["ConcavityProof", "Curve", "concavity_proof", "graph_curvature"]


@dataclass(frozen=True)
class ConcavityProof:
    """The outcome of the curvature analysis: ``proven``, what was proven (``proof``) or why not (``refusal``)."""

    proven: bool
    proof: str = ""
    refusal: str = ""


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def concavity_proof(model, latent_names) -> ConcavityProof:
    """Prove from the graph of ``model`` (a ``pm.Model``) that its log density is concave in the free variables
    named ``latent_names`` at every value of the others, or say why not (module docstring). Cached per model,
    latents and terms."""
    return cached_proof(_CACHE, model, latent_names, _prove)


def _prove(model, latent_names) -> ConcavityProof:
    try:
        latents, labels, graphs = latent_term_graphs(model, latent_names)
    except NoGraph as why:
        return ConcavityProof(False, refusal=f"not proven concave: {why}")
    memo, refused = {}, []
    gaussian = _gaussian_prior_labels(model, latents, memo)
    for label, graph in zip(labels, graphs):
        if label in gaussian:
            continue
        curve = graph_curvature(graph, latents, memo)
        if curve.kind not in _CONCAVE_KINDS:
            refused.append((label, curve))
    names = ", ".join(latent_names)
    if refused:
        label, curve = refused[0]
        what = curve.why if curve.kind == UNKNOWN else "a convex term"
        more = f" (and {len(refused) - 1} more terms)" if len(refused) > 1 else ""
        return ConcavityProof(False, refusal=f"not proven concave in {names} from the graph: {what} in "
                                             f"{label}{more}")
    return ConcavityProof(True, proof=f"the log density is concave in {names} (every term, read from the graph)")


def _gaussian_prior_labels(model, latents, memo) -> set:
    """The labels of the prior terms that are Gaussian densities of a latent with a positive definite precision
    free of the latents, and a mean affine in them: concave whatever their graph looks like. One such atom, the
    conditional autoregression (``pm.CAR``): its precision ``tau (D - alpha W)`` is strictly diagonally dominant for
    ``|alpha| < 1`` (PyMC's own check gives -inf outside), but its graph writes the quadratic form as an
    elementwise product of two affine terms, which the rules cannot see."""
    from pymc.distributions.multivariate import CARRV

    out = set()
    for term, label in term_labels(model):
        if term not in model.free_RVs or not isinstance(term.owner.op, CARRV):
            continue
        if model.rvs_to_values[term] not in latents or model.rvs_to_transforms.get(term) is not None:
            continue
        mu, *others = model.replace_rvs_by_values(list(term.owner.op.dist_params(term.owner)))
        curves = [graph_curvature(v, latents, memo) for v in (mu, *others)]
        if curves[0].kind in (CONST, AFFINE) and all(c.kind == CONST for c in curves[1:]):
            out.add(label)
    return out


def graph_curvature(output, latents, memo=None) -> Curve:
    """The :class:`Curve` of ``output`` in the variables ``latents`` (module docstring)."""
    return walk(output, {} if memo is None else memo, _CurvatureRules(latents))


class _CurvatureRules:
    """The curvature rules of the walk (:mod:`pmz.model.graph_walk`)."""

    def __init__(self, latents):
        self.latents = latents

    def root(self, var):
        if var in self.latents:
            return Curve(AFFINE)
        if isinstance(var, Constant):
            return _const(from_values(var.data))
        if isinstance(var, SharedVariable):
            return _const(from_values(var.get_value(borrow=True)))
        return _const(REALS)

    def node(self, node, values) -> list:
        op, n_out = node.op, len(node.outputs)
        name = type(op).__name__
        if name in SHAPE_OF:
            return [_const(_NONNEG)] * n_out
        if isinstance(op, Elemwise):
            return self.scalar(op.scalar_op, node.inputs, values, n_out)
        if isinstance(op, OpFromGraph):
            return inner_values(self, op.inner_inputs, op.inner_outputs, values)
        core = op.core_op if isinstance(op, Blockwise) else op
        return [_tensor_op(core, values)] * n_out

    def scalar(self, op, inputs, values, n_out) -> list:
        if isinstance(op, ps.Composite):
            return inner_values(self, op.inputs, op.outputs, values, dict(zip(op.inputs, inputs)))
        out = _scalar_op(op, inputs, values)
        if all(v.kind == CONST for v in values) and out.kind != CONST:
            out = _const(out.range)
        return [out] * n_out


def _tensor_op(op, values) -> Curve:
    name = type(op).__name__
    if isinstance(op, CAReduce):
        return _reduction(op, values[0])
    if isinstance(op, CheckAndRaise):
        conditions = values[1:]
        if any(c.kind != CONST for c in conditions):
            return _unknown(f"the conditions of `{name}` (they depend on the latents)")
        return values[0]
    if name in STRUCTURAL:
        entries, indices = value_inputs(op, values)
        if any(i.kind != CONST for i in indices):
            return _unknown(f"the indices or shape of `{name}` (they depend on the latents)")
        if "IncSubtensor" in name and not getattr(op, "set_instead_of_inc", False) and len(entries) == 2:
            return _join([entries[0], _add(entries)])
        return _join(entries) if entries else _const(REALS)
    if all(v.kind == CONST for v in values):
        return _const(REALS)
    if name in PRODUCTS:
        a, b = values[0], values[1]
        if {a.kind, b.kind} <= {CONST, AFFINE} and CONST in (a.kind, b.kind):
            return Curve(AFFINE)
        return _unknown(f"`{name}` of terms in the latents other than an affine map")
    if name in SOLVES:
        if values[0].kind != CONST or values[1].kind not in (CONST, AFFINE):
            return _unknown(f"`{name}` other than a constant matrix's solve of an affine term")
        return Curve(AFFINE)
    return _unknown(f"`{op_name(op)}`")


def _reduction(op, v: Curve) -> Curve:
    scalar = op.scalar_op
    if isinstance(scalar, ps.Add):
        rng = REALS
        if v.range.nonnegative():
            rng = Range(0.0, np.inf, False, True)
        elif v.range.nonpositive():
            rng = Range(-np.inf, 0.0, True, False)
        return _const(rng) if v.kind == CONST else replace(Curve(v.kind, rng), why=v.why)
    if isinstance(scalar, (ps.AND, ps.OR)):
        if v.range.is_point(1.0) or v.range.is_point(0.0):
            return _const(v.range)
        return _const(BOOLEANS) if v.kind == CONST else _unknown("a comparison of the latents", BOOLEANS)
    if v.kind == CONST:
        return _const(REALS)
    if isinstance(scalar, ps.Mul) and (v.log_concave or v.log_convex):
        return Curve(UNKNOWN, _POSITIVE, log_concave=v.log_concave, log_convex=v.log_convex,
                     why=f"`{op_name(op)}` of terms in the latents")
    return _unknown(f"`{op_name(op)}` (a reduction other than a sum) of terms in the latents")


def _scalar_op(op, inputs, values) -> Curve:
    if isinstance(op, ps.Switch):
        return _switch(*values)
    if isinstance(op, (ps.Identity,)):
        return values[0]
    if isinstance(op, ps.Cast):
        if str(op.o_type.dtype).startswith("float") or values[0].kind == CONST:
            return values[0]
        return _unknown(f"`{op_name(op)}` (a rounding of the latents)")
    if isinstance(op, ps.Second):
        return values[1]
    if isinstance(op, ps.Add):
        return _add(values)
    if isinstance(op, ps.Sub):
        return _add([values[0], _neg(values[1])])
    if isinstance(op, ps.Neg):
        return _neg(values[0])
    if isinstance(op, ps.Mul):
        return _mul(inputs, values)
    if isinstance(op, ps.TrueDiv):
        return _div(values[0], values[1])
    if isinstance(op, ps.Sqr):
        return _power(values[0], 2.0)
    if isinstance(op, ps.Pow):
        return _power(values[0], _constant_value(inputs[1]) if values[1].kind == CONST else None)
    if isinstance(op, ps.Exp):
        return _exp(values[0])
    if isinstance(op, ps.Log):
        return _log(values[0])
    if isinstance(op, ps.Log1p):
        return _log(_add([_const(point(1.0)), values[0]]))
    if isinstance(op, ps.Sigmoid):
        return _sigmoid(values[0])
    if isinstance(op, ps.Softplus):
        v = values[0]
        kind = CONST if v.kind == CONST else CONVEX if v.kind in _CONVEX_KINDS else UNKNOWN
        return Curve(kind, _POSITIVE, why="" if kind != UNKNOWN else "`softplus` of a concave term")
    if isinstance(op, ps.Abs) and values[0].kind == CONST:
        v = values[0].range
        return _const(_POSITIVE if v.positive() or v.negative() else _NONNEG)
    if isinstance(op, ps.LogicalComparison):
        return _comparison(op, values)
    if isinstance(op, (ps.AND, ps.OR, ps.Invert)):
        return _logic(op, values)
    return _unknown(f"`{op_name(op)}`")


def _constant_value(var):
    """The value of a constant exponent (every entry equal), else None."""
    try:
        from pytensor.tensor.basic import get_underlying_scalar_constant_value

        value = np.asarray(get_underlying_scalar_constant_value(var))
    except Exception:  # noqa: BLE001 - not a constant PyTensor can read
        if not isinstance(var, Constant):
            return None
        value = np.asarray(var.data)
    if value.size == 0 or not np.all(value == value.flat[0]):
        return None
    return float(value.flat[0])
