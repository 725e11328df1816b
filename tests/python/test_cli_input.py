# What kiln's CLI reads: a prompt from a pipe or a file loses exactly one
# trailing newline, text that is not UTF-8 is refused (generate) or skipped
# (chat), and --stop ends the text where a stop string begins. Run on a tiny
# random model with an ASCII tokenizer and a plain chat template
# (tiny_chat_model.py), so each case takes a fraction of a second.
import os
import re
import select
import shutil
import signal
import subprocess
import time

import pytest

from tiny_chat_model import make_tiny_chat_model

pytestmark = pytest.mark.skipif(shutil.which("kiln") is None, reason="kiln CLI not on PATH")

STATS = re.compile(r"prompt (\d+) tokens .* \| (\d+) tokens .* \| stop (\w+)")
GREEDY = ["--temperature", "0", "--ignore-eos"]


def kiln(*args, input=None, env=None, text=True, stdout=subprocess.PIPE):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(["kiln", *map(str, args)], input=input, stdout=stdout, stderr=subprocess.PIPE, text=text,
                          env=e, timeout=300)


def stats(stderr):
    found = [STATS.search(l) for l in stderr.splitlines()]
    return [dict(prompt=int(m[1]), generated=int(m[2]), stop=m[3]) for m in found if m]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return make_tiny_chat_model(tmp_path_factory.mktemp("tiny-chat") / "tiny-chat")


# ---- one trailing newline ------------------------------------------------------------------

@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_prompt_from_stdin_drops_one_trailing_newline(model, ending):
    # The chat template shows what the model reads: `echo "..." | kiln generate --prompt - --chat`
    # must give the same user turn as the text given as an argument.
    want = kiln("generate", model, "--prompt", "Why is the sky blue?", "--chat", "--echo", "-n", "0", "-q")
    assert want.returncode == 0, want.stderr
    assert "<user> Why is the sky blue?\n<assistant> " in want.stdout
    got = kiln("generate", model, "--prompt", "-", "--chat", "--echo", "-n", "0", "-q",
               input="Why is the sky blue?" + ending)
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout


def test_only_one_newline_is_dropped(model):
    want = kiln("generate", model, "--prompt", "two lines\n", "--chat", "--echo", "-n", "0", "-q")
    got = kiln("generate", model, "--prompt", "-", "--chat", "--echo", "-n", "0", "-q", input="two lines\n\n")
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout and "two lines\n\n<assistant>" in got.stdout


def test_prompt_file(model, tmp_path):
    f = tmp_path / "prompt.txt"
    f.write_bytes(b"Once upon a time\r\n")
    want = kiln("generate", model, "--prompt", "Once upon a time", "-n", "8", *GREEDY)
    assert want.returncode == 0, want.stderr
    for flag in ("-f", "--file"):
        got = kiln("generate", model, flag, f, "-n", "8", *GREEDY)
        assert got.returncode == 0, got.stderr
        assert got.stdout == want.stdout
        assert stats(got.stderr)[0]["prompt"] == stats(want.stderr)[0]["prompt"]
    # "-f -" reads stdin the same way.
    got = kiln("generate", model, "-f", "-", "-n", "8", *GREEDY, input="Once upon a time\n")
    assert got.stdout == want.stdout


def test_prompt_file_errors(model, tmp_path):
    r = kiln("generate", model, "-f", tmp_path / "missing.txt")
    assert r.returncode != 0 and "missing.txt" in r.stderr and r.stderr.startswith("kiln: error:")
    r = kiln("generate", model, "-f", tmp_path, "-n", "1")
    assert r.returncode != 0 and "is a directory" in r.stderr
    f = tmp_path / "p.txt"
    f.write_text("hi")
    r = kiln("generate", model, "-f", f, "--prompt", "hi")
    assert r.returncode == 2 and "one way" in r.stderr


def test_tokenize_stdin_matches_generate(model):
    tok = model / "tokenizer.json"
    a = kiln("tokenize", "--tokenizer", tok, "--ids-only", "hello world")
    b = kiln("tokenize", "--tokenizer", tok, "--ids-only", "-", input="hello world\n")
    assert a.returncode == 0 and b.returncode == 0, (a.stderr, b.stderr)
    assert a.stdout == b.stdout


def test_chat_line_crlf(model):
    plain = kiln("chat", model, "-n", "4", *GREEDY, input="hello\n")
    crlf = kiln("chat", model, "-n", "4", *GREEDY, input="hello\r\n")
    assert plain.returncode == 0 and crlf.returncode == 0, (plain.stderr, crlf.stderr)
    assert [s["prompt"] for s in stats(crlf.stderr)] == [s["prompt"] for s in stats(plain.stderr)]
    assert crlf.stdout == plain.stdout


# ---- text that is not UTF-8 ----------------------------------------------------------------

def test_chat_skips_a_line_that_is_not_utf8(model):
    r = kiln("chat", model, "-n", "4", *GREEDY, input=b"hello\n\xff\xfe oops\nbye\n", text=False)
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert err.count("kiln chat: that line is not valid UTF-8; try again") == 1, err
    assert len(stats(err)) == 2, err  # the turns before and after it both ran


def test_chat_refuses_a_system_message_that_is_not_utf8(model):
    r = subprocess.run([b"kiln", b"chat", str(model).encode(), b"--system", b"be \xff brief"], input=b"hello\n",
                       capture_output=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.decode().startswith("kiln: error: --system is not valid UTF-8"), r.stderr


@pytest.mark.parametrize("bad", [b"\xff", b"caf\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"ok \xf4\x90\x80\x80"])
def test_generate_refuses_a_prompt_that_is_not_utf8(model, bad):
    r = kiln("generate", model, "--prompt", "-", "-n", "1", input=bad + b"\n", text=False)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.decode().splitlines()
    assert any(l.startswith("kiln: error: the prompt is not valid UTF-8") for l in lines), lines


# ---- --stop -----------------------------------------------------------------------------------

def first_stop_cut(text, stops):
    """Where the first stop string to complete begins (Python's own string search)."""
    best = None
    for s in stops:
        at = text.find(s)
        if at >= 0 and (best is None or (at + len(s), at) < best):
            best = (at + len(s), at)
    return text if best is None else text[:best[1]]


def test_generate_stop(model):
    base = kiln("generate", model, "--prompt", "hello there", "-n", "60", *GREEDY, "-q")
    assert base.returncode == 0, base.stderr
    text = base.stdout.rstrip("\n")
    assert len(text) > 30, text
    stop = text[20:23]
    want = first_stop_cut(text, [stop])
    r = kiln("generate", model, "--prompt", "hello there", "-n", "60", *GREEDY, "--stop", stop)
    assert r.returncode == 0, r.stderr
    assert r.stdout == want + ("\n" if want else "")
    assert stats(r.stderr)[0]["stop"] == "stop"
    # Repeatable; a stop string that never comes changes nothing.
    two = kiln("generate", model, "--prompt", "hello there", "-n", "60", *GREEDY, "-q", "--stop", "@@never@@",
               "--stop", text[12:14])
    assert two.stdout == first_stop_cut(text, ["@@never@@", text[12:14]]) + "\n"
    never = kiln("generate", model, "--prompt", "hello there", "-n", "60", *GREEDY, "--stop", "@@never@@")
    assert never.stdout == base.stdout and stats(never.stderr)[0]["stop"] == "length"
    # An empty stop string would stop before any text.
    bad = kiln("generate", model, "--prompt", "hi", "--stop", "")
    assert bad.returncode != 0 and "stop" in bad.stderr


def test_chat_stop_cuts_the_reply(model):
    base = kiln("chat", model, "-n", "40", *GREEDY, input="hello\n")
    reply = base.stdout.rstrip("\n")
    assert len(reply) > 20, reply
    stop = reply[10:12]
    r = kiln("chat", model, "-n", "40", *GREEDY, "--stop", stop, input="hello\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout == first_stop_cut(reply, [stop]) + "\n"
    assert stats(r.stderr)[0]["stop"] == "stop"


def test_python_generate_stop(model):
    llm = pytest.importorskip("kiln.llm")
    m = llm.load(str(model), dtype="f32")
    kw = dict(max_tokens=60, temperature=0, stop_at_eos=False)
    text = "".join(m.generate("hello there", **kw))
    assert len(text) > 30
    for stops in ([text[20:23]], text[20:23], [text[25:27], text[8:12]], ("x@@", text[30:31])):
        g = m.generate("hello there", stop=stops, **kw)
        got = "".join(g)
        assert got == first_stop_cut(text, [stops] if isinstance(stops, str) else list(stops)), stops
        assert g.stats["stop_reason"] == "stop"
    g = m.generate("hello there", stop=["@@never@@"], **kw)
    assert "".join(g) == text and g.stats["stop_reason"] == "length"
    with pytest.raises(ValueError, match="empty"):
        m.generate("hello", stop=[""], **kw)
    with pytest.raises(TypeError):
        m.generate("hello", stop=[1], **kw)


# ---- Ctrl-C at an idle chat prompt --------------------------------------------------------------

def read_line(stream, timeout):
    """One line of a pipe, or None after `timeout` seconds."""
    end = time.monotonic() + timeout
    buf = b""
    while not buf.endswith(b"\n"):
        left = end - time.monotonic()
        if left <= 0 or not select.select([stream], [], [], left)[0]:
            return None
        c = os.read(stream.fileno(), 1)
        if not c:
            return buf.decode() or None
        buf += c
    return buf.decode()


def test_ctrl_c_at_an_idle_chat_prompt_exits(model):
    p = subprocess.Popen(["kiln", "chat", str(model), "-n", "4", "-q", *GREEDY], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        p.stdin.write(b"hello\n")
        p.stdin.flush()
        assert read_line(p.stdout, 60) is not None  # the reply came: chat waits for the next line
        time.sleep(0.2)
        p.send_signal(signal.SIGINT)  # stdin stays open
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, p.stderr.read()


def test_ctrl_c_in_chat_stops_a_reply_and_chat_goes_on():
    # With a model slow enough to interrupt mid-reply (the default one, when it is on this machine):
    # the first Ctrl-C stops the reply, the chat takes the next line, and Ctrl-C at the prompt ends it.
    path = os.environ.get("KILN_DEFAULT_MODEL")
    if not path:
        llm = pytest.importorskip("kiln.llm")
        path = llm.default_model_path()  # where it is cached once fetched
    if not os.path.isfile(path):
        pytest.skip("the default model is not on this machine (set KILN_DEFAULT_MODEL)")
    p = subprocess.Popen(["kiln", "chat", path, "-n", "100000", "--ignore-eos", "--context", "4096"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        p.stdin.write(b"Tell me a very long story.\n")
        p.stdin.flush()
        assert os.read(p.stdout.fileno(), 1)  # the reply is streaming
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        assert read_line(p.stdout, 120) is not None  # a line of the reply
        assert p.poll() is None  # and the chat goes on
        p.stdin.write(b"/reset\n")
        p.stdin.flush()
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        p.wait(timeout=30)
        err = p.stderr.read().decode()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err
    assert "stop cancelled" in err and "(conversation reset)" in err, err
