# One convention for every kiln command: output that cannot be written fails
# (status 1, one line naming the command), a model is named by the last
# component of its path, --threads 0 is the default, "default" names the
# default model wherever a model or tokenizer is asked for, and a command
# given no model uses the default one. KILN_DEFAULT_MODEL points "default" at
# a tiny model, so nothing is fetched.
import json
import os
import re
import shutil
import subprocess

import pytest

from tiny_chat_model import DATA, TINY, make_tiny_chat_model

pytestmark = pytest.mark.skipif(shutil.which("kiln") is None, reason="kiln CLI not on PATH")
FULL = "/dev/full"
ENOSPC = "cannot write output: No space left on device"


def kiln(*args, input=None, env=None, stdout=subprocess.PIPE):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(["kiln", *map(str, args)], input=input, stdout=stdout, stderr=subprocess.PIPE, text=True,
                          env=e, timeout=300)


def to_full(*args, input=None, env=None):
    with open(FULL, "w") as full:
        return kiln(*args, input=input, env=env, stdout=full)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return make_tiny_chat_model(tmp_path_factory.mktemp("tiny-chat") / "tiny-chat")


@pytest.fixture
def text(tmp_path):
    f = tmp_path / "text.txt"
    f.write_text("the cat sat on the mat and then the cat ran to the hat\n" * 3)
    return f


# ---- output that cannot be written ------------------------------------------------------------

needs_dev_full = pytest.mark.skipif(not os.path.exists(FULL), reason="no /dev/full")


@needs_dev_full
@pytest.mark.parametrize("cmd, args", [
    ("generate", ["{tiny}", "--prompt-ids", "1 2 3", "-n", "4"]),
    ("generate", ["{chat}", "--prompt", "hello", "-n", "4", "--echo"]),
    ("tokenize", ["--tokenizer", "{chat}", "hello world"]),
    ("info", ["--no-bandwidth"]),
    ("info", ["{tiny}", "--json"]),
    ("perplexity", ["{chat}", "{text}", "-q"]),
])
def test_output_to_a_full_disk_fails(cmd, args, model, text):
    args = [a.format(tiny=TINY, chat=model, text=text) for a in args]
    r = to_full(cmd, *args)
    assert r.returncode == 1, r.stderr
    assert f"kiln {cmd}: {ENOSPC}" in r.stderr.splitlines(), r.stderr


@needs_dev_full
def test_chat_to_a_full_disk_fails(model):
    r = to_full("chat", model, "-n", "4", input="hello\nagain\n")
    assert r.returncode == 1, r.stderr
    assert f"kiln chat: {ENOSPC}" in r.stderr.splitlines(), r.stderr
    assert r.stderr.count("stop length") <= 1  # it stopped at the first failed write


@needs_dev_full
def test_help_and_bench_out_to_a_full_disk_fail():
    r = to_full("--help")
    assert r.returncode == 1 and f"kiln: {ENOSPC}" in r.stderr.splitlines(), r.stderr
    r = to_full("generate", "--help")
    assert r.returncode == 1, r.stderr
    # --out FILE: the file is written and checked the same way (an empty filter runs no case).
    r = kiln("bench", "ops", "--quick", "--repeat", "1", "--filter", "no-such-case", "--out", FULL, "--json")
    assert r.returncode == 1, r.stderr
    assert f"kiln bench ops: cannot write {FULL}: No space left on device" in r.stderr.splitlines(), r.stderr


# ---- the model's name --------------------------------------------------------------------------

@pytest.mark.parametrize("suffix", ["/", "//", "/.", "/../tiny-llama/"])
def test_loaded_line_names_the_model_with_a_trailing_slash(suffix):
    r = kiln("generate", str(TINY) + suffix, "--prompt-ids", "1 2", "-n", "1")
    assert r.returncode == 0, r.stderr
    assert re.search(r"^loaded tiny-llama \(llama, ", r.stderr, re.M), r.stderr


# ---- --threads 0 --------------------------------------------------------------------------------

def test_threads_zero_is_the_default_everywhere(model, text):
    default = json.loads(kiln("info", "--no-bandwidth", "--json").stdout)
    r = kiln("info", "--no-bandwidth", "--json", "--threads", "0")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["threads"] == default["threads"]
    r = kiln("bench", "ops", "--quick", "--repeat", "1", "--filter", "no-such-case", "--json", "--threads", "0")
    assert r.returncode == 0, r.stderr
    for cmd in (["generate", TINY, "--prompt-ids", "1 2", "-n", "1"], ["perplexity", model, text]):
        r = kiln(*cmd, "--threads", "0", "-q")
        assert r.returncode == 0, (cmd, r.stderr)
    for cmd in (["info", "--no-bandwidth"], ["generate", TINY, "--prompt-ids", "1"]):
        r = kiln(*cmd, "--threads", "-1")
        assert r.returncode == 2 and "threads" in r.stderr, (cmd, r.stderr)


def test_every_help_states_the_convention():
    for cmd in (["generate"], ["chat"], ["perplexity"], ["convert"], ["tokenize"]):
        out = " ".join(kiln(*cmd, "--help").stdout.split())
        assert '"default"' in out, cmd
    for cmd in (["generate"], ["chat"], ["perplexity"], ["convert"], ["info"], ["bench", "ops"]):
        out = " ".join(kiln(*cmd, "--help").stdout.split())
        assert re.search(r"--threads INT:INT in \[0 - 4096\]|0: KILN_NUM_THREADS|0 \(the default\)", out), cmd


# ---- "default" and no model ----------------------------------------------------------------------

def test_tokenize_accepts_default_and_a_model(model):
    env = {"KILN_DEFAULT_MODEL": str(model)}
    want = kiln("tokenize", "--tokenizer", model / "tokenizer.json", "--ids-only", "hello world")
    assert want.returncode == 0, want.stderr
    for args in (["--tokenizer", "default"], [], ["--tokenizer", str(model) + "/"], ["--tokenizer", model]):
        r = kiln("tokenize", *args, "--ids-only", "hello world", env=env)
        assert r.returncode == 0, (args, r.stderr)
        assert r.stdout == want.stdout, args


def test_perplexity_defaults_to_the_default_model(model, text):
    env = {"KILN_DEFAULT_MODEL": str(model)}
    want = kiln("perplexity", model, text, "--json", "-q")
    assert want.returncode == 0, want.stderr
    for args in ([text], ["default", text]):
        r = kiln("perplexity", *args, "--json", "-q", env=env)
        assert r.returncode == 0, (args, r.stderr)
        assert json.loads(r.stdout)["perplexity"] == json.loads(want.stdout)["perplexity"]
    # One argument is the FILE: a model there means the text was forgotten.
    r = kiln("perplexity", model, env=env)
    assert r.returncode == 2 and "is a model, not a text file" in r.stderr, r.stderr
    r = kiln("perplexity", model, text, text)
    assert r.returncode != 0 and "too many" in r.stderr


def test_info_accepts_default(model):
    env = {"KILN_DEFAULT_MODEL": str(TINY)}
    want = kiln("info", TINY, "--json")
    r = kiln("info", "default", "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == json.loads(want.stdout)


def test_convert_defaults_to_the_default_model(tmp_path):
    env = {"KILN_DEFAULT_MODEL": str(TINY)}
    out = tmp_path / "out"
    r = kiln("convert", out, "--dtype", "f32", "-q", env=env)
    assert r.returncode == 0, r.stderr
    ids = ["--prompt-ids", "3 4 5", "-n", "4", "--temperature", "0", "--dtype", "f32", "-q", "--ignore-eos"]
    assert kiln("generate", out, *ids).stdout == kiln("generate", TINY, *ids).stdout
    # A single argument that holds a model is never an OUT_DIR to replace.
    copy = tmp_path / "copy"
    shutil.copytree(TINY, copy)
    before = sorted(p.name for p in copy.iterdir())
    r = kiln("convert", copy, "--force", env=env)
    assert r.returncode == 2 and "holds a model" in r.stderr, r.stderr
    assert sorted(p.name for p in copy.iterdir()) == before


def test_bench_generate_names_the_model_with_a_trailing_slash():
    r = kiln("bench", "generate", "--quick", "--json", "--models", str(TINY) + "/.", "--dtypes", "f32", "--tokens",
             "1", "--prompt-tokens", "2")
    assert r.returncode == 0, r.stderr
    assert [x["name"] for x in json.loads(r.stdout)["results"]] == ["tiny-llama decode f32"]
