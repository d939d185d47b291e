"""The 4-neighbour adjacency of a ``side x side`` grid with open edges (row order), for conditional autoregressions
(``pm.CAR``) in tests and benchmarks."""

from __future__ import annotations

import numpy as np

__all__ = ["grid_adjacency"]


def grid_adjacency(side: int) -> np.ndarray:
    """``W (side^2, side^2)``: 1 where two cells share an edge, 0 elsewhere. In row order its band has half-width
    ``side``.

    >>> grid_adjacency(2)
    array([[0., 1., 1., 0.],
           [1., 0., 0., 1.],
           [1., 0., 0., 1.],
           [0., 1., 1., 0.]])
    """
    n = side * side
    index = np.arange(n).reshape(side, side)
    W = np.zeros((n, n))
    W[index[:, :-1].ravel(), index[:, 1:].ravel()] = 1.0
    W[index[:-1, :].ravel(), index[1:, :].ravel()] = 1.0
    return W + W.T
