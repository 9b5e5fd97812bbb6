// The compile-time use case of a downstream engine: check the layout it hard-codes.
#include <dsv4/cache.hpp>

static_assert(dsv4::cache::swa_row_bytes(512, 64) == 584);
static_assert(dsv4::cache::build_cache_specs(dsv4::cache::deepseek_v4_flash).num_groups == 6);

int main() { return dsv4::cache::build_memory_plan(dsv4::cache::deepseek_v4_pro).total_bytes > 0 ? 0 : 1; }
