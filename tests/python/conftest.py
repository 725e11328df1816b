# kiln is tested as installed (pip install . into the active environment); nothing
# here touches sys.path. Shared fixtures for the Python tests.
import os
import sys

import numpy as np
import pytest

import kiln

# pip installs the kiln CLI beside this interpreter (the venv's bin/); the CLI
# tests find it there even when the venv is not activated.
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def pytest_report_header(config):
    return f"kiln {kiln.__version__} ({kiln.__file__}), simd target {kiln.simd_target()}"
