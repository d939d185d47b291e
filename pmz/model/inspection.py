"""What pmz reads off a PyMC model before compiling it: improper priors and the observed data.

The observed data are read once, without compiling anything (:func:`observed_values`), and serve twice: data
holding NaN or inf are refused with the variable's name (:func:`non_finite_observed_names`), and their size sets
how many particles one compiled call evaluates (:func:`default_block_size`).
"""

from __future__ import annotations

import numpy as np
from pytensor.graph.basic import Constant

__all__ = ["improper_prior_names", "observed_values", "non_finite_observed_names", "default_block_size"]


def improper_prior_names(model) -> list[str]:
    """Free variables with an improper prior (``pm.Flat``, ``pm.HalfFlat``): paths from the prior refuse them."""
    from pymc.distributions.continuous import FlatRV, HalfFlatRV

    return [rv.name for rv in model.free_RVs if isinstance(rv.owner.op, FlatRV | HalfFlatRV)]


def data_value(data):
    """The value of data (an observed variable's, a distribution's constant parameter) without compiling anything
    (constants, shared data), or None."""
    if isinstance(data, Constant):
        return data.data
    if hasattr(data, "get_value"):
        return data.get_value(borrow=True)
    try:  # an expression of data: evaluated once with the Python linker (no C or Numba compilation)
        return data.eval(mode="FAST_COMPILE")
    except Exception:
        return None


def observed_values(model) -> dict:
    """``{observed variable name: its data}``, read once without compiling (None where it cannot be read)."""
    return {rv.name: data_value(model.rvs_to_values[rv]) for rv in model.observed_RVs}


def non_finite_observed_names(observed: dict) -> list[str]:
    """Observed variables whose data hold NaN or inf (e.g. set by ``pm.set_data``), or a numpy masked array.

    Checked before compiling: the C backend would return a NaN log density, the Numba backend refuses the
    masked array outright; either way the user should hear which variable's data are at fault. Data that
    could not be read (they depend on other variables) are left to the start check.
    """
    return [
        name
        for name, value in observed.items()
        if value is not None
        and (np.ma.isMaskedArray(value) or not np.all(np.isfinite(np.asarray(value, dtype=float))))
    ]


def default_block_size(observed: dict, dim: int) -> int:
    """Rows per compiled call: keep the per-observation intermediates of a block near 1 MB (cache sized).

    Large batches of a model with many observations are memory-bound; evaluating them block by block
    (each block one vectorised call) is several times faster than one huge call.
    """
    n_obs = sum(int(np.size(value)) for value in observed.values())
    per_particle = max(n_obs + dim, 1)
    block = 2 ** int(np.floor(np.log2(max(131072 // per_particle, 1))))
    return int(np.clip(block, 32, 4096))
