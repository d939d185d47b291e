"""pmz's default on hierarchical GLMs with many group effects, against ``pm.sample`` (and ``pm.sample`` + bridge).

Models: :func:`pmz.systems.hierarchical_glm.hierarchical_poisson` (4 counts per group) and
:func:`~pmz.systems.hierarchical_glm.hierarchical_logistic` (6 trials per group), whose log Z is a quadrature exact to
1e-8 at any number of groups. For each model and seed, in this one process and interleaved (pmz, then the peer, then
the next seed), each call timed whole with ``time.perf_counter`` (compilation included, model construction
excluded):

* ``pmz``: ``pmz.evidence(model, random_seed=seed, progressbar=False)``;
* ``pm.sample``: ``pm.sample(random_seed=seed, progressbar=False)`` with PyMC's default chains and cores, then
  ``pmz.evidence(model, posterior=idata)`` (the bridge on those draws), both times reported.

``--coverage`` runs pmz's default alone for every seed of ``--seeds`` (e.g. ``0-19``) and reports the coverage of its
95% intervals and the largest |error| / se among the runs flagged reliable.

``--scaling`` runs pmz's default alone at each ``--sizes`` number of groups, each call in a fresh Python process, and
reports its time and peak resident memory (``ru_maxrss``, compile included).

``--fields`` runs pmz's default (``max_time=--max-time``, seed 0, a fresh process each) on the latent fields without
independent groups (:mod:`latent_field_models`: stochastic volatility with 1000 steps, a log-Gaussian Cox process on
a 30x30 grid, a latent GP classification with 500 points, a Poisson latent GP with 100 points), and beside each a
reference computed without pmz (a particle filter over a grid of the step size; importance sampling from the Laplace
Gaussian on a grid of the hyperparameters). The Cox process's CAR prior is compared with the prior normalised
(``log_z_normalised_prior``), the reference's convention.

Usage::

    python benchmarks/latent_fields.py --groups 1000 --seeds 0,1
    python benchmarks/latent_fields.py --coverage --groups 1000 --seeds 0-19
    python benchmarks/latent_fields.py --scaling --sizes 100,1000,10000,100000 --write-doc
    python benchmarks/latent_fields.py --fields volatility,cox,gp_classification,poisson_gp --max-time 1200
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from pathlib import Path

warnings.filterwarnings("ignore")

from _common import print_fresh_row, run_in_fresh_process  # noqa: E402

DOC = Path(__file__).resolve().parents[1] / "docs" / "latent_fields.md"
BUILDERS = {"poisson": "hierarchical_poisson", "logistic": "hierarchical_logistic"}


def _system(kind, groups, seed):
    import pmz.systems.hierarchical_glm as glm

    return getattr(glm, BUILDERS[kind])(n_groups=groups, seed=seed)


def _pmz(kind, groups, seed) -> dict:
    import pmz

    system = _system(kind, groups, seed)
    t0 = time.perf_counter()
    res = pmz.evidence(system.model, random_seed=seed, progressbar=False)
    wall = time.perf_counter() - t0
    return {"log_z": float(res.log_z), "se": float(res.log_z_se), "truth": system.log_z, "wall": wall,
            "reliable": bool(res.reliable), "route": res.run_attrs.get("route")}


def _peer(kind, groups, seed) -> dict:
    import pymc as pm

    import pmz

    system = _system(kind, groups, seed)
    t0 = time.perf_counter()
    with system.model:
        idata = pm.sample(random_seed=seed, progressbar=False)
    t_sample = time.perf_counter() - t0
    res = pmz.evidence(system.model, posterior=idata, random_seed=seed, progressbar=False)
    wall = time.perf_counter() - t0
    return {"log_z": float(res.log_z), "se": float(res.log_z_se), "truth": system.log_z, "wall": wall,
            "wall_sample": t_sample, "reliable": bool(res.reliable)}


def compare(kinds, groups, seeds) -> list:
    rows = []
    for kind in kinds:
        for seed in seeds:
            mine = _pmz(kind, groups, seed)
            peer = _peer(kind, groups, seed)
            rows.append((kind, seed, mine, peer))
            z = (mine["log_z"] - mine["truth"]) / max(mine["se"], 1e-12)
            print(f"{kind:9s} G={groups} seed={seed}: pmz {mine['wall']:6.1f} s  log Z {mine['log_z']:.4f} +- "
                  f"{mine['se']:.4f} (z {z:+.2f}, {mine['route']}, reliable {mine['reliable']}) | pm.sample "
                  f"{peer['wall_sample']:6.1f} s, + bridge {peer['wall']:6.1f} s  log Z {peer['log_z']:.4f} +- "
                  f"{peer['se']:.4f} | truth {mine['truth']:.4f} | ratio pmz / pm.sample "
                  f"{mine['wall'] / peer['wall_sample']:.2f}", flush=True)
    return rows


def coverage(kinds, groups, seeds) -> list:
    lines = ["| model | groups | runs | covered (95%) | reliable | max abs z (reliable) | mean se | mean time (s) |",
             "|---|---|---|---|---|---|---|---|"]
    for kind in kinds:
        rows = [_pmz(kind, groups, seed) for seed in seeds]
        z = [(r["log_z"] - r["truth"]) / max(r["se"], 1e-12) for r in rows]
        covered = sum(abs(v) < 1.96 for v in z)
        reliable = [abs(v) for v, r in zip(z, rows) if r["reliable"]]
        lines.append(f"| {kind} | {groups} | {len(rows)} | {covered}/{len(rows)} | {len(reliable)}/{len(rows)} | "
                     f"{max(reliable, default=float('nan')):.2f} | {sum(r['se'] for r in rows) / len(rows):.4f} | "
                     f"{sum(r['wall'] for r in rows) / len(rows):.1f} |")
        print(lines[-1], flush=True)
    return lines


def _seeds(text):
    if "-" in text:
        first, last = text.split("-")
        return list(range(int(first), int(last) + 1))
    return [int(s) for s in text.split(",")]


def scaling(kinds, sizes) -> list:
    rows = []
    for kind in kinds:
        for size in sizes:
            row, error = run_in_fresh_process(__file__, ["--one", kind, size])
            if row is None:
                print(f"{kind:9s} G={size:7d}: failed\n{error}", flush=True)
                continue
            rows.append(row)
            print(f"{kind:9s} G={size:7d}: {row['wall']:7.1f} s  {row['max_rss_mb']:7.0f} MB  log Z "
                  f"{row['log_z']:.4f} +- {row['se']:.4f}  truth {row['truth']:.4f}  (z "
                  f"{(row['log_z'] - row['truth']) / max(row['se'], 1e-12):+.2f}, {row['route']})", flush=True)
    return rows


def _one(kind, size):
    row = _pmz(kind, int(size), 0)
    row["groups"], row["kind"] = int(size), kind
    print_fresh_row(row)


def _one_field(name, max_time):
    import pmz
    from latent_field_models import FIELDS

    model, what = FIELDS[name]()
    t0 = time.perf_counter()
    res = pmz.evidence(model, random_seed=0, progressbar=False, max_time=float(max_time))
    wall = time.perf_counter() - t0
    normalised = res.evidence_stats.get("log_z_normalised_prior") if hasattr(res, "evidence_stats") else None
    print_fresh_row({"name": name, "what": what, "log_z": float(res.log_z), "se": float(res.log_z_se),
                     "log_z_normalised": None if normalised is None else float(normalised),
                     "reliable": bool(res.reliable), "route": res.run_attrs.get("route"), "wall": wall,
                     "why": str(res.run_attrs.get("reliability_reason", ""))[:300]})


def _reference(name):
    import latent_field_models as fields

    return {"volatility": fields.volatility_reference, "cox": fields.cox_reference,
            "gp_classification": lambda: fields.gp_reference("bernoulli", 500, n_grid=24, n_draws=2000),
            "poisson_gp": lambda: fields.gp_reference("poisson", 100)}[name]()


def latent_fields(names, max_time, with_reference=True) -> list:
    lines = ["| model | pmz log Z | se | reliable | route | time (s) | memory (MB) | reference | its se | z |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        row, error = run_in_fresh_process(__file__, ["--one-field", name, max_time])
        if row is None:
            print(f"{name}: failed\n{error}", flush=True)
            continue
        value = row["log_z"] if row["log_z_normalised"] is None else row["log_z_normalised"]
        reference, ref_se = _reference(name) if with_reference else (float("nan"), float("nan"))
        z = (value - reference) / np.hypot(row["se"], ref_se)
        lines.append(f"| {row['what']} | {value:.3f} | {row['se']:.3f} | {row['reliable']} | {row['route']} | "
                     f"{row['wall']:.0f} | {row['max_rss_mb']:.0f} | {reference:.3f} | {ref_se:.3f} | {z:+.2f} |")
        print(lines[-1] + (f"  ({row['why']})" if row["why"] else ""), flush=True)
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kinds", default="poisson,logistic")
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--scaling", action="store_true")
    parser.add_argument("--coverage", action="store_true")
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--write-doc", action="store_true")
    parser.add_argument("--fields", default="")
    parser.add_argument("--max-time", type=float, default=1200.0)
    parser.add_argument("--no-reference", action="store_true")
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--one-field", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        return _one(*args.one)
    if args.one_field:
        return _one_field(*args.one_field)
    kinds = args.kinds.split(",")
    if args.fields:
        lines = latent_fields(args.fields.split(","), args.max_time, not args.no_reference)
    elif args.coverage:
        lines = coverage(kinds, args.groups, _seeds(args.seeds))
    elif args.scaling:
        rows = scaling(kinds, [int(s) for s in args.sizes.split(",")])
        lines = ["| model | groups | time (s) | peak memory (MB) | log Z | se | truth |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {r['kind']} | {r['groups']} | {r['wall']:.1f} | {r['max_rss_mb']:.0f} | {r['log_z']:.4f} | "
                  f"{r['se']:.4f} | {r['truth']:.4f} |" for r in rows]
    else:
        rows = compare(kinds, args.groups, _seeds(args.seeds))
        lines = ["| model | seed | pmz (s) | pm.sample (s) | + bridge (s) | pmz / pm.sample | pmz error / se |",
                 "|---|---|---|---|---|---|---|"]
        lines += [f"| {k} | {s} | {m['wall']:.1f} | {p['wall_sample']:.1f} | {p['wall']:.1f} | "
                  f"{m['wall'] / p['wall_sample']:.2f} | {(m['log_z'] - m['truth']) / max(m['se'], 1e-12):+.2f} |"
                  for k, s, m, p in rows]
    print("\n".join(lines))
    if args.write_doc:
        with open(DOC, "a") as handle:
            handle.write("\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
