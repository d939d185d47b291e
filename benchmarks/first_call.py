"""A model's first call: pmz's default against ``pm.sample()`` on model structures neither has compiled before.

The everyday benchmark (``everyday.py``) times calls on models whose compiled functions are already in the caches on
disk (PyTensor's for pmz, Numba's for ``pm.sample``'s default sampler), as every call but a model's first is. Here
each model of ``everyday_wide_models.SIZED`` is built at its default size plus an offset (more rows or points per
group: a new shape, so both tools compile afresh) and run by ``pmz.evidence(model, random_seed=0)`` and
``pm.sample(random_seed=0)`` (PyMC's default chains, sampler and cores), one after the other in this process, each
timed whole (compile included, model construction excluded). Use offsets never used before on the machine; the
default takes them from the clock.

    python benchmarks/first_call.py --offsets 7,9
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pymc as pm  # noqa: E402
from everyday_wide_models import SIZED  # noqa: E402

import pmz  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(SIZED))
    parser.add_argument("--offsets", help="comma-separated size offsets (default: two from the clock)")
    args = parser.parse_args(argv)
    stamp = int(time.time()) % 500
    offsets = [int(o) for o in args.offsets.split(",")] if args.offsets else [1 + stamp, 501 + stamp]
    print("| model | size | pmz (s) | its compile (s) | route | pm.sample (s) | ratio |")
    print("|---|---:|---:|---:|---|---:|---:|")
    for name in args.models.split(","):
        build, size = SIZED[name]
        for offset in offsets:
            n = size + offset if name in ("logistic_glm_7", "ordered_mixture_3") else size + 1 + offset % 40
            model = build(n)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = pmz.evidence(model, random_seed=0, progressbar=False)
            t_pmz = time.perf_counter() - t0
            model = build(n)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pm.sample(model=model, random_seed=0, progressbar=False, compute_convergence_checks=False)
            t_sample = time.perf_counter() - t0
            print(f"| {name} | {n} | {t_pmz:.1f} | {res.run_attrs.get('compile_time', float('nan')):.1f} | "
                  f"{res.run_attrs['route']} | {t_sample:.1f} | {t_pmz / t_sample:.2f} |", flush=True)


if __name__ == "__main__":
    main()
