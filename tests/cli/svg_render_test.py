#!/usr/bin/env python3
"""dsv4-cache-plan --svg, rendered by a real renderer (rsvg-convert, Debian's librsvg2-bin).

Runs the planner with --svg, parses each file as XML (the standard library's parser), renders
it to PNG with rsvg-convert, decodes the PNG (zlib and the PNG row filters, standard library
only) and checks (issue 42, item 2, "the SVG reads right"):
  - the text a reader needs: the title with the verdict, both panel titles with units, the axis
    labels, one legend line per engine;
  - nothing runs off the canvas: every <text> box (its width estimated per character as the
    renderer's svg_text_width does, from its font size) lies inside the canvas and overlaps no
    other, for every --engine value, every preset, --overlap / --no-overlap, parallel flags and a
    --config whose model name is 63 of the widest letters; the estimate itself is checked against
    the ink rsvg-convert draws for each text (`rsvg-convert -i ID` crops to the element);
  - the bars: split by the causes of the screen's breakdown ("where the ... go"): per cause the
    parts' bytes equal --json's `breakdown`, every bar's parts sum to its bytes and all to the
    plan's bytes per GPU; the legend lists the causes present, each as the screen's line; a
    "(replay)" kind only for a model with a replay group (V4.1, not V4); each part's pixel in
    the rendered image has its fill color;
  - the curves: every engine's curve drawn (its data-points ends equal to --json's plan answer
    for that engine and context), or its refusal as a legend note below the plot (never in it);
    each labelled with the scheduling it assumes; the log axis' ticks are 1, 10, 100, ... (no 0);
    the largest N that fits at the plan's context marked (data-requests = --json's
    verdict.max_requests) and labelled.

Usage: svg_render_test.py PATH/TO/dsv4-cache-plan. Exits 77 (ctest: skipped) without rsvg-convert.
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

SVG = "{http://www.w3.org/2000/svg}"
HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")


def decode_png(data, max_rows=None):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA, non-interlaced PNG: its first
    `max_rows` rows (all when None)."""
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
    for y in range(height if max_rows is None else min(height, max_rows)):
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


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", head[16:24])


def hex_rgb(color):
    return tuple(int(color[i : i + 2], 16) for i in (1, 3, 5))


# The renderer's width estimate (render_svg.hpp svg_text_width), em per character.
EXTRA, WIDE, NARROW = "MWm@%&", "DGHNOQUw<=>+^~#", " !'(),-./:;IJ[\\]fijlrt|"


def text_width(s, size):
    em = 0.0
    for ch in s:
        if ch in EXTRA:
            em += 1.0
        elif ch in WIDE:
            em += 0.84
        elif ch in NARROW:
            em += 0.42
        elif "A" <= ch <= "Z":
            em += 0.70
        else:
            em += 0.64
    return em * size


def text_boxes(root):
    """(string, (left, top, right, bottom), element) of every <text>: the estimated width, the
    glyphs from 0.95 em above the baseline to 0.25 em below it (DejaVu Sans: 0.93, 0.24); rotate(-90 x y) turned."""
    boxes = []
    for t in root.iter(SVG + "text"):
        s = "".join(t.itertext())
        size = float(t.get("font-size", root.get("font-size", "12")))
        x, y = float(t.get("x")), float(t.get("y"))
        w = text_width(s, size)
        anchor = t.get("text-anchor", "start")
        left = x - (w if anchor == "end" else w / 2 if anchor == "middle" else 0)
        box = (left, y - 0.95 * size, left + w, y + 0.25 * size)
        m = re.fullmatch(r"rotate\(-90 ([\d.]+) ([\d.]+)\)", t.get("transform", ""))
        if m:
            cx, cy = float(m.group(1)), float(m.group(2))
            # (px, py) -> (cx + (py - cy), cy - (px - cx))
            xs = [cx + (py - cy) for py in (box[1], box[3])]
            ys = [cy - (px - cx) for px in (box[0], box[2])]
            box = (min(xs), min(ys), max(xs), max(ys))
        else:
            assert not t.get("transform"), t.get("transform")
        boxes.append((s, box, t))
    return boxes


def check_geometry(root, what):
    """Every text box inside the canvas, none overlapping another."""
    width, height = float(root.get("width")), float(root.get("height"))
    assert width == 1000, width
    boxes = text_boxes(root)
    for s, (l, t, r, b), _ in boxes:
        assert 0 <= l and r <= width and 0 <= t and b <= height, (what, s, (l, t, r, b), (width, height))
    for i, (s1, a, _) in enumerate(boxes):
        for s2, b, _ in boxes[i + 1 :]:
            overlap = min(a[2], b[2]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[1], b[1]) > 0.5
            assert not overlap, (what, "texts overlap", s1, a, s2, b)
    return len(boxes)


def check_estimate_against_ink(path, tmp):
    """Every text's ink, as rsvg-convert draws it alone (-i ID crops to it), is no wider than the
    estimate: the geometry check holds for the rendered image."""
    tree = ET.parse(path)
    root = tree.getroot()
    texts = [t for t in root.iter(SVG + "text") if "".join(t.itertext()).strip()]
    for i, t in enumerate(texts):
        t.set("id", f"t{i}")
    marked = os.path.join(tmp, "marked.svg")
    tree.write(marked)
    checked = 0
    for i, t in enumerate(texts):
        s = "".join(t.itertext())
        size = float(t.get("font-size", "12"))
        png = os.path.join(tmp, "one.png")
        subprocess.run(["rsvg-convert", "-i", f"t{i}", marked, "-o", png], check=True)
        w, h = png_size(png)
        if t.get("transform"):
            w, h = h, w
        assert w <= text_width(s, size) + 1, ("the estimate is narrower than the ink", s, w, text_width(s, size))
        assert h <= 1.2 * size + 1, ("taller than the box", s, h, size)
        checked += 1
    return checked


def run_svg(binary, args, path):
    run = subprocess.run([binary, *args, "--svg", path], capture_output=True, text=True)
    assert run.returncode == 0, (args, run.stderr)
    return ET.parse(path).getroot(), run.stdout


def plan_json(binary, args):
    out = subprocess.run([binary, *args, "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def by_class(root, tag, cls):
    return [e for e in root.iter(SVG + tag) if e.get("class") == cls]


def check(binary, args, base, tmp, expect_bars, expect_curves, refused=()):
    """Renders `args` with --svg; `base`: the same flags without --context and --requests."""
    path = os.path.join(tmp, "plan.svg")
    root, screen = run_svg(binary, args, path)
    texts = " | ".join("".join(t.itertext()) for t in root.iter(SVG + "text"))
    for needed in ("FITS", "Bytes per group, per GPU", "GiB", "Max requests against context",
                   "context (tokens per request, log scale)", "max requests (log scale)", "the plan:",
                   "largest N that fits at"):
        assert needed in texts, (needed, texts)
    check_geometry(root, args)
    png = os.path.join(tmp, "plan.png")
    subprocess.run(["rsvg-convert", path, "-o", png], check=True)
    bars = by_class(root, "g", "bar")
    below_bars = max(int(float(r.get("y")) + float(r.get("height"))) + 1 for b in bars for r in b.iter(SVG + "rect"))
    with open(png, "rb") as f:
        width, height, pixels = decode_png(f.read(), below_bars)  # the rows down to the bars' end
    assert (width, height) == (int(root.get("width")), int(root.get("height"))), (width, height)
    j = plan_json(binary, args)
    # ---- bars: split by the breakdown's causes ----
    assert len(bars) == expect_bars, len(bars)
    per_gpu = j["ranks"][j["cluster"]["worst_rank"]]["total_bytes"] if "ranks" in j else j["plan"]["total_bytes"]
    assert sum(int(b.get("data-bytes")) for b in bars) == per_gpu, "bars do not sum to the plan"
    cause_bytes = {}
    for b in bars:
        parts = [r for r in b.iter(SVG + "rect") if r.get("class") == "part"]
        assert parts and sum(int(p.get("data-bytes")) for p in parts) == int(b.get("data-bytes")), b.get("data-group")
        for p in parts:
            cause_bytes[p.get("data-cause")] = cause_bytes.get(p.get("data-cause"), 0) + int(p.get("data-bytes"))
            x, y, w, h = (float(p.get(k)) for k in ("x", "y", "width", "height"))
            if w >= 3:
                px = pixels[int(y + h / 2)][int(x + w / 2)]
                assert px == hex_rgb(p.get("fill")), (b.get("data-group"), p.get("data-cause"), px, p.get("fill"))
    for cause, n in cause_bytes.items():
        assert j["breakdown"][cause + "_bytes"] == n, (cause, n, j["breakdown"])
    present = {k[: -len("_bytes")] for k, n in j["breakdown"].items() if k.endswith("_bytes") and k != "total_bytes"
               and n > 0}
    legend = by_class(root, "text", "cause")
    assert {t.get("data-cause") for t in legend} == present, ([t.get("data-cause") for t in legend], present)
    lines = {re.sub(r"\s+", " ", line.strip()) for line in screen.splitlines()}
    for cause in present:  # the legend says each cause as the screen's breakdown does
        said = " ".join("".join(t.itertext()) for t in legend if t.get("data-cause") == cause)
        said = re.sub(r"\s+", " ", said)
        assert said in lines or any(line.endswith("...") and said.startswith(line[:-3]) for line in lines), (
            cause, said)
    replay_groups = [b for b in bars if b.get("data-kind") == "replay"]
    assert bool(replay_groups) == ("(replay)" in texts), ("replay in the legend", len(replay_groups))
    # ---- the log axis: 1, 10, 100, ... upwards, no 0 ----
    ticks = by_class(root, "text", "tick-y")
    values = [int("".join(t.itertext()).replace(",", "")) for t in ticks]
    assert values == [10**d for d in range(len(values))], values
    assert all(float(a.get("y")) > float(b.get("y")) for a, b in zip(ticks, ticks[1:]))
    # ---- curves: drawn, labelled with their scheduling, ends as --json says ----
    plot = by_class(root, "rect", "plot")[0]
    plot_bottom = float(plot.get("y")) + float(plot.get("height"))
    curves = by_class(root, "polyline", "curve")
    assert [c.get("data-engine") for c in curves] == expect_curves, [c.get("data-engine") for c in curves]
    labels = {}
    for t in by_class(root, "text", "curve-label"):  # a label's lines, joined
        labels[t.get("data-engine")] = (labels.get(t.get("data-engine"), "") + " " + "".join(t.itertext())).strip()
    for c in curves:
        points = [tuple(int(v) for v in p.split(":")) for p in c.get("data-points").split()]
        assert len(points) >= 2, points
        assert len(c.get("points").split()) == sum(1 for _, n in points if n != 0), "a 0 drawn on a log axis"
        for ctx, n in (points[0], points[-1]):  # the ends against the planner's own answer
            jj = plan_json(binary, base + ["--engine", c.get("data-engine"), "--context", str(ctx), "--requests", "1"])
            assert jj["verdict"]["plan_max_requests"] == n, (c.get("data-engine"), ctx, n, jj["verdict"])
        label = labels[c.get("data-engine")]
        assert re.search(r"(async|overlap) scheduling", label) and "batches" in label, label
        assert "scheduling" in c.get("data-assumes") and "batches" in c.get("data-assumes"), c.get("data-assumes")
    notes = by_class(root, "text", "refusal")
    assert sorted({t.get("data-engine") for t in notes}) == sorted(refused), [t.get("data-engine") for t in notes]
    for t in notes:  # below the plot, never in it
        assert float(t.get("y")) - 12 > plot_bottom + 20, (float(t.get("y")), plot_bottom)
    # ---- the largest N that fits, marked and labelled ----
    marks = [e for e in root.iter() if e.get("class") == "max-fit"]
    assert len(marks) == 1, len(marks)
    assert int(marks[0].get("data-requests")) == j["verdict"]["max_requests"], (marks[0].get("data-requests"),
                                                                               j["verdict"])
    assert int(marks[0].get("data-context")) == j["verdict"]["context_tokens"]
    tag = "".join(by_class(root, "text", "max-fit-label")[0].itertext())
    assert f"{j['verdict']['max_requests']:,}" in tag or "none" in tag, tag
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


def canvas_cases(tmp):
    """Argument lists for the canvas check: every --engine value with every preset it plans,
    both scheduling flags, parallel flags, no budget, a config named with 63 wide letters."""
    long_dir = os.path.join(tmp, "W" * 40 + "M" * 23 + "mmmm")  # cut to 63 bytes by the planner
    os.makedirs(long_dir, exist_ok=True)
    shutil.copy(os.path.join(DATA, "deepseek-v4-pro.config.json"), os.path.join(long_dir, "config.json"))
    cases = []
    for engine in ("vllm", "vllm@2026.11", "tokenspeed", "tokenspeed-default", "sglang", "sglang@cce0a124"):
        for preset in ("v4-flash", "v4-pro", "v4.1-flash", "v3.2"):
            cases.append(["--preset", preset, "--engine", engine, "--memory-gib", "60", "--context", "131072"])
    for flag in ("--overlap", "--no-overlap"):
        cases.append(["--preset", "v4-flash", "--memory-gib", "30", "--context", "131072", flag])
    cases += [
        ["--config", long_dir, "--memory-gib", "60", "--context", "131072", "--requests", "1000000"],
        ["--config", long_dir, "--engine", "sglang", "--tp", "8", "--dp", "8", "--enable-dp-attention",
         "--memory-gib", "60", "--requests", "100000"],
        ["--preset", "v4-pro", "--tp", "8", "--dp", "2", "--pp", "2", "--memory-gib", "60", "--context", "1024"],
        ["--preset", "v4-flash", "--memory-gib", "2", "--context", "1048576", "--requests", "3"],
        ["--preset", "v4-flash"],
    ]
    return cases, long_dir


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
         7, ["vllm", "tokenspeed", "sglang", "trtllm"], ()),
        # SGLang and TensorRT-LLM plan V4 models only: their refusals legend notes.
        (["--preset", "v4.1-flash", "--memory-gib", "30", "--context", "65536", "--requests", "40"],
         5, ["vllm", "tokenspeed"], ("sglang", "trtllm")),
        # SGLang refuses --no-overlap: its refusal a legend note, the other curves drawn.
        (["--preset", "v4-flash", "--memory-gib", "30", "--context", "131072", "--requests", "1", "--no-overlap"],
         7, ["vllm", "tokenspeed", "trtllm"], ("sglang",)),
        (["--preset", "v4-flash", "--memory-gib", "30", "--context", "131072", "--requests", "1", "--overlap"],
         7, ["vllm", "tokenspeed", "sglang", "trtllm"], ()),
    ]
    with tempfile.TemporaryDirectory(prefix="dsv4-svg-") as tmp:
        for args, bars, curves, refused in cases:
            got = check(binary, args, strip(args, {"--context", "--requests"}), tmp, bars, curves, refused)
            print(f"ok: {' '.join(args)}: {got[0]} bars, {got[1]} curves rendered")
        canvas, long_dir = canvas_cases(tmp)
        drawn, paths = 0, {}
        for i, args in enumerate(canvas):
            path = os.path.join(tmp, f"canvas{i}.svg")
            run = subprocess.run([binary, *args, "--svg", path], capture_output=True, text=True)
            engine = args[args.index("--engine") + 1] if "--engine" in args else "vllm"
            if engine.startswith("sglang") and ("v4.1-flash" in args or "v3.2" in args):
                assert run.returncode == 2, (args, run.stderr)  # SGLang plans V4 models only
                assert not os.path.exists(path), args
                continue
            assert run.returncode == 0, (args, run.stderr)
            root = ET.parse(path).getroot()
            n = check_geometry(root, args)
            paths[" ".join(args)] = path
            drawn += 1
            print(f"ok: canvas {' '.join(args)}: {n} texts inside the canvas, none overlapping")
        assert drawn == len(canvas) - 4, drawn
        long_name = paths[" ".join(canvas[-5])]  # the config named with wide letters
        titles = "".join("".join(t.itertext()) for t in by_class(ET.parse(long_name).getroot(), "text", "title"))
        assert "W" * 40 + "M" * 23 in titles, titles
        for path in (long_name, paths[" ".join(canvas[-4])], os.path.join(tmp, "plan.svg")):
            n = check_estimate_against_ink(path, tmp)
            print(f"ok: {os.path.basename(path)}: the width estimate covers the ink of {n} texts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
