// Batched small dense solves (n <= 16), vectorized across the batch: lane l of
// every SIMD vector belongs to matrix l of a chunk, so a batch of 4x4 systems
// runs at full vector width without any per-matrix horizontal work.
#pragma once

#include <cstdint>

namespace kiln::cpu {

inline constexpr int kSmallMaxN = 16;    // largest n the batched kernel takes
inline constexpr int kSmallMaxRhs = 16;  // largest number of right-hand sides

// Gauss-Jordan elimination with partial pivoting on [A | C] for `count`
// systems. a: count x n x n row-major (matrix stride n*n), read only.
// c: count x n x m row-major (stride n*m); overwritten by A^-1 C. When
// `identity_rhs`, c is only written (C = I, m = n: the inverse). info: count
// int32, the 1-based index of the first zero pivot as LAPACK getrf reports it,
// 0 for a regular matrix. The pivot of each column is its first entry of
// largest magnitude (isamax), so the pivot sequence is getrf's. A matrix
// holding a NaN gets an all-NaN result and info 0 (kiln.linalg's rule); inf in
// A, and NaN or inf in C, go through the arithmetic.
void small_gauss_jordan(const float* a, float* c, int32_t* info, int64_t count, int n, int m,
                        bool identity_rhs);
void small_gauss_jordan(const double* a, double* c, int32_t* info, int64_t count, int n, int m,
                        bool identity_rhs);

// Forward/back substitution for a batch of triangular systems with many
// right-hand sides, vectorized along the right-hand sides: solves A X = B into
// X. a: count x n x n row-major (stride n*n); src (B) and x: count x n x m
// row-major (stride n*m); src may be x (in place). lower/upper and unit
// diagonal as solve_triangular.
void batched_trsm_left_f32(const float* a, const float* src, float* x, int64_t count, int n, int m,
                           bool upper, bool unit);

}  // namespace kiln::cpu
