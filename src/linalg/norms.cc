// linalg.vector_norm (the core's reduce norm), matrix_norm (Frobenius through
// the same norm; 1/inf through sums of |a|; 2 and nuclear through svdvals) and
// cross.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/binary.h"
#include "kiln/linalg.h"
#include "kiln/reduce.h"
#include "kiln/unary.h"
#include "linalg/common.h"

namespace kiln::linalg {
using namespace detail;

Tensor vector_norm(const Tensor& x, double ord, const std::optional<std::vector<int>>& dim, bool keepdim,
                   std::optional<DType> dtype) {
  KILN_CHECK(is_floating(x.dtype()) || is_complex(x.dtype()), TypeError,
             "[linalg.vector_norm] expected a floating point or complex tensor, got " << name(x.dtype()));
  return kiln::norm(x, ord, dim, keepdim, dtype);
}

Tensor matrix_norm(const Tensor& A_in, const MatrixOrd& ord, std::pair<int, int> dim, bool keepdim,
                   std::optional<DType> dtype) {
  const char* op = "linalg.matrix_norm";
  KILN_CHECK(A_in.dim() >= 2, ValueError,
             "[" << op << "] expected a tensor with 2 or more dimensions, got shape " << A_in.shape_str());
  const Tensor A = dtype ? A_in.to(*dtype) : A_in;
  KILN_CHECK(is_floating(A.dtype()) || is_complex(A.dtype()), TypeError,
             "[" << op << "] expected a floating point or complex tensor, got " << name(A.dtype()));
  const int d0 = wrap_dim(dim.first, A.dim(), op), d1 = wrap_dim(dim.second, A.dim(), op);
  KILN_CHECK(d0 != d1, ValueError,
             "[" << op << "] dims must be different, got (" << dim.first << ", " << dim.second << ")");
  const int lo = std::min(d0, d1), hi = std::max(d0, d1);
  auto restore = [&](Tensor r) {  // r has both dims kept (size 1)
    return keepdim ? r : r.squeeze(hi).squeeze(lo);
  };
  if (std::holds_alternative<std::string>(ord)) {
    const std::string& s = std::get<std::string>(ord);
    if (s == "fro") return kiln::norm(A, 2.0, std::vector<int>{d0, d1}, keepdim);
    KILN_CHECK(s == "nuc", ValueError, "[" << op << "] Order " << s << " not supported.");
  } else {
    const double p = std::get<double>(ord);
    const double inf = std::numeric_limits<double>::infinity();
    if (p == 1 || p == -1 || p == inf || p == -inf) {
      // 1: max over columns of the column sums of |a|; inf: over rows.
      const bool cols = p == 1 || p == -1;
      const Tensor s = kiln::sum(kiln::abs(A), std::vector<int>{cols ? d0 : d1}, true);
      const std::vector<int> other{cols ? d1 : d0};
      return restore(p > 0 ? kiln::amax(s, other, true) : kiln::amin(s, other, true));
    }
    KILN_CHECK(p == 2 || p == -2, ValueError, "[" << op << "] Order " << p << " not supported.");
  }
  // Singular-value norms: move the two dims to the end.
  std::vector<int> perm;
  for (int i = 0; i < A.dim(); ++i)
    if (i != d0 && i != d1) perm.push_back(i);
  perm.push_back(d0);
  perm.push_back(d1);
  const Tensor Ap = A.permute(perm);
  const Tensor S =
      svdvals_for(is_complex(Ap.dtype()) || Ap.dtype() == DType::Float64 ? Ap : Ap.to(DType::Float32), op);
  Tensor r;
  if (std::holds_alternative<std::string>(ord))
    r = kiln::sum(S, std::vector<int>{-1});
  else
    r = std::get<double>(ord) > 0 ? kiln::amax(S, std::vector<int>{-1}) : kiln::amin(S, std::vector<int>{-1});
  if (keepdim) r = r.unsqueeze(lo).unsqueeze(hi);
  return r;
}

Tensor cross(const Tensor& a_in, const Tensor& b_in, int dim) {
  const char* op = "linalg.cross";
  const DType dt = promote_types(a_in.dtype(), b_in.dtype());
  const Tensor a = a_in.to(dt), b = b_in.to(dt);
  KILN_CHECK(a.dim() == b.dim(), ValueError,
             "[" << op << "] inputs must have the same number of dimensions, got " << a.shape_str() << " and "
                 << b.shape_str());
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), op);
  const int d = wrap_dim(dim, int(shape.size()), op);
  KILN_CHECK(a.size(d) == 3 && b.size(d) == 3, ValueError,
             "[" << op << "] inputs dimension " << dim << " must have length 3, got " << a.shape_str()
                 << " and " << b.shape_str());
  Tensor out = empty(shape, dt, a.device());
  auto c = [&](const Tensor& t, int i) { return t.narrow(d, i, 1); };
  for (int i = 0; i < 3; ++i) {
    const int j = (i + 1) % 3, k = (i + 2) % 3;
    out.narrow(d, i, 1).copy_(kiln::sub(kiln::mul(c(a, j), c(b, k)), kiln::mul(c(a, k), c(b, j))));
  }
  return out;
}

}  // namespace kiln::linalg
