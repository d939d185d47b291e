"""The import order of the data flow in docs/architecture.md: no pmz module imports a module of a higher layer, and no
two modules import each other (directly or through others) at import time.

Layers, lowest first (a module may import its own layer and any lower one):

    utilities   version, weights, sample_diagnostics, validate, progress, threads, inference_data (the version,
                NumPy maths, R-hat and k-hat, argument checks, progress bar, BLAS threads, ArviZ)
    model       compile once: log prior / log likelihood on one flat vector; LogDensityParts, the Target protocol
    families    tempered families f_beta and their schedules
    kernels     generic Markov kernels that leave f_beta invariant, and their tuning
    sequences   SMC sequences of distributions (a family or a growing space, with its kernel)
    records     what runners record (WorkRecord, TemperingTrace, SMCRecord), EvidenceEstimate and its typed
                diagnostics (estimate_diagnostics), KnownTruth
    runners     algorithms that move particles and record; pooling the records of independent runs
    execution   random streams, chunks of work on executors, checkpoints
    estimators  pure functions: record in, EvidenceEstimate out
    reliability the verdict on an estimate, from its typed diagnostics
    results     EvidenceResult, Bayes factors, plots/ (they read results, and a study's result, by their groups and
                columns: no plot imports a study)
    stacks      the domain stacks on the generic core: gp (GP models), boltzmann (RBM, DBM, Ising, Potts, learning)
    extras      systems (the known-truth catalogue), step_methods (PyMC step methods and log Z from their traces)
    methods     one pipeline per method of pmz.evidence, its option set, inputs and set-up
    auto        the default (method="auto"): the route contract, the plan, one module per route, the chains
    api         pmz.evidence and the method registry
    studies     what calls pmz.evidence many times: Bayes-factor calibration, prior sensitivity, the hazard matrix
    glue        pmz/__init__ only (the public surface): anything

Every module is in one layer (``test_every_module_has_a_layer``): a new folder gets its line in ``LAYERS`` where its
imports put it.

``records`` sit below ``runners``, not after them as in the data-flow picture: runners construct records, so for
imports the records are the runners' vocabulary (as ``LogDensityParts``, which families return, lives in model/).

Run alone: ``python -m pytest tests/test_layers.py``; ``python tests/test_layers.py`` prints every violation.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pmz"

LAYERS = (
    ("utilities", ("pmz.version", "pmz.weights", "pmz.sample_diagnostics", "pmz.validate", "pmz.progress",
                   "pmz.threads", "pmz.inference_data", "pmz.interrupts")),
    ("model", ("pmz.model",)),
    ("families", ("pmz.families",)),
    ("kernels", ("pmz.kernels",)),
    ("sequences", ("pmz.sequences",)),
    ("records", ("pmz.records", "pmz.estimate_diagnostics")),
    ("runners", ("pmz.runners",)),
    ("execution", ("pmz.execution",)),
    ("estimators", ("pmz.estimators",)),
    ("reliability", ("pmz.reliability",)),
    ("results", ("pmz.results", "pmz.compare", "pmz.plots")),
    ("stacks", ("pmz.gp", "pmz.boltzmann")),
    ("extras", ("pmz.systems", "pmz.step_methods")),
    ("methods", ("pmz.methods",)),
    ("auto", ("pmz.auto",)),
    ("api", ("pmz.api", "pmz.registry")),
    ("studies", ("pmz.studies",)),
)
#: the top layer: the package's own ``__init__`` (the public surface), and nothing else
GLUE = "glue"

#: upward imports that stay for now, each with the reason (module, imported module) -> reason
KNOWN_UPWARD: dict[tuple[str, str], str] = {}


def layer_of(module: str) -> tuple[int, str] | tuple[None, None]:
    """``(rank, name)`` of a pmz module: ``pmz`` itself is the glue (the top), any other module is in the layer that
    lists it or a package above it; ``(None, None)`` for a module of no layer (``test_every_module_has_a_layer``)."""
    if module == "pmz":
        return len(LAYERS), GLUE
    for rank, (name, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank, name
    return None, None


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(module: str, path: Path, known: dict) -> list[tuple[str, int, bool]]:
    """``(imported pmz module, line, at module level)`` for every import statement of a module, including those
    inside functions. ``from .pkg import name`` counts as an import of ``pkg.name`` when that is a module."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    top_level = {id(node) for node in tree.body}
    for node in tree.body:  # module-level try/except and if blocks run at import time too
        if isinstance(node, ast.Try | ast.If):
            top_level |= {id(n) for n in ast.walk(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            names = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source for alias in node.names]
        else:
            continue
        for name in dict.fromkeys(names):
            if name == "pmz" or name.startswith("pmz."):
                found.append((name, node.lineno, id(node) in top_level))
    return found


def upward_imports() -> list[str]:
    known = modules()
    problems = []
    for module, path in known.items():
        rank, name = layer_of(module)
        if rank is None:
            continue
        for target, line, _ in imports(module, path, known):
            target_rank, target_name = layer_of(target)
            if target_rank is not None and target_rank > rank and (module, target) not in KNOWN_UPWARD:
                where = f"{path.relative_to(PACKAGE.parent)}:{line}"
                problems.append(f"{where}: {module} ({name}) imports {target} ({target_name})")
    return problems


def import_cycles() -> list[list[str]]:
    """Cycles of module-level imports between distinct modules. Importing ``a.b.c`` runs the ``__init__`` of the
    packages ``a`` and ``a.b`` too, so those count as imported, except the module's own packages (a package's
    ``__init__`` importing its submodules, which import each other, is no cycle: Python is already running it)."""
    known = modules()
    graph = {}
    for module, path in known.items():
        targets = set()
        for target, _, top in imports(module, path, known):
            if not top:
                continue
            parts = target.split(".")
            targets |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
        graph[module] = sorted(
            t for t in targets if t in known and t != module and not module.startswith(t + ".")
        )
    # Tarjan's strongly connected components
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return cycles


def test_no_upward_import():
    problems = upward_imports()
    assert not problems, "imports that run up the layers of docs/architecture.md:\n" + "\n".join(problems)


def test_known_upward_imports_still_exist():
    """An exception that no longer applies is removed from KNOWN_UPWARD."""
    known = modules()
    present = {(m, t) for m, path in known.items() for t, _, _ in imports(m, path, known)}
    assert set(KNOWN_UPWARD) <= present, sorted(set(KNOWN_UPWARD) - present)


def test_no_import_cycle():
    cycles = import_cycles()
    assert not cycles, f"modules that import each other at import time: {cycles}"


def folder_loops() -> list[tuple[str, str]]:
    """Pairs of top-level folders (or modules) of pmz that import each other, directly, by any import statement
    (also those inside functions); the package's own ``__init__`` (the public surface) is left out."""
    known = modules()

    def folder(module):
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else None

    edges = set()
    for module, path in known.items():
        source = folder(module)
        for target, _, _ in imports(module, path, known):
            if source and folder(target) and folder(target) != source:
                edges.add((source, folder(target)))
    return sorted((a, b) for a, b in edges if (b, a) in edges and a < b)


def test_no_loop_between_folders():
    loops = folder_loops()
    assert not loops, f"folders that import each other: {loops}"


def test_module_file_names_are_unique():
    """A reader finds a module by its file name: no two share one, except each folder's ``base.py`` (the contract of
    its folder: families, kernels, sequences, step methods)."""
    names = {}
    for module, path in modules().items():
        if path.name not in ("__init__.py", "base.py"):
            names.setdefault(path.name, []).append(module)
    repeated = {name: found for name, found in names.items() if len(found) > 1}
    assert not repeated, f"modules with the same file name: {repeated}"


def test_tests_mirror_the_package():
    """Each folder of tests/ is a folder of pmz (or the examples' tests)."""
    tests = Path(__file__).resolve().parent
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert folders - {"examples"} <= packages, sorted(folders - packages - {"examples"})


def test_every_module_has_a_layer():
    """No module falls into a layer by default: a new folder or top-level module is given its place in ``LAYERS``."""
    unplaced = [module for module in modules() if layer_of(module)[0] is None]
    assert not unplaced, f"modules in no layer of LAYERS (add them where their imports put them): {unplaced}"


def test_every_layer_exists():
    known = modules()
    for name, prefixes in LAYERS:
        for prefix in prefixes:
            assert prefix in known, f"layer {name}: no module {prefix}"


if __name__ == "__main__":
    print("\n".join(upward_imports()) or "no upward import")
    print("\n".join(map(str, import_cycles())) or "no import cycle")
    print("\n".join(map(str, folder_loops())) or "no loop between folders")
