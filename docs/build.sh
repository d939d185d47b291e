#!/usr/bin/env bash
# Build pmz's documentation site: MyST pages, executed notebooks (a failing cell fails the build), the API
# reference from the docstrings; warnings are errors. Needs `pip install -e ".[docs]"`. Output:
# docs/_build/html/index.html; -E: every page and notebook is read (and run) again. Usage (from anywhere): bash docs/build.sh [extra sphinx-build options]
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf docs/generated  # autosummary stubs: regenerated from the docstrings at every build
exec python -m sphinx -E -W --keep-going -b html docs docs/_build/html "$@"
