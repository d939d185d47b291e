"""Learning a 64-32-16 deep Boltzmann machine on the 8 x 8 binary digits with SAP, Fast PCD and CAST: the analogue of
Table 1 of Salakhutdinov, "Learning deep Boltzmann machines using adaptive MCMC" (ICML 2010), at laptop scale.

    python examples/learn_dbm.py --small       # CI size: seconds, prints the table, writes nothing
    python examples/learn_dbm.py               # full size (~25 min): also writes docs/learning.md's results
                                               # section and docs/figures/learn_dbm.png

All three methods start from the same initial weights and see the same minibatches (one ``random_seed``, separate
streams for weights, data order and chains) for the same number of parameter updates; SAP and FPCD use 100
persistent chains, CAST 50 slow + 50 fast chains (the same number of Gibbs sweeps per update).

Every ``n_updates / n_checkpoints`` updates the callback keeps a copy of the DBM; after training each copy gets

* ``log Z`` by forward AIS from the base-rate model (``pmz.evidence(pmz.boltzmann.dbm_energy_model(dbm, p), "ais")``:
  states ``(v, h2)``, ``h1`` summed out, heat-bath kernel) with its se;
* the mean-field lower bound on the average log-probability of the training and test images,
  ``mean_v [E_q(-E) + H(q)] - log Z`` (exact given log Z: its se is log Z's);

and the final DBMs also the true average log-probability of a subset of test images, ``log p(v) = log Z(v) - log
Z``, with ``log Z(v) = log sum_{h1,h2} exp(-E(v, h1, h2))`` exact (:meth:`pmz.boltzmann.DBM.log_z_given_v`: given
``v`` the hidden layers form an RBM; enumerate the 2^16 states of ``h2`` and sum ``h1`` out analytically), so the
gap ``log p(v) - bound`` is exact and only log Z carries an error. The final log Z is checked by a second AIS run in
the joint space (layer Gibbs, every layer sampled).

Controls: SAP with 50 chains (CAST's number of slow chains) and CAST with the exact ``swap="exchange"`` rule.

Mixing: from each final DBM, 100 plain Gibbs chains and 50 CAST slow chains (its fast chains tempering on [0.9, 1])
run from training images with the parameters frozen; every 10 steps each chain's visible state is classified by the
nearest class-mean training image, and we count how often the class changes.

Replicates: two more seeds train every method again (final log Z and bounds only): the spread between seeds says
which differences between methods are more than one run's luck.
"""

from __future__ import annotations

import argparse
import re
import time
import warnings
from pathlib import Path

import numpy as np

import pmz
from pmz.boltzmann import dbm_energy_model, load_digits_binary
from pmz.boltzmann.learn import CASTChains, PersistentGibbs, bipartite_from_dbm, fit_dbm

ROOT = Path(__file__).resolve().parents[1]
METHODS = {
    "SAP": dict(method="pcd", n_chains=100),
    "FPCD": dict(method="fpcd", n_chains=100),
    "CAST": dict(method="cast", n_chains=50),
    # controls: SAP with CAST's number of slow chains; CAST with the exact exchange rule (pmz.runners.cast)
    "SAP, 50 chains": dict(method="pcd", n_chains=50),
    "CAST, exchange": dict(method="cast", n_chains=50, swap="exchange"),
}
COMMON = dict(batch_size=100, learning_rate=0.1, learning_rate_schedule="inverse", momentum=0.9, weight_decay=1e-4,
              n_mean_field=10)
FULL = dict(n_epochs=1500, n_checkpoints=10, ais_temps=1000, ais_paths=100, final_temps=4000, final_paths=200,
            joint_temps=20000, n_subset=100, mixing_steps=3000, seeds=(2010, 2011, 2012))
SMALL = dict(n_epochs=15, n_checkpoints=2, ais_temps=100, ais_paths=16, final_temps=200, final_paths=16,
             joint_temps=400, n_subset=8, mixing_steps=100, seeds=(2010,))
SIZES = (32, 16)


def digits():
    """Training and test images (``pmz.boltzmann.digits_split``) with their labels."""
    images, labels = load_digits_binary()
    test = np.arange(images.shape[0]) % 5 == 0
    return images[~test], labels[~test], images[test], labels[test]


def log_z_ais(dbm, base_means, n_temps, n_paths, seed, space="even"):
    res = pmz.evidence(dbm_energy_model(dbm, base_means, space=space), method="ais", n_temps=n_temps, n_paths=n_paths,
                       random_seed=seed, progressbar=False)
    return float(res.log_z), float(res.log_z_se)


def bound_parts(dbm, V):
    """``E_q[-E] + H(q)`` per image (the bound without log Z), mean field to convergence (50 steps, tol 1e-7)."""
    return dbm.lower_bound(V, 0.0, n_steps=50)


def train_all(train, settings, seed, progressbar, checkpoints=True):
    """Every method from one seed; the callback keeps a copy of the DBM every tenth of the run."""
    runs = {}
    n_updates = settings["n_epochs"] * (train.shape[0] // COMMON["batch_size"])
    every = max(1, n_updates // settings["n_checkpoints"])
    for name, method in METHODS.items():
        run = fit_dbm(train, *SIZES, **COMMON, **method, n_epochs=settings["n_epochs"], random_seed=seed,
                      callback_every=every, callback=(lambda update, dbm: dbm) if checkpoints else None,
                      progressbar=progressbar)
        runs[name] = (run, run.callback_values)
        print(f"seed {seed}, {name}: {run.n_updates} updates in {run.seconds:.1f} s; sampler {summary(run.sampler)}",
              flush=True)
    return runs


def summary(diagnostics):
    out = []
    for key, value in diagnostics.items():
        if key == "swap_fraction":
            out.append(f"swaps at {value:.0%} of swap steps")
        elif key == "level_visits":
            out.append(f"level visits {value.min():.3f}..{value.max():.3f}")
        elif key == "log_g":
            out.append(f"log g_K - log g_0 = {value[-1]:.2f}")
        elif key == "fast_weight_rms":
            out.append(f"fast-weight rms {value:.3f}")
    return ", ".join(out) or "-"


def curves(runs, train, test, base_means, settings):
    """Per method: rows (update, log Z, se, train bound, test bound)."""
    table = {}
    for name, (run, checkpoints) in runs.items():
        rows = []
        for i, (update, dbm) in enumerate(checkpoints):
            log_z, se = log_z_ais(dbm, base_means, settings["ais_temps"], settings["ais_paths"], seed=1000 + i)
            rows.append((update, log_z, se, float(bound_parts(dbm, train).mean()) - log_z,
                         float(bound_parts(dbm, test).mean()) - log_z))
        table[name] = rows
        print(f"{name}: " + "; ".join(f"{u}: log Z {z:.2f}+-{s:.2f}, test bound {b:.2f}" for u, z, s, _, b in rows),
              flush=True)
    return table


def final_table(runs, train, test, base_means, settings):
    rows = {}
    subset = test[: settings["n_subset"]]
    for name, (run, _) in runs.items():
        dbm = run.model
        log_z, se = log_z_ais(dbm, base_means, settings["final_temps"], settings["final_paths"], seed=7)
        log_z_joint, se_joint = log_z_ais(dbm, base_means, settings["joint_temps"], settings["final_paths"], seed=8,
                                          space="joint")
        parts_train, parts_test = bound_parts(dbm, train), bound_parts(dbm, test)
        t0 = time.perf_counter()
        log_zv = dbm.log_z_given_v(subset)
        seconds_zv = time.perf_counter() - t0
        parts_subset = parts_test[: settings["n_subset"]]
        rows[name] = dict(
            log_z=log_z, log_z_se=se, log_z_joint=log_z_joint, log_z_joint_se=se_joint,
            bound_train=float(parts_train.mean()) - log_z, bound_test=float(parts_test.mean()) - log_z,
            log_p_subset=float(log_zv.mean()) - log_z, bound_subset=float(parts_subset.mean()) - log_z,
            gap=float(np.mean(log_zv - parts_subset)), gap_min=float(np.min(log_zv - parts_subset)),
            seconds=run.seconds, seconds_zv=seconds_zv,
        )
        r = rows[name]
        print(f"{name}: log Z {log_z:.3f} +- {se:.3f} (joint space {log_z_joint:.3f} +- {se_joint:.3f}); bound train "
              f"{r['bound_train']:.3f}, test {r['bound_test']:.3f}; test subset ({subset.shape[0]} images): log p "
              f"{r['log_p_subset']:.3f}, bound {r['bound_subset']:.3f}, gap {r['gap']:.3f}; "
              f"training {run.seconds:.1f} s",
              flush=True)
    return rows


def class_switches(dbm, train, labels, n_steps, seed):
    """Plain Gibbs (100 chains) and CAST (50 slow chains) at frozen parameters: class changes per chain per 1000
    steps, classes visited per chain, with chains started at training images."""
    params = bipartite_from_dbm(dbm)
    nv, n2 = dbm.sizes[0], dbm.sizes[2]
    means = np.stack([train[labels == c].mean(axis=0) for c in range(10)])
    rng = np.random.default_rng(seed)
    start = np.concatenate([train[rng.permutation(train.shape[0])[:100]], np.zeros((100, n2))], axis=1)
    out = {}
    for name, sampler, x0 in (("Gibbs", PersistentGibbs(1), start), ("CAST", CASTChains(1), start[:50])):
        state = sampler.init(rng, params, x0)
        classes = []
        for t in range(n_steps):
            state, X = sampler.sample(rng, state, params, None)
            if (t + 1) % 10 == 0:
                V = X[:, :nv]
                d2 = (V**2).sum(1)[:, None] - 2 * V @ means.T + (means**2).sum(1)[None]
                classes.append(np.argmin(d2, axis=1))
        classes = np.array(classes)  # (n_steps / 10, n_chains)
        switches = (np.diff(classes, axis=0) != 0).sum(axis=0)
        visited = np.array([np.unique(classes[:, j]).size for j in range(classes.shape[1])])
        out[name] = (1000.0 * switches.mean() / n_steps, visited.mean(), sampler.diagnostics(state))
    return out


def mixing_table(runs, train, labels, n_steps):
    """:func:`class_switches` at every method's final DBM."""
    out = {}
    for name, (run, _) in runs.items():
        out[name] = class_switches(run.model, train, labels, n_steps, seed=3)
        print(f"mixing at the {name} DBM: " + "; ".join(
            f"{sampler} {rate:.1f} class changes per chain per 1000 steps, {visited:.1f} classes visited"
            for sampler, (rate, visited, _) in out[name].items()), flush=True)
    return out


def replicate(train, test, base_means, settings, seed, progressbar):
    """Another seed: train every method, final log Z by AIS and the bounds (no checkpoints)."""
    runs = train_all(train, settings, seed, progressbar, checkpoints=False)
    rows = {}
    for name, (run, _) in runs.items():
        log_z, se = log_z_ais(run.model, base_means, settings["final_temps"], settings["final_paths"], seed=7)
        rows[name] = dict(log_z=log_z, log_z_se=se, bound_train=float(bound_parts(run.model, train).mean()) - log_z,
                          bound_test=float(bound_parts(run.model, test).mean()) - log_z, seconds=run.seconds)
        print(f"seed {seed}, {name}: log Z {log_z:.3f} +- {se:.3f}, bound test {rows[name]['bound_test']:.3f}",
              flush=True)
    return rows


def plot(table, final, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for name, rows in table.items():
        u, z, s, _, b = (np.array(c) for c in zip(*rows))
        axes[0].errorbar(u, b, yerr=2 * s, marker="o", ms=3, capsize=2, label=name)
        axes[1].errorbar(u, z, yerr=2 * s, marker="o", ms=3, capsize=2, label=name)
    axes[0].set(xlabel="parameter updates", ylabel="nats per image",
                title="mean-field lower bound on mean test log p(v)")
    axes[1].set(xlabel="parameter updates", ylabel="log Z (AIS, +-2 se)", title="log partition function")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def markdown(table, final, mixing, replicates, settings, n_updates):
    lines = [
        "<!-- results start: written by examples/learn_dbm.py -->",
        f"A 64-32-16 DBM, {n_updates} updates of minibatches of {COMMON['batch_size']} per method "
        f"(lr_t = {COMMON['learning_rate']} / (1 + t / tau), tau = {n_updates // 10}; momentum "
        f"{COMMON['momentum']}; weight decay {COMMON['weight_decay']}; {COMMON['n_mean_field']} mean-field steps; "
        f"seed {settings['seeds'][0]}). log Z by forward AIS ({settings['final_temps']} temperatures, "
        f"{settings['final_paths']} paths; checkpoints {settings['ais_temps']} and {settings['ais_paths']}), checked "
        f"by AIS in the joint space ({settings['joint_temps']} temperatures). Bounds and log-probabilities are in "
        "nats per image; their se is log Z's (the images are fixed). Log p on the first "
        f"{settings['n_subset']} test images with log Z(v) exact.",
        "",
        "| method | lower bound, train | lower bound, test | log Z (AIS) | log Z (joint-space AIS) | "
        f"log p, {settings['n_subset']} test images | bound, same images | gap | training time |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, r in final.items():
        se = r["log_z_se"]
        lines.append(
            f"| {name} | {r['bound_train']:.2f} +- {se:.2f} | {r['bound_test']:.2f} +- {se:.2f} | "
            f"{r['log_z']:.2f} +- {se:.2f} | {r['log_z_joint']:.2f} +- {r['log_z_joint_se']:.2f} | "
            f"{r['log_p_subset']:.2f} +- {se:.2f} | {r['bound_subset']:.2f} +- {se:.2f} | {r['gap']:.3f} | "
            f"{r['seconds']:.0f} s |"
        )
    lines += ["", "Learning curves (lower bound on the mean test log-probability; log Z +- se at each checkpoint):", "",
              "| updates | " + " | ".join(f"{n} bound | {n} log Z" for n in table) + " |",
              "| ---: | " + " | ".join("---: | ---:" for _ in table) + " |"]
    for i in range(len(next(iter(table.values())))):
        cells = []
        for rows in table.values():
            u, z, s, _, b = rows[i]
            cells.append(f"{b:.2f} | {z:.2f} +- {s:.2f}")
        lines.append(f"| {table[next(iter(table))][i][0]} | " + " | ".join(cells) + " |")
    lines += ["", "![learning curves](figures/learn_dbm.png)", "",
              f"Mixing at each final DBM ({settings['mixing_steps']} steps, parameters frozen; 100 plain Gibbs chains, "
              "50 CAST pairs on [0.9, 1] swapping every 50 steps; class = nearest class-mean training image, read "
              "every 10 steps):", "",
              "| DBM learned by | Gibbs: class changes per chain per 1000 steps | Gibbs: classes visited per chain | "
              "CAST slow chains: class changes | CAST: classes visited |",
              "| --- | ---: | ---: | ---: | ---: |"]
    for name, samplers in mixing.items():
        (g_rate, g_visited, _), (c_rate, c_visited, _) = samplers["Gibbs"], samplers["CAST"]
        lines.append(f"| {name} | {g_rate:.1f} | {g_visited:.1f} | {c_rate:.1f} | {c_visited:.1f} |")
    if len(replicates) > 1:
        seeds = list(replicates)
        lines += ["", "Replicates: lower bound on the mean test log-probability (log Z by AIS, "
                  f"{settings['final_temps']} temperatures, {settings['final_paths']} paths) of the final DBM, per "
                  "seed; mean and standard deviation over the seeds:", "",
                  "| method | " + " | ".join(f"seed {x}" for x in seeds) + " | mean | sd | mean log Z |",
                  "| --- | " + " | ".join("---:" for _ in seeds) + " | ---: | ---: | ---: |"]
        for name in METHODS:
            b = np.array([replicates[x][name]["bound_test"] for x in seeds])
            z = np.array([replicates[x][name]["log_z"] for x in seeds])
            lines.append(f"| {name} | " + " | ".join(f"{v:.2f}" for v in b) +
                         f" | {b.mean():.2f} | {b.std(ddof=1) if b.size > 1 else 0.0:.2f} | {z.mean():.2f} |")
    lines.append("<!-- results end -->")
    return "\n".join(lines)


def write_doc(text, path=ROOT / "docs" / "learning.md"):
    doc = path.read_text()
    new = re.sub(r"<!-- results start.*?<!-- results end -->", lambda _: text, doc, flags=re.S)
    if new == doc and text not in doc:
        raise RuntimeError(f"{path} has no results markers")
    path.write_text(new)
    print(f"wrote {path}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="CI size; writes nothing")
    parser.add_argument("--progressbar", action="store_true")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    settings = SMALL if args.small else FULL
    train, train_labels, test, _ = digits()
    base_means = np.clip(train.mean(axis=0), 1e-3, 1 - 1e-3)
    seed = settings["seeds"][0]
    runs = train_all(train, settings, seed, args.progressbar)
    table = curves(runs, train, test, base_means, settings)
    final = final_table(runs, train, test, base_means, settings)
    mixing = mixing_table(runs, train, train_labels, settings["mixing_steps"])
    replicates = {seed: final}
    for other in settings["seeds"][1:]:
        replicates[other] = replicate(train, test, base_means, settings, other, args.progressbar)
    n_updates = runs["SAP"][0].n_updates
    text = markdown(table, final, mixing, replicates, settings, n_updates)
    print(text)
    if not args.small:
        plot(table, final, ROOT / "docs" / "figures" / "learn_dbm.png")
        write_doc(text)
    return table, final, mixing


if __name__ == "__main__":
    main()
