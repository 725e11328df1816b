// The general strided loop behind every elementwise kernel: operands of one
// (broadcast) shape with arbitrary byte strides, adjacent dims coalesced, the
// linear range split across threads, and the innermost run handed to a kernel
// as (pointers, inner byte strides, count). Kernels take their contiguous and
// scalar-broadcast fast paths from the inner strides.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>

#include "kiln/tensor.h"
#include "kiln/thread_pool.h"

namespace kiln {

inline constexpr int kMaxOperands = 4;

struct StridedLoop {
  int nops = 0;
  int ndim = 1;  // >= 1 after coalescing; dim ndim-1 is the innermost
  int64_t numel = 0;
  std::array<int64_t, kMaxDims> shape{};
  std::array<std::array<int64_t, kMaxDims>, kMaxOperands> strides{};  // bytes
  std::array<char*, kMaxOperands> data{};

  // The order the dims are walked in. Logical: row-major over `shape` (kernels
  // whose result depends on the visiting order: compaction, first-error
  // reports). OutputMemory: operand 0's memory order, outermost first, as
  // torch's TensorIterator; for elementwise kernels, so that channels-last
  // operands run as one contiguous inner loop instead of a stride-C one.
  enum class Order { Logical, OutputMemory };

  // Operands must all have `shape` (inputs already broadcast with expand()).
  // Operand 0 is conventionally the output.
  static StridedLoop make(std::span<const int64_t> shape, std::span<const Tensor* const> operands,
                          Order order = Order::Logical);
};

// Elements per parallel chunk for cheap elementwise work.
inline constexpr int64_t kElementwiseGrain = 32768;

// Calls fn(char* ptrs[kMaxOperands], const int64_t inner_strides[kMaxOperands],
// int64_t n) over the linear element range [begin, end) of the loop, serially:
// one call per innermost run (or part of one).
template <typename F>
void for_each_range(const StridedLoop& loop, int64_t begin, int64_t end, F&& fn) {
  const int last = loop.ndim - 1;
  const int64_t inner = loop.shape[last];
  int64_t inner_strides[kMaxOperands];
  for (int k = 0; k < loop.nops; ++k) inner_strides[k] = loop.strides[k][last];
  // Multi-index of `begin` (dims 0..last).
  int64_t idx[kMaxDims];
  int64_t rem = begin;
  for (int d = last; d >= 0; --d) {
    idx[d] = rem % loop.shape[d];
    rem /= loop.shape[d];
  }
  char* ptrs[kMaxOperands];
  int64_t pos = begin;
  while (pos < end) {
    for (int k = 0; k < loop.nops; ++k) {
      int64_t off = 0;
      for (int d = 0; d <= last; ++d) off += idx[d] * loop.strides[k][d];
      ptrs[k] = loop.data[k] + off;
    }
    const int64_t n = std::min(inner - idx[last], end - pos);
    fn(ptrs, inner_strides, n);
    pos += n;
    idx[last] += n;
    for (int d = last; d > 0 && idx[d] == loop.shape[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

// for_each_range over the whole loop, in parallel chunks of at least `grain`
// elements.
template <typename F>
void for_each(const StridedLoop& loop, int64_t grain, F&& fn) {
  if (loop.numel == 0) return;
  parallel_for(0, loop.numel, grain, [&](int64_t b, int64_t e) { for_each_range(loop, b, e, fn); });
}

}  // namespace kiln
