#include "cpu/ops/register.h"

namespace kiln::cpu {

void register_kernels() {
  register_unary_math_kernels();
  register_unary_sign_kernels();
  register_unary_rounding_kernels();
  register_unary_predicates_kernels();
  register_unary_special_kernels();
  register_unary_extra_kernels();
  register_complex_kernels();
  register_softmax_kernels();
  register_reduce_kernels();
  register_sort_kernels();
  register_index_kernels();
  register_binary_kernels();
  register_binary_extra_kernels();
  register_nn_kernels();
  register_pool_kernels();
  register_matmul_kernels();
  register_copy_kernels();
  register_linalg_kernels();
  register_random_kernels();
  register_factories_kernels();
  register_shape_kernels();
  register_conv_kernels();
  register_pad_kernels();
  register_interpolate_kernels();
  register_grid_sample_kernels();
  register_fold_kernels();
  register_group_norm_kernels();
  register_dropout_kernels();
  register_fft_kernels();
  register_special_kernels();
}

}  // namespace kiln::cpu
