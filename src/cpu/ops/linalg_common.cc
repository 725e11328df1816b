#include "cpu/ops/linalg_common.h"

#include <cstring>

namespace kiln::cpu {
namespace {

// Exponent bits all set and a nonzero mantissa: NaN. OR-reduced without
// branches so the loop vectorizes; the callers stop at the first matrix hit.
template <typename U, typename F>
bool any_nan_bits(const F* p, int64_t n, U abs_mask, U inf_bits) {
  U acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    U u;
    std::memcpy(&u, p + i, sizeof(U));
    acc |= U((u & abs_mask) > inf_bits);
  }
  return acc != 0;
}

}  // namespace

bool any_nan(const float* p, int64_t n) { return any_nan_bits<uint32_t>(p, n, 0x7fffffffu, 0x7f800000u); }
bool any_nan(const double* p, int64_t n) {
  return any_nan_bits<uint64_t>(p, n, 0x7fffffffffffffffull, 0x7ff0000000000000ull);
}

}  // namespace kiln::cpu
