"""Power and false-alarm rate of the check that ``posterior=`` draws belong to the model
(:func:`pmz.runners.draws_check.check_draws`).

For each model, ``--reps`` runs of ``pm.sample`` as a user runs it (its default sampler: nutpie where installed, as
PyMC 6 chooses, else PyMC's NUTS; 4 chains x 500 draws = 2000 draws, 1000 tuning steps, its own seed each) give
draws of this model's posterior. Each run is checked as it is (a flag is a
false alarm) and after one of its coordinates is moved, in the flat unconstrained space where pmz tests:

* shifted by +0.5 posterior sd, and by -0.5 sd;
* spread about its mean by a factor 1.2, and by 0.8.

Every coordinate is moved in turn; power is the fraction of (run, coordinate) pairs flagged. Independent exact draws
of a Gaussian posterior (``--exact`` replicates, 2000 draws in 4 "chains") give the false-alarm rate of the rule
itself at 1, 10 and 100 dimensions. Usage::

    python benchmarks/draws_check.py --reps 20 --exact 2000 [--write-doc]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pymc as pm

from pmz.model.pymc import CompiledModel
from pmz.runners.draws_check import check_draws, critical_z
from pmz.runners.starts import posterior_to_flat

SECTION = "## Checking posterior= draws: power and false alarms"
MOVES = {"shift +0.5 sd": ("shift", 0.5), "shift -0.5 sd": ("shift", -0.5), "spread x1.2": ("scale", 1.2),
         "spread x0.8": ("scale", 0.8)}


def _flagged(check) -> bool:
    """Whether the check found the draws unlike this model's posterior."""
    return check is not None and bool(check.mismatch)


def _models() -> dict:
    """Everyday models: a linear regression, a logistic regression, a Poisson GLM, a non-centred hierarchy."""
    rng = np.random.default_rng(20261128)
    out = {}
    x = rng.normal(size=(300, 3))
    y = 0.5 + x @ np.array([1.0, -0.5, 0.2]) + rng.normal(0, 0.8, 300)
    with pm.Model() as m:
        a = pm.Normal("Intercept", 0, 5)
        b = pm.Normal("beta", 0, 2, shape=3)
        s = pm.HalfNormal("sigma", 2)
        pm.Normal("y", a + x @ b, s, observed=y)
    out["linear regression (5 coords, 300 rows)"] = m
    x = rng.normal(size=(500, 4))
    yb = rng.binomial(1, 1 / (1 + np.exp(-(x @ np.array([1.0, -1.0, 0.5, 0.0]) - 0.3))))
    with pm.Model() as m:
        a = pm.Normal("Intercept", 0, 2.5)
        b = pm.Normal("beta", 0, 2.5, shape=4)
        pm.Bernoulli("y", logit_p=a + x @ b, observed=yb)
    out["logistic regression (5 coords, 500 rows)"] = m
    x = rng.normal(size=(400, 2))
    yc = rng.poisson(np.exp(1.0 + x @ np.array([0.3, -0.2])))
    with pm.Model() as m:
        a = pm.Normal("Intercept", 0, 2)
        b = pm.Normal("beta", 0, 1, shape=2)
        pm.Poisson("y", np.exp(a + x @ b), observed=yc)
    out["Poisson GLM (3 coords, 400 rows)"] = m
    groups = np.repeat(np.arange(8), 10)
    theta = rng.normal(1.0, 0.7, 8)
    yh = rng.normal(theta[groups], 1.0)
    with pm.Model() as m:
        mu = pm.Normal("mu", 0, 5)
        tau = pm.HalfNormal("tau", 2)
        z = pm.Normal("z", 0, 1, shape=8)
        pm.Normal("y", mu + tau * z[groups], 1.0, observed=yh)
    out["hierarchical, non-centred (10 coords, 8 groups)"] = m
    return out


def _moved(X, j: int, kind: str, amount: float) -> np.ndarray:
    out = X.copy()
    if kind == "shift":
        out[:, j] += amount * X[:, j].std()
    else:
        out[:, j] = X[:, j].mean() + amount * (X[:, j] - X[:, j].mean())
    return out


def mcmc_rates(name, model, reps: int, n_coordinates: int | None = None) -> dict:
    """False alarms over ``reps`` pm.sample runs, and power over (run, coordinate) pairs: every coordinate, or
    ``n_coordinates`` of them chosen at random (the same for every run) in many dimensions."""
    cm = CompiledModel(model)
    coordinates = np.arange(cm.dim)
    if n_coordinates is not None and n_coordinates < cm.dim:
        coordinates = np.sort(np.random.default_rng(3).choice(cm.dim, n_coordinates, replace=False))
    counts = {"false alarms": 0, **{k: 0 for k in MOVES}}
    pairs = 0
    seconds = 0.0
    for rep in range(reps):
        t0 = time.perf_counter()
        with model, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample(500, tune=1000, chains=4, cores=1, random_seed=1000 + rep, progressbar=False,
                              compute_convergence_checks=False)
        seconds += time.perf_counter() - t0
        X, chain = posterior_to_flat(cm, idata)
        counts["false alarms"] += _flagged(check_draws(cm, X, chain))
        for j in coordinates:
            pairs += 1
            for label, (kind, amount) in MOVES.items():
                counts[label] += _flagged(check_draws(cm, _moved(X, j, kind, amount), chain))
    row = {"model": name, "dim": cm.dim, "runs": reps, "false alarms": counts["false alarms"] / reps}
    row.update({k: counts[k] / pairs for k in MOVES})
    row["pm.sample s/run"] = seconds / reps
    return row


class _ExactGaussian:
    """A stand-in compiled model for N(0, I_d): log density and gradient of exact draws, no PyMC."""

    def __init__(self, dim):
        self.dim = dim
        self.layout = type("L", (), {"discrete_mask": np.zeros(dim, dtype=bool), "blocks": []})()

    def log_densities_and_grads(self, X):
        lp = -0.5 * np.sum(X**2, axis=1)
        return lp, np.zeros_like(lp), -X, np.zeros_like(X)


def exact_rates(reps: int, dims=(1, 10, 100)) -> list[dict]:
    rows = []
    rng = np.random.default_rng(7)
    chain = np.repeat(np.arange(4), 500)
    for d in dims:
        cm = _ExactGaussian(d)
        alarms = sum(_flagged(check_draws(cm, rng.standard_normal((2000, d)), chain))
                     for _ in range(reps))
        rows.append({"dim": d, "reps": reps, "z*": critical_z(d), "false alarms": alarms / reps})
    return rows


def table(rows, exact) -> str:
    head = ["model", "dim", "runs", "false alarms", *MOVES, "pm.sample s/run"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    order = sorted(rows, key=lambda r: min(r[k] for k in MOVES))  # worst power first
    for r in order:
        cells = [r["model"], str(r["dim"]), str(r["runs"]), f"{r['false alarms']:.2f}",
                 *[f"{r[k]:.2f}" for k in MOVES], f"{r['pm.sample s/run']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| exact N(0, I) draws, dim | replicates | z* | false alarms |", "|---|---|---|---|"]
    lines += [f"| {r['dim']} | {r['reps']} | {r['z*']:.2f} | {r['false alarms']:.4f} |" for r in exact]
    return "\n".join(lines)


def _sampler_note() -> str:
    try:
        import nutpie  # noqa: F401

        return ": nutpie"
    except ImportError:
        return ": PyMC's NUTS"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--exact", type=int, default=2000)
    parser.add_argument("--large", type=int, default=0,
                        help="runs of each of two high-dimensional everyday models (hierarchical_normal_1000, "
                        "ar1_400; benchmarks/everyday_models.py), 10 coordinates moved per run")
    parser.add_argument("--write-doc", action="store_true")
    args = parser.parse_args()
    exact = exact_rates(args.exact)
    rows = []
    for name, model in _models().items():
        rows.append(mcmc_rates(name, model, args.reps))
        print(rows[-1], flush=True)
    if args.large:
        import sys
        from pathlib import Path

        sys.path.insert(0, str(Path(__file__).parent))
        from everyday_models import EVERYDAY

        for name in ("hierarchical_normal_1000", "ar1_400"):
            model = EVERYDAY[name].build()
            label = f"{name} (everyday_models; 10 coordinates moved)"
            rows.append(mcmc_rates(label, model, args.large, n_coordinates=10))
            print(rows[-1], flush=True)
    text = table(rows, exact)
    print(text)
    if args.write_doc:
        import sys
        from pathlib import Path

        sys.path.insert(0, str(Path(__file__).parent))
        from _common import cpu_name, update_doc

        body = (
            f"`python benchmarks/draws_check.py --reps {args.reps} --exact {args.exact} --large {args.large} "
            "--write-doc` "
            f"({cpu_name()}, PyMC {pm.__version__}, pm.sample's default sampler{_sampler_note()}). "
            "The test (pmz.runners.draws_check): for each continuous "
            "coordinate, the Stein identities E[d log p/dx_j] = 0 and E[(x_j - mean) d log p/dx_j] = -1, "
            "standardised, each flagged when |z| exceeds Bonferroni's bound for 2 d tests at family-wise level "
            "1e-3 and the effect exceeds 0.2. Rows: pm.sample draws (4 x 500) as they are (false alarms) and with "
            "one coordinate moved (power over runs x coordinates), worst power first; then exact draws.\n\n" + text
        )
        update_doc(SECTION, body)


if __name__ == "__main__":
    main()
