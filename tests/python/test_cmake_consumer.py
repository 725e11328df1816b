# `cmake --install` gives a C++ user what the README's C++ example needs:
# the headers, the library, the kiln CLI and a CMake package. The build tree
# that scripts/setup made (build/release) is installed into a temporary
# prefix, and tests/cmake_consumer (find_package(kiln), the README's example)
# is configured, built and run against it.
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("KILN_BUILD_DIR", ROOT / "build" / "release"))
CONSUMER = ROOT / "tests" / "cmake_consumer"

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None or not (BUILD / "cmake_install.cmake").exists(),
                                reason="no cmake, or no configured build tree (run scripts/setup)")


def run(*cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, **kw)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))}\n{r.stdout}\n{r.stderr}"
    return r


def test_install_and_find_package(tmp_path):
    prefix = tmp_path / "prefix"
    run("cmake", "--install", BUILD, "--prefix", prefix)
    files = {p.relative_to(prefix).as_posix() for p in prefix.rglob("*") if p.is_file()}
    assert "bin/kiln" in files
    assert "include/kiln/kiln.h" in files and "include/kiln/llm/generate.h" in files
    assert any(f.startswith("lib") and f.endswith("/cmake/kiln/kilnConfig.cmake") for f in files), files
    assert any(f.startswith("lib") and f.endswith("/cmake/kiln/kilnConfigVersion.cmake") for f in files)
    assert any(f.startswith("lib") and f.endswith(".a") for f in files), files
    # Only the public headers, and nothing of the Python package.
    assert not [f for f in files if f.startswith("include/") and not f.startswith("include/kiln/")], files
    assert not [f for f in files if "_C." in f or f.endswith(".py")], files
    r = run(prefix / "bin" / "kiln", "--version")
    assert r.stdout.startswith("kiln ")

    build = tmp_path / "consumer-build"
    env = dict(os.environ, CMAKE_BUILD_PARALLEL_LEVEL="2")
    run("cmake", "-S", CONSUMER, "-B", build, "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={prefix}",
        "-G", "Ninja" if shutil.which("ninja") else "Unix Makefiles", env=env)
    run("cmake", "--build", build, env=env)
    out = run(build / "consumer").stdout.splitlines()
    assert out[0] == r.stdout.strip()  # the library and the CLI are the same version
    assert out[1] == "x [3, 4] bfloat16 sum 66"
    assert out[2] == "y [1, 4096] float32, linear_out matches the reference"
