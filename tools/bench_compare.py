#!/usr/bin/env python3
"""Compare two `tejas bench --json` reports row by row (same op, model and shape).

usage: tools/bench_compare.py BASE.json VARIANT.json [--control CONTROL.json] [--label NAME]
                              [--markdown FILE]
       tools/bench_compare.py --self-test

Prints one line per row measured in both (base us, variant us, variant / base: below 1 means the
variant is faster; rows keyed by suite, op, model and shape), then a summary: the geometric mean
of variant / base over all common rows and over the large rows (>= 16 MiB of compulsory
traffic, where bandwidth, not launch latency, decides), and one line per op.

Verdicts need the run-to-run noise, which one default run cannot show (a variant may change every
row of its suite). With --control (a second run of the defaults, same suites), each op's noise
band is the 90th percentile of |ln(control / base)| over its rows (large rows where it has
them; at least 1%); the op's verdict is "faster" or "slower" when |ln(geomean variant / base)|
lies outside that band, else "within noise". Without a control: "no verdict (no control run)".
Rows measured in only one report are counted, not compared. Where the reports' L2 flush
(`l2_flush`: `tejas bench --flush`) differs, a line says so before the summary (the A/B of the
flush itself; a control under another flush than the base's gives no noise band to trust).
Standard library only. Exit
status: 0; 1 when no row is measured in both; 2 on bad arguments or unreadable reports.
"""
import argparse
import json
import math
import sys

LARGE_BYTES = 16 * 1024 * 1024


class BadReport(Exception):
    pass


def load_report(path):
    """(rows, flush): the measured rows by key, and the report's flush mode: "dirty" where the
    report has no l2_flush (every bench before `--flush` flushed with the memset), None where it
    is null, with the copy ceiling the run measured under it (bytes/s; None if not measured):
    {"mode": ..., "hbm": ...}."""
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    if not isinstance(report, dict) or not isinstance(report.get("rows", []), list):
        raise BadReport(f"{path}: not a tejas report (no rows list)")
    mode = report.get("l2_flush", "dirty")
    hbm = (report.get("ceilings") or {}).get("hbm_bytes_per_s") or {}
    # "measured now (1 GiB device copy)" by this run; GPU.md's stored figure is not.
    measured = isinstance(hbm, dict) and str(hbm.get("source", "")).startswith("measured now")
    value = hbm.get("value") if measured else None
    flush = {"mode": mode if isinstance(mode, str) else None,
             "hbm": value if isinstance(value, (int, float)) and not isinstance(value, bool) else None}
    return rows_of_report(path, report), flush


def rows_of_report(path, report):
    """The measured rows of a parsed report, by (suite, op, model, shape)."""
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


MIN_NOISE = 0.01  # ln units: a band narrower than 1% is not believed


def percentile(values, q):
    vals = sorted(values)
    if not vals:
        return None
    i = min(len(vals) - 1, max(0, math.ceil(q * len(vals)) - 1))
    return vals[i]


def op_verdicts(base, variant, control):
    """Per op (suite, op): geomean of variant / base over its large common rows (all common rows
    when none is large), the noise band from the control, and the verdict."""
    ops = {}
    for k in sorted(k for k in base if k in variant):
        ops.setdefault((k[0], k[1]), []).append(k)
    out = []
    for op, keys in sorted(ops.items()):
        large = [k for k in keys if base[k].get("bytes", 0) >= LARGE_BYTES]
        use = large or keys
        g = geomean([variant[k]["us"] / base[k]["us"] for k in use])
        entry = {"suite": op[0], "op": op[1], "rows": len(use), "large": bool(large), "geomean": g,
                 "noise": None, "verdict": "no verdict (no control run)"}
        if control is not None:
            noise_keys = [k for k in use if k in control]
            if noise_keys:
                band = max(MIN_NOISE, percentile([abs(math.log(control[k]["us"] / base[k]["us"])) for k in noise_keys],
                                                 0.9))
                entry["noise"] = band
                lg = math.log(g)
                entry["verdict"] = "faster" if lg < -band else "slower" if lg > band else "within noise"
            else:
                entry["verdict"] = "no verdict (op not in the control run)"
        out.append(entry)
    return out


def compare(base, variant, label, control=None):
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
        "ops": op_verdicts(base, variant, control),
    }
    return lines, summary


def flush_line(flushes):
    """A note where the reports' L2 flush modes differ ({"base": {"mode": "dirty", "hbm": 4.2e12},
    ...}, load_report's; a report absent: None), with the copy ceilings measured under them;
    None where the modes agree."""
    said = {k: (f or {}).get("mode") or "unsaid" for k, f in flushes.items()
            if k in ("base", "variant") or (f or {}).get("mode") is not None}
    if len(set(said.values())) <= 1:
        return None
    note = "L2 flush differs: " + ", ".join(f"{k} {v}" for k, v in said.items())
    if "control" in said and said["control"] != said["base"]:
        note += " (the control's noise band is not the base's)"
    ceilings = [f"{k} {flushes[k]['hbm'] / 1e12:.3f}" for k in said if (flushes[k] or {}).get("hbm")]
    if ceilings:
        note += "; copy ceiling measured (TB/s): " + ", ".join(ceilings)
    return note


def op_lines(s):
    lines = []
    for e in s["ops"]:
        noise = "-" if e["noise"] is None else f"+-{100 * (math.exp(e['noise']) - 1):.1f}%"
        lines.append(f"{s['label']}: {e['suite']}/{e['op']}: {s['label']} / base {e['geomean']:.3f} over {e['rows']} "
                     f"{'large ' if e['large'] else ''}rows, noise {noise}: {e['verdict']}")
    return lines


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
        base, variant = load_report(paths[0])[0], load_report(paths[1])[0]
        assert len(base) == 3, base  # the unmeasured row is dropped
        lines, s = compare(base, variant, "v")
        assert s["common_rows"] == 2 and s["only_base"] == 1 and s["only_variant"] == 0, s
        assert abs(s["geomean_all"] - 1.0) < 1e-12, s  # 0.5 and 2.0
        assert abs(s["geomean_large"] - 0.5) < 1e-12 and s["large_rows"] == 1, s
        assert lines[1] == "---|---|---|---|---|---|---", lines
        assert lines[2] == "q | a | m | s1 | 10.000 | 5.000 | 0.500", lines
        for bad in paths[2:]:
            try:
                load_report(bad)
                raise AssertionError(f"{bad} should be refused")
            except BadReport:
                pass
        paths.append(write({"rows": []}))
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert main([paths[0], paths[2]]) == 2 and main([paths[0], paths[-1]]) == 1
            assert main([paths[0], paths[1], "--control", paths[2]]) == 2  # an unreadable control
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main([paths[0], paths[1], "--control", paths[0], "--label", "v"]) == 0
        printed = out.getvalue().strip().splitlines()
        assert printed[-1].startswith("v: v / base geomean 1.000 over 2 rows"), printed  # gpu-check reads it
        assert "v: q/a: v / base 0.500 over 1 large rows, noise +-1.0%: faster" in printed, printed
    finally:
        for p in paths:
            os.unlink(p)
    assert "geomean 1.000 over 2 rows, 0.500 over 1 rows" in summary_line(s), summary_line(s)
    # The flush modes: a note only where they differ.
    def fl(mode, hbm=None):
        return {"mode": mode, "hbm": hbm}

    assert flush_line({"base": fl("dirty"), "variant": fl("dirty"), "control": fl("dirty")}) is None
    assert flush_line({"base": fl("dirty"), "variant": fl("dirty"), "control": None}) is None
    assert flush_line({"base": fl("dirty"), "variant": fl("clean")}) == "L2 flush differs: base dirty, variant clean"
    assert flush_line({"base": fl(None), "variant": fl("clean")}) == "L2 flush differs: base unsaid, variant clean"
    assert flush_line({"base": fl("dirty", 4.23e12), "variant": fl("dirty"), "control": fl("none", 4.4e12)}) == (
        "L2 flush differs: base dirty, variant dirty, control none (the control's noise band is not the base's); "
        "copy ceiling measured (TB/s): base 4.230, control 4.400")

    def ceiling(value, source):
        return {"hbm_bytes_per_s": {"value": value, "datasheet": 4.8e12, "source": source}}

    paths = [write({"ceilings": ceiling(4.3e12, "measured before on H200 (GPU.md)"), "rows": [row("a", "s1", 10.0, LARGE_BYTES)]}),  # before --flush
             write({"l2_flush": "clean", "ceilings": ceiling(4.31e12, "measured now (1 GiB device copy)"),
                    "rows": [row("a", "s1", 9.0, LARGE_BYTES)]}),
             write({"l2_flush": None, "rows": []})]
    try:
        assert [load_report(p)[1] for p in paths] == [fl("dirty"), fl("clean", 4.31e12), fl(None)]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main([paths[0], paths[1], "--label", "--flush clean"]) == 0
        printed = out.getvalue().strip().splitlines()
        assert "L2 flush differs: base dirty, variant clean; copy ceiling measured (TB/s): variant 4.310" in printed, printed
        assert printed[-1].startswith("--flush clean: --flush clean / base geomean 0.900 over 1 rows"), printed
    finally:
        for p in paths:
            os.unlink(p)
    # Verdicts: op a's large row halves (faster, noise 1%); op b moves 0.5% against a 4% control
    # spread (within noise); op c is slower by 30% against 1%; op d is not in the control.
    big = LARGE_BYTES
    base = {("q", "a", "m", "s1"): {"us": 10.0, "bytes": big}, ("q", "a", "m", "s2"): {"us": 1.0, "bytes": 1},
            ("q", "b", "m", "s1"): {"us": 4.0, "bytes": big}, ("q", "b", "m", "s2"): {"us": 4.0, "bytes": big},
            ("q", "c", "m", "s1"): {"us": 2.0, "bytes": 1}, ("q", "d", "m", "s1"): {"us": 2.0, "bytes": 1}}
    var = {("q", "a", "m", "s1"): {"us": 5.0}, ("q", "a", "m", "s2"): {"us": 9.0},
           ("q", "b", "m", "s1"): {"us": 4.02}, ("q", "b", "m", "s2"): {"us": 4.02},
           ("q", "c", "m", "s1"): {"us": 2.6}, ("q", "d", "m", "s1"): {"us": 1.0}}
    ctl = {("q", "a", "m", "s1"): {"us": 10.0}, ("q", "a", "m", "s2"): {"us": 1.0},
           ("q", "b", "m", "s1"): {"us": 4.16}, ("q", "b", "m", "s2"): {"us": 3.9},
           ("q", "c", "m", "s1"): {"us": 2.0}}
    ops = {e["op"]: e for e in compare(base, var, "v", ctl)[1]["ops"]}
    assert ops["a"]["verdict"] == "faster" and ops["a"]["rows"] == 1 and ops["a"]["large"], ops["a"]  # large rows only
    assert abs(ops["a"]["noise"] - MIN_NOISE) < 1e-12, ops["a"]
    assert ops["b"]["verdict"] == "within noise" and abs(ops["b"]["noise"] - math.log(1.04)) < 1e-12, ops["b"]
    assert ops["c"]["verdict"] == "slower" and not ops["c"]["large"], ops["c"]
    assert ops["d"]["verdict"].startswith("no verdict"), ops["d"]
    no_ctl = compare(base, var, "v")[1]
    assert all(e["verdict"] == "no verdict (no control run)" for e in no_ctl["ops"]), no_ctl
    assert op_lines(compare(base, var, "v", ctl)[1])[0] == "v: q/a: v / base 0.500 over 1 large rows, noise +-1.0%: faster"
    _, empty = compare({}, {}, "v")
    assert empty["geomean_all"] is None and "geomean - over 0 rows" in summary_line(empty)
    print("bench_compare self-test: ok")
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", nargs="?")
    ap.add_argument("variant", nargs="?")
    ap.add_argument("--label", default="variant")
    ap.add_argument("--control", help="a second run of the defaults: the noise band for verdicts")
    ap.add_argument("--markdown", help="also write the table and summary to this file")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.base or not args.variant:
        ap.print_usage(sys.stderr)
        return 2
    try:
        (base, base_flush), (variant, variant_flush) = load_report(args.base), load_report(args.variant)
        control, control_flush = load_report(args.control) if args.control else (None, None)
    except (OSError, ValueError, BadReport) as e:
        print(f"bench_compare: {e}", file=sys.stderr)
        return 2
    lines, s = compare(base, variant, args.label, control)
    note = flush_line({"base": base_flush, "variant": variant_flush, "control": control_flush})
    # The overall summary line comes last (tools/gpu-check prints the last line of each compare).
    text = "\n".join(lines + [""] + ([note] if note else []) + op_lines(s) + [summary_line(s)])
    print(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0 if s["common_rows"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
