#!/usr/bin/env python3
"""The bench's `pdl` rows in a few lines: what programmatic dependent launch (ExecContext::pdl)
saved over plain stream order, and whether this run supports making it the default on sm_90
(docs/using.md). Reads a `tejas bench --json` file.

Each pdl row is 16 calls of a decode-sized kernel in one CUDA graph, programmatic, against the
same graph in stream order timed beside it (bench/suites_pdl.cpp), so x_baseline (stream order's
time over programmatic's) measures what 15 kernel boundaries cost less, and (baseline_us - us) / 15
is the time saved per boundary. The verdict holds for the GPU the report names (gpu.device):
programmatic launch needs sm_90 or newer.

The rule printed last: the default may change when no row is slower than SLOWER (0.98, an
allowance for run-to-run noise, which one run cannot measure) and the median row gains at least
GAIN (1.02). A run that meets it is evidence, not proof: read the rows.

  tools/pdl_summary.py BENCH.json     the summary (nothing when the file has no pdl rows)
  tools/pdl_summary.py --self-test    checks the arithmetic on a made-up report (run by CTest)
"""
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile

CHAIN = 16  # calls per graph (bench/suites_pdl.cpp's kChain)
SLOWER = 0.98
GAIN = 1.02


def pdl_rows(rows):
    """(measured, unmeasured): the pdl rows with both times, and how many pdl rows lack them."""
    measured, missing = [], 0
    for r in rows:
        if r.get("suite") != "pdl":
            continue
        if r.get("us") is None or r.get("baseline_us") is None or r.get("x_baseline") is None:
            missing += 1
        else:
            measured.append(r)
    return measured, missing


def rows_of(n):
    return f"{n} row" + ("" if n == 1 else "s")


def label(r):
    shape = r.get("shape", "").split(", %d calls" % CHAIN)[0]
    return f"{r.get('op', '?')} {shape}"


def summary(rows, device=None):
    measured, missing = pdl_rows(rows)
    if not measured and not missing:
        return []
    if not measured:
        return ["pdl: 0 rows measured ({missing} not)".format(missing=missing)]
    xs = [float(r["x_baseline"]) for r in measured]
    per_boundary = [(float(r["baseline_us"]) - float(r["us"])) / (CHAIN - 1) for r in measured]
    lo = min(measured, key=lambda r: r["x_baseline"])
    hi = max(measured, key=lambda r: r["x_baseline"])
    med = statistics.median(xs)
    lines = [
        f"pdl: {rows_of(len(measured))} measured ({missing} not); x stream order: median {med:.3f}, "
        f"min {lo['x_baseline']:.3f} ({label(lo)}), max {hi['x_baseline']:.3f} ({label(hi)}); "
        f"saved per kernel boundary: median {statistics.median(per_boundary):.2f} us"
    ]
    by_op = {}
    for r in measured:
        by_op.setdefault(r.get("op", "?"), []).append(float(r["x_baseline"]))
    lines.append("pdl by op (median x, rows): " +
                 ", ".join(f"{op} {statistics.median(v):.3f} ({len(v)})" for op, v in sorted(by_op.items())))
    slow = sorted((r for r in measured if r["x_baseline"] < SLOWER), key=lambda r: r["x_baseline"])
    if slow:
        shown = "; ".join(f"{label(r)} {r['x_baseline']:.3f}" for r in slow[:5])
        more = f" (and {len(slow) - 5} more)" if len(slow) > 5 else ""
        lines.append(f"pdl rows below {SLOWER}: {len(slow)}: {shown}{more}")
    else:
        lines.append(f"pdl rows below {SLOWER}: none")
    reasons = []
    if slow:
        reasons.append(f"{rows_of(len(slow))} below {SLOWER}")
    if med < GAIN:
        reasons.append(f"median {med:.3f} below {GAIN}")
    if missing:
        reasons.append(f"{rows_of(missing)} not measured")
    lines.append(f"pdl as the default on {device or 'this GPU'}: " +
                 ("supported by this run" if not reasons else "not supported by this run (" + "; ".join(reasons) + ")"))
    return lines


def self_test():
    def row(op, shape, us, base, suite="pdl"):
        return {"suite": suite, "op": op, "shape": f"{shape}, {CHAIN} calls in one graph, programmatic", "us": us,
                "baseline_us": base, "x_baseline": None if us is None or base is None else base / us}

    rows = [
        row("rms_norm", "T=1 H=4096 bf16", 30.0, 45.0),
        row("rms_norm", "T=16 H=4096 bf16", 40.0, 52.0),
        row("rope", "T=1 Hq=32 Hk=8 D=128 bf16", 50.0, 50.5),
        {"suite": "norm", "op": "rms_norm", "shape": "T=1 H=4096 bf16", "us": 3.0, "baseline_us": None,
         "x_baseline": None},
    ]
    lines = summary(rows)
    assert lines[0].startswith("pdl: 3 rows measured (0 not); x stream order: median 1.300, min 1.010 "
                               "(rope T=1 Hq=32 Hk=8 D=128 bf16), max 1.500 (rms_norm T=1 H=4096 bf16)"), lines
    assert lines[0].endswith("saved per kernel boundary: median 0.80 us"), lines  # (52 - 40) / 15
    assert lines[1] == "pdl by op (median x, rows): rms_norm 1.400 (2), rope 1.010 (1)", lines
    assert lines[2] == "pdl rows below 0.98: none", lines
    assert lines[3] == "pdl as the default on this GPU: supported by this run", lines

    rows.append(row("silu_mul", "T=1 I=14336 bf16", 50.0, 45.0))  # 0.9: slower
    rows.append(row("silu_mul", "T=2 I=14336 bf16", None, 45.0))
    lines = summary(rows)
    assert lines[0].startswith("pdl: 4 rows measured (1 not)"), lines
    assert lines[2] == "pdl rows below 0.98: 1: silu_mul T=1 I=14336 bf16 0.900", lines
    assert lines[3] == "pdl as the default on this GPU: not supported by this run (1 row below 0.98; 1 row not measured)", lines

    flat = [row("rope", f"T={t} bf16", 50.0, 50.5) for t in (1, 2, 3)]
    assert summary(flat, "NVIDIA H200")[-1] == \
        "pdl as the default on NVIDIA H200: not supported by this run (median 1.010 below 1.02)"
    assert summary([{"suite": "norm", "op": "rms_norm", "us": 1.0}]) == []
    assert summary([row("rope", "T=1", None, None)]) == ["pdl: 0 rows measured (1 not)"]
    # The report's device names the verdict's GPU.
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"gpu": {"device": "NVIDIA H200"}, "rows": flat}, f)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            assert main(["pdl_summary.py", f.name]) == 0
    finally:
        os.unlink(f.name)
    assert out.getvalue().splitlines()[-1].startswith("pdl as the default on NVIDIA H200: not supported"), out.getvalue()
    print("pdl_summary self-test: ok")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2 or argv[1].startswith("-"):
        sys.stderr.write(__doc__)
        return 0 if argv[1:] in (["--help"], ["-h"]) else 2
    try:
        with open(argv[1]) as f:
            report = json.load(f)
        rows = report.get("rows", [])
        device = (report.get("gpu") or {}).get("device")
    except (OSError, ValueError) as e:
        sys.stderr.write(f"pdl_summary: cannot read {argv[1]}: {e}\n")
        return 2
    for line in summary(rows, device):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
