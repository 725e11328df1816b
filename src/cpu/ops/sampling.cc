// CPU kernels of sample, sample_row and logits_max (ops/registry/nn.h): the
// fused sampler of cpu/sampling.cc, row by row, and its SIMD row max.
#include "cpu/sampling.h"

#include "cpu/ops/nn.h"
#include "cpu/softmax.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

// logits [B, V] float32 contiguous (modified); prev [n] or [B, n] int64 or
// undefined; out [B] int64.
void sample(const Tensor& logits, const SamplingParams& params, const Tensor& prev, Generator& gen,
            const Tensor& out) {
  const int64_t B = out.numel(), V = logits.size(-1);
  int64_t* o = out.data<int64_t>();
  float* xp = logits.data<float>();
  const int64_t* pp = prev.defined() ? prev.data<int64_t>() : nullptr;
  const int64_t nprev = prev.defined() ? prev.size(-1) : 0;
  const bool per_row = prev.defined() && prev.dim() == 2;
  for (int64_t b = 0; b < B; ++b)
    o[b] = sample_row(xp + b * V, V, params, pp ? pp + (per_row ? b * nprev : 0) : nullptr, nprev, gen);
}

}  // namespace

void register_sampling_kernels() {
  ops::sample.set_kernel(DeviceKind::CPU, sample);
  ops::sample_row.set_kernel(DeviceKind::CPU, sample_row);
  ops::logits_max.set_kernel(DeviceKind::CPU, row_max_f32);
}

}  // namespace kiln::cpu
