"""Reference distributions q on the flat value space: exact draws and a normalised log density.

A reference is where an annealing path starts. Two are built from a PyMC model:

* :class:`PriorReference` -- the prior itself, pushed to the unconstrained space: draws are made by forward
  sampling the free random variables and applying each value transform; the log density is the compiled log
  prior (Jacobians included), normalised when every prior is proper.
* :class:`GaussianReference` -- a multivariate normal, e.g. :func:`laplace_reference` at the MAP with the
  Laplace covariance ``(-H)^{-1}`` (Hessian of log prior + log lik by pytensor, eigenvalues floored when it is
  not positive definite).

Every reference has ``sample(rng, n) -> (n, dim)``, ``log_density(X) -> (n,)`` and
``grad_log_density(X) -> (n, dim)``, and ``log_z = 0`` (normalised).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.replace import clone_replace
from pytensor.tensor.random.type import RandomGeneratorType
from scipy import optimize

from pymc.pytensorf import reseed_rngs

from .graphs import graph_inputs
from .pymc import CompiledModel

__all__ = [
    "PriorReference",
    "GaussianReference",
    "StudentTReference",
    "TruncatedStudentTReference",
    "STUDENT_T_DF",
    "laplace_reference",
    "prior_draws_of",
    "find_map",
]

STUDENT_T_DF = 7.0  # degrees of freedom of the heavy-tailed references fitted near a posterior (the default's
#                     modes-route components and its importance route's reference): tails heavier than a Gaussian's
#                     that still have a variance


def _is_ordered(transform) -> bool:
    """Whether a value transform is PyMC's ``ordered`` (alone or inside a ``Chain``)."""
    from pymc.distributions.transforms import Ordered

    if isinstance(transform, Ordered):
        return True
    return any(_is_ordered(t) for t in getattr(transform, "transform_list", ()))


def _exchangeable(rv) -> bool:
    """Whether the entries of ``rv`` along its last axis are iid given its parameters: an elementwise
    distribution whose every parameter is the same along that axis (broadcast, or a constant with equal values)."""
    from pytensor.tensor.random.op import RandomVariable

    op = rv.owner.op
    if not isinstance(op, RandomVariable) or op.ndim_supp != 0 or rv.type.ndim == 0:
        return False
    for param in op.dist_params(rv.owner):
        if param.type.ndim == 0 or param.type.broadcastable[-1]:
            continue
        if any(isinstance(v.type, RandomGeneratorType) for v in graph_inputs([param])):
            return False  # depends on other random variables and varies along the axis
        try:
            value = np.asarray(param.eval())
        except Exception:
            return False
        if not np.all(value == value[..., :1]):
            return False
    return True


def _value_space_draw_graph(model):
    """Single-draw graph: the free RVs pushed through their value transforms and raveled into one vector.

    A variable under an ``ordered`` transform whose entries are exchangeable is sorted before the transform (and
    the variables that depend on it see the sorted value): sorting iid draws gives exactly the prior density
    restricted to the ordered region and renormalised. Returns the graph and the names of the sorted variables.
    """
    pieces, sort = [], {}
    for rv in model.free_RVs:
        transform = model.rvs_to_transforms.get(rv)
        if transform is not None and _is_ordered(transform) and _exchangeable(rv):
            sort[rv] = pt.sort(rv, axis=-1)
        value = transform.forward(rv, *rv.owner.inputs) if transform is not None else rv
        pieces.append(pt.as_tensor(value).astype("float64").ravel())
    graph = pt.concatenate(pieces)
    if sort:
        graph = clone_replace(graph, replace=sort)
    return graph, [rv.name for rv in sort]


def prior_draws_of(compiled: CompiledModel, names, rng, n: int, *, mode=None):
    """``n`` prior draws of the named free variables alone (they and their ancestors forward-sampled, nothing
    else), pushed through their value transforms and flattened in the model's order: ``(n, size)``; None where a
    prior cannot be drawn from. Starts for a search over a few hyperparameters of a model whose other variables
    cost much to draw (a state-space model's 2000 states by a scan: 0.2 s per draw); ordered variables are not
    sorted (starts need not follow the prior exactly)."""
    model = compiled.model
    pieces = []
    for rv in model.free_RVs:
        if rv.name in names:
            transform = model.rvs_to_transforms.get(rv)
            value = transform.forward(rv, *rv.owner.inputs) if transform is not None else rv
            pieces.append(pt.as_tensor(value).astype("float64").ravel())
    try:
        fn = compiled._compile_inputs([], pt.concatenate(pieces), mode=mode)
        reseed_rngs([i.variable for i in fn.maker.inputs if isinstance(i.variable.type, RandomGeneratorType)],
                    int(rng.integers(2**63)))
        return np.array([fn() for _ in range(int(n))], dtype=float)
    except Exception:  # noqa: BLE001 -- no random generator for some prior: no starts from it
        return None


class PriorReference:
    """The model's prior in the flat unconstrained space.

    Draws are exact: the free random variables are forward-sampled by one compiled function (one call per
    draw: pytensor cannot yet add a batch dimension to every PyMC distribution, and this happens once per run,
    not per annealing step) and pushed through their value transforms. The log density is the compiled log
    prior with Jacobians, normalised when every prior is proper.

    Variables under PyMC's ``ordered`` transform: the value space holds only ordered vectors, and PyMC's log
    density there is the prior's density restricted to the ordered region, not renormalised. Draws are made from
    that restricted density, renormalised: exchangeable entries (``pm.Normal("mu", 0, 5, shape=3,
    transform=ordered)``) are sorted; otherwise draws that are not ordered are rejected (an error names the
    variable when fewer than 5% of the draws are ordered). For exchangeable entries the restricted density has
    mass ``1 / K!`` per ordered vector of length K: methods that start from these draws answer for the
    renormalised prior, i.e. the evidence of the model without the ordering (label switching allowed); methods
    that integrate the model's density as written (bridge, auto) give ``log K!`` less.
    See :func:`pmz.model.prior_mass.prior_normalisation`, which measures the difference.
    """

    name = "prior"
    log_z = 0.0
    min_acceptance = 0.05  # ordered variables by rejection: below this fraction of ordered draws, an error

    def __init__(self, compiled: CompiledModel, *, mode=None):
        self.compiled = compiled
        self.model = compiled.model
        self.dim = compiled.dim
        self.mode = mode  # None: the model's own backend; "FAST_COMPILE" for a few hundred draws (no C compile)
        self._fn = None
        model = self.model
        self.ordered = [  # (name, flat slice, transform name) of the variables under an ordered transform
            (rv.name, compiled.layout.block_of(rv.name), type(model.rvs_to_transforms[rv]).__name__)
            for rv in model.free_RVs
            if model.rvs_to_transforms.get(rv) is not None and _is_ordered(model.rvs_to_transforms[rv])
        ]
        self.sorted_names: list[str] = []

    def _build(self):
        # the model's own backend and compile clock (compile_mode= and compile_time cover the prior sampler)
        graph, self.sorted_names = _value_space_draw_graph(self.model)
        self._fn = self.compiled._compile_inputs([], graph, mode=self.mode)
        self._shared_rngs = [
            i.variable for i in self._fn.maker.inputs if isinstance(i.variable.type, RandomGeneratorType)
        ]

    def _valid(self, x) -> bool:
        """Whether a flat draw satisfies every ordered constraint (an unordered vector maps to NaN)."""
        return all(np.isfinite(x[b.start : b.stop]).all() for _, b, _ in self.ordered)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` exact prior draws in the flat value space, shape ``(n, dim)``."""
        if self._fn is None:
            self._build()
        reseed_rngs(self._shared_rngs, int(rng.integers(2**63)))
        n = int(n)
        X = np.empty((n, self.dim))
        if not self.ordered:
            for i in range(n):
                X[i] = self._draw()
            return X
        tried = kept = 0
        while kept < n:
            x = self._draw()
            tried += 1
            if self._valid(x):
                X[kept] = x
                kept += 1
            elif tried >= 100 and kept < self.min_acceptance * tried:
                self._rejection_error(kept, tried)
        return X

    def _draw(self) -> np.ndarray:
        """One prior draw; a clear error where a distribution cannot be drawn from (a ``pm.CustomDist`` without
        ``random=``)."""
        try:
            return self._fn()
        except NotImplementedError as err:
            from .pymc import ModelSpecificationError

            why = " ".join(str(err).split())
            raise ModelSpecificationError(
                f"pmz: this method starts from exact prior draws, and a prior cannot be drawn from ({why}). Give "
                "the distribution a random= function, or use method='auto' or 'bridge' (they start from posterior "
                "draws), or reference='laplace' (a path from a Gaussian at the posterior mode)"
            ) from err

    def _rejection_error(self, kept, tried):
        from .pymc import ModelSpecificationError

        names = [name for name, _, _ in self.ordered]
        unsorted = [name for name in names if name not in self.sorted_names]
        raise ModelSpecificationError(
            f"pmz: only {kept} of {tried} exact prior draws satisfy the ordered transform of {names}: the prior of "
            f"{unsorted or names} does not put its entries in order, and its entries are not exchangeable (their "
            "parameters differ), so sorting the draws would change the prior. Prior-draw methods cannot start here; "
            "use reference='laplace' (a path from a Gaussian at the MAP) or method='auto' (bridge sampling from "
            "posterior draws), which integrate the model's density as written."
        )

    def log_density(self, X) -> np.ndarray:
        return self.compiled.log_densities(X)[0]

    def grad_log_density(self, X) -> np.ndarray:
        return self.compiled.log_densities_and_grads(X)[2]

    def __repr__(self):
        return f"PriorReference(dim={self.dim})"


class GaussianReference:
    """Multivariate normal reference ``N(mean, cov)`` on the flat value space.

    Parameters
    ----------
    mean : array (dim,)
    cov : array (dim, dim), symmetric positive definite
    name : str
    """

    log_z = 0.0

    def __init__(self, mean, cov, *, name: str = "gaussian"):
        self.mean = np.asarray(mean, dtype=float).reshape(-1)
        self.cov = np.atleast_2d(np.asarray(cov, dtype=float))
        self.dim = self.mean.size
        if self.cov.shape != (self.dim, self.dim):
            raise ValueError(f"cov must have shape ({self.dim}, {self.dim}), got {self.cov.shape}")
        try:
            self.chol = np.linalg.cholesky(self.cov)
        except np.linalg.LinAlgError as err:
            raise ValueError("the reference covariance is not positive definite") from err
        self.name = name
        self._log_norm = -0.5 * self.dim * np.log(2 * np.pi) - np.sum(np.log(np.diag(self.chol)))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.mean + rng.standard_normal((int(n), self.dim)) @ self.chol.T

    def _whiten(self, X):
        from scipy.linalg import solve_triangular

        # no finiteness check: a diverged trajectory's inf / NaN state gets a non-finite density (rejected), not
        # an exception
        return solve_triangular(
            self.chol, (np.asarray(X, dtype=float) - self.mean).T, lower=True, check_finite=False
        ).T

    def log_density(self, X) -> np.ndarray:
        Z = self._whiten(X)
        return self._log_norm - 0.5 * np.sum(Z * Z, axis=1)

    def grad_log_density(self, X) -> np.ndarray:
        from scipy.linalg import cho_solve

        return -cho_solve((self.chol, True), (np.asarray(X, dtype=float) - self.mean).T, check_finite=False).T

    def __repr__(self):
        return f"GaussianReference(name={self.name!r}, dim={self.dim})"


class StudentTReference(GaussianReference):
    """Multivariate Student-t with location ``mean``, scale matrix ``cov`` and ``df`` degrees of freedom.

    ``log q(x) = log Gamma((df + d)/2) - log Gamma(df/2) - d/2 log(df pi) - log|L| - (df + d)/2 log(1 + r^2/df)``
    with ``r^2 = (x - mean)' cov^{-1} (x - mean)``. Heavier tails than a Gaussian: a safer bridge-sampling
    reference when the posterior's tails are uncertain (the bridge needs q to cover p1). Draws:
    ``mean + L z / sqrt(g / df)``, ``z ~ N(0, I)``, ``g ~ chi2(df)``.
    """

    def __init__(self, mean, cov, df: float = 5.0, *, name: str = "student_t"):
        super().__init__(mean, cov, name=name)
        if not df > 0:
            raise ValueError(f"df must be positive, got {df!r}")
        from scipy.special import gammaln

        self.df = float(df)
        d = self.dim
        self._log_norm = (
            gammaln((self.df + d) / 2)
            - gammaln(self.df / 2)
            - 0.5 * d * np.log(self.df * np.pi)
            - np.sum(np.log(np.diag(self.chol)))
        )

    def sample(self, rng, n):
        z = rng.standard_normal((int(n), self.dim)) @ self.chol.T
        g = rng.chisquare(self.df, size=(int(n), 1))
        return self.mean + z / np.sqrt(g / self.df)

    def log_density(self, X):
        Z = self._whiten(X)
        r2 = np.sum(Z * Z, axis=1)
        return self._log_norm - 0.5 * (self.df + self.dim) * np.log1p(r2 / self.df)

    def grad_log_density(self, X):
        from scipy.linalg import cho_solve

        X = np.asarray(X, dtype=float)
        r2 = np.sum(self._whiten(X) ** 2, axis=1)
        prec_dx = cho_solve((self.chol, True), (X - self.mean).T, check_finite=False).T
        return -((self.df + self.dim) / (self.df + r2))[:, None] * prec_dx

    def __repr__(self):
        return f"StudentTReference(name={self.name!r}, dim={self.dim}, df={self.df})"


class TruncatedStudentTReference(StudentTReference):
    """A multivariate Student-t restricted to the ellipsoid ``r^2 = (x - mean)' cov^{-1} (x - mean) <= radius^2``
    and renormalised: ``log q(x) = log t(x) - log c`` inside, ``-inf`` outside, ``c = P(r <= radius)``, where
    ``r^2 / d ~ F(d, df)`` under the Student-t. Draws by rejection (``c`` is their acceptance rate). A defensive
    heavy-tailed component without the draws a thousand scales out where a model's numbers overflow."""

    def __init__(self, mean, cov, df: float, radius: float, *, name: str = "truncated_student_t"):
        super().__init__(mean, cov, df, name=name)
        from scipy import stats

        self.radius = float(radius)
        self.log_mass = float(np.log(stats.f.cdf(self.radius**2 / self.dim, self.dim, self.df)))

    def _inside(self, X):
        return np.sum(self._whiten(X) ** 2, axis=1) <= self.radius**2

    def sample(self, rng, n):
        n, out = int(n), []
        while sum(len(x) for x in out) < n:
            X = super().sample(rng, max(16, int(1.2 * (n - sum(len(x) for x in out)) / np.exp(self.log_mass))))
            out.append(X[self._inside(X)])
        return np.concatenate(out)[:n]

    def log_density(self, X):
        return np.where(self._inside(X), super().log_density(X) - self.log_mass, -np.inf)



def curvature_reference(compiled: CompiledModel, at, cov, *, step: float = 1e-3):
    """Gaussian at ``at`` whose covariance is the inverse curvature of the log posterior there, or None.

    The negative Hessian ``-H`` of ``log p~`` at ``at`` is measured by central differences of the gradient along
    the columns of ``L``, the Cholesky factor of ``cov`` (the draws' covariance): ``-H L e_i ~ -(g(at + h L e_i) -
    g(at - h L e_i)) / 2h``, all ``2 dim`` gradients in one batched call. In those whitened coordinates
    ``W = L' (-H) L`` (symmetrised), and the reference covariance is ``L W^-1 L'``.

    Why: a covariance estimated from ``n`` draws in ``d`` dimensions is off by about ``d^2 / 4n`` nats of
    Kullback-Leibler divergence (20 nats at d = 400 with 2000 draws), while the curvature carries no sampling
    noise; for a Gaussian posterior it is exact. Returns None when ``W`` is not positive definite or not finite
    (``at`` not in a concave region).
    """
    at = np.asarray(at, dtype=float)
    chol = np.linalg.cholesky(np.atleast_2d(cov))
    dim = at.size
    offsets = step * chol.T  # row i: h L e_i
    points = np.concatenate([at + offsets, at - offsets])
    _, _, glp, gll = compiled.log_densities_and_grads(points)
    grad = glp + gll
    neg_hessian_l = -(grad[:dim] - grad[dim:]).T / (2 * step)  # column i: -H L e_i
    whitened = chol.T @ neg_hessian_l
    whitened = 0.5 * (whitened + whitened.T)
    if not np.all(np.isfinite(whitened)):
        return None
    eigval, eigvec = np.linalg.eigh(whitened)
    if eigval.min() <= 1e-8 * max(eigval.max(), 1e-300):
        return None
    root = chol @ (eigvec / np.sqrt(eigval))  # L W^-1/2: the reference covariance is root root'
    return GaussianReference(at, root @ root.T, name="gaussian (curvature)")


def find_map(compiled: CompiledModel, x0=None, *, maxiter: int = 2000):
    """Maximum a posteriori point in the flat unconstrained space (L-BFGS-B on -(log prior + log lik))."""
    x0 = compiled.initial_point() if x0 is None else np.asarray(x0, dtype=float)

    def neg(x):
        lp, ll, glp, gll = compiled.log_densities_and_grads(x[None, :])
        value = -(lp[0] + ll[0])
        if not np.isfinite(value):
            return 1e300, np.zeros_like(x)
        return value, -(glp[0] + gll[0])

    res = optimize.minimize(neg, x0, jac=True, method="L-BFGS-B", options={"maxiter": maxiter})
    return res.x, res


def laplace_reference(compiled: CompiledModel, *, x0=None, scale: float = 1.0, min_eigenvalue: float = 1e-8):
    """Gaussian at the MAP with the Laplace covariance ``scale^2 * (-H)^{-1}``.

    If ``-H`` is not positive definite its eigenvalues are floored at ``min_eigenvalue`` times the largest one
    (a warning says so). ``scale > 1`` widens the reference, which helps when the posterior has heavier tails.
    """
    x_map, _ = find_map(compiled, x0)
    precision = -np.asarray(compiled.hessian_log_posterior()(x_map), dtype=float).reshape(compiled.dim, compiled.dim)
    precision = 0.5 * (precision + precision.T)
    eigval, eigvec = np.linalg.eigh(precision)
    floor = min_eigenvalue * max(np.max(np.abs(eigval)), 1.0)
    if np.any(eigval <= floor):
        warnings.warn(
            "pmz: the negative Hessian at the MAP is not positive definite; its eigenvalues were floored "
            "to build the Laplace reference.",
            stacklevel=2,
        )
        eigval = np.maximum(eigval, floor)
    cov = (eigvec / eigval) @ eigvec.T * scale**2
    return GaussianReference(x_map, 0.5 * (cov + cov.T), name="laplace")
