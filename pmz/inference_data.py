"""The one place that knows which ArviZ is installed: InferenceData (ArviZ 0.2x) or ``xarray.DataTree`` (ArviZ 1).

PyMC 5 returns an ``arviz.InferenceData`` from ``pm.sample``; PyMC 6 (ArviZ 1) returns an ``xarray.DataTree``
with the same groups as children. pmz reads both and writes the one the installed ArviZ works with:

* :data:`RESULT_BASE`: the class an :class:`pmz.EvidenceResult` extends (``az.InferenceData`` or
  ``xr.DataTree``);
* :func:`group_names`, :func:`get_group`, :func:`posterior_group`: a result's or a ``pm.sample`` trace's groups
  as ``xarray.Dataset``;
* :func:`build`: groups -> an object of a given class; :func:`read_netcdf`: a file -> ``{name: Dataset}``;
* :func:`mcse_mean`, :func:`ess_bulk`: ArviZ's diagnostics on a plain ``(chain, draw)`` array.

Everything else in pmz goes through these, so that ArviZ's next change is one change here.
"""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import xarray as xr

__all__ = [
    "ARVIZ_1",
    "RESULT_BASE",
    "is_inference_data",
    "group_names",
    "get_group",
    "posterior_group",
    "build",
    "read_netcdf",
    "mcse_mean",
    "ess_bulk",
]

ARVIZ_1 = int(az.__version__.split(".")[0]) >= 1

if ARVIZ_1:
    RESULT_BASE = xr.DataTree
else:  # pragma: no cover - exercised on the PyMC 5 stack
    RESULT_BASE = az.InferenceData


def is_inference_data(obj) -> bool:
    """A ``pm.sample`` result or a pmz result: an ``InferenceData`` (ArviZ 0.2x) or a ``DataTree`` (ArviZ 1)."""
    if isinstance(obj, xr.DataTree):
        return True
    inference_data = getattr(az, "InferenceData", None) if not ARVIZ_1 else None
    return inference_data is not None and isinstance(obj, inference_data)


def group_names(data) -> list[str]:
    """Names of the groups (``"posterior"``, ``"sample_stats"``, ...) of an InferenceData or DataTree."""
    if isinstance(data, xr.DataTree):
        return list(data.children)
    return list(data.groups())


def get_group(data, name: str) -> xr.Dataset | None:
    """Group ``name`` of an InferenceData or DataTree as an ``xarray.Dataset`` (None when there is none)."""
    if isinstance(data, xr.DataTree):
        return data[name].to_dataset() if name in data.children else None
    return getattr(data, name, None) if name in data.groups() else None


def posterior_group(data) -> xr.Dataset:
    """The posterior draws of a ``pm.sample`` trace (InferenceData or DataTree) or of its posterior node alone
    (``idata["posterior"]`` on PyMC 6), as an ``xarray.Dataset``."""
    group = get_group(data, "posterior")
    if group is None and isinstance(data, xr.DataTree) and data.data_vars:
        group = data.to_dataset()
    if group is None:
        raise ValueError("pmz: the posterior draws have no 'posterior' group")
    return group


def build(cls, groups: dict[str, xr.Dataset]):
    """An object of ``cls`` (a subclass of :data:`RESULT_BASE`) holding ``groups``."""
    if ARVIZ_1:
        return cls.from_dict({f"/{name}": ds for name, ds in groups.items()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # ArviZ 0.2x: "group not a default group"
        return cls(**groups)


def read_netcdf(path) -> dict[str, xr.Dataset]:
    """The groups of a netcdf file written by ``to_netcdf`` of an InferenceData or DataTree, loaded in memory."""
    if ARVIZ_1:
        with xr.open_datatree(path) as tree:
            return {name: tree[name].to_dataset().load() for name in tree.children}
    idata = az.from_netcdf(path)
    return {name: getattr(idata, name).load() for name in idata.groups()}


def mcse_mean(values) -> float:
    """ArviZ's Monte Carlo standard error of the mean of a ``(chain, draw)`` array (one chain allowed)."""
    values = np.atleast_2d(np.asarray(values, dtype=float))
    return float(np.asarray(az.mcse(values, method="mean")).ravel()[0])


def ess_bulk(values) -> float:
    """ArviZ's rank-normalised bulk effective sample size of a ``(chain, draw)`` array."""
    values = np.atleast_2d(np.asarray(values, dtype=float))
    return float(np.asarray(az.ess(values, method="bulk")).ravel()[0])
