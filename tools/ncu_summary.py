#!/usr/bin/env python3
"""Summarize Nsight Compute raw CSV exports (`ncu --import R.ncu-rep --csv --page raw`), one line
per profiled kernel: where a memory-bound kernel's time goes.

usage: tools/ncu_summary.py [--markdown FILE] NAME=FILE.csv [NAME=FILE.csv ...]
       tools/ncu_summary.py --self-test

Columns: the profile's NAME (tools/gpu-check's profile target), the kernel, duration (us), DRAM
throughput (% of peak) and bytes read / written (MB), achieved occupancy (% of the warps an SM
holds), registers per thread, the shared-memory carveout the driver configured for the launch
(KiB per SM: what of the SM's L1 / shared memory is not L1), issue-slot use (% of cycles a scheduler issued), the ALU, FMA
and XU pipes' use (% of their peak: the integer ALU issues every other cycle, so a conversion-
heavy kernel can be ALU-bound at ~70 % issue; XU: transcendentals, reciprocals), and the three
largest warp stall reasons (warps stalled per issued instruction: long_scoreboard = waiting on
global / local memory, no_instruction = instruction fetch, lg_throttle = the load/store queue,
wait = fixed-latency dependencies, ...). Metrics absent from a file print '-'.

tools/gpu-check's profile step runs each target under
`ncu --clock-control none --section ... -k regex:KERNEL --launch-count 1` (the first launch of
the row's kernel: its first warm-up run, `tejas bench --filter ROW --no-check`), keeps the .ncu-rep
and writes the raw CSV this script reads. A file that does not read is reported and skipped (the
others are still summarized). Standard library only. Exit status: 0; 1 when a file did not read
or held no profiled kernel, or none did; 2 on bad arguments.
"""
import argparse
import csv
import io
import re
import sys

DURATION = "gpu__time_duration.sum"
DRAM_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
REGISTERS = "launch__registers_per_thread"
SMEM_CONFIG = "launch__shared_mem_config_size"
ISSUE = "smsp__issue_active.avg.pct_of_peak_sustained_active"
PIPE_ALU = "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed"
PIPE_FMA = "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed"
PIPE_XU = "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_elapsed"
STALL = re.compile(r"^smsp__average_warps?_(?:issue_stalled|latency_issue_stalled)_(.+?)_per_issue_active\.ratio$")
# Not stalls: "selected" is the issuing warp itself (1 per issue by definition).
NOT_STALLS = {"selected", "not_selected"}
TOP_STALLS = 3
# Unit scales to the printed units (us, MB); ncu's raw page names the unit in the second row.
TIME_SCALE = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6, "second": 1e6}
# KiB: the carveouts are binary sizes (an H200 SM: 256 KiB of L1 and shared memory in all).
KIB_SCALE = {"byte": 1 / 1024, "Kbyte": 1000 / 1024, "KB": 1000 / 1024, "KiB": 1.0, "Mbyte": 1e6 / 1024,
             "MB": 1e6 / 1024}
BYTE_SCALE = {"byte": 1e-6, "Kbyte": 1e-3, "KB": 1e-3, "Mbyte": 1.0, "MB": 1.0, "Gbyte": 1e3, "GB": 1e3}


class BadFile(Exception):
    pass


def number(text):
    """A metric value as float ("1,234.5" and "n/a" tolerated), or None."""
    t = (text or "").strip().replace(",", "")
    try:
        return float(t)
    except ValueError:
        return None


def read_kernels(text):
    """[(kernel name, {metric: (value, unit)})] from one raw CSV export."""
    rows = list(csv.reader(io.StringIO(text)))
    header_at = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if header_at is None:
        raise BadFile("no header row with 'Kernel Name' (not an ncu --csv --page raw export?)")
    header = rows[header_at]
    name_col = header.index("Kernel Name")
    body = rows[header_at + 1:]
    units = {}
    # The units row: no kernel name, and the ID column (first) empty.
    if body and (len(body[0]) <= name_col or not body[0][name_col].strip()):
        units = {header[i]: u for i, u in enumerate(body[0]) if i < len(header)}
        body = body[1:]
    kernels = []
    for r in body:
        if len(r) <= name_col or not r[name_col].strip():
            continue
        metrics = {header[i]: (v, units.get(header[i], "")) for i, v in enumerate(r) if i < len(header)}
        kernels.append((r[name_col].strip(), metrics))
    return kernels


def scaled(metrics, key, scales):
    if key not in metrics:
        return None
    v, unit = metrics[key]
    x = number(v)
    if x is None:
        return None
    return x * scales.get(unit.strip(), 1.0) if unit.strip() else x


def plain(metrics, key):
    return number(metrics[key][0]) if key in metrics else None


def fmt(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f}"


def short_kernel(name):
    """The kernel's name without its argument list: 'quant_vec_kernel<Bf16, e2m1, nvfp4>'."""
    depth, out = 0, []
    for ch in name:
        if ch == "(" and depth == 0:
            break
        depth += ch == "<"
        depth -= ch == ">"
        out.append(ch)
    text = re.sub(r"\btejas::(\w+::)*", "", "".join(out)).strip()
    return text[len("void "):] if text.startswith("void ") else text


def summarize(label, kernel, metrics):
    stalls = []
    for key in metrics:
        m = STALL.match(key)
        if m and m.group(1) not in NOT_STALLS:
            v = plain(metrics, key)
            if v is not None:
                stalls.append((v, m.group(1)))
    stalls.sort(reverse=True)
    return {
        "name": label,
        "kernel": short_kernel(kernel),
        "us": scaled(metrics, DURATION, TIME_SCALE),
        "dram_pct": plain(metrics, DRAM_PCT),
        "read_mb": scaled(metrics, DRAM_READ, BYTE_SCALE),
        "write_mb": scaled(metrics, DRAM_WRITE, BYTE_SCALE),
        "occupancy": plain(metrics, OCCUPANCY),
        "registers": plain(metrics, REGISTERS),
        "smem_config_kib": scaled(metrics, SMEM_CONFIG, KIB_SCALE),
        "issue_pct": plain(metrics, ISSUE),
        "alu_pct": plain(metrics, PIPE_ALU),
        "fma_pct": plain(metrics, PIPE_FMA),
        "xu_pct": plain(metrics, PIPE_XU),
        "stalls": ", ".join(f"{n} {v:.2f}" for v, n in stalls[:TOP_STALLS]) or "-",
    }


COLUMNS = ["name", "kernel", "us", "DRAM %", "read MB", "write MB", "occupancy %", "regs", "smem cfg KiB", "issue %",
           "ALU %", "FMA %", "XU %", "top stalls"]


def line(s):
    return [s["name"], s["kernel"], fmt(s["us"], 2), fmt(s["dram_pct"]), fmt(s["read_mb"]), fmt(s["write_mb"]),
            fmt(s["occupancy"]), fmt(s["registers"], 0), fmt(s["smem_config_kib"]), fmt(s["issue_pct"]), fmt(s["alu_pct"]), fmt(s["fma_pct"]),
            fmt(s["xu_pct"]), s["stalls"]]


def run(pairs, markdown):
    summaries = []
    bad = False
    for pair in pairs:
        label, sep, path = pair.partition("=")
        if not sep or not label or not path:
            print(f"ncu_summary: expected NAME=FILE.csv, got '{pair}'", file=sys.stderr)
            return 2
    for pair in pairs:
        label, _, path = pair.partition("=")
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                kernels = read_kernels(f.read())
        except (OSError, BadFile) as e:
            print(f"ncu_summary: {path}: {e} (skipped)", file=sys.stderr)
            bad = True
            continue
        if not kernels:
            print(f"ncu_summary: {path}: no profiled kernel", file=sys.stderr)
            bad = True
        summaries += [summarize(label, k, m) for k, m in kernels]
    print(" | ".join(COLUMNS))
    for s in summaries:
        print(" | ".join(line(s)))
    if markdown:
        with open(markdown, "w", encoding="utf-8") as f:
            f.write("| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS) + "\n")
            for s in summaries:
                f.write("| " + " | ".join(line(s)) + " |\n")
    return 0 if summaries and not bad else 1


def self_test():
    csv_text = (
        '"ID","Process ID","Kernel Name","gpu__time_duration.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed",'
        '"dram__bytes_read.sum","dram__bytes_write.sum","sm__warps_active.avg.pct_of_peak_sustained_active",'
        '"launch__registers_per_thread","smsp__issue_active.avg.pct_of_peak_sustained_active",'
        '"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",'
        '"smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio",'
        '"smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",'
        '"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",'
        '"smsp__average_warps_issue_stalled_selected_per_issue_active.ratio",'
        '"sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed",'
        '"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed","launch__shared_mem_config_size"\n'
        '"","","","usecond","%","Mbyte","Kbyte","%","register/thread","%","inst","inst","inst","inst","inst","%","%",'
        '"Kbyte"\n'
        '"0","123","void tejas::quant_kernel::compiled::quant_vec_kernel<tejas::num::Bf16, '
        '(tejas::num::CodeFormat)2, (tejas::quant_kernel::ScaleRule)3>(tejas::quant_kernel::QuantParams)",'
        '"1,131.17","7.5","235.0","58,720.0","88.2","64","41.3","3.10","12.50","0.80","0.0","1.0","79.4","16.7",'
        '"32.768"\n'
    )
    kernels = read_kernels(csv_text)
    assert len(kernels) == 1, kernels
    s = summarize("nvfp4", *kernels[0])
    assert s["kernel"] == "quant_vec_kernel<Bf16, (CodeFormat)2, (ScaleRule)3>", s
    assert abs(s["us"] - 1131.17) < 1e-9, s
    assert abs(s["read_mb"] - 235.0) < 1e-9 and abs(s["write_mb"] - 58.72) < 1e-9, s
    assert s["registers"] == 64 and abs(s["issue_pct"] - 41.3) < 1e-9, s
    assert s["stalls"] == "no_instruction 12.50, long_scoreboard 3.10, wait 0.80", s
    assert abs(s["alu_pct"] - 79.4) < 1e-9 and abs(s["fma_pct"] - 16.7) < 1e-9 and s["xu_pct"] is None, s
    assert abs(s["smem_config_kib"] - 32.0) < 1e-9 and line(s)[8] == "32.0", s
    assert line(s)[10:13] == ["79.4", "16.7", "-"], line(s)
    # Nanoseconds and a missing metric.
    ns = csv_text.replace('"usecond"', '"nsecond"').replace('"1,131.17"', '"2500"')
    s2 = summarize("x", *read_kernels(ns)[0])
    assert abs(s2["us"] - 2.5) < 1e-9, s2
    trimmed = "\n".join(",".join(c for c in r.split(",")[:4]) for r in csv_text.splitlines()[:1]) + "\n"
    try:
        read_kernels("garbage\n1,2,3\n")
        raise AssertionError("a file without the header must be rejected")
    except BadFile:
        pass
    assert read_kernels(trimmed) == [], "a header alone holds no kernel"
    assert short_kernel("a::b<c<d>, e>(p, q)") == "a::b<c<d>, e>"
    print("ncu_summary self-test: ok")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pairs", nargs="*", metavar="NAME=FILE.csv")
    ap.add_argument("--markdown", metavar="FILE")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.pairs:
        ap.print_usage(sys.stderr)
        return 2
    return run(a.pairs, a.markdown)


if __name__ == "__main__":
    sys.exit(main())
