// dsv4-cache: the planes of tokenspeed's parent arena (engines/tokenspeed/engine.hpp): what its
// pool structure keeps of them for the arena's placement (engines/tokenspeed/arena.hpp).
#pragma once

#include <array>
#include <cstdint>

#include "dsv4/cache/model.hpp"

namespace dsv4::cache {

/// Most planes of a tokenspeed parent: one per layer slot, and f4d8ec6e's index keys on planes
/// of their own (`unit.<n4 + slot>`).
inline constexpr int kMaxTokenspeedPlanes = 2 * kMaxLayers;
static_assert(kMaxTokenspeedPlanes <= 1000, "tokenspeed_planes_in_order walks plane numbers of up to 3 digits");

/// The planes of one tokenspeed parent, plane i being "unit.<i>" (recipes/deepseek_v4.py
/// `DeepseekV4Recipe.groups`): each plane's bytes in one parent (0: no field on it), as
/// tokenspeed's `pack` sizes them (recipes/plan.py @ 6083537e; `detail::ts_planes`).
struct tokenspeed_planes {
  int num_planes = 0;  ///< Planes 0 .. num_planes - 1 (some may be empty).
  std::array<std::int64_t, kMaxTokenspeedPlanes> bytes{};
  friend constexpr bool operator==(const tokenspeed_planes&, const tokenspeed_planes&) = default;
};

/// The plane of the field of pool `pool` in layer slot `slot` (the layer's rank in its group):
/// "unit.<slot>", except f4d8ec6e's CSA index keys (pool 1 of the compressed-KV group, not a group
/// of their own: `keys_own_group` false) on "unit.<csa_layers + slot>" (recipes/deepseek_v4.py
/// `DeepseekV4Recipe.groups`; 0.1.1 declares the keys a group of their own, on "unit.<slot>").
constexpr int tokenspeed_plane_of(int pool, int slot, bool keys_own_group, int csa_layers) {
  return pool == 0 || keys_own_group ? slot : csa_layers + slot;
}

/// Whether plane "unit.<a>" sorts before "unit.<b>" as tokenspeed orders its planes: by id as a
/// string (recipes/plan.py `pack`: `sorted(plane_bytes)`), so "unit.10" comes before "unit.2".
/// a, b >= 0.
constexpr bool tokenspeed_plane_before(int a, int b) {
  std::array<char, 12> da{};
  std::array<char, 12> db{};
  int na = 0;
  int nb = 0;
  do {
    da[static_cast<std::size_t>(na++)] = static_cast<char>('0' + a % 10);
    a /= 10;
  } while (a > 0);
  do {
    db[static_cast<std::size_t>(nb++)] = static_cast<char>('0' + b % 10);
    b /= 10;
  } while (b > 0);
  // Digits were collected last first: compare from the most significant one.
  for (int i = 0; i < na && i < nb; ++i) {
    const char ca = da[static_cast<std::size_t>(na - 1 - i)];
    const char cb = db[static_cast<std::size_t>(nb - 1 - i)];
    if (ca != cb) return ca < cb;
  }
  return na < nb;
}

/// Calls f(q) for every plane q in [0, num_planes) in tokenspeed's order of plane ids (strings:
/// unit.0, unit.1, unit.10, ..., unit.19, unit.2, ...): a preorder walk of the decimal digits.
template <class F>
constexpr void tokenspeed_planes_in_order(int num_planes, F&& f) {
  if (num_planes <= 0) return;
  f(0);
  // Numbers of up to 3 digits (num_planes <= kMaxTokenspeedPlanes = 512).
  for (int a = 1; a <= 9 && a < num_planes; ++a) {
    f(a);
    for (int b = 0; b <= 9 && a * 10 + b < num_planes; ++b) {
      f(a * 10 + b);
      for (int c = 0; c <= 9 && a * 100 + b * 10 + c < num_planes; ++c) f(a * 100 + b * 10 + c);
    }
  }
}

}  // namespace dsv4::cache
