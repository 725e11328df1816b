// torch.matmul: 1-D x 1-D dot, 2-D x 2-D matrix product, 1-D operands promoted
// by a prepended/appended dim, and batched products with broadcast batch dims.
#pragma once

#include "kiln/tensor.h"

namespace kiln {

// Floating operands (float32, float64, bfloat16, float16) of one dtype;
// float32 and float64 run OpenBLAS gemm per batch, the narrow floats compute in
// float32 and round once. Integer operands accumulate exactly in int64.
Tensor matmul(const Tensor& a, const Tensor& b);
// torch.mm / torch.bmm: the strict-rank forms.
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);

}  // namespace kiln
