"""Every route of the default gets a picture that means something (pmz.plot_work): work histograms that cross at
-log Z where the route has work (with forward work alone, the same works weighted by e^-W), the SMC runs' estimates
where it ran SMC, the proof where the answer is exact; and print(res) shows the whole reason and the routes asked."""

from __future__ import annotations

import warnings

import matplotlib
import numpy as np
import pymc as pm
import pytest

import pmz

matplotlib.use("Agg")


def _evidence(model, seed, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pmz.evidence(model, random_seed=seed, progressbar=False, **options)


@pytest.fixture(scope="module")
def importance_result():
    return _evidence(pmz.systems.nig_regression().model, 0)


def _legend(ax) -> list[str]:
    return [text.get_text() for text in ax.get_legend().get_texts()]


def test_forward_work_alone_is_drawn_with_its_reweighted_twin(importance_result):
    """The importance route's one-step works: W_f and the same works weighted by e^-W, which cross at -log Z (the
    density ratio of the two at the estimate is exp(W + log Z) = 1); the legend gives the weights' ESS."""
    import matplotlib.pyplot as plt

    res = importance_result
    assert res.run_attrs["route"] == "importance"  # at most 30 coordinates: the route, however the checks go
    ax = pmz.plot_work(res)
    legend = _legend(ax)
    assert any(line.startswith("forward  $W_f$") for line in legend)
    assert any("reweighted by $e^{-W}$" in line and "ESS" in line for line in legend)
    assert "importance route" in ax.get_title()
    crossing = [line for line in ax.get_lines() if line.get_xdata()[0] == line.get_xdata()[-1]]
    assert np.isclose(crossing[0].get_xdata()[0], -res.log_z)
    plt.close(ax.figure)


def test_an_exact_answer_shows_its_proof():
    import matplotlib.pyplot as plt

    with pm.Model() as labels:
        s = pm.Bernoulli("s", 0.3, shape=3)
        pm.Normal("y", s.sum(), 1.0, observed=[0.4, 2.9])
    res = _evidence(labels, 0)
    assert res.run_attrs["route"] == "sum" and res.log_z_se == 0.0  # every variable discrete, 8 values: the sum
    ax = pmz.plot_work(res)
    assert "An exact answer" in ax.get_title()
    assert any("a finite sum" in text.get_text() for text in ax.texts)
    plt.close(ax.figure)


def test_smc_runs_are_drawn_where_the_route_ran_smc():
    """21 binary labels: too many joint values to sum, so only the tempered route applies; its picture is the runs'
    log Z with their error bars and the pooled estimate."""
    import matplotlib.pyplot as plt

    with pm.Model() as model:
        k = pm.Bernoulli("k", 0.3, shape=21)
        pm.Normal("y", 2.0 * k, 1.0, observed=np.linspace(-1.0, 3.0, 21))
    res = _evidence(model, 0)
    assert res.run_attrs["route"] == "tempered"
    ax = pmz.plot_work(res)
    assert "Independent SMC runs" in ax.get_title()
    assert any(line.startswith("pooled:") for line in _legend(ax))
    plt.close(ax.figure)


def test_print_shows_the_whole_reason_and_the_routes_asked(importance_result):
    text = repr(importance_result)
    reason = importance_result.run_attrs["route_reason"]
    assert " ".join(text.split()).count(" ".join(reason.split())) == 1  # the whole reason, wrapped, not cut
    assert "routes asked first: sum: does not apply" in text
    tried = importance_result.routes_tried
    assert tried[-1].startswith("importance: answered") and tried[0].startswith("sum: does not apply")
