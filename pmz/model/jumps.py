"""Finite jumps of a model's log density in its continuous free variables, read from the PyTensor graph.

A chain moved by gradients, a climb and a search for peaks all follow the log density's slope; none sees across a
step. Where the log density jumps up by a finite amount on a region the posterior draws never enter (a
``pm.Potential`` that adds 8 where ``x[0] > 3``), that region's mass is missing from every estimate built on those
draws, with nothing in their diagnostics to say so: a Gaussian model with such a step came out 0.030 nats low,
se 0.004, z = -7, reliable.

:func:`finite_jumps` names the first place where what the user wrote -- each ``pm.Potential``, and the parameters
of each free and observed variable as functions of the others -- makes a discontinuous choice that depends on a
continuous free variable (PyMC's own log densities are continuous in their parameters: their switches choose
between two formulas of one function, or mark a support's bound):

* a ``switch`` whose condition depends on one, unless one of its branches is ``-inf`` (a support's indicator:
  outside it the density is zero, and no mass can hide behind a step down to zero), ``+inf`` or NaN (no density
  there: pmz's checks for non-finite values flag it), or its condition singles out a
  set of measure zero (``x == 0``: PyMC's care for a density's value at a single point);
* a comparison (``>``, ``<=``, ``==``, ...) of one that is used other than as such a condition (cast to a number);
* ``floor``, ``ceil``, ``round`` or an integer cast of one (not ``sign``: PyMC takes the sign of positive scales).

PyMC's own parameter checks (``CheckParameterValue``) are not jumps: they hold wherever the density is defined.
The default sends a model with finite jumps to SMC from the prior (:mod:`pmz.auto.tempered_route`), whose
particles start everywhere the prior puts mass and are reweighted, never climbed.
"""

from __future__ import annotations

import weakref

import numpy as np
from pytensor import scalar as ps
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import ancestors, io_toposort
from pytensor.raise_op import CheckAndRaise
from pytensor.tensor.elemwise import Elemwise

__all__ = ["finite_jumps"]

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_COMPARISONS = (ps.GT, ps.GE, ps.LT, ps.LE, ps.EQ, ps.NEQ)
_POINTWISE = (ps.EQ, ps.NEQ)  # comparisons that single out a set of measure zero in a continuous variable
_LOGIC = (ps.AND, ps.OR, ps.Invert, ps.XOR)
_ROUNDINGS = ("Floor", "Ceil", "Round", "RoundHalfToEven", "RoundHalfAwayFromZero", "Trunc")


def finite_jumps(model) -> str:
    """Where the log density of ``model`` (a ``pm.Model``) jumps by a finite amount in a continuous free variable,
    in words ("" where it has no such jump, or the graph cannot be read). Cached per model and its terms."""
    terms = tuple(model.free_RVs) + tuple(model.observed_RVs) + tuple(model.potentials)
    key = tuple(id(term) for term in terms)
    try:
        cached = _CACHE.setdefault(model, {})
    except TypeError:
        cached = {}
    if key not in cached:
        cached[key] = _find(model)
    return cached[key]


def _find(model) -> str:
    continuous = {model.rvs_to_values[rv] for rv in model.free_RVs if rv.dtype.startswith("float")}
    if not continuous:
        return ""
    try:
        labelled = _user_graphs(model)
    except Exception:  # noqa: BLE001 - no graph to read: nothing is claimed either way
        return ""
    for label, graph in labelled:
        what = _first_jump(graph, continuous)
        if what:
            return f"the log density jumps by a finite amount ({what} in {label})"
    return ""


def _user_graphs(model) -> list:
    """``(label, graph)`` of what the user wrote, in terms of the value variables: every Potential, and the
    parameters of every free and observed variable's distribution (PyMC's own log densities are continuous in their
    parameters; their switches choose between formulas of one function, or mark a support's bound)."""
    from pytensor.tensor.random.type import RandomType

    out = [(f"the Potential {pot.name}", pot) for pot in model.potentials]
    for rv in list(model.free_RVs) + list(model.observed_RVs):
        params = [i for i in rv.owner.inputs if not isinstance(i, Constant) and not isinstance(i.type, RandomType)
                  and getattr(i, "ndim", None) is not None]
        out += [(f"a parameter of {rv.name}", param) for param in params]
    graphs = model.replace_rvs_by_values([graph for _, graph in out])
    return [(label, graph) for (label, _), graph in zip(out, graphs)]


def _first_jump(graph, continuous) -> str:
    """The first discontinuous choice in ``graph`` that depends on a variable of ``continuous`` ("" if none)."""
    inputs = [v for v in ancestors([graph]) if v.owner is None]
    nodes = io_toposort(inputs, [graph])
    depends = {v for v in inputs if v in continuous}
    conditions, as_conditions = set(), {}
    for node in nodes:
        if isinstance(node.op, CheckAndRaise):  # PyMC's parameter checks: the value passes, conditions do not count
            if node.inputs[0] in depends:
                depends.update(node.outputs)
            conditions.update(node.inputs[1:])
            continue
        if any(i in depends for i in node.inputs):
            depends.update(node.outputs)
        scalar = getattr(node.op, "scalar_op", None) if isinstance(node.op, Elemwise) else None
        if isinstance(scalar, ps.Switch) and node.inputs[0] in depends:
            as_conditions[node.inputs[0]] = as_conditions.get(node.inputs[0], True) and not _support_indicator(node)
    for node in nodes:
        scalar = getattr(node.op, "scalar_op", None) if isinstance(node.op, Elemwise) else None
        if scalar is None or not any(i in depends for i in node.inputs):
            continue
        name = type(scalar).__name__
        if isinstance(scalar, ps.Switch) and node.inputs[0] in depends and not _support_indicator(node) \
                and not _almost_constant(node.inputs[0], depends):
            return f"a switch on `{_describe(node.inputs[0])}`"
        if isinstance(scalar, _COMPARISONS) and not isinstance(scalar, _POINTWISE) \
                and node.outputs[0] not in as_conditions \
                and node.outputs[0] not in conditions and _used_as_number(node.outputs[0], nodes):
            return f"`{name.lower()}` of a continuous variable used as a number"
        if name in _ROUNDINGS or (isinstance(scalar, ps.Cast) and not str(scalar.o_type).startswith("float")):
            return f"`{name.lower()}` of a continuous variable"
    return ""


def _almost_constant(condition, depends) -> bool:
    """A condition that holds everywhere but on a set of measure zero, or nowhere but on one (``x == 0``,
    ``x != 0`` and boolean logic of those): a switch on it makes no jump that could hide mass."""
    owner = condition.owner
    if condition not in depends:
        return True
    if owner is None or not isinstance(owner.op, Elemwise):
        return False
    if isinstance(owner.op.scalar_op, _POINTWISE):
        return True
    return isinstance(owner.op.scalar_op, _LOGIC) and all(_almost_constant(i, depends) for i in owner.inputs)


def _support_indicator(node) -> bool:
    """A switch with a ``-inf`` branch: zero density on one side (a support's bound); or with a ``+inf`` or NaN
    branch: no density there at all, not a finite jump (pmz's checks for non-finite values flag it)."""
    return any(_is_non_finite(branch) for branch in node.inputs[1:])


def _is_non_finite(var) -> bool:
    while var.owner is not None and type(var.owner.op).__name__ in ("Alloc", "DimShuffle", "Second", "Elemwise") \
            and (type(var.owner.op).__name__ != "Elemwise" or type(var.owner.op.scalar_op).__name__ == "Second"):
        var = var.owner.inputs[-1]
    if isinstance(var, Constant):
        value = np.asarray(var.data, dtype=float)
        return value.size > 0 and not bool(np.any(np.isfinite(value)))
    return False


def _used_as_number(var, nodes) -> bool:
    """Whether a boolean ``var`` feeds anything other than a condition: a switch's condition, a parameter check's,
    or an op with boolean results (logic, ``any``/``all``, reshapes) that are themselves only used as conditions."""
    for node in nodes:
        if var not in node.inputs:
            continue
        scalar = getattr(node.op, "scalar_op", None) if isinstance(node.op, Elemwise) else None
        if isinstance(scalar, ps.Switch) and node.inputs[0] is var and var not in node.inputs[1:]:
            continue
        if isinstance(node.op, CheckAndRaise) and var not in node.inputs[:1]:
            continue
        if all(out.dtype == "bool" for out in node.outputs):  # logic, reductions, reshapes of booleans
            if not any(_used_as_number(out, nodes) for out in node.outputs):
                continue
        return True
    return False


def _describe(var) -> str:
    """A short name for a condition: its op (``gt``, ``and``, ...)."""
    if var.owner is None:
        return var.name or "a variable"
    op = var.owner.op
    scalar = getattr(op, "scalar_op", None)
    return type(scalar if scalar is not None else op).__name__.lower()
