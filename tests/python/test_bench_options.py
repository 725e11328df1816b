# The options every `kiln bench X` shares (--json, --out, --repeat, --warmup,
# --quick): each command has them with its own defaults, checks them alike, and
# a --quick run without --repeat takes the command's quick repeat count.
# Smoke runs only (--quick, cases filtered away where a command can): no timing.
import json
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.skipif(shutil.which("kiln") is None, reason="kiln CLI not on PATH")

# command: (has --out, default --repeat, --repeat under --quick or None, default --warmup or None)
COMMANDS = {
    "ops": (True, 10, 3, 2),
    "linear": (True, 10, 3, 2),
    "scaled_mm": (True, 10, 3, 2),
    "moe": (True, 10, 3, 2),
    "softmax": (True, 30, 3, 2),
    "attention": (True, 20, 3, 2),
    "conv": (True, 5, 3, 1),
    "sample": (True, 15, 3, 2),
    "linalg": (True, 5, 2, 1),
    "generate": (True, 3, None, None),
    "load": (False, 5, None, None),
    "tokenizer": (False, 5, None, None),
}


def kiln(*args):
    return subprocess.run(["kiln", "bench", *map(str, args)], capture_output=True, text=True, timeout=300)


def option_help(help_text, option):
    """The help line(s) of `option`, joined: CLI11 puts a long type on a line of its own."""
    lines = help_text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith(option + " ") or line.strip() == option:
            text = line
            j = i + 1
            while j < len(lines) and lines[j].startswith(" " * 20) and not lines[j].strip().startswith("-"):
                text += " " + lines[j].strip()
                j += 1
            return " ".join(text.split())
    return None


@pytest.mark.parametrize("cmd", sorted(COMMANDS))
def test_help_lists_the_common_options(cmd):
    has_out, repeat, quick_repeat, warmup = COMMANDS[cmd]
    r = kiln(cmd, "--help")
    assert r.returncode == 0, r.stderr
    assert "Print one JSON object" in option_help(r.stdout, "--json")
    assert option_help(r.stdout, "--quick") is not None
    rep = option_help(r.stdout, "--repeat")
    assert f"default {repeat}" in rep, rep
    if quick_repeat is not None:
        assert f"{quick_repeat} with --quick" in rep, rep
    out = option_help(r.stdout, "--out")
    assert (out is not None) == has_out, r.stdout
    if has_out:
        assert "Also write the JSON object to FILE" in out
    wu = option_help(r.stdout, "--warmup")
    assert (wu is not None) == (warmup is not None), r.stdout
    if warmup is not None:
        assert f"default {warmup}" in wu, wu


@pytest.mark.parametrize("cmd", sorted(COMMANDS))
def test_bad_repeat_and_warmup_are_usage_errors(cmd):
    r = kiln(cmd, "--repeat", "0")
    assert r.returncode == 2 and "--repeat" in r.stderr, r.stderr
    if COMMANDS[cmd][3] is not None:
        r = kiln(cmd, "--warmup", "-1")
        assert r.returncode == 2 and "--warmup" in r.stderr, r.stderr


# Commands whose --quick JSON states repeat and warmup, with arguments that run
# (almost) no cases.
QUICK_RUNS = {
    "ops": ["--filter", "no-such-case", "--no-python"],
    "linalg": ["--filter", "no-such-case", "--no-python"],
    "softmax": ["--filter", "no-such-case"],
    "attention": ["--filter", "no-such-case"],
    "conv": ["--filter", "no-such-case"],
    "sample": [],
}


@pytest.mark.parametrize("cmd", sorted(QUICK_RUNS))
def test_quick_takes_the_quick_repeat_count_unless_given(cmd):
    _, _, quick_repeat, warmup = COMMANDS[cmd]
    r = kiln(cmd, "--quick", "--json", *QUICK_RUNS[cmd])
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["quick"] is True and doc["repeat"] == quick_repeat
    if "warmup" in doc:
        assert doc["warmup"] == warmup
    r = kiln(cmd, "--quick", "--json", "--repeat", "4", *QUICK_RUNS[cmd])
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["repeat"] == 4


def test_out_writes_what_json_prints(tmp_path):
    path = tmp_path / "ops.json"
    r = kiln("ops", "--quick", "--json", "--filter", "no-such-case", "--no-python", "--out", path)
    assert r.returncode == 0, r.stderr
    assert json.loads(path.read_text()) == json.loads(r.stdout)
