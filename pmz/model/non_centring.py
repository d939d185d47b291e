"""Non-centring: a Normal free variable whose scale depends on other free variables, written as its location plus its
scale times a standard Normal (the default's non-centred route, :mod:`pmz.auto.non_centred_route`).

Where ``x ~ Normal(mu, sigma)`` and ``sigma`` is a function of other free variables (Neal's funnel: ``v ~ N(0, 3)``,
``x_i ~ N(0, exp(v / 2))``; a centred hierarchical model), the posterior of ``(v, x)`` narrows into a neck as
``sigma`` shrinks: no Student-t fits it and chains diverge there. Writing

    x = mu + sigma z,    z ~ Normal(0, 1)

gives the same model: ``x`` has the same distribution given its parents, so ``p(y) = int p(y | x) p(x) dx =
int p(y | mu + sigma z) N(z; 0, 1) dz`` and log Z is unchanged, with no Jacobian to add (the model is rewritten,
not its density's coordinates). Given the scales, ``z`` is a priori independent of them, and where the data say
little about ``x`` the posterior of ``(v, z)`` is close to the prior's: the neck is gone (Papaspiliopoulos, Roberts
and Skold 2007, Statistical Science 22).

:func:`funnel_children` reads from the model's graph which variables qualify; :func:`non_centred_model` rewrites
them (``pymc.model.fgraph``): each becomes a ``pm.Deterministic`` of its own name, beside a new free variable
``<name>_z``.
"""

from __future__ import annotations

import inspect

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.model.fgraph import (
    ModelFreeRV,
    fgraph_from_model,
    model_deterministic,
    model_free_rv,
    model_from_fgraph,
)
from pytensor.tensor.random.basic import NormalRV

try:  # PyTensor 3
    from pytensor.graph.traversal import ancestors
except ImportError:  # PyTensor 2
    from pytensor.graph.basic import ancestors

__all__ = ["funnel_children", "non_centred_model", "Z_SUFFIX"]

Z_SUFFIX = "_z"  # the standard Normal beside a non-centred variable x is named x + Z_SUFFIX
_NAMED_OPS = "name" in inspect.signature(model_free_rv).parameters  # PyMC 6 names the op; PyMC 5 the variable


def funnel_children(model) -> dict:
    """``{name: (names of the free variables its scale depends on)}`` for each free ``Normal`` variable without a
    value transform, of known shape, whose scale depends on other free variables; empty where there is none."""
    free = set(model.free_RVs)
    names = {rv.name for rv in model.free_RVs} | {v.name for v in model.deterministics} | set(model.named_vars)
    children = {}
    for rv in model.free_RVs:
        if not isinstance(rv.owner.op, NormalRV) or model.rvs_to_transforms.get(rv) is not None:
            continue
        if None in rv.type.shape or rv.name + Z_SUFFIX in names:
            continue
        sigma = rv.owner.inputs[-1]
        parents = tuple(a.name for a in ancestors([sigma]) if a in free)
        if parents:
            children[rv.name] = parents
    return children


def non_centred_model(model, names) -> pm.Model:
    """A new model in which each free variable named in ``names`` (Normal, see :func:`funnel_children`) is
    ``pm.Deterministic(name, mu + sigma * z)`` with ``z = pm.Normal(name + Z_SUFFIX, 0, 1)`` of its shape; every
    other variable, the data and the observed variables as they were. The evidence is the same (module docstring):
    ``z``'s density keeps the written Normal's check ``sigma > 0`` (a scale that can be negative has zero density
    there in the written model, and would not in ``mu + sigma z`` alone)."""
    fgraph, _ = fgraph_from_model(model, inlined_views=True)
    nodes = [node for node in fgraph.apply_nodes if isinstance(node.op, ModelFreeRV) and _name(node) in names]
    for node in nodes:
        rv, value, *dims = node.inputs
        name = _name(node)
        mu, sigma = rv.owner.inputs[-2], rv.owner.inputs[-1]
        shape = tuple(int(s) for s in rv.type.shape)
        # the written model's density is zero where sigma <= 0 (PyMC's check on the Normal's scale); z's scale
        # carries the same check, or x = mu + sigma z would give mass to sigma < 0 that the model does not have
        unit = check_parameters(np.ones((), dtype=rv.dtype), pt.all(sigma > 0), msg="sigma > 0")
        z_rv = pm.Normal.dist(mu=np.zeros((), dtype=rv.dtype), sigma=unit, shape=shape)
        z_value = z_rv.type(name=name + Z_SUFFIX)
        x = mu + sigma * _free(z_rv, z_value, name + Z_SUFFIX, dims)
        fgraph.replace(node.outputs[0], _deterministic(x, name, dims), import_missing=True)
    return model_from_fgraph(fgraph, mutate_fgraph=True)


def _name(node) -> str:
    return node.op.name if _NAMED_OPS else node.outputs[0].name


def _free(rv, value, name, dims):
    if _NAMED_OPS:
        return model_free_rv(rv, value, None, name, *dims)
    rv.name = name
    return model_free_rv(rv, value, None, *dims)


def _deterministic(x, name, dims):
    if _NAMED_OPS:
        return model_deterministic(x, name, *dims)
    x.name = name
    return model_deterministic(x, *dims)
