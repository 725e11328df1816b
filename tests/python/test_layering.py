# The layering of the source tree (DESIGN.md, "Layers"), checked on the
# #include lines: core knows no backend or op front-end; the CLI and the Python
# bindings reach the library through its public headers (or the one internal
# bench/test header); the installed headers include nothing that is not
# installed, and `kiln/` names only them.
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
PRIVATE_DIRS = ("core", "cpu", "ops", "nn", "llm", "io", "linalg", "serve")


def includes(path):
    return INCLUDE.findall(path.read_text(encoding="utf-8"))


def sources(*dirs):
    for d in dirs:
        for p in sorted((ROOT / d).rglob("*")):
            if p.suffix in (".h", ".cc"):
                yield p


def rel(p):
    return p.relative_to(ROOT).as_posix()


def test_core_includes_no_layer_above_it():
    bad = [(rel(p), inc) for p in sources("src/core") for inc in includes(p)
           if inc.split("/")[0] in PRIVATE_DIRS and not inc.startswith("core/")]
    assert not bad, bad


def test_serve_is_the_top_layer():
    # kiln serve (src/serve, its own library) uses the runtime; nothing in the
    # library below it includes it, so kiln_core links without HTTP.
    bad = [(rel(p), inc) for p in sources("src") if not rel(p).startswith("src/serve/")
           for inc in includes(p) if inc.startswith("serve/")]
    assert not bad, bad


def test_frontends_use_public_headers():
    # tools/kiln and python/src: public kiln/ headers, their own headers, and
    # src/internal/ (hooks for kiln's own benchmarks, never installed).
    bad = [(rel(p), inc) for p in sources("tools", "python/src") for inc in includes(p)
           if inc.split("/")[0] in PRIVATE_DIRS]
    assert not bad, bad


def test_kiln_prefix_means_public_headers():
    public = {rel(p)[len("include/"):] for p in sources("include")}
    bad = [(rel(p), inc) for p in sources("src", "tools", "python/src", "tests/cpp", "include")
           for inc in includes(p) if inc.startswith("kiln/") and inc not in public]
    assert not bad, bad


def test_installed_headers_include_only_installed_headers():
    public = {rel(p)[len("include/"):] for p in sources("include")}
    bad = [(rel(p), inc) for p in sources("include") for inc in includes(p) if inc not in public]
    assert not bad, bad



def test_public_headers_hold_no_kernel_internals():
    # Kernel-selection constants, raw-pointer runtime entries and scratch
    # helpers live in private headers under src/.
    text = {rel(p): p.read_text(encoding="utf-8") for p in sources("include")}
    internals = ["sample_row_(", "quantize_chunk_rows(", "kLinearGemvMaxRows =", "class ScratchBlock"]
    bad = [(f, name) for f, t in text.items() for name in internals if name in t]
    assert not bad, bad
    assert "include/kiln/float_to_int.h" not in text


def code_only(text):
    # The text without comments and string literals, so that a comment naming a
    # kernel file (`cpu/ops/linalg_lu.cc`) is no breach.
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', " ", text, flags=re.S)


# The places that may name the CPU backend: the backend itself, the one file
# that registers every backend's kernels, and the hooks of kiln's own benchmarks.
BACKEND_BRIDGES = ("src/backends.cc", "src/internal/bench_hooks.h")
FRONTEND_DIRS = ("ops", "nn", "linalg", "llm", "io")


def test_only_the_backend_names_the_cpu_backend():
    bad = []
    for p in sources("src"):
        r = rel(p)
        if r.startswith("src/cpu/") or r in BACKEND_BRIDGES:
            continue
        bad += [(r, inc) for inc in includes(p) if inc.startswith("cpu/")]
        if re.search(r"\bcpu::", code_only(p.read_text(encoding="utf-8"))):
            bad.append((r, "cpu::"))
    assert not bad, bad


def test_backend_includes_no_frontend_header():
    # A kernel may include core/, the registry (ops/registry/) and cpu/; the
    # front-ends' headers (validation, promotion, composition) are above it.
    bad = [(rel(p), inc) for p in sources("src/cpu") for inc in includes(p)
           if inc.split("/")[0] in FRONTEND_DIRS and not inc.startswith("ops/registry/")]
    assert not bad, bad
