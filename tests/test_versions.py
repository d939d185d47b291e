"""The releases this run is made with: printed in the log (``pytest -rA`` or ``-s`` shows them here too; every run
prints them in its header) and checked to form one of the two stacks pmz supports."""

import json

import pmz
from pmz.inference_data import ARVIZ_1
from pmz.model.backend import PYTENSOR_MAJOR

from conftest import stack_versions


def _major(version: str) -> int:
    return int(version.split(".")[0])


def test_versions_form_a_supported_stack(systems):
    """PyMC 6 comes with PyTensor 3 and ArviZ 1, PyMC 5 with PyTensor 2 and ArviZ 0.x (pip resolves them from
    pmz's requirements); pmz's own stack switches read the same versions, and every result records them."""
    versions = stack_versions()
    print("pmz stack:", json.dumps(versions))
    pymc_major = _major(versions["pymc"])
    assert pymc_major in (5, 6), versions
    assert _major(versions["pytensor"]) == pymc_major - 3 == PYTENSOR_MAJOR, versions
    assert (_major(versions["arviz"]) >= 1) == (pymc_major >= 6) == ARVIZ_1, versions
    model = systems["normal_mean"].model
    res = pmz.evidence(model, method="ais", n_paths=8, n_temps=3, random_seed=0, progressbar=False)
    recorded = {key.removesuffix("_version"): value for key, value in res.run_attrs.items() if key.endswith("_version")}
    assert recorded == {"pmz": pmz.__version__, **{k: versions[k] for k in ("pymc", "pytensor", "arviz")}}
