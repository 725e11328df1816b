"""Serving figures for ``kiln bench serve``: ``python -m kiln.bench_serve --kiln PATH --model M [--json]``.

Starts ``kiln serve`` on the model (loopback, a free port) and, with
``--peer-python``, llama.cpp's server (llama-cpp-python's ``llama_cpp.server``)
on the same file, then for each client count runs that many concurrent
streaming clients, each sending ``--requests`` chat requests one after the
other (temperature 0.7, a fixed seed per request, ``--max-tokens`` each; the
prompts differ per client). Per server and client count it reports:

* total tokens/s: streamed tokens of all clients / the case's wall time;
* per-stream tokens/s: the mean over requests of (tokens - 1) / (last - first token);
* time to first token p50 / p99 over the requests;
* how many responses ended complete (a finish reason and ``[DONE]``).

A token is one streamed chunk with content (both servers send one per token).
``--malformed`` sends bad requests (bad JSON, a huge body, invalid UTF-8, an
unknown field, negative limits, a client that stops mid-body) and records each
status, then checks the server still answers. ``--soak SECONDS`` keeps 16
clients busy that long and samples the server's resident memory.
Everything is bounded: each case has a deadline and each request a timeout.
"""

import argparse
import http.client
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import threading
import time

PROMPTS = [
    "Write a short story about a lighthouse keeper.",
    "Explain how a bicycle stays upright.",
    "Describe a walk through a forest in autumn.",
    "Tell me about the history of bread.",
    "What makes a good cup of tea?",
    "Describe the life of a honeybee.",
    "Write a letter to a friend about a trip to the sea.",
    "Explain why the sky is blue to a child.",
]

PEER_SERVER = r"""
import sys, runpy
import llama_cpp.llama_cpp as lc
# ggml's AMX buffer type faults (SIGILL) in VMs that do not grant AMX state:
# extra buffer types off, so plain CPU kernels run (as kiln bench generate does).
_defaults = lc.llama_model_default_params
def _params():
    p = _defaults()
    p.use_extra_bufts = False
    return p
lc.llama_model_default_params = _params
sys.argv = ["llama_cpp.server"] + sys.argv[1:]
runpy.run_module("llama_cpp.server", run_name="__main__")
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_ready(port, proc, timeout=180):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the server exited with status %d" % proc.returncode)
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/v1/models")
            r = c.getresponse()
            r.read()
            c.close()
            if r.status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the server did not answer within %d s" % timeout)


def start_kiln(kiln, model, threads, max_batch, context, dtype="fp8"):
    port = free_port()
    cmd = [kiln, "serve", model, "--port", str(port), "--quiet", "--max-batch", str(max_batch), "--timeout", "5",
           "--context", str(context), "--dtype", dtype]
    if threads:
        cmd += ["--threads", str(threads)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(port, p)
    return p, port


def start_peer(peer_python, model, threads, context):
    port = free_port()
    cmd = [peer_python, "-c", PEER_SERVER, "--model", model, "--port", str(port), "--host", "127.0.0.1",
           "--n_ctx", str(context), "--verbose", "False", "--interrupt_requests", "False"]
    if threads:
        cmd += ["--n_threads", str(threads), "--n_threads_batch", str(threads)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(port, p)
    return p, port


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def one_request(port, prompt, max_tokens, seed, timeout=300):
    """Streams one chat request: (ttft s, per-token times, complete?)."""
    body = json.dumps({"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
                       "temperature": 0.7, "seed": seed, "stream": True})
    t0 = time.perf_counter()
    times = []
    finish, done = None, False
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            r.read()
            return None, [], False
        buf = b""
        while True:
            chunk = r.read1(65536) if hasattr(r, "read1") else r.read(1)
            if not chunk:
                break
            buf += chunk
            while b"\n\n" in buf:
                block, buf = buf.split(b"\n\n", 1)
                block = block.strip()
                if not block.startswith(b"data: "):
                    continue
                if block == b"data: [DONE]":
                    done = True
                    continue
                j = json.loads(block[6:])
                for ch in j.get("choices", []):
                    if (ch.get("delta") or {}).get("content"):
                        times.append(time.perf_counter() - t0)
                    if ch.get("finish_reason"):
                        finish = ch["finish_reason"]
        c.close()
    except (OSError, http.client.HTTPException, ValueError):
        return None, times, False
    return (times[0] if times else None), times, bool(done and finish)


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    k = min(len(xs) - 1, max(0, int(round(q / 100 * (len(xs) - 1)))))
    return xs[k]


def run_case(port, clients, requests, max_tokens, deadline_s):
    results = []
    lock = threading.Lock()
    stop_at = time.time() + deadline_s

    def client(i):
        for k in range(requests):
            if time.time() > stop_at:
                return
            prompt = PROMPTS[i % len(PROMPTS)] + (" (%d)" % i if i >= len(PROMPTS) else "")
            r = one_request(port, prompt, max_tokens, seed=1000 * i + k)
            with lock:
                results.append(r)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    tokens = sum(len(r[1]) for r in results)
    ttfts = [r[0] for r in results if r[0] is not None]
    per_stream = [(len(r[1]) - 1) / (r[1][-1] - r[1][0]) for r in results if len(r[1]) > 1 and r[1][-1] > r[1][0]]
    return {
        "clients": clients,
        "requests": len(results),
        "complete": sum(1 for r in results if r[2]),
        "tokens": tokens,
        "wall_s": wall,
        "total_tokens_per_s": tokens / wall if wall > 0 else None,
        "per_stream_tokens_per_s": statistics.mean(per_stream) if per_stream else None,
        "ttft_p50_s": pct(ttfts, 50),
        "ttft_p99_s": pct(ttfts, 99),
    }


def rss_bytes(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def malformed(port):
    """Bad requests, each with the status it got; then whether the server still serves."""
    def raw(data, timeout=10):
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        try:
            s.sendall(data)
            out = b""
            while b"\r\n\r\n" not in out:
                got = s.recv(4096)
                if not got:
                    break
                out += got
            m = re.match(rb"HTTP/1\.[01] (\d+)", out)
            return int(m.group(1)) if m else None
        except OSError:
            return None
        finally:
            s.close()

    def post(body, extra=b""):
        return raw(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
                   b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    msg = b'"messages": [{"role": "user", "content": "hi"}]'
    cases = {
        "bad json": post(b"{\"messages\": [}"),
        "huge body": post(b"{" + b" " * (8 << 20) + b"}"),
        "invalid utf-8": post(b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}'),
        "unknown field": post(b"{" + msg + b', "frobnicate": true}'),
        "negative max_tokens": post(b"{" + msg + b', "max_tokens": -5}'),
        "negative n": post(b"{" + msg + b', "n": -1}'),
        "not an object": post(b"[1, 2, 3]"),
        "body shorter than its length": raw(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                                            b"Content-Length: 100\r\n\r\n{\"mess", timeout=60),
    }
    ok, _, done = one_request(port, "Say hi.", 4, seed=1)
    return {"statuses": cases, "all_4xx": all(s is not None and 400 <= s < 500 for s in cases.values()),
            "serving_after": bool(done)}


def soak(port, pid, seconds, max_tokens):
    samples, counts = [], {"requests": 0, "complete": 0}
    lock = threading.Lock()
    stop_at = time.time() + seconds

    def client(i):
        k = 0
        while time.time() < stop_at:
            r = one_request(port, PROMPTS[i % len(PROMPTS)], max_tokens, seed=i * 100000 + k)
            k += 1
            with lock:
                counts["requests"] += 1
                counts["complete"] += bool(r[2])

    threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
    t0 = time.time()
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        samples.append((round(time.time() - t0, 1), rss_bytes(pid)))
        time.sleep(min(10.0, max(1.0, seconds / 30)))
    for t in threads:
        t.join()
    rss = [s[1] for s in samples if s[1]]
    half = rss[len(rss) // 2:] or rss
    return dict(counts, seconds=seconds, rss_samples=samples,
                rss_first_mib=rss[0] / 2**20 if rss else None, rss_last_mib=rss[-1] / 2**20 if rss else None,
                rss_max_mib=max(rss) / 2**20 if rss else None,
                rss_growth_second_half_mib=(max(half) - min(half)) / 2**20 if half else None)


def bench_serve(args):
    doc = {"python_version": platform.python_version(), "results": [], "missing": [],
           "model": args.model, "max_tokens": args.max_tokens, "requests_per_client": args.requests}
    clients = [int(c) for c in args.clients.split(",")]
    dtypes = args.dtypes.split(",")
    servers = [("kiln" if d == "fp8" else "kiln " + d,
                lambda d=d: start_kiln(args.kiln, args.model, args.threads, max(clients), args.context, d))
               for d in dtypes]
    if args.peer_python:
        servers.append(("llama.cpp", lambda: start_peer(args.peer_python, args.model, args.threads, args.context)))
    else:
        doc["missing"].append({"name": "llama.cpp server", "why": "no --peer-python with llama-cpp-python[server]"})
    by = {}
    for name, start in servers:
        try:
            proc, port = start()
        except (RuntimeError, OSError) as e:
            doc["missing"].append({"name": name + " server", "why": str(e)})
            continue
        try:
            one_request(port, "Hello", 4, seed=0)  # warm up
            for c in clients:
                r = run_case(port, c, args.requests if c > 1 else max(args.requests, 4), args.max_tokens,
                             args.case_timeout)
                r.update(name="serve %s %d clients" % (name, c), server=name, median_s=r["wall_s"])
                doc["results"].append(r)
                by[(name, c)] = r
                print("  %s, %d clients: %.1f tok/s total" % (name, c, r["total_tokens_per_s"] or 0),
                      file=sys.stderr, flush=True)
            if name == servers[0][0] and args.malformed:
                doc["malformed"] = malformed(port)
            if name == servers[0][0] and args.soak > 0:
                doc["soak"] = soak(port, proc.pid, args.soak, args.max_tokens)
        finally:
            stop(proc)
    # The ratios, from this run.
    ratios = {}
    p16 = by.get(("llama.cpp", 16))
    for name, _ in servers:
        if name == "llama.cpp":
            continue
        k1, k16 = by.get((name, 1)), by.get((name, 16))
        key = name.replace(" ", "_")
        if k1 and k16 and k1["total_tokens_per_s"]:
            ratios[key + "_16_over_1_clients"] = k16["total_tokens_per_s"] / k1["total_tokens_per_s"]
        if k16 and p16 and p16["total_tokens_per_s"]:
            ratios[key + "_over_llama_cpp_16_clients"] = k16["total_tokens_per_s"] / p16["total_tokens_per_s"]
            ratios["ttft_p99_s_16_clients_%s_vs_llama_cpp" % key] = [k16["ttft_p99_s"], p16["ttft_p99_s"]]
    doc["ratios"] = ratios
    return doc


def table(doc):
    lines = ["%-12s %7s %12s %12s %10s %10s %9s" % ("server", "clients", "total tok/s", "stream tok/s",
                                                  "ttft p50", "ttft p99", "complete")]
    f = lambda v, fmt: fmt % v if v is not None else "-"
    for r in doc["results"]:
        lines.append("%-12s %7d %12s %12s %10s %10s %5d/%-3d" % (
            r["server"], r["clients"], f(r["total_tokens_per_s"], "%.1f"), f(r["per_stream_tokens_per_s"], "%.1f"),
            f(r["ttft_p50_s"], "%.3f s"), f(r["ttft_p99_s"], "%.3f s"), r["complete"], r["requests"]))
    for k, v in doc.get("ratios", {}).items():
        lines.append("%s: %s" % (k, json.dumps(v)))
    if "malformed" in doc:
        lines.append("malformed requests: %s; serving after: %s" % (
            json.dumps(doc["malformed"]["statuses"]), doc["malformed"]["serving_after"]))
    if "soak" in doc:
        s = doc["soak"]
        lines.append("soak %d s: %d/%d complete, RSS %.1f -> %.1f MiB (max %.1f)" % (
            s["seconds"], s["complete"], s["requests"], s["rss_first_mib"] or 0, s["rss_last_mib"] or 0,
            s["rss_max_mib"] or 0))
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m kiln.bench_serve", description=__doc__.splitlines()[0])
    p.add_argument("--kiln", required=True, help="the kiln binary")
    p.add_argument("--model", required=True, help="a .gguf file both servers load")
    p.add_argument("--clients", default="1,4,16,64", help="comma-separated client counts (default 1,4,16,64)")
    p.add_argument("--requests", type=int, default=2, help="requests per client, one after another (default 2; 4 at 1 client)")
    p.add_argument("--max-tokens", type=int, default=64, help="tokens per request (default 64)")
    p.add_argument("--context", type=int, default=2048, help="each server's context (default 2048)")
    p.add_argument("--threads", type=int, default=0, help="threads of each server (default: their own)")
    p.add_argument("--dtypes", default="fp8", help="kiln's weight formats, each its own server (default fp8)")
    p.add_argument("--case-timeout", type=float, default=600, help="no new request starts after this many s of a case")
    p.add_argument("--peer-python", default=None, help="a Python with llama-cpp-python[server]")
    p.add_argument("--malformed", action=argparse.BooleanOptionalAction, default=True,
                   help="send bad requests to kiln and record the statuses (default on)")
    p.add_argument("--soak", type=float, default=0, help="seconds of 16 busy clients on kiln, watching its memory")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    doc = bench_serve(args)
    doc["table"] = table(doc)
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(doc["table"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
