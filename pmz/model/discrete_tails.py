"""What a sum over windows of an unbounded discrete support may miss: a search for far modes, a proven bound on the
mass beyond the windows where the model allows one, and an estimate of it where it does not.

A model with one free count ``k`` (a Poisson, a negative binomial, a geometric, a zero-inflated count) has
``Z = sum_{k >= low} f(k)``, ``f(k) = p(k) L(k)`` with ``p`` the prior and ``L`` the likelihood. pmz sums ``f`` over
windows of consecutive values (:func:`pmz.model.discrete_sum.support_window`) and accounts for the rest:

* **far modes.** Before a window is trusted, ``log f`` is evaluated on a geometric grid from the support's bound out
  to ``2^60`` (:func:`far_grid`), at the prior's extreme quantiles where PyMC has its icdf and at the observed data's
  values; a grid value within the window's tolerance of the largest term, outside every window, is a far mode and
  gets a window of its own.
* **a proven bound** (:func:`tail_certifier`): where every likelihood term has a maximum readable from the graph
  (a discrete observation's pmf is at most 1; a normal density with a scale free of ``k`` at most
  ``1 / (sigma sqrt(2 pi))``) and no ``pm.Potential`` is present, ``L(k) <= L_max`` everywhere, so the mass outside
  the windows is at most ``L_max`` times the prior's mass there. That prior mass is bounded by a geometric series from
  the prior's pmf ratio: for a Poisson ``p(k+1)/p(k) = mu/(k+1)``, for a negative binomial
  ``(k+n)/(k+1) (1-p)``, for a geometric ``1-p`` (a mixture's ratio is at most its components' largest), so
  ``P(K > h) <= p(h+1) / (1 - r)`` with ``r`` the ratio's supremum beyond ``h`` (likewise below a window).
* **an estimate** (:func:`grid_estimate`): otherwise the mass between grid values is taken to be at most the number of
  values times the larger of the two end terms. That is an estimate, not a proof (a bump narrower than the grid's
  spacing is not seen); the sum then carries it in its se.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

__all__ = ["far_grid", "grid_estimate", "grid_extras", "prior_low", "tail_certifier", "TailCertifier", "GRID_REACH",
           "GRID_POINTS"]

GRID_REACH = 2.0**60  # the far-mode search looks this far from the support's bound (or the window's centre)
GRID_POINTS = 4096  # geometric grid values on each unbounded side (ratio 2^(60/4096) = 1.0102)
_LOG_2PI = float(np.log(2.0 * np.pi))
_DISCRETE_OBSERVED = {"PoissonRV", "NegBinomialRV", "BinomialRV", "BernoulliRV", "CategoricalRV", "GeometricRV",
                      "BetaBinomialRV", "DiscreteUniformRV", "HyperGeometricRV", "DiracDeltaRV", "MixtureRV"}


def far_grid(low, high, centre, extra=()) -> np.ndarray:
    """Integers of ``[low, high]`` spread geometrically out to ``GRID_REACH``: ``low + g - 1`` for ``g`` in
    ``geomspace(1, GRID_REACH, GRID_POINTS)`` above a finite lower bound (``high - g + 1`` below a finite upper one,
    ``centre +- g`` on an unbounded side), with the ``extra`` values (prior quantiles, data) inside the support."""
    steps = np.unique(np.round(np.geomspace(1.0, GRID_REACH, GRID_POINTS)))
    centre = float(np.round(centre)) if np.isfinite(centre) else 0.0
    up = low + steps - 1.0 if np.isfinite(low) else centre + steps
    down = high - steps + 1.0 if np.isfinite(high) else centre - steps
    values = np.r_[up, down, np.round(np.asarray(extra, dtype=float).ravel())]
    values = values[np.isfinite(values) & (values >= low) & (values <= high)]
    return np.unique(values)


def grid_estimate(grid, grid_terms, windows, low, high) -> float:
    """Log of an upper estimate of ``sum f`` outside ``windows`` (sorted disjoint ``(lo, hi, terms)``): the grid
    values outside them, plus, between two neighbouring known values (grid values or window ends), the number of
    values strictly between times the larger of the two terms. Nothing is counted beyond the outermost grid values.
    An estimate, not a bound: it assumes no bump of ``f`` narrower than the grid's spacing."""
    ends_k = np.array([[w[0], w[1]] for w in windows], dtype=float).ravel()
    ends_t = np.array([[w[2][0], w[2][-1]] for w in windows], dtype=float).ravel()
    outside = ~_inside(grid, windows)
    k = np.r_[grid[outside], ends_k]
    t = np.r_[np.asarray(grid_terms, dtype=float)[outside], ends_t]
    order = np.argsort(k, kind="stable")
    k, t = k[order], t[order]
    gap_counts = np.diff(k) - 1.0
    gaps_open = (gap_counts > 0) & ~_between_window_ends(k, windows)
    with np.errstate(divide="ignore"):
        gap_terms = np.log(np.where(gaps_open, gap_counts, 0.0)) + np.maximum(t[:-1], t[1:])
    return float(logsumexp(np.r_[np.asarray(grid_terms, dtype=float)[outside], gap_terms, -np.inf]))


def _inside(values, windows) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    hit = np.zeros(values.shape, dtype=bool)
    for lo, hi, _ in windows:
        hit |= (values >= lo) & (values <= hi)
    return hit


def _between_window_ends(k, windows) -> np.ndarray:
    """For each neighbouring pair of ``k``: True where both are the two ends of one window (its inside is summed)."""
    lo_hi = {(float(lo), float(hi)) for lo, hi, _ in windows}
    return np.array([(a, b) in lo_hi for a, b in zip(k[:-1], k[1:])], dtype=bool)


def _params(rv) -> list:
    op = rv.owner.op
    params = op.dist_params(rv.owner) if hasattr(op, "dist_params") else rv.owner.inputs[2:]
    return list(params)


def _value(var) -> np.ndarray:
    """The value of a graph without inputs, computed by PyTensor's Python implementations (no C or Numba
    compilation, which ``var.eval()`` would pay for: seconds per call on the C backend)."""
    import pytensor

    from .backend import UNREWRITTEN_MODE

    return np.asarray(pytensor.function([], var, mode=UNREWRITTEN_MODE)())


def _constant(var):
    """A parameter's value as float64 where it does not depend on a random variable, else None."""
    try:
        from pytensor.graph.traversal import ancestors
    except ImportError:  # PyTensor before the move
        from pytensor.graph.basic import ancestors

    if any(getattr(a, "owner", None) is not None and hasattr(a.owner.op, "dist_params") for a in ancestors([var])):
        return None
    try:
        return np.asarray(_value(var), dtype=float)
    except Exception:  # a free variable's value is needed
        return None


def _scalar(var):
    value = _constant(var)
    return None if value is None or value.size != 1 else float(value.ravel()[0])


class _Ratio:
    """Suprema of a count prior's pmf ratios: ``up(j) = sup_{k >= j} p(k+1)/p(k)`` and
    ``down(j) = sup_{low < k <= j} p(k-1)/p(k)`` (None where unknown), and the support's lower bound ``low``."""

    def __init__(self, up, down, low, name):
        self.up, self.down, self.low, self.name = up, down, low, name


def _poisson(mu):
    return _Ratio(lambda j: mu / (j + 1.0), lambda j: j / mu, 0.0, f"Poisson({mu:g})")


def _negative_binomial(n, p):
    def up(j):
        return (1.0 - p) * max(1.0, (j + n) / (j + 1.0))

    def down(j):
        return j / ((j - 1.0 + n) * (1.0 - p)) if n >= 1.0 else None

    return _Ratio(up, down, 0.0, f"NegativeBinomial(n={n:g}, p={p:g})")


def _prior_ratio(rv):
    """:class:`_Ratio` of a prior PyMC writes as a Poisson, negative binomial, geometric or a mixture of them (with
    point masses), its parameters constant; None otherwise. A mixture's ratio is at most the largest of its
    components' (``(sum w_i a_i) / (sum w_i b_i) <= max a_i / b_i``) above every point mass."""
    op = type(rv.owner.op).__name__
    params = [_scalar(v) for v in _params(rv)]
    if op == "PoissonRV" and params[0] is not None and params[0] > 0:
        return _poisson(params[0])
    if op == "NegBinomialRV" and None not in params and params[0] > 0 and 0 < params[1] < 1:
        return _negative_binomial(params[0], params[1])
    if op == "GeometricRV" and params[0] is not None and 0 < params[0] < 1:
        q = 1.0 - params[0]
        return _Ratio(lambda j: q, lambda j: None, 1.0, f"Geometric({params[0]:g})")
    if op == "MixtureRV":
        return _mixture_ratio(_params(rv)[1:])
    return None


def _mixture_ratio(components):
    ratios, points = [], []
    for c in components:
        if type(c.owner.op).__name__ == "DiracDeltaRV":
            value = _scalar(_params(c)[0])
            if value is None:
                return None
            points.append(value)
        else:
            ratios.append(_prior_ratio(c))
    if not ratios or None in ratios:
        return None
    start = max(points, default=-np.inf)
    low = min([r.low for r in ratios] + points)

    def up(j):
        return max(r.up(j) for r in ratios) if j > start else None

    name = "a mixture of " + ", ".join(r.name for r in ratios) + (" and point masses" if points else "")
    return _Ratio(up, lambda j: None, low, name)


def likelihood_ceiling(model):
    """``(log L_max, what)``: an upper bound of the model's log likelihood at every value of its free variables,
    read from the graph, or None. No ``pm.Potential``; each observed variable either discrete (a pmf, at most 1) or
    normal with a scale free of random variables (``-log sigma - log(2 pi) / 2`` per entry)."""
    if list(model.potentials):
        return None
    total, kinds = 0.0, set()
    for rv in model.observed_RVs:
        op = type(rv.owner.op).__name__
        if str(rv.dtype).startswith(("int", "uint", "bool")) and op in _DISCRETE_OBSERVED:
            kinds.add("a discrete observation's pmf is at most 1")
            continue
        if op != "NormalRV":
            return None
        sigma = _constant(_params(rv)[1])
        if sigma is None or not np.all(sigma > 0):
            return None
        size = int(np.prod(_value(rv.shape)))
        total += float(np.sum(np.broadcast_to(-np.log(sigma) - 0.5 * _LOG_2PI, (size,))))
        kinds.add("a normal density with a fixed scale is at most 1/(sigma sqrt(2 pi))")
    return total, "; ".join(sorted(kinds)) or "no likelihood"


class TailCertifier:
    """A proven bound on the mass of ``f = p L`` outside windows of a one-count model (module docstring).

    Parameters
    ----------
    log_prior : callable
        ``k (n,) -> log p(k)``, the prior's log pmf.
    ratio : _Ratio
        Suprema of the prior's pmf ratios.
    log_l_max : float
        An upper bound of ``log L``.
    what : str
        Why ``L <= L_max`` (the proof's words).
    """

    def __init__(self, log_prior, ratio, log_l_max, what):
        self.log_prior, self.ratio, self.log_l_max, self.what = log_prior, ratio, log_l_max, what

    def _above(self, h) -> float:
        """``log`` of a bound on ``P(K > h)``: ``p(h+1) / (1 - r)``, ``r = up(h+1)``; inf where ``r >= 1``."""
        r = self.ratio.up(h + 1.0)
        if r is None or not r < 1.0:
            return np.inf
        return float(self.log_prior(np.array([h + 1.0]))[0] - np.log1p(-r))

    def _below(self, lo) -> float:
        """``log`` of a bound on ``P(K < lo)``: 0 mass below the support; else ``p(lo-1) / (1 - s)``,
        ``s = down(lo-1)``; inf where unknown."""
        if lo - 1.0 < self.ratio.low:
            return -np.inf
        s = self.ratio.down(lo - 1.0) if lo - 1.0 > self.ratio.low else 0.0
        if s is None or not s < 1.0:
            return np.inf
        return float(self.log_prior(np.array([lo - 1.0]))[0] - np.log1p(-s))

    def log_outside(self, windows) -> float:
        """Log of a proven bound on ``sum f`` outside the sorted disjoint ``windows`` (inf where none is proven)."""
        parts = [self._below(windows[0][0]), self._above(windows[-1][1])]
        for (_, hi, _), (lo, _, _) in zip(windows[:-1], windows[1:]):
            parts.append(min(self._above(hi), self._below(lo)))
        if np.any(np.asarray(parts) == np.inf):
            return np.inf
        return float(logsumexp(parts)) + self.log_l_max

    def describe(self) -> str:
        return (f"the likelihood is at most exp({self.log_l_max:.4g}) ({self.what}) and the prior {self.ratio.name}'s "
                "mass beyond each window end is at most its next term over 1 - r, r its pmf ratio's largest value "
                "beyond that end")


def tail_certifier(compiled):
    """A :class:`TailCertifier` for a PyMC model with one free count, or None where no bound can be proven (a
    ``pm.Potential``, a likelihood without a readable maximum, a prior other than a Poisson, negative binomial,
    geometric or their mixtures with constant parameters)."""
    model = getattr(compiled, "model", None)
    if model is None or not hasattr(model, "free_RVs") or len(model.free_RVs) != 1:
        return None
    rv = model.free_RVs[0]
    ratio = _prior_ratio(rv)
    ceiling = likelihood_ceiling(model)
    if ratio is None or ceiling is None:
        return None

    log_densities = getattr(compiled, "log_densities_one_shot", compiled.log_densities)  # no second, full compile

    def log_prior(k):
        lp, _ = log_densities(np.asarray(k, dtype=float)[:, None])
        return np.where(np.isnan(lp), -np.inf, lp)

    return TailCertifier(log_prior, ratio, *ceiling)


def prior_low(compiled, low: float) -> float:
    """The support's lower bound, raised to the prior's own where it is a known count (a geometric starts at 1)."""
    model = getattr(compiled, "model", None)
    if model is None or not hasattr(model, "free_RVs") or len(model.free_RVs) != 1:
        return low
    ratio = _prior_ratio(model.free_RVs[0])
    return low if ratio is None else max(low, ratio.low)


def grid_extras(compiled) -> np.ndarray:
    """Values the far-mode search adds to its grid: the prior's extreme quantiles where PyMC has its icdf, and the
    observed data's values (a likelihood's scale where it can be read)."""
    import pymc as pm

    model = getattr(compiled, "model", None)
    if model is None or not hasattr(model, "free_RVs"):
        return np.empty(0)
    out = []
    try:
        q = np.array([1e-15, 1e-9, 1e-6, 1e-3, 0.5, 1 - 1e-3, 1 - 1e-6, 1 - 1e-9, 1 - 1e-15])
        out.append(np.asarray(_value(pm.icdf(model.free_RVs[0], q)), dtype=float).ravel())
    except Exception:  # no icdf for this prior in PyMC
        pass
    for rv in model.observed_RVs:
        data = np.asarray(_value(model.rvs_to_values[rv]), dtype=float).ravel()
        out.append(np.quantile(data[np.isfinite(data)], np.linspace(0, 1, 33)) if data.size > 33 else data)
    return np.concatenate(out) if out else np.empty(0)
