// The CPU kernels of kiln.linalg (ops/registry/linalg.h), one file per group;
// register_linalg_kernels() (linalg.cc) registers them all.
#pragma once

namespace kiln::cpu {

void register_linalg_solve_kernels();          // inv, solve, solve_triangular
void register_linalg_det_kernels();            // det, slogdet
void register_linalg_lu_kernels();             // lu_factor, lu, lu_solve
void register_linalg_cholesky_eigh_kernels();  // cholesky, eigh, eigvalsh
void register_linalg_qr_kernels();             // qr, householder_product
void register_linalg_svd_kernels();            // svd, svdvals, pinv, matrix_rank
void register_linalg_lstsq_kernels();          // lstsq
void register_linalg_eigvals_ldl_kernels();    // eigvals, ldl_factor

}  // namespace kiln::cpu
