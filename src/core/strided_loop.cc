// StridedLoop::make: byte strides per operand, size-1 dims dropped, adjacent
// dims coalesced.
#include "core/strided_loop.h"

#include <functional>
#include <numeric>

#include "core/checked_math.h"

namespace kiln {

StridedLoop StridedLoop::make(std::span<const int64_t> shape, std::span<const Tensor* const> operands,
                              Order order) {
  StridedLoop loop;
  loop.nops = int(operands.size());
  for (int k = 0; k < loop.nops; ++k) loop.data[k] = static_cast<char*>(operands[k]->data_ptr());
  loop.numel = shape_numel(shape, "strided_loop");
  if (loop.numel == 0) {
    // Runs nothing. An empty view's strides may be anything, so none is scaled.
    loop.shape[0] = 0;
    return loop;
  }
  // Operands are views of `shape`, non-empty and inside their storage, so each
  // (size - 1) * stride * itemsize fits int64; products with a full size may not.
  // Drop size-1 dims, then merge dim d into d-1 when every operand steps
  // through both as one run.
  int nd = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    loop.shape[nd] = shape[d];
    for (int k = 0; k < loop.nops; ++k)
      loop.strides[k][nd] = operands[k]->strides()[d] * int64_t(operands[k]->itemsize());
    ++nd;
  }
  // Operand 0's memory order, when it steps through every dim (a stride-0
  // output dim would be written repeatedly, so its order is left alone).
  if (order == Order::OutputMemory && nd > 1) {
    const auto& s0 = loop.strides[0];
    const bool moves = std::all_of(s0.begin(), s0.begin() + nd, [](int64_t v) { return v > 0; });
    if (moves && !std::is_sorted(s0.begin(), s0.begin() + nd, std::greater<int64_t>())) {
      std::array<int, kMaxDims> perm{};
      std::iota(perm.begin(), perm.begin() + nd, 0);
      std::stable_sort(perm.begin(), perm.begin() + nd,
                       [&](int a, int b) { return s0[size_t(a)] > s0[size_t(b)]; });
      const StridedLoop src = loop;
      for (int d = 0; d < nd; ++d) {
        loop.shape[d] = src.shape[size_t(perm[size_t(d)])];
        for (int k = 0; k < loop.nops; ++k) loop.strides[k][d] = src.strides[k][size_t(perm[size_t(d)])];
      }
    }
  }
  if (nd == 0) {
    loop.shape[0] = 1;
    for (int k = 0; k < loop.nops; ++k) loop.strides[k][0] = int64_t(operands[k]->itemsize());
    nd = 1;
  }
  int out = 0;
  for (int d = 1; d < nd; ++d) {
    bool mergeable = true;
    for (int k = 0; k < loop.nops; ++k) {
      int64_t run;
      if (!checked_mul(loop.strides[k][d], loop.shape[d], &run) || loop.strides[k][out] != run)
        mergeable = false;
    }
    if (mergeable) {
      loop.shape[out] *= loop.shape[d];
      for (int k = 0; k < loop.nops; ++k) loop.strides[k][out] = loop.strides[k][d];
    } else {
      ++out;
      loop.shape[out] = loop.shape[d];
      for (int k = 0; k < loop.nops; ++k) loop.strides[k][out] = loop.strides[k][d];
    }
  }
  loop.ndim = out + 1;
  return loop;
}

}  // namespace kiln
