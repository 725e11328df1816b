// linalg.lstsq through LAPACK gels (QR; full rank), gelsy (complete
// orthogonal factorization; the default on the CPU, as torch), gelsd (SVD,
// divide and conquer) and gelss (SVD).
//
// Non-finite A or B raises, whatever the driver: LAPACKE refuses a NaN, and
// an inf is scaled into zeros and NaNs (gels then reports a rank deficiency
// that is not there, gelsd/gelss call xerbla or never converge).
#include <cstring>

#include "kiln/linalg.h"
#include "linalg/common.h"
#include "linalg/lapack.h"

namespace kiln::linalg {
using namespace detail;

Lstsq lstsq(const Tensor& A, const Tensor& B, std::optional<double> rcond,
            std::optional<std::string> driver_opt) {
  const char* op = "linalg.lstsq";
  check_dtype(A, op);
  check_dtype(B, op);
  check_same_dtype(A, B, op);
  check_matrix(A, op, false);
  const std::string driver = driver_opt.value_or("gelsy");
  KILN_CHECK(driver == "gels" || driver == "gelsy" || driver == "gelsd" || driver == "gelss", ValueError,
             "[" << op << "] parameter `driver` should be one of (gels, gelsy, gelsd, gelss), got '" << driver
                 << "'");
  KILN_CHECK(B.dim() >= 1, ValueError, "[" << op << "] B must have at least 1 dimension");
  const bool vector_case = B.dim() == 1 || B.dim() == A.dim() - 1;
  const Tensor Bm = vector_case ? B.unsqueeze(-1) : B;
  const int64_t m = A.size(-2), n = A.size(-1), nrhs = Bm.size(-1);
  KILN_CHECK(Bm.size(-2) == m, ValueError,
             "[" << op << "] input.size(-2) should match other.size(-2), got A " << A.shape_str() << " and B "
                 << B.shape_str());
  const Shape batch = broadcast_shapes(batch_shape(A), batch_shape(Bm), op);
  const int64_t count = numel_of(batch), k = std::min(m, n), ldb = std::max<int64_t>({m, n, 1});
  const double rc = rcond.value_or(eps_of(A.dtype()) * double(std::max(m, n)));
  const Tensor a = colmajor_copy(A, batch);
  const Tensor bsrc = colmajor_copy(Bm, batch);  // m x nrhs, column-major
  const bool batched = !batch.empty();
  check_finite(a, count, op, "A", A, batched);
  check_finite(bsrc, count, op, "B", B, batched);
  Tensor x = zeros(with_matrix(batch, nrhs, ldb), A.dtype());  // ldb x nrhs, column-major
  const bool want_rank = driver != "gels", want_s = driver == "gelsd" || driver == "gelss";
  Tensor rank = want_rank ? zeros(batch, DType::Int64) : empty({0}, DType::Int64);
  Shape sb = batch;
  sb.push_back(k);
  Tensor sv = want_s ? zeros(sb, to_real(A.dtype())) : empty({0}, to_real(A.dtype()));
  Tensor info = zeros(batch, DType::Int32);
  dispatch<kLinalgSet>(A.dtype(), op, [&]<typename T>() {
    using R = lapack::real_t<T>;
    const T* ap = a.data<T>();
    const T* bp = bsrc.data<T>();
    T* xp = x.data<T>();
    int64_t* rp = want_rank ? rank.data<int64_t>() : nullptr;
    R* sp = want_s ? sv.data<R>() : nullptr;
    int32_t* ip = info.data<int32_t>();
    for_each_matrix(count, std::max(m, n), [&](int64_t b) {
      T* xb = xp + b * ldb * nrhs;
      for (int64_t j = 0; j < nrhs; ++j)
        if (m > 0) std::memcpy(xb + j * ldb, bp + b * m * nrhs + j * m, sizeof(T) * m);
      if (m == 0 || n == 0 || nrhs == 0) return;  // solution 0, rank 0
      std::vector<T> ab(ap + b * m * n, ap + (b + 1) * m * n);
      lapack::lint rk = 0;
      int r = 0;
      if (driver == "gels") {
        r = lapack::gels<T>('N', m, n, nrhs, ab.data(), m, xb, ldb);
      } else if (driver == "gelsy") {
        std::vector<lapack::lint> jpvt(n, 0);
        r = lapack::gelsy<T>(m, n, nrhs, ab.data(), m, xb, ldb, jpvt.data(), R(rc), &rk);
      } else {
        std::vector<R> s(k);
        r = driver == "gelsd" ? lapack::gelsd<T>(m, n, nrhs, ab.data(), m, xb, ldb, s.data(), R(rc), &rk)
                              : lapack::gelss<T>(m, n, nrhs, ab.data(), m, xb, ldb, s.data(), R(rc), &rk);
        std::copy(s.begin(), s.end(), sp + b * k);
      }
      ip[b] = r;
      if (rp) rp[b] = rk;
    });
  });
  check_infos(info, op, driver == "gels" ? InfoKind::FullRank : InfoKind::Converge, A);
  // Squared residuals of each column: rows n..m-1 of the QR/SVD-transformed
  // right-hand side, when m > n and every matrix has full rank (as torch).
  Tensor residuals = empty({0}, to_real(A.dtype()));
  bool full_rank = true;
  if (want_rank)
    for (int64_t b = 0; b < count; ++b) full_rank = full_rank && rank.data<int64_t>()[b] == n;
  if (m > n && full_rank && driver != "gelsy" && count > 0) {
    Shape rs = batch;
    rs.push_back(nrhs);
    residuals = empty(rs, to_real(A.dtype()));
    dispatch<kLinalgSet>(A.dtype(), op, [&]<typename T>() {
      using R = lapack::real_t<T>;
      const T* xp = x.data<T>();
      R* rsp = residuals.data<R>();
      for (int64_t b = 0; b < count; ++b)
        for (int64_t j = 0; j < nrhs; ++j) {
          R acc = 0;
          for (int64_t i = n; i < m; ++i) acc += std::norm(xp[b * ldb * nrhs + j * ldb + i]);
          rsp[b * nrhs + j] = acc;
        }
    });
  }
  Tensor solution = colmajor_view(x).narrow(-2, 0, n);
  if (vector_case) {
    solution = solution.squeeze(-1);
    if (residuals.numel() > 0) residuals = residuals.squeeze(-1);
  }
  return {solution, residuals, rank, sv};
}

}  // namespace kiln::linalg
