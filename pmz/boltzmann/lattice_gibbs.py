"""Vectorised heat-bath kernels for Ising and Potts models on a periodic lattice (torus).

A state is a row ``x (L*L,)`` (or ``rows * cols``) of a float64 batch ``(n, L*L)``, the lattice in row-major order,
holding exact integer values: Ising spins ``+-1``, Potts colours ``0..q-1``. Site ``(i, j)`` has the four
neighbours ``(i, j +- 1)`` and ``(i +- 1, j)`` (indices modulo the side lengths); on a side of length 2 the two
neighbours in that direction coincide (a double bond), exactly as in the energies of :mod:`pmz.boltzmann.ising` and
:mod:`pmz.boltzmann.potts`, which sum ``s_i s_(i+right) + s_i s_(i+down)`` over all sites (2N bonds).

Both kernels update the sites colour class by colour class (:func:`site_colouring`). Sites of one class are never
neighbours, so given the other classes their conditionals are independent and every site of the class, in every
particle, is drawn in one vectorised step. Each class update leaves ``f_beta`` invariant, so a sweep (all classes
in turn) does too, for a scalar or a per-particle ``beta``.

* :class:`IsingKernel` (``f_beta(s) ∝ exp(beta J sum_<ij> s_i s_j)``): heat bath (Gibbs)
  ``P(s_i = +1 | rest) = sigmoid(2 beta J h_i)``, ``h_i`` the sum of the four neighbouring spins, or Metropolis
  (propose ``s_i -> -s_i``, accept with ``min(1, exp(-2 beta J s_i h_i))``).
* :class:`PottsKernel` (``f_beta(s) ∝ exp(beta J sum_<ij> delta(s_i, s_j))``): heat bath
  ``P(s_i = c | rest) ∝ exp(beta J n_c)``, ``n_c`` the number of neighbours of colour ``c``, one inverse-CDF draw
  per site at a cost independent of q (see the class).

Both sides even: the checkerboard, with the state held as four contiguous sub-lattices whose neighbours are
shifted copies of the others. A side of odd length has no checkerboard on the torus; then three colour classes
(see :func:`site_colouring`) with neighbours gathered by index.

The coupling ``J`` comes from the kernel's constructor (the system builds the kernel together with its model):
the kernel relies on the family's ``U(x) = log f1 - log f0`` being ``J sum s_i s_j`` (Ising) or
``J sum delta(s_i, s_j)`` (Potts) up to a constant, which holds for the models of :mod:`pmz.systems`.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..kernels.base import Kernel, KernelInfo, KernelParams, ParticleState

__all__ = ["IsingKernel", "PottsKernel", "lattice_shape", "site_colouring", "torus_neighbours"]


def lattice_shape(shape) -> tuple[int, int]:
    """``(rows, cols)`` from a side length ``L`` (square) or a pair; both sides must be at least 2."""
    rows, cols = (shape, shape) if np.isscalar(shape) else tuple(shape)
    rows, cols = int(rows), int(cols)
    if rows < 2 or cols < 2:
        raise ValueError(f"lattice sides must be at least 2, got {rows} x {cols}")
    return rows, cols


def torus_neighbours(shape) -> np.ndarray:
    """Flat indices of the four neighbours (right, left, down, up) of every site: ``(rows * cols, 4)`` ints.

    >>> torus_neighbours(3)[0]          # site (0, 0) of a 3 x 3 torus
    array([1, 2, 3, 6])
    """
    rows, cols = lattice_shape(shape)
    i, j = np.divmod(np.arange(rows * cols), cols)
    return np.stack(
        [
            i * cols + (j + 1) % cols,
            i * cols + (j - 1) % cols,
            ((i + 1) % rows) * cols + j,
            ((i - 1) % rows) * cols + j,
        ],
        axis=1,
    )


def _cycle_colouring(length: int) -> np.ndarray:
    """A proper colouring of the cycle of ``length`` sites: ``0, 1, 0, 1, ...``, and a third colour 2 for the
    last site when the length is odd."""
    a = np.arange(length) % 2
    if length % 2:
        a[-1] = 2
    return a


def site_colouring(shape) -> list[np.ndarray]:
    """Classes of sites no two of which are neighbours on the torus, as flat index arrays.

    Even sides: the checkerboard, ``(i + j) mod 2`` (two classes). An odd side has no 2-colouring of its cycle;
    then every cycle gets the colouring ``a(k) = 0, 1, 0, 1, ..., 0, 2`` and site ``(i, j)`` gets
    ``(a_row(i) + a_col(j)) mod 3`` (three classes). Neighbours differ in one coordinate only, where the ``a``
    differ by 1 or 2, which is non-zero modulo 3, so the classes are independent sets.

    >>> [c.tolist() for c in site_colouring(2)]
    [[0, 3], [1, 2]]
    >>> len(site_colouring(5))
    3
    """
    rows, cols = lattice_shape(shape)
    if rows % 2 == 0 and cols % 2 == 0:
        colour = (np.arange(rows)[:, None] + np.arange(cols)[None, :]) % 2
    else:
        colour = (_cycle_colouring(rows)[:, None] + _cycle_colouring(cols)[None, :]) % 3
    colour = colour.ravel()
    return [np.flatnonzero(colour == c) for c in np.unique(colour)]


def _shift(a, k: int, axis: int):
    """``a`` moved so that element ``I`` holds ``a[I - k]`` along ``axis`` (no copy when ``k == 0``)."""
    return a if k == 0 else np.roll(a, k, axis=axis)


class _SublatticeLayout:
    """Both sides even: the four sub-lattices of row parity ``a`` and column parity ``b``, each a contiguous
    ``(n, rows/2, cols/2)`` array; the checkerboard classes are {(0,0), (1,1)} and {(0,1), (1,0)}.

    Site ``(2I + a, 2J + b)`` has its right/left neighbours in sub-lattice ``(a, 1 - b)`` at ``J + b`` and
    ``J - (1 - b)``, its down/up neighbours in ``(1 - a, b)`` at ``I + a`` and ``I - (1 - a)``: shifted copies
    (``np.roll``) of whole sub-lattices, no index gathering.
    """

    groups = (((0, 0), (1, 1)), ((0, 1), (1, 0)))

    def __init__(self, shape):
        self.rows, self.cols = shape

    def split(self, s):
        v = s.reshape(s.shape[0], self.rows // 2, 2, self.cols // 2, 2)
        return {(a, b): np.ascontiguousarray(v[:, :, a, :, b]) for a in (0, 1) for b in (0, 1)}

    def merge(self, parts):
        first = parts[(0, 0)]
        out = np.empty((first.shape[0], self.rows // 2, 2, self.cols // 2, 2), dtype=first.dtype)
        for (a, b), block in parts.items():
            out[:, :, a, :, b] = block
        return out.reshape(first.shape[0], self.rows * self.cols)

    def get(self, parts, key):
        return parts[key]

    def set(self, parts, key, value):
        parts[key] = value

    def neighbours(self, parts, key):
        a, b = key
        along_row, along_col = parts[(a, 1 - b)], parts[(1 - a, b)]
        return (
            _shift(along_row, -b, 2),
            _shift(along_row, 1 - b, 2),
            _shift(along_col, -a, 1),
            _shift(along_col, 1 - a, 1),
        )


class _GatherLayout:
    """Any sides (used when a side is odd): the classes of :func:`site_colouring`, neighbours gathered by index."""

    def __init__(self, shape):
        neighbours = torus_neighbours(shape)
        self.sites = site_colouring(shape)
        self.neighbour_index = [neighbours[sites] for sites in self.sites]
        self.groups = tuple((c,) for c in range(len(self.sites)))

    def split(self, s):
        return s

    def merge(self, parts):
        return parts

    def get(self, parts, key):
        return parts[:, self.sites[key]]

    def set(self, parts, key, value):
        parts[:, self.sites[key]] = value

    def neighbours(self, parts, key):
        index = self.neighbour_index[key]
        return tuple(parts[:, index[:, k]] for k in range(index.shape[1]))


_TWO32 = 2.0**32


def _uniform_bits(rng, shape) -> np.ndarray:
    """Independent uniform 32-bit integers (from the generator's raw stream: faster than ``rng.random``)."""
    size = int(np.prod(shape))
    return rng.bit_generator.random_raw((size + 1) // 2).view(np.uint32)[:size].reshape(shape)


def _thresholds(p) -> np.ndarray:
    """Probabilities as 32-bit thresholds: ``P(bits < t) = t / 2^32``, within ``2^-33`` of ``p``."""
    return np.minimum(np.round(np.asarray(p) * _TWO32), _TWO32 - 1).astype(np.uint32)


class _LatticeKernel(Kernel):
    """Shared parts: geometry, colour classes, parameters and the contract's bookkeeping."""

    needs_grad = False
    tunable = False
    target_acceptance = 1.0

    def __init__(self, shape, coupling: float, n_sweeps: int = 1):
        self.shape = lattice_shape(shape)
        self.n_sites = self.shape[0] * self.shape[1]
        self.coupling = float(coupling)
        if not np.isfinite(self.coupling):
            raise ValueError(f"coupling must be finite, got {coupling!r}")
        self.n_sweeps = int(n_sweeps)
        if self.n_sweeps < 1:
            raise ValueError(f"n_sweeps must be a positive integer, got {n_sweeps!r}")
        even = self.shape[0] % 2 == 0 and self.shape[1] % 2 == 0
        self.layout = _SublatticeLayout(self.shape) if even else _GatherLayout(self.shape)

    def default_params(self, dim):
        if dim != self.n_sites:
            raise ValueError(f"{self.name} is built for {self.n_sites} sites, the family has {dim}")
        return KernelParams(step_size=1.0, scale=np.ones(dim), n_leapfrog=0)

    def _beta(self, beta, n) -> np.ndarray:
        """``beta`` as a column ``(1, 1)`` (scalar) or ``(n, 1)`` (one per particle)."""
        b = np.asarray(beta, dtype=np.float64)
        if b.ndim == 0:
            return b.reshape(1, 1)
        if b.shape != (n,):
            raise ValueError(f"beta must be a scalar or have shape ({n},), got {b.shape}")
        return b.reshape(n, 1)

    @staticmethod
    def _row_offsets(n_tables: int, width: int, ndim: int):
        """Offsets into a flattened ``(n_tables, width)`` table for arrays of ``ndim`` dims (0 for one table)."""
        if n_tables == 1:
            return 0
        return (np.arange(n_tables, dtype=np.intp) * width).reshape((n_tables,) + (1,) * (ndim - 1))

    def _check(self, x):
        if x.ndim != 2 or x.shape[1] != self.n_sites:
            raise ValueError(f"{self.name} expects states of shape (n, {self.n_sites}), got {x.shape}")


class IsingKernel(_LatticeKernel):
    """Checkerboard heat bath (or Metropolis) sweeps of an Ising model ``f_beta(s) ∝ exp(beta J sum_<ij> s_i s_j)``.

    Parameters
    ----------
    shape : int or (int, int)
        Side ``L`` of the square torus, or ``(rows, cols)``.
    coupling : float
        ``J``.
    method : {"heat_bath", "metropolis"}
        Heat bath: ``P(s_i = +1 | rest) = sigmoid(2 beta J h_i)``, ``h_i`` the sum of the 4 neighbours (an
        exact Gibbs update; acceptance 1). Metropolis: flip proposal accepted with
        ``min(1, exp(-2 beta J s_i h_i))``; at small ``beta J`` nearly every spin flips every sweep, so this
        chain is close to periodic and mixes far more slowly than the heat bath there.
    n_sweeps : int
        Sweeps per :meth:`step` (a sweep updates every site once, colour class by colour class).

    Notes
    -----
    Update probabilities are compared with 32-bit uniform integers (resolution ``2^-32``, finer than
    single-precision uniforms). ``info.acceptance`` is 1 for the heat bath and, for Metropolis, each particle's
    mean acceptance probability over its site updates; ``info.accepted`` says whether any spin of the particle
    changed (heat bath: always True).

    Examples
    --------
    >>> from pmz.boltzmann.ising import ising
    >>> from pmz.families.energy import EnergyFamily
    >>> model = ising(4, 0.3).model
    >>> family = EnergyFamily(model)
    >>> rng = np.random.default_rng(0)
    >>> state = model.kernel.init_state(family, family.sample_start(rng, 8))
    >>> state, info = model.kernel.step(rng, state, family, 0.5, None)
    >>> state.x.shape, bool(np.all(np.abs(state.x) == 1))
    ((8, 16), True)
    """

    def __init__(self, shape, coupling: float, *, method: str = "heat_bath", n_sweeps: int = 1):
        if method not in ("heat_bath", "metropolis"):
            raise ValueError(f"method must be 'heat_bath' or 'metropolis', got {method!r}")
        super().__init__(shape, coupling, n_sweeps)
        self.method = method
        self.name = f"ising_{method}"

    def step(self, rng, state, family, beta, params=None):
        x = np.asarray(state.x)
        self._check(x)
        n = x.shape[0]
        b = self._beta(beta, n)
        field = np.arange(-4, 5, 2, dtype=np.float64)[None, :]  # h = -4, -2, 0, 2, 4 -> column (h + 4) / 2
        if self.method == "heat_bath":
            table = _thresholds(expit(2.0 * b * self.coupling * field))  # P(s = +1 | h)
        else:  # column (s h + 4) / 2: P(accept flipping s) = min(1, exp(-2 beta J s h))
            table = _thresholds(np.exp(np.minimum(-2.0 * b * self.coupling * field, 0.0)))
        flat = table.ravel()
        layout = self.layout
        parts = layout.split(x.astype(np.int8))
        accepted_prob = np.zeros(n)
        changed = np.zeros(n, dtype=bool)
        for _ in range(self.n_sweeps):
            for group in layout.groups:
                for key in group:
                    nb = layout.neighbours(parts, key)
                    h = nb[0] + nb[1] + nb[2] + nb[3]
                    offsets = self._row_offsets(table.shape[0], 5, h.ndim)
                    bits = _uniform_bits(rng, h.shape)
                    if self.method == "heat_bath":
                        up = bits < np.take(flat, offsets + ((h + 4) >> 1))
                        layout.set(parts, key, up.view(np.int8) * np.int8(2) - np.int8(1))
                    else:
                        old = layout.get(parts, key)
                        threshold = np.take(flat, offsets + ((old * h + 4) >> 1))
                        flip = bits < threshold
                        layout.set(parts, key, np.where(flip, -old, old))
                        axes = tuple(range(1, h.ndim))
                        accepted_prob += np.sum(threshold, axis=axes, dtype=np.uint64) / _TWO32
                        changed |= np.any(flip, axis=axes)
        x_new = layout.merge(parts).astype(np.float64)
        if self.method == "heat_bath":
            info = KernelInfo(np.ones(n), np.ones(n, dtype=bool))
        else:
            info = KernelInfo(accepted_prob / (self.n_sweeps * self.n_sites), changed)
        return ParticleState(x_new, family.parts(x_new)), info


class PottsKernel(_LatticeKernel):
    """Checkerboard heat bath sweeps of a q-state Potts model ``f_beta(s) ∝ exp(beta J sum_<ij> delta(s_i, s_j))``.

    Every site of a colour class, in every particle, is drawn at once from its exact conditional

        P(s_i = c | rest) ∝ exp(beta J n_c),    n_c = number of the 4 neighbours with colour c.

    The draw costs the same for any q: with ``lambda = beta J >= 0``, ``M = max_c n_c`` and weights scaled by
    ``exp(-lambda M)``, the weight of colour ``c`` splits into a uniform part ``exp(-lambda M)`` (total
    ``q exp(-lambda M)``) plus, for each neighbour slot ``k`` of colour ``c`` (there are ``n_c`` of them), the
    share ``a_k = (exp(lambda (n_c - M)) - exp(-lambda M)) / n_c``. An inverse-CDF draw ``v = u Z``,
    ``Z = q exp(-lambda M) + sum_k a_k``, lands either in the uniform part (colour ``floor(v exp(lambda M))``) or
    in a slot's share (that neighbour's colour): the q columns' CDF is never built. ``info.acceptance`` is 1
    and ``info.accepted`` True (Gibbs updates).

    Parameters
    ----------
    shape : int or (int, int)
        Side ``L`` of the square torus, or ``(rows, cols)``.
    q : int
        Number of colours (states hold ``0..q-1``; at most 127).
    coupling : float
        ``J >= 0`` (ferromagnetic; the split above needs ``exp(lambda n_c) >= 1``).
    n_sweeps : int
        Sweeps per :meth:`step`.

    Examples
    --------
    >>> from pmz.boltzmann.potts import potts
    >>> from pmz.families.energy import EnergyFamily
    >>> model = potts(4, q=3, coupling=1.0).model
    >>> family = EnergyFamily(model)
    >>> rng = np.random.default_rng(0)
    >>> state = model.kernel.init_state(family, family.sample_start(rng, 8))
    >>> state, info = model.kernel.step(rng, state, family, np.linspace(0, 1, 8), None)  # one beta per particle
    >>> sorted(np.unique(state.x).tolist()) == [0.0, 1.0, 2.0], state.x.shape
    (True, (8, 16))
    """

    name = "potts_heat_bath"

    def __init__(self, shape, q: int, coupling: float, *, n_sweeps: int = 1):
        super().__init__(shape, coupling, n_sweeps)
        self.q = int(q)
        if not 2 <= self.q <= 127:
            raise ValueError(f"q must lie in 2..127, got {q!r}")
        if self.coupling < 0:
            raise ValueError(f"PottsKernel needs a ferromagnetic coupling J >= 0, got {coupling!r}")

    def _tables(self, b):
        """Per beta: slot shares ``a[n, M]`` (flattened ``(n_b, 25)``) and uniform masses ``q exp(-lambda M)``."""
        lam = (b * self.coupling)[:, :, None]  # (n_b, 1, 1)
        count = np.arange(5.0)[None, :, None]  # n_c of the slot's colour
        top = np.arange(5.0)[None, None, :]  # M
        with np.errstate(divide="ignore", invalid="ignore"):
            share = (np.exp(lam * (count - top)) - np.exp(-lam * top)) / count
        share = np.where(count >= 1, share, 0.0).reshape(b.shape[0], 25)
        uniform = self.q * np.exp(-lam[:, :, 0] * np.arange(5.0)[None, :])  # (n_b, 5)
        return share.ravel(), uniform.ravel()

    def step(self, rng, state, family, beta, params=None):
        x = np.asarray(state.x)
        self._check(x)
        n, q = x.shape[0], self.q
        b = self._beta(beta, n)
        share, uniform = self._tables(b)
        layout = self.layout
        parts = layout.split(x.astype(np.int8))
        for _ in range(self.n_sweeps):
            for group in layout.groups:
                for key in group:
                    c = layout.neighbours(parts, key)
                    e01, e02, e03 = (
                        (c[0] == c[1]).view(np.int8),
                        (c[0] == c[2]).view(np.int8),
                        (c[0] == c[3]).view(np.int8),
                    )
                    e12, e13, e23 = (
                        (c[1] == c[2]).view(np.int8),
                        (c[1] == c[3]).view(np.int8),
                        (c[2] == c[3]).view(np.int8),
                    )
                    counts = (1 + e01 + e02 + e03, 1 + e01 + e12 + e13, 1 + e02 + e12 + e23, 1 + e03 + e13 + e23)
                    top = np.maximum(np.maximum(counts[0], counts[1]), np.maximum(counts[2], counts[3]))
                    off = self._row_offsets(b.shape[0], 25, top.ndim)
                    cum = [np.take(share, off + 5 * counts[0] + top)]
                    for k in (1, 2, 3):
                        cum.append(cum[-1] + np.take(share, off + 5 * counts[k] + top))
                    mass0 = np.take(uniform, self._row_offsets(b.shape[0], 5, top.ndim) + top)
                    v = rng.random(top.shape) * (mass0 + cum[3]) - mass0  # v < 0: the uniform part
                    new = c[3]
                    for k in (2, 1, 0):
                        new = np.where(v < cum[k], c[k], new)
                    width = np.where(mass0 > 0, mass0 / q, 1.0)  # exp(-lambda M), one colour's uniform part
                    spread = np.minimum((v + mass0) / width, q - 1).astype(np.int8)
                    layout.set(parts, key, np.where(v < 0, spread, new))
        x_new = layout.merge(parts).astype(np.float64)
        return ParticleState(x_new, family.parts(x_new)), KernelInfo(np.ones(n), np.ones(n, dtype=bool))
