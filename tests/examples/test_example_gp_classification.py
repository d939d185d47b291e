"""The GP classification example at reduced size: every method lands near the exact evidence of 10 points.

Each of the 8 runs (4 methods, 2 seeds) is within 4 mean-reported se (+0.1) of the exact value: about 6e-5 per run
when the se is right (|z| at most 2.8 over seeds 0-29 for every method, se 0.06-0.15 against the 0.3 cap).
"""

import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.slow  # the whole example at a reduced size
def test_gp_classification_example_quick():
    """Eight 4-se bounds (+0.1): about 5e-4 together if the ses are right (module docstring)."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        from gp_classification_smc import main
    finally:
        sys.path.pop(0)
    out = main(["--quick", "--repeats", "2"])
    references, results = out["hard"]
    exact = references["exact"]
    assert references["Laplace"] < exact  # Laplace underestimates the probit evidence
    for name, r in results.items():
        assert r["se"] < 0.3, name
        assert np.all(np.abs(r["values"] - exact) < 4 * r["se"] + 0.1), (name, r["values"], exact)
    assert results["ARM, data (z)"]["particles"] >= 1.0
