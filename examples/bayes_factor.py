"""Bayes factor between two PyMC regression models, with the evidence's uncertainty shown by ArviZ.

    python examples/bayes_factor.py [--out bayes_factor.png]

Data: a straight line with a few outliers. Model "normal" has Gaussian noise, model "student_t" heavy-tailed
Student-t noise; both have the same priors on intercept, slope and noise scale. pmz estimates each model's log
evidence with its default method (``"auto"``, which picks a route for the model and says which: with three
coordinates each, importance sampling from the posterior's peak, two independent halves as its check), and
``pmz.compare`` turns them into a table of log Bayes factors and posterior model probabilities with propagated
standard errors. Bridge sampling from the NUTS draws you would have anyway is shown as a cross-check, and the figure
shows the work histograms behind each default estimate (``pmz.plot_work``: they cross at -log Z) and the histogram
estimator's posterior over log Z.
"""

import argparse

import arviz as az
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

import pmz  # noqa: E402


def simulate(seed=3, n=40):
    rng = np.random.default_rng(seed)
    x = np.linspace(-2, 2, n)
    y = 1.0 + 0.8 * x + 0.4 * rng.normal(size=n)
    y[[5, 17, 31]] += np.array([4.0, -3.5, 5.0])  # outliers
    return x, y


def regression(x, y, noise):
    with pm.Model() as model:
        intercept = pm.Normal("intercept", 0.0, 2.0)
        slope = pm.Normal("slope", 0.0, 2.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        mean = intercept + slope * x
        if noise == "normal":
            pm.Normal("y", mean, sigma, observed=y)
        else:
            pm.StudentT("y", nu=3.0, mu=mean, sigma=sigma, observed=y)
    return model


def main(out="bayes_factor.png"):
    x, y = simulate()
    models = {"normal": regression(x, y, "normal"), "student_t": regression(x, y, "student_t")}

    # 1. log evidence of each model with the default method ("auto"), and the Bayes-factor table
    results = {name: pmz.evidence(model, random_seed=1, progressbar=False) for name, model in models.items()}
    for name, res in results.items():
        parts = "; ".join(f"{estimator} {row.log_z:.3f}" for estimator, row in res.estimates.iterrows())
        print(
            f"{name:10s} log Z = {res.log_z:9.3f} +/- {res.log_z_se:.3f}  ({res.method}, route "
            f"{res.evidence_stats.attrs['route']}; estimates on the way: {parts}; reliable {res.reliable})"
        )
    print()
    print(pmz.compare(results))
    bf = pmz.bayes_factor(results["student_t"], results["normal"])
    print(f"\nlog BF(student_t : normal) = {bf.log_bf:.2f} +/- {bf.log_bf_se:.2f}")

    # 2. cross-check: bridge sampling from the posterior draws a user already has
    print()
    for name, model in models.items():
        with model:
            idata = pm.sample(1000, tune=1000, chains=2, cores=1, random_seed=2, progressbar=False)
        bridge = pmz.evidence(model, method="bridge", posterior=idata, random_seed=1, progressbar=False)
        diff = bridge.log_z - results[name].log_z
        se = np.hypot(bridge.log_z_se, results[name].log_z_se)
        print(
            f"{name:10s} bridge sampling from pm.sample draws: {bridge.log_z:9.3f} +/- {bridge.log_z_se:.3f} "
            f"(auto - bridge = {-diff:+.3f} = {-diff / se:+.2f} se)"
        )

    # 3. the histogram estimator's posterior over log Z, and the work distributions
    hist = pmz.evidence(models["student_t"], method="histogram", random_seed=1, progressbar=False)
    print(f"\nhistogram estimator (student_t): posterior mean {hist.log_z:.3f}, sd {hist.log_z_se:.3f}")
    print(az.summary(hist, group="evidence", kind="stats", round_to="none").to_string())
    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
    pmz.plot_work(results["normal"], ax=axes[0])
    axes[0].set_title(f"normal noise: work ({results['normal'].run_attrs['route']} route)")
    pmz.plot_work(results["student_t"], ax=axes[1])
    axes[1].set_title(f"Student-t noise: work ({results['student_t'].run_attrs['route']} route)")
    pmz.plot_log_z(hist, ax=axes[2])  # pmz's own plot: the same on ArviZ 0.2x and ArviZ 1
    axes[2].set_title("Student-t: posterior over log Z (histogram method)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"\nfigure written to {out}")
    return results, hist


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bayes_factor.png", help="where to write the figure")
    main(parser.parse_args().out)
