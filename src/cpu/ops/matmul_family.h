// The matmul family's CPU kernels (ops/registry/matmul.h), one file per
// front-end; register_matmul_kernels() (matmul.cc) registers them all.
#pragma once

#include "cpu/gemv.h"
#include "kiln/tensor.h"
#include "ops/registry/matmul.h"

namespace kiln::cpu {

void register_linear_kernels();
void register_block_linear_kernels();
void register_matmul_product_kernels();
void register_scaled_mm_kernels();
void register_grouped_mm_kernels();
void register_quantize_kernels();
void register_moe_kernels();

// The pointer-level kernels' scale kind for a layout the front-end read.
inline ScaleKind scale_kind(ops::ScaleLayout l) {
  switch (l) {
    case ops::ScaleLayout::Tensor:
      return ScaleKind::Tensor;
    case ops::ScaleLayout::Row:
      return ScaleKind::Row;
    case ops::ScaleLayout::Block:
      return ScaleKind::Block;
    case ops::ScaleLayout::None:
      break;
  }
  return ScaleKind::None;
}
static_assert(ops::kScaleBlock == kScaleBlock);

// t as a float32 contiguous tensor (t itself when it already is one).
inline Tensor f32_contiguous(const Tensor& t) {
  if (t.dtype() == DType::Float32 && t.is_contiguous()) return t;
  return t.to(DType::Float32).contiguous();
}

}  // namespace kiln::cpu
