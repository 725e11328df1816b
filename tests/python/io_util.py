# Helpers shared by the model-file tests: the kiln CLI next to this Python, and
# a runner that checks a bad file gives a one-line error and a non-zero exit.
import os
import shutil
import subprocess
import sys


def kiln_cli():
    cand = os.path.join(os.path.dirname(sys.executable), "kiln")
    if os.path.exists(cand):
        return cand
    return shutil.which("kiln")


def cli_rejects(path):
    """Runs `kiln info PATH`; returns stderr after checking exit != 0, one line, no crash."""
    cli = kiln_cli()
    if cli is None:
        return None
    r = subprocess.run([cli, "info", str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)  # 1: an error, not a signal
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("kiln: error: ["), lines[0]
    return lines[0]
