"""Find the Gaussian-process structure in a PyMC model: a Gaussian latent vector and a factorised likelihood.

Riemannian-manifold HMC for GP models (Girolami & Calderhead 2011, section 8; ARM section 4) needs to know that
the model is

    v ~ N(mu_v, Sigma_v)                      the sampled (free) variable, dimension d
    f = a + A v                               the latent function values seen by the likelihood (n values)
    y_i | f ~ p(y_i | f_i), independently     Normal (identity link), Bernoulli (probit or logit), Poisson (log)

so that the prior of f is N(m, K) with ``m = a + A mu_v`` and ``K = A Sigma_v A'``. Two parameterisations occur:

* centred: ``pm.MvNormal("f", m, K)`` or ``pm.gp.Latent(...).prior("f", X, reparameterize=False)``: v = f,
  ``A = I``, ``Sigma_v = K``;
* whitened: ``pm.gp.Latent(...).prior("f", X)`` (PyMC's default): the free variable is ``f_rotated_ ~ N(0, I)``
  and ``f = m + L v`` is a Deterministic with ``L = chol(K)``, so ``A = L``, ``Sigma_v = I``.

:func:`gp_structure` reads this off the PyMC graph: the prior's parameters are evaluated (they must not depend
on free random variables: first version, fixed hyperparameters), the link is recognised from the ops around the
latent (sigmoid; ``0.5 erfc(-f / sqrt 2)`` as built by ``pm.math.invprobit``; exp) and checked numerically, and
``f = a + A v`` is verified to be affine in v. Finally the closed-form log likelihood of the structure is checked
against PyMC's at a few points. Anything else raises :class:`~pmz.model.pymc.ModelSpecificationError` naming what
was found. (``pm.Data`` in the prior or the likelihood is read when the structure is built: build it again after
``pm.set_data``.)

The expected Fisher information of one likelihood term, ``lambda(f_i) = E[-d^2 log p(y_i | f_i) / d f_i^2]``,
and its derivative are :func:`fisher_information`; :mod:`pmz.gp.riemannian_hmc` builds the metric from them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.pytensorf import rvs_in_graph
from pytensor.graph.replace import vectorize_graph
from scipy import special

from ..model.points import layout_from_model
from ..model.pymc import ModelSpecificationError

try:  # pytensor >= 2.31
    from pytensor.graph.traversal import ancestors
except ImportError:  # pragma: no cover
    from pytensor.graph.basic import ancestors

__all__ = ["GPStructure", "LIKELIHOODS", "gp_structure", "fisher_information", "log_likelihood"]

LIKELIHOODS = ("normal", "bernoulli_probit", "bernoulli_logit", "poisson_log")

_SQRT2 = np.sqrt(2.0)
_HINT = (
    "pmz's GP RMHMC supports one latent vector with a multivariate normal prior of fixed mean and covariance "
    "(pm.gp.Latent(...).prior or pm.MvNormal) and one observed variable that factorises over its elements: "
    "pm.Normal(mu=f, sigma=fixed), pm.Bernoulli(p=pm.math.invprobit(f) or pm.math.invlogit(f), or logit_p=f), "
    "pm.Poisson(mu=pm.math.exp(f)). Use kernel='hmc' for other models."
)


@dataclass(frozen=True, eq=False)
class GPStructure:
    """A latent Gaussian vector with a factorised likelihood, found in a PyMC model (see the module docstring).

    Attributes
    ----------
    latent : str
        Name of the sampled random variable (``"f"``, or ``"f_rotated_"`` for a whitened ``pm.gp.Latent``).
    value_name : str
        Its value variable (the same name: normal variables have no transform).
    parameterization : {"centered", "whitened"}
        ``"centered"``: the sampled variable is f itself (``A = I``, or a selection of its entries);
        ``"whitened"``: independent normals v with ``f = a + A v`` (``A = chol(K)`` for ``pm.gp.Latent``).
    start, stop : int
        Slice of the sampled variable in pmz's flat value space (the whole space: it is the only free variable).
    likelihood : str
        One of :data:`LIKELIHOODS`.
    y : ndarray (n,)
        Observations, raveled; ``y[i]`` depends on ``f[i]`` only.
    noise_sd : ndarray (n,) or None
        Observation sd of the Normal likelihood.
    offset, loading : ndarray (n,), (n, d)
        ``f = offset + loading @ v``.
    value_mean, value_cov : ndarray (d,), (d, d)
        Prior of the sampled variable: ``v ~ N(value_mean, value_cov)``.
    mean, cov : ndarray (n,), (n, n)
        Prior of f: ``m = a + A mu_v``, ``K = A Sigma_v A'``.
    observed : str
        Name of the observed variable.
    """

    latent: str
    value_name: str
    parameterization: str
    start: int
    stop: int
    likelihood: str
    y: np.ndarray
    noise_sd: np.ndarray | None
    offset: np.ndarray
    loading: np.ndarray
    value_mean: np.ndarray
    value_cov: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    observed: str

    @property
    def n(self) -> int:
        """Number of likelihood terms (entries of f)."""
        return self.y.size

    @property
    def d(self) -> int:
        """Dimension of the sampled variable."""
        return self.stop - self.start

    def latent_values(self, V) -> np.ndarray:
        """``f = a + A v`` for a batch ``V (N, d) -> (N, n)``."""
        return self.offset + np.asarray(V) @ self.loading.T

    def fisher_information(self, F, *, derivative: bool = True):
        """:func:`fisher_information` of this likelihood at latent values ``F (N, n)``."""
        return fisher_information(self.likelihood, F, self.noise_sd, derivative=derivative)

    def log_likelihood(self, F) -> np.ndarray:
        """:func:`log_likelihood` of this structure at latent values ``F (N, n) -> (N,)``."""
        return log_likelihood(self.likelihood, F, self.y, self.noise_sd)

    def __repr__(self):
        return (
            f"GPStructure(latent={self.latent!r}, {self.parameterization}, likelihood={self.likelihood!r}, "
            f"n={self.n}, d={self.d}, observed={self.observed!r})"
        )


# ---------------------------------------------------------------------------------------------------- likelihoods
def fisher_information(likelihood: str, f, noise_sd=None, *, derivative: bool = True):
    """Expected Fisher information ``lambda(f_i)`` of each likelihood term and its derivative ``lambda'(f_i)``.

    ``lambda(f) = E_y[-d^2 log p(y | f) / df^2]`` (Girolami & Calderhead 2011, section 8; ARM section 4):

    * Normal, identity link, sd sigma: ``lambda = 1 / sigma^2``, ``lambda' = 0``;
    * Bernoulli, logit link, ``s = sigmoid(f)``: ``lambda = s (1 - s)``, ``lambda' = s (1 - s)(1 - 2 s)``;
    * Bernoulli, probit link: ``lambda = phi(f)^2 / (Phi(f) Phi(-f))``, computed as
      ``exp(2 log phi(f) - log Phi(f) - log Phi(-f))`` (stable in both tails, where ``lambda ~ |f| phi(f)``), and
      ``lambda' = lambda (-2 f - phi(f)/Phi(f) + phi(f)/Phi(-f))``;
    * Poisson, log link: ``lambda = lambda' = exp(f)``.

    Parameters
    ----------
    likelihood : str
        One of :data:`LIKELIHOODS`.
    f : array_like
        Latent values (any shape).
    noise_sd : array_like, optional
        Normal likelihood's sd, broadcastable to ``f``.
    derivative : bool
        Also return ``lambda'``.

    Returns
    -------
    lam, dlam : ndarray
        Same shape as ``f`` (only ``lam`` when ``derivative=False``).

    Examples
    --------
    >>> lam, dlam = fisher_information("bernoulli_probit", [0.0, 40.0])
    >>> np.round(lam, 4), np.round(dlam, 4)
    (array([0.6366, 0.    ]), array([ 0., -0.]))
    """
    f = np.asarray(f, dtype=float)
    if likelihood == "normal":
        lam = np.broadcast_to(1.0 / np.asarray(noise_sd, dtype=float) ** 2, f.shape).copy()
        dlam = np.zeros_like(f) if derivative else None
    elif likelihood == "bernoulli_logit":
        s = special.expit(f)
        lam = s * (1.0 - s)
        dlam = lam * (1.0 - 2.0 * s) if derivative else None
    elif likelihood == "bernoulli_probit":
        log_phi = -0.5 * f**2 - 0.5 * np.log(2 * np.pi)
        log_cdf, log_sf = special.log_ndtr(f), special.log_ndtr(-f)
        with np.errstate(over="ignore", invalid="ignore"):
            lam = np.exp(2.0 * log_phi - log_cdf - log_sf)
            dlam = lam * (-2.0 * f - np.exp(log_phi - log_cdf) + np.exp(log_phi - log_sf)) if derivative else None
    elif likelihood == "poisson_log":
        with np.errstate(over="ignore"):
            lam = np.exp(f)
        dlam = lam.copy() if derivative else None
    else:
        raise ValueError(f"pmz: unknown likelihood {likelihood!r}; one of {LIKELIHOODS}")
    return (lam, dlam) if derivative else lam


def log_likelihood(likelihood: str, f, y, noise_sd=None) -> np.ndarray:
    """``sum_i log p(y_i | f_i)`` over the last axis of ``f (..., n)``, in closed form.

    Normal: ``-(y - f)^2 / (2 sigma^2) - log sigma - log(2 pi) / 2``; Bernoulli probit:
    ``log Phi((2y - 1) f)``; Bernoulli logit: ``-log(1 + exp(-(2y - 1) f))``; Poisson: ``y f - exp(f) - log y!``.
    """
    f = np.asarray(f, dtype=float)
    y = np.asarray(y, dtype=float)
    if likelihood == "normal":
        sd = np.asarray(noise_sd, dtype=float)
        terms = -0.5 * ((y - f) / sd) ** 2 - np.log(sd) - 0.5 * np.log(2 * np.pi)
    elif likelihood == "bernoulli_probit":
        terms = special.log_ndtr((2 * y - 1) * f)
    elif likelihood == "bernoulli_logit":
        terms = -np.logaddexp(0.0, -(2 * y - 1) * f)
    elif likelihood == "poisson_log":
        with np.errstate(over="ignore"):
            terms = y * f - np.exp(f) - special.gammaln(y + 1)
    else:
        raise ValueError(f"pmz: unknown likelihood {likelihood!r}; one of {LIKELIHOODS}")
    return np.sum(terms, axis=-1)


# ---------------------------------------------------------------------------------------------------- detection
def _constant(var, what: str, model) -> np.ndarray:
    """Evaluate a parameter graph that must not depend on random variables (fixed hyperparameters)."""
    rvs = rvs_in_graph(var)
    if rvs:
        names = sorted(str(r.name) for r in rvs)
        raise ModelSpecificationError(
            f"pmz: the {what} depends on the random variable(s) {names}. The GP RMHMC kernel needs fixed "
            "hyperparameters (first version): fix them (e.g. at type-II maximum-likelihood values) or use "
            "kernel='hmc', which samples hyperparameters too."
        )
    with model:
        return np.asarray(var.eval(), dtype=float)


def _latent_prior(model, rv, shape):
    """``(parameterization, mu_v (d,), Sigma_v (d, d))`` of the single free variable."""
    op = type(rv.owner.op).__name__
    if op not in ("MvNormalRV", "NormalRV"):
        raise ModelSpecificationError(
            f"pmz: the free variable {rv.name!r} is a {op.replace('RV', '')}, not a multivariate normal latent. {_HINT}"
        )
    if model.rvs_to_transforms.get(rv) is not None:
        raise ModelSpecificationError(f"pmz: the latent {rv.name!r} has a value transform; {_HINT}")
    if op == "MvNormalRV":
        if len(shape) != 1:
            raise ModelSpecificationError(
                f"pmz: the latent {rv.name!r} is a batch of multivariate normals of shape {shape}; one latent "
                f"vector is supported. {_HINT}"
            )
        mu = np.broadcast_to(_constant(rv.owner.inputs[2], f"mean of {rv.name!r}", model), shape)
        cov = _constant(rv.owner.inputs[3], f"covariance of {rv.name!r}", model)
        if cov.shape != shape * 2:
            raise ModelSpecificationError(f"pmz: the covariance of {rv.name!r} has shape {cov.shape}; {_HINT}")
        return "centered", np.array(mu, dtype=float), 0.5 * (cov + cov.T)
    mu = np.broadcast_to(_constant(rv.owner.inputs[2], f"mean of {rv.name!r}", model), shape).ravel()
    sd = np.broadcast_to(_constant(rv.owner.inputs[3], f"sd of {rv.name!r}", model), shape).ravel()
    return "whitened", np.array(mu, dtype=float), np.diag(sd**2)


_OBSERVED = {"NormalRV": "normal", "BernoulliRV": "bernoulli", "PoissonRV": "poisson"}
_LINK_OPS = {  # scalar op of the inverse link -> (likelihood, eta as a function of the op's input)
    "bernoulli": {
        "Sigmoid": ("bernoulli_logit", lambda z: z),
        "Erfc": ("bernoulli_probit", lambda z: -_SQRT2 * z),  # Phi(f) = erfc(-f / sqrt 2) / 2
        "Erf": ("bernoulli_probit", lambda z: _SQRT2 * z),  # Phi(f) = (1 + erf(f / sqrt 2)) / 2
    },
    "poisson": {"Exp": ("poisson_log", lambda z: z)},
}


def _link_candidates(kind: str, param, value_var):
    """``(likelihood, eta graph)`` pairs for a Bernoulli probability or a Poisson rate: each node of an inverse-link
    op (sigmoid, erfc, erf; exp) in the parameter's graph that depends on the latent, nearest to the parameter
    first."""
    ops = _LINK_OPS[kind]
    seen, queue = set(), deque([param])
    while queue:
        var = queue.popleft()
        node = var.owner
        if node is None or node in seen or value_var not in ancestors([var]):
            continue
        seen.add(node)
        scalar_op = getattr(node.op, "scalar_op", None)
        name = type(scalar_op).__name__ if scalar_op is not None else None
        if name in ops and len(node.inputs) == 1:
            likelihood, eta = ops[name]
            yield likelihood, eta(node.inputs[0])
        queue.extend(node.inputs)


def _candidates(model, obs, value_var, y):
    """``(likelihood, eta graph, noise_sd)`` readings of the observed variable to be checked numerically.

    Normal, Bernoulli and Poisson variables are read through their parameters (and link ops); any other observed
    variable (e.g. a ``pm.CustomDist`` computing the probit log density stably) is tried as a probit or logit
    Bernoulli (0/1 data) or a log-link Poisson (count data) of each of its inputs that depends on the latent.
    """
    kind = _OBSERVED.get(type(obs.owner.op).__name__)
    if kind == "normal":
        sd = _constant(obs.owner.inputs[3], f"sigma of {obs.name!r}", model)
        yield "normal", model.replace_rvs_by_values([obs.owner.inputs[2]])[0], np.broadcast_to(sd, y.shape).ravel()
    elif kind is not None:
        param = model.replace_rvs_by_values([obs.owner.inputs[2]])[0]
        for likelihood, eta in _link_candidates(kind, param, value_var):
            yield likelihood, eta, None
    else:
        readings = []
        if np.all((y == 0) | (y == 1)):
            readings += ["bernoulli_probit", "bernoulli_logit"]
        if np.all((y >= 0) & (y == np.round(y))):
            readings += ["poisson_log"]
        for inp in model.replace_rvs_by_values(list(obs.owner.inputs)):
            if str(getattr(inp.type, "dtype", "")).startswith("float") and value_var in ancestors([inp]):
                for likelihood in readings:
                    yield likelihood, inp, None


def _ops_in(obs, value_var, model) -> list[str]:
    """Names of the ops between the latent and an observed variable's parameters (for error messages)."""
    names = set()
    for var in ancestors(model.replace_rvs_by_values(list(obs.owner.inputs)), blockers=[value_var]):
        if var.owner is not None and value_var in ancestors([var]):
            op = var.owner.op
            names.add(type(getattr(op, "scalar_op", op)).__name__)
    return sorted(names)


def _batched_fn(value_var, output, shape):
    """Compiled ``V (N, d) -> output(V) (N, ...)`` from a single-point graph of ``value_var`` (of the given
    shape); small evaluations during detection, so compiled without C code."""
    V = pt.matrix("V", dtype="float64")
    batched = vectorize_graph(output, replace={value_var: V.reshape((V.shape[0], *shape)).astype(value_var.dtype)})
    return pytensor.function([V], batched, on_unused_input="ignore", mode="FAST_COMPILE")


def _probe_points(mu, cov, rng):
    """Three points spread like the prior (by its Cholesky factor, or the sds if that fails)."""
    try:
        chol = np.linalg.cholesky(cov + 1e-12 * np.eye(mu.size))
        return mu + rng.standard_normal((3, mu.size)) @ chol.T
    except np.linalg.LinAlgError:
        return mu + rng.standard_normal((3, mu.size)) * np.sqrt(np.maximum(np.diag(cov), 1e-12))


def _affine_map(eta_fn, y_shape, mu, probes):
    """``(a, A)`` with ``eta(v) = a + A v`` (from ``eta`` at mu and mu + unit vectors), or None if eta is not
    affine at the probe points (or has the wrong shape)."""
    d = mu.size
    try:
        base = np.concatenate([mu[None], mu + np.eye(d), probes])
        values = np.asarray(eta_fn(base), dtype=float)
        values = np.broadcast_to(values, (base.shape[0], *y_shape)).reshape(base.shape[0], -1)
    except Exception:
        return None
    a0 = values[0]
    A = (values[1 : d + 1] - a0).T
    a = a0 - A @ mu
    predicted = a + (probes @ A.T)
    scale = 1.0 + np.abs(values[d + 1 :])
    if not (np.all(np.isfinite(values)) and np.all(np.abs(predicted - values[d + 1 :]) <= 1e-7 * scale)):
        return None
    return a, A


def gp_structure(model=None) -> GPStructure:
    """Detect the GP structure of a PyMC model (see the module docstring).

    Parameters
    ----------
    model : pymc.Model, optional
        Default: the model of the current ``with`` context.

    Returns
    -------
    GPStructure

    Raises
    ------
    ModelSpecificationError
        Naming what was found when the model is not one latent Gaussian vector with fixed mean and covariance
        and one factorised Normal / Bernoulli (probit, logit) / Poisson (log) likelihood.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> with pm.Model() as model:
    ...     gp = pm.gp.Latent(cov_func=pm.gp.cov.ExpQuad(1, ls=0.5))
    ...     f = gp.prior("f", np.linspace(0, 1, 4)[:, None])
    ...     _ = pm.Bernoulli("y", p=pm.math.invprobit(f), observed=[0, 1, 1, 0])
    >>> gp_structure(model)
    GPStructure(latent='f_rotated_', whitened, likelihood='bernoulli_probit', n=4, d=4, observed='y')
    """
    model = pm.modelcontext(model)
    free = list(model.free_RVs)
    if len(free) != 1:
        names = [rv.name for rv in free]
        gaussian = ("MvNormalRV", "NormalRV")
        others = [rv.name for rv in free if type(rv.owner.op).__name__ not in gaussian] or names
        raise ModelSpecificationError(
            f"pmz: the model has {len(free)} free variables {names}; the GP RMHMC kernel samples exactly one latent "
            f"vector. {others} are hyperparameters or other random variables: the first version needs the "
            f"covariance, mean and noise fixed (e.g. at type-II maximum-likelihood values). {_HINT}"
        )
    if model.potentials:
        raise ModelSpecificationError(
            f"pmz: the model has pm.Potential terms {[p.name for p in model.potentials]}; the GP metric would "
            f"ignore them. {_HINT}"
        )
    if len(model.observed_RVs) != 1:
        raise ModelSpecificationError(
            f"pmz: the model has {len(model.observed_RVs)} observed variables "
            f"{[rv.name for rv in model.observed_RVs]}; exactly one is supported. {_HINT}"
        )
    rv, obs = free[0], model.observed_RVs[0]
    value_var = model.rvs_to_values[rv]
    block = layout_from_model(model).block_of(value_var.name)
    parameterization, mu_v, cov_v = _latent_prior(model, rv, block.shape)

    y = np.asarray(model.rvs_to_values[obs].eval(), dtype=float)
    if value_var not in ancestors(model.replace_rvs_by_values(list(obs.owner.inputs))):
        raise ModelSpecificationError(f"pmz: the observed {obs.name!r} does not depend on the latent {rv.name!r}")

    # each reading of the likelihood must be affine in the latent and reproduce PyMC's log likelihood exactly at
    # a few probe points spread like the prior
    probes = _probe_points(mu_v, cov_v, np.random.default_rng(0))
    pymc_ll = np.asarray(_batched_fn(value_var, model.logp(vars=[obs], sum=True), block.shape)(probes), dtype=float)
    found, tried = None, []
    for likelihood, eta, noise_sd in _candidates(model, obs, value_var, y):
        tried.append(likelihood)
        affine = _affine_map(_batched_fn(value_var, eta, block.shape), y.shape, mu_v, probes)
        if affine is None:
            continue
        ours = log_likelihood(likelihood, affine[0] + probes @ affine[1].T, y.ravel(), noise_sd)
        if np.allclose(ours, pymc_ll, rtol=1e-7, atol=1e-7):
            found = likelihood, affine, noise_sd
            break
    if found is None:
        op = type(obs.owner.op).__name__.replace("RV", "")
        raise ModelSpecificationError(
            f"pmz: the observed {obs.name!r} ({op}) is not a factorised likelihood of an affine function of the latent "
            f"{rv.name!r} that pmz recognises (tried {sorted(set(tried)) or 'nothing'}; ops between latent and "
            f"observation: {_ops_in(obs, value_var, model)}). {_HINT}"
        )
    likelihood, (a, A), noise_sd = found
    cov_f = A @ cov_v @ A.T
    return GPStructure(
        latent=rv.name,
        value_name=value_var.name,
        parameterization=parameterization,
        start=block.start,
        stop=block.stop,
        likelihood=likelihood,
        y=y.ravel(),
        noise_sd=noise_sd,
        offset=a,
        loading=A,
        value_mean=mu_v,
        value_cov=cov_v,
        mean=a + A @ mu_v,
        cov=0.5 * (cov_f + cov_f.T),
        observed=obs.name,
    )
