// A per-layer key/value cache for decoding: [batch, kv_heads, max_len, head_dim]
// per layer for keys and for values, in float32 or bfloat16 (or float16).
// The storage for all max_len positions is reserved as address space at
// construction and committed by the OS page by page as positions are written,
// so a long max_len costs memory only for the positions used. append() writes
// new positions (converting from the caller's dtype); keys()/values() are views
// of the first L positions that scaled_dot_product_attention(_out) reads in
// place (no copy).
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

class KVCache {
 public:
  KVCache() = default;
  // ValueError for bad sizes or sizes whose bytes overflow; Error when the
  // address space cannot be reserved (naming the bytes asked for).
  KVCache(int64_t layers, int64_t batch, int64_t kv_heads, int64_t max_len, int64_t head_dim,
          DType dtype = DType::BFloat16);

  int64_t layers() const { return int64_t(k_.size()); }
  int64_t max_len() const { return max_len_; }
  DType dtype() const { return dtype_; }
  // Bytes of keys and values for all max_len positions: what a full cache commits.
  int64_t capacity_bytes() const { return capacity_bytes_; }
  // Positions filled in `layer`.
  int64_t length(int64_t layer) const;

  // k, v: [batch, kv_heads, T, head_dim] or [kv_heads, T, head_dim] (batch 1)
  // of any float dtype; written at positions [length, length + T), which must
  // fit in max_len (else ValueError). Returns the new length.
  int64_t append(int64_t layer, const Tensor& k, const Tensor& v);
  // Views [batch, kv_heads, L, head_dim] of the first L positions (L = -1: all filled).
  Tensor keys(int64_t layer, int64_t L = -1) const;
  Tensor values(int64_t layer, int64_t L = -1) const;
  // Forgets positions past L in every layer (L <= current lengths).
  void truncate(int64_t L);
  void reset() { truncate(0); }

  // Bytes of keys and values for max_len positions of these sizes, or -1 when
  // that does not fit in int64.
  static int64_t bytes_for(int64_t layers, int64_t batch, int64_t kv_heads, int64_t max_len, int64_t head_dim,
                           DType dtype);

 private:
  int64_t check_layer(int64_t layer) const;
  std::vector<Tensor> k_, v_;
  std::vector<int64_t> len_;
  int64_t max_len_ = 0;
  int64_t capacity_bytes_ = 0;
  DType dtype_ = DType::BFloat16;
};

}  // namespace kiln
