"""Does the prior's log density, as PyMC evaluates it, integrate to one?

Methods that start from exact prior draws (every method with ``reference="prior"``: the annealing, tempering and
SMC methods) estimate ``log Z = log E_prior[likelihood]``, the evidence under the distribution of those draws. Methods
that integrate the model's log density (``"bridge"``, ``"auto"``, ``reference="laplace"``) estimate
``log integral prior(x) likelihood(x) dx`` with the prior density as PyMC writes it. The two agree when that density
integrates to one. It does not always:

* a variable under the ``ordered`` transform keeps its unordered density on the ordered region, whose mass is
  ``1 / K!`` for K exchangeable entries (the density integrates to ``exp(-log K!)``);
* ``LKJCholeskyCov`` on PyMC 5 leaves out a normalising constant (its density integrates to about ``exp(1.23)``
  for n = 3, eta = 2);
* a ``pm.CustomDist`` or a user transform whose log density or Jacobian is off by a constant.

:func:`prior_normalisation` measures the log mass ``log c_v = log integral p~(v | parents) dv`` of each free variable
whose distribution or transform is not one of the standard, normalised kinds (``suspect_variables``), by bridge
sampling (Meng & Wong 1996; the K = 1 case of BAR, docs/methods.md, section 3) in the variable's unconstrained
coordinates: reverse draws are exact prior draws (``PriorReference``: draws of the normalised prior), forward draws
come from a Gaussian ``q`` fitted to a separate half of them, parents held at their prior draws. The optimal bridge
equation ``sum_q s(a_i - log c + m) = sum_p s(-(b_j - log c + m))`` (``a``, ``b`` the log ratios ``log p~ - log q``
at the q and prior draws, ``m = log(n_p / n_q)``, ``s`` the logistic function) is solved by Brent's method; its se is
the asymptotic relative error of the bridge estimate with independent draws on both sides. Cost: one draw function
(the one the run compiles anyway), one Python-linker function of the suspect variables' terms, and
``n_draws * (1 + n_suspects) / 2`` evaluations of it.

The check is a warning, not an error: prior-draw methods answer for the normalised prior, density methods for the
density as written, and ``log Z_density = log Z_prior_draws + sum_v log c_v``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, gammaln

from .inspection import data_value

__all__ = [
    "PriorMass",
    "suspect_variables",
    "prior_normalisation",
    "normalisation_warning",
    "ordered_exchangeable_log_mass",
    "car_log_mass",
    "known_log_masses",
]

# value transforms whose Jacobian PyMC gets exactly right on a normalised elementwise density
_TRUSTED_TRANSFORMS = (
    "LogTransform",
    "LogOddsTransform",
    "IntervalTransform",
    "Interval",
    "LogExpM1",
    "SimplexTransform",
)
# the check says a variable's density is not normalised beyond max(_Z_SCORE se, _MIN_NATS) nats ...
_Z_SCORE = 5.0
_MIN_NATS = 0.05
# ... when q and the prior overlap (see PriorMass.overlap)
_MIN_OVERLAP = 0.05
_MAX_DIM = 50  # variables with more coordinates are not checked (a Gaussian q would not overlap; few are suspect)


@dataclass(frozen=True)
class PriorMass:
    """The measured log mass of one free variable's prior density.

    Attributes
    ----------
    name : str
        The free variable.
    kind : str
        Its distribution and transform, e.g. ``"_LKJCholeskyCovRV, transform CholeskyCovPacked"``.
    log_mass : float
        ``log integral p~(v | parents) dv`` (0 for a normalised density), bridge sampling estimate.
    se : float
        Its standard error.
    overlap : float
        Overlap of q and the prior in the bridge, in [0, 1]: the smaller of the two sides' mean bridge weights,
        each relative to its value when q equals the normalised prior. Below 0.05 the check says nothing.
    expected : float or None
        The known log mass where pmz knows it (``-log K!`` per sorted ordered vector of K entries), else None.
    """

    name: str
    kind: str
    log_mass: float
    se: float
    overlap: float
    expected: float | None = None

    @property
    def off(self) -> bool:
        """Whether the density is clearly not normalised (beyond 5 se and 0.05 nats, with overlap)."""
        return (
            np.isfinite(self.log_mass)
            and abs(self.log_mass) > max(_Z_SCORE * self.se, _MIN_NATS)
            and self.overlap >= _MIN_OVERLAP
        )


def _transform_names(transform) -> list[str]:
    inner = getattr(transform, "transform_list", None)
    if inner:
        return [n for t in inner for n in _transform_names(t)]
    return [type(transform).__name__]


def suspect_variables(model) -> dict[str, str]:
    """``{name: kind}`` of the continuous free variables whose prior density may not integrate to one: a value
    transform other than log / logodds / interval / log_exp_m1 / simplex, or a distribution that is not a plain
    ``RandomVariable`` (a ``SymbolicRandomVariable`` such as ``LKJCholeskyCov``, a ``pm.CustomDist``)."""
    from pytensor.tensor.random.op import RandomVariable

    out = {}
    for rv in model.free_RVs:
        if rv.type.dtype.startswith(("int", "uint", "bool")):
            continue  # probability mass functions
        transform = model.rvs_to_transforms.get(rv)
        names = [] if transform is None else _transform_names(transform)
        odd = [n for n in names if n not in _TRUSTED_TRANSFORMS]
        plain = isinstance(rv.owner.op, RandomVariable)
        if odd or not plain:
            kind = type(rv.owner.op).__name__ + (f", transform {'+'.join(names)}" if names else "")
            out[rv.name] = kind
    return out


def _bridge(a, b):
    """Optimal bridge sampling: log c with ``a = log p~ - log q`` at q draws, ``b`` the same at exact p draws."""
    a = np.where(np.isnan(a), -np.inf, a)
    b = b[np.isfinite(b)]
    a_fin = a[np.isfinite(a)]
    if a_fin.size < 10 or b.size < 10:
        return np.nan, np.inf, 0.0
    n_q, n_p = a.size, b.size
    m = np.log(n_p / n_q)

    def gap(log_c):
        return np.sum(expit(a - log_c + m)) - np.sum(expit(-(b - log_c + m)))

    lo = min(np.min(a_fin), np.min(b)) - 50.0
    hi = max(np.max(a_fin), np.max(b)) + 50.0
    log_c = brentq(gap, lo, hi, xtol=1e-10)
    f1, f2 = expit(a - log_c + m), expit(-(b - log_c + m))
    se = np.sqrt(np.var(f1) / (n_q * np.mean(f1) ** 2) + np.var(f2) / (n_p * np.mean(f2) ** 2))
    # overlap: each side's mean bridge weight relative to its value when q is the normalised prior (1 = identical)
    overlap = min(np.mean(f1) / expit(m), np.mean(f2) / expit(-m))
    return float(log_c), float(se), float(overlap)


def _known_log_mass(prior, name: str, block) -> float | None:
    """``-log K!`` per ordered vector of K exchangeable entries (sorted draws); None where pmz does not know it."""
    if name not in getattr(prior, "sorted_names", ()):
        return None
    k = block.shape[-1] if block.shape else 1
    return -float(block.size // max(k, 1)) * float(gammaln(k + 1))


def prior_normalisation(compiled, prior, rng: np.random.Generator, *, n_draws: int = 2000) -> list[PriorMass]:
    """The log mass of every suspect variable's prior density (see the module docstring).

    Parameters
    ----------
    compiled : CompiledModel
    prior : PriorReference
        Its exact draws (the ones the run starts from).
    rng : numpy.random.Generator
    n_draws : int
        Exact prior draws: half fit each variable's Gaussian, half are the bridge's reverse draws; as many q draws.
    """
    suspects = suspect_variables(compiled.model)
    blocks = {name: compiled.layout.block_of(name) for name in suspects}
    names = [name for name in suspects if 0 < blocks[name].size <= _MAX_DIM]
    if not names:
        return []
    X = prior.sample(rng, n_draws)
    half = n_draws // 2
    fit, X_p = X[:half], X[half:]
    rows, refs = [X_p], {}
    for name in names:
        b = blocks[name]
        v = fit[:, b.start : b.stop]
        v = v[np.isfinite(v).all(axis=1)]
        if v.shape[0] < 2 * b.size + 10:
            continue
        cov = np.atleast_2d(np.cov(v, rowvar=False))
        cov = cov + 1e-9 * max(np.trace(cov) / b.size, 1e-12) * np.eye(b.size)
        chol = np.linalg.cholesky(cov)
        z = rng.standard_normal((X_p.shape[0], b.size))
        X_q = X_p.copy()
        X_q[:, b.start : b.stop] = v.mean(axis=0) + z @ chol.T
        refs[name] = (v.mean(axis=0), chol, len(rows))
        rows.append(X_q)
    if not refs:
        return []
    names = list(refs)
    terms = compiled.log_prior_terms(np.vstack(rows), names).reshape(len(rows), X_p.shape[0], len(names))
    out = []
    for j, name in enumerate(names):
        mean, chol, row = refs[name]
        b = blocks[name]

        def log_q(V):
            from scipy.linalg import solve_triangular

            Z = solve_triangular(chol, (V - mean).T, lower=True).T
            return -0.5 * np.sum(Z * Z, axis=1) - np.sum(np.log(np.diag(chol))) - 0.5 * b.size * np.log(2 * np.pi)

        a = terms[row, :, j] - log_q(rows[row][:, b.start : b.stop])
        bb = terms[0, :, j] - log_q(X_p[:, b.start : b.stop])
        log_c, se, overlap = _bridge(a, bb)
        out.append(PriorMass(name, suspects[name], log_c, se, overlap, _known_log_mass(prior, name, b)))
    return out


def normalisation_warning(masses, method: str) -> str | None:
    """The warning for the variables whose density is not normalised (None when every checked one is)."""
    off = [m for m in masses if m.off]
    if not off:
        return None
    total = sum(m.log_mass for m in off)
    parts = []
    for m in off:
        known = "" if m.expected is None else f"; expected {m.expected:+.3f}, the ordered region's mass 1/K!"
        parts.append(f"{m.name!r} ({m.kind}): log mass {m.log_mass:+.3f} +- {m.se:.3f}{known}")
    return (
        "pmz: the prior's log density, as PyMC evaluates it, does not integrate to one: "
        + "; ".join(parts)
        + f". method={method!r} starts from exact prior draws and answers for the normalised prior; methods that "
        "integrate the model's density as written (method='bridge', method='auto', reference='laplace') answer for "
        f"the density, whose log Z is this one {total:+.3f}. See the 'prior normalisation' entry in docs/errors.md."
    )


def ordered_exchangeable_log_mass(model) -> dict[str, float]:
    """``{name: log c}`` of the free variables under an ``ordered`` transform whose entries are exchangeable: their
    density as PyMC writes it has mass ``c = 1 / K!`` per ordered vector of ``K`` entries (``log c = -n log K!`` for
    ``n`` such vectors). Known from the model's structure alone (no draws, no compile); other unnormalised priors
    need :func:`prior_normalisation`.

    >>> import pymc as pm
    >>> with pm.Model() as m:
    ...     mu = pm.Normal("mu", 0, 1, shape=3, transform=pm.distributions.transforms.ordered, initval=[-1, 0, 1])
    >>> {k: round(v, 4) for k, v in ordered_exchangeable_log_mass(m).items()}
    {'mu': -1.7918}
    """
    from .reference import _exchangeable, _is_ordered

    out = {}
    for rv in model.free_RVs:
        transform = model.rvs_to_transforms.get(rv)
        if transform is None or not _is_ordered(transform) or not _exchangeable(rv):
            continue
        shape = tuple(int(n) for n in model.initial_point()[model.rvs_to_values[rv].name].shape)
        k = shape[-1] if shape else 1
        n_vectors = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        out[rv.name] = -n_vectors * float(gammaln(k + 1))
    return out


def car_log_mass(model) -> dict[str, float]:
    """``{name: log c}`` of the free conditional autoregressions (``pm.CAR``): PyMC writes their log density as
    ``(1/2) (n log tau + sum_i log(1 - alpha lambda_i) - tau d' (D - alpha W) d)``, leaving out
    ``-(n/2) log 2 pi + (1/2) log det D`` (``D`` the neighbour counts, ``lambda`` the eigenvalues of
    ``D^{-1/2} W D^{-1/2}``), so the density as written has log mass ``log c = (n/2) log 2 pi - (1/2) sum_i log D_ii``
    per field, whatever ``alpha`` and ``tau``. Read from the adjacency ``W`` where it is data (no compile)."""
    from pymc.distributions.multivariate import CARRV

    out = {}
    for rv in model.free_RVs:
        if not isinstance(rv.owner.op, CARRV):
            continue
        W = data_value(rv.owner.op.dist_params(rv.owner)[1])
        if W is None:
            continue
        counts = np.asarray(W.sum(axis=0), dtype=float).ravel()
        n = counts.size
        n_fields = int(np.prod(model.initial_point()[model.rvs_to_values[rv].name].shape)) // max(n, 1)
        out[rv.name] = n_fields * (0.5 * n * np.log(2.0 * np.pi) - 0.5 * float(np.sum(np.log(counts))))
    return out


def known_log_masses(model) -> dict[str, float]:
    """``{name: log c}`` of the free variables whose density as PyMC writes it has a log mass pmz knows from the
    model's structure: ordered exchangeable entries (:func:`ordered_exchangeable_log_mass`) and conditional
    autoregressions (:func:`car_log_mass`)."""
    return {**ordered_exchangeable_log_mass(model), **car_log_mass(model)}
