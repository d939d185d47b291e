"""Option sets (pmz.methods.options): one frozen dataclass per family of methods, each option documented and checked
once; pmz.evidence accepts keywords or a ready option set (config=), and its docstring lists every option."""

import dataclasses

import numpy as np
import pymc as pm
import pytest

import pmz
from pmz.methods import options as opts
from pmz.registry import METHODS

pytestmark = pytest.mark.filterwarnings("ignore:pmz.*unreliable:UserWarning")


@pytest.fixture(scope="module")
def normal_mean():
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 2.0)
        pm.Normal("y", mu, 1.0, observed=np.array([0.3, -0.1, 0.8]))
    return m


def test_every_method_has_an_option_set_whose_fields_are_documented_and_checked():
    for name, spec in METHODS.items():
        assert issubclass(spec.options, opts.CommonOptions), name
        for f in dataclasses.fields(spec.options):
            assert f.metadata["doc"].strip(), (name, f.name)
            assert callable(f.metadata["check"]), (name, f.name)
        assert spec.defaults == opts.option_values(spec.options()), name  # the registry's defaults are the set's


def test_option_sets_are_frozen_and_checked_on_construction():
    two_way = opts.TwoWayOptions(n_paths=64)
    with pytest.raises(dataclasses.FrozenInstanceError):
        two_way.n_paths = 8
    with pytest.raises(ValueError, match=r"n_paths must be at least 2 \(an error bar needs several paths\)"):
        opts.TwoWayOptions(n_paths=1)
    with pytest.raises(ValueError, match="n_temps must be a positive integer"):
        two_way.replace(n_temps=0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_sweeps'"):
        opts.TwoWayOptions(n_sweeps=10)


@pytest.mark.parametrize("cls", [opts.ScheduleOptions, opts.SMCOptions, opts.ARMOptions, opts.TemperingOptions])
def test_cess_target_is_one_option_with_one_range(cls):
    """The conditional-ESS target lies in (0, 1) wherever it appears (1 would ask for steps of zero length)."""
    for bad in (0.0, 1.0, 1.5, True, "0.9"):
        with pytest.raises(ValueError, match=r"cess_target must be a number in \(0, 1\)"):
            cls(cess_target=bad)
    assert cls(cess_target=0.5).cess_target == 0.5


def test_overridden_defaults_keep_their_documentation():
    base = opts.AnnealingOptions.__dataclass_fields__["n_temps"]
    two_way = opts.TwoWayOptions.__dataclass_fields__["n_temps"]
    assert (base.default, two_way.default) == (600, 300)
    assert base.metadata["doc"] == two_way.metadata["doc"] and base.metadata["check"] is two_way.metadata["check"]


def test_evidence_docstring_lists_every_option_with_its_default():
    doc = pmz.evidence.__doc__
    for spec in METHODS.values():
        for f in dataclasses.fields(spec.options):
            assert f"``{f.name}``" in doc, f.name
    assert "- ``n_temps`` (300)" in doc and "- ``n_temps`` (600)" in doc  # two-way and forward AIS
    assert max(len(line) for line in doc.splitlines()) <= 120


def test_config_object_gives_the_same_result_as_keywords(normal_mean):
    kwargs = dict(n_paths=64, n_temps=20, n_bootstrap=50)
    by_keywords = pmz.evidence(normal_mean, method="bar", random_seed=4, progressbar=False, **kwargs)
    config = opts.TwoWayOptions(**kwargs)
    by_config = pmz.evidence(normal_mean, method="bar", config=config, random_seed=4, progressbar=False)
    assert (by_config.log_z, by_config.log_z_se) == (by_keywords.log_z, by_keywords.log_z_se)
    overridden = pmz.evidence(
        normal_mean, method="bar", config=config.replace(n_paths=128), n_paths=64, random_seed=4, progressbar=False
    )
    assert overridden.log_z == by_keywords.log_z  # keywords override the config's fields


def test_config_of_another_method_is_a_clear_error(normal_mean):
    with pytest.raises(TypeError, match=r"method='bar'\) takes TwoWayOptions, got config=SMCOptions.*\['smc'\]"):
        pmz.evidence(normal_mean, method="bar", config=opts.SMCOptions(), progressbar=False)
    with pytest.raises(TypeError, match="unknown option"):
        pmz.evidence(normal_mean, method="bar", n_particles=100, progressbar=False)


@pytest.mark.parametrize("method", ["rts", "smc", "arm"])
def test_kernel_steps_have_one_name(normal_mean, method):
    """Kernel steps between reweightings are n_steps_per_temp for every method; another spelling is unknown."""
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['n_steps'\].*'n_steps_per_temp'"):
        pmz.evidence(normal_mean, method=method, progressbar=False, n_steps=2)
    assert "n_steps_per_temp" in METHODS[method].defaults


def test_other_estimates_of_a_run_are_one_table_that_survives_netcdf(normal_mean, tmp_path):
    """Secondary estimates live in one table (estimator x log_z, log_z_se), not in ad hoc keys. BAR and RAISE of one
    run agree within 4 combined se (+0.05): about 6e-5 if the ses are right (|z| at most 2.9 on seeds 1-30, where
    BAR's se was 0.057-0.081)."""
    res = pmz.evidence(normal_mean, method="raise", random_seed=2, progressbar=False, n_paths=64, n_temps=20)
    table = res.estimates
    assert list(table.columns) == ["log_z", "log_z_se"] and table.index.name == "estimator"
    assert "bar" in table.index and np.isfinite(table.loc["bar"]).all()
    assert table.loc["bar", "log_z_se"] < 0.2  # small enough to mean something
    assert abs(table.loc["bar", "log_z"] - res.log_z) < 4 * np.hypot(table.loc["bar", "log_z_se"], res.log_z_se) + 0.05
    path = tmp_path / "raise.nc"
    res.to_netcdf(str(path))
    loaded = pmz.load(str(path))
    assert loaded.estimates.equals(table)
    bar_res = pmz.evidence(normal_mean, method="bar", random_seed=2, progressbar=False, n_paths=64, n_temps=20)
    assert bar_res.estimates.empty  # BAR is the two-way reference itself


def test_wang_landau_step_method_takes_the_evidence_option_names(normal_mean):
    with normal_mean:
        with pytest.raises(TypeError, match="gamma0"):
            pmz.WangLandau(gamma0=0.5)
        with pytest.raises(ValueError, match=r"wl_flatness must be a number in \(0, 1\)"):
            pmz.WangLandau(wl_flatness=1.0)
    assert {"wl_gamma0", "wl_flatness"} <= set(METHODS["wang_landau"].defaults)
