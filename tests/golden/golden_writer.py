#!/usr/bin/env python3
"""An independent writer of golden pages for every quantized row format, per engine writer.

Written from docs/layout-variants.md (1.4-1.7, 2.8, 3.3, 7), docs/facts.md (sections 2 and 4),
docs/engines/writers.md and the input mapping documented at the top of
tools/include/dsv4/tools/golden.hpp, not from the C++ code: standard library only, exact
rational arithmetic (fractions.Fraction) instead of float tricks. Where a reference computes in
float32, the float32 rounding is modelled exactly (round_f32).

    python3 golden_writer.py FORMAT [--writer W] (--rows N --seed S | --input FILE) --out DIR
    python3 golden_writer.py --self-test

writes DIR/input.bf16 (with --input: a byte copy of FILE) and DIR/page.bin and prints
`<sha256>  <name>` for each (hashlib). Input: N rows x V BF16 values, little-endian, row-major
(V = 512, or 128 for the indexer formats). The page is page_bytes(N) zero bytes, then rows
0..N-1 written in order. Exit codes: 0 written; 2 bad arguments or input (one line on stderr,
nothing written); 3 a write error.

Formats, page rules and writers (the first writer is the default):
  v4.fp8_ds_mla          row 584 = 448 E4M3 NoPE + 64 BF16 RoPE | 7 UE8M0 (1 per 64) + 1 pad;
                         split [N x 576][N x 8], padded to a multiple of 576.
                         flashmla: e = ceil(log2(max(amax / 448, 1e-4)))   (zero block 114)
                         vllm:     e = ceil(log2(max(amax, 1e-4) / 448))   (zero block 105)
  v4.1.fp8               512 E4M3 (16 tiles of 32) | 16 UE8M0; split [N x 512][N x 16],
                         padded to a multiple of 512.
  v4.1.fp8.interleaved   the same rows, [512 | 16] x N back to back, no padding.
                         flashmla: as v4.fp8_ds_mla flashmla (114); sglang: the amax floor (105)
  v4.1.fp4               512 E2M1 packed (256 B, even value in the low nibble) | 32 E4M3 scales
                         (1 per 16); split [N x 256][N x 32], padded to a multiple of 512.
  v4.1.fp4.align256      the same, padded to a multiple of 256.
  v4.1.fp4.interleaved   [256 | 32] x N, no padding.
                         flashmla: scale = E4M3(clamp(amax / 6, 2^-9, 448)), code = E2M1 of
                         x / scale, RNE, saturating at 6, sign kept
  v4.indexer_fp8         128 E4M3 | 1 fp32 scale (little-endian); split [N x 128][N x 4].
                         vllm:       scale = 2^ceil(log2(max(amax, 1e-4) / 448))  (zero 2^-22)
                         tokenspeed: scale = 2^ceil(log2(max(amax / 448, 1e-10))) (zero 2^-33)
  v4.indexer_mxfp4       128 E2M1 packed (64 B) | 4 UE8M0 (1 per 32); split [N x 64][N x 4].
                         e = ceil(log2(amax' / 6)) clamped to [-127, 127], byte e + 127;
                         vllm:       amax' = max(amax, 6 x 2^-126), codes E2M1 RNE, sign kept
                         tokenspeed: amax' = max(amax, 1e-4), codes by `<=` thresholds (ties
                                     toward zero), a zero-magnitude code is written +0
Floors are float32 constants (float32(1e-4), float32(1e-10)), as a float32 tensor clamp uses.

Non-finite input (--input only): FP8 block with a NaN -> scale byte 0xFF (fp32 0x7FC00000) and
every code 0x7F; with +-inf and no NaN -> amax = inf: byte 0xFF (fp32 +inf), each +-inf element
0x7F, each finite element +-0 (0x00 / 0x80). BF16 RoPE is copied bit for bit. FP4 tile with a
NaN -> scale 0x7F, all 16 codes 0; with +-inf and no NaN -> amax = FLT_MAX (nan_to_num), scale
448 (0x7E), an inf element +-6 (0x7 / 0xF), the others E2M1(x / 448). v4.indexer_mxfp4 refuses
non-finite input (exit 2).
"""

import argparse
import bisect
import hashlib
import os
import struct
import sys
import tempfile
from fractions import Fraction

MASK64 = (1 << 64) - 1
TWO = Fraction(2)

# ---------------------------------------------------------------------------------------------
# Input mapping (golden.hpp top comment)


def splitmix64(seed, i):
    """Output i (0-based) of SplitMix64 seeded with `seed`."""
    z = (seed + (i + 1) * 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def input_bits(seed, i):
    """BF16 bits of input value i (i = r V + j)."""
    b = i >> 6
    if b % 7 == 6:
        return 0
    d = splitmix64(seed, i)
    return ((d >> 63) << 15) | ((100 + ((d >> 56) & 31) - 4 * (b % 3)) << 7) | (d & 0x7F)


# ---------------------------------------------------------------------------------------------
# BF16 decoding: a value is (kind, sign, magnitude), kind "fin", "inf" or "nan".

FIN, INF, NAN = "fin", "inf", "nan"


def bf16(bits):
    sign = bits >> 15
    exp, man = (bits >> 7) & 0xFF, bits & 0x7F
    if exp == 0xFF:
        return (NAN if man else INF), sign, None
    if exp == 0:  # zero or subnormal: man / 128 * 2^-126, exactly
        return FIN, sign, Fraction(man, 128) * TWO ** -126
    return FIN, sign, (1 + Fraction(man, 128)) * TWO ** (exp - 127)


# ---------------------------------------------------------------------------------------------
# Exact float32 rounding and exponents

F32_MAX = (2 - TWO ** -23) * TWO ** 127


def floor_log2(q):
    """The k with 2^k <= q < 2^(k+1), for a Fraction q > 0, exactly."""
    k = q.numerator.bit_length() - q.denominator.bit_length()
    if TWO ** k > q:
        k -= 1
    assert TWO ** k <= q < TWO ** (k + 1)
    return k


def ceil_log2(q):
    """The smallest k with q <= 2^k, for a Fraction q > 0, exactly."""
    k = floor_log2(q)
    return k if TWO ** k == q else k + 1


def round_f32(q):
    """A magnitude q >= 0 rounded to float32 (nearest, ties to even, subnormals down to 2^-149);
    None if it overflows to infinity."""
    if q == 0:
        return Fraction(0)
    k = max(floor_log2(q), -126)
    ulp = TWO ** (k - 23)
    r = round(q / ulp) * ulp  # round() of a Fraction rounds half to even
    return None if r > F32_MAX else r


def f32_const(x):
    return Fraction(struct.unpack("<f", struct.pack("<f", x))[0])


FLOOR_1E4 = f32_const(1e-4)
FLOOR_1E10 = f32_const(1e-10)
F32_NAN_BITS, F32_INF_BITS = 0x7FC00000, 0x7F800000

# ---------------------------------------------------------------------------------------------
# Element codes

# The 127 non-negative finite E4M3 (fn) values, codes 0x00..0x7E (0x7E = 448).
E4M3 = [Fraction(c & 7, 8) * TWO ** -6 if c >> 3 == 0 else
        (1 + Fraction(c & 7, 8)) * TWO ** ((c >> 3) - 7) for c in range(0x7F)]
# The 8 E2M1 magnitudes, codes 0..7.
E2M1 = [Fraction(v) for v in ("0", "0.5", "1", "1.5", "2", "3", "4", "6")]


def rne_code(table, a):
    """Index of the nearest table value to a >= 0, ties to the even index, saturating."""
    if a >= table[-1]:
        return len(table) - 1
    c = bisect.bisect_right(table, a) - 1  # table[c] <= a < table[c + 1]
    lo, hi = a - table[c], table[c + 1] - a
    return c if lo < hi or (lo == hi and c % 2 == 0) else c + 1


def e4m3_code(a):
    """E4M3 code of a magnitude: RNE, saturating at 448, subnormals down to 2^-9."""
    return rne_code(E4M3, a)


def e2m1_rne(a):
    """E2M1 code of a magnitude: RNE, saturating at 6 (cvt.rn.satfinite.e2m1x2)."""
    return rne_code(E2M1, a)


TS_THRESHOLDS = [Fraction(t) for t in ("0.25", "0.75", "1.25", "1.75", "2.5", "3.5", "5")]


def e2m1_tokenspeed(a):
    """tokenspeed's E2M1 magnitude code: |v| <= 0.25 -> 0, <= 0.75 -> 0.5, ... else 6."""
    return bisect.bisect_left(TS_THRESHOLDS, a)  # number of thresholds strictly below a


# ---------------------------------------------------------------------------------------------
# Block quantizers


def fp8_block(vals, rule, floor):
    """One FP8 block with a power-of-two scale. vals: decoded BF16 values.
    rule "amax": e = ceil(log2(f32(max(amax, floor) / 448)));
    rule "ratio": e = ceil(log2(max(f32(amax / 448), floor))).
    Returns (e, codes), e = NAN or INF for a poisoned block."""
    if any(k == NAN for k, _, _ in vals):
        return NAN, [0x7F] * len(vals)
    if any(k == INF for k, _, _ in vals):  # amax = inf: scale inf; inf / inf = NaN, x / inf = +-0
        return INF, [0x7F if k == INF else s << 7 for k, s, _ in vals]
    amax = max(m for _, _, m in vals)
    if rule == "amax":
        q = round_f32(max(amax, floor) / 448)
    else:
        q = max(round_f32(amax / 448), floor)
    e = ceil_log2(q)
    # x * 2^-e is exact in float32 here (a power-of-two scale, no overflow, results >= 2^-111).
    return e, [e4m3_code(m * TWO ** -e) | (s << 7) for _, s, m in vals]


def ue8m0_byte(e):
    if e in (NAN, INF):
        return 0xFF
    assert -127 <= e <= 127
    return e + 127


def f32_pow2_bits(e):
    if e == NAN:
        return F32_NAN_BITS
    if e == INF:
        return F32_INF_BITS
    assert -126 <= e <= 127
    return (e + 127) << 23


def fp4_tile(vals):
    """One v4.1 FP4 tile of 16 values (FlashMLA). Returns (scale byte, codes)."""
    if any(k == NAN for k, _, _ in vals):
        return 0x7F, [0] * len(vals)
    has_inf = any(k == INF for k, _, _ in vals)
    amax = F32_MAX if has_inf else max(m for _, _, m in vals)  # nan_to_num: inf -> FLT_MAX
    q = min(max(round_f32(amax / 6), TWO ** -9), Fraction(448))
    sb = e4m3_code(q)
    s = E4M3[sb]
    codes = []
    for k, sign, m in vals:
        if k == INF:
            c = 7  # inf / scale = inf, satfinite -> 6
        else:
            v = round_f32(m / s)  # the float32 quotient (never overflows: scale >= amax / 6 or 448)
            c = e2m1_rne(v)
        codes.append(c | (sign << 3))
    return sb, codes


def mxfp4_block(vals, writer):
    """One v4.indexer_mxfp4 block of 32 finite values. Returns (scale byte, codes)."""
    amax = max(m for _, _, m in vals)
    floor = 6 * TWO ** -126 if writer == "vllm" else FLOOR_1E4
    e = max(-127, min(127, ceil_log2(round_f32(max(amax, floor) / 6))))
    codes = []
    for _, sign, m in vals:
        v = m * TWO ** -e  # a power-of-two scale: exact (an underflow would round to 0 anyway)
        if writer == "vllm":
            codes.append(e2m1_rne(v) | (sign << 3))
        else:
            c = e2m1_tokenspeed(v)
            codes.append(c | (sign << 3) if c else 0)
    return e + 127, codes


# ---------------------------------------------------------------------------------------------
# Formats


def pad(n, a):
    return (n + a - 1) // a * a


class Format:
    def __init__(self, name, values, writers, data, scale, page, row):
        self.name, self.values, self.writers = name, values, writers
        self.data_off, self.scale_off, self.page_bytes, self.write_row = data, scale, page, row


def row_fp8_ds_mla(page, d, s, vals, bits, writer):
    rule = "ratio" if writer == "flashmla" else "amax"
    for blk in range(7):
        e, codes = fp8_block(vals[blk * 64:(blk + 1) * 64], rule, FLOOR_1E4)
        page[s + blk] = ue8m0_byte(e)
        page[d + blk * 64:d + (blk + 1) * 64] = bytes(codes)
    for j in range(64):  # RoPE: BF16, bit for bit
        struct.pack_into("<H", page, d + 448 + 2 * j, bits[448 + j])
    # byte s + 7 is the pad, left zero


def row_v41_fp8(page, d, s, vals, bits, writer):
    rule = "ratio" if writer == "flashmla" else "amax"
    for t in range(16):
        e, codes = fp8_block(vals[t * 32:(t + 1) * 32], rule, FLOOR_1E4)
        page[s + t] = ue8m0_byte(e)
        page[d + t * 32:d + (t + 1) * 32] = bytes(codes)


def pack_nibbles(codes):
    return bytes(codes[2 * i] | (codes[2 * i + 1] << 4) for i in range(len(codes) // 2))


def row_v41_fp4(page, d, s, vals, bits, writer):
    for t in range(32):
        sb, codes = fp4_tile(vals[t * 16:(t + 1) * 16])
        page[s + t] = sb
        page[d + t * 8:d + (t + 1) * 8] = pack_nibbles(codes)


def row_indexer_fp8(page, d, s, vals, bits, writer):
    if writer == "vllm":
        e, codes = fp8_block(vals, "amax", FLOOR_1E4)
    else:
        e, codes = fp8_block(vals, "ratio", FLOOR_1E10)
    page[d:d + 128] = bytes(codes)
    struct.pack_into("<I", page, s, f32_pow2_bits(e))


def row_indexer_mxfp4(page, d, s, vals, bits, writer):
    for blk in range(4):
        sb, codes = mxfp4_block(vals[blk * 32:(blk + 1) * 32], writer)
        page[s + blk] = sb
        page[d + blk * 16:d + (blk + 1) * 16] = pack_nibbles(codes)


def split(data, scale, align=None):
    """(data_off, scale_off, page_bytes) of a split page [N x data][N x scale], padded to align."""
    return (lambda n, r: r * data, lambda n, r: n * data + r * scale,
            lambda n: pad(n * (data + scale), align) if align else n * (data + scale))


def interleaved(data, scale):
    row = data + scale
    return (lambda n, r: r * row, lambda n, r: r * row + data, lambda n: n * row)


FORMATS = {f.name: f for f in [
    Format("v4.fp8_ds_mla", 512, ["flashmla", "vllm"], *split(576, 8, 576), row_fp8_ds_mla),
    Format("v4.1.fp8", 512, ["flashmla", "sglang"], *split(512, 16, 512), row_v41_fp8),
    Format("v4.1.fp8.interleaved", 512, ["flashmla", "sglang"], *interleaved(512, 16),
           row_v41_fp8),
    Format("v4.1.fp4", 512, ["flashmla"], *split(256, 32, 512), row_v41_fp4),
    Format("v4.1.fp4.interleaved", 512, ["flashmla"], *interleaved(256, 32), row_v41_fp4),
    Format("v4.1.fp4.align256", 512, ["flashmla"], *split(256, 32, 256), row_v41_fp4),
    Format("v4.indexer_fp8", 128, ["vllm", "tokenspeed"], *split(128, 4), row_indexer_fp8),
    Format("v4.indexer_mxfp4", 128, ["vllm", "tokenspeed"], *split(64, 4), row_indexer_mxfp4),
]}


class BadInput(Exception):
    pass


def write_page(fmt, writer, inp):
    """The page for input bytes `inp` (N x V BF16, little-endian)."""
    v = fmt.values
    n = len(inp) // (2 * v)
    page = bytearray(fmt.page_bytes(n))
    for r in range(n):
        bits = list(struct.unpack_from("<%dH" % v, inp, 2 * v * r))
        vals = [bf16(b) for b in bits]
        if fmt.name == "v4.indexer_mxfp4" and any(k != FIN for k, _, _ in vals):
            raise BadInput("v4.indexer_mxfp4: non-finite input (row %d) is not modelled" % r)
        fmt.write_row(page, fmt.data_off(n, r), fmt.scale_off(n, r), vals, bits, writer)
    return bytes(page)


def generated_input(values, rows, seed):
    return struct.pack("<%dH" % (rows * values),
                       *(input_bits(seed, i) for i in range(rows * values)))


# ---------------------------------------------------------------------------------------------
# Self-test


def bits_of(x):
    """BF16 bits of a float that BF16 holds exactly (asserted)."""
    f = struct.unpack("<I", struct.pack("<f", x))[0]
    assert f & 0xFFFF == 0, x
    return f >> 16


def row_input(values):
    return struct.pack("<%dH" % len(values), *values)


def self_test():
    checks = 0

    def check(cond, what):
        nonlocal checks
        if not cond:
            raise AssertionError(what)
        checks += 1

    # Element conversions (facts section 4 and 5).
    check(E4M3[0x7E] == 448 and E4M3[1] == TWO ** -9 and E4M3[8] == TWO ** -6, "e4m3 table")
    check(e4m3_code(Fraction(500)) == 0x7E and e4m3_code(Fraction(464)) == 0x7E, "e4m3 sat")
    check(e4m3_code(Fraction(17, 2)) == e4m3_code(Fraction(8)), "e4m3 tie 8.5 -> 8 (even)")
    check(e4m3_code(Fraction(19, 2)) == e4m3_code(Fraction(10)), "e4m3 tie 9.5 -> 10 (even)")
    check(e4m3_code(TWO ** -10) == 0 and e4m3_code(TWO ** -10 * 3) == 2, "e4m3 subnormal ties")
    check([e2m1_rne(Fraction(x)) for x in ("0.75", "1.75", "3.5", "0.25", "1.25", "2.5", "5")]
          == [2, 4, 6, 0, 2, 4, 6], "e2m1 RNE ties")
    check([e2m1_tokenspeed(Fraction(x)) for x in ("0.75", "1.75", "3.5", "0.25", "1.25", "2.5",
                                                  "5", "5.01", "100", "0.2500001")]
          == [1, 3, 5, 0, 2, 4, 6, 7, 7, 1], "tokenspeed thresholds")
    check(e2m1_rne(Fraction(7)) == 7 and e2m1_rne(Fraction(100)) == 7, "e2m1 sat")
    check(ceil_log2(TWO ** 5) == 5 and ceil_log2(TWO ** 5 + TWO ** -40) == 6, "ceil_log2")
    check(round_f32(Fraction(1, 3)) == Fraction(11184811, 2 ** 25), "round_f32 1/3")
    check(round_f32(TWO ** -149 / 2) == 0 and round_f32(TWO ** -149 * 3 / 2) == TWO ** -148,
          "round_f32 subnormal ties")
    check(round_f32(TWO ** 128) is None, "round_f32 overflow")

    # Float32 double rounding never changes an FP4 code: E2M1(f32(x / s)) == E2M1(x / s) for
    # every BF16 significand (8 bits), every E4M3 scale significand (odd parts of 1..15; the
    # subnormal scales reduce to these) and every quotient binade in [2^-3, 8] (below it both
    # give 0, above it both saturate).
    for mx in range(128, 256):
        for n in range(8, 16):
            q0 = Fraction(mx, n)
            k = floor_log2(q0)
            for sh in range(-4 - k, 4 - k):
                q = q0 * TWO ** sh
                if TWO ** -3 <= q <= 8 and e2m1_rne(round_f32(q)) != e2m1_rne(q):
                    raise AssertionError("double rounding %d/%d x 2^%d" % (mx, n, sh))
    checks += 1

    z512, z128 = [0] * 512, [0] * 128
    # Zero blocks, per writer.
    p = write_page(FORMATS["v4.fp8_ds_mla"], "flashmla", row_input(z512))
    check(p[576:583] == bytes([114] * 7) and p[583] == 0 and len(p) == 1152 and not any(p[:576]),
          "fp8_ds_mla flashmla zero row")
    p = write_page(FORMATS["v4.fp8_ds_mla"], "vllm", row_input(z512))
    check(p[576:583] == bytes([105] * 7), "fp8_ds_mla vllm zero row")
    p = write_page(FORMATS["v4.1.fp8"], "flashmla", row_input(z512))
    check(p[512:528] == bytes([114] * 16) and len(p) == 1024, "v4.1.fp8 flashmla zero row")
    p = write_page(FORMATS["v4.1.fp8.interleaved"], "sglang", row_input(z512 * 2))
    check(p[512:528] == bytes([105] * 16) == p[1040:1056] and len(p) == 1056,
          "v4.1.fp8.interleaved sglang zero rows")
    for name, size in (("v4.1.fp4", 512), ("v4.1.fp4.align256", 512),
                       ("v4.1.fp4.interleaved", 288)):
        p = write_page(FORMATS[name], "flashmla", row_input(z512))
        check(p[256:288] == bytes([0x01] * 32) and len(p) == size and not any(p[:256]),
              name + " zero row")
    p = write_page(FORMATS["v4.indexer_fp8"], "vllm", row_input(z128))
    check(p[128:132] == bytes([0, 0, 0x80, 0x34]) and len(p) == 132, "indexer_fp8 vllm zero")
    p = write_page(FORMATS["v4.indexer_fp8"], "tokenspeed", row_input(z128))
    check(p[128:132] == bytes([0, 0, 0, 0x2F]), "indexer_fp8 tokenspeed zero")
    p = write_page(FORMATS["v4.indexer_mxfp4"], "vllm", row_input(z128))
    check(p[64:68] == bytes([0x01] * 4) and len(p) == 68, "indexer_mxfp4 vllm zero")
    p = write_page(FORMATS["v4.indexer_mxfp4"], "tokenspeed", row_input(z128))
    check(p[64:68] == bytes([0x70] * 4), "indexer_mxfp4 tokenspeed zero")

    # Page sizes and offsets (facts 2, layout-variants 1.6, 1.7, 3.3).
    f = FORMATS
    check(f["v4.fp8_ds_mla"].page_bytes(64) == 37440 and f["v4.fp8_ds_mla"].page_bytes(2) == 1728
          and f["v4.fp8_ds_mla"].scale_off(64, 1) == 36872, "fp8_ds_mla page")
    check(f["v4.1.fp8"].scale_off(64, 1) == 32784 and f["v4.1.fp8"].page_bytes(64) == 33792
          and f["v4.1.fp8"].scale_off(32, 1) == 16400 and f["v4.1.fp8"].page_bytes(32) == 16896,
          "v4.1.fp8 page")
    check(f["v4.1.fp8.interleaved"].data_off(64, 1) == 528
          and f["v4.1.fp8.interleaved"].scale_off(64, 1) == 1040
          and f["v4.1.fp8.interleaved"].page_bytes(64) == 33792, "v4.1.fp8.interleaved page")
    check(f["v4.1.fp4"].scale_off(64, 1) == 16416 and f["v4.1.fp4"].page_bytes(64) == 18432
          and f["v4.1.fp4"].page_bytes(8) == 2560 and f["v4.1.fp4.align256"].page_bytes(8) == 2304
          and f["v4.1.fp4.interleaved"].scale_off(64, 1) == 544, "v4.1.fp4 pages")
    check(f["v4.indexer_fp8"].scale_off(64, 1) == 8196 and f["v4.indexer_fp8"].page_bytes(64)
          == 8448, "indexer_fp8 page")
    check(f["v4.indexer_mxfp4"].scale_off(64, 1) == 4100 and f["v4.indexer_mxfp4"].page_bytes(64)
          == 4352, "indexer_mxfp4 page")

    # MXFP4 ties and signed zeros, scale 1 (amax 6 -> e = 0).
    blk = [bits_of(6.0), bits_of(0.75), bits_of(-0.09375), bits_of(1.75), bits_of(3.5),
           bits_of(-0.25), bits_of(0.5)] + [0] * 121
    p = write_page(f["v4.indexer_mxfp4"], "vllm", row_input(blk))
    check(p[64] == 127 and p[0] == 0x7 | 2 << 4 and p[1] == 0x8 | 4 << 4
          and p[2] == 6 | 0x8 << 4 and p[3] == 1, "mxfp4 vllm ties and -0")
    check(p[65:68] == bytes([1] * 3), "mxfp4 vllm zero blocks")
    p = write_page(f["v4.indexer_mxfp4"], "tokenspeed", row_input(blk))
    check(p[64] == 127 and p[0] == 0x7 | 1 << 4 and p[1] == 0x0 | 3 << 4
          and p[2] == 5 | 0x0 << 4 and p[3] == 1, "mxfp4 tokenspeed ties and +0")
    # facts 5.4: amax 5.5 -> scale 1, code 0x7.
    p = write_page(f["v4.indexer_mxfp4"], "vllm", row_input([bits_of(5.5)] + [0] * 127))
    check(p[64] == 127 and p[0] == 0x7, "mxfp4 amax 5.5")
    # Scale 2^3 (amax 48): 0.75 x 8 = 6 ties to 1.0 (vllm) / 0.5 (tokenspeed).
    blk = [bits_of(48.0), bits_of(6.0), bits_of(-0.75)] + [0] * 125
    pv = write_page(f["v4.indexer_mxfp4"], "vllm", row_input(blk))
    pt = write_page(f["v4.indexer_mxfp4"], "tokenspeed", row_input(blk))
    check(pv[64] == 130 == pt[64] and pv[0] == 0x7 | 2 << 4 and pt[0] == 0x7 | 1 << 4
          and pv[1] == 0x8 and pt[1] == 0x0, "mxfp4 scale 8 ties")

    # FP8 blocks: amax 448 -> e = 0 under both rules; an exact value and the saturating path.
    blk = [bits_of(448.0), bits_of(-1.0), bits_of(2.0 ** -10), bits_of(-(2.0 ** -11))] + [0] * 60
    for w in ("flashmla", "vllm"):
        p = write_page(f["v4.fp8_ds_mla"], w, row_input(blk + z512[64:]))
        check(p[576] == 127 and p[0:4] == bytes([0x7E, 0xB8, 0x00, 0x80]), "fp8 block " + w)
    # The two floors differ for 1e-4 <= amax < 0.0448 only at amax/448 < 1e-4.
    blk = [bits_of(2.0 ** -8)] + [0] * 63
    pf = write_page(f["v4.fp8_ds_mla"], "flashmla", row_input(blk + z512[64:]))
    pv = write_page(f["v4.fp8_ds_mla"], "vllm", row_input(blk + z512[64:]))
    check(pf[576] == 114 and pf[0] == e4m3_code(TWO ** 5) and pv[576] == 127 - 8 - 8
          and pv[0] == 0x78, "fp8 small amax")

    # Non-finite FP8 blocks.
    ninf, pinf, nan, nnan = 0xFF80, 0x7F80, 0x7FC1, 0xFFC0
    blk = [pinf, bits_of(-3.0), bits_of(5.0), ninf] + [0] * 60
    rope = [bits_of(-1.5), nan, pinf] + [0] * 61
    row = blk + [nnan] + [0] * 63 + z512[128:448] + rope
    p = write_page(f["v4.fp8_ds_mla"], "flashmla", row_input(row))
    check(p[576:579] == bytes([0xFF, 0xFF, 114]) and p[0:4] == bytes([0x7F, 0x80, 0x00, 0x7F])
          and not any(p[4:64]) and p[64:128] == bytes([0x7F] * 64), "fp8_ds_mla non-finite")
    check(p[448:454] == struct.pack("<3H", bits_of(-1.5), nan, pinf), "fp8_ds_mla rope copy")
    p = write_page(f["v4.1.fp8.interleaved"], "sglang", row_input(row))
    check(p[512:516] == bytes([0xFF, 105, 0xFF, 105]) and p[0:4] == bytes([0x7F, 0x80, 0, 0x7F])
          and p[32:64] == bytes(32) and p[64:96] == bytes([0x7F] * 32)
          and p[526:528] == bytes([0xFF, 105]) and p[448:480] == bytes([0x7F] * 32),
          "v4.1.fp8 non-finite (RoPE tiles are FP8 too)")
    p = write_page(f["v4.indexer_fp8"], "vllm", row_input(blk + [0] * 64))
    check(p[128:132] == bytes([0, 0, 0x80, 0x7F]) and p[0:4] == bytes([0x7F, 0x80, 0, 0x7F]),
          "indexer_fp8 inf")
    p = write_page(f["v4.indexer_fp8"], "tokenspeed", row_input([nnan] + [0] * 127))
    check(p[128:132] == bytes([0, 0, 0xC0, 0x7F]) and p[0:128] == bytes([0x7F] * 128),
          "indexer_fp8 nan")

    # Non-finite FP4 tiles.
    row = [pinf, bits_of(-500.0), bits_of(1000.0), ninf] + [0] * 12 + [nan, bits_of(1.0)] + \
        [0] * 14 + z512[32:]
    p = write_page(f["v4.1.fp4"], "flashmla", row_input(row))
    check(p[256] == 0x7E and p[257] == 0x7F and p[258] == 0x01, "fp4 inf/nan scales")
    check(p[0] == 0x7 | 0xA << 4 and p[1] == 0x4 | 0xF << 4 and not any(p[2:16]),
          "fp4 inf codes (+inf -> 0x7, -500/448 -> -1.0 = 0xA, 1000/448 -> 2.0 = 0x4, -inf -> 0xF)")
    p = write_page(f["v4.1.fp4.interleaved"], "flashmla", row_input([pinf] + z512[1:]))
    check(p[256] == 0x7E and p[0] == 0x7, "fp4 +inf tile: scale 0x7E, code 0x7")
    # A FP4 tile: amax 6 -> scale 1 (0x38); ties and the kept sign of a zero code.
    row = [bits_of(6.0), bits_of(0.75), bits_of(-0.25), bits_of(2.5), bits_of(-5.0),
           bits_of(-0.0)] + [0] * 506
    p = write_page(f["v4.1.fp4"], "flashmla", row_input(row))
    check(p[256] == 0x38 and p[0] == 0x7 | 2 << 4 and p[1] == 0x8 | 4 << 4
          and p[2] == 0xE | 0x8 << 4, "fp4 ties, signed zero")
    # amax 7 -> 7/6 -> E4M3 1.125 (RNE of 1.1666: 1.125 vs 1.25 -> 1.125); 7/1.125 = 6.22 -> 6.
    p = write_page(f["v4.1.fp4"], "flashmla", row_input([bits_of(7.0)] + z512[1:]))
    check(p[256] == 0x39 and p[0] == 0x7, "fp4 scale rounding")

    # Exit-2 path: non-finite mxfp4.
    try:
        write_page(f["v4.indexer_mxfp4"], "vllm", row_input([pinf] + [0] * 127))
        check(False, "mxfp4 non-finite accepted")
    except BadInput:
        checks += 1

    # The generated input (golden.hpp): the zero runs and the exponent range.
    inp = generated_input(512, 2, 7)
    bs = struct.unpack("<1024H", inp)
    check(all(b == 0 for b in bs[6 * 64:7 * 64]) and any(bs[:64]), "zero runs")
    check(all(b == 0 or 92 <= (b >> 7 & 0xFF) <= 131 for b in bs), "exponent range")
    print("self-test: %d checks passed" % checks)


# ---------------------------------------------------------------------------------------------


def fail(code, msg):
    print("golden_writer: " + msg, file=sys.stderr)
    sys.exit(code)


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("format")
    ap.add_argument("--writer")
    ap.add_argument("--rows", type=int)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--input")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    fmt = FORMATS.get(a.format)
    if fmt is None:
        fail(2, "unknown format %r (formats: %s)" % (a.format, ", ".join(FORMATS)))
    writer = a.writer or fmt.writers[0]
    if writer not in fmt.writers:
        fail(2, "format %s has no writer %r (writers: %s)" % (fmt.name, writer,
                                                              ", ".join(fmt.writers)))
    if not a.out:
        fail(2, "empty --out")
    if a.input is not None:
        if a.rows is not None or a.seed is not None:
            fail(2, "--input excludes --rows and --seed")
        try:
            with open(a.input, "rb") as fh:
                inp = fh.read()
        except OSError as e:
            fail(2, "cannot read %s: %s" % (a.input, e.strerror))
        if not inp or len(inp) % (2 * fmt.values):
            fail(2, "input size %d is not a positive multiple of %d" % (len(inp), 2 * fmt.values))
    else:
        rows = 64 if a.rows is None else a.rows
        seed = 0 if a.seed is None else a.seed
        if not 1 <= rows <= 65536:
            fail(2, "rows must be in [1, 65536]")
        if not 0 <= seed <= MASK64:
            fail(2, "seed must be in [0, 2^64)")
        inp = generated_input(fmt.values, rows, seed)
    try:
        page = write_page(fmt, writer, inp)
    except BadInput as e:
        fail(2, str(e))
    try:
        os.makedirs(a.out, exist_ok=True)
        for name, blob in (("input.bf16", inp), ("page.bin", page)):
            fd, tmp = tempfile.mkstemp(prefix="." + name + ".tmp-", dir=a.out)
            with os.fdopen(fd, "wb") as fh:
                fh.write(blob)
            os.replace(tmp, os.path.join(a.out, name))
    except OSError as e:
        fail(3, "cannot write %s: %s" % (a.out, e.strerror))
    for name, blob in (("input.bf16", inp), ("page.bin", page)):
        print("%s  %s" % (hashlib.sha256(blob).hexdigest(), name))


if __name__ == "__main__":
    main()
