"""Energy models: a user-supplied vectorised log density over a batch of states, and an exact base f0.

An energy model is the "plain numpy" front end of pmz (RBMs, Ising and Potts lattices, anything with a
vectorised unnormalised log density). The user gives

* ``log_density(X) -> (n,)``: the unnormalised target ``log f1(x) = -E(x)`` for a batch ``X (n, dim)``
  (a NumPy function, or a PyTensor expression through :meth:`EnergyModel.from_pytensor`);
* ``base``: the start distribution f0 with exact draws and a *normalised* log density (independent Bernoulli
  with given means -- the "base-rate" distribution of RBM papers --, uniform spins, uniform categories, or a
  :class:`~pmz.model.reference.GaussianReference` for continuous states);
* optionally a ``kernel`` that knows the model's structure (block Gibbs, checkerboard heat bath).

pmz then anneals along the geometric path (docs/methods.md, section 0; :class:`pmz.families.energy.EnergyFamily`)

    log f_beta(x) = (1 - beta) log f0(x) + beta log f1(x) = log f0(x) + beta U(x),   U = log f1 - log f0,

and reports ``log Z = log sum_x f1(x)`` (an integral for continuous states): the base is normalised, so
``log Z0 = 0``. To report log Z *relative to a base* (e.g. the Ising convention ``log Z_torus - N log 2``), put
the base's log density into ``log_density`` (``log f1 = log f0 - E``), as :mod:`pmz.boltzmann.ising` does.

Discrete states live in the same float64 array as continuous ones, holding exact integer values (0/1 bits,
+-1 spins, category indices 0..q-1); ``base.values`` lists the values a discrete site can take.
"""

from __future__ import annotations

import numpy as np

__all__ = ["EnergyModel", "BernoulliBase", "UniformSpins", "UniformCategorical"]


def _as_batch(X, dim: int) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != dim:
        raise ValueError(f"states must have shape (n, {dim}), got {X.shape}")
    return X


class BernoulliBase:
    """Independent Bernoulli sites with means ``p``: ``log f0(x) = sum_i x_i log p_i + (1 - x_i) log(1 - p_i)``.

    With ``p`` set to the data marginals this is the "base-rate" distribution of Salakhutdinov & Murray (2008).
    Means are clipped to ``[clip, 1 - clip]`` so that every state has positive probability.
    """

    name = "bernoulli"
    log_z = 0.0

    def __init__(self, means, clip: float = 1e-3):
        p = np.clip(np.asarray(means, dtype=np.float64).ravel(), clip, 1 - clip)
        self.means = p
        self.dim = p.size
        self.values = np.array([0.0, 1.0])
        self.logit = np.log(p) - np.log1p(-p)
        self._log1m = np.sum(np.log1p(-p))

    def sample(self, rng, n):
        return (rng.uniform(size=(n, self.dim)) < self.means).astype(np.float64)

    def log_density(self, X):
        return _as_batch(X, self.dim) @ self.logit + self._log1m


class UniformSpins:
    """Independent uniform +-1 spins: ``log f0(x) = -dim log 2``."""

    name = "uniform_spins"
    log_z = 0.0

    def __init__(self, dim: int):
        self.dim = int(dim)
        self.values = np.array([-1.0, 1.0])

    def sample(self, rng, n):
        return 2.0 * rng.integers(0, 2, size=(n, self.dim)) - 1.0

    def log_density(self, X):
        return np.full(_as_batch(X, self.dim).shape[0], -self.dim * np.log(2.0))


class UniformCategorical:
    """Independent uniform categories ``0..q-1`` per site: ``log f0(x) = -dim log q``."""

    name = "uniform_categorical"
    log_z = 0.0

    def __init__(self, dim: int, q: int):
        self.dim, self.q = int(dim), int(q)
        self.values = np.arange(self.q, dtype=np.float64)

    def sample(self, rng, n):
        return rng.integers(0, self.q, size=(n, self.dim)).astype(np.float64)

    def log_density(self, X):
        return np.full(_as_batch(X, self.dim).shape[0], -self.dim * np.log(self.q))


class EnergyModel:
    """A vectorised unnormalised log density ``log f1`` with an exactly samplable base f0.

    Parameters
    ----------
    log_density : callable
        ``X (n, dim) -> (n,)``, the unnormalised log target ``-E(x)``; must be vectorised over the batch.
    base : object
        Start distribution f0: ``dim``, ``sample(rng, n)``, normalised ``log_density(X)``, ``log_z`` (0), and
        ``values`` (array of allowed site values) for discrete states or ``grad_log_density`` for continuous ones.
    grad_log_density : callable, optional
        ``X -> (n, dim)`` gradient of ``log_density`` (continuous states; enables HMC).
    kernel : pmz Kernel, optional
        The model's natural kernel (default for ``pmz.evidence``); otherwise site-by-site Gibbs for discrete
        states, HMC (with gradients) or random-walk Metropolis for continuous ones.
    sample_target : callable, optional
        ``(rng, n) -> (n, dim)`` draws of the target ``f1 / Z`` (exact, or equilibrium draws from a sampler
        known to mix), used to start reverse annealing paths (``reverse_start="auto"``).
    name : str

    Attributes
    ----------
    kind : "energy"
        The :class:`~pmz.model.target.Target` kind.
    dim : int
    discrete : bool
        Whether states are discrete (the base has ``values``).
    n_logp_evals : int
        States evaluated so far.

    Examples
    --------
    >>> import numpy as np
    >>> J = 0.3 * np.ones((3, 3)) - 0.3 * np.eye(3)          # three fully coupled +-1 spins
    >>> model = EnergyModel(lambda X: 0.5 * np.einsum("ni,ij,nj->n", X, J, X), UniformSpins(3))
    >>> model.log_f1(np.ones((2, 3)))
    array([0.9, 0.9])
    """

    kind = "energy"  # the target kind (pmz.model.target.Target)

    def __init__(
        self, log_density, base, *, grad_log_density=None, kernel=None, sample_target=None, name: str = "energy model"
    ):
        if not callable(log_density):
            raise TypeError("log_density must be a callable X (n, dim) -> (n,)")
        for member in ("dim", "sample", "log_density"):
            if not hasattr(base, member):
                raise TypeError(f"the base distribution needs .{member} (see pmz.model.energy_model.BernoulliBase)")
        self._log_density = log_density
        self._grad = grad_log_density
        self.base = base
        self.dim = int(base.dim)
        self.kernel = kernel
        self.sample_target = sample_target
        self.name = name
        self.discrete = hasattr(base, "values")
        self.n_logp_evals = 0
        self.n_grad_evals = 0

    @classmethod
    def from_pytensor(cls, build, base, **kwargs) -> "EnergyModel":
        """Build from a PyTensor expression: ``build(X)`` maps a symbolic matrix ``X (n, dim)`` to ``(n,)``.

        The expression is compiled once (with its gradient when the base is continuous).
        """
        import pytensor
        import pytensor.tensor as pt

        X = pt.matrix("X", dtype="float64")
        out = pt.as_tensor(build(X)).astype("float64")
        fn = pytensor.function([X], out)
        grad = None
        if not hasattr(base, "values"):
            grad = pytensor.function([X], pytensor.grad(out.sum(), X))
        return cls(fn, base, grad_log_density=kwargs.pop("grad_log_density", grad), **kwargs)

    @property
    def has_grad(self) -> bool:
        return self._grad is not None and hasattr(self.base, "grad_log_density")

    def log_f1(self, X) -> np.ndarray:
        """The unnormalised log target at a batch of states (one vectorised call)."""
        X = _as_batch(X, self.dim)
        out = np.asarray(self._log_density(X), dtype=np.float64)
        if out.shape != (X.shape[0],):
            raise ValueError(f"log_density must return shape ({X.shape[0]},), got {out.shape}")
        self.n_logp_evals += X.shape[0]
        return out

    def grad_log_f1(self, X) -> np.ndarray:
        if self._grad is None:
            raise ValueError(f"{self.name} has no grad_log_density")
        X = _as_batch(X, self.dim)
        self.n_grad_evals += X.shape[0]
        return np.asarray(self._grad(X), dtype=np.float64)

    def __repr__(self):
        return f"EnergyModel({self.name!r}, dim={self.dim}, base={getattr(self.base, 'name', self.base)!r})"
