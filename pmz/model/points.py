"""The flat value space: one float vector per particle, and the way back to named PyMC variables.

Every sampler in pmz works on particles ``X`` of shape ``(n_particles, dim)`` in PyMC's *unconstrained value
space*: the value variables of the model's free random variables (``sigma_log__``, ``p_logodds__``, ...), each
raveled in C order and concatenated in the order of ``model.value_vars``. This module is the only place that
knows variable names and shapes; everything else sees plain arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["VarBlock", "FlatLayout", "layout_from_model"]


@dataclass(frozen=True)
class VarBlock:
    """Where one value variable lives in the flat vector.

    Attributes
    ----------
    value_name : str
        Name of the PyMC value variable (transformed name, e.g. ``"sigma_log__"``).
    rv_name : str
        Name of the random variable it belongs to (e.g. ``"sigma"``).
    shape : tuple of int
        Shape of the value variable for one particle.
    start, stop : int
        Its slice ``x[start:stop]`` in the flat vector.
    discrete : bool
        Whether the variable is discrete (its entries hold exact integer values in the float64 vector).
    values : tuple of float or None
        For a discrete variable with a small finite support (Bernoulli, Categorical, bounded DiscreteUniform or
        Binomial with a fixed n, at most 64 values), the values each entry can take; None otherwise.
    bounds : tuple of float or None
        For a discrete variable, the smallest and largest value an entry can take where pmz can read them
        (``-inf`` / ``inf`` for an unbounded side; None for a continuous variable). Samplers never propose
        values outside them (an index variable there would index out of range).
    """

    value_name: str
    rv_name: str
    shape: tuple[int, ...]
    start: int
    stop: int
    discrete: bool = False
    values: tuple[float, ...] | None = None
    bounds: tuple[float, float] | None = None

    @property
    def size(self) -> int:
        return self.stop - self.start


class FlatLayout:
    """Map between flat particle arrays and dicts of named value-space arrays.

    Parameters
    ----------
    blocks : sequence of VarBlock
        Contiguous blocks, in order, covering ``range(dim)``.
    """

    def __init__(self, blocks):
        self.blocks = tuple(blocks)
        self.dim = self.blocks[-1].stop if self.blocks else 0

    @property
    def discrete_mask(self) -> np.ndarray:
        """Boolean ``(dim,)``: which coordinates are discrete sites."""
        mask = np.zeros(self.dim, dtype=bool)
        for b in self.blocks:
            mask[b.start : b.stop] = b.discrete
        return mask

    def discrete_sites(self) -> tuple[list[int], list]:
        """Discrete coordinates and, for each, its finite value set (or None: a large or unbounded support)."""
        sites, values = [], []
        for b in self.blocks:
            if b.discrete:
                sites += list(range(b.start, b.stop))
                values += [None if b.values is None else np.asarray(b.values, dtype=float)] * b.size
        return sites, values

    def discrete_bounds(self) -> list[tuple[float, float]]:
        """For each discrete coordinate (in :meth:`discrete_sites` order), the (low, high) of its support."""
        out = []
        for b in self.blocks:
            if b.discrete:
                out += [b.bounds or (-np.inf, np.inf)] * b.size
        return out

    @property
    def value_names(self) -> list[str]:
        return [b.value_name for b in self.blocks]

    @property
    def rv_names(self) -> list[str]:
        return [b.rv_name for b in self.blocks]

    def block_of(self, name: str) -> VarBlock:
        """The block of a variable, by value or random-variable name."""
        for b in self.blocks:
            if name in (b.value_name, b.rv_name):
                return b
        raise KeyError(f"no variable named {name!r} in the flat layout (have {self.rv_names})")

    def to_point(self, x) -> dict[str, np.ndarray]:
        """One flat vector ``(dim,)`` -> ``{value_name: array of the variable's shape}``."""
        x = np.asarray(x, dtype=float)
        if x.shape != (self.dim,):
            raise ValueError(f"expected a flat vector of shape ({self.dim},), got {x.shape}")
        return {b.value_name: x[b.start : b.stop].reshape(b.shape) for b in self.blocks}

    def to_points(self, X) -> dict[str, np.ndarray]:
        """A batch ``(n, dim)`` -> ``{value_name: array (n, *shape)}``."""
        X = np.asarray(X, dtype=float)
        n = X.shape[0]
        return {b.value_name: X[:, b.start : b.stop].reshape((n, *b.shape)) for b in self.blocks}

    def from_point(self, point: dict) -> np.ndarray:
        """``{value_name: array}`` -> flat vector ``(dim,)``. Extra keys are ignored."""
        x = np.empty(self.dim)
        for b in self.blocks:
            if b.value_name not in point:
                raise KeyError(f"point has no value for {b.value_name!r}")
            x[b.start : b.stop] = np.asarray(point[b.value_name], dtype=float).reshape(-1)
        return x

    def from_points(self, points: dict) -> np.ndarray:
        """``{value_name: array (n, *shape)}`` -> batch ``(n, dim)``."""
        first = np.asarray(points[self.blocks[0].value_name])
        n = first.shape[0]
        X = np.empty((n, self.dim))
        for b in self.blocks:
            X[:, b.start : b.stop] = np.asarray(points[b.value_name], dtype=float).reshape(n, -1)
        return X

    def variable_of_coordinate(self, i: int) -> str:
        """Name of the random variable that owns flat coordinate ``i``."""
        for b in self.blocks:
            if b.start <= i < b.stop:
                return b.rv_name
        raise IndexError(i)

    def __repr__(self):
        inner = ", ".join(f"{b.value_name}{list(b.shape)}" for b in self.blocks)
        return f"FlatLayout(dim={self.dim}: {inner})"


def layout_from_model(model) -> FlatLayout:
    """The flat layout of a PyMC model's value variables (in ``model.value_vars`` order)."""
    point = model.initial_point()
    blocks, start = [], 0
    for value_var in model.value_vars:
        rv = model.values_to_rvs[value_var]
        shape = tuple(int(s) for s in np.shape(point[value_var.name]))
        size = int(np.prod(shape, dtype=int))
        discrete = value_var.type.dtype.startswith(("int", "uint", "bool"))
        bounds = _support_bounds(rv) if discrete else None
        values = None
        if bounds is not None and np.isfinite(bounds).all() and bounds[1] - bounds[0] < _MAX_HEAT_BATH_VALUES:
            values = tuple(float(v) for v in range(int(bounds[0]), int(bounds[1]) + 1))
        blocks.append(VarBlock(value_var.name, rv.name, shape, start, start + size, discrete, values, bounds))
        start += size
    return FlatLayout(blocks)


_MAX_HEAT_BATH_VALUES = 64


def _constant_int(var):
    """The value of a graph without random inputs (a constant parameter), else None."""
    try:
        value = np.asarray(var.eval())
    except Exception:  # depends on other random variables: not constant
        return None
    return value


def _support_bounds(rv) -> tuple[float, float]:
    """(low, high) of a discrete RV's entries where the same for every entry and readable without sampling
    (Bernoulli, Categorical, DiscreteUniform, Binomial with a constant n; a lower bound of 0 for counts);
    ``(-inf, inf)`` otherwise."""
    op = type(rv.owner.op).__name__
    dist_params = rv.owner.inputs[2:]
    if op == "BernoulliRV":
        return (0.0, 1.0)
    if op == "CategoricalRV":
        k = rv.owner.inputs[-1].type.shape[-1]
        if k is None:
            p = _constant_int(rv.owner.inputs[-1].shape[-1])
            k = None if p is None else int(p)
        return (-np.inf, np.inf) if k is None else (0.0, float(k - 1))
    if op in ("DiscreteUniformRV", "BinomialRV"):
        bounds = [_constant_int(v) for v in dist_params]
        if any(b is None or np.ndim(b) > 0 and np.unique(b).size > 1 for b in bounds[:2]):
            return (0.0, np.inf) if op == "BinomialRV" else (-np.inf, np.inf)
        if op == "DiscreteUniformRV":
            return (float(np.ravel(bounds[0])[0]), float(np.ravel(bounds[1])[0]))
        return (0.0, float(np.ravel(bounds[0])[0]))
    if op in ("PoissonRV", "NegativeBinomialRV", "BetaBinomialRV", "HyperGeometricRV"):
        return (0.0, np.inf)
    return (-np.inf, np.inf)
