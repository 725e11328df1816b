// CPU kernels of block_linear, dequantize_blocks and block_scales_finite
// (ops/registry/matmul.h): up to kLinearGemvMaxRows rows take the block
// matrix-vector kernel, more the packed GEMM over widened panels.
#include "cpu/block_split.h"
#include "cpu/gemv.h"
#include "cpu/gemv_blocks.h"
#include "cpu/ops/matmul_family.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

void block_linear_kernel(const Tensor& x, const Tensor& blocks, BlockType type, const Tensor& bias,
                         const Tensor& out) {
  BlockGemvArgs a;
  a.type = type;
  a.w = blocks.data<uint8_t>();
  a.ldw = blocks.size(0) > 1 ? blocks.stride(0) : blocks.size(1);
  a.N = out.size(1);
  a.K = x.size(1);
  a.M = x.size(0);
  a.x = x.data<float>();
  a.ldx = a.K;
  a.y = out.data<float>();
  a.ldy = a.N;
  a.bias = bias.defined() ? bias.data<float>() : nullptr;
  if (a.M == 0 || a.N == 0) return;
  if (a.K == 0) {  // an empty sum: the bias, or zeros
    Tensor o = out;
    o.fill_(Scalar(0.0));
    if (bias.defined()) o.copy_(bias.reshape({1, a.N}).expand({a.M, a.N}));
    return;
  }
  block_product(a);
}

void dequantize_blocks_kernel(const Tensor& blocks, BlockType type, const Tensor& out) {
  const int64_t N = out.size(0), K = out.size(1);
  if (N == 0 || K == 0) return;
  const uint8_t* w = blocks.data<uint8_t>();
  const int64_t ldw = N > 1 ? blocks.stride(0) : blocks.size(1);
  float* o = out.data<float>();
  const int64_t grain = std::max<int64_t>(1, (int64_t(64) << 10) / std::max<int64_t>(1, K * 4));
  parallel_for(0, N, grain,
               [&](int64_t n0, int64_t n1) { dequantize_block_rows(type, w, ldw, K, n0, n1, o + n0 * K); });
}

bool block_scales_finite_kernel(const Tensor& blocks, BlockType type) {
  const int64_t N = blocks.size(0), bytes = blocks.size(1);
  const int64_t per_row = bytes / block_type_info(type).block_bytes;
  const uint8_t* w = blocks.data<uint8_t>();
  const int64_t ldw = N > 1 ? blocks.stride(0) : bytes;
  for (int64_t n = 0; n < N; ++n)
    if (!block_scales_finite(type, w + n * ldw, per_row)) return false;
  return true;
}

}  // namespace

void register_block_linear_kernels() {
  ops::block_linear.set_kernel(DeviceKind::CPU, block_linear_kernel);
  ops::dequantize_blocks.set_kernel(DeviceKind::CPU, dequantize_blocks_kernel);
  ops::block_scales_finite.set_kernel(DeviceKind::CPU, block_scales_finite_kernel);
}

}  // namespace kiln::cpu
