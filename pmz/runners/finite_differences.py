"""Value, gradient and Hessian of a batched function by central differences, one call for every point's stencil.

At each point ``x`` with steps ``h`` (one per coordinate), the ``2 k^2 + 1`` stencil points are ``x``,
``x +- h_i e_i`` and ``x +- h_i e_i +- h_j e_j`` (``i < j``), and

    g_i = (f(x + h_i e_i) - f(x - h_i e_i)) / (2 h_i),
    H_ii = (f(x + h_i e_i) - 2 f(x) + f(x - h_i e_i)) / h_i^2,
    H_ij = (f(++) - f(+-) - f(-+) + f(--)) / (4 h_i h_j),

exact for a quadratic up to round-off. Newton's method on the importance route's hyperparameters
(:mod:`pmz.auto.peak_search`) and on a mixture's branches (:mod:`pmz.runners.branch_search`) both use it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["central_derivatives"]


def central_derivatives(values, points, h):
    """``(f0 (n,), grad (n, k), hess (n, k, k), f (n, 2 k^2 + 1))`` at each row of ``points (n, k)`` with steps
    ``h (n, k)``; ``values(X (m, k)) -> (m,)`` is called once, on every stencil (module docstring). Nothing is
    checked: a non-finite value gives non-finite derivatives, and ``f`` holds every stencil value to test."""
    points, h = np.atleast_2d(points), np.atleast_2d(h)
    n, k = points.shape
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    offsets = np.zeros((1 + 2 * k + 4 * len(pairs), n, k))
    for i in range(k):
        offsets[1 + i, :, i], offsets[1 + k + i, :, i] = h[:, i], -h[:, i]
    for m, (i, j) in enumerate(pairs):
        for s, (a, b) in enumerate(((1, 1), (1, -1), (-1, 1), (-1, -1))):
            offsets[1 + 2 * k + 4 * m + s, :, i] = a * h[:, i]
            offsets[1 + 2 * k + 4 * m + s, :, j] = b * h[:, j]
    stencil = (points[None] + offsets).transpose(1, 0, 2)  # (n, points per stencil, k)
    f = np.asarray(values(stencil.reshape(-1, k)), dtype=float).reshape(n, -1)
    f0, plus, minus = f[:, 0], f[:, 1 : 1 + k], f[:, 1 + k : 1 + 2 * k]
    with np.errstate(invalid="ignore", over="ignore"):
        grad = (plus - minus) / (2 * h)
        hess = np.zeros((n, k, k))
        hess[:, np.arange(k), np.arange(k)] = (plus - 2 * f0[:, None] + minus) / h**2
        for m, (i, j) in enumerate(pairs):
            a, b, c, d = (f[:, 1 + 2 * k + 4 * m + s] for s in range(4))
            hess[:, i, j] = hess[:, j, i] = (a - b - c + d) / (4 * h[:, i] * h[:, j])
    return f0, grad, hess, f
