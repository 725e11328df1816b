"""Draw the JSON of a ``kiln bench ...`` run as a PNG (``kiln bench linear --plot out.png``).

    python -m kiln.bench_plot RESULT.json OUT.png

Memory-bound results are drawn as their fraction of the read roof measured in the
same run (one bar group per case, one bar per weight kind), with the roof at 1.0;
results without a roof fraction are drawn as median time. Peer speedups, where
present, are written above the bars. Needs matplotlib.
"""
import argparse
import json
import sys
from collections import OrderedDict


def series_and_case(result):
    """'linear bf16 Qwen3-4B q_proj 4096x2560' -> ('linear bf16', 'Qwen3-4B q_proj 4096x2560')."""
    parts = result["name"].split(" ")
    if len(parts) >= 3:
        return " ".join(parts[:2]), " ".join(parts[2:])
    return result["name"], result["name"]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m kiln.bench_plot", description=__doc__.splitlines()[0])
    ap.add_argument("result", help="JSON written by `kiln bench ... --json` or `--out`")
    ap.add_argument("out", help="PNG to write")
    args = ap.parse_args(argv)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("kiln bench --plot needs matplotlib in kiln's Python: .venv/bin/pip install matplotlib")
    with open(args.result, encoding="utf-8") as f:
        doc = json.load(f)
    results = [r for r in doc.get("results", []) if "median_s" in r]
    if not results:
        sys.exit(f"{args.result}: no results to plot")
    by_roof = any(r.get("roof_fraction") for r in results)
    metric = "roof_fraction" if by_roof else "median_s"
    results = [r for r in results if r.get(metric)]

    series, cases = OrderedDict(), OrderedDict()
    for r in results:
        s, c = series_and_case(r)
        series.setdefault(s, {})[c] = r
        cases.setdefault(c, None)
    cases = list(cases)
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(8, 0.45 * len(cases) * max(1, len(series)) + 2), 5.5))
    for i, (s, rows) in enumerate(series.items()):
        xs = [j + (i - (len(series) - 1) / 2) * width for j, c in enumerate(cases) if c in rows]
        ys = [rows[c][metric] * (1 if by_roof else 1e3) for c in cases if c in rows]
        bars = ax.bar(xs, ys, width, label=s)
        for b, c in zip(bars, [c for c in cases if c in rows]):
            peer = next((k for k in rows[c] if k.startswith("speedup_vs_")), None)
            if peer:
                ax.annotate(f"{rows[c][peer]:.1f}x", (b.get_x() + b.get_width() / 2, b.get_height()),
                            ha="center", va="bottom", fontsize=6, rotation=90)
    if by_roof:
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
        ax.set_ylabel("fraction of the measured read roof")
    else:
        ax.set_ylabel("median time per call (ms)")
    machine = doc.get("machine", {})
    roof = machine.get("roof", {})
    roof_txt = f", roof {roof.get('median_gbps', 0):.1f} GB/s" if isinstance(roof, dict) and roof else ""
    ax.set_title(f"kiln {doc.get('kiln_version', '')} {doc.get('command', '')}: "
                 f"{machine.get('cpu_model', '')}, {machine.get('threads', '')} threads{roof_txt}", fontsize=9)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(cases, rotation=70, ha="right", fontsize=7)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
