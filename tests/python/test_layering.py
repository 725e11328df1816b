# The layering of the source tree (DESIGN.md, "Layers"), checked on the
# #include lines: core knows no backend or op front-end; the CLI and the Python
# bindings reach the library through its public headers (or the one internal
# bench/test header); the installed headers include nothing that is not
# installed, and `kiln/` names only them.
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
PRIVATE_DIRS = ("core", "cpu", "ops", "nn", "llm", "io", "linalg")


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
