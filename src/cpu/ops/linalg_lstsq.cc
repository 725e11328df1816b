// CPU kernel of linalg.lstsq (ops/registry/linalg.h) through LAPACK gels
// (QR; full rank), gelsy (complete orthogonal factorization; the default on
// the CPU, as torch), gelsd (SVD, divide and conquer) and gelss (SVD).
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/linalg_layout.h"
#include "cpu/lapack.h"
#include "cpu/ops/linalg.h"
#include "cpu/ops/linalg_batch.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

using namespace kiln::linalg::detail;

Tensor lstsq_kernel(const Tensor& a, const Tensor& bsrc, ops::LstsqDriver drv, double rc, const Tensor& x,
                    const Tensor& rank, const Tensor& sv, const Tensor& info) {
  const char* op = "linalg.lstsq";
  const Tensor& A = a;
  const int64_t m = a.size(-1), n = a.size(-2), nrhs = bsrc.size(-2), ldb = x.size(-1);
  const int64_t k = std::min(m, n), count = info.numel();
  const bool want_rank = drv != ops::LstsqDriver::Gels;
  const bool want_s = drv == ops::LstsqDriver::Gelsd || drv == ops::LstsqDriver::Gelss;
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
      if (drv == ops::LstsqDriver::Gels) {
        r = lapack::gels<T>('N', m, n, nrhs, ab.data(), m, xb, ldb);
      } else if (drv == ops::LstsqDriver::Gelsy) {
        std::vector<lapack::lint> jpvt(n, 0);
        r = lapack::gelsy<T>(m, n, nrhs, ab.data(), m, xb, ldb, jpvt.data(), R(rc), &rk);
      } else {
        std::vector<R> s(k);
        r = drv == ops::LstsqDriver::Gelsd
                ? lapack::gelsd<T>(m, n, nrhs, ab.data(), m, xb, ldb, s.data(), R(rc), &rk)
                : lapack::gelss<T>(m, n, nrhs, ab.data(), m, xb, ldb, s.data(), R(rc), &rk);
        std::copy(s.begin(), s.end(), sp + b * k);
      }
      ip[b] = r;
      if (rp) rp[b] = rk;
    });
  });
  // Squared residuals of each column: rows n..m-1 of the QR/SVD-transformed
  // right-hand side, when m > n and every matrix has full rank (as torch).
  Tensor residuals = empty({0}, to_real(A.dtype()), A.device());  // returned: on the inputs' device
  bool full_rank = true;
  if (want_rank)
    for (int64_t b = 0; b < count; ++b) full_rank = full_rank && rank.data<int64_t>()[b] == n;
  if (m > n && full_rank && drv != ops::LstsqDriver::Gelsy && count > 0) {
    Shape rs = info.sizes();
    rs.push_back(nrhs);
    residuals = empty(rs, to_real(A.dtype()), A.device());
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
  return residuals;
}

}  // namespace

void register_linalg_lstsq_kernels() { ops::linalg_lstsq.set_kernel(DeviceKind::CPU, lstsq_kernel); }

}  // namespace kiln::cpu
