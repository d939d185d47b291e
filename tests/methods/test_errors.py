"""Bad input to pmz.evidence gets a clear error that says what is wrong (and, where promised, with what)."""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest

import pmz
from pmz import ModelSpecificationError

QUICK = dict(method="ais", progressbar=False, n_paths=8, n_temps=3, random_seed=1)


def evidence(model, **options):
    return pmz.evidence(model, **{**QUICK, **options})


@pytest.fixture(scope="module")
def model():
    with pm.Model() as m:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(1.0))
        pm.Normal("y", mu, np.float64(1.0), observed=np.array([0.1, 0.5, -0.2]))
    return m


# --------------------------------------------------------------------------
# models pmz cannot handle
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dist", [pm.Flat, pm.HalfFlat])
def test_improper_prior(dist):
    with pm.Model() as m:
        theta = dist("theta_improper")
        pm.Normal("y", 0.0, 1.0 + pt.abs(theta), observed=[0.1, 0.2])
    with pytest.raises(ModelSpecificationError, match=r"improper prior on \['theta_improper'\]"):
        evidence(m)
    # the same through the model context
    with m, pytest.raises(ModelSpecificationError, match="improper.*theta_improper"):
        pmz.evidence(**QUICK)


def test_improper_prior_among_proper_ones():
    with pm.Model() as m:
        a = pm.Normal("a", 0.0, 1.0)
        b = pm.HalfFlat("b_scale")
        pm.Normal("y", a, b, observed=[0.1, 0.2])
    with pytest.raises(ModelSpecificationError, match=r"improper prior on \['b_scale'\]") as err:
        evidence(m)
    assert "'a'" not in str(err.value)


@pytest.mark.parametrize(
    "make",
    [lambda: pm.Poisson("k_discrete", 3.0), lambda: pm.Bernoulli("k_discrete", 0.3)],
    ids=["poisson", "bernoulli"],
)
def test_discrete_free_variable_needs_the_prior_path(make):
    """Discrete free variables are sampled by Gibbs / Metropolis flips, but only the power posterior starts them
    from exact draws: a Gaussian reference or bridge sampling cannot, and says so."""
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        k = make()
        pm.Normal("y", mu + k, 1.0, observed=[0.1, 0.2])
    with pytest.raises(ModelSpecificationError, match=r"discrete free variables \['k_discrete'\]"):
        evidence(m, reference="laplace")
    with pytest.raises(ValueError, match="continuous free variables"):
        pmz.evidence(m, method="bridge", n_draws=20, progressbar=False)
    with pytest.raises(ValueError, match="cannot move discrete"):
        pmz.evidence(pmz.EnergyModel(lambda X: X.sum(1), pmz.model.energy_model.UniformSpins(2)), kernel="hmc", **QUICK)


def test_discrete_observed_variable_is_fine():
    """Only *free* discrete variables are a problem: a Poisson likelihood compiles."""
    with pm.Model() as m:
        rate = pm.Gamma("rate", 2.0, 1.0)
        pm.Poisson("counts", rate, observed=[1, 3, 2])
    cm = pmz.model.CompiledModel(m)
    assert cm.layout.rv_names == ["rate"]


# --------------------------------------------------------------------------
# NaN / inf at the start
# --------------------------------------------------------------------------


def test_nan_in_observed_data_container():
    """NaN reaching the likelihood (here through pm.set_data on a data container): the observed variable is
    named. (pm.Data itself refuses NaN; a plain NaN array passed to observed= is auto-imputed by PyMC, see
    test_nan_in_plain_observed_array_is_imputed_by_pymc.)"""
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        data = pm.Data("d", np.array([0.1, 0.2, 0.3]))
        pm.Normal("y_nan", mu, 1.0, observed=data)
        pm.set_data({"d": np.array([0.1, np.nan, 0.3])})
    with pytest.raises(ModelSpecificationError, match=r"observed data of \['y_nan'\] hold NaN or inf"):
        evidence(m)


def test_nan_in_shared_observed_data():
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y_shared", mu, 1.0, observed=pytensor.shared(np.array([0.1, np.nan])))
    with pytest.raises(ModelSpecificationError, match=r"observed data of \[.y_shared.\] hold NaN or inf"):
        evidence(m)


def test_nan_in_plain_observed_array_is_imputed_by_pymc():
    """Documents current behaviour: PyMC turns the NaN entries of an observed numpy array into a free variable
    ``<name>_unobserved`` (auto-imputation), so pmz sees a valid model (its evidence is p(observed part))."""
    with pytest.warns(pm.exceptions.ImputationWarning):  # (pm.ImputationWarning goes in 2027)
        with pm.Model() as m:
            mu = pm.Normal("mu", 0.0, 1.0)
            pm.Normal("y_missing", mu, 1.0, observed=np.array([0.1, np.nan, 0.3]))
    cm = pmz.model.CompiledModel(m)
    assert cm.layout.rv_names == ["mu", "y_missing_unobserved"]


def test_likelihood_zero_everywhere():
    """Observed data outside the likelihood's support: log lik = -inf at every start particle."""
    with pm.Model() as m:
        scale = pm.HalfNormal("scale", 1.0)
        pm.HalfNormal("y_negative", scale, observed=[0.5, -1.0])
    with pytest.raises(ModelSpecificationError, match=r"log density is -inf.*non-finite terms: \['y_negative'\]"):
        evidence(m)


@pytest.mark.parametrize("bad", [np.nan, np.inf], ids=["nan", "inf"])
@pytest.mark.parametrize("potentials", ["likelihood", "prior"])
def test_non_finite_potential(bad, potentials):
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=[0.1, 0.2])
        pm.Potential("bad_potential", pt.switch(mu > -1e10, bad, 0.0))
    word = "nan" if np.isnan(bad) else "inf"
    # the power path refuses potentials in the prior outright; the non-finite value is then not reached
    match = (
        "potentials='prior'"
        if potentials == "prior"
        else rf"log density is {word}.*non-finite terms: \['bad_potential'\]"
    )
    with pytest.raises(ModelSpecificationError, match=match):
        evidence(m, potentials=potentials)


# --------------------------------------------------------------------------
# options
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "schedule, match",
    [
        (np.array([0.2, 0.5, 1.0]), "must start at 0 and end at 1"),
        (np.array([0.0, 0.5, 0.9]), "must start at 0 and end at 1"),
        (np.array([0.0, 0.7, 0.3, 1.0]), "strictly increasing"),
        (np.array([0.0, np.nan, 1.0]), "NaN or inf"),
        (np.array([[0.0, 1.0]]), "1-d array"),
        ("cosine", r"unknown schedule 'cosine'"),
    ],
    ids=["start", "end", "order", "nan", "2d", "name"],
)
def test_invalid_schedule(model, schedule, match):
    with pytest.raises(ValueError, match=match):
        evidence(model, schedule=schedule)


@pytest.mark.parametrize("method", ["ais", "bar", "rts"])
def test_schedule_as_an_array_or_a_list(method):
    """A NumPy array of temperatures (documented as "an array from 0 to 1") runs like the same list, with the same
    bits; it was read as a rule name and crashed ("truth value of an array is ambiguous")."""
    system = pmz.systems.conjugate.normal_mean()
    options = {"n_sweeps": 50} if method == "rts" else {"n_paths": 16}
    ladder = np.linspace(0.0, 1.0, 11)
    a = pmz.evidence(system.model, method=method, schedule=ladder, random_seed=3, progressbar=False, **options)
    b = pmz.evidence(system.model, method=method, schedule=list(ladder), random_seed=3, progressbar=False, **options)
    assert a.log_z == b.log_z and a.log_z_se == b.log_z_se and np.isfinite(a.log_z)


def test_unknown_method(model):
    with pytest.raises(ValueError, match=r"unknown method 'nested_sampling'; available: \['ais', 'arm', 'auto', 'bar', "):
        evidence(model, method="nested_sampling")


def test_unknown_option(model):
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['n_path'\]; valid options are \[.*'n_paths'") as err:
        evidence(model, n_path=10)
    for name in ("n_temps", "schedule", "kernel", "reference", "n_bootstrap"):
        assert repr(name) in str(err.value)


@pytest.mark.parametrize("n_paths", [0, -4, 2.5, True, "8", None])
def test_invalid_n_paths(model, n_paths):
    with pytest.raises(ValueError, match=r"n_paths must be a positive integer, got"):
        evidence(model, n_paths=n_paths)


def test_one_path_is_not_enough(model):
    with pytest.raises(ValueError, match="n_paths must be at least 2"):
        evidence(model, n_paths=1)


@pytest.mark.parametrize("n_temps", [0, -1, 3.0, False])
def test_invalid_n_temps(model, n_temps):
    with pytest.raises(ValueError, match="n_temps must be a positive integer"):
        evidence(model, n_temps=n_temps)


@pytest.mark.parametrize(
    "option, value, match",
    [
        ("n_bootstrap", -1, "n_bootstrap must be a non-negative integer"),
        ("n_pilot", 0, "n_pilot must be a positive integer"),
        ("n_adapt", 1.5, "n_adapt must be a positive integer"),
        ("n_tune_temps", 0, "n_tune_temps must be a positive integer"),
        ("n_steps_per_temp", 0, "n_steps_per_temp must be a positive integer"),
        ("n_leapfrog", 0, "n_leapfrog must be a positive integer"),
        ("chunk_size", 0, "chunk_size must be a positive integer or None"),
    ],
)
def test_invalid_integer_options(model, option, value, match):
    with pytest.raises(ValueError, match=match):
        evidence(model, **{option: value})


def test_unknown_kernel(model):
    with pytest.raises(ValueError, match=r"unknown kernel 'nuts'; choose 'auto', one of \['hmc', 'rwmh'\]"):
        evidence(model, kernel="nuts")


def test_unknown_reference(model):
    with pytest.raises(ValueError, match=r"unknown reference 'posterior'; use 'prior', 'laplace'"):
        evidence(model, reference="posterior")


def test_reference_object_without_members(model):
    class NotAReference:
        dim = 1

        def sample(self, rng, n):
            return np.zeros((n, 1))

    with pytest.raises(TypeError, match=r"reference object needs \.log_density"):
        evidence(model, reference=NotAReference())


def test_reference_of_wrong_dimension(model):
    ref = pmz.model.GaussianReference(np.zeros(2), np.eye(2))
    with pytest.raises(ValueError, match="reference has dimension 2, the model 1"):
        evidence(model, reference=ref)


def test_unknown_potentials_place(model):
    with pytest.raises(ValueError, match="potentials must be one of"):
        evidence(model, potentials="posterior")


def test_no_model_in_context():
    with pytest.raises(TypeError, match="No model on context stack"):
        pmz.evidence(**QUICK)


def test_smc_that_cannot_reach_the_end_stops_early_and_names_the_way_out():
    """One observation far in the prior's tail (y = 1e6, mu ~ N(0, 2)): SMC's steps stay near 1.6e-7 (the
    particles cross the gap a little at every stage), so it would need about 6 million stages; it used to run
    100,000 stages (328 s) before failing. It stops after 500 stages with the projection and the advice, and the
    advice (the default) gives the exact log Z."""
    from scipy import stats

    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 2.0)
        pm.Normal("y", mu, 1.0, observed=[1e6])
    with pytest.raises(RuntimeError, match=r"cannot reach the end.*after 500 stages.*method='auto'"):
        pmz.evidence(m, method="smc", n_runs=1, random_seed=1, progressbar=False)
    res = pmz.evidence(m, random_seed=1, progressbar=False)
    truth = stats.norm(0.0, np.sqrt(5.0)).logpdf(1e6)
    # log Z is about -1e11: float64 resolves it to about 1e-5 nats
    assert res.reliable and abs(res.log_z - truth) < 4 * res.log_z_se + 1e-13 * abs(truth) and res.log_z_se < 0.05


def test_pace_projection_tells_stalled_runs_from_accelerating_ones():
    """Steps that stay 1.6e-7 per stage project to millions of stages; steps that grow tenfold per window (a run
    at 1e-3 after 500 stages, as an adaptive run in many dimensions can be) project to 1250, and are let run."""
    from pmz.runners.resample_move import _projected_stages

    stalled = np.arange(501) * 1.63e-7
    growing = 1e-5 * 10.0 ** (np.arange(501) / 250)
    assert _projected_stages(list(stalled), 1.0) > 6e6
    assert _projected_stages(list(growing), 1.0) == pytest.approx(1250.0)
