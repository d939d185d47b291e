"""Bias and spread of the nonequilibrium log Z estimators on Habeck's Gaussian toy (NIPS 2017, section 4).

Reproduces, at laptop scale, the toy of Habeck, "Model evidence from nonequilibrium simulations" (NIPS 2017):
anneal from ``N(20, 10^2)`` to ``N(0, 1)`` through ``K`` Gaussians (``mu_k``, ``s_k`` linear in ``k / K``, pmz's
choice of path) with autoregressive kernels of lag ``tau = 0.5``; the exact answer is ``log Z = -log 10``. For each
``K`` it runs ``repeats`` independent toys with ``M = 100`` forward and ``100`` reverse paths and reports, for
every estimator, the mean error (bias) and the standard deviation (spread) of the estimates over the repeats, as in
the K sweep of the paper's Figure 2, plus how often BAR's 95% interval covers the truth. The Gibbs posterior of the
histogram estimator is run at ``K = 10`` only (it is the slow one).

Run from the repository root::

    python examples/neq_gaussian_toy.py               # 1000 repeats, K = 1 ... 200 (about 3 minutes)
    python examples/neq_gaussian_toy.py --quick       # 100 repeats, K in (2, 10, 50), a few seconds
    python examples/neq_gaussian_toy.py --write-doc   # also write the table into docs/neq_gaussian_toy.md
                                                      # and the figure docs/figures/neq_gaussian_toy.png

Every repeat draws from its own generator ``default_rng((seed, K, repeat))``, so a result does not depend on
which other K values or how many repeats were run.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from pmz.estimators import bar, cumulant, histogram, histogram_posterior, jarzynski, raise_estimate, stochastic_bounds
from pmz.systems import GAUSSIAN_TOY_LOG_Z, gaussian_toy_works

TAU = 0.5
N_PATHS = 100
SEED = 2017
K_VALUES = (1, 2, 5, 10, 20, 50, 100, 200)
QUICK_K_VALUES = (2, 10, 50)
POSTERIOR_K = 10
POSTERIOR_DRAWS, QUICK_POSTERIOR_DRAWS, POSTERIOR_BURN = 500, 100, 100
ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "neq_gaussian_toy.md"
FIGURE = ROOT / "docs" / "figures" / "neq_gaussian_toy.png"
TABLE_START, TABLE_END = "<!-- table:start -->", "<!-- table:end -->"

ESTIMATORS = {
    "ais": "AIS",
    "raise": "RAISE",
    "lower": "lower bound",
    "upper": "upper bound",
    "cumulant_forward": "cumulant fwd",
    "cumulant_reverse": "cumulant rev",
    "cumulant_combined": "cumulant comb",
    "bar": "BAR",
    "histogram_ml": "histogram ML",
    "histogram_posterior": "histogram post.",
}


def estimate_all(forward, reverse, rng, posterior_draws: int = 0) -> dict[str, float]:
    """Every estimator's log Z for one toy, plus BAR's se and (with ``posterior_draws``) the posterior's 95% interval."""
    bounds = stochastic_bounds(forward, reverse).diagnostics
    bar_est = bar(forward, reverse, n_bootstrap=0)
    out = {
        "ais": jarzynski(forward, n_bootstrap=0).log_z,
        "raise": raise_estimate(reverse, n_bootstrap=0).log_z,
        "lower": bounds.lower,
        "upper": bounds.upper,
        "cumulant_forward": cumulant(forward, n_bootstrap=0).log_z,
        "cumulant_reverse": cumulant(reverse=reverse, n_bootstrap=0).log_z,
        "cumulant_combined": cumulant(forward, reverse, n_bootstrap=0).log_z,
        "bar": bar_est.log_z,
        "bar_se": bar_est.log_z_se,
        "histogram_ml": histogram(forward, reverse).log_z,
    }
    if posterior_draws:
        post = histogram_posterior(forward, reverse, n_draws=posterior_draws, n_burn=POSTERIOR_BURN, rng=rng)
        out["histogram_posterior"] = post.log_z
        out["posterior_lo"], out["posterior_hi"] = np.quantile(post.log_z_draws, [0.025, 0.975])
    return out


def run_toys(K: int, repeats: int, posterior_draws: int = POSTERIOR_DRAWS, seed: int = SEED) -> dict[str, np.ndarray]:
    """Estimates from ``repeats`` independent toys with ``K`` steps, one array per quantity."""
    posterior_draws = posterior_draws if K == POSTERIOR_K else 0
    rows = []
    for i in range(repeats):
        rng = np.random.default_rng((seed, K, i))
        forward, reverse, _ = gaussian_toy_works(N_PATHS, N_PATHS, K=K, tau=TAU, rng=rng)
        rows.append(estimate_all(forward, reverse, rng, posterior_draws))
    return {key: np.array([row[key] for row in rows]) for key in rows[0]}


def summarise(est: dict[str, np.ndarray], truth: float = GAUSSIAN_TOY_LOG_Z) -> dict:
    """Bias and spread per estimator; coverage of BAR's (and the posterior's) 95% interval."""
    summary = {
        name: (float(np.mean(est[name] - truth)), float(np.std(est[name], ddof=1)))
        for name in ESTIMATORS
        if name in est
    }
    summary["bar_coverage"] = float(np.mean(np.abs(est["bar"] - truth) <= 1.96 * est["bar_se"]))
    summary["bar_mean_se"] = float(np.mean(est["bar_se"]))
    if "posterior_lo" in est:
        summary["posterior_coverage"] = float(np.mean((est["posterior_lo"] <= truth) & (truth <= est["posterior_hi"])))
    return summary


def format_cell(bias_sd) -> str:
    bias, sd = bias_sd
    fmt = "{:.3g}" if max(abs(bias), sd) >= 10 else "{:.2f}"
    return f"{fmt.format(bias)} ± {fmt.format(sd)}"


def format_table(results: dict[int, dict], repeats: int, posterior_draws: int = POSTERIOR_DRAWS) -> str:
    """Markdown table: one row per K, ``bias ± spread`` per estimator, and BAR's coverage."""
    header = ["K", *ESTIMATORS.values(), "BAR mean se", "BAR 95% cover"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for K, s in results.items():
        cells = [format_cell(s[name]) if name in s else "–" for name in ESTIMATORS]
        lines.append(f"| {K} | " + " | ".join(cells) + f" | {s['bar_mean_se']:.2f} | {s['bar_coverage']:.3f} |")
    note = (
        f"\nbias ± spread of log Z over {repeats} repeats (exact {GAUSSIAN_TOY_LOG_Z:.4f}); tau = {TAU}, "
        f"M = {N_PATHS} forward and {N_PATHS} reverse paths; histogram posterior at K = {POSTERIOR_K} only "
        f"({posterior_draws} Gibbs draws after {POSTERIOR_BURN} burn-in sweeps)."
    )
    cover = [f"K = {K}: {s['posterior_coverage']:.3f}" for K, s in results.items() if "posterior_coverage" in s]
    if cover:
        note += " Coverage of the posterior's central 95% interval: " + ", ".join(cover) + "."
    return "\n".join(lines) + "\n" + note + "\n"


def plot(results: dict[int, dict], path: Path) -> None:
    """Bias ± spread against K (log scale): all estimators on a symlog axis, and a linear zoom near 0."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = dict(zip(ESTIMATORS, plt.get_cmap("tab10").colors))
    panels = {
        "all estimators (symlog y axis)": [n for n in ESTIMATORS if not n.startswith("histogram")],
        "zoom": ["ais", "raise", "cumulant_combined", "bar", "histogram_posterior"],
    }
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, (title, names) in zip(axes, panels.items()):
        for j, name in enumerate(names):
            Ks = np.array([K for K in results if name in results[K]])
            bias, sd = np.array([results[K][name] for K in Ks]).T
            x = Ks * 1.05 ** (j - len(names) / 2)  # small horizontal offsets so that the error bars do not overlap
            ax.errorbar(x, bias, yerr=sd, marker="o", ms=3, capsize=2, color=colours[name], label=ESTIMATORS[name])
        ax.axhline(0.0, color="k", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("K (annealing steps)")
        ax.set_ylabel("error of log Z (mean ± sd over repeats)")
        ax.set_title(title)
    axes[0].set_yscale("symlog", linthresh=1.0)
    axes[1].set_ylim(-3, 3)
    axes[0].legend(fontsize=7, ncol=2)
    axes[1].legend(fontsize=7)
    fig.suptitle(f"Gaussian toy, tau = {TAU}, M = {N_PATHS} paths each way (histogram ML = BAR, not drawn)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_table_into_doc(table: str, path: Path = DOC) -> None:
    """Replace the text between the table markers of the doc (or create a stub doc holding only the table)."""
    block = f"{TABLE_START}\n{table}{TABLE_END}"
    text = path.read_text() if path.exists() else f"# Gaussian toy\n\n{TABLE_START}\n{TABLE_END}\n"
    start, end = text.index(TABLE_START), text.index(TABLE_END) + len(TABLE_END)
    path.write_text(text[:start] + block + text[end:])


def main(argv=None) -> dict[int, dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=None, help="independent toys per K (default 1000)")
    parser.add_argument("--quick", action="store_true", help="100 repeats, 3 K values, 100 posterior draws")
    parser.add_argument("--write-doc", action="store_true", help="write the table and figure into docs/")
    args = parser.parse_args(argv)
    repeats = args.repeats or (100 if args.quick else 1000)
    K_values = QUICK_K_VALUES if args.quick else K_VALUES
    t0 = time.perf_counter()
    posterior_draws = QUICK_POSTERIOR_DRAWS if args.quick else POSTERIOR_DRAWS
    results = {K: summarise(run_toys(K, repeats, posterior_draws)) for K in K_values}
    table = format_table(results, repeats, posterior_draws)
    print(table)
    print(f"({time.perf_counter() - t0:.1f} s)")
    if args.write_doc:
        write_table_into_doc(table)
        plot(results, FIGURE)
        print(f"wrote {DOC.relative_to(ROOT)} and {FIGURE.relative_to(ROOT)}")
    return results


if __name__ == "__main__":
    main()
