// torch's products built on matmul: the vector forms (dot, vdot, inner,
// outer, mv), the fused-looking forms beta * input + alpha * product (addmm,
// addmv, addr, baddbmm, addbmm, and their in-place forms), kron, tensordot,
// matrix_power and linalg's multi_dot and vecdot. They compose kiln's public
// ops (as torch composes several of them), so they run on any device those
// run on and differentiate through them.
//
//   - Operands of one dtype, as torch's BLAS products require (TypeError
//     otherwise); shapes checked with torch's messages (ValueError).
//   - beta == 0 ignores input's values (NaN and inf in it do not propagate),
//     as torch; its shape still broadcasts.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kiln/scalar.h"
#include "kiln/tensor.h"

namespace kiln {

// a [n], b [n] -> []: sum a_i b_i (vdot: sum conj(a_i) b_i).
Tensor dot(const Tensor& a, const Tensor& b);
Tensor vdot(const Tensor& a, const Tensor& b);
// a [*, n], b [**, n] -> [*, **] (a 0-d operand: a * b).
Tensor inner(const Tensor& a, const Tensor& b);
// a [n], b [m] -> [n, m].
Tensor outer(const Tensor& a, const Tensor& b);
// mat [n, m], vec [m] -> [n].
Tensor mv(const Tensor& mat, const Tensor& vec);

// input broadcast to [n, p]; mat1 [n, m], mat2 [m, p].
Tensor addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2,
             const Scalar& beta = Scalar(int64_t(1)), const Scalar& alpha = Scalar(int64_t(1)));
// input broadcast to [n]; mat [n, m], vec [m].
Tensor addmv(const Tensor& input, const Tensor& mat, const Tensor& vec,
             const Scalar& beta = Scalar(int64_t(1)), const Scalar& alpha = Scalar(int64_t(1)));
// input broadcast to [n, m]; vec1 [n], vec2 [m].
Tensor addr(const Tensor& input, const Tensor& vec1, const Tensor& vec2,
            const Scalar& beta = Scalar(int64_t(1)), const Scalar& alpha = Scalar(int64_t(1)));
// input broadcast to [b, n, p]; batch1 [b, n, m], batch2 [b, m, p].
Tensor baddbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2,
               const Scalar& beta = Scalar(int64_t(1)), const Scalar& alpha = Scalar(int64_t(1)));
// input broadcast to [n, p]; the products of batch1 [b, n, m] and batch2
// [b, m, p] summed over b.
Tensor addbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2,
              const Scalar& beta = Scalar(int64_t(1)), const Scalar& alpha = Scalar(int64_t(1)));
// In place: self must have the result's shape (no broadcasting of self).
const Tensor& addmm_(const Tensor& self, const Tensor& mat1, const Tensor& mat2,
                     const Scalar& beta = Scalar(int64_t(1)), const Scalar& alpha = Scalar(int64_t(1)));
const Tensor& addmv_(const Tensor& self, const Tensor& mat, const Tensor& vec,
                     const Scalar& beta = Scalar(int64_t(1)), const Scalar& alpha = Scalar(int64_t(1)));
const Tensor& addr_(const Tensor& self, const Tensor& vec1, const Tensor& vec2,
                    const Scalar& beta = Scalar(int64_t(1)), const Scalar& alpha = Scalar(int64_t(1)));
const Tensor& baddbmm_(const Tensor& self, const Tensor& batch1, const Tensor& batch2,
                       const Scalar& beta = Scalar(int64_t(1)), const Scalar& alpha = Scalar(int64_t(1)));
const Tensor& addbmm_(const Tensor& self, const Tensor& batch1, const Tensor& batch2,
                      const Scalar& beta = Scalar(int64_t(1)), const Scalar& alpha = Scalar(int64_t(1)));

// Kronecker product: ranks padded with leading 1s to the larger one, then
// out.size(d) = a.size(d) * b.size(d), out[i * b.size + j] = a[i] * b[j] per dim.
Tensor kron(const Tensor& a, const Tensor& b);
// The last `dims` dims of a contracted with the first `dims` of b.
Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims = 2);
// dims_a[k] of a contracted with dims_b[k] of b; the free dims of a, then b's.
Tensor tensordot(const Tensor& a, const Tensor& b, std::span<const int> dims_a, std::span<const int> dims_b);
// A [*, n, n] to the power n by repeated squaring (n < 0: of its inverse;
// n == 0: the identity).
Tensor matrix_power(const Tensor& A, int64_t n);

namespace linalg {
// The product of a chain of matrices in the cheapest order (the first may be
// 1-D [n] as a row, the last 1-D as a column; at least two).
Tensor multi_dot(std::span<const Tensor> tensors);
// sum over dim of conj(x) * y, broadcast.
Tensor vecdot(const Tensor& x, const Tensor& y, int dim = -1);
}  // namespace linalg

}  // namespace kiln
