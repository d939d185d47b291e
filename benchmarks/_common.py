"""Helpers shared by the benchmark scripts: the machine description, updating docs/benchmarks.md, timing one
``pmz.evidence`` call and calibrating a run's cost to a time budget."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
NOTES_START, NOTES_END = "<!-- notes: kept when the script rewrites this section -->", "<!-- /notes -->"

__all__ = [
    "DOC",
    "NOTES_END",
    "NOTES_START",
    "ROOT",
    "calibrate_linear",
    "cpu_name",
    "existing_notes",
    "pmz_run",
    "run_evidence",
    "update_doc",
]


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo ("unknown CPU" elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def _section_bounds(lines: list[str], section_heading: str) -> tuple[int, int] | None:
    """(first, end) line indices of the ``## ...`` section ``section_heading`` (None if absent)."""
    start = next((i for i, line in enumerate(lines) if line.strip() == section_heading), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return start, end


def update_doc(section_heading: str, body: str, doc: Path = DOC) -> None:
    """Replace (or append) the ``## ...`` section ``section_heading`` of ``doc``, keeping all other sections."""
    text = doc.read_text() if doc.exists() else "# pmz benchmarks\n"
    lines = text.splitlines()
    bounds = _section_bounds(lines, section_heading)
    new = [section_heading, "", *body.rstrip("\n").splitlines(), ""]
    if bounds is None:
        while lines and not lines[-1].strip():
            lines.pop()
        lines += ["", *new]
    else:
        start, end = bounds
        lines[start:end] = new
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text("\n".join(lines).rstrip("\n") + "\n")


def existing_notes(section_heading: str, doc: Path = DOC) -> list[str]:
    """Hand-written notes between NOTES_START and NOTES_END in section ``section_heading`` (kept on rewrite)."""
    if not doc.exists():
        return []
    lines = doc.read_text().splitlines()
    bounds = _section_bounds(lines, section_heading)
    if bounds is None:
        return []
    text = "\n".join(lines[bounds[0] : bounds[1]])
    i, j = text.find(NOTES_START), text.find(NOTES_END)
    if i < 0 or j < i:
        return []
    return [*text[i : j + len(NOTES_END)].splitlines(), ""]


def run_evidence(model, seed: int, **options):
    """One quiet ``pmz.evidence(model, random_seed=seed, progressbar=False, **options)`` call.

    Returns (result, wall time, process CPU time, pmz's warning messages); both times are measured around the
    whole call (``time.perf_counter`` / ``time.process_time``), so they include everything ``pmz.evidence``
    does (for two-way methods and bridge sampling also the ``pm.sample`` NUTS run for the posterior draws).
    """
    import pmz

    c0 = time.process_time()
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = pmz.evidence(model, random_seed=seed, progressbar=False, **options)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning) and "pmz" in str(w.message)]
    return res, wall, cpu, messages


def pmz_run(model, seed: int, method: str | None = None, **options) -> dict:
    """One quiet ``pmz.evidence`` call on ``model`` as a benchmark's cache record, timed around the call alone
    (compilation included): ``wall``, ``log_z``, ``se``, ``method_used``, ``route`` (the default's route, or None),
    ``reliable``, ``warnings`` (pmz's, deduplicated, each cut at 300 characters) and ``error`` (None, or the
    exception of a failed call: a failed run is a result), ``timeline`` (the default's). ``method=None``: pmz's
    default method; ``options``: passed on (e.g. ``posterior=``)."""
    import pmz

    options = dict(options) if method is None else {"method": method, **options}
    out = {"log_z": math.nan, "se": math.nan, "reliable": None, "route": None, "error": None, "method_used": method,
           "warnings": []}
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = pmz.evidence(model, random_seed=seed, progressbar=False, **options)
        out["wall"] = time.perf_counter() - t0
        out["log_z"], out["se"] = float(res.log_z), float(res.log_z_se)
        out["method_used"] = str(getattr(res, "method", method))
        try:
            out["route"] = res["evidence_stats"].attrs.get("route")
            out["timeline"] = res["evidence_stats"].attrs.get("timeline")
        except Exception:  # noqa: BLE001 -- a method without an evidence group
            out["route"] = None
        try:
            reliable = getattr(res, "reliable", None)
            out["reliable"] = None if reliable is None else bool(reliable)
        except Exception as exc:  # noqa: BLE001 -- an attribute that raises counts as absent
            out["warnings"].append(f"reliable raised {type(exc).__name__}: {exc}")
        out["warnings"] += sorted({str(w.message)[:300] for w in caught if issubclass(w.category, UserWarning)
                                   and "pmz" in (str(w.filename) + str(w.message))})
    except Exception as exc:  # noqa: BLE001 -- a failed run is a result
        out["wall"] = time.perf_counter() - t0
        out["error"] = f"{type(exc).__name__}: {exc}"[:500]
    return out


def calibrate_linear(
    cost: Callable[[int], float],
    target: float,
    *,
    lo: int,
    hi: int,
    start: tuple[int, int],
    n_start: int = 3,
    n_check: int = 2,
    checks: int = 2,
    tol: float = 0.1,
) -> tuple[int, list[tuple[int, float]]]:
    """An integer setting x in [lo, hi] at which one run costs about ``target`` seconds.

    ``cost(x)`` runs once with setting x and returns its cost in seconds. The cost is modelled as a straight
    line in x (a fixed cost plus a cost per unit of x). Single timings are noisy, so: ``n_start`` runs at each
    of the two ``start`` settings, a least-squares line through all runs, solved for the target and clipped to
    [lo, hi]; then up to ``checks`` rounds of ``n_check`` runs at the solution, each added to the fit, until
    their median is within ``tol`` (relative) of the target. If the fitted slope is not positive (noise hides
    the cost's growth), x is ``lo`` when the target is below the mean measured cost, else scaled from the second
    start setting by target / mean cost. Returns x and every (x, cost) measured.
    """
    points: list[tuple[int, float]] = []

    def measure(x, n):
        ts = [cost(x) for _ in range(n)]
        points.extend((x, t) for t in ts)
        return float(np.median(ts))

    def solve():
        xs, ts = np.array(points, dtype=float).T
        slope, intercept = np.polyfit(xs, ts, 1)
        if slope > 0:
            x = (target - intercept) / slope
        else:
            x = lo if target < np.mean(ts) else start[1] * target / np.mean(ts)
        return int(np.clip(round(x), lo, hi))

    for x0 in start:
        measure(x0, n_start)
    x = solve()
    for _ in range(checks):
        if abs(measure(x, n_check) - target) <= tol * target:
            break
        x = solve()
    return x, points


def time_per_particle(
    fns, n_particles: int, repeats: int, min_measurement_s: float = 0.05
) -> tuple[list[float], list[float]]:
    """Median seconds per particle of each ``fn()`` in ``fns`` (each evaluates ``n_particles`` particles).

    After one warm-up call each, the functions are measured in turn (interleaved, so slow drifts of a shared
    machine hit all of them alike); each measurement loops the call enough times to last min_measurement_s.
    Returns the medians of the wall time (``time.perf_counter``) and, as a check against a busy machine, of
    the process CPU time (``time.process_time``).
    """
    inner = []
    for fn in fns:
        t0 = time.perf_counter()
        fn()  # warm-up (first call allocates output storage etc.)
        first = time.perf_counter() - t0
        inner.append(max(1, int(np.ceil(min_measurement_s / max(first, 1e-7)))))
    wall = [[] for _ in fns]
    cpu = [[] for _ in fns]
    for _ in range(repeats):
        for fn, k, w, c in zip(fns, inner, wall, cpu):
            c0 = time.process_time()
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            w.append((time.perf_counter() - t0) / (k * n_particles))
            c.append((time.process_time() - c0) / (k * n_particles))
    return [float(np.median(s)) for s in wall], [float(np.median(s)) for s in cpu]


def _flatten(obj):
    """Yield the scalars of nested lists / (object) arrays, in order."""
    if isinstance(obj, list | tuple | np.ndarray):
        for item in obj:
            yield from _flatten(item)
    else:
        yield obj


def smc_log_marginal_likelihood(idata) -> tuple[float, int]:
    """SMC's log evidence estimate and its number of stages (of the first chain), on PyMC 5 and 6.

    PyMC records ``log_marginal_likelihood`` once per SMC stage, NaN except at the last stage. The layout differs:

    * PyMC 5 (``InferenceData``), ``chains=1``: float array of dims (chain=1, draw=n_stages);
    * PyMC 6 (``DataTree``), ``chains=1``: float array of dims (chain=n_stages,) -- the stage axis carries the
      name "chain";
    * either, ``chains>1``: an object array (chain, stage) of per-chain values (chains may differ in length).

    Per chain, the last finite stage value is the estimate; several chains are averaged on the log scale.
    """
    values = np.asarray(idata["sample_stats"]["log_marginal_likelihood"].values)
    chains = [values] if values.ndim == 1 else list(values)
    per_chain = []
    for chain_values in chains:
        flat = np.asarray(list(_flatten(chain_values)), dtype=float)
        finite = flat[np.isfinite(flat)]
        if finite.size == 0:
            raise ValueError("sample_smc returned no finite log_marginal_likelihood for a chain")
        per_chain.append(finite[-1])
    n_stages = len(list(_flatten(chains[0])))
    return float(np.mean(per_chain)), n_stages


# ------------------------------------------------------------------ one run in a fresh process (time and memory)
FRESH_TAG = "FRESH_RUN "


def print_fresh_row(row: dict) -> None:
    """In the child: add the process's peak resident memory (``ru_maxrss``, compile included) to ``row`` and print
    it as one tagged JSON line for :func:`run_in_fresh_process`."""
    import resource

    row["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(FRESH_TAG + json.dumps(row, default=str), flush=True)


def run_in_fresh_process(script, args) -> tuple[dict | None, str]:
    """Run ``python script *args`` in a fresh interpreter: ``(row, "")`` from its :func:`print_fresh_row` line, or
    ``(None, the end of its stderr)`` where it printed none."""
    proc = subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True, text=True,
                          cwd=Path(script).parent)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(FRESH_TAG)), None)
    if line is None:
        return None, proc.stderr[-2000:]
    return json.loads(line[len(FRESH_TAG):]), ""


# ------------------------------------------------------------------ run caches shared by the benchmark scripts
def pmz_commit() -> str:
    """The short commit of this checkout (+dirty when pmz/ has uncommitted changes), or "unknown"."""
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "pmz"], capture_output=True,
                               text=True).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def fmt(x, spec=".3f", none="--"):
    """``format(x, spec)``, or ``none`` for None / NaN."""
    return none if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def run_key(r: dict) -> tuple:
    """The cache key of one run: model, tool, method, seed, PyMC version."""
    return r["model"], r["tool"], r["method"], int(r["seed"]), r["pymc"]


def load_cache(path: Path, key: Callable[[dict], tuple] | None = None) -> dict[tuple, dict]:
    """The runs of a JSONL cache by ``key`` (default :func:`run_key`); a later line for the same key replaces an
    earlier one."""
    key = run_key if key is None else key
    runs = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                runs[key(r)] = r  # a later line for the same key replaces an earlier one
    return runs
