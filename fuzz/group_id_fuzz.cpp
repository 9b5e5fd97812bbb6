// Fuzz target: the group-id parser. Any byte string either parses to an id that prints back
// as exactly the same string (the parser accepts only the seed's canonical ids) or throws
// std::invalid_argument with a one-line message; never anything else.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dsv4::cache;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<group_id> id;
  try {
    id = parse_group_id(text);
  } catch (const std::invalid_argument& e) {
    const std::string_view msg = e.what();
    DSV4_FUZZ_CHECK(msg.find('\n') == std::string_view::npos);  // one line, whatever the bytes
    DSV4_FUZZ_CHECK(msg.starts_with("dsv4::cache: "));
    return 0;
  }
  DSV4_FUZZ_CHECK(to_string(*id) == text);
  DSV4_FUZZ_CHECK(parse_group_id(to_string(*id)) == *id);
  // V4.1 groups carry ratio 2 or 1 (ratio-2 state only); V4's carry 4 or 128.
  const bool v41 = id->kind == group_kind::v41_swa || id->kind == group_kind::v41_global ||
                   id->kind == group_kind::v41_compressor_state;
  if (v41)
    DSV4_FUZZ_CHECK(id->kind == group_kind::v41_global ? (id->ratio == 1 || id->ratio == 2)
                                                       : id->ratio == (id->kind == group_kind::v41_swa ? 0 : 2));
  else
    DSV4_FUZZ_CHECK(id->ratio == 0 || id->ratio == kCsaRatio || id->ratio == kHcaRatio);
  // Ratio 0 for the groups without compression: the SWA windows, V3.2's latent rows and keys.
  const bool uncompressed = id->kind == group_kind::swa_kv || id->kind == group_kind::mla_kv ||
                            id->kind == group_kind::indexer_k || id->kind == group_kind::v41_swa;
  DSV4_FUZZ_CHECK(uncompressed == (id->ratio == 0));
  return 0;
}
