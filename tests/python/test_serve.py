"""`kiln serve` over HTTP with the default model: OpenAI's request and response
shapes, streaming, continuous batching (concurrent requests give what each gives
alone), cancellation, prefix reuse, limits and errors, and the openai client."""
import http.client
import json
import re
import socket
import subprocess
import threading
import time

import pytest

from io_util import kiln_cli
from test_cli_generate import cached_default_model

KEY = "test-key-123"


def start_server(model, *args):
    cli = kiln_cli()
    p = subprocess.Popen([cli, "serve", str(model), "--port", "0", "--context", "2048", "--quiet", *args],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        line = p.stderr.readline()
        if not line:
            break
        m = re.search(r"on http://127\.0\.0\.1:(\d+)", line)
        if m:
            return p, int(m.group(1))
    p.kill()
    pytest.fail("kiln serve did not start: " + (p.stderr.read() or ""))


@pytest.fixture(scope="module")
def server():
    model = cached_default_model()
    if model is None or kiln_cli() is None:
        pytest.skip("needs the kiln CLI and the default model (scripts/test fetches it)")
    p, port = start_server(model, "--api-key", KEY, "--max-batch", "8", "--max-body", "65536")
    yield port
    p.terminate()
    assert p.wait(timeout=30) == 0


def request(port, method, path, body=None, key=KEY, raw=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    h = {"Content-Type": "application/json", **(headers or {})}
    if key:
        h["Authorization"] = "Bearer " + key
    data = raw if raw is not None else (json.dumps(body) if body is not None else None)
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    out = r.read()
    c.close()
    return r.status, out


def post(port, path, body, **kw):
    st, out = request(port, "POST", path, body, **kw)
    return st, json.loads(out)


def stream(port, path, body):
    """The parsed chunks of a streamed response, and whether it ended with [DONE]."""
    st, out = request(port, "POST", path, dict(body, stream=True))
    assert st == 200, out
    chunks, done = [], False
    for block in out.decode().split("\n\n"):
        if not block.strip():
            continue
        assert block.startswith("data: "), block
        if block == "data: [DONE]":
            done = True
            continue
        assert not done, "data after [DONE]"
        chunks.append(json.loads(block[6:]))
    return chunks, done


def warm(port, path, body):
    """Runs a request once and forgets it. The server then holds its prompt's
    cache, so the same prompt again takes the same path (the prefix reused, the
    last prompt token run alone), and equal requests give equal numbers: a first
    full prefill rounds differently in the last bits (its matrix products see
    many rows), which a near tie in the logits can turn into another token."""
    st, _ = post(port, path, dict(body, stream=False))
    assert st == 200


def chat(content, **kw):
    return dict({"messages": [{"role": "user", "content": content}], "temperature": 0, "max_tokens": 24}, **kw)


def test_health_models_and_page(server):
    assert request(server, "GET", "/health", key=None) == (200, b'{"status":"ok"}')
    st, models = request(server, "GET", "/v1/models")
    models = json.loads(models)
    assert st == 200 and models["object"] == "list"
    assert models["data"][0]["id"] == "SmolLM2-135M-Instruct.Q4_1"
    st, page = request(server, "GET", "/", key=None)
    assert st == 200 and b"<title>kiln chat</title>" in page and b"/v1/chat/completions" in page


def test_chat_completion_shape(server):
    st, r = post(server, "/v1/chat/completions", chat("What is the capital of France?"))
    assert st == 200, r
    assert r["object"] == "chat.completion" and r["id"].startswith("chatcmpl-")
    c = r["choices"][0]
    assert c["index"] == 0 and c["message"]["role"] == "assistant"
    assert "Paris" in c["message"]["content"]
    assert c["finish_reason"] in ("stop", "length")
    u = r["usage"]
    assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"] and u["completion_tokens"] > 0


def test_stream_equals_whole_response(server):
    body = chat("Name three colours.", max_tokens=20)
    warm(server, "/v1/chat/completions", body)
    _, whole = post(server, "/v1/chat/completions", body)
    chunks, done = stream(server, "/v1/chat/completions", dict(body, stream_options={"include_usage": True}))
    assert done
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == whole["choices"][0]["message"]["content"]
    finals = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert finals == [whole["choices"][0]["finish_reason"]]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == whole["usage"]


def test_completions_length_stop_and_echo(server):
    body = {"prompt": "One, two, three, four,", "max_tokens": 6, "temperature": 0}
    warm(server, "/v1/completions", body)
    st, r = post(server, "/v1/completions", body)
    assert st == 200 and r["object"] == "text_completion"
    c = r["choices"][0]
    assert c["finish_reason"] == "length" and r["usage"]["completion_tokens"] == 6
    # A stop string cuts the text just before it.
    first = c["text"].strip()[:2]
    st, r2 = post(server, "/v1/completions", dict(body, stop=[first]))
    assert r2["choices"][0]["finish_reason"] == "stop"
    assert first not in r2["choices"][0]["text"] and c["text"].startswith(r2["choices"][0]["text"])
    st, r3 = post(server, "/v1/completions", dict(body, echo=True))
    assert r3["choices"][0]["text"] == body["prompt"] + c["text"]


def test_concurrent_requests_equal_each_alone(server):
    prompts = ["Tell me about the sea.", "What is 2 + 2?", "Write a haiku about rain.", "Who wrote Hamlet?",
               "List four fruits.", "Why is the sky blue?"]
    for p in prompts:
        warm(server, "/v1/chat/completions", chat(p, max_tokens=32))
    alone = [post(server, "/v1/chat/completions", chat(p, max_tokens=32))[1]["choices"][0]["message"]["content"]
             for p in prompts]
    got = [None] * len(prompts)

    def run(i):
        got[i] = post(server, "/v1/chat/completions", chat(prompts[i], max_tokens=32))[1]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Batched rows may round differently from one row alone (bf16 activations
    # in the batch's matrix products), so a near tie may flip late in a reply:
    # most replies are equal, and every reply starts the same way.
    same = sum(g["choices"][0]["message"]["content"] == a for g, a in zip(got, alone))
    assert same >= len(prompts) - 2, (got, alone)
    for g, a in zip(got, alone):
        assert g["choices"][0]["message"]["content"][:8] == a[:8]


def test_n_choices_and_seed(server):
    body = chat("Say something.", max_tokens=12, temperature=1.0, n=3, seed=7)
    warm(server, "/v1/chat/completions", body)
    st, r = post(server, "/v1/chat/completions", body)
    assert st == 200 and [c["index"] for c in r["choices"]] == [0, 1, 2]
    texts = [c["message"]["content"] for c in r["choices"]]
    assert len(set(texts)) > 1  # each choice samples with its own seed
    # The same seed on the same path draws the same tokens.
    assert [c["message"]["content"] for c in post(server, "/v1/chat/completions", body)[1]["choices"]] == texts
    st, g = post(server, "/v1/chat/completions", chat("Say something.", max_tokens=12, n=2))
    assert g["choices"][0]["message"] == g["choices"][1]["message"]  # greedy choices agree


def test_logprobs(server):
    st, r = post(server, "/v1/chat/completions", chat("Hi", max_tokens=5, logprobs=True, top_logprobs=3))
    content = r["choices"][0]["logprobs"]["content"]
    assert len(content) == r["usage"]["completion_tokens"]
    for t in content:
        top = t["top_logprobs"]
        assert len(top) == 3 and all(a["logprob"] >= b["logprob"] for a, b in zip(top, top[1:]))
        assert t["logprob"] <= 0 and sum(2.718281828 ** a["logprob"] for a in top) <= 1 + 1e-5
        assert t["token"] == top[0]["token"] and abs(t["logprob"] - top[0]["logprob"]) < 1e-6  # greedy
        assert bytes(t["bytes"]).decode("utf-8", "replace") == t["token"]


def test_prefix_of_a_finished_request_is_reused(server):
    def reused():
        _, m = request(server, "GET", "/metrics", key=None)
        return int(re.search(rb"^kiln_prompt_tokens_reused_total (\d+)$", m, re.M).group(1))

    long_system = "You are a careful assistant. " * 20
    msgs = [{"role": "system", "content": long_system}, {"role": "user", "content": "Hello"}]
    post(server, "/v1/chat/completions", {"messages": msgs, "max_tokens": 4, "temperature": 0})
    before = reused()
    msgs[1]["content"] = "Good morning"
    post(server, "/v1/chat/completions", {"messages": msgs, "max_tokens": 4, "temperature": 0})
    assert reused() - before >= 100  # the system prompt's tokens were not computed again


def test_disconnect_frees_the_slot(server):
    def metric(name):
        _, m = request(server, "GET", "/metrics", key=None)
        return int(re.search(rb"^" + name.encode() + rb" (\d+)$", m, re.M).group(1))

    before = metric("kiln_requests_cancelled_total")
    s = socket.create_connection(("127.0.0.1", server))
    body = json.dumps(chat("Count to a thousand.", max_tokens=1500, ignore_eos=True, stream=True)).encode()
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
              b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    got = b""
    while b"data: " not in got:
        got += s.recv(4096)
    s.close()
    deadline = time.time() + 10
    while time.time() < deadline and (metric("kiln_requests_cancelled_total") == before
                                      or metric("kiln_running_sequences") != 0):
        time.sleep(0.05)
    assert metric("kiln_requests_cancelled_total") == before + 1
    assert metric("kiln_running_sequences") == 0


@pytest.mark.parametrize("body,param", [
    ({"messages": []}, "messages"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": "x"}], "max_tokens": -1}, "max_tokens"),
    ({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}, "temperature"),
    ({"messages": [{"role": "user", "content": "x"}], "bogus_field": 1}, "bogus_field"),
    ({"messages": [{"role": "user", "content": "x"}], "n": 0}, "n"),
    ({"messages": [{"role": "user", "content": "x"}], "stop": [""]}, "stop"),
    ({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 3}, "top_logprobs"),
    ({"messages": [{"role": "user", "content": "x"}], "max_tokens": 10 ** 30}, "max_tokens"),
    ({"prompt": 5}, "prompt"),
])
def test_bad_requests_get_400_with_openai_error(server, body, param):
    path = "/v1/completions" if "prompt" in body else "/v1/chat/completions"
    st, r = post(server, path, body)
    assert st == 400, r
    assert r["error"]["type"] == "invalid_request_error" and r["error"]["param"] == param, r
    assert r["error"]["message"]


def test_malformed_bodies_and_auth(server):
    for raw in (b"{not json", b"\xff\xfe{}", '{"prompt": "caf\xe9"}'.encode("latin-1"), b"[1, 2]", b""):
        st, out = request(server, "POST", "/v1/completions", raw=raw)
        assert st == 400, (raw, out)
        assert json.loads(out)["error"]["type"] == "invalid_request_error"
    st, out = request(server, "POST", "/v1/completions", raw=b"{" + b" " * 70000 + b"}")
    assert st == 413 and "larger than" in json.loads(out)["error"]["message"]
    st, out = request(server, "POST", "/v1/chat/completions", chat("x"), key=None)
    assert st == 401 and json.loads(out)["error"]["type"] == "authentication_error"
    st, out = request(server, "POST", "/v1/chat/completions", chat("x"), key="wrong")
    assert st == 401
    st, out = request(server, "GET", "/v1/nothing")
    assert st == 404 and json.loads(out)["error"]["message"]
    # Still serving.
    assert post(server, "/v1/chat/completions", chat("Hi", max_tokens=2))[0] == 200


def test_metrics_are_prometheus_text(server):
    st, m = request(server, "GET", "/metrics", key=None)
    text = m.decode()
    assert st == 200
    for name in ("kiln_requests_total", "kiln_generated_tokens_total", "kiln_queue_requests",
                 "kiln_time_to_first_token_seconds_bucket", "kiln_request_seconds_count"):
        assert name in text
    assert re.search(r'^kiln_requests_total\{endpoint="/v1/chat/completions",status="200"\} \d+$', text, re.M)
    for line in text.splitlines():
        assert line.startswith("#") or re.match(r"^[a-z_]+(\{[^}]*\})? [0-9.e+-]+$", line), line


def test_openai_client(server):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{server}/v1", api_key=KEY)
    warm(server, "/v1/chat/completions", chat("What is the capital of France?", max_tokens=16))
    r = client.chat.completions.create(model="SmolLM2-135M-Instruct.Q4_1", temperature=0, max_tokens=16,
                                       messages=[{"role": "user", "content": "What is the capital of France?"}])
    assert "Paris" in r.choices[0].message.content
    parts = client.chat.completions.create(model="x", temperature=0, max_tokens=16, stream=True,
                                           messages=[{"role": "user", "content": "What is the capital of France?"}])
    text = "".join(p.choices[0].delta.content or "" for p in parts if p.choices)
    assert text == r.choices[0].message.content
    c = client.completions.create(model="x", prompt="The capital of France is", max_tokens=3, temperature=0)
    assert c.choices[0].text
    assert [m.id for m in client.models.list()] == ["SmolLM2-135M-Instruct.Q4_1"]
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="x", messages=[], max_tokens=3)


def test_python_embedding():
    kiln = pytest.importorskip("kiln")
    model = cached_default_model()
    if model is None:
        pytest.skip("needs the default model")
    m = kiln.llm.load(str(model), max_context=1024)
    with kiln.serve(m, port=0, block=False, name="smol", api_key="k") as s:
        assert s.url == f"http://127.0.0.1:{s.port}"
        st, r = post(s.port, "/v1/chat/completions", chat("What is the capital of France?"), key="k")
        assert st == 200 and "Paris" in r["choices"][0]["message"]["content"]
        st, models = request(s.port, "GET", "/v1/models", key="k")
        assert json.loads(models)["data"][0]["id"] == "smol"
        port = s.port
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2)
    # The model is the caller's again.
    assert m.position == 0 and "".join(m.generate("Hi", max_tokens=3, temperature=0))
    with pytest.raises(TypeError):
        kiln.llm.Server(m, port=0, max_batch="many")


def test_completion_logprobs_stream_offsets(server):
    body = {"prompt": "The capital of France is", "max_tokens": 5, "temperature": 0, "logprobs": 2, "echo": True}
    warm(server, "/v1/completions", body)
    _, whole = post(server, "/v1/completions", body)
    lp = whole["choices"][0]["logprobs"]
    text = whole["choices"][0]["text"]
    assert len(lp["tokens"]) == 5 and all(len(t) <= 2 for t in lp["top_logprobs"])
    for tok, off in zip(lp["tokens"], lp["text_offset"]):
        assert text[off:off + len(tok)] == tok  # offsets index the choice's text (after the echoed prompt)
    chunks, _ = stream(server, "/v1/completions", body)
    offs = [o for c in chunks if c["choices"] and c["choices"][0]["logprobs"]
            for o in c["choices"][0]["logprobs"]["text_offset"]]
    assert offs == lp["text_offset"]


def test_bench_serve_quick_json():
    model = cached_default_model()
    if model is None or kiln_cli() is None:
        pytest.skip("needs the kiln CLI and the default model")
    r = subprocess.run([kiln_cli(), "bench", "serve", str(model), "--quick", "--json"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["command"] == "bench serve" and doc["machine"]["cpu_model"]
    cases = {(x["server"], x["clients"]): x for x in doc["results"]}
    assert set(cases) == {("kiln", 1), ("kiln", 2)}
    for x in cases.values():
        assert x["complete"] == x["requests"] > 0 and x["tokens"] > 0
        assert x["total_tokens_per_s"] > 0 and x["ttft_p50_s"] <= x["ttft_p99_s"]
    m = doc["malformed"]
    assert m["all_4xx"] and m["serving_after"], m
    assert m["statuses"]["huge body"] == 413


PERSON = {"type": "object", "additionalProperties": False, "required": ["name", "age", "likes"],
          "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                         "likes": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                         "mood": {"enum": ["happy", "sad", None]}}}


def check_person(v):
    assert isinstance(v, dict) and set(v) <= set(PERSON["properties"]) and {"name", "age", "likes"} <= set(v), v
    assert isinstance(v["name"], str) and isinstance(v["age"], int) and not isinstance(v["age"], bool)
    assert isinstance(v["likes"], list) and len(v["likes"]) <= 3 and all(isinstance(x, str) for x in v["likes"])
    assert v.get("mood", None) in ("happy", "sad", None)


def test_response_format_json_schema(server):
    fmt = {"type": "json_schema", "json_schema": {"name": "person", "strict": True, "schema": PERSON}}
    body = chat("Describe a person named Ada, aged 36, as JSON.", max_tokens=120, response_format=fmt)
    st, r = post(server, "/v1/chat/completions", body)
    assert st == 200, r
    v = json.loads(r["choices"][0]["message"]["content"])
    check_person(v)
    assert v["name"] == "Ada" and r["choices"][0]["finish_reason"] == "stop"
    # Sampled at temperature 1 too: every choice is a valid document (or cut by max_tokens).
    st, r = post(server, "/v1/chat/completions", dict(body, temperature=1.0, n=4, seed=11, max_tokens=200))
    for c in r["choices"]:
        if c["finish_reason"] == "stop":
            check_person(json.loads(c["message"]["content"]))


def test_response_format_json_object_streams(server):
    body = chat("Give me a JSON object about Paris.", max_tokens=80, temperature=0.8, seed=3,
                response_format={"type": "json_object"})
    chunks, done = stream(server, "/v1/chat/completions", body)
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    if finish == ["stop"]:
        assert isinstance(json.loads(text), dict)
    assert text.lstrip().startswith("{")


@pytest.mark.parametrize("fmt,param", [
    ({"type": "json_schema", "json_schema": {"schema": {"anyOf": [{"type": "string"}]}}},
     "response_format.json_schema.schema"),
    ({"type": "json_schema", "json_schema": {"schema": {"type": "string", "pattern": "a"}}},
     "response_format.json_schema.schema"),
    ({"type": "json_schema", "json_schema": {"name": "x"}}, "response_format.json_schema"),
    ({"type": "xml"}, "response_format.type"),
])
def test_unsupported_schemas_are_refused(server, fmt, param):
    st, r = post(server, "/v1/chat/completions", chat("x", response_format=fmt))
    assert st == 400 and r["error"]["param"] == param, r
