// Front-ends of block_linear, dequantize_blocks and block_scales_finite
// (kiln/block_quant.h): validate the block tensor against its type, bring x
// and bias to float32 rows, allocate, and call the ops.
#include "kiln/block_quant.h"

#include "kiln/error.h"
#include "ops/linear_common.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

// blocks: uint8 [N, row bytes] with each row's bytes contiguous; returns K.
int64_t check_blocks(const Tensor& blocks, BlockType type, const char* op) {
  const BlockTypeInfo& info = block_type_info(type);
  KILN_CHECK(blocks.defined(), ValueError, "[" << op << "] blocks must be defined");
  KILN_CHECK(blocks.dtype() == DType::UInt8, TypeError,
             "[" << op << "] blocks must be uint8 (the stored bytes), got " << name(blocks.dtype()));
  KILN_CHECK(blocks.dim() == 2, ValueError,
             "[" << op << "] blocks must be 2-D [out_features, bytes per row], got " << blocks.shape_str());
  KILN_CHECK(blocks.size(1) % info.block_bytes == 0, ValueError,
             "[" << op << "] rows of " << blocks.size(1) << " bytes are not whole " << info.name
                 << " blocks of " << info.block_bytes << " bytes");
  KILN_CHECK(blocks.size(1) <= 1 || blocks.stride(1) == 1, ValueError,
             "[" << op << "] each row's bytes must be contiguous");
  return blocks.size(1) / info.block_bytes * info.block_size;
}

}  // namespace

void dequantize_blocks_out(const Tensor& blocks, BlockType type, const Tensor& out) {
  const int64_t K = check_blocks(blocks, type, "dequantize_blocks");
  KILN_CHECK(out.defined() && out.dtype() == DType::Float32 && out.is_contiguous() &&
                 out.sizes() == Shape({blocks.size(0), K}),
             ValueError,
             "[dequantize_blocks] out must be float32 [" << blocks.size(0) << ", " << K
                                                         << "] and contiguous, got "
                                                         << (out.defined() ? out.shape_str() : "undefined"));
  ops::dequantize_blocks(common_device("dequantize_blocks", {&blocks, &out}), blocks, type, out);
}

Tensor dequantize_blocks(const Tensor& blocks, BlockType type) {
  const int64_t K = check_blocks(blocks, type, "dequantize_blocks");
  Tensor out = empty({blocks.size(0), K}, DType::Float32, blocks.device());
  dequantize_blocks_out(blocks, type, out);
  return out;
}

bool block_scales_finite(const Tensor& blocks, BlockType type) {
  check_blocks(blocks, type, "block_scales_finite");
  if (blocks.numel() == 0) return true;
  return ops::block_scales_finite(common_device("block_scales_finite", {&blocks}), blocks, type);
}

void block_linear_out(const Tensor& x, const Tensor& blocks, BlockType type, const Tensor& bias,
                      const Tensor& out) {
  const int64_t K = check_blocks(blocks, type, "block_linear");
  const int64_t N = blocks.size(0);
  KILN_CHECK(x.defined() && x.dim() >= 1, ValueError, "[block_linear] input must have at least one dim");
  KILN_CHECK(detail::is_activation_dtype(x.dtype()), TypeError,
             "[block_linear] input dtype must be float32, bfloat16 or float16, got " << name(x.dtype()));
  KILN_CHECK(x.size(-1) == K, ValueError,
             "[block_linear] input " << x.shape_str() << " and a " << block_type_info(type).name
                                     << " weight of [" << N << ", " << K << "] disagree on in_features");
  Tensor b;
  if (bias.defined()) {
    KILN_CHECK(is_floating(bias.dtype()) && !is_fp8(bias.dtype()), TypeError,
               "[block_linear] bias must be float32, bfloat16 or float16, got " << name(bias.dtype()));
    KILN_CHECK(bias.numel() == N && bias.dim() <= 1, ValueError,
               "[block_linear] bias of shape " << bias.shape_str() << " does not match out_features " << N);
    b = detail::f32_contiguous(bias.reshape({N}));
  }
  Shape shape = x.sizes();
  shape.back() = N;
  KILN_CHECK(out.defined() && out.sizes() == shape, ValueError,
             "[block_linear] out must have shape " << shape_to_string(shape) << ", got "
                                                   << (out.defined() ? out.shape_str() : "undefined"));
  KILN_CHECK(
      out.dtype() == x.dtype() || out.dtype() == DType::Float32, TypeError,
      "[block_linear] out dtype must be " << name(x.dtype()) << " or float32, got " << name(out.dtype()));
  KILN_CHECK(out.is_contiguous(), ValueError, "[block_linear] out must be contiguous");
  KILN_CHECK(!x.requires_grad(), NotImplementedError,
             "[block_linear] has no derivative yet: dequantize_blocks the weight to train through it");
  int64_t M = 1;  // rows of x: every dim but the last
  for (int i = 0; i + 1 < x.dim(); ++i) M *= x.size(i);
  const Tensor x2 = detail::f32_contiguous(x).reshape({M, K});
  const Tensor y2 =
      out.dtype() == DType::Float32 ? out.view({M, N}) : empty({M, N}, DType::Float32, out.device());
  ops::block_linear(common_device("block_linear", {&x, &blocks, &b, &out}), x2, blocks, type, b, y2);
  if (out.dtype() != DType::Float32) Tensor(out).copy_(y2.view(shape));
}

Tensor block_linear(const Tensor& x, const Tensor& blocks, BlockType type, const Tensor& bias) {
  KILN_CHECK(x.defined() && blocks.defined(), ValueError, "[block_linear] input and blocks must be defined");
  Shape shape = x.sizes();
  KILN_CHECK(!shape.empty(), ValueError, "[block_linear] input must have at least one dim");
  shape.back() = blocks.dim() >= 1 ? blocks.size(0) : 0;
  Tensor out = empty(shape, x.dtype(), x.device());
  block_linear_out(x, blocks, type, bias, out);
  return out;
}

}  // namespace kiln
