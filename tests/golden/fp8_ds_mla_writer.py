#!/usr/bin/env python3
"""An independent writer of `v4.fp8_ds_mla` golden pages, for tests/cli/golden_test.cpp.

Written from docs/facts.md (sections 2 and 4) and the input mapping documented in
tools/include/dsv4/tools/golden.hpp, not from the C++ code: standard library only, exact
rational arithmetic (fractions.Fraction) instead of float tricks.

    python3 fp8_ds_mla_writer.py --rows N --seed S --out DIR

writes DIR/input.bf16 and DIR/page.bin and prints `<sha256>  <name>` for each (hashlib).

Input: value i (i = r * 512 + j, row r, value j) has the BF16 bits
    d = SplitMix64 output i of seed S = mix(S + (i + 1) * 0x9E3779B97F4A7C15)
    b = i // 64
    bits = 0 if b % 7 == 6
           else (d >> 63) << 15 | (100 + (d >> 56 & 31) - 4 * (b % 3)) << 7 | (d & 0x7F)
Row (584 B): 448 NoPE values as E4M3 codes, 64 RoPE values as BF16 (little-endian), then 7
UE8M0 scale bytes (one per 64 NoPE values) and a zero pad byte. Page of N rows:
[N x 576 data (row r at r * 576)][N x 8 scales (row r at N * 576 + r * 8)], zero padding up to
a multiple of 576 bytes. Block scale: e = ceil(log2(float32(max(amax, float32(1e-4)) / 448))),
byte e + 127; code = E4M3 of x * 2^-e, round to nearest (ties to the even code), saturating
at 448, sign bit kept (a negative value that rounds to zero is 0x80).
"""

import argparse
import bisect
import hashlib
import math
import os
import struct
import sys
from fractions import Fraction

MASK64 = (1 << 64) - 1
NOPE, ROPE, BLOCK = 448, 64, 64
VALUES = NOPE + ROPE  # 512 values per row
DATA_BYTES, SCALE_BYTES, ALIGN = 576, 8, 576


def splitmix64(seed, i):
    """Output i (0-based) of SplitMix64 seeded with `seed`."""
    z = (seed + (i + 1) * 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def input_bits(seed, i):
    """BF16 bits of input value i."""
    b = i // 64
    if b % 7 == 6:
        return 0
    d = splitmix64(seed, i)
    return ((d >> 63) << 15) | ((100 + ((d >> 56) & 31) - 4 * (b % 3)) << 7) | (d & 0x7F)


def bf16_magnitude(bits):
    """|value| of a finite BF16, exactly."""
    exp, man = (bits >> 7) & 0xFF, bits & 0x7F
    assert exp != 0xFF, "finite inputs only"
    if exp == 0:
        return Fraction(man, 128) * Fraction(2) ** -126
    return (1 + Fraction(man, 128)) * Fraction(2) ** (exp - 127)


def round_to_float32(q):
    """q > 0 (a normal float32 magnitude) rounded to float32, nearest, ties to even; exactly."""
    k = math.floor(math.log2(q))  # a first guess, corrected exactly below
    while Fraction(2) ** k > q:
        k -= 1
    while Fraction(2) ** (k + 1) <= q:
        k += 1
    ulp = Fraction(2) ** (k - 23)
    return round(q / ulp) * ulp  # round() of a Fraction rounds half to even


# The 127 non-negative finite E4M3 (fn) values, codes 0x00..0x7E (0x7E = 448).
E4M3 = [Fraction(c & 7, 8) * Fraction(2) ** -6 if c >> 3 == 0 else
        (1 + Fraction(c & 7, 8)) * Fraction(2) ** ((c >> 3) - 7) for c in range(0x7F)]
assert E4M3[0x7E] == 448 and E4M3[1] == Fraction(1, 512)


def e4m3_code(a):
    """E4M3 code of a magnitude a >= 0: nearest, ties to the even code, saturating at 448."""
    if a >= E4M3[-1]:
        return 0x7E
    c = bisect.bisect_right(E4M3, a) - 1  # E4M3[c] <= a < E4M3[c + 1]
    lo, hi = a - E4M3[c], E4M3[c + 1] - a
    if lo < hi or (lo == hi and c % 2 == 0):
        return c
    return c + 1


FLOOR = Fraction(struct.unpack("<f", struct.pack("<f", 1e-4))[0])  # float32(1e-4)


def block_exponent(amax):
    """e = ceil(log2(float32(max(amax, 1e-4) / 448))), from the float32 value's frexp."""
    q = float(round_to_float32(max(amax, FLOOR) / 448))  # a float32, exact as a double
    mant, ex = math.frexp(q)  # q = mant * 2^ex, 0.5 <= mant < 1
    e = ex - 1 if mant == 0.5 else ex
    return max(-127, min(127, e))


def page_bytes(rows):
    used = rows * (DATA_BYTES + SCALE_BYTES)
    return (used + ALIGN - 1) // ALIGN * ALIGN


def write(rows, seed):
    inp = bytearray()
    page = bytearray(page_bytes(rows))
    for r in range(rows):
        bits = [input_bits(seed, r * VALUES + j) for j in range(VALUES)]
        for v in bits:
            inp += struct.pack("<H", v)
        data, scales = r * DATA_BYTES, rows * DATA_BYTES + r * SCALE_BYTES
        for blk in range(NOPE // BLOCK):
            vals = bits[blk * BLOCK:(blk + 1) * BLOCK]
            e = block_exponent(max(bf16_magnitude(v) for v in vals))
            page[scales + blk] = e + 127
            for k, v in enumerate(vals):
                code = e4m3_code(bf16_magnitude(v) * Fraction(2) ** -e)
                page[data + blk * BLOCK + k] = code | (0x80 if v >> 15 else 0)
        for j in range(ROPE):
            struct.pack_into("<H", page, data + NOPE + 2 * j, bits[NOPE + j])
        page[scales + 7] = 0  # the pad byte (already zero)
    return bytes(inp), bytes(page)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if not 1 <= a.rows or not 0 <= a.seed <= MASK64:
        sys.exit("rows must be >= 1 and seed in [0, 2^64)")
    inp, page = write(a.rows, a.seed)
    os.makedirs(a.out, exist_ok=True)
    for name, blob in (("input.bf16", inp), ("page.bin", page)):
        with open(os.path.join(a.out, name), "wb") as f:
            f.write(blob)
        print(f"{hashlib.sha256(blob).hexdigest()}  {name}")


if __name__ == "__main__":
    main()
