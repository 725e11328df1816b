// The typed half of the scatter kernels: dst += alpha * src, for scatter_add,
// index_add, put_ and index_put_ with accumulate.
#include "core/cast.h"
#include "ops/index_common.h"

namespace kiln::index_detail {

void scatter_accumulate(const Tensor& dst_base, const Tensor& src, const Tensor& idx, int64_t K,
                        int64_t dim_stride_b, int64_t src_k_stride_b, int64_t idx_k_stride_b,
                        const Scalar& alpha, const char* op) {
  dispatch<kAllSet>(dst_base.dtype(), op, [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      const bool a = alpha.to<bool>();
      scatter_columns(dst_base, src, idx, K, dim_stride_b, src_k_stride_b, idx_k_stride_b,
                      [a](char* d, const char* s) {
                        const bool r = (*d != 0) || (a && *s != 0);
                        *d = r ? 1 : 0;
                      });
    } else {
      using C = compute_t<T>;
      const C a = alpha.to<C>();
      const bool unit = alpha.to_double() == 1.0 && !alpha.is_complex();
      scatter_columns(dst_base, src, idx, K, dim_stride_b, src_k_stride_b, idx_k_stride_b,
                      [a, unit](char* d, const char* s) {
                        T dv, sv;
                        std::memcpy(&dv, d, sizeof(T));
                        std::memcpy(&sv, s, sizeof(T));
                        const C add = unit ? cast<C>(sv) : C(cast<C>(sv) * a);
                        const T r = cast<T>(C(cast<C>(dv) + add));
                        std::memcpy(d, &r, sizeof(T));
                      });
    }
  });
}

}  // namespace kiln::index_detail
