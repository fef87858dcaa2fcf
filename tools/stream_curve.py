#!/usr/bin/env python3
"""The memcpy bench's stream_copy rows as one short table: % of the copy floor against KiB of
loads in flight per SM, for the 1 : 1 copy (by blocks per SM and loads per thread), its cp.async
mode (copies held in shared memory) and each read / write mix (docs/kernels/stream_copy.md). Reads a `tejas bench --json` file.

  tools/stream_curve.py BENCH.json     the table (nothing when the file has no measured rows)
  tools/stream_curve.py --self-test    checks the parsing on a made-up report (run by CTest)
"""
import json
import re
import sys

SHAPE = re.compile(r"(?:(\d+) read : (\d+) written, )?(\d+) x 256 threads per SM, .*: (\d+) KiB of loads in flight")
STAGES = re.compile(r"cp\.async (\d+) stages x (\d+) x 16 B")


def curve(rows):
    """[(mix, blocks, kib, pct, how)] of the measured stream_copy rows, mix "1:1", "2:1", ...; how
    names a cp.async row's stages x vectors ("4x1"; two setups may hold the same KiB), else "" """
    out = []
    for r in rows:
        if r.get("op") != "stream_copy" or r.get("pct_of_floor") is None:
            continue
        m = SHAPE.search(r.get("shape", ""))
        if not m:
            continue
        mix = f"{m.group(1) or 1}:{m.group(2) or 1}" + (" cp.async" if "cp.async" in r["shape"] else "")
        s = STAGES.search(r["shape"])
        how = f"{s.group(1)}x{s.group(2)}" if s else ""
        out.append((mix, int(m.group(3)), int(m.group(4)), float(r["pct_of_floor"]), how))
    return out


def cell(kib, pct, how):
    return f"{kib} KiB" + (f" ({how})" if how else "") + f" {pct:.0f}%"


def by_blocks(points, mix, title):
    """The title, then one line per blocks-per-SM count: KiB in flight and % of the floor."""
    pts = sorted(p for p in points if p[0] == mix)
    if not pts:
        return []
    lines = [title]
    for blocks in sorted({p[1] for p in pts}):
        cells = ", ".join(cell(kib, pct, how) for _, b, kib, pct, how in sorted(pts, key=lambda p: (p[2], p[4])) if b == blocks)
        lines.append(f"  {blocks} blocks: {cells}")
    return lines


def table(points):
    lines = by_blocks(points, "1:1", "stream_copy 1:1 (% of the copy floor at KiB in flight per SM, by blocks of 256 per SM):")
    lines += by_blocks(points, "1:1 cp.async",
                       "stream_copy 1:1 through cp.async into shared memory (by blocks of 256 per SM; stages x vectors):")
    mixes = sorted(p for p in points if p[0] not in ("1:1", "1:1 cp.async"))
    for mix in sorted({p[0] for p in mixes}):
        cells = ", ".join(cell(kib, pct, how) for m, _, kib, pct, how in sorted(mixes, key=lambda p: (p[2], p[4])) if m == mix)
        lines.append(f"stream_copy {mix}: {cells}")
    return lines


def self_test():
    rows = [
        {"op": "stream_copy", "shape": "256 MiB, 2 x 256 threads per SM, 4 x 16 B per thread: 32 KiB of loads in flight per SM",
         "pct_of_floor": 88.4},
        {"op": "stream_copy", "shape": "256 MiB, 1 x 256 threads per SM, 1 x 16 B per thread: 4 KiB of loads in flight per SM",
         "pct_of_floor": 20.0},
        {"op": "stream_copy", "shape": "128 MiB planes, 1 read : 2 written, 2 x 256 threads per SM, 4 x 16 B per thread: "
         "32 KiB of loads in flight per SM", "pct_of_floor": 61.0},
        {"op": "stream_copy", "shape": "256 MiB, 8 x 256 threads per SM, 1 x 16 B per thread: 32 KiB of loads in flight per SM",
         "pct_of_floor": None},
        {"op": "rms_norm", "shape": "T=1 H=4096 bf16", "pct_of_floor": 1.0},
        {"op": "stream_copy", "shape": "256 MiB, 4 x 256 threads per SM, cp.async 4 stages x 2 x 16 B per thread: "
         "128 KiB of loads in flight per SM", "pct_of_floor": 93.0},
        # Two setups holding the same KiB: told apart by stages x vectors.
        {"op": "stream_copy", "shape": "256 MiB, 4 x 256 threads per SM, cp.async 4 stages x 1 x 16 B per thread: "
         "64 KiB of loads in flight per SM", "pct_of_floor": 66.0},
        {"op": "stream_copy", "shape": "256 MiB, 4 x 256 threads per SM, cp.async 2 stages x 2 x 16 B per thread: "
         "64 KiB of loads in flight per SM", "pct_of_floor": 90.0},
    ]
    pts = curve(rows)
    assert pts == [("1:1", 2, 32, 88.4, ""), ("1:1", 1, 4, 20.0, ""), ("1:2", 2, 32, 61.0, ""),
                   ("1:1 cp.async", 4, 128, 93.0, "4x2"), ("1:1 cp.async", 4, 64, 66.0, "4x1"),
                   ("1:1 cp.async", 4, 64, 90.0, "2x2")], pts
    t = table(pts)
    assert t[1] == "  1 blocks: 4 KiB 20%", t
    assert t[2] == "  2 blocks: 32 KiB 88%", t
    assert t[3] == "stream_copy 1:1 through cp.async into shared memory (by blocks of 256 per SM; stages x vectors):", t
    assert t[4] == "  4 blocks: 64 KiB (2x2) 90%, 64 KiB (4x1) 66%, 128 KiB (4x2) 93%", t
    assert t[5] == "stream_copy 1:2: 32 KiB 61%", t
    assert table([]) == []
    print("stream_curve self-test: ok")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2 or argv[1].startswith("-"):
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        rows = json.load(f).get("rows", [])
    for line in table(curve(rows)):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
