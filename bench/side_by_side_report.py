#!/usr/bin/env python3
"""The report of bench/side-by-side.sh: one Markdown table of the load runs (median over rounds,
ratios vs Istio), the CPU-per-injection comparison, and a PNG plot of throughput and p99 against
the number of admissions in flight.

Usage: bench/side_by_side_report.py OUT_DIR PLOT.png   (OUT_DIR as side-by-side.sh leaves it)
"""
import csv
import os
import re
import statistics
import sys

SERVERS = [
    ("istio", "Istio"),
    ("cached", "ours, outcome cache"),
    ("engine", "ours, engine every admission"),
    ("ceiling", "our server, canned real patch (ceiling)"),
    ("istio-distinct", "Istio, 1,000 distinct pods (webhook_client)"),
    ("engine-distinct", "ours, engine every admission, 1,000 distinct pods (webhook_client)"),
    ("ceiling-distinct", "ceiling, 1,000 distinct pods (webhook_client)"),
]


def load_runs(path):
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def med(rows, key):
    return statistics.median(float(r[key]) for r in rows)


def ratio(x, base):
    return f"{x / base:.1f}×" if base else "–"


def load_table(runs):
    """Ratios against Istio's row: the repeated review's for the repeated-review rows, the
    distinct pods' (when measured, else the repeated review's) for the distinct-pod rows."""
    inflights = sorted({int(r["inflight"]) for r in runs})
    lines = [
        "| in flight | server | admissions/s | p50 ms | p99 ms | CPU ms/admission | peak RSS MB | start to ready ms | status 0 | failed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    summary = {}
    for n in inflights:
        bases = {}
        for kind, label in SERVERS:
            rows = [r for r in runs if r["server"] == kind and int(r["inflight"]) == n]
            if not rows:
                continue
            s = {k: med(rows, k) for k in ("rps", "p50_ms", "p99_ms", "cpu_ms", "rss_kb", "ready_ms")}
            s["status0"] = sum(int(r["status0"]) for r in rows)
            s["failed"] = sum(int(r["failed"]) for r in rows)
            summary[(kind, n)] = s
            group = "distinct" if kind.endswith("-distinct") else "repeated"
            if kind in ("istio", "istio-distinct"):
                bases[group] = s
                lines.append(
                    f"| {n} | {label} | {s['rps']:,.0f} | {s['p50_ms']:.2f} | {s['p99_ms']:.2f} | {s['cpu_ms']:.2f} | "
                    f"{s['rss_kb'] / 1024:.1f} | {s['ready_ms']:.0f} | {s['status0']} | {s['failed']} |")
                continue
            b = bases.get(group) or bases.get("repeated") or s
            lines.append(
                f"| {n} | {label} | {s['rps']:,.0f} ({ratio(s['rps'], b['rps'])}) | {s['p50_ms']:.2f} "
                f"(÷{b['p50_ms'] / s['p50_ms']:.1f}) | {s['p99_ms']:.2f} (÷{b['p99_ms'] / s['p99_ms']:.1f}) | "
                f"{s['cpu_ms']:.3f} (÷{b['cpu_ms'] / s['cpu_ms']:.1f}) | {s['rss_kb'] / 1024:.1f} | {s['ready_ms']:.0f} | "
                f"{s['status0']} | {s['failed']} |")
    return "\n".join(lines), summary, inflights


def ceiling_shares(summary, inflights):
    """The engine's throughput as a share of the ceiling's, same load tool on both sides, and the
    distinct pods' CPU per admission against Istio's."""
    lines = []
    for n in inflights:
        for engine, ceiling, what in (("engine", "ceiling", "one review repeated (h2load)"),
                                      ("engine-distinct", "ceiling-distinct", "1,000 distinct reviews (webhook_client)")):
            e, c = summary.get((engine, n)), summary.get((ceiling, n))
            if e and c and c["rps"]:
                lines.append(f"- {n} in flight, {what}: engine {e['rps']:,.0f}/s = {100 * e['rps'] / c['rps']:.0f}% "
                             f"of the ceiling's {c['rps']:,.0f}/s, engine p99 {e['p99_ms']:.2f} ms")
        e = summary.get(("engine-distinct", n))
        for istio, what in (("istio-distinct", "the same distinct pods"), ("istio", "the repeated review")):
            i = summary.get((istio, n))
            if e and i and e["cpu_ms"]:
                lines.append(f"- {n} in flight, CPU per admission of distinct pods: ours {1000 * e['cpu_ms']:.0f} µs, "
                             f"Istio {1000 * i['cpu_ms']:.0f} µs on {what}: {i['cpu_ms'] / e['cpu_ms']:.1f}×")
    return "\n".join(lines)


def cpu_table(out):
    istio_path, ours_path = os.path.join(out, "cpu-istio.tsv"), os.path.join(out, "cpu-ours.txt")
    if not (os.path.exists(istio_path) and os.path.exists(ours_path)):
        return ""
    istio, ours = {}, {}
    for line in open(istio_path):
        name, lo, mid, _wall = line.rstrip("\n").split("\t")
        istio.setdefault(name, []).extend([float(lo), float(mid)])
    for line in open(ours_path):
        m = re.match(r"(.+): CPU per injection best (\d+) µs, mean (\d+) µs", line.strip())
        if m:
            ours.setdefault(m.group(1), []).extend([float(m.group(2)), float(m.group(3))])
    lines = [
        "| pod | Istio's /inject handler, CPU µs min / median | our engine (inject_cpu), CPU µs min / median | ratio min / median |",
        "|---|---|---|---|",
    ]
    for name, values in istio.items():
        i_min, i_med = min(values), statistics.median(values)
        if name in ours:
            o_min, o_med = min(ours[name]), statistics.median(ours[name])
            lines.append(f"| {name} | {i_min:,.0f} / {i_med:,.0f} | {o_min:,.0f} / {o_med:,.0f} | "
                         f"{i_min / o_min:.0f}× / {i_med / o_med:.0f}× |")
        else:
            lines.append(f"| {name} | {i_min:,.0f} / {i_med:,.0f} | (see the load table's CPU per admission) | |")
    return "\n".join(lines)


def plot(summary, inflights, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for kind, label in SERVERS:
        xs = [n for n in inflights if (kind, n) in summary]
        if not xs:
            continue
        left.plot(xs, [summary[(kind, n)]["rps"] for n in xs], marker="o", label=label)
        right.plot(xs, [summary[(kind, n)]["p99_ms"] for n in xs], marker="o", label=label)
    for ax, title, unit in ((left, "Throughput", "admissions/s"), (right, "p99 latency", "ms")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(inflights, [str(n) for n in inflights])
        ax.set_xlabel("admissions in flight")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=8)
    fig.suptitle("Sidecar injection webhook on loopback: ours vs Istio's (same review, same settings)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    out, png = sys.argv[1], sys.argv[2]
    table, summary, inflights = load_table(load_runs(os.path.join(out, "runs.tsv")))
    print(table)
    shares = ceiling_shares(summary, inflights)
    if shares:
        print()
        print(shares)
    cpu = cpu_table(out)
    if cpu:
        print()
        print(cpu)
    plot(summary, inflights, png)


if __name__ == "__main__":
    main()
