// The scalar epilogue shared by the matrix-vector kernels (gemv-inl.h,
// gemv_bf16_dot.cc): a row's scale and the store of one output, narrowed to
// y's dtype or added into float32 y.
#pragma once

#include <cstdint>

#include "cpu/gemv.h"
#include "kiln/float_types.h"

namespace kiln::cpu::gemv_store {

// Row n's scale for the Tensor and Row layouts (Block scales are applied per
// block by the kernels; None: 1).
inline float row_scale(const GemvArgs& a, int64_t n) {
  switch (a.scale_kind) {
    case ScaleKind::Tensor:
      return a.scale[0];
    case ScaleKind::Row:
      return a.scale[n];
    default:
      return 1.0f;
  }
}

inline void store_out(const GemvArgs& a, int64_t m, int64_t n, float v) {
  char* row = static_cast<char*>(a.y) + m * a.ldy * int64_t(itemsize(a.y_dtype));
  switch (a.y_dtype) {
    case DType::BFloat16:
      reinterpret_cast<uint16_t*>(row)[n] = float_to_bf16_bits(v);
      break;
    case DType::Float16:
      reinterpret_cast<uint16_t*>(row)[n] = float_to_f16_bits(v);
      break;
    default: {
      float* o = reinterpret_cast<float*>(row) + n;
      *o = a.accumulate ? *o + v : v;
    }
  }
}

}  // namespace kiln::cpu::gemv_store
