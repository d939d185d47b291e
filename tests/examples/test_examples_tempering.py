"""The simulated-tempering examples at reduced size: they run, and their numbers say what the docs claim."""

import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _main(name):
    sys.path.insert(0, str(EXAMPLES))
    try:
        module = __import__(name)
    finally:
        sys.path.pop(0)
    return module.main


@pytest.mark.slow  # the whole example at a reduced size
def test_rts_mixture_quick():
    """Six 4-se bounds (+0.1), about 4e-4 together (|z| at most 1 on seeds 0-5); the se, 0.09-0.3, is capped."""
    truth, rows = _main("rts_mixture")(["--quick", "--repeats", "2"])
    n_sweeps, values, ses = rows[-1]
    for name in ("RTS", "MBAR", "TI-RB corrected"):
        assert np.all(np.abs(values[name] - truth) < 4 * ses.get(name, ses["RTS"]) + 0.1), name
    assert ses["RTS"] < 0.5


@pytest.mark.slow  # the whole example at a reduced size
def test_rts_rbm_quick():
    """The example returns values only, so the bounds are fixed: in part 1 the errors had an sd of about 0.03 (at
    most 0.05 on seeds 0-6), so 0.3 is some 10 sd; in part 2 (200 sweeps) RTS's had an sd of 0.051 (at most 0.112
    in 40 runs of seeds 102-121, one of them 3.7 of its own reported se), so 0.25 is 4.8 sd:
    about 1e-4 per run even with a heavier tail than normal (the 0.2 used before was 3.8 sd)."""
    truth, rows1, rows2 = _main("rts_rbm")(["--quick", "--repeats", "2"])
    for _, used, out in rows1:
        assert used > 0
        for name in ("RTS", "AIS", "RAISE"):
            assert np.all(np.abs(out[name] - truth) < 0.3), (name, out[name])
    for _, values in rows2:
        assert np.all(np.abs(values["rts"] - truth) < 0.25), values["rts"]


@pytest.mark.slow
def test_tempering_bimodal_quick():
    """The modes are 33 posterior sds apart: NUTS and Metropolis never cross. At this size (2 chains of 500 draws) a
    tempering chain switches modes at beta = 1 only 1-9 times (mean 3.6 over seeds 1-11), so a chain without a
    switch is possible (a few %) but a sampler without one is not (both chains: below 7e-4, Poisson bound). The
    reweighted share of the mode mu1 < mu2 (exact 0.5) has an sd of 0.14 over those seeds (0.37-0.85): inside
    (0.02, 0.98), 3.3 sd, except with probability about 1e-3 per sampler (the old (0.2, 0.8) failed on seed 3).
    log Z within 4 se (+0.05), se capped: about 6e-5."""
    truth, rows, vectorised = _main("tempering_bimodal")(["--quick"])
    by_name = {r["sampler"]: r for r in rows}
    # NUTS and plain Metropolis never switch modes; both tempering samplers visit both modes
    assert np.all(by_name["NUTS"]["switches"] == 0) and np.all(by_name["Metropolis"]["switches"] == 0)
    for name in ("SimulatedTempering", "WangLandau"):
        assert np.sum(by_name[name]["switches"]) > 0, name
        assert 0.02 < by_name[name]["reweighted"] < 0.98, (name, by_name[name]["reweighted"])
    assert vectorised.log_z_se < 0.2  # 0.024-0.045 on seeds 1-11
    assert abs(vectorised.log_z - truth) < 4 * vectorised.log_z_se + 0.05
