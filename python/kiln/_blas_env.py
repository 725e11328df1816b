"""Picks OpenBLAS's kernel set before kiln's extension loads it.

OpenBLAS (Debian's 0.3.21) identifies the CPU by its model number; under a
hypervisor that masks the model ("Intel Xeon Processor") it falls back to its
SSE3 "Prescott" kernels, making kiln.linalg's LAPACK paths 3-5x slower. OpenBLAS
reads OPENBLAS_CORETYPE once, when it is loaded, so when the user has not set
it, set it here from the CPU's feature flags: SkylakeX kernels for AVX-512,
Haswell kernels for AVX2 + FMA (what OpenBLAS itself uses on Zen), else leave
OpenBLAS's own choice. Set OPENBLAS_CORETYPE yourself to override.
"""
import os


def _choose():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
            else:
                return None
    except OSError:
        return None
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"} <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    return None


if "OPENBLAS_CORETYPE" not in os.environ:
    _core = _choose()
    if _core:
        os.environ["OPENBLAS_CORETYPE"] = _core
