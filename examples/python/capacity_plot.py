#!/usr/bin/env python3
"""Plot the most requests of each context length that a KV budget fits, under vLLM, tokenspeed
and SGLang (one PNG, matplotlib), for a DeepSeek V4-family model on one GPU.

    python examples/python/capacity_plot.py --preset v4-flash --memory-gib 64 --out capacity.png

Prints one line per engine and context (the plotted figures). An engine that does not model the
model (SGLang for V4.1 / V3.2) is left out with its reason.
"""

from __future__ import annotations

import argparse
import io
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

import dsv4_cache as d  # noqa: E402

ENGINES = ("vllm", "tokenspeed", "sglang")


def contexts(model: d.Model, first: int = 4096):
    """4,096 tokens doubling up to the model's max_position_embeddings (itself included)."""
    out, c = [], first
    while c < model.max_position_embeddings:
        out.append(c)
        c *= 2
    return out + [model.max_position_embeddings]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="v4-flash")
    ap.add_argument("--memory-gib", type=float, default=64.0, help="KV budget per GPU in GiB")
    ap.add_argument("--out", default="capacity.png", help="the PNG to write")
    args = ap.parse_args(argv)
    if not args.out.lower().endswith(".png"):
        print(f"error: --out {args.out}: the file name must end in .png (the output is a PNG image)", file=sys.stderr)
        return 2
    try:
        model = d.Model.preset(args.preset)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
    for engine in ENGINES:
        points = []
        try:
            for c in contexts(model):
                cap = d.capacity(model, args.memory_gib, engine=engine, context=c)
                points.append((c, cap.verdict.max_requests))
                print(f"{engine:<10} {c:>9,} tokens: {cap.verdict.max_requests:,} requests")
        except ValueError as e:
            print(f"{engine:<10} left out: {e}")
            continue
        ax.plot([p[0] for p in points], [max(p[1], 0.5) for p in points], marker="o", label=engine)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("context per request (tokens)")
    ax.set_ylabel("most requests that fit")
    ax.set_title(f"{model.name}: {args.memory_gib:g} GiB of KV cache per GPU")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png")
    try:  # the CLIs' checked write: never over a device, FIFO, directory or a file you may not write
        d.write_file(args.out, png.getvalue(), label="--out")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
