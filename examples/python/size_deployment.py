#!/usr/bin/env python3
"""Size a DeepSeek-V4-Pro deployment on 8 GPUs (tensor parallel) under vLLM and SGLang, and
print each engine's verdict: does N x L fit the KV budget per GPU, what the engine will report
at startup, and what really fits.

    python examples/python/size_deployment.py --memory-gib 60 --requests 64 --context 131072

Exit code: 0 when every engine fits, 1 when one does not, 2 for bad input.
"""

from __future__ import annotations

import argparse
import sys

import dsv4_cache as d


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memory-gib", default="60", help="KV budget per GPU: GiB, or with a unit (141GB)")
    ap.add_argument("--requests", type=int, default=64, help="concurrent requests N")
    ap.add_argument("--context", type=int, default=131072, help="tokens per request L")
    ap.add_argument("--tp", type=int, default=8, help="tensor parallel size (GPUs)")
    args = ap.parse_args(argv)
    memory = float(args.memory_gib) if args.memory_gib.replace(".", "", 1).isdigit() else args.memory_gib

    model = d.Model.preset("v4-pro")
    print(f"{model.name} on {args.tp} GPUs, {args.requests} x {args.context:,} tokens, {args.memory_gib} GiB of KV "
          f"cache per GPU")
    all_fit = True
    for engine in ("vllm", "sglang"):
        try:
            p = d.plan(model, engine=engine, requests=args.requests, context=args.context, tp=args.tp,
                       memory_gib=memory)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        v = p.verdict
        all_fit = all_fit and bool(v.fits)
        print(f"  {engine:<7} {v.line}")
        if p.hint is not None:
            print(f"          hint: {p.hint.flag} plans {p.hint.requests_then:,} requests, not {p.hint.requests_now:,} "
                  f"({p.hint.why})")
    return 0 if all_fit else 1


if __name__ == "__main__":
    sys.exit(main())
