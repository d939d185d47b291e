"""The two-dimensional Ising model on an L x L torus, with its exact finite-lattice log partition function.

Spins ``s_i = +-1`` sit on the sites of a periodic ``L x L`` lattice (row-major, ``N = L^2``); with coupling
``J >= 0`` (which plays the role of the final inverse temperature) the energy over the ``2N`` nearest-neighbour
bonds is

    E(s) = -J sum_<ij> s_i s_j = -J sum_i s_i (s_(i+right) + s_(i+down)).

pmz anneals from the uniform distribution over the ``2^N`` configurations (``f0 = 2^-N``) with
``log f1(s) = -E(s) - N log 2``, so ``U = -E`` and ``f_beta ∝ exp(-beta E)``, and it reports log Z *relative to
the uniform base* (the convention of Habeck 2017, NEQ):

    log Z = log sum_s exp(-E(s)) - N log 2 = log Z_torus(J) - N log 2.

For the 32 x 32 torus at ``J = 1`` this is 2049.0498 - 709.7827 = 1339.2671 (NEQ, section 6).

Exact values come from Kaufman's (1949) formula in the form of Ferdinand & Fisher (1969) for an ``m x n``
torus (:func:`ising_log_z_exact`), checked against brute-force enumeration (:func:`ising_log_z_enumerate`) and
the row-to-row transfer matrix (:func:`ising_log_z_transfer`).

References
----------
B. Kaufman, "Crystal statistics. II. Partition function evaluated by spinor analysis", Phys. Rev. 76, 1232 (1949).
A. E. Ferdinand and M. E. Fisher, "Bounded and inhomogeneous Ising models. I. Specific-heat anomaly of a finite
lattice", Phys. Rev. 185, 832 (1969).
M. Habeck, "Model evidence from nonequilibrium simulations", NIPS 2017.

Examples
--------
>>> round(ising_log_z_exact(32, 1.0), 4)
1339.2671
>>> abs(ising_log_z_exact(4, 0.3) - ising_log_z_enumerate(4, 0.3)) < 1e-9
True
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from .lattice_gibbs import IsingKernel, lattice_shape
from ..model.energy_model import EnergyModel, UniformSpins
from ..records import KnownTruth

__all__ = [
    "CRITICAL_COUPLING",
    "enumerate_log_sum",
    "ising",
    "ising_energy",
    "ising_log_z_enumerate",
    "ising_log_z_exact",
    "ising_log_z_transfer",
    "transfer_matrix_log_z",
]

CRITICAL_COUPLING = 0.5 * np.log1p(np.sqrt(2.0))
"""Onsager's critical coupling of the infinite square lattice, ``log(1 + sqrt 2) / 2 = 0.44069``."""

LOG2 = float(np.log(2.0))


def _lattice_view(X, shape) -> np.ndarray:
    rows, cols = lattice_shape(shape)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != rows * cols:
        raise ValueError(f"states must have shape (n, {rows * cols}), got {X.shape}")
    return X.reshape(-1, rows, cols)


def ising_energy(X, L, coupling: float = 1.0) -> np.ndarray:
    """``E(s) = -J sum_i s_i (s_(i+right) + s_(i+down))`` for a batch ``X (n, L*L)`` of +-1 spins on a torus.

    ``L`` is the side of the square lattice or a pair ``(rows, cols)``. Vectorised over the batch (the bonds of
    ``np.roll(s, -1, axis)``, summed slice by slice); on a side of length 2 the right (down) neighbour is also the
    left (up) one, so such a pair is bonded twice.

    >>> ising_energy(np.ones((1, 9)), 3)       # all up: -2N
    array([-18.])
    """
    s = _lattice_view(X, L)
    return -coupling * _bond_sum(s, _dot_per_particle)


def _dot_per_particle(a, b):
    return np.einsum("nij,nij->n", a, b) if a.ndim == 3 else np.einsum("ni,ni->n", a, b)


def _bond_sum(s, pair_total):
    """``sum_i [g(s_i, s_(i+right)) + g(s_i, s_(i+down))]`` for a batch ``s (n, rows, cols)``, where
    ``pair_total(a, b)`` returns ``sum g(a, b)`` per particle. Same bonds as ``np.roll(s, -1, axis)``, without
    the copies: the interior pairs are two slices and the wrap-around pairs the last and first row/column."""
    return (
        pair_total(s[:, :, :-1], s[:, :, 1:])
        + pair_total(s[:, :, -1], s[:, :, 0])
        + pair_total(s[:, :-1, :], s[:, 1:, :])
        + pair_total(s[:, -1, :], s[:, 0, :])
    )


# ---------------------------------------------------------------------------------------- Kaufman's formula
def _log_2cosh(x):
    ax = np.abs(x)
    return ax + np.log1p(np.exp(-2.0 * ax))


def _log_abs_2sinh(x):
    ax = np.abs(x)
    with np.errstate(divide="ignore"):
        return ax + np.log(-np.expm1(-2.0 * ax))


def ising_log_z_exact(L, coupling: float, *, relative: bool = True) -> float:
    """Exact log partition function of the ``m x n`` Ising torus (Kaufman 1949; Ferdinand & Fisher 1969).

    With ``K = J``, ``m`` rows and ``n`` columns,

        Z = 1/2 (2 sinh 2K)^(mn/2) (Z_1 + Z_2 + Z_3 + Z_4),
        Z_1 = prod_(r=0..n-1) 2 cosh(m g_(2r+1) / 2),    Z_2 = prod_(r=0..n-1) 2 sinh(m g_(2r+1) / 2),
        Z_3 = prod_(r=0..n-1) 2 cosh(m g_(2r) / 2),      Z_4 = prod_(r=0..n-1) 2 sinh(m g_(2r) / 2),

    where ``cosh g_l = cosh 2K coth 2K - cos(pi l / n)`` with ``g_l > 0`` for ``l >= 1``, and
    ``g_0 = 2K + log tanh K`` *with its sign*: ``g_0 < 0`` below the critical coupling, so ``Z_4 < 0`` there,
    ``g_0 = 0`` (``Z_4 = 0``) at ``K_c = log(1 + sqrt 2)/2`` and ``g_0 > 0`` above it. Evaluated in log space:
    each product is a sum of ``log 2cosh`` / ``log |2sinh|`` terms, and the four terms are combined with their
    signs relative to the largest.

    Parameters
    ----------
    L : int or (int, int)
        Side of the square torus, or ``(rows, cols)``; sides >= 2 (a side of 2 has double bonds, as in
        :func:`ising_energy`).
    coupling : float
        ``J >= 0`` (the formula needs ``sinh 2K > 0``; ``J = 0`` gives ``N log 2``).
    relative : bool
        Subtract ``N log 2`` (log Z relative to the uniform base, pmz's convention); False gives
        ``log sum_s exp(-E(s))``.

    Examples
    --------
    >>> round(ising_log_z_exact(32, 1.0, relative=False), 4)   # NEQ: 2049.0498
    2049.0498
    """
    m, n = lattice_shape(L)
    K = float(coupling)
    N = m * n
    if not (np.isfinite(K) and K >= 0):
        raise ValueError(f"Kaufman's formula needs a finite coupling >= 0, got {coupling!r}")
    if K == 0.0:
        return 0.0 if relative else N * LOG2
    if K > 100:
        raise ValueError("coupling > 100 overflows cosh 2K; the result is N * (2K) + log 2 - [N log 2] anyway")
    c = np.cosh(2 * K) / np.tanh(2 * K)
    l_odd = 2 * np.arange(n) + 1
    l_even = 2 * np.arange(n)
    g_odd = np.arccosh(c - np.cos(np.pi * l_odd / n))
    g_even = np.arccosh(c - np.cos(np.pi * l_even / n))
    g_even[0] = 2 * K + np.log(np.tanh(K))
    log_terms = np.array(
        [
            np.sum(_log_2cosh(0.5 * m * g_odd)),
            np.sum(_log_abs_2sinh(0.5 * m * g_odd)),
            np.sum(_log_2cosh(0.5 * m * g_even)),
            np.sum(_log_abs_2sinh(0.5 * m * g_even)),
        ]
    )
    signs = np.array([1.0, 1.0, 1.0, np.sign(g_even[0])])
    top = np.max(log_terms)
    log_sum = top + np.log(np.sum(signs * np.exp(log_terms - top)))
    log_z = -LOG2 + 0.5 * N * np.log(2 * np.sinh(2 * K)) + log_sum
    return float(log_z - N * LOG2 if relative else log_z)


# ---------------------------------------------------------------------------------------- brute force
def enumerate_log_sum(log_f, values, n_sites: int, *, block_size: int = 1 << 16, max_states: int = 1 << 25) -> float:
    """``log sum_x exp(log_f(x))`` over all ``len(values)^n_sites`` states, in vectorised blocks.

    State ``k`` has site ``i`` equal to ``values[(k // q^i) mod q]``; ``log_f`` maps a block ``(B, n_sites)`` to
    ``(B,)``. Refuses more than ``max_states`` states.

    >>> round(enumerate_log_sum(lambda X: np.zeros(len(X)), [-1.0, 1.0], 3), 6)   # log 8
    2.079442
    """
    values = np.asarray(values, dtype=np.float64)
    q = values.size
    total = q**n_sites
    if total > max_states:
        raise ValueError(f"{q}^{n_sites} = {total:.3g} states is too many to enumerate (max_states={max_states})")
    powers = q ** np.arange(n_sites, dtype=np.int64)
    parts = []
    for start in range(0, total, block_size):
        k = np.arange(start, min(start + block_size, total), dtype=np.int64)
        X = values[(k[:, None] // powers[None, :]) % q]
        lf = np.asarray(log_f(X), dtype=np.float64)
        top = lf.max()
        parts.append(top + np.log(np.sum(np.exp(lf - top))))
    parts = np.asarray(parts)
    top = parts.max()
    return float(top + np.log(np.sum(np.exp(parts - top))))


def ising_log_z_enumerate(L, coupling: float, *, relative: bool = True) -> float:
    """log Z of the Ising torus by summing ``exp(-E(s))`` over all ``2^N`` configurations (N <= 25).

    Uses :func:`ising_energy`, i.e. the model's own energy (double bonds on sides of length 2).
    """
    rows, cols = lattice_shape(L)
    N = rows * cols
    log_z = enumerate_log_sum(lambda X: -ising_energy(X, (rows, cols), coupling), [-1.0, 1.0], N)
    return log_z - N * LOG2 if relative else log_z


# ---------------------------------------------------------------------------------------- transfer matrix
def transfer_matrix_log_z(values, rows: int, cols: int, bond, *, max_row_states: int = 4096) -> float:
    """``log sum_x exp(sum_<ij> bond(x_i, x_j))`` on a ``rows x cols`` torus by the row-to-row transfer matrix.

    Row configurations ``a`` (all ``q^cols`` of them) are the states of the matrix
    ``T_ab = exp(h(a)/2 + v(a, b) + h(b)/2)``, ``h(a) = sum_j bond(a_j, a_(j+1 mod cols))`` (bonds within a row),
    ``v(a, b) = sum_j bond(a_j, b_j)`` (bonds between consecutive rows); then ``Z = trace(T^rows)``, evaluated
    from the eigenvalues of the symmetric ``T`` (scaled by its largest entry, signs kept). ``bond`` is
    vectorised elementwise, e.g. ``lambda a, b: J * a * b`` (Ising) or ``lambda a, b: J * (a == b)`` (Potts).
    """
    values = np.asarray(values, dtype=np.float64)
    q = values.size
    n_row = q**cols
    if n_row > max_row_states:
        raise ValueError(f"{q}^{cols} = {n_row} row states exceed max_row_states={max_row_states}")
    k = np.arange(n_row)
    R = values[(k[:, None] // (q ** np.arange(cols))[None, :]) % q]  # (n_row, cols)
    h = np.sum(bond(R, np.roll(R, -1, axis=1)), axis=1)
    v = np.sum(bond(R[:, None, :], R[None, :, :]), axis=2)
    log_t = 0.5 * h[:, None] + v + 0.5 * h[None, :]
    scale = log_t.max()
    with threadpool_limits(limits=1, user_api="blas"):  # small matrix: threads only add contention
        lam = np.linalg.eigvalsh(np.exp(log_t - scale))
    lam_max = lam[np.argmax(np.abs(lam))]
    trace_ratio = np.sum((lam / lam_max) ** rows)
    return float(rows * (scale + np.log(np.abs(lam_max))) + np.log(trace_ratio))


def ising_log_z_transfer(L, coupling: float, *, relative: bool = True) -> float:
    """log Z of the Ising torus by the transfer matrix (``2^cols`` row states, cols <= 12): a cross-check of
    Kaufman's formula on lattices too large to enumerate."""
    rows, cols = lattice_shape(L)
    log_z = transfer_matrix_log_z([-1.0, 1.0], rows, cols, lambda a, b: coupling * a * b)
    return log_z - rows * cols * LOG2 if relative else log_z


# ---------------------------------------------------------------------------------------- the system
class _IsingLogDensity:
    """``log f1(s) = -E(s) - N log 2`` (log Z relative to the uniform base)."""

    def __init__(self, L: int, coupling: float):
        self.L, self.coupling = L, coupling
        self.offset = L * L * LOG2

    def __call__(self, X):
        return -ising_energy(X, self.L, self.coupling) - self.offset


class _IsingTargetDraws:
    """Equilibrium draws of the Ising torus at coupling J, for reverse annealing paths.

    Above the critical coupling the torus is ordered: start every chain aligned with a random global sign (the
    model is symmetric under ``s -> -s``, so each phase gets weight 1/2 exactly) and relax it with ``n_sweeps``
    heat-bath sweeps at beta = 1; below it, start from uniform spins. The relaxation within a phase is fast away
    from the critical point (tens of sweeps at J = 1); near J_c use more sweeps.
    """

    def __init__(self, L: int, coupling: float, n_sweeps: int = 200):
        self.L, self.coupling, self.n_sweeps = L, coupling, int(n_sweeps)

    def __call__(self, rng, n):
        from ..families.energy import EnergyFamily

        N = self.L * self.L
        model = EnergyModel(_IsingLogDensity(self.L, self.coupling), UniformSpins(N))
        family = EnergyFamily(model)
        kernel = IsingKernel(self.L, self.coupling, method="heat_bath", n_sweeps=self.n_sweeps)
        if self.coupling > CRITICAL_COUPLING:
            X = np.repeat(rng.choice([-1.0, 1.0], size=(n, 1)), N, axis=1)
        else:
            X = model.base.sample(rng, n)
        state, _ = kernel.step(rng, kernel.init_state(family, X), family, 1.0, kernel.default_params(N))
        return state.x


def ising(L: int = 16, coupling: float = 0.4, *, kernel: str = "heat_bath", n_sweeps: int = 1) -> KnownTruth:
    """The ``L x L`` Ising torus as a pmz energy model, with its exact log Z (Kaufman 1949).

    ``f0`` = uniform spins (:class:`~pmz.model.energy_model.UniformSpins`), ``log f1(s) = -E(s) - N log 2`` with
    ``E = -J sum_<ij> s_i s_j`` (2N bonds), so ``f_beta ∝ exp(-beta E)`` and
    ``log Z = log Z_torus(J) - N log 2`` (see the module docstring). The model's kernel is a checkerboard
    :class:`~pmz.boltzmann.lattice_gibbs.IsingKernel` (three colour classes for odd L).

    Parameters
    ----------
    L : int
        Side of the lattice (>= 2; N = L^2 spins).
    coupling : float
        ``J >= 0``; the infinite-lattice critical point is ``CRITICAL_COUPLING = 0.4407``.
    kernel : {"heat_bath", "metropolis"}
        Update of the model's kernel.
    n_sweeps : int
        Sweeps per kernel step.

    Returns
    -------
    KnownTruth
        ``(model, log_z, name)`` with ``model`` an :class:`~pmz.model.energy_model.EnergyModel`.

    Examples
    --------
    >>> system = ising(32, 1.0)
    >>> system.name, round(system.log_z, 4)
    ('ising_32x32_J1', 1339.2671)
    """
    L = int(L)
    lattice_shape(L)
    name = f"ising_{L}x{L}_J{coupling:g}"
    model = EnergyModel(
        _IsingLogDensity(L, float(coupling)),
        UniformSpins(L * L),
        kernel=IsingKernel(L, coupling, method=kernel, n_sweeps=n_sweeps),
        sample_target=_IsingTargetDraws(L, float(coupling)),
        name=name,
    )
    return KnownTruth(model, ising_log_z_exact(L, coupling), name)
