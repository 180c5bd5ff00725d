#!/usr/bin/env python3
"""siftdb's point-read ratio to RocksDB against keys, from alternating runs.

Reads runs-<size>.txt in this folder (lines of ../2026-11-30-alternating-reads/run.sh:
`round=R <bench> threads=T engine=E ops=N`), prints a Markdown table of the medians and their
ratio per size, benchmark and thread count, and writes ratio_vs_keys.svg: siftdb's median over
RocksDB's, one line per benchmark and thread count, keys on a log scale. Usage: python3 plot.py
"""
import math
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = [("1m", 1_000_000), ("10m", 10_000_000), ("50m", 50_000_000), ("100m", 100_000_000)]
LINE = re.compile(r"round=(\d+) (\w+) threads=(\d+) engine=(\w+) ops=(\d+)")


def load():
    """{(bench, threads, num): {engine: [ops, ...]}} over the runs files present."""
    runs = {}
    for tag, num in SIZES:
        path = os.path.join(HERE, f"runs-{tag}.txt")
        if not os.path.exists(path):
            continue
        for line in open(path):
            m = LINE.match(line.strip())
            if m and m.group(5) != "0":
                _, bench, threads, engine, ops = m.groups()
                runs.setdefault((bench, int(threads), num), {}).setdefault(engine, []).append(int(ops))
    return runs


def svg(series, path):
    """A line chart: x = keys (log scale), y = ratio, one polyline per series, 2.0 dashed."""
    W, H, L, R, T, B = 640, 360, 60, 170, 20, 40
    xs = sorted({x for pts in series.values() for x, _ in pts})
    ys = [y for pts in series.values() for _, y in pts] + [1.0, 2.0]
    lo, hi = 0.0, math.ceil(max(ys) * 2) / 2
    x0, x1 = math.log10(xs[0]), math.log10(xs[-1])
    px = lambda x: L + (math.log10(x) - x0) / ((x1 - x0) or 1) * (W - L - R)
    py = lambda y: T + (hi - y) / (hi - lo) * (H - T - B)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>']
    for k in range(int(hi * 2) + 1):
        y = k / 2
        o.append(f'<line x1="{L}" x2="{W - R}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{L - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:.1f}x</text>')
    o.append(f'<line x1="{L}" x2="{W - R}" y1="{py(2):.1f}" y2="{py(2):.1f}" stroke="#888" '
             'stroke-dasharray="6 4"/>')
    for x in xs:
        label = f"{x // 1_000_000}M"
        o.append(f'<text x="{px(x):.1f}" y="{H - B + 18}" text-anchor="middle">{label}</text>')
    o.append(f'<text x="{(L + W - R) / 2}" y="{H - 6}" text-anchor="middle">keys</text>')
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]
    for i, (name, pts) in enumerate(sorted(series.items())):
        c = colours[i % len(colours)]
        p = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in sorted(pts))
        o.append(f'<polyline points="{p}" fill="none" stroke="{c}" stroke-width="2"/>')
        for x, y in pts:
            o.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{c}"/>')
        ly = T + 14 + 18 * i
        o.append(f'<line x1="{W - R + 10}" x2="{W - R + 30}" y1="{ly - 4}" y2="{ly - 4}" '
                 f'stroke="{c}" stroke-width="2"/>')
        o.append(f'<text x="{W - R + 36}" y="{ly}">{name}</text>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def main():
    runs = load()
    if not runs:
        sys.exit("plot.py: no runs-<size>.txt here")
    print("| keys | benchmark | threads | siftdb median | RocksDB median | ratio | per-round ratios |")
    print("|---|---|---|---|---|---|---|")
    series = {}
    for (bench, threads, num) in sorted(runs, key=lambda k: (k[2], k[0], k[1])):
        r = runs[(bench, threads, num)]
        s, k = r.get("siftdb", []), r.get("rocksdb", [])
        if not s or not k:
            continue
        ratio = statistics.median(s) / statistics.median(k)
        rounds = ", ".join(f"{a / b:.2f}" for a, b in zip(s, k))
        print(f"| {num // 1_000_000}M | {bench} | {threads} | {statistics.median(s):,.0f} | "
              f"{statistics.median(k):,.0f} | {ratio:.2f}x | {rounds} |")
        series.setdefault(f"{bench} t{threads}", []).append((num, ratio))
    svg(series, os.path.join(HERE, "ratio_vs_keys.svg"))


if __name__ == "__main__":
    main()
