"""The hazard matrix, measured: every method on every hazard, over seeds, and the table docs/errors.md shows.

Each cell is :func:`pmz.studies.hazard_matrix.run_cell` (the method with the matrix's options on the hazard's model,
compile included); its outcome is ``answered`` (reliable and within 4 se + 0.02 of the exact log Z), ``flagged``
(``reliable=False``), ``error`` (a clear pmz error), ``wrong`` (reliable and beyond 4 se) or ``crash`` (another
exception). Every cell is one JSON line in ``benchmarks/results/hazards.jsonl`` (keyed by method, hazard, seed and
PyMC version; an interrupted run resumes). ``--report`` prints the table (a cell: its outcomes over the seeds, e.g.
``A A`` or ``F A``) and the cells' times; ``--write-doc`` writes it into docs/errors.md.

Usage::

    python benchmarks/hazards.py --seeds 2                     # every cell, seeds 1-2 (resumable)
    python benchmarks/hazards.py --seeds 2 --rows bar,ti --columns peaked
    python benchmarks/hazards.py --report --write-doc
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from collections import defaultdict
from pathlib import Path

warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")

from _common import load_cache, update_doc  # noqa: E402

HERE = Path(__file__).resolve().parent
CACHE = HERE / "results" / "hazards.jsonl"
DOC = HERE.parent / "docs" / "errors.md"
SECTION = "## Which method is flagged where (the hazard matrix)"
LETTER = {"answered": "A", "flagged": "F", "error": "E", "wrong": "W!", "crash": "C!"}


def _key(row: dict) -> tuple:
    return row["method"], row["hazard"], row["seed"], row["pymc"]


def load(cache: Path) -> list[dict]:
    """The cells of the cache; a later line for the same method, hazard, seed and PyMC replaces an earlier one."""
    return list(load_cache(cache, key=_key).values())


def run(rows, columns, seeds, cache: Path) -> None:
    import pymc as pm

    from pmz.studies.hazard_matrix import applies, run_cell

    done = {_key(r) for r in load(cache)}
    for seed in seeds:
        for hazard in columns:
            for method in rows:
                if not applies(method, hazard) or (method, hazard, seed, pm.__version__) in done:
                    continue
                cell = run_cell(method, hazard, seed)
                row = {**cell.as_dict(), "pymc": pm.__version__, "date": time.strftime("%Y-%m-%d")}
                with cache.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                z = f"{cell.z:+.1f}" if cell.reliable else ""
                print(f"{method:12s} {hazard:20s} seed {seed}: {cell.kind:8s} {cell.log_z:10.4f} +- "
                      f"{cell.log_z_se:.4f} (truth {cell.truth:.4f}) z {z:6s} {cell.seconds:6.1f} s "
                      f"{cell.reason[:90]}", flush=True)


def table(cache: Path) -> tuple[str, str, list[str], int, float]:
    """The matrix as markdown (a cell: the outcomes seen over the seeds and stacks, e.g. ``A`` or ``A/F``), one line
    per method naming the hazards it was flagged on or refused, the PyMC versions, the seeds and the minutes run."""
    from pmz.studies.hazard_matrix import ROWS, applies
    from pmz.systems.hazards import hazard_names

    rows = load(cache)
    kinds, seconds = defaultdict(set), 0.0
    for r in rows:
        kinds[r["method"], r["hazard"]].add(r["kind"])
        seconds += r["seconds"]
    columns = hazard_names()
    lines = ["| method | " + " | ".join(c.replace("_", " ") for c in columns) + " |",
             "|---|" + "---|" * len(columns)]
    summary = []
    for method in ROWS:
        cells = []
        for c in columns:
            seen = kinds[method, c]
            cells.append("--" if not applies(method, c) else "/".join(LETTER[k] for k in LETTER if k in seen) or "?")
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
        flagged = [c for c in columns if kinds[method, c] & {"flagged", "error"}]
        wrong = [c for c in columns if kinds[method, c] & {"wrong", "crash"}]
        summary.append(f"* `{method}`: flagged or refused on {', '.join(flagged) or 'none'}"
                       + (f"; WRONG OR CRASHED on {', '.join(wrong)}" if wrong else ""))
    versions = sorted({r["pymc"] for r in rows})
    n_seeds = len({r["seed"] for r in rows})
    return "\n".join(lines), "\n".join(summary), versions, n_seeds, seconds


def main() -> None:
    from pmz.studies.hazard_matrix import ROWS
    from pmz.systems.hazards import hazard_names

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2, help="seeds 1..N")
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--columns", default=",".join(hazard_names()))
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--write-doc", action="store_true")
    args = parser.parse_args()
    if not args.report:
        seeds = range(args.first_seed, args.first_seed + args.seeds)
        run(args.rows.split(","), args.columns.split(","), seeds, args.cache)
        return
    body, summary, versions, n_seeds, total = table(args.cache)
    text = ("Every method of `pmz.evidence` (rows; `st_step` and `wl_step`: `pmz.tempered_evidence` after `pm.sample` "
            "with `pmz.SimulatedTempering` or `pmz.WangLandau`) on every hazard of `pmz.systems.hazards` (columns), "
            "each a small model with an exact log Z. A method meets a hazard well when it answers within its error "
            "bar or says it cannot; tests/studies/test_hazards.py asserts that for every cell, on both PyMC stacks.\n\n"
            f"{body}\n\nA: answered (reliable, within 4 se + 0.02 of the exact log Z); F: flagged unreliable; "
            f"E: a pmz error that names the problem; W!: reliable and wrong; C!: another exception; --: the "
            f"column does not apply (the method takes no posterior= draws, or the column is about the default's "
            f"shortcuts). A cell lists every outcome seen over {n_seeds} seeds on "
            f"PyMC {' and '.join(versions)}; {total / 60:.0f} minutes of runs in all. Columns: "
            f"`pmz.systems.hazards`; rows and options: `pmz.studies.hazard_matrix`; command: "
            f"`python benchmarks/hazards.py --seeds 2` (per PyMC stack), then "
            f"`python benchmarks/hazards.py --report --write-doc`.\n\n"
            f"Per method:\n\n{summary}")
    print(text)
    if args.write_doc:
        update_doc(SECTION, text, doc=DOC)


if __name__ == "__main__":
    main()
