"""Both stacks (PyMC 6 / PyTensor 3 / ArviZ 1 and PyMC 5 / PyTensor 2 / ArviZ 0.2x): backend choice, compile-time
accounting, the thread policy and reading ``pm.sample`` results of either ArviZ."""

import numpy as np
import pytest
import xarray as xr

import pmz
from pmz.inference_data import ARVIZ_1, get_group, group_names, is_inference_data
from pmz.model import CompiledModel
from pmz.model.backend import PYTENSOR_MAJOR, resolve_mode
from pmz.threads import blas_thread_limit


def test_default_backend_is_the_stacks_own():
    """Numba on PyTensor 3, C on PyTensor 2; the C backend gets pmz's batched rewrites, Numba does not."""
    cm = CompiledModel(pmz.systems.normal_mean().model)
    assert cm.backend == ("numba" if PYTENSOR_MAJOR >= 3 else "c")
    c_mode = resolve_mode("CVM")
    assert "pmz_batched_linalg" in c_mode.provided_optimizer.include
    if PYTENSOR_MAJOR >= 3:
        assert "pmz_batched_linalg" not in resolve_mode(None).provided_optimizer.include


def test_backends_agree_and_compile_time_is_counted(rng):
    """The same log densities and gradients from the default backend and the C backend; compile seconds add up."""
    model = pmz.systems.linear_regression().model
    default, c = CompiledModel(model), CompiledModel(model, mode="CVM")
    X = rng.normal(scale=0.5, size=(7, default.dim))
    for a, b in zip(default.log_densities_and_grads(X), c.log_densities_and_grads(X)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    assert default.compile_time > 0 and c.compile_time > 0
    seconds = default.compile_time
    default.log_densities_and_grads(X)  # compiled already: no more compile time
    assert default.compile_time == seconds


def test_result_reports_compile_time_and_backend():
    system = pmz.systems.normal_mean()
    res = pmz.evidence(system.model, method="ais", n_paths=16, n_temps=10, random_seed=1, progressbar=False)
    attrs = res.run_attrs
    assert 0 < attrs["compile_time"] <= attrs["wall_time"]
    assert attrs["backend"] == ("numba" if PYTENSOR_MAJOR >= 3 else "c")
    assert "compile" in repr(res)


def test_compile_mode_override_and_bad_mode():
    system = pmz.systems.normal_mean()
    kw = dict(method="ais", n_paths=16, n_temps=10, random_seed=2, progressbar=False)
    res = pmz.evidence(system.model, compile_mode="FAST_COMPILE", **kw)
    assert res.run_attrs["backend"] == "py" and np.isfinite(res.log_z)
    with pytest.raises(ValueError, match="compile_mode"):
        pmz.evidence(system.model, compile_mode="NO_SUCH_MODE", **kw)


@pytest.mark.filterwarnings("ignore:pmz. the AIS weights are degenerate")
def test_blas_thread_policy():
    """pmz limits BLAS to one thread inside its calls by default; blas_threads=None leaves it alone; same bits."""
    from threadpoolctl import threadpool_info

    def blas_threads():
        return {i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"}

    before = blas_threads()
    with blas_thread_limit(1):
        assert blas_threads() <= {1}
    with blas_thread_limit(None):
        assert blas_threads() == before
    assert blas_threads() == before
    system = pmz.systems.linear_regression()
    kw = dict(method="ais", n_paths=32, n_temps=20, random_seed=3, progressbar=False)
    one = pmz.evidence(system.model, **kw)
    untouched = pmz.evidence(system.model, blas_threads=None, **kw)
    assert one.log_z == pytest.approx(untouched.log_z, abs=1e-9)
    assert one.run_attrs["options"]  # stored
    for bad in (0, -1, 1.5, "two", True):
        with pytest.raises(ValueError, match="blas_threads"):
            pmz.evidence(system.model, blas_threads=bad, **kw)


def test_pm_sample_result_is_read_on_either_arviz():
    """A ``pm.sample`` trace (DataTree on PyMC 6, InferenceData on PyMC 5) as ``posterior=`` for bridge sampling:
    within 4 se (+0.02) of the exact log evidence, and the se small enough to mean something. The se is 0.0005-0.003
    (seeds 1-14, |z| at most 2.9), so the 0.02 alone is 7 se or more: it fails with probability far below 6e-5."""
    import pymc as pm

    system = pmz.systems.normal_mean()
    with system.model:
        idata = pm.sample(
            draws=1000, tune=500, chains=2, cores=1, random_seed=11, progressbar=False, compute_convergence_checks=False
        )
    assert is_inference_data(idata) and isinstance(idata, xr.DataTree) == ARVIZ_1
    assert "posterior" in group_names(idata) and isinstance(get_group(idata, "posterior"), xr.Dataset)
    res = pmz.evidence(system.model, method="bridge", posterior=idata, random_seed=4, progressbar=False)
    assert abs(res.log_z - system.log_z) < 4 * res.log_z_se + 0.02
    assert res.log_z_se < 0.05


def test_step_method_compile_mode():
    """The step methods take compile_mode= like pmz.evidence, and keep it across pickling (pm.sample's workers)."""
    import cloudpickle as pickle  # what pm.sample uses to send steps to its workers

    system = pmz.systems.normal_mean()
    with system.model:
        step = pmz.SimulatedTempering(n_temps=4, n_pilot=16, compile_mode="CVM")
    assert step._compiled.backend == "c"
    clone = pickle.loads(pickle.dumps(step))
    assert clone.compile_mode == "CVM" and clone._family is None  # rebuilt lazily in the receiving process
    clone.family
    assert clone._compiled.backend == "c"


def test_posterior_group_node_is_read_too():
    """``idata["posterior"]`` (a DataTree node on PyMC 6) or ``idata.posterior`` (a Dataset on PyMC 5) works as well as
    the whole trace: the same flat draws."""
    from pmz.inference_data import build, RESULT_BASE
    from pmz.runners.starts import posterior_to_flat

    system = pmz.systems.normal_mean()
    cm = CompiledModel(system.model)
    post = xr.Dataset({"mu": (("chain", "draw"), np.linspace(-1, 1, 20).reshape(2, 10))})
    trace = build(RESULT_BASE, {"posterior": post})
    whole, chain = posterior_to_flat(cm, trace)
    node, _ = posterior_to_flat(cm, trace["posterior"] if ARVIZ_1 else trace.posterior)
    np.testing.assert_array_equal(whole, node)
    np.testing.assert_array_equal(chain, np.repeat([0, 1], 10))
    np.testing.assert_allclose(whole[:, 0], np.linspace(-1, 1, 20))
