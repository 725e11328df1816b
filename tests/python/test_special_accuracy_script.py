"""scripts/special-accuracy measures kiln.special against mpmath: it runs, writes
its JSON, and what kiln has fixed stays fixed: erf, erfinv (its far tail
included), lgamma and the K_0 / K_1 family within 4 ulps, and no NaN or inf from any of them or from
digamma where the true value is finite."""
import json
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("mpmath")
ROOT = pathlib.Path(__file__).resolve().parents[2]
NAMES = ["erf", "erfinv", "gammaln", "digamma", "modified_bessel_k0", "modified_bessel_k1",
         "scaled_modified_bessel_k0", "scaled_modified_bessel_k1"]


def test_measures_kiln_and_scipy_against_mpmath(tmp_path):
    out = tmp_path / "acc.json"
    r = subprocess.run([sys.executable, str(ROOT / "scripts/special-accuracy"), "--only", ",".join(NAMES),
                        "--points", "300", "--jobs", "1", "--json", str(out)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    rows = {row["name"].split(" ")[0]: row for row in json.loads(out.read_text())["rows"]}
    assert set(rows) == set(NAMES), sorted(rows)
    for name in set(NAMES) - {"digamma"}:
        assert rows[name]["kiln"]["max"] <= 4, (name, rows[name]["kiln"])
    for row in rows.values():
        assert row["kiln"]["bad"] == 0, (row["name"], row["kiln"]["bad_examples"])
        assert row["scipy"]["max"] >= 0  # the SciPy column is measured too
    assert "erf" in r.stdout and "ulps" in r.stdout
