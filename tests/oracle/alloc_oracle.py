#!/usr/bin/env python3
"""Independent reference simulator of vLLM v1 KV-cache page allocation for
DeepSeek-V4-Flash (FP8 indexer keys).  Standard library only.

Written apart from the C++ simulator (include/dsv4/cache/alloc_sim.hpp), from vLLM's rules as
the README's "The memory plan" lists them. A plain step loop, no fast-forward. Its results for
eleven cases are the expected values of tests/alloc_sim_test.cpp (AllocSim.AgreesWithPythonOracle);
rerun with `python3 tests/oracle/alloc_oracle.py N L B s`.

peak(N, L, B, s, prompts, acceptances, first_chunk_lookahead)
  -> (per-group peak pages per layer incl. the null page, peak total bytes incl. null pages)
"""
import argparse
import sys

# (name, R tokens per page, W window or None for full history, page bytes per layer, layers)
GROUPS = [
    ("v4.swa_kv", 64, 128, 37440, 44),
    ("v4.c4a.compressor_state", 4, 8, 32768, 21),
    ("v4.c4a.compressed_kv", 256, None, 45888, 21),
    ("v4.c128a.compressor_state", 8, 128, 32768, 20),
    ("v4.c128a.compressed_kv", 256, None, 1728, 20),
    ("v4.c4a.indexer_compressor_state", 4, 8, 8192, 21),
]
NG = len(GROUPS)
NULL_BYTES = sum(b * n for (_, _, _, b, n) in GROUPS)  # one null page per layer pool


def cdiv(a, b):
    return -(-a // b)


class Req:
    __slots__ = ("P", "c", "num_tokens", "decoding", "table", "freed")

    def __init__(self, P):
        self.P = P
        self.c = 0                 # computed tokens
        self.num_tokens = P        # prompt + generated
        self.decoding = False
        self.table = [0] * NG      # page-table length per group (never shrinks)
        self.freed = [0] * NG      # freed prefix blocks per group (sliding only)


def simulate(N, L, B, s, P, acceptance, first_la, groups=GROUPS, trace=None):
    """One workload: N identical requests with prompt P, all arriving at step 0.
    Returns (peak live pages per group per layer, excl. null page; peak bytes excl. null)."""
    assert 1 <= P <= L - 1 and s >= 1 and B >= 1
    ng = len(groups)
    waiting = [Req(P) for _ in range(N)]
    waiting.reverse()              # pop() from the end == FCFS
    running = []                   # admission order
    live = [0] * ng                # sum of live pages per group (per layer)
    peak_pages = [0] * ng
    peak_bytes = 0
    la_run = s - 1
    Rs = [g[1] for g in groups]
    Ws = [g[2] for g in groups]
    step = 0
    while waiting or running:
        budget = B
        sched = []
        # 1. running requests, admission order
        for r in running:
            if budget <= 0:
                break
            if r.decoding:
                k = min(s, L - 1 - r.c, budget)
            else:
                k = min(r.P - r.c, budget)
            if k <= 0:
                continue           # keeps its pages
            budget -= k
            sched.append((r, k, la_run))
        # 2. waiting requests FCFS while budget remains
        while waiting and budget > 0:
            r = waiting.pop()
            k = min(r.P, budget)
            budget -= k
            running.append(r)
            sched.append((r, k, first_la))
        assert sched, "no progress"
        # 3. allocation
        for r, k, la in sched:
            c = r.c
            E = min(c + k + la, L)
            table = r.table
            freed = r.freed
            for g in range(ng):
                R = Rs[g]
                W = Ws[g]
                if W is not None:
                    nf = max(0, c - W + 1) // R
                    f = freed[g]
                    if nf > f:
                        assert nf <= table[g], (nf, table[g])
                        live[g] -= nf - f
                        freed[g] = nf
                nt = -(-E // R)
                t = table[g]
                if nt > t:
                    live[g] += nt - t
                    table[g] = nt
        # 4. record
        tot = 0
        for g in range(ng):
            if live[g] > peak_pages[g]:
                peak_pages[g] = live[g]
            tot += groups[g][3] * groups[g][4] * live[g]
        if tot > peak_bytes:
            peak_bytes = tot
        if trace is not None:
            trace.append((step, [(r.c, k) for r, k, _ in sched], list(live), tot))
        # 5. end of step
        done = False
        for r, k, _ in sched:
            if r.decoding:
                a = min(acceptance, k)
                r.c += a
                r.num_tokens = r.c + 1
            else:
                r.c += k
                if r.c == r.P:
                    r.num_tokens = r.P + 1
                    r.decoding = True
            if r.num_tokens >= L:
                done = True
        if done:
            keep = []
            for r in running:
                if r.num_tokens >= L:
                    for g in range(ng):
                        live[g] -= r.table[g] - r.freed[g]
                else:
                    keep.append(r)
            running = keep
        step += 1
    assert all(x == 0 for x in live)
    return peak_pages, peak_bytes


def peak(N, L, B, s, prompts, acceptances, first_chunk_lookahead, groups=GROUPS):
    """Max over prompts x acceptances.  Returns (per-group peak pages per layer
    incl. the null page, peak total bytes incl. the null pages)."""
    best = [0] * len(groups)
    best_bytes = 0
    for P in prompts:
        for a in acceptances:
            pp, pb = simulate(N, L, B, s, P, a, first_chunk_lookahead, groups)
            best = [max(x, y) for x, y in zip(best, pp)]
            best_bytes = max(best_bytes, pb)
    null_bytes = sum(b * n for (_, _, _, b, n) in groups)
    return [x + 1 for x in best], best_bytes + null_bytes


def default_prompts(L):
    if L <= 1000:
        return list(range(1, L))
    ps = set(range(1, 17))
    for m in range(1, L // 64 + 1):
        ps.update((m * 64 - 1, m * 64, m * 64 + 1))
    ps.update((L - 1, L - 2))
    return sorted(p for p in ps if 1 <= p <= L - 1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("N", type=int)
    ap.add_argument("L", type=int, help="max_model_len")
    ap.add_argument("B", type=int, help="step token budget")
    ap.add_argument("s", type=int, help="tokens per decode step (1 + drafts)")
    ap.add_argument("--lookahead", type=int, choices=(0, 1), default=None,
                    help="first-chunk lookahead: 0 -> 0, 1 -> s-1 (default: both)")
    ap.add_argument("--prompts", default=None,
                    help="e.g. '1-16,63,64' (default: 1..L-1 if L<=1000 else sampled set)")
    ap.add_argument("--acceptances", default=None, help="e.g. '1,2' (default: 1,s)")
    a = ap.parse_args(argv)
    if a.prompts:
        prompts = []
        for part in a.prompts.split(","):
            if "-" in part:
                lo, hi = part.split("-")
                prompts.extend(range(int(lo), int(hi) + 1))
            else:
                prompts.append(int(part))
    else:
        prompts = default_prompts(a.L)
    accs = [int(x) for x in a.acceptances.split(",")] if a.acceptances else sorted({1, a.s})
    las = [0, a.s - 1] if a.lookahead is None else [0 if a.lookahead == 0 else a.s - 1]
    cache = {}
    for la in las:
        if la not in cache:
            cache[la] = peak(a.N, a.L, a.B, a.s, prompts, accs, la)
        pages, total = cache[la]
        print(f"{a.N} {a.L} {a.B} {a.s} {la} | {' '.join(map(str, pages))} | {total}")


if __name__ == "__main__":
    main()
