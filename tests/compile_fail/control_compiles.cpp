// The control: the same constant expressions with valid inputs compile (so the failures above
// are the inputs, not the harness). EXPECT: compiles
#include "dsv4/cache/layer_schedule.hpp"
#include "dsv4/cache/row_format.hpp"

static_assert(dsv4::cache::build_layer_schedule(dsv4::cache::deepseek_v4_flash).num_layers == 44);
static_assert(dsv4::cache::swa_row_bytes(512, 64) == 584);
