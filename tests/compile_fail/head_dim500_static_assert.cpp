// Must not compile: head_dim 500 (NoPE 436 is not a multiple of 64) in a constant expression.
// EXPECT: NoPE dim must be divisible by 64
#include "dsv4/cache/row_format.hpp"

static_assert(dsv4::cache::swa_row_bytes(500, 64) > 0);
