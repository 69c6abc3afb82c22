#!/usr/bin/env python3
"""The arithmetic of bench/e2e-burst.sh.

  e2e_burst_report.py row OUT ROUND VARIANT BURST NAMESPACE WEBHOOK SUMMARY CONNS INJECTED HITS
      one runs.tsv line for a finished burst: the client's latencies ($OUT/lat-*.tsv, POST burst
      only), the API server's audit log (every pod create in NAMESPACE: requestReceived to
      ResponseComplete, microsecond stamps), and the API server's /metrics before and after
      ($OUT/metrics-before.txt, $OUT/metrics-after.txt) differenced: POST pods
      (apiserver_request_duration_seconds) and the webhook's calls
      (apiserver_admission_webhook_admission_duration_seconds, name WEBHOOK); HITS: how many of
      the burst's admissions our server answered from its outcome cache (empty for the others)
  e2e_burst_report.py table OUT
      the markdown table of $OUT/runs.tsv: medians over rounds per variant and burst, and the
      latency each webhook ADDS to pod creation against the same burst with no webhook, with its
      ratio to the canned-patch limit
"""
import json
import re
import statistics
import sys
from datetime import datetime

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')

COLUMNS = ["round", "variant", "burst", "pods", "wall_s", "client_p50_ms", "client_p99_ms",
           "audit_p50_ms", "audit_p99_ms", "audit_mean_ms", "metrics_post_mean_ms", "metrics_post_p50_ms",
           "metrics_post_p99_ms", "webhook_calls", "webhook_mean_ms", "webhook_p50_ms", "webhook_p99_ms",
           "webhook_conns_max", "injected", "webhook_not_200", "pod_creates", "cache_hits"]


def parse_metrics(path):
    """{(name, frozenset(labels)): value} of a Prometheus text file."""
    out = {}
    for line in open(path):
        m = LINE.match(line.strip())
        if m:
            out[(m.group(1), frozenset(LABEL.findall(m.group(2))))] = float(m.group(3))
    return out


def histogram(before, after, name, want):
    """(count, sum, [(le, cumulative count)]) of the difference, over series whose labels include want."""
    buckets, total, count = {}, 0.0, 0.0
    for (metric, labels), value in after.items():
        d = dict(labels)
        if any(d.get(k) != v for k, v in want.items()):
            continue
        delta = value - before.get((metric, labels), 0.0)
        if metric == name + "_bucket":
            le = float(d["le"])
            buckets[le] = buckets.get(le, 0.0) + delta
        elif metric == name + "_sum":
            total += delta
        elif metric == name + "_count":
            count += delta
    return count, total, sorted(buckets.items())


def histogram_quantile(q, buckets):
    """Prometheus' histogram_quantile: linear inside the bucket the rank falls in."""
    if not buckets or buckets[-1][1] <= 0:
        return float("nan")
    rank = q * buckets[-1][1]
    lower_le, lower_count = 0.0, 0.0
    for le, cumulative in buckets:
        if cumulative >= rank:
            if le == float("inf"):
                return lower_le
            width = cumulative - lower_count
            return lower_le + (le - lower_le) * ((rank - lower_count) / width if width else 0)
        lower_le, lower_count = le, cumulative
    return lower_le


def not_200(before, after, webhook):
    """Calls of the webhook that did not answer 200 (apiserver_admission_webhook_request_total)."""
    total = 0.0
    for (metric, labels), value in after.items():
        d = dict(labels)
        if metric == "apiserver_admission_webhook_request_total" and d.get("name") == webhook and d.get("code") != "200":
            total += value - before.get((metric, labels), 0.0)
    return total


def pct(sorted_values, q):
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * q))]


def stamp(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def audit_latencies(path, namespace):
    """Milliseconds from requestReceived to ResponseComplete of each pod create in namespace."""
    out = []
    for line in open(path):
        if f'"namespace":"{namespace}"' not in line:
            continue
        ev = json.loads(line)
        ref = ev.get("objectRef", {})
        if (ev.get("verb") == "create" and ev.get("stage") == "ResponseComplete" and ref.get("resource") == "pods"
                and not ref.get("subresource") and ref.get("namespace") == namespace):
            out.append((stamp(ev["stageTimestamp"]) - stamp(ev["requestReceivedTimestamp"])) * 1000.0)
    return sorted(out)


def row(args):
    out, rnd, variant, burst, namespace, webhook, summary, conns, injected, hits = args
    pods, wall, c50, c99, _failed = summary.split("\t")
    client = (c50, c99) if burst == "post" else ("", "")
    audit = audit_latencies(f"{out}/audit.log", namespace)
    before, after = parse_metrics(f"{out}/metrics-before.txt"), parse_metrics(f"{out}/metrics-after.txt")
    n, s, b = histogram(before, after, "apiserver_request_duration_seconds",
                        {"verb": "POST", "resource": "pods", "subresource": ""})
    wn, ws, wb = histogram(before, after, "apiserver_admission_webhook_admission_duration_seconds",
                           {"name": webhook, "operation": "CREATE", "type": "admit"})
    f = lambda x: "" if x != x else f"{x:.2f}"
    values = [rnd, variant, burst, pods, wall, *client,
              f(pct(audit, 0.5)), f(pct(audit, 0.99)), f(statistics.mean(audit) if audit else float("nan")),
              f(s / n * 1000 if n else float("nan")), f(histogram_quantile(0.5, b) * 1000),
              f(histogram_quantile(0.99, b) * 1000),
              f"{wn:.0f}", f(ws / wn * 1000 if wn else float("nan")), f(histogram_quantile(0.5, wb) * 1000),
              f(histogram_quantile(0.99, wb) * 1000), conns, injected,
              f"{not_200(before, after, webhook):.0f}", str(len(audit)), hits]
    print("\t".join(values))


NAMES = {
    "none": "no webhook",
    "canned": "canned patch (the limit)",
    "cached": "ours, outcome cache",
    "engine": "ours, `--outcome-cache-mib 0`",
    "istio": "Istio's injector",
    "tiny": "canned one-op patch (the call alone)",
    "coarse": "canned coarse patch (same pod, whole fields)",
}


def table(args):
    (out,) = args
    rows = [dict(zip(COLUMNS, line.rstrip("\n").split("\t"))) for line in list(open(f"{out}/runs.tsv"))[1:]]
    variants = [v for v in NAMES if any(r["variant"] == v for r in rows)]

    def med(variant, burst, column):
        xs = [float(r[column]) for r in rows if r["variant"] == variant and r["burst"] == burst and r[column] not in ("", "nan")]
        return statistics.median(xs) if xs else float("nan")

    def fmt(x):
        return "–" if x != x else f"{x:.1f}"

    def hits(variant, burst):
        """Median share of the burst's admissions our outcome cache answered ("–" for others)."""
        if variant not in ("cached", "engine"):
            return "–"
        xs = [float(r["cache_hits"]) / float(r["pods"]) for r in rows if r["variant"] == variant and r["burst"] == burst
              and r.get("cache_hits") not in (None, "", "nan") and float(r["pods"] or 0) > 0]
        return f"{statistics.median(xs) * 100:.0f}%" if xs else "–"

    def added(variant, burst, column):
        return med(variant, burst, column) - med("none", burst, column)

    def with_ratio(variant, burst, column):
        a = added(variant, burst, column)
        if variant == "none" or a != a:
            return "–"
        limit = added("canned", burst, column)
        ratio = f" ({a / limit:.1f}×)" if variant != "canned" and limit == limit and limit > 0.05 else ""
        return f"{a:+.1f}{ratio}"

    bursts = [("post", "client", "distinct pods, POSTed"), ("post", "audit", "distinct pods, POSTed"),
              ("deployment", "audit", "Deployment 0 → N"),
              ("deployment-token", "audit", "Deployment 0 → N, token mounted")]
    print("| burst | latency seen by | webhook | p50 ms | p99 ms | added p50 ms (× limit) | added p99 ms (× limit) "
          "| API server mean ms (metrics) | webhook call mean ms (metrics) | wall s | webhook connections "
          "| answered from the outcome cache |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for burst, source, label in bursts:
        if not any(r["burst"] == burst for r in rows):
            continue
        for v in variants:
            p50, p99 = f"{source}_p50_ms", f"{source}_p99_ms"
            seen = "client" if source == "client" else "API server (audit)"
            rounds = sum(1 for r in rows if r["variant"] == v and r["burst"] == burst)
            print(f"| {label} | {seen} | {NAMES[v]} | {fmt(med(v, burst, p50))} | {fmt(med(v, burst, p99))} "
                  f"| {with_ratio(v, burst, p50)} | {with_ratio(v, burst, p99)} "
                  f"| {fmt(med(v, burst, 'metrics_post_mean_ms'))} | {fmt(med(v, burst, 'webhook_mean_ms'))} "
                  f"| {fmt(med(v, burst, 'wall_s'))} | {fmt(med(v, burst, 'webhook_conns_max'))} "
                  f"| {hits(v, burst)} |")
    print()
    print(f"medians over {max((int(r['round']) for r in rows), default=0)} rounds; raw runs: {out}/runs.tsv")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("row", "table"):
        sys.exit(__doc__)
    {"row": row, "table": table}[sys.argv[1]](sys.argv[2:])
