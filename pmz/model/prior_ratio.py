"""Log ratios of alternative priors to a model's own priors, at a batch of posterior draws, in one compiled call.

For free variables ``v`` whose prior ``p(v | parents)`` is replaced by ``p'(v | ...)`` (a ``pm.XXX.dist(...)``),
the joint prior changes by the factor

    p'(theta) / p(theta) = prod_v p'(v) / p(v | parents(v))

(every other variable's conditional prior is unchanged, also that of the children of ``v``). Both densities are
taken on the constrained value of ``v`` (the same measure, so the value transform's Jacobian cancels).
:func:`prior_terms_function` builds ``log p(v | parents)`` and ``log p'(v)`` of each replaced variable as ONE
compiled function of the flat batch ``X (n, dim)`` (which gives the parents) and of the variables' constrained
values ``V_v (n, *shape)``, given separately so that the same function also tells whether draws of ``p'`` lie in
the support of ``p`` (:func:`pmz.prior_sensitivity` refuses a replacement that puts mass where ``p`` has none).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace, vectorize_graph

from .backend import ONE_SHOT_MODE
from .graphs import batchable

__all__ = ["evaluate", "prior_terms_function"]


def _summed(logp, dtype="float64"):
    return pt.as_tensor(logp).astype(dtype).sum()


def prior_terms_function(compiled, replacements: dict):
    """``fn(X, *V) -> [old_1, new_1, old_2, new_2, ...]``, each ``(n,)``.

    Parameters
    ----------
    compiled : pmz.model.CompiledModel
    replacements : dict of free variable name -> distribution (``pm.XXX.dist(...)``)
        The alternative prior of each variable; it may depend on other free variables of the model (their
        values at each draw are used).

    Returns
    -------
    callable
        ``fn(X, V_1, V_2, ...)`` with ``X (n, dim)`` flat draws (the parents' values) and ``V_k (n, *shape_k)`` the
        constrained values at which the k-th replaced variable's densities are evaluated; it returns
        ``old_k = log p(V_k | parents(X))`` and ``new_k = log p'(V_k)`` summed over each variable's elements,
        ``-inf`` where a value is outside a support or a parameter is invalid.
    """
    model = compiled.model
    rvs = {rv.name: rv for rv in model.free_RVs}
    x = compiled._x
    value_of_x = compiled._value_replacements(x)
    singles, batched_inputs, outputs = [], [], []
    for name, dist in replacements.items():
        rv = rvs[name]
        v = rv.type()  # one constrained value of the variable
        v.name = f"{name}_value"
        old = _summed(pm.logp(rv, v))
        new = _summed(pm.logp(dist, v))
        singles += [old, new]
        batched_inputs.append((v, pt.tensor(dtype=rv.dtype, shape=(None, *rv.type.shape), name=f"{name}_batch")))
    # parents (and any model variable an alternative refers to) as the draws' values: RVs -> value variables
    # (value transforms undone) -> slices of the flat vector x
    singles = model.replace_rvs_by_values(singles)
    singles = graph_replace(singles, value_of_x, strict=False)
    singles = batchable(singles)
    X = compiled._X
    replace = {x: X, **dict(batched_inputs)}
    batched = vectorize_graph(singles, replace=replace)
    zeros = pt.zeros((X.shape[0],), dtype="float64")
    outputs = [b + zeros for b in batched]  # a term that depends on nothing batched still gets one entry per draw
    inputs = [X] + [b for _, b in batched_inputs]
    return compiled._compile_inputs(inputs, outputs, mode=ONE_SHOT_MODE)


def evaluate(fn, X, values: list) -> np.ndarray:
    """``fn(X, *values)`` -> ``(n, 2, k)``: ``[:, 0, j]`` the model's and ``[:, 1, j]`` the alternative's log prior of
    the j-th replaced variable."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    out = [np.asarray(o, dtype=float) for o in fn(X, *values)]
    return np.stack(out, axis=1).reshape(X.shape[0], -1, 2).transpose(0, 2, 1)
