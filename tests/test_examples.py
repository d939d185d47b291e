"""The examples run as users run them, and say what they promise."""

import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_quickstart_is_within_3_se_of_exact():
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "quickstart.py")], capture_output=True, text=True, timeout=600, check=True
    ).stdout
    z = float(re.search(r"error = [-+0-9.]+ = ([-+0-9.]+) se", out).group(1))
    assert abs(z) < 3, out
    assert "probability" in out and "quadratic" in out  # the comparison table is printed
