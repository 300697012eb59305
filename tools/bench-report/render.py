#!/usr/bin/env python3
"""Renders the benchmark report of scripts/bench-report.sh.

Reads fio's JSON results:
  --results DIR   DIR/<side>-results/<row>.json for the sides uzfs,
                  zfs-fuse and passthrough_ll, named as
                  scripts/fio-compare.sh names them (small-files phases
                  in small-files-<phase>.json)
  --slog DIR      DIR/sync-write-1-slog-no.json and ...-slog-yes.json,
                  fio --output-format=json+ (with latency histograms)
Writes into --out DIR:
  report.md               the machine, the command, a table per row (rate
                          in the row's unit, ratios, median latencies), the
                          sync-write table, and links to the two charts
  throughput.png          grouped bars per row, each side as a percentage
                          of passthrough_ll's rate (rows in MiB/s, IOPS and
                          files/s share one axis that way), log scale
  sync-write-latency.png  fsync latency of sync-write-1 on uzfs without and
                          with a log device: histogram and CDF, log time axis
Exits 1 with one line on stderr when a row lacks a side's result.

matplotlib rather than gnuplot: fio's results are nested JSON, which Python
reads directly (gnuplot would need a converter in front of it anyway), and
the same program then writes the Markdown.
"""
import argparse
import json
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

SIDES = ("uzfs", "zfs-fuse", "passthrough_ll")
COLORS = {"uzfs": "#1f77b4", "zfs-fuse": "#ff7f0e", "passthrough_ll": "#8c8c8c"}
# (row key, label, unit); a key "name:phase" is one phase of a row.
ROWS = [
    ("seq-write", "seq write 1M", "MiB/s"),
    ("seq-read", "seq read 1M (cold)", "MiB/s"),
    ("rand-write-1", "rand write 4K, 1 job", "IOPS"),
    ("rand-read-1", "rand read 4K, 1 job (cold)", "IOPS"),
    ("rand-read-4", "rand read 4K, 4 jobs (cold)", "IOPS"),
    ("rand-write-4", "rand write 4K, 4 jobs", "IOPS"),
    ("rand-write-4-files", "rand write 4K, 4 jobs, 4 files", "IOPS"),
    ("sync-write-1", "sync write 4K+fsync, 1 job", "IOPS"),
    ("sync-write-4", "sync write 4K+fsync, 4 jobs", "IOPS"),
    ("small-files:create", "small files: create", "files/s"),
    ("small-files:stat", "small files: stat", "files/s"),
    ("small-files:delete", "small files: delete", "files/s"),
]


def load_json(path):
    """fio's JSON, after whatever warnings fio printed before it."""
    with open(path) as f:
        text = f.read()
    return json.loads(text[text.index("{"):])


def job(results, side, key):
    """The fio job record of a row on a side, or None."""
    name, _, phase = key.partition(":")
    d = os.path.join(results, side + "-results")
    path = os.path.join(d, f"{name}-{phase}.json" if phase else f"{name}.json")
    if not os.path.exists(path):
        return None
    for j in load_json(path)["jobs"]:
        if not phase or j["jobname"] == phase:
            return j
    return None


def main_dir(j):
    """The direction (read or write) that did the job's work."""
    return j["read"] if j["read"]["iops"] >= j["write"]["iops"] else j["write"]


def rate(j, unit):
    if unit == "MiB/s":
        return (j["read"]["bw"] + j["write"]["bw"]) / 1024.0
    return j["read"]["iops"] + j["write"]["iops"]


def pct(d, p):
    return (d.get("percentile") or {}).get(f"{p:.6f}")


def median_us(j):
    """Median latency in us: fio's completion latency of the working
    direction; for jobs that fsync, the median write plus the median fsync
    (the caller waits for both)."""
    c = pct(main_dir(j).get("clat_ns", {}), 50)
    if c is None:
        return None
    s = j.get("sync") or {}
    if s.get("total_ios"):
        f = pct(s.get("lat_ns", {}), 50)
        if f is not None:
            c += f
    return c / 1000.0


def short(j, key):
    """A small-file phase timed over less than 2 s: noise, not a figure."""
    return key.startswith("small-files") and main_dir(j).get("runtime", 0) < 2000


def fmt(v):
    if v is None:
        return "-"
    return f"{v:.1f}" if v < 100 else f"{v:.0f}"


def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "-"


def machine(hostfs):
    info = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                info["CPU"] = line.split(":", 1)[1].strip()
                break
    info["cores"] = str(os.cpu_count())
    with open("/proc/meminfo") as f:
        kib = int(next(x for x in f if x.startswith("MemTotal")).split()[1])
    info["RAM"] = f"{kib / 1048576:.1f} GiB"
    info["kernel"] = os.uname().release
    try:
        with open("/etc/os-release") as f:
            rel = dict(x.rstrip("\n").split("=", 1) for x in f if "=" in x)
        info["OS"] = rel.get("PRETTY_NAME", "?").strip('"')
    except OSError:
        pass
    info["fio"] = subprocess.run(["fio", "--version"], capture_output=True,
                                 text=True).stdout.strip()
    info["device files on"] = hostfs + " (/var/tmp)"
    return info


def plot_throughput(table, path, title):
    """Each row's three rates as % of passthrough_ll's, grouped, log y."""
    n = len(table)
    fig, ax = plt.subplots(figsize=(max(9.0, 1.6 * n + 3.0), 7.5), dpi=110)
    width = 0.27
    x = np.arange(n)
    pcts = {s: [100.0 * r["v"][s] / r["v"]["passthrough_ll"] for r in table] for s in SIDES}
    for i, side in enumerate(SIDES):
        bars = ax.bar(x + (i - 1) * width, pcts[side], width, label=side,
                      color=COLORS[side], edgecolor="white", linewidth=0.5)
        if side != "passthrough_ll":
            for b, p in zip(bars, pcts[side]):
                ax.annotate(f"{p:.0f}%", (b.get_x() + b.get_width() / 2, p),
                            xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=7, color="#333333")
    ax.set_yscale("log")
    lo = min(min(v) for v in pcts.values())
    hi = max(max(v) for v in pcts.values())
    ax.set_ylim(lo / 2.5, hi * 4.5)
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}%"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.axhline(100, color="#555555", linewidth=0.8, linestyle="--", zorder=0)
    ax.grid(axis="y", which="major", color="#dddddd", linewidth=0.6, zorder=0)
    ax.set_axisbelow(True)
    # Above each group: uzfs's ratios to the other two sides.
    for k, r in enumerate(table):
        top = max(pcts[s][k] for s in SIDES)
        u, z, p = (r["v"][s] for s in SIDES)
        ax.annotate(f"uzfs/zfs-fuse {u / z:.2f}x\nuzfs/passthrough {u / p:.2f}x",
                    (x[k], top), xytext=(0, 14), textcoords="offset points",
                    ha="center", va="bottom", fontsize=7.5, fontweight="bold")
    ax.set_xticks(x)
    # Tick labels: the workload on two lines, then passthrough_ll's own rate
    # in the row's unit (the 100% of that group).
    ax.set_xticklabels([r["label"].replace(", ", "\n", 1).replace(": ", ":\n", 1)
                        + f"\n100% = {fmt(r['v']['passthrough_ll'])} {r['unit']}"
                        for r in table], fontsize=8)
    ax.set_ylabel("rate as % of passthrough_ll's (log scale; higher is better)")
    ax.set_title(title, fontsize=11)
    ax.legend(loc="upper left", ncol=3, fontsize=9, framealpha=0.9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def latency_bins(d):
    """fio's histogram bins of a latency record: (us values, counts)."""
    bins = d.get("bins") or {}
    if not bins:
        return None, None
    pairs = sorted((int(k), c) for k, c in bins.items() if c)
    return (np.array([p[0] for p in pairs]) / 1000.0,
            np.array([p[1] for p in pairs], dtype=float))


def plot_sync_latency(runs, path, title):
    """Histogram and CDF of fsync latency (write() dotted in the CDF)."""
    fig, (hax, cax) = plt.subplots(1, 2, figsize=(12, 5.2), dpi=110)
    colors = {"no": "#d62728", "yes": "#2ca02c"}
    allv = np.concatenate([latency_bins(r["j"]["sync"]["lat_ns"])[0] for r in runs])
    edges = np.logspace(np.log10(allv.min() * 0.9), np.log10(allv.max() * 1.1), 50)
    for r in runs:
        c = colors[r["slog"]]
        fv, fc = latency_bins(r["j"]["sync"]["lat_ns"])
        h, _ = np.histogram(fv, bins=edges, weights=fc)
        hax.stairs(100.0 * h / fc.sum(), edges, color=c, linewidth=1.6, label=r["legend"])
        hax.stairs(100.0 * h / fc.sum(), edges, color=c, alpha=0.15, fill=True)
        cax.step(fv, np.cumsum(fc) / fc.sum(), where="post", color=c, linewidth=1.6,
                 label=f"fsync, {r['name']}")
        wv, wc = latency_bins(r["j"]["write"]["clat_ns"])
        if wv is not None:
            cax.step(wv, np.cumsum(wc) / wc.sum(), where="post", color=c, linewidth=1.0,
                     linestyle=":", label=f"write(), {r['name']}")
    for ax in (hax, cax):
        ax.set_xscale("log")
        ax.set_xlabel("latency (\u00b5s, log scale)")
        ax.grid(which="major", color="#dddddd", linewidth=0.6)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    hax.set_ylabel("% of fsyncs")
    hax.set_title("fsync latency histogram", fontsize=10)
    hax.legend(fontsize=8, loc="upper right")
    cax.set_ylabel("fraction of operations at or below")
    cax.set_ylim(0, 1.02)
    cax.set_title("CDF: fsync (solid) and the write() before it (dotted)", fontsize=10)
    cax.legend(fontsize=8, loc="lower right")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", required=True)
    ap.add_argument("--slog", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--rows", required=True, help="fio-compare.sh rows, comma-separated")
    ap.add_argument("--command", required=True)
    ap.add_argument("--settings", default="")
    ap.add_argument("--revision", default="unknown")
    ap.add_argument("--load", default="?")
    ap.add_argument("--hostfs", default="?")
    ap.add_argument("--slog-size", default="?")
    ap.add_argument("--note", default="", help="a line for the report's header")
    a = ap.parse_args()

    wanted = a.rows.split(",")
    table = []
    for key, label, unit in ROWS:
        if key.split(":")[0] not in wanted:
            continue
        jobs = {s: job(a.results, s, key) for s in SIDES}
        missing = [s for s in SIDES if jobs[s] is None]
        if missing:
            sys.exit(f"render.py: no result for row {key} on {', '.join(missing)}")
        v = {s: rate(jobs[s], unit) for s in SIDES}
        if not v["passthrough_ll"]:
            sys.exit(f"render.py: passthrough_ll's rate for row {key} is zero")
        table.append({"key": key, "label": label, "unit": unit, "v": v,
                      "p50": {s: median_us(jobs[s]) for s in SIDES},
                      "short": any(short(jobs[s], key) for s in SIDES)})

    runs = []
    for slog in ("no", "yes"):
        path = os.path.join(a.slog, f"sync-write-1-slog-{slog}.json")
        if not os.path.exists(path):
            sys.exit(f"render.py: no {path}")
        j = load_json(path)["jobs"][0]
        if latency_bins(j.get("sync", {}).get("lat_ns", {}))[0] is None:
            sys.exit(f"render.py: {path} has no fsync latency bins (fio --output-format=json+)")
        name = "no log device" if slog == "no" else f"log device ({a.slog_size} file)"
        s = j["sync"]["lat_ns"]
        runs.append({"slog": slog, "j": j, "name": name, "iops": j["write"]["iops"],
                     "w50": (pct(j["write"]["clat_ns"], 50) or 0) / 1000.0,
                     "f50": (pct(s, 50) or 0) / 1000.0, "f99": (pct(s, 99) or 0) / 1000.0,
                     "legend": f"{name}: {j['write']['iops']:.0f} IOPS, "
                               f"fsync p50 {(pct(s, 50) or 0) / 1000.0:.0f} \u00b5s"})

    os.makedirs(a.out, exist_ok=True)
    layout = a.settings.split(";")[0].replace("layout ", "") or "raidz2"
    fio_settings = a.settings.partition("; ")[2]
    plot_throughput(table, os.path.join(a.out, "throughput.png"),
                    f"fio on uzfs, zfs-fuse and libfuse's passthrough_ll "
                    f"(pools: {layout} over files; passthrough_ll = 100%)\n{fio_settings}")
    plot_sync_latency(runs, os.path.join(a.out, "sync-write-latency.png"),
                      f"uzfs sync-write-1 (4 KiB random write + fsync, 1 job): "
                      f"{layout} pool without and with a log device")

    m = machine(a.hostfs)
    md = ["# uzfs benchmark report", "",
          "One run of the fio suite (`tests/perf/fio/`) on uzfs, on zfs-fuse (pools of "
          "the same shape over files) and on libfuse's low-level passthrough example "
          "`passthrough_ll` mounted over a directory of the disk that holds the pools' "
          "files: what a FUSE file system on this machine can reach. Higher rates are "
          "better; latencies are medians in \u00b5s.", "",
          f"- command: `{a.command}` (`make bench-report` runs it)",
          f"- uzfs: {a.revision}",
          f"- settings: {a.settings}",
          f"- load average (1, 5, 15 min): {a.load}"]
    if a.note:
        md.append(f"- note: {a.note}")
    md += ["", "## Machine", "", "| | |", "|---|---|"]
    md += [f"| {k} | {v} |" for k, v in m.items()]
    md += ["", "## Throughput", "", "![throughput](throughput.png)", "",
           "| row | workload | unit | uzfs | zfs-fuse | passthrough_ll | uzfs/zfs-fuse "
           "| uzfs/passthrough_ll | p50 \u00b5s uzfs | p50 \u00b5s zfs-fuse "
           "| p50 \u00b5s passthrough_ll |",
           "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in table:
        v, p = r["v"], r["p50"]
        label = r["label"] + (" (short: < 2 s)" if r["short"] else "")
        md.append(f"| `{r['key']}` | {label} | {r['unit']} | {fmt(v['uzfs'])} "
                  f"| {fmt(v['zfs-fuse'])} | {fmt(v['passthrough_ll'])} "
                  f"| {ratio(v['uzfs'], v['zfs-fuse'])} "
                  f"| {ratio(v['uzfs'], v['passthrough_ll'])} "
                  f"| {fmt(p['uzfs'])} | {fmt(p['zfs-fuse'])} | {fmt(p['passthrough_ll'])} |")
    md += ["",
           "Latency: fio's median completion latency of the row's reads or writes; "
           "for the sync-write rows the median write plus the median fsync. "
           "Cold rows start after an export and import (uzfs, zfs-fuse) or an unmount "
           "and mount (passthrough_ll) and a drop of the kernel's caches. "
           "passthrough_ll runs with `-o writeback,cache=always,timeout=60` (the "
           "writeback cache and timeouts uzfs mounts with); its inode table is a list "
           "searched on every lookup, so its small-file rates are not a ceiling.",
           "", "## Sync writes with and without a log device", "",
           "![sync-write latency](sync-write-latency.png)", "",
           f"`sync-write-1` on uzfs, a fresh {layout} pool each, without a log device and "
           f"with a {a.slog_size} file as its log (same disk, no injected delay).", "",
           "| run | IOPS | write() p50 \u00b5s | fsync p50 \u00b5s | fsync p99 \u00b5s |",
           "|---|--:|--:|--:|--:|"]
    for r in runs:
        md.append(f"| `sync-write-1, slog {r['slog']}` | {fmt(r['iops'])} | {fmt(r['w50'])} "
                  f"| {fmt(r['f50'])} | {fmt(r['f99'])} |")
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
