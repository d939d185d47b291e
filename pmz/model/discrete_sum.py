"""A PyMC model with its finite discrete free variables summed out exactly.

With continuous coordinates ``x`` and discrete ones ``k`` taking the ``K`` joint values ``k_1 .. k_K`` (every
combination of each discrete entry's finite support), the summed density

    log p~(x) = logsumexp_j log p~(x, k_j)

has the same integral as the joint (``Z = integral sum_k p~(x, k) dx``), so every continuous route (bridge
sampling, a path from a fitted reference, a mixture over modes) applies to it with ``log Z`` unchanged.
Its gradient is ``sum_j r_j(x) grad_x log p~(x, k_j)`` with ``r_j(x) = p(k_j | x)``, the discrete variables'
exact conditional, from which :meth:`DiscreteSum.with_discrete` draws them back for the posterior.

One compiled call per batch: the ``n`` continuous rows are repeated ``K`` times with every configuration filled
in, ``n K`` rows in all, so the cost of a density call grows by ``K`` (a change point with a hundred values, a few
binary labels). :func:`discrete_sum` builds it when ``K`` is at most ``max_configurations``.

Only the total ``log p~ = log prior + log likelihood`` is defined after the sum: :meth:`log_densities` returns it
as the first part and zeros as the second. The routes that use this model (``method="auto"``'s bridge, path and
modes routes) read only the total.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.special import logsumexp

__all__ = ["DiscreteEnumeration", "DiscreteSum", "discrete_enumeration", "discrete_sum", "discrete_support"]

MAX_CONFIGURATIONS = 1024
MAX_STATES = 1 << 20  # a model with discrete variables only is summed exactly up to this many joint values
WINDOW_TOLERANCE = 40.0  # nats: an unbounded support's window ends where its terms are this far below the largest
_BLOCK = 1 << 14  # states per compiled density call when enumerating
_MAX_VALUES = 4096  # a discrete entry with bounded support of more values than this is not enumerated


class _ContinuousLayout:
    def __init__(self, dim: int):
        self.dim = dim
        self.discrete_mask = np.zeros(dim, dtype=bool)
        self.blocks = []


def discrete_support(layout) -> list | None:
    """Each discrete coordinate's finite set of values (:meth:`pmz.model.points.FlatLayout.discrete_sites` order),
    or None when one of them has no finite support pmz can read (e.g. a Poisson)."""
    _, values = layout.discrete_sites()
    bounds = layout.discrete_bounds()
    out = []
    for v, (low, high) in zip(values, bounds):
        if v is None:
            if not (np.isfinite(low) and np.isfinite(high)) or high - low + 1 > _MAX_VALUES:
                return None
            v = np.arange(low, high + 1, dtype=float)
        out.append(np.asarray(v, dtype=float))
    return out


def discrete_enumeration(compiled, max_states: int = MAX_STATES):
    """A model whose free variables are all discrete, summed exactly: ``log Z = logsumexp_k log p~(k)`` over every
    joint value (a :class:`DiscreteEnumeration`), or None when there are more than ``max_states`` of them.

    Finite supports are enumerated whole. A single discrete variable of unbounded (or very large) support, such as a
    Poisson count, is summed over a window of consecutive values grown from PyMC's initial point
    (:func:`support_window`) until the terms at both ends are ``WINDOW_TOLERANCE`` nats below the largest and falling;
    what lies beyond is taken as negligible, an assumption the result states."""
    layout = compiled.layout
    if not layout.discrete_mask.all():
        return None
    support = discrete_support(layout)
    window = None
    if support is None:
        if compiled.dim != 1:
            return None
        (low, high), = layout.discrete_bounds()
        window = support_window(lambda k: _total(compiled, k[:, None]), compiled.initial_point()[0], low, high,
                                max_states)
        if window is None:
            return None
        support = [np.arange(window[0], window[1] + 1, dtype=float)]
    sizes = np.array([s.size for s in support], dtype=float)
    if np.prod(sizes) > max_states:
        return None
    return DiscreteEnumeration(compiled, support, window)


def _total(compiled, X) -> np.ndarray:
    """``log p~`` of joint values, through the quickly compiled density where the model has one."""
    log_densities = getattr(compiled, "log_densities_one_shot", compiled.log_densities)
    lp, ll = log_densities(np.asarray(X, dtype=float))
    total = np.asarray(lp + ll, dtype=float)
    return np.where(np.isnan(total), -np.inf, total)


def support_window(log_f, centre, low, high, max_values: int = MAX_STATES, tolerance: float = WINDOW_TOLERANCE,
                   start: int = 256):
    """``(lo, hi)``: consecutive integers around ``centre`` (within ``[low, high]``) outside which ``log_f`` is
    negligible: grown by doubling on each side until the end term is ``tolerance`` nats below the largest term and
    lower than its neighbour (or the end is the support's bound). None when that needs more than ``max_values``.

    >>> from scipy import stats
    >>> support_window(lambda k: stats.poisson.logpmf(k, 1000.0), 1000.0, 0, np.inf)
    (231, 1769)
    """
    centre = float(np.clip(np.round(centre if np.isfinite(centre) else 0.0), low, high))
    lo, hi = max(low, centre - start), min(high, centre + start)
    terms = np.asarray(log_f(np.arange(lo, hi + 1, dtype=float)), dtype=float)

    def done(end, neighbour, top, at_bound):
        return at_bound or (np.isfinite(top) and end < top - tolerance and end <= neighbour)

    while True:
        top = terms.max()
        left_done = done(terms[0], terms[min(1, terms.size - 1)], top, lo <= low)
        right_done = done(terms[-1], terms[max(terms.size - 2, 0)], top, hi >= high)
        if left_done and right_done:
            return int(lo), int(hi)
        width = hi - lo + 1
        if 2 * width > max_values:
            return None
        if not left_done:
            new_lo = max(low, lo - width)
            terms = np.r_[np.asarray(log_f(np.arange(new_lo, lo, dtype=float)), dtype=float), terms]
            lo = new_lo
        if not right_done:
            new_hi = min(high, hi + width)
            terms = np.r_[terms, np.asarray(log_f(np.arange(hi + 1, new_hi + 1, dtype=float)), dtype=float)]
            hi = new_hi


class DiscreteEnumeration:
    """Every joint value of a model's discrete free variables and its ``log p~``: ``log Z`` exactly, and exact
    posterior draws.

    Joint value ``s`` has coordinate ``i`` equal to ``support[i][(s // r_i) mod n_i]`` with ``r_i`` the product of the
    sizes after ``i`` (the order of ``itertools.product``). The densities are evaluated in blocks of ``_BLOCK`` rows,
    one compiled call each; only the ``log p~`` of each value is kept.

    Attributes
    ----------
    log_terms : ndarray (n_states,)
    log_z : float
        ``logsumexp(log_terms)``.
    window : (int, int) or None
        The window of an unbounded support (:func:`support_window`), None when every support is finite.
    """

    def __init__(self, compiled, support, window=None):
        self.compiled = compiled
        self.support = [np.asarray(s, dtype=float) for s in support]
        self.window = window
        sizes = np.array([s.size for s in self.support], dtype=np.int64)
        self._radix = np.r_[np.cumprod(sizes[::-1])[::-1][1:], 1].astype(np.int64)
        self._sizes = sizes
        self.n_states = int(np.prod(sizes))
        self.log_terms = np.concatenate([
            _total(compiled, self.states(np.arange(start, min(start + _BLOCK, self.n_states))))
            for start in range(0, self.n_states, _BLOCK)
        ])
        self.log_z = float(logsumexp(self.log_terms))

    def states(self, index) -> np.ndarray:
        """Joint values ``(len(index), dim)`` of the given state numbers."""
        index = np.asarray(index, dtype=np.int64)
        digits = (index[:, None] // self._radix[None, :]) % self._sizes[None, :]
        return np.stack([s[d] for s, d in zip(self.support, digits.T)], axis=1)

    def draw(self, rng: np.random.Generator, shape) -> np.ndarray:
        """Exact posterior draws ``(*shape, dim)``: state numbers drawn with probabilities
        ``exp(log_terms - log_z)``."""
        p = np.exp(self.log_terms - self.log_z)
        index = rng.choice(self.n_states, size=int(np.prod(shape)), p=p / p.sum())
        return self.states(index).reshape(*shape, -1)

    def __repr__(self):
        return f"DiscreteEnumeration({self.n_states} joint values, log Z = {self.log_z:.6f})"


def discrete_sum(compiled, max_configurations: int = MAX_CONFIGURATIONS):
    """The model with its discrete free variables summed out, or None when their joint support has more than
    ``max_configurations`` values (or an unbounded variable), or the model has no discrete or no continuous one."""
    mask = compiled.layout.discrete_mask
    if not mask.any() or mask.all():
        return None
    support = discrete_support(compiled.layout)
    if support is None or np.prod([float(s.size) for s in support]) > max_configurations:
        return None
    configurations = np.array(list(itertools.product(*support)), dtype=float)
    return DiscreteSum(compiled, configurations)


class DiscreteSum:
    """``log p~(x) = logsumexp_j log p~(x, k_j)`` on the continuous coordinates of ``compiled`` (module docstring).

    Parameters
    ----------
    compiled : CompiledModel
    configurations : array (K, n_discrete)
        Every joint value of the discrete coordinates, in ``layout.discrete_sites()`` order.

    Attributes
    ----------
    dim : int
        Continuous coordinates.
    continuous, discrete : ndarray of int
        Their positions in the full flat vector.
    """

    kind = "pymc"

    def __init__(self, compiled, configurations):
        self.compiled = compiled
        self.model = compiled.model
        mask = compiled.layout.discrete_mask
        self.continuous = np.flatnonzero(~mask)
        self.discrete = np.flatnonzero(mask)
        self.configurations = np.asarray(configurations, dtype=float)
        self.dim = int(self.continuous.size)
        self.names = [b.rv_name for b in compiled.layout.blocks if b.discrete]

    # what the routes read from a model besides the densities
    @property
    def layout(self):
        """The summed model's coordinates are all continuous: ``dim`` and an all-False ``discrete_mask``."""
        return _ContinuousLayout(self.dim)

    @property
    def n_configurations(self) -> int:
        return int(self.configurations.shape[0])

    @property
    def compile_time(self) -> float:
        return self.compiled.compile_time

    @property
    def n_logp_evals(self):
        return self.compiled.n_logp_evals

    @property
    def n_grad_evals(self):
        return self.compiled.n_grad_evals

    def full(self, X) -> np.ndarray:
        """``(n, dim)`` continuous rows -> ``(n K, full dim)``: row ``i K + j`` is ``x_i`` with configuration ``j``."""
        X = np.asarray(X, dtype=float)
        n, K = X.shape[0], self.n_configurations
        out = np.empty((n * K, self.compiled.dim))
        out[:, self.continuous] = np.repeat(X, K, axis=0)
        out[:, self.discrete] = np.tile(self.configurations, (n, 1))
        return out

    def _joint(self, X):
        lp, ll = self.compiled.log_densities(self.full(X))
        total = (lp + ll).reshape(-1, self.n_configurations)
        return np.where(np.isnan(total), -np.inf, total)

    def log_densities(self, X):
        """``(log p~(x), 0)``: the summed total and a zero second part (module docstring)."""
        total = logsumexp(self._joint(X), axis=1)
        return total, np.zeros_like(total)

    def log_densities_once(self, X):
        return self.log_densities(X)

    def log_densities_and_grads(self, X):
        lp, ll, glp, gll = self.compiled.log_densities_and_grads(self.full(X))
        K = self.n_configurations
        joint = (lp + ll).reshape(-1, K)
        joint = np.where(np.isnan(joint), -np.inf, joint)
        total = logsumexp(joint, axis=1)
        with np.errstate(invalid="ignore"):
            r = np.exp(joint - total[:, None])  # p(k_j | x)
        grads = (glp + gll)[:, self.continuous].reshape(-1, K, self.dim)
        grad = np.einsum("nk,nkd->nd", np.nan_to_num(r), np.where(np.isfinite(grads), grads, 0.0))
        return total, np.zeros_like(total), grad, np.zeros_like(grad)

    def with_discrete(self, X, rng: np.random.Generator) -> np.ndarray:
        """Full flat draws: each continuous row with the discrete coordinates drawn from ``p(k | x)`` exactly.
        ``X`` may have leading axes (chain, draw, dim); they are kept."""
        X = np.asarray(X, dtype=float)
        flat = X.reshape(-1, self.dim)
        joint = self._joint(flat)
        log_r = joint - logsumexp(joint, axis=1, keepdims=True)
        u = rng.uniform(size=(flat.shape[0], 1))
        pick = np.minimum((np.cumsum(np.exp(log_r), axis=1) < u).sum(axis=1), self.n_configurations - 1)
        out = np.empty((flat.shape[0], self.compiled.dim))
        out[:, self.continuous] = flat
        out[:, self.discrete] = self.configurations[pick]
        return out.reshape(*X.shape[:-1], self.compiled.dim)

    def initial_point(self) -> np.ndarray:
        return self.compiled.initial_point()[self.continuous]

    def point_logps(self, x) -> dict[str, float]:
        """Per-variable log densities at ``x`` with the first discrete configuration (to name a culprit)."""
        return self.compiled.point_logps(self.full(np.asarray(x, dtype=float)[None, :])[0])

    def __repr__(self):
        return f"DiscreteSum({self.names}, {self.n_configurations} configurations, dim={self.dim})"
