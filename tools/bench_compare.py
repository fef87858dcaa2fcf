#!/usr/bin/env python3
"""Compare two `tejas bench --json` reports row by row (same op, model and shape).

usage: tools/bench_compare.py BASE.json VARIANT.json [--label NAME] [--markdown FILE]
       tools/bench_compare.py --self-test

Prints one line per row measured in both (base us, variant us, variant / base: below 1 means the
variant is faster; rows keyed by suite, op, model and shape), then a summary: the geometric mean
of variant / base over all common rows and over the large rows (>= 16 MiB of compulsory
traffic, where bandwidth, not launch latency, decides). Rows measured in only one report are
counted, not compared. Standard library only. Exit status: 0; 1 when no row is measured in
both; 2 on bad arguments or unreadable reports.
"""
import argparse
import json
import math
import sys

LARGE_BYTES = 16 * 1024 * 1024


class BadReport(Exception):
    pass


def load_rows(path):
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    if not isinstance(report, dict) or not isinstance(report.get("rows", []), list):
        raise BadReport(f"{path}: not a tejas report (no rows list)")
    rows = {}
    for r in report.get("rows", []):
        if not isinstance(r, dict):
            raise BadReport(f"{path}: a row is not an object")
        us = r.get("us")
        if isinstance(us, (int, float)) and not isinstance(us, bool) and us > 0:
            key = (r.get("suite", ""), r.get("op", ""), r.get("model", ""), r.get("shape", ""))
            if key in rows:
                raise BadReport(f"{path}: duplicate row {key}")
            nbytes = r.get("bytes", 0)
            rows[key] = {"us": float(us), "bytes": nbytes if isinstance(nbytes, (int, float)) else 0}
    return rows


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def compare(base, variant, label):
    """Returns (lines, summary dict)."""
    common = [k for k in base if k in variant]
    lines = [f"suite | op | model | shape | base us | {label} us | {label} / base", "|".join(["---"] * 7)]
    ratios, large = [], []
    for k in sorted(common):
        b, v = base[k]["us"], variant[k]["us"]
        ratio = v / b
        ratios.append(ratio)
        if base[k].get("bytes", 0) >= LARGE_BYTES:
            large.append(ratio)
        lines.append(f"{k[0]} | {k[1]} | {k[2]} | {k[3]} | {b:.3f} | {v:.3f} | {ratio:.3f}")
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
    import contextlib
    import io
    import os
    import tempfile

    def row(op, shape, us, nbytes):
        return {"suite": "q", "op": op, "model": "m", "shape": shape, "us": us, "bytes": nbytes}

    def write(rows):
        fd, path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(rows, f)
        return path

    paths = [write({"rows": [row("a", "s1", 10.0, LARGE_BYTES), row("a", "s2", 2.0, 100), row("b", "s3", 1.0, 100),
                             row("c", "s4", None, 100)]}),
             write({"rows": [row("a", "s1", 5.0, LARGE_BYTES), row("a", "s2", 4.0, 100)]}),
             write([1, 2]), write({"rows": [row("a", "s1", 1.0, 1), row("a", "s1", 2.0, 1)]})]
    try:
        base, variant = load_rows(paths[0]), load_rows(paths[1])
        assert len(base) == 3, base  # the unmeasured row is dropped
        lines, s = compare(base, variant, "v")
        assert s["common_rows"] == 2 and s["only_base"] == 1 and s["only_variant"] == 0, s
        assert abs(s["geomean_all"] - 1.0) < 1e-12, s  # 0.5 and 2.0
        assert abs(s["geomean_large"] - 0.5) < 1e-12 and s["large_rows"] == 1, s
        assert lines[1] == "---|---|---|---|---|---|---", lines
        assert lines[2] == "q | a | m | s1 | 10.000 | 5.000 | 0.500", lines
        for bad in paths[2:]:
            try:
                load_rows(bad)
                raise AssertionError(f"{bad} should be refused")
            except BadReport:
                pass
        paths.append(write({"rows": []}))
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert main([paths[0], paths[2]]) == 2 and main([paths[0], paths[-1]]) == 1
    finally:
        for p in paths:
            os.unlink(p)
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
    except (OSError, ValueError, BadReport) as e:
        print(f"bench_compare: {e}", file=sys.stderr)
        return 2
    lines, s = compare(base, variant, args.label)
    text = "\n".join(lines + ["", summary_line(s)])
    print(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0 if s["common_rows"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
