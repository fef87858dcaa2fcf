#!/usr/bin/env python3
"""Compare two `tejas bench --json` reports row by row (same op, model and shape).

usage: tools/bench_compare.py BASE.json VARIANT.json [--label NAME] [--markdown FILE]
       tools/bench_compare.py --self-test

Prints one line per row measured in both (base us, variant us, variant / base: below 1 means the
variant is faster), then a summary: the geometric mean of variant / base over all common rows and
over the large rows (>= 16 MiB of compulsory traffic, where bandwidth, not launch latency,
decides). Rows measured in only one report are counted, not compared. Standard library only.
Exit status: 0, or 2 on bad arguments or unreadable reports.
"""
import argparse
import json
import math
import sys

LARGE_BYTES = 16 * 1024 * 1024


def load_rows(path):
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    rows = {}
    for r in report.get("rows", []):
        if isinstance(r.get("us"), (int, float)) and r["us"] > 0:
            rows[(r["op"], r["model"], r["shape"])] = r
    return rows


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def compare(base, variant, label):
    """Returns (lines, summary dict)."""
    common = [k for k in base if k in variant]
    lines = [f"op | model | shape | base us | {label} us | {label} / base"]
    ratios, large = [], []
    for k in sorted(common):
        b, v = base[k]["us"], variant[k]["us"]
        ratio = v / b
        ratios.append(ratio)
        if base[k].get("bytes", 0) >= LARGE_BYTES:
            large.append(ratio)
        lines.append(f"{k[0]} | {k[1]} | {k[2]} | {b:.3f} | {v:.3f} | {ratio:.3f}")
    summary = {
        "label": label,
        "common_rows": len(common),
        "only_base": len(base) - len(common),
        "only_variant": len(variant) - len(common),
        "geomean_all": geomean(ratios),
        "geomean_large": geomean(large),
        "large_rows": len(large),
    }
    return lines, summary


def summary_line(s):
    def fmt(x):
        return "-" if x is None else f"{x:.3f}"

    return (f"{s['label']}: {s['label']} / base geomean {fmt(s['geomean_all'])} over {s['common_rows']} rows, "
            f"{fmt(s['geomean_large'])} over {s['large_rows']} rows >= 16 MiB "
            f"(< 1: {s['label']} faster); unmatched rows: {s['only_base']} base, {s['only_variant']} variant")


def self_test():
    def row(op, shape, us, nbytes):
        return {"op": op, "model": "m", "shape": shape, "us": us, "bytes": nbytes}

    base = {("a", "m", "s1"): row("a", "s1", 10.0, LARGE_BYTES), ("a", "m", "s2"): row("a", "s2", 2.0, 100),
            ("b", "m", "s3"): row("b", "s3", 1.0, 100)}
    variant = {("a", "m", "s1"): row("a", "s1", 5.0, LARGE_BYTES), ("a", "m", "s2"): row("a", "s2", 4.0, 100)}
    lines, s = compare(base, variant, "v")
    assert s["common_rows"] == 2 and s["only_base"] == 1 and s["only_variant"] == 0, s
    assert abs(s["geomean_all"] - 1.0) < 1e-12, s  # 0.5 and 2.0
    assert abs(s["geomean_large"] - 0.5) < 1e-12 and s["large_rows"] == 1, s
    assert lines[1] == "a | m | s1 | 10.000 | 5.000 | 0.500", lines
    assert "geomean 1.000 over 2 rows, 0.500 over 1 rows" in summary_line(s), summary_line(s)
    _, empty = compare({}, {}, "v")
    assert empty["geomean_all"] is None and "geomean - over 0 rows" in summary_line(empty)
    print("bench_compare self-test: ok")
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", nargs="?")
    ap.add_argument("variant", nargs="?")
    ap.add_argument("--label", default="variant")
    ap.add_argument("--markdown", help="also write the table and summary to this file")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.base or not args.variant:
        ap.print_usage(sys.stderr)
        return 2
    try:
        base, variant = load_rows(args.base), load_rows(args.variant)
    except (OSError, ValueError, KeyError) as e:
        print(f"bench_compare: {e}", file=sys.stderr)
        return 2
    lines, s = compare(base, variant, args.label)
    text = "\n".join(lines + ["", summary_line(s)])
    print(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
