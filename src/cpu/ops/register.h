// The CPU backend's registrations: each family's register_*_kernels() puts its
// kernels into the ops of ops/registry/all.h. src/backends.cc calls
// register_kernels() once, before the first op runs.
#pragma once

namespace kiln::cpu {

void register_kernels();

void register_unary_math_kernels();
void register_unary_sign_kernels();
void register_unary_rounding_kernels();
void register_unary_predicates_kernels();
void register_unary_special_kernels();
void register_unary_extra_kernels();
void register_complex_kernels();
void register_softmax_kernels();
void register_reduce_kernels();
void register_sort_kernels();
void register_index_kernels();
void register_binary_kernels();
void register_binary_extra_kernels();
void register_nn_kernels();
void register_pool_kernels();
void register_matmul_kernels();
void register_copy_kernels();
void register_linalg_kernels();
void register_random_kernels();
void register_factories_kernels();
void register_shape_kernels();
void register_conv_kernels();
void register_pad_kernels();
void register_interpolate_kernels();
void register_grid_sample_kernels();
void register_fold_kernels();
void register_group_norm_kernels();
void register_dropout_kernels();
void register_fft_kernels();
void register_special_kernels();

}  // namespace kiln::cpu
