"""Binary restricted Boltzmann machines (RBMs) with exact or reference log partition functions.

Model (Smolensky 1986; Hinton 2002): visible ``v in {0,1}^nv``, hidden ``h in {0,1}^nh``,

    p(v, h) = exp(a'v + b'h + v'W h) / Z,        W (nv, nh), a (nv,), b (nh,).

Summing out the hidden units gives the unnormalised visible density (minus the *free energy* F(v))

    log f1(v) = -F(v) = a'v + sum_h softplus(b_h + sum_i v_i W_ih),    softplus(x) = log(1 + e^x),

and, by symmetry, ``Z = sum_h exp(b'h) prod_i (1 + exp(a_i + W_i h))``: exact log Z enumerates the smaller
layer (``2^min(nv, nh)`` terms, feasible up to ~22 units). The base f0 is the "base-rate" model of Salakhutdinov
& Murray (2008), independent Bernoulli visible units with the training data's marginals (a normalised f0, so
pmz's estimate is ``log Z = log sum_v f1(v)`` itself, the RBM's log partition function).

:func:`energy_model` builds a :class:`~pmz.model.energy_model.EnergyModel` in visible space (geometric path
``f0^(1-beta) f1^beta`` on ``v``; kernels :class:`~pmz.boltzmann.rbm_gibbs.RBMGibbs`, the default, or
:class:`~pmz.boltzmann.rbm_gibbs.RBMBlockMH`) or in joint space (state ``(v, h)``, base ``Bern(p0) x uniform``, kernel
:class:`~pmz.boltzmann.rbm_gibbs.RBMBlockGibbs`). Both have the same log Z; see :mod:`pmz.boltzmann.rbm_gibbs` for
which kernel is exact for which path.

Data: scikit-learn's ``load_digits`` (1797 images of 8 x 8 pixels with values 0..16; the UCI optical
recognition of handwritten digits test set), binarised at ``pixel > 7``, extracted once into
``data/digits_binary.npz`` (bit-packed) by ``benchmarks/train_rbm.py --extract-digits``: pmz needs no
scikit-learn. Images with index ``i % 5 == 0`` are the test set (360), the others the training set (1437).

Known-truth systems: :func:`rbm_digits` (``n_hidden=20``: exact log Z by enumerating 2^20 hidden states;
four variants trained by CD-10 (default), CD-1, CD-25 and PCD, ``training="cd10" | "cd1" | "cd25" | "pcd"``;
``n_hidden=500``, PCD: a documented reference value) and :func:`random_rbm` for tests.

References: Salakhutdinov & Murray, "On the quantitative analysis of deep belief networks", ICML 2008;
Hinton, "Training products of experts by minimizing contrastive divergence", Neural Computation 2002.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .rbm_gibbs import RBMBlockGibbs, RBMBlockMH, RBMGibbs, softplus
from ..model.energy_model import BernoulliBase, EnergyModel
from ..weights import logsumexp
from ..records import KnownTruth

__all__ = [
    "DIGITS_RBMS",
    "RBM",
    "RBM_DIGITS_H500_LOG_Z",
    "RBM_DIGITS_H500_LOG_Z_SE",
    "average_log_likelihood",
    "digits_rbm",
    "digits_split",
    "energy_model",
    "load_digits_binary",
    "load_rbm",
    "random_rbm",
    "rbm_digits",
]

DATA_DIR = Path(__file__).resolve().parent / "data"
DIGITS_FILE = DATA_DIR / "digits_binary.npz"
EXACT_SAMPLING_MAX_UNITS = 22  # energy models of RBMs with a layer this small get an exact ``sample_target``

# Reference log Z of the 500-hidden digits RBM (data/rbm_digits_h500.npz), from
# ``python benchmarks/rbm_ais.py --reference`` (seed 2026, 400 paths per run; details in docs/systems.md):
#   forward AIS, visible space, heat bath (RBMGibbs), K = 3000 linear:  126.7952 +- 0.0070 (ESS 392/400)
#   forward AIS, joint space, block Gibbs (RBMBlockGibbs), K = 30000:    126.8084 +- 0.0136 (ESS 372/400)
#   stochastic bounds: mean forward log w = 126.7854 <= log Z <= 126.7983 = -mean reverse log w (reverse heat
#   bath, K = 3000, from 10000 block-Gibbs sweeps at beta = 1 started at training images); RAISE 126.7885 +- 0.0070.
# The value is the forward heat-bath estimate, the se its delta-method standard error.
RBM_DIGITS_H500_LOG_Z = 126.7952
RBM_DIGITS_H500_LOG_Z_SE = 0.0070


def _bits(start: int, stop: int, n_bits: int) -> np.ndarray:
    """Binary expansions of the integers ``start..stop-1`` as float64 rows of ``n_bits`` (bit j = 2^j)."""
    idx = np.arange(start, stop, dtype=np.int64)
    return ((idx[:, None] >> np.arange(n_bits, dtype=np.int64)) & 1).astype(np.float64)


def _layer_blocks(c, d, M, block_size: int):
    """Yield ``c'x + sum_j softplus(d_j + (x M)_j)`` for all ``x in {0,1}^n`` (``n = len(c)``), block by block in
    the order of the state index ``sum_i x_i 2^i``.

    The states are enumerated in blocks that share their high bits: with ``x = (lo, hi)`` (``m`` low bits,
    ``2^m <= block_size``), ``x M = lo M_lo + hi M_hi``, so ``lo M_lo`` is computed once and each block costs one
    softplus of ``(2^m, k)`` and no matrix product.
    """
    n = c.size
    if n > 30:
        raise ValueError(f"enumerating 2^{n} states is infeasible")
    m = int(min(n, max(0, np.floor(np.log2(max(int(block_size), 1))))))
    low = _bits(0, 1 << m, m)
    low_input, low_linear = low @ M[:m], low @ c[:m]
    for hi in range(1 << (n - m)):
        high = _bits(hi, hi + 1, n - m)[0]
        shift = d + high @ M[m:]
        yield low_linear + high @ c[m:] + np.sum(softplus(low_input + shift), axis=1)


def _enumerate_layer(c, d, M, block_size: int) -> float:
    """``logsumexp_x [c'x + sum_j softplus(d_j + (x M)_j)]`` over all ``x in {0,1}^n``."""
    return float(logsumexp(np.array([logsumexp(block) for block in _layer_blocks(c, d, M, block_size)])))


@dataclass(frozen=True)
class RBM:
    """A binary RBM ``p(v, h) ∝ exp(a'v + b'h + v'W h)``.

    Attributes
    ----------
    W : ndarray (nv, nh)
    a : ndarray (nv,)
        Visible biases.
    b : ndarray (nh,)
        Hidden biases.

    Examples
    --------
    >>> rbm = random_rbm(6, 8, seed=1)
    >>> abs(rbm.log_z_enumerate_visible() - rbm.log_z_enumerate_hidden()) < 1e-10
    True
    >>> bool(rbm.log_f1(np.zeros((1, 6)))[0] == np.sum(softplus(rbm.b)))
    True
    """

    W: np.ndarray
    a: np.ndarray
    b: np.ndarray

    def __post_init__(self):
        W = np.asarray(self.W, dtype=np.float64)
        a = np.asarray(self.a, dtype=np.float64).ravel()
        b = np.asarray(self.b, dtype=np.float64).ravel()
        if W.ndim != 2 or a.shape != (W.shape[0],) or b.shape != (W.shape[1],):
            raise ValueError(f"need W (nv, nh), a (nv,), b (nh,); got {W.shape}, {a.shape}, {b.shape}")
        object.__setattr__(self, "W", W)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)

    @property
    def n_visible(self) -> int:
        return self.W.shape[0]

    @property
    def n_hidden(self) -> int:
        return self.W.shape[1]

    def log_f1(self, V) -> np.ndarray:
        """``-F(v) = a'v + sum_h softplus(b_h + v'W_h)`` for a batch ``V (n, nv)``: the hidden units summed out."""
        V = np.asarray(V, dtype=np.float64)
        return V @ self.a + np.sum(softplus(self.b + V @ self.W), axis=1)

    def free_energy(self, V) -> np.ndarray:
        """``F(v) = -a'v - sum_h softplus(b_h + v'W_h)``, so that ``p(v) = exp(-F(v)) / Z``."""
        return -self.log_f1(V)

    def log_f1_hidden(self, H) -> np.ndarray:
        """``b'h + sum_i softplus(a_i + W_i h)`` for ``H (n, nh)``: the visible units summed out."""
        H = np.asarray(H, dtype=np.float64)
        return H @ self.b + np.sum(softplus(self.a + H @ self.W.T), axis=1)

    def log_joint(self, V, H) -> np.ndarray:
        """Unnormalised ``log p(v, h) = a'v + b'h + v'W h`` for batches ``V (n, nv)``, ``H (n, nh)``."""
        V, H = np.asarray(V, dtype=np.float64), np.asarray(H, dtype=np.float64)
        return V @ self.a + H @ self.b + np.sum((V @ self.W) * H, axis=1)

    def log_z_enumerate_visible(self, block_size: int = 1 << 15) -> float:
        """``log Z = logsumexp_v [a'v + sum_h softplus(b_h + v'W_h)]`` over all ``2^nv`` visible states."""
        return _enumerate_layer(self.a, self.b, self.W, block_size)

    def log_z_enumerate_hidden(self, block_size: int = 1 << 15) -> float:
        """``log Z = logsumexp_h [b'h + sum_i softplus(a_i + W_i h)]`` over all ``2^nh`` hidden states."""
        return _enumerate_layer(self.b, self.a, self.W.T, block_size)

    def log_z_exact(self, block_size: int = 1 << 15) -> float:
        """Exact log Z by enumerating the smaller layer (``2^20`` states take about a second)."""
        if self.n_hidden <= self.n_visible:
            return self.log_z_enumerate_hidden(block_size)
        return self.log_z_enumerate_visible(block_size)

    def sample_exact(self, rng, n: int, *, block_size: int = 1 << 15) -> tuple[np.ndarray, np.ndarray]:
        """``n`` exact draws ``(V (n, nv), H (n, nh))`` of ``p(v, h)``, by enumerating the smaller layer.

        The smaller layer is drawn from its marginal (all ``2^m`` log probabilities, ``m <= 24``, then
        ``rng.choice``), the other from its factorised conditional, e.g. ``v | h ~ Bern(sigmoid(a + W h))``.
        """
        hidden_first = self.n_hidden <= self.n_visible
        c, d, M = (self.b, self.a, self.W.T) if hidden_first else (self.a, self.b, self.W)
        if c.size > 24:
            raise ValueError(f"exact sampling enumerates 2^{c.size} states; only feasible up to 2^24")
        log_p = np.concatenate(list(_layer_blocks(c, d, M, block_size)))
        p = np.exp(log_p - logsumexp(log_p))
        index = rng.choice(p.size, size=int(n), p=p / p.sum())
        first = ((index[:, None] >> np.arange(c.size)) & 1).astype(np.float64)
        eta = d + first @ M
        second = (rng.uniform(size=eta.shape) < 1.0 / (1.0 + np.exp(-eta))).astype(np.float64)
        return (second, first) if hidden_first else (first, second)

    def save(self, path, **extra) -> None:
        """Write ``W`` (float32), ``a``, ``b`` and any ``extra`` arrays to a compressed ``.npz`` file."""
        np.savez_compressed(path, W=self.W.astype(np.float32), a=self.a, b=self.b, **extra)


def load_rbm(path) -> tuple[RBM, dict]:
    """An RBM saved by :meth:`RBM.save` (weights loaded as float64) and the file's other arrays."""
    with np.load(path) as f:
        data = {k: f[k] for k in f.files}
    rbm = RBM(data.pop("W"), data.pop("a"), data.pop("b"))
    return rbm, data


def average_log_likelihood(rbm: RBM, V, log_z: float) -> float:
    """``mean_n log p(v_n) = mean_n log f1(v_n) - log Z`` (nats per image)."""
    return float(np.mean(rbm.log_f1(V)) - log_z)


def load_digits_binary() -> tuple[np.ndarray, np.ndarray]:
    """The 1797 binarised 8 x 8 digits as float64 ``(1797, 64)`` 0/1 rows (pixel > 7) and their labels.

    >>> images, labels = load_digits_binary()
    >>> images.shape, labels[:5].tolist(), round(float(images.mean()), 4)
    ((1797, 64), [0, 1, 2, 3, 4], 0.323)
    """
    with np.load(DIGITS_FILE) as f:
        n, d = (int(s) for s in f["shape"])
        images = np.unpackbits(f["packed"], axis=1, count=d).astype(np.float64)
        labels = f["labels"].astype(np.int64)
    if images.shape != (n, d):
        raise ValueError(f"{DIGITS_FILE} is corrupt: expected {(n, d)}, got {images.shape}")
    return images, labels


def digits_split() -> tuple[np.ndarray, np.ndarray]:
    """Training (1437) and test (360) images: image ``i`` is a test image when ``i % 5 == 0``."""
    images, _ = load_digits_binary()
    test = np.arange(images.shape[0]) % 5 == 0
    return images[~test], images[test]


def energy_model(rbm: RBM, base_means, *, space: str = "visible", kernel=None, name: str | None = None) -> EnergyModel:
    """An :class:`~pmz.model.energy_model.EnergyModel` for an RBM, with its exact kernel attached.

    Parameters
    ----------
    rbm : RBM
    base_means : array (nv,)
        Means of the Bernoulli base on the visible units (clipped to ``[1e-3, 1 - 1e-3]`` by BernoulliBase).
    space : {"visible", "joint"}
        ``"visible"``: states ``v (n, nv)``, ``log f1(v) = -F(v)``, base ``Bern(p0)``; kernel
        ``"gibbs"`` (:class:`~pmz.boltzmann.rbm_gibbs.RBMGibbs`, default) or ``"block_mh"``
        (:class:`~pmz.boltzmann.rbm_gibbs.RBMBlockMH`). ``"joint"``: states ``(v, h) (n, nv + nh)``,
        ``log f1 = a'v + b'h + v'W h``, base ``Bern(p0) x Bern(1/2)^nh``; kernel
        :class:`~pmz.boltzmann.rbm_gibbs.RBMBlockGibbs`. The base is normalised in both, so both give the RBM's log Z.
        When one layer has at most 22 units the model also gets ``sample_target(rng, n)``: exact draws of the
        RBM (:meth:`RBM.sample_exact`), used by ``pmz.evidence`` to start reverse annealing runs.
    kernel : {"gibbs", "block_mh"} or Kernel, optional
    name : str, optional

    Examples
    --------
    >>> rbm = random_rbm(4, 3, seed=0)
    >>> model = energy_model(rbm, np.full(4, 0.5), space="joint")
    >>> model.dim, model.kernel.name
    (7, 'rbm_block_gibbs')
    """
    nv, nh = rbm.n_visible, rbm.n_hidden
    if space == "visible":
        base = BernoulliBase(base_means)
        if base.dim != nv:
            raise ValueError(f"base_means must have {nv} entries, got {base.dim}")
        kernels = {"gibbs": RBMGibbs, "block_mh": RBMBlockMH}
        log_density = rbm.log_f1
    elif space == "joint":
        base = BernoulliBase(np.concatenate([np.ravel(base_means), np.full(nh, 0.5)]))
        if base.dim != nv + nh:
            raise ValueError(f"base_means must have {nv} entries, got {base.dim - nh}")
        kernels = {"block_gibbs": RBMBlockGibbs}

        def log_density(X):
            return rbm.log_joint(X[:, :nv], X[:, nv:])

    else:
        raise ValueError(f"space must be 'visible' or 'joint', got {space!r}")
    kernel = kernel or next(iter(kernels))
    if isinstance(kernel, str):
        if kernel not in kernels:
            raise ValueError(f"kernel {kernel!r} is not available in {space} space; choose one of {sorted(kernels)}")
        kernel = kernels[kernel](rbm.W, rbm.a, rbm.b, base.means[:nv])
    model = EnergyModel(log_density, base, kernel=kernel, name=name or f"rbm {nv}x{nh} ({space})")
    if space == "visible":
        model.rbm = rbm  # the unit-by-unit SMC sequence (sequence="units") needs the weights
    if min(nv, nh) <= EXACT_SAMPLING_MAX_UNITS:  # exact draws of p1 for reverse annealing (pmz.evidence)

        def sample_target(rng, n):
            V, H = rbm.sample_exact(rng, n)
            return V if space == "visible" else np.concatenate([V, H], axis=1)

        model.sample_target = sample_target
    return model


def random_rbm(n_visible: int, n_hidden: int, *, seed: int = 0, scale: float = 1.0) -> RBM:
    """An RBM with independent ``N(0, scale^2)`` weights and ``N(0, (scale/2)^2)`` biases (for tests)."""
    rng = np.random.default_rng(seed)
    W = scale * rng.standard_normal((n_visible, n_hidden))
    a = 0.5 * scale * rng.standard_normal(n_visible)
    b = 0.5 * scale * rng.standard_normal(n_hidden)
    return RBM(W, a, b)


# The shipped digits RBMs: (n_hidden, training) -> file in DATA_DIR (all trained by benchmarks/train_rbm.py).
DIGITS_RBMS = {
    (20, "cd10"): "rbm_digits_h20.npz",
    (20, "cd1"): "rbm_digits_h20_cd1.npz",
    (20, "cd25"): "rbm_digits_h20_cd25.npz",
    (20, "pcd"): "rbm_digits_h20_pcd.npz",
    (500, "pcd"): "rbm_digits_h500.npz",
}
DEFAULT_TRAINING = {20: "cd10", 500: "pcd"}  # ``training=None``


def _digits_key(n_hidden, training) -> tuple[int, str]:
    """Validated ``(n_hidden, training)`` key of :data:`DIGITS_RBMS` (``training=None``: the default one)."""
    n_hidden = int(n_hidden)
    if n_hidden not in DEFAULT_TRAINING:
        raise ValueError(f"no trained digits RBM with {n_hidden} hidden units (have {sorted(DEFAULT_TRAINING)})")
    training = DEFAULT_TRAINING[n_hidden] if training is None else str(training).lower()
    if (n_hidden, training) not in DIGITS_RBMS:
        have = sorted(t for h, t in DIGITS_RBMS if h == n_hidden)
        raise ValueError(
            f"no digits RBM with {n_hidden} hidden units trained by {training!r}; "
            f"training must be one of {have} for {n_hidden} hidden units"
        )
    return n_hidden, training


def digits_rbm(n_hidden: int = 20, training: str | None = None) -> tuple[RBM, dict]:
    """The trained digits RBM with ``n_hidden`` hidden units and its file's other arrays.

    Parameters
    ----------
    n_hidden : {20, 500}
    training : {"cd10", "cd1", "cd25", "pcd"}, optional
        How it was trained (see :data:`DIGITS_RBMS`): 20 hidden units by CD-10 (the default), CD-1, CD-25 or
        PCD-1; 500 hidden units only by PCD-1 (the default). ``None`` is the default for ``n_hidden``.

    ``extra["base_means"]`` are the (clipped) training-set pixel marginals; ``extra["settings"]`` (JSON) the
    training settings and ``extra["train_seconds"]`` the training time (see ``benchmarks/train_rbm.py``).

    >>> rbm, extra = digits_rbm(20)
    >>> rbm.W.shape, rbm.W.dtype, extra["base_means"].shape
    ((64, 20), dtype('float64'), (64,))
    >>> import json
    >>> json.loads(str(digits_rbm(20, "cd25")[1]["settings"]))["k"]
    25
    """
    return load_rbm(DATA_DIR / DIGITS_RBMS[_digits_key(n_hidden, training)])


@functools.cache
def _digits_log_z(n_hidden: int, training: str) -> float:
    """Exact log Z of a shipped digits RBM (computed once per process and variant), or the documented reference
    value (500 hidden units)."""
    rbm, _ = digits_rbm(n_hidden, training)
    return rbm.log_z_exact() if min(rbm.n_hidden, rbm.n_visible) <= 22 else RBM_DIGITS_H500_LOG_Z


def rbm_digits(n_hidden: int = 20, training: str | None = None, *, space: str = "visible", kernel=None) -> KnownTruth:
    """An RBM trained on the binarised digits, as an energy model with its log Z.

    Parameters
    ----------
    n_hidden : {20, 500}
        20: log Z exact (enumeration of the 2^20 hidden states, about a second; computed once per process and
        variant). 500: log Z is the reference value :data:`RBM_DIGITS_H500_LOG_Z` (se
        :data:`RBM_DIGITS_H500_LOG_Z_SE`) from long annealing runs (see ``docs/systems.md``).
    training : {"cd10", "cd1", "cd25", "pcd"}, optional
        Which trained RBM (see :func:`digits_rbm`): with 20 hidden units ``"cd10"`` (default,
        ``rbm_digits_h20``), ``"cd1"``, ``"cd25"`` or ``"pcd"`` (the CD-1 / CD-25 / PCD RBMs of Kiwaki 2015,
        Table 1, named ``rbm_digits_h20_cd1`` etc.); with 500 hidden units only ``"pcd"`` (default).
    space, kernel : see :func:`energy_model`

    Returns
    -------
    KnownTruth
        ``(model, log_z, name)``; the model's base means are the training-set pixel marginals. The name is the
        file's stem: ``"rbm_digits_h20"`` (CD-10), ``"rbm_digits_h20_cd1"``, ``"rbm_digits_h20_cd25"``,
        ``"rbm_digits_h20_pcd"``, ``"rbm_digits_h500"``.
    """
    n_hidden, training = _digits_key(n_hidden, training)
    rbm, extra = digits_rbm(n_hidden, training)
    log_z = _digits_log_z(n_hidden, training)
    name = Path(DIGITS_RBMS[n_hidden, training]).stem
    model = energy_model(rbm, extra["base_means"], space=space, kernel=kernel, name=name)
    return KnownTruth(model, float(log_z), name)
