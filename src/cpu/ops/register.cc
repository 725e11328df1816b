#include "cpu/ops/register.h"

namespace kiln::cpu {

void register_kernels() {
  register_unary_math_kernels();
  register_softmax_kernels();
  register_matmul_kernels();
}

}  // namespace kiln::cpu
