"""Optimal annealing schedules (VAROPT): metric, length, constant-speed and Euler-Lagrange schedules, deceleration,
adaptive CESS steps; checked on a Gaussian path whose metric, length and optimal schedule are known exactly."""

import json

import numpy as np
import pytest
from scipy import stats

from pmz.families.base import TemperedFamily
from pmz.model.parts import LogDensityParts
from pmz.families.optimal import (
    constant_speed_schedule,
    decelerate,
    euler_lagrange_schedule,
    next_beta_by_cess,
    predicted_log_weight_variance,
    schedule_action,
    thermodynamic_length,
    thermodynamic_metric,
)
from pmz.families.schedules import validate_schedule
from pmz.kernels.base import Kernel, KernelInfo, KernelParams, ParticleState
from pmz.runners.ais import run_ais

S = 0.1  # sd of the target: precision rises from 1 to 1 / S^2 = 100 along the path
PREC_1 = 1.0 / S**2


class GaussianPath(TemperedFamily):
    """f0 = N(0, 1), f1(x) = exp(-x^2 / (2 S^2)): f_b is Gaussian with precision lambda(b) = 1 - b + b / S^2.

    U = -(x^2 / 2)(1 / S^2 - 1), so g(b) = Var_b[U] = (1 / S^2 - 1)^2 / (2 lambda(b)^2),
    Phi(b) = int_0^b sqrt(g) = log(lambda(b)) / sqrt(2), and the constant-speed schedule is geometric in the
    precision: lambda(b_k) = lambda(1)^(k / K)."""

    name = "gaussian_path"
    dim = 1

    def sample_start(self, rng, n):
        return rng.standard_normal((n, 1))

    def parts(self, X, *, grad=False):
        x = X[:, 0]
        return LogDensityParts(-0.5 * x**2 - 0.5 * np.log(2 * np.pi), -0.5 * x**2 * (PREC_1 - 1))


class ExactDraws(Kernel):
    """A perfect transition: a fresh exact draw of f_b for every particle."""

    name = "exact"
    tunable = False

    def default_params(self, dim):
        return KernelParams(1.0, np.ones(dim), 0)

    def step(self, rng, state, family, beta, params):
        n = state.x.shape[0]
        x = rng.standard_normal((n, 1)) / np.sqrt(precision(beta))
        return ParticleState(x, family.parts(x)), KernelInfo(np.ones(n), np.ones(n, dtype=bool))


def precision(b):
    return 1 - b + b * PREC_1


def exact_metric(b):
    return (PREC_1 - 1) ** 2 / (2 * precision(np.asarray(b, dtype=float)) ** 2)


def exact_optimal_schedule(n_temps):
    return (PREC_1 ** (np.arange(n_temps + 1) / n_temps) - 1) / (PREC_1 - 1)


EXACT_LENGTH = np.log(PREC_1) / np.sqrt(2)


@pytest.fixture
def metric():
    grid = np.linspace(0, 1, 1001)
    return grid, exact_metric(grid)


def test_metric_from_pilot_points_reproduces_the_exact_metric():
    pilot = exact_optimal_schedule(40)  # 41 points, dense near 0 where g falls fast
    for smooth in (True, False):
        grid, g = thermodynamic_metric(pilot, exact_metric(pilot), smooth=smooth)
        assert grid[0] == 0 and grid[-1] == 1 and grid.size == 1001
        np.testing.assert_allclose(g, exact_metric(grid), rtol=0.01)


def test_metric_drops_nan_extrapolates_flat_and_floors():
    betas = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    var_u = np.array([4.0, np.nan, 2.0, 0.0, 1.0, np.nan, 0.5])
    grid, g = thermodynamic_metric(betas, var_u, smooth=False)
    assert np.all(np.isfinite(g)) and np.all(g > 0)
    floor = 1e-3 * np.median([4.0, 2.0, 1.0, 0.5])
    assert g.min() == pytest.approx(floor)  # the zero estimate is floored, not dropped
    assert g[grid.searchsorted(0.4)] == pytest.approx(floor)
    np.testing.assert_allclose(g[grid <= 0.1], 4.0)  # flat below the first point
    np.testing.assert_allclose(g[grid >= 0.7], 0.5)  # flat above the last point
    np.testing.assert_allclose(g[grid.searchsorted(0.2)], np.sqrt(4.0 * 2.0), rtol=1e-9)  # log-linear across NaN
    _, g = thermodynamic_metric(betas, var_u, smooth=False, floor=0.1)
    assert g.min() == pytest.approx(0.1)
    with pytest.raises(ValueError, match="no finite"):
        thermodynamic_metric([0.2, 0.5], [np.nan, np.nan])
    with pytest.raises(ValueError, match="zero"):
        thermodynamic_metric([0.2, 0.5], [0.0, 0.0])
    with pytest.raises(ValueError, match="increasing"):
        thermodynamic_metric([0.5, 0.2], [1.0, 1.0])
    with pytest.raises(ValueError, match="floor"):
        thermodynamic_metric([0.2, 0.5], [1.0, 1.0], floor=0.0)


def test_metric_smoothing_removes_noise_and_outliers():
    """A pure function on a hand-built input: the exact metric times log-normal noise of sd 0.2, one collapsed and
    one outlying point. The noise is an equidistributed (Weyl) sequence through the normal quantile function, so
    the input does not depend on a random stream (with a Generator's draws the bounds below failed for 2.4% of the
    seeds)."""
    pilot = exact_optimal_schedule(40)
    z = stats.norm.ppf((np.arange(1, pilot.size + 1) * np.sqrt(2.0)) % 1.0)  # sd 0.98, no seed involved
    noisy = exact_metric(pilot) * np.exp(0.2 * z)
    noisy[10] = 0.0  # a collapsed particle set
    noisy[25] *= 50.0  # an outlier
    grid, smooth = thermodynamic_metric(pilot, noisy)
    _, raw = thermodynamic_metric(pilot, noisy, smooth=False)
    log_err_smooth = np.log(smooth / exact_metric(grid))
    log_err_raw = np.log(raw / exact_metric(grid))
    assert np.abs(log_err_smooth).max() < 0.5 < 5 < np.abs(log_err_raw).max()
    assert np.sqrt(np.mean(log_err_smooth**2)) < 0.2
    # the schedule from the smoothed noisy pilot is still close to the optimal one
    np.testing.assert_allclose(constant_speed_schedule(grid, smooth, 50), exact_optimal_schedule(50), atol=0.04)


def test_length_and_constant_speed_schedule_match_closed_form(metric):
    grid, g = metric
    assert thermodynamic_length(grid, g) == pytest.approx(EXACT_LENGTH, rel=1e-3)
    for K in (1, 10, 100):
        b = constant_speed_schedule(grid, g, K)
        assert b.size == K + 1 and b[0] == 0.0 and b[-1] == 1.0
        validate_schedule(b)
        np.testing.assert_allclose(b, exact_optimal_schedule(K), atol=1e-3)
    # equal thermodynamic length per step, and the smallest action
    b = constant_speed_schedule(grid, g, 100)
    lengths = np.diff(np.log(precision(b))) / np.sqrt(2)
    np.testing.assert_allclose(lengths, EXACT_LENGTH / 100, rtol=2e-3)
    assert schedule_action(b, grid, g) == pytest.approx(EXACT_LENGTH**2, rel=2e-3)
    assert schedule_action(np.linspace(0, 1, 101), grid, g) > 4 * EXACT_LENGTH**2
    assert schedule_action(np.linspace(0, 1, 101) ** 4, grid, g) > 1.1 * EXACT_LENGTH**2


def test_euler_lagrange_solver_agrees_with_closed_form(metric):
    grid, g = metric
    for K in (10, 100, 1000):
        closed = constant_speed_schedule(grid, g, K)
        solved = euler_lagrange_schedule(grid, g, K)
        validate_schedule(solved)
        np.testing.assert_allclose(solved, closed, atol=1e-4)
    # equal midpoint speeds on a metric with a bump (not monotone), still close to the closed form
    bump = g * (1 + 30 * np.exp(-0.5 * ((grid - 0.6) / 0.05) ** 2))
    solved = euler_lagrange_schedule(grid, bump, 200)
    speeds = np.sqrt(np.exp(np.interp(0.5 * (solved[1:] + solved[:-1]), grid, np.log(bump)))) * np.diff(solved)
    np.testing.assert_allclose(speeds, speeds.mean(), rtol=1e-8)
    np.testing.assert_allclose(solved, constant_speed_schedule(grid, bump, 200), atol=1e-3)


def test_action_rules_and_predicted_variance(metric):
    grid, g = metric
    b = constant_speed_schedule(grid, g, 100)
    K = 100
    assert predicted_log_weight_variance(b, grid, g) == pytest.approx(
        np.sum(np.diff(b) ** 2 * exact_metric(b[:-1])), rel=1e-3
    )
    assert K * predicted_log_weight_variance(b, grid, g) == pytest.approx(schedule_action(b, grid, g, rule="left"))
    # left and midpoint rules differ by O(1/K) here (about 5% at K = 100, 0.5% at K = 1000)
    for K, rel in ((100, 0.06), (1000, 0.006)):
        b = constant_speed_schedule(grid, g, K)
        assert schedule_action(b, grid, g, rule="left") == pytest.approx(schedule_action(b, grid, g), rel=rel)
    with pytest.raises(ValueError, match="rule"):
        schedule_action(b, grid, g, rule="right")


def test_perfect_transition_ais_variance_matches_prediction(metric, rng):
    """Sample variances of 4000 log weights against the exact perfect-transition prediction: over 40 seeds their
    relative error had sd 2.1% (optimal schedule) and 3.0% (linear, heavier tails), so the bounds 0.1 and 0.15 are
    about 5 sd (fail with probability below 1e-5); against EXACT_LENGTH^2 / K the optimal one is 5% high by
    discretisation (bound 0.2). The linear schedule's variance was at least 6.8 times the optimal one's (bound 4)."""
    grid, g = metric
    K, n_paths = 100, 4000
    optimal = constant_speed_schedule(grid, g, K)
    linear = np.linspace(0, 1, K + 1)
    family, kernel = GaussianPath(), ExactDraws()
    params = [kernel.default_params(1)] * (K + 1)
    record = run_ais(family, kernel, optimal, params, n_paths=n_paths, rng=rng, progressbar=False, keep_particles=False)
    var_opt = np.var(record.log_weights, ddof=1)
    # the exact perfect-transition variance (left-point sum) to Monte Carlo error (relative se ~ 2.3%)
    assert var_opt == pytest.approx(predicted_log_weight_variance(optimal, grid, g), rel=0.1)
    assert var_opt == pytest.approx(EXACT_LENGTH**2 / K, rel=0.2)
    # the linear schedule, simulated directly: x_{k-1} ~ N(0, 1 / lambda(b_{k-1})) independently
    x = rng.standard_normal((n_paths, K)) / np.sqrt(precision(linear[:-1]))
    log_w_linear = np.sum(np.diff(linear) * (-0.5 * x**2 * (PREC_1 - 1)), axis=1)
    var_linear = np.var(log_w_linear, ddof=1)
    assert var_linear == pytest.approx(predicted_log_weight_variance(linear, grid, g), rel=0.15)
    assert var_linear > 4 * var_opt


def test_decelerate(metric):
    grid, g = metric
    b = constant_speed_schedule(grid, g, 100)  # increments from 5e-4 to 0.046
    for delta_max in (0.02, 0.0125, 0.01):
        out = decelerate(b, delta_max)
        validate_schedule(out)
        assert out.size == b.size and out[0] == 0.0 and out[-1] == 1.0
        assert np.all(np.diff(out) <= delta_max + 1e-12)
        small = np.diff(b) < 1e-3
        assert np.all(np.diff(out)[small] >= np.diff(b)[small])  # the others are stretched, never shrunk
    np.testing.assert_allclose(decelerate(b, 0.01), np.linspace(0, 1, 101), atol=1e-12)  # K * delta_max = 1
    np.testing.assert_array_equal(decelerate(b, 0.05), b)  # nothing to cap
    with pytest.raises(ValueError, match="K \\* delta_max"):
        decelerate(b, 0.009)
    with pytest.raises(ValueError, match="positive"):
        decelerate(b, 0.0)


def _cess_fraction(log_w, U, delta):
    W = np.exp(log_w - log_w.max())
    W /= W.sum()
    w = np.exp(delta * (U - U.max()))
    return np.sum(W * w) ** 2 / np.sum(W * w**2)


def test_next_beta_by_cess(rng):
    n = 2000
    U = 3.0 * rng.standard_normal(n) - 50.0
    equal = np.full(n, -np.log(n))
    for target in (0.9, 0.5, 0.1):
        b = next_beta_by_cess(0.2, equal, U, target)
        assert 0.2 < b < 1.0
        assert _cess_fraction(equal, U, b - 0.2) == pytest.approx(target, abs=1e-6)
    # unequal, unnormalised weights with some zero-weight particles
    log_w = 2.0 * rng.standard_normal(n) + 100.0
    log_w[:10] = -np.inf
    b = next_beta_by_cess(0.0, log_w, U, 0.5, beta_max=0.5)
    assert _cess_fraction(log_w, U, b) == pytest.approx(0.5, abs=1e-6)
    # a target easily met: the whole way to beta_max
    assert next_beta_by_cess(0.3, equal, 1e-3 * U, 0.5) == 1.0
    assert next_beta_by_cess(0.3, equal, U, 0.5, beta_max=0.30001) == 0.30001
    with pytest.raises(ValueError, match="target"):
        next_beta_by_cess(0.3, equal, U, 1.0)
    with pytest.raises(ValueError, match="beta_max"):
        next_beta_by_cess(1.0, equal, U, 0.5)


# ----------------------------------------------------------------------------- through pmz.evidence


def test_varopt_and_adaptive_through_evidence(tmp_path):
    """The schedule rules through pmz.evidence (AIS, 64 paths). The optimal rules' log Z is within 4 se + 0.1 of the
    truth, se < 1.5: over 60 seeds their se ranged 0.16-1.17 (median 0.23) and no error exceeded 3.1 se + 0.1; the
    se is about 20% optimistic at 64 paths, so each bound fails with probability about 2e-4. The linear schedule is
    run for the plot and its records but not checked against the truth: with Var[log w] about 50 its 64-path se
    is not reliable (its error exceeded 4 se + 0.1 on 1 of 60 seeds: seed 15, -1.84 with se 0.38, ESS 7)."""
    import matplotlib

    import pmz
    from pmz.systems import linear_regression

    matplotlib.use("Agg")
    truth = linear_regression()
    results = {}
    for rule, extra in (("varopt", {}), ("adaptive", {}), ("varopt", {"delta_max": 0.02}), ("linear", {})):
        res = pmz.evidence(
            truth.model, method="ais", schedule=rule, n_temps=100, n_paths=64, random_seed=1, progressbar=False, **extra
        )
        beta = np.asarray(res.schedule["beta"])
        assert beta[0] == 0 and beta[-1] == 1 and np.all(np.diff(beta) > 0) and beta.size == 101
        if "delta_max" in extra:
            assert np.max(np.diff(beta)) <= 0.02 + 1e-12
        assert res.schedule.attrs["schedule_rule"] == rule
        assert "g" in res.schedule and res.schedule["g"].size > 10
        assert float(res.evidence_stats["var_log_w_predicted"]) > 0 and float(res.evidence_stats["var_log_w"]) > 0
        tuning = json.loads(res.work.attrs["tuning"])
        assert tuning["pilot_grad_evals"] > 0  # the pilot's cost is counted
        if rule != "linear":
            assert res.log_z_se < 1.5
            assert abs(res.log_z - truth.log_z) < 4 * res.log_z_se + 0.1
        results[f"{rule}{extra}"] = res
    axes = pmz.plot_schedule(results)
    assert len(axes) == 3
    # the BAR method and the tempering ladder accept the optimal rules too
    bar = pmz.evidence(truth.model, method="bar", schedule="varopt", n_temps=50, n_paths=32, progressbar=False)
    assert bar.schedule.attrs["schedule_rule"] == "varopt"
    rts = pmz.evidence(truth.model, method="rts", schedule="adaptive", n_temps=20, n_sweeps=100, progressbar=False)
    assert rts.tempering.sizes["level"] == 21
    with pytest.raises(ValueError, match="delta_max"):
        pmz.evidence(truth.model, method="ais", delta_max=0.001, n_temps=100, progressbar=False)
    with pytest.raises(ValueError, match="cess_target"):
        pmz.evidence(truth.model, method="ais", schedule="adaptive", cess_target=1.5, progressbar=False)


@pytest.mark.slow
@pytest.mark.parametrize("system", ["normal_mean", "linear_regression", "ising"])
def test_varopt_has_lower_log_weight_variance_than_linear(system):
    """AIS at the same K on known-truth systems: on the regressions, whose metric falls by orders of magnitude along
    the path, the VAROPT schedule's Var[log w] is lower than the linear schedule's in every one of 3 paired repeats
    and the median ratio is below 0.5 (over 16 seeds each: ratios 0.03-0.21, log-ratio sd 0.26-0.39, so a ratio of
    1 is 7 sd away). On the 8 x 8 Ising model, whose metric only peaks near the critical coupling, the gain is small
    against the spread of a 128-path variance (over 61 seeds: ratios 0.27-1.68, geometric mean 0.69, above 1 on 18%
    of them): there the test asserts that VAROPT is not worse, the geometric mean of the 3 ratios below 1.6 (4 sd of
    a 3-repeat mean log ratio above its mean: fails with probability about 3e-5)."""
    import pmz
    from pmz import systems

    truth = systems.ising(8, 1.0) if system == "ising" else getattr(systems, system)()
    ratios = []
    for seed in range(3):
        kw = dict(method="ais", n_temps=100, n_paths=128, random_seed=seed, progressbar=False)
        var_linear = float(pmz.evidence(truth.model, schedule="linear", **kw).evidence_stats["var_log_w"])
        var_varopt = float(pmz.evidence(truth.model, schedule="varopt", **kw).evidence_stats["var_log_w"])
        ratios.append(var_varopt / var_linear)
    if system == "ising":
        assert np.exp(np.mean(np.log(ratios))) < 1.6, ratios
    else:
        assert np.all(np.array(ratios) < 1), ratios
        assert np.median(ratios) < 0.5, ratios
