// Op table entries of linalg.eigvals and ldl_factor (ops/registry/linalg.h).
// eigvals' oracle: the characteristic polynomial (Faddeev-LeVerrier, complex
// double), its roots by Durand-Kerner iteration polished by Newton steps,
// matched to kiln's order (eigenvalues have none); the call returns
// [re..., im...] so real and complex walks compare real numbers. ldl_factor
// runs on diagonally dominant matrices, where Bunch-Kaufman takes no 2x2
// block and no interchange, against the plain LDL^T recurrence.
#include <algorithm>
#include <cmath>

#include "kiln/complex.h"
#include "kiln/linalg.h"
#include "kiln/shape.h"
#include "op_table/linalg_ref.h"

namespace op_table {
namespace {

using namespace kiln;
using namespace linalg_ref;

// Coefficients c[0..n] (c[n] = 1) of det(lambda I - A), A n x n row-major.
std::vector<cdouble> char_poly(const std::vector<cdouble>& a, int64_t n) {
  std::vector<cdouble> c(size_t(n + 1), 0.0), m(size_t(n * n), 0.0), am(size_t(n * n));
  c[size_t(n)] = 1.0;
  for (int64_t k = 1; k <= n; ++k) {
    // M_k = A M_{k-1} + c_{n-k+1} I; c_{n-k} = -tr(A M_k) / k
    std::vector<cdouble> next(size_t(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        cdouble s = 0;
        for (int64_t l = 0; l < n; ++l) s += a[size_t(i * n + l)] * m[size_t(l * n + j)];
        next[size_t(i * n + j)] = s + (i == j ? c[size_t(n - k + 1)] : 0.0);
      }
    m = next;
    cdouble tr = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t l = 0; l < n; ++l) tr += a[size_t(i * n + l)] * m[size_t(l * n + i)];
    c[size_t(n - k)] = -tr / double(k);
  }
  return c;
}

cdouble poly_at(const std::vector<cdouble>& c, cdouble z) {
  cdouble p = 0;
  for (size_t i = c.size(); i-- > 0;) p = p * z + c[i];
  return p;
}

// The n roots of the monic c (Durand-Kerner, then Newton polish).
std::vector<cdouble> roots(const std::vector<cdouble>& c) {
  const size_t n = c.size() - 1;
  double bound = 1;
  for (size_t i = 0; i < n; ++i) bound = std::max(bound, 1 + std::abs(c[i]));
  std::vector<cdouble> z(n);
  for (size_t i = 0; i < n; ++i) z[i] = bound * std::pow(cdouble(0.4, 0.9), double(i));
  for (int it = 0; it < 2000; ++it)
    for (size_t i = 0; i < n; ++i) {
      cdouble d = 1;
      for (size_t j = 0; j < n; ++j)
        if (j != i) d *= z[i] - z[j];
      z[i] -= poly_at(c, z[i]) / d;
    }
  std::vector<cdouble> dc(n);  // derivative
  for (size_t i = 1; i <= n; ++i) dc[i - 1] = double(i) * c[i];
  for (cdouble& r : z)
    for (int it = 0; it < 3; ++it) {
      const cdouble d = poly_at(dc, r);
      if (std::abs(d) > 0) r -= poly_at(c, r) / d;
    }
  return z;
}

Entry eigvals_entry(int64_t n) {
  Entry e;
  e.op = "linalg_eigvals";
  e.dtypes = kLinalgDtypes;
  e.shapes = square_shapes(n);
  e.call = [](const std::vector<Tensor>& x) {
    const Tensor w = linalg::eigvals(x[0]);
    const Tensor parts[] = {real(w), imag(w)};
    return cat(parts, -1);
  };
  set_oracles(e, [](const auto& v, const Inputs& in, const Tensor& out) {
    using T = typename std::decay_t<decltype(v[0])>::value_type;
    const Shape& s = in.shapes[0];
    const int64_t k = s.back();
    Shape want(s.begin(), s.end() - 1);
    want.back() = 2 * k;
    expect_shape(out, want);
    const Tensor got = out.defined() ? out.to(DType::Float64).contiguous() : Tensor();
    std::vector<T> y;
    for (size_t b = 0; b < v[0].size() / size_t(k * k); ++b) {
      std::vector<cdouble> a;
      for (const T& t : slice(v[0], b, k * k)) a.push_back(cdouble(t));
      std::vector<cdouble> r = roots(char_poly(a, k));
      // kiln's order: each of its eigenvalues takes the nearest root left.
      std::vector<cdouble> ordered;
      for (int64_t i = 0; i < k; ++i) {
        const cdouble g =
            got.defined() ? cdouble(got.data<double>()[b * 2 * k + i], got.data<double>()[b * 2 * k + k + i])
                          : r.front();
        auto best = std::min_element(r.begin(), r.end(),
                                     [&](cdouble p, cdouble q) { return std::abs(p - g) < std::abs(q - g); });
        ordered.push_back(*best);
        r.erase(best);
      }
      for (const cdouble& z : ordered) y.push_back(T(z.real()));
      for (const cdouble& z : ordered) y.push_back(T(z.imag()));
    }
    return y;
  });
  e.ulps = 256;
  e.floor = 4.0 * double(n) + 4.0;  // the eigenvalues' scale
  e.perf_shapes = {{{256, 8, 8}}};
  return e;
}

// ldl_factor(A, hermitian): LD (what = 0) or pivots (what = 1).
Entry ldl_entry(int what, bool hermitian, int64_t n) {
  Entry e;
  e.op = "linalg_ldl_factor";
  e.dtypes = kLinalgDtypes;
  e.shapes = square_shapes(n);
  make_dominant(e);
  e.call = [what, hermitian](const std::vector<Tensor>& x) {
    const linalg::LDLFactor r = linalg::ldl_factor(x[0], hermitian);
    return what == 0 ? r.LD : r.pivots;
  };
  set_oracles(e, [what, hermitian](const auto& v, const Inputs& in, const Tensor& out) {
    using T = typename std::decay_t<decltype(v[0])>::value_type;
    const Shape& s = in.shapes[0];
    const int64_t k = s.back();
    Shape want = s;
    if (what == 1) want.pop_back();
    expect_shape(out, want);
    auto cj = [hermitian](T t) { return hermitian ? conj(t) : t; };
    std::vector<T> y;
    for (size_t b = 0; b < v[0].size() / size_t(k * k); ++b) {
      if (what == 1) {
        for (int64_t i = 1; i <= k; ++i) y.push_back(T(double(i)));
        continue;
      }
      const std::vector<T> a = slice(v[0], b, k * k);  // lower triangle read
      std::vector<T> ld(static_cast<size_t>(k * k), 0.0), d(static_cast<size_t>(k));
      for (int64_t j = 0; j < k; ++j) {
        T dj = hermitian ? T(re(a[size_t(j * k + j)])) : a[size_t(j * k + j)];
        for (int64_t l = 0; l < j; ++l)
          dj -= ld[size_t(j * k + l)] * d[size_t(l)] * cj(ld[size_t(j * k + l)]);
        d[size_t(j)] = dj;
        ld[size_t(j * k + j)] = dj;
        for (int64_t i = j + 1; i < k; ++i) {
          T sij = a[size_t(i * k + j)];
          for (int64_t l = 0; l < j; ++l)
            sij -= ld[size_t(i * k + l)] * d[size_t(l)] * cj(ld[size_t(j * k + l)]);
          ld[size_t(i * k + j)] = sij / dj;
        }
      }
      y.insert(y.end(), ld.begin(), ld.end());
    }
    return y;
  });
  e.ulps = 64;
  e.floor = 4.0 * double(n) + 4.0;
  e.perf_shapes = {{{256, 8, 8}}};
  return e;
}

KILN_OP_TABLE({
    eigvals_entry(4),
    eigvals_entry(5),
    ldl_entry(0, false, 5),
    ldl_entry(0, true, 5),
    ldl_entry(1, false, 5),
});

}  // namespace
}  // namespace op_table
