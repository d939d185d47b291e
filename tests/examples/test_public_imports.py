"""The examples and notebooks use pmz only through its public surface.

Public are the names in ``pmz.__all__`` and, for a public subpackage (one that ``pmz.__all__`` lists, or that a public
subpackage lists, as ``pmz.boltzmann.learn``), the names in its ``__init__``'s ``__all__``. A module path below them
(``from pmz.boltzmann.rbm import RBM``, ``pmz.plots.format_log_z``) or a name a package does not list is an error
naming the file and line. Read with ``ast``: every import and every attribute chain that starts at a name bound to
pmz or to one of its public subpackages; the notebooks' code cells count, not their prose.
"""

import ast
import re
from pathlib import Path
from types import ModuleType

import pytest

import pmz

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "docs" / "notebooks").glob("*.md"))
CELL = re.compile(r"^```(?:\{code-cell\}|python)[^\n]*\n(.*?)^```", re.S | re.M)


def code_blocks(path: Path) -> list[tuple[int, str]]:
    """``(first line number, source)`` of the Python in a file: the whole file, or a notebook's code cells (their
    ``:option:`` lines and IPython ``%`` / ``!`` lines blanked, so that line numbers stay)."""
    text = path.read_text()
    if path.suffix == ".py":
        return [(1, text)]
    blocks = []
    for match in CELL.finditer(text):
        first = text.count("\n", 0, match.start(1)) + 1
        lines = ["" if line.startswith((":", "%", "!")) else line for line in match.group(1).splitlines()]
        blocks.append((first, "\n".join(lines)))
    return blocks


def resolve(dotted: str):
    """The object ``pmz.a.b...`` names through public names only, or None where a step is not public."""
    parts = dotted.split(".")
    if parts[0] != "pmz":
        return None
    obj = pmz
    for part in parts[1:]:
        if not isinstance(obj, ModuleType):
            return obj  # past the packages: attributes of a class or function are free
        if part not in getattr(obj, "__all__", ()):
            return None
        obj = getattr(obj, part)
    return obj


def _chain(node: ast.Attribute) -> tuple[str | None, list[str]]:
    """``(root name, attributes)`` of ``root.a.b``; root None when the chain does not start at a name."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    return (node.id if isinstance(node, ast.Name) else None), attrs[::-1]


def _imports(tree: ast.AST) -> tuple[list[tuple[int, str]], dict[str, str]]:
    """Non-public imports ``(line, what)`` and the names bound to public pmz modules ``{name: dotted path}``."""
    bad, bound = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "pmz":
                    continue
                if not isinstance(resolve(alias.name), ModuleType):
                    bad.append((node.lineno, f"import {alias.name}"))
                elif alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    bound["pmz"] = "pmz"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "pmz":
            if not isinstance(resolve(node.module), ModuleType):
                bad.append((node.lineno, f"from {node.module} import ..."))
                continue
            for alias in node.names:
                dotted = f"{node.module}.{alias.name}"
                obj = None if alias.name == "*" else resolve(dotted)
                if obj is None:
                    bad.append((node.lineno, f"from {node.module} import {alias.name}"))
                elif isinstance(obj, ModuleType):
                    bound[alias.asname or alias.name] = dotted
    return bad, bound


def violations(source: str, first_line: int = 1) -> list[tuple[int, str]]:
    """``(line, what)`` for every use of pmz in ``source`` that is not public."""
    tree = ast.parse(source)
    bad, bound = _imports(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        root, attrs = _chain(node)
        if root not in bound:
            continue
        path = bound[root]
        for attr in attrs:
            if not isinstance(resolve(path), ModuleType):
                break
            path = f"{path}.{attr}"
            if resolve(path) is None:
                bad.append((node.lineno, path))
                break
    return sorted({(line + first_line - 1, what) for line, what in bad})


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_uses_only_the_public_surface(path):
    lines = path.read_text().splitlines()
    found = []
    for first, source in code_blocks(path):
        for line, what in violations(source, first):
            found.append(f"{path.relative_to(ROOT)}:{line}: {what} (not public): {lines[line - 1].strip()}")
    assert not found, "\n".join(found)


def test_the_check_finds_deep_paths():
    source = """
import pmz
import pmz.boltzmann.rbm
from pmz.boltzmann import RBM, energy_model
from pmz.boltzmann.learn import LogZTracker
from pmz.systems import normal_mean
from pmz import boltzmann as bm
pmz.plots.format_log_z(1.0, 0.1)
from pmz.studies.hazard_matrix import run_cell
pmz.boltzmann.learn.fit_rbm
pmz.systems.normal_mean().model.basic_RVs
bm.rbm.RBM
"""
    assert [what for _, what in violations(source)] == [
        "import pmz.boltzmann.rbm",
        "from pmz.boltzmann import energy_model",
        "pmz.plots",
        "from pmz.studies.hazard_matrix import ...",
        "pmz.boltzmann.rbm",
    ]
    assert [line for line, _ in violations(source, first_line=10)] == [12, 13, 17, 18, 21]
