"""The branches of a mixture in a model's log density, read from its PyTensor graph.

A log density with a log-sum-exp over components (``pm.Mixture``, ``pm.NormalMixture``, ``pm.math.logsumexp`` or
``pt.logaddexp`` in a ``pm.Potential``),

    log p(x) = a(x) + log sum_k exp(f_k(x)),

has its peaks where one component dominates, near the peaks of its *branches* ``a(x) + f_k(x)``. A component much
narrower than the rest is dominant only in a small ball around its centre: where the main mode has sd 1 and the
component sd ``1 / r`` at distance ``d``, the ball is about ``d / r`` wide, and no climb from prior draws, chain or
SMC particle reaches it (a bump ``r = 1000`` times narrower holding 30% of the mass went unseen). Its branch alone is
a smooth function whose peak is the component's centre, and a climb of the branch reaches it from anywhere.

:func:`branch_densities` finds every such node in the model's batched log density, the graph
:class:`pmz.model.pymc.CompiledModel` compiles (PyTensor 3's ``LogSumExp`` and ``LogAddExp``, batched as
``Blockwise``, and ``log(sum(exp(z)))`` and ``log(exp(a) + exp(b) + ...)`` as PyTensor 2 and users write them),
and compiles one function of the flat points whose column ``j`` is the log density with one node replaced by one of
its branches (every other such node kept, written in the stable form
``m + log sum exp(z - m)``). It is a search aid only (:mod:`pmz.runners.branch_search`): no estimate is built on
it, and a branch it cannot read is a mode the other checks must find. Compiled with the Python linker and no
rewrites (nothing to wait for: a compile with rewrites took 0.5-1.5 s, more than the search): its calls are few.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor import scalar as ps
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors, io_toposort
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.math import Sum

from .backend import UNREWRITTEN_MODE

__all__ = ["BranchDensities", "branch_densities", "MAX_BRANCHES"]

MAX_BRANCHES = 16  # branches in all (over every node); a node with more components than are left is not branched
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class _Node:
    """A log-sum-exp in the graph: its output ``out``, the stacked terms ``z`` with the summed axes last and
    flattened into one of size ``k``, and the DimShuffle (keepdims) between the sum and the log, if any."""

    out: object
    z: object
    k: int
    expand: object = None

    def branch(self, j):
        value = self.z[..., j]
        return self.expand(value) if self.expand is not None else value

    def stable(self):
        top = pt.max(self.z, axis=-1, keepdims=True)
        top = pt.switch(pt.isfinite(top), top, 0.0)
        value = pt.log(pt.sum(pt.exp(self.z - top), axis=-1)) + top[..., 0]
        return self.expand(value) if self.expand is not None else value


class BranchDensities:
    """Column ``j`` of :meth:`__call__` ``(n, dim) -> (n, n_branches)``: the log density with node ``nodes[j]``
    replaced by its branch ``branches[j]`` (module docstring); ``labels[j]`` says which in words."""

    def __init__(self, fn, labels):
        self._fn, self.labels = fn, tuple(labels)

    @property
    def n_branches(self) -> int:
        return len(self.labels)

    def __call__(self, X) -> np.ndarray:
        X = np.atleast_2d(np.asarray(X, dtype=float))
        with np.errstate(all="ignore"):
            out = np.asarray(self._fn(X), dtype=float).reshape(X.shape[0], self.n_branches)
        return np.where(np.isnan(out), -np.inf, out)


def branch_densities(compiled) -> BranchDensities | None:
    """The branch log densities of ``compiled`` (a :class:`pmz.model.pymc.CompiledModel`), or None where its log
    density has no log-sum-exp of the free variables that can be read (or the graph cannot be read). Cached."""
    try:
        cached = _CACHE.setdefault(compiled, {})
    except TypeError:
        cached = {}
    if "fn" not in cached:
        try:
            cached["fn"] = _build(compiled)
        except Exception:  # noqa: BLE001 - an unreadable graph claims nothing: the other searches still run
            cached["fn"] = None
    return cached["fn"]


def _build(compiled) -> BranchDensities | None:
    X = compiled._X  # the batched graphs CompiledModel compiles: no second vectorisation to wait for
    total = compiled._lp + compiled._ll
    nodes = _outermost(_find(total, X))
    if not nodes:
        return None
    columns, labels = [], []
    budget = MAX_BRANCHES
    for n, node in enumerate(nodes):
        if node.k > budget:
            continue
        budget -= node.k
        for j in range(node.k):
            replace = {other.out: (node.branch(j) if other is node else other.stable()) for other in nodes}
            (column,) = graph_replace([total], replace, strict=False)
            columns.append(pt.as_tensor(column).astype("float64"))
            labels.append(f"component {j} of log-sum-exp {n}")
    if not columns:
        return None
    fn = pytensor.function([X], pt.stack(columns, axis=1), mode=UNREWRITTEN_MODE,
                           on_unused_input="ignore")
    return BranchDensities(fn, labels)


def _find(total, X) -> list:
    """Every log-sum-exp node of the batched ``total`` whose terms depend on the points ``X``, as :class:`_Node`
    (summed axes of known size only)."""
    found = []
    for node in _nodes(total):
        read = _read(node)
        if read is None:
            continue
        z, axes, expand, out = read
        if X not in ancestors([z]):
            continue
        sizes = [z.type.shape[a] for a in axes]
        if any(s is None for s in sizes):
            continue
        k = int(np.prod(sizes))
        if k < 2:
            continue
        rest = [a for a in range(z.ndim) if a not in axes]
        moved = z.transpose(*rest, *axes) if axes != tuple(range(z.ndim - len(axes), z.ndim)) else z
        flat = moved.reshape((*[moved.shape[i] for i in range(len(rest))], k), ndim=len(rest) + 1)
        found.append(_Node(out, flat, k, expand))
    return found


def _nodes(total):
    inputs = [v for v in ancestors([total]) if v.owner is None]
    return io_toposort(inputs, [total])


def _read(node):
    """``(z, summed axes, keepdims DimShuffle or None, output)`` where ``node`` is a log-sum-exp, else None."""
    op = getattr(node.op, "core_op", node.op)  # a Blockwise of PyTensor 3's ops, batched over leading axes
    name = type(op).__name__
    if name == "LogSumExp":
        z = node.inputs[0]
        core = len(node.op.inputs_sig[0]) if op is not node.op else z.ndim  # the core op's dimensions of z
        lead = z.ndim - core
        axes = tuple(range(lead, z.ndim)) if op.axis is None else tuple(sorted(lead + a % core for a in op.axis))
        return z, axes, None, node.outputs[0]
    if name == "LogAddExp":
        return _stacked(node.inputs), (0,), None, node.outputs[0]
    if not _is_elemwise(node, ps.Log):
        return None
    inner = node.inputs[0].owner
    expand = None
    if inner is not None and isinstance(inner.op, DimShuffle) and inner.inputs[0].owner is not None \
            and isinstance(inner.inputs[0].owner.op, Sum):
        expand, inner = inner.op, inner.inputs[0].owner
    if inner is None:
        return None
    if isinstance(inner.op, Sum):
        exp = inner.inputs[0].owner
        if exp is None or not _is_elemwise(exp, ps.Exp):
            return None
        z = exp.inputs[0]
        axes = tuple(range(z.ndim)) if inner.op.axis is None else tuple(sorted(inner.op.axis))
        return z, axes, expand, node.outputs[0]
    if expand is None and _is_elemwise(inner, ps.Add) and all(
            i.owner is not None and _is_elemwise(i.owner, ps.Exp) for i in inner.inputs):
        return _stacked([i.owner.inputs[0] for i in inner.inputs]), (0,), None, node.outputs[0]
    return None


def _stacked(terms):
    terms = pt.broadcast_arrays(*terms)
    return pt.stack(terms)


def _is_elemwise(node, scalar_class) -> bool:
    return isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, scalar_class)


def _outermost(nodes) -> list:
    """Nodes none of whose terms contain another node's output (a nested log-sum-exp is left as it is)."""
    outs = {node.out for node in nodes}
    return [node for node in nodes if not (outs - {node.out}) & set(ancestors([node.z]))]
