#!/usr/bin/env python3
"""dsv4-cache-plan --svg, rendered by a real renderer (rsvg-convert, Debian's librsvg2-bin).

Runs the planner on two deployments with --svg, parses each file as XML (the standard
library's parser), renders it to PNG with rsvg-convert, decodes the PNG (zlib and the PNG
row filters, standard library only) and checks:
  - the text a reader needs: the title with the verdict, both panel titles with units, the
    axis labels, one legend line per engine;
  - every bar: its pixel in the rendered image has the bar's fill color, its width grows with
    its data-bytes, and the bars' bytes sum to the plan's bytes per GPU from --json;
  - every curve: at least two points, its data-points equal to what the planner prints for that
    engine and context with --json (max requests, the plan's answer capped at the running cap).

Usage: svg_render_test.py PATH/TO/dsv4-cache-plan. Exits 77 (ctest: skipped) without rsvg-convert.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

SVG = "{http://www.w3.org/2000/svg}"


def decode_png(data):
    """(width, height, rows of RGBA tuples) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    bpp = 4 if ctype == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 0xFF
            elif f == 2:
                line[i] = (line[i] + b) & 0xFF
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append([tuple(line[x * bpp : x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def hex_rgb(color):
    return tuple(int(color[i : i + 2], 16) for i in (1, 3, 5))


def plan_json(binary, args):
    out = subprocess.run([binary, *args, "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def check(binary, args, base, tmp, expect_bars, expect_curves):
    """Renders `args` with --svg; `base`: the same flags without --context and --requests."""
    path = os.path.join(tmp, "plan.svg")
    run = subprocess.run([binary, *args, "--svg", path], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    root = ET.parse(path).getroot()
    texts = " | ".join("".join(t.itertext()) for t in root.iter(SVG + "text"))
    for needed in ("FITS", "Bytes per group, per GPU", "GiB", "Max requests against context",
                   "context (tokens per request, log scale)", "max requests (log scale)", "the plan:"):
        assert needed in texts, (needed, texts)
    png = os.path.join(tmp, "plan.png")
    subprocess.run(["rsvg-convert", path, "-o", png], check=True)
    with open(png, "rb") as f:
        width, height, pixels = decode_png(f.read())
    assert (width, height) == (int(root.get("width")), int(root.get("height"))), (width, height)
    bars = [r for r in root.iter(SVG + "rect") if r.get("class") == "bar"]
    assert len(bars) == expect_bars, len(bars)
    j = plan_json(binary, args)
    per_gpu = j["ranks"][j["cluster"]["worst_rank"]]["total_bytes"] if "ranks" in j else j["plan"]["total_bytes"]
    assert sum(int(b.get("data-bytes")) for b in bars) == per_gpu, "bars do not sum to the plan"
    for b in bars:
        x, y, w, h = (float(b.get(k)) for k in ("x", "y", "width", "height"))
        px = pixels[int(y + h / 2)][int(x + min(w, 4) / 2)]
        assert px == hex_rgb(b.get("fill")), (b.get("data-group"), px, b.get("fill"))
    by_bytes = sorted(bars, key=lambda b: int(b.get("data-bytes")))
    assert float(by_bytes[-1].get("width")) > float(by_bytes[0].get("width"))
    curves = [p for p in root.iter(SVG + "polyline") if p.get("class") == "curve"]
    assert [c.get("data-engine") for c in curves] == expect_curves, [c.get("data-engine") for c in curves]
    for c in curves:
        points = [tuple(int(v) for v in p.split(":")) for p in c.get("data-points").split()]
        assert len(points) >= 2, points
        for ctx, n in (points[0], points[-1]):  # the ends against the planner's own answer
            jj = plan_json(binary, base + ["--engine", c.get("data-engine"), "--context", str(ctx), "--requests", "1"])
            assert jj["verdict"]["plan_max_requests"] == n, (c.get("data-engine"), ctx, n, jj["verdict"])
    return len(bars), len(curves)


def strip(args, flags):
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in flags:
            skip = True
            continue
        out.append(a)
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if shutil.which("rsvg-convert") is None:
        print("SKIP: rsvg-convert not found (Debian: apt-get install librsvg2-bin)")
        return 77
    binary = sys.argv[1]
    cases = [
        (["--preset", "v4-pro", "--tp", "8", "--memory-gib", "60", "--context", "131072", "--requests", "64"],
         7, ["vllm", "tokenspeed", "sglang"]),
        (["--preset", "v4.1-flash", "--memory-gib", "30", "--context", "65536", "--requests", "40"],
         5, ["vllm", "tokenspeed"]),
    ]
    with tempfile.TemporaryDirectory(prefix="dsv4-svg-") as tmp:
        for args, bars, curves in cases:
            got = check(binary, args, strip(args, {"--context", "--requests"}), tmp, bars, curves)
            print(f"ok: {' '.join(args)}: {got[0]} bars, {got[1]} curves rendered")
    return 0


if __name__ == "__main__":
    sys.exit(main())
