"""The VAROPT example at reduced size: the closed-form Gaussian check holds and the RBM runs are accurate."""

import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_varopt_example_quick():
    sys.path.insert(0, str(EXAMPLES))
    try:
        from varopt_rbm import main
    finally:
        sys.path.pop(0)
    closed_rows, bound, rows = main(["--quick", "--repeats", "1"])
    by_name = {name: (pred, sim) for name, pred, sim in closed_rows}
    # perfect transitions: the optimal schedule reaches Lambda^2 / K within 20%, far below the linear schedule
    assert abs(by_name["VAROPT"][1] / bound - 1) < 0.2
    assert by_name["VAROPT"][1] < 0.25 * by_name["linear"][1]
    for variant, base, K, label, err, var, ess in rows:
        assert err < 0.3 and 0 < ess <= 1 and var > 0, (variant, base, K, label, err, ess)
