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


# Whole-program tests run the kiln CLI, kiln serve, the benchmarks or a CMake
# consumer end to end. scripts/test's passes capped at a lesser SIMD target leave
# them out (-m "not whole_program"): the kernels they reach are tested there directly.
WHOLE_PROGRAM = ("test_bench", "test_linalg_bench", "test_cli_", "test_serve", "test_chat_page",
                 "test_cmake_consumer", "test_special_accuracy_script")


def pytest_configure(config):
    config.addinivalue_line("markers", "whole_program: runs a kiln program end to end (see conftest.py)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name.startswith(WHOLE_PROGRAM):
            item.add_marker(pytest.mark.whole_program)
