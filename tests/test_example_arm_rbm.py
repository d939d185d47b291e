"""examples/arm_rbm.py at reduced size (``--quick``): it runs, its table has the documented shape, and ARM's mean
over the runs lies within a loose, error-bar-based bound of the exact log Z of the 20-hidden-unit digits RBM."""

import sys
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _main(name):
    sys.path.insert(0, str(EXAMPLES))
    try:
        module = __import__(name)
    finally:
        sys.path.pop(0)
    return module.main


def test_arm_rbm_quick():
    out = _main("arm_rbm")(["--quick"])
    assert set(out["systems"]) == {"h20"} and out["studies"] == [] and out["v_stage"] is None
    system = out["systems"]["h20"]
    rows = {row["label"]: row for row in system["rows"] if row["algorithm"] != "AIS"}
    ais = [row for row in system["rows"] if row["algorithm"] == "AIS"]
    assert set(rows) == {"ARM", "ARM-anticipate", "RM"} and len(ais) == 2

    # the markdown table: header, rule and one line per configuration, 11 columns each
    lines = out["tables"]["h20"].splitlines()
    assert len(lines) == 2 + len(system["rows"])
    assert all(line.count("|") == 12 for line in lines)
    assert lines[0].startswith("| algorithm | size | mean - truth | sd | RMSE | mean se |")

    for row in system["rows"]:
        runs = row["runs"]
        assert row["err"].shape == row["se"].shape == row["cpu"].shape == (runs,)
        assert np.all(np.isfinite(row["err"])) and np.all(row["se"] > 0) and np.all(row["cpu"] > 0)
        assert row["moves"] > 0 and row["sites"] > row["moves"]
        assert np.isclose(row["rmse"], np.sqrt(np.mean(row["err"] ** 2)))
    # RM keeps R particles at every stage; ARM adds particles where a stage is hard
    assert rows["RM"]["particles"] == 1.0
    assert rows["ARM"]["particles"] > 1.0 and rows["ARM-anticipate"]["particles"] > 1.0

    # ARM's mean error within 4 (between-run or reported) standard errors of the mean, plus 0.3 for the downward
    # bias of log Z at small R (Jensen, with heavy-tailed stage weights)
    arm = rows["ARM"]
    bound = 4 * max(arm["sd"], arm["mean_se"]) / np.sqrt(arm["runs"]) + 0.3
    assert abs(arm["mean"]) < bound, (arm["err"], arm["se"])
    assert arm["mean_se"] < 1.0  # and the error bar is small enough to mean something
    # AIS with K = 100 is within 4 of its own reported se of the truth in every run
    assert np.all(np.abs(ais[-1]["err"]) < 4 * ais[-1]["se"] + 0.02)
