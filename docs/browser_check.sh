#!/usr/bin/env bash
# Render built pages of the documentation site in a headless browser (Debian's chromium) and check each
# screenshot: chromium must exit 0 and the PNG must show a page (a valid PNG, not blank: many colours, enough
# non-white pixels). Run after docs/build.sh. Usage:
#   bash docs/browser_check.sh OUTDIR [PAGE.html ...]      (default pages: index.html, notebooks/bayes_factors.html)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: docs/browser_check.sh OUTDIR [PAGE.html ...]}"
shift
pages=("$@")
[ ${#pages[@]} -gt 0 ] || pages=(index.html notebooks/bayes_factors.html)
html="$PWD/docs/_build/html"
browser="$(command -v chromium || command -v chromium-browser || true)"
[ -n "$browser" ] || { echo "browser check: chromium not found (apt-get install -y chromium)" >&2; exit 1; }
mkdir -p "$out"
status=0
for page in "${pages[@]}"; do
    [ -f "$html/$page" ] || { echo "browser check: $html/$page does not exist (build the site first)" >&2; exit 1; }
    png="$out/$(echo "${page%.html}" | tr '/' '_').png"
    profile="$(mktemp -d)"
    rm -f "$png"
    if ! timeout 180 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
            --disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
            --user-data-dir="$profile" --screenshot="$png" --window-size=1280,2000 "file://$html/$page" \
            >"$out/chromium.log" 2>&1; then
        echo "browser check: chromium failed on $page (log: $out/chromium.log)" >&2
        status=1
    fi
    rm -rf "$profile"
    python - "$png" <<'PY' || status=1
import sys

import numpy as np
from matplotlib import image

path = sys.argv[1]
try:
    pixels = image.imread(path)[..., :3]
except (OSError, ValueError, SyntaxError) as error:
    sys.exit(f"browser check: {path} is not a PNG ({error})")
flat = np.round(pixels.reshape(-1, 3) * 255).astype(np.uint8)
colours = len(np.unique(flat, axis=0))
ink = float(np.mean(np.any(flat < 200, axis=1)))
ok = pixels.shape[0] >= 1000 and colours >= 64 and ink >= 0.02
print(f"browser check: {path}: {pixels.shape[1]} x {pixels.shape[0]} px, {colours} colours, "
      f"{100 * ink:.1f}% non-white pixels: {'ok' if ok else 'looks blank'}")
sys.exit(0 if ok else 1)
PY
done
exit $status
