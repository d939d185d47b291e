"""Which latent each term of the log density reads: the map that lets the Laplace route integrate independent
groups one at a time (:mod:`pmz.runners.conditional_laplace`).

Where the latents ``x_1..x_m`` are independent given the hyperparameters (a random effect per group), the log
density is ``f(theta, x) = c(theta) + sum_g f_g(theta, x_g)``, and ``int exp(f) dx = exp(c) prod_g int exp(f_g)
dx_g``: ``m`` one-dimensional integrals, each done by a quadrature rule, instead of one ``m``-dimensional one. The
model's elementwise terms (:meth:`pmz.model.pymc.CompiledModel.log_density_terms`: each group effect's prior, each
observation's log density) give every ``f_g`` at once from one evaluation, once it is known which latent each term
reads. That map is read from the terms' values, bit by bit: moving the latents whose index has bit ``b`` set
changes exactly the terms of those latents, so ``ceil(log2 m)`` moves name every term's latent. Then
:data:`N_SUBSET_CHECKS` moves of random halves of the latents must change exactly the terms the map predicts,
bit for bit: a term that reads two latents is caught by each such move with probability at least 1/4, so by all
of them except with probability below ``(3/4)^32 = 1e-4``; a term that changes when every latent moves together
but under none of the halves (one reading differences of latents) fails at once. Any failure leaves the joint
route (the annealed correction), which needs no map.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

__all__ = ["GroupTerms", "read_group_terms", "N_SUBSET_CHECKS"]

N_SUBSET_CHECKS = 32


@dataclass(frozen=True)
class GroupTerms:
    """Which latent each term reads, as the sparse ``(m, N)`` matrix ``sums`` of ones that adds each latent's terms,
    and the terms that no latent reaches (``constant``)."""

    sums: sparse.csr_matrix
    constant: np.ndarray
    n_groups: int

    @property
    def n_terms(self) -> int:
        return self.sums.shape[1]

    def per_group(self, T) -> np.ndarray:
        """``f_g`` for each row of the terms ``T (n, N)``: ``(n, m)``."""
        return (self.sums @ np.asarray(T).T).T

    def constant_part(self, T) -> np.ndarray:
        return T[:, self.constant].sum(axis=1)


def read_group_terms(terms, point, latent, moves, rng) -> GroupTerms | str:
    """The map from the terms of ``terms(X) -> (n, N)`` to the ``latent`` coordinates of the flat vector, read at
    ``point (dim,)`` with moves of sizes ``moves (m,)`` (module docstring); or why the latents are not separable."""
    m = len(latent)
    n_bits = max(1, int(np.ceil(np.log2(m))))
    index = np.arange(m)
    subsets = rng.uniform(size=(N_SUBSET_CHECKS, m)) < 0.5
    masks = np.vstack([np.zeros(m, bool), np.ones(m, bool)] + [((index >> b) & 1).astype(bool)[None]
                                                                 for b in range(n_bits)] + [subsets])
    X = np.repeat(np.asarray(point, dtype=float)[None], len(masks), axis=0)
    X[:, latent] += masks * moves
    T = terms(X)
    if not np.isfinite(T[0]).all():
        return "a term of the log density is not finite where the groups were read"
    changed = T[1:] != T[0]
    moved_all, bits, checks = changed[0], changed[1:1 + n_bits], changed[1 + n_bits:]
    if (bits & ~moved_all).any():
        return "a term changes when some latents move but not when all move together (it reads several)"
    group = np.zeros(T.shape[1], dtype=np.int64)
    for b in range(n_bits):
        group |= bits[b].astype(np.int64) << b
    if (group[moved_all] >= m).any():
        return "a term reads several latents"
    predicted = moved_all[None] & subsets[:, np.minimum(group, m - 1)]
    if (predicted != checks).any():
        return "a term reads several latents (a move of a random half of them changed other terms than predicted)"
    reached = np.flatnonzero(moved_all)
    counts = np.bincount(group[reached], minlength=m)
    if (counts == 0).any():
        return "a latent reaches no term of its own"
    sums = sparse.csr_matrix((np.ones(len(reached)), (group[reached], reached)), shape=(m, T.shape[1]))
    return GroupTerms(sums, np.flatnonzero(~moved_all), m)
