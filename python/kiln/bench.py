"""Python-side figures for ``kiln bench``: ``python -m kiln.bench ops [--json]``.

What only Python can show: the cost of calling a kiln op from Python, side by
side with the same call on the peers that are installed (torch, and numpy as a
baseline for any Python-level call). ``kiln bench ops`` runs this module with
the interpreter next to it and merges the results into its own JSON, in the
form of every ``kiln bench`` result (bench/README.md): each entry has name,
median_s, min_s, max_s, and per peer ``peer_median_s[peer]`` /
``speedup_vs_<peer>`` (peer time / kiln time; > 1 means kiln is faster). A
peer that is not installed is a missing column.
"""

import argparse
import importlib
import json
import platform
import statistics
import sys
import time


def _per_call(fn, calls, repeat, warmup):
    """Seconds per call of fn, one sample per batch of `calls` calls."""
    for _ in range(warmup * calls):
        fn()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls)
    return samples


def _entry(name, samples, calls):
    med = statistics.median(samples)
    return {
        "name": name,
        "unit": "ns/call",
        "median_s": med,
        "min_s": min(samples),
        "max_s": max(samples),
        "repeat": len(samples),
        "ns_per_call": med * 1e9,
        "calls_per_sample": calls,
        "bytes": None,
        "gbps": None,
        "roof_gbps": None,
        "roof_fraction": None,
    }


def _peers():
    """{name: module} for the peers importable here."""
    found = {}
    for name in ("torch", "numpy"):
        try:
            found[name] = importlib.import_module(name)
        except ImportError:
            pass
    return found


def _peer_add_1elem(name, mod):
    """A call equivalent to kiln.add(a, b) on two 1-element float32 tensors."""
    if name == "torch":
        a, b = mod.ones(1), mod.ones(1)
        return lambda: mod.add(a, b)
    if name == "numpy":
        a, b = mod.ones(1, mod.float32), mod.ones(1, mod.float32)
        return lambda: mod.add(a, b)
    raise KeyError(name)


def bench_ops(repeat, quick, threads):
    import kiln

    if threads:
        kiln.set_num_threads(threads)
    calls = 2000 if quick else 20000
    warmup = 1 if quick else 2
    peers = _peers()
    results, missing = [], []

    if hasattr(kiln, "add"):
        a, b = kiln.ones(1), kiln.ones(1)
        entry = _entry("py add 1-element dispatch", _per_call(lambda: kiln.add(a, b), calls, repeat, warmup), calls)
        entry["peer_median_s"] = {}
        for pname, mod in peers.items():
            pmed = statistics.median(_per_call(_peer_add_1elem(pname, mod), calls, repeat, warmup))
            entry["peer_median_s"][pname] = pmed
            entry["speedup_vs_" + pname] = pmed / entry["median_s"]
        results.append(entry)
    else:
        missing.append({"name": "py add 1-element dispatch", "why": "kiln.add is not bound in this build"})
    for pname in ("torch",):
        if pname not in peers:
            missing.append({"name": "peer " + pname, "why": pname + " is not installed"})

    return {
        "command": "bench ops (python)",
        "kiln_version": getattr(kiln, "__version__", None),
        "python_version": platform.python_version(),
        "peers": {n: getattr(m, "__version__", None) for n, m in peers.items()},
        "threads": kiln.get_num_threads() if hasattr(kiln, "get_num_threads") else None,
        "repeat": repeat,
        "quick": quick,
        "results": results,
        "missing": missing,
    }


def _print_table(doc):
    peers = sorted(doc["peers"])
    head = f"{'case':34s} {'kiln':>12s}" + "".join(f" {p:>12s}" for p in peers)
    print(head)
    for r in doc["results"]:
        line = f"{r['name']:34s} {r['ns_per_call']:9.0f} ns"
        for p in peers:
            pm = r.get("peer_median_s", {}).get(p)
            line += f" {pm * 1e9:9.0f} ns" if pm else f" {'-':>12s}"
        print(line)
    for m in doc["missing"]:
        print(f"  not measured: {m['name']} ({m['why']})")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kiln.bench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ops = sub.add_parser("ops", help="dispatch overhead of a tiny op from Python, beside the peers")
    ops.add_argument("--json", action="store_true", help="print one JSON object")
    ops.add_argument("--repeat", type=int, default=10, help="timed batches (default 10)")
    ops.add_argument("--quick", action="store_true", help="few calls: a smoke run, not a measurement")
    ops.add_argument("--threads", type=int, default=0, help="kiln threads (default: kiln's)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")
    doc = bench_ops(args.repeat, args.quick, args.threads)
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_table(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
