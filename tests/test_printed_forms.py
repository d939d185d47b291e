"""What a user reads: the printed result, advice that runs when followed, the reason's first clause."""

import numpy as np
import pymc as pm
import pytest

import pmz
from pmz.model.pymc import ModelSpecificationError


def _flat_model():
    y = np.array([0.3, -0.2, 0.9, 0.4, 0.1])
    with pm.Model() as model:
        mu = pm.Flat("mu")
        pm.Normal("y", mu, 1.0, observed=y)
    return model, y


def test_flat_prior_bridge_advice_runs():
    """method='bridge' on a pm.Flat prior used to advise method='bar', which refused the same prior. The advice
    now names what runs (bar from a Laplace reference), and following it gives log Z relative to the flat prior's
    unit scale: int prod N(y_i | mu, 1) dmu, exact."""
    model, y = _flat_model()
    with pytest.raises(ModelSpecificationError, match=r"improper prior on \['mu'\].*method='bar' with "
                                                      r"reference='laplace'"):
        pmz.evidence(model, method="bridge", random_seed=1, progressbar=False)
    res = pmz.evidence(model, method="bar", reference="laplace", random_seed=1, progressbar=False)
    n = y.size
    exact = -0.5 * (n - 1) * np.log(2 * np.pi) - 0.5 * np.log(n) - 0.5 * np.sum((y - y.mean()) ** 2)
    assert res.log_z_se < 0.05
    assert abs(res.log_z - exact) < 4 * res.log_z_se + 0.02


def test_printed_result_says_what_and_why():
    """str(res): the method and route, the value with "nats" and what it is, why the route ran, the time."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2)
        pm.Normal("y", mu, 1.0, observed=[0.3, -0.1, 0.8])
    res = pmz.evidence(model, random_seed=1, progressbar=False)
    text = str(res)
    assert text.startswith("EvidenceResult  method='auto' route=")
    assert "log marginal likelihood in nats" in text
    assert "why this route:" in text
    assert "wall time" in text
    assert "UNRELIABLE" not in text


def test_compare_table_prints_every_column_with_units():
    """pandas hid the middle columns of pmz.compare's table in a narrow terminal (log_bf among them) and
    .round(3) printed every se as 0.000: the table prints every column, each se to two significant digits, and
    says what the numbers are."""
    import pandas as pd

    table = pmz.compare({"a": (-10.0, 0.0003), "b": (-12.5, 0.0004)})
    assert list(table.columns[:4]) == ["rank", "log_bf", "log_bf_se", "probability"]
    with pd.option_context("display.width", 40, "display.max_columns", 3):
        text = repr(table)
    for column in table.columns:
        assert column in text
    assert "0.0003" in text and "0.0005" in text  # the se of log Z and of log BF (sqrt(3^2 + 4^2) = 5, x 1e-4)
    assert "-2.500" in text and "log marginal likelihood" in text and "nats" in text
    assert isinstance(table[["log_bf"]], pd.DataFrame)  # still a DataFrame for everything else
