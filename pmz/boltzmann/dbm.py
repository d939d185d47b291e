"""Binary deep Boltzmann machines (DBMs) with two hidden layers: energy, exact log Z, mean field, energy models.

Model (Salakhutdinov & Hinton 2009): visible ``v in {0,1}^nv``, hidden layers ``h1 in {0,1}^n1``,
``h2 in {0,1}^n2``,

    p(v, h1, h2) = exp(-E(v, h1, h2)) / Z,     -E = a'v + b1'h1 + b2'h2 + v'W1 h1 + h1'W2 h2,

``W1 (nv, n1)``, ``W2 (n1, n2)``. The graph is bipartite between the odd layer ``h1`` and the even layers
``(v, h2)``: the DBM **is an RBM** (:class:`~pmz.boltzmann.rbm.RBM`, :meth:`DBM.as_rbm`) with visible units
``x = (v, h2)``, hidden units ``h1``, weights ``[W1; W2']`` and biases ``(a, b2)``, ``b1``. Hence

* ``log f1(v, h2) = a'v + b2'h2 + sum_j softplus(b1_j + (v W1)_j + (W2 h2)_j)`` (``h1`` summed out), and
  exact ``log Z`` enumerates the smaller of ``(v, h2)`` and ``h1`` (:meth:`DBM.exact_log_z`);
* AIS / BAR run on ``(v, h2)`` from an exact Bernoulli base with ``h1`` summed out, with the RBM kernels
  (:func:`energy_model`, ``space="even"``), or on the joint state with block Gibbs by layer
  (``space="joint"``, :class:`~pmz.boltzmann.dbm_gibbs.DBMLayerGibbs`);
* given ``v`` the posterior over ``(h1, h2)`` is an RBM between ``h1`` (biases ``b1 + v W1``) and ``h2``, so
  ``log Z(v) = log sum_{h1,h2} exp(-E(v, h1, h2))`` is exact by enumerating the smaller hidden layer
  (:meth:`DBM.log_z_given_v`), and ``log p(v) = log Z(v) - log Z``.

The variational lower bound of Salakhutdinov & Hinton (2009) uses the mean-field posterior
``q(h1, h2 | v) = prod Bern(mu1) prod Bern(mu2)`` (:meth:`DBM.mean_field`):

    log p(v) >= E_q[-E(v, h1, h2)] + H(q) - log Z                                        (:meth:`DBM.lower_bound`).

Known-truth system: :func:`dbm_tiny` (a random DBM small enough for exact log Z).

References: Salakhutdinov & Hinton, "Deep Boltzmann machines", AISTATS 2009; Salakhutdinov, "Learning deep
Boltzmann machines using adaptive MCMC", ICML 2010.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dbm_gibbs import DBMLayerGibbs, DBMState
from .rbm_gibbs import softplus
from ..model.energy_model import BernoulliBase, EnergyModel
from ..weights import logsumexp
from ..records import KnownTruth
from .rbm import RBM, _bits
from .rbm import energy_model as rbm_energy_model

__all__ = ["DBM", "DBM_EXACT_MAX_UNITS", "dbm_tiny", "energy_model", "random_dbm"]

DBM_EXACT_MAX_UNITS = 24  # enumeration limit (2^24 states) of exact log Z, log Z(v) and exact draws
_MAX_ELEMENTS = 1 << 22  # elements of one intermediate block of log_z_given_v (32 MB of float64)


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _bernoulli_entropy(mu):
    """``-sum_j [mu_j log mu_j + (1 - mu_j) log(1 - mu_j)]`` per row, with ``0 log 0 = 0``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(mu > 0, mu * np.log(mu), 0.0) + np.where(mu < 1, (1 - mu) * np.log1p(-mu), 0.0)
    return -np.sum(terms, axis=1)


def _logsumexp_enumerated(n_rows: int, n_bits: int, width: int, terms, max_elements: int = _MAX_ELEMENTS):
    """``logsumexp_s terms(rows, S)[r, s]`` over all ``2^n_bits`` states ``s``, for every row.

    ``terms(rows, S)`` returns ``(len(rows), len(S))`` for a slice of rows and a block of states ``S`` (bit rows);
    states come in blocks and rows in chunks so that an intermediate holds at most ``max_elements`` entries
    (``width`` entries per row and state).
    """
    n_states = 1 << n_bits
    block = int(min(n_states, max(1, max_elements // max(width, 1))))
    chunk = int(max(1, max_elements // (block * max(width, 1))))
    out = np.full(n_rows, -np.inf)
    for start in range(0, n_states, block):
        S = _bits(start, min(start + block, n_states), n_bits)
        for r in range(0, n_rows, chunk):
            rows = slice(r, min(r + chunk, n_rows))
            out[rows] = np.logaddexp(out[rows], logsumexp(terms(rows, S), axis=1))
    return out


@dataclass(frozen=True)
class DBM:
    """A binary DBM ``p(v, h1, h2) ∝ exp(a'v + b1'h1 + b2'h2 + v'W1 h1 + h1'W2 h2)``.

    Attributes
    ----------
    W1 : ndarray (nv, n1)
    W2 : ndarray (n1, n2)
    a : ndarray (nv,)
    b1 : ndarray (n1,)
    b2 : ndarray (n2,)

    Examples
    --------
    >>> dbm = random_dbm(4, 3, 2, seed=0)
    >>> dbm.sizes
    (4, 3, 2)
    >>> v, h1, h2 = np.ones((1, 4)), np.ones((1, 3)), np.zeros((1, 2))
    >>> bool(np.isclose(-dbm.energy(v, h1, h2)[0], dbm.a.sum() + dbm.b1.sum() + dbm.W1.sum()))
    True
    >>> log_p = dbm.log_likelihood(_bits(0, 16, 4), dbm.exact_log_z())   # log p(v) of all 16 visible states
    >>> bool(abs(logsumexp(log_p)) < 1e-12)
    True
    """

    W1: np.ndarray
    W2: np.ndarray
    a: np.ndarray
    b1: np.ndarray
    b2: np.ndarray

    def __post_init__(self):
        W1, W2 = np.asarray(self.W1, dtype=np.float64), np.asarray(self.W2, dtype=np.float64)
        a, b1, b2 = (np.asarray(x, dtype=np.float64).ravel() for x in (self.a, self.b1, self.b2))
        if W1.ndim != 2 or W2.ndim != 2 or W2.shape[0] != W1.shape[1]:
            raise ValueError(f"need W1 (nv, n1) and W2 (n1, n2), got {W1.shape} and {W2.shape}")
        if a.shape != (W1.shape[0],) or b1.shape != (W1.shape[1],) or b2.shape != (W2.shape[1],):
            raise ValueError(f"need a (nv,), b1 (n1,), b2 (n2,); got {a.shape}, {b1.shape}, {b2.shape}")
        for name, value in zip(("W1", "W2", "a", "b1", "b2"), (W1, W2, a, b1, b2)):
            object.__setattr__(self, name, value)

    @property
    def sizes(self) -> tuple[int, int, int]:
        """``(nv, n1, n2)``."""
        return self.W1.shape[0], self.W1.shape[1], self.W2.shape[1]

    # ------------------------------------------------------------------------------------------ energy
    def log_joint(self, V, H1, H2) -> np.ndarray:
        """``-E(v, h1, h2) = a'v + b1'h1 + b2'h2 + v'W1 h1 + h1'W2 h2`` for batches ``(n, nv), (n, n1), (n, n2)``."""
        V, H1, H2 = (np.asarray(x, dtype=np.float64) for x in (V, H1, H2))
        return V @ self.a + H1 @ self.b1 + H2 @ self.b2 + np.sum((V @ self.W1) * H1, 1) + np.sum((H1 @ self.W2) * H2, 1)

    def energy(self, V, H1, H2) -> np.ndarray:
        """``E(v, h1, h2)`` for a batch (minus :meth:`log_joint`)."""
        return -self.log_joint(V, H1, H2)

    def as_rbm(self) -> RBM:
        """The bipartite view: an RBM with visible units ``(v, h2)``, hidden units ``h1``, weights ``[W1; W2']``
        ``(nv + n2, n1)``, visible biases ``(a, b2)`` and hidden biases ``b1``; its log Z is the DBM's."""
        return RBM(np.concatenate([self.W1, self.W2.T], axis=0), np.concatenate([self.a, self.b2]), self.b1)

    # ------------------------------------------------------------------------------------------ exact values
    def exact_log_z(self) -> float:
        """Exact ``log Z`` through :meth:`as_rbm`: enumerate the smaller of ``(v, h2)`` (``2^(nv + n2)`` states,
        ``h1`` summed out) and ``h1`` (``2^n1`` states, ``v`` and ``h2`` summed out). Refused above
        ``2^DBM_EXACT_MAX_UNITS`` states."""
        nv, n1, n2 = self.sizes
        m = min(nv + n2, n1)
        if m > DBM_EXACT_MAX_UNITS:
            raise ValueError(
                f"exact log Z of a {nv}-{n1}-{n2} DBM enumerates 2^{m} states (min(nv + n2, n1) = {m} > "
                f"{DBM_EXACT_MAX_UNITS}); estimate it with pmz.evidence(energy_model(dbm), ...)"
            )
        return self.as_rbm().log_z_exact()

    def log_z_given_v(self, V, *, max_elements: int = _MAX_ELEMENTS) -> np.ndarray:
        """``log Z(v) = log sum_{h1,h2} exp(-E(v, h1, h2))`` for a batch ``V (n, nv)``, exactly.

        Given ``v`` the hidden layers form an RBM (``h1`` biases ``b1 + v W1``), so the smaller hidden layer is
        enumerated and the other summed out:

        * ``n1 <= n2``: ``a'v + logsumexp_{h1} [h1'(b1 + W1'v) + sum_k softplus(b2_k + (h1 W2)_k)]`` (the softplus
          term does not depend on ``v``: one matrix product per block of states);
        * ``n2 < n1``: ``a'v + logsumexp_{h2} [b2'h2 + sum_j softplus(b1_j + (v W1)_j + (W2 h2)_j)]``.

        Refused when ``min(n1, n2) > DBM_EXACT_MAX_UNITS``. A 16-unit layer (65536 states) with 32 units in the
        other costs about ``n`` x 2 M softplus evaluations. ``max_elements`` bounds the entries of one
        intermediate array (states in blocks, rows of ``V`` in chunks).
        """
        nv, n1, n2 = self.sizes
        V = np.asarray(V, dtype=np.float64)
        if V.ndim != 2 or V.shape[1] != nv:
            raise ValueError(f"V must have shape (n, {nv}), got {V.shape}")
        if min(n1, n2) > DBM_EXACT_MAX_UNITS:
            raise ValueError(f"log Z(v) enumerates 2^{min(n1, n2)} hidden states (> 2^{DBM_EXACT_MAX_UNITS})")
        D = self.b1 + V @ self.W1  # (n, n1): the input of h1 from v and its bias
        if n1 <= n2:
            def terms(rows, H1):
                return D[rows] @ H1.T + np.sum(softplus(self.b2 + H1 @ self.W2), axis=1)

            log_sum = _logsumexp_enumerated(V.shape[0], n1, 1, terms, max_elements)
        else:
            def terms(rows, H2):
                G = D[rows][:, None, :] + (H2 @ self.W2.T)[None]  # (rows, states, n1)
                return H2 @ self.b2 + np.sum(softplus(G), axis=2)

            log_sum = _logsumexp_enumerated(V.shape[0], n2, n1, terms, max_elements)
        return V @ self.a + log_sum

    def log_likelihood(self, V, log_z: float) -> np.ndarray:
        """``log p(v) = log Z(v) - log Z`` per row of ``V`` (exact when ``log_z`` is)."""
        return self.log_z_given_v(V) - float(log_z)

    def sample_exact(self, rng, n: int) -> DBMState:
        """``n`` exact draws of ``p(v, h1, h2)`` (through :meth:`RBM.sample_exact` of :meth:`as_rbm`)."""
        nv = self.sizes[0]
        X, H1 = self.as_rbm().sample_exact(rng, n)
        return DBMState(X[:, :nv], H1, X[:, nv:])

    # ------------------------------------------------------------------------------------------ mean field
    def mean_field(self, V, *, n_steps: int = 50, tol: float = 1e-7) -> tuple[np.ndarray, np.ndarray]:
        """Mean-field posterior ``q(h1, h2 | v) = Bern(mu1) Bern(mu2)`` by fixed-point updates.

        Start ``mu1 = sigmoid(b1 + v W1)``; then alternate (Salakhutdinov & Hinton 2009, eq. 8)

            mu2 <- sigmoid(b2 + mu1 W2),        mu1 <- sigmoid(b1 + v W1 + mu2 W2'),

        until no mean moves by more than ``tol`` or after ``n_steps`` pairs. The layers are updated in turn (no
        unit of a layer interacts with another unit of it), so each update maximises the bound exactly over one
        layer given the other: the bound never decreases and no damping is needed.

        Returns ``(mu1 (n, n1), mu2 (n, n2))``.
        """
        V = np.asarray(V, dtype=np.float64)
        D = self.b1 + V @ self.W1
        mu1 = _sigmoid(D)
        mu2 = _sigmoid(self.b2 + mu1 @ self.W2)
        for _ in range(int(n_steps)):
            new1 = _sigmoid(D + mu2 @ self.W2.T)
            new2 = _sigmoid(self.b2 + new1 @ self.W2)
            change = max(np.max(np.abs(new1 - mu1), initial=0.0), np.max(np.abs(new2 - mu2), initial=0.0))
            mu1, mu2 = new1, new2
            if change < tol:
                break
        return mu1, mu2

    def lower_bound(self, V, log_z: float, *, n_steps: int = 50, mean_field=None) -> np.ndarray:
        """Variational lower bound on ``log p(v)`` per row of ``V``:

            E_q[-E] + H(q) - log Z,   E_q[-E] = a'v + b1'mu1 + b2'mu2 + v'W1 mu1 + mu1'W2 mu2,
            H(q) = -sum [mu log mu + (1 - mu) log(1 - mu)] over both layers,

        with ``q`` from :meth:`mean_field` (or the given ``mean_field=(mu1, mu2)``). It is a bound on the exact
        ``log p(v)`` only when ``log_z`` is exact (or not below the true log Z).
        """
        V = np.asarray(V, dtype=np.float64)
        mu1, mu2 = self.mean_field(V, n_steps=n_steps) if mean_field is None else mean_field
        expected = self.log_joint(V, mu1, mu2)  # -E is linear in each layer: E_q[-E] = -E(v, mu1, mu2)
        return expected + _bernoulli_entropy(mu1) + _bernoulli_entropy(mu2) - float(log_z)

    def layer_gibbs(self, base_means=None, *, n_sweeps: int = 1) -> DBMLayerGibbs:
        """The block Gibbs sampler by layer (:class:`~pmz.boltzmann.dbm_gibbs.DBMLayerGibbs`) of this DBM."""
        return DBMLayerGibbs(self.W1, self.W2, self.a, self.b1, self.b2, base_means, n_sweeps=n_sweeps)


def random_dbm(n_visible: int, n_hidden1: int, n_hidden2: int, *, seed: int = 0, scale: float = 1.0) -> DBM:
    """A DBM with independent ``N(0, scale^2)`` weights and ``N(0, (scale/2)^2)`` biases (for tests)."""
    rng = np.random.default_rng(seed)
    W1 = scale * rng.standard_normal((n_visible, n_hidden1))
    W2 = scale * rng.standard_normal((n_hidden1, n_hidden2))
    a, b1, b2 = (0.5 * scale * rng.standard_normal(k) for k in (n_visible, n_hidden1, n_hidden2))
    return DBM(W1, W2, a, b1, b2)


def energy_model(dbm: DBM, base_means=None, *, space: str = "even", kernel=None, name: str | None = None):
    """An :class:`~pmz.model.energy_model.EnergyModel` of a DBM whose estimated log Z is the DBM's log partition
    function.

    Parameters
    ----------
    dbm : DBM
    base_means : array (nv,), optional
        Means of the Bernoulli base on ``v`` (default 1/2); the hidden units' base is uniform (mean 1/2).
    space : {"even", "joint"}
        ``"even"`` (default): states ``(v, h2)`` (dim ``nv + n2``), ``h1`` summed out: the visible space of the
        RBM view :meth:`DBM.as_rbm` (built by :func:`pmz.boltzmann.rbm.energy_model`), base
        ``Bern(p0) x Bern(1/2)^n2``; kernels ``"gibbs"`` (:class:`~pmz.boltzmann.rbm_gibbs.RBMGibbs`, default) or
        ``"block_mh"`` (:class:`~pmz.boltzmann.rbm_gibbs.RBMBlockMH`). ``"joint"``: states ``(v, h1, h2)``, ``log f1 =
        -E``, base ``Bern(p0) x Bern(1/2)^(n1 + n2)``, kernel ``"layer_gibbs"``
        (:class:`~pmz.boltzmann.dbm_gibbs.DBMLayerGibbs`). With ``min(nv + n2, n1) <= 22`` the model carries
        ``sample_target`` (exact draws, for reverse paths).
    kernel : str or Kernel, optional
    name : str, optional

    Examples
    --------
    >>> dbm = random_dbm(5, 4, 3, seed=1)
    >>> energy_model(dbm).dim, energy_model(dbm).kernel.name
    (8, 'rbm_gibbs')
    >>> joint = energy_model(dbm, space="joint")
    >>> joint.dim, joint.kernel.name
    (12, 'dbm_layer_gibbs')
    """
    nv, n1, n2 = dbm.sizes
    p0 = np.full(nv, 0.5) if base_means is None else np.asarray(base_means, dtype=np.float64).ravel()
    if p0.shape != (nv,):
        raise ValueError(f"base_means must have {nv} entries (the visible units), got {p0.size}")
    name = name or f"dbm {nv}-{n1}-{n2} ({space})"
    if space == "even":
        if isinstance(kernel, str) and kernel not in ("gibbs", "block_mh"):
            raise ValueError(f"kernel {kernel!r} is not available in even space; choose 'gibbs' or 'block_mh'")
        model = rbm_energy_model(dbm.as_rbm(), np.concatenate([p0, np.full(n2, 0.5)]), kernel=kernel, name=name)
    elif space == "joint":
        base = BernoulliBase(np.concatenate([p0, np.full(n1 + n2, 0.5)]))
        kernel = kernel or "layer_gibbs"
        if isinstance(kernel, str):
            if kernel != "layer_gibbs":
                raise ValueError(f"kernel {kernel!r} is not available in joint space; choose 'layer_gibbs'")
            kernel = dbm.layer_gibbs(base.means[:nv])

        def log_density(X):
            return dbm.log_joint(X[:, :nv], X[:, nv : nv + n1], X[:, nv + n1 :])

        model = EnergyModel(log_density, base, kernel=kernel, name=name)
        if min(nv + n2, n1) <= 22:
            model.sample_target = lambda rng, n: dbm.sample_exact(rng, n).x
    else:
        raise ValueError(f"space must be 'even' or 'joint', got {space!r}")
    model.dbm = dbm
    return model


def dbm_tiny(
    n_visible: int = 10, n_hidden1: int = 6, n_hidden2: int = 4, *, seed: int = 0, scale: float = 1.0,
    space: str = "even", kernel=None,
) -> KnownTruth:
    """A random DBM (:func:`random_dbm`) small enough for exact log Z, as an energy model with its log Z.

    Returns ``KnownTruth(model, log_z, "dbm_tiny")``; the model is :func:`energy_model` with a uniform base
    (``space`` and ``kernel`` as there), ``model.dbm`` the DBM.

    >>> truth = dbm_tiny()
    >>> truth.name, truth.model.dim, round(truth.log_z, 4)
    ('dbm_tiny', 14, 25.3478)
    """
    dbm = random_dbm(n_visible, n_hidden1, n_hidden2, seed=seed, scale=scale)
    model = energy_model(dbm, space=space, kernel=kernel)
    return KnownTruth(model, dbm.exact_log_z(), "dbm_tiny")
