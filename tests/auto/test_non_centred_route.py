"""The non-centred route: a Normal whose scale depends on another free variable, written as location + scale x a
standard Normal (the same model and log Z), answered by the routes without chains on the rewritten model."""

import json
import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import integrate, stats

import pmz
from pmz.model.non_centring import Z_SUFFIX, funnel_children, non_centred_model

TOL = 0.01


def _funnel(dim, n_obs=3, seed=0):
    """Neal's funnel, v ~ N(0, 3), x_i ~ N(0, exp(v / 2)), with y_j ~ N(x_j, 1) on the first n_obs; log Z by a 1-D
    quadrature over v (given v the observed x_j integrate to y_j ~ N(0, e^v + 1), the others to 1)."""
    rng = np.random.default_rng(seed)
    y = rng.normal(0.0, 2.0, size=n_obs)
    with pm.Model() as model:
        v = pm.Normal("v", 0.0, 3.0)
        x = pm.Normal("x", 0.0, pt.exp(v / 2), shape=dim - 1)
        pm.Normal("y", x[:n_obs], 1.0, observed=y)

    def density(t):
        return stats.norm.pdf(t, 0.0, 3.0) * np.prod(stats.norm.pdf(y, 0.0, np.sqrt(np.exp(t) + 1.0)))

    truth = np.log(integrate.quad(density, -60.0, 30.0, points=[-5.0, 0.0, 5.0], limit=400)[0])
    return model, truth


def test_the_graph_says_which_variables_and_the_rewrite_keeps_the_model():
    """x (scale exp(v / 2)) qualifies, v (a constant scale) does not; the rewritten model's density at (v, z) is the
    written one's at (v, x = e^{v/2} z) times the Jacobian e^{9 v / 2}, and x is a Deterministic of its own name."""
    model, _ = _funnel(10)
    children = funnel_children(model)
    assert children == {"x": ("v",)}
    rewritten = non_centred_model(model, children)
    assert {rv.name for rv in rewritten.free_RVs} == {"v", "x" + Z_SUFFIX}
    assert [d.name for d in rewritten.deterministics] == ["x"]
    z = np.linspace(-1.5, 1.5, 9)
    for v in (-2.0, 0.7):
        new = rewritten.compile_logp()({"v": np.array(v), "x" + Z_SUFFIX: z})
        old = model.compile_logp()({"v": np.array(v), "x": np.exp(v / 2) * z})
        assert np.isclose(new, old + 9 * v / 2, rtol=0, atol=1e-9)


@pytest.mark.parametrize("dim, seed", [(10, 0), (50, 1)])
def test_funnels_are_answered_on_the_non_centred_model_within_their_error_bar(dim, seed):
    """Neal's funnel with data on three coordinates: the importance route cannot serve it (no peak it can trust) and
    the non-centred route answers without chains; the draws come back under the model's own names."""
    model, truth = _funnel(dim, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pmz.evidence(model, random_seed=seed, progressbar=False)
    assert res.run_attrs["route"] == "non-centred", res.run_attrs["routes_tried"]
    assert "non-centred given v" in res.run_attrs["route_reason"]
    assert res.reliable and 0 < res.log_z_se < 0.05
    assert abs(res.log_z - truth) < 4 * res.log_z_se + TOL
    posterior = res.posterior
    assert posterior["x"].shape[-1] == dim - 1 and "x" + Z_SUFFIX not in posterior
    assert np.isfinite(posterior["x"].values).all()
    timeline = json.loads(res.evidence_stats.attrs["timeline"])
    assert any(step.startswith("non-centred model") for step in timeline)


def test_no_funnel_no_route():
    """A Normal whose scale is a constant: nothing to non-centre, the route does not apply."""
    from pmz.auto.non_centred_route import NonCentredRoute
    from pmz.model.pymc import CompiledModel

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=[0.3, -0.2])
    from types import SimpleNamespace

    context = SimpleNamespace(options=SimpleNamespace(latent=True, posterior=None), has_discrete=False, jumps="",
                              target=CompiledModel(model))
    assert "no Normal free variable whose scale depends" in NonCentredRoute().applies(context)


def test_a_scale_that_can_be_negative_keeps_its_zero_density():
    """x ~ Normal(0, v) with v itself Normal: the written model has zero density where v <= 0. The rewrite keeps
    that (z's density carries the check sigma > 0); without it, x = v z would give v < 0 the mass of v > 0 and log Z
    would come out up to log 2 high."""
    from pmz.model.pymc import CompiledModel

    with pm.Model() as model:
        v = pm.Normal("v", 1.0, 1.0)
        pm.Normal("x", 0.0, v, shape=3)
    children = funnel_children(model)
    assert children == {"x": ("v",)}
    written, rewritten = CompiledModel(model), CompiledModel(non_centred_model(model, children))
    z = np.array([0.3, -0.2, 1.1])
    names = [block.rv_name for block in rewritten.layout.blocks]
    for v_value in (-0.5, 0.8):
        point = np.concatenate([[v_value] if name == "v" else z for name in names])
        new = sum(rewritten.log_densities(point[None]))[0]
        old = sum(written.log_densities(np.concatenate([[v_value], v_value * z])[None]))[0]
        if v_value <= 0:
            assert new == -np.inf and old == -np.inf
        else:
            assert np.isclose(new, old + 3 * np.log(v_value), rtol=0, atol=1e-9)
