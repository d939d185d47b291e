"""Bad or awkward inputs get an error a user can act on (class and key phrase asserted), or work as documented.

Inputs: a first argument that is not a model, ``random_seed`` of every kind (and a seed >= 2**63 through a netcdf
round trip), malformed posterior draws given as ``posterior=`` (bridge, auto and the two-way
methods), ``pmz.compare`` with a list or non-results, ``pmz.load`` of files that are not pmz results, and the
method name of bridge results. Most cases fail before any sampling; the runs that do sample are tiny.
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import xarray as xr
from scipy import stats

import pmz
from pmz.inference_data import RESULT_BASE, build
from pmz.records import EvidenceEstimate
from pmz.results import make_result

pytestmark = pytest.mark.filterwarnings("ignore:pmz.*unreliable:UserWarning")  # tiny runs, judged elsewhere

QUICK = dict(method="ais", progressbar=False, n_paths=8, n_temps=3, n_bootstrap=10)
Y = np.array([0.3, -0.1, 0.8])


@pytest.fixture(scope="module")
def model():
    """A vector mean (shape 2) and a positive scale: shapes and a support to get wrong."""
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0, shape=2)
        s = pm.HalfNormal("s", 1.0)
        pm.Normal("y", mu.sum(), s, observed=Y)
    return m


def _draws(mu=None, s=None, n_chain=2, n_draw=20):
    """A posterior-like Dataset (chain, draw, ...) for ``model`` (not its posterior: only shapes and support)."""
    rng = np.random.default_rng(3)
    mu = rng.normal(0.0, 0.3, size=(n_chain, n_draw, 2)) if mu is None else mu
    s = 0.5 + np.abs(rng.normal(0.0, 0.2, size=(n_chain, n_draw))) if s is None else s
    dims = ("chain", "draw", "mu_dim_0")[: mu.ndim]
    return xr.Dataset({"mu": (dims, mu), "s": (("chain", "draw"), s)})


def _with(name, index, value):
    ds = _draws()
    values = ds[name].values.copy()
    values[index] = value
    return ds.assign({name: (ds[name].dims, values)})


# --------------------------------------------------------------------------
# 1. the first argument of pmz.evidence
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad, kind",
    [({"mu": 1.0}, "dict"), ("model", "str"), (3, "int"), (pt.scalar("x"), "TensorVariable")],
    ids=["dict", "str", "int", "pytensor-variable"],
)
def test_non_model_first_argument(bad, kind):
    with pytest.raises(TypeError, match=f"must be a pm.Model or a pmz.EnergyModel.*got {kind}"):
        pmz.evidence(bad, **QUICK)


def test_random_variable_as_model_says_pass_the_model(model):
    with pytest.raises(TypeError, match="pass the model itself"):
        pmz.evidence(model["mu"], **QUICK)


def test_no_model_argument_outside_a_model_context():
    with pytest.raises(TypeError, match=r"No model on context stack: pass the model"):
        pmz.evidence(None, **QUICK)


# --------------------------------------------------------------------------
# 2. random_seed
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "seed, error, match",
    [
        (np.random.RandomState(1), TypeError, "random_seed=np.random.RandomState.*legacy generator"),
        (-1, ValueError, "random_seed must be non-negative"),
        ([1, -2], ValueError, "random_seed must be non-negative"),
        (1.5, TypeError, r"random_seed must be None, a non-negative int.*got 1.5 \(float\)"),
        ("1", TypeError, r"random_seed must be.*got '1' \(str\)"),
        (True, TypeError, r"random_seed must be.*\(bool\)"),
        ([], TypeError, "random_seed must be"),
    ],
    ids=["RandomState", "negative", "negative-in-list", "float", "str", "bool", "empty-list"],
)
def test_bad_random_seed(model, seed, error, match):
    with pytest.raises(error, match=match):
        pmz.evidence(model, random_seed=seed, **QUICK)


@pytest.mark.parametrize(
    "make",
    [
        lambda: 5,
        lambda: np.int64(5),
        lambda: [5, 2**70],
        lambda: np.random.SeedSequence(5),
        lambda: np.random.default_rng(5),
        lambda: np.random.Generator(np.random.MT19937(5)),
    ],
    ids=["int", "numpy-int", "list-of-ints", "SeedSequence", "Generator", "Generator-MT19937"],
)
def test_accepted_seeds_give_the_same_bits(model, make):
    a = pmz.evidence(model, random_seed=make(), **QUICK)
    b = pmz.evidence(model, random_seed=make(), **QUICK)
    assert a.log_z == b.log_z


@pytest.mark.parametrize("seed", [2**63 + 1, 2**64 + 5])
def test_seed_beyond_int64_round_trips_through_netcdf(model, seed, tmp_path):
    res = pmz.evidence(model, random_seed=seed, **QUICK)
    path = tmp_path / "big_seed.nc"
    res.to_netcdf(str(path))
    back = pmz.load(str(path))
    assert back.log_z == res.log_z
    assert back.run_attrs["random_seed"] == str(seed) and int(back.run_attrs["random_seed"]) == seed
    assert pmz.evidence(model, random_seed=int(back.run_attrs["random_seed"]), **QUICK).log_z == res.log_z


# --------------------------------------------------------------------------
# 3. malformed posterior draws: posterior= (bridge, auto and the two-way methods)
# --------------------------------------------------------------------------

BAD_DRAWS = {
    "wrong-shape": (
        lambda: _draws(mu=np.zeros((2, 20, 3))),
        ValueError,
        r"each draw of 'mu' given as {opt}= has shape \(3,\), but the model's 'mu' has shape \(2,\)",
    ),
    "scalar-for-vector": (
        lambda: _draws(mu=np.zeros((2, 20))),
        ValueError,
        r"each draw of 'mu' given as {opt}= has shape \(\), but the model's 'mu' has shape \(2,\)",
    ),
    "nan": (
        lambda: _with("mu", (0, 3, 1), np.nan),
        ValueError,
        r"1 of the 40 draws of 'mu' given as {opt}= are NaN or inf \(the first at chain 0, draw 3\)",
    ),
    "inf": (lambda: _with("s", (1, 2), np.inf), ValueError, "draws of 's' given as {opt}= are NaN or inf"),
    "outside-support": (
        lambda: _with("s", (1, 2), -1.0),
        ValueError,
        r"draws given as {opt}= lie outside the support of 's' \(e.g. s = -1",
    ),
    "list-of-lists": (lambda: [[0.1, 0.2, 0.5]] * 10, TypeError, r"{opt}.*must be.*got list"),
    "missing-variable": (
        lambda: _draws().drop_vars("s"),
        ValueError,
        r"given as {opt}= lack the free variable\(s\) \['s'\] of the model \(they hold \['mu'\]\)",
    ),
    "no-posterior-group": (
        lambda: build(RESULT_BASE, {"sample_stats": _draws()}),
        ValueError,
        r"given as {opt}= have no 'posterior' group \(groups: \['sample_stats'\]\)",
    ),
    "no-chain-dim": (
        lambda: _draws().isel(chain=0),
        ValueError,
        r"the draws of 'mu' given as {opt}= have dims \('draw', 'mu_dim_0'\); pmz reads \(chain, draw, ...\)",
    ),
    "dict-counts-differ": (
        lambda: {"mu": np.zeros((10, 2)), "s": np.ones(7)},
        ValueError,
        r"given as {opt}= have different numbers of draws per variable \{{'mu': 10, 's': 7\}}",
    ),
    "strings": (
        lambda: {"mu": np.full((10, 2), "a"), "s": np.ones(10)},
        TypeError,
        "the draws of 'mu' given as {opt}= hold <U1 values, not numbers",
    ),
}


@pytest.mark.parametrize("case", list(BAD_DRAWS))
def test_bad_bridge_posterior(model, case):
    make, error, match = BAD_DRAWS[case]
    with pytest.raises(error, match=match.format(opt="posterior")):
        pmz.evidence(model, method="bridge", posterior=make(), progressbar=False, random_seed=1)


@pytest.mark.parametrize("case", ["wrong-shape", "nan", "list-of-lists", "missing-variable", "no-posterior-group"])
def test_bad_two_way_posterior(model, case):
    make, error, match = BAD_DRAWS[case]
    if case == "list-of-lists":  # the two-way methods also take arrays of flat states, and say so
        match = r"posterior must be posterior draws \(.*\) or an array \(n, 3\) of flat unconstrained states; got list"
    with pytest.raises(error, match=match.format(opt="posterior")):
        pmz.evidence(model, **{**QUICK, "method": "bar"}, posterior=make(), random_seed=1)


def test_draws_as_reverse_start_name_the_option_that_takes_them(model):
    """reverse_start names a strategy; draws given there (the old spelling) say where they go now."""
    with pytest.raises(TypeError, match=r"pass posterior draws or an array of flat states as posterior="):
        pmz.evidence(model, **{**QUICK, "method": "bar"}, reverse_start=np.zeros((10, 3)), random_seed=1)
    with pytest.raises(ValueError, match="posterior= gives the reverse starts; leave reverse_start at 'auto'"):
        pmz.evidence(model, **{**QUICK, "method": "bar"}, posterior=np.zeros((10, 3)), reverse_start="hmc")


@pytest.mark.parametrize(
    "array, error, match",
    [
        (np.zeros((10, 4)), ValueError, r"posterior array must have shape \(n, 3\) with n >= 1, got \(10, 4\)"),
        (np.where(np.arange(30).reshape(10, 3) == 7, np.nan, 0.0), ValueError, r"1 of the 10 rows.*first is row 2"),
        (np.full((10, 3), "x"), TypeError, "posterior array holds <U1 values, not numbers"),
    ],
    ids=["wrong-shape", "nan-row", "strings"],
)
def test_bad_two_way_posterior_array(model, array, error, match):
    with pytest.raises(error, match=match):
        pmz.evidence(model, **{**QUICK, "method": "bar"}, posterior=array, random_seed=1)


@pytest.mark.parametrize("case", ["nan", "wrong-shape", "list-of-lists"])
def test_bad_auto_posterior(model, case):
    """method="auto" reads posterior= before it samples anything."""
    make, error, match = BAD_DRAWS[case]
    with pytest.raises(error, match=match.format(opt="posterior")):
        pmz.evidence(model, method="auto", posterior=make(), progressbar=False, random_seed=1)


def test_simplex_draws_that_do_not_sum_to_one():
    with pm.Model() as m:
        w = pm.Dirichlet("w", np.ones(3))
        pm.Normal("y", w[0], 1.0, observed=Y)
    draws = {"w": np.abs(np.random.default_rng(0).normal(size=(20, 3))) + 0.1}
    with pytest.raises(ValueError, match=r"lie outside the support of 'w' \(e.g. w = \["):
        pmz.evidence(m, method="bridge", posterior=draws, progressbar=False, random_seed=1)


# --------------------------------------------------------------------------
# 4. pmz.compare
# --------------------------------------------------------------------------


def _fake(log_z, se, method="ais"):
    return make_result(EvidenceEstimate(log_z=log_z, log_z_se=se, method=method))


def test_compare_takes_a_list_and_names_the_models():
    table = pmz.compare([_fake(-3.0, 0.1), _fake(-1.0, 0.1)])
    assert list(table.index) == ["model_1", "model_0"]
    assert pmz.compare((_fake(-3.0, 0.1), (-1.0, 0.2)), prior=[0.5, 0.5]).index[0] == "model_1"


@pytest.mark.parametrize(
    "results, match",
    [
        (lambda: _fake(-1.0, 0.1), "takes several results.*got one"),
        (lambda: "results", "results must be a dict.*or a list.*got str"),
        (lambda: {"a": _fake(-1.0, 0.1), "b": "text"}, "expected an EvidenceResult.*for model 'b', got str"),
        (lambda: [_fake(-1.0, 0.1), ("x", "y")], "expected an EvidenceResult.*for model 'model_1', got tuple"),
    ],
    ids=["one-result", "string", "non-result-value", "pair-of-strings"],
)
def test_compare_bad_input(results, match):
    with pytest.raises(TypeError, match=match):
        pmz.compare(results())


def test_compare_list_prior_of_wrong_length():
    with pytest.raises(ValueError, match="prior has 3 probabilities for 2 models"):
        pmz.compare([_fake(-1.0, 0.1), _fake(-2.0, 0.1)], prior=[0.2, 0.3, 0.5])


# --------------------------------------------------------------------------
# 5. pmz.load
# --------------------------------------------------------------------------


def test_load_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="pmz: no file"):
        pmz.load(str(tmp_path / "nothing.nc"))


def test_load_text_file(tmp_path):
    path = tmp_path / "notes.nc"
    path.write_text("log_z = -3.2\n")
    with pytest.raises(ValueError, match="is not a pmz EvidenceResult file: it cannot be read as netcdf"):
        pmz.load(str(path))


def test_load_truncated_file(tmp_path):
    full, cut = tmp_path / "full.nc", tmp_path / "cut.nc"
    _fake(-1.0, 0.1).to_netcdf(str(full))
    data = full.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="not a pmz EvidenceResult file.*copied completely"):
        pmz.load(str(cut))


def test_load_non_numeric_log_z(tmp_path):
    path = tmp_path / "text_log_z.nc"
    posterior = xr.Dataset(
        {"log_z": (("chain", "draw"), np.zeros((1, 5)))}, attrs={"log_z": "abc", "log_z_se": 0.1, "method": "ais"}
    )
    build(RESULT_BASE, {"posterior": posterior}).to_netcdf(str(path))
    with pytest.raises(ValueError, match="its attribute log_z is 'abc', not a number"):
        pmz.load(str(path))


def test_load_netcdf_without_pmz_attributes(tmp_path):
    path = tmp_path / "plain.nc"
    xr.Dataset({"x": ("i", np.arange(3.0))}).to_netcdf(str(path))
    with pytest.raises(ValueError, match="does not hold a pmz EvidenceResult"):
        pmz.load(str(path))


# --------------------------------------------------------------------------
# 6. bridge results say "bridge"
# --------------------------------------------------------------------------


def test_bridge_result_method_is_bridge(tmp_path):
    """Exact posterior draws of a conjugate normal mean as a dict: the result says bridge (estimator BAR) and is
    right within 4 se + 1e-3 (fails with probability about 6e-5 if the se is right: over 200 seeds of draws and
    run the error / se had mean square 0.85), with se < 0.03 (0.0003-0.012 over those seeds)."""
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=Y)
    n = Y.size
    post_sd = 1.0 / np.sqrt(1.0 + n)
    draws = {"mu": np.random.default_rng(1).normal(Y.sum() * post_sd**2, post_sd, size=400)}
    exact = stats.multivariate_normal(np.zeros(n), np.eye(n) + np.ones((n, n))).logpdf(Y)
    res = pmz.evidence(m, method="bridge", posterior=draws, progressbar=False, random_seed=2, n_bootstrap=20)
    assert res.method == "bridge" and "method='bridge'" in repr(res)
    assert res["evidence_stats"].attrs["estimator"] == "bar"
    assert res.log_z_se < 0.03
    assert abs(res.log_z - exact) < 4 * res.log_z_se + 1e-3
    path = tmp_path / "bridge.nc"
    res.to_netcdf(str(path))
    assert pmz.load(str(path)).method == "bridge"


def test_prior_without_random_names_the_ways_out():
    """A ``pm.CustomDist`` prior without ``random=`` (a raw NotImplementedError from PyTensor before): the methods
    that start from exact prior draws say so and name the ways out, and each way out gives the exact log Z of
    ``x ~ N(0, 1)``, ``y_i ~ N(x, 1)`` (a Gaussian posterior: the Laplace path is exact, se at round-off)."""
    y = np.array([0.3, 0.5])
    with pm.Model() as m:
        x = pm.CustomDist("x", 0.0, logp=lambda value, mu: pm.logp(pm.Normal.dist(mu, 1.0), value))
        pm.Normal("y", x, 1.0, observed=y)
    truth = stats.multivariate_normal(np.zeros(2), np.eye(2) + 1.0).logpdf(y)
    for method in ("bar", "smc", "rts"):
        with pytest.raises(pmz.ModelSpecificationError, match=r"cannot be drawn from.*random=.*'auto'.*'laplace'"):
            pmz.evidence(m, method=method, random_seed=1, progressbar=False)
    for way_out in (dict(method="bar", reference="laplace", n_paths=64), dict(method="auto")):
        res = pmz.evidence(m, random_seed=1, progressbar=False, **way_out)
        assert res.reliable, (way_out, res.reliability_reason)
        assert abs(res.log_z - truth) < 4 * res.log_z_se + 1e-6 and res.log_z_se < 0.02
