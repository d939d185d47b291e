"""Posterior draws on the flat value space -> the posterior group ``pm.sample`` would have written.

Samplers in pmz hold equally weighted posterior draws as flat unconstrained vectors. :func:`posterior_dataset`
turns an array of them, ``(chain, draw, dim)``, into an ``xarray.Dataset`` with every free random variable on its
own (constrained) scale, under the model's names, discrete ones as integers, and every ``pm.Deterministic``,
with the model's dims and coords (``name_dim_0``, ... where a variable has none). ArviZ's ``summary``,
``plot_trace``, ``ess``, ``rhat`` take it as they take ``idata.posterior`` from ``pm.sample``.

The values are computed by ONE compiled function of the batch ``X (n, dim)`` (the single-point graphs of the
inverse value transforms and of the deterministics, vectorised with ``vectorize_graph``), compiled in the
model's backend and cached per compiled model. (``pm.compute_deterministics`` calls its function once per draw,
and draws an observed variable inside a deterministic at random where ``pm.sample`` and pmz use its data.)
"""

from __future__ import annotations

import weakref

import numpy as np
import pytensor.tensor as pt
import xarray as xr
from pymc.backends.arviz import coords_and_dims_for_inferencedata, dict_to_dataset
from pytensor.graph.replace import graph_replace, vectorize_graph

from .backend import ONE_SHOT_MODE

__all__ = ["posterior_dataset", "posterior_from_flat"]

# compiled model -> (variable names, compiled function X (n, dim) -> their values (n, *shape))
_FUNCTIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _posterior_function(compiled):
    """``(names, fn)``: the free RVs (constrained) and the deterministics of ``compiled.model`` as one compiled
    function of the flat batch ``X (n, dim)``, each output ``(n, *shape)`` in the variable's own dtype."""
    cached = _FUNCTIONS.get(compiled)
    if cached is not None:
        return cached
    model = compiled.model
    variables = list(model.free_RVs) + list(model.deterministics)
    names = [v.name for v in variables]
    # In terms of the value variables (as pm.sample's posterior is): inverse transforms for the free RVs, observed
    # RVs inside deterministics replaced by their data. Then each value variable is a slice of one flat vector.
    single = model.replace_rvs_by_values(variables)
    x = pt.vector("x", dtype="float64")
    single = graph_replace(single, compiled._value_replacements(x), strict=False)
    X = compiled._X
    batched = vectorize_graph(single, replace={x: X})
    outputs = []
    for one, many in zip(single, batched):
        if many.ndim == one.ndim:  # does not depend on the draws (a constant or data only): one copy per draw
            many = pt.broadcast_to(many, (X.shape[0], *(many.shape[i] for i in range(many.ndim))))
        outputs.append(many)
    # called once per result: the quick Python linker (see pmz.model.backend.ONE_SHOT_MODE)
    fn = compiled._compile_inputs([X], outputs, mode=ONE_SHOT_MODE)
    _FUNCTIONS[compiled] = names, fn
    return names, fn


def posterior_dataset(compiled, draws, *, chain_dim: bool = True) -> xr.Dataset:
    """Flat posterior draws -> the posterior ``xarray.Dataset`` of the model's variables.

    Parameters
    ----------
    compiled : pmz.model.CompiledModel
    draws : array ``(n_chains, n_draws, dim)``
        Equally weighted posterior draws in the flat unconstrained space (:mod:`pmz.model.points`).
        With ``chain_dim=False``: ``(n_draws, dim)``, one chain.
    chain_dim : bool
        Whether ``draws`` has the leading chain axis. Without it the draws are taken as one chain; the dataset
        has a ``chain`` dim (of length 1) either way.

    Returns
    -------
    xarray.Dataset
        Dims ``("chain", "draw", *variable dims)``: every free random variable (constrained, its own name and
        dtype) and every ``pm.Deterministic``, with the model's dims and coords, as in ``pm.sample``'s posterior.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pmz.model import CompiledModel
    >>> with pm.Model(coords={"group": ["a", "b"]}) as m:
    ...     sigma = pm.HalfNormal("sigma", 1.0)
    ...     theta = pm.Normal("theta", 0.0, sigma, dims="group")
    ...     _ = pm.Deterministic("spread", theta[1] - theta[0])
    >>> cm = CompiledModel(m)
    >>> draws = cm.from_constrained({"sigma": np.ones(6), "theta": np.zeros((6, 2))}).reshape(2, 3, cm.dim)
    >>> ds = posterior_dataset(cm, draws)
    >>> dict(ds.sizes), ds["theta"].dims
    ({'chain': 2, 'draw': 3, 'group': 2}, ('chain', 'draw', 'group'))
    """
    draws = np.asarray(draws, dtype=np.float64)
    if not chain_dim:
        draws = draws[np.newaxis]
    if draws.ndim != 3 or draws.shape[2] != compiled.dim:
        expected = "(n_chains, n_draws, dim)" if chain_dim else "(n_draws, dim)"
        got = draws.shape if chain_dim else draws.shape[1:]
        raise ValueError(f"pmz: draws must have shape {expected} with dim={compiled.dim}, got {got}")
    n_chains, n_draws = draws.shape[:2]
    if n_chains == 0 or n_draws == 0:
        raise ValueError(f"pmz: no draws to convert (n_chains={n_chains}, n_draws={n_draws})")
    X = draws.reshape(n_chains * n_draws, compiled.dim)
    mask = compiled.layout.discrete_mask
    if mask.any():  # discrete sites hold integers; rounding guards the cast to the integer dtype
        X = X.copy()
        X[:, mask] = np.rint(X[:, mask])
    names, fn = _posterior_function(compiled)
    values = compiled._blocked(fn, X, len(names))
    data = {
        name: np.array(value).reshape(n_chains, n_draws, *np.shape(value)[1:]) for name, value in zip(names, values)
    }
    coords, dims = coords_and_dims_for_inferencedata(compiled.model)
    return dict_to_dataset(data, coords=coords, dims={name: dims[name] for name in names if name in dims})


def posterior_from_flat(compiled, X, chain) -> xr.Dataset:
    """Flat draws with a chain label per row -> :func:`posterior_dataset`.

    Parameters
    ----------
    compiled : pmz.model.CompiledModel
    X : array ``(n, dim)``
        Equally weighted posterior draws in the flat space.
    chain : int array ``(n,)``
        The chain of each row. Rows of one chain keep their order; chains of unequal length are trimmed to the
        shortest, keeping each chain's LAST draws (in a chain run in time order, the ones furthest from its start).
        The ``chain`` coordinate holds the labels (sorted).
    """
    X = np.asarray(X, dtype=np.float64)
    chain = np.asarray(chain)
    if X.ndim != 2 or X.shape[1] != compiled.dim:
        raise ValueError(f"pmz: X must have shape (n, {compiled.dim}), got {X.shape}")
    if chain.shape != (X.shape[0],):
        raise ValueError(f"pmz: chain must have shape ({X.shape[0]},) (one label per row of X), got {chain.shape}")
    if chain.size and not np.issubdtype(chain.dtype, np.integer):
        if not np.all(np.equal(np.mod(chain, 1), 0)):
            raise ValueError("pmz: chain must hold integer labels")
        chain = chain.astype(np.int64)
    labels, counts = np.unique(chain, return_counts=True)
    if labels.size == 0:
        raise ValueError("pmz: no draws to convert")
    n_draws = int(counts.min())
    rows = [np.flatnonzero(chain == label)[-n_draws:] for label in labels]
    ds = posterior_dataset(compiled, X[np.stack(rows)])
    return ds.assign_coords(chain=labels)
