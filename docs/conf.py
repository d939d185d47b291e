"""Sphinx configuration of pmz's documentation site.

Build it (from the repository root) with ``bash docs/build.sh``: MyST markdown pages, the notebooks in
``docs/notebooks/`` executed by myst-nb (a cell that raises fails the build), the API reference from the numpydoc
docstrings, warnings as errors.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # document (and execute the notebooks against) this checkout's pmz
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))

import pmz  # noqa: E402

project = "pmz"
author = "pmz developers"
copyright = "2026, pmz developers"
release = version = pmz.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_copybutton",
]

# ---------------------------------------------------------------------------------------------- sources
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "jupyter_execute"]
root_doc = "index"
suppress_warnings = ["mystnb.unknown_mime_type"]

myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3  # "user_guide.md#stacks-backends-and-threads" style links resolve to the heading

# ---------------------------------------------------------------------------------------------- notebooks
nb_execution_mode = "force"  # every build runs every notebook: the documented code still runs
nb_execution_raise_on_error = True  # ... and a cell that raises fails the build
nb_execution_timeout = 600
nb_execution_show_tb = True
nb_merge_streams = True
nb_execution_in_temp = False  # cwd = the notebook's folder (the notebooks read ../../benchmarks/data)

# ---------------------------------------------------------------------------------------------- API reference
autosummary_generate = True
autodoc_typehints = "none"
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = set()


# ---------------------------------------------------------------------------------------------- HTML
NOTEBOOKS = sorted(p.stem for p in (ROOT / "docs" / "notebooks").glob("*.md") if p.stem != "index")
html_theme = "pydata_sphinx_theme"
html_title = f"pmz {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    # the notebooks get the full width for their code and output; other pages keep "On this page"
    "secondary_sidebar_items": {"**": ["page-toc"], **{f"notebooks/{name}": [] for name in NOTEBOOKS}},
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_static_path = ["_static"]
html_css_files = ["pmz.css"]
html_show_sourcelink = False
