// Stable LSD radix sort of one row of keys with their positions: what sort
// and argsort run for rows of 64 or more 8-, 16-, 32- or 64-bit keys. Each
// key maps to an unsigned image whose order is kiln's (sort.h): NaN above
// every number, -0.0 equal to 0.0, all NaNs equal; equal images keep their
// order, so ties keep ascending positions in both directions (descending
// sorts the complemented images). Byte digits, one counting pass for all of
// them, and digits every key shares are skipped. Also the selection of one
// rank by the same images (kthvalue, median).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace kiln::cpu {

// Rows at least this long sort by radix; shorter ones by comparison, whose
// setup is cheaper.
constexpr int64_t kRadixMinRow = 64;

// Whether a key (a floating type or an integer) is NaN.
template <typename K>
inline bool key_is_nan(K v) {
  if constexpr (std::is_floating_point_v<K>)
    return v != v;
  else
    return false;
}

// The unsigned image of a key (float, double or an integer). Branch-free
// for floats (a sign branch mispredicts on half of a zero-centred line):
// adding +0.0 turns -0.0 into 0.0, the sign flips the other bits of
// negatives, and NaN is picked last.
template <typename K>
inline auto radix_image(K v) {
  if constexpr (std::is_same_v<K, float>) {
    const uint32_t u = std::bit_cast<uint32_t>(v + 0.0f);
    const uint32_t image = u ^ (uint32_t(int32_t(u) >> 31) | 0x80000000u);
    return v != v ? uint32_t(0xFFFFFFFFu) : image;
  } else if constexpr (std::is_same_v<K, double>) {
    const uint64_t u = std::bit_cast<uint64_t>(v + 0.0);
    const uint64_t image = u ^ (uint64_t(int64_t(u) >> 63) | (uint64_t(1) << 63));
    return v != v ? ~uint64_t(0) : image;
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

// The counts of byte `shift / 8` of images[0, n).
template <typename U>
void radix_byte_count(const U* images, int64_t n, int shift, int64_t* count) {
  std::fill(count, count + 256, int64_t(0));
  for (int64_t i = 0; i < n; ++i) ++count[(images[i] >> shift) & 0xFF];
}

template <bool kOrder, typename U>
void radix_sort_impl(U* keys, int64_t* order, U* tmp_keys, int64_t* tmp_order, int64_t n) {
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
      if constexpr (kOrder) dst_o[at] = src_o[i];
    }
    std::swap(src_k, dst_k);
    if constexpr (kOrder) std::swap(src_o, dst_o);
  }
  if (src_k != keys) {
    std::memcpy(keys, src_k, size_t(n) * sizeof(U));
    if constexpr (kOrder) std::memcpy(order, src_o, size_t(n) * sizeof(int64_t));
  }
}

// Sorts keys[0, n) (images, modified) and carries order[0, n) (positions)
// along; tmp_keys / tmp_order: scratch of n each. The result ends in keys /
// order. With order null (tmp_order too), the keys alone.
template <typename U>
void radix_sort_images(U* keys, int64_t* order, U* tmp_keys, int64_t* tmp_order, int64_t n) {
  if (order)
    radix_sort_impl<true>(keys, order, tmp_keys, tmp_order, n);
  else
    radix_sort_impl<false>(keys, order, tmp_keys, tmp_order, n);
}

// The image at `rank` (0-based) of images[0, n) sorted ascending, by MSD
// radix selection: each round keeps the byte bucket holding the rank, so the
// work is about two passes over the images whatever their spread; images is
// reordered. *below gets how many images are smaller than the result.
// top_count: the histogram of the top byte when the caller made it in its
// own pass over the data, else null.
template <typename U>
U radix_select_image(U* images, int64_t n, int64_t rank, const int64_t* top_count, int64_t* below) {
  int shift = 8 * int(sizeof(U) - 1);
  int64_t count[256];
  if (top_count)
    std::memcpy(count, top_count, sizeof(count));
  else
    radix_byte_count(images, n, shift, count);
  *below = 0;
  for (;;) {
    int64_t before = 0;
    int b = 0;
    while (rank >= before + count[b]) before += count[b++];
    *below += before;
    rank -= before;
    if (count[b] != n) {  // keep bucket b
      int64_t m = 0;
      for (int64_t i = 0; i < n; ++i)
        if (int((images[i] >> shift) & 0xFF) == b) images[m++] = images[i];
      n = m;
    }
    if (shift == 0) return images[0];  // every byte matched: the rest are equal
    shift -= 8;
    if (n <= 32) {  // a few left: select among them directly
      std::nth_element(images, images + rank, images + n);
      const U v = images[rank];
      for (int64_t i = 0; i < rank; ++i) *below += images[i] < v;
      return v;
    }
    radix_byte_count(images, n, shift, count);
  }
}

}  // namespace kiln::cpu
