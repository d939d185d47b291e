"""examples/gp_rmhmc.py at reduced size (--quick: 10 points, 2 runs per method): the grid, the evidence table and
the sampling table have their documented structure, and every evidence method lands within its own error bar of
the exact orthant probability (|log Z - exact| < 4 se + 0.1 for each run)."""

import sys
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _main():
    sys.path.insert(0, str(EXAMPLES))
    try:
        import gp_rmhmc
    finally:
        sys.path.pop(0)
    return gp_rmhmc


def test_gp_rmhmc_quick():
    example = _main()
    out = example.main(["--quick"])
    grid = out["grid"]
    assert len(grid) == len(example.AMPLITUDES) * len(example.LENGTH_SCALES) == 9
    # the hardest cell by the whitened condition number is the large-amplitude, long-length-scale corner
    assert out["hard"] == (15.0, 8.0)
    for row in grid:
        assert row["cond_whitened"] >= 1 and row["cond_centred"] >= 1
        assert row["laplace"] < row["ep"] + 1e-6  # Laplace underestimates
    assert len(out["tables"]["grid"].splitlines()) == 2 + 9
    exact = out["references"]["exact"]
    assert set(out["references"]) == {"exact", "EP", "Laplace"}
    assert abs(out["references"]["EP"] - exact) < 0.1  # EP is close at 10 points
    names = list(example.evidence_methods(example.SIZES["quick"]))
    assert list(out["evidence"]) == names and len(names) == 6
    for name, r in out["evidence"].items():
        assert r["values"].shape == r["ses"].shape == r["times"].shape == (out["runs"],)
        assert np.all(r["ses"] > 0) and np.all(r["times"] > 0)
        assert np.all(np.abs(r["values"] - exact) < 4 * r["ses"] + 0.1), (name, r["values"], r["ses"], exact)
    table = out["tables"]["evidence"].splitlines()
    assert len(table) == 2 + len(names) + 3 and table[0].startswith("| method | mean log Z | sd over runs")
    rows = out["sampling"]
    assert [r["sampler"] for r in rows] == ["GPRMHMC", "NUTS"]
    for r in rows:
        assert r["seconds"] > 0 and 0 < r["ess_f_min"] <= r["ess_f_median"] and r["ess_ll"] > 0
    assert len(out["tables"]["sampling"].splitlines()) == 2 + len(rows)
