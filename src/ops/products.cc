// The products of include/kiln/products.h, composed of matmul, mul, add and
// sum (autograd differentiates them through those).
#include "kiln/products.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <string>

#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/complex.h"
#include "kiln/error.h"
#include "kiln/linalg.h"
#include "kiln/matmul.h"
#include "kiln/reduce.h"

namespace kiln {
namespace {

void same_dtype(const char* op, std::initializer_list<const Tensor*> ts) {
  const DType d = (*ts.begin())->dtype();
  for (const Tensor* t : ts)
    KILN_CHECK(
        t->dtype() == d, TypeError,
        "[" << op << "] expected operands of one dtype, got " << name(d) << " and " << name(t->dtype()));
}

void rank(const char* op, const char* what, const Tensor& t, int want) {
  KILN_CHECK(t.dim() == want, ValueError,
             "[" << op << "] " << what << " must be a " << want << "-D tensor, got " << t.dim() << "-D "
                 << t.shape_str());
}

bool is_one(const Scalar& s) { return s.to_double() == 1.0 && s.to_complex().imag() == 0.0; }
bool is_zero(const Scalar& s) { return s.to_double() == 0.0 && s.to_complex().imag() == 0.0; }

// beta * input + alpha * product, input broadcast to product's shape; beta
// == 0 ignores input's values.
Tensor scaled_sum(const char* op, const Tensor& input, const Tensor& product, const Scalar& beta,
                  const Scalar& alpha) {
  const Shape& ps = product.sizes();
  bool fits = input.dim() <= product.dim();
  for (int i = 1; fits && i <= input.dim(); ++i) {
    const int64_t s = input.size(input.dim() - i);
    fits = s == 1 || s == ps[ps.size() - size_t(i)];
  }
  KILN_CHECK(fits, ValueError,
             "[" << op << "] input " << input.shape_str() << " cannot be broadcast to the product's shape "
                 << product.shape_str());
  const Tensor p = is_one(alpha) ? product : mul(product, alpha);
  if (is_zero(beta)) return p;
  return add(is_one(beta) ? input : mul(input, beta), p);
}

template <typename F>
const Tensor& in_place(const char* op, const Tensor& self, std::initializer_list<const Tensor*> others,
                       F&& f) {
  auto check = [&](const Tensor& r) {
    KILN_CHECK(r.sizes() == self.sizes(), ValueError,
               "[" << op << "] the result's shape " << r.shape_str() << " does not match self's "
                   << self.shape_str());
  };
  if (autograd::inplace_needs_grad(op, self, others)) {
    const Tensor r = f(autograd::inplace_source(self));
    check(r);
    autograd::rebase_inplace(self, r);
    return self;
  }
  const Tensor r = f(self);
  check(r);
  Tensor(self).copy_(r);
  return self;
}

}  // namespace

Tensor dot(const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.dim() == 1 && b.dim() == 1, ValueError,
             "[dot] 1D tensors expected, but got " << a.dim() << "D and " << b.dim() << "D tensors");
  KILN_CHECK(a.size(0) == b.size(0), ValueError,
             "[dot] inconsistent tensor size, expected tensors of the same number of elements, but got "
                 << a.size(0) << " and " << b.size(0) << " elements respectively");
  same_dtype("dot", {&a, &b});
  if (is_floating(a.dtype()) && !is_fp8(a.dtype())) return matmul(a, b);
  return sum(mul(a, b), std::nullopt, false, a.dtype());
}

Tensor vdot(const Tensor& a, const Tensor& b) { return dot(is_complex(a.dtype()) ? conj(a) : a, b); }

Tensor inner(const Tensor& a, const Tensor& b) {
  if (a.dim() == 0 || b.dim() == 0) return mul(a, b);
  KILN_CHECK(a.size(-1) == b.size(-1), ValueError,
             "[inner] expected the last dimensions of the inputs to match, got " << a.shape_str() << " and "
                                                                                 << b.shape_str());
  const int la = a.dim() - 1, lb = b.dim() - 1;
  return tensordot(a, b, {&la, 1}, {&lb, 1});
}

Tensor outer(const Tensor& a, const Tensor& b) {
  rank("outer", "input", a, 1);
  rank("outer", "vec2", b, 1);
  return mul(a.unsqueeze(1), b.unsqueeze(0));
}

Tensor mv(const Tensor& mat, const Tensor& vec) {
  rank("mv", "mat", mat, 2);
  rank("mv", "vec", vec, 1);
  KILN_CHECK(mat.size(1) == vec.size(0), ValueError,
             "[mv] size mismatch, got mat " << mat.shape_str() << " and vec " << vec.shape_str());
  same_dtype("mv", {&mat, &vec});
  return matmul(mat, vec);
}

Tensor addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
             const Scalar& alpha) {
  rank("addmm", "mat1", mat1, 2);
  rank("addmm", "mat2", mat2, 2);
  KILN_CHECK(mat1.size(1) == mat2.size(0), ValueError,
             "[addmm] mat1 and mat2 shapes cannot be multiplied ("
                 << mat1.size(0) << "x" << mat1.size(1) << " and " << mat2.size(0) << "x" << mat2.size(1)
                 << ")");
  same_dtype("addmm", {&input, &mat1, &mat2});
  return scaled_sum("addmm", input, mm(mat1, mat2), beta, alpha);
}

Tensor addmv(const Tensor& input, const Tensor& mat, const Tensor& vec, const Scalar& beta,
             const Scalar& alpha) {
  same_dtype("addmv", {&input, &mat, &vec});
  return scaled_sum("addmv", input, mv(mat, vec), beta, alpha);
}

Tensor addr(const Tensor& input, const Tensor& vec1, const Tensor& vec2, const Scalar& beta,
            const Scalar& alpha) {
  rank("addr", "vec1", vec1, 1);
  rank("addr", "vec2", vec2, 1);
  same_dtype("addr", {&input, &vec1, &vec2});
  return scaled_sum("addr", input, outer(vec1, vec2), beta, alpha);
}

namespace {

void batches(const char* op, const Tensor& b1, const Tensor& b2) {
  rank(op, "batch1", b1, 3);
  rank(op, "batch2", b2, 3);
  KILN_CHECK(b1.size(0) == b2.size(0) && b1.size(2) == b2.size(1), ValueError,
             "[" << op << "] batch1 " << b1.shape_str() << " and batch2 " << b2.shape_str()
                 << " cannot be multiplied (batch sizes and inner dimensions must match)");
}

}  // namespace

Tensor baddbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
               const Scalar& alpha) {
  batches("baddbmm", batch1, batch2);
  same_dtype("baddbmm", {&input, &batch1, &batch2});
  return scaled_sum("baddbmm", input, bmm(batch1, batch2), beta, alpha);
}

Tensor addbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
              const Scalar& alpha) {
  batches("addbmm", batch1, batch2);
  same_dtype("addbmm", {&input, &batch1, &batch2});
  // [n, b*m] @ [b*m, p]: the sum over the batch as one matrix product.
  const int64_t b = batch1.size(0), n = batch1.size(1), m = batch1.size(2), p = batch2.size(2);
  const Tensor a = batch1.permute({1, 0, 2}).reshape({n, b * m});
  return scaled_sum("addbmm", input, mm(a, batch2.reshape({b * m, p})), beta, alpha);
}

const Tensor& addmm_(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                     const Scalar& alpha) {
  return in_place("addmm_", self, {&mat1, &mat2},
                  [&](const Tensor& s) { return addmm(s, mat1, mat2, beta, alpha); });
}
const Tensor& addmv_(const Tensor& self, const Tensor& mat, const Tensor& vec, const Scalar& beta,
                     const Scalar& alpha) {
  return in_place("addmv_", self, {&mat, &vec},
                  [&](const Tensor& s) { return addmv(s, mat, vec, beta, alpha); });
}
const Tensor& addr_(const Tensor& self, const Tensor& vec1, const Tensor& vec2, const Scalar& beta,
                    const Scalar& alpha) {
  return in_place("addr_", self, {&vec1, &vec2},
                  [&](const Tensor& s) { return addr(s, vec1, vec2, beta, alpha); });
}
const Tensor& baddbmm_(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
                       const Scalar& alpha) {
  return in_place("baddbmm_", self, {&batch1, &batch2},
                  [&](const Tensor& s) { return baddbmm(s, batch1, batch2, beta, alpha); });
}
const Tensor& addbmm_(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
                      const Scalar& alpha) {
  return in_place("addbmm_", self, {&batch1, &batch2},
                  [&](const Tensor& s) { return addbmm(s, batch1, batch2, beta, alpha); });
}

Tensor kron(const Tensor& a, const Tensor& b) {
  const int nd = std::max(a.dim(), b.dim());
  if (nd == 0) return mul(a, b);
  // a as [a0, 1, a1, 1, ...], b as [1, b0, 1, b1, ...]: their product is
  // [a0, b0, a1, b1, ...], which merges pairwise into the result.
  Shape sa, sb, out;
  for (int d = 0; d < nd; ++d) {
    const int64_t ad = d < nd - a.dim() ? 1 : a.size(d - (nd - a.dim()));
    const int64_t bd = d < nd - b.dim() ? 1 : b.size(d - (nd - b.dim()));
    sa.insert(sa.end(), {ad, 1});
    sb.insert(sb.end(), {1, bd});
    out.push_back(ad * bd);
  }
  return mul(a.reshape(sa), b.reshape(sb)).reshape(out);
}

Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims) {
  KILN_CHECK(dims >= 0, ValueError, "[tensordot] expects dims >= 0, but got dims=" << dims);
  KILN_CHECK(dims <= a.dim() && dims <= b.dim(), ValueError,
             "[tensordot] expects dims <= the rank of each operand, got dims="
                 << dims << " for " << a.shape_str() << " and " << b.shape_str());
  std::vector<int> da, db;
  for (int k = 0; k < int(dims); ++k) {
    da.push_back(a.dim() - int(dims) + k);
    db.push_back(k);
  }
  return tensordot(a, b, da, db);
}

Tensor tensordot(const Tensor& a, const Tensor& b, std::span<const int> dims_a, std::span<const int> dims_b) {
  KILN_CHECK(dims_a.size() == dims_b.size(), ValueError,
             "[tensordot] both dimension lists should have the same length, got " << dims_a.size() << " and "
                                                                                  << dims_b.size());
  std::vector<int> ca, cb;
  int64_t K = 1;
  for (size_t k = 0; k < dims_a.size(); ++k) {
    ca.push_back(wrap_dim(dims_a[k], a.dim(), "tensordot"));
    cb.push_back(wrap_dim(dims_b[k], b.dim(), "tensordot"));
    KILN_CHECK(a.size(ca.back()) == b.size(cb.back()), ValueError,
               "[tensordot] contracted dimensions need to match, but first has size "
                   << a.size(ca.back()) << " in dim " << ca.back() << " and second has size "
                   << b.size(cb.back()) << " in dim " << cb.back());
    K *= a.size(ca.back());
  }
  auto free_dims = [](const Tensor& t, const std::vector<int>& c, Shape& sizes, int64_t& count) {
    std::vector<int> f;
    for (int d = 0; d < t.dim(); ++d)
      if (std::find(c.begin(), c.end(), d) == c.end()) {
        f.push_back(d);
        sizes.push_back(t.size(d));
        count *= t.size(d);
      }
    return f;
  };
  for (size_t i = 0; i < ca.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      KILN_CHECK(ca[i] != ca[j] && cb[i] != cb[j], ValueError, "[tensordot] a dimension is contracted twice");
  Shape out;
  int64_t M = 1, N = 1;
  std::vector<int> pa = free_dims(a, ca, out, M), pb;
  const std::vector<int> fb = free_dims(b, cb, out, N);
  pa.insert(pa.end(), ca.begin(), ca.end());
  pb = cb;
  pb.insert(pb.end(), fb.begin(), fb.end());
  same_dtype("tensordot", {&a, &b});
  return mm(a.permute(pa).reshape({M, K}), b.permute(pb).reshape({K, N})).reshape(out);
}

Tensor matrix_power(const Tensor& A, int64_t n) {
  KILN_CHECK(A.dim() >= 2 && A.size(-1) == A.size(-2), ValueError,
             "[matrix_power] expected a tensor of square matrices, got " << A.shape_str());
  if (n == 0) {
    const Tensor I = eye(A.size(-1), A.size(-1), A.dtype(), A.device());
    return I.expand(A.sizes()).clone();
  }
  Tensor base = n < 0 ? linalg::inv(A) : A;
  uint64_t k = n < 0 ? uint64_t(0) - uint64_t(n) : uint64_t(n);
  Tensor result;
  while (true) {
    if (k & 1) result = result.defined() ? matmul(result, base) : base;
    k >>= 1;
    if (k == 0) break;
    base = matmul(base, base);
  }
  return n == 1 ? result.clone() : result;
}

namespace linalg {

Tensor multi_dot(std::span<const Tensor> ts) {
  const size_t n = ts.size();
  KILN_CHECK(n >= 2, ValueError, "[linalg.multi_dot] expected at least 2 tensors but got " << n);
  std::vector<Tensor> m(ts.begin(), ts.end());
  const bool row = m.front().dim() == 1, col = m.back().dim() == 1;
  KILN_CHECK(m.front().dim() == 1 || m.front().dim() == 2, ValueError,
             "[linalg.multi_dot] the first tensor must be 1D or 2D but got " << m.front().dim() << "D");
  KILN_CHECK(m.back().dim() == 1 || m.back().dim() == 2, ValueError,
             "[linalg.multi_dot] the last tensor must be 1D or 2D but got " << m.back().dim() << "D");
  if (row) m.front() = m.front().unsqueeze(0);
  if (col) m.back() = m.back().unsqueeze(1);
  for (size_t i = 0; i < n; ++i) {
    KILN_CHECK(m[i].dim() == 2, ValueError,
               "[linalg.multi_dot] tensor " << i << " must be 2D but got " << m[i].dim() << "D");
    KILN_CHECK(m[i].dtype() == m[0].dtype(), TypeError,
               "[linalg.multi_dot] all tensors must have the same dtype, got "
                   << name(m[0].dtype()) << " and " << name(m[i].dtype()));
    KILN_CHECK(i == 0 || m[i - 1].size(1) == m[i].size(0), ValueError,
               "[linalg.multi_dot] tensors " << i - 1 << " and " << i << " with shapes "
                                             << m[i - 1].shape_str() << " and " << m[i].shape_str()
                                             << " cannot be multiplied");
  }
  // The matrix-chain order: cost[i][j] the fewest multiplications for
  // m[i..j], split[i][j] where that product splits.
  std::vector<int64_t> p{m[0].size(0)};
  for (const Tensor& t : m) p.push_back(t.size(1));
  std::vector<std::vector<double>> cost(n, std::vector<double>(n, 0.0));
  std::vector<std::vector<size_t>> split(n, std::vector<size_t>(n, 0));
  for (size_t len = 1; len < n; ++len)
    for (size_t i = 0; i + len < n; ++i) {
      const size_t j = i + len;
      cost[i][j] = std::numeric_limits<double>::infinity();
      for (size_t k = i; k < j; ++k) {
        const double c = cost[i][k] + cost[k + 1][j] + double(p[i]) * double(p[k + 1]) * double(p[j + 1]);
        if (c < cost[i][j]) {
          cost[i][j] = c;
          split[i][j] = k;
        }
      }
    }
  std::function<Tensor(size_t, size_t)> chain = [&](size_t i, size_t j) -> Tensor {
    if (i == j) return m[i];
    return mm(chain(i, split[i][j]), chain(split[i][j] + 1, j));
  };
  Tensor r = chain(0, n - 1);
  if (row) r = r.squeeze(0);
  if (col) r = r.squeeze(-1);
  return r;
}

Tensor vecdot(const Tensor& x, const Tensor& y, int dim) {
  const std::vector<int> d{dim};
  return sum(mul(is_complex(x.dtype()) ? conj(x) : x, y), d);
}

}  // namespace linalg

}  // namespace kiln
