"""Batched triangular solves (pmz.model.linalg) and the MvNormal/LKJ models that need them."""

import numpy as np
import pymc as pm
import pytest
from scipy.linalg import solve_triangular

from pmz.model import CompiledModel
from pmz.model.linalg import BroadcastTriangularSolve

from conftest import DEFAULT_BACKEND_IS_C


class _Node:
    class _Out:
        dtype = "float64"

    outputs = [_Out()]


def _solve(op, A, b):
    out = [[None]]
    op.perform(_Node(), [A, b], out)
    return out[0][0]


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_broadcast_solve_matches_scipy(lower, unit_diagonal):
    rng = np.random.default_rng(0)
    A = rng.normal(size=(5, 1, 4, 4)) + 4 * np.eye(4)  # batch (5, 1) broadcast against b's (5, 3)
    b = rng.normal(size=(5, 3, 4))
    x = _solve(BroadcastTriangularSolve(lower=lower, unit_diagonal=unit_diagonal, b_ndim=1), A, b)
    for i in range(5):
        for j in range(3):
            expected = solve_triangular(A[i, 0], b[i, j], lower=lower, unit_diagonal=unit_diagonal)
            np.testing.assert_allclose(x[i, j], expected, rtol=1e-12)
    B = rng.normal(size=(5, 1, 4, 2))
    X = _solve(BroadcastTriangularSolve(lower=lower, unit_diagonal=False, b_ndim=2), A, B)
    np.testing.assert_allclose(X[2, 0], solve_triangular(A[2, 0], B[2, 0], lower=lower), rtol=1e-12)


def test_singular_system_gives_nan_only_there():
    A = np.stack([np.eye(2), np.array([[1.0, 0.0], [1.0, 0.0]])])
    b = np.ones((2, 2))
    x = _solve(BroadcastTriangularSolve(lower=True, unit_diagonal=False, b_ndim=1), A, b)
    np.testing.assert_allclose(x[0], [1.0, 1.0])
    assert np.all(np.isnan(x[1]))


# slow: the LKJ + MvNormal gradient graph takes minutes to compile on a cold cache (twice on PyTensor 3: C and Numba)
@pytest.mark.slow
def test_mvnormal_lkj_model_matches_pymc_and_uses_the_batched_solve():
    rng = np.random.default_rng(1)
    with pm.Model() as model:
        chol, _, _ = pm.LKJCholeskyCov(
            "c", n=3, eta=np.float64(2.0), sd_dist=pm.Exponential.dist(np.float64(1.0)), compute_corr=True
        )
        m = pm.Normal("m", np.float64(0.0), np.float64(1.0), shape=3)
        pm.MvNormal("obs", m, chol=chol, observed=rng.normal(size=(20, 3)))
    c_backend = CompiledModel(model, mode="CVM")
    # the default backend too where it is another one (Numba on PyTensor 3; on PyTensor 2 it is this C backend)
    backends = [c_backend] if DEFAULT_BACKEND_IS_C else [c_backend, CompiledModel(model)]
    X = 0.5 * rng.normal(size=(9, c_backend.dim))
    # PyMC's reference functions by PyTensor's Python linker: compiled in seconds (Numba: ~25 s on a cold cache)
    logp, dlogp = model.compile_logp(mode="FAST_COMPILE"), model.compile_dlogp(mode="FAST_COMPILE")
    for cm in backends:
        lp, ll, glp, gll = cm.log_densities_and_grads(X)
        for i in range(len(X)):
            point = cm.layout.to_point(X[i])
            np.testing.assert_allclose(lp[i] + ll[i], logp(point), rtol=1e-10)
            np.testing.assert_allclose(glp[i] + gll[i], dlogp(point), rtol=1e-8, atol=1e-10)
    # the packed Cholesky transform: the diagonal entries (packed positions 0, 2, 5) are exponentiated
    packed, out = c_backend.layout.to_points(X)["c_cholesky-cov-packed__"], c_backend.to_constrained(X)
    np.testing.assert_allclose(out["c"][:, [0, 2, 5]], np.exp(packed[:, [0, 2, 5]]), rtol=1e-12)
    np.testing.assert_allclose(out["c"][:, [1, 3, 4]], packed[:, [1, 3, 4]], rtol=1e-12)
    ops = [type(node.op).__name__ for node in c_backend.fn_value_grad.maker.fgraph.toposort()]
    assert "BroadcastTriangularSolve" in ops  # the C backend's rewrite (pmz.model.linalg)
