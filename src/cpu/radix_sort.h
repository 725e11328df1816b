// Stable LSD radix sort of one row of keys with their positions: what sort
// and argsort run for rows of 64 or more 8-, 16-, 32- or 64-bit keys. Each
// key maps to an unsigned image whose order is kiln's (sort.h): NaN above
// every number, -0.0 equal to 0.0, all NaNs equal; equal images keep their
// order, so ties keep ascending positions in both directions (descending
// sorts the complemented images). Byte digits, one counting pass for all of
// them, and digits every key shares are skipped.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace kiln::cpu {

// The unsigned image of a key (float, double or an integer).
template <typename K>
inline auto radix_image(K v) {
  if constexpr (std::is_same_v<K, float>) {
    if (v != v) return uint32_t(0xFFFFFFFFu);
    if (v == 0.0f) v = 0.0f;  // -0.0 sorts as 0.0
    const uint32_t u = std::bit_cast<uint32_t>(v);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  } else if constexpr (std::is_same_v<K, double>) {
    if (v != v) return uint64_t(~uint64_t(0));
    if (v == 0.0) v = 0.0;
    const uint64_t u = std::bit_cast<uint64_t>(v);
    return (u & (uint64_t(1) << 63)) ? ~u : (u | (uint64_t(1) << 63));
  } else if constexpr (std::is_signed_v<K> && sizeof(K) <= 4) {
    return uint32_t(int32_t(v)) ^ 0x80000000u;
  } else if constexpr (std::is_signed_v<K>) {
    return uint64_t(v) ^ (uint64_t(1) << 63);
  } else if constexpr (sizeof(K) <= 4) {
    return uint32_t(v);
  } else {
    return uint64_t(v);
  }
}

// Sorts keys[0, n) (images, modified) and carries order[0, n) (positions)
// along; tmp_keys / tmp_order: scratch of n each. The result ends in keys /
// order.
template <typename U>
void radix_sort_images(U* keys, int64_t* order, U* tmp_keys, int64_t* tmp_order, int64_t n) {
  constexpr int kDigits = int(sizeof(U));
  std::vector<int64_t> count(size_t(kDigits) * 256, 0);
  for (int64_t i = 0; i < n; ++i) {
    const U k = keys[i];
    for (int d = 0; d < kDigits; ++d) ++count[size_t(d * 256 + int((k >> (8 * d)) & 0xFF))];
  }
  U* src_k = keys;
  int64_t* src_o = order;
  U* dst_k = tmp_keys;
  int64_t* dst_o = tmp_order;
  for (int d = 0; d < kDigits; ++d) {
    int64_t* c = count.data() + d * 256;
    if (c[(src_k[0] >> (8 * d)) & 0xFF] == n) continue;  // every key shares this digit
    int64_t start = 0;
    for (int b = 0; b < 256; ++b) {
      const int64_t m = c[b];
      c[b] = start;
      start += m;
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t at = c[(src_k[i] >> (8 * d)) & 0xFF]++;
      dst_k[at] = src_k[i];
      dst_o[at] = src_o[i];
    }
    std::swap(src_k, dst_k);
    std::swap(src_o, dst_o);
  }
  if (src_k != keys) {
    std::memcpy(keys, src_k, size_t(n) * sizeof(U));
    std::memcpy(order, src_o, size_t(n) * sizeof(int64_t));
  }
}

}  // namespace kiln::cpu
