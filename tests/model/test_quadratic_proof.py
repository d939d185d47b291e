"""The degree analysis of pmz.model.quadratic_proof: small PyTensor graphs and small PyMC models whose degree in the
latents is known by hand; every accepted kind of op keeps the degree it should, every refusal names its op (and, on
a model, its term); and the latent route's ``applies`` returns the refusal. Graphs only: no compiling, no
sampling."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pytensor import scalar as ps
from pytensor.compile.builders import OpFromGraph
from pytensor.tensor.elemwise import Elemwise

try:  # PyTensor 3
    from pytensor.tensor.linalg import cho_solve, solve, solve_triangular
except ImportError:  # PyTensor 2
    from pytensor.tensor.slinalg import cho_solve, solve, solve_triangular

from pmz.auto.latent_route import LatentRoute
from pmz.model.quadratic_proof import NotPolynomial, graph_degree, quadratic_proof

x = pt.vector("x")  # the latents
s = pt.scalar("s")  # a hyperparameter's value variable
A = pt.constant(np.array([[2.0, 0.0], [1.0, 3.0]]))
M = pt.matrix("M")  # a hyperparameter's matrix


def _degree(graph):
    return graph_degree(graph, {x})


def _composite(xv):
    a, b = ps.float64("a"), ps.float64("b")
    op = Elemwise(ps.Composite([a, b], [a * b + a * 2.0]))
    return op(xv, xv)


def _op_from_graph(xv):
    u = pt.vector("u")
    op = OpFromGraph([u], [pt.sum(u**2) + u[0]])
    return op(xv)


def _composite_abs(xv):
    a = ps.float64("a")
    return Elemwise(ps.Composite([a], [ps.abs(a) * 2.0]))(xv)


ACCEPTED = {
    "constant": (lambda: pt.exp(s) + 3.0, 0),
    "affine": (lambda: 2.0 * x - x / pt.exp(s) + 1.0, 1),
    "product": (lambda: x * x[::-1], 2),
    "sqr": (lambda: pt.sqr(x - 1.0), 2),
    "pow of 2": (lambda: (x / s) ** 2, 2),
    "pow of 0": (lambda: x**0 * x, 1),
    "dot": (lambda: pt.dot(x, x), 2),
    "matmul": (lambda: pt.sum((A @ x) ** 2), 2),
    "sum and mean": (lambda: pt.sum(x) * pt.mean(x), 2),
    "shape ops": (lambda: pt.concatenate([x.reshape((2, 1)).T[0], pt.stack([x[0], s])])[1:] * x.shape[0], 1),
    "set and inc subtensor": (lambda: pt.set_subtensor(x[0], s) + pt.inc_subtensor(x[1:], x[:1]), 1),
    "alloc and specify_shape": (lambda: pt.specify_shape(pt.alloc(x[0], 3), (3,)), 1),
    "switch on a constant condition": (lambda: pt.switch(s > 0, x**2, x), 2),
    "solve_triangular": (lambda: pt.sum(solve_triangular(A, x, lower=True) ** 2), 2),
    "solve": (lambda: solve(M, x), 1),
    "cho_solve": (lambda: cho_solve((A, True), x), 1),
    "composite": (lambda: _composite(x), 2),
    "op_from_graph": (lambda: _op_from_graph(x), 2),
    "cast to float": (lambda: pt.cast(x, "float32") * 2.0, 1),
    "shape of a non-polynomial": (lambda: pt.exp(x).shape[0] * x, 1),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted_graphs_have_their_degree(name):
    build, degree = ACCEPTED[name]
    assert _degree(build()) == degree


REFUSED = {
    "abs": (lambda: pt.abs(x), "`abs`"),
    "exp": (lambda: pt.exp(x), "`exp`"),
    "log": (lambda: pt.log(x), "`log`"),
    "maximum": (lambda: pt.maximum(x, 0.0), "`maximum`"),
    "comparison": (lambda: pt.cast(x > 0, "float64"), "`gt`"),
    "switch on a comparison": (lambda: pt.switch(x > 3, 8.0, 0.0), "condition of a `switch` (`gt`"),
    "switch on a latent": (lambda: pt.switch(x, 1.0, 0.0), "condition of a `switch`"),
    "latent denominator": (lambda: 1.0 / x, "denominator of a `true_div`"),
    "fractional power": (lambda: x**0.5, "`pow` (not a constant"),
    "power of a hyperparameter": (lambda: x**s, "`pow` (not a constant"),
    "degree 3 by pow": (lambda: x**3, "`pow` at degree 3"),
    "degree 3 by products": (lambda: x * x * x, "at degree 3"),
    "degree 4 by a dot": (lambda: pt.dot(x, x) ** 2, "at degree 4"),
    "max reduction": (lambda: pt.max(x), "`Max`"),
    "prod reduction": (lambda: pt.prod(x), "`Prod`"),
    "cast to an integer": (lambda: pt.cast(x, "int64"), "`convert_to_int64`"),
    "index by a latent": (lambda: x[pt.cast(x[0], "int64")], "`convert_to_int64`"),
    "matrix of a solve": (lambda: solve(pt.outer(x, x) + M, s * pt.ones(2)), "matrix of"),
    "a composite's abs": (lambda: _composite_abs(x), "`abs`"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_graphs_name_their_op(name):
    build, words = REFUSED[name]
    found = _degree(build())
    assert isinstance(found, NotPolynomial)
    assert words in found.what


def _scan(fn, **kwargs):
    """``pytensor.scan``'s outputs on either PyTensor (3 returns no updates when asked not to)."""
    import pytensor

    try:
        return pytensor.scan(fn, return_updates=False, **kwargs)
    except TypeError:
        return pytensor.scan(fn, **kwargs)[0]


def test_a_scan_refuses():
    """A Scan reached by the latents refuses; a Scan over hyperparameters alone is a constant."""
    out = _scan(lambda xi, acc: acc + xi, sequences=[x], outputs_info=[pt.constant(0.0, dtype="float64")])
    found = _degree(out[-1])
    assert isinstance(found, NotPolynomial) and "Scan" in found.what
    assert _degree(_scan(lambda si: si * 2.0, sequences=[pt.stack([s, s])]).sum() * x) == 1


def _gaussian_model(extra=None, n=40):
    """Hierarchical normal latents under a Gaussian likelihood; ``extra(x)`` adds a term."""
    y = np.linspace(-1.0, 1.0, n)
    with pm.Model() as model:
        tau = pm.HalfNormal("tau", 1.0)
        mu = pm.Normal("mu", 0.0, 1.0)
        xv = pm.Normal("x", mu, tau, shape=n)
        if extra is not None:
            extra(xv, y)
        else:
            pm.Normal("y", xv, 0.5, observed=y)
    return model


def test_a_hierarchical_normal_model_is_proven():
    proof = quadratic_proof(_gaussian_model(), ["mu", "x"])
    assert proof.proven and proof.degree == 2 and not proof.refusal
    assert "mu, x" in proof.proof and "degree 2" in proof.proof


@pytest.mark.parametrize("term, words", [
    (lambda xv, y: pm.Normal("y", pt.abs(xv), 0.1, observed=y), "reach `abs` in the log density of y"),
    (lambda xv, y: pm.Normal("y", pt.exp(xv), 0.1, observed=y), "reach `exp` in the log density of y"),
    (lambda xv, y: pm.Potential("bump", pt.switch(xv[0] > 3, 8.0, 0.0)),
     "reach the condition of a `switch` (`gt` of the latents) in the Potential bump"),
    (lambda xv, y: pm.Potential("cube", -xv[0] ** 3), "reach `pow` at degree 3 (more than a quadratic) in the "
                                                      "Potential cube"),
    (lambda xv, y: pm.Poisson("y", pt.exp(xv), observed=np.ones(len(y))), "reach `exp` in the log density of y"),
])
def test_a_model_refusal_names_the_op_and_the_term(term, words):
    proof = quadratic_proof(_gaussian_model(term), ["mu", "x"])
    assert not proof.proven and not proof.proof and proof.degree is None
    assert words in proof.refusal and "mu, x" in proof.refusal


def test_a_hyperparameter_may_enter_anyhow():
    """``tau`` (a hyperparameter, transformed) reaches exp, log and a check: degree 0, the proof holds."""
    def term(xv, y):
        tau = xv.owner.inputs[-1]
        pm.Normal("y", xv * pt.exp(tau), pt.maximum(tau, 0.1), observed=y)

    assert quadratic_proof(_gaussian_model(term), ["mu", "x"]).proven


def test_the_proof_is_cached_per_model_and_renewed_with_a_new_term():
    model = _gaussian_model()
    first = quadratic_proof(model, ["mu", "x"])
    assert quadratic_proof(model, ["mu", "x"]) is first
    with model:
        pm.Potential("kink", pt.abs(model["x"][0]))
    again = quadratic_proof(model, ["mu", "x"])
    assert not again.proven and "Potential kink" in again.refusal


def _time_series_and_gp_models():
    y = np.sin(np.linspace(0.0, 3.0, 40))
    X = np.linspace(0.0, 1.0, 40)[:, None]
    models = {}
    with pm.Model() as models["AR"]:
        rho = pm.Uniform("rho", -1.0, 1.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        xs = pm.AR("x", rho=[rho], sigma=sigma, init_dist=pm.Normal.dist(0.0, 1.0), shape=40)
        pm.Normal("y", xs, 0.3, observed=y)
    with pm.Model() as models["GaussianRandomWalk"]:
        sigma = pm.HalfNormal("sigma", 1.0)
        xs = pm.GaussianRandomWalk("x", sigma=sigma, init_dist=pm.Normal.dist(0.0, 1.0), shape=40)
        pm.Normal("y", xs, 0.3, observed=y)
    with pm.Model() as models["MvNormal GP"]:
        ls = pm.Gamma("ls", 2.0, 2.0)
        K = pm.gp.cov.ExpQuad(1, ls)(X) + 1e-6 * np.eye(40)
        xs = pm.MvNormal("x", np.zeros(40), cov=K)
        pm.Normal("y", xs, 0.3, observed=y)
    with pm.Model() as models["pm.gp.Latent"]:
        ls = pm.Gamma("ls", 2.0, 2.0)
        gp = pm.gp.Latent(cov_func=pm.gp.cov.ExpQuad(1, ls))
        pm.Normal("y", gp.prior("f", X=X), 0.3, observed=y)
    with pm.Model() as models["regression"]:
        beta = pm.Normal("beta", 0.0, 1.0, shape=40)
        sigma = pm.HalfNormal("sigma", 1.0)
        design = np.cos(np.outer(np.arange(50), np.arange(40)) / 7.0)
        pm.Normal("y", pm.math.dot(design, beta), sigma, observed=np.ones(50))
    with pm.Model() as models["fixed MvNormal"]:
        xs = pm.MvNormal("x", np.zeros(40), cov=np.eye(40) + 0.5)
        pm.MvNormal("y", xs, cov=np.eye(40), observed=y)
    return models


def test_the_latent_route_s_model_kinds_are_proven():
    """AR and random-walk state spaces, a GP as an MvNormal and through pm.gp.Latent, a regression and a fixed
    MvNormal: every one is proven of degree 2 in its untransformed variables."""
    for name, model in _time_series_and_gp_models().items():
        latents = [rv.name for rv in model.free_RVs if model.rvs_to_transforms.get(rv) is None]
        proof = quadratic_proof(model, latents)
        assert proof.proven and proof.degree == 2, (name, proof.refusal)


def test_latent_route_applies_returns_the_refusal():
    def context(model):
        split = SimpleNamespace(latent=np.arange(40), latent_names=("mu", "x"))
        return SimpleNamespace(options=SimpleNamespace(latent=True, posterior=None), has_discrete=False, jumps="",
                               latent_split=split, target=SimpleNamespace(model=model))

    route = LatentRoute()
    assert route.applies(context(_gaussian_model())) == ""
    kinked = _gaussian_model(lambda xv, y: pm.Normal("y", pt.abs(xv), 0.1, observed=y))
    assert "reach `abs` in the log density of y" in route.applies(context(kinked))
    assert "no graph" in route.applies(context(None))
