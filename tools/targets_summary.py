#!/usr/bin/env python3
"""The memory-bound ops' two speed targets, read from one `tejas bench --json` report (on a GPU):

  copy   each op reaches >= 90 % of the copy floor (pct_of_floor: the floor is the bytes the op
         must move at the HBM ceiling bench re-measured at its start, a 1 GiB device copy) on
         every row where it reads >= 8 Mi (2^23) activation elements;
  fusion each fused op is faster than its unfused sequence of Tejas ops (x_baseline, the
         unfused time over the fused one, timed beside the row: docs/tools.md) on every row.

Every activation element the op reads counts, from the row's shape: rms_norm T*H;
fused_add_rms_norm and its fp8-group form 2*T*H (x and the residual); rope and mrope
T*(Hq + Hk)*R (in place: the rotary columns of q and k; R = rotary=, or twice mrope's sections);
rope_kv_cache_write T*(Hq*R + 2*Hk*D) (q's rotary columns, k's and v's whole rows);
kv_cache_write T*2*Hk*D (k and v); silu_mul, gelu_tanh_mul and their quant fusions rows*2F (gate
and up); quant and dequant M*K. Every row of the suites norm, rope, activation and quant is
read (the memory-bound ops of the issue); the pdl suite (graphs of 16 calls), memcpy, gemm and
attention are not.

Verdicts, per op: `met` (every such row at >= 90 %; every fused row at x >= 1.02), `not shown`
(a fused row within 2 % of its baseline, none slower: one run cannot tell that from noise),
`not met` (a row below 90 %, a fused row below 0.98, or a row that failed: check FAIL,
unsupported, an error, the baseline's error), `incomplete` (a row not measured, e.g. cut by
--time-limit, or a baseline the bench could not run, and none failing). Rows not run (working
set above the bench's limit) are counted and left out. The 2 % band is pdl_summary.py's.

  tools/targets_summary.py BENCH.json        the summary (one line when nothing was measured)
  tools/targets_summary.py --brief BENCH.json
      the same, naming one row per list (the worst) instead of four (tools/gpu-check's table)
  tools/targets_summary.py --shapes BENCH.json
      exits 1 naming each row of those suites whose shape this script cannot read or that the
      bench does not call memory-bound (run by CTest on the report `tejas bench --no-check`
      writes without a GPU, so a new op or shape cannot be skipped silently)
  tools/targets_summary.py --self-test       checks the rules on made-up reports (run by CTest)
"""
import contextlib
import io
import json
import os
import re
import statistics
import sys
import tempfile

from pdl_summary import GAIN as FASTER, SLOWER, rows_of  # one noise band for both verdicts

SUITES = ("norm", "rope", "activation", "quant")
MIN_ELEMENTS = 1 << 23  # 8 Mi
COPY_TARGET = 90.0      # % of the copy floor
SHOWN = 4               # rows named per line
LOW = {"pct_of_floor": f"{COPY_TARGET:.0f} %", "x_baseline": f"{SLOWER}"}

_T_H = re.compile(r"^T=(\d+) H=(\d+)\b")
_T_HQ_HK_D = re.compile(r"^T=(\d+) Hq=(\d+) Hk=(\d+) D=(\d+)\b")
_ROTARY = re.compile(r"\brotary=(\d+)\b")
_SECTIONS = re.compile(r"\bsections (\d+)/(\d+)/(\d+)\b")
_T_HK_D = re.compile(r"^T=(\d+) Hk=(\d+) D=(\d+)\b")
_ROWS_F = re.compile(r"^rows=(\d+) F=(\d+)\b")
_M_K = re.compile(r"^M=(\d+) K=(\d+)\b")


def rotary_dim(shape, d):
    """rotary=R, else twice an M-RoPE shape's sections (pairs), else the whole head."""
    m = _ROTARY.search(shape)
    if m:
        return int(m.group(1))
    m = _SECTIONS.search(shape)
    return 2 * sum(map(int, m.groups())) if m else d


def elements(op, shape):
    """Every activation element the row's op reads, from its shape; None if the shape is not read."""
    m = _T_HQ_HK_D.match(shape)
    if m:
        t, hq, hk, d = map(int, m.groups())
        r = rotary_dim(shape, d)
        if op == "rope_kv_cache_write":
            return t * (hq * r + 2 * hk * d)  # q's rotary columns, k's whole rows (to the cache), v
        if op in ("rope", "mrope"):
            return t * (hq + hk) * r  # in place: the rotary columns of q and k
        return None
    m = _T_HK_D.match(shape)
    if m and op == "kv_cache_write":
        t, hk, d = map(int, m.groups())
        return t * 2 * hk * d
    m = _T_H.match(shape)
    if m and op == "rms_norm":
        return int(m.group(1)) * int(m.group(2))
    if m and op in ("fused_add_rms_norm", "fused_add_rms_norm_quant_fp8_group"):
        return 2 * int(m.group(1)) * int(m.group(2))  # x and the residual
    m = _ROWS_F.match(shape)
    if m and op in ("silu_mul", "gelu_tanh_mul", "silu_mul_quant_fp8_group", "silu_mul_quant_mx"):
        return int(m.group(1)) * 2 * int(m.group(2))  # gate and up
    m = _M_K.match(shape)
    if m and op in ("quant_fp8_group", "dequant_fp8_group", "quant_mx", "dequant_mx"):
        return int(m.group(1)) * int(m.group(2))
    return None


def target_rows(rows):
    """The rows of the targets' suites."""
    return [r for r in rows if r.get("suite") in SUITES]


def unread_shapes(rows):
    """The rows of those suites the verdicts could not judge: a shape not read, or a row the bench
    does not call memory-bound (the copy target would not apply)."""
    out = []
    for r in target_rows(rows):
        if elements(r.get("op"), r.get("shape", "")) is None:
            out.append(f"{r.get('suite')} {r.get('op')} '{r.get('shape')}'")
        elif r.get("bound") != "memory":
            out.append(f"{r.get('suite')} {r.get('op')} '{r.get('shape')}' (bound: {r.get('bound')}, not memory)")
    return out


def label(r):
    """'model shape' (one shape can come from several models)."""
    return " ".join(x for x in (r.get("model"), r.get("shape", "?")) if x)


def named(rows, fmt, shown):
    """The first `shown` rows as 'model shape value', value = fmt(row)."""
    text = "; ".join(f"{label(r)} {fmt(r)}" for r in rows[:shown])
    return text + (f" (and {len(rows) - shown} more)" if len(rows) > shown else "")


def ops_in_order(rows):
    order = []
    for r in rows:
        if r.get("op") not in order:
            order.append(r.get("op"))
    return order


def state(r, key):
    """'value' (r[key] measured), 'missing' (not measured: the time limit, no GPU; or the baseline
    unsupported), 'excluded' (not run: the working set), or 'failed' (a check FAIL, unsupported, an
    error, the baseline's error)."""
    if r.get(key) is not None:
        return "value"
    status = r.get("status") or ""
    if status.startswith("not run:"):
        return "excluded"
    if status.startswith("not measured"):
        return "missing"
    if key != "pct_of_floor" and r.get("us") is not None and (
            status == "measured" or status.startswith("measured; baseline unsupported")):
        return "missing"  # timed, its baseline not (no reason given, or the unfused sequence cannot run)
    return "failed"


def judge(op, mine, key, kind, describe, shown, is_low, is_tie=lambda r: False):
    """(line, verdict) of one op's rows for one target."""
    by = {k: [r for r in mine if state(r, key) == k] for k in ("value", "missing", "excluded", "failed")}
    timed, missing, failed = by["value"], len(by["missing"]), by["failed"]
    low = sorted((r for r in timed if is_low(r)), key=lambda r: r[key])
    tie = sorted((r for r in timed if not is_low(r) and is_tie(r)), key=lambda r: r[key])
    if low or failed:
        verdict = "not met"
    elif missing or not timed:
        verdict = "incomplete"
    elif tie:
        verdict = "not shown"
    else:
        verdict = "met"
    text = f"{kind} {op}: {describe(len(mine))}"
    extra = [f"{n} {what}" for n, what in ((missing, "not measured"), (len(by["excluded"]), "not run"),
                                            (len(failed), "failed")) if n]
    if extra:
        text += " (" + ", ".join(extra) + ")"
    vals = [float(r[key]) for r in timed]
    if vals:
        unit = " %" if key == "pct_of_floor" else ""
        f = "{:.1f}" if key == "pct_of_floor" else "{:.3f}"
        what = "of the copy floor" if key == "pct_of_floor" else "x unfused"
        rng = f"{f.format(min(vals))}-{f.format(max(vals))}{unit}"
        med = f.format(statistics.median(vals)) + unit
        text += f", {rng} {what} (median {med})" if key == "pct_of_floor" else f", {what} {rng} (median {med})"
        val = lambda r: f.format(float(r[key])) + unit
        if low:
            text += f"; below {LOW[key]}: {len(low)}: " + named(low, val, shown)
        if tie:
            text += f"; within 2 %: {len(tie)}: " + named(tie, val, shown)
    if failed:
        text += "; failed: " + named(failed, lambda r: f"({r.get('status') or 'no status'})", shown)
    return text + f" -> {verdict}", verdict


def copy_lines(rows, shown):
    """(lines, verdicts): per op, its rows of >= 8 Mi elements against the copy target."""
    lines, verdicts = [], {}
    big = [r for r in target_rows(rows) if (elements(r.get("op"), r.get("shape", "")) or 0) >= MIN_ELEMENTS]
    for op in ops_in_order(big):
        line, verdicts[op] = judge(op, [r for r in big if r.get("op") == op], "pct_of_floor", "copy  ",
                                   lambda n: f"{rows_of(n)} >= 8 Mi elements", shown,
                                   lambda r: float(r["pct_of_floor"]) < COPY_TARGET)
        lines.append(line)
    return lines, verdicts


def fusion_lines(rows, shown):
    """(lines, verdicts): per fused op (rows with a baseline), x unfused on every row."""
    lines, verdicts = [], {}
    fused = [r for r in target_rows(rows) if r.get("baseline")]
    for op in ops_in_order(fused):
        line, verdicts[op] = judge(op, [r for r in fused if r.get("op") == op], "x_baseline", "fusion",
                                   lambda n: f"{rows_of(n)} with an unfused baseline", shown,
                                   lambda r: float(r["x_baseline"]) < SLOWER,
                                   lambda r: float(r["x_baseline"]) < FASTER)
        lines.append(line)
    return lines, verdicts


def count(verdicts, name):
    met = sum(1 for v in verdicts.values() if v == "met")
    return f"{name} {met} of {len(verdicts)} ops met"


def summary(report, shown=SHOWN):
    rows = report.get("rows", [])
    mine = target_rows(rows)
    if not mine:
        return []
    if all(state(r, "pct_of_floor") in ("missing", "excluded") for r in mine):
        suites = [s for s in SUITES if any(r.get("suite") == s for r in mine)]
        return [f"targets: not measured ({rows_of(len(mine))} of {', '.join(suites)}, none timed)"]
    hbm = (report.get("ceilings") or {}).get("hbm_bytes_per_s") or {}
    device = (report.get("gpu") or {}).get("device") or "this GPU"
    ceiling = f"{hbm['value'] / 1e12:.2f} TB/s, {hbm.get('source', '?')}" if hbm.get("value") else "unknown"
    c_lines, c_verdicts = copy_lines(rows, shown)
    f_lines, f_verdicts = fusion_lines(rows, shown)
    # The L2 flush before each timed run (tejas bench --flush; a report without it: the memset).
    flush = report.get("l2_flush") or "dirty"
    head = f"targets on {device} (copy floor at {ceiling}; L2 flush {flush}):"
    tail = f"targets: {count(c_verdicts, 'copy >= 90 %')}; {count(f_verdicts, 'fusions faster')}"
    return [head] + c_lines + f_lines + [tail]


def self_test():
    def row(op, shape, pct=None, x=None, suite="norm", baseline=None, status=None):
        timed = pct is not None or x is not None
        return {"suite": suite, "op": op, "shape": shape, "bound": "memory", "us": 1.0 if timed else None,
                "pct_of_floor": pct, "baseline": baseline, "x_baseline": x,
                "status": status or ("measured" if timed else "not measured: --time-limit reached")}

    # Element counts per shape grammar (the bench's own shape strings).
    assert elements("rms_norm", "T=2048 H=4096 bf16") == 1 << 23
    assert elements("fused_add_rms_norm", "T=1024 H=4096 bf16 -> e4m3 dynamic") == 1 << 23  # x and residual
    assert elements("fused_add_rms_norm_quant_fp8_group", "T=1 H=4096 bf16 -> e4m3 [1x128 f32 scales]") == 8192
    assert elements("rope", "T=16 Hq=32 Hk=8 D=128 rotary=128 neox bf16") == 16 * 40 * 128
    assert elements("rope", "T=16 Hq=32 Hk=8 D=128 rotary=64 gptj bf16") == 16 * 40 * 64  # partial: in place
    assert elements("mrope", "T=16 Hq=32 Hk=4 D=128 sections 16/24/24 bf16") == 16 * 36 * 128
    assert elements("mrope", "T=16 Hq=32 Hk=4 D=128 sections 8/12/12 bf16") == 16 * 36 * 64
    assert elements("rope_kv_cache_write", "T=16 Hq=32 Hk=8 D=128 rotary=128 neox bf16 -> bf16 cache, block 16") \
        == 16 * 48 * 128
    assert elements("rope_kv_cache_write", "T=16 Hq=32 Hk=8 D=128 rotary=64 neox bf16 -> bf16 cache, block 16") \
        == 16 * (32 * 64 + 16 * 128)  # q's rotary part; k and v whole
    assert elements("kv_cache_write", "T=16 Hk=8 D=128 bf16 -> e4m3 cache (scale 1), block 16") == 16 * 16 * 128
    assert elements("silu_mul", "rows=65536 F=2880 bf16 clamped") == 65536 * 5760
    assert elements("silu_mul_quant_mx", "rows=16 F=14336 bf16 -> nvfp4") == 16 * 28672
    assert elements("dequant_mx", "M=16 K=4096 mxfp8 -> bf16") == 16 * 4096
    assert elements("rms_norm", "M=16 K=4096") is None          # a grammar of another op
    assert elements("new_op", "T=1 H=4096 bf16") is None         # an op this script does not know
    assert unread_shapes([row("rms_norm", "T=1 H=8 bf16"), row("new_op", "X=1", suite="rope"),
                          row("rms_norm", "x", suite="pdl"), dict(row("rms_norm", "T=2 H=8 bf16"), bound="compute")]) \
        == ["rope new_op 'X=1'", "norm rms_norm 'T=2 H=8 bf16' (bound: compute, not memory)"]

    # Nothing measured: one line; no rows of the suites: nothing.
    assert summary({"rows": [row("rms_norm", "T=1 H=4096 bf16")]}) == \
        ["targets: not measured (1 row of norm, none timed)"]
    assert summary({"rows": [row("stream_copy", "x", pct=50.0, suite="memcpy")]}) == []

    base = "unfused: a + b"
    report = {
        "gpu": {"device": "NVIDIA H200"},
        "ceilings": {"hbm_bytes_per_s": {"value": 4.3e12, "source": "measured now (1 GiB device copy)"}},
        "rows": [
            row("rms_norm", "T=1 H=4096 bf16", pct=5.0),                  # small: not read for copy
            row("rms_norm", "T=2048 H=4096 bf16", pct=91.0),              # exactly 8 Mi: read
            row("rms_norm", "T=4096 H=4096 bf16", pct=93.0),
            row("silu_mul", "rows=4096 F=4096 bf16", pct=89.5, suite="activation"),
            row("silu_mul", "rows=8192 F=4096 bf16", pct=95.0, suite="activation"),
            row("quant_mx", "M=8192 K=4096 bf16 nvfp4", suite="quant"),                  # cut by the limit
            row("quant_mx", "M=16384 K=4096 bf16 nvfp4", pct=92.0, suite="quant"),
            row("fused_add_rms_norm_quant_fp8_group", "T=1 H=4096 bf16 -> e4m3", pct=3.0, x=1.9, baseline=base),
            row("fused_add_rms_norm_quant_fp8_group", "T=4096 H=4096 bf16 -> e4m3", pct=90.0, x=1.3,
                baseline=base),
            row("silu_mul_quant_mx", "rows=1 F=14336 bf16 -> nvfp4", x=1.01, suite="activation", baseline=base),
            row("silu_mul_quant_mx", "rows=16 F=14336 bf16 -> nvfp4", x=1.5, suite="activation", baseline=base),
            row("rope_kv_cache_write", "T=1 Hq=32 Hk=8 D=128 neox bf16 -> bf16 cache", x=0.95, suite="rope",
                baseline=base),
            row("rope_kv_cache_write", "T=2 Hq=32 Hk=8 D=128 neox bf16 -> bf16 cache", x=1.01, suite="rope",
                baseline=base),
            row("rms_norm", "T=16384 H=4096 bf16, 16 calls in one graph", pct=10.0, x=0.5, suite="pdl",
                baseline=base),
        ],
    }
    lines = summary(report)
    expect = [
        "targets on NVIDIA H200 (copy floor at 4.30 TB/s, measured now (1 GiB device copy); L2 flush dirty):",
        "copy   rms_norm: 2 rows >= 8 Mi elements, 91.0-93.0 % of the copy floor (median 92.0 %) -> met",
        "copy   silu_mul: 2 rows >= 8 Mi elements, 89.5-95.0 % of the copy floor (median 92.2 %); "
        "below 90 %: 1: rows=4096 F=4096 bf16 89.5 % -> not met",
        "copy   quant_mx: 2 rows >= 8 Mi elements (1 not measured), 92.0-92.0 % of the copy floor (median 92.0 %)"
        " -> incomplete",
        "copy   fused_add_rms_norm_quant_fp8_group: 1 row >= 8 Mi elements, 90.0-90.0 % of the copy floor "
        "(median 90.0 %) -> met",
        "fusion fused_add_rms_norm_quant_fp8_group: 2 rows with an unfused baseline, x unfused 1.300-1.900 "
        "(median 1.600) -> met",
        "fusion silu_mul_quant_mx: 2 rows with an unfused baseline, x unfused 1.010-1.500 (median 1.255); "
        "within 2 %: 1: rows=1 F=14336 bf16 -> nvfp4 1.010 -> not shown",
        "fusion rope_kv_cache_write: 2 rows with an unfused baseline, x unfused 0.950-1.010 (median 0.980); "
        "below 0.98: 1: T=1 Hq=32 Hk=8 D=128 neox bf16 -> bf16 cache 0.950; within 2 %: 1: "
        "T=2 Hq=32 Hk=8 D=128 neox bf16 -> bf16 cache 1.010 -> not met",
        "targets: copy >= 90 % 2 of 4 ops met; fusions faster 1 of 3 ops met",
    ]
    assert lines == expect, "\n".join(f"got  {a}\nwant {b}" for a, b in zip(lines, expect) if a != b) or lines

    # A fused op whose rows were cut short: incomplete, unless one already fails.
    cut = {"rows": [row("silu_mul_quant_fp8_group", "rows=8 F=768 bf16 -> e4m3", x=1.5, suite="activation",
                        baseline=base),
                    row("silu_mul_quant_fp8_group", "rows=9 F=768 bf16 -> e4m3", suite="activation", baseline=base)]}
    assert summary(cut)[1] == ("fusion silu_mul_quant_fp8_group: 2 rows with an unfused baseline (1 not measured), "
                               "x unfused 1.500-1.500 (median 1.500) -> incomplete"), summary(cut)
    cut["rows"][0]["x_baseline"] = 0.5
    assert summary(cut)[1].endswith("-> not met"), summary(cut)
    # Rows that failed (a check FAIL, unsupported, the baseline's error) fail the target; rows not run
    # (the working set) are left out and counted.
    bad = {"rows": [row("rms_norm", "T=4096 H=4096 bf16", pct=95.0),
                    row("rms_norm", "T=8192 H=4096 bf16", status="not timed: check FAIL"),
                    row("rms_norm", "T=16384 H=4096 bf16", status="not run: working set above the limit"),
                    row("silu_mul_quant_mx", "rows=1 F=14336 bf16 -> nvfp4", x=1.5, suite="activation", baseline=base),
                    dict(row("silu_mul_quant_mx", "rows=2 F=14336 bf16 -> nvfp4", pct=1.0, suite="activation",
                             baseline=base, status="measured; baseline error: cuda_error: boom"))]}
    got = summary(bad)
    assert got[1] == ("copy   rms_norm: 3 rows >= 8 Mi elements (1 not run, 1 failed), 95.0-95.0 % of the copy floor "
                      "(median 95.0 %); failed: T=8192 H=4096 bf16 (not timed: check FAIL) -> not met"), got
    assert got[2] == ("fusion silu_mul_quant_mx: 2 rows with an unfused baseline (1 failed), x unfused 1.500-1.500 "
                      "(median 1.500); failed: rows=2 F=14336 bf16 -> nvfp4 (measured; baseline error: cuda_error: "
                      "boom) -> not met"), got
    # Every row failed (a broken build): judged, not read as "not measured".
    broken = {"rows": [row("rms_norm", "T=4096 H=4096 bf16", status="not timed: check FAIL")]}
    assert summary(broken)[1:] == [
        "copy   rms_norm: 1 row >= 8 Mi elements (1 failed); failed: T=4096 H=4096 bf16 (not timed: check FAIL)"
        " -> not met", "targets: copy >= 90 % 0 of 1 ops met; fusions faster 0 of 0 ops met"], summary(broken)
    # A baseline the bench could not run (unsupported; not an error): incomplete, not failed.
    unsup = {"rows": [dict(row("silu_mul_quant_mx", "rows=1 F=14336 bf16 -> nvfp4", pct=1.0, suite="activation",
                               baseline=base, status="measured; baseline unsupported: quant_mx: no kernel"))]}
    assert summary(unsup)[1] == ("fusion silu_mul_quant_mx: 1 row with an unfused baseline (1 not measured) "
                                 "-> incomplete"), summary(unsup)
    # Only rows not run: nothing to judge, incomplete.
    assert summary({"rows": [row("rms_norm", "T=4096 H=4096 bf16", status="not run: working set"),
                             row("rms_norm", "T=1 H=4096 bf16", pct=3.0)]})[1] == \
        "copy   rms_norm: 1 row >= 8 Mi elements (1 not run) -> incomplete"
    # A row from a model is named with it.
    assert label({"model": "llama-3.1-8b", "shape": "T=1 H=4096 bf16"}) == "llama-3.1-8b T=1 H=4096 bf16"
    # More rows below the target than are named.
    many = {"l2_flush": "clean",  # a run under tejas bench --flush clean: the head says so
            "rows": [row("rms_norm", f"T={t} H=16384 bf16", pct=50.0 + t / 1024) for t in range(1024, 8192, 1024)]}
    assert summary(many)[1].endswith("; below 90 %: 7: T=1024 H=16384 bf16 51.0 %; T=2048 H=16384 bf16 52.0 %; "
                                     "T=3072 H=16384 bf16 53.0 %; T=4096 H=16384 bf16 54.0 % (and 3 more) -> not met"), \
        summary(many)
    assert summary(many, 1)[1].endswith("; below 90 %: 7: T=1024 H=16384 bf16 51.0 % (and 6 more) -> not met"), \
        summary(many, 1)
    # The command line: a report in a file, --brief, --shapes, bad arguments.
    with tempfile.TemporaryDirectory() as d:
        path, bad_path = os.path.join(d, "bench.json"), os.path.join(d, "list.json")
        with open(bad_path, "w") as f:
            json.dump([1, 2], f)
        with open(path, "w") as f:
            json.dump(many, f)
        for args, rc, first in ((["--brief", path], 0, "targets on this GPU (copy floor at unknown; L2 flush clean):"),
                                (["--shapes", path], 0, "targets_summary: 7 of 7 rows read"),
                                ([path, path], 2, ""), (["--brief"], 2, ""), ([bad_path], 2, ""),
                                ([os.path.join(d, "none.json")], 2, "")):
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                got_rc = main(["targets_summary.py"] + args)
            assert got_rc == rc and out.getvalue().split("\n")[0] == first, (args, got_rc, out.getvalue())
        many["rows"][0]["shape"] = "X=1"
        with open(path, "w") as f:
            json.dump(many, f)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert main(["targets_summary.py", "--shapes", path]) == 1
    print("targets_summary self-test: ok")
    return 0


def main(argv):
    args = argv[1:]
    if args in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if args == ["--self-test"]:
        return self_test()
    mode = args[0] if len(args) == 2 and args[0] in ("--shapes", "--brief") else None
    if len(args) != (2 if mode else 1) or args[-1].startswith("-"):
        print("usage: tools/targets_summary.py [--brief | --shapes] BENCH.json | --self-test (--help)",
              file=sys.stderr)
        return 2
    path = args[-1]
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"targets_summary: cannot read {path}: {e}", file=sys.stderr)
        return 2
    if not isinstance(report, dict) or not isinstance(report.get("rows", []), list):
        print(f"targets_summary: {path} is not a bench report (an object with a list of rows)", file=sys.stderr)
        return 2
    rows = report.get("rows", [])
    if mode == "--shapes":
        unread, n = unread_shapes(rows), len(target_rows(rows))
        if not n:
            print(f"targets_summary: {path} has no rows of {', '.join(SUITES)}", file=sys.stderr)
            return 1
        for u in unread:
            print(f"targets_summary: shape not read: {u}", file=sys.stderr)
        print(f"targets_summary: {n - len(unread)} of {n} rows read")
        return 1 if unread else 0
    for line in summary(report, 1 if mode == "--brief" else SHOWN):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
