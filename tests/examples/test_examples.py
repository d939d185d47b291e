"""The examples run as users run them, and say what they promise."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.slow  # the whole example
def test_quickstart_is_within_3_se_of_exact():
    """A 3-se bound: fails with probability 2.7e-3 if the se is right (the auto route's z had rms 0.7 over seeds 1-12,
    so less in practice); the se (about 0.0003) is capped."""
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "quickstart.py")], capture_output=True, text=True, timeout=600, check=True
    ).stdout
    z = float(re.search(r"error = [-+0-9.]+ = ([-+0-9.]+) se", out).group(1))
    assert abs(z) < 3, out
    se = float(re.search(r"quadratic model: log Z = [-+0-9.]+ \+/- ([-+0-9.e]+)", out).group(1))
    assert se < 0.05, out
    assert "probability" in out and "quadratic" in out  # the comparison table is printed


@pytest.mark.slow  # the whole example: two models compiled and run
def test_bayes_factor_example(tmp_path):
    """log BF is about 16.7 with an se near 0.003: certain. Two 4-se agreements between the auto route and bridge
    sampling: about 1.3e-4 together if the ses are right."""
    figure = tmp_path / "bf.png"
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "bayes_factor.py"), "--out", str(figure)],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    ).stdout
    # the heavy-tailed model explains the outliers: a large, well-determined Bayes factor in its favour
    log_bf, se = map(float, re.search(r"log BF\(student_t : normal\) = ([-+0-9.]+) \+/- ([0-9.]+)", out).groups())
    assert log_bf > 5 and se < 0.5, out
    # bridge sampling from pm.sample draws agrees with the default (auto) within 4 se for both models
    z_scores = [float(z) for z in re.findall(r"auto - bridge = [-+0-9.]+ = ([-+0-9.]+) se", out)]
    assert len(z_scores) == 2 and all(abs(z) < 4 for z in z_scores), out
    assert figure.stat().st_size > 10_000


def test_neq_ising_quick():
    """The Ising reproduction at 16 x 16: BAR and the histogram estimator within 4 se (+0.1) of Kaufman's value
    (four bounds, about 2.5e-4 together; se 0.22-0.25, |z| at most 1.5 on seeds 0-7), the exact value bracketed by
    the stochastic bounds (6.7-7.5 nats above the lower and 4.4-4.9 below the upper on seeds 0-7: certain)."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        from neq_ising import main
    finally:
        sys.path.pop(0)
    exact, runs = main(["--quick", "--seeds", "2"])
    for _, values, ses, _ in runs:
        for name in ("BAR", "histogram"):
            assert abs(values[name] - exact) < 4 * ses[name] + 0.1, (name, values[name], exact, ses[name])
            assert ses[name] < 0.5
        assert values["lower bound"] <= exact <= values["upper bound"]
