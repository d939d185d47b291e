"""The simulated-tempering examples at reduced size: they run, and their numbers say what the docs claim."""

import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _main(name):
    sys.path.insert(0, str(EXAMPLES))
    try:
        module = __import__(name)
    finally:
        sys.path.pop(0)
    return module.main


def test_rts_mixture_quick():
    truth, rows = _main("rts_mixture")(["--quick", "--repeats", "2"])
    n_sweeps, values, ses = rows[-1]
    for name in ("RTS", "MBAR", "TI-RB corrected"):
        assert np.all(np.abs(values[name] - truth) < 4 * ses.get(name, ses["RTS"]) + 0.1), name
    assert ses["RTS"] < 0.5


def test_rts_rbm_quick():
    truth, rows1, rows2 = _main("rts_rbm")(["--quick", "--repeats", "2"])
    for _, used, out in rows1:
        assert used > 0
        for name in ("RTS", "AIS", "RAISE"):
            assert np.all(np.abs(out[name] - truth) < 0.3), (name, out[name])
    for _, values in rows2:
        assert np.all(np.abs(values["rts"] - truth) < 0.2)


@pytest.mark.slow
def test_tempering_bimodal_quick():
    truth, rows, vectorised = _main("tempering_bimodal")(["--quick"])
    by_name = {r["sampler"]: r for r in rows}
    # NUTS and plain Metropolis never switch modes; both tempering samplers visit both modes in every chain
    assert np.all(by_name["NUTS"]["switches"] == 0) and np.all(by_name["Metropolis"]["switches"] == 0)
    for name in ("SimulatedTempering", "WangLandau"):
        assert np.all(by_name[name]["switches"] > 0), name
        assert 0.2 < by_name[name]["reweighted"] < 0.8
    assert abs(vectorised.log_z - truth) < 4 * vectorised.log_z_se + 0.05
