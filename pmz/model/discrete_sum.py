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
import weakref

import numpy as np
from scipy.special import logsumexp

__all__ = ["DiscreteEnumeration", "DiscreteSum", "WindowedSum", "discrete_enumeration", "discrete_sum",
           "discrete_support", "enumeration_refusal", "support_window", "windowed_sum"]

MAX_CONFIGURATIONS = 1024
MAX_STATES = 1 << 20  # a model with discrete variables only is summed exactly up to this many joint values
WINDOW_TOLERANCE = 40.0  # nats: an unbounded support's window ends where its terms are this far below the largest
_BLOCK = 1 << 14  # states per compiled density call when enumerating
_MAX_VALUES = 4096  # a discrete entry of more values than this is not summed out of a mixed model (discrete_sum)
PROVEN_SHARE = 1e-12  # a windowed sum is exact where the mass beyond its windows is proven below this share of it
UNRELIABLE_SHARE = 1e-3  # ... and unreliable where the mass beyond (bounded or estimated) may exceed this share
SE_FLOOR = 1e-10  # the least se of a windowed sum without a proof (the grid cannot see a bump between its values)
_MAX_EXACT_INTEGER = 2.0**52


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
    """A model whose free variables are all discrete, summed: ``log Z = logsumexp_k log p~(k)`` (a
    :class:`DiscreteEnumeration`), or None (:func:`enumeration_refusal` says why).

    Bounded supports are enumerated whole when their joint values are at most ``max_states``, however many values one
    variable has: the sum is exact. A single discrete variable of unbounded support, such as a Poisson count, is
    summed over windows of consecutive values (:func:`windowed_sum`): one grown from PyMC's initial point, one around
    each far mode a grid search finds; the mass beyond them is bounded where the model allows a proof
    (:mod:`pmz.model.discrete_tails`) and estimated otherwise, and the result says which. A bounded support with more
    than ``max_states`` values is not summed."""
    layout = compiled.layout
    if not layout.discrete_mask.all():
        return _refuse(compiled, "not every free variable is discrete")
    bounds = layout.discrete_bounds()
    _, values = layout.discrete_sites()
    if all(np.isfinite(low) and np.isfinite(high) for low, high in bounds):
        sizes = np.array([high - low + 1 for low, high in bounds], dtype=float)
        if np.prod(sizes) > max_states:
            return _refuse(compiled, f"{np.prod(sizes):.4g} joint values of bounded supports, more than {max_states}")
        support = [np.asarray(v, dtype=float) if v is not None else np.arange(low, high + 1, dtype=float)
                   for v, (low, high) in zip(values, bounds)]
        return DiscreteEnumeration(compiled, support)
    if compiled.dim != 1:
        return _refuse(compiled, "an unbounded support among several discrete variables (one unbounded count is "
                                 "summed over windows; several are not)")
    from .discrete_tails import grid_extras, prior_low, tail_certifier

    (low, high), = bounds
    low, certifier = prior_low(compiled, low), tail_certifier(compiled)
    found = windowed_sum(lambda k: _total(compiled, k[:, None]), compiled.initial_point()[0], low, high,
                         certifier=certifier, extra=grid_extras(compiled), max_states=max_states)
    if isinstance(found, str):
        return _refuse(compiled, found)
    return DiscreteEnumeration(compiled, [found.values], window=found.span, log_terms=found.log_terms, tail=found)


_REFUSALS = weakref.WeakKeyDictionary()


def _refuse(compiled, why: str):
    try:
        _REFUSALS[compiled] = why
    except TypeError:  # a model that cannot be weakly referenced: the generic reason stands
        pass
    return None


def enumeration_refusal(compiled) -> str:
    """Why :func:`discrete_enumeration` returned None for this model (its last call)."""
    return _REFUSALS.get(compiled, f"more than {MAX_STATES} joint values, or an unbounded support too wide to sum")


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
    A window only: what lies beyond it is not looked at (:func:`windowed_sum` searches and bounds it).

    >>> from scipy import stats
    >>> support_window(lambda k: stats.poisson.logpmf(k, 1000.0), 1000.0, 0, np.inf)
    (231, 1769)
    """
    grown = _grow_window(log_f, centre, low, high, max_values, tolerance, start)
    return None if grown is None else grown[:2]


def _grow_window(log_f, centre, low, high, max_values, tolerance=WINDOW_TOLERANCE, start=256):
    """:func:`support_window` with its terms: ``(lo, hi, log_f(lo..hi))`` or None."""
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
            return int(lo), int(hi), terms
        width = hi - lo + 1
        if 2 * width > max_values:
            return None
        new_lo = lo if left_done else max(low, lo - width)
        new_hi = hi if right_done else min(high, hi + width)
        lo, hi, terms = _extend(log_f, (lo, hi, terms), new_lo, new_hi)


def _extend(log_f, window, new_lo, new_hi):
    """A window ``(lo, hi, terms)`` widened to ``new_lo..new_hi``, only the new values evaluated."""
    lo, hi, terms = window
    left = np.asarray(log_f(np.arange(new_lo, lo, dtype=float)), dtype=float) if new_lo < lo else np.empty(0)
    right = np.asarray(log_f(np.arange(hi + 1, new_hi + 1, dtype=float)), dtype=float) if new_hi > hi else np.empty(0)
    return int(new_lo), int(new_hi), np.r_[left, terms, right]


def _merge(windows):
    """Sorted disjoint windows: overlapping or adjacent ones joined (the terms of shared values are equal)."""
    out = []
    for lo, hi, terms in sorted(windows, key=lambda w: w[0]):
        if out and lo <= out[-1][1] + 1:
            plo, phi, pterms = out[-1]
            if hi > phi:
                pterms = np.r_[pterms, terms[phi + 1 - lo:]]
            out[-1] = (plo, max(phi, hi), pterms)
        else:
            out.append((lo, hi, terms))
    return out


def _windows_text(windows) -> str:
    return " and ".join(f"{lo}..{hi}" for lo, hi in windows)


def _n_values(windows) -> int:
    return int(sum(hi - lo + 1 for lo, hi, _ in windows))


class WindowedSum:
    """What :func:`windowed_sum` summed and what it may miss.

    Attributes
    ----------
    windows : list of (int, int)
        The summed windows, sorted and disjoint.
    values, log_terms : ndarray
        Their values and ``log f`` there.
    far_modes : list of float
        Grid values where the far-mode search found a mode outside the first window.
    share : float
        The mass outside the windows over the summed mass: a proven bound (``proven_bound``) or the grid's estimate.
    proven_bound : bool
        ``share`` is a proven bound (:class:`pmz.model.discrete_tails.TailCertifier`), not an estimate.
    bound_words : str
        What the bound rests on ("" for an estimate).
    estimated_share : float
        The grid's estimate of that share (:func:`pmz.model.discrete_tails.grid_estimate`), whether or not a bound
        is proven.
    """

    def __init__(self, windows, far_modes, share, proven_bound, bound_words, estimated_share):
        self.windows = [(lo, hi) for lo, hi, _ in windows]
        self.values = np.concatenate([np.arange(lo, hi + 1, dtype=float) for lo, hi, _ in windows])
        self.log_terms = np.concatenate([terms for _, _, terms in windows])
        self.far_modes, self.share = far_modes, float(share)
        self.proven_bound, self.bound_words = proven_bound, bound_words
        self.estimated_share = float(estimated_share)

    @property
    def span(self) -> tuple[int, int]:
        return self.windows[0][0], self.windows[-1][1]

    @property
    def proven(self) -> bool:
        """The mass beyond is proven below :data:`PROVEN_SHARE` of the sum."""
        return self.proven_bound and self.share <= PROVEN_SHARE


def windowed_sum(log_f, centre, low, high, *, certifier=None, extra=(), max_states: int = MAX_STATES):
    """``sum f`` over windows of an unbounded support, with what lies beyond accounted for (a
    :class:`WindowedSum`), or a string saying why it cannot be summed.

    1. a window grown from ``centre`` (:func:`support_window`);
    2. a far-mode search: ``log f`` on :func:`pmz.model.discrete_tails.far_grid` (and ``extra``); a grid value outside
       the windows within ``WINDOW_TOLERANCE`` of the largest term gets a window of its own;
    3. the mass outside the windows, over the summed mass: the ``certifier``'s proven bound, else the grid's estimate
       (:func:`pmz.model.discrete_tails.grid_estimate`); while it is above :data:`PROVEN_SHARE` and each doubling
       at least halves it, every window is doubled (within ``max_states`` values in all)."""
    from .discrete_tails import far_grid, grid_estimate

    first = _grow_window(log_f, centre, low, high, max_states)
    if first is None:
        return f"the window around PyMC's initial point ({centre:g}) needs more than {max_states} values"
    grid = far_grid(low, high, centre, extra)
    grid_terms = np.asarray(log_f(grid), dtype=float)
    found = _far_modes(log_f, [first], grid, grid_terms, (low, high), max_states)
    if isinstance(found, str):
        return found
    windows, far = found
    last = np.inf
    while True:
        log_z = float(logsumexp(np.concatenate([t for _, _, t in windows])))
        log_bound = np.inf if certifier is None else certifier.log_outside(windows) - log_z
        log_estimate = grid_estimate(grid, grid_terms, windows, low, high) - log_z
        target = log_bound if certifier is not None else log_estimate
        improving = not np.isfinite(last) or target < last - np.log(2.0)  # a doubling that does not halve it: stop
        wider = _doubled(log_f, windows, low, high) if target > np.log(PROVEN_SHARE) and improving else None
        last = target
        if wider is None or _n_values(wider) > max_states or _n_values(wider) == _n_values(windows):
            proven = bool(np.isfinite(log_bound))
            words = certifier.describe() if proven else ""
            return WindowedSum(windows, far, np.exp(log_bound if proven else log_estimate), proven, words,
                               np.exp(log_estimate))
        windows = wider


def _doubled(log_f, windows, low, high):
    """Every window widened by its own width on each side (within ``[low, high]``), merged."""
    return _merge([_extend(log_f, w, max(low, w[0] - (w[1] - w[0] + 1)), min(high, w[1] + (w[1] - w[0] + 1)))
                   for w in windows])


def _far_modes(log_f, windows, grid, grid_terms, bounds, max_states, max_modes: int = 8):
    """``(windows, far modes)``: a window around each grid value outside the windows whose term is within
    ``WINDOW_TOLERANCE`` of the largest, largest first; or why that cannot be summed."""
    low, high = bounds
    far = []
    for _ in range(max_modes):
        top = max(float(np.max(t)) for _, _, t in windows)
        candidate = _outside(grid, windows) & (grid_terms > top - WINDOW_TOLERANCE)
        if not candidate.any():
            return windows, far
        k = float(grid[candidate][np.argmax(grid_terms[candidate])])
        if abs(k) > _MAX_EXACT_INTEGER:
            return (f"the summand has a far mode near k = {k:.4g} (log term {grid_terms[grid == k][0]:.4g}), beyond "
                    "the integers a float holds exactly")
        window = _grow_window(log_f, k, low, high, max_states - _n_values(windows))
        if window is None:
            return (f"the summand has a far mode near k = {k:.4g} (log term {grid_terms[grid == k][0]:.4g} against "
                    f"{top:.4g} in the first window) whose window needs more than the {max_states} values the sum "
                    "may take")
        windows, far = _merge(windows + [window]), far + [k]
    return f"the summand has more than {max_modes} far modes"


def _outside(values, windows) -> np.ndarray:
    hit = np.zeros(np.shape(values), dtype=bool)
    for lo, hi, _ in windows:
        hit |= (values >= lo) & (values <= hi)
    return ~hit


class DiscreteEnumeration:
    """Every summed joint value of a model's discrete free variables and its ``log p~``: ``log Z``, its se and its
    proof, and exact posterior draws over the summed values.

    Joint value ``s`` has coordinate ``i`` equal to ``support[i][(s // r_i) mod n_i]`` with ``r_i`` the product of the
    sizes after ``i`` (the order of ``itertools.product``). The densities are evaluated in blocks of ``_BLOCK`` rows,
    one compiled call each (unless ``log_terms`` are given); only the ``log p~`` of each value is kept.

    Attributes
    ----------
    log_terms : ndarray (n_states,)
    log_z : float
        ``logsumexp(log_terms)``.
    window : (int, int) or None
        The span of the windows of an unbounded support (:func:`windowed_sum`), None when every support is finite.
    tail : WindowedSum or None
        What the windows may miss, None when every support is summed whole.
    proof : str
        Why ``log_z`` is exact ("" where it is not: the mass beyond the windows is estimated, or bounded too loosely).
    log_z_se : float
        0 with a proof; else ``log(1 + share)``, ``share`` the mass beyond over the summed mass (at least
        :data:`SE_FLOOR`).
    unreliable : str
        Why the sum cannot be trusted ("" when it can): the mass beyond may exceed :data:`UNRELIABLE_SHARE`.
    """

    def __init__(self, compiled, support, window=None, log_terms=None, tail=None):
        self.compiled = compiled
        self.support = [np.asarray(s, dtype=float) for s in support]
        self.window, self.tail = window, tail
        sizes = np.array([s.size for s in self.support], dtype=np.int64)
        self._radix = np.r_[np.cumprod(sizes[::-1])[::-1][1:], 1].astype(np.int64)
        self._sizes = sizes
        self.n_states = int(np.prod(sizes))
        if log_terms is None:
            log_terms = np.concatenate([
                _total(compiled, self.states(np.arange(start, min(start + _BLOCK, self.n_states))))
                for start in range(0, self.n_states, _BLOCK)
            ])
        self.log_terms = np.asarray(log_terms, dtype=float)
        self.log_z = float(logsumexp(self.log_terms))

    @property
    def proof(self) -> str:
        if self.tail is None:
            return "a finite sum over every joint value of the whole support"
        if not self.tail.proven:
            return ""
        return (f"a finite sum over {_windows_text(self.tail.windows)} and a bound on the rest below "
                f"{max(self.tail.share, 1e-300):.1e} of the summed mass (proven: {self.tail.bound_words})")

    @property
    def log_z_se(self) -> float:
        if self.proof:
            return 0.0
        return max(float(np.log1p(self.tail.share)), SE_FLOOR)

    @property
    def unreliable(self) -> str:
        """Why the sum is not to be trusted: the mass beyond may exceed :data:`UNRELIABLE_SHARE` of the sum."""
        tail = self.tail
        if tail is None or tail.proven or tail.estimated_share <= UNRELIABLE_SHARE:
            return ""
        return (f"the mass of the count beyond the summed values {_windows_text(tail.windows)} is estimated at "
                f"{tail.estimated_share:.2g} of the summed mass: wider windows (at most {MAX_STATES} values) do not "
                "shrink it")

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
        self.continuous_names = tuple(dict.fromkeys(b.rv_name for b in compiled.layout.blocks if not b.discrete))

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
