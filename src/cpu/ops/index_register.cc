// register_index_kernels(): the indexing ops' CPU kernels, one function per file.
#include "cpu/ops/index_common.h"
#include "cpu/ops/register.h"

namespace kiln::cpu {

void register_index_kernels() {
  register_index_take_kernels();
  register_index_gather_kernels();
  register_index_select_kernels();
  register_index_mask_kernels();
  register_index_advanced_kernels();
}

}  // namespace kiln::cpu
