"""The GP classification example at reduced size: every method lands near the exact evidence of 10 points."""

import sys
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_gp_classification_example_quick():
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
