#!/usr/bin/env python3
"""Draw a roofline SVG from a `tejas bench` (or `tejas roofline`) JSON report.

x: arithmetic intensity (FLOP per HBM byte, log scale); y: FLOP/s (log scale).
Ceilings: the HBM line (bandwidth x intensity) and one flat line per compute ceiling.
Points: one per kernel and shape with a measured time (filled, coloured by suite); rows that
were not measured are drawn hollow at their floor (the best the roofline allows), so a plot
made without a GPU never shows a measurement it does not have. The pdl suite's rows are left
out: their 16 calls count 16 times the bytes but find them in L2 after the first (docs/tools.md).

Standard library only (the GPU machine has no matplotlib).
usage: tools/roofline_plot.py REPORT.json [-o roofline.svg]
       tools/roofline_plot.py --self-test
"""
import argparse
import html
import json
import math
import sys

WIDTH, HEIGHT = 960, 640
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 80, 220, 40, 60
POINT_R = 4
SUITE_COLOURS = {
    "norm": "#1f77b4", "rope": "#ff7f0e", "activation": "#2ca02c", "quant": "#d62728",
    "attention": "#9467bd", "memcpy": "#8c564b", "gemm": "#e377c2",
}
CEILING_LABELS = {
    "fp32_simt_flops": "fp32 CUDA cores", "bf16_tensor_flops": "bf16 tensor",
    "fp8_tensor_flops": "fp8 tensor", "fp4_tensor_flops": "fp4 tensor",
}
MIN_INTENSITY = 1e-2  # copies have zero FLOPs: plotted at the left edge


def load(path):
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    if report.get("schema_version") != 1:
        sys.exit(f"roofline_plot: unsupported schema_version {report.get('schema_version')}")
    return report


def points(report):
    """(intensity, flop/s, suite, label, measured) per row with FLOPs."""
    hbm = report["ceilings"]["hbm_bytes_per_s"]["value"] or 0
    out = []
    for row in report["rows"]:
        if not row["flops"] or row["suite"] == "pdl":
            continue
        ai = max(row["intensity"], MIN_INTENSITY)
        label = f'{row["op"]} {row["model"]} {row["shape"]}'.replace("  ", " ")
        if row["us"] is not None:
            out.append((ai, row["flops"] / (row["us"] * 1e-6), row["suite"], label + f' ({row["us"]:.2f} us)', True))
        elif row["floor_us"]:
            bound = row["flops"] / (row["floor_us"] * 1e-6)
            out.append((ai, bound, row["suite"], label + " (floor, not measured)", False))
    return out, hbm


def render(report):
    pts, hbm = points(report)
    ceilings = [(CEILING_LABELS[k], v["value"]) for k, v in report["ceilings"].items()
                if k in CEILING_LABELS and v["value"]]
    peak = max([c for _, c in ceilings] + [p[1] for p in pts] + [1e12])
    x_lo = MIN_INTENSITY
    x_hi = max([p[0] for p in pts] + [1e4]) * 2
    y_hi = peak * 2
    y_lo = max(min([p[1] for p in pts] + [hbm * x_lo if hbm else peak * 1e-6]) / 2, 1e6)
    plot_w, plot_h = WIDTH - MARGIN_L - MARGIN_R, HEIGHT - MARGIN_T - MARGIN_B

    def sx(x):
        return MARGIN_L + plot_w * (math.log10(x) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo))

    def sy(y):
        y = min(max(y, y_lo), y_hi)
        return MARGIN_T + plot_h * (1 - (math.log10(y) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo)))

    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="11">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>']
    gpu = report["gpu"]
    title = f'roofline: {gpu.get("device") or gpu["name"]} ({"measured" if gpu["present"] else "no GPU: floors only"})'
    svg.append(f'<text x="{MARGIN_L}" y="24" font-size="14">{html.escape(title)}</text>')
    # Decade grid and axis labels.
    for e in range(math.floor(math.log10(x_lo)), math.ceil(math.log10(x_hi)) + 1):
        x = 10.0 ** e
        if x_lo <= x <= x_hi:
            svg.append(f'<line x1="{sx(x):.1f}" y1="{MARGIN_T}" x2="{sx(x):.1f}" y2="{HEIGHT - MARGIN_B}" stroke="#eee"/>')
            svg.append(f'<text x="{sx(x):.1f}" y="{HEIGHT - MARGIN_B + 16}" text-anchor="middle">1e{e}</text>')
    for e in range(math.floor(math.log10(y_lo)), math.ceil(math.log10(y_hi)) + 1):
        y = 10.0 ** e
        if y_lo <= y <= y_hi:
            svg.append(f'<line x1="{MARGIN_L}" y1="{sy(y):.1f}" x2="{WIDTH - MARGIN_R}" y2="{sy(y):.1f}" stroke="#eee"/>')
            svg.append(f'<text x="{MARGIN_L - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">1e{e}</text>')
    svg.append(f'<text x="{MARGIN_L + plot_w / 2}" y="{HEIGHT - 16}" text-anchor="middle">arithmetic intensity (FLOP / HBM byte)</text>')
    svg.append(f'<text x="18" y="{MARGIN_T + plot_h / 2}" transform="rotate(-90 18 {MARGIN_T + plot_h / 2})" text-anchor="middle">FLOP/s</text>')
    # Ceilings: the memory slope meets each flat compute roof at intensity peak / bandwidth.
    for name, value in ceilings:
        knee = value / hbm if hbm else x_lo
        x0 = max(knee, x_lo)
        svg.append(f'<line x1="{sx(x0):.1f}" y1="{sy(value):.1f}" x2="{sx(x_hi):.1f}" y2="{sy(value):.1f}" stroke="#333" stroke-dasharray="4 3"/>')
        svg.append(f'<text x="{WIDTH - MARGIN_R + 4}" y="{sy(value) + 4:.1f}">{html.escape(name)} {value / 1e12:.0f} TFLOP/s</text>')
    if hbm:
        x1 = min(peak / hbm, x_hi)
        svg.append(f'<line x1="{sx(x_lo):.1f}" y1="{sy(hbm * x_lo):.1f}" x2="{sx(x1):.1f}" y2="{sy(hbm * x1):.1f}" stroke="#333" stroke-width="2"/>')
        svg.append(f'<text x="{sx(x_lo) + 4:.1f}" y="{sy(hbm * x_lo * 3) - 6:.1f}">HBM {hbm / 1e12:.2f} TB/s</text>')
    for ai, flops, suite, label, measured in pts:
        colour = SUITE_COLOURS.get(suite, "#555")
        fill = colour if measured else "none"
        svg.append(f'<circle cx="{sx(ai):.1f}" cy="{sy(flops):.1f}" r="{POINT_R}" fill="{fill}" stroke="{colour}">'
                   f'<title>{html.escape(label)}</title></circle>')
    # Legend: suites present.
    y = MARGIN_T + plot_h - 14 * len(SUITE_COLOURS)
    for suite, colour in SUITE_COLOURS.items():
        if any(p[2] == suite for p in pts):
            svg.append(f'<circle cx="{WIDTH - MARGIN_R + 10}" cy="{y - 4}" r="{POINT_R}" fill="{colour}"/>')
            svg.append(f'<text x="{WIDTH - MARGIN_R + 20}" y="{y}">{suite}</text>')
            y += 14
    svg.append(f'<text x="{WIDTH - MARGIN_R + 4}" y="{y + 6}">hollow: floor, not measured</text>')
    svg.append("</svg>")
    return "\n".join(svg) + "\n"


def self_test():
    def row(suite, us):
        return {"suite": suite, "op": "rms_norm", "model": "m", "shape": "T=1", "flops": 4.0e6, "intensity": 0.5,
                "us": us, "floor_us": 1.0}
    report = {"ceilings": {"hbm_bytes_per_s": {"value": 4.3e12}},
              "rows": [row("norm", 2.0), row("pdl", 2.0), row("norm", None), dict(row("norm", 2.0), flops=0)]}
    pts, hbm = points(report)
    assert hbm == 4.3e12
    assert [(p[2], p[4]) for p in pts] == [("norm", True), ("norm", False)], pts
    assert pts[0][1] == 4.0e6 / 2.0e-6 and pts[1][1] == 4.0e6 / 1.0e-6, pts
    print("roofline_plot self-test: ok")
    return 0


def main(argv=None):
    if (argv if argv is not None else sys.argv[1:]) == ["--self-test"]:
        return self_test()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", help="JSON written by tejas bench --json or tejas roofline --json")
    ap.add_argument("-o", "--output", default="roofline.svg", help="SVG file to write (default roofline.svg)")
    args = ap.parse_args(argv)
    svg = render(load(args.report))
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(svg)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
