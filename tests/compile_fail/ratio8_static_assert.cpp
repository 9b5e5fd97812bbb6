// Must not compile: a compress ratio of 8 inside a constant expression (README: "a bad input
// in a constant expression is a compile error"). EXPECT: compress ratio must be
#include "dsv4/cache/layer_schedule.hpp"

constexpr dsv4::cache::model_config ratio8() {
  dsv4::cache::model_config c = dsv4::cache::deepseek_v4_flash;
  c.compress_ratios[5] = 8;
  return c;
}
static_assert(dsv4::cache::build_layer_schedule(ratio8()).num_layers == 44);
