# kiln is tested as installed (pip install . into the active environment); nothing
# here touches sys.path. Shared fixtures for the Python tests.
import numpy as np
import pytest

import kiln


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def pytest_report_header(config):
    return f"kiln {kiln.__version__} ({kiln.__file__}), simd target {kiln.simd_target()}"
