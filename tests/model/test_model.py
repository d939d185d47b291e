"""pmz.model: the flat layout and the batched compiled log prior / log likelihood, checked against PyMC itself.

Compilation is the slow part of these tests, so one rich model (every kind of value transform, a
pm.Potential and two observed variables) is compiled once per module and shared. PyMC's own functions, the
reference, are compiled with ``REFERENCE_MODE`` (PyTensor's Python linker, light rewrites): the same densities at
a fraction of the compile time of Numba or C (a minute for this model's gradient on a cold cache), and a reference
built by another backend than the one under test.
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy.special import expit

from pmz.model import CompiledModel, FlatLayout, VarBlock, layout_from_model

N_POINTS = 20
REFERENCE_MODE = "FAST_COMPILE"  # PyMC's reference functions: compiled in seconds, evaluated at a few points only


# --------------------------------------------------------------------------
# shared models and points
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model():
    """Transforms: log (HalfNormal), logodds (Beta), simplex (Dirichlet), zero-sum (ZeroSumNormal) and none
    (Normal); a pm.Potential; two observed variables. (The packed Cholesky transform of LKJCholeskyCov is checked
    against PyMC in tests/model/test_linalg.py: with it this model's gradient takes twice as long to compile.)"""
    data = np.random.default_rng(7)
    with pm.Model() as m:
        s = pm.HalfNormal("s", 1.0)
        p = pm.Beta("p", 2.0, 3.0)
        w = pm.Dirichlet("w", a=np.array([1.0, 2.0, 3.0]))
        z = pm.ZeroSumNormal("z", sigma=1.0, shape=4)
        mu = pm.Normal("mu", 0.0, s)
        pm.Potential("pot", -0.5 * (p - 0.3) ** 2 + pt.sum(w * np.array([0.0, 1.0, 2.0])))
        pm.Normal("y1", mu + z, s, observed=data.normal(size=(5, 4)))
        pm.Normal("y2", p + w[0], s, observed=data.normal(size=6))
    return m


@pytest.fixture(scope="module")
def cm(model):
    return CompiledModel(model)


@pytest.fixture(scope="module")
def points(cm):
    return np.random.default_rng(11).standard_normal((N_POINTS, cm.dim))


@pytest.fixture(scope="module")
def values_and_grads(cm, points):
    """pmz's batched log prior, log lik and their gradients at the shared points (one compiled call)."""
    return cm.log_densities_and_grads(points)


def pymc_at(cm, fn, points):
    """A compiled PyMC point function evaluated point by point."""
    return np.array([np.asarray(fn(cm.layout.to_point(x)), dtype=float) for x in points])


def assert_close(actual, expected, tol=1e-8):
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)


# --------------------------------------------------------------------------
# the layout
# --------------------------------------------------------------------------


def test_layout_follows_model_value_vars(model, cm):
    assert cm.layout.value_names == [v.name for v in model.value_vars]
    assert cm.layout.rv_names == [rv.name for rv in model.free_RVs]
    # s, p scalars; w: 3 -> 2; z: 4 -> 3; mu scalar
    sizes = {b.rv_name: b.size for b in cm.layout.blocks}
    assert sizes == {"s": 1, "p": 1, "w": 2, "z": 3, "mu": 1}
    assert cm.dim == 8 == cm.layout.dim
    starts = [b.start for b in cm.layout.blocks]
    stops = [b.stop for b in cm.layout.blocks]
    assert starts[0] == 0 and stops[-1] == cm.dim and starts[1:] == stops[:-1]
    assert cm.layout.block_of("w") is cm.layout.block_of("w_simplex__")
    assert cm.layout.variable_of_coordinate(cm.layout.block_of("z").start) == "z"
    with pytest.raises(KeyError, match="no variable named 'nope'"):
        cm.layout.block_of("nope")


def test_flat_layout_round_trips(model, cm, points):
    layout = cm.layout
    for x in points[:5]:
        point = layout.to_point(x)
        assert set(point) == set(layout.value_names)
        for b in layout.blocks:
            assert point[b.value_name].shape == b.shape
        np.testing.assert_array_equal(layout.from_point(point), x)
    # shapes agree with PyMC's own initial point
    init = model.initial_point()
    for name, value in layout.to_point(points[0]).items():
        assert value.shape == np.shape(init[name])
    np.testing.assert_array_equal(layout.from_point(init), cm.initial_point())
    # batches
    batch = layout.to_points(points)
    for b in layout.blocks:
        assert batch[b.value_name].shape == (N_POINTS, *b.shape)
    np.testing.assert_array_equal(layout.from_points(batch), points)
    for i in (0, 7, N_POINTS - 1):
        single = layout.to_point(points[i])
        for name in layout.value_names:
            np.testing.assert_array_equal(batch[name][i], single[name])
    # extra keys are ignored, missing keys and wrong shapes are errors
    np.testing.assert_array_equal(layout.from_point({**layout.to_point(points[1]), "extra": 1.0}), points[1])
    incomplete = layout.to_point(points[1])
    del incomplete["mu"]
    with pytest.raises(KeyError, match="mu"):
        layout.from_point(incomplete)
    with pytest.raises(ValueError, match="expected a flat vector"):
        layout.to_point(points[:2])


def test_flat_layout_by_hand():
    layout = FlatLayout([VarBlock("a_log__", "a", (), 0, 1), VarBlock("b", "b", (2, 3), 1, 7)])
    assert layout.dim == 7
    x = np.arange(7.0)
    point = layout.to_point(x)
    assert point["a_log__"].shape == () and point["a_log__"] == 0.0
    np.testing.assert_array_equal(point["b"], np.arange(1.0, 7.0).reshape(2, 3))  # C order
    np.testing.assert_array_equal(layout.from_point(point), x)
    X = np.arange(14.0).reshape(2, 7)
    pts = layout.to_points(X)
    assert pts["b"].shape == (2, 2, 3)
    np.testing.assert_array_equal(layout.from_points(pts), X)
    assert [layout.variable_of_coordinate(i) for i in range(7)] == ["a"] + ["b"] * 6
    with pytest.raises(IndexError):
        layout.variable_of_coordinate(7)


def test_layout_from_model_matches_compiled(model, cm):
    assert layout_from_model(model).blocks == cm.layout.blocks


# --------------------------------------------------------------------------
# log densities and gradients against PyMC
# --------------------------------------------------------------------------


def test_joint_logp_matches_pymc(model, cm, points, values_and_grads):
    lp, ll, _, _ = values_and_grads
    assert lp.shape == ll.shape == (N_POINTS,)
    expected = pymc_at(cm, model.compile_logp(mode=REFERENCE_MODE), points)
    assert np.all(np.isfinite(expected))
    assert_close(lp + ll, expected)
    # the value-only function agrees with the value-and-gradient function
    lp2, ll2 = cm.log_densities(points)
    assert_close(lp2, lp, 1e-12)
    assert_close(ll2, ll, 1e-12)


def test_gradient_matches_pymc(model, cm, points, values_and_grads):
    _, _, glp, gll = values_and_grads
    assert glp.shape == gll.shape == (N_POINTS, cm.dim)
    expected = pymc_at(cm, model.compile_dlogp(mode=REFERENCE_MODE), points)
    assert expected.shape == (N_POINTS, cm.dim)
    scale = np.maximum(np.abs(expected), 1.0)
    np.testing.assert_array_less(np.abs(glp + gll - expected) / scale, 1e-8)


def test_prior_and_likelihood_parts_match_pymc(model, cm, points, values_and_grads):
    lp, ll, _, _ = values_and_grads
    prior = pymc_at(cm, model.compile_logp(vars=model.free_RVs, jacobian=True, mode=REFERENCE_MODE), points)
    lik = pymc_at(cm, model.compile_logp(vars=model.observed_RVs + model.potentials, mode=REFERENCE_MODE), points)
    assert_close(lp, prior)
    assert_close(ll, lik)
    # the potential is really in the likelihood part here
    without_potential = pymc_at(cm, model.compile_logp(vars=model.observed_RVs, mode=REFERENCE_MODE), points)
    assert np.max(np.abs(ll - without_potential)) > 1e-3


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
def test_potentials_in_prior_part(model, cm, points):
    cmp = CompiledModel(model, potentials="prior")
    lp, ll = cmp.log_densities(points)
    prior_fn = model.compile_logp(vars=model.free_RVs + model.potentials, jacobian=True, mode=REFERENCE_MODE)
    prior = pymc_at(cm, prior_fn, points)
    lik = pymc_at(cm, model.compile_logp(vars=model.observed_RVs, mode=REFERENCE_MODE), points)
    assert_close(lp, prior)
    assert_close(ll, lik)
    lp0, ll0 = cm.log_densities(points)
    assert_close(lp + ll, lp0 + ll0)


def test_invalid_potentials_option(model):
    with pytest.raises(ValueError, match="potentials must be one of"):
        CompiledModel(model, potentials="posterior")


# --------------------------------------------------------------------------
# batching, blocking and counters
# --------------------------------------------------------------------------


def test_batch_sizes_agree_with_row_by_row(cm, points, values_and_grads):
    rows = [cm.log_densities_and_grads(points[i : i + 1]) for i in range(N_POINTS)]
    for j in range(4):
        by_row = np.concatenate([r[j] for r in rows])
        assert_close(values_and_grads[j], by_row, 1e-12)
    for size in (1, 7):
        lp, ll = cm.log_densities(points[:size])
        assert lp.shape == ll.shape == (size,)
        assert_close(lp, values_and_grads[0][:size], 1e-12)
        assert_close(ll, values_and_grads[1][:size], 1e-12)
        _, _, glp, gll = cm.log_densities_and_grads(points[:size])
        assert glp.shape == gll.shape == (size, cm.dim)
        assert_close(glp, values_and_grads[2][:size], 1e-12)
        assert_close(gll, values_and_grads[3][:size], 1e-12)


def test_outputs_are_not_overwritten_by_later_calls(cm, points):
    lp, ll = cm.log_densities(points[:5])
    kept = lp.copy(), ll.copy()
    cm.log_densities(points[5:10])
    np.testing.assert_array_equal(lp, kept[0])
    np.testing.assert_array_equal(ll, kept[1])


def test_blocked_evaluation(model, points, values_and_grads):
    """10 particles with block_size=4: three compiled calls (4 + 4 + 2), same values as one call.

    (Gradients under blocking are checked on the cheaper data model below: a second gradient compilation of
    this model would double the module's run time.)"""
    small = CompiledModel(model, block_size=4)
    assert small.block_size == 4
    X = points[:10]
    lp, ll = small.log_densities(X)
    assert lp.shape == ll.shape == (10,)
    assert_close(lp, values_and_grads[0][:10], 1e-12)
    assert_close(ll, values_and_grads[1][:10], 1e-12)
    assert (small.n_logp_evals, small.n_grad_evals) == (10, 0)
    small.log_densities(X[:3])
    assert small.n_logp_evals == 13


def test_counters_count_particles(cm, points):
    n0, g0 = cm.n_logp_evals, cm.n_grad_evals
    cm.log_densities(points[:7])
    assert (cm.n_logp_evals, cm.n_grad_evals) == (n0 + 7, g0)
    cm.log_densities_and_grads(points[:3])
    assert (cm.n_logp_evals, cm.n_grad_evals) == (n0 + 7, g0 + 3)


def test_wrong_particle_shape(cm):
    with pytest.raises(ValueError, match=rf"particles must have shape \(n, {cm.dim}\)"):
        cm.log_densities(np.zeros(cm.dim))
    with pytest.raises(ValueError, match="particles must have shape"):
        cm.log_densities(np.zeros((3, cm.dim + 1)))


def test_invalid_block_size(data_model):
    with pytest.raises(ValueError, match="block_size must be a positive integer"):
        CompiledModel(data_model, block_size=-1)


def test_no_free_variables():
    with pm.Model() as m:
        pm.Normal("y", 0.0, 1.0, observed=[0.1, 0.2])
    from pmz import ModelSpecificationError

    with pytest.raises(ModelSpecificationError, match="no free random variables"):
        CompiledModel(m)


# --------------------------------------------------------------------------
# constrained values
# --------------------------------------------------------------------------


def test_to_constrained_matches_inverse_transforms(model, cm, points):
    out = cm.to_constrained(points)
    assert set(out) == {"s", "p", "w", "z", "mu"}
    X = cm.layout.to_points(points)
    np.testing.assert_allclose(out["s"], np.exp(X["s_log__"]), rtol=1e-12)
    np.testing.assert_allclose(out["p"], expit(X["p_logodds__"]), rtol=1e-12)
    np.testing.assert_allclose(out["mu"], X["mu"], rtol=1e-12)
    # Dirichlet: on the simplex; PyMC's simplex transform is softmax([v, -sum v])
    w = out["w"]
    assert w.shape == (N_POINTS, 3) and np.all(w > 0)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-12)
    v = X["w_simplex__"]
    full = np.concatenate([v, -v.sum(axis=1, keepdims=True)], axis=1)
    np.testing.assert_allclose(w, np.exp(full) / np.exp(full).sum(axis=1, keepdims=True), rtol=1e-12)
    # zero-sum: four values summing to zero
    assert out["z"].shape == (N_POINTS, 4)
    np.testing.assert_allclose(out["z"].sum(axis=1), 0.0, atol=1e-12)
    # and everything agrees with PyMC's own backward transforms
    pymc_fn = model.compile_fn(
        model.replace_rvs_by_values(model.free_RVs), inputs=model.value_vars, point_fn=True, mode=REFERENCE_MODE
    )
    for i in range(0, N_POINTS, 5):
        expected = pymc_fn(cm.layout.to_point(points[i]))
        for rv, value in zip(model.free_RVs, expected):
            np.testing.assert_allclose(out[rv.name][i], value, rtol=1e-10, atol=1e-12)


def test_to_constrained_nested_transform_bounds():
    with pm.Model() as m:
        s = pm.HalfNormal("s", 1.0)
        a = pm.Uniform("a", 0.0, s)
        b = pm.Uniform("b", 0.0, a)
        pm.Normal("y", b, 1.0, observed=[0.1, 0.2])
    cm = CompiledModel(m)
    X = np.random.default_rng(3).standard_normal((4, cm.dim))
    out = cm.to_constrained(X)
    s_ = np.exp(X[:, 0])
    a_ = s_ * expit(X[:, 1])
    np.testing.assert_allclose(out["s"], s_, rtol=1e-12)
    np.testing.assert_allclose(out["a"], a_, rtol=1e-12)
    np.testing.assert_allclose(out["b"], a_ * expit(X[:, 2]), rtol=1e-12)


# --------------------------------------------------------------------------
# data containers
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data_model():
    gen = np.random.default_rng(5)
    X = gen.standard_normal((15, 2))
    y = X @ np.array([0.5, -1.0]) + 0.3 * gen.standard_normal(15)
    with pm.Model() as m:
        X_data = pm.Data("X", X)
        y_data = pm.Data("y_obs", y)
        beta = pm.Normal("beta", 0.0, 1.0, shape=2)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", pt.dot(X_data, beta), sigma, observed=y_data, shape=X_data.shape[0])
    return m


def test_data_containers(data_model, rng):
    m = data_model
    cm = CompiledModel(m, block_size=4)
    assert cm.dim == 3
    pts = rng.standard_normal((10, cm.dim))  # blocks of 4 + 4 + 2
    lp, ll, glp, gll = cm.log_densities_and_grads(pts)
    assert (cm.n_logp_evals, cm.n_grad_evals) == (0, 10)
    logp, dlogp = m.compile_logp(mode=REFERENCE_MODE), m.compile_dlogp(mode=REFERENCE_MODE)
    lik = m.compile_logp(vars=m.observed_RVs, mode=REFERENCE_MODE)
    assert_close(lp + ll, pymc_at(cm, logp, pts))
    assert_close(ll, pymc_at(cm, lik, pts))
    assert_close(glp + gll, pymc_at(cm, dlogp, pts))
    # blocked batch == row by row, gradients included
    rows = [cm.log_densities_and_grads(pts[i : i + 1]) for i in range(10)]
    for j, got in enumerate((lp, ll, glp, gll)):
        assert_close(got, np.concatenate([r[j] for r in rows]), 1e-12)
    assert cm.n_grad_evals == 20
    # the compiled functions read the shared data: pm.set_data changes the likelihood
    old_X = m["X"].get_value().copy()
    new_X = rng.standard_normal(old_X.shape)
    try:
        with m:
            pm.set_data({"X": new_X})
        lp_new, ll_new = cm.log_densities(pts)
        assert_close(lp_new, lp)
        assert not np.allclose(ll_new, ll)
        assert_close(ll_new, pymc_at(cm, lik, pts))
    finally:
        with m:
            pm.set_data({"X": old_X})


def test_invalid_parameter_in_one_particle_does_not_spill_over():
    """A parameter check that fails for one particle gives -inf for that particle only.

    Regression test: vectorising PyMC's parameter checks reduced their condition over the whole batch, so one
    particle with sigma = exp(-1000) = 0 made every particle's log likelihood -inf (and HMC rejected every
    proposal of the batch).
    """
    with pm.Model() as m:
        s = pm.Normal("s", np.float64(0.0), np.float64(1.0))
        pm.Normal("y", np.float64(0.0), pm.math.exp(s), observed=np.array([1.0]))
    cm = CompiledModel(m)
    X = np.array([[0.0], [-1000.0], [0.5]])
    lp, ll = cm.log_densities(X)
    assert ll[1] == -np.inf
    expected = -0.5 * np.log(2 * np.pi) - X[[0, 2], 0] - 0.5 * np.exp(-2 * X[[0, 2], 0])
    np.testing.assert_allclose(ll[[0, 2]], expected, rtol=1e-12)
    lp_g, ll_g, glp, gll = cm.log_densities_and_grads(X)
    np.testing.assert_allclose(ll_g[[0, 2]], expected, rtol=1e-12)
    np.testing.assert_allclose(gll[[0, 2], 0], -1 + np.exp(-2 * X[[0, 2], 0]), rtol=1e-12)


def test_nested_parameter_checks_and_heavy_tails_compile():
    """Eight schools (HalfCauchy scale feeding a Normal feeding a Normal): nested checks become switches."""
    y = np.array([28.0, 8, -3, 7, -1, 1, 18, 12])
    sigma = np.array([15.0, 10, 16, 11, 9, 11, 10, 18])
    with pm.Model() as m:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(5.0))
        tau = pm.HalfCauchy("tau", np.float64(5.0))
        theta = pm.Normal("theta", mu, tau, shape=8)
        pm.Normal("y", theta, sigma, observed=y)
    cm = CompiledModel(m)
    X = np.random.default_rng(0).normal(size=(6, cm.dim))
    X[3, 1] = -800.0  # tau = exp(-800) = 0: invalid for that particle only
    lp, ll = cm.log_densities(X)
    logp = m.compile_logp(mode=REFERENCE_MODE)
    for i in (0, 1, 2, 4, 5):
        np.testing.assert_allclose(lp[i] + ll[i], logp(cm.layout.to_point(X[i])), rtol=1e-10)
    assert lp[3] + ll[3] == -np.inf


@pytest.mark.both_stacks
def test_a_conditional_autoregression_with_an_unknown_precision_is_batched_and_answered():
    """PyMC's CAR writes a sum over a 0-d term (its precision's log), which vectorize_graph cannot batch as it
    stands; pmz drops such reductions. The evidence of a CAR field under Gaussian noise, against a 1-D quadrature
    over the precision of the exact Gaussian marginal. PyMC's CAR density leaves out -(n/2) log 2 pi +
    (1/2) log det D: log Z is the density's, and log_z_normalised_prior the model's."""
    from scipy import integrate, stats

    import pmz

    n, alpha = 9, 0.8
    W = np.zeros((n, n))
    W[np.arange(n - 1), np.arange(1, n)] = W[np.arange(1, n), np.arange(n - 1)] = 1.0
    Q = np.diag(W.sum(1)) - alpha * W
    y = np.random.default_rng(4).normal(0.0, 1.5, n)
    with pm.Model() as model:
        tau = pm.Gamma("tau", 3.0, 2.0)
        field = pm.CAR("field", mu=np.zeros(n), W=W, alpha=alpha, tau=tau)
        pm.Normal("y", field, 1.0, observed=y)

    def integrand(t):
        marginal = stats.multivariate_normal(np.zeros(n), np.linalg.inv(t * Q) + np.eye(n)).logpdf(y)
        return np.exp(marginal + stats.gamma(3.0, scale=0.5).logpdf(t))

    truth = np.log(integrate.quad(integrand, 0.0, np.inf, epsabs=0, epsrel=1e-10, limit=200)[0])
    left_out = 0.5 * n * np.log(2 * np.pi) - 0.5 * np.sum(np.log(W.sum(0)))
    with pytest.warns(UserWarning, match=r"prior of field as PyMC writes it does not integrate to one"):
        res = pmz.evidence(model, random_seed=4, progressbar=False)
    assert res.reliable and 0 < res.log_z_se < 0.05
    assert abs(res.log_z - (truth + left_out)) < 4 * res.log_z_se + 0.01
    normalised = float(res.evidence_stats["log_z_normalised_prior"])
    assert abs(normalised - truth) < 4 * res.log_z_se + 0.01


def test_the_defensive_prior_of_a_car_model_is_normalised():
    """The modes route's defensive component is the prior as PyMC writes it, shifted by the log masses pmz knows;
    a CAR prior's left-out Gaussian constant is one of them, so the component's density is the normalised one."""
    from scipy import stats

    from pmz.auto.modes_route import defensive_prior
    from pmz.runners.draw_trust import prior_reference
    from pmz.systems.grid import grid_adjacency

    W = grid_adjacency(3)
    Q = np.diag(W.sum(1)) - 0.8 * W
    with pm.Model() as model:
        tau = pm.Gamma("tau", 3.0, 1.5)
        pm.CAR("field", mu=np.zeros(9), W=W, alpha=0.8, tau=tau)
    target = CompiledModel(model)
    reference = defensive_prior(target, prior_reference(target))
    X = reference.sample(np.random.default_rng(0), 5)
    log_tau = X[:, target.layout.block_of("tau").start]
    field = X[:, target.layout.block_of("field").start:target.layout.block_of("field").stop]
    exact = [stats.gamma(3.0, scale=1 / 1.5).logpdf(np.exp(u)) + u
             + stats.multivariate_normal(np.zeros(9), np.linalg.inv(np.exp(u) * Q)).logpdf(f)
             for u, f in zip(log_tau, field)]
    np.testing.assert_allclose(reference.log_density(X), exact, rtol=0, atol=1e-6)  # PyMC: eigvalsh of W
