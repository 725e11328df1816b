#include "cpu/ops/linalg.h"

#include "cpu/ops/register.h"

namespace kiln::cpu {

void register_linalg_kernels() {
  register_linalg_solve_kernels();
  register_linalg_det_kernels();
  register_linalg_lu_kernels();
  register_linalg_cholesky_eigh_kernels();
  register_linalg_qr_kernels();
  register_linalg_svd_kernels();
  register_linalg_lstsq_kernels();
  register_linalg_eigvals_ldl_kernels();
}

}  // namespace kiln::cpu
