"""Seeded log Z of every method on one small model, printed to full precision: run it in two checkouts to see
which methods a change left bit-identical (and by how much the others moved, against their se).

    PYTHONPATH=<checkout> python benchmarks/same_seed.py > before.json   # then after.json in the other checkout
"""

import json
import warnings

import numpy as np
import pymc as pm

import pmz

RUNS = {
    "auto": {},
    "ais": dict(n_paths=128, n_temps=100),
    "bar": dict(n_paths=128, n_temps=100),
    "raise": dict(n_paths=128, n_temps=100),
    "histogram": dict(n_paths=128, n_temps=100),
    "rts": dict(n_sweeps=300, n_temps=20),
    "wang_landau": dict(n_sweeps=300, n_temps=20, wl_sweeps=200),
    "smc": dict(n_particles=300),
    "arm": dict(n_particles=200),
}


def main():
    warnings.filterwarnings("ignore")
    y = np.array([0.3, -0.1, 0.8, 1.2, 0.4])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2)
        s = pm.HalfNormal("s", 1.5)
        pm.Normal("y", mu, s, observed=y)
    out = {}
    for method, options in RUNS.items():
        res = pmz.evidence(model, method=method, random_seed=11, progressbar=False, **options)
        out[method] = [res.log_z, res.log_z_se]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
