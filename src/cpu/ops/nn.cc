#include "cpu/ops/nn.h"

#include "cpu/ops/register.h"

namespace kiln::cpu {

void register_nn_kernels() {
  register_norm_kernels();
  register_batch_norm_kernels();
  register_swiglu_kernels();
  register_embedding_kernels();
  register_rope_kernels();
  register_attention_kernels();
  register_sampling_kernels();
}

}  // namespace kiln::cpu
