#!/usr/bin/env python3
"""Renders heatmap.bt's output ("ms_since_start latency_us" lines) as an SVG
latency heat map, as the Fishworks analytics drew them: time runs left to
right in columns, latency climbs in power-of-two rows, and the darker a
cell the more I/Os of that latency completed in that interval.

  python3 tools/bpftrace/heatmap.py io.txt > io.svg   [--column-ms 1000]
"""
import argparse
import math
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input", help="heatmap.bt output ('-' for stdin)")
    ap.add_argument("--column-ms", type=int, default=1000, help="milliseconds per column (default 1000)")
    args = ap.parse_args()
    src = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")
    cells = {}
    columns = rows = 0
    for line in src:
        parts = line.split()
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            continue  # bpftrace's own lines ("Attaching ...")
        col = int(parts[0]) // args.column_ms
        row = int(math.log2(int(parts[1]) + 1))  # 0: < 1 us, 1: 1 us, 2: 2-3 us, ...
        cells[(col, row)] = cells.get((col, row), 0) + 1
        columns, rows = max(columns, col + 1), max(rows, row + 1)
    if not cells:
        sys.exit("heatmap: no samples in the input")
    peak = max(cells.values())
    cw, ch, left, top = 12, 14, 70, 20
    width, height = left + columns * cw + 10, top + rows * ch + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="10">',
           f'<text x="{left}" y="12">I/O latency heat map: {sum(cells.values())} I/Os, '
           f'{args.column_ms} ms per column, darkest cell {peak}</text>']
    for r in range(rows):
        y = top + (rows - 1 - r) * ch
        label = "&lt;1us" if r == 0 else f"{2 ** (r - 1)}us" if 2 ** (r - 1) < 1000 else f"{2 ** (r - 1) // 1000}ms"
        out.append(f'<text x="2" y="{y + ch - 3}">{label}</text>')
    for (c, r), n in cells.items():
        shade = int(255 * (1 - math.log1p(n) / math.log1p(peak)))
        out.append(f'<rect x="{left + c * cw}" y="{top + (rows - 1 - r) * ch}" width="{cw}" height="{ch}" '
                   f'fill="rgb(255,{shade},{shade // 2})"/>')
    out.append(f'<text x="{left}" y="{height - 8}">time (columns of {args.column_ms} ms)</text></svg>')
    print("\n".join(out))


if __name__ == "__main__":
    main()
